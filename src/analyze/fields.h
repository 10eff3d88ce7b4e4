/* fields.h: full per-contact and per-body fields of the top modes (every
 * contact's energy share, every body's kinetic share and displacement, the
 * per-contact frequencies, every component's omega_max), for pictures and
 * exports. The report keeps only the top few shares; these arrays are the
 * whole scene. Filled by the pipeline (analyze.c) when asked. */
#ifndef CM_ANALYZE_FIELDS_H
#define CM_ANALYZE_FIELDS_H

#include "cmodes.h"

typedef struct cm__fields {
  int want;           /* in: modes to keep (<= the report's modes) */
  int nmodes;         /* out: modes kept */
  int dim;            /* 2, 3, or 0 for a system given as matrices */
  int nc;             /* scene contacts */
  int nb;             /* scene bodies (0 for matrices) */
  double *share;      /* nmodes x nc: strain-energy share e_c of each mode
                         (its rows summed; 0 off the mode's component) */
  double *kinetic;    /* nmodes x nb: kinetic-energy share of each body */
  double *disp;       /* nmodes x nb x 3: translation of each body in the
                         mode, scaled so the largest |.| is 1 */
  double *pc_omega;   /* nc: per-contact frequency sqrt(max_r S_rr) over
                         the contact's rows, rad/s (NaN when unknown) */
  int *comp;          /* nc: component of each contact */
  int ncomp;          /* components */
  double *comp_omega; /* ncomp: omega_max of every component, rad/s */
} cm__fields_t;

/* cm_analyze / cm_analyze_system that also fill f (f->want set by the
 * caller; f may be NULL). The arrays are owned by f: cm__fields_free. */
int cm__analyze_fields(cm_context_t *ctx, const cm_scene_t *scene,
                       const cm_options_t *opts, cm_report_t **out,
                       cm__fields_t *f);
int cm__analyze_system_fields(cm_context_t *ctx, const cm_system_t *sys,
                              const cm_scene_t *scene, const cm_options_t *opts,
                              cm_report_t **out, cm__fields_t *f);
/* Both: the fields and the mode shapes (vectors may be NULL: none), as
 * cm_analyze_vectors (cmodes-mpi --matrices, src/mpi/matrices.c). */
int cm__analyze_system_both(cm_context_t *ctx, const cm_system_t *sys,
                            const cm_scene_t *scene, const cm_options_t *opts,
                            cm_report_t **out, cm_vectors_t **vectors,
                            cm__fields_t *f);
/* Frees the arrays and zeroes the outputs; keeps want. Accepts NULL. */
void cm__fields_free(cm__fields_t *f);

#ifdef CM_SPECTRUM_INTERNAL_H
/* The pipeline's hook: fills f from the solved components (eig), the row
 * diagonals S_rr (diag, size nc) and the finished modes of r. Returns
 * CM_OK or CM_NOMEM. */
int cm__fields_fill(cm__fields_t *f, cm_operator_t *op, const cm_system_t *sys,
                    const cm_scene_t *scene, const cm__eig_t *eig,
                    const double *diag, const cm_report_t *r);
#endif

#endif
