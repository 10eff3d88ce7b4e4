/* bench_intake.c: JSON scene intake (issue #17). Two tables:
 *
 * 1. Readers side by side on generated 3D piles (cm_generate_pile, seed 7,
 *    written as JSON and binary into --dir and reused): the streaming
 *    reader (cm_scene_parse_json), the tree reader it replaced (jansson's
 *    json_loadb plus the tree walk, cm__scene_parse_json_tree), jansson's
 *    parse alone, the binary reader and, when bench/CMakeLists.txt found
 *    them, yajl's callbacks and simdjson's On-Demand API, each walking
 *    every number and each converting to a cm_scene_t
 *    (bench/intake_parsers/parsers.h says what that conversion covers). Each
 * run is a fresh process (fork and exec of this program) that has the file in
 * memory already: wall time of the read, and its peak RSS (VmHWM) above its RSS
 * before the read, against the bytes of the final scene arrays and against the
 * file. Medians of --reps, readers interleaved within each repetition.
 * 2. The 1e6 POST: the largest pile's JSON POSTed to `cmodes serve`
 *    (/v1/analyze) against `cmodes analyze` of its binary, both wall clock
 *    from the client's side, medians, and the peak RSS of each process.
 *
 * Prints lscpu's model and caches and a triad bandwidth first. The machine
 * may be shared: read ratios and medians.
 *
 *   build/bench/bench_intake [--sizes 1e5,1e6] [--reps 3] [--dir DIR]
 *                            [--cmodes build/cmodes] [--no-post]
 *                            [--readers stream,tree,jansson,binary,yajl,
 *                             yajl-scene,simdjson,simdjson-scene]
 */
#include "bench_machine.h"
#include "bench_time.h"
#include "cmodes.h"
#include "cmodes/generate.h"
#include "internal.h"
#ifdef CM_BENCH_PARSERS
#include "parsers.h" /* yajl and simdjson (bench/intake_parsers/) */
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A field of /proc/PID/status in KiB (pid 0: self). */
static long status_kib(int pid, const char *field) {
  char path[64], line[256];
  snprintf(path, sizeof path, pid ? "/proc/%d/status" : "/proc/self/status",
           pid);
  FILE *f = fopen(path, "r");
  long v = -1;
  size_t n = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, field, n) && line[n] == ':')
      v = atol(line + n + 1);
  if (f)
    fclose(f);
  return v;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = calloc((size_t)n + 64, 1); /* simdjson reads 64 bytes past */
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return b;
}

/* ---- machine ------------------------------------------------------------ */

static double triad_gbs(void) {
  size_t n = (size_t)1 << 24; /* 3 x 128 MiB */
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b),
         *c = malloc(n * sizeof *c), best = 0;
  if (!a || !b || !c)
    return 0;
  for (size_t i = 0; i < n; i++)
    a[i] = 0, b[i] = 1, c[i] = 2;
  for (int r = 0; r < 5; r++) {
    double t = now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
      a[i] = b[i] + 3.0 * c[i];
    t = now() - t;
    double gbs = 3.0 * (double)n * sizeof *a / t / 1e9;
    best = gbs > best ? gbs : best;
  }
  volatile double sink = a[n / 2];
  (void)sink;
  free(a), free(b), free(c);
  return best;
}

static void machine(void) {
  cm_bench_machine(stdout);
  printf("  triad (a = b + 3c, 3 x 128 MiB, best of 5): %.1f GB/s\n",
         triad_gbs());
  printf("  measured while other jobs shared the machine: read ratios and "
         "medians\n\n");
}

/* ---- scenes ------------------------------------------------------------- */

static void die(const char *what, cm_context_t *ctx) {
  fprintf(stderr, "bench_intake: %s: %s\n", what, ctx ? ctx->message : "");
  exit(1);
}

/* DIR/pile-SIZE.json and .cmsb, generated unless present. */
static void ensure_pile(const char *dir, double size, char *json, char *bin,
                        size_t n) {
  snprintf(json, n, "%s/pile-%.0e.json", dir, size);
  snprintf(bin, n, "%s/pile-%.0e.cmsb", dir, size);
  struct stat st;
  if (!stat(json, &st) && !stat(bin, &st))
    return;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_pile_options_t o;
  cm_pile_options_init(&o);
  o.dim = 3, o.count = 1000, o.seed = 7;
  cm_scene_t *s = NULL;
  if (cm_generate_pile(&ctx, &o, &s))
    die("cm_generate_pile", &ctx);
  double per = (double)s->ncontacts / o.count;
  cm_scene_destroy(&s);
  o.count = (int)fmax(10, size / per);
  fprintf(stderr, "generating a pile of %d spheres (about %.0e contacts)...\n",
          o.count, size);
  if (cm_generate_pile(&ctx, &o, &s))
    die("cm_generate_pile", &ctx);
  FILE *f = fopen(json, "w");
  if (!f || cm_scene_write_json(&ctx, s, f) || fclose(f))
    die(json, &ctx);
  f = fopen(bin, "wb");
  if (!f || cm_scene_write_binary(&ctx, s, f) || fclose(f))
    die(bin, &ctx);
  cm_scene_destroy(&s);
}

/* ---- readers, each in a child -------------------------------------------- */

enum {
  R_STREAM,
  R_TREE,
  R_JANSSON,
  R_BINARY,
#ifdef CM_BENCH_PARSERS
  R_YAJL_WALK,
  R_YAJL_SCENE,
  R_SIMD_WALK,
  R_SIMD_SCENE,
#endif
  R_N
};
static const char *reader_name[] = {"stream (cmodes, to cm_scene_t)",
                                    "tree (jansson + walk, to cm_scene_t)",
                                    "jansson parse only",
                                    "binary",
                                    "yajl callbacks, numbers only",
                                    "yajl callbacks, to cm_scene_t",
                                    "simdjson on-demand, numbers only",
                                    "simdjson on-demand, to cm_scene_t"};
static const char *reader_key[] = {"stream",   "tree",          "jansson",
                                   "binary",   "yajl",          "yajl-scene",
                                   "simdjson", "simdjson-scene"};
static int reader_on[R_N]; /* --readers */

typedef struct {
  double secs;
  double cpu;      /* CPU seconds of the read (all threads) */
  double peak_mb;  /* peak RSS above the RSS before reading */
  double scene_mb; /* bytes of the final scene arrays */
  int ncontacts;
} run_t;

static size_t scene_bytes(const cm_scene_t *s) {
  return (size_t)s->nbodies * (sizeof(cm_body_t) + sizeof(long)) +
         (size_t)s->ncontacts * (sizeof(cm_contact_t) + sizeof(long)) +
         s->names_len;
}

static void child_read(int reader, const char *path, int fd) {
  size_t len;
  char *text = slurp(path, &len);
  if (!text)
    _exit(2);
  run_t r = {0, 0, 0, 0, 0};
  long rss0 = status_kib(0, "VmRSS");
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  int st = 0;
  struct timespec c0, c1;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  double t = now();
  if (reader == R_STREAM)
    st = cm_scene_parse_json(&ctx, text, len, path, &s);
  else if (reader == R_TREE)
    st = cm__scene_parse_json_tree(&ctx, text, len, path, &s);
  else if (reader == R_BINARY)
    st = cm__scene_parse_binary(&ctx, text, len, path, &s);
#ifdef CM_BENCH_PARSERS
  else if (reader >= R_YAJL_WALK) {
    double sum = 0;
    int mode = reader == R_YAJL_SCENE || reader == R_SIMD_SCENE ? CM_BENCH_SCENE
                                                                : CM_BENCH_WALK;
    st = reader <= R_YAJL_SCENE ? cm_bench_yajl(text, len, mode, &sum, &s)
                                : cm_bench_simdjson(text, len, mode, &sum, &s);
    volatile double sink = sum;
    (void)sink;
  }
#endif
  else {
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    st = root ? 0 : 1;
    json_decref(root);
  }
  r.secs = now() - t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  r.cpu = (double)(c1.tv_sec - c0.tv_sec) +
          1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
  r.peak_mb = (double)(status_kib(0, "VmHWM") - rss0) / 1024.0;
  if (st)
    _exit(3);
  if (s) {
    r.scene_mb = (double)scene_bytes(s) / 1048576.0;
    r.ncontacts = s->ncontacts;
  }
  if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
    _exit(4);
  _exit(0);
}

static int run_reader(int reader, const char *path, run_t *out) {
  int p[2];
  if (pipe(p))
    return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) { /* a fresh process: OpenMP's threads do not survive fork */
    char r[8], fd[16];
    close(p[0]);
    snprintf(r, sizeof r, "%d", reader);
    snprintf(fd, sizeof fd, "%d", p[1]);
    execl("/proc/self/exe", "bench_intake", "--child", r, path, fd,
          (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  ssize_t got = read(p[0], out, sizeof *out);
  close(p[0]);
  int ws;
  waitpid(pid, &ws, 0);
  return got == (ssize_t)sizeof *out && WIFEXITED(ws) && !WEXITSTATUS(ws) ? 0
                                                                          : -1;
}

static void readers_table(const char *json, const char *bin, int reps) {
  struct stat st;
  stat(json, &st);
  double mb = (double)st.st_size / 1e6;
  double secs[R_N][16], cpu[R_N][16], peak[R_N][16], scene_mb = 0;
  int nc = 0;
  for (int rep = 0; rep < reps; rep++)
    for (int k = 0; k < R_N; k++) {
      int reader = (k + rep) % R_N; /* interleaved, rotating */
      if (!reader_on[reader])
        continue;
      run_t r;
      if (run_reader(reader, reader == R_BINARY ? bin : json, &r)) {
        fprintf(stderr, "bench_intake: %s failed on %s\n", reader_name[reader],
                json);
        exit(1);
      }
      secs[reader][rep] = r.secs;
      cpu[reader][rep] = r.cpu;
      peak[reader][rep] = r.peak_mb;
      if (r.scene_mb > 0)
        scene_mb = r.scene_mb, nc = r.ncontacts;
    }
  printf("%s: %d contacts, %.1f MB of JSON, scene arrays %.1f MB\n", json, nc,
         mb, scene_mb);
  printf("| reader | median s | MB/s (JSON bytes) | median CPU s | MB per CPU "
         "s | peak RSS MB | peak / scene arrays | peak / file "
         "|\n|---|---|---|---|---|---|---|---|\n");
  double t_stream = 0;
  for (int k = 0; k < R_N; k++) {
    if (!reader_on[k])
      continue;
    double t = cm_bench_median(secs[k], reps),
           pk = cm_bench_median(peak[k], reps);
    double c = cm_bench_median(cpu[k], reps);
    if (k == R_STREAM)
      t_stream = t;
    printf("| %s | %.3f | %.0f | %.3f | %.0f | %.0f | %.2f | %.2f |\n",
           reader_name[k], t, mb / t, c, mb / c, pk, pk / scene_mb,
           pk / (mb / 1.048576));
  }
  if (reader_on[R_TREE] && reader_on[R_STREAM])
    printf("stream vs tree: %.1fx faster\n",
           cm_bench_median(secs[R_TREE], reps) / t_stream);
  printf("\n");
}

#ifdef CM_BENCH_PARSERS
/* yajl's and simdjson's scenes against the stream reader's, bit for bit
 * (bodies and contacts), in this process: the conversions the table times
 * produce the same scene. */
static void check_same(const char *json) {
  size_t len;
  char *text = slurp(json, &len);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *own = NULL;
  if (!text || cm_scene_parse_json(&ctx, text, len, json, &own))
    die(json, &ctx);
  for (int p = 0; p < 2; p++) {
    cm_scene_t *s = NULL;
    double sum;
    int st = p ? cm_bench_simdjson(text, len, CM_BENCH_SCENE, &sum, &s)
               : cm_bench_yajl(text, len, CM_BENCH_SCENE, &sum, &s);
    long diff = st || !s || s->nbodies != own->nbodies ||
                s->ncontacts != own->ncontacts;
    for (int i = 0; !diff && i < own->nbodies; i++)
      diff += memcmp(&s->bodies[i], &own->bodies[i], sizeof(cm_body_t)) != 0;
    for (int i = 0; !st && s && i < own->ncontacts && i < s->ncontacts; i++)
      diff +=
          memcmp(&s->contacts[i], &own->contacts[i], sizeof(cm_contact_t)) != 0;
    printf("%s's cm_scene_t: %s\n", p ? "simdjson" : "yajl",
           diff ? "DIFFERS from the stream reader's"
                : "bit for bit the stream reader's (bodies, contacts)");
    cm_scene_destroy(&s);
  }
  cm_scene_destroy(&own);
  free(text);
}
#endif

/* ---- the POST -------------------------------------------------------------
 */

/* Starts cmodes serve on a free port; returns its pid, *port. */
static pid_t start_server(const char *cmodes, int *port) {
  char log[] = "/tmp/bench_intake_serve_XXXXXX";
  int fd = mkstemp(log);
  if (fd < 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 2);
    execl(cmodes, cmodes, "serve", "--listen", "127.0.0.1:0", "--quiet",
          "--max-body-bytes", "2G", "--max-contacts", "3000000", "--max-bodies",
          "3000000", "--max-elements", "200000000", "--max-inflight-bytes",
          "2G", "--max-parse-bytes", "8G", "--max-solve-seconds", "0",
          (char *)NULL);
    _exit(127);
  }
  *port = 0;
  for (int i = 0; i < 200 && !*port; i++) {
    usleep(50000);
    size_t n;
    char *t = slurp(log, &n);
    const char *p = t ? strstr(t, "listening on 127.0.0.1:") : NULL;
    if (p)
      *port = atoi(p + strlen("listening on 127.0.0.1:"));
    free(t);
  }
  close(fd);
  unlink(log);
  return pid;
}

/* POSTs body to /v1/analyze; returns the HTTP status, -1 on failure. */
static int post(int port, const char *body, size_t len, size_t *resp_len) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a))
    return -1;
  char head[256];
  int hn = snprintf(head, sizeof head,
                    "POST /v1/analyze?timings=false HTTP/1.1\r\nHost: x\r\n"
                    "Content-Type: application/json\r\nContent-Length: %zu"
                    "\r\nConnection: close\r\n\r\n",
                    len);
  if (write(s, head, (size_t)hn) != hn)
    return -1;
  for (size_t off = 0; off < len;) {
    ssize_t w = write(s, body + off, len - off);
    if (w <= 0)
      return -1;
    off += (size_t)w;
  }
  char buf[65536], first[32] = "";
  size_t total = 0;
  ssize_t r;
  while ((r = read(s, buf, sizeof buf)) > 0) {
    if (!total)
      snprintf(first, sizeof first, "%.*s", (int)(r < 20 ? r : 20), buf);
    total += (size_t)r;
  }
  close(s);
  *resp_len = total;
  int code = -1;
  sscanf(first, "HTTP/1.1 %d", &code);
  return code;
}

/* Wall time and peak RSS (MB) of `cmodes analyze BIN --json`. */
static double run_analyze(const char *cmodes, const char *bin, double *mb) {
  double t = now();
  pid_t pid = fork();
  if (pid == 0) {
    int nul = open("/dev/null", 1);
    dup2(nul, 1);
    execl(cmodes, cmodes, "analyze", bin, "--json", "--no-timings",
          (char *)NULL);
    _exit(127);
  }
  int ws;
  struct rusage ru;
  wait4(pid, &ws, 0, &ru);
  t = now() - t;
  *mb = (double)ru.ru_maxrss / 1024.0;
  return WIFEXITED(ws) && !WEXITSTATUS(ws) ? t : -1;
}

static void post_table(const char *cmodes, const char *json, const char *bin,
                       int reps) {
  size_t len, rl;
  char *body = slurp(json, &len);
  int port;
  pid_t srv = body ? start_server(cmodes, &port) : -1;
  if (srv < 0 || !port) {
    fprintf(stderr, "bench_intake: cannot start %s serve\n", cmodes);
    return;
  }
  double tp[16], ta[16], amb = 0;
  int failed = 0;
  for (int rep = 0; rep < reps; rep++) {
    double t = now();
    int code = post(port, body, len, &rl);
    tp[rep] = now() - t;
    if (code != 200) {
      fprintf(stderr, "bench_intake: POST answered %d\n", code);
      failed++;
    }
    ta[rep] = run_analyze(cmodes, bin, &amb);
  }
  long hwm = status_kib(srv, "VmHWM");
  kill(srv, SIGTERM);
  waitpid(srv, NULL, 0);
  free(body);
  double mp = cm_bench_median(tp, reps), ma = cm_bench_median(ta, reps);
  printf("POST %s (%.1f MB) to cmodes serve /v1/analyze vs cmodes analyze of "
         "the binary scene, %d reps:\n",
         json, (double)len / 1e6, reps);
  printf("| run | median s | peak RSS MB |\n|---|---|---|\n");
  printf("| POST JSON to the server | %.2f | %.0f (server process) |\n", mp,
         (double)hwm / 1024.0);
  printf("| cmodes analyze .cmsb | %.2f | %.0f |\n", ma, amb);
  if (failed) /* an error answer is fast: its time is not the analysis' */
    printf("POST / analyze: no ratio, %d of %d POSTs failed (see above)\n\n",
           failed, reps);
  else
    printf("POST / analyze: %.2fx (target <= 1.5x, peak < 2048 MB)\n\n",
           mp / ma);
}

int main(int argc, char **argv) {
  const char *sizes = "1e5,1e6", *dir = "/tmp/bench_intake",
             *cmodes = "build/cmodes";
  const char *readers = NULL;
  int reps = 3, do_post = 1;
  if (argc == 5 && !strcmp(argv[1], "--child"))
    child_read(atoi(argv[2]), argv[3], atoi(argv[4]));
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
      sizes = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
    else if (!strcmp(argv[i], "--cmodes") && i + 1 < argc)
      cmodes = argv[++i];
    else if (!strcmp(argv[i], "--no-post"))
      do_post = 0;
    else if (!strcmp(argv[i], "--readers") && i + 1 < argc)
      readers = argv[++i];
    else {
      fprintf(stderr, "usage: bench_intake [--sizes 1e5,1e6] [--reps 3] "
                      "[--dir DIR] [--cmodes PATH] [--no-post] [--readers "
                      "LIST]\n");
      return 2;
    }
  }
  for (int k = 0; k < R_N; k++)
    reader_on[k] = !readers;
  for (const char *p = readers; p && *p;) {
    size_t n = strcspn(p, ",");
    int found = 0;
    for (int k = 0; k < R_N; k++)
      if (strlen(reader_key[k]) == n && !strncmp(reader_key[k], p, n))
        reader_on[k] = found = 1;
    if (!found) {
      fprintf(stderr, "bench_intake: --readers: '%.*s' is not one of", (int)n,
              p);
      for (int k = 0; k < R_N; k++)
        fprintf(stderr, " %s", reader_key[k]);
      fprintf(stderr, "\n");
      return 2;
    }
    p += n + (p[n] == ',');
  }
  reps = reps < 1 ? 1 : reps > 16 ? 16 : reps;
  mkdir(dir, 0755);
  machine();
  char json[512] = "", bin[512] = "", list[256];
  snprintf(list, sizeof list, "%s", sizes);
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    ensure_pile(dir, atof(tok), json, bin, sizeof json);
#ifdef CM_BENCH_PARSERS
    check_same(json);
#endif
    readers_table(json, bin, reps);
  }
  if (do_post && json[0])
    post_table(cmodes, json, bin, reps);
  return 0;
}
