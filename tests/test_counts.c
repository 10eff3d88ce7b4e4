/* test_counts.c: issue #13 items 4, 5, 7, 8 and 9, each from its failing
 * input, and the fuzz-style property test: random 2D and 3D scenes checked
 * against a dense LAPACK solve of the generalized problem
 * (J^T K J) q = omega^2 M q built here from the scene's geometry, with no
 * use of cmodes' assembly, and the counts against the rank of J from a
 * dense SVD. Not for the analytic scenes (test_analytic.c). */
#include "cmtest.h"
#include "cmodes.h"

#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers -------------------------------------------------------------- */

static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fputs(text, f);
  return fclose(f);
}

/* ---- item 8: Matrix Market array files ------------------------------------ */

/* scipy's mmwrite writes a dense M or J in the array format; CHOLMOD's sparse
 * reader refused it ("argument missing"). The bar as arrays: M general and
 * symmetric (lower triangle, column-major), J general. */
CM_TEST(counts_mtx_array_files) {
  char dir[] = "/tmp/cmodes-array-XXXXXX";
  if (!mkdtemp(dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  char pm[96], pms[96], pj[96], pk[96];
  snprintf(pm, sizeof pm, "%s/M.mtx", dir);
  snprintf(pms, sizeof pms, "%s/Ms.mtx", dir);
  snprintf(pj, sizeof pj, "%s/J.mtx", dir);
  snprintf(pk, sizeof pk, "%s/k.mtx", dir);
  /* dofs (x, y, theta); contacts at x = -0.1 and +0.1, normal +y */
  write_text(pm, "%%MatrixMarket matrix array real general\n"
                 "% written like scipy.io.mmwrite(M dense)\n3 3\n"
                 "2\n0\n0\n0\n2\n0\n0\n0\n0.005\n");
  write_text(pms, "%%MatrixMarket matrix array real symmetric\n3 3\n"
                  "2\n0\n0\n2\n0\n0.005\n");
  write_text(pj, "%%MatrixMarket matrix array real general\n2 3\n"
                 "0\n0\n1\n1\n-0.1\n0.1\n");
  write_text(pk, "%%MatrixMarket matrix array real general\n2 1\n"
                 "1e5\n1e5\n");
  const char *ms[2] = {pm, pms};
  for (int v = 0; v < 2; v++) {
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_system_t *sys = NULL;
    int st = cm_system_read_matrices(&ctx, ms[v], pj, pk, &sys);
    if (st) {
      CMT_FAIL("%s: %d %s", ms[v], st, ctx.message);
      continue;
    }
    CMT_EQ_INT(sys->n, 3);
    CMT_EQ_INT(sys->nc, 2);
    cm_report_t *r = NULL;
    CMT_EQ_INT(cm_analyze_system(&ctx, sys, NULL, NULL, &r), CM_OK);
    if (r && r->nmodes == 2) {
      CMT_REL(r->modes[0].omega, sqrt(2 * 1e5 * 0.01 / 0.005), 1e-12);
      CMT_REL(r->modes[1].omega, sqrt(1e5), 1e-12);
      CMT_EQ_INT(r->zero_modes, 0);
      CMT_EQ_INT(r->free_motions, 1);
    }
    cm_report_destroy(&r);
    cm_system_destroy(&sys);
  }
  unlink(pm), unlink(pms), unlink(pj), unlink(pk);
  rmdir(dir);
}

/* ---- item 7: bounds of a large general M ------------------------------------ */

/* A general M (a tridiagonal consistent-mass chain: one block of every dof,
 * so not the block path) with nc x n = 6400 x 6400 > 4e7: the bounds, the
 * per-contact estimate and the certified steps were null. Now numbers, in
 * order: per-contact <= omega_max <= omega_upper. */
CM_TEST(counts_general_m_bounds) {
  int n = 6400, nc = 6400;
  int *Mp = malloc(sizeof(int) * (n + 1)), *Mi = malloc(sizeof(int) * 2 * n);
  double *Mx = malloc(sizeof(double) * 2 * n);
  int *Jp = malloc(sizeof(int) * (nc + 1)), *Jj = malloc(sizeof(int) * 3 * nc);
  double *Jx = malloc(sizeof(double) * 3 * nc), *k = malloc(sizeof(double) * nc);
  int q = 0;
  for (int j = 0; j < n; j++) { /* lower triangle: (j, j) and (j + 1, j) */
    Mp[j] = q;
    Mi[q] = j, Mx[q++] = 4.0 / 6.0;
    if (j + 1 < n)
      Mi[q] = j + 1, Mx[q++] = 1.0 / 6.0;
  }
  Mp[n] = q;
  uint64_t h = 12345;
  q = 0;
  for (int r = 0; r < nc; r++) { /* three columns, ascending */
    Jp[r] = q;
    int c = r * (n / nc);
    for (int t = 0; t < 3; t++) {
      h = h * 6364136223846793005ULL + 1442695040888963407ULL;
      Jj[q] = (c + t * 7) % n;
      Jx[q++] = (double)(h >> 11) / 9007199254740992.0 - 0.5;
    }
    for (int a = Jp[r] + 1; a < q; a++) /* sort the row */
      for (int b = a; b > Jp[r] && Jj[b] < Jj[b - 1]; b--) {
        int tj = Jj[b];
        double tx = Jx[b];
        Jj[b] = Jj[b - 1], Jx[b] = Jx[b - 1], Jj[b - 1] = tj, Jx[b - 1] = tx;
      }
    k[r] = 1e4 * (1 + r % 7);
  }
  Jp[nc] = q;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL;
  cm_report_t *r = NULL;
  CMT_EQ_INT(cm_system_from_matrices(&ctx, n, nc, Mp, Mi, Mx, Jp, Jj, Jx, k,
                                     &sys),
             CM_OK);
  cm_options_t o;
  cm_options_init(&o);
  o.tol = 1e-8;
  if (sys) {
    CMT_EQ_INT(sys->block, 0);
    CMT_EQ_INT(cm_analyze_system(&ctx, sys, NULL, &o, &r), CM_OK);
  }
  if (r) {
    CMT_TRUE(isfinite(r->omega_lower) && isfinite(r->omega_upper));
    CMT_TRUE(isfinite(r->pc_omega_max) && r->pc_contact >= 0);
    CMT_LE(r->omega_lower, r->omega_max * (1 + 1e-12));
    CMT_LE(r->omega_max, r->omega_upper);
    CMT_TRUE(isfinite(r->central_difference.certified_s));
    CMT_LE(r->central_difference.certified_s, r->central_difference.h_s);
    fprintf(stderr, "general M %d x %d: lower %.6g max %.6g upper %.6g "
                    "(%.3f x), bounds %.3f s\n",
            nc, n, r->omega_lower, r->omega_max, r->omega_upper,
            r->omega_upper / r->omega_max, r->t_operator);
  }
  cm_report_destroy(&r);
  cm_system_destroy(&sys);
  free(Mp), free(Mi), free(Mx), free(Jp), free(Jj), free(Jx), free(k);
}
