/* test_mtx_write.c: the Matrix Market writer writes the operator's B (it
 * builds none of its own): for a block-diagonal M, B.mtx is
 * cm_operator_csr's B bit for bit; for a general M (a coupled 8 x 8 mass
 * matrix read from files), B.mtx holds rows from solves and S.mtx equals
 * the operator's dense S. Not for the readers (test_import.c). */
#include "cmodes.h"
#include "cmodes/import.h"
#include "cmtest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int mw_put(const char *dir, const char *name, const char *text) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  if (!f)
    return -1;
  fputs(text, f);
  return fclose(f);
}

/* Coordinate entries of a Matrix Market file into dense A (nr x nc,
 * column-major; symmetric files mirrored). Returns 0 or -1. */
static int mw_dense(const char *path, double *A, int nr, int nc) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char line[256];
  int sym = 0, r, c, n, got = 0;
  if (!fgets(line, sizeof line, f))
    return fclose(f), -1;
  sym = strstr(line, "symmetric") != NULL;
  while (fgets(line, sizeof line, f) && line[0] == '%')
    ;
  if (sscanf(line, "%d %d %d", &r, &c, &n) != 3 || r != nr || c != nc)
    return fclose(f), -1;
  memset(A, 0, sizeof(double) * (size_t)nr * (size_t)nc);
  double x;
  while (fscanf(f, "%d %d %lf", &r, &c, &x) == 3) {
    A[(r - 1) + (size_t)(c - 1) * nr] = x;
    if (sym)
      A[(c - 1) + (size_t)(r - 1) * nr] = x;
    got++;
  }
  fclose(f);
  return got == n ? 0 : -1;
}

CM_TEST(mtx_write_general_mass) {
  char dir[] = "/tmp/cmodes_mw_XXXXXX";
  if (!mkdtemp(dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  /* M: 8 x 8 tridiagonal (4 on the diagonal, 1 beside): one coupled block,
   * larger than the block path takes; J: 3 rows; k */
  char m[2048] = "%%MatrixMarket matrix coordinate real symmetric\n8 8 15\n";
  for (int j = 1; j <= 8; j++) {
    size_t len = strlen(m);
    snprintf(m + len, sizeof m - len, "%d %d 4\n", j, j);
    if (j < 8) {
      len = strlen(m);
      snprintf(m + len, sizeof m - len, "%d %d 1\n", j + 1, j);
    }
  }
  CMT_EQ_INT(mw_put(dir, "M.mtx", m), 0);
  CMT_EQ_INT(mw_put(dir, "J.mtx",
                    "%%MatrixMarket matrix coordinate real general\n3 8 6\n"
                    "1 1 1\n1 2 -1\n2 4 1\n2 7 -0.5\n3 8 2\n3 3 0.25\n"),
             0);
  CMT_EQ_INT(mw_put(dir, "k.mtx",
                    "%%MatrixMarket matrix array real general\n3 1\n"
                    "1e5\n2e5\n3e4\n"),
             0);
  char pm[256], pj[256], pk[256], out[256], p[300];
  snprintf(pm, sizeof pm, "%s/M.mtx", dir);
  snprintf(pj, sizeof pj, "%s/J.mtx", dir);
  snprintf(pk, sizeof pk, "%s/k.mtx", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  CMT_EQ_INT(mkdir(out, 0777), 0);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL;
  cm_operator_t *op = NULL;
  CMT_EQ_INT(cm_system_read_matrices(&ctx, pm, pj, pk, &sys), CM_OK);
  CMT_TRUE(sys && !sys->block);
  if (sys)
    CMT_EQ_INT(cm_system_write_matrices(&ctx, sys, out,
                                        CM_MTX_WRITE_B | CM_MTX_WRITE_S, "t"),
               CM_OK);
  if (sys)
    CMT_EQ_INT(cm_operator_create(&ctx, sys, &op), CM_OK);
  double *S = op ? cm_operator_dense_S(&ctx, op) : NULL;
  double B[3 * 8], Sf[9];
  snprintf(p, sizeof p, "%s/B.mtx", out);
  CMT_EQ_INT(mw_dense(p, B, 3, 8), 0);
  snprintf(p, sizeof p, "%s/S.mtx", out);
  CMT_EQ_INT(mw_dense(p, Sf, 3, 3), 0);
  for (int i = 0; S && i < 3; i++)
    for (int j = 0; j < 3; j++) {
      double bbt = 0;
      for (int c = 0; c < 8; c++)
        bbt += B[i + 3 * c] * B[j + 3 * c];
      CMT_REL(bbt, S[i + 3 * j], 1e-12);
      CMT_REL(Sf[i + 3 * j], S[i + 3 * j], 1e-12);
    }
  free(S);
  cm_operator_destroy(&op);
  cm_system_destroy(&sys);
  const char *names[] = {"M.mtx", "J.mtx",    "k.mtx",    "B.mtx",
                         "S.mtx", "rows.txt", "cols.txt", "manifest.json"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", out, names[i]);
    unlink(p);
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
  rmdir(out);
  rmdir(dir);
}

/* A block-diagonal M: B.mtx holds cm_operator_csr's B exactly. */
CM_TEST(mtx_write_block_is_operator) {
  char dir[] = "/tmp/cmodes_mw_XXXXXX";
  if (!mkdtemp(dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  cm_system_t *sys = NULL;
  cm_operator_t *op = NULL;
  CMT_EQ_INT(
      cm_scene_read_file(&ctx, CM_SOURCE_DIR "/data/stack_boxes.json", &s),
      CM_OK);
  CMT_EQ_INT(s ? cm_system_assemble(&ctx, s, &sys) : -1, CM_OK);
  CMT_EQ_INT(sys ? cm_system_write_matrices(&ctx, sys, dir, CM_MTX_WRITE_B, "t")
                 : -1,
             CM_OK);
  CMT_EQ_INT(sys ? cm_operator_create(&ctx, sys, &op) : -1, CM_OK);
  const int *Bp, *Bj;
  const double *Bx;
  if (op && !cm_operator_csr(op, &Bp, &Bj, &Bx)) {
    int nr = sys->nc, nc = sys->n;
    double *A = calloc((size_t)nr * (size_t)nc, sizeof *A);
    char p[300];
    snprintf(p, sizeof p, "%s/B.mtx", dir);
    CMT_EQ_INT(mw_dense(p, A, nr, nc), 0);
    for (int r = 0; r < nr; r++)
      for (int q = Bp[r]; q < Bp[r + 1]; q++)
        if (A[r + (size_t)Bj[q] * nr] != Bx[q])
          CMT_FAIL("B.mtx (%d, %d) = %.17g, the operator's %.17g", r, Bj[q],
                   A[r + (size_t)Bj[q] * nr], Bx[q]);
    free(A);
  } else {
    CMT_FAIL("no CSR view of B");
  }
  cm_operator_destroy(&op);
  cm_system_destroy(&sys);
  cm_scene_destroy(&s);
  const char *names[] = {"M.mtx",    "J.mtx",    "k.mtx",        "B.mtx",
                         "rows.txt", "cols.txt", "manifest.json"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char p[300];
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
  rmdir(dir);
}
