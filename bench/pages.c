/* What fresh memory costs, in 4 KiB and in 2 MiB pages, and how that
 * depends on what the process freed just before (docs/performance.md,
 * issue 19, session 22; the library's own choice is cm__huge_pages in
 * src/core/util.c).
 *
 *   pages [--mib M] [--idle S] [--gap S] [SEQUENCE ...]
 *
 * Each SEQUENCE is a word of 'h' (a mapping advised huge pages) and '4'
 * (advised small pages): for each letter, M MiB (default 500) are mapped,
 * written one byte a 4 KiB page, timed and unmapped, S seconds (--gap,
 * default 0) apart, all in this one process; before each sequence it
 * sleeps --idle seconds (default 6, so that memory freed before is
 * handed back to a VM's host). Prints one row a sequence: seconds a GiB
 * of each round. Default sequences: hhhhhh 444444 4h4h4h h4h4h4. */
#include "bench_time.h"

#include <stdio.h>
#include <string.h>

static void pause_s(double s) {
  if (s <= 0)
    return;
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&t, NULL);
}

static void usage(void) {
  fprintf(stderr, "usage: pages [--mib M] [--idle S] [--gap S] "
                  "[SEQUENCE of h and 4 ...]\n");
  exit(2);
}

int main(int argc, char **argv) {
  double mib = 500, idle = 6, gap = 0;
  int first = 1;
  for (; first < argc && !strncmp(argv[first], "--", 2); first += 2) {
    if (first + 1 >= argc)
      usage();
    char *end;
    double v = strtod(argv[first + 1], &end);
    if (*end || v < 0)
      usage();
    if (!strcmp(argv[first], "--mib") && v >= 2)
      mib = v;
    else if (!strcmp(argv[first], "--idle"))
      idle = v;
    else if (!strcmp(argv[first], "--gap"))
      gap = v;
    else
      usage();
  }
  static char *defaults[] = {"hhhhhh", "444444", "4h4h4h", "h4h4h4"};
  char **seq = first < argc ? argv + first : defaults;
  int nseq = first < argc ? argc - first : 4;
  for (int s = 0; s < nseq; s++)
    if (strspn(seq[s], "h4") != strlen(seq[s]) || !*seq[s])
      usage();
  size_t n = (size_t)(mib * 1048576.0) & ~(size_t)4095;
  printf("%.0f MiB a round, %.1f s idle before a sequence, %.1f s between "
         "rounds; seconds a GiB (h: huge pages advised, 4: small pages)\n\n",
         mib, idle, gap);
  printf("| sequence | rounds |\n|---|---|\n");
  for (int s = 0; s < nseq; s++) {
    pause_s(idle);
    printf("| %s |", seq[s]);
    for (const char *c = seq[s]; *c; c++) {
      double t = cm_bench_fresh_gib(n, 1, *c == 'h');
      if (t < 0) {
        printf(" (out of memory) |\n");
        return 1;
      }
      printf(" %c %.2f%s", *c, t, c[1] ? "," : " |\n");
      fflush(stdout);
      if (c[1])
        pause_s(gap);
    }
  }
  return 0;
}
