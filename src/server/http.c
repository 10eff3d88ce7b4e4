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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Per-connection state (MHD's socket context), from the accept to the
 * close; on the list of open connections that the watchdog scans. */
typedef struct cm__sock {
  struct cm__sock *prev, *next;
  int fd;         /* the socket (shut down by the watchdog, never closed) */
  int phase;      /* CM__PH_* */
  double t_phase; /* cm__now() when the phase began */
  size_t body_in; /* body bytes of the current request so far */
} cm__sock_t;

enum {
  CM__PH_HEADERS, /* waiting for a request's headers (or idle keep-alive) */
  CM__PH_BODY,    /* headers in, body arriving */
  CM__PH_WORK     /* body in: handling, answering */
};

/* The HTTP transport's state: the server, the open connections and the
 * body bytes admitted. */
typedef struct {
  cm__server_t *srv;
  pthread_mutex_t lock;  /* guards everything below */
  cm__sock_t *socks;     /* open connections */
  int nsocks;            /* their number */
  size_t inflight_bytes; /* body bytes reserved by requests in flight */
  unsigned long refused_conns, cut_slow;
  int started; /* MHD_start_daemon returned: its log lines are printed */
} cm__http_t;

/* libmicrohttpd's error log, on stderr with the command's prefix. While
 * the daemon starts its lines are dropped: a failed start is said once,
 * by cmodes, with the address asked for (MHD's own line names the port
 * argument, 0 when the address carries it). */
static void cm__mhd_log(void *cls, const char *fmt, va_list ap) {
  const cm__http_t *h = cls;
  if (!__atomic_load_n(&h->started, __ATOMIC_ACQUIRE))
    return;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  size_t n = strlen(line);
  while (n > 0 && line[n - 1] == '\n')
    line[--n] = 0;
  fprintf(stderr, "cmodes serve: libmicrohttpd: %s\n", line);
}

/* Per-request state, from the first callback to the completion notice. */
typedef struct {
  char *buf;        /* body so far (malloc'd) */
  size_t len, cap;  /* bytes in buf, capacity */
  size_t reserved;  /* body bytes reserved against --max-inflight-bytes */
  int too_large;    /* the body passed --max-body-bytes */
  int responded;    /* a response is queued */
  size_t bytes_in;  /* body bytes received, also past the limit */
  double t0;        /* cm__now() at the first callback */
  int status;       /* HTTP status sent */
  size_t bytes_out; /* response body bytes */
  cm__sock_t *sock; /* its connection's state */
  char method[16];  /* for the access log */
  char url[256];    /* escaped: no control characters reach the log */
} cm__conn_t;

static void cm__in_flight(cm__server_t *srv, int delta) {
  pthread_mutex_lock(&srv->lock);
  srv->in_flight += delta;
  pthread_mutex_unlock(&srv->lock);
}

static void cm__sock_phase(cm__http_t *h, cm__sock_t *s, int phase) {
  if (!s)
    return;
  pthread_mutex_lock(&h->lock);
  s->phase = phase;
  s->t_phase = cm__now();
  s->body_in = 0;
  pthread_mutex_unlock(&h->lock);
}

/* Reserves n more body bytes for cc against --max-inflight-bytes; 0 or -1
 * when they would pass it. */
static int cm__reserve(cm__http_t *h, cm__conn_t *cc, size_t n) {
  size_t cap = h->srv->cfg.max_inflight_bytes;
  int ok;
  pthread_mutex_lock(&h->lock);
  ok = h->inflight_bytes + n <= cap;
  if (ok) {
    h->inflight_bytes += n;
    cc->reserved += n;
  }
  pthread_mutex_unlock(&h->lock);
  return ok ? 0 : -1;
}

/* "a\nb" -> "a%0Ab": what is logged cannot forge a line. */
static void cm__log_escape(char *out, size_t size, const char *in) {
  size_t o = 0;
  for (; *in && o + 4 < size; in++) {
    unsigned char c = (unsigned char)*in;
    if (c < 0x20 || c == 0x7f || c == ' ' || c == '%')
      o += (size_t)snprintf(out + o, size - o, "%%%02X", c);
    else
      out[o++] = (char)c;
  }
  out[o] = 0;
}

/* ---- answering --------------------------------------------------- */

static enum MHD_Result cm__query_kv(void *cls, enum MHD_ValueKind kind,
                                    const char *key, const char *value) {
  cm__request_t *req = cls;
  (void)kind;
  if (req->nquery >= CM__MAX_QUERY) {
    req->query_dropped = 1;
    return MHD_NO;
  }
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

static enum MHD_Result cm__respond(cm__http_t *h, struct MHD_Connection *c,
                                   cm__conn_t *cc, const char *url,
                                   const char *method) {
  cm__request_t req;
  cm__response_t resp;
  cm__request_of(c, cc, url, method, &req);
  cc->responded = 1;
  cm__sock_phase(h, cc->sock, CM__PH_WORK);
  cm__route(h->srv, &req, &resp);
  int big = cc->len >= CM__TRIM_BYTES;
  free(cc->buf); /* the body is not needed to send the answer */
  cc->buf = NULL;
  cc->len = cc->cap = 0;
  if (big)
    cm__memory_give_back();
  return cm__send(h->srv, c, cc, &resp, cc->too_large);
}

/* Headers in, body not read: answers at once when the router can (token,
 * a full solve queue, too many query parameters); 0 when it cannot. */
static int cm__respond_early(cm__http_t *h, struct MHD_Connection *c,
                             cm__conn_t *cc, const char *url,
                             const char *method, enum MHD_Result *ret) {
  cm__request_t req;
  cm__response_t resp;
  cm__request_of(c, cc, url, method, &req);
  if (!cm__route_early(h->srv, &req, &resp))
    return 0;
  cm__sock_phase(h, cc->sock, CM__PH_WORK);
  *ret = cm__send(h->srv, c, cc, &resp, 1); /* the unread body: close */
  return 1;
}

/* Answers a request refused for its body before reading it: 413 past
 * --max-body-bytes, 503 past --max-inflight-bytes. */
static enum MHD_Result cm__refuse_body(cm__http_t *h, struct MHD_Connection *c,
                                       cm__conn_t *cc, int status,
                                       unsigned long long declared) {
  cm__server_t *srv = h->srv;
  cm__response_t resp;
  cm_context_t ctx;
  cm_context_init(&ctx);
  memset(&resp, 0, sizeof resp);
  snprintf(resp.content_type, sizeof resp.content_type, "application/json");
  resp.route = "other";
  if (status == CM_LIMIT) {
    CM__ERR(&ctx, CM_LIMIT, "(body)",
            "request body of %llu bytes (Content-Length) larger than the "
            "server's limit of %zu bytes (--max-body-bytes); send a smaller "
            "scene or raise the limit",
            declared, srv->cfg.max_body_bytes);
  } else {
    resp.retry_after_s = 1;
    CM__ERR(&ctx, CM_BUSY, "(body)",
            "the server is receiving other request bodies already "
            "(--max-inflight-bytes %zu); retry after 1 s",
            srv->cfg.max_inflight_bytes);
  }
  json_t *j = json_pack("{s:s, s:s, s:s}", "error", cm_status_name(status),
                        "message", ctx.message, "path", ctx.path);
  resp.status = cm_status_http(status);
  resp.body = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  resp.body_len = resp.body ? strlen(resp.body) : 0;
  if (!resp.body)
    return MHD_NO;
  cm__sock_phase(h, cc->sock, CM__PH_WORK);
  cm__metrics_request(srv->metrics, "other", resp.status, 0, 0);
  return cm__send(srv, c, cc, &resp, 1);
}

/* ---- the access handler: called per chunk of a request ----------- */

/* First call, headers in: nothing of the body is read yet. The token, the
 * query, the declared length and the in-flight cap are checked here, so a
 * refused request costs its headers only. */
static enum MHD_Result cm__begin(cm__http_t *h, struct MHD_Connection *c,
                                 const char *url, const char *method,
                                 void **con_cls) {
  cm__server_t *srv = h->srv;
  cm__conn_t *cc = calloc(1, sizeof *cc);
  if (!cc)
    return MHD_NO;
  cc->t0 = cm__now();
  snprintf(cc->method, sizeof cc->method, "%s", method);
  cm__log_escape(cc->url, sizeof cc->url, url);
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  cc->sock = ci ? ci->socket_context : NULL;
  *con_cls = cc;
  cm__in_flight(srv, +1);
  cm__sock_phase(h, cc->sock, CM__PH_BODY);
  enum MHD_Result ret;
  if (cm__respond_early(h, c, cc, url, method, &ret))
    return ret; /* 401, 413 (query), 503 before reading the body */
  const char *cl =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
  unsigned long long declared = cl ? strtoull(cl, NULL, 10) : 0;
  if (cl && declared > srv->cfg.max_body_bytes) {
    cc->too_large = 1;
    return cm__refuse_body(h, c, cc, CM_LIMIT, declared);
  }
  if (declared && cm__reserve(h, cc, (size_t)declared))
    return cm__refuse_body(h, c, cc, CM_BUSY, declared);
  return MHD_YES;
}

/* A chunk of the body. */
static enum MHD_Result cm__chunk(cm__http_t *h, cm__conn_t *cc,
                                 const char *upload, size_t n) {
  size_t limit = h->srv->cfg.max_body_bytes;
  cc->bytes_in += n;
  if (cc->sock) {
    pthread_mutex_lock(&h->lock);
    cc->sock->body_in = cc->bytes_in;
    pthread_mutex_unlock(&h->lock);
  }
  if (!cc->too_large && cc->len + n > limit) {
    cc->too_large = 1; /* keep reading to answer cleanly, store nothing */
    free(cc->buf);
    cc->buf = NULL;
    cc->len = cc->cap = 0;
  }
  if (cc->too_large)
    return MHD_YES;
  if (cc->len + n > cc->reserved && /* chunked: reserve as it comes */
      cm__reserve(h, cc, cc->len + n - cc->reserved))
    return MHD_NO; /* past the in-flight cap: the connection is closed */
  if (cc->len + n > cc->cap) {
    size_t cap = cc->cap ? cc->cap : 65536;
    while (cap < cc->len + n)
      cap *= 2;
    if (cap > limit)
      cap = limit;
    char *nb = realloc(cc->buf, cap);
    if (!nb)
      return MHD_NO;
    cc->buf = nb;
    cc->cap = cap;
  }
  memcpy(cc->buf + cc->len, upload, n);
  cc->len += n;
  return MHD_YES;
}

static enum MHD_Result cm__handler(void *cls, struct MHD_Connection *c,
                                   const char *url, const char *method,
                                   const char *version, const char *upload,
                                   size_t *upload_size, void **con_cls) {
  cm__http_t *h = cls;
  cm__conn_t *cc = *con_cls;
  (void)version;
  if (!cc)
    return cm__begin(h, c, url, method, con_cls);
  if (cc->responded) { /* answered early (401, 413, 503): drop the rest */
    *upload_size = 0;
    return MHD_YES;
  }
  if (*upload_size) {
    enum MHD_Result ret = cm__chunk(h, cc, upload, *upload_size);
    *upload_size = 0;
    return ret;
  }
  return cm__respond(h, c, cc, url, method);
}

/* Access log and bookkeeping, once the response is sent (or the connection
 * failed). */
static void cm__completed(void *cls, struct MHD_Connection *c, void **con_cls,
                          enum MHD_RequestTerminationCode toe) {
  cm__http_t *h = cls;
  cm__server_t *srv = h->srv;
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
  pthread_mutex_lock(&h->lock);
  h->inflight_bytes -= cc->reserved;
  pthread_mutex_unlock(&h->lock);
  cm__sock_phase(h, cc->sock, CM__PH_HEADERS); /* keep-alive: next request */
  int big = cc->cap >= CM__TRIM_BYTES;
  free(cc->buf);
  free(cc);
  *con_cls = NULL;
  if (big)
    cm__memory_give_back();
  cm__in_flight(srv, -1);
}

/* ---- connections: a limit that refuses at once, deadlines -------- */

/* Before MHD takes an accepted connection: past --max-connections it is
 * closed at once (not left in the listen backlog). */
static enum MHD_Result cm__accept(void *cls, const struct sockaddr *addr,
                                  socklen_t addrlen) {
  cm__http_t *h = cls;
  (void)addr, (void)addrlen;
  pthread_mutex_lock(&h->lock);
  int ok = h->nsocks < h->srv->cfg.max_connections;
  if (!ok)
    h->refused_conns++;
  pthread_mutex_unlock(&h->lock);
  return ok ? MHD_YES : MHD_NO;
}

static void cm__notify_conn(void *cls, struct MHD_Connection *c,
                            void **socket_context,
                            enum MHD_ConnectionNotificationCode code) {
  cm__http_t *h = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    cm__sock_t *s = calloc(1, sizeof *s);
    *socket_context = s;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    pthread_mutex_lock(&h->lock);
    h->nsocks++;
    if (s) {
      s->fd = ci ? ci->connect_fd : -1;
      s->phase = CM__PH_HEADERS;
      s->t_phase = cm__now();
      s->next = h->socks;
      if (h->socks)
        h->socks->prev = s;
      h->socks = s;
    }
    pthread_mutex_unlock(&h->lock);
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    cm__sock_t *s = *socket_context; /* MHD closes the fd after this */
    pthread_mutex_lock(&h->lock);
    h->nsocks--;
    if (s) {
      if (s->prev)
        s->prev->next = s->next;
      else
        h->socks = s->next;
      if (s->next)
        s->next->prev = s->prev;
    }
    pthread_mutex_unlock(&h->lock);
    free(s);
    *socket_context = NULL;
  }
}

/* Shuts down connections past their deadline: headers not in within
 * --header-timeout, or a body arriving slower than --min-rate bytes/s on
 * average (after the first --header-timeout seconds). The socket is only
 * shut down; its thread sees the end and MHD closes it. */
static void cm__watchdog(cm__http_t *h) {
  const cm__server_config_t *cfg = &h->srv->cfg;
  double now = cm__now();
  pthread_mutex_lock(&h->lock);
  for (cm__sock_t *s = h->socks; s; s = s->next) {
    double age = now - s->t_phase;
    int cut = 0;
    if (s->phase == CM__PH_HEADERS)
      cut = age > cfg->header_timeout_s;
    else if (s->phase == CM__PH_BODY && age > cfg->header_timeout_s)
      cut = (double)s->body_in < cfg->min_rate * (age - cfg->header_timeout_s);
    if (cut && s->fd >= 0) {
      shutdown(s->fd, SHUT_RDWR);
      s->fd = -1; /* once */
      h->cut_slow++;
    }
  }
  pthread_mutex_unlock(&h->lock);
}

/* Lets the process hold the connections the limits allow. */
static void cm__raise_fd_limit(int conns) {
  struct rlimit rl;
  rlim_t want = (rlim_t)conns * 2 + 64;
  if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
    return;
  rl.rlim_cur =
      rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
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

  cm__http_t h;
  memset(&h, 0, sizeof h);
  h.srv = srv;
  pthread_mutex_init(&h.lock, NULL);
  const cm__server_config_t *cfg = &srv->cfg;
  cm__raise_fd_limit(cfg->max_connections);
  /* one thread per connection: a request waiting for the solve queue holds
   * only its own thread, and /healthz is answered by another; poll(), not
   * select(), so that descriptors past 1024 work */
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                   MHD_USE_ITC | MHD_USE_ERROR_LOG;
  if (ss.ss_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  /* MHD's own limit stays above ours: at its limit it stops accepting and
   * connections wait in the backlog; ours (cm__accept) closes them */
  unsigned mhd_limit = (unsigned)cfg->max_connections * 2 + 16;
  struct MHD_Daemon *d = MHD_start_daemon(
      flags, 0, cm__accept, &h, cm__handler, &h, MHD_OPTION_SOCK_ADDR,
      (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED, cm__completed, &h,
      MHD_OPTION_NOTIFY_CONNECTION, cm__notify_conn, &h,
      MHD_OPTION_CONNECTION_LIMIT, mhd_limit,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT,
      (unsigned)(cfg->max_connections_per_ip > 0 ? cfg->max_connections_per_ip
                                                 : 0),
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(cfg->idle_timeout_s + 0.999),
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
      MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
      /* no MHD_OPTION_LISTENING_ADDRESS_REUSE: its SO_REUSEPORT let a
       * second server bind a port in use and take half its connections
       * (a session made on one unknown to the other); MHD's default
       * SO_REUSEADDR still lets a restart bind at once */
      MHD_OPTION_EXTERNAL_LOGGER, cm__mhd_log, &h, MHD_OPTION_END);
  __atomic_store_n(&h.started, 1, __ATOMIC_RELEASE); /* MHD's threads */
  if (!d) {
    fprintf(stderr,
            "cmodes serve: cannot listen on %s: %s (address in use, "
            "or not an address of this machine)\n",
            srv->cfg.listen, strerror(errno));
    pthread_mutex_destroy(&h.lock);
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
  double last_expire = cm__now();
  for (;;) { /* 4 times a second: the watchdog's resolution */
    struct timespec ts = {0, 250000000};
    sig = sigtimedwait(&set, NULL, &ts);
    if (sig == SIGTERM || sig == SIGINT)
      break;
    cm__watchdog(&h);
    if (cm__now() - last_expire >= 1) {
      cm__store_expire(&srv->store, cm__now());
      last_expire = cm__now();
    }
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
    cm__watchdog(&h);
  }
  MHD_stop_daemon(d);
  pthread_mutex_destroy(&h.lock);
  fprintf(stderr,
          "cmodes: stopped (%lu connections closed at the limit, %lu cut "
          "for slow headers or body)\n",
          h.refused_conns, h.cut_slow);
  return 0;
}
