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
