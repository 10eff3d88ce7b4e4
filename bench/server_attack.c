/* server_attack.c: replays the attacks of issue #18 against `cmodes serve`
 * on 127.0.0.1 and prints a markdown table: the answer each attack got,
 * the server's peak resident set during it (VmHWM, reset through
 * /proc/PID/clear_refs before each attack), its resident set afterwards,
 * and /healthz latency while it runs. Every attack is bounded in count and
 * time and stops by itself; traffic goes only to 127.0.0.1. Not a test:
 * it asserts nothing.
 *
 *   bench/server_attack [--binary PATH] [--label NAME] [--skip-meta5]
 *                       [--only-slow] [--slow-seconds S] [--no-solve]
 *                       [--serve-args "ARGS"]
 *
 * The last attack (1000 idle + 32 slow clients) keeps a solve running the
 * whole time (one after another, --no-solve: none) and probes /healthz
 * every 100 ms for S seconds (default 15); the table gives the median,
 * p90, p99 and the largest probe latency. --serve-args: more options of
 * `cmodes serve` for that attack's server (e.g. "--solve-nice 0").
 * See bench/README-server.md. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_time.h"
#include "cmodes.h"

static void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- the server --------------------------------------------------- */

static pid_t g_pid;
static int g_port;
static char g_log[64];

static int server_start(const char *bin, const char *args) {
  char buf[512], *argv[32];
  int argc = 0;
  argv[argc++] = (char *)bin;
  argv[argc++] = "serve";
  argv[argc++] = "--listen";
  argv[argc++] = "127.0.0.1:0";
  argv[argc++] = "--quiet";
  snprintf(buf, sizeof buf, "%s", args);
  for (char *t = strtok(buf, " "); t && argc < 30; t = strtok(NULL, " "))
    argv[argc++] = t;
  argv[argc] = NULL;
  snprintf(g_log, sizeof g_log, "/tmp/server_attack_XXXXXX");
  int fd = mkstemp(g_log);
  g_pid = fork();
  if (g_pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(fd, 2);
    execv(bin, argv);
    _exit(127);
  }
  close(fd);
  for (double t0 = cm_bench_now(); cm_bench_now() - t0 < 20; nap_ms(20)) {
    FILE *f = fopen(g_log, "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
      char *p = strstr(line, "listening on 127.0.0.1:");
      if (p)
        g_port = atoi(p + 23);
    }
    if (f)
      fclose(f);
    if (g_port > 0)
      return 0;
  }
  return -1;
}

static void server_stop(void) {
  kill(g_pid, SIGTERM);
  for (int i = 0; i < 500 && waitpid(g_pid, NULL, WNOHANG) == 0; i++)
    nap_ms(20);
  kill(g_pid, SIGKILL);
  waitpid(g_pid, NULL, 0);
  unlink(g_log);
  g_port = 0;
}

static long proc_kb(const char *field) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)g_pid);
  FILE *f = fopen(path, "r");
  long kb = -1;
  size_t n = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, field, n) && line[n] == ':')
      kb = atol(line + n + 1);
  if (f)
    fclose(f);
  return kb;
}

static void peak_reset(void) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)g_pid);
  int fd = open(path, O_WRONLY);
  if (fd >= 0) {
    if (write(fd, "5", 1) != 1)
      perror("clear_refs");
    close(fd);
  }
}

/* ---- sockets ------------------------------------------------------ */

static int conn(double tmo_s) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct timeval tv = {(time_t)tmo_s,
                       (suseconds_t)(1e6 * (tmo_s - (time_t)tmo_s))};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)g_port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
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
    p += w, n -= (size_t)w;
  }
  return 0;
}

/* Sends head then body (may be NULL: `zeros` spaces), reads the status. */
static int exchange(const char *head, const char *body, size_t blen,
                    double tmo_s, size_t *sent) {
  int fd = conn(tmo_s);
  if (fd < 0)
    return -1;
  send_all(fd, head, strlen(head));
  size_t s = 0;
  static char chunk[1 << 16];
  while (s < blen) {
    size_t n = blen - s < sizeof chunk ? blen - s : sizeof chunk;
    const char *p = body ? body + s : (memset(chunk, ' ', n), chunk);
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0)
      break;
    s += (size_t)w;
  }
  if (sent)
    *sent = s;
  char got[256];
  ssize_t k = recv(fd, got, sizeof got - 1, 0);
  close(fd);
  if (k < 12)
    return k < 0 ? -1 : 0; /* -1 timeout, 0 closed */
  got[k] = 0;
  return atoi(got + 9);
}

/* /healthz probes every 100 ms while *running: answered count, latency. */
typedef struct {
  volatile int running;
  int probes, answered;
  double lat[4096];
} probe_t;

static void *probe_run(void *arg) {
  probe_t *p = arg;
  while (p->running && p->probes < 4096) {
    double t0 = cm_bench_now();
    int st = exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n"
                      "Connection: close\r\n\r\n",
                      NULL, 0, 2.0, NULL);
    if (st == 200)
      p->lat[p->answered++] = cm_bench_now() - t0;
    if (getenv("ATTACK_TRACE"))
      fprintf(stderr, "probe %d at %.2f s: %d %.1f ms\n", p->probes, t0, st,
              1e3 * (cm_bench_now() - t0));
    p->probes++;
    nap_ms(100);
  }
  return NULL;
}

/* ---- attacks ------------------------------------------------------ */

typedef struct {
  const char *what;
  char answer[160];
  long peak_kb, after_kb;
  double secs;
  probe_t probe;
} row_t;

static const char *g_bin, *g_label = "";

/* The q-quantile of the n sorted values x (nearest rank), 0 when none. */
static double quantile(const double *x, int n, double q) {
  if (n <= 0)
    return 0;
  int k = (int)(q * n + 0.999999) - 1;
  return x[k < 0 ? 0 : k >= n ? n - 1 : k];
}

static void row_print(row_t *r) {
  int n = r->probe.answered;
  qsort(r->probe.lat, (size_t)n, sizeof(double), cm_bench_cmp_double);
  printf("| %s | %s | %s | %.0f | %.0f | %d/%d | %.1f | %.1f | %.1f | %.1f | "
         "%.1f |\n",
         g_label, r->what, r->answer, r->peak_kb / 1024.0, r->after_kb / 1024.0,
         r->probe.answered, r->probe.probes,
         1e3 * quantile(r->probe.lat, n, 0.5),
         1e3 * quantile(r->probe.lat, n, 0.9),
         1e3 * quantile(r->probe.lat, n, 0.99),
         1e3 * quantile(r->probe.lat, n, 1.0), r->secs);
  fflush(stdout);
}

typedef struct {
  const char *head;
  const char *body;
  size_t blen;
  int status;
  size_t sent;
} job_t;

static void *job_run(void *arg) {
  job_t *j = arg;
  j->status = exchange(j->head, j->body, j->blen, 120, &j->sent);
  return NULL;
}

/* Solves one after another while *running: how many, and how many 200. */
typedef struct {
  job_t job;
  volatile int running;
  int solves, ok;
} solves_t;

static void *solves_run(void *arg) {
  solves_t *s = arg;
  while (s->running) {
    double t0 = cm_bench_now();
    int st = exchange(s->job.head, s->job.body, s->job.blen, 120, NULL);
    if (getenv("ATTACK_TRACE"))
      fprintf(stderr, "solve %d at %.2f s: %d, %.1f ms\n", s->solves, t0, st,
              1e3 * (cm_bench_now() - t0));
    s->solves++;
    s->ok += st == 200;
  }
  return NULL;
}

/* n copies of one request at once; the answer column lists the statuses */
static void attack_parallel(row_t *r, int n, const char *head, const char *body,
                            size_t blen) {
  job_t jobs[16];
  pthread_t th[16], pt;
  peak_reset();
  r->probe.running = 1;
  pthread_create(&pt, NULL, probe_run, &r->probe);
  double t0 = cm_bench_now();
  for (int i = 0; i < n; i++) {
    jobs[i] = (job_t){head, body, blen, 0, 0};
    pthread_create(&th[i], NULL, job_run, &jobs[i]);
  }
  size_t o = 0;
  for (int i = 0; i < n; i++) {
    pthread_join(th[i], NULL);
    o += (size_t)snprintf(r->answer + o, sizeof r->answer - o, "%s%d",
                          i ? " " : "", jobs[i].status);
  }
  r->secs = cm_bench_now() - t0;
  r->probe.running = 0;
  pthread_join(pt, NULL);
  r->peak_kb = proc_kb("VmHWM");
  nap_ms(300);
  r->after_kb = proc_kb("VmRSS");
}

/* `mib` MiB of {} under meta: the scene is a one-contact block */
static char *meta_body(size_t mib, size_t *len) {
  size_t target = mib << 20;
  char *b = malloc(target + 1);
  const char *pre = "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2,"
                    " \"bodies\": [{\"mass\": 1, \"inertia\": 1, \"position\":"
                    " [0, 0]}], \"contacts\": [{\"a\": 0, \"point\": [0, 0], "
                    "\"normal\": [0, 1], \"stiffness\": 1}], \"meta\": [";
  size_t n = strlen(pre);
  memcpy(b, pre, n);
  while (n + 5 < target) {
    memcpy(b + n, "{},", 3);
    n += 3;
  }
  memcpy(b + n - 1, "{}]}", 4); /* replaces the last comma */
  n += 3;
  *len = n;
  return b;
}

/* A 3D pile of `count` spheres as JSON (cm_generate_pile). */
static char *pile_body(int count, const char *method_opts, size_t *len) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_pile_options_t o;
  cm_pile_options_init(&o);
  o.dim = 3;
  o.count = count;
  o.seed = 1;
  cm_scene_t *sc = NULL;
  if (cm_generate_pile(&ctx, &o, &sc))
    return NULL;
  char *scene = cm_scene_to_json(&ctx, sc);
  cm_scene_destroy(&sc);
  char *b = NULL;
  if (asprintf(&b, "{\"scene\": %s, \"options\": %s}", scene, method_opts) < 0)
    b = NULL;
  free(scene);
  *len = b ? strlen(b) : 0;
  return b;
}

static void slow_idle(row_t *r, int nidle, int nslow, double secs,
                      const char *solve_body, size_t solve_len) {
  int *fds = calloc((size_t)(nidle + nslow), sizeof(int));
  peak_reset();
  double t0 = cm_bench_now();
  pthread_t solver;
  solves_t sj = {{0}, 1, 0, 0};
  char head[256];
  if (solve_body) { /* solves back to back until the probes end */
    snprintf(head, sizeof head,
             "POST /v1/analyze HTTP/1.1\r\nHost: x\r\nContent-Type: "
             "application/json\r\nContent-Length: %zu\r\n\r\n",
             solve_len);
    sj.job = (job_t){head, solve_body, solve_len, 0, 0};
    pthread_create(&solver, NULL, solves_run, &sj);
  }
  int opened = 0;
  for (int i = 0; i < nidle + nslow; i++) {
    fds[i] = conn(1);
    opened += fds[i] >= 0;
    if (i >= nidle && fds[i] >= 0)
      send_all(fds[i], "POST /v1/analyze HTTP/1.1\r\n", 27);
  }
  nap_ms(200);
  r->probe.running = 1;
  pthread_t pt;
  pthread_create(&pt, NULL, probe_run, &r->probe);
  while (cm_bench_now() - t0 < secs) { /* the slow ones: a byte every 0.5 s */
    for (int i = nidle; i < nidle + nslow; i++)
      if (fds[i] >= 0)
        send(fds[i], "X", 1, MSG_NOSIGNAL);
    nap_ms(500);
  }
  r->probe.running = 0;
  sj.running = 0;
  pthread_join(pt, NULL);
  int still = 0;
  for (int i = 0; i < nidle + nslow; i++) {
    char b[64];
    if (fds[i] >= 0) {
      ssize_t k = recv(fds[i], b, sizeof b, MSG_DONTWAIT);
      still += k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      close(fds[i]);
    }
  }
  if (solve_body)
    pthread_join(solver, NULL);
  r->secs = cm_bench_now() - t0;
  r->peak_kb = proc_kb("VmHWM");
  r->after_kb = proc_kb("VmRSS");
  char solves[64] = "; no solve";
  if (solve_body)
    snprintf(solves, sizeof solves, "; %d solves back to back, %d answered 200",
             sj.solves, sj.ok);
  snprintf(r->answer, sizeof r->answer,
           "%d connected, %d still open after %.0f s%s", opened, still, secs,
           solves);
  free(fds);
}

/* Memory bandwidth of this machine now (triad a = b + 3c, 3 x 64 MiB, one
 * thread, best of 5), printed with the table. */
static double triad_gbs(void) {
  size_t n = (size_t)8 << 20;
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b),
         *c = malloc(n * sizeof *c), best = 0;
  if (!a || !b || !c)
    return 0;
  for (size_t i = 0; i < n; i++)
    a[i] = 0, b[i] = (double)i, c[i] = 1.0;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = cm_bench_now();
    for (size_t i = 0; i < n; i++)
      a[i] = b[i] + 3.0 * c[i];
    double dt = cm_bench_now() - t0, gbs = 3.0 * 8.0 * (double)n / dt / 1e9;
    best = gbs > best && a[n / 2] > 0 ? gbs : best;
  }
  free(a), free(b), free(c);
  return best;
}

int main(int argc, char **argv) {
  g_bin = "../cmodes";
  int skip_meta5 = 0, only_slow = 0, no_solve = 0;
  double slow_s = 15;
  const char *serve_args = "";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--binary") && i + 1 < argc)
      g_bin = argv[++i];
    else if (!strcmp(argv[i], "--label") && i + 1 < argc)
      g_label = argv[++i];
    else if (!strcmp(argv[i], "--skip-meta5"))
      skip_meta5 = 1;
    else if (!strcmp(argv[i], "--only-slow"))
      only_slow = 1;
    else if (!strcmp(argv[i], "--no-solve"))
      no_solve = 1;
    else if (!strcmp(argv[i], "--serve-args") && i + 1 < argc)
      serve_args = argv[++i];
    else if (!strcmp(argv[i], "--slow-seconds") && i + 1 < argc &&
             atof(argv[i + 1]) > 0)
      slow_s = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: server_attack [--binary PATH] [--label NAME] "
                      "[--skip-meta5] [--only-slow] [--slow-seconds S] "
                      "[--no-solve] [--serve-args \"ARGS\"]\n");
      return 2;
    }
  }
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  signal(SIGPIPE, SIG_IGN);
  char tok[] = "/tmp/server_attack_tok_XXXXXX";
  int tfd = mkstemp(tok);
  if (tfd < 0 || write(tfd, "tok\n", 4) != 4)
    return 1;
  close(tfd);
  char args[256];
  snprintf(args, sizeof args, "--token-file %s --max-solve-seconds 2", tok);
  if (server_start(g_bin, args)) {
    fprintf(stderr, "server_attack: %s did not start\n", g_bin);
    return 1;
  }
  printf("triad (one thread, 3 x 64 MiB): %.1f GB/s; load: see uptime\n\n",
         triad_gbs());
  printf("| binary | attack | answer | peak RSS MB | RSS after MB | /healthz "
         "answered | p50 ms | p90 ms | p99 ms | max ms | s |\n|---|---|---|---|"
         "---|---|---|---|---|---|---|\n");
  if (only_slow)
    goto slow;
  /* 1: eight unauthenticated 60 MiB uploads at once */
  row_t r1 = {"8 x 60 MiB unauthenticated uploads", "", 0, 0, 0, {0}};
  const char *h1 = "POST /v1/analyze HTTP/1.1\r\nHost: x\r\nContent-Type: "
                   "application/json\r\nContent-Length: 62914560\r\n\r\n";
  attack_parallel(&r1, 8, h1, NULL, (size_t)60 << 20);
  row_print(&r1);
  /* 2: one 64 MiB body of {} under meta (authenticated) */
  size_t mlen;
  char *meta = meta_body(64, &mlen);
  char h2[256];
  snprintf(h2, sizeof h2,
           "POST /v1/analyze HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
           "tok\r\nContent-Type: application/json\r\nContent-Length: "
           "%zu\r\n\r\n",
           mlen);
  row_t r2 = {"64 MiB of {} under meta", "", 0, 0, 0, {0}};
  attack_parallel(&r2, 1, h2, meta, mlen);
  row_print(&r2);
  if (!skip_meta5) {
    row_t r3 = {"5 x 64 MiB of {} under meta at once", "", 0, 0, 0, {0}};
    attack_parallel(&r3, 5, h2, meta, mlen);
    row_print(&r3);
  }
  free(meta);
  /* 15.9 M empty objects: under --max-elements, a 3.7 GB tree */
  meta = meta_body(45, &mlen);
  snprintf(h2, sizeof h2,
           "POST /v1/analyze HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
           "tok\r\nContent-Type: application/json\r\nContent-Length: "
           "%zu\r\n\r\n",
           mlen);
  row_t r3b = {"45 MiB of {} under meta (15.7 M values)", "", 0, 0, 0, {0}};
  attack_parallel(&r3b, 1, h2, meta, mlen);
  row_print(&r3b);
  free(meta);
  /* 4: method=dense under a 2 s cap (about 0.8 MB of scene) */
  size_t dlen;
  char *dense = pile_body(1500, "{\"method\": \"dense\", \"modes\": 1}", &dlen);
  char h4[256];
  snprintf(h4, sizeof h4,
           "POST /v1/analyze HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
           "tok\r\nContent-Type: application/json\r\nContent-Length: "
           "%zu\r\n\r\n",
           dlen);
  row_t r4 = {"method=dense, --max-solve-seconds 2", "", 0, 0, 0, {0}};
  attack_parallel(&r4, 1, h4, dense, dlen);
  snprintf(r4.answer + strlen(r4.answer), sizeof r4.answer - strlen(r4.answer),
           " (%.2f MB scene)", dlen / 1e6);
  row_print(&r4);
  free(dense);
slow:
  server_stop();
  /* 5: 1000 idle + 32 slow clients while a solve runs (no token) */
  char sargs[300];
  snprintf(sargs, sizeof sargs, "--max-solve-seconds 20 %s", serve_args);
  if (server_start(g_bin, sargs)) {
    fprintf(stderr, "server_attack: %s did not start\n", g_bin);
    return 1;
  }
  size_t slen;
  char *solve = pile_body(20000, "{\"modes\": 6, \"tol\": 1e-14}", &slen);
  row_t r5 = {no_solve ? "1000 idle + 32 slow clients, no solve"
                       : "1000 idle + 32 slow clients + solves",
              "",
              0,
              0,
              0,
              {0}};
  slow_idle(&r5, 1000, 32, slow_s, no_solve ? NULL : solve, slen);
  row_print(&r5);
  free(solve);
  server_stop();
  unlink(tok);
  return 0;
}
