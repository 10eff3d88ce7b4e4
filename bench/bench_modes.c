/* bench_modes.c: the benchmark program behind bench/run.sh. For one scene
 * (random 3D pile, FCC crystal, robot fleet) at one contact count it times
 * every phase of a cmodes analysis (median of --reps runs), the S matvec
 * against a STREAM-style triad measured in the same process, the
 * per-contact estimate, 1 against N threads, the peak memory of an
 * analysis (VmHWM, reset after generating), the JSON scene reader, and
 * optionally dense LAPACK (dsyevr, dsyevd) on the formed S. The scene is
 * generated once (again for the median only while that stays cheap) and
 * fed in the generator's body order: cmodes' own reordering is timed. It exports the operator's own B (CSR, binary)
 * for the scipy and SLEPc programs, so all methods see the same operator.
 * Progress goes to stderr as each phase ends; one JSON line of results goes
 * to stdout (bench/table.py turns those into the table, CSV and plot).
 * Not a test: it asserts nothing about time.
 *
 * Binary B file (little endian): "CMB1", int32 nr, int32 ncol, int64 nnz,
 * int32 Bp[nr+1], int32 Bj[nnz], float64 Bx[nnz]; then the trailer "GRP1",
 * int32 ng, int32 g0[ng+1] (the operator's column groups, as
 * cm__op_groups gives them; absent for a general M or in older files).
 */
#include "bench_proc.h"
#include "bench_time.h"
#include "cmodes.h"
#include "internal.h"
#include "operator/operator_internal.h"

#include <errno.h>
#include <lapacke.h>
#include <malloc.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- options ------------------------------------------------------------ */

typedef struct {
  const char *scene;   /* "pile", "crystal" or "fleet" */
  double size;         /* target contact count */
  int reps;            /* runs per figure (median) */
  int threads;         /* threads for the analysis (default 2) */
  double tol;          /* eigen tolerance, default 1e-6 */
  int nev;             /* modes, default 6 */
  int ncv;             /* Lanczos basis size (0: the library's choice) */
  int method;          /* cm_method_t of the analysis (default auto) */
  int dense_max;       /* run dense LAPACK when nc <= this (0: never) */
  const char *export_path; /* write B here (NULL: do not) */
  int mem;             /* measure peak memory in a child */
  int thread_cmp;      /* 1 vs threads comparison */
  int parse;           /* time the JSON reader */
  int fast;            /* phases of the analysis only */
  int arpack;          /* also ARPACK on the whole operator */
} bench_opts_t;

static void die(const cm_context_t *ctx, const char *what, int st) {
  fprintf(stderr, "bench_modes: %s failed (%s): %s\n", what,
          cm_status_name(st), ctx ? ctx->message : "");
  exit(1);
}

/* A stand-in random 3D pile for sizes where cm_generate_pile (sequential
 * deposition, superlinear) is too slow for a benchmark: polydisperse glass
 * spheres on a jittered cubic lattice (spacing one mean diameter) in a box
 * about as tall as wide, each resting on 3 of the 9 grains of the layer
 * below (seeded choice; the bottom layer on fixed floor grains), normal from
 * support to particle, k = 1e5 (0.5 + u) N/m. Particles are listed in a
 * seeded random order (a user's order, not sorted). Labelled "pile-standin"
 * in the results; not physics-grade (no equilibrium), only the shape of the
 * operator of a pile: 3 contacts per particle, one big component. */
static cm_scene_t *standin_pile(cm_context_t *ctx, long count) {
  const double R = 0.005, rho = 2500.0, PI = 3.14159265358979323846;
  int w = (int)ceil(cbrt((double)count)), h = (int)((count + (long)w * w - 1) /
                                                    ((long)w * w));
  cm_scene_t *s = cm_scene_create(3);
  if (!s)
    die(ctx, "cm_scene_create", CM_NOMEM);
  /* site (i, j, k), k = -1 the floor; body index of each site */
  size_t nsite = (size_t)w * w * (size_t)(h + 1);
  int *body = malloc(sizeof(int) * nsite);
  double *pos = malloc(sizeof(double) * 3 * nsite), *rad = malloc(
      sizeof(double) * nsite);
  long *perm = malloc(sizeof(long) * (size_t)count);
  if (!body || !pos || !rad || !perm)
    die(ctx, "stand-in pile", CM_NOMEM);
  for (size_t q = 0; q < nsite; q++) {
    int i = (int)(q % (size_t)w), j = (int)(q / (size_t)w % (size_t)w);
    int k = (int)(q / ((size_t)w * w)) - 1;
    double u = cm__hash_uniform(101, q), jit = k < 0 ? 0 : 0.1 * R;
    rad[q] = R * (1 + 0.2 * u);
    pos[3 * q + 0] = 2 * R * i + jit * cm__hash_uniform(102, q);
    pos[3 * q + 1] = 2 * R * j + jit * cm__hash_uniform(103, q);
    pos[3 * q + 2] = 2 * R * k + jit * cm__hash_uniform(104, q);
    body[q] = -1;
  }
  cm_body_t b;
  for (size_t q = 0; q < (size_t)w * w; q++) { /* floor grains, fixed */
    cm_body_init(&b);
    b.fixed = 1;
    memcpy(b.position, pos + 3 * q, sizeof b.position);
    body[q] = cm_scene_add_body(ctx, s, &b, NULL);
  }
  for (long p = 0; p < count; p++)
    perm[p] = p;
  for (long p = count - 1; p > 0; p--) { /* seeded shuffle */
    long o = (long)((0.5 + 0.5 * cm__hash_uniform(105, (uint64_t)p)) * (p + 1));
    o = o > p ? p : o;
    long t = perm[p];
    perm[p] = perm[o], perm[o] = t;
  }
  for (long p = 0; p < count; p++) { /* particles in the shuffled order */
    size_t q = (size_t)w * w + (size_t)perm[p];
    cm_body_init(&b);
    double r = rad[q], m = rho * 4.0 / 3.0 * PI * r * r * r;
    b.mass = m;
    for (int d = 0; d < 9; d++)
      b.inertia[d] = d % 4 == 0 ? 0.4 * m * r * r : 0.0;
    memcpy(b.position, pos + 3 * q, sizeof b.position);
    body[q] = cm_scene_add_body(ctx, s, &b, NULL);
  }
  cm_contact_t c;
  for (long p = 0; p < count; p++) {
    size_t q = (size_t)w * w + (size_t)perm[p];
    int i = (int)(q % (size_t)w), j = (int)(q / (size_t)w % (size_t)w);
    int k = (int)(q / ((size_t)w * w)) - 1;
    int used[9] = {0}, got = 0;
    for (int t = 0; got < 3 && t < 64; t++) {
      int pick = (int)((0.5 + 0.5 * cm__hash_uniform(106, q * 64 + (size_t)t)) * 9) % 9;
      int ii = i + pick % 3 - 1, jj = j + pick / 3 - 1;
      if (used[pick] || ii < 0 || jj < 0 || ii >= w || jj >= w)
        continue;
      size_t qs = ((size_t)k * w + (size_t)jj) * (size_t)w + (size_t)ii;
      if (body[qs] < 0)
        continue;
      used[pick] = 1, got++;
      cm_contact_init(&c);
      c.a = body[q], c.b = body[qs];
      double d[3], L = 0;
      for (int x = 0; x < 3; x++)
        d[x] = pos[3 * q + x] - pos[3 * qs + x], L += d[x] * d[x];
      L = sqrt(L);
      for (int x = 0; x < 3; x++) {
        c.normal[x] = d[x] / L;
        c.point[x] = pos[3 * qs + x] + d[x] * rad[qs] / (rad[q] + rad[qs]);
      }
      c.stiffness = 1e5 * (1.0 + 0.5 * cm__hash_uniform(107, q * 64 + (size_t)t));
      if (cm_scene_add_contact(ctx, s, &c, NULL) < 0)
        die(ctx, "stand-in pile contact", ctx->status);
    }
  }
  free(body), free(pos), free(rad), free(perm);
  return s;
}

/* ---- scenes ------------------------------------------------------------- */

/* Generates the scene kind with about nc contacts (calibrated on a small
 * instance of the same kind). Sets *units to robots / particles / sites. */
static cm_scene_t *make_scene(cm_context_t *ctx, const char *kind, double nc,
                              long *units) {
  cm_scene_t *s = NULL;
  int st;
  if (!strcmp(kind, "pile")) {
    cm_pile_options_t o;
    cm_pile_options_init(&o);
    o.dim = 3, o.count = 1000, o.seed = 7;
    if ((st = cm_generate_pile(ctx, &o, &s)))
      die(ctx, "cm_generate_pile (probe)", st);
    double per = (double)s->ncontacts / o.count;
    cm_scene_destroy(&s);
    o.count = (int)fmax(10, nc / per);
    *units = o.count;
    if ((st = cm_generate_pile(ctx, &o, &s)))
      die(ctx, "cm_generate_pile", st);
  } else if (!strcmp(kind, "pile-standin")) {
    *units = (long)fmax(10, nc / 3.0);
    s = standin_pile(ctx, *units);
  } else if (!strcmp(kind, "crystal")) {
    cm_crystal_options_t o;
    cm_crystal_options_init(&o);
    o.lattice = CM_LATTICE_FCC, o.nx = o.ny = o.nz = 10;
    if ((st = cm_generate_crystal(ctx, &o, &s)))
      die(ctx, "cm_generate_crystal (probe)", st);
    double per = (double)s->ncontacts / 1000.0; /* per n^3 */
    cm_scene_destroy(&s);
    int n = (int)lround(cbrt(nc / per));
    o.nx = o.ny = o.nz = n < 2 ? 2 : n;
    *units = (long)o.nx * o.ny * o.nz;
    if ((st = cm_generate_crystal(ctx, &o, &s)))
      die(ctx, "cm_generate_crystal", st);
  } else if (!strcmp(kind, "fleet")) {
    cm_fleet_options_t o;
    cm_fleet_options_init(&o);
    o.count = 1000, o.seed = 3;
    if ((st = cm_generate_fleet(ctx, &o, &s)))
      die(ctx, "cm_generate_fleet (probe)", st);
    double per = (double)s->ncontacts / o.count;
    cm_scene_destroy(&s);
    o.count = (int)fmax(1, lround(nc / per));
    *units = o.count;
    if ((st = cm_generate_fleet(ctx, &o, &s)))
      die(ctx, "cm_generate_fleet", st);
  } else {
    fprintf(stderr, "bench_modes: unknown scene '%s' (pile|crystal|fleet)\n",
            kind);
    exit(2);
  }
  return s;
}

/* ---- STREAM-style triad --------------------------------------------------- */


/* ---- the operator's own B, extracted by probing ---------------------------- */

/* Greedy colouring of bodies so that two bodies sharing a contact differ:
 * then for colour c and local dof d, B x with x = sum of e_(column of dof d
 * of each body of colour c) gives in row r exactly B[r, that column of a or
 * b]. About 6 x (colours) SpMVs, bitwise the operator's values. */
static int extract_B(cm_context_t *ctx, const cm_system_t *sys,
                     cm_operator_t *op, int **Bp_out, int **Bj_out,
                     double **Bx_out) {
  int nb = sys->nbodies, nr = sys->nc, n = sys->n;
  int *color = malloc(sizeof(int) * (size_t)(nb + 1));
  int *bcol0 = malloc(sizeof(int) * (size_t)(nb + 1)); /* first column */
  int *bdim = calloc((size_t)nb + 1, sizeof(int));
  int *adjp = calloc((size_t)nb + 2, sizeof(int));
  int *adj = malloc(sizeof(int) * (size_t)(2 * nr + 1));
  if (!color || !bcol0 || !bdim || !adjp || !adj)
    return CM_NOMEM;
  for (int b = 0; b < nb; b++)
    bcol0[b] = n; /* bodies without columns sort last */
  for (int j = n - 1; j >= 0; j--) { /* columns of a body are contiguous */
    bcol0[sys->col_body[j]] = j;
    bdim[sys->col_body[j]]++;
  }
  for (int r = 0; r < nr; r++) { /* body adjacency through contacts */
    if (sys->row_a[r] >= 0 && sys->row_b[r] >= 0)
      adjp[sys->row_a[r] + 1]++, adjp[sys->row_b[r] + 1]++;
  }
  for (int b = 0; b < nb; b++)
    adjp[b + 1] += adjp[b];
  int *fill = malloc(sizeof(int) * (size_t)(nb + 1));
  memcpy(fill, adjp, sizeof(int) * (size_t)(nb + 1));
  for (int r = 0; r < nr; r++) {
    int a = sys->row_a[r], b = sys->row_b[r];
    if (a >= 0 && b >= 0)
      adj[fill[a]++] = b, adj[fill[b]++] = a;
  }
  free(fill);
  int ncolor = 0;
  unsigned char *used = calloc(4096, 1);
  for (int b = 0; b < nb; b++) {
    color[b] = -1;
    if (!bdim[b])
      continue;
    for (int q = adjp[b]; q < adjp[b + 1]; q++)
      if (adj[q] < b && color[adj[q]] >= 0 && color[adj[q]] < 4096)
        used[color[adj[q]]] = 1;
    int c = 0;
    while (used[c])
      c++;
    color[b] = c;
    ncolor = c + 1 > ncolor ? c + 1 : ncolor;
    for (int q = adjp[b]; q < adjp[b + 1]; q++)
      if (adj[q] < b && color[adj[q]] >= 0 && color[adj[q]] < 4096)
        used[color[adj[q]]] = 0;
  }
  free(used);
  /* rows: columns of a then b, counted from the probes */
  int *Bp = calloc((size_t)nr + 1, sizeof(int));
  size_t cap = 0;
  for (int r = 0; r < nr; r++) {
    int a = sys->row_a[r], b = sys->row_b[r];
    cap += (size_t)((a >= 0 ? bdim[a] : 0) + (b >= 0 ? bdim[b] : 0));
  }
  double *val = calloc(cap + 1, sizeof(double)); /* dense per-row slots */
  size_t *slot = malloc(sizeof(size_t) * ((size_t)nr + 1));
  double *x = calloc((size_t)n + 1, sizeof(double));
  double *y = malloc(sizeof(double) * ((size_t)nr + 1));
  if (!Bp || !val || !slot || !x || !y)
    return CM_NOMEM;
  size_t acc = 0;
  for (int r = 0; r < nr; r++) {
    slot[r] = acc;
    int a = sys->row_a[r], b = sys->row_b[r];
    acc += (size_t)((a >= 0 ? bdim[a] : 0) + (b >= 0 ? bdim[b] : 0));
  }
  for (int c = 0; c < ncolor; c++)
    for (int d = 0; d < 6; d++) {
      int any = 0;
      memset(x, 0, sizeof(double) * (size_t)n);
      for (int b = 0; b < nb; b++)
        if (color[b] == c && d < bdim[b])
          x[bcol0[b] + d] = 1.0, any = 1;
      if (!any)
        continue;
      cm_operator_apply_B(op, x, y);
      for (int r = 0; r < nr; r++) {
        int a = sys->row_a[r], b = sys->row_b[r];
        size_t s = slot[r];
        if (a >= 0 && color[a] == c && d < bdim[a])
          val[s + (size_t)d] = y[r];
        if (a >= 0)
          s += (size_t)bdim[a];
        if (b >= 0 && color[b] == c && d < bdim[b])
          val[s + (size_t)d] = y[r];
      }
    }
  /* compress: drop exact zeros, columns ascending (a and b blocks sorted) */
  int *Bj = malloc(sizeof(int) * (cap + 1));
  double *Bx = malloc(sizeof(double) * (cap + 1));
  size_t nz = 0;
  for (int r = 0; r < nr; r++) {
    int a = sys->row_a[r], b = sys->row_b[r];
    int blk[2] = {a, b};
    size_t s = slot[r];
    if (a >= 0 && b >= 0 && bcol0[b] < bcol0[a]) { /* b's columns first */
      blk[0] = b, blk[1] = a;
    }
    for (int k = 0; k < 2; k++) {
      int bb = blk[k];
      if (bb < 0)
        continue;
      size_t off = s + (bb == a ? 0 : (size_t)(a >= 0 ? bdim[a] : 0));
      for (int d = 0; d < bdim[bb]; d++)
        if (val[off + (size_t)d] != 0) {
          Bj[nz] = bcol0[bb] + d;
          Bx[nz] = val[off + (size_t)d];
          nz++;
        }
    }
    Bp[r + 1] = (int)nz;
  }
  free(color), free(bcol0), free(bdim), free(adjp), free(adj);
  free(val), free(slot), free(x), free(y);
  if ((long)nz != cm_operator_nnz(op))
    fprintf(stderr,
            "bench_modes: warning: extracted %zu nonzeros of B, the operator "
            "reports %ld\n",
            nz, cm_operator_nnz(op));
  (void)ctx;
  *Bp_out = Bp, *Bj_out = Bj, *Bx_out = Bx;
  return CM_OK;
}

/* "CMB1", int32 nr, ncol, int64 nnz, int32 Bp[nr+1], Bj[nnz], float64
 * Bx[nnz]; then, when ng >= 0, the trailer "GRP1", int32 ng, int32
 * g0[ng+1]: the operator's column groups (group b = columns [g0[b],
 * g0[b+1])), so bench_slepc can rebuild the grouped products. Readers that
 * stop after Bx are unaffected. */
static int write_B(const char *path, int nr, int ncol, const int *Bp,
                   const int *Bj, const double *Bx, int ng, const int *g0) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "bench_modes: cannot write %s: %s\n", path,
            strerror(errno));
    return -1;
  }
  int32_t hdr[2] = {nr, ncol};
  int64_t nnz = Bp[nr];
  fwrite("CMB1", 1, 4, f);
  fwrite(hdr, sizeof hdr[0], 2, f);
  fwrite(&nnz, sizeof nnz, 1, f);
  fwrite(Bp, sizeof(int), (size_t)nr + 1, f);
  fwrite(Bj, sizeof(int), (size_t)nnz, f);
  fwrite(Bx, sizeof(double), (size_t)nnz, f);
  if (ng >= 0) {
    int32_t ng32 = ng;
    fwrite("GRP1", 1, 4, f);
    fwrite(&ng32, sizeof ng32, 1, f);
    fwrite(g0, sizeof(int), (size_t)ng + 1, f);
  }
  int bad = ferror(f) | (fclose(f) != 0);
  return bad ? -1 : 0;
}

/* ---- peak memory of the analysis, in this process --------------------------- */

/* Resets the kernel's peak-RSS mark to the current RSS (Linux >= 4.0:
 * "5" > /proc/self/clear_refs), after returning free heap to the system, so
 * a later vm_hwm_kib() is the peak of what ran in between plus what was
 * resident before (the scene). Returns 0 when the reset worked. */
static int reset_hwm(void) {
  malloc_trim(0);
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f)
    return -1;
  int ok = fputs("5", f) >= 0;
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* VmHWM of this process in KiB, or -1. */
static long vm_hwm_kib(void) {
  return (long)cm_bench_proc_value("/proc/self/status", "VmHWM:", -1);
}

/* JSON number or null (NaN and infinities are not JSON). Rotating buffers:
 * up to 8 uses in one printf. */
static const char *J(double v) {
  static char buf[8][40];
  static int k;
  char *b = buf[k++ & 7];
  if (!isfinite(v))
    return "null";
  snprintf(b, 40, "%.6g", v);
  return b;
}

/* ---- perf control ----------------------------------------------------------- */

/* With CM_BENCH_PERF_FIFO set (bench/run.sh --profile: perf record
 * --control fifo:FIFO -D -1), sends "enable" / "disable" so the profile
 * covers only the eigen-solves. */
static void perf_ctl(const char *cmd) {
  const char *path = getenv("CM_BENCH_PERF_FIFO");
  if (!path || !*path)
    return;
  FILE *f = fopen(path, "w");
  if (f) {
    fprintf(f, "%s\n", cmd);
    fclose(f);
  }
}

/* ---- dense LAPACK on the formed S ----------------------------------------- */

typedef struct {
  double t_form, t_syevr, t_syevd; /* medians, s */
  double omega[16];                /* top frequencies (dsyevr), descending */
  int n;                           /* entries in omega */
  int reps, dreps;                 /* runs of dsyevr, dsyevd */
} dense_res_t;

static int dense_run(cm_context_t *ctx, cm_operator_t *op, int nev, int reps,
                     int threads, dense_res_t *d) {
  int N = cm_operator_rows(op);
  double tf[16], tr[16], td[16];
  cm__blas_threads(threads); /* dense LAPACK gets the cores */
  double *S = NULL, *A = malloc(sizeof(double) * (size_t)N * (size_t)N);
  double *w = malloc(sizeof(double) * (size_t)N);
  double *Z = malloc(sizeof(double) * (size_t)N * (size_t)(nev + 1));
  double *Zf = NULL;
  int *isuppz = malloc(sizeof(int) * 2 * (size_t)(nev + 1)), m = 0, st = 0;
  if (!A || !w || !Z || !isuppz)
    return CM_NOMEM;
  if (reps > 16)
    reps = 16;
  /* a loaded machine can make one dense solve take minutes: after a run
   * over 120 s the rest are skipped (dense_reps says how many ran) */
  int done = 0;
  for (int r = 0; r < reps && !st; r++) {
    free(S);
    double t0 = cm_bench_now();
    S = cm_operator_dense_S(ctx, op);
    tf[r] = cm_bench_now() - t0;
    if (!S)
      return CM_NOMEM;
    memcpy(A, S, sizeof(double) * (size_t)N * (size_t)N);
    t0 = cm_bench_now();
    st = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'I', 'U', N, A, N, 0, 0,
                        N - nev + 1, N, 0.0, &m, w, Z, N, isuppz);
    tr[r] = cm_bench_now() - t0;
    done = r + 1;
    fprintf(stderr, "  dense rep %d: form S %.3f s, dsyevr top-%d %.3f s\n",
            r, tf[r], nev, tr[r]);
    if (tf[r] + tr[r] > 120)
      break;
  }
  d->n = m < 16 ? m : 16;
  for (int i = 0; i < d->n; i++)
    d->omega[i] = sqrt(fmax(0, w[m - 1 - i]));
  d->reps = done;
  int dreps = 0;
  Zf = malloc(sizeof(double) * (size_t)N * (size_t)N);
  for (int r = 0; r < reps && !st && Zf; r++) {
    memcpy(Zf, S, sizeof(double) * (size_t)N * (size_t)N);
    double t0 = cm_bench_now();
    st = LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'U', N, Zf, N, w);
    td[r] = cm_bench_now() - t0;
    dreps = r + 1;
    fprintf(stderr, "  dense rep %d: dsyevd (all pairs) %.3f s\n", r, td[r]);
    if (td[r] > 120)
      break;
  }
  d->dreps = dreps;
  d->t_form = cm_bench_median(tf, done);
  d->t_syevr = cm_bench_median(tr, done);
  d->t_syevd = dreps ? cm_bench_median(td, dreps) : NAN;
  free(S), free(A), free(w), free(Z), free(Zf), free(isuppz);
  cm__blas_single_thread();
  return st ? CM_NUMERIC : CM_OK;
}

/* ---- main ------------------------------------------------------------------ */

static void usage(FILE *f) {
  fprintf(f,
"usage: bench_modes --scene pile|crystal|fleet --size NC [options]\n"
"  --reps R         runs per figure, the median is reported (default 3)\n"
"  --threads T      threads of the analysis (default 2)\n"
"  --tol X          eigen tolerance (default 1e-6)\n"
"  --nev K          modes (default 6)\n"
"  --ncv N          Lanczos basis size (default: the library's choice)\n"
"  --method M       auto | lanczos | arpack (the analysis and the cmodes\n"
"                   solve of the exported operator; default auto)\n"
"  --dense-max N    dense dsyevr/dsyevd when nc <= N (default 0: off)\n"
"  --export FILE    write the operator's B (binary CSR and its column\n"
"                   groups) to FILE\n"
"  --no-mem --no-threads --no-parse --no-arpack   skip those measurements\n"
"  --fast           the analysis phases only (for tuning)\n");
}

/* One whole-operator solve, timed and logged (dies on failure). */
static double timed_solve(cm_context_t *ctx, cm_operator_t *op,
                          const cm_options_t *o, int run, const char *what,
                          int *matvecs) {
  cm_spectrum_t *sp = NULL;
  double t0 = cm_bench_now();
  int st = cm_spectrum_solve(ctx, op, -1, o, &sp);
  double t = cm_bench_now() - t0;
  if (st < 0)
    die(ctx, what, st);
  *matvecs = sp->matvecs;
  cm_spectrum_destroy(&sp);
  fprintf(stderr, "  spectrum run %d (%s): %.3f s, %d matvecs\n", run, what,
          t, *matvecs);
  return t;
}

int main(int argc, char **argv) {
  bench_opts_t bo = {"pile", 1e4, 3, 2, 1e-6, 6, 0, CM_METHOD_AUTO, 0, NULL, 1, 1, 1, 0, 1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (!strcmp(a, name) && v && ++i)
    if (ARG("--scene")) bo.scene = v;
    else if (ARG("--size")) bo.size = atof(v);
    else if (ARG("--reps")) bo.reps = atoi(v);
    else if (ARG("--threads")) bo.threads = atoi(v);
    else if (ARG("--tol")) bo.tol = atof(v);
    else if (ARG("--nev")) bo.nev = atoi(v);
    else if (ARG("--ncv")) bo.ncv = atoi(v);
    else if (ARG("--method")) bo.method = !strcmp(v, "arpack") ? CM_METHOD_ARPACK
                                          : !strcmp(v, "lanczos") ? CM_METHOD_LANCZOS
                                                                  : CM_METHOD_AUTO;
    else if (ARG("--dense-max")) bo.dense_max = atoi(v);
    else if (ARG("--export")) bo.export_path = v;
    else if (!strcmp(a, "--no-mem")) bo.mem = 0;
    else if (!strcmp(a, "--no-threads")) bo.thread_cmp = 0;
    else if (!strcmp(a, "--no-parse")) bo.parse = 0;
    else if (!strcmp(a, "--no-arpack")) bo.arpack = 0;
    else if (!strcmp(a, "--fast")) bo.fast = 1, bo.mem = bo.thread_cmp = bo.parse = 0;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
    else { usage(stderr); return 2; }
#undef ARG
  }
  if (bo.reps < 1) bo.reps = 1;
  if (bo.reps > 64) bo.reps = 64;
  int R = bo.reps;
  cm_options_t opts;
  cm_options_init(&opts);
  opts.tol = bo.tol;
  opts.modes = bo.nev;
  opts.ncv = bo.ncv;
  opts.method = bo.method;
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = bo.threads;
  /* every cmodes solve here runs ARPACK's BLAS on one thread, as
   * cm_analyze does (it sets and restores this itself); only the dense
   * LAPACK comparison gets T BLAS threads */
  cm__blas_single_thread();
  const char *ct = getenv("OPENBLAS_CORETYPE");
  fprintf(stderr, "bench_modes: %s ~%.3g contacts, %d reps, %d threads, tol %g,"
          " nev %d, OPENBLAS_CORETYPE=%s\n", bo.scene, bo.size, R, bo.threads,
          bo.tol, bo.nev, ct ? ct : "(unset)");

  /* ---- the scene: generated once, timed R times when cheap ---- */
  double t_gen[64], t_asm[64], t_fac[64], t_opr[64], t_eig[64], t_rep[64],
      t_tot[64];
  long units = 0;
  int gen_reps = 0;
  cm_scene_t *scene = NULL;
  double gen_total = 0;
  while (gen_reps < R && (gen_reps == 0 || gen_total < 5.0)) {
    cm_scene_destroy(&scene);
    double t0 = cm_bench_now();
    scene = make_scene(&ctx, bo.scene, bo.size, &units);
    t_gen[gen_reps] = cm_bench_now() - t0;
    gen_total += t_gen[gen_reps];
    fprintf(stderr, "  generate %d: %.3f s (%d bodies, %d contacts)\n",
            gen_reps, t_gen[gen_reps], scene->nbodies, scene->ncontacts);
    gen_reps++;
  }

  /* ---- whole analyses: cm_analyze, R times; peak memory of the first ---- */
  cm_report_t *rep = NULL;
  long rss_kib = -1;
  for (int r = 0; r < R; r++) {
    cm_report_destroy(&rep);
    int hwm = bo.mem && r == 0 && reset_hwm() == 0;
    double t0 = cm_bench_now();
    /* as `cmodes analyze` runs it: buffers kept from one solve to the
     * next within the analysis, none from the run before */
    cm_workspace_keep((size_t)1 << 30);
    int st = cm_analyze(&ctx, scene, &opts, &rep);
    cm_workspace_keep(0);
    t_tot[r] = cm_bench_now() - t0;
    if (hwm)
      rss_kib = vm_hwm_kib();
    if (st < 0)
      die(&ctx, "cm_analyze", st);
    t_asm[r] = rep->t_assemble, t_fac[r] = rep->t_factor;
    t_opr[r] = rep->t_operator, t_eig[r] = rep->t_eigen;
    t_rep[r] = t_tot[r] - rep->t_assemble - rep->t_factor - rep->t_operator -
               rep->t_eigen;
    fprintf(stderr,
            "  run %d: nc %d  assemble %.3f  factor %.3f  operator %.3f  "
            "eigen %.3f (%d matvecs, %.3g ms/step, of which matvec %.3g)  "
            "rest %.3f  total %.3f s  omega_max %.6g%s\n",
            r, rep->ncontacts, t_asm[r], t_fac[r], t_opr[r], t_eig[r],
            rep->matvecs, rep->matvecs ? 1e3 * t_eig[r] / rep->matvecs : 0.0,
            rep->matvecs ? 1e3 * rep->t_matvec / rep->matvecs : 0.0,
            t_rep[r], t_tot[r], rep->omega_max,
            rep->status ? " NOT CONVERGED" : "");
    if (hwm)
      fprintf(stderr, "  peak RSS (scene + analysis): %.1f MiB, %.0f bytes "
              "per contact\n", rss_kib / 1024.0,
              rss_kib * 1024.0 / rep->ncontacts);
  }
  int nc = rep->ncontacts;
  int an_matvecs = rep->matvecs, an_ncomp = rep->ncomp;
  int an_search = rep->search_matvecs;
  double omega_max = rep->omega_max, pc_ratio = rep->pc_ratio;
  const char *an_method = rep->method;
  double m_gen = cm_bench_median(t_gen, gen_reps), m_asm = cm_bench_median(t_asm, R),
         m_fac = cm_bench_median(t_fac, R), m_opr = cm_bench_median(t_opr, R),
         m_eig = cm_bench_median(t_eig, R), m_rep = cm_bench_median(t_rep, R),
         m_tot = cm_bench_median(t_tot, R);
  printf("{\"scene\":\"%s\",\"target\":%.0f,\"nc\":%d,\"units\":%ld,"
         "\"nbodies\":%d,\"threads\":%d,\"tol\":%g,\"nev\":%d,\"reps\":%d,"
         "\"openblas_coretype\":\"%s\",\"ncomp\":%d,\"method\":\"%s\","
         "\"t_generate\":%.6g,\"t_assemble\":%.6g,\"t_factor\":%.6g,"
         "\"t_operator\":%.6g,\"t_eigen\":%.6g,\"t_rest\":%.6g,"
         "\"t_total\":%.6g,\"matvecs\":%d,\"search_matvecs\":%d,"
         "\"omega_max\":%.15g,\"pc_ratio\":%.6g,\"peak_rss_kib\":%ld,"
         "\"generate_reps\":%d",
         bo.scene, bo.size, nc, units, scene->nbodies, bo.threads, bo.tol,
         bo.nev, R, ct ? ct : "", an_ncomp, an_method, m_gen, m_asm, m_fac,
         m_opr, m_eig, m_rep, m_tot, an_matvecs, an_search, omega_max,
         pc_ratio, rss_kib, gen_reps);
  fflush(stdout);
  cm_report_destroy(&rep);
  if (bo.fast) {
    printf("}\n");
    cm_scene_destroy(&scene);
    return 0;
  }

  /* ---- one operator, reused for the kernel-level measurements ---- */
  cm_system_t *sys = NULL;
  cm_operator_t *op = NULL, *op1 = NULL;
  int st = cm_system_assemble(&ctx, scene, &sys);
  if (!st)
    st = cm_operator_create(&ctx, sys, &op);
  if (st)
    die(&ctx, "operator", st);
  int nr = cm_operator_rows(op), ncol = cm_operator_cols(op);
  long nnz = cm_operator_nnz(op);

  /* per-contact estimate (and Gershgorin) alone */
  double t_b[64], lo = 0, hi = 0;
  for (int r = 0; r < R; r++) {
    double t0 = cm_bench_now();
    cm_operator_bounds(&ctx, op, &lo, &hi);
    t_b[r] = cm_bench_now() - t0;
  }
  double m_bounds = cm_bench_median(t_b, R);
  fprintf(stderr, "  bounds (per-contact + Gershgorin) %.4f s: omega in "
          "[%.6g, %.6g]\n", m_bounds, lo, hi);

  /* matvec and triad, side by side */
  double *x = malloc(sizeof(double) * ((size_t)nr + 1));
  double *y = malloc(sizeof(double) * ((size_t)nr + 1));
  for (int i = 0; i < nr; i++)
    x[i] = cm__hash_uniform(11, (uint64_t)i);
  const int calls = 50;
  double t_mv[64], t_mv1[64];
  for (int r = 0; r < R; r++) {
    double t0 = cm_bench_now();
    for (int c = 0; c < calls; c++)
      cm_operator_apply_S(op, -1, c % 2 ? y : x, c % 2 ? x : y);
    t_mv[r] = (cm_bench_now() - t0) / calls;
    double s = cm__nrm2(nr, x, 1); /* keep x bounded */
    for (int i = 0; i < nr && s > 0; i++)
      x[i] /= s;
  }
  double m_mv = cm_bench_median(t_mv, R);
  double bytes = cm__op_matvec_bytes(op); /* as the products store B, B^T */
  double triad = cm_bench_triad_gbs((size_t)1 << 25, bo.threads, 10);
  double mv_gbs = bytes / m_mv / 1e9;
  fprintf(stderr, "  S matvec %.4f ms (%d threads): %.2f GB/s; triad %.2f GB/s"
          " (nnz(B) %ld, %.1f MB per matvec)\n", 1e3 * m_mv, bo.threads,
          mv_gbs, triad, nnz, bytes / 1e6);

  /* spectrum on this operator (the comparison with scipy and SLEPc), and
   * the same with 1 thread, interleaved */
  cm_context_t ctx1;
  cm_context_init(&ctx1);
  ctx1.threads = 1;
  if (bo.thread_cmp && bo.threads != 1 &&
      (st = cm_operator_create(&ctx1, sys, &op1)))
    die(&ctx1, "operator (1 thread)", st);
  double t_sp[64], t_sp1[64], t_arp[64];
  int sp_mv = 0, sp_mv1 = 0, sp_conv = 0, arp_mv = 0, sp_search = 0;
  cm_options_t oarp = opts; /* ARPACK on the same operator, interleaved */
  oarp.method = CM_METHOD_ARPACK;
  double sp_omega[16] = {0};
  int sp_n = 0;
  for (int r = 0; r < R; r++) {
    cm_spectrum_t *sp = NULL;
    perf_ctl("enable");
    double t0 = cm_bench_now();
    st = cm_spectrum_solve(&ctx, op, -1, &opts, &sp);
    t_sp[r] = cm_bench_now() - t0;
    perf_ctl("disable");
    if (st < 0)
      die(&ctx, "cm_spectrum_solve", st);
    sp_mv = sp->matvecs, sp_conv = sp->converged;
    sp_search = sp->search_matvecs;
    sp_n = sp->nev < 16 ? sp->nev : 16;
    for (int i = 0; i < sp_n; i++)
      sp_omega[i] = sqrt(sp->lambda[i]);
    cm_spectrum_destroy(&sp);
    fprintf(stderr, "  spectrum run %d (%d threads): %.3f s, %d matvecs\n", r,
            bo.threads, t_sp[r], sp_mv);
    if (bo.arpack && opts.method != CM_METHOD_ARPACK)
      t_arp[r] = timed_solve(&ctx, op, &oarp, r, "ARPACK", &arp_mv);
    if (op1) {
      t_sp1[r] = timed_solve(&ctx1, op1, &opts, r, "1 thread", &sp_mv1);
      t0 = cm_bench_now();
      for (int c = 0; c < calls; c++)
        cm_operator_apply_S(op1, -1, c % 2 ? y : x, c % 2 ? x : y);
      t_mv1[r] = (cm_bench_now() - t0) / calls;
      double s = cm__nrm2(nr, x, 1);
      for (int i = 0; i < nr && s > 0; i++)
        x[i] /= s;
    }
  }
  double m_sp = cm_bench_median(t_sp, R);
  fprintf(stderr, "  spectrum: %.3f s median, %d matvecs x %.4f ms = %.0f%% "
          "in the S matvec\n", m_sp, sp_mv, 1e3 * m_mv,
          100.0 * sp_mv * m_mv / m_sp);
  double m_sp1 = op1 ? cm_bench_median(t_sp1, R) : NAN;
  double m_mv1 = op1 ? cm_bench_median(t_mv1, R) : NAN;
  printf(",\"nr\":%d,\"ncol\":%d,\"nnz_B\":%ld,\"t_bounds\":%.6g,"
         "\"omega_lower\":%.15g,\"omega_upper\":%.15g,\"t_matvec\":%.6g,"
         "\"matvec_bytes\":%.0f,\"matvec_gbs\":%.4g,\"triad_gbs\":%.4g,"
         "\"t_spectrum\":%.6g,\"spectrum_matvecs\":%d,"
         "\"spectrum_search_matvecs\":%d,"
         "\"spectrum_converged\":%d,\"t_spectrum_1t\":%s,"
         "\"spectrum_matvecs_1t\":%d,\"t_matvec_1t\":%s,\"omega\":[",
         nr, ncol, nnz, m_bounds, lo, hi, m_mv, bytes, mv_gbs, triad, m_sp,
         sp_mv, sp_search, sp_conv, J(m_sp1), sp_mv1, J(m_mv1));
  for (int i = 0; i < sp_n; i++)
    printf("%s%.15g", i ? "," : "", sp_omega[i]);
  printf("]");
  if (bo.arpack && opts.method != CM_METHOD_ARPACK)
    printf(",\"t_arpack\":%.6g,\"arpack_matvecs\":%d", cm_bench_median(t_arp, R),
           arp_mv);
  fflush(stdout);
  cm_operator_destroy(&op1);

  /* ---- export the operator's B for scipy and SLEPc ---- */
  if (bo.export_path) {
    int *Bp, *Bj;
    double *Bx;
    int ng = -1; /* the column groups of the products (-1: none) */
    const int *g0 = NULL;
    double t0 = cm_bench_now();
    if (cm__op_groups(op, &ng, &g0))
      ng = -1;
    if (extract_B(&ctx, sys, op, &Bp, &Bj, &Bx) ||
        write_B(bo.export_path, nr, ncol, Bp, Bj, Bx, ng, g0))
      die(&ctx, "export of B", CM_IO);
    fprintf(stderr, "  exported B (%d x %d, %d nonzeros, %d column groups) "
            "to %s in %.2f s\n", nr, ncol, Bp[nr], ng, bo.export_path,
            cm_bench_now() - t0);
    free(Bp), free(Bj), free(Bx);
  }

  /* ---- dense LAPACK on S, and cmodes at tol 1e-10 for the agreement ---- */
  if (bo.dense_max > 0 && nr <= bo.dense_max) {
    dense_res_t d;
    memset(&d, 0, sizeof d);
    if ((st = dense_run(&ctx, op, bo.nev, R, bo.threads, &d)))
      die(&ctx, "dense LAPACK", st);
    cm_options_t o10 = opts;
    o10.tol = 1e-10;
    double t10[64], om10[16] = {0};
    int n10 = 0, mv10 = 0;
    for (int r = 0; r < R; r++) {
      cm_spectrum_t *sp = NULL;
      double t0 = cm_bench_now();
      st = cm_spectrum_solve(&ctx, op, -1, &o10, &sp);
      t10[r] = cm_bench_now() - t0;
      if (st < 0)
        die(&ctx, "cm_spectrum_solve (tol 1e-10)", st);
      n10 = sp->nev < 16 ? sp->nev : 16;
      mv10 = sp->matvecs;
      for (int i = 0; i < n10; i++)
        om10[i] = sqrt(sp->lambda[i]);
      cm_spectrum_destroy(&sp);
    }
    double agree6 = 0, agree10 = 0;
    int k = d.n < sp_n ? d.n : sp_n;
    for (int i = 0; i < k; i++)
      agree6 = fmax(agree6, fabs(sp_omega[i] - d.omega[i]) / d.omega[0]);
    k = d.n < n10 ? d.n : n10;
    for (int i = 0; i < k; i++)
      agree10 = fmax(agree10, fabs(om10[i] - d.omega[i]) / d.omega[0]);
    double m10 = cm_bench_median(t10, R);
    fprintf(stderr, "  dense: form S %.3f s, dsyevr %.3f s, dsyevd %.3f s; "
            "cmodes tol 1e-10 %.4f s (%d matvecs); top-%d agreement %.2e "
            "(tol %g), %.2e (tol 1e-10)\n", d.t_form, d.t_syevr, d.t_syevd,
            m10, mv10, d.n, agree6, bo.tol, agree10);
    printf(",\"t_dense_form\":%.6g,\"t_dsyevr\":%.6g,\"t_dsyevd\":%s,"
           "\"t_spectrum_1e10\":%.6g,\"spectrum_matvecs_1e10\":%d,"
           "\"dense_agree\":%.3g,\"dense_agree_1e10\":%.3g,"
           "\"dsyevr_reps\":%d,\"dsyevd_reps\":%d",
           d.t_form, d.t_syevr, J(d.t_syevd), m10, mv10, agree6, agree10, d.reps, d.dreps);
  }

  /* ---- the JSON scene reader ---- */
  if (bo.parse) {
    char *text = cm_scene_to_json(&ctx, scene);
    if (!text)
      die(&ctx, "cm_scene_to_json", CM_NOMEM);
    size_t len = strlen(text);
    double t_p[64];
    for (int r = 0; r < R; r++) {
      cm_scene_t *s2 = NULL;
      double t0 = cm_bench_now();
      st = cm_scene_parse_json(&ctx, text, len, "bench", &s2);
      t_p[r] = cm_bench_now() - t0;
      if (st)
        die(&ctx, "cm_scene_parse_json", st);
      cm_scene_destroy(&s2);
    }
    double m_p = cm_bench_median(t_p, R);
    fprintf(stderr, "  JSON reader: %.1f MB in %.3f s = %.1f MB/s, %.3f s per "
            "million contacts\n", len / 1e6, m_p, len / 1e6 / m_p,
            m_p / (nc / 1e6));
    printf(",\"json_bytes\":%zu,\"t_parse\":%.6g", len, m_p);
    free(text);
  }
  printf("}\n");
  free(x), free(y);
  cm_operator_destroy(&op);
  cm_system_destroy(&sys);
  cm_scene_destroy(&scene);
  return 0;
}
