/* test_docs_drift.c: claims of the docs that drifted once (issue #17) and
 * are now checked: data/README.md's generate commands give the bundled
 * scenes. Not for the docs' examples (test_docs.c) or the options table
 * (test_options.c). */
#include "cmodes.h"
#include "cmtest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every "| `FILE.json` | `generate ...` |" row of data/README.md: the
 * command's scene has the same values as the bundled file. */
CM_TEST(docs_data_regenerates) {
  char path[1024];
  snprintf(path, sizeof path, "%s/data/README.md", CM_SOURCE_DIR);
  char *md = cmt_read_file(path);
  if (!md) {
    CMT_FAIL("cannot read %s", path);
    return;
  }
  int rows = 0;
  for (const char *p = strstr(md, "\n| `"); p; p = strstr(p + 1, "\n| `")) {
    char file[128], gen[400];
    if (sscanf(p, "\n| `%127[^`]` | `generate %399[^`]` |", file, gen) != 2)
      continue;
    char cmd[1024];
    int code;
    snprintf(cmd, sizeof cmd, "%s generate %s", CM_BINARY, gen);
    char *out = cmt_run(cmd, &code);
    CMT_EQ_INT(code, 0);
    snprintf(path, sizeof path, "%s/data/%s", CM_SOURCE_DIR, file);
    json_error_t err;
    json_t *a = json_loads(out, 0, &err), *b = json_load_file(path, 0, &err);
    if (!a || !b || !json_equal(a, b))
      CMT_FAIL("data/README.md: `cmodes generate %s` does not give %s", gen,
               file);
    json_decref(a);
    json_decref(b);
    free(out);
    rows++;
  }
  CMT_TRUE(rows >= 9);
  free(md);
}

/* Joins the continuation lines of a wrapped example ("\n     ") with a
 * space, in place. */
static void drift_unwrap(char *s) {
  char *o = s;
  for (char *p = s; *p;) {
    if (!strncmp(p, "\n     ", 6)) {
      *o++ = ' ';
      p += 6;
    } else {
      *o++ = *p++;
    }
  }
  *o = 0;
}

/* docs/server.md's malformed-JSON example is what the server answers. */
CM_TEST(docs_server_parse_error) {
  char req[] = "/tmp/cmodes_drift_XXXXXX";
  int fd = mkstemp(req);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    CMT_FAIL("cannot write a temporary file");
    return;
  }
  /* the body of the example, {"dim": 2, as a JSON string */
  fputs("{\"id\": 1, \"method\": \"POST\", \"path\": \"/v1/analyze\", "
        "\"body\": \"{\\\"dim\\\": 2,\"}\n",
        f);
  fclose(f);
  char cmd[1024];
  int code;
  snprintf(cmd, sizeof cmd, "%s serve --stdio < %s", CM_BINARY, req);
  char *out = cmt_run(cmd, &code);
  unlink(req);
  CMT_EQ_INT(code, 0);
  json_error_t err;
  json_t *line = json_loads(out, 0, &err);
  json_t *body = json_object_get(line, "body");
  char *want = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
  char path[1024];
  snprintf(path, sizeof path, "%s/docs/server.md", CM_SOURCE_DIR);
  char *md = cmt_read_file(path);
  CMT_TRUE(want && md);
  if (want && md) {
    drift_unwrap(md);
    if (!strstr(md, want))
      CMT_FAIL("docs/server.md does not show the parse error as sent:\n%s",
               want);
  }
  free(md);
  free(want);
  json_decref(line);
  free(out);
}

/* Every route of docs/openapi.yaml but /healthz lists 401 (the token) and
 * every route 405 (the other methods). */
CM_TEST(docs_openapi_responses) {
  char path[1024];
  snprintf(path, sizeof path, "%s/docs/openapi.yaml", CM_SOURCE_DIR);
  char *y = cmt_read_file(path);
  if (!y) {
    CMT_FAIL("cannot read %s", path);
    return;
  }
  char *end = strstr(y, "\ncomponents:");
  if (end)
    *end = 0;
  int routes = 0;
  for (char *p = strstr(y, "\n  /"); p;) {
    char *next = strstr(p + 1, "\n  /");
    char name[128];
    sscanf(p + 3, "%127[^:]", name);
    /* each method of the route: "    get:", "    post:", ... */
    for (char *m = strstr(p + 1, "\n    "); m && (!next || m < next);
         m = strstr(m + 1, "\n    ")) {
      if (strncmp(m + 5, "get:", 4) && strncmp(m + 5, "post:", 5) &&
          strncmp(m + 5, "patch:", 6) && strncmp(m + 5, "delete:", 7))
        continue;
      char *mend = strstr(m + 1, "\n    ");
      while (mend && mend[5] == ' ')
        mend = strstr(mend + 1, "\n    ");
      if (next && (!mend || mend > next))
        mend = next;
      char save = mend ? *mend : 0;
      if (mend)
        *mend = 0;
      if (strcmp(name, "/healthz") && !strstr(m, "\"401\""))
        CMT_FAIL("docs/openapi.yaml: %s %.8s lacks the 401 response", name,
                 m + 5);
      if (!strstr(m, "\"405\""))
        CMT_FAIL("docs/openapi.yaml: %s %.8s lacks the 405 response", name,
                 m + 5);
      if (mend)
        *mend = save;
      routes++;
    }
    p = next;
  }
  CMT_TRUE(routes >= 8);
  free(y);
}
