/* stack.c: towers of boxes and columns of spheres standing on the ground,
 * with their static preloads. Not for piles (pile.c) or lattices
 * (crystal.c). */
#include "generate/gen.h"

#include <stdio.h>
#include <stdlib.h>

void cm_stack_options_init(cm_stack_options_t *o) {
  o->shape = CM_STACK_BOXES;
  o->count = 5;
  o->towers = 1;
  o->dim = 3;
  o->size[0] = 0.4;
  o->size[1] = 0.3;
  o->size[2] = 0.2;
  o->mass = 10.0;
  o->k = 1e5;
  o->gravity = 9.81;
}

/* ---- check ------------------------------------------------------------------
 */

static int cm__stack_check(cm_context_t *ctx, const cm_stack_options_t *o) {
  if (o->shape != CM_STACK_BOXES && o->shape != CM_STACK_SPHERES)
    return CM__OPT(ctx, "shape", "shape: %d is not boxes (0) or spheres (1)",
                   o->shape);
  if (o->dim != 2 && o->dim != 3)
    return CM__OPT(ctx, "dim", "dim: %d is not 2 or 3", o->dim);
  if (o->count < 1)
    return CM__OPT(ctx, "count",
                   "count: %d; a tower needs at least 1 body (try --count 5)",
                   o->count);
  if (o->towers < 1)
    return CM__OPT(ctx, "towers", "towers: %d; give at least 1 tower",
                   o->towers);
  if ((double)o->count * o->towers * 4.0 > CM__GEN_MAX_ITEMS)
    return CM__ERR(ctx, CM_LIMIT, "count",
                   "count x towers = %.0f bodies is too many (contacts must "
                   "stay below 2^31)",
                   (double)o->count * o->towers);
  int nsz = o->shape == CM_STACK_SPHERES ? 1 : o->dim;
  for (int i = 0; i < nsz; i++)
    if (!(o->size[i] > 0) || !isfinite(o->size[i]))
      return CM__OPT(ctx, "size", "size[%d]: %g is not a positive length (m)",
                     i, o->size[i]);
  if (!(o->mass > 0) || !isfinite(o->mass))
    return CM__OPT(ctx, "mass", "mass: %g is not a positive number (kg)",
                   o->mass);
  if (!(o->k > 0) || !isfinite(o->k))
    return CM__OPT(ctx, "k", "k: %g is not a positive stiffness (N/m)", o->k);
  if (!(o->gravity >= 0) || !isfinite(o->gravity))
    return CM__OPT(ctx, "gravity", "gravity: %g must be >= 0 (m/s^2)",
                   o->gravity);
  return CM_OK;
}

/* ---- generate
 * ----------------------------------------------------------------- */

/* Inertia about the COM and the height of one body. */
static double cm__stack_body(const cm_stack_options_t *o, double I[3]) {
  double m = o->mass;
  if (o->shape == CM_STACK_SPHERES) {
    double r = 0.5 * o->size[0];
    I[0] = I[1] = I[2] = 0.4 * m * r * r;
    return o->size[0];
  }
  if (o->dim == 2) {
    double Lx = o->size[0], Ly = o->size[1];
    I[0] = I[1] = I[2] = m * (Lx * Lx + Ly * Ly) / 12.0;
    return Ly;
  }
  double Lx = o->size[0], Ly = o->size[1], Lz = o->size[2];
  I[0] = m * (Ly * Ly + Lz * Lz) / 12.0;
  I[1] = m * (Lx * Lx + Lz * Lz) / 12.0;
  I[2] = m * (Lx * Lx + Ly * Ly) / 12.0;
  return Lz;
}

/* Point (horizontal offsets u along x, v along y; height h) in the scene's
 * axes: 2D uses (x, y) with y up, 3D (x, y, z) with z up. */
static cm__v3 cm__stack_pt(int dim, double u, double v, double h) {
  return dim == 2 ? cm__v3make(u, h, 0) : cm__v3make(u, v, h);
}

int cm_generate_stack_forces(cm_context_t *ctx, const cm_stack_options_t *o,
                             cm_scene_t **out, double **forces_out) {
  *out = NULL;
  if (forces_out)
    *forces_out = NULL;
  int st = cm__stack_check(ctx, o);
  if (st)
    return st;
  cm_scene_t *s = cm_scene_create(o->dim);
  cm__darr f = {0};
  if (!s)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  double I[3];
  double H = cm__stack_body(o, I);
  int d = o->dim, boxes = o->shape == CM_STACK_BOXES;
  double hx = 0.5 * o->size[0], hy = d == 3 ? 0.5 * o->size[1] : 0;
  double pitch = 2.0 * o->size[0];
  int ncorner = boxes ? (d == 2 ? 2 : 4) : 1;
  int named = (double)o->count * o->towers <= 100000;
  char name[64];
  for (int t = 0; t < o->towers && st >= 0; t++) {
    double x0 = t * pitch;
    for (int l = 0; l < o->count && st >= 0; l++) {
      snprintf(name, sizeof name, "t%d_%d", t, l);
      cm__v3 com = cm__stack_pt(d, x0, 0, (l + 0.5) * H);
      int body = cm__gen_body(ctx, s, o->mass, I, com, named ? name : NULL);
      int below = l == 0 ? CM_WORLD : body - 1;
      double load = (o->count - l) * o->mass * o->gravity / ncorner; /* N */
      cm__v3 n = cm__stack_pt(d, 0, 0, 1);
      st = body;
      for (int c = 0; c < ncorner && st >= 0; c++) {
        double u = boxes ? ((c & 1) ? hx : -hx) : 0;
        double v = boxes && d == 3 ? ((c & 2) ? hy : -hy) : 0;
        st = cm__gen_contact(ctx, s, body, below,
                             cm__stack_pt(d, x0 + u, v, l * H), n, o->k, NULL);
        if (st >= 0)
          st = cm__darr_push(ctx, &f, load);
      }
    }
  }
  if (st >= 0) {
    char meta[512];
    snprintf(meta, sizeof meta,
             "{\"generator\": \"stack\", \"shape\": \"%s\", \"count\": %d, "
             "\"towers\": %d, \"size\": [%.15g, %.15g, %.15g], "
             "\"mass\": %.15g, \"k\": %.15g, \"gravity\": %.15g}",
             boxes ? "boxes" : "spheres", o->count, o->towers, o->size[0],
             o->size[1], o->size[2], o->mass, o->k, o->gravity);
    st = cm__gen_meta(ctx, s, meta);
  }
  if (st < 0) {
    cm_scene_destroy(&s);
    free(f.v);
    return st;
  }
  if (forces_out)
    *forces_out = f.v;
  else
    free(f.v);
  *out = s;
  return CM_OK;
}

int cm_generate_stack(cm_context_t *ctx, const cm_stack_options_t *o,
                      cm_scene_t **out) {
  return cm_generate_stack_forces(ctx, o, out, NULL);
}
