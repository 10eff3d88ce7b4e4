/* router.c: the routes of `cmodes serve`, shared by the HTTP and --stdio
 * transports: authentication, limits, JSON errors, analyses through the
 * solve queue, the scene sessions and metrics. A report is made by the same
 * library calls as `cmodes analyze --json` (the scene reader, assembly and
 * the pipeline through the analysis object cm_analysis_*,
 * cm_report_to_json), so the numbers are the same bits.
 * Not for sockets, headers on the wire or logging (http.c, stdio.c). */
#include "io/json_pull.h"
#include "jcheck.h" /* json_dumps that never drops a key */
#include "report/report_html.h"
#include "server.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- configuration and server state ----------------------------------------
 */

void cm__server_config_init(cm__server_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  snprintf(cfg->listen, sizeof cfg->listen, "127.0.0.1:8080");
  cfg->queue = 8;
  cfg->max_body_bytes = (size_t)64 << 20; /* 64 MiB: ~400k contacts */
  cfg->max_contacts = 1000000;
  cfg->max_bodies = 1000000;
  cfg->max_depth = 32;
  cfg->max_sessions = 32;
  cfg->session_idle_s = 600;
  cfg->max_solve_s = 60;
  cfg->max_connections = 2048;
  cfg->max_connections_per_ip = 0;
  cfg->max_inflight_bytes = (size_t)256 << 20;
  cfg->max_elements = 16000000;
  cfg->max_parse_bytes = (size_t)1 << 30;
  cfg->header_timeout_s = 10;
  cfg->min_rate = 65536;
  cfg->idle_timeout_s = 30;
  cfg->max_dense = 4000;
  cfg->drain_s = 120;
  cfg->solve_nice = 0;
  cfg->keep_workspace = (size_t)1 << 30;
}

int cm__server_init(cm__server_t *srv, const cm__server_config_t *cfg) {
  memset(srv, 0, sizeof *srv);
  srv->cfg = *cfg;
  pthread_mutex_init(&srv->lock, NULL);
  cm__queue_init(&srv->queue, cfg->queue);
  srv->metrics = cm__metrics_create();
  if (!srv->metrics ||
      cm__store_init(&srv->store, cfg->max_sessions, cfg->session_idle_s)) {
    cm__server_destroy(srv);
    return CM_NOMEM;
  }
  return CM_OK;
}

void cm__server_destroy(cm__server_t *srv) {
  cm__store_destroy(&srv->store);
  cm__metrics_destroy(&srv->metrics);
  cm__queue_destroy(&srv->queue);
  pthread_mutex_destroy(&srv->lock);
}

/* ---- responses -------------------------------------------------------------
 */

/* Takes ownership of the JSON value. */
static void cm__reply_json(cm__response_t *r, int http, json_t *j) {
  r->status = http;
  r->body = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  if (!r->body) { /* out of memory: a static-size answer still fits */
    r->status = 500;
    r->body = cm__strdup("{\"error\":\"nomem\",\"message\":\"out of memory\"}");
  }
  r->body_len = r->body ? strlen(r->body) : 0;
}

/* Takes ownership of text (a JSON document). */
static void cm__reply_text(cm__response_t *r, int http, char *text) {
  r->status = http;
  r->body = text;
  r->body_len = text ? strlen(text) : 0;
}

/* The error body {"error", "message", "path"} from a status and context. */
static void cm__reply_error(cm__response_t *r, int status,
                            const cm_context_t *ctx) {
  const char *msg =
      ctx && ctx->message[0] ? ctx->message : cm_status_message(status);
  json_t *j = json_pack(
      "{s:s, s:s, s:o}", "error", cm_status_name(status), "message", msg,
      "path", ctx && ctx->path[0] ? json_string(ctx->path) : json_null());
  cm__reply_json(r, cm_status_http(status), j);
}

/* Formats a message into a fresh context and replies with it. */
static void cm__fail(cm__response_t *r, int status, const char *path,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void cm__fail(cm__response_t *r, int status, const char *path,
                     const char *fmt, ...) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx.message, sizeof ctx.message, fmt, ap);
  va_end(ap);
  if (path)
    snprintf(ctx.path, sizeof ctx.path, "%s", path);
  cm__reply_error(r, status, &ctx);
}

/* ---- request checks ---------------------------------------------- */

/* Constant-time comparison of the bearer token: the time depends only on
 * the lengths, never on where the first difference is. */
static int cm__auth_ok(const char *token, const char *header) {
  static const char prefix[] = "Bearer ";
  if (!header || strncasecmp(header, prefix, sizeof prefix - 1))
    return 0;
  const char *got = header + sizeof prefix - 1;
  size_t n = strlen(token), m = strlen(got);
  unsigned char diff = (unsigned char)(n != m);
  for (size_t i = 0; i < n; i++)
    diff |= (unsigned char)(token[i] ^ (i < m ? got[i] : 0));
  return diff == 0;
}

static int cm__json_media(const char *ct) {
  if (!ct || !*ct)
    return 1; /* none given: take it as JSON (stdio, simple clients) */
  size_t n = strcspn(ct, ";");
  while (n && isspace((unsigned char)ct[n - 1]))
    n--;
  if (n == 16 && !strncasecmp(ct, "application/json", 16))
    return 1;
  return n > 5 && !strncasecmp(ct + n - 5, "+json", 5);
}

/* The deepest nesting of arrays and objects in a parsed value, stopping
 * once past limit (a body the transport parsed already). */
static int cm__depth(json_t *v, int limit) {
  if (!json_is_object(v) && !json_is_array(v))
    return 0;
  if (limit < 1)
    return 1;
  int deepest = 0;
  if (json_is_array(v)) {
    for (size_t i = 0; i < json_array_size(v) && deepest < limit; i++) {
      int d = cm__depth(json_array_get(v, i), limit - 1);
      deepest = d > deepest ? d : deepest;
    }
  } else {
    const char *key;
    json_t *x;
    json_object_foreach(v, key, x) {
      int d = cm__depth(x, limit - 1);
      deepest = d > deepest ? d : deepest;
      if (deepest >= limit)
        break;
    }
  }
  return deepest + 1;
}

/* Size, media type and depth checks of a JSON body; replies and returns
 * nonzero on failure. *wrapped: the root is an object with a "scene" key. */
static int cm__body_check(cm__server_t *srv, const cm__request_t *req,
                          cm__response_t *r, int *wrapped) {
  const cm__server_config_t *cfg = &srv->cfg;
  int depth;
  if (req->body_json) { /* parsed by the transport, within its line limit */
    json_t *root = req->body_json;
    *wrapped = json_is_object(root) && json_object_get(root, "scene");
    depth = cm__depth(root, cfg->max_depth);
  } else {
    if (req->body_too_large || req->body_len > cfg->max_body_bytes) {
      cm__fail(r, CM_LIMIT, "(body)",
               "request body larger than the server's "
               "limit of %zu bytes (--max-body-bytes); send a smaller scene "
               "or raise the limit",
               cfg->max_body_bytes);
      return 1;
    }
    if (!cm__json_media(req->content_type)) {
      cm__fail(r, CM_MEDIA_TYPE, "(headers).content-type",
               "Content-Type \"%.100s"
               "\" is not JSON: send application/json",
               req->content_type);
      return 1;
    }
    if (!req->body_len) {
      cm__fail(r, CM_PARSE, "(body)", "empty body: expected a JSON document");
      return 1;
    }
    cm__json_scan_t scan;
    cm__json_prescan(req->body, req->body_len, cfg->max_depth,
                     cfg->max_elements, &scan);
    *wrapped = scan.wrapped;
    depth = scan.depth;
    if (scan.elements > cfg->max_elements) {
      cm__fail(r, CM_LIMIT, "(body)",
               "JSON body with more than %zu values, the server's limit "
               "(--max-elements); send a smaller scene or raise the limit",
               cfg->max_elements);
      return 1;
    }
    size_t est = cm__json_tree_bytes(&scan);
    if (depth <= cfg->max_depth && est > cfg->max_parse_bytes) {
      cm__fail(r, CM_LIMIT, "(body)",
               "JSON body whose parse would take about %zu MiB (%zu "
               "objects, %zu arrays, %zu strings, %zu numbers), past the "
               "server's limit of %zu MiB (--max-parse-bytes); send a "
               "smaller scene or raise the limit",
               est >> 20, scan.objects, scan.arrays, scan.strings, scan.numbers,
               cfg->max_parse_bytes >> 20);
      return 1;
    }
    if (depth <= cfg->max_depth && cm__parse_reserve(srv, est)) {
      r->retry_after_s = 1;
      cm__fail(r, CM_BUSY, "(body)",
               "the server is parsing other large bodies (--max-parse-bytes "
               "%zu MiB taken); retry after 1 s",
               cfg->max_parse_bytes >> 20);
      return 1;
    }
  }
  if (depth > cfg->max_depth) {
    cm__fail(r, CM_LIMIT, "(body)",
             "JSON nested deeper than the server's "
             "limit of %d levels (--max-depth)",
             cfg->max_depth);
    return 1;
  }
  return 0;
}

/* Checks and parses a body that is not a scene (a patch, a session's
 * options), once, into *root (a new reference, the caller's). Replies and
 * returns nonzero on failure. */
static int cm__body_json(cm__server_t *srv, const cm__request_t *req,
                         cm__response_t *r, json_t **root) {
  int wrapped;
  *root = NULL;
  if (cm__body_check(srv, req, r, &wrapped))
    return 1;
  if (req->body_json) {
    *root = json_incref(req->body_json);
    return 0;
  }
  json_error_t err;
  *root = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &err);
  if (*root)
    return 0;
  if (json_error_code(&err) == json_error_out_of_memory ||
      cm__json_check(req->body, req->body_len) != 1) { /* jansson 2.14
    reports running out of memory as a syntax error, or with no text */
    cm__fail(r, CM_NOMEM, "(body)", "out of memory reading the body");
    return 1;
  }
  cm__fail(r, CM_PARSE, "(body)", "request body:%d:%d: malformed JSON: %s",
           err.line, err.column, err.text);
  return 1;
}

/* ---- scenes from a body ------------------------------------------ */

/* The scene of a body the transport parsed already (stdio): the members
 * of {"scene": ..., "options": ...} or the bare scene, read from the tree. */
static int cm__tree_scene(cm__response_t *r, json_t *root, int wrapped,
                          cm_context_t *ctx, cm_scene_t **scene,
                          json_t **options) {
  json_t *js = root;
  if (wrapped) {
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
      if (strcmp(key, "scene") && strcmp(key, "options")) {
        char path[96];
        snprintf(path, sizeof path, "%.64s", key);
        cm__fail(r, CM_USAGE, path,
                 "%s: unknown key next to \"scene\" "
                 "(allowed: scene, options)",
                 path);
        return -1;
      }
    }
    js = json_object_get(root, "scene");
    if (!json_is_object(js)) {
      cm__fail(r, CM_INVALID_SCENE, "scene",
               "scene: expected a scene object "
               "{\"format\": \"cmodes-scene\", ...}");
      return -1;
    }
    *options = json_incref(json_object_get(root, "options"));
  }
  return cm__scene_from_json(ctx, js, "scene", scene);
}

/* A bare scene and the "scene" member of {"scene": ..., "options": ...}
 * are streamed from the body text in one pass, no tree (the options, small,
 * become one), the server's limits checked while reading; a body the
 * transport parsed goes to the tree reader. *options is a new reference or
 * NULL; *t_parse the parse and read time. Replies and returns nonzero on
 * failure. */
static int cm__body_scene(cm__server_t *srv, const cm__request_t *req,
                          cm__response_t *r, cm_scene_t **scene,
                          json_t **options, double *t_parse) {
  const cm__server_config_t *cfg = &srv->cfg;
  int wrapped, st;
  double t0 = cm__now();
  *scene = NULL;
  *options = NULL;
  if (cm__body_check(srv, req, r, &wrapped))
    return 1;
  cm_context_t ctx;
  cm_context_init(&ctx);
  if (req->body_json) {
    st = cm__tree_scene(r, req->body_json, wrapped, &ctx, scene, options);
    if (st == -1)
      return 1;
  } else {
    cm__scene_limits_t lim = {cfg->max_depth,     cfg->max_bodies,
                              cfg->max_contacts,  "the server's limit",
                              " (--max-depth)",   " (--max-bodies)",
                              " (--max-contacts)"};
    st = wrapped ? cm__scene_parse_wrapped(&ctx, req->body, req->body_len, &lim,
                                           scene, options)
                 : cm__scene_parse_json_limited(&ctx, req->body, req->body_len,
                                                "scene", &lim, scene);
  }
  *t_parse = cm__now() - t0;
  if (!st && (*scene)->nbodies > cfg->max_bodies)
    st = CM__ERR(&ctx, CM_LIMIT, "bodies",
                 "bodies: %d bodies, more than the "
                 "server's limit of %d (--max-bodies)",
                 (*scene)->nbodies, cfg->max_bodies);
  if (!st && (*scene)->ncontacts > cfg->max_contacts)
    st = CM__ERR(&ctx, CM_LIMIT, "contacts",
                 "contacts: %d contacts, more "
                 "than the server's limit of %d (--max-contacts)",
                 (*scene)->ncontacts, cfg->max_contacts);
  if (st) {
    cm_scene_destroy(scene);
    json_decref(*options);
    *options = NULL;
    cm__reply_error(r, st, &ctx);
    return 1;
  }
  return 0;
}

/* ---- options ----------------------------------------------------- */

typedef struct {
  cm_options_t opts; /* analysis options */
  int json_flags;    /* cm_report_to_json flags */
} cm__ropts_t;

int cm__query_options(cm_context_t *ctx, const cm__request_t *req,
                      cm_options_t *o, int *json_flags) {
  int st = CM_OK;
  for (int i = 0; !st && i < req->nquery; i++) {
    const char *k = req->qkey[i], *v = req->qval[i];
    for (int j = 0; j < i && !st; j++)
      if (!strcmp(req->qkey[j], k)) {
        char where[96];
        snprintf(where, sizeof where, "?%s", k);
        st = CM__ERR(ctx, CM_USAGE, where,
                     "%s: given twice in the query; give each parameter once",
                     where);
      }
    if (st)
      break;
    if (!strcmp(k, "timings")) {
      if (v && (!strcmp(v, "0") || !strcmp(v, "false")))
        *json_flags |= CM_JSON_NO_TIMINGS;
      else if (v && strcmp(v, "1") && strcmp(v, "true"))
        st = CM__ERR(ctx, CM_USAGE, "?timings",
                     "?timings: expected true or false");
    } else if (!strcmp(k, "pretty")) {
      *json_flags |= CM_JSON_INDENT;
    } else {
      st = cm__options_from_query(ctx, k, v, o);
    }
  }
  return st;
}

/* Layers defaults < stored session options < body options < query. */
static int cm__collect_options(cm__server_t *srv, const cm__request_t *req,
                               const json_t *stored, const json_t *body_opts,
                               cm__ropts_t *ro, cm_context_t *ctx) {
  cm_options_init(&ro->opts);
  ro->json_flags = 0;
  int st = CM_OK;
  if (stored)
    st = cm__options_from_json(ctx, stored, &ro->opts);
  if (!st && body_opts)
    st = cm__options_from_json(ctx, body_opts, &ro->opts);
  if (!st)
    st = cm__query_options(ctx, req, &ro->opts, &ro->json_flags);
  double cap = srv->cfg.max_solve_s;
  if (cap > 0 && (ro->opts.max_seconds <= 0 || ro->opts.max_seconds > cap))
    ro->opts.max_seconds = cap; /* the server's solve budget */
  return st;
}

/* Scenes with fewer contacts run single-threaded. */
#define CM__SMALL_SCENE 4096

/* ---- the analysis itself ----------------------------------------- */

/* cm_analysis_solve for cm__call_below. */
typedef struct {
  cm_context_t *ctx;
  cm_analysis_t *an;
  int st;
} cm__solve_job_t;

static void cm__solve_job(void *p) {
  cm__solve_job_t *j = p;
  j->st = cm_analysis_solve(j->ctx, j->an, 0);
}

/* Assembles in the caller's thread (in parallel with other requests), then
 * factors and solves in the queue. On success *rep is the caller's.
 * consume: s is the request's own, destroyed after: its records are freed
 * once assembled (cm__scene_release_records), before the solve queues. */
static int cm__run(cm__server_t *srv, cm_context_t *ctx, const cm_scene_t *s,
                   cm_scene_t *consume, const cm_options_t *opts,
                   cm_report_t **rep, int *retry_after_s) {
  cm_analysis_t *an = NULL;
  *rep = NULL;
  /* a small scene on one thread: a parallel region costs more than it
   * saves, and on a busy machine its barrier waits for a descheduled
   * thread (same bits either way: the kernels are deterministic) */
  ctx->threads = s->ncontacts < CM__SMALL_SCENE ? 1 : 0;
  int st = cm_analysis_create(ctx, s, NULL, opts, &an); /* assembles */
  if (st < 0)
    return st;
  if (consume == s)
    cm__scene_release_records(consume, cm_analysis_system(an));
  /* what the budget cannot stop is refused before it queues */
  if ((st = cm__dense_check(ctx, cm_analysis_system(an), opts,
                            srv->cfg.max_dense))) {
    cm_analysis_destroy(&an);
    return st;
  }
  st = cm__queue_enter(&srv->queue, retry_after_s);
  if (st) {
    cm_analysis_destroy(&an);
    return CM__ERR(ctx, CM_BUSY, NULL,
                   "the solve queue is full (%d admitted,"
                   " --queue); retry after %d s",
                   srv->queue.depth, *retry_after_s);
  }
  double t0 = cm__now();
  cm__solve_job_t job = {ctx, an, 0};
  cm__call_below(srv, cm__solve_job, &job); /* below the transport */
  st = job.st;
  double dt = cm__now() - t0;
  cm__queue_leave(&srv->queue, dt);
  *rep = cm_analysis_take_report(an);
  cm_analysis_destroy(&an);
  if (*rep)
    cm__metrics_solve(srv->metrics, dt, (*rep)->matvecs, (*rep)->status);
  /* a spectrum past the range of doubles must not pass as a number */
  const cm_report_t *rp = *rep;
  if (rp && rp->ncontacts > 0 &&
      !(isfinite(rp->omega_max) && isfinite(rp->pc_omega_max) &&
        isfinite(rp->omega_upper) && rp->pc_omega_max > 0)) {
    cm_report_destroy(rep);
    return CM__ERR(ctx, CM_NUMERIC, NULL,
                   "the frequencies overflow or "
                   "vanish in double precision (stiffness / mass ratios "
                   "near 1e300 or 1e-300): rescale the units of the scene");
  }
  return st;
}

static void cm__reply_report(cm__response_t *r, const cm_report_t *rep,
                             int flags) {
  char *text = cm_report_to_json(rep, flags);
  if (!text) {
    cm__fail(r, CM_NOMEM, NULL, "out of memory writing the report");
    return;
  }
  cm__reply_text(r, 200, text);
}

/* ---- POST /v1/analyze -------------------------------------------- */

static void cm__analyze(cm__server_t *srv, const cm__request_t *req,
                        cm__response_t *r) {
  json_t *jopts;
  cm_scene_t *scene = NULL;
  double t_parse;
  if (cm__body_scene(srv, req, r, &scene, &jopts, &t_parse))
    return;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm__ropts_t ro;
  cm_report_t *rep = NULL;
  int st = cm__collect_options(srv, req, NULL, jopts, &ro, &ctx);
  if (!st)
    st = cm__run(srv, &ctx, scene, scene, &ro.opts, &rep, &r->retry_after_s);
  if (st < 0) {
    cm__reply_error(r, st, &ctx);
  } else {
    rep->t_parse = t_parse;
    cm__reply_report(r, rep, ro.json_flags);
  }
  cm_report_destroy(&rep);
  cm_scene_destroy(&scene);
  json_decref(jopts);
}

/* ---- sessions ---------------------------------------------------- */

static json_t *cm__summary(cm__server_t *srv, const cm__session_t *s) {
  const cm_scene_t *sc = s->scene;
  int fixed = 0;
  for (int i = 0; i < sc->nbodies; i++)
    fixed += sc->bodies[i].fixed != 0;
  char loc[96];
  snprintf(loc, sizeof loc, "/v1/scenes/%s", s->id);
  return json_pack("{s:s, s:s, s:I, s:i, s:i, s:i, s:i, s:b, s:b, s:f}", "id",
                   s->id, "location", loc, "version", (json_int_t)s->version,
                   "dim", sc->dim, "bodies", sc->nbodies, "fixed_bodies", fixed,
                   "contacts", sc->ncontacts, "has_report",
                   s->report_version == s->version, "warm_start",
                   s->start != NULL, "idle_expiry_s", srv->cfg.session_idle_s);
}

/* The options a new scene keeps: the body's, with its query options on top
 * (checked already). A new reference, or NULL for none. */
static json_t *cm__stored_options(const cm__request_t *req, json_t *body) {
  json_t *o = body ? json_deep_copy(body) : NULL;
  for (int i = 0; i < req->nquery; i++) {
    const cm__option_t *t = cm__option_find(req->qkey[i]);
    cm_options_t one;
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_options_init(&one);
    if (!t || strcmp(t->name, req->qkey[i]) ||
        cm__options_from_query(&ctx, t->name, req->qval[i], &one))
      continue; /* timings, pretty */
    double v = cm__option_get(t, &one);
    if (!o && !(o = json_object()))
      return NULL;
    json_object_set_new(o, t->name,
                        t->type == CM__OPT_METHOD
                            ? json_string(cm__method_name((int)v))
                        : t->type == CM__OPT_INT ? json_integer((json_int_t)v)
                                                 : json_real(v));
  }
  return o;
}

static void cm__scene_create(cm__server_t *srv, const cm__request_t *req,
                             cm__response_t *r) {
  json_t *jopts;
  cm_scene_t *scene = NULL;
  double t_parse;
  if (cm__body_scene(srv, req, r, &scene, &jopts, &t_parse))
    return;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm__ropts_t ro;
  int st = cm__collect_options(srv, req, NULL, jopts, &ro, &ctx);
  if (st) {
    cm__reply_error(r, st, &ctx);
    cm_scene_destroy(&scene);
    json_decref(jopts);
    return;
  }
  json_t *keep = cm__stored_options(req, jopts); /* the session's now */
  json_decref(jopts);
  cm__session_t *s = NULL;
  st = cm__store_add(&srv->store, scene, keep, &s, &r->retry_after_s);
  if (st) {
    cm__fail(r, st, NULL,
             st == CM_TOO_MANY
                 ? "the server holds its limit of %d scenes (--max-sessions): "
                   "DELETE one, or retry once an idle one expires"
                 : "out of memory (%d)",
             srv->cfg.max_sessions);
    cm_scene_destroy(&scene);
    json_decref(keep);
  } else {
    snprintf(r->location, sizeof r->location, "/v1/scenes/%s", s->id);
    cm__reply_json(r, 201, cm__summary(srv, s));
    cm__store_release(&srv->store, &s);
  }
}

static void cm__scene_report(cm__server_t *srv, const cm__request_t *req,
                             cm__session_t *s, cm__response_t *r) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm__ropts_t ro;
  int st = cm__collect_options(srv, req, s->options, NULL, &ro, &ctx);
  if (st) {
    cm__reply_error(r, st, &ctx);
    return;
  }
  char *key0 = cm__options_key(&ro.opts), key[600];
  snprintf(key, sizeof key, "%s|%d", key0 ? key0 : "", ro.json_flags);
  free(key0);
  if (s->report_json && s->report_version == s->version && s->report_key &&
      !strcmp(s->report_key, key)) {
    cm__reply_text(r, 200, cm__strdup(s->report_json));
    return;
  }
  /* cold by default: the certified step's bound needs a Gaussian start,
   * so a warm start costs a run of its own and more products in all
   * (docs/server.md, --warm-starts) */
  ro.opts.warm_start = srv->cfg.warm_starts ? s->start : NULL;
  cm_report_t *rep = NULL;
  st = cm__run(srv, &ctx, s->scene, NULL, &ro.opts, &rep, &r->retry_after_s);
  if (st < 0) {
    cm__reply_error(r, st, &ctx);
    return;
  }
  if (srv->cfg.warm_starts && rep->start_vector &&
      rep->nstart == s->scene->ncontacts) {
    double *v = malloc(((size_t)rep->nstart + 1) * sizeof *v);
    if (v) {
      memcpy(v, rep->start_vector, (size_t)rep->nstart * sizeof *v);
      free(s->start);
      s->start = v;
    }
  }
  cm__reply_report(r, rep, ro.json_flags);
  if (r->status == 200) {
    free(s->report_json);
    free(s->report_key);
    s->report_json = cm__strdup(r->body);
    s->report_key = cm__strdup(key);
    s->report_version = s->version;
  }
  cm_report_destroy(&rep);
}

static void cm__scene_patch(cm__server_t *srv, const cm__request_t *req,
                            cm__session_t *s, cm__response_t *r) {
  json_t *root;
  if (cm__body_json(srv, req, r, &root))
    return;
  cm_context_t ctx;
  cm_context_init(&ctx);
  json_t *v = json_object_get(root, "version"), *added = NULL;
  int st = CM_OK;
  if (!json_is_object(root))
    st = CM__ERR(&ctx, CM_PARSE, "(root)",
                 "expected a patch object such as "
                 "{\"contacts\": {\"set\": [...]}}");
  else if (v && !json_is_integer(v))
    st = CM__ERR(&ctx, CM_USAGE, "version",
                 "version: expected the integer "
                 "version the patch was written against");
  else if (v && json_integer_value(v) != s->version)
    st = CM__ERR(&ctx, CM_CONFLICT, "version",
                 "version: the patch is for "
                 "version %lld but the scene is at version %ld; GET it and "
                 "patch again",
                 (long long)json_integer_value(v), s->version);
  if (!st)
    st = cm__patch_apply(&ctx, root, &srv->cfg, &s->scene, &s->start, &added);
  if (st) {
    cm__reply_error(r, st, &ctx);
  } else {
    s->version++;
    json_t *j = cm__summary(srv, s);
    json_object_set_new(j, "added", added);
    cm__reply_json(r, 200, j);
  }
  json_decref(root);
}

/* cm__report_html_scene for cm__call_below. */
typedef struct {
  cm_context_t *ctx;
  cm__session_t *s;
  char *html;
  size_t len;
  int st;
} cm__html_job_t;

static void cm__html_job(void *p) {
  cm__html_job_t *j = p;
  j->st = cm__report_html_scene(j->ctx, j->s->scene, NULL, j->s->id, &j->html,
                                &j->len);
}

/* GET /v1/scenes/{id}/report.html: the page of `cmodes report` for the
 * session's scene (default options), solved through the solve queue like
 * every analysis: a full queue answers 503 with Retry-After. */
static void cm__scene_report_html(cm__server_t *srv, cm__session_t *s,
                                  cm__response_t *r) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  char *html = NULL;
  size_t len = 0;
  if (cm__queue_enter(&srv->queue, &r->retry_after_s)) {
    cm__fail(r, CM_BUSY, NULL,
             "the solve queue is full (%d admitted, --queue); retry after "
             "%d s",
             srv->queue.depth, r->retry_after_s);
    return;
  }
  double t0 = cm__now();
  cm__html_job_t job = {&ctx, s, NULL, 0, 0};
  cm__call_below(srv, cm__html_job, &job); /* below the transport */
  int st = job.st;
  html = job.html, len = job.len;
  cm__queue_leave(&srv->queue, cm__now() - t0);
  if (st < 0) {
    cm__reply_error(r, st, &ctx);
    return;
  }
  snprintf(r->content_type, sizeof r->content_type, "text/html; charset=utf-8");
  r->status = 200, r->body = html, r->body_len = len;
}

/* /v1/scenes/{id}[/report|/scene] */
static void cm__scene_route(cm__server_t *srv, const cm__request_t *req,
                            const char *rest, cm__response_t *r) {
  char id[33];
  size_t n = strcspn(rest, "/");
  const char *sub = rest + n;
  int hex = n == 32;
  for (size_t i = 0; hex && i < n; i++)
    hex = isxdigit((unsigned char)rest[i]) && !isupper((unsigned char)rest[i]);
  r->route = !*sub                          ? "/v1/scenes/{id}"
             : !strcmp(sub, "/report")      ? "/v1/scenes/{id}/report"
             : !strcmp(sub, "/scene")       ? "/v1/scenes/{id}/scene"
             : !strcmp(sub, "/report.html") ? "/v1/scenes/{id}/report.html"
                                            : "other";
  if (!strcmp(r->route, "other")) {
    cm__fail(r, CM_NOT_FOUND, req->path, "no route %s", req->path);
    return;
  }
  const char *m = req->method;
  const char *allow = !*sub ? "GET, PATCH, DELETE" : "GET";
  if (!(!strcmp(m, "GET") ||
        (!*sub && (!strcmp(m, "PATCH") || !strcmp(m, "DELETE"))))) {
    snprintf(r->allow, sizeof r->allow, "%s", allow);
    cm__fail(r, CM_METHOD, req->path, "%s is not allowed on %s (allowed: %s)",
             m, r->route, allow);
    return;
  }
  if (!hex) {
    cm__fail(r, CM_NOT_FOUND, req->path,
             "no scene %.*s: ids are 32 lowercase"
             " hex digits, as returned by POST /v1/scenes",
             (int)(n > 40 ? 40 : n), rest);
    return;
  }
  memcpy(id, rest, 32);
  id[32] = 0;
  if (!strcmp(m, "DELETE")) {
    if (cm__store_delete(&srv->store, id))
      cm__fail(r, CM_NOT_FOUND, req->path, "no scene %s (deleted or expired)",
               id);
    else
      cm__reply_json(r, 200, json_pack("{s:s, s:b}", "id", id, "deleted", 1));
    return;
  }
  cm__session_t *s = cm__store_get(&srv->store, id);
  if (!s) {
    cm__fail(r, CM_NOT_FOUND, req->path,
             "no scene %s (deleted, expired or "
             "never created)",
             id);
    return;
  }
  pthread_mutex_lock(&s->lock);
  if (!strcmp(m, "PATCH")) {
    cm__scene_patch(srv, req, s, r);
  } else if (!*sub) {
    cm__reply_json(r, 200, cm__summary(srv, s));
  } else if (!strcmp(sub, "/report")) {
    cm__scene_report(srv, req, s, r);
  } else if (!strcmp(sub, "/report.html")) {
    cm__scene_report_html(srv, s, r);
  } else {
    cm_context_t ctx;
    cm_context_init(&ctx);
    char *text = cm_scene_to_json(&ctx, s->scene);
    if (text)
      cm__reply_text(r, 200, text);
    else
      cm__reply_error(r, ctx.status ? ctx.status : CM_NOMEM, &ctx);
  }
  pthread_mutex_unlock(&s->lock);
  cm__store_release(&srv->store, &s);
}

/* ---- dispatch ---------------------------------------------------- */

static void cm__metrics_route(cm__server_t *srv, cm__response_t *r) {
  int adm, run, infl;
  cm__queue_gauges(&srv->queue, &adm, &run);
  pthread_mutex_lock(&srv->lock);
  infl = srv->in_flight;
  pthread_mutex_unlock(&srv->lock);
  char *t = cm__metrics_text(srv->metrics, cm__store_count(&srv->store), adm,
                             run, infl);
  if (!t) {
    cm__fail(r, CM_NOMEM, NULL, "out of memory");
    return;
  }
  cm__reply_text(r, 200, t);
  snprintf(r->content_type, sizeof r->content_type,
           "text/plain; version=0.0.4");
}

/* Checks the method of a single-method route; replies 405 otherwise. */
static int cm__only(const cm__request_t *req, const char *m,
                    cm__response_t *r) {
  if (!strcmp(req->method, m))
    return 1;
  snprintf(r->allow, sizeof r->allow, "%s", m);
  cm__fail(r, CM_METHOD, req->path, "%s is not allowed on %s (allowed: %s)",
           req->method, req->path, m);
  return 0;
}

/* 413 for a request past CM__MAX_QUERY query parameters. */
static int cm__query_limit(const cm__request_t *req, cm__response_t *r) {
  if (!req->query_dropped)
    return 0;
  cm__fail(r, CM_LIMIT, "(query)",
           "more than %d query parameters: the server's limit; put the "
           "options in the body's \"options\" object",
           CM__MAX_QUERY);
  return 1;
}

void cm__route(cm__server_t *srv, const cm__request_t *req, cm__response_t *r) {
  double t0 = cm__now();
  memset(r, 0, sizeof *r);
  r->route = "other";
  snprintf(r->content_type, sizeof r->content_type, "application/json");
  const char *p = req->path ? req->path : "";
  int drain;
  pthread_mutex_lock(&srv->lock);
  drain = srv->draining;
  pthread_mutex_unlock(&srv->lock);

  if (!strcmp(p, "/healthz")) {
    r->route = "/healthz";
    if (cm__only(req, "GET", r))
      cm__reply_json(r, drain ? 503 : 200,
                     json_pack("{s:s, s:s}", "status",
                               drain ? "draining" : "ok", "version",
                               CM_VERSION_STRING));
  } else if (req->check_auth && srv->cfg.token[0] &&
             !cm__auth_ok(srv->cfg.token, req->authorization)) {
    r->www_authenticate = 1;
    cm__fail(r, CM_UNAUTHORIZED, "(headers).authorization",
             req->authorization ? "wrong bearer token"
                                : "this server needs \"Authorization: Bearer "
                                  "<token>\" (--token-file)");
  } else if (cm__query_limit(req, r)) {
  } else if (drain) {
    r->retry_after_s = 1;
    cm__fail(r, CM_BUSY, NULL, "the server is shutting down");
  } else if (!strcmp(p, "/metrics")) {
    r->route = "/metrics";
    if (cm__only(req, "GET", r))
      cm__metrics_route(srv, r);
  } else if (!strcmp(p, "/v1/analyze")) {
    r->route = "/v1/analyze";
    if (cm__only(req, "POST", r) && !cm__matrices_route(srv, req, r))
      cm__analyze(srv, req, r);
  } else if (!strcmp(p, "/v1/scenes")) {
    r->route = "/v1/scenes";
    if (cm__only(req, "POST", r))
      cm__scene_create(srv, req, r);
  } else if (!strncmp(p, "/v1/scenes/", 11)) {
    cm__scene_route(srv, req, p + 11, r);
  } else {
    cm__fail(r, CM_NOT_FOUND, p,
             "no route %.200s (routes: /healthz, /metrics,"
             " /v1/analyze, /v1/scenes, /v1/scenes/{id}[/report|/scene])",
             p);
  }
  cm__parse_release(srv); /* the body's tree is gone by now */
  cm__metrics_request(srv->metrics, r->route, r->status, req->body_len,
                      cm__now() - t0);
}

int cm__route_early(cm__server_t *srv, const cm__request_t *req,
                    cm__response_t *r) {
  int retry = 0;
  if (!req->method || !req->path || !strcmp(req->path, "/healthz"))
    return 0;
  int unauth = req->check_auth && srv->cfg.token[0] &&
               !cm__auth_ok(srv->cfg.token, req->authorization);
  int busy = !unauth && !strcmp(req->method, "POST") &&
             !strcmp(req->path, "/v1/analyze") &&
             cm__queue_full(&srv->queue, &retry);
  if (!unauth && !busy && !req->query_dropped)
    return 0;
  if (unauth || req->query_dropped) { /* the route itself answers both */
    cm__route(srv, req, r);
    return 1;
  }
  double t0 = cm__now();
  memset(r, 0, sizeof *r);
  r->route = "/v1/analyze";
  snprintf(r->content_type, sizeof r->content_type, "application/json");
  r->retry_after_s = retry;
  cm__fail(r, CM_BUSY, NULL,
           "the solve queue is full (%d admitted, --queue); retry after %d s",
           srv->queue.depth, retry);
  cm__metrics_request(srv->metrics, r->route, r->status, 0, cm__now() - t0);
  return 1;
}

/* ---- query strings ----------------------------------------------- */

static int cm__hexval(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

static void cm__unescape(char *s) {
  char *o = s;
  for (; *s; s++) {
    if (*s == '+') {
      *o++ = ' ';
    } else if (*s == '%' && cm__hexval(s[1]) >= 0 && cm__hexval(s[2]) >= 0) {
      *o++ = (char)(cm__hexval(s[1]) * 16 + cm__hexval(s[2]));
      s += 2;
    } else {
      *o++ = *s;
    }
  }
  *o = 0;
}

int cm__query_parse(char *buf, cm__request_t *req) {
  char *save = NULL;
  for (char *kv = strtok_r(buf, "&", &save); kv;
       kv = strtok_r(NULL, "&", &save)) {
    if (req->nquery >= CM__MAX_QUERY)
      return CM_LIMIT;
    char *eq = strchr(kv, '=');
    if (eq)
      *eq++ = 0;
    cm__unescape(kv);
    if (eq)
      cm__unescape(eq);
    req->qkey[req->nquery] = kv;
    req->qval[req->nquery] = eq;
    req->nquery++;
  }
  return CM_OK;
}
