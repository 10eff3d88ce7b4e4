/* fields_dump.c: the top modes as a LAMMPS-style text dump (fields_io.h),
 * one frame per mode, for OVITO. Not for reading dumps (dump.c). */
#include "internal.h"
#include "io/fields_io.h"

#include <math.h>
#include <stdlib.h>

int cm__contact_imaged(const cm_scene_t *s, const cm_contact_t *k) {
  if (!k->has_arms || k->a < 0 || k->b < 0 || s->bodies[k->b].fixed)
    return 0;
  double d2 = 0, la = 0, lb = 0;
  for (int i = 0; i < 3; i++) {
    double t = k->point[i] - s->bodies[k->b].position[i];
    d2 += t * t;
    la += k->arm_a[i] * k->arm_a[i], lb += k->arm_b[i] * k->arm_b[i];
  }
  return sqrt(d2) > sqrt(la) + sqrt(lb);
}

void cm__fields_radii(const cm_scene_t *s, double *rad) {
  int dim = s->dim;
  for (int b = 0; b < s->nbodies; b++)
    rad[b] = INFINITY;
  for (int c = 0; c < s->ncontacts; c++) {
    const cm_contact_t *k = &s->contacts[c];
    int ab[2] = {k->a, k->b};
    for (int q = 0; q < 2; q++) {
      int b = ab[q];
      if (b < 0 || s->bodies[b].fixed)
        continue;
      int img = q && cm__contact_imaged(s, k); /* b's image: its arm */
      double d2 = 0;
      for (int i = 0; i < dim; i++)
        d2 += img ? k->arm_b[i] * k->arm_b[i]
                  : (k->point[i] - s->bodies[b].position[i]) *
                        (k->point[i] - s->bodies[b].position[i]);
      rad[b] = fmin(rad[b], sqrt(d2));
    }
  }
  double sum = 0;
  int n = 0;
  for (int b = 0; b < s->nbodies; b++)
    if (isfinite(rad[b]))
      sum += rad[b], n++;
  for (int b = 0; b < s->nbodies; b++)
    if (!isfinite(rad[b]) || rad[b] <= 0)
      rad[b] = n ? sum / n : 1;
}

int cm__fields_write_dump(cm_context_t *ctx, FILE *out, const cm_scene_t *s,
                          const cm_report_t *r, const cm__fields_t *f) {
  /* ---- allocate ---- */
  int nb = s->nbodies, nmov = 0;
  double *rad = malloc(sizeof(double) * ((size_t)nb + 1));
  double *cmax = malloc(sizeof(double) * ((size_t)nb + 1));
  if (!rad || !cmax) {
    free(rad), free(cmax);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  cm__fields_radii(s, rad);
  /* ---- box of the moving bodies ---- */
  double lo[3] = {INFINITY, INFINITY, INFINITY};
  double hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int b = 0; b < nb; b++) {
    if (s->bodies[b].fixed)
      continue;
    nmov++;
    for (int i = 0; i < 3; i++) {
      double x = i < s->dim ? s->bodies[b].position[i] : 0;
      double rr = i < s->dim ? rad[b] : 0.5;
      lo[i] = fmin(lo[i], x - rr), hi[i] = fmax(hi[i], x + rr);
    }
  }
  /* ---- one frame per mode ---- */
  int nm = f->nmodes > 0 ? f->nmodes : 1;
  for (int m = 0; m < nm; m++) {
    const double *e = f->nmodes ? f->share + (size_t)m * f->nc : NULL;
    for (int b = 0; b < nb; b++)
      cmax[b] = 0;
    for (int c = 0; e && c < s->ncontacts; c++) {
      int a = s->contacts[c].a, bb = s->contacts[c].b;
      if (a >= 0)
        cmax[a] = fmax(cmax[a], e[c]);
      if (bb >= 0)
        cmax[bb] = fmax(cmax[bb], e[c]);
    }
    fprintf(out,
            "ITEM: TIMESTEP\n%d\nITEM: NUMBER OF ATOMS\n%d\n"
            "ITEM: BOX BOUNDS ff ff ff\n",
            m + 1, nmov);
    for (int i = 0; i < 3; i++)
      fprintf(out, "%.17g %.17g\n", nmov ? lo[i] : 0, nmov ? hi[i] : 1);
    /* LAMMPS' prefixes (c_ compute, v_ variable): OVITO and ASE keep such
     * columns as named per-particle properties */
    fputs("ITEM: ATOMS id type x y z radius c_ke_share c_max_contact_share "
          "c_disp[1] c_disp[2] c_disp[3] v_omega\n",
          out);
    double omega = m < r->nmodes ? r->modes[m].omega : 0;
    for (int b = 0; b < nb; b++) {
      if (s->bodies[b].fixed)
        continue;
      const double *x = s->bodies[b].position;
      const double *d =
          f->nmodes ? f->disp + ((size_t)m * f->nb + b) * 3 : NULL;
      double ke = f->nmodes && f->nb ? f->kinetic[(size_t)m * f->nb + b] : 0;
      fprintf(out,
              "%d 1 %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g "
              "%.17g %.17g\n",
              b + 1, x[0], x[1], s->dim == 3 ? x[2] : 0.0, rad[b], ke, cmax[b],
              d ? d[0] : 0.0, d ? d[1] : 0.0, d ? d[2] : 0.0, omega);
    }
  }
  free(rad), free(cmax);
  return ferror(out) ? CM__ERR(ctx, CM_IO, NULL, "write error") : CM_OK;
}
