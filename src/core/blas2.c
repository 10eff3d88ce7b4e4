/* blas2.c: deterministic multithreaded dgemv_ and dcopy_ for the long,
 * thin shapes of ARPACK's Lanczos basis work (V^T r and V h with V of N x j,
 * N large), which the profile showed to be 60% of the eigen phase while
 * OpenBLAS runs single-threaded for bitwise determinism.
 *
 * Linked statically (the cmodes program, tests, benches), these definitions
 * take the place of the BLAS library's for every caller in the process
 * (ARPACK, LAPACK); every shape outside the fast path goes to CBLAS, which
 * does not come back here. Sums are cut into fixed row chunks and combined
 * in chunk order, so results do not depend on the thread count. In the
 * shared libcmodes the symbols are hidden and nothing is replaced.
 * This interposition is deliberate and process-wide: a program linking
 * libcmodes.a gets these dgemv_/dcopy_ for all its BLAS calls of those
 * two routines (docs/c-api.md, "Linking statically").
 * Not for general BLAS use. */
#include "internal.h"

#include <cblas.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CM__B2_MIN 32768  /* rows below which CBLAS does the work */
#define CM__B2_CHUNK 8192 /* fixed row chunk of the reductions */

/* Set around ARPACK solves (under the ARPACK lock) and read by any thread
 * that calls dgemv_: atomic, so concurrent callers see a whole value. */
static atomic_int cm__b2_threads = 1;

void cm__blas2_set_threads(int n) {
  atomic_store(&cm__b2_threads, n > 0 ? n : 1);
}

/* Dot product of len entries with eight independent partial sums combined
 * in a fixed order: vectorisable and still deterministic. Static: GCC
 * exports a target_clones function's resolver whatever its visibility. */
static CM__CLONES double cm__dot8(const double *a, const double *x, int len) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= len; i += 8)
    for (int k = 0; k < 8; k++)
      s[k] += a[i + k] * x[i + k];
  double t = 0;
  for (; i < len; i++)
    t += a[i] * x[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + t;
}

/* Four dot products of the columns a, a + lda, a + 2 lda, a + 3 lda with x,
 * two partial sums each, combined in a fixed order. */
CM__CLONES static void cm__dot4x2(const double *a, int lda, const double *x,
                                  int len, double *out) {
  const double *c0 = a, *c1 = a + lda, *c2 = c1 + lda, *c3 = c2 + lda;
  double s0a = 0, s0b = 0, s1a = 0, s1b = 0, s2a = 0, s2b = 0, s3a = 0,
         s3b = 0;
  int i = 0;
  for (; i + 2 <= len; i += 2) {
    double xa = x[i], xb = x[i + 1];
    s0a += c0[i] * xa, s0b += c0[i + 1] * xb;
    s1a += c1[i] * xa, s1b += c1[i + 1] * xb;
    s2a += c2[i] * xa, s2b += c2[i + 1] * xb;
    s3a += c3[i] * xa, s3b += c3[i + 1] * xb;
  }
  if (i < len) {
    s0a += c0[i] * x[i], s1a += c1[i] * x[i];
    s2a += c2[i] * x[i], s3a += c3[i] * x[i];
  }
  out[0] = s0a + s0b, out[1] = s1a + s1b;
  out[2] = s2a + s2b, out[3] = s3a + s3b;
}

/* y = alpha A^T x + beta y, A m x n column-major (lda), unit strides. */
static void cm__gemv_t(int m, int n, double alpha, const double *a, int lda,
                       const double *x, double beta, double *y, int th) {
  int nch = (m + CM__B2_CHUNK - 1) / CM__B2_CHUNK;
  double *part = malloc(sizeof(double) * (size_t)nch * (size_t)n);
  if (!part) { /* no scratch: the same chunk sums in the same order,
                   serially, so the bits do not change */
    for (int j = 0; j < n;) {
      int w = j + 4 <= n ? 4 : 1;
      double s[4] = {0, 0, 0, 0}, p[4];
      for (int c = 0; c < nch; c++) {
        int i0 = c * CM__B2_CHUNK;
        int i1 = i0 + CM__B2_CHUNK < m ? i0 + CM__B2_CHUNK : m;
        if (w == 4)
          cm__dot4x2(a + (size_t)j * lda + i0, lda, x + i0, i1 - i0, p);
        else
          p[0] = cm__dot8(a + (size_t)j * lda + i0, x + i0, i1 - i0);
        for (int q = 0; q < w; q++)
          s[q] += p[q];
      }
      for (int q = 0; q < w; q++, j++)
        y[j] = beta == 0 ? alpha * s[q] : alpha * s[q] + beta * y[j];
    }
    return;
  }
#pragma omp parallel for schedule(static) num_threads(th) if (nch > 2)
  for (int c = 0; c < nch; c++) {
    int i0 = c * CM__B2_CHUNK, i1 = i0 + CM__B2_CHUNK < m ? i0 + CM__B2_CHUNK : m;
    int j = 0;
    for (; j + 4 <= n; j += 4) /* four columns a pass share the x loads */
      cm__dot4x2(a + (size_t)j * lda + i0, lda, x + i0, i1 - i0,
                 part + (size_t)c * n + j);
    for (; j < n; j++)
      part[(size_t)c * n + j] = cm__dot8(a + (size_t)j * lda + i0, x + i0,
                                         i1 - i0);
  }
  for (int j = 0; j < n; j++) {
    double s = 0;
    for (int c = 0; c < nch; c++)
      s += part[(size_t)c * n + j];
    y[j] = beta == 0 ? alpha * s : alpha * s + beta * y[j];
  }
  free(part);
}

/* Rows [0, len) of y = alpha A x + beta y (len <= CM__B2_CHUNK). */
CM__CLONES static void cm__gemv_n_rows(int len, int n, double alpha,
                                       const double *a, int lda,
                                       const double *x, double beta,
                                       double *y) {
  double acc[CM__B2_CHUNK];
  for (int i = 0; i < len; i++)
    acc[i] = 0;
  int j = 0;
  for (; j + 4 <= n; j += 4) { /* four columns a pass, fixed grouping */
    const double *c0 = a + (size_t)j * lda, *c1 = c0 + lda;
    const double *c2 = c1 + lda, *c3 = c2 + lda;
    double x0 = x[j], x1 = x[j + 1], x2 = x[j + 2], x3 = x[j + 3];
    for (int i = 0; i < len; i++)
      acc[i] += (c0[i] * x0 + c1[i] * x1) + (c2[i] * x2 + c3[i] * x3);
  }
  for (; j < n; j++) {
    const double *col = a + (size_t)j * lda;
    double xj = x[j];
    for (int i = 0; i < len; i++)
      acc[i] += col[i] * xj;
  }
  for (int i = 0; i < len; i++)
    y[i] = beta == 0 ? alpha * acc[i] : alpha * acc[i] + beta * y[i];
}

/* y = alpha A x + beta y: each y_i sums its row in column order. */
static void cm__gemv_n(int m, int n, double alpha, const double *a, int lda,
                       const double *x, double beta, double *y, int th) {
  int nch = (m + CM__B2_CHUNK - 1) / CM__B2_CHUNK;
#pragma omp parallel for schedule(static) num_threads(th) if (nch > 2)
  for (int c = 0; c < nch; c++) {
    int i0 = c * CM__B2_CHUNK, i1 = i0 + CM__B2_CHUNK < m ? i0 + CM__B2_CHUNK : m;
    cm__gemv_n_rows(i1 - i0, n, alpha, a + i0, lda, x, beta, y + i0);
  }
}

void dgemv_(const char *trans, const int *m, const int *n, const double *alpha,
            const double *a, const int *lda, const double *x, const int *incx,
            const double *beta, double *y, const int *incy) {
  char t = *trans;
  int tr = t == 'T' || t == 't' || t == 'C' || t == 'c';
  int fast = (tr || t == 'N' || t == 'n') && *incx == 1 && *incy == 1 &&
             *m >= CM__B2_MIN && *n >= 1 && *lda >= *m && *alpha != 0;
  if (!fast) {
    cblas_dgemv(CblasColMajor, tr ? CblasTrans : CblasNoTrans, *m, *n, *alpha,
                a, *lda, x, *incx, *beta, y, *incy);
    return;
  }
  int th = atomic_load(&cm__b2_threads);
  if (tr)
    cm__gemv_t(*m, *n, *alpha, a, *lda, x, *beta, y, th);
  else
    cm__gemv_n(*m, *n, *alpha, a, *lda, x, *beta, y, th);
}

void cm__gemv(int trans, int m, int n, double alpha, const double *a, int lda,
              const double *x, double beta, double *y, int threads) {
  if (n < 1)
    return;
  if (trans)
    cm__gemv_t(m, n, alpha, a, lda, x, beta, y, threads);
  else
    cm__gemv_n(m, n, alpha, a, lda, x, beta, y, threads);
}

void dcopy_(const int *n, const double *x, const int *incx, double *y,
            const int *incy) {
  if (*incx != 1 || *incy != 1 || *n < CM__B2_MIN) {
    cblas_dcopy(*n, x, *incx, y, *incy);
    return;
  }
  int nch = (*n + CM__B2_CHUNK - 1) / CM__B2_CHUNK;
#pragma omp parallel for schedule(static) num_threads(atomic_load(&cm__b2_threads))
  for (int c = 0; c < nch; c++) {
    int i0 = c * CM__B2_CHUNK;
    int len = i0 + CM__B2_CHUNK < *n ? CM__B2_CHUNK : *n - i0;
    memcpy(y + i0, x + i0, sizeof(double) * (size_t)len);
  }
}
