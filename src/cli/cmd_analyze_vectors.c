/* cmd_analyze_vectors.c: `cmodes analyze --vectors FILE`: the mode shapes
 * of the report's modes (cm_analyze_vectors) as JSON, for programs (docs/
 * cli.md). Not for the report itself (cmd_analyze.c). */
#include "cli.h"
#include "cmodes.h"

#include <jansson.h>
#include <stdlib.h>

/* [[mode 0 ...], [mode 1 ...], ...] of a column-major rows x nmodes
 * array. */
static json_t *cm__vec_columns(const double *a, int rows, int nmodes) {
  json_t *out = json_array();
  for (int p = 0; out && p < nmodes; p++) {
    json_t *col = json_array();
    for (int i = 0; col && i < rows; i++)
      json_array_append_new(col, json_real(a[(size_t)p * rows + i]));
    json_array_append_new(out, col);
  }
  return out;
}

static json_t *cm__vec_ints(const int *a, int n) {
  json_t *out = json_array();
  for (int i = 0; out && i < n; i++)
    json_array_append_new(out, json_integer(a[i]));
  return out;
}

/* A name per row (the scene's contact names, or the system's row names),
 * or null when nothing is named. */
static json_t *cm__vec_names(const cm_vectors_t *v, const cm_system_t *sys,
                             const cm_scene_t *scene) {
  if (!scene && !sys->row_names)
    return json_null();
  json_t *out = json_array();
  for (int r = 0; out && r < v->nrows; r++) {
    const char *nm = scene ? cm_scene_contact_name(scene, v->row_contact[r])
                           : sys->row_names[v->row_contact[r]];
    json_array_append_new(out, nm ? json_string(nm) : json_null());
  }
  return out;
}

int cm__write_vectors_json(const char *path, const cm_report_t *rep,
                           const cm_vectors_t *v, const cm_system_t *sys,
                           const cm_scene_t *scene) {
  json_t *omega = json_array();
  for (int p = 0; p < v->nmodes; p++)
    json_array_append_new(omega, json_real(rep->modes[p].omega));
  json_t *cols = json_null();
  if (!scene && sys->col_names) { /* col_dof is the dof's index in M */
    cols = json_array();
    for (int j = 0; j < v->ndofs; j++) {
      const char *nm = sys->col_names[v->col_dof[j]];
      json_array_append_new(cols, nm ? json_string(nm) : json_null());
    }
  }
  json_t *o =
      json_pack("{s:s,s:i,s:i,s:i,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
                "format", "cmodes-vectors", "version", 1, "nmodes", v->nmodes,
                "nrows", v->nrows, "ndofs", v->ndofs, "omega", omega,
                "row_contact", cm__vec_ints(v->row_contact, v->nrows),
                "row_kind", cm__vec_ints(v->row_kind, v->nrows), "row_names",
                cm__vec_names(v, sys, scene), "col_body",
                cm__vec_ints(v->col_body, v->ndofs), "col_dof",
                cm__vec_ints(v->col_dof, v->ndofs), "col_names", cols, "z",
                cm__vec_columns(v->z, v->nrows, v->nmodes), "xi",
                cm__vec_columns(v->xi, v->nrows, v->nmodes), "phi",
                cm__vec_columns(v->phi, v->ndofs, v->nmodes));
  if (!o)
    return CM_NOMEM;
  int bad = json_dump_file(o, path, JSON_COMPACT | JSON_REAL_PRECISION(17));
  json_decref(o);
  return bad ? CM_IO : CM_OK;
}
