/* cmodes.h: the public API of cmodes, the coupled normal-contact penalty-mode
 * analyser.
 *
 * Data flow:  scene -> system (M, J, K) -> operator (B = K^1/2 J L^-T)
 *             -> spectrum (largest eig of S = B B^T) -> report.
 *
 * Units: any consistent set; the docs use SI (kg, m, s, N/m, rad/s).
 * Conventions: every call that can fail takes a cm_context_t and returns a
 * status (0 ok, < 0 error, > 0 warning); the context then holds the message
 * and the input path ("contacts[17].normal") of the failure. Objects follow
 * create -> use -> destroy; destroy takes the handle's address, accepts NULL
 * and sets the handle to NULL.
 */
#ifndef CMODES_H
#define CMODES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CM_VERSION_MAJOR 0
#define CM_VERSION_MINOR 1
#define CM_VERSION_PATCH 0
#define CM_VERSION_STRING "0.1.0"

#if defined(_WIN32)
#define CM_EXTERN
#else
#define CM_EXTERN __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

/* X(NAME, value, "message", http_status, cli_exit_code)
 * One list generates the enum, the name and message tables, the HTTP mapping
 * and the command-line exit codes, so they never drift apart. */
#define CM_STATUS_MAP(X)                                                      \
  X(OK, 0, "ok", 200, 0)                                                      \
  X(NOT_CONVERGED, 1, "not converged: partial result", 200, 5)                \
  X(USAGE, -1, "invalid argument or option", 400, 2)                          \
  X(PARSE, -2, "malformed input", 400, 3)                                     \
  X(INVALID_SCENE, -3, "invalid scene", 400, 3)                               \
  X(NOT_SPD, -4, "matrix not positive definite", 422, 4)                      \
  X(NUMERIC, -5, "numerical failure", 422, 4)                                 \
  X(NOMEM, -6, "out of memory", 500, 1)                                       \
  X(IO, -7, "input/output error", 500, 3)                                     \
  X(LIMIT, -8, "size limit exceeded", 413, 3)                                 \
  X(NOT_FOUND, -9, "not found", 404, 3)                                       \
  X(METHOD, -10, "method not allowed", 405, 2)                                \
  X(CONFLICT, -11, "conflict", 409, 2)                                        \
  X(MEDIA_TYPE, -12, "unsupported media type", 415, 2)                        \
  X(BUSY, -13, "busy: queue full", 503, 1)                                    \
  X(UNAUTHORIZED, -14, "unauthorized", 401, 2)                                \
  X(TOO_MANY, -15, "too many requests", 429, 1)                               \
  X(INTERNAL, -16, "internal error", 500, 1)

#define CM__STATUS_ENUM(name, val, msg, http, exitc) CM_##name = (val),
typedef enum cm_status { CM_STATUS_MAP(CM__STATUS_ENUM) } cm_status_t;
#undef CM__STATUS_ENUM

/* Cannot fail; unknown codes give "unknown" / 500 / 1. */
CM_EXTERN const char *cm_status_name(int status);    /* "invalid_scene" */
CM_EXTERN const char *cm_status_message(int status); /* "invalid scene" */
CM_EXTERN int cm_status_http(int status);            /* 400 */
CM_EXTERN int cm_status_exit(int status);            /* CLI exit code */

/* ------------------------------------------------------------------------ */
/* Context: parameters, last status                                          */
/* ------------------------------------------------------------------------ */

typedef struct cm_context {
  int threads;        /* OpenMP threads for parallel kernels; 0 = default */
  int status;         /* last status set by a failing call (0 = none) */
  char message[1024]; /* human message of the last failure */
  char path[256];     /* where in the input, e.g. "contacts[17].normal" */
  const char *file;   /* source file that raised it (for bug reports) */
  int line;           /* source line that raised it */
} cm_context_t;

/* Sets defaults; cannot fail. */
CM_EXTERN void cm_context_init(cm_context_t *ctx);
/* Clears the last status; cannot fail. */
CM_EXTERN void cm_context_clear(cm_context_t *ctx);

/* Workspace kept between analyses in this process: the largest buffers of
 * an analysis (the Lanczos basis, B's values and indices) are kept, up to
 * `bytes` in all, instead of being freed, and the next analysis takes them
 * again, so its pages are not fresh (a page fault and a clearing for every
 * 4 KiB). For servers and loops that analyse scene after scene; results
 * are the same bits with or without. Returns the previous cap (0 before
 * the first call). 0 keeps nothing and frees what is kept. Until the
 * first call, each analysis (cm_analyze, cm_analyze_system,
 * cm_analyze_vectors, cm_system_assemble) keeps what it frees for its own
 * later requests, up to 1 GiB, and frees it when it returns: nothing is
 * kept between analyses. Thread-safe. */
CM_EXTERN size_t cm_workspace_keep(size_t bytes);
/* Bytes kept now (held by the process, not in use). */
CM_EXTERN size_t cm_workspace_kept(void);

/* The kernel set the Lanczos basis work runs on in this process: "avx512",
 * "avx2" or "baseline" (x86-64 without AVX; the only one elsewhere). The
 * best set the CPU runs, or a lower one named by the environment variable
 * CMODES_KERNELS (an unknown name counts as unset). Every set gives the
 * same bits; only the speed differs. Thread-safe. */
CM_EXTERN const char *cm_kernel_set(void);

/* ------------------------------------------------------------------------ */
/* Scene: bodies and contacts                                                */
/* ------------------------------------------------------------------------ */

#define CM_WORLD (-1) /* body index meaning "the world" (fixed, no dofs) */

typedef struct cm_body {
  int fixed;             /* nonzero: no dofs (ground, walls) */
  double mass;           /* kg; > 0 for moving bodies */
  double inertia[9];     /* body-frame inertia about the COM, row-major 3x3
                            (3D); 2D uses inertia[0], the scalar about z */
  double position[3];    /* COM in the world frame; 2D uses [0..1] */
  double orientation[4]; /* unit quaternion w,x,y,z body->world (3D only) */
} cm_body_t;

typedef struct cm_contact {
  int a, b;           /* body indices, b may be CM_WORLD; normal points b->a */
  double point[3];    /* world contact point; 2D uses [0..1] */
  double normal[3];   /* unit normal from b to a (normalised on add) */
  double stiffness;   /* normal penalty stiffness k_n > 0, N/m */
  /* scene format version 2 (0 = absent, the version 1 model): */
  double stiffness_t; /* tangential (sticking) stiffness k_t >= 0, N/m, on
                         each tangent row (2 in 3D, 1 in 2D) */
  double damping_n;   /* normal dashpot c_n >= 0, N s/m (force = c_n v_n) */
  double damping_t;   /* tangential dashpot c_t >= 0, N s/m, per tangent */
  int has_arms;       /* 1: the lever arms below replace point - COM (the
                         engines put a sphere's contact force at its own
                         surface; a periodic image's position differs from
                         the body's) */
  double arm_a[3];    /* world vector from a's COM to its contact point */
  double arm_b[3];    /* the same for b (unused for the world) */
} cm_contact_t;

typedef struct cm_scene {
  int dim;                /* 2 or 3 */
  int nbodies;            /* bodies in use */
  int ncontacts;          /* contacts in use */
  cm_body_t *bodies;      /* size nbodies */
  cm_contact_t *contacts; /* size ncontacts */
  double timestep_s;      /* the source deck's time step, s; 0 = none
                             (version 2 "timestep"); the report gives it as
                             a fraction of the critical step */
  /* private: capacities and names (use the accessors) */
  int body_cap, contact_cap;
  long *body_name;        /* size body_cap: offset into names, -1 none */
  long *contact_name;     /* size contact_cap: offset into names, -1 none */
  char *names;            /* NUL-separated name pool */
  size_t names_len, names_cap;
  void *name_index;       /* body-name hash index (private) */
  char *meta_json;        /* the scene's "meta" object as JSON text, or NULL */
  char *name;             /* the scene's optional "name" (malloc'd), or NULL */
} cm_scene_t;

/* Returns a new empty scene, or NULL when out of memory or dim not 2 or 3.
 * The caller owns it and frees it with cm_scene_destroy. */
CM_EXTERN cm_scene_t *cm_scene_create(int dim);
CM_EXTERN void cm_scene_destroy(cm_scene_t **scene);
/* Deep copy, or NULL when out of memory. */
CM_EXTERN cm_scene_t *cm_scene_copy(const cm_scene_t *scene);

/* Defaults: moving, mass 1, identity inertia and orientation, origin. */
CM_EXTERN void cm_body_init(cm_body_t *body);
CM_EXTERN void cm_contact_init(cm_contact_t *contact);

/* Appends a body (copied) with an optional name (NULL: unnamed). Returns the
 * new index (>= 0) or a negative status (duplicate name, out of memory).
 * Values are checked by cm_scene_validate, not here. */
CM_EXTERN int cm_scene_add_body(cm_context_t *ctx, cm_scene_t *scene,
                                const cm_body_t *body, const char *name);
/* Appends a contact (copied); the normal is normalised when it has a finite
 * nonzero length. Returns the new index or a negative status. */
CM_EXTERN int cm_scene_add_contact(cm_context_t *ctx, cm_scene_t *scene,
                                   const cm_contact_t *contact,
                                   const char *name);

/* Name of body/contact i, or NULL when unnamed. Cannot fail. */
CM_EXTERN const char *cm_scene_body_name(const cm_scene_t *scene, int i);
CM_EXTERN const char *cm_scene_contact_name(const cm_scene_t *scene, int i);
/* Index of the body with that name, or -1. */
CM_EXTERN int cm_scene_find_body(const cm_scene_t *scene, const char *name);
/* Writes a display label for body i into buf ("bar", or "#3" when unnamed,
 * "world" for CM_WORLD) and returns buf. */
CM_EXTERN const char *cm_scene_body_label(const cm_scene_t *scene, int i,
                                          char *buf, size_t size);

/* Checks every value: finite numbers, positive mass, SPD inertia, unit
 * quaternion, indices in range, a != b, not both fixed, k > 0, unit normal.
 * Returns CM_OK or CM_INVALID_SCENE with ctx->path naming the place. */
CM_EXTERN int cm_scene_validate(cm_context_t *ctx, const cm_scene_t *scene);

/* Reads a scene in the JSON format (docs/scene-format.md) from text of
 * length len; source names the input in messages ("bar2d.json", "-").
 * On success *out is a new scene owned by the caller. Errors: CM_PARSE
 * (malformed JSON, with line and column), CM_INVALID_SCENE, CM_NOMEM. */
CM_EXTERN int cm_scene_parse_json(cm_context_t *ctx, const char *text,
                                  size_t len, const char *source,
                                  cm_scene_t **out);
/* Reads a whole file ("-" = standard input): JSON as above, or the binary
 * format of cm_scene_write_binary. */
CM_EXTERN int cm_scene_read_file(cm_context_t *ctx, const char *path,
                                 cm_scene_t **out);
/* Writes the compact binary format (fixed little-endian records, no names
 * or meta; docs/scene-format.md). cm_scene_read_file reads either format,
 * telling them apart by the binary magic "CMSCENE1". */
CM_EXTERN int cm_scene_write_binary(cm_context_t *ctx, const cm_scene_t *scene,
                                    FILE *out);
/* Returns the scene as JSON text (malloc'd, caller frees) or NULL. */
CM_EXTERN char *cm_scene_to_json(cm_context_t *ctx, const cm_scene_t *scene);
CM_EXTERN int cm_scene_write_json(cm_context_t *ctx, const cm_scene_t *scene,
                                  FILE *out);

/* ------------------------------------------------------------------------ */
/* System: M, J, K assembled from a scene, or given as matrices              */
/* ------------------------------------------------------------------------ */

/* Rows of J (contacts) and columns (active dofs) are ordered by component,
 * so component c owns rows [comp_row[c], comp_row[c+1]) and columns
 * [comp_col[c], comp_col[c+1]) and J is block diagonal in that order. */
typedef struct cm_system {
  int dim;         /* 2 or 3; 0 for a system given as matrices */
  int nbodies;     /* bodies of the scene (0 for matrices) */
  int ndofs;       /* dofs of all moving bodies (3 or 6 each) */
  int n;           /* active dofs: columns of J */
  int nc;          /* rows of J: one per contact, plus its tangent rows
                      (2 in 3D, 1 in 2D) when it has a tangential spring */
  int ncontacts;   /* scene contacts (for matrices: nc) */
  int tangential;  /* 1: some contact has tangent rows */
  int dashpots;    /* 1: some contact has a dashpot */
  int block;       /* 1: M block-diagonal by body (fast path); 0: general */
  /* J in CSR, nc x n */
  int *Jp;         /* row pointers, size nc+1 */
  int *Jj;         /* column indices, size Jp[nc] */
  double *Jx;      /* values, size Jp[nc] */
  double *k;       /* stiffness of each row, size nc (k_n or k_t; for a
                      system weighted by cmodes' damped-step search, the
                      weight a k + b c of the row) */
  double *g;       /* dashpot of each row c_n or c_t (N s/m), size nc;
                      NULL when no contact has one */
  double *spring;  /* weighted systems only: the row's k_n or k_t, size
                      nc; else NULL */
  /* M, lower triangle with diagonal, CSC, n x n */
  int *Mp;         /* column pointers, size n+1 */
  int *Mi;         /* row indices, size Mp[n] */
  double *Mx;      /* values, size Mp[n] */
  /* maps */
  int *row_contact;  /* size nc: scene contact of each row */
  int *contact_row;  /* size ncontacts: first row of each scene contact
                        (its rows are consecutive) */
  unsigned char *row_kind; /* size nc: 0 normal, 1 and 2 the tangents
                              (docs/math.md); NULL for matrices */
  int *col_body;     /* size n: body of each column (-1 for matrices) */
  int *col_dof;      /* size n: local dof of that body (0..2 or 0..5) */
  int *row_a, *row_b;/* size nc: bodies of each row (CM_WORLD if none) */
  /* components */
  int ncomp;         /* independent sub-problems */
  int *comp_row;     /* size ncomp+1 */
  int *comp_col;     /* size ncomp+1 */
  int *body_comp;    /* size nbodies: component of each body, -1 if none */
  /* counts */
  int moving_bodies; /* bodies that are not fixed */
  int free_bodies;   /* moving bodies that touch no contact */
  int dropped_dofs;  /* dofs removed: untouched or structural zeros */
  double inertia_cond; /* largest condition number of a moving 3D body's
                          inertia tensor in a component whose world block
                          is not diagonal (1 in 2D, for diagonal blocks and
                          for matrices; INFINITY: singular to rounding) */
  int inertia_cond_body; /* that body, -1 if none */
  double t_assemble_s; /* wall time of assembly */
  /* names of a system given as matrices (cm_system_set_names; NULL: none),
   * in the input's order: row_names[i] names row i of J (the system's row
   * r is row row_contact[r]), col_names[i] dof i of M (the system's column
   * j is dof col_dof[j]) */
  char **row_names;  /* size nc, NULL entries unnamed */
  char **col_names;  /* size ndofs, NULL entries unnamed */
  int pooled;        /* internal, set by cm_system_assemble: the arrays
                        came from the library's workspace (cm_workspace_keep)
                        and go back there with cm_system_destroy */
} cm_system_t;

/* Relative error, per unit of inertia_cond, of a body's mass block as
 * formed and factored in double precision (16 eps): eigenvalues of S are
 * good to a relative CM_INERTIA_DELTA_PER_COND x inertia_cond. */
#define CM_INERTIA_DELTA_PER_COND 3.552713678800501e-15
/* Validates the scene and assembles M and J with OpenMP (deterministic at any
 * thread count). *out is owned by the caller. A 3D body whose inertia is
 * too near singular to factor in its rotated frame (CM_INERTIA_DELTA_PER_COND
 * x inertia_cond >= 1/2) gives CM_NOT_SPD naming bodies[i].inertia. */
CM_EXTERN int cm_system_assemble(cm_context_t *ctx, const cm_scene_t *scene,
                                 cm_system_t **out);
/* Builds a general system from matrices: M (n x n, CSC, symmetric: lower
 * triangle or both triangles), J (nc x n, CSR), k (nc). Arrays are copied.
 * Split into components as a scene is: dofs joined by an off-diagonal
 * entry of M or by a nonzero of a common row of J form one; rows and
 * columns in component order (row_contact, col_dof map back); a part of M
 * that no row reaches is dropped (dropped_dofs; still checked positive
 * definite); a row without a nonzero is CM_INVALID_SCENE. */
CM_EXTERN int cm_system_from_matrices(cm_context_t *ctx, int n, int nc,
                                      const int *Mp, const int *Mi,
                                      const double *Mx, const int *Jp,
                                      const int *Jj, const double *Jx,
                                      const double *k, cm_system_t **out);
CM_EXTERN void cm_system_destroy(cm_system_t **sys);
/* Names the rows of J (row_names, nc entries: contacts, e.g. "hip_FL.x")
 * and the dofs of M (col_names, n entries, in M's order) of a system built
 * from matrices; the report then names its contacts by row. Either array
 * may be NULL (no names), an entry NULL (that one unnamed); the strings
 * are copied and replace earlier names. CM_USAGE for a system assembled
 * from a scene (whose names are the scene's). */
CM_EXTERN int cm_system_set_names(cm_context_t *ctx, cm_system_t *sys,
                                  const char *const *row_names,
                                  const char *const *col_names);

/* ------------------------------------------------------------------------ */
/* Operator: B = K^1/2 J L^-T with M = L L^T, S = B B^T                      */
/* ------------------------------------------------------------------------ */

typedef struct cm_operator cm_operator_t; /* opaque */

/* Factors M with CHOLMOD and forms B (block-diagonal M) or keeps the factor
 * for solves (general M). A mass matrix that is not positive definite gives
 * CM_NOT_SPD naming the body. The operator keeps a pointer to sys: keep sys
 * alive while op is used. */
CM_EXTERN int cm_operator_create(cm_context_t *ctx, const cm_system_t *sys,
                                 cm_operator_t **out);
CM_EXTERN void cm_operator_destroy(cm_operator_t **op);
CM_EXTERN int cm_operator_rows(const cm_operator_t *op); /* nc */
CM_EXTERN int cm_operator_cols(const cm_operator_t *op); /* n */
/* y = S x on component comp (x, y over its rows, local to it), or on the
 * whole operator with comp = -1. Deterministic at any thread count. */
CM_EXTERN int cm_operator_apply_S(cm_operator_t *op, int comp,
                                  const double *x, double *y);
/* y = B x (y: nc, x: n) and x = B^T y, on the whole operator. */
CM_EXTERN int cm_operator_apply_B(cm_operator_t *op, const double *x,
                                  double *y);
CM_EXTERN int cm_operator_apply_BT(cm_operator_t *op, const double *y,
                                   double *x);
/* Read-only CSR view of B (nc x n) on the block path (owned by op, valid
 * while it lives); CM_USAGE for a general M, whose B is applied by solves
 * and never formed. With a diagonal M (disks, spheres without spins) the
 * values are formed on the first call (8 bytes per nonzero; the products
 * do not need them; thread-safe), CM_NOMEM if that memory is missing. */
CM_EXTERN int cm_operator_csr(const cm_operator_t *op, const int **Bp,
                              const int **Bj, const double **Bx);
/* Forms S (nc x nc, column-major, malloc'd) densely; for tests, `compare`
 * and verification. NULL on failure. */
CM_EXTERN double *cm_operator_dense_S(cm_context_t *ctx, cm_operator_t *op);
/* Nonzeros of B (block path), or of J for a general M. Cannot fail. */
CM_EXTERN long cm_operator_nnz(const cm_operator_t *op);
/* The per-contact estimate max_c sqrt(S_cc) (a lower bound on omega_max) and
 * the Gershgorin upper bound sqrt(max_c (|B| |B|^T 1)_c), whole operator.
 * This is all an engine's separate-scalar-mass estimate costs. */
CM_EXTERN int cm_operator_bounds(cm_context_t *ctx, cm_operator_t *op,
                                 double *omega_lower, double *omega_upper);
/* Timings of the factor and operator phases (seconds). */
CM_EXTERN double cm_operator_factor_seconds(const cm_operator_t *op);
CM_EXTERN double cm_operator_build_seconds(const cm_operator_t *op);

/* ------------------------------------------------------------------------ */
/* Analysis options and report                                               */
/* ------------------------------------------------------------------------ */

typedef enum cm_method {
  CM_METHOD_AUTO = 0,   /* dense for small components, Lanczos otherwise
                           (ARPACK when the Chebyshev filter is asked for) */
  CM_METHOD_ARPACK = 1, /* ARPACK-ng Lanczos (dense only when too small) */
  CM_METHOD_DENSE = 2,  /* LAPACK dsyevr on the explicitly formed operator */
  CM_METHOD_LANCZOS = 3 /* cmodes' own thick-restart Lanczos with partial
                           re-orthogonalisation (dense only when too small) */
} cm_method_t;

/* The analysis options. Their defaults, ranges and names on the command
 * line and the server are one table (CM_OPTIONS_MAP in the source, docs/
 * cli.md, cm_options_table_json); cm_analyze checks every field against
 * it and returns CM_USAGE naming the first one out of range. */
typedef struct cm_options {
  int modes;             /* top modes wanted, default 6 */
  double tol;            /* Lanczos relative residual tolerance, default 1e-10 */
  int method;            /* cm_method_t, default CM_METHOD_AUTO */
  int ncv;               /* Lanczos basis size, 0 = auto: own Lanczos 48
                            vectors, fewer (not below 32) if 48 do not fit
                            in 768 MiB, and >= 2 nev + 8; ARPACK
                            max(2 nev + 1, 20) */
  int max_iter;          /* Lanczos cycles (ARPACK restarts), default 3000 */
  double max_seconds;    /* eigen-solve budget per analysis, 0 = none */
  int dense_max;         /* auto: components of operator size <= this are
                            solved densely, default 400 */
  double damping_ratio;  /* modal damping for central difference, default 0 */
  double newmark_gamma;  /* default 0.5 */
  double newmark_beta;   /* default 0.25 */
  double freq_tol;       /* accuracy-step frequency error, default 0.01 */
  int top_contacts;      /* contacts listed per mode, default 5 */
  int top_bodies;        /* bodies listed per mode, default 5 */
  int top_components;    /* components listed, default 10 */
  int chebyshev;         /* Lanczos polynomial filter degree d >= 2
                            (ARPACK on T_d of S damping [0, max S_cc]);
                            0 or 1 = off (default) */
  int rank_max_rows;     /* counts: a component of up to this many rows
                            gets the rank of its J from SuiteSparseQR
                            (zero_modes, free_motions); larger ones leave
                            them unknown (-1). Default 20000 (about 1 s on
                            2 cores; the QR's cost grows about as rows^2 on
                            3D piles); 0 = every size */
  const double *warm_start; /* optional start vector over scene rows
                               (report nstart: each contact's normal row,
                               then its tangent rows, in contact order),
                               e.g. a previous report's dominant vector;
                               NULL = seeded random */
  double failure_probability; /* the probabilistic upper bound's allowed
                                 failure probability, in (0, 0.01]; default
                                 1e-9 */
} cm_options_t;

CM_EXTERN void cm_options_init(cm_options_t *opts);
/* The table of analysis options (name, command-line spelling, type,
 * default, range, help) as JSON, as `cmodes options --json` prints it
 * (docs/cli.md): for front ends that set cm_options_t by name. Malloc'd
 * text, caller frees; NULL when out of memory. */
CM_EXTERN char *cm_options_table_json(void);
/* Sets one option by its name ("max_iter") or command-line spelling
 * ("max-iter") from text, with the parser and range checks of the command
 * line: CM_USAGE "NAME: 'TEXT' is not an integer in 1..1000", or an
 * unknown name listing the known ones (options_export.c). */
CM_EXTERN int cm_options_set(cm_context_t *ctx, cm_options_t *opts,
                             const char *name, const char *value);
/* The value of one option as a double (method: its cm_method_t). */
CM_EXTERN int cm_options_get(cm_context_t *ctx, const cm_options_t *opts,
                             const char *name, double *value);
/* The checks every analysis runs on opts: CM_USAGE naming the first
 * option out of range. */
CM_EXTERN int cm_options_validate(cm_context_t *ctx, const cm_options_t *opts);

typedef struct cm_share {
  int index;      /* contact or body index in the scene */
  double share;   /* energy fraction in [0, 1] */
  char *name;     /* contact name / body label (owned by the report) */
  char *a_name;   /* contacts: label of body a (owned), NULL for bodies */
  char *b_name;   /* contacts: label of body b ("world"), NULL for bodies */
} cm_share_t;

typedef struct cm_mode {
  double omega;         /* rad/s */
  double lambda;        /* omega^2 */
  double residual;      /* ||S z - lambda z|| / lambda */
  double zeta;          /* effective damping ratio from the dashpots,
                           phi^T C phi / (2 omega), phi mass-normalised;
                           0 without dashpots */
  int component;        /* component index */
  int ncontacts;        /* entries in contacts */
  cm_share_t *contacts; /* top strain-energy shares e_c = k_c xi_c^2/lambda */
  int nbodies;          /* entries in bodies */
  cm_share_t *bodies;   /* top kinetic-energy shares */
  int ndofs;            /* entries in dofs */
  cm_share_t *dofs;     /* systems given as matrices: the dofs with the
                           top kinetic-energy participations phi_j (M
                           phi)_j (phi mass-normalised; they sum to 1 over
                           the component, and with a non-diagonal M one
                           can be negative or above 1), at most
                           options.top_bodies; index: the dof in M, name:
                           its col_names entry or "#index". Scenes: none */
} cm_mode_t;

typedef struct cm_component {
  int index;          /* component index */
  int nbodies;        /* moving bodies in it */
  int ncontacts;      /* contacts (rows) */
  int ndofs;          /* active dofs (columns) */
  double omega_max;   /* its largest frequency, rad/s (0 if none) */
  double omega_upper; /* its Gershgorin bound */
  int method;         /* cm_method_t actually used */
  int iterations;     /* Lanczos restarts (0 dense) */
  int matvecs;        /* operator applications */
  int converged;      /* 1 if every wanted Ritz pair met tol */
  int rank;           /* rank of its J, -1 if not computed (above
                         options.rank_max_rows) */
  int nlisted;        /* bodies listed */
  char **body_names;  /* up to 20 labels (owned) */
} cm_component_t;

typedef struct cm_step {
  double h_s;         /* critical step from omega_max, s; NAN = none */
  double certified_s; /* step from the rigorous omega_upper, s; NAN = none */
  double certified_prob_s; /* step from omega_upper_prob, s; NAN = none
                              (and for the damped central difference) */
  const char *note;   /* reason when h_s is NAN (static string) */
} cm_step_t;

typedef struct cm_report {
  int status;             /* CM_OK or CM_NOT_CONVERGED */
  double omega_max;       /* largest coupled angular frequency, rad/s */
  int nmodes;             /* modes listed (<= options.modes) */
  cm_mode_t *modes;       /* descending by omega */
  /* per-contact (separate scalar effective mass) estimate */
  double pc_omega_max;    /* max_c sqrt(k_c A_cc) */
  int pc_contact;         /* the contact attaining it */
  double pc_ratio;        /* omega_max / pc_omega_max */
  double omega_lower;     /* rigorous lower bound (= pc_omega_max) */
  double omega_upper;     /* rigorous Gershgorin upper bound */
  double omega_upper_prob;/* probabilistic upper bound, rad/s: holds except
                             with probability failure_probability
                             (docs/math.md); <= omega_upper */
  double failure_probability; /* as used */
  int prob_steps;         /* Lanczos steps of the probabilistic bound */
  /* time steps */
  /* the contact model */
  const char *model;      /* "normal springs only", "normal + tangential
                             springs", "normal springs + dashpots" or
                             "normal + tangential springs + dashpots"
                             (static) */
  int tangential;         /* 1: some contact has tangent rows */
  int dashpots;           /* 1: some contact has a dashpot */
  int nrows;              /* rows of J: contacts and their tangent rows */
  double damping_ratio;   /* as used */
  double newmark_gamma, newmark_beta;
  cm_step_t central_difference, rk3, rk4, explicit_euler, newmark;
  /* with dashpots, central_difference is the damped limit of velocity
   * Verlet with the dashpot force from the half-step velocity (the
   * engines'), lambda_max(h^2 M^-1 K + 2 h M^-1 C) = 4 (docs/math.md); */
  cm_step_t cd_undamped;  /* the same without the dashpots */
  double damped_modal_h_s;/* min over the listed modes of each mode's own
                             damped limit (>= the coupled one); NAN none */
  int damped_iterations;  /* eigen-solves of the damped-step search */
  int damped_component;   /* component whose mode sets it, -1 none */
  double damped_zeta;     /* that mode's effective damping ratio */
  double deck_timestep_s; /* the scene's deck time step, s; 0 none */
  double deck_fraction;   /* deck step / critical central-difference step */
  double freq_tol;        /* accuracy tolerance used */
  double accuracy_h_s;    /* CD step keeping the top-mode error < freq_tol */
  /* counts */
  int nbodies, moving_bodies, fixed_bodies, free_bodies;
  int ndofs, active_dofs, ncontacts, dropped_dofs;
  int free_motions;       /* dofs - rank J, -1 when a component is above
                             options.rank_max_rows */
  int zero_modes;         /* nc - rank J (redundant gaps), -1 likewise */
  const char *counts_note;/* why they are -1 (static), else NULL */
  int rank_sharp;         /* 1: what the sparse QR dropped as dependent is
                             at the rounding level; 0: near its tolerance
                             (J has singular values at the threshold: the
                             counts could differ by a few); -1 not ranked */
  /* components */
  int ncomp;              /* number of components */
  int ncomp_listed;       /* entries in components */
  cm_component_t *components; /* top ones by omega_max */
  int comp_max;           /* component that sets the step */
  /* solver */
  const char *method;     /* "lanczos", "arpack", "dense", "mixed" or "none" */
  int nev, ncv, iterations, matvecs, converged;
  int search_matvecs;     /* of matvecs: the Lanczos search for missed
                             copies of a repeated eigenvalue, after the
                             solve (0: none made) */
  double tol;
  /* timings, seconds */
  double t_parse, t_assemble, t_factor, t_operator, t_eigen, t_report;
  double t_matvec;        /* part of t_eigen spent in operator products
                             (Lanczos and ARPACK), s; C only: not in the
                             JSON report (docs/c-api.md) */
  /* dominant vector over scene rows (size nrows; over contacts when no
   * contact has tangent rows): for warm starts */
  int nstart;
  double *start_vector;
  /* accuracy warning (malloc'd, NULL when none): a near-singular inertia
   * tensor that limits omega_max to a relative accuracy of about
   * CM_INERTIA_DELTA_PER_COND x its condition number (docs/math.md) */
  char *warning;
  /* components tied at the top: those whose largest eigenvalue is within
   * the solver tolerance (options.tol, relative) of the largest; any of
   * them sets the step */
  int nties;         /* how many (1: one sets it; 0: no modes) */
  int nties_listed;  /* entries below: all, up to CM_TIES_LISTED */
  int *ties;         /* their component indices, ascending */
  char **tie_names;  /* a name for each: the part before the first '.'
                        that all its bodies' names share ("r2" for
                        "r2.trunk", "r2.leg0", ...), else its first body's
                        label; NULL entries for matrices */
  /* more of t_eigen, s (C only, like t_matvec): Lanczos re-orthogonalisation
   * of the basis, its thick restarts, and the projections out of the pairs
   * found in a search's steps; the residuals on S of every solve's pairs */
  double t_orth, t_restart, t_deflate, t_finish;
} cm_report_t;

#define CM_TIES_LISTED 1000 /* tied components listed (all are counted) */

/* Runs the whole pipeline on a scene. On CM_OK or CM_NOT_CONVERGED *out is a
 * report owned by the caller; on error *out is NULL. */
CM_EXTERN int cm_analyze(cm_context_t *ctx, const cm_scene_t *scene,
                         const cm_options_t *opts, cm_report_t **out);
/* The same from an assembled system (general M allowed). The scene, if not
 * NULL, supplies names for the report, its deck step, and, when it has
 * dashpots, the damped step (then sys must be assembled from it). */
CM_EXTERN int cm_analyze_system(cm_context_t *ctx, const cm_system_t *sys,
                                const cm_scene_t *scene,
                                const cm_options_t *opts, cm_report_t **out);
CM_EXTERN void cm_report_destroy(cm_report_t **report);

/* Mode shapes of a report's modes (cm_analyze_vectors), column p for
 * report mode p. Rows are scene rows: each contact's normal row, then its
 * tangent rows, in contact order (for matrices: the rows of J). Columns
 * are the system's active dofs (for matrices: col_dof is the dof's index
 * in M). */
typedef struct cm_vectors {
  int nmodes;       /* columns: the report's modes, in its order */
  int nrows;        /* rows of J */
  int ndofs;        /* active dofs: columns of J */
  double *z;        /* unit eigenvectors of S, nrows x nmodes col-major */
  double *xi;       /* gaps J phi = omega z / sqrt(k), nrows x nmodes */
  double *phi;      /* dof-space shapes, mass-normalised (phi^T M phi =
                       1): J^T K J phi = lambda M phi, ndofs x nmodes */
  int *row_contact; /* size nrows: scene contact of each row */
  int *row_kind;    /* size nrows: 0 normal, 1 and 2 tangents */
  int *col_body;    /* size ndofs: body of each column (-1: matrices) */
  int *col_dof;     /* size ndofs: local dof of that body (matrices: the
                       dof's index in M) */
} cm_vectors_t;

/* cm_analyze_system that also returns the mode shapes: on CM_OK or
 * CM_NOT_CONVERGED *vectors is owned by the caller (cm_vectors_destroy);
 * costs one more factorization of M and a solve per mode. */
CM_EXTERN int cm_analyze_vectors(cm_context_t *ctx, const cm_system_t *sys,
                                 const cm_scene_t *scene,
                                 const cm_options_t *opts, cm_report_t **out,
                                 cm_vectors_t **vectors);
CM_EXTERN void cm_vectors_destroy(cm_vectors_t **vectors);

/* Analysis object: one scene (or system) analysed by the pipeline of
 * cm_analyze_system, its report and, on request, its modes' shapes kept
 * for the caller, so a front end (cmodes verify and compare, the server)
 * asks for what it needs without running the pipeline again
 * (docs/c-api.md).
 *   create: checks opts (copied; NULL: defaults) and, when sys is NULL,
 *           assembles the system from scene (owned by the analysis). The
 *           scene, a given sys and opts->warm_start are borrowed: they must
 *           outlive the analysis. sys given with a scene must be assembled
 *           from it (as for cm_analyze_system); scene may be NULL with sys.
 *   solve:  runs the pipeline once; flags CM_ANALYSIS_VECTORS also keeps
 *           the modes' shapes. CM_OK, CM_NOT_CONVERGED (a partial report)
 *           or an error (then no report). Solving again replaces both.
 * Statuses: CM_USAGE for NULL arguments, bad options, a mode out of range
 * or asking for results before a solve; the pipeline's otherwise. */
typedef struct cm_analysis cm_analysis_t;
#define CM_ANALYSIS_VECTORS 1
CM_EXTERN int cm_analysis_create(cm_context_t *ctx, const cm_scene_t *scene,
                                 const cm_system_t *sys,
                                 const cm_options_t *opts,
                                 cm_analysis_t **out);
CM_EXTERN int cm_analysis_solve(cm_context_t *ctx, cm_analysis_t *analysis,
                                int flags);
/* The system analysed (borrowed; never NULL after create). */
CM_EXTERN const cm_system_t *
cm_analysis_system(const cm_analysis_t *analysis);
/* The report of the last solve, borrowed (NULL before a solve or after a
 * failed one); the same bits as cm_analyze_system's. */
CM_EXTERN const cm_report_t *
cm_analysis_report(const cm_analysis_t *analysis);
/* Hands the report to the caller (cm_report_destroy); NULL as above. */
CM_EXTERN cm_report_t *cm_analysis_take_report(cm_analysis_t *analysis);
/* All modes' shapes (borrowed; NULL unless solved with
 * CM_ANALYSIS_VECTORS). */
CM_EXTERN const cm_vectors_t *
cm_analysis_vectors(const cm_analysis_t *analysis);
/* Report mode k (0 = the highest): its omega and pointers (borrowed, NULL
 * allowed for what is not wanted) to its column of phi (ndofs), z and xi
 * (nrows) in cm_analysis_vectors(). CM_USAGE naming k when out of range or
 * when the analysis holds no shapes. */
CM_EXTERN int cm_analysis_mode(cm_context_t *ctx,
                               const cm_analysis_t *analysis, int k,
                               double *omega, const double **phi,
                               const double **z, const double **xi);
CM_EXTERN void cm_analysis_destroy(cm_analysis_t **analysis);

/* JSON report (docs/report-format.md): malloc'd text, caller frees; NULL on
 * failure. flags: CM_JSON_INDENT for pretty output, CM_JSON_NO_TIMINGS to
 * omit the timings (for bitwise comparisons). */
#define CM_JSON_INDENT 1
#define CM_JSON_NO_TIMINGS 2
CM_EXTERN char *cm_report_to_json(const cm_report_t *report, int flags);
/* Human-readable report. */
CM_EXTERN int cm_report_write_text(const cm_report_t *report, FILE *out);
/* The HTML page of `cmodes report` (docs/reports.md) for a system, and its
 * scene (NULL for matrices): runs the analysis with opts (NULL: defaults)
 * again, with the full arrays its pictures need and, for a scene of up to
 * 1e5 contacts, the softening plan, and returns the self-contained page in
 * *html (malloc'd, caller frees). Returns the analysis' status. For
 * notebooks (Python's Report._repr_html_). */
CM_EXTERN int cm_report_html(cm_context_t *ctx, const cm_system_t *sys,
                             const cm_scene_t *scene,
                             const cm_options_t *opts, const char *title,
                             char **html);

/* ------------------------------------------------------------------------ */
/* Spectrum of one operator (no component split): for compare and benches   */
/* ------------------------------------------------------------------------ */

typedef struct cm_spectrum {
  int nev;            /* pairs found */
  double *lambda;     /* descending, size nev */
  double *residual;   /* relative residuals, size nev */
  double *z;          /* eigenvectors of S, nc x nev column-major, or NULL */
  int method;         /* cm_method_t used */
  int ncv, iterations, matvecs, converged;
  int search_matvecs; /* of matvecs: the search for missed copies */
  double seconds;     /* wall time */
  double matvec_seconds; /* of which in operator applications (Lanczos) */
} cm_spectrum_t;

/* Top opts->modes eigenpairs of S for component comp (-1: whole operator,
 * which must then have one component or be dense). */
CM_EXTERN int cm_spectrum_solve(cm_context_t *ctx, cm_operator_t *op,
                                int comp, const cm_options_t *opts,
                                cm_spectrum_t **out);
CM_EXTERN void cm_spectrum_destroy(cm_spectrum_t **spec);

/* ------------------------------------------------------------------------ */
/* Time-step formulas (undamped unless stated; omega in rad/s, h in s)       */
/* ------------------------------------------------------------------------ */

/* Central difference / leapfrog / velocity Verlet / symplectic Euler with
 * modal damping ratio zeta: 2 (sqrt(1 + zeta^2) - zeta) / omega. */
CM_EXTERN double cm_step_central_difference(double omega, double zeta);
CM_EXTERN double cm_step_rk3(double omega); /* sqrt(3) / omega */
CM_EXTERN double cm_step_rk4(double omega); /* 2 sqrt(2) / omega */
/* Newmark(gamma, beta): NAN when unconditionally stable (2 beta >= gamma),
 * else 1 / (omega sqrt(gamma/2 - beta)). gamma must be >= 1/2. */
CM_EXTERN double cm_step_newmark(double omega, double gamma, double beta);
/* Largest CD step with (2/h) asin(h omega/2) / omega - 1 <= tol. */
CM_EXTERN double cm_step_accuracy(double omega, double tol);

/* Modules with their own headers. */
#include "cmodes/generate.h"
#include "cmodes/import.h"
#include "cmodes/verify.h"

#ifdef __cplusplus
}
#endif

#endif /* CMODES_H */
