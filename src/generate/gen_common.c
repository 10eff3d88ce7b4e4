/* gen_common.c: helpers shared by the scene generators: checked appends of
 * bodies and contacts, the meta record, the preload array and the Hertz law.
 * Not for the generators themselves (one file each). */
#include "generate/gen.h"

#include <stdlib.h>
#include <string.h>

int cm__gen_body(cm_context_t *ctx, cm_scene_t *s, double mass,
                 const double I[3], cm__v3 p, const char *name) {
  cm_body_t b;
  cm_body_init(&b);
  b.mass = mass;
  memset(b.inertia, 0, sizeof b.inertia);
  if (s->dim == 2) {
    b.inertia[0] = I[0];
    b.position[0] = p.x;
    b.position[1] = p.y;
  } else {
    b.inertia[0] = I[0];
    b.inertia[4] = I[1];
    b.inertia[8] = I[2];
    b.position[0] = p.x;
    b.position[1] = p.y;
    b.position[2] = p.z;
  }
  return cm_scene_add_body(ctx, s, &b, name);
}

int cm__gen_fixed(cm_context_t *ctx, cm_scene_t *s, cm__v3 p,
                  const char *name) {
  cm_body_t b;
  cm_body_init(&b);
  b.fixed = 1;
  b.position[0] = p.x;
  b.position[1] = p.y;
  b.position[2] = s->dim == 3 ? p.z : 0;
  return cm_scene_add_body(ctx, s, &b, name);
}

int cm__gen_contact(cm_context_t *ctx, cm_scene_t *s, int a, int b,
                    cm__v3 point, cm__v3 n, double k, const char *name) {
  cm_contact_t c;
  cm_contact_init(&c);
  c.a = a;
  c.b = b;
  c.point[0] = point.x;
  c.point[1] = point.y;
  c.point[2] = s->dim == 3 ? point.z : 0;
  c.normal[0] = n.x;
  c.normal[1] = n.y;
  c.normal[2] = s->dim == 3 ? n.z : 0;
  c.stiffness = k;
  return cm_scene_add_contact(ctx, s, &c, name);
}

int cm__gen_meta(cm_context_t *ctx, cm_scene_t *s, const char *json) {
  free(s->meta_json);
  s->meta_json = cm__strdup(json);
  if (!s->meta_json)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  return CM_OK;
}

int cm__darr_push(cm_context_t *ctx, cm__darr *a, double x) {
  if (a->n == a->cap) {
    int cap = a->cap ? 2 * a->cap : 64;
    double *v = realloc(a->v, (size_t)cap * sizeof *v);
    if (!v)
      return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
    a->v = v;
    a->cap = cap;
  }
  a->v[a->n++] = x;
  return CM_OK;
}

/* ---- Hertz ------------------------------------------------------------------
 */

double cm_hertz_overlap(double F, double E, double nu, double r1, double r2,
                        double *k_out) {
  if (!(F >= 0)) {
    if (k_out)
      *k_out = NAN;
    return NAN;
  }
  double Es = E / (2.0 * (1.0 - nu * nu));       /* E* for equal materials */
  double Rs = r2 > 0 ? r1 * r2 / (r1 + r2) : r1; /* R*, r2 <= 0: a wall */
  double d = cbrt(pow(3.0 * F / (4.0 * Es * sqrt(Rs)), 2.0)); /* F^(2/3) */
  if (k_out)
    *k_out = 2.0 * Es * sqrt(Rs * d); /* dF/d(delta) */
  return d;
}
