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
 * (contact position, share) and nb (body position, share) pairs. A
 * component record: omega_max, omega_upper, component, bodies, rows, dofs,
 * method, iterations, matvecs, converged, rank, nlisted, then nlisted body
 * positions. */
#define CM__REC_MODE 1.0
#define CM__REC_COMP 2.0

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
   * component, the search's solves, 1 when the certified step came from
   * a Collatz-Wielandt bound of a cut component (INFINITY, -1: none);
   * damp_fail: cut components whose search did not finish (the time
   * budget, no converged vector): then no damped step is given */
  double damp_h, damp_cert, damp_zeta, damp_comp, damp_iter, damp_cw;
  double damp_fail;
} cm__mpi_sums_t;

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
 * the rank of the serial's J (gathered on cc's rank 0 and ranked there). */
int cm__mpi_cut_rank(cm_context_t *ctx, const cm__mpi_part_t *P, int comp,
                     MPI_Comm cc, int max_rows, double deadline, int *rank,
                     double *rows, double *ndofs);

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

#endif
