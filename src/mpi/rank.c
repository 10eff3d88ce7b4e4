/* rank.c: the rank of J of a component cut by the partition (docs/
 * distributed.md): when it has at most --rank-max-rows rows, its bodies and
 * contacts are gathered to the first rank that holds it, which assembles
 * them alone and ranks J with the serial routine (src/system/rank.c) in the
 * serial's own row and column order, so that the answer is the serial one.
 * Not for the components on one rank (their serial analysis ranks them). */
#include "mpi_internal.h"

#include "core/internal.h"

#include "mpi_alloc.h" /* last: malloc, calloc, realloc tracked */
#include <stdlib.h>
#include <string.h>

/* The gathered component on cc's rank 0: bodies and contacts in the
 * file's order. */
typedef struct {
  int64_t cb0, cb1, k0, k1;     /* the component's bodies and contacts */
  int nb, nc;                   /* this rank's part of them */
  cm__part_body_t *bodies;      /* rank 0: all of them (cb1 - cb0) */
  cm__part_contact_t *contacts; /* rank 0: all (k1 - k0) */
  int *cnt, *dsp;               /* rank 0: per member, records */
} cm__gath_t;

static void cm__gath_free(cm__gath_t *g) {
  free(g->bodies), free(g->contacts), free(g->cnt), free(g->dsp);
}

/* Rows of the component on this rank and its ranges. */
static long long cm__cut_rows(const cm__mpi_part_t *P, int comp,
                              cm__gath_t *g) {
  const uint64_t *ct = P->f->comp;
  g->cb0 = (int64_t)ct[2 * comp], g->cb1 = (int64_t)ct[2 * comp + 2];
  g->k0 = (int64_t)ct[2 * comp + 1], g->k1 = (int64_t)ct[2 * comp + 3];
  int64_t b0 = g->cb0 > P->b0 ? g->cb0 : P->b0;
  int64_t b1 = g->cb1 < P->b1 ? g->cb1 : P->b1;
  int64_t c0 = g->k0 > P->c0 ? g->k0 : P->c0;
  int64_t c1 = g->k1 < P->c1 ? g->k1 : P->c1;
  g->nb = b1 > b0 ? (int)(b1 - b0) : 0;
  g->nc = c1 > c0 ? (int)(c1 - c0) : 0;
  long long rows = 0;
  for (int64_t k = c0; k < c1; k++)
    rows += P->contacts[k - P->c0].stiffness_t > 0 ? P->dim : 1;
  return rows;
}

/* One gather of this rank's n records of type t from base into all. */
static void cm__gath_one(cm__gath_t *g, MPI_Comm cc, int q, MPI_Datatype t,
                         const void *base, int n, void *all) {
  int np;
  MPI_Comm_size(cc, &np);
  MPI_Gather(&n, 1, MPI_INT, g->cnt, 1, MPI_INT, 0, cc);
  for (int i = 0; q == 0 && i < np; i++)
    g->dsp[i] = i ? g->dsp[i - 1] + g->cnt[i - 1] : 0;
  MPI_Gatherv(base, n, t, all, g->cnt, g->dsp, t, 0, cc);
}

/* The component's bodies and contacts onto cc's rank 0, in the file's
 * order (the ranks of cc hold consecutive ranges). Collective on cc. */
static int cm__gather_comp(cm_context_t *ctx, const cm__mpi_part_t *P,
                           MPI_Comm cc, int q, cm__gath_t *g) {
  int np, st = CM_OK;
  MPI_Comm_size(cc, &np);
  if (q == 0) {
    g->bodies = malloc(sizeof(cm__part_body_t) * (size_t)(g->cb1 - g->cb0 + 1));
    g->contacts =
        malloc(sizeof(cm__part_contact_t) * (size_t)(g->k1 - g->k0 + 1));
    g->cnt = malloc(sizeof(int) * (size_t)np);
    g->dsp = malloc(sizeof(int) * (size_t)np);
    if (!g->bodies || !g->contacts || !g->cnt || !g->dsp)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (the rank of J)");
  }
  st = cm__mpi_agree(ctx, st, cc);
  if (st)
    return st;
  MPI_Datatype tb, tc;
  MPI_Type_contiguous((int)sizeof(cm__part_body_t), MPI_BYTE, &tb);
  MPI_Type_contiguous((int)sizeof(cm__part_contact_t), MPI_BYTE, &tc);
  MPI_Type_commit(&tb);
  MPI_Type_commit(&tc);
  int64_t b0 = g->cb0 > P->b0 ? g->cb0 : P->b0;
  int64_t c0 = g->k0 > P->c0 ? g->k0 : P->c0;
  cm__gath_one(g, cc, q, tb, P->bodies + (b0 - P->b0), g->nb, g->bodies);
  cm__gath_one(g, cc, q, tc, P->contacts + (c0 - P->c0), g->nc, g->contacts);
  MPI_Type_free(&tb);
  MPI_Type_free(&tc);
  return CM_OK;
}

/* The gathered component as a scene: body i is position cb0 + i, the
 * contacts in the file's order (a fixed body or the world: CM_WORLD). */
static int cm__comp_scene(cm_context_t *ctx, const cm__gath_t *g,
                          cm_scene_t *sub) {
  int st = CM_OK;
  for (int64_t i = 0; i < g->cb1 - g->cb0 && !st; i++) {
    cm_body_t b = cm__body_from(&g->bodies[i]);
    st = cm_scene_add_body(ctx, sub, &b, NULL) < 0 ? ctx->status : CM_OK;
  }
  for (int64_t k = 0; k < g->k1 - g->k0 && !st; k++) {
    const cm__part_contact_t *c = &g->contacts[k];
    int64_t side[2] = {c->a, c->b};
    int sl[2];
    for (int s = 0; s < 2; s++)
      sl[s] = side[s] >= g->cb0 && side[s] < g->cb1 ? (int)(side[s] - g->cb0)
                                                    : CM_WORLD;
    cm_contact_t ct = cm__contact_to(c, sl[0], sl[1]);
    st = cm_scene_add_contact(ctx, sub, &ct, NULL) < 0 ? ctx->status : CM_OK;
  }
  return st;
}

/* J of sys (one component) in the serial's order into J: rows by the
 * scene's contacts (the file's order, normal then tangents), columns by
 * body (the file's order) then dof, each row's columns ascending. */
static int cm__serial_order(const cm_system_t *sys, cm_system_t *J) {
  int n = sys->n, nc = sys->nc, nb = sys->nbodies;
  int *first = malloc(sizeof(int) * ((size_t)nb + 1));
  int *start = calloc((size_t)nb + 1, sizeof(int));
  J->Jp = malloc(sizeof(int) * ((size_t)nc + 1));
  J->Jj = malloc(sizeof(int) * ((size_t)sys->Jp[nc] + 1));
  J->Jx = malloc(sizeof(double) * ((size_t)sys->Jp[nc] + 1));
  int ok = first && start && J->Jp && J->Jj && J->Jx;
  for (int j = n - 1; ok && j >= 0; j--) /* each body's first column */
    first[sys->col_body[j]] = j;
  for (int j = 0; ok && j < n; j++)
    start[sys->col_body[j] + 1]++;
  for (int b = 0; ok && b < nb; b++)
    start[b + 1] += start[b];
  int e = 0, r = 0;
  for (int c = 0; ok && c < sys->ncontacts; c++) {
    int r0 = sys->contact_row[c];
    for (; r0 < nc && sys->row_contact[r0] == c; r0++, r++) {
      J->Jp[r] = e;
      for (int q = sys->Jp[r0]; q < sys->Jp[r0 + 1]; q++, e++) {
        int b = sys->col_body[sys->Jj[q]],
            col = start[b] + sys->Jj[q] - first[b];
        int t = e; /* insertion: the row's columns ascending */
        for (; t > J->Jp[r] && J->Jj[t - 1] > col; t--)
          J->Jj[t] = J->Jj[t - 1], J->Jx[t] = J->Jx[t - 1];
        J->Jj[t] = col, J->Jx[t] = sys->Jx[q];
      }
    }
  }
  if (ok)
    J->Jp[nc] = e;
  J->nc = nc, J->n = n, J->ncomp = 1;
  free(first), free(start);
  return ok ? CM_OK : CM_NOMEM;
}

/* cc's rank 0: the rank of the gathered component's J (-2: past the
 * deadline, a cm__now() time) and what its QR dropped (*near, as
 * cm__system_rank's). */
static int cm__rank_gathered(cm_context_t *ctx, const cm__gath_t *g, int dim,
                             double deadline, int *rank, double *near) {
  cm_scene_t *sub = cm_scene_create(dim);
  cm_system_t *sys = NULL, J;
  memset(&J, 0, sizeof J);
  int comp_row[2] = {0, 0}, comp_col[2] = {0, 0}, crank = -1;
  long total = -1;
  int st = sub ? cm__comp_scene(ctx, g, sub)
               : CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  if (!st)
    st = cm_system_assemble(ctx, sub, &sys);
  if (!st && sys->ncomp != 1) /* a component of the file is one */
    st = CM__ERR(ctx, CM_PARSE, NULL,
                 "component of %lld bodies: %d components when assembled "
                 "alone (the file is not consistent)",
                 (long long)(g->cb1 - g->cb0), sys->ncomp);
  if (!st && cm__serial_order(sys, &J))
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (the rank of J)");
  if (!st) {
    comp_row[1] = J.nc, comp_col[1] = J.n;
    J.comp_row = comp_row, J.comp_col = comp_col;
    st = cm__system_rank(ctx, &J, ctx->threads > 0 ? ctx->threads : 1, 0,
                         deadline, &crank, &total, near);
  }
  *rank = st ? -1 : total == -2 ? -2 : crank;
  free(J.Jp), free(J.Jj), free(J.Jx);
  cm_system_destroy(&sys);
  cm_scene_destroy(&sub);
  return st;
}

int cm__mpi_cut_rank(cm_context_t *ctx, const cm__mpi_part_t *P, int comp,
                     MPI_Comm cc, int max_rows, double deadline, int *rank,
                     double *rows, double *ndofs, double *near) {
  int q;
  MPI_Comm_rank(cc, &q);
  cm__gath_t g;
  memset(&g, 0, sizeof g);
  long long mine = cm__cut_rows(P, comp, &g), m = 0;
  MPI_Allreduce(&mine, &m, 1, MPI_LONG_LONG, MPI_SUM, cc);
  *rows = (double)m, *ndofs = (double)(g.cb1 - g.cb0) * P->nd;
  *rank = -1;
  if (max_rows > 0 && m > max_rows) /* as the serial: not ranked */
    return CM_OK;
  int late = deadline > 0 && MPI_Wtime() > deadline, any = 0;
  MPI_Allreduce(&late, &any, 1, MPI_INT, MPI_MAX, cc);
  if (any) { /* the solve budget ran out, as the serial's -2 */
    *rank = -2;
    return CM_OK;
  }
  int st = cm__gather_comp(ctx, P, cc, q, &g);
  if (!st && q == 0) {
    double end = deadline > 0 ? cm__now() + (deadline - MPI_Wtime()) : 0;
    st = cm__rank_gathered(ctx, &g, P->dim, end, rank, near);
  }
  cm__gath_free(&g);
  st = cm__mpi_agree(ctx, st, cc);
  MPI_Bcast(rank, 1, MPI_INT, 0, cc);
  MPI_Bcast(near, 1, MPI_DOUBLE, 0, cc);
  return st;
}
