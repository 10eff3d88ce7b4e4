/* analysis.c: the analysis object (cm_analysis_*, include/cmodes.h): one
 * system, the options, and the results of one run of the pipeline
 * (analyze.c's driver through cm__analyze_system), kept so front ends
 * (cmodes verify and compare, the server) read the report and the modes'
 * shapes without running the pipeline again. No numerics of its own. */
#include "analyze/analyze_internal.h"
#include "analyze/vectors_internal.h"

#include <stdlib.h>
#include <string.h>

struct cm_analysis {
  const cm_scene_t *scene; /* borrowed, may be NULL */
  const cm_system_t *sys;  /* borrowed or == owned */
  cm_system_t *owned;      /* assembled by create from the scene */
  cm_options_t opts;       /* a copy (warm_start borrowed) */
  cm_report_t *report;     /* of the last solve, NULL before */
  cm_vectors_t *vectors;   /* when solved with CM_ANALYSIS_VECTORS */
  double *omega;           /* omega of each column of vectors */
};

int cm_analysis_create(cm_context_t *ctx, const cm_scene_t *scene,
                       const cm_system_t *sys, const cm_options_t *opts,
                       cm_analysis_t **out) {
  if (!out)
    return CM__ERR(ctx, CM_USAGE, "out", "cm_analysis_create: out is NULL");
  *out = NULL;
  if (!scene && !sys)
    return CM__ERR(ctx, CM_USAGE, "scene",
                   "cm_analysis_create: give a scene, a system or both");
  cm_options_t def;
  if (!opts) {
    cm_options_init(&def);
    opts = &def;
  }
  int st = cm_options_validate(ctx, opts);
  if (st)
    return st;
  cm_analysis_t *a = calloc(1, sizeof *a);
  if (!a)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (analysis)");
  a->scene = scene, a->opts = *opts;
  if (!sys) {
    st = cm_system_assemble(ctx, scene, &a->owned);
    if (st) {
      free(a);
      return st;
    }
    sys = a->owned;
  }
  a->sys = sys;
  *out = a;
  return CM_OK;
}

static void cm__analysis_clear(cm_analysis_t *a) {
  cm_report_destroy(&a->report);
  cm_vectors_destroy(&a->vectors);
  free(a->omega);
  a->omega = NULL;
}

int cm_analysis_solve(cm_context_t *ctx, cm_analysis_t *a, int flags) {
  if (!a)
    return CM__ERR(ctx, CM_USAGE, "analysis",
                   "cm_analysis_solve: the analysis is NULL");
  if (flags & ~CM_ANALYSIS_VECTORS)
    return CM__ERR(ctx, CM_USAGE, "flags",
                   "cm_analysis_solve: unknown flags 0x%x (known: "
                   "CM_ANALYSIS_VECTORS)",
                   (unsigned)(flags & ~CM_ANALYSIS_VECTORS));
  cm__analysis_clear(a);
  int want = flags & CM_ANALYSIS_VECTORS;
  int st = cm__analyze_system(ctx, a->sys, a->scene, &a->opts, &a->report,
                              want ? &a->vectors : NULL);
  if (st < 0)
    return st;
  if (a->vectors) {
    int nm = a->vectors->nmodes;
    a->omega = malloc(((size_t)nm + 1) * sizeof *a->omega);
    if (!a->omega) {
      cm__analysis_clear(a);
      return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (analysis)");
    }
    for (int p = 0; p < nm; p++)
      a->omega[p] = a->report->modes[p].omega;
  }
  return st;
}

const cm_system_t *cm_analysis_system(const cm_analysis_t *a) {
  return a ? a->sys : NULL;
}

const cm_report_t *cm_analysis_report(const cm_analysis_t *a) {
  return a ? a->report : NULL;
}

cm_report_t *cm_analysis_take_report(cm_analysis_t *a) {
  if (!a)
    return NULL;
  cm_report_t *r = a->report;
  a->report = NULL;
  return r;
}

const cm_vectors_t *cm_analysis_vectors(const cm_analysis_t *a) {
  return a ? a->vectors : NULL;
}

int cm_analysis_mode(cm_context_t *ctx, const cm_analysis_t *a, int k,
                     double *omega, const double **phi, const double **z,
                     const double **xi) {
  if (!a)
    return CM__ERR(ctx, CM_USAGE, "analysis",
                   "cm_analysis_mode: the analysis is NULL");
  const cm_vectors_t *v = a->vectors;
  if (!v)
    return CM__ERR(ctx, CM_USAGE, "analysis",
                   "cm_analysis_mode: no mode shapes: solve with "
                   "CM_ANALYSIS_VECTORS first");
  if (v->nmodes == 0)
    return CM__ERR(ctx, CM_USAGE, "k",
                   "cm_analysis_mode: mode %d does not exist: the report "
                   "has no modes",
                   k);
  if (k < 0 || k >= v->nmodes)
    return CM__ERR(ctx, CM_USAGE, "k",
                   "cm_analysis_mode: mode %d does not exist: the report has "
                   "%d mode%s (0 is the highest); ask for 0..%d",
                   k, v->nmodes, v->nmodes == 1 ? "" : "s", v->nmodes - 1);
  if (omega)
    *omega = a->omega[k];
  if (phi)
    *phi = v->phi + (size_t)k * (size_t)v->ndofs;
  if (z)
    *z = v->z + (size_t)k * (size_t)v->nrows;
  if (xi)
    *xi = v->xi + (size_t)k * (size_t)v->nrows;
  return CM_OK;
}

void cm_analysis_destroy(cm_analysis_t **ap) {
  if (!ap || !*ap)
    return;
  cm_analysis_t *a = *ap;
  cm__analysis_clear(a);
  cm_system_destroy(&a->owned);
  free(a);
  *ap = NULL;
}
