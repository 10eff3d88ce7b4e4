/* scene_json.c: the JSON scene format, versions 1 and 2 (docs/scene-format.md):
 * reading with jansson (strict: unknown keys are errors outside "meta") and
 * writing with round-trip number formatting. Not for other formats. */
#include "internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading helpers ----------------------------------------------------- */

typedef struct {
  cm_context_t *ctx;  /* error sink */
  const char *source; /* input name for messages */
  int version;        /* the scene's format version (1 or 2) */
} cm__rd_t;

/* Where a value sits: arr[i].field[j][k] (arr NULL: field at the root;
 * a negative index or a NULL field: absent). Formatted only for an error
 * message: a million contacts have about 13 million values. */
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

static int cm__bad(cm__rd_t *rd, const char *path, const char *fmt,
                   const char *detail) {
  char msg[2048];
  snprintf(msg, sizeof msg, fmt, detail ? detail : "");
  return CM__ERR(rd->ctx, CM_INVALID_SCENE, path, "%s: %s: %s", rd->source,
                 path, msg);
}

static int cm__bad_at(cm__rd_t *rd, const cm__at_t *at, const char *fmt,
                      const char *detail) {
  char path[400];
  return cm__bad(rd, cm__at_str(at, path, sizeof path), fmt, detail);
}

static int cm__num(cm__rd_t *rd, json_t *v, const cm__at_t *at, double *out) {
  if (!json_is_number(v))
    return cm__bad_at(rd, at, "expected a number%s", NULL);
  *out = json_number_value(v);
  if (!isfinite(*out))
    return cm__bad_at(rd, at, "not a finite number (NaN or infinity)%s",
                      NULL);
  return CM_OK;
}

/* Reads an array of exactly n numbers. */
static int cm__vec(cm__rd_t *rd, json_t *v, const cm__at_t *at, int n,
                   double *out, const char *what) {
  if (!json_is_array(v) || (int)json_array_size(v) != n) {
    char d[160];
    snprintf(d, sizeof d, "expected %s: an array of %d numbers", what, n);
    if (json_is_array(v)) {
      size_t len = strlen(d);
      snprintf(d + len, sizeof d - len, ", got %zu", json_array_size(v));
    }
    return cm__bad_at(rd, at, "%s", d);
  }
  for (int i = 0; i < n; i++) {
    cm__at_t ai = cm__at_index(*at, i);
    int st = cm__num(rd, json_array_get(v, (size_t)i), &ai, &out[i]);
    if (st)
      return st;
  }
  return CM_OK;
}

/* Errors on any key of obj not listed in allowed (NULL-terminated). */
static int cm__keys(cm__rd_t *rd, json_t *obj, const cm__at_t *at,
                    const char *const *allowed) {
  const char *key;
  json_t *val;
  json_object_foreach(obj, key, val) {
    int ok = 0;
    for (int i = 0; allowed[i]; i++)
      if (!strcmp(key, allowed[i]))
        ok = 1;
    if (!ok) {
      char list[256] = "";
      for (int i = 0; allowed[i]; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                 allowed[i]);
      }
      char d[400];
      snprintf(d, sizeof d,
               "unknown key (allowed: %s; put anything else under \"meta\")",
               list);
      cm__at_t ak = cm__at_field(*at, key);
      return cm__bad_at(rd, &ak, "%s", d);
    }
  }
  return CM_OK;
}

/* A body reference: a name, an index, or null/absent (world, b only). */
static int cm__ref(cm__rd_t *rd, const cm_scene_t *s, json_t *v,
                   const cm__at_t *at, int allow_world, int *out) {
  if (!v || json_is_null(v)) {
    if (!allow_world)
      return cm__bad_at(rd, at, "missing: a must name a body%s", NULL);
    *out = CM_WORLD;
    return CM_OK;
  }
  if (json_is_string(v)) {
    int b = cm_scene_find_body(s, json_string_value(v));
    if (b < 0) {
      char d[300];
      snprintf(d, sizeof d, "unknown body \"%.200s\"", json_string_value(v));
      return cm__bad_at(rd, at, "%s", d);
    }
    *out = b;
    return CM_OK;
  }
  if (json_is_integer(v)) {
    json_int_t b = json_integer_value(v);
    if (b < 0 || b >= s->nbodies) {
      char d[128];
      snprintf(d, sizeof d, "body index %lld out of range (0..%d)",
               (long long)b, s->nbodies - 1);
      return cm__bad_at(rd, at, "%s", d);
    }
    *out = (int)b;
    return CM_OK;
  }
  return cm__bad_at(rd, at,
                    "expected a body name or a zero-based index%s", NULL);
}

static int cm__read_inertia(cm__rd_t *rd, json_t *v, const cm__at_t *at,
                            int dim, double *I) {
  if (dim == 2) {
    I[0] = 0;
    return cm__num(rd, v, at, &I[0]);
  }
  memset(I, 0, 9 * sizeof *I);
  if (json_is_array(v) && json_array_size(v) == 3 &&
      json_is_number(json_array_get(v, 0))) {
    double d[3];
    int st = cm__vec(rd, v, at, 3, d, "[Ixx, Iyy, Izz]");
    if (st)
      return st;
    I[0] = d[0], I[4] = d[1], I[8] = d[2];
    return CM_OK;
  }
  if (json_is_array(v) && json_array_size(v) == 3) {
    for (int r = 0; r < 3; r++) {
      cm__at_t ar = cm__at_index(*at, r);
      int st = cm__vec(rd, json_array_get(v, (size_t)r), &ar, 3, I + 3 * r,
                       "a row of the 3x3 inertia");
      if (st)
        return st;
    }
    return CM_OK;
  }
  return cm__bad_at(rd, at,
                    "expected [Ixx, Iyy, Izz] or a symmetric 3x3 nested "
                    "array%s", NULL);
}

static int cm__read_body(cm__rd_t *rd, cm_scene_t *s, json_t *jb, int i) {
  static const char *const keys[] = {"name",        "fixed",    "mass",
                                     "inertia",     "position", "orientation",
                                     "meta",        NULL};
  cm__at_t at = cm__at_elem("bodies", i), p;
  if (!json_is_object(jb))
    return cm__bad_at(rd, &at, "expected an object%s", NULL);
  int st = cm__keys(rd, jb, &at, keys);
  if (st)
    return st;
  cm_body_t b;
  cm_body_init(&b);
  json_t *v = json_object_get(jb, "fixed");
  p = cm__at_field(at, "fixed");
  if (v && !json_is_boolean(v))
    return cm__bad_at(rd, &p, "expected true or false%s", NULL);
  b.fixed = v && json_is_true(v);
  const char *name = NULL;
  v = json_object_get(jb, "name");
  p = cm__at_field(at, "name");
  if (v && !json_is_null(v)) {
    if (!json_is_string(v) || !json_string_value(v)[0])
      return cm__bad_at(rd, &p, "expected a non-empty string%s", NULL);
    name = json_string_value(v);
  }
  v = json_object_get(jb, "position");
  p = cm__at_field(at, "position");
  if (v) {
    st = cm__vec(rd, v, &p, s->dim, b.position,
                 s->dim == 2 ? "[x, y]" : "[x, y, z]");
    if (st)
      return st;
  } else if (!b.fixed) {
    return cm__bad_at(rd, &p, "missing: a moving body needs a position%s",
                      NULL);
  }
  v = json_object_get(jb, "mass");
  p = cm__at_field(at, "mass");
  if (v) {
    st = cm__num(rd, v, &p, &b.mass);
    if (st)
      return st;
  } else if (!b.fixed) {
    return cm__bad_at(rd, &p, "missing: a moving body needs a mass%s", NULL);
  }
  if (b.fixed && v && !(b.mass > 0))
    return cm__bad_at(rd, &p,
                      "must be > 0 if given (a fixed body's mass is not used: "
                      "omit it)%s", NULL);
  v = json_object_get(jb, "inertia");
  p = cm__at_field(at, "inertia");
  if (v) {
    st = cm__read_inertia(rd, v, &p, s->dim, b.inertia);
    if (st)
      return st;
  } else if (!b.fixed) {
    return cm__bad_at(rd, &p, "missing: a moving body needs an inertia%s",
                      NULL);
  }
  v = json_object_get(jb, "orientation");
  p = cm__at_field(at, "orientation");
  if (v) {
    if (s->dim == 2)
      return cm__bad_at(rd, &p,
                        "not used in 2D (the angle is a dof; omit it)%s",
                        NULL);
    st = cm__vec(rd, v, &p, 4, b.orientation, "a quaternion [w, x, y, z]");
    if (st)
      return st;
    double qn = 0;
    for (int j = 0; j < 4; j++)
      qn += b.orientation[j] * b.orientation[j];
    if (!(qn > 0))
      return cm__bad_at(rd, &p,
                        "zero quaternion; give a unit [w, x, y, z]%s", NULL);
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
static int cm__contact_arms(cm__rd_t *rd, json_t *jc, cm__at_t at, int dim,
                            cm_contact_t *c) {
  json_t *va = json_object_get(jc, "arm_a"), *vb = json_object_get(jc, "arm_b");
  if (!va && !vb)
    return CM_OK;
  cm__at_t p = cm__at_field(at, va ? "arm_a" : "arm_b");
  if (rd->version < 2)
    return cm__bad_at(rd, &p,
                      "needs scene format version 2: set \"version\": 2%s",
                      NULL);
  if (!va || !vb)
    return cm__bad_at(rd, &p, "give both arm_a and arm_b, or neither%s", NULL);
  int st = cm__vec(rd, va, &p, dim, c->arm_a, dim == 2 ? "[x, y]" : "[x, y, z]");
  p = cm__at_field(at, "arm_b");
  if (!st)
    st = cm__vec(rd, vb, &p, dim, c->arm_b, dim == 2 ? "[x, y]" : "[x, y, z]");
  c->has_arms = !st;
  return st;
}

/* The version 2 fields of a contact: optional numbers >= 0 (0: none). */
static int cm__contact_v2(cm__rd_t *rd, json_t *jc, cm__at_t at,
                          cm_contact_t *c) {
  static const char *const key[] = {"stiffness_t", "damping_n", "damping_t"};
  double *dst[] = {&c->stiffness_t, &c->damping_n, &c->damping_t};
  for (int j = 0; j < 3; j++) {
    json_t *v = json_object_get(jc, key[j]);
    if (!v)
      continue;
    cm__at_t p = cm__at_field(at, key[j]);
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

/* One contact at `at` (refs resolve in s, which is not changed). */
static int cm__contact_json(cm__rd_t *rd, const cm_scene_t *s, json_t *jc,
                            cm__at_t at, cm_contact_t *out,
                            const char **out_name) {
  static const char *const keys[] = {
      "name",        "a",         "b",         "point", "normal", "stiffness",
      "stiffness_t", "damping_n", "damping_t", "arm_a", "arm_b", "meta",  NULL};
  cm__at_t p;
  if (!json_is_object(jc))
    return cm__bad_at(rd, &at, "expected an object%s", NULL);
  int st = cm__keys(rd, jc, &at, keys);
  if (st)
    return st;
  cm_contact_t c;
  cm_contact_init(&c);
  p = cm__at_field(at, "a");
  if ((st = cm__ref(rd, s, json_object_get(jc, "a"), &p, 0, &c.a)))
    return st;
  p = cm__at_field(at, "b");
  if ((st = cm__ref(rd, s, json_object_get(jc, "b"), &p, 1, &c.b)))
    return st;
  if (c.a == c.b)
    return cm__bad_at(rd, &p,
                      "a and b are the same body; a contact joins two "
                      "different bodies%s", NULL);
  json_t *v = json_object_get(jc, "point");
  p = cm__at_field(at, "point");
  if (!v)
    return cm__bad_at(rd, &p, "missing: a contact needs a world point%s",
                      NULL);
  if ((st = cm__vec(rd, v, &p, s->dim, c.point,
                    s->dim == 2 ? "[x, y]" : "[x, y, z]")))
    return st;
  v = json_object_get(jc, "normal");
  p = cm__at_field(at, "normal");
  if (!v)
    return cm__bad_at(rd, &p,
                      "missing: a contact needs a normal from b to a%s", NULL);
  if ((st = cm__vec(rd, v, &p, s->dim, c.normal,
                    s->dim == 2 ? "[nx, ny]" : "[nx, ny, nz]")))
    return st;
  double nn = 0;
  for (int j = 0; j < s->dim; j++)
    nn += c.normal[j] * c.normal[j];
  if (!(nn > 0))
    return cm__bad_at(rd, &p, "zero length; give the normal from b to a%s",
                      NULL);
  v = json_object_get(jc, "stiffness");
  p = cm__at_field(at, "stiffness");
  if (!v)
    return cm__bad_at(rd, &p, "missing: a contact needs a stiffness > 0%s",
                      NULL);
  if ((st = cm__num(rd, v, &p, &c.stiffness)))
    return st;
  if (!(c.stiffness > 0))
    return cm__bad_at(rd, &p, "must be > 0 (a penalty stiffness)%s", NULL);
  if ((st = cm__contact_v2(rd, jc, at, &c)))
    return st;
  if ((st = cm__contact_arms(rd, jc, at, s->dim, &c)))
    return st;
  const char *name = NULL;
  v = json_object_get(jc, "name");
  p = cm__at_field(at, "name");
  if (v && !json_is_null(v)) {
    if (!json_is_string(v))
      return cm__bad_at(rd, &p, "expected a string%s", NULL);
    name = json_string_value(v);
  }
  *out = c;
  *out_name = name;
  return CM_OK;
}

static int cm__read_contact(cm__rd_t *rd, cm_scene_t *s, json_t *jc, int i) {
  cm_contact_t c;
  const char *name = NULL;
  int st = cm__contact_json(rd, s, jc, cm__at_elem("contacts", i), &c, &name);
  if (!st)
    st = cm_scene_add_contact(rd->ctx, s, &c, name);
  return st < 0 ? st : CM_OK;
}

static int cm__read_scene(cm__rd_t *rd, json_t *root, cm_scene_t **out) {
  static const char *const keys[] = {"format", "version", "dim",
                                     "bodies", "contacts", "meta",
                                     "name",   "timestep", NULL};
  if (!json_is_object(root))
    return cm__bad(rd, "(root)", "expected a JSON object%s", NULL);
  cm__at_t top = {NULL, -1, NULL, -1, -1};
  int st = cm__keys(rd, root, &top, keys);
  if (st)
    return st;
  json_t *v = json_object_get(root, "format");
  if (!json_is_string(v) || strcmp(json_string_value(v), "cmodes-scene"))
    return cm__bad(rd, "format", "expected \"cmodes-scene\"%s", NULL);
  v = json_object_get(root, "version");
  if (!json_is_integer(v) ||
      (json_integer_value(v) != 1 && json_integer_value(v) != 2))
    return cm__bad(rd, "version",
                   "expected 1 or 2 (2: tangential springs, dashpots and "
                   "the deck's time step)%s",
                   NULL);
  rd->version = (int)json_integer_value(v);
  double timestep = 0;
  v = json_object_get(root, "timestep");
  if (v) {
    cm__at_t p = {NULL, -1, "timestep", -1, -1};
    if (rd->version < 2)
      return cm__bad(rd, "timestep",
                     "needs scene format version 2: set \"version\": 2%s",
                     NULL);
    if ((st = cm__num(rd, v, &p, &timestep)))
      return st;
    if (!(timestep >= 0))
      return cm__bad(rd, "timestep", "must be >= 0 (seconds; 0: none)%s",
                     NULL);
  }
  v = json_object_get(root, "dim");
  if (!json_is_integer(v) ||
      (json_integer_value(v) != 2 && json_integer_value(v) != 3))
    return cm__bad(rd, "dim", "expected 2 or 3%s", NULL);
  cm_scene_t *s = cm_scene_create((int)json_integer_value(v));
  if (!s)
    return CM__ERR(rd->ctx, CM_NOMEM, NULL, "out of memory");
  s->timestep_s = timestep;
  json_t *bodies = json_object_get(root, "bodies");
  json_t *contacts = json_object_get(root, "contacts");
  if (!json_is_array(bodies))
    st = cm__bad(rd, "bodies", "expected an array of bodies%s", NULL);
  else if (contacts && !json_is_array(contacts))
    st = cm__bad(rd, "contacts", "expected an array of contacts%s", NULL);
  for (size_t i = 0; !st && i < json_array_size(bodies); i++)
    st = cm__read_body(rd, s, json_array_get(bodies, i), (int)i);
  for (size_t i = 0; !st && i < json_array_size(contacts); i++)
    st = cm__read_contact(rd, s, json_array_get(contacts, i), (int)i);
  json_t *title = json_object_get(root, "name");
  if (!st && title && !json_is_null(title)) {
    if (!json_is_string(title))
      st = cm__bad(rd, "name", "expected a string%s", NULL);
    else if (!(s->name = cm__strdup(json_string_value(title))))
      st = CM__ERR(rd->ctx, CM_NOMEM, NULL, "out of memory");
  }
  json_t *meta = json_object_get(root, "meta");
  if (!st && meta) {
    s->meta_json = json_dumps(meta, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s->meta_json)
      st = CM__ERR(rd->ctx, CM_NOMEM, NULL, "out of memory");
  }
  if (!st) {
    st = cm_scene_validate(rd->ctx, s);
    if (st) { /* prefix the source name */
      char msg[2 * sizeof rd->ctx->message];
      snprintf(msg, sizeof msg, "%s: %s", rd->source, rd->ctx->message);
      msg[sizeof rd->ctx->message - 1] = 0;
      memcpy(rd->ctx->message, msg, sizeof rd->ctx->message);
    }
  }
  if (st)
    cm_scene_destroy(&s);
  *out = s;
  return st;
}

/* ---- the same readers for patches (server/patch.c) ------------------------ */

int cm__scene_contact_from_json(cm_context_t *ctx, const cm_scene_t *s,
                                const json_t *jc, const char *source,
                                const char *arr, int i, cm_contact_t *c,
                                const char **name) {
  cm__rd_t rd = {ctx, source, 2};
  return cm__contact_json(&rd, s, (json_t *)jc, cm__at_elem(arr, i), c, name);
}

int cm__scene_num_from_json(cm_context_t *ctx, const json_t *v,
                            const char *source, const char *path,
                            double *out) {
  cm__rd_t rd = {ctx, source, 2};
  cm__at_t at = {path, -1, NULL, -1, -1};
  return cm__num(&rd, (json_t *)v, &at, out);
}

int cm__scene_vec_from_json(cm_context_t *ctx, const json_t *v,
                            const char *source, const char *path, int n,
                            double *out, const char *what) {
  cm__rd_t rd = {ctx, source, 2};
  cm__at_t at = {path, -1, NULL, -1, -1};
  return cm__vec(&rd, (json_t *)v, &at, n, out, what);
}

int cm__scene_from_json(cm_context_t *ctx, const json_t *root,
                        const char *source, cm_scene_t **out) {
  *out = NULL;
  cm__rd_t rd = {ctx, source ? source : "scene", 1};
  return cm__read_scene(&rd, (json_t *)root, out);
}

int cm_scene_parse_json(cm_context_t *ctx, const char *text, size_t len,
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

/* Reads a whole stream into memory. */
static char *cm__slurp(FILE *f, size_t *len) {
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap) {
      if (ferror(f)) {
        free(buf);
        return NULL;
      }
      break;
    }
    char *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      return NULL;
    }
    buf = nb;
    cap *= 2;
  }
  *len = n;
  return buf;
}

int cm_scene_read_file(cm_context_t *ctx, const char *path, cm_scene_t **out) {
  *out = NULL;
  int use_stdin = !strcmp(path, "-");
  FILE *f = use_stdin ? stdin : fopen(path, "rb");
  if (!f)
    return CM__ERR(ctx, CM_IO, path, "%s: cannot open: %s", path,
                   strerror(errno));
  size_t len = 0;
  char *text = cm__slurp(f, &len);
  if (!use_stdin)
    fclose(f);
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
    static const char *const key[] = {"stiffness_t", "damping_n",
                                      "damping_t"};
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
