/* fields.c: every contact's and body's values in the top modes (shares,
 * displacements), the per-contact frequencies and every component's
 * omega_max, for the HTML report and the VTK / dump exports. Not for the
 * report's top-k lists (analyze.c). */
#include "analyze/fields.h"
#include "analyze/analyze_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void cm__fields_free(cm__fields_t *f) {
  if (!f)
    return;
  free(f->share), free(f->kinetic), free(f->disp), free(f->pc_omega);
  free(f->comp), free(f->comp_omega);
  int want = f->want;
  memset(f, 0, sizeof *f);
  f->want = want;
}

/* Index of mode i within its component's pairs: the modes are sorted by
 * lambda, then component, then pair, so it is the count of earlier modes
 * of the same component. */
static int cm__pair_of(const cm_report_t *r, int i) {
  int k = 0;
  for (int j = 0; j < i; j++)
    k += r->modes[j].component == r->modes[i].component;
  return k;
}

/* Shares and displacements of mode i into row i of f's arrays. */
static int cm__fields_mode(cm__fields_t *f, cm_operator_t *op,
                           const cm_system_t *sys, const cm_scene_t *scene,
                           const cm__eig_t *eig, const cm_report_t *r, int i) {
  int comp = r->modes[i].component, p = cm__pair_of(r, i);
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  const cm__eig_t *e = &eig[comp];
  if (p >= e->nev)
    return CM_OK;
  const double *z = e->z + (size_t)p * (size_t)m;
  double *share = f->share + (size_t)i * f->nc;
  for (int q = 0; q < m; q++) /* e_c = k_c xi_c^2 / lambda = z_c^2 */
    share[sys->row_contact[r0 + q]] += z[q] * z[q];
  if (!f->nb || n == 0)
    return CM_OK;
  /* u = B^T z: sigma times the mode in L^T q (the finish's, if kept) */
  const double *bz = e->bz ? e->bz + (size_t)p * (size_t)n : NULL;
  double *own = bz ? NULL : malloc(sizeof(double) * ((size_t)n + 1));
  if (!bz && !own)
    return CM_NOMEM;
  if (own)
    cm__op_BT(op, comp, z, own);
  const double *u = bz ? bz : own;
  double lambda = r->modes[i].lambda, sigma = sqrt(lambda), big = 0;
  double *kin = f->kinetic + (size_t)i * f->nb;
  double *d = f->disp + (size_t)i * f->nb * 3;
  for (int j = 0; j < n; j++) {
    int b = sys->col_body[c0 + j], dof = sys->col_dof[c0 + j];
    if (b < 0)
      continue;
    kin[b] += u[j] * u[j] / lambda;
    /* translations are decoupled from rotations in a body's mass block,
     * so q_t = (L^-T y)_t = y_t / sqrt(m) */
    if (dof < sys->dim && scene)
      d[3 * b + dof] = u[j] / sigma / sqrt(scene->bodies[b].mass);
  }
  for (size_t q = 0; q < (size_t)f->nb * 3; q++)
    big = fmax(big, fabs(d[q]));
  for (size_t q = 0; big > 0 && q < (size_t)f->nb * 3; q++)
    d[q] /= big;
  free(own);
  return CM_OK;
}

int cm__fields_fill(cm__fields_t *f, cm_operator_t *op, const cm_system_t *sys,
                    const cm_scene_t *scene, const cm__eig_t *eig,
                    const double *diag, const cm_report_t *r) {
  /* ---- allocate ---- */
  cm__fields_free(f);
  int nm = f->want < r->nmodes ? f->want : r->nmodes;
  nm = nm < 0 ? 0 : nm;
  f->nmodes = nm;
  f->dim = sys->dim;
  f->nc = sys->ncontacts;
  f->nb = sys->dim ? sys->nbodies : 0;
  f->ncomp = sys->ncomp;
  size_t nc = (size_t)f->nc, nb = (size_t)f->nb;
  f->share = calloc((size_t)nm * nc + 1, sizeof(double));
  f->kinetic = calloc((size_t)nm * nb + 1, sizeof(double));
  f->disp = calloc((size_t)nm * nb * 3 + 1, sizeof(double));
  f->pc_omega = malloc(sizeof(double) * (nc + 1));
  f->comp = malloc(sizeof(int) * (nc + 1));
  f->comp_omega = calloc((size_t)f->ncomp + 1, sizeof(double));
  if (!f->share || !f->kinetic || !f->disp || !f->pc_omega || !f->comp ||
      !f->comp_omega) {
    cm__fields_free(f);
    return CM_NOMEM;
  }
  /* ---- per contact and per component ---- */
  for (size_t c = 0; c < nc; c++)
    f->pc_omega[c] = 0;
  for (int q = 0; q < sys->nc; q++) {
    int c = sys->row_contact[q];
    double w = sqrt(diag[q]); /* per-contact estimate sqrt(S_cc) */
    f->pc_omega[c] = isnan(w) || w > f->pc_omega[c] ? w : f->pc_omega[c];
  }
  for (int k = 0; k < sys->ncomp; k++) {
    f->comp_omega[k] = eig[k].nev ? sqrt(eig[k].lambda[0]) : 0;
    int r0, m, c0, n;
    cm__op_comp(op, k, &r0, &m, &c0, &n);
    for (int q = 0; q < m; q++)
      f->comp[sys->row_contact[r0 + q]] = k;
  }
  /* ---- per mode ---- */
  for (int i = 0; i < nm; i++)
    if (cm__fields_mode(f, op, sys, scene, eig, r, i)) {
      cm__fields_free(f);
      return CM_NOMEM;
    }
  return CM_OK;
}
