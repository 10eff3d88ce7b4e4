/* rank.c: the numerical rank of J, per component: the singular values of a
 * small component (LAPACK), a rank-revealing sparse QR (SuiteSparseQR,
 * Heath's method) of a large one, of the Jacobian as assembled:
 * zero modes (nc - rank J) and free motions (ndofs - rank J) of the report.
 * J alone decides them (K and M are positive definite), so they do not
 * depend on the stiffness or mass ranges, only on the geometry (S's
 * eigenvalues do: a soft real mode can sit at 1e-14 of the top one).
 * Not for eigenvalues (spectrum/) or for the dofs dropped at assembly. */
#include "internal.h"

#include <SuiteSparseQR_C.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>

/* numpy's matrix_rank tolerance: singular values above max(m, n) eps
 * sigma_max count. Components with min(m, n) <= CM__RANK_DENSE get exactly
 * that, from the singular values (LAPACK dgesdd); larger ones get
 * SuiteSparseQR's rank (Heath's method): a column of the factored matrix
 * (a row of J) whose norm falls to max(m, n) eps sqrt(|J|_1 |J|_inf) (an
 * upper bound on sigma_max) during the elimination counts as dependent
 * (docs/math.md, "Zero modes and free motions"). */
#define CM__EPS 2.220446049250313e-16
#define CM__RANK_DENSE 400

/* Rank of rows [r0, r0 + m) of J (columns [c0, c0 + n)); -1 on failure
 * (out of memory). cc is this thread's SPQR context. J is not scaled: its
 * rows are unit directions and lever arms in the scene's length unit, and
 * scaling a column by its mass or inertia would turn rounding noise on a
 * light or small-inertia body (a sphere's spin) into rank. */
static long cm__rank_block(const cm_system_t *s, int r0,
                           int m, int c0, int n, cholmod_common *cc) {
  if (m == 0 || n == 0)
    return 0;
  const int *Jp = s->Jp, *Jj = s->Jj;
  const double *Jx = s->Jx;
  size_t nnz = (size_t)(Jp[r0 + m] - Jp[r0]);
  /* A = J^T, n x m in CSC: J's CSR rows are its columns */
  cholmod_sparse *A = cholmod_l_allocate_sparse((size_t)n, (size_t)m, nnz, 1,
                                                1, 0, CHOLMOD_REAL, cc);
  if (!A)
    return -1;
  SuiteSparse_long *Ap = A->p, *Ai = A->i;
  double *Ax = A->x, norm_inf = 0, norm_1 = 0;
  double *colsum = calloc((size_t)n, sizeof(double));
  if (!colsum) {
    cholmod_l_free_sparse(&A, cc);
    return -1;
  }
  for (int i = 0; i <= m; i++)
    Ap[i] = Jp[r0 + i] - Jp[r0];
  for (int i = 0; i < m; i++) {
    double rs = 0;
    for (int q = Jp[r0 + i]; q < Jp[r0 + i + 1]; q++) {
      size_t e = (size_t)(q - Jp[r0]);
      Ai[e] = Jj[q] - c0;
      Ax[e] = Jx[q];
      rs += fabs(Jx[q]);
      colsum[Jj[q] - c0] += fabs(Jx[q]);
    }
    norm_inf = rs > norm_inf ? rs : norm_inf;
  }
  for (int j = 0; j < n; j++)
    norm_1 = colsum[j] > norm_1 ? colsum[j] : norm_1;
  free(colsum);
  double tol = (m > n ? m : n) * CM__EPS * sqrt(norm_1 * norm_inf);
  long rank = SuiteSparseQR_C(SPQR_ORDERING_DEFAULT, tol, 0, 0, A, NULL, NULL,
                              NULL, NULL, NULL, NULL, NULL, NULL, NULL, cc);
  cholmod_l_free_sparse(&A, cc);
  return rank;
}

/* Rank of a small block from its singular values (dgesdd), numpy's rule;
 * -1 on failure. */
static long cm__rank_dense(const cm_system_t *s, int r0, int m, int c0,
                           int n) {
  if (m == 0 || n == 0)
    return 0;
  int mn = m < n ? m : n;
  double *A = calloc((size_t)m * (size_t)n, sizeof(double));
  double *sv = malloc(sizeof(double) * (size_t)mn);
  long rank = -1;
  if (A && sv) {
    for (int i = 0; i < m; i++) /* column-major */
      for (int q = s->Jp[r0 + i]; q < s->Jp[r0 + i + 1]; q++)
        A[(size_t)(s->Jj[q] - c0) * (size_t)m + (size_t)i] = s->Jx[q];
    if (LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', m, n, A, m, sv, NULL, 1, NULL,
                       1) == 0) {
      double tol = sv[0] * (m > n ? m : n) * CM__EPS;
      rank = 0;
      for (int i = 0; i < mn; i++)
        rank += sv[i] > tol;
    }
  }
  free(A), free(sv);
  return rank;
}

int cm__system_rank(cm_context_t *ctx, const cm_system_t *s, int threads,
                    int *comp_rank, long *total) {
  *total = 0;
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
      int m = s->comp_row[c + 1] - r0, n = s->comp_col[c + 1] - c0;
      long rk = (m < n ? m : n) <= CM__RANK_DENSE
                    ? cm__rank_dense(s, r0, m, c0, n)
                    : cm__rank_block(s, r0, m, c0, n, &cc);
      comp_rank[c] = (int)rk;
      if (rk < 0) {
#pragma omp atomic write
        failed = 1;
      }
    }
    cholmod_l_finish(&cc);
  }
  /* ---- return ---- */
  if (failed)
    return CM__ERR(ctx, CM_NOMEM, NULL,
                   "SuiteSparseQR could not factor J for its rank (out of "
                   "memory)");
  for (int c = 0; c < ncomp; c++)
    *total += comp_rank[c];
  return CM_OK;
}
