/* cmd_convert.c: `cmodes convert IN OUT`: a scene between the JSON and the
 * compact binary format (by OUT's extension: .json, or .cmsb for binary).
 * Not for other formats (import, export). */
#include "cli.h"
#include "cmodes.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int cm__ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

int cm__cmd_convert(int argc, char **argv) {
  if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    printf("usage: cmodes convert IN OUT\n\n"
           "Reads a scene (JSON or binary; IN may be -) and writes it as\n"
           "binary when OUT ends in .cmsb, as JSON when it ends in .json\n"
           "(or is -). The binary format keeps every number bit for bit but\n"
           "no names or meta; see docs/scene-format.md.\n");
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "cmodes convert: expected IN and OUT; try --help\n");
    return cm_status_exit(CM_USAGE);
  }
  const char *out = argv[2];
  int binary = cm__ends_with(out, ".cmsb");
  if (!binary && strcmp(out, "-") && !cm__ends_with(out, ".json")) {
    fprintf(stderr,
            "cmodes convert: %s: the output must end in .json or "
            ".cmsb (or be - for JSON on standard output)\n",
            out);
    return cm_status_exit(CM_USAGE);
  }
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  int st = cm_scene_read_file(&ctx, argv[1], &s);
  if (!st) {
    FILE *f = strcmp(out, "-") ? fopen(out, binary ? "wb" : "w") : stdout;
    if (!f) {
      fprintf(stderr, "cmodes convert: %s: cannot create: %s\n", out,
              strerror(errno));
      cm_scene_destroy(&s);
      return cm_status_exit(CM_IO);
    }
    st = binary ? cm_scene_write_binary(&ctx, s, f)
                : cm_scene_write_json(&ctx, s, f);
    if (f != stdout && (ferror(f) | (fclose(f) != 0)) && !st)
      st = CM_IO;
  }
  if (st)
    fprintf(stderr, "cmodes convert: %s\n",
            ctx.message[0] ? ctx.message : cm_status_message(st));
  cm_scene_destroy(&s);
  return cm_status_exit(st);
}
