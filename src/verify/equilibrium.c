/* equilibrium.c: the preloaded state the verification runs start from.
 * Gravity: J^T K J dq = f_gravity with J frozen (normal and tangent rows:
 * the tangents' sticking forces are part of the equilibrium), solved with
 * CHOLMOD on
 * C C^T + beta I (C = J^T K^1/2, beta a tiny regulariser for the dofs no
 * contact holds), refined with the exact operator; a residual that does not
 * vanish means gravity pulls along a free motion (no equilibrium). Each
 * contact's overlap is then delta_c = -(J dq)_c; a contact that is not
 * compressed cannot be part of the linear model and stops the run.
 * Given preloads: the scene is the equilibrium, delta = f / k, balanced by
 * constant external loads. Not for dynamics (integrate.c). */
#include "verify/verify_internal.h"

#include <cholmod.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- regularised solver for J^T K J ---------------------------------------
 */

typedef struct {
  cholmod_common cc; /* CHOLMOD workspace */
  cholmod_sparse C;  /* J^T K^1/2, n x nc, CSC = J's CSR (values scaled) */
  cholmod_factor *L; /* factor of C C^T + beta I */
  double *Cx;        /* scaled values, size Jp[nr] */
  double beta;       /* regulariser */
} cm__vsolver_t;

static void cm__vsolver_free(cm__vsolver_t *s) {
  if (s->L)
    cholmod_free_factor(&s->L, &s->cc);
  cholmod_finish(&s->cc);
  free(s->Cx);
}

static int cm__vsolver_init(cm_context_t *ctx, const cm__vmodel_t *m,
                            cm__vsolver_t *s) {
  memset(s, 0, sizeof *s);
  cholmod_start(&s->cc);
  s->cc.print = 0;
  int nz = m->Jp[m->nr];
  s->Cx = malloc(((size_t)nz + 1) * sizeof(double));
  double *diag = calloc((size_t)m->n + 1, sizeof(double));
  if (!s->Cx || !diag) {
    free(diag);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (equilibrium)");
  }
  double dmax = 0;
  for (int r = 0; r < m->nr; r++) /* normal and tangent rows */
    for (int p = m->Jp[r]; p < m->Jp[r + 1]; p++) {
      s->Cx[p] = sqrt(m->rk[r]) * m->Jx[p];
      diag[m->Jj[p]] += s->Cx[p] * s->Cx[p];
    }
  for (int j = 0; j < m->n; j++)
    dmax = fmax(dmax, diag[j]);
  free(diag);
  s->beta = 1e-13 * (dmax > 0 ? dmax : 1.0);
  s->C.nrow = (size_t)m->n, s->C.ncol = (size_t)m->nr;
  s->C.nzmax = (size_t)nz;
  s->C.p = m->Jp, s->C.i = m->Jj, s->C.x = s->Cx;
  s->C.stype = 0, s->C.itype = CHOLMOD_INT, s->C.xtype = CHOLMOD_REAL;
  s->C.dtype = CHOLMOD_DOUBLE, s->C.sorted = 1, s->C.packed = 1;
  double beta[2] = {s->beta, 0};
  s->L = cholmod_analyze(&s->C, &s->cc);
  if (!s->L || !cholmod_factorize_p(&s->C, beta, NULL, 0, s->L, &s->cc) ||
      s->cc.status < CHOLMOD_OK)
    return CM__ERR(ctx, CM_NUMERIC, NULL,
                   "equilibrium: CHOLMOD failed on J^T K J (status %d)",
                   s->cc.status);
  return CM_OK;
}

/* x = (C C^T + beta I)^-1 r. */
static int cm__vsolver_solve(cm__vsolver_t *s, int n, const double *r,
                             double *x) {
  cholmod_dense b = {0};
  b.nrow = (size_t)n, b.ncol = 1, b.nzmax = (size_t)n;
  b.d = (size_t)n, b.x = (void *)r, b.xtype = CHOLMOD_REAL;
  b.dtype = CHOLMOD_DOUBLE;
  cholmod_dense *X = cholmod_solve(CHOLMOD_A, s->L, &b, &s->cc);
  if (!X)
    return CM_NUMERIC;
  memcpy(x, X->x, (size_t)n * sizeof *x);
  cholmod_free_dense(&X, &s->cc);
  return CM_OK;
}

/* y = J^T K J x; work has nr entries. */
static void cm__vstiff(const cm__vmodel_t *m, const double *x, double *y,
                       double *work) {
  cm__vmodel_J(m, x, work);
  for (int r = 0; r < m->nr; r++)
    work[r] *= m->rk[r];
  cm__vmodel_JT(m, work, y);
}

static double cm__vnorm(int n, const double *x) {
  double s = 0;
  for (int i = 0; i < n; i++)
    s += x[i] * x[i];
  return sqrt(s);
}

/* ---- checks
 * ------------------------------------------------------------------ */

/* Every contact must be compressed: delta_c > 1e-9 max delta. */
static int cm__vcheck_compressed(cm_context_t *ctx, const cm__vmodel_t *m,
                                 const cm_scene_t *scene, const char *how) {
  double dmax = 0;
  for (int c = 0; c < m->nc; c++)
    dmax = fmax(dmax, fabs(m->delta[c]));
  int bad = 0, first = -1;
  char list[512] = "";
  for (int c = 0; c < m->nc; c++) {
    m->bil[c] = 0;
    if (m->delta[c] > 1e-9 * dmax && dmax > 0)
      continue;
    if (m->bilateral_unloaded && fabs(m->delta[c]) <= 1e-9 * dmax) {
      m->bil[c] = 1, m->delta[c] = 0; /* a joint: bilateral, never opens */
      continue;
    }
    if (first < 0)
      first = c;
    if (bad < 5) {
      size_t len = strlen(list);
      const char *nm = cm_scene_contact_name(scene, c);
      snprintf(list + len, sizeof list - len, "%scontacts[%d]%s%s%s %s %.3g N",
               bad ? ", " : "", c, nm ? " (" : "", nm ? nm : "", nm ? ")" : "",
               m->delta[c] < 0 ? "tension" : "unloaded", m->k[c] * m->delta[c]);
    }
    bad++;
  }
  if (!bad)
    return CM_OK;
  char path[64];
  snprintf(path, sizeof path, "contacts[%d]", first);
  return CM__ERR(
      ctx, CM_INVALID_SCENE, path,
      "%d of %d contacts are not compressed at the %s equilibrium "
      "(%s%s): a contact in tension or without load cannot be part "
      "of the linear model; remove it, or give contact preloads "
      "(--preload) instead%s",
      bad, m->nc, how, list, bad > 5 ? ", ..." : "",
      m->bilateral_unloaded
          ? ""
          : " (unloaded contacts that are joints: --unloaded-bilateral)");
}

/* ---- gravity
 * ------------------------------------------------------------------ */

int cm__vequil_gravity(cm_context_t *ctx, cm__vmodel_t *m, const double *g,
                       const cm_scene_t *scene) {
  /* ---- check inputs ---- */
  if (m->nc == 0)
    return CM__ERR(ctx, CM_INVALID_SCENE, "contacts",
                   "the scene has no contacts: nothing to verify");
  for (int t = 0; t < 3; t++)
    m->g[t] = (t < m->dim || m->dim == 3) ? g[t] : 0;
  m->gravity = 1;
  /* ---- allocate ---- */
  cm__vsolver_t sv;
  int st = cm__vsolver_init(ctx, m, &sv);
  double *r = calloc((size_t)m->n + 1, sizeof(double));
  double *dx = calloc((size_t)m->n + 1, sizeof(double));
  double *y = calloc((size_t)m->n + 1, sizeof(double));
  double *w = calloc((size_t)m->nr + 1, sizeof(double));
  if (!st && (!r || !dx || !y || !w))
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (equilibrium)");
  /* ---- compute: f, then refined solve ---- */
  if (!st) {
    memset(m->fext, 0, (size_t)m->n * sizeof(double));
    for (int j = 0; j < m->nmov; j++)
      for (int t = 0; t < m->dim; t++)
        m->fext[(size_t)m->d * j + t] = m->mass[j] * m->g[t];
    double fn = cm__vnorm(m->n, m->fext), rn = fn;
    memset(m->qeq, 0, (size_t)m->n * sizeof(double));
    memcpy(r, m->fext, (size_t)m->n * sizeof(double));
    for (int it = 0; it < 30 && rn > 1e-13 * fn && !st; it++) {
      if (cm__vsolver_solve(&sv, m->n, r, dx))
        st =
            CM__ERR(ctx, CM_NUMERIC, NULL, "equilibrium: CHOLMOD solve failed");
      for (int i = 0; i < m->n && !st; i++)
        m->qeq[i] += dx[i];
      cm__vstiff(m, m->qeq, y, w);
      for (int i = 0; i < m->n; i++)
        r[i] = m->fext[i] - y[i];
      rn = cm__vnorm(m->n, r);
    }
    if (!st && !(rn <= 1e-6 * fn)) {
      /* ---- no equilibrium: name the body with the largest residual ---- */
      int jb = 0;
      double best = -1;
      for (int j = 0; j < m->nmov; j++) {
        double s = cm__vnorm(m->d, r + (size_t)m->d * j);
        if (s > best)
          best = s, jb = j;
      }
      char lab[128], path[64];
      int b = m->dof_body[jb];
      cm_scene_body_label(scene, b, lab, sizeof lab);
      snprintf(path, sizeof path, "bodies[%d]", b);
      st = CM__ERR(ctx, CM_INVALID_SCENE, path,
                   "no static equilibrium under gravity: body %s (%s) is free "
                   "to move along gravity (unbalanced force %.3g N of its "
                   "weight %.3g N); add contacts that support it, or give "
                   "contact preloads (--preload) instead of --gravity",
                   lab, path, best, m->mass[jb] * cm__vnorm(3, m->g));
    }
  }
  if (!st) {
    cm__vmodel_J(m, m->qeq, w);
    for (int c = 0; c < m->nc; c++)
      m->delta[c] = -w[m->crow[c]], m->delta0[c] = 0;
    for (int q = 0; q < m->nr; q++) /* sticking forces of the tangents */
      m->f0[q] = m->rkind[q] ? -m->rk[q] * w[q] : 0;
    st = cm__vcheck_compressed(ctx, m, scene, "gravity");
  }
  /* ---- return ---- */
  cm__vsolver_free(&sv);
  free(r), free(dx), free(y), free(w);
  return st;
}

/* ---- given preloads --------------------------------------------------------
 */

int cm__vequil_preload(cm_context_t *ctx, cm__vmodel_t *m, const double *f,
                       const cm_scene_t *scene) {
  if (m->nc == 0)
    return CM__ERR(ctx, CM_INVALID_SCENE, "contacts",
                   "the scene has no contacts: nothing to verify");
  for (int c = 0; c < m->nc; c++)
    if ((!(f[c] > 0) && !(m->bilateral_unloaded && f[c] == 0)) ||
        !isfinite(f[c])) {
      char path[64];
      snprintf(path, sizeof path, "preload[%d]", c);
      return CM__ERR(
          ctx, CM_USAGE, path,
          "preload of contacts[%d] is %g N: a preload must be a "
          "finite compressive force > 0 (an unloaded contact "
          "cannot be part of the linear model: remove it, or give "
          "the same force to every contact with --preload F, or keep "
          "unloaded contacts as joints with --unloaded-bilateral)",
          c, f[c]);
    }
  (void)scene;
  m->gravity = 0;
  double *y = calloc((size_t)m->nr + 1, sizeof(double));
  if (!y)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (preload)");
  for (int c = 0; c < m->nc; c++) { /* normal preloads; tangents carry 0 */
    m->delta[c] = m->delta0[c] = f[c] / m->k[c], y[m->crow[c]] = -f[c];
    m->bil[c] = f[c] == 0;
  }
  memset(m->f0, 0, ((size_t)m->nr + 1) * sizeof(double));
  cm__vmodel_JT(m, y, m->fext); /* fext = -J^T f balances the contacts */
  memset(m->qeq, 0, (size_t)m->n * sizeof(double));
  free(y);
  return CM_OK;
}

/* ---- nonlinear equilibrium
 * --------------------------------------------------- */

int cm__vequil_nonlinear(cm_context_t *ctx, const cm__vmodel_t *m,
                         cm__vstate_t *base) {
  cm__vstate_set(m, base, NULL, m->qeq, NULL);
  if (!m->gravity)
    return CM_OK; /* the scene itself balances the given preloads */
  cm__vsolver_t sv;
  int st = cm__vsolver_init(ctx, m, &sv);
  double *F = calloc((size_t)m->n + 1, sizeof(double));
  double *dx = calloc((size_t)m->n + 1, sizeof(double));
  cm__vstate_t tmp = {0};
  if (!st)
    st = cm__vstate_alloc(ctx, m, &tmp);
  if (!st && (!F || !dx))
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (equilibrium)");
  double fn = cm__vnorm(m->n, m->fext);
  for (int it = 0; it < 40 && !st; it++) {
    cm__vstate_force(m, base, 0, F, NULL, NULL);
    if (cm__vnorm(m->n, F) <= 1e-12 * fn)
      break;
    if (cm__vsolver_solve(&sv, m->n, F, dx)) {
      st = CM__ERR(ctx, CM_NUMERIC, NULL, "equilibrium: CHOLMOD solve failed");
      break;
    }
    cm__vstate_set(m, &tmp, base, dx, NULL);
    for (int j = 0; j < 3 * m->nmov; j++)
      base->X[j] = tmp.X[j];
    for (int j = 0; j < 4 * m->nmov; j++)
      base->Q[j] = tmp.Q[j];
  }
  for (int j = 0; j < 3 * m->nmov; j++)
    base->V[j] = base->L[j] = 0;
  cm__vstate_free(&tmp);
  cm__vsolver_free(&sv);
  free(F), free(dx);
  return st;
}
