/* cmtest.h: the test registry and asserts. Asserts print both operands and
 * the location and stay on in release builds. */
#ifndef CMTEST_H
#define CMTEST_H

#include "cmodes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*cmt_fn)(void);
void cmt_register(const char *name, cmt_fn fn);
extern int cmt_failures;

#define CM_TEST(name)                                                          \
  static void cmt_##name(void);                                                \
  __attribute__((constructor)) static void cmt_reg_##name(void) {              \
    cmt_register(#name, cmt_##name);                                           \
  }                                                                            \
  static void cmt_##name(void)

#define CMT_FAIL(...)                                                          \
  do {                                                                         \
    fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                            \
    fprintf(stderr, __VA_ARGS__);                                              \
    fprintf(stderr, "\n");                                                     \
    cmt_failures++;                                                            \
  } while (0)

#define CMT_TRUE(c)                                                            \
  do {                                                                         \
    if (!(c))                                                                  \
      CMT_FAIL("expected true: %s", #c);                                       \
  } while (0)

#define CMT_EQ_INT(a, b)                                                       \
  do {                                                                         \
    long long va_ = (long long)(a), vb_ = (long long)(b);                      \
    if (va_ != vb_)                                                            \
      CMT_FAIL("%s == %s: %lld != %lld", #a, #b, va_, vb_);                    \
  } while (0)

/* |a - b| <= rel * max(|a|, |b|) */
#define CMT_REL(a, b, rel)                                                     \
  do {                                                                         \
    double va_ = (a), vb_ = (b), r_ = (rel);                                   \
    double d_ = fabs(va_ - vb_), s_ = fmax(fabs(va_), fabs(vb_));              \
    if (!(d_ <= r_ * s_))                                                      \
      CMT_FAIL("%s ~ %s: %.17g vs %.17g (rel err %.3g > %.3g)", #a, #b, va_,   \
               vb_, s_ > 0 ? d_ / s_ : d_, r_);                                \
  } while (0)

#define CMT_LE(a, b)                                                           \
  do {                                                                         \
    double va_ = (a), vb_ = (b);                                               \
    if (!(va_ <= vb_))                                                         \
      CMT_FAIL("%s <= %s: %.17g > %.17g", #a, #b, va_, vb_);                   \
  } while (0)

#define CMT_CONTAINS(hay, needle)                                              \
  do {                                                                         \
    const char *h_ = (hay), *n_ = (needle);                                    \
    if (!h_ || !strstr(h_, n_))                                                \
      CMT_FAIL("expected \"%s\" in \"%s\"", n_, h_ ? h_ : "(null)");           \
  } while (0)

/* Runs a shell command, captures stdout (and stderr if merge) into a
 * malloc'd string; returns the exit status in *code. */
char *cmt_run(const char *cmd, int *code);
/* Runs `lmp ARGS` (Debian's MPI build of LAMMPS, as a singleton) in DIR,
 * its standard error with its output, and returns that output (or NULL)
 * with lmp's exit status in *code. Open MPI is told not to start its
 * daemon (OMPI_MCA_ess_singleton_isolated=1; LAMMPS never spawns), and a
 * run that fails with no line starting "ERROR" (LAMMPS' own), a start-up
 * failure rather than a verdict on the deck, is logged and retried, up to
 * three runs. */
char *cmt_run_lmp(const char *dir, const char *args, int *code);
/* `cmodes import lammps` of data/lammps/in.pile (and pile.dump) into a new
 * temporary file, its path into path (at least 64 bytes): 0, or -1 after
 * a test failure. The caller unlinks it. */
int cmt_lammps_deck(char *path);
/* cm_analyze of s with o (NULL: the defaults) as its JSON report text
 * without timings (malloc'd), or NULL after a test failure that gives the
 * context's message. */
char *cmt_report_json(cm_context_t *ctx, const cm_scene_t *s,
                      const cm_options_t *o);
/* The largest |y_i - r_i| over y = alpha op(A) x + beta y0 computed as
 * plain loops into r (op: A^T when tr; A column-major, m x n, leading
 * dimension lda), and the largest |r_i| into *scale. */
double cmt_gemv_err(int tr, int m, int n, double alpha, const double *A,
                    int lda, const double *x, double beta, const double *y0,
                    const double *y, double *scale);
/* S = K^1/2 J M^-1 J^T K^1/2 densely, the tests' independent truth: M
 * (n x n, symmetric, its lower triangle read) and J (m x n) row-major, k
 * (m); LAPACK dposv on M, S symmetrised (the mean of S_ij and S_ji).
 * Returns S (m x m row-major, malloc'd), or NULL (a test failure) when M
 * is not positive definite or memory ran out. */
double *cmt_dense_S(int n, int m, const double *M, const double *J,
                    const double *k);
/* Reads a whole file, NULL on failure. */
char *cmt_read_file(const char *path);
/* A fresh temporary folder in buf (mkdtemp), NULL on failure. */
const char *cmt_tmpdir(char *buf, size_t size);
/* The bundled scene data/NAME (a test failure, NULL, if it cannot be
 * read); the caller frees it with cm_scene_destroy. */
struct cm_scene *cmt_data_scene(const char *name);
/* Writes text to path (a test failure if it cannot). */
void cmt_write_text(const char *path, const char *text);

#endif
