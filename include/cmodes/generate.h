/* cmodes/generate.h: scene generators (pile, crystal, stack, fleet, bar).
 * Included by cmodes.h; do not include directly. Owned by the generate
 * module (src/generate/); the models are described in docs/generators.md.
 *
 * Every generator follows one pattern:
 *   cm_X_options_t o; cm_X_options_init(&o); o.count = ...;
 *   cm_scene_t *s; int st = cm_generate_X(ctx, &o, &s);
 * On CM_OK *out is a new scene owned by the caller (cm_scene_destroy); on
 * error *out is NULL and ctx names the bad option ("count", "dim", ...) in
 * ctx->path with a message saying what to do. Bad options give CM_USAGE,
 * CM_LIMIT when the scene would exceed 2^31 - 1 bodies or contacts, CM_NOMEM.
 * Results depend only on the options (same seed: same scene, same bytes).
 *
 * Equilibrium preloads: the *_forces variants also return, in *forces_out,
 * a malloc'd array of size (*out)->ncontacts (caller frees with free()): the
 * static normal force of each contact in newtons (>= 0 = compression, in
 * scene contact order) that the generator used to set overlaps and Hertz
 * stiffnesses. forces_out may be NULL. Units: SI throughout.
 */
#ifndef CMODES_GENERATE_H
#define CMODES_GENERATE_H

/* ---- pile -----------------------------------------------------------------
 */

/* Granular pile of polydisperse disks (dim 2) or spheres (dim 3), built by
 * sequential deposition on a rough floor of fixed grains between walls.
 * Bodies: first the fixed floor grains, then the particles in deposition
 * order (unnamed). Contacts: each particle with its supports (particle,
 * floor grain or wall = world), normal from the support (b) to the particle
 * (a). In 2D the particles are spheres moving in the x-y plane (y up).
 * Preloads (cm_generate_pile_forces): each particle's supports carry its
 * whole load (weight + forces from the particles on it) when it lies in
 * their cone, else its vertical component; meta.exact_balance counts the
 * first kind. Details: docs/generators.md. */
typedef struct cm_pile_options {
  int dim;               /* 2 or 3; default 2 */
  int count;             /* moving particles, >= 1; default 200 */
  uint64_t seed;         /* reproducibility; default 1 */
  double radius;         /* mean radius, m; default 0.005 */
  double polydispersity; /* radii uniform in radius (1 +- p), 0 <= p < 1;
                            default 0.2 */
  double density;        /* kg/m^3; default 2500 (glass) */
  double gravity;        /* m/s^2; default 9.81 */
  double width;          /* box width (x; and depth y in 3D), m; 0 = auto:
                            about sqrt(count) (2D) or count^(1/3) (3D)
                            diameters, a pile about as tall as wide */
  double k;              /* linear stiffness, N/m, used when young == 0;
                            default 1e5 */
  double young;          /* Young's modulus, Pa; > 0 selects linearised
                            Hertz: k = dF/d(delta) at each contact's
                            overlap; default 0 */
  double poisson;        /* Poisson ratio in [0, 0.5); default 0.25 */
  int walls;             /* nonzero: side walls (world contacts); default 1 */
} cm_pile_options_t;

CM_EXTERN void cm_pile_options_init(cm_pile_options_t *opts);
CM_EXTERN int cm_generate_pile(cm_context_t *ctx,
                               const cm_pile_options_t *opts, /* in */
                               cm_scene_t **out);             /* out */
/* The same, plus the contact preloads (see the top of this header). */
CM_EXTERN int cm_generate_pile_forces(cm_context_t *ctx,
                                      const cm_pile_options_t *opts,
                                      cm_scene_t **out, double **forces_out);

/* Hertz law used by the pile (and exposed for tests): for effective modulus
 * E* = E / (2 (1 - nu^2)) (two bodies of the same material) and radius
 * R* = r1 r2 / (r1 + r2) (r2_m <= 0 means a wall: R* = r1),
 * F = 4/3 E* sqrt(R*) delta^3/2. Returns the overlap delta (m) for force F
 * (N) and stores k = dF/d(delta) = 2 E* sqrt(R* delta) in *k_out (may be
 * NULL). Cannot fail; F < 0 gives NAN. */
CM_EXTERN double cm_hertz_overlap(double force_n, double young_pa,
                                  double poisson, double r1_m, double r2_m,
                                  double *k_out);

/* ---- crystal --------------------------------------------------------------
 */

typedef enum cm_lattice {
  CM_LATTICE_SQUARE = 0, /* 2D square */
  CM_LATTICE_HEX = 1,    /* 2D hexagonal (triangular) */
  CM_LATTICE_SC = 2,     /* 3D simple cubic */
  CM_LATTICE_FCC = 3     /* 3D face-centred cubic, (001) face on the floor */
} cm_lattice_t;

/* Equal spheres on the lattice sites, resting on a floor (the world, normal
 * up), every nearest-neighbour pair in contact with the same small overlap.
 * Bodies named "p<i>_<j>[_<k>]" by lattice indices (unnamed above 100000). */
typedef struct cm_crystal_options {
  int lattice;    /* cm_lattice_t; default CM_LATTICE_FCC */
  int nx, ny, nz; /* sites per axis (nz unused in 2D; for FCC: conventional
                     half-cells, sites i+j+k even); default 4, 4, 4 */
  double radius;  /* m; default 0.005 */
  double density; /* kg/m^3; default 7800 (steel) */
  double k;       /* contact stiffness, N/m; default 1e6 */
  double overlap; /* relative overlap delta / diameter; default 1e-4 */
} cm_crystal_options_t;

CM_EXTERN void cm_crystal_options_init(cm_crystal_options_t *opts);
CM_EXTERN int cm_generate_crystal(cm_context_t *ctx,
                                  const cm_crystal_options_t *opts,
                                  cm_scene_t **out);

/* ---- stack ----------------------------------------------------------------
 */

typedef enum cm_stack_shape {
  CM_STACK_BOXES = 0,  /* towers of boxes, 4 corner contacts per interface */
  CM_STACK_SPHERES = 1 /* columns of spheres, one contact per interface */
} cm_stack_shape_t;

/* `towers` towers of `count` bodies each on the ground (the world), spaced
 * so they do not touch (each tower is its own component). Bodies named
 * "t<tower>_<level>" (level 0 at the bottom). */
typedef struct cm_stack_options {
  int shape;      /* cm_stack_shape_t; default CM_STACK_BOXES */
  int count;      /* bodies per tower, >= 1; default 5 */
  int towers;     /* >= 1; default 1 */
  int dim;        /* 2 or 3 (2D: rectangles/disks in x-y); default 3 */
  double size[3]; /* box Lx, Ly, Lz, m (sphere: size[0] = diameter);
                     default 0.4, 0.3, 0.2 */
  double mass;    /* per body, kg; default 10 */
  double k;       /* per contact, N/m; default 1e5 */
  double gravity; /* m/s^2, for the preloads; default 9.81 */
} cm_stack_options_t;

CM_EXTERN void cm_stack_options_init(cm_stack_options_t *opts);
CM_EXTERN int cm_generate_stack(cm_context_t *ctx,
                                const cm_stack_options_t *opts,
                                cm_scene_t **out);
CM_EXTERN int cm_generate_stack_forces(cm_context_t *ctx,
                                       const cm_stack_options_t *opts,
                                       cm_scene_t **out, double **forces_out);

/* ---- fleet ----------------------------------------------------------------
 */

/* Robots in rows on a warehouse floor (the world): quadrupeds (trunk + four
 * legs, hips as three-axis penalty bushings, feet on the floor) and wheeled
 * bases (chassis + four wheels, axle bushings, tyres on the floor), some
 * carrying a box (four corner contacts). Each robot is its own component.
 * Bodies named "r<i>.trunk", "r<i>.leg<j>", "r<i>.chassis", "r<i>.wheel<j>",
 * "r<i>.box"; contacts "r<i>.hip<j>.x|y|z", "r<i>.foot<j>",
 * "r<i>.axle<j>a|b.x|y|z", "r<i>.tyre<j>", "r<i>.box.corner<c>" (names up
 * to 200000 robots). Models and numbers: docs/generators.md. */
typedef struct cm_fleet_options {
  int count;               /* robots, >= 1; default 8 */
  uint64_t seed;           /* which robot is which, payload masses; default 1 */
  double wheeled_fraction; /* share of wheeled bases in [0, 1]; default 0.5 */
  double payload_fraction; /* share carrying a box in [0, 1]; default 0.3 */
  int per_row;             /* robots per row, 0 = auto (sqrt(count)) */
  double spacing;          /* distance between robots, m; default 1.5 */
  double gravity;          /* m/s^2; default 9.81 */
} cm_fleet_options_t;

CM_EXTERN void cm_fleet_options_init(cm_fleet_options_t *opts);
CM_EXTERN int cm_generate_fleet(cm_context_t *ctx,
                                const cm_fleet_options_t *opts,
                                cm_scene_t **out);
CM_EXTERN int cm_generate_fleet_forces(cm_context_t *ctx,
                                       const cm_fleet_options_t *opts,
                                       cm_scene_t **out, double **forces_out);

/* ---- bar ------------------------------------------------------------------
 */

/* The reference bar: one body on two contacts at x = +-half_length on the
 * ground (the world), normal up. 2D: bar in x-y (y up). 3D: the bar along x,
 * normal +z, with Iyy = inertia so the vertical and rocking modes equal the
 * 2D ones: omega^2 = 2k/m and 2 k L^2 / I. Body "bar", contacts "left",
 * "right". */
typedef struct cm_bar_options {
  int dim;            /* 2 or 3; default 2 */
  double mass;        /* kg; default 2 */
  double inertia;     /* about the COM, in-plane rocking axis, kg m^2;
                         default 0.005 */
  double half_length; /* contact offset L, m; default 0.1 */
  double k;           /* per contact, N/m; default 1e5 */
} cm_bar_options_t;

CM_EXTERN void cm_bar_options_init(cm_bar_options_t *opts);
CM_EXTERN int cm_generate_bar(cm_context_t *ctx, const cm_bar_options_t *opts,
                              cm_scene_t **out);

#endif
