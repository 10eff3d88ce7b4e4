/* fuzz_readers.c: libFuzzer harnesses of the file readers, one binary per
 * reader (FUZZ_READER selects it; fuzz/CMakeLists.txt):
 *   1 scene_json  cm_scene_parse_json on the input
 *   2 scene_bin   the binary scene reader (cm__scene_parse_binary)
 *   3 dump        cm_dump_read on the input as a text dump file
 *   4 deck        cm_lammps_deck_read on the input as a deck file (its
 *                 include and read_data paths resolve in an empty folder)
 *   5 mtx         cm_system_read_matrices on M, J and k: the input split at
 *                 lines "%%----" (a missing part repeats the last one)
 *   6 import      the whole import: the input split at a line "%%----"
 *                 into a deck and a dump, cm_import_lammps (the contact
 *                 laws, walls and periodic images of the deck); without
 *                 the line, the input is a dump imported with a linear
 *                 stiffness, a density, contacts across a periodic
 *                 boundary on the minimum image, then dropped.
 *                 A scene that was built must pass cm_scene_validate (an
 *                 import never hands over a scene the analysis refuses)
 *   7 track       the page of a time series (cm__report_track_html, what
 *                 `cmodes report --track` does with a `cmodes track
 *                 --format jsonl` file) on the input, written to
 *                 /dev/null
 * Every call must return a status of the table in include/cmodes.h and, on
 * failure, a message; a scene that was read is validated and written
 * back as JSON. A crash, a sanitizer report, a leak or a broken rule aborts.
 *
 * The file readers (3..6) read the input from memory: their binaries are
 * linked with -Wl,--wrap=fopen,--wrap=fopen64 (fuzz/CMakeLists.txt), and
 * __wrap_fopen below opens a path the harness registered (put) as an
 * fmemopen stream on the input; any other path goes to the real fopen, as
 * before (an include or read_data of another name finds nothing in the
 * empty scratch folder). The readers run unchanged, with the registered
 * path in their messages; no file is written, which made these harnesses
 * about 1000 inputs a second. */
#define _GNU_SOURCE /* memmem */
#include "cmodes.h"
#include "cmodes/import.h"
#include "internal.h"
#if FUZZ_READER == 7
#include "report/report_html.h"
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[64];

static void status_check(const cm_context_t *ctx, int st) {
  if (st > 1 || st < CM_INTERNAL || st == CM_INTERNAL)
    abort();
  if (st < 0 && !ctx->message[0])
    abort();
}

#if FUZZ_READER >= 3 && FUZZ_READER <= 6
/* The in-memory files: path, bytes, size; slot i of put. */
static struct {
  char path[128];
  const uint8_t *data;
  size_t size;
} g_file[3];
static int g_nfiles;

FILE *__real_fopen(const char *path, const char *mode);
FILE *__wrap_fopen(const char *path, const char *mode);
FILE *__wrap_fopen64(const char *path, const char *mode);

/* fopen of a registered path for reading: a stream on its bytes (an empty
 * one on /dev/null: fmemopen refuses size 0 on older C libraries). */
FILE *__wrap_fopen(const char *path, const char *mode) {
  for (int i = 0; path && mode && mode[0] == 'r' && i < g_nfiles; i++)
    if (!strcmp(path, g_file[i].path))
      return g_file[i].size
                 ? fmemopen((void *)g_file[i].data, g_file[i].size, mode)
                 : __real_fopen("/dev/null", mode);
  return __real_fopen(path, mode);
}

FILE *__wrap_fopen64(const char *path, const char *mode) {
  return __wrap_fopen(path, mode);
}

/* Registers data as the file g_dir/name (slot: 0..2, the slots after it
 * are dropped); returns its path. */
static const char *put(int slot, const char *name, const uint8_t *data,
                       size_t size) {
  snprintf(g_file[slot].path, sizeof g_file[slot].path, "%s/%s", g_dir, name);
  g_file[slot].data = data;
  g_file[slot].size = size;
  g_nfiles = slot + 1;
  return g_file[slot].path;
}
#endif

/* The scratch folder (empty: the inputs are in memory) goes at exit. */
static void cleanup(void) { rmdir(g_dir); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  snprintf(g_dir, sizeof g_dir, "/tmp/cmodes-fuzz-XXXXXX");
  if (!mkdtemp(g_dir))
    abort();
  atexit(cleanup);
  return 0;
}

#if FUZZ_READER == 6
/* The scene an import built: it validates, and it writes back. */
static void import_check(cm_context_t *ctx, int st, cm_scene_t *s) {
  if (st || !s)
    return;
  cm_context_t vc;
  cm_context_init(&vc);
  if (cm_scene_validate(&vc, s))
    abort(); /* an import's scene that the analysis would refuse */
  char *text = cm_scene_to_json(ctx, s);
  free(text);
}
#endif

#if FUZZ_READER == 1 || FUZZ_READER == 2
static void scene_check(cm_context_t *ctx, cm_scene_t *s) {
  int st = cm_scene_validate(ctx, s);
  status_check(ctx, st);
  char *text = cm_scene_to_json(ctx, s);
  free(text);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = 1;
  int st;
#if FUZZ_READER == 1
  cm_scene_t *s = NULL;
  st = cm_scene_parse_json(&ctx, (const char *)data, size, "fuzz", &s);
  if (!st)
    scene_check(&ctx, s);
  cm_scene_destroy(&s);
#elif FUZZ_READER == 2
  cm_scene_t *s = NULL;
  st = cm__scene_parse_binary(&ctx, (const char *)data, size, "fuzz", &s);
  if (!st)
    scene_check(&ctx, s);
  cm_scene_destroy(&s);
#elif FUZZ_READER == 3
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  cm_dump_t *d = NULL;
  st = cm_dump_read(&ctx, put(0, "fuzz.dump", data, size), &o, &d);
  cm_dump_destroy(&d);
#elif FUZZ_READER == 4
  cm_lammps_deck_t *d = NULL;
  st = cm_lammps_deck_read(&ctx, put(0, "in.fuzz", data, size), &d);
  cm_lammps_deck_destroy(&d);
#elif FUZZ_READER == 5
  const char *sep = "\n%%----\n", *p = (const char *)data;
  const char *end = p + size, *path[3];
  const char *names[3] = {"M.mtx", "J.mtx", "k.mtx"};
  for (int i = 0; i < 3; i++) {
    const char *q = memmem(p, (size_t)(end - p), sep, strlen(sep));
    size_t n = q ? (size_t)(q - p) + 1 : (size_t)(end - p);
    path[i] = put(i, names[i], (const uint8_t *)p, n);
    if (q)
      p = q + strlen(sep);
  }
  cm_system_t *sys = NULL;
  st = cm_system_read_matrices(&ctx, path[0], path[1], path[2], &sys);
  cm_system_destroy(&sys);
#elif FUZZ_READER == 6
  const char *sep = "\n%%----\n", *p = (const char *)data;
  const char *q = memmem(p, size, sep, strlen(sep));
  cm_scene_t *s = NULL;
  if (q) { /* a deck, then a dump */
    const char *deck = put(0, "in.fuzz", data, (size_t)(q - p) + 1);
    const char *rest = q + strlen(sep);
    const char *dump =
        put(1, "fuzz.dump", (const uint8_t *)rest, (size_t)(p + size - rest));
    st = cm_import_lammps(&ctx, deck, dump, NULL, &s);
    import_check(&ctx, st, s);
    cm_scene_destroy(&s);
  } else { /* a dump alone: linear springs, a density, each periodic mode */
    const char *dump = put(0, "fuzz.dump", data, size);
    st = CM_OK;
    for (int mode = 0; mode < 2 && (st == CM_OK || mode == 0); mode++) {
      cm_dump_options_t o;
      cm_dump_options_init(&o);
      o.k = 1e5, o.density = 2500, o.radius = 0.01, o.touch_tol = 1e-4;
      o.periodic = CM_DUMP_PERIODIC_IMAGE; /* mode 0: minimum images */
      o.periodic_ignore = mode;            /* mode 1: dropped */
      cm_context_clear(&ctx);
      st = cm_import_dump(&ctx, dump, &o, &s);
      import_check(&ctx, st, s);
      cm_scene_destroy(&s);
      status_check(&ctx, st);
    }
  }
#elif FUZZ_READER == 7
  static FILE *sink;
  if (!sink && !(sink = fopen("/dev/null", "w")))
    abort();
  st = cm__report_track_html(&ctx, sink, (const char *)data, size, "fuzz");
#else
#error "FUZZ_READER must be 1..7"
#endif
  status_check(&ctx, st);
  return 0;
}
