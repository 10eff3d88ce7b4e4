/* spectrum_internal.h: eigen-solves of one component, by backend.
 * The operator of a component with m rows and n columns is S = B B^T (m x m)
 * when m <= n, else G = B^T B (n x n): the same nonzero spectrum. */
#ifndef CM_SPECTRUM_INTERNAL_H
#define CM_SPECTRUM_INTERNAL_H

#include "operator/operator_internal.h"

typedef struct {
  int nev;        /* pairs found (descending, all with lambda > 0) */
  double *lambda; /* size nev */
  double *z;      /* unit eigenvectors of S over the component rows, m x nev */
  double *res;    /* ||S z - lambda z|| / lambda, size nev */
  double *bz;     /* B^T z of each pair over the component's columns, n x
                     nev (the first n nev entries of a workspace buffer),
                     from cm__eig_finish's residual products, for the
                     report's body shares; NULL when not kept */
  int method;     /* CM_METHOD_DENSE, _ARPACK or _LANCZOS */
  int ncv, iterations, matvecs, converged;
  int search_matvecs; /* of matvecs: the search for missed copies of a
                         repeated eigenvalue (Lanczos: lz_search) */
  int rank;           /* rank of B (dense only), -1 if unknown */
  double t_matvec;    /* seconds spent in operator applications */
  /* where the rest of a solve goes, seconds (cm_report_t's): Lanczos
   * re-orthogonalisation, thick restarts, the projections out of the pairs
   * found (a search's steps); residuals on S (cm__eig_finish, any method) */
  double t_orth, t_restart, t_deflate, t_finish;
  int rayleigh; /* cm__eig_finish replaces lambda by z^T S z */
  int f32;      /* Lanczos: the solve's products read B's float values
                   (lambda, res and z are still those of S) */
  int basis32;  /* Lanczos: a solve kept its basis in float
                   (cm__lz_basis32_min) */
  /* the probabilistic bound from the Lanczos solve's own first cycle (an
   * unrestarted run from a Gaussian start, bound.c's theorem; its steps
   * are among matvecs), or after a warm start from bound.c's run, made by
   * the solve before its search (not among matvecs); asked for by
   * cm__eig_component's pb_delta: pb_steps > 0 when it was taken */
  int pb_steps;    /* k: the Krylov dimension it comes from */
  double pb_upper; /* lambda_max <= pb_upper but with probability pb_delta */
  double pb_theta; /* the top eigenvalue of T_k (a lower estimate) */
  double pb_eps;   /* the theorem's eps at k */
} cm__eig_t;

/* Drops an attempt (its error included: ctx cleared, out freed) and
 * returns what it cost (iterations, products, times); cm__eig_add_cost
 * adds that to the attempt that replaces it. */
cm__eig_t cm__eig_drop(cm_context_t *ctx, cm__eig_t *out);
void cm__eig_add_cost(cm__eig_t *out, const cm__eig_t *spent);

/* Top nev eigenpairs of component comp (-1: all). start: optional start
 * vector over the component rows (size m), else a Gaussian one. deadline: an
 * absolute cm__now() time after which ARPACK stops with a partial result
 * (0: none). pb_delta > 0: also the probabilistic bound with that failure
 * probability from the Lanczos solve's first cycle where it can (no warm
 * start; out->pb_steps says whether it did). Returns CM_OK,
 * CM_NOT_CONVERGED (partial, out filled) or an error; out is zeroed first
 * and owned by the caller (cm__eig_free). */
int cm__eig_component(cm_context_t *ctx, cm_operator_t *op, int comp,
                      const cm_options_t *opts, const double *start,
                      double deadline, double pb_delta, cm__eig_t *out);
void cm__eig_free(cm__eig_t *e);
/* 1 if a component with m rows and n columns is solved densely. */
int cm__eig_is_dense(const cm_options_t *opts, int m, int n);

/* Backends. op_dim: size of the operator (m or n), use_S: 1 for S. */
int cm__eig_dense(cm_context_t *ctx, cm_operator_t *op, int comp, int nev,
                  cm__eig_t *out);
int cm__eig_arpack(cm_context_t *ctx, cm_operator_t *op, int comp,
                   const cm_options_t *opts, const double *start,
                   double deadline, cm__eig_t *out);
int cm__eig_lanczos(cm_context_t *ctx, cm_operator_t *op, int comp,
                    const cm_options_t *opts, const double *start,
                    double deadline, double pb_delta, cm__eig_t *out);

/* The search for missed copies of a repeated eigenvalue (lanczos.c: the
 * top of the operator deflated by the pairs found, from fresh Gaussian
 * starts) run on another backend's converged pairs: *k pairs, lam
 * descending (of the operator, not scaled), *vecs N x *k orthonormal over
 * the operator (malloc'd). When a copy is listed, lam (room for
 * min(modes, N - 1)), *vecs (realloc'd) and *k are replaced and
 * out->rayleigh set; out gets the products. */
int cm__eig_copies(cm_context_t *ctx, cm_operator_t *op, int comp,
                   const cm_options_t *opts, double deadline, int *k,
                   double *lam, double **vecs, cm__eig_t *out);

/* Sizes of an iterative solve of component comp: the operator (S when
 * rows <= columns), nev = min(modes, N - 1), the basis ncv (options, else
 * auto_ncv(nev, N), at most N); fills out's method, rank and ncv. Returns
 * CM_USAGE unless nev < ncv <= N. */
typedef struct {
  int r0, m, c0, n; /* the component's rows and columns */
  int use_S, N, other, nev, ncv;
  double scale;  /* s: a power of two near max_c S_cc; the backends
                    iterate on Op / s (cm__eig_scale) */
  double gabs;   /* max row sum of |B||B|^T over the component (at least
                    || |B^T| |B| ||), NAN when unknown (cm__eig_scale) */
  uint64_t seed; /* start-vector seed derived from the operator */
  int f32;       /* Lanczos: the solve's products on B's float values */
} cm__eig_dims_t;
int cm__eig_dims(cm_context_t *ctx, cm_operator_t *op, int comp,
                 const cm_options_t *opts, int method,
                 int (*auto_ncv)(int nev, int N), cm__eig_t *out,
                 cm__eig_dims_t *d);

/* The scale s of component comp's operator: the power of two nearest
 * below max_c S_cc (a Rayleigh quotient: lambda_max / s lies in
 * [1, N]), so that every backend works on Op / s, whose top eigenvalue is
 * of order one at any physical scale, and scaling is exact. Also a seed
 * hashed from the sizes and a few of those diagonal entries. For a
 * general M (whose row sums take n solves) s comes from a Rayleigh
 * quotient of a Gaussian vector after two products instead. */
int cm__eig_scale(cm_context_t *ctx, cm_operator_t *op, int comp, int use_S,
                  double *scale, uint64_t *seed, double *gabs);

/* y = (1/s) Op x for the component: S = B B^T (use_S) or G = B^T B, the
 * factor inv_s = 1/s applied between the two halves (no intermediate
 * leaves the normal range for any accepted scene); tmp has room for the
 * other side. */
void cm__eig_apply(cm_operator_t *op, int comp, int use_S, double inv_s,
                   const double *x, double *y, double *tmp);
/* A standard normal number keyed by (seed, i): Box-Muller on two
 * counter-based uniforms, the same at any thread count. */
double cm__gauss(uint64_t seed, uint64_t i);
/* From this tolerance the Lanczos solve's products read B's float values
 * (S32, cm__eig_lanczos). */
#define CM__LZ_F32_TOL 1e-6
/* The least operator size whose Lanczos basis is kept in float where the
 * solve runs on S32: 2^19 rows (a 48-vector basis of 192 MiB in double);
 * from it, too, the analysis forms B's values in float only
 * (cm__eig_vals32). Tests set it lower. */
extern int cm__lz_basis32_min;
/* 1 when an analysis with these options of a system with `rows` rows (a
 * block-path operator) would solve it with Lanczos on S32 at a size that
 * keeps the basis in float: the operator is then made with float values
 * only (cm__operator_create). */
int cm__eig_vals32(const cm_options_t *opts, long rows);
/* The Lanczos restart's basis combination, for bench_step --kernels:
 * Out[:, p] = sum_c V[:, c] Y[c, p] (p < ncol, c < J; V and Out n rows,
 * Y J x ncol), with the Gram matrix of [Out, x] into G ((ncol + 1)^2)
 * when G is given; on the kernel set in use, th threads. Returns -1 when
 * out of memory. */
int cm__lz_combine(int n, const double *V, int J, const double *Y, int ncol,
                   double *Out, const double *x, double *G, int th);
/* The start vector of the iterative backends (size N of the operator): the
 * warm start mapped to the operator plus a little Gaussian noise, or a
 * Gaussian vector keyed by (seed, global index) alone (uniform direction on
 * the sphere); the same bits in any process and at any thread count. */
void cm__eig_start(cm_operator_t *op, int comp, int use_S, int N, uint64_t seed,
                   const double *start, double *resid);

/* The probabilistic upper bound of bound.c on lambda_max of component
 * comp: a plain (unrestarted) Lanczos run from its own Gaussian start,
 * steps until lambda_max <= theta / (1 - eps) holds except with
 * probability delta (Kuczynski-Wozniakowski) with 1 / (1 - eps) <= 1.04,
 * or 500 steps, or a breakdown. upper is INFINITY when eps >= 1 (a
 * breakdown after too few steps for the theorem to say anything). */
typedef struct {
  double upper;   /* lambda_max <= upper with probability >= 1 - delta */
  double theta;   /* the run's top Ritz value (a lower estimate) */
  double eps;     /* the theorem's relative gap at the last step */
  int steps;      /* Lanczos steps (= matvecs) */
  double seconds; /* wall time of the run */
} cm__eig_bound_t;
int cm__eig_prob_bound(cm_context_t *ctx, cm_operator_t *op, int comp,
                       double delta, cm__eig_bound_t *res);
/* Both bounds stop a run once lambda_max <= (1 + CM__PB_TARGET) theta,
 * or after CM__PB_MAX_STEPS steps; a run of its own starts from a
 * Gaussian vector keyed by CM__PB_SEED (cmodes-mpi's too). */
#define CM__PB_TARGET 0.04
#define CM__PB_MAX_STEPS 500
#define CM__PB_SEED 0x70726f6261626c65ULL /* "probable" */
/* The theorem's parts, shared with the solve's first cycle (lanczos.c):
 * the steps k after which the bound lies within 4% of theta_k (at most
 * 500) for operator size N and failure probability delta; the bound from
 * k steps (theta: top Ritz value of T_k, allow: rounding allowance, bk:
 * the residual norm at a breakdown, NAN if none; eps_out: the theorem's
 * eps), in the units of theta; the top eigenvalue of the k x k
 * tridiagonal (a, b) by bisection, and ||T||_1 into *tn (NAN on failure). */
int cm__kw_steps(double N, double delta);
double cm__kw_upper(double N, int k, double theta, double allow, double bk,
                    double delta, double *eps_out);
double cm__kw_top(int k, const double *a, const double *b, double *tn);

/* The a posteriori bound of bound.c from the Krylov polynomials of a run
 * from a Gaussian start: lambda_max < t except on the event |u . b| < eta
 * that the breakdown bound already excludes (no probability of its own)
 * when 1 / p_k(t) + rho(t) <= eta. All in the run's units. */
typedef struct {
  int k;           /* steps: alpha_0 .. alpha_{k-1} */
  const double *a; /* alpha_j */
  const double *b; /* beta_j, j < k (beta_{k-1}: the last residual) */
  const double *D; /* re-orthogonalisation coefficients, column j at D +
                      j * ldd, entries q <= j, for j < kd; NULL: none */
  size_t ldd;
  int kd;
  double lo;   /* t must pass it: theta_k + ||D|| + rounding */
  double eta;  /* cm__post_eta(N, delta) */
  double epsf; /* bound on one step's rounding error (norm) */
} cm__post_t;
/* Fills q for k steps of a run on an operator of size N (theta: top
 * eigenvalue of T_k, tn: ||T_k||_1, dn: a bound on ||D||, terms and gabs:
 * cm__op_sum_terms and cm__eig_dims_t's gabs in the run's units); 0 when
 * no certificate can be made (unknown rounding, a zero beta). */
int cm__post_init(cm__post_t *q, double N, double delta, int k, const double *a,
                  const double *b, const double *D, size_t ldd, int kd,
                  double dn, double theta, double tn, int terms, double gabs);
double cm__post_eta(double N, double delta);
/* A step's rounding bound for a product whose entries sum at most `terms`
 * terms, on an operator with gabs (|B^T||B| norm bound) and ||T||_1 tn,
 * after k steps; NAN when gabs or terms are unknown (no a posteriori
 * bound then). */
double cm__post_epsf(int terms, double gabs, double tn, int k);
/* 1 when the certificate holds at t. */
int cm__post_check(const cm__post_t *q, double t);
/* The smallest t (to 1e-12) where it holds, searched below hi (where it
 * must hold); INFINITY when it does not hold at hi. */
double cm__post_upper(const cm__post_t *q, double hi);

/* Largest size the dense routines below solve in their own loops, with the
 * same bits on every CPU (dense.c); above it, OpenBLAS's. */
#define CM__SMALL_N 512

/* Symmetric eigen-solve of a dense N x N column-major A (its upper
 * triangle; destroyed): the top k pairs (all N when k >= N), ascending,
 * into w (size N) and Z (N x k). Returns the number found, -1 (LAPACK
 * failed) or -2 (out of memory). */
int cm__syevr_top(int N, double *A, int k, double *w, double *Z);
/* cm__syevr_top, but up to CM__SMALL_N only the last kz columns of Z (the
 * top kz pairs) are A's eigenvectors: the others are not formed. */
int cm__syevr_vecs(int N, double *A, int k, int kz, double *w, double *Z);
/* The top k pairs (ascending) of the N x N symmetric tridiagonal with
 * diagonal d and off-diagonal e (e[N - 1] used as scratch; both
 * overwritten), by LAPACK's dstemr (the same bits on every OpenBLAS pick;
 * its N = 2 case, which returns the wrong one of the two under an index
 * range, is asked for both). w: k values, Z: N x k, leading dimension ldz.
 * Returns the number found, -1 (dstemr failed) or -2 (out of memory). */
int cm__stemr_top(int N, double *d, double *e, int k, double *w, double *Z,
                  int ldz);
/* Cholesky factor of the n x n leading block of G (column-major, leading
 * dimension ld; its lower triangle, overwritten by L; the rest untouched),
 * as LAPACK's dpotrf 'L'. Returns 0, or j + 1 when the block is not
 * positive definite at column j. */
int cm__chol_lower(int n, double *G, int ld);
/* X = L^-1 for the n x n lower triangular L (leading dimension ldl) into X
 * (leading dimension ldx, its strict upper triangle set to 0). */
void cm__inv_lower(int n, const double *L, int ldl, double *X, int ldx);
/* The upper triangle of B B^T (use_S, N = m) or B^T B (N = n) into A
 * (N x N, column-major), B dense m x n column-major: cblas_dsyrk's result
 * in a fixed order. Returns 0, or -1 when out of memory. */
int cm__syrk_small(int use_S, int m, int n, const double *Bd, double *A);

/* Converts eigenvectors of the operator to unit z over the rows and computes
 * the S residuals. vecs: op_dim x nev column-major. scratch: optional
 * memory of nscratch doubles, not overlapping vecs, used instead of fresh
 * buffers when it holds (rows + columns) x nev (NULL: allocate). */
int cm__eig_finish(cm_context_t *ctx, cm_operator_t *op, int comp, int use_S,
                   const double *vecs, double *scratch, size_t nscratch,
                   cm__eig_t *out);

#endif
