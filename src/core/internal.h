/* internal.h: helpers shared by the modules of libcmodes; not installed.
 * Error raising, timers, deterministic parallel reductions, seeded random
 * numbers and the BLAS thread guard. Not for anything a user calls. */
#ifndef CM_INTERNAL_H
#define CM_INTERNAL_H

#include "cmodes.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Records status, location and a formatted message in ctx; returns status.
 * path may be NULL. Cannot fail. */
int cm__error_at(cm_context_t *ctx, int status, const char *file, int line,
                 const char *path, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
#define CM__ERR(ctx, st, path, ...)                                            \
  cm__error_at((ctx), (st), __FILE__, __LINE__, (path), __VA_ARGS__)

/* Loop length below which a kernel runs on one thread: a fork/join costs
 * more than such a loop, and far more when the cores are shared. */
#define CM__PAR_MIN 20000

/* Kernel sets (issue 19, goal 5). The hot dense kernels (blas2.c's gemv
 * rows and dot products, lanczos.c's basis combination and Gram blocks) are
 * compiled three times: for AVX-512F, for AVX2 and for the x86-64 baseline.
 * One set serves the whole process: the best this CPU runs, or the one
 * CMODES_KERNELS names (avx512, avx2 or baseline), never above the CPU's.
 * The project builds with -ffp-contract=off and every kernel sums in one
 * fixed order, so the three sets give the same bits; the tests
 * kernels_same_bits_* check that on whatever sets the CPU runs, which lets
 * an AVX-512 machine replay what an AVX2-only one (the AMD EPYC of issue
 * 19) computes, and time it.
 *
 * A kernel is written once as NAME_body (static inline, always_inline);
 * CM__KERNEL(NAME, PARAMS, ARGS) then makes the three targeted copies of
 * it and the dispatcher NAME (static, void). A kernel that holds its
 * values in GCC vector types has a body per vector width instead,
 * NAME_body64, NAME_body32 and NAME_body16 (bytes), and CM__KERNEL_W: a
 * vector type wider than the set's registers is split through memory.
 * Elsewhere than x86-64 with GCC or clang, or with CM_NO_CLONES, NAME
 * calls the (16-byte) body alone. */
enum { CM__ISA_BASELINE = 0, CM__ISA_AVX2 = 1, CM__ISA_AVX512 = 2 };
/* The kernel set in use (asked once; thread-safe). */
int cm__isa(void);
/* The best set this CPU runs. */
int cm__isa_cpu(void);
/* "avx512", "avx2" or "baseline". */
const char *cm__isa_name(int isa);
/* The set a CMODES_KERNELS value names, or -1 if none (NULL or empty: the
 * CPU's best). */
int cm__isa_parse(const char *name);
/* Tests and benches: use set isa from now on (capped at the CPU's; -1:
 * back to CMODES_KERNELS or the CPU's best). Returns the set now in use.
 * Not for concurrent use with running kernels. */
int cm__isa_force(int isa);
/* The programs' check of CMODES_KERNELS and CMODES_HUGE_PAGES before any
 * work: -1 for a kernel-set value that names no set or a huge-pages value
 * other than 0 or 1 (a message naming prog on standard error; none when
 * prog is NULL), a note when the set named is above the CPU's; 0
 * otherwise. The library alone takes an unknown value as unset. */
int cm__isa_env_check(const char *prog);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) &&        \
    !defined(CM_NO_CLONES)
#define CM__KERNEL(NAME, PARAMS, ARGS)                                         \
  CM__KERNEL_3(NAME, PARAMS, ARGS, NAME##_body, NAME##_body, NAME##_body)
#define CM__KERNEL_W(NAME, PARAMS, ARGS)                                       \
  CM__KERNEL_3(NAME, PARAMS, ARGS, NAME##_body64, NAME##_body32, NAME##_body16)
#define CM__KERNEL_3(NAME, PARAMS, ARGS, B512, B2, B0)                         \
  __attribute__((target("avx512f"))) static void NAME##_avx512 PARAMS {        \
    B512 ARGS;                                                                 \
  }                                                                            \
  __attribute__((target("avx2"))) static void NAME##_avx2 PARAMS { B2 ARGS; }  \
  static void NAME##_baseline PARAMS { B0 ARGS; }                              \
  static void NAME PARAMS {                                                    \
    switch (cm__isa()) {                                                       \
    case CM__ISA_AVX512:                                                       \
      NAME##_avx512 ARGS;                                                      \
      break;                                                                   \
    case CM__ISA_AVX2:                                                         \
      NAME##_avx2 ARGS;                                                        \
      break;                                                                   \
    default:                                                                   \
      NAME##_baseline ARGS;                                                    \
    }                                                                          \
  }
/* A CM__KERNEL_W body of the AVX-512 or the AVX2 set that uses the set's
 * own instructions (CM__LOAD_WIDEN8, _4): targeted at it, so they inline */
#define CM__KERNEL_BODY_AVX512                                                 \
  static inline __attribute__((always_inline, target("avx512f"))) void
#define CM__KERNEL_BODY_AVX2                                                   \
  static inline __attribute__((always_inline, target("avx2"))) void
/* The 8 (4) floats at p widened into v, a vector of as many doubles, by
 * one vcvtps2pd: GCC 12 makes __builtin_convertvector two conversions of
 * half the width and shuffles (the same values: widening is exact). For
 * CM__KERNEL_BODY_AVX512 (_AVX2) bodies. */
#include <immintrin.h>
#define CM__LOAD_WIDEN8(v, p, VT)                                              \
  ((v) = (VT)_mm512_cvtps_pd(_mm256_loadu_ps((const float *)(p))))
#define CM__LOAD_WIDEN4(v, p, VT)                                              \
  ((v) = (VT)_mm256_cvtps_pd(_mm_loadu_ps((const float *)(p))))
#else
#define CM__KERNEL(NAME, PARAMS, ARGS)                                         \
  static void NAME PARAMS { NAME##_body ARGS; }
#define CM__KERNEL_W(NAME, PARAMS, ARGS)                                       \
  static void NAME PARAMS { NAME##_body16 ARGS; }
#define CM__KERNEL_BODY_AVX512 CM__KERNEL_BODY
#define CM__KERNEL_BODY_AVX2 CM__KERNEL_BODY
#define CM__LOAD_WIDEN8(v, p, VT) CM__LOAD_WIDEN(v, p, VT, 8)
#define CM__LOAD_WIDEN4(v, p, VT) CM__LOAD_WIDEN(v, p, VT, 4)
#endif
#define CM__KERNEL_BODY static inline __attribute__((always_inline)) void
/* The n floats at p widened into v, a vector of n doubles of type VT, in
 * any set (__builtin_convertvector) */
#define CM__LOAD_WIDEN(v, p, VT, n)                                            \
  do {                                                                         \
    float f_ __attribute__((vector_size(4 * (n))));                            \
    memcpy(&f_, (p), sizeof f_);                                               \
    (v) = __builtin_convertvector(f_, VT);                                     \
  } while (0)

/* Wall-clock seconds from a monotonic clock. */
double cm__now(void);

/* Threads to use for ctx (ctx->threads, at most cm__threads_max(), or the
 * OpenMP default). */
int cm__threads(const cm_context_t *ctx);
/* The input limit, bytes: CMODES_MAX_INPUT (a number of bytes, 1e9 style
 * allowed) or physical memory / 4 (1 GiB when unknown). Readers stop there
 * so an endless stream (/dev/zero, a FIFO) cannot exhaust memory. */
size_t cm__input_limit(void);
/* fopen(path, mode) for reading an input, NULL with errno EISDIR for a
 * directory (which fopen opens, and whose reads then fail or whose end
 * seeks to 2^63: a reader would call it empty, or an endless stream). */
FILE *cm__fopen_input(const char *path, const char *mode);
/* The longest line a line reader (dump, Matrix Market) takes: 1 MiB. */
#define CM__MAX_LINE ((size_t)1 << 20)
/* getline with limits: reads one line (newline kept) into *buf (grown,
 * NUL-terminated); returns its length, -1 at end of input, -2 past
 * cm__input_limit() bytes in all (*total counts them), -3 for a line longer
 * than CM__MAX_LINE, -4 out of memory. */
long cm__getline_limited(char **buf, size_t *cap, FILE *f, size_t *total);
/* The error for a negative cm__getline_limited result r (not -1) at line
 * lineno (0: none) of src: CM_LIMIT naming the limit and CMODES_MAX_INPUT,
 * or CM_NOMEM. */
int cm__input_error(cm_context_t *ctx, const char *src, long lineno, long r);

/* The most threads worth starting: 4 x the processors OpenMP sees (more
 * only oversubscribes; 100000 made OpenMP abort). */
int cm__threads_max(void);

/* Forces single-threaded BLAS so reductions inside ARPACK and LAPACK do not
 * depend on the thread count (parallelism lives in our own kernels). */
void cm__blas_single_thread(void);
/* Sets the BLAS thread count (OpenBLAS only; others are left alone). */
void cm__blas_threads(int n);
/* Threads of cmodes' own dgemv_/dcopy_ (core/blas2.c), set around ARPACK
 * solves; results do not depend on it. */
void cm__blas2_set_threads(int n);
/* Deterministic y = alpha op(A) x + beta y for a column-major m x n A
 * (lda), op = A^T when trans: fixed row chunks combined in chunk order, so
 * the bits do not depend on threads. Any m; n >= 1 (n < 1: no-op). */
void cm__gemv(int trans, int m, int n, double alpha, const double *a, int lda,
              const double *x, double beta, double *y, int threads);
/* cm__gemv with float values of A (each widened exactly, sums in double,
 * the same order). */
void cm__gemv32(int trans, int m, int n, double alpha, const float *a, int lda,
                const double *x, double beta, double *y, int threads);
/* The BLAS thread count now (0 when unknown). */
int cm__blas_get_threads(void);

/* Deterministic sums: the input is cut into fixed chunks whatever the thread
 * count, and the partial sums are added in chunk order; each chunk is
 * cm__dot_lanes. */
double cm__dot(int n, const double *x, const double *y, int threads);
/* x . y over len entries in eight lane sums combined in a fixed order (the
 * same bits in every kernel set, blas2.c): one running sum waited on its
 * additions, 4 cycles an entry, slower than memory. */
double cm__dot_lanes(const double *x, const double *y, int len);
double cm__nrm2(int n, const double *x, int threads);

/* Seeded pseudo-random numbers in (-1, 1): value i of stream seed. */
double cm__hash_uniform(uint64_t seed, uint64_t i);

/* Allocation that records CM_NOMEM in ctx on failure. */
void *cm__malloc(cm_context_t *ctx, size_t n, size_t size);
void *cm__calloc(cm_context_t *ctx, size_t n, size_t size);
/* Advises huge pages for the whole pages of [p, p + bytes) when bytes is
 * at least 4 MiB and fresh ones were last measured cheaper than 4 KiB ones,
 * timing the buffer's first 2 MiB block as a new measure (util.c says why
 * and how; only for thread-private new buffers: it rewrites that byte);
 * cm__malloc, cm__calloc and cm__ws_malloc do it for their buffers.
 * cm__huge_pages_choice: that choice (measuring it if not yet done; buffers'
 * own measures may switch it later), with the seconds a GiB of fresh memory
 * measured in 4 KiB pages (the cheaper of two samples) and in 2 MiB pages (the
 * dearest of those sampled), NAN when CMODES_HUGE_PAGES set it. */
void cm__huge_pages(void *p, size_t bytes);
int cm__huge_pages_choice(double *s4k, double *s2m);
/* CMODES_HUGE_PAGES: 0 or 1 as set, -1 unset or empty, -2 any other value */
int cm__huge_pages_env(void);
void cm__huge_pages_force(int on); /* tests: overrides the choice */
/* Buffers cm__huge_pages timed (their first 2 MiB block, or each block in
 * turn: cm__huge_pages_walk); in *sw (if not NULL) how many times they
 * switched the choice. */
int cm__huge_pages_live(int *sw);
/* 1 when every block of a buffer is timed (one NUMA node), 0 the first. */
int cm__huge_pages_walk(void);
/* Large buffers kept between analyses (workspace.c, cm_workspace_keep):
 * like cm__malloc (not zeroed: it may hold an earlier analysis's values),
 * and a buffer from it goes back with cm__ws_free only. cm__ws_reused:
 * how many buffers were taken from the kept ones so far. */
void *cm__ws_malloc(cm_context_t *ctx, size_t n, size_t size);
/* cm__ws_malloc's memory set to zero (a kept buffer is not) */
void *cm__ws_calloc(cm_context_t *ctx, size_t n, size_t size);
void cm__ws_free(void *p);
unsigned long cm__ws_reused(void);
/* Around a public entry point that allocates many large buffers (an
 * analysis, an assembly; nested calls count once): while the process has
 * set no cap (cm_workspace_keep), the buffers freed meanwhile are kept
 * for its later requests, up to 1 GiB, and freed when the outermost one
 * ends. cm__ws_unset (tests): back to no cap set, as a new process. */
void cm__ws_scope_begin(void);
void cm__ws_scope_end(void);
void cm__ws_unset(void);

/* Binary scenes (io/scene_bin.c): 1 if buf starts with the magic; the
 * reader behind cm_scene_read_file. */
int cm__scene_is_binary(const char *buf, size_t len);
/* After sys is assembled from s, for a caller that only destroys s once
 * the analysis of sys is done: frees s's body and contact records (on the
 * 1e6 pile 192 MB of 717 MiB peak, allocated before the operator and the
 * basis), keeping the counts and the names, which are all the analysis
 * reads of a scene without dashpots (the damped step reads the records:
 * then nothing is freed). What is left serves the name accessors
 * (cm_scene_body_name, _contact_name, _body_label, _find_body) and
 * cm_scene_destroy only. Returns 1 if freed, 0 if not. */
int cm__scene_release_records(cm_scene_t *s, const cm_system_t *sys);
/* 1 if the scene has a version 2 value (tangential stiffness, a dashpot,
 * lever arms or the deck's time step): the writers then write version 2. */
int cm__scene_is_v2(const cm_scene_t *s);
/* Why contact c's stiffness 0 is refused (NULL: a valid dashpot alone,
 * damping_n > 0 and no stiffness_t, or a stiffness that is not 0); the
 * JSON reader and cm_scene_validate say it alike. */
const char *cm__dashpot_alone_fault(const cm_contact_t *c);
/* Rows of J for contact ct: the normal, and the dim - 1 tangents when it has
 * a tangential spring (or, with_dashpots, a tangential dashpot). A
 * report's start vector lists each contact's rows in this count. */
int cm__contact_nrows(int dim, const cm_contact_t *ct, int with_dashpots);
/* R (row-major, body -> world) of the unit quaternion q = (w, x, y, z). */
void cm__quat_to_R(const double *q, double *R);
/* Largest eigenvalue of the k x k symmetric tridiagonal (a, b) by bisection,
 * ||T||_1 into *tn; iw: 2k ints (spectrum/bound.c). */
double cm__tridiag_top(int k, const double *a, const double *b, double *tn,
                       int *iw);
/* cm_system_assemble with row weights wk k + wg c (springs k, dashpots c):
 * (1, 0) is the undamped system; (h^2, 2h) the damped-step operator at h;
 * (0, 1) the dashpots alone. Tangent rows are included where k_t > 0, or
 * c_t > 0 when wg > 0; sys->spring holds each row's k unless (1, 0). */
int cm__system_assemble_weighted(cm_context_t *ctx, const cm_scene_t *s,
                                 double wk, double wg, cm_system_t **out);
/* cm_system_assemble of a scene that passed cm_scene_validate and has not
 * changed since (a reader's scene: cm_scene_read_file validates what it
 * returns), without checking it again (20 ms on the 1e6 pile) */
int cm__system_assemble_checked(cm_context_t *ctx, const cm_scene_t *s,
                                cm_system_t **out);
/* A dump's box origin and edge lengths lx, ly, lz (the tilts are
 * d->tilt): its box vectors are (lx, 0, 0), (xy, ly, 0), (xz, yz, lz). */
void cm__dump_box_frame(const cm_dump_t *d, double lo[3], double len[3]);

/* The timesteps of every snapshot of a text dump, in file order (malloc'd
 * in *steps, caller frees). Errors name the file and line. */
int cm__dump_timesteps(cm_context_t *ctx, const char *path, long **steps,
                       int *n);
/* Numerical rank of J per component (comp_rank, size ncomp) and in total,
 * from SuiteSparseQR of J (system/rank.c, docs/math.md); components in
 * parallel on threads. A component of more than max_rows rows (> 0) is not
 * factored: its rank is -1, and so is the total. With deadline > 0 (a
 * cm__now() time), a component whose factorization would start after it
 * is not factored either (rank -1) and the total is -2: the solve budget
 * holds for the counts too. *near (NULL: not wanted): the largest over
 * the components of what the QR dropped as dependent over its tolerance
 * (rank.c; NAN when the total is not known). CM_NOMEM on failure. */
/* What the rank's QR dropped as dependent, over its tolerance, above which
 * the counts are not sharp (cm_report_t.rank_sharp 0): exact dependences
 * leave rounding, 1e-6 to 1e-5 on the scenes of data/. */
#define CM__RANK_SHARP 1e-2
int cm__system_rank(cm_context_t *ctx, const cm_system_t *sys, int threads,
                    int max_rows, double deadline, int *comp_rank, long *total,
                    double *near);
int cm__scene_parse_binary(cm_context_t *ctx, const char *buf, size_t len,
                           const char *source, cm_scene_t **out);
/* The same from a file of len bytes (its size, taken before), read from
 * its start through one buffer of a few MiB: never held whole. */
int cm__scene_read_binary(cm_context_t *ctx, FILE *f, size_t len,
                          const char *source, cm_scene_t **out);
/* A scene from parsed JSON (jansson's json_t): what cm_scene_parse_json
 * does after the parse, for callers that hold the document already (the
 * server's {"scene": ..., "options": ...} bodies). Does not take root. */
struct json_t;
int cm__scene_from_json(cm_context_t *ctx, const struct json_t *root,
                        const char *source, cm_scene_t **out);
/* The scene reader's parts, for the server's patch documents: one contact
 * (as in "contacts" of the format, version 2 fields allowed; body refs
 * resolve in s; messages name "SOURCE: ARR[i].field"), a finite number and
 * an array of n finite numbers (what: "[x, y]", for messages) at path.
 * Errors are CM_INVALID_SCENE. */
int cm__scene_contact_from_json(cm_context_t *ctx, const cm_scene_t *s,
                                const struct json_t *jc, const char *source,
                                const char *arr, int i, cm_contact_t *c,
                                const char **name);
int cm__scene_num_from_json(cm_context_t *ctx, const struct json_t *v,
                            const char *source, const char *path, double *out);
int cm__scene_vec_from_json(cm_context_t *ctx, const struct json_t *v,
                            const char *source, const char *path, int n,
                            double *out, const char *what);

/* The JSON scene reader's limits, checked while it reads so that memory
 * stays bounded by them (the server passes its --max-depth, --max-bodies
 * and --max-contacts): max_depth nests arrays and objects (0: jansson's
 * 2048 values), max_bodies and max_contacts count elements (0: none). On
 * the first element past a count, or the first value past the depth, the
 * reader stops (CM_LIMIT, path "bodies", "contacts" or the caller's) with
 * "contacts: more than WHO of N contacts HINT", WHO e.g. "the server's
 * limit" and HINT e.g. " (--max-contacts)". */
typedef struct cm__scene_limits {
  int max_depth;
  long max_bodies, max_contacts;
  const char *who;
  const char *hint_depth, *hint_bodies, *hint_contacts;
} cm__scene_limits_t;
/* cm_scene_parse_json with limits (lim may be NULL): one pass, no tree
 * (io/scene_stream.c). */
int cm__scene_parse_json_limited(cm_context_t *ctx, const char *text,
                                 size_t len, const char *source,
                                 const cm__scene_limits_t *lim,
                                 cm_scene_t **out);
/* The server's {"scene": ..., "options": ...} body in the same pass: the
 * scene streamed (messages name "scene"), *options parsed by jansson (a
 * new reference, or NULL when absent). Malformed JSON reads "request
 * body:LINE:COL: malformed JSON: ..." at path "(body)"; a key other than
 * scene and options is CM_USAGE at its name. */
int cm__scene_parse_wrapped(cm_context_t *ctx, const char *text, size_t len,
                            const cm__scene_limits_t *lim, cm_scene_t **out,
                            struct json_t **options);
/* The reader of sessions 1-5, through a jansson tree: the reference of
 * tests/test_json_pull.c and bench/bench_intake.c. */
int cm__scene_parse_json_tree(cm_context_t *ctx, const char *text, size_t len,
                              const char *source, cm_scene_t **out);

/* Method names of the options and reports ("auto", "arpack", "dense",
 * "lanczos"); cm__method_parse returns -1 for an unknown name. */
const char *cm__method_name(int method);
int cm__method_parse(const char *s);
#define CM__METHOD_NAMES "auto, lanczos, arpack or dense"

/* Union-find: the root of i's set, halving the path on the way (parent[r]
 * == r at a root). The one copy: components (assemble.c) and mass blocks
 * (matrices.c) use it; inline, since the assembly calls it twice per
 * contact. Cannot fail. */
static inline int cm__uf_find(int *parent, int i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]]; /* path halving */
    i = parent[i];
  }
  return i;
}

/* strdup that returns NULL on NULL or failure. */
char *cm__strdup(const char *s);

/* Frees an array of n malloc'd names (entries may be NULL) and the array;
 * accepts NULL (system names, matrices.c). */
void cm__free_names(char **names, int n);

/* cm_system_write_matrices with the manifest's row_names and col_names
 * taken from the scene sys was assembled from (scene may be NULL; a matrix
 * system's own names are written either way). mtx_write.c. */
int cm__system_write_matrices_named(cm_context_t *ctx, const cm_system_t *sys,
                                    const cm_scene_t *scene, const char *dir,
                                    int flags, const char *source);

#endif
