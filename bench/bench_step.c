/* bench_step.c: what the step of a large pile costs (issues 13 and 19).
 * Generates the random 3D pile of bench_modes (cm_generate_pile, seed 7,
 * calibrated to about --size contacts) once, then runs, interleaved
 * --reps times each, the full analysis (--modes 6) and the step alone
 * (--modes 1), both to --tol (default 1e-6) at --threads (default 2), and
 * prints one line per run and a table of medians: whole analysis, eigen
 * phase, products, the steps of the probabilistic bound, and the
 * probabilistic certified central-difference step over the critical one.
 * A STREAM-style triad of the same process is printed with the table,
 * and issue 19's goals with verdicts: the eigen phase against the product
 * floor (products x the bytes a product reads / triad bandwidth, goal 1),
 * the step alone against the full analysis of a baseline build
 * (--baseline-cli CMODES: that build's CLI, run in turn with this one's
 * runs on the same --scene file, the sum of its timings but the parse; or
 * --baseline-full S, a time measured apart; goal 2: under 25%), and products
 * per converged mode (goal 3: also of the 6-mode analysis in one
 * unrestarted cycle of FLAT_NCV vectors, the Krylov space's own count;
 * scipy's and SLEPc's come from run.sh).
 * Built against another commit's library, the same program gives the
 * before column (bench/README.md). --f32 instead measures one S product
 * four ways, alternately: the library's, a bench-only copy of its kernels
 * with double values, the same with float values and double sums
 * (issue 19's float32 lever) and the solver's float kernels, and runs no
 * analysis. --one-pass times A = B^T B read in one pass over B's slots
 * against the two passes; --bfs-order the bench's float product on the
 * library's order and on a breadth-first relabelling. --kernels instead
 * runs the full analysis and the step on every kernel set the CPU runs
 * (CMODES_KERNELS; kernels_report). --basis32 runs both analyses with the
 * Lanczos basis in double and in float, alternately (basis32_report).
 * Not a test: it asserts nothing. */
#include "bench_machine.h"
#include "bench_proc.h"
#include "bench_slots.h"
#include "bench_time.h"
#include "cmodes.h"
#include "internal.h"
#include "operator/operator_internal.h"
#include "spectrum/spectrum_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* CPU seconds of the process (all threads, user + system): under a
 * shared machine's load a steadier measure of the work than wall time */
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* huge pages the kernel has allocated at faults so far, machine-wide
 * (/proc/vmstat; 0 without transparent huge pages) */
static double thp_faults(void) {
  return cm_bench_proc_value("/proc/vmstat", "thp_fault_alloc ", 0);
}

/* fresh memory touched so far, in 4 KiB pages: the process's minor page
 * faults (exact under any load, unlike the times), each huge page (2 MiB,
 * one fault: the library advises them for its large buffers) counted as
 * the 512 pages it clears. The huge pages are counted machine-wide, so
 * this is exact on a machine running nothing else. *huge: those pages. */
static double minflt(double *huge) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  *huge = 512 * thp_faults();
  return (double)ru.ru_minflt + *huge - *huge / 512;
}

/* Seconds a GiB of fresh pages costs this process: cm_bench_fresh_gib
 * (256 MiB, advised huge pages with huge != 0, else small ones), median
 * of 3. On a VM
 * whose balloon reports freed pages to the host (issue 19's EPYC, session
 * 14) the 4 KiB figure was 0.3-0.4 s, several times a bare machine's; on
 * the family-26 EPYC of session 16, 1.65 s. */
static double fresh_s_per_gib(int threads, int huge) {
  double t[3];
  for (int r = 0; r < 3; r++)
    if ((t[r] = cm_bench_fresh_gib((size_t)256 << 20, threads, huge)) < 0)
      return NAN;
  return cm_bench_median(t, 3);
}

enum { MAXR = 16 };
/* a basis long enough that the 1e6 pile's 6-mode solve never restarts */
#define FLAT_NCV 160

typedef struct {
  const char *name;
  int modes;
  double tot[MAXR], eig[MAXR], cpu[MAXR], opr[MAXR], ratio, omega;
  double flt[MAXR], hug[MAXR]; /* fresh pages (4 KiB): all, in huge pages */
  double gbs[MAXR]; /* full analyses: a triad right after the run (GB/s) */
  /* the eigen phase's parts (cm_report_t): products, re-orthogonalisation,
   * restarts, the search's projections, residuals on S */
  double part[5][MAXR];
  int matvecs, search, prob_steps, nmodes; /* search: of matvecs, the search
                                              for missed copies */
} run_t;

static void one(cm_context_t *ctx, const cm_scene_t *s, cm_options_t *o,
                run_t *R, int r) {
  cm_report_t *rep = NULL;
  o->modes = R->modes;
  double h0, h1, t0 = cm_bench_now(), c0 = cpu_s(), f0 = minflt(&h0);
  int st = cm_analyze(ctx, s, o, &rep);
  R->tot[r] = cm_bench_now() - t0;
  R->cpu[r] = cpu_s() - c0;
  R->flt[r] = minflt(&h1) - f0;
  R->hug[r] = h1 - h0;
  if (st < 0 || !rep) {
    fprintf(stderr, "bench_step: cm_analyze failed (%s): %s\n",
            cm_status_name(st), ctx->message);
    exit(1);
  }
  R->eig[r] = rep->t_eigen, R->opr[r] = rep->t_operator;
  const double part[5] = {rep->t_matvec, rep->t_orth, rep->t_restart,
                          rep->t_deflate, rep->t_finish};
  for (int k = 0; k < 5; k++)
    R->part[k][r] = part[k];
  R->matvecs = rep->matvecs, R->prob_steps = rep->prob_steps;
  R->search = rep->search_matvecs;
  R->nmodes = rep->nmodes, R->omega = rep->omega_max;
  R->ratio =
      rep->central_difference.certified_prob_s / rep->central_difference.h_s;
  fprintf(stderr,
          "  %-5s run %d: total %.3f s (cpu %.3f s)  eigen %.3f s  fresh "
          "pages %.0f MiB  %d products (%.3f s)  (bound: %d steps)  %d modes  "
          "omega_max %.10g  certified_prob / critical %.4f%s\n"
          "          the rest: assemble %.3f s, factor %.3f s, operator "
          "%.3f s, report %.3f s, outside the phases %.3f s\n",
          R->name, r, R->tot[r], R->cpu[r], R->eig[r], R->flt[r] / 256,
          R->matvecs, rep->t_matvec, R->prob_steps, R->nmodes, R->omega,
          R->ratio, rep->status ? "  NOT CONVERGED" : "", rep->t_assemble,
          rep->t_factor, rep->t_operator, rep->t_report,
          R->tot[r] - rep->t_assemble - rep->t_factor - rep->t_operator -
              rep->t_eigen - rep->t_report);
  cm_report_destroy(&rep);
}

/* The `modes`-mode analysis time of a build's CLI (--baseline-cli, or
 * this build's own, --cli) on the same scene file, a new process each
 * time: the sum of its report's timings but the parse (the in-process
 * analysis is timed without it too); NAN when it fails. */
static double cli_time(const char *cli, const char *scene, double tol,
                       int threads, int modes, double *eigen) {
  char cmd[4096], buf[1 << 16];
  snprintf(cmd, sizeof cmd,
           "'%s' analyze '%s' --modes %d --tol %.17g --threads %d --json "
           "2>/dev/null",
           cli, scene, modes, tol, threads);
  FILE *p = popen(cmd, "r");
  if (!p)
    return NAN;
  size_t n = 0, got;
  while (n + 1 < sizeof buf &&
         (got = fread(buf + n, 1, sizeof buf - 1 - n, p)) > 0)
    n += got;
  buf[n] = 0;
  int code = pclose(p);
  const char *t = strstr(buf, "\"timings\"");
  if (code == -1 || !t)
    return NAN;
  static const char *const keys[] = {"assemble", "factor", "operator", "eigen",
                                     "report"};
  double sum = 0;
  for (int k = 0; k < 5; k++) {
    char key[32];
    snprintf(key, sizeof key, "\"%s\":", keys[k]);
    const char *q = strstr(t, key);
    if (!q)
      return NAN;
    sum += atof(q + strlen(key));
    if (k == 3)
      *eigen = atof(q + strlen(key));
  }
  return sum;
}

/* This build's CLI when --cli is not given: cmodes in the directory above
 * the bench program's own (build/bench/bench_step -> build/cmodes), or
 * NULL when there is none. */
static const char *own_cmodes(char *buf, size_t size) {
  ssize_t n = readlink("/proc/self/exe", buf, size - 1);
  if (n <= 0 || (size_t)n >= size - 1)
    return NULL;
  buf[n] = 0;
  char *slash = strrchr(buf, '/');
  if (!slash || (size_t)(slash - buf) + sizeof "/../cmodes" > size)
    return NULL;
  strcpy(slash, "/../cmodes");
  return access(buf, X_OK) ? NULL : buf;
}

/* Memory the guest kernel has handed back to its host so far (KiB; free
 * page reporting of a virtual machine: a page handed back costs a host
 * fault when the next process writes it), or -1 where it is not on. */
static double reported_kib(void) {
  return cm_bench_proc_value(
      "/sys/module/page_reporting/parameters/reported_kib", "", -1);
}

static const char *verdict(int holds) {
  return holds ? "**holds**" : "**does not hold**";
}

/* Goal 1's row: an eigen phase of `products` against the product floor
 * (floor1: seconds a product at the triad). */
static void goal1_row(const char *what, double eig, int products,
                      double floor1) {
  double r = eig / (products * floor1);
  printf("| %s | %.3f s for %d products x %.2f ms = %.2fx | %s |\n", what, eig,
         products, 1e3 * floor1, r, verdict(r <= 2));
}

/* The triad after each full run: 3 x 64 MiB, eight times the L3 of the
 * machines met, a quarter of the header's, so that it hands the host less
 * memory between the runs it sits between */
#define CM__PAIR_TRIAD ((size_t)1 << 23)

/* The median of num[r] / den[r] over the runs, and in *lo, *hi their
 * range: each run against its own partner (a triad or a baseline run
 * taken next to it), so that a host whose pace drifts during the bench
 * moves both sides of a ratio alike. */
static double paired(const double *num, const double *den, int reps, double *lo,
                     double *hi) {
  double q[MAXR];
  *lo = INFINITY, *hi = -INFINITY;
  for (int r = 0; r < reps; r++) {
    q[r] = num[r] / den[r];
    *lo = fmin(*lo, q[r]), *hi = fmax(*hi, q[r]);
  }
  return cm_bench_median(q, reps);
}

/* Goal 1 run by run: each eigen phase against the product floor at the
 * triad taken right after it (bytes: what one product reads) */
static void goal1_paired_row(const char *what, const run_t *R, int reps,
                             double bytes) {
  double fl[MAXR], lo, hi;
  for (int r = 0; r < reps; r++)
    fl[r] = R->matvecs * bytes / (R->gbs[r] * 1e9);
  double m = paired(R->eig, fl, reps, &lo, &hi);
  printf("| %s | median %.2fx (runs %.2f-%.2fx) | %s |\n", what, m, lo, hi,
         verdict(m <= 2));
}

/* One row of the table of medians: whole, CPU and eigen seconds, fresh
 * MiB, products, products a mode, eigen over the product floor (floor1:
 * seconds a product at the triad), the bound's steps and the certified
 * step over the critical one. */
static void table_row(const char *label, run_t *R, int reps, double floor1) {
  double e = cm_bench_median(R->eig, reps);
  printf("| %s | %.3f | %.3f | %.3f | %.0f | %d | %.1f | %.2f | %d | %.4f |\n",
         label, cm_bench_median(R->tot, reps), cm_bench_median(R->cpu, reps), e,
         cm_bench_median(R->flt, reps) / 256, R->matvecs,
         (double)R->matvecs / R->nmodes, e / (R->matvecs * floor1),
         R->prob_steps, R->ratio);
}

/* One row of the table of where the eigen phase goes (medians, s): its
 * parts (run_t.part), the rest, and the products against the floor. */
static void parts_row(const char *label, run_t *R, int reps, double floor1) {
  double e = cm_bench_median(R->eig, reps), sum = 0;
  printf("| %s | %.3f |", label, e);
  for (int k = 0; k < 5; k++) {
    double v = cm_bench_median(R->part[k], reps);
    sum += v;
    printf(" %.3f |", v);
  }
  double mv = cm_bench_median(R->part[0], reps);
  printf(" %.3f | %.2f ms (%.2fx) |\n", e - sum, 1e3 * mv / R->matvecs,
         mv / (R->matvecs * floor1));
}

/* Median ms of one S product: the library's, the bench's double and float
 * kernels, alternating (9 rounds of 10 products each); rel: the float
 * product's relative difference from the library's. */
/* y = S x with the solver's float kernels (cm__op_rows32: B^T by groups,
 * then B by slots), in the solver's chunks on the threads: the product a
 * Lanczos step makes, without its fused vector work. */
static void lib32_apply_S(const cm_operator_t *op, int threads, const double *x,
                          double *t, double *y) {
  int nr = cm_operator_rows(op), nc = cm_operator_cols(op);
  int c1 = (nc + 4095) / 4096, c2 = (nr + 4095) / 4096;
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (int c = 0; c < c1; c++) {
      int j0 = c * 4096, j1 = j0 + 4096 < nc ? j0 + 4096 : nc;
      cm__op_rows32(op, -1, 1, x, j0, j1, t + j0);
    }
#pragma omp for schedule(static)
    for (int c = 0; c < c2; c++) {
      int i0 = c * 4096, i1 = i0 + 4096 < nr ? i0 + 4096 : nr;
      cm__op_rows32(op, -1, 0, t, i0, i1, y + i0);
    }
  }
}

static void f32_measure(cm_operator_t *op, int threads, double ms[4],
                        double *rel) {
  f32_t L;
  ms[0] = ms[1] = ms[2] = ms[3] = *rel = NAN;
  if (f32_build(op, &L)) {
    f32_free(&L);
    return;
  }
  int nr = L.nr;
  double *x = malloc(sizeof(double) * (size_t)nr);
  double *y = malloc(sizeof(double) * (size_t)nr);
  double *z = malloc(sizeof(double) * (size_t)nr);
  double *t = malloc(sizeof(double) * ((size_t)L.ncol + 1)), tm[4][9];
  for (int i = 0; x && y && z && t && i < nr; i++)
    x[i] = cm__hash_uniform(11, (uint64_t)i) - 0.5;
  for (int r = 0; x && y && z && t && r < 9; r++)
    for (int k = 0; k < 4; k++) {
      double t0 = cm_bench_now();
      for (int c = 0; c < 10; c++) {
        if (k == 0) { /* the solver's own product, scratch kept */
          cm__op_BT(op, -1, x, t);
          cm__op_B(op, -1, t, y);
        } else if (k == 3) { /* the solver's float kernels, as it calls them */
          lib32_apply_S(op, threads, x, t, y);
        } else
          f32_apply_S(&L, k == 2, threads, x, t, k == 2 ? z : y);
      }
      tm[k][r] = (cm_bench_now() - t0) / 10;
    }
  if (x && y && z && t) {
    for (int k = 0; k < 4; k++)
      ms[k] = 1e3 * cm_bench_median(tm[k], 9);
    double d = 0, n2 = 0;
    cm__op_BT(op, -1, x, t);
    cm__op_B(op, -1, t, y);
    for (int i = 0; i < nr; i++)
      d += (z[i] - y[i]) * (z[i] - y[i]), n2 += y[i] * y[i];
    *rel = sqrt(d / n2);
  }
  free(x), free(y), free(z), free(t);
  f32_free(&L);
}

/* The scene's system and operator, or 1 (the message printed). */
static int bench_operator(cm_context_t *ctx, const cm_scene_t *s,
                          cm_system_t **sys, cm_operator_t **op) {
  if (cm_system_assemble(ctx, s, sys) || cm_operator_create(ctx, *sys, op)) {
    fprintf(stderr, "bench_step: %s\n", ctx->message);
    cm_system_destroy(sys);
    return 1;
  }
  return 0;
}

/* --f32: the products of f32_measure on the scene, printed as a
 * table; no analysis runs. */
static int f32_report(cm_context_t *ctx, const cm_scene_t *s, int threads) {
  cm_system_t *sys = NULL;
  cm_operator_t *op = NULL;
  if (bench_operator(ctx, s, &sys, &op))
    return 1;
  if (cm__op_make_f32(ctx, op)) { /* the solver's float values */
    fprintf(stderr, "bench_step: B's values do not fit floats here\n");
    cm_operator_destroy(&op);
    cm_system_destroy(&sys);
    return 1;
  }
  double ms[4], rel, gbs = cm_bench_triad_gbs((size_t)1 << 25, threads, 10);
  double bytes = cm__op_matvec_bytes(op);
  f32_measure(op, threads, ms, &rel);
  printf("%d contacts, %d threads; triad %.1f GB/s; the library's product "
         "reads %.1f MB (floor %.2f ms)\n\n",
         s->ncontacts, threads, gbs, bytes / 1e6, bytes / (gbs * 1e6));
  printf("| S product (9 alternating rounds of 10, median) | ms | against "
         "the bench's double |\n|---|---|---|\n");
  const char *name[4] = {
      "library (cm__op_BT, cm__op_B)", "bench kernel, double values",
      "bench kernel, float values, double sums",
      "library's float kernels (cm__op_rows32, the solver's)"};
  for (int k = 0; k < 4; k++)
    printf("| %s | %.2f | %.3f |\n", name[k], ms[k], ms[k] / ms[1]);
  printf("\nfloat product against the library's: relative 2-norm "
         "difference %.3g\n",
         rel);
  cm_operator_destroy(&op);
  cm_system_destroy(&sys);
  return isnan(ms[2]) ? 1 : 0;
}

/* --one-pass: A = B^T B in one pass over B's slots (bench_slots.h's
 * one_apply_A) against the same product in the library's two passes
 * (slots, then groups: two_apply_A, float values) and the library's own S
 * product; 9 alternating rounds of 10 products, medians; no analysis runs. */
static int one_report(cm_context_t *ctx, const cm_scene_t *s, int threads) {
  cm_system_t *sys = NULL;
  cm_operator_t *op = NULL;
  if (bench_operator(ctx, s, &sys, &op))
    return 1;
  f32_t L;
  one_t O;
  int st = f32_build(op, &L) || one_build(&L, threads, &O) ? 1 : 0;
  int nr = L.nr, nc = L.ncol, big = nr > nc ? nr : nc;
  double *u = malloc(sizeof(double) * ((size_t)big + 1));
  double *v1 = malloc(sizeof(double) * ((size_t)big + 1));
  double *v2 = malloc(sizeof(double) * ((size_t)big + 1));
  double *t = malloc(sizeof(double) * ((size_t)big + 1)), tm[3][9];
  if (!st && (!u || !v1 || !v2 || !t))
    st = 1;
  double gbs = cm_bench_triad_gbs((size_t)1 << 25, threads, 10);
  for (int i = 0; !st && i < big; i++)
    u[i] = cm__hash_uniform(11, (uint64_t)i) - 0.5;
  for (int r = 0; !st && r < 9; r++)
    for (int k = 0; k < 3; k++) {
      double t0 = cm_bench_now();
      for (int c = 0; c < 10; c++) {
        if (k == 0) {
          cm__op_BT(op, -1, u, t);
          cm__op_B(op, -1, t, v1);
        } else if (k == 1)
          two_apply_A(&L, threads, u, t, v1);
        else
          one_apply_A(&L, &O, u, v2);
      }
      tm[k][r] = (cm_bench_now() - t0) / 10;
    }
  if (!st) {
    two_apply_A(&L, threads, u, t, v1);
    one_apply_A(&L, &O, u, v2);
    double d = 0, n2 = 0;
    for (int i = 0; i < nc; i++)
      d += (v2[i] - v1[i]) * (v2[i] - v1[i]), n2 += v1[i] * v1[i];
    long ns = L.Sp[nr], nd = 0;
    for (int w = 0; w < threads; w++)
      nd += O.nd[w];
    double vec = 8.0 * (2.0 * nr + 2.0 * nc), G = L.G;
    double b2 = 4.0 * (nr + 1) + ns * (4 + 4 * G) + 4.0 * (L.ng + 1) +
                ns * (4 + 4 * G) + vec;
    double b1 = 4.0 * (nr + 1) + ns * (4 + 4 * G) + 8.0 * 3 * nc;
    printf("%d contacts (%d rows, %d columns, %ld slots), %d threads; "
           "triad %.1f GB/s; deferred entries %ld (%.2f%% of the slots)\n\n",
           s->ncontacts, nr, nc, ns, threads, gbs, nd, 100.0 * nd / ns);
    printf("| product (9 alternating rounds of 10, median) | ms | reads "
           "(MB, float values) | floor at triad (ms) |\n|---|---|---|---|\n");
    printf("| library's S = B B^T (groups, then slots) | %.2f | %.1f | %.2f "
           "|\n",
           1e3 * cm_bench_median(tm[0], 9), b2 / 1e6, b2 / (gbs * 1e6));
    printf("| A = B^T B, two passes (slots, then groups) | %.2f | %.1f | "
           "%.2f |\n",
           1e3 * cm_bench_median(tm[1], 9), b2 / 1e6, b2 / (gbs * 1e6));
    printf("| A = B^T B, one pass over the slots (gather, then scatter) | "
           "%.2f | %.1f | %.2f |\n",
           1e3 * cm_bench_median(tm[2], 9), b1 / 1e6, b1 / (gbs * 1e6));
    printf("\none pass against two: relative 2-norm difference %.3g; "
           "time ratio %.3f\n",
           sqrt(d / n2), cm_bench_median(tm[2], 9) / cm_bench_median(tm[1], 9));
  }
  free(u), free(v1), free(v2), free(t);
  one_free(&O);
  f32_free(&L);
  cm_operator_destroy(&op);
  cm_system_destroy(&sys);
  return st;
}

/* Of the rows with two slots: the mean distance between their groups and
 * the share of rows whose groups lie more than far groups apart. */
static void order_stats(const f32_t *L, int far, double *mean, double *share) {
  double sum = 0;
  long n = 0, nfar = 0;
  for (int i = 0; i < L->nr; i++)
    if (L->Sp[i + 1] - L->Sp[i] == 2) {
      int a = (int)(L->Sc[L->Sp[i]] >> 3) / L->G;
      int b = (int)(L->Sc[L->Sp[i] + 1] >> 3) / L->G;
      int d = a > b ? a - b : b - a;
      sum += d, n++, nfar += d > far;
    }
  *mean = n ? sum / n : 0;
  *share = n ? (double)nfar / n : 0;
}

/* --bfs-order: the bench's float S product (bench_slots.h) on the
 * library's order (Morton within components) and on a breadth-first
 * relabelling of the same B (f32_bfs), 9 alternating rounds of 10; no
 * analysis runs. */
static int order_report(cm_context_t *ctx, const cm_scene_t *s, int threads) {
  cm_system_t *sys = NULL;
  cm_operator_t *op = NULL;
  if (bench_operator(ctx, s, &sys, &op))
    return 1;
  f32_t L, P;
  int *rnew = NULL;
  double t0 = cm_bench_now();
  int st = f32_build(op, &L) ? 1 : 0;
  if (!st && f32_bfs(&L, &P, &rnew))
    st = 1;
  double tb = cm_bench_now() - t0;
  int nr = L.nr;
  double *x = malloc(sizeof(double) * ((size_t)nr + 1));
  double *x2 = malloc(sizeof(double) * ((size_t)nr + 1));
  double *y = malloc(sizeof(double) * ((size_t)nr + 1));
  double *y2 = malloc(sizeof(double) * ((size_t)nr + 1));
  double *t = malloc(sizeof(double) * ((size_t)L.ncol + 1)), tm[2][9];
  if (!st && (!x || !x2 || !y || !y2 || !t))
    st = 1;
  double gbs = cm_bench_triad_gbs((size_t)1 << 25, threads, 10);
  for (int i = 0; !st && i < nr; i++)
    x[i] = cm__hash_uniform(11, (uint64_t)i) - 0.5;
  for (int r = 0; !st && r < nr; r++)
    x2[r] = x[rnew[r]];
  for (int r = 0; !st && r < 9; r++)
    for (int k = 0; k < 2; k++) {
      double t1 = cm_bench_now();
      for (int c = 0; c < 10; c++)
        f32_apply_S(k ? &P : &L, 1, threads, k ? x2 : x, t, k ? y2 : y);
      tm[k][r] = (cm_bench_now() - t1) / 10;
    }
  if (!st) {
    double d = 0, n2 = 0;
    for (int r = 0; r < nr; r++) {
      double e = y2[r] - y[rnew[r]];
      d += e * e, n2 += y[rnew[r]] * y[rnew[r]];
    }
    int far = (int)((1 << 20) / (3.0 * sizeof(double) * L.G / 3)); /* L2 */
    double m0, f0, m1, f1;
    order_stats(&L, far, &m0, &f0);
    order_stats(&P, far, &m1, &f1);
    printf("%d contacts, %d groups of %d, %d threads; triad %.1f GB/s; the "
           "relabelling took %.2f s (the bench's, sequential)\n\n",
           s->ncontacts, L.ng, L.G, threads, gbs, tb);
    printf("| order | S product (ms, float values, 9 alternating rounds of "
           "10, median) | mean group distance of a row | rows farther "
           "than %d groups (%d KiB of a vector) |\n|---|---|---|---|\n",
           far, (int)((double)far * L.G * 8 / 1024));
    printf("| the library's (Morton within components) | %.2f | %.0f | "
           "%.1f%% |\n",
           1e3 * cm_bench_median(tm[0], 9), m0, 100 * f0);
    printf("| breadth first (f32_bfs) | %.2f | %.0f | %.1f%% |\n",
           1e3 * cm_bench_median(tm[1], 9), m1, 100 * f1);
    printf("\nrelative 2-norm difference of the products (rows mapped "
           "back): %.3g; time ratio %.3f\n",
           sqrt(d / n2), cm_bench_median(tm[1], 9) / cm_bench_median(tm[0], 9));
  }
  free(x), free(x2), free(y), free(y2), free(t), free(rnew);
  if (P.g0)
    free((void *)P.g0);
  f32_free(&P);
  f32_free(&L);
  cm_operator_destroy(&op);
  cm_system_destroy(&sys);
  return st;
}

/* --kernels: the full analysis (6 modes) and the step (1 mode) on every
 * kernel set this CPU runs (internal.h, CM__KERNEL), the sets in turn in
 * every round (the same load), fresh pages as in a new process; then the
 * basis products alone (cm__gemv, 1e6 x 8, both directions, double and
 * float values) and a restart's basis combination (cm__lz_combine). The
 * eigen phase, whole analysis and omega_max bits of
 * each set against the CPU's own. An AVX-512 machine so times the AVX2
 * code an AVX2-only CPU runs, on its own memory system (not the other
 * CPU's). */
static int kernels_report(cm_context_t *ctx, const cm_scene_t *s, double tol,
                          int reps, int threads, size_t cap) {
  int cpu = cm__isa_cpu(), nset = cpu + 1;
  run_t full[3], step[3];
  cm_options_t o;
  cm_options_init(&o);
  o.tol = tol;
  for (int k = 0; k < nset; k++) {
    full[k] = (run_t){.name = "full", .modes = 6};
    step[k] = (run_t){.name = "step", .modes = 1};
  }
  for (int r = 0; r < reps; r++)
    for (int k = cpu; k >= 0; k--) {
      cm__isa_force(k);
      fprintf(stderr, "  kernels %s:\n", cm__isa_name(k));
      cm_workspace_keep(cap); /* within an analysis, as the CLI keeps */
      one(ctx, s, &o, &full[k], r);
      cm_workspace_keep(0);
      cm_workspace_keep(cap);
      one(ctx, s, &o, &step[k], r);
      cm_workspace_keep(0);
    }
  /* the basis products alone */
  int n = 1000000, J = 8;
  double *A = malloc(sizeof(double) * (size_t)n * J), gm[3][4];
  float *A32 = malloc(sizeof(float) * (size_t)n * J);
  double *x = malloc(sizeof(double) * (size_t)n), h[16];
  for (size_t i = 0; A && A32 && x && i < (size_t)n * J; i++)
    A32[i] = (float)(A[i] = cm__hash_uniform(1, i));
  for (int i = 0; x && i < n; i++)
    x[i] = cm__hash_uniform(2, (uint64_t)i);
  for (int k = cpu; A && A32 && x && k >= 0; k--) {
    double t[4][15];
    cm__isa_force(k);
    for (int r = 0; r < 15; r++) {
      double t0 = cm_bench_now();
      cm__gemv(1, n, J, 1.0, A, n, x, 0.0, h, threads);
      double t1 = cm_bench_now();
      cm__gemv(0, n, J, 1e-9, A, n, h, 1.0, x, threads);
      double t2 = cm_bench_now();
      cm__gemv32(1, n, J, 1.0, A32, n, x, 0.0, h + 8, threads);
      double t3 = cm_bench_now();
      cm__gemv32(0, n, J, 1e-9, A32, n, h + 8, 1.0, x, threads);
      t[0][r] = t1 - t0, t[1][r] = t2 - t1, t[2][r] = t3 - t2;
      t[3][r] = cm_bench_now() - t3;
    }
    for (int q = 0; q < 4; q++)
      gm[k][q] = 1e3 * cm_bench_median(t[q], 15);
  }
  free(A), free(A32), free(x);
  /* a restart's combination alone: 74 basis columns into 16 kept vectors
   * (the 6-mode solve's first restart) with their Gram matrix, median of
   * 7 a set */
  int Jc = 74, nk = 16;
  double *V = malloc(sizeof(double) * (size_t)n * (size_t)(Jc + 1));
  double *Out = malloc(sizeof(double) * (size_t)n * (size_t)nk);
  double *Y = malloc(sizeof(double) * (size_t)Jc * (size_t)nk), cb[3] = {0};
  double *G = malloc(sizeof(double) * (size_t)(nk + 1) * (size_t)(nk + 1));
  for (size_t i = 0; V && i < (size_t)n * (size_t)(Jc + 1); i++)
    V[i] = cm__hash_uniform(3, i);
  for (int i = 0; Y && i < Jc * nk; i++)
    Y[i] = cm__hash_uniform(4, (uint64_t)i);
  for (int k = cpu; V && Out && Y && G && k >= 0; k--) {
    double t[7];
    cm__isa_force(k);
    for (int r = 0; r < 7; r++) {
      double t0 = cm_bench_now();
      cm__lz_combine(n, V, Jc, Y, nk, Out, V + (size_t)Jc * n, G, threads);
      t[r] = cm_bench_now() - t0;
    }
    cb[k] = 1e3 * cm_bench_median(t, 7);
  }
  free(V), free(Out), free(Y), free(G);
  cm__isa_force(-1);
  printf("%s: %d contacts, tol %g, %d threads, %d rounds of every kernel "
         "set in turn (medians); the CPU's best set: %s\n\n",
         "kernel sets", s->ncontacts, tol, threads, reps, cm__isa_name(cpu));
  printf("| kernel set | full: whole (s) | full: eigen (s) | step: whole (s) "
         "| step: eigen (s) | eigen against %s | omega_max bits | V^T x, "
         "V h (1e6 x 8 doubles, ms) | the same, float V (ms) | restart "
         "combination, 74 -> 16 columns and their Gram (ms) |\n"
         "|---|---|---|---|---|---|---|---|---|---|\n",
         cm__isa_name(cpu));
  double fe0 = cm_bench_median(full[cpu].eig, reps);
  for (int k = cpu; k >= 0; k--) {
    double fe = cm_bench_median(full[k].eig, reps);
    printf("| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %s | %.2f, %.2f | "
           "%.2f, %.2f | %.1f |\n",
           cm__isa_name(k), cm_bench_median(full[k].tot, reps), fe,
           cm_bench_median(step[k].tot, reps),
           cm_bench_median(step[k].eig, reps), fe / fe0,
           full[k].omega == full[cpu].omega && step[k].omega == step[cpu].omega
               ? "the same"
               : "DIFFER",
           gm[k][0], gm[k][1], gm[k][2], gm[k][3], cb[k]);
  }
  return 0;
}

/* --basis32: the Lanczos basis in double and in float (lanczos.c,
 * cm__lz_basis32_min) side by side on the same scene, the 6-mode analysis
 * and the step, each variant first in turn: runs on fresh pages (the
 * workspace kept within an analysis only, as the CLI does) and, after one
 * run that fills it (not counted), with the workspace kept across runs. */
static int basis32_report(cm_context_t *ctx, const cm_scene_t *s, double tol,
                          int reps, int threads, size_t cap) {
  int min0 = cm__lz_basis32_min;
  run_t R[2][4]; /* [double, float][full, step, full kept, step kept] */
  static const char *names[2] = {"dbl", "flt"};
  cm_options_t o;
  cm_options_init(&o);
  o.tol = tol;
  for (int v = 0; v < 2; v++)
    for (int k = 0; k < 4; k++)
      R[v][k] = (run_t){.name = names[v], .modes = k % 2 ? 1 : 6};
  for (int r = 0; r < reps; r++)
    for (int i = 0; i < 2; i++) {
      int v = (r + i) % 2; /* each variant first in turn */
      cm__lz_basis32_min = v ? 0 : 1 << 30;
      for (int k = 0; k < 2; k++) { /* fresh pages */
        cm_workspace_keep(cap);
        one(ctx, s, &o, &R[v][k], r);
        cm_workspace_keep(0);
      }
      cm_workspace_keep(cap); /* kept: a first run fills the workspace */
      run_t warm = R[v][3];
      one(ctx, s, &o, &warm, 0);
      for (int k = 2; k < 4; k++)
        one(ctx, s, &o, &R[v][k], r);
      cm_workspace_keep(0);
    }
  cm__lz_basis32_min = min0;
  printf("%s: %d contacts, tol %g, %d threads, %d rounds (medians), the "
         "library's own threshold %d rows; triad %.1f GB/s\n\n",
         "Lanczos basis", s->ncontacts, tol, threads, reps, min0,
         cm_bench_triad_gbs((size_t)1 << 25, threads, 10));
  printf("| basis | full: eigen (s) | full: whole (s) | full: fresh pages "
         "(MiB) | step: eigen (s) | step: whole (s) | step: fresh pages "
         "(MiB) | full kept: eigen (s) | step kept: eigen (s) | products "
         "(full, step) | omega_max bits |\n"
         "|---|---|---|---|---|---|---|---|---|---|\n");
  for (int v = 0; v < 2; v++)
    printf("| %s | %.3f | %.3f | %.0f | %.3f | %.3f | %.0f | %.3f | %.3f | "
           "%d, %d | %s |\n",
           v ? "float" : "double", cm_bench_median(R[v][0].eig, reps),
           cm_bench_median(R[v][0].tot, reps),
           cm_bench_median(R[v][0].flt, reps) / 256,
           cm_bench_median(R[v][1].eig, reps),
           cm_bench_median(R[v][1].tot, reps),
           cm_bench_median(R[v][1].flt, reps) / 256,
           cm_bench_median(R[v][2].eig, reps),
           cm_bench_median(R[v][3].eig, reps), R[v][0].matvecs, R[v][1].matvecs,
           R[v][0].omega == R[0][0].omega ? "the same as double"
                                          : "differ from double");
  return 0;
}

int main(int argc, char **argv) {
  double size = 1e6, tol = 1e-6;
  const char *file = NULL, *save = NULL;
  int reps = 3, threads = 2, seed = 7, f32 = 0, kernels = 0, onepass = 0,
      bfs = 0, basis32 = 0;
  double keep_mb = 2048; /* --keep-workspace: goal 4's cap (MiB; 0: off) */
  double base_full = 0;  /* --baseline-full: a baseline's 6-mode time (s) */
  const char *base_cli = NULL; /* --baseline-cli: a baseline build's cmodes */
  const char *own_cli = NULL;  /* --cli: this build's cmodes */
  double base_t[MAXR], base_e[MAXR], base_eig = NAN;
  double own_t[MAXR], own_e[MAXR];
  char own_buf[4096];
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--size") && v)
      size = atof(v), i++;
    else if (!strcmp(a, "--reps") && v)
      reps = atoi(v), i++;
    else if (!strcmp(a, "--threads") && v)
      threads = atoi(v), i++;
    else if (!strcmp(a, "--tol") && v)
      tol = atof(v), i++;
    else if (!strcmp(a, "--seed") && v)
      seed = atoi(v), i++;
    else if (!strcmp(a, "--scene") && v)
      file = v, i++;
    else if (!strcmp(a, "--save") && v)
      save = v, i++;
    else if (!strcmp(a, "--baseline-full") && v)
      base_full = atof(v), i++;
    else if (!strcmp(a, "--baseline-cli") && v)
      base_cli = v, i++;
    else if (!strcmp(a, "--cli") && v)
      own_cli = v, i++;
    else if (!strcmp(a, "--keep-workspace") && v)
      keep_mb = atof(v), i++;
    else if (!strcmp(a, "--f32"))
      f32 = 1;
    else if (!strcmp(a, "--kernels"))
      kernels = 1;
    else if (!strcmp(a, "--one-pass"))
      onepass = 1;
    else if (!strcmp(a, "--bfs-order"))
      bfs = 1;
    else if (!strcmp(a, "--basis32"))
      basis32 = 1;
    else {
      fprintf(stderr, "usage: bench_step [--size NC] [--reps R] [--threads "
                      "T] [--tol X] [--seed S] [--scene FILE] [--save "
                      "FILE] [--baseline-full SECONDS] [--baseline-cli "
                      "CMODES [--cli CMODES]] [--keep-workspace MIB] [--f32 "
                      "| --kernels | --one-pass | --bfs-order | "
                      "--basis32]\n");
      return strcmp(a, "-h") && strcmp(a, "--help") ? 2 : 0;
    }
  }
  reps = reps < 1 ? 1 : reps > MAXR ? MAXR : reps;
  if (base_cli && !own_cli) /* this build's CLI: ../cmodes from bench/ */
    own_cli = own_cmodes(own_buf, sizeof own_buf);
  if (base_cli && !file) {
    fprintf(stderr, "bench_step: --baseline-cli needs --scene (the baseline "
                    "reads the same file)\n");
    return 2;
  }
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = threads;
  cm_pile_options_t po;
  cm_pile_options_init(&po);
  po.dim = 3, po.count = 1000, po.seed = (unsigned)seed;
  cm_scene_t *s = NULL;
  if (file) { /* a saved scene (--save): the same pile for two builds */
    if (cm_scene_read_file(&ctx, file, &s)) {
      fprintf(stderr, "bench_step: %s\n", ctx.message);
      return 1;
    }
    goto run;
  }
  if (cm_generate_pile(&ctx, &po, &s)) {
    fprintf(stderr, "bench_step: %s\n", ctx.message);
    return 1;
  }
  double per = (double)s->ncontacts / po.count;
  cm_scene_destroy(&s);
  po.count = (int)fmax(10, size / per);
  double t0 = cm_bench_now();
  if (cm_generate_pile(&ctx, &po, &s)) {
    fprintf(stderr, "bench_step: %s\n", ctx.message);
    return 1;
  }
  fprintf(stderr, "generated %d spheres, %d contacts in %.1f s\n", s->nbodies,
          s->ncontacts, cm_bench_now() - t0);
  FILE *sf = save ? fopen(save, "wb") : NULL;
  if (save && (!sf || cm_scene_write_binary(&ctx, s, sf) || fclose(sf))) {
    fprintf(stderr, "bench_step: cannot write %s: %s\n", save, ctx.message);
    return 1;
  }
run:;
  cm_bench_machine(stdout); /* every table below was measured on it */
  if (f32 || kernels || onepass || bfs || basis32) {
    size_t kc = (size_t)(keep_mb * 1048576.0);
    int st = basis32   ? basis32_report(&ctx, s, tol, reps, threads, kc)
             : bfs     ? order_report(&ctx, s, threads)
             : onepass ? one_report(&ctx, s, threads)
             : f32     ? f32_report(&ctx, s, threads)
                       : kernels_report(&ctx, s, tol, reps, threads, kc);
    cm_scene_destroy(&s);
    return st;
  }
  cm_options_t o;
  cm_options_init(&o);
  o.tol = tol;
  run_t full = {.name = "full", .modes = 6};
  run_t step = {.name = "step", .modes = 1};
  /* every run keeps its buffers from one solve to the next, as the CLI
   * does, but starts with none kept (fresh pages, as a new process); goal
   * 4: then the full analysis and the step again with the workspace kept
   * across runs (a server, a loop): a first run fills it (not counted),
   * the later ones take it */
  run_t fullk = {.name = "fullk", .modes = 6};
  run_t kept = {.name = "kept", .modes = 1};
  run_t kept0 = kept;
  size_t cap = (size_t)(keep_mb * 1048576.0);
  double rep0 = reported_kib();
  for (int r = 0; r < reps; r++) { /* interleaved: the same load */
    cm_workspace_keep(cap);
    one(&ctx, s, &o, &full, r);
    cm_workspace_keep(0);
    full.gbs[r] = cm_bench_triad_gbs(CM__PAIR_TRIAD, threads, 5);
    fprintf(stderr, "  triad after full run %d: %.1f GB/s\n", r, full.gbs[r]);
    cm_workspace_keep(cap);
    one(&ctx, s, &o, &step, r);
    cm_workspace_keep(0);
    if (base_cli) { /* the baseline's 6-mode analysis, in turn */
      base_t[r] = cli_time(base_cli, file, tol, threads, 6, &base_e[r]);
      fprintf(stderr,
              "  base  run %d: %.3f s, eigen %.3f s (%s, timings but the "
              "parse)\n",
              r, base_t[r], base_e[r], base_cli);
      if (isnan(base_t[r])) {
        fprintf(stderr, "bench_step: %s analyze failed\n", base_cli);
        return 1;
      }
    }
    if (base_cli && own_cli) { /* this build's step from its CLI, in turn */
      own_t[r] = cli_time(own_cli, file, tol, threads, 1, &own_e[r]);
      fprintf(stderr,
              "  cli   run %d: %.3f s, eigen %.3f s (%s --modes 1, timings "
              "but the parse)\n",
              r, own_t[r], own_e[r], own_cli);
    }
  }
  if (base_cli)
    base_full = cm_bench_median(base_t, reps),
    base_eig = cm_bench_median(base_e, reps);
  if (keep_mb > 0) {
    cm_workspace_keep(cap);
    one(&ctx, s, &o, &kept0, 0);
    for (int r = 0; r < reps; r++) {
      one(&ctx, s, &o, &fullk, r);
      fullk.gbs[r] = cm_bench_triad_gbs(CM__PAIR_TRIAD, threads, 5);
      fprintf(stderr, "  triad after fullk run %d: %.1f GB/s\n", r,
              fullk.gbs[r]);
      one(&ctx, s, &o, &kept, r);
    }
    cm_workspace_keep(0);
  }
  /* goal 3's restart question: the same 6-mode analysis in one unrestarted
   * cycle (a basis of FLAT_NCV vectors), the Krylov space's own count */
  run_t flat = {.name = "flat", .modes = 6};
  int ncv0 = o.ncv;
  o.ncv = FLAT_NCV;
  one(&ctx, s, &o, &flat, 0);
  o.ncv = ncv0;
  double gbs = cm_bench_triad_gbs((size_t)1 << 25, threads, 10);
  double fresh = fresh_s_per_gib(threads, 0);
  double fresh_h = fresh_s_per_gib(threads, 1), h4k, h2m;
  int huge_on = cm__huge_pages_choice(&h4k, &h2m), huge_sw;
  int huge_live = cm__huge_pages_live(&huge_sw);
  /* the product floor: what one product reads (B by slots, B^T by groups,
   * the vectors: cm__op_matvec_bytes) at the triad's bandwidth, and one
   * product measured alone on the same operator */
  cm_system_t *sys = NULL;
  cm_operator_t *op = NULL;
  double bytes = NAN, bytes32 = NAN, t_mv = NAN;
  if (!cm_system_assemble(&ctx, s, &sys) &&
      !cm_operator_create(&ctx, sys, &op)) {
    bytes = cm__op_matvec_bytes(op);
    bytes32 = cm__op_matvec_bytes_as(op, 1);
    int nr = cm_operator_rows(op);
    double *x = malloc(sizeof(double) * ((size_t)nr + 1)), tm[5];
    double *y = malloc(sizeof(double) * ((size_t)nr + 1));
    /* the solver's product with its scratch kept (cm_operator_apply_S
     * allocates and frees its scratch in every call) */
    double *t = malloc(sizeof(double) * ((size_t)cm_operator_cols(op) + 1));
    for (int i = 0; x && y && i < nr; i++)
      x[i] = cm__hash_uniform(11, (uint64_t)i), y[i] = 0;
    for (int r = 0; x && y && t && r < 5; r++) {
      double t0 = cm_bench_now();
      for (int c = 0; c < 10; c++) {
        cm__op_BT(op, -1, c % 2 ? y : x, t);
        cm__op_B(op, -1, t, c % 2 ? x : y);
      }
      tm[r] = (cm_bench_now() - t0) / 10;
      double n2 = cm__nrm2(nr, x, 1); /* keep x bounded */
      for (int i = 0; i < nr && n2 > 0; i++)
        x[i] /= n2;
    }
    t_mv = x && y && t ? cm_bench_median(tm, 5) : NAN;
    free(x), free(y), free(t);
  }
  cm_operator_destroy(&op);
  cm_system_destroy(&sys);
  double floor1 = bytes / (gbs * 1e9); /* seconds a product at triad */
  double floor32 = bytes32 / (gbs * 1e9); /* the same, float values */
  double ft = cm_bench_median(full.tot, reps),
         fe = cm_bench_median(full.eig, reps);
  double stt = cm_bench_median(step.tot, reps),
         se = cm_bench_median(step.eig, reps);
  double fc = cm_bench_median(full.cpu, reps),
         sc = cm_bench_median(step.cpu, reps);
  printf("%s: %d contacts, tol %g, %d threads, %d interleaved runs "
         "(medians); triad %.1f GB/s; fresh pages %.3f s a GiB (4 KiB "
         "pages), %.3f s (huge pages); kernel set %s; the library's huge "
         "pages %s (its own measure: %.3f s a GiB in 4 KiB pages, %.3f s in "
         "the dearest 2 MiB sampled; %d buffers timed since, ",
         file ? file : "generated pile", s->ncontacts, tol, threads, reps, gbs,
         fresh, fresh_h, cm_kernel_set(), huge_on ? "on" : "off", h4k, h2m,
         huge_live);
  printf("the choice switched %d times; %s)\n\n", huge_sw,
         cm__huge_pages_walk() ? "every block of a buffer timed (one NUMA node)"
                               : "a buffer's first block timed");
  double rep1 = reported_kib();
  if (rep0 >= 0 && rep1 >= 0) /* a new process pays for these pages again */
    printf("free page reporting (a virtual machine's): %.0f MiB handed back "
           "to the host during the bench; a new process (the CLI rows) "
           "writes such pages at the host's price\n\n",
           (rep1 - rep0) / 1024);
  printf("| analysis | whole (s) | CPU (s) | eigen phase (s) | fresh pages "
         "(MiB) | products | products / mode | eigen / floor | bound steps | "
         "certified_prob / critical |\n"
         "|---|---|---|---|---|---|---|---|---|---|\n");
  table_row("full (--modes 6)", &full, reps, floor1);
  table_row("step (--modes 1)", &step, reps, floor1);
  double fke = cm_bench_median(fullk.eig, reps),
         ske = cm_bench_median(kept.eig, reps);
  if (keep_mb > 0) {
    table_row("full, workspace kept", &fullk, reps, floor1);
    table_row("step, workspace kept", &kept, reps, floor1);
  }
  printf("\nproduct floor: %.1f MB a product / %.1f GB/s = %.2f ms; one "
         "product measured alone %.2f ms (%.2fx the floor; on B's double "
         "values); with B's values as the solver's products read them "
         "(float): %.1f MB, %.2f ms\n",
         bytes / 1e6, gbs, 1e3 * floor1, 1e3 * t_mv, t_mv / floor1,
         bytes32 / 1e6, 1e3 * floor32);
  printf("\nwhere the eigen phase goes (s, medians; the rest: the start, "
         "the Ritz problems and tests, the recurrence's own vector work "
         "outside the products, the buffers' fresh pages)\n\n"
         "| analysis | eigen | products | re-orthogonalisation | restarts | "
         "search's projections | residuals on S | rest | a product (x the "
         "floor) |\n|---|---|---|---|---|---|---|---|---|\n");
  parts_row("full (--modes 6)", &full, reps, floor1);
  parts_row("step (--modes 1)", &step, reps, floor1);
  if (keep_mb > 0) {
    parts_row("full, workspace kept", &fullk, reps, floor1);
    parts_row("step, workspace kept", &kept, reps, floor1);
  }
  /* fresh pages (MiB, medians) of the full analysis and of the step, and
   * their price: the 4 KiB ones at fresh, the huge ones at fresh_h */
  double ffm = cm_bench_median(full.flt, reps) / 256,
         sfm = cm_bench_median(step.flt, reps) / 256;
  double ffh = cm_bench_median(full.hug, reps) / 256,
         sfh = cm_bench_median(step.hug, reps) / 256;
  printf("fresh pages at %.3f s a GiB in 4 KiB pages, %.3f s in huge pages "
         "(written from %d threads): the full analysis's %.0f MiB (%.0f in "
         "huge pages) about %.3f s, the step's %.0f MiB (%.0f) about %.3f s\n",
         fresh, fresh_h, threads, ffm, ffh,
         (fresh * (ffm - ffh) + fresh_h * ffh) / 1024, sfm, sfh,
         (fresh * (sfm - sfh) + fresh_h * sfh) / 1024);
  printf("step / full: whole %.3f, CPU %.3f, eigen %.3f; omega_max equal: "
         "%s\n",
         stt / ft, sc / fc, se / fe,
         step.omega == full.omega ? "bitwise" : "no");
  if (step.omega != full.omega)
    printf("  relative difference %.3g\n",
           fabs(step.omega - full.omega) / full.omega);
  /* issue 19's goals on this machine (kept: runs with the workspace kept,
   * only with --keep-workspace above 0) */
  double kt = cm_bench_median(kept.tot, reps);
  printf("\n| issue 19 goal | measured | verdict |\n|---|---|---|\n");
  goal1_row("1: eigen phase <= 2x the product floor (6 modes)", fe,
            full.matvecs, floor1);
  if (keep_mb > 0)
    goal1_row("1, workspace kept (a server's or a loop's later analyses)", fke,
              fullk.matvecs, floor1);
  goal1_paired_row("1, run by run: each run against a triad taken right "
                   "after it",
                   &full, reps, bytes);
  if (keep_mb > 0)
    goal1_paired_row("1, workspace kept, run by run", &fullk, reps, bytes);
  goal1_row("1, against the bytes the products read now (B's values in "
            "float, not the double values of the filing's floor)",
            fe, full.matvecs, floor32);
  if (base_full > 0) {
    printf("| 2: the step alone < 25%% of the baseline's 6-mode analysis "
           "(%s) | %.3f s / %.3f s = %.3f | %s |\n",
           base_cli ? "its CLI, run in turn with these" : "--baseline-full",
           stt, base_full, stt / base_full, verdict(stt / base_full < 0.25));
    if (keep_mb > 0)
      printf("| 2, workspace kept | %.3f s / %.3f s = %.3f | %s |\n", kt,
             base_full, kt / base_full, verdict(kt / base_full < 0.25));
    if (!isnan(base_eig)) /* the eigen phases alone */
      printf("| 2, eigen phases alone (step; workspace kept) | step %.3f "
             "s, kept %.3f s, against the baseline's %.3f s: %.3f; %.3f | "
             "%s; %s |\n",
             se, keep_mb > 0 ? ske : NAN, base_eig, se / base_eig,
             keep_mb > 0 ? ske / base_eig : NAN, verdict(se / base_eig < 0.25),
             verdict(keep_mb > 0 && ske / base_eig < 0.25));
    if (base_cli && own_cli) { /* process against process */
      double ot = cm_bench_median(own_t, reps);
      printf("| 2, from this build's CLI (a new process each, as the "
             "baseline's) | %.3f s / %.3f s = %.3f | %s |\n",
             ot, base_full, ot / base_full, verdict(ot / base_full < 0.25));
    }
    if (base_cli) { /* each run against the baseline run beside it */
      double lo, hi, m = paired(step.tot, base_t, reps, &lo, &hi);
      printf("| 2, run by run: each step against the baseline run next to "
             "it | median %.3f (runs %.3f-%.3f) | %s |\n",
             m, lo, hi, verdict(m < 0.25));
      if (own_cli) {
        m = paired(own_t, base_t, reps, &lo, &hi);
        printf("| 2, from this build's CLI, run by run | median %.3f (runs "
               "%.3f-%.3f) | %s |\n",
               m, lo, hi, verdict(m < 0.25));
      }
    }
  } else
    printf("| 2: the step alone < 25%% of the baseline's 6-mode analysis | "
           "no --baseline-full given; against this build's full analysis: "
           "%.3f | not measured |\n",
           stt / ft);
  printf("| 3: products per converged mode | full %.1f (%d / %d; the solve "
         "alone %.1f, %d in the search for copies), step %d (%d); the full "
         "analysis in one unrestarted cycle (ncv %d) %.1f (%d / %d) | against "
         "scipy and SLEPc: run.sh's targets.md |\n",
         (double)full.matvecs / full.nmodes, full.matvecs, full.nmodes,
         (double)(full.matvecs - full.search) / full.nmodes, full.search,
         step.matvecs, step.search, FLAT_NCV,
         (double)flat.matvecs / flat.nmodes, flat.matvecs, flat.nmodes);
  if (keep_mb > 0) {
    double ko = cm_bench_median(kept.opr, reps),
           so = cm_bench_median(step.opr, reps);
    double kf = cm_bench_median(kept.flt, reps) / 256;
    printf("| 4: repeated analyses reuse their workspace (the step, %.0f MiB "
           "kept; runs after the first, against fresh runs) | fresh pages "
           "%.0f -> %.0f MiB (first kept run %.0f); operator %.1f -> %.1f ms; "
           "eigen %.3f -> %.3f s; whole %.3f -> %.3f s | %s |\n",
           keep_mb, sfm, kf, kept0.flt[0] / 256, 1e3 * so, 1e3 * ko, se, ske,
           stt, kt, verdict(kf < 0.5 * sfm && kept.omega == step.omega));
    if (kept.omega != step.omega)
      printf("  kept runs' omega_max differs: %.17g vs %.17g\n", kept.omega,
             step.omega);
  }
  cm_scene_destroy(&s);
  return 0;
}
