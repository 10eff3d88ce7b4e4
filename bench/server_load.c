/* server_load.c: a bounded load run against `cmodes serve` on 127.0.0.1:
 * requests per second and p50/p99 latency of POST /v1/analyze for the
 * reference bar and a ~1e4-contact pile, with 1, 4 and 16 keep-alive
 * connections (one thread each), the error count, and the server's resident
 * memory (/proc/PID/status) after each configuration. The pile comes from
 * cm_generate_pile (3400 spheres). Prints a markdown
 * table. Traffic goes only to 127.0.0.1; every configuration is bounded in
 * requests and seconds. Not a test: nothing here asserts timings.
 *
 *   bench/server_load [--binary PATH] [--requests N] [--seconds S]
 *   bench/server_load --port P [--pid PID]     (a server already running)
 *
 * See bench/README-server.md. */
#define _GNU_SOURCE /* strcasestr */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_time.h"
#include "cmodes.h"

/* ---- scenes ------------------------------------------------------ */

static char *bar_scene(void) {
  return strdup(
      "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2, \"bodies\": "
      "[{\"name\": \"bar\", \"mass\": 2.0, \"inertia\": 0.005, \"position\": "
      "[0, 0]}, {\"name\": \"ground\", \"fixed\": true}], \"contacts\": ["
      "{\"a\": \"bar\", \"b\": \"ground\", \"point\": [-0.1, 0], \"normal\": "
      "[0, 1], \"stiffness\": 1e5}, {\"a\": \"bar\", \"b\": \"ground\", "
      "\"point\": [0.1, 0], \"normal\": [0, 1], \"stiffness\": 1e5}]}");
}

/* A 3D pile from the library's generator (cm_generate_pile): about three
 * contacts per sphere, one component, solved with ARPACK. */
static char *pile_scene(int count, int *ncontacts) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_pile_options_t o;
  cm_pile_options_init(&o);
  o.dim = 3;
  o.count = count;
  o.seed = 2024;
  cm_scene_t *s = NULL;
  if (cm_generate_pile(&ctx, &o, &s)) {
    fprintf(stderr, "server_load: cm_generate_pile: %s\n", ctx.message);
    exit(1);
  }
  char *text = cm_scene_to_json(&ctx, s);
  *ncontacts = s->ncontacts;
  cm_scene_destroy(&s);
  if (!text) {
    fprintf(stderr, "server_load: out of memory\n");
    exit(1);
  }
  return text;
}

/* ---- a keep-alive HTTP/1.1 client -------------------------------- */

static int connect_port(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct timeval tv = {120, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
    close(fd);
    return -1;
  }
  return fd;
}

static int send_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* One request on *fd (reconnecting when needed); returns the status or -1.
 * buf is a growing receive buffer. */
static int exchange(int port, int *fd, const char *method, const char *path,
                    const char *body, size_t blen, char **buf, size_t *cap) {
  for (int attempt = 0; attempt < 2; attempt++) {
    if (*fd < 0 && (*fd = connect_port(port)) < 0)
      return -1;
    char head[512];
    int hn = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Content-Type: application/json\r\n"
                      "Content-Length: %zu\r\n\r\n",
                      method, path, blen);
    if (send_all(*fd, head, (size_t)hn) ||
        (blen && send_all(*fd, body, blen))) {
      close(*fd);
      *fd = -1;
      continue;
    }
    size_t n = 0, need = 0;
    char *hdr_end = NULL;
    for (;;) {
      if (n + 1 >= *cap)
        *buf = realloc(*buf, *cap *= 2);
      ssize_t got = recv(*fd, *buf + n, *cap - n - 1, 0);
      if (got <= 0)
        break;
      n += (size_t)got;
      (*buf)[n] = 0;
      if (!hdr_end && (hdr_end = strstr(*buf, "\r\n\r\n"))) {
        const char *cl = strcasestr(*buf, "\r\nContent-Length:");
        need =
            (size_t)(hdr_end + 4 - *buf) + (cl ? strtoul(cl + 17, 0, 10) : 0);
      }
      if (hdr_end && n >= need)
        break;
    }
    if (!hdr_end || n < need) {
      close(*fd);
      *fd = -1;
      if (n == 0)
        continue; /* the server closed an idle connection: retry once */
      return -1;
    }
    if (strcasestr(*buf, "\r\nConnection: close")) {
      close(*fd);
      *fd = -1;
    }
    return atoi(*buf + 9);
  }
  return -1;
}

/* ---- one configuration ------------------------------------------- */

typedef struct {
  int port;
  const char *body;
  size_t blen;
  int quota;        /* requests this connection sends at most */
  double deadline;  /* stop issuing after this time */
  double *lat;      /* latencies, size quota */
  int done, errors; /* sent, non-200 or failed */
} worker_t;

static void *worker_run(void *arg) {
  worker_t *w = arg;
  int fd = -1;
  size_t cap = 1 << 16;
  char *buf = malloc(cap);
  for (int i = 0; i < w->quota && cm_bench_now() < w->deadline; i++) {
    double t0 = cm_bench_now();
    int st = exchange(w->port, &fd, "POST", "/v1/analyze?modes=1&timings=false",
                      w->body, w->blen, &buf, &cap);
    w->lat[w->done++] = cm_bench_now() - t0;
    if (st != 200)
      w->errors++;
  }
  if (fd >= 0)
    close(fd);
  free(buf);
  return NULL;
}

static double rss_mib(int pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  FILE *f = fopen(path, "r");
  double kb = NAN;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6))
      kb = atof(line + 6);
  if (f)
    fclose(f);
  return kb / 1024;
}

typedef struct {
  int requests, errors;
  double rps, p50_ms, p99_ms;
} result_t;

static result_t run_config(int port, const char *body, int conns, int total,
                           double seconds) {
  worker_t w[16];
  pthread_t th[16];
  double t0 = cm_bench_now();
  for (int i = 0; i < conns; i++) {
    w[i].port = port;
    w[i].body = body;
    w[i].blen = strlen(body);
    w[i].quota = (total + conns - 1) / conns;
    w[i].deadline = t0 + seconds;
    w[i].lat = malloc(sizeof(double) * (size_t)w[i].quota);
    w[i].done = w[i].errors = 0;
    pthread_create(&th[i], NULL, worker_run, &w[i]);
  }
  int n = 0, err = 0;
  for (int i = 0; i < conns; i++) {
    pthread_join(th[i], NULL);
    n += w[i].done;
    err += w[i].errors;
  }
  double dt = cm_bench_now() - t0;
  double *all = malloc(sizeof(double) * (size_t)(n + 1));
  int k = 0;
  for (int i = 0; i < conns; i++) {
    memcpy(all + k, w[i].lat, sizeof(double) * (size_t)w[i].done);
    k += w[i].done;
    free(w[i].lat);
  }
  qsort(all, (size_t)n, sizeof *all, cm_bench_cmp_double);
  result_t r = {n, err, n / dt, n ? 1e3 * all[(n - 1) / 2] : NAN,
                n ? 1e3 * all[(int)ceil(0.99 * n) - 1] : NAN};
  free(all);
  return r;
}

/* ---- the server -------------------------------------------------- */

static int start_server(const char *binary, int *port) {
  char log[] = "/tmp/cmodes_load_XXXXXX";
  int fd = mkstemp(log);
  if (fd < 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* no orphan if the bench dies */
    dup2(fd, 2);
    execl(binary, binary, "serve", "--listen", "127.0.0.1:0", "--quiet",
          "--queue", "64", "--max-connections", "64", (char *)NULL);
    _exit(127);
  }
  close(fd);
  for (double t0 = cm_bench_now(); cm_bench_now() - t0 < 30 && !*port;) {
    FILE *f = fopen(log, "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
      char *p = strstr(line, "listening on 127.0.0.1:");
      if (p)
        *port = atoi(p + 23);
    }
    if (f)
      fclose(f);
    if (waitpid(pid, NULL, WNOHANG) == pid)
      break;
    struct timespec nap = {0, 10000000};
    nanosleep(&nap, NULL);
  }
  unlink(log);
  if (!*port) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
  }
  return pid;
}

int main(int argc, char **argv) {
  const char *binary = NULL;
  int port = 0, pid = 0, total = 0;
  double seconds = 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--binary") && i + 1 < argc)
      binary = argv[++i];
    else if (!strcmp(argv[i], "--port") && i + 1 < argc)
      port = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--pid") && i + 1 < argc)
      pid = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--requests") && i + 1 < argc)
      total = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: server_load [--binary PATH] [--requests N] "
                      "[--seconds S] | --port P [--pid PID]\n");
      return 2;
    }
  }
  int own = 0;
  signal(SIGPIPE, SIG_IGN); /* a closed stdout must not skip the cleanup */
  if (!port) {
    if (!binary)
      binary = access("../cmodes", X_OK) == 0 ? "../cmodes" : "./cmodes";
    pid = start_server(binary, &port);
    if (pid < 0) {
      fprintf(stderr, "server_load: cannot start %s serve\n", binary);
      return 1;
    }
    own = 1;
  }
  int npile = 0;
  char *bar = bar_scene(), *pile = pile_scene(3400, &npile);
  struct {
    const char *name;
    char *body;
    int n;
    int requests;
  } sc[2] = {{"bar (DESIGN.md)", bar, 2, total ? total : 4000},
             {"pile (cm_generate_pile)", pile, npile, total ? total : 160}};
  /* warm up (first-touch allocations, OpenMP threads) before the baseline */
  run_config(port, bar, 1, 50, 10);
  run_config(port, pile, 1, 3, 30);
  double rss0 = pid ? rss_mib(pid) : NAN, rss_max = rss0;
  char load0[128] = "?", load1[128] = "?";
  FILE *la = fopen("/proc/loadavg", "r");
  if (la && fgets(load0, sizeof load0, la))
    load0[strcspn(load0, "\n")] = 0;
  if (la)
    fclose(la);
  printf("| scene | contacts | connections | requests | errors | req/s | "
         "p50 ms | p99 ms | server RSS MiB |\n"
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  int errors = 0;
  for (int s = 0; s < 2; s++) {
    const int conns[3] = {1, 4, 16};
    for (int c = 0; c < 3; c++) {
      result_t r =
          run_config(port, sc[s].body, conns[c], sc[s].requests, seconds);
      double rss = pid ? rss_mib(pid) : NAN;
      rss_max = rss > rss_max ? rss : rss_max;
      errors += r.errors;
      printf("| %s | %d | %d | %d | %d | %.1f | %.2f | %.2f | %.1f |\n",
             sc[s].name, sc[s].n, conns[c], r.requests, r.errors, r.rps,
             r.p50_ms, r.p99_ms, rss);
      fflush(stdout);
    }
  }
  /* memory: repeat a bar and a pile round; RSS must level off, not grow */
  printf("\nmemory rounds (4 connections; 2000 bar + 40 pile requests each):"
         "\n\n| round | errors | server RSS MiB |\n|---:|---:|---:|\n");
  double rss_end = NAN;
  for (int round = 1; round <= 3; round++) {
    result_t a = run_config(port, bar, 4, 2000, seconds);
    result_t b = run_config(port, pile, 4, 40, seconds);
    errors += a.errors + b.errors;
    rss_end = pid ? rss_mib(pid) : NAN;
    printf("| %d | %d | %.1f |\n", round, a.errors + b.errors, rss_end);
    fflush(stdout);
  }
  if ((la = fopen("/proc/loadavg", "r")) && fgets(load1, sizeof load1, la))
    load1[strcspn(load1, "\n")] = 0;
  if (la)
    fclose(la);
  printf("\nerrors: %d; server RSS after warm-up %.1f MiB, peak in the "
         "table %.1f MiB, after the last round %.1f MiB\n",
         errors, rss0, rss_max, rss_end);
  printf("load average (/proc/loadavg) before: %s; after: %s\n", load0, load1);
  if (own) {
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    printf("server exit status after SIGTERM: %d\n",
           WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  free(bar);
  free(pile);
  return errors ? 1 : 0;
}
