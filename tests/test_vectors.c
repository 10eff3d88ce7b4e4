/* test_vectors.c: cm_analyze_vectors (mode shapes) and the options by name
 * (cm_options_set / cm_options_get), the API of the Python package. */
#include "cmodes.h"
#include "cmtest.h"

/* The reference bar: phi of the bounce is 1/sqrt(m) on y, of the rocking
 * 1/sqrt(I) on the rotation; z = (1, -1)/sqrt 2 and (1, 1)/sqrt 2. */
CM_TEST(vectors_bar2d) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_bar_options_t bo;
  cm_bar_options_init(&bo);
  cm_scene_t *scene = NULL;
  CMT_EQ_INT(cm_generate_bar(&ctx, &bo, &scene), CM_OK);
  cm_system_t *sys = NULL;
  CMT_EQ_INT(cm_system_assemble(&ctx, scene, &sys), CM_OK);
  cm_report_t *r = NULL;
  cm_vectors_t *v = NULL;
  CMT_EQ_INT(cm_analyze_vectors(&ctx, sys, scene, NULL, &r, &v), CM_OK);
  CMT_EQ_INT(v->nmodes, 2);
  CMT_EQ_INT(v->nrows, 2);
  CMT_EQ_INT(v->ndofs, 2);
  double s = sqrt(0.5);
  CMT_REL(fabs(v->z[0]), s, 1e-14);
  CMT_REL(v->z[0] * v->z[1], -0.5, 1e-14); /* rocking: opposite signs */
  CMT_REL(v->z[2] * v->z[3], 0.5, 1e-14);  /* bounce: same sign */
  /* rocking phi on the rotation dof, bounce on y */
  double rock = fabs(v->phi[0]) + fabs(v->phi[1]);
  double bounce = fabs(v->phi[2]) + fabs(v->phi[3]);
  CMT_REL(rock, 1 / sqrt(bo.inertia), 1e-12);
  CMT_REL(bounce, 1 / sqrt(bo.mass), 1e-12);
  /* xi = J phi = omega z / sqrt(k) */
  CMT_REL(fabs(v->xi[0]), r->modes[0].omega * s / sqrt(bo.k), 1e-12);
  cm_vectors_destroy(&v);
  cm_vectors_destroy(&v); /* NULL: no-op */
  CMT_TRUE(v == NULL);
  cm_report_destroy(&r);
  cm_system_destroy(&sys);
  cm_scene_destroy(&scene);
}

CM_TEST(vectors_options_by_name) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_options_t o;
  cm_options_init(&o);
  double v = 0;
  CMT_EQ_INT(cm_options_set(&ctx, &o, "max_iter", "500"), CM_OK);
  CMT_EQ_INT(cm_options_set(&ctx, &o, "freq-tol", "0.02"), CM_OK);
  CMT_EQ_INT(cm_options_set(&ctx, &o, "method", "dense"), CM_OK);
  CMT_EQ_INT(o.max_iter, 500);
  CMT_REL(o.freq_tol, 0.02, 0);
  CMT_EQ_INT(o.method, CM_METHOD_DENSE);
  CMT_EQ_INT(cm_options_get(&ctx, &o, "modes", &v), CM_OK);
  CMT_REL(v, 6, 0);
  CMT_EQ_INT(cm_options_set(&ctx, &o, "tol", "2"), CM_USAGE);
  CMT_CONTAINS(ctx.message, "tol: '2' is not a number in (0, 1)");
  CMT_EQ_INT(cm_options_set(&ctx, &o, "modes", "2.5"), CM_USAGE);
  CMT_CONTAINS(ctx.message, "is not an integer");
  CMT_EQ_INT(cm_options_set(&ctx, &o, "bogus", "1"), CM_USAGE);
  CMT_CONTAINS(ctx.message, "unknown option");
  CMT_EQ_INT(cm_options_validate(&ctx, &o), CM_OK);
  o.tol = -1;
  CMT_EQ_INT(cm_options_validate(&ctx, &o), CM_USAGE);
}

/* A general (full) M: phi solves J^T K J phi = lambda M phi, phi^T M phi = 1
 * with phi in the order of M's rows (col_dof). */
CM_TEST(vectors_general_M) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  /* M = [4 1 1; 1 3 1; 1 1 2] (lower CSC), J 2 x 3, k */
  int Mp[] = {0, 3, 5, 6}, Mi[] = {0, 1, 2, 1, 2, 2};
  double Mx[] = {4, 1, 1, 3, 1, 2};
  int Jp[] = {0, 2, 5}, Jj[] = {0, 2, 0, 1, 2};
  double Jx[] = {1, -1, 0.5, 1, 2}, k[] = {1e4, 3e4};
  double Md[3][3] = {{4, 1, 1}, {1, 3, 1}, {1, 1, 2}};
  cm_system_t *sys = NULL;
  CMT_EQ_INT(
      cm_system_from_matrices(&ctx, 3, 2, Mp, Mi, Mx, Jp, Jj, Jx, k, &sys),
      CM_OK);
  cm_report_t *r = NULL;
  cm_vectors_t *v = NULL;
  CMT_EQ_INT(cm_analyze_vectors(&ctx, sys, NULL, NULL, &r, &v), CM_OK);
  CMT_EQ_INT(v->nmodes, r->nmodes);
  for (int p = 0; p < v->nmodes; p++) {
    double phi[3] = {0}, lam = r->modes[p].lambda;
    for (int j = 0; j < 3; j++)
      phi[v->col_dof[j]] = v->phi[p * 3 + j];
    double mm = 0, res = 0, scale = 0;
    for (int i = 0; i < 3; i++) {
      double Mphi = 0, Kphi = 0;
      for (int j = 0; j < 3; j++)
        Mphi += Md[i][j] * phi[j];
      for (int rr = 0; rr < 2; rr++) { /* (J^T K J phi)_i */
        double Jr_phi = 0, Jri = 0;
        for (int q = Jp[rr]; q < Jp[rr + 1]; q++) {
          Jr_phi += Jx[q] * phi[Jj[q]];
          if (Jj[q] == i)
            Jri = Jx[q];
        }
        Kphi += Jri * k[rr] * Jr_phi;
      }
      mm += phi[i] * Mphi;
      res += (Kphi - lam * Mphi) * (Kphi - lam * Mphi);
      scale += lam * Mphi * lam * Mphi;
    }
    CMT_REL(mm, 1.0, 1e-12);
    CMT_LE(sqrt(res), 1e-10 * sqrt(scale));
  }
  cm_vectors_destroy(&v);
  cm_report_destroy(&r);
  cm_system_destroy(&sys);
}
