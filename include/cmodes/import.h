/* cmodes/import.h: importers (LAMMPS/LIGGGHTS dumps, Matrix Market) and the
 * Matrix Market export. Included by cmodes.h; do not include directly.
 * Owned by src/io/ (dump.c, dump_contacts.c, contact_law.c, lammps_deck.c,
 * mtx.c, mtx_write.c).
 * docs/importers.md describes the formats, the options and the physics. */
#ifndef CMODES_IMPORT_H
#define CMODES_IMPORT_H

/* ------------------------------------------------------------------------ */
/* LAMMPS / LIGGGHTS text dumps                                              */
/* ------------------------------------------------------------------------ */

#define CM_DUMP_MAX_PLANES 16 /* plane walls per import */

/* What to do with pairs that touch across a periodic boundary. */
typedef enum cm_dump_periodic {
  CM_DUMP_PERIODIC_ERROR = 0, /* a periodic box is an error (the library
                                 default of cm_dump_options_init, kept for
                                 compatibility) */
  CM_DUMP_PERIODIC_DROP = 1,  /* proceed; pairs across it are not found
                                 (the old --periodic ignore): frequencies
                                 are lowered, the step is unsafe */
  CM_DUMP_PERIODIC_IMAGE = 2  /* minimum-image contacts across it (the
                                 CLI default) */
} cm_dump_periodic_t;

typedef struct cm_contact_model cm_contact_model_t; /* below */

/* What to read from a dump and how to turn it into contacts. */
typedef struct cm_dump_options {
  int dim;             /* 3: spheres (default); 2: disks, z column ignored */
  long timestep;       /* snapshot to take; -1 = the last one (default) */
  double density;      /* kg/m^3: mass from the radius (sphere 4/3 pi r^3
                          rho, disk pi r^2 t rho); 0 = use the mass column */
  double thickness;    /* 2D disk thickness, m; default 1 (per unit
                          thickness) */
  double radius;       /* radius used when the dump has no radius or
                          diameter column; 0 = such a dump is an error */
  double k;            /* linear stiffness, N/m; > 0 selects it */
  double young;        /* Young's modulus E, Pa; > 0 selects Hertz */
  double poisson;      /* Poisson's ratio nu (with young) */
  double touch_tol;    /* m: pairs with overlap > -touch_tol are contacts;
                          Hertz stiffness is taken at max(overlap,
                          touch_tol) (default 0: only overlapping pairs) */
  int nplanes;         /* plane walls in use */
  double planes[CM_DUMP_MAX_PLANES][6]; /* point (3) and inward normal (3) */
  int cylinder;        /* nonzero: a z-cylinder wall, particles inside */
  double cyl_radius;   /* its radius, m */
  double cyl_center[2];/* its axis (cx, cy) */
  int wall_bodies;     /* 0: walls are the world (b = null); 1: one fixed
                          body per wall */
  int periodic_ignore; /* 0: a periodic boundary is an error; 1: proceed,
                          pairs across it are not found */
  int threads;         /* OpenMP threads for the contact search; 0 = ctx */
  int periodic;        /* cm_dump_periodic_t; used when periodic_ignore is
                          0 (periodic_ignore = 1 means DROP) */
  const cm_contact_model_t *model; /* contact laws from an input deck
                          (cm_lammps_deck_apply), or NULL: then k or young
                          give the normal stiffness alone. Not owned */
  long max_contacts;   /* the contact search stops with CM_LIMIT past this
                          many contacts; 0 = the default from physical
                          memory (cm_dump_default_max_contacts) */
} cm_dump_options_t;

/* Defaults as documented above (dim 3, last snapshot, no stiffness: one of
 * k or young must be set before cm_dump_to_scene). Cannot fail. */
CM_EXTERN void cm_dump_options_init(cm_dump_options_t *opts);

/* Parses a wall option: "z=0" / "z>0" (inside is z > 0), "x<0.05" (inside
 * is x < 0.05), or "px,py,pz,nx,ny,nz" (point and inward normal; 2D also
 * "px,py,nx,ny"). Appends it to opts->planes. CM_USAGE on a bad spec. */
CM_EXTERN int cm_dump_options_add_plane(cm_context_t *ctx,
                                        cm_dump_options_t *opts,
                                        const char *spec);
/* Parses "R" or "R,cx,cy" into the z-cylinder wall. CM_USAGE on error. */
CM_EXTERN int cm_dump_options_set_cylinder(cm_context_t *ctx,
                                           cm_dump_options_t *opts,
                                           const char *spec);

/* One snapshot of a dump, atoms sorted by id. */
typedef struct cm_dump {
  long timestep;       /* ITEM: TIMESTEP of this snapshot */
  int snapshots;       /* snapshots read from the file (up to this one) */
  int natoms;          /* atoms */
  long *id;            /* atom ids, ascending, size natoms */
  int *type;           /* atom types (1 if no type column), size natoms */
  double *x;           /* positions, 3 per atom (z = 0 in 2D) */
  double *radius;      /* radii, size natoms */
  double *mass;        /* masses, size natoms, or NULL (no mass column) */
  double box[3][2];    /* box bounds lo, hi per axis (as in the file) */
  double tilt[3];      /* xy xz yz for a triclinic box, else 0 */
  int triclinic;       /* 1 if the box had tilt factors */
  char boundary[3][3]; /* boundary flags per axis ("pp", "ff", "mm", ...) */
  char position[8];    /* which position columns were used: "x", "xu",
                          "xs" or "xsu" */
  long *line;          /* line of each atom in the file, size natoms */
  char *source;        /* the file's name, for messages (owned) */
  double z_spread;     /* 2D (dim 2): max - min of the z column, m, when
                          the dump has one (else 0); 3D: 0 */
  int typed;           /* 1 if the snapshot has a type column */
} cm_dump_t;

/* Reads the wanted snapshot (opts->timestep, or the last) of a text dump
 * whose ATOMS columns are named in its header, in any order. *out is owned
 * by the caller (cm_dump_destroy). Errors (CM_PARSE, CM_IO, CM_NOT_FOUND
 * for a missing timestep) name the file and line: "pile.dump:23: ...". */
CM_EXTERN int cm_dump_read(cm_context_t *ctx, const char *path,
                           const cm_dump_options_t *opts, cm_dump_t **out);
CM_EXTERN void cm_dump_destroy(cm_dump_t **dump);

/* One contact found in a snapshot. */
typedef struct cm_dump_contact {
  int i;             /* atom index (into the sorted dump) */
  int j;             /* second atom (j > i), or -1 for a wall */
  int wall;          /* -1 for a pair; else the wall: planes 0..nplanes-1,
                        then the cylinder as nplanes */
  double overlap;    /* delta = r_i + r_j - d (pair) or the wall overlap, m;
                        may be negative down to -touch_tol */
  double normal[3];  /* unit normal from j (or the wall) to i */
  double point[3];   /* midpoint of the overlap along the normal */
  int image[3];      /* periodic image of j that touches i: j is at
                        x_j + image . box lengths, in a triclinic box
                        x_j + image[0] a + image[1] b + image[2] c with
                        a = (lx, 0, 0), b = (xy, ly, 0), c = (xz, yz, lz)
                        (0 0 0 when not across a periodic boundary) */
} cm_dump_contact_t;

/* The default contact cap: physical memory / 1 KiB (what the import and a
 * later analysis need per contact, with room to spare), at most 2^31 - 1;
 * 1e7 when the memory size is unknown. Cannot fail. */
CM_EXTERN long cm_dump_default_max_contacts(void);

/* Finds every pair with overlap > -touch_tol with a cell list (OpenMP,
 * deterministic), then the wall contacts. Order: pairs by (i, j), then
 * walls by (wall, i). *out (malloc'd, caller frees) holds *count contacts.
 * Errors: CM_USAGE (bad walls), CM_LIMIT (more than opts->max_contacts:
 * the search stops early), CM_NOMEM. */
CM_EXTERN int cm_dump_find_contacts(cm_context_t *ctx, const cm_dump_t *dump,
                                    const cm_dump_options_t *opts,
                                    cm_dump_contact_t **out, int *count);

/* Penalty stiffness of one contact, N/m: opts->k, or the Hertz tangent
 * dF/d(delta) = 2 E* sqrt(R* max(delta, touch_tol)) with
 * E* = E / (2 (1 - nu^2)) and R* = r_i r_j / (r_i + r_j) (walls: R* = r_i).
 * Returns 0 when no stiffness is selected. Cannot fail. */
CM_EXTERN double cm_dump_stiffness(const cm_dump_options_t *opts,
                                   const cm_dump_t *dump,
                                   const cm_dump_contact_t *c);

/* Builds the scene: one body per atom (named "atom-ID"; mass from the mass
 * column or opts->density; solid sphere 2/5 m r^2, disk 1/2 m r^2), walls
 * as the world or fixed bodies, one contact per cm_dump_find_contacts
 * entry, in that order. *out is owned by the caller. */
CM_EXTERN int cm_dump_to_scene(cm_context_t *ctx, const cm_dump_t *dump,
                               const cm_dump_options_t *opts,
                               cm_scene_t **out);

/* cm_dump_read + cm_dump_to_scene. */
CM_EXTERN int cm_import_dump(cm_context_t *ctx, const char *path,
                             const cm_dump_options_t *opts, cm_scene_t **out);

/* Warnings about a snapshot and its walls, one per line (malloc'd, caller
 * frees; NULL when there is none or out of memory): particles that overlap
 * a face of a non-periodic box without touching any wall, a 2D import of a
 * dump whose z varies, pairs dropped or kept across periodic boundaries.
 * cm_dump_to_scene records the same lines in the scene's meta
 * ("warnings"). */
CM_EXTERN char *cm_dump_warnings(cm_context_t *ctx, const cm_dump_t *dump,
                                 const cm_dump_options_t *opts);

/* ------------------------------------------------------------------------ */
/* Contact laws of LAMMPS / LIGGGHTS input decks                             */
/* ------------------------------------------------------------------------ */

#define CM_LAW_MAX_TYPES 32 /* atom types an input deck may use */

/* The force law of one kind of contact, as the engine computes it. */
typedef enum cm_law_style {
  CM_LAW_NONE = 0,           /* no law (type pair not set) */
  CM_LAW_GRAN_HOOKE,         /* LAMMPS gran/hooke: no shear history */
  CM_LAW_GRAN_HOOKE_HISTORY, /* LAMMPS gran/hooke/history */
  CM_LAW_GRAN_HERTZ_HISTORY, /* LAMMPS gran/hertz/history */
  CM_LAW_GRANULAR,           /* LAMMPS pair granular, wall/gran granular */
  CM_LAW_LIGGGHTS_HERTZ,     /* LIGGGHTS model hertz */
  CM_LAW_LIGGGHTS_HOOKE      /* LIGGGHTS model hooke */
} cm_law_style_t;

/* Sub-models of pair granular (LAMMPS names). */
enum { CM_GRAN_HOOKE, CM_GRAN_HERTZ, CM_GRAN_HERTZ_MATERIAL, CM_GRAN_DMT };
enum { CM_GRAN_VELOCITY, CM_GRAN_MASS_VELOCITY, CM_GRAN_VISCOELASTIC,
       CM_GRAN_TSUJI };
enum { CM_GRAN_LINEAR_NOHISTORY, CM_GRAN_LINEAR_HISTORY, CM_GRAN_MINDLIN };

typedef struct cm_contact_law {
  int style;      /* cm_law_style_t */
  double kn;      /* gran/ styles: Kn (hooke N/m, hertz N/m^2); granular:
                     normal_coeffs[0] (hooke, hertz: kn; hertz/material,
                     dmt: 4/3 E*); LIGGGHTS: Y* (Pa) */
  double kt;      /* gran/: Kt (NULL: 2/7 Kn); granular: k_t (mindlin: per
                     m of contact radius; NULL: 8 G*); LIGGGHTS: G* (Pa) */
  double gamma_n; /* gran/: gamma_n (1/s); granular: the damping
                     coefficient (tsuji: alpha(e)); LIGGGHTS: beta =
                     ln e / sqrt(ln^2 e + pi^2) (< 0) */
  double gamma_t; /* gran/: gamma_t (1/s; NULL: gamma_n / 2; 0 with
                     dampflag 0); granular: x_gamma_t (c_t = x c_n) */
  double mu;      /* friction coefficient; 0 makes k_t = c_t = 0 under
                     history (the tangential force is capped at 0) */
  int normal;     /* granular: CM_GRAN_HOOKE ... CM_GRAN_DMT */
  int damping;    /* granular: CM_GRAN_VELOCITY ... CM_GRAN_TSUJI */
  int tangential; /* granular: CM_GRAN_LINEAR_NOHISTORY ... MINDLIN;
                     LIGGGHTS: LINEAR_HISTORY or LINEAR_NOHISTORY */
  double charvel; /* LIGGGHTS hooke: characteristicVelocity, m/s */
  int tdamp;      /* LIGGGHTS: tangential_damping on (1, default) */
  int kt_to_kn;   /* LIGGGHTS hooke: ktToKn on (k_t = 2/7 k_n) */
} cm_contact_law_t;

/* Stiffness and dashpots of one contact under law: tangent normal
 * stiffness dF_n/d(delta) (N/m), tangential sticking stiffness, normal and
 * tangential dashpot coefficients (N s/m), at overlap delta (m) with
 * effective radius reff (m) and mass meff (kg), exactly as the engine
 * evaluates them at that overlap. out = {k_n, k_t, c_n, c_t}. Cannot
 * fail. */
CM_EXTERN void cm_contact_law_eval(const cm_contact_law_t *law, double reff,
                                   double meff, double delta, double out[4]);

/* Every law of a deck: per type pair and per wall. */
struct cm_contact_model {
  int ntypes;       /* atom types with laws: 1..ntypes */
  cm_contact_law_t pair[CM_LAW_MAX_TYPES + 1][CM_LAW_MAX_TYPES + 1];
                    /* law of each type pair (symmetric; index 0 unused) */
  cm_contact_law_t wall[CM_DUMP_MAX_PLANES + 1];
                    /* law of each wall (planes, then the cylinder), used
                       when wall_type[w] is 0 */
  int wall_type[CM_DUMP_MAX_PLANES + 1];
                    /* LIGGGHTS: the wall's material type (its law is
                       pair[atom type][wall type]); 0 = use wall[w] */
  double cyl_rwall; /* curvature used for the cylinder's R*: R* =
                       r rwall / (r + rwall) (LAMMPS: -2 R_c for particles
                       inside); 0 = R* = r as for a flat wall */
  double timestep_s;/* the deck's timestep, s (0 = none) */
  char summary[768];/* one line: the model found, for messages */
  double drag[CM_LAW_MAX_TYPES + 1];
                    /* fix viscous: the drag gamma of each type, N s/m
                       (force -gamma v; 0 = none): a dashpot alone on every
                       particle of the type (docs/scene-format.md) */
  double drag_rate[CM_LAW_MAX_TYPES + 1];
                    /* fix langevin: the drag per unit mass of each type,
                       1/s (1 / (damp ratio): gamma_i = m_i drag_rate;
                       0 = none), added to drag */
  double tether[CM_LAW_MAX_TYPES + 1][3];
                    /* fix spring/self: the stiffness K of the tether of
                       every particle of each type to where it started, on
                       x, y, z, N/m (0 = none): a spring to the world at
                       its centre */
};

/* The stiffness and dashpots {k_n, k_t, c_n, c_t} of contact c of the
 * snapshot under opts->model (types from the dump's type column, masses
 * m_i = mass[i]); the overlap is floored at opts->touch_tol as for Hertz.
 * Returns 0, or CM_USAGE with a message when the type pair has no law.
 * With opts->model NULL: {cm_dump_stiffness, 0, 0, 0}. */
CM_EXTERN int cm_dump_contact_law(cm_context_t *ctx,
                                  const cm_dump_options_t *opts,
                                  const cm_dump_t *dump, const double *mass,
                                  const cm_dump_contact_t *c, double out[4]);

/* A parsed LAMMPS or LIGGGHTS input deck: what the importer needs. */
typedef struct cm_lammps_deck {
  char *path;          /* the deck's file name (owned) */
  int liggghts;        /* 1 if the deck is LIGGGHTS' (pair_style gran model
                          ... or property/global material properties) */
  int dim;             /* dimension (default 3) */
  char boundary[3][3]; /* boundary flags per axis ("pp", "ff", "fm", ...) */
  int have_box;        /* 1 if region + create_box gave the box */
  double box[3][2];    /* lo, hi per axis */
  char pair_style[64]; /* as written, e.g. "gran/hooke/history" */
  cm_contact_model_t *model; /* laws and timestep (owned) */
  int nplanes;         /* plane walls from fix wall/gran */
  double planes[CM_DUMP_MAX_PLANES][6]; /* point, inward normal */
  int cylinder;        /* 1: a z-cylinder wall */
  double cyl_radius, cyl_center[2];
  char wall_fix[CM_DUMP_MAX_PLANES + 1][32]; /* fix ID of each wall */
  long wall_line[CM_DUMP_MAX_PLANES + 1];    /* deck line of each wall */
  double density[CM_LAW_MAX_TYPES + 1]; /* kg/m^3 per type from fix pour
                          dens / particletemplate (0 = unknown) */
  char *warnings;      /* "file:line: ..." lines, or NULL (owned) */
} cm_lammps_deck_t;

/* Reads a LAMMPS or LIGGGHTS input deck (variables, include, units si,
 * dimension, boundary, region/create_box, timestep, the granular pair
 * styles and fix wall/gran). *out is owned by the caller. Errors
 * (CM_PARSE, CM_IO) name the file and line and say what is supported. */
CM_EXTERN int cm_lammps_deck_read(cm_context_t *ctx, const char *path,
                                  cm_lammps_deck_t **out);
/* The same with index variables set before the first line, as LAMMPS'
 * command line "-var NAME VALUE" does (the deck's own index definitions of
 * them are then ignored). vars: "NAME=VALUE" strings, NULL-terminated (or
 * vars NULL). CM_USAGE for an entry without '='. */
CM_EXTERN int cm_lammps_deck_read_vars(cm_context_t *ctx, const char *path,
                                       const char *const *vars,
                                       cm_lammps_deck_t **out);
CM_EXTERN void cm_lammps_deck_destroy(cm_lammps_deck_t **deck);

/* Puts the deck into dump options: its walls (replacing opts' walls), its
 * laws (opts->model points into deck: keep the deck alive), dim, and the
 * density when the deck gives one density for all types and opts has
 * none. CM_USAGE if opts already has walls or a stiffness. */
CM_EXTERN int cm_lammps_deck_apply(cm_context_t *ctx,
                                   const cm_lammps_deck_t *deck,
                                   cm_dump_options_t *opts);

/* Fills what the snapshot lacks from the deck: the boundary flags of a dump
 * without them (the deck's periodic axes), and opts->density when the dump
 * has no mass column, opts has no density and the deck gives one density
 * for every type (fix pour dens, particletemplate/sphere). Cannot fail. */
CM_EXTERN void cm_lammps_deck_complete(const cm_lammps_deck_t *deck,
                                       cm_dump_t *dump,
                                       cm_dump_options_t *opts);

/* Reads the deck and the dump and builds the scene with each contact's
 * k_n, k_t, c_n, c_t and the scene's timestep_s. opts may be NULL
 * (defaults: minimum-image periodic contacts). */
CM_EXTERN int cm_import_lammps(cm_context_t *ctx, const char *deck_path,
                               const char *dump_path,
                               const cm_dump_options_t *opts,
                               cm_scene_t **out);

/* ------------------------------------------------------------------------ */
/* Matrix Market                                                             */
/* ------------------------------------------------------------------------ */

/* Reads M (n x n SPD), J (nc x n) and k (nc x 1 or 1 x nc) from Matrix
 * Market files with CHOLMOD's reader and builds a general system.
 * Errors name the file and line. */
CM_EXTERN int cm_system_read_matrices(cm_context_t *ctx, const char *m_path,
                                      const char *j_path, const char *k_path,
                                      cm_system_t **out);

/* Reads a manifest, JSON {"M": "M.mtx", "J": "J.mtx", "k": "k.mtx", ...}
 * with paths relative to the manifest's folder, and calls
 * cm_system_read_matrices. Other keys written by cm_system_write_matrices
 * are allowed (format, version, B, S, rows, cols, n, nc, source, meta);
 * unknown keys are errors. */
CM_EXTERN int cm_system_read_manifest(cm_context_t *ctx, const char *path,
                                      cm_system_t **out);

/* What cm_system_write_matrices writes besides M, J and k. */
#define CM_MTX_WRITE_B 1 /* B.mtx: the operator's B = K^1/2 J L^-T,
                            P M P^T = L L^T (P = I for a block-diagonal
                            M), so S = B B^T */
#define CM_MTX_WRITE_S 2 /* S.mtx: S = B B^T, symmetric lower */

/* Writes dir/M.mtx (symmetric, lower), dir/J.mtx, dir/k.mtx (array),
 * dir/rows.txt, dir/cols.txt (the maps from rows and columns to scene
 * contacts, bodies and dofs), the optional B.mtx / S.mtx (flags), and
 * dir/manifest.json, all numbers in %.17g. dir must exist. source (may be
 * NULL) is recorded in the manifest. Errors: CM_IO naming the file. */
CM_EXTERN int cm_system_write_matrices(cm_context_t *ctx,
                                       const cm_system_t *sys,
                                       const char *dir, int flags,
                                       const char *source);

#endif
