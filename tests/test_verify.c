/* test_verify.c: the verification harness against independent truths: the
 * reference bar's analytic frequencies (sqrt(2k/m), sqrt(2kL^2/I)), the
 * central-difference dispersion (2/h) asin(h omega/2) and its h^2 error,
 * the analytic critical steps 2/omega and 2 sqrt(2)/omega, the pendulum law
 * of the bar's finite rocking, a pure sampled sinusoid for the estimator,
 * generated piles and fleets against the core's predicted steps, and, with
 * tangential springs and dashpots, the spectral radius of the damped
 * velocity-Verlet amplification matrix formed densely here. */
#include "cmodes.h"
#include "cmtest.h"
#include "verify/verify_internal.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static const double vt_w_trans = 316.22776601683793; /* sqrt(2 k / m) */
static const double vt_w_rock = 632.45553203367586;  /* sqrt(2 k L^2 / I) */

static cm_scene_t *vt_bar(void) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  int st = cm_scene_read_file(&ctx, CM_SOURCE_DIR "/data/bar2d.json", &s);
  if (st)
    CMT_FAIL("bar2d.json: %s", ctx.message);
  return s;
}

static void vt_gravity(cm_verify_options_t *o, int dim) {
  o->use_gravity = 1;
  o->gravity[0] = o->gravity[1] = o->gravity[2] = 0;
  o->gravity[dim - 1] = -9.81;
  o->progress = 0;
}

static const cm_verify_run_t *vt_find(const cm_verify_result_t *r, int mode,
                                      double amp, double step, int model,
                                      int integ) {
  for (int i = 0; r && i < r->nruns; i++) {
    const cm_verify_run_t *u = &r->runs[i];
    if (u->mode == mode && u->amplitude == amp && u->step_fraction == step &&
        u->model == model && u->integrator == integ)
      return u;
  }
  CMT_FAIL("no run mode %d amp %g step %g model %d integ %d", mode, amp, step,
           model, integ);
  return NULL;
}

/* ---- estimator and shifts -------------------------------------------------
 */

CM_TEST(verify_measure_synthetic) {
  /* pure, offset, decaying and harmonic-laden sinusoids of known angle */
  long n = 4000;
  double *s = malloc((size_t)n * sizeof *s), th, per;
  double th0 = 2 * M_PI / 37.3;
  for (long i = 0; i < n; i++)
    s[i] = 0.7 * cos(th0 * (double)i + 1.1) + 0.2;
  CMT_EQ_INT(cm__vmeasure(s, n, &th, &per), 0);
  CMT_REL(th, th0, 1e-9);
  CMT_TRUE(per >= 100);
  for (long i = 0; i < n; i++) /* RK4-like numerical damping */
    s[i] = exp(-1e-3 * (double)i) * cos(th0 * (double)i + 0.4);
  CMT_EQ_INT(cm__vmeasure(s, n, &th, &per), 0);
  CMT_REL(th, th0, 1e-8);
  for (long i = 0; i < n; i++) /* 10% third harmonic: periodic, anharmonic */
    s[i] = cos(th0 * (double)i) + 0.1 * cos(3 * th0 * (double)i);
  CMT_EQ_INT(cm__vmeasure(s, n, &th, &per), 0);
  CMT_REL(th, th0, 1e-5);
  CMT_LE(cm__vmeasure_self_error(0.3, 3000), 1e-10);
  for (long i = 0; i < n; i++) /* no oscillation: a ramp */
    s[i] = (double)i;
  CMT_TRUE(cm__vmeasure(s, n, &th, &per) != 0);
  CMT_TRUE(isnan(th));
  free(s);
}

CM_TEST(verify_shift_correction) {
  double w = 500, h = 1e-3;
  /* central difference: (2/h) asin(h w / 2) */
  CMT_REL(cm__vshift(CM__VCD, w, h) / h, 2 / h * asin(h * w / 2), 1e-15);
  CMT_REL(cm__vunshift(CM__VCD, cm__vshift(CM__VCD, w, h), h), w, 1e-14);
  CMT_TRUE(isnan(cm__vshift(CM__VCD, 2.01 / h, h)));
  /* RK4: the angle of g(i W) = 1 + iW - W^2/2 - iW^3/6 + W^4/24 */
  for (double W = 0.05; W < 2.4; W += 0.05) {
    double re = 1 - W * W / 2 + pow(W, 4) / 24, im = W - pow(W, 3) / 6;
    CMT_REL(cm__vshift(CM__VRK4, W / h, h), atan2(im, re), 1e-14);
    CMT_REL(cm__vunshift(CM__VRK4, atan2(im, re), h), W / h, 1e-12);
  }
}

/* ---- the reference bar ------------------------------------------------------
 */

CM_TEST(verify_bar_frequencies) {
  cm_scene_t *s = vt_bar();
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  vt_gravity(&o, 2);
  o.namplitudes = 1, o.amplitudes[0] = 0.01;
  o.nsteps = 3, o.steps[0] = 0.025, o.steps[1] = 0.05, o.steps[2] = 0.1;
  o.models = CM_VERIFY_LINEAR, o.stability = 0;
  cm_verify_result_t *r = NULL;
  int st = cm_verify(&ctx, s, &o, &r);
  CMT_EQ_INT(st, 0);
  if (st)
    fprintf(stderr, "%s\n", ctx.message);
  CMT_EQ_INT(r ? r->nruns : 0, 2 * 3 * 2);
  /* gravity preload: delta = m g / (2 k) on each contact */
  CMT_REL(r->min_overlap, 2 * 9.81 / 2e5, 1e-10);
  CMT_REL(r->omega_max, vt_w_rock, 1e-10);
  double wpred[2] = {vt_w_rock, vt_w_trans};
  for (int md = 1; md <= 2; md++)
    for (int g = 0; g < 2; g++) {
      int integ = g ? CM_VERIFY_RK4 : CM_VERIFY_CD;
      double e[3];
      for (int k = 0; k < 3; k++) {
        const cm_verify_run_t *u =
            vt_find(r, md, 0.01, o.steps[k], CM_VERIFY_LINEAR, integ);
        if (!u)
          continue;
        CMT_REL(u->omega_pred, wpred[md - 1], 1e-9);
        CMT_REL(u->omega_corr, wpred[md - 1], 1e-4); /* acceptance */
        CMT_REL(u->omega_corr, wpred[md - 1], 1e-7); /* what it really does */
        CMT_TRUE(!strcmp(u->verdict, "agrees"));
        e[k] = u->err_raw;
        if (integ == CM_VERIFY_CD) { /* raw = the analytic dispersion */
          double W = wpred[md - 1] * u->h_s;
          CMT_REL(u->omega_meas, 2 / u->h_s * asin(W / 2), 1e-8);
        }
      }
      if (integ == CM_VERIFY_CD) { /* error ~ +Omega^2/24: h^2 */
        CMT_REL(e[1] / e[0], 4.0, 0.01);
        CMT_REL(e[2] / e[1], 4.0, 0.01);
        CMT_TRUE(e[0] > 0);
      } else { /* RK4's frequency error is O(h^4): ratio 16 */
        CMT_REL(e[2] / e[1], 16.0, 0.05);
        CMT_TRUE(e[1] < 0);
      }
    }
  cm_verify_result_destroy(&r);
  cm_scene_destroy(&s);
}

CM_TEST(verify_bar_opening) {
  cm_scene_t *s = vt_bar();
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  vt_gravity(&o, 2);
  o.mode = 1; /* rocking */
  o.namplitudes = 3, o.amplitudes[0] = 0.5, o.amplitudes[1] = 0.99;
  o.amplitudes[2] = 1.5;
  o.nsteps = 1, o.steps[0] = 0.05;
  o.models = CM_VERIFY_LINEAR | CM_VERIFY_UNILATERAL, o.stability = 0;
  o.integrators = CM_VERIFY_CD;
  cm_verify_result_t *r = NULL;
  CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), 0);
  for (int a = 0; a < 2 && r; a++) { /* below the overlap: stays closed */
    const cm_verify_run_t *u = vt_find(r, 1, o.amplitudes[a], 0.05,
                                       CM_VERIFY_UNILATERAL, CM_VERIFY_CD);
    CMT_EQ_INT(u ? u->opened : -1, 0);
    CMT_REL(u ? u->omega_corr : 0, vt_w_rock, 1e-6);
    CMT_TRUE(u && !strcmp(u->verdict, "agrees"));
  }
  const cm_verify_run_t *u =
      vt_find(r, 1, 1.5, 0.05, CM_VERIFY_UNILATERAL, CM_VERIFY_CD);
  const cm_verify_run_t *l =
      vt_find(r, 1, 1.5, 0.05, CM_VERIFY_LINEAR, CM_VERIFY_CD);
  if (u && l) {
    CMT_EQ_INT(u->max_open, 1); /* one contact open at a time (rocking) */
    CMT_TRUE(u->opened >= 1);
    CMT_TRUE(u->err < -0.01); /* softer: departs by percent */
    CMT_TRUE(!strcmp(u->verdict, "contact opening"));
    CMT_TRUE(!strcmp(l->verdict, "agrees")); /* the linear run does not */
    CMT_EQ_INT(l->opened, 0);
  }
  char *js = cm_verify_to_json(r, 0);
  CMT_CONTAINS(js, "\"verdict\":\"contact opening\"");
  free(js);
  cm_verify_result_destroy(&r);
  cm_scene_destroy(&s);
}

CM_TEST(verify_bar_stability) {
  cm_scene_t *s = vt_bar();
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  o.progress = 0, o.runs = 0; /* stability only: no preload needed */
  cm_verify_result_t *r = NULL;
  CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), 0);
  CMT_EQ_INT(r ? r->nstab : 0, 2);
  if (r && r->nstab == 2) {
    const cm_verify_stability_t *cd = &r->stab[0], *rk = &r->stab[1];
    CMT_EQ_INT(cd->integrator, CM_VERIFY_CD);
    CMT_REL(cd->h_bisect_s, 2 / vt_w_rock, 0.005); /* acceptance */
    CMT_REL(cd->h_bisect_s, 2 / vt_w_rock, 2e-4);
    CMT_LE(cd->h_stable_s, 2 / vt_w_rock * (1 + 1e-12));
    CMT_LE(2 / vt_w_rock, cd->h_unstable_s);
    CMT_REL(cd->h_pc_s, 2.0 / 500, 1e-9); /* per-contact: 2 / 500 s */
    CMT_EQ_INT(cd->pc_unstable, 1);
    CMT_TRUE(cd->pc_steps < 100);
    CMT_REL(rk->h_bisect_s, 2 * sqrt(2.0) / vt_w_rock, 2e-3);
    CMT_EQ_INT(rk->pc_unstable, 1);
  }
  cm_verify_result_destroy(&r);
  /* the energy trace: bounded below the limit, unbounded above */
  double *E = malloc(401 * sizeof *E), emax = 0;
  CMT_EQ_INT(cm_verify_energy_trace(&ctx, s, &o, CM_VERIFY_CD,
                                    0.99 * 2 / vt_w_rock, 400, E),
             0);
  for (int i = 0; i <= 400; i++)
    emax = fmax(emax, E[i]);
  CMT_REL(E[0], 1.0, 1e-15);
  CMT_LE(emax, 2.0);
  CMT_EQ_INT(cm_verify_energy_trace(&ctx, s, &o, CM_VERIFY_CD,
                                    1.01 * 2 / vt_w_rock, 400, E),
             0);
  CMT_TRUE(E[400] > 1e20);
  free(E);
  cm_scene_destroy(&s);
}

CM_TEST(verify_bisect_wrong_prediction) {
  /* the bracket is checked and widened: predictions 0.4x and 3x off still
   * bisect to the analytic 2 / omega_rock and 2 sqrt 2 / omega_rock */
  cm_scene_t *s = vt_bar();
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm__vmodel_t *m = NULL;
  CMT_EQ_INT(cm__vmodel_build(&ctx, s, &m), 0);
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  o.progress = 0;
  double f[2] = {0.4, 3.0};
  for (int t = 0; t < 2 && m; t++) {
    cm__vpred_t p = {0};
    p.omega_max = vt_w_rock / f[t], p.pc_omega_max = 500;
    p.h_cd = f[t] * 2 / vt_w_rock, p.h_rk4 = f[t] * 2 * sqrt(2.0) / vt_w_rock;
    cm_verify_stability_t cd, rk;
    CMT_EQ_INT(cm__vstability(&ctx, m, &o, &p, CM__VCD, &cd), 0);
    CMT_EQ_INT(cm__vstability(&ctx, m, &o, &p, CM__VRK4, &rk), 0);
    CMT_REL(cd.h_bisect_s, 2 / vt_w_rock, 2e-4);
    CMT_REL(rk.h_bisect_s, 2 * sqrt(2.0) / vt_w_rock, 2e-3);
    CMT_REL(cd.rel_err, 1 / f[t] - 1, 1e-3);
  }
  cm__vmodel_destroy(&m);
  cm_scene_destroy(&s);
}

CM_TEST(verify_bar_nonlinear) {
  cm_scene_t *s = vt_bar();
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  vt_gravity(&o, 2);
  /* rocking amplitude theta0 = a delta / L: 0.25 rad at a = 0.25 L / delta */
  double delta = 9.81 / 1e5, a_big = 0.25 * 0.1 / delta;
  o.mode = 1, o.namplitudes = 2, o.amplitudes[0] = 0.01;
  o.amplitudes[1] = a_big;
  o.nsteps = 1, o.steps[0] = 0.05, o.stability = 0;
  o.models = CM_VERIFY_LINEAR | CM_VERIFY_NONLINEAR | CM_VERIFY_FULL;
  cm_verify_result_t *r = NULL;
  int st = cm_verify(&ctx, s, &o, &r);
  CMT_EQ_INT(st, 0);
  for (int g = 0; g < 2 && !st; g++) {
    int integ = g ? CM_VERIFY_RK4 : CM_VERIFY_CD;
    const cm_verify_run_t *l =
        vt_find(r, 1, 0.01, 0.05, CM_VERIFY_LINEAR, integ);
    const cm_verify_run_t *n =
        vt_find(r, 1, 0.01, 0.05, CM_VERIFY_NONLINEAR, integ);
    if (!l || !n)
      continue;
    /* tiny amplitude: the nonlinear model is the linear one */
    CMT_REL(n->omega_meas, l->omega_meas, 1e-7);
    CMT_TRUE(!strcmp(n->verdict, "agrees"));
    /* theta0 = 0.25 rad: I theta'' = -k L^2 sin(2 theta), a pendulum in
     * 2 theta: omega / omega0 = pi / (2 K(sin(theta0))) */
    n = vt_find(r, 1, a_big, 0.05, CM_VERIFY_NONLINEAR, integ);
    double k = sin(0.25), K = M_PI / 2, term = 1;
    for (int j = 1; j < 30; j++) {
      term *= ((2.0 * j - 1) / (2.0 * j)) * ((2.0 * j - 1) / (2.0 * j)) * k * k;
      K += M_PI / 2 * term;
    }
    if (!n)
      continue;
    CMT_REL(n->omega_corr, vt_w_rock * M_PI / (2 * K), 1e-4);
    CMT_TRUE(n->err < -0.01);
    CMT_EQ_INT(n->opened, 0);
    CMT_TRUE(!strcmp(n->verdict, "linearization"));
    /* the full model at that amplitude lifts the bar off: opening */
    const cm_verify_run_t *f =
        vt_find(r, 1, a_big, 0.05, CM_VERIFY_FULL, integ);
    CMT_TRUE(f && f->opened > 0 && !strcmp(f->verdict, "contact opening"));
  }
  cm_verify_result_destroy(&r);
  cm_scene_destroy(&s);
}

CM_TEST(verify_bar_3d) {
  /* the 3D bar has the 2D frequencies; exercises the 6-dof and quaternion
   * paths, and a given preload instead of gravity. Its COM sits c above the
   * contacts, so the nonlinear model adds the preload's geometric stiffness:
   * omega^2 = 2 k (L^2 - delta c) / I (second derivative of the gap). */
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_bar_options_t bo;
  cm_bar_options_init(&bo);
  bo.dim = 3;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_bar(&ctx, &bo, &s), 0);
  if (!s)
    return;
  int bar = s->contacts[0].a;
  double c = s->bodies[bar].position[2] - s->contacts[0].point[2], L = 0.1;
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  vt_gravity(&o, 3);
  o.namplitudes = 1, o.amplitudes[0] = 0.1, o.nsteps = 1, o.steps[0] = 0.05;
  o.stability = 0;
  o.models = CM_VERIFY_LINEAR | CM_VERIFY_UNILATERAL | CM_VERIFY_NONLINEAR;
  double f[2] = {5, 5};
  for (int pass = 0; pass < 2; pass++) {
    if (pass)
      o.use_gravity = 0, o.preload = f;
    cm_verify_result_t *r = NULL;
    int st = cm_verify(&ctx, s, &o, &r);
    CMT_EQ_INT(st, 0);
    if (st) {
      fprintf(stderr, "%s\n", ctx.message);
      continue;
    }
    double delta = pass ? 5 / 1e5 : 2 * 9.81 / 2e5;
    CMT_REL(r->min_overlap, delta, 1e-10);
    CMT_EQ_INT(r->nruns, 2 * 3 * 2);
    for (int i = 0; i < r->nruns; i++) {
      const cm_verify_run_t *u = &r->runs[i];
      double w = u->mode == 1 ? vt_w_rock : vt_w_trans;
      if (u->model == CM_VERIFY_NONLINEAR && u->mode == 1)
        w *= sqrt(1 - delta * c / (L * L));
      CMT_REL(u->omega_corr, w, 2e-7);
      CMT_EQ_INT(u->opened, 0);
    }
    cm_verify_result_destroy(&r);
  }
  cm_scene_destroy(&s);
}

/* ---- generated scenes -------------------------------------------------------
 */

/* Central-difference bisection against the core's prediction (1%), and the
 * per-contact step must blow up. */
static void vt_stability(cm_scene_t *s, const char *what, long steps) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  o.progress = 0, o.runs = 0, o.integrators = CM_VERIFY_CD;
  o.bisect_tol = 1e-3, o.bisect_steps = steps;
  cm_verify_result_t *r = NULL;
  int st = cm_verify(&ctx, s, &o, &r);
  CMT_EQ_INT(st, 0);
  if (st) {
    fprintf(stderr, "%s: %s\n", what, ctx.message);
    return;
  }
  /* independent: the central-difference limit is 2 / omega_max */
  CMT_REL(r->stab[0].h_pred_s, 2 / r->omega_max, 1e-12);
  CMT_REL(r->stab[0].h_bisect_s, r->stab[0].h_pred_s, 0.01); /* acceptance */
  CMT_REL(r->stab[0].h_bisect_s, r->stab[0].h_pred_s, 2e-3);
  /* the prediction lies inside the final bracket */
  CMT_LE(r->stab[0].h_stable_s, r->stab[0].h_pred_s * (1 + 1e-9));
  CMT_LE(r->stab[0].h_pred_s * (1 - 1e-9), r->stab[0].h_unstable_s);
  CMT_TRUE(r->stab[0].h_pc_s > 1.05 * r->stab[0].h_pred_s);
  CMT_EQ_INT(r->stab[0].pc_unstable, 1);
  fprintf(stderr,
          "%s: %d contacts, h_pred %.6e h_bisect %.6e (%+.2e), "
          "h_pc %.4e blew up after %ld steps\n",
          what, s->ncontacts, r->stab[0].h_pred_s, r->stab[0].h_bisect_s,
          r->stab[0].rel_err, r->stab[0].h_pc_s, r->stab[0].pc_steps);
  cm_verify_result_destroy(&r);
}

CM_TEST(verify_pile_stability) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_pile_options_t po;
  cm_pile_options_init(&po);
  po.dim = 2, po.count = 1000, po.seed = 3;
  cm_scene_t *s = NULL;
  double *f = NULL;
  CMT_EQ_INT(cm_generate_pile_forces(&ctx, &po, &s, &f), 0);
  if (!s)
    return;
  CMT_TRUE(s->nbodies >= 1000);
  vt_stability(s, "pile 2D", 3000);
  /* frequency runs need every contact loaded: a hyperstatic pile under
   * frozen-J gravity has tension, which is an error, not a wrong number */
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  vt_gravity(&o, 2);
  o.stability = 0;
  cm_verify_result_t *r = NULL;
  CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), CM_INVALID_SCENE);
  CMT_CONTAINS(ctx.message, "not compressed at the gravity equilibrium");
  CMT_CONTAINS(ctx.path, "contacts[");
  /* with a uniform preload the top mode is measured, and agrees */
  cm_context_clear(&ctx);
  o.use_gravity = 0, o.preload_uniform = 1.0;
  o.nmodes = 1, o.namplitudes = 1, o.amplitudes[0] = 0.01, o.nsteps = 1;
  o.steps[0] = 0.2, o.integrators = CM_VERIFY_CD;
  o.models = CM_VERIFY_LINEAR | CM_VERIFY_UNILATERAL;
  int st = cm_verify(&ctx, s, &o, &r);
  CMT_EQ_INT(st, 0);
  for (int i = 0; r && i < r->nruns; i++) {
    CMT_REL(r->runs[i].omega_corr, r->omega_max, 1e-6);
    CMT_EQ_INT(r->runs[i].opened, 0);
  }
  cm_verify_result_destroy(&r);
  free(f);
  cm_scene_destroy(&s);
}

CM_TEST(verify_pile3d_stability) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_pile_options_t po;
  cm_pile_options_init(&po);
  po.dim = 3, po.count = 1000, po.seed = 4;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_pile(&ctx, &po, &s), 0);
  if (!s)
    return;
  vt_stability(s, "pile 3D", 2000);
  cm_scene_destroy(&s);
}

CM_TEST(verify_fleet_stability) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_fleet_options_t fo;
  cm_fleet_options_init(&fo);
  fo.count = 20, fo.seed = 5;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_fleet(&ctx, &fo, &s), 0);
  if (!s)
    return;
  vt_stability(s, "fleet", 3000);
  cm_scene_destroy(&s);
  /* frequency runs with the generator's forces: the joint bushings carry
   * no static load, an error unless kept as bilateral joints */
  double *f = NULL;
  fo.count = 4;
  CMT_EQ_INT(cm_generate_fleet_forces(&ctx, &fo, &s, &f), 0);
  if (!s)
    return;
  int zero = 0;
  for (int c = 0; c < s->ncontacts; c++)
    zero += f[c] == 0;
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  o.progress = 0, o.stability = 0, o.preload = f;
  o.nmodes = 1, o.namplitudes = 1, o.amplitudes[0] = 0.1, o.nsteps = 1;
  o.steps[0] = 0.1, o.integrators = CM_VERIFY_CD;
  o.models = CM_VERIFY_LINEAR | CM_VERIFY_UNILATERAL;
  cm_verify_result_t *r = NULL;
  if (zero > 0) {
    CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), CM_USAGE);
    CMT_CONTAINS(ctx.message, "--unloaded-bilateral");
  }
  cm_context_clear(&ctx);
  o.bilateral_unloaded = 1;
  CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), 0);
  CMT_EQ_INT(r ? r->bilateral_contacts : -1, zero);
  for (int i = 0; r && i < r->nruns; i++) {
    CMT_REL(r->runs[i].omega_corr, r->omega_max, 1e-6);
    CMT_EQ_INT(r->runs[i].opened, 0);
  }
  cm_verify_result_destroy(&r);
  free(f);
  cm_scene_destroy(&s);
}

CM_TEST(verify_bar_direction) {
  /* a user direction: pure lift excites the translation (mode 2) only;
   * lift plus rocking is measured on the mode it excites most */
  cm_scene_t *s = vt_bar();
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  vt_gravity(&o, 2);
  o.namplitudes = 1, o.amplitudes[0] = 0.5, o.nsteps = 1, o.steps[0] = 0.05;
  o.stability = 0, o.integrators = CM_VERIFY_CD;
  double lift[3] = {0, 1, 0}, rock[3] = {0, 1, 30};
  double want[2] = {vt_w_trans, vt_w_rock};
  for (int pass = 0; pass < 2; pass++) {
    o.direction = pass ? rock : lift;
    cm_verify_result_t *r = NULL;
    CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), 0);
    CMT_EQ_INT(r ? r->nruns : 0, 3);
    for (int i = 0; r && i < r->nruns; i++) {
      CMT_EQ_INT(r->runs[i].mode, 0);
      CMT_REL(r->runs[i].omega_corr, want[pass], 1e-6);
    }
    cm_verify_result_destroy(&r);
  }
  double spin[3] = {1, 0, 0}; /* sliding along the ground: a free motion */
  o.direction = spin;
  cm_verify_result_t *r = NULL;
  CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), CM_USAGE);
  CMT_CONTAINS(ctx.message, "free motion");
  cm_scene_destroy(&s);
}

/* ---- bad inputs -----------------------------------------------------------
 */

CM_TEST(verify_bad_inputs) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = vt_bar();
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  o.progress = 0, o.stability = 0;
  o.namplitudes = 1, o.nsteps = 1, o.integrators = CM_VERIFY_CD;
  o.models = CM_VERIFY_LINEAR;
  cm_verify_result_t *r = NULL;
  /* no preload */
  CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), CM_USAGE);
  CMT_CONTAINS(ctx.message, "--gravity");
  CMT_TRUE(r == NULL);
  /* a mode that does not exist */
  vt_gravity(&o, 2);
  o.mode = 3;
  cm_context_clear(&ctx);
  CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), CM_USAGE);
  CMT_CONTAINS(ctx.message, "mode 3 does not exist");
  CMT_CONTAINS(ctx.message, "2 coupled modes");
  o.mode = 0;
  /* gravity along the bar: no support, no equilibrium */
  o.gravity[0] = -9.81, o.gravity[1] = 0;
  cm_context_clear(&ctx);
  CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), CM_INVALID_SCENE);
  CMT_CONTAINS(ctx.message, "no static equilibrium");
  CMT_CONTAINS(ctx.message, "bar");
  CMT_CONTAINS(ctx.path, "bodies[0]");
  /* upward gravity: both contacts in tension */
  o.gravity[0] = 0, o.gravity[1] = 9.81;
  cm_context_clear(&ctx);
  CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), CM_INVALID_SCENE);
  CMT_CONTAINS(ctx.message, "2 of 2 contacts are not compressed");
  CMT_CONTAINS(ctx.message, "tension");
  /* a hold-down contact from above goes into tension under gravity */
  cm_contact_t c;
  cm_contact_init(&c);
  c.a = 0, c.b = CM_WORLD, c.point[0] = 0, c.point[1] = 0.01;
  c.normal[0] = 0, c.normal[1] = -1, c.stiffness = 1e5;
  CMT_TRUE(cm_scene_add_contact(&ctx, s, &c, "lid") >= 0);
  o.gravity[1] = -9.81;
  cm_context_clear(&ctx);
  CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), CM_INVALID_SCENE);
  CMT_CONTAINS(ctx.message, "contacts[2] (lid) tension");
  CMT_CONTAINS(ctx.path, "contacts[2]");
  /* a preload that is not compressive */
  double f[3] = {1, 0, 1};
  o.use_gravity = 0, o.preload = f;
  cm_context_clear(&ctx);
  CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), CM_USAGE);
  CMT_CONTAINS(ctx.path, "preload[1]");
  /* bad lists */
  o.preload = NULL, o.use_gravity = 1, o.steps[0] = 1.5;
  cm_context_clear(&ctx);
  CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), CM_USAGE);
  CMT_CONTAINS(ctx.message, "step fraction 1.5");
  cm_scene_destroy(&s);
}

CM_TEST(verify_cli) {
  char cmd[1024];
  int code;
  snprintf(cmd, sizeof cmd,
           "%s verify %s/data/bar2d.json --gravity 0,-9.81 -q --json "
           "--amplitudes 0.01 --steps 0.05 --models linear --integrators cd "
           "--bisect-steps 2000",
           CM_BINARY, CM_SOURCE_DIR);
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  CMT_CONTAINS(out, "\"verdict\": \"agrees\"");
  CMT_CONTAINS(out, "\"per_contact\"");
  CMT_CONTAINS(out, "\"unstable\": true");
  free(out);
  snprintf(cmd, sizeof cmd,
           "%s verify %s/data/bar2d.json --gravity 0,9.81 -q 2>&1", CM_BINARY,
           CM_SOURCE_DIR);
  out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 3);
  CMT_CONTAINS(out, "not compressed");
  free(out);
  snprintf(cmd, sizeof cmd,
           "%s verify %s/data/bar2d.json --gravity 0,-9.81 --mode 9 -q 2>&1",
           CM_BINARY, CM_SOURCE_DIR);
  out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 2);
  CMT_CONTAINS(out, "mode 9 does not exist");
  free(out);
  snprintf(cmd, sizeof cmd, "%s verify %s/data/bar2d.json --steps x 2>&1",
           CM_BINARY, CM_SOURCE_DIR);
  out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 2);
  CMT_CONTAINS(out, "--steps");
  free(out);
  snprintf(cmd, sizeof cmd,
           "%s verify %s/data/bar2d.json --stability-only -q "
           "--plot /tmp/cmodes_verify_test.svg --bisect-steps 2000",
           CM_BINARY, CM_SOURCE_DIR);
  out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  CMT_CONTAINS(out, "unstable: energy x1e6");
  free(out);
  char *svg = cmt_read_file("/tmp/cmodes_verify_test.svg");
  CMT_CONTAINS(svg, "<polyline");
  CMT_CONTAINS(svg, "1.01 h_limit");
  free(svg);
  remove("/tmp/cmodes_verify_test.svg");
}

/* ---- tangential springs and dashpots ----------------------------------------
 */

/* The damped bar: the reference bar with its COM 2 cm above the contacts
 * (so the tangents couple with rocking), sticking tangential springs and
 * normal and tangential dashpots in different ratios to the springs (the
 * damping is not proportional). */
static const double vd_m = 2, vd_I = 0.005, vd_L = 0.1, vd_c = 0.02;
static const double vd_k = 1e5, vd_kt = 5e4, vd_cn = 20, vd_ct = 20;

static cm_scene_t *vd_bar(void) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = cm_scene_create(2);
  cm_body_t b;
  cm_body_init(&b);
  b.mass = vd_m, b.inertia[0] = vd_I, b.position[1] = vd_c;
  cm_scene_add_body(&ctx, s, &b, "bar");
  cm_body_init(&b);
  b.fixed = 1;
  cm_scene_add_body(&ctx, s, &b, "ground");
  for (int i = 0; i < 2; i++) {
    cm_contact_t c;
    cm_contact_init(&c);
    c.a = 0, c.b = 1, c.point[0] = i ? vd_L : -vd_L, c.normal[1] = 1;
    c.stiffness = vd_k, c.stiffness_t = vd_kt;
    c.damping_n = vd_cn, c.damping_t = vd_ct;
    CMT_TRUE(cm_scene_add_contact(&ctx, s, &c, NULL) >= 0);
  }
  return s;
}

/* Spectral radius of the velocity-Verlet step with the dashpot on the
 * half-step velocity, state (x_n, v_{n-1/2}), n dofs:
 *   v' = v + h M^-1 (-K x - C v),  x' = x + h v'
 *   A = [I - h^2 Mi K, h (I - h Mi C); -h Mi K, I - h Mi C]  (2n x 2n). */
static double vd_radius(int n, const double *MiK, const double *MiC, double h) {
  int N = 2 * n;
  double *A = calloc((size_t)N * N, sizeof *A), wr[16], wi[16], rho = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) { /* column-major A[i + N j] */
      double id = i == j ? 1.0 : 0.0;
      double dv = id - h * MiC[i + n * j]; /* I - h Mi C */
      A[i + N * j] = id - h * h * MiK[i + n * j];
      A[i + N * (j + n)] = h * dv;
      A[(i + n) + N * j] = -h * MiK[i + n * j];
      A[(i + n) + N * (j + n)] = dv;
    }
  int info = LAPACKE_dgeev(LAPACK_COL_MAJOR, 'N', 'N', N, A, N, wr, wi, NULL, 1,
                           NULL, 1);
  CMT_EQ_INT(info, 0);
  for (int i = 0; i < N; i++)
    rho = fmax(rho, hypot(wr[i], wi[i]));
  free(A);
  return rho;
}

/* M^-1 K and M^-1 C of the damped bar (3 x 3, column-major), formed here
 * from its geometry: rows [d, r x d], r = point - COM, normal (0, 1),
 * tangent (-1, 0). */
static void vd_matrices(double *MiK, double *MiC) {
  double J[4][3], kr[4] = {vd_k, vd_kt, vd_k, vd_kt},
                  cr[4] = {vd_cn, vd_ct, vd_cn, vd_ct};
  double Mi[3] = {1 / vd_m, 1 / vd_m, 1 / vd_I};
  memset(MiK, 0, 9 * sizeof *MiK), memset(MiC, 0, 9 * sizeof *MiC);
  for (int i = 0; i < 2; i++) {
    double rx = i ? vd_L : -vd_L, ry = -vd_c;
    double *jn = J[2 * i], *jt = J[2 * i + 1];
    jn[0] = 0, jn[1] = 1, jn[2] = rx * 1 - ry * 0;     /* d = (0, 1) */
    jt[0] = -1, jt[1] = 0, jt[2] = rx * 0 - ry * (-1); /* d = (-1, 0) */
  }
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      for (int r = 0; r < 4; r++) { /* Mi J^T diag(k) J, Mi J^T diag(c) J */
        MiK[a + 3 * b] += Mi[a] * J[r][a] * kr[r] * J[r][b];
        MiC[a + 3 * b] += Mi[a] * J[r][a] * cr[r] * J[r][b];
      }
}

CM_TEST(verify_damped_bar_stability) {
  /* the independent truth: the amplification matrix' spectral radius,
   * bisected on h */
  double MiK[9], MiC[9];
  vd_matrices(MiK, MiC);
  double lo = 1e-4, hi = 1e-2;
  CMT_TRUE(vd_radius(3, MiK, MiC, lo) <= 1 + 1e-12);
  CMT_TRUE(vd_radius(3, MiK, MiC, hi) > 1 + 1e-12);
  while (hi / lo - 1 > 1e-10) {
    double mid = 0.5 * (lo + hi);
    if (vd_radius(3, MiK, MiC, mid) > 1 + 1e-12)
      hi = mid;
    else
      lo = mid;
  }
  double h_true = 0.5 * (lo + hi);
  /* the report and the harness on the same scene */
  cm_scene_t *s = vd_bar();
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_report_t *rep = NULL;
  cm_options_t ao;
  cm_options_init(&ao);
  CMT_EQ_INT(cm_analyze(&ctx, s, &ao, &rep), 0);
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  o.progress = 0, o.runs = 0;
  cm_verify_result_t *r = NULL;
  CMT_EQ_INT(cm_verify(&ctx, s, &o, &r), 0);
  if (rep && r && r->nstab == 2) {
    const cm_verify_stability_t *cd = &r->stab[0];
    double h_rep = rep->central_difference.h_s;
    fprintf(stderr,
            "damped bar: truth %.9e report %.9e (undamped %.9e) harness "
            "%.9e [%.9e, %.9e], rk4 %.6e (undamped pred %.6e)\n",
            h_true, h_rep, rep->cd_undamped.h_s, cd->h_bisect_s, cd->h_stable_s,
            cd->h_unstable_s, r->stab[1].h_bisect_s, r->stab[1].h_pred_s);
    CMT_EQ_INT(r->nrows, 4);
    CMT_TRUE(r->tangential && r->dashpots);
    CMT_REL(cd->h_pred_s, h_rep, 1e-15);
    CMT_REL(cd->h_undamped_s, rep->cd_undamped.h_s, 1e-15);
    /* the dashpots matter here: several percent below the undamped step */
    CMT_TRUE(h_true < 0.97 * rep->cd_undamped.h_s);
    CMT_REL(cd->h_bisect_s, h_rep, 0.01);  /* acceptance */
    CMT_REL(cd->h_bisect_s, h_true, 0.01); /* acceptance */
    CMT_REL(cd->h_bisect_s, h_true, 2e-4); /* what it really does */
    CMT_LE(cd->h_stable_s, h_true * (1 + 1e-9));
    CMT_LE(h_true * (1 - 1e-9), cd->h_unstable_s);
    CMT_REL(h_rep, h_true, 1e-6);
    CMT_EQ_INT(cd->pc_unstable, 1);
  }
  /* an energy trace: decays below the limit, grows above it */
  double *E = malloc(2001 * sizeof *E), emax = 0;
  CMT_EQ_INT(
      cm_verify_energy_trace(&ctx, s, &o, CM_VERIFY_CD, 0.99 * h_true, 2000, E),
      0);
  for (int i = 0; i <= 2000; i++)
    emax = fmax(emax, E[i]);
  CMT_LE(emax, 2.0);
  CMT_TRUE(E[2000] < 1e-6);
  CMT_EQ_INT(
      cm_verify_energy_trace(&ctx, s, &o, CM_VERIFY_CD, 1.01 * h_true, 400, E),
      0);
  CMT_TRUE(E[400] > 1e6 || !isfinite(E[400]));
  free(E);
  cm_verify_result_destroy(&r);
  cm_report_destroy(&rep);
  cm_scene_destroy(&s);
}

CM_TEST(verify_damped_bar_frequencies) {
  /* frequency runs with the dashpots: the discrete eigenvalue inverted
   * gives back omega and the effective damping ratio; the remaining
   * departure from the undamped omega is the modes' coupling through C
   * (not proportional), the same for both integrators and every step: the
   * continuous eigenvalues lambda of [0 I; -M^-1 K -M^-1 C] (dgeev, formed
   * here), |lambda| and -Re lambda / |lambda|, are what is measured */
  double MiK[9], MiC[9], A[36] = {0}, wr[6], wi[6];
  vd_matrices(MiK, MiC);
  for (int i = 0; i < 3; i++) {
    A[i + 6 * (i + 3)] = 1;
    for (int j = 0; j < 3; j++)
      A[(i + 3) + 6 * j] = -MiK[i + 3 * j],
                      A[(i + 3) + 6 * (j + 3)] = -MiC[i + 3 * j];
  }
  CMT_EQ_INT(LAPACKE_dgeev(LAPACK_COL_MAJOR, 'N', 'N', 6, A, 6, wr, wi, NULL, 1,
                           NULL, 1),
             0);
  cm_scene_t *s = vd_bar();
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  vt_gravity(&o, 2);
  o.namplitudes = 1, o.amplitudes[0] = 0.01;
  o.nsteps = 2, o.steps[0] = 0.05, o.steps[1] = 0.2;
  o.models = CM_VERIFY_LINEAR | CM_VERIFY_NONLINEAR, o.stability = 0;
  cm_verify_result_t *r = NULL;
  int st = cm_verify(&ctx, s, &o, &r);
  CMT_EQ_INT(st, 0);
  if (st)
    fprintf(stderr, "%s\n", ctx.message);
  for (int i = 0; r && i < r->nruns; i++) {
    const cm_verify_run_t *u = &r->runs[i];
    CMT_TRUE(u->zeta_pred > 0.02);
    CMT_REL(u->zeta_meas, u->zeta_pred, 2e-3);
    fprintf(stderr,
            "damped bar: mode %d %s %s step %g: omega %.9g vs %.9g (%+.2e), "
            "zeta %.6g vs %.6g\n",
            u->mode, u->model == CM_VERIFY_LINEAR ? "linear" : "nonlinear",
            u->integrator == CM_VERIFY_CD ? "cd" : "rk4", u->step_fraction,
            u->omega_corr, u->omega_pred, u->err, u->zeta_meas, u->zeta_pred);
    if (u->model != CM_VERIFY_LINEAR) { /* + the preload's geometric
                                           stiffness (COM above contacts) */
      CMT_REL(u->omega_corr, u->omega_pred, 5e-4);
      continue;
    }
    CMT_REL(u->omega_corr, u->omega_pred, 1e-4);
    CMT_TRUE(!strcmp(u->verdict, "agrees"));
    int best = 0; /* the continuous eigenvalue of this mode */
    for (int j = 1; j < 6; j++)
      if (fabs(hypot(wr[j], wi[j]) - u->omega_pred) <
          fabs(hypot(wr[best], wi[best]) - u->omega_pred))
        best = j;
    double lam = hypot(wr[best], wi[best]);
    CMT_REL(u->omega_corr, lam, 1e-5); /* the other modes leak ~1e-6 */
    CMT_REL(u->zeta_meas, -wr[best] / lam, 2e-4);
    const cm_verify_run_t *l =
        vt_find(r, u->mode, 0.01, 0.05, CM_VERIFY_LINEAR, CM_VERIFY_CD);
    if (l) /* no integrator error left in it */
      CMT_REL(u->omega_corr, l->omega_corr, 1e-6);
  }
  cm_verify_result_destroy(&r);
  cm_scene_destroy(&s);
}

/* Four spheres of different masses (three on the ground touching each
 * other, one on top), every contact with a sticking tangential spring and
 * no dashpot: rolling and spin enter the modes through the tangents. */
static cm_scene_t *vd_spheres(void) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = cm_scene_create(3);
  const double R = 0.01, k = 1e4, kt = 5e3;
  double mass[4] = {0.010, 0.013, 0.008, 0.011}, x[4][3];
  for (int i = 0; i < 3; i++) {
    double a = 2 * M_PI * i / 3, rc = 2 * R / sqrt(3.0);
    x[i][0] = rc * cos(a), x[i][1] = rc * sin(a), x[i][2] = R;
  }
  x[3][0] = x[3][1] = 0, x[3][2] = R + 2 * R * sqrt(2.0 / 3.0);
  for (int i = 0; i < 4; i++) {
    cm_body_t b;
    cm_body_init(&b);
    b.mass = mass[i];
    memset(b.inertia, 0, sizeof b.inertia);
    b.inertia[0] = b.inertia[4] = b.inertia[8] = 0.4 * mass[i] * R * R;
    memcpy(b.position, x[i], sizeof x[i]);
    cm_scene_add_body(&ctx, s, &b, NULL);
  }
  int pairs[9][2] = {{0, -1}, {1, -1}, {2, -1}, {1, 0}, {2, 1},
                     {2, 0},  {3, 0},  {3, 1},  {3, 2}};
  for (int p = 0; p < 9; p++) {
    cm_contact_t c;
    cm_contact_init(&c);
    int a = pairs[p][0], b = pairs[p][1];
    c.a = a, c.b = b < 0 ? CM_WORLD : b;
    c.stiffness = k, c.stiffness_t = kt;
    for (int t = 0; t < 3; t++) {
      double d = b < 0 ? (t == 2 ? 1.0 : 0.0) : (x[a][t] - x[b][t]) / (2 * R);
      c.normal[t] = d;
      c.point[t] = x[a][t] - R * d;
    }
    CMT_TRUE(cm_scene_add_contact(&ctx, s, &c, NULL) >= 0);
  }
  return s;
}

CM_TEST(verify_spheres_tangential) {
  cm_scene_t *s = vd_spheres();
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_verify_options_t o;
  cm_verify_options_init(&o);
  o.progress = 0, o.preload_uniform = 0.1;
  o.nmodes = 2, o.namplitudes = 1, o.amplitudes[0] = 0.01;
  o.nsteps = 2, o.steps[0] = 0.05, o.steps[1] = 0.2;
  o.models = CM_VERIFY_LINEAR | CM_VERIFY_NONLINEAR;
  o.bisect_tol = 1e-3, o.bisect_steps = 3000;
  cm_verify_result_t *r = NULL;
  int st = cm_verify(&ctx, s, &o, &r);
  CMT_EQ_INT(st, 0);
  if (st) {
    fprintf(stderr, "%s\n", ctx.message);
    cm_scene_destroy(&s);
    return;
  }
  CMT_EQ_INT(r->nrows, 27);
  CMT_TRUE(r->tangential && !r->dashpots);
  for (int i = 0; i < r->nruns; i++) {
    const cm_verify_run_t *u = &r->runs[i];
    if (u->mode == 1)
      CMT_REL(u->omega_corr, r->omega_max, 1e-3); /* acceptance */
    if (u->model == CM_VERIFY_LINEAR)
      CMT_REL(u->omega_corr, u->omega_pred, 1e-7);
    else /* the preload's geometric stiffness */
      CMT_REL(u->omega_corr, u->omega_pred, 1e-3);
    fprintf(stderr, "spheres: mode %d %s %s step %g: %.9g vs %.9g (%+.2e)\n",
            u->mode, u->model == CM_VERIFY_LINEAR ? "linear" : "nonlinear",
            u->integrator == CM_VERIFY_CD ? "cd" : "rk4", u->step_fraction,
            u->omega_corr, u->omega_pred, u->err);
  }
  CMT_EQ_INT(r->nstab, 2);
  if (r->nstab == 2) {
    CMT_REL(r->stab[0].h_bisect_s, 2 / r->omega_max, 2e-3);
    CMT_REL(r->stab[1].h_bisect_s, 2 * sqrt(2.0) / r->omega_max, 3e-3);
  }
  cm_verify_result_destroy(&r);
  /* the same cluster with normal and tangential dashpots (3D tangent
   * pairs): the bisected central-difference limit is the report's damped
   * one, well below the undamped step */
  for (int c = 0; c < s->ncontacts; c++)
    s->contacts[c].damping_n = 1.0, s->contacts[c].damping_t = 0.5;
  o.runs = 0, o.integrators = CM_VERIFY_CD;
  st = cm_verify(&ctx, s, &o, &r);
  CMT_EQ_INT(st, 0);
  if (!st && r->nstab == 1) {
    const cm_verify_stability_t *cd = &r->stab[0];
    fprintf(stderr,
            "damped spheres: h_pred %.6e (undamped %.6e) h_bisect "
            "%.6e (%+.2e)\n",
            cd->h_pred_s, cd->h_undamped_s, cd->h_bisect_s, cd->rel_err);
    CMT_TRUE(r->dashpots);
    CMT_TRUE(cd->h_pred_s < 0.9 * cd->h_undamped_s);
    CMT_REL(cd->h_bisect_s, cd->h_pred_s, 2e-3);
  }
  cm_verify_result_destroy(&r);
  cm_scene_destroy(&s);
}
