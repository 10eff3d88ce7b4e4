/* rank.c: the numerical rank of J, per component, from a rank-revealing
 * sparse QR (SuiteSparseQR, Heath's method) of the Jacobian as assembled:
 * zero modes (nc - rank J) and free motions (ndofs - rank J) of the report.
 * J alone decides them (K and M are positive definite), so they do not
 * depend on the stiffness or mass ranges, only on the geometry (S's
 * eigenvalues do: a soft real mode can sit at 1e-14 of the top one).
 * Not for eigenvalues (spectrum/) or for the dofs dropped at assembly. */
#include "internal.h"

#include <SuiteSparseQR_C.h>
#include <math.h>
#include <stdlib.h>

/* A column of the factored matrix (a row of J) whose norm falls to
 * CM__RANK_TOL sqrt(|J|_1 |J|_inf) (an upper bound on sigma_max(J)) during
 * the elimination counts as dependent (docs/math.md, "Zero modes and free
 * motions"). numpy's matrix_rank counts singular values above max(m, n) eps
 * sigma_max; Heath's method at that tolerance took rounding for rank on
 * piles with lever arms 200 times the unit directions (a 1794-dof pile: one
 * too many), while 1e-12 to 1e-8 all gave the SVD's rank there and on 1000
 * random scenes (tests/test_counts.c). */
#define CM__RANK_TOL 1e-10

/* Rank of rows [r0, r0 + m) of J (columns [c0, c0 + n)); -1 on failure
 * (out of memory). *near: the norm of what the QR dropped as dependent
 * (SuiteSparseQR's SPQR_norm_E_fro, the Frobenius norm of the dropped
 * columns' entries) over its tolerance: at rounding level (1e-6 and below)
 * when J's rank is sharp, near 1 when J has singular values at the
 * threshold, where another column order or tolerance could count one more
 * or one fewer (data/lammps/in.pile: 2.1-2.3, by the BLAS kernels
 * SuiteSparseQR runs on: near the threshold the QR's choices follow their
 * rounding, so the report gives only whether it passed CM__RANK_SHARP). It
 * costs nothing; the other side, a kept column just above the tolerance,
 * would need R's diagonal (+34 MB and +0.25 s on a 19,500-row pile), so it
 * is not looked at. cc is this thread's SPQR context. J is not scaled: its
 * rows are unit directions and lever arms in the scene's length unit, and
 * scaling a column by its mass or inertia would turn rounding noise on a
 * light or small-inertia body (a sphere's spin) into rank. */
static long cm__rank_block(const cm_system_t *s, int r0, int m, int c0, int n,
                           cholmod_common *cc, double *near) {
  *near = 0;
  if (m == 0 || n == 0)
    return 0;
  const int *Jp = s->Jp, *Jj = s->Jj;
  const double *Jx = s->Jx;
  size_t nnz = (size_t)(Jp[r0 + m] - Jp[r0]);
  /* A = J^T, n x m in CSC: J's CSR rows are its columns */
  cholmod_sparse *A = cholmod_l_allocate_sparse((size_t)n, (size_t)m, nnz, 1, 1,
                                                0, CHOLMOD_REAL, cc);
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
  /* one power of two brings the largest entry near 1: exact, so the rank
   * is that of J, but the QR's squared norms no longer overflow (entries
   * from 1e154 made every column norm inf and the rank 0, silently) or
   * underflow */
  double amax = 0;
  for (int q = Jp[r0]; q < Jp[r0 + m]; q++)
    amax = fmax(amax, fabs(Jx[q]));
  double scale = amax > 0 && isfinite(amax) ? ldexp(1.0, -ilogb(amax)) : 1;
  for (int i = 0; i < m; i++) {
    double rs = 0;
    for (int q = Jp[r0 + i]; q < Jp[r0 + i + 1]; q++) {
      size_t e = (size_t)(q - Jp[r0]);
      Ai[e] = Jj[q] - c0;
      Ax[e] = scale * Jx[q];
      rs += fabs(Ax[e]);
      colsum[Jj[q] - c0] += fabs(Ax[e]);
    }
    norm_inf = rs > norm_inf ? rs : norm_inf;
  }
  for (int j = 0; j < n; j++)
    norm_1 = colsum[j] > norm_1 ? colsum[j] : norm_1;
  free(colsum);
  double tol = CM__RANK_TOL * sqrt(norm_1 * norm_inf);
  long rank = SuiteSparseQR_C(SPQR_ORDERING_DEFAULT, tol, 0, 0, A, NULL, NULL,
                              NULL, NULL, NULL, NULL, NULL, NULL, NULL, cc);
  cholmod_l_free_sparse(&A, cc);
  if (rank >= 0 && tol > 0 && isfinite(cc->SPQR_norm_E_fro))
    *near = cc->SPQR_norm_E_fro / tol;
  return rank;
}

int cm__system_rank(cm_context_t *ctx, const cm_system_t *s, int threads,
                    int max_rows, double deadline, int *comp_rank, long *total,
                    double *near) {
  *total = 0;
  double nmax = 0;
  int ncomp = s->ncomp, failed = 0, late = 0;
  /* ---- compute: components in parallel, each with its own context (not
   * for a small J: a fork/join cost more than the factorizations, 50 ms
   * against 0.7 ms on 22 humanoids, 132 rows, on shared cores) ---- */
  int par = ncomp > 1 && s->Jp[s->nc] > CM__PAR_MIN;
#pragma omp parallel num_threads(threads) if (par)
  {
    cholmod_common cc;
    cholmod_l_start(&cc);
    cc.print = 0;
#pragma omp for schedule(dynamic, 1)
    for (int c = 0; c < ncomp; c++) {
      int r0 = s->comp_row[c], c0 = s->comp_col[c];
      int m = s->comp_row[c + 1] - r0, n = s->comp_col[c + 1] - c0;
      if (max_rows > 0 && m > max_rows) { /* too large: unknown */
        comp_rank[c] = -1;
        continue;
      }
      if (deadline > 0 && cm__now() > deadline) { /* past the budget */
        comp_rank[c] = -1;
#pragma omp atomic write
        late = 1;
        continue;
      }
      double nr;
      long rk = cm__rank_block(s, r0, m, c0, n, &cc, &nr);
      comp_rank[c] = (int)rk;
#pragma omp critical(cm__rank_near) /* a maximum: the same in any order */
      nmax = nr > nmax ? nr : nmax;
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
  for (int c = 0; c < ncomp && *total >= 0; c++)
    *total = comp_rank[c] < 0 ? -1 : *total + comp_rank[c];
  if (late)
    *total = -2;
  if (near)
    *near = *total < 0 ? NAN : nmax;
  return CM_OK;
}
