/* spectrum.c: picks the backend for a component (dense for small ones and
 * on request; Lanczos or ARPACK otherwise, falling back to ARPACK and then
 * dense when a result fails the recomputed-residual test), the operator's
 * scale and start-vector seed, the Gaussian start, converts eigenvectors
 * to unit z over the contacts with their residuals, and offers the public
 * cm_spectrum_solve. Not for the report (report/). */
#include "spectrum_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CM__DENSE_FALLBACK_MAX 8000 /* largest N solved densely on failure */
#ifndef CM__AUTO_LANCZOS
#define CM__AUTO_LANCZOS 1 /* auto: own Lanczos (1) or ARPACK (0) */
#endif

void cm__eig_apply(cm_operator_t *op, int comp, int use_S, double inv_s,
                   const double *x, double *y, double *tmp) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  int k = use_S ? n : m, th = cm__op_threads(op);
  if (use_S)
    cm__op_BT(op, comp, x, tmp); /* tmp = B^T x */
  else
    cm__op_B(op, comp, x, tmp); /* tmp = B x */
  if (inv_s != 1.0) {
#pragma omp parallel for schedule(static) num_threads(th) if (k > CM__PAR_MIN)
    for (int i = 0; i < k; i++)
      tmp[i] *= inv_s; /* exact: a power of two */
  }
  if (use_S)
    cm__op_B(op, comp, tmp, y); /* y = B tmp */
  else
    cm__op_BT(op, comp, tmp, y); /* y = B^T tmp */
}

double cm__gauss(uint64_t seed, uint64_t i) {
  double u1 = 0.5 * (cm__hash_uniform(seed, 2 * i) + 1.0); /* (0, 1) */
  double u2 = cm__hash_uniform(seed, 2 * i + 1);           /* (-1, 1) */
  return sqrt(-2.0 * log(u1)) * cos(3.14159265358979323846 * u2);
}

static uint64_t cm__mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 33);
}

static uint64_t cm__bits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

/* Rayleigh quotient of a Gaussian vector after two products: the scale of
 * an operator whose row sums are unknown (any value within a few orders of
 * lambda_max serves). */
static double cm__scale_power(cm_operator_t *op, int comp, int use_S, int N,
                              int other, uint64_t seed) {
  double *x = malloc(sizeof(double) * ((size_t)N + 1));
  double *y = malloc(sizeof(double) * ((size_t)N + 1));
  double *t = malloc(sizeof(double) * ((size_t)other + 1)), q = 0;
  int th = cm__op_threads(op);
  for (int i = 0; x && y && t && i < N; i++)
    x[i] = cm__gauss(seed, (uint64_t)i);
  for (int it = 0; x && y && t && it < 2; it++) {
    double nx = cm__nrm2(N, x, th);
    if (!(nx > 0) || !isfinite(nx))
      break;
    for (int i = 0; i < N; i++)
      x[i] /= nx;
    cm__eig_apply(op, comp, use_S, 1.0, x, y, t);
    q = cm__dot(N, x, y, th);
    double *s = x;
    x = y, y = s;
  }
  free(x), free(y), free(t);
  return q;
}

int cm__eig_scale(cm_context_t *ctx, cm_operator_t *op, int comp, int use_S,
                  double *scale, uint64_t *seed, double *gabs) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  int N = use_S ? m : n;
  uint64_t h =
      cm__mix(cm__mix(cm__mix(0x636d6f646573ULL, (uint64_t)m), (uint64_t)n),
              (uint64_t)cm__op_comp_nnz(op, comp));
  double dmax = 0, gmax = 0;
  /* the row sums cost a pass over B on the block path (kept on the
   * operator: read in place), but n solves for a general M: there a
   * Rayleigh quotient (two products) does */
  const double *dg = NULL, *gs = NULL;
  int ok = m > 0 && cm__op_is_block(op);
  if (ok && cm__op_row_bounds_view(op, comp, &dg, &gs)) /* no memory */
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  for (int i = 0; ok && i < m; i++) {
    dmax = dg[i] > dmax ? dg[i] : dmax;
    gmax = gs[i] > gmax ? gs[i] : gmax;
  }
  if (gabs)
    *gabs = ok && isfinite(gmax) ? gmax : NAN;
  if (ok) { /* a few entries: the seed follows the operator */
    int pick[4] = {0, m / 3, (2 * m) / 3, m - 1};
    for (int q = 0; q < 4; q++)
      h = cm__mix(h, cm__bits(dg[pick[q]]) ^ cm__bits(gs[pick[q]]));
  }
  if (!(dmax > 0) || !isfinite(dmax)) /* no row sums: a Rayleigh quotient */
    dmax = cm__scale_power(op, comp, use_S, N, use_S ? n : m, h);
  if (!(dmax > 0) || !isfinite(dmax))
    return CM__ERR(ctx, CM_NUMERIC, NULL,
                   "component %d: the operator's "
                   "scale (max S_cc = %g) is not a positive finite number",
                   comp, dmax);
  *scale = ldexp(1.0, ilogb(dmax)); /* 2^e <= dmax < 2^(e+1) */
  *seed = h;
  return CM_OK;
}

int cm__eig_dims(cm_context_t *ctx, cm_operator_t *op, int comp,
                 const cm_options_t *opts, int method,
                 int (*auto_ncv)(int nev, int N), cm__eig_t *out,
                 cm__eig_dims_t *d) {
  cm__op_comp(op, comp, &d->r0, &d->m, &d->c0, &d->n);
  d->use_S = d->m <= d->n;
  d->N = d->use_S ? d->m : d->n, d->other = d->use_S ? d->n : d->m;
  d->f32 = 0;
  d->nev = opts->modes < d->N - 1 ? opts->modes : d->N - 1;
  d->ncv = opts->ncv > 0 ? opts->ncv : auto_ncv(d->nev, d->N);
  if (d->ncv > d->N)
    d->ncv = d->N;
  out->method = method;
  out->rank = -1;
  out->ncv = d->ncv;
  if (d->nev < 1 || d->ncv <= d->nev)
    return CM__ERR(ctx, CM_USAGE, NULL,
                   "%s needs nev < ncv <= N (nev %d, ncv %d, N %d)",
                   method == CM_METHOD_ARPACK ? "ARPACK" : "Lanczos", d->nev,
                   d->ncv, d->N);
  return cm__eig_scale(ctx, op, comp, d->use_S, &d->scale, &d->seed, &d->gabs);
}

void cm__eig_start(cm_operator_t *op, int comp, int use_S, int N, uint64_t seed,
                   const double *start, double *resid) {
  int r0, m, c0, n, th = cm__op_threads(op);
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  uint64_t base = (uint64_t)(use_S ? r0 : c0);
  seed = cm__mix(seed, use_S ? 0x53 : 0x47); /* S or G */
  double snorm = 0;
  if (start) {
    if (use_S)
      memcpy(resid, start, sizeof(double) * (size_t)N);
    else
      cm__op_BT(op, comp, start, resid); /* u0 = B^T z0 */
    snorm = cm__nrm2(N, resid, th);
  }
  /* each entry from (seed, index) alone: the same bits at any thread
   * count (a 1e6 start took 27 ms on one thread) */
  int pt = N > CM__PAR_MIN ? th : 1;
  if (start && snorm > 0 && isfinite(snorm)) { /* noise keeps the others */
#pragma omp parallel for schedule(static) num_threads(pt)
    for (int i = 0; i < N; i++)
      resid[i] = resid[i] / snorm +
                 1e-3 * cm__gauss(seed, base + (uint64_t)i) / sqrt((double)N);
  } else {
#pragma omp parallel for schedule(static) num_threads(pt)
    for (int i = 0; i < N; i++)
      resid[i] = cm__gauss(seed, base + (uint64_t)i);
  }
}

void cm__eig_free(cm__eig_t *e) {
  if (!e)
    return;
  free(e->lambda), cm__ws_free(e->z), free(e->res), cm__ws_free(e->bz);
  memset(e, 0, sizeof *e);
}

/* The first index of the largest |x_i|: fixed chunks, each's first
 * maximum, combined in chunk order (the serial answer at any thread
 * count). */
#define CM__ARGMAX_CHUNK 65536
static int cm__argmax_abs(int n, const double *x, int th) {
  int nch = (n + CM__ARGMAX_CHUNK - 1) / CM__ARGMAX_CHUNK, best = 0;
  int stack[64], *arg = nch <= 64 ? stack : malloc(sizeof(int) * (size_t)nch);
#pragma omp parallel for schedule(static) num_threads(th) if (arg && nch > 1)
  for (int c = 0; c < nch; c++) {
    int i0 = c * CM__ARGMAX_CHUNK,
        i1 = i0 + CM__ARGMAX_CHUNK < n ? i0 + CM__ARGMAX_CHUNK : n;
    int b = i0;
    for (int i = i0 + 1; i < i1; i++)
      if (fabs(x[i]) > fabs(x[b]))
        b = i;
    if (arg)
      arg[c] = b;
    else if (fabs(x[b]) > fabs(x[best])) /* serial: chunk order */
      best = b;
  }
  for (int c = 0; arg && c < nch; c++)
    if (fabs(x[arg[c]]) > fabs(x[best]))
      best = arg[c];
  if (arg != stack)
    free(arg);
  return best;
}

static int cm__eig_finish_body(cm_context_t *ctx, cm_operator_t *op, int comp,
                               int use_S, const double *vecs, double *scratch,
                               size_t nscratch, cm__eig_t *out) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  int N = use_S ? m : n, k = out->nev, th = cm__op_threads(op);
  /* from the workspace: a kept analysis's 48 MB at 1e6 rows, 6 modes */
  out->z = cm__ws_malloc(NULL, (size_t)m * (size_t)k + 1, sizeof(double));
  out->res = malloc(sizeof(double) * ((size_t)k + 1));
  /* the products of all k vectors at once (B read once), or one at a time
   * when that does not fit: the same bits */
  int bk = k > 0 ? k : 1;
  /* own: t and y are allocated here (one buffer, from the kept workspace:
   * the solve's basis just given back, cm_workspace_keep), not carved
   * from the caller's scratch (whose pages are already touched) */
  int own = !(scratch && nscratch >= ((size_t)n + (size_t)m) * (size_t)bk);
  double *t =
      own ? cm__ws_malloc(NULL, ((size_t)n + m) * bk + 1, sizeof(double))
          : scratch;
  if (own && !t) {
    bk = 1;
    t = cm__ws_malloc(NULL, (size_t)n + m + 1, sizeof(double));
  }
  double *y = t ? t + (size_t)n * bk : NULL;
  if (!out->z || !out->res || !t) {
    if (own)
      cm__ws_free(t);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  int pt = m > CM__PAR_MIN ? th : 1;
  for (int p0 = 0; p0 < k; p0 += bk) {
    int nb = k - p0 < bk ? k - p0 : bk;
    double *Z = out->z + (size_t)p0 * m;
    if (!use_S) /* z ~ B u */
      cm__op_apply_cols(op, comp, 0, vecs + (size_t)p0 * N, (size_t)N, Z,
                        (size_t)m, nb);
    for (int p = p0; p < p0 + nb; p++) {
      double *z = out->z + (size_t)p * m;
      const double *src = use_S ? vecs + (size_t)p * N : z;
      double nz = cm__nrm2(m, src, th);
      out->res[p] = nz; /* ||src|| until the residual replaces it */
#pragma omp parallel for schedule(static) num_threads(pt)
      for (int i = 0; i < m; i++) /* the unit z */
        z[i] = nz > 0 ? src[i] / nz : src[i];
      /* sign convention: the largest |z_i| (first on ties) is positive */
      int imax = cm__argmax_abs(m, z, pt);
      if (m && z[imax] < 0) {
#pragma omp parallel for schedule(static) num_threads(pt)
        for (int i = 0; i < m; i++)
          z[i] = -z[i];
      }
    }
    /* residuals of S z = B B^T z */
    cm__op_apply_cols(op, comp, 1, Z, (size_t)m, t, (size_t)n, nb);
    cm__op_apply_cols(op, comp, 0, t, (size_t)n, y, (size_t)m, nb);
    for (int p = p0; p < p0 + nb; p++) {
      double *z = out->z + (size_t)p * m, *yp = y + (size_t)(p - p0) * m;
      if (out->rayleigh && out->res[p] > 0) /* of the unit z */
        out->lambda[p] = cm__dot(m, z, yp, th);
      /* ||S z / lambda - z||: divided first, so that neither the vector
       * nor its squares leave the normal range at any accepted scale */
      double lam = out->lambda[p], il = lam > 0 ? 1.0 / lam : 0;
#pragma omp parallel for schedule(static) num_threads(pt)
      for (int i = 0; i < m; i++)
        yp[i] = yp[i] * il - z[i];
      out->res[p] = lam > 0 ? cm__nrm2(m, yp, th) : INFINITY;
    }
  }
  if (own && bk == k) /* t = B^T Z whole: the report's body shares */
    out->bz = t;
  else if (own)
    cm__ws_free(t);
  return CM_OK;
}

/* cm__eig_finish, its time in out->t_finish */
int cm__eig_finish(cm_context_t *ctx, cm_operator_t *op, int comp, int use_S,
                   const double *vecs, double *scratch, size_t nscratch,
                   cm__eig_t *out) {
  double t0 = cm__now();
  int st =
      cm__eig_finish_body(ctx, op, comp, use_S, vecs, scratch, nscratch, out);
  out->t_finish += cm__now() - t0;
  return st;
}

cm__eig_t cm__eig_drop(cm_context_t *ctx, cm__eig_t *out) {
  cm__eig_t spent = {0};
  cm__eig_add_cost(&spent, out); /* the cost fields: one list, below */
  cm__eig_free(out);
  cm_context_clear(ctx);
  return spent;
}

void cm__eig_add_cost(cm__eig_t *out, const cm__eig_t *spent) {
  out->iterations += spent->iterations, out->matvecs += spent->matvecs;
  out->t_matvec += spent->t_matvec;
  out->t_orth += spent->t_orth, out->t_restart += spent->t_restart;
  out->t_deflate += spent->t_deflate, out->t_finish += spent->t_finish;
}

/* The acceptance test of every iterative backend's result, on the
 * recomputed residuals (cm__eig_finish): a result claimed converged needs
 * at least one mode and every listed residual <= 1000 tol + 1e-12;
 * otherwise CM_NUMERIC (the caller falls back to another backend). A
 * partial result (CM_NOT_CONVERGED) is never upgraded. */
static int cm__eig_check(cm_context_t *ctx, const cm_options_t *opts, int comp,
                         cm__eig_t *out, int st) {
  if (st != CM_OK)
    return st;
  double tol = opts->tol > 0 ? opts->tol : 1e-10, worst = 0;
  for (int i = 0; i < out->nev; i++)
    worst = out->res[i] > worst || isnan(out->res[i]) ? out->res[i] : worst;
  if (out->nev < 1) {
    out->converged = 0;
    return CM__ERR(ctx, CM_NUMERIC, NULL,
                   "component %d: the %s solve "
                   "returned no mode",
                   comp, cm__method_name(out->method));
  }
  if (!(worst <= 1e3 * tol + 1e-12)) {
    out->converged = 0;
    return CM__ERR(ctx, CM_NUMERIC, NULL,
                   "component %d: %s residual %.3g "
                   "above 1000 x tol",
                   comp, cm__method_name(out->method), worst);
  }
  return CM_OK;
}

/* Whether the iterative backend is the own Lanczos (else ARPACK). */
static int cm__eig_lz(const cm_options_t *opts) {
  return opts->method == CM_METHOD_LANCZOS ||
         (opts->method == CM_METHOD_AUTO && CM__AUTO_LANCZOS &&
          opts->chebyshev < 2);
}

int cm__eig_vals32(const cm_options_t *opts, long rows) {
  return cm__eig_lz(opts) && opts->tol >= CM__LZ_F32_TOL &&
         rows >= cm__lz_basis32_min;
}

int cm__eig_is_dense(const cm_options_t *opts, int m, int n) {
  int N = m < n ? m : n;
  int too_small =
      N < opts->modes + 2 || N < 8; /* ARPACK needs nev < ncv <= N */
  return opts->method == CM_METHOD_DENSE || too_small ||
         (opts->method == CM_METHOD_AUTO && N <= opts->dense_max);
}

int cm__eig_component(cm_context_t *ctx, cm_operator_t *op, int comp,
                      const cm_options_t *opts, const double *start,
                      double deadline, double pb_delta, cm__eig_t *out) {
  memset(out, 0, sizeof *out);
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  int N = m < n ? m : n, nev = opts->modes > 0 ? opts->modes : 6;
  if (N == 0)
    return CM_OK;
  if (cm__eig_is_dense(opts, m, n))
    return cm__eig_dense(ctx, op, comp, nev, out);
  int lz = cm__eig_lz(opts);
  int st =
      lz ? cm__eig_lanczos(ctx, op, comp, opts, start, deadline, pb_delta, out)
         : cm__eig_arpack(ctx, op, comp, opts, start, deadline, out);
  st = cm__eig_check(ctx, opts, comp, out, st);
  if (lz && st == CM_NUMERIC) { /* ARPACK next, then dense below */
    cm__eig_t spent = cm__eig_drop(ctx, out);
    st = cm__eig_arpack(ctx, op, comp, opts, start, deadline, out);
    st = cm__eig_check(ctx, opts, comp, out, st);
    cm__eig_add_cost(out, &spent);
  }
  /* the dense fallback cannot stop at a deadline: only when it fits in
   * what is left at 1e9 N^3 per second (about 4x below a 2026 core) */
  int fits = deadline <= 0 || cm__now() + 1e-9 * N * (double)N * N <= deadline;
  if (st == CM_NUMERIC && N <= CM__DENSE_FALLBACK_MAX && fits) {
    cm__eig_t spent = cm__eig_drop(ctx, out);
    st = cm__eig_dense(ctx, op, comp, nev, out);
    cm__eig_add_cost(out, &spent);
  } else if (st == CM_NUMERIC && out->nev > 0) {
    /* no dense fallback at this size: a result whose recomputed residuals
     * fail the test is kept, flagged not converged (never as converged) */
    out->converged = 0;
    st = CM_NOT_CONVERGED;
  }
  return st;
}

/* ---- public: one operator, no component split ------------------------- */

void cm_spectrum_destroy(cm_spectrum_t **sp) {
  if (!sp || !*sp)
    return;
  free((*sp)->lambda), free((*sp)->residual), cm__ws_free((*sp)->z);
  free(*sp);
  *sp = NULL;
}

int cm_spectrum_solve(cm_context_t *ctx, cm_operator_t *op, int comp,
                      const cm_options_t *opts, cm_spectrum_t **out) {
  *out = NULL;
  cm_options_t def;
  if (!opts) {
    cm_options_init(&def);
    opts = &def;
  }
  double t0 = cm__now();
  cm__eig_t e;
  double deadline = opts->max_seconds > 0 ? t0 + opts->max_seconds : 0;
  int blas_threads = cm__blas_get_threads(); /* as in cm_analyze_system */
  cm__blas_single_thread();
  int st = cm__eig_component(ctx, op, comp, opts, NULL, deadline, 0, &e);
  if (blas_threads > 0)
    cm__blas_threads(blas_threads);
  if (st < 0) {
    cm__eig_free(&e);
    return st;
  }
  cm_spectrum_t *s = calloc(1, sizeof *s);
  if (!s) {
    cm__eig_free(&e);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  s->nev = e.nev;
  s->lambda = e.lambda, s->residual = e.res, s->z = e.z;
  cm__ws_free(e.bz); /* the spectrum lists no body shares */
  s->method = e.method, s->ncv = e.ncv, s->iterations = e.iterations;
  s->matvecs = e.matvecs, s->converged = e.converged;
  s->search_matvecs = e.search_matvecs;
  s->matvec_seconds = e.t_matvec;
  s->seconds = cm__now() - t0;
  *out = s;
  return st;
}
