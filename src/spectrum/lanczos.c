/* lanczos.c: cmodes' own thick-restart Lanczos for the top eigenpairs of the
 * smaller of S = B B^T and G = B^T B, with partial re-orthogonalisation.
 *
 * Why not ARPACK here: at a million contacts ARPACK re-orthogonalises every
 * new vector against its whole basis (two to four passes over V, N x ncv),
 * which the profile showed to be 70% of the eigen phase, three times the
 * matvecs. This solver keeps the basis semi-orthogonal instead (Simon's
 * omega recurrence estimates the loss of orthogonality at O(j) cost a step;
 * a full re-orthogonalisation runs only when an estimate passes sqrt(eps),
 * and on the two steps around it), so a typical step reads three vectors
 * besides the matvec. Restarts are thick (Wu and Simon): the kept Ritz
 * vectors are formed in place by one blocked pass over V and the projected
 * matrix becomes an arrowhead. Convergence is tested after every step, with
 * ARPACK's rule (|beta y_last| <= tol max(|theta|, eps^2/3)) on Op / s (s
 * the operator's scale, so the floor is relative), so a run stops as soon
 * as the wanted pairs are good, not at the end of a cycle. Then searches
 * for a missed copy of a repeated eigenvalue (deflated solves from fresh
 * Gaussian starts) complete the list.
 *
 * The steps of a run are named functions on one state (lz_t): setup,
 * start, extend, orthogonalise, advance, test, cycle (restart), run,
 * extract; cm__eig_lanczos drives the solve and the searches.
 *
 * From tolerance 1e-6 the products read B's float values, and from 2^19
 * rows the basis is kept in float as well (each column rounded once
 * normalised; the recurrence's last columns stay in double: lz_col,
 * lz_store; docs/math.md "The basis in float").
 *
 * Every sum is cut into fixed chunks and combined in order, and no decision
 * depends on timing except the caller's deadline: the same operator gives
 * the same bits at any thread count. Not for small problems (dense.c). */
#include "spectrum_internal.h"

#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LZ_CHUNK 8192 /* fixed reduction chunk, independent of threads */
#define LZ_ROWS 1024  /* row block of the basis combinations */
#define LZ_COLS 8     /* basis columns read at once in a row block */
#define LZ_SEED 0x6c616e637a6f73ULL /* "lanczos": breakdown vectors */
#define LZ_TEST_MAX 8     /* most steps between two convergence tests */
#define LZ_PROBE_TOL 1e-5 /* tolerance of a search for a missed copy */
#define LZ_LOOK_TOL 1e-2  /* the look's loosest residual (lz_test) */
#define LZ_LOOK_NEXT 4    /* most next Ritz vectors the look deflates by */
#define LZ_F32_ROOM 0.9   /* ... to this part of it */
/* ... and from this size keeps its basis in float (lz_setup) */
int cm__lz_basis32_min = 1 << 19;

/* ---- vector kernels (deterministic chunked reductions) ----------------- */

/* One half of the step's matvec, by rows: B_c in (trans 0) or B_c^T in
 * (trans 1), cm__op_rows. */
typedef struct {
  const cm_operator_t *op;
  int comp, trans;
  const double *in;
  int f32; /* B's float values (cm__op_rows32) */
} lz_half_t;

/* w -= b x (x may be NULL); returns y . w, with w . w in r[0] and y . y in
 * r[1]. Without memory for the partial sums it runs serially in the same
 * chunk order. */
static double lz_sub_dot(int n, double *w, double b, const double *x,
                         const double *y, double *r, int th) {
  int nch = (n + LZ_CHUNK - 1) / LZ_CHUNK;
  double stack[192],
      *part = nch <= 64 ? stack : malloc(sizeof(double) * 3 * (size_t)nch);
  double s = 0, q = 0, u = 0;
#pragma omp parallel for schedule(static) num_threads(th) if (part && nch > 2)
  for (int c = 0; c < nch; c++) {
    int i0 = c * LZ_CHUNK, i1 = i0 + LZ_CHUNK < n ? i0 + LZ_CHUNK : n;
    double sc = 0, qc = 0, uc = 0;
    for (int i = i0; i < i1; i++) {
      double v = x ? w[i] - b * x[i] : w[i];
      w[i] = v;
      sc += y[i] * v;
      qc += v * v;
      uc += y[i] * y[i];
    }
    if (part)
      part[3 * c] = sc, part[3 * c + 1] = qc, part[3 * c + 2] = uc;
    else
      s += sc, q += qc, u += uc; /* serial: chunk order */
  }
  for (int c = 0; part && c < nch; c++)
    s += part[3 * c], q += part[3 * c + 1], u += part[3 * c + 2];
  if (part != stack)
    free(part);
  r[0] = q, r[1] = u;
  return s;
}

/* w = A's rows [0, n) (a half of the step's product), in fixed chunks;
 * with x (v_j stored unnormalised, v_j = f x), also x <- f x in place (v_j
 * normalised) and w <- f g w - b p - a x (g: the operator's 1/s), the
 * rest of the step, and with x32 x's float copy there. Returns
 * w . w summed in chunk order (serially in that order without memory for
 * the partial sums). */
static double lz_rows_sq(const lz_half_t *A, int n, double *w, double *x,
                         float *x32, double f, double g, const double *p,
                         double b, double a, int th) {
  int nch = (n + LZ_CHUNK - 1) / LZ_CHUNK;
  double stack[64],
      *part = nch <= 64 ? stack : malloc(sizeof(double) * (size_t)nch);
  double s = 0;
#pragma omp parallel for schedule(static) num_threads(th) if (part && nch > 2)
  for (int c = 0; c < nch; c++) {
    int i0 = c * LZ_CHUNK, i1 = i0 + LZ_CHUNK < n ? i0 + LZ_CHUNK : n;
    (A->f32 ? cm__op_rows32 : cm__op_rows)(A->op, A->comp, A->trans, A->in, i0,
                                           i1, w + i0);
    for (int i = i0; x && i < i1; i++) {
      double v = x[i] * f;
      x[i] = v;
      w[i] = (f * g) * w[i] - b * p[i] - a * v;
    }
    /* v_j's float copy, its chunk cached */
    for (int i = i0; x32 && i < i1; i++)
      x32[i] = (float)x[i];
    double q = cm__dot_lanes(w + i0, w + i0, i1 - i0); /* w's chunk cached */
    if (part)
      part[c] = q;
    else
      s += q;
  }
  for (int c = 0; part && c < nch; c++)
    s += part[c];
  if (part != stack)
    free(part);
  return s;
}

/* dst = (w - a x) * f */
static void lz_sub_scale(int n, const double *w, double a, const double *x,
                         double f, double *dst, int th) {
#pragma omp parallel for schedule(static) num_threads(th) if (n > CM__PAR_MIN)
  for (int i = 0; i < n; i++)
    dst[i] = (w[i] - a * x[i]) * f;
}

/* buf[p * LZ_ROWS + r] = sum_c V[c * n + r] Y[p * ldy + c] for r < len:
 * in tiles of P outputs x 8 rows held in registers, c ascending from 0 for
 * every element (the same sum in every kernel set and tile shape); the row
 * block of V stays in cache across the tiles. The columns come LZ_COLS at
 * a time (the partial sums wait in buf, exactly): reading all J of a
 * block at once kept J streams from memory open, more than the hardware
 * prefetchers follow (1e6 pile, a 74-column restart: 95 -> 55 ms; 8 to
 * 24 columns measured alike). tri: Y is upper triangular
 * (Y[p * ldy + c] = 0 for c > p), whose zero terms are skipped (adding
 * 0 * v leaves a sum's bits alone).
 *
 * The 8 rows are held as 8 / (VB / 8) vectors of the kernel set's own
 * width VB (bytes: 64 AVX-512, 32 AVX2, 16 baseline), P outputs a tile
 * chosen so the accumulators fit its registers. One 64-byte vector type
 * for every set, as before, left GCC to split it in memory under AVX2 and
 * the baseline: every accumulation went through the stack (1e6 pile, 6
 * modes, eigen phase: AVX2 2.24 s, baseline 2.03 s, AVX-512 1.73 s). */
#define LZ_LOADV(v, p) memcpy(&(v), (p), sizeof(v)) /* unaligned */

/* The outputs [p0, p1) of lz_combine_rows in tiles of PT (p1 - p0 a
 * multiple of PT), inside a body whose vt, W and H are the set's; LOAD
 * fills a vt from W of V's values. */
#define LZ_COMBINE_TILES(TV, LOAD, PT, p0, p1)                                 \
  for (int g0 = 0; g0 < J; g0 += LZ_COLS)                                      \
    for (int p = p0; p < p1; p += PT) {                                        \
      int Jt = tri && p + PT < J ? p + PT : J;                                 \
      int c1 = g0 + LZ_COLS < Jt ? g0 + LZ_COLS : Jt;                          \
      if (g0 >= Jt)                                                            \
        continue;                                                              \
      const double *y = Y + (size_t)p * ldy;                                   \
      double *o = buf + (size_t)p * LZ_ROWS;                                   \
      for (int r = 0; r < r8; r += 8) {                                        \
        vt a[PT][H];                                                           \
        _Pragma("GCC unroll 8") for (int q = 0; q < PT; q++)                   \
            _Pragma("GCC unroll 8") for (int h = 0; h < H; h++) {              \
          if (g0)                                                              \
            LZ_LOADV(a[q][h], o + (size_t)q * LZ_ROWS + r + h * W);            \
          else                                                                 \
            a[q][h] = (vt){0};                                                 \
        }                                                                      \
        for (int c = g0; c < c1; c++) {                                        \
          const TV *vc = V + (size_t)c * n + r;                                \
          _Pragma("GCC unroll 8") for (int h = 0; h < H; h++) {                \
            vt v;                                                              \
            LOAD(v, vc + h * W);                                               \
            _Pragma("GCC unroll 8") for (int q = 0; q < PT; q++) a[q][h] +=    \
                y[(size_t)q * ldy + c] * v;                                    \
          }                                                                    \
        }                                                                      \
        _Pragma("GCC unroll 8") for (int q = 0; q < PT; q++)                   \
            _Pragma("GCC unroll 8") for (int h = 0; h < H; h++) memcpy(        \
                o + (size_t)q * LZ_ROWS + r + h * W, &a[q][h], sizeof(vt));    \
      }                                                                        \
    }

#define LZ_COMBINE_ROWS(QUAL, NAME, TV, VB, P, LOAD)                           \
  QUAL NAME(const TV *V, size_t n, int J, const double *Y, int ldy, int ncol,  \
            int tri, int len, double *buf) {                                   \
    typedef double vt __attribute__((vector_size(VB)));                        \
    typedef float ft __attribute__((vector_size(VB / 2)));                     \
    (void)sizeof(ft); /* the float loads' */                                   \
    enum { W = VB / 8, H = 8 / W };                                            \
    int r8 = len & ~7, pt = ncol - ncol % P;                                   \
    for (int p = 0; J == 0 && p < ncol; p++) /* no columns: zero sums */       \
      memset(buf + (size_t)p * LZ_ROWS, 0, sizeof(double) * (size_t)len);      \
    LZ_COMBINE_TILES(TV, LOAD, P, 0, pt)                                       \
    LZ_COMBINE_TILES(TV, LOAD, 1, pt, ncol) /* the last outputs, one by one */ \
    for (int p = 0; p < ncol; p++)          /* the last rows */                \
      for (int r = r8; r < len; r++) {                                         \
        double a = 0;                                                          \
        for (int c = 0; c < (tri && p + 1 < J ? p + 1 : J); c++)               \
          a += Y[(size_t)p * ldy + c] * V[(size_t)c * n + r];                  \
        buf[(size_t)p * LZ_ROWS + r] = a;                                      \
      }                                                                        \
  }
/* V's W values into v (a vector of the set's width): doubles as they are,
 * floats widened exactly (the float basis, cm__lz_basis32_min; one
 * vcvtps2pd under AVX-512 and AVX2, CM__LOAD_WIDEN8: 1e6 x 48 float
 * columns into 16, 2 threads, AVX-512: 31.0 -> 27.9 ms, 74 columns
 * 44.0 -> 39.8 ms against __builtin_convertvector) */
#define LZ_LOAD_double(v, p) LZ_LOADV(v, p)
#define LZ_LOAD_float(v, p) CM__LOAD_WIDEN(v, p, vt, W)
#define LZ_LOAD64_double LZ_LOAD_double
#define LZ_LOAD32_double LZ_LOAD_double
#define LZ_LOAD64_float(v, p) CM__LOAD_WIDEN8(v, p, vt)
#define LZ_LOAD32_float(v, p) CM__LOAD_WIDEN4(v, p, vt)
/* The kernel NAME on basis columns of type TV, with its three sets */
#define LZ_COMBINE_SET(NAME, TV)                                               \
  LZ_COMBINE_ROWS(CM__KERNEL_BODY_AVX512, NAME##_body64, TV, 64, 4,            \
                  LZ_LOAD64_##TV)                                              \
  LZ_COMBINE_ROWS(CM__KERNEL_BODY_AVX2, NAME##_body32, TV, 32, 4,              \
                  LZ_LOAD32_##TV)                                              \
  LZ_COMBINE_ROWS(CM__KERNEL_BODY, NAME##_body16, TV, 16, 2, LZ_LOAD_##TV)     \
  CM__KERNEL_W(NAME,                                                           \
               (const TV *V, size_t n, int J, const double *Y, int ldy,        \
                int ncol, int tri, int len, double *buf),                      \
               (V, n, J, Y, ldy, ncol, tri, len, buf))
LZ_COMBINE_SET(lz_combine_rows, double)
LZ_COMBINE_SET(lz_combine_rows32, float)

/* g[q * g1 + p] = u_p . u_q for q <= p < g1, u_p = buf + p * LZ_ROWS of
 * length len: each the bits of cm__dot8(u_p, u_q, len) (eight lane sums,
 * combined in its order, then the tail), computed in TP x TQ tiles of
 * outputs that share their loads (a dot product alone waits on its one
 * chain of additions); the 8 lanes held as vectors of width VB, as in
 * lz_combine_rows. */
#define LZ_GRAM_ROWS(NAME, VB, TP, TQ)                                         \
  CM__KERNEL_BODY NAME(const double *buf, int g1, int len, double *g) {        \
    typedef double vt __attribute__((vector_size(VB)));                        \
    enum { W = VB / 8, H = 8 / W };                                            \
    int r8 = len & ~7;                                                         \
    for (int q0 = 0; q0 < g1; q0 += TQ)                                        \
      for (int p0 = q0 - q0 % TP; p0 < g1; p0 += TP) {                         \
        const double *u[TP], *v[TQ];                                           \
        for (int a = 0; a < TP; a++) /* past the edge: repeat the last */      \
          u[a] = buf + (size_t)(p0 + a < g1 ? p0 + a : g1 - 1) * LZ_ROWS;      \
        for (int b = 0; b < TQ; b++)                                           \
          v[b] = buf + (size_t)(q0 + b < g1 ? q0 + b : g1 - 1) * LZ_ROWS;      \
        vt s[TP][TQ][H];                                                       \
        _Pragma("GCC unroll 8") for (int a = 0; a < TP; a++)                   \
            _Pragma("GCC unroll 8") for (int b = 0; b < TQ; b++)               \
                _Pragma("GCC unroll 8") for (int h = 0; h < H; h++)            \
                    s[a][b][h] = (vt){0};                                      \
        for (int r = 0; r < r8; r += 8)                                        \
          _Pragma("GCC unroll 8") for (int h = 0; h < H; h++) {                \
            vt x[TP], y[TQ];                                                   \
            _Pragma("GCC unroll 8") for (int a = 0; a < TP; a++)               \
                LZ_LOADV(x[a], u[a] + r + h * W);                              \
            _Pragma("GCC unroll 8") for (int b = 0; b < TQ; b++)               \
                LZ_LOADV(y[b], v[b] + r + h * W);                              \
            _Pragma("GCC unroll 8") for (int a = 0; a < TP; a++)               \
                _Pragma("GCC unroll 8") for (int b = 0; b < TQ; b++)           \
                    s[a][b][h] += x[a] * y[b];                                 \
          }                                                                    \
        for (int a = 0; a < TP && p0 + a < g1; a++)                            \
          for (int b = 0; b < TQ && q0 + b <= p0 + a; b++) {                   \
            double t = 0, z[8];                                                \
            for (int r = r8; r < len; r++)                                     \
              t += u[a][r] * v[b][r];                                          \
            for (int h = 0; h < H; h++)                                        \
              memcpy(z + h * W, &s[a][b][h], sizeof(vt));                      \
            g[(size_t)(q0 + b) * g1 + p0 + a] =                                \
                ((z[0] + z[1]) + (z[2] + z[3])) +                              \
                ((z[4] + z[5]) + (z[6] + z[7])) + t;                           \
          }                                                                    \
      }                                                                        \
  }
LZ_GRAM_ROWS(lz_gram_rows_body64, 64, 4, 4)
LZ_GRAM_ROWS(lz_gram_rows_body32, 32, 2, 2)
LZ_GRAM_ROWS(lz_gram_rows_body16, 16, 1, 2)
CM__KERNEL_W(lz_gram_rows, (const double *buf, int g1, int len, double *g),
             (buf, g1, len, g))

/* Out[:, p] = sum_c V[:, c] Y[c, p] for p < ncol, c < J (c ascending), in
 * row blocks; Out may be V itself (in place: each block is read whole before
 * it is written). V and Out have leading dimension n, Y has ldy. With G
 * (size (ncol + 1)^2), also the Gram matrix of the columns [Out, x] into
 * its lower triangle (column-major, ld ncol + 1), summed in block order.
 * tri: Y is upper triangular (lz_combine_rows). A float basis
 * (cm__lz_basis32_min) comes as V32 (V unused), and Out32 (Out unused) takes
 * the columns rounded to float, the Gram matrix then of the rounded columns. */
typedef struct {
  const double *V;
  const float *V32;
  double *Out;
  float *Out32;
  int cold;             /* lz_reorth: columns [0, cold) read from V32, the  */
  const double *hot[2]; /* rest (at most two) in double from hot[c - cold] */
} lz_cols_t;

/* y = alpha A^T x + beta y (trans) or y = alpha A x + beta y, A the basis
 * columns [a, a + ncol) of V (its float or double ones), n rows. */
static void lz_gemv(const lz_cols_t *V, int trans, int n, int a, int ncol,
                    double alpha, const double *x, double beta, double *y,
                    int th) {
  if (V->V32)
    cm__gemv32(trans, n, ncol, alpha, V->V32 + (size_t)a * n, n, x, beta, y,
               th);
  else
    cm__gemv(trans, n, ncol, alpha, V->V + (size_t)a * n, n, x, beta, y, th);
}

static int lz_combine(int n, lz_cols_t c, int J, const double *Y, int ldy,
                      int ncol, int tri, const double *x, double *G, int th) {
  int nblk = (n + LZ_ROWS - 1) / LZ_ROWS, fail = 0, g1 = ncol + 1;
  size_t gsz = (size_t)g1 * (size_t)g1;
  double *gp = G ? calloc((size_t)nblk * gsz, sizeof(double)) : NULL;
  if (G && !gp)
    return -1;
#pragma omp parallel num_threads(th) if (n > CM__PAR_MIN)
  {
    double *buf = malloc(sizeof(double) * (size_t)LZ_ROWS * (size_t)g1);
    if (!buf) {
#pragma omp atomic write
      fail = 1;
    }
#pragma omp for schedule(static)
    for (int b = 0; b < nblk; b++) {
      if (!buf)
        continue;
      int r0 = b * LZ_ROWS, len = r0 + LZ_ROWS < n ? LZ_ROWS : n - r0;
      if (c.V32)
        lz_combine_rows32(c.V32 + r0, (size_t)n, J, Y, ldy, ncol, tri, len,
                          buf);
      else
        lz_combine_rows(c.V + r0, (size_t)n, J, Y, ldy, ncol, tri, len, buf);
      for (int p = 0; c.Out32 && p < ncol; p++) { /* what is stored */
        double *o = buf + (size_t)p * LZ_ROWS;
        float *d = c.Out32 + (size_t)p * n + r0;
        for (int r = 0; r < len; r++)
          o[r] = d[r] = (float)o[r];
      }
      if (gp) {
        memcpy(buf + (size_t)ncol * LZ_ROWS, x + r0,
               sizeof(double) * (size_t)len);
        lz_gram_rows(buf, g1, len, gp + (size_t)b * gsz);
      }
      for (int p = 0; !c.Out32 && p < ncol; p++)
        memcpy(c.Out + (size_t)p * n + r0, buf + (size_t)p * LZ_ROWS,
               sizeof(double) * (size_t)len);
    }
    free(buf);
  }
  if (gp && !fail) {
    memset(G, 0, sizeof(double) * gsz);
    for (int b = 0; b < nblk; b++)
      for (size_t i = 0; i < gsz; i++)
        G[i] += gp[(size_t)b * gsz + i];
  }
  free(gp);
  return fail ? -1 : 0;
}

int cm__lz_combine(int n, const double *V, int J, const double *Y, int ncol,
                   double *Out, const double *x, double *G, int th) {
  return lz_combine(n, (lz_cols_t){V, NULL, Out, NULL, 0, {NULL, NULL}}, J, Y,
                    J, ncol, 0, x, G, th);
}

/* Classical Gram-Schmidt of x against V[:, 0..J-1] (only the columns with
 * sel[q] != 0 when sel is given): a second pass when
 * the first took away more than 30% of the norm nx0 (DGKS), or always when
 * nx0 < 0 (twice is enough). The coefficients removed are added to hsum
 * (NULL: not wanted); h: scratch of J. Returns ||x|| afterwards. A float
 * basis gives its columns [0, V.cold) as V32 and the rest, the ones the
 * recurrence still holds in double, as V.hot. */
static double lz_reorth(int n, lz_cols_t V, int J, const char *sel, double *x,
                        double nx0, double *h, double *hsum, int th) {
  double nx = 0;
  int cold = V.V32 ? (V.cold < J ? V.cold : J) : J;
  for (int pass = 0; pass < 2; pass++) {
    /* classical: all coefficients from the same x, then one update; the
     * selected columns (sel NULL: all) in contiguous runs */
    for (int a = 0, b; a < cold; a = b) {
      for (; a < cold && sel && !sel[a]; a++)
        h[a] = 0;
      for (b = a; b < cold && (!sel || sel[b]); b++)
        ;
      if (b > a)
        lz_gemv(&V, 1, n, a, b - a, 1.0, x, 0.0, h + a, th);
    }
    for (int c = cold; c < J; c++)
      h[c] = !sel || sel[c] ? cm__dot(n, V.hot[c - cold], x, th) : 0;
    for (int a = 0, b; a < cold; a = b) {
      for (; a < cold && sel && !sel[a]; a++)
        ;
      for (b = a; b < cold && (!sel || sel[b]); b++)
        ;
      if (b > a)
        lz_gemv(&V, 0, n, a, b - a, -1.0, h + a, 1.0, x, th);
    }
    for (int c = cold; c < J; c++)
      if (!sel || sel[c])
        lz_sub_scale(n, x, h[c], V.hot[c - cold], 1.0, x, th);
    for (int i = 0; hsum && i < J; i++)
      hsum[i] += h[i];
    nx = cm__nrm2(n, x, th);
    if (nx0 >= 0 && nx > 0.717 * nx0)
      break;
    nx0 = nx;
  }
  return nx;
}

/* ---- the projected problem --------------------------------------------- */

typedef struct {
  int m;         /* basis size (ncv) */
  int J;         /* size of the last Ritz problem solved */
  double *H;     /* m x m projected matrix, column-major */
  double *D;     /* m x m re-orthogonalisation coefficients: column j holds
                    what was taken off A v_j beyond H (the exact relation
                    is A V = V (H + D) + beta v e^T) */
  double *A;     /* scratch copy of H for the eigen-solve */
  double *theta; /* Ritz values, ascending (top kk of the J x J problem) */
  double *Y;     /* J x kk Ritz vectors of the projected matrix */
  int found;
} lz_proj_t;

/* Top k Ritz pairs of the leading J x J block of H (ascending). */
static int lz_ritz(lz_proj_t *P, int J, int k, int tridiagonal) {
  P->J = J;
  if (k > J)
    k = J;
  if (tridiagonal) { /* no restart yet: MRRR (dstemr) on T, not O(J^3) */
    double *d = P->A, *e = P->A + J; /* A has room for m^2 >= 2 J */
    for (int i = 0; i < J; i++)
      d[i] = P->H[(size_t)i * P->m + i];
    for (int i = 0; i + 1 < J; i++)
      e[i] = P->H[(size_t)i * P->m + i + 1];
    e[J - 1] = 0;
    int found = cm__stemr_top(J, d, e, k, P->theta, P->Y, J);
    if (found == -2) /* out of memory: not the dense fallback (other bits) */
      return P->found = -2;
    if (found >= 0)
      return P->found = found;
  } /* dstemr failed: the dense solver */
  for (int c = 0; c < J; c++)
    memcpy(P->A + (size_t)c * J, P->H + (size_t)c * P->m,
           sizeof(double) * (size_t)J);
  P->found = cm__syevr_top(J, P->A, k, P->theta, P->Y);
  return P->found;
}

/* Thick restart: V[:, 0..kk-1] <- U = V Y (the kk Ritz vectors), made
 * orthonormal to rounding by Cholesky QR (the basis is only semi-orthogonal),
 * and V[:, kk] <- the residual vector v_m orthogonalised against them. The
 * Lanczos relation A U = U Theta + v_m s^T (s = beta Y[m-1, :]) carried
 * through both gives the new projected block H = L^T Theta L^-T + c s'^T with
 * arrow rho s' (s' = L^-1 s, c = U'^T v_m): exact to rounding, symmetrised.
 * h: scratch of m + 1. Returns -1 when out of memory or not positive
 * definite (cannot happen with a semi-orthogonal basis). */
static int lz_restart(int N, lz_cols_t B, double *vm, double *vk, int m,
                      lz_proj_t *P, int kk, double beta, double *h, int th) {
  int g1 = kk + 1, st = -1;
  double *G = malloc(sizeof(double) * (size_t)g1 * g1);
  double *Li = calloc((size_t)kk * kk, sizeof(double));
  double *T = malloc(sizeof(double) * (size_t)kk * kk);
  double *sp = malloc(sizeof(double) * (size_t)kk);
  B.Out = (double *)B.V, B.Out32 = (float *)B.V32; /* in place */
  if (!G || !Li || !T || !sp || lz_combine(N, B, m, P->Y, m, kk, 0, vm, G, th))
    goto out;
  st = -2;
  if (cm__chol_lower(kk, G, g1) != 0) /* dense.c: the same bits on any CPU */
    goto out;
  cm__inv_lower(kk, G, g1, Li, kk); /* L^-1 from the lower triangle of G */
  for (int p = 0; p < kk; p++)      /* T = L^-T: column p holds row p of L^-1 */
    for (int c = 0; c < kk; c++)
      T[(size_t)p * kk + c] = Li[(size_t)c * kk + p];
  if (lz_combine(N, B, kk, T, kk, kk, 1, NULL, NULL, th))
    goto out;
  for (int a = 0; a < kk; a++) { /* c = L^-1 (U^T v_m), s' = L^-1 s */
    double ca = 0, sa = 0;
    for (int b = 0; b <= a; b++) {
      ca += Li[(size_t)b * kk + a] * G[(size_t)b * g1 + kk];
      sa += Li[(size_t)b * kk + a] * beta * P->Y[(size_t)b * m + (m - 1)];
    }
    h[a] = ca, sp[a] = sa;
  }
  lz_gemv(&B, 0, N, 0, kk, -1.0, h, 1.0, vm, th); /* v_m -= U' c */
  double r = cm__nrm2(N, vm, th);
  st = -3;
  if (!(r > 0))
    goto out;
#pragma omp parallel for schedule(static) num_threads(th) if (N > CM__PAR_MIN)
  for (int i = 0; i < N; i++)
    vk[i] = vm[i] / r;
  int M = P->m;
  double *H = P->H;
  memset(H, 0, sizeof(double) * (size_t)M * M);
  for (int a = 0; a < kk; a++) /* L^T Theta L^-T + c s'^T */
    for (int b = 0; b < kk; b++) {
      double t = 0;
      for (int c = a; c <= b; c++) /* L^T upper, L^-T upper */
        t += G[(size_t)a * g1 + c] * P->theta[c] * Li[(size_t)c * kk + b];
      H[(size_t)b * M + a] = t + h[a] * sp[b];
    }
  memset(P->D, 0, sizeof(double) * (size_t)M * M);
  for (int a = 0; a < kk; a++)
    for (int b = 0; b < a; b++) {
      double t = 0.5 * (H[(size_t)b * M + a] + H[(size_t)a * M + b]);
      H[(size_t)b * M + a] = H[(size_t)a * M + b] = t;
    }
  for (int a = 0; a < kk; a++)
    H[(size_t)kk * M + a] = H[(size_t)a * M + kk] = r * sp[a];
  st = 0;
out:
  free(G), free(Li), free(T), free(sp);
  return st;
}

/* First-order correction of the wanted Ritz coefficient vectors for the
 * re-orthogonalisations (D): with A V = V (H + D) + beta v e^T, the vector
 * y + delta, delta = -(H - theta)^+ (I - y y^T) D y, leaves a residual of
 * second order in D instead of the first (|D| ~ sqrt(eps) ||A|| under
 * partial re-orthogonalisation), and theta + y^T D y is its value in the
 * relation: A V (y + delta) = (theta + y^T D y) V (y + delta) + O(D^2) +
 * beta (y + delta)_J v. Columns k0..k0+nf-1 of P->Y and theta, in place.
 * Returns -1 when out of memory or LAPACK fails (Y is then left alone). */
static int lz_correct(lz_proj_t *P, int k0, int nf) {
  int J = P->J, M = P->m, any = 0;
  for (int i = 0; i < J * M && !any; i++)
    any = P->D[i] != 0;
  if (!any || nf < 1)
    return 0;
  double *A = malloc(sizeof(double) * (size_t)J * J);
  double *Z = malloc(sizeof(double) * (size_t)J * J);
  double *w = malloc(sizeof(double) * (size_t)J);
  double *dy = malloc(sizeof(double) * (size_t)J);
  int st = -1;
  if (!A || !Z || !w || !dy)
    goto out;
  for (int c = 0; c < J; c++)
    memcpy(A + (size_t)c * J, P->H + (size_t)c * M, sizeof(double) * (size_t)J);
  if (cm__syevr_top(J, A, J, w, Z) != J)
    goto out;
  for (int i = 0; i < nf; i++) {
    double *y = P->Y + (size_t)(k0 + i) * J, th = P->theta[k0 + i];
    for (int p = 0; p < J; p++) { /* dy = D y */
      double t = 0;
      for (int q = 0; q < J; q++)
        t += P->D[(size_t)q * M + p] * y[q];
      dy[p] = t;
    }
    int self = 0; /* the full decomposition's copy of y */
    for (int l = 1; l < J; l++)
      if (fabs(w[l] - th) < fabs(w[self] - th))
        self = l;
    double *corr = A; /* A is free again */
    int small = 1;
    for (int p = 0; p < J; p++)
      corr[p] = 0;
    for (int l = 0; l < J && small; l++) {
      if (l == self)
        continue;
      const double *z = Z + (size_t)l * J;
      double t = 0;
      for (int p = 0; p < J; p++)
        t += z[p] * dy[p];
      double c = t / (w[l] - th);
      /* re-orthogonalisation leaves |c| ~ sqrt(eps); anything far larger
       * is not first order (a near-multiple pair, or an invariant subspace
       * where the step's remainder was replaced): leave y alone */
      small = fabs(c) < 1e-4;
      for (int p = 0; small && p < J; p++)
        corr[p] -= c * z[p];
    }
    if (!small)
      continue;
    double ydy = 0;
    for (int p = 0; p < J; p++)
      ydy += y[p] * dy[p];
    for (int p = 0; p < J; p++)
      y[p] += corr[p];
    P->theta[k0 + i] = th + ydy;
  }
  st = 0;
out:
  free(A), free(Z), free(w), free(dy);
  return st;
}

/* The basis size when the options leave it open: LZ_NCV_MAX vectors, fewer
 * if they do not fit in LZ_BASIS_BYTES (not below LZ_NCV_MIN), and at least
 * 2 nev + 8. Partial re-orthogonalisation makes a step's cost independent of
 * the basis size; what a larger basis saves in restarts it pays in first
 * touches of fresh memory (bench/, 1e6 contacts: a pile's 131 steps take
 * 2.0-2.1 s with 32-48 vectors, 2.3 s with 64, 3.0-4.0 s with 99; an FCC
 * crystal's ~870 steps take 7.1-7.5 s with 48-64 vectors, 8.7 s with 32).
 * A function of N only: the same operator gets the same bits. */
#define LZ_BASIS_BYTES (768.0 * 1024 * 1024)
#define LZ_NCV_MIN 32
#define LZ_NCV_MAX 48
/* How many vectors of N doubles fit in LZ_BASIS_BYTES. */
static double lz_basis_fit(int N) {
  return LZ_BASIS_BYTES / (8.0 * (N > 0 ? N : 1));
}

static int lz_auto_ncv(int nev, int N) {
  double fit = lz_basis_fit(N);
  int m = fit > LZ_NCV_MAX   ? LZ_NCV_MAX
          : fit < LZ_NCV_MIN ? LZ_NCV_MIN
                             : (int)fit;
  return m < 2 * nev + 8 ? 2 * nev + 8 : m;
}

/* ---- the solver state ---------------------------------------------------- */

typedef struct {
  /* the problem */
  cm_operator_t *op;
  int comp, use_S;
  int N, other;     /* operator size, and the other side of B */
  uint64_t base;    /* global index of the operator's first row (seeds) */
  int nev, m, keep; /* wanted pairs, room of the projected problem (the
                       first cycle's length, the bound's steps included),
                       Ritz vectors kept */
  int ncv, mc;      /* basis size of a cycle after the first, and the
                       current cycle's last J (the first cycle's basis, at
                       most m: below it when the bound's steps past the
                       basis run as lz_pb_tail's plain steps; then ncv) */
  int nt;           /* threads of the vector kernels */
  double inv_s;     /* 1 / s: the solve is on Op / s */
  double tol;       /* relative residual tolerance */
  double low;       /* > 0 (the search's look): a top pair resolved below
                       low also passes (lz_test) */
  int max_restarts; /* cycles budget */
  uint64_t seed;    /* start and breakdown vectors */
  const double *Z;  /* deflation, N x nz orthonormal: the solve is on
                       P Op P, P = I - Z Z^T; NULL none */
  int nz;
  float *Z32; /* Z's values rounded to float (the look), or NULL */
  /* workspace */
  double *V;   /* N x (mc + 1) basis (the first cycle's mc), or NULL */
  float *V32;  /* the basis in float instead (cm__lz_basis32_min), or NULL */
  double *R;   /* with V32: the columns the recurrence reads, in double,
                  column c's at R + (c % 3) N (lz_col); room for
                  lz_rcols(nev) columns, where lz_extract forms the Ritz
                  vectors */
  int r32;     /* with V32: re-orthogonalisations against float columns
                  before the bound was taken (the bound is then the a
                  posteriori certificate's alone: lz_pb_take) */
  double *T2;  /* N x 2: lz_pb_tail's rolling vectors past V (or NULL) */
  double *w;   /* N: the step's vector */
  double *tmp; /* other: the middle of a product */
  double *h;   /* m + 1 + nz: Gram-Schmidt coefficients */
  double *scl; /* m + 2: scale of a column stored unnormalised */
  double *om_prev, *om_cur, *om_next; /* m + 2: estimates v_{j+1} . v_q */
  char *sel;              /* m + 2: columns to re-orthogonalise against */
  lz_proj_t P;            /* the projected problem */
  lz_half_t half1, half2; /* the two halves of a fused product */
  int fused;              /* explicit B and no deflation: two-pass steps */
  double mv_flops;        /* flops of a product (spacing of the tests) */
  /* the probabilistic bound from the first cycle (bound.c's theorem: a
   * plain Krylov space of the Gaussian start, no restart yet) */
  int pb_k;    /* its steps (cm__kw_steps; 0: not wanted) */
  int pb_done; /* taken (pb_* below), or given up */
  double pb_delta, pb_upper, pb_theta, pb_eps;
  int pb_steps;
  double gabs;    /* || |B^T| |B| || bound / s (NAN: unknown) */
  int f32;        /* the products on B's float values (S32) */
  double f32_gap; /* CM__F32_GAP gabs: ||S - S32|| / s at most */
  int terms;      /* most terms an entry of a product sums (-1: unknown) */
  /* the state */
  int k; /* Ritz vectors kept at the last restart (arrow) */
  int J; /* basis vectors */
  int restarts, force, converged, exhausted, timed_out;
  double anorm;   /* largest row sum of |H| so far: ~ ||Op / s|| */
  double beta;    /* the last step's residual norm */
  cm__eig_t *out; /* statistics: matvecs, time in products */
} lz_t;

typedef struct {
  int j;        /* the column extended */
  double alpha; /* v_j . Op v_j */
  double bprev; /* beta_{j-1} (0 at a cycle's first step) */
  int full;     /* re-orthogonalise against the whole basis */
  int fin;      /* w holds the whole step (not only the product) */
  double *wp;   /* where the step's vector is: w, or V[:, J] */
} lz_step_t;

/* Column c of the basis, in double: V's, or (float basis) its ring slot. */
static double *lz_col(const lz_t *L, int c) {
  return L->V32 ? L->R + (size_t)(c % 3) * (size_t)L->N
                : L->V + (size_t)c * (size_t)L->N;
}

/* The basis as lz_combine and lz_reorth read it. */
static lz_cols_t lz_cols(const lz_t *L) {
  /* the ring holds the cycle's last columns, not the kept Ritz vectors */
  int c0 = L->J - 2 > L->k ? L->J - 2 : L->k;
  return (lz_cols_t){L->V, L->V32, NULL,
                     NULL, c0,     {lz_col(L, c0), lz_col(L, c0 + 1)}};
}

/* Column c, normalised in its ring slot, stored in float (float basis). */
static void lz_store(lz_t *L, int c) {
  if (!L->V32)
    return;
  const double *x = lz_col(L, c);
  float *d = L->V32 + (size_t)c * (size_t)L->N;
#pragma omp parallel for schedule(static) num_threads(L->nt)
  for (int i = 0; i < L->N; i++)
    d[i] = (float)x[i];
}

/* The estimate of v_{j+1} . v_q right after v_{j+1} was orthogonalised
 * against v_q: eps, or with a float basis the part of the float copy's
 * rounding error (2^-24 relative, in no relation to v_{j+1}) that one
 * expects in the product, 2^-24 / sqrt(N), far below sqrt(eps) at the
 * sizes that have a float basis. */
static double lz_om_reset(const lz_t *L) {
  double u = L->V32 ? 0x1p-24 / sqrt((double)L->N) : 0;
  return u > DBL_EPSILON ? u : DBL_EPSILON;
}

static void lz_free(lz_t *L) {
  cm__ws_free(L->V), cm__ws_free(L->w), cm__ws_free(L->T2);
  cm__ws_free(L->V32), cm__ws_free(L->R);
  free(L->tmp), free(L->h), free(L->scl);
  free(L->om_prev), free(L->om_cur), free(L->om_next), free(L->sel);
  free(L->P.H), free(L->P.D), free(L->P.A), free(L->P.theta), free(L->P.Y);
  cm__ws_free(L->Z32);
  memset(L, 0, sizeof *L);
}

/* x -= Z (Z^T x): the deflation projector (twice is enough); on Z's float
 * values when the solve has them (lz_look_f32) */
static void lz_deflate(const lz_t *L, double *x, int passes) {
  lz_cols_t Z = {.V = L->Z, .V32 = L->Z32};
  double t0 = L->Z ? cm__now() : 0;
  for (int p = 0; L->Z && p < passes; p++) {
    lz_gemv(&Z, 1, L->N, 0, L->nz, 1.0, x, 0.0, L->h, L->nt);
    lz_gemv(&Z, 0, L->N, 0, L->nz, -1.0, L->h, 1.0, x, L->nt);
  }
  if (L->Z)
    L->out->t_deflate += cm__now() - t0;
}

/* The look (a deflated solve that lists nothing) deflates by Z's float
 * values: its two passes over Z a step, half the bytes (the 1e6 pile's 8
 * vectors: 128 -> 64 MB a step). P32 = I - Z32 Z32^T is symmetric, so the
 * run is a Lanczos run of P32 Op P32; a missed copy u (Z^T u = 0) has
 * P32 u = u - Z32 (Z32 - Z)^T u, u to 2^-24 relative, so it stays an
 * eigenvector of the look's operator to that accuracy, far inside the
 * look's margin (2 LZ_PROBE_TOL), and Z's own directions keep P32 z =
 * O(2^-24). Searches that list pairs keep the double Z. No memory: the
 * double Z. */
static void lz_look_f32(lz_t *L) {
  size_t n = (size_t)L->N * (size_t)L->nz;
  if (!L->Z)
    return; /* at every size: the tests' repeated modes check it */
  L->Z32 = cm__ws_malloc(NULL, n + 1, sizeof(float));
  if (!L->Z32)
    return;
#pragma omp parallel for schedule(static) num_threads(L->nt)
  for (size_t i = 0; i < n; i++)
    L->Z32[i] = (float)L->Z[i];
}

/* ---- setup: sizes and workspace ---------------------------------------- */

/* Most next Ritz vectors a solve of nev pairs forms for the search's look:
 * none for one pair, which never looks (lz_all). Buffers are sized by it:
 * with 4 next vectors for every solve, the step's R had grown 16 MB and
 * left the CLI's freed heap for fresh pages (its peak RSS 547 -> 570 MiB). */
static int lz_look_next(int nev) { return nev > 1 ? LZ_LOOK_NEXT : 0; }

/* Columns of R (the float basis's double ones): the recurrence's three, or
 * the Ritz vectors lz_extract forms there, the wanted and the next ones,
 * and one more. */
static int lz_rcols(int nev) {
  int rc = nev + lz_look_next(nev) + 1;
  return rc > 3 ? rc : 3;
}

static int lz_setup(cm_context_t *ctx, lz_t *L, cm_operator_t *op, int comp,
                    const cm_options_t *opts, const cm__eig_dims_t *d, int nev,
                    double tol, const double *Z, int nz, uint64_t seed,
                    int pb_k, int mv, double pb_delta, cm__eig_t *out) {
  memset(L, 0, sizeof *L);
  int m = d->ncv > pb_k ? d->ncv : pb_k, N = d->N;
  m = m > N ? N : m;
  mv = mv < d->ncv ? d->ncv : mv > m ? m : mv; /* the first cycle's basis */
  L->ncv = d->ncv, L->mc = mv;
  L->pb_k = pb_k, L->pb_delta = pb_delta;
  L->gabs = d->gabs / d->scale; /* the a posteriori bound's rounding term */
  L->terms = pb_k ? cm__op_sum_terms(op, comp) : -1;
  L->op = op, L->comp = comp, L->use_S = d->use_S, L->N = N;
  L->other = d->other, L->base = (uint64_t)(d->use_S ? d->r0 : d->c0);
  L->nev = nev, L->m = m;
  /* kept Ritz vectors at a restart: the wanted ones and a quarter of the
   * rest (a restart costs about N m keep flops; bench/: a third kept cost
   * 5-10% more on piles and crystals for the same matvecs) */
  L->keep = nev + (L->ncv - nev) / 4;
  if (L->keep > L->ncv - 2)
    L->keep = L->ncv - 2 > nev ? L->ncv - 2 : nev;
  L->nt = N > CM__PAR_MIN ? cm__op_threads(op) : 1;
  L->inv_s = 1.0 / d->scale;
  L->tol = tol;
  L->max_restarts = opts->max_iter > 0 ? opts->max_iter : 3000;
  L->seed = seed, L->Z = Z, L->nz = Z ? nz : 0, L->out = out;
  L->fused = cm__op_is_block(op);
  L->f32 = d->f32 && L->fused && isfinite(L->gabs);
  L->f32_gap = L->f32 ? CM__F32_GAP * L->gabs : 0;
  if (L->f32 && N >= cm__lz_basis32_min) { /* the float basis */
    out->basis32 = 1;
    L->V32 = cm__ws_malloc(NULL, (size_t)N * (size_t)(mv + 1), sizeof(float));
    /* three columns, or (lz_extract) the Ritz vectors it forms */
    L->R =
        cm__ws_malloc(NULL, (size_t)N, (size_t)lz_rcols(nev) * sizeof(double));
  } else {
    L->V = cm__ws_malloc(NULL, (size_t)N * (size_t)(mv + 1), sizeof(double));
  }
  L->w = cm__ws_malloc(NULL, (size_t)N, sizeof(double));
  L->tmp = malloc(sizeof(double) * ((size_t)L->other + 1));
  L->h = malloc(sizeof(double) * ((size_t)m + 2 + (size_t)L->nz));
  L->scl = malloc(sizeof(double) * ((size_t)m + 2));
  L->om_prev = calloc((size_t)m + 2, sizeof(double));
  L->om_cur = calloc((size_t)m + 2, sizeof(double));
  L->om_next = calloc((size_t)m + 2, sizeof(double));
  L->sel = calloc((size_t)m + 2, 1);
  L->P = (lz_proj_t){m,
                     0,
                     calloc((size_t)m * m, sizeof(double)),
                     calloc((size_t)m * m, sizeof(double)),
                     malloc(sizeof(double) * (size_t)m * m),
                     malloc(sizeof(double) * (size_t)m),
                     malloc(sizeof(double) * (size_t)m * m),
                     0};
  if (!(L->V || (L->V32 && L->R)) || !L->w || !L->tmp || !L->h || !L->scl ||
      !L->om_prev || !L->om_cur || !L->om_next || !L->sel || !L->P.H ||
      !L->P.D || !L->P.A || !L->P.theta || !L->P.Y) {
    lz_free(L);
    return CM__ERR(ctx, CM_NOMEM, NULL,
                   "out of memory for Lanczos (N = %d, "
                   "ncv %d)",
                   N, m);
  }
  /* With an explicit B a step runs as two passes: the first half of the
   * product with ||.||^2 (alpha = ||B^T v_j||^2 / s for S), then the
   * second half fused with the recurrence, which also writes w straight
   * into the next basis column, left unnormalised (scale scl[J]) until
   * that step's own pass normalises it in place: two vector passes a step
   * fewer. A deflated solve projects that w (lz_extend). */
  L->half1 = (lz_half_t){op, comp, d->use_S, NULL, 0};
  L->half2 = (lz_half_t){op, comp, !d->use_S, L->tmp, 0};
  L->half1.f32 = L->half2.f32 = L->f32;
  L->mv_flops =
      4.0 * (double)(L->fused ? cm__op_comp_nnz(op, comp) : (long)N * 8);
  L->J = 1;
  return CM_OK;
}

/* v_0: the warm start or a Gaussian vector (deflated), normalised. */
static int lz_start(cm_context_t *ctx, lz_t *L, const double *start) {
  double *v0 = lz_col(L, 0);
  cm__eig_start(L->op, L->comp, L->use_S, L->N, L->seed, start, v0);
  lz_deflate(L, v0, 2);
  double s = cm__nrm2(L->N, v0, L->nt);
  if (!(s > 0))
    return CM__ERR(ctx, CM_NUMERIC, NULL, "Lanczos start vector is zero");
  for (int i = 0; i < L->N; i++)
    v0[i] /= s;
  lz_store(L, 0);
  L->om_cur[0] = 1;
  L->scl[0] = 1;
  return CM_OK;
}

/* ---- extend: w = Op v_j - alpha v_j - beta_{j-1} v_{j-1} ------------------
 */

/* y = Op x / s, as cm__eig_apply, on the operator the solve iterates on
 * (S32 when f32: the two halves of lz_extend's fused step, alone) */
static void lz_apply(lz_t *L, const double *x, double *y) {
  if (!L->f32) {
    cm__eig_apply(L->op, L->comp, L->use_S, L->inv_s, x, y, L->tmp);
    return;
  }
  L->half1.in = x;
  lz_rows_sq(&L->half1, L->other, L->tmp, NULL, NULL, 0, 1, NULL, 0, 0, L->nt);
  lz_rows_sq(&L->half2, L->N, y, NULL, NULL, 0, 1, NULL, 0, 0, L->nt);
  lz_sub_scale(L->N, y, 0, y, L->inv_s, y, L->nt); /* exact: s = 2^e */
}

static void lz_extend(lz_t *L, lz_step_t *s) {
  int N = L->N, j = L->J - 1, k = L->k, m = L->m;
  double *vj = lz_col(L, j), *vn = lz_col(L, L->J);
  double *vp = j > k ? lz_col(L, j - 1) : NULL;
  *s = (lz_step_t){
      j, 0,   j > k ? L->P.H[(size_t)(j - 1) * m + j] : 0, j == k || L->force,
      0, L->w};
  double tm = cm__now();
  if (j > k && L->fused) { /* v_j = scl[j] V[:, j]; w goes to V[:, J] */
    double f = L->scl[j];
    L->half1.in = vj;
    s->alpha = f * f * L->inv_s *
               lz_rows_sq(&L->half1, L->other, L->tmp, NULL, NULL, 0, 1, NULL,
                          0, 0, L->nt);
    double ww =
        lz_rows_sq(&L->half2, N, vn, vj, L->V32 ? L->V32 + (size_t)j * N : NULL,
                   f, L->inv_s, vp, s->bprev, s->alpha, L->nt);
    L->out->t_matvec += cm__now() - tm;
    L->out->matvecs++;
    if (L->Z) { /* deflated: v_j and v_{j-1} lie in range P, so P of the
                   step's w is P Op v_j - alpha v_j - beta v_{j-1}, with
                   alpha = v_j . Op v_j = v_j . P Op P v_j; its norm anew */
      lz_deflate(L, vn, 1);
      ww = cm__nrm2(N, vn, L->nt);
      ww *= ww;
    }
    s->wp = vn, s->fin = 1;
    L->beta = sqrt(ww);
    return;
  }
  double wv[2];
  lz_apply(L, vj, L->w);
  L->out->t_matvec += cm__now() - tm;
  L->out->matvecs++;
  lz_deflate(L, L->w, 1); /* w = P Op v_j (v_j is in range P) */
  if (j == k && k > 0) {  /* arrow: w -= sum_i s_i u_i */
    lz_cols_t B = lz_cols(L);
    lz_gemv(&B, 0, N, 0, k, -1.0, L->P.H + (size_t)k * m, 1.0, L->w, L->nt);
  }
  s->alpha = lz_sub_dot(N, L->w, s->bprev, vp, vj, wv, L->nt);
  /* ||w - alpha v_j||^2 with the measured ||v_j||^2: no drift of norms */
  double ww = wv[0], b2 = ww - s->alpha * s->alpha * (2.0 - wv[1]);
  if (s->full || !(b2 > 0.01 * ww)) { /* explicit, or cancellation */
    lz_sub_scale(N, L->w, s->alpha, vj, 1.0, L->w, L->nt);
    L->beta = cm__nrm2(N, L->w, L->nt);
    s->fin = 1;
  } else {
    L->beta = sqrt(b2);
  }
}

/* ---- orthogonalise: Simon's omega recurrence, partial re-orth. ------------
 */

/* Estimates of v_{j+1} . v_q, q <= j, into om_next; returns the largest. */
static double lz_omega(lz_t *L, const lz_step_t *s) {
  int j = s->j, m = L->m;
  double noise = DBL_EPSILON * L->anorm / L->beta, ommax = 0;
  L->om_cur[j] = 1;
  for (int q = 0; q < j; q++) {
    const double *Hq = L->P.H + (size_t)q * m;
    double t = 0;
    for (int p = 0; p <= j; p++)
      t += Hq[p] * L->om_cur[p];
    t = (t - s->alpha * L->om_cur[q] - s->bprev * L->om_prev[q]) / L->beta;
    t += t >= 0 ? noise : -noise;
    L->om_next[q] = t;
    ommax = fabs(t) > ommax ? fabs(t) : ommax;
  }
  L->om_next[j] = noise;
  return noise > ommax ? noise : ommax;
}

static void lz_orthogonalise(lz_t *L, lz_step_t *s) {
  int j = s->j, k = L->k, m = L->m, N = L->N;
  double eps = DBL_EPSILON, eta = pow(eps, 0.75);
  L->P.H[(size_t)j * m + j] = s->alpha;
  double rowsum = fabs(s->alpha) + L->beta + s->bprev;
  for (int i = 0; j == k && i < k; i++)
    rowsum += fabs(L->P.H[(size_t)k * m + i]);
  L->anorm = rowsum > L->anorm ? rowsum : L->anorm;
  double ommax = j > k && L->beta > 0 ? lz_omega(L, s) : 0;
  if (!(s->full || ommax > sqrt(eps)))
    return;
  /* against the columns whose estimate passed eps^3/4 (Simon's modified
   * partial re-orthogonalisation), and the same ones plus the newest at
   * the step after; everything at the first step of a cycle */
  int all = j == k;
  if (!s->fin) /* w still holds the local part: finish it first */
    lz_sub_scale(N, L->w, s->alpha, lz_col(L, j), 1.0, L->w, L->nt);
  for (int q = 0; !all && q <= j; q++)
    L->sel[q] = fabs(L->om_next[q]) > eta || (L->force && L->sel[q]) || q == j;
  L->force = !L->force && !all; /* re-orthogonalise the next vector too */
  lz_cols_t B = lz_cols(L);
  L->beta = lz_reorth(N, B, L->J, all ? NULL : L->sel, s->wp, L->beta, L->h,
                      L->P.D + (size_t)j * m, L->nt);
  int cold = B.cold, f = 0; /* float columns used? */
  for (int q = 0; L->V32 && q < cold && q <= j; q++)
    f |= all || L->sel[q];
  L->r32 += f && L->pb_k && !L->pb_done;
  for (int q = 0; q <= j; q++) /* float columns: what their rounding left */
    if (all || L->sel[q])
      L->om_next[q] = L->V32 && q < cold ? lz_om_reset(L) : eps;
  s->fin = 1;
}

/* ---- the probabilistic bound from the first cycle ---------------------------
 */

/* The bound of bound.c's theorem from the first cycle as it stands: J
 * steps of the Krylov sequence of the Gaussian start (no restart, no
 * fresh vector yet), T_J the tridiagonal in H. Partial
 * re-orthogonalisation keeps the basis semi-orthogonal, so T_J is the
 * projection of Op / s on the Krylov space to O(eps ||Op||) (Simon 1984);
 * the allowance is bound.c's 3 J eps ||T||_1 plus the largest column sum
 * of the re-orthogonalisation coefficients D (of order sqrt(eps) ||Op||,
 * what T leaves out of the exact relation). bk: beta at a breakdown,
 * NAN if none. Gives up (pb_steps 0: the caller runs bound.c) when LAPACK
 * fails or out of memory. */
/* T_k's alpha and beta (blast: the last residual norm) into a and b, its
 * top eigenvalue and ||T||_1 into *th and *tn, a bound on ||D|| into *dn,
 * and the a posteriori certificate's data into q; 0 when it cannot be
 * made (q unusable), -1 when LAPACK fails. */
static int lz_post(const lz_t *L, int k, double blast, double *a, double *b,
                   double *th, double *tn, double *dn, cm__post_t *q) {
  int m = L->m;
  double *rs = calloc((size_t)k + 1, sizeof(double)); /* D's row sums */
  *dn = 0;
  if (!rs)
    return -1;
  for (int i = 0; i < k; i++) {
    a[i] = L->P.H[(size_t)i * m + i];
    b[i] = i + 1 < k ? L->P.H[(size_t)i * m + i + 1] : blast;
    double c = 0;
    for (int r = 0; r <= i; r++) {
      double x = fabs(L->P.D[(size_t)i * m + r]);
      c += x, rs[r] += x;
    }
    *dn = c > *dn ? c : *dn;
  }
  for (int i = 0; i < k; i++)
    *dn = rs[i] > *dn ? rs[i] : *dn;
  free(rs);
  *th = cm__kw_top(k, a, b, tn);
  if (!isfinite(*th))
    return -1;
  int ok = cm__post_init(q, L->N, L->pb_delta, k, a, b, L->P.D, (size_t)m, k,
                         *dn, *th, *tn, L->terms, L->gabs);
  /* re-orthogonalised against float columns: each step's vector also
   * carries sum_q D_qj (v~_q - v_q), of norm at most 2^-24 dn */
  if (L->r32)
    q->epsf += 0x1p-24 * *dn;
  return ok;
}

/* 1 when the a posteriori certificate holds within CM__PB_TARGET of
 * theta_k after k steps (blast: the last residual norm). */
static int lz_post_ok(const lz_t *L, int k, double blast) {
  double *a = malloc(sizeof(double) * ((size_t)k + 1));
  double *b = malloc(sizeof(double) * ((size_t)k + 1)), th, tn, dn;
  cm__post_t q;
  int ok = a && b && lz_post(L, k, blast, a, b, &th, &tn, &dn, &q) > 0 &&
           cm__post_check(&q, (1 + CM__PB_TARGET) * th);
  free(a), free(b);
  return ok;
}

/* The bound of bound.c's theorem from the first cycle as it stands: J
 * steps of the Krylov sequence of the Gaussian start (no restart, no
 * fresh vector yet), T_J the tridiagonal in H. Partial
 * re-orthogonalisation keeps the basis semi-orthogonal, so T_J is the
 * projection of Op / s on the Krylov space to O(eps ||Op||) (Simon 1984);
 * the allowance is bound.c's 3 J eps ||T||_1 plus a bound on ||D|| (the
 * re-orthogonalisation coefficients, of order sqrt(eps) ||Op||, what T
 * leaves out of the exact relation). Then bound.c's a posteriori bound
 * from the polynomials of H + D (blast: the last residual norm), where
 * lower. bk: beta at a breakdown, NAN if none. Gives up (pb_steps 0: the
 * caller runs bound.c) when LAPACK fails or out of memory. */
static void lz_pb_take(lz_t *L, double bk, double blast) {
  int k = L->J;
  double *a = malloc(sizeof(double) * ((size_t)k + 1));
  double *b = malloc(sizeof(double) * ((size_t)k + 1)), th = NAN, tn, dn;
  cm__post_t q;
  L->pb_done = 1;
  int post = a && b
                 ? lz_post(L, k, isnan(bk) ? blast : 0, a, b, &th, &tn, &dn, &q)
                 : -1;
  if (post >= 0 && L->r32) {
    /* re-orthogonalised against float columns: the theorem's premise (a
     * semi-orthogonal basis, to sqrt(eps)) is not assured, the a
     * posteriori certificate (which needs only the recurrence) is: it
     * alone, or bound.c's own run (pb_steps 0) */
    double up = post > 0 ? cm__post_upper(&q, 16 * th) : INFINITY;
    if (isfinite(up)) {
      L->pb_upper = up + L->f32_gap, L->pb_theta = th, L->pb_steps = k;
      L->pb_eps = up / th - 1;
    }
    post = -1; /* done */
  }
  if (post >= 0) {
    double allow = 3.0 * k * DBL_EPSILON * tn + dn;
    L->pb_upper = cm__kw_upper(L->N, k, th, allow, bk, L->pb_delta, &L->pb_eps);
    if (post > 0)
      L->pb_upper = fmin(
          L->pb_upper,
          cm__post_upper(&q, isfinite(L->pb_upper) ? L->pb_upper : 16 * th));
    L->pb_upper += L->f32_gap; /* lambda_max(S) <= that of S32 + ||S - S32|| */
    L->pb_theta = th;
    L->pb_steps = k;
  }
  free(a), free(b);
}

/* ---- the next basis vector: normalised, or fresh after a breakdown ------ */

static void lz_advance(lz_t *L, const lz_step_t *s) {
  int j = s->j, J = L->J, N = L->N, m = L->m;
  double eps = DBL_EPSILON, *vj = lz_col(L, j);
  double *vn = lz_col(L, J);
  if (!(L->beta > (double)N * eps * L->anorm)) {
    if (L->pb_k && !L->pb_done) /* the start's Krylov space ends here */
      lz_pb_take(L, L->beta, 0);
    /* breakdown: an invariant subspace was found; go on from a fresh
     * Gaussian vector orthogonal to it (the copies of a repeated
     * eigenvalue lie there), or stop when nothing is left */
    for (int i = 0; i < N; i++)
      L->w[i] = cm__gauss(L->seed ^ (LZ_SEED + (uint64_t)L->out->matvecs),
                          L->base + (uint64_t)i);
    lz_deflate(L, L->w, 2);
    double s0 = cm__nrm2(N, L->w, L->nt);
    double s1 =
        lz_reorth(N, lz_cols(L), J, NULL, L->w, -1.0, L->h, NULL, L->nt);
    if (!(s1 > 1e-8 * s0))
      L->exhausted = 1; /* the basis spans the whole space */
    else
      lz_sub_scale(N, L->w, 0, vj, 1.0 / s1, vn, L->nt), lz_store(L, J);
    L->beta = 0;
    for (int q = 0; q <= j; q++)
      L->om_next[q] = lz_om_reset(L);
    L->scl[J] = 1;
  } else if (s->wp == vn) { /* normalised by the next step's pass */
    L->scl[J] = 1.0 / L->beta;
    if (J == L->mc) { /* no next step before the restart: now */
      lz_sub_scale(N, vn, 0, vj, L->scl[J], vn, L->nt);
      L->scl[J] = 1;
      lz_store(L, J);
    }
  } else {
    lz_sub_scale(N, L->w, s->fin ? 0 : s->alpha, vj, 1.0 / L->beta, vn, L->nt);
    L->scl[J] = 1;
    lz_store(L, J);
  }
  if (J >= N - L->nz)
    L->exhausted = 1; /* the basis spans the space: the projection is exact */
  if (J < m) {
    L->P.H[(size_t)j * m + J] = L->beta;
    L->P.H[(size_t)J * m + j] = L->beta;
  }
  double *t = L->om_prev; /* rotate the omega rows: prev <- cur <- next */
  L->om_prev = L->om_cur, L->om_cur = L->om_next, L->om_next = t;
  L->om_cur[J] = 1;
}

/* ---- the bound's tail: plain steps after the wanted pairs converged ------ */

/* When the wanted pairs pass the test at J < pb_k steps of the first cycle,
 * the steps left for the bound need only the tridiagonal, not the basis:
 * they run as bound.c's plain three-term recurrence (no omega estimates, no
 * re-orthogonalisation; with an explicit B in lz_extend's two fused
 * passes), rolling three vectors (V[:, J], V[:, J + 1] and w) instead of
 * writing pb_k - J fresh basis columns. The same when the first cycle's
 * basis (mc) ends before pb_k, the pairs not converged: at J = mc, rolling
 * through T2's two vectors and w, V[:, J] left for the restart that
 * follows (the J x J block, the Ritz pairs and beta stay as they are).
 * Their alpha and
 * beta extend T in P.H past the J x J block the pairs come from (which,
 * with V[:, 0..J), stays as it is for the extraction). By interlacing, the
 * top eigenvalue of T only grows with the steps, whatever rounding does to
 * the orthogonality of the tail, and bound.c's allowance 3 k eps ||T||_1
 * covers the rounding of a plain run: the bound from k steps holds as it
 * does for bound.c's own run. Products count among matvecs. Returns -1
 * when out of memory for T2 (nothing run). */
static int lz_pb_tail(lz_t *L, double deadline) {
  int N = L->N, J = L->J, m = L->m, k = J;
  double *prev = lz_col(L, J - 1), *cur = lz_col(L, J);
  /* the next vectors roll through V[:, J], V[:, J + 1] and w after
   * converged pairs (nothing reads V[:, J] afterwards); when a restart
   * follows (the first cycle's basis is full, J = mc), through two
   * vectors of the workspace and w, V[:, J] left for the restart */
  int keep = !L->converged, first = keep ? 0 : 1;
  if (keep && !L->T2 &&
      !(L->T2 = cm__ws_malloc(NULL, (size_t)N, 2 * sizeof(double))))
    return -1;
  double *buf[3] = {keep ? L->T2 : cur,
                    keep ? L->T2 + (size_t)N : lz_col(L, J + 1), L->w};
  double bprev = L->beta, bk = NAN, eps = DBL_EPSILON, blast = L->beta;
  double f = L->scl[J]; /* cur = f x its stored values (fused steps) */
  if (!L->fused && f != 1) {
    lz_sub_scale(N, cur, 0, cur, f, cur, L->nt);
    f = 1;
  }
  int kmax = L->pb_k < m ? L->pb_k : m; /* T_k fits in P.H */
  for (int r = 0; k < kmax; r++) {
    double *nxt = buf[(r + first) % 3], alpha, ww, tm = cm__now();
    if (L->fused) { /* two passes, as lz_extend's: cur normalised in place */
      L->half1.in = cur;
      alpha = f * f * L->inv_s *
              lz_rows_sq(&L->half1, L->other, L->tmp, NULL, NULL, 0, 1, NULL, 0,
                         0, L->nt);
      ww = lz_rows_sq(&L->half2, N, nxt, cur, NULL, f, L->inv_s, prev, bprev,
                      alpha, L->nt);
      L->out->t_matvec += cm__now() - tm;
    } else {
      double wv[2];
      cm__eig_apply(L->op, L->comp, L->use_S, L->inv_s, cur, nxt, L->tmp);
      L->out->t_matvec += cm__now() - tm;
      alpha = lz_sub_dot(N, nxt, bprev, prev, cur, wv, L->nt);
      lz_sub_scale(N, nxt, alpha, cur, 1.0, nxt, L->nt);
      ww = cm__nrm2(N, nxt, L->nt);
      ww *= ww;
    }
    L->out->matvecs++;
    double beta = sqrt(ww), rowsum = fabs(alpha) + beta + bprev;
    L->anorm = rowsum > L->anorm ? rowsum : L->anorm;
    L->P.H[(size_t)k * m + k] = alpha;
    k++;
    blast = beta;
    if (!(beta > (double)N * eps * L->anorm)) {
      bk = beta; /* the Krylov space of the start ends here */
      break;
    }
    if (k < kmax)
      L->P.H[(size_t)(k - 1) * m + k] = L->P.H[(size_t)k * m + k - 1] = beta;
    if (lz_post_ok(L, k, beta))
      break;        /* the a posteriori bound is within the target */
    f = 1.0 / beta; /* nxt: normalised by the next step (fused) */
    if (!L->fused && k < kmax) {
      lz_sub_scale(N, nxt, 0, nxt, f, nxt, L->nt);
      f = 1;
    }
    prev = cur, cur = nxt, bprev = beta;
    if (deadline > 0 && cm__now() > deadline)
      break;
  }
  L->J = k; /* lz_pb_take reads T_k from P.H */
  lz_pb_take(L, bk, blast);
  L->J = J;
  return 0;
}

/* ---- test: the wanted Ritz pairs of the J x J projected problem --------- */

/* Every step while its ~J^3 flops are small against a matvec's ~4 nnz, else
 * every few steps (at most LZ_TEST_MAX apart; sizes only, never timings).
 * The test is ARPACK's rule on Op / s, so its floor eps^2/3 is relative to
 * the operator's scale. Returns -1 when LAPACK fails. */
static int lz_test(lz_t *L) {
  int J = L->J, nev = L->nev, k = L->k;
  double jc = k == 0 ? 100.0 * J * J : (double)J * J * J; /* MRRR, dense */
  int every =
      jc <= 0.25 * L->mv_flops ? 1 : (int)ceil(jc / (0.25 * L->mv_flops));
  every = every > LZ_TEST_MAX ? LZ_TEST_MAX : every;
  int pb_now = L->pb_k && !L->pb_done && J >= L->pb_k;
  if (!((J >= nev + 1 && (J - nev - 1) % every == 0) || L->exhausted ||
        J == L->mc || pb_now))
    return 0;
  int rr = lz_ritz(&L->P, J, J == L->mc ? L->keep : nev, k == 0);
  if (rr < 0)
    return rr == -2 ? -2 : -1; /* -2: out of memory */
  double eps23 = pow(DBL_EPSILON, 2.0 / 3.0);
  int f = L->P.found, good = 0;
  for (int i = f - nev > 0 ? f - nev : 0; i < f; i++) {
    double r = fabs(L->beta * L->P.Y[(size_t)i * J + (J - 1)]);
    double t = fabs(L->P.theta[i]), lim = L->tol * (t > eps23 ? t : eps23);
    if (L->f32) /* room for ||(S - S32) z||, checked on S at the end */
      lim *= LZ_F32_ROOM;
    good += r <= lim || (L->low > 0 && r <= LZ_LOOK_TOL * t && t + r <= L->low);
  }
  L->converged = good >= nev && f >= nev;
  return 0;
}

/* ---- restart: keep the top `keep` Ritz vectors (thick restart) ---------- */

static int lz_cycle(cm_context_t *ctx, lz_t *L) {
  int kk = L->P.found;
  if (lz_correct(&L->P, 0, kk))
    return CM__ERR(ctx, CM_NUMERIC, NULL,
                   "Lanczos restart: out of memory, "
                   "or LAPACK failed on the projected problem");
  int rs = lz_restart(L->N, lz_cols(L), lz_col(L, L->mc), lz_col(L, kk), L->mc,
                      &L->P, kk, L->beta, L->h, L->nt);
  if (rs == -1)
    return CM__ERR(ctx, CM_NOMEM, NULL,
                   "out of memory for the Lanczos "
                   "restart");
  if (rs)
    return CM__ERR(ctx, CM_NUMERIC, NULL,
                   "Lanczos restart failed (N %d, ncv %d): %s", L->N, L->mc,
                   rs == -2 ? "the kept Ritz vectors are not independent"
                            : "the residual lies in their span");
  /* v_kk is orthogonal to the new U to rounding, but the relation holds
   * only to O(D^2): start the estimates a hundred times above eps (a
   * float basis: its own reset, if larger) */
  for (int p = 0; p < kk; p++)
    L->om_cur[p] = fmax(100 * DBL_EPSILON, lz_om_reset(L));
  L->om_cur[kk] = 1;
  L->k = kk;
  L->J = kk + 1;
  L->scl[kk] = 1;
  lz_store(L, kk);
  L->mc = L->ncv; /* the first cycle may have been longer */
  return CM_OK;
}

/* Steps and restarts until the wanted pairs pass the test, the space is
 * exhausted, or a budget (cycles, deadline) ends the run. */
static int lz_run(cm_context_t *ctx, lz_t *L, double deadline) {
  for (;;) {
    lz_step_t s;
    lz_extend(L, &s);
    double t0 = cm__now();
    lz_orthogonalise(L, &s);
    L->out->t_orth += cm__now() - t0;
    lz_advance(L, &s);
    int tr = lz_test(L);
    if (tr == -2)
      return CM__ERR(ctx, CM_NOMEM, NULL,
                     "out of memory for the projected Lanczos problem");
    if (tr)
      return CM__ERR(ctx, CM_NUMERIC, NULL,
                     "LAPACK failed on the projected Lanczos problem");
    int pb_left = L->pb_k && !L->pb_done; /* the first cycle, then */
    if (pb_left && L->converged && !L->exhausted && L->J < L->pb_k &&
        lz_post_ok(L, L->J, L->beta))
      lz_pb_take(L, NAN, L->beta), pb_left = 0; /* a posteriori: enough */
    /* the rest is for T alone: after the pairs converged, or past the
     * first cycle's basis (then the restart follows) */
    if (pb_left && !L->exhausted && L->J < L->pb_k &&
        (L->converged || L->J == L->mc) &&
        !(deadline > 0 && cm__now() > deadline)) {
      if (lz_pb_tail(L, deadline)) /* out of memory: the bound from J */
        lz_pb_take(L, NAN, L->beta);
      pb_left = 0;
    }
    if (pb_left && (L->J >= L->pb_k || L->exhausted || L->J == L->mc ||
                    (deadline > 0 && cm__now() > deadline)))
      lz_pb_take(L, NAN, L->beta), pb_left = 0;
    if ((L->converged && !pb_left) || L->exhausted)
      return CM_OK;
    if (deadline > 0 && cm__now() > deadline) {
      L->timed_out = 1; /* the partial result from the basis as it is now */
      if (L->P.J != L->J && L->J >= L->nev + 1 &&
          lz_ritz(&L->P, L->J, L->nev, L->k == 0) < 0)
        L->P.found = 0;
      return CM_OK;
    }
    if (++L->J <= L->mc)
      continue;
    L->J = L->mc;
    if (L->restarts + 1 >= L->max_restarts) /* a budget of max_iter cycles */
      return CM_OK;
    L->restarts++;
    double t1 = cm__now();
    int st = lz_cycle(ctx, L);
    L->out->t_restart += cm__now() - t1;
    if (st)
      return st;
  }
}

/* ---- extract: the top pairs, corrected, positive, descending ------------ */

/* The top nwant (>= nev) pairs: values (of Op / s) into lam, vectors
 * formed in place in V[:, 0..kept) (a float basis: in R, of doubles),
 * *vecs pointing at them. Returns kept, or -1 when out of memory or LAPACK
 * fails. */
static int lz_extract(lz_t *L, double *lam, int nwant, double **vecs) {
  if (nwant > L->P.found && L->P.J > L->P.found &&
      lz_ritz(&L->P, L->P.J, nwant, L->k == 0) < 0)
    return -1;
  int J0 = L->P.J, f = L->P.found < 0 ? 0 : L->P.found;
  int k0 = f > nwant ? f - nwant : 0, nf = f - k0; /* the top, ascending */
  double *Yd = malloc(sizeof(double) * ((size_t)J0 * (size_t)(nf + 1) + 1));
  if (!Yd || lz_correct(&L->P, k0, nf)) {
    free(Yd);
    return -1;
  }
  int kept = 0; /* descending, positive only: their coefficients, then */
  for (int i = nf - 1; i >= 0; i--) /* one pass over the basis */
    if (L->P.theta[k0 + i] > 0) {
      lam[kept] = L->P.theta[k0 + i];
      memcpy(Yd + (size_t)kept * J0, L->P.Y + (size_t)(k0 + i) * J0,
             sizeof(double) * (size_t)J0);
      kept++;
    }
  /* in place: the basis is done with, and its pages are already touched */
  lz_cols_t c = lz_cols(L);
  c.Out = L->V32 ? L->R : L->V;            /* the ring has room (lz_setup) */
  if (L->V32 && kept > lz_rcols(L->nev)) { /* cannot happen: */
    free(Yd); /* nwant <= nev + lz_look_next(nev) */
    return -1;
  }
  int st = lz_combine(L->N, c, J0, Yd, J0, kept, 0, NULL, NULL, L->nt);
  free(Yd);
  *vecs = c.Out;
  return st ? -1 : kept;
}

/* ---- the pairs found so far, and the search for missed copies ------------ */

typedef struct {
  int n, cap;    /* pairs held (descending), room */
  double *lam;   /* values of Op / s, size cap */
  double *U;     /* N x cap orthonormal vectors */
  int converged; /* every run that contributed converged */
  int timed_out; /* a run stopped by the deadline */
} lz_pairs_t;

/* The main solve's next Ritz vectors after the wanted ones (orthonormal,
 * in its Krylov space): the search's first look deflates them too. */
typedef struct {
  int n, cap; /* vectors held, room */
  double *W;  /* N x cap */
} lz_extra_t;

/* Inserts pair (t, x) by value, keeping the top cap; x is orthogonalised
 * against the vectors held (two passes) and normalised. Returns 1 if it
 * was kept. */
static int lz_pairs_add(lz_pairs_t *F, int N, double t, const double *x,
                        int th) {
  if (F->n == F->cap && !(t > F->lam[F->n - 1]))
    return 0;
  int at = F->n < F->cap ? F->n : F->cap - 1;
  double *u = F->U + (size_t)at * N;
  /* the element-wise passes in threads (th > 1 only for a long N): the
   * same bits at any count (this was a fifth of a 1e6 pile's 6-mode
   * eigen phase outside its products, serially) */
#pragma omp parallel for schedule(static) num_threads(th)
  for (int i = 0; i < N; i++)
    u[i] = x[i];
  for (int pass = 0; pass < 2; pass++)
    for (int q = 0; q < at; q++) {
      const double *uq = F->U + (size_t)q * N;
      double c = cm__dot(N, uq, u, th);
#pragma omp parallel for schedule(static) num_threads(th)
      for (int i = 0; i < N; i++)
        u[i] -= c * uq[i];
    }
  double nu = cm__nrm2(N, u, th);
  if (!(nu > 1e-8))
    return 0; /* already in their span */
#pragma omp parallel for schedule(static) num_threads(th)
  for (int i = 0; i < N; i++)
    u[i] /= nu;
  F->lam[at] = t;
  F->n = at + 1;
  for (int p = at; p > 0 && F->lam[p] > F->lam[p - 1]; p--) { /* sort */
    double tl = F->lam[p], *up = F->U + (size_t)p * N, *uo = up - N;
    F->lam[p] = F->lam[p - 1], F->lam[p - 1] = tl;
#pragma omp parallel for schedule(static) num_threads(th)
    for (int i = 0; i < N; i++) {
      double tu = up[i];
      up[i] = uo[i], uo[i] = tu;
    }
  }
  return 1;
}

/* One solve of the top nev pairs of Op / s (deflated by F's vectors when
 * deflate), to tolerance tol; merged into F when add (*added: pairs
 * kept). *top: the largest value found (0 none). pb_delta > 0 (and no
 * deflation, no warm start): also the probabilistic bound from the first
 * cycle into out->pb_*, the cycle's basis long enough for it when the
 * options leave its size open and that fits in LZ_BASIS_BYTES, else its
 * steps past the basis plain (lz_pb_tail) before the first restart. */
static int lz_solve(cm_context_t *ctx, cm_operator_t *op, int comp,
                    const cm_options_t *opts, const cm__eig_dims_t *d, int nev,
                    double tol, int deflate, uint64_t seed, const double *start,
                    double deadline, double pb_delta, cm__eig_t *out,
                    lz_pairs_t *F, int add, int *added, double *top,
                    lz_extra_t *X, double low) {
  lz_t L;
  int pb_k =
      pb_delta > 0 && !deflate && !start ? cm__kw_steps(d->N, pb_delta) : 0;
  /* the first cycle's basis: long enough for the bound's steps, unless the
   * options set the basis size or that many vectors (and the residual) pass
   * LZ_BASIS_BYTES; then as many as that allows (lz_setup keeps at least
   * ncv), and the bound's steps past it run plain (lz_pb_tail) before the
   * first restart */
  int mv = opts->ncv > 0 ? d->ncv : pb_k;
  double fit = lz_basis_fit(d->N) - 1;
  if (mv > fit)
    mv = (int)fit;
  int st = lz_setup(ctx, &L, op, comp, opts, d, nev, tol, deflate ? F->U : NULL,
                    F->n, seed, pb_k, mv, pb_delta, out);
  L.low = low;
  if (st)
    return st;
  if (deflate && !add)
    lz_look_f32(&L);
  int nx = X ? nev + X->cap : nev;
  double *lv = malloc(sizeof(double) * ((size_t)nx + 1));
  st = lv ? lz_start(ctx, &L, start) : CM_NOMEM;
  if (!st)
    st = lz_run(ctx, &L, deadline);
  if (!(L.converged || L.exhausted) || L.timed_out)
    nx = nev; /* the next pairs only from a converged run */
  double *vecs = NULL;
  int kept = st ? 0 : lz_extract(&L, lv, nx, &vecs);
  if (kept < 0)
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for Ritz vectors");
  *added = 0, *top = kept > 0 ? lv[0] + L.f32_gap : 0;
  /* a search never lists a value at the rounding level of the top (the
   * null space of a rank-deficient operator) */
  double floor = deflate && F->n ? (double)L.N * DBL_EPSILON * F->lam[0] : 0;
  for (int i = 0; !st && add && i < kept && i < nev && lv[i] > floor; i++)
    *added += lz_pairs_add(F, L.N, lv[i], vecs + (size_t)i * L.N, L.nt);
  if (X && !st) { /* the next Ritz vectors: the search's first look */
    X->n = kept > nev ? kept - nev : 0;
    memcpy(X->W, vecs + (size_t)nev * L.N,
           sizeof(double) * (size_t)L.N * (size_t)X->n);
  }
  if (!st && !(L.converged || L.exhausted))
    F->converged = 0;
  F->timed_out |= L.timed_out;
  out->iterations += L.restarts;
  if (!st && L.pb_steps > 0) { /* of Op: times the scale */
    out->pb_steps = L.pb_steps;
    out->pb_upper = L.pb_upper * d->scale;
    out->pb_theta = L.pb_theta * d->scale;
    out->pb_eps = L.pb_eps;
  }
  free(lv);
  lz_free(&L);
  return st;
}

/* The basis size when the options leave it open is lz_auto_ncv; a search
 * for copies runs nev = 1 in a basis of at most LZ_NCV_MIN vectors. */
static int lz_check_dims(const cm__eig_dims_t *d, int nz, cm__eig_dims_t *c) {
  *c = *d;
  c->nev = 1;
  int room = d->N - nz; /* the deflated space */
  if (room < 3)
    return 0;
  c->ncv = d->ncv < LZ_NCV_MIN ? d->ncv : LZ_NCV_MIN;
  c->ncv = c->ncv > room ? room : c->ncv;
  return c->ncv > 1;
}

/* ---- the search for missed copies ------------------------------------------
 */

/* Since one Krylov sequence sees a repeated eigenvalue once (and a
 * breakdown used to pass the test), solves again for the top pair
 * orthogonal to every pair in F, from a fresh Gaussian start, and lists it
 * while it belongs among the top d->nev: each copy of a repeated top
 * eigenvalue costs one such solve, and the last one (no copy) confirms the
 * list. */
static int lz_search_run(cm_context_t *ctx, cm_operator_t *op, int comp,
                         const cm_options_t *opts, const cm__eig_dims_t *d,
                         double deadline, cm__eig_t *out, lz_pairs_t *F,
                         const lz_extra_t *X, int top_ok) {
  cm__eig_dims_t c;
  int st = CM_OK, added = 0;
  /* top_ok: a missed top mode is accounted for, by the probabilistic
   * bound's event after a Gaussian start (probability at most delta), or
   * by an independent run's (bound.c) top Ritz value after a warm start.
   * Then one pair needs no search: a copy of it would not be listed
   * (equal, not above). */
  if (top_ok && d->nev == 1 && F->n == F->cap)
    return CM_OK;
  /* A first look: the top of Op deflated by the pairs found and the
   * solve's next Ritz vectors X (contiguous after F's full list in F->U).
   * A missed copy of a listed value is orthogonal to the solve's whole
   * Krylov space (it never entered it), so it is also an eigenvector of
   * this operator, with its value (>= low); without one, the top lies
   * below the next X->n values, mostly well below low, and a probe shows
   * it as soon as its top pair is resolved below low (residual r <= 1e-2
   * theta and theta + r <= low: the eigenvalue it approximates is below
   * low), else at 1e-5 as a probe. Otherwise the probes below decide. */
  if (top_ok && X && X->n > 0 && F->n == F->cap && F->converged &&
      !F->timed_out && lz_check_dims(d, F->n + X->n, &c)) {
    double top = 0, low = F->lam[F->n - 1];
    int n0 = F->n;
    F->n = n0 + X->n, F->converged = 1;
    st = lz_solve(ctx, op, comp, opts, &c, 1, LZ_PROBE_TOL, 1,
                  d->seed ^ 0x6c6f6f6b00000000ULL, NULL, deadline, 0, out, F, 0,
                  &added, &top, NULL, low); /* "look" */
    int done = !st && F->converged && top * (1 + 2 * LZ_PROBE_TOL) <= low;
    F->n = n0, F->converged = 1;
    if (st || done)
      return st;
  }
  double tol = opts->tol > 0 ? opts->tol : 1e-10, tc = fmax(tol, LZ_PROBE_TOL);
  for (int r = 1; !st && F->converged && !F->timed_out && F->n > 0 &&
                  r <= d->nev && lz_check_dims(d, F->n, &c);
       r++) {
    uint64_t seed =
        d->seed ^ (0x636f706965730000ULL + (uint64_t)r); /* "copies" */
    double top = 0, low = F->lam[F->n - 1];
    /* a probe to a loose tolerance first: most searches end there */
    st = lz_solve(ctx, op, comp, opts, &c, 1, tc, 1, seed, NULL, deadline, 0,
                  out, F, tc <= tol, &added, &top, NULL, 0);
    if (st || (F->n == F->cap && top * (1 + 2 * tc) <= low) ||
        !(top > (double)d->N * DBL_EPSILON * F->lam[0]))
      break;      /* the top of the rest lies below the list: it is complete */
    if (tc > tol) /* a copy: solve for it to the tolerance, same start */
      st = lz_solve(ctx, op, comp, opts, &c, 1, tol, 1, seed, NULL, deadline, 0,
                    out, F, 1, &added, &top, NULL, 0);
    if (!added)
      break;
  }
  return st;
}

/* lz_search_run, its products also counted in out->search_matvecs */
static int lz_search(cm_context_t *ctx, cm_operator_t *op, int comp,
                     const cm_options_t *opts, const cm__eig_dims_t *d,
                     double deadline, cm__eig_t *out, lz_pairs_t *F,
                     const lz_extra_t *X, int top_ok) {
  int mv0 = out->matvecs;
  int st = lz_search_run(ctx, op, comp, opts, d, deadline, out, F, X, top_ok);
  out->search_matvecs += out->matvecs - mv0;
  return st;
}

int cm__eig_copies(cm_context_t *ctx, cm_operator_t *op, int comp,
                   const cm_options_t *opts, double deadline, int *k,
                   double *lam, double **vecs, cm__eig_t *out) {
  cm__eig_dims_t d;
  cm__eig_t dummy;
  memset(&dummy, 0, sizeof dummy);
  int st = cm__eig_dims(ctx, op, comp, opts, CM_METHOD_LANCZOS, lz_auto_ncv,
                        &dummy, &d);
  if (st || *k < 1)
    return st;
  lz_pairs_t F = {
      0,
      d.nev,
      malloc(sizeof(double) * ((size_t)d.nev + 1)),
      cm__ws_malloc(NULL, (size_t)d.N, sizeof(double) * ((size_t)d.nev + 1)),
      1,
      0};
  if (!F.lam || !F.U) {
    free(F.lam), cm__ws_free(F.U);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (search for copies)");
  }
  int th = d.N > CM__PAR_MIN ? cm__op_threads(op) : 1;
  for (int i = 0; i < *k; i++) /* of Op / s, as the searches see them */
    lz_pairs_add(&F, d.N, lam[i] / d.scale, *vecs + (size_t)i * d.N, th);
  int n0 = F.n;
  double *keep = malloc(sizeof(double) * ((size_t)n0 + 1));
  if (!keep) {
    free(F.lam), cm__ws_free(F.U);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (search for copies)");
  }
  for (int i = 0; keep && i < n0; i++)
    keep[i] = F.lam[i];
  st = lz_search(ctx, op, comp, opts, &d, deadline, out, &F, NULL, 0);
  int same = keep && F.n == n0;
  for (int i = 0; same && i < n0; i++)
    same = keep[i] == F.lam[i];
  free(keep);
  if (!st && !same) { /* a copy was listed: the new list replaces it */
    double *nv = realloc(*vecs, sizeof(double) * (size_t)d.N * (size_t)F.n);
    if (!nv) {
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (search for copies)");
    } else {
      memcpy(nv, F.U, sizeof(double) * (size_t)d.N * (size_t)F.n);
      for (int i = 0; i < F.n; i++)
        lam[i] = F.lam[i] * d.scale;
      *vecs = nv, *k = F.n;
      out->rayleigh = 1;
    }
  }
  free(F.lam), cm__ws_free(F.U);
  return st;
}

/* ---- the driver -----------------------------------------------------------
 */

/* cm__eig_lanczos on S, or with f32 on S32 (*redo set when a residual on
 * S then passes the tolerance). */
static int lz_all(cm_context_t *ctx, cm_operator_t *op, int comp,
                  const cm_options_t *opts, const double *start,
                  double deadline, double pb_delta, int f32, cm__eig_t *out,
                  int *redo) {
  cm__eig_dims_t d;
  int st = cm__eig_dims(ctx, op, comp, opts, CM_METHOD_LANCZOS, lz_auto_ncv,
                        out, &d);
  if (st)
    return st;
  d.f32 = f32 && isfinite(d.gabs);
  /* F->U holds the list, then the solve's next Ritz vectors (lz_extra_t):
   * at most lz_look_next(nev) of them. Each step of the look deflates by
   * all of F->U, so every vector costs two passes a step. 2 took as many
   * products as 10 or fewer on session 17's piles (0 needed probes: more);
   * since the columns' breadth-first order, 4 took fewer on the large ones
   * (the 1e6 pile 35 -> 21, 900k contacts 38 -> 24, 300k 46 -> 27) and as
   * many or at most 8 more on the others (docs/performance.md, issue 19,
   * session 32) */
  int q = (d.ncv - d.nev) / 4, qmax = lz_look_next(d.nev);
  q = q < qmax ? q : qmax;
  lz_pairs_t F = {0,
                  d.nev,
                  malloc(sizeof(double) * ((size_t)d.nev + 1)),
                  cm__ws_malloc(NULL, (size_t)d.N,
                                sizeof(double) * ((size_t)d.nev + q + 1)),
                  1,
                  0};
  lz_extra_t X = {0, q, F.U ? F.U + (size_t)d.nev * d.N : NULL};
  int added = 0;
  double top0 = 0;
  st = F.lam && F.U ? CM_OK
                    : CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (Lanczos)");
  /* after a warm start the bound comes from a run of its own (bound.c),
   * made here: its top Ritz value, from an independent Gaussian start,
   * tells the search whether the solve missed the top mode */
  int own = start && pb_delta > 0, top_ok = !start;
  /* the next Ritz vectors serve the look, which one mode never needs */
  lz_extra_t *Xp = d.nev > 1 && (!start || own) ? &X : NULL;
  if (!st)
    st = lz_solve(ctx, op, comp, opts, &d, d.nev,
                  opts->tol > 0 ? opts->tol : 1e-10, 0, d.seed, start, deadline,
                  pb_delta, out, &F, 1, &added, &top0, Xp, 0);
  if (!st && own && F.converged && !F.timed_out) {
    cm__eig_bound_t b;
    st = cm__eig_prob_bound(ctx, op, comp, pb_delta, &b);
    if (!st) {
      out->pb_steps = b.steps, out->pb_upper = b.upper;
      out->pb_theta = b.theta, out->pb_eps = b.eps;
      out->matvecs += b.steps; /* the run's products are the analysis's */
      top_ok = F.n > 0 && !(b.theta / d.scale > F.lam[0] * (1 + 1e-6));
    }
  }
  if (!st)
    st = lz_search(ctx, op, comp, opts, &d, deadline, out, &F, Xp, top_ok);
  out->nev = F.n;
  out->f32 = d.f32;
  out->converged = F.converged && !F.timed_out && F.n > 0;
  out->rayleigh = 1;
  out->lambda = malloc(sizeof(double) * ((size_t)F.n + 1));
  if (!st && !out->lambda)
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for Ritz vectors");
  for (int i = 0; !st && i < F.n; i++)
    out->lambda[i] = F.lam[i] * d.scale;
  if (!st)
    st = cm__eig_finish(ctx, op, comp, d.use_S, F.U, NULL, 0, out);
  /* solved on S32: every residual on S (cm__eig_finish's) within the
   * tolerance, as lz_test measures it, or the solve again on S */
  double tol = opts->tol > 0 ? opts->tol : 1e-10;
  double e23 = pow(DBL_EPSILON, 2.0 / 3.0) * d.scale;
  for (int i = 0; !st && d.f32 && out->converged && i < out->nev; i++)
    *redo |= !(out->res[i] * out->lambda[i] <= tol * fmax(out->lambda[i], e23));
  if (!st && !out->converged) {
    st = CM_NOT_CONVERGED;
    CM__ERR(ctx, CM_NOT_CONVERGED, NULL,
            "eigen-solve stopped by its %s budget after %d matvecs; partial "
            "result",
            F.timed_out ? "time" : "iteration", out->matvecs);
  }
  free(F.lam), cm__ws_free(F.U);
  return st;
}

/* The top pairs (with the probabilistic bound from the first cycle when
 * pb_delta > 0), then the search for missed copies (lz_search). From
 * tolerance CM__LZ_F32_TOL the solve's and the search's products read B's
 * float values (S32; the bound's own run and cm__eig_finish's stay on S),
 * to LZ_F32_ROOM of the tolerance, and the bound and the search's top
 * values add ||S - S32||, and from cm__lz_basis32_min rows the basis is
 * float; a residual on S above the tolerance (not met on the scenes
 * measured) solves again on S with a double basis, both runs' products
 * counted. */
int cm__eig_lanczos(cm_context_t *ctx, cm_operator_t *op, int comp,
                    const cm_options_t *opts, const double *start,
                    double deadline, double pb_delta, cm__eig_t *out) {
  int f32 = opts->tol >= CM__LZ_F32_TOL && cm__op_is_block(op) &&
            !cm__op_make_f32(NULL, op);
  int redo = 0;
  if (!f32)
    cm__op_make_f64(op); /* the solve on S (no memory: the CSR's values) */
  int st =
      lz_all(ctx, op, comp, opts, start, deadline, pb_delta, f32, out, &redo);
  if (st || !redo)
    return st;
  cm__op_make_f64(op);
  int smv = out->search_matvecs;
  cm__eig_t spent = cm__eig_drop(ctx, out); /* st is CM_OK: nothing to clear */
  st = lz_all(ctx, op, comp, opts, start, deadline, pb_delta, 0, out, &redo);
  cm__eig_add_cost(out, &spent);
  out->search_matvecs += smv;
  return st;
}
