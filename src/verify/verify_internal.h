/* verify_internal.h: the pieces of the verification harness shared by the
 * files of src/verify/ and by tests/test_verify.c: the simulation model
 * (own frozen J, mass blocks, body-fixed contact geometry), the equilibrium,
 * the integrators and the frequency estimator. Not installed; the public
 * surface is include/cmodes/verify.h.
 *
 * Units: SI as in the docs (m, kg, s, N, rad/s). Dofs per moving body:
 * 2D (x, y, theta), 3D (x, y, z, small rotation vector) about the COM in the
 * world frame, the same coordinates as the core's system. */
#ifndef CM_VERIFY_INTERNAL_H
#define CM_VERIFY_INTERNAL_H

#include "internal.h"

/* ---- model ----------------------------------------------------------------
 */

typedef struct cm__vmodel {
  int dim;        /* 2 or 3 */
  int d;          /* dofs per moving body: 3 (2D) or 6 (3D) */
  int nbodies;    /* bodies of the scene */
  int nmov;       /* moving bodies */
  int n;          /* dofs: d * nmov */
  int nc;         /* contacts */
  int nr;         /* rows of J: each contact's normal row, then its tangent
                     rows (2 in 3D, 1 in 2D) when it has k_t > 0 or c_t > 0 */
  int tangential; /* 1: some contact has tangent rows */
  int dashpots;   /* 1: some row has a dashpot */
  int *body_dof;  /* size nbodies: first dof of the body, -1 fixed */
  int *dof_body;  /* size nmov: scene body of each moving body */
  double *mass;   /* size nmov, kg */
  double *Iw;     /* size 9 nmov: world inertia at the reference, row-major;
                     2D: diag(I, I, I) so the 3D code path stays planar */
  double *Iwinv;  /* size 9 nmov: its inverse */
  double *x0;     /* size 3 nbodies: COM of every body at the reference
                     (fixed bodies too; 2D: z = 0) */
  /* contacts: point on body a against a plane fixed on body b */
  int *ca, *cb; /* size nc: bodies (CM_WORLD allowed for b or a) */
  double *ra;   /* size 3 nc: point - COM of a (world frame, reference) */
  double *rb;   /* size 3 nc: point - COM of b (world origin if world) */
  double *nrm;  /* size 3 nc: unit normal from b to a, reference */
  double *k;    /* size nc: normal stiffness k_n, N/m */
  /* rows (the harness' own tangent basis, the convention of docs/math.md:
   * 2D t = (-n_y, n_x); 3D e = world axis of the smallest |n_i|, t1 =
   * normalize(e - (e.n) n), t2 = n x t1) */
  int *crow;            /* size nc+1: first row of each contact */
  int *rc;              /* size nr: contact of each row */
  unsigned char *rkind; /* size nr: 0 normal, 1 and 2 tangents */
  double *dir;          /* size 3 nr: row direction at the reference */
  double *rk;           /* size nr: row spring k_n or k_t, N/m (may be 0) */
  double *rg;           /* size nr: row dashpot c_n or c_t, N s/m */
  double *f0;           /* size nr: tangent rows: the sticking force at the
                           equilibrium along +dir on a, N (0 for normal rows,
                           whose preload is k delta) */
  char *sph;            /* size nc: bit 0 side a is a sphere (normal through its
                           COM), bit 1 side b; the nonlinear model then keeps the
                           contact on the line of centres */
  double *Ra, *Rb;      /* size nc: those spheres' radii at the contact, m */
  /* frozen J in CSR, nr x n: d (gap, tangential slip) / d q at the
   * reference; row [d, r_a x d] on a, -[d, r_b x d] on b */
  int *Jp;    /* size nr+1 */
  int *Jj;    /* size Jp[nc] */
  double *Jx; /* size Jp[nc] */
  /* preload (filled by the equilibrium) */
  double *delta;  /* size nc: overlap at equilibrium, m (> 0 compressed) */
  double *delta0; /* size nc: overlap at q = 0 (nonlinear model), m */
  double *fext;   /* size n: constant external generalized load, N / N m */
  double *qeq;    /* size n: equilibrium displacement of the linear model */
  char *bil;      /* size nc: 1 = unloaded contact kept as a bilateral
                     joint (never opens), only with bilateral_unloaded */
  int bilateral_unloaded; /* 1: unloaded contacts become joints, not errors */
  int gravity;            /* 1: fext is gravity on every moving body */
  double g[3];            /* gravity used, m/s^2 */
} cm__vmodel_t;

/* Builds the model of a validated scene; cannot use the core. *out is owned
 * by the caller (cm__vmodel_destroy). Errors: CM_INVALID_SCENE, CM_NOMEM. */
int cm__vmodel_build(cm_context_t *ctx, const cm_scene_t *scene,
                     cm__vmodel_t **out);
void cm__vmodel_destroy(cm__vmodel_t **m);

/* xi = J q (nr), f = J^T y (n), a = M^-1 f (n). Cannot fail. */
void cm__vmodel_J(const cm__vmodel_t *m, const double *q, double *xi);
void cm__vmodel_JT(const cm__vmodel_t *m, const double *y, double *f);
void cm__vmodel_minv(const cm__vmodel_t *m, const double *f, double *a);
void cm__vmodel_mul_M(const cm__vmodel_t *m, const double *v, double *f);

/* ---- equilibrium ------------------------------------------------------------
 */

/* Gravity: solves J^T K J dq = f_gravity (CHOLMOD, regularised, refined)
 * and sets delta = -(J dq), delta0 = 0, fext = gravity, qeq = dq. Errors:
 * CM_INVALID_SCENE with the body that has no support ("no equilibrium") or
 * the contacts that are in tension or unloaded (ctx->path = contacts[i]). */
int cm__vequil_gravity(cm_context_t *ctx, cm__vmodel_t *m, const double *g,
                       const cm_scene_t *scene);
/* Given contact forces (N, > 0 compressive, size nc): delta = delta0 = f/k,
 * fext = -J^T f, qeq = 0. Errors: CM_USAGE for a force <= 0 or not finite. */
int cm__vequil_preload(cm_context_t *ctx, cm__vmodel_t *m, const double *f,
                       const cm_scene_t *scene);

/* ---- rigid-body state (nonlinear model) ------------------------------------
 */

typedef struct cm__vstate {
  double *X; /* size 3 nmov: COM displacement from the reference */
  double *Q; /* size 4 nmov: rotation from the reference (w, x, y, z) */
  double *V; /* size 3 nmov: COM velocity */
  double *L; /* size 3 nmov: angular momentum, world frame */
} cm__vstate_t;

int cm__vstate_alloc(cm_context_t *ctx, const cm__vmodel_t *m, cm__vstate_t *s);
void cm__vstate_free(cm__vstate_t *s);
/* Sets the state to displacement q, velocity qd (generalized, size n, either
 * may be NULL = 0) applied to base (NULL = reference). Cannot fail. */
void cm__vstate_set(const cm__vmodel_t *m, cm__vstate_t *s,
                    const cm__vstate_t *base, const double *q,
                    const double *qd);
/* Nonlinear row coordinates (nr): normal rows the gap g_c = n_b . (p_a -
 * p_b) - delta0_c, tangent rows the slip s = t_b . (pm_a - pm_b) of the
 * body-fixed material points (t rotating with b). */
void cm__vstate_gaps(const cm__vmodel_t *m, const cm__vstate_t *s, double *gap);
/* Generalized force (F, torque about the current COM, world) of the contacts
 * plus fext: springs (normal f = -k g, bilateral, or k max(0, -g) when
 * unilateral; tangential -k_t s) and dashpots (-c (d . v_rel) with the
 * state's velocities), all off on an open contact; gap (nr) and open (nc)
 * may be NULL. Returns the number of open contacts when unilateral. */
int cm__vstate_force(const cm__vmodel_t *m, const cm__vstate_t *s,
                     int unilateral, double *F, double *gap, char *open);
/* omega = R Iw^-1 R^T L of moving body j; Q <- exp(h omega) Q. */
void cm__vstate_omega(const cm__vmodel_t *m, const double *Q, int j,
                      const double *L, double *om);
void cm__vstate_rotate(double *Q, const double *om, double h);
/* Nonlinear equilibrium from qeq by fixed-point iteration with the frozen
 * stiffness (gravity case); base holds the result. */
int cm__vequil_nonlinear(cm_context_t *ctx, const cm__vmodel_t *m,
                         cm__vstate_t *base);

/* ---- integration -------------------------------------------------------- */

enum { CM__VLIN = 0, CM__VUNI = 1, CM__VNL = 2, CM__VFULL = 3 };
enum { CM__VCD = 0, CM__VRK4 = 1 };

typedef struct cm__vrun {
  /* in */
  int model;          /* CM__VLIN, CM__VUNI, CM__VNL, CM__VFULL */
  int integ;          /* CM__VCD or CM__VRK4 */
  double h;           /* step, s */
  long nsteps;        /* steps */
  const double *q0;   /* initial displacement from equilibrium (n) */
  const double *w;    /* signal weights over rows (nr) or NULL */
  double *signal;     /* out: w . xi at steps 0..nsteps, or NULL */
  double *energy;     /* out: energy at steps 0..nsteps (linear), or NULL */
  double stop_growth; /* > 0: stop when E / E0 exceeds it (linear) */
  /* out */
  long steps_done; /* steps integrated */
  int opened;      /* contacts that opened at least once */
  long openings;   /* closed -> open transitions */
  int max_open;    /* most contacts open at one time */
  double growth;   /* max E / E0 (linear models) */
  int blowup;      /* 1 if stopped by stop_growth or non-finite */
  int decayed;     /* 1 if stopped because E fell below 1e-150 E0 (damped
                      trials: nothing is left that could grow) */
  double emin;     /* running minimum of E (damped trials measure growth
                      from it) */
} cm__vrun_t;

/* Integrates one run; base is the nonlinear equilibrium (NULL for the
 * frozen-J models). Errors: CM_NOMEM. */
int cm__vintegrate(cm_context_t *ctx, const cm__vmodel_t *m,
                   const cm__vstate_t *base, cm__vrun_t *run);

/* ---- predictions and stability ---------------------------------------------
 */

typedef struct cm__vpred {
  double omega_max, pc_omega_max; /* rad/s */
  double h_cd, h_rk4;             /* predicted critical steps, s (CD:
                                     the damped limit with dashpots) */
  double h_cd_undamped;           /* the CD step without the dashpots, s */
  int nmodes;                     /* modes with vectors */
  int *index;                     /* 1-based mode numbers, size nmodes */
  double *omega;                  /* size nmodes */
  double *zeta;                   /* effective damping ratios, size nmodes */
  double *z;                      /* nmodes x nr, the harness' row order */
} cm__vpred_t;

/* Bisects the linear model's stable step for integ from a bracket around
 * p's prediction (checked and widened), then tries the per-contact step. */
int cm__vstability(cm_context_t *ctx, const cm__vmodel_t *m,
                   const cm_verify_options_t *o, const cm__vpred_t *p,
                   int integ, cm_verify_stability_t *s);

/* ---- measurement ------------------------------------------------------------
 */

/* Angle per sample theta (rad) of the dominant oscillation of s[0..n):
 * zero-crossing estimate refined by a least-squares fit of offset plus a
 * (decaying) sinusoid over whole periods. Returns 0, or CM_NUMERIC when
 * fewer than 3 upward crossings exist. periods gets the periods used. */
int cm__vmeasure(const double *s, long n, double *theta, double *periods);
/* The same, also giving the decay sigma per sample (>= 0 decays). */
int cm__vmeasure_decay(const double *s, long n, double *theta, double *sigma,
                       double *periods);
/* The estimator's own error on a pure sampled cosine of angle theta per
 * sample, n samples: |estimate - theta| / theta. */
double cm__vmeasure_self_error(double theta, long n);

/* Discrete angle per step of a mode omega at step h, and its inverse
 * (the shift correction). NAN when outside the stable range. */
double cm__vshift(int integ, double omega, double h);
double cm__vunshift(int integ, double theta, double h);
/* Damped inversion: the mode (omega, zeta) whose discrete eigenvalue
 * mu = e^{-sigma + i theta} per step the integrator produces at step h
 * (central difference with the dashpot on the half-step velocity:
 * omega = |1 - mu| / h, 2 zeta omega h = 1 - |mu|^2; RK4: the root of
 * g(h lambda) = mu near i theta). Returns 0, or -1 (then NAN). */
int cm__vunshift_damped(int integ, double theta, double sigma, double h,
                        double *omega, double *zeta);

#endif
