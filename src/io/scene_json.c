/* scene_json.c: the JSON scene format, versions 1 and 2 (docs/scene-format.md):
 * the checks of the reader (strict: unknown keys are errors outside "meta"),
 * on records that either front end fills (scene_stream.c streams text;
 * the tree adapter here reads a jansson tree for the server's patches and
 * stdio bodies), the public readers, and writing with round-trip number
 * formatting. Not for other formats. */
#include "io/scene_json_internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const cm__body_keys[] = {"name",    "fixed",    "mass",
                                     "inertia", "position", "orientation",
                                     "meta",    NULL};
const char *const cm__contact_keys[] = {
    "name",      "a",           "b",         "point",     "normal",
    "stiffness", "stiffness_t", "damping_n", "damping_t", "arm_a",
    "arm_b",     "meta",        NULL};
const char *const cm__root_keys[] = {"format", "version",  "dim",
                                     "bodies", "contacts", "meta",
                                     "name",   "timestep", NULL};

int cm__key_index(const char *const *keys, const char *k, size_t n) {
  for (int i = 0; keys[i]; i++)
    if (!strncmp(keys[i], k, n) && !keys[i][n])
      return i;
  return -1;
}

/* ---- where a value sits -------------------------------------------------- */

/* arr[i].field[j][k] (arr NULL: field at the root; a negative index or a
 * NULL field: absent). Formatted only for an error message: a million
 * contacts have about 13 million values. */
typedef struct {
  const char *arr;
  int i;
  const char *field;
  int j, k;
} cm__at_t;

static cm__at_t cm__at_elem(const char *arr, int i) {
  cm__at_t a = {arr, i, NULL, -1, -1};
  return a;
}

static cm__at_t cm__at_field(cm__at_t a, const char *field) {
  a.field = field;
  return a;
}

static cm__at_t cm__at_index(cm__at_t a, int idx) {
  if (a.j < 0)
    a.j = idx;
  else
    a.k = idx;
  return a;
}

static const char *cm__at_str(const cm__at_t *a, char *buf, size_t n) {
  int len = 0;
  buf[0] = 0;
  if (a->arr)
    len += snprintf(buf, n, a->i >= 0 ? "%s[%d]" : "%s", a->arr, a->i);
  if (a->field && (size_t)len < n)
    len += snprintf(buf + len, n - (size_t)len, "%s%s", a->arr ? "." : "",
                    a->field);
  if (a->j >= 0 && (size_t)len < n)
    len += snprintf(buf + len, n - (size_t)len, "[%d]", a->j);
  if (a->k >= 0 && (size_t)len < n)
    snprintf(buf + len, n - (size_t)len, "[%d]", a->k);
  return buf;
}

int cm__scene_bad(cm__rd_t *rd, const char *path, const char *fmt,
                  const char *detail) {
  char msg[2048];
  snprintf(msg, sizeof msg, fmt, detail ? detail : "");
  return CM__ERR(rd->ctx, CM_INVALID_SCENE, path, "%s: %s: %s", rd->source,
                 path, msg);
}

static int cm__bad_at(cm__rd_t *rd, const cm__at_t *at, const char *fmt,
                      const char *detail) {
  char path[400];
  return cm__scene_bad(rd, cm__at_str(at, path, sizeof path), fmt, detail);
}

/* ---- checks on captured values ------------------------------------------- */

static int cm__is_num(int kind) {
  return kind == CM__JV_INT || kind == CM__JV_REAL;
}

/* The value of key k of rec, or NULL when absent (json_object_get). */
static const cm__jv_t *cm__rv(const cm__rec_t *rec, int k) {
  return rec->present >> k & 1u ? &rec->v[k] : NULL;
}

static int cm__num(cm__rd_t *rd, const cm__jv_t *v, const cm__at_t *at,
                   double *out) {
  if (!v || !cm__is_num(v->kind))
    return cm__bad_at(rd, at, "expected a number%s", NULL);
  *out = v->num;
  if (!isfinite(*out))
    return cm__bad_at(rd, at, "not a finite number (NaN or infinity)%s", NULL);
  return CM_OK;
}

/* An array (is_arr) of count values of the given kinds must be exactly n
 * numbers. */
static int cm__vec_of(cm__rd_t *rd, int is_arr, size_t count, const int *kinds,
                      const double *vals, const cm__at_t *at, int n,
                      double *out, const char *what) {
  if (!is_arr || count != (size_t)n) {
    char d[160];
    snprintf(d, sizeof d, "expected %s: an array of %d numbers", what, n);
    if (is_arr) {
      size_t len = strlen(d);
      snprintf(d + len, sizeof d - len, ", got %zu", count);
    }
    return cm__bad_at(rd, at, "%s", d);
  }
  for (int i = 0; i < n; i++) {
    cm__at_t ai = cm__at_index(*at, i);
    if (!cm__is_num(kinds[i]))
      return cm__bad_at(rd, &ai, "expected a number%s", NULL);
    out[i] = vals[i];
  }
  return CM_OK;
}

static int cm__vec(cm__rd_t *rd, const cm__jv_t *v, const cm__at_t *at, int n,
                   double *out, const char *what) {
  int kinds[4] = {0};
  double vals[4] = {0};
  int is_arr = v && v->kind == CM__JV_ARR;
  for (size_t i = 0; is_arr && i < v->n && i < 4; i++)
    kinds[i] = v->e[i].kind, vals[i] = v->e[i].num;
  return cm__vec_of(rd, is_arr, is_arr ? v->n : 0, kinds, vals, at, n, out,
                    what);
}

int cm__rec_keys(cm__rd_t *rd, const cm__rec_t *rec, const char *arr, int i,
                 const char *const *keys) {
  if (!rec->unknown)
    return CM_OK;
  char list[256] = "";
  for (int k = 0; keys[k]; k++) {
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s%s", k ? ", " : "", keys[k]);
  }
  char d[400];
  snprintf(d, sizeof d,
           "unknown key (allowed: %s; put anything else under \"meta\")", list);
  cm__at_t at = {arr, arr ? i : -1, rec->unknown, -1, -1};
  return cm__bad_at(rd, &at, "%s", d);
}

/* A body reference: a name, an index, or null/absent (world, b only). */
static int cm__ref(cm__rd_t *rd, const cm_scene_t *s, const cm__jv_t *v,
                   const cm__at_t *at, int allow_world, int *out) {
  if (!v || v->kind == CM__JV_NULL) {
    if (!allow_world)
      return cm__bad_at(rd, at, "missing: a must name a body%s", NULL);
    *out = CM_WORLD;
    return CM_OK;
  }
  if (v->kind == CM__JV_STR) {
    int b = cm_scene_find_body(s, v->str);
    if (b < 0) {
      char d[300];
      snprintf(d, sizeof d, "unknown body \"%.200s\"", v->str);
      return cm__bad_at(rd, at, "%s", d);
    }
    *out = b;
    return CM_OK;
  }
  if (v->kind == CM__JV_INT) {
    long long b = v->ival;
    if (b < 0 || b >= s->nbodies) {
      char d[128];
      snprintf(d, sizeof d, "body index %lld out of range (0..%d)", b,
               s->nbodies - 1);
      return cm__bad_at(rd, at, "%s", d);
    }
    *out = (int)b;
    return CM_OK;
  }
  return cm__bad_at(rd, at, "expected a body name or a zero-based index%s",
                    NULL);
}

static int cm__read_inertia(cm__rd_t *rd, const cm__jv_t *v, const cm__at_t *at,
                            int dim, double *I) {
  if (dim == 2) {
    I[0] = 0;
    return cm__num(rd, v, at, &I[0]);
  }
  memset(I, 0, 9 * sizeof *I);
  if (v && v->kind == CM__JV_ARR && v->n == 3 && cm__is_num(v->e[0].kind)) {
    double d[3];
    int st = cm__vec(rd, v, at, 3, d, "[Ixx, Iyy, Izz]");
    if (st)
      return st;
    I[0] = d[0], I[4] = d[1], I[8] = d[2];
    return CM_OK;
  }
  if (v && v->kind == CM__JV_ARR && v->n == 3) {
    for (int r = 0; r < 3; r++) {
      const cm__jelem_t *e = &v->e[r];
      cm__at_t ar = cm__at_index(*at, r);
      int st = cm__vec_of(rd, e->kind == CM__JV_ARR, e->n, e->sub_kind, e->sub,
                          &ar, 3, I + 3 * r, "a row of the 3x3 inertia");
      if (st)
        return st;
    }
    return CM_OK;
  }
  return cm__bad_at(rd, at,
                    "expected [Ixx, Iyy, Izz] or a symmetric 3x3 nested "
                    "array%s",
                    NULL);
}

/* fixed, name, position and mass of a body, in this order. */
static int cm__body_head(cm__rd_t *rd, const cm_scene_t *s,
                         const cm__rec_t *rec, cm__at_t at, cm_body_t *b,
                         const char **name) {
  const cm__jv_t *v = cm__rv(rec, CM__BK_FIXED);
  cm__at_t p = cm__at_field(at, "fixed");
  if (v && v->kind != CM__JV_TRUE && v->kind != CM__JV_FALSE)
    return cm__bad_at(rd, &p, "expected true or false%s", NULL);
  b->fixed = v && v->kind == CM__JV_TRUE;
  *name = NULL;
  v = cm__rv(rec, CM__BK_NAME);
  p = cm__at_field(at, "name");
  if (v && v->kind != CM__JV_NULL) {
    if (v->kind != CM__JV_STR || !v->str[0])
      return cm__bad_at(rd, &p, "expected a non-empty string%s", NULL);
    *name = v->str;
  }
  int st;
  v = cm__rv(rec, CM__BK_POSITION);
  p = cm__at_field(at, "position");
  if (v) {
    st = cm__vec(rd, v, &p, s->dim, b->position,
                 s->dim == 2 ? "[x, y]" : "[x, y, z]");
    if (st)
      return st;
  } else if (!b->fixed) {
    return cm__bad_at(rd, &p, "missing: a moving body needs a position%s",
                      NULL);
  }
  v = cm__rv(rec, CM__BK_MASS);
  p = cm__at_field(at, "mass");
  if (v) {
    st = cm__num(rd, v, &p, &b->mass);
    if (st)
      return st;
  } else if (!b->fixed) {
    return cm__bad_at(rd, &p, "missing: a moving body needs a mass%s", NULL);
  }
  if (b->fixed && v && !(b->mass > 0))
    return cm__bad_at(rd, &p,
                      "must be > 0 if given (a fixed body's mass is not used: "
                      "omit it)%s",
                      NULL);
  return CM_OK;
}

int cm__rec_body(cm__rd_t *rd, cm_scene_t *s, const cm__rec_t *rec, int i) {
  cm__at_t at = cm__at_elem("bodies", i), p;
  int st = cm__rec_keys(rd, rec, "bodies", i, cm__body_keys);
  if (st)
    return st;
  cm_body_t b;
  cm_body_init(&b);
  const char *name = NULL;
  if ((st = cm__body_head(rd, s, rec, at, &b, &name)))
    return st;
  const cm__jv_t *v = cm__rv(rec, CM__BK_INERTIA);
  p = cm__at_field(at, "inertia");
  if (v) {
    st = cm__read_inertia(rd, v, &p, s->dim, b.inertia);
    if (st)
      return st;
  } else if (!b.fixed) {
    return cm__bad_at(rd, &p, "missing: a moving body needs an inertia%s",
                      NULL);
  }
  v = cm__rv(rec, CM__BK_ORIENTATION);
  p = cm__at_field(at, "orientation");
  if (v) {
    if (s->dim == 2)
      return cm__bad_at(rd, &p,
                        "not used in 2D (the angle is a dof; omit it)%s", NULL);
    st = cm__vec(rd, v, &p, 4, b.orientation, "a quaternion [w, x, y, z]");
    if (st)
      return st;
    double qn = 0;
    for (int j = 0; j < 4; j++)
      qn += b.orientation[j] * b.orientation[j];
    if (!(qn > 0))
      return cm__bad_at(rd, &p, "zero quaternion; give a unit [w, x, y, z]%s",
                        NULL);
  }
  st = cm_scene_add_body(rd->ctx, s, &b, name);
  if (st < 0) {
    if (st == CM_INVALID_SCENE) {
      char msg[sizeof rd->ctx->message];
      memcpy(msg, rd->ctx->message, sizeof msg);
      p = cm__at_field(at, "name");
      return cm__bad_at(rd, &p, "%s", msg);
    }
    return st;
  }
  return CM_OK;
}

/* The optional lever arms (version 2): both or neither. */
static int cm__contact_arms(cm__rd_t *rd, const cm__rec_t *rec, cm__at_t at,
                            int dim, cm_contact_t *c) {
  const cm__jv_t *va = cm__rv(rec, CM__CK_ARM_A),
                 *vb = cm__rv(rec, CM__CK_ARM_B);
  if (!va && !vb)
    return CM_OK;
  cm__at_t p = cm__at_field(at, va ? "arm_a" : "arm_b");
  if (rd->version < 2)
    return cm__bad_at(
        rd, &p, "needs scene format version 2: set \"version\": 2%s", NULL);
  if (!va || !vb)
    return cm__bad_at(rd, &p, "give both arm_a and arm_b, or neither%s", NULL);
  int st =
      cm__vec(rd, va, &p, dim, c->arm_a, dim == 2 ? "[x, y]" : "[x, y, z]");
  p = cm__at_field(at, "arm_b");
  if (!st)
    st = cm__vec(rd, vb, &p, dim, c->arm_b, dim == 2 ? "[x, y]" : "[x, y, z]");
  c->has_arms = !st;
  return st;
}

/* The version 2 fields of a contact: optional numbers >= 0 (0: none). */
static int cm__contact_v2(cm__rd_t *rd, const cm__rec_t *rec, cm__at_t at,
                          cm_contact_t *c) {
  static const int key[] = {CM__CK_STIFFNESS_T, CM__CK_DAMPING_N,
                            CM__CK_DAMPING_T};
  double *dst[] = {&c->stiffness_t, &c->damping_n, &c->damping_t};
  for (int j = 0; j < 3; j++) {
    const cm__jv_t *v = cm__rv(rec, key[j]);
    if (!v)
      continue;
    cm__at_t p = cm__at_field(at, cm__contact_keys[key[j]]);
    if (rd->version < 2)
      return cm__bad_at(rd, &p,
                        "needs scene format version 2 (tangential springs "
                        "and dashpots): set \"version\": 2%s",
                        NULL);
    int st = cm__num(rd, v, &p, dst[j]);
    if (st)
      return st;
    if (!(*dst[j] >= 0))
      return cm__bad_at(rd, &p, "must be >= 0 (0: none)%s", NULL);
  }
  return CM_OK;
}

/* The point, the normal and the stiffness of a contact. */
static int cm__contact_geom(cm__rd_t *rd, const cm_scene_t *s,
                            const cm__rec_t *rec, cm__at_t at,
                            cm_contact_t *c) {
  const cm__jv_t *v = cm__rv(rec, CM__CK_POINT);
  cm__at_t p = cm__at_field(at, "point");
  int st;
  if (!v)
    return cm__bad_at(rd, &p, "missing: a contact needs a world point%s", NULL);
  if ((st = cm__vec(rd, v, &p, s->dim, c->point,
                    s->dim == 2 ? "[x, y]" : "[x, y, z]")))
    return st;
  v = cm__rv(rec, CM__CK_NORMAL);
  p = cm__at_field(at, "normal");
  if (!v)
    return cm__bad_at(rd, &p, "missing: a contact needs a normal from b to a%s",
                      NULL);
  if ((st = cm__vec(rd, v, &p, s->dim, c->normal,
                    s->dim == 2 ? "[nx, ny]" : "[nx, ny, nz]")))
    return st;
  int nonzero = 0; /* not the squares: 1e-200 underflows, yet has a length */
  for (int j = 0; j < s->dim; j++)
    nonzero |= c->normal[j] != 0;
  if (!nonzero)
    return cm__bad_at(rd, &p, "zero length; give the normal from b to a%s",
                      NULL);
  v = cm__rv(rec, CM__CK_STIFFNESS);
  p = cm__at_field(at, "stiffness");
  if (!v)
    return cm__bad_at(rd, &p, "missing: a contact needs a stiffness > 0%s",
                      NULL);
  if ((st = cm__num(rd, v, &p, &c->stiffness)))
    return st;
  if (!(c->stiffness >= 0)) /* 0: a dashpot alone, if damping_n > 0 */
    return cm__bad_at(rd, &p, "must be > 0 (a penalty stiffness)%s", NULL);
  return CM_OK;
}

/* One contact at arr[i] (refs resolve in s, which is not changed). */
int cm__rec_contact(cm__rd_t *rd, const cm_scene_t *s, const cm__rec_t *rec,
                    const char *arr, int i, cm_contact_t *out,
                    const char **out_name) {
  cm__at_t at = cm__at_elem(arr, i), p;
  int st = cm__rec_keys(rd, rec, arr, i, cm__contact_keys);
  if (st)
    return st;
  cm_contact_t c;
  cm_contact_init(&c);
  p = cm__at_field(at, "a");
  if ((st = cm__ref(rd, s, cm__rv(rec, CM__CK_A), &p, 0, &c.a)))
    return st;
  p = cm__at_field(at, "b");
  if ((st = cm__ref(rd, s, cm__rv(rec, CM__CK_B), &p, 1, &c.b)))
    return st;
  if (c.a == c.b)
    return cm__bad_at(rd, &p,
                      "a and b are the same body; a contact joins two "
                      "different bodies%s",
                      NULL);
  if ((st = cm__contact_geom(rd, s, rec, at, &c)))
    return st;
  if ((st = cm__contact_v2(rd, rec, at, &c)))
    return st;
  p = cm__at_field(at, "stiffness");
  const char *why = cm__dashpot_alone_fault(&c);
  if (why)
    return cm__bad_at(rd, &p, "%s", why);
  if ((st = cm__contact_arms(rd, rec, at, s->dim, &c)))
    return st;
  const char *name = NULL;
  const cm__jv_t *v = cm__rv(rec, CM__CK_NAME);
  p = cm__at_field(at, "name");
  if (v && v->kind != CM__JV_NULL) {
    if (v->kind != CM__JV_STR)
      return cm__bad_at(rd, &p, "expected a string%s", NULL);
    name = v->str;
  }
  *out = c;
  *out_name = name;
  return CM_OK;
}

int cm__rec_root_head(cm__rd_t *rd, const cm__rec_t *root, int *dim,
                      double *timestep) {
  const cm__jv_t *v = cm__rv(root, CM__RK_FORMAT);
  if (!v || v->kind != CM__JV_STR || strcmp(v->str, "cmodes-scene"))
    return cm__scene_bad(rd, "format", "expected \"cmodes-scene\"%s", NULL);
  v = cm__rv(root, CM__RK_VERSION);
  if (!v || v->kind != CM__JV_INT || (v->ival != 1 && v->ival != 2))
    return cm__scene_bad(rd, "version",
                         "expected 1 or 2 (2: tangential springs, dashpots "
                         "and the deck's time step)%s",
                         NULL);
  rd->version = (int)v->ival;
  *timestep = 0;
  v = cm__rv(root, CM__RK_TIMESTEP);
  if (v) {
    cm__at_t p = {NULL, -1, "timestep", -1, -1};
    int st;
    if (rd->version < 2)
      return cm__scene_bad(rd, "timestep",
                           "needs scene format version 2: set \"version\": "
                           "2%s",
                           NULL);
    if ((st = cm__num(rd, v, &p, timestep)))
      return st;
    if (!(*timestep >= 0))
      return cm__scene_bad(rd, "timestep", "must be >= 0 (seconds; 0: none)%s",
                           NULL);
  }
  v = cm__rv(root, CM__RK_DIM);
  if (!v || v->kind != CM__JV_INT || (v->ival != 2 && v->ival != 3))
    return cm__scene_bad(rd, "dim", "expected 2 or 3%s", NULL);
  *dim = (int)v->ival;
  return CM_OK;
}

int cm__rec_root_name(cm__rd_t *rd, const cm__rec_t *root, cm_scene_t *s) {
  const cm__jv_t *title = cm__rv(root, CM__RK_NAME);
  if (!title || title->kind == CM__JV_NULL)
    return CM_OK;
  if (title->kind != CM__JV_STR)
    return cm__scene_bad(rd, "name", "expected a string%s", NULL);
  if (!(s->name = cm__strdup(title->str)))
    return CM__ERR(rd->ctx, CM_NOMEM, NULL, "out of memory");
  return CM_OK;
}

int cm__scene_validate_named(cm__rd_t *rd, cm_scene_t *s) {
  int st = cm_scene_validate(rd->ctx, s);
  if (st) { /* prefix the source name */
    char msg[2 * sizeof rd->ctx->message];
    snprintf(msg, sizeof msg, "%s: %s", rd->source, rd->ctx->message);
    msg[sizeof rd->ctx->message - 1] = 0;
    memcpy(rd->ctx->message, msg, sizeof rd->ctx->message);
  }
  return st;
}

/* ---- the tree adapter: jansson values into records ----------------------- */

static int cm__tree_kind(const json_t *j) {
  switch (json_typeof(j)) {
  case JSON_NULL:
    return CM__JV_NULL;
  case JSON_TRUE:
    return CM__JV_TRUE;
  case JSON_FALSE:
    return CM__JV_FALSE;
  case JSON_INTEGER:
    return CM__JV_INT;
  case JSON_REAL:
    return CM__JV_REAL;
  case JSON_STRING:
    return CM__JV_STR;
  case JSON_ARRAY:
    return CM__JV_ARR;
  default:
    return CM__JV_OBJ;
  }
}

static void cm__tree_elem(const json_t *j, cm__jelem_t *e) {
  memset(e, 0, sizeof *e);
  e->kind = cm__tree_kind(j);
  if (json_is_number(j))
    e->num = json_number_value(j);
  if (json_is_array(j)) {
    e->n = json_array_size(j);
    for (size_t i = 0; i < e->n && i < 4; i++) {
      const json_t *x = json_array_get(j, i);
      e->sub_kind[i] = cm__tree_kind(x);
      e->sub[i] = json_is_number(x) ? json_number_value(x) : 0;
    }
  }
}

static void cm__tree_value(const json_t *j, cm__jv_t *v) {
  v->kind = cm__tree_kind(j);
  v->n = 0;
  if (json_is_integer(j))
    v->ival = json_integer_value(j);
  if (json_is_number(j))
    v->num = json_number_value(j);
  if (json_is_string(j))
    v->str = json_string_value(j);
  if (json_is_array(j)) {
    v->n = json_array_size(j);
    for (size_t i = 0; i < v->n && i < 4; i++)
      cm__tree_elem(json_array_get(j, i), &v->e[i]);
  }
}

static void cm__tree_rec(const json_t *obj, const char *const *keys,
                         cm__rec_t *rec) {
  const char *key;
  json_t *val;
  rec->present = 0;
  rec->unknown = NULL;
  json_object_foreach((json_t *)obj, key, val) {
    int k = cm__key_index(keys, key, strlen(key));
    if (k < 0) {
      if (!rec->unknown)
        rec->unknown = key;
      continue;
    }
    rec->present |= 1u << k;
    cm__tree_value(val, &rec->v[k]);
  }
}

static int cm__tree_scene(cm__rd_t *rd, const json_t *root, cm_scene_t **out) {
  cm__rec_t rr, rec;
  int dim, st;
  double timestep;
  if (!json_is_object(root))
    return cm__scene_bad(rd, "(root)", "expected a JSON object%s", NULL);
  cm__tree_rec(root, cm__root_keys, &rr);
  if ((st = cm__rec_keys(rd, &rr, NULL, -1, cm__root_keys)) ||
      (st = cm__rec_root_head(rd, &rr, &dim, &timestep)))
    return st;
  cm_scene_t *s = cm_scene_create(dim);
  if (!s)
    return CM__ERR(rd->ctx, CM_NOMEM, NULL, "out of memory");
  s->timestep_s = timestep;
  json_t *bodies = json_object_get(root, "bodies");
  json_t *contacts = json_object_get(root, "contacts");
  if (!json_is_array(bodies))
    st = cm__scene_bad(rd, "bodies", "expected an array of bodies%s", NULL);
  else if (contacts && !json_is_array(contacts))
    st = cm__scene_bad(rd, "contacts", "expected an array of contacts%s", NULL);
  for (size_t i = 0; !st && i < json_array_size(bodies); i++) {
    json_t *jb = json_array_get(bodies, i);
    cm__at_t at = cm__at_elem("bodies", (int)i);
    if (!json_is_object(jb)) {
      st = cm__bad_at(rd, &at, "expected an object%s", NULL);
      break;
    }
    cm__tree_rec(jb, cm__body_keys, &rec);
    st = cm__rec_body(rd, s, &rec, (int)i);
  }
  for (size_t i = 0; !st && i < json_array_size(contacts); i++) {
    json_t *jc = json_array_get(contacts, i);
    cm__at_t at = cm__at_elem("contacts", (int)i);
    cm_contact_t c;
    const char *name = NULL;
    if (!json_is_object(jc)) {
      st = cm__bad_at(rd, &at, "expected an object%s", NULL);
      break;
    }
    cm__tree_rec(jc, cm__contact_keys, &rec);
    st = cm__rec_contact(rd, s, &rec, "contacts", (int)i, &c, &name);
    if (!st && (st = cm_scene_add_contact(rd->ctx, s, &c, name)) > 0)
      st = CM_OK;
  }
  if (!st)
    st = cm__rec_root_name(rd, &rr, s);
  json_t *meta = json_object_get(root, "meta");
  if (!st && meta) {
    s->meta_json = json_dumps(meta, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s->meta_json)
      st = CM__ERR(rd->ctx, CM_NOMEM, NULL, "out of memory");
  }
  if (!st)
    st = cm__scene_validate_named(rd, s);
  if (st)
    cm_scene_destroy(&s);
  *out = s;
  return st;
}

/* ---- the same readers for patches (server/patch.c) ------------------------
 */

int cm__scene_contact_from_json(cm_context_t *ctx, const cm_scene_t *s,
                                const json_t *jc, const char *source,
                                const char *arr, int i, cm_contact_t *c,
                                const char **name) {
  cm__rd_t rd = {ctx, source, 2};
  if (!json_is_object(jc)) {
    cm__at_t at = cm__at_elem(arr, i);
    return cm__bad_at(&rd, &at, "expected an object%s", NULL);
  }
  cm__rec_t rec;
  cm__tree_rec(jc, cm__contact_keys, &rec);
  return cm__rec_contact(&rd, s, &rec, arr, i, c, name);
}

int cm__scene_num_from_json(cm_context_t *ctx, const json_t *v,
                            const char *source, const char *path, double *out) {
  cm__rd_t rd = {ctx, source, 2};
  cm__at_t at = {path, -1, NULL, -1, -1};
  cm__jv_t jv;
  if (v)
    cm__tree_value(v, &jv);
  return cm__num(&rd, v ? &jv : NULL, &at, out);
}

int cm__scene_vec_from_json(cm_context_t *ctx, const json_t *v,
                            const char *source, const char *path, int n,
                            double *out, const char *what) {
  cm__rd_t rd = {ctx, source, 2};
  cm__at_t at = {path, -1, NULL, -1, -1};
  cm__jv_t jv;
  if (v)
    cm__tree_value(v, &jv);
  return cm__vec(&rd, v ? &jv : NULL, &at, n, out, what);
}

int cm__scene_from_json(cm_context_t *ctx, const json_t *root,
                        const char *source, cm_scene_t **out) {
  *out = NULL;
  cm__rd_t rd = {ctx, source ? source : "scene", 1};
  return cm__tree_scene(&rd, root, out);
}

int cm__scene_parse_json_tree(cm_context_t *ctx, const char *text, size_t len,
                              const char *source, cm_scene_t **out) {
  *out = NULL;
  json_error_t err;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
  if (!root)
    return CM__ERR(ctx, CM_PARSE, "", "%s:%d:%d: malformed JSON: %s",
                   source ? source : "scene", err.line, err.column, err.text);
  int st = cm__scene_from_json(ctx, root, source, out);
  json_decref(root);
  return st;
}

int cm_scene_parse_json(cm_context_t *ctx, const char *text, size_t len,
                        const char *source, cm_scene_t **out) {
  return cm__scene_parse_json_limited(ctx, text, len, source, NULL, out);
}

/* Reads a whole stream into memory: a regular file in one allocation of
 * its size (plus a NUL), anything else by doubling; *over is set (and NULL
 * returned) past cm__input_limit() bytes: /dev/zero or an endless FIFO;
 * *nomem stays set when an allocation failed. */
static char *cm__slurp(FILE *f, size_t *len, int *over, int *nomem) {
  size_t cap = 1 << 16, n = 0, limit = cm__input_limit();
  *over = 0;
  *nomem = 1; /* until the read ends */
  if (!fseek(f, 0, SEEK_END)) {
    long end = ftell(f);
    if (end >= 0 && !fseek(f, 0, SEEK_SET))
      cap = (size_t)end + 1;
    if (end >= 0 && (size_t)end > limit) {
      *over = 1;
      return NULL;
    }
  }
  clearerr(f);
  /* the library's allocator: huge pages for a large file's one buffer
   * when they are the cheaper kind here (still realloc'd below) */
  char *buf = cm__malloc(NULL, cap, 1);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap) {
      *nomem = 0;
      if (ferror(f)) {
        free(buf);
        return NULL;
      }
      break;
    }
    if (n > limit) {
      *over = 1;
      free(buf);
      return NULL;
    }
    char *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      return NULL;
    }
    buf = nb;
    cap *= 2;
  }
  if (buf && n > limit) {
    *over = 1;
    free(buf);
    return NULL;
  }
  *len = n;
  return buf;
}

int cm_scene_read_file(cm_context_t *ctx, const char *path, cm_scene_t **out) {
  *out = NULL;
  int use_stdin = !strcmp(path, "-");
  FILE *f = use_stdin ? stdin : cm__fopen_input(path, "rb");
  if (!f)
    return CM__ERR(ctx, CM_IO, path, "%s: cannot open: %s", path,
                   strerror(errno));
  /* a regular binary file within the input limit: read through a small
   * buffer, never whole (the slurp below would hold all of it) */
  struct stat sb;
  char magic[8];
  if (!use_stdin && !fstat(fileno(f), &sb) && S_ISREG(sb.st_mode) &&
      (size_t)sb.st_size <= cm__input_limit() &&
      fread(magic, 1, sizeof magic, f) == sizeof magic &&
      cm__scene_is_binary(magic, sizeof magic) && !fseek(f, 0, SEEK_SET)) {
    int st = cm__scene_read_binary(ctx, f, (size_t)sb.st_size, path, out);
    fclose(f);
    return st;
  }
  if (!use_stdin)
    rewind(f);
  size_t len = 0;
  int over = 0, nomem = 0;
  char *text = cm__slurp(f, &len, &over, &nomem);
  if (!use_stdin)
    fclose(f);
  if (over)
    return cm__input_error(ctx, use_stdin ? "<stdin>" : path, 0, -2);
  if (!text && nomem)
    return CM__ERR(ctx, CM_NOMEM, path, "%s: out of memory reading the file",
                   path);
  if (!text)
    return CM__ERR(ctx, CM_IO, path, "%s: cannot read the file", path);
  const char *src = use_stdin ? "<stdin>" : path;
  int st = cm__scene_is_binary(text, len)
               ? cm__scene_parse_binary(ctx, text, len, src, out)
               : cm_scene_parse_json(ctx, text, len, src, out);
  free(text);
  return st;
}

/* ---- writing ------------------------------------------------------------- */

/* %.15g when that reads back exactly (short numbers stay short), else
 * %.17g, which always does: at most two formats and one strtod a number. */
static void cm__fmt(char *buf, size_t size, double v) {
  snprintf(buf, size, "%.15g", v);
  if (strtod(buf, NULL) != v)
    snprintf(buf, size, "%.17g", v);
}

static void cm__put_vec(FILE *f, const double *v, int n) {
  char b[40];
  fputc('[', f);
  for (int i = 0; i < n; i++) {
    cm__fmt(b, sizeof b, v[i]);
    fprintf(f, "%s%s", i ? ", " : "", b);
  }
  fputc(']', f);
}

static void cm__put_str(FILE *f, const char *s) {
  json_t *j = json_string(s);
  char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
  fputs(t ? t : "null", f);
  free(t);
  json_decref(j);
}

int cm_scene_write_json(cm_context_t *ctx, const cm_scene_t *s, FILE *f) {
  char b[40];
  int d = s->dim;
  int v2 = cm__scene_is_v2(s);
  fprintf(f, "{\"format\": \"cmodes-scene\", \"version\": %d, \"dim\": %d,\n",
          v2 ? 2 : 1, d);
  if (s->timestep_s > 0) {
    cm__fmt(b, sizeof b, s->timestep_s);
    fprintf(f, " \"timestep\": %s,\n", b);
  }
  if (s->name) {
    fputs(" \"name\": ", f);
    cm__put_str(f, s->name);
    fputs(",\n", f);
  }
  if (s->meta_json)
    fprintf(f, " \"meta\": %s,\n", s->meta_json);
  fprintf(f, " \"bodies\": [");
  for (int i = 0; i < s->nbodies; i++) {
    const cm_body_t *bd = &s->bodies[i];
    fprintf(f, "%s\n  {", i ? "," : "");
    const char *nm = cm_scene_body_name(s, i);
    if (nm) {
      fputs("\"name\": ", f);
      cm__put_str(f, nm);
      fputs(", ", f);
    }
    if (bd->fixed)
      fputs("\"fixed\": true, ", f);
    fputs("\"position\": ", f);
    cm__put_vec(f, bd->position, d);
    if (!bd->fixed) {
      cm__fmt(b, sizeof b, bd->mass);
      fprintf(f, ", \"mass\": %s, \"inertia\": ", b);
      if (d == 2) {
        cm__fmt(b, sizeof b, bd->inertia[0]);
        fputs(b, f);
      } else {
        fputc('[', f);
        for (int r = 0; r < 3; r++) {
          cm__put_vec(f, bd->inertia + 3 * r, 3);
          fputs(r < 2 ? ", " : "", f);
        }
        fputc(']', f);
      }
      if (d == 3) {
        fputs(", \"orientation\": ", f);
        cm__put_vec(f, bd->orientation, 4);
      }
    }
    fputc('}', f);
  }
  fprintf(f, "\n ],\n \"contacts\": [");
  for (int i = 0; i < s->ncontacts; i++) {
    const cm_contact_t *c = &s->contacts[i];
    fprintf(f, "%s\n  {", i ? "," : "");
    const char *nm = cm_scene_contact_name(s, i);
    if (nm) {
      fputs("\"name\": ", f);
      cm__put_str(f, nm);
      fputs(", ", f);
    }
    fprintf(f, "\"a\": %d, \"b\": ", c->a);
    if (c->b == CM_WORLD)
      fputs("null", f);
    else
      fprintf(f, "%d", c->b);
    fputs(", \"point\": ", f);
    cm__put_vec(f, c->point, d);
    fputs(", \"normal\": ", f);
    cm__put_vec(f, c->normal, d);
    cm__fmt(b, sizeof b, c->stiffness);
    fprintf(f, ", \"stiffness\": %s", b);
    static const char *const key[] = {"stiffness_t", "damping_n", "damping_t"};
    const double val[] = {c->stiffness_t, c->damping_n, c->damping_t};
    for (int j = 0; j < 3; j++)
      if (val[j] != 0) {
        cm__fmt(b, sizeof b, val[j]);
        fprintf(f, ", \"%s\": %s", key[j], b);
      }
    if (c->has_arms) {
      fputs(", \"arm_a\": ", f);
      cm__put_vec(f, c->arm_a, d);
      fputs(", \"arm_b\": ", f);
      cm__put_vec(f, c->arm_b, d);
    }
    fputc('}', f);
  }
  fprintf(f, "\n ]\n}\n");
  if (ferror(f))
    return CM__ERR(ctx, CM_IO, NULL, "error writing the scene");
  return CM_OK;
}

char *cm_scene_to_json(cm_context_t *ctx, const cm_scene_t *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) {
    CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
    return NULL;
  }
  int st = cm_scene_write_json(ctx, s, f);
  fclose(f);
  if (st) {
    free(buf);
    return NULL;
  }
  return buf;
}
