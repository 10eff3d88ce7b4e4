/* test_workspace.c: buffers kept between analyses (cm_workspace_keep, issue
 * 19 goal 4). A report made with buffers taken from an earlier analysis of
 * another scene (so they hold that scene's values) is the same JSON text
 * as the one made with fresh buffers, at another thread count; the
 * buffers were really taken; the cap is honoured and 0 releases them. */
#include "cmodes.h"
#include "cmtest.h"
#include "internal.h"

static cm_scene_t *cm__ws_pile(cm_context_t *ctx, int count, unsigned seed) {
  cm_pile_options_t po;
  cm_pile_options_init(&po);
  po.dim = 3, po.count = count, po.seed = seed;
  cm_scene_t *s = NULL;
  return cm_generate_pile(ctx, &po, &s) ? NULL : s;
}

static char *cm__ws_report(cm_context_t *ctx, const cm_scene_t *s, int modes,
                           int threads) {
  cm_options_t o;
  cm_options_init(&o);
  o.modes = modes, o.tol = 1e-8;
  ctx->threads = threads;
  return cmt_report_json(ctx, s, &o);
}

CM_TEST(workspace_same_bits) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  /* about 24 000 and 27 000 contacts: the basis and B's arrays are past the
   * 1 MiB below which nothing is kept, and the solver is Lanczos */
  cm_scene_t *a = cm__ws_pile(&ctx, 8000, 3), *b = cm__ws_pile(&ctx, 9000, 5);
  CMT_TRUE(a && b);
  CMT_TRUE(a && a->ncontacts > 20000);
  CMT_EQ_INT(cm_workspace_kept(), 0);
  for (int modes = 1; a && b && modes <= 6; modes += 5) {
    char *want = cm__ws_report(&ctx, a, modes, 1); /* fresh buffers */
    CMT_TRUE(want != NULL);
    CMT_EQ_INT(cm_workspace_keep((size_t)1 << 30), 0);
    char *other = cm__ws_report(&ctx, b, modes, 2);
    CMT_TRUE(cm_workspace_kept() > ((size_t)1 << 20));
    unsigned long taken = cm__ws_reused();
    char *got = cm__ws_report(&ctx, a, modes, 2); /* b's buffers */
    CMT_TRUE(cm__ws_reused() > taken);
    CMT_TRUE(want && got && !strcmp(want, got));
    if (want && got && strcmp(want, got))
      CMT_FAIL("modes %d: the report with kept buffers differs", modes);
    /* the cap: at most 2 MiB kept, then 0 releases everything */
    CMT_EQ_INT(cm_workspace_keep((size_t)2 << 20), (size_t)1 << 30);
    CMT_LE((double)cm_workspace_kept(), 2.0 * 1048576);
    free(got);
    got = cm__ws_report(&ctx, a, modes, 1);
    CMT_LE((double)cm_workspace_kept(), 2.0 * 1048576);
    CMT_TRUE(want && got && !strcmp(want, got));
    CMT_EQ_INT(cm_workspace_keep(0), (size_t)2 << 20);
    CMT_EQ_INT(cm_workspace_kept(), 0);
    free(want), free(other), free(got);
  }
  cm_scene_destroy(&a);
  cm_scene_destroy(&b);
}

/* Huge pages for large buffers (core/util.c): the measured choice has
 * finite, positive costs, and a report made with them asked for is the
 * same JSON text as one made without. */
CM_TEST(huge_pages_same_bits) {
  double s4k = NAN, s2m = NAN;
  int on = cm__huge_pages_choice(&s4k, &s2m);
  if (cm__huge_pages_env() < 0) { /* measured, not set */
#ifdef __linux__
    CMT_TRUE(s4k > 0 && s4k < 1e3 && s2m > 0 && s2m < 1e3);
    CMT_EQ_INT(on, s2m < 0.5 * s4k);
#endif
  }
  cm_context_t ctx;
  cm_context_init(&ctx);
  /* about 24 000 contacts: the basis is past the 4 MiB from which huge
   * pages are asked for */
  cm_scene_t *a = cm__ws_pile(&ctx, 8000, 3);
  CMT_TRUE(a != NULL);
  cm__huge_pages_force(0);
  char *want = a ? cm__ws_report(&ctx, a, 6, 2) : NULL;
  cm__huge_pages_force(1);
  char *got = a ? cm__ws_report(&ctx, a, 6, 2) : NULL;
  cm__huge_pages_force(on);
  CMT_TRUE(want && got && !strcmp(want, got));
  free(want), free(got);
  cm_scene_destroy(&a);
}
