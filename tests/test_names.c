/* test_names.c: names of a system given as matrices (the manifest's
 * row_names and col_names, cm_system_set_names) in the report, against the
 * reference bar written as matrices (rocking 632.46 rad/s, both contacts
 * 0.5 of it; bounce 316.23). Not for scene names (test_formats.c). */
#include "cmodes.h"
#include "cmtest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The bar as M (y, theta), J (two contacts at x = -+0.1), k in dir, with
 * a manifest whose extra text is `names` (JSON members, may be ""). */
static void names_write(const char *dir, const char *names) {
  char p[512], text[1024];
  snprintf(p, sizeof p, "%s/M.mtx", dir);
  cmt_write_text(p, "%%MatrixMarket matrix coordinate real symmetric\n"
                    "2 2 2\n1 1 2\n2 2 0.005\n");
  snprintf(p, sizeof p, "%s/J.mtx", dir);
  cmt_write_text(p, "%%MatrixMarket matrix coordinate real general\n"
                    "2 2 4\n1 1 1\n1 2 -0.1\n2 1 1\n2 2 0.1\n");
  snprintf(p, sizeof p, "%s/k.mtx", dir);
  cmt_write_text(p, "%%MatrixMarket matrix array real general\n"
                    "2 1\n1e5\n1e5\n");
  snprintf(p, sizeof p, "%s/manifest.json", dir);
  snprintf(text, sizeof text,
           "{\"M\": \"M.mtx\", \"J\": \"J.mtx\", \"k\": \"k.mtx\"%s}\n", names);
  cmt_write_text(p, text);
}

CM_TEST(names_manifest_rows_in_report) {
  char dir[256], man[512];
  cmt_tmpdir(dir, sizeof dir);
  names_write(dir, ", \"row_names\": [\"left\", null], \"col_names\": "
                   "[\"y\", \"theta\"]");
  snprintf(man, sizeof man, "%s/manifest.json", dir);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL;
  CMT_EQ_INT(cm_system_read_manifest(&ctx, man, &sys), 0);
  if (!sys)
    return;
  CMT_TRUE(sys->row_names && !strcmp(sys->row_names[0], "left") &&
           !sys->row_names[1]);
  CMT_TRUE(sys->col_names && !strcmp(sys->col_names[1], "theta"));
  cm_report_t *r = NULL;
  CMT_EQ_INT(cm_analyze_system(&ctx, sys, NULL, NULL, &r), 0);
  if (r) {
    CMT_REL(r->omega_max, sqrt(2 * 1e5 * 0.01 / 0.005), 1e-12);
    /* equal shares: the lower index first, named; the other unnamed */
    CMT_EQ_INT(r->modes[0].contacts[0].index, 0);
    CMT_TRUE(r->modes[0].contacts[0].name &&
             !strcmp(r->modes[0].contacts[0].name, "left"));
    CMT_TRUE(r->modes[0].contacts[1].name == NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cm_report_write_text(r, f);
    fclose(f);
    CMT_CONTAINS(buf, "comp 0:  left 0.500  c1 0.500");
    free(buf);
  }
  cm_report_destroy(&r);
  /* names replaced, then removed */
  const char *rows[2] = {"a", "b"};
  CMT_EQ_INT(cm_system_set_names(&ctx, sys, rows, NULL), 0);
  CMT_TRUE(!strcmp(sys->row_names[1], "b") && sys->col_names == NULL);
  CMT_EQ_INT(cm_system_set_names(&ctx, sys, NULL, NULL), 0);
  CMT_TRUE(sys->row_names == NULL);
  cm_system_destroy(&sys);
  /* a scene's system is named by its scene */
  cm_scene_t *s = cmt_data_scene("bar2d.json");
  if (s && !cm_system_assemble(&ctx, s, &sys)) {
    CMT_EQ_INT(cm_system_set_names(&ctx, sys, rows, NULL), CM_USAGE);
    CMT_CONTAINS(ctx.message, "assembled from a scene");
  }
  cm_system_destroy(&sys);
  cm_scene_destroy(&s);
}

CM_TEST(names_manifest_errors) {
  static const struct {
    const char *names, *msg;
  } cases[] = {
      {", \"row_names\": [\"a\"]",
       "\"row_names\" has 1 names but J has 2 rows: give one name (or null) "
       "per row of J"},
      {", \"col_names\": [\"a\", \"b\", \"c\"]",
       "\"col_names\" has 3 names but M has 2 dofs"},
      {", \"row_names\": \"left right\"", "\"row_names\" is not an array"},
      {", \"row_names\": [\"a\", 7]", "row_names[1] is not a string"},
      {", \"rownames\": []", "unknown key \"rownames\""},
  };
  char dir[256], man[512];
  cmt_tmpdir(dir, sizeof dir);
  snprintf(man, sizeof man, "%s/manifest.json", dir);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    names_write(dir, cases[i].names);
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_system_t *sys = NULL;
    CMT_EQ_INT(cm_system_read_manifest(&ctx, man, &sys), CM_PARSE);
    CMT_TRUE(sys == NULL);
    CMT_CONTAINS(ctx.message, cases[i].msg);
    CMT_CONTAINS(ctx.message, "manifest.json");
  }
}
