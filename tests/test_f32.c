/* test_f32.c: cmodes' Lanczos on B's float values (from tolerance 1e-6,
 * CM__LZ_F32_TOL, spectrum_internal.h) against a dense LAPACK solve of the same
 * operator in double: the modes to the tolerance, every residual on S
 * (not S32) within it, the probabilistic bound above the true lambda_max,
 * the same bits at 1 and 2 threads; below 1e-6 the products stay double. */
#include "cmodes.h"
#include "cmtest.h"
#include "spectrum/spectrum_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static cm_operator_t *f32_operator(const cm_scene_t *s, int threads,
                                   cm_system_t **sys) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = threads;
  cm_operator_t *op = NULL;
  *sys = NULL;
  if (cm_system_assemble(&ctx, s, sys) || cm_operator_create(&ctx, *sys, &op))
    return NULL;
  return op;
}

static int f32_solve_ncv(cm_operator_t *op, double tol, int modes, int ncv,
                         cm__eig_t *e) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_options_t o;
  cm_options_init(&o);
  o.tol = tol, o.modes = modes, o.ncv = ncv;
  memset(e, 0, sizeof *e);
  return cm__eig_lanczos(&ctx, op, -1, &o, NULL, 0, 1e-9, e);
}

static int f32_solve(cm_operator_t *op, double tol, cm__eig_t *e) {
  return f32_solve_ncv(op, tol, 6, 0, e);
}

/* data/pile3d.json's operator at 1 and 2 threads and its dense truth (6
 * modes); 0 when something failed (checked) or the scene is missing. */
typedef struct {
  cm_scene_t *s;
  cm_system_t *sys1, *sys2;
  cm_operator_t *op1, *op2;
  cm__eig_t t;
} f32_fix_t;

static int f32_fix_open(f32_fix_t *f) {
  memset(f, 0, sizeof *f);
  f->s = cmt_data_scene("pile3d.json");
  if (!f->s)
    return 0;
  f->op1 = f32_operator(f->s, 1, &f->sys1);
  f->op2 = f32_operator(f->s, 2, &f->sys2);
  CMT_TRUE(f->op1 && f->op2);
  cm_context_t ctx;
  cm_context_init(&ctx);
  return f->op1 && f->op2 && !cm__eig_dense(&ctx, f->op1, -1, 6, &f->t) &&
         f->t.nev == 6;
}

static void f32_fix_close(f32_fix_t *f) {
  cm__eig_free(&f->t);
  cm_operator_destroy(&f->op1), cm_operator_destroy(&f->op2);
  cm_system_destroy(&f->sys1), cm_system_destroy(&f->sys2);
  cm_scene_destroy(&f->s);
}

CM_TEST(f32_lanczos_dense_truth) {
  f32_fix_t f;
  cm__eig_t e1, e2, d, *t = &f.t;
  if (f32_fix_open(&f)) {
    cm_operator_t *op1 = f.op1, *op2 = f.op2;
    CMT_EQ_INT(f32_solve(op1, 1e-6, &e1), CM_OK);
    CMT_EQ_INT(f32_solve(op2, 1e-6, &e2), CM_OK);
    CMT_EQ_INT(e1.f32, 1);
    CMT_EQ_INT(e1.nev, 6);
    for (int i = 0; i < 6 && i < e1.nev; i++) {
      /* a Ritz value with residual r lies within r lambda of one of S */
      CMT_REL(e1.lambda[i], t->lambda[i], 1e-6);
      CMT_LE(e1.res[i], 1e-6); /* measured on S by cm__eig_finish */
      CMT_TRUE(e1.lambda[i] == e2.lambda[i]); /* any thread count */
    }
    CMT_LE(t->lambda[0], e1.pb_upper);
    CMT_LE(e1.pb_upper, t->lambda[0] * 1.04);
    /* below the tolerance where S32 serves, the products stay on S */
    CMT_EQ_INT(f32_solve(op1, 1e-8, &d), CM_OK);
    CMT_EQ_INT(d.f32, 0);
    for (int i = 0; i < 6 && i < d.nev && i < e1.nev; i++)
      CMT_REL(d.lambda[i], e1.lambda[i], 1e-6);
    cm__eig_free(&e1), cm__eig_free(&e2), cm__eig_free(&d);
  }
  f32_fix_close(&f);
}

/* B's values out of float's range (stiffnesses times 1e-180 or 1e94,
 * tests/test_unsafe.c's extreme scales): the products stay on the double
 * values, and the modes are the dense truth's times the scale. */
CM_TEST(f32_lanczos_out_of_range) {
  cm_scene_t *s = cmt_data_scene("pile3d.json");
  if (!s)
    return;
  cm_system_t *sys = NULL;
  cm_operator_t *op = f32_operator(s, 2, &sys);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm__eig_t t;
  memset(&t, 0, sizeof t);
  CMT_TRUE(op && !cm__eig_dense(&ctx, op, -1, 6, &t) && t.nev == 6);
  for (int e = -1; t.nev == 6 && e <= 1; e += 2) {
    double a = e < 0 ? 1e-180 : 1e94;
    cm_scene_t *c = cm_scene_copy(s);
    for (int i = 0; c && i < c->ncontacts; i++)
      c->contacts[i].stiffness *= a;
    cm_system_t *cs = NULL;
    cm_operator_t *co = c ? f32_operator(c, 2, &cs) : NULL;
    cm__eig_t r;
    CMT_TRUE(co != NULL);
    if (co) /* refused up front, not only caught by the residual check */
      CMT_EQ_INT(cm__op_make_f32(&ctx, co), CM_LIMIT);
    /* an operator asked for float values only falls back to the double
     * ones: the same solve, bit for bit */
    cm_operator_t *c32 = NULL;
    CMT_EQ_INT(cs ? cm__operator_create(&ctx, cs, 1, &c32) : CM_NOMEM, CM_OK);
    if (c32)
      CMT_EQ_INT(cm__op_make_f32(&ctx, c32), CM_LIMIT);
    if (co && f32_solve(co, 1e-6, &r) == CM_OK) {
      CMT_EQ_INT(r.f32, 0);
      CMT_EQ_INT(r.nev, 6);
      for (int i = 0; i < 6 && i < r.nev; i++)
        CMT_REL(r.lambda[i], t.lambda[i] * a, 1e-6);
      CMT_LE(t.lambda[0] * a * (1 - 1e-13), r.pb_upper);
      cm__eig_t r32;
      if (c32 && f32_solve(c32, 1e-6, &r32) == CM_OK) {
        CMT_EQ_INT(r32.nev, r.nev);
        for (int i = 0; i < r.nev && i < r32.nev; i++)
          CMT_TRUE(r32.lambda[i] == r.lambda[i] && r32.res[i] == r.res[i]);
        cm__eig_free(&r32);
      }
      cm__eig_free(&r);
    }
    cm_operator_destroy(&c32);
    cm_operator_destroy(&co);
    cm_system_destroy(&cs);
    cm_scene_destroy(&c);
  }
  cm__eig_free(&t);
  cm_operator_destroy(&op);
  cm_system_destroy(&sys);
  cm_scene_destroy(&s);
}

/* The float basis (lanczos.c, cm__lz_basis32_min; 2^19 rows and up by
 * default, here every size): each basis column stored in float once
 * normalised, the recurrence on the last columns in double, restarts and
 * Ritz vectors from the float columns. Against the dense truth: every
 * mode to the tolerance, every residual on S within it, the probabilistic
 * bound above lambda_max, the same bits at 1 and 2 threads; with the
 * default basis (ncv 48, one cycle) and a small one (ncv 14: restarts,
 * the arrow step on float columns), 6 modes and 1. */

CM_TEST(f32_float_basis_dense_truth) {
  f32_fix_t f;
  int min0 = cm__lz_basis32_min;
  if (f32_fix_open(&f)) {
    cm_operator_t *op1 = f.op1, *op2 = f.op2;
    const cm__eig_t *t = &f.t;
    const int ncvs[2] = {0, 14}, modes[2] = {6, 1};
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 2; b++) {
        cm__eig_t e1, e2, d;
        cm__lz_basis32_min = 0;
        CMT_EQ_INT(f32_solve_ncv(op1, 1e-6, modes[b], ncvs[a], &e1), CM_OK);
        CMT_EQ_INT(f32_solve_ncv(op2, 1e-6, modes[b], ncvs[a], &e2), CM_OK);
        cm__lz_basis32_min = 1 << 30; /* the double basis, for comparison */
        CMT_EQ_INT(f32_solve_ncv(op1, 1e-6, modes[b], ncvs[a], &d), CM_OK);
        CMT_EQ_INT(e1.basis32, 1);
        CMT_EQ_INT(d.basis32, 0);
        CMT_EQ_INT(e1.nev, modes[b]);
        CMT_TRUE(e1.converged);
        for (int i = 0; i < modes[b] && i < e1.nev && i < e2.nev; i++) {
          CMT_REL(e1.lambda[i], t->lambda[i], 1e-6);
          CMT_LE(e1.res[i], 1e-6);                /* on S, by cm__eig_finish */
          CMT_TRUE(e1.lambda[i] == e2.lambda[i]); /* any thread count */
          CMT_TRUE(e1.res[i] == e2.res[i]);
          if (i < d.nev)
            CMT_REL(e1.lambda[i], d.lambda[i], 2e-6);
        }
        if (e1.pb_steps > 0) { /* the bound from the solve's first cycle */
          CMT_LE(t->lambda[0], e1.pb_upper);
          CMT_LE(e1.pb_upper, t->lambda[0] * 1.04);
          CMT_TRUE(e1.pb_upper == e2.pb_upper);
        }
        cm__eig_free(&e1), cm__eig_free(&e2), cm__eig_free(&d);
      }
  }
  cm__lz_basis32_min = min0;
  f32_fix_close(&f);
}

/* ---- an operator with float values only (cm__operator_create's vals32) -- */

/* S of a system densely (m x m row-major), by LAPACK from its J, M and k
 * (cmt_dense_S), independently of the operator; NULL on failure. */
static double *vals32_dense_S(const cm_system_t *s) {
  int m = s->nc, n = s->n;
  double *J = calloc((size_t)m * n + 1, sizeof(double));
  double *M = calloc((size_t)n * n + 1, sizeof(double));
  double *S = NULL;
  if (J && M) {
    for (int r = 0; r < m; r++)
      for (int q = s->Jp[r]; q < s->Jp[r + 1]; q++)
        J[(size_t)r * n + s->Jj[q]] = s->Jx[q];
    for (int j = 0; j < n; j++) /* lower CSC: column j's rows */
      for (int q = s->Mp[j]; q < s->Mp[j + 1]; q++)
        M[(size_t)s->Mi[q] * n + j] = M[(size_t)j * n + s->Mi[q]] = s->Mx[q];
    S = cmt_dense_S(n, m, M, J, s->k);
  }
  free(J), free(M);
  return S;
}

/* 1 when n doubles are equal bit for bit */
static int vals32_same(const double *a, const double *b, size_t n) {
  return memcmp(a, b, sizeof(double) * n) == 0;
}

/* Every double reader of an operator made with float values only (before
 * and after cm__op_make_f64) against the usual operator of the same
 * system: the same bits (the products whole and over a range of rows, k
 * columns at once, the row bounds, |B| |B|^T v, dense B), the same float
 * values; and B B^T against S formed by LAPACK from J, M and k. */
static void vals32_check_scene(const char *name, int threads) {
  cm_scene_t *sc = cmt_data_scene(name);
  if (!sc)
    return;
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = threads;
  cm_system_t *s = NULL;
  cm_operator_t *op = NULL, *o32 = NULL;
  CMT_EQ_INT(cm_system_assemble(&ctx, sc, &s), CM_OK);
  CMT_EQ_INT(cm_operator_create(&ctx, s, &op), CM_OK);
  CMT_EQ_INT(cm__operator_create(&ctx, s, 1, &o32), CM_OK);
  int m = s->nc, n = s->n, k = 6; /* columns at once: 1, 3 and 6 */
  size_t big = (size_t)(m > n ? m : n) * k + 1;
  double *in = malloc(sizeof(double) * big), *a = calloc(big, sizeof(double));
  double *b = calloc(big, sizeof(double));
  double *Bd = calloc((size_t)m * n + 1, sizeof(double));
  double *Bd32 = calloc((size_t)m * n + 1, sizeof(double));
  double *S = op && o32 ? vals32_dense_S(s) : NULL;
  CMT_TRUE(in && a && b && Bd && Bd32 && S);
  for (size_t i = 0; i < big; i++) /* positive, for |B| |B|^T v too */
    in[i] = 1.5 + cos(0.7 * (double)i);
  for (int pass = 0; S && in && a && b && Bd && Bd32 && pass < 2; pass++) {
    if (pass) /* then the late double values */
      CMT_EQ_INT(cm__op_make_f64(o32), CM_OK);
    for (int tr = 0; tr < 2; tr++) {
      int len = tr ? n : m, i0 = len / 3, i1 = 2 * len / 3;
      CMT_EQ_INT(cm__op_rows(op, -1, tr, in, 0, len, a), 0);
      CMT_EQ_INT(cm__op_rows(o32, -1, tr, in, 0, len, b), 0);
      CMT_TRUE(vals32_same(a, b, (size_t)len));
      CMT_EQ_INT(cm__op_rows(op, -1, tr, in, i0, i1, a), 0);
      CMT_EQ_INT(cm__op_rows(o32, -1, tr, in, i0, i1, b), 0);
      CMT_TRUE(vals32_same(a, b, (size_t)(i1 - i0)));
      if (!pass && !tr) /* the usual operator forms its copies when asked */
        CMT_EQ_INT(cm__op_rows32(op, -1, tr, in, 0, len, a), -1);
      CMT_EQ_INT(cm__op_make_f32(NULL, op), CM_OK);
      CMT_EQ_INT(cm__op_rows32(op, -1, tr, in, 0, len, a), 0);
      CMT_EQ_INT(cm__op_rows32(o32, -1, tr, in, 0, len, b), 0);
      CMT_TRUE(vals32_same(a, b, (size_t)len));
      int ld_in = tr ? m : n, ld_out = tr ? n : m;
      for (int kc = 1; kc <= k; kc += kc < 3 ? 2 : 3) { /* 1, 3, 6 */
        cm__op_apply_cols(op, -1, tr, in, (size_t)ld_in, a, (size_t)ld_out, kc);
        cm__op_apply_cols(o32, -1, tr, in, (size_t)ld_in, b, (size_t)ld_out,
                          kc);
        CMT_TRUE(vals32_same(a, b, (size_t)ld_out * kc));
      }
    }
    CMT_EQ_INT(cm__op_row_bounds(&ctx, op, -1, a, a + m), CM_OK);
    CMT_EQ_INT(cm__op_row_bounds(&ctx, o32, -1, b, b + m), CM_OK);
    CMT_TRUE(vals32_same(a, b, 2 * (size_t)m));
    CMT_EQ_INT(cm__op_abs_product(&ctx, op, -1, in, a), CM_OK);
    CMT_EQ_INT(cm__op_abs_product(&ctx, o32, -1, in, b), CM_OK);
    CMT_TRUE(vals32_same(a, b, (size_t)m));
    CMT_EQ_INT(cm__op_dense_B(op, -1, Bd), CM_OK);
    CMT_EQ_INT(cm__op_dense_B(o32, -1, Bd32), CM_OK);
    CMT_TRUE(vals32_same(Bd, Bd32, (size_t)m * n));
  }
  /* B B^T against LAPACK's S, entrywise relative to the largest entry */
  double smax = 0, err = 0;
  for (int i = 0; S && i < m; i++)
    for (int j = 0; j < m; j++) {
      double v = 0;
      for (int c = 0; c < n; c++)
        v += Bd32[(size_t)c * m + i] * Bd32[(size_t)c * m + j];
      double t = S[(size_t)j * m + i];
      smax = fabs(t) > smax ? fabs(t) : smax;
      err = fabs(v - t) > err ? fabs(v - t) : err;
    }
  CMT_TRUE(smax > 0);
  CMT_LE(err, 1e-12 * smax);
  free(in), free(a), free(b), free(Bd), free(Bd32), free(S);
  cm_operator_destroy(&op), cm_operator_destroy(&o32);
  cm_system_destroy(&s);
  cm_scene_destroy(&sc);
}

CM_TEST(f32_values_only_same_bits) {
  /* a diagonal M (B from J and L^-1), rotations with general inertia (B's
   * own CSR), 2D, a fleet; at 1 and 2 threads */
  const char *scenes[] = {"pile3d.json", "stack_boxes.json", "pile2d.json",
                          "fleet.json"};
  for (int i = 0; i < 4; i++)
    for (int t = 1; t <= 2; t++)
      vals32_check_scene(scenes[i], t);
}

/* The analysis forms the float values only from cm__lz_basis32_min rows at
 * tolerance 1e-6: omega_max to the tolerance of the dense truth, the
 * certified bound above it, the same report at 1 and 2 threads. */
CM_TEST(f32_values_only_analysis) {
  f32_fix_t f;
  int min0 = cm__lz_basis32_min;
  if (f32_fix_open(&f)) {
    cm__lz_basis32_min = 0;
    cm_report_t *r[2] = {NULL, NULL};
    for (int t = 0; t < 2; t++) {
      cm_context_t ctx;
      cm_context_init(&ctx);
      ctx.threads = t + 1;
      cm_options_t o;
      cm_options_init(&o);
      o.tol = 1e-6, o.modes = 1, o.method = CM_METHOD_LANCZOS;
      CMT_EQ_INT(cm_analyze(&ctx, f.s, &o, &r[t]), CM_OK);
    }
    double truth = sqrt(f.t.lambda[0]);
    if (r[0] && r[1]) {
      CMT_REL(r[0]->omega_max, truth, 1e-6);
      CMT_LE(truth, r[0]->omega_upper);
      CMT_TRUE(r[0]->omega_max == r[1]->omega_max);
      CMT_TRUE(r[0]->omega_upper == r[1]->omega_upper);
    }
    /* warm-started from that report's vector: the probabilistic bound then
     * runs on S (its own run), forming the double values late */
    cm_report_t *w = NULL;
    if (r[0] && r[0]->start_vector) {
      cm_context_t ctx;
      cm_context_init(&ctx);
      cm_options_t o;
      cm_options_init(&o);
      o.tol = 1e-6, o.modes = 1, o.method = CM_METHOD_LANCZOS;
      o.warm_start = r[0]->start_vector;
      CMT_EQ_INT(cm_analyze(&ctx, f.s, &o, &w), CM_OK);
    }
    CMT_TRUE(w != NULL);
    if (w) {
      CMT_REL(w->omega_max, truth, 1e-6);
      CMT_LE(truth, w->omega_upper);
      CMT_LE(truth * (1 - 1e-12), w->omega_upper_prob);
    }
    cm_report_destroy(&w);
    cm_report_destroy(&r[0]), cm_report_destroy(&r[1]);
  }
  cm__lz_basis32_min = min0;
  f32_fix_close(&f);
}

/* ---- B^T z kept by cm__eig_finish for the report ------------------------ */

/* Every backend's kept B^T z (cm__eig_t's bz, which the report's body
 * shares read instead of a product of their own) is cm__op_BT of the
 * returned z bit for bit, on the usual operator and on one with float
 * values only (whose double products come from B's CSR), at 1 and 2
 * threads; and it is B^T z to rounding, B = K^1/2 J L^-T formed here
 * from J, k and the diagonal M (pile3d's spheres, spins dropped). */
static void bz_check(cm_operator_t *op, const cm_system_t *sys,
                     const cm__eig_t *e, const char *what) {
  int m = cm_operator_rows(op), n = cm_operator_cols(op);
  CMT_TRUE(e->bz != NULL && e->nev > 0);
  double *u = malloc(sizeof(double) * ((size_t)n + 1));
  double *w = malloc(sizeof(double) * ((size_t)n + 1));
  for (int p = 0; u && w && e->bz && p < e->nev; p++) {
    const double *z = e->z + (size_t)p * m, *bz = e->bz + (size_t)p * n;
    cm__op_BT(op, -1, z, u);
    if (!vals32_same(u, bz, (size_t)n))
      CMT_FAIL("%s: pair %d: the kept B^T z differs from cm__op_BT's", what, p);
    memset(w, 0, sizeof(double) * (size_t)n); /* J^T K^1/2 z / L */
    double scale = 0, err = 0;
    for (int r = 0; r < m; r++)
      for (int q = sys->Jp[r]; q < sys->Jp[r + 1]; q++)
        w[sys->Jj[q]] += sys->Jx[q] * sqrt(sys->k[r]) * z[r];
    for (int j = 0; j < n; j++) {
      w[j] /= sqrt(sys->Mx[sys->Mp[j]]);
      scale = fmax(scale, fabs(w[j]));
      err = fmax(err, fabs(w[j] - bz[j]));
    }
    CMT_LE(err, 1e-12 * scale);
  }
  free(u), free(w);
}

CM_TEST(eig_finish_keeps_bz) {
  cm_scene_t *sc = cmt_data_scene("pile3d.json");
  if (!sc)
    return;
  for (int threads = 1; threads <= 2; threads++)
    for (int vals32 = 0; vals32 <= 1; vals32++) {
      cm_context_t ctx;
      cm_context_init(&ctx);
      ctx.threads = threads;
      cm_system_t *sys = NULL;
      cm_operator_t *op = NULL;
      CMT_EQ_INT(cm_system_assemble(&ctx, sc, &sys), CM_OK);
      CMT_EQ_INT(cm__operator_create(&ctx, sys, vals32, &op), CM_OK);
      if (!op) {
        cm_system_destroy(&sys);
        continue;
      }
      CMT_TRUE(sys->Mp[sys->n] == sys->n); /* a diagonal M */
      cm_options_t o;
      cm_options_init(&o);
      o.modes = 4, o.tol = 1e-8;
      cm__eig_t e;
      char what[64];
      for (int b = 0; b < 3; b++) {
        memset(&e, 0, sizeof e);
        int st = b == 0   ? cm__eig_dense(&ctx, op, -1, 4, &e)
                 : b == 1 ? cm__eig_arpack(&ctx, op, -1, &o, NULL, 0, &e)
                          : cm__eig_lanczos(&ctx, op, -1, &o, NULL, 0, 0, &e);
        CMT_EQ_INT(st, CM_OK);
        snprintf(what, sizeof what, "%s, vals32 %d, %d threads",
                 b == 0   ? "dense"
                 : b == 1 ? "arpack"
                          : "lanczos",
                 vals32, threads);
        bz_check(op, sys, &e, what);
        cm__eig_free(&e);
      }
      cm_operator_destroy(&op);
      cm_system_destroy(&sys);
    }
  cm_scene_destroy(&sc);
}
