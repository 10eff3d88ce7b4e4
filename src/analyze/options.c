/* options.c: the analysis options: defaults (cm_options_init) and the
 * checks every entry point runs (cm__options_check). Not for parsing them
 * from the command line or the server (cli/, server/options.c). */
#include "analyze/analyze_internal.h"

#include <math.h>
#include <string.h>

void cm_options_init(cm_options_t *o) {
  memset(o, 0, sizeof *o);
  o->modes = 6;
  o->tol = 1e-10;
  o->method = CM_METHOD_AUTO;
  o->max_iter = 3000;
  o->dense_max = 400;
  o->newmark_gamma = 0.5;
  o->newmark_beta = 0.25;
  o->freq_tol = 0.01;
  o->top_contacts = 5;
  o->top_bodies = 5;
  o->top_components = 10;
  o->rank_max_rows = 20000;
}

int cm__options_check(cm_context_t *ctx, const cm_options_t *o) {
  if (o->modes < 1 || o->modes > 1000)
    return CM__ERR(ctx, CM_USAGE, "modes",
                   "modes: %d is not in 1..1000", o->modes);
  if (!(o->tol > 0) || !(o->tol < 1))
    return CM__ERR(ctx, CM_USAGE, "tol", "tol: %g is not in (0, 1)", o->tol);
  if (o->method < CM_METHOD_AUTO || o->method > CM_METHOD_LANCZOS)
    return CM__ERR(ctx, CM_USAGE, "method", "method: unknown (%d)", o->method);
  if (o->ncv < 0 || o->max_iter < 0 || o->dense_max < 0)
    return CM__ERR(ctx, CM_USAGE, "ncv",
                   "ncv, max_iter and dense_max must not be negative");
  if (o->rank_max_rows < 0)
    return CM__ERR(ctx, CM_USAGE, "rank_max_rows",
                   "rank_max_rows: %d must not be negative", o->rank_max_rows);
  if (o->top_contacts < 0 || o->top_bodies < 0 || o->top_components < 0)
    return CM__ERR(ctx, CM_USAGE, "top_contacts",
                   "top_contacts, top_bodies and top_components must not be "
                   "negative");
  if (!(o->max_seconds >= 0))
    return CM__ERR(ctx, CM_USAGE, "max_seconds",
                   "max_seconds: %g must be >= 0", o->max_seconds);
  if (!(o->damping_ratio >= 0) || !isfinite(o->damping_ratio))
    return CM__ERR(ctx, CM_USAGE, "damping_ratio",
                   "damping_ratio: %g must be finite and >= 0",
                   o->damping_ratio);
  if (!(o->newmark_gamma >= 0.5) || !isfinite(o->newmark_gamma))
    return CM__ERR(ctx, CM_USAGE, "newmark_gamma",
                   "newmark_gamma: %g must be >= 0.5 (smaller values are "
                   "unstable for every step)",
                   o->newmark_gamma);
  if (!(o->newmark_beta >= 0) || !isfinite(o->newmark_beta))
    return CM__ERR(ctx, CM_USAGE, "newmark_beta",
                   "newmark_beta: %g must be finite and >= 0", o->newmark_beta);
  if (!(o->freq_tol > 0) || !isfinite(o->freq_tol))
    return CM__ERR(ctx, CM_USAGE, "freq_tol", "freq_tol: %g must be > 0",
                   o->freq_tol);
  return CM_OK;
}
