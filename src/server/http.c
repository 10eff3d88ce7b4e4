/* http.c: the HTTP transport of `cmodes serve` on libmicrohttpd: one thread
 * per connection (parsing and assembly run in parallel; solves meet in the
 * queue), request bodies bounded while they arrive, an access log line per
 * request, and a graceful stop on SIGTERM/SIGINT (stop accepting, finish
 * what is in flight, exit 0). Routing lives in router.c. */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Per-request state, from the first callback to the completion notice. */
typedef struct {
  char *buf;        /* body so far (malloc'd) */
  size_t len, cap;  /* bytes in buf, capacity */
  int too_large;    /* the body passed --max-body-bytes */
  int responded;    /* a response is queued */
  size_t bytes_in;  /* body bytes received, also past the limit */
  double t0;        /* cm__now() at the first callback */
  int status;       /* HTTP status sent */
  size_t bytes_out; /* response body bytes */
  char method[16];  /* for the access log */
  char url[256];
} cm__conn_t;

static void cm__in_flight(cm__server_t *srv, int delta) {
  pthread_mutex_lock(&srv->lock);
  srv->in_flight += delta;
  pthread_mutex_unlock(&srv->lock);
}

/* ---- answering --------------------------------------------------- */

static enum MHD_Result cm__query_kv(void *cls, enum MHD_ValueKind kind,
                                    const char *key, const char *value) {
  cm__request_t *req = cls;
  (void)kind;
  if (req->nquery >= CM__MAX_QUERY)
    return MHD_NO;
  req->qkey[req->nquery] = key;
  req->qval[req->nquery] = value;
  req->nquery++;
  return MHD_YES;
}

/* The request as far as it has arrived (headers; the body once read). */
static void cm__request_of(struct MHD_Connection *c, const cm__conn_t *cc,
                           const char *url, const char *method,
                           cm__request_t *req) {
  memset(req, 0, sizeof *req);
  req->method = method;
  req->path = url;
  req->check_auth = 1;
  req->content_type =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
  req->authorization =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  req->body = cc->buf ? cc->buf : "";
  req->body_len = cc->len;
  req->body_too_large = cc->too_large;
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, cm__query_kv, req);
}

/* Sends resp (its body is taken); close: end the connection after it. */
static enum MHD_Result cm__send(cm__server_t *srv, struct MHD_Connection *c,
                                cm__conn_t *cc, cm__response_t *resp,
                                int close) {
  cc->responded = 1;
  struct MHD_Response *mr = MHD_create_response_from_buffer(
      resp->body_len, resp->body, MHD_RESPMEM_MUST_FREE);
  if (!mr) {
    free(resp->body);
    return MHD_NO;
  }
  MHD_add_response_header(mr, "Content-Type", resp->content_type);
  if (resp->location[0])
    MHD_add_response_header(mr, "Location", resp->location);
  if (resp->allow[0])
    MHD_add_response_header(mr, "Allow", resp->allow);
  if (resp->www_authenticate)
    MHD_add_response_header(mr, "WWW-Authenticate", "Bearer realm=\"cmodes\"");
  if (resp->retry_after_s > 0) {
    char ra[24];
    snprintf(ra, sizeof ra, "%d", resp->retry_after_s);
    MHD_add_response_header(mr, "Retry-After", ra);
  }
  pthread_mutex_lock(&srv->lock);
  int drain = srv->draining;
  pthread_mutex_unlock(&srv->lock);
  if (drain || close)
    MHD_add_response_header(mr, "Connection", "close");
  cc->status = resp->status;
  cc->bytes_out = resp->body_len;
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)resp->status, mr);
  MHD_destroy_response(mr);
  return ret;
}

static enum MHD_Result cm__respond(cm__server_t *srv, struct MHD_Connection *c,
                                   cm__conn_t *cc, const char *url,
                                   const char *method) {
  cm__request_t req;
  cm__response_t resp;
  cm__request_of(c, cc, url, method, &req);
  cc->responded = 1;
  cm__route(srv, &req, &resp);
  return cm__send(srv, c, cc, &resp, cc->too_large);
}

/* Headers in, body not read: answers at once when the router can (a full
 * solve queue); 0 when it cannot. */
static int cm__respond_early(cm__server_t *srv, struct MHD_Connection *c,
                             cm__conn_t *cc, const char *url,
                             const char *method, enum MHD_Result *ret) {
  cm__request_t req;
  cm__response_t resp;
  cm__request_of(c, cc, url, method, &req);
  if (!cm__route_early(srv, &req, &resp))
    return 0;
  *ret = cm__send(srv, c, cc, &resp, 1); /* the unread body: close */
  return 1;
}

/* ---- the access handler: called per chunk of a request ----------- */

static enum MHD_Result cm__handler(void *cls, struct MHD_Connection *c,
                                   const char *url, const char *method,
                                   const char *version, const char *upload,
                                   size_t *upload_size, void **con_cls) {
  cm__server_t *srv = cls;
  cm__conn_t *cc = *con_cls;
  size_t limit = srv->cfg.max_body_bytes;
  (void)version;
  if (!cc) { /* headers are in: set up, refuse a declared oversized body */
    if (!(cc = calloc(1, sizeof *cc)))
      return MHD_NO;
    cc->t0 = cm__now();
    snprintf(cc->method, sizeof cc->method, "%s", method);
    snprintf(cc->url, sizeof cc->url, "%s", url);
    *con_cls = cc;
    cm__in_flight(srv, +1);
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > limit) {
      cc->too_large = 1;
      return cm__respond(srv, c, cc, url, method);
    }
    enum MHD_Result ret;
    if (cm__respond_early(srv, c, cc, url, method, &ret))
      return ret; /* 503 before reading (and parsing) the body */
    return MHD_YES;
  }
  if (cc->responded) { /* answered early (413, 503): drop the rest */
    *upload_size = 0;
    return MHD_YES;
  }
  if (*upload_size) { /* a chunk of the body */
    cc->bytes_in += *upload_size;
    if (!cc->too_large && cc->len + *upload_size > limit) {
      cc->too_large = 1; /* keep reading to answer cleanly, store nothing */
      free(cc->buf);
      cc->buf = NULL;
      cc->len = cc->cap = 0;
    }
    if (!cc->too_large) {
      if (cc->len + *upload_size > cc->cap) {
        size_t cap = cc->cap ? cc->cap : 65536;
        while (cap < cc->len + *upload_size)
          cap *= 2;
        if (cap > limit)
          cap = limit;
        char *nb = realloc(cc->buf, cap);
        if (!nb)
          return MHD_NO;
        cc->buf = nb;
        cc->cap = cap;
      }
      memcpy(cc->buf + cc->len, upload, *upload_size);
      cc->len += *upload_size;
    }
    *upload_size = 0;
    return MHD_YES;
  }
  return cm__respond(srv, c, cc, url, method);
}

/* Access log and bookkeeping, once the response is sent (or the connection
 * failed). */
static void cm__completed(void *cls, struct MHD_Connection *c, void **con_cls,
                          enum MHD_RequestTerminationCode toe) {
  cm__server_t *srv = cls;
  cm__conn_t *cc = *con_cls;
  (void)c;
  if (!cc)
    return;
  if (!srv->cfg.quiet) {
    struct timespec ts;
    struct tm tm;
    char when[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(stderr, "%s %s %s %d in=%zu out=%zu %.1fms%s\n", when, cc->method,
            cc->url, cc->status, cc->bytes_in, cc->bytes_out,
            1e3 * (cm__now() - cc->t0),
            toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
  }
  free(cc->buf);
  free(cc);
  *con_cls = NULL;
  cm__in_flight(srv, -1);
}

/* ---- listening address ------------------------------------------- */

/* "127.0.0.1:8080", "[::1]:0" or ":8080" (all IPv4 interfaces). */
static int cm__parse_listen(const char *spec, struct sockaddr_storage *ss,
                            char *host, size_t hsize) {
  char buf[160];
  snprintf(buf, sizeof buf, "%s", spec);
  char *colon = strrchr(buf, ':'), *h = buf;
  if (!colon)
    return -1;
  *colon = 0;
  const char *port = colon + 1;
  if (*h == '[') {
    h++;
    char *e = strchr(h, ']');
    if (!e)
      return -1;
    *e = 0;
  }
  if (!*h)
    h = "0.0.0.0";
  /* getaddrinfo takes "99999" and keeps its low 16 bits: check first */
  double pv;
  if (!cm__parse_number(port, &pv) || pv < 0 || pv > 65535 || pv != (int)pv ||
      strspn(port, "0123456789") != strlen(port))
    return -1;
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(h, port, &hints, &res) || !res)
    return -1;
  memcpy(ss, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  snprintf(host, hsize, "%s", h);
  return 0;
}

/* ---- run until a signal ------------------------------------------ */

int cm__serve_http(cm__server_t *srv) {
  struct sockaddr_storage ss;
  char host[160];
  if (cm__parse_listen(srv->cfg.listen, &ss, host, sizeof host)) {
    fprintf(stderr,
            "cmodes serve: --listen %s: expected ADDR:PORT with a "
            "numeric address and a port in 0..65535, e.g. 127.0.0.1:8080 "
            "or [::1]:0\n",
            srv->cfg.listen);
    return cm_status_exit(CM_USAGE);
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL); /* the daemon's threads inherit */
  signal(SIGPIPE, SIG_IGN);

  unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                   MHD_USE_ERROR_LOG;
  if (ss.ss_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  struct MHD_Daemon *d = MHD_start_daemon(
      flags, 0, NULL, NULL, cm__handler, srv, MHD_OPTION_SOCK_ADDR,
      (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED, cm__completed, srv,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)srv->cfg.max_connections,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
      MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
  if (!d) {
    fprintf(stderr,
            "cmodes serve: cannot listen on %s: %s (address in use, "
            "or not an address of this machine)\n",
            srv->cfg.listen, strerror(errno));
    return cm_status_exit(CM_IO);
  }
  const union MHD_DaemonInfo *info =
      MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  fprintf(stderr, "cmodes: listening on %s%s%s:%u\n",
          ss.ss_family == AF_INET6 ? "[" : "", host,
          ss.ss_family == AF_INET6 ? "]" : "", info ? info->port : 0);
  fflush(stderr);

  /* ---- wait for a signal; expire idle sessions once a second ---- */
  int sig;
  for (;;) {
    struct timespec ts = {1, 0};
    sig = sigtimedwait(&set, NULL, &ts);
    if (sig == SIGTERM || sig == SIGINT)
      break;
    cm__store_expire(&srv->store, cm__now());
  }

  /* ---- drain: stop accepting, let in-flight requests finish ---- */
  fprintf(stderr, "cmodes: %s: stopping; finishing requests in flight\n",
          sig == SIGTERM ? "SIGTERM" : "SIGINT");
  pthread_mutex_lock(&srv->lock);
  srv->draining = 1;
  pthread_mutex_unlock(&srv->lock);
  MHD_socket ls = MHD_quiesce_daemon(d);
  if (ls != MHD_INVALID_SOCKET)
    close(ls);
  double t0 = cm__now();
  for (;;) {
    pthread_mutex_lock(&srv->lock);
    int n = srv->in_flight;
    pthread_mutex_unlock(&srv->lock);
    if (n == 0)
      break;
    if (cm__now() - t0 > srv->cfg.drain_s) {
      fprintf(stderr,
              "cmodes: %d requests still running after %g s "
              "(--drain-seconds); stopping anyway\n",
              n, srv->cfg.drain_s);
      break;
    }
    struct timespec nap = {0, 10000000};
    nanosleep(&nap, NULL);
  }
  MHD_stop_daemon(d);
  fprintf(stderr, "cmodes: stopped\n");
  return 0;
}
