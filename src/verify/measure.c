/* measure.c: the frequency of a simulated signal, and the integrators' known
 * frequency shifts. The estimator: upward zero crossings (linear
 * interpolation) give a coarse angle per sample and a window of whole
 * periods; a least-squares fit of offset + e^{-sigma j}(A cos + B sin) over
 * that window, maximised over the angle by golden-section search inside half
 * a spectral main lobe, refines it (sigma from the RMS of the two window
 * halves, so RK4's numerical damping does not bias it). On a pure sampled
 * sinusoid the fit is exact up to rounding (cm__vmeasure_self_error reports
 * it). Not for deciding what a departure means (verify.c). */
#include "verify/verify_internal.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- least-squares projection for one angle -------------------------------
 */

/* Energy of the projection of s[i0..i1] on {1, e cos, e sin} (e = e^{-sigma
 * j}, j = i - centre): b^T G^-1 b. Larger is a better fit. */
static double cm__vproj(const double *s, long i0, long i1, double theta,
                        double sigma) {
  double jc = 0.5 * (double)(i0 + i1), j0 = (double)i0 - jc;
  double c = cos(theta * j0), sn = sin(theta * j0), e = exp(-sigma * j0);
  double cd = cos(theta), sd = sin(theta), ed = exp(-sigma);
  double G[6] = {0}, b[3] = {0}; /* G: 11 12 13 22 23 33 */
  for (long i = i0; i <= i1; i++) {
    double u = e * c, v = e * sn, x = s[i];
    G[0] += 1, G[1] += u, G[2] += v, G[3] += u * u, G[4] += u * v;
    G[5] += v * v;
    b[0] += x, b[1] += x * u, b[2] += x * v;
    double cn = c * cd - sn * sd; /* rotate by theta */
    sn = sn * cd + c * sd, c = cn, e *= ed;
  }
  /* solve G y = b by Cholesky (3x3) */
  double l11 = sqrt(G[0]), l21 = G[1] / l11, l31 = G[2] / l11;
  double l22 = sqrt(fmax(G[3] - l21 * l21, 1e-300));
  double l32 = (G[4] - l31 * l21) / l22;
  double l33 = sqrt(fmax(G[5] - l31 * l31 - l32 * l32, 1e-300));
  double y1 = b[0] / l11, y2 = (b[1] - l21 * y1) / l22,
         y3 = (b[2] - l31 * y1 - l32 * y2) / l33;
  return y1 * y1 + y2 * y2 + y3 * y3; /* b^T G^-1 b = |L^-1 b|^2 */
}

/* Golden-section maximum of the projection over the angle (which = 0) or
 * the decay (which = 1) in [lo, hi], the other held. */
static double cm__vgolden(const double *s, long i0, long i1, double th,
                          double sigma, double lo, double hi, int which) {
  const double gr = 0.5 * (sqrt(5.0) - 1);
  double x1 = hi - gr * (hi - lo), x2 = lo + gr * (hi - lo);
  double f1 =
      which ? cm__vproj(s, i0, i1, th, x1) : cm__vproj(s, i0, i1, x1, sigma);
  double f2 =
      which ? cm__vproj(s, i0, i1, th, x2) : cm__vproj(s, i0, i1, x2, sigma);
  double scale = fmax(fabs(lo), fabs(hi));
  for (int it = 0; it < 200 && hi - lo > 1e-15 * scale; it++) {
    if (f1 > f2) {
      hi = x2, x2 = x1, f2 = f1;
      x1 = hi - gr * (hi - lo);
      f1 = which ? cm__vproj(s, i0, i1, th, x1)
                 : cm__vproj(s, i0, i1, x1, sigma);
    } else {
      lo = x1, x1 = x2, f1 = f2;
      x2 = lo + gr * (hi - lo);
      f2 = which ? cm__vproj(s, i0, i1, th, x2)
                 : cm__vproj(s, i0, i1, x2, sigma);
    }
  }
  return 0.5 * (lo + hi);
}

/* ---- estimator -------------------------------------------------------------
 */

int cm__vmeasure(const double *s, long n, double *theta, double *periods) {
  double sigma;
  return cm__vmeasure_decay(s, n, theta, &sigma, periods);
}

int cm__vmeasure_decay(const double *s, long n, double *theta,
                       double *sigma_out, double *periods) {
  *theta = NAN, *sigma_out = NAN;
  if (periods)
    *periods = 0;
  if (n < 8)
    return CM_NUMERIC;
  /* ---- coarse: upward zero crossings of the mean-removed signal ---- */
  double mean = 0;
  for (long i = 0; i < n; i++)
    mean += s[i];
  mean /= (double)n;
  long K = 0;
  double t1 = 0, tK = 0;
  for (long i = 0; i + 1 < n; i++) {
    double a = s[i] - mean, b = s[i + 1] - mean;
    if (a < 0 && b >= 0) {
      double t = (double)i + a / (a - b);
      if (K == 0)
        t1 = t;
      tK = t, K++;
    }
  }
  if (K < 3 || !(tK > t1))
    return CM_NUMERIC;
  double th0 = 2 * M_PI * (double)(K - 1) / (tK - t1);
  long i0 = (long)ceil(t1), i1 = (long)floor(tK);
  long m = i1 - i0 + 1;
  if (m < 8)
    return CM_NUMERIC;
  /* ---- decay from the RMS of the two halves ---- */
  double r1 = 0, r2 = 0;
  long half = m / 2;
  for (long i = i0; i < i0 + half; i++)
    r1 += (s[i] - mean) * (s[i] - mean);
  for (long i = i0 + half; i < i0 + 2 * half; i++)
    r2 += (s[i] - mean) * (s[i] - mean);
  double sigma = (r1 > 0 && r2 > 0) ? 0.5 * log(r1 / r2) / (double)half : 0;
  if (!isfinite(sigma))
    sigma = 0;
  /* ---- refine: golden section on the angle inside half a lobe, then on
   * the decay, twice ---- */
  double th = th0, dth = M_PI / (double)m;
  double dsg = fmax(fabs(sigma), 1.0 / (double)m);
  for (int round = 0; round < 2; round++) {
    th = cm__vgolden(s, i0, i1, th, sigma, fmax(th - dth, 1e-12),
                     fmin(th + dth, M_PI), 0);
    sigma = cm__vgolden(s, i0, i1, th, sigma, sigma - dsg, sigma + dsg, 1);
    dth *= 0.25, dsg *= 0.25;
  }
  th = cm__vgolden(s, i0, i1, th, sigma, fmax(th - dth, 1e-12),
                   fmin(th + dth, M_PI), 0);
  *theta = th, *sigma_out = sigma;
  if (periods)
    *periods = (double)(K - 1);
  return CM_OK;
}

double cm__vmeasure_self_error(double theta, long n) {
  double *s = malloc((size_t)(n > 0 ? n : 1) * sizeof *s);
  if (!s)
    return NAN;
  for (long i = 0; i < n; i++)
    s[i] = cos(theta * (double)i + 0.3);
  double est, per;
  int st = cm__vmeasure(s, n, &est, &per);
  free(s);
  return st ? NAN : fabs(est - theta) / theta;
}

/* ---- integrator shifts
 * ------------------------------------------------------- */

/* Continuous angle of RK4's amplification g(i Omega) for Omega in [0, sqrt 6]
 * (where Im g > 0). */
static double cm__vrk4_angle(double W) {
  double re = 1 - W * W / 2 + W * W * W * W / 24, im = W - W * W * W / 6;
  return atan2(im, re);
}

double cm__vshift(int integ, double omega, double h) {
  double W = omega * h;
  if (integ == CM__VCD)
    return W <= 2 ? 2 * asin(W / 2) : NAN;
  return W < sqrt(6.0) ? cm__vrk4_angle(W) : NAN;
}

double cm__vunshift(int integ, double theta, double h) {
  if (!(theta > 0) || !(h > 0) || theta >= M_PI)
    return NAN;
  if (integ == CM__VCD)
    return 2 * sin(theta / 2) / h; /* inverse of (2/h) asin(h omega / 2) */
  double lo = 0, hi = sqrt(6.0);   /* RK4: bisect the monotone angle */
  for (int it = 0; it < 200; it++) {
    double mid = 0.5 * (lo + hi);
    if (cm__vrk4_angle(mid) < theta)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi) / h;
}

/* RK4's amplification g(z) = 1 + z + z^2/2 + z^3/6 + z^4/24 and g'. */
static double complex cm__vrk4_g(double complex z, double complex *dg) {
  *dg = 1 + z * (1 + z * (0.5 + z / 6.0));
  return 1 + z * (1 + z * (0.5 + z * (1 / 6.0 + z / 24.0)));
}

int cm__vunshift_damped(int integ, double theta, double sigma, double h,
                        double *omega, double *zeta) {
  *omega = *zeta = NAN;
  if (!(theta > 0) || theta >= M_PI || !(h > 0) || !isfinite(sigma))
    return -1;
  double complex mu = exp(-sigma) * cexp(I * theta), z;
  if (integ == CM__VCD) {
    /* mu^2 - (2 - 2 zeta W - W^2) mu + (1 - 2 zeta W) = 0, W = omega h:
     * |1 - mu|^2 = W^2 and |mu|^2 = 1 - 2 zeta W */
    double W = cabs(1 - mu);
    *omega = W / h;
    *zeta = W > 0 ? (1 - exp(-2 * sigma)) / (2 * W) : NAN;
    return W > 0 ? 0 : -1;
  }
  /* RK4: Newton on g(z) = mu from the undamped branch's i W */
  double W0 = cm__vunshift(integ, theta, h) * h;
  if (!isfinite(W0))
    return -1;
  z = I * W0 - sigma;
  for (int it = 0; it < 50; it++) {
    double complex dg, r = cm__vrk4_g(z, &dg) - mu;
    if (cabs(dg) == 0)
      return -1;
    double complex dz = r / dg;
    z -= dz;
    if (cabs(dz) <= 1e-15 * cabs(z))
      break;
  }
  double W = cabs(z); /* h lambda = h omega (-zeta + i sqrt(1 - zeta^2)) */
  if (!(W > 0) || !isfinite(W))
    return -1;
  *omega = W / h;
  *zeta = -creal(z) / W;
  return 0;
}
