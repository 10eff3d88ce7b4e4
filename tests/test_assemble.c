/* test_assemble.c: the assembly of a scene past the size where its passes
 * run on threads (CM__PAR_MIN contacts), with every per-contact flag mixed:
 * tangent rows, dashpots, lever arms, and rotated anisotropic bodies.
 * Asserts that the system is the same, bit for bit, at 1 and 2 threads
 * (plain and weighted; and without the scene's check, as the CLI
 * assembles a scene its reader checked), and checks every row of J against its
 * definition (docs/math.md), computed here from the scene: side a holds [d, r x
 * d], side b -[d, r x d], d the normal or a unit tangent orthogonal to the
 * normal and to the other tangent, r the contact's arm or point - position;
 * an entry on an active dof is stored unless it is zero, and a dropped
 * rotational dof has only negligible entries (|v| <= 1e-12 sqrt(I_min /
 * m)). */
#include "cmodes.h"
#include "cmtest.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The pile of the test: about 24 000 contacts, flags mixed by index. */
static cm_scene_t *mixed_pile(void) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_pile_options_t po;
  cm_pile_options_init(&po);
  po.dim = 3, po.count = 8000, po.seed = 5;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_pile(&ctx, &po, &s), 0);
  if (!s)
    return NULL;
  for (int b = 0; b < s->nbodies; b += 7) {
    cm_body_t *bd = &s->bodies[b];
    if (bd->fixed)
      continue;
    double q[4] = {0.9, 0.1 * (b % 5), -0.2, 0.3}, qn = 0;
    for (int i = 0; i < 4; i++)
      qn += q[i] * q[i];
    for (int i = 0; i < 4; i++)
      bd->orientation[i] = q[i] / sqrt(qn);
    double i0 = bd->inertia[0];
    memset(bd->inertia, 0, sizeof bd->inertia);
    bd->inertia[0] = 1.3 * i0, bd->inertia[4] = i0, bd->inertia[8] = 0.8 * i0;
  }
  for (int c = 0; c < s->ncontacts; c++) {
    cm_contact_t *ct = &s->contacts[c];
    ct->stiffness_t = c % 3 == 0 ? 0.3 * ct->stiffness : 0;
    ct->damping_n = c % 5 == 0 ? 0.01 : 0;
    ct->damping_t = c % 11 == 0 ? 0.005 : 0;
    if (c % 4 == 1) {
      ct->has_arms = 1;
      double arm_a[3] = {0.001 * (c % 7), -0.002, 0.003};
      double arm_b[3] = {-0.001, 0.002 * (c % 5), 0.0};
      memcpy(ct->arm_a, arm_a, sizeof arm_a);
      memcpy(ct->arm_b, arm_b, sizeof arm_b);
    }
  }
  return s;
}

#define SAME(f, n)                                                             \
  CMT_TRUE(((a->f == NULL) == (b->f == NULL)) &&                               \
           (!a->f || !memcmp(a->f, b->f, sizeof *a->f * (size_t)(n))))

/* Every array and count of two systems, bitwise. */
static void same_system(const cm_system_t *a, const cm_system_t *b) {
  CMT_EQ_INT(a->nc, b->nc);
  CMT_EQ_INT(a->n, b->n);
  CMT_EQ_INT(a->ncomp, b->ncomp);
  CMT_EQ_INT(a->dropped_dofs, b->dropped_dofs);
  CMT_EQ_INT(a->inertia_cond_body, b->inertia_cond_body);
  CMT_TRUE(a->inertia_cond == b->inertia_cond);
  if (a->nc != b->nc || a->n != b->n || a->ncomp != b->ncomp)
    return;
  SAME(Jp, a->nc + 1);
  if (a->Jp[a->nc] != b->Jp[b->nc])
    return;
  SAME(Jj, a->Jp[a->nc]);
  SAME(Jx, a->Jp[a->nc]);
  SAME(k, a->nc);
  SAME(g, a->nc);
  SAME(spring, a->nc);
  SAME(Mp, a->n + 1);
  if (a->Mp[a->n] != b->Mp[b->n])
    return;
  SAME(Mi, a->Mp[a->n]);
  SAME(Mx, a->Mp[a->n]);
  SAME(row_contact, a->nc);
  SAME(contact_row, a->ncontacts);
  SAME(row_kind, a->nc);
  SAME(col_body, a->n);
  SAME(col_dof, a->n);
  SAME(row_a, a->nc);
  SAME(row_b, a->nc);
  SAME(comp_row, a->ncomp + 1);
  SAME(comp_col, a->ncomp + 1);
  SAME(body_comp, a->nbodies);
}

/* Row r's entries on body b as a 6-vector (0 where nothing is stored);
 * *other counts entries on neither of the row's bodies. */
static void row_on_body(const cm_system_t *sys, int r, int b, double *v,
                        int *other) {
  memset(v, 0, 6 * sizeof *v);
  for (int q = sys->Jp[r]; q < sys->Jp[r + 1]; q++) {
    int col = sys->Jj[q];
    if (sys->col_body[col] == b)
      v[sys->col_dof[col]] = sys->Jx[q];
    else if (sys->col_body[col] != sys->row_a[r] &&
             sys->col_body[col] != sys->row_b[r])
      (*other)++;
  }
}

/* Whether body b has an active column for dof e. */
static int active(const cm_system_t *sys, const int *first, int b, int e) {
  for (int j = first[b]; j >= 0 && j < sys->n && sys->col_body[j] == b; j++)
    if (sys->col_dof[j] == e)
      return 1;
  return 0;
}

/* Side k (0: a, +; 1: b, -) of row r against [d, r x d]. */
static void check_side(const cm_scene_t *s, const cm_system_t *sys,
                       const int *first, int r, int k, const double *d,
                       int *bad) {
  const cm_contact_t *ct = &s->contacts[sys->row_contact[r]];
  int b = k ? ct->b : ct->a, other = 0;
  if (b == CM_WORLD || s->bodies[b].fixed)
    return;
  const cm_body_t *bd = &s->bodies[b];
  double v[6], arm[3], sg = k ? -1.0 : 1.0;
  row_on_body(sys, r, b, v, &other);
  *bad += other;
  for (int i = 0; i < 3; i++)
    arm[i] = ct->has_arms ? (k ? ct->arm_b[i] : ct->arm_a[i])
                          : ct->point[i] - bd->position[i];
  double rxd[3] = {arm[1] * d[2] - arm[2] * d[1], arm[2] * d[0] - arm[0] * d[2],
                   arm[0] * d[1] - arm[1] * d[0]};
  double imin = fmin(bd->inertia[0], fmin(bd->inertia[4], bd->inertia[8]));
  double scale = sqrt(arm[0] * arm[0] + arm[1] * arm[1] + arm[2] * arm[2]);
  double neg = 1e-12 * sqrt(imin / bd->mass) + 1e-15 * scale;
  for (int e = 0; e < 6; e++) {
    double want = sg * (e < 3 ? d[e] : rxd[e - 3]);
    if (active(sys, first, b, e)) {
      double tol = e < 3 ? 1e-15 : 1e-14 * scale;
      *bad += !(fabs(v[e] - want) <= tol);
    } else {
      *bad += v[e] != 0 || !(fabs(want) <= (e < 3 ? 0 : neg));
    }
  }
}

/* The direction of row r from its stored translational entries. */
static void row_direction(const cm_scene_t *s, const cm_system_t *sys, int r,
                          double *d) {
  const cm_contact_t *ct = &s->contacts[sys->row_contact[r]];
  int side = (ct->a != CM_WORLD && !s->bodies[ct->a].fixed) ? ct->a : ct->b;
  double v[6];
  int other = 0;
  row_on_body(sys, r, side, v, &other);
  double sg = side == ct->a ? 1.0 : -1.0;
  for (int i = 0; i < 3; i++)
    d[i] = sg * v[i];
}

static void check_rows(const cm_scene_t *s, const cm_system_t *sys) {
  int *first = malloc(sizeof(int) * (size_t)s->nbodies);
  CMT_TRUE(first != NULL);
  if (!first)
    return;
  for (int b = 0; b < s->nbodies; b++)
    first[b] = -1;
  for (int j = sys->n - 1; j >= 0; j--)
    first[sys->col_body[j]] = j;
  int bad = 0, tangents = 0, arms = 0;
  double t1[3] = {0, 0, 0};
  for (int r = 0; r < sys->nc; r++) {
    const cm_contact_t *ct = &s->contacts[sys->row_contact[r]];
    int kind = sys->row_kind[r];
    double d[3];
    row_direction(s, sys, r, d);
    const double *n = ct->normal;
    if (kind == 0)
      bad += d[0] != n[0] || d[1] != n[1] || d[2] != n[2];
    else {
      double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
      double dn = d[0] * n[0] + d[1] * n[1] + d[2] * n[2];
      double dt = d[0] * t1[0] + d[1] * t1[1] + d[2] * t1[2];
      bad += !(fabs(len - 1) <= 1e-15 && fabs(dn) <= 1e-15) ||
             (kind == 2 && !(fabs(dt) <= 1e-15));
      tangents++;
    }
    if (kind == 1)
      memcpy(t1, d, sizeof t1);
    for (int k = 0; k < 2; k++)
      check_side(s, sys, first, r, k, kind ? d : n, &bad);
    arms += ct->has_arms;
    bad += sys->k[r] != (kind ? ct->stiffness_t : ct->stiffness);
  }
  CMT_EQ_INT(bad, 0);
  CMT_TRUE(tangents > 10000 && arms > 5000); /* the flags were exercised */
  free(first);
}

CM_TEST(assemble_mixed_threads) {
  cm_scene_t *s = mixed_pile();
  if (!s)
    return;
  CMT_TRUE(s->ncontacts > CM__PAR_MIN);
  cm_system_t *sys[2][2] = {{NULL, NULL}, {NULL, NULL}};
  for (int t = 0; t < 2; t++) {
    cm_context_t ctx;
    cm_context_init(&ctx);
    ctx.threads = t + 1;
    CMT_EQ_INT(cm_system_assemble(&ctx, s, &sys[t][0]), 0);
    CMT_EQ_INT(cm__system_assemble_weighted(&ctx, s, 1.0, 0.5, &sys[t][1]), 0);
  }
  if (sys[0][0] && sys[1][0] && sys[0][1] && sys[1][1]) {
    same_system(sys[0][0], sys[1][0]);
    same_system(sys[0][1], sys[1][1]);
    cm_context_t ctx; /* a reader's (validated) scene, not checked again */
    cm_context_init(&ctx);
    cm_system_t *chk = NULL;
    CMT_EQ_INT(cm__system_assemble_checked(&ctx, s, &chk), 0);
    if (chk)
      same_system(sys[1][0], chk);
    cm_system_destroy(&chk);
    CMT_TRUE(sys[1][0]->tangential && sys[1][0]->dashpots);
    CMT_TRUE(sys[1][1]->spring != NULL && sys[1][1]->g != NULL);
    check_rows(s, sys[1][0]);
  }
  for (int t = 0; t < 2; t++)
    cm_system_destroy(&sys[t][0]), cm_system_destroy(&sys[t][1]);
  cm_scene_destroy(&s);
}
