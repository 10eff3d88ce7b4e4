/* test_counts.c: issue #13 items 4, 5, 7, 8 and 9, each from its failing
 * input, and the fuzz-style property test: random 2D and 3D scenes checked
 * against a dense LAPACK solve of the generalized problem
 * (J^T K J) q = omega^2 M q built here from the scene's geometry, with no
 * use of cmodes' assembly, and the counts against the rank of J from a
 * dense SVD. Not for the analytic scenes (test_analytic.c). */
#include "cmodes.h"
#include "cmtest.h"

#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers --------------------------------------------------------------
 */

static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fputs(text, f);
  return fclose(f);
}

/* ---- item 8: Matrix Market array files ------------------------------------
 */

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
    /* x touches no row and M does not couple it: dropped, as a scene's
     * free body; it still counts as a free motion */
    CMT_EQ_INT(sys->ndofs, 3);
    CMT_EQ_INT(sys->n, 2);
    CMT_EQ_INT(sys->dropped_dofs, 1);
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

/* ---- item 7: bounds of a large general M ------------------------------------
 */

/* A general M (a tridiagonal consistent-mass chain: one block of every dof,
 * so not the block path) with nc x n = 6400 x 6400 > 4e7: the bounds, the
 * per-contact estimate and the certified steps were null. Now numbers, in
 * order: per-contact <= omega_max <= omega_upper. */
static void general_m_case(int n, int nc);

CM_TEST(counts_general_m_bounds) {
  general_m_case(6400, 6400);   /* diag(S) by blocked solves */
  general_m_case(40000, 40000); /* diag(S) bounded by Cauchy-Schwarz */
}

static void general_m_case(int n, int nc) {
  int *Mp = malloc(sizeof(int) * (n + 1)), *Mi = malloc(sizeof(int) * 2 * n);
  double *Mx = malloc(sizeof(double) * 2 * n);
  int *Jp = malloc(sizeof(int) * (nc + 1)), *Jj = malloc(sizeof(int) * 3 * nc);
  double *Jx = malloc(sizeof(double) * 3 * nc),
         *k = malloc(sizeof(double) * nc);
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
  CMT_EQ_INT(
      cm_system_from_matrices(&ctx, n, nc, Mp, Mi, Mx, Jp, Jj, Jx, k, &sys),
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
    fprintf(stderr,
            "general M %d x %d: lower %.6g max %.6g upper %.6g "
            "(%.3f x), bounds %.3f s\n",
            nc, n, r->omega_lower, r->omega_max, r->omega_upper,
            r->omega_upper / r->omega_max, r->t_operator);
  }
  cm_report_destroy(&r);
  cm_system_destroy(&sys);
  free(Mp), free(Mi), free(Mx), free(Jp), free(Jj), free(Jx), free(k);
}

#include "counts_ref.h"

static cm_report_t *analyze_opts(cm_scene_t *s, const cm_options_t *o,
                                 int *st) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_report_t *r = NULL;
  *st = cm_analyze(&ctx, s, o, &r);
  if (*st < 0)
    fprintf(stderr, "cm_analyze: %d %s\n", *st, ctx.message);
  return r;
}

/* ---- item 4: dropped dofs
 * ----------------------------------------------------- */

/* A 2D body of mass 1 with a tiny moment of inertia (I / (m r^2) = 1e-26) on
 * one spring whose lever arm is 0.9e-12 |r|: the old test |r x n| <= 1e-12
 * |r| dropped theta, giving omega = sqrt(k/m), 89% below the truth
 * sqrt(k (1/m + l^2/I)) = sqrt(82 k), with omega_upper below the truth too.
 * Also a 3D sphere-like body with the same tiny inertia. */
CM_TEST(counts_tiny_inertia_lever) {
  for (int dim = 2; dim <= 3; dim++) {
    cm_scene_t *s = cm_scene_create(dim);
    double I3[3] = {1e-26, 1e-26, 1e-26}, x[3] = {0, 0, 0};
    add_body(s, 1.0, I3, x, NULL);
    double p[3] = {0.9e-12, -1, 0}, n[3] = {0, 1, 0}, k = 1e4;
    add_contact(s, 0, CM_WORLD, p, n, k, 0);
    ref_t R = {0};
    int st;
    cm_report_t *r = analyze_opts(s, NULL, &st);
    CMT_EQ_INT(ref_build(s, &R), 0);
    CMT_REL(sqrt(R.lambda[0]), sqrt(82 * k), 1e-12);
    CMT_EQ_INT(st, CM_OK);
    if (r) {
      CMT_REL(r->omega_max, sqrt(R.lambda[0]), 1e-12);
      CMT_LE(sqrt(R.lambda[0]), r->omega_upper * (1 + 1e-14));
      CMT_LE(r->central_difference.certified_s,
             2 / sqrt(R.lambda[0]) * (1 + 1e-14));
      CMT_EQ_INT(r->active_dofs, 2); /* y and the rotation about z */
    }
    cm_report_destroy(&r);
    ref_free(&R);
    cm_scene_destroy(&s);
  }
}

/* Sphere spins: a contact through the centre leaves r x n at rounding
 * level; with an ordinary inertia it is still dropped (the operator keeps
 * 3 dofs a sphere), and the frequency is the truth's. */
CM_TEST(counts_sphere_spin_dropped) {
  cm_scene_t *s = cm_scene_create(3);
  double R0 = 0.013, m = 0.02, Isp = 0.4 * m * R0 * R0;
  double I3[3] = {Isp, Isp, Isp}, x[3] = {0.3, 0.7, R0};
  add_body(s, m, I3, x, NULL);
  double n[3] = {0.3, -0.5, 0.8}, l = sqrt(0.98);
  n[0] /= l, n[1] /= l, n[2] /= l;
  double p[3] = {x[0] - R0 * n[0], x[1] - R0 * n[1], x[2] - R0 * n[2]};
  add_contact(s, 0, CM_WORLD, p, n, 3e4, 0);
  int st;
  cm_report_t *r = analyze_opts(s, NULL, &st);
  ref_t Rf = {0};
  CMT_EQ_INT(ref_build(s, &Rf), 0);
  if (r) {
    CMT_EQ_INT(r->active_dofs, 3);
    CMT_REL(r->omega_max, sqrt(Rf.lambda[0]), 1e-14);
    CMT_EQ_INT(r->free_motions, 6 - Rf.rank);
  }
  cm_report_destroy(&r);
  ref_free(&Rf);
  cm_scene_destroy(&s);
}

/* Inertia coupling: a near-singular tensor (cond 1e30) whose world block
 * couples the touched rotation to an untouched one by 1e-15 (under the old
 * 1e-14 trace limit, so the untouched one was dropped): omega_max came out
 * about half the truth and the certified step unsafe. Double precision
 * cannot represent such a tensor in a rotated frame: the scene is refused
 * with a message naming the body. At cond 1e12 it is analysed, with a
 * warning, the truth inside the bounds and omega_max good to the stated
 * accuracy. */
CM_TEST(counts_near_singular_inertia) {
  for (int v = 0; v < 2; v++) {
    cm_scene_t *s = cm_scene_create(3);
    double eps = v == 0 ? 1e-30 : 1e-12, th = v == 0 ? 1e-15 : 1e-3;
    double I3[3] = {1.0, eps, 1.0}, x[3] = {0, 0, 0};
    double q[4] = {cos(th / 2), 0, 0, sin(th / 2)}; /* th about z */
    add_body(s, 1.0, I3, x, q);
    /* rotations about x touched (r x n along x), y and z untouched */
    double p[3] = {0, -0.5, 0}, n[3] = {0, 0, 1};
    add_contact(s, 0, CM_WORLD, p, n, 1e4, 0);
    ref_t R = {0};
    CMT_EQ_INT(ref_build(s, &R), 0);
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_report_t *r = NULL;
    int st = cm_analyze(&ctx, s, NULL, &r);
    if (v == 0) {
      CMT_EQ_INT(st, CM_NOT_SPD);
      CMT_CONTAINS(ctx.message, "bodies[0].inertia");
      CMT_CONTAINS(ctx.message, "condition number");
    } else {
      CMT_EQ_INT(st, CM_OK);
      if (r) {
        double w = sqrt(R.lambda[0]), d = 3.6e-15 * 1e12;
        CMT_TRUE(r->warning != NULL);
        CMT_CONTAINS(r->warning, "condition number");
        CMT_REL(r->omega_max, w, d);
        CMT_LE(w, r->omega_upper);
        CMT_LE(r->central_difference.certified_s, 2 / w);
      }
    }
    cm_report_destroy(&r);
    ref_free(&R);
    cm_scene_destroy(&s);
  }
}

/* ---- the property test ------------------------------------------------------
 */

/* 1000 random scenes (counts_ref.h): per-contact <= omega_max <= every
 * upper bound, certified <= critical, counts equal the rank of J, the top k
 * complete. bench/fuzz_counts --scenes N runs more. */
CM_TEST(counts_fuzz) {
  fz_stats_t st = {0};
  st.worst_upper = INFINITY;
  for (uint64_t i = 0; i < 1000; i++) {
    cm_options_t o;
    fz_options(i, &o);
    if (fz_check(i, &o, &st))
      cmt_failures++;
  }
  fprintf(stderr,
          "fuzz: %d scenes, %d failed, %d refused, %d with an ambiguous rank "
          "(not compared), %d missing a repeated copy (multiplicity check "
          "%s), worst |omega_max - truth| / truth %.3g, smallest "
          "omega_upper / truth %.6f\n",
          st.scenes, st.failed, st.refused, st.ambiguous, st.multiplicity,
          FZ_CHECK_MULTIPLICITY ? "on" : "off (-DFZ_CHECK_MULTIPLICITY=0)",
          st.worst_rel, st.worst_upper);
  CMT_TRUE(st.ambiguous <= st.scenes / 20);
}

/* ---- item 5: counts of large components (SuiteSparseQR) --------------------
 */

/* Rank of the assembled J by a dense SVD, numpy's tolerance. */
static int svd_rank(const cm_system_t *sys) {
  int m = sys->nc, n = sys->n, mn = m < n ? m : n, rank = 0;
  double *A = calloc((size_t)m * n + 1, sizeof(double));
  double *sv = malloc(sizeof(double) * (mn + 1));
  for (int r = 0; r < m; r++)
    for (int q = sys->Jp[r]; q < sys->Jp[r + 1]; q++)
      A[(size_t)sys->Jj[q] * m + r] = sys->Jx[q];
  if (LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', m, n, A, m, sv, NULL, 1, NULL, 1) ==
      0) {
    double tol = sv[0] * (m > n ? m : n) * 2.220446049250313e-16;
    for (int i = 0; i < mn; i++)
      rank += sv[i] > tol;
    if (getenv("CM_SVD_DEBUG"))
      for (int i = rank - 3; i < rank + 3 && i < mn; i++)
        if (i >= 0)
          fprintf(stderr, "  sv[%d] = %.3g (tol %.3g)\n", i, sv[i], tol);
  } else
    rank = -1;
  free(A), free(sv);
  return rank;
}

/* Components above 400 rows and dofs take SuiteSparseQR's rank: an FCC
 * crystal (redundant: zero modes) and a 3D pile, each also with tangential
 * springs on every other contact and some stiffnesses and masses spread
 * over 1e12 (the old count, from S's eigenvalues, took soft real modes for
 * zero modes there), against a dense SVD of J. */
CM_TEST(counts_large_components_spqr) {
  for (int v = 0; v < 4; v++) {
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_scene_t *s = NULL;
    if (v < 2) {
      cm_crystal_options_t co;
      cm_crystal_options_init(&co);
      co.nx = co.ny = co.nz = 8;
      cm_generate_crystal(&ctx, &co, &s);
    } else {
      cm_pile_options_t po;
      cm_pile_options_init(&po);
      po.dim = 3, po.count = 300, po.seed = 7;
      cm_generate_pile(&ctx, &po, &s);
    }
    if (!s) {
      CMT_FAIL("generate: %s", ctx.message);
      continue;
    }
    for (int c = 0; c < s->ncontacts; c++) {
      s->contacts[c].stiffness *= pow(10, (c % 13) - 6);
      if (v % 2 && c % 2)
        s->contacts[c].stiffness_t = 0.3 * s->contacts[c].stiffness;
    }
    for (int b = 0; b < s->nbodies; b++) {
      double f = pow(10, (b % 7) - 3);
      s->bodies[b].mass *= f;
      for (int i = 0; i < 9; i++)
        s->bodies[b].inertia[i] *= f;
    }
    cm_system_t *sys = NULL;
    cm_report_t *r = NULL;
    CMT_EQ_INT(cm_system_assemble(&ctx, s, &sys), CM_OK);
    CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &r), CM_OK);
    if (sys && r) {
      int big = 0;
      for (int c = 0; c < sys->ncomp; c++) {
        int m = sys->comp_row[c + 1] - sys->comp_row[c];
        int n = sys->comp_col[c + 1] - sys->comp_col[c];
        big |= m > 400 && n > 400;
      }
      CMT_TRUE(big);
      int rank = svd_rank(sys);
      CMT_EQ_INT(r->zero_modes, sys->nc - rank);
      CMT_EQ_INT(r->free_motions, sys->ndofs - rank);
      fprintf(stderr, "variant %d: %d rows, %d dofs, rank %d, zero modes %d\n",
              v, sys->nc, sys->n, rank, r->zero_modes);
    }
    cm_report_destroy(&r);
    cm_system_destroy(&sys);
    cm_scene_destroy(&s);
  }
}

/* A component above options.rank_max_rows leaves the counts unknown, with
 * the reason; 0 means every size. */
CM_TEST(counts_rank_limit) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  CMT_EQ_INT(
      cm_scene_read_file(&ctx, CM_SOURCE_DIR "/data/crystal_fcc.json", &s),
      CM_OK);
  cm_options_t o;
  cm_options_init(&o);
  CMT_EQ_INT(o.rank_max_rows, 20000);
  for (int v = 0; v < 2 && s; v++) {
    o.rank_max_rows = v ? 0 : 10;
    cm_report_t *r = NULL;
    CMT_EQ_INT(cm_analyze(&ctx, s, &o, &r), CM_OK);
    if (r && !v) {
      CMT_EQ_INT(r->zero_modes, -1);
      CMT_EQ_INT(r->free_motions, -1);
      CMT_CONTAINS(r->counts_note, "rank_max_rows");
      char *js = cm_report_to_json(r, 0);
      CMT_CONTAINS(js, "\"reason\"");
      free(js);
    } else if (r) {
      CMT_EQ_INT(r->zero_modes, 23);
      CMT_EQ_INT(r->free_motions, 99);
      CMT_TRUE(r->counts_note == NULL);
    }
    cm_report_destroy(&r);
  }
  o.rank_max_rows = -1;
  cm_report_t *r = NULL;
  CMT_EQ_INT(cm_analyze(&ctx, s, &o, &r), CM_USAGE);
  cm_scene_destroy(&s);
}

/* counts.rank_sharp: J = [e1; e2; e1 + e2 + eps e3] (M = I, k = 1). The
 * third row's part outside the first two is eps e3, of norm eps, and the
 * QR's tolerance is 1e-10 sqrt(|J|_1 |J|_inf) = 1e-10 sqrt(2 (2 + eps)):
 * eps = 1e-10 is dropped at about half the tolerance (zero modes 1, the
 * counts not sharp, and the text says so), eps = 1e-3 is kept (rank 3:
 * zero modes 0, nothing dropped: sharp), and without the e3 entry the
 * dependence is exact (zero modes 1, sharp). */
static cm_report_t *rank_near_report(double eps, char **text) {
  int Mp[4] = {0, 1, 2, 3}, Mi[3] = {0, 1, 2}, Jp[4] = {0, 1, 2, 0};
  int Jj[5] = {0, 1, 0, 1, 2};
  double Mx[3] = {1, 1, 1}, Jx[5] = {1, 1, 1, 1, eps}, k[3] = {1, 1, 1};
  Jp[3] = eps != 0 ? 5 : 4;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL;
  cm_report_t *r = NULL;
  CMT_EQ_INT(
      cm_system_from_matrices(&ctx, 3, 3, Mp, Mi, Mx, Jp, Jj, Jx, k, &sys),
      CM_OK);
  if (sys)
    CMT_EQ_INT(cm_analyze_system(&ctx, sys, NULL, NULL, &r), CM_OK);
  cm_system_destroy(&sys);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (r && f)
    cm_report_write_text(r, f);
  if (f)
    fclose(f);
  *text = buf;
  return r;
}

CM_TEST(counts_rank_sharp_near_threshold) {
  char *text = NULL;
  cm_report_t *r = rank_near_report(1e-10, &text);
  if (r) {
    CMT_EQ_INT(r->zero_modes, 1);
    CMT_EQ_INT(r->rank_sharp, 0);
    CMT_CONTAINS(text, "not sharp: the sparse QR dropped");
  }
  cm_report_destroy(&r), free(text);
  r = rank_near_report(1e-3, &text);
  if (r) {
    CMT_EQ_INT(r->zero_modes, 0);
    CMT_EQ_INT(r->rank_sharp, 1);
    CMT_TRUE(text && !strstr(text, "not sharp"));
  }
  cm_report_destroy(&r), free(text);
  r = rank_near_report(0, &text);
  if (r) {
    CMT_EQ_INT(r->zero_modes, 1);
    CMT_EQ_INT(r->rank_sharp, 1);
    CMT_TRUE(text && !strstr(text, "not sharp"));
  }
  cm_report_destroy(&r), free(text);
}
