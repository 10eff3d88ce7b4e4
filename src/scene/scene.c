/* scene.c: the in-memory scene (bodies, contacts, names) and its validation.
 * Not for file formats (io/) or assembly (system/). */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- name index: open addressing over body names ---------------------- */

typedef struct {
  int *slot;  /* body index or -1, size cap (power of two) */
  size_t cap; /* table size */
} cm__name_index_t;

static uint64_t cm__fnv(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static const char *cm__name_at(const cm_scene_t *s, long off) {
  return off < 0 ? NULL : s->names + off;
}

static void cm__index_free(cm_scene_t *s) {
  cm__name_index_t *ix = s->name_index;
  if (ix) {
    free(ix->slot);
    free(ix);
  }
  s->name_index = NULL;
}

/* Inserts body i (which has a name); grows the table at half load. */
static int cm__index_put(cm_scene_t *s, int i) {
  cm__name_index_t *ix = s->name_index;
  if (!ix) {
    ix = calloc(1, sizeof *ix);
    if (!ix)
      return CM_NOMEM;
    s->name_index = ix;
  }
  if (2 * (size_t)(s->nbodies + 1) > ix->cap) {
    size_t cap = ix->cap ? 2 * ix->cap : 64;
    while (cap < 4 * (size_t)(s->nbodies + 1))
      cap *= 2;
    int *slot = malloc(cap * sizeof *slot);
    if (!slot)
      return CM_NOMEM;
    for (size_t j = 0; j < cap; j++)
      slot[j] = -1;
    free(ix->slot);
    ix->slot = slot;
    ix->cap = cap;
    for (int b = 0; b < s->nbodies; b++) {
      const char *nm = cm__name_at(s, s->body_name[b]);
      if (b == i || !nm)
        continue;
      size_t h = cm__fnv(nm) & (cap - 1);
      while (slot[h] >= 0)
        h = (h + 1) & (cap - 1);
      slot[h] = b;
    }
  }
  size_t h = cm__fnv(cm__name_at(s, s->body_name[i])) & (ix->cap - 1);
  while (ix->slot[h] >= 0)
    h = (h + 1) & (ix->cap - 1);
  ix->slot[h] = i;
  return CM_OK;
}

int cm_scene_find_body(const cm_scene_t *s, const char *name) {
  const cm__name_index_t *ix = s ? s->name_index : NULL;
  if (!ix || !name)
    return -1;
  size_t h = cm__fnv(name) & (ix->cap - 1);
  while (ix->slot[h] >= 0) {
    int b = ix->slot[h];
    if (strcmp(cm__name_at(s, s->body_name[b]), name) == 0)
      return b;
    h = (h + 1) & (ix->cap - 1);
  }
  return -1;
}

/* ---- lifecycle ----------------------------------------------------------- */

cm_scene_t *cm_scene_create(int dim) {
  if (dim != 2 && dim != 3)
    return NULL;
  cm_scene_t *s = calloc(1, sizeof *s);
  if (s)
    s->dim = dim;
  return s;
}

void cm_scene_destroy(cm_scene_t **sp) {
  if (!sp || !*sp)
    return;
  cm_scene_t *s = *sp;
  cm__index_free(s);
  free(s->bodies);
  free(s->contacts);
  free(s->body_name);
  free(s->contact_name);
  free(s->names);
  free(s->meta_json);
  free(s->name);
  free(s);
  *sp = NULL;
}

static long cm__pool_add(cm_scene_t *s, const char *name) {
  if (!name)
    return -1;
  size_t n = strlen(name) + 1;
  if (s->names_len + n > s->names_cap) {
    size_t cap = s->names_cap ? s->names_cap : 256;
    while (cap < s->names_len + n)
      cap *= 2;
    char *p = realloc(s->names, cap);
    if (!p)
      return -2;
    s->names = p;
    s->names_cap = cap;
  }
  long off = (long)s->names_len;
  memcpy(s->names + off, name, n);
  s->names_len += n;
  return off;
}

cm_scene_t *cm_scene_copy(const cm_scene_t *src) {
  if (!src)
    return NULL;
  cm_scene_t *s = cm_scene_create(src->dim);
  if (!s)
    return NULL;
  s->nbodies = s->body_cap = src->nbodies;
  s->ncontacts = s->contact_cap = src->ncontacts;
  size_t nb = (size_t)src->nbodies, nc = (size_t)src->ncontacts;
  s->bodies = malloc((nb ? nb : 1) * sizeof *s->bodies);
  s->body_name = malloc((nb ? nb : 1) * sizeof *s->body_name);
  s->contacts = malloc((nc ? nc : 1) * sizeof *s->contacts);
  s->contact_name = malloc((nc ? nc : 1) * sizeof *s->contact_name);
  s->names = malloc(src->names_cap ? src->names_cap : 1);
  s->meta_json = src->meta_json ? cm__strdup(src->meta_json) : NULL;
  s->name = src->name ? cm__strdup(src->name) : NULL;
  s->timestep_s = src->timestep_s;
  if (!s->bodies || !s->body_name || !s->contacts || !s->contact_name ||
      !s->names || (src->meta_json && !s->meta_json) ||
      (src->name && !s->name)) {
    cm_scene_destroy(&s);
    return NULL;
  }
  if (nb) {
    memcpy(s->bodies, src->bodies, nb * sizeof *s->bodies);
    memcpy(s->body_name, src->body_name, nb * sizeof *s->body_name);
  }
  if (nc) {
    memcpy(s->contacts, src->contacts, nc * sizeof *s->contacts);
    memcpy(s->contact_name, src->contact_name, nc * sizeof *s->contact_name);
  }
  if (src->names_len)
    memcpy(s->names, src->names, src->names_len);
  s->names_len = src->names_len;
  s->names_cap = src->names_cap ? src->names_cap : 1;
  for (int b = 0; b < s->nbodies; b++)
    if (s->body_name[b] >= 0 && cm__index_put(s, b) != CM_OK) {
      cm_scene_destroy(&s);
      return NULL;
    }
  return s;
}

void cm_body_init(cm_body_t *b) {
  memset(b, 0, sizeof *b);
  b->mass = 1.0;
  b->inertia[0] = b->inertia[4] = b->inertia[8] = 1.0;
  b->orientation[0] = 1.0;
}

void cm_contact_init(cm_contact_t *c) {
  memset(c, 0, sizeof *c);
  c->b = CM_WORLD;
  c->stiffness = 1.0;
}

/* ---- adding ----------------------------------------------------------------
 */

/* Unit length, left alone when already unit to rounding (so a written and
 * re-read scene keeps its bits). */
/* Euclidean length of v without overflow or underflow (scaled by the
 * largest component): 1e200 and 1e-200 have lengths, not inf and 0. */
static double cm__length(const double *v, int n) {
  double m = 0, s = 0;
  for (int i = 0; i < n; i++)
    m = fmax(m, fabs(v[i]));
  if (!(m > 0) || !isfinite(m))
    return m;
  for (int i = 0; i < n; i++)
    s += (v[i] / m) * (v[i] / m);
  return m * sqrt(s);
}

static void cm__normalize(double *v, int n) {
  double s = 0;
  for (int i = 0; i < n; i++)
    s += v[i] * v[i];
  if (fabs(s - 1.0) <= 4 * DBL_EPSILON)
    return;
  s = cm__length(v, n); /* any nonzero finite vector, however long */
  if (s > 0 && isfinite(s))
    for (int i = 0; i < n; i++)
      v[i] /= s;
}

int cm_scene_add_body(cm_context_t *ctx, cm_scene_t *s, const cm_body_t *b,
                      const char *name) {
  if (!s || !b)
    return CM__ERR(ctx, CM_USAGE, NULL, "cm_scene_add_body: NULL argument");
  if (name && cm_scene_find_body(s, name) >= 0) {
    char path[64];
    snprintf(path, sizeof path, "bodies[%d].name", s->nbodies);
    return CM__ERR(ctx, CM_INVALID_SCENE, path,
                   "duplicate body name \"%s\" (first used by bodies[%d]); "
                   "give every body a unique name",
                   name, cm_scene_find_body(s, name));
  }
  if (s->nbodies == s->body_cap) {
    int cap = s->body_cap ? 2 * s->body_cap : 16;
    cm_body_t *nb = realloc(s->bodies, (size_t)cap * sizeof *nb);
    if (nb)
      s->bodies = nb;
    long *nn = realloc(s->body_name, (size_t)cap * sizeof *nn);
    if (nn)
      s->body_name = nn;
    if (!nb || !nn)
      return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory adding a body");
    s->body_cap = cap;
  }
  long off = cm__pool_add(s, name);
  if (off == -2)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory adding a body name");
  int i = s->nbodies++;
  s->bodies[i] = *b;
  if (s->dim == 3)
    cm__normalize(s->bodies[i].orientation, 4);
  s->body_name[i] = off;
  if (off >= 0 && cm__index_put(s, i) != CM_OK)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory indexing body names");
  return i;
}

int cm_scene_add_contact(cm_context_t *ctx, cm_scene_t *s,
                         const cm_contact_t *c, const char *name) {
  if (!s || !c)
    return CM__ERR(ctx, CM_USAGE, NULL, "cm_scene_add_contact: NULL argument");
  if (s->ncontacts == s->contact_cap) {
    int cap = s->contact_cap ? 2 * s->contact_cap : 16;
    cm_contact_t *nc = realloc(s->contacts, (size_t)cap * sizeof *nc);
    if (nc)
      s->contacts = nc;
    long *nn = realloc(s->contact_name, (size_t)cap * sizeof *nn);
    if (nn)
      s->contact_name = nn;
    if (!nc || !nn)
      return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory adding a contact");
    s->contact_cap = cap;
  }
  long off = cm__pool_add(s, name);
  if (off == -2)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory adding a contact name");
  int i = s->ncontacts++;
  s->contacts[i] = *c;
  cm__normalize(s->contacts[i].normal, s->dim);
  if (s->dim == 2)
    s->contacts[i].normal[2] = s->contacts[i].point[2] = 0;
  s->contact_name[i] = off;
  return i;
}

int cm__scene_release_records(cm_scene_t *s, const cm_system_t *sys) {
  if (!s || !sys || sys->dashpots)
    return 0;
  free(s->bodies), free(s->contacts);
  s->bodies = NULL, s->contacts = NULL;
  s->body_cap = s->contact_cap = 0;
  return 1;
}

const char *cm_scene_body_name(const cm_scene_t *s, int i) {
  if (!s || i < 0 || i >= s->nbodies)
    return NULL;
  return cm__name_at(s, s->body_name[i]);
}

const char *cm_scene_contact_name(const cm_scene_t *s, int i) {
  if (!s || i < 0 || i >= s->ncontacts)
    return NULL;
  return cm__name_at(s, s->contact_name[i]);
}

const char *cm_scene_body_label(const cm_scene_t *s, int i, char *buf,
                                size_t size) {
  const char *nm = cm_scene_body_name(s, i);
  if (i == CM_WORLD)
    snprintf(buf, size, "world");
  else if (nm)
    snprintf(buf, size, "%s", nm);
  else
    snprintf(buf, size, "#%d", i);
  return buf;
}

/* ---- validation ---------------------------------------------------------- */

static int cm__finite_n(const double *v, int n) {
  for (int i = 0; i < n; i++)
    if (!isfinite(v[i]))
      return 0;
  return 1;
}

/* Cholesky of a symmetric 3x3: returns 1 if positive definite. */
static int cm__spd3(const double *I) {
  double a = I[0];
  if (!(a > 0))
    return 0;
  double l10 = I[3] / sqrt(a), l20 = I[6] / sqrt(a);
  double d1 = I[4] - l10 * l10;
  if (!(d1 > 0))
    return 0;
  double l21 = (I[7] - l20 * l10) / sqrt(d1);
  double d2 = I[8] - l20 * l20 - l21 * l21;
  return d2 > 0;
}

/* The path of a field, formatted only when there is an error to report: a
 * snprintf per field of a million-contact scene cost more than its checks. */
#define CM__P(field)                                                           \
  (snprintf(path, sizeof path, "%s[%d].%s", kind, i, (field)), path)

/* Longest lever arm a contact may have, m: r^2 (in r x n, J M^-1 J^T)
 * stays far from overflow (issue #18 reported arms above ~1e154 giving a
 * translation-only omega with exit 0). */
#define CM__ARM_MAX 1e150

/* The lever arm of side b (0: a, 1: b) of contact c: arm_a / arm_b, or
 * point - position of the body: its largest component (0 for the world or
 * a fixed body). */
static double cm__arm_mag(const cm_scene_t *s, const cm_contact_t *c,
                          int side) {
  int body = side ? c->b : c->a, d = s->dim;
  double m = 0;
  if (body < 0 || body >= s->nbodies || s->bodies[body].fixed)
    return 0; /* the world or a fixed body: no rotational entry */
  for (int j = 0; j < d; j++) {
    double r = fabs(c->has_arms ? (side ? c->arm_b[j] : c->arm_a[j])
                                : c->point[j] - s->bodies[body].position[j]);
    m = r > m ? r : m; /* fmax, inline (NaN: the validation refused it) */
  }
  return m;
}

/* Refuses a lever arm longer than CM__ARM_MAX (explicit arms, or the
 * distance from a body's position to the contact point). */
static int cm__check_arms(cm_context_t *ctx, const cm_scene_t *s, int i) {
  const char *kind = "contacts";
  char path[64];
  const cm_contact_t *c = &s->contacts[i];
  for (int side = 0; side < 2; side++) {
    double m = cm__arm_mag(s, c, side);
    if (!(m > CM__ARM_MAX))
      continue;
    const char *field = c->has_arms ? (side ? "arm_b" : "arm_a") : "point";
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P(field),
                   "%s: a lever arm of %g m (%s) is longer than %g m: its "
                   "square leaves no room in double precision for the "
                   "rotational entries of J M^-1 J^T; check the units, or "
                   "rescale the lengths",
                   path, m,
                   c->has_arms ? "the given arm"
                   : side      ? "from body b's position to the point"
                               : "from body a's position to the point",
                   CM__ARM_MAX);
  }
  return CM_OK;
}

static int cm__validate_body(cm_context_t *ctx, const cm_scene_t *s, int i) {
  const cm_body_t *b = &s->bodies[i];
  const char *kind = "bodies";
  char path[64];
  int d = s->dim;
  if (!cm__finite_n(b->position, d))
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("position"),
                   "%s: not a finite number (NaN or infinity)", path);
  if (b->fixed)
    return CM_OK;
  if (!isfinite(b->mass))
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("mass"),
                   "%s: not a finite number (NaN or infinity)", path);
  if (!(b->mass > 0))
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("mass"),
                   "%s: %g is not positive; a moving body needs a mass > 0 "
                   "(or mark it \"fixed\": true)",
                   path, b->mass);
  if (!cm__finite_n(b->inertia, d == 2 ? 1 : 9))
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("inertia"),
                   "%s: not a finite number (NaN or infinity)", path);
  if (d == 2) {
    if (!(b->inertia[0] > 0))
      return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("inertia"),
                     "%s: %g is not positive; a planar body needs a positive "
                     "moment of inertia about its centre of mass",
                     path, b->inertia[0]);
    return CM_OK;
  }
  const double *I = b->inertia;
  double scale = fabs(I[0]) + fabs(I[4]) + fabs(I[8]);
  for (int r = 0; r < 3; r++)
    for (int c = r + 1; c < 3; c++)
      if (fabs(I[3 * r + c] - I[3 * c + r]) > 1e-12 * scale)
        return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("inertia"),
                       "%s: not symmetric (I[%d][%d] = %g but I[%d][%d] = %g)",
                       path, r, c, I[3 * r + c], c, r, I[3 * c + r]);
  if (!cm__spd3(I))
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("inertia"),
                   "%s: not positive definite; a 3D body needs an inertia "
                   "tensor with positive eigenvalues",
                   path);
  const double *q = b->orientation;
  double qn = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  if (!cm__finite_n(q, 4) || fabs(qn - 1.0) > 1e-9)
    return CM__ERR(
        ctx, CM_INVALID_SCENE, CM__P("orientation"),
        "%s: not a unit quaternion [w, x, y, z] (zero or not finite)", path);
  return CM_OK;
}

static int cm__validate_contact(cm_context_t *ctx, const cm_scene_t *s, int i) {
  const cm_contact_t *c = &s->contacts[i];
  const char *kind = "contacts";
  char path[64];
  int d = s->dim;
  if (c->a < 0 || c->a >= s->nbodies)
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("a"),
                   "%s: body index %d out of range (0..%d); a must be a body",
                   path, c->a, s->nbodies - 1);
  if (c->b != CM_WORLD && (c->b < 0 || c->b >= s->nbodies))
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("b"),
                   "%s: body index %d out of range (0..%d, or null for the "
                   "world)",
                   path, c->b, s->nbodies - 1);
  if (c->a == c->b)
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("b"),
                   "contacts[%d]: a and b are the same body (%d); a contact "
                   "joins two different bodies",
                   i, c->a);
  int fa = s->bodies[c->a].fixed,
      fb = c->b == CM_WORLD || s->bodies[c->b].fixed;
  if (fa && fb)
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("b"),
                   "contacts[%d]: both bodies are fixed (or the world); such "
                   "a contact cannot oscillate: remove it or free a body",
                   i);
  if (!cm__finite_n(c->point, d))
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("point"),
                   "%s: not a finite number (NaN or infinity)", path);
  if (!cm__finite_n(c->normal, d))
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("normal"),
                   "%s: not a finite number (NaN or infinity)", path);
  double sq = 0; /* a unit normal to rounding passes without cm__length */
  for (int j = 0; j < d; j++)
    sq += c->normal[j] * c->normal[j];
  double len = fabs(sq - 1) < 0.5e-9 ? 1.0 : cm__length(c->normal, d);
  if (!(len > 0))
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("normal"),
                   "%s: zero length; give the unit normal from b to a", path);
  if (!(fabs(len * len - 1.0) < 1e-9))
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("normal"),
                   "%s: not a unit vector (length %.*g); normalise it "
                   "(divide by its length), or add contacts with "
                   "cm_scene_add_contact, which does for any nonzero "
                   "length",
                   path, fabs(len - 1) < 1e-3 ? 17 : 6, len);
  if (!isfinite(c->stiffness))
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("stiffness"),
                   "%s: not a finite number (NaN or infinity)", path);
  if (!(c->stiffness >= 0))
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("stiffness"),
                   "%s: %g is negative; a penalty stiffness must be > 0 (or "
                   "0 for a dashpot alone)",
                   path, c->stiffness);
  /* version 2: tangential spring and dashpots, 0 = absent */
  static const char *const v2[] = {"stiffness_t", "damping_n", "damping_t"};
  const double v2x[] = {c->stiffness_t, c->damping_n, c->damping_t};
  for (int j = 0; j < 3; j++)
    if (!(v2x[j] >= 0) || !isfinite(v2x[j]))
      return CM__ERR(ctx, CM_INVALID_SCENE, CM__P(v2[j]),
                     "%s: %g must be finite and >= 0 (0: none)", path,
                     v2x[j]);
  const char *why = cm__dashpot_alone_fault(c);
  if (why)
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("stiffness"), "%s: %s", path,
                   why);
  if (c->has_arms && (!cm__finite_n(c->arm_a, d) || !cm__finite_n(c->arm_b, d)))
    return CM__ERR(ctx, CM_INVALID_SCENE, CM__P("arm_a"),
                   "%s: the lever arms must be finite numbers", path);
  return cm__check_arms(ctx, s, i);
}

/* First index in [0, n) that check rejects, or n. The checks run on all
 * threads without a context (an error is only formatted for the index
 * found), so the first error is the same at any thread count. */
static int cm__first_invalid(const cm_scene_t *s, int n, int threads,
                             int (*check)(cm_context_t *, const cm_scene_t *,
                                          int)) {
  int first = n;
#pragma omp parallel for schedule(static) num_threads(threads)                 \
    reduction(min                                                              \
              : first) if (n > CM__PAR_MIN)
  for (int i = 0; i < n; i++)
    if (i < first && check(NULL, s, i))
      first = i;
  return first;
}

/* cm__validate_contact that first asks for the bodies of the contact 16
 * ahead: their flags and positions (the lever arms) are read at random, and
 * the check is too long for the core to overlap those misses by itself. */
static int cm__validate_contact_ahead(cm_context_t *ctx, const cm_scene_t *s,
                                      int i) {
  if (i + 16 < s->ncontacts) {
    const cm_contact_t *c = &s->contacts[i + 16];
    if (c->a >= 0 && c->a < s->nbodies) {
      __builtin_prefetch(&s->bodies[c->a].fixed);
      __builtin_prefetch(&s->bodies[c->a].position[0]);
      __builtin_prefetch(&s->bodies[c->a].position[2]);
    }
    if (c->b >= 0 && c->b < s->nbodies) {
      __builtin_prefetch(&s->bodies[c->b].fixed);
      __builtin_prefetch(&s->bodies[c->b].position[0]);
      __builtin_prefetch(&s->bodies[c->b].position[2]);
    }
  }
  return cm__validate_contact(ctx, s, i);
}

int cm_scene_validate(cm_context_t *ctx, const cm_scene_t *s) {
  if (!s)
    return CM__ERR(ctx, CM_USAGE, NULL, "no scene");
  if (s->dim != 2 && s->dim != 3)
    return CM__ERR(ctx, CM_INVALID_SCENE, "dim", "dim: %d is not 2 or 3",
                   s->dim);
  if (!(s->timestep_s >= 0) || !isfinite(s->timestep_s))
    return CM__ERR(ctx, CM_INVALID_SCENE, "timestep",
                   "timestep: %g must be finite and >= 0 (0: none)",
                   s->timestep_s);
  int threads = cm__threads(ctx);
  int i = cm__first_invalid(s, s->nbodies, threads, cm__validate_body);
  if (i < s->nbodies)
    return cm__validate_body(ctx, s, i);
  i = cm__first_invalid(s, s->ncontacts, threads, cm__validate_contact_ahead);
  if (i < s->ncontacts)
    return cm__validate_contact(ctx, s, i);
  return CM_OK;
}

const char *cm__dashpot_alone_fault(const cm_contact_t *c) {
  if (c->stiffness != 0 || (c->damping_n > 0 && c->stiffness_t == 0))
    return NULL;
  return c->stiffness_t != 0
             ? "0 with a tangential spring (stiffness_t): give a penalty "
               "stiffness > 0, or stiffness 0 with damping_n > 0 and "
               "stiffness_t 0 for a dashpot alone"
             : "0 with no normal dashpot (damping_n): give a penalty "
               "stiffness > 0, or stiffness 0 with damping_n > 0 for a "
               "dashpot alone";
}

/* Version 2 is written only when a version 2 value is set, so version 1
 * scenes write as before. */
int cm__scene_is_v2(const cm_scene_t *s) {
  if (s->timestep_s != 0)
    return 1;
  for (int i = 0; i < s->ncontacts; i++) {
    const cm_contact_t *c = &s->contacts[i];
    if (c->stiffness_t != 0 || c->damping_n != 0 || c->damping_t != 0 ||
        c->has_arms)
      return 1;
  }
  return 0;
}
