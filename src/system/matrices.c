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
  sys->block = 0;
  sys->nc = nc;
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
  *out = sys;
  return CM_OK;
}
