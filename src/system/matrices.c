/* matrices.c: a general system from user matrices (M any sparse SPD, J, k),
 * e.g. read from Matrix Market. One component; no dof is dropped, since with
 * a general M an untouched dof still couples through M^-1.
 * Not for scenes (assemble.c). */
#include "internal.h"

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
      return CM__ERR(ctx, CM_INVALID_SCENE, what,
                     "%s: pointers decrease at %d", what, j);
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

/* ---- block structure: a general M that is block-diagonal in disguise --- */

#define CM__MAX_BLOCK 6 /* the block path inverts blocks up to 6 x 6 */

/* Block of each dof (blocks numbered by their first dof) if M is
 * block-diagonal with blocks of at most CM__MAX_BLOCK dofs; else NULL. */
static int *cm__mass_blocks(int n, const int *Mp, const int *Mi, int *nblk) {
  int *p = malloc(sizeof(int) * (size_t)n), *size = calloc((size_t)n, sizeof(int));
  int *blk = malloc(sizeof(int) * (size_t)n);
  if (!p || !size || !blk) {
    free(p), free(size), free(blk);
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

/* Reorders the columns of a general system so that each block of M is
 * contiguous and switches it to the block path (explicit B). */
static int cm__to_block_path(cm_context_t *ctx, cm_system_t *sys, int *blk,
                             int nblk) {
  int n = sys->n, nc = sys->nc;
  int *cnt = calloc((size_t)nblk + 1, sizeof(int));
  int *newcol = malloc(sizeof(int) * (size_t)n);
  int *oldcol = malloc(sizeof(int) * (size_t)n);
  if (!cnt || !newcol || !oldcol) {
    free(cnt), free(newcol), free(oldcol);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  for (int j = 0; j < n; j++)
    cnt[blk[j] + 1]++;
  for (int b = 0; b < nblk; b++)
    cnt[b + 1] += cnt[b];
  for (int j = 0; j < n; j++) { /* stable: dofs keep their order in a block */
    newcol[j] = cnt[blk[j]]++;
    oldcol[newcol[j]] = j;
  }
  free(cnt);
  /* J: remap columns, keep each row sorted */
  for (int r = 0; r < nc; r++) {
    for (int q = sys->Jp[r]; q < sys->Jp[r + 1]; q++)
      sys->Jj[q] = newcol[sys->Jj[q]];
    for (int q = sys->Jp[r] + 1; q < sys->Jp[r + 1]; q++) /* insertion sort */
      for (int t = q; t > sys->Jp[r] && sys->Jj[t] < sys->Jj[t - 1]; t--) {
        int tj = sys->Jj[t];
        double tx = sys->Jx[t];
        sys->Jj[t] = sys->Jj[t - 1], sys->Jx[t] = sys->Jx[t - 1];
        sys->Jj[t - 1] = tj, sys->Jx[t - 1] = tx;
      }
  }
  /* M: new lower CSC in the new order */
  int nz = sys->Mp[n];
  int *Mp = calloc((size_t)n + 1, sizeof(int));
  int *Mi = malloc(sizeof(int) * ((size_t)nz + 1));
  double *Mx = malloc(sizeof(double) * ((size_t)nz + 1));
  if (!Mp || !Mi || !Mx) {
    free(Mp), free(Mi), free(Mx), free(newcol), free(oldcol);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  /* entry (i, j) of the old lower triangle moves to (newcol i, newcol j),
   * kept in the lower triangle */
  int *ccount = calloc((size_t)n + 1, sizeof(int));
  if (!ccount) {
    free(Mp), free(Mi), free(Mx), free(newcol), free(oldcol);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  for (int j = 0; j < n; j++)
    for (int q = sys->Mp[j]; q < sys->Mp[j + 1]; q++) {
      int a = newcol[sys->Mi[q]], b = newcol[j];
      ccount[(a < b ? a : b) + 1]++;
    }
  for (int j = 0; j < n; j++)
    ccount[j + 1] += ccount[j];
  memcpy(Mp, ccount, sizeof(int) * ((size_t)n + 1));
  for (int j = 0; j < n; j++)
    for (int q = sys->Mp[j]; q < sys->Mp[j + 1]; q++) {
      int a = newcol[sys->Mi[q]], b = newcol[j];
      int col = a < b ? a : b, row = a < b ? b : a, t = ccount[col]++;
      Mi[t] = row;
      Mx[t] = sys->Mx[q];
    }
  free(ccount);
  for (int j = 0; j < n; j++) /* sort rows within columns */
    for (int q = Mp[j] + 1; q < Mp[j + 1]; q++)
      for (int t = q; t > Mp[j] && Mi[t] < Mi[t - 1]; t--) {
        int ti = Mi[t];
        double tx = Mx[t];
        Mi[t] = Mi[t - 1], Mx[t] = Mx[t - 1];
        Mi[t - 1] = ti, Mx[t - 1] = tx;
      }
  free(sys->Mp), free(sys->Mi), free(sys->Mx);
  sys->Mp = Mp, sys->Mi = Mi, sys->Mx = Mx;
  for (int jn = 0; jn < n; jn++) {
    sys->col_body[jn] = blk[oldcol[jn]];
    sys->col_dof[jn] = oldcol[jn]; /* the dof's index in the files */
  }
  sys->nbodies = nblk;
  sys->block = 1;
  free(newcol), free(oldcol);
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
  sys->ncomp = nc > 0 ? 1 : 0;
  size_t nnz = (size_t)Jp[nc];
  sys->Jp = cm__malloc(ctx, (size_t)nc + 1, sizeof(int));
  sys->Jj = cm__malloc(ctx, nnz, sizeof(int));
  sys->Jx = cm__malloc(ctx, nnz, sizeof(double));
  sys->k = cm__malloc(ctx, (size_t)nc, sizeof(double));
  sys->row_contact = cm__malloc(ctx, (size_t)nc, sizeof(int));
  sys->contact_row = cm__malloc(ctx, (size_t)nc, sizeof(int));
  sys->row_a = cm__malloc(ctx, (size_t)nc, sizeof(int));
  sys->row_b = cm__malloc(ctx, (size_t)nc, sizeof(int));
  sys->col_body = cm__malloc(ctx, (size_t)n, sizeof(int));
  sys->col_dof = cm__malloc(ctx, (size_t)n, sizeof(int));
  sys->comp_row = cm__malloc(ctx, 2, sizeof(int));
  sys->comp_col = cm__malloc(ctx, 2, sizeof(int));
  sys->body_comp = cm__malloc(ctx, 1, sizeof(int));
  if (!sys->Jp || !sys->Jj || !sys->Jx || !sys->k || !sys->row_contact ||
      !sys->contact_row || !sys->row_a || !sys->row_b || !sys->col_body ||
      !sys->col_dof || !sys->comp_row || !sys->comp_col || !sys->body_comp ||
      cm__lower_M(ctx, sys, n, Mp, Mi, Mx)) {
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
  for (int r = 0; r < nc; r++) {
    sys->row_contact[r] = sys->contact_row[r] = r;
    sys->row_a[r] = sys->row_b[r] = CM_WORLD;
  }
  for (int j = 0; j < n; j++) {
    sys->col_body[j] = -1;
    sys->col_dof[j] = j;
  }
  sys->comp_row[0] = sys->comp_col[0] = 0;
  sys->comp_row[1] = nc;
  sys->comp_col[1] = n;
  /* ---- block-diagonal M with small blocks: the fast path ---- */
  int nblk = 0, *blk = cm__mass_blocks(n, sys->Mp, sys->Mi, &nblk);
  if (blk) {
    int st = cm__to_block_path(ctx, sys, blk, nblk);
    free(blk);
    if (st) {
      cm_system_destroy(&sys);
      return st;
    }
  }
  *out = sys;
  return CM_OK;
}

/* ---- names ---------------------------------------------------------------- */

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
  char **cols = col_names && !fail ? cm__copy_names(col_names, sys->n, &fail)
                                   : NULL;
  if (fail) {
    cm__free_names(rows, sys->nc);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  cm__free_names(sys->row_names, sys->nc);
  cm__free_names(sys->col_names, sys->n);
  sys->row_names = rows;
  sys->col_names = cols;
  return CM_OK;
}
