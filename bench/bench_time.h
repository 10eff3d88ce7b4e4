/* bench_time.h: wall time, medians and the triad bandwidth, for the bench
 * programs. */
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

/* The STREAM-style triad a = b + 3 c over n doubles on `threads` threads,
 * in GB/s (3 x 8 bytes an element, as STREAM counts), median of reps (at
 * most 64) after a first touch by the same threads; NAN without memory. */
static inline double cm_bench_triad_gbs(size_t n, int threads, int reps) {
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b),
         *c = malloc(n * sizeof *c), t[64];
  if (!a || !b || !c) {
    free(a), free(b), free(c);
    return NAN;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (size_t i = 0; i < n; i++)
    a[i] = 0, b[i] = 1.0, c[i] = 2.0;
  reps = reps > 64 ? 64 : reps;
  for (int r = 0; r < reps; r++) {
    double t0 = cm_bench_now();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t i = 0; i < n; i++)
      a[i] = b[i] + 3.0 * c[i];
    t[r] = cm_bench_now() - t0;
  }
  volatile double sink = a[n / 2];
  (void)sink;
  free(a), free(b), free(c);
  return 3.0 * 8.0 * (double)n / cm_bench_median(t, reps) / 1e9;
}

#endif
