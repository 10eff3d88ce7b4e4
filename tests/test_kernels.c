/* test_kernels.c: the kernel sets (internal.h, CM__KERNEL; issue 19 goal
 * 5). Every set this CPU runs gives the bits of the baseline set: the
 * dense kernels on shapes with every kind of tail, checked against a plain
 * loop too, and whole reports of Lanczos solves that restart (the basis
 * combinations and Gram blocks) on double and float products. An AVX-512
 * machine so checks what an AVX2-only CPU computes; on an AVX2-only CPU
 * the avx512 set is not run (said on standard error). */
#include "cmodes.h"
#include "cmtest.h"
#include "internal.h"
#include "spectrum/spectrum_internal.h"

static void cm__kt_note(void) {
  int cpu = cm__isa_cpu();
  if (cpu < CM__ISA_AVX512)
    fprintf(stderr,
            "note: this CPU runs the kernel sets up to %s only; the others "
            "are not compared here\n",
            cm__isa_name(cpu));
}

CM_TEST(kernels_parse_and_cap) {
  CMT_EQ_INT(cm__isa_parse("avx512"), CM__ISA_AVX512);
  CMT_EQ_INT(cm__isa_parse("avx2"), CM__ISA_AVX2);
  CMT_EQ_INT(cm__isa_parse("baseline"), CM__ISA_BASELINE);
  CMT_EQ_INT(cm__isa_parse("AVX2"), -1); /* names are exact */
  CMT_EQ_INT(cm__isa_parse("sse"), -1);
  CMT_EQ_INT(cm__isa_parse(""), cm__isa_cpu());
  CMT_EQ_INT(cm__isa_parse(NULL), cm__isa_cpu());
  /* never above the CPU's */
  CMT_EQ_INT(cm__isa_force(CM__ISA_AVX512), cm__isa_cpu());
  CMT_EQ_INT(cm__isa(), cm__isa_cpu());
  CMT_TRUE(!strcmp(cm_kernel_set(), cm__isa_name(cm__isa_cpu())));
  CMT_EQ_INT(cm__isa_force(CM__ISA_BASELINE), CM__ISA_BASELINE);
  CMT_EQ_INT(cm__isa(), CM__ISA_BASELINE);
  CMT_TRUE(!strcmp(cm_kernel_set(), "baseline"));
  cm__isa_force(-1);
}

/* y = alpha op(A) x + beta y on every set, A double and float, lengths
 * with tails of every size below the kernels' 8 and 4 and the chunks'
 * 8192, 1 to 9 columns; each set's bits against the baseline's, and the
 * baseline against a plain loop. */
CM_TEST(kernels_same_bits_gemv) {
  cm__kt_note();
  int ms[] = {7, 8195, 40003, 65541}, ns[] = {1, 2, 3, 4, 5, 7, 9};
  for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
    for (size_t b = 0; b < sizeof ns / sizeof *ns; b++) {
      int m = ms[a], n = ns[b], lda = m + 3, my = m > n ? m : n;
      size_t na = (size_t)lda * n;
      double *A = malloc(sizeof(double) * na);
      float *A32 = malloc(sizeof(float) * na);
      double *x = malloc(sizeof(double) * (size_t)my);
      double *y0 = malloc(sizeof(double) * (size_t)my);
      double *ref = malloc(sizeof(double) * (size_t)my);
      double *got = malloc(sizeof(double) * (size_t)my);
      for (size_t i = 0; i < na; i++)
        A[i] = A32[i] = (float)cm__hash_uniform(11, i); /* float exact */
      for (int i = 0; i < my; i++)
        y0[i] = cm__hash_uniform(13, (uint64_t)i);
      for (int i = 0; i < my; i++)
        x[i] = cm__hash_uniform(12, (uint64_t)i);
      for (int f32 = 0; f32 < 2; f32++)
        for (int tr = 0; tr < 2; tr++) {
          int len = tr ? n : m;
          double alpha = -0.75, beta = tr ? 0.0 : 0.5;
          for (int isa = CM__ISA_BASELINE; isa <= cm__isa_cpu(); isa++) {
            cm__isa_force(isa);
            for (int th = 1; th <= 2; th++) {
              double *y = isa == CM__ISA_BASELINE && th == 1 ? ref : got;
              memcpy(y, y0, sizeof(double) * (size_t)my);
              if (f32)
                cm__gemv32(tr, m, n, alpha, A32, lda, x, beta, y, th);
              else
                cm__gemv(tr, m, n, alpha, A, lda, x, beta, y, th);
              if (y != got)
                continue;
              if (memcmp(ref, got, sizeof(double) * (size_t)len))
                CMT_FAIL("m %d n %d trans %d %s: the %s set at %d threads "
                         "differs from the baseline's bits",
                         m, n, tr, f32 ? "float" : "double", cm__isa_name(isa),
                         th);
            }
          }
          double scale, err = cmt_gemv_err(tr, m, n, alpha, A, lda, x, beta, y0,
                                           ref, &scale); /* plain loops */
          CMT_LE(err, 1e-13 * (scale + 1) * sqrt((double)m));
        }
      free(A), free(A32), free(x), free(y0), free(ref), free(got);
    }
  cm__isa_force(-1);
}

/* cm__dot (dot products and norms of the solves) on every set and 1 to 3
 * threads: the bits of the order docs/math.md gives (chunks of 8192, each
 * in eight lane sums ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
 * then its tail, the chunks added in order), written out here, and within
 * rounding of a long double sum. */
CM_TEST(kernels_dot_order) {
  int ns[] = {0, 5, 8, 8191, 8195, 40003, 65541};
  for (size_t a = 0; a < sizeof ns / sizeof *ns; a++) {
    int n = ns[a];
    double *x = malloc(sizeof(double) * (size_t)(n + 1));
    double *y = malloc(sizeof(double) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
      x[i] = cm__hash_uniform(21, (uint64_t)i),
      y[i] = cm__hash_uniform(22, (uint64_t)i);
    double want = 0, mag = 0;
    long double exact = 0;
    for (int c0 = 0; c0 < n; c0 += 8192) {
      int c1 = c0 + 8192 < n ? c0 + 8192 : n, i = c0;
      double l[8] = {0}, t = 0;
      for (; i + 8 <= c1; i += 8)
        for (int k = 0; k < 8; k++)
          l[k] += x[i + k] * y[i + k];
      for (; i < c1; i++)
        t += x[i] * y[i];
      want +=
          ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])) + t;
    }
    for (int i = 0; i < n; i++)
      exact += (long double)x[i] * y[i], mag += fabs(x[i] * y[i]);
    for (int isa = CM__ISA_BASELINE; isa <= cm__isa_cpu(); isa++) {
      cm__isa_force(isa);
      for (int th = 1; th <= 3; th++) {
        double got = cm__dot(n, x, y, th);
        if (memcmp(&got, &want, sizeof got))
          CMT_FAIL("n %d: the %s set at %d threads gives %.17g, the "
                   "documented order %.17g",
                   n, cm__isa_name(isa), th, got, want);
      }
    }
    CMT_LE(fabs(want - (double)exact), 1e-15 * mag * 16);
    free(x), free(y);
  }
  cm__isa_force(-1);
}

static char *cm__kt_report(cm_context_t *ctx, const cm_scene_t *s, int modes,
                           double tol, int ncv) {
  cm_options_t o;
  cm_options_init(&o);
  o.modes = modes, o.tol = tol, o.ncv = ncv;
  return cmt_report_json(ctx, s, &o);
}

/* Whole reports on every set: a 3D pile of about 24 000 contacts (past the
 * threaded kernels' 20 000 rows), 1 and 6 modes, on S (tol 1e-8) and on
 * its float copy (tol 1e-6), and a small basis (ncv 16) that restarts;
 * and with the float basis of the largest scenes (cm__lz_basis32_min,
 * here at every size: its float combinations and Gram blocks), 1 and 6
 * modes, with and without restarts. */
CM_TEST(kernels_same_bits_reports) {
  cm__kt_note();
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = 2;
  cm_pile_options_t po;
  cm_pile_options_init(&po);
  po.dim = 3, po.count = 8000, po.seed = 3;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_pile(&ctx, &po, &s), CM_OK);
  CMT_TRUE(s && s->ncontacts > 20000);
  struct {
    int modes;
    double tol;
    int ncv, basis32;
  } runs[] = {{1, 1e-8, 0, 0},  {6, 1e-8, 0, 0}, {6, 1e-6, 0, 0},
              {6, 1e-8, 16, 0}, {1, 1e-6, 0, 1}, {6, 1e-6, 0, 1},
              {6, 1e-6, 16, 1}};
  int min0 = cm__lz_basis32_min;
  for (size_t r = 0; s && r < sizeof runs / sizeof *runs; r++) {
    char *want = NULL;
    cm__lz_basis32_min = runs[r].basis32 ? 0 : min0;
    for (int isa = CM__ISA_BASELINE; isa <= cm__isa_cpu(); isa++) {
      cm__isa_force(isa);
      char *got =
          cm__kt_report(&ctx, s, runs[r].modes, runs[r].tol, runs[r].ncv);
      CMT_TRUE(got != NULL);
      if (!want) {
        want = got;
        CMT_TRUE(want && strstr(want, "\"lanczos\"")); /* the method */
        continue;
      }
      if (got && strcmp(want, got))
        CMT_FAIL("modes %d tol %g ncv %d basis32 %d: the %s set's report "
                 "differs from the baseline's",
                 runs[r].modes, runs[r].tol, runs[r].ncv, runs[r].basis32,
                 cm__isa_name(isa));
      free(got);
    }
    free(want);
  }
  cm__lz_basis32_min = min0;
  cm__isa_force(-1);
  cm_scene_destroy(&s);
}

/* The programs refuse a CMODES_KERNELS that names no set (exit 2, the
 * variable and the names it takes) and a CMODES_HUGE_PAGES other than 0
 * or 1, note a set above the CPU's, and run
 * with each set they can, and with glibc's own allocation
 * (CMODES_HEAP_MMAP=1), to the same report text. */
CM_TEST(kernels_cli_env) {
  char cmd[1024];
  int code;
  snprintf(cmd, sizeof cmd,
           "CMODES_KERNELS=avx3 %s analyze %s/data/pile3d.json 2>&1 "
           ">/dev/null",
           CM_BINARY, CM_SOURCE_DIR);
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, cm_status_exit(CM_USAGE));
  CMT_CONTAINS(out, "CMODES_KERNELS='avx3' names no kernel set");
  CMT_CONTAINS(out, "use avx512, avx2 or baseline");
  free(out);
  snprintf(cmd, sizeof cmd,
           "CMODES_HUGE_PAGES=yes %s analyze %s/data/pile3d.json 2>&1 "
           ">/dev/null",
           CM_BINARY, CM_SOURCE_DIR);
  out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, cm_status_exit(CM_USAGE));
  CMT_CONTAINS(out, "CMODES_HUGE_PAGES='yes': use 0");
  free(out);
  char *want = NULL;
  for (int isa = CM__ISA_BASELINE; isa <= CM__ISA_AVX512; isa++) {
    snprintf(cmd, sizeof cmd,
             "CMODES_KERNELS=%s %s analyze %s/data/pile3d.json --json "
             "--no-timings 2>&1",
             cm__isa_name(isa), CM_BINARY, CM_SOURCE_DIR);
    out = cmt_run(cmd, &code);
    CMT_EQ_INT(code, 0);
    if (isa > cm__isa_cpu()) { /* the note, then the CPU's best */
      CMT_CONTAINS(out, "but this CPU runs the kernel sets up to");
      char *nl = out ? strchr(out, '\n') : NULL;
      if (nl)
        memmove(out, nl + 1, strlen(nl + 1) + 1);
    }
    if (!want)
      want = out;
    else {
      CMT_TRUE(out && !strcmp(want, out));
      free(out);
    }
  }
  /* glibc's default allocation (CMODES_HEAP_MMAP=1) against the heap
   * only (the default): the same report */
  snprintf(cmd, sizeof cmd,
           "CMODES_HEAP_MMAP=1 %s analyze %s/data/pile3d.json --json "
           "--no-timings 2>&1",
           CM_BINARY, CM_SOURCE_DIR);
  out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  if (want && out && strcmp(want, out))
    CMT_FAIL("CMODES_HEAP_MMAP=1: the report differs");
  free(out);
  free(want);
}
