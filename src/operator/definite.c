/* definite.c: is sigma M - J^T W J positive definite? One sparse
 * Cholesky factorization (CHOLMOD, fill-reducing order) answers it, and
 * with it whether every eigenvalue of M^-1 J^T W J lies below sigma
 * (Sylvester's law of inertia) without an eigen-solve. The certified steps
 * use it: a step is certified when the stability matrix of its integrator
 * is positive definite (docs/math.md). Not for the eigen-solves (spectrum/)
 * or for B (operator.c). */
#include "operator_cholmod.h"
#include "operator_internal.h"

#include <cholmod.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

cholmod_sparse cm__op_M_view(const cm_system_t *s) {
  cholmod_sparse M;
  memset(&M, 0, sizeof M);
  M.nrow = M.ncol = (size_t)s->n;
  M.nzmax = (size_t)s->Mp[s->n];
  M.p = s->Mp, M.i = s->Mi, M.x = s->Mx;
  M.stype = -1, M.itype = CHOLMOD_INT, M.xtype = CHOLMOD_REAL;
  M.dtype = CHOLMOD_DOUBLE, M.sorted = s->block, M.packed = 1;
  return M;
}

/* A = J^T diag(w) J as CHOLMOD's lower triangle (stype -1), w = sys->k;
 * NULL when out of memory. */
static cholmod_sparse *cm__JtWJ(const cm_system_t *s, cholmod_common *cc) {
  size_t nnz = (size_t)s->Jp[s->nc];
  cholmod_sparse *Jt = cholmod_allocate_sparse((size_t)s->n, (size_t)s->nc, nnz,
                                               1, 1, 0, CHOLMOD_REAL, cc);
  if (!Jt)
    return NULL;
  int *p = Jt->p, *i = Jt->i;
  double *x = Jt->x;
  for (int r = 0; r <= s->nc; r++) /* J in CSR is J^T in CSC */
    p[r] = s->Jp[r];
  for (int r = 0; r < s->nc; r++) {
    double sw = sqrt(s->k[r]); /* J^T W^1/2 */
    for (int q = s->Jp[r]; q < s->Jp[r + 1]; q++)
      i[q] = s->Jj[q], x[q] = sw * s->Jx[q];
  }
  cholmod_sparse *A = cholmod_aat(Jt, NULL, 0, 1, cc); /* full pattern */
  cholmod_free_sparse(&Jt, cc);
  if (!A)
    return NULL;
  cholmod_sparse *L = cholmod_copy(A, -1, 1, cc); /* lower triangle */
  cholmod_free_sparse(&A, cc);
  return L;
}

int cm__op_definite(cm_context_t *ctx, const cm_system_t *sys, double sigma,
                    double deadline, int *definite) {
  *definite = 0;
  if (sys->n == 0) {
    *definite = 1;
    return CM_OK;
  }
  cholmod_common c, *cc = &c;
  cholmod_start(cc);
  cc->print = 0;
  cc->final_ll = 1;
  cc->quick_return_if_not_posdef = 1;
  int st = CM_OK;
  cholmod_sparse M = cm__op_M_view(sys);
  cholmod_sparse *K = cm__JtWJ(sys, cc);
  double alpha[2] = {sigma, 0}, beta[2] = {-1, 0};
  cholmod_sparse *A = K ? cholmod_add(&M, K, alpha, beta, 1, 1, cc) : NULL;
  cholmod_factor *L = A ? cholmod_analyze(A, cc) : NULL;
  /* the factorization cannot stop early: started only when its flops (cc->fl,
   * from the analysis) fit in what is left of the budget */
  if (L && deadline > 0 && cm__now() + cc->fl / CM__FACTOR_RATE > deadline) {
    *definite = -1;
  } else if (L) {
    cholmod_factorize(A, L, cc);
    *definite = cc->status == CHOLMOD_OK && L->minor == L->n;
  }
  if (!L || (cc->status < 0 && cc->status != CHOLMOD_NOT_POSDEF))
    st = CM__ERR(
        ctx, cc->status == CHOLMOD_OUT_OF_MEMORY ? CM_NOMEM : CM_NUMERIC, NULL,
        "CHOLMOD could not factor sigma M - J^T W J (status %d)", cc->status);
  cholmod_free_factor(&L, cc);
  cholmod_free_sparse(&A, cc);
  cholmod_free_sparse(&K, cc);
  cholmod_finish(cc);
  return st;
}
