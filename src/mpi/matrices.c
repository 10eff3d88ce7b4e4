/* matrices.c: `cmodes-mpi analyze --matrices` (docs/distributed.md, "Matrix
 * systems"). Rank 0 reads and checks the system with the serial reader
 * (cm_system_read_manifest / _matrices) and holds it whole; it splits it by
 * whole components (a matrix system has no geometry to cut), contiguous in
 * component order and balanced by nonzeros, and sends each rank its
 * components' rows, dofs, J, M and k in the input's order. Each rank builds
 * its sub-system with cm_system_from_matrices (the same components, rows and
 * columns in the same order as the whole system's: components are numbered
 * by their first row, columns by (component, mass block, dof)), analyses it
 * with the serial pipeline and returns records in the whole system's
 * indices (and every component's omega_max, for the ties); rank 0 merges
 * and names them as for a scene (main.c). --vectors: the ranks send their
 * modes' shapes over their components, rank 0 writes the serial file.
 * Not for scenes (main.c, span.c). */
#include "mpi_internal.h"

#include "analyze/analyze_internal.h"
#include "analyze/fields.h"
#include "cli/cli.h"

#include "mpi_alloc.h" /* last: malloc, calloc, realloc tracked */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- one rank's part ------------------------------------------ */

/* The header of a rank's part: its components [c0, c1), rows m, dofs n,
 * nonzeros of J and of M, the iteratively solved components of the whole
 * system (the probabilistic bound's union), its first row in the whole
 * system's (component) order. */
enum { H_C0, H_C1, H_M, H_N, H_NJ, H_NM, H_NITER, H_R0, H_LEN };

/* A rank's components as matrices in the input's order (rows and dofs by
 * ascending index of the whole input; pointers into iv and dv, the two
 * messages). */
typedef struct {
  int h[H_LEN];
  int *iv;             /* grow, gdof, Jp, Jj, Mp, Mi */
  double *dv;          /* Jx, k, Mx */
  int *grow, *gdof;    /* m, n: the input's row and dof of each */
  int *Jp, *Jj;        /* J (CSR, m x n) */
  int *Mp, *Mi;        /* M (lower CSC, n x n) */
  double *Jx, *k, *Mx; /* values of J, the rows' stiffness, values of M */
  size_t ni, nd;       /* ints in iv, doubles in dv */
} cm__mat_part_t;

/* Sizes of p's messages for header h, and its arrays laid over iv and
 * dv. */
static void cm__mat_part_sizes(cm__mat_part_t *p, const int *h) {
  memcpy(p->h, h, sizeof p->h);
  size_t m = (size_t)h[H_M], n = (size_t)h[H_N];
  size_t nj = (size_t)h[H_NJ], nm = (size_t)h[H_NM];
  p->ni = m + n + (m + 1) + nj + (n + 1) + nm;
  p->nd = nj + m + nm;
}

static void cm__mat_part_view(cm__mat_part_t *p, int *iv, double *dv) {
  size_t m = (size_t)p->h[H_M], n = (size_t)p->h[H_N];
  size_t nj = (size_t)p->h[H_NJ];
  p->iv = iv, p->dv = dv;
  p->grow = p->iv, p->gdof = p->grow + m, p->Jp = p->gdof + n;
  p->Jj = p->Jp + m + 1, p->Mp = p->Jj + nj, p->Mi = p->Mp + n + 1;
  p->Jx = p->dv, p->k = p->Jx + nj, p->Mx = p->k + m;
}

static void cm__mat_part_free(cm__mat_part_t *p) {
  free(p->iv), free(p->dv);
  p->iv = NULL, p->dv = NULL;
}

/* Allocates p for header h (CM_LIMIT past one message's int count). */
static int cm__mat_part_alloc(cm_context_t *ctx, const int *h,
                              cm__mat_part_t *p) {
  cm__mat_part_sizes(p, h);
  if (p->ni > INT_MAX || p->nd > INT_MAX)
    return CM__ERR(ctx, CM_LIMIT, NULL,
                   "a rank's part of the matrix system (%zu indices) is "
                   "over one MPI message; run on more ranks",
                   p->ni);
  int *iv = malloc(sizeof(int) * (p->ni + 1));
  double *dv = malloc(sizeof(double) * (p->nd + 1));
  cm__mat_part_view(p, iv, dv);
  if (!iv || !dv)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (matrix part)");
  return CM_OK;
}

/* Header of components [c0, c1) of G. */
static void cm__mat_header(const cm_system_t *G, int c0, int c1, int niter,
                           int *h) {
  int r0 = G->comp_row[c0], r1 = G->comp_row[c1];
  int k0 = G->comp_col[c0], k1 = G->comp_col[c1];
  h[H_C0] = c0, h[H_C1] = c1, h[H_M] = r1 - r0, h[H_N] = k1 - k0;
  h[H_NJ] = G->Jp[r1] - G->Jp[r0], h[H_NM] = G->Mp[k1] - G->Mp[k0];
  h[H_NITER] = niter, h[H_R0] = r0;
}

/* p (allocated for its header) filled from G's components: rows and dofs
 * in the input's order, J and M over them (M's entries to the lower
 * triangle). ord: work, max(m, n) + 1 entries; lcol: n + 1. */
static void cm__mat_fill(const cm_system_t *G, cm__mat_part_t *p,
                         cm__ord_t *ord, int *lcol) {
  int m = p->h[H_M], n = p->h[H_N], r0 = p->h[H_R0];
  int k0 = G->comp_col[p->h[H_C0]];
  for (int j = 0; j < n; j++)
    ord[j] = (cm__ord_t){G->col_dof[k0 + j], k0 + j};
  qsort(ord, (size_t)n, sizeof *ord, cm__ord_cmp);
  for (int j = 0; j < n; j++)
    p->gdof[j] = (int)ord[j].key, lcol[ord[j].i - k0] = j;
  memset(p->Mp, 0, sizeof(int) * ((size_t)n + 1));
  for (int j = k0; j < k0 + n; j++) /* M: count per lower column */
    for (int q = G->Mp[j]; q < G->Mp[j + 1]; q++) {
      int a = lcol[G->Mi[q] - k0], b = lcol[j - k0];
      p->Mp[(a < b ? a : b) + 1]++;
    }
  for (int j = 0; j < n; j++)
    p->Mp[j + 1] += p->Mp[j];
  for (int j = k0; j < k0 + n; j++) /* lcol's slots: the next free entry */
    for (int q = G->Mp[j]; q < G->Mp[j + 1]; q++) {
      int a = lcol[G->Mi[q] - k0], b = lcol[j - k0];
      int col = a < b ? a : b, t = p->Mp[col]++;
      p->Mi[t] = a < b ? b : a, p->Mx[t] = G->Mx[q];
    }
  for (int j = n; j > 0; j--) /* back to column starts */
    p->Mp[j] = p->Mp[j - 1];
  p->Mp[0] = 0;
  for (int i = 0; i < m; i++)
    ord[i] = (cm__ord_t){G->row_contact[r0 + i], r0 + i};
  qsort(ord, (size_t)m, sizeof *ord, cm__ord_cmp);
  p->Jp[0] = 0;
  for (int i = 0, nz = 0; i < m; i++) {
    int r = (int)ord[i].i;
    p->grow[i] = (int)ord[i].key, p->k[i] = G->k[r];
    for (int q = G->Jp[r]; q < G->Jp[r + 1]; q++, nz++)
      p->Jj[nz] = lcol[G->Jj[q] - k0], p->Jx[nz] = G->Jx[q];
    p->Jp[i + 1] = nz;
  }
}

/* ---- the split on rank 0 ---------------------------------------- */

/* The components solved iteratively, as cm__prob_count counts them. */
static int cm__mat_niter(const cm_system_t *s, const cm_options_t *o) {
  int nit = 0;
  for (int c = 0; c < s->ncomp; c++) {
    int m = s->comp_row[c + 1] - s->comp_row[c];
    int n = s->comp_col[c + 1] - s->comp_col[c];
    nit += m > 0 && n > 0 && !cm__eig_is_dense(o, m, n);
  }
  return nit;
}

/* cut (np + 1): rank q gets components [cut[q], cut[q + 1]): each
 * component goes to the rank in whose share of the nonzeros (J, M, rows
 * and dofs) its middle falls, so the ranges are contiguous and balanced;
 * a rank may get none. */
static void cm__mat_cuts(const cm_system_t *G, int np, int *cut) {
  double tot = (double)G->Jp[G->nc] + G->Mp[G->n] + G->nc + G->n, pre = 0;
  int q = 0;
  cut[0] = 0;
  for (int c = 0; c < G->ncomp; c++) {
    int r0 = G->comp_row[c], r1 = G->comp_row[c + 1];
    int k0 = G->comp_col[c], k1 = G->comp_col[c + 1];
    double w = (double)(G->Jp[r1] - G->Jp[r0]) + (G->Mp[k1] - G->Mp[k0]) +
               (r1 - r0) + (k1 - k0);
    int to = (int)floor(np * (pre + 0.5 * w) / tot);
    to = to < q ? q : to > np - 1 ? np - 1 : to;
    while (q < to)
      cut[++q] = c;
    pre += w;
  }
  while (q < np)
    cut[++q] = G->ncomp;
}

/* The headers of every rank (np x H_LEN) and the largest part of another
 * rank's (into big). */
static void cm__mat_headers(const cm_system_t *G, const cm_options_t *o, int np,
                            int *cut, int *hs, int *big) {
  cm__mat_cuts(G, np, cut);
  int niter = cm__mat_niter(G, o);
  memset(big, 0, sizeof(int) * H_LEN);
  for (int q = 0; q < np; q++) {
    int *h = hs + (size_t)q * H_LEN;
    cm__mat_header(G, cut[q], cut[q + 1], niter, h);
    for (int i = H_M; q > 0 && i <= H_NM; i++)
      big[i] = h[i] > big[i] ? h[i] : big[i];
  }
}

/* The state of a --matrices run. */
typedef struct {
  cm_system_t *G;      /* rank 0: the whole system (NULL elsewhere) */
  int *hs;             /* rank 0: every rank's header, np x H_LEN */
  cm__mat_part_t mine; /* this rank's part */
  cm__mat_part_t buf;  /* rank 0: room for any other rank's part */
  cm__ord_t *ord;      /* rank 0: work of cm__mat_fill */
  int *lcol;           /* rank 0: work of cm__mat_fill */
  cm_system_t *sub;    /* this rank's sub-system (NULL: no component) */
} cm__mat_t;

static void cm__mat_free(cm__mat_t *S) {
  cm_system_destroy(&S->G);
  cm_system_destroy(&S->sub);
  cm__mat_part_free(&S->mine);
  cm__mat_part_free(&S->buf);
  free(S->hs), free(S->ord), free(S->lcol);
}

/* Rank 0's allocations besides the system: the headers, the room for the
 * others' parts (big: their largest counts) and the work arrays. */
static int cm__mat_rank0_alloc(cm_context_t *ctx, int np, cm__mat_t *S,
                               const int *big) {
  int w = S->G->n > S->G->nc ? S->G->n : S->G->nc;
  S->ord = malloc(sizeof *S->ord * ((size_t)w + 1));
  S->lcol = malloc(sizeof(int) * ((size_t)S->G->n + 1));
  if (!S->ord || !S->lcol)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  return np > 1 ? cm__mat_part_alloc(ctx, big, &S->buf) : CM_OK;
}

/* Rank 0 reads the system and splits it; every rank gets its header and
 * allocates its part. Collective; errors agreed. */
static int cm__mat_prepare(cm_context_t *ctx, const cm__args_t *a, int rank,
                           int np, cm__mat_t *S) {
  int st = CM_OK, h[H_LEN], big[H_LEN];
  if (!rank) {
    st = a->mtx[0] ? cm_system_read_matrices(ctx, a->mtx[0], a->mtx[1],
                                             a->mtx[2], &S->G)
                   : cm_system_read_manifest(ctx, a->path, &S->G);
    int *cut = malloc(sizeof(int) * ((size_t)np + 1));
    S->hs = malloc(sizeof(int) * H_LEN * (size_t)np);
    if (!st && (!cut || !S->hs))
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
    if (!st)
      cm__mat_headers(S->G, &a->opts, np, cut, S->hs, big);
    free(cut);
    if (!st)
      st = cm__mat_rank0_alloc(ctx, np, S, big);
  }
  st = cm__mpi_agree(ctx, st, MPI_COMM_WORLD);
  if (st)
    return st;
  MPI_Scatter(S->hs, H_LEN, MPI_INT, h, H_LEN, MPI_INT, 0, MPI_COMM_WORLD);
  st = cm__mat_part_alloc(ctx, h, &S->mine);
  return cm__mpi_agree(ctx, st, MPI_COMM_WORLD);
}

/* Every rank's part: rank 0 fills each other rank's in turn into its
 * buffer and sends it (two messages), then fills its own. Collective;
 * cannot fail. */
static void cm__mat_send(int rank, int np, cm__mat_t *S) {
  cm__mat_part_t *p = &S->mine;
  if (rank && p->h[H_M] > 0) {
    MPI_Recv(p->iv, (int)p->ni, MPI_INT, 0, 81, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    MPI_Recv(p->dv, (int)p->nd, MPI_DOUBLE, 0, 82, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
  }
  if (rank)
    return;
  for (int q = 1; q < np; q++) {
    cm__mat_part_t t;
    cm__mat_part_sizes(&t, S->hs + (size_t)q * H_LEN);
    if (t.h[H_M] == 0)
      continue;
    cm__mat_part_view(&t, S->buf.iv, S->buf.dv);
    cm__mat_fill(S->G, &t, S->ord, S->lcol);
    MPI_Send(t.iv, (int)t.ni, MPI_INT, q, 81, MPI_COMM_WORLD);
    MPI_Send(t.dv, (int)t.nd, MPI_DOUBLE, q, 82, MPI_COMM_WORLD);
  }
  if (p->h[H_M] > 0)
    cm__mat_fill(S->G, p, S->ord, S->lcol);
}

/* ---- this rank's components: the serial pipeline ---------------- */

/* The report's modes and components as records (mpi_internal.h) in the
 * whole system's indices: components from h[H_C0], rows by grow, dofs
 * (in the bodies' place) by gdof. */
static void cm__mat_records(const cm__mat_part_t *p, const cm_report_t *r,
                            cm__dbuf_t *out) {
  int c0 = p->h[H_C0];
  for (int i = 0; i < r->nmodes; i++) {
    const cm_mode_t *m = &r->modes[i];
    double head[8] = {
        CM__REC_MODE, m->lambda,         m->omega,     m->residual,
        m->zeta,      c0 + m->component, m->ncontacts, m->dofs ? m->ndofs : 0};
    for (int j = 0; j < 8; j++)
      cm__dbuf_push(out, head[j]);
    for (int j = 0; j < m->ncontacts; j++) {
      cm__dbuf_push(out, (double)p->grow[m->contacts[j].index]);
      cm__dbuf_push(out, m->contacts[j].share);
    }
    for (int j = 0; m->dofs && j < m->ndofs; j++) {
      cm__dbuf_push(out, (double)p->gdof[m->dofs[j].index]);
      cm__dbuf_push(out, m->dofs[j].share);
    }
  }
  for (int i = 0; i < r->ncomp_listed; i++) {
    const cm_component_t *c = &r->components[i];
    double head[13] = {CM__REC_COMP,
                       c->omega_max,
                       c->omega_upper,
                       c0 + c->index,
                       c->nbodies,
                       c->ncontacts,
                       c->ndofs,
                       c->method,
                       c->iterations,
                       c->matvecs,
                       c->converged,
                       c->rank,
                       0 /* no bodies listed */};
    for (int j = 0; j < 13; j++)
      cm__dbuf_push(out, head[j]);
  }
}

/* The failure probability of this rank's analysis: the whole system's
 * split over its iteratively solved components as the serial splits it
 * (delta / their number each), unchanged when this rank has them all. */
static double cm__mat_delta(const cm_system_t *sub, const cm__mat_part_t *p,
                            const cm_options_t *o) {
  int mine = cm__mat_niter(sub, o), all = p->h[H_NITER];
  if (mine == all || mine == 0 || all == 0)
    return o->failure_probability;
  return o->failure_probability * mine / all;
}

/* --vectors: the shapes of this rank's report's modes, in its order, as
 * blocks: component (the whole system's), rows m, dofs n, z over the
 * component's rows, phi over its columns (both in the whole system's
 * order within the component). */
static void cm__mat_vec_blocks(const cm__mat_t *S, const cm_report_t *r,
                               const cm_vectors_t *v, cm__dbuf_t *out) {
  const cm_system_t *s = S->sub;
  for (int p = 0; p < v->nmodes; p++) {
    int c = r->modes[p].component, r0 = s->comp_row[c], c0 = s->comp_col[c];
    int m = s->comp_row[c + 1] - r0, n = s->comp_col[c + 1] - c0;
    cm__dbuf_push(out, S->mine.h[H_C0] + c);
    cm__dbuf_push(out, m);
    cm__dbuf_push(out, n);
    for (int i = 0; i < m; i++) /* v's rows: the input's (scene rows) */
      cm__dbuf_push(out, v->z[(size_t)p * v->nrows + s->row_contact[r0 + i]]);
    for (int j = 0; j < n; j++)
      cm__dbuf_push(out, v->phi[(size_t)p * v->ndofs + c0 + j]);
  }
}

/* This rank's sub-system and its serial analysis into the records and
 * sums (and with vbuf, the mode shapes). */
static int cm__mat_solve(cm_context_t *ctx, const cm_options_t *opts,
                         cm__mat_t *S, cm__dbuf_t *recs, cm__dbuf_t *vbuf,
                         cm__mpi_sums_t *sums, cm__mpi_more_t *more) {
  cm__mat_part_t *p = &S->mine;
  if (p->h[H_M] == 0)
    return CM_OK; /* no component here */
  int st = cm_system_from_matrices(ctx, p->h[H_N], p->h[H_M], p->Mp, p->Mi,
                                   p->Mx, p->Jp, p->Jj, p->Jx, p->k, &S->sub);
  if (!st && S->sub->ncomp != p->h[H_C1] - p->h[H_C0])
    st = CM__ERR(ctx, CM_INTERNAL, NULL,
                 "components [%d, %d) split into %d on this rank", p->h[H_C0],
                 p->h[H_C1], S->sub->ncomp);
  if (st)
    return st;
  cm_options_t o = *opts;
  o.failure_probability = cm__mat_delta(S->sub, p, opts);
  cm_report_t *r = NULL;
  cm_vectors_t *vec = NULL;
  cm__fields_t F; /* every component's omega_max, for the ties */
  memset(&F, 0, sizeof F);
  st = cm__analyze_system_both(ctx, S->sub, NULL, &o, &r, vbuf ? &vec : NULL,
                               &F);
  if (st >= 0 && r) {
    cm__mat_records(p, r, recs);
    if (vec)
      cm__mat_vec_blocks(S, r, vec, vbuf);
    for (int c = 0; c < F.ncomp && F.comp_omega; c++) {
      double top[4] = {CM__REC_TOP, F.comp_omega[c], 0, p->h[H_C0] + c};
      for (int j = 0; j < 4; j++)
        cm__dbuf_push(recs, top[j]);
    }
    if (r->pc_omega_max > sums->pc_omega && r->pc_contact >= 0)
      cm__mpi_sums_pc(sums, r->pc_omega_max, p->grow[r->pc_contact]);
    cm__mpi_local_sums(r, sums, more);
    if (st == CM_NOT_CONVERGED && strstr(ctx->message, "time budget"))
      sums->timed_out += 1; /* the serial solve's --max-seconds */
    st = CM_OK;             /* not converged: counted in the sums */
  }
  cm_report_destroy(&r);
  cm_vectors_destroy(&vec);
  cm__fields_free(&F);
  return st;
}

/* ---- names on rank 0 -------------------------------------------- */

int cm__mpimat_share_row(const cm_system_t *sys, int64_t index, cm_share_t *s) {
  const char *nm = sys->row_names ? sys->row_names[index] : NULL;
  s->index = (int)index;
  s->name = nm ? cm__strdup(nm) : NULL;
  return nm && !s->name ? CM_NOMEM : CM_OK;
}

int cm__mpimat_share_dof(const cm_system_t *sys, int64_t index, cm_share_t *s) {
  char buf[32];
  const char *nm = sys->col_names ? sys->col_names[index] : NULL;
  snprintf(buf, sizeof buf, "#%d", (int)index);
  s->index = (int)index;
  s->name = cm__strdup(nm ? nm : buf);
  return s->name ? CM_OK : CM_NOMEM;
}

char *cm__mpimat_comp_name(const cm_system_t *sys, int c) {
  int r0 = sys->comp_row[c], c0 = sys->comp_col[c];
  return cm__matrix_comp_name(sys, r0, sys->comp_row[c + 1] - r0, c0,
                              sys->comp_col[c + 1] - c0);
}

/* ---- --vectors on rank 0 ---------------------------------------- */

/* Gathers every rank's b to rank 0 into *all (*n doubles). Collective;
 * errors agreed. */
static int cm__mat_gather(cm_context_t *ctx, int rank, int np,
                          const cm__dbuf_t *b, double **all, size_t *n) {
  int cnt = (int)b->n, *cs = NULL, *ds = NULL, st = CM_OK;
  *all = NULL, *n = 0;
  if (!rank && (!(cs = malloc(sizeof(int) * (size_t)np)) ||
                !(ds = malloc(sizeof(int) * (size_t)np))))
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (mode shapes)");
  st = cm__mpi_agree(ctx, st, MPI_COMM_WORLD);
  if (!st)
    MPI_Gather(&cnt, 1, MPI_INT, cs, 1, MPI_INT, 0, MPI_COMM_WORLD);
  for (int q = 0; !st && !rank && q < np; q++)
    ds[q] = (int)*n, *n += (size_t)cs[q];
  if (!st && !rank && *n > INT_MAX)
    st = CM__ERR(ctx, CM_LIMIT, NULL,
                 "the mode shapes (%zu values) are over one MPI message", *n);
  if (!st && !rank && !(*all = malloc(sizeof(double) * (*n + 1))))
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (mode shapes)");
  st = cm__mpi_agree(ctx, st, MPI_COMM_WORLD);
  if (!st)
    MPI_Gatherv(b->v, cnt, MPI_DOUBLE, *all, cs, ds, MPI_DOUBLE, 0,
                MPI_COMM_WORLD);
  free(cs), free(ds);
  return st;
}

/* The k-th block (cm__mat_vec_blocks) of component C among nb doubles,
 * NULL when there is none. */
static const double *cm__mat_block(const double *bl, size_t nb, int C, int k) {
  for (size_t i = 0; i < nb; i += 3 + (size_t)bl[i + 1] + (size_t)bl[i + 2])
    if ((int)bl[i] == C && k-- == 0)
      return bl + i;
  return NULL;
}

/* Mode p's block b into v (rows through srow, as cm__mode_vectors). */
static void cm__mat_vec_mode(const cm_system_t *G, const int *srow,
                             double omega, int p, const double *b,
                             cm_vectors_t *v) {
  int C = (int)b[0], m = (int)b[1], n = (int)b[2];
  int r0 = G->comp_row[C], c0 = G->comp_col[C], nc = G->nc;
  for (int i = 0; i < m; i++) {
    int row = r0 + i, s = srow[row];
    v->z[(size_t)p * nc + s] = b[3 + i];
    v->xi[(size_t)p * nc + s] = omega * b[3 + i] / sqrt(G->k[row]);
  }
  for (int j = 0; j < n; j++)
    v->phi[(size_t)p * G->n + c0 + j] = b[3 + m + j];
}

/* Rank 0: the whole system's mode shapes of rep's modes from the ranks'
 * blocks (the k-th mode of a component in report order is its k-th). */
static int cm__mat_vec_build(const cm_system_t *G, const cm_report_t *rep,
                             const double *bl, size_t nb, cm_vectors_t **out) {
  int nm = rep->nmodes, nc = G->nc, n = G->n, st = CM_OK;
  cm_vectors_t *v = calloc(1, sizeof *v);
  int *seen = calloc((size_t)G->ncomp + 1, sizeof(int));
  int *srow = cm__scene_rows(G);
  if (v) {
    v->z = calloc((size_t)nc * nm + 1, sizeof(double));
    v->xi = calloc((size_t)nc * nm + 1, sizeof(double));
    v->phi = calloc((size_t)n * nm + 1, sizeof(double));
    v->row_contact = malloc(sizeof(int) * ((size_t)nc + 1));
    v->row_kind = calloc((size_t)nc + 1, sizeof(int));
    v->col_body = malloc(sizeof(int) * ((size_t)n + 1));
    v->col_dof = malloc(sizeof(int) * ((size_t)n + 1));
  }
  if (!v || !seen || !srow || !v->z || !v->xi || !v->phi || !v->row_contact ||
      !v->row_kind || !v->col_body || !v->col_dof)
    st = CM_NOMEM;
  for (int p = 0; !st && p < nm; p++) {
    int C = rep->modes[p].component;
    const double *b = cm__mat_block(bl, nb, C, seen[C]++);
    int m = G->comp_row[C + 1] - G->comp_row[C];
    if (!b || (int)b[1] != m ||
        (int)b[2] != G->comp_col[C + 1] - G->comp_col[C])
      st = CM_INTERNAL;
    else
      cm__mat_vec_mode(G, srow, rep->modes[p].omega, p, b, v);
  }
  if (!st) {
    v->nmodes = nm, v->nrows = nc, v->ndofs = n;
    for (int row = 0; row < nc; row++)
      v->row_contact[srow[row]] = G->row_contact[row];
    memcpy(v->col_body, G->col_body, sizeof(int) * (size_t)n);
    memcpy(v->col_dof, G->col_dof, sizeof(int) * (size_t)n);
  }
  free(seen), free(srow);
  if (st)
    cm_vectors_destroy(&v);
  *out = v;
  return st;
}

/* --vectors: the ranks' blocks to rank 0, which writes path as `cmodes
 * analyze --matrices --vectors` does. Collective; errors agreed. */
static int cm__mat_vectors(cm_context_t *ctx, const char *path, int rank,
                           int np, const cm__mat_t *S, const cm_report_t *rep,
                           const cm__dbuf_t *vbuf) {
  double *bl = NULL;
  size_t nb = 0;
  int st = cm__mat_gather(ctx, rank, np, vbuf, &bl, &nb);
  if (!st && !rank) {
    cm_vectors_t *v = NULL;
    st = cm__mat_vec_build(S->G, rep, bl, nb, &v);
    if (st == CM_INTERNAL)
      st = CM__ERR(ctx, st, NULL, "mode shapes: a mode's block is missing");
    if (!st)
      st = cm__write_vectors_json(path, rep, v, S->G, NULL);
    if (st == CM_IO)
      st = CM__ERR(ctx, CM_IO, path, "%s: cannot write the mode shapes", path);
    else if (st == CM_NOMEM)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (mode shapes)");
    cm_vectors_destroy(&v);
  }
  free(bl);
  return cm__mpi_agree(ctx, st, MPI_COMM_WORLD);
}

/* ---- analyze --matrices ----------------------------------------- */

/* What a rank's analysis gives rank 0. */
typedef struct {
  cm__dbuf_t recs;     /* the records (mpi_internal.h) */
  cm__dbuf_t vecs;     /* --vectors: the mode shapes' blocks */
  cm__mpi_sums_t sums; /* sums over the rank's components */
  cm__mpi_more_t more; /* counts */
  double t_read;       /* rank 0's read and split, s */
} cm__mat_out_t;

/* The report on rank 0 (the mode shapes first, as `cmodes` writes them,
 * then the report printed); st: the solves' agreed status (a warning, or
 * 0). */
static int cm__mat_report(cm_context_t *ctx, const cm__args_t *a, int rank,
                          int np, const cm__mat_t *S, const cm__mat_out_t *o,
                          int st) {
  int warn = st;
  double timed = 0;
  MPI_Allreduce(&o->sums.timed_out, &timed, 1, MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);
  const cm__mat_part_t *p = &S->mine;
  double part[4] = {p->h[H_C0], p->h[H_C1], p->h[H_R0], p->h[H_R0] + p->h[H_M]};
  cm__mpi_src_t src = {NULL, S->G};
  cm_report_t *rep = NULL;
  st = cm__mpi_gather_report(ctx, &src, part, a, 0, &o->recs, &o->sums,
                             &o->more, o->t_read, &rep);
  if (!st && a->vectors)
    st = cm__mat_vectors(ctx, a->vectors, rank, np, S, rep, &o->vecs);
  int fs = !st && !rank && rep ? rep->status : CM_OK;
  MPI_Bcast(&fs, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!st)
    st = warn > fs ? warn : fs;
  if (st >= 0 && !rank)
    cm__mpi_print_report(rep, a, st, timed > 0);
  cm_report_destroy(&rep);
  return st;
}

int cm__mpimat_analyze(cm__args_t *a, int rank, int np) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = a->threads;
  cm__mat_t S;
  memset(&S, 0, sizeof S);
  cm__mat_out_t o;
  memset(&o, 0, sizeof o);
  o.sums.pc_contact = -1;
  o.sums.damp_h = o.sums.damp_cert = INFINITY, o.sums.damp_comp = -1;
  /* ---- read on rank 0, split, send ---- */
  double t0 = MPI_Wtime();
  int st = cm__mat_prepare(&ctx, a, rank, np, &S);
  if (!st)
    cm__mat_send(rank, np, &S);
  o.t_read = MPI_Wtime() - t0;
  /* ---- solve this rank's components ---- */
  if (!st)
    st = cm__mat_solve(&ctx, &a->opts, &S, &o.recs, a->vectors ? &o.vecs : NULL,
                       &o.sums, &o.more);
  if (st >= 0 && (o.recs.nomem || o.vecs.nomem))
    st = CM__ERR(&ctx, CM_NOMEM, NULL, "out of memory (records)");
  st = cm__mpi_agree(&ctx, st, MPI_COMM_WORLD);
  /* ---- the report on rank 0 ---- */
  if (st >= 0)
    st = cm__mat_report(&ctx, a, rank, np, &S, &o, st);
  if (st < 0 && !rank)
    fprintf(stderr, "cmodes-mpi analyze: %s: %s\n", cm_status_message(st),
            ctx.message[0] ? ctx.message : cm_status_message(st));
  cm__dbuf_free(&o.recs);
  cm__dbuf_free(&o.vecs);
  cm__mat_free(&S);
  return cm_status_exit(st);
}
