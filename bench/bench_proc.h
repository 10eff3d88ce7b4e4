/* bench_proc.h: a number from a /proc file, for the bench programs. */
#ifndef CM_BENCH_PROC_H
#define CM_BENCH_PROC_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The number after `key` (e.g. "VmHWM:" in /proc/self/status,
 * "thp_fault_alloc " in /proc/vmstat) at the start of a line of `path`,
 * or `missing` when the file or the line is not there. */
static inline double cm_bench_proc_value(const char *path, const char *key,
                                         double missing) {
  FILE *f = fopen(path, "r");
  char line[256];
  double v = missing;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, n))
      v = atof(line + n);
  if (f)
    fclose(f);
  return v;
}

#endif
