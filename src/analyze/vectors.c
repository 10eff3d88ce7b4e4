/* vectors.c: the mode shapes of a report on request (cm_analyze_vectors):
 * the unit eigenvectors z of S over the scene rows, the gaps xi = J phi and
 * the mass-normalised dof-space shapes phi. Filled by the pipeline driver
 * (analyze.c) from its eigen-solves, so the vectors are those of the
 * report's modes, bit for bit. Not for the energy shares (analyze.c). */
#include "analyze/analyze_internal.h"
#include "analyze/vectors_internal.h"

#include <cholmod.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cm_vectors_destroy(cm_vectors_t **vp) {
  if (!vp || !*vp)
    return;
  cm_vectors_t *v = *vp;
  free(v->z), free(v->xi), free(v->phi);
  free(v->row_contact), free(v->row_kind), free(v->col_body), free(v->col_dof);
  free(v);
  *vp = NULL;
}

/* phi = M^-1 J^T K^1/2 z / omega for every mode column at once: one
 * CHOLMOD factorization of M (lower CSC) and a solve with nmodes columns.
 * With B = K^1/2 J L^-T and S z = lambda z, phi = L^-T B^T z / omega solves
 * J^T K J phi = lambda M phi with phi^T M phi = 1. */
static int cm__dof_shapes(cm_context_t *ctx, const cm_system_t *sys,
                          const double *zsys, const double *omega, int nm,
                          double *phi) {
  int n = sys->n, nc = sys->nc;
  if (n == 0 || nm == 0)
    return CM_OK;
  cholmod_common c, *cc = &c;
  cholmod_start(cc);
  cc->print = 0;
  cc->final_ll = 1;
  cholmod_sparse M;
  memset(&M, 0, sizeof M);
  M.nrow = M.ncol = (size_t)n;
  M.nzmax = (size_t)sys->Mp[n];
  M.p = sys->Mp, M.i = sys->Mi, M.x = sys->Mx;
  M.stype = -1, M.itype = CHOLMOD_INT, M.xtype = CHOLMOD_REAL;
  M.dtype = CHOLMOD_DOUBLE, M.sorted = 0, M.packed = 1;
  cholmod_dense *R = cholmod_zeros((size_t)n, (size_t)nm, CHOLMOD_REAL, cc);
  cholmod_factor *L = R ? cholmod_analyze(&M, cc) : NULL;
  int st = CM_OK;
  if (L)
    cholmod_factorize(&M, L, cc);
  if (!L || cc->status != CHOLMOD_OK || L->minor < L->n) {
    st = CM__ERR(
        ctx, cc->status == CHOLMOD_OUT_OF_MEMORY ? CM_NOMEM : CM_NUMERIC, "M",
        "mode shapes: CHOLMOD could not factor M (status %d)", cc->status);
  } else {
    double *rx = R->x;
    for (int p = 0; p < nm; p++) /* r = J^T K^1/2 z / omega */
      for (int r = 0; r < nc; r++) {
        double w = sqrt(sys->k[r]) * zsys[(size_t)p * nc + r] / omega[p];
        for (int q = sys->Jp[r]; q < sys->Jp[r + 1]; q++)
          rx[(size_t)p * n + sys->Jj[q]] += sys->Jx[q] * w;
      }
    cholmod_dense *X = cholmod_solve(CHOLMOD_A, L, R, cc); /* M^-1 r */
    if (!X)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "mode shapes: solve failed");
    else
      memcpy(phi, X->x, sizeof(double) * (size_t)n * (size_t)nm);
    cholmod_free_dense(&X, cc);
  }
  cholmod_free_factor(&L, cc);
  cholmod_free_dense(&R, cc);
  cholmod_finish(cc);
  return st;
}

int cm__mode_vectors(cm_context_t *ctx, cm_operator_t *op,
                     const cm_system_t *sys, const cm__eig_t *eig,
                     const cm_report_t *r, cm_vectors_t **out) {
  int nm = r->nmodes, nc = sys->nc, n = sys->n;
  size_t rows = (size_t)nc * (size_t)nm + 1, cols = (size_t)n * nm + 1;
  cm_vectors_t *v = calloc(1, sizeof *v);
  double *zsys = calloc(rows, sizeof(double));
  double *omega = calloc((size_t)nm + 1, sizeof(double));
  int *seen = calloc((size_t)sys->ncomp + 1, sizeof(int));
  int *srow = cm__scene_rows(sys);
  if (v) {
    v->z = calloc(rows, sizeof(double));
    v->xi = calloc(rows, sizeof(double));
    v->phi = calloc(cols, sizeof(double));
    v->row_contact = malloc(sizeof(int) * ((size_t)nc + 1));
    v->row_kind = malloc(sizeof(int) * ((size_t)nc + 1));
    v->col_body = malloc(sizeof(int) * ((size_t)n + 1));
    v->col_dof = malloc(sizeof(int) * ((size_t)n + 1));
  }
  int st = CM_OK;
  if (!v || !zsys || !omega || !seen || !srow || !v->z || !v->xi || !v->phi ||
      !v->row_contact || !v->row_kind || !v->col_body || !v->col_dof) {
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for the mode shapes");
    goto done;
  }
  v->nmodes = nm, v->nrows = nc, v->ndofs = n;
  /* the k-th mode of a component in report order is its k-th pair */
  for (int p = 0; p < nm; p++) {
    int comp = r->modes[p].component, idx = seen[comp]++;
    int r0, m, c0, nn;
    cm__op_comp(op, comp, &r0, &m, &c0, &nn);
    const double *z = eig[comp].z + (size_t)idx * (size_t)m;
    omega[p] = r->modes[p].omega > 0 ? r->modes[p].omega : 1;
    for (int i = 0; i < m; i++) {
      int row = r0 + i, s = srow[row];
      zsys[(size_t)p * nc + row] = z[i];
      v->z[(size_t)p * nc + s] = z[i];
      v->xi[(size_t)p * nc + s] =
          r->modes[p].omega * z[i] / sqrt(sys->k[row]); /* J phi */
    }
  }
  for (int row = 0; row < nc; row++) {
    v->row_contact[srow[row]] = sys->row_contact[row];
    v->row_kind[srow[row]] = sys->row_kind ? sys->row_kind[row] : 0;
  }
  memcpy(v->col_body, sys->col_body, sizeof(int) * (size_t)n);
  memcpy(v->col_dof, sys->col_dof, sizeof(int) * (size_t)n);
  st = cm__dof_shapes(ctx, sys, zsys, omega, nm, v->phi);
done:
  free(zsys), free(omega), free(seen), free(srow);
  if (st)
    cm_vectors_destroy(&v);
  *out = v;
  return st;
}

int cm_analyze_vectors(cm_context_t *ctx, const cm_system_t *sys,
                       const cm_scene_t *scene, const cm_options_t *opts,
                       cm_report_t **out, cm_vectors_t **vectors) {
  *vectors = NULL;
  return cm__analyze_system(ctx, sys, scene, opts, out, vectors);
}
