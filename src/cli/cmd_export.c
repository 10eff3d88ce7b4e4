/* cmd_export.c: `cmodes export SCENE --matrices DIR`: assembles a scene and
 * writes its M, J, k (and B = K^1/2 J L^-T, optionally S) as Matrix Market
 * files with the row/column maps and a manifest. Not for other formats. */
#include "args.h"
#include "cli.h"
#include "cmodes.h"
#include "internal.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void cm__export_usage(FILE *f) {
  fprintf(
      f,
      "usage: cmodes export SCENE --matrices DIR [options]\n"
      "\n"
      "Assembles SCENE (JSON, '-' = stdin) and writes, all numbers in %%.17g:\n"
      "  DIR/M.mtx       mass matrix, symmetric (lower triangle), n x n\n"
      "  DIR/J.mtx       contact Jacobian, nc x n (gaps xi = J q)\n"
      "  DIR/k.mtx       penalty stiffness of each row, nc x 1 (array)\n"
      "  DIR/B.mtx       B = K^1/2 J L^-T, M = L L^T: S = B B^T (unless "
      "--no-B)\n"
      "  DIR/S.mtx       S = B B^T, symmetric (only with --S)\n"
      "  DIR/rows.txt    row -> scene contact, component, bodies a b\n"
      "  DIR/cols.txt    column -> scene body, dof, component\n"
      "  DIR/manifest.json  names the files: cmodes analyze --matrices "
      "DIR/manifest.json\n"
      "Rows and columns are in component order (not scene order): see the "
      "maps.\n"
      "\n"
      "  --matrices DIR    output folder (created if missing)\n"
      "  --no-B            do not write B.mtx\n"
      "  --S               also write S.mtx\n"
      "  --threads N       threads for the assembly\n"
      "  -h, --help        this help\n");
}

int cm__cmd_export(int argc, char **argv) {
  enum { O_MATRICES = 256, O_NOB, O_S, O_THREADS };
  static const struct option longopts[] = {
      {"matrices", required_argument, 0, O_MATRICES},
      {"no-B", no_argument, 0, O_NOB},
      {"S", no_argument, 0, O_S},
      {"threads", required_argument, 0, O_THREADS},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  cm_context_t ctx;
  cm_context_init(&ctx);
  const char *dir = NULL;
  int flags = CM_MTX_WRITE_B, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (c) {
    case O_MATRICES:
      dir = optarg;
      break;
    case O_NOB:
      flags &= ~CM_MTX_WRITE_B;
      break;
    case O_S:
      flags |= CM_MTX_WRITE_S;
      break;
    case O_THREADS:
      if (!cm__arg_threads("export", optarg, &ctx.threads))
        return cm_status_exit(CM_USAGE);
      break;
    case 'h':
      cm__export_usage(stdout);
      return 0;
    default:
      cm__export_usage(stderr);
      return cm_status_exit(CM_USAGE);
    }
  }
  if (optind + 1 != argc || !dir) {
    fprintf(stderr, "cmodes export: expected one SCENE and --matrices DIR\n\n");
    cm__export_usage(stderr);
    return cm_status_exit(CM_USAGE);
  }
  const char *scene_path = argv[optind];
  if (mkdir(dir, 0777) && errno != EEXIST) {
    fprintf(stderr, "cmodes export: cannot create %s: %s\n", dir,
            strerror(errno));
    return cm_status_exit(CM_IO);
  }
  cm_scene_t *s = NULL;
  cm_system_t *sys = NULL;
  int st = cm_scene_read_file(&ctx, scene_path, &s);
  if (!st)
    st = cm_system_assemble(&ctx, s, &sys);
  if (!st)
    st = cm__system_write_matrices_named(&ctx, sys, s, dir, flags, scene_path);
  if (st) {
    fprintf(stderr, "cmodes export: %s\n", ctx.message);
  } else {
    fprintf(stderr,
            "cmodes export: %s -> %s: M %d x %d, J %d x %d (%d nonzeros), "
            "%d components%s%s\n",
            scene_path, dir, sys->n, sys->n, sys->nc, sys->n, sys->Jp[sys->nc],
            sys->ncomp, flags & CM_MTX_WRITE_B ? ", B" : "",
            flags & CM_MTX_WRITE_S ? ", S" : "");
  }
  cm_system_destroy(&sys);
  cm_scene_destroy(&s);
  return cm_status_exit(st);
}
