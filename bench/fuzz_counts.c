/* fuzz_counts.c: the long run of tests/test_counts.c's property test, and
 * the time of the rank of J on large scenes (issue #13, items 4, 5, 9).
 *
 *   fuzz_counts --scenes N [--first S]   N random scenes from seed S (0),
 *       each against the dense truth (tests/counts_ref.h); exit 1 on any
 *       failure. CI runs 1000 (counts_fuzz).
 *   fuzz_counts --rank-pile C            a 3D pile of C particles
 *       (cm_generate_pile, seed 7; 3 dofs a sphere, so about 2 C contacts):
 *       times the assembly and the SuiteSparseQR rank of J, alone and in
 *       cm_analyze's report phase. */
#include "../tests/counts_ref.h"
#include "bench_time.h"
#include "internal.h" /* cm__system_rank */

#include <time.h>

static int rank_pile(int count) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_pile_options_t po;
  cm_pile_options_init(&po);
  po.dim = 3, po.count = count, po.seed = 7;
  cm_scene_t *s = NULL;
  double t0 = cm_bench_now();
  if (cm_generate_pile(&ctx, &po, &s)) {
    fprintf(stderr, "generate: %s\n", ctx.message);
    return 1;
  }
  double t1 = cm_bench_now();
  cm_system_t *sys = NULL;
  if (cm_system_assemble(&ctx, s, &sys)) {
    fprintf(stderr, "assemble: %s\n", ctx.message);
    return 1;
  }
  double t2 = cm_bench_now();
  int *cr = calloc((size_t)sys->ncomp + 1, sizeof(int));
  long rank = 0;
  int st = cm__system_rank(&ctx, sys, 2, 0, 0, cr, &rank, NULL);
  double t3 = cm_bench_now();
  int big = 0;
  for (int c = 0; c < sys->ncomp; c++)
    if (sys->comp_row[c + 1] - sys->comp_row[c] > big)
      big = sys->comp_row[c + 1] - sys->comp_row[c];
  printf("pile %d particles: %d contacts (rows), %d active dofs, %d "
         "components (largest %d rows); generate %.2f s, assemble %.3f s, "
         "rank %ld (status %d) in %.3f s: zero modes %ld, free motions %ld\n",
         count, sys->nc, sys->n, sys->ncomp, big, t1 - t0, t2 - t1, rank, st,
         t3 - t2, sys->nc - rank, sys->ndofs - rank);
  free(cr);
  cm_system_destroy(&sys);
  cm_scene_destroy(&s);
  return st != 0;
}

int main(int argc, char **argv) {
  long scenes = 0, first = 0, pile = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--scenes") && i + 1 < argc)
      scenes = atol(argv[++i]);
    else if (!strcmp(argv[i], "--first") && i + 1 < argc)
      first = atol(argv[++i]);
    else if (!strcmp(argv[i], "--rank-pile") && i + 1 < argc)
      pile = atol(argv[++i]);
    else {
      fprintf(stderr, "usage: fuzz_counts --scenes N [--first S] | "
                      "--rank-pile COUNT\n");
      return 2;
    }
  }
  if (pile > 0)
    return rank_pile((int)pile);
  if (scenes <= 0)
    scenes = 10000;
  fz_stats_t st = {0};
  st.worst_upper = INFINITY;
  double t0 = cm_bench_now();
  for (long i = first; i < first + scenes; i++) {
    cm_options_t o;
    fz_options((uint64_t)i, &o);
    fz_check((uint64_t)i, &o, &st);
  }
  printf("fuzz: %d scenes (seeds %ld..%ld) in %.1f s: %d failed, %d refused, "
         "%d with an ambiguous rank (not compared), %d missing a repeated "
         "copy (multiplicity check %s), worst |omega_max - truth| / truth "
         "%.3g, smallest omega_upper / truth %.6f\n",
         st.scenes, first, first + scenes - 1, cm_bench_now() - t0, st.failed,
         st.refused, st.ambiguous, st.multiplicity,
         FZ_CHECK_MULTIPLICITY ? "on" : "off (-DFZ_CHECK_MULTIPLICITY=0)",
         st.worst_rel, st.worst_upper);
  return st.failed ? 1 : 0;
}
