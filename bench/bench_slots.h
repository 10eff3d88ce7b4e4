/* bench_slots.h: a bench-only copy of the operator's grouped products, for
 * the bench programs (bench_step's --f32, bench_block).
 *
 * B by slots and B^T by groups, as the library stores them, built from B's
 * CSR (cm_operator_csr) and the operator's groups (cm__op_groups), once
 * with double values and once with float values and double accumulation;
 * rows in chunks of 4096 on all threads, group sums in double. Measured
 * against the library's own product, it says what a storage or a kernel
 * would buy before anyone builds it into the solver. */
#ifndef CM_BENCH_SLOTS_H
#define CM_BENCH_SLOTS_H

#include "cmodes.h"
#include "internal.h"
#include "operator/operator_internal.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int nr, ncol, ng, G; /* rows, columns, groups, common group size */
  int *Sp, *Gp, *Gj;   /* slots of each row; entries of each group, rows */
  unsigned *Sc;        /* slot: first column << 3 | (size - 1) */
  const int *g0;       /* first column of each group (the operator's) */
  double *Sxd, *Gxd;   /* G values per slot / entry, double */
  float *Sxf, *Gxf;    /* the same, float */
} f32_t;

#define F32_CHUNK 4096
/* y = B t (slots) and t = B^T x (groups) over rows / groups [i0, i1), for
 * value type T and group size G (a constant where it is inlined) */
#define F32_KERNELS(T, SX, GX, SUF)                                            \
  static inline __attribute__((always_inline)) void f32_slots_##SUF(           \
      const f32_t *L, int G, int i0, int i1, const double *x, double *y) {     \
    for (int i = i0; i < i1; i++) {                                            \
      double s = 0;                                                            \
      for (int q = L->Sp[i]; q < L->Sp[i + 1]; q++) {                          \
        const T *a = L->SX + (size_t)q * G;                                    \
        const double *xs = x + (L->Sc[q] >> 3);                                \
        __builtin_prefetch(a + 512);                                           \
        _Pragma("GCC unroll 8") for (int t = 0; t < G; t++) s +=               \
            (double)a[t] * xs[t];                                              \
      }                                                                        \
      y[i] = s;                                                                \
    }                                                                          \
  }                                                                            \
  static inline __attribute__((always_inline)) void f32_groups_##SUF(          \
      const f32_t *L, int G, int b0, int b1, const double *y, double *x) {     \
    for (int b = b0; b < b1; b++) {                                            \
      double s[8] = {0};                                                       \
      for (int e = L->Gp[b]; e < L->Gp[b + 1]; e++) {                          \
        double v = y[L->Gj[e]];                                                \
        const T *a = L->GX + (size_t)e * G;                                    \
        __builtin_prefetch(a + 512);                                           \
        _Pragma("GCC unroll 8") for (int t = 0; t < G; t++) s[t] +=            \
            (double)a[t] * v;                                                  \
      }                                                                        \
      _Pragma("GCC unroll 8") for (int t = 0; t < G; t++) x[L->g0[b] + t] =    \
          s[t];                                                                \
    }                                                                          \
  }
F32_KERNELS(double, Sxd, Gxd, d)
F32_KERNELS(float, Sxf, Gxf, f)

/* The statements after lo, hi for each chunk [lo, hi) of F32_CHUNK rows
 * out of [0, n), the chunks on the `threads` threads of the caller's
 * variable. A macro, so that the sizes the statements pass to an inlined
 * kernel stay literal constants: OpenMP outlines a parallel loop's body
 * before inlining, so a function holding the pragma would hand them to the
 * kernel as variables (bench_block's first kernel: 4x slower). */
#define F32_CHUNKS(n, lo, hi, ...)                                             \
  do {                                                                         \
    int f32_nc_ = ((n) + F32_CHUNK - 1) / F32_CHUNK;                           \
    _Pragma("omp parallel for schedule(static) num_threads(threads)") for (    \
        int f32_c_ = 0; f32_c_ < f32_nc_; f32_c_++) {                          \
      int lo = f32_c_ * F32_CHUNK;                                             \
      int hi = lo + F32_CHUNK < (n) ? lo + F32_CHUNK : (n);                    \
      __VA_ARGS__;                                                             \
    }                                                                          \
  } while (0)

/* y = S x = B (B^T x), t scratch of ncol; single: float values */
static inline void f32_apply_S(const f32_t *L, int single, int threads,
                               const double *x, double *t, double *y) {
#define F32_RUN(G)                                                             \
  do {                                                                         \
    if (single) {                                                              \
      F32_CHUNKS(L->ng, b0, b1, f32_groups_f(L, G, b0, b1, x, t));             \
      F32_CHUNKS(L->nr, i0, i1, f32_slots_f(L, G, i0, i1, t, y));              \
    } else {                                                                   \
      F32_CHUNKS(L->ng, b0, b1, f32_groups_d(L, G, b0, b1, x, t));             \
      F32_CHUNKS(L->nr, i0, i1, f32_slots_d(L, G, i0, i1, t, y));              \
    }                                                                          \
  } while (0)
  switch (L->G) {
  case 2:
    F32_RUN(2);
    break;
  case 3:
    F32_RUN(3);
    break;
  case 6:
    F32_RUN(6);
    break;
  default:
    F32_RUN(L->G);
    break;
  }
#undef F32_RUN
}

static inline void f32_free(f32_t *L) {
  free(L->Sp), free(L->Gp), free(L->Gj), free(L->Sc);
  free(L->Sxd), free(L->Gxd), free(L->Sxf), free(L->Gxf);
}

/* The slots and groups from B's CSR; 0, or -1 when the groups are not of
 * one size (then nothing is measured) or memory ran out. */
static inline int f32_build(cm_operator_t *op, f32_t *L) {
  const int *Bp, *Bj, *g0;
  const double *Bx;
  int ng;
  memset(L, 0, sizeof *L);
  if (cm_operator_csr(op, &Bp, &Bj, &Bx) || cm__op_groups(op, &ng, &g0))
    return -1;
  L->nr = cm_operator_rows(op), L->ncol = cm_operator_cols(op);
  L->ng = ng, L->g0 = g0, L->G = ng ? g0[1] - g0[0] : 0;
  for (int b = 0; b < ng; b++)
    if (g0[b + 1] - g0[b] != L->G)
      return -1;
  int G = L->G, nr = L->nr;
  size_t ns = 0; /* a slot per run of a row's entries in one group */
  L->Sp = calloc((size_t)nr + 1, sizeof(int));
  L->Gp = calloc((size_t)ng + 1, sizeof(int));
  if (!L->Sp || !L->Gp || G <= 0)
    return -1;
  for (int r = 0; r < nr; r++) {
    for (int q = Bp[r]; q < Bp[r + 1]; q++)
      if (q == Bp[r] || Bj[q] / G != Bj[q - 1] / G) {
        ns++;
        L->Gp[Bj[q] / G + 1]++;
      }
    L->Sp[r + 1] = (int)ns;
  }
  for (int b = 0; b < ng; b++)
    L->Gp[b + 1] += L->Gp[b];
  L->Sc = malloc(ns * sizeof(unsigned)), L->Gj = malloc(ns * sizeof(int));
  L->Sxd = calloc(ns * (size_t)G, sizeof(double));
  L->Gxd = calloc(ns * (size_t)G, sizeof(double));
  L->Sxf = calloc(ns * (size_t)G, sizeof(float));
  L->Gxf = calloc(ns * (size_t)G, sizeof(float));
  int *next = malloc(((size_t)ng + 1) * sizeof(int));
  if (!L->Sc || !L->Gj || !L->Sxd || !L->Gxd || !L->Sxf || !L->Gxf || !next) {
    free(next);
    return -1;
  }
  memcpy(next, L->Gp, (size_t)ng * sizeof(int));
  for (int r = 0; r < nr; r++) {
    size_t q = (size_t)L->Sp[r];
    for (int e = Bp[r]; e < Bp[r + 1]; q++) {
      int b = Bj[e] / G;
      size_t ge = (size_t)next[b]++;
      L->Sc[q] = (unsigned)(b * G) << 3 | (unsigned)(G - 1);
      L->Gj[ge] = r;
      for (; e < Bp[r + 1] && Bj[e] / G == b; e++) {
        size_t t = (size_t)(Bj[e] - b * G);
        L->Sxd[q * G + t] = L->Gxd[ge * G + t] = Bx[e];
        L->Sxf[q * G + t] = L->Gxf[ge * G + t] = (float)Bx[e];
      }
    }
  }
  free(next);
  return 0;
}

/* ---- one pass: A = B^T B, each slot read once --------------------------
 * v = B^T (B u) over the columns (u, v of size ncol): for every row, its
 * sum s over its slots (a gather from u), then v += s a over the same
 * slots (a scatter), so B's slots are read once a product and B^T's groups
 * not at all. The nonzero eigenvalues of A are those of S = B B^T. Rows go
 * to the threads in T consecutive runs; rows are sorted by their first
 * column, so thread t's rows write only columns at or past its first row's
 * first column c_t: it owns [c_t, c_t+1) and keeps the entries its rows
 * would write past c_t+1 in a list of its own, added by their owners after
 * a barrier. A measurement, not the solver's kernel: the order of the sums
 * into an owned column then depends on T. */
typedef struct {
  int T;        /* threads the ownership was cut for */
  int *r0, *c0; /* size T + 1: each thread's first row and first column */
  int *nd;      /* size T: entries deferred by each thread (last product) */
  int *cap;     /* size T: room of each list */
  int **dq;     /* per thread: slot of each deferred entry */
  double **ds;  /* per thread: its row sum */
} one_t;

static inline void one_free(one_t *O) {
  for (int t = 0; O->dq && t < O->T; t++)
    free(O->dq[t]), free(O->ds[t]);
  free(O->r0), free(O->c0), free(O->nd), free(O->cap), free(O->dq), free(O->ds);
  memset(O, 0, sizeof *O);
}

static inline int one_build(const f32_t *L, int T, one_t *O) {
  memset(O, 0, sizeof *O);
  O->T = T;
  O->r0 = calloc((size_t)T + 1, sizeof(int));
  O->c0 = calloc((size_t)T + 1, sizeof(int));
  O->nd = calloc((size_t)T, sizeof(int));
  O->cap = calloc((size_t)T, sizeof(int));
  O->dq = calloc((size_t)T, sizeof(int *));
  O->ds = calloc((size_t)T, sizeof(double *));
  if (!O->r0 || !O->c0 || !O->nd || !O->cap || !O->dq || !O->ds)
    return -1;
  for (int t = 0; t <= T; t++) {
    int r = (int)((long)L->nr * t / T);
    O->r0[t] = r;
    O->c0[t] = t == 0 ? 0
               : t == T || L->Sp[r] == L->Sp[r + 1]
                   ? L->ncol
                   : (int)(L->Sc[L->Sp[r]] >> 3);
  }
  for (int t = 1; t <= T; t++) /* empty rows: keep the cuts ascending */
    if (O->c0[t] < O->c0[t - 1])
      O->c0[t] = O->c0[t - 1];
  for (int t = 0; t < T; t++) { /* room: the entries past the thread's end */
    int n = 0;
    for (int i = O->r0[t]; i < O->r0[t + 1]; i++)
      for (int q = L->Sp[i]; q < L->Sp[i + 1]; q++)
        n += (int)(L->Sc[q] >> 3) >= O->c0[t + 1];
    O->cap[t] = n;
    O->dq[t] = malloc(((size_t)n + 1) * sizeof(int));
    O->ds[t] = malloc(((size_t)n + 1) * sizeof(double));
    if (!O->dq[t] || !O->ds[t])
      return -1;
  }
  return 0;
}

#ifndef ONE_AHEAD
#define ONE_AHEAD 16 /* slots ahead whose columns are asked for */
#endif
static inline __attribute__((always_inline)) void
one_rows(const f32_t *L, const one_t *O, int G, int t, const double *u,
         double *v) {
  int cend = O->c0[t + 1], n = 0;
  int *dq = O->dq[t];
  double *ds = O->ds[t];
  for (int i = O->r0[t]; i < O->r0[t + 1]; i++) {
    double s = 0;
    int q0 = L->Sp[i], q1 = L->Sp[i + 1];
    if (q1 + ONE_AHEAD < L->Sp[L->nr]) { /* the columns a few rows ahead */
      unsigned cq = L->Sc[q1 + ONE_AHEAD] >> 3;
      __builtin_prefetch(u + cq);
      __builtin_prefetch(v + cq, 1);
    }
    for (int q = q0; q < q1; q++) {
      const float *a = L->Sxf + (size_t)q * G;
      const double *us = u + (L->Sc[q] >> 3);
      __builtin_prefetch(a + 512);
      _Pragma("GCC unroll 8") for (int k = 0; k < G; k++) s +=
          (double)a[k] * us[k];
    }
    for (int q = q0; q < q1; q++) {
      int c = (int)(L->Sc[q] >> 3);
      if (c >= cend) {
        dq[n] = q, ds[n++] = s;
        continue;
      }
      const float *a = L->Sxf + (size_t)q * G;
      _Pragma("GCC unroll 8") for (int k = 0; k < G; k++) v[c + k] +=
          (double)a[k] * s;
    }
  }
  O->nd[t] = n;
}

/* v = A u = B^T (B u) in one pass over the slots (float values, double
 * sums); the threads must be O->T */
static inline void one_apply_A(const f32_t *L, one_t *O, const double *u,
                               double *v) {
#define ONE_RUN(G)                                                             \
  _Pragma("omp parallel num_threads(O->T)") {                                  \
    int t = omp_get_thread_num();                                              \
    memset(v + O->c0[t], 0,                                                    \
           sizeof(double) * (size_t)(O->c0[t + 1] - O->c0[t]));                \
    _Pragma("omp barrier") one_rows(L, O, G, t, u, v);                         \
    _Pragma("omp barrier") for (int w = 0; w < t;                              \
                                w++) for (int e = 0; e < O->nd[w]; e++) {      \
      int q = O->dq[w][e], c = (int)(L->Sc[q] >> 3);                           \
      if (c < O->c0[t] || c >= O->c0[t + 1])                                   \
        continue;                                                              \
      const float *a = L->Sxf + (size_t)q * G;                                 \
      for (int k = 0; k < G; k++)                                              \
        v[c + k] += (double)a[k] * O->ds[w][e];                                \
    }                                                                          \
  }
  switch (L->G) {
  case 3:
    ONE_RUN(3);
    break;
  case 6:
    ONE_RUN(6);
    break;
  default:
    ONE_RUN(L->G);
    break;
  }
#undef ONE_RUN
}

/* v = A u in two passes as the library runs S: t = B u by slots, then
 * v = B^T t by groups (float values, double sums) */
static inline void two_apply_A(const f32_t *L, int threads, const double *u,
                               double *t, double *v) {
#define TWO_RUN(G)                                                             \
  do {                                                                         \
    F32_CHUNKS(L->nr, i0, i1, f32_slots_f(L, G, i0, i1, u, t));                \
    F32_CHUNKS(L->ng, b0, b1, f32_groups_f(L, G, b0, b1, t, v));               \
  } while (0)
  switch (L->G) {
  case 3:
    TWO_RUN(3);
    break;
  case 6:
    TWO_RUN(6);
    break;
  default:
    TWO_RUN(L->G);
    break;
  }
#undef TWO_RUN
}

/* ---- another column order: breadth first ------------------------------
 * The products gather from vectors of 8 MB at 1e6 (past a core's L2): how
 * far apart a row's groups are decides where the gathers hit. f32_bfs
 * relabels the groups breadth first (each group's neighbours through the
 * rows in row order, from the first group of each connected part; sorting
 * them by degree, as Cuthill-McKee does, made the product 5% slower on the
 * 1e6 pile), then sorts the rows by their
 * first new group; out gets the same operator with its rows and columns
 * permuted (the same spectrum), float and double values alike. */
static inline int f32_bfs(const f32_t *L, f32_t *out, int **perm_out) {
  int ng = L->ng, nr = L->nr, G = L->G;
  long ns = L->Sp[nr];
  memset(out, 0, sizeof *out);
  int *deg = calloc((size_t)ng + 1, sizeof(int));
  int *adj0 = calloc((size_t)ng + 2, sizeof(int));
  int *adj = malloc(((size_t)2 * nr + 1) * sizeof(int));
  int *lab = malloc(((size_t)ng + 1) * sizeof(int));
  int *queue = malloc(((size_t)ng + 1) * sizeof(int));
  int *fill = malloc(((size_t)ng + 1) * sizeof(int));
  int *g0 = malloc(((size_t)ng + 1) * sizeof(int));
  if (!deg || !adj0 || !adj || !lab || !queue || !fill || !g0) {
    free(deg), free(adj0), free(adj), free(lab), free(queue), free(fill);
    free(g0);
    return -1;
  }
  for (int i = 0; i < nr; i++) /* rows of two slots: an edge */
    if (L->Sp[i + 1] - L->Sp[i] == 2) {
      deg[(L->Sc[L->Sp[i]] >> 3) / G]++;
      deg[(L->Sc[L->Sp[i] + 1] >> 3) / G]++;
    }
  for (int b = 0; b < ng; b++)
    adj0[b + 1] = adj0[b] + deg[b];
  memcpy(fill, adj0, (size_t)ng * sizeof(int));
  for (int i = 0; i < nr; i++)
    if (L->Sp[i + 1] - L->Sp[i] == 2) {
      int a = (int)(L->Sc[L->Sp[i]] >> 3) / G;
      int b = (int)(L->Sc[L->Sp[i] + 1] >> 3) / G;
      adj[fill[a]++] = b, adj[fill[b]++] = a;
    }
  for (int b = 0; b < ng; b++)
    lab[b] = -1;
  int next = 0, head = 0;
  for (int root = 0; root < ng; root++) {
    if (lab[root] >= 0)
      continue;
    lab[root] = next, queue[next++] = root;
    while (head < next) {
      int b = queue[head++];
      for (int e = adj0[b]; e < adj0[b + 1]; e++)
        if (lab[adj[e]] < 0)
          lab[adj[e]] = next, queue[next++] = adj[e];
    }
  }
  /* rows by their first new group (counting sort), slots by new group */
  int *rcnt = calloc((size_t)ng + 2, sizeof(int));
  int *rnew = malloc(((size_t)nr + 1) * sizeof(int));
  out->nr = nr, out->ncol = L->ncol, out->ng = ng, out->G = G;
  out->Sp = malloc(((size_t)nr + 1) * sizeof(int));
  out->Gp = calloc((size_t)ng + 1, sizeof(int));
  out->Sc = malloc((size_t)(ns + 1) * sizeof(unsigned));
  out->Gj = malloc((size_t)(ns + 1) * sizeof(int));
  out->Sxd = malloc((size_t)(ns * G + 1) * sizeof(double));
  out->Gxd = malloc((size_t)(ns * G + 1) * sizeof(double));
  out->Sxf = malloc((size_t)(ns * G + 1) * sizeof(float));
  out->Gxf = malloc((size_t)(ns * G + 1) * sizeof(float));
  int ok = rcnt && rnew && out->Sp && out->Gp && out->Sc && out->Gj &&
           out->Sxd && out->Gxd && out->Sxf && out->Gxf;
  if (ok) {
    for (int b = 0; b <= ng; b++)
      g0[b] = b * G; /* uniform groups */
    out->g0 = g0;
    for (int i = 0; i < nr; i++) {
      int k = ng;
      for (int q = L->Sp[i]; q < L->Sp[i + 1]; q++) {
        int l = lab[(L->Sc[q] >> 3) / G];
        k = l < k ? l : k;
      }
      rcnt[k + 1]++;
    }
    for (int k = 0; k <= ng; k++)
      rcnt[k + 1] += rcnt[k];
    for (int i = 0; i < nr; i++) {
      int k = ng;
      for (int q = L->Sp[i]; q < L->Sp[i + 1]; q++) {
        int l = lab[(L->Sc[q] >> 3) / G];
        k = l < k ? l : k;
      }
      rnew[rcnt[k]++] = i; /* new row -> old row */
    }
    out->Sp[0] = 0;
    for (int r = 0; r < nr; r++) {
      int i = rnew[r], q0 = L->Sp[i], n = L->Sp[i + 1] - q0;
      int o = out->Sp[r];
      out->Sp[r + 1] = o + n;
      int sw =
          n == 2 && lab[(L->Sc[q0] >> 3) / G] > lab[(L->Sc[q0 + 1] >> 3) / G];
      for (int j = 0; j < n; j++) {
        int q = q0 + (sw ? 1 - j : j), b = lab[(L->Sc[q] >> 3) / G];
        out->Sc[o + j] = (unsigned)(b * G) << 3 | (unsigned)(G - 1);
        out->Gp[b + 1]++;
        for (int t = 0; t < G; t++) {
          out->Sxd[(size_t)(o + j) * G + t] = L->Sxd[(size_t)q * G + t];
          out->Sxf[(size_t)(o + j) * G + t] = L->Sxf[(size_t)q * G + t];
        }
      }
    }
    for (int b = 0; b < ng; b++)
      out->Gp[b + 1] += out->Gp[b];
    memcpy(fill, out->Gp, (size_t)ng * sizeof(int));
    for (int r = 0; r < nr; r++)
      for (int o = out->Sp[r]; o < out->Sp[r + 1]; o++) {
        int b = (int)(out->Sc[o] >> 3) / G, e = fill[b]++;
        out->Gj[e] = r;
        for (int t = 0; t < G; t++) {
          out->Gxd[(size_t)e * G + t] = out->Sxd[(size_t)o * G + t];
          out->Gxf[(size_t)e * G + t] = out->Sxf[(size_t)o * G + t];
        }
      }
  } else
    free(g0);
  free(deg), free(adj0), free(adj), free(queue), free(fill), free(rcnt);
  *perm_out = rnew;
  if (!ok) {
    free(lab);
    return -1;
  }
  free(lab);
  return 0;
}

#endif
