/* args.c: option-value parsing shared by the subcommands, and the table
 * options (analyze/options_table.h) on the command line. Not for the
 * options of one command (each cmd_*.c). */
#include "args.h"
#include "analyze/options_table.h"

#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- plain values ----------------------------------------------------------
 */

int cm__arg_num(const char *cmd, const char *opt, const char *s, double *v) {
  if (!cm__parse_number(s, v)) {
    fprintf(stderr, "cmodes %s: %s: '%s' is not a number\n", cmd, opt, s);
    return 0;
  }
  return 1;
}

static int cm__arg_whole(const char *cmd, const char *opt, const char *s,
                         double max, double *x) {
  *x = -1;
  if (!cm__parse_number(s, x) || *x < 0 || *x > max || *x != floor(*x)) {
    fprintf(stderr, "cmodes %s: %s: '%s' is not a non-negative integer%s\n",
            cmd, opt, s, *x > max ? " (too large)" : "");
    return 0;
  }
  return 1;
}

int cm__arg_int(const char *cmd, const char *opt, const char *s, int *v) {
  double x;
  if (!cm__arg_whole(cmd, opt, s, 1e9, &x))
    return 0;
  *v = (int)x;
  return 1;
}

int cm__threads_max(void); /* core/util.c */

int cm__arg_threads_ok(const char *cmd, double n) {
  int max = cm__threads_max();
  if (n <= max)
    return 1;
  fprintf(stderr,
          "cmodes %s: --threads %.0f: more than 4 x the %d processors "
          "(at most %d); give --threads %d or fewer (0 = the OpenMP "
          "default)\n",
          cmd, n, max / 4, max, max);
  return 0;
}

int cm__arg_threads(const char *cmd, const char *s, int *v) {
  return cm__arg_int(cmd, "--threads", s, v) && cm__arg_threads_ok(cmd, *v);
}

int cm__arg_long(const char *cmd, const char *opt, const char *s, long *v) {
  double x;
  if (!cm__arg_whole(cmd, opt, s, 1e15, &x))
    return 0;
  *v = (long)x;
  return 1;
}

/* ---- table options
 * ----------------------------------------------------------- */

static int cm__listed(const char *name, const char *const *only) {
  if (!only)
    return 1;
  for (int i = 0; only[i]; i++)
    if (!strcmp(only[i], name))
      return 1;
  return 0;
}

int cm__opt_longopts(struct option *out, int cap, const struct option *own,
                     const char *const *only) {
  int n = 0, nt;
  const cm__option_t *t = cm__options_table(&nt);
  for (; own && own[n].name; n++) {
    if (n >= cap - 1)
      return -1;
    out[n] = own[n];
  }
  for (int i = 0; i < nt; i++) {
    if (!cm__listed(t[i].name, only))
      continue;
    if (n >= cap - 1)
      return -1;
    struct option o = {t[i].cli, required_argument, 0, CM__OPT_CODE + i};
    out[n++] = o;
  }
  struct option end = {0, 0, 0, 0};
  out[n] = end;
  return 0;
}

int cm__opt_parse(const char *cmd, int c, const char *arg,
                  const char *const *only, cm_options_t *opts) {
  int nt;
  const cm__option_t *t = cm__options_table(&nt), *o = NULL;
  if (c >= CM__OPT_CODE && c < CM__OPT_CODE + nt)
    o = &t[c - CM__OPT_CODE];
  for (int i = 0; !o && c > 0 && c < 128 && i < nt; i++)
    if (t[i].short_opt == c)
      o = &t[i];
  if (!o || !cm__listed(o->name, only))
    return -1;
  char path[48];
  snprintf(path, sizeof path, "--%s", o->cli);
  cm_context_t ctx;
  cm_context_init(&ctx);
  if (cm__option_parse(&ctx, o, path, arg, opts)) {
    fprintf(stderr, "cmodes %s: %s\n", cmd, ctx.message);
    return 0;
  }
  return 1;
}

/* Prints text from column 26, wrapped at 78. */
static void cm__wrapped(FILE *f, const char *text) {
  int col = 26;
  const char *p = text;
  while (*p) {
    size_t w = strcspn(p, " ");
    if (col > 26 && col + 1 + (int)w > 78) {
      fprintf(f, "\n%26s", "");
      col = 26;
    } else if (col > 26) {
      fputc(' ', f);
      col++;
    }
    fprintf(f, "%.*s", (int)w, p);
    col += (int)w;
    p += w;
    while (*p == ' ')
      p++;
  }
  fputc('\n', f);
}

void cm__opt_usage(FILE *f, const char *const *only) {
  int nt;
  const cm__option_t *t = cm__options_table(&nt);
  for (int i = 0; i < nt; i++) {
    if (!cm__listed(t[i].name, only))
      continue;
    char head[48], line[400];
    if (t[i].short_opt)
      snprintf(head, sizeof head, "-%c, --%s %s", t[i].short_opt, t[i].cli,
               t[i].meta);
    else
      snprintf(head, sizeof head, "    --%s %s", t[i].cli, t[i].meta);
    if (t[i].type == CM__OPT_METHOD)
      snprintf(line, sizeof line, "%s (default %s)", t[i].help,
               cm__method_name((int)t[i].def));
    else
      snprintf(line, sizeof line, "%s (default %g)", t[i].help, t[i].def);
    if (strlen(head) > 23) /* no room before the help column */
      fprintf(f, "  %s\n%26s", head, "");
    else
      fprintf(f, "  %-24s", head);
    cm__wrapped(f, line);
  }
}

/* A command that runs its analyses and exits (analyze, report): every
 * buffer from glibc's heap, none returned to the system until the process
 * ends (no buffer of its own mapping, no trimming). A freed buffer's pages
 * then serve the next requests without a fault, whatever their sizes: the
 * scene's records, freed once assembled, hold the operator's arrays and
 * the solve's vectors; the solve's basis the search's and the finish's
 * buffers; a softening plan's re-solves the last solve's. That makes the
 * library's workspace, which hands a freed buffer only to a request of
 * about its size, redundant there (analyze keeps it only without the
 * heap). 1e6 pile, `analyze` against glibc's defaults with the workspace
 * kept: step 126k minor faults instead of 161k, peak RSS 547 MiB instead
 * of 534, six modes 707 instead of 740 MiB (performance.md, issue 19,
 * session 29). The library's per-analysis workspace then off. Returns 1
 * if set, 0 (CMODES_HEAP_MMAP=1, a sanitizer's allocator, or not glibc)
 * if not. */
int cm__cli_heap(void) {
#ifdef M_MMAP_MAX
  const char *e = getenv("CMODES_HEAP_MMAP"); /* 1: glibc's defaults */
  if (e && !strcmp(e, "1"))
    return 0;
  if (mallopt(M_MMAP_MAX, 0) != 1 || mallopt(M_TRIM_THRESHOLD, INT_MAX) != 1)
    return 0;
  cm_workspace_keep(0); /* the heap's reuse, not an analysis's own kept
                           buffers (cm__ws_scope_begin), which serve a
                           request of about their size only */
  return 1;
#else
  return 0;
#endif
}
