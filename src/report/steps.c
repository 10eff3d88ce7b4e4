/* steps.c: stable and accurate time steps from omega (rad/s). The stability
 * limits are those of each integrator on the undamped (or modally damped)
 * oscillator, Omega = h omega; see docs/math.md. */
#include "internal.h"

#include <math.h>

double cm_step_central_difference(double omega, double zeta) {
  if (!(omega > 0))
    return NAN;
  return 2.0 * (sqrt(1.0 + zeta * zeta) - zeta) / omega; /* Omega < 2(...) */
}

double cm_step_rk3(double omega) {
  return omega > 0 ? sqrt(3.0) / omega : NAN; /* Omega <= sqrt 3 */
}

double cm_step_rk4(double omega) {
  return omega > 0 ? 2.0 * sqrt(2.0) / omega : NAN; /* Omega <= 2 sqrt 2 */
}

double cm_step_newmark(double omega, double gamma, double beta) {
  if (!(omega > 0) || 2.0 * beta >= gamma)
    return NAN; /* unconditionally stable */
  return 1.0 / (omega * sqrt(0.5 * gamma - beta));
}

/* Central difference reproduces omega_h = (2/h) asin(h omega / 2): the
 * relative error f(Omega) = (2/Omega) asin(Omega/2) - 1 grows with Omega up
 * to pi/2 - 1 at the stability limit; solve f = tol by bisection. */
double cm_step_accuracy(double omega, double tol) {
  if (!(omega > 0) || !(tol > 0))
    return NAN;
  if (tol >= M_PI / 2 - 1)
    return 2.0 / omega;
  double lo = 0, hi = 2;
  for (int it = 0; it < 200 && hi - lo > 1e-15; it++) {
    double mid = 0.5 * (lo + hi);
    double f = (2.0 / mid) * asin(0.5 * mid) - 1.0;
    if (f > tol)
      hi = mid;
    else
      lo = mid;
  }
  return lo / omega;
}
