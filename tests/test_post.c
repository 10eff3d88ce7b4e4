/* test_post.c: bound.c's a posteriori bound on lambda_max (the Krylov
 * polynomials of a plain Lanczos run) against a dense truth. The matrix
 * A = H diag(d) H (H a Householder reflection, so A is dense and its top
 * eigenvector u = H e_0 is known exactly) and the start b = c u + (the
 * rest, Gaussian, orthogonal to u) with a chosen |u . b| = c:
 *
 *  - c above the certificate's eta (the event the bound excludes): the
 *    bound is at least lambda_max, for every run length (a deterministic
 *    fact, not a probability: |u . b| <= 1 / p_k(lambda)), and after
 *    enough steps within 4% of it (the point of it);
 *  - c = 0 (b exactly orthogonal to u, which never enters the run): the
 *    bound falls below lambda_max, so the check above can fail and eta
 *    is what the bound rests on. */
#include "cmtest.h"
#include "spectrum/spectrum_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PN = 300 };

static double post_gauss(unsigned *s) { /* Box-Muller on an LCG */
  double u1, u2;
  do {
    *s = *s * 1664525u + 1013904223u;
    u1 = (*s >> 8) / 16777216.0;
  } while (u1 <= 0);
  *s = *s * 1664525u + 1013904223u;
  u2 = (*s >> 8) / 16777216.0;
  return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

/* A (PN x PN, row-major) = H diag(d) H with H = I - 2 h h^T; u = H e_0.
 * Returns ||A||_F = || |A| ||_F >= || |A| ||_2 (the bound's g). */
static double post_matrix(const double *d, double *A, double *u, unsigned *s) {
  double h[PN], nh = 0;
  for (int i = 0; i < PN; i++)
    h[i] = post_gauss(s), nh += h[i] * h[i];
  for (int i = 0; i < PN; i++)
    h[i] /= sqrt(nh);
  for (int i = 0; i < PN; i++)
    for (int j = 0; j < PN; j++) {
      double t = 0; /* (H D H)_ij = sum_l H_il d_l H_lj */
      for (int l = 0; l < PN; l++)
        t += ((i == l) - 2 * h[i] * h[l]) * d[l] * ((l == j) - 2 * h[l] * h[j]);
      A[(size_t)i * PN + j] = t;
    }
  for (int i = 0; i < PN; i++)
    u[i] = (i == 0) - 2 * h[i] * h[0];
  double f = 0;
  for (int i = 0; i < PN * PN; i++)
    f += A[i] * A[i];
  return sqrt(f);
}

/* k plain Lanczos steps from b (unit): alpha into a, beta into b_out (the
 * last one too, the residual of step k). */
static void post_lanczos(const double *A, const double *b, int k, double *a,
                         double *bo) {
  double v[PN], vp[PN] = {0}, w[PN], bp = 0;
  memcpy(v, b, sizeof v);
  for (int j = 0; j < k; j++) {
    for (int i = 0; i < PN; i++) {
      double t = 0;
      for (int l = 0; l < PN; l++)
        t += A[(size_t)i * PN + l] * v[l];
      w[i] = t - bp * vp[i];
    }
    double al = 0, nw = 0;
    for (int i = 0; i < PN; i++)
      al += v[i] * w[i];
    for (int i = 0; i < PN; i++)
      w[i] -= al * v[i], nw += w[i] * w[i];
    a[j] = al, bo[j] = bp = sqrt(nw);
    for (int i = 0; i < PN; i++)
      vp[i] = v[i], v[i] = w[i] / bp;
  }
}

/* The bound after k steps from a start with |u . b| = c. */
static double post_bound(const double *A, const double *u, double c, int k,
                         double gabs, unsigned *s, double *theta) {
  double b[PN], ub = 0, a[PN], be[PN], tn = 0;
  for (int i = 0; i < PN; i++)
    b[i] = post_gauss(s);
  for (int i = 0; i < PN; i++)
    ub += u[i] * b[i];
  double nb = 0;
  for (int i = 0; i < PN; i++)
    b[i] -= ub * u[i], nb += b[i] * b[i];
  for (int i = 0; i < PN; i++)
    b[i] = c * u[i] + sqrt(1 - c * c) * b[i] / sqrt(nb);
  post_lanczos(A, b, k, a, be);
  *theta = cm__kw_top(k, a, be, &tn);
  cm__post_t q;
  if (!cm__post_init(&q, PN, 1e-9, k, a, be, NULL, 0, 0, 0, *theta, tn, PN,
                     gabs))
    return INFINITY;
  return cm__post_upper(&q, 16 * *theta);
}

CM_TEST(post_bound_dense_truth) {
  unsigned s = 12345;
  double d[PN], *A = malloc(sizeof(double) * PN * PN), u[PN];
  if (!A)
    return;
  /* a top value 1 over a bulk in [0, 0.85] (a separated top, as on piles) */
  d[0] = 1;
  for (int i = 1; i < PN; i++)
    d[i] = 0.85 * (i - 1) / (PN - 2.0);
  double gabs = post_matrix(d, A, u, &s);
  double eta = cm__post_eta(PN, 1e-9), theta = 0;
  CMT_TRUE(eta > 1e-12 && eta < 1e-10);
  const double cs[] = {1e-9, 1e-6, 1e-3, 0.1};
  for (int ci = 0; ci < 4; ci++)
    for (int k = 5; k <= 60; k += 5) {
      double up = post_bound(A, u, cs[ci], k, gabs, &s, &theta);
      CMT_LE(1.0, up); /* lambda_max = 1 */
      CMT_LE(theta, 1.0 + 1e-12);
      if (k == 60 && cs[ci] >= 1e-6)
        CMT_LE(up, 1.04); /* within the target */
    }
  /* u never enters: the Krylov space sees a top of 0.85 only */
  double up = post_bound(A, u, 0, 40, gabs, &s, &theta);
  CMT_TRUE(theta < 0.851);
  CMT_TRUE(up < 0.95);
  free(A);
}

/* A clustered top (20 values in [0.98, 1]): the bound holds at every
 * length, and stays above the theta it comes from. */
CM_TEST(post_bound_clustered_top) {
  unsigned s = 777;
  double d[PN], *A = malloc(sizeof(double) * PN * PN), u[PN];
  if (!A)
    return;
  d[0] = 1;
  for (int i = 1; i < PN; i++)
    d[i] = i < 20 ? 1 - 0.001 * i : 0.9 * (i - 20) / (PN - 21.0);
  double gabs = post_matrix(d, A, u, &s), theta = 0;
  for (int k = 10; k <= 80; k += 10) {
    double up = post_bound(A, u, 1e-4, k, gabs, &s, &theta);
    CMT_LE(1.0, up);
    CMT_LE(theta, up);
  }
  free(A);
}
