/* mpi_internal.h: what the parts of cmodes-mpi share (docs/distributed.md):
 * error agreement across ranks, the halo plan, the solve of a component spread
 * over ranks and the records gathered into the report. */
#ifndef CM_MPI_INTERNAL_H
#define CM_MPI_INTERNAL_H

#include "part.h"

#include <mpi.h>

/* Every rank's status st agreed on comm: the first failing rank's status
 * and message (into ctx on every rank), or the largest warning, or 0. */
int cm__mpi_agree(cm_context_t *ctx, int st, MPI_Comm comm);

/* Growable array of doubles: the records gathered into the report. */
typedef struct {
  double *v;
  size_t n, cap;
  int nomem;
} cm__dbuf_t;
void cm__dbuf_push(cm__dbuf_t *b, double x);
void cm__dbuf_free(cm__dbuf_t *b);

/* A mode record: lambda, omega, residual, zeta, component, nc, nb, then nc
 * (contact position, share) and nb (body position, share) pairs (a matrix
 * system's: (row, share) and (dof, share), indices of its input). A
 * component record: omega_max, omega_upper, component, bodies, rows, dofs,
 * method, iterations, matvecs, converged, rank, nlisted, then nlisted body
 * positions. */
#define CM__REC_MODE 1.0
#define CM__REC_COMP 2.0
/* A component's top (every component of a matrix system, listed or not,
 * for the components tied at the top): omega_max, 0, component. */
#define CM__REC_TOP 3.0
/* The length of the record at p, in doubles. */
size_t cm__mpi_rec_len(const double *p);

/* --vectors: this rank's mode shapes (vectors.c). */
typedef struct cm__mpi_vecs cm__mpi_vecs_t;

/* One rank's part of the scene. */
typedef struct {
  int rank, np, dim, nd; /* nd: dofs per body (3 or 6) */
  cm__part_file_t *f;
  int64_t *cut;                 /* np + 1 */
  int64_t b0, b1;               /* owned component bodies [b0, b1) */
  int64_t c0, c1;               /* owned contacts [c0, c1) */
  cm__part_body_t *bodies;      /* b1 - b0 */
  cm__part_contact_t *contacts; /* c1 - c0 */
  int64_t *corig;               /* c1 - c0: scene index of each contact */
  int64_t *borig;               /* b1 - b0 */
  uint64_t *bcs;                /* b1 - b0 + 1: owned contacts per body */
  int dashpots;                 /* the scene has dashpots (all ranks) */
  cm__mpi_vecs_t *vecs;         /* --vectors: the shapes kept (NULL: none) */
} cm__mpi_part_t;

/* Sums over the rank's part that go into the report's counts. */
typedef struct {
  double active_dofs, rows;
  double pc_omega, pc_contact; /* scene index of the contact, -1 none */
  double omega_upper, omega_upper_prob;
  double iterations, matvecs, ncv, converged, notconv;
  double search_matvecs; /* of matvecs: the searches for missed copies */
  double n_dense, n_arpack, n_lanczos;
  double t_eigen, t_operator, prob_steps;
  /* this rank's halo (summed over its spread components): bodies copied
   * in, messages and bytes it sends per product of S, products, seconds
   * in products */
  double halo_bodies, halo_msgs, halo_bytes, products, t_products;
  double timed_out; /* solves stopped by --max-seconds */
  /* with dashpots, the damped central-difference limit of this rank's
   * groups (its components alone; a cut component on its first rank),
   * the smallest: the limit, its certified step, the mode's zeta and
   * component, the search's solves, how the certified step was
   * certified (CM__CERT_*, below) (INFINITY, -1: none);
   * damp_fail: cut components whose search did not finish (the time
   * budget, no converged vector): then no damped step is given */
  double damp_h, damp_cert, damp_zeta, damp_comp, damp_iter, damp_cw;
  double damp_fail;
} cm__mpi_sums_t;

/* Counts over the rank's part that go into the report besides the sums
 * (bodies, the rank of J, the model, timings). */
typedef struct {
  double moving, fixed, free_moving, free_motions, zero_modes, unknown_rank;
  double tangential, dashpots, prob_steps, t_assemble, t_factor;
  double unknown_late; /* a rank of J not computed: the budget ran out */
  double rank_dropped; /* the largest of the components' (a maximum; a
                          local report's unsharp rank counts as 1) */
} cm__mpi_more_t;

/* `cmodes-mpi analyze`'s command line (main.c). */
typedef struct {
  cm_options_t opts;
  int threads, json, notime, part;
  int matrices;        /* --matrices: a matrix system (matrices.c) */
  const char *path;    /* the partitioned scene, or the manifest */
  const char *mtx[3];  /* --matrices M.mtx J.mtx k.mtx, else NULL */
  const char *vectors; /* --vectors FILE, NULL: none */
} cm__args_t;

/* Where the report's names and totals come from: a partitioned scene's
 * file (its names read on rank 0), or a matrix system that rank 0 holds
 * whole (matrices.c); one of the two is NULL. */
typedef struct {
  const cm__part_file_t *f;
  const cm_system_t *msys;
} cm__mpi_src_t;

/* ---- the report (main.c), shared with matrices.c ---- */

/* The components a rank's serial analysis lists (top_components): all of
 * its ncomp up to the option's maximum (1000), so that rank 0 sees every
 * component tied at the top (a rank's tied components are its largest)
 * while it lists the top opts->top_components of all. */
#define CM__MPI_LIST_MAX 1000
int cm__mpi_list_comps(int ncomp, const cm_options_t *opts);

/* A rank's serial report r into the sums and counts (the per-contact
 * bound excepted: cm__mpi_sums_pc). */
void cm__mpi_local_sums(const cm_report_t *r, cm__mpi_sums_t *sums,
                        cm__mpi_more_t *more);
/* The per-contact bound omega of contact index (the scene's, or the
 * matrix system's row) when above the sums' so far. */
void cm__mpi_sums_pc(cm__mpi_sums_t *sums, double omega, double index);
/* Gathers every rank's sums and records (recs) to rank 0, which builds
 * the report of src into *rep. part: this rank's row of the --partition
 * table (two ranges). Collective; errors agreed. */
int cm__mpi_gather_report(cm_context_t *ctx, const cm__mpi_src_t *src,
                          const double part[4], const cm__args_t *a, int nspan,
                          const cm__dbuf_t *recs, const cm__mpi_sums_t *sums,
                          const cm__mpi_more_t *more, double t_read,
                          cm_report_t **rep);
/* Rank 0: prints the report (text or JSON) and the not-converged warning. */
void cm__mpi_print_report(const cm_report_t *rep, const cm__args_t *a, int st,
                          int timed_out);

/* ---- --matrices (matrices.c) ---- */

/* `cmodes-mpi analyze --matrices`: rank 0 reads the system, splits it by
 * whole components over the ranks, each analyses its part with the serial
 * pipeline; returns the exit code. */
int cm__mpimat_analyze(cm__args_t *a, int rank, int np);
/* Row index (the input's) of the system's names: into s (name from
 * row_names, no body names). CM_NOMEM when a copy fails. */
int cm__mpimat_share_row(const cm_system_t *sys, int64_t index, cm_share_t *s);
/* Dof index (M's) as the serial names it: col_names, else "#index". */
int cm__mpimat_share_dof(const cm_system_t *sys, int64_t index, cm_share_t *s);
/* Component c's name as the serial report gives it (analyze.c). */
char *cm__mpimat_comp_name(const cm_system_t *sys, int c);

/* Empties *f (no file open) and *P, and sets P's rank, np and file: the
 * state cm__part_open and cm__part_load start from. */
void cm__part_prepare(cm__mpi_part_t *P, cm__part_file_t *f, int rank, int np);
/* Reads this rank's part of P->f (P->rank, P->np set): the partition,
 * its bodies, contacts and their origins (load.c). */
int cm__part_load(cm_context_t *ctx, cm__mpi_part_t *P);
void cm__part_free(cm__mpi_part_t *P);
/* The components cut by the partition, ascending (the same on every rank),
 * into span (np entries); returns their number. */
int cm__cut_components(const cm__mpi_part_t *P, int *span);

/* A key (a scene or input index) and a position: sorted by key with
 * cm__ord_cmp (qsort), a sub-scene or sub-system is listed in the input's
 * order. */
typedef struct {
  int64_t key, i;
} cm__ord_t;
int cm__ord_cmp(const void *pa, const void *pb);

/* Body record r as a moving body of a sub-scene. Cannot fail. */
cm_body_t cm__body_from(const cm__part_body_t *r);

/* Contact record r with its bodies mapped to sub-scene indices sa, sb
 * (CM_WORLD for the world or a fixed body; a fixed a is swapped to b, the
 * normal and arms flipped). Cannot fail. */
cm_contact_t cm__contact_to(const cm__part_contact_t *r, int sa, int sb);

/* Solves component comp spread over the ranks of cc (this rank's rank
 * there: the participants), appending its mode and component records to
 * out on cc's rank 0 and adding to sums. deadline (MPI_Wtime() on this
 * rank, 0 = none): --max-seconds; past it every rank of cc stops PARPACK
 * together and the partial basis gives Rayleigh-Ritz pairs (not
 * converged), as in the serial solve. */
int cm__mpi_span_solve(cm_context_t *ctx, const cm__mpi_part_t *P, int comp,
                       MPI_Comm cc, const int *members,
                       const cm_options_t *opts, double deadline,
                       cm__dbuf_t *out, cm__mpi_sums_t *sums);

/* Lower Cholesky factor of the body's world mass block (nd x nd,
 * row-major into L); 0, or -1 when it is not positive definite (span.c). */
int cm__body_chol(int dim, const cm__part_body_t *b, double *L);

/* --vectors (vectors.c). init: P->vecs for this rank's part (read); free:
 * accepts none. local: the shapes of the serial analysis of this rank's
 * components (r, vec; gcomp, cidx, bpos map its components, contacts and
 * bodies to the file's). mask: the active dofs of owned bodies
 * [i0, i0 + no) (cnt > 0 per dof; span.c). span: a cut component's mode
 * (span.c's cm__span_mode, collective on cc): the unit z on this rank's
 * nloc rows (the owned contacts [k0, k1) of it), its first global row
 * goff, u = B^T z on the owned bodies [o0, o0 + no) and lambda. nomem: an
 * allocation failed on this rank. write: rank 0 writes path (collective
 * on every rank; rep on rank 0). */
int cm__mpi_vecs_init(cm_context_t *ctx, cm__mpi_part_t *P);
void cm__mpi_vecs_free(cm__mpi_part_t *P);
void cm__mpi_vecs_local(cm__mpi_vecs_t *v, const cm__mpi_part_t *P,
                        const cm_vectors_t *vec, const cm_report_t *r,
                        const int *gcomp, const int *cidx, const int64_t *bpos);
void cm__mpi_vecs_mask(cm__mpi_vecs_t *v, int64_t i0, int no, int nd,
                       const double *cnt);
void cm__mpi_vecs_span(cm__mpi_vecs_t *v, const cm__mpi_part_t *P, int comp,
                       MPI_Comm cc, const double *z, int nloc, int k0, int k1,
                       long long goff, const double *u, int64_t o0, int no,
                       double lambda);
int cm__mpi_vecs_nomem(const cm__mpi_part_t *P);
int cm__mpi_vecs_write(cm_context_t *ctx, const cm__mpi_part_t *P,
                       const cm_report_t *rep, const char *path);

/* The rank of J of component comp cut by the partition, collective on cc
 * (the ranks that hold it; rank.c): its rows and dofs (all moving, 3 or 6
 * per body) into *rows and *ndofs; *rank -1 when it has more than max_rows
 * rows (> 0), -2 when deadline (MPI_Wtime(), 0 = none) has passed, else
 * the rank of the serial's J (gathered on cc's rank 0 and ranked there),
 * with what its QR dropped into *near (cm__system_rank's). */
int cm__mpi_cut_rank(cm_context_t *ctx, const cm__mpi_part_t *P, int comp,
                     MPI_Comm cc, int max_rows, double deadline, int *rank,
                     double *rows, double *ndofs, double *near);

/* The distributed operator of component comp over cc alone (built,
 * bounded and scaled as cm__mpi_span_solve does it), for the SLEPc bench
 * bench/slepc/bench_mpi_slepc.c: *S opaque; info: local rows, the first
 * global row, all rows, the scale s; start: the solve's start vector
 * (keyed by the global row); apply: y = S x / s; products: the products
 * so far and their seconds; parpack: the PARPACK solve of the options
 * (its eigenvalues descending, times s). */
int cm__mpi_bench_open(cm_context_t *ctx, const cm__mpi_part_t *P, int comp,
                       MPI_Comm cc, const int *members,
                       const cm_options_t *opts, void **S);
void cm__mpi_bench_info(void *S, int *nloc, long long *goff, long long *N,
                        double *scale);
void cm__mpi_bench_start(void *S, double *x);
void cm__mpi_bench_apply(void *S, const double *x, double *y);
long cm__mpi_bench_products(void *S, double *seconds);
int cm__mpi_bench_parpack(cm_context_t *ctx, void *S, const cm_options_t *opts,
                          double *lambda, int *nconv);
void cm__mpi_bench_close(void **S);

/* ---- the certified damped step of a cut component (schur.c) ---- */

/* How a damped step was certified (cm__mpi_sums_t's damp_cw): */
#define CM__CERT_FACTOR 0 /* a CHOLMOD factorization on one rank (damped.c) */
#define CM__CERT_GERSH 1  /* Gershgorin bounds (a cut component) */
#define CM__CERT_CW 2     /* a Collatz-Wielandt bound (a cut component) */
#define CM__CERT_SCHUR                                                         \
  3 /* factorizations of the ranks' interiors and the                          \
       Schur complement on the shared dofs: exact */
/* added to CM__CERT_GERSH or CM__CERT_CW: why a cut component was not
 * factored */
#define CM__CERT_OVER_CAP 4  /* more shared dofs than the Schur cap */
#define CM__CERT_OVER_DOFS 8 /* above CM__MPI_DEFINITE_MAX_DOFS */
#define CM__CERT_OVER_BUDGET                                                   \
  16 /* the factorization would not fit in the                                 \
        time budget (--max-seconds) */

/* Components up to this many active dofs are certified exactly (as
 * damped.c's CM__DEFINITE_MAX_DOFS: the serial cmodes factors up to it). */
#define CM__MPI_DEFINITE_MAX_DOFS 300000
/* The default cap on a cut component's interface dofs for the Schur test:
 * the dense Schur complement on rank 0 is 8 cap^2 bytes (288 MB) and its
 * Cholesky cap^3 / 3 flops (7.2e10). CMODES_MPI_SCHUR_MAX_DOFS (a test
 * knob, docs/distributed.md) lowers or raises it. */
#define CM__MPI_SCHUR_MAX_DOFS 6000
/* The largest cap accepted (a piece's nGr^2 entries go in one message of
 * int count; 12.8 GB dense) */
#define CM__MPI_SCHUR_MAX_CAP 40000

/* The interface plan of a cut component (span.c builds it from the halo
 * plan; schur.c uses it). A dof is a column slot nd + d of the rank's
 * rows of B (mass-normalised coordinates), active when some rank's rows
 * have an entry there. Interface (shared) bodies: a halo body of some
 * rank, and the owned bodies of a contact with one. */
typedef struct {
  int ndof;        /* slot dofs: nslot nd */
  int nown;        /* owned slot dofs: no nd (the rank adds sigma I there) */
  int nI, nGr;     /* interior dofs (owned bodies not shared), interface
                      dofs this rank's rows or bodies touch */
  long long nG;    /* interface dofs of the component (every rank) */
  int *col;        /* ndof: local index of each slot dof: interior in
                      [0, nI), interface in [nI, nI + nGr), -1 inactive */
  long long *gidx; /* nGr: the global interface index of each local
                      interface dof (owners' ranks in order, then bodies) */
} cm__schur_plan_t;

void cm__schur_plan_free(cm__schur_plan_t *pl);

/* The cap on interface dofs: CMODES_MPI_SCHUR_MAX_DOFS when set (a
 * integer in [0, CM__MPI_SCHUR_MAX_CAP], else -1), CM__MPI_SCHUR_MAX_DOFS
 * otherwise. */
long cm__mpi_schur_cap(void);

/* The steps h (at most max) of CMODES_MPI_SCHUR_PROBE ("H1,H2,...": a
 * test knob, docs/distributed.md) into h: their number, -1 malformed. At
 * each, the Schur test's answer is printed to stderr (rank 0 of a cut
 * component's ranks), for a test against a dense Cholesky of A. */
int cm__mpi_schur_probes(double *h, int max);

/* Whether sigma I - B~^T B~ is positive definite, B~ = diag(rs) B the rows
 * of every rank of cc (this rank's: nloc rows in CSR Bp, Bj, Bx over the
 * slot dofs of pl), by a CHOLMOD factorization of each rank's interior
 * block and a dense Cholesky (LAPACK) of the Schur complement on the
 * interface, summed on rank 0 of cc. *ok the same on every rank.
 * Collective on cc; errors agreed (out of memory: every rank fails). */
int cm__mpi_schur_definite(cm_context_t *ctx, const cm__schur_plan_t *pl,
                           int nloc, const int *Bp, const int *Bj,
                           const double *Bx, const double *rs, double sigma,
                           MPI_Comm cc, int *ok);

/* The report's central_difference reason for a damped step certified as
 * kind says (CM__CERT_*), NULL for CM__CERT_FACTOR. Cannot fail. */
const char *cm__mpi_damped_reason(int kind);

#endif
