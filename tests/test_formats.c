/* test_formats.c: the binary scene format keeps every number bit for bit
 * (the same report as the JSON scene) and rejects damaged files clearly. */
#include "cmodes.h"
#include "cmtest.h"

#include <unistd.h>

static cm_scene_t *bar3d(void) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = cm_scene_create(3);
  cm_body_t b;
  cm_body_init(&b);
  b.mass = 2;
  b.orientation[0] = cos(0.2), b.orientation[3] = sin(0.2);
  b.inertia[0] = 0.001, b.inertia[4] = 0.004, b.inertia[8] = 0.005;
  cm_scene_add_body(&ctx, s, &b, "bar");
  for (int i = 0; i < 3; i++) {
    cm_contact_t c;
    cm_contact_init(&c);
    c.a = 0;
    c.point[0] = 0.1 * (i - 1), c.point[1] = -0.01, c.point[2] = 0.003 * i;
    c.normal[1] = 1, c.normal[0] = 0.01 * i;
    c.stiffness = 1e5 * (1 + i);
    cm_scene_add_contact(&ctx, s, &c, NULL);
  }
  return s;
}

CM_TEST(formats_binary_roundtrip) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = bar3d(), *t = NULL;
  char path[] = "/tmp/cmodes_bin_XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "wb");
  CMT_EQ_INT(cm_scene_write_binary(&ctx, s, f), 0);
  fclose(f);
  CMT_EQ_INT(cm_scene_read_file(&ctx, path, &t), 0);
  CMT_TRUE(t && t->ncontacts == 3 && t->nbodies == 1);
  for (int i = 0; t && i < 3; i++)
    CMT_TRUE(memcmp(&t->contacts[i], &s->contacts[i], sizeof(cm_contact_t)) ==
             0);
  cm_report_t *r1 = NULL, *r2 = NULL;
  CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &r1), 0);
  CMT_EQ_INT(cm_analyze(&ctx, t, NULL, &r2), 0);
  CMT_TRUE(r1 && r2 && r1->omega_max == r2->omega_max &&
           r1->nmodes == r2->nmodes);
  cm_report_destroy(&r1);
  cm_report_destroy(&r2);
  /* damaged files: truncated, and a wrong version */
  char *buf = cmt_read_file(path);
  long len = 32 + 144 + 3 * 72;
  f = fopen(path, "wb");
  fwrite(buf, 1, (size_t)len - 5, f);
  fclose(f);
  cm_scene_destroy(&t);
  CMT_EQ_INT(cm_scene_read_file(&ctx, path, &t), CM_PARSE);
  CMT_CONTAINS(ctx.message, "truncated or has trailing data");
  buf[8] = 7; /* version 7 */
  f = fopen(path, "wb");
  fwrite(buf, 1, (size_t)len, f);
  fclose(f);
  CMT_EQ_INT(cm_scene_read_file(&ctx, path, &t), CM_PARSE);
  CMT_CONTAINS(ctx.message, "binary scene version 7");
  /* a bad value inside is found by the validator, with its place */
  buf[8] = 1;
  double neg = -1;
  memcpy(buf + 32 + 8, &neg, 8); /* bodies[0].mass */
  f = fopen(path, "wb");
  fwrite(buf, 1, (size_t)len, f);
  fclose(f);
  CMT_EQ_INT(cm_scene_read_file(&ctx, path, &t), CM_INVALID_SCENE);
  CMT_CONTAINS(ctx.message, "bodies[0].mass: -1 is not positive");
  free(buf);
  unlink(path);
  cm_scene_destroy(&s);
}

/* A file of several MiB goes through the reader's buffers in pieces, on
 * every thread: each record lands at its index, bit for bit (versions 1
 * and 2, 1 and 3 threads); a file cut short is refused. */
CM_TEST(formats_binary_pieces) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_pile_options_t po;
  cm_pile_options_init(&po);
  po.dim = 3, po.count = 12000, po.seed = 11;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_pile(&ctx, &po, &s), 0);
  CMT_TRUE(s && s->nbodies * 144 > (1 << 20) && s->ncontacts * 72 > (2 << 20));
  char path[] = "/tmp/cmodes_bin_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  for (int v = 1; s && v <= 2; v++) {
    if (v == 2) /* a version 2 value: 152-byte contact records */
      for (int i = 0; i < s->ncontacts; i += 3)
        s->contacts[i].stiffness_t = 0.5 * s->contacts[i].stiffness;
    FILE *f = fopen(path, "wb");
    CMT_EQ_INT(cm_scene_write_binary(&ctx, s, f), 0);
    fclose(f);
    for (int th = 1; th <= 3; th += 2) {
      ctx.threads = th;
      cm_scene_t *t = NULL;
      CMT_EQ_INT(cm_scene_read_file(&ctx, path, &t), 0);
      CMT_TRUE(t && t->nbodies == s->nbodies && t->ncontacts == s->ncontacts);
      int bad = 0; /* field by field: a struct's padding is not data */
      for (int i = 0; t && i < s->nbodies; i++) {
        const cm_body_t *a = &s->bodies[i], *b = &t->bodies[i];
        bad += a->fixed != b->fixed || memcmp(&a->mass, &b->mass, 8) ||
               memcmp(a->inertia, b->inertia, sizeof a->inertia) ||
               memcmp(a->position, b->position, sizeof a->position) ||
               memcmp(a->orientation, b->orientation, sizeof a->orientation);
      }
      for (int i = 0; t && i < s->ncontacts; i++) {
        const cm_contact_t *a = &s->contacts[i], *b = &t->contacts[i];
        bad += a->a != b->a || a->b != b->b || a->has_arms != b->has_arms ||
               memcmp(a->point, b->point, sizeof a->point) ||
               memcmp(a->normal, b->normal, sizeof a->normal) ||
               memcmp(&a->stiffness, &b->stiffness, 8) ||
               memcmp(&a->stiffness_t, &b->stiffness_t, 8) ||
               memcmp(&a->damping_n, &b->damping_n, 8) ||
               memcmp(&a->damping_t, &b->damping_t, 8) ||
               memcmp(a->arm_a, b->arm_a, sizeof a->arm_a) ||
               memcmp(a->arm_b, b->arm_b, sizeof a->arm_b);
      }
      CMT_EQ_INT(bad, 0);
      cm_scene_destroy(&t);
    }
    /* the last record cut off: refused before anything is read */
    CMT_EQ_INT(truncate(path, 32 + (v == 2 ? 8 : 0) + 144L * s->nbodies +
                                  (v == 2 ? 152L : 72L) * s->ncontacts - 1),
               0);
    cm_scene_t *t = NULL;
    CMT_EQ_INT(cm_scene_read_file(&ctx, path, &t), CM_PARSE);
    CMT_CONTAINS(ctx.message, "truncated or has trailing data");
    CMT_TRUE(t == NULL);
  }
  unlink(path);
  cm_scene_destroy(&s);
}

/* The CSR view of B is the operator: B B^T x through it equals apply_S. */
CM_TEST(formats_operator_csr_view) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = bar3d();
  cm_system_t *sys = NULL;
  cm_operator_t *op = NULL;
  CMT_EQ_INT(cm_system_assemble(&ctx, s, &sys), 0);
  CMT_EQ_INT(cm_operator_create(&ctx, sys, &op), 0);
  const int *Bp, *Bj;
  const double *Bx;
  CMT_EQ_INT(cm_operator_csr(op, &Bp, &Bj, &Bx), 0);
  int m = cm_operator_rows(op);
  double x[3] = {1, -2, 0.5}, t[6] = {0}, y[3], ref[3];
  for (int i = 0; i < m; i++) /* t = B^T x by B's rows */
    for (int q = Bp[i]; q < Bp[i + 1]; q++)
      t[Bj[q]] += Bx[q] * x[i];
  for (int i = 0; i < m; i++) { /* y = B t */
    y[i] = 0;
    for (int q = Bp[i]; q < Bp[i + 1]; q++)
      y[i] += Bx[q] * t[Bj[q]];
  }
  CMT_EQ_INT(cm_operator_apply_S(op, -1, x, ref), 0);
  for (int i = 0; i < m; i++)
    CMT_REL(y[i], ref[i], 1e-14);
  cm_operator_destroy(&op);
  cm_system_destroy(&sys);
  cm_scene_destroy(&s);
}

/* Damaged records anywhere in a file that the reader takes in several
 * pieces on several threads give cm_scene_validate's own message on the
 * same scene in memory (the first bad body before any contact, else the
 * first bad contact), after the file's name, at 1 and 3 threads; so does
 * a negative time step with every record sound. */
static void formats_bad_case(cm_context_t *ctx, const cm_scene_t *s,
                             const char *path, const char *want) {
  cm_context_t ref;
  cm_context_init(&ref);
  CMT_EQ_INT(cm_scene_validate(&ref, s), CM_INVALID_SCENE);
  CMT_CONTAINS(ref.message, want);
  FILE *f = fopen(path, "wb");
  CMT_EQ_INT(cm_scene_write_binary(ctx, s, f), 0);
  fclose(f);
  for (int th = 1; th <= 3; th += 2) {
    ctx->threads = th;
    cm_scene_t *t = NULL;
    CMT_EQ_INT(cm_scene_read_file(ctx, path, &t), CM_INVALID_SCENE);
    CMT_TRUE(t == NULL);
    CMT_CONTAINS(ctx->message, path);
    CMT_CONTAINS(ctx->message, ref.message);
  }
}

CM_TEST(formats_binary_checked_in_pieces) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_pile_options_t po;
  cm_pile_options_init(&po);
  po.dim = 3, po.count = 12000, po.seed = 5;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_pile(&ctx, &po, &s), 0);
  CMT_TRUE(s && s->ncontacts * 72 > (2 << 20)); /* three pieces or more */
  char path[] = "/tmp/cmodes_bin_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  int nc = s ? s->ncontacts : 0, nb = s ? s->nbodies : 0, late = nc - 7;
  cm_contact_t keep_late = s->contacts[late], keep_mid = s->contacts[nc / 2];
  /* a zero normal near the end, then also an index out of range halfway */
  memset(s->contacts[late].normal, 0, sizeof s->contacts[late].normal);
  formats_bad_case(&ctx, s, path, "normal: zero length");
  s->contacts[nc / 2].b = nb + 3;
  formats_bad_case(&ctx, s, path, "].b: body index");
  /* a contact between two fixed bodies: its bodies' flags are read */
  s->contacts[nc / 2] = keep_mid;
  s->bodies[s->contacts[late].a].fixed = 1;
  if (s->contacts[late].b >= 0)
    s->bodies[s->contacts[late].b].fixed = 1;
  s->contacts[late] = keep_late;
  formats_bad_case(&ctx, s, path, "both bodies are fixed");
  /* a bad body after every contact's piece: still the body's message */
  int bb = nb - 2;
  while (bb > 0 && s->bodies[bb].fixed)
    bb--;
  s->bodies[bb].mass = -2;
  formats_bad_case(&ctx, s, path, "].mass: -2 is not positive");
  cm_scene_destroy(&s);
  /* sound records, a negative time step (version 2) */
  CMT_EQ_INT(cm_generate_pile(&ctx, &po, &s), 0);
  s->timestep_s = -1e-5;
  formats_bad_case(&ctx, s, path, "timestep: ");
  unlink(path);
  cm_scene_destroy(&s);
}
