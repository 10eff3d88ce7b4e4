/* bench_block.c: what a block Krylov method would buy on a large pile
 * (issue 19, goals 1 and 3: "measure and choose among a block ... start").
 *
 * The library's product is memory-bound: one S x reads B's values and
 * indices once (149.5 MB on the 1e6 pile) and gathers x twice. A product
 * of b vectors at once (stored interleaved, b values per row side by side)
 * reads B once for all b, so its cost grows far slower than b; a block
 * Lanczos run needs more vectors than a single one for the same pairs, but
 * fewer passes over B. This program measures both halves of that trade on
 * one scene, side by side in one run:
 *
 *  1. the S product of b interleaved vectors (b = 1, 2, 3, 4, 6, 8) with
 *     bench_slots.h's copy of the library's grouped storage, B's float
 *     values and double sums (what the library's solve reads from tol
 *     1e-6), medians of alternating rounds, against the library's own
 *     product; each column of a block product is checked to be bit for bit
 *     the single product of that column;
 *  2. a block Lanczos run for each b (Gaussian start, full
 *     re-orthogonalisation twice by blocks, one unrestarted cycle, the
 *     projected matrix solved by LAPACK after every block step, stopped when
 *     the top --modes Ritz pairs pass ARPACK's rule |R s_last| <= tol theta
 *     on the same float operator): block products, vectors, and the time
 *     the products would take at part 1's pace.
 *
 * b = 1 is plain Lanczos with full re-orthogonalisation: its count is the
 * Krylov space's own (the library's one unrestarted cycle, bench_step's
 * goal-3 row). Not the library's solver: no restart, no probabilistic
 * bound, no search for copies; its re-orthogonalisation is timed apart and
 * is not what the library's partial one would cost. Not a test: it
 * asserts nothing (the bits check is printed).
 *
 *   bench_block --scene FILE [--modes 6] [--tol 1e-6] [--threads 2]
 *               [--ncv 256] [--reps 9] [--blocks 1,2,3,4,6,8]
 *
 * FILE: any scene file; `bench_step --size 1e6 --reps 0 --save F.cmsb`
 * writes bench_step's 1e6 pile. */
#include "bench_machine.h"
#include "bench_slots.h"
#include "bench_time.h"
#include "spectrum/spectrum_internal.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLK_MAX 8  /* most vectors in a block */
#define BLK_GMAX 8 /* most columns in a group */
#define BLK_PF 128 /* entries ahead the gathered vector is prefetched */

/* ---- the block product: t = B^T x, then y = B t, b vectors interleaved
 * (row i of a block is b doubles side by side). Each column's sums run in
 * the order of bench_slots.h's single kernels: the same bits. */

static inline __attribute__((always_inline)) void
blk_groups(const f32_t *L, int G, int b, int g0, int g1, const double *y,
           double *x) {
  int epf = L->Gp[L->ng] - BLK_PF;
  for (int gb = g0; gb < g1; gb++) {
    double s[BLK_GMAX * BLK_MAX] = {0};
    for (int e = L->Gp[gb]; e < L->Gp[gb + 1]; e++) {
      const double *v = y + (size_t)L->Gj[e] * b;
      const float *a = L->Gxf + (size_t)e * G;
      __builtin_prefetch(a + 1024);
      if (e < epf)
        __builtin_prefetch(y + (size_t)L->Gj[e + BLK_PF] * b);
      for (int t = 0; t < G; t++) {
        double at = a[t];
        for (int c = 0; c < b; c++)
          s[t * b + c] += at * v[c];
      }
    }
    double *xo = x + (size_t)L->g0[gb] * b;
    for (int t = 0; t < G * b; t++)
      xo[t] = s[t];
  }
}

static inline __attribute__((always_inline)) void
blk_slots(const f32_t *L, int G, int b, int i0, int i1, const double *x,
          double *y) {
  int qpf = L->Sp[L->nr] - BLK_PF;
  for (int i = i0; i < i1; i++) {
    double s[BLK_MAX] = {0};
    for (int q = L->Sp[i]; q < L->Sp[i + 1]; q++) {
      const float *a = L->Sxf + (size_t)q * G;
      const double *xs = x + (size_t)(L->Sc[q] >> 3) * b;
      __builtin_prefetch(a + 1024);
      if (q < qpf) {
        const double *xp = x + (size_t)(L->Sc[q + BLK_PF] >> 3) * b;
        __builtin_prefetch(xp);
        __builtin_prefetch(xp + (size_t)G * b - 1);
      }
      for (int t = 0; t < G; t++) {
        double at = a[t];
        for (int c = 0; c < b; c++)
          s[c] += at * xs[t * b + c];
      }
    }
    for (int c = 0; c < b; c++)
      y[(size_t)i * b + c] = s[c];
  }
}

/* y = S32 x for b interleaved vectors (t: scratch of ncol x b), the sizes
 * literal constants under the pragmas (F32_CHUNKS) */
#define BLK_RUN(G, B)                                                          \
  do {                                                                         \
    F32_CHUNKS(L->ng, g0, g1, blk_groups(L, G, B, g0, g1, x, t));              \
    F32_CHUNKS(L->nr, i0, i1, blk_slots(L, G, B, i0, i1, t, y));               \
  } while (0)

static void blk_apply(const f32_t *L, int b, int threads, const double *x,
                      double *t, double *y) {
#define BLK_B(G)                                                               \
  switch (b) {                                                                 \
  case 1:                                                                      \
    BLK_RUN(G, 1);                                                             \
    break;                                                                     \
  case 2:                                                                      \
    BLK_RUN(G, 2);                                                             \
    break;                                                                     \
  case 3:                                                                      \
    BLK_RUN(G, 3);                                                             \
    break;                                                                     \
  case 4:                                                                      \
    BLK_RUN(G, 4);                                                             \
    break;                                                                     \
  case 6:                                                                      \
    BLK_RUN(G, 6);                                                             \
    break;                                                                     \
  case 8:                                                                      \
    BLK_RUN(G, 8);                                                             \
    break;                                                                     \
  default:                                                                     \
    BLK_RUN(G, b);                                                             \
  }
  switch (L->G) {
  case 3:
    BLK_B(3);
    break;
  case 6:
    BLK_B(6);
    break;
  default:
    BLK_B(L->G);
  }
#undef BLK_B
}

/* ---- part 1: the product of b vectors against b single ones ----------- */

typedef struct {
  int b;
  double ms;            /* median ms of one block product */
  int same;             /* every column bit for bit the single product's */
  int prods;            /* part 2: block products to convergence (0: none) */
  double lam;           /* its nev-th eigenvalue (of S32) */
  double solve, reorth; /* part 2's seconds: whole, re-orthogonalisation */
} blk_row_t;

/* Median ms of a product of b interleaved vectors (rounds alternate over
 * the rows), and the bits check against the single kernel. */
static void blk_measure(const f32_t *L, int threads, int reps, blk_row_t *R,
                        int nrow, double *lib_ms, cm_operator_t *op) {
  size_t nr = (size_t)L->nr, nc = (size_t)L->ncol;
  double *x = malloc(sizeof(double) * nr * BLK_MAX);
  double *y = malloc(sizeof(double) * nr * BLK_MAX);
  double *t = malloc(sizeof(double) * (nc + 1) * BLK_MAX);
  double *ys = malloc(sizeof(double) * nr), *ts = malloc(sizeof(double) * nc);
  double *xs = malloc(sizeof(double) * nr);
  double *tm = malloc(sizeof(double) * (size_t)(nrow + 1) * (size_t)reps);
  if (!x || !y || !t || !ys || !ts || !xs || !tm)
    goto out;
  for (size_t i = 0; i < nr * BLK_MAX; i++)
    x[i] = cm__hash_uniform(11, (uint64_t)i) - 0.5;
  memset(y, 0, sizeof(double) * nr * BLK_MAX);
  memset(t, 0, sizeof(double) * (nc + 1) * BLK_MAX);
  for (int r = 0; r < reps; r++) {
    for (int k = 0; k <= nrow; k++) {
      double t0 = cm_bench_now();
      for (int c = 0; c < 5; c++) {
        if (k == nrow) { /* the library's own S product */
          cm__op_BT(op, -1, x, t);
          cm__op_B(op, -1, t, y);
        } else
          blk_apply(L, R[k].b, threads, x, t, y);
      }
      tm[(size_t)k * reps + r] = (cm_bench_now() - t0) / 5;
    }
  }
  for (int k = 0; k <= nrow; k++) {
    double ms = 1e3 * cm_bench_median(tm + (size_t)k * reps, reps);
    if (k == nrow)
      *lib_ms = ms;
    else
      R[k].ms = ms;
  }
  /* bits: each column of the block product against the single product */
  for (int k = 0; k < nrow; k++) {
    int b = R[k].b, same = 1;
    blk_apply(L, b, threads, x, t, y);
    for (int c = 0; c < b && same; c++) {
      for (size_t i = 0; i < nr; i++)
        xs[i] = x[i * b + c];
      f32_apply_S(L, 1, threads, xs, ts, ys);
      for (size_t i = 0; i < nr && same; i++)
        same = ys[i] == y[i * b + c];
    }
    R[k].same = same;
  }
out:
  free(x), free(y), free(t), free(ys), free(ts), free(xs), free(tm);
}

/* ---- part 2: block Lanczos, one unrestarted cycle --------------------- */

/* Q R of the N x b block W in place (Householder, LAPACK); R (b x b,
 * column-major) into R. Returns 0, or -1 when LAPACK fails. */
static int blk_qr(int N, int b, double *W, double *R) {
  double tau[BLK_MAX];
  if (LAPACKE_dgeqrf(LAPACK_COL_MAJOR, N, b, W, N, tau))
    return -1;
  for (int c = 0; c < b; c++)
    for (int r = 0; r < b; r++)
      R[(size_t)c * b + r] = r <= c ? W[(size_t)c * N + r] : 0;
  return LAPACKE_dorgqr(LAPACK_COL_MAJOR, N, b, b, W, N, tau) ? -1 : 0;
}

/* W -= V C, C = V^T W, twice (classical Gram-Schmidt by blocks); the
 * coefficients summed into Hc (kk x b, leading dimension ldh). */
static void blk_reorth(int N, int kk, int b, const double *V, double *W,
                       double *C, double *Hc, int ldh) {
  for (int pass = 0; pass < 2; pass++) {
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, kk, b, N, 1.0, V, N, W,
                N, 0.0, C, kk);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, N, b, kk, -1.0, V, N,
                C, kk, 1.0, W, N);
    for (int c = 0; c < b; c++)
      for (int r = 0; r < kk; r++)
        Hc[(size_t)c * ldh + r] += C[(size_t)c * kk + r];
  }
}

/* One run for block size b: block products until the top nev pairs pass
 * the test, or 0 when the basis (mmax vectors) filled first; lam: the
 * nev-th Ritz value then. */
static int blk_lanczos(const f32_t *L, int threads, int b, int nev, double tol,
                       int mmax, blk_row_t *row) {
  int N = L->nr, steps = mmax / b, ld = steps * b + b, conv = 0;
  double *V = malloc(sizeof(double) * (size_t)N * (size_t)ld);
  double *X = malloc(sizeof(double) * (size_t)N * b);
  double *Y = malloc(sizeof(double) * (size_t)N * b);
  double *T = malloc(sizeof(double) * ((size_t)L->ncol + 1) * b);
  double *H = calloc((size_t)ld * ld, sizeof(double));
  double *A = malloc(sizeof(double) * (size_t)ld * ld);
  double *w = malloc(sizeof(double) * (size_t)ld);
  double *C = malloc(sizeof(double) * (size_t)ld * b);
  double R[BLK_MAX * BLK_MAX];
  row->prods = 0, row->lam = NAN, row->solve = row->reorth = 0;
  if (!V || !X || !Y || !T || !H || !A || !w || !C)
    goto out;
  double t0 = cm_bench_now();
  for (size_t i = 0; i < (size_t)N * b; i++) /* the Gaussian start */
    V[i] = cm__gauss(0x626c6f636bULL, i);
  if (blk_qr(N, b, V, R))
    goto out;
  for (int j = 0; j < steps; j++) {
    int k = j * b, kk = k + b;
    double *W = V + (size_t)kk * N;
    for (int i = 0; i < N; i++) /* interleave block j */
      for (int c = 0; c < b; c++)
        X[(size_t)i * b + c] = V[(size_t)(k + c) * N + i];
    blk_apply(L, b, threads, X, T, Y);
    for (int i = 0; i < N; i++)
      for (int c = 0; c < b; c++)
        W[(size_t)c * N + i] = Y[(size_t)i * b + c];
    double tr = cm_bench_now();
    blk_reorth(N, kk, b, V, W, C, H + (size_t)k * ld, ld);
    row->reorth += cm_bench_now() - tr;
    if (blk_qr(N, b, W, R))
      goto out;
    for (int c = 0; c < b; c++) /* the subdiagonal block R_{j+1} */
      for (int r = 0; r < b; r++)
        H[(size_t)(k + c) * ld + kk + r] = R[(size_t)c * b + r];
    row->prods = j + 1;
    if (kk < nev + 1)
      continue;
    for (int c = 0; c < kk; c++) /* the symmetric kk x kk projection */
      for (int r = 0; r < kk; r++)
        A[(size_t)c * kk + r] =
            r >= c ? H[(size_t)c * ld + r] : H[(size_t)r * ld + c];
    if (LAPACKE_dsyev(LAPACK_COL_MAJOR, 'V', 'L', kk, A, kk, w))
      goto out;
    int good = 0;
    for (int p = kk - nev; p < kk; p++) { /* the top nev: |R s_last| */
      const double *s = A + (size_t)p * kk + k;
      double r2 = 0;
      for (int r = 0; r < b; r++) {
        double v = 0;
        for (int c = r; c < b; c++)
          v += R[(size_t)c * b + r] * s[c];
        r2 += v * v;
      }
      good += sqrt(r2) <= tol * fabs(w[p]);
    }
    if (good == nev) {
      conv = 1;
      row->lam = w[kk - nev];
      break;
    }
  }
  row->solve = cm_bench_now() - t0;
out:
  if (!conv)
    row->prods = 0;
  free(V), free(X), free(Y), free(T), free(H), free(A), free(w), free(C);
  return conv;
}

/* ---- the program ------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f, "usage: bench_block --scene FILE [--modes K] [--tol T] "
             "[--threads T] [--ncv M] [--reps R] [--blocks 1,2,4]\n");
}

int main(int argc, char **argv) {
  const char *scene_file = NULL, *blocks = "1,2,3,4,6,8";
  double tol = 1e-6;
  int nev = 6, threads = 2, mmax = 256, reps = 9;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    }
    if (!v) {
      fprintf(stderr, "bench_block: %s: a value is missing\n", a);
      usage(stderr);
      return 2;
    }
    i++;
    if (!strcmp(a, "--scene"))
      scene_file = v;
    else if (!strcmp(a, "--modes"))
      nev = atoi(v);
    else if (!strcmp(a, "--tol"))
      tol = atof(v);
    else if (!strcmp(a, "--threads"))
      threads = atoi(v);
    else if (!strcmp(a, "--ncv"))
      mmax = atoi(v);
    else if (!strcmp(a, "--reps"))
      reps = atoi(v);
    else if (!strcmp(a, "--blocks"))
      blocks = v;
    else {
      fprintf(stderr, "bench_block: unknown option %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (nev < 1 || threads < 1 || reps < 1 || mmax < 2 * nev || !(tol > 0) ||
      !scene_file) {
    fprintf(stderr, "bench_block: --scene FILE is needed; --modes, --threads, "
                    "--reps at least 1, --ncv at least twice --modes, --tol "
                    "above 0\n");
    usage(stderr);
    return 2;
  }
  blk_row_t R[16];
  int nrow = 0;
  for (const char *p = blocks; *p && nrow < 16;) {
    int b = (int)strtol(p, (char **)&p, 10);
    if (b < 1 || b > BLK_MAX || (*p && *p != ',')) {
      fprintf(stderr, "bench_block: --blocks: sizes 1 to %d, comma-separated\n",
              BLK_MAX);
      return 2;
    }
    R[nrow++] = (blk_row_t){.b = b};
    if (*p == ',')
      p++;
  }
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = threads;
  cm_scene_t *s = NULL;
  int st = cm_scene_read_file(&ctx, scene_file, &s);
  cm_system_t *sys = NULL;
  cm_operator_t *op = NULL;
  if (st || cm_system_assemble(&ctx, s, &sys) ||
      cm_operator_create(&ctx, sys, &op)) {
    fprintf(stderr, "bench_block: %s\n", ctx.message);
    cm_system_destroy(&sys);
    cm_scene_destroy(&s);
    return 1;
  }
  f32_t L;
  if (f32_build(op, &L)) {
    fprintf(stderr, "bench_block: the operator's groups are not of one size, "
                    "or out of memory\n");
    f32_free(&L);
    cm_operator_destroy(&op);
    cm_system_destroy(&sys);
    cm_scene_destroy(&s);
    return 1;
  }
  double bytes = cm__op_matvec_bytes(op), lib_ms = NAN;
  double gbs = cm_bench_triad_gbs((size_t)1 << 25, threads, 10);
  cm_bench_machine(stdout);
  printf("%d contacts; S is %d x %d (B %d x %d, groups of %d); %d threads; "
         "tol %g, %d modes, at most %d vectors; the library's product reads "
         "%.1f MB; triad %.1f GB/s\n\n",
         s->ncontacts, L.nr, L.nr, L.nr, L.ncol, L.G, threads, tol, nev, mmax,
         bytes / 1e6, gbs);
  blk_measure(&L, threads, reps, R, nrow, &lib_ms, op);
  for (int k = 0; k < nrow; k++)
    blk_lanczos(&L, threads, R[k].b, nev, tol, mmax, &R[k]);
  double one = NAN, vec1 = NAN;
  for (int k = 0; k < nrow; k++)
    if (R[k].b == 1)
      one = R[k].ms, vec1 = R[k].prods;
  printf("The library's S product (double values): %.2f ms a product, "
         "median of %d rounds of 5.\n\n",
         lib_ms, reps);
  printf("| b | block product ms | per vector ms | against b single products "
         "| columns bit for bit | block products | vectors | products at "
         "this pace s | against b = 1 | nev-th value | run s | "
         "re-orthogonalisation s |\n|---|---|---|---|---|---|---|---|---|---|"
         "---|---|\n");
  for (int k = 0; k < nrow; k++) {
    blk_row_t *r = &R[k];
    double pace = r->prods * r->ms / 1e3, base = vec1 * one / 1e3;
    printf("| %d | %.2f | %.2f | %.3f | %s | ", r->b, r->ms, r->ms / r->b,
           r->ms / (r->b * one), r->same ? "yes" : "NO");
    if (r->prods > 0)
      printf("%d | %d | %.3f | ", r->prods, r->prods * r->b, pace);
    else
      printf("not within %d vectors | | | ", mmax);
    if (r->prods > 0 && vec1 > 0)
      printf("%.3f | ", pace / base);
    else
      printf("| ");
    if (r->prods > 0)
      printf("%.10g | ", r->lam);
    else
      printf("- | ");
    printf("%.2f | %.2f |\n", r->solve, r->reorth);
  }
  printf("\nb = 1 is the Krylov space's own count (one unrestarted cycle). "
         "A block product reads B once for b vectors; 'products at this "
         "pace' is block products x block product ms, against b = 1's "
         "products x its ms.\n");
  f32_free(&L);
  cm_operator_destroy(&op);
  cm_system_destroy(&sys);
  cm_scene_destroy(&s);
  return 0;
}
