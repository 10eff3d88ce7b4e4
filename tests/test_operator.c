/* test_operator.c: the operator's grouped products (B by slots, B^T by body
 * groups) give exactly the CSR products of B, computed here independently
 * from the CSR view: for uniform groups of 2, 3 and 6 dofs and for mixed
 * ones, on the whole operator, per component, and on row ranges that cut a
 * group; B^T also on B's float values (the solver's cm__op_rows32). The
 * CSR sums below add the same terms in the same order, so the comparison
 * is bitwise. */
#include "cmodes.h"
#include "cmtest.h"
#include "operator/operator_internal.h"

#include <stdlib.h>
#include <string.h>

/* t = B^T x (rows ascending per column) and y = B t, from the CSR view,
 * over rows [r0, r0 + m) and columns [c0, c0 + n) (vectors local). */
static void csr_S(const int *Bp, const int *Bj, const double *Bx, int r0, int m,
                  int c0, int n, const double *x, double *t, double *y) {
  memset(t, 0, sizeof(double) * (size_t)n);
  for (int i = 0; i < m; i++)
    for (int q = Bp[r0 + i]; q < Bp[r0 + i + 1]; q++)
      t[Bj[q] - c0] += Bx[q] * x[i];
  for (int i = 0; i < m; i++) {
    double s = 0;
    for (int q = Bp[r0 + i]; q < Bp[r0 + i + 1]; q++)
      s += Bx[q] * t[Bj[q] - c0];
    y[i] = s;
  }
}

static int same_bits(const double *a, const double *b, int n) {
  return n == 0 || memcmp(a, b, sizeof(double) * (size_t)n) == 0;
}

/* Checks one scene; *sizes gets a bit (1 << g) for every group size seen
 * and bit 0 when the sizes are mixed. */
static void check_scene(cm_scene_t *s, unsigned *sizes) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = 2;
  cm_system_t *sys = NULL;
  cm_operator_t *op = NULL;
  CMT_EQ_INT(cm_system_assemble(&ctx, s, &sys), 0);
  CMT_EQ_INT(cm_operator_create(&ctx, sys, &op), 0);
  if (!op)
    goto out;
  const int *Bp, *Bj, *g0;
  const double *Bx;
  int ng = 0;
  CMT_EQ_INT(cm_operator_csr(op, &Bp, &Bj, &Bx), 0);
  CMT_EQ_INT(cm__op_groups(op, &ng, &g0), 0);
  int first = g0[1] - g0[0];
  for (int b = 0; b < ng; b++) {
    int g = g0[b + 1] - g0[b];
    CMT_TRUE(g >= 1 && g <= 8);
    *sizes |= 1u << g;
    if (g != first)
      *sizes |= 1u;
  }
  int nr = cm_operator_rows(op), nc = cm_operator_cols(op);
  double *x = malloc(sizeof(double) * (size_t)(nr + 1));
  double *y = malloc(sizeof(double) * (size_t)(nr + 1));
  double *yr = malloc(sizeof(double) * (size_t)(nr + 1));
  double *t = malloc(sizeof(double) * (size_t)(nc + 1));
  double *tr = malloc(sizeof(double) * (size_t)(nc + 1));
  for (int i = 0; i < nr; i++)
    x[i] = sin(0.37 * i + 1.0) + 0.25;
  /* whole operator: S, B^T, B */
  csr_S(Bp, Bj, Bx, 0, nr, 0, nc, x, tr, yr);
  CMT_EQ_INT(cm_operator_apply_S(op, -1, x, y), 0);
  CMT_TRUE(same_bits(y, yr, nr));
  CMT_EQ_INT(cm_operator_apply_BT(op, x, t), 0);
  CMT_TRUE(same_bits(t, tr, nc));
  CMT_EQ_INT(cm_operator_apply_B(op, tr, y), 0);
  CMT_TRUE(same_bits(y, yr, nr));
  /* row ranges that cut groups: B^T's columns [3, 3 + 7) and [1, n - 1),
   * B's rows [5, 5 + 11) */
  int ranges[2][2] = {{3, 10}, {1, nc - 1}};
  for (int k = 0; k < 2; k++) {
    int a = ranges[k][0], b = ranges[k][1] < nc ? ranges[k][1] : nc;
    if (a >= b)
      continue;
    CMT_EQ_INT(cm__op_rows(op, -1, 1, x, a, b, t), 0);
    CMT_TRUE(same_bits(t, tr + a, b - a));
  }
  if (nr > 16) {
    CMT_EQ_INT(cm__op_rows(op, -1, 0, tr, 5, 16, y), 0);
    CMT_TRUE(same_bits(y, yr + 5, 11));
  }
  /* B^T on B's values rounded to float, summed in double, row order */
  if (cm__op_make_f32(NULL, op) == CM_OK) {
    memset(tr, 0, sizeof(double) * (size_t)nc);
    for (int i = 0; i < nr; i++)
      for (int q = Bp[i]; q < Bp[i + 1]; q++)
        tr[Bj[q]] += (double)(float)Bx[q] * x[i];
    CMT_EQ_INT(cm__op_rows32(op, -1, 1, x, 0, nc, t), 0);
    CMT_TRUE(same_bits(t, tr, nc));
    CMT_EQ_INT(cm__op_rows32(op, -1, 1, x, 1, nc - 1 > 1 ? nc - 1 : 1, t), 0);
    CMT_TRUE(same_bits(t, tr + 1, nc - 2 > 0 ? nc - 2 : 0));
  }
  /* every component on its own, local vectors */
  for (int c = 0; c < sys->ncomp; c++) {
    int r0 = sys->comp_row[c], m = sys->comp_row[c + 1] - r0;
    int c0 = sys->comp_col[c], n = sys->comp_col[c + 1] - c0;
    csr_S(Bp, Bj, Bx, r0, m, c0, n, x + r0, tr, yr);
    CMT_EQ_INT(cm_operator_apply_S(op, c, x + r0, y), 0);
    CMT_TRUE(same_bits(y, yr, m));
  }
  /* several columns at once, as the residual pass does: column by column */
  {
    double *X = malloc(sizeof(double) * 3 * (size_t)(nr + 1));
    double *T = malloc(sizeof(double) * 3 * (size_t)(nc + 1));
    for (int p = 0; p < 3; p++)
      for (int i = 0; i < nr; i++)
        X[(size_t)p * nr + i] = cos(0.11 * i * (p + 1));
    cm__op_apply_cols(op, -1, 1, X, (size_t)nr, T, (size_t)nc, 3);
    for (int p = 0; p < 3; p++) {
      cm_operator_apply_BT(op, X + (size_t)p * nr, t);
      CMT_TRUE(same_bits(T + (size_t)p * nc, t, nc));
    }
    free(X), free(T);
  }
  free(x), free(y), free(yr), free(t), free(tr);
out:
  cm_operator_destroy(&op);
  cm_system_destroy(&sys);
}

CM_TEST(operator_grouped_products) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  unsigned sizes = 0;
  cm_scene_t *s = NULL;
  for (int dim = 2; dim <= 3; dim++) { /* disks: groups of 2; spheres: 3 */
    cm_pile_options_t o;
    cm_pile_options_init(&o);
    o.dim = dim, o.count = dim == 2 ? 150 : 120, o.seed = 5;
    CMT_EQ_INT(cm_generate_pile(&ctx, &o, &s), 0);
    if (s)
      check_scene(s, &sizes);
    cm_scene_destroy(&s);
  }
  { /* spheres with tangential springs: 6 dofs each (uniform) */
    cm_pile_options_t o;
    cm_pile_options_init(&o);
    o.dim = 3, o.count = 120, o.seed = 5;
    CMT_EQ_INT(cm_generate_pile(&ctx, &o, &s), 0);
    for (int i = 0; s && i < s->ncontacts; i++)
      s->contacts[i].stiffness_t = 0.4 * s->contacts[i].stiffness;
    unsigned mine = 0;
    if (s)
      check_scene(s, &mine);
    CMT_EQ_INT((int)mine, 1 << 6); /* groups of 6 only */
    sizes |= mine;
    cm_scene_destroy(&s);
  }
  { /* boxes: 6 dofs, and some dropped (mixed) */
    cm_stack_options_t o;
    cm_stack_options_init(&o);
    o.count = 4, o.towers = 3;
    CMT_EQ_INT(cm_generate_stack(&ctx, &o, &s), 0);
    if (s)
      check_scene(s, &sizes);
    cm_scene_destroy(&s);
  }
  { /* robots: many components, mixed bodies */
    cm_fleet_options_t o;
    cm_fleet_options_init(&o);
    o.count = 6;
    CMT_EQ_INT(cm_generate_fleet(&ctx, &o, &s), 0);
    if (s)
      check_scene(s, &sizes);
    cm_scene_destroy(&s);
  }
  /* the scenes covered the specialised sizes and a mixed operator */
  CMT_TRUE(sizes & (1u << 2));
  CMT_TRUE(sizes & (1u << 3));
  CMT_TRUE(sizes & (1u << 6));
  CMT_TRUE(sizes & 1u);
}
