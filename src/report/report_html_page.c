/* report_html_page.c: cm_report_html, the page of `cmodes report` for a
 * caller of the library (Python's Report._repr_html_ in a notebook): the
 * analysis with the full arrays the pictures need, the softening plan for
 * a scene, and the page, in memory. Not for writing files
 * (src/cli/cmd_report.c) or the server's route (cm__report_html_scene). */
#include "internal.h"
#include "report/report_html.h"

#include <stdlib.h>

int cm_report_html(cm_context_t *ctx, const cm_system_t *sys,
                   const cm_scene_t *scene, const cm_options_t *opts,
                   const char *title, char **html) {
  if (!html || !sys)
    return CM__ERR(ctx, CM_USAGE, NULL, "cm_report_html: NULL argument");
  *html = NULL;
  cm_options_t def;
  if (!opts) {
    cm_options_init(&def);
    opts = &def;
  }
  cm_report_t *r = NULL;
  cm__fields_t f = {.want = opts->modes > 0 ? opts->modes : 6};
  cm__soften_t sp = {0};
  int st = cm__analyze_system_fields(ctx, sys, scene, opts, &r, &f);
  /* the plan re-solves the scene a few times: only for scenes that solve
   * quickly, as the server's page */
  int st2 = st >= 0 && scene && scene->ncontacts <= 100000
                ? cm__soften_plan(ctx, scene, opts, r, &f, 0, &sp)
                : st;
  if (st2 >= 0) {
    size_t len = 0;
    FILE *m = open_memstream(html, &len);
    if (!m) {
      st2 = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
    } else {
      const char *t = title ? title : "cmodes report";
      cm__html_item_t it = {t, scene, r, &f, scene ? &sp : NULL};
      st2 = cm__report_write_html(m, &it, 1, t);
      if (fclose(m) && !st2)
        st2 = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory writing the page");
    }
  }
  cm__soften_free(&sp);
  cm__fields_free(&f);
  cm_report_destroy(&r);
  if (st2 < 0) {
    free(*html);
    *html = NULL;
    return st2;
  }
  return st;
}
