/* operator_internal.h: what the spectrum and report modules need from the
 * operator beyond the public API: component views of B, dense forms, and
 * row-wise bounds. All vectors are local to the component (offsets removed). */
#ifndef CM_OPERATOR_INTERNAL_H
#define CM_OPERATOR_INTERNAL_H

#include "internal.h"

/* Rows [*r0, *r0 + *m) and columns [*c0, *c0 + *n) of component comp
 * (comp = -1: everything). */
void cm__op_comp(const cm_operator_t *op, int comp, int *r0, int *m, int *c0,
                 int *n);
/* y = B_c x (y: m, x: n) and x = B_c^T y. Thread-safe for the block path
 * (distinct components may be applied concurrently), and so is the general
 * path (a factor per component, solved by cmodes' substitutions in the
 * component's own scratch). */
void cm__op_B(cm_operator_t *op, int comp, const double *x, double *y);
void cm__op_BT(cm_operator_t *op, int comp, const double *y, double *x);
/* Rows [i0, i1) of B_c in (trans 0: rows are the component's contacts, in
 * its columns) or of B_c^T in (trans 1: rows are columns, in the
 * component's rows), into out[0 .. i1 - i0): the operator's own product
 * restricted to those rows (the same bits), on the calling thread. Thread
 * safe. -1 for a general M (no explicit B). */
int cm__op_rows(const cm_operator_t *op, int comp, int trans, const double *in,
                int i0, int i1, double *out);
/* The same on B's values rounded to float (each widened exactly, the
 * sums in double): the product of the operator B32 with |B - B32| <=
 * 2^-24 |B| entrywise, so ||S - S32|| <= (2^-23 + 2^-48) || |B| |B|^T ||
 * (S32 = B32 B32^T); -1 unless cm__op_make_f32 formed the copies. */
int cm__op_rows32(const cm_operator_t *op, int comp, int trans,
                  const double *in, int i0, int i1, double *out);
/* Forms the float copies of B's values once (thread-safe). CM_LIMIT when
 * a nonzero value lies outside [2^-120, 2^120] (a subnormal or an
 * overflow would break the bound above) or memory ran out, CM_USAGE for
 * a general M: the products stay on the double values. They go with the
 * operator. */
int cm__op_make_f32(cm_context_t *ctx, cm_operator_t *op);
/* cm_operator_create, with vals32 = 1 for an operator whose products will
 * read B's float values (an eigen-solve on S32): on the block path the
 * slots are then formed in float only (cm__op_make_f32 has nothing left to
 * do), and the double readers (cm__op_rows, the bounds, the dense form)
 * form each slot's values from B's CSR as they go, with the bits of the
 * formed double values: half the value bytes, for a few times the cost of
 * each double product. Whatever makes many double products calls
 * cm__op_make_f64 first. */
int cm__operator_create(cm_context_t *ctx, const cm_system_t *sys, int vals32,
                        cm_operator_t **out);
/* Forms the double values (Sx, Gx) of an operator made with vals32, once
 * (thread-safe); CM_OK when they are there, CM_NOMEM (the products then
 * stay on the CSR's values: the same bits, slower), CM_USAGE for a
 * general M. */
int cm__op_make_f64(cm_operator_t *op);
/* The bound above on ||S - S32|| over || |B| |B|^T || */
#define CM__F32_GAP (0x1p-23 + 0x1p-48)
/* The column groups of the block path's products (a body's consecutive
 * active dofs, at most 8): *ng groups, group b = columns [g0[b], g0[b+1]).
 * -1 for a general M. */
int cm__op_groups(const cm_operator_t *op, int *ng, const int **g0);
/* The most terms any entry of an S (or G) product sums on the block path:
 * the longest row of B_c as stored (slots times their size) plus the
 * longest column group; -1 for a general M. */
int cm__op_sum_terms(const cm_operator_t *op, int comp);
/* Nonzeros of B_c (block path; for a general M, of J's rows). */
long cm__op_comp_nnz(const cm_operator_t *op, int comp);
/* Bytes one S product reads and writes on the block path: B's and B^T's
 * index and value arrays as the products store them, with double values
 * (f32 0) or float ones (f32 1: what the solver's products read,
 * cm__op_rows32), and the vectors. */
double cm__op_matvec_bytes_as(const cm_operator_t *op, int f32);
/* The same with double values: issue 19's product floor, as the products
 * read B when it was filed (bench_step's goal 1). */
double cm__op_matvec_bytes(const cm_operator_t *op);
/* Out[:, p] = B_c In[:, p] (trans 0) or B_c^T In[:, p] (trans 1) for
 * p < k, columns ld_in and ld_out apart: each column's bits are those of
 * cm__op_B / cm__op_BT, but on the block path each chunk of B is read once
 * from memory for all k columns. */
void cm__op_apply_cols(cm_operator_t *op, int comp, int trans, const double *in,
                       size_t ld_in, double *out, size_t ld_out, int k);
/* Dense B_c, m x n column-major, into Bd (caller allocates m*n). */
int cm__op_dense_B(cm_operator_t *op, int comp, double *Bd);
/* Per row r of component comp: S_rr = |B_r|^2 (diag) and the Gershgorin row
 * sum g_r = (|B| |B|^T 1)_r, both over the component's rows. For the general
 * path these are computed from a dense B (one solve per column). */
int cm__op_row_bounds(cm_context_t *ctx, cm_operator_t *op, int comp,
                      double *diag, double *gersh);
/* The same, block path only, without a copy: pointers to comp's rows in
 * the operator's kept sums (valid while it lives). CM_OK, CM_USAGE (the
 * general path) or CM_NOMEM (no memory to keep them). */
int cm__op_row_bounds_view(cm_operator_t *op, int comp, const double **diag,
                           const double **gersh);
/* out = |B| |B|^T v over the rows of component comp (v, out local to
 * it): with v > 0, max_r out_r / v_r bounds the spectral radius of
 * |B| |B|^T, hence lambda_max(S) (Collatz-Wielandt; v = 1 is Gershgorin).
 * Block path only (CM_USAGE otherwise). */
int cm__op_abs_product(cm_context_t *ctx, cm_operator_t *op, int comp,
                       const double *v, double *out);
/* *definite = 1 when sigma M - J^T diag(sys->k) J is positive definite,
 * i.e. every eigenvalue of M^-1 J^T K J (= of S) is below sigma; one sparse
 * Cholesky factorization (CHOLMOD, definite.c). deadline: a cm__now() time
 * (0 = none); when the factorization's flop count (from CHOLMOD's
 * analysis) would not fit before it at CM__FACTOR_RATE, it is not started
 * and *definite = -1 (undecided). */
int cm__op_definite(cm_context_t *ctx, const cm_system_t *sys, double sigma,
                    double deadline, int *definite);
/* The speed the budget check of cm__op_definite assumes, in flop/s: well
 * below one core's supernodal Cholesky, so a slower machine stays inside. */
#define CM__FACTOR_RATE 1e9
/* phi = M_c^-1 J_c^T K^1/2 z over component comp's columns (z over its
 * rows): the dof-space shape of S's eigenvector z, times omega. CM_NOMEM
 * on failure. Not thread-safe on the block path with a non-diagonal M
 * (CHOLMOD's solve workspace). */
int cm__op_dof_shape(cm_operator_t *op, int comp, const double *z, double *phi);
/* OpenMP threads of the operator's kernels. */
int cm__op_threads(const cm_operator_t *op);
/* 1 for the block-diagonal fast path (explicit B). */
int cm__op_is_block(const cm_operator_t *op);

#endif
