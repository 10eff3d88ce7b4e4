/* stdio.c: `cmodes serve --stdio`: the HTTP routes as JSON lines, for
 * simulators that run cmodes as a subprocess. One request per input line,
 *   {"id": 7, "method": "POST", "path": "/v1/analyze?modes=3", "body": {...}}
 * one response per output line, in order, flushed:
 *   {"id": 7, "status": 200, "headers": {...}, "body": {...}}
 * The body of a request may be a JSON value or a string holding JSON text;
 * the body of a response is the JSON the HTTP route would send (a string for
 * /metrics). No authentication: the pipe is private to the parent process.
 * Requests are handled one at a time. Not for HTTP (http.c). */
#include "io/json_pull.h"
#include "jcheck.h" /* json_dumps that never drops a key */
#include "server.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* SIGTERM/SIGINT: finish the request being handled, then exit 0. */
static volatile sig_atomic_t cm__stdio_stop;

static void cm__stdio_signal(int sig) {
  (void)sig;
  cm__stdio_stop = 1;
}

/* Writes {"id":..., "status":..., "headers":{...}, "body":<raw>} as one
 * line; the body text is spliced in unchanged so numbers keep their bits. */
static void cm__emit(FILE *out, json_t *id, const cm__response_t *r) {
  json_t *h = json_object();
  if (r->location[0])
    json_object_set_new(h, "Location", json_string(r->location));
  if (r->allow[0])
    json_object_set_new(h, "Allow", json_string(r->allow));
  if (r->retry_after_s > 0)
    json_object_set_new(h, "Retry-After", json_integer(r->retry_after_s));
  json_object_set_new(h, "Content-Type", json_string(r->content_type));
  char *hs = json_dumps(h, JSON_COMPACT);
  char *ids = json_dumps(id ? id : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
  fprintf(out, "{\"id\":%s,\"status\":%d,\"headers\":%s,\"body\":",
          ids ? ids : "null", r->status, hs ? hs : "{}");
  if (strncmp(r->content_type, "application/json", 16)) {
    json_t *s = json_stringn(r->body ? r->body : "", r->body_len);
    char *t = json_dumps(s, JSON_ENCODE_ANY);
    fputs(t ? t : "null", out);
    free(t);
    json_decref(s);
  } else if (r->body_len) {
    /* the JSON text has no raw newlines only if compact; strip any */
    for (size_t i = 0; i < r->body_len; i++)
      fputc(r->body[i] == '\n' ? ' ' : r->body[i], out);
  } else {
    fputs("null", out);
  }
  fputs("}\n", out);
  fflush(out);
  free(hs);
  free(ids);
  json_decref(h);
}

/* A response for a line that is not a request. */
static void cm__emit_bad(FILE *out, json_t *id, int status, const char *msg,
                         const char *path) {
  cm__response_t r;
  memset(&r, 0, sizeof r);
  snprintf(r.content_type, sizeof r.content_type, "application/json");
  r.status = cm_status_http(status);
  json_t *j = json_pack("{s:s, s:s, s:s}", "error", cm_status_name(status),
                        "message", msg, "path", path);
  r.body = json_dumps(j, JSON_COMPACT);
  r.body_len = r.body ? strlen(r.body) : 0;
  json_decref(j);
  cm__emit(out, id, &r);
  free(r.body);
}

/* 1 when jansson's failed parse of text ran out of memory: jansson 2.14
 * reports that as a syntax error or with no text, so the text is checked
 * again with the pull parser (a text it accepts, or cannot check for lack
 * of memory, failed for memory). */
static int cm__parse_oom(const json_error_t *err, const char *text,
                         size_t len) {
  return json_error_code(err) == json_error_out_of_memory ||
         cm__json_check(text, len) != 1;
}

/* ---- one line ---------------------------------------------------- */

/* Answers one request line, the lineno-th line of the input (1-based: the
 * parse errors name it). */
static void cm__line(cm__server_t *srv, const char *line, size_t len,
                     long lineno, FILE *out) {
  json_error_t err;
  /* the line is parsed whole (body included): its values and nesting are
   * counted on the raw bytes first, so no tree past the limits is built;
   * the envelope adds a level and a few values */
  cm__json_scan_t scan;
  if (cm__json_prescan(line, len, srv->cfg.max_depth + 1,
                       srv->cfg.max_elements + 16, &scan)) {
    char msg[200];
    if (scan.depth > srv->cfg.max_depth + 1)
      snprintf(msg, sizeof msg,
               "request line nested deeper than the server's limit of %d "
               "levels (--max-depth)",
               srv->cfg.max_depth);
    else
      snprintf(msg, sizeof msg,
               "request line with more values than the server's limit of "
               "%zu (--max-elements)",
               srv->cfg.max_elements);
    cm__emit_bad(out, NULL, CM_LIMIT, msg, "(line)");
    return;
  }
  if (cm__json_tree_bytes(&scan) > srv->cfg.max_parse_bytes) {
    char msg[200];
    snprintf(msg, sizeof msg,
             "request line whose parse would take about %zu MiB, past the "
             "server's limit of %zu MiB (--max-parse-bytes)",
             cm__json_tree_bytes(&scan) >> 20, srv->cfg.max_parse_bytes >> 20);
    cm__emit_bad(out, NULL, CM_LIMIT, msg, "(line)");
    return;
  }
  json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
  if (!root || !json_is_object(root)) {
    char msg[300];
    int oom = !root && cm__parse_oom(&err, line, len);
    if (root || oom)
      snprintf(msg, sizeof msg, "request line %ld: %s", lineno,
               root ? "expected an object {\"id\", \"method\", \"path\", "
                      "\"body\"}"
                    : "out of memory reading the line");
    else
      snprintf(msg, sizeof msg, "request line %ld, column %d: %s", lineno,
               err.column, err.text);
    cm__emit_bad(out, NULL, oom ? CM_NOMEM : CM_PARSE, msg, "(line)");
    json_decref(root);
    return;
  }
  json_t *id = json_object_get(root, "id");
  json_t *jm = json_object_get(root, "method"),
         *jp = json_object_get(root, "path");
  json_t *jb = json_object_get(root, "body");
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    if (strcmp(key, "id") && strcmp(key, "method") && strcmp(key, "path") &&
        strcmp(key, "body")) {
      char msg[200];
      snprintf(msg, sizeof msg,
               "%.64s: unknown key (allowed: id, method, "
               "path, body)",
               key);
      cm__emit_bad(out, id, CM_USAGE, msg, key);
      json_decref(root);
      return;
    }
  }
  if (!json_is_string(jm) || !json_is_string(jp)) {
    cm__emit_bad(out, id, CM_USAGE,
                 "a request needs \"method\" and \"path\" "
                 "strings",
                 json_is_string(jm) ? "path" : "method");
    json_decref(root);
    return;
  }
  char *path = cm__strdup(json_string_value(jp));
  char *body = NULL;
  size_t blen = 0;
  if (json_is_string(jb)) {
    blen = json_string_length(jb);
    body = malloc(blen + 1);
    if (body)
      memcpy(body, json_string_value(jb), blen);
  }
  cm__request_t req;
  memset(&req, 0, sizeof req);
  req.method = json_string_value(jm);
  req.path = path;
  req.body = body ? body : "";
  req.body_len = blen;
  if (jb && !json_is_null(jb) && !json_is_string(jb)) {
    req.body_json = jb; /* parsed with the line: not dumped and re-parsed */
    req.body_len = len;
  }
  char *q = path ? strchr(path, '?') : NULL;
  int st = CM_OK;
  if (q) {
    *q++ = 0;
    st = cm__query_parse(q, &req);
  }
  if (!path || (json_is_string(jb) && !body)) {
    cm__emit_bad(out, id, CM_NOMEM, "out of memory", "(line)");
  } else if (st) {
    cm__emit_bad(out, id, CM_LIMIT, "too many query parameters", "path");
  } else {
    cm__response_t r;
    pthread_mutex_lock(&srv->lock);
    srv->in_flight++;
    pthread_mutex_unlock(&srv->lock);
    cm__route(srv, &req, &r);
    pthread_mutex_lock(&srv->lock);
    srv->in_flight--;
    pthread_mutex_unlock(&srv->lock);
    cm__emit(out, id, &r);
    free(r.body);
  }
  free(body);
  free(path);
  json_decref(root);
}

/* Reads one line into *line (capacity *cap, grown up to limit + 1 bytes);
 * a longer line is read to its end but not stored: *len is then its full
 * length, past limit. Returns 0, or -1 at the end of input (or error) with
 * nothing read. */
static int cm__read_line(FILE *in, char **line, size_t *cap, size_t limit,
                         size_t *len, int *oom) {
  size_t n = 0;
  int c;
  *oom = 0; /* the line did not fit in memory: read to its end, unstored */
  while ((c = getc_unlocked(in)) != EOF && c != '\n') {
    if (n < limit && !*oom) {
      if (n + 1 >= *cap) {
        size_t nc = *cap ? 2 * *cap : 4096;
        if (nc > limit + 1)
          nc = limit + 1;
        char *nb = realloc(*line, nc);
        if (nb) {
          *line = nb;
          *cap = nc;
        } else {
          *oom = 1;
        }
      }
      if (!*oom)
        (*line)[n] = (char)c;
    }
    n++;
  }
  *len = n;
  return c == EOF && n == 0 ? -1 : 0;
}

int cm__serve_stdio(cm__server_t *srv, FILE *in, FILE *out) {
  char *line = NULL;
  size_t cap = 0, n;
  int oom;
  long lineno = 0;
  /* a line holds a body plus its envelope; a longer one is not stored */
  size_t limit = srv->cfg.max_body_bytes + 65536;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = cm__stdio_signal; /* no SA_RESTART: reads return */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  while (!cm__stdio_stop && !cm__read_line(in, &line, &cap, limit, &n, &oom)) {
    lineno++;
    if (oom) {
      cm__emit_bad(out, NULL, CM_NOMEM, "out of memory reading the line",
                   "(line)");
      continue;
    }
    if (n > limit) {
      char msg[200];
      snprintf(msg, sizeof msg,
               "request line of %zu bytes: larger than the "
               "server's limit (--max-body-bytes %zu)",
               n, srv->cfg.max_body_bytes);
      cm__emit_bad(out, NULL, CM_LIMIT, msg, "(line)");
      continue;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
      n--;
    if (n == 0)
      continue;
    cm__line(srv, line, n, lineno, out);
    cm__store_expire(&srv->store, cm__now());
  }
  int lost = !cm__stdio_stop && ferror(in) && errno != EINTR;
  free(line);
  if (ferror(out) || lost) {
    fprintf(stderr, "cmodes serve --stdio: %s\n",
            ferror(out) ? "cannot write the responses (stdout closed?)"
                        : "error reading the requests");
    return cm_status_exit(CM_IO);
  }
  return 0;
}
