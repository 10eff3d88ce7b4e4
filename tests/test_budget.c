/* test_budget.c: the solve budget (max_seconds) holds for the rank counts
 * too (issue #18, item 4): a component whose sparse QR would start after
 * the deadline is not factored, the counts are unknown (-1) with a reason
 * naming the budget; without a budget the same scene is counted, and the
 * counts agree with the dofs and rows minus the rank the components
 * report. */
#include "cmodes.h"
#include "cmtest.h"

#include <stdlib.h>
#include <string.h>

static cm_report_t *budget_run(double max_seconds) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  cm_report_t *r = NULL;
  if (cm_scene_read_file(&ctx, CM_SOURCE_DIR "/data/stack_boxes.json", &s))
    return NULL;
  cm_options_t o;
  cm_options_init(&o);
  o.max_seconds = max_seconds;
  int st = cm_analyze(&ctx, s, &o, &r);
  cm_scene_destroy(&s);
  return st >= 0 ? r : NULL;
}

CM_TEST(budget_rank_counts) {
  cm_report_t *full = budget_run(0), *cut = budget_run(1e-12);
  CMT_TRUE(full != NULL);
  CMT_TRUE(cut != NULL);
  if (full && cut) {
    /* without a budget: counted, and consistent with the components */
    CMT_TRUE(full->zero_modes >= 0 && full->free_motions >= 0);
    CMT_TRUE(full->counts_note == NULL);
    long rank = 0;
    for (int c = 0; c < full->ncomp_listed; c++)
      rank += full->components[c].rank;
    if (full->ncomp_listed == full->ncomp)
      CMT_EQ_INT((int)(full->nrows - rank), full->zero_modes);
    /* a budget spent before the counts: none factored, the reason says so */
    CMT_EQ_INT(cut->zero_modes, -1);
    CMT_EQ_INT(cut->free_motions, -1);
    CMT_TRUE(cut->counts_note && strstr(cut->counts_note, "max_seconds"));
    for (int c = 0; c < cut->ncomp_listed; c++)
      CMT_EQ_INT(cut->components[c].rank, -1);
  }
  cm_report_destroy(&full);
  cm_report_destroy(&cut);
}
