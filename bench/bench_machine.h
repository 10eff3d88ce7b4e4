/* bench_machine.h: the machine a bench table was measured on, as lscpu
 * names it, printed with the table (docs/performance.md keeps a table per
 * CPU family: a timing means little without the CPU, its caches and the
 * triad measured beside it). */
#ifndef CM_BENCH_MACHINE_H
#define CM_BENCH_MACHINE_H

#include <stdio.h>
#include <string.h>

/* lscpu's value of the field KEY (the text before its colon) from LINE
 * into out (trimmed), if LINE is that field. */
static inline void cm_bench_lscpu_field(const char *line, const char *key,
                                        char *out, size_t n) {
  size_t k = strlen(key);
  line += strspn(line, " \t"); /* newer lscpu indents its sections */
  if (strncmp(line, key, k) || line[k] != ':')
    return;
  const char *v = line + k + 1;
  v += strspn(v, " \t");
  snprintf(out, n, "%.*s", (int)strcspn(v, "\n"), v);
}

/* One line into f: "machine (lscpu): MODEL, family F model M, N CPUs; L1d
 * ..., L2 ..., L3 ..." (what lscpu does not say is left out; without
 * lscpu, a line that says so). */
static inline void cm_bench_machine(FILE *f) {
  static const char *keys[7] = {"Model name", "CPU family", "Model",   "CPU(s)",
                                "L1d cache",  "L2 cache",   "L3 cache"};
  char v[7][128] = {{0}}, line[512];
  FILE *p = popen("LC_ALL=C lscpu 2>/dev/null", "r");
  while (p && fgets(line, sizeof line, p))
    for (int i = 0; i < 7; i++)
      cm_bench_lscpu_field(line, keys[i], v[i], sizeof v[i]);
  if (p)
    pclose(p);
  if (!v[0][0]) {
    fprintf(f, "machine: lscpu gave no model name (is util-linux "
               "installed?)\n");
    return;
  }
  fprintf(f, "machine (lscpu): %s", v[0]);
  if (v[1][0])
    fprintf(f, ", family %s model %s", v[1], v[2][0] ? v[2] : "?");
  if (v[3][0])
    fprintf(f, ", %s CPUs", v[3]);
  const char *cache[3] = {"L1d", "L2", "L3"};
  for (int i = 0; i < 3; i++)
    if (v[4 + i][0])
      fprintf(f, "%s %s %s", i ? "," : ";", cache[i], v[4 + i]);
  fprintf(f, "\n");
}

#endif
