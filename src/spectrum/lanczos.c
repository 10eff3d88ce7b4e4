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
 * ARPACK's rule (|beta y_last| <= tol max(|theta|, eps^2/3)), so a run stops
 * as soon as the wanted pairs are good, not at the end of a cycle.
 *
 * Every sum is cut into fixed chunks and combined in order, and no decision
 * depends on timing except the caller's deadline: the same operator gives
 * the same bits at any thread count. Not for small problems (dense.c). */
#include "spectrum_internal.h"

#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LZ_CHUNK 8192 /* fixed reduction chunk, independent of threads */
#define LZ_ROWS 1024  /* row block of the basis combinations */
#define LZ_SEED 0x6c616e637a6f73ULL /* "lanczos": breakdown vectors */
#define LZ_TEST_MAX 8 /* most steps between two convergence tests */

/* ---- vector kernels (deterministic chunked reductions) ----------------- */

/* One half of the step's matvec, by rows: B_c in (trans 0) or B_c^T in
 * (trans 1), cm__op_rows. */
typedef struct {
  const cm_operator_t *op;
  int comp, trans;
  const double *in;
} lz_half_t;

/* w -= b x (x may be NULL); returns y . w, with w . w in r[0] and y . y in
 * r[1]. Without memory for the partial sums it runs serially in the same
 * chunk order. */
static double lz_sub_dot(int n, double *w, double b, const double *x,
                         const double *y, double *r, int th) {
  int nch = (n + LZ_CHUNK - 1) / LZ_CHUNK;
  double stack[192], *part = nch <= 64 ? stack : malloc(sizeof(double) * 3 * (size_t)nch);
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
 * rest of the step. Returns
 * w . w summed in chunk order (serially in that order without memory for
 * the partial sums). */
static double lz_rows_sq(const lz_half_t *A, int n, double *w, double *x,
                         double f, double g, const double *p, double b,
                         double a, int th) {
  int nch = (n + LZ_CHUNK - 1) / LZ_CHUNK;
  double stack[64], *part = nch <= 64 ? stack : malloc(sizeof(double) * (size_t)nch);
  double s = 0;
#pragma omp parallel for schedule(static) num_threads(th) if (part && nch > 2)
  for (int c = 0; c < nch; c++) {
    int i0 = c * LZ_CHUNK, i1 = i0 + LZ_CHUNK < n ? i0 + LZ_CHUNK : n;
    cm__op_rows(A->op, A->comp, A->trans, A->in, i0, i1, w + i0);
    double q = 0;
    for (int i = i0; i < i1; i++) {
      if (x) {
        double v = x[i] * f;
        x[i] = v;
        w[i] = (f * g) * w[i] - b * p[i] - a * v;
      }
      q += w[i] * w[i];
    }
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
 * in tiles of 4 outputs x 8 rows held in registers, c ascending from 0 for
 * every element (the same sum in every version and tile shape); the row
 * block of V stays in cache across the tiles. tri: Y is upper triangular
 * (Y[p * ldy + c] = 0 for c > p), whose zero terms are skipped (adding
 * 0 * v leaves a sum's bits alone). */
typedef double lz_v8 __attribute__((vector_size(64))); /* 8 rows */

#define LZ_LOAD8(v, p) memcpy(&(v), (p), sizeof(lz_v8)) /* unaligned */

CM__CLONES static void lz_combine_rows(const double *V, size_t n, int J,
                                       const double *Y, int ldy, int ncol,
                                       int tri, int len, double *buf) {
  int r8 = len & ~7, p = 0;
  for (; p + 4 <= ncol; p += 4) {
    int Jt = tri && p + 4 < J ? p + 4 : J;
    const double *y0 = Y + (size_t)p * ldy, *y1 = y0 + ldy, *y2 = y1 + ldy,
                 *y3 = y2 + ldy;
    double *o = buf + (size_t)p * LZ_ROWS;
    for (int r = 0; r < r8; r += 8) {
      lz_v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
      for (int c = 0; c < Jt; c++) {
        lz_v8 v;
        LZ_LOAD8(v, V + (size_t)c * n + r);
        a0 += y0[c] * v;
        a1 += y1[c] * v;
        a2 += y2[c] * v;
        a3 += y3[c] * v;
      }
      memcpy(o + r, &a0, sizeof a0);
      memcpy(o + LZ_ROWS + r, &a1, sizeof a1);
      memcpy(o + 2 * LZ_ROWS + r, &a2, sizeof a2);
      memcpy(o + 3 * LZ_ROWS + r, &a3, sizeof a3);
    }
  }
  for (; p < ncol; p++) { /* the last outputs, one at a time */
    const double *y0 = Y + (size_t)p * ldy;
    int Jt = tri && p + 1 < J ? p + 1 : J;
    for (int r = 0; r < r8; r += 8) {
      lz_v8 a0 = {0};
      for (int c = 0; c < Jt; c++) {
        lz_v8 v;
        LZ_LOAD8(v, V + (size_t)c * n + r);
        a0 += y0[c] * v;
      }
      memcpy(buf + (size_t)p * LZ_ROWS + r, &a0, sizeof a0);
    }
  }
  for (p = 0; p < ncol; p++) /* the last rows */
    for (int r = r8; r < len; r++) {
      double a = 0;
      for (int c = 0; c < (tri && p + 1 < J ? p + 1 : J); c++)
        a += Y[(size_t)p * ldy + c] * V[(size_t)c * n + r];
      buf[(size_t)p * LZ_ROWS + r] = a;
    }
}

/* g[q * g1 + p] = u_p . u_q for q <= p < g1, u_p = buf + p * LZ_ROWS of
 * length len: each the bits of cm__dot8(u_p, u_q, len) (eight lane sums,
 * combined in its order, then the tail), computed in 4 x 4 tiles of
 * outputs that share their loads (a dot product alone waits on its one
 * chain of additions). */
CM__CLONES static void lz_gram_rows(const double *buf, int g1, int len,
                                    double *g) {
  int r8 = len & ~7;
  for (int q0 = 0; q0 < g1; q0 += 4)
    for (int p0 = q0; p0 < g1; p0 += 4) {
      const double *u[4], *v[4];
      for (int a = 0; a < 4; a++) { /* past the edge: repeat the last */
        u[a] = buf + (size_t)(p0 + a < g1 ? p0 + a : g1 - 1) * LZ_ROWS;
        v[a] = buf + (size_t)(q0 + a < g1 ? q0 + a : g1 - 1) * LZ_ROWS;
      }
      lz_v8 s[4][4] = {{{0}}};
      for (int r = 0; r < r8; r += 8) {
        lz_v8 x[4], y[4];
        for (int a = 0; a < 4; a++) {
          LZ_LOAD8(x[a], u[a] + r);
          LZ_LOAD8(y[a], v[a] + r);
        }
        for (int a = 0; a < 4; a++)
          for (int b = 0; b < 4; b++)
            s[a][b] += x[a] * y[b];
      }
      for (int a = 0; a < 4 && p0 + a < g1; a++)
        for (int b = 0; b < 4 && q0 + b <= p0 + a; b++) {
          double t = 0;
          for (int r = r8; r < len; r++)
            t += u[a][r] * v[b][r];
          lz_v8 z = s[a][b];
          g[(size_t)(q0 + b) * g1 + p0 + a] =
              ((z[0] + z[1]) + (z[2] + z[3])) + ((z[4] + z[5]) + (z[6] + z[7])) + t;
        }
    }
}

/* Out[:, p] = sum_c V[:, c] Y[c, p] for p < ncol, c < J (c ascending), in
 * row blocks; Out may be V itself (in place: each block is read whole before
 * it is written). V and Out have leading dimension n, Y has ldy. With G
 * (size (ncol + 1)^2), also the Gram matrix of the columns [Out, x] into
 * its lower triangle (column-major, ld ncol + 1), summed in block order.
 * tri: Y is upper triangular (lz_combine_rows). */
static int lz_combine(int n, const double *V, int J, const double *Y,
                      int ldy, int ncol, int tri, double *Out, const double *x,
                      double *G, int th) {
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
      lz_combine_rows(V + r0, (size_t)n, J, Y, ldy, ncol, tri, len, buf);
      if (gp) {
        memcpy(buf + (size_t)ncol * LZ_ROWS, x + r0, sizeof(double) * (size_t)len);
        lz_gram_rows(buf, g1, len, gp + (size_t)b * gsz);
      }
      for (int p = 0; p < ncol; p++)
        memcpy(Out + (size_t)p * n + r0, buf + (size_t)p * LZ_ROWS,
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

/* Classical Gram-Schmidt of x against V[:, 0..J-1] (only the columns with
 * sel[q] != 0 when sel is given): a second pass when
 * the first took away more than 30% of the norm nx0 (DGKS), or always when
 * nx0 < 0 (twice is enough). The coefficients removed are added to hsum
 * (NULL: not wanted); h: scratch of J. Returns ||x|| afterwards. */
static double lz_reorth(int n, const double *V, int J, const char *sel,
                        double *x, double nx0, double *h, double *hsum,
                        int th) {
  double nx = 0;
  for (int pass = 0; pass < 2; pass++) {
    /* classical: all coefficients from the same x, then one update; the
     * selected columns (sel NULL: all) in contiguous runs */
    for (int a = 0, b; a < J; a = b) {
      for (; a < J && sel && !sel[a]; a++)
        h[a] = 0;
      for (b = a; b < J && (!sel || sel[b]); b++)
        ;
      if (b > a)
        cm__gemv(1, n, b - a, 1.0, V + (size_t)a * n, n, x, 0.0, h + a, th);
    }
    for (int a = 0, b; a < J; a = b) {
      for (; a < J && sel && !sel[a]; a++)
        ;
      for (b = a; b < J && (!sel || sel[b]); b++)
        ;
      if (b > a)
        cm__gemv(0, n, b - a, -1.0, V + (size_t)a * n, n, h + a, 1.0, x, th);
    }
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
  int m;          /* basis size (ncv) */
  int J;          /* size of the last Ritz problem solved */
  double *H;      /* m x m projected matrix, column-major */
  double *D;      /* m x m re-orthogonalisation coefficients: column j holds
                     what was taken off A v_j beyond H (the exact relation
                     is A V = V (H + D) + beta v e^T) */
  double *A;      /* scratch copy of H for the eigen-solve */
  double *theta;  /* Ritz values, ascending (top kk of the J x J problem) */
  double *Y;      /* J x kk Ritz vectors of the projected matrix */
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
    lapack_logical tryrac = 1;
    int found = 0, *isuppz = malloc(sizeof(int) * 2 * (size_t)(k + 1));
    if (isuppz && J >= 2 &&
        LAPACKE_dstemr(LAPACK_COL_MAJOR, 'V', 'I', J, d, e, 0, 0, J - k + 1,
                       J, &found, P->theta, P->Y, J, k, isuppz,
                       &tryrac) == 0) {
      free(isuppz);
      return P->found = found;
    }
    free(isuppz); /* fall back to the dense solver */
  }
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
static int lz_restart(int N, double *V, int m, lz_proj_t *P, int kk,
                      double beta, double *h, int th) {
  int g1 = kk + 1, st = -1;
  double *G = malloc(sizeof(double) * (size_t)g1 * g1);
  double *Li = calloc((size_t)kk * kk, sizeof(double));
  double *T = malloc(sizeof(double) * (size_t)kk * kk);
  double *sp = malloc(sizeof(double) * (size_t)kk);
  double *vm = V + (size_t)m * N, *vk = V + (size_t)kk * N;
  if (!G || !Li || !T || !sp ||
      lz_combine(N, V, m, P->Y, m, kk, 0, V, vm, G, th))
    goto out;
  st = -2;
  if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', kk, G, g1) != 0)
    goto out;
  for (int c = 0; c < kk; c++) /* L^-1 from the lower triangle of G */
    for (int r = c; r < kk; r++)
      Li[(size_t)c * kk + r] = G[(size_t)c * g1 + r];
  if (LAPACKE_dtrtri(LAPACK_COL_MAJOR, 'L', 'N', kk, Li, kk) != 0)
    goto out;
  for (int p = 0; p < kk; p++) /* T = L^-T: column p holds row p of L^-1 */
    for (int c = 0; c < kk; c++)
      T[(size_t)p * kk + c] = Li[(size_t)c * kk + p];
  if (lz_combine(N, V, kk, T, kk, kk, 1, V, NULL, NULL, th))
    goto out;
  for (int a = 0; a < kk; a++) { /* c = L^-1 (U^T v_m), s' = L^-1 s */
    double ca = 0, sa = 0;
    for (int b = 0; b <= a; b++) {
      ca += Li[(size_t)b * kk + a] * G[(size_t)b * g1 + kk];
      sa += Li[(size_t)b * kk + a] * beta * P->Y[(size_t)b * m + (m - 1)];
    }
    h[a] = ca, sp[a] = sa;
  }
  cm__gemv(0, N, kk, -1.0, V, N, h, 1.0, vm, th); /* v_m -= U' c */
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
static int lz_auto_ncv(int nev, int N) {
  double fit = LZ_BASIS_BYTES / (8.0 * (N > 0 ? N : 1));
  int m = fit > LZ_NCV_MAX ? LZ_NCV_MAX : fit < LZ_NCV_MIN ? LZ_NCV_MIN : (int)fit;
  return m < 2 * nev + 8 ? 2 * nev + 8 : m;
}

/* ---- the solver ---------------------------------------------------------- */

int cm__eig_lanczos(cm_context_t *ctx, cm_operator_t *op, int comp,
                    const cm_options_t *opts, const double *start,
                    double deadline, cm__eig_t *out) {
  cm__eig_dims_t d;
  if (cm__eig_dims(ctx, op, comp, opts, CM_METHOD_LANCZOS, lz_auto_ncv, out,
                   &d))
    return CM_USAGE;
  int r0 = d.r0, c0 = d.c0, use_S = d.use_S, N = d.N, other = d.other;
  int nev = d.nev, m = d.ncv;
  double tol = opts->tol > 0 ? opts->tol : 1e-10;
  int max_restarts = opts->max_iter > 0 ? opts->max_iter : 3000;
  /* kept Ritz vectors at a restart: the wanted ones and a quarter of the
   * rest (a restart costs about N m keep flops; bench/: a third kept cost
   * 5-10% more on piles and crystals for the same matvecs) */
  int keep = nev + (m - nev) / 4;
  if (keep > m - 2)
    keep = m - 2 > nev ? m - 2 : nev;
  int th = cm__op_threads(op), nt = N > CM__PAR_MIN ? th : 1;
  double eps = DBL_EPSILON, eps23 = pow(eps, 2.0 / 3.0), sqeps = sqrt(eps), eta = pow(eps, 0.75);
  double inv_s = 1.0 / d.scale; /* the solve is on Op / s: lambda_max / s in [1, N] */

  double *V = malloc(sizeof(double) * (size_t)N * (size_t)(m + 1));
  double *w = malloc(sizeof(double) * (size_t)N);
  double *tmp = malloc(sizeof(double) * ((size_t)other + 1));
  double *Yd = NULL;
  lz_proj_t P = {m, 0, calloc((size_t)m * m, sizeof(double)),
                 calloc((size_t)m * m, sizeof(double)),
                 malloc(sizeof(double) * (size_t)m * m),
                 malloc(sizeof(double) * (size_t)m),
                 malloc(sizeof(double) * (size_t)m * m), 0};
  double *om_prev = calloc((size_t)m + 2, sizeof(double));
  double *om_cur = calloc((size_t)m + 2, sizeof(double));
  double *om_next = calloc((size_t)m + 2, sizeof(double));
  double *h = malloc(sizeof(double) * ((size_t)m + 1));
  char *sel = calloc((size_t)m + 2, 1);
  double *scl = malloc(sizeof(double) * ((size_t)m + 2)); /* column scales */
  int st = CM_OK;
  if (!V || !w || !tmp || !scl || !P.H || !P.D || !P.A || !P.theta || !P.Y || !om_prev ||
      !om_cur || !om_next || !h || !sel) {
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for Lanczos (N = %d, "
                 "ncv %d)", N, m);
    goto done;
  }
  /* ---- start vector ---- */
  cm__eig_start(op, comp, use_S, N, d.seed, start, V);
  {
    double s = cm__nrm2(N, V, th);
    if (!(s > 0)) {
      st = CM__ERR(ctx, CM_NUMERIC, NULL, "Lanczos start vector is zero");
      goto done;
    }
    for (int i = 0; i < N; i++)
      V[i] /= s;
  }
  /* the explicit B (block-diagonal M) lets the matvec's second half run
   * fused with the step's first pass */
  /* With an explicit B a step runs as two passes: the first half of the
   * product with ||.||^2 (alpha = ||B^T v_j||^2 for S), then the second half
   * fused with the recurrence, which also writes w straight into the next
   * basis column, left unnormalised (scale scl[J]) until that step's own
   * pass normalises it in place: two vector passes a step fewer. */
  lz_half_t half1 = {op, comp, use_S, NULL}, half2 = {op, comp, !use_S, tmp};
  int fused = cm__op_is_block(op);
  double mv_flops = 4.0 * (double)(fused ? cm__op_comp_nnz(op, comp) : (long)N * 8);
  int k = 0, J = 1, converged = 0, timed_out = 0, exhausted = 0;
  int restarts = 0, force = 0;
  double anorm = 0, beta = 0;
  om_cur[0] = 1;
  scl[0] = 1;
  for (;;) {
    /* ---- extend the basis from column J - 1 = j ---- */
    int j = J - 1;
    double *vj = V + (size_t)j * N, *vn = V + (size_t)J * N;
    double alpha, bprev = j > k ? P.H[(size_t)(j - 1) * m + j] : 0;
    int full = j == k || force, fin = 0; /* fin: w holds the whole step */
    double *wp = w, tm = cm__now();
    if (j > k && fused) { /* v_j = scl[j] V[:, j]; w goes to V[:, J] */
      double f = scl[j];
      half1.in = vj;
      alpha = f * f * inv_s *
              lz_rows_sq(&half1, other, tmp, NULL, 0, 1, NULL, 0, 0, nt);
      double ww = lz_rows_sq(&half2, N, vn, vj, f, inv_s,
                             V + (size_t)(j - 1) * N, bprev, alpha, nt);
      out->t_matvec += cm__now() - tm;
      out->matvecs++;
      wp = vn, fin = 1;
      beta = sqrt(ww);
    } else {
      double wv[2];
      cm__eig_apply(op, comp, use_S, inv_s, vj, w, tmp);
      out->t_matvec += cm__now() - tm;
      out->matvecs++;
      if (j == k && k > 0) /* arrow: w -= sum_i s_i u_i */
        cm__gemv(0, N, k, -1.0, V, N, P.H + (size_t)k * m, 1.0, w, nt);
      alpha = lz_sub_dot(N, w, bprev, j > k ? V + (size_t)(j - 1) * N : NULL,
                         vj, wv, nt);
      /* ||w - alpha v_j||^2 with the measured ||v_j||^2: no drift of norms */
      double ww = wv[0], b2 = ww - alpha * alpha * (2.0 - wv[1]);
      if (full || !(b2 > 0.01 * ww)) { /* explicit, or cancellation */
        lz_sub_scale(N, w, alpha, vj, 1.0, w, nt);
        beta = cm__nrm2(N, w, nt);
        fin = 1;
      } else {
        beta = sqrt(b2);
      }
    }
    P.H[(size_t)j * m + j] = alpha;
    double rowsum = fabs(alpha) + beta + bprev;
    for (int i = 0; j == k && i < k; i++)
      rowsum += fabs(P.H[(size_t)k * m + i]);
    anorm = rowsum > anorm ? rowsum : anorm;
    /* ---- omega recurrence: estimates of v_{j+1} . v_q, q <= j ---- */
    double ommax = 0;
    if (j > k && beta > 0) {
      double noise = eps * anorm / beta;
      om_cur[j] = 1;
      for (int q = 0; q < j; q++) {
        const double *Hq = P.H + (size_t)q * m;
        double t = 0;
        for (int p = 0; p <= j; p++)
          t += Hq[p] * om_cur[p];
        t = (t - alpha * om_cur[q] - bprev * om_prev[q]) / beta;
        t += t >= 0 ? noise : -noise;
        om_next[q] = t;
        ommax = fabs(t) > ommax ? fabs(t) : ommax;
      }
      om_next[j] = noise;
      ommax = noise > ommax ? noise : ommax;
    }
    if (full || ommax > sqeps) {
      /* against the columns whose estimate passed eps^3/4 (Simon's
       * modified partial re-orthogonalisation), and the same ones plus
       * the newest at the step after; everything at the first step of a
       * cycle */
      int all = j == k;
      if (!fin) /* w still holds the local part: finish it first */
        lz_sub_scale(N, w, alpha, vj, 1.0, w, nt);
      for (int q = 0; !all && q <= j; q++)
        sel[q] = fabs(om_next[q]) > eta || (force && sel[q]) || q == j;
      force = !force && !all; /* re-orthogonalise the next vector too */
      beta = lz_reorth(N, V, J, all ? NULL : sel, wp, beta, h,
                       P.D + (size_t)j * m, nt);
      for (int q = 0; q <= j; q++)
        if (all || sel[q])
          om_next[q] = eps;
      fin = 1;
    }
    /* ---- breakdown: an invariant subspace was found ---- */
    if (!(beta > (double)N * eps * anorm)) {
      for (int i = 0; i < N; i++)
        w[i] = cm__gauss(d.seed ^ (LZ_SEED + (uint64_t)out->matvecs),
                         (uint64_t)(use_S ? r0 : c0) + (uint64_t)i);
      double s0 = cm__nrm2(N, w, nt), s1 = lz_reorth(N, V, J, NULL, w, -1.0, h, NULL, nt);
      if (!(s1 > 1e-8 * s0)) {
        exhausted = 1; /* the basis spans the whole space */
        beta = 0;
      } else {
        lz_sub_scale(N, w, 0, vj, 1.0 / s1, vn, nt);
        beta = 0;
      }
      for (int q = 0; q <= j; q++)
        om_next[q] = eps;
      scl[J] = 1;
    } else if (wp == vn) { /* normalised by the next step's pass */
      scl[J] = 1.0 / beta;
      if (J == m) { /* no next step before the restart: now */
        lz_sub_scale(N, vn, 0, vj, scl[J], vn, nt);
        scl[J] = 1;
      }
    } else {
      lz_sub_scale(N, w, fin ? 0 : alpha, vj, 1.0 / beta, vn, nt);
      scl[J] = 1;
    }
    if (J >= N)
      exhausted = 1; /* N vectors span the space: the projection is exact */
    if (J < m) {
      P.H[(size_t)j * m + J] = beta;
      P.H[(size_t)J * m + j] = beta;
    }
    { /* rotate the omega rows: prev <- cur <- next */
      double *t = om_prev;
      om_prev = om_cur, om_cur = om_next, om_next = t;
      om_cur[J] = 1;
    }
    /* ---- convergence test on the J x J projected problem: every step
     * while its ~J^3 flops are small against a matvec's ~4 nnz, else every
     * few steps (at most LZ_TEST_MAX apart; sizes only, never timings) ---- */
    double jc = k == 0 ? 100.0 * J * J : (double)J * J * J; /* MRRR, dense */
    int every = jc <= 0.25 * mv_flops ? 1 : (int)ceil(jc / (0.25 * mv_flops));
    every = every > LZ_TEST_MAX ? LZ_TEST_MAX : every;
    if ((J >= nev + 1 && (J - nev - 1) % every == 0) || exhausted || J == m) {
      int kk = J == m ? keep : nev;
      if (lz_ritz(&P, J, kk, k == 0) < 0) {
        st = CM__ERR(ctx, CM_NUMERIC, NULL,
                     "LAPACK failed on the projected Lanczos problem");
        goto done;
      }
      int f = P.found, good = 0;
      for (int i = f - nev > 0 ? f - nev : 0; i < f; i++) {
        double r = fabs(beta * P.Y[(size_t)i * J + (J - 1)]);
        double t = fabs(P.theta[i]);
        if (r <= tol * (t > eps23 ? t : eps23))
          good++;
      }
      converged = good >= nev && f >= nev;
    }
    if (converged || exhausted)
      break;
    if (deadline > 0 && cm__now() > deadline) {
      timed_out = 1; /* the partial result from the basis as it is now */
      if (P.J != J && J >= nev + 1 && lz_ritz(&P, J, nev, k == 0) < 0)
        P.found = 0;
      break;
    }
    J++;
    if (J <= m)
      continue;
    /* ---- thick restart: keep the top `keep` Ritz vectors ---- */
    J = m;
    if (restarts + 1 >= max_restarts) /* a budget of max_iter cycles */
      break;
    restarts++;
    int kk = P.found;
    if (lz_correct(&P, 0, kk)) {
      st = CM__ERR(ctx, CM_NUMERIC, NULL, "Lanczos restart: out of memory, "
                   "or LAPACK failed on the projected problem");
      goto done;
    }
    int rs = lz_restart(N, V, m, &P, kk, beta, h, nt);
    if (rs) {
      st = rs == -1 ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for the "
                              "Lanczos restart")
                    : CM__ERR(ctx, CM_NUMERIC, NULL,
                              "Lanczos restart failed (N %d, ncv %d): %s", N,
                              m, rs == -2 ? "the kept Ritz vectors are not "
                                            "independent"
                                          : "the residual lies in their span");
      goto done;
    }
    /* v_kk is orthogonal to the new U to rounding, but the relation holds
     * only to O(D^2): start the estimates a hundred times above eps */
    for (int p = 0; p < kk; p++)
      om_cur[p] = 100 * eps;
    om_cur[kk] = 1;
    k = kk;
    J = kk + 1;
    scl[kk] = 1;
  }
  out->iterations = restarts;
  /* ---- Ritz vectors of the top pairs ---- */
  {
    int J0 = P.J, f = P.found;
    if (f < 0)
      f = 0;
    int k0 = f > nev ? f - nev : 0, nf = f - k0; /* the top nev, ascending */
    Yd = malloc(sizeof(double) * (size_t)J0 * (size_t)(nf + 1));
    out->lambda = malloc(sizeof(double) * (size_t)(nf + 1));
    if (!Yd || !out->lambda || lz_correct(&P, k0, nf)) {
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for Ritz vectors");
      goto done;
    }
    int kept = 0; /* descending, positive only: their coefficients, then */
    for (int i = nf - 1; i >= 0; i--) /* one pass over the basis */
      if (P.theta[k0 + i] > 0) {
        out->lambda[kept] = P.theta[k0 + i] * d.scale;
        memcpy(Yd + (size_t)kept * J0, P.Y + (size_t)(k0 + i) * J0,
               sizeof(double) * (size_t)J0);
        kept++;
      }
    /* in place: the basis is done with, and its pages are already touched
     * (fresh pages cost about as much as a pass over them); the rest of
     * it is the residual products' scratch */
    if (lz_combine(N, V, J0, Yd, J0, kept, 0, V, NULL, NULL, nt)) {
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for Ritz vectors");
      goto done;
    }
    out->nev = kept;
    out->converged = converged || exhausted;
    out->rayleigh = 1;
    int fst = cm__eig_finish(ctx, op, comp, use_S, V,
                             V + (size_t)N * (size_t)kept,
                             (size_t)N * (size_t)(m + 1 - kept), out);
    if (fst)
      st = fst;
  }
  if (!st && !out->converged) {
    st = CM_NOT_CONVERGED;
    CM__ERR(ctx, CM_NOT_CONVERGED, NULL,
            "eigen-solve stopped by its %s budget after %d matvecs; partial "
            "result",
            timed_out ? "time" : "iteration", out->matvecs);
  }
done:
  free(V), free(w), free(tmp), free(Yd);
  free(P.H), free(P.D), free(P.A), free(P.theta), free(P.Y);
  free(om_prev), free(om_cur), free(om_next), free(h), free(sel);
  free(scl);
  return st;
}
