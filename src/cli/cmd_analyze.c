/* cmd_analyze.c: `cmodes analyze [options] SCENE`: the report of one scene
 * (or of matrices with --matrices). Not for scene generation or conversion. */
#include "args.h"
#include "cli.h"
#include "cmodes.h"
#include "internal.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void cm__analyze_usage(FILE *f) {
  fprintf(
      f,
      "usage: cmodes analyze [options] SCENE      (SCENE may be - for stdin)\n"
      "       cmodes analyze [options] --matrices MANIFEST | M.mtx J.mtx "
      "k.mtx\n"
      "\n"
      "Coupled normal-contact modes of a frozen contact scene and the stable\n"
      "time step they allow.\n\n"
      "analysis options (the same names, with _ for -, on the server):\n");
  cm__opt_usage(f, NULL);
  fprintf(
      f,
      "other options:\n"
      "      --threads N         OpenMP threads (default: all)\n"
      "      --json              print the report as JSON\n"
      "      --no-timings        omit timings from the JSON (for diffs)\n"
      "      --matrices          read Matrix Market M, J, k (or a manifest)\n"
      "      --vectors FILE      also write the mode shapes (z, xi, phi) as "
      "JSON\n"
      "  -h, --help              this help\n"
      "\nexit codes: 0 ok, 2 usage, 3 invalid input, 4 numerical failure,\n"
      "            5 not converged (partial report printed), 1 other\n");
}

static int cm__fail(const cm_context_t *ctx, int st) {
  fprintf(stderr, "cmodes analyze: %s: %s\n", cm_status_message(st),
          ctx->message[0] ? ctx->message : cm_status_message(st));
  return cm_status_exit(st);
}

/* Freed analysis buffers kept for the next solve of the run (bytes), where
 * the heap is not ours (cm__cli_heap): one analysis, but its solves follow
 * each other (the search for missed copies after the solve, component
 * after component), and each takes the last one's basis instead of fresh
 * pages (cm_workspace_keep); what is kept goes with the process. */
#define CM__CLI_KEEP ((size_t)1 << 30)

int cm__cmd_analyze(int argc, char **argv) {
  enum { O_THREADS = 256, O_JSON, O_NOTIME, O_MATRICES, O_VECTORS };
  static const struct option own[] = {
      {"threads", required_argument, 0, O_THREADS},
      {"json", no_argument, 0, O_JSON},
      {"no-timings", no_argument, 0, O_NOTIME},
      {"matrices", no_argument, 0, O_MATRICES},
      {"vectors", required_argument, 0, O_VECTORS},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  struct option longopts[64];
  cm__opt_longopts(longopts, 64, own, NULL);
  cm_options_t opts;
  cm_options_init(&opts);
  cm_context_t ctx;
  cm_context_init(&ctx);
  int json = 0, notime = 0, matrices = 0, ok = 1, c;
  const char *vectors = NULL;
  optind = 1;
  while (ok && (c = getopt_long(argc, argv, "k:h", longopts, NULL)) != -1) {
    switch (c) {
    case O_THREADS:
      ok = cm__arg_threads("analyze", optarg, &ctx.threads);
      break;
    case O_JSON:
      json = 1;
      break;
    case O_NOTIME:
      notime = 1;
      break;
    case O_MATRICES:
      matrices = 1;
      break;
    case O_VECTORS:
      vectors = optarg;
      break;
    case 'h':
      cm__analyze_usage(stdout);
      return 0;
    default:
      ok = cm__opt_parse("analyze", c, optarg, NULL, &opts) > 0;
    }
  }
  int nargs = argc - optind;
  if (ok &&
      ((!matrices && nargs != 1) || (matrices && nargs != 1 && nargs != 3))) {
    fprintf(stderr, "cmodes analyze: expected %s\n",
            matrices ? "a manifest or three Matrix Market files (M J k)"
                     : "one scene file (or - for standard input)");
    ok = 0;
  }
  if (!ok) {
    fprintf(stderr, "try 'cmodes analyze --help'\n");
    return cm_status_exit(CM_USAGE);
  }
  /* ---- read ---- */
  int heap = cm__cli_heap();
  double t0 = cm__now();
  cm_scene_t *scene = NULL;
  cm_system_t *sys = NULL;
  int st;
  if (matrices) {
    st = nargs == 3
             ? cm_system_read_matrices(&ctx, argv[optind], argv[optind + 1],
                                       argv[optind + 2], &sys)
             : cm_system_read_manifest(&ctx, argv[optind], &sys);
  } else {
    st = cm_scene_read_file(&ctx, argv[optind], &scene);
  }
  if (st)
    return cm__fail(&ctx, st);
  double t_parse = cm__now() - t0;
  /* ---- analyse ---- */
  cm_report_t *rep = NULL;
  if (!heap) /* glibc's defaults: freed buffers kept by the library */
    cm_workspace_keep(CM__CLI_KEEP);
  cm_vectors_t *vec = NULL;
  if (!sys) /* cm_analyze's steps (the reader checked the scene) */
    st = cm__system_assemble_checked(&ctx, scene, &sys);
  if (!st && vectors)
    st = cm_analyze_vectors(&ctx, sys, scene, &opts, &rep, &vec);
  else if (!st) { /* the report reads only the scene's names from here */
    cm__scene_release_records(scene, sys);
    st = cm_analyze_system(&ctx, sys, scene, &opts, &rep);
  }
  if (st >= 0 && vec) {
    int vst = cm__write_vectors_json(vectors, rep, vec, sys, scene);
    cm_vectors_destroy(&vec);
    if (vst) {
      cm_report_destroy(&rep);
      st = vst == CM_IO ? CM__ERR(&ctx, CM_IO, vectors,
                                  "%s: cannot write the mode shapes", vectors)
                        : CM__ERR(&ctx, CM_NOMEM, NULL, "out of memory");
    }
  }
  if (st < 0) {
    cm_scene_destroy(&scene);
    cm_system_destroy(&sys);
    return cm__fail(&ctx, st);
  }
  rep->t_parse = t_parse;
  /* ---- print ---- */
  if (json) {
    char *text = cm_report_to_json(rep, CM_JSON_INDENT |
                                            (notime ? CM_JSON_NO_TIMINGS : 0));
    if (text)
      printf("%s\n", text);
    else
      st = CM_NOMEM;
    free(text);
  } else {
    cm_report_write_text(rep, stdout);
  }
  if (st == CM_NOT_CONVERGED)
    fprintf(stderr, "cmodes analyze: warning: %s\n", ctx.message);
  cm_report_destroy(&rep);
  cm_scene_destroy(&scene);
  cm_system_destroy(&sys);
  return cm_status_exit(st);
}
