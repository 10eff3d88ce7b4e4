/* test_lever.c: lever arms and lengths near the overflow of their squares
 * (issue #18, item 5: "a lever arm above ~1e154 silently ..."). Session 7
 * reproduced it with the 1e150 m scene guard disabled: from 1e154, J's
 * entries made SuiteSparseQR's squared column norms inf and the rank 0, so
 * the counts (free motions, zero modes) were silently wrong with exit 0;
 * matrix systems have no lever arms to guard and still reached it. And a
 * dump of atoms with radii past ~1e154 imported with 0 contacts (squared
 * distances inf). Each path is checked here against an exact truth. */
#include "cmodes.h"
#include "cmodes/import.h"
#include "cmtest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *lever_file(const char *name, const char *text) {
  static char path[4][96];
  static int slot;
  char *p = path[slot++ % 4];
  snprintf(p, sizeof path[0], "/tmp/cmodes-lever-%ld-%s", (long)getpid(), name);
  FILE *f = fopen(p, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
  return p;
}

/* k of lever_bar(e): small for large arms, so that k J M^-1 J^T stays
 * finite. */
static double lever_k(int e) { return e > 0 ? 1e-300 : 1.0; }

/* The planar bar as a matrix system with J scaled by 2^e (exact): the
 * rank of J, hence the counts, cannot depend on e; omega_max^2 scales by
 * 2^(2e) k. */
static cm_report_t *lever_bar(int e) {
  double L = ldexp(0.1, e), one = ldexp(1.0, e);
  char J[512];
  snprintf(J, sizeof J,
           "%%%%MatrixMarket matrix coordinate real general\n2 3 4\n"
           "1 2 %.17g\n1 3 %.17g\n2 2 %.17g\n2 3 %.17g\n",
           one, -L, one, L);
  const char *pm = lever_file("M.mtx", "%%MatrixMarket matrix coordinate "
                                       "real general\n3 3 3\n1 1 2\n2 2 2\n"
                                       "3 3 0.005\n");
  const char *pj = lever_file("J.mtx", J);
  char k[128];
  snprintf(k, sizeof k,
           "%%%%MatrixMarket matrix array real general\n2 1\n%.17g\n%.17g\n",
           lever_k(e), lever_k(e));
  const char *pk = lever_file("k.mtx", k);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL;
  cm_report_t *r = NULL;
  int st = cm_system_read_matrices(&ctx, pm, pj, pk, &sys);
  if (!st)
    st = cm_analyze_system(&ctx, sys, NULL, NULL, &r);
  if (st)
    CMT_FAIL("e = %d: %s", e, ctx.message);
  cm_system_destroy(&sys);
  unlink(pm), unlink(pj), unlink(pk);
  return r;
}

CM_TEST(lever_rank_scaled) {
  cm_report_t *ref = lever_bar(0);
  CMT_TRUE(ref != NULL);
  if (!ref)
    return;
  /* rows (0, 1, -0.1), (0, 1, 0.1): rank 2, so 1 free motion, 0 zero
   * modes */
  CMT_EQ_INT(ref->free_motions, 1);
  CMT_EQ_INT(ref->zero_modes, 0);
  static const int es[] = {510, 520, 200, -100};
  for (int i = 0; i < 4; i++) {
    cm_report_t *r = lever_bar(es[i]);
    if (!r)
      continue;
    CMT_EQ_INT(r->free_motions, ref->free_motions); /* was 3 from 2^510 */
    CMT_EQ_INT(r->zero_modes, ref->zero_modes);     /* was 2 */
    CMT_REL(r->omega_max,
            ldexp(ref->omega_max, es[i]) * sqrt(lever_k(es[i]) / lever_k(0)),
            1e-12);
    cm_report_destroy(&r);
  }
  cm_report_destroy(&ref);
}

/* Two overlapping atoms of radius 1e155 (with a mass column, so that the
 * masses and inertias are finite): refused naming the atom and the radius
 * (was: imported with 0 contacts, exit 0). */
CM_TEST(lever_dump_huge_radius) {
  const char *dump = "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\n"
                     "ITEM: BOX BOUNDS ff ff ff\n-1e160 1e160\n-1e160 1e160\n"
                     "-1e160 1e160\nITEM: ATOMS id type x y z radius mass\n"
                     "1 1 0 0 0 1e155 1e-300\n2 1 1.5e155 0 0 1e155 1e-300\n";
  const char *path = lever_file("big.dump", dump);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  o.k = 1;
  cm_dump_t *d = NULL;
  cm_scene_t *s = NULL;
  int st = cm_dump_read(&ctx, path, &o, &d);
  CMT_EQ_INT(st, CM_OK);
  if (!st)
    st = cm_dump_to_scene(&ctx, d, &o, &s);
  CMT_EQ_INT(st, CM_INVALID_SCENE);
  CMT_CONTAINS(ctx.message, "big.dump:10: atom 1 has radius 1e+155 m");
  CMT_TRUE(s == NULL);
  /* the same pair at 1e100 m: one contact */
  cm_dump_destroy(&d);
  const char *ok = "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\n"
                   "ITEM: BOX BOUNDS ff ff ff\n-1e160 1e160\n-1e160 1e160\n"
                   "-1e160 1e160\nITEM: ATOMS id type x y z radius mass\n"
                   "1 1 0 0 0 1e100 1\n2 1 1.5e100 0 0 1e100 1\n";
  path = lever_file("ok.dump", ok);
  cm_context_init(&ctx);
  st = cm_dump_read(&ctx, path, &o, &d);
  if (!st)
    st = cm_dump_to_scene(&ctx, d, &o, &s);
  CMT_EQ_INT(st, CM_OK);
  if (s)
    CMT_EQ_INT(s->ncontacts, 1);
  cm_scene_destroy(&s);
  cm_dump_destroy(&d);
  unlink(path);
}

/* The binary format goes through the same guard as JSON (test_robust.c):
 * a scene built in memory with a point 1e155 m from its body, written as
 * .cmsb, is refused on reading, naming the field. */
CM_TEST(lever_binary_guard) {
  cm_scene_t *s = cm_scene_create(2);
  cm_body_t b;
  cm_body_init(&b);
  b.mass = 1, b.inertia[0] = 1;
  cm_scene_add_body(NULL, s, &b, NULL);
  cm_contact_t c;
  cm_contact_init(&c);
  c.a = 0, c.b = CM_WORLD;
  c.point[0] = 1e155, c.normal[1] = 1, c.stiffness = 1e-200;
  cm_scene_add_contact(NULL, s, &c, NULL);
  char path[96];
  snprintf(path, sizeof path, "/tmp/cmodes-lever-%ld.cmsb", (long)getpid());
  cm_context_t ctx;
  cm_context_init(&ctx);
  FILE *f = fopen(path, "wb");
  int st = f ? cm_scene_write_binary(&ctx, s, f) : CM_IO;
  if (f)
    fclose(f);
  cm_scene_destroy(&s);
  if (st) { /* a writer that validates refuses it just the same */
    CMT_EQ_INT(st, CM_INVALID_SCENE);
    CMT_CONTAINS(ctx.message, "contacts[0].point: a lever arm of 1e+155 m");
  } else {
    st = cm_scene_read_file(&ctx, path, &s);
    CMT_EQ_INT(st, CM_INVALID_SCENE);
    CMT_CONTAINS(ctx.message, "contacts[0].point: a lever arm of 1e+155 m");
    cm_scene_destroy(&s);
  }
  unlink(path);
}
