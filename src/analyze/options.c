/* options.c: the analysis options, generated from CM_OPTIONS_MAP
 * (options_table.h): defaults (cm_options_init), the checks every entry
 * point runs (cm__options_check), parsing one option from text or JSON for
 * the command line and the server, the server's cache key and the exported
 * table (cm_options_table_json, the docs table). Not for options of one
 * command only (cli/, server/). */
#include "analyze/analyze_internal.h"
#include "analyze/options_table.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the table ----------------------------------------------------------- */

#define CM__OPT_ROW(f, c, T, d, l, h, b, s, m, hp, dc)                         \
  {#f,          (c),         (s),                                              \
   CM__OPT_##T, (double)(d), (double)(l),                                      \
   (double)(h), CM__OPT_##b, offsetof(cm_options_t, f),                        \
   (m),         (hp),        (dc)},
static const cm__option_t cm__rows[] = {CM_OPTIONS_MAP(CM__OPT_ROW)};
#undef CM__OPT_ROW

const cm__option_t *cm__options_table(int *n) {
  *n = (int)(sizeof cm__rows / sizeof cm__rows[0]);
  return cm__rows;
}

const cm__option_t *cm__option_find(const char *name) {
  int n;
  const cm__option_t *t = cm__options_table(&n);
  for (int i = 0; name && i < n; i++)
    if (!strcmp(t[i].name, name) || !strcmp(t[i].cli, name))
      return &t[i];
  return NULL;
}

/* ---- values -----------------------------------------------------------------
 */

double cm__option_get(const cm__option_t *o, const cm_options_t *opts) {
  const char *field = (const char *)opts + o->offset;
  if (o->type == CM__OPT_REAL) {
    double v;
    memcpy(&v, field, sizeof v);
    return v;
  }
  int iv;
  memcpy(&iv, field, sizeof iv);
  return iv;
}

static void cm__option_put(const cm__option_t *o, double v,
                           cm_options_t *opts) {
  char *field = (char *)opts + o->offset;
  if (o->type == CM__OPT_REAL) {
    memcpy(field, &v, sizeof v);
  } else {
    int iv = (int)v;
    memcpy(field, &iv, sizeof iv);
  }
}

const char *cm__option_expected(const cm__option_t *o, char *buf, size_t n) {
  if (o->type == CM__OPT_METHOD) {
    snprintf(buf, n, "%s", CM__METHOD_NAMES);
    return buf;
  }
  const char *what = o->type == CM__OPT_INT ? "an integer" : "a number";
  int lo_open = o->bounds & 1, hi_open = (o->bounds & 2) != 0;
  if (o->hi == HUGE_VAL)
    snprintf(buf, n, "%s %s %.15g", what, lo_open ? ">" : ">=", o->lo);
  else if (o->type == CM__OPT_INT)
    snprintf(buf, n, "%s in %.15g..%.15g", what, o->lo, o->hi);
  else
    snprintf(buf, n, "%s in %c%.15g, %.15g%c", what, lo_open ? '(' : '[', o->lo,
             o->hi, hi_open ? ')' : ']');
  return buf;
}

static int cm__in_range(const cm__option_t *o, double v) {
  int lo_open = o->bounds & 1, hi_open = (o->bounds & 2) != 0;
  if (!isfinite(v) || (lo_open ? !(v > o->lo) : !(v >= o->lo)))
    return 0;
  if (o->hi != HUGE_VAL && (hi_open ? !(v < o->hi) : !(v <= o->hi)))
    return 0;
  return o->type == CM__OPT_REAL || v == floor(v);
}

/* "PATH: SHOWN is not EXPECTED" */
static int cm__not(cm_context_t *ctx, const cm__option_t *o, const char *path,
                   const char *shown) {
  char want[96];
  return CM__ERR(ctx, CM_USAGE, path, "%s: %s is not %s", path, shown,
                 cm__option_expected(o, want, sizeof want));
}

static int cm__option_set(cm_context_t *ctx, const cm__option_t *o,
                          const char *path, const char *shown, double v,
                          cm_options_t *opts) {
  if (!cm__in_range(o, v))
    return cm__not(ctx, o, path, shown);
  cm__option_put(o, v, opts);
  return CM_OK;
}

int cm__parse_number(const char *s, double *v) {
  char *end;
  if (!s || !*s)
    return 0;
  errno = 0;
  double x = strtod(s, &end);
  if (end == s || *end || errno == ERANGE || !isfinite(x))
    return 0;
  *v = x;
  return 1;
}

int cm__option_parse(cm_context_t *ctx, const cm__option_t *o, const char *path,
                     const char *text, cm_options_t *opts) {
  char shown[80];
  snprintf(shown, sizeof shown, "'%.64s'", text ? text : "");
  if (o->type == CM__OPT_METHOD) {
    int m = cm__method_parse(text);
    if (m < 0)
      return cm__not(ctx, o, path, shown);
    opts->method = m;
    return CM_OK;
  }
  double v;
  if (!cm__parse_number(text, &v))
    return cm__not(ctx, o, path, shown);
  return cm__option_set(ctx, o, path, shown, v, opts);
}

int cm__option_from_json(cm_context_t *ctx, const cm__option_t *o,
                         const char *path, const json_t *v,
                         cm_options_t *opts) {
  char want[96];
  if (o->type == CM__OPT_METHOD) {
    if (!json_is_string(v))
      return CM__ERR(ctx, CM_USAGE, path, "%s: expected %s", path,
                     cm__option_expected(o, want, sizeof want));
    return cm__option_parse(ctx, o, path, json_string_value(v), opts);
  }
  if (!json_is_number(v))
    return CM__ERR(ctx, CM_USAGE, path, "%s: expected %s", path,
                   cm__option_expected(o, want, sizeof want));
  double x = json_number_value(v);
  char shown[40];
  snprintf(shown, sizeof shown, "%.17g", x);
  return cm__option_set(ctx, o, path, shown, x, opts);
}

/* ---- defaults and checks
 * ----------------------------------------------------- */

void cm_options_init(cm_options_t *o) {
  int n;
  const cm__option_t *t = cm__options_table(&n);
  memset(o, 0, sizeof *o);
  for (int i = 0; i < n; i++)
    cm__option_put(&t[i], t[i].def, o);
}

int cm__options_check(cm_context_t *ctx, const cm_options_t *o) {
  int n;
  const cm__option_t *t = cm__options_table(&n);
  for (int i = 0; i < n; i++) {
    double v = cm__option_get(&t[i], o);
    if (!cm__in_range(&t[i], v)) {
      char shown[40];
      snprintf(shown, sizeof shown, "%.17g", v);
      return cm__not(ctx, &t[i], t[i].name, shown);
    }
  }
  return CM_OK;
}

/* ---- the server's options --------------------------------------------------
 */

static int cm__unknown(cm_context_t *ctx, const char *path) {
  int n;
  const cm__option_t *t = cm__options_table(&n);
  char list[512] = "";
  for (int i = 0; i < n; i++) {
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", t[i].name);
  }
  return CM__ERR(ctx, CM_USAGE, path, "%s: unknown option (known: %s)", path,
                 list);
}

/* By the JSON name only (not the command-line spelling). */
static const cm__option_t *cm__by_name(const char *name) {
  const cm__option_t *o = cm__option_find(name);
  return o && !strcmp(o->name, name) ? o : NULL;
}

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
    const cm__option_t *o = cm__by_name(key);
    int st = o ? cm__option_from_json(ctx, o, path, v, opts)
               : cm__unknown(ctx, path);
    if (st)
      return st;
  }
  return CM_OK;
}

int cm__options_from_query(cm_context_t *ctx, const char *key,
                           const char *value, cm_options_t *opts) {
  char path[96];
  snprintf(path, sizeof path, "?%.64s", key);
  const cm__option_t *o = cm__by_name(key);
  if (!o)
    return cm__unknown(ctx, path);
  if (!value || !*value)
    return CM__ERR(ctx, CM_USAGE, path, "%s: needs a value (%s=...)", path,
                   key);
  return cm__option_parse(ctx, o, path, value, opts);
}

char *cm__options_key(const cm_options_t *opts) {
  int n;
  const cm__option_t *t = cm__options_table(&n);
  char buf[1024];
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < n && len < sizeof buf; i++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%.17g",
                            i ? "|" : "", cm__option_get(&t[i], opts));
  return cm__strdup(buf);
}

/* ---- the table for others: JSON and the docs' markdown ----------------------
 */

static json_t *cm__num_or_null(double v) {
  return v == HUGE_VAL ? json_null() : json_real(v);
}

char *cm_options_table_json(void) {
  int n;
  const cm__option_t *t = cm__options_table(&n);
  json_t *arr = json_array();
  for (int i = 0; arr && i < n; i++) {
    const cm__option_t *o = &t[i];
    static const char *const types[] = {"integer", "number", "string"};
    char want[96], sh[3] = {'-', (char)o->short_opt, 0};
    json_t *row = json_object();
    json_object_set_new(row, "name", json_string(o->name));
    json_object_set_new(row, "cli", json_sprintf("--%s", o->cli));
    json_object_set_new(row, "short",
                        o->short_opt ? json_string(sh) : json_null());
    json_object_set_new(row, "type", json_string(types[o->type]));
    if (o->type == CM__OPT_METHOD) {
      json_t *ch = json_array();
      for (int m = (int)o->lo; m <= (int)o->hi; m++)
        json_array_append_new(ch, json_string(cm__method_name(m)));
      json_object_set_new(row, "choices", ch);
      json_object_set_new(row, "default",
                          json_string(cm__method_name((int)o->def)));
    } else {
      json_object_set_new(row, "default",
                          o->type == CM__OPT_INT
                              ? json_integer((json_int_t)o->def)
                              : json_real(o->def));
      json_object_set_new(row, "minimum", json_real(o->lo));
      json_object_set_new(row, "maximum", cm__num_or_null(o->hi));
      json_object_set_new(row, "exclusive_minimum",
                          json_boolean(o->bounds & 1));
      json_object_set_new(row, "exclusive_maximum",
                          json_boolean((o->bounds & 2) != 0));
    }
    json_object_set_new(row, "expected",
                        json_string(cm__option_expected(o, want, sizeof want)));
    json_object_set_new(row, "meta", json_string(o->meta));
    json_object_set_new(row, "help", json_string(o->help));
    json_object_set_new(row, "doc", json_string(o->doc));
    if (json_array_append_new(arr, row)) {
      json_decref(arr);
      arr = NULL;
    }
  }
  json_t *root = arr ? json_pack("{s:s, s:i, s:o}", "format", "cmodes-options",
                                 "version", 1, "options", arr)
                     : NULL;
  char *text =
      root ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
  json_decref(root);
  return text;
}

/* The default as docs show it: "6", "1e-10", "auto". */
static void cm__default_text(const cm__option_t *o, char *buf, size_t n) {
  if (o->type == CM__OPT_METHOD)
    snprintf(buf, n, "`%s`", cm__method_name((int)o->def));
  else
    snprintf(buf, n, "%g", o->def);
}

char *cm__options_markdown(void) {
  int n;
  const cm__option_t *t = cm__options_table(&n);
  size_t cap = 256;
  for (int i = 0; i < n; i++)
    cap += strlen(t[i].doc) + 256;
  char *md = malloc(cap);
  if (!md)
    return NULL;
  size_t len = (size_t)snprintf(md, cap,
                                "| option | server | default | accepts | "
                                "meaning |\n|---|---|---|---|---|\n");
  for (int i = 0; i < n; i++) {
    char def[64], want[96], sh[16] = "";
    if (t[i].short_opt)
      snprintf(sh, sizeof sh, "`-%c`, ", t[i].short_opt);
    cm__default_text(&t[i], def, sizeof def);
    len += (size_t)snprintf(
        md + len, cap - len, "| %s`--%s %s` | `%s` | %s | %s | %s |\n", sh,
        t[i].cli, t[i].meta, t[i].name, def,
        cm__option_expected(&t[i], want, sizeof want), t[i].doc);
  }
  return md;
}
