/* analyze_internal.h: what the pipeline driver (analyze.c), its options
 * (options.c) and the damped-step search (damped.c) share. */
#ifndef CM_ANALYZE_INTERNAL_H
#define CM_ANALYZE_INTERNAL_H

#include "analyze/options_table.h"
#include "spectrum/spectrum_internal.h"

/* Eigen-solves of every component of op into eig[0 .. ncomp) (small ones
 * densely and in parallel, large ones by Lanczos, opts->warm_start over
 * scene rows). CM_OK, CM_NOT_CONVERGED or an error. */
int cm__solve_all(cm_context_t *ctx, cm_operator_t *op, const cm_system_t *sys,
                  const cm_options_t *opts, cm__eig_t *eig);
/* Scene row of every system row (malloc'd, caller frees; NULL: no memory):
 * contacts in scene order, each with its normal row, then its tangents. */
int *cm__scene_rows(const cm_system_t *sys);
/* Relative accuracy delta of the mass blocks of a near-singular inertia
 * (CM_INERTIA_DELTA_PER_COND x sys->inertia_cond), 0 when at most 1e-12:
 * every Gershgorin bound is raised by the factor 1 + delta (docs/math.md,
 * "Structural zeros and dropped dofs"). */
double cm__inertia_delta(const cm_system_t *sys);
/* The report's time steps from r's omega_max, omega_lower and bounds and
 * the options (also used by cmodes-mpi, src/mpi/). Cannot fail. */
void cm__report_steps(const cm_options_t *o, cm_report_t *r);
/* With dashpots: appends the dashpot warning (LAMMPS' second run) to
 * r->warning (also used by cmodes-mpi). CM_OK or CM_NOMEM. */
int cm__dashpot_warning(cm_report_t *r);
/* Appends w to r->warning ("; " between); CM_NOMEM when out of memory. */
int cm__report_warn(cm_report_t *r, const char *w);

/* A contact, body or dof picked for a mode's list: its index and its
 * energy share. */
typedef struct {
  int index;    /* scene index */
  double share; /* energy share */
} cm__pick_t;

#define CM__PICK_CHUNK 65536 /* cm__pick_groups' fixed chunk */

/* Keeps the top T of the groups of [0, n) in pick[0 .. *np) (which may
 * hold picks already): share descending, then index ascending.
 * Consecutive entries with the same key[i] form a group, named by its
 * key, its share the sum of v[i]^2 / div in order (div 1: the squares
 * themselves, exactly). CM_OK or CM_NOMEM. */
int cm__pick_groups(cm__pick_t *pick, int *np, int T, const int *key,
                    const double *v, double div, int n, int threads);

/* A mode or component in the report's order: eigenvalue descending, values
 * within 1e-13 (relative) of each other by (component, pair), so the order
 * does not hang on last bits that differ between CPUs. */
typedef struct {
  double lambda; /* eigenvalue */
  int comp, idx; /* component and pair within it */
} cm__cand_t;

/* Sorts n elements of size bytes that each begin with a cm__cand_t
 * (cm__analyze_system's modes and components, cmodes-mpi's records). */
void cm__cand_sort(void *base, size_t n, size_t size);

/* r->omega_max (the largest listed omega), r->comp_max (modes[0]'s
 * component) and r->pc_ratio, from r->modes and r->pc_omega_max. */
void cm__report_top(cm_report_t *r);
/* A matrix system's component name (rows [r0, r0 + m), columns [c0, c0 +
 * n)) as the report gives it; malloc'd, NULL when out of memory (also
 * cmodes-mpi's, src/mpi/matrices.c). */
char *cm__matrix_comp_name(const cm_system_t *sys, int r0, int m, int c0,
                           int n);
/* The report's model label (static string). */
const char *cm__model_label(int tangential, int dashpots);
/* With dashpots in the scene: the coupled damped central-difference limit
 * and its certified bound into r->central_difference (the undamped ones
 * move to r->cd_undamped). Cannot be called without r's modes. deadline:
 * the end of the solve budget (a cm__now() time, 0 = none); past it the
 * results so far are kept, r->warning says so and the return is
 * CM_NOT_CONVERGED with the message in ctx. */
int cm__damped_step(cm_context_t *ctx, const cm_scene_t *scene,
                    const cm_options_t *opts, double deadline, cm_report_t *r);

#endif
