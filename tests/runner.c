/* runner.c: runs the registered tests named on the command line, or all. */
#include "cmodes.h"
#include "cmtest.h"

#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CMT_MAX 1024
static struct {
  const char *name;
  cmt_fn fn;
} cmt_tests[CMT_MAX];
static int cmt_count;
int cmt_failures;

void cmt_register(const char *name, cmt_fn fn) {
  if (cmt_count < CMT_MAX) {
    cmt_tests[cmt_count].name = name;
    cmt_tests[cmt_count].fn = fn;
    cmt_count++;
  }
}

char *cmt_report_json(cm_context_t *ctx, const cm_scene_t *s,
                      const cm_options_t *o) {
  cm_report_t *r = NULL;
  if (cm_analyze(ctx, s, o, &r) < 0 || !r) {
    CMT_FAIL("analyze: %s", ctx->message);
    cm_report_destroy(&r);
    return NULL;
  }
  char *j = cm_report_to_json(r, CM_JSON_NO_TIMINGS);
  cm_report_destroy(&r);
  return j;
}

double *cmt_dense_S(int n, int m, const double *M, const double *J,
                    const double *k) {
  double *A = malloc(sizeof(double) * ((size_t)n * n + 1));
  double *X = malloc(sizeof(double) * ((size_t)n * m + 1)); /* M^-1 J^T */
  double *S = malloc(sizeof(double) * ((size_t)m * m + 1));
  int ok = A && X && S;
  if (ok) {
    memcpy(A, M, sizeof(double) * (size_t)n * n);
    for (int i = 0; i < n; i++)
      for (int r = 0; r < m; r++)
        X[(size_t)i * m + r] = J[(size_t)r * n + i];
    ok = n == 0 || LAPACKE_dposv(LAPACK_ROW_MAJOR, 'L', n, m, A, n, X, m) == 0;
  }
  for (int a = 0; ok && a < m; a++)
    for (int b = 0; b < m; b++) {
      double v = 0;
      for (int i = 0; i < n; i++)
        v += J[(size_t)a * n + i] * X[(size_t)i * m + b];
      S[(size_t)a * m + b] = sqrt(k[a] * k[b]) * v;
    }
  for (int a = 0; ok && a < m; a++) /* symmetric to rounding: the mean */
    for (int b = 0; b < a; b++)
      S[(size_t)a * m + b] = S[(size_t)b * m + a] =
          0.5 * (S[(size_t)a * m + b] + S[(size_t)b * m + a]);
  CMT_TRUE(ok);
  free(A), free(X);
  if (!ok)
    free(S);
  return ok ? S : NULL;
}

double cmt_gemv_err(int tr, int m, int n, double alpha, const double *A,
                    int lda, const double *x, double beta, const double *y0,
                    const double *y, double *scale) {
  double err = 0;
  *scale = 0;
  for (int i = 0; i < (tr ? n : m); i++) {
    double r = 0;
    if (tr)
      for (int l = 0; l < m; l++)
        r += A[(size_t)i * lda + l] * x[l];
    else
      for (int j = 0; j < n; j++)
        r += A[(size_t)j * lda + i] * x[j];
    r = alpha * r + beta * y0[i];
    err = fmax(err, fabs(y[i] - r));
    *scale = fmax(*scale, fabs(r));
  }
  return err;
}

char *cmt_run(const char *cmd, int *code) {
  FILE *p = popen(cmd, "r");
  if (!p) {
    *code = -1;
    return NULL;
  }
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += got;
    if (cap - len < 2) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  if (buf)
    buf[len] = 0;
  int st = pclose(p);
  *code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return buf;
}

char *cmt_run_lmp(const char *dir, const char *args, int *code) {
  size_t n = strlen(dir) + strlen(args) + 128;
  char *cmd = malloc(n);
  if (!cmd) {
    *code = -1;
    return NULL;
  }
  snprintf(cmd, n,
           "cd '%s' && OMPI_MCA_ess_singleton_isolated=1 OMP_NUM_THREADS=1 "
           "lmp %s 2>&1",
           dir, args);
  char *out = NULL;
  for (int attempt = 1; attempt <= 3; attempt++) {
    free(out);
    out = cmt_run(cmd, code);
    /* LAMMPS starts its error lines with ERROR (Open MPI's own
     * ORTE_ERROR_LOG lines are start-up failures) */
    if (*code == 0 ||
        (out && (!strncmp(out, "ERROR", 5) || strstr(out, "\nERROR"))))
      break;
    size_t len = out ? strlen(out) : 0;
    fprintf(stderr, "lmp run %d of 3 failed (status %d) in %s: %s\n", attempt,
            *code, dir,
            out ? out + (len > 600 ? len - 600 : 0) : "(no output)");
  }
  free(cmd);
  return out;
}

int cmt_lammps_deck(char *path) {
  strcpy(path, "/tmp/cmodes-test-deck-XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0) {
    CMT_FAIL("mkstemp: cannot make a temporary file");
    return -1;
  }
  close(fd);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "cd %s && %s import lammps --deck data/lammps/in.pile --dump "
           "data/lammps/pile.dump -q -o %s 2>&1",
           CM_SOURCE_DIR, CM_BINARY, path);
  int code = -1;
  char *log = cmt_run(cmd, &code);
  if (code) {
    CMT_FAIL("cmodes import lammps of data/lammps/in.pile failed (%d): %s",
             code, log ? log : "");
    unlink(path);
  }
  free(log);
  return code ? -1 : 0;
}

char *cmt_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf)
    buf[n] = 0;
  fclose(f);
  return buf;
}

const char *cmt_tmpdir(char *buf, size_t size) {
  snprintf(buf, size, "/tmp/cmodes-test-XXXXXX");
  return mkdtemp(buf);
}

void cmt_write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) {
    CMT_FAIL("cannot write %s", path);
    return;
  }
  fputs(text, f);
  fclose(f);
}

cm_scene_t *cmt_data_scene(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/data/%s", CM_SOURCE_DIR, name);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  if (cm_scene_read_file(&ctx, path, &s))
    CMT_FAIL("read %s: %s", path, ctx.message);
  return s;
}

int main(int argc, char **argv) {
  int ran = 0, failed = 0;
  for (int t = 0; t < cmt_count; t++) {
    int wanted = argc < 2;
    for (int a = 1; a < argc; a++)
      if (strcmp(argv[a], cmt_tests[t].name) == 0)
        wanted = 1;
    if (!wanted)
      continue;
    int before = cmt_failures;
    cmt_tests[t].fn();
    ran++;
    if (cmt_failures > before) {
      failed++;
      fprintf(stderr, "FAIL %s\n", cmt_tests[t].name);
    } else {
      printf("ok   %s\n", cmt_tests[t].name);
    }
  }
  if (ran == 0) {
    fprintf(stderr, "no test matched\n");
    return 2;
  }
  printf("%d passed, %d failed\n", ran - failed, failed);
  return failed ? 1 : 0;
}
