/* options_export.c: the analysis options by name for other front ends (the
 * Python package): set one option from text through the parser and range
 * checks of the command line (options.c), and read one back. The table
 * itself is exported as JSON by cm_options_table_json (options.c). Not for
 * the command line or the server, which use options.c directly. */
#include "analyze/analyze_internal.h"
#include "analyze/options_table.h"

#include <stdio.h>
#include <string.h>

/* By the field name ("max_iter") or the command-line spelling
 * ("max-iter"); CM_USAGE listing the known names otherwise. */
static const cm__option_t *cm__export_find(cm_context_t *ctx,
                                           const char *name) {
  const cm__option_t *o = cm__option_find(name);
  if (o)
    return o;
  int n;
  const cm__option_t *t = cm__options_table(&n);
  char list[512] = "";
  for (int i = 0; i < n; i++) {
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", t[i].name);
  }
  CM__ERR(ctx, CM_USAGE, name ? name : "", "%.64s: unknown option (known: %s)",
          name ? name : "(null)", list);
  return NULL;
}

int cm_options_set(cm_context_t *ctx, cm_options_t *opts, const char *name,
                   const char *value) {
  const cm__option_t *o = cm__export_find(ctx, name);
  if (!o)
    return CM_USAGE;
  return cm__option_parse(ctx, o, name, value, opts);
}

int cm_options_get(cm_context_t *ctx, const cm_options_t *opts,
                   const char *name, double *value) {
  const cm__option_t *o = cm__export_find(ctx, name);
  if (!o)
    return CM_USAGE;
  *value = cm__option_get(o, opts);
  return CM_OK;
}

int cm_options_validate(cm_context_t *ctx, const cm_options_t *opts) {
  return cm__options_check(ctx, opts);
}
