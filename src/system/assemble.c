/* assemble.c: scene -> system. Finds the components (moving bodies joined
 * through contacts), orders rows and columns by component, decides which
 * dofs are active (touched by a contact and not a structural zero), and fills
 * block-diagonal M and CSR J in parallel, deterministically.
 * Not for factorization (operator/) or matrices from files (system/matrices.c). */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* An entry |v| <= CM__STRUCT_ZERO * |r| of r x n is a structural zero (a
 * sphere's spin): it is stored as 0 and its dof may be dropped. */
#define CM__STRUCT_ZERO 1e-12

void cm_system_destroy(cm_system_t **sp) {
  if (!sp || !*sp)
    return;
  cm_system_t *s = *sp;
  free(s->Jp), free(s->Jj), free(s->Jx), free(s->k);
  free(s->Mp), free(s->Mi), free(s->Mx);
  free(s->row_contact), free(s->contact_row);
  free(s->col_body), free(s->col_dof), free(s->row_a), free(s->row_b);
  free(s->comp_row), free(s->comp_col), free(s->body_comp);
  free(s);
  *sp = NULL;
}

/* ---- small geometry -------------------------------------------------------- */

/* R (row-major) from the unit quaternion q = (w, x, y, z), body -> world. */
static void cm__quat_to_R(const double *q, double *R) {
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

/* Row segment of J for body b of contact c: [n, r x n] (sign applied by the
 * caller). Returns the number of dofs (3 in 2D, 6 in 3D). */
static int cm__segment(const cm_scene_t *s, const cm_contact_t *c, int body,
                       double *seg) {
  const double *x = s->bodies[body].position, *n = c->normal;
  double r[3] = {c->point[0] - x[0], c->point[1] - x[1],
                 s->dim == 3 ? c->point[2] - x[2] : 0.0};
  double rn = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
  double tiny = CM__STRUCT_ZERO * rn;
  if (s->dim == 2) {
    seg[0] = n[0], seg[1] = n[1];
    seg[2] = r[0] * n[1] - r[1] * n[0]; /* (r x n)_z */
    if (fabs(seg[2]) <= tiny)
      seg[2] = 0;
    return 3;
  }
  seg[0] = n[0], seg[1] = n[1], seg[2] = n[2];
  seg[3] = r[1] * n[2] - r[2] * n[1]; /* r x n */
  seg[4] = r[2] * n[0] - r[0] * n[2];
  seg[5] = r[0] * n[1] - r[1] * n[0];
  for (int i = 3; i < 6; i++)
    if (fabs(seg[i]) <= tiny)
      seg[i] = 0;
  return 6;
}

/* ---- components: union-find over moving bodies ------------------------- */

static int cm__find(int *parent, int i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

static int cm__moving(const cm_scene_t *s, int b) {
  return b != CM_WORLD && !s->bodies[b].fixed;
}

/* ---- the assembly ----------------------------------------------------------- */

typedef struct {
  int ncol;       /* active dofs of the body */
  int col0;       /* first column */
  int dof[6];     /* local dof of each active column */
  int colof[6];   /* column of each local dof, -1 if dropped */
} cm__bodycols_t;

/* Decides the active dofs of body b from the touched mask; see the drop rule
 * for rotations in docs/math.md. */
static void cm__active_dofs(const cm_scene_t *s, int b, unsigned mask,
                            cm__bodycols_t *bc) {
  int nd = s->dim == 2 ? 3 : 6;
  unsigned keep = mask;
  if (s->dim == 3 && (mask & 0x38) && (mask & 0x38) != 0x38) {
    /* Untouched rotational dofs may be dropped only if the world inertia does
     * not couple them to the touched ones (else (M^-1)_AA != (M_AA)^-1). */
    double Iw[9];
    cm__world_inertia(&s->bodies[b], Iw);
    double tr = Iw[0] + Iw[4] + Iw[8];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        if (((mask >> (3 + i)) & 1) && !((mask >> (3 + j)) & 1) &&
            fabs(Iw[3 * i + j]) > 1e-14 * tr)
          keep |= 0x38;
  }
  bc->ncol = 0;
  for (int d = 0; d < nd; d++) {
    bc->colof[d] = -1;
    if ((keep >> d) & 1) {
      bc->dof[bc->ncol] = d;
      bc->colof[d] = bc->ncol++;
    }
  }
}

static int cm__alloc_system(cm_context_t *ctx, cm_system_t *sys, int nb,
                            int nc) {
  sys->k = cm__malloc(ctx, (size_t)nc, sizeof(double));
  sys->Jp = cm__malloc(ctx, (size_t)nc + 1, sizeof(int));
  sys->row_contact = cm__malloc(ctx, (size_t)nc, sizeof(int));
  sys->contact_row = cm__malloc(ctx, (size_t)nc, sizeof(int));
  sys->row_a = cm__malloc(ctx, (size_t)nc, sizeof(int));
  sys->row_b = cm__malloc(ctx, (size_t)nc, sizeof(int));
  sys->body_comp = cm__malloc(ctx, (size_t)nb, sizeof(int));
  return (sys->k && sys->Jp && sys->row_contact && sys->contact_row &&
          sys->row_a && sys->row_b && sys->body_comp)
             ? CM_OK
             : CM_NOMEM;
}

/* Components and the row order. Component ids follow their first contact. */
static int cm__components(cm_context_t *ctx, const cm_scene_t *s,
                          cm_system_t *sys) {
  int nb = s->nbodies, nc = s->ncontacts;
  int *parent = cm__malloc(ctx, (size_t)nb, sizeof(int));
  if (!parent)
    return CM_NOMEM;
  for (int b = 0; b < nb; b++)
    parent[b] = b;
  for (int c = 0; c < nc; c++) {
    const cm_contact_t *ct = &s->contacts[c];
    if (cm__moving(s, ct->a) && cm__moving(s, ct->b)) {
      int ra = cm__find(parent, ct->a), rb = cm__find(parent, ct->b);
      if (ra != rb)
        parent[ra > rb ? ra : rb] = ra < rb ? ra : rb;
    }
  }
  for (int b = 0; b < nb; b++)
    sys->body_comp[b] = -1;
  /* root body -> component id, numbered by first contact */
  int *root_comp = cm__malloc(ctx, (size_t)nb, sizeof(int));
  int *contact_comp = cm__malloc(ctx, (size_t)nc, sizeof(int));
  if (!root_comp || !contact_comp) {
    free(parent), free(root_comp), free(contact_comp);
    return CM_NOMEM;
  }
  for (int b = 0; b < nb; b++)
    root_comp[b] = -1;
  int ncomp = 0;
  for (int c = 0; c < nc; c++) {
    const cm_contact_t *ct = &s->contacts[c];
    int mb = cm__moving(s, ct->a) ? ct->a : ct->b;
    int r = cm__find(parent, mb);
    if (root_comp[r] < 0)
      root_comp[r] = ncomp++;
    contact_comp[c] = root_comp[r];
  }
  for (int b = 0; b < nb; b++)
    if (cm__moving(s, b))
      sys->body_comp[b] = root_comp[cm__find(parent, b)];
  free(parent);
  free(root_comp);
  sys->ncomp = ncomp;
  sys->comp_row = cm__calloc(ctx, (size_t)ncomp + 1, sizeof(int));
  sys->comp_col = cm__calloc(ctx, (size_t)ncomp + 1, sizeof(int));
  if (!sys->comp_row || !sys->comp_col) {
    free(contact_comp);
    return CM_NOMEM;
  }
  for (int c = 0; c < nc; c++)
    sys->comp_row[contact_comp[c] + 1]++;
  for (int i = 0; i < ncomp; i++)
    sys->comp_row[i + 1] += sys->comp_row[i];
  free(contact_comp);
  return CM_OK;
}

/* Rows: contacts ordered by the first column they touch (a counting sort,
 * stable in the contact index). Columns are grouped by component, so this
 * also groups rows by component, and neighbouring rows touch neighbouring
 * columns: the SpMVs stream through x. */
static int cm__rows(cm_context_t *ctx, const cm_scene_t *s, cm_system_t *sys,
                    const cm__bodycols_t *bc) {
  int nc = s->ncontacts, n = sys->n;
  int *key = cm__malloc(ctx, (size_t)nc + 1, sizeof(int));
  int *cnt = cm__calloc(ctx, (size_t)n + 2, sizeof(int));
  if (!key || !cnt) {
    free(key), free(cnt);
    return CM_NOMEM;
  }
  for (int c = 0; c < nc; c++) {
    const cm_contact_t *ct = &s->contacts[c];
    int k = n;
    if (cm__moving(s, ct->a) && bc[ct->a].col0 < k)
      k = bc[ct->a].col0;
    if (cm__moving(s, ct->b) && bc[ct->b].col0 < k)
      k = bc[ct->b].col0;
    key[c] = k;
    cnt[k + 1]++;
  }
  for (int k = 0; k <= n; k++)
    cnt[k + 1] += cnt[k];
  for (int c = 0; c < nc; c++) {
    int r = cnt[key[c]]++;
    sys->row_contact[r] = c;
    sys->contact_row[c] = r;
  }
  free(key), free(cnt);
  return CM_OK;
}

/* Morton (Z-order) key of a position quantised on the scene's bounding box:
 * bodies close in space get close columns. */
static uint64_t cm__spread3(uint64_t v) { /* 21 bits -> every third bit */
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}

typedef struct {
  int comp;      /* component */
  uint64_t key;  /* Morton key */
  int body;      /* body index */
} cm__border_t;

static int cm__border_cmp(const void *pa, const void *pb) {
  const cm__border_t *a = pa, *b = pb;
  if (a->comp != b->comp)
    return a->comp < b->comp ? -1 : 1;
  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  return a->body - b->body;
}

/* Bodies of each component in Morton order; returns them in *order. */
static int cm__body_order(cm_context_t *ctx, const cm_scene_t *s,
                          const cm_system_t *sys, cm__border_t **order,
                          int *count) {
  int nb = s->nbodies, m = 0;
  double lo[3] = {INFINITY, INFINITY, INFINITY};
  double hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int b = 0; b < nb; b++) {
    if (sys->body_comp[b] < 0)
      continue;
    m++;
    for (int d = 0; d < s->dim; d++) {
      double x = s->bodies[b].position[d];
      lo[d] = x < lo[d] ? x : lo[d];
      hi[d] = x > hi[d] ? x : hi[d];
    }
  }
  cm__border_t *o = cm__malloc(ctx, (size_t)m + 1, sizeof *o);
  if (!o)
    return CM_NOMEM;
  double span = 0;
  for (int d = 0; d < s->dim; d++)
    span = hi[d] - lo[d] > span ? hi[d] - lo[d] : span;
  double scale = span > 0 ? 2097151.0 / span : 0;
  m = 0;
  for (int b = 0; b < nb; b++) {
    if (sys->body_comp[b] < 0)
      continue;
    uint64_t key = 0;
    for (int d = 0; d < s->dim; d++) {
      double q = (s->bodies[b].position[d] - lo[d]) * scale;
      key |= cm__spread3((uint64_t)(q > 0 ? q : 0)) << d;
    }
    o[m++] = (cm__border_t){sys->body_comp[b], key, b};
  }
  qsort(o, (size_t)m, sizeof *o, cm__border_cmp);
  *order = o;
  *count = m;
  return CM_OK;
}

/* Columns: bodies in (component, Morton key) order, each with its active
 * dofs. */
static int cm__columns(cm_context_t *ctx, const cm_scene_t *s,
                       cm_system_t *sys, cm__bodycols_t *bc) {
  int nb = s->nbodies, nc = s->ncontacts;
  unsigned *mask = cm__calloc(ctx, (size_t)nb, sizeof(unsigned));
  if (!mask)
    return CM_NOMEM;
  /* touched dofs: an OR, so the order of the atomic updates does not
   * matter and the result is the same at any thread count */
#pragma omp parallel for schedule(static) num_threads(cm__threads(ctx)) if (nc > CM__PAR_MIN)
  for (int c = 0; c < nc; c++) {
    const cm_contact_t *ct = &s->contacts[c];
    int side[2] = {ct->a, ct->b};
    for (int k = 0; k < 2; k++) {
      if (!cm__moving(s, side[k]))
        continue;
      double seg[6];
      int nd = cm__segment(s, ct, side[k], seg);
      unsigned bits = 0;
      for (int d = 0; d < nd; d++)
        if (seg[d] != 0)
          bits |= 1u << d;
#pragma omp atomic update
      mask[side[k]] |= bits;
    }
  }
  int ncomp = sys->ncomp, ncol = 0;
  int *cols_in = cm__calloc(ctx, (size_t)ncomp + 1, sizeof(int));
  if (!cols_in) {
    free(mask);
    return CM_NOMEM;
  }
  for (int b = 0; b < nb; b++) {
    bc[b].ncol = 0;
    bc[b].col0 = -1;
    if (sys->body_comp[b] < 0)
      continue;
    cm__active_dofs(s, b, mask[b], &bc[b]);
    cols_in[sys->body_comp[b] + 1] += bc[b].ncol;
  }
  free(mask);
  for (int i = 0; i < ncomp; i++)
    cols_in[i + 1] += cols_in[i];
  memcpy(sys->comp_col, cols_in, sizeof(int) * ((size_t)ncomp + 1));
  free(cols_in);
  cm__border_t *order = NULL;
  int norder = 0;
  if (cm__body_order(ctx, s, sys, &order, &norder))
    return CM_NOMEM;
  for (int i = 0, col = 0; i < norder; i++) {
    int b = order[i].body;
    bc[b].col0 = col;
    col += bc[b].ncol;
  }
  free(order);
  ncol = sys->comp_col[ncomp];
  sys->n = ncol;
  sys->col_body = cm__malloc(ctx, (size_t)ncol, sizeof(int));
  sys->col_dof = cm__malloc(ctx, (size_t)ncol, sizeof(int));
  if (!sys->col_body || !sys->col_dof)
    return CM_NOMEM;
  for (int b = 0; b < nb; b++)
    for (int j = 0; j < bc[b].ncol; j++) {
      sys->col_body[bc[b].col0 + j] = b;
      sys->col_dof[bc[b].col0 + j] = bc[b].dof[j];
    }
  return CM_OK;
}

/* Writes the entries of one row (count only when cols == NULL), columns
 * ascending. Returns the entry count. */
static int cm__fill_row(const cm_scene_t *s, const cm__bodycols_t *bc,
                        const cm_contact_t *ct, int *cols, double *vals) {
  int side[2] = {ct->a, ct->b};
  double sign[2] = {1.0, -1.0};
  int order[2] = {0, 1}, cnt = 0;
  if (cm__moving(s, ct->a) && cm__moving(s, ct->b) &&
      bc[ct->b].col0 < bc[ct->a].col0)
    order[0] = 1, order[1] = 0;
  for (int o = 0; o < 2; o++) {
    int k = order[o], b = side[k];
    if (!cm__moving(s, b))
      continue;
    double seg[6];
    cm__segment(s, ct, b, seg);
    for (int j = 0; j < bc[b].ncol; j++) {
      double v = seg[bc[b].dof[j]];
      if (v == 0)
        continue;
      if (cols) {
        cols[cnt] = bc[b].col0 + j;
        vals[cnt] = sign[k] * v;
      }
      cnt++;
    }
  }
  return cnt;
}

static int cm__fill_J(cm_context_t *ctx, const cm_scene_t *s, cm_system_t *sys,
                      const cm__bodycols_t *bc) {
  int nc = s->ncontacts, threads = cm__threads(ctx);
#pragma omp parallel for schedule(static) num_threads(threads) if (nc > CM__PAR_MIN)
  for (int r = 0; r < nc; r++) {
    const cm_contact_t *ct = &s->contacts[sys->row_contact[r]];
    sys->Jp[r + 1] = cm__fill_row(s, bc, ct, NULL, NULL);
    sys->k[r] = ct->stiffness;
    sys->row_a[r] = ct->a;
    sys->row_b[r] = ct->b;
  }
  sys->Jp[0] = 0;
  for (int r = 0; r < nc; r++)
    sys->Jp[r + 1] += sys->Jp[r];
  size_t nnz = (size_t)sys->Jp[nc];
  sys->Jj = cm__malloc(ctx, nnz, sizeof(int));
  sys->Jx = cm__malloc(ctx, nnz, sizeof(double));
  if (!sys->Jj || !sys->Jx)
    return CM_NOMEM;
#pragma omp parallel for schedule(static) num_threads(threads) if (nc > CM__PAR_MIN)
  for (int r = 0; r < nc; r++) {
    const cm_contact_t *ct = &s->contacts[sys->row_contact[r]];
    cm__fill_row(s, bc, ct, sys->Jj + sys->Jp[r], sys->Jx + sys->Jp[r]);
  }
  return CM_OK;
}

/* M restricted to the active dofs: lower triangle of each body block, CSC. */
static int cm__fill_M(cm_context_t *ctx, const cm_scene_t *s, cm_system_t *sys,
                      const cm__bodycols_t *bc) {
  int n = sys->n;
  sys->Mp = cm__malloc(ctx, (size_t)n + 1, sizeof(int));
  size_t cap = 0;
  for (int b = 0; b < s->nbodies; b++)
    cap += (size_t)bc[b].ncol * (size_t)(bc[b].ncol + 1) / 2;
  sys->Mi = cm__malloc(ctx, cap, sizeof(int));
  sys->Mx = cm__malloc(ctx, cap, sizeof(double));
  if (!sys->Mp || !sys->Mi || !sys->Mx)
    return CM_NOMEM;
  /* columns are contiguous per body in (component, body) order: walk them */
  int nz = 0;
  sys->Mp[0] = 0;
  double Iw[9] = {0}; /* world inertia of the body of column j */
  for (int j = 0; j < n; j++) {
    int b = sys->col_body[j];
    const cm_body_t *bd = &s->bodies[b];
    int tdofs = s->dim == 2 ? 2 : 3, dj = sys->col_dof[j];
    if (s->dim == 3 && j == bc[b].col0)
      cm__world_inertia(bd, Iw);
    for (int i = j - bc[b].col0; i < bc[b].ncol; i++) {
      int di = bc[b].dof[i];
      double v;
      if (di < tdofs || dj < tdofs)
        v = di == dj ? bd->mass : 0.0;
      else if (s->dim == 2)
        v = bd->inertia[0];
      else
        v = Iw[3 * (di - 3) + (dj - 3)];
      if (v == 0 && di != dj)
        continue;
      sys->Mi[nz] = bc[b].col0 + i;
      sys->Mx[nz] = v;
      nz++;
    }
    sys->Mp[j + 1] = nz;
  }
  return CM_OK;
}

int cm_system_assemble(cm_context_t *ctx, const cm_scene_t *s,
                       cm_system_t **out) {
  double t0 = cm__now();
  *out = NULL;
  /* ---- check inputs ---- */
  int st = cm_scene_validate(ctx, s);
  if (st)
    return st;
  /* ---- allocate ---- */
  cm_system_t *sys = calloc(1, sizeof *sys);
  cm__bodycols_t *bc = cm__malloc(ctx, (size_t)s->nbodies + 1, sizeof *bc);
  if (!sys || !bc) {
    free(sys), free(bc);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory assembling");
  }
  sys->dim = s->dim;
  sys->nbodies = s->nbodies;
  sys->nc = s->ncontacts;
  sys->block = 1;
  /* ---- compute ---- */
  st = cm__alloc_system(ctx, sys, s->nbodies, s->ncontacts);
  if (!st)
    st = cm__components(ctx, s, sys);
  if (!st)
    st = cm__columns(ctx, s, sys, bc);
  if (!st)
    st = cm__rows(ctx, s, sys, bc);
  if (!st)
    st = cm__fill_J(ctx, s, sys, bc);
  if (!st)
    st = cm__fill_M(ctx, s, sys, bc);
  if (!st) {
    int per = s->dim == 2 ? 3 : 6;
    for (int b = 0; b < s->nbodies; b++) {
      if (s->bodies[b].fixed)
        continue;
      sys->moving_bodies++;
      sys->ndofs += per;
      if (sys->body_comp[b] < 0)
        sys->free_bodies++;
    }
    sys->dropped_dofs = sys->ndofs - sys->n;
  }
  free(bc);
  /* ---- return ---- */
  if (st) {
    cm_system_destroy(&sys);
    return ctx->status ? ctx->status : st;
  }
  sys->t_assemble_s = cm__now() - t0;
  *out = sys;
  return CM_OK;
}
