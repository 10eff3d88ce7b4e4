/* dump_index.c: the snapshots of a LAMMPS / LIGGGHTS text dump, listed by
 * one pass that only looks for "ITEM: TIMESTEP" lines (the time series of
 * `cmodes track`). Not for reading atoms (dump.c). */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cm__dump_timesteps(cm_context_t *ctx, const char *path, long **steps,
                       int *n) {
  *steps = NULL, *n = 0;
  FILE *f = cm__fopen_input(path, "r");
  if (!f)
    return CM__ERR(ctx, CM_IO, path, "%s: cannot open: %s", path,
                   strerror(errno));
  char *line = NULL; /* lines and bytes bounded: /dev/zero stops */
  size_t lcap = 0, total = 0;
  long lineno = 0, *v = NULL, got = -1;
  int cnt = 0, cap = 0, st = CM_OK, want = 0;
  while (!st && (got = cm__getline_limited(&line, &lcap, f, &total)) >= 0) {
    lineno++;
    if (want) {
      char *end;
      errno = 0;
      long t = strtol(line, &end, 10);
      while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
      if (end == line || *end || errno) {
        st = CM__ERR(ctx, CM_PARSE, path,
                     "%s:%ld: expected the timestep (an integer) after "
                     "ITEM: TIMESTEP",
                     path, lineno);
        break;
      }
      if (cnt == cap) {
        cap = cap ? 2 * cap : 64;
        long *nv = realloc(v, sizeof(long) * (size_t)cap);
        if (!nv) {
          st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
          break;
        }
        v = nv;
      }
      v[cnt++] = t;
      want = 0;
    } else if (!strncmp(line, "ITEM: TIMESTEP", 14)) {
      want = 1;
    }
  }
  if (!st && got < -1)
    st = cm__input_error(ctx, path, lineno + 1, got);
  if (!st && ferror(f))
    st = CM__ERR(ctx, CM_IO, path, "%s: read error", path);
  free(line);
  fclose(f);
  if (!st && !cnt)
    st = CM__ERR(ctx, CM_PARSE, path,
                 "%s: no ITEM: TIMESTEP line: not a LAMMPS text dump", path);
  if (st) {
    free(v);
    return st;
  }
  *steps = v, *n = cnt;
  return CM_OK;
}
