/* rank.c: the numerical rank of J, per component, from a rank-revealing
 * sparse QR (SuiteSparseQR, Heath's method) of the body-scaled Jacobian:
 * zero modes (nc - rank J) and free motions (ndofs - rank J) of the report.
 * J alone decides them (K and M are positive definite), so they do not
 * depend on the stiffness or mass ranges, only on the geometry.
 * Not for eigenvalues (spectrum/) or for the dofs dropped at assembly. */
#include "internal.h"

#include <SuiteSparseQR_C.h>
#include <math.h>
#include <stdlib.h>

/* A column of the factored matrix (a row of the scaled J) whose norm falls
 * to CM__RANK_TOL times the largest row norm of the component during the
 * elimination counts as dependent (docs/math.md, "Zero modes"). */
#define CM__RANK_TOL 1e-11

/* Scale of column j: J_rj sqrt(m_b / M_jj) for a scene's body b (its first
 * column is a translation, M_jj = m_b there), so a row's translation part
 * is its unit direction and a rotation entry is a lever arm over the
 * radius of gyration: no units, and a small inertia makes its lever arms
 * count. For matrices (no bodies) 1 / sqrt(M_jj) (Jacobi). */
static double *cm__rank_scales(const cm_system_t *s) {
  int n = s->n;
  double *sc = malloc(sizeof(double) * ((size_t)n + 1));
  if (!sc)
    return NULL;
  for (int j = 0; j < n; j++) {
    double mjj = s->Mx[s->Mp[j]]; /* lower CSC, sorted: diagonal first */
    sc[j] = 1.0 / sqrt(mjj);
  }
  if (s->dim)
    for (int j = 0, j0 = 0; j < n; j++) {
      if (j == 0 || s->col_body[j] != s->col_body[j - 1])
        j0 = j;
      sc[j] /= sc[j0]; /* sqrt(m_b) / sqrt(M_jj) */
    }
  return sc;
}

/* Rank of rows [r0, r0 + m) of J (columns [c0, c0 + n)) scaled by sc; -1
 * on failure (out of memory). cc is this thread's SPQR context. */
static long cm__rank_block(const cm_system_t *s, const double *sc, int r0,
                           int m, int c0, int n, cholmod_common *cc) {
  if (m == 0 || n == 0)
    return 0;
  const int *Jp = s->Jp, *Jj = s->Jj;
  const double *Jx = s->Jx;
  size_t nnz = (size_t)(Jp[r0 + m] - Jp[r0]);
  /* A = (J D)^T, n x m in CSC: J's CSR rows are its columns */
  cholmod_sparse *A = cholmod_l_allocate_sparse((size_t)n, (size_t)m, nnz, 1,
                                                1, 0, CHOLMOD_REAL, cc);
  if (!A)
    return -1;
  SuiteSparse_long *Ap = A->p, *Ai = A->i;
  double *Ax = A->x, big = 0;
  for (int i = 0; i <= m; i++)
    Ap[i] = Jp[r0 + i] - Jp[r0];
  for (int i = 0; i < m; i++) {
    double rn = 0;
    for (int q = Jp[r0 + i]; q < Jp[r0 + i + 1]; q++) {
      size_t e = (size_t)(q - Jp[r0]);
      Ai[e] = Jj[q] - c0;
      Ax[e] = Jx[q] * sc[Jj[q]];
      rn += Ax[e] * Ax[e];
    }
    big = rn > big ? rn : big;
  }
  long rank = SuiteSparseQR_C(SPQR_ORDERING_DEFAULT, CM__RANK_TOL * sqrt(big),
                              0, 0, A, NULL, NULL, NULL, NULL, NULL, NULL,
                              NULL, NULL, NULL, cc);
  cholmod_l_free_sparse(&A, cc);
  return rank;
}

int cm__system_rank(cm_context_t *ctx, const cm_system_t *s, int threads,
                    int *comp_rank, long *total) {
  /* ---- allocate ---- */
  *total = 0;
  double *sc = cm__rank_scales(s);
  if (!sc)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for the rank of J");
  int ncomp = s->ncomp, failed = 0;
  /* ---- compute: components in parallel, each with its own context ---- */
#pragma omp parallel num_threads(threads) if (ncomp > 1)
  {
    cholmod_common cc;
    cholmod_l_start(&cc);
    cc.print = 0;
#pragma omp for schedule(dynamic, 1)
    for (int c = 0; c < ncomp; c++) {
      int r0 = s->comp_row[c], c0 = s->comp_col[c];
      long rk = cm__rank_block(s, sc, r0, s->comp_row[c + 1] - r0, c0,
                               s->comp_col[c + 1] - c0, &cc);
      comp_rank[c] = (int)rk;
      if (rk < 0) {
#pragma omp atomic write
        failed = 1;
      }
    }
    cholmod_l_finish(&cc);
  }
  free(sc);
  /* ---- return ---- */
  if (failed)
    return CM__ERR(ctx, CM_NOMEM, NULL,
                   "SuiteSparseQR could not factor J for its rank (out of "
                   "memory)");
  for (int c = 0; c < ncomp; c++)
    *total += comp_rank[c];
  return CM_OK;
}
