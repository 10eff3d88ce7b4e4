/* arpack.c: the ARPACK-ng Lanczos backend (dsaupd_c/dseupd_c, which = "LA")
 * on the smaller of S = B B^T and G = B^T B, from a seeded or warm start.
 * ARPACK keeps Fortran SAVE state between reverse-communication calls, so
 * one process-wide lock is held across each dsaupd..dseupd sequence; the
 * parallelism lives in the matvecs. A run stopped by the iteration or time
 * budget yields Rayleigh-Ritz pairs from its Lanczos basis, flagged not
 * converged. Not for small problems (dense.c). */
#include "spectrum_internal.h"

#include <arpack/arpack.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t cm__arpack_lock = PTHREAD_MUTEX_INITIALIZER;

static void cm__arpack_unlock(void) {
  cm__blas2_set_threads(1);
  pthread_mutex_unlock(&cm__arpack_lock);
}

static const char *cm__arpack_msg(int info) {
  switch (info) {
  case 1: return "maximum number of iterations reached";
  case 3: return "no shifts could be applied: increase ncv";
  case -1: return "N must be positive";
  case -2: return "NEV must be positive";
  case -3: return "NCV must satisfy NEV < NCV <= N";
  case -4: return "the maximum number of iterations must be positive";
  case -5: return "WHICH is invalid";
  case -6: return "BMAT is invalid";
  case -7: return "the work array is too short";
  case -8: return "LAPACK failed on the tridiagonal eigenproblem";
  case -9: return "the starting vector is zero";
  case -10: return "IPARAM(7) (mode) is invalid";
  case -11: return "mode 1 is incompatible with BMAT = G";
  case -12: return "IPARAM(1) must be 0 or 1";
  case -13: return "NEV and WHICH = BE are incompatible";
  case -14: return "no eigenvalue reached the requested accuracy";
  case -15: return "HOWMNY is invalid";
  case -16: return "HOWMNY = S is not implemented";
  case -17: return "dseupd found a different number of converged Ritz "
                   "values than dsaupd";
  case -9999: return "could not build a Lanczos factorization (the operator "
                     "is probably rank deficient for this NCV)";
  default: return "unknown ARPACK error";
  }
}

/* Chebyshev filter p(x) = T_d((2x - a)/a) / T_d((2b - a)/a): |p| <= 1/T_d(..)
 * on the damped interval [0, a], increasing on [a, b], 1 at the upper bound
 * b. ARPACK's largest eigenpairs of p(Op) are the largest of Op as long as
 * they lie above a; eigenvalues are recovered as Rayleigh quotients. */
typedef struct {
  int degree;     /* d; 0 = no filter */
  double a;       /* top of the damped interval */
  double scale;   /* 1 / T_d(l(b)) */
  double inv_s;   /* 1 / s: the solve is on Op / s (cm__eig_scale) */
  double *y0, *y1, *y2; /* recurrence vectors, size N */
} cm__cheb_t;

static void cm__apply_filtered(cm_operator_t *op, int comp, int use_S, int N,
                               cm__cheb_t *f, const double *x, double *y,
                               double *tmp, int *matvecs) {
  if (!f->degree) {
    cm__eig_apply(op, comp, use_S, f->inv_s, x, y, tmp);
    (*matvecs)++;
    return;
  }
  int th = cm__op_threads(op);
  double c = 0.5 * f->a, e = 0.5 * f->a; /* l(x) = (x - c) / e */
  double *prev = f->y0, *cur = f->y1, *nxt = f->y2;
  memcpy(prev, x, sizeof(double) * (size_t)N); /* T_0 = x */
  cm__eig_apply(op, comp, use_S, f->inv_s, x, cur, tmp); /* T_1 = l(Op) x */
  (*matvecs)++;
#pragma omp parallel for schedule(static) num_threads(th) if (N > CM__PAR_MIN)
  for (int i = 0; i < N; i++)
    cur[i] = (cur[i] - c * x[i]) / e;
  for (int k = 2; k <= f->degree; k++) { /* T_k = 2 l(Op) T_{k-1} - T_{k-2} */
    cm__eig_apply(op, comp, use_S, f->inv_s, cur, nxt, tmp);
    (*matvecs)++;
#pragma omp parallel for schedule(static) num_threads(th) if (N > CM__PAR_MIN)
    for (int i = 0; i < N; i++)
      nxt[i] = 2.0 * (nxt[i] - c * cur[i]) / e - prev[i];
    double *t = prev;
    prev = cur, cur = nxt, nxt = t;
  }
#pragma omp parallel for schedule(static) num_threads(th) if (N > CM__PAR_MIN)
  for (int i = 0; i < N; i++)
    y[i] = f->scale * cur[i];
}

/* Degree from the options only (never from timings, so the bits do not
 * depend on the machine). Auto is off until bench/ shows a gain on a quiet
 * machine: on a loaded 2-core machine, degree 6 on a 190k-contact pile cut
 * the ARPACK steps from 194 to 65 but the time only from 5.2 to 4.6 s with
 * one thread, and doubled it with two. */
static int cm__cheb_degree(const cm_options_t *opts) {
  return opts->chebyshev >= 2 ? opts->chebyshev : 0;
}

/* Rayleigh-Ritz on the columns of V (N x ncv, destroyed): top nev pairs,
 * ascending into w, vectors into Y (N x nev). Returns pairs found. */
static int cm__rayleigh_ritz(cm_operator_t *op, int comp, int use_S,
                             double inv_s, int N, int ncv, double *V, int nev,
                             double *w, double *Y, double *tmp, int *matvecs) {
  int th = cm__op_threads(op), kept = 0;
  for (int j = 0; j < ncv; j++) { /* two passes of modified Gram-Schmidt */
    double *v = V + (size_t)j * N, n0 = cm__nrm2(N, v, th);
    if (!(n0 > 0))
      continue;
    for (int pass = 0; pass < 2; pass++)
      for (int i = 0; i < kept; i++) {
        double *q = V + (size_t)i * N, c = cm__dot(N, q, v, th);
        for (int l = 0; l < N; l++)
          v[l] -= c * q[l];
      }
    double n1 = cm__nrm2(N, v, th);
    if (!(n1 > 1e-8 * n0))
      continue;
    double *dst = V + (size_t)kept * N;
    for (int l = 0; l < N; l++)
      dst[l] = v[l] / n1;
    kept++;
  }
  if (kept == 0)
    return 0;
  double *W = malloc(sizeof(double) * (size_t)N * (size_t)kept);
  double *H = malloc(sizeof(double) * (size_t)kept * (size_t)kept);
  double *hw = malloc(sizeof(double) * (size_t)kept);
  double *U = malloc(sizeof(double) * (size_t)kept * (size_t)kept);
  int found = 0;
  if (W && H && hw && U) {
    for (int j = 0; j < kept; j++) {
      cm__eig_apply(op, comp, use_S, inv_s, V + (size_t)j * N,
                    W + (size_t)j * N, tmp);
      (*matvecs)++;
    }
    for (int j = 0; j < kept; j++) /* H = V^T Op V */
      for (int i = 0; i <= j; i++) {
        double h = 0.5 * (cm__dot(N, V + (size_t)i * N, W + (size_t)j * N, th) +
                          cm__dot(N, V + (size_t)j * N, W + (size_t)i * N, th));
        H[(size_t)j * kept + i] = H[(size_t)i * kept + j] = h;
      }
    int k = nev < kept ? nev : kept;
    found = cm__syevr_top(kept, H, k, hw, U);
    for (int p = 0; p < found; p++) {
      w[p] = hw[p];
      double *y = Y + (size_t)p * N;
      for (int l = 0; l < N; l++) {
        double s = 0;
        for (int i = 0; i < kept; i++)
          s += V[(size_t)i * N + l] * U[(size_t)p * kept + i];
        y[l] = s;
      }
    }
    if (found < 0)
      found = 0;
  }
  free(W), free(H), free(hw), free(U);
  return found;
}

/* ARPACK's basis when the options leave it open: max(2 nev + 1, 20). */
static int cm__arpack_ncv(int nev, int N) {
  (void)N;
  return 2 * nev + 1 > 20 ? 2 * nev + 1 : 20;
}

/* ---- one run: its state ----------------------------------------------------- */

typedef struct {
  cm_operator_t *op;
  int comp, use_S, N, other, m; /* operator size, other side, rows */
  int nev, ncv;
  double tol;
  double scale;      /* s: the run is on Op / s (cm__eig_scale) */
  /* ARPACK's arrays */
  int lworkl;        /* ncv (ncv + 8) */
  double *resid;     /* N: start, then residual */
  double *V;         /* N x ncv: the Lanczos basis */
  double *workd;     /* 3 N: reverse-communication vectors */
  double *workl;     /* lworkl */
  int *select;       /* ncv: dseupd's (unused with "A") */
  int iparam[11], ipntr[11], info;
  /* results */
  double *tmp;       /* other: the middle of a product */
  double *d;         /* ncv: Ritz values */
  double *Zv;        /* N x ncv: Ritz vectors */
  int found;         /* pairs in d, Zv */
  int timed_out;     /* the deadline stopped the iteration */
  cm__cheb_t filt;   /* the Chebyshev filter (degree 0: none; -1: failed,
                        run again without) */
} ap_t;

static void ap_free(ap_t *A) {
  free(A->resid), free(A->V), free(A->workd), free(A->workl), free(A->tmp);
  free(A->d), free(A->Zv), free(A->select);
  free(A->filt.y0), free(A->filt.y1), free(A->filt.y2);
  memset(A, 0, sizeof *A);
}

/* ---- setup: sizes, arrays, start vector ----------------------------------- */

static int ap_setup(cm_context_t *ctx, ap_t *A, cm_operator_t *op, int comp,
                    const cm_options_t *opts, const double *start, double tol,
                    cm__eig_t *out) {
  memset(A, 0, sizeof *A);
  cm__eig_dims_t dm;
  int st = cm__eig_dims(ctx, op, comp, opts, CM_METHOD_ARPACK,
                        cm__arpack_ncv, out, &dm);
  if (st)
    return st;
  A->op = op, A->comp = comp, A->use_S = dm.use_S, A->N = dm.N;
  A->other = dm.other, A->m = dm.m, A->nev = dm.nev, A->ncv = dm.ncv;
  A->tol = tol, A->scale = dm.scale, A->filt.inv_s = 1.0 / dm.scale;
  size_t N = (size_t)A->N, ncv = (size_t)A->ncv;
  A->lworkl = A->ncv * (A->ncv + 8);
  A->resid = malloc(sizeof(double) * N);
  A->V = malloc(sizeof(double) * N * ncv);
  A->workd = malloc(sizeof(double) * 3 * N);
  A->workl = malloc(sizeof(double) * (size_t)A->lworkl);
  A->tmp = malloc(sizeof(double) * ((size_t)A->other + 1));
  A->d = malloc(sizeof(double) * ncv);
  A->Zv = malloc(sizeof(double) * N * ncv);
  A->select = calloc(ncv, sizeof(int));
  if (!A->resid || !A->V || !A->workd || !A->workl || !A->tmp || !A->d ||
      !A->Zv || !A->select)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for ARPACK (N = %d)",
                   A->N);
  /* warm (mapped to the operator) or Gaussian */
  cm__eig_start(op, comp, A->use_S, A->N, dm.seed, start, A->resid);
  return CM_OK;
}

/* The filter damps [0, a], a the per-contact (diagonal) maximum, up to the
 * Gershgorin bound b; off when there is nothing to damp or T_d would
 * overflow. */
static int ap_filter_setup(cm_context_t *ctx, ap_t *A, int degree) {
  cm__cheb_t *f = &A->filt;
  f->degree = degree;
  if (!degree)
    return CM_OK;
  double *dg = malloc(sizeof(double) * (size_t)A->m);
  double *gs = malloc(sizeof(double) * (size_t)A->m);
  f->y0 = malloc(sizeof(double) * (size_t)A->N);
  f->y1 = malloc(sizeof(double) * (size_t)A->N);
  f->y2 = malloc(sizeof(double) * (size_t)A->N);
  if (!dg || !gs || !f->y0 || !f->y1 || !f->y2 ||
      cm__op_row_bounds(ctx, A->op, A->comp, dg, gs)) {
    free(dg), free(gs);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for the filter");
  }
  double dmax = 0, gmax = 0;
  for (int i = 0; i < A->m; i++) {
    dmax = dg[i] > dmax ? dg[i] : dmax;
    gmax = gs[i] > gmax ? gs[i] : gmax;
  }
  free(dg), free(gs);
  f->a = dmax * f->inv_s, gmax *= f->inv_s;
  double lb = (2 * gmax - f->a) / f->a;
  if (!(f->a > 0) || !(lb > 1.0001) || f->degree * acosh(lb) > 600)
    f->degree = 0; /* nothing to damp, or would overflow */
  else
    f->scale = 1.0 / cosh(f->degree * acosh(lb));
  return CM_OK;
}

/* ---- iterate: dsaupd's reverse communication, under the lock -------------- */

/* Returns with the lock held (ap_extract releases it). */
static void ap_iterate(ap_t *A, const cm_options_t *opts, double deadline,
                       cm__eig_t *out) {
  int ido = 0;
  A->info = 1; /* our start vector */
  A->iparam[0] = 1; /* exact shifts */
  A->iparam[2] = opts->max_iter > 0 ? opts->max_iter : 3000;
  if (A->filt.degree && A->iparam[2] > 100)
    A->iparam[2] = 100; /* a filter that fits converges fast, else fall back */
  A->iparam[6] = 1; /* mode 1: standard problem */
  pthread_mutex_lock(&cm__arpack_lock);
  cm__blas2_set_threads(cm__op_threads(A->op));
  for (;;) {
    dsaupd_c(&ido, "I", A->N, "LA", A->nev, A->tol, A->resid, A->ncv, A->V,
             A->N, A->iparam, A->ipntr, A->workd, A->workl, A->lworkl,
             &A->info);
    if (ido != 1 && ido != -1)
      break;
    double tm = cm__now();
    cm__apply_filtered(A->op, A->comp, A->use_S, A->N, &A->filt,
                       A->workd + A->ipntr[0] - 1, A->workd + A->ipntr[1] - 1,
                       A->tmp, &out->matvecs);
    out->t_matvec += cm__now() - tm;
    if (deadline > 0 && cm__now() > deadline) {
      A->timed_out = 1;
      break;
    }
  }
  /* ARPACK reports its restarts only on its final return; after a time-out
   * estimate them from the matvecs (ncv for the first factorization, then
   * ncv - nev per restart). */
  int ncv = A->ncv, nev = A->nev;
  out->iterations += A->timed_out ? (out->matvecs > ncv
                                         ? 1 + (out->matvecs - ncv) / (ncv - nev)
                                         : 0)
                                  : A->iparam[2];
}

/* ---- extract: dseupd, or Rayleigh-Ritz on a partial basis ------------------ */

static int ap_extract(cm_context_t *ctx, ap_t *A, cm__eig_t *out) {
  if (A->info < 0 && !A->timed_out) {
    cm__arpack_unlock();
    return CM__ERR(ctx, CM_NUMERIC, NULL, "ARPACK dsaupd failed (info %d): %s",
                   A->info, cm__arpack_msg(A->info));
  }
  if (A->info == 1 && !A->timed_out && A->filt.degree) {
    /* the filter left wanted modes in the damped interval: redo plain */
    cm__arpack_unlock();
    A->filt.degree = -1;
    return CM_OK;
  }
  if (A->info == 1 || A->timed_out) { /* partial: Ritz pairs of the basis */
    cm__arpack_unlock();
    A->found = cm__rayleigh_ritz(A->op, A->comp, A->use_S, A->filt.inv_s, A->N,
                                 A->ncv, A->V, A->nev, A->d, A->Zv, A->tmp,
                                 &out->matvecs);
    out->converged = 0;
    CM__ERR(ctx, CM_NOT_CONVERGED, NULL,
            "eigen-solve stopped by its %s budget after %d matvecs; partial "
            "result",
            A->timed_out ? "time" : "iteration", out->matvecs);
    return CM_NOT_CONVERGED;
  }
  dseupd_c(1, "A", A->select, A->d, A->Zv, A->N, 0.0, "I", A->N, "LA", A->nev,
           A->tol, A->resid, A->ncv, A->V, A->N, A->iparam, A->ipntr,
           A->workd, A->workl, A->lworkl, &A->info);
  cm__arpack_unlock();
  if (A->info != 0)
    return CM__ERR(ctx, CM_NUMERIC, NULL, "ARPACK dseupd failed (info %d): %s",
                   A->info, cm__arpack_msg(A->info));
  A->found = A->iparam[4];
  out->converged = A->found >= A->nev;
  return CM_OK;
}

/* With the filter: theta = z^T Op z, keeping those above a; fewer than nev
 * there asks for a run without the filter (degree -1). */
static int ap_filter_keep(cm_context_t *ctx, ap_t *A, cm__eig_t *out) {
  int keep = 0, N = A->N, th = cm__op_threads(A->op);
  for (int i = 0; i < A->found; i++) {
    double *z = A->Zv + (size_t)i * N;
    cm__eig_apply(A->op, A->comp, A->use_S, A->filt.inv_s, z, A->workd,
                  A->tmp);
    out->matvecs++;
    double t = cm__dot(N, z, A->workd, th) / cm__dot(N, z, z, th);
    if (t > A->filt.a) {
      A->d[keep] = t;
      if (keep != i)
        memcpy(A->Zv + (size_t)keep * N, z, sizeof(double) * (size_t)N);
      keep++;
    }
  }
  A->found = keep;
  if (keep >= A->nev)
    return CM_OK;
  A->filt.degree = -1; /* some wanted modes lie below a: redo unfiltered */
  return CM__ERR(ctx, CM_NUMERIC, NULL, "filtered Lanczos found %d of %d "
                 "modes above the damped interval", keep, A->nev);
}

/* ---- return: descending, positive only, unscaled ---------------------------- */

/* A converged result then goes through Lanczos' search for missed copies
 * of a repeated eigenvalue (cm__eig_copies: one Krylov sequence, ARPACK's
 * too, sees each eigenvalue once). */
static int ap_return(cm_context_t *ctx, ap_t *A, const cm_options_t *opts,
                     double deadline, int search, cm__eig_t *out) {
  int N = A->N, found = A->found, room = found > A->nev ? found : A->nev;
  double *vecs = malloc(sizeof(double) * (size_t)N * (size_t)(found + 1));
  int *ord = malloc(sizeof(int) * (size_t)(found + 1));
  out->lambda = malloc(sizeof(double) * (size_t)(room + 1));
  if (!vecs || !ord || !out->lambda) {
    free(vecs), free(ord);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  for (int i = 0; i < found; i++)
    ord[i] = i;
  for (int i = 1; i < found; i++) /* insertion sort, descending */
    for (int j = i; j > 0 && A->d[ord[j]] > A->d[ord[j - 1]]; j--) {
      int t = ord[j];
      ord[j] = ord[j - 1], ord[j - 1] = t;
    }
  int k = 0;
  for (int i = 0; i < found; i++)
    if (A->d[ord[i]] > 0) {
      out->lambda[k] = A->d[ord[i]] * A->scale;
      memcpy(vecs + (size_t)k * N, A->Zv + (size_t)ord[i] * N,
             sizeof(double) * (size_t)N);
      k++;
    }
  free(ord);
  int st = CM_OK;
  if (search && out->converged && k > 0)
    st = cm__eig_copies(ctx, A->op, A->comp, opts, deadline, &k, out->lambda,
                        &vecs, out);
  out->nev = k;
  if (!st)
    st = cm__eig_finish(ctx, A->op, A->comp, A->use_S, vecs, NULL, 0, out);
  free(vecs);
  return st;
}

/* ---- the driver --------------------------------------------------------------- */

/* One ARPACK run on p(Op) (degree 0: Op itself). *redo: the filter did not
 * fit, run again without it. */
static int cm__arpack_run(cm_context_t *ctx, cm_operator_t *op, int comp,
                          const cm_options_t *opts, const double *start,
                          double deadline, int degree, double tol,
                          cm__eig_t *out, int *redo) {
  ap_t A;
  int st = ap_setup(ctx, &A, op, comp, opts, start, tol, out);
  if (!st)
    st = ap_filter_setup(ctx, &A, degree);
  if (!st) {
    ap_iterate(&A, opts, deadline, out);
    st = ap_extract(ctx, &A, out);
  }
  if (!st && A.filt.degree > 0)
    st = ap_filter_keep(ctx, &A, out);
  *redo = A.filt.degree < 0;
  if ((st == CM_OK || st == CM_NOT_CONVERGED) && !*redo) {
    int fst = ap_return(ctx, &A, opts, deadline, st == CM_OK, out);
    st = fst ? fst : st;
  }
  ap_free(&A);
  return st;
}

/* Plain ARPACK, or on the Chebyshev-filtered p(Op) when the options ask for
 * it (fewer ARPACK steps for more matvecs); a filter that does not fit is
 * followed by a plain run (the statistics count both). */
int cm__eig_arpack(cm_context_t *ctx, cm_operator_t *op, int comp,
                   const cm_options_t *opts, const double *start,
                   double deadline, cm__eig_t *out) {
  double tol = opts->tol > 0 ? opts->tol : 1e-10;
  int redo = 0;
  cm__op_make_f64(op); /* its products are on S (no memory: the CSR's) */
  int st = cm__arpack_run(ctx, op, comp, opts, start, deadline,
                          cm__cheb_degree(opts), tol, out, &redo);
  if (redo) { /* drop the filtered attempt, keep what it cost */
    cm__eig_t spent = cm__eig_drop(ctx, out);
    st = cm__arpack_run(ctx, op, comp, opts, start, deadline, 0, tol, out,
                        &redo);
    cm__eig_add_cost(out, &spent);
  }
  return st;
}
