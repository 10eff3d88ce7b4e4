/* bench_time.h: wall time and medians, for the bench programs. */
#ifndef CM_BENCH_TIME_H
#define CM_BENCH_TIME_H

#include <math.h>
#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double cm_bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* qsort's order of doubles, ascending. */
static inline int cm_bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of v[0..n) (sorted in place); NAN for n = 0. */
static inline double cm_bench_median(double *v, int n) {
  if (n <= 0)
    return NAN;
  qsort(v, (size_t)n, sizeof *v, cm_bench_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
