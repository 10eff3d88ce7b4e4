/* test_small_eig.c: dense.c's own small dense routines (cm__syevr_top up to
 * CM__SMALL_N, cm__chol_lower, cm__inv_lower, cm__syrk_small) against
 * LAPACK and CBLAS, and the reason they exist: the same report bits
 * whichever kernels OpenBLAS picks for the CPU (OPENBLAS_CORETYPE). */
#include "cmodes.h"
#include "cmtest.h"
#include "internal.h"
#include "spectrum/spectrum_internal.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A = Q diag(lam) Q^T, Q from the QR of a seeded Gaussian matrix (n x n,
 * column-major, both triangles) */
static double *se_matrix(int n, const double *lam, uint64_t seed) {
  double *Q = malloc(sizeof(double) * (size_t)n * n);
  double *A = calloc((size_t)n * n, sizeof(double));
  double *tau = malloc(sizeof(double) * (size_t)n);
  for (int i = 0; i < n * n; i++)
    Q[i] = cm__gauss(seed, (uint64_t)i);
  LAPACKE_dgeqrf(LAPACK_COL_MAJOR, n, n, Q, n, tau);
  LAPACKE_dorgqr(LAPACK_COL_MAJOR, n, n, n, Q, n, tau);
  for (int c = 0; c < n; c++)
    for (int r = 0; r < n; r++)
      for (int p = 0; p < n; p++)
        A[(size_t)c * n + r] +=
            Q[(size_t)p * n + r] * lam[p] * Q[(size_t)p * n + c];
  free(Q), free(tau);
  return A;
}

/* cm__syevr_top's top k pairs of A against LAPACK's dsyevr (values to
 * 1e-13 of ||A||; vectors: residual and orthonormality to 1e-12) */
static void se_check(int n, const double *A, int k, const char *what) {
  double *B = malloc(sizeof(double) * (size_t)n * n);
  double *w = malloc(sizeof(double) * (size_t)n), *wl = malloc(sizeof *wl * n);
  double *Z = malloc(sizeof(double) * (size_t)n * n);
  double *Zl = malloc(sizeof(double) * (size_t)n * n);
  int *isz = malloc(sizeof(int) * 2 * (size_t)n), m = 0;
  memcpy(B, A, sizeof(double) * (size_t)n * n);
  int found = cm__syevr_top(n, B, k, w, Z);
  CMT_EQ_INT(found, k < n ? k : n);
  memcpy(B, A, sizeof(double) * (size_t)n * n);
  CMT_EQ_INT(LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'A', 'U', n, B, n, 0, 0, 0,
                            0, 0.0, &m, wl, Zl, n, isz),
             0);
  double an = fmax(fabs(wl[0]), fabs(wl[n - 1])), worst = 0, orth = 0;
  for (int i = 0; i < found; i++) {
    worst = fmax(worst, fabs(w[i] - wl[n - found + i]) / an);
    const double *z = Z + (size_t)i * n;
    double r2 = 0;
    for (int r = 0; r < n; r++) {
      double t = -w[i] * z[r];
      for (int c = 0; c < n; c++)
        t += A[(size_t)c * n + r] * z[c];
      r2 += t * t;
    }
    worst = fmax(worst, sqrt(r2) / an);
    for (int j = 0; j <= i; j++)
      orth = fmax(orth, fabs(cblas_ddot(n, z, 1, Z + (size_t)j * n, 1) -
                             (i == j ? 1.0 : 0.0)));
  }
  if (!(worst <= 1e-13 * (n > 10 ? n / 10.0 : 1)) || !(orth <= 1e-12))
    CMT_FAIL("%s (n %d, k %d): value or residual %.3g of ||A||, "
             "orthonormality %.3g",
             what, n, k, worst, orth);
  free(B), free(w), free(wl), free(Z), free(Zl), free(isz);
}

CM_TEST(small_eig_against_lapack) {
  int sizes[] = {1, 2, 3, 29, 75, 200, CM__SMALL_N, CM__SMALL_N + 1};
  for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
    int n = sizes[t];
    double *lam = malloc(sizeof(double) * (size_t)n);
    /* distinct values over 12 decades with signs, then the fleet's kind:
     * a few values repeated many times and zeros (dstemr gives up on
     * those; the QL fallback answers) */
    for (int i = 0; i < n; i++)
      lam[i] = (i % 3 ? 1 : -1) * pow(10.0, -12.0 * i / (n > 1 ? n - 1 : 1));
    double *A = se_matrix(n, lam, 11 + (uint64_t)n);
    se_check(n, A, n, "all pairs, spread values");
    se_check(n, A, n < 6 ? 1 : 6, "top 6, spread values");
    free(A);
    for (int i = 0; i < n; i++)
      lam[i] = i < n / 4 ? 0 : (double)(1 + i % 3);
    A = se_matrix(n, lam, 29 + (uint64_t)n);
    se_check(n, A, n, "all pairs, repeated values");
    se_check(n, A, n < 6 ? 1 : 6, "top 6, repeated values");
    free(A), free(lam);
  }
}

CM_TEST(small_chol_inverse_against_lapack) {
  int sizes[] = {1, 2, 7, 48, 130};
  for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
    int n = sizes[t], ld = n + 1;
    double *lam = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++)
      lam[i] = pow(10.0, -6.0 * i / (n > 1 ? n - 1 : 1));
    double *A = se_matrix(n, lam, 7 + (uint64_t)n);
    double *G = calloc((size_t)ld * ld, sizeof(double));
    double *Gl = malloc(sizeof(double) * (size_t)n * n);
    double *X = malloc(sizeof(double) * (size_t)n * n);
    for (int c = 0; c < n; c++)
      for (int r = 0; r < n; r++)
        G[(size_t)c * ld + r] = Gl[(size_t)c * n + r] = A[(size_t)c * n + r];
    G[(size_t)n * ld + n - 1] = 42; /* outside the block: left alone */
    CMT_EQ_INT(cm__chol_lower(n, G, ld), 0);
    CMT_EQ_INT(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, Gl, n), 0);
    CMT_TRUE(G[(size_t)n * ld + n - 1] == 42);
    double dl = 0, di = 0, xmax = 0;
    for (int c = 0; c < n; c++)
      for (int r = c; r < n; r++)
        dl = fmax(dl, fabs(G[(size_t)c * ld + r] - Gl[(size_t)c * n + r]));
    cm__inv_lower(n, G, ld, X, n);
    CMT_EQ_INT(LAPACKE_dtrtri(LAPACK_COL_MAJOR, 'L', 'N', n, Gl, n), 0);
    for (int c = 0; c < n; c++)
      for (int r = 0; r < n; r++)
        di = fmax(di, fabs(X[(size_t)c * n + r] -
                           (r >= c ? Gl[(size_t)c * n + r] : 0.0))),
        xmax = fmax(xmax, fabs(X[(size_t)c * n + r]));
    /* A's condition number is 1e6: L's, 1e3. Both routines are backward
     * stable, so they may differ by about eps cond(L) relative to the
     * largest entry (measured: 2e-14 for L, 3e-12 of max |L^-1|) */
    if (!(dl <= 1e-12) || !(di <= 1e-10 * xmax))
      CMT_FAIL("n %d: Cholesky differs by %.3g, inverse by %.3g", n, dl, di);
    /* not positive definite: the column named */
    G[0] = -1;
    CMT_EQ_INT(cm__chol_lower(n, G, ld), 1);
    free(lam), free(A), free(G), free(Gl), free(X);
  }
}

CM_TEST(small_syrk_against_cblas) {
  int m = 37, n = 23;
  double *Bd = malloc(sizeof(double) * (size_t)m * n);
  for (int i = 0; i < m * n; i++)
    Bd[i] = cm__gauss(5, (uint64_t)i);
  for (int use_S = 0; use_S < 2; use_S++) {
    int N = use_S ? m : n;
    double *A = calloc((size_t)N * N, sizeof(double));
    double *Ac = calloc((size_t)N * N, sizeof(double));
    CMT_EQ_INT(cm__syrk_small(use_S, m, n, Bd, A), 0);
    cblas_dsyrk(CblasColMajor, CblasUpper, use_S ? CblasNoTrans : CblasTrans, N,
                use_S ? n : m, 1.0, Bd, m, 0.0, Ac, N);
    double d = 0;
    for (int c = 0; c < N; c++)
      for (int r = 0; r <= c; r++)
        d = fmax(d, fabs(A[(size_t)c * N + r] - Ac[(size_t)c * N + r]));
    CMT_LE(d, 1e-13);
    free(A), free(Ac);
  }
  free(Bd);
}

/* The JSON report of `cmodes analyze FILE -k K` with OPENBLAS_CORETYPE set
 * to ct (NULL: OpenBLAS's own pick for this CPU) */
static char *se_report(const char *ct, const char *file, int k) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "cd %s && %s%s%s %s analyze %s -k %d --json "
           "--no-timings 2>&1",
           CM_SOURCE_DIR, ct ? "OPENBLAS_CORETYPE=" : "", ct ? ct : "",
           ct ? "" : "unset OPENBLAS_CORETYPE;", CM_BINARY, file, k);
  int code = -1;
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  return out;
}

/* Prescott (SSE3) and Nehalem (SSE4.2) kernels run on every x86-64 CPU
 * this project meets; the default pick is the CPU's own (Haswell on a Zen
 * 5, SkylakeX on a Zen 4). The LAMMPS deck restarts its Lanczos solves
 * (projected problems, Cholesky QR) and data/fleet.json's components are
 * dense, with repeated eigenvalues. Before dense.c's own routines the
 * deck took 333 or 334 products by the pick, and the fleet's component
 * values differed in their last bits. */
CM_TEST(small_eig_same_bits_across_cores) {
  char deck[64];
  if (cmt_lammps_deck(deck))
    return;
  const char *files[] = {deck, "data/fleet.json"};
  const char *cores[] = {"Prescott", "Nehalem"};
  for (int f = 0; f < 2; f++) {
    char *want = se_report(NULL, files[f], 3);
    CMT_TRUE(want && strstr(want, "\"matvecs\""));
    for (int c = 0; want && c < 2; c++) {
      char *got = se_report(cores[c], files[f], 3);
      if (!got || strcmp(want, got))
        CMT_FAIL("%s: the report with OPENBLAS_CORETYPE=%s differs from "
                 "the CPU's own pick",
                 files[f], cores[c]);
      free(got);
    }
    free(want);
  }
  unlink(deck);
}
