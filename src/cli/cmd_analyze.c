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
  fprintf(f,
    "usage: cmodes analyze [options] SCENE      (SCENE may be - for stdin)\n"
    "       cmodes analyze [options] --matrices MANIFEST | M.mtx J.mtx k.mtx\n"
    "\n"
    "Coupled normal-contact modes of a frozen contact scene and the stable\n"
    "time step they allow.\n\n"
    "  -k, --modes K           top modes to report (default 6)\n"
    "      --tol T             Lanczos relative residual tolerance (1e-10)\n"
    "      --method M          auto | lanczos | arpack | dense (default auto:\n"
    "                          dense for small components, else lanczos)\n"
    "      --ncv N             Lanczos basis size (default 48, fewer if they do\n"
    "                          not fit in 768 MiB; ARPACK max(2K+1, 20))\n"
    "      --max-iter N        Lanczos restarts budget (default 3000)\n"
    "      --max-seconds S     eigen-solve time budget (default none)\n"
    "      --dense-max N       auto: components up to N solved densely (400)\n"
    "      --chebyshev D       Lanczos on a degree-D Chebyshev filter of S\n"
    "                          (experimental; default off)\n"
    "      --threads N         OpenMP threads (default: all)\n"
    "      --damping-ratio Z   modal damping for central difference (0)\n"
    "      --newmark-gamma G   Newmark gamma (0.5)\n"
    "      --newmark-beta B    Newmark beta (0.25)\n"
    "      --freq-tol E        accuracy-step frequency error (0.01)\n"
    "      --failure-probability P  of the probabilistic upper bound, in\n"
    "                          (0, 0.01] (1e-9)\n"
    "      --json              print the report as JSON\n"
    "      --no-timings        omit timings from the JSON (for diffs)\n"
    "      --matrices          read Matrix Market M, J, k (or a manifest)\n"
    "  -h, --help              this help\n"
    "\nexit codes: 0 ok, 2 usage, 3 invalid input, 4 numerical failure,\n"
    "            5 not converged (partial report printed), 1 other\n");
}

static int cm__fail(const cm_context_t *ctx, int st) {
  fprintf(stderr, "cmodes analyze: %s: %s\n", cm_status_message(st),
          ctx->message[0] ? ctx->message : cm_status_message(st));
  return cm_status_exit(st);
}

int cm__cmd_analyze(int argc, char **argv) {
  enum { O_TOL = 256, O_METHOD, O_NCV, O_MAXIT, O_MAXS, O_DMAX, O_THREADS,
         O_DAMP, O_GAMMA, O_BETA, O_FTOL, O_JSON, O_NOTIME, O_MATRICES,
         O_CHEB, O_FAILP };
  static const struct option longopts[] = {
      {"modes", required_argument, 0, 'k'},
      {"tol", required_argument, 0, O_TOL},
      {"method", required_argument, 0, O_METHOD},
      {"ncv", required_argument, 0, O_NCV},
      {"max-iter", required_argument, 0, O_MAXIT},
      {"max-seconds", required_argument, 0, O_MAXS},
      {"dense-max", required_argument, 0, O_DMAX},
      {"threads", required_argument, 0, O_THREADS},
      {"damping-ratio", required_argument, 0, O_DAMP},
      {"newmark-gamma", required_argument, 0, O_GAMMA},
      {"newmark-beta", required_argument, 0, O_BETA},
      {"freq-tol", required_argument, 0, O_FTOL},
      {"json", no_argument, 0, O_JSON},
      {"no-timings", no_argument, 0, O_NOTIME},
      {"matrices", no_argument, 0, O_MATRICES},
      {"chebyshev", required_argument, 0, O_CHEB},
      {"failure-probability", required_argument, 0, O_FAILP},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  cm_options_t opts;
  cm_options_init(&opts);
  cm_context_t ctx;
  cm_context_init(&ctx);
  int json = 0, notime = 0, matrices = 0, ok = 1, c;
  optind = 1;
  while (ok && (c = getopt_long(argc, argv, "k:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'k': ok = cm__arg_int("analyze", "--modes", optarg, &opts.modes); break;
    case O_TOL: ok = cm__arg_num("analyze", "--tol", optarg, &opts.tol); break;
    case O_METHOD:
      if ((opts.method = cm__method_parse(optarg)) < 0) {
        fprintf(stderr, "cmodes analyze: --method: '%s' is not "
                        CM__METHOD_NAMES "\n", optarg);
        ok = 0;
      }
      break;
    case O_NCV: ok = cm__arg_int("analyze", "--ncv", optarg, &opts.ncv); break;
    case O_MAXIT: ok = cm__arg_int("analyze", "--max-iter", optarg, &opts.max_iter); break;
    case O_MAXS: ok = cm__arg_num("analyze", "--max-seconds", optarg, &opts.max_seconds); break;
    case O_DMAX: ok = cm__arg_int("analyze", "--dense-max", optarg, &opts.dense_max); break;
    case O_THREADS: ok = cm__arg_int("analyze", "--threads", optarg, &ctx.threads); break;
    case O_DAMP: ok = cm__arg_num("analyze", "--damping-ratio", optarg, &opts.damping_ratio); break;
    case O_GAMMA: ok = cm__arg_num("analyze", "--newmark-gamma", optarg, &opts.newmark_gamma); break;
    case O_BETA: ok = cm__arg_num("analyze", "--newmark-beta", optarg, &opts.newmark_beta); break;
    case O_FTOL: ok = cm__arg_num("analyze", "--freq-tol", optarg, &opts.freq_tol); break;
    case O_JSON: json = 1; break;
    case O_NOTIME: notime = 1; break;
    case O_MATRICES: matrices = 1; break;
    case O_CHEB: ok = cm__arg_int("analyze", "--chebyshev", optarg, &opts.chebyshev); break;
    case O_FAILP: ok = cm__arg_num("analyze", "--failure-probability", optarg, &opts.failure_probability); break;
    case 'h': cm__analyze_usage(stdout); return 0;
    default: ok = 0;
    }
  }
  int nargs = argc - optind;
  if (ok && ((!matrices && nargs != 1) ||
             (matrices && nargs != 1 && nargs != 3))) {
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
  double t0 = cm__now();
  cm_scene_t *scene = NULL;
  cm_system_t *sys = NULL;
  int st;
  if (matrices) {
    st = nargs == 3 ? cm_system_read_matrices(&ctx, argv[optind],
                                              argv[optind + 1],
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
  st = matrices ? cm_analyze_system(&ctx, sys, NULL, &opts, &rep)
                : cm_analyze(&ctx, scene, &opts, &rep);
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
