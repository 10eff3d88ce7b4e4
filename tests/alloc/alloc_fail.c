/* alloc_fail.c: allocation-failure test (issue #18). Runs a request path
 * once to count its allocations, then again for every n with only the
 * n-th allocation failing, and checks that each run ends cleanly: either
 * the same answer as the reference run (the failure was absorbed) or the
 * documented out-of-memory answer (CM_NOMEM: status "nomem", message
 * "out of memory...", exit code 1; over HTTP 500 {"error":"nomem"}). Under
 * ASan/LSan (the sanitizer build) a leak or a crash on any failure path is
 * a finding too.
 *
 * The counter sees the library's own malloc, calloc, realloc and strdup
 * calls (the binary is linked with -Wl,--wrap=...), jansson's
 * (json_set_alloc_funcs) and CHOLMOD's (SuiteSparse_config). Not counted:
 * OpenBLAS, LAPACK, libgomp and libc-internal allocations (stdio buffers,
 * fmemopen).
 *
 * usage: alloc_fail analyze|server|stdio|matrices [SCENE [lanczos|arpack]]
 * ALLOC_FAIL_TRACE=n prints the call stack of allocation n and runs only
 * that n (for finding the site of a finding). */
#include "cmodes.h"
#include "server.h"

#include <execinfo.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <suitesparse/SuiteSparse_config.h>
#include <unistd.h>

/* ---- the counting allocator ---------------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);

static atomic_long g_count; /* allocations since arming */
static long g_fail_at;      /* the one that fails (1-based); 0: none */
static atomic_int g_failed; /* it has been failed */
static long g_trace;        /* print the stack of this one */

static int fail_now(void) {
  if (!g_fail_at)
    return 0;
  long k = atomic_fetch_add(&g_count, 1) + 1;
  if (k == g_trace) {
    void *bt[40];
    int m = backtrace(bt, 40);
    fprintf(stderr, "allocation %ld:\n", k);
    backtrace_symbols_fd(bt, m, 2);
  }
  if (k != g_fail_at)
    return 0;
  atomic_store(&g_failed, 1);
  return 1;
}

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) {
  return fail_now() ? NULL : __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n) {
  return fail_now() ? NULL : __real_realloc(p, n);
}
char *__wrap_strdup(const char *s) {
  return fail_now() ? NULL : __real_strdup(s);
}

static void arm(long n) {
  atomic_store(&g_count, 0);
  atomic_store(&g_failed, 0);
  g_fail_at = n;
}

/* ---- the paths ------------------------------------------------------------
 */

static const char *g_scene;
static int g_method = CM_METHOD_AUTO;
static char *g_text; /* the scene file's text */

/* The run's end: rep as JSON into *json, and a nomem status checked to
 * carry the documented message (else CM_INTERNAL, which the driver counts
 * as bad). */
static int run_finish(const cm_context_t *ctx, int st, const cm_report_t *rep,
                      char **json) {
  if (st >= 0) {
    *json = cm_report_to_json(rep, CM_JSON_NO_TIMINGS);
    if (!*json)
      st = CM_NOMEM;
  }
  if (st == CM_NOMEM && !strstr(ctx->message, "out of memory") &&
      ctx->status == CM_NOMEM) {
    fprintf(stderr, "nomem without the documented message: '%s'\n",
            ctx->message);
    st = CM_INTERNAL;
  }
  return st;
}

/* scene read -> assemble -> factor -> eigen -> report. Returns the status
 * and the report (no timings) in *json. */
static int run_analyze(char **json) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = 1;
  cm_scene_t *scene = NULL;
  cm_report_t *rep = NULL;
  *json = NULL;
  int st = cm_scene_read_file(&ctx, g_scene, &scene);
  if (!st) {
    cm_options_t o;
    cm_options_init(&o);
    o.method = g_method;
    if (g_method != CM_METHOD_AUTO)
      o.dense_max = 0;
    st = cm_analyze(&ctx, scene, &o, &rep);
  }
  st = run_finish(&ctx, st, rep, json);
  cm_report_destroy(&rep);
  cm_scene_destroy(&scene);
  return st;
}

/* A matrix system built here, split into components (two identical ones
 * and a dropped dof) and named: general M (tridiagonal blocks of 7 dofs)
 * with blk 0, M of 3 x 3 blocks (the block path) with blk 1. */
static int run_matrices_one(int blk, char **json) {
  enum { B = 7, NB = 2, N = NB * B + 1, R = 3, NC = NB * R };
  int Mp[N + 1], Mi[2 * N], Jp[NC + 1], Jj[2 * NC];
  double Mx[2 * N], Jx[2 * NC], k[NC];
  char nm[N + NC][16];
  const char *cn[N], *rn[NC];
  int q = 0;
  for (int j = 0; j < N; j++) { /* the last dof: no row reaches it */
    Mp[j] = q;
    Mi[q] = j, Mx[q++] = 2.0 + j % B;
    int next = j + 1 < N - 1 && (j + 1) % B && (!blk || (j % B) % 3 != 2);
    if (next)
      Mi[q] = j + 1, Mx[q++] = 0.5;
    snprintf(nm[j], sizeof nm[j], "r%d.q%d", j / B, j % B);
    cn[j] = nm[j];
  }
  Mp[N] = q;
  q = 0;
  for (int r = 0; r < NC; r++) { /* row r joins dofs of robot r / R */
    int b = r / R, i = r % R;
    Jp[r] = q;
    Jj[q] = b * B + i, Jx[q++] = 1.0;
    Jj[q] = b * B + i + 4, Jx[q++] = -0.5;
    k[r] = 1e4 * (1 + i);
    snprintf(nm[N + r], sizeof nm[N + r], "r%d.c%d", b, i);
    rn[r] = nm[N + r];
  }
  Jp[NC] = q;
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = 1;
  cm_system_t *sys = NULL;
  cm_report_t *rep = NULL;
  *json = NULL;
  int st =
      cm_system_from_matrices(&ctx, N, NC, Mp, Mi, Mx, Jp, Jj, Jx, k, &sys);
  if (!st)
    st = cm_system_set_names(&ctx, sys, rn, cn);
  if (!st)
    st = cm_analyze_system(&ctx, sys, NULL, NULL, &rep);
  st = run_finish(&ctx, st, rep, json);
  cm_report_destroy(&rep);
  cm_system_destroy(&sys);
  return st;
}

/* Both matrix systems; the answer is their two reports. */
static int run_matrices(char **json) {
  char *a = NULL, *b = NULL;
  int st = run_matrices_one(0, &a);
  if (!st)
    st = run_matrices_one(1, &b);
  *json = NULL;
  if (!st) {
    size_t la = strlen(a), lb = strlen(b);
    *json = malloc(la + lb + 1);
    if (!*json)
      st = CM_NOMEM;
    else
      memcpy(*json, a, la), memcpy(*json + la, b, lb + 1);
  }
  free(a), free(b);
  return st;
}

static cm__server_t g_srv;

/* POST /v1/analyze (a one-shot solve), POST /v1/scenes then the stored
 * scene's report and a PATCH, then DELETE: the server's request path in
 * process. Returns the first non-2xx HTTP status (0: all 2xx); *json gets
 * a copy of the last answer's error field, or NULL. */
static int route(const char *method, const char *path, const char *body,
                 char *loc, int *bad) {
  cm__request_t req;
  memset(&req, 0, sizeof req);
  req.method = method;
  req.path = path;
  req.body = body ? body : "";
  req.body_len = body ? strlen(body) : 0;
  cm__response_t r;
  memset(&r, 0, sizeof r);
  cm__route(&g_srv, &req, &r);
  int http = r.status;
  if (!r.body || http < 100 || http > 599) {
    fprintf(stderr, "%s %s: no answer body or status %d\n", method, path, http);
    *bad = 1;
  } else if (http >= 300) {
    json_error_t e;
    json_t *j = json_loadb(r.body, r.body_len, 0, &e);
    const char *err = json_string_value(json_object_get(j, "error"));
    const char *msg = json_string_value(json_object_get(j, "message"));
    if (!j && !atomic_load(&g_failed))
      *bad = 1; /* parsing the answer back may itself fail */
    if (j && (http != 500 || !err || strcmp(err, "nomem") || !msg ||
              !strstr(msg, "out of memory"))) {
      fprintf(stderr, "%s %s: %d %s\n", method, path, http, r.body);
      *bad = 1;
    }
    json_decref(j);
  }
  if (loc && http == 201)
    snprintf(loc, 96, "%s", r.location);
  free(r.body);
  return http;
}

static int run_server(char **json) {
  int bad = 0;
  *json = NULL;
  int h1 = route("POST", "/v1/analyze", g_text, NULL, &bad);
  char loc[96] = "", path[200];
  int h2 = route("POST", "/v1/scenes", g_text, loc, &bad);
  int h3 = 0, h4 = 0;
  if (h2 == 201 && loc[0]) {
    snprintf(path, sizeof path, "%s/report", loc);
    h3 = route("GET", path, NULL, NULL, &bad);
    h4 = route("DELETE", loc, NULL, NULL, &bad);
  }
  char sum[64];
  snprintf(sum, sizeof sum, "%d %d %d %d", h1, h2, h3, h4);
  *json = __real_strdup(sum);
  return bad                                                 ? CM_INTERNAL
         : (h1 == 200 && h2 == 201 && h3 == 200 && h4 < 300) ? CM_OK
                                                             : CM_NOMEM;
}

/* The --stdio line reader: one analyze line, its answer line checked. */
static int run_stdio(char **json) {
  *json = NULL;
  size_t len = strlen(g_text);
  char *in = __real_malloc(len + 64);
  char *one = __real_malloc(len + 1);
  size_t k = 0;
  for (size_t i = 0; i < len; i++) /* the scene on one line */
    if (g_text[i] != '\n' && g_text[i] != '\r')
      one[k++] = g_text[i];
  one[k] = 0;
  snprintf(in, len + 64,
           "{\"id\": 1, \"method\": \"POST\", \"path\": \"/v1/analyze\", "
           "\"body\": %s}\n",
           one);
  free(one);
  char out[1 << 16];
  memset(out, 0, sizeof out);
  FILE *fi = fmemopen(in, strlen(in), "r");
  FILE *fo = fmemopen(out, sizeof out - 1, "w");
  if (!fi || !fo)
    abort();
  cm__serve_stdio(&g_srv, fi, fo);
  fclose(fi);
  fclose(fo);
  free(in);
  int st = CM_INTERNAL;
  g_fail_at = 0; /* parse the answer without failures */
  json_error_t e;
  json_t *j = json_loads(out, 0, &e);
  json_int_t status = json_integer_value(json_object_get(j, "status"));
  const char *err =
      json_string_value(json_object_get(json_object_get(j, "body"), "error"));
  if (j && status == 200)
    st = CM_OK;
  else if (j && status == 500 && err && !strcmp(err, "nomem"))
    st = CM_NOMEM;
  else
    fprintf(stderr, "stdio answer: %s\n", out);
  json_decref(j);
  *json = __real_strdup(st == CM_OK ? "200" : "500");
  return st;
}

static void *ss_malloc(size_t n) { return __wrap_malloc(n); }
static void *ss_calloc(size_t n, size_t s) { return __wrap_calloc(n, s); }
static void *ss_realloc(void *p, size_t n) { return __wrap_realloc(p, n); }
static void ss_free(void *p) { free(p); }

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: alloc_fail analyze|server|stdio [SCENE]\n");
    return 2;
  }
  g_scene = argc > 2 ? argv[2] : CM_SOURCE_DIR "/data/bar2d.json";
  if (argc > 3)
    g_method = !strcmp(argv[3], "lanczos")  ? CM_METHOD_LANCZOS
               : !strcmp(argv[3], "arpack") ? CM_METHOD_ARPACK
                                            : CM_METHOD_AUTO;
  json_set_alloc_funcs(ss_malloc, ss_free);
  SuiteSparse_config.malloc_func = ss_malloc;
  SuiteSparse_config.calloc_func = ss_calloc;
  SuiteSparse_config.realloc_func = ss_realloc;
  SuiteSparse_config.free_func = ss_free;
  FILE *f = fopen(g_scene, "rb");
  if (!f) {
    fprintf(stderr, "alloc_fail: cannot open %s\n", g_scene);
    return 2;
  }
  g_text = calloc(1, 1 << 20);
  size_t got = fread(g_text, 1, (1 << 20) - 1, f);
  fclose(f);
  g_text[got] = 0;
  int (*run)(char **) = !strcmp(argv[1], "analyze")    ? run_analyze
                        : !strcmp(argv[1], "server")   ? run_server
                        : !strcmp(argv[1], "stdio")    ? run_stdio
                        : !strcmp(argv[1], "matrices") ? run_matrices
                                                       : NULL;
  if (!run)
    return 2;
  if (run != run_analyze && run != run_matrices) {
    cm__server_config_t cfg;
    cm__server_config_init(&cfg);
    cfg.quiet = 1;
    cfg.max_solve_s = 30;
    if (cm__server_init(&g_srv, &cfg))
      return 2;
  }
  /* the reference: nothing fails */
  char *ref = NULL;
  arm(-1);
  int st0 = run(&ref);
  long total = atomic_load(&g_count);
  g_fail_at = 0;
  if (st0 != CM_OK || !ref) {
    fprintf(stderr, "alloc_fail: the reference run failed (%d)\n", st0);
    return 1;
  }
  const char *tr = getenv("ALLOC_FAIL_TRACE");
  g_trace = tr ? atol(tr) : 0;
  long first = g_trace ? g_trace : 1, nomem = 0, absorbed = 0, bad = 0;
  for (long n = first;; n++) {
    char *json = NULL;
    arm(n);
    int st = run(&json);
    int failed = atomic_load(&g_failed);
    g_fail_at = 0;
    if (!failed) { /* past the last allocation */
      if (st != CM_OK || !json || strcmp(json, ref))
        bad++, fprintf(stderr, "n=%ld: no failure but status %d\n", n, st);
      free(json);
      break;
    }
    if (st == CM_NOMEM)
      nomem++;
    else if (st == CM_OK && json && !strcmp(json, ref))
      absorbed++;
    else
      bad++, fprintf(stderr, "n=%ld: status %d (%s), exit %d%s%s\n", n, st,
                     cm_status_name(st), cm_status_exit(st),
                     g_trace && json ? " answer " : "",
                     g_trace && json ? json : "");
    free(json);
    if (g_trace)
      break;
  }
  printf("alloc_fail %s: %ld allocations counted; %ld runs ended in nomem, "
         "%ld absorbed the failure, %ld bad\n",
         argv[1], total, nomem, absorbed, bad);
  if (cm_status_exit(CM_NOMEM) != 1 ||
      strcmp(cm_status_name(CM_NOMEM), "nomem"))
    bad++;
  free(ref);
  free(g_text);
  if (run != run_analyze && run != run_matrices)
    cm__server_destroy(&g_srv);
  return bad ? 1 : 0;
}
