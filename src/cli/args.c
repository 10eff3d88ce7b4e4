/* args.c: option-value parsing shared by the subcommands. */
#include "args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int cm__arg_num(const char *cmd, const char *opt, const char *s, double *v) {
  char *end;
  *v = strtod(s, &end);
  if (end == s || *end || !isfinite(*v)) {
    fprintf(stderr, "cmodes %s: %s: '%s' is not a number\n", cmd, opt, s);
    return 0;
  }
  return 1;
}

int cm__arg_int(const char *cmd, const char *opt, const char *s, int *v) {
  char *end;
  long x = strtol(s, &end, 10);
  if (end == s || *end || x < 0 || x > 1000000000) {
    fprintf(stderr, "cmodes %s: %s: '%s' is not a non-negative integer\n",
            cmd, opt, s);
    return 0;
  }
  *v = (int)x;
  return 1;
}
