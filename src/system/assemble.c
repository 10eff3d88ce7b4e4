/* assemble.c: scene -> system. Finds the components (moving bodies joined
 * through contacts), orders rows and columns by component, decides which
 * dofs are active (touched by a contact and not a structural zero), and fills
 * block-diagonal M and CSR J in parallel, deterministically.
 * Not for factorization (operator/) or matrices from files (system/matrices.c).
 *
 * Speed at 1e6 contacts comes from three choices: every per-body quantity a
 * contact pass needs sits in a small array indexed by the body's rank in the
 * column order (not in the 144-byte cm_body_t), the row order and the nonzero
 * count of every row are known before the dofs are decided (a touched dof is
 * always active), and every pass over contacts or bodies writes into
 * precomputed offsets, so it runs on all threads with the same result. */
#include "internal.h"

#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Dropping a dof must change no frequency (docs/math.md, "Structural zeros
 * and dropped dofs"). A rotational entry v of a row on a body of mass m is
 * negligible when |v| <= CM__LEVER_TOL sqrt(lambda_lo / m), lambda_lo a
 * lower bound on the smallest principal moment: a rotational dof whose
 * entries are all negligible is dropped, which lowers each eigenvalue of S
 * by at most 6 CM__LEVER_TOL^2 trace(S). Every other entry is kept as
 * computed, however small. */
#define CM__LEVER_TOL 1e-12
/* Untouched rotations of a 3D body may be dropped beside touched ones only
 * if the world inertia couples them by |I_AU|_F <= CM__COUPLE_TOL
 * lambda_lo: the eigenvalues then move by a relative 1e-16 at most. */
#define CM__COUPLE_TOL 1e-8
/* A 3D body whose world inertia block is not diagonal is formed
 * (R I_b R^T) and factored in double precision: the block's relative error
 * in the PSD order is at most CM_INERTIA_DELTA_PER_COND x its condition
 * number (cm_system_t.inertia_cond, docs/math.md); past 1/2 no bound is
 * left and the scene is refused. */
#define CM__DELTA_REFUSE 0.5

void cm_system_destroy(cm_system_t **sp) {
  if (!sp || !*sp)
    return;
  cm_system_t *s = *sp;
  /* an assembled system's arrays came from the workspace pool */
  void (*fr)(void *) = s->pooled ? cm__ws_free : free;
  fr(s->Jp), fr(s->Jj), fr(s->Jx), fr(s->k), fr(s->g), fr(s->spring);
  fr(s->row_kind), fr(s->Mp), fr(s->Mi), fr(s->Mx);
  fr(s->row_contact), fr(s->contact_row);
  fr(s->col_body), fr(s->col_dof), fr(s->row_a), fr(s->row_b);
  fr(s->comp_row), fr(s->comp_col), fr(s->body_comp);
  cm__free_names(s->row_names, s->nc), cm__free_names(s->col_names, s->ndofs);
  free(s);
  *sp = NULL;
}

/* ---- small geometry ----------------------------------------------------- */

/* R (row-major) from the unit quaternion q = (w, x, y, z), body -> world
 * (verify's rigid-body model uses it too). */
void cm__quat_to_R(const double *q, double *R) {
  double w = q[0], x = q[1], y = q[2], z = q[3];
  R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z),
  R[2] = 2 * (x * z + w * y);
  R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z),
  R[5] = 2 * (y * z - w * x);
  R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x),
  R[8] = 1 - 2 * (x * x + y * y);
}

/* Iw = R Ib R^T, symmetrised. */
static void cm__world_inertia(const cm_body_t *b, double *Iw) {
  double R[9], T[9];
  cm__quat_to_R(b->orientation, R);
  for (int i = 0; i < 3; i++) /* T = R Ib */
    for (int j = 0; j < 3; j++) {
      double s = 0;
      for (int l = 0; l < 3; l++)
        s += R[3 * i + l] * b->inertia[3 * l + j];
      T[3 * i + j] = s;
    }
  for (int i = 0; i < 3; i++) /* Iw = T R^T */
    for (int j = 0; j < 3; j++) {
      double s = 0;
      for (int l = 0; l < 3; l++)
        s += T[3 * i + l] * R[3 * j + l];
      Iw[3 * i + j] = s;
    }
  for (int i = 0; i < 3; i++)
    for (int j = i + 1; j < 3; j++)
      Iw[3 * i + j] = Iw[3 * j + i] = 0.5 * (Iw[3 * i + j] + Iw[3 * j + i]);
}

/* Whether body b's world inertia block (cm__world_inertia) is diagonal.
 * With the identity orientation R = I exactly, so the block is the
 * symmetrised body tensor, bit for bit: no need to form it. */
static int cm__world_diagonal(const cm_body_t *b) {
  const double *q = b->orientation, *I = b->inertia;
  if (q[0] == 1 && q[1] == 0 && q[2] == 0 && q[3] == 0)
    return 0.5 * (I[1] + I[3]) == 0 && 0.5 * (I[2] + I[6]) == 0 &&
           0.5 * (I[5] + I[7]) == 0;
  double Iw[9];
  cm__world_inertia(b, Iw);
  return Iw[1] == 0 && Iw[2] == 0 && Iw[5] == 0;
}

/* The row directions of a contact: kind 0 is the normal n; kinds 1 and 2
 * are the tangents. 2D: t = (-n_y, n_x). 3D: with e the world axis of the
 * smallest |n_i| (the first on ties), t1 = (e - (e.n) n) / |e - (e.n) n|
 * and t2 = n x t1. Deterministic and documented in docs/math.md; the
 * spectrum does not depend on the choice (isotropic k_t, c_t). */
static void cm__direction(int dim, const double *n, int kind, double *t) {
  if (kind == 0) {
    t[0] = n[0], t[1] = n[1], t[2] = dim == 3 ? n[2] : 0.0;
    return;
  }
  if (dim == 2) {
    t[0] = -n[1], t[1] = n[0], t[2] = 0.0;
    return;
  }
  int e = 0;
  for (int i = 1; i < 3; i++)
    if (fabs(n[i]) < fabs(n[e]))
      e = i;
  double u[3] = {-n[e] * n[0], -n[e] * n[1], -n[e] * n[2]}; /* e - (e.n) n */
  u[e] += 1.0;
  double un = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
  u[0] /= un, u[1] /= un, u[2] /= un;
  if (kind == 1) {
    t[0] = u[0], t[1] = u[1], t[2] = u[2];
    return;
  }
  t[0] = n[1] * u[2] - n[2] * u[1]; /* n x t1 */
  t[1] = n[2] * u[0] - n[0] * u[2];
  t[2] = n[0] * u[1] - n[1] * u[0];
}

/* Row segment of J for the body at x (position) of contact c, row kind
 * (0 normal, 1 and 2 tangents), side 0 (a) or 1 (b): [d, r x d] for the
 * direction d, r = point - x or, when arms (c->has_arms, passed in so that
 * the contact's second cache line is read only for such contacts), the
 * contact's arm (sign applied by the caller). Returns the number of dofs
 * (3 in 2D, 6 in 3D). */
static int cm__segment(int dim, const cm_contact_t *c, int kind, int side,
                       int arms, const double *x, double *seg) {
  double n[3];
  cm__direction(dim, c->normal, kind, n);
  double r[3] = {c->point[0] - x[0], c->point[1] - x[1],
                 dim == 3 ? c->point[2] - x[2] : 0.0};
  if (arms) { /* explicit lever arms (engines, periodic images) */
    const double *arm = side ? c->arm_b : c->arm_a;
    r[0] = arm[0], r[1] = arm[1], r[2] = dim == 3 ? arm[2] : 0.0;
  }
  if (dim == 2) {
    seg[0] = n[0], seg[1] = n[1];
    seg[2] = r[0] * n[1] - r[1] * n[0]; /* (r x n)_z */
    return 3;
  }
  seg[0] = n[0], seg[1] = n[1], seg[2] = n[2];
  seg[3] = r[1] * n[2] - r[2] * n[1]; /* r x n */
  seg[4] = r[2] * n[0] - r[0] * n[2];
  seg[5] = r[0] * n[1] - r[1] * n[0];
  return 6;
}

/* Bit d set where seg[d] is not negligible: a translation entry != 0, a
 * rotational one |v| > lev (the body's CM__LEVER_TOL threshold). */
static unsigned cm__seg_bits(const double *seg, int nd, double lev) {
  unsigned bits = 0;
  int nt = nd == 3 ? 2 : 3;             /* translations */
  for (int d = 0; d < nd && d < 6; d++) /* no branch on the values: below */
    bits |= (unsigned)(d < nt ? seg[d] != 0 : fabs(seg[d]) > lev) << d;
  return bits;
}

/* Bit d set where seg[d] != 0: the entries J stores on active dofs.
 * Without a branch on the values: a sphere's lever arm is parallel to its
 * normal, so its rotational entries are rounding-sized or zero by the
 * rounding of the contact point, which no branch predictor follows (the
 * branches held about a fifth of cm__touched's samples on the 1e6 pile;
 * the time it saves was within the host's noise). */
static unsigned cm__seg_nonzero(const double *seg, int nd) {
  unsigned bits = 0;
  for (int d = 0; d < nd && d < 6; d++) /* d < 6: GCC's -Warray-bounds */
    bits |= (unsigned)(seg[d] != 0) << d;
  return bits;
}

/* ---- inertia: principal moments ---------------------------------------- */

/* Eigenvalues of the symmetric part of a 3 x 3 inertia tensor (row-major),
 * by cyclic Jacobi rotations; ascending. */
static void cm__inertia_eigs(const double *I, double *ev) {
  double a[3][3];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      a[i][j] = 0.5 * (I[3 * i + j] + I[3 * j + i]);
  for (int sweep = 0; sweep < 60; sweep++) {
    double off = fabs(a[0][1]) + fabs(a[0][2]) + fabs(a[1][2]);
    if (off == 0)
      break;
    for (int p = 0; p < 2; p++)
      for (int q = p + 1; q < 3; q++) {
        if (a[p][q] == 0)
          continue;
        double th = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        double t = (th >= 0 ? 1 : -1) / (fabs(th) + sqrt(th * th + 1));
        double c = 1 / sqrt(t * t + 1), sn = t * c;
        for (int k = 0; k < 3; k++) { /* columns p, q */
          double akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - sn * akq, a[k][q] = sn * akp + c * akq;
        }
        for (int k = 0; k < 3; k++) { /* rows p, q */
          double apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - sn * aqk, a[q][k] = sn * apk + c * aqk;
        }
        a[p][q] = a[q][p] = 0;
      }
  }
  ev[0] = a[0][0], ev[1] = a[1][1], ev[2] = a[2][2];
  for (int i = 0; i < 3; i++) /* sort ascending */
    for (int j = i + 1; j < 3; j++)
      if (ev[j] < ev[i]) {
        double t = ev[i];
        ev[i] = ev[j], ev[j] = t;
      }
}

/* A lower bound on the smallest principal moment of body b (0 when none
 * is known to be positive) and, through cond, the tensor's condition
 * number (INFINITY when singular to rounding). Exact for a diagonal
 * tensor; else the Jacobi value less its rounding error (Weyl). */
static double cm__inertia_floor(const cm_scene_t *s, const cm_body_t *bd,
                                double *cond) {
  *cond = 1;
  if (s->dim == 2)
    return bd->inertia[0];
  const double *I = bd->inertia;
  if (I[1] == 0 && I[2] == 0 && I[3] == 0 && I[5] == 0 && I[6] == 0 &&
      I[7] == 0) {
    double lo = fmin(I[0], fmin(I[4], I[8]));
    double hi = fmax(I[0], fmax(I[4], I[8]));
    *cond = lo > 0 ? hi / lo : INFINITY;
    return lo > 0 ? lo : 0;
  }
  double ev[3];
  cm__inertia_eigs(I, ev);
  double lo = ev[0] - 32 * 2.220446049250313e-16 * ev[2];
  *cond = ev[0] > 0 ? ev[2] / ev[0] : INFINITY;
  return lo > 0 ? lo : 0;
}

/* Set bits of a dof mask (6 bits): a table, since without -mpopcnt
 * __builtin_popcount is a call into libgcc in the contact loops. */
static int cm__popcount(unsigned v) {
  static const unsigned char bits[64] = {
      0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 1, 2, 2, 3, 2, 3,
      3, 4, 2, 3, 3, 4, 3, 4, 4, 5, 1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4,
      3, 4, 4, 5, 2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6};
  return bits[v & 63];
}

/* Loops that read scattered records (a contact per row, a body position per
 * contact) ask for the record this many iterations ahead: the loop bodies
 * are too long for the core to overlap the misses by itself. */
#define CM__AHEAD 16

/* Asks for the cache lines of a record of size bytes. */
static void cm__prefetch(const void *p, size_t size) {
  for (size_t o = 0; o < size; o += 64)
    __builtin_prefetch((const char *)p + o);
  __builtin_prefetch((const char *)p + size - 1);
}

/* ---- the assembly's workspace ------------------------------------------- */

/* Per-body arrays are indexed by rank: the body's place in the column order
 * (component, then a breadth-first walk: cm__bfs_walk); only bodies in a
 * component have one. */
typedef struct {
  int threads;        /* OpenMP threads */
  double wk, wg;      /* row weight = wk k + wg c (springs, dashpots) */
  unsigned char *mov; /* size nb: 1 if the body moves */
  int *rank;          /* size nb: rank of the body, -1 if in no component */
  int m;              /* ranked bodies */
  int *order;         /* size m: body of each rank */
  int *rcomp;         /* size m: component of each rank */
  double *pos;        /* size 4 m: position of each rank, then its
                         negligible rotational entry, CM__LEVER_TOL
                         sqrt(lambda_lo / m): what a contact pass reads of
                         a body at random, in one 32-byte record */
  double *ilo;        /* size m: lower bound on the smallest principal
                         moment of each rank (0: none) */
  double cond;        /* largest inertia condition number of a ranked
                         body, and that body */
  int cond_body;
  unsigned char *cflag; /* size ncontacts: rows of each contact (bits 0-1)
                           and CM__ARMS, read once from the 144-byte
                           records (cm__components) */
  unsigned char *nzb;   /* size 2 nc: nonzero entries of each row's side a
                           and side b (cm__seg_nonzero), from cm__touched
                           for cm__row_counts */
  int *rk2;             /* size 2 nc: rank of each row's side a and side b
                           (-1: fixed or the world), the same */
  int *ends;            /* size 2 nc: the two bodies of each contact that
                           joins two moving bodies (-1: none), from
                           cm__components for cm__body_graph */
  unsigned char *mask;  /* size m: touched dofs of each rank */
  unsigned char *keep;  /* size m: active dofs of each rank (bit mask) */
  int *col0;            /* size m + 1: first column of each rank */
} cm__work_t;

static void cm__work_free(cm__work_t *w) {
  cm__ws_free(w->mov), cm__ws_free(w->rank), cm__ws_free(w->order),
      cm__ws_free(w->rcomp), cm__ws_free(w->pos);
  cm__ws_free(w->ilo), cm__ws_free(w->cflag), cm__ws_free(w->nzb);
  cm__ws_free(w->rk2), cm__ws_free(w->ends);
  cm__ws_free(w->mask), cm__ws_free(w->keep), cm__ws_free(w->col0);
}

static int cm__moving(const cm__work_t *w, int b) {
  return b != CM_WORLD && w->mov[b];
}

/* Asks for the positions of the moving bodies of contact ct. */
static void cm__prefetch_sides(const cm__work_t *w, const cm_contact_t *ct) {
  int side[2] = {ct->a, ct->b};
  for (int k = 0; k < 2; k++)
    if (side[k] != CM_WORLD && w->rank[side[k]] >= 0)
      cm__prefetch(w->pos + 4 * (size_t)w->rank[side[k]], 4 * sizeof(double));
}

int cm__contact_nrows(int dim, const cm_contact_t *ct, int with_dashpots) {
  if (!(ct->stiffness > 0) && !with_dashpots)
    return 0; /* a dashpot alone: only the damped step's systems hold it */
  int tan = ct->stiffness_t > 0 || (with_dashpots && ct->damping_t > 0);
  return tan ? dim : 1;
}

/* Bit of cm__work_t.cflag: the contact has explicit lever arms. */
#define CM__ARMS 4

/* Rows of contact c in the system being assembled (after cm__components). */
static int cm__contact_rows(const cm__work_t *w, int c) {
  return w->cflag[c] & 3;
}

/* Whether contact c has explicit lever arms (after cm__components). */
static int cm__contact_arms(const cm__work_t *w, int c) {
  return (w->cflag[c] & CM__ARMS) != 0;
}

/* ---- components: union-find over moving bodies -------------------------- */

/* Per-thread sums of cm__contact_flags. */
typedef struct {
  long rows; /* rows of the contacts seen */
  int tan;   /* 1: one of them has tangent rows */
  int damp;  /* 1: one of them has a dashpot */
} cm__rowsum_t;

/* Sets w->cflag[c] and adds contact c to *sum (cm__components' pass over
 * the contacts: one read of each record for both). */
static void cm__contact_flags(const cm_scene_t *s, cm__work_t *w, int c,
                              cm__rowsum_t *sum) {
  const cm_contact_t *ct = &s->contacts[c];
  int nr = cm__contact_nrows(s->dim, ct, w->wg > 0);
  w->cflag[c] = (unsigned char)(nr | (ct->has_arms ? CM__ARMS : 0));
  sum->rows += nr;
  sum->tan |= nr > 1;
  sum->damp |= ct->damping_n > 0 || ct->damping_t > 0;
}

static int cm__alloc_system(cm_context_t *ctx, cm_system_t *sys, int ncontacts,
                            int weighted) {
  size_t nc = (size_t)sys->nc;
  sys->k = cm__ws_malloc(ctx, nc, sizeof(double));
  sys->Jp = cm__ws_malloc(ctx, nc + 1, sizeof(int));
  sys->row_contact = cm__ws_malloc(ctx, nc, sizeof(int));
  sys->contact_row = cm__ws_malloc(ctx, (size_t)ncontacts, sizeof(int));
  sys->row_kind = cm__ws_malloc(ctx, nc, 1);
  sys->row_a = cm__ws_malloc(ctx, nc, sizeof(int));
  sys->row_b = cm__ws_malloc(ctx, nc, sizeof(int));
  if (sys->dashpots)
    sys->g = cm__ws_malloc(ctx, nc, sizeof(double));
  if (weighted)
    sys->spring = cm__ws_malloc(ctx, nc, sizeof(double));
  return (sys->k && sys->Jp && sys->row_contact && sys->contact_row &&
          sys->row_kind && sys->row_a && sys->row_b &&
          (!sys->dashpots || sys->g) && (!weighted || sys->spring))
             ? CM_OK
             : CM_NOMEM;
}

/* Moving flags of all bodies (and no rank yet). */
static int cm__moving_flags(cm_context_t *ctx, const cm_scene_t *s,
                            cm__work_t *w) {
  int nb = s->nbodies;
  w->mov = cm__ws_malloc(ctx, (size_t)nb + 1, 1);
  w->rank = cm__ws_malloc(ctx, (size_t)nb + 1, sizeof(int));
  if (!w->mov || !w->rank)
    return CM_NOMEM;
#pragma omp parallel for schedule(static)                                      \
    num_threads(w->threads) if (nb > CM__PAR_MIN)
  for (int b = 0; b < nb; b++) {
    w->mov[b] = !s->bodies[b].fixed;
    w->rank[b] = -1; /* until cm__body_order ranks it */
  }
  return CM_OK;
}

/* Components and the row count of each, the row count (sys->nc) and model
 * flags of the scene, and the flags of every contact (w->cflag).
 * Component ids follow their first contact. */
static int cm__components(cm_context_t *ctx, const cm_scene_t *s,
                          cm_system_t *sys, cm__work_t *w) {
  int nb = s->nbodies, nc = s->ncontacts;
  int T = nc > CM__PAR_MIN ? w->threads : 1, nomem = 0;
  cm__rowsum_t tot = {0, 0, 0};
  sys->body_comp = cm__ws_malloc(ctx, (size_t)nb + 1, sizeof(int));
  w->cflag = cm__ws_malloc(ctx, (size_t)nc + 1, 1);
  int *parent = cm__ws_malloc(ctx, (size_t)nb + 1, sizeof(int));
  int *mb = cm__ws_malloc(ctx, (size_t)nc + 1, sizeof(int)); /* moving body */
  int **forest = calloc((size_t)T, sizeof *forest);          /* per thread */
  w->ends = cm__ws_malloc(ctx, 2 * (size_t)nc + 1, sizeof(int));
  if (!sys->body_comp || !w->cflag || !parent || !mb || !forest || !w->ends) {
    cm__ws_free(parent), cm__ws_free(mb), free(forest);
    return CM_NOMEM;
  }
  /* each thread joins the bodies of its own run of contacts in its own
   * forest; the forests are then merged into thread 0's. A union always
   * hangs the larger root under the smaller, so every set ends with its
   * smallest body as root: the same forest, flattened, as one thread's. */
#pragma omp parallel num_threads(T)
  {
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    int c0 = (int)((long)nc * t / nt), c1 = (int)((long)nc * (t + 1) / nt);
    int *p = t ? malloc(sizeof(int) * ((size_t)nb + 1)) : parent;
    forest[t] = p;
    if (!p) {
#pragma omp atomic write
      nomem = 1;
    } else {
      cm__rowsum_t sum = {0, 0, 0};
      for (int b = 0; b < nb; b++)
        p[b] = b;
      for (int c = c0; c < c1; c++) {
        const cm_contact_t *ct = &s->contacts[c];
        cm__contact_flags(s, w, c, &sum);
        int none = !cm__contact_rows(w, c); /* not in this system */
        int ma = !none && cm__moving(w, ct->a);
        int mv = !none && cm__moving(w, ct->b);
        mb[c] = none ? -1 : ma ? ct->a : ct->b;
        int edge = ma && mv && ct->a != ct->b;
        w->ends[2 * (size_t)c] = edge ? ct->a : -1;
        w->ends[2 * (size_t)c + 1] = edge ? ct->b : -1;
        if (ma && mv) {
          int ra = cm__uf_find(p, ct->a), rb = cm__uf_find(p, ct->b);
          if (ra != rb)
            p[ra > rb ? ra : rb] = ra < rb ? ra : rb;
        }
      }
#pragma omp critical(cm__rowsum) /* integers: the same at any order */
      tot.rows += sum.rows, tot.tan |= sum.tan, tot.damp |= sum.damp;
    }
#pragma omp barrier
    int failed;
#pragma omp atomic read
    failed = nomem;
#pragma omp single
    for (int u = 1; u < nt && !failed; u++)
      for (int b = 0; b < nb; b++) {
        if (forest[u][b] == b)
          continue;
        int ra = cm__uf_find(parent, b);
        int rb = cm__uf_find(parent, cm__uf_find(forest[u], b));
        if (ra != rb)
          parent[ra > rb ? ra : rb] = ra < rb ? ra : rb;
      }
  }
  for (int t = 1; t < T; t++)
    free(forest[t]);
  free(forest);
  if (nomem) {
    cm__ws_free(parent), cm__ws_free(mb);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory assembling");
  }
  sys->nc = (int)tot.rows;
  sys->tangential = tot.tan;
  sys->dashpots = tot.damp;
  /* a root is the smallest body of its set and parent[b] <= b, so one
   * ascending pass points every body at its root */
  for (int b = 0; b < nb; b++)
    parent[b] = parent[parent[b]];
  /* root body -> component id, numbered by first contact */
  int *root_comp = sys->body_comp; /* reused: root -> id, then body -> id */
#pragma omp parallel for schedule(static)                                      \
    num_threads(w->threads) if (nb > CM__PAR_MIN)
  for (int b = 0; b < nb; b++)
    root_comp[b] = -1;
  int ncomp = 0;
  for (int c = 0; c < nc; c++) {
    if (mb[c] < 0) /* no rows here */
      continue;
    int r = parent[mb[c]];
    if (root_comp[r] < 0)
      root_comp[r] = ncomp++;
    mb[c] = root_comp[r]; /* now the contact's component */
  }
  /* roots come before their members, so one ascending pass turns root ids
   * into body ids */
  for (int b = 0; b < nb; b++)
    sys->body_comp[b] = w->mov[b] ? sys->body_comp[parent[b]] : -1;
  cm__ws_free(parent);
  sys->ncomp = ncomp;
  sys->comp_row = cm__ws_calloc(ctx, (size_t)ncomp + 1, sizeof(int));
  sys->comp_col = cm__ws_calloc(ctx, (size_t)ncomp + 1, sizeof(int));
  if (!sys->comp_row || !sys->comp_col) {
    cm__ws_free(mb);
    return CM_NOMEM;
  }
  for (int c = 0; c < nc; c++)
    if (mb[c] >= 0)
      sys->comp_row[mb[c] + 1] += cm__contact_rows(w, c);
  for (int i = 0; i < ncomp; i++)
    sys->comp_row[i + 1] += sys->comp_row[i];
  cm__ws_free(mb);
  return CM_OK;
}

/* ---- column order: bodies by component, breadth first ----------------- */

/* The contacts between two moving bodies of one component, as lists per
 * body (adj[a0[b] .. a0[b + 1]): the other bodies, in contact order; two
 * bodies with several contacts are listed once per contact), from the
 * ends cm__components noted in its pass over the contacts. */
static int cm__body_graph(cm_context_t *ctx, const cm_scene_t *s, cm__work_t *w,
                          int **a0_out, int **adj_out) {
  int nb = s->nbodies, nc = s->ncontacts;
  const int *ends = w->ends; /* from cm__components */
  int *adj = cm__ws_malloc(ctx, 2 * (size_t)nc + 1, sizeof(int));
  int *a0 = cm__ws_calloc(ctx, (size_t)nb + 2, sizeof(int));
  if (!adj || !a0) {
    cm__ws_free(adj), cm__ws_free(a0);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory assembling");
  }
  size_t ne = 2 * (size_t)nc;
  for (size_t e = 0; e < ne; e++)
    if (ends[e] >= 0)
      a0[ends[e] + 2]++;
  for (int b = 0; b < nb; b++)
    a0[b + 2] += a0[b + 1];
  for (size_t e = 0; e < ne; e += 2) /* a0[b + 1]: next free of body b */
    if (ends[e] >= 0) {
      adj[a0[ends[e] + 1]++] = ends[e + 1];
      adj[a0[ends[e + 1] + 1]++] = ends[e];
    }
  cm__ws_free(w->ends); /* read once */
  w->ends = NULL;
  *a0_out = a0, *adj_out = adj;
  return CM_OK;
}

/* w->order and w->rcomp: the bodies of each component (components in
 * order) in the order of a breadth-first walk over the contacts between
 * them (Cuthill-McKee without its degree sort), from the body of least
 * coordinate sum (a corner of the component's box; ties: the lower
 * index), each body's neighbours in contact order; a body the walk does
 * not reach starts a walk of its own, in index order. A row's two bodies
 * then lie about one level of the walk apart, so the products' gathers
 * sweep a window of the vectors that a core's cache holds. The Morton
 * (Z-order) curve used before left 2.2% of the rows of the 1e6 pile with
 * their two bodies more than a core's L2 apart, and the products took
 * 1.2-1.5x as long on a 32 MiB L3 (bench_step --bfs-order, --f32).
 * Sequential and fixed by the scene: the same order at any thread count.
 * byc: the bodies by component (component c's from first[c]); seen:
 * zeros, size nb. */
/* One walk from body b (not seen), appended to order[] from tail; returns
 * the new tail. */
static int cm__bfs_from(int b, const int *a0, const int *adj,
                        unsigned char *seen, int *order, int tail) {
  int head = tail;
  seen[b] = 1, order[tail++] = b;
  while (head < tail) {
    if (head + 2 * CM__AHEAD < tail) /* bodies queued ahead: their lists */
      __builtin_prefetch(a0 + order[head + 2 * CM__AHEAD]);
    if (head + CM__AHEAD < tail)
      __builtin_prefetch(adj + a0[order[head + CM__AHEAD]]);
    int v = order[head++];
    for (int e = a0[v]; e < a0[v + 1]; e++)
      if (!seen[adj[e]])
        seen[adj[e]] = 1, order[tail++] = adj[e];
  }
  return tail;
}

static void cm__bfs_walk(const cm_scene_t *s, const cm_system_t *sys,
                         cm__work_t *w, const int *a0, const int *adj,
                         const int *byc, const int *first,
                         unsigned char *seen) {
  int dim = s->dim, tail = 0;
  for (int c = 0; c < sys->ncomp; c++) {
    int root = -1;
    double best = INFINITY;
    for (int i = first[c]; i < first[c + 1]; i++) {
      const double *x = s->bodies[byc[i]].position;
      double key = x[0] + x[1] + (dim == 3 ? x[2] : 0.0);
      if (root < 0 || key < best)
        root = byc[i], best = key;
    }
    if (root >= 0) /* the corner's walk, then any body it did not reach */
      tail = cm__bfs_from(root, a0, adj, seen, w->order, tail);
    for (int i = first[c]; i < first[c + 1]; i++)
      if (!seen[byc[i]])
        tail = cm__bfs_from(byc[i], a0, adj, seen, w->order, tail);
    for (int k = first[c]; k < first[c + 1]; k++)
      w->rcomp[k] = c;
  }
}

/* Ranks of the bodies in components: w->order, w->rank, w->rcomp. */
static int cm__body_order(cm_context_t *ctx, const cm_scene_t *s,
                          const cm_system_t *sys, cm__work_t *w) {
  int nb = s->nbodies, m = 0;
  for (int b = 0; b < nb; b++)
    m += sys->body_comp[b] >= 0;
  w->m = m;
  w->order = cm__ws_malloc(ctx, (size_t)m + 1, sizeof(int));
  w->rcomp = cm__ws_malloc(ctx, (size_t)m + 1, sizeof(int));
  w->pos = cm__ws_malloc(ctx, 4 * (size_t)m + 1, sizeof(double));
  w->ilo = cm__ws_malloc(ctx, (size_t)m + 1, sizeof(double));
  int *byc = cm__ws_malloc(ctx, (size_t)m + 1, sizeof(int));
  unsigned char *seen = cm__ws_calloc(ctx, (size_t)nb + 1, 1);
  int ncomp = sys->ncomp;
  int *first = cm__ws_calloc(ctx, (size_t)ncomp + 2, sizeof(int));
  double *cnd = cm__ws_malloc(ctx, (size_t)m + 1, sizeof(double));
  int *a0 = NULL, *adj = NULL;
  int st =
      w->order && w->rcomp && w->pos && w->ilo && byc && seen && first && cnd
          ? CM_OK
          : CM_NOMEM;
  if (!st)
    st = cm__body_graph(ctx, s, w, &a0, &adj);
  if (!st) {
    /* the bodies by component, stably (a counting sort) */
    for (int b = 0; b < nb; b++)
      if (sys->body_comp[b] >= 0)
        first[sys->body_comp[b] + 2]++;
    for (int c = 0; c < ncomp; c++)
      first[c + 2] += first[c + 1];
    for (int b = 0; b < nb; b++)
      if (sys->body_comp[b] >= 0)
        byc[first[sys->body_comp[b] + 1]++] = b;
    cm__bfs_walk(s, sys, w, a0, adj, byc, first, seen);
  }
  if (!st) {
    /* ranks, and the positions in rank order (the contact passes read them
     * at random); one read of each body record */
#pragma omp parallel for schedule(static)                                      \
    num_threads(w->threads) if (m > CM__PAR_MIN)
    for (int i = 0; i < m; i++) {
      if (i + CM__AHEAD < m)
        cm__prefetch(&s->bodies[w->order[i + CM__AHEAD]], sizeof(cm_body_t));
      const cm_body_t *bd = &s->bodies[w->order[i]];
      const double *x = bd->position;
      w->rank[w->order[i]] = i;
      double *px = w->pos + 4 * (size_t)i;
      px[0] = x[0], px[1] = x[1], px[2] = x[2];
      w->ilo[i] = cm__inertia_floor(s, bd, &cnd[i]);
      if (s->dim == 3 && cm__world_diagonal(bd))
        cnd[i] = 1; /* a diagonal world block is factored exactly */
      px[3] = CM__LEVER_TOL * sqrt(w->ilo[i] / bd->mass);
    }
    w->cond = 1, w->cond_body = -1; /* the worst tensor, for the warning */
    for (int i = 0; s->dim == 3 && i < m; i++)
      if (cnd[i] > w->cond || (cnd[i] == w->cond && w->cond_body >= 0 &&
                               w->order[i] < w->cond_body))
        w->cond = cnd[i], w->cond_body = w->order[i];
  }
  cm__ws_free(byc), cm__ws_free(seen), cm__ws_free(first), cm__ws_free(cnd);
  cm__ws_free(a0), cm__ws_free(adj);
  return st;
}

/* ---- rows --------------------------------------------------------------- */

/* Rows: contacts ordered by the first column they touch (a counting sort,
 * stable in the contact index), each with its rows (normal, then tangents)
 * consecutive. Columns are grouped by component, so this
 * also groups rows by component, and neighbouring rows touch neighbouring
 * columns: the SpMVs stream through x. Every ranked body has a column, and
 * first columns grow with the rank, so the rank of the first body is the
 * key. */
static int cm__rows(cm_context_t *ctx, const cm_scene_t *s, cm_system_t *sys,
                    const cm__work_t *w) {
  int nc = s->ncontacts, m = w->m;
  int T = nc > CM__PAR_MIN ? w->threads : 1, nomem = 0;
  int *key = cm__ws_malloc(ctx, (size_t)nc + 1, sizeof(int));
  int **next = calloc((size_t)T, sizeof *next); /* per thread, size m + 1 */
  if (!key || !next) {
    cm__ws_free(key), free(next);
    return CM_NOMEM;
  }
  /* each thread counts, then places, its own run of consecutive contacts,
   * after those of the threads before it: the sequential, stable order */
#pragma omp parallel num_threads(T)
  {
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    int c0 = (int)((long)nc * t / nt), c1 = (int)((long)nc * (t + 1) / nt);
    int *cnt = calloc((size_t)m + 1, sizeof(int));
    next[t] = cnt;
    if (!cnt) {
#pragma omp atomic write
      nomem = 1;
    } else
      for (int c = c0; c < c1; c++) {
        const cm_contact_t *ct = &s->contacts[c];
        int nr = cm__contact_rows(w, c);
        int k = m; /* a contact of no rows here: after the others */
        if (nr && cm__moving(w, ct->a) && w->rank[ct->a] < k)
          k = w->rank[ct->a];
        if (nr && cm__moving(w, ct->b) && w->rank[ct->b] < k)
          k = w->rank[ct->b];
        key[c] = k;
        cnt[k] += nr;
      }
#pragma omp barrier
    int failed;
#pragma omp atomic read
    failed = nomem;
    if (!failed) {
#pragma omp single
      { /* first slot of each (key, thread), in key order then thread order */
        int o = 0;
        for (int k = 0; k <= m; k++)
          for (int u = 0; u < nt; u++) {
            int n = next[u][k];
            next[u][k] = o;
            o += n;
          }
      }
      for (int c = c0; c < c1; c++) {
        int nr = cm__contact_rows(w, c);
        int r = cnt[key[c]];
        cnt[key[c]] += nr;
        sys->contact_row[c] = r;
        for (int j = 0; j < nr; j++) { /* a contact's rows are consecutive */
          sys->row_contact[r + j] = c;
          sys->row_kind[r + j] = (unsigned char)j;
        }
      }
    }
  }
  for (int t = 0; t < T; t++)
    free(next[t]);
  free(next), cm__ws_free(key);
  return nomem ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory assembling")
               : CM_OK;
}

/* Touched dofs of every body: those with an entry that is not negligible
 * (cm__seg_bits) in some row. A touched dof is active. Also the nonzero
 * entries of each row's sides (w->nzb), so that cm__row_counts need not
 * compute the segments again. */
static int cm__touched(cm_context_t *ctx, const cm_scene_t *s,
                       const cm_system_t *sys, cm__work_t *w) {
  int nc = s->ncontacts, dim = s->dim, m = w->m;
  int T = nc > CM__PAR_MIN ? w->threads : 1, nomem = 0;
  w->mask = cm__ws_calloc(ctx, (size_t)m + 1, 1);
  w->nzb = cm__ws_calloc(ctx, 2 * (size_t)sys->nc + 1, 1);
  w->rk2 = cm__ws_malloc(ctx, 2 * (size_t)sys->nc + 1, sizeof(int));
  unsigned char **part = calloc((size_t)T, sizeof *part); /* per thread */
  if (!w->mask || !w->nzb || !w->rk2 || !part) {
    free(part);
    return CM_NOMEM;
  }
  /* each thread ORs into its own masks, then the masks are ORed together:
   * the same result at any thread count, and no atomic in the loop */
#pragma omp parallel num_threads(T)
  {
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    unsigned char *mk = calloc((size_t)m + 1, 1);
    part[t] = mk;
    if (!mk) {
#pragma omp atomic write
      nomem = 1;
    }
#pragma omp for schedule(static)
    for (int c = 0; c < nc; c++) {
      if (c + CM__AHEAD < nc) { /* its bodies, and where its rows go */
        size_t ra = 2 * (size_t)sys->contact_row[c + CM__AHEAD];
        cm__prefetch_sides(w, &s->contacts[c + CM__AHEAD]);
        __builtin_prefetch(w->rk2 + ra, 1);
        __builtin_prefetch(w->nzb + ra, 1);
      }
      const cm_contact_t *ct = &s->contacts[c];
      int side[2] = {ct->a, ct->b}, nr = cm__contact_rows(w, c);
      int arms = cm__contact_arms(w, c);
      size_t r2 = 2 * (size_t)sys->contact_row[c];
      unsigned char *nz = w->nzb + r2;
      for (int j = 0; j < nr; j++)
        for (int k = 0; k < 2; k++) {
          w->rk2[r2 + 2 * (size_t)j + k] = -1;
          if (!cm__moving(w, side[k]))
            continue;
          int rk = w->rk2[r2 + 2 * (size_t)j + k] = w->rank[side[k]];
          double seg[6];
          int nd =
              cm__segment(dim, ct, j, k, arms, w->pos + 4 * (size_t)rk, seg);
          nz[2 * j + k] = (unsigned char)cm__seg_nonzero(seg, nd);
          if (mk)
            mk[rk] |= (unsigned char)cm__seg_bits(seg, nd,
                                                  w->pos[4 * (size_t)rk + 3]);
        }
    }
#pragma omp for schedule(static)
    for (int i = 0; i < m; i++)
      for (int u = 0; u < nt; u++)
        w->mask[i] |= part[u] ? part[u][i] : 0;
  }
  for (int t = 0; t < T; t++)
    free(part[t]);
  free(part);
  if (nomem)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory assembling");
  return CM_OK;
}

/* The nonzero count of every row (Jp): its nonzero entries (w->nzb) on
 * active dofs, negligible ones included (only a dropped dof loses its
 * entries). Reads no contact record. */
static void cm__row_counts(cm_system_t *sys, const cm__work_t *w) {
  int nrows = sys->nc;
#pragma omp parallel for schedule(static)                                      \
    num_threads(w->threads) if (nrows > CM__PAR_MIN)
  for (int r = 0; r < nrows; r++) {
    int cnt = 0;
    for (int k = 0; k < 2; k++) {
      int rk = w->rk2[2 * (size_t)r + k];
      if (rk >= 0)
        cnt += cm__popcount(w->nzb[2 * (size_t)r + k] & w->keep[rk]);
    }
    sys->Jp[r + 1] = cnt;
  }
  sys->Jp[0] = 0;
  for (int r = 0; r < nrows; r++)
    sys->Jp[r + 1] += sys->Jp[r];
}

/* ---- columns ------------------------------------------------------------ */

/* Active dofs of body b (bit mask) from its touched mask; ilo bounds its
 * smallest principal moment from below. See the drop rule for rotations in
 * docs/math.md. */
static unsigned cm__active_dofs(const cm_scene_t *s, int b, unsigned mask,
                                double ilo) {
  unsigned keep = mask;
  if (s->dim == 3 && (mask & 0x38) && (mask & 0x38) != 0x38) {
    /* Untouched rotational dofs U may be dropped beside the touched ones A
     * only if the world inertia does not couple them: (M^-1)_AA =
     * (M_AA - M_AU M_UU^-1 M_UA)^-1, which is (M_AA)^-1 to a relative
     * |M_AU|_F^2 / lambda_min^2 <= CM__COUPLE_TOL^2. */
    double Iw[9], cf = 0;
    cm__world_inertia(&s->bodies[b], Iw);
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        if (((mask >> (3 + i)) & 1) && !((mask >> (3 + j)) & 1))
          cf += Iw[3 * i + j] * Iw[3 * i + j];
    if (!(sqrt(cf) <= CM__COUPLE_TOL * ilo))
      keep |= 0x38;
  }
  return keep;
}

/* Columns: ranks in order, each with its active dofs in local order. */
static int cm__columns(cm_context_t *ctx, const cm_scene_t *s, cm_system_t *sys,
                       cm__work_t *w) {
  int m = w->m, ncomp = sys->ncomp;
  w->keep = cm__ws_malloc(ctx, (size_t)m + 1, 1);
  w->col0 = cm__ws_malloc(ctx, (size_t)m + 1, sizeof(int));
  if (!w->keep || !w->col0)
    return CM_NOMEM;
#pragma omp parallel for schedule(static)                                      \
    num_threads(w->threads) if (m > CM__PAR_MIN)
  for (int i = 0; i < m; i++)
    w->keep[i] =
        (unsigned char)cm__active_dofs(s, w->order[i], w->mask[i], w->ilo[i]);
  int col = 0;
  for (int i = 0; i < m; i++) {
    w->col0[i] = col;
    col += cm__popcount(w->keep[i]);
  }
  w->col0[m] = col;
  sys->n = col;
  /* components own consecutive ranks */
  for (int i = m - 1; i >= 0; i--)
    sys->comp_col[w->rcomp[i]] = w->col0[i];
  sys->comp_col[ncomp] = col;
  sys->col_body = cm__ws_malloc(ctx, (size_t)col + 1, sizeof(int));
  sys->col_dof = cm__ws_malloc(ctx, (size_t)col + 1, sizeof(int));
  if (!sys->col_body || !sys->col_dof)
    return CM_NOMEM;
#pragma omp parallel for schedule(static)                                      \
    num_threads(w->threads) if (m > CM__PAR_MIN)
  for (int i = 0; i < m; i++) {
    int j = w->col0[i];
    for (int d = 0; d < 6; d++)
      if ((w->keep[i] >> d) & 1) {
        sys->col_body[j] = w->order[i];
        sys->col_dof[j++] = d;
      }
  }
  return CM_OK;
}

/* ---- J and M ------------------------------------------------------------ */

/* Writes the entries of row r (contact ct), columns ascending: for each
 * moving body (rk: the ranks of sides a and b, -1 for a fixed body or the
 * world, as cm__touched stored them), the nonzero segment entries on its
 * active dofs. */
static void cm__fill_row(const cm_scene_t *s, const cm__work_t *w,
                         const cm_contact_t *ct, const int *rk, int kind,
                         int arms, int *cols, double *vals) {
  double sign[2] = {1.0, -1.0};
  int order[2] = {0, 1}, cnt = 0;
  if (rk[0] >= 0 && rk[1] >= 0 && rk[1] < rk[0])
    order[0] = 1, order[1] = 0;
  for (int o = 0; o < 2; o++) {
    int k = order[o], r = rk[k];
    if (r < 0)
      continue;
    int col = w->col0[r];
    unsigned keep = w->keep[r];
    double seg[6];
    int nd =
        cm__segment(s->dim, ct, kind, k, arms, w->pos + 4 * (size_t)r, seg);
    for (int d = 0; d < nd; d++) {
      if (!((keep >> d) & 1))
        continue;
      if (seg[d] != 0) {
        cols[cnt] = col;
        vals[cnt++] = sign[k] * seg[d];
      }
      col++;
    }
  }
}

static int cm__fill_J(cm_context_t *ctx, const cm_scene_t *s, cm_system_t *sys,
                      const cm__work_t *w) {
  int nc = sys->nc;
  size_t nnz = (size_t)sys->Jp[nc];
  sys->Jj = cm__ws_malloc(ctx, nnz, sizeof(int));
  sys->Jx = cm__ws_malloc(ctx, nnz, sizeof(double));
  if (!sys->Jj || !sys->Jx)
    return CM_NOMEM;
  /* the dashpots are read only when used: a contact of one row and no arms
   * then needs its first 64 bytes (a, b, point, normal, stiffness) */
  int plain = w->wg == 0 && w->wk == 1, full = sys->g || !plain;
#pragma omp parallel for schedule(static)                                      \
    num_threads(w->threads) if (nc > CM__PAR_MIN)
  for (int r = 0; r < nc; r++) {
    if (r + CM__AHEAD < nc) {
      int ca = sys->row_contact[r + CM__AHEAD];
      cm__prefetch(&s->contacts[ca],
                   full || w->cflag[ca] != 1
                       ? sizeof(cm_contact_t)
                       : offsetof(cm_contact_t, stiffness) + sizeof(double));
    }
    if (r + CM__AHEAD / 2 < nc) /* its bodies' records, by rk2 */
      for (int k = 0; k < 2; k++) {
        int ra = w->rk2[2 * (size_t)(r + CM__AHEAD / 2) + k];
        if (ra >= 0) {
          cm__prefetch(w->pos + 4 * (size_t)ra, 4 * sizeof(double));
          __builtin_prefetch(w->col0 + ra);
          __builtin_prefetch(w->keep + ra);
        }
      }
    int c = sys->row_contact[r], kind = sys->row_kind[r];
    const cm_contact_t *ct = &s->contacts[c];
    cm__fill_row(s, w, ct, w->rk2 + 2 * (size_t)r, kind, cm__contact_arms(w, c),
                 sys->Jj + sys->Jp[r], sys->Jx + sys->Jp[r]);
    double k = kind ? ct->stiffness_t : ct->stiffness;
    double g = full ? (kind ? ct->damping_t : ct->damping_n) : 0.0;
    sys->k[r] = plain ? k : w->wk * k + w->wg * g;
    if (sys->g)
      sys->g[r] = g;
    if (sys->spring)
      sys->spring[r] = k;
    sys->row_a[r] = ct->a;
    sys->row_b[r] = ct->b;
  }
  return CM_OK;
}

/* Entry (di, dj) of body b's mass block, Iw its world inertia (3D rotations
 * only). */
static double cm__mass_entry(const cm_scene_t *s, const cm_body_t *bd,
                             const double *Iw, int di, int dj) {
  int tdofs = s->dim == 2 ? 2 : 3;
  if (di < tdofs || dj < tdofs)
    return di == dj ? bd->mass : 0.0;
  if (s->dim == 2)
    return bd->inertia[0];
  return Iw[3 * (di - 3) + (dj - 3)];
}

/* Column entries of rank i's block (cols == NULL: counts them into Mp[j+1]),
 * lower triangle, zeros off the diagonal left out. */
static void cm__M_block(const cm_scene_t *s, cm_system_t *sys,
                        const cm__work_t *w, int i, int fill) {
  const cm_body_t *bd = &s->bodies[w->order[i]];
  unsigned keep = w->keep[i];
  int dof[6], nd = 0, c0 = w->col0[i];
  for (int d = 0; d < 6; d++)
    if ((keep >> d) & 1)
      dof[nd++] = d;
  int nrot = s->dim == 3 ? cm__popcount(keep & 0x38) : 0;
  if (!fill && nrot < 2) { /* one entry per column: no need for the body */
    for (int jj = 0; jj < nd; jj++)
      sys->Mp[c0 + jj + 1] = 1;
    return;
  }
  double Iw[9] = {0};
  if (nrot)
    cm__world_inertia(bd, Iw);
  for (int jj = 0; jj < nd; jj++) {
    int q = fill ? sys->Mp[c0 + jj] : 0;
    for (int ii = jj; ii < nd; ii++) {
      double v = cm__mass_entry(s, bd, Iw, dof[ii], dof[jj]);
      if (v == 0 && ii != jj)
        continue;
      if (fill) {
        sys->Mi[q] = c0 + ii;
        sys->Mx[q] = v;
      }
      q++;
    }
    if (!fill)
      sys->Mp[c0 + jj + 1] = q;
  }
}

/* M restricted to the active dofs: lower triangle of each body block, CSC. */
static int cm__fill_M(cm_context_t *ctx, const cm_scene_t *s, cm_system_t *sys,
                      const cm__work_t *w) {
  int n = sys->n, m = w->m;
  sys->Mp = cm__ws_malloc(ctx, (size_t)n + 1, sizeof(int));
  size_t cap = 0;
  for (int i = 0; i < m; i++) {
    size_t d = (size_t)cm__popcount(w->keep[i]);
    cap += d * (d + 1) / 2;
  }
  sys->Mi = cm__ws_malloc(ctx, cap, sizeof(int));
  sys->Mx = cm__ws_malloc(ctx, cap, sizeof(double));
  if (!sys->Mp || !sys->Mi || !sys->Mx)
    return CM_NOMEM;
#pragma omp parallel for schedule(static)                                      \
    num_threads(w->threads) if (m > CM__PAR_MIN)
  for (int i = 0; i < m; i++)
    cm__M_block(s, sys, w, i, 0);
  sys->Mp[0] = 0;
  for (int j = 0; j < n; j++)
    sys->Mp[j + 1] += sys->Mp[j];
#pragma omp parallel for schedule(static)                                      \
    num_threads(w->threads) if (m > CM__PAR_MIN)
  for (int i = 0; i < m; i++) {
    if (i + CM__AHEAD < m)
      cm__prefetch(&s->bodies[w->order[i + CM__AHEAD]], sizeof(cm_body_t));
    cm__M_block(s, sys, w, i, 1);
  }
  return CM_OK;
}

static int cm__assemble(cm_context_t *ctx, const cm_scene_t *s, double wk,
                        double wg, int checked, cm_system_t **out);

int cm_system_assemble(cm_context_t *ctx, const cm_scene_t *s,
                       cm_system_t **out) {
  return cm__assemble(ctx, s, 1.0, 0.0, 0, out);
}

int cm__system_assemble_weighted(cm_context_t *ctx, const cm_scene_t *s,
                                 double wk, double wg, cm_system_t **out) {
  return cm__assemble(ctx, s, wk, wg, 0, out);
}

int cm__system_assemble_checked(cm_context_t *ctx, const cm_scene_t *s,
                                cm_system_t **out) {
  return cm__assemble(ctx, s, 1.0, 0.0, 1, out);
}

static int cm__assemble_body(cm_context_t *ctx, const cm_scene_t *s, double wk,
                             double wg, int checked, cm_system_t **out);

/* cm__system_assemble_weighted; checked: s passed cm_scene_validate and
 * has not changed since (its check not repeated). In a workspace scope
 * (cm__ws_scope_begin): its work arrays, freed as it goes, hold its later
 * ones. */
static int cm__assemble(cm_context_t *ctx, const cm_scene_t *s, double wk,
                        double wg, int checked, cm_system_t **out) {
  cm__ws_scope_begin();
  int st = cm__assemble_body(ctx, s, wk, wg, checked, out);
  cm__ws_scope_end();
  return st;
}

static int cm__assemble_body(cm_context_t *ctx, const cm_scene_t *s, double wk,
                             double wg, int checked, cm_system_t **out) {
  double t0 = cm__now();
  *out = NULL;
  /* ---- check inputs ---- */
  int st = checked ? CM_OK : cm_scene_validate(ctx, s);
  if (st)
    return st;
  /* ---- allocate ---- */
  cm_system_t *sys = calloc(1, sizeof *sys);
  if (!sys)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory assembling");
  cm__work_t w = {0};
  w.threads = cm__threads(ctx);
  w.wk = wk, w.wg = wg;
  sys->pooled = 1; /* every array below from the workspace pool: a
                    * server's, a time series' or a loop's next assembly
                    * takes them again instead of fresh pages */
  sys->dim = s->dim;
  sys->nbodies = s->nbodies;
  sys->ncontacts = s->ncontacts;
  sys->block = 1;
  /* ---- compute ---- */
  st = cm__moving_flags(ctx, s, &w);
  if (!st)
    st = cm__components(ctx, s, sys, &w);
  if (!st)
    st = cm__alloc_system(ctx, sys, s->ncontacts, wk != 1.0 || wg != 0.0);
  if (!st)
    st = cm__body_order(ctx, s, sys, &w);
  if (!st)
    st = cm__rows(ctx, s, sys, &w);
  if (!st)
    st = cm__touched(ctx, s, sys, &w);
  if (!st)
    st = cm__columns(ctx, s, sys, &w);
  if (!st)
    cm__row_counts(sys, &w);
  if (!st)
    st = cm__fill_J(ctx, s, sys, &w);
  if (!st)
    st = cm__fill_M(ctx, s, sys, &w);
  if (!st) {
    int per = s->dim == 2 ? 3 : 6;
    for (int b = 0; b < s->nbodies; b++) {
      if (!w.mov[b])
        continue;
      sys->moving_bodies++;
      sys->ndofs += per;
      if (sys->body_comp[b] < 0)
        sys->free_bodies++;
    }
    sys->dropped_dofs = sys->ndofs - sys->n;
    sys->inertia_cond = w.cond;
    sys->inertia_cond_body = w.cond_body;
  }
  if (!st &&
      CM_INERTIA_DELTA_PER_COND * sys->inertia_cond >= CM__DELTA_REFUSE) {
    char path[64];
    snprintf(path, sizeof path, "bodies[%d].inertia", sys->inertia_cond_body);
    st = CM__ERR(ctx, CM_NOT_SPD, path,
                 "%s: the inertia tensor's condition number is %.3g: its "
                 "world-frame block R I R^T, formed and factored in double "
                 "precision, is not positive definite to working precision "
                 "(no correct digit of the smallest principal moment), so "
                 "no frequency or bound would be reliable; give the tensor in "
                 "principal axes with an "
                 "orientation that keeps it diagonal in the world frame, or "
                 "a condition number below %.3g",
                 path, sys->inertia_cond,
                 CM__DELTA_REFUSE / CM_INERTIA_DELTA_PER_COND);
  }
  cm__work_free(&w);
  /* ---- return ---- */
  if (st) {
    cm_system_destroy(&sys);
    return ctx->status ? ctx->status : st;
  }
  sys->t_assemble_s = cm__now() - t0;
  *out = sys;
  return CM_OK;
}
