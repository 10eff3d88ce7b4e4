/* bench_time.h: wall time, medians and the triad bandwidth, for the bench
 * programs. */
#ifndef CM_BENCH_TIME_H
#define CM_BENCH_TIME_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
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

/* Seconds a GiB to write n bytes of new anonymous memory (2 MiB-aligned),
 * one byte a 4 KiB page (the kernel clears each page at its first write),
 * from `threads` threads, the memory advised huge pages first (huge != 0:
 * one fault a 2 MiB, where the kernel allows them, as the library's large
 * buffers) or small ones; -1 without memory. */
static inline double cm_bench_fresh_gib(size_t n, int threads, int huge) {
  const size_t big = (size_t)2 << 20;
  char *m = mmap(NULL, n + big, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return -1;
  char *p = (char *)(((uintptr_t)m + big - 1) & ~(uintptr_t)(big - 1));
#ifdef MADV_HUGEPAGE
  (void)madvise(p, n, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#else
  (void)huge;
#endif
  double t0 = cm_bench_now();
#pragma omp parallel for schedule(static) num_threads(threads)
  for (size_t i = 0; i < n; i += 4096)
    p[i] = 1;
  double t = cm_bench_now() - t0;
  munmap(m, n + big);
  return t * 1073741824.0 / (double)n;
}

#endif
