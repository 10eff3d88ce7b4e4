/* server.h: the internals of `cmodes serve` (HTTP on libmicrohttpd, or JSON
 * lines on stdin/stdout). Both transports hand a cm__request_t to one router
 * (router.c) and send back the cm__response_t it fills, so the routes,
 * limits, errors and metrics are the same whatever the transport.
 * Not a public API: nothing here is installed or exported. */
#ifndef CM_SERVER_H
#define CM_SERVER_H

#include "internal.h"

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>

/* ---- configuration ------------------------------------------------------ */

typedef struct cm__server_config {
  char listen[128];      /* "ADDR:PORT", default "127.0.0.1:8080" */
  char token[512];       /* bearer token; empty = no authentication */
  int queue;             /* solves admitted (running + waiting), >= 1 */
  size_t max_body_bytes; /* request body limit */
  int max_contacts;      /* scene size limits */
  int max_bodies;
  int max_depth;         /* JSON nesting limit */
  int max_sessions;      /* stored scenes */
  double session_idle_s; /* idle expiry of a stored scene */
  double max_solve_s;    /* cap on options.max_seconds (0 = none) */
  int max_connections;   /* HTTP connections at once; more: closed at once */
  int max_connections_per_ip; /* HTTP connections from one address (0: any) */
  size_t max_inflight_bytes;  /* request body bytes admitted at once */
  size_t max_elements;        /* JSON values in a body */
  size_t max_parse_bytes;     /* estimated JSON tree memory at once */
  double header_timeout_s;    /* headers must be in within this */
  double min_rate;            /* bytes/s a body must average after that */
  double idle_timeout_s;      /* a silent connection is closed */
  int max_dense;              /* largest component solved densely */
  double drain_s;             /* SIGTERM: longest wait for in-flight requests */
  int solve_nice;             /* solves run this much nicer (0: in the
                                 request's thread, at its priority) */
  int warm_starts;            /* 1: a stored scene's solve starts from its
                                 last report's dominant vector */
  size_t keep_workspace;      /* freed analysis buffers kept for the next
                                 analysis (cm_workspace_keep; 0: none) */
  int stdio;                  /* 1: JSON lines on stdin/stdout */
  int quiet;                  /* 1: no access log */
} cm__server_config_t;

/* Defaults that keep a 24 GiB machine safe (docs/server.md). */
void cm__server_config_init(cm__server_config_t *cfg);

/* ---- metrics (metrics.c) ------------------------------------------------ */

typedef struct cm__metrics cm__metrics_t;

cm__metrics_t *cm__metrics_create(void);
void cm__metrics_destroy(cm__metrics_t **m);
/* Thread-safe updates; cannot fail. route is one of the route templates. */
void cm__metrics_request(cm__metrics_t *m, const char *route, int status,
                         size_t bytes_in, double seconds);
void cm__metrics_solve(cm__metrics_t *m, double seconds, long matvecs,
                       int report_status);
/* Prometheus text exposition; malloc'd, caller frees; NULL when out of
 * memory. The gauges are passed in by the caller. */
char *cm__metrics_text(cm__metrics_t *m, int sessions, int queue_depth,
                       int queue_running, int in_flight);

/* ---- solve queue (queue.c) ---------------------------------------------- */

/* Eigen-solves run one at a time (ARPACK keeps global state; each solve
 * uses every thread). At most `depth` solves are admitted (1 running plus
 * depth - 1 waiting); past that cm__queue_enter refuses at once. */
typedef struct cm__queue {
  pthread_mutex_t lock;
  pthread_cond_t turn;
  int depth;          /* admitted at most */
  int admitted;       /* running + waiting */
  int running;        /* 0 or 1 */
  unsigned long next; /* next ticket to hand out */
  unsigned long now;  /* ticket allowed to run */
  double ewma_s;      /* smoothed solve time, for Retry-After */
} cm__queue_t;

void cm__queue_init(cm__queue_t *q, int depth);
void cm__queue_destroy(cm__queue_t *q);
/* Admits and waits for the turn (FIFO). Returns 0, or CM_BUSY with
 * *retry_after_s set when the queue is full. */
int cm__queue_enter(cm__queue_t *q, int *retry_after_s);
/* 1 (and *retry_after_s) when cm__queue_enter would refuse now; a check
 * only, nothing is admitted. */
int cm__queue_full(cm__queue_t *q, int *retry_after_s);
void cm__queue_leave(cm__queue_t *q, double seconds);
void cm__queue_gauges(cm__queue_t *q, int *admitted, int *running);
/* ---- sessions (session.c) ----------------------------------------------- */

typedef struct cm__session {
  char id[33];          /* 32 hex digits */
  pthread_mutex_t lock; /* serialises PATCH and report on this session */
  int refs;             /* store + handles in use (store lock) */
  int dead;             /* deleted or expired: no new handles */
  double last_used;     /* cm__now() of the last request */
  long version;         /* 1 on create, +1 per PATCH */
  cm_scene_t *scene;    /* owned */
  json_t *options;      /* options given at create (owned), or NULL */
  double *start;        /* warm start over scene contacts, or NULL */
  long report_version;  /* version of the cached report, 0 = none */
  char *report_key;     /* options of the cached report (owned) */
  char *report_json;    /* cached report JSON (owned) */
} cm__session_t;

typedef struct cm__store {
  pthread_mutex_t lock;
  cm__session_t **slot; /* size cap, NULL = free */
  int cap;              /* max sessions */
  int count;            /* in use */
  double idle_s;        /* expiry */
} cm__store_t;

int cm__store_init(cm__store_t *st, int cap, double idle_s);
void cm__store_destroy(cm__store_t *st);
/* Adds a session owning scene and options (taken on success only). Returns
 * 0 with *out referenced (release with cm__store_release), or CM_TOO_MANY
 * (*retry_after_s: seconds until the oldest idle session expires), CM_NOMEM.
 */
int cm__store_add(cm__store_t *st, cm_scene_t *scene, json_t *options,
                  cm__session_t **out, int *retry_after_s);
/* Finds and references a live session, or NULL. */
cm__session_t *cm__store_get(cm__store_t *st, const char *id);
void cm__store_release(cm__store_t *st, cm__session_t **s);
/* Marks a session dead and drops the store's reference; 0 or CM_NOT_FOUND. */
int cm__store_delete(cm__store_t *st, const char *id);
/* Expires idle sessions; returns how many. */
int cm__store_expire(cm__store_t *st, double now);
int cm__store_count(cm__store_t *st);

/* ---- patches (patch.c) -------------------------------------------------- */

/* Applies a patch document (docs/server.md) to a copy of *scene. On success
 * *scene is replaced by the new scene (the old one destroyed), *start (if
 * not NULL) is mapped onto the new contact list (new contacts get 0), and
 * *added is a new JSON array of the added contacts' indices. On error
 * nothing changes and ctx names the place ("contacts.add[2].normal"). */
int cm__patch_apply(cm_context_t *ctx, const json_t *patch,
                    const cm__server_config_t *cfg, cm_scene_t **scene,
                    double **start, json_t **added);

/* ---- options ---------------------------------------------------------- */

/* The analysis options of a request (cm__options_from_json, _from_query)
 * and the cache key (cm__options_key) come from the options table. */
#include "analyze/options_table.h"

/* ---- router (router.c) -------------------------------------------------- */

typedef struct cm__server {
  cm__server_config_t cfg;
  cm__metrics_t *metrics;
  cm__queue_t queue;
  cm__store_t store;
  pthread_mutex_t lock; /* guards in_flight and draining */
  int in_flight;        /* requests being handled */
  size_t parse_bytes;   /* estimated JSON tree memory reserved */
  int draining;         /* SIGTERM seen: refuse new requests */
} cm__server_t;

/* Runs fn(arg) in a thread of its own at --solve-nice above the caller's
 * nice value (its OpenMP team too) and waits for it, so that a solve that
 * keeps every core busy does not delay the transport's threads (/healthz,
 * accepting, the watchdog); in the caller's thread when --solve-nice is 0
 * or no thread can be started. Same results either way. */
void cm__call_below(const cm__server_t *srv, void (*fn)(void *), void *arg);

int cm__server_init(cm__server_t *srv, const cm__server_config_t *cfg);
void cm__server_destroy(cm__server_t *srv);

#define CM__MAX_QUERY 32

typedef struct cm__request {
  const char *method; /* "GET", "POST", ... */
  const char *path;   /* without the query string */
  int nquery;         /* query parameters */
  const char *qkey[CM__MAX_QUERY];
  const char *qval[CM__MAX_QUERY]; /* NULL when given without '=' */
  const char *content_type;        /* header or NULL */
  const char *authorization;       /* header or NULL */
  int check_auth;                  /* 0 for --stdio (a trusted pipe) */
  const char *body;                /* request body (not NUL-terminated) */
  size_t body_len;                 /* its bytes (stdio: the line's) */
  json_t *body_json;  /* the body parsed by the transport (stdio), or NULL:
                         then body holds its text */
  int body_too_large; /* the transport cut the body at the limit */
  int query_dropped;  /* more than CM__MAX_QUERY query parameters */
} cm__request_t;

/* The query's analysis options over *o and its output flags (?timings,
 * ?pretty) into *json_flags; a parameter given twice is a usage error
 * (ctx says which), as a body's duplicate key is. router.c. */
int cm__query_options(cm_context_t *ctx, const cm__request_t *req,
                      cm_options_t *o, int *json_flags);

typedef struct cm__response {
  int status; /* HTTP status */
  char *body; /* JSON text, malloc'd (owned) */
  size_t body_len;
  char location[96];     /* Location header or "" */
  int retry_after_s;     /* Retry-After header when > 0 */
  char allow[64];        /* Allow header (405) or "" */
  int www_authenticate;  /* 401: send WWW-Authenticate */
  const char *route;     /* route template for metrics and logs */
  char content_type[64]; /* default application/json */
} cm__response_t;

/* Handles one request; always fills resp (errors are JSON bodies). The
 * caller frees resp->body. Thread-safe. */
void cm__route(cm__server_t *srv, const cm__request_t *req,
               cm__response_t *resp);

/* Called when the headers are in, before the body is read: 1 when the
 * request can be answered from them alone (POST /v1/analyze while the
 * solve queue is full: 503 straight away), resp then filled as by
 * cm__route; 0: read the body and call cm__route. */
int cm__route_early(cm__server_t *srv, const cm__request_t *req,
                    cm__response_t *resp);

/* POST /v1/analyze with {"matrices": ..., "options": ...} (matrices.c): 1
 * when the body is that (its root object has a "matrices" key), resp then
 * filled; 0: a scene body, for the router. */
int cm__matrices_route(cm__server_t *srv, const cm__request_t *req,
                       cm__response_t *resp);

/* Splits "a=1&b=x%20y" into req's query arrays, decoding in place in buf.
 * Returns 0 or CM_LIMIT when there are too many parameters. */
int cm__query_parse(char *buf, cm__request_t *req);

/* ---- limits (limits.c) ------------------------------------------------- */

/* What a pass over JSON text found, without building a tree. */
typedef struct {
  int depth;       /* deepest nesting of arrays and objects */
  size_t elements; /* values: objects, arrays, strings, numbers, literals
                      (object keys count as strings) */
  size_t objects, arrays, strings, numbers, literals;
  size_t string_bytes; /* bytes inside strings */
  int wrapped;         /* the root is an object with a "scene" key */
} cm__json_scan_t;

/* One pass over the raw bytes of a JSON body (no allocation): nesting
 * depth, number of values and the wrapped form. Stops early (returns 1)
 * once depth passes max_depth or elements pass max_elements; 0 otherwise.
 * Malformed text is left to the parser. */
int cm__json_prescan(const char *s, size_t len, int max_depth,
                     size_t max_elements, cm__json_scan_t *out);

/* The bytes a jansson tree of the scanned text takes, estimated from the
 * counts (measured with jansson 2.14: an empty object 232 B, an empty
 * array 136 B, a number 40 B, a string 88 B plus its bytes, a key in an
 * object 88 B plus its bytes), rounded up. */
size_t cm__json_tree_bytes(const cm__json_scan_t *scan);

/* Reserves est bytes of the parse allowance (--max-parse-bytes) for the
 * calling thread's request until cm__parse_release; 0, or -1 when the
 * allowance is taken by other requests. */
int cm__parse_reserve(cm__server_t *srv, size_t est);
void cm__parse_release(cm__server_t *srv);

/* Bodies at least this large give their freed memory back to the system
 * (malloc_trim) once handled. */
#define CM__TRIM_BYTES ((size_t)1 << 20)
void cm__memory_give_back(void);

/* Refuses, before any solve, what the solve budget cannot stop: dense
 * eigen-solves (LAPACK runs to the end once started) larger than
 * --max-dense, or whose estimated time passes the request's max_seconds.
 * CM_OK, or CM_LIMIT with ctx naming the component, the limit and the
 * option to change. */
int cm__dense_check(cm_context_t *ctx, const cm_system_t *sys,
                    const cm_options_t *opts, int max_dense);

/* ---- transports --------------------------------------------------------- */

/* HTTP: runs until SIGTERM/SIGINT; returns a process exit code. */
int cm__serve_http(cm__server_t *srv);
/* JSON lines on in/out until end of input; returns a process exit code. */
int cm__serve_stdio(cm__server_t *srv, FILE *in, FILE *out);

#endif
