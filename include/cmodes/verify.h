/* cmodes/verify.h: verification by simulation (src/verify/). Included by
 * cmodes.h; do not include directly.
 *
 * Preloads the supports (gravity or given contact forces), perturbs the
 * equilibrium along predicted modes, integrates with central difference and
 * RK4 in three models (linear: frozen J, bilateral springs; unilateral:
 * frozen J, no tension; nonlinear: finite rotations, body-fixed contact
 * geometry), each with the scene's tangential sticking springs and normal
 * and tangential dashpots, measures the frequencies from the simulated gaps,
 * compares them with the predictions (after the integrators' known shifts),
 * and bisects the step at which the linear model's energy grows without
 * bound.
 * docs/verification.md describes the method. Units: SI (m, kg, s, rad/s). */
#ifndef CMODES_VERIFY_H
#define CMODES_VERIFY_H

#define CM_VERIFY_MAX_LIST 16

/* Models (bit flags for cm_verify_options_t.models). */
#define CM_VERIFY_LINEAR 1     /* J frozen, bilateral: numerical error only */
#define CM_VERIFY_UNILATERAL 2 /* J frozen, contacts open: + contact opening   \
                                */
#define CM_VERIFY_NONLINEAR 4  /* finite rotations, bilateral: + linearization \
                                */
#define CM_VERIFY_FULL 8       /* finite rotations and opening */
/* Integrators (bit flags for cm_verify_options_t.integrators). */
#define CM_VERIFY_CD 1  /* central difference (velocity Verlet) */
#define CM_VERIFY_RK4 2 /* classical Runge-Kutta 4 */

typedef struct cm_verify_options {
  int use_gravity;         /* 1: preload by gravity (default 0) */
  double gravity[3];       /* m/s^2; 2D uses [0..1] */
  const double *preload;   /* given contact forces, N > 0, size ncontacts,
                              or NULL (then preload_uniform or gravity) */
  double preload_uniform;  /* > 0: this force on every contact, N */
  int bilateral_unloaded;  /* 1: a contact without load (given preload 0,
                              or none at the gravity equilibrium) is kept
                              as a bilateral joint that never opens, and
                              left out of the smallest overlap; 0 (default):
                              it is an error */
  int nmodes;              /* top modes to perturb, default 2 */
  int mode;                /* >= 1: only this mode (1 = highest), 0 = top */
  const double *direction; /* user direction over the dofs of the moving
                              bodies (3 or 6 each, scene order), or NULL */
  int namplitudes;         /* entries in amplitudes */
  double amplitudes[CM_VERIFY_MAX_LIST]; /* max gap change as a fraction of
                               the smallest equilibrium overlap; default
                               0.01, 0.1, 0.5, 1.5 */
  int nsteps;                            /* entries in steps */
  double steps[CM_VERIFY_MAX_LIST];      /* fractions of each integrator's
                                    predicted critical step; default 0.05, 0.2,
                                    0.5 */
  int models;            /* CM_VERIFY_* flags, default linear|unilateral|
                            nonlinear */
  int integrators;       /* CM_VERIFY_CD | CM_VERIFY_RK4 (default both) */
  double periods;        /* simulated periods per run, default 40 */
  double tol;            /* relative error counted as agreement, 1e-4 */
  int stability;         /* 1: bisect the stable step (default 1) */
  int runs;              /* 1: frequency runs (default 1) */
  long bisect_steps;     /* steps per stability trial, default 5000 */
  double bisect_tol;     /* relative width of the bisection, 1e-4 */
  uint64_t seed;         /* random start of the stability trials */
  int progress;          /* 1: progress lines on stderr */
  cm_options_t analysis; /* options of the predicting analysis */
} cm_verify_options_t;

/* Defaults as documented above; cannot fail. */
CM_EXTERN void cm_verify_options_init(cm_verify_options_t *opts);

typedef struct cm_verify_run {
  int mode;             /* 1-based mode (0: user direction) */
  double amplitude;     /* fraction of the smallest overlap */
  double step_fraction; /* fraction of the integrator's critical step */
  double h_s;           /* step, s */
  int model;            /* one CM_VERIFY_* model flag */
  int integrator;       /* CM_VERIFY_CD or CM_VERIFY_RK4 */
  long nsteps;          /* steps simulated */
  double omega_pred;    /* predicted (core), rad/s */
  double omega_shifted; /* prediction seen through the integrator, rad/s */
  double omega_meas;    /* measured from the gaps, rad/s (NAN if none) */
  double omega_corr;    /* measured, integrator shift removed, rad/s (with
                           dashpots: the undamped omega of the measured
                           discrete eigenvalue e^{-sigma + i theta}) */
  double zeta_pred;     /* the mode's effective damping ratio (core) */
  double zeta_meas;     /* measured from the decay (dashpots; else 0) */
  double err_raw;       /* (omega_meas - omega_pred) / omega_pred */
  double err;           /* (omega_corr - omega_pred) / omega_pred */
  double err_vs_linear; /* (omega_meas - linear run's) / omega_pred */
  double meas_err;      /* estimator's own error on a pure sinusoid */
  double periods;       /* periods in the fit window */
  int opened;           /* contacts that opened at least once */
  long openings;        /* closed -> open transitions */
  int max_open;         /* most contacts open at one time */
  const char *verdict;  /* "agrees", "contact opening", "linearization",
                           "damping" (dashpots couple the modes: a linear
                           run departs), "numerical", "unmeasured" (static
                           string) */
} cm_verify_run_t;

typedef struct cm_verify_stability {
  int integrator;      /* CM_VERIFY_CD or CM_VERIFY_RK4 */
  double h_pred_s;     /* predicted critical step (core), s; central
                          difference with dashpots: the damped limit
                          (report central_difference.h_s); RK4: the
                          undamped 2 sqrt 2 / omega_max even with dashpots */
  double h_undamped_s; /* the same integrator's undamped step (core), s */
  double h_stable_s;   /* largest step found stable, s */
  double h_unstable_s; /* smallest step found unstable, s */
  double h_bisect_s;   /* their midpoint, s */
  double rel_err;      /* (h_bisect - h_pred) / h_pred */
  int trials;          /* simulations run */
  long trial_steps;    /* steps per trial */
  double h_pc_s;       /* step the per-contact estimate would allow, s */
  int pc_unstable;     /* 1 if that step blew up */
  long pc_steps;       /* steps until the energy grew 1e6x (or all) */
  double pc_growth;    /* max energy growth at that step */
} cm_verify_stability_t;

typedef struct cm_verify_result {
  int dim;                 /* 2 or 3 */
  int nbodies, ncontacts;  /* scene sizes */
  int nrows;               /* rows simulated: normals and tangents */
  int tangential;          /* 1: some contact has tangent rows */
  int dashpots;            /* 1: some row has a dashpot */
  int moving_bodies;       /* bodies simulated */
  const char *preload;     /* "gravity", "given" or "uniform" */
  double gravity[3];       /* as used */
  double min_overlap;      /* smallest equilibrium overlap, m */
  int min_overlap_contact; /* its contact */
  double max_overlap;      /* largest equilibrium overlap, m */
  int bilateral_contacts;  /* unloaded contacts kept as bilateral joints */
  double omega_max;        /* predicted largest frequency, rad/s */
  double pc_omega_max;     /* per-contact estimate, rad/s */
  int nmodes;              /* modes perturbed */
  double *mode_omega;      /* their predicted omega, size nmodes */
  int *mode_index;         /* their 1-based mode numbers, size nmodes */
  int nruns;               /* entries in runs */
  cm_verify_run_t *runs;
  int nstab; /* entries in stab */
  cm_verify_stability_t stab[2];
  double seconds; /* wall time */
} cm_verify_result_t;

/* Runs the verification. On CM_OK *out is owned by the caller
 * (cm_verify_result_destroy). Errors (ctx says what and where): CM_USAGE
 * (no preload given, a mode that does not exist, bad lists),
 * CM_INVALID_SCENE (no equilibrium, a contact in tension or unloaded),
 * CM_NOMEM, and the core's errors from the prediction. */
CM_EXTERN int cm_verify(cm_context_t *ctx, const cm_scene_t *scene,
                        const cm_verify_options_t *opts,
                        cm_verify_result_t **out);
CM_EXTERN void cm_verify_result_destroy(cm_verify_result_t **res);

/* Energy of the linear model against time at step h_s: energy[0..nsteps]
 * (caller-owned, nsteps + 1 entries), normalised by its initial value, from
 * the same seeded random start (opts->seed) as the stability trials;
 * entries after a blow-up (non-finite) are NAN. integrator: CM_VERIFY_CD or
 * CM_VERIFY_RK4. Errors: CM_USAGE (h_s <= 0, nsteps < 1), CM_INVALID_SCENE,
 * CM_NOMEM. */
CM_EXTERN int cm_verify_energy_trace(cm_context_t *ctx, const cm_scene_t *scene,
                                     const cm_verify_options_t *opts,
                                     int integrator, double h_s, long nsteps,
                                     double *energy);

/* JSON (malloc'd, caller frees; NULL on failure) and text table. */
CM_EXTERN char *cm_verify_to_json(const cm_verify_result_t *res, int flags);
CM_EXTERN int cm_verify_write_text(const cm_verify_result_t *res, FILE *out);

#endif
