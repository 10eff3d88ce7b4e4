/* mtx_write.c: writes an assembled system as Matrix Market files (M, J, k,
 * and optionally B = K^1/2 J L^-T and S = B B^T) with the row and column
 * maps and a manifest, all numbers in %.17g, for scipy / MATLAB / Julia
 * comparisons and for `cmodes analyze --matrices`. Not for reading
 * (mtx.c). */
#include "internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cholmod.h"

/* dir/name, malloc'd. */
static char *cm__join(const char *dir, const char *name) {
  size_t dl = strlen(dir);
  char *p = malloc(dl + strlen(name) + 2);
  if (p)
    sprintf(p, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", name);
  return p;
}

typedef struct {
  cm_context_t *ctx;
  const char *dir;
  char *path; /* the file being written */
  FILE *f;
} cm__out_t;

static int cm__open(cm__out_t *o, const char *name) {
  free(o->path);
  o->path = cm__join(o->dir, name);
  if (!o->path)
    return CM__ERR(o->ctx, CM_NOMEM, NULL, "out of memory");
  o->f = fopen(o->path, "w");
  if (!o->f)
    return CM__ERR(o->ctx, CM_IO, o->path, "%s: cannot write: %s", o->path,
                   strerror(errno));
  return CM_OK;
}

static int cm__close(cm__out_t *o) {
  int bad = ferror(o->f);
  bad |= fclose(o->f) != 0;
  o->f = NULL;
  if (bad)
    return CM__ERR(o->ctx, CM_IO, o->path, "%s: write error (disk full?)",
                   o->path);
  return CM_OK;
}

/* A CSC (or CSR read as CSC of the transpose) matrix as coordinate entries;
 * transpose swaps the row and column written. */
static void cm__put_coord(FILE *f, int nouter, const int *p, const int *idx,
                          const double *x, int transpose) {
  for (int j = 0; j < nouter; j++)
    for (int q = p[j]; q < p[j + 1]; q++)
      if (transpose)
        fprintf(f, "%d %d %.17g\n", j + 1, idx[q] + 1, x[q]);
      else
        fprintf(f, "%d %d %.17g\n", idx[q] + 1, j + 1, x[q]);
}

static int cm__write_M(cm__out_t *o, const cm_system_t *s) {
  int st = cm__open(o, "M.mtx");
  if (st)
    return st;
  fprintf(o->f,
          "%%%%MatrixMarket matrix coordinate real symmetric\n"
          "%% cmodes: mass matrix M (lower triangle), %d x %d; column j is "
          "the dof in line j of cols.txt\n%d %d %d\n",
          s->n, s->n, s->n, s->n, s->Mp[s->n]);
  cm__put_coord(o->f, s->n, s->Mp, s->Mi, s->Mx, 0);
  return cm__close(o);
}

static int cm__write_J(cm__out_t *o, const cm_system_t *s) {
  int st = cm__open(o, "J.mtx");
  if (st)
    return st;
  fprintf(o->f,
          "%%%%MatrixMarket matrix coordinate real general\n"
          "%% cmodes: contact Jacobian J, %d x %d, gaps xi = J q; row i is "
          "the contact in line i of rows.txt\n%d %d %d\n",
          s->nc, s->n, s->nc, s->n, s->Jp[s->nc]);
  cm__put_coord(o->f, s->nc, s->Jp, s->Jj, s->Jx, 1);
  return cm__close(o);
}

static int cm__write_k(cm__out_t *o, const cm_system_t *s) {
  int st = cm__open(o, "k.mtx");
  if (st)
    return st;
  fprintf(o->f,
          "%%%%MatrixMarket matrix array real general\n"
          "%% cmodes: penalty stiffness k of each row of J, N/m\n%d 1\n",
          s->nc);
  for (int r = 0; r < s->nc; r++)
    fprintf(o->f, "%.17g\n", s->k[r]);
  return cm__close(o);
}

/* rows.txt and cols.txt: where each row and column comes from. */
static int cm__write_maps(cm__out_t *o, const cm_system_t *s) {
  int st = cm__open(o, "rows.txt");
  if (st)
    return st;
  fprintf(o->f, "# row contact component a b\n"
                "# (0-based: J row, scene contact index, component, bodies "
                "a and b; -1 = the world)\n");
  for (int c = 0; c < s->ncomp; c++)
    for (int r = s->comp_row[c]; r < s->comp_row[c + 1]; r++)
      fprintf(o->f, "%d %d %d %d %d\n", r, s->row_contact[r], c,
              s->row_a ? s->row_a[r] : -1, s->row_b ? s->row_b[r] : -1);
  if ((st = cm__close(o)))
    return st;
  if ((st = cm__open(o, "cols.txt")))
    return st;
  fprintf(o->f, "# col body dof component\n"
                "# (0-based: J and M column, scene body index, its dof: 2D "
                "0..2 = x y theta, 3D 0..5 = x y z rx ry rz; -1 = none)\n");
  for (int c = 0; c < s->ncomp; c++)
    for (int j = s->comp_col[c]; j < s->comp_col[c + 1]; j++)
      fprintf(o->f, "%d %d %d %d\n", j, s->col_body ? s->col_body[j] : -1,
              s->col_dof ? s->col_dof[j] : j, c);
  return cm__close(o);
}

/* A cholmod_sparse view of CSC arrays (not owned). */
static cholmod_sparse cm__view(int nrow, int ncol, const int *p,
                               const int *i, const double *x, int stype) {
  cholmod_sparse A;
  memset(&A, 0, sizeof A);
  A.nrow = (size_t)nrow;
  A.ncol = (size_t)ncol;
  A.nzmax = (size_t)(p[ncol] > 0 ? p[ncol] : 1);
  A.p = (void *)p;
  A.i = (void *)i;
  A.x = (void *)x;
  A.stype = stype;
  A.itype = CHOLMOD_INT;
  A.xtype = CHOLMOD_REAL;
  A.dtype = CHOLMOD_DOUBLE;
  A.sorted = 1;
  A.packed = 1;
  return A;
}

/* ---- B by blocks: M block diagonal up to a permutation ------------------- */

#define CM__BLOCK_MAX 64 /* larger coupled blocks use CHOLMOD solves */

static int cm__find(int *parent, int x) {
  while (parent[x] != x)
    x = parent[x] = parent[parent[x]];
  return x;
}

/* Blocks of M: the connected components of its graph. blk[j] is the block
 * of column j, pos[j] its position in the block, bstart/bcols list the
 * columns of each block ascending. Returns the largest block size, or < 0
 * when out of memory. */
static int cm__m_blocks(const cm_system_t *s, int *blk, int *pos,
                        int **bstart_out, int **bcols_out, int *nblk) {
  int n = s->n, big = 0;
  int *parent = malloc((size_t)n * sizeof *parent);
  int *bstart = calloc((size_t)n + 2, sizeof *bstart);
  int *bcols = malloc((size_t)n * sizeof *bcols);
  if (!parent || !bstart || !bcols) {
    free(parent), free(bstart), free(bcols);
    return -1;
  }
  for (int j = 0; j < n; j++)
    parent[j] = j;
  for (int j = 0; j < n; j++)
    for (int q = s->Mp[j]; q < s->Mp[j + 1]; q++) {
      int a = cm__find(parent, j), b = cm__find(parent, s->Mi[q]);
      if (a != b)
        parent[a > b ? a : b] = a < b ? a : b; /* root = smallest column */
    }
  int nb = 0;
  for (int j = 0; j < n; j++) /* roots in column order number the blocks */
    blk[j] = cm__find(parent, j) == j ? nb++ : -1;
  for (int j = 0; j < n; j++) {
    blk[j] = blk[cm__find(parent, j)];
    bstart[blk[j] + 1]++;
  }
  for (int b = 0; b < nb; b++) {
    big = bstart[b + 1] > big ? bstart[b + 1] : big;
    bstart[b + 1] += bstart[b];
  }
  memcpy(parent, bstart, (size_t)nb * sizeof *parent); /* fill pointers */
  for (int j = 0; j < n; j++) {
    pos[j] = parent[blk[j]] - bstart[blk[j]];
    bcols[parent[blk[j]]++] = j;
  }
  free(parent);
  *bstart_out = bstart;
  *bcols_out = bcols;
  *nblk = nb;
  return big;
}

/* Dense lower Cholesky of each block of M in place (column-major, size^2
 * per block at Lstart[b]); returns the first failing column or -1. */
static int cm__block_chol(const cm_system_t *s, int nb, const int *bstart,
                          const int *bcols, const int *blk, const int *pos,
                          double *L, const long *Lstart) {
  for (int j = 0; j < s->n; j++) /* scatter the lower triangle */
    for (int q = s->Mp[j]; q < s->Mp[j + 1]; q++) {
      int b = blk[j], m = bstart[b + 1] - bstart[b];
      int r = pos[s->Mi[q]], c = pos[j];
      if (r < c) { int t = r; r = c; c = t; }
      L[Lstart[b] + r + (long)c * m] = s->Mx[q];
    }
  for (int b = 0; b < nb; b++) {
    int m = bstart[b + 1] - bstart[b];
    double *A = L + Lstart[b];
    for (int c = 0; c < m; c++) { /* A = L L^T, column by column */
      double d = A[c + c * m];
      for (int k = 0; k < c; k++)
        d -= A[c + k * m] * A[c + k * m];
      if (!(d > 0))
        return bcols[bstart[b] + c];
      A[c + c * m] = d = sqrt(d);
      for (int r = c + 1; r < m; r++) {
        double v = A[r + c * m];
        for (int k = 0; k < c; k++)
          v -= A[r + k * m] * A[c + k * m];
        A[r + c * m] = v / d;
      }
    }
  }
  return -1;
}

/* Row r of B into (cols, vals) (NULL: count only): for each block the row
 * touches, y = L_b^-1 (k_r^1/2 J_r,b)^T, stored from its first nonzero. */
static int cm__B_row(const cm_system_t *s, int r, const int *blk,
                     const int *pos, const int *bstart, const int *bcols,
                     const double *L, const long *Lstart, double *work,
                     int *cols, double *vals) {
  int count = 0;
  double sk = sqrt(s->k[r]);
  for (int q = s->Jp[r]; q < s->Jp[r + 1]; q++) {
    int b = blk[s->Jj[q]], seen = 0;
    for (int p = s->Jp[r]; p < q; p++) /* block already done */
      seen |= blk[s->Jj[p]] == b;
    if (seen)
      continue;
    int m = bstart[b + 1] - bstart[b], first = m;
    for (int i = 0; i < m; i++)
      work[i] = 0;
    for (int p = q; p < s->Jp[r + 1]; p++)
      if (blk[s->Jj[p]] == b) {
        work[pos[s->Jj[p]]] = sk * s->Jx[p];
        first = pos[s->Jj[p]] < first ? pos[s->Jj[p]] : first;
      }
    const double *A = L + Lstart[b];
    for (int i = first; i < m; i++) { /* forward substitution */
      double v = work[i];
      for (int k = first; k < i; k++)
        v -= A[i + k * m] * work[k];
      work[i] = v / A[i + i * m];
      if (work[i] != 0) {
        if (cols)
          cols[count] = bcols[bstart[b] + i], vals[count] = work[i];
        count++;
      }
    }
  }
  return count;
}

/* B^T (n x nc CSC, i.e. B in CSR) by blocks; NULL if a block is too large
 * (*too_big set) or on error (message in ctx). */
static cholmod_sparse *cm__form_BT_blocks(cm_context_t *ctx,
                                          const cm_system_t *s,
                                          cholmod_common *c, int *too_big) {
  int n = s->n, nc = s->nc, nb = 0;
  int *blk = malloc((size_t)n * sizeof *blk), *pos = malloc((size_t)n * sizeof *pos);
  int *bstart = NULL, *bcols = NULL;
  int big = blk && pos ? cm__m_blocks(s, blk, pos, &bstart, &bcols, &nb) : -1;
  cholmod_sparse *BT = NULL;
  long *Lstart = NULL;
  double *L = NULL, work[CM__BLOCK_MAX];
  int raised = 0;
  *too_big = big > CM__BLOCK_MAX;
  if (big < 0 || *too_big)
    goto done;
  Lstart = malloc(((size_t)nb + 1) * sizeof *Lstart);
  if (!Lstart)
    goto done;
  Lstart[0] = 0;
  for (int b = 0; b < nb; b++) {
    long m = bstart[b + 1] - bstart[b];
    Lstart[b + 1] = Lstart[b] + m * m;
  }
  L = calloc((size_t)Lstart[nb] + 1, sizeof *L);
  if (!L)
    goto done;
  int bad = cm__block_chol(s, nb, bstart, bcols, blk, pos, L, Lstart);
  if (bad >= 0) {
    raised = 1;
    CM__ERR(ctx, CM_NOT_SPD, "M",
            "M is not positive definite: the Cholesky factorisation fails "
            "at column %d (dof %d of body %d)",
            bad + 1, s->col_dof ? s->col_dof[bad] : bad,
            s->col_body ? s->col_body[bad] : -1);
    goto done;
  }
  long nnz = 0;
  for (int r = 0; r < nc; r++)
    nnz += cm__B_row(s, r, blk, pos, bstart, bcols, L, Lstart, work, NULL,
                     NULL);
  BT = cholmod_allocate_sparse((size_t)n, (size_t)nc, (size_t)(nnz ? nnz : 1),
                               0, 1, 0, CHOLMOD_REAL, c);
  if (!BT)
    goto done;
  int *Bp = BT->p, *Bi = BT->i;
  double *Bx = BT->x;
  Bp[0] = 0;
  for (int r = 0; r < nc; r++) {
    int m = cm__B_row(s, r, blk, pos, bstart, bcols, L, Lstart, work,
                      Bi + Bp[r], Bx + Bp[r]);
    Bp[r + 1] = Bp[r] + m;
    for (int a = Bp[r] + 1; a < Bp[r + 1]; a++) /* columns ascending */
      for (int b = a; b > Bp[r] && Bi[b - 1] > Bi[b]; b--) {
        int ti = Bi[b]; Bi[b] = Bi[b - 1]; Bi[b - 1] = ti;
        double tx = Bx[b]; Bx[b] = Bx[b - 1]; Bx[b - 1] = tx;
      }
  }
  BT->sorted = 1;
done:
  if (!BT && !*too_big && !raised)
    CM__ERR(ctx, CM_NOMEM, NULL, "out of memory forming B");
  free(blk), free(pos), free(bstart), free(bcols), free(Lstart), free(L);
  return BT;
}

/* B^T = L^-1 P J^T K^1/2 with P M P^T = L L^T (natural order: P = I), as
 * a CHOLMOD matrix n x nc, with CHOLMOD solves (any M; cost grows like
 * n nc, so only for systems whose M has large coupled blocks); NULL on
 * failure (message in ctx). */
static cholmod_sparse *cm__form_BT(cm_context_t *ctx, const cm_system_t *s,
                                   cholmod_common *c) {
  cholmod_sparse M = cm__view(s->n, s->n, s->Mp, s->Mi, s->Mx, -1);
  double *JKx = cm__malloc(ctx, (size_t)(s->Jp[s->nc] ? s->Jp[s->nc] : 1),
                           sizeof *JKx);
  if (!JKx)
    return NULL;
  for (int r = 0; r < s->nc; r++)
    for (int q = s->Jp[r]; q < s->Jp[r + 1]; q++)
      JKx[q] = sqrt(s->k[r]) * s->Jx[q]; /* row r of K^1/2 J */
  /* CSR of K^1/2 J = CSC of J^T K^1/2 (n x nc) */
  cholmod_sparse JT = cm__view(s->n, s->nc, s->Jp, s->Jj, JKx, 0);
  c->nmethods = 1;
  c->method[0].ordering = CHOLMOD_NATURAL;
  c->postorder = 0;
  c->final_ll = 1;
  c->supernodal = CHOLMOD_SIMPLICIAL;
  cholmod_sparse *BT = NULL, *PJ = NULL;
  cholmod_factor *L = cholmod_analyze(&M, c);
  if (L)
    cholmod_factorize(&M, L, c);
  if (!L || c->status != CHOLMOD_OK) {
    CM__ERR(ctx, c->status == CHOLMOD_NOT_POSDEF ? CM_NOT_SPD : CM_NUMERIC,
            "M", "cannot factor M to form B (CHOLMOD status %d)", c->status);
  } else {
    PJ = cholmod_spsolve(CHOLMOD_P, L, &JT, c);
    BT = PJ ? cholmod_spsolve(CHOLMOD_L, L, PJ, c) : NULL;
    if (BT)
      cholmod_drop(0.0, BT, c); /* exact zeros only */
    else
      CM__ERR(ctx, CM_NOMEM, NULL, "out of memory forming B");
  }
  cholmod_free_sparse(&PJ, c);
  cholmod_free_factor(&L, c);
  free(JKx);
  return BT;
}

static int cm__write_sparse(cm__out_t *o, const char *name,
                            const char *comment, cholmod_sparse *A,
                            int transpose, int symmetric) {
  int st = cm__open(o, name);
  if (st)
    return st;
  const int *p = A->p;
  int nrow = transpose ? (int)A->ncol : (int)A->nrow;
  int ncol = transpose ? (int)A->nrow : (int)A->ncol;
  fprintf(o->f, "%%%%MatrixMarket matrix coordinate real %s\n%% cmodes: %s\n"
                "%d %d %d\n",
          symmetric ? "symmetric" : "general", comment, nrow, ncol,
          p[A->ncol]);
  cm__put_coord(o->f, (int)A->ncol, A->p, A->i, A->x, transpose);
  return cm__close(o);
}

/* B.mtx and S.mtx as asked by flags. */
static int cm__write_operator(cm__out_t *o, const cm_system_t *s, int flags) {
  cholmod_common c;
  cholmod_start(&c);
  c.print = 0;
  int too_big = 0;
  cholmod_sparse *BT = cm__form_BT_blocks(o->ctx, s, &c, &too_big);
  if (!BT && too_big)
    BT = cm__form_BT(o->ctx, s, &c);
  cholmod_sparse *S = NULL, *SL = NULL;
  int st = BT ? CM_OK : o->ctx->status;
  if (!st && (flags & CM_MTX_WRITE_B))
    st = cm__write_sparse(o, "B.mtx",
                          "B = K^1/2 J L^-T with M = L L^T (Cholesky, "
                          "natural order): S = B B^T, omega_i = sigma_i(B); "
                          "rows as J (rows.txt), columns are L's",
                          BT, 1, 0);
  if (!st && (flags & CM_MTX_WRITE_S)) {
    /* cholmod_aat(A) is A A^T: S = aat(B) with B = (B^T)^T */
    cholmod_sparse *B = cholmod_transpose(BT, 1, &c);
    S = B ? cholmod_aat(B, NULL, 0, 1, &c) : NULL;
    cholmod_free_sparse(&B, &c);
    SL = S ? cholmod_copy(S, -1, 1, &c) : NULL;
    if (!SL)
      st = CM__ERR(o->ctx, CM_NOMEM, NULL, "out of memory forming S");
    else
      st = cm__write_sparse(o, "S.mtx",
                            "S = K^1/2 J M^-1 J^T K^1/2 = B B^T (lower "
                            "triangle); eig(S) = omega^2",
                            SL, 0, 1);
  }
  cholmod_free_sparse(&S, &c);
  cholmod_free_sparse(&SL, &c);
  cholmod_free_sparse(&BT, &c);
  cholmod_finish(&c);
  return st;
}

static int cm__write_manifest(cm__out_t *o, const cm_system_t *s, int flags,
                              const char *source) {
  json_t *m = json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:i}",
                        "format", "cmodes-matrices", "version", 1, "M",
                        "M.mtx", "J", "J.mtx", "k", "k.mtx", "rows",
                        "rows.txt", "cols", "cols.txt", "n", s->n, "nc",
                        s->nc, "ncomp", s->ncomp);
  if (!m)
    return CM__ERR(o->ctx, CM_NOMEM, NULL, "out of memory");
  if (flags & CM_MTX_WRITE_B)
    json_object_set_new(m, "B", json_string("B.mtx"));
  if (flags & CM_MTX_WRITE_S)
    json_object_set_new(m, "S", json_string("S.mtx"));
  if (source)
    json_object_set_new(m, "source", json_string(source));
  int st = cm__open(o, "manifest.json");
  if (!st) {
    json_dumpf(m, o->f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', o->f);
    st = cm__close(o);
  }
  json_decref(m);
  return st;
}

int cm_system_write_matrices(cm_context_t *ctx, const cm_system_t *sys,
                             const char *dir, int flags, const char *source) {
  if (!sys || !dir)
    return CM__ERR(ctx, CM_USAGE, NULL, "cm_system_write_matrices: NULL "
                                        "argument");
  cm__out_t o = {ctx, dir, NULL, NULL};
  int st = cm__write_M(&o, sys);
  if (!st)
    st = cm__write_J(&o, sys);
  if (!st)
    st = cm__write_k(&o, sys);
  if (!st)
    st = cm__write_maps(&o, sys);
  if (!st && (flags & (CM_MTX_WRITE_B | CM_MTX_WRITE_S)) && sys->nc > 0)
    st = cm__write_operator(&o, sys, flags);
  if (!st)
    st = cm__write_manifest(&o, sys, sys->nc > 0 ? flags : 0, source);
  if (o.f)
    fclose(o.f);
  free(o.path);
  return st;
}
