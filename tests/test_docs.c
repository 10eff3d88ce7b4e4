/* test_docs.c: examples double as tests. Checks that what docs/ shows still
 * holds: the C API example (docs/examples/api_bar.c, included here with its
 * main renamed) against the analytic bar; the documented reports of
 * docs/examples/ against fresh runs; the key table of docs/report-format.md
 * against real reports, both ways; the error examples of
 * docs/scene-format.md against the parser; the step tables of docs/math.md
 * against their formulas. Not for testing the engine beyond what the docs
 * claim (test_core.c does that). */
#include "cmodes.h"
#include "cmtest.h"

#include <dirent.h>
#include <jansson.h>
#include <unistd.h>

/* The example program, with its main renamed so the runner keeps its own. */
#define main docs_api_bar_main
#include "../docs/examples/api_bar.c"
#undef main
#define main docs_api_stages_main
#include "../docs/examples/api_stages.c"
#undef main
#define main docs_api_analysis_main
#include "../docs/examples/api_analysis.c"
#undef main

/* ---- helpers --------------------------------------------------------------
 */

static char *docs_read(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", CM_SOURCE_DIR, rel);
  char *s = cmt_read_file(path);
  if (!s)
    CMT_FAIL("cannot read %s", path);
  return s;
}

/* Runs fn with stdout sent to a temporary file; returns what it printed
 * (malloc'd) and its return value in *rc. */
static char *docs_capture(int (*fn)(void), int *rc) {
  char tmpl[] = "/tmp/cmodes-docs-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0)
    return NULL;
  fflush(stdout);
  int saved = dup(1);
  dup2(fd, 1);
  *rc = fn();
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(fd);
  char *out = cmt_read_file(tmpl);
  unlink(tmpl);
  return out;
}

static cm_report_t *docs_analyze_file(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", CM_SOURCE_DIR, rel);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  cm_report_t *r = NULL;
  if (cm_scene_read_file(&ctx, path, &s)) {
    CMT_FAIL("read %s: %s", path, ctx.message);
    return NULL;
  }
  int st = cm_analyze(&ctx, s, NULL, &r);
  if (st)
    CMT_FAIL("analyze %s: status %d: %s", path, st, ctx.message);
  cm_scene_destroy(&s);
  return r;
}

static json_t *docs_report_json(const cm_report_t *r, int flags) {
  char *text = cm_report_to_json(r, flags);
  json_error_t err;
  json_t *j = text ? json_loads(text, 0, &err) : NULL;
  if (!j)
    CMT_FAIL("report JSON does not parse");
  free(text);
  return j;
}

/* ---- the C API example ----------------------------------------------------
 */

/* Finds "<prefix> %lf" in text. */
static double docs_number_after(const char *text, const char *prefix) {
  const char *p = text ? strstr(text, prefix) : NULL;
  if (!p) {
    CMT_FAIL("no \"%s\" in the output", prefix);
    return NAN;
  }
  return strtod(p + strlen(prefix), NULL);
}

CM_TEST(docs_api_bar_example) {
  int rc = -1;
  char *out = docs_capture(docs_api_bar_main, &rc);
  CMT_EQ_INT(rc, 0);
  CMT_TRUE(out != NULL);
  /* the lines docs/c-api.md shows */
  CMT_CONTAINS(out, "modes 2\n");
  CMT_CONTAINS(out, "mode 1 omega 632.4555320 rad/s");
  CMT_CONTAINS(out, "mode 2 omega 316.2277660 rad/s");
  CMT_CONTAINS(out, "per-contact estimate 500.0000000 rad/s (contact 0)");
  /* the numbers against the analytic bar: k = 1e5, m = 2, I = 0.005, d = 0.1 */
  double k = 1e5, m = 2, I = 0.005, d = 0.1;
  double w_rock = sqrt(2 * k * d * d / I), w_tr = sqrt(2 * k / m);
  CMT_REL(docs_number_after(out, "mode 1 omega "), w_rock, 1e-9);
  CMT_REL(docs_number_after(out, "mode 2 omega "), w_tr, 1e-9);
  CMT_REL(w_rock, 632.4555320, 1e-9);
  CMT_REL(w_tr, 316.2277660, 1e-9);
  CMT_REL(docs_number_after(out, "per-contact estimate "),
          sqrt(k * (1 / m + d * d / I)), 1e-9);
  /* |B| |B|^T has every entry k (1/m + d^2/I): row sum 2 k (1/m + d^2/I) */
  CMT_REL(docs_number_after(out, "<= omega_max <= "),
          sqrt(2 * k * (1 / m + d * d / I)), 1e-9);
  /* printed with 9 decimals: 1e-9 s of about 3e-3 s */
  CMT_REL(docs_number_after(out, "central difference step "), 2 / w_rock, 5e-7);
  CMT_REL(docs_number_after(out, "(certified "),
          2 / sqrt(2 * k * (1 / m + d * d / I)), 5e-7);
  /* the embedded JSON report */
  const char *brace = out ? strchr(out, '{') : NULL;
  json_error_t err;
  json_t *j = brace ? json_loads(brace, 0, &err) : NULL;
  CMT_TRUE(j != NULL);
  if (j) {
    json_t *modes = json_object_get(j, "modes");
    CMT_EQ_INT(json_array_size(modes), 2);
    CMT_REL(json_real_value(json_object_get(json_array_get(modes, 0), "omega")),
            w_rock, 1e-12);
    CMT_REL(json_real_value(json_object_get(json_array_get(modes, 1), "omega")),
            w_tr, 1e-12);
    json_t *c0 = json_array_get(
        json_object_get(json_array_get(modes, 0), "contacts"), 0);
    CMT_TRUE(json_is_string(json_object_get(c0, "name")));
    CMT_TRUE(json_is_string(json_object_get(c0, "b")) &&
             !strcmp(json_string_value(json_object_get(c0, "b")), "world"));
    CMT_TRUE(json_object_get(j, "timings") == NULL); /* CM_JSON_NO_TIMINGS */
    json_decref(j);
  }
  free(out);
}

static int docs_run_stages(void) {
  char path[1024], prog[] = "api_stages";
  snprintf(path, sizeof path, "%s/data/bar2d.json", CM_SOURCE_DIR);
  char *argv[] = {prog, path, NULL};
  return docs_api_stages_main(2, argv);
}

CM_TEST(docs_api_stages_example) {
  int rc = -1;
  char *out = docs_capture(docs_run_stages, &rc);
  CMT_EQ_INT(rc, 0);
  CMT_CONTAINS(out, "2 contacts x 2 active dofs (3 dofs, 1 dropped), 1 "
                    "component(s)");
  CMT_CONTAINS(out, "500.0000000 <= omega_max <= 707.1067812 rad/s");
  CMT_REL(docs_number_after(out, "omega 1 = "), sqrt(4e5), 1e-9);
  CMT_REL(docs_number_after(out, "omega 2 = "), sqrt(1e5), 1e-9);
  CMT_REL(docs_number_after(out, "RK4 "), 2 * sqrt(2) / sqrt(4e5), 5e-7);
  free(out);
}

static int docs_run_analysis(void) {
  char path[1024], prog[] = "api_analysis";
  snprintf(path, sizeof path, "%s/data/bar2d.json", CM_SOURCE_DIR);
  char *argv[] = {prog, path, NULL};
  return docs_api_analysis_main(2, argv);
}

/* The analysis object's example on the bar: the rocking mode's shape is
 * 1/sqrt(I) on the rotation, so its gaps are +-d/sqrt(I) = +-sqrt(2); the
 * bounce's are 1/sqrt(m) on y, gaps 1/sqrt(2) of the same sign. */
CM_TEST(docs_api_analysis_example) {
  int rc = -1;
  char *out = docs_capture(docs_run_analysis, &rc);
  CMT_EQ_INT(rc, 0);
  CMT_CONTAINS(out, "omega_max 632.4555320 rad/s, 2 modes");
  CMT_CONTAINS(out, "mode 1 omega 632.4555320 rad/s, phi^T M phi "
                    "1.000000000000, gaps");
  CMT_CONTAINS(out, "mode 2 omega 316.2277660 rad/s, phi^T M phi "
                    "1.000000000000, gaps");
  double k = 1e5, m = 2, I = 0.005, d = 0.1;
  CMT_REL(docs_number_after(out, "mode 1 omega "), sqrt(2 * k * d * d / I),
          1e-9);
  CMT_REL(docs_number_after(out, "mode 2 omega "), sqrt(2 * k / m), 1e-9);
  const char *g1 = out ? strstr(out, "mode 1") : NULL;
  const char *g2 = out ? strstr(out, "mode 2") : NULL;
  double a1, b1, a2, b2;
  CMT_TRUE(g1 && sscanf(strstr(g1, "gaps") + 4, "%lf %lf", &a1, &b1) == 2);
  CMT_TRUE(g2 && sscanf(strstr(g2, "gaps") + 4, "%lf %lf", &a2, &b2) == 2);
  CMT_REL(fabs(a1), d / sqrt(I), 1e-7); /* printed to 7 decimals */
  CMT_REL(a1, -b1, 1e-9);
  CMT_REL(fabs(a2), 1 / sqrt(m), 1e-7);
  CMT_REL(a2, b2, 1e-9);
  free(out);
}

/* docs/c-api.md shows docs/examples/api_analysis.c verbatim. */
CM_TEST(docs_c_api_analysis_listing) {
  char *md = docs_read("docs/c-api.md");
  char *src = docs_read("docs/examples/api_analysis.c");
  if (md && src)
    CMT_TRUE(strstr(md, src) != NULL);
  free(md), free(src);
}

/* docs/c-api.md shows docs/examples/api_bar.c verbatim. */
CM_TEST(docs_c_api_listing) {
  char *md = docs_read("docs/c-api.md");
  char *src = docs_read("docs/examples/api_bar.c");
  if (md && src)
    CMT_TRUE(strstr(md, src) != NULL);
  free(md), free(src);
}

/* ---- the report key table -------------------------------------------------
 */

typedef struct {
  char path[128]; /* e.g. "modes[].contacts[].share" */
  char type[48];  /* "number", "string or null", ... */
  int always;     /* present column says "always" */
  int seen;       /* found in some report */
} docs_key_t;

/* Parses the rows between the report-keys markers. Returns the count. */
static int docs_parse_keys(const char *doc, docs_key_t *keys, int max) {
  const char *b = strstr(doc, "<!-- report-keys:begin -->");
  const char *e = strstr(doc, "<!-- report-keys:end -->");
  if (!b || !e || e < b) {
    CMT_FAIL("report-format.md: no report-keys markers");
    return 0;
  }
  int n = 0;
  for (const char *p = b; p && p < e; p = strchr(p, '\n'), p = p ? p + 1 : p) {
    if (strncmp(p, "| `", 3))
      continue;
    const char *q = p + 3, *q2 = strchr(q, '`');
    const char *c2 = q2 ? strchr(q2, '|') : NULL;
    const char *c3 = c2 ? strchr(c2 + 1, '|') : NULL;
    const char *c4 = c3 ? strchr(c3 + 1, '|') : NULL;
    if (!c4 || n == max)
      break;
    docs_key_t *k = &keys[n++];
    memset(k, 0, sizeof *k);
    snprintf(k->path, sizeof k->path, "%.*s", (int)(q2 - q), q);
    const char *t = c2 + 1;
    while (*t == ' ')
      t++;
    int tl = (int)(c3 - t);
    while (tl > 0 && t[tl - 1] == ' ')
      tl--;
    snprintf(k->type, sizeof k->type, "%.*s", tl, t);
    const char *a = c3 + 1;
    while (*a == ' ')
      a++;
    k->always = !strncmp(a, "always", 6);
  }
  return n;
}

static const char *docs_type_name(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "object";
  case JSON_ARRAY:
    return "array";
  case JSON_STRING:
    return "string";
  case JSON_INTEGER:
    return "integer";
  case JSON_REAL:
    return "number";
  case JSON_TRUE:
  case JSON_FALSE:
    return "boolean";
  default:
    return "null";
  }
}

/* Does a value of JSON type `got` fit the documented type `doc`? */
static int docs_type_ok(const char *doc, const char *got) {
  char buf[48];
  snprintf(buf, sizeof buf, "%s", doc);
  for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
    if (!strcmp(tok, "or"))
      continue;
    if (!strcmp(tok, got) ||
        (!strcmp(tok, "number") && !strcmp(got, "integer")))
      return 1;
  }
  return 0;
}

/* Walks v; every key path must be documented with a fitting type. */
static void docs_walk(const json_t *v, const char *path, docs_key_t *keys,
                      int nk, const char *what) {
  if (json_is_object(v)) {
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val) {
      char p[256];
      snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", key);
      int found = 0;
      for (int i = 0; i < nk; i++)
        if (!strcmp(keys[i].path, p)) {
          found = 1;
          keys[i].seen = 1;
          if (!docs_type_ok(keys[i].type, docs_type_name(val)))
            CMT_FAIL("%s: %s is %s, documented as %s", what, p,
                     docs_type_name(val), keys[i].type);
        }
      if (!found)
        CMT_FAIL("%s: key %s is not in docs/report-format.md", what, p);
      docs_walk(val, p, keys, nk, what);
    }
  } else if (json_is_array(v)) {
    char p[256];
    snprintf(p, sizeof p, "%s[]", path);
    for (size_t i = 0; i < json_array_size(v); i++)
      if (json_is_object(json_array_get(v, i)))
        docs_walk(json_array_get(v, i), p, keys, nk, what);
  }
}

/* 1 if the documented path exists in v (arrays: in some element). */
static int docs_has_path(const json_t *v, const char *path) {
  if (!*path)
    return 1;
  char head[128];
  const char *dot = strchr(path, '.');
  size_t len = dot ? (size_t)(dot - path) : strlen(path);
  snprintf(head, sizeof head, "%.*s", (int)len, path);
  const char *rest = dot ? dot + 1 : "";
  size_t hl = strlen(head);
  int arr = hl > 2 && !strcmp(head + hl - 2, "[]");
  if (arr)
    head[hl - 2] = 0;
  json_t *child = json_object_get(v, head);
  if (!child)
    return 0;
  if (!arr)
    return docs_has_path(child, rest);
  for (size_t i = 0; i < json_array_size(child); i++)
    if (docs_has_path(json_array_get(child, i), rest))
      return 1;
  return !*rest; /* an empty array still has the key */
}

CM_TEST(docs_report_keys) {
  char *doc = docs_read("docs/report-format.md");
  if (!doc)
    return;
  docs_key_t keys[256];
  int nk = docs_parse_keys(doc, keys, 256);
  CMT_TRUE(nk > 80);
  /* reports: the bar (with timings), the 3D bar, a scene without contacts
   * (null steps and their reasons), and a partial result */
  cm_report_t *bar = docs_analyze_file("data/bar2d.json");
  cm_report_t *bar3 = docs_analyze_file("docs/examples/bar3d.json");
  const char *free_body =
      "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2, \"bodies\": "
      "[{\"mass\": 1, \"inertia\": 1, \"position\": [0, 0]}]}";
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  cm_report_t *none = NULL;
  CMT_EQ_INT(
      cm_scene_parse_json(&ctx, free_body, strlen(free_body), "free", &s), 0);
  CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &none), 0);
  cm_scene_destroy(&s);
  /* and one whose rank of J is not computed (counts.reason) */
  cm_options_t lo;
  cm_options_init(&lo);
  lo.rank_max_rows = 1;
  cm_report_t *lim = NULL;
  CMT_EQ_INT(cm_scene_read_file(&ctx, CM_SOURCE_DIR "/data/bar2d.json", &s), 0);
  if (s)
    CMT_EQ_INT(cm_analyze(&ctx, s, &lo, &lim), 0);
  cm_scene_destroy(&s);
  if (lim) {
    json_t *jl = docs_report_json(lim, 0);
    docs_walk(jl, "", keys, nk, "rank not computed");
    json_decref(jl);
  }
  cm_report_destroy(&lim);
  if (!bar || !bar3 || !none) {
    free(doc);
    return;
  }
  json_t *jb = docs_report_json(bar, 0);
  json_t *jb3 = docs_report_json(bar3, CM_JSON_NO_TIMINGS);
  json_t *jn = docs_report_json(none, CM_JSON_INDENT);
  docs_walk(jb, "", keys, nk, "bar2d");
  docs_walk(jb3, "", keys, nk, "bar3d");
  docs_walk(jn, "", keys, nk, "no contacts");
  for (int i = 0; i < nk; i++) {
    if (!keys[i].seen)
      CMT_FAIL("documented key %s appears in no report", keys[i].path);
    if (keys[i].always && !docs_has_path(jb, keys[i].path))
      CMT_FAIL("documented as always present, not in the bar report: %s",
               keys[i].path);
  }
  CMT_TRUE(json_object_get(jb3, "timings") == NULL);
  json_decref(jb), json_decref(jb3), json_decref(jn);
  cm_report_destroy(&bar), cm_report_destroy(&bar3), cm_report_destroy(&none);
  free(doc);
}

/* ---- documented reports against fresh runs --------------------------------
 */

/* Structural equality: same keys, same strings, integers and nulls; reals
 * within rel. Residuals only need to stay tiny. What depends on cmodes'
 * internal row and column order (which the engine may change for locality)
 * is skipped: the listed body names, and the matvec and restart counts. */
static void docs_json_close(const json_t *a, const json_t *b, const char *path,
                            double rel, const char *what) {
  if (json_typeof(a) != json_typeof(b)) {
    CMT_FAIL("%s: %s: type %s, documented %s", what, path, docs_type_name(a),
             docs_type_name(b));
    return;
  }
  char p[512];
  switch (json_typeof(a)) {
  case JSON_OBJECT: {
    if (json_object_size(a) != json_object_size(b))
      CMT_FAIL("%s: %s: %zu keys, documented %zu", what, path,
               json_object_size(a), json_object_size(b));
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)a, key, val) {
      snprintf(p, sizeof p, "%s.%s", path, key);
      if (!strcmp(key, "body_names") || !strcmp(key, "matvecs") ||
          !strcmp(key, "iterations"))
        continue;
      json_t *o = json_object_get(b, key);
      if (!o)
        CMT_FAIL("%s: %s is not in the documented report", what, p);
      else
        docs_json_close(val, o, p, rel, what);
    }
    break;
  }
  case JSON_ARRAY:
    if (json_array_size(a) != json_array_size(b)) {
      CMT_FAIL("%s: %s: %zu elements, documented %zu", what, path,
               json_array_size(a), json_array_size(b));
      break;
    }
    for (size_t i = 0; i < json_array_size(a); i++) {
      snprintf(p, sizeof p, "%s[%zu]", path, i);
      docs_json_close(json_array_get(a, i), json_array_get(b, i), p, rel, what);
    }
    break;
  case JSON_REAL: {
    double x = json_real_value(a), y = json_real_value(b);
    size_t pl = strlen(path);
    if (pl >= 8 && !strcmp(path + pl - 8, "residual")) {
      if (!(x < 1e-9 && y < 1e-9))
        CMT_FAIL("%s: %s: residual %g (documented %g) not below 1e-9", what,
                 path, x, y);
    } else if (!(fabs(x - y) <= rel * fmax(fabs(x), fabs(y))))
      CMT_FAIL("%s: %s: %.17g, documented %.17g", what, path, x, y);
    break;
  }
  case JSON_INTEGER:
    if (json_integer_value(a) != json_integer_value(b))
      CMT_FAIL("%s: %s: %lld, documented %lld", what, path,
               (long long)json_integer_value(a),
               (long long)json_integer_value(b));
    break;
  case JSON_STRING:
    if (strcmp(json_string_value(a), json_string_value(b)))
      CMT_FAIL("%s: %s: \"%s\", documented \"%s\"", what, path,
               json_string_value(a), json_string_value(b));
    break;
  default:
    break;
  }
}

static void docs_check_report(const cm_report_t *r, const char *doc_rel) {
  char *doc = docs_read(doc_rel);
  json_error_t err;
  json_t *want = doc ? json_loads(doc, 0, &err) : NULL;
  if (!want) {
    CMT_FAIL("%s does not parse", doc_rel);
    free(doc);
    return;
  }
  json_t *got = docs_report_json(r, CM_JSON_NO_TIMINGS);
  if (got)
    docs_json_close(got, want, "", 1e-9, doc_rel);
  json_decref(got), json_decref(want);
  free(doc);
}

CM_TEST(docs_bar_reports) {
  cm_report_t *r = docs_analyze_file("data/bar2d.json");
  if (r) {
    docs_check_report(r, "docs/examples/bar2d.report.json");
    CMT_REL(r->omega_max, sqrt(4e5), 1e-12);      /* 632.4555320 */
    CMT_REL(r->modes[1].omega, sqrt(1e5), 1e-12); /* 316.2277660 */
  }
  cm_report_destroy(&r);
  /* the 3D bar turned 30 degrees: same modes, rotation about z dropped */
  r = docs_analyze_file("docs/examples/bar3d.json");
  if (r) {
    docs_check_report(r, "docs/examples/bar3d.report.json");
    CMT_EQ_INT(r->nmodes, 2);
    CMT_REL(r->modes[0].omega, sqrt(2 * 1e5 * 0.01 / 0.005), 1e-12);
    CMT_REL(r->modes[1].omega, sqrt(2 * 1e5 / 2.0), 1e-12);
    CMT_EQ_INT(r->active_dofs, 3); /* z, rotations about x and y */
    CMT_EQ_INT(r->dropped_dofs, 3);
    CMT_EQ_INT(r->free_motions, 4);
    CMT_EQ_INT(r->zero_modes, 0);
  }
  cm_report_destroy(&r);
}

/* The LIGGGHTS/LAMMPS dump import of docs/examples.md, through the CLI. */
CM_TEST(docs_lammps_import_example) {
  char *md = docs_read("docs/examples.md");
  const char *cmd_doc =
      "cmodes import dump data/lammps/pile.dump --k 2000 --wall-plane 'z>0' "
      "--wall-plane 'x>-0.05' --wall-plane 'x<0.05' --wall-plane 'y>-0.05' "
      "--wall-plane 'y<0.05' -o pile.json";
  CMT_CONTAINS(md, cmd_doc);
  free(md);
  char out[] = "/tmp/cmodes-docs-pile-XXXXXX";
  int fd = mkstemp(out);
  if (fd < 0)
    return;
  close(fd);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "cd %s && %s import dump data/lammps/pile.dump --k 2000 "
           "--wall-plane 'z>0' --wall-plane 'x>-0.05' --wall-plane 'x<0.05' "
           "--wall-plane 'y>-0.05' --wall-plane 'y<0.05' --threads 1 -q -o "
           "%s 2>&1",
           CM_SOURCE_DIR, CM_BINARY, out);
  int code = -1;
  char *log = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  if (code) {
    fprintf(stderr, "%s\n", log ? log : "");
    free(log);
    unlink(out);
    return;
  }
  free(log);
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = 1; /* same bits at any count; one thread is fastest here */
  cm_scene_t *s = NULL;
  cm_report_t *r = NULL;
  CMT_EQ_INT(cm_scene_read_file(&ctx, out, &s), 0);
  unlink(out);
  if (!s)
    return;
  CMT_EQ_INT(s->nbodies, 2000);
  CMT_EQ_INT(s->ncontacts, 5507);
  CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &r), 0);
  if (r) {
    docs_check_report(r, "docs/examples/lammps-pile.report.json");
    /* what examples.md says about it */
    CMT_LE(r->omega_lower, r->omega_max);
    CMT_LE(r->omega_max, r->omega_upper);
    CMT_TRUE(r->pc_ratio > 1.4 && r->pc_ratio < 1.55);
    /* the deck's step, 1e-4 s, is stable: 2 / omega_max is 5.6 times it */
    CMT_TRUE(r->central_difference.h_s > 5e-4);
  }
  /* the partial result: one cycle of 20, flagged, top mode already close */
  cm_options_t o;
  cm_options_init(&o);
  o.ncv = 20;
  o.max_iter = 1;
  cm_report_t *p = NULL;
  CMT_EQ_INT(cm_analyze(&ctx, s, &o, &p), CM_NOT_CONVERGED);
  if (r && p) {
    CMT_EQ_INT(p->status, CM_NOT_CONVERGED);
    CMT_TRUE(!p->converged);
    CMT_REL(p->omega_max, r->omega_max, 1e-6);
    CMT_LE(p->modes[0].omega, r->modes[0].omega * (1 + 1e-12)); /* Ritz */
    CMT_REL(p->central_difference.certified_s,
            r->central_difference.certified_s, 1e-15);
  }
  cm_report_destroy(&p);
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
}

/* The LIGGGHTS bed of docs/examples.md. Its dump lives outside the
 * repository (../shared/data); without it there is nothing to check. */
CM_TEST(docs_liggghts_import_example) {
  char dump[1024];
  snprintf(dump, sizeof dump,
           "%s/data/liggghts-contactModels/dump20000.newModels", CM_SHARED_DIR);
  if (access(dump, R_OK)) {
    fprintf(stderr, "docs_liggghts_import_example: %s not found, skipped\n",
            dump);
    return;
  }
  char *md = docs_read("docs/examples.md");
  CMT_CONTAINS(md, "cmodes import dump dump20000.newModels --density 2500 "
                   "--young 5e6 --poisson 0.45 --wall-plane z=0 "
                   "--wall-zcylinder 0.05 -o bed.json");
  free(md);
  char out[] = "/tmp/cmodes-docs-bed-XXXXXX";
  int fd = mkstemp(out);
  if (fd < 0)
    return;
  close(fd);
  char cmd[3072];
  snprintf(cmd, sizeof cmd,
           "%s import dump %s --density 2500 --young 5e6 --poisson 0.45 "
           "--wall-plane z=0 --wall-zcylinder 0.05 --threads 1 -q -o %s 2>&1",
           CM_BINARY, dump, out);
  int code = -1;
  free(cmt_run(cmd, &code));
  CMT_EQ_INT(code, 0);
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = 1;
  cm_scene_t *s = NULL;
  cm_report_t *r = NULL;
  if (!code)
    CMT_EQ_INT(cm_scene_read_file(&ctx, out, &s), 0);
  unlink(out);
  if (!s)
    return;
  CMT_EQ_INT(s->nbodies, 1800);
  CMT_EQ_INT(s->ncontacts, 1174);
  CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &r), 0);
  if (r) {
    docs_check_report(r, "docs/examples/liggghts-bed.report.json");
    CMT_EQ_INT(r->ncomp, 176);
    CMT_EQ_INT(r->free_bodies, 723);
    CMT_EQ_INT(r->active_dofs, 3182);
    CMT_TRUE(r->pc_ratio > 1.13 && r->pc_ratio < 1.14);
    CMT_TRUE(r->central_difference.h_s > 33 * 1e-5); /* the deck's step */
    CMT_TRUE(2 / r->pc_omega_max > r->central_difference.h_s);
  }
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
}

/* ---- the error examples of scene-format.md --------------------------------
 */

/* Next fenced block after p: sets [*b, *e) to its body; returns the end. */
static const char *docs_fence(const char *p, const char **b, const char **e) {
  const char *f = strstr(p, "```");
  if (!f)
    return NULL;
  const char *body = strchr(f, '\n');
  if (!body)
    return NULL;
  body++;
  const char *end = strstr(body, "```");
  if (!end)
    return NULL;
  *b = body, *e = end;
  return end + 3;
}

CM_TEST(docs_scene_error_examples) {
  char *doc = docs_read("docs/scene-format.md");
  if (!doc)
    return;
  int n_err = 0, n_ok = 0;
  for (const char *p = strstr(doc, "<!-- scene-"); p;
       p = strstr(p + 1, "<!-- scene-")) {
    int is_err = !strncmp(p, "<!-- scene-error -->", 20);
    int is_ok = !strncmp(p, "<!-- scene-ok -->", 17);
    if (!is_err && !is_ok)
      continue;
    const char *jb, *je, *mb = NULL, *me = NULL;
    const char *next = docs_fence(p, &jb, &je);
    if (!next || (is_err && !docs_fence(next, &mb, &me))) {
      CMT_FAIL("scene-format.md: example without its blocks");
      break;
    }
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_scene_t *s = NULL;
    int st = cm_scene_parse_json(&ctx, jb, (size_t)(je - jb), "scene.json", &s);
    cm_report_t *r = NULL;
    if (!st)
      st = cm_analyze(&ctx, s, NULL, &r);
    cm_report_destroy(&r);
    cm_scene_destroy(&s);
    if (is_ok) {
      n_ok++;
      if (st)
        CMT_FAIL("scene-format.md: a valid example fails: %s", ctx.message);
      continue;
    }
    n_err++;
    char want[2048], got[2048];
    int wl = (int)(me - mb);
    while (wl > 0 && (mb[wl - 1] == '\n' || mb[wl - 1] == ' '))
      wl--;
    snprintf(want, sizeof want, "%.*s", wl, mb);
    snprintf(got, sizeof got, "cmodes analyze: %s: %s", cm_status_message(st),
             ctx.message);
    if (!st)
      CMT_FAIL("scene-format.md: the example for \"%s\" is accepted", want);
    else if (strcmp(want, got))
      CMT_FAIL("scene-format.md: documented\n  %s\nbut the code says\n  %s",
               want, got);
  }
  CMT_TRUE(n_err >= 20);
  CMT_TRUE(n_ok >= 2);
  free(doc);
}

/* ---- the step tables of math.md --------------------------------------------
 */

/* Rows "| `name` | value |" between markers: returns the value of name. */
static double docs_table_value(const char *doc, const char *marker,
                               const char *name) {
  const char *b = strstr(doc, marker);
  char key[128];
  snprintf(key, sizeof key, "| `%s` |", name);
  const char *p = b ? strstr(b, key) : NULL;
  const char *end = b ? strstr(b, "<!-- end -->") : NULL;
  if (!p || (end && p > end)) {
    CMT_FAIL("math.md: no row %s after %s", name, marker);
    return NAN;
  }
  return strtod(p + strlen(key), NULL);
}

CM_TEST(docs_math_step_tables) {
  char *doc = docs_read("docs/math.md");
  if (!doc)
    return;
  const char *m = "<!-- step-limits -->";
  /* Omega = h omega_max at the limit, from the public formulas at omega = 1 */
  CMT_REL(docs_table_value(doc, m, "central_difference"),
          cm_step_central_difference(1, 0), 1e-4);
  CMT_REL(docs_table_value(doc, m, "central_difference_zeta_0.05"),
          cm_step_central_difference(1, 0.05), 1e-4);
  CMT_REL(docs_table_value(doc, m, "central_difference_zeta_0.05"),
          2 * (sqrt(1 + 0.05 * 0.05) - 0.05), 1e-4);
  CMT_REL(docs_table_value(doc, m, "rk3"), cm_step_rk3(1), 1e-4);
  CMT_REL(docs_table_value(doc, m, "rk3"), sqrt(3), 1e-4);
  CMT_REL(docs_table_value(doc, m, "rk4"), cm_step_rk4(1), 1e-4);
  CMT_REL(docs_table_value(doc, m, "rk4"), 2 * sqrt(2), 1e-4);
  CMT_REL(docs_table_value(doc, m, "newmark_0.6_0.2"),
          cm_step_newmark(1, 0.6, 0.2), 1e-4);
  CMT_REL(docs_table_value(doc, m, "newmark_0.6_0.2"), 1 / sqrt(0.1), 1e-4);
  /* the accuracy step: Omega with (2/Omega) asin(Omega/2) - 1 = tol */
  const char *a = "<!-- accuracy-steps -->";
  const char *tols[] = {"1e-4", "1e-3", "0.01", "0.05"};
  for (int i = 0; i < 4; i++) {
    double tol = strtod(tols[i], NULL);
    double W = docs_table_value(doc, a, tols[i]);
    CMT_REL(W, cm_step_accuracy(1, tol), 1e-4);
    CMT_REL((2 / W) * asin(W / 2) - 1, tol, 1e-3);
    if (tol <= 1e-3)
      CMT_REL(W, sqrt(24 * tol), 2e-3); /* the Omega^2 / 24 rule */
  }
  free(doc);
}

/* ---- the index ---------------------------------------------------------- */

/* docs/README.md links every document in docs/. */
CM_TEST(docs_index_complete) {
  char *idx = docs_read("docs/README.md");
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/docs", CM_SOURCE_DIR);
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; idx && d && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    int md = len > 3 && !strcmp(e->d_name + len - 3, ".md");
    int yaml = len > 5 && !strcmp(e->d_name + len - 5, ".yaml");
    if ((!md && !yaml) || !strcmp(e->d_name, "README.md"))
      continue;
    char link[300];
    snprintf(link, sizeof link, "](%s)", e->d_name);
    if (!strstr(idx, link))
      CMT_FAIL("docs/README.md does not link %s", e->d_name);
    n++;
  }
  if (d)
    closedir(d);
  CMT_TRUE(n >= 8);
  free(idx);
}

/* ---- determinism, as report-format.md states it -----------------------------
 */

/* The same bytes (without timings) at any thread count and on a repeat, on
 * the ARPACK path. */
CM_TEST(docs_report_determinism) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_pile_options_t po;
  cm_pile_options_init(&po);
  po.dim = 3;
  po.count = 800;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_pile(&ctx, &po, &s), 0);
  if (!s)
    return;
  char *text[3] = {NULL, NULL, NULL};
  int threads[3] = {1, 2, 1};
  for (int i = 0; i < 3; i++) {
    cm_context_t c;
    cm_context_init(&c);
    c.threads = threads[i];
    cm_report_t *r = NULL;
    CMT_EQ_INT(cm_analyze(&c, s, NULL, &r), 0);
    if (r) {
      CMT_TRUE(!strcmp(r->method, "lanczos") || !strcmp(r->method, "mixed"));
      text[i] = cm_report_to_json(r, CM_JSON_NO_TIMINGS);
    }
    cm_report_destroy(&r);
  }
  CMT_TRUE(text[0] && text[1] && text[2]);
  if (text[0] && text[1] && text[2]) {
    CMT_TRUE(!strcmp(text[0], text[1]));
    CMT_TRUE(!strcmp(text[0], text[2]));
    CMT_TRUE(strstr(text[0], "\"timings\"") == NULL);
  }
  for (int i = 0; i < 3; i++)
    free(text[i]);
  cm_scene_destroy(&s);
}

/* The deck example of docs/examples.md ("The deck's own model"): the same
 * commands give the same step lines as the page shows. */
CM_TEST(docs_lammps_deck_example) {
  char *md = docs_read("docs/examples.md");
  if (!md)
    return;
  CMT_CONTAINS(md, "$ cmodes import lammps --deck data/lammps/in.pile "
                   "--dump data/lammps/pile.dump -o deck.json");
  char out[64];
  if (cmt_lammps_deck(out)) {
    free(md);
    return;
  }
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cd %s && %s analyze %s -k 3 2>&1", CM_SOURCE_DIR,
           CM_BINARY, out);
  int code = -1;
  char *text = cmt_run(cmd, &code);
  unlink(out);
  CMT_EQ_INT(code, 0);
  /* every step line, the model line and the solver line (its products
   * had drifted from the docs unnoticed), verbatim */
  static const char *const starts[] = {"omega_max ",
                                       "  model: ",
                                       "  central difference ",
                                       "  CD without dashpots ",
                                       "  the deck's step ",
                                       "  RK4 ",
                                       "counts ",
                                       "        not sharp: ",
                                       "solver "};
  for (char *line = text ? strtok(text, "\n") : NULL; line;
       line = strtok(NULL, "\n"))
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++)
      if (!strncmp(line, starts[k], strlen(starts[k])))
        CMT_CONTAINS(md, line);
  free(text);
  free(md);
}

/* The fix viscous example of docs/examples.md ("A drag on every
 * sphere"): the same commands give the page's step and counts lines. */
CM_TEST(docs_viscous_deck_example) {
  char *md = docs_read("docs/examples.md");
  if (!md)
    return;
  CMT_CONTAINS(md, "$ cmodes import lammps --deck "
                   "data/lammps/decks/in.hooke-viscous --dump "
                   "data/lammps/decks/hooke-viscous.dump -q -o viscous.json");
  char out[] = "/tmp/cmodes-test-viscous-XXXXXX";
  int fd = mkstemp(out);
  if (fd < 0) {
    CMT_FAIL("mkstemp");
    free(md);
    return;
  }
  close(fd);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "cd %s && %s import lammps --deck data/lammps/decks/in.hooke-viscous "
           "--dump data/lammps/decks/hooke-viscous.dump -q -o %s 2>&1 && %s "
           "analyze %s -k 3 2>&1",
           CM_SOURCE_DIR, CM_BINARY, out, CM_BINARY, out);
  int code = -1;
  char *text = cmt_run(cmd, &code);
  unlink(out);
  CMT_EQ_INT(code, 0);
  static const char *const starts[] = {
      "omega_max ", "  model: ", "  central difference ", "  CD without ",
      "  the deck's step ", "counts "};
  int seen = 0;
  for (char *line = text ? strtok(text, "\n") : NULL; line;
       line = strtok(NULL, "\n"))
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++)
      if (!strncmp(line, starts[k], strlen(starts[k]))) {
        CMT_CONTAINS(md, line);
        seen++;
      }
  CMT_EQ_INT(seen, 6);
  free(text);
  free(md);
}

/* The time series of docs/examples.md: every line `cmodes track` prints
 * (the CSV rows, products included, and the summary), verbatim, for the
 * settling run and the sheared bed. */
CM_TEST(docs_track_example) {
  char *md = docs_read("docs/examples.md");
  if (!md)
    return;
  const struct {
    const char *dump, *deck;
    int lines; /* the header, the snapshots, the summary */
  } runs[] = {
      {"data/lammps/series/series.dump", "data/lammps/series/in.series", 15},
      {"data/lammps/sheared/sheared.dump", "data/lammps/sheared/in.sheared",
       14}};
  for (int k = 0; k < 2; k++) {
    char cmd[2048], shown[512];
    snprintf(shown, sizeof shown, "$ cmodes track %s --deck %s --svg step.svg",
             runs[k].dump, runs[k].deck);
    CMT_CONTAINS(md, shown);
    snprintf(cmd, sizeof cmd, "cd %s && %s track %s --deck %s 2>&1",
             CM_SOURCE_DIR, CM_BINARY, runs[k].dump, runs[k].deck);
    int code = -1, lines = 0;
    char *text = cmt_run(cmd, &code);
    CMT_EQ_INT(code, 0);
    for (char *line = text ? strtok(text, "\n") : NULL; line;
         line = strtok(NULL, "\n"), lines++)
      CMT_CONTAINS(md, line);
    CMT_EQ_INT(lines, runs[k].lines);
    free(text);
  }
  free(md);
}
