/* matrices.c: POST /v1/analyze with a system given as matrices instead of
 * a scene: {"matrices": {"M": COO, "J": COO, "k": [...], "row_names": [...],
 * "col_names": [...]}, "options": {...}} with COO = {"shape": [rows, cols],
 * "rows": [...], "cols": [...], "values": [...]} (0-based; duplicates are
 * summed; M symmetric: one triangle or both, which must agree). The same
 * size, media-type and depth limits, options, solve queue and error bodies
 * as a scene (docs/server.md). Not for scenes (router.c). */
#include "server.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- is it a matrices body? -----------------------------------------------
 */

static const char *cm__mx_ws(const char *p, const char *e) {
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
    p++;
  return p;
}

/* Past a JSON string starting at p (the quote), or NULL. */
static const char *cm__mx_string(const char *p, const char *e) {
  for (p++; p < e; p++) {
    if (*p == '\\')
      p++;
    else if (*p == '"')
      return p + 1;
  }
  return NULL;
}

/* Past the JSON value at p (nesting skipped without recursion), or NULL. */
static const char *cm__mx_value(const char *p, const char *e) {
  long depth = 0;
  while (p < e) {
    char c = *p;
    if (c == '"') {
      if (!(p = cm__mx_string(p, e)))
        return NULL;
      if (!depth)
        return p;
      continue;
    }
    if (c == '{' || c == '[') {
      depth++;
    } else if (c == '}' || c == ']') {
      if (!depth)
        return p; /* the end of the enclosing object */
      if (!--depth)
        return p + 1;
    } else if (!depth && c == ',') {
      return p;
    }
    p++;
  }
  return NULL;
}

/* 1 when the root object of the JSON text has the key "matrices": the keys
 * are read in order, skipping the values; a first key "format" or "scene"
 * (a scene) stops at once, so scenes cost nothing here. Malformed text: 0
 * (the scene reader reports it). */
static int cm__mx_sniff(const char *p, size_t len) {
  const char *e = p + len;
  p = cm__mx_ws(p, e);
  if (p == e || *p != '{')
    return 0;
  for (int first = 1;; first = 0) {
    p = cm__mx_ws(p + 1, e);
    if (p == e || *p != '"')
      return 0;
    const char *k = p + 1, *q = cm__mx_string(p, e);
    if (!q)
      return 0;
    size_t kl = (size_t)(q - 1 - k);
    if (kl == 8 && !memcmp(k, "matrices", 8))
      return 1;
    if (first && ((kl == 6 && !memcmp(k, "format", 6)) ||
                  (kl == 5 && !memcmp(k, "scene", 5))))
      return 0;
    p = cm__mx_ws(q, e);
    if (p == e || *p != ':')
      return 0;
    p = cm__mx_value(cm__mx_ws(p + 1, e), e);
    p = p ? cm__mx_ws(p, e) : NULL;
    if (!p || p == e || *p != ',')
      return 0;
  }
}

/* ---- replies (the router's error body) ------------------------------------
 */

static void cm__mx_reply(cm__response_t *r, int http, char *text) {
  r->status = http;
  r->body = text;
  if (!r->body) {
    r->status = 500;
    r->body = cm__strdup("{\"error\":\"nomem\",\"message\":\"out of memory\"}");
  }
  r->body_len = r->body ? strlen(r->body) : 0;
}

static void cm__mx_error(cm__response_t *r, int status,
                         const cm_context_t *ctx) {
  const char *msg = ctx->message[0] ? ctx->message : cm_status_message(status);
  json_t *j = json_pack("{s:s, s:s, s:o}", "error", cm_status_name(status),
                        "message", msg, "path",
                        ctx->path[0] ? json_string(ctx->path) : json_null());
  cm__mx_reply(r, cm_status_http(status),
               j ? json_dumps(j, JSON_COMPACT) : NULL);
  json_decref(j);
}

/* ---- COO to compressed -----------------------------------------------------
 */

typedef struct {
  int nrow, ncol; /* shape */
  int *p, *i;     /* compressed by `by` (0: rows -> CSR, 1: cols -> CSC) */
  double *x;
} cm__mx_sparse_t;

static void cm__mx_sparse_free(cm__mx_sparse_t *s) {
  free(s->p), free(s->i), free(s->x);
  memset(s, 0, sizeof *s);
}

/* An integer index array element, checked against [0, max). */
static int cm__mx_index(cm_context_t *ctx, const char *path, json_t *a,
                        size_t q, int max, int *out) {
  json_t *v = json_array_get(a, q);
  json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;
  if (!json_is_integer(v) || x < 0 || x >= max)
    return CM__ERR(ctx, CM_INVALID_SCENE, path,
                   "%s[%zu]: %s; indices are 0-based integers in 0..%d", path,
                   q,
                   json_is_integer(v) ? "out of range"
                                      : "not an "
                                        "integer",
                   max - 1);
  *out = (int)x;
  return CM_OK;
}

static int cm__mx_cmp_int(const void *a, const void *b) {
  const int *x = a, *y = b;
  return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0])
                      : (x[1] > y[1]) - (x[1] < y[1]);
}

/* Reads {"shape": [r, c], "rows": [...], "cols": [...], "values": [...]}
 * as `what` ("matrices.M"), compressed by rows (by 0) or columns (by 1),
 * duplicates summed. lim caps each dimension (limit_what names it). */
static int cm__mx_coo(cm_context_t *ctx, json_t *o, const char *what, int by,
                      int lim, const char *limit_what, cm__mx_sparse_t *s) {
  char path[64];
  memset(s, 0, sizeof *s);
  if (!json_is_object(o))
    return CM__ERR(ctx, CM_INVALID_SCENE, what,
                   "%s: expected {\"shape\": [rows, cols], \"rows\": [...], "
                   "\"cols\": [...], \"values\": [...]} (COO, 0-based)",
                   what);
  const char *key;
  json_t *v;
  json_object_foreach(o, key, v) {
    if (strcmp(key, "shape") && strcmp(key, "rows") && strcmp(key, "cols") &&
        strcmp(key, "values"))
      return CM__ERR(ctx, CM_INVALID_SCENE, what,
                     "%s: unknown key \"%.40s\" (a COO matrix has shape, "
                     "rows, cols, values)",
                     what, key);
  }
  json_t *sh = json_object_get(o, "shape");
  json_t *a[3] = {json_object_get(o, "rows"), json_object_get(o, "cols"),
                  json_object_get(o, "values")};
  snprintf(path, sizeof path, "%s.shape", what);
  json_int_t d[2] = {-1, -1};
  for (int t = 0; t < 2; t++) {
    json_t *x = json_array_get(sh, (size_t)t);
    d[t] = json_is_integer(x) ? json_integer_value(x) : -1;
  }
  if (!json_is_array(sh) || json_array_size(sh) != 2 || d[0] < 0 || d[1] < 0)
    return CM__ERR(ctx, CM_INVALID_SCENE, path,
                   "%s: expected [rows, cols], two integers >= 0", path);
  if (d[0] > lim || d[1] > lim)
    return CM__ERR(ctx, CM_LIMIT, path,
                   "%s: %lld x %lld is more than the server's limit of %d "
                   "%s",
                   path, (long long)d[0], (long long)d[1], lim, limit_what);
  static const char *const an[3] = {"rows", "cols", "values"};
  for (int t = 0; t < 3; t++) {
    snprintf(path, sizeof path, "%s.%s", what, an[t]);
    if (!json_is_array(a[t]))
      return CM__ERR(ctx, CM_INVALID_SCENE, path,
                     "%s: expected an array (COO: rows, cols and values of "
                     "equal length)",
                     path);
    if (json_array_size(a[t]) != json_array_size(a[0]))
      return CM__ERR(ctx, CM_INVALID_SCENE, path,
                     "%s: %zu entries but %s.rows has %zu", path,
                     json_array_size(a[t]), what, json_array_size(a[0]));
  }
  size_t nz = json_array_size(a[0]);
  s->nrow = (int)d[0], s->ncol = (int)d[1];
  int nout = by ? s->ncol : s->nrow;
  int *e = malloc(sizeof(int) * 3 * (nz + 1)); /* (outer, inner, entry) */
  s->p = calloc((size_t)nout + 2, sizeof(int));
  s->i = malloc(sizeof(int) * (nz + 1));
  s->x = malloc(sizeof(double) * (nz + 1));
  if (!e || !s->p || !s->i || !s->x) {
    free(e);
    cm__mx_sparse_free(s);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  int st = CM_OK;
  for (size_t q = 0; q < nz && !st; q++) {
    int ri = 0, ci = 0;
    snprintf(path, sizeof path, "%s.rows", what);
    st = cm__mx_index(ctx, path, a[0], q, s->nrow, &ri);
    snprintf(path, sizeof path, "%s.cols", what);
    if (!st)
      st = cm__mx_index(ctx, path, a[1], q, s->ncol, &ci);
    json_t *xv = json_array_get(a[2], q);
    if (!st && (!json_is_number(xv) || !isfinite(json_number_value(xv))))
      st = CM__ERR(ctx, CM_INVALID_SCENE, what,
                   "%s.values[%zu]: not a finite number", what, q);
    e[3 * q] = by ? ci : ri;
    e[3 * q + 1] = by ? ri : ci;
    e[3 * q + 2] = (int)q;
  }
  if (st) {
    free(e);
    cm__mx_sparse_free(s);
    return st;
  }
  qsort(e, nz, sizeof(int) * 3, cm__mx_cmp_int); /* by outer, inner */
  int k = 0;
  for (size_t q = 0; q < nz; q++) {
    double x = json_number_value(json_array_get(a[2], (size_t)e[3 * q + 2]));
    if (k && e[3 * q] == e[3 * (q - 1)] && e[3 * q + 1] == e[3 * (q - 1) + 1]) {
      s->x[k - 1] += x; /* a duplicate: summed */
      continue;
    }
    s->p[e[3 * q] + 1]++;
    s->i[k] = e[3 * q + 1];
    s->x[k++] = x;
  }
  for (int j = 0; j < nout; j++)
    s->p[j + 1] += s->p[j];
  free(e);
  return CM_OK;
}

/* Both triangles of M given: they must agree (as the file reader checks). */
static int cm__mx_symmetric(cm_context_t *ctx, const cm__mx_sparse_t *M) {
  int low = 0, up = 0;
  double amax = 0;
  for (int j = 0; j < M->ncol; j++)
    for (int q = M->p[j]; q < M->p[j + 1]; q++) {
      low += M->i[q] > j, up += M->i[q] < j;
      amax = fmax(amax, fabs(M->x[q]));
    }
  if (!low || !up)
    return CM_OK;
  for (int j = 0; j < M->ncol; j++)
    for (int q = M->p[j]; q < M->p[j + 1]; q++) {
      int i = M->i[q], lo = M->p[i], hi = M->p[i + 1];
      while (lo < hi) { /* M(j, i): row j of column i (rows sorted) */
        int mid = lo + (hi - lo) / 2;
        if (M->i[mid] < j)
          lo = mid + 1;
        else
          hi = mid;
      }
      double t = lo < M->p[i + 1] && M->i[lo] == j ? M->x[lo] : 0;
      if (fabs(t - M->x[q]) > 1e-14 * fmax(1.0, amax))
        return CM__ERR(ctx, CM_INVALID_SCENE, "matrices.M",
                       "matrices.M is not symmetric: M(%d,%d) = %.17g but "
                       "M(%d,%d) = %.17g (0-based); give a symmetric mass "
                       "matrix (or only its lower triangle)",
                       i, j, M->x[q], j, i, t);
    }
  return CM_OK;
}

/* row_names / col_names: n strings or nulls, or absent. */
static int cm__mx_names(cm_context_t *ctx, json_t *a, const char *what, int n,
                        const char ***out) {
  *out = NULL;
  if (!a || json_is_null(a))
    return CM_OK;
  if (!json_is_array(a) || json_array_size(a) != (size_t)n)
    return CM__ERR(ctx, CM_INVALID_SCENE, what,
                   "%s: expected an array of %d names (strings or null), "
                   "one per %s",
                   what, n,
                   strstr(what, "row") ? "row of J" : "dof (column of M)");
  const char **names = calloc((size_t)n + 1, sizeof(char *));
  if (!names)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  for (int i = 0; i < n; i++) {
    json_t *v = json_array_get(a, (size_t)i);
    if (json_is_string(v)) {
      names[i] = json_string_value(v);
    } else if (!json_is_null(v)) {
      free(names);
      return CM__ERR(ctx, CM_INVALID_SCENE, what,
                     "%s[%d]: not a string (a name) or null", what, i);
    }
  }
  *out = names;
  return CM_OK;
}

/* The system of the "matrices" member. */
static int cm__mx_system(cm_context_t *ctx, const cm__server_config_t *cfg,
                         json_t *mx, cm_system_t **sys) {
  *sys = NULL;
  if (!json_is_object(mx))
    return CM__ERR(ctx, CM_INVALID_SCENE, "matrices",
                   "matrices: expected an object {\"M\": COO, \"J\": COO, "
                   "\"k\": [...]}");
  const char *key;
  json_t *v;
  json_object_foreach(mx, key, v) {
    if (strcmp(key, "M") && strcmp(key, "J") && strcmp(key, "k") &&
        strcmp(key, "row_names") && strcmp(key, "col_names"))
      return CM__ERR(ctx, CM_INVALID_SCENE, "matrices",
                     "matrices: unknown key \"%.40s\" (allowed: M, J, k, "
                     "row_names, col_names)",
                     key);
  }
  int maxdof =
      cfg->max_bodies > INT32_MAX / 6 ? INT32_MAX : 6 * cfg->max_bodies;
  int lim = maxdof > cfg->max_contacts ? maxdof : cfg->max_contacts;
  cm__mx_sparse_t M, J;
  int st = cm__mx_coo(ctx, json_object_get(mx, "M"), "matrices.M", 1, maxdof,
                      "dofs (6 per body of --max-bodies)", &M);
  if (st)
    return st;
  st = cm__mx_coo(ctx, json_object_get(mx, "J"), "matrices.J", 0, lim,
                  "rows or dofs", &J);
  if (st) {
    cm__mx_sparse_free(&M);
    return st;
  }
  int n = M.ncol, nc = J.nrow;
  double *k = NULL;
  const char **rn = NULL, **cn = NULL;
  if (M.nrow != M.ncol)
    st = CM__ERR(ctx, CM_INVALID_SCENE, "matrices.M.shape",
                 "matrices.M is %d x %d: a mass matrix is square", M.nrow,
                 M.ncol);
  else if (J.ncol != n)
    st = CM__ERR(ctx, CM_INVALID_SCENE, "matrices.J.shape",
                 "matrices.J is %d x %d but M is %d x %d: J needs one column "
                 "per row of M",
                 J.nrow, J.ncol, n, n);
  else if (nc > cfg->max_contacts)
    st = CM__ERR(ctx, CM_LIMIT, "matrices.J.shape",
                 "matrices.J: %d rows (contacts), more than the server's "
                 "limit of %d (--max-contacts)",
                 nc, cfg->max_contacts);
  if (!st)
    st = cm__mx_symmetric(ctx, &M);
  json_t *jk = json_object_get(mx, "k");
  if (!st && !(k = malloc(sizeof(double) * ((size_t)nc + 1))))
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  if (!st && json_is_number(jk)) {
    for (int r = 0; r < nc; r++)
      k[r] = json_number_value(jk);
  } else if (!st && json_is_array(jk) && json_array_size(jk) == (size_t)nc) {
    for (int r = 0; r < nc && !st; r++) {
      json_t *x = json_array_get(jk, (size_t)r);
      if (!json_is_number(x))
        st = CM__ERR(ctx, CM_INVALID_SCENE, "matrices.k",
                     "matrices.k[%d]: not a number", r);
      else
        k[r] = json_number_value(x);
    }
  } else if (!st) {
    st = CM__ERR(ctx, CM_INVALID_SCENE, "matrices.k",
                 "matrices.k: expected %d stiffnesses (one per row of J), or "
                 "one number for all",
                 nc);
  }
  if (!st)
    st = cm__mx_names(ctx, json_object_get(mx, "row_names"),
                      "matrices.row_names", nc, &rn);
  if (!st)
    st = cm__mx_names(ctx, json_object_get(mx, "col_names"),
                      "matrices.col_names", n, &cn);
  if (!st)
    st = cm_system_from_matrices(ctx, n, nc, M.p, M.i, M.x, J.p, J.i, J.x, k,
                                 sys);
  if (!st && (rn || cn))
    st = cm_system_set_names(ctx, *sys, rn, cn);
  if (st)
    cm_system_destroy(sys);
  cm__mx_sparse_free(&M), cm__mx_sparse_free(&J);
  free(k), free(rn), free(cn);
  return st;
}

/* ---- the route
 * ---------------------------------------------------------------- */

static int cm__mx_depth(json_t *v, int limit) {
  int d = 0;
  if (limit < 0)
    return 1;
  if (json_is_object(v)) {
    const char *key;
    json_t *x;
    json_object_foreach(v, key, x) {
      int t = cm__mx_depth(x, limit - 1);
      d = t > d ? t : d;
    }
    return d + 1;
  }
  if (json_is_array(v)) {
    for (size_t i = 0; i < json_array_size(v); i++) {
      int t = cm__mx_depth(json_array_get(v, i), limit - 1);
      d = t > d ? t : d;
    }
    return d + 1;
  }
  return 0;
}

/* Options: defaults < the body's "options" < the query (as for scenes). */
static int cm__mx_options(cm_context_t *ctx, const cm__server_config_t *cfg,
                          const cm__request_t *req, json_t *body_opts,
                          cm_options_t *o, int *flags) {
  cm_options_init(o);
  *flags = 0;
  int st = body_opts ? cm__options_from_json(ctx, body_opts, o) : CM_OK;
  if (!st)
    st = cm__query_options(ctx, req, o, flags);
  if (cfg->max_solve_s > 0 &&
      (o->max_seconds <= 0 || o->max_seconds > cfg->max_solve_s))
    o->max_seconds = cfg->max_solve_s; /* the server's solve budget */
  return st;
}

/* cm_analyze_system for cm__call_below. */
typedef struct {
  cm_context_t *ctx;
  const cm_system_t *sys;
  const cm_options_t *o;
  cm_report_t *rep;
  int st;
} cm__mx_job_t;

static void cm__mx_job(void *p) {
  cm__mx_job_t *j = p;
  j->st = cm_analyze_system(j->ctx, j->sys, NULL, j->o, &j->rep);
}

/* Parses, checks and solves; replies. */
static void cm__mx_analyze(cm__server_t *srv, const cm__request_t *req,
                           cm__response_t *r) {
  const cm__server_config_t *cfg = &srv->cfg;
  double t0 = cm__now();
  cm_context_t ctx;
  cm_context_init(&ctx);
  json_error_t err;
  json_t *root = req->body_json ? json_incref(req->body_json)
                                : json_loadb(req->body, req->body_len,
                                             JSON_REJECT_DUPLICATES, &err);
  cm_system_t *sys = NULL;
  cm_report_t *rep = NULL;
  cm_options_t o;
  int flags = 0, st = CM_OK;
  if (!root)
    st = CM__ERR(&ctx, CM_PARSE, "(body)",
                 "request body:%d:%d: malformed JSON: %s", err.line, err.column,
                 err.text);
  else if (cm__mx_depth(root, cfg->max_depth) > cfg->max_depth)
    st = CM__ERR(&ctx, CM_LIMIT, "(body)",
                 "JSON nested deeper than the server's limit of %d levels "
                 "(--max-depth)",
                 cfg->max_depth);
  const char *key;
  json_t *v;
  if (!st)
    json_object_foreach(root, key, v) {
      if (!st && strcmp(key, "matrices") && strcmp(key, "options"))
        st = CM__ERR(&ctx, CM_USAGE, key,
                     "%.64s: unknown key next to \"matrices\" (allowed: "
                     "matrices, options)",
                     key);
    }
  if (!st)
    st = cm__mx_options(&ctx, cfg, req, json_object_get(root, "options"), &o,
                        &flags);
  if (!st)
    st = cm__mx_system(&ctx, cfg, json_object_get(root, "matrices"), &sys);
  json_decref(root);
  double t_parse = cm__now() - t0;
  if (!st) {
    ctx.threads = sys->nc < 4096 ? 1 : 0; /* as for small scenes */
    st = cm__queue_enter(&srv->queue, &r->retry_after_s);
    if (st) {
      st = CM__ERR(&ctx, CM_BUSY, NULL,
                   "the solve queue is full (%d admitted, --queue); retry "
                   "after %d s",
                   srv->queue.depth, r->retry_after_s);
    } else {
      double t1 = cm__now();
      cm__mx_job_t job = {&ctx, sys, &o, NULL, 0};
      cm__call_below(srv, cm__mx_job, &job); /* below the transport */
      st = job.st, rep = job.rep;
      double dt = cm__now() - t1;
      cm__queue_leave(&srv->queue, dt);
      if (rep)
        cm__metrics_solve(srv->metrics, dt, rep->matvecs, rep->status);
    }
  }
  if (st < 0) {
    cm__mx_error(r, st, &ctx);
  } else {
    rep->t_parse = t_parse;
    cm__mx_reply(r, 200, cm_report_to_json(rep, flags));
  }
  cm_report_destroy(&rep);
  cm_system_destroy(&sys);
}

/* JSON media, as the router takes it (none given counts as JSON). */
static int cm__mx_media(const char *ct) {
  if (!ct || !*ct)
    return 1;
  size_t n = strcspn(ct, ";");
  while (n && isspace((unsigned char)ct[n - 1]))
    n--;
  return (n == 16 && !strncasecmp(ct, "application/json", 16)) ||
         (n > 5 && !strncasecmp(ct + n - 5, "+json", 5));
}

int cm__matrices_route(cm__server_t *srv, const cm__request_t *req,
                       cm__response_t *r) {
  int is;
  if (req->body_json)
    is = json_is_object(req->body_json) &&
         json_object_get(req->body_json, "matrices") != NULL;
  else /* a body the scene path refuses anyway stays there */
    is = !req->body_too_large && req->body_len <= srv->cfg.max_body_bytes &&
         cm__mx_media(req->content_type) &&
         cm__mx_sniff(req->body, req->body_len);
  if (is)
    cm__mx_analyze(srv, req, r);
  return is;
}
