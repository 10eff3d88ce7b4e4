/* schur.c: the certified damped step of a component cut by the partition
 * (docs/distributed.md, "The damped step"): whether A = sigma I - B~^T B~
 * (mass-normalised 4 M - h^2 K - 2 h C, congruent to it) is positive
 * definite, exactly, without a distributed factorization.
 *
 * The dofs split into each rank's interior (its owned bodies that no other
 * rank's rows touch and that share no row with a halo body) and the
 * interface G. No row couples the interiors of two ranks, so A_II is block
 * diagonal by rank and A is positive definite iff every A_II,r is (CHOLMOD,
 * on its rank) and the Schur complement
 *   S = sum_r (A_GG^(r) - A_GI,r A_II,r^-1 A_IG,r)
 * is (LAPACK's dense Cholesky on rank 0 of the component's ranks). Each
 * rank's piece is packed over the interface dofs it touches and summed on
 * rank 0 in rank order: the same bits for the same number of ranks.
 * Not for the plan (span.c, which has the halo) or for the bounds. */
#include "mpi_internal.h"

#include "operator/operator_internal.h"

#include <cholmod.h>
#include <lapacke.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_alloc.h" /* last: malloc, calloc, realloc tracked */

void cm__schur_plan_free(cm__schur_plan_t *pl) {
  free(pl->col), free(pl->gidx);
  pl->col = NULL, pl->gidx = NULL;
}

long cm__mpi_schur_cap(void) {
  const char *e = getenv("CMODES_MPI_SCHUR_MAX_DOFS");
  if (!e)
    return CM__MPI_SCHUR_MAX_DOFS;
  char *end = NULL;
  long v = strtol(e, &end, 10);
  return end == e || *end || v < 0 || v > INT_MAX ? -1 : v;
}

int cm__mpi_schur_probes(double *h, int max) {
  const char *e = getenv("CMODES_MPI_SCHUR_PROBE");
  int n = 0;
  for (const char *p = e; p && *p && n < max; n++) {
    char *end = NULL;
    h[n] = strtod(p, &end);
    if (end == p || !(h[n] > 0) || !isfinite(h[n]) || (*end && *end != ','))
      return -1;
    p = *end ? end + 1 : end;
  }
  return n;
}

/* One rank's matrices: A_II (lower triangle), A_IG and the dense piece
 * A_GG^(r) (column-major nGr x nGr, lower triangle used). */
typedef struct {
  cholmod_common c;
  cholmod_triplet *tii, *tig; /* A_II lower, A_IG: triplets */
  cholmod_sparse *Aii, *Aig;
  cholmod_factor *L;
  double *G; /* nGr x nGr */
} cm__schur_loc_t;

static void cm__schur_loc_free(cm__schur_loc_t *s) {
  cholmod_common *cc = &s->c;
  cholmod_free_triplet(&s->tii, cc), cholmod_free_triplet(&s->tig, cc);
  cholmod_free_sparse(&s->Aii, cc), cholmod_free_sparse(&s->Aig, cc);
  cholmod_free_factor(&s->L, cc);
  free(s->G);
  cholmod_finish(cc);
}

/* Entry (i, j) += x of the local A (local indices, i != j counted once). */
static void cm__schur_add(const cm__schur_plan_t *pl, cm__schur_loc_t *s, int i,
                          int j, double x) {
  int nI = pl->nI;
  if (i < j) { /* lower triangle: i >= j */
    int t = i;
    i = j, j = t;
  }
  cholmod_triplet *t = NULL;
  int ti = 0, tj = 0;
  if (i < nI) { /* both interior */
    t = s->tii, ti = i, tj = j;
  } else if (j >= nI) { /* both interface */
    s->G[(size_t)(i - nI) + (size_t)(j - nI) * (size_t)pl->nGr] += x;
    return;
  } else { /* row interior j, column interface i */
    t = s->tig, ti = j, tj = i - nI;
  }
  int k = (int)t->nnz++;
  ((int *)t->i)[k] = ti, ((int *)t->j)[k] = tj;
  ((double *)t->x)[k] = x;
}

/* The local A = sigma I (owned dofs) - B~_r^T B~_r into s's pieces. */
static int cm__schur_assemble(cm_context_t *ctx, const cm__schur_plan_t *pl,
                              int nloc, const int *Bp, const int *Bj,
                              const double *Bx, const double *rs, double sigma,
                              cm__schur_loc_t *s) {
  size_t cap = (size_t)pl->nI + 1;
  for (int r = 0; r < nloc; r++) {
    size_t m = (size_t)(Bp[r + 1] - Bp[r]);
    cap += m * (m + 1) / 2;
  }
  cholmod_common *cc = &s->c;
  s->tii = cholmod_allocate_triplet((size_t)pl->nI, (size_t)pl->nI, cap, -1,
                                    CHOLMOD_REAL, cc);
  s->tig = cholmod_allocate_triplet((size_t)pl->nI, (size_t)pl->nGr, cap, 0,
                                    CHOLMOD_REAL, cc);
  s->G = calloc((size_t)pl->nGr * (size_t)pl->nGr + 1, sizeof(double));
  if (!s->tii || !s->tig || !s->G)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (Schur complement)");
  for (int d = 0; d < pl->nown; d++) /* sigma I on the owned dofs */
    if (pl->col[d] >= 0)
      cm__schur_add(pl, s, pl->col[d], pl->col[d], sigma);
  for (int r = 0; r < nloc; r++) { /* - b~_r^T b~_r, b~_r = rs_r B_r */
    double w = rs ? rs[r] * rs[r] : 1.0;
    for (int e = Bp[r]; w > 0 && e < Bp[r + 1]; e++)
      for (int f = Bp[r]; f <= e; f++)
        cm__schur_add(pl, s, pl->col[Bj[e]], pl->col[Bj[f]],
                      -w * Bx[e] * Bx[f]);
  }
  s->Aii = cholmod_triplet_to_sparse(s->tii, 0, cc);
  s->Aig = cholmod_triplet_to_sparse(s->tig, 0, cc);
  if (!s->Aii || !s->Aig)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (Schur complement)");
  return CM_OK;
}

/* Factors A_II (*pd = 0 when it is not positive definite) and subtracts
 * A_GI A_II^-1 A_IG = Y^T Y, Y = L^-1 P A_IG, from the dense piece. */
static int cm__schur_local(cm_context_t *ctx, const cm__schur_plan_t *pl,
                           cm__schur_loc_t *s, int *pd) {
  cholmod_common *cc = &s->c;
  *pd = 1;
  if (pl->nI == 0)
    return CM_OK;
  s->L = cholmod_analyze(s->Aii, cc);
  if (s->L)
    cholmod_factorize(s->Aii, s->L, cc);
  if (!s->L || (cc->status < 0 && cc->status != CHOLMOD_NOT_POSDEF))
    return CM__ERR(
        ctx, cc->status == CHOLMOD_OUT_OF_MEMORY ? CM_NOMEM : CM_NUMERIC, NULL,
        "CHOLMOD could not factor a rank's interior block "
        "of 4 M - h^2 K - 2 h C (status %d)",
        cc->status);
  *pd = cc->status == CHOLMOD_OK && s->L->minor == s->L->n;
  if (!*pd || pl->nGr == 0)
    return CM_OK;
  cholmod_sparse *Y1 = cholmod_spsolve(CHOLMOD_P, s->L, s->Aig, cc);
  cholmod_sparse *Y = Y1 ? cholmod_spsolve(CHOLMOD_L, s->L, Y1, cc) : NULL;
  cholmod_free_sparse(&Y1, cc);
  cholmod_sparse *Yt = Y ? cholmod_transpose(Y, 1, cc) : NULL;
  cholmod_free_sparse(&Y, cc);
  cholmod_sparse *C = Yt ? cholmod_aat(Yt, NULL, 0, 1, cc) : NULL; /* Y^T Y */
  cholmod_free_sparse(&Yt, cc);
  if (!C)
    return CM__ERR(
        ctx, cc->status == CHOLMOD_OUT_OF_MEMORY ? CM_NOMEM : CM_NUMERIC, NULL,
        "CHOLMOD could not form a rank's Schur complement "
        "(status %d)",
        cc->status);
  const int *Cp = C->p, *Ci = C->i;
  const double *Cx = C->x;
  for (int j = 0; j < pl->nGr; j++)
    for (int p = Cp[j]; p < Cp[j + 1]; p++)
      if (Ci[p] >= j)
        s->G[(size_t)Ci[p] + (size_t)j * (size_t)pl->nGr] -= Cx[p];
  cholmod_free_sparse(&C, cc);
  return CM_OK;
}

/* Rank 0 of cc: the pieces summed into the dense S (nG x nG) in rank
 * order and its Cholesky; *ok on every rank. Buffers allocated and agreed
 * before the messages. Collective on cc. */
static int cm__schur_reduce(cm_context_t *ctx, const cm__schur_plan_t *pl,
                            const double *G, MPI_Comm cc, int *ok) {
  int q, P, st = CM_OK;
  MPI_Comm_rank(cc, &q);
  MPI_Comm_size(cc, &P);
  int most = 0;
  MPI_Allreduce(&pl->nGr, &most, 1, MPI_INT, MPI_MAX, cc);
  int *cnt = q == 0 ? malloc(sizeof(int) * (size_t)P) : NULL;
  size_t ng = (size_t)pl->nG;
  double *S = q == 0 ? calloc(ng * ng + 1, sizeof(double)) : NULL;
  size_t nb = q == 0 ? (size_t)most : 0; /* rank 0 receives the pieces */
  double *buf = malloc(sizeof(double) * (nb * nb + 1));
  long long *idx = malloc(sizeof(long long) * (nb + 1));
  if (!buf || !idx || (q == 0 && (!cnt || !S)))
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (Schur complement)");
  st = cm__mpi_agree(ctx, st, cc);
  if (!st) {
    MPI_Gather(&pl->nGr, 1, MPI_INT, cnt, 1, MPI_INT, 0, cc);
    if (q > 0 && pl->nGr > 0) {
      MPI_Send(pl->gidx, pl->nGr, MPI_LONG_LONG, 0, 81, cc);
      MPI_Send(G, pl->nGr * pl->nGr, MPI_DOUBLE, 0, 82, cc);
    }
    for (int p = 0; q == 0 && p < P; p++) { /* in rank order */
      int n = cnt[p];
      const long long *gi = pl->gidx;
      const double *x = G;
      if (p > 0 && n > 0) {
        MPI_Recv(idx, n, MPI_LONG_LONG, p, 81, cc, MPI_STATUS_IGNORE);
        MPI_Recv(buf, n * n, MPI_DOUBLE, p, 82, cc, MPI_STATUS_IGNORE);
        gi = idx, x = buf;
      }
      for (int j = 0; j < n; j++) /* lower triangle of the piece */
        for (int i = j; i < n; i++) {
          size_t a = (size_t)gi[i], b = (size_t)gi[j];
          if (a < b)
            S[b + a * ng] += x[i + (size_t)j * n];
          else
            S[a + b * ng] += x[i + (size_t)j * n];
        }
    }
    if (q == 0) /* S = L L^T: positive definite iff info == 0 */
      *ok = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)ng, S,
                           (lapack_int)(ng > 0 ? ng : 1)) == 0;
    MPI_Bcast(ok, 1, MPI_INT, 0, cc);
  }
  free(cnt), free(S), free(buf), free(idx);
  return st;
}

int cm__mpi_schur_definite(cm_context_t *ctx, const cm__schur_plan_t *pl,
                           int nloc, const int *Bp, const int *Bj,
                           const double *Bx, const double *rs, double sigma,
                           MPI_Comm cc, int *ok) {
  *ok = 0;
  cm__schur_loc_t s;
  memset(&s, 0, sizeof s);
  cholmod_start(&s.c);
  s.c.print = 0;
  s.c.final_ll = 1;
  s.c.quick_return_if_not_posdef = 1;
  int pd = 1;
  int st = cm__schur_assemble(ctx, pl, nloc, Bp, Bj, Bx, rs, sigma, &s);
  if (!st)
    st = cm__schur_local(ctx, pl, &s, &pd);
  st = cm__mpi_agree(ctx, st, cc);
  int all = 0;
  if (!st) /* every A_II,r positive definite? */
    MPI_Allreduce(&pd, &all, 1, MPI_INT, MPI_MIN, cc);
  if (!st && all)
    st = cm__schur_reduce(ctx, pl, s.G, cc, ok);
  cm__schur_loc_free(&s);
  return st;
}

const char *cm__mpi_damped_reason(int kind) {
  int why = kind & ~3, how = kind & 3;
  if (how == CM__CERT_FACTOR)
    return NULL;
  if (how == CM__CERT_SCHUR)
    return "certified by factoring 4 M - h^2 K - 2 h C, as the serial cmodes "
           "does: a component spread over MPI ranks by a Cholesky "
           "factorization of each rank's interior and of the Schur "
           "complement on the dofs of the bodies the ranks share";
  if (why & CM__CERT_OVER_DOFS)
    return how == CM__CERT_CW
               ? "certified by a Collatz-Wielandt bound, as the serial "
                 "cmodes does above 300,000 dofs (not factored)"
               : "certified by Gershgorin bounds: above 300,000 dofs "
                 "4 M - h^2 K - 2 h C is not factored (as in the serial "
                 "cmodes) and the Collatz-Wielandt bound did not certify a "
                 "step above them, so the certified step can be below the "
                 "serial one";
  if (why & CM__CERT_OVER_BUDGET)
    return how == CM__CERT_CW
               ? "certified by a Collatz-Wielandt bound: the Schur "
                 "complement of a component spread over MPI ranks would not "
                 "fit in the time budget (--max-seconds), so it was not "
                 "factored and the certified step can be below the serial "
                 "one"
               : "certified by Gershgorin bounds: the Schur complement of a "
                 "component spread over MPI ranks would not fit in the time "
                 "budget (--max-seconds), so it was not factored and the "
                 "certified step can be below the serial one";
  return how == CM__CERT_CW
             ? "certified by a Collatz-Wielandt bound: a component spread "
               "over MPI ranks that share more dofs than the Schur "
               "complement's cap (docs/distributed.md) is not factored (the "
               "serial cmodes factors 4 M - h^2 K - 2 h C up to 300,000 "
               "dofs), so the certified step can be below the serial one"
             : "certified by Gershgorin bounds: a component spread over MPI "
               "ranks that share more dofs than the Schur complement's cap "
               "(docs/distributed.md) is not factored (the serial cmodes "
               "factors 4 M - h^2 K - 2 h C up to 300,000 dofs) and its "
               "Collatz-Wielandt bound did not certify a step above them, so "
               "the certified step can be below the serial one";
}
