/* model.c: the simulation model of the verification harness, built from the
 * scene independently of the core's system: frozen J (each contact's normal
 * row, and its tangent rows when it has a tangential spring or dashpot, in
 * its own tangent basis of the documented convention), row springs and
 * dashpots, and mass blocks for the linear and unilateral models; body-fixed
 * contact geometry (a point on body a against a plane fixed on body b,
 * sticking tangential springs on the slip of the material points) with
 * finite rotations for the nonlinear one. Not for predictions (those come
 * from the core) and not for time stepping (integrate.c). */
#include "verify/verify_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- small geometry ------------------------------------------------------ */

static void cm__cross(const double *a, const double *b, double *c) {
  c[0] = a[1] * b[2] - a[2] * b[1];
  c[1] = a[2] * b[0] - a[0] * b[2];
  c[2] = a[0] * b[1] - a[1] * b[0];
}

static void cm__mv(const double *R, const double *v, double *out) {
  for (int i = 0; i < 3; i++)
    out[i] = R[3 * i] * v[0] + R[3 * i + 1] * v[1] + R[3 * i + 2] * v[2];
}

/* q <- exp(phi) q (rotation vector phi applied in the world frame). */
static void cm__qrotate(const double *phi, double *q) {
  double a = sqrt(phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2]);
  double c = cos(a / 2), s = a > 1e-300 ? sin(a / 2) / a : 0.5;
  double p[4] = {c, s * phi[0], s * phi[1], s * phi[2]}, r[4];
  r[0] = p[0] * q[0] - p[1] * q[1] - p[2] * q[2] - p[3] * q[3];
  r[1] = p[0] * q[1] + p[1] * q[0] + p[2] * q[3] - p[3] * q[2];
  r[2] = p[0] * q[2] - p[1] * q[3] + p[2] * q[0] + p[3] * q[1];
  r[3] = p[0] * q[3] + p[1] * q[2] - p[2] * q[1] + p[3] * q[0];
  double nn = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + r[3] * r[3]);
  for (int i = 0; i < 4; i++)
    q[i] = r[i] / nn;
}

/* Inverse of a symmetric positive definite 3x3 matrix; 0 if singular. */
static int cm__inv3(const double *A, double *B) {
  double c0 = A[4] * A[8] - A[5] * A[7], c1 = A[5] * A[6] - A[3] * A[8],
         c2 = A[3] * A[7] - A[4] * A[6];
  double det = A[0] * c0 + A[1] * c1 + A[2] * c2;
  if (!(fabs(det) > 0))
    return 0;
  B[0] = c0 / det, B[3] = c1 / det, B[6] = c2 / det;
  B[1] = (A[2] * A[7] - A[1] * A[8]) / det;
  B[4] = (A[0] * A[8] - A[2] * A[6]) / det;
  B[7] = (A[1] * A[6] - A[0] * A[7]) / det;
  B[2] = (A[1] * A[5] - A[2] * A[4]) / det;
  B[5] = (A[2] * A[3] - A[0] * A[5]) / det;
  B[8] = (A[0] * A[4] - A[1] * A[3]) / det;
  return 1;
}

/* ---- build ------------------------------------------------------------------
 */

void cm__vmodel_destroy(cm__vmodel_t **mp) {
  if (!mp || !*mp)
    return;
  cm__vmodel_t *m = *mp;
  free(m->body_dof), free(m->dof_body), free(m->mass), free(m->Iw);
  free(m->Iwinv), free(m->x0), free(m->ca), free(m->cb), free(m->ra);
  free(m->rb), free(m->nrm), free(m->k), free(m->Ra), free(m->Rb), free(m->sph),
      free(m->Jp), free(m->Jj);
  free(m->Jx), free(m->delta), free(m->bil), free(m->delta0), free(m->fext),
      free(m->qeq);
  free(m->crow), free(m->rc), free(m->rkind), free(m->dir), free(m->rk),
      free(m->rg), free(m->f0);
  free(m);
  *mp = NULL;
}

/* Mass blocks of the moving bodies. */
static int cm__vmodel_bodies(cm_context_t *ctx, const cm_scene_t *s,
                             cm__vmodel_t *m) {
  int j = 0;
  for (int i = 0; i < s->nbodies; i++) {
    const cm_body_t *b = &s->bodies[i];
    for (int t = 0; t < 3; t++)
      m->x0[3 * i + t] = (t < s->dim) ? b->position[t] : 0;
    if (b->fixed) {
      m->body_dof[i] = -1;
      continue;
    }
    m->body_dof[i] = j * m->d;
    m->dof_body[j] = i;
    m->mass[j] = b->mass;
    double *Iw = m->Iw + 9 * j;
    if (s->dim == 2) {
      memset(Iw, 0, 9 * sizeof *Iw);
      Iw[0] = Iw[4] = Iw[8] = b->inertia[0];
    } else {
      double R[9], T[9];
      cm__quat_to_R(b->orientation, R);
      for (int r = 0; r < 3; r++) /* T = R Ib */
        for (int c = 0; c < 3; c++)
          T[3 * r + c] = R[3 * r] * b->inertia[c] +
                         R[3 * r + 1] * b->inertia[3 + c] +
                         R[3 * r + 2] * b->inertia[6 + c];
      for (int r = 0; r < 3; r++) /* Iw = T R^T */
        for (int c = 0; c < 3; c++)
          Iw[3 * r + c] = T[3 * r] * R[3 * c] + T[3 * r + 1] * R[3 * c + 1] +
                          T[3 * r + 2] * R[3 * c + 2];
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < r; c++)
          Iw[3 * r + c] = Iw[3 * c + r] = 0.5 * (Iw[3 * r + c] + Iw[3 * c + r]);
    }
    if (!cm__inv3(Iw, m->Iwinv + 9 * j)) {
      char p[64];
      snprintf(p, sizeof p, "bodies[%d].inertia", i);
      return CM__ERR(ctx, CM_INVALID_SCENE, p,
                     "%s: inertia is singular; give a positive inertia", p);
    }
    j++;
  }
  return CM_OK;
}

/* Direction of row kind (0 normal, 1 and 2 tangents) of a contact with
 * unit normal n: the convention of docs/math.md, re-derived here (the
 * spectrum does not depend on it; the predicted mode vectors do, so the
 * harness uses the same one to read them). */
static void cm__vdirection(int dim, const double *n, int kind, double *t) {
  if (kind == 0) {
    t[0] = n[0], t[1] = n[1], t[2] = dim == 3 ? n[2] : 0.0;
    return;
  }
  if (dim == 2) {
    t[0] = -n[1], t[1] = n[0], t[2] = 0.0; /* n rotated by +90 degrees */
    return;
  }
  int e = 0; /* the world axis least aligned with n, first on ties */
  for (int i = 1; i < 3; i++)
    if (fabs(n[i]) < fabs(n[e]))
      e = i;
  double u[3] = {-n[e] * n[0], -n[e] * n[1], -n[e] * n[2]};
  u[e] += 1.0; /* u = e - (e.n) n */
  double un = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
  for (int i = 0; i < 3; i++)
    u[i] /= un;
  if (kind == 1) {
    memcpy(t, u, 3 * sizeof *t);
    return;
  }
  cm__cross(n, u, t); /* t2 = n x t1 */
}

/* Rows of contact ct: the normal, plus dim - 1 tangents when it has a
 * tangential spring or dashpot. */
static int cm__vcontact_rows(int dim, const cm_contact_t *ct) {
  return (ct->stiffness_t > 0 || ct->damping_t > 0) ? dim : 1;
}

/* Contact geometry and the frozen J (row for direction d: [d, r_a x d] on
 * a, -[d, r_b x d] on b; 2D rotation entry r_x d_y - r_y d_x). */
static void cm__vmodel_contacts(const cm_scene_t *s, cm__vmodel_t *m) {
  int nz = 0, r = 0;
  m->Jp[0] = 0;
  for (int c = 0; c < s->ncontacts; c++) {
    const cm_contact_t *ct = &s->contacts[c];
    m->ca[c] = ct->a, m->cb[c] = ct->b, m->k[c] = ct->stiffness;
    double p[3] = {0, 0, 0}, nv[3] = {0, 0, 0};
    for (int t = 0; t < s->dim; t++)
      p[t] = ct->point[t], nv[t] = ct->normal[t];
    for (int t = 0; t < 3; t++) {
      m->nrm[3 * c + t] = nv[t];
      m->ra[3 * c + t] = p[t] - (ct->a >= 0 ? m->x0[3 * ct->a + t] : 0);
      m->rb[3 * c + t] = p[t] - (ct->b >= 0 ? m->x0[3 * ct->b + t] : 0);
      if (ct->has_arms && t < s->dim) /* the scene's own lever arms */
        m->ra[3 * c + t] = ct->arm_a[t], m->rb[3 * c + t] = ct->arm_b[t];
    }
    int bodies[2] = {ct->a, ct->b};
    if (bodies[0] >= 0 && bodies[1] >= 0 && m->body_dof[bodies[1]] >= 0 &&
        m->body_dof[bodies[0]] > m->body_dof[bodies[1]])
      bodies[0] = ct->b, bodies[1] = ct->a; /* ascending columns */
    m->crow[c] = r;
    int nrows = cm__vcontact_rows(s->dim, ct);
    for (int kind = 0; kind < nrows; kind++, r++) {
      double *dv = m->dir + 3 * r;
      cm__vdirection(s->dim, nv, kind, dv);
      m->rc[r] = c, m->rkind[r] = (unsigned char)kind;
      m->rk[r] = kind ? ct->stiffness_t : ct->stiffness;
      m->rg[r] = kind ? ct->damping_t : ct->damping_n;
      m->f0[r] = 0;
      m->tangential |= kind > 0;
      m->dashpots |= m->rg[r] > 0;
      for (int e = 0; e < 2; e++) {
        int b = bodies[e];
        if (b < 0 || m->body_dof[b] < 0)
          continue;
        double sg = (b == ct->a) ? 1.0 : -1.0;
        const double *rr = (b == ct->a) ? m->ra + 3 * c : m->rb + 3 * c;
        double rd[3];
        cm__cross(rr, dv, rd);
        int d0 = m->body_dof[b];
        if (m->dim == 2) {
          double v[3] = {dv[0], dv[1], rd[2]};
          for (int t = 0; t < 3; t++)
            m->Jj[nz] = d0 + t, m->Jx[nz++] = sg * v[t];
        } else {
          for (int t = 0; t < 3; t++)
            m->Jj[nz] = d0 + t, m->Jx[nz++] = sg * dv[t];
          for (int t = 0; t < 3; t++)
            m->Jj[nz] = d0 + 3 + t, m->Jx[nz++] = sg * rd[t];
        }
      }
      m->Jp[r + 1] = nz;
    }
    /* sphere sides: lever arm along the normal, positive radius */
    double ca[3], cb[3];
    cm__cross(m->ra + 3 * c, nv, ca);
    cm__cross(m->rb + 3 * c, nv, cb);
    double la =
        sqrt(m->ra[3 * c] * m->ra[3 * c] + m->ra[3 * c + 1] * m->ra[3 * c + 1] +
             m->ra[3 * c + 2] * m->ra[3 * c + 2]);
    double lb =
        sqrt(m->rb[3 * c] * m->rb[3 * c] + m->rb[3 * c + 1] * m->rb[3 * c + 1] +
             m->rb[3 * c + 2] * m->rb[3 * c + 2]);
    double Ra = -(nv[0] * m->ra[3 * c] + nv[1] * m->ra[3 * c + 1] +
                  nv[2] * m->ra[3 * c + 2]);
    double Rb = nv[0] * m->rb[3 * c] + nv[1] * m->rb[3 * c + 1] +
                nv[2] * m->rb[3 * c + 2];
    m->sph[c] = 0, m->Ra[c] = m->Rb[c] = 0;
    if (ct->a >= 0 && Ra > 0 &&
        sqrt(ca[0] * ca[0] + ca[1] * ca[1] + ca[2] * ca[2]) <= 1e-9 * la)
      m->sph[c] |= 1, m->Ra[c] = Ra;
    if (ct->b >= 0 && Rb > 0 &&
        sqrt(cb[0] * cb[0] + cb[1] * cb[1] + cb[2] * cb[2]) <= 1e-9 * lb)
      m->sph[c] |= 2, m->Rb[c] = Rb;
  }
  m->crow[s->ncontacts] = r;
}

int cm__vmodel_build(cm_context_t *ctx, const cm_scene_t *s,
                     cm__vmodel_t **out) {
  /* ---- check inputs ---- */
  *out = NULL;
  int st = cm_scene_validate(ctx, s);
  if (st < 0)
    return st;
  /* ---- allocate ---- */
  cm__vmodel_t *m = calloc(1, sizeof *m);
  if (!m)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  m->dim = s->dim, m->d = s->dim == 2 ? 3 : 6;
  m->nbodies = s->nbodies, m->nc = s->ncontacts;
  for (int i = 0; i < s->nbodies; i++)
    m->nmov += !s->bodies[i].fixed;
  m->n = m->d * m->nmov;
  for (int c = 0; c < s->ncontacts; c++)
    m->nr += cm__vcontact_rows(s->dim, &s->contacts[c]);
  size_t nb = (size_t)s->nbodies + 1, nv = (size_t)m->nmov + 1,
         nc = (size_t)m->nc + 1, n = (size_t)m->n + 1, nr = (size_t)m->nr + 1;
  m->body_dof = malloc(nb * sizeof(int));
  m->dof_body = malloc(nv * sizeof(int));
  m->mass = malloc(nv * sizeof(double));
  m->Iw = malloc(9 * nv * sizeof(double));
  m->Iwinv = malloc(9 * nv * sizeof(double));
  m->x0 = malloc(3 * nb * sizeof(double));
  m->ca = malloc(nc * sizeof(int));
  m->cb = malloc(nc * sizeof(int));
  m->ra = malloc(3 * nc * sizeof(double));
  m->rb = malloc(3 * nc * sizeof(double));
  m->nrm = malloc(3 * nc * sizeof(double));
  m->k = malloc(nc * sizeof(double));
  m->Ra = malloc(nc * sizeof(double));
  m->Rb = malloc(nc * sizeof(double));
  m->sph = malloc(nc);
  m->Jp = malloc(nr * sizeof(int));
  m->Jj = malloc(2 * (size_t)m->d * nr * sizeof(int));
  m->Jx = malloc(2 * (size_t)m->d * nr * sizeof(double));
  m->crow = malloc(nc * sizeof(int));
  m->rc = malloc(nr * sizeof(int));
  m->rkind = malloc(nr);
  m->dir = malloc(3 * nr * sizeof(double));
  m->rk = malloc(nr * sizeof(double));
  m->rg = malloc(nr * sizeof(double));
  m->f0 = calloc(nr, sizeof(double));
  m->delta = calloc(nc, sizeof(double));
  m->bil = calloc(nc, 1);
  m->delta0 = calloc(nc, sizeof(double));
  m->fext = calloc(n, sizeof(double));
  m->qeq = calloc(n, sizeof(double));
  if (!m->body_dof || !m->dof_body || !m->mass || !m->Iw || !m->Iwinv ||
      !m->x0 || !m->ca || !m->cb || !m->ra || !m->rb || !m->nrm || !m->k ||
      !m->Ra || !m->Rb || !m->sph || !m->Jp || !m->Jj || !m->Jx || !m->delta ||
      !m->bil || !m->delta0 || !m->fext || !m->qeq || !m->crow || !m->rc ||
      !m->rkind || !m->dir || !m->rk || !m->rg || !m->f0) {
    cm__vmodel_destroy(&m);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory building the model");
  }
  /* ---- compute ---- */
  st = cm__vmodel_bodies(ctx, s, m);
  if (st) {
    cm__vmodel_destroy(&m);
    return st;
  }
  cm__vmodel_contacts(s, m);
  *out = m;
  return CM_OK;
}

/* ---- frozen operators ------------------------------------------------------
 */

void cm__vmodel_J(const cm__vmodel_t *m, const double *q, double *xi) {
  for (int c = 0; c < m->nr; c++) {
    double s = 0;
    for (int p = m->Jp[c]; p < m->Jp[c + 1]; p++)
      s += m->Jx[p] * q[m->Jj[p]]; /* xi = J q */
    xi[c] = s;
  }
}

void cm__vmodel_JT(const cm__vmodel_t *m, const double *y, double *f) {
  memset(f, 0, (size_t)m->n * sizeof *f);
  for (int c = 0; c < m->nr; c++)
    for (int p = m->Jp[c]; p < m->Jp[c + 1]; p++)
      f[m->Jj[p]] += m->Jx[p] * y[c]; /* f = J^T y */
}

/* a = M^-1 f, or f = M v (inv = 0), block by block. */
static void cm__vmodel_blocks(const cm__vmodel_t *m, const double *f, double *a,
                              int inv) {
  for (int j = 0; j < m->nmov; j++) {
    const double *x = f + (size_t)m->d * j;
    double *y = a + (size_t)m->d * j;
    double s = inv ? 1.0 / m->mass[j] : m->mass[j];
    const double *I = (inv ? m->Iwinv : m->Iw) + 9 * j;
    if (m->dim == 2) {
      y[0] = s * x[0], y[1] = s * x[1], y[2] = I[8] * x[2];
    } else {
      y[0] = s * x[0], y[1] = s * x[1], y[2] = s * x[2];
      cm__mv(I, x + 3, y + 3);
    }
  }
}

void cm__vmodel_minv(const cm__vmodel_t *m, const double *f, double *a) {
  cm__vmodel_blocks(m, f, a, 1);
}

void cm__vmodel_mul_M(const cm__vmodel_t *m, const double *v, double *f) {
  cm__vmodel_blocks(m, v, f, 0);
}

/* ---- rigid-body state ------------------------------------------------------
 */

int cm__vstate_alloc(cm_context_t *ctx, const cm__vmodel_t *m,
                     cm__vstate_t *s) {
  size_t nv = (size_t)m->nmov + 1;
  s->X = calloc(3 * nv, sizeof(double));
  s->Q = calloc(4 * nv, sizeof(double));
  s->V = calloc(3 * nv, sizeof(double));
  s->L = calloc(3 * nv, sizeof(double));
  if (!s->X || !s->Q || !s->V || !s->L) {
    cm__vstate_free(s);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (rigid-body state)");
  }
  for (int j = 0; j < m->nmov; j++)
    s->Q[4 * j] = 1;
  return CM_OK;
}

void cm__vstate_free(cm__vstate_t *s) {
  free(s->X), free(s->Q), free(s->V), free(s->L);
  s->X = s->Q = s->V = s->L = NULL;
}

/* Angular momentum L = R Iw R^T omega for the body's current rotation. */
static void cm__vstate_L(const cm__vmodel_t *m, int j, const double *Q,
                         const double *om, double *L) {
  double R[9], a[3], b[3];
  cm__quat_to_R(Q, R);
  for (int i = 0; i < 3; i++) /* a = R^T om */
    a[i] = R[i] * om[0] + R[3 + i] * om[1] + R[6 + i] * om[2];
  cm__mv(m->Iw + 9 * j, a, b);
  cm__mv(R, b, L);
}

void cm__vstate_set(const cm__vmodel_t *m, cm__vstate_t *s,
                    const cm__vstate_t *base, const double *q,
                    const double *qd) {
  for (int j = 0; j < m->nmov; j++) {
    const double *qj = q ? q + (size_t)m->d * j : NULL;
    const double *vj = qd ? qd + (size_t)m->d * j : NULL;
    double dx[3] = {0, 0, 0}, phi[3] = {0, 0, 0}, v[3] = {0, 0, 0},
           om[3] = {0, 0, 0};
    if (m->dim == 2) {
      if (qj)
        dx[0] = qj[0], dx[1] = qj[1], phi[2] = qj[2];
      if (vj)
        v[0] = vj[0], v[1] = vj[1], om[2] = vj[2];
    } else {
      for (int t = 0; t < 3; t++) {
        if (qj)
          dx[t] = qj[t], phi[t] = qj[3 + t];
        if (vj)
          v[t] = vj[t], om[t] = vj[3 + t];
      }
    }
    double *Q = s->Q + 4 * j;
    if (base)
      memcpy(Q, base->Q + 4 * j, 4 * sizeof *Q);
    else
      Q[0] = 1, Q[1] = Q[2] = Q[3] = 0;
    cm__qrotate(phi, Q);
    for (int t = 0; t < 3; t++) {
      s->X[3 * j + t] = (base ? base->X[3 * j + t] : 0) + dx[t];
      s->V[3 * j + t] = v[t];
    }
    cm__vstate_L(m, j, Q, om, s->L + 3 * j);
  }
}

/* World position of the body-fixed point r (reference frame) of body b. */
static void cm__vpoint(const cm__vmodel_t *m, const cm__vstate_t *s, int b,
                       const double *r, double *p, double *com) {
  int j = (b >= 0 && m->body_dof[b] >= 0) ? m->body_dof[b] / m->d : -1;
  for (int t = 0; t < 3; t++)
    com[t] = b >= 0 ? m->x0[3 * b + t] : 0;
  if (j < 0) {
    for (int t = 0; t < 3; t++)
      p[t] = com[t] + r[t];
    return;
  }
  double R[9], rr[3];
  cm__quat_to_R(s->Q + 4 * j, R);
  cm__mv(R, r, rr);
  for (int t = 0; t < 3; t++) {
    com[t] += s->X[3 * j + t];
    p[t] = com[t] + rr[t];
  }
}

/* Gap of contact c. Returns pa (where the force acts), xa, xb (current COMs)
 * and nb (the force direction on a). Sides flagged as spheres (normal through
 * the COM at the reference) keep their contact point on the line of centres,
 * so spinning a sphere does not change the gap; other sides carry a
 * body-fixed point (a) or plane (b). */
static double cm__vgap(const cm__vmodel_t *m, const cm__vstate_t *s, int c,
                       double *pa, double *xa, double *xb, double *nb) {
  double pb[3], g;
  int sa = m->sph[c] & 1, sb = m->sph[c] & 2;
  cm__vpoint(m, s, m->ca[c], m->ra + 3 * c, pa, xa);
  cm__vpoint(m, s, m->cb[c], m->rb + 3 * c, pb, xb);
  if (sb) { /* sphere b: normal along the line from its centre */
    const double *from = xb;
    double tgt[3], d[3], len = 0;
    for (int t = 0; t < 3; t++)
      tgt[t] = sa ? xa[t] : pa[t];
    for (int t = 0; t < 3; t++)
      d[t] = tgt[t] - from[t], len += d[t] * d[t];
    len = sqrt(len);
    for (int t = 0; t < 3; t++)
      nb[t] = d[t] / len;
    g = len - m->Rb[c] - (sa ? m->Ra[c] : 0);
    if (sa)
      for (int t = 0; t < 3; t++)
        pa[t] = xa[t] - m->Ra[c] * nb[t];
    return g - m->delta0[c];
  }
  int b = m->cb[c];
  int j = (b >= 0 && m->body_dof[b] >= 0) ? m->body_dof[b] / m->d : -1;
  if (j >= 0) {
    double R[9];
    cm__quat_to_R(s->Q + 4 * j, R);
    cm__mv(R, m->nrm + 3 * c, nb);
  } else {
    memcpy(nb, m->nrm + 3 * c, 3 * sizeof *nb);
  }
  if (sa) /* sphere a against a plane: its nearest point */
    for (int t = 0; t < 3; t++)
      pa[t] = xa[t] - m->Ra[c] * nb[t];
  g = nb[0] * (pa[0] - pb[0]) + nb[1] * (pa[1] - pb[1]) +
      nb[2] * (pa[2] - pb[2]);
  return g - m->delta0[c];
}

/* Direction of row r now: the reference direction rotated with body b
 * (world-fixed when b is fixed or the world). */
static void cm__vrow_dir(const cm__vmodel_t *m, const cm__vstate_t *s, int r,
                         double *d) {
  int b = m->cb[m->rc[r]];
  int j = (b >= 0 && m->body_dof[b] >= 0) ? m->body_dof[b] / m->d : -1;
  if (j < 0) {
    memcpy(d, m->dir + 3 * r, 3 * sizeof *d);
    return;
  }
  double R[9];
  cm__quat_to_R(s->Q + 4 * j, R);
  cm__mv(R, m->dir + 3 * r, d);
}

/* Velocity of the material point of body b at p (x: its current COM). */
static void cm__vpoint_vel(const cm__vmodel_t *m, const cm__vstate_t *s, int b,
                           const double *p, const double *x, double *v) {
  int j = (b >= 0 && m->body_dof[b] >= 0) ? m->body_dof[b] / m->d : -1;
  v[0] = v[1] = v[2] = 0;
  if (j < 0)
    return;
  double om[3], r[3], w[3];
  cm__vstate_omega(m, s->Q + 4 * j, j, s->L + 3 * j, om);
  for (int t = 0; t < 3; t++)
    r[t] = p[t] - x[t];
  cm__cross(om, r, w);
  for (int t = 0; t < 3; t++)
    v[t] = s->V[3 * j + t] + w[t]; /* v = V + omega x r */
}

/* Relative velocity at p of a's material point against b's. */
static void cm__vrel_vel(const cm__vmodel_t *m, const cm__vstate_t *s, int c,
                         const double *p, const double *xa, const double *xb,
                         double *v) {
  double va[3], vb[3];
  cm__vpoint_vel(m, s, m->ca[c], p, xa, va);
  cm__vpoint_vel(m, s, m->cb[c], p, xb, vb);
  for (int t = 0; t < 3; t++)
    v[t] = va[t] - vb[t];
}

static double cm__vdot(const double *a, const double *b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Tangential slip of row r (contact c): s = t . (pm_a - pm_b), t rotating
 * with b, pm the body-fixed material points (spheres too: a sticking
 * tangential spring couples spin). pma gets a's point. */
static double cm__vslip(const cm__vmodel_t *m, const cm__vstate_t *s, int c,
                        int r, double *t, double *pma, double *xa, double *xb) {
  double pmb[3], d[3];
  cm__vpoint(m, s, m->ca[c], m->ra + 3 * c, pma, xa);
  cm__vpoint(m, s, m->cb[c], m->rb + 3 * c, pmb, xb);
  cm__vrow_dir(m, s, r, t);
  for (int i = 0; i < 3; i++)
    d[i] = pma[i] - pmb[i];
  return cm__vdot(t, d);
}

void cm__vstate_gaps(const cm__vmodel_t *m, const cm__vstate_t *s,
                     double *gap) {
  double pa[3], xa[3], xb[3], nb[3];
  for (int c = 0; c < m->nc; c++) {
    gap[m->crow[c]] = cm__vgap(m, s, c, pa, xa, xb, nb);
    for (int r = m->crow[c] + 1; r < m->crow[c + 1]; r++)
      gap[r] = cm__vslip(m, s, c, r, nb, pa, xa, xb);
  }
}

/* Adds force f along nb at point p to body b (force and torque about x). */
static void cm__vadd(const cm__vmodel_t *m, int b, double f, const double *nb,
                     const double *p, const double *x, double *F) {
  if (b < 0 || m->body_dof[b] < 0)
    return;
  double *Fj = F + (size_t)m->d * (m->body_dof[b] / m->d);
  double fv[3] = {f * nb[0], f * nb[1], f * nb[2]}, r[3], tq[3];
  for (int t = 0; t < 3; t++)
    r[t] = p[t] - x[t];
  cm__cross(r, fv, tq);
  if (m->dim == 2) {
    Fj[0] += fv[0], Fj[1] += fv[1], Fj[2] += tq[2];
  } else {
    for (int t = 0; t < 3; t++)
      Fj[t] += fv[t], Fj[3 + t] += tq[t];
  }
}

/* Forces act at a's point on both bodies (opposite), which makes the
 * springs conservative: that point's lever arm on b carries the rotation of
 * b's normal or tangent (the derivative of n_b . (p_a - p_b)). */
int cm__vstate_force(const cm__vmodel_t *m, const cm__vstate_t *s,
                     int unilateral, double *F, double *gap, char *open) {
  int nopen = 0;
  memcpy(F, m->fext, (size_t)m->n * sizeof *F);
  for (int c = 0; c < m->nc; c++) {
    double pa[3], xa[3], xb[3], nb[3], v[3];
    int r0 = m->crow[c];
    double g = cm__vgap(m, s, c, pa, xa, xb, nb);
    double f = -m->k[c] * g; /* penalty force, compressive > 0 */
    int off = 0;
    if (gap)
      gap[r0] = g;
    if (unilateral && f < 0 && !m->bil[c]) {
      f = 0, off = 1;
      nopen++;
    }
    if (open)
      open[c] = (char)(f <= 0 && unilateral && !m->bil[c]);
    if (!off && m->rg[r0] > 0) { /* normal dashpot */
      cm__vrel_vel(m, s, c, pa, xa, xb, v);
      f -= m->rg[r0] * cm__vdot(nb, v);
    }
    cm__vadd(m, m->ca[c], f, nb, pa, xa, F);
    cm__vadd(m, m->cb[c], -f, nb, pa, xb, F);
    for (int r = r0 + 1; r < m->crow[c + 1]; r++) { /* sticking tangents */
      double t[3];
      double sl = cm__vslip(m, s, c, r, t, pa, xa, xb);
      if (gap)
        gap[r] = sl;
      if (off)
        continue;
      double ft = -m->rk[r] * sl; /* slip 0 at the reference */
      if (m->rg[r] > 0) {
        cm__vrel_vel(m, s, c, pa, xa, xb, v);
        ft -= m->rg[r] * cm__vdot(t, v);
      }
      cm__vadd(m, m->ca[c], ft, t, pa, xa, F);
      cm__vadd(m, m->cb[c], -ft, t, pa, xb, F);
    }
  }
  return nopen;
}

/* Rotation rate omega = R Iw^-1 R^T L of moving body j. */
void cm__vstate_omega(const cm__vmodel_t *m, const double *Q, int j,
                      const double *L, double *om) {
  double R[9], a[3], b[3];
  cm__quat_to_R(Q, R);
  for (int i = 0; i < 3; i++) /* a = R^T L */
    a[i] = R[i] * L[0] + R[3 + i] * L[1] + R[6 + i] * L[2];
  cm__mv(m->Iwinv + 9 * j, a, b);
  cm__mv(R, b, om);
}

/* Q <- exp(h omega) Q, exported to integrate.c. */
void cm__vstate_rotate(double *Q, const double *om, double h) {
  double phi[3] = {h * om[0], h * om[1], h * om[2]};
  cm__qrotate(phi, Q);
}
