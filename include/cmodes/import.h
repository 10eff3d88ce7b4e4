/* cmodes/import.h: importers (LAMMPS/LIGGGHTS dumps, Matrix Market) and the
 * Matrix Market export. Included by cmodes.h; do not include directly.
 * Owned by src/io/ (dump.c, dump_contacts.c, mtx.c, mtx_write.c).
 * docs/importers.md describes the formats, the options and the physics. */
#ifndef CMODES_IMPORT_H
#define CMODES_IMPORT_H

/* ------------------------------------------------------------------------ */
/* LAMMPS / LIGGGHTS text dumps                                              */
/* ------------------------------------------------------------------------ */

#define CM_DUMP_MAX_PLANES 16 /* plane walls per import */

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
} cm_dump_contact_t;

/* Finds every pair with overlap > -touch_tol with a cell list (OpenMP,
 * deterministic), then the wall contacts. Order: pairs by (i, j), then
 * walls by (wall, i). *out (malloc'd, caller frees) holds *count contacts.
 * Errors: CM_USAGE (bad walls), CM_NOMEM. */
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
