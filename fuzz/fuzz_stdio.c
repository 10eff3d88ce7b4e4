/* fuzz_stdio.c: libFuzzer harness of `cmodes serve --stdio`: the input is
 * fed as the request lines (fmemopen), every line of output must be a JSON
 * object with an integer "status" in 100..599, one per non-empty input
 * line; otherwise the harness aborts. Built with -DCMODES_FUZZ=ON and
 * clang (fuzz/README.md). */
#include "fuzz_server.h"
#include "server.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cm__server_t g_srv;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  cm__fuzz_server_init(&g_srv, 1);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!size)
    return 0;
  FILE *in = fmemopen((void *)data, size, "r");
  char *out = NULL;
  size_t olen = 0;
  FILE *o = open_memstream(&out, &olen);
  if (!in || !o)
    abort();
  cm__serve_stdio(&g_srv, in, o);
  fclose(in);
  fclose(o);
  size_t lines = 0, expect = 0;
  for (size_t i = 0, start = 0; i <= size; i++) /* non-empty input lines */
    if (i == size || data[i] == '\n') {
      size_t e = i;
      while (e > start && (data[e - 1] == '\r'))
        e--;
      expect += e > start;
      start = i + 1;
    }
  for (char *p = out, *e; p && *p; p = e + 1) {
    e = strchr(p, '\n');
    if (!e)
      abort(); /* an unterminated answer */
    json_error_t je;
    json_t *j = json_loadb(p, (size_t)(e - p), 0, &je);
    json_t *st = json_object_get(j, "status");
    if (!json_is_integer(st) || json_integer_value(st) < 100 ||
        json_integer_value(st) > 599)
      abort();
    json_decref(j);
    lines++;
  }
  if (lines != expect)
    abort();
  free(out);
  cm__store_expire(&g_srv.store, cm__now());
  return 0;
}
