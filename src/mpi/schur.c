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

#include <cblas.h>
#include <cholmod.h>
#include <lapacke.h>
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
  return end == e || *end || v < 0 || v > CM__MPI_SCHUR_MAX_CAP ? -1 : v;
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

/* One rank's matrices: its local A = sigma I (owned dofs) - B~_r^T B~_r
 * over its interior then interface dofs (lower triangle) and the dense
 * piece S_r (column-major nGr x nGr, lower triangle used). */
typedef struct {
  cholmod_common c;
  cholmod_triplet *t;  /* A's entries, interface diagonal included */
  cholmod_sparse *A;   /* n x n, n = nI + nGr, lower */
  cholmod_factor *L;   /* of A with the interface last, shifted by t */
  double *gdiag;       /* nGr: A's interface diagonal, unshifted */
  int *Cmember, *Perm; /* n: 0 interior, 1 interface; CAMD's order */
  double *Lg;          /* nGr x nGr: L's trailing block */
  double *G;           /* nGr x nGr: S_r */
} cm__schur_loc_t;

static void cm__schur_loc_free(cm__schur_loc_t *s) {
  cholmod_common *cc = &s->c;
  cholmod_free_triplet(&s->t, cc);
  cholmod_free_sparse(&s->A, cc);
  cholmod_free_factor(&s->L, cc);
  free(s->gdiag), free(s->Cmember), free(s->Perm), free(s->Lg), free(s->G);
  cholmod_finish(cc);
}

/* Entry (i, j) += x of the local A (local indices; i != j once). */
static void cm__schur_add(cholmod_triplet *t, int i, int j, double x) {
  int k = (int)t->nnz++;
  ((int *)t->i)[k] = i > j ? i : j, ((int *)t->j)[k] = i > j ? j : i;
  ((double *)t->x)[k] = x;
}

/* The local A = sigma I (owned dofs) - B~_r^T B~_r, its interface
 * diagonal into s->gdiag. */
static int cm__schur_assemble(cm_context_t *ctx, const cm__schur_plan_t *pl,
                              int nloc, const int *Bp, const int *Bj,
                              const double *Bx, const double *rs, double sigma,
                              cm__schur_loc_t *s) {
  int n = pl->nI + pl->nGr;
  size_t cap = 2 * (size_t)n + 1; /* the diagonal twice, then the rows */
  for (int r = 0; r < nloc; r++) {
    size_t m = (size_t)(Bp[r + 1] - Bp[r]);
    cap += m * (m + 1) / 2;
  }
  cholmod_common *cc = &s->c;
  s->t =
      cholmod_allocate_triplet((size_t)n, (size_t)n, cap, -1, CHOLMOD_REAL, cc);
  s->gdiag = calloc((size_t)pl->nGr + 1, sizeof(double));
  s->G = calloc((size_t)pl->nGr * (size_t)pl->nGr + 1, sizeof(double));
  if (!s->t || !s->gdiag || !s->G)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (Schur complement)");
  for (int g = pl->nI; g < n; g++) /* the interface diagonal, held */
    cm__schur_add(s->t, g, g, 0.0);
  for (int d = 0; d < pl->nown; d++) /* sigma I on the owned dofs */
    if (pl->col[d] >= 0)
      cm__schur_add(s->t, pl->col[d], pl->col[d], sigma);
  for (int r = 0; r < nloc; r++) { /* - b~_r^T b~_r, b~_r = rs_r B_r */
    double w = rs ? rs[r] * rs[r] : 1.0;
    for (int e = Bp[r]; w > 0 && e < Bp[r + 1]; e++)
      for (int f = Bp[r]; f <= e; f++)
        cm__schur_add(s->t, pl->col[Bj[e]], pl->col[Bj[f]], -w * Bx[e] * Bx[f]);
  }
  s->A = cholmod_triplet_to_sparse(s->t, 0, cc);
  cholmod_free_triplet(&s->t, cc);
  if (!s->A)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (Schur complement)");
  const int *Ap = s->A->p, *Ai = s->A->i;
  const double *Ax = s->A->x;
  for (int j = pl->nI; j < n; j++) /* columns sorted: the diagonal first */
    for (int p = Ap[j]; p < Ap[j + 1]; p++)
      if (Ai[p] == j)
        s->gdiag[j - pl->nI] = Ax[p];
  return CM_OK;
}

/* The interface diagonal of s->A set to gdiag + t. */
static void cm__schur_shift(const cm__schur_plan_t *pl, cm__schur_loc_t *s,
                            double t) {
  const int *Ap = s->A->p, *Ai = s->A->i;
  double *Ax = s->A->x;
  for (int j = pl->nI; j < pl->nI + pl->nGr; j++)
    for (int p = Ap[j]; p < Ap[j + 1]; p++)
      if (Ai[p] == j)
        Ax[p] = s->gdiag[j - pl->nI] + t;
}

/* S_r = A_GG - A_GI A_II^-1 A_IG from the factor of A with the interface
 * last and its diagonal shifted by t: L_GG L_GG^T - t I. L is consumed. */
static int cm__schur_piece(cm_context_t *ctx, const cm__schur_plan_t *pl,
                           cm__schur_loc_t *s, double t) {
  cholmod_common *cc = &s->c;
  int nI = pl->nI, ng = pl->nGr;
  cholmod_sparse *Ls = cholmod_factor_to_sparse(s->L, cc);
  s->Lg = Ls ? calloc((size_t)ng * (size_t)ng + 1, sizeof(double)) : NULL;
  if (!Ls || !s->Lg) {
    cholmod_free_sparse(&Ls, cc);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (Schur complement)");
  }
  const int *Lp = Ls->p, *Li = Ls->i;
  const double *Lx = Ls->x;
  for (int j = nI; j < nI + ng; j++) /* trailing columns: rows >= nI */
    for (int p = Lp[j]; p < Lp[j + 1]; p++)
      s->Lg[(size_t)(Li[p] - nI) + (size_t)(j - nI) * (size_t)ng] = Lx[p];
  cholmod_free_sparse(&Ls, cc);
  /* G = Lg Lg^T (lower), in the factor's order, then back to the plan's */
  double *W = s->Lg, *G = s->G;
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, ng, ng, 1.0, W, ng, 0.0,
              G, ng);
  memcpy(W, G, sizeof(double) * (size_t)ng * (size_t)ng);
  memset(G, 0, sizeof(double) * (size_t)ng * (size_t)ng);
  for (int j = 0; j < ng; j++)
    for (int i = j; i < ng; i++) {
      int a = s->Perm[nI + i] - nI, b = s->Perm[nI + j] - nI;
      double x = W[(size_t)i + (size_t)j * ng] - (i == j ? t : 0.0);
      G[a > b ? a + (size_t)b * ng : b + (size_t)a * ng] = x;
    }
  return CM_OK;
}

/* The dense S_r of a rank without interior dofs: its A_GG. */
static void cm__schur_dense(const cm__schur_plan_t *pl, cm__schur_loc_t *s) {
  const int *Ap = s->A->p, *Ai = s->A->i;
  const double *Ax = s->A->x;
  int ng = pl->nGr;
  for (int j = 0; j < ng; j++)
    for (int p = Ap[j]; p < Ap[j + 1]; p++)
      s->G[(size_t)Ai[p] + (size_t)j * ng] += Ax[p];
}

/* Factors the local A with the interior first (CAMD) and the interface
 * last, its interface diagonal shifted by t = 4, 64, ... until the factor
 * completes: *pd = 0 when the interior block is not positive definite
 * (or no shift up to 4 16^7 lets the factor complete: not certified, the
 * safe side); else S_r into s->G. */
static int cm__schur_local(cm_context_t *ctx, const cm__schur_plan_t *pl,
                           cm__schur_loc_t *s, int *pd) {
  cholmod_common *cc = &s->c;
  int n = pl->nI + pl->nGr;
  *pd = 1;
  if (pl->nI == 0) {
    cm__schur_dense(pl, s);
    return CM_OK;
  }
  s->Cmember = malloc(sizeof(int) * ((size_t)n + 1));
  s->Perm = malloc(sizeof(int) * ((size_t)n + 1));
  if (!s->Cmember || !s->Perm)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (Schur complement)");
  for (int i = 0; i < n; i++)
    s->Cmember[i] = i >= pl->nI;
  if (cholmod_camd(s->A, NULL, 0, s->Cmember, s->Perm, cc)) {
    cc->nmethods = 1, cc->method[0].ordering = CHOLMOD_GIVEN;
    cc->postorder = 0; /* keep the interface last */
    s->L = cholmod_analyze_p(s->A, s->Perm, NULL, 0, cc);
  }
  double t = 4.0;
  for (int k = 0; s->L && k < 8; k++, t *= 16) {
    cm__schur_shift(pl, s, t);
    cholmod_factorize(s->A, s->L, cc);
    if (cc->status < 0 && cc->status != CHOLMOD_NOT_POSDEF)
      break;
    if (s->L->minor == s->L->n || s->L->minor < (size_t)pl->nI)
      break; /* done, or the interior is not positive definite */
  }
  if (!s->L || (cc->status < 0 && cc->status != CHOLMOD_NOT_POSDEF))
    return CM__ERR(
        ctx, cc->status == CHOLMOD_OUT_OF_MEMORY ? CM_NOMEM : CM_NUMERIC, NULL,
        "CHOLMOD could not factor a rank's part of "
        "4 M - h^2 K - 2 h C (status %d)",
        cc->status);
  *pd = s->L->minor == s->L->n;
  return *pd && pl->nGr > 0 ? cm__schur_piece(ctx, pl, s, t) : CM_OK;
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
  if (why == 0) /* the Gershgorin start reached the damped limit */
    return "certified by Gershgorin bounds, which reach the damped limit of "
           "a component spread over MPI ranks";
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
