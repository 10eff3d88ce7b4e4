/* test_f32.c: cmodes' Lanczos on B's float values (from tolerance 1e-6,
 * lanczos.c's LZ_F32_TOL) against a dense LAPACK solve of the same
 * operator in double: the modes to the tolerance, every residual on S
 * (not S32) within it, the probabilistic bound above the true lambda_max,
 * the same bits at 1 and 2 threads; below 1e-6 the products stay double. */
#include "cmodes.h"
#include "cmtest.h"
#include "spectrum/spectrum_internal.h"

#include <math.h>
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
    if (co && f32_solve(co, 1e-6, &r) == CM_OK) {
      CMT_EQ_INT(r.f32, 0);
      CMT_EQ_INT(r.nev, 6);
      for (int i = 0; i < 6 && i < r.nev; i++)
        CMT_REL(r.lambda[i], t.lambda[i] * a, 1e-6);
      CMT_LE(t.lambda[0] * a * (1 - 1e-13), r.pb_upper);
      cm__eig_free(&r);
    }
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
