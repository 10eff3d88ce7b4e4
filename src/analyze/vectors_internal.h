/* vectors_internal.h: the mode shapes of cm_analyze_vectors (vectors.c),
 * filled by the pipeline driver (analyze.c) from its eigen-solves. */
#ifndef CM_VECTORS_INTERNAL_H
#define CM_VECTORS_INTERNAL_H

#include "analyze/analyze_internal.h"

/* The pipeline of cm_analyze_system; with vectors != NULL it also fills
 * *vectors (owned by the caller) with the report's mode shapes. */
int cm__analyze_system(cm_context_t *ctx, const cm_system_t *sys,
                       const cm_scene_t *scene, const cm_options_t *opts,
                       cm_report_t **out, cm_vectors_t **vectors);
/* The shapes of r's modes from the eigen-solves eig of op. */
int cm__mode_vectors(cm_context_t *ctx, cm_operator_t *op,
                     const cm_system_t *sys, const cm__eig_t *eig,
                     const cm_report_t *r, cm_vectors_t **out);

#endif
