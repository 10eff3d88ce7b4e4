/* cmd_serve.c: `cmodes serve`: reads the server options and runs the HTTP
 * transport (http.c) or JSON lines on stdin/stdout (stdio.c). The routes
 * themselves are in router.c; docs/server.md describes them. */
#include "cli.h"
#include "internal.h"
#include "server.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void cm__serve_usage(FILE *out) {
  cm__server_config_t d;
  cm__server_config_init(&d);
  fprintf(
      out,
      "usage: cmodes serve [options]\n"
      "       cmodes serve --stdio [options]\n\n"
      "HTTP/JSON server for contact-mode analyses (docs/server.md):\n"
      "  POST /v1/analyze, POST /v1/scenes, GET|PATCH|DELETE /v1/scenes/{id},\n"
      "  GET /v1/scenes/{id}/report, GET /v1/scenes/{id}/scene, GET /healthz,\n"
      "  GET /metrics.\n\n"
      "options:\n"
      "  --listen ADDR:PORT      address to listen on (default %s; port 0\n"
      "                          picks a free port and prints it)\n"
      "  --token-file FILE       require \"Authorization: Bearer <token>\" on\n"
      "                          every route but /healthz (token: the file's\n"
      "                          first line)\n"
      "  --queue N               solves admitted at once, running + waiting\n"
      "                          (default %d); more get 503 + Retry-After\n"
      "  --max-body-bytes N      request body limit, suffix K/M/G (default "
      "%zu)\n"
      "  --max-contacts N        contacts per scene (default %d)\n"
      "  --max-bodies N          bodies per scene (default %d)\n"
      "  --max-depth N           JSON nesting limit (default %d)\n"
      "  --max-sessions N        stored scenes (default %d); more get 429\n"
      "  --session-idle SECONDS  idle expiry of stored scenes (default %g)\n"
      "  --max-solve-seconds S   cap on each solve's max_seconds budget; a\n"
      "                          solve past it returns a partial report with\n"
      "                          \"status\": \"not_converged\" (default %g, 0 "
      "=\n"
      "                          no cap)\n"
      "  --max-connections N     HTTP connections at once (default %d); more\n"
      "                          are closed at once\n"
      "  --max-connections-per-ip N  connections from one address (default\n"
      "                          %d, 0 = no limit of its own)\n"
      "  --max-inflight-bytes N  request body bytes admitted at once, suffix\n"
      "                          K/M/G (default %zu); more get 503\n"
      "  --max-elements N        JSON values in a body (default %zu); 413\n"
      "  --max-parse-bytes N     estimated memory of the JSON trees being\n"
      "                          built at once, suffix K/M/G (default %zu);\n"
      "                          a body past it alone: 413, else 503\n"
      "  --header-timeout S      a request's headers must arrive within S\n"
      "                          seconds (default %g); also the keep-alive\n"
      "                          idle time\n"
      "  --min-rate N            bytes/s a body must average once the first\n"
      "                          S seconds have passed (default %g)\n"
      "  --idle-timeout S        a connection silent for S seconds is\n"
      "                          closed (default %g)\n"
      "  --max-dense N           largest order of a dense eigen-solve\n"
      "                          (default %d); larger ones get 413\n"
      "  --drain-seconds S       on SIGTERM, longest wait for requests in\n"
      "                          flight (default %g)\n"
      "  --solve-nice N          solves run N nicer than the HTTP threads,\n"
      "                          so /healthz answers while they use every\n"
      "                          core (default %d; 0 = at the same priority)\n"
      "  --warm-starts           a stored scene's solve starts from its last\n"
      "                          report's dominant vector (default: cold\n"
      "                          starts, fewer products with the bound)\n"
      "  --keep-workspace N      bytes of freed analysis buffers (basis, B)\n"
      "                          kept for the next analysis, so its pages\n"
      "                          are not fresh; suffix K/M/G (default %zu,\n"
      "                          0 = none)\n"
      "  --stdio                 JSON lines on stdin/stdout instead of HTTP\n"
      "  --quiet                 no access log on stderr\n"
      "  -h, --help              this text\n",
      d.listen, d.queue, d.max_body_bytes, d.max_contacts, d.max_bodies,
      d.max_depth, d.max_sessions, d.session_idle_s, d.max_solve_s,
      d.max_connections, d.max_connections_per_ip, d.max_inflight_bytes,
      d.max_elements, d.max_parse_bytes, d.header_timeout_s, d.min_rate,
      d.idle_timeout_s, d.max_dense, d.drain_s, d.solve_nice, d.keep_workspace);
}

/* Parses a count with an optional K/M/G (binary) suffix. */
static int cm__count(const char *opt, const char *s, double lo, double hi,
                     double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  double mul = 1;
  if (end != s && *end) {
    char c = (char)toupper((unsigned char)*end);
    mul = c == 'K'   ? 1024.0
          : c == 'M' ? 1048576.0
          : c == 'G' ? 1073741824.0
                     : 0;
    if (mul && end[1] && strcasecmp(end + 1, "iB") && strcasecmp(end + 1, "B"))
      mul = 0;
  }
  v *= mul;
  if (end == s || errno == ERANGE || mul == 0 || !(v >= lo && v <= hi)) {
    fprintf(stderr, "cmodes serve: %s %s: expected a number in [%g, %g]\n", opt,
            s, lo, hi);
    return CM_USAGE;
  }
  *out = v;
  return CM_OK;
}

/* The token is the file's first line without surrounding white space. */
static int cm__read_token(const char *file, char *tok, size_t size) {
  FILE *f = cm__fopen_input(file, "r");
  if (!f) {
    fprintf(stderr, "cmodes serve: --token-file %s: %s\n", file,
            strerror(errno));
    return CM_IO;
  }
  char line[1024] = "";
  if (!fgets(line, sizeof line, f))
    line[0] = 0;
  fclose(f);
  char *s = line, *e;
  while (isspace((unsigned char)*s))
    s++;
  e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1]))
    *--e = 0;
  if (!*s || strlen(s) >= size) {
    fprintf(stderr,
            "cmodes serve: --token-file %s: the first line must hold "
            "a token of 1..%zu characters\n",
            file, size - 1);
    return CM_USAGE;
  }
  snprintf(tok, size, "%s", s);
  return CM_OK;
}

/* Long options of `cmodes serve` (getopt_long values past any char). */
enum {
  O_LISTEN = 256,
  O_TOKEN,
  O_QUEUE,
  O_BODY,
  O_CONTACTS,
  O_BODIES,
  O_DEPTH,
  O_SESSIONS,
  O_IDLE,
  O_SOLVE,
  O_CONN,
  O_CONN_IP,
  O_INFLIGHT,
  O_ELEMENTS,
  O_PARSE,
  O_HEADER_T,
  O_MIN_RATE,
  O_IDLE_T,
  O_DENSE,
  O_DRAIN,
  O_SOLVE_NICE,
  O_KEEP_WS,
  O_WARM,
  O_STDIO,
  O_QUIET
};

/* The options of `cmodes serve`, in --help order. */
static const struct option cm__serve_opts[] = {
    {"listen", required_argument, 0, O_LISTEN},
    {"token-file", required_argument, 0, O_TOKEN},
    {"queue", required_argument, 0, O_QUEUE},
    {"max-body-bytes", required_argument, 0, O_BODY},
    {"max-contacts", required_argument, 0, O_CONTACTS},
    {"max-bodies", required_argument, 0, O_BODIES},
    {"max-depth", required_argument, 0, O_DEPTH},
    {"max-sessions", required_argument, 0, O_SESSIONS},
    {"session-idle", required_argument, 0, O_IDLE},
    {"max-solve-seconds", required_argument, 0, O_SOLVE},
    {"max-connections", required_argument, 0, O_CONN},
    {"max-connections-per-ip", required_argument, 0, O_CONN_IP},
    {"max-inflight-bytes", required_argument, 0, O_INFLIGHT},
    {"max-elements", required_argument, 0, O_ELEMENTS},
    {"max-parse-bytes", required_argument, 0, O_PARSE},
    {"header-timeout", required_argument, 0, O_HEADER_T},
    {"min-rate", required_argument, 0, O_MIN_RATE},
    {"idle-timeout", required_argument, 0, O_IDLE_T},
    {"max-dense", required_argument, 0, O_DENSE},
    {"drain-seconds", required_argument, 0, O_DRAIN},
    {"solve-nice", required_argument, 0, O_SOLVE_NICE},
    {"keep-workspace", required_argument, 0, O_KEEP_WS},
    {"warm-starts", no_argument, 0, O_WARM},
    {"stdio", no_argument, 0, O_STDIO},
    {"quiet", no_argument, 0, O_QUIET},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

/* Sets the numeric limit option c (named name) from arg; CM_USAGE for a bad
 * value or an unknown option. */
static int cm__serve_limit(cm__server_config_t *cfg, int c, const char *name,
                           const char *arg) {
  int st;
  double v;
  switch (c) {
  case O_QUEUE:
    if (!(st = cm__count(name, arg, 1, 1e6, &v)))
      cfg->queue = (int)v;
    break;
  case O_BODY:
    if (!(st = cm__count(name, arg, 64, 1e12, &v)))
      cfg->max_body_bytes = (size_t)v;
    break;
  case O_CONTACTS:
    if (!(st = cm__count(name, arg, 1, 1e9, &v)))
      cfg->max_contacts = (int)v;
    break;
  case O_BODIES:
    if (!(st = cm__count(name, arg, 1, 1e9, &v)))
      cfg->max_bodies = (int)v;
    break;
  case O_DEPTH:
    if (!(st = cm__count(name, arg, 2, 1000, &v)))
      cfg->max_depth = (int)v;
    break;
  case O_SESSIONS:
    if (!(st = cm__count(name, arg, 1, 1e6, &v)))
      cfg->max_sessions = (int)v;
    break;
  case O_IDLE:
    if (!(st = cm__count(name, arg, 0.001, 1e9, &v)))
      cfg->session_idle_s = v;
    break;
  case O_SOLVE:
    if (!(st = cm__count(name, arg, 0, 1e9, &v)))
      cfg->max_solve_s = v;
    break;
  case O_CONN:
    if (!(st = cm__count(name, arg, 1, 1e5, &v)))
      cfg->max_connections = (int)v;
    break;
  case O_CONN_IP:
    if (!(st = cm__count(name, arg, 0, 1e5, &v)))
      cfg->max_connections_per_ip = (int)v;
    break;
  case O_INFLIGHT:
    if (!(st = cm__count(name, arg, 64, 1e13, &v)))
      cfg->max_inflight_bytes = (size_t)v;
    break;
  case O_ELEMENTS:
    if (!(st = cm__count(name, arg, 16, 1e12, &v)))
      cfg->max_elements = (size_t)v;
    break;
  case O_PARSE:
    if (!(st = cm__count(name, arg, 4096, 1e13, &v)))
      cfg->max_parse_bytes = (size_t)v;
    break;
  case O_HEADER_T:
    if (!(st = cm__count(name, arg, 0.1, 86400, &v)))
      cfg->header_timeout_s = v;
    break;
  case O_MIN_RATE:
    if (!(st = cm__count(name, arg, 0, 1e12, &v)))
      cfg->min_rate = v;
    break;
  case O_IDLE_T:
    if (!(st = cm__count(name, arg, 1, 86400, &v)))
      cfg->idle_timeout_s = v;
    break;
  case O_DENSE:
    if (!(st = cm__count(name, arg, 8, 1e5, &v)))
      cfg->max_dense = (int)v;
    break;
  case O_DRAIN:
    if (!(st = cm__count(name, arg, 0, 1e9, &v)))
      cfg->drain_s = v;
    break;
  case O_SOLVE_NICE:
    if (!(st = cm__count(name, arg, 0, 19, &v)))
      cfg->solve_nice = (int)v;
    break;
  case O_KEEP_WS:
    if (!(st = cm__count(name, arg, 0, 1e13, &v)))
      cfg->keep_workspace = (size_t)v;
    break;
  default:
    fprintf(stderr, "cmodes serve: see 'cmodes serve --help'\n");
    st = CM_USAGE;
  }
  return st;
}

int cm__cmd_serve(int argc, char **argv) {
  cm__server_config_t cfg;
  cm__server_config_init(&cfg);
  int c, st = CM_OK;
  optind = 1;
  int li = -1;
  while (!st && (c = getopt_long(argc, argv, "h", cm__serve_opts, &li)) != -1) {
    char name[40];
    snprintf(name, sizeof name, "--%s",
             li >= 0 ? cm__serve_opts[li].name : "?");
    li = -1;
    switch (c) {
    case O_LISTEN:
      if (strlen(optarg) >= sizeof cfg.listen) {
        fprintf(stderr, "cmodes serve: --listen: address too long\n");
        st = CM_USAGE;
      } else {
        snprintf(cfg.listen, sizeof cfg.listen, "%s", optarg);
      }
      break;
    case O_TOKEN:
      st = cm__read_token(optarg, cfg.token, sizeof cfg.token);
      break;
    case O_STDIO:
      cfg.stdio = 1;
      break;
    case O_QUIET:
      cfg.quiet = 1;
      break;
    case O_WARM:
      cfg.warm_starts = 1;
      break;
    case 'h':
      cm__serve_usage(stdout);
      return 0;
    default:
      st = cm__serve_limit(&cfg, c, name, optarg);
    }
  }
  if (!st && optind < argc) {
    fprintf(stderr, "cmodes serve: unexpected argument '%s'\n", argv[optind]);
    st = CM_USAGE;
  }
  if (st)
    return cm_status_exit(st);
  if (cfg.max_inflight_bytes < cfg.max_body_bytes) /* room for one body */
    cfg.max_inflight_bytes = cfg.max_body_bytes;
  cm_workspace_keep(cfg.keep_workspace);
  cm__server_t srv;
  if (cm__server_init(&srv, &cfg)) {
    fprintf(stderr, "cmodes serve: out of memory\n");
    return cm_status_exit(CM_NOMEM);
  }
  int code =
      cfg.stdio ? cm__serve_stdio(&srv, stdin, stdout) : cm__serve_http(&srv);
  cm__server_destroy(&srv);
  cm_workspace_keep(0);
  return code;
}
