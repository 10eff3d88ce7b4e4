/* operator.c: B = K^1/2 J L^-T with P M P^T = L L^T from CHOLMOD.
 * Block-diagonal M (scenes): natural ordering, so L is block-diagonal too;
 * B is formed once, by rows as slots and by columns as groups (the grouped
 * forms below), and every operator application is two row-parallel
 * products and no solve. A diagonal M (disks, and spheres whose spins are
 * dropped) needs no CHOLMOD: L = M^1/2, which is what CHOLMOD's simplicial
 * LL^T gives for it bit for bit, and B has the pattern of J, which it then
 * shares (its CSR values are formed only if cm_operator_csr asks).
 * General M (matrices): the factor is kept and B, B^T are applied with
 * solves (CHOLMOD_Lt, CHOLMOD_Pt / CHOLMOD_P, CHOLMOD_L).
 * Not for eigen-solves (spectrum/). */
#include "operator_cholmod.h"
#include "operator_internal.h"

#include <cblas.h>
#include <cholmod.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
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
  double *Bx;     /* B values; with a diagonal M formed only when
                     cm_operator_csr asks (the products read the slots) */
  double *dinv;   /* diagonal M sharing J's pattern: L^-1, B's values then
                     formed from J when asked (cm__B_val); else NULL */
  pthread_mutex_t bx_lock; /* guards that late formation */
  /* grouped forms: what the products read (B^T is only kept so) */
  int ng, gmax, guni; /* groups, largest size, common size (0: mixed) */
  int *g0;            /* first column of each group, size ng+1 */
  int *Gp, *Gj;       /* B^T: entries of each group (ng+1), their rows */
  double *Gx;         /* B^T: gmax values per entry */
  int *Sp;            /* B: slots of each row, size nr+1 */
  unsigned *Sc;       /* B: slot = first column << 3 | (size - 1) */
  double *Sx;         /* B: gmax values per slot */
  float *Gx32, *Sx32; /* the same values rounded to float (cm__op_make_f32;
                         NULL until asked), read by cm__op_rows32 */
  int vals32;         /* 1: the slots were formed in float only (Sx32,
                         Gx32; cm__operator_create): Sx and Gx stay NULL
                         until cm__op_make_f64, and the double readers form
                         each slot's values from B's CSR meanwhile */
  pthread_mutex_t f32_lock; /* guards the float and the late double forms */
  int f32_refused;          /* values out of float's range, or no memory */
  double *rb_d, *rb_g;      /* block path: every row's bounds, once asked
                               (cm__op_row_bounds), size nr */
  pthread_mutex_t rb_lock;  /* guards their formation */
  /* general path */
  cholmod_common cc;            /* CHOLMOD context */
  int cc_started;               /* cholmod_start called */
  cholmod_factor *L;            /* block path: factor of M */
  cholmod_factor **Lc;          /* general path: P M_c P^T of each
                                   component's block M_c, size ncomp */
  int nLc;                      /* factors in Lc */
  cholmod_dense *Y, *Yw, *Ew;   /* block path: the same (dof shapes) */
  double *sqrtk;                /* k^1/2 per row */
  double *gtmp;                 /* general path: scratch of size ncol */
  double *gperm;                /* general path: the solves' scratch */
  double t_factor_s, t_build_s; /* phase timings */
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
    free(op->Bp), cm__ws_free(op->Bj);
  cm__ws_free(op->Bx), cm__ws_free(op->ldiag), cm__ws_free(op->dinv);
  pthread_mutex_destroy(&op->bx_lock);
  pthread_mutex_destroy(&op->f32_lock);
  pthread_mutex_destroy(&op->rb_lock);
  cm__ws_free(op->rb_d), cm__ws_free(op->rb_g);
  cm__ws_free(op->Gx32), cm__ws_free(op->Sx32);
  cm__ws_free(op->g0), cm__ws_free(op->Gp), cm__ws_free(op->Gj);
  cm__ws_free(op->Gx), cm__ws_free(op->Sp), cm__ws_free(op->Sc);
  cm__ws_free(op->Sx);
  free(op->sqrtk), free(op->gtmp);
  if (op->cc_started) {
    cholmod_free_factor(&op->L, &op->cc);
    for (int c = 0; op->Lc && c < op->nLc; c++)
      cholmod_free_factor(&op->Lc[c], &op->cc);
    cholmod_free_dense(&op->Y, &op->cc);
    cholmod_free_dense(&op->Yw, &op->cc);
    cholmod_free_dense(&op->Ew, &op->cc);
    cholmod_finish(&op->cc);
  }
  free(op->Lc), free(op->gperm);
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
  double *ld = cm__ws_malloc(NULL, (size_t)n, sizeof(double));
  if (!ld)
    return 0;
#pragma omp parallel for schedule(static) num_threads(op->threads)             \
    reduction(&& : diag) if (n > CM__PAR_MIN)
  for (int j = 0; j < n; j++) {
    diag = diag && s->Mp[j + 1] == j + 1 && s->Mi[j] == j && s->Mx[j] > 0;
    ld[j] = sqrt(s->Mx[j]);
  }
  if (!diag) {
    cm__ws_free(ld);
    return 0;
  }
  op->ldiag = ld;
  return 1;
}

/* General path: one CHOLMOD factor (fill-reducing order) per component,
 * of its diagonal block of M (the system is block-diagonal by component);
 * a failed pivot is named by its dof in the input's M. */
static int cm__factor_comps(cm_context_t *ctx, cm_operator_t *op) {
  const cm_system_t *s = op->sys;
  cholmod_common *cc = &op->cc;
  op->Lc = calloc((size_t)s->ncomp + 1, sizeof *op->Lc);
  if (!op->Lc)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory factoring M");
  op->nLc = s->ncomp;
  int nmax = 0;
  for (int c = 0; c < s->ncomp; c++) {
    int n = s->comp_col[c + 1] - s->comp_col[c];
    nmax = n > nmax ? n : nmax;
  }
  int *p = malloc(sizeof(int) * ((size_t)nmax + 1));
  int *idx = malloc(sizeof(int) * ((size_t)s->Mp[s->n] + 1));
  if (!p || !idx) {
    free(p), free(idx);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory factoring M");
  }
  /* one ordering, AMD: CHOLMOD's default also tries METIS when AMD's fill
   * is high, and falls back to it when AMD runs out of memory, which would
   * change the bits with the memory at hand */
  cc->nmethods = 1;
  cc->method[0].ordering = CHOLMOD_AMD;
  int st = CM_OK;
  for (int c = 0; c < s->ncomp && !st; c++) {
    int c0 = s->comp_col[c], n = s->comp_col[c + 1] - c0, q0 = s->Mp[c0];
    for (int j = 0; j <= n; j++) /* the block: local pointers and rows */
      p[j] = s->Mp[c0 + j] - q0;
    for (int q = 0; q < p[n]; q++)
      idx[q] = s->Mi[q0 + q] - c0;
    cholmod_sparse M;
    memset(&M, 0, sizeof M);
    M.nrow = M.ncol = (size_t)n;
    M.nzmax = (size_t)p[n];
    M.p = p, M.i = idx, M.x = s->Mx + q0;
    M.stype = -1, M.itype = CHOLMOD_INT, M.xtype = CHOLMOD_REAL;
    M.dtype = CHOLMOD_DOUBLE, M.sorted = 1, M.packed = 1;
    cholmod_factor *L = op->Lc[c] = cholmod_analyze(&M, cc);
    if (!L) {
      st = cc->status == CHOLMOD_OUT_OF_MEMORY
               ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory analysing M")
               : CM__ERR(ctx, CM_NUMERIC, "M",
                         "CHOLMOD could not analyse M (status %d)", cc->status);
      break;
    }
    cholmod_factorize(&M, L, cc);
    if (cc->status == CHOLMOD_OUT_OF_MEMORY) {
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory factoring M");
    } else if (cc->status == CHOLMOD_NOT_POSDEF || L->minor < L->n) {
      int j = (int)L->minor;
      if (L->Perm)
        j = ((int *)L->Perm)[j];
      st = CM__ERR(ctx, CM_NOT_SPD, "M",
                   "M: not positive definite (pivot %d of %d failed); M must "
                   "be symmetric positive definite",
                   s->col_dof[c0 + j], s->ndofs);
    } else if (cc->status < 0 || !L->is_ll) {
      st = CM__ERR(ctx, CM_NUMERIC, "M",
                   "CHOLMOD factorization failed (status %d)", cc->status);
    } else if (!cholmod_change_factor(CHOLMOD_REAL, 1, 0, 1, 1, L, cc)) {
      /* simplicial LL^T, packed: the products' own solves (cm__solve) */
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory factoring M");
    }
  }
  free(p), free(idx);
  return st;
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
  if (!s->block)
    return cm__factor_comps(ctx, op);
  cholmod_sparse M = cm__op_M_view(s);
  op->L = cholmod_analyze(&M, cc);
  if (!op->L)
    return cc->status == CHOLMOD_OUT_OF_MEMORY
               ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory analysing M")
               : CM__ERR(ctx, CM_NUMERIC, "M",
                         "CHOLMOD could not analyse M (status %d)", cc->status);
  cholmod_factorize(&M, op->L, cc);
  if (cc->status == CHOLMOD_OUT_OF_MEMORY)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory factoring M");
  if (cc->status == CHOLMOD_NOT_POSDEF || op->L->minor < op->L->n) {
    int j = (int)op->L->minor;
    if (op->L->Perm)
      j = ((int *)op->L->Perm)[j];
    if (!s->dim) /* matrices, block-diagonal M: M's dof */
      return CM__ERR(ctx, CM_NOT_SPD, "M",
                     "M: not positive definite (the diagonal block of M "
                     "holding dof %d, 0-based, fails its Cholesky "
                     "factorization); M must be symmetric positive definite",
                     s->col_dof[j]);
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

/* Entry e of B's CSR, sk = cm__B_scale of its row r: for a diagonal M
 * (op->dinv = L^-1, L = diag(ldiag)) k_r^1/2 (J_re / L_jj) from J, the
 * value cm__B_row computes for a diagonal block; else Bx's. */
static inline double cm__B_scale(const cm_operator_t *op, int r) {
  return op->dinv ? sqrt(op->sys->k[r]) : 1.0;
}
static inline double cm__B_val(const cm_operator_t *op, double sk, int e) {
  return op->dinv ? sk * (op->dinv[op->sys->Jj[e]] * op->sys->Jx[e])
                  : op->Bx[e];
}

/* L^-1 for L = diag(ldiag), from the workspace (cm__ws_free; NULL when out
 * of memory). */
static double *cm__diag_inverse(const cm_operator_t *op) {
  double *dinv = cm__ws_malloc(NULL, (size_t)op->ncol + 1, sizeof(double));
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (dinv && op->ncol > CM__PAR_MIN)
  for (int j = 0; j < (dinv ? op->ncol : 0); j++)
    dinv[j] = 1.0 / op->ldiag[j];
  return dinv;
}

/* B for a diagonal M has J's pattern, which it then shares, and the
 * entries cm__B_val with op->dinv = L^-1; the values themselves
 * are not stored (the slots hold them). Returns 1 (nothing built) if some
 * J_rj / L_jj underflows to 0: B's pattern is then smaller than J's and
 * the block path below forms it. */
static int cm__B_diagonal(cm_context_t *ctx, cm_operator_t *op) {
  const cm_system_t *s = op->sys;
  int nr = op->nr;
  double *dinv = cm__diag_inverse(op);
  if (!dinv)
    return CM__ERR(ctx, CM_NOMEM, NULL,
                   "out of memory allocating %d x 8 "
                   "bytes",
                   op->ncol + 1);
  long zeros = 0;
#pragma omp parallel for schedule(static) num_threads(op->threads)             \
    reduction(+ : zeros) if (nr > CM__PAR_MIN)
  for (int r = 0; r < nr; r++)
    for (int q = s->Jp[r]; q < s->Jp[r + 1]; q++)
      zeros += dinv[s->Jj[q]] * s->Jx[q] == 0; /* (L^-1 j)_i */
  if (zeros) {
    cm__ws_free(dinv);
    return 1;
  }
  op->dinv = dinv;
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
    op->Bj = cm__ws_malloc(ctx, nnz, sizeof(int));
    op->Bx = cm__ws_malloc(ctx, nnz, sizeof(double));
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

/* ---- grouped forms: what the products read ------------------------------ */

/* The consecutive columns of one body (at most CM__GMAX) are a group. B^T is
 * kept by groups: one row list per group, gmax values per entry (zero where
 * a column of the group lacks that row), so the dofs of a body gather each
 * contact's input once; B by slots: one per group a row touches, its first
 * column and size packed in one word, gmax values. Every output is the
 * CSR row's sum in the CSR order with zero terms between (x + 0 * y = x for
 * finite y): the same bits, with a third of the index reads and gathers of
 * a 3D pile. */
#define CM__GMAX 8
/* slots ahead whose destination the transpose asks for: its writes land
 * in every group, at random */
#define CM__PF_AHEAD 16
#define CM__GCOLS (1 << 28) /* columns that fit the packed slot word */

/* The values of row r on columns [c, end) (gmax of them from column c,
 * zeros where the row lacks an entry) from B's CSR, *e the row's cursor at
 * its first entry from column c (left past those entries). */
static inline void cm__vals_fill(const cm_operator_t *op, int r, int c, int end,
                                 int *e, double *a) {
  double sk = cm__B_scale(op, r);
  for (int t = 0; t < op->gmax; t++)
    a[t] = 0;
  for (; *e < op->Bp[r + 1] && op->Bj[*e] < end; (*e)++)
    a[op->Bj[*e] - c] = cm__B_val(op, sk, *e);
}

/* Slot q's values (row r), *e the row's cursor at the slot's first entry
 * (from Bp[r], slot by slot): the values the slots hold. */
static inline void cm__slot_fill(const cm_operator_t *op, int r, size_t q,
                                 int *e, double *a) {
  unsigned u = op->Sc[q];
  int c = (int)(u >> 3);
  cm__vals_fill(op, r, c, c + (int)(u & 7) + 1, e, a);
}

/* Entry e of group b's values (its row Gj[e]) from B's CSR: the values B^T
 * holds by groups (a copy of that row's slot in the group). */
static inline void cm__entry_fill(const cm_operator_t *op, int b, size_t e,
                                  double *a) {
  int r = op->Gj[e], c = op->g0[b], p = op->Bp[r];
  while (p < op->Bp[r + 1] && op->Bj[p] < c)
    p++;
  cm__vals_fill(op, r, c, op->g0[b + 1], &p, a);
}

/* A double slot as the readers see it: in the formed array (sx: cm__op_sx,
 * NULL while only float values are formed), or its values from B's CSR
 * into buf. */
static inline const double *cm__slot64(const cm_operator_t *op,
                                       const double *sx, int r, size_t q,
                                       int *e, double *buf) {
  if (sx)
    return sx + q * (size_t)op->gmax;
  cm__slot_fill(op, r, q, e, buf);
  return buf;
}

/* op->Sx as a reader sees it (formed late by cm__op_make_f64, Gx first). */
static inline const double *cm__op_sx(const cm_operator_t *op) {
  return __atomic_load_n(&op->Sx, __ATOMIC_ACQUIRE);
}

/* 1 when a nonzero value lies outside [2^-120, 2^120]: its float would
 * break |B - B32| <= 2^-24 |B| (a subnormal or an overflow), so the
 * products stay on the double values. */
static inline int cm__f32_unsafe(double v) {
  return v != 0 && !(fabs(v) >= 0x1p-120 && fabs(v) <= 0x1p120);
}

/* Every slot's values from B's CSR into Sx (double) or Sx32 (float);
 * returns 1 if a float value would be cm__f32_unsafe. */
static int cm__fill_slots(cm_operator_t *op, double *Sx, float *Sx32) {
  int nr = op->nr, gmax = op->gmax, out = 0;
#pragma omp parallel for schedule(static) num_threads(op->threads)             \
    reduction(|                                                                \
              : out) if (nr > CM__PAR_MIN)
  for (int r = 0; r < nr; r++) {
    int e = op->Bp[r];
    for (size_t q = (size_t)op->Sp[r]; q < (size_t)op->Sp[r + 1]; q++) {
      if (Sx) {
        cm__slot_fill(op, r, q, &e, Sx + q * (size_t)gmax);
        continue;
      }
      double a[CM__GMAX];
      cm__slot_fill(op, r, q, &e, a);
      for (int t = 0; t < gmax; t++) {
        double v = a[t];
        out |= cm__f32_unsafe(v);
        Sx32[q * (size_t)gmax + (size_t)t] = (float)v;
      }
    }
  }
  return out;
}

/* The groups (g0) and the slots of B (Sp, Sc, and their values: Sx, or
 * Sx32 alone for op->vals32) from B's CSR; sets gq[q] to the group of
 * slot q. Values a float would not hold: Sx after all (f32_refused). */
static int cm__build_slots(cm_context_t *ctx, cm_operator_t *op, int **gq) {
  const cm_system_t *s = op->sys;
  int nr = op->nr, n = op->ncol, T = op->threads;
  int ng = 0, gmax = 0, guni = -1;
  for (int j = 0, k; j < n; j = k, ng++) {
    for (k = j + 1;
         k < n && k - j < CM__GMAX && s->col_body[k] == s->col_body[j]; k++)
      ;
    gmax = k - j > gmax ? k - j : gmax;
    guni = guni < 0 || guni == k - j ? k - j : 0;
  }
  /* from the workspace, as the values: a kept analysis takes them again
   * (cg and q2g, freed before the solve, from malloc: a one-off analysis
   * would keep them, unused, through its solve) */
  int *g0 = op->g0 = cm__ws_malloc(ctx, (size_t)ng + 1, sizeof(int));
  int *cg = cm__malloc(ctx, (size_t)n + 1, sizeof(int)); /* a column's */
  int *Sp = op->Sp = cm__ws_malloc(ctx, (size_t)nr + 1, sizeof(int));
  if (!g0 || !cg || !Sp) {
    free(cg);
    return CM_NOMEM;
  }
  op->ng = ng, op->gmax = gmax, op->guni = guni > 0 ? guni : 0;
  for (int j = 0, k, b = 0; j < n; j = k, b++) {
    for (k = j + 1;
         k < n && k - j < CM__GMAX && s->col_body[k] == s->col_body[j]; k++)
      cg[k] = b;
    g0[b] = j, cg[j] = b;
  }
  g0[ng] = n;
  const int *Bp = op->Bp, *Bj = op->Bj;
#pragma omp parallel for schedule(static) num_threads(T) if (nr > CM__PAR_MIN)
  for (int r = 0; r < nr; r++) {
    int c = 0;
    for (int q = Bp[r]; q < Bp[r + 1]; q++)
      c += q == Bp[r] || cg[Bj[q]] != cg[Bj[q - 1]];
    Sp[r + 1] = c;
  }
  Sp[0] = 0;
  for (int r = 0; r < nr; r++)
    Sp[r + 1] += Sp[r];
  size_t ns = (size_t)Sp[nr];
  unsigned *Sc = op->Sc = cm__ws_malloc(ctx, ns + 1, sizeof(unsigned));
  int *q2g = *gq = cm__malloc(ctx, ns + 1, sizeof(int));
  if (!Sc || !q2g) {
    free(cg);
    return CM_NOMEM;
  }
#pragma omp parallel for schedule(static) num_threads(T) if (nr > CM__PAR_MIN)
  for (int r = 0; r < nr; r++) {
    size_t q = (size_t)Sp[r];
    for (int e = Bp[r]; e < Bp[r + 1]; q++) {
      int b = cg[Bj[e]], c = g0[b], g = g0[b + 1] - c;
      Sc[q] = (unsigned)c << 3 | (unsigned)(g - 1);
      q2g[q] = b;
      for (; e < Bp[r + 1] && cg[Bj[e]] == b; e++)
        ;
    }
  }
  free(cg);
  size_t nv = ns * (size_t)gmax + 1;
  if (op->vals32) {
    op->Sx32 = cm__ws_malloc(ctx, nv, sizeof(float));
    if (op->Sx32 && !cm__fill_slots(op, NULL, op->Sx32))
      return CM_OK;
    cm__ws_free(op->Sx32); /* out of float's range, or of memory */
    op->Sx32 = NULL, op->vals32 = 0, op->f32_refused = 1;
  }
  op->Sx = cm__ws_malloc(ctx, nv, sizeof(double));
  if (!op->Sx)
    return CM_NOMEM;
  cm__fill_slots(op, op->Sx, NULL);
  return CM_OK;
}

/* B^T by groups from B's slots, by a counting transpose on the slots' group:
 * each thread counts, then places, the slots of its own run of consecutive
 * rows, at offsets that follow those of the threads before it, so every
 * group's rows come out ascending, as the sequential transpose gives them,
 * at any thread count. The values as the slots hold them: Gx from Sx, or
 * Gx32 from Sx32 (op->vals32). */
static int cm__transpose_slots(cm_context_t *ctx, cm_operator_t *op,
                               const int *gq) {
  int nr = op->nr, ng = op->ng, gmax = op->gmax;
  int T = nr > CM__PAR_MIN ? op->threads : 1;
  const int *Sp = op->Sp;
  size_t ns = (size_t)Sp[nr], esz = (op->vals32 ? 4 : 8) * (size_t)gmax;
  /* one entry more than ns: the groups' vector kernels (CM__GROUPV) read
   * past the last one */
  const char *Sx = op->vals32 ? (const char *)op->Sx32 : (const char *)op->Sx;
  int *Gp = op->Gp = cm__ws_malloc(ctx, (size_t)ng + 1, sizeof(int));
  int *Gj = op->Gj = cm__ws_malloc(ctx, ns + 1, sizeof(int));
  char *Gx = cm__ws_malloc(ctx, (ns + 1) * esz, 1);
  if (Gx)
    memset(Gx + ns * esz, 0, esz);
  if (op->vals32)
    op->Gx32 = (float *)Gx;
  else
    op->Gx = (double *)Gx;
  int **next = calloc((size_t)T, sizeof *next); /* per thread, size ng */
  if (!Gp || !Gj || !Gx || !next) {
    free(next);
    return CM_NOMEM;
  }
  int nomem = 0;
#pragma omp parallel num_threads(T)
  {
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    int r0 = (int)((long)nr * t / nt), r1 = (int)((long)nr * (t + 1) / nt);
    int *c = calloc((size_t)ng + 1, sizeof(int));
    next[t] = c;
    if (!c) {
#pragma omp atomic write
      nomem = 1;
    } else
      for (int q = Sp[r0]; q < Sp[r1]; q++)
        c[gq[q]]++;
#pragma omp barrier
    int failed;
#pragma omp atomic read
    failed = nomem;
    if (!failed) {
#pragma omp for schedule(static)
      for (int b = 0; b < ng; b++) {
        int sum = 0;
        for (int u = 0; u < nt; u++)
          sum += next[u][b];
        Gp[b + 1] = sum;
      }
#pragma omp single
      {
        Gp[0] = 0;
        for (int b = 0; b < ng; b++)
          Gp[b + 1] += Gp[b];
      }
#pragma omp for schedule(static)
      for (int b = 0; b < ng; b++) { /* thread u's first entry in group b */
        int o = Gp[b];
        for (int u = 0; u < nt; u++) {
          int k = next[u][b];
          next[u][b] = o;
          o += k;
        }
      }
      int q1 = Sp[r1];
      for (int r = r0; r < r1; r++)
        for (int q = Sp[r]; q < Sp[r + 1]; q++) {
          if (q + CM__PF_AHEAD < q1) { /* where a later slot goes, about */
            size_t ea = (size_t)c[gq[q + CM__PF_AHEAD]];
            __builtin_prefetch(Gx + ea * esz, 1);
            __builtin_prefetch(Gx + ea * esz + esz - 1, 1);
            __builtin_prefetch(Gj + ea, 1);
          }
          size_t e = (size_t)c[gq[q]]++;
          Gj[e] = r;
          memcpy(Gx + e * esz, Sx + (size_t)q * esz, esz);
        }
    }
  }
  for (int t = 0; t < T; t++)
    free(next[t]);
  free(next);
  return nomem ? CM_NOMEM : CM_OK;
}

static int cm__build_groups(cm_context_t *ctx, cm_operator_t *op) {
  if (op->ncol >= CM__GCOLS)
    return CM__ERR(ctx, CM_LIMIT, NULL,
                   "%d active dofs: the operator holds at most %d", op->ncol,
                   CM__GCOLS - 1);
  int *gq = NULL;
  int st = cm__build_slots(ctx, op, &gq);
  if (!st)
    st = cm__transpose_slots(ctx, op, gq);
  free(gq);
  return st;
}

static int cm__build_B(cm_context_t *ctx, cm_operator_t *op) {
  int st = op->ldiag ? cm__B_diagonal(ctx, op) : 1;
  if (st > 0)
    st = cm__B_blocks(ctx, op);
  if (!st)
    st = cm__build_groups(ctx, op);
  return st;
}

/* ---- general path: workspace for solves ---------------------------------- */

static int cm__build_general(cm_context_t *ctx, cm_operator_t *op) {
  op->sqrtk = cm__malloc(ctx, (size_t)op->nr + 1, sizeof(double));
  op->gtmp = cm__malloc(ctx, (size_t)op->ncol + 1, sizeof(double));
  op->gperm = cm__malloc(ctx, (size_t)op->ncol + 1, sizeof(double));
  if (!op->sqrtk || !op->gtmp || !op->gperm)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  for (int r = 0; r < op->nr; r++)
    op->sqrtk[r] = sqrt(op->sys->k[r]);
  return CM_OK;
}

/* x <- op(x) in place for one solve kind (CHOLMOD_P, _L, _Lt, _Pt) with
 * component c's factor, simplicial LL^T and packed (diagonal first in each
 * column), x over its columns: the substitutions here, sequential, so
 * they allocate nothing and give the same bits at any thread count; the
 * scratch is c's columns of gperm, so distinct components may be solved
 * concurrently. */
static void cm__solve(cm_operator_t *op, int c, int kind, double *x) {
  const cholmod_factor *L = op->Lc[c];
  int n = (int)L->n;
  const int *Lp = L->p, *Li = L->i, *perm = L->Perm;
  const double *Lx = L->x;
  if (kind == CHOLMOD_P || kind == CHOLMOD_Pt) {  /* x = P x or P^T x */
    double *t = op->gperm + op->sys->comp_col[c]; /* c's own scratch */
    memcpy(t, x, sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++)
      if (kind == CHOLMOD_P)
        x[i] = t[perm ? perm[i] : i];
      else
        x[perm ? perm[i] : i] = t[i];
  } else if (kind == CHOLMOD_L) { /* forward, by columns */
    for (int j = 0; j < n; j++) {
      double v = x[j] /= Lx[Lp[j]];
      for (int q = Lp[j] + 1; q < Lp[j + 1]; q++)
        x[Li[q]] -= Lx[q] * v;
    }
  } else { /* L^T: backward, row j of L^T is column j of L */
    for (int j = n - 1; j >= 0; j--) {
      double v = x[j];
      for (int q = Lp[j] + 1; q < Lp[j + 1]; q++)
        v -= Lx[q] * x[Li[q]];
      x[j] = v / Lx[Lp[j]];
    }
  }
}

/* The components of comp (-1: all of them) as [*c_lo, *c_hi). */
static void cm__comp_range(const cm_operator_t *op, int comp, int *c_lo,
                           int *c_hi) {
  *c_lo = comp < 0 ? 0 : comp;
  *c_hi = comp < 0 ? op->sys->ncomp : comp + 1;
}

int cm_operator_create(cm_context_t *ctx, const cm_system_t *sys,
                       cm_operator_t **out) {
  return cm__operator_create(ctx, sys, 0, out);
}

int cm__operator_create(cm_context_t *ctx, const cm_system_t *sys, int vals32,
                        cm_operator_t **out) {
  *out = NULL;
  cm_operator_t *op = calloc(1, sizeof *op);
  if (!op)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  op->sys = sys;
  op->vals32 = vals32 && sys->block;
  op->nr = sys->nc;
  op->ncol = sys->n;
  op->block = sys->block;
  op->threads = cm__threads(ctx);
  pthread_mutex_init(&op->bx_lock, NULL);
  pthread_mutex_init(&op->f32_lock, NULL);
  pthread_mutex_init(&op->rb_lock, NULL);
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

/* y[i] = sum_q A[i, q] x[q - off] over CSR rows [i0, i1) (y local to i0). */
static void cm__csr_rows(const int *p, const int *j, const double *a, int i0,
                         int i1, int off, const double *x, double *y) {
  for (int i = i0; i < i1; i++) {
    double s = 0;
    for (int q = p[i]; q < p[i + 1]; q++)
      s += a[q] * x[j[q] - off];
    y[i - i0] = s;
  }
}

/* The group holding column j (j = ncol: ng). */
static int cm__group_of(const cm_operator_t *op, int j) {
  int lo = 0, hi = op->ng;
  if (j >= op->ncol)
    return op->ng;
  while (hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    if (op->g0[mid] <= j)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

#define CM__ROW_CHUNK 4096

/* How far ahead of the kernels the value streams are prefetched: the
 * hardware prefetchers alone left the S product at 60% of the triad
 * bandwidth (bench/, 1e6 pile: 8.0 -> 4.7 ms with 4 KiB; 1.5-12 KiB
 * measured alike). On a Zen 2 EPYC (AVX2, 16 MiB L3) 1, 4 and 16 KiB
 * measured alike too, and 0 (the hardware's prefetchers alone) cost 6%
 * on the float product and 24% on the double one (docs/performance.md,
 * session 35): one distance serves the CPUs met. A hint only: past the
 * end is harmless. -DCM__PF_BYTES=N builds another distance to measure. */
#ifndef CM__PF_BYTES
#define CM__PF_BYTES 4096
#endif
/* The gathered vector is not prefetched: the x of a slot (the y of an
 * entry) is at a column (row) the hardware cannot guess, but the columns
 * are in breadth-first order (cm__body_order), so a row's columns lie
 * within about one level of the walk and the gathers hit a window of the
 * vector that the cache holds. In the Morton order used before, the
 * gathers of a 32 MiB-L3 EPYC (1e6 pile) waited on memory and a prefetch
 * 128 slots ahead paid (6.25 -> 4.69 ms a product); in breadth-first order
 * the same prefetch cost 12% (the solver's float kernels 4.70-4.78 ms
 * without, 5.26-5.47 ms with: bench_step --f32, three alternating runs). */

/* (B x)_r for rows r in [i0, i1) from the slots (x's first column c0),
 * values Sx (op->Sx, or its float copy: each value widened exactly, the
 * sums in double); G: the common group size, or 0 to read each slot's.
 * Inlined per G so the inner loop is unrolled for a uniform scene. With a
 * common size, two consecutive rows of two slots each (a contact between
 * two moving bodies) are summed side by side: each row's sum is a chain
 * of 2 G dependent additions, and two chains in one loop body keep the
 * adder busy where the row loop's varying trip count stops the CPU from
 * overlapping rows by itself (1e6 pile, AMD EPYC family 26: the B half
 * of a product 3.5 -> 2.9 ms). Each row's additions stay in their order:
 * the same bits. */
#define CM__SLOT_ROWS(NAME, T)                                                 \
  static inline __attribute__((always_inline)) double NAME##_one(              \
      const cm_operator_t *op, const T *Sx, int G, size_t stride, int i,       \
      int c0, const double *x) {                                               \
    const int *Sp = op->Sp;                                                    \
    const unsigned *Sc = op->Sc;                                               \
    double s = 0;                                                              \
    for (int q = Sp[i]; q < Sp[i + 1]; q++) {                                  \
      unsigned u = Sc[q];                                                      \
      int g = G ? G : (int)(u & 7) + 1;                                        \
      const T *a = Sx + (size_t)q * stride;                                    \
      const double *xs = x + ((int)(u >> 3) - c0);                             \
      __builtin_prefetch((const char *)a + CM__PF_BYTES);                      \
      _Pragma("GCC unroll 8") for (int t = 0; t < g; t++) s +=                 \
          (double)a[t] * xs[t];                                                \
    }                                                                          \
    return s;                                                                  \
  }                                                                            \
  static inline __attribute__((always_inline)) void NAME(                      \
      const cm_operator_t *op, const T *Sx, int G, int i0, int i1, int c0,     \
      const double *x, double *y) {                                            \
    const int *Sp = op->Sp;                                                    \
    const unsigned *Sc = op->Sc;                                               \
    size_t stride = (size_t)(G ? G : op->gmax);                                \
    int i = i0;                                                                \
    for (; G && i + 1 < i1; i += 2) {                                          \
      int q = Sp[i];                                                           \
      if (Sp[i + 1] - q != 2 || Sp[i + 2] - q != 4) {                          \
        y[i - i0] = NAME##_one(op, Sx, G, stride, i, c0, x);                   \
        y[i + 1 - i0] = NAME##_one(op, Sx, G, stride, i + 1, c0, x);           \
        continue;                                                              \
      }                                                                        \
      const T *a = Sx + (size_t)q * stride;                                    \
      __builtin_prefetch((const char *)a + CM__PF_BYTES);                      \
      const double *x0 = x + ((int)(Sc[q] >> 3) - c0);                         \
      const double *x1 = x + ((int)(Sc[q + 1] >> 3) - c0);                     \
      const double *x2 = x + ((int)(Sc[q + 2] >> 3) - c0);                     \
      const double *x3 = x + ((int)(Sc[q + 3] >> 3) - c0);                     \
      double s = 0, r = 0;                                                     \
      _Pragma("GCC unroll 8") for (int t = 0; t < G; t++) {                    \
        s += (double)a[t] * x0[t];                                             \
        r += (double)a[2 * G + t] * x2[t];                                     \
      }                                                                        \
      _Pragma("GCC unroll 8") for (int t = 0; t < G; t++) {                    \
        s += (double)a[G + t] * x1[t];                                         \
        r += (double)a[3 * G + t] * x3[t];                                     \
      }                                                                        \
      y[i - i0] = s, y[i + 1 - i0] = r;                                        \
    }                                                                          \
    for (; i < i1; i++)                                                        \
      y[i - i0] = NAME##_one(op, Sx, G, stride, i, c0, x);                     \
  }
CM__SLOT_ROWS(cm__slot_rows, double)
CM__SLOT_ROWS(cm__slot_rows32, float)

/* (B^T y)_j for columns j in [j0, j1) from the groups (y's first row r0),
 * values Gx (op->Gx or its float copy): each group overlapping the range
 * is summed whole, its columns inside the range stored. */
#define CM__GROUP_ROWS(NAME, T)                                                \
  static inline __attribute__((always_inline)) void NAME(                      \
      const cm_operator_t *op, const T *Gx, int G, int j0, int j1, int r0,     \
      const double *y, double *x) {                                            \
    const int *g0 = op->g0, *Gp = op->Gp, *Gj = op->Gj;                        \
    size_t stride = (size_t)(G ? G : op->gmax);                                \
    for (int b = cm__group_of(op, j0); b < op->ng && g0[b] < j1; b++) {        \
      int g = G ? G : g0[b + 1] - g0[b];                                       \
      double s[CM__GMAX] = {0};                                                \
      for (int e = Gp[b]; e < Gp[b + 1]; e++) {                                \
        double v = y[Gj[e] - r0];                                              \
        const T *a = Gx + (size_t)e * stride;                                  \
        __builtin_prefetch((const char *)a + CM__PF_BYTES);                    \
        _Pragma("GCC unroll 8") for (int t = 0; t < g; t++) s[t] +=            \
            (double)a[t] * v;                                                  \
      }                                                                        \
      _Pragma("GCC unroll 8") for (int t = 0; t < g;                           \
                                   t++) if (g0[b] + t >= j0 && g0[b] + t < j1) \
          x[g0[b] + t - j0] = s[t];                                            \
    }                                                                          \
  }
CM__GROUP_ROWS(cm__group_rows, double)
CM__GROUP_ROWS(cm__group_rows32, float)

/* cm__group_rows for groups of 3 (a body's three translations: the
 * spheres of piles) and 6, its sums the first lanes of 4-wide vectors:
 * each entry's values and the next one's first, widened, times the
 * gathered y, added, lane by lane the scalar kernel's products and sums
 * in its order (the same bits; the lanes past G are thrown away). Compiled
 * for each kernel set, where the scalar kernel's nine conversions,
 * products and sums an entry (SSE2 scalar code) kept fewer entries'
 * gathers in flight: the float S product of the 1e6 pile 4-8% faster.
 * Reads past the last entry (one value for groups of 3, two for 6): the
 * values have one entry of room (cm__transpose_slots, cm__op_make_f64 and
 * _f32). */
typedef double cm__d4 __attribute__((vector_size(32)));
#define CM__LOAD4_double(v, a) memcpy(&(v), (a), sizeof(v))
#define CM__LOAD4_float(v, a) CM__LOAD_WIDEN(v, a, cm__d4, 4)
#define CM__LOAD4V_double CM__LOAD4_double
#define CM__LOAD4V_float(v, a) CM__LOAD_WIDEN4(v, a, cm__d4)
/* G values a group (3 or 6: a body with its rotations, as tangential
 * springs make a sphere's), in (G + 3) / 4 vectors of 4 */
#define CM__GROUPV_BODY(QUAL, NAME, T, LOAD, G)                                \
  QUAL NAME(const int *Gp, const int *Gj, const T *Gx, const int *g0, int b,   \
            int ng, int j0, int j1, int r0, const double *y, double *x) {      \
    enum { NV = ((G) + 3) / 4 };                                               \
    for (; b < ng && g0[b] < j1; b++) {                                        \
      cm__d4 s[NV];                                                            \
      for (int q = 0; q < NV; q++)                                             \
        s[q] = (cm__d4){0, 0, 0, 0};                                           \
      for (int e = Gp[b]; e < Gp[b + 1]; e++) {                                \
        double v = y[Gj[e] - r0];                                              \
        const T *a = Gx + (size_t)e * (G);                                     \
        __builtin_prefetch((const char *)a + CM__PF_BYTES);                    \
        for (int q = 0; q < NV; q++) {                                         \
          cm__d4 av;                                                           \
          LOAD(av, a + 4 * q);                                                 \
          s[q] += av * v;                                                      \
        }                                                                      \
      }                                                                        \
      for (int t = 0; t < (G); t++)                                            \
        if (g0[b] + t >= j0 && g0[b] + t < j1)                                 \
          x[g0[b] + t - j0] = s[t / 4][t % 4];                                 \
    }                                                                          \
  }
#define CM__GROUPV(NAME, T, G)                                                 \
  CM__GROUPV_BODY(CM__KERNEL_BODY_AVX512, NAME##_body64, T, CM__LOAD4V_##T, G) \
  CM__GROUPV_BODY(CM__KERNEL_BODY_AVX2, NAME##_body32, T, CM__LOAD4V_##T, G)   \
  CM__GROUPV_BODY(CM__KERNEL_BODY, NAME##_body16, T, CM__LOAD4_##T, G)         \
  CM__KERNEL_W(NAME,                                                           \
               (const int *Gp, const int *Gj, const T *Gx, const int *g0,      \
                int b, int ng, int j0, int j1, int r0, const double *y,        \
                double *x),                                                    \
               (Gp, Gj, Gx, g0, b, ng, j0, j1, r0, y, x))
CM__GROUPV(cm__group3_rows, double, 3)
CM__GROUPV(cm__group3_rows32, float, 3)
CM__GROUPV(cm__group6_rows, double, 6)
CM__GROUPV(cm__group6_rows32, float, 6)

/* The double kernels' sums where only float values are formed
 * (op->vals32, before cm__op_make_f64), from B's CSR values: the terms
 * the kernels add, in their order, less their zero terms (the slots' and
 * groups' padding), which change no bit of a sum that starts at +0 (it
 * never becomes -0) over finite vectors. A few times the cost of a formed
 * product, for the few that a float solve makes on S. */

/* Rows [a, b) of B X (X's first row: column c0; k columns ld_in apart,
 * Y's ld_out): each row's CSR sum, its values formed once for the k. */
static void cm__csr_rows64(const cm_operator_t *op, int a, int b, int c0,
                           const double *x, size_t ld_in, double *y,
                           size_t ld_out, int k) {
  for (int i = a; i < b; i++) {
    double sk = cm__B_scale(op, i), val[2 * CM__GMAX];
    int e0 = op->Bp[i], ne = op->Bp[i + 1] - e0;
    for (int e = 0; e < ne && e < 2 * CM__GMAX; e++)
      val[e] = cm__B_val(op, sk, e0 + e);
    for (int p = 0; p < k; p++) {
      const double *xp = x + (size_t)p * ld_in;
      double s = 0;
      for (int e = 0; e < ne; e++)
        s += (e < 2 * CM__GMAX ? val[e] : cm__B_val(op, sk, e0 + e)) *
             xp[op->Bj[e0 + e] - c0];
      y[(size_t)p * ld_out + (size_t)(i - a)] = s;
    }
  }
}

/* Columns [a, b) of B^T V, or of |B|^T V (absv) for one column (V NULL:
 * all ones), V's first row r0, k columns as above: every row in the span
 * of the columns' groups, in ascending order (a group's entries' order),
 * adds its entries in [a, b). */
static void cm__csr_cols64(const cm_operator_t *op, int a, int b, int r0,
                           const double *v, size_t ld_in, int absv, double *out,
                           size_t ld_out, int k) {
  int rlo = INT_MAX, rhi = -1;
  for (int p = 0; p < k; p++)
    for (int j = a; j < b; j++)
      out[(size_t)p * ld_out + (size_t)(j - a)] = 0;
  for (int g = cm__group_of(op, a); g < op->ng && op->g0[g] < b; g++)
    if (op->Gp[g] < op->Gp[g + 1]) {
      int lo = op->Gj[op->Gp[g]], hi = op->Gj[op->Gp[g + 1] - 1];
      rlo = lo < rlo ? lo : rlo, rhi = hi > rhi ? hi : rhi;
    }
  for (int r = rlo; r <= rhi; r++) {
    double sk = cm__B_scale(op, r);
    for (int e = op->Bp[r]; e < op->Bp[r + 1]; e++) {
      int j = op->Bj[e];
      if (j < a || j >= b)
        continue;
      double x = cm__B_val(op, sk, e);
      x = absv ? fabs(x) : x;
      for (int p = 0; p < k; p++)
        out[(size_t)p * ld_out + (size_t)(j - a)] +=
            x * (v ? v[(size_t)p * ld_in + (size_t)(r - r0)] : 1.0);
    }
  }
}

/* The len rows (trans: columns) of B X (B^T X, or |B|^T X with absv) from
 * the first row r0 and column c0, from B's CSR: one span of them a thread,
 * all k columns at once (cm__csr_rows64, cm__csr_cols64). */
static void cm__csr_spans(const cm_operator_t *op, int trans, int absv, int r0,
                          int c0, int len, const double *in, size_t ld_in,
                          double *out, size_t ld_out, int k) {
  int T = len > CM__PAR_MIN ? op->threads : 1;
#pragma omp parallel for schedule(static) num_threads(T)
  for (int t = 0; t < T; t++) {
    int i0 = (int)((long)len * t / T), i1 = (int)((long)len * (t + 1) / T);
    if (trans)
      cm__csr_cols64(op, c0 + i0, c0 + i1, r0, in, ld_in, absv, out + i0,
                     ld_out, k);
    else
      cm__csr_rows64(op, r0 + i0, r0 + i1, c0, in, ld_in, out + i0, ld_out, k);
  }
}

/* cm__op_rows on the double values, or (f32) on their float copies */
static inline __attribute__((always_inline)) int
cm__op_rows_as(const cm_operator_t *op, int f32, int comp, int trans,
               const double *in, int i0, int i1, double *out) {
  if (!op->block || (f32 && !op->Sx32))
    return -1;
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  int a = (trans ? c0 : r0) + i0, b = (trans ? c0 : r0) + i1;
  if (!f32 && !cm__op_sx(op)) {
    if (trans)
      cm__csr_cols64(op, a, b, r0, in, 0, 0, out, 0, 1);
    else
      cm__csr_rows64(op, a, b, c0, in, 0, out, 0, 1);
    return 0;
  }
#define CM__ROWS(G)                                                            \
  (trans ? (f32 ? cm__group_rows32(op, op->Gx32, G, a, b, r0, in, out)         \
                : cm__group_rows(op, op->Gx, G, a, b, r0, in, out))            \
         : (f32 ? cm__slot_rows32(op, op->Sx32, G, a, b, c0, in, out)          \
                : cm__slot_rows(op, op->Sx, G, a, b, c0, in, out)))
/* B^T's groups of 3 and 6 by the vector kernels (CM__GROUPV) */
#define CM__ROWS_V(G)                                                          \
  (!trans ? CM__ROWS(G)                                                        \
   : f32                                                                       \
       ? cm__group##G##_rows32(op->Gp, op->Gj, op->Gx32, op->g0,               \
                               cm__group_of(op, a), op->ng, a, b, r0, in, out) \
       : cm__group##G##_rows(op->Gp, op->Gj, op->Gx, op->g0,                   \
                             cm__group_of(op, a), op->ng, a, b, r0, in, out))
  switch (op->guni) {
  case 2:
    CM__ROWS(2);
    break;
  case 3:
    CM__ROWS_V(3);
    break;
  case 6:
    CM__ROWS_V(6);
    break;
  default:
    CM__ROWS(0);
    break;
  }
#undef CM__ROWS
#undef CM__ROWS_V
  return 0;
}

int cm__op_rows(const cm_operator_t *op, int comp, int trans, const double *in,
                int i0, int i1, double *out) {
  return cm__op_rows_as(op, 0, comp, trans, in, i0, i1, out);
}

int cm__op_rows32(const cm_operator_t *op, int comp, int trans,
                  const double *in, int i0, int i1, double *out) {
  return cm__op_rows_as(op, 1, comp, trans, in, i0, i1, out);
}

int cm__op_make_f64(cm_operator_t *op) {
  if (!op->block)
    return CM_USAGE;
  if (cm__op_sx(op))
    return CM_OK;
  pthread_mutex_lock(&op->f32_lock);
  if (!op->Sx) {
    size_t ns = (size_t)op->Sp[op->nr] * (size_t)op->gmax;
    size_t ne = (size_t)op->Gp[op->ng] * (size_t)op->gmax;
    double *sx = cm__ws_malloc(NULL, ns + 1, sizeof(double));
    size_t pad = (size_t)op->gmax; /* one entry: the groups' vector
                                       kernels read past the last */
    double *gx = sx ? cm__ws_malloc(NULL, ne + pad, sizeof(double)) : NULL;
    if (gx) {
      cm__fill_slots(op, sx, NULL);
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (op->ng > CM__PAR_MIN)
      for (int b = 0; b < op->ng; b++)
        for (int e = op->Gp[b]; e < op->Gp[b + 1]; e++)
          cm__entry_fill(op, b, (size_t)e, gx + (size_t)e * op->gmax);
      memset(gx + ne, 0, sizeof(double) * pad);
      op->Gx = gx; /* before Sx: a reader that sees Sx reads Gx */
      __atomic_store_n(&op->Sx, sx, __ATOMIC_RELEASE);
    } else {
      cm__ws_free(sx);
    }
  }
  int st = op->Sx ? CM_OK : CM_NOMEM;
  pthread_mutex_unlock(&op->f32_lock);
  return st;
}

int cm__op_make_f32(cm_context_t *ctx, cm_operator_t *op) {
  if (!op->block)
    return CM_USAGE;
  pthread_mutex_lock(&op->f32_lock);
  size_t ns = (size_t)op->Sp[op->nr] * (size_t)op->gmax;
  size_t ne = (size_t)op->Gp[op->ng] * (size_t)op->gmax;
  if (!op->Sx32 && !op->f32_refused) {
    /* no value cm__f32_unsafe; B^T's values are the same ones */
    int out = 0;
    float *sx = cm__ws_malloc(ctx, ns + 1, sizeof(float));
    size_t pad = (size_t)op->gmax; /* as in cm__op_make_f64 */
    float *gx = sx ? cm__ws_malloc(ctx, ne + pad, sizeof(float)) : NULL;
    if (sx && gx) { /* converted and checked in one pass */
#pragma omp parallel for schedule(static) num_threads(op->threads)             \
    reduction(|                                                                \
              : out)
      for (size_t i = 0; i < ns; i++) {
        double v = op->Sx[i];
        out |= cm__f32_unsafe(v);
        sx[i] = (float)v;
      }
    }
    if (out || !sx || !gx) {
      cm__ws_free(sx), cm__ws_free(gx);
      op->f32_refused = 1; /* out of range, or of memory: the double path */
    } else {
#pragma omp parallel for schedule(static) num_threads(op->threads)
      for (size_t i = 0; i < ne; i++)
        gx[i] = (float)op->Gx[i];
      memset(gx + ne, 0, sizeof(float) * pad);
      op->Gx32 = gx, op->Sx32 = sx; /* Sx32 last: what the check reads */
    }
  }
  int st = op->Sx32 ? CM_OK : CM_LIMIT;
  pthread_mutex_unlock(&op->f32_lock);
  return st;
}

void cm__op_apply_cols(cm_operator_t *op, int comp, int trans, const double *in,
                       size_t ld_in, double *out, size_t ld_out, int k) {
  if (!op->block) {
    for (int p = 0; p < k; p++)
      (trans ? cm__op_BT : cm__op_B)(op, comp, in + (size_t)p * ld_in,
                                     out + (size_t)p * ld_out);
    return;
  }
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  int len = trans ? n : m;
  if (!cm__op_sx(op)) { /* from the CSR: a span per thread, all k at once */
    cm__csr_spans(op, trans, 0, r0, c0, len, in, ld_in, out, ld_out, k);
    return;
  }
  int nch = (len + CM__ROW_CHUNK - 1) / CM__ROW_CHUNK;
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (len > CM__PAR_MIN)
  for (int c = 0; c < nch; c++) {
    int i0 = c * CM__ROW_CHUNK;
    int i1 = i0 + CM__ROW_CHUNK < len ? i0 + CM__ROW_CHUNK : len;
    for (int p = 0; p < k; p++) /* the chunk of B stays in cache */
      cm__op_rows(op, comp, trans, in + (size_t)p * ld_in, i0, i1,
                  out + (size_t)p * ld_out + i0);
  }
}

void cm__op_B(cm_operator_t *op, int comp, const double *x, double *y) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  if (op->block) {
    cm__op_apply_cols(op, comp, 0, x, 0, y, 0, 1); /* y = B x */
    return;
  }
  /* y = K^1/2 J P^T L^-T x, component by component */
  const cm_system_t *s = op->sys;
  int lo, hi;
  cm__comp_range(op, comp, &lo, &hi);
  for (int c = lo; c < hi; c++) {
    int cr = s->comp_row[c], cc0 = s->comp_col[c];
    int cm = s->comp_row[c + 1] - cr, cn = s->comp_col[c + 1] - cc0;
    double *t = op->gtmp + cc0, *yc = y + (cr - r0); /* c's own scratch */
    memcpy(t, x + (cc0 - c0), sizeof(double) * (size_t)cn);
    cm__solve(op, c, CHOLMOD_Lt, t);
    cm__solve(op, c, CHOLMOD_Pt, t);
    cm__csr_rows(s->Jp, s->Jj, s->Jx, cr, cr + cm, cc0, t, yc);
    for (int r = 0; r < cm; r++)
      yc[r] *= op->sqrtk[cr + r];
  }
  (void)m, (void)n;
}

void cm__op_BT(cm_operator_t *op, int comp, const double *y, double *x) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  if (op->block) {
    cm__op_apply_cols(op, comp, 1, y, 0, x, 0, 1); /* x = B^T y */
    return;
  }
  /* x = L^-1 P J^T K^1/2 y, component by component */
  const cm_system_t *s = op->sys;
  int lo, hi;
  cm__comp_range(op, comp, &lo, &hi);
  memset(x, 0, sizeof(double) * (size_t)n);
  for (int c = lo; c < hi; c++) {
    int cr = s->comp_row[c], cc0 = s->comp_col[c];
    int cm = s->comp_row[c + 1] - cr;
    double *xc = x + (cc0 - c0);
    const double *yc = y + (cr - r0);
    for (int r = 0; r < cm; r++) {
      double v = op->sqrtk[cr + r] * yc[r];
      for (int q = s->Jp[cr + r]; q < s->Jp[cr + r + 1]; q++)
        xc[s->Jj[q] - cc0] += s->Jx[q] * v;
    }
    cm__solve(op, c, CHOLMOD_P, xc);
    cm__solve(op, c, CHOLMOD_L, xc);
  }
  (void)m;
}

int cm__op_dof_shape(cm_operator_t *op, int comp, const double *z,
                     double *phi) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  cm__op_BT(op, comp, z, phi); /* L^-1 P J^T K^1/2 z */
  (void)r0, (void)m;
  if (!op->block) { /* then P^T L^-T */
    cm__solve(op, comp, CHOLMOD_Lt, phi);
    cm__solve(op, comp, CHOLMOD_Pt, phi);
    return CM_OK;
  }
  if (op->ldiag) { /* diagonal M: L = diag(ldiag) */
    for (int j = 0; j < n; j++)
      phi[j] /= op->ldiag[c0 + j];
    return CM_OK;
  }
  /* blocks: L^-T on the whole vector (the factor is of all of M; L is
   * block-diagonal, so the component's part stays its own) */
  double *w = calloc((size_t)op->ncol + 1, sizeof(double));
  if (!w)
    return CM_NOMEM;
  memcpy(w + c0, phi, sizeof(double) * (size_t)n);
  cholmod_dense X;
  memset(&X, 0, sizeof X);
  X.nrow = X.nzmax = X.d = (size_t)op->ncol;
  X.ncol = 1;
  X.x = w;
  X.xtype = CHOLMOD_REAL, X.dtype = CHOLMOD_DOUBLE;
  int st = CM_OK;
  for (int pass = 0; pass < 2 && !st; pass++) {
    if (!cholmod_solve2(pass ? CHOLMOD_Pt : CHOLMOD_Lt, op->L, &X, NULL, &op->Y,
                        NULL, &op->Yw, &op->Ew, &op->cc))
      st = CM_NOMEM;
    else
      memcpy(w, op->Y->x, sizeof(double) * (size_t)op->ncol);
  }
  if (!st)
    memcpy(phi, w + c0, sizeof(double) * (size_t)n);
  free(w);
  return st;
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
  if (op->block) { /* from the slots (their padding zeros are zeros) */
    const double *sx = cm__op_sx(op);
    double buf[CM__GMAX];
    for (int i = 0; i < m; i++)
      for (int q = op->Sp[r0 + i], e = op->Bp[r0 + i]; q < op->Sp[r0 + i + 1];
           q++) {
        unsigned u = op->Sc[q];
        const double *a = cm__slot64(op, sx, r0 + i, (size_t)q, &e, buf);
        for (int t = 0; t <= (int)(u & 7); t++)
          Bd[(size_t)((int)(u >> 3) + t - c0) * (size_t)m + (size_t)i] = a[t];
      }
    return CM_OK;
  }
  const cm_system_t *s = op->sys;
  int lo, hi;
  cm__comp_range(op, comp, &lo, &hi);
  double *e = calloc((size_t)n + 1, sizeof(double));
  double *col = malloc(sizeof(double) * ((size_t)m + 1));
  if (!e || !col) {
    free(e), free(col);
    return CM_NOMEM;
  }
  for (int c = lo; c < hi; c++) { /* B is block-diagonal by component */
    int cr = s->comp_row[c], cc0 = s->comp_col[c];
    int cm = s->comp_row[c + 1] - cr, cn = s->comp_col[c + 1] - cc0;
    for (int j = 0; j < cn; j++) { /* column j of B_c = B_c e_j */
      e[j] = 1;
      cm__op_B(op, c, e, col);
      e[j] = 0;
      double *out = Bd + (size_t)(cc0 - c0 + j) * (size_t)m + (size_t)(cr - r0);
      memcpy(out, col, sizeof(double) * (size_t)cm);
    }
  }
  free(e), free(col);
  return CM_OK;
}

/* w = |B_c|^T v over the component's n columns from c0 (v over its rows
 * from r0; v NULL: all ones), by groups. */
static void cm__abs_BT(const cm_operator_t *op, int r0, int c0, int n,
                       const double *v, double *w) {
  int b0 = cm__group_of(op, c0), b1 = cm__group_of(op, c0 + n);
  if (!cm__op_sx(op)) { /* from the CSR: a column span per thread */
    cm__csr_spans(op, 1, 1, r0, c0, n, v, 0, w, 0, 1);
    return;
  }
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (n > CM__PAR_MIN)
  for (int b = b0; b < b1; b++) {
    double s[CM__GMAX] = {0};
    int g = op->g0[b + 1] - op->g0[b];
    for (int e = op->Gp[b]; e < op->Gp[b + 1]; e++) {
      double ve = v ? v[op->Gj[e] - r0] : 1.0;
      for (int t = 0; t < g; t++)
        s[t] += fabs(op->Gx[(size_t)e * (size_t)op->gmax + (size_t)t]) * ve;
    }
    for (int t = 0; t < g; t++)
      w[op->g0[b] + t - c0] = s[t];
  }
}

int cm__op_abs_product(cm_context_t *ctx, cm_operator_t *op, int comp,
                       const double *v, double *out) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  if (!op->block)
    return CM__ERR(ctx, CM_USAGE, NULL,
                   "|B| |B|^T v needs the block path (explicit B)");
  double *w = cm__malloc(ctx, (size_t)n + 1, sizeof(double));
  if (!w)
    return CM_NOMEM;
  cm__abs_BT(op, r0, c0, n, v, w);
  const double *sx = cm__op_sx(op);
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (m > CM__PAR_MIN)
  for (int i = 0; i < m; i++) { /* out = |B| w, by slots */
    double g = 0, buf[CM__GMAX];
    for (int q = op->Sp[r0 + i], e = op->Bp[r0 + i]; q < op->Sp[r0 + i + 1];
         q++) {
      unsigned u = op->Sc[q];
      const double *a = cm__slot64(op, sx, r0 + i, (size_t)q, &e, buf);
      const double *wq = w + ((int)(u >> 3) - c0);
      for (int t = 0; t <= (int)(u & 7); t++)
        g += fabs(a[t]) * wq[t];
    }
    out[i] = g;
  }
  free(w);
  return CM_OK;
}

/* Largest nc x n of a general M's B formed densely for its bounds (320 MB). */
#define CM__DENSE_BOUNDS 4e7
/* Right-hand sides per blocked solve for diag(S) of a general M. */
#define CM__DIAG_BLOCK 32
/* Above this nc x n, diag(S) of a general M is not solved for (the blocked
 * solves cost O(nc n): 17 s of CPU at 40000 x 40000) but bounded from
 * below by Cauchy-Schwarz: S_rr >= k_r |j_r|^4 / (j_r^T M j_r). */
#define CM__DIAG_EXACT 4e8

/* M_ab from the lower CSC (sorted rows) of the system; 0 when absent. */
static double cm__M_entry(const cm_system_t *s, int a, int b) {
  int j = a < b ? a : b, i = a < b ? b : a;
  int lo = s->Mp[j], hi = s->Mp[j + 1];
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (s->Mi[mid] < i)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->Mp[j + 1] && s->Mi[lo] == i ? s->Mx[lo] : 0.0;
}

/* diag[r] = k_r |j_r|^4 / (j_r^T M j_r) <= S_rr (Cauchy-Schwarz in the M
 * inner product: (j^T j)^2 <= (j^T M^-1 j)(j^T M j); equality for a
 * diagonal M with equal entries on the row). */
static void cm__diag_lower(const cm_operator_t *op, int r0, int m,
                           double *diag) {
  const cm_system_t *s = op->sys;
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (m > CM__PAR_MIN)
  for (int r = r0; r < r0 + m; r++) {
    double jj = 0, jmj = 0;
    for (int p = s->Jp[r]; p < s->Jp[r + 1]; p++) {
      jj += s->Jx[p] * s->Jx[p];
      for (int q = s->Jp[r]; q < s->Jp[r + 1]; q++)
        jmj += s->Jx[p] * s->Jx[q] * cm__M_entry(s, s->Jj[p], s->Jj[q]);
    }
    diag[r - r0] = jmj > 0 ? s->k[r] * jj * jj / jmj : 0;
  }
}

/* x <- C^-1 x (trans 0) or C^-T x (trans 1) for the comparison matrix C of
 * the lower CSC L (|l_jj| on the diagonal, -|l_ij| off it). For x >= 0 the
 * result is >= |L^-1| x (resp. |L^-T| x) entrywise, since |L^-1| <= C^-1
 * for a triangular L (Higham, Accuracy and Stability, 8.2); no sum
 * cancels. */
static void cm__comparison_solve(const cholmod_sparse *L, int trans,
                                 double *x) {
  const int *Lp = L->p, *Li = L->i;
  const double *Lx = L->x;
  int n = (int)L->ncol;
  if (!trans) {
    for (int j = 0; j < n; j++) { /* forward: column j, diagonal first */
      double d = 0;
      for (int q = Lp[j]; q < Lp[j + 1]; q++)
        if (Li[q] == j)
          d = fabs(Lx[q]);
      x[j] /= d;
      for (int q = Lp[j]; q < Lp[j + 1]; q++)
        if (Li[q] > j)
          x[Li[q]] += fabs(Lx[q]) * x[j];
    }
    return;
  }
  for (int j = n - 1; j >= 0; j--) { /* backward: row j of L^T is column j */
    double d = 0, s = x[j];
    for (int q = Lp[j]; q < Lp[j + 1]; q++)
      if (Li[q] == j)
        d = fabs(Lx[q]);
      else if (Li[q] > j)
        s += fabs(Lx[q]) * x[Li[q]];
    x[j] = s / d;
  }
}

/* Bounds of a general M too large for a dense B (P M P^T = L L^T).
 * Per-contact: S_rr = k_r |L^-1 P j_r|^2 exactly, by solves on blocks of
 * CM__DIAG_BLOCK rows, up to CM__DIAG_EXACT; past it the lower bound of
 * cm__diag_lower. Upper: |B| = |K^1/2 J P^T L^-T| <= K^1/2 |J| P^T C^-T
 * entrywise (C the comparison matrix of L), so the Gershgorin sums of
 * |B| |B|^T are at most g = K^1/2 |J| P^T C^-T C^-1 P |J^T| K^1/2 1: two
 * triangular solves. g >= (|B| |B|^T 1) keeps lambda_max(S) <= max g. */
static int cm__general_bounds(cm_context_t *ctx, cm_operator_t *op, int comp,
                              double *diag, double *gersh) {
  const cm_system_t *s = op->sys;
  cholmod_common *cc = &op->cc;
  int R0, m, C0, n;
  cm__op_comp(op, comp, &R0, &m, &C0, &n);
  cholmod_factor *Lf = op->Lc[comp];
  const int *perm = Lf->Perm; /* row i of P M_c P^T is row perm[i] of M_c */
  /* the component's rows of J (Jp[r], r local), columns Jj[q] - C0 */
  const int *Jp = s->Jp + R0, *Jj = s->Jj;
  const double *Jx = s->Jx, *kk = s->k + R0;
  /* ---- allocate ---- */
  cholmod_factor *F = cholmod_copy_factor(Lf, cc);
  cholmod_sparse *Ls = F ? cholmod_factor_to_sparse(F, cc) : NULL;
  cholmod_dense *X = cholmod_zeros((size_t)n, CM__DIAG_BLOCK, CHOLMOD_REAL, cc);
  cholmod_dense *Y = NULL, *Z = NULL;
  double *t = cm__calloc(ctx, (size_t)n + 1, sizeof(double));
  double *u = cm__malloc(ctx, (size_t)n + 1, sizeof(double));
  int st = Ls && X && t && u ? CM_OK : CM_NOMEM;
  /* ---- compute: the upper bound ---- */
  if (!st) {
    for (int r = 0; r < m; r++) { /* u = |J|^T k^1/2 */
      double sk = sqrt(kk[r]);
      for (int q = Jp[r]; q < Jp[r + 1]; q++)
        t[Jj[q] - C0] += fabs(Jx[q]) * sk;
    }
    for (int i = 0; i < n; i++) /* P */
      u[i] = t[perm ? perm[i] : i];
    cm__comparison_solve(Ls, 0, u); /* >= |B|^T 1 */
    cm__comparison_solve(Ls, 1, u);
    for (int i = 0; i < n; i++) /* P^T */
      t[perm ? perm[i] : i] = u[i];
    for (int r = 0; r < m; r++) { /* g = K^1/2 |J| t */
      double g = 0;
      for (int q = Jp[r]; q < Jp[r + 1]; q++)
        g += fabs(Jx[q]) * t[Jj[q] - C0];
      gersh[r] = sqrt(kk[r]) * g;
    }
  }
  /* ---- compute: diag(S), CM__DIAG_BLOCK rows at a time ---- */
  int exact = (double)m * (double)n <= CM__DIAG_EXACT;
  if (!st && !exact)
    cm__diag_lower(op, R0, m, diag);
  for (int r0 = 0; !st && exact && r0 < m; r0 += CM__DIAG_BLOCK) {
    int nb = m - r0 < CM__DIAG_BLOCK ? m - r0 : CM__DIAG_BLOCK;
    double *x = X->x;
    memset(x, 0, sizeof(double) * (size_t)n * CM__DIAG_BLOCK);
    for (int b = 0; b < nb; b++) /* column b = j_{r0+b}^T */
      for (int q = Jp[r0 + b]; q < Jp[r0 + b + 1]; q++)
        x[(size_t)b * (size_t)n + (size_t)(Jj[q] - C0)] = Jx[q];
    cholmod_free_dense(&Y, cc);
    cholmod_free_dense(&Z, cc);
    Y = cholmod_solve(CHOLMOD_P, Lf, X, cc);
    Z = Y ? cholmod_solve(CHOLMOD_L, Lf, Y, cc) : NULL;
    if (!Z) {
      st = CM_NOMEM;
      break;
    }
    const double *z = Z->x;
    for (int b = 0; b < nb; b++) {
      double d = 0;
      for (int i = 0; i < n; i++) {
        double v = z[(size_t)b * (size_t)n + (size_t)i];
        d += v * v;
      }
      diag[r0 + b] = kk[r0 + b] * d;
    }
  }
  /* ---- return ---- */
  cholmod_free_sparse(&Ls, cc);
  cholmod_free_factor(&F, cc);
  cholmod_free_dense(&X, cc);
  cholmod_free_dense(&Y, cc);
  cholmod_free_dense(&Z, cc);
  free(t), free(u);
  return st ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for the bounds")
            : CM_OK;
}

static int cm__general_row_bounds(cm_context_t *ctx, cm_operator_t *op,
                                  int comp, double *diag, double *gersh);

/* cm__op_row_bounds on the block path, rows [r0, r0 + m) and their
 * columns [c0, c0 + n) */
static int cm__block_row_bounds(cm_context_t *ctx, const cm_operator_t *op,
                                int r0, int m, int c0, int n, double *diag,
                                double *gersh) {
  double *w = cm__malloc(ctx, (size_t)n + 1, sizeof(double));
  if (!w)
    return CM_NOMEM;
  cm__abs_BT(op, r0, c0, n, NULL, w); /* w = |B|^T 1 */
  const double *sx = cm__op_sx(op);
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (m > CM__PAR_MIN)
  for (int i = 0; i < m; i++) { /* g = |B| w, d = |B_i|^2, by slots: */
    double g = 0, d = 0;        /* the CSR sums with zero terms between */
    if (!sx) {                  /* or the CSR's own (the same bits) */
      double sk = cm__B_scale(op, r0 + i);
      for (int e = op->Bp[r0 + i]; e < op->Bp[r0 + i + 1]; e++) {
        double a = cm__B_val(op, sk, e);
        g += fabs(a) * w[op->Bj[e] - c0];
        d += a * a;
      }
      gersh[i] = g, diag[i] = d;
      continue;
    }
    for (int q = op->Sp[r0 + i]; q < op->Sp[r0 + i + 1]; q++) {
      unsigned u = op->Sc[q];
      const double *a = sx + (size_t)q * (size_t)op->gmax;
      const double *wq = w + ((int)(u >> 3) - c0);
      for (int t = 0; t <= (int)(u & 7); t++) {
        g += fabs(a[t]) * wq[t];
        d += a[t] * a[t];
      }
    }
    gersh[i] = g;
    diag[i] = d;
  }
  free(w);
  return CM_OK;
}

/* Every row's bounds into op->rb_d and op->rb_g, once (rb_lock held);
 * left NULL without memory. */
static void cm__rb_keep(cm_operator_t *op) {
  if (op->rb_d)
    return;
  double *d = cm__ws_malloc(NULL, (size_t)op->nr + 1, sizeof(double));
  double *g =
      d ? cm__ws_malloc(NULL, (size_t)op->nr + 1, sizeof(double)) : NULL;
  if (g && !cm__block_row_bounds(NULL, op, 0, op->nr, 0, op->ncol, d, g))
    op->rb_d = d, op->rb_g = g;
  else
    cm__ws_free(d), cm__ws_free(g);
}

int cm__op_row_bounds_view(cm_operator_t *op, int comp, const double **diag,
                           const double **gersh) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  *diag = *gersh = NULL;
  if (!op->block)
    return CM_USAGE;
  pthread_mutex_lock(&op->rb_lock);
  cm__rb_keep(op);
  if (op->rb_d)
    *diag = op->rb_d + r0, *gersh = op->rb_g + r0;
  pthread_mutex_unlock(&op->rb_lock);
  (void)m, (void)c0, (void)n;
  return *diag ? CM_OK : CM_NOMEM;
}

int cm__op_row_bounds(cm_context_t *ctx, cm_operator_t *op, int comp,
                      double *diag, double *gersh) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  if (op->block) {
    /* every row's once, kept: the analysis's bounds and each component's
     * scale read the same sums (a pass over B each, 10 ms at 1e6). A
     * component's rows are the same sums as the whole's (B is block
     * diagonal by component): the same bits either way. */
    const double *d, *g;
    if (cm__op_row_bounds_view(op, comp, &d, &g)) /* no memory to keep */
      return cm__block_row_bounds(ctx, op, r0, m, c0, n, diag, gersh);
    memcpy(diag, d, sizeof(double) * (size_t)m);
    memcpy(gersh, g, sizeof(double) * (size_t)m);
    return CM_OK;
  }
  /* general M, component by component (B is block-diagonal by
   * component) */
  int lo, hi;
  cm__comp_range(op, comp, &lo, &hi);
  for (int c = lo; c < hi; c++) {
    int cr = op->sys->comp_row[c] - r0;
    int st = cm__general_row_bounds(ctx, op, c, diag + cr, gersh + cr);
    if (st)
      return st;
  }
  (void)c0;
  return CM_OK;
}

/* cm__op_row_bounds of one component of a general M: dense B (n solves),
 * then the same sums, while B fits in CM__DENSE_BOUNDS doubles; past that,
 * solves with the factor and with its comparison matrix
 * (cm__general_bounds) */
static int cm__general_row_bounds(cm_context_t *ctx, cm_operator_t *op,
                                  int comp, double *diag, double *gersh) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  if ((double)m * (double)n > CM__DENSE_BOUNDS)
    return cm__general_bounds(ctx, op, comp, diag, gersh);
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
                    const double **Bx) {
  if (!op || !op->block)
    return CM_USAGE;
  if (!op->Bx && op->B_shares_J) { /* diagonal M: formed on first request */
    cm_operator_t *mop = (cm_operator_t *)op; /* owned, lazily filled */
    pthread_mutex_lock(&mop->bx_lock);
    if (!mop->Bx) {
      const cm_system_t *s = op->sys;
      size_t nnz = (size_t)s->Jp[op->nr];
      double *x = cm__ws_malloc(NULL, nnz + 1, sizeof(double));
      if (x) { /* from J and the operator's own L^-1 (cm__B_val) */
#pragma omp parallel for schedule(static)                                      \
    num_threads(op->threads) if (op->nr > CM__PAR_MIN)
        for (int r = 0; r < op->nr; r++) {
          double sk = cm__B_scale(op, r);
          for (int q = s->Jp[r]; q < s->Jp[r + 1]; q++)
            x[q] = cm__B_val(op, sk, q);
        }
        mop->Bx = x;
      }
    }
    pthread_mutex_unlock(&mop->bx_lock);
    if (!op->Bx)
      return CM_NOMEM;
  }
  *Bp = op->Bp, *Bj = op->Bj, *Bx = op->Bx;
  return CM_OK;
}

int cm__op_groups(const cm_operator_t *op, int *ng, const int **g0) {
  if (!op->block || !op->g0)
    return -1;
  *ng = op->ng, *g0 = op->g0;
  return 0;
}

int cm__op_sum_terms(const cm_operator_t *op, int comp) {
  if (!op->block)
    return -1;
  int r0, m, c0, n, row = 0, col = 0;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  for (int r = r0; r < r0 + m; r++)
    row = op->Sp[r + 1] - op->Sp[r] > row ? op->Sp[r + 1] - op->Sp[r] : row;
  for (int b = cm__group_of(op, c0); b < op->ng && op->g0[b] < c0 + n; b++)
    col = op->Gp[b + 1] - op->Gp[b] > col ? op->Gp[b + 1] - op->Gp[b] : col;
  return row * op->gmax + col;
}

long cm__op_comp_nnz(const cm_operator_t *op, int comp) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  const int *p = op->block ? op->Bp : op->sys->Jp;
  return p ? (long)p[r0 + m] - p[r0] : 0;
}

double cm__op_matvec_bytes_as(const cm_operator_t *op, int f32) {
  double nr = op->nr, n = op->ncol, vec = 8.0 * (2.0 * nr + 2.0 * n);
  if (!op->block)
    return vec;
  double ns = (double)op->Sp[op->nr], ne = (double)op->Gp[op->ng];
  double val = (f32 ? 4.0 : 8.0) * op->gmax; /* a slot's or entry's values */
  return 4.0 * (nr + 1) + ns * (4.0 + val) + 4.0 * (op->ng + 1) +
         ne * (4.0 + val) + 4.0 * (op->ng + 1) + vec;
}

double cm__op_matvec_bytes(const cm_operator_t *op) {
  return cm__op_matvec_bytes_as(op, 0);
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
