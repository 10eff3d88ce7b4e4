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

/* the kernels' row chunks on th threads */
// clang-format off
#define CM__B2_PAR _Pragma("omp parallel for schedule(static) num_threads(th) if (nch > 2)")
// clang-format on

/* Each kernel below is one text for two kinds of A, its double values and
 * float ones (each widened exactly, the sums in double: the deflation of a
 * Lanczos search, lanczos.c), the macro's T, and one body for the three
 * kernel sets (CM__KERNEL, internal.h). */

/* *out = the dot product of len entries with eight independent partial
 * sums combined in a fixed order: vectorisable and still deterministic. */
#define CM__B2_DOT8(NAME, T)                                                   \
  CM__KERNEL_BODY NAME##_body(const T *a, const double *x, int len,            \
                              double *out) {                                   \
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                    \
    int i = 0;                                                                 \
    for (; i + 8 <= len; i += 8)                                               \
      for (int k = 0; k < 8; k++)                                              \
        s[k] += (double)a[i + k] * x[i + k];                                   \
    double t = 0;                                                              \
    for (; i < len; i++)                                                       \
      t += (double)a[i] * x[i];                                                \
    *out =                                                                     \
        ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + t; \
  }                                                                            \
  CM__KERNEL(NAME, (const T *a, const double *x, int len, double *out),        \
             (a, x, len, out))

/* Four dot products of the columns a, a + lda, a + 2 lda, a + 3 lda with x,
 * two partial sums each (even and odd entries), combined in a fixed order.
 * The two sums of a column are the two lanes of a 16-byte vector: left to
 * itself, GCC vectorised the eight scalar sums across the columns under
 * AVX2, with a transpose of every load (1e6 x 8 doubles: 3.2 ms against
 * 2.0 for the baseline's code); the lanes give the same bits. */
typedef double cm__b2_v2 __attribute__((vector_size(16)));
#define CM__B2_DOT4X2(NAME, T)                                                 \
  CM__KERNEL_BODY NAME##_body(const T *a, int lda, const double *x, int len,   \
                              double *out) {                                   \
    const T *c[4] = {a, a + lda, a + 2 * (size_t)lda, a + 3 * (size_t)lda};    \
    cm__b2_v2 s[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};                         \
    int i = 0;                                                                 \
    for (; i + 2 <= len; i += 2) {                                             \
      cm__b2_v2 xv = {x[i], x[i + 1]};                                         \
      _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) s[k] +=              \
          (cm__b2_v2){(double)c[k][i], (double)c[k][i + 1]} * xv;              \
    }                                                                          \
    for (int k = 0; k < 4; k++) {                                              \
      double sa = s[k][0];                                                     \
      if (i < len)                                                             \
        sa += (double)c[k][i] * x[i];                                          \
      out[k] = sa + s[k][1];                                                   \
    }                                                                          \
  }                                                                            \
  CM__KERNEL(NAME,                                                             \
             (const T *a, int lda, const double *x, int len, double *out),     \
             (a, lda, x, len, out))

/* y = alpha A^T x + beta y, A m x n column-major (lda), unit strides. */
#define CM__B2_GEMV_T(NAME, T, DOT4X2, DOT8)                                   \
  static void NAME(int m, int n, double alpha, const T *a, int lda,            \
                   const double *x, double beta, double *y, int th) {          \
    int nch = (m + CM__B2_CHUNK - 1) / CM__B2_CHUNK;                           \
    double *part = malloc(sizeof(double) * (size_t)nch * (size_t)n);           \
    if (!part) { /* no scratch: the same chunk sums in the same order,         \
                    serially, so the bits do not change */                     \
      for (int j = 0; j < n;) {                                                \
        int w = j + 4 <= n ? 4 : 1;                                            \
        double s[4] = {0, 0, 0, 0}, p[4];                                      \
        for (int c = 0; c < nch; c++) {                                        \
          int i0 = c * CM__B2_CHUNK;                                           \
          int i1 = i0 + CM__B2_CHUNK < m ? i0 + CM__B2_CHUNK : m;              \
          if (w == 4)                                                          \
            DOT4X2(a + (size_t)j * lda + i0, lda, x + i0, i1 - i0, p);         \
          else                                                                 \
            DOT8(a + (size_t)j * lda + i0, x + i0, i1 - i0, p);                \
          for (int q = 0; q < w; q++)                                          \
            s[q] += p[q];                                                      \
        }                                                                      \
        for (int q = 0; q < w; q++, j++)                                       \
          y[j] = beta == 0 ? alpha * s[q] : alpha * s[q] + beta * y[j];        \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    CM__B2_PAR for (int c = 0; c < nch; c++) {                                 \
      int i0 = c * CM__B2_CHUNK,                                               \
          i1 = i0 + CM__B2_CHUNK < m ? i0 + CM__B2_CHUNK : m;                  \
      int j = 0;                                                               \
      for (; j + 4 <= n; j += 4) /* four columns a pass share the x loads */   \
        DOT4X2(a + (size_t)j * lda + i0, lda, x + i0, i1 - i0,                 \
               part + (size_t)c * n + j);                                      \
      for (; j < n; j++)                                                       \
        DOT8(a + (size_t)j * lda + i0, x + i0, i1 - i0,                        \
             part + (size_t)c * n + j);                                        \
    }                                                                          \
    for (int j = 0; j < n; j++) {                                              \
      double s = 0;                                                            \
      for (int c = 0; c < nch; c++)                                            \
        s += part[(size_t)c * n + j];                                          \
      y[j] = beta == 0 ? alpha * s : alpha * s + beta * y[j];                  \
    }                                                                          \
    free(part);                                                                \
  }

/* Rows [0, len) of y = alpha A x + beta y (len <= CM__B2_CHUNK). */
#define CM__B2_GEMV_N_ROWS(NAME, T)                                            \
  CM__KERNEL_BODY NAME##_body(int len, int n, double alpha, const T *a,        \
                              int lda, const double *x, double beta,           \
                              double *y) {                                     \
    double acc[CM__B2_CHUNK];                                                  \
    for (int i = 0; i < len; i++)                                              \
      acc[i] = 0;                                                              \
    int j = 0;                                                                 \
    for (; j + 4 <= n; j += 4) { /* four columns a pass, fixed grouping */     \
      const T *c0 = a + (size_t)j * lda, *c1 = c0 + lda;                       \
      const T *c2 = c1 + lda, *c3 = c2 + lda;                                  \
      double x0 = x[j], x1 = x[j + 1], x2 = x[j + 2], x3 = x[j + 3];           \
      for (int i = 0; i < len; i++)                                            \
        acc[i] += ((double)c0[i] * x0 + (double)c1[i] * x1) +                  \
                  ((double)c2[i] * x2 + (double)c3[i] * x3);                   \
    }                                                                          \
    for (; j < n; j++) {                                                       \
      const T *col = a + (size_t)j * lda;                                      \
      double xj = x[j];                                                        \
      for (int i = 0; i < len; i++)                                            \
        acc[i] += (double)col[i] * xj;                                         \
    }                                                                          \
    for (int i = 0; i < len; i++)                                              \
      y[i] = beta == 0 ? alpha * acc[i] : alpha * acc[i] + beta * y[i];        \
  }                                                                            \
  CM__KERNEL(NAME,                                                             \
             (int len, int n, double alpha, const T *a, int lda,               \
              const double *x, double beta, double *y),                        \
             (len, n, alpha, a, lda, x, beta, y))

/* y = alpha A x + beta y: each y_i sums its row in column order. */
#define CM__B2_GEMV_N(NAME, T, ROWS)                                           \
  static void NAME(int m, int n, double alpha, const T *a, int lda,            \
                   const double *x, double beta, double *y, int th) {          \
    int nch = (m + CM__B2_CHUNK - 1) / CM__B2_CHUNK;                           \
    CM__B2_PAR for (int c = 0; c < nch; c++) {                                 \
      int i0 = c * CM__B2_CHUNK,                                               \
          i1 = i0 + CM__B2_CHUNK < m ? i0 + CM__B2_CHUNK : m;                  \
      ROWS(i1 - i0, n, alpha, a + i0, lda, x, beta, y + i0);                   \
    }                                                                          \
  }

CM__B2_DOT8(cm__dot8, double)
CM__B2_DOT8(cm__dot8_32, float)

double cm__dot_lanes(const double *x, const double *y, int len) {
  double s;
  cm__dot8(x, y, len, &s);
  return s;
}
CM__B2_DOT4X2(cm__dot4x2, double)
CM__B2_DOT4X2(cm__dot4x2_32, float)
CM__B2_GEMV_T(cm__gemv_t, double, cm__dot4x2, cm__dot8)
CM__B2_GEMV_T(cm__gemv_t32, float, cm__dot4x2_32, cm__dot8_32)
CM__B2_GEMV_N_ROWS(cm__gemv_n_rows, double)
CM__B2_GEMV_N_ROWS(cm__gemv_n_rows32, float)
CM__B2_GEMV_N(cm__gemv_n, double, cm__gemv_n_rows)
CM__B2_GEMV_N(cm__gemv_n32, float, cm__gemv_n_rows32)

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
  cm__gemv(tr, *m, *n, *alpha, a, *lda, x, *beta, y,
           atomic_load(&cm__b2_threads));
}

/* cm__gemv and cm__gemv32 (internal.h) */
#define CM__B2_GEMV(NAME, T, GEMV_T, GEMV_N)                                   \
  void NAME(int trans, int m, int n, double alpha, const T *a, int lda,        \
            const double *x, double beta, double *y, int threads) {            \
    if (n < 1)                                                                 \
      return;                                                                  \
    if (trans)                                                                 \
      GEMV_T(m, n, alpha, a, lda, x, beta, y, threads);                        \
    else                                                                       \
      GEMV_N(m, n, alpha, a, lda, x, beta, y, threads);                        \
  }
CM__B2_GEMV(cm__gemv, double, cm__gemv_t, cm__gemv_n)
CM__B2_GEMV(cm__gemv32, float, cm__gemv_t32, cm__gemv_n32)

void dcopy_(const int *n, const double *x, const int *incx, double *y,
            const int *incy) {
  if (*incx != 1 || *incy != 1 || *n < CM__B2_MIN) {
    cblas_dcopy(*n, x, *incx, y, *incy);
    return;
  }
  int nch = (*n + CM__B2_CHUNK - 1) / CM__B2_CHUNK;
#pragma omp parallel for schedule(static)                                      \
    num_threads(atomic_load(&cm__b2_threads))
  for (int c = 0; c < nch; c++) {
    int i0 = c * CM__B2_CHUNK;
    int len = i0 + CM__B2_CHUNK < *n ? CM__B2_CHUNK : *n - i0;
    memcpy(y + i0, x + i0, sizeof(double) * (size_t)len);
  }
}
