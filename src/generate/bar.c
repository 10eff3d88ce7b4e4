/* bar.c: the reference planar bar generator (one body on two ground
 * contacts), in 2D or as the equivalent 3D body. Not for anything else. */
#include "generate/gen.h"

#include <stdio.h>

void cm_bar_options_init(cm_bar_options_t *o) {
  o->dim = 2;
  o->mass = 2.0;
  o->inertia = 0.005;
  o->half_length = 0.1;
  o->k = 1e5;
}

/* ---- check ------------------------------------------------------------------
 */

static int cm__bar_check(cm_context_t *ctx, const cm_bar_options_t *o) {
  if (o->dim != 2 && o->dim != 3)
    return CM__OPT(ctx, "dim", "dim: %d is not 2 or 3", o->dim);
  if (!(o->mass > 0) || !isfinite(o->mass))
    return CM__OPT(ctx, "mass", "mass: %g is not a positive number (kg)",
                   o->mass);
  if (!(o->inertia > 0) || !isfinite(o->inertia))
    return CM__OPT(ctx, "inertia",
                   "inertia: %g is not a positive number (kg m^2)", o->inertia);
  if (!(o->half_length > 0) || !isfinite(o->half_length))
    return CM__OPT(ctx, "half-length",
                   "half-length: %g is not a positive number (m)",
                   o->half_length);
  if (!(o->k > 0) || !isfinite(o->k))
    return CM__OPT(ctx, "k", "k: %g is not a positive stiffness (N/m)", o->k);
  return CM_OK;
}

/* ---- generate
 * ----------------------------------------------------------------- */

int cm_generate_bar(cm_context_t *ctx, const cm_bar_options_t *o,
                    cm_scene_t **out) {
  *out = NULL;
  int st = cm__bar_check(ctx, o);
  if (st)
    return st;
  cm_scene_t *s = cm_scene_create(o->dim);
  if (!s)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  double L = o->half_length;
  /* 3D: the bar lies along x; rocking is about y (Iyy = inertia); the other
   * axes get the inertia too (they touch no contact row). */
  double I[3] = {o->inertia, o->inertia, o->inertia};
  int up = o->dim == 2 ? 1 : 2;
  cm__v3 com = up == 1 ? cm__v3make(0, 0.02, 0) : cm__v3make(0, 0, 0.02);
  cm__v3 n = up == 1 ? cm__v3make(0, 1, 0) : cm__v3make(0, 0, 1);
  int b = cm__gen_body(ctx, s, o->mass, I, com, "bar");
  if (b >= 0)
    b = cm__gen_contact(ctx, s, 0, CM_WORLD, cm__v3make(-L, 0, 0), n, o->k,
                        "left");
  if (b >= 0)
    b = cm__gen_contact(ctx, s, 0, CM_WORLD, cm__v3make(L, 0, 0), n, o->k,
                        "right");
  if (b >= 0) {
    char meta[256];
    snprintf(meta, sizeof meta,
             "{\"generator\": \"bar\", \"mass\": %.15g, \"inertia\": %.15g, "
             "\"half_length\": %.15g, \"k\": %.15g}",
             o->mass, o->inertia, L, o->k);
    b = cm__gen_meta(ctx, s, meta);
  }
  if (b < 0) {
    cm_scene_destroy(&s);
    return b;
  }
  *out = s;
  return CM_OK;
}
