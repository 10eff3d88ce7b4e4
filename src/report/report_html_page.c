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
  int st = cm__analyze_system_fields(ctx, sys, scene, opts, &r, &f);
  size_t len = 0;
  return cm__report_html_mem(ctx, scene, opts, title ? title : "cmodes report",
                             r, &f, st, html, &len);
}
