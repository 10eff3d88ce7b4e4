/* test_options.c: the options table (analyze/options_table.h) against its
 * users: the same value of an option gives the same result or the same
 * error from the command line (the real binary), the server's query and
 * JSON parsers (called directly) and the library's checks; docs/cli.md
 * holds the generated table; docs/openapi.yaml describes every option with
 * the table's type, range and default; `cmodes options --json` exports it.
 * Not for what the options do to a report (test_core.c). */
#include "analyze/options_table.h"
#include "cmodes.h"
#include "cmtest.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- values worth trying for one option -------------------------------- */

static int opt_values(const cm__option_t *o, char v[][40]) {
  int n = 0;
  if (o->type == CM__OPT_METHOD) {
    for (int m = (int)o->lo; m <= (int)o->hi; m++)
      snprintf(v[n++], 40, "%s", cm__method_name(m));
    snprintf(v[n++], 40, "fastest");
    snprintf(v[n++], 40, "1");
    return n;
  }
  double hi = o->hi == HUGE_VAL ? 1e300 : o->hi;
  double pts[] = {o->lo,       hi,     o->lo - 1,   hi * 2 + 1,
                  o->lo + 0.5, o->def, o->lo + 1e-9};
  for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++)
    snprintf(v[n++], 40, "%.17g", pts[i]);
  snprintf(v[n++], 40, "abc");
  snprintf(v[n++], 40, "1x");
  snprintf(v[n++], 40, "nan");
  return n;
}

/* The message after "PATH: " (the part both front ends share). */
static const char *opt_tail(const char *msg) {
  const char *p = strstr(msg, ": ");
  return p ? p + 2 : msg;
}

/* ---- CLI, query, JSON and library agree ---------------------------------- */

CM_TEST(options_cli_server_agree) {
  int n;
  const cm__option_t *t = cm__options_table(&n);
  CMT_TRUE(n >= 15);
  char scene[1024];
  snprintf(scene, sizeof scene, "%s/data/bar2d.json", CM_SOURCE_DIR);
  cm_context_t sctx;
  cm_context_init(&sctx);
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_scene_read_file(&sctx, scene, &s), CM_OK);
  int checked = 0;
  for (int i = 0; i < n; i++) {
    char vals[16][40];
    int nv = opt_values(&t[i], vals);
    for (int k = 0; k < nv; k++) {
      /* the server's query parser */
      cm_options_t q;
      cm_options_init(&q);
      cm_context_t qctx;
      cm_context_init(&qctx);
      int qst = cm__options_from_query(&qctx, t[i].name, vals[k], &q);
      /* the server's JSON parser, given the same value as JSON */
      cm_options_t j;
      cm_options_init(&j);
      cm_context_t jctx;
      cm_context_init(&jctx);
      double x;
      json_t *jv = t[i].type == CM__OPT_METHOD     ? json_string(vals[k])
                   : cm__parse_number(vals[k], &x) ? json_real(x)
                                                   : json_string(vals[k]);
      json_t *obj = json_object();
      json_object_set_new(obj, t[i].name, jv);
      int jst = cm__options_from_json(&jctx, obj, &j);
      json_decref(obj);
      CMT_EQ_INT(jst, qst);
      if (!qst)
        CMT_TRUE(!memcmp(&q, &j, sizeof q));
      /* what the analysis then says */
      int lst = qst;
      if (!qst) {
        cm_report_t *rep = NULL;
        cm_context_t lctx;
        cm_context_init(&lctx);
        lctx.threads = 1;
        lst = cm_analyze(&lctx, s, &q, &rep);
        cm_report_destroy(&rep);
      }
      /* the command line, the real binary */
      char cmd[2600];
      int code;
      snprintf(cmd, sizeof cmd,
               "%s analyze --threads 1 --%s '%s' %s 2>&1 >/dev/null", CM_BINARY,
               t[i].cli, vals[k], scene);
      char *out = cmt_run(cmd, &code);
      if (code != cm_status_exit(lst))
        CMT_FAIL("--%s %s: exit %d, server status %d (%s), analysis %d",
                 t[i].cli, vals[k], code, qst, qctx.message, lst);
      if (qst) /* the same message after the option's name */
        CMT_CONTAINS(out, opt_tail(qctx.message));
      free(out);
      checked++;
    }
  }
  CMT_TRUE(checked > 100);
  cm_scene_destroy(&s);
}

/* The cases issue #17 measured, by name. */
CM_TEST(options_issue17_cases) {
  cm_options_t o;
  cm_options_init(&o);
  cm_context_t ctx;
  cm_context_init(&ctx);
  CMT_EQ_INT(cm__options_from_query(&ctx, "tol", "0.7", &o), CM_OK);
  CMT_EQ_INT(cm__options_from_query(&ctx, "damping_ratio", "2", &o), CM_OK);
  CMT_EQ_INT(cm__options_from_query(&ctx, "chebyshev", "4", &o), CM_OK);
  CMT_EQ_INT(o.chebyshev, 4);
  CMT_EQ_INT(cm__options_check(&ctx, &o), CM_OK);
  /* the cache key changes with every option, chebyshev included */
  int n;
  const cm__option_t *t = cm__options_table(&n);
  cm_options_t d;
  cm_options_init(&d);
  char *k0 = cm__options_key(&d);
  static const char *const tries[] = {"dense", "2", "0.5", "3", "0.001", NULL};
  for (int i = 0; i < n; i++) {
    cm_options_t c = d;
    int set = 0;
    for (int k = 0; tries[k] && !set; k++) {
      c = d;
      set = !cm__options_from_query(&ctx, t[i].name, tries[k], &c) &&
            cm__option_get(&t[i], &c) != cm__option_get(&t[i], &d);
    }
    CMT_TRUE(set);
    char *k1 = cm__options_key(&c);
    if (!strcmp(k0, k1))
      CMT_FAIL("the cache key ignores %s", t[i].name);
    free(k1);
  }
  free(k0);
  CMT_EQ_INT(cm__options_from_query(&ctx, "colour", "red", &o), CM_USAGE);
  CMT_CONTAINS(ctx.message, "?colour: unknown option (known: modes, tol");
  /* the defaults are the table's and pass the checks */
  CMT_EQ_INT(d.modes, 6);
  CMT_EQ_INT(d.dense_max, 400);
  CMT_EQ_INT(cm__options_check(&ctx, &d), CM_OK);
}

/* ---- exported: cmodes options --json ----------------------------------------
 */

CM_TEST(options_json_export) {
  char cmd[1024];
  int code;
  snprintf(cmd, sizeof cmd, "%s options --json", CM_BINARY);
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  json_error_t err;
  json_t *root = json_loads(out, 0, &err);
  CMT_TRUE(root != NULL);
  CMT_TRUE(!strcmp(json_string_value(json_object_get(root, "format")),
                   "cmodes-options"));
  json_t *arr = json_object_get(root, "options");
  int n;
  const cm__option_t *t = cm__options_table(&n);
  CMT_EQ_INT((int)json_array_size(arr), n);
  for (int i = 0; i < n; i++) {
    json_t *row = json_array_get(arr, (size_t)i);
    CMT_TRUE(
        !strcmp(json_string_value(json_object_get(row, "name")), t[i].name));
    if (t[i].type != CM__OPT_METHOD)
      CMT_TRUE(json_number_value(json_object_get(row, "default")) == t[i].def);
  }
  json_decref(root);
  free(out);
  char *lib = cm_options_table_json();
  snprintf(cmd, sizeof cmd, "%s options --json", CM_BINARY);
  out = cmt_run(cmd, &code);
  size_t len = strlen(out);
  CMT_TRUE(len > 0 && out[len - 1] == '\n');
  out[len - 1] = 0;
  CMT_TRUE(!strcmp(out, lib));
  free(out);
  free(lib);
}

/* ---- docs
 * -------------------------------------------------------------------- */

static char *opt_read(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", CM_SOURCE_DIR, rel);
  char *s = cmt_read_file(path);
  if (!s)
    CMT_FAIL("cannot read %s", path);
  return s;
}

CM_TEST(options_docs_cli_table) {
  char *md = opt_read("docs/cli.md");
  char *table = cm__options_markdown();
  if (!strstr(md, table))
    CMT_FAIL("docs/cli.md lacks the options table of `cmodes options "
             "--markdown`:\n%s",
             table);
  free(table);
  free(md);
}

/* A number as the YAML of docs/openapi.yaml writes it (1.0e-10: YAML 1.1
 * reads 1e-10 as a string). */
static void opt_yaml_num(double v, int integer, char *buf, size_t n) {
  snprintf(buf, n, integer ? "%.0f" : "%.15g", v);
  char *e = strchr(buf, 'e');
  if (e && !strchr(buf, '.')) {
    char tail[32];
    snprintf(tail, sizeof tail, "%s", e);
    snprintf(e, n - (size_t)(e - buf), ".0%s", tail);
  }
}

/* "{type: number, minimum: 0, exclusiveMinimum: true, ...}" of a row. */
static void opt_yaml_schema(const cm__option_t *o, int with_default, char *buf,
                            size_t n) {
  char lo[40], hi[40], def[40];
  int integer = o->type == CM__OPT_INT;
  if (o->type == CM__OPT_METHOD) {
    size_t len = (size_t)snprintf(buf, n, "{type: string, enum: [");
    for (int m = (int)o->lo; m <= (int)o->hi; m++)
      len += (size_t)snprintf(buf + len, n - len, "%s%s",
                              m > (int)o->lo ? ", " : "", cm__method_name(m));
    snprintf(buf + len, n - len, "]%s%s}", with_default ? ", default: " : "",
             with_default ? cm__method_name((int)o->def) : "");
    return;
  }
  opt_yaml_num(o->lo, integer, lo, sizeof lo);
  opt_yaml_num(o->hi, integer, hi, sizeof hi);
  opt_yaml_num(o->def, integer, def, sizeof def);
  size_t len = (size_t)snprintf(
      buf, n, "{type: %s, minimum: %s%s", integer ? "integer" : "number", lo,
      o->bounds & 1 ? ", exclusiveMinimum: true" : "");
  if (o->hi != HUGE_VAL)
    len += (size_t)snprintf(buf + len, n - len, ", maximum: %s%s", hi,
                            o->bounds & 2 ? ", exclusiveMaximum: true" : "");
  if (with_default)
    len += (size_t)snprintf(buf + len, n - len, ", default: %s", def);
  snprintf(buf + len, n - len, "}");
}

CM_TEST(options_docs_openapi) {
  char *y = opt_read("docs/openapi.yaml");
  int n;
  const cm__option_t *t = cm__options_table(&n);
  for (int i = 0; i < n; i++) {
    char want[400], block[160], ref[160];
    /* components/parameters/NAME with the table's schema */
    snprintf(block, sizeof block,
             "\n    %s:\n      name: %s\n      in: query\n", t[i].name,
             t[i].name);
    const char *b = strstr(y, block);
    if (!b) {
      CMT_FAIL("docs/openapi.yaml: no query parameter %s", t[i].name);
      continue;
    }
    const char *end = strstr(b + strlen(block), "\n    ");
    while (end && end[5] == ' ')
      end = strstr(end + 1, "\n    ");
    opt_yaml_schema(&t[i], 1, want, sizeof want);
    const char *sch = strstr(b, "      schema: ");
    if (!sch || (end && sch > end) || strncmp(sch + 14, want, strlen(want)))
      CMT_FAIL("docs/openapi.yaml: parameter %s: expected schema: %s",
               t[i].name, want);
    /* in the Options schema */
    opt_yaml_schema(&t[i], 0, want, sizeof want);
    want[strlen(want) - 1] = 0; /* may go on with a description */
    char prop[480];
    snprintf(prop, sizeof prop, "\n        %s: %s", t[i].name, want);
    if (!strstr(y, prop))
      CMT_FAIL("docs/openapi.yaml: Options.%s: expected %s", t[i].name,
               prop + 1);
    /* listed by both routes that take options in the query */
    snprintf(ref, sizeof ref, "$ref: \"#/components/parameters/%s\"",
             t[i].name);
    const char *first = strstr(y, ref);
    if (!first || !strstr(first + 1, ref) ||
        !strstr(strstr(first + 1, ref) + 1, ref))
      CMT_FAIL("docs/openapi.yaml: %s is not a parameter of /v1/analyze, "
               "POST /v1/scenes and /v1/scenes/{id}/report",
               t[i].name);
  }
  /* and no query parameter the server does not take */
  for (const char *p = strstr(y, "      in: query"); p;
       p = strstr(p + 1, "      in: query")) {
    const char *nm = p;
    while (nm > y && strncmp(nm, "      name: ", 12))
      nm--;
    char name[64];
    sscanf(nm + 12, "%63s", name);
    if (!cm__option_find(name) && strcmp(name, "timings") &&
        strcmp(name, "pretty"))
      CMT_FAIL("docs/openapi.yaml: query parameter %s is not an option", name);
  }
  free(y);
}

/* ---- command-line consistency
 * ------------------------------------------------ */

CM_TEST(options_cli_consistent) {
  static const struct {
    const char *args; /* after `cmodes` */
    int code;         /* exit code */
    const char *want; /* in stdout + stderr */
  } cases[] = {
      /* getopt's own messages name the command */
      {"analyze --colour x", 2,
       "cmodes analyze: unrecognized option '--colour'"},
      {"compare --colour x", 2, "cmodes compare: unrecognized option"},
      {"verify --colour x", 2, "cmodes verify: unrecognized option"},
      {"export --colour x", 2, "cmodes export: unrecognized option"},
      {"serve --colour", 2, "cmodes serve: unrecognized option"},
      /* one number parser: "abc" is an error naming the option */
      {"import dump x --threads abc", 2,
       "cmodes import: --threads: 'abc' is not a non-negative integer"},
      {"export x --threads abc --matrices /tmp", 2,
       "cmodes export: --threads: 'abc' is not a non-negative integer"},
      {"generate pile --count abc", 2, "--count: 'abc' is not an integer"},
      {"compare --ncv abc x", 2, "cmodes compare: --ncv: 'abc' is not"},
      {"verify --max-iter abc x", 2, "cmodes verify: --max-iter: 'abc' is not"},
      /* -k is --modes, never the stiffness */
      {"generate bar -k 1e5", 2, "cmodes generate: unknown option '-k'"},
      {"generate bar --k 1e5 -o /dev/null", 0, ""},
      /* -o is --output; --out stays */
      {"generate bar --output /dev/null", 0, ""},
      {"generate bar --out /dev/null", 0, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char cmd[512];
    int code;
    snprintf(cmd, sizeof cmd, "%s %s 2>&1 </dev/null", CM_BINARY,
             cases[i].args);
    char *out = cmt_run(cmd, &code);
    if (code != cases[i].code)
      CMT_FAIL("cmodes %s: exit %d, expected %d:\n%s", cases[i].args, code,
               cases[i].code, out);
    CMT_CONTAINS(out, cases[i].want);
    free(out);
  }
}
