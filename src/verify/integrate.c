/* integrate.c: time stepping of the verification runs. Central difference
 * (velocity Verlet form: kick, drift, kick; the dashpots see the half-step
 * velocity, as in LAMMPS) and classical RK4 (dashpots on each stage's
 * velocity), for the
 * frozen-J models (linear: bilateral springs; unilateral: no tension) in the
 * generalized coordinates, and for the nonlinear rigid-body model (finite
 * rotations, angular momentum in the world frame; central difference as the
 * kick-drift-kick splitting with Q <- exp(h omega) Q). Records the modal
 * signal w . xi, the energy and the contact openings. Not for measuring
 * (measure.c) or deciding anything (verify.c). */
#include "verify/verify_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- frozen-J models ------------------------------------------------------
 */

typedef struct {
  const cm__vmodel_t *m;
  int unilateral; /* 1: contacts carry no tension */
  double *xi;     /* row coordinates (gaps, slips), nr */
  double *xd;     /* their rates J v, nr (dashpots only) */
  double *y;      /* row force changes, nr */
  double *f;      /* generalized force, n */
  char *open;     /* contact open now, nc */
} cm__vlin_t;

/* a = M^-1 J^T y, the row force changes from the equilibrium: normal rows
 * y = f_c - k delta with f_c = k (delta - xi) (or k max(0, ...)), tangent
 * rows y = -k_t xi; every row adds its dashpot -c (J v)_r. An open contact
 * carries nothing: its rows give back their equilibrium forces. v is the
 * velocity the dashpots see (central difference: the half-step one). */
static void cm__vlin_acc(cm__vlin_t *w, const double *q, const double *v,
                         double *a) {
  const cm__vmodel_t *m = w->m;
  cm__vmodel_J(m, q, w->xi);
  if (m->dashpots)
    cm__vmodel_J(m, v, w->xd); /* row rates J v */
  for (int c = 0; c < m->nc; c++) {
    int r0 = m->crow[c], r1 = m->crow[c + 1];
    double ov = m->delta[c] - w->xi[r0];
    if (w->unilateral && ov < 0 && !m->bil[c]) {
      w->y[r0] = -m->k[c] * m->delta[c];
      for (int r = r0 + 1; r < r1; r++)
        w->y[r] = -m->f0[r];
      continue;
    }
    w->y[r0] = m->k[c] * (ov - m->delta[c]); /* = -k xi */
    for (int r = r0 + 1; r < r1; r++)
      w->y[r] = -m->rk[r] * w->xi[r];
    if (m->dashpots)
      for (int r = r0; r < r1; r++)
        w->y[r] -= m->rg[r] * w->xd[r]; /* dashpot: -c (J v)_r */
  }
  cm__vmodel_JT(m, w->y, w->f);
  cm__vmodel_minv(m, w->f, a);
}

/* Energy about the equilibrium: kinetic + sum of contact potentials minus the
 * work of the balancing loads; 1/2 k xi^2 per row when bilateral (tangent
 * rows always: this is only an energy for the linear model, which is all
 * that uses it). Dashpots dissipate it. Uses the row coordinates w->xi of
 * the last cm__vlin_acc (same q) and overwrites w->f. */
static double cm__vlin_energy(cm__vlin_t *w, const double *v) {
  const cm__vmodel_t *m = w->m;
  cm__vmodel_mul_M(m, v, w->f);
  double e = 0;
  for (int i = 0; i < m->n; i++)
    e += 0.5 * v[i] * w->f[i];
  for (int c = 0; c < m->nc; c++) {
    double x = w->xi[m->crow[c]], d = m->delta[c], ov = d - x;
    if (!w->unilateral || m->bil[c])
      e += 0.5 * m->k[c] * x * x;
    else
      e += 0.5 * m->k[c] * ((ov > 0 ? ov * ov : 0) - d * d) + m->k[c] * d * x;
    for (int r = m->crow[c] + 1; r < m->crow[c + 1]; r++)
      e += 0.5 * m->rk[r] * w->xi[r] * w->xi[r];
  }
  return e;
}

/* Records step n: signal, energy, openings; returns 1 to stop. */
static int cm__vrecord(cm__vrun_t *run, const cm__vmodel_t *m, long n,
                       const double *xi, double e, double e0, char *was,
                       const char *open_now, char *ever) {
  if (run->w && run->signal) {
    double s = 0;
    for (int r = 0; r < m->nr; r++)
      s += run->w[r] * xi[r];
    run->signal[n] = s;
  }
  if (run->energy)
    run->energy[n] = e;
  int now = 0;
  for (int c = 0; open_now && c < m->nc; c++) {
    now += open_now[c] != 0;
    if (open_now[c] && !was[c])
      run->openings++;
    if (open_now[c] && !ever[c])
      ever[c] = 1, run->opened++;
    was[c] = open_now[c];
  }
  if (now > run->max_open)
    run->max_open = now;
  run->steps_done = n;
  if (!isfinite(e) || !isfinite(xi[0])) {
    run->blowup = 1;
    return 1;
  }
  if (e0 > 0 && e / e0 > run->growth)
    run->growth = e / e0;
  /* With dashpots a stable run decays, so growth counts from the lowest
   * energy so far: the decayed modes no longer hide a slowly growing one.
   * Once E < 1e-150 E0 nothing that could grow is left (a growing mode
   * never falls below its start): stable, and it stops. */
  double ref = e0;
  if (m->dashpots && run->stop_growth > 0) {
    if (n == 0 || e < run->emin)
      run->emin = e;
    ref = run->emin;
    if (e0 > 0 && e < 1e-150 * e0) {
      run->decayed = 1;
      return 1;
    }
  }
  if (run->stop_growth > 0 && ref > 0 && e > run->stop_growth * ref) {
    run->blowup = 1;
    return 1;
  }
  return 0;
}

static void cm__vopen_flags(const cm__vmodel_t *m, const double *xi,
                            char *open) {
  for (int c = 0; c < m->nc; c++)
    open[c] = (char)(m->delta[c] - xi[m->crow[c]] < 0 && !m->bil[c]);
}

static int cm__vint_frozen(cm_context_t *ctx, const cm__vmodel_t *m,
                           cm__vrun_t *run) {
  /* ---- allocate ---- */
  size_t n = (size_t)m->n + 1, nc = (size_t)m->nc + 1, nr = (size_t)m->nr + 1;
  cm__vlin_t w = {m, run->model == CM__VUNI, NULL, NULL, NULL, NULL, NULL};
  double *buf = calloc(13 * n + 3 * nr, sizeof(double));
  char *flags = calloc(3 * nc, 1);
  if (!buf || !flags) {
    free(buf), free(flags);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (integration)");
  }
  double *q = buf, *v = q + n, *a = v + n, *qt = a + n, *k[9];
  for (int i = 0; i < 9; i++)
    k[i] = qt + (size_t)(i + 1) * n;
  w.xi = buf + 13 * n, w.xd = w.xi + nr, w.y = w.xd + nr, w.f = k[8];
  char *was = flags, *ever = flags + nc, *open = flags + 2 * nc;
  int uni = w.unilateral;
  double h = run->h;
  /* ---- initial state ---- */
  memcpy(q, run->q0, (size_t)m->n * sizeof *q);
  int need_e = run->energy || run->stop_growth > 0;
  cm__vlin_acc(&w, q, v, a);
  double e0 = need_e ? cm__vlin_energy(&w, v) : 0;
  if (uni)
    cm__vopen_flags(m, w.xi, open);
  run->growth = 1;
  int stop = cm__vrecord(run, m, 0, w.xi, e0, e0, was, uni ? open : NULL, ever);
  /* ---- steps ---- */
  for (long s = 1; s <= run->nsteps && !stop; s++) {
    if (run->integ == CM__VCD) {
      /* velocity Verlet as LAMMPS runs it: the force at x_{n+1} takes the
       * dashpots from v_{n+1/2}, so v_{n+3/2} = v_{n+1/2} + h M^-1 (-K
       * x_{n+1} - C v_{n+1/2}) */
      for (int i = 0; i < m->n; i++) {
        v[i] += 0.5 * h * a[i]; /* kick: v_{n+1/2} */
        q[i] += h * v[i];       /* drift */
      }
      cm__vlin_acc(&w, q, v, a);
      for (int i = 0; i < m->n; i++)
        v[i] += 0.5 * h * a[i]; /* kick */
    } else {
      double *k1q = k[0], *k1v = k[1], *k2q = k[2], *k2v = k[3], *k3q = k[4],
             *k3v = k[5], *k4v = k[6];
      memcpy(k1q, v, (size_t)m->n * sizeof *v);
      memcpy(k1v, a, (size_t)m->n * sizeof *a);
      for (int i = 0; i < m->n; i++)
        qt[i] = q[i] + 0.5 * h * k1q[i], k2q[i] = v[i] + 0.5 * h * k1v[i];
      cm__vlin_acc(&w, qt, k2q, k2v);
      for (int i = 0; i < m->n; i++)
        qt[i] = q[i] + 0.5 * h * k2q[i], k3q[i] = v[i] + 0.5 * h * k2v[i];
      cm__vlin_acc(&w, qt, k3q, k3v);
      double *k4q = k[7];
      for (int i = 0; i < m->n; i++)
        qt[i] = q[i] + h * k3q[i], k4q[i] = v[i] + h * k3v[i];
      cm__vlin_acc(&w, qt, k4q, k4v);
      for (int i = 0; i < m->n; i++) {
        q[i] += h / 6 * (k1q[i] + 2 * k2q[i] + 2 * k3q[i] + k4q[i]);
        v[i] += h / 6 * (k1v[i] + 2 * k2v[i] + 2 * k3v[i] + k4v[i]);
      }
      cm__vlin_acc(&w, q, v, a);
    }
    double e = need_e ? cm__vlin_energy(&w, v) : 0; /* gaps of acc(q) */
    if (uni)
      cm__vopen_flags(m, w.xi, open);
    stop = cm__vrecord(run, m, s, w.xi, e, e0, was, uni ? open : NULL, ever);
  }
  /* ---- return ---- */
  free(buf), free(flags);
  return CM_OK;
}

/* ---- nonlinear rigid-body model -------------------------------------------
 */

typedef struct {
  const cm__vmodel_t *m;
  int unilateral; /* full model: nonlinear and unilateral */
  double *F;      /* generalized force, n */
  double *gap;    /* gaps, nc */
  char *open;     /* open flags, nc */
} cm__vnl_t;

/* Force and torque of body j out of the generalized layout. */
static void cm__vnl_ft(const cm__vmodel_t *m, const double *F, int j, double *f,
                       double *tq) {
  const double *Fj = F + (size_t)m->d * j;
  if (m->dim == 2) {
    f[0] = Fj[0], f[1] = Fj[1], f[2] = 0;
    tq[0] = tq[1] = 0, tq[2] = Fj[2];
  } else {
    for (int t = 0; t < 3; t++)
      f[t] = Fj[t], tq[t] = Fj[3 + t];
  }
}

/* dy = f(y): dX = V, dV = F/m, dQ = 1/2 (0, omega) Q, dL = torque. */
static void cm__vnl_deriv(cm__vnl_t *w, const cm__vstate_t *y,
                          cm__vstate_t *dy) {
  const cm__vmodel_t *m = w->m;
  cm__vstate_force(m, y, w->unilateral, w->F, NULL, NULL);
  for (int j = 0; j < m->nmov; j++) {
    double f[3], tq[3], om[3];
    cm__vnl_ft(m, w->F, j, f, tq);
    cm__vstate_omega(m, y->Q + 4 * j, j, y->L + 3 * j, om);
    const double *q = y->Q + 4 * j;
    double *dq = dy->Q + 4 * j;
    dq[0] = 0.5 * (-om[0] * q[1] - om[1] * q[2] - om[2] * q[3]);
    dq[1] = 0.5 * (om[0] * q[0] + om[1] * q[3] - om[2] * q[2]);
    dq[2] = 0.5 * (-om[0] * q[3] + om[1] * q[0] + om[2] * q[1]);
    dq[3] = 0.5 * (om[0] * q[2] - om[1] * q[1] + om[2] * q[0]);
    for (int t = 0; t < 3; t++) {
      dy->X[3 * j + t] = y->V[3 * j + t];
      dy->V[3 * j + t] = f[t] / m->mass[j];
      dy->L[3 * j + t] = tq[t];
    }
  }
}

/* out = y + a dy over all state arrays. */
static void cm__vnl_axpy(int nmov, const cm__vstate_t *y, double a,
                         const cm__vstate_t *dy, cm__vstate_t *out) {
  for (int i = 0; i < 3 * nmov; i++) {
    out->X[i] = y->X[i] + a * dy->X[i];
    out->V[i] = y->V[i] + a * dy->V[i];
    out->L[i] = y->L[i] + a * dy->L[i];
  }
  for (int i = 0; i < 4 * nmov; i++)
    out->Q[i] = y->Q[i] + a * dy->Q[i];
}

static void cm__vnl_rk4(cm__vnl_t *w, cm__vstate_t *y, cm__vstate_t *t,
                        cm__vstate_t *k, double h) {
  int nm = w->m->nmov;
  cm__vnl_deriv(w, y, &k[0]);
  cm__vnl_axpy(nm, y, 0.5 * h, &k[0], t);
  cm__vnl_deriv(w, t, &k[1]);
  cm__vnl_axpy(nm, y, 0.5 * h, &k[1], t);
  cm__vnl_deriv(w, t, &k[2]);
  cm__vnl_axpy(nm, y, h, &k[2], t);
  cm__vnl_deriv(w, t, &k[3]);
  for (int i = 0; i < 3 * nm; i++) {
    y->X[i] += h / 6 * (k[0].X[i] + 2 * k[1].X[i] + 2 * k[2].X[i] + k[3].X[i]);
    y->V[i] += h / 6 * (k[0].V[i] + 2 * k[1].V[i] + 2 * k[2].V[i] + k[3].V[i]);
    y->L[i] += h / 6 * (k[0].L[i] + 2 * k[1].L[i] + 2 * k[2].L[i] + k[3].L[i]);
  }
  for (int j = 0; j < nm; j++) {
    double *q = y->Q + 4 * j, s = 0;
    for (int i = 0; i < 4; i++)
      q[i] += h / 6 *
              (k[0].Q[4 * j + i] + 2 * k[1].Q[4 * j + i] +
               2 * k[2].Q[4 * j + i] + k[3].Q[4 * j + i]);
    for (int i = 0; i < 4; i++)
      s += q[i] * q[i];
    for (int i = 0; i < 4; i++)
      q[i] /= sqrt(s);
  }
}

/* Kick (half step) of velocities and angular momenta with force F. */
static void cm__vnl_kick(const cm__vmodel_t *m, cm__vstate_t *y,
                         const double *F, double hh) {
  for (int j = 0; j < m->nmov; j++) {
    double f[3], tq[3];
    cm__vnl_ft(m, F, j, f, tq);
    for (int t = 0; t < 3; t++) {
      y->V[3 * j + t] += hh * f[t] / m->mass[j];
      y->L[3 * j + t] += hh * tq[t];
    }
  }
}

static int cm__vint_nonlinear(cm_context_t *ctx, const cm__vmodel_t *m,
                              const cm__vstate_t *base, cm__vrun_t *run) {
  /* ---- allocate ---- */
  size_t nc = (size_t)m->nc + 1, nr = (size_t)m->nr + 1;
  cm__vstate_t y = {0}, t = {0}, k[4] = {{0}};
  int st = cm__vstate_alloc(ctx, m, &y);
  if (!st)
    st = cm__vstate_alloc(ctx, m, &t);
  for (int i = 0; i < 4 && !st; i++)
    st = cm__vstate_alloc(ctx, m, &k[i]);
  cm__vnl_t w = {m, run->model == CM__VFULL, NULL, NULL, NULL};
  w.F = calloc((size_t)m->n + 1, sizeof(double));
  double *g0 = calloc(3 * nr, sizeof(double));
  char *flags = calloc(3 * nc, 1);
  if (!st && (!w.F || !g0 || !flags))
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (integration)");
  if (!st) {
    double *xi = g0 + nr;
    w.gap = g0 + 2 * nr;
    char *was = flags, *ever = flags + nc, *open = flags + 2 * nc;
    double h = run->h;
    /* ---- initial state: base displaced by q0 ---- */
    cm__vstate_gaps(m, base, g0);
    cm__vstate_set(m, &y, base, run->q0, NULL);
    cm__vstate_force(m, &y, w.unilateral, w.F, w.gap, open);
    for (int r = 0; r < m->nr; r++)
      xi[r] = w.gap[r] - g0[r];
    run->growth = 1;
    int stop =
        cm__vrecord(run, m, 0, xi, 0, 0, was, w.unilateral ? open : NULL, ever);
    /* ---- steps ---- */
    for (long s = 1; s <= run->nsteps && !stop; s++) {
      if (run->integ == CM__VCD) {
        cm__vnl_kick(m, &y, w.F, 0.5 * h);
        for (int j = 0; j < m->nmov; j++) {
          double om[3];
          for (int i = 0; i < 3; i++)
            y.X[3 * j + i] += h * y.V[3 * j + i];
          cm__vstate_omega(m, y.Q + 4 * j, j, y.L + 3 * j, om);
          cm__vstate_rotate(y.Q + 4 * j, om, h);
        }
        cm__vstate_force(m, &y, w.unilateral, w.F, w.gap, open);
        cm__vnl_kick(m, &y, w.F, 0.5 * h);
      } else {
        cm__vnl_rk4(&w, &y, &t, k, h);
        cm__vstate_force(m, &y, w.unilateral, w.F, w.gap, open);
      }
      for (int r = 0; r < m->nr; r++)
        xi[r] = w.gap[r] - g0[r];
      stop = cm__vrecord(run, m, s, xi, 0, 0, was, w.unilateral ? open : NULL,
                         ever);
    }
  }
  /* ---- return ---- */
  cm__vstate_free(&y), cm__vstate_free(&t);
  for (int i = 0; i < 4; i++)
    cm__vstate_free(&k[i]);
  free(w.F), free(g0), free(flags);
  return st;
}

int cm__vintegrate(cm_context_t *ctx, const cm__vmodel_t *m,
                   const cm__vstate_t *base, cm__vrun_t *run) {
  run->steps_done = 0, run->opened = 0, run->openings = 0;
  run->growth = 1, run->blowup = 0, run->max_open = 0;
  run->decayed = 0, run->emin = 0;
  if (run->model == CM__VLIN || run->model == CM__VUNI)
    return cm__vint_frozen(ctx, m, run);
  if (!base)
    return CM__ERR(ctx, CM_INTERNAL, NULL, "nonlinear run without a base");
  return cm__vint_nonlinear(ctx, m, base, run);
}
