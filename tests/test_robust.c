/* test_robust.c: the importer and the CLI against hostile input (issue #18
 * item 5): far-away atoms, contact explosions, absurd thread counts, write
 * errors, endless input, overflowing lever arms. Each gets a clear message
 * and a non-zero exit, never a hang, a crash or a silently wrong number. */
#include "cmodes.h"
#include "cmtest.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char dump_head[] = "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n%d\n"
                                "ITEM: BOX BOUNDS ff ff ff\n0 1\n0 1\n0 1\n"
                                "ITEM: ATOMS id x y z radius\n";

/* Two atoms at x = +-1e308 (their span overflows) made the cell list loop
 * forever; a span of 1e14 contact ranges cannot resolve contacts either. */
CM_TEST(robust_import_far_atoms) {
  char dir[64], path[128], text[1024], cmd[512], want[256];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  snprintf(path, sizeof path, "%s/far.dump", dir);
  static const char *const atoms[] = {
      "1 1e308 0.5 0.5 0.1\n2 -1e308 0.5 0.5 0.1\n",
      "1 0.5 0.5 0.5 0.1\n2 0.5 2e13 0.5 0.1\n"};
  static const char *const where[] = {":10: atom 1 at x = 1e+308",
                                      ":11: atom 2 at y = 2e+13"};
  for (int c = 0; c < 2; c++) {
    int n = snprintf(text, sizeof text, dump_head, 2);
    snprintf(text + n, sizeof text - (size_t)n, "%s", atoms[c]);
    cmt_write_text(path, text);
    snprintf(cmd, sizeof cmd,
             "timeout 20 %s import dump %s --k 1 --density 1 2>&1 >/dev/null",
             CM_BINARY, path);
    int code;
    char *out = cmt_run(cmd, &code);
    CMT_EQ_INT(code, cm_status_exit(CM_INVALID_SCENE));
    snprintf(want, sizeof want, "%s%s", path, where[c]);
    CMT_CONTAINS(out, want);
    CMT_CONTAINS(out, "cannot resolve contacts");
    free(out);
  }
  unlink(path);
  rmdir(dir);
}

/* n atoms that all overlap: exactly n (n - 1) / 2 pairs; one more than the
 * cap stops the search with CM_LIMIT and says how to raise it. */
CM_TEST(robust_import_max_contacts) {
  enum { N = 200 };
  char dir[64], path[128], cmd[512];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  snprintf(path, sizeof path, "%s/over.dump", dir);
  size_t cap = 64 * N + 256, len = 0;
  char *text = malloc(cap);
  len += (size_t)snprintf(text, cap, dump_head, N);
  for (int i = 0; i < N; i++) /* all within 0.01 of the centre, r = 0.1 */
    len += (size_t)snprintf(text + len, cap - len, "%d %.6f %.6f %.6f 0.1\n",
                            i + 1, 0.5 + 1e-4 * (i % 7), 0.5 + 1e-4 * (i % 11),
                            0.5 + 1e-4 * i / 4.0);
  cmt_write_text(path, text);
  free(text);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  cm_dump_t *d = NULL;
  CMT_EQ_INT(cm_dump_read(&ctx, path, &o, &d), CM_OK);
  cm_dump_contact_t *c = NULL;
  int count = -1;
  o.max_contacts = N * (N - 1) / 2;
  CMT_EQ_INT(cm_dump_find_contacts(&ctx, d, &o, &c, &count), CM_OK);
  CMT_EQ_INT(count, N * (N - 1) / 2);
  free(c);
  c = NULL;
  o.max_contacts = N * (N - 1) / 2 - 1;
  CMT_EQ_INT(cm_dump_find_contacts(&ctx, d, &o, &c, &count), CM_LIMIT);
  CMT_TRUE(c == NULL);
  CMT_CONTAINS(ctx.message, "more than 19899 contacts among 200 atoms");
  CMT_CONTAINS(ctx.message, "--max-contacts");
  cm_dump_destroy(&d);
  /* the default: physical memory / 1 KiB, at most 2^31 - 1 */
  double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  long want = mem / 1024 > INT_MAX ? INT_MAX : (long)(mem / 1024);
  CMT_EQ_INT(cm_dump_default_max_contacts(), want);
  /* the CLI: --max-contacts, exit code of CM_LIMIT */
  snprintf(cmd, sizeof cmd,
           "%s import dump %s --k 1 --density 1 --max-contacts 1000 2>&1 "
           ">/dev/null",
           CM_BINARY, path);
  int code;
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, cm_status_exit(CM_LIMIT));
  CMT_CONTAINS(out, "more than 1000 contacts among 200 atoms");
  free(out);
  unlink(path);
  rmdir(dir);
}

/* --threads past 4 x the processors is refused by every command (100000
 * made OpenMP abort); the library caps a context's count the same way. */
CM_TEST(robust_threads_cap) {
  static const char *const cmds[] = {
      "analyze x", "import dump x --k 1", "export x --matrices /tmp",
      "report x",  "compare x",           "verify x",
      "track x y"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    char cmd[512];
    int code;
    snprintf(cmd, sizeof cmd, "%s %s --threads 100000 2>&1 </dev/null",
             CM_BINARY, cmds[i]);
    char *out = cmt_run(cmd, &code);
    if (code != 2)
      CMT_FAIL("cmodes %s --threads 100000: exit %d, expected 2:\n%s", cmds[i],
               code, out);
    CMT_CONTAINS(out, "--threads 100000: more than 4 x the");
    free(out);
  }
  /* the library: a context asking for 100000 threads analyses normally */
  cm_scene_t *s = cmt_data_scene("pile2d.json");
  if (!s)
    return;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_report_t *r1 = NULL, *r2 = NULL;
  ctx.threads = 1;
  CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &r1), CM_OK);
  ctx.threads = 100000;
  CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &r2), CM_OK);
  if (r1 && r2)
    CMT_TRUE(r1->omega_max == r2->omega_max);
  cm_report_destroy(&r1);
  cm_report_destroy(&r2);
  cm_scene_destroy(&s);
}

/* A full disk (/dev/full) fails every command that writes, on standard
 * output and on -o files: exit code 3 and a message, never exit 0 over a
 * lost result. */
CM_TEST(robust_write_errors) {
  if (access("/dev/full", W_OK) != 0) {
    printf("no /dev/full: skipped\n");
    return;
  }

  static const struct {
    const char *args; /* %s: the data folder */
    const char *want; /* in stderr */
  } cases[] = {
      {"analyze %s/data/bar2d.json >/dev/full", "cannot write standard output"},
      {"analyze %s/data/bar2d.json --json >/dev/full",
       "cannot write standard output"},
      {"analyze %s/data/bar2d.json --vectors /dev/full >/dev/null",
       "/dev/full"},
      {"generate bar >/dev/full", "cannot write standard output"},
      {"generate bar -o /dev/full", "cannot write /dev/full"},
      {"convert %s/data/bar2d.json - >/dev/full",
       "cannot write standard output"},
      {"options --markdown >/dev/full", "cannot write standard output"},
      {"report %s/data/bar2d.json -o /dev/full", "/dev/full"},
      {"import dump %s/data/lammps/pile.dump --k 2000 --density 2500 -q "
       ">/dev/full",
       "cannot write standard output"},
      {"import dump %s/data/lammps/pile.dump --k 2000 --density 2500 -q "
       "-o /dev/full",
       "/dev/full"},
      {"track %s/data/lammps/pile.dump --k 2000 --density 2500 -q "
       "-o /dev/full",
       "cannot write /dev/full"},
      {"track %s/data/lammps/pile.dump --k 2000 --density 2500 -q "
       ">/dev/full",
       "cannot write standard output"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char args[512], cmd[1024];
    snprintf(args, sizeof args, cases[i].args, CM_SOURCE_DIR);
    snprintf(cmd, sizeof cmd, "%s 2>&1 %s </dev/null", CM_BINARY, args);
    int code;
    char *out = cmt_run(cmd, &code);
    if (code != 3)
      CMT_FAIL("cmodes %s: exit %d, expected 3:\n%s", args, code, out);
    CMT_CONTAINS(out, cases[i].want);
    free(out);
  }
}

/* `cmodes ARGS`, its standard error (standard output dropped), which
 * must end with exit code CM_IO (a test failure otherwise). */
static char *run_io_failure(const char *args) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "timeout 120 %s %s 2>&1 >/dev/null", CM_BINARY,
           args);
  int code;
  char *out = cmt_run(cmd, &code);
  if (code != cm_status_exit(CM_IO))
    CMT_FAIL("cmodes %s: exit %d, expected %d:\n%s", args, code,
             cm_status_exit(CM_IO), out ? out : "");
  return out;
}

/* A folder given where a file is expected (fopen opens it; its reads fail,
 * and its end seeks to 2^63, which the readers took for an endless stream
 * or an empty file): every reader says it is a folder, exit code CM_IO. */
CM_TEST(robust_directory_input) {
  static const struct {
    const char *args; /* %s: a folder (the source's data/) */
    const char *want;
  } cases[] = {
      {"analyze %s", ": cannot open: Is a directory"},
      {"convert %s x.json", ": cannot open: Is a directory"},
      {"compare %s", ": cannot open: Is a directory"},
      {"verify %s", ": cannot open: Is a directory"},
      {"report %s -o /dev/null", ": cannot open: Is a directory"},
      {"report --track %s -o /dev/null", "cannot read %s: Is a directory"},
      {"import dump %s --k 1 --density 1", ": cannot open: Is a directory"},
      {"import lammps --deck %s --dump %s", ": cannot open: Is a directory"},
      {"track %s --k 1 --density 1", ": cannot open: Is a directory"},
      {"analyze --matrices %s %s %s", ": cannot open"},
      {"serve --token-file %s", "--token-file %s: Is a directory"},
  };
  char dir[512];
  snprintf(dir, sizeof dir, "%s/data", CM_SOURCE_DIR);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char args[2048], want[1024];
    snprintf(args, sizeof args, cases[i].args, dir, dir, dir);
    snprintf(want, sizeof want, cases[i].want, dir);
    char *out = run_io_failure(args);
    CMT_CONTAINS(out, want);
    CMT_CONTAINS(out, dir);
    free(out);
  }
  /* MuJoCo's loader, where cmodes was built with it */
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "%s import mjcf %s -o /nonexistent/x 2>&1",
           CM_BINARY, dir);
  int code;
  char *out = cmt_run(cmd, &code);
  if (out && !strstr(out, "built without MuJoCo")) {
    CMT_EQ_INT(code, cm_status_exit(CM_IO));
    CMT_CONTAINS(out, ": cannot open: Is a directory");
  }
  free(out);
  /* the library's reader, as C and Python callers reach it */
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_scene_read_file(&ctx, dir, &s), CM_IO);
  CMT_CONTAINS(ctx.message, "cannot open: Is a directory");
  CMT_TRUE(s == NULL);
}

/* A folder given for an output file: said once, with the reason, exit
 * code CM_IO (report's and track's said no reason; track's SVG twice,
 * after every snapshot was analysed: it is now opened first). */
CM_TEST(robust_directory_output) {
  static const char *const cases[] = {
      "report %s/data/bar2d.json -o %s",
      "report %s/data/bar2d.json -o /dev/null --vtk %s",
      "track %s/data/lammps/series/series.dump --deck "
      "%s/data/lammps/series/in.series -q -o %s",
      "track %s/data/lammps/series/series.dump --deck "
      "%s/data/lammps/series/in.series --svg %s",
      "import dump %s/data/lammps/pile.dump --k 2000 --density 2500 -q -o %s",
  };
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  char want[128];
  snprintf(want, sizeof want, "cannot write %s: Is a directory", dir);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char args[2048];
    if (i < 2 || i == 4)
      snprintf(args, sizeof args, cases[i], CM_SOURCE_DIR, dir);
    else
      snprintf(args, sizeof args, cases[i], CM_SOURCE_DIR, CM_SOURCE_DIR, dir);
    char *out = run_io_failure(args);
    CMT_CONTAINS(out, want);
    const char *at = out ? strstr(out, want) : NULL;
    if (at && strstr(at + 1, want))
      CMT_FAIL("cmodes %s: said twice:\n%s", args, out);
    if (i == 3 && out && strstr(out, "matrix-vector products"))
      CMT_FAIL("cmodes %s: the chart's path failed after the work, not "
               "before:\n%s",
               args, out);
    free(out);
  }
  rmdir(dir);
}

/* An endless input (/dev/zero, a FIFO that never ends) stops at the input
 * limit (CMODES_MAX_INPUT, here 2 MB) or at the 1 MiB line limit of the
 * line readers, with a message naming the limit and how to raise it. */
CM_TEST(robust_endless_input) {
  static const struct {
    const char *args; /* %s: the source folder */
    const char *want;
  } cases[] = {
      {"analyze /dev/zero", "/dev/zero: more than 2000000 bytes of input"},
      {"analyze - </dev/zero", "<stdin>: more than 2000000 bytes"},
      {"convert /dev/zero x.json", "CMODES_MAX_INPUT"},
      {"import dump /dev/zero --k 1 --density 1",
       "/dev/zero:1: a line longer than 1048576 bytes"},
      {"track /dev/zero --k 1 --density 1",
       "/dev/zero:1: a line longer than 1048576 bytes"},
      {"analyze --matrices /dev/zero /dev/zero /dev/zero",
       "/dev/zero:1: a line longer than"},
      {"report --track /dev/zero -o /dev/null",
       "/dev/zero: more than 2000000 bytes"},
      /* snapshots without end: a valid dump, repeated forever */
      {"import dump - --k 2000 --density 2500 -q -o /dev/null < <(while "
       "cat %s/data/lammps/pile.dump; do :; done)",
       "-:"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char args[512], cmd[1024];
    snprintf(args, sizeof args, cases[i].args, CM_SOURCE_DIR);
    snprintf(cmd, sizeof cmd,
             "bash -c 'CMODES_MAX_INPUT=2e6 timeout 60 %s 2>&1 %s "
             ">/dev/null'",
             CM_BINARY, args);
    int code;
    char *out = cmt_run(cmd, &code);
    if (code != cm_status_exit(CM_LIMIT))
      CMT_FAIL("cmodes %s: exit %d, expected %d:\n%s", args, code,
               cm_status_exit(CM_LIMIT), out);
    CMT_CONTAINS(out, cases[i].want);
    if (i == 7)
      CMT_CONTAINS(out, "more than 2000000 bytes of input");
    free(out);
  }
  /* under the limit the same readers work: the pile (5507 contacts) */
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "CMODES_MAX_INPUT=2e6 %s import dump %s/data/lammps/pile.dump --k "
           "2000 --density 2500 2>&1 >/dev/null",
           CM_BINARY, CM_SOURCE_DIR);
  int code;
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  CMT_CONTAINS(out, "2000 particles");
  free(out);
}

/* A lever arm past 1e150 m (given as arm_a, or as point - position) is
 * refused naming the field; 1e100 m still analyses to the analytic omega:
 * one body (m = I = 1), one contact of k = 1e-200 at arm r = 1e100 normal
 * to it: omega^2 = k (1/m + r^2/I) = 1 + 1e-200. */
CM_TEST(robust_huge_lever_arms) {
  static const struct {
    const char *arm; /* the contact's arm or point keys */
    const char *want;
  } bad[] = {
      {"\"point\": [0, 0], \"arm_a\": [1e160, 0], \"arm_b\": [0, 0]",
       "contacts[0].arm_a: a lever arm of 1e+160 m"},
      {"\"point\": [0, 0], \"arm_a\": [0, 0], \"arm_b\": [0, -2e155]",
       "contacts[0].arm_b: a lever arm of 2e+155 m"},
      {"\"point\": [1e154, 0]", "contacts[0].point: a lever arm of 1e+154 m"},
  };
  char text[1024];
  cm_context_t ctx;
  cm_context_init(&ctx);
  for (int i = 0; i < 4; i++) {
    const char *arm = i < 3 ? bad[i].arm : "\"point\": [1e100, 0]";
    /* case 1 joins a to body b (its arm_b counts), the others a to the
     * world */
    snprintf(text, sizeof text,
             "{\"format\": \"cmodes-scene\", \"version\": 2, \"dim\": 2, "
             "\"bodies\": [{\"name\": \"a\", \"mass\": 1, \"inertia\": 1, "
             "\"position\": [0, 0]}%s], \"contacts\": [{\"a\": \"a\", %s%s, "
             "\"normal\": [0, 1], \"stiffness\": 1e-200}]}",
             i == 1 ? ", {\"name\": \"b\", \"mass\": 1, \"inertia\": 1, "
                      "\"position\": [0, 0]}"
                    : "",
             i == 1 ? "\"b\": \"b\", " : "", arm);
    cm_scene_t *s = NULL;
    int st = cm_scene_parse_json(&ctx, text, strlen(text), "arm.json", &s);
    if (i < 3) {
      CMT_EQ_INT(st, CM_INVALID_SCENE);
      CMT_CONTAINS(ctx.message, bad[i].want);
      CMT_TRUE(s == NULL);
    } else {
      CMT_EQ_INT(st, CM_OK);
      cm_report_t *r = NULL;
      CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &r), CM_OK);
      if (r)
        CMT_REL(r->omega_max, 1.0, 1e-12);
      cm_report_destroy(&r);
    }
    cm_scene_destroy(&s);
  }
}

/* Normals of any nonzero finite length are normalised on reading (their
 * squares underflowed to "zero length" or overflowed to "length inf"); a
 * scene built in memory with such a normal gets its true length named. */
CM_TEST(robust_normal_lengths) {
  static const char *const normals[] = {"1e-200, 0", "0, 1e200", "1e-320, 0",
                                        "3, 4"};
  char text[1024];
  cm_context_t ctx;
  cm_context_init(&ctx);
  for (int i = 0; i < 4; i++) {
    snprintf(text, sizeof text,
             "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2, "
             "\"bodies\": [{\"name\": \"bar\", \"mass\": 2.0, \"inertia\": "
             "0.005, \"position\": [0, 0]}], \"contacts\": [{\"a\": \"bar\", "
             "\"point\": [0, 0], \"normal\": [%s], \"stiffness\": 1e5}]}",
             normals[i]);
    cm_scene_t *s = NULL;
    CMT_EQ_INT(cm_scene_parse_json(&ctx, text, strlen(text), "n.json", &s),
               CM_OK);
    if (!s)
      continue;
    /* unit now: the translation along it alone, omega = sqrt(k / m) */
    const double *n = s->contacts[0].normal;
    CMT_REL(n[0] * n[0] + n[1] * n[1], 1.0, 1e-15);
    cm_report_t *r = NULL;
    CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &r), CM_OK);
    if (r)
      CMT_REL(r->omega_max, sqrt(1e5 / 2.0), 1e-12);
    cm_report_destroy(&r);
    if (i < 2) { /* set in memory, unnormalised: the length is named */
      s->contacts[0].normal[0] = i ? 0 : 1e-200;
      s->contacts[0].normal[1] = i ? 1e200 : 0;
      CMT_EQ_INT(cm_scene_validate(&ctx, s), CM_INVALID_SCENE);
      CMT_CONTAINS(ctx.message,
                   i ? "contacts[0].normal: not a unit vector (length 1e+200)"
                     : "contacts[0].normal: not a unit vector (length 1");
      CMT_CONTAINS(ctx.message, i ? "divide by its length" : "e-200)");
    }
    cm_scene_destroy(&s);
  }
}

/* A scene error of a dump-built scene names the dump's file, line and
 * atom, not bodies[i] of a scene the user never saw. */
CM_TEST(robust_dump_scene_errors_name_line) {
  char dir[64], path[128], text[1024], want[256];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  snprintf(path, sizeof path, "%s/big.dump", dir);
  int n = snprintf(text, sizeof text,
                   "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\n"
                   "ITEM: BOX BOUNDS ff ff ff\n0 1\n0 1\n0 1\n"
                   "ITEM: ATOMS id x y z radius mass\n");
  /* radius 1e10, mass 1e300: inertia 2/5 m r^2 overflows (radii past
   * 1e150 m are refused before, at the contact search) */
  snprintf(text + n, sizeof text - (size_t)n,
           "7 0.5 0.5 0.5 1e10 1e300\n9 0.5 0.5 0.6 1e10 1\n");
  cmt_write_text(path, text);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  o.k = 1;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_import_dump(&ctx, path, &o, &s), CM_INVALID_SCENE);
  CMT_TRUE(s == NULL);
  snprintf(want, sizeof want, "%s:10: atom 7: bodies[0].inertia", path);
  CMT_CONTAINS(ctx.message, want);
  unlink(path);
  rmdir(dir);
}

/* The top-level name as docs/scene-format.md says: a string (or null),
 * kept, written back in JSON; another type refused naming the key. */
CM_TEST(robust_scene_name_as_documented) {
  const char *fmt = "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": "
                    "2, \"name\": %s, \"bodies\": [{\"mass\": 1, "
                    "\"inertia\": 1, \"position\": [0, 0]}]}";
  char text[512];
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  snprintf(text, sizeof text, fmt, "\"my pile\"");
  CMT_EQ_INT(cm_scene_parse_json(&ctx, text, strlen(text), "n.json", &s),
             CM_OK);
  if (s) {
    CMT_TRUE(s->name && !strcmp(s->name, "my pile"));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CMT_EQ_INT(cm_scene_write_json(&ctx, s, f), CM_OK);
    fclose(f);
    CMT_CONTAINS(buf, "\"name\": \"my pile\"");
    free(buf);
  }
  cm_scene_destroy(&s);
  snprintf(text, sizeof text, fmt, "null");
  CMT_EQ_INT(cm_scene_parse_json(&ctx, text, strlen(text), "n.json", &s),
             CM_OK);
  CMT_TRUE(s && !s->name);
  cm_scene_destroy(&s);
  snprintf(text, sizeof text, fmt, "5");
  CMT_EQ_INT(cm_scene_parse_json(&ctx, text, strlen(text), "n.json", &s),
             CM_INVALID_SCENE);
  CMT_CONTAINS(ctx.message, "name: expected a string");
}
