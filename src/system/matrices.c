/* matrices.c: a general system from user matrices (M any sparse SPD, J, k),
 * e.g. read from Matrix Market, split into components as a scene is: dofs
 * joined by M's off-diagonal entries or by a common row of J form one, and
 * a part of M that no row reaches is dropped (a dof coupled through M to a
 * touched dof stays: it moves through M^-1). Not for scenes (assemble.c). */
#include "internal.h"

#include <cholmod.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Checks a compressed structure: monotone pointers, indices in range. */
static int cm__check_compressed(cm_context_t *ctx, const char *what, int nouter,
                                int ninner, const int *p, const int *idx,
                                const double *x) {
  if (p[0] != 0)
    return CM__ERR(ctx, CM_INVALID_SCENE, what, "%s: pointers must start at 0",
                   what);
  for (int j = 0; j < nouter; j++) {
    if (p[j + 1] < p[j])
      return CM__ERR(ctx, CM_INVALID_SCENE, what, "%s: pointers decrease at %d",
                     what, j);
    for (int q = p[j]; q < p[j + 1]; q++) {
      if (idx[q] < 0 || idx[q] >= ninner)
        return CM__ERR(ctx, CM_INVALID_SCENE, what,
                       "%s: index %d out of range 0..%d at entry %d", what,
                       idx[q], ninner - 1, q);
      if (!isfinite(x[q]))
        return CM__ERR(ctx, CM_INVALID_SCENE, what,
                       "%s: entry (%d, %d) is not finite", what, j, idx[q]);
    }
  }
  return CM_OK;
}

/* Lower triangle of M: from the lower part, or from the upper part if only
 * that is stored. */
static int cm__lower_M(cm_context_t *ctx, cm_system_t *sys, int n,
                       const int *Mp, const int *Mi, const double *Mx) {
  int nlow = 0, nup = 0;
  for (int j = 0; j < n; j++)
    for (int q = Mp[j]; q < Mp[j + 1]; q++)
      if (Mi[q] >= j)
        nlow++;
      else
        nup++;
  int use_upper = nup > 0 && nlow == 0;
  sys->Mp = cm__calloc(ctx, (size_t)n + 1, sizeof(int));
  size_t cap = (size_t)(use_upper ? nup : nlow);
  sys->Mi = cm__malloc(ctx, cap, sizeof(int));
  sys->Mx = cm__malloc(ctx, cap, sizeof(double));
  if (!sys->Mp || !sys->Mi || !sys->Mx)
    return CM_NOMEM;
  /* count per output column; for upper entries (i < j) the column is i */
  for (int j = 0; j < n; j++)
    for (int q = Mp[j]; q < Mp[j + 1]; q++) {
      int i = Mi[q];
      if (!use_upper && i >= j)
        sys->Mp[j + 1]++;
      else if (use_upper && i <= j)
        sys->Mp[i + 1]++;
    }
  for (int j = 0; j < n; j++)
    sys->Mp[j + 1] += sys->Mp[j];
  int *next = cm__malloc(ctx, (size_t)n + 1, sizeof(int));
  if (!next)
    return CM_NOMEM;
  memcpy(next, sys->Mp, sizeof(int) * (size_t)n);
  for (int j = 0; j < n; j++)
    for (int q = Mp[j]; q < Mp[j + 1]; q++) {
      int i = Mi[q], col = -1, row = -1;
      if (!use_upper && i >= j)
        col = j, row = i;
      else if (use_upper && i <= j)
        col = i, row = j;
      if (col < 0)
        continue;
      sys->Mi[next[col]] = row;
      sys->Mx[next[col]++] = Mx[q];
    }
  free(next);
  return CM_OK;
}

/* ---- components: the split of a matrix system ---------------------------- */

#define CM__MAX_BLOCK 6 /* the block path inverts blocks up to 6 x 6 */

/* Block of each dof (blocks numbered by their first dof) if M is
 * block-diagonal with blocks of at most CM__MAX_BLOCK dofs; else NULL
 * (and *nomem set when memory was missing). */
static int *cm__mass_blocks(int n, const int *Mp, const int *Mi, int *nblk,
                            int *nomem) {
  int *p = malloc(sizeof(int) * (size_t)n),
      *size = calloc((size_t)n, sizeof(int));
  int *blk = malloc(sizeof(int) * (size_t)n);
  *nomem = 0;
  if (!p || !size || !blk) {
    free(p), free(size), free(blk);
    *nomem = 1;
    return NULL;
  }
  for (int j = 0; j < n; j++)
    p[j] = j;
  for (int j = 0; j < n; j++)
    for (int q = Mp[j]; q < Mp[j + 1]; q++) {
      int a = cm__uf_find(p, Mi[q]), b = cm__uf_find(p, j);
      if (a != b)
        p[a > b ? a : b] = a < b ? a : b;
    }
  int nb = 0, ok = 1;
  for (int j = 0; j < n; j++) {
    int r = cm__uf_find(p, j);
    if (r == j)
      blk[j] = nb++;
    else
      blk[j] = blk[r];
    if (++size[blk[j]] > CM__MAX_BLOCK)
      ok = 0;
  }
  free(p), free(size);
  if (!ok) {
    free(blk);
    return NULL;
  }
  *nblk = nb;
  return blk;
}

/* Component of every dof (dcomp, -1: no row of J reaches it) and of every
 * row (rcomp): dofs joined by an off-diagonal entry of M (stored, as for
 * the mass blocks) or by a nonzero of a common row of J, one union-find
 * (cm__uf_find); components numbered by their first row, as a scene's by
 * its first contact. A row without a nonzero touches no dof: CM_INVALID_SCENE,
 * as a scene's contact between two fixed bodies. */
static int cm__matrix_components(cm_context_t *ctx, const cm_system_t *sys,
                                 int *dcomp, int *rcomp, int *ncomp) {
  int n = sys->ndofs, nc = sys->nc;
  int *p = malloc(sizeof(int) * ((size_t)n + 1));
  if (!p)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  for (int j = 0; j < n; j++)
    p[j] = j, dcomp[j] = -1;
  for (int j = 0; j < n; j++)
    for (int q = sys->Mp[j]; q < sys->Mp[j + 1]; q++) {
      int a = cm__uf_find(p, sys->Mi[q]), b = cm__uf_find(p, j);
      if (a != b)
        p[a > b ? a : b] = a < b ? a : b;
    }
  for (int r = 0; r < nc; r++) {
    int first = -1;
    for (int q = sys->Jp[r]; q < sys->Jp[r + 1]; q++) {
      if (sys->Jx[q] == 0)
        continue;
      if (first < 0) {
        first = sys->Jj[q];
        continue;
      }
      int a = cm__uf_find(p, first), b = cm__uf_find(p, sys->Jj[q]);
      if (a != b)
        p[a > b ? a : b] = a < b ? a : b;
    }
    if (first < 0) {
      free(p);
      return CM__ERR(ctx, CM_INVALID_SCENE, "J",
                     "J: row %d has no nonzero entry: it touches no dof, so "
                     "it cannot oscillate (like a contact between two fixed "
                     "bodies): remove the row",
                     r);
    }
    rcomp[r] = first; /* for now: a dof of the row */
  }
  /* root -> component id by first row (dcomp of the root holds it) */
  int nco = 0;
  for (int r = 0; r < nc; r++) {
    int root = cm__uf_find(p, rcomp[r]);
    if (dcomp[root] < 0)
      dcomp[root] = nco++;
    rcomp[r] = dcomp[root];
  }
  for (int j = 0; j < n; j++)
    dcomp[j] = dcomp[cm__uf_find(p, j)];
  free(p);
  *ncomp = nco;
  return CM_OK;
}

/* A part of M that no row reaches is dropped, but must still be positive
 * definite: one CHOLMOD factorization of it (lower CSC of the dropped dofs
 * in the input's order). blk: the mass blocks, for the block path's
 * message. */
static int cm__dropped_spd(cm_context_t *ctx, const cm_system_t *sys,
                           const int *dcomp, const int *blk) {
  int n = sys->ndofs, nd = 0;
  int *loc = malloc(sizeof(int) * ((size_t)n + 1));
  if (!loc)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  for (int j = 0; j < n; j++)
    loc[j] = dcomp[j] < 0 ? nd++ : -1;
  if (!nd) {
    free(loc);
    return CM_OK;
  }
  int *glob = malloc(sizeof(int) * (size_t)nd);
  int *Dp = calloc((size_t)nd + 1, sizeof(int));
  int nz = 0;
  for (int j = 0; j < n; j++)
    if (loc[j] >= 0)
      nz += sys->Mp[j + 1] - sys->Mp[j];
  int *Di = malloc(sizeof(int) * ((size_t)nz + 1));
  double *Dx = malloc(sizeof(double) * ((size_t)nz + 1));
  if (!glob || !Dp || !Di || !Dx) {
    free(loc), free(glob), free(Dp), free(Di), free(Dx);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  nz = 0;
  for (int j = 0; j < n; j++) { /* a dropped column's rows are dropped too */
    if (loc[j] < 0)
      continue;
    glob[loc[j]] = j;
    for (int q = sys->Mp[j]; q < sys->Mp[j + 1]; q++) {
      Di[nz] = loc[sys->Mi[q]];
      Dx[nz++] = sys->Mx[q];
    }
    Dp[loc[j] + 1] = nz;
  }
  cholmod_common c, *cc = &c;
  cholmod_start(cc);
  cc->print = 0;
  cc->final_ll = 1; /* LL^T: a pivot <= 0 fails (LDL^T would not) */
  cholmod_sparse D;
  memset(&D, 0, sizeof D);
  D.nrow = D.ncol = (size_t)nd;
  D.nzmax = (size_t)nz;
  D.p = Dp, D.i = Di, D.x = Dx;
  D.stype = -1, D.itype = CHOLMOD_INT, D.xtype = CHOLMOD_REAL;
  D.dtype = CHOLMOD_DOUBLE, D.sorted = 0, D.packed = 1;
  cholmod_factor *L = cholmod_analyze(&D, cc);
  int st = CM_OK;
  if (L)
    cholmod_factorize(&D, L, cc);
  if (!L || cc->status == CHOLMOD_OUT_OF_MEMORY) {
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory factoring M");
  } else if (cc->status == CHOLMOD_NOT_POSDEF || L->minor < L->n) {
    int j = (int)L->minor;
    if (L->Perm)
      j = ((int *)L->Perm)[j];
    j = glob[j];
    if (blk)
      st = CM__ERR(ctx, CM_NOT_SPD, "M",
                   "M: not positive definite (the diagonal block of M "
                   "holding dof %d, 0-based, fails its Cholesky "
                   "factorization); M must be symmetric positive definite",
                   j);
    else
      st = CM__ERR(ctx, CM_NOT_SPD, "M",
                   "M: not positive definite (pivot %d of %d failed); M must "
                   "be symmetric positive definite",
                   j, n);
  } else if (cc->status < 0) {
    st = CM__ERR(ctx, CM_NUMERIC, "M",
                 "CHOLMOD factorization failed (status %d)", cc->status);
  }
  cholmod_free_factor(&L, cc);
  cholmod_finish(cc);
  free(loc), free(glob), free(Dp), free(Di), free(Dx);
  return st;
}

/* Reorders the system by component: rows by (component, input row),
 * columns by (component, mass block, input dof) on the block path (blk
 * not NULL) or (component, input dof); dofs of no component are dropped.
 * J keeps only its nonzeros, M stays lower CSC with sorted rows. */
static int cm__split(cm_context_t *ctx, cm_system_t *sys, const int *dcomp,
                     const int *rcomp, int ncomp, const int *blk, int nblk) {
  int n = sys->ndofs, nc = sys->nc;
  int *oldcol = malloc(sizeof(int) * ((size_t)n + 1));
  int *newcol = malloc(sizeof(int) * ((size_t)n + 1));
  int *tmp = malloc(sizeof(int) * ((size_t)n + 1));
  int nk = (blk ? nblk : 0) > ncomp ? nblk : ncomp;
  int *cnt = calloc((size_t)nk + 2, sizeof(int));
  int *oldrow = malloc(sizeof(int) * ((size_t)nc + 1));
  int *Jp = calloc((size_t)nc + 1, sizeof(int));
  int *Mp = calloc((size_t)n + 1, sizeof(int));
  int *Mi = malloc(sizeof(int) * ((size_t)sys->Mp[n] + 1));
  double *Mx = malloc(sizeof(double) * ((size_t)sys->Mp[n] + 1));
  int *Jj = malloc(sizeof(int) * ((size_t)sys->Jp[nc] + 1));
  double *Jx = malloc(sizeof(double) * ((size_t)sys->Jp[nc] + 1));
  double *k = malloc(sizeof(double) * ((size_t)nc + 1));
  int *comp_row = calloc((size_t)ncomp + 1, sizeof(int));
  int *comp_col = calloc((size_t)ncomp + 1, sizeof(int));
  int *body_comp = malloc(sizeof(int) * ((size_t)(blk ? nblk : 0) + 1));
  if (!oldcol || !newcol || !tmp || !cnt || !oldrow || !Jp || !Mp || !Mi ||
      !Mx || !Jj || !Jx || !k || !comp_row || !comp_col || !body_comp) {
    free(oldcol), free(newcol), free(tmp), free(cnt), free(oldrow), free(Jp);
    free(Mp), free(Mi), free(Mx), free(Jj), free(Jx), free(k);
    free(comp_row), free(comp_col), free(body_comp);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  /* ---- columns: stable counting sorts, by block, then by component ---- */
  int m = 0;
  for (int j = 0; j < n; j++)
    if (dcomp[j] >= 0)
      tmp[m++] = j;
  if (blk) {
    for (int i = 0; i < m; i++)
      cnt[blk[tmp[i]] + 1]++;
    for (int b = 0; b < nblk; b++)
      cnt[b + 1] += cnt[b];
    for (int i = 0; i < m; i++)
      oldcol[cnt[blk[tmp[i]]]++] = tmp[i];
    memcpy(tmp, oldcol, sizeof(int) * (size_t)m);
    memset(cnt, 0, sizeof(int) * ((size_t)nk + 2));
  }
  for (int i = 0; i < m; i++)
    comp_col[dcomp[tmp[i]] + 1]++;
  for (int c = 0; c < ncomp; c++)
    comp_col[c + 1] += comp_col[c];
  memcpy(cnt, comp_col, sizeof(int) * (size_t)ncomp);
  for (int i = 0; i < m; i++)
    oldcol[cnt[dcomp[tmp[i]]]++] = tmp[i];
  for (int j = 0; j < n; j++)
    newcol[j] = -1;
  for (int i = 0; i < m; i++)
    newcol[oldcol[i]] = i;
  /* ---- rows: stable by component; J's nonzeros in new columns ---- */
  for (int r = 0; r < nc; r++)
    comp_row[rcomp[r] + 1]++;
  for (int c = 0; c < ncomp; c++)
    comp_row[c + 1] += comp_row[c];
  memcpy(cnt, comp_row, sizeof(int) * (size_t)ncomp);
  for (int r = 0; r < nc; r++)
    oldrow[cnt[rcomp[r]]++] = r;
  int nz = 0;
  for (int i = 0; i < nc; i++) {
    int r = oldrow[i];
    for (int q = sys->Jp[r]; q < sys->Jp[r + 1]; q++) {
      if (sys->Jx[q] == 0)
        continue;
      int t = nz++; /* insertion: each row sorted by new column */
      for (; t > Jp[i] && Jj[t - 1] > newcol[sys->Jj[q]]; t--)
        Jj[t] = Jj[t - 1], Jx[t] = Jx[t - 1];
      Jj[t] = newcol[sys->Jj[q]];
      Jx[t] = sys->Jx[q];
    }
    Jp[i + 1] = nz;
    k[i] = sys->k[r];
    sys->row_contact[i] = r;
    sys->contact_row[r] = i;
  }
  /* ---- M: entry (i, j) of the lower triangle to (newcol i, newcol j) ---- */
  for (int j = 0; j < n; j++)
    for (int q = sys->Mp[j]; q < sys->Mp[j + 1] && newcol[j] >= 0; q++) {
      int a = newcol[sys->Mi[q]], b = newcol[j];
      Mp[(a < b ? a : b) + 1]++;
    }
  for (int j = 0; j < m; j++)
    Mp[j + 1] += Mp[j];
  memcpy(tmp, Mp, sizeof(int) * (size_t)m);
  for (int j = 0; j < n; j++)
    for (int q = sys->Mp[j]; q < sys->Mp[j + 1] && newcol[j] >= 0; q++) {
      int a = newcol[sys->Mi[q]], b = newcol[j];
      int col = a < b ? a : b, row = a < b ? b : a, t = tmp[col]++;
      for (; t > Mp[col] && Mi[t - 1] > row; t--) /* sorted rows */
        Mi[t] = Mi[t - 1], Mx[t] = Mx[t - 1];
      Mi[t] = row;
      Mx[t] = sys->Mx[q];
    }
  /* ---- install ---- */
  for (int j = 0; j < m; j++) {
    sys->col_dof[j] = oldcol[j]; /* the dof's index in the input */
    sys->col_body[j] = blk ? blk[oldcol[j]] : -1;
  }
  for (int b = 0; blk && b < nblk; b++)
    body_comp[b] = -1;
  for (int j = 0; blk && j < m; j++)
    body_comp[blk[oldcol[j]]] = dcomp[oldcol[j]];
  free(sys->Jp), free(sys->Jj), free(sys->Jx), free(sys->k);
  free(sys->Mp), free(sys->Mi), free(sys->Mx);
  free(sys->comp_row), free(sys->comp_col), free(sys->body_comp);
  sys->Jp = Jp, sys->Jj = Jj, sys->Jx = Jx, sys->k = k;
  sys->Mp = Mp, sys->Mi = Mi, sys->Mx = Mx;
  sys->comp_row = comp_row, sys->comp_col = comp_col;
  sys->body_comp = body_comp;
  sys->ncomp = ncomp;
  sys->n = m;
  sys->dropped_dofs = n - m;
  sys->block = blk != NULL;
  sys->nbodies = blk ? nblk : 0;
  free(oldcol), free(newcol), free(tmp), free(cnt), free(oldrow);
  return CM_OK;
}

int cm_system_from_matrices(cm_context_t *ctx, int n, int nc, const int *Mp,
                            const int *Mi, const double *Mx, const int *Jp,
                            const int *Jj, const double *Jx, const double *k,
                            cm_system_t **out) {
  *out = NULL;
  /* ---- check inputs ---- */
  if (n <= 0 || nc < 0)
    return CM__ERR(ctx, CM_INVALID_SCENE, "M",
                   "M is %d x %d and J has %d rows: M needs at least one row",
                   n, n, nc);
  int st = cm__check_compressed(ctx, "M", n, n, Mp, Mi, Mx);
  if (!st)
    st = cm__check_compressed(ctx, "J", nc, n, Jp, Jj, Jx);
  if (st)
    return st;
  for (int r = 0; r < nc; r++)
    if (!(k[r] > 0) || !isfinite(k[r]))
      return CM__ERR(ctx, CM_INVALID_SCENE, "k",
                     "k[%d] = %g: every stiffness must be finite and > 0", r,
                     k[r]);
  /* ---- allocate and copy ---- */
  cm_system_t *sys = calloc(1, sizeof *sys);
  if (!sys)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  sys->n = sys->ndofs = n;
  sys->inertia_cond = 1, sys->inertia_cond_body = -1;
  sys->block = 0;
  sys->nc = sys->ncontacts = nc;
  size_t nnz = (size_t)Jp[nc];
  sys->Jp = cm__malloc(ctx, (size_t)nc + 1, sizeof(int));
  sys->Jj = cm__malloc(ctx, nnz + 1, sizeof(int));
  sys->Jx = cm__malloc(ctx, nnz + 1, sizeof(double));
  sys->k = cm__malloc(ctx, (size_t)nc + 1, sizeof(double));
  sys->row_contact = cm__malloc(ctx, (size_t)nc + 1, sizeof(int));
  sys->contact_row = cm__malloc(ctx, (size_t)nc + 1, sizeof(int));
  sys->row_a = cm__malloc(ctx, (size_t)nc + 1, sizeof(int));
  sys->row_b = cm__malloc(ctx, (size_t)nc + 1, sizeof(int));
  sys->col_body = cm__malloc(ctx, (size_t)n, sizeof(int));
  sys->col_dof = cm__malloc(ctx, (size_t)n, sizeof(int));
  int *dcomp = malloc(sizeof(int) * (size_t)n);
  int *rcomp = malloc(sizeof(int) * ((size_t)nc + 1));
  if (!sys->Jp || !sys->Jj || !sys->Jx || !sys->k || !sys->row_contact ||
      !sys->contact_row || !sys->row_a || !sys->row_b || !sys->col_body ||
      !sys->col_dof || !dcomp || !rcomp ||
      cm__lower_M(ctx, sys, n, Mp, Mi, Mx)) {
    free(dcomp), free(rcomp);
    cm_system_destroy(&sys);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  memcpy(sys->Jp, Jp, sizeof(int) * ((size_t)nc + 1));
  if (nnz) {
    memcpy(sys->Jj, Jj, sizeof(int) * nnz);
    memcpy(sys->Jx, Jx, sizeof(double) * nnz);
  }
  if (nc)
    memcpy(sys->k, k, sizeof(double) * (size_t)nc);
  for (int r = 0; r < nc; r++)
    sys->row_a[r] = sys->row_b[r] = CM_WORLD;
  /* ---- components, the mass blocks (block-diagonal M with blocks of at
   * most 6 dofs: the fast path), and the split ---- */
  int ncomp = 0, nblk = 0, *blk = NULL;
  st = cm__matrix_components(ctx, sys, dcomp, rcomp, &ncomp);
  if (!st) {
    int nomem = 0;
    blk = cm__mass_blocks(n, sys->Mp, sys->Mi, &nblk, &nomem);
    st = nomem ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory")
               : cm__dropped_spd(ctx, sys, dcomp, blk);
  }
  if (!st)
    st = cm__split(ctx, sys, dcomp, rcomp, ncomp, blk, nblk);
  free(blk), free(dcomp), free(rcomp);
  if (st) {
    cm_system_destroy(&sys);
    return st;
  }
  *out = sys;
  return CM_OK;
}

/* ---- names ----------------------------------------------------------------
 */

void cm__free_names(char **names, int n) {
  for (int i = 0; names && i < n; i++)
    free(names[i]);
  free(names);
}

/* A copy of n names (NULL entries kept), or NULL with *fail set. */
static char **cm__copy_names(const char *const *src, int n, int *fail) {
  char **out = calloc((size_t)n + 1, sizeof(char *));
  if (!out) {
    *fail = 1;
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (src[i] && !(out[i] = cm__strdup(src[i]))) {
      cm__free_names(out, n);
      *fail = 1;
      return NULL;
    }
  return out;
}

int cm_system_set_names(cm_context_t *ctx, cm_system_t *sys,
                        const char *const *row_names,
                        const char *const *col_names) {
  if (!sys)
    return CM__ERR(ctx, CM_USAGE, NULL, "cm_system_set_names: NULL system");
  if (sys->dim)
    return CM__ERR(ctx, CM_USAGE, NULL,
                   "cm_system_set_names: this system was assembled from a "
                   "scene; its rows and bodies are named by the scene's "
                   "contacts and bodies");
  int fail = 0;
  char **rows = row_names ? cm__copy_names(row_names, sys->nc, &fail) : NULL;
  char **cols =
      col_names && !fail ? cm__copy_names(col_names, sys->ndofs, &fail) : NULL;
  if (fail) {
    cm__free_names(rows, sys->nc);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  cm__free_names(sys->row_names, sys->nc);
  cm__free_names(sys->col_names, sys->ndofs);
  sys->row_names = rows;
  sys->col_names = cols;
  return CM_OK;
}
