/* operator.c: B = K^1/2 J L^-T with P M P^T = L L^T from CHOLMOD.
 * Block-diagonal M (scenes): natural ordering, so L is block-diagonal too;
 * B is formed once in CSR with B^T beside it, and every operator
 * application is two row-parallel SpMVs and no solve. A diagonal M (disks,
 * and spheres whose spins are dropped) needs no CHOLMOD: L = M^1/2, which is
 * what CHOLMOD's simplicial LL^T gives for it bit for bit, and B has the
 * pattern of J, which it then shares.
 * General M (matrices): the factor is kept and B, B^T are applied with
 * solves (CHOLMOD_Lt, CHOLMOD_Pt / CHOLMOD_P, CHOLMOD_L).
 * Not for eigen-solves (spectrum/). */
#include "operator_internal.h"

#include <cblas.h>
#include <cholmod.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

struct cm_operator {
  const cm_system_t *sys; /* the system (not owned) */
  int nr, ncol;           /* rows (contacts), columns (active dofs) */
  int block;              /* 1: explicit B */
  int threads;            /* OpenMP threads */
  /* block path */
  int *Bp, *Bj;   /* B row pointers (nr+1), columns */
  int B_shares_J; /* 1: Bp, Bj are the system's Jp, Jj (not owned) */
  double *ldiag;  /* diagonal M: L = diag(ldiag), size ncol; else NULL */
  double *Bx;     /* B values */
  int *Tp, *Tj;   /* B^T row pointers (ncol+1), columns */
  double *Tx;     /* B^T values */
  /* general path */
  cholmod_common cc;              /* CHOLMOD context */
  int cc_started;                 /* cholmod_start called */
  cholmod_factor *L;              /* factor of P M P^T */
  cholmod_dense *X, *Y, *Yw, *Ew; /* solve workspace, ncol x 1 */
  double *sqrtk;                  /* k^1/2 per row */
  double *gtmp;                   /* general path: scratch of size ncol */
  double t_factor_s, t_build_s;   /* phase timings */
};

int cm__op_threads(const cm_operator_t *op) { return op->threads; }
int cm__op_is_block(const cm_operator_t *op) { return op->block; }
int cm_operator_rows(const cm_operator_t *op) { return op->nr; }
int cm_operator_cols(const cm_operator_t *op) { return op->ncol; }
double cm_operator_factor_seconds(const cm_operator_t *op) {
  return op->t_factor_s;
}
double cm_operator_build_seconds(const cm_operator_t *op) {
  return op->t_build_s;
}

void cm_operator_destroy(cm_operator_t **opp) {
  if (!opp || !*opp)
    return;
  cm_operator_t *op = *opp;
  if (!op->B_shares_J)
    free(op->Bp), free(op->Bj);
  free(op->Bx), free(op->ldiag);
  free(op->Tp), free(op->Tj), free(op->Tx);
  free(op->sqrtk), free(op->gtmp);
  if (op->cc_started) {
    cholmod_free_factor(&op->L, &op->cc);
    cholmod_free_dense(&op->X, &op->cc);
    cholmod_free_dense(&op->Y, &op->cc);
    cholmod_free_dense(&op->Yw, &op->cc);
    cholmod_free_dense(&op->Ew, &op->cc);
    cholmod_finish(&op->cc);
  }
  free(op);
  *opp = NULL;
}

void cm__op_comp(const cm_operator_t *op, int comp, int *r0, int *m, int *c0,
                 int *n) {
  const cm_system_t *s = op->sys;
  if (comp < 0) {
    *r0 = 0, *m = op->nr, *c0 = 0, *n = op->ncol;
    return;
  }
  *r0 = s->comp_row[comp], *m = s->comp_row[comp + 1] - s->comp_row[comp];
  *c0 = s->comp_col[comp], *n = s->comp_col[comp + 1] - s->comp_col[comp];
}

/* ---- factor ------------------------------------------------------------ */

/* L = M^1/2 when M (block path) is diagonal with positive entries: CHOLMOD's
 * simplicial LL^T computes exactly sqrt(M_jj) for such a column. Returns 0
 * (and leaves op->ldiag NULL) when M is not of that kind: CHOLMOD then
 * factors it, and reports the failures. */
static int cm__factor_diagonal(cm_operator_t *op) {
  const cm_system_t *s = op->sys;
  int n = s->n, diag = s->block && s->Mp[n] == n;
  if (!diag)
    return 0;
  double *ld = malloc(sizeof(double) * (size_t)n);
  if (!ld)
    return 0;
#pragma omp parallel for schedule(static) num_threads(op->threads)             \
    reduction(&& : diag) if (n > CM__PAR_MIN)
  for (int j = 0; j < n; j++) {
    diag = diag && s->Mp[j + 1] == j + 1 && s->Mi[j] == j && s->Mx[j] > 0;
    ld[j] = sqrt(s->Mx[j]);
  }
  if (!diag) {
    free(ld);
    return 0;
  }
  op->ldiag = ld;
  return 1;
}

static int cm__factor(cm_context_t *ctx, cm_operator_t *op) {
  const cm_system_t *s = op->sys;
  cholmod_common *cc = &op->cc;
  if (cm__factor_diagonal(op))
    return CM_OK;
  cholmod_start(cc);
  op->cc_started = 1;
  cc->print = 0;
  cc->final_ll = 1;
  if (s->block) { /* keep the blocks: no fill, no permutation */
    cc->nmethods = 1;
    cc->method[0].ordering = CHOLMOD_NATURAL;
    cc->postorder = 0;
    cc->supernodal = CHOLMOD_SIMPLICIAL;
  }
  cholmod_sparse M;
  memset(&M, 0, sizeof M);
  M.nrow = M.ncol = (size_t)s->n;
  M.nzmax = (size_t)s->Mp[s->n];
  M.p = s->Mp, M.i = s->Mi, M.x = s->Mx;
  M.stype = -1, M.itype = CHOLMOD_INT, M.xtype = CHOLMOD_REAL;
  M.dtype = CHOLMOD_DOUBLE, M.sorted = s->block, M.packed = 1;
  op->L = cholmod_analyze(&M, cc);
  if (!op->L)
    return CM__ERR(ctx,
                   cc->status == CHOLMOD_OUT_OF_MEMORY ? CM_NOMEM : CM_NUMERIC,
                   "M", "CHOLMOD could not analyse M (status %d)", cc->status);
  cholmod_factorize(&M, op->L, cc);
  if (cc->status == CHOLMOD_NOT_POSDEF || op->L->minor < op->L->n) {
    int j = (int)op->L->minor;
    if (op->L->Perm)
      j = ((int *)op->L->Perm)[j];
    if (s->col_body && s->col_body[j] >= 0) {
      char path[64];
      snprintf(path, sizeof path, "bodies[%d]", s->col_body[j]);
      return CM__ERR(ctx, CM_NOT_SPD, path,
                     "%s: its mass matrix block is not positive definite "
                     "(dof %d); check mass and inertia",
                     path, s->col_dof[j]);
    }
    return CM__ERR(ctx, CM_NOT_SPD, "M",
                   "M: not positive definite (pivot %d of %d failed); M must "
                   "be symmetric positive definite",
                   j, (int)op->L->n);
  }
  if (cc->status < 0 || !op->L->is_ll)
    return CM__ERR(ctx, CM_NUMERIC, "M",
                   "CHOLMOD factorization failed (status %d)", cc->status);
  return CM_OK;
}

/* ---- block path: B = K^1/2 J L^-T formed explicitly --------------------- */

typedef struct {
  int *col0;   /* first column of each body block, size nb */
  int *dim;    /* block size, size nb */
  size_t *off; /* offset of the block inverse in inv, size nb */
  double *inv; /* L_b^-1, row-major d x d lower triangles */
} cm__blocks_t;

static void cm__blocks_free(cm__blocks_t *b) {
  free(b->col0), free(b->dim), free(b->off), free(b->inv);
}

/* Inverts every diagonal block of the simplicial L. */
static int cm__block_inverses(cm_context_t *ctx, cm_operator_t *op,
                              cm__blocks_t *bl) {
  const cm_system_t *s = op->sys;
  int nb = s->nbodies, n = s->n;
  bl->col0 = cm__malloc(ctx, (size_t)nb + 1, sizeof(int));
  bl->dim = cm__calloc(ctx, (size_t)nb + 1, sizeof(int));
  bl->off = cm__malloc(ctx, (size_t)nb + 1, sizeof(size_t));
  if (!bl->col0 || !bl->dim || !bl->off)
    return CM_NOMEM;
  for (int j = n - 1; j >= 0; j--) {
    bl->col0[s->col_body[j]] = j;
    bl->dim[s->col_body[j]]++;
  }
  size_t tot = 0;
  for (int b = 0; b < nb; b++) {
    bl->off[b] = tot;
    tot += (size_t)bl->dim[b] * (size_t)bl->dim[b];
  }
  bl->inv = cm__calloc(ctx, tot, sizeof(double));
  if (!bl->inv)
    return CM_NOMEM;
  if (op->ldiag) { /* inv(:, c) = e_c / L_cc, as below for a diagonal Lb */
    const double *ld = op->ldiag;
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (nb > CM__PAR_MIN)
    for (int b = 0; b < nb; b++)
      for (int c = 0; c < bl->dim[b]; c++)
        bl->inv[bl->off[b] + (size_t)c * (size_t)bl->dim[b] + (size_t)c] =
            1.0 / ld[bl->col0[b] + c];
    return CM_OK;
  }
  const int *Lp = op->L->p, *Li = op->L->i, *Lnz = op->L->nz;
  const double *Lx = op->L->x;
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (nb > CM__PAR_MIN)
  for (int b = 0; b < nb; b++) {
    int d = bl->dim[b], c0 = bl->col0[b];
    if (!d)
      continue;
    double Lb[36] = {0}, *inv = bl->inv + bl->off[b];
    for (int jj = 0; jj < d; jj++) /* Lb row-major from CSC columns */
      for (int q = Lp[c0 + jj]; q < Lp[c0 + jj] + Lnz[c0 + jj]; q++)
        Lb[(Li[q] - c0) * d + jj] = Lx[q];
    for (int c = 0; c < d; c++) /* inv(:, c) = Lb^-1 e_c */
      for (int i = c; i < d; i++) {
        double v = i == c ? 1.0 : 0.0;
        for (int l = c; l < i; l++)
          v -= Lb[i * d + l] * inv[l * d + c];
        inv[i * d + c] = v / Lb[i * d + i];
      }
  }
  return CM_OK;
}

/* Row r of B: for each body block the row touches, k^1/2 L_b^-1 j_b.
 * Counts (cols == NULL) or writes the nonzeros; returns their count. */
static int cm__B_row(const cm_operator_t *op, const cm__blocks_t *bl, int r,
                     int *cols, double *vals) {
  const cm_system_t *s = op->sys;
  double sk = sqrt(s->k[r]);
  int cnt = 0;
  for (int q = s->Jp[r]; q < s->Jp[r + 1];) {
    int b = s->col_body[s->Jj[q]], c0 = bl->col0[b], d = bl->dim[b];
    double jb[6] = {0};
    for (; q < s->Jp[r + 1] && s->col_body[s->Jj[q]] == b; q++)
      jb[s->Jj[q] - c0] = s->Jx[q];
    const double *inv = bl->inv + bl->off[b];
    for (int i = 0; i < d; i++) {
      double v = 0;
      for (int l = 0; l <= i; l++)
        v += inv[i * d + l] * jb[l]; /* (L_b^-1 j_b)_i */
      if (v == 0)
        continue;
      if (cols) {
        cols[cnt] = c0 + i;
        vals[cnt] = sk * v;
      }
      cnt++;
    }
  }
  return cnt;
}

/* B for L = diag(ldiag): B_rj = k_r^1/2 (J_rj / L_jj), the value cm__B_row
 * computes for a diagonal block, on the pattern of J, which B then shares.
 * Returns 1 (nothing built) if some J_rj / L_jj underflows to 0: B's
 * pattern is then smaller than J's and the block path below forms it. */
static int cm__B_diagonal(cm_context_t *ctx, cm_operator_t *op) {
  const cm_system_t *s = op->sys;
  int nr = op->nr, n = op->ncol;
  size_t nnz = (size_t)s->Jp[nr];
  double *dinv = cm__malloc(ctx, (size_t)n + 1, sizeof(double));
  op->Bx = cm__malloc(ctx, nnz + 1, sizeof(double));
  if (!dinv || !op->Bx) {
    free(dinv);
    return CM_NOMEM;
  }
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (n > CM__PAR_MIN)
  for (int j = 0; j < n; j++)
    dinv[j] = 1.0 / op->ldiag[j]; /* L^-1 */
  long zeros = 0;
#pragma omp parallel for schedule(static) num_threads(op->threads)             \
    reduction(+ : zeros) if (nr > CM__PAR_MIN)
  for (int r = 0; r < nr; r++) {
    double sk = sqrt(s->k[r]);
    for (int q = s->Jp[r]; q < s->Jp[r + 1]; q++) {
      double v = dinv[s->Jj[q]] * s->Jx[q]; /* (L^-1 j)_i */
      zeros += v == 0;
      op->Bx[q] = sk * v;
    }
  }
  free(dinv);
  if (zeros) {
    free(op->Bx);
    op->Bx = NULL;
    return 1;
  }
  op->Bp = s->Jp, op->Bj = s->Jj;
  op->B_shares_J = 1;
  return CM_OK;
}

/* B in CSR for block-diagonal L: counts, then fills each row. */
static int cm__B_blocks(cm_context_t *ctx, cm_operator_t *op) {
  cm__blocks_t bl = {0};
  int nr = op->nr;
  int st = cm__block_inverses(ctx, op, &bl);
  if (!st) {
    op->Bp = cm__malloc(ctx, (size_t)nr + 1, sizeof(int));
    st = op->Bp ? CM_OK : CM_NOMEM;
  }
  if (!st) {
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (nr > CM__PAR_MIN)
    for (int r = 0; r < nr; r++)
      op->Bp[r + 1] = cm__B_row(op, &bl, r, NULL, NULL);
    op->Bp[0] = 0;
    for (int r = 0; r < nr; r++)
      op->Bp[r + 1] += op->Bp[r];
    size_t nnz = (size_t)op->Bp[nr];
    op->Bj = cm__malloc(ctx, nnz, sizeof(int));
    op->Bx = cm__malloc(ctx, nnz, sizeof(double));
    st = op->Bj && op->Bx ? CM_OK : CM_NOMEM;
  }
  if (!st) {
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (nr > CM__PAR_MIN)
    for (int r = 0; r < nr; r++)
      cm__B_row(op, &bl, r, op->Bj + op->Bp[r], op->Bx + op->Bp[r]);
  }
  cm__blocks_free(&bl);
  return st;
}

/* B^T by a counting transpose: rows of B^T sorted by B's row. Each thread
 * counts, then scatters, its own run of consecutive rows of B, into offsets
 * that follow those of the threads before it: the result is that of the
 * sequential transpose, whatever the number of threads. */
static int cm__transpose_B(cm_context_t *ctx, cm_operator_t *op) {
  int nr = op->nr, ncol = op->ncol;
  int T = nr > CM__PAR_MIN ? op->threads : 1;
  const int *Bp = op->Bp, *Bj = op->Bj;
  const double *Bx = op->Bx;
  size_t nnz = (size_t)Bp[nr];
  op->Tp = cm__malloc(ctx, (size_t)ncol + 1, sizeof(int));
  op->Tj = cm__malloc(ctx, nnz + 1, sizeof(int));
  op->Tx = cm__malloc(ctx, nnz + 1, sizeof(double));
  int **next = calloc((size_t)T, sizeof *next); /* per thread, size ncol */
  if (!op->Tp || !op->Tj || !op->Tx || !next) {
    free(next);
    return CM_NOMEM;
  }
  int nomem = 0, *Tp = op->Tp, *Tj = op->Tj;
  double *Tx = op->Tx;
#pragma omp parallel num_threads(T)
  {
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    int r0 = (int)((long)nr * t / nt), r1 = (int)((long)nr * (t + 1) / nt);
    int *c = calloc((size_t)ncol + 1, sizeof(int));
    next[t] = c;
    if (!c) {
#pragma omp atomic write
      nomem = 1;
    } else
      for (int q = Bp[r0]; q < Bp[r1]; q++)
        c[Bj[q]]++;
#pragma omp barrier
    int failed;
#pragma omp atomic read
    failed = nomem;
    if (!failed) {
#pragma omp for schedule(static)
      for (int j = 0; j < ncol; j++) {
        int sum = 0;
        for (int u = 0; u < nt; u++)
          sum += next[u][j];
        Tp[j + 1] = sum;
      }
#pragma omp single
      {
        Tp[0] = 0;
        for (int j = 0; j < ncol; j++)
          Tp[j + 1] += Tp[j];
      }
#pragma omp for schedule(static)
      for (int j = 0; j < ncol; j++) { /* thread u's first slot in row j */
        int o = Tp[j];
        for (int u = 0; u < nt; u++) {
          int k = next[u][j];
          next[u][j] = o;
          o += k;
        }
      }
      for (int r = r0; r < r1; r++)
        for (int q = Bp[r]; q < Bp[r + 1]; q++) {
          int p = c[Bj[q]]++;
          Tj[p] = r;
          Tx[p] = Bx[q];
        }
    }
  }
  for (int t = 0; t < T; t++)
    free(next[t]);
  free(next);
  return nomem ? CM_NOMEM : CM_OK;
}

static int cm__build_B(cm_context_t *ctx, cm_operator_t *op) {
  int st = op->ldiag ? cm__B_diagonal(ctx, op) : 1;
  if (st > 0)
    st = cm__B_blocks(ctx, op);
  if (!st)
    st = cm__transpose_B(ctx, op);
  return st;
}

/* ---- general path: workspace for solves ---------------------------------- */

static int cm__build_general(cm_context_t *ctx, cm_operator_t *op) {
  op->X = cholmod_zeros((size_t)op->ncol, 1, CHOLMOD_REAL, &op->cc);
  op->sqrtk = cm__malloc(ctx, (size_t)op->nr + 1, sizeof(double));
  op->gtmp = cm__malloc(ctx, (size_t)op->ncol + 1, sizeof(double));
  if (!op->X || !op->sqrtk || !op->gtmp)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  for (int r = 0; r < op->nr; r++)
    op->sqrtk[r] = sqrt(op->sys->k[r]);
  return CM_OK;
}

/* x <- op(x) in place for one CHOLMOD solve kind. */
static void cm__solve(cm_operator_t *op, int kind, double *x) {
  memcpy(op->X->x, x, sizeof(double) * (size_t)op->ncol);
  cholmod_solve2(kind, op->L, op->X, NULL, &op->Y, NULL, &op->Yw, &op->Ew,
                 &op->cc);
  memcpy(x, op->Y->x, sizeof(double) * (size_t)op->ncol);
}

int cm_operator_create(cm_context_t *ctx, const cm_system_t *sys,
                       cm_operator_t **out) {
  *out = NULL;
  cm_operator_t *op = calloc(1, sizeof *op);
  if (!op)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  op->sys = sys;
  op->nr = sys->nc;
  op->ncol = sys->n;
  op->block = sys->block;
  op->threads = cm__threads(ctx);
  int st = CM_OK;
  double t0 = cm__now();
  if (sys->n > 0)
    st = cm__factor(ctx, op);
  double t1 = cm__now();
  if (!st && sys->n > 0)
    st = op->block ? cm__build_B(ctx, op) : cm__build_general(ctx, op);
  if (st && !ctx->status)
    CM__ERR(ctx, st, NULL, "out of memory forming the operator");
  op->t_factor_s = t1 - t0;
  op->t_build_s = cm__now() - t1;
  if (st) {
    cm_operator_destroy(&op);
    return ctx->status;
  }
  *out = op;
  return CM_OK;
}

/* ---- application ------------------------------------------------------- */

/* y[i] = sum_q A[i, q] x[q - off] over CSR rows [i0, i0 + m). */
static void cm__spmv(const int *p, const int *j, const double *a, int i0, int m,
                     int off, const double *x, double *y, int threads) {
#pragma omp parallel for schedule(static)                                      \
    num_threads(threads) if (m > CM__PAR_MIN)
  for (int i = 0; i < m; i++) {
    double s = 0;
    for (int q = p[i0 + i]; q < p[i0 + i + 1]; q++)
      s += a[q] * x[j[q] - off];
    y[i] = s;
  }
}

void cm__op_B(cm_operator_t *op, int comp, const double *x, double *y) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  if (op->block) {
    cm__spmv(op->Bp, op->Bj, op->Bx, r0, m, c0, x, y,
             op->threads); /* y = B x */
    return;
  }
  /* y = K^1/2 J P^T L^-T x */
  double *t = op->gtmp;
  memcpy(t, x, sizeof(double) * (size_t)n);
  cm__solve(op, CHOLMOD_Lt, t);
  cm__solve(op, CHOLMOD_Pt, t);
  const cm_system_t *s = op->sys;
  cm__spmv(s->Jp, s->Jj, s->Jx, 0, m, 0, t, y, op->threads);
  for (int r = 0; r < m; r++)
    y[r] *= op->sqrtk[r];
}

void cm__op_BT(cm_operator_t *op, int comp, const double *y, double *x) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  if (op->block) {
    cm__spmv(op->Tp, op->Tj, op->Tx, c0, n, r0, y, x,
             op->threads); /* x = B^T y */
    return;
  }
  /* x = L^-1 P J^T K^1/2 y */
  const cm_system_t *s = op->sys;
  memset(x, 0, sizeof(double) * (size_t)n);
  for (int r = 0; r < m; r++) {
    double v = op->sqrtk[r] * y[r];
    for (int q = s->Jp[r]; q < s->Jp[r + 1]; q++)
      x[s->Jj[q]] += s->Jx[q] * v;
  }
  cm__solve(op, CHOLMOD_P, x);
  cm__solve(op, CHOLMOD_L, x);
}

int cm_operator_apply_B(cm_operator_t *op, const double *x, double *y) {
  cm__op_B(op, -1, x, y);
  return CM_OK;
}

int cm_operator_apply_BT(cm_operator_t *op, const double *y, double *x) {
  cm__op_BT(op, -1, y, x);
  return CM_OK;
}

int cm_operator_apply_S(cm_operator_t *op, int comp, const double *x,
                        double *y) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  double *t = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (!t)
    return CM_NOMEM;
  cm__op_BT(op, comp, x, t); /* t = B^T x */
  cm__op_B(op, comp, t, y);  /* y = B t */
  free(t);
  return CM_OK;
}

/* ---- dense forms and row bounds ----------------------------------------- */

int cm__op_dense_B(cm_operator_t *op, int comp, double *Bd) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  memset(Bd, 0, sizeof(double) * (size_t)m * (size_t)n);
  if (op->block) {
    for (int i = 0; i < m; i++)
      for (int q = op->Bp[r0 + i]; q < op->Bp[r0 + i + 1]; q++)
        Bd[(size_t)(op->Bj[q] - c0) * (size_t)m + (size_t)i] = op->Bx[q];
    return CM_OK;
  }
  double *e = calloc((size_t)n, sizeof(double));
  if (!e)
    return CM_NOMEM;
  for (int j = 0; j < n; j++) { /* column j of B = B e_j */
    e[j] = 1;
    cm__op_B(op, comp, e, Bd + (size_t)j * (size_t)m);
    e[j] = 0;
  }
  free(e);
  return CM_OK;
}

int cm__op_row_bounds(cm_context_t *ctx, cm_operator_t *op, int comp,
                      double *diag, double *gersh) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  if (op->block) {
    double *w = cm__malloc(ctx, (size_t)n + 1, sizeof(double));
    if (!w)
      return CM_NOMEM;
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (n > CM__PAR_MIN)
    for (int j = 0; j < n; j++) { /* w = |B|^T 1 */
      double s = 0;
      for (int q = op->Tp[c0 + j]; q < op->Tp[c0 + j + 1]; q++)
        s += fabs(op->Tx[q]);
      w[j] = s;
    }
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (m > CM__PAR_MIN)
    for (int i = 0; i < m; i++) { /* g = |B| w, d = |B_i|^2 */
      double g = 0, d = 0;
      for (int q = op->Bp[r0 + i]; q < op->Bp[r0 + i + 1]; q++) {
        g += fabs(op->Bx[q]) * w[op->Bj[q] - c0];
        d += op->Bx[q] * op->Bx[q];
      }
      gersh[i] = g;
      diag[i] = d;
    }
    free(w);
    return CM_OK;
  }
  /* general M: dense B (n solves), then the same sums; refused when B
   * would not fit in a few hundred MB (the bounds are then unknown) */
  if ((double)m * (double)n > 4e7)
    return CM__ERR(ctx, CM_LIMIT, NULL,
                   "bounds of a general M with %d x %d B are not computed", m,
                   n);
  double *Bd = cm__malloc(ctx, (size_t)m * (size_t)n + 1, sizeof(double));
  double *w = cm__calloc(ctx, (size_t)n + 1, sizeof(double));
  if (!Bd || !w || cm__op_dense_B(op, comp, Bd)) {
    free(Bd), free(w);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for the bounds");
  }
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m; i++)
      w[j] += fabs(Bd[(size_t)j * m + i]);
  for (int i = 0; i < m; i++) {
    double g = 0, d = 0;
    for (int j = 0; j < n; j++) {
      double b = Bd[(size_t)j * m + i];
      g += fabs(b) * w[j];
      d += b * b;
    }
    gersh[i] = g;
    diag[i] = d;
  }
  free(Bd), free(w);
  return CM_OK;
}

int cm_operator_csr(const cm_operator_t *op, const int **Bp, const int **Bj,
                    const double **Bx, const int **Tp, const int **Tj,
                    const double **Tx) {
  if (!op || !op->block)
    return CM_USAGE;
  *Bp = op->Bp, *Bj = op->Bj, *Bx = op->Bx;
  *Tp = op->Tp, *Tj = op->Tj, *Tx = op->Tx;
  return CM_OK;
}

long cm_operator_nnz(const cm_operator_t *op) {
  if (!op)
    return 0;
  if (op->block)
    return op->Bp ? (long)op->Bp[op->nr] : 0;
  return (long)op->sys->Jp[op->sys->nc];
}

int cm_operator_bounds(cm_context_t *ctx, cm_operator_t *op,
                       double *omega_lower, double *omega_upper) {
  *omega_lower = *omega_upper = 0;
  if (op->nr == 0 || op->ncol == 0)
    return CM_OK;
  double *d = cm__malloc(ctx, (size_t)op->nr, sizeof(double));
  double *g = cm__malloc(ctx, (size_t)op->nr, sizeof(double));
  int st = d && g ? cm__op_row_bounds(ctx, op, -1, d, g) : CM_NOMEM;
  double dm = 0, gm = 0;
  for (int i = 0; !st && i < op->nr; i++) {
    dm = d[i] > dm ? d[i] : dm;
    gm = g[i] > gm ? g[i] : gm;
  }
  *omega_lower = sqrt(dm);
  *omega_upper = sqrt(gm);
  free(d), free(g);
  return st;
}

double *cm_operator_dense_S(cm_context_t *ctx, cm_operator_t *op) {
  int m = op->nr, n = op->ncol;
  double *Bd = cm__malloc(ctx, (size_t)m * (size_t)n + 1, sizeof(double));
  double *S = cm__calloc(ctx, (size_t)m * (size_t)m + 1, sizeof(double));
  if (!Bd || !S || cm__op_dense_B(op, -1, Bd)) {
    free(Bd), free(S);
    return NULL;
  }
  if (m > 0 && n > 0) /* S = B B^T (upper), then mirrored */
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, m, n, 1.0, Bd, m, 0.0,
                S, m);
  for (int j = 0; j < m; j++)
    for (int i = 0; i < j; i++)
      S[(size_t)i * m + j] = S[(size_t)j * m + i];
  free(Bd);
  return S;
}
