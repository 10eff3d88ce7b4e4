/* dense.c: the dense backend: forms the smaller of B B^T and B^T B densely
 * and solves it (cm__syevr_top). Used for small components, on request, and
 * as the fallback when ARPACK fails; cm__syevr_top, cm__chol_lower and
 * cm__inv_lower also serve the Lanczos and ARPACK projected problems. Not
 * for large problems (O(N^3)).
 *
 * Same bits on every CPU up to CM__SMALL_N: OpenBLAS picks its kernels for
 * the CPU when it loads, and its dsyevr (dsytrd's products, dormtr's),
 * dpotrf, dtrtri and dsyrk round differently on each pick (a 75 x 75
 * dsyevr: four different results from the SkylakeX, Haswell, Zen and
 * Prescott picks). The Lanczos restarts and tests run on those results,
 * so the products an answer took differed between CPUs (data/lammps/in.pile
 * -k 3: 333 on a Zen 4 EPYC, where OpenBLAS picks SkylakeX, 334 on a Zen 5,
 * where it picks Haswell). Up to CM__SMALL_N these are done here instead, in
 * plain loops of one fixed order (the build allows no FMA contraction):
 * Householder tridiagonalisation (LAPACK's dsytd2, on the lower triangle),
 * LAPACK's dstemr on the tridiagonal (scalar code: the same bits on every
 * pick; test `small_eig_same_bits_across_cores`), the reflectors applied
 * back (dorm2l's order), Cholesky and the triangular inverse by columns.
 * Above CM__SMALL_N (denser components than `dense_max`'s default, or a
 * basis of more than CM__SMALL_N vectors), OpenBLAS's blocked routines. */
#include "spectrum_internal.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* LAPACK's dsyevr: the top k pairs of A (destroyed), ascending. */
static int cm__syevr_lapack(int N, double *A, int k, double *w, double *Z) {
  int found = 0;
  int *isuppz = malloc(sizeof(int) * 2 * (size_t)(k > 0 ? k : 1));
  if (!isuppz)
    return -2; /* out of memory */
  lapack_int info;
  if (k >= N)
    info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'A', 'U', N, A, N, 0, 0, 0, 0,
                          0.0, &found, w, Z, N, isuppz);
  else
    info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'I', 'U', N, A, N, 0, 0,
                          N - k + 1, N, 0.0, &found, w, Z, N, isuppz);
  free(isuppz);
  return info == 0 ? found : -1;
}

/* sqrt(sum x_i^2) over n values, scaled by the largest |x_i| so that
 * neither the squares nor the sum overflow or underflow */
static double cm__small_norm(int n, const double *x) {
  double amax = 0, s = 0;
  for (int i = 0; i < n; i++)
    amax = fmax(amax, fabs(x[i]));
  if (!(amax > 0) || !isfinite(amax))
    return amax;
  for (int i = 0; i < n; i++) {
    double t = x[i] / amax;
    s += t * t;
  }
  return amax * sqrt(s);
}

/* Householder reduction of the symmetric A (lower triangle, column-major,
 * n x n) to the tridiagonal (d, e): A = Q T Q^T, Q = H_0 ... H_{n-2},
 * H_i = I - tau_i v_i v_i^T, v_i = (0..0, 1, A[i+2:, i]) with its 1 at i + 1
 * (LAPACK's dsytd2 with uplo L). p: scratch of 2 n. */
static void cm__small_tridiag(int n, double *A, double *d, double *e,
                              double *tau, double *p) {
  double *q = p + n;
  for (int i = 0; i + 1 < n; i++) {
    double *col = A + (size_t)i * n, alpha = col[i + 1];
    int L = n - i - 1; /* v over rows i+1 .. n-1 */
    double xn = cm__small_norm(L - 1, col + i + 2);
    double t = 0;
    if (xn > 0) {
      double nrm = hypot(alpha, xn), beta = alpha >= 0 ? -nrm : nrm;
      t = (beta - alpha) / beta;
      double f = 1.0 / (alpha - beta);
      for (int r = i + 2; r < n; r++)
        col[r] *= f;
      alpha = beta;
    }
    e[i] = alpha, tau[i] = t;
    if (t != 0) {
      double *v = col + i + 1; /* v[0] = 1 */
      v[0] = 1;
      /* p = tau A22 v on A22's lower triangle */
      for (int r = 0; r < L; r++)
        p[r] = 0;
      for (int c = 0; c < L; c++) {
        const double *a = A + (size_t)(i + 1 + c) * n + (i + 1);
        double s = 0;
        p[c] += a[c] * v[c];
        for (int r = c + 1; r < L; r++) {
          p[r] += a[r] * v[c];
          s += a[r] * v[r];
        }
        p[c] += s;
      }
      double pv = 0;
      for (int r = 0; r < L; r++)
        pv += (p[r] *= t) * v[r];
      double h = -0.5 * t * pv;
      for (int r = 0; r < L; r++)
        q[r] = p[r] + h * v[r];
      /* A22 -= v q^T + q v^T, lower triangle */
      for (int c = 0; c < L; c++) {
        double *a = A + (size_t)(i + 1 + c) * n + (i + 1);
        for (int r = c; r < L; r++)
          a[r] -= v[r] * q[c] + q[r] * v[c];
      }
      v[0] = e[i];
    }
    d[i] = col[i];
  }
  d[n - 1] = A[(size_t)(n - 1) * n + (n - 1)];
}

int cm__stemr_top(int N, double *d, double *e, int k, double *w, double *Z,
                  int ldz) {
  if (k > N)
    k = N;
  if (N == 1) {
    w[0] = d[0], Z[0] = 1;
    return 1;
  }
  int found = 0, *isuppz = malloc(sizeof(int) * 2 * (size_t)N);
  double wa[2], za[4];
  if (!isuppz)
    return -2;
  lapack_logical tryrac = 1;
  lapack_int info;
  if (N == 2) { /* dstemr's own N = 2 case swaps the two under range I */
    info = LAPACKE_dstemr(LAPACK_COL_MAJOR, 'V', 'A', 2, d, e, 0, 0, 0, 0,
                          &found, wa, za, 2, 2, isuppz, &tryrac);
    for (int c = 0; info == 0 && c < k; c++) {
      w[c] = wa[2 - k + c];
      Z[(size_t)c * ldz] = za[2 * (2 - k + c)];
      Z[(size_t)c * ldz + 1] = za[2 * (2 - k + c) + 1];
    }
    found = info == 0 && found == 2 ? k : 0;
  } else if (k >= N) {
    info = LAPACKE_dstemr(LAPACK_COL_MAJOR, 'V', 'A', N, d, e, 0, 0, 0, 0,
                          &found, w, Z, ldz, N, isuppz, &tryrac);
  } else {
    info = LAPACKE_dstemr(LAPACK_COL_MAJOR, 'V', 'I', N, d, e, 0, 0, N - k + 1,
                          N, &found, w, Z, ldz, k, isuppz, &tryrac);
  }
  free(isuppz);
  return info == 0 ? found : -1;
}

/* cm__syevr_vecs up to CM__SMALL_N: the same bits on every CPU. Returns
 * -1 with A as it came (the reduction writes only the lower triangle, the
 * diagonal put back) when both dstemr and dsteqr give up. */
static int cm__syevr_small(int N, double *A, int k, int kz, double *w,
                           double *Z) {
  double *ws = malloc(sizeof(double) * (size_t)N * 6);
  if (!ws)
    return -2;
  double *d = ws, *e = ws + N, *tau = ws + 2 * N, *p = ws + 3 * N;
  double *diag = ws + 5 * N;
  for (int c = 0; c < N; c++) { /* the upper triangle, as dsyevr's 'U' */
    diag[c] = A[(size_t)c * N + c];
    for (int r = c + 1; r < N; r++)
      A[(size_t)c * N + r] = A[(size_t)r * N + c];
  }
  cm__small_tridiag(N, A, d, e, tau, p);
  e[N - 1] = 0;
  memcpy(p, d, sizeof(double) * (size_t)N); /* dstemr overwrites d and e */
  memcpy(p + N, e, sizeof(double) * (size_t)N);
  int found = cm__stemr_top(N, d, e, k, w, Z, N);
  if (found == -2) {
    free(ws);
    return -2;
  }
  if (found == -1) { /* dstemr gave up (repeated eigenvalues: the fleet's
                      robots): implicit QL on the tridiagonal (dsteqr: scalar
                      code too), every pair, the top k kept */
    double *Zt = malloc(sizeof(double) * (size_t)N * (size_t)N);
    d = p, e = p + N;
    int info =
        Zt ? (int)LAPACKE_dsteqr(LAPACK_COL_MAJOR, 'I', N, d, e, Zt, N) : -2;
    found = info == 0 ? k : 0;
    for (int c = 0; c < found; c++) {
      w[c] = d[N - k + c];
      memcpy(Z + (size_t)c * N, Zt + (size_t)(N - k + c) * N,
             sizeof(double) * (size_t)N);
    }
    free(Zt);
    if (info != 0) {
      for (int c = 0; info != -2 && c < N; c++)
        A[(size_t)c * N + c] = diag[c];
      free(ws);
      return info == -2 ? -2 : -1;
    }
  }
  /* Z <- Q Z = H_0 (H_1 (... H_{N-2} Z)), the top kz columns */
  for (int i = N - 2; i >= 0; i--) {
    if (tau[i] == 0)
      continue;
    const double *col = A + (size_t)i * N;
    for (int c = found > kz ? found - kz : 0; c < found; c++) {
      double *z = Z + (size_t)c * N, s = z[i + 1];
      for (int r = i + 2; r < N; r++)
        s += col[r] * z[r];
      s *= tau[i];
      z[i + 1] -= s;
      for (int r = i + 2; r < N; r++)
        z[r] -= s * col[r];
    }
  }
  free(ws);
  return found;
}

int cm__syevr_vecs(int N, double *A, int k, int kz, double *w, double *Z) {
  if (N <= 0)
    return 0;
  if (k > N)
    k = N;
  if (N > CM__SMALL_N)
    return cm__syevr_lapack(N, A, k, w, Z);
  /* dsteqr fails too (not converged in 30 N sweeps): dsyevr on A's upper
   * triangle, left as it came, whose dstemr falls back to bisection and
   * inverse iteration */
  int found = cm__syevr_small(N, A, k, kz, w, Z);
  return found == -1 ? cm__syevr_lapack(N, A, k, w, Z) : found;
}

int cm__syevr_top(int N, double *A, int k, double *w, double *Z) {
  return cm__syevr_vecs(N, A, k, k, w, Z);
}

int cm__chol_lower(int n, double *G, int ld) {
  for (int j = 0; j < n; j++) {
    double *gj = G + (size_t)j * ld, s = gj[j];
    for (int c = 0; c < j; c++)
      s -= G[(size_t)c * ld + j] * G[(size_t)c * ld + j];
    if (!(s > 0) || !isfinite(s))
      return j + 1;
    double l = sqrt(s);
    gj[j] = l;
    for (int r = j + 1; r < n; r++) {
      double t = gj[r];
      for (int c = 0; c < j; c++)
        t -= G[(size_t)c * ld + r] * G[(size_t)c * ld + j];
      gj[r] = t / l;
    }
  }
  return 0;
}

void cm__inv_lower(int n, const double *L, int ldl, double *X, int ldx) {
  for (int j = 0; j < n; j++) {
    double *x = X + (size_t)j * ldx;
    for (int r = 0; r < j; r++)
      x[r] = 0;
    x[j] = 1.0 / L[(size_t)j * ldl + j];
    for (int i = j + 1; i < n; i++) {
      double t = 0;
      for (int c = j; c < i; c++)
        t += L[(size_t)c * ldl + i] * x[c];
      x[i] = -t / L[(size_t)i * ldl + i];
    }
  }
}

int cm__syrk_small(int use_S, int m, int n, const double *Bd, double *A) {
  int N = use_S ? m : n, L = use_S ? n : m;
  /* the N vectors whose dot products A holds, each contiguous: B's rows
   * (use_S, copied out) or its columns */
  double *R = use_S ? malloc(sizeof(double) * ((size_t)m * n + 1)) : NULL;
  if (use_S && !R)
    return -1;
  for (int q = 0; use_S && q < n; q++)
    for (int r = 0; r < m; r++)
      R[(size_t)r * n + q] = Bd[(size_t)q * m + r];
  const double *X = use_S ? R : Bd;
  for (int c = 0; c < N; c++) {
    const double *y = X + (size_t)c * L;
    int r = 0;
    for (; r + 4 <= c + 1; r += 4) { /* four sums at once, each in q order */
      const double *x = X + (size_t)r * L;
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (int q = 0; q < L; q++) {
        s0 += x[q] * y[q];
        s1 += x[L + q] * y[q];
        s2 += x[2 * (size_t)L + q] * y[q];
        s3 += x[3 * (size_t)L + q] * y[q];
      }
      double *a = A + (size_t)c * N + r;
      a[0] = s0, a[1] = s1, a[2] = s2, a[3] = s3;
    }
    for (; r <= c; r++) {
      const double *x = X + (size_t)r * L;
      double s = 0;
      for (int q = 0; q < L; q++)
        s += x[q] * y[q];
      A[(size_t)c * N + r] = s;
    }
  }
  free(R);
  return 0;
}

int cm__eig_dense(cm_context_t *ctx, cm_operator_t *op, int comp, int nev,
                  cm__eig_t *out) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  int use_S = m <= n, N = use_S ? m : n;
  out->method = CM_METHOD_DENSE;
  out->rank = -1;
  /* ---- allocate ---- */
  double *Bd = malloc(sizeof(double) * ((size_t)m * (size_t)n + 1));
  double *A = calloc((size_t)N * (size_t)N + 1, sizeof(double));
  double *w = malloc(sizeof(double) * ((size_t)N + 1));
  double *Z = malloc(sizeof(double) * ((size_t)N * (size_t)N + 1));
  int st = CM_OK;
  if (!Bd || !A || !w || !Z || cm__op_dense_B(op, comp, Bd)) {
    st = CM__ERR(ctx, CM_NOMEM, NULL,
                 "out of memory forming a dense %d x %d operator", N, N);
    goto done;
  }
  /* ---- compute: A = B B^T or B^T B, all eigenpairs ---- */
  if (N <= CM__SMALL_N) {
    if (cm__syrk_small(use_S, m, n, Bd, A)) {
      st = CM__ERR(ctx, CM_NOMEM, NULL,
                   "out of memory forming a dense %d x %d operator", N, N);
      goto done;
    }
  } else if (use_S)
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, m, n, 1.0, Bd, m, 0.0,
                A, m);
  else
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, n, m, 1.0, Bd, m, 0.0, A,
                n);
  /* every value (the rank), the vectors of the top nev only */
  int found = cm__syevr_vecs(N, A, N, nev < N ? nev : N, w, Z);
  if (found == -2) {
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory in LAPACK dsyevr");
    goto done;
  }
  if (found != N) {
    st = CM__ERR(ctx, CM_NUMERIC, NULL,
                 "LAPACK dsyevr failed on a %d x %d operator", N, N);
    goto done;
  }
  /* zero eigenvalues: below rounding level relative to the largest
   * (dsyevr's absolute error is a small multiple of N eps lambda_max) */
  double lmax = w[N - 1] > 0 ? w[N - 1] : 0;
  double ztol = 1e-14 * (N > 10 ? N : 10) * lmax;
  int rank = 0;
  for (int i = 0; i < N; i++)
    rank += w[i] > ztol;
  out->rank = rank;
  int k = nev < rank ? nev : rank;
  /* descending order of the top k */
  double *vecs = malloc(sizeof(double) * ((size_t)N * (size_t)k + 1));
  out->lambda = malloc(sizeof(double) * ((size_t)k + 1));
  if (!vecs || !out->lambda) {
    free(vecs);
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
    goto done;
  }
  for (int i = 0; i < k; i++) {
    out->lambda[i] = w[N - 1 - i];
    memcpy(vecs + (size_t)i * N, Z + (size_t)(N - 1 - i) * N,
           sizeof(double) * (size_t)N);
  }
  out->nev = k;
  out->converged = 1;
  st = cm__eig_finish(ctx, op, comp, use_S, vecs, NULL, 0, out);
  free(vecs);
done:
  free(Bd), free(A), free(w), free(Z);
  return st;
}
