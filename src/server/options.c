/* options.c: analysis options of a request, from an "options" object in
 * the body or from query parameters, checked and mapped onto cm_options_t.
 * Not for server settings (cmd_serve.c) or report formatting (router.c). */
#include "server.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum { CM__INT, CM__REAL, CM__METHOD } cm__kind_t;

typedef struct {
  const char *name; /* option name in JSON and queries */
  cm__kind_t kind;
  double lo, hi;    /* accepted range, inclusive */
  size_t offset;    /* field in cm_options_t */
  const char *hint; /* what is accepted, for messages */
} cm__opt_t;

#define CM__OFF(f) offsetof(cm_options_t, f)
static const cm__opt_t cm__opts[] = {
    {"modes", CM__INT, 1, 1000, CM__OFF(modes), "an integer 1..1000"},
    {"tol", CM__REAL, 1e-15, 0.5, CM__OFF(tol), "a number in [1e-15, 0.5]"},
    {"method", CM__METHOD, 0, 0, CM__OFF(method),
     "\"auto\", \"lanczos\", \"arpack\" or \"dense\""},
    {"damping_ratio", CM__REAL, 0, 1, CM__OFF(damping_ratio),
     "a number in [0, 1]"},
    {"newmark_gamma", CM__REAL, 0.5, 10, CM__OFF(newmark_gamma),
     "a number in [0.5, 10]"},
    {"newmark_beta", CM__REAL, 0, 10, CM__OFF(newmark_beta),
     "a number in [0, 10]"},
    {"freq_tol", CM__REAL, 1e-12, 0.5, CM__OFF(freq_tol),
     "a number in [1e-12, 0.5]"},
    {"max_iter", CM__INT, 1, 1e7, CM__OFF(max_iter), "an integer >= 1"},
    {"max_seconds", CM__REAL, 0, 1e6, CM__OFF(max_seconds),
     "seconds >= 0 (0 = the server's cap)"},
    {"ncv", CM__INT, 0, 10000, CM__OFF(ncv), "an integer 0..10000 (0 = auto)"},
    {"dense_max", CM__INT, 0, 20000, CM__OFF(dense_max), "an integer 0..20000"},
    {"top_contacts", CM__INT, 0, 1000, CM__OFF(top_contacts),
     "an integer 0..1000"},
    {"top_bodies", CM__INT, 0, 1000, CM__OFF(top_bodies), "an integer 0..1000"},
    {"top_components", CM__INT, 0, 1000, CM__OFF(top_components),
     "an integer 0..1000"},
};
#define CM__NOPTS (int)(sizeof cm__opts / sizeof cm__opts[0])

static const cm__opt_t *cm__find(const char *name) {
  for (int i = 0; i < CM__NOPTS; i++)
    if (!strcmp(cm__opts[i].name, name))
      return &cm__opts[i];
  return NULL;
}

static int cm__unknown(cm_context_t *ctx, const char *path) {
  char list[512] = "";
  for (int i = 0; i < CM__NOPTS; i++) {
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
             cm__opts[i].name);
  }
  return CM__ERR(ctx, CM_USAGE, path, "%s: unknown option (known: %s)", path,
                 list);
}

/* Stores v into the field after the range check. */
static int cm__set(cm_context_t *ctx, const cm__opt_t *o, const char *path,
                   double v, cm_options_t *opts) {
  if (!isfinite(v) || v < o->lo || v > o->hi)
    return CM__ERR(ctx, CM_USAGE, path, "%s: %g is out of range: expected %s",
                   path, v, o->hint);
  char *field = (char *)opts + o->offset;
  if (o->kind == CM__INT) {
    if (v != floor(v))
      return CM__ERR(ctx, CM_USAGE, path, "%s: %g is not an integer", path, v);
    int iv = (int)v;
    memcpy(field, &iv, sizeof iv);
  } else {
    memcpy(field, &v, sizeof v);
  }
  return CM_OK;
}

static int cm__method(cm_context_t *ctx, const char *path, const char *s,
                      cm_options_t *opts) {
  int m = cm__method_parse(s);
  if (m < 0)
    return CM__ERR(ctx, CM_USAGE, path,
                   "%s: \"%.64s\" is not a method: expected "
                   CM__METHOD_NAMES, path, s);
  opts->method = m;
  return CM_OK;
}

/* ---- from a JSON object -----------------------------------------------------
 */

int cm__options_from_json(cm_context_t *ctx, const json_t *obj,
                          cm_options_t *opts) {
  if (!json_is_object(obj))
    return CM__ERR(ctx, CM_USAGE, "options",
                   "options: expected an object such as {\"modes\": 3}");
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)obj, key, v) {
    char path[96];
    snprintf(path, sizeof path, "options.%.64s", key);
    const cm__opt_t *o = cm__find(key);
    if (!o)
      return cm__unknown(ctx, path);
    int st;
    if (o->kind == CM__METHOD) {
      if (!json_is_string(v))
        return CM__ERR(ctx, CM_USAGE, path, "%s: expected %s", path, o->hint);
      st = cm__method(ctx, path, json_string_value(v), opts);
    } else {
      if (!json_is_number(v))
        return CM__ERR(ctx, CM_USAGE, path, "%s: expected %s", path, o->hint);
      st = cm__set(ctx, o, path, json_number_value(v), opts);
    }
    if (st)
      return st;
  }
  return CM_OK;
}

/* ---- from a query parameter -------------------------------------------------
 */

int cm__options_from_query(cm_context_t *ctx, const char *key,
                           const char *value, cm_options_t *opts) {
  char path[96];
  snprintf(path, sizeof path, "?%.64s", key);
  const cm__opt_t *o = cm__find(key);
  if (!o)
    return cm__unknown(ctx, path);
  if (!value || !*value)
    return CM__ERR(ctx, CM_USAGE, path, "%s: needs a value (%s=...)", path,
                   key);
  if (o->kind == CM__METHOD)
    return cm__method(ctx, path, value, opts);
  char *end;
  errno = 0;
  double v = strtod(value, &end);
  if (end == value || *end || errno == ERANGE)
    return CM__ERR(ctx, CM_USAGE, path,
                   "%s: \"%.64s\" is not a number: "
                   "expected %s",
                   path, value, o->hint);
  return cm__set(ctx, o, path, v, opts);
}

/* ---- cache key --------------------------------------------------------------
 */

char *cm__options_key(const cm_options_t *o) {
  char buf[512];
  snprintf(buf, sizeof buf,
           "%d|%.17g|%d|%d|%d|%.17g|%d|%.17g|%.17g|%.17g|%.17g|%d|%d|%d",
           o->modes, o->tol, o->method, o->ncv, o->max_iter, o->max_seconds,
           o->dense_max, o->damping_ratio, o->newmark_gamma, o->newmark_beta,
           o->freq_tol, o->top_contacts, o->top_bodies, o->top_components);
  return cm__strdup(buf);
}
