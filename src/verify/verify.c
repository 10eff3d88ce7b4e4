/* verify.c: the verification driver: preload, predict (core analysis and
 * eigenvectors), perturb along the predicted modes, integrate, measure,
 * compare, and bisect the stable step. Not for the physics of the runs
 * (model.c, integrate.c), the estimator (measure.c) or output (output.c). */
#include "verify/verify_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

void cm_verify_options_init(cm_verify_options_t *o) {
  memset(o, 0, sizeof *o);
  o->nmodes = 2;
  o->namplitudes = 4;
  o->amplitudes[0] = 0.01, o->amplitudes[1] = 0.1, o->amplitudes[2] = 0.5;
  o->amplitudes[3] = 1.5;
  o->nsteps = 3;
  o->steps[0] = 0.05, o->steps[1] = 0.2, o->steps[2] = 0.5;
  o->models = CM_VERIFY_LINEAR | CM_VERIFY_UNILATERAL | CM_VERIFY_NONLINEAR;
  o->integrators = CM_VERIFY_CD | CM_VERIFY_RK4;
  o->periods = 40;
  o->tol = 1e-4;
  o->stability = 1;
  o->runs = 1;
  o->bisect_steps = 5000;
  o->bisect_tol = 1e-4;
  o->seed = 20261201;
  cm_options_init(&o->analysis);
}

void cm_verify_result_destroy(cm_verify_result_t **rp) {
  if (!rp || !*rp)
    return;
  free((*rp)->mode_omega), free((*rp)->mode_index), free((*rp)->runs);
  free(*rp);
  *rp = NULL;
}

/* ---- progress on stderr
 * ------------------------------------------------------ */

/* A terminal gets one updating line; a pipe or file gets a line at every
 * tenth of the work (done of total) and at the end. */
static void cm__vprogress(const cm_verify_options_t *o, int done, int total,
                          const char *fmt, ...) {
  if (!o->progress)
    return;
  int tty = isatty(2);
  if (!tty && total > 0 && done != total &&
      (done * 10) / total == ((done - 1) * 10) / total)
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs(tty ? "\rverify: " : "verify: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs(tty && done != total ? "   " : "\n", stderr);
}

/* ---- predictions from the core ----------------------------------------------
 */

static void cm__vpred_free(cm__vpred_t *p) {
  free(p->index), free(p->omega), free(p->zeta), free(p->z);
}

/* Eigenvector of report mode i, from the pipeline's mode shapes (the
 * report's own vectors, cm_analysis_vectors), scattered to the harness' rows
 * (z: nr): scene row r is row row_kind[r] of contact row_contact[r]; both
 * sides use the tangent convention of docs/math.md, so the entries carry
 * over. */
static int cm__vmode_vector(cm_context_t *ctx, const cm__vmodel_t *m,
                            const cm_vectors_t *vec, int i, double *z) {
  if (!vec || !vec->z || i >= vec->nmodes)
    return CM__ERR(ctx, CM_NUMERIC, NULL,
                   "mode %d: the eigen-solver returned no vector", i + 1);
  memset(z, 0, (size_t)m->nr * sizeof *z);
  for (int r = 0; r < vec->nrows; r++) {
    int c = vec->row_contact[r], kind = vec->row_kind[r];
    if (m->crow[c] + kind < m->crow[c + 1])
      z[m->crow[c] + kind] = vec->z[(size_t)vec->nrows * i + r];
  }
  return CM_OK;
}

static int cm__vpredict(cm_context_t *ctx, const cm_scene_t *scene,
                        const cm_verify_options_t *o, const cm__vmodel_t *m,
                        int want_vectors, cm__vpred_t *p) {
  memset(p, 0, sizeof *p);
  cm_options_t aopt = o->analysis;
  int want = o->mode > 0 ? o->mode : o->nmodes;
  if (aopt.modes < want)
    aopt.modes = want;
  /* one analysis: the report and, when asked, its modes' shapes */
  cm_analysis_t *an = NULL;
  int st = cm_analysis_create(ctx, scene, NULL, &aopt, &an);
  if (!st)
    st = cm_analysis_solve(ctx, an, want_vectors ? CM_ANALYSIS_VECTORS : 0);
  if (st < 0) {
    cm_analysis_destroy(&an);
    return st;
  }
  st = CM_OK;
  const cm_report_t *rep = cm_analysis_report(an);
  const cm_vectors_t *vec = cm_analysis_vectors(an);
  p->omega_max = rep->omega_max, p->pc_omega_max = rep->pc_omega_max;
  p->h_cd = rep->central_difference.h_s, p->h_rk4 = rep->rk4.h_s;
  p->h_cd_undamped = rep->cd_undamped.h_s;
  if (!(p->omega_max > 0))
    st = CM__ERR(ctx, CM_INVALID_SCENE, NULL,
                 "the scene has no oscillating contact mode (omega_max = %g): "
                 "nothing to verify",
                 p->omega_max);
  if (!st && o->mode > rep->nmodes)
    st =
        CM__ERR(ctx, CM_USAGE, "--mode",
                "mode %d does not exist: the scene has %d coupled mode%s "
                "(mode 1 is the highest); ask for 1..%d",
                o->mode, rep->nmodes, rep->nmodes == 1 ? "" : "s", rep->nmodes);
  if (!st && want_vectors) {
    int first = o->mode > 0 ? o->mode - 1 : 0;
    int count = o->mode > 0 ? 1 : (want < rep->nmodes ? want : rep->nmodes);
    while (o->mode == 0 && count > 1 && !(rep->modes[count - 1].omega > 0))
      count--; /* top modes: stop at the redundant gaps (omega = 0) */
    p->nmodes = count;
    p->index = malloc((size_t)count * sizeof(int));
    p->omega = malloc((size_t)count * sizeof(double));
    p->zeta = malloc((size_t)count * sizeof(double));
    p->z = malloc((size_t)count * ((size_t)m->nr + 1) * sizeof(double));
    if (!p->index || !p->omega || !p->zeta || !p->z)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (predictions)");
    for (int t = 0; t < count && !st; t++) {
      int i = first + t;
      p->index[t] = i + 1, p->omega[t] = rep->modes[i].omega;
      p->zeta[t] = rep->modes[i].zeta;
      if (!(p->omega[t] > 0))
        st = CM__ERR(ctx, CM_USAGE, "--mode",
                     "mode %d has omega %g: a redundant gap, not an "
                     "oscillation; ask for a mode with omega > 0",
                     i + 1, p->omega[t]);
      else
        st = cm__vmode_vector(ctx, m, vec, i, p->z + (size_t)t * m->nr);
    }
  }
  cm_analysis_destroy(&an);
  if (st < 0)
    cm__vpred_free(p);
  return st < 0 ? st : CM_OK;
}

/* ---- preload
 * ------------------------------------------------------------------ */

static int cm__vpreload(cm_context_t *ctx, const cm_scene_t *scene,
                        const cm_verify_options_t *o, cm__vmodel_t *m,
                        const char **how) {
  if (o->preload) {
    *how = "given";
    return cm__vequil_preload(ctx, m, o->preload, scene);
  }
  if (o->preload_uniform > 0) {
    double *f = malloc(((size_t)m->nc + 1) * sizeof *f);
    if (!f)
      return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (preload)");
    for (int c = 0; c < m->nc; c++)
      f[c] = o->preload_uniform;
    *how = "uniform";
    int st = cm__vequil_preload(ctx, m, f, scene);
    free(f);
    return st;
  }
  if (o->use_gravity) {
    *how = "gravity";
    return cm__vequil_gravity(ctx, m, o->gravity, scene);
  }
  return CM__ERR(ctx, CM_USAGE, "--gravity",
                 "no preload given: use --gravity gx,gy[,gz] (static "
                 "equilibrium under gravity) or --preload F / --preload-file "
                 "FILE (given contact forces)");
}

/* ---- perturbation along a mode ----------------------------------------------
 */

/* q = M^-1 J^T K^1/2 z (z over rows), scaled so the largest normal gap
 * change max_c |(J q)_c| = gap; w = K^1/2 z. */
static int cm__vmode_shape(cm_context_t *ctx, const cm__vmodel_t *m,
                           const double *z, double gap, double *q, double *w) {
  double *y = malloc(((size_t)m->nr + 1) * sizeof *y);
  double *f = malloc(((size_t)m->n + 1) * sizeof *f);
  if (!y || !f) {
    free(y), free(f);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (mode shape)");
  }
  for (int r = 0; r < m->nr; r++)
    y[r] = w[r] = sqrt(m->rk[r]) * z[r];
  cm__vmodel_JT(m, y, f);
  cm__vmodel_minv(m, f, q); /* q = M^-1 J^T K^1/2 z */
  cm__vmodel_J(m, q, y);
  double mx = 0;
  for (int c = 0; c < m->nc; c++)
    mx = fmax(mx, fabs(y[m->crow[c]]));
  if (!(mx > 0)) /* a purely tangential mode: scale its slips instead */
    for (int r = 0; r < m->nr; r++)
      if (m->rk[r] > 0)
        mx = fmax(mx, fabs(y[r]));
  for (int i = 0; i < m->n; i++)
    q[i] = mx > 0 ? q[i] * gap / mx : 0;
  free(y), free(f);
  return mx > 0 ? CM_OK
                : CM__ERR(ctx, CM_NUMERIC, NULL,
                          "the predicted mode moves no contact of the "
                          "simulation model (J M^-1 J^T z = 0)");
}

/* The predicted mode a user direction excites most: largest
 * |z_i . K^1/2 J q| over the modes with vectors. */
static int cm__vbest_mode(const cm__vmodel_t *m, const cm__vpred_t *p,
                          const double *dir) {
  double *xi = malloc(((size_t)m->nr + 1) * sizeof *xi), best = -1;
  int ib = 0;
  if (!xi)
    return 0;
  cm__vmodel_J(m, dir, xi);
  for (int i = 0; i < p->nmodes; i++) {
    double s = 0;
    for (int r = 0; r < m->nr; r++)
      s += p->z[(size_t)i * m->nr + r] * sqrt(m->rk[r]) * xi[r];
    if (fabs(s) > best)
      best = fabs(s), ib = i;
  }
  free(xi);
  return ib;
}

/* ---- one frequency run ----------------------------------------------------
 */

static const int cm__vmodel_flag[4] = {CM_VERIFY_LINEAR, CM_VERIFY_UNILATERAL,
                                       CM_VERIFY_NONLINEAR, CM_VERIFY_FULL};

static int cm__vfreq_run(cm_context_t *ctx, const cm__vmodel_t *m,
                         const cm__vstate_t *base, const double *q0,
                         const double *w, double omega, double zeta, int integ,
                         double h, double periods, int model,
                         cm_verify_run_t *out) {
  double th_pred = cm__vshift(integ, omega, h);
  if (m->dashpots && zeta > 0) /* stop before the amplitude falls 1e6x */
    periods = fmin(periods, fmax(3.0, log(1e6) / (2 * M_PI * zeta)));
  long nsteps = (long)ceil(periods * 2 * M_PI / th_pred) + 2;
  double *sig = malloc(((size_t)nsteps + 1) * sizeof *sig);
  if (!sig)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (signal)");
  cm__vrun_t run = {0};
  run.model = model, run.integ = integ, run.h = h, run.nsteps = nsteps;
  run.q0 = q0, run.w = w, run.signal = sig;
  int st = cm__vintegrate(ctx, m, base, &run);
  if (st) {
    free(sig);
    return st;
  }
  double th = NAN, sg = NAN, per = 0;
  int ok = !run.blowup &&
           cm__vmeasure_decay(sig, run.steps_done + 1, &th, &sg, &per) == CM_OK;
  free(sig);
  out->nsteps = run.steps_done;
  out->omega_pred = omega;
  out->zeta_pred = zeta;
  out->omega_shifted = th_pred / h;
  out->omega_meas = ok ? th / h : NAN;
  out->omega_corr = ok ? cm__vunshift(integ, th, h) : NAN;
  out->zeta_meas = 0;
  if (m->dashpots) { /* invert the damped discrete eigenvalue */
    double w_c = NAN, z_c = NAN;
    if (ok)
      cm__vunshift_damped(integ, th, sg, h, &w_c, &z_c);
    out->omega_corr = w_c, out->zeta_meas = z_c;
  }
  out->err_raw = (out->omega_meas - omega) / omega;
  out->err = (out->omega_corr - omega) / omega;
  out->meas_err = cm__vmeasure_self_error(th_pred, run.steps_done + 1);
  out->periods = per;
  out->opened = run.opened, out->openings = run.openings;
  out->max_open = run.max_open;
  out->model = cm__vmodel_flag[model];
  out->integrator = integ == CM__VCD ? CM_VERIFY_CD : CM_VERIFY_RK4;
  out->h_s = h;
  return CM_OK;
}

static const char *cm__vverdict(const cm_verify_run_t *r, double tol,
                                int dashpots) {
  if (!isfinite(r->omega_corr))
    return r->opened ? "contact opening" : "unmeasured";
  if (fabs(r->err) <= tol)
    return "agrees";
  if ((r->model & (CM_VERIFY_UNILATERAL | CM_VERIFY_FULL)) && r->opened)
    return "contact opening";
  if (r->model & (CM_VERIFY_NONLINEAR | CM_VERIFY_FULL))
    return "linearization";
  return dashpots ? "damping" : "numerical";
}

/* ---- stability trials -------------------------------------------------------
 */

/* Seeded random start over the dofs. */
static int cm__vrandom_q(cm_context_t *ctx, const cm__vmodel_t *m,
                         uint64_t seed, double **q) {
  *q = malloc(((size_t)m->n + 1) * sizeof **q);
  if (!*q)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  for (int i = 0; i < m->n; i++)
    (*q)[i] = cm__hash_uniform(seed, (uint64_t)i);
  return CM_OK;
}

/* 1 if the linear model's energy grows past 1e6 E0 within nsteps. */
static int cm__vtrial(cm_context_t *ctx, const cm__vmodel_t *m,
                      const double *q0, int integ, double h, long nsteps,
                      cm__vrun_t *run, int *st) {
  memset(run, 0, sizeof *run);
  run->model = CM__VLIN, run->integ = integ, run->h = h;
  run->nsteps = nsteps, run->q0 = q0, run->stop_growth = 1e6;
  *st = cm__vintegrate(ctx, m, NULL, run);
  return run->blowup;
}

int cm__vstability(cm_context_t *ctx, const cm__vmodel_t *m,
                   const cm_verify_options_t *o, const cm__vpred_t *p,
                   int integ, cm_verify_stability_t *s) {
  double *q0 = NULL;
  int st = cm__vrandom_q(ctx, m, o->seed, &q0);
  if (st)
    return st;
  cm__vrun_t run;
  long N = o->bisect_steps;
  memset(s, 0, sizeof *s);
  s->integrator = integ == CM__VCD ? CM_VERIFY_CD : CM_VERIFY_RK4;
  s->h_pred_s = integ == CM__VCD ? p->h_cd : p->h_rk4;
  s->h_undamped_s = integ == CM__VCD ? p->h_cd_undamped : p->h_rk4;
  s->trial_steps = N;
  /* asymmetric bracket near the prediction (no trial lands on it); it is
   * checked and widened below, so a wrong prediction is still found */
  double lo = 0.95 * s->h_pred_s, hi = 1.07 * s->h_pred_s;
  /* ---- bracket ---- */
  for (int i = 0;
       i < 20 && !st && cm__vtrial(ctx, m, q0, integ, lo, N, &run, &st); i++)
    hi = lo, lo *= 0.5, s->trials++;
  s->trials++;
  for (int i = 0;
       i < 20 && !st && !cm__vtrial(ctx, m, q0, integ, hi, N, &run, &st); i++)
    lo = hi, hi *= 2, s->trials++;
  s->trials++;
  /* ---- bisect ---- */
  while (!st && hi / lo - 1 > o->bisect_tol) {
    double mid = sqrt(lo * hi);
    if (cm__vtrial(ctx, m, q0, integ, mid, N, &run, &st))
      hi = mid;
    else
      lo = mid;
    s->trials++;
    int todo = (int)ceil(
        log(hi / lo - 1 > 0 ? (hi / lo - 1) / o->bisect_tol : 1) / log(2.0));
    cm__vprogress(o, s->trials, s->trials + (todo > 0 ? todo : 0),
                  "bisecting the %s step: [%.6e, %.6e] s",
                  integ == CM__VCD ? "cd" : "rk4", lo, hi);
  }
  s->h_stable_s = lo, s->h_unstable_s = hi, s->h_bisect_s = 0.5 * (lo + hi);
  s->rel_err = (s->h_bisect_s - s->h_pred_s) / s->h_pred_s;
  /* ---- the per-contact step ---- */
  s->h_pc_s = integ == CM__VCD ? cm_step_central_difference(p->pc_omega_max, 0)
                               : cm_step_rk4(p->pc_omega_max);
  if (!st) {
    s->pc_unstable = cm__vtrial(ctx, m, q0, integ, s->h_pc_s, N, &run, &st);
    s->pc_steps = run.steps_done, s->pc_growth = run.growth;
  }
  free(q0);
  return st;
}

/* ---- checks
 * ------------------------------------------------------------------ */

static int cm__vcheck_opts(cm_context_t *ctx, const cm_verify_options_t *o) {
  if (o->namplitudes < 1 || o->namplitudes > CM_VERIFY_MAX_LIST ||
      o->nsteps < 1 || o->nsteps > CM_VERIFY_MAX_LIST)
    return CM__ERR(ctx, CM_USAGE, "--amplitudes",
                   "give 1 to %d amplitudes and steps", CM_VERIFY_MAX_LIST);
  for (int i = 0; i < o->namplitudes; i++)
    if (!(o->amplitudes[i] > 0) || !isfinite(o->amplitudes[i]))
      return CM__ERR(ctx, CM_USAGE, "--amplitudes",
                     "amplitude %g: give fractions > 0 of the smallest "
                     "overlap",
                     o->amplitudes[i]);
  for (int i = 0; i < o->nsteps; i++)
    if (!(o->steps[i] > 0) || !(o->steps[i] < 1))
      return CM__ERR(ctx, CM_USAGE, "--steps",
                     "step fraction %g: give fractions in (0, 1) of the "
                     "critical step (the stability bisection covers >= 1)",
                     o->steps[i]);
  if (!(o->periods >= 3) || o->nmodes < 1 || o->mode < 0 ||
      o->bisect_steps < 10 || !(o->bisect_tol > 0) || !(o->tol > 0))
    return CM__ERR(ctx, CM_USAGE, NULL,
                   "bad option: need periods >= 3, modes >= 1, mode >= 0, "
                   "bisect steps >= 10, tolerances > 0");
  if (!(o->models & 15) || !(o->integrators & 3))
    return CM__ERR(ctx, CM_USAGE, "--models",
                   "choose at least one model and one integrator");
  return CM_OK;
}

/* ---- driver ----------------------------------------------------------------
 */

static int cm__vruns(cm_context_t *ctx, const cm__vmodel_t *m,
                     const cm__vstate_t *base, const cm_verify_options_t *o,
                     const cm__vpred_t *p, cm_verify_result_t *r) {
  int nmod = 0, ninteg = 0, models[4], integs[2];
  for (int t = 0; t < 4; t++)
    if (o->models & cm__vmodel_flag[t])
      models[nmod++] = t;
  if (o->integrators & CM_VERIFY_CD)
    integs[ninteg++] = CM__VCD;
  if (o->integrators & CM_VERIFY_RK4)
    integs[ninteg++] = CM__VRK4;
  int total = (o->direction ? 1 : p->nmodes) * o->namplitudes * o->nsteps *
              nmod * ninteg;
  r->runs = calloc((size_t)total + 1, sizeof *r->runs);
  double *q = malloc(((size_t)m->n + 1) * sizeof *q);
  double *w = malloc(((size_t)m->nr + 1) * sizeof *w);
  int st = (!r->runs || !q || !w)
               ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (runs)")
               : CM_OK;
  int only = o->direction ? cm__vbest_mode(m, p, o->direction) : -1;
  for (int i = 0; i < p->nmodes && !st; i++)
    for (int a = 0; a < o->namplitudes && !st && (only < 0 || i == only); a++) {
      double gap = o->amplitudes[a] * r->min_overlap;
      st = cm__vmode_shape(ctx, m, p->z + (size_t)i * m->nr, gap, q, w);
      if (!st && o->direction) {
        double *y = malloc(((size_t)m->nr + 1) * sizeof *y), mx = 0;
        if (!y) {
          st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
          break;
        }
        cm__vmodel_J(m, o->direction, y);
        for (int c = 0; c < m->nc; c++)
          mx = fmax(mx, fabs(y[m->crow[c]]));
        for (int r = 0; r < m->nr && !(mx > 0); r++) /* sprung slips */
          if (m->rk[r] > 0)
            mx = fmax(mx, fabs(y[r]));
        for (int t = 0; t < m->n; t++)
          q[t] = mx > 0 ? o->direction[t] * gap / mx : 0;
        free(y);
        if (!(mx > 0))
          st = CM__ERR(ctx, CM_USAGE, "--direction",
                       "the direction moves no contact (J q = 0): it is a "
                       "free motion, not an oscillation");
      }
      for (int s = 0; s < o->nsteps && !st; s++)
        for (int g = 0; g < ninteg && !st; g++) {
          double hc = integs[g] == CM__VCD ? p->h_cd : p->h_rk4;
          double h = o->steps[s] * hc, lin_meas = NAN;
          for (int t = 0; t < nmod && !st; t++) {
            cm_verify_run_t *ru = &r->runs[r->nruns];
            st = cm__vfreq_run(ctx, m, base, q, w, p->omega[i], p->zeta[i],
                               integs[g], h, o->periods, models[t], ru);
            if (st)
              break;
            ru->mode = o->direction ? 0 : p->index[i];
            ru->amplitude = o->amplitudes[a], ru->step_fraction = o->steps[s];
            if (models[t] == CM__VLIN)
              lin_meas = ru->omega_meas;
            ru->err_vs_linear = (ru->omega_meas - lin_meas) / p->omega[i];
            ru->verdict = cm__vverdict(ru, o->tol, m->dashpots);
            r->nruns++;
            cm__vprogress(o, r->nruns, total, "run %d/%d", r->nruns, total);
          }
        }
    }
  free(q), free(w);
  return st;
}

int cm_verify(cm_context_t *ctx, const cm_scene_t *scene,
              const cm_verify_options_t *opts, cm_verify_result_t **out) {
  /* ---- check inputs ---- */
  double t0 = cm__now();
  *out = NULL;
  cm_verify_options_t o;
  if (opts)
    o = *opts;
  else
    cm_verify_options_init(&o);
  int st = cm__vcheck_opts(ctx, &o);
  if (st)
    return st;
  /* ---- allocate: model, preload, predictions ---- */
  cm__vmodel_t *m = NULL;
  cm__vpred_t p = {0};
  cm__vstate_t base = {0};
  cm_verify_result_t *r = calloc(1, sizeof *r);
  if (!r)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  const char *how = "";
  st = cm__vmodel_build(ctx, scene, &m);
  if (!st)
    m->bilateral_unloaded = o.bilateral_unloaded;
  /* the stability trials use the linear model, which needs no preload */
  if (!st && (o.runs || o.preload || o.preload_uniform > 0 || o.use_gravity))
    st = cm__vpreload(ctx, scene, &o, m, &how);
  else if (!st)
    how = "none";
  if (!st)
    st = cm__vpredict(ctx, scene, &o, m, o.runs, &p);
  /* ---- summary ---- */
  if (!st) {
    r->dim = scene->dim, r->nbodies = scene->nbodies;
    r->ncontacts = scene->ncontacts, r->moving_bodies = m->nmov;
    r->nrows = m->nr, r->tangential = m->tangential;
    r->dashpots = m->dashpots;
    r->preload = how;
    memcpy(r->gravity, m->g, sizeof r->gravity);
    r->min_overlap = INFINITY, r->max_overlap = 0;
    for (int c = 0; c < m->nc; c++) {
      r->bilateral_contacts += m->bil[c];
      if (m->bil[c])
        continue;
      if (m->delta[c] < r->min_overlap)
        r->min_overlap = m->delta[c], r->min_overlap_contact = c;
      r->max_overlap = fmax(r->max_overlap, m->delta[c]);
    }
    if (!isfinite(r->min_overlap))
      r->min_overlap = 0, r->min_overlap_contact = -1;
    if (o.runs && !(r->min_overlap > 0))
      st = CM__ERR(ctx, CM_INVALID_SCENE, "contacts",
                   "no contact carries a load: the amplitudes (fractions of "
                   "the smallest overlap) are undefined; give a preload");
    r->omega_max = p.omega_max, r->pc_omega_max = p.pc_omega_max;
    r->nmodes = p.nmodes;
    r->mode_omega = malloc(((size_t)p.nmodes + 1) * sizeof(double));
    r->mode_index = malloc(((size_t)p.nmodes + 1) * sizeof(int));
    if (!r->mode_omega || !r->mode_index)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
    for (int i = 0; i < p.nmodes && !st; i++)
      r->mode_omega[i] = p.omega[i], r->mode_index[i] = p.index[i];
  }
  /* ---- compute: frequency runs, then stability ---- */
  if (!st && o.runs && (o.models & (CM_VERIFY_NONLINEAR | CM_VERIFY_FULL))) {
    st = cm__vstate_alloc(ctx, m, &base);
    if (!st)
      st = cm__vequil_nonlinear(ctx, m, &base);
  }
  if (!st && o.runs)
    st = cm__vruns(ctx, m, base.X ? &base : NULL, &o, &p, r);
  if (!st && o.stability && (o.integrators & CM_VERIFY_CD))
    st = cm__vstability(ctx, m, &o, &p, CM__VCD, &r->stab[r->nstab++]);
  if (!st && o.stability && (o.integrators & CM_VERIFY_RK4))
    st = cm__vstability(ctx, m, &o, &p, CM__VRK4, &r->stab[r->nstab++]);
  /* ---- return ---- */
  cm__vstate_free(&base);
  cm__vpred_free(&p);
  cm__vmodel_destroy(&m);
  r->seconds = cm__now() - t0;
  if (st)
    cm_verify_result_destroy(&r);
  *out = r;
  return st;
}

/* ---- energy trace -----------------------------------------------------------
 */

int cm_verify_energy_trace(cm_context_t *ctx, const cm_scene_t *scene,
                           const cm_verify_options_t *opts, int integrator,
                           double h_s, long nsteps, double *energy) {
  cm_verify_options_t o;
  if (opts)
    o = *opts;
  else
    cm_verify_options_init(&o);
  if (!(h_s > 0) || nsteps < 1 || !energy)
    return CM__ERR(ctx, CM_USAGE, NULL,
                   "energy trace: need a step > 0 and at least one step");
  cm__vmodel_t *m = NULL;
  double *q0 = NULL;
  int st = cm__vmodel_build(ctx, scene, &m);
  if (!st)
    st = cm__vrandom_q(ctx, m, o.seed, &q0);
  if (!st) {
    cm__vrun_t run = {0};
    run.model = CM__VLIN;
    run.integ = integrator == CM_VERIFY_RK4 ? CM__VRK4 : CM__VCD;
    run.h = h_s, run.nsteps = nsteps, run.q0 = q0, run.energy = energy;
    for (long i = 0; i <= nsteps; i++)
      energy[i] = NAN;
    st = cm__vintegrate(ctx, m, NULL, &run);
    double e0 = energy[0];
    for (long i = 0; i <= nsteps && e0 > 0; i++)
      energy[i] /= e0;
  }
  free(q0);
  cm__vmodel_destroy(&m);
  return st;
}
