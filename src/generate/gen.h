/* gen.h: helpers shared by the scene generators (src/generate/); not
 * installed. Small vector algebra, checked body/contact appends, the meta
 * record and the preload array. Not for anything outside src/generate/. */
#ifndef CM_GEN_H
#define CM_GEN_H

#include "internal.h"

#include <math.h>

#define CM__GEN_MAX_ITEMS 2147483000.0 /* below INT_MAX */

/* ---- 3-vectors ------------------------------------------------------------
 */

typedef struct {
  double x, y, z;
} cm__v3;

static inline cm__v3 cm__v3make(double x, double y, double z) {
  cm__v3 v = {x, y, z};
  return v;
}
static inline cm__v3 cm__v3add(cm__v3 a, cm__v3 b) {
  return cm__v3make(a.x + b.x, a.y + b.y, a.z + b.z);
}
static inline cm__v3 cm__v3sub(cm__v3 a, cm__v3 b) {
  return cm__v3make(a.x - b.x, a.y - b.y, a.z - b.z);
}
static inline cm__v3 cm__v3scale(cm__v3 a, double s) {
  return cm__v3make(a.x * s, a.y * s, a.z * s);
}
static inline double cm__v3dot(cm__v3 a, cm__v3 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}
static inline cm__v3 cm__v3cross(cm__v3 a, cm__v3 b) {
  return cm__v3make(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z,
                    a.x * b.y - a.y * b.x);
}
static inline double cm__v3norm(cm__v3 a) { return sqrt(cm__v3dot(a, a)); }

/* ---- building scenes --------------------------------------------------------
 */

/* Appends a moving 3D body with diagonal inertia (Ixx, Iyy, Izz) at p, or a
 * 2D body (inertia I[0]) when the scene is 2D. Returns the index or < 0. */
int cm__gen_body(cm_context_t *ctx, cm_scene_t *s, double mass,
                 const double I[3], cm__v3 p, const char *name);
/* Appends a fixed body at p. */
int cm__gen_fixed(cm_context_t *ctx, cm_scene_t *s, cm__v3 p, const char *name);
/* Appends contact a-b (b may be CM_WORLD) at point with normal n (b->a). */
int cm__gen_contact(cm_context_t *ctx, cm_scene_t *s, int a, int b,
                    cm__v3 point, cm__v3 n, double k, const char *name);

/* Sets the scene's meta object to the JSON text given (copied). */
int cm__gen_meta(cm_context_t *ctx, cm_scene_t *s, const char *json);

/* Growable double array for the preloads. */
typedef struct {
  double *v; /* values, size cap */
  int n;     /* in use */
  int cap;   /* allocated */
} cm__darr;
int cm__darr_push(cm_context_t *ctx, cm__darr *a, double x);

/* Error helper for options: CM_USAGE with path = the option name. */
#define CM__OPT(ctx, name, ...) CM__ERR((ctx), CM_USAGE, (name), __VA_ARGS__)

#endif
