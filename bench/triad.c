/* triad.c: the STREAM-style triad bandwidth, printed with the machine
 * (lscpu's model and caches) so that a table of timings measured beside it
 * can be read on another CPU. Used by bench/step_vs_full.sh.
 *
 *   build/bench/triad [--threads T] [--mib M] [--reps R]
 *
 * a = b + 3 c over three arrays of M MiB each (default 128, far past any
 * last-level cache), T threads (2), median of R runs (10), in GB/s
 * counting 3 x 8 bytes per element (write-allocate not counted, as in
 * STREAM). */
#include "bench_machine.h"
#include "bench_time.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  int threads = 2, reps = 10;
  long mib = 128;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--threads") && v)
      threads = atoi(v), i++;
    else if (!strcmp(argv[i], "--mib") && v)
      mib = atol(v), i++;
    else if (!strcmp(argv[i], "--reps") && v)
      reps = atoi(v), i++;
    else {
      fprintf(stderr, "usage: triad [--threads T] [--mib M] [--reps R]\n");
      return 2;
    }
  }
  if (threads < 1 || threads > 1024 || mib < 1 || mib > 65536 || reps < 1 ||
      reps > 100) {
    fprintf(stderr, "triad: --threads 1..1024, --mib 1..65536, --reps "
                    "1..100\n");
    return 2;
  }
  size_t n = (size_t)mib * 1024 * 1024 / sizeof(double);
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b),
         *c = malloc(n * sizeof *c), t[100];
  if (!a || !b || !c) {
    fprintf(stderr, "triad: out of memory for 3 x %ld MiB\n", mib);
    free(a), free(b), free(c);
    return 1;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (size_t i = 0; i < n; i++)
    a[i] = 0, b[i] = 1.0, c[i] = 2.0; /* first touch by the same threads */
  for (int r = 0; r < reps; r++) {
    double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t i = 0; i < n; i++)
      a[i] = b[i] + 3.0 * c[i];
    t[r] = omp_get_wtime() - t0;
  }
  double med = cm_bench_median(t, reps); /* sorts t: t[0] is the best */
  cm_bench_machine(stdout);
  printf("triad: %.1f GB/s (median of %d, best %.1f; %d threads, 3 x %ld "
         "MiB; check %g)\n",
         3.0 * 8.0 * (double)n / med / 1e9, reps,
         3.0 * 8.0 * (double)n / t[0] / 1e9, threads, mib, a[n / 2]);
  free(a), free(b), free(c);
  return 0;
}
