/* bench_warm.c: what a warm start saves or costs (issue 19, goal 3). For
 * each scene given: analyses it (cold), keeps the report's dominant vector,
 * scales 1% of the contacts' stiffnesses by 1.02 (every 100th, spread by a
 * fixed stride, as the server's session test does), then solves the patched
 * scene cold and warm-started from the kept vector, and prints one table
 * row: products of each (solver.matvecs, which counts the probabilistic
 * bound's run of its own that a warm start needs), the bound's steps, the
 * eigen phase, and omega_max of both (they agree to the tolerance).
 *
 *   bench_warm [--tol T] [--modes K] [--threads N] SCENE...
 *
 * Not a test: it asserts nothing (tests/test_track.c and test_server.c do,
 * on their scenes). */
#include "bench_machine.h"
#include "cmodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int warm_row(cm_context_t *ctx, const char *path, double tol,
                    int modes) {
  cm_scene_t *s = NULL;
  if (cm_scene_read_file(ctx, path, &s)) {
    fprintf(stderr, "bench_warm: %s\n", ctx->message);
    return 1;
  }
  cm_options_t o;
  cm_options_init(&o);
  o.tol = tol, o.modes = modes;
  cm_report_t *r0 = NULL, *rc = NULL, *rw = NULL;
  double *start = NULL;
  int st = cm_analyze(ctx, s, &o, &r0) < 0 || !r0->start_vector;
  if (!st) {
    start = malloc(sizeof(double) * ((size_t)r0->nstart + 1));
    st = !start;
  }
  if (!st) {
    memcpy(start, r0->start_vector, sizeof(double) * (size_t)r0->nstart);
    for (int i = 0; i < s->ncontacts / 100; i++)
      s->contacts[(37L * i + 11) % s->ncontacts].stiffness *= 1.02;
    st = cm_analyze(ctx, s, &o, &rc) < 0;
  }
  if (!st) {
    o.warm_start = start;
    st = cm_analyze(ctx, s, &o, &rw) < 0;
  }
  if (st)
    fprintf(stderr, "bench_warm: %s: %s\n", path, ctx->message);
  else
    printf("| %s | %d | %g | %d | %d (%.3f s) | %d, bound %d (%.3f s) | "
           "%.15g | %.15g |\n",
           path, s->ncontacts, tol, modes, rc->matvecs, rc->t_eigen,
           rw->matvecs, rw->prob_steps, rw->t_eigen, rc->omega_max,
           rw->omega_max);
  free(start);
  cm_report_destroy(&r0), cm_report_destroy(&rc), cm_report_destroy(&rw);
  cm_scene_destroy(&s);
  return st;
}

int main(int argc, char **argv) {
  double tol = 1e-6;
  int modes = 6, threads = 2, first = 1, st = 0;
  for (; first < argc && !strncmp(argv[first], "--", 2); first += 2) {
    const char *a = argv[first], *v = first + 1 < argc ? argv[first + 1] : NULL;
    if (!v) {
      first = argc + 1;
      break;
    }
    if (!strcmp(a, "--tol"))
      tol = atof(v);
    else if (!strcmp(a, "--modes"))
      modes = atoi(v);
    else if (!strcmp(a, "--threads"))
      threads = atoi(v);
    else
      first = argc + 1;
  }
  if (first >= argc) {
    fprintf(stderr, "usage: bench_warm [--tol T] [--modes K] [--threads N] "
                    "SCENE...\n");
    return 2;
  }
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = threads;
  cm_bench_machine(stdout);
  printf("| scene | contacts | tol | modes | cold: products (eigen) | warm: "
         "products, of which the bound's run (eigen) | omega_max cold | "
         "omega_max warm |\n|---|---|---|---|---|---|---|---|\n");
  for (int i = first; i < argc; i++)
    st |= warm_row(&ctx, argv[i], tol, modes);
  return st;
}
