/* test_docs_drift.c: claims of the docs that drifted once (issue #17) and
 * are now checked: data/README.md's generate commands give the bundled
 * scenes. Not for the docs' examples (test_docs.c) or the options table
 * (test_options.c). */
#include "cmodes.h"
#include "cmtest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

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
