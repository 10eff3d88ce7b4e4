/* bound.c: a probabilistic upper bound on lambda_max of a component from a
 * plain Lanczos run from a random start (Kuczynski and Wozniakowski, SIAM
 * J. Matrix Anal. Appl. 13(4), 1992, Theorem 4.2): for a symmetric positive
 * semidefinite Op of size n and a start b uniform on the unit sphere, the
 * largest Ritz value theta_k of the k-dimensional Krylov space satisfies
 *
 *     P(theta_k < (1 - eps) lambda_max) <= 1.648 sqrt(n) exp(-sqrt(eps) (2k -
 * 1))
 *
 * so lambda_max <= theta_k / (1 - eps) except with probability delta / 2
 * when sqrt(eps) = ln(1.648 sqrt(n) / (delta / 2)) / (2k - 1); after a
 * breakdown (an invariant Krylov space) also lambda_max <= theta_k +
 * beta_k sqrt(2 n / pi) / (delta / 2) except with probability delta / 2. Its
 * hypotheses are met here by a run of its own: unrestarted, from a Gaussian
 * vector (whose direction is uniform on the sphere) keyed by a seed of its own,
 * three vectors and the tridiagonal T_k, stopped when this bound or the a
 * posteriori one below (from the run's own polynomials, on the same event
 * as the breakdown bound) is within PB_TARGET of theta_k; the lower of the
 * two is the bound. This run serves only when the solve's own first cycle
 * cannot (a warm start, ARPACK, a basis too large for memory): the solve
 * (lanczos.c) starts from a Gaussian vector of its own, runs its first
 * cycle unrestarted for at most cm__kw_steps steps, and takes the same
 * bounds from its T_k (and re-orthogonalisation coefficients). */
#include "spectrum_internal.h"

#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PB_TARGET CM__PB_TARGET /* bound <= (1 + 4%) theta: omega 2% */

/* Largest eigenvalue of the k x k tridiagonal (a, b) by bisection (dstebz),
 * and ||T||_1 into *tn; iw: 2k ints (cmodes-mpi's distributed bound too). */
double cm__tridiag_top(int k, const double *a, const double *b, double *tn,
                       lapack_int *iw) {
  double w[1] = {0}, t = 0;
  lapack_int found = 0, nsplit = 0;
  for (int i = 0; i < k; i++) {
    double r = fabs(a[i]) + (i > 0 ? fabs(b[i - 1]) : 0) +
               (i + 1 < k ? fabs(b[i]) : 0);
    t = r > t ? r : t;
  }
  *tn = t;
  if (LAPACKE_dstebz('I', 'E', k, 0, 0, k, k, 0.0, a, b, &found, &nsplit, w, iw,
                     iw + k) != 0 ||
      found < 1)
    return NAN;
  return w[0];
}

double cm__kw_top(int k, const double *a, const double *b, double *tn) {
  lapack_int *iw = malloc(sizeof(lapack_int) * 2 * ((size_t)k + 1));
  double t = iw ? cm__tridiag_top(k, a, b, tn, iw) : NAN;
  free(iw);
  return t;
}

/* L = ln(1.648 sqrt(N) / (delta / 2)): half of delta to the theorem, half
 * to the breakdown bound */
static double pb_log(double N, double delta) {
  return log(1.648 * sqrt(N) / (0.5 * delta));
}

/* the theorem's eps after k steps */
static double pb_eps(double L, int k) {
  double r = L / (2.0 * k - 1.0);
  return r * r;
}

int cm__kw_steps(double N, double delta) {
  double L = pb_log(N, delta);
  int k = 1;
  for (; k < CM__PB_MAX_STEPS; k++) {
    double eps = pb_eps(L, k);
    if (eps < 1 && 1.0 / (1.0 - eps) <= 1 + PB_TARGET)
      break;
  }
  return k;
}

double cm__kw_upper(double N, int k, double theta, double allow, double bk,
                    double delta, double *eps_out) {
  double eps = pb_eps(pb_log(N, delta), k);
  double ub = eps < 1 ? (theta + allow) / (1.0 - eps) : INFINITY;
  if (!isnan(bk)) { /* an invariant subspace holding b: lambda_max <= theta
                     + beta / |u . b| (u a top eigenvector), and |u . b| >=
                     (delta / 2) sqrt(pi / (2 N)) but with probability
                     delta / 2 (b uniform on the sphere) */
    double ub2 = theta + allow +
                 bk * sqrt(2.0 * N / 3.14159265358979323846) / (0.5 * delta);
    ub = ub2 < ub ? ub2 : ub;
  }
  *eps_out = eps;
  return ub;
}

/* ---- the a posteriori bound (Krylov polynomials) ---------------------------
 *
 * The Lanczos vectors of a run from b are v_j = p_j(Op) b, where the
 * polynomials p_j follow the run's own recurrence, beta_j p_{j+1}(x) =
 * x p_j(x) - sum_{q <= j} (H + D)_{qj} p_q(x) (H the tridiagonal, D the
 * re-orthogonalisation coefficients, zero in a plain run), p_0 = 1. For a
 * unit top eigenvector u of eigenvalue lambda, u . v_k = p_k(lambda) u . b,
 * and |u . v_k| <= ||v_k|| = 1, so |u . b| <= 1 / |p_k(lambda)|. Beyond
 * the largest root of p_k (the top eigenvalue of H + D, within ||D|| of
 * theta_k) |p_k| grows, so if lambda_max >= t then |u . b| <= 1 /
 * p_k(t). The event |u . b| < eta = (delta / 2) sqrt(pi / (2 N)) that
 * the breakdown bound above already excludes (probability at most
 * delta / 2, b uniform on the sphere) thus covers every t with
 * 1 / p_k(t) <= eta: lambda_max < t but with that probability, whatever
 * the spectrum (a posteriori, after Hochstenbach, J. Sci. Comput. 2013,
 * doi 10.1007/s10915-013-9716-x). It needs no orthogonality of the v_j, only
 * their recurrence, and on a spectrum whose top is separated it certifies
 * within 4% in fewer steps than the theorem.
 *
 * Rounding: each step's vector carries an error f_i of norm at most epsf
 * (the product's and the updates'), which reaches v_k as sigma_ik(Op)
 * f_i / beta_i (sigma_ik: the recurrence of T restarted at i + 1), so
 * |u . b| <= 1 / p_k + sum_i epsf sigma_ik / (beta_i p_k) = 1 / p_k +
 * rho. By Cauchy interlacing sigma_ik / p_k falls as lambda grows past
 * theta_k, so rho at t bounds it for every lambda >= t. The certificate is
 * 1 / p_k(t) + rho(t) <= eta. */

#define PB_LN1E150 345.38776394910684 /* ln(1e150): the rescaling step */

/* ln p_k(t) by the recurrence, rescaled against overflow; -INFINITY when
 * some p_j(t) <= 0 (t not past the roots). P: k + 1 doubles. */
static double post_logp(const cm__post_t *q, double t, double *P) {
  double lg = 0;
  P[0] = 1;
  for (int j = 0; j < q->k; j++) {
    double s = (t - q->a[j]) * P[j] - (j > 0 ? q->b[j - 1] * P[j - 1] : 0);
    const double *Dj = q->D && j < q->kd ? q->D + (size_t)j * q->ldd : NULL;
    for (int i = 0; Dj && i <= j; i++)
      s -= Dj[i] * P[i];
    P[j + 1] = s / q->b[j];
    if (!(P[j + 1] > 0) || !isfinite(P[j + 1]))
      return P[j + 1] > 0 ? INFINITY : -INFINITY;
    if (P[j + 1] > 1e150) {
      for (int i = 0; i <= j + 1; i++)
        P[i] *= 1e-150;
      lg += PB_LN1E150;
    }
  }
  return log(P[q->k]) + lg;
}

/* rho(t) given ln p_k(t): the rounding term of the certificate. */
static double post_rho(const cm__post_t *q, double t, double logp) {
  double rho = 2 * DBL_EPSILON; /* b's own normalisation */
  for (int i = 0; i < q->k; i++) {
    double sp = 0, s = 1, lg = 0;
    for (int j = i + 1; j < q->k; j++) {
      double sn = ((t - q->a[j]) * s - q->b[j - 1] * sp) / q->b[j];
      sp = s, s = sn;
      if (!(s > 0))
        return INFINITY;
      if (s > 1e150)
        s *= 1e-150, sp *= 1e-150, lg += PB_LN1E150;
    }
    rho += q->epsf / q->b[i] * exp(log(s) + lg - logp);
  }
  return rho;
}

double cm__post_epsf(int terms, double gabs, double tn, int k) {
  if (!(terms > 0) || !isfinite(gabs) || !isfinite(tn))
    return NAN;
  return DBL_EPSILON * ((terms + 4.0) * gabs + (k + 8.0) * tn);
}

double cm__post_eta(double N, double delta) {
  return 0.5 * delta * sqrt(3.14159265358979323846 / (2.0 * N));
}

int cm__post_init(cm__post_t *q, double N, double delta, int k, const double *a,
                  const double *b, const double *D, size_t ldd, int kd,
                  double dn, double theta, double tn, int terms, double gabs) {
  *q = (cm__post_t){k,
                    a,
                    b,
                    D,
                    ldd,
                    kd,
                    0,
                    cm__post_eta(N, delta),
                    cm__post_epsf(terms, gabs, tn, k)};
  q->lo = theta + dn + 3.0 * k * DBL_EPSILON * tn;
  for (int j = 0; j < k; j++)
    if (!(b[j] > 0))
      return 0;
  return k >= 1 && isfinite(q->epsf) && isfinite(q->lo) && q->eta > 0;
}

/* 1 when the certificate holds at t. */
static int post_holds(const cm__post_t *q, double t, double *P) {
  if (!(t > q->lo))
    return 0;
  double lp = post_logp(q, t, P);
  if (!(lp > -INFINITY))
    return 0;
  if (lp == INFINITY) /* beta ~ 0 took p_k past the range: rho decides */
    lp = 700;
  return exp(-lp) + post_rho(q, t, lp) <= q->eta;
}

int cm__post_check(const cm__post_t *q, double t) {
  double *P = malloc(sizeof(double) * ((size_t)q->k + 1));
  int ok = P && post_holds(q, t, P);
  free(P);
  return ok;
}

double cm__post_upper(const cm__post_t *q, double hi) {
  if (!cm__post_check(q, hi))
    return INFINITY;
  double *P = malloc(sizeof(double) * ((size_t)q->k + 1)), lo = q->lo;
  if (!P)
    return hi;
  /* bisection between lo (fails: not past the roots) and hi (holds) */
  for (int it = 0; it < 200 && hi - lo > 1e-12 * hi; it++) {
    double mid = 0.5 * (lo + hi);
    if (post_holds(q, mid, P))
      hi = mid;
    else
      lo = mid;
  }
  free(P);
  return hi;
}

/* One step of the plain recurrence: w = Op v / s - b_prev v_prev, alpha,
 * then w -= alpha v; returns ||w||. */
static double pb_step(cm_operator_t *op, int comp, int use_S, double inv_s,
                      int N, const double *v, const double *vp, double bp,
                      double *w, double *tmp, double *alpha, int th) {
  cm__eig_apply(op, comp, use_S, inv_s, v, w, tmp);
  for (int i = 0; vp && i < N; i++)
    w[i] -= bp * vp[i];
  *alpha = cm__dot(N, v, w, th);
  for (int i = 0; i < N; i++)
    w[i] -= *alpha * v[i];
  return cm__nrm2(N, w, th);
}

int cm__eig_prob_bound(cm_context_t *ctx, cm_operator_t *op, int comp,
                       double delta, cm__eig_bound_t *res) {
  memset(res, 0, sizeof *res);
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  int use_S = m <= n, N = use_S ? m : n, other = use_S ? n : m;
  int th = cm__op_threads(op),
      kmax = N < CM__PB_MAX_STEPS ? N : CM__PB_MAX_STEPS;
  if (N == 0)
    return CM_OK;
  cm__op_make_f64(op); /* a run of its own on S */
  double s = 1, gabs = NAN;
  uint64_t seed = 0;
  int st = cm__eig_scale(ctx, op, comp, use_S, &s, &seed, &gabs);
  if (st)
    return st;
  int terms = cm__op_sum_terms(op, comp);
  double *v = malloc(sizeof(double) * (size_t)N);
  double *vp = malloc(sizeof(double) * (size_t)N);
  double *w = malloc(sizeof(double) * (size_t)N);
  double *tmp = malloc(sizeof(double) * ((size_t)other + 1));
  double *a = malloc(sizeof(double) * (size_t)kmax);
  double *b = malloc(sizeof(double) * (size_t)kmax);
  lapack_int *iw = malloc(sizeof(lapack_int) * 2 * (size_t)kmax);
  if (!v || !vp || !w || !tmp || !a || !b || !iw) {
    st = CM__ERR(ctx, CM_NOMEM, NULL,
                 "out of memory for the probabilistic "
                 "bound (N = %d)",
                 N);
    goto done;
  }
  /* ---- the start: a Gaussian vector, uniform direction ---- */
  uint64_t base = (uint64_t)(use_S ? r0 : c0), sd = seed ^ CM__PB_SEED;
  for (int i = 0; i < N; i++)
    v[i] = cm__gauss(sd, base + (uint64_t)i);
  double nv = cm__nrm2(N, v, th);
  for (int i = 0; i < N; i++)
    v[i] /= nv;
  /* ---- plain Lanczos until the bound is within PB_TARGET ---- */
  double theta = 0, eps = INFINITY, tn = 0, bp = 0, t0 = cm__now();
  int k = 0, breakdown = 0, post = 0, kstar = cm__kw_steps(N, delta);
  double bk = 0;
  cm__post_t q;
  for (;;) {
    double beta = pb_step(op, comp, use_S, 1.0 / s, N, v, k ? vp : NULL, bp, w,
                          tmp, &a[k], th);
    k++;
    theta = cm__tridiag_top(k, a, b, &tn, iw);
    breakdown = !(beta > (double)N * DBL_EPSILON * tn);
    bk = beta;
    b[k - 1] = beta; /* v_k's: the polynomials' last step */
    post = !breakdown && isfinite(theta) &&
           cm__post_init(&q, N, delta, k, a, b, NULL, 0, 0, 0, theta, tn, terms,
                         gabs / s);
    int post_ok = post && cm__post_check(&q, (1 + PB_TARGET) * theta);
    if (!isfinite(theta) || k >= kstar || post_ok || breakdown || k == kmax)
      break;
    for (int i = 0; i < N; i++) { /* v_prev <- v <- w / beta */
      vp[i] = v[i];
      v[i] = w[i] / beta;
    }
    bp = beta;
  }
  res->steps = k;
  res->theta = theta * s;
  /* the Ritz value's own rounding: bisection to ~eps ||T||, and the
   * recurrence's (Paige) of order k eps ||Op|| */
  double ub = cm__kw_upper(N, k, theta, 3.0 * k * DBL_EPSILON * tn,
                           breakdown ? bk : NAN, delta, &eps);
  if (post) /* the a posteriori bound, where it is below */
    ub = fmin(ub, cm__post_upper(&q, isfinite(ub) ? ub : 16 * theta));
  res->eps = eps;
  res->upper = ub * s;
  res->seconds = cm__now() - t0;
  if (!isfinite(theta))
    st = CM__ERR(ctx, CM_NUMERIC, NULL,
                 "LAPACK dstebz failed on the "
                 "probabilistic bound's tridiagonal (k = %d)",
                 k);
done:
  free(v), free(vp), free(w), free(tmp), free(a), free(b), free(iw);
  return st;
}
