/* span.c: a component spread over several ranks (docs/distributed.md): the halo
 * plan (which owned bodies each neighbour needs), the distributed operator
 * S = B B^T with B = K^1/2 J L^-T built from the rank's own rows (the serial
 * assembly on its bodies and its halo), PARPACK's Lanczos on it from a start
 * vector keyed by the global row, the mode and component records, and
 * with dashpots the damped limit and its certified step (the interface
 * plan here, the Schur test in schur.c). */
#include "mpi_internal.h"

#include "analyze/analyze_internal.h"
#include "operator/operator_internal.h"
#include "spectrum/spectrum_internal.h"

#include "mpi_alloc.h" /* last: malloc, calloc, realloc tracked */
#include <arpack/parpack.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- halo plan ------------------------------------------------ */

typedef struct {
  MPI_Comm cc;
  int P, q;
  int no, nh;       /* owned and halo bodies */
  int64_t o0;       /* position of the first owned body */
  int64_t *hpos;    /* nh halo positions, ascending (grouped by owner) */
  int *rcnt, *rdsp; /* per peer: halo bodies it sends us (our halo slots) */
  int *scnt, *sdsp; /* per peer: owned bodies we send it */
  int *sidx;        /* owned body index of each sent entry */
  double *sbuf, *rbuf;
  MPI_Request *rq; /* 2 P requests */
  int width;       /* widest exchange the buffers hold */
} cm__halo_t;

static void cm__halo_free(cm__halo_t *h) {
  free(h->hpos), free(h->rcnt), free(h->rdsp), free(h->scnt), free(h->sdsp);
  free(h->sidx), free(h->sbuf), free(h->rbuf), free(h->rq);
}

/* Owner (rank of cc) of body position p. */
static int cm__owner(const cm__mpi_part_t *P, const int *members, int np_cc,
                     int64_t p) {
  for (int i = 0; i < np_cc; i++) {
    int r = members[i];
    if (P->cut[r] <= p && p < P->cut[r + 1])
      return i;
  }
  return -1;
}

static int cm__halo_build(cm_context_t *ctx, const cm__mpi_part_t *P,
                          const int *members, cm__halo_t *h, int width) {
  int Pn = h->P;
  h->width = width;
  h->rcnt = calloc((size_t)Pn, sizeof(int));
  h->rdsp = calloc((size_t)Pn + 1, sizeof(int));
  h->scnt = calloc((size_t)Pn, sizeof(int));
  h->sdsp = calloc((size_t)Pn + 1, sizeof(int));
  h->rq = malloc(sizeof(MPI_Request) * (2 * (size_t)Pn + 1));
  int st = CM_OK;
  if (!h->rcnt || !h->rdsp || !h->scnt || !h->sdsp || !h->rq)
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (halo plan)");
  for (int i = 0; !st && i < h->nh; i++) {
    int o = cm__owner(P, members, Pn, h->hpos[i]);
    if (o < 0 || o == h->q)
      st = CM__ERR(ctx, CM_INTERNAL, NULL, "halo body %lld has no other owner",
                   (long long)h->hpos[i]);
    else
      h->rcnt[o]++;
  }
  for (int p = 0; !st && p < Pn; p++)
    h->rdsp[p + 1] = h->rdsp[p] + h->rcnt[p];
  /* every collective below runs on every rank, or on none */
  st = cm__mpi_agree(ctx, st, h->cc);
  if (st)
    return st;
  MPI_Alltoall(h->rcnt, 1, MPI_INT, h->scnt, 1, MPI_INT, h->cc);
  for (int p = 0; p < Pn; p++)
    h->sdsp[p + 1] = h->sdsp[p] + h->scnt[p];
  int ns = h->sdsp[Pn];
  int64_t *want = malloc(sizeof(int64_t) * ((size_t)ns + 1));
  h->sidx = malloc(sizeof(int) * ((size_t)ns + 1));
  size_t nbuf = (size_t)(ns > h->nh ? ns : h->nh) * (size_t)width + 1;
  h->sbuf = malloc(sizeof(double) * nbuf);
  h->rbuf = malloc(sizeof(double) * nbuf);
  if (!want || !h->sidx || !h->sbuf || !h->rbuf)
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (halo plan)");
  st = cm__mpi_agree(ctx, st, h->cc);
  if (st) {
    free(want);
    return st;
  }
  MPI_Alltoallv(h->hpos, h->rcnt, h->rdsp, MPI_INT64_T, want, h->scnt, h->sdsp,
                MPI_INT64_T, h->cc);
  for (int k = 0; k < ns; k++) {
    int64_t i = want[k] - h->o0;
    if (i < 0 || i >= h->no)
      st = CM__ERR(ctx, CM_INTERNAL, NULL,
                   "halo request for body %lld "
                   "not owned here",
                   (long long)want[k]);
    h->sidx[k] = (int)i;
  }
  free(want);
  return cm__mpi_agree(ctx, st, h->cc);
}

/* Owned values (w per body) to the halo slots of the ranks that need them. */
static void cm__halo_forward(cm__halo_t *h, int w, const double *own,
                             double *halo) {
  MPI_Request *rq = h->rq;
  int nr = 0;
  for (int p = 0; p < h->P; p++)
    if (h->rcnt[p])
      MPI_Irecv(halo + (size_t)h->rdsp[p] * w, h->rcnt[p] * w, MPI_DOUBLE, p,
                71, h->cc, &rq[nr++]);
  for (int k = 0; k < h->sdsp[h->P]; k++)
    memcpy(h->sbuf + (size_t)k * w, own + (size_t)h->sidx[k] * w,
           sizeof(double) * (size_t)w);
  for (int p = 0; p < h->P; p++)
    if (h->scnt[p])
      MPI_Isend(h->sbuf + (size_t)h->sdsp[p] * w, h->scnt[p] * w, MPI_DOUBLE, p,
                71, h->cc, &rq[nr++]);
  MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
}

/* Halo values added into their owners' values, in peer order (the same
 * bits for the same number of ranks). */
static void cm__halo_reverse(cm__halo_t *h, int w, const double *halo,
                             double *own) {
  MPI_Request *rq = h->rq;
  int nr = 0;
  for (int p = 0; p < h->P; p++)
    if (h->scnt[p])
      MPI_Irecv(h->rbuf + (size_t)h->sdsp[p] * w, h->scnt[p] * w, MPI_DOUBLE, p,
                72, h->cc, &rq[nr++]);
  for (int p = 0; p < h->P; p++)
    if (h->rcnt[p])
      MPI_Isend(halo + (size_t)h->rdsp[p] * w, h->rcnt[p] * w, MPI_DOUBLE, p,
                72, h->cc, &rq[nr++]);
  MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
  for (int k = 0; k < h->sdsp[h->P]; k++)
    for (int d = 0; d < w; d++)
      own[(size_t)h->sidx[k] * w + d] += h->rbuf[(size_t)k * w + d];
}

/* ---- the distributed operator --------------------------------- */

typedef struct {
  int nd, nloc, nslot;
  int *slot;    /* 2 per row: body slot of each side, -1 none */
  double *val;  /* 2 nd per row: the row of B on that side's dofs */
  int *Bp, *Bj; /* B's rows in CSR over the (slot, dof) index slot nd + d,
                   exact zeros left out (a sphere's spins in 3D) */
  double *Bx;
  double *u;              /* nslot nd: B^T x, owned slots then halo slots */
  int *contact;           /* per row: owned contact index (rows of a contact are
                             consecutive, normal first) */
  double *k, *g, *spring; /* per row: the assembly's weight, dashpot and
                             spring (g, spring: NULL when it has none) */
  double *rs; /* per row: a scale of the row (NULL: none), so that one
                 operator assembled with weights k + c serves every
                 h^2 k + 2 h c of the damped search */
  cm__halo_t h;
  double inv_s; /* 1 / scale */
  long products;
  double t_products;
} cm__dop_t;

/* u = B^T x on the owned bodies (complete) and the halo (copies). */
static void cm__dop_BT(cm__dop_t *op, const double *x, int absval) {
  int nd = op->nd;
  memset(op->u, 0, sizeof(double) * (size_t)op->nslot * (size_t)nd);
  for (int r = 0; r < op->nloc; r++) {
    double xr = op->rs ? x[r] * op->rs[r] : x[r];
    for (int e = op->Bp[r]; e < op->Bp[r + 1]; e++)
      op->u[op->Bj[e]] += (absval ? fabs(op->Bx[e]) : op->Bx[e]) * xr;
  }
  double *halo = op->u + (size_t)op->h.no * nd;
  cm__halo_reverse(&op->h, nd, halo, op->u);
  cm__halo_forward(&op->h, nd, op->u, halo);
}

/* y = B u. */
static void cm__dop_B(const cm__dop_t *op, double *y, int absval) {
  for (int r = 0; r < op->nloc; r++) {
    double acc = 0;
    for (int e = op->Bp[r]; e < op->Bp[r + 1]; e++)
      acc += (absval ? fabs(op->Bx[e]) : op->Bx[e]) * op->u[op->Bj[e]];
    y[r] = op->rs ? acc * op->rs[r] : acc;
  }
}

static void cm__dop_apply(cm__dop_t *op, const double *x, double *y) {
  double t0 = MPI_Wtime();
  cm__dop_BT(op, x, 0);
  cm__dop_B(op, y, 0);
  op->products++;
  op->t_products += MPI_Wtime() - t0;
}

static void cm__dop_free(cm__dop_t *op) {
  free(op->slot), free(op->val), free(op->u), free(op->contact);
  free(op->Bp), free(op->Bj), free(op->Bx);
  free(op->k), free(op->g), free(op->spring), free(op->rs);
  cm__halo_free(&op->h);
}

/* Lower Cholesky factor of the body's world mass block (nd x nd, row-major
 * into L): diag sqrt(m) on translations; in 2D sqrt(I); in 3D chol(R I R^T).
 * 0, or -1 when the inertia block is not positive definite. */
int cm__body_chol(int dim, const cm__part_body_t *b, double *L) {
  int nd = dim == 2 ? 3 : 6;
  memset(L, 0, sizeof(double) * (size_t)(nd * nd));
  double sm = sqrt(b->mass);
  if (dim == 2) {
    L[0] = L[4] = sm;
    L[8] = sqrt(b->inertia[0]);
    return b->inertia[0] > 0 && b->mass > 0 ? 0 : -1;
  }
  for (int i = 0; i < 3; i++)
    L[i * 6 + i] = sm;
  double R[9], T[9], Iw[9];
  cm__quat_to_R(b->orientation, R);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      double s = 0;
      for (int l = 0; l < 3; l++)
        s += R[3 * i + l] * b->inertia[3 * l + j];
      T[3 * i + j] = s;
    }
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      double s = 0;
      for (int l = 0; l < 3; l++)
        s += T[3 * i + l] * R[3 * j + l];
      Iw[3 * i + j] = s;
    }
  for (int i = 0; i < 3; i++) /* Cholesky of the symmetrised block */
    for (int j = 0; j <= i; j++) {
      double s = 0.5 * (Iw[3 * i + j] + Iw[3 * j + i]);
      for (int l = 0; l < j; l++)
        s -= L[(3 + i) * 6 + 3 + l] * L[(3 + j) * 6 + 3 + l];
      if (i == j) {
        if (!(s > 0))
          return -1;
        L[(3 + i) * 6 + 3 + i] = sqrt(s);
      } else {
        L[(3 + i) * 6 + 3 + j] = s / L[(3 + j) * 6 + 3 + j];
      }
    }
  return 0;
}

cm_body_t cm__body_from(const cm__part_body_t *r) {
  cm_body_t b;
  cm_body_init(&b);
  b.fixed = 0;
  b.mass = r->mass;
  memcpy(b.inertia, r->inertia, sizeof b.inertia);
  memcpy(b.position, r->position, sizeof b.position);
  memcpy(b.orientation, r->orientation, sizeof b.orientation);
  return b;
}

/* The contact with its bodies mapped to sub-scene slots; a fixed side
 * becomes the world (a fixed a is swapped to b, the normal flipped). */
cm_contact_t cm__contact_to(const cm__part_contact_t *r, int sa, int sb) {
  cm_contact_t c;
  cm_contact_init(&c);
  c.a = sa, c.b = sb;
  memcpy(c.point, r->point, sizeof c.point);
  memcpy(c.normal, r->normal, sizeof c.normal);
  c.stiffness = r->stiffness, c.stiffness_t = r->stiffness_t;
  c.damping_n = r->damping_n, c.damping_t = r->damping_t;
  c.has_arms = r->has_arms != 0;
  memcpy(c.arm_a, r->arm_a, sizeof c.arm_a);
  memcpy(c.arm_b, r->arm_b, sizeof c.arm_b);
  if (sa == CM_WORLD) {
    c.a = sb, c.b = CM_WORLD;
    for (int i = 0; i < 3; i++) {
      c.normal[i] = -c.normal[i];
      double t = c.arm_a[i];
      c.arm_a[i] = c.arm_b[i], c.arm_b[i] = t;
    }
  }
  return c;
}

static int cm__i64_cmp(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  return a < b ? -1 : a > b;
}

/* The Cholesky factor of each slot's mass block (records rec, 18 doubles
 * each) into L (36 doubles each). */
static int cm__dop_chol(cm_context_t *ctx, int dim, const double *rec,
                        const cm__halo_t *h, double *L) {
  for (int i = 0; i < h->no + h->nh; i++) {
    cm__part_body_t pb;
    memset(&pb, 0, sizeof pb);
    const double *r = rec + 18 * (size_t)i;
    pb.mass = r[0];
    memcpy(pb.inertia, r + 1, 9 * sizeof(double));
    memcpy(pb.orientation, r + 13, 4 * sizeof(double));
    if (cm__body_chol(dim, &pb, L + 36 * (size_t)i))
      return CM__ERR(ctx, CM_NOT_SPD, "bodies",
                     "a body's mass block is not positive definite (body "
                     "position %lld)",
                     (long long)(i < h->no ? h->o0 + i : h->hpos[i - h->no]));
  }
  return CM_OK;
}

/* The rows of B = K^1/2 J L^-T from the assembled sub-scene (rows in the
 * contacts' order, srow), kept in CSR without exact zeros. */
static int cm__dop_rows(cm_context_t *ctx, const cm_system_t *sys,
                        const int *srow, const double *L, cm__dop_t *op) {
  /* ---- the rows of B, in the contacts' order -------------------- */
  int nloc = op->nloc, nd = op->nd, nslot = op->nslot, st = CM_OK;
  op->slot = malloc(sizeof(int) * (2 * (size_t)nloc + 1));
  op->val = calloc(2 * (size_t)nloc * nd + 1, sizeof(double));
  op->u = calloc((size_t)nslot * nd + 1, sizeof(double));
  op->contact = malloc(sizeof(int) * ((size_t)nloc + 1));
  int kept = sys->g || sys->spring; /* with dashpots only */
  op->k = kept ? malloc(sizeof(double) * ((size_t)nloc + 1)) : NULL;
  op->g = sys->g ? malloc(sizeof(double) * ((size_t)nloc + 1)) : NULL;
  op->spring = sys->spring ? malloc(sizeof(double) * ((size_t)nloc + 1)) : NULL;
  if (!op->slot || !op->val || !op->u || !op->contact || (kept && !op->k) ||
      (sys->g && !op->g) || (sys->spring && !op->spring))
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (operator)");
  for (int i = 0; i < nloc && !st; i++) {
    int t = srow[i];
    op->slot[2 * t] = op->slot[2 * t + 1] = -1;
    op->contact[t] = sys->row_contact[i];
    if (op->k)
      op->k[t] = sys->k[i];
    if (op->g)
      op->g[t] = sys->g[i];
    if (op->spring)
      op->spring[t] = sys->spring[i];
    double jseg[2][6] = {{0}};
    for (int e = sys->Jp[i]; e < sys->Jp[i + 1]; e++) {
      int j = sys->Jj[e], sl = sys->col_body[j];
      int s = op->slot[2 * t] < 0 || op->slot[2 * t] == sl ? 0 : 1;
      op->slot[2 * t + s] = sl;
      jseg[s][sys->col_dof[j]] = sys->Jx[e];
    }
    double sk = sqrt(sys->k[i]);
    for (int s = 0; s < 2; s++) {
      int sl = op->slot[2 * t + s];
      if (sl < 0)
        continue;
      const double *Lb = L + 36 * (size_t)sl;
      double *v = op->val + (size_t)(2 * t + s) * nd;
      for (int a = 0; a < nd; a++) { /* v = L^-1 jseg */
        double acc = jseg[s][a];
        for (int b = 0; b < a; b++)
          acc -= Lb[a * nd + b] * v[b];
        v[a] = acc / Lb[a * nd + a];
      }
      for (int a = 0; a < nd; a++)
        v[a] *= sk;
    }
  }
  /* ---- CSR without the exact zeros; the dense segments go ---- */
  op->Bp = st ? NULL : malloc(sizeof(int) * ((size_t)nloc + 1));
  long nnz = 0;
  for (int t = 0; op->Bp && t < nloc; t++) {
    op->Bp[t] = (int)nnz;
    for (int k = 0; k < 2; k++)
      for (int d = 0; op->slot[2 * t + k] >= 0 && d < nd; d++)
        nnz += op->val[(size_t)(2 * t + k) * nd + d] != 0;
  }
  if (op->Bp) {
    op->Bp[nloc] = (int)nnz;
    op->Bj = malloc(sizeof(int) * ((size_t)nnz + 1));
    op->Bx = malloc(sizeof(double) * ((size_t)nnz + 1));
  }
  if (!st && (!op->Bp || !op->Bj || !op->Bx))
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (operator)");
  for (int t = 0, e = 0; !st && t < nloc; t++)
    for (int k = 0; k < 2; k++)
      for (int d = 0; op->slot[2 * t + k] >= 0 && d < nd; d++) {
        double v = op->val[(size_t)(2 * t + k) * nd + d];
        if (v != 0)
          op->Bj[e] = op->slot[2 * t + k] * nd + d, op->Bx[e++] = v;
      }
  free(op->slot), free(op->val);
  op->slot = NULL, op->val = NULL;
  return st;
}

/* Builds the operator of component comp on this rank: owned bodies
 * [o0, o1), owned contacts [k0, k1) (indices into P's arrays), its rows
 * weighted wk k + wg c (1, 0: S; 1, 1: the damped search's). */
static int cm__dop_build(cm_context_t *ctx, const cm__mpi_part_t *P,
                         const int *members, int64_t o0, int64_t o1, int k0,
                         int k1, double wk, double wg, cm__dop_t *op,
                         double *active_dofs) {
  int nd = P->nd, dim = P->dim, st = CM_OK;
  cm__halo_t *h = &op->h;
  h->no = (int)(o1 - o0), h->o0 = o0;
  int ncon = k1 - k0;
  /* halo: moving bodies of the owned contacts owned elsewhere */
  h->hpos = malloc(sizeof(int64_t) * (2 * (size_t)ncon + 1));
  if (!h->hpos)
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (halo)");
  /* each step that communicates runs on every rank of cc or on none */
  st = cm__mpi_agree(ctx, st, h->cc);
  if (st)
    return st;
  int nh = 0;
  for (int k = k0; k < k1; k++) {
    int64_t side[2] = {P->contacts[k].a, P->contacts[k].b};
    for (int s = 0; s < 2; s++)
      if (side[s] >= 0 && side[s] < (int64_t)P->f->h.ncompbodies &&
          (side[s] < o0 || side[s] >= o1))
        h->hpos[nh++] = side[s];
  }
  qsort(h->hpos, (size_t)nh, sizeof(int64_t), cm__i64_cmp);
  int u = 0;
  for (int i = 0; i < nh; i++)
    if (u == 0 || h->hpos[i] != h->hpos[u - 1])
      h->hpos[u++] = h->hpos[i];
  h->nh = nh = u;
  st = cm__halo_build(ctx, P, members, h, 18 > nd ? 18 : nd);
  if (st)
    return st;
  /* halo bodies' records from their owners (18 doubles each) */
  int no = h->no, nslot = no + nh;
  double *rec = malloc(sizeof(double) * 18 * ((size_t)nslot + 1));
  cm_scene_t *sub = cm_scene_create(dim);
  if (!rec || !sub)
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (halo bodies)");
  st = cm__mpi_agree(ctx, st, h->cc);
  if (st) {
    free(rec), cm_scene_destroy(&sub);
    return st;
  }
  for (int i = 0; i < no; i++) {
    const cm__part_body_t *b = &P->bodies[o0 - P->b0 + i];
    double *r = rec + 18 * (size_t)i;
    r[0] = b->mass;
    memcpy(r + 1, b->inertia, 9 * sizeof(double));
    memcpy(r + 10, b->position, 3 * sizeof(double));
    memcpy(r + 13, b->orientation, 4 * sizeof(double));
    r[17] = 0;
  }
  cm__halo_forward(h, 18, rec, rec + 18 * (size_t)no);
  /* the sub-scene: owned then halo bodies, the owned contacts */
  for (int i = 0; i < nslot && !st; i++) {
    cm__part_body_t pb;
    memset(&pb, 0, sizeof pb);
    const double *r = rec + 18 * (size_t)i;
    pb.mass = r[0];
    memcpy(pb.inertia, r + 1, 9 * sizeof(double));
    memcpy(pb.position, r + 10, 3 * sizeof(double));
    memcpy(pb.orientation, r + 13, 4 * sizeof(double));
    cm_body_t b = cm__body_from(&pb);
    st = cm_scene_add_body(ctx, sub, &b, NULL) < 0 ? ctx->status : CM_OK;
  }
  for (int k = k0; k < k1 && !st; k++) {
    const cm__part_contact_t *c = &P->contacts[k];
    int sl[2];
    int64_t side[2] = {c->a, c->b};
    for (int s = 0; s < 2; s++) {
      sl[s] = CM_WORLD;
      if (side[s] < 0 || side[s] >= (int64_t)P->f->h.ncompbodies)
        continue; /* the world or a fixed body */
      if (side[s] >= o0 && side[s] < o1) {
        sl[s] = (int)(side[s] - o0);
      } else {
        int64_t *hit = bsearch(&side[s], h->hpos, (size_t)nh, sizeof(int64_t),
                               cm__i64_cmp);
        sl[s] = no + (int)(hit - h->hpos);
      }
    }
    cm_contact_t ct = cm__contact_to(c, sl[0], sl[1]);
    st = cm_scene_add_contact(ctx, sub, &ct, NULL) < 0 ? ctx->status : CM_OK;
  }
  cm_system_t *sys = NULL;
  if (!st)
    st = cm__system_assemble_weighted(ctx, sub, wk, wg, &sys);
  double *L = malloc(sizeof(double) * 36 * ((size_t)nslot + 1));
  int *srow = sys ? cm__scene_rows(sys) : NULL;
  if (!st && (!L || !srow))
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (operator)");
  if (!st)
    st = cm__dop_chol(ctx, dim, rec, h, L);
  int nloc = sys ? sys->nc : 0;
  op->nd = nd, op->nloc = nloc, op->nslot = nslot;
  if (!st)
    st = cm__dop_rows(ctx, sys, srow, L, op);
  /* active dofs: columns with an entry, the owners' count */
  double *cnt = st ? NULL : calloc((size_t)nslot * nd + 1, sizeof(double));
  if (!st && !cnt)
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  st = cm__mpi_agree(ctx, st, h->cc);
  if (!st && active_dofs) {
    for (int j = 0; !st && j < sys->n; j++)
      cnt[(size_t)sys->col_body[j] * nd + sys->col_dof[j]] = 1;
    if (!st) {
      cm__halo_reverse(h, nd, cnt + (size_t)no * nd, cnt);
      for (int i = 0; i < no * nd; i++)
        *active_dofs += cnt[i] > 0;
      if (P->vecs) /* --vectors: the owned bodies' active dofs */
        cm__mpi_vecs_mask(P->vecs, o0 - P->b0, no, nd, cnt);
    }
  }
  free(cnt);
  free(rec), free(L), free(srow);
  cm_system_destroy(&sys);
  cm_scene_destroy(&sub);
  return st;
}

/* ---- top shares, merged over the ranks ------------------------ */

typedef struct {
  double share, index, pos; /* share; scene index (ties); file position */
} cm__share3_t;

static void cm__pick3(cm__share3_t *pk, int *n, int T, cm__share3_t v) {
  int k = *n;
  if (k == T && !(v.share > pk[k - 1].share ||
                  (v.share == pk[k - 1].share && v.index < pk[k - 1].index)))
    return;
  if (k < T)
    (*n)++;
  else
    k = T - 1;
  while (k > 0 && (v.share > pk[k - 1].share ||
                   (v.share == pk[k - 1].share && v.index < pk[k - 1].index))) {
    pk[k] = pk[k - 1];
    k--;
  }
  pk[k] = v;
}

/* Near-equal shares are listed by scene index, as the serial
 * cm__pick_settle does (src/analyze/analyze.c): runs within CM__PICK_SAME
 * of their first are sorted by index and the first T kept. */
#define CM__PICK_SAME 1e-12
#define CM__PICK_SLACK 16

static int cm__share3_index_cmp(const void *pa, const void *pb) {
  const cm__share3_t *a = pa, *b = pb;
  return (a->index > b->index) - (a->index < b->index);
}

static int cm__settle3(cm__share3_t *pk, int n, int T) {
  for (int i = 0, j; i < n; i = j) {
    double low = pk[i].share - CM__PICK_SAME * fabs(pk[i].share);
    for (j = i + 1; j < n && pk[j].share >= low; j++)
      ;
    if (j - i > 1)
      qsort(pk + i, (size_t)(j - i), sizeof *pk, cm__share3_index_cmp);
  }
  return n < T ? n : T;
}

typedef struct {
  int *cnt, *dsp; /* P each */
  double *all;    /* 3 T P */
} cm__mbuf_t;

/* Gathers every rank's top T picks to rank 0 of cc and merges them there
 * (buffers of mb, allocated beforehand for the largest T). */
static int cm__merge_picks(MPI_Comm cc, cm__share3_t *pk, int n, int T,
                           cm__share3_t *out, cm__mbuf_t *mb) {
  int P, q;
  MPI_Comm_size(cc, &P);
  MPI_Comm_rank(cc, &q);
  int *cnt = mb->cnt, *dsp = mb->dsp;
  int n3 = 3 * n;
  MPI_Gather(&n3, 1, MPI_INT, cnt, 1, MPI_INT, 0, cc);
  int tot = 0;
  if (q == 0)
    for (int p = 0; p < P; p++)
      dsp[p] = tot, tot += cnt[p];
  double *all = mb->all;
  MPI_Gatherv(pk, n3, MPI_DOUBLE, all, cnt, dsp, MPI_DOUBLE, 0, cc);
  int m = 0;
  if (q == 0)
    for (int i = 0; i < tot / 3; i++)
      cm__pick3(out, &m, T,
                (cm__share3_t){all[3 * i], all[3 * i + 1], all[3 * i + 2]});
  return m;
}

static double cm__allsum(double x, MPI_Comm cc) {
  double y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, cc);
  return y;
}

static double cm__dot_all(int n, const double *x, const double *y,
                          MPI_Comm cc) {
  double s = 0;
  for (int i = 0; i < n; i++)
    s += x[i] * y[i];
  return cm__allsum(s, cc);
}

/* ---- the probabilistic bound (as spectrum/bound.c, distributed) ---- */

/* The most terms an entry of a distributed product sums: a row of B (2
 * sides of nd dofs), a slot's rows on any rank (the halo's reverse sum
 * adds one partial sum a rank), over the ranks of cc. */
static int cm__dop_terms(cm__dop_t *op, MPI_Comm cc) {
  size_t nu = (size_t)op->nslot * (size_t)op->nd;
  int ranks = 1, all = 0;
  double most = 0;
  MPI_Comm_size(cc, &ranks);
  memset(op->u, 0, sizeof(double) * nu); /* the products' scratch counts */
  for (int e = 0; e < op->Bp[op->nloc]; e++)
    most = ++op->u[op->Bj[e]] > most ? op->u[op->Bj[e]] : most;
  int mine = (int)most;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MAX, cc);
  return 2 * op->nd + all * ranks;
}

/* Kuczynski-Wozniakowski's bound (docs/math.md) from a plain Lanczos run
 * on the distributed operator, its start keyed by the global row, and the
 * a posteriori bound from its polynomials (spectrum/bound.c; gall: the
 * Gershgorin bound, max row sum of |B| |B|^T); the run stops when either
 * is within 4%, and the lower one is the bound: every rank runs the same
 * tridiagonal, so all get the same bound. */
static int cm__span_prob_bound(cm_context_t *ctx, cm__dop_t *op, MPI_Comm cc,
                               long long N, long long goff, uint64_t seed,
                               double scale, double gall, double delta,
                               double *upper, int *steps) {
  int nloc = op->nloc, kmax = N < CM__PB_MAX_STEPS ? (int)N : CM__PB_MAX_STEPS;
  size_t nl = (size_t)nloc + 1;
  double *v = malloc(sizeof(double) * nl), *vp = malloc(sizeof(double) * nl);
  double *w = malloc(sizeof(double) * nl);
  double *a = malloc(sizeof(double) * (size_t)(kmax + 1));
  double *b = malloc(sizeof(double) * (size_t)(kmax + 1));
  lapack_int *iw = malloc(sizeof(lapack_int) * 2 * (size_t)(kmax + 1));
  int st = (!v || !vp || !w || !a || !b || !iw)
               ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (bound)")
               : CM_OK;
  st = cm__mpi_agree(ctx, st, cc);
  double theta = 0, eps = INFINITY, tn = 0, bk = 0;
  int k = 0, breakdown = 0, post = 0, terms = cm__dop_terms(op, cc);
  int kstar = cm__kw_steps((double)N, delta); /* the theorem's 4% */
  cm__post_t q;
  if (!st) {
    for (int i = 0; i < nloc; i++)
      v[i] = cm__gauss(seed ^ CM__PB_SEED, (uint64_t)(goff + i));
    double nv = sqrt(cm__dot_all(nloc, v, v, cc));
    for (int i = 0; i < nloc; i++)
      v[i] /= nv;
    double bp = 0;
    for (;;) {
      cm__dop_apply(op, v, w);
      for (int i = 0; i < nloc; i++)
        w[i] = w[i] * op->inv_s - (k ? bp * vp[i] : 0);
      a[k] = cm__dot_all(nloc, v, w, cc);
      for (int i = 0; i < nloc; i++)
        w[i] -= a[k] * v[i];
      double beta = sqrt(cm__dot_all(nloc, w, w, cc));
      k++;
      theta = cm__tridiag_top(k, a, b, &tn, iw);
      breakdown = !(beta > (double)N * DBL_EPSILON * tn);
      bk = beta;
      b[k - 1] = beta; /* v_k's: the polynomials' last step */
      post = !breakdown && isfinite(theta) &&
             cm__post_init(&q, (double)N, delta, k, a, b, NULL, 0, 0, 0, theta,
                           tn, terms, gall / scale);
      if (!isfinite(theta) || k >= kstar || breakdown || k == kmax ||
          (post && cm__post_check(&q, (1 + CM__PB_TARGET) * theta)))
        break;
      for (int i = 0; i < nloc; i++)
        vp[i] = v[i], v[i] = w[i] / beta;
      bp = beta;
    }
    double ub = cm__kw_upper((double)N, k, theta, 3.0 * k * DBL_EPSILON * tn,
                             breakdown ? bk : NAN, delta, &eps);
    if (post)
      ub = fmin(ub, cm__post_upper(&q, isfinite(ub) ? ub : 16 * theta));
    *upper = ub * scale;
    *steps = k;
    if (!isfinite(theta))
      st = CM__ERR(ctx, CM_NUMERIC, NULL,
                   "LAPACK dstebz failed on the probabilistic bound's "
                   "tridiagonal (k = %d)",
                   k);
  }
  free(v), free(vp), free(w), free(a), free(b), free(iw);
  return st;
}

/* ---- the solve ------------------------------------------------ */

/* One component's solve on the ranks of cc: the operator, the sizes, every
 * buffer (allocated before any collective) and the results. */
typedef struct {
  const cm__mpi_part_t *P;
  MPI_Comm cc;
  int comp, q;      /* component, this rank in cc */
  int64_t cb0, cb1; /* the component's bodies [cb0, cb1) */
  int64_t o0;       /* this rank's first body of it */
  int k0;           /* this rank's first contact of it (into P) */
  cm__dop_t op;
  long long N, goff; /* rows in all, this rank's first global row */
  int nloc, ldv, nev, ncv, lworkl;
  int T, TB;   /* picks kept: asked + CM__PICK_SLACK */
  int Tq, TBq; /* asked: --top-contacts, --top-bodies */
  double *x, *y, *resid, *v, *workd, *workl, *d, *z;
  int *sel;
  double *rh, *rw, *ru;  /* ncv x ncv, ncv, ncv x ncv: Rayleigh-Ritz */
  cm__share3_t *pk, *mg; /* T + TB picks: contacts, then bodies */
  cm__mbuf_t mb;
  uint64_t seed;                         /* the start vectors' key */
  double scale, gall, omega_upper, lam0; /* s, max Gershgorin row sum of S,
                                            sqrt(gall), top lambda */
  int nconv, notconv, iterations, timed_out;
  double deadline; /* MPI_Wtime() on this rank, 0 = none */
  double hmodal;   /* min over the modes of each one's damped limit */
} cm__span_t;

static void cm__span_free(cm__span_t *S) {
  free(S->x), free(S->y), free(S->resid), free(S->v), free(S->workd);
  free(S->workl), free(S->d), free(S->z), free(S->sel), free(S->pk);
  free(S->rh), free(S->rw), free(S->ru);
  free(S->mg), free(S->mb.cnt), free(S->mb.dsp), free(S->mb.all);
  cm__dop_free(&S->op);
}

/* Sizes and every buffer, agreed over cc. */
static int cm__span_alloc(cm_context_t *ctx, cm__span_t *S,
                          const cm_options_t *opts) {
  int P = S->op.h.P;
  long long nl = S->nloc;
  MPI_Allreduce(&nl, &S->N, 1, MPI_LONG_LONG, MPI_SUM, S->cc);
  MPI_Exscan(&nl, &S->goff, 1, MPI_LONG_LONG, MPI_SUM, S->cc);
  if (S->q == 0)
    S->goff = 0;
  long long N = S->N;
  int ldv = S->ldv = S->nloc > 0 ? S->nloc : 1;
  S->nev = opts->modes < N - 1 ? opts->modes : (int)N - 1;
  S->ncv =
      opts->ncv > 0 ? opts->ncv : (2 * S->nev + 1 > 20 ? 2 * S->nev + 1 : 20);
  if (S->ncv > N)
    S->ncv = (int)N;
  if (S->ncv <= S->nev)
    S->ncv = S->nev + 1;
  int ncv = S->ncv;
  S->lworkl = ncv * (ncv + 8);
  S->x = calloc((size_t)ldv, sizeof(double));
  S->y = calloc((size_t)ldv, sizeof(double));
  S->resid = calloc((size_t)ldv, sizeof(double));
  S->v = calloc((size_t)ldv * ncv, sizeof(double));
  S->workd = calloc(3 * (size_t)ldv, sizeof(double));
  S->workl = calloc((size_t)S->lworkl, sizeof(double));
  S->d = calloc((size_t)ncv, sizeof(double));
  S->z = calloc((size_t)ldv * ncv, sizeof(double));
  S->sel = calloc((size_t)ncv, sizeof(int));
  S->rh = malloc(sizeof(double) * (size_t)ncv * (size_t)ncv);
  S->rw = malloc(sizeof(double) * (size_t)ncv);
  S->ru = malloc(sizeof(double) * (size_t)ncv * (size_t)ncv);
  S->Tq = opts->top_contacts > 0 ? opts->top_contacts : 1;
  S->TBq = opts->top_bodies > 0 ? opts->top_bodies : 1;
  S->T = S->Tq + CM__PICK_SLACK;
  S->TB = S->TBq + CM__PICK_SLACK;
  S->pk = malloc(sizeof *S->pk * (size_t)(S->T + S->TB + 2));
  S->mg = malloc(sizeof *S->mg * (size_t)(S->T + S->TB + 2));
  S->mb.cnt = malloc(sizeof(int) * (size_t)P);
  S->mb.dsp = malloc(sizeof(int) * (size_t)P);
  S->mb.all = malloc(sizeof(double) * 3 *
                     (size_t)(S->T > S->TB ? S->T : S->TB) * (size_t)P);
  int st = (!S->x || !S->y || !S->resid || !S->v || !S->workd || !S->workl ||
            !S->d || !S->z || !S->sel || !S->rh || !S->rw || !S->ru || !S->pk ||
            !S->mg || !S->mb.cnt || !S->mb.dsp || !S->mb.all)
               ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (Lanczos basis)")
               : CM_OK;
  return cm__mpi_agree(ctx, st, S->cc);
}

/* The per-contact estimate (max S_cc), the Gershgorin bound (|B| |B|^T 1)
 * and the scale s, a power of two near max S_cc. */
static void cm__span_bounds(cm__span_t *S, cm__mpi_sums_t *sums) {
  cm__dop_t *op = &S->op;
  double dmax = 0, gmax = 0, pc_contact = -1;
  for (int r = 0; r < S->nloc; r++) {
    double s = 0;
    for (int e = op->Bp[r]; e < op->Bp[r + 1]; e++)
      s += op->Bx[e] * op->Bx[e]; /* S_rr = |B_r|^2 */
    if (s > dmax)
      dmax = s, pc_contact = (double)S->P->corig[S->k0 + op->contact[r]];
    S->x[r] = 1;
  }
  cm__dop_BT(op, S->x, 1);
  cm__dop_B(op, S->y, 1); /* y = |B| |B|^T 1 */
  for (int r = 0; r < S->nloc; r++)
    gmax = S->y[r] > gmax ? S->y[r] : gmax;
  struct {
    double v;
    int r;
  } dl = {dmax, S->q}, dg;
  MPI_Allreduce(&dl, &dg, 1, MPI_DOUBLE_INT, MPI_MAXLOC, S->cc);
  MPI_Bcast(&pc_contact, 1, MPI_DOUBLE, dg.r, S->cc);
  MPI_Allreduce(&gmax, &S->gall, 1, MPI_DOUBLE, MPI_MAX, S->cc);
  S->omega_upper = sqrt(S->gall);
  double pc_omega = sqrt(dg.v);
  if (pc_omega > sums->pc_omega)
    sums->pc_omega = pc_omega, sums->pc_contact = pc_contact;
  sums->omega_upper = fmax(sums->omega_upper, S->omega_upper);
  S->scale = dg.v > 0 ? ldexp(1.0, ilogb(dg.v)) : 1;
  op->inv_s = 1 / S->scale;
}

/* A solve stopped by the deadline: Rayleigh-Ritz on the columns of
 * PARPACK's basis S->v (destroyed), as the serial ARPACK run does: two
 * passes of modified Gram-Schmidt with global dot products, H = V^T (S/s) V
 * summed over cc and taken from cc's rank 0 (the same H on every rank),
 * the top nev pairs of H, the Ritz vectors V U into S->z (ascending, as
 * pdseupd leaves them). Collective on cc; returns the pairs found. */
static int cm__span_rr(cm_context_t *ctx, cm__span_t *S) {
  int nloc = S->nloc, ldv = S->ldv, ncv = S->ncv, kept = 0;
  for (int j = 0; j < ncv; j++) {
    double *v = S->v + (size_t)j * ldv;
    double n0 = sqrt(cm__dot_all(nloc, v, v, S->cc));
    if (!(n0 > 0))
      continue;
    for (int pass = 0; pass < 2; pass++)
      for (int i = 0; i < kept; i++) {
        double *q = S->v + (size_t)i * ldv, c = cm__dot_all(nloc, q, v, S->cc);
        for (int l = 0; l < nloc; l++)
          v[l] -= c * q[l];
      }
    double n1 = sqrt(cm__dot_all(nloc, v, v, S->cc));
    if (!(n1 > 1e-8 * n0))
      continue;
    double *dst = S->v + (size_t)kept * ldv;
    for (int l = 0; l < nloc; l++)
      dst[l] = v[l] / n1;
    kept++;
  }
  if (kept == 0)
    return 0;
  double *H = S->rh;
  for (int j = 0; j < kept; j++) { /* this rank's part of V^T (S/s) V */
    cm__dop_apply(&S->op, S->v + (size_t)j * ldv, S->y);
    for (int i = 0; i < kept; i++) {
      double h = 0, *q = S->v + (size_t)i * ldv;
      for (int l = 0; l < nloc; l++)
        h += q[l] * S->y[l] * S->op.inv_s;
      H[(size_t)j * kept + i] = h;
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, H, kept * kept, MPI_DOUBLE, MPI_SUM, S->cc);
  MPI_Bcast(H, kept * kept, MPI_DOUBLE, 0, S->cc);
  for (int j = 0; j < kept; j++) /* symmetric: the mean of both triangles */
    for (int i = 0; i < j; i++)
      H[(size_t)j * kept + i] = H[(size_t)i * kept + j] =
          0.5 * (H[(size_t)j * kept + i] + H[(size_t)i * kept + j]);
  int k = S->nev < kept ? S->nev : kept;
  int found = cm__syevr_top(kept, H, k, S->rw, S->ru), fmin = found;
  MPI_Allreduce(&found, &fmin, 1, MPI_INT, MPI_MIN, S->cc); /* agreed */
  found = fmin;
  if (found < 0) {
    CM__ERR(ctx, CM_NUMERIC, NULL,
            "component %d: the Rayleigh-Ritz step after the time budget "
            "failed",
            S->comp);
    return -1;
  }
  for (int p = 0; p < found; p++) {
    S->d[p] = S->rw[p] * S->scale;
    double *y = S->z + (size_t)p * ldv;
    for (int l = 0; l < nloc; l++) {
      double t = 0;
      for (int i = 0; i < kept; i++)
        t += S->v[(size_t)i * ldv + l] * S->ru[(size_t)p * kept + i];
      y[l] = t;
    }
  }
  return found;
}

/* PARPACK's Lanczos on S / s from the start keyed by the global row: the
 * Ritz pairs into S->d, S->z (S->nconv of them). */
static int cm__span_arpack(cm_context_t *ctx, cm__span_t *S,
                           const cm_options_t *opts, const double *warm) {
  int iparam[11] = {0}, ipntr[14] = {0}, ido = 0, info = 1, st = CM_OK;
  int nloc = S->nloc, ldv = S->ldv, matvecs = 0;
  S->seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t)S->comp;
  for (int i = 0; i < nloc; i++) /* keyed by the component's global row */
    S->resid[i] = warm ? warm[i] : cm__gauss(S->seed, (uint64_t)(S->goff + i));
  iparam[0] = 1, iparam[2] = opts->max_iter, iparam[6] = 1;
  MPI_Fint fc = MPI_Comm_c2f(S->cc);
  for (;;) {
    /* PARPACK refuses a local size of 0 (info -1 on that rank alone, the
     * others then wait in a reduction): a rank holding bodies of the
     * component but none of its contacts takes one dummy row, a zero row
     * and column of S (eigenvalue 0) that starts at 0 and is never read */
    pdsaupd_c(fc, &ido, "I", ldv, "LA", S->nev, opts->tol, S->resid, S->ncv,
              S->v, ldv, iparam, ipntr, S->workd, S->workl, S->lworkl, &info);
    if (ido != 1 && ido != -1)
      break;
    double *xin = S->workd + ipntr[0] - 1, *yout = S->workd + ipntr[1] - 1;
    cm__dop_apply(&S->op, xin, yout); /* y = S x / s */
    for (int i = 0; i < nloc; i++)
      yout[i] *= S->op.inv_s;
    if (nloc == 0)
      yout[0] = 0;
    matvecs++;
    if (S->deadline > 0) { /* --max-seconds: every rank stops together */
      int late = MPI_Wtime() > S->deadline, any = 0;
      MPI_Allreduce(&late, &any, 1, MPI_INT, MPI_MAX, S->cc);
      if (any) {
        S->timed_out = 1;
        break;
      }
    }
  }
  if (S->timed_out) { /* the serial's estimate of the restarts */
    int ncv = S->ncv, nev = S->nev;
    S->iterations = matvecs > ncv ? 1 + (matvecs - ncv) / (ncv - nev) : 0;
    S->notconv = 1;
    S->nconv = cm__span_rr(ctx, S);
    return S->nconv >= 0 ? CM_OK : CM_NUMERIC;
  }
  S->iterations = iparam[2];
  if (info < 0)
    return CM__ERR(ctx, CM_NUMERIC, NULL,
                   "component %d: PARPACK pdsaupd failed (info %d)", S->comp,
                   info);
  S->notconv = info == 1 || iparam[4] < S->nev;
  int rinfo = 0;
  if (iparam[4] > 0)
    pdseupd_c(fc, 1, "A", S->sel, S->d, S->z, ldv, 0.0, "I", ldv, "LA", S->nev,
              opts->tol, S->resid, S->ncv, S->v, ldv, iparam, ipntr, S->workd,
              S->workl, S->lworkl, &rinfo);
  if (rinfo < 0)
    st = CM__ERR(ctx, CM_NUMERIC, NULL,
                 "component %d: PARPACK pdseupd failed (info %d)", S->comp,
                 rinfo);
  S->nconv = rinfo < 0 ? 0 : iparam[4];
  return st;
}

/* Ritz vector j: its Rayleigh quotient, residual and top shares, as a mode
 * record on rank 0 of cc (none when lambda <= 0). */
static void cm__span_mode(cm__span_t *S, int j, int *nmodes, cm__dbuf_t *out) {
  cm__dop_t *op = &S->op;
  const cm__mpi_part_t *P = S->P;
  int nloc = S->nloc, T = S->T, TB = S->TB;
  double *zj = S->z + (size_t)j * S->ldv, *y = S->y;
  double nz = sqrt(cm__dot_all(nloc, zj, zj, S->cc));
  for (int i = 0; i < nloc; i++)
    zj[i] /= nz;
  cm__dop_apply(op, zj, y);
  double lam = cm__dot_all(nloc, zj, y, S->cc); /* z^T S z */
  if (!(lam > 0))
    return;
  double rr = 0;
  for (int i = 0; i < nloc; i++)
    rr += (y[i] - lam * zj[i]) * (y[i] - lam * zj[i]);
  double res = sqrt(cm__allsum(rr, S->cc)) / lam; /* |S z - lam z| / lam */
  double zeta = 0; /* cm__mode_zeta: sum_r (c_r / k_r) z_r^2 omega / 2 */
  if (op->g) {
    double zs = 0;
    for (int i = 0; i < nloc; i++)
      zs += op->g[i] / op->k[i] * zj[i] * zj[i];
    zeta = 0.5 * sqrt(lam) * cm__allsum(zs, S->cc);
  }
  double hm = cm_step_central_difference(sqrt(lam), zeta);
  S->hmodal = hm < S->hmodal ? hm : S->hmodal;
  if ((*nmodes)++ == 0)
    S->lam0 = lam;
  /* contact shares: z^2 over each contact's rows */
  int n = 0;
  for (int r = 0; r < nloc;) {
    int c = op->contact[r];
    double e = 0;
    for (; r < nloc && op->contact[r] == c; r++)
      e += zj[r] * zj[r];
    cm__pick3(S->pk, &n, T,
              (cm__share3_t){e, (double)P->corig[S->k0 + c],
                             (double)(P->c0 + S->k0 + c)});
  }
  int mc = cm__merge_picks(S->cc, S->pk, n, T, S->mg, &S->mb);
  /* body shares: |(B^T z)_b|^2 / lambda on the owners (after the sum) */
  cm__dop_BT(op, zj, 0);
  n = 0;
  for (int b = 0; b < op->h.no; b++) {
    double e = 0;
    for (int k = 0; k < op->nd; k++)
      e += op->u[(size_t)b * op->nd + k] * op->u[(size_t)b * op->nd + k];
    int64_t pos = S->o0 + b;
    cm__pick3(
        S->pk + T, &n, TB,
        (cm__share3_t){e / lam, (double)P->borig[pos - P->b0], (double)pos});
  }
  int nbs = cm__merge_picks(S->cc, S->pk + T, n, TB, S->mg + T, &S->mb);
  if (P->vecs) /* --vectors: this mode's shape (vectors.c), u = B^T z */
    cm__mpi_vecs_span(P->vecs, P, S->comp, S->cc, zj, nloc, S->k0,
                      (int)(P->c1 - P->c0), S->goff, op->u, S->o0, op->h.no,
                      lam);
  if (S->q != 0)
    return;
  mc = cm__settle3(S->mg, mc, S->Tq);
  nbs = cm__settle3(S->mg + T, nbs, S->TBq);
  double head[8] = {CM__REC_MODE, lam, sqrt(lam), res, zeta, S->comp, mc, nbs};
  for (int i = 0; i < 8; i++)
    cm__dbuf_push(out, head[i]);
  for (int i = 0; i < mc; i++)
    cm__dbuf_push(out, S->mg[i].pos), cm__dbuf_push(out, S->mg[i].share);
  for (int i = 0; i < nbs; i++)
    cm__dbuf_push(out, S->mg[T + i].pos),
        cm__dbuf_push(out, S->mg[T + i].share);
}

/* The component record (rank 0 of cc) and this rank's sums. */
static void cm__span_record(cm__span_t *S, double active, cm__dbuf_t *out,
                            cm__mpi_sums_t *sums) {
  double nb_all = (double)(S->cb1 - S->cb0);
  double dofs = cm__allsum(active, S->cc);
  cm__dop_t *op = &S->op;
  if (S->q == 0) {
    double head[12] = {
        CM__REC_COMP,  sqrt(S->lam0),        S->omega_upper, S->comp,
        nb_all,        (double)S->N,         dofs,           CM_METHOD_ARPACK,
        S->iterations, (double)op->products, !S->notconv,    -1};
    for (int i = 0; i < 12; i++)
      cm__dbuf_push(out, head[i]);
    int nl20 = nb_all < 20 ? (int)nb_all : 20;
    cm__dbuf_push(out, nl20);
    for (int i = 0; i < nl20; i++)
      cm__dbuf_push(out, (double)(S->cb0 + i));
    sums->iterations += S->iterations;
    sums->matvecs += (double)op->products;
    sums->ncv = fmax(sums->ncv, S->ncv);
    sums->n_arpack += 1;
    sums->notconv += S->notconv;
    sums->timed_out += S->timed_out;
  }
  for (int p = 0; p < op->h.P; p++)
    sums->halo_msgs += (op->h.rcnt[p] > 0) + (op->h.scnt[p] > 0);
  sums->halo_bodies += op->h.nh;
  sums->halo_bytes +=
      8.0 * op->nd * ((double)op->h.nh + (double)op->h.sdsp[op->h.P]);
  sums->products += (double)op->products;
  sums->t_products += op->t_products;
}

/* ---- the damped step (analyze/damped.c, distributed) ---------- */

/* Root h > 0 of a h^2 + 2 b h = 4 (cm__damped_root in damped.c). */
static double cm__span_root(double a, double b) {
  return 4.0 / (b + sqrt(b * b + 4.0 * a));
}

/* Row scales of the operator assembled with weights k + c so that it
 * applies the weights wk k + wg c (rows of a contact keep their order). */
static void cm__dop_weigh(cm__dop_t *op, double wk, double wg) {
  for (int r = 0; r < op->nloc; r++) {
    double s = op->spring[r], g = op->g ? op->g[r] : 0;
    op->rs[r] = s + g > 0 ? sqrt((wk * s + wg * g) / (s + g)) : 0;
  }
}

/* max_r (|B| |B|^T v)_r / v_r over the ranks (v > 0), nv = |B| |B|^T v and
 * its largest entry over the ranks into *top. */
static double cm__dop_cw_step(cm__span_t *D, const double *v, double *nv,
                              double *top) {
  cm__dop_BT(&D->op, v, 1);
  cm__dop_B(&D->op, nv, 1);
  double b = 0, t = 0;
  for (int r = 0; r < D->nloc; r++) {
    b = fmax(b, nv[r] / v[r]);
    t = fmax(t, nv[r]);
  }
  double in[2] = {b, t}, out[2] = {0, 0};
  MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_MAX, D->cc);
  *top = out[1];
  return out[0];
}

/* Certified at h: the Collatz-Wielandt bound (damped.c's cm__cw_bound,
 * 30 power steps on |B| |B|^T from |z| + max|z| / 10, z the top vector in
 * D->x) of the damped operator is <= 4. The serial cmodes factors
 * 4 M - h^2 K - 2 h C instead (up to 300,000 dofs); no distributed
 * factorization here. Collective on D->cc. */
static int cm__span_cw_ok(cm__span_t *D, double h, double *v, double *nv) {
  cm__dop_weigh(&D->op, h * h, 2.0 * h);
  double vmax = 0;
  for (int r = 0; r < D->nloc; r++)
    vmax = fmax(vmax, fabs(D->x[r]));
  MPI_Allreduce(MPI_IN_PLACE, &vmax, 1, MPI_DOUBLE, MPI_MAX, D->cc);
  for (int r = 0; r < D->nloc; r++)
    v[r] = fabs(D->x[r]) + 0.1 * vmax + 1e-300;
  double u = INFINITY;
  for (int it = 0; it <= 30; it++) {
    double top = 0, b = cm__dop_cw_step(D, v, nv, &top);
    if (!(top > 0))
      break;
    u = fmin(u, b);
    for (int r = 0; r < D->nloc; r++)
      v[r] = nv[r] / top;
  }
  return u <= 4.0;
}

/* The top vector of h^2 K~ + 2 h C~ at h (warm: D->x, or NULL), its
 * Rayleigh quotients of K~ and C~ into a, b and the vector into D->x. */
static int cm__span_top_at(cm_context_t *ctx, cm__span_t *D,
                           const cm_options_t *o, double h, int warm, double *a,
                           double *b) {
  cm__dop_weigh(&D->op, h * h, 2.0 * h);
  int st = cm__span_arpack(ctx, D, o, warm ? D->x : NULL);
  if (!st && D->timed_out)
    return CM__ERR(ctx, CM_NOT_CONVERGED, NULL,
                   "component %d: the damped-step search stopped by its "
                   "time budget",
                   D->comp);
  if (st || D->nconv < 1)
    return st ? st
              : CM__ERR(ctx, CM_NOT_CONVERGED, NULL,
                        "component %d: no converged vector in the "
                        "damped-step search",
                        D->comp);
  int nloc = D->nloc;
  double *z = D->z + (size_t)(D->nconv - 1) * D->ldv; /* ascending */
  double nz = sqrt(cm__dot_all(nloc, z, z, D->cc));
  for (int i = 0; i < nloc; i++)
    D->x[i] = z[i] / nz;
  cm__dop_apply(&D->op, D->x, D->y);
  double lam = cm__dot_all(nloc, D->x, D->y, D->cc), ab[2] = {0, 0};
  for (int i = 0; i < nloc; i++) { /* z_r^2 split by weight */
    double k = h * h * D->op.spring[i] + 2.0 * h * D->op.g[i];
    double zz = k > 0 ? D->x[i] * D->x[i] / k : 0;
    ab[0] += D->op.spring[i] * zz;
    ab[1] += D->op.g[i] * zz;
  }
  MPI_Allreduce(MPI_IN_PLACE, ab, 2, MPI_DOUBLE, MPI_SUM, D->cc);
  *a = lam * ab[0], *b = lam * ab[1];
  return CM_OK;
}

/* Whether slot dof j of D is active anywhere (act, nslot nd: > 0 there,
 * the halo copies too) and whether each slot is shared (ifc, nslot): a
 * halo body, an owned body another rank has in its halo, an owned body of
 * a row with a halo body. Collective on D->cc. */
static void cm__schur_shared(cm__dop_t *op, double *act, char *ifc) {
  int nd = op->nd, no = op->h.no;
  for (int e = 0; e < op->Bp[op->nloc]; e++)
    act[op->Bj[e]] = 1;
  cm__halo_reverse(&op->h, nd, act + (size_t)no * nd, act);
  cm__halo_forward(&op->h, nd, act, act + (size_t)no * nd);
  for (int i = 0; i < op->nslot; i++)
    ifc[i] = i >= no;
  for (int k = 0; k < op->h.sdsp[op->h.P]; k++)
    ifc[op->h.sidx[k]] = 1;
  for (int r = 0; r < op->nloc; r++) {
    int halo = 0;
    for (int e = op->Bp[r]; e < op->Bp[r + 1]; e++)
      halo |= op->Bj[e] / nd >= no;
    for (int e = op->Bp[r]; halo && e < op->Bp[r + 1]; e++)
      ifc[op->Bj[e] / nd] = 1;
  }
}

/* The interface plan of the damped operator D->op (mpi_internal.h): the
 * interior dofs of this rank, the interface dofs numbered by their owners
 * (ranks in order, bodies in order), their numbers copied to the halo.
 * Collective on D->cc; errors agreed. */
static int cm__schur_plan(cm_context_t *ctx, cm__span_t *D,
                          cm__schur_plan_t *pl) {
  cm__dop_t *op = &D->op;
  int nd = op->nd, no = op->h.no, n = op->nslot * nd;
  memset(pl, 0, sizeof *pl);
  pl->ndof = n, pl->nown = no * nd;
  double *act = calloc((size_t)n + 1, sizeof(double));
  double *gd = calloc((size_t)n + 1, sizeof(double));
  char *ifc = malloc((size_t)op->nslot + 1);
  pl->col = malloc(sizeof(int) * ((size_t)n + 1));
  pl->gidx = malloc(sizeof(long long) * ((size_t)n + 1));
  int st = !act || !gd || !ifc || !pl->col || !pl->gidx
               ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (Schur plan)")
               : CM_OK;
  st = cm__mpi_agree(ctx, st, D->cc);
  if (!st) {
    cm__schur_shared(op, act, ifc);
    long long nown = 0, goff = 0;      /* owned interface dofs, the first's */
    for (int j = 0; j < pl->nown; j++) /* interior first */
      pl->col[j] = act[j] > 0 && !ifc[j / nd] ? pl->nI++ : -1;
    for (int j = 0; j < pl->nown; j++)
      if (act[j] > 0 && ifc[j / nd])
        gd[j] = (double)nown++;
    MPI_Exscan(&nown, &goff, 1, MPI_LONG_LONG, MPI_SUM, D->cc);
    MPI_Allreduce(&nown, &pl->nG, 1, MPI_LONG_LONG, MPI_SUM, D->cc);
    if (D->q == 0)
      goff = 0;
    for (int j = 0; j < pl->nown; j++)
      gd[j] += (double)goff;
    cm__halo_forward(&op->h, nd, gd, gd + pl->nown);
    for (int j = 0; j < n; j++)
      if (act[j] > 0 && (j >= pl->nown || ifc[j / nd])) {
        pl->gidx[pl->nGr] = (long long)gd[j];
        pl->col[j] = pl->nI + pl->nGr++;
      }
  }
  free(act), free(gd), free(ifc);
  return st;
}

/* The Schur test's answer at each step of CMODES_MPI_SCHUR_PROBE, on
 * stderr from rank 0 of D->cc (a test knob). Collective on D->cc. */
static int cm__span_schur_probe(cm_context_t *ctx, cm__span_t *D,
                                const cm__schur_plan_t *pl) {
  double hp[16];
  int np = cm__mpi_schur_probes(hp, 16), st = CM_OK;
  if (np < 0)
    st = CM__ERR(ctx, CM_USAGE, "CMODES_MPI_SCHUR_PROBE",
                 "CMODES_MPI_SCHUR_PROBE: not a list of positive steps "
                 "H1,H2,... (a test knob); unset it");
  st = cm__mpi_agree(ctx, st, D->cc); /* each rank reads its environment */
  for (int i = 0; !st && i < np; i++) {
    int ok = 0;
    cm__dop_weigh(&D->op, hp[i] * hp[i], 2.0 * hp[i]);
    st = cm__mpi_schur_definite(ctx, pl, D->nloc, D->op.Bp, D->op.Bj, D->op.Bx,
                                D->op.rs, 4.0 * (1.0 - 1e-9), D->cc, &ok);
    if (!st && D->q == 0)
      fprintf(stderr,
              "cmodes-mpi: Schur probe: component %d, h %.17g: %s (%lld "
              "shared dofs)\n",
              D->comp, hp[i], ok ? "definite" : "not definite", pl->nG);
  }
  return st;
}

/* The certified step of D's component as the serial damped.c certifies
 * it (cm__certified_search): the first h* (1 - 1e-4 2^j) above *hc at
 * which 4 M - h^2 K - 2 h C is positive definite (with its 1e-9 margin),
 * by the Schur test over the ranks. *kind: CM__CERT_SCHUR when a step
 * was tested, else why not (CM__CERT_OVER_*: then the bounds certify).
 * Collective on D->cc. */
static int cm__span_schur_search(cm_context_t *ctx, cm__span_t *D,
                                 double active, double hn, double *hc,
                                 int *kind) {
  double dofs = cm__allsum(active, D->cc);
  long cap = cm__mpi_schur_cap();
  int st = CM_OK;
  if (cap < 0)
    st = CM__ERR(ctx, CM_USAGE, "CMODES_MPI_SCHUR_MAX_DOFS",
                 "CMODES_MPI_SCHUR_MAX_DOFS: not an integer from 0 to "
                 "40000 (the cap on shared dofs of the Schur test); unset "
                 "it or give a number such as 6000");
  st = cm__mpi_agree(ctx, st, D->cc); /* each rank reads its environment */
  *kind = CM__CERT_OVER_DOFS;
  if (st || dofs > CM__MPI_DEFINITE_MAX_DOFS)
    return st; /* as the serial cmodes: bounds above it */
  cm__schur_plan_t pl;
  st = cm__schur_plan(ctx, D, &pl);
  *kind = CM__CERT_OVER_CAP;
  if (st || pl.nG > cap) {
    cm__schur_plan_free(&pl);
    return st;
  }
  st = cm__span_schur_probe(ctx, D, &pl);
  /* the dense Cholesky, not stoppable, only when it fits in the budget
   * (rank 0's clock, as damped.c at CM__FACTOR_RATE) */
  double ng = (double)pl.nG;
  int late = D->deadline > 0 &&
             MPI_Wtime() + ng * ng * ng / 3.0 / CM__FACTOR_RATE > D->deadline;
  MPI_Bcast(&late, 1, MPI_INT, 0, D->cc);
  *kind = late ? CM__CERT_OVER_BUDGET : CM__CERT_SCHUR;
  for (double f = 1e-4; !st && !late && f < 1.0; f *= 2) {
    double h = hn * (1.0 - f);
    int ok = 0;
    if (h <= *hc)
      break;
    cm__dop_weigh(&D->op, h * h, 2.0 * h);
    st = cm__mpi_schur_definite(ctx, &pl, D->nloc, D->op.Bp, D->op.Bj, D->op.Bx,
                                D->op.rs, 4.0 * (1.0 - 1e-9), D->cc, &ok);
    if (!st && ok) {
      *hc = h;
      break;
    }
  }
  cm__schur_plan_free(&pl);
  return st;
}

/* The certified step by bounds (no factorization): the first
 * h* (1 - 1e-4 2^j) above *hc whose Collatz-Wielandt bound is <= 4
 * (CM__CERT_CW), else the largest h whose Gershgorin bound of
 * h^2 K~ + 2 h C~ itself (not the sum of the two bounds) is <= 4, by
 * bisection (the bound grows with h; CM__CERT_GERSH). Collective. */
static int cm__span_bounds_search(cm__span_t *D, double hn, double *v,
                                  double *nv, double *hc) {
  for (double f = 1e-4; *hc < hn && f < 1.0; f *= 2) {
    double hh = hn * (1.0 - f);
    if (hh <= *hc)
      break;
    if (cm__span_cw_ok(D, hh, v, nv)) {
      *hc = hh;
      return CM__CERT_CW;
    }
  }
  double lo = *hc, hi = hn * (1.0 - 1e-4), top = 0;
  for (int j = 0; j < 40 && lo < hi; j++) {
    double mid = 0.5 * (lo + hi);
    cm__dop_weigh(&D->op, mid * mid, 2.0 * mid);
    for (int r = 0; r < D->nloc; r++)
      v[r] = 1;
    if (cm__dop_cw_step(D, v, nv, &top) <= 4.0)
      lo = mid;
    else
      hi = mid;
  }
  *hc = lo;
  return CM__CERT_GERSH;
}

/* The damped limit of cut component S->comp (solved undamped in S): the
 * monotone iteration of damped.c from S->hmodal on an operator assembled
 * once with weights k + c (rows scaled per h), then the certified step:
 * the Gershgorin start h^2 U_K + 2 h U_C = 4, raised to the first
 * h* (1 - 1e-4 2^j) at which 4 M - h^2 K - 2 h C is positive definite
 * (the Schur test of schur.c, as damped.c's factorization; active: this
 * rank's active dofs of the component), or, past its cap, whose bounds
 * are <= 4. Into sums on the component's first rank. Collective on
 * S->cc. */
static int cm__span_damped(cm_context_t *ctx, cm__span_t *S, const int *members,
                           int64_t o1, int k1, double active,
                           const cm_options_t *opts, cm__mpi_sums_t *sums) {
  cm__span_t D;
  memset(&D, 0, sizeof D);
  D.P = S->P, D.cc = S->cc, D.comp = S->comp, D.q = S->q;
  D.op.h.cc = S->cc, D.op.h.P = S->op.h.P, D.op.h.q = S->op.h.q;
  D.cb0 = S->cb0, D.cb1 = S->cb1, D.o0 = S->o0, D.k0 = S->k0;
  D.deadline = S->deadline;
  int st = cm__dop_build(ctx, S->P, members, S->o0, o1, S->k0, k1, 1.0, 1.0,
                         &D.op, NULL);
  cm_options_t o = *opts;
  o.modes = 1;
  double *v = NULL, *nv = NULL;
  if (!st) {
    D.nloc = D.op.nloc;
    D.op.inv_s = 1;
    D.op.rs = malloc(sizeof(double) * ((size_t)D.nloc + 1));
    v = malloc(sizeof(double) * ((size_t)D.nloc + 1));
    nv = malloc(sizeof(double) * ((size_t)D.nloc + 1));
    if (!D.op.g) /* this rank's contacts have no dashpots */
      D.op.g = calloc((size_t)D.nloc + 1, sizeof(double));
    if (!D.op.rs || !v || !nv || !D.op.spring || !D.op.g)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (damped operator)");
  }
  st = cm__mpi_agree(ctx, st, S->cc);
  if (!st)
    st = cm__span_alloc(ctx, &D, &o);
  if (!st && D.N < 2) /* PARPACK needs two rows; S had them (undamped) */
    st = CM__ERR(ctx, CM_INTERNAL, NULL,
                 "component %d: damped operator "
                 "with %lld rows",
                 S->comp, D.N);
  /* ---- the coupled limit: monotone iteration from above ---- */
  double h = S->hmodal, hn = h, tol = fmax(opts->tol, 1e-12), a = 0, b = 0;
  o.tol = fmax(opts->tol, 1e-6);
  int it = 0;
  while (!st && it < 60) {
    st = cm__span_top_at(ctx, &D, &o, h, it > 0, &a, &b);
    if (st)
      break;
    it++;
    hn = fmin(h, cm__span_root(a, b));
    if (h - hn <= fmax(tol, o.tol) * h) {
      if (o.tol <= opts->tol)
        break;
      o.tol = opts->tol; /* converged loosely: tighten */
    }
    h = hn;
  }
  /* ---- certified: the Gershgorin start, then exactly (Schur) or by
   * the Collatz-Wielandt and Gershgorin bounds ---- */
  double hc = 0;
  int kind = CM__CERT_FACTOR;
  if (!st) {
    cm__dop_weigh(&D.op, 0.0, 1.0);
    for (int r = 0; r < D.nloc; r++)
      v[r] = 1;
    double top = 0, ucc = cm__dop_cw_step(&D, v, nv, &top);
    hc = cm__span_root(S->gall, ucc);
    if (hc < hn) /* else the bounds reach the limit: nothing to raise */
      st = cm__span_schur_search(ctx, &D, active, hn, &hc, &kind);
    if (!st && kind != CM__CERT_SCHUR)
      kind |= cm__span_bounds_search(&D, hn, v, nv, &hc);
  }
  if (!st && S->q == 0) {
    if (hn < sums->damp_h || (hn == sums->damp_h && S->comp < sums->damp_comp))
      sums->damp_h = hn, sums->damp_comp = S->comp,
      sums->damp_zeta = a > 0 ? b / (2.0 * sqrt(a)) : 0;
    sums->damp_iter = fmax(sums->damp_iter, it);
    double c = fmin(hc, hn);
    if (c < sums->damp_cert)
      sums->damp_cert = c, sums->damp_cw = kind;
    sums->matvecs += (double)D.op.products;
  }
  if (st > 0 && S->q == 0) /* not converged: no limit for this component */
    sums->damp_fail += 1, sums->timed_out += D.timed_out;
  free(v), free(nv);
  cm__span_free(&D);
  return cm__mpi_agree(ctx, st, S->cc);
}

int cm__mpi_span_solve(cm_context_t *ctx, const cm__mpi_part_t *P, int comp,
                       MPI_Comm cc, const int *members,
                       const cm_options_t *opts, double deadline,
                       cm__dbuf_t *out, cm__mpi_sums_t *sums) {
  cm__span_t S;
  memset(&S, 0, sizeof S);
  S.P = P, S.cc = cc, S.comp = comp, S.op.h.cc = cc, S.deadline = deadline;
  MPI_Comm_size(cc, &S.op.h.P);
  MPI_Comm_rank(cc, &S.op.h.q);
  S.q = S.op.h.q;
  S.cb0 = (int64_t)P->f->comp[2 * comp];
  S.cb1 = (int64_t)P->f->comp[2 * comp + 2];
  int64_t o0 = S.cb0 > P->b0 ? S.cb0 : P->b0;
  int64_t o1 = S.cb1 < P->b1 ? S.cb1 : P->b1;
  if (o1 < o0)
    o1 = o0;
  S.o0 = o0;
  S.k0 = (int)(P->bcs[o0 - P->b0] - P->bcs[0]);
  int k1 = (int)(P->bcs[o1 - P->b0] - P->bcs[0]);
  double t0 = MPI_Wtime(), active = 0;
  /* ---- the operator and every buffer ---- */
  int st = cm__dop_build(ctx, P, members, o0, o1, S.k0, k1, 1.0, 0.0, &S.op,
                         &active);
  st = cm__mpi_agree(ctx, st, cc);
  if (!st) {
    S.nloc = S.op.nloc;
    sums->active_dofs += active;
    sums->rows += S.nloc;
    st = cm__span_alloc(ctx, &S, opts);
  }
  if (st) {
    cm__span_free(&S);
    return st;
  }
  /* ---- bounds, eigenpairs, modes, the probabilistic bound ---- */
  cm__span_bounds(&S, sums);
  double t_op = MPI_Wtime() - t0, te0 = MPI_Wtime();
  S.hmodal = INFINITY;
  st = cm__span_arpack(ctx, &S, opts, NULL); /* the same on every rank */
  int nmodes = 0;
  for (int j = S.nconv - 1; j >= 0 && !st; j--)
    cm__span_mode(&S, j, &nmodes, out);
  double pub = 0; /* at least the lambda found, at most Gershgorin's */
  int psteps = 0;
  if (!st && S.timed_out)
    pub = S.gall; /* past the budget: Gershgorin's bound, no more steps */
  else if (!st)
    st = cm__span_prob_bound(ctx, &S.op, cc, S.N, S.goff, S.seed, S.scale,
                             S.gall, opts->failure_probability, &pub, &psteps);
  if (!st) {
    pub = fmin(fmax(pub, S.lam0), S.gall);
    sums->omega_upper_prob = fmax(sums->omega_upper_prob, sqrt(pub));
    if (S.q == 0)
      sums->prob_steps += psteps;
    cm__span_record(&S, active, out, sums);
  }
  /* with dashpots: the component's damped limit (not after the budget) */
  if (!st && P->dashpots && !S.timed_out && nmodes > 0 && isfinite(S.hmodal))
    st = cm__span_damped(ctx, &S, members, o1, k1, active, opts, sums);
  else if (st >= 0 && P->dashpots && S.q == 0)
    sums->damp_fail += 1; /* no damped limit for it: none is given */
  sums->t_eigen += MPI_Wtime() - te0;
  sums->t_operator += t_op;
  cm__span_free(&S);
  return cm__mpi_agree(ctx, st, cc);
}

/* ---- the operator alone, for bench/slepc/bench_mpi_slepc.c ---- */

int cm__mpi_bench_open(cm_context_t *ctx, const cm__mpi_part_t *P, int comp,
                       MPI_Comm cc, const int *members,
                       const cm_options_t *opts, void **out) {
  cm__span_t *S = calloc(1, sizeof *S);
  *out = NULL;
  if (!S)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  S->P = P, S->cc = cc, S->comp = comp, S->op.h.cc = cc;
  MPI_Comm_size(cc, &S->op.h.P);
  MPI_Comm_rank(cc, &S->op.h.q);
  S->q = S->op.h.q;
  S->cb0 = (int64_t)P->f->comp[2 * comp];
  S->cb1 = (int64_t)P->f->comp[2 * comp + 2];
  int64_t o0 = S->cb0 > P->b0 ? S->cb0 : P->b0;
  int64_t o1 = S->cb1 < P->b1 ? S->cb1 : P->b1;
  if (o1 < o0)
    o1 = o0;
  S->o0 = o0;
  S->k0 = (int)(P->bcs[o0 - P->b0] - P->bcs[0]);
  int k1 = (int)(P->bcs[o1 - P->b0] - P->bcs[0]);
  int st =
      cm__dop_build(ctx, P, members, o0, o1, S->k0, k1, 1.0, 0.0, &S->op, NULL);
  st = cm__mpi_agree(ctx, st, cc);
  if (!st) {
    S->nloc = S->op.nloc;
    st = cm__span_alloc(ctx, S, opts);
  }
  if (st) {
    cm__span_free(S);
    free(S);
    return st;
  }
  cm__mpi_sums_t sums;
  memset(&sums, 0, sizeof sums);
  cm__span_bounds(S, &sums); /* the scale s */
  S->seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t)S->comp;
  *out = S;
  return CM_OK;
}

void cm__mpi_bench_info(void *p, int *nloc, long long *goff, long long *N,
                        double *scale) {
  cm__span_t *S = p;
  *nloc = S->nloc, *goff = S->goff, *N = S->N, *scale = S->scale;
}

void cm__mpi_bench_start(void *p, double *x) {
  cm__span_t *S = p;
  for (int i = 0; i < S->nloc; i++) /* the solve's start, keyed by row */
    x[i] = cm__gauss(S->seed, (uint64_t)(S->goff + i));
}

void cm__mpi_bench_apply(void *p, const double *x, double *y) {
  cm__span_t *S = p;
  cm__dop_apply(&S->op, x, y);
  for (int i = 0; i < S->nloc; i++)
    y[i] *= S->op.inv_s;
}

long cm__mpi_bench_products(void *p, double *seconds) {
  cm__span_t *S = p;
  *seconds = S->op.t_products;
  return S->op.products;
}

int cm__mpi_bench_parpack(cm_context_t *ctx, void *p, const cm_options_t *opts,
                          double *lambda, int *nconv) {
  cm__span_t *S = p;
  int st = cm__span_arpack(ctx, S, opts, NULL);
  *nconv = st ? 0 : S->nconv;
  for (int j = 0; j < *nconv; j++) /* descending, unscaled */
    lambda[j] = S->d[S->nconv - 1 - j] * S->scale;
  return cm__mpi_agree(ctx, st, S->cc);
}

void cm__mpi_bench_close(void **p) {
  if (*p) {
    cm__span_free(*p);
    free(*p);
  }
  *p = NULL;
}
