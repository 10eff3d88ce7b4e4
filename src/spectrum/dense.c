/* dense.c: the LAPACK backend: forms the smaller of B B^T and B^T B densely
 * and calls dsyevr. Used for small components, on request, and as the
 * fallback when ARPACK fails. Not for large problems (O(N^3)). */
#include "spectrum_internal.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int cm__syevr_top(int N, double *A, int k, double *w, double *Z) {
  if (N <= 0)
    return 0;
  if (k > N)
    k = N;
  int found = 0;
  int *isuppz = malloc(sizeof(int) * 2 * (size_t)(k > 0 ? k : 1));
  if (!isuppz)
    return -2; /* out of memory */
  lapack_int info;
  if (k >= N)
    info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'A', 'U', N, A, N, 0, 0, 0,
                          0, 0.0, &found, w, Z, N, isuppz);
  else
    info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'I', 'U', N, A, N, 0, 0,
                          N - k + 1, N, 0.0, &found, w, Z, N, isuppz);
  free(isuppz);
  return info == 0 ? found : -1;
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
  if (use_S)
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, m, n, 1.0, Bd, m,
                0.0, A, m);
  else
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, n, m, 1.0, Bd, m, 0.0,
                A, n);
  int found = cm__syevr_top(N, A, N, w, Z);
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
