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

/* One ARPACK run on p(Op): degree 0 = no filter; the damped interval ends at
 * the largest diagonal entry of S. */
static int cm__arpack_run(cm_context_t *ctx, cm_operator_t *op, int comp,
                          const cm_options_t *opts, const double *start,
                          double deadline, int degree, double tol,
                          cm__eig_t *out) {
  cm__eig_dims_t dm;
  if (cm__eig_dims(ctx, op, comp, opts, CM_METHOD_ARPACK, cm__arpack_ncv, out,
                   &dm))
    return CM_USAGE;
  int m = dm.m, use_S = dm.use_S, N = dm.N, other = dm.other;
  int nev = dm.nev, ncv = dm.ncv;
  /* ---- allocate ---- */
  int lworkl = ncv * (ncv + 8);
  double *resid = malloc(sizeof(double) * (size_t)N);
  double *V = malloc(sizeof(double) * (size_t)N * (size_t)ncv);
  double *workd = malloc(sizeof(double) * 3 * (size_t)N);
  double *workl = malloc(sizeof(double) * (size_t)lworkl);
  double *tmp = malloc(sizeof(double) * ((size_t)other + 1));
  double *d = malloc(sizeof(double) * (size_t)ncv);
  double *Zv = malloc(sizeof(double) * (size_t)N * (size_t)ncv);
  int *select = calloc((size_t)ncv, sizeof(int));
  cm__cheb_t filt = {0};
  int st = CM_OK;
  if (!resid || !V || !workd || !workl || !tmp || !d || !Zv || !select) {
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for ARPACK (N = %d)", N);
    goto done;
  }
  /* ---- start vector: warm (mapped to the operator) or seeded ---- */
  cm__eig_start(op, comp, use_S, N, dm.seed, start, resid);
  filt.inv_s = 1.0 / dm.scale;
  /* ---- filter: damp [0, a] with a the per-contact (diagonal) maximum ---- */
  filt.degree = degree;
  if (filt.degree) {
    double *dg = malloc(sizeof(double) * (size_t)m);
    double *gs = malloc(sizeof(double) * (size_t)m);
    filt.y0 = malloc(sizeof(double) * (size_t)N);
    filt.y1 = malloc(sizeof(double) * (size_t)N);
    filt.y2 = malloc(sizeof(double) * (size_t)N);
    if (!dg || !gs || !filt.y0 || !filt.y1 || !filt.y2 ||
        cm__op_row_bounds(ctx, op, comp, dg, gs)) {
      free(dg), free(gs);
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for the filter");
      goto done;
    }
    double dmax = 0, gmax = 0;
    for (int i = 0; i < m; i++) {
      dmax = dg[i] > dmax ? dg[i] : dmax;
      gmax = gs[i] > gmax ? gs[i] : gmax;
    }
    free(dg), free(gs);
    filt.a = dmax * filt.inv_s, gmax *= filt.inv_s;
    double lb = (2 * gmax - filt.a) / filt.a;
    if (!(filt.a > 0) || !(lb > 1.0001) || filt.degree * acosh(lb) > 600)
      filt.degree = 0; /* nothing to damp, or would overflow */
    else
      filt.scale = 1.0 / cosh(filt.degree * acosh(lb));
  }
  /* ---- Lanczos under the process-wide lock ---- */
  int iparam[11] = {0}, ipntr[11] = {0}, ido = 0, info = 1, timed_out = 0;
  iparam[0] = 1; /* exact shifts */
  iparam[2] = opts->max_iter > 0 ? opts->max_iter : 3000;
  if (filt.degree && iparam[2] > 100)
    iparam[2] = 100; /* a filter that fits converges fast, else fall back */
  iparam[6] = 1; /* mode 1: standard problem */
  pthread_mutex_lock(&cm__arpack_lock);
  cm__blas2_set_threads(cm__op_threads(op));
  for (;;) {
    dsaupd_c(&ido, "I", N, "LA", nev, tol, resid, ncv, V, N, iparam, ipntr,
             workd, workl, lworkl, &info);
    if (ido != 1 && ido != -1)
      break;
    double tm = cm__now();
    cm__apply_filtered(op, comp, use_S, N, &filt, workd + ipntr[0] - 1,
                       workd + ipntr[1] - 1, tmp, &out->matvecs);
    out->t_matvec += cm__now() - tm;
    if (deadline > 0 && cm__now() > deadline) {
      timed_out = 1;
      break;
    }
  }
  /* ARPACK reports its restarts only on its final return; after a time-out
   * estimate them from the matvecs (ncv for the first factorization, then
   * ncv - nev per restart). */
  out->iterations = timed_out ? (out->matvecs > ncv
                                     ? 1 + (out->matvecs - ncv) / (ncv - nev)
                                     : 0)
                              : iparam[2];
  int found = 0;
  if (info < 0 && !timed_out) {
    cm__arpack_unlock();
    st = CM__ERR(ctx, CM_NUMERIC, NULL, "ARPACK dsaupd failed (info %d): %s",
                 info, cm__arpack_msg(info));
    goto done;
  }
  if (info == 1 && !timed_out && filt.degree) {
    /* the filter left wanted modes in the damped interval: redo plain */
    cm__arpack_unlock();
    filt.degree = -1;
    goto done;
  }
  if (info == 1 || timed_out) { /* partial: Ritz pairs of the basis */
    cm__arpack_unlock();
    found = cm__rayleigh_ritz(op, comp, use_S, filt.inv_s, N, ncv, V, nev, d,
                              Zv, tmp, &out->matvecs);
    out->converged = 0;
    st = CM_NOT_CONVERGED;
    CM__ERR(ctx, CM_NOT_CONVERGED, NULL,
            "eigen-solve stopped by its %s budget after %d matvecs; partial "
            "result",
            timed_out ? "time" : "iteration", out->matvecs);
  } else {
    dseupd_c(1, "A", select, d, Zv, N, 0.0, "I", N, "LA", nev, tol, resid,
             ncv, V, N, iparam, ipntr, workd, workl, lworkl, &info);
    cm__arpack_unlock();
    if (info != 0) {
      st = CM__ERR(ctx, CM_NUMERIC, NULL,
                   "ARPACK dseupd failed (info %d): %s", info,
                   cm__arpack_msg(info));
      goto done;
    }
    found = iparam[4];
    out->converged = found >= nev;
    if (filt.degree) { /* theta = z^T Op z; keep those above a */
      int keep = 0;
      for (int i = 0; i < found; i++) {
        double *z = Zv + (size_t)i * N;
        cm__eig_apply(op, comp, use_S, filt.inv_s, z, workd, tmp);
        out->matvecs++;
        double th = cm__dot(N, z, workd, cm__op_threads(op)) /
                    cm__dot(N, z, z, cm__op_threads(op));
        if (th > filt.a) {
          d[keep] = th;
          if (keep != i)
            memcpy(Zv + (size_t)keep * N, z, sizeof(double) * (size_t)N);
          keep++;
        }
      }
      if (keep < nev) { /* some wanted modes lie below a: redo unfiltered */
        st = CM__ERR(ctx, CM_NUMERIC, NULL,
                     "filtered Lanczos found %d of %d modes above the "
                     "damped interval",
                     keep, nev);
        filt.degree = -1;
        goto done;
      }
      found = keep;
    }
  }
  /* ---- return: descending, positive only ---- */
  {
    double *vecs = malloc(sizeof(double) * (size_t)N * (size_t)(found + 1));
    out->lambda = malloc(sizeof(double) * (size_t)(found + 1));
    if (!vecs || !out->lambda) {
      free(vecs);
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
      goto done;
    }
    int *ord = malloc(sizeof(int) * (size_t)(found + 1));
    for (int i = 0; ord && i < found; i++)
      ord[i] = i;
    for (int i = 1; ord && i < found; i++) /* insertion sort, descending */
      for (int j = i; j > 0 && d[ord[j]] > d[ord[j - 1]]; j--) {
        int t = ord[j];
        ord[j] = ord[j - 1], ord[j - 1] = t;
      }
    int k = 0;
    for (int i = 0; ord && i < found; i++)
      if (d[ord[i]] > 0) {
        out->lambda[k] = d[ord[i]] * dm.scale;
        memcpy(vecs + (size_t)k * N, Zv + (size_t)ord[i] * N,
               sizeof(double) * (size_t)N);
        k++;
      }
    free(ord);
    out->nev = k;
    int fst = cm__eig_finish(ctx, op, comp, use_S, vecs, NULL, 0, out);
    free(vecs);
    if (fst)
      st = fst;
  }
done:
  free(resid), free(V), free(workd), free(workl), free(tmp), free(d);
  free(Zv), free(select);
  free(filt.y0), free(filt.y1), free(filt.y2);
  if (filt.degree < 0) { /* retry without filter */
    int mv = out->matvecs, it = out->iterations;
    double tmv = out->t_matvec;
    free(out->lambda), free(out->z), free(out->res);
    memset(out, 0, sizeof *out);
    cm_context_clear(ctx);
    st = cm__arpack_run(ctx, op, comp, opts, start, deadline, 0, tol, out);
    out->matvecs += mv;
    out->iterations += it;
    out->t_matvec += tmv;
  }
  return st;
}

/* Plain ARPACK, or on the Chebyshev-filtered p(Op) when the options ask for
 * it (fewer ARPACK steps for more matvecs). */
int cm__eig_arpack(cm_context_t *ctx, cm_operator_t *op, int comp,
                   const cm_options_t *opts, const double *start,
                   double deadline, cm__eig_t *out) {
  double tol = opts->tol > 0 ? opts->tol : 1e-10;
  return cm__arpack_run(ctx, op, comp, opts, start, deadline,
                        cm__cheb_degree(opts), tol, out);
}
