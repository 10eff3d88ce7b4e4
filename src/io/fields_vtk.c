/* fields_vtk.c: the contacts of a scene as VTK legacy polydata with the top
 * modes' shares (fields_io.h), for ParaView. Not for scenes themselves. */
#include "internal.h"
#include "io/fields_io.h"

#include <math.h>
#include <stdlib.h>

/* Point index of side q of contact c: body a's or b's centre, or the
 * contact point (after the bodies) when that side is fixed or the world,
 * or when the contact touches b's image across a periodic boundary (b's
 * centre is then a box away). */
static int cm__vtk_end(const cm_scene_t *s, int c, int q) {
  int b = q ? s->contacts[c].b : s->contacts[c].a;
  return b < 0 || s->bodies[b].fixed ||
                 (q && cm__contact_imaged(s, &s->contacts[c]))
             ? s->nbodies + c
             : b;
}

static void cm__vtk_scalars(FILE *out, const char *name, int n,
                            const double *v) {
  fprintf(out, "SCALARS %s double 1\nLOOKUP_TABLE default\n", name);
  for (int i = 0; i < n; i++)
    fprintf(out, "%.17g\n", v ? v[i] : 0.0);
}

int cm__fields_write_vtk(cm_context_t *ctx, FILE *out, const cm_scene_t *s,
                         const cm_report_t *r, const cm__fields_t *f) {
  int nb = s->nbodies, nc = s->ncontacts, np = nb + nc;
  /* ---- points and lines ---- */
  fprintf(out,
          "# vtk DataFile Version 3.0\ncmodes contacts: %d, omega_max "
          "%.17g rad/s\nASCII\nDATASET POLYDATA\nPOINTS %d double\n",
          nc, r->omega_max, np);
  for (int b = 0; b < nb; b++) {
    const double *x = s->bodies[b].position;
    fprintf(out, "%.17g %.17g %.17g\n", x[0], x[1], s->dim == 3 ? x[2] : 0.0);
  }
  for (int c = 0; c < nc; c++) {
    const double *x = s->contacts[c].point;
    fprintf(out, "%.17g %.17g %.17g\n", x[0], x[1], s->dim == 3 ? x[2] : 0.0);
  }
  fprintf(out, "LINES %d %d\n", nc, 3 * nc);
  for (int c = 0; c < nc; c++)
    fprintf(out, "2 %d %d\n", cm__vtk_end(s, c, 0), cm__vtk_end(s, c, 1));
  /* ---- cell data: one value per contact ---- */
  double *k = malloc(sizeof(double) * ((size_t)nc + 1));
  double *comp = malloc(sizeof(double) * ((size_t)nc + 1));
  double *pt = calloc((size_t)np + 1, sizeof(double));
  if (!k || !comp || !pt) {
    free(k), free(comp), free(pt);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  for (int c = 0; c < nc; c++) {
    k[c] = s->contacts[c].stiffness;
    comp[c] = f->comp ? f->comp[c] : 0;
  }
  fprintf(out, "CELL_DATA %d\n", nc);
  char name[64];
  for (int m = 0; m < f->nmodes; m++) {
    snprintf(name, sizeof name, "share_mode%d", m + 1);
    cm__vtk_scalars(out, name, nc, f->share + (size_t)m * nc);
  }
  cm__vtk_scalars(out, "pc_omega", nc, f->pc_omega);
  cm__vtk_scalars(out, "stiffness", nc, k);
  cm__vtk_scalars(out, "component", nc, comp);
  /* ---- point data: bodies' kinetic shares and displacements ---- */
  fprintf(out, "POINT_DATA %d\n", np);
  for (int m = 0; m < f->nmodes; m++) {
    for (int b = 0; b < nb; b++)
      pt[b] = f->nb ? f->kinetic[(size_t)m * f->nb + b] : 0;
    snprintf(name, sizeof name, "kinetic_mode%d", m + 1);
    cm__vtk_scalars(out, name, np, pt);
  }
  for (int m = 0; m < f->nmodes; m++) {
    fprintf(out, "VECTORS disp_mode%d double\n", m + 1);
    for (int p = 0; p < np; p++) {
      const double *d =
          p < nb && f->nb ? f->disp + ((size_t)m * f->nb + p) * 3 : NULL;
      fprintf(out, "%.17g %.17g %.17g\n", d ? d[0] : 0.0, d ? d[1] : 0.0,
              d ? d[2] : 0.0);
    }
  }
  free(k), free(comp), free(pt);
  return ferror(out) ? CM__ERR(ctx, CM_IO, NULL, "write error") : CM_OK;
}
