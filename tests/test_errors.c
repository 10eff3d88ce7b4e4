/* test_errors.c: every bad input gets a clear message naming the place and a
 * non-zero status or exit code. */
#include "cmodes.h"
#include "cmtest.h"

#include <unistd.h>

static const char *bar_head =
    "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2,\n"
    " \"bodies\": [{\"name\": \"bar\", \"mass\": 2.0, \"inertia\": 0.005, "
    "\"position\": [0, 0]}, {\"name\": \"ground\", \"fixed\": true}],\n";

/* Parses text, expects status st and a message containing want. */
static void expect(const char *text, int st, const char *want) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  int got = cm_scene_parse_json(&ctx, text, strlen(text), "t.json", &s);
  CMT_EQ_INT(got, st);
  CMT_TRUE(s == NULL);
  CMT_CONTAINS(ctx.message, want);
  cm_scene_destroy(&s);
}

static void expect_contact(const char *contact, int st, const char *want) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s \"contacts\": [%s]}", bar_head, contact);
  expect(buf, st, want);
}

CM_TEST(errors_malformed_json_line_column) {
  expect("{\"format\": \"cmodes-scene\",\n \"dim\": 2,\n  \"bodies\": [,]}",
         CM_PARSE, "t.json:3:");
  expect("{\"format\": \"cmodes-scene\", \"dim\": NaN}", CM_PARSE,
         "malformed JSON");
  expect("{\"format\": \"cmodes-scene\", \"dim\": 1e999}", CM_PARSE,
         "malformed JSON");
}

CM_TEST(errors_scene_values) {
  expect_contact("{\"a\": \"bar\", \"b\": \"floor\", \"point\": [0, 0], "
                 "\"normal\": [0, 1], \"stiffness\": 1e5}",
                 CM_INVALID_SCENE, "contacts[0].b: unknown body \"floor\"");
  expect_contact("{\"a\": \"bar\", \"point\": [0, 0], \"normal\": [0, 0], "
                 "\"stiffness\": 1e5}",
                 CM_INVALID_SCENE, "contacts[0].normal: zero length");
  expect_contact("{\"a\": \"bar\", \"point\": [0, 0], \"normal\": [0, 1], "
                 "\"stiffness\": 0}",
                 CM_INVALID_SCENE, "contacts[0].stiffness");
  expect_contact("{\"a\": \"bar\", \"point\": [0, 0], \"normal\": [0, 1], "
                 "\"stiffness\": -5}",
                 CM_INVALID_SCENE, "must be > 0");
  expect_contact("{\"a\": \"bar\", \"b\": \"bar\", \"point\": [0, 0], "
                 "\"normal\": [0, 1], \"stiffness\": 1e5}",
                 CM_INVALID_SCENE, "same body");
  expect_contact("{\"a\": \"bar\", \"point\": [0, 0, 0], \"normal\": [0, 1], "
                 "\"stiffness\": 1e5}",
                 CM_INVALID_SCENE, "contacts[0].point: expected [x, y]");
  expect_contact("{\"a\": \"ground\", \"point\": [0, 0], \"normal\": [0, 1], "
                 "\"stiffness\": 1e5}",
                 CM_INVALID_SCENE, "both bodies are fixed");
  expect_contact("{\"a\": \"bar\", \"point\": [0, 0], \"normal\": [0, 1], "
                 "\"stiffness\": 1e5, \"colour\": 3}",
                 CM_INVALID_SCENE, "contacts[0].colour: unknown key");
  expect_contact("{\"a\": 7, \"point\": [0, 0], \"normal\": [0, 1], "
                 "\"stiffness\": 1e5}",
                 CM_INVALID_SCENE, "contacts[0].a: body index 7 out of range");
}

CM_TEST(errors_body_values) {
  const char *tail = "], \"contacts\": []}";
  const char *head = "{\"format\": \"cmodes-scene\", \"version\": 1, "
                     "\"dim\": 3, \"bodies\": [";
  char buf[2048];
  snprintf(buf, sizeof buf, "%s{\"mass\": -1, \"inertia\": [1, 1, 1], "
           "\"position\": [0, 0, 0]}%s", head, tail);
  expect(buf, CM_INVALID_SCENE, "bodies[0].mass: -1 is not positive");
  snprintf(buf, sizeof buf, "%s{\"mass\": 1, \"inertia\": [[1, 0, 0], [0, 1, 2], "
           "[0, 2, 1]], \"position\": [0, 0, 0]}%s", head, tail);
  expect(buf, CM_INVALID_SCENE, "bodies[0].inertia: not positive definite");
  snprintf(buf, sizeof buf, "%s{\"mass\": 1, \"inertia\": [[1, 0, 0], [0, 1, 0.5], "
           "[0, 0, 1]], \"position\": [0, 0, 0]}%s", head, tail);
  expect(buf, CM_INVALID_SCENE, "bodies[0].inertia: not symmetric");
  snprintf(buf, sizeof buf, "%s{\"name\": \"x\", \"mass\": 1, \"inertia\": [1, 1, 1], "
           "\"position\": [0, 0, 0]}, {\"name\": \"x\", \"fixed\": true}%s",
           head, tail);
  expect(buf, CM_INVALID_SCENE, "duplicate body name \"x\"");
  snprintf(buf, sizeof buf, "%s{\"mass\": 1, \"inertia\": [1, 1, 1], "
           "\"position\": [0, 0]}%s", head, tail);
  expect(buf, CM_INVALID_SCENE, "bodies[0].position: expected [x, y, z]");
  snprintf(buf, sizeof buf, "%s{\"mass\": 1, \"inertia\": [1, 1, 1], "
           "\"position\": [0, 0, 0], \"orientation\": [0, 0, 0, 0]}%s", head,
           tail);
  expect(buf, CM_INVALID_SCENE, "zero quaternion");
  /* NaN and infinity reach the library through the C API */
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = cm_scene_create(2);
  cm_body_t b;
  cm_body_init(&b);
  b.mass = NAN;
  cm_scene_add_body(&ctx, s, &b, NULL);
  CMT_EQ_INT(cm_scene_validate(&ctx, s), CM_INVALID_SCENE);
  CMT_CONTAINS(ctx.message, "bodies[0].mass: not a finite number");
  s->bodies[0].mass = 1;
  s->bodies[0].position[1] = INFINITY;
  CMT_EQ_INT(cm_scene_validate(&ctx, s), CM_INVALID_SCENE);
  CMT_CONTAINS(ctx.path, "bodies[0].position");
  cm_scene_destroy(&s);
}

CM_TEST(errors_cli_exit_codes) {
  char path[] = "/tmp/cmodes_bad_XXXXXX";
  int fd = mkstemp(path);
  const char *bad = "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2,"
                    " \"bodies\": [], \"contacts\": [{\"a\": \"nobody\"}]}";
  CMT_TRUE(write(fd, bad, strlen(bad)) == (ssize_t)strlen(bad));
  close(fd);
  char cmd[1024];
  int code;
  snprintf(cmd, sizeof cmd, "%s analyze %s 2>&1", CM_BINARY, path);
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, cm_status_exit(CM_INVALID_SCENE));
  CMT_CONTAINS(out, "contacts[0].a: unknown body \"nobody\"");
  free(out);
  snprintf(cmd, sizeof cmd, "%s analyze --modes x %s 2>&1", CM_BINARY, path);
  out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, cm_status_exit(CM_USAGE));
  CMT_CONTAINS(out, "cmodes analyze: --modes: 'x' is not an integer in 1..1000");
  free(out);
  snprintf(cmd, sizeof cmd, "%s analyze /nonexistent/scene.json 2>&1", CM_BINARY);
  out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, cm_status_exit(CM_IO));
  CMT_CONTAINS(out, "/nonexistent/scene.json: cannot open");
  free(out);
  unlink(path);
  /* exit codes are distinct for the documented classes */
  CMT_EQ_INT(cm_status_exit(CM_OK), 0);
  CMT_EQ_INT(cm_status_exit(CM_USAGE), 2);
  CMT_EQ_INT(cm_status_exit(CM_INVALID_SCENE), 3);
  CMT_EQ_INT(cm_status_exit(CM_NUMERIC), 4);
  CMT_EQ_INT(cm_status_exit(CM_NOT_CONVERGED), 5);
}

CM_TEST(errors_edge_scenes) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  /* no contacts; only fixed bodies; a free body */
  const char *none = "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2,"
                     " \"bodies\": [{\"name\": \"g\", \"fixed\": true}, "
                     "{\"mass\": 1, \"inertia\": 1, \"position\": [0, 0]}]}";
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_scene_parse_json(&ctx, none, strlen(none), "n", &s), 0);
  cm_report_t *r = NULL;
  CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &r), 0);
  CMT_TRUE(r->omega_max == 0);
  CMT_TRUE(isnan(r->central_difference.h_s));
  CMT_EQ_INT(r->free_bodies, 1);
  CMT_EQ_INT(r->free_motions, 3);
  CMT_EQ_INT(r->ncomp, 0);
  char *j = cm_report_to_json(r, 0);
  CMT_CONTAINS(j, "\"central_difference\":{\"h\":null");
  free(j);
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
  /* a non-SPD inertia given through the C API after validation is refused */
  s = cm_scene_create(3);
  cm_body_t b;
  cm_body_init(&b);
  b.inertia[8] = -1;
  cm_scene_add_body(&ctx, s, &b, "wobbly");
  CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &r), CM_INVALID_SCENE);
  CMT_CONTAINS(ctx.message, "bodies[0].inertia: not positive definite");
  cm_scene_destroy(&s);
  /* bad options */
  cm_options_t o;
  cm_options_init(&o);
  o.newmark_gamma = 0.4;
  s = cm_scene_create(2);
  CMT_EQ_INT(cm_analyze(&ctx, s, &o, &r), CM_USAGE);
  CMT_CONTAINS(ctx.message, "newmark_gamma");
  cm_scene_destroy(&s);
}

/* A partial result (iteration budget) is flagged, says why, and its steps
 * never use less than the rigorous lower bound. */
CM_TEST(errors_partial_report_is_safe) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = cm_scene_create(2);
  cm_body_t g;
  cm_body_init(&g);
  g.fixed = 1;
  cm_scene_add_body(&ctx, s, &g, "floor");
  for (int i = 0; i < 600; i++) { /* a chain of 600 disks on the floor */
    cm_body_t b;
    cm_body_init(&b);
    b.mass = 1 + 0.001 * (i % 7);
    b.inertia[0] = 0.1;
    b.position[0] = i;
    int bi = cm_scene_add_body(&ctx, s, &b, NULL);
    cm_contact_t c;
    cm_contact_init(&c);
    c.a = bi, c.b = 0, c.point[0] = i, c.normal[1] = 1, c.stiffness = 1e5;
    cm_scene_add_contact(&ctx, s, &c, NULL);
    if (i) {
      c.a = bi, c.b = bi - 1, c.point[0] = i - 0.5, c.normal[0] = 1;
      c.normal[1] = 0, c.stiffness = 1e5 * (1 + 0.01 * (i % 5));
      cm_scene_add_contact(&ctx, s, &c, NULL);
    }
  }
  cm_options_t o;
  cm_options_init(&o);
  o.method = CM_METHOD_ARPACK;
  o.max_iter = 1;
  cm_report_t *r = NULL;
  int st = cm_analyze(&ctx, s, &o, &r);
  CMT_EQ_INT(st, CM_NOT_CONVERGED);
  CMT_CONTAINS(ctx.message, "iteration budget");
  CMT_TRUE(r && r->status == CM_NOT_CONVERGED && !r->converged);
  if (r) {
    CMT_LE(r->omega_lower, r->omega_upper);
    CMT_LE(r->central_difference.h_s, 2.0 / r->omega_lower * (1 + 1e-15));
    char *j = cm_report_to_json(r, 0);
    CMT_CONTAINS(j, "\"status\":\"not_converged\"");
    free(j);
  }
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
}

/* Written and re-read scenes keep their bits; fixed bodies' masses, if
 * given, must still be masses. */
CM_TEST(errors_roundtrip_and_fixed_mass) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = cm_scene_create(3), *t = NULL;
  cm_body_t b;
  cm_body_init(&b);
  b.orientation[0] = 0.3, b.orientation[1] = -0.2, b.orientation[3] = 0.9;
  cm_scene_add_body(&ctx, s, &b, "x");
  for (int i = 0; i < 200; i++) {
    cm_contact_t c;
    cm_contact_init(&c);
    c.a = 0;
    c.normal[0] = 0.1 + i, c.normal[1] = 0.37 * i - 3, c.normal[2] = 1.0 / (i + 1);
    c.stiffness = 1e5;
    cm_scene_add_contact(&ctx, s, &c, NULL);
  }
  char *j = cm_scene_to_json(&ctx, s);
  CMT_EQ_INT(cm_scene_parse_json(&ctx, j, strlen(j), "rt", &t), 0);
  for (int i = 0; t && i < 200; i++)
    for (int k = 0; k < 3; k++)
      CMT_TRUE(t->contacts[i].normal[k] == s->contacts[i].normal[k]);
  for (int k = 0; t && k < 4; k++)
    CMT_TRUE(t->bodies[0].orientation[k] == s->bodies[0].orientation[k]);
  free(j);
  cm_scene_destroy(&s);
  cm_scene_destroy(&t);
  expect("{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2, "
         "\"bodies\": [{\"fixed\": true, \"mass\": -1}]}",
         CM_INVALID_SCENE, "bodies[0].mass: must be > 0 if given");
}

/* k/m beyond double precision is refused, not reported as omega 0. */
CM_TEST(errors_overflowing_scales) {
  const char *t = "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2,"
                  " \"bodies\": [{\"mass\": 1e-300, \"inertia\": 1e-300, "
                  "\"position\": [0, 0]}], \"contacts\": [{\"a\": 0, "
                  "\"point\": [0, 0], \"normal\": [0, 1], \"stiffness\": "
                  "1e300}]}";
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_scene_parse_json(&ctx, t, strlen(t), "big", &s), 0);
  cm_report_t *r = NULL;
  CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &r), CM_NUMERIC);
  CMT_TRUE(r == NULL);
  CMT_CONTAINS(ctx.message, "contacts[0]: k_c (J M^-1 J^T)_cc = inf");
  CMT_CONTAINS(ctx.path, "contacts[0]");
  cm_scene_destroy(&s);
}
