/* cmd_compare.c: `cmodes compare SCENE`: the sparse path (the pipeline of
 * `cmodes analyze`, run once through the analysis object cm_analysis_*)
 * and dense LAPACK (dsyevr top-k, dsyevd all) on the explicitly formed S of
 * the same system, with their times and agreement. For users who benchmark
 * against dense solvers. Not a benchmark harness (bench/ is). */
#include "args.h"
#include "cli.h"
#include "cmodes.h"
#include "internal.h"

#include <getopt.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The analysis options compare takes (the sparse run's). */
static const char *const cm__compare_opts[] = {
    "modes", "tol", "method", "ncv", "max_iter", "max_seconds", NULL};

static void cm__compare_usage(FILE *f) {
  fprintf(
      f,
      "usage: cmodes compare [options] SCENE\n\n"
      "Top modes by the sparse path (Lanczos on B = K^1/2 J L^-T) and by "
      "dense\n"
      "LAPACK on S = B B^T formed explicitly; prints times and agreement.\n\n"
      "analysis options of the sparse run (modes at most 64; method lanczos,\n"
      "the default here, or arpack):\n");
  cm__opt_usage(f, cm__compare_opts);
  fprintf(f, "other options:\n"
             "      --threads N         threads for both paths (default: all)\n"
             "      --max-dense N       refuse the dense path above N contacts "
             "(12000)\n"
             "      --no-dsyevd         skip the all-eigenvalue dsyevd run\n"
             "      --json              machine-readable output\n"
             "  -h, --help              this help\n");
}

typedef struct {
  const char *name; /* method */
  double seconds;   /* wall time of the eigen-solve only */
  int k;            /* values found */
  double omega[64]; /* descending */
} cm__run_t;

static int cm__dense_run(double *S, int nc, int k, int all, cm__run_t *run) {
  k = k < nc ? k : nc; /* a scene with fewer contacts than modes */
  double *A = malloc(sizeof(double) * (size_t)nc * (size_t)nc);
  double *w = malloc(sizeof(double) * (size_t)nc);
  double *Z = all ? NULL : malloc(sizeof(double) * (size_t)nc * (size_t)k);
  int *isuppz = malloc(sizeof(int) * 2 * (size_t)(k + 1));
  if (!A || !w || (!all && !Z) || !isuppz) {
    free(A), free(w), free(Z), free(isuppz);
    return CM_NOMEM;
  }
  memcpy(A, S, sizeof(double) * (size_t)nc * (size_t)nc);
  double t0 = cm__now();
  int found = 0, info;
  if (all) {
    info = LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'N', 'U', nc, A, nc, w);
    found = nc;
  } else {
    info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'I', 'U', nc, A, nc, 0, 0,
                          nc - k + 1, nc, 0.0, &found, w, Z, nc, isuppz);
  }
  run->seconds = cm__now() - t0;
  run->k = k < found ? k : found;
  for (int i = 0; i < run->k; i++)
    run->omega[i] = sqrt(fmax(0, w[found - 1 - i]));
  free(A), free(w), free(Z), free(isuppz);
  return info ? CM_NUMERIC : CM_OK;
}

/* The command line of compare. */
typedef struct {
  cm_options_t opts;
  int threads, max_dense, no_evd, json;
} cm__cargs_t;

/* Parses the command line: 0, 1 after --help, or a usage error (exit
 * status) after its message. */
static int cm__compare_args(int argc, char **argv, cm__cargs_t *a) {
  static const struct option own[] = {{"threads", required_argument, 0, 'T'},
                                      {"max-dense", required_argument, 0, 'D'},
                                      {"no-dsyevd", no_argument, 0, 'N'},
                                      {"json", no_argument, 0, 'j'},
                                      {"help", no_argument, 0, 'h'},
                                      {0, 0, 0, 0}};
  struct option longopts[32];
  cm__opt_longopts(longopts, 32, own, cm__compare_opts);
  int c, ok = 1;
  optind = 1;
  while (ok && (c = getopt_long(argc, argv, "k:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'T':
      ok = cm__arg_threads("compare", optarg, &a->threads);
      break;
    case 'D':
      ok = cm__arg_int("compare", "--max-dense", optarg, &a->max_dense);
      break;
    case 'N':
      a->no_evd = 1;
      break;
    case 'j':
      a->json = 1;
      break;
    case 'h':
      cm__compare_usage(stdout);
      return 1;
    default:
      ok = cm__opt_parse("compare", c, optarg, cm__compare_opts, &a->opts) > 0;
    }
  }
  if (ok && a->opts.method != CM_METHOD_LANCZOS &&
      a->opts.method != CM_METHOD_ARPACK) {
    fprintf(stderr,
            "cmodes compare: --method: '%s' is not lanczos or "
            "arpack\n",
            cm__method_name(a->opts.method));
    ok = 0;
  }
  if (!ok) {
    fprintf(stderr, "try 'cmodes compare --help'\n");
    return cm_status_exit(CM_USAGE);
  }
  if (optind != argc - 1 || a->opts.modes < 1 || a->opts.modes > 64 ||
      !(a->opts.tol > 0)) {
    fprintf(stderr, "cmodes compare: expected one scene, 1 <= modes <= 64 "
                    "and tol > 0; try --help\n");
    return cm_status_exit(CM_USAGE);
  }
  return 0;
}

/* Largest relative difference of run r's frequencies to dsyevr's. */
static double cm__compare_diff(const cm__run_t *runs, int r) {
  double dmax = 0;
  for (int i = 0; i < runs[r].k && i < runs[1].k; i++)
    dmax = fmax(dmax,
                fabs(runs[r].omega[i] - runs[1].omega[i]) / runs[1].omega[i]);
  return dmax;
}

static void cm__compare_json(const cm_system_t *sys, double t_setup,
                             double t_form, const cm__run_t *runs, int nruns,
                             const cm_report_t *rep) {
  printf("{\"contacts\": %d, \"dofs\": %d, \"setup_s\": %.6g, "
         "\"form_dense_s\": %.6g, \"runs\": [",
         sys->nc, sys->n, t_setup, t_form);
  for (int r = 0; r < nruns; r++) {
    printf("%s{\"method\": \"%s\", \"seconds\": %.6g, \"max_rel_diff_"
           "vs_dsyevr\": %.3g, \"omega\": [",
           r ? ", " : "", runs[r].name, runs[r].seconds,
           cm__compare_diff(runs, r));
    for (int i = 0; i < runs[r].k; i++)
      printf("%s%.17g", i ? ", " : "", runs[r].omega[i]);
    printf("]}");
  }
  printf("], \"matvecs\": %d}\n", rep->matvecs);
}

static void cm__compare_text(const char *path, const cm_system_t *sys,
                             double t_setup, double t_form,
                             const cm__run_t *runs, int nruns,
                             const cm_report_t *rep) {
  printf("scene %s: %d contacts, %d active dofs\n", path, sys->nc, sys->n);
  printf("setup (assemble, factor, operator) %.4g s; forming dense S "
         "%.4g s\n\n",
         t_setup, t_form);
  printf("| method | eigen time (s) | speed-up vs dsyevr | max rel diff "
         "vs dsyevr |\n|---|---|---|---|\n");
  for (int r = 0; r < nruns; r++)
    printf("| %s | %.4g | %.1f | %.2e |\n", runs[r].name, runs[r].seconds,
           runs[1].seconds / runs[r].seconds, cm__compare_diff(runs, r));
  printf("\n| mode | %s | dsyevr |\n|---|---|---|\n", runs[0].name);
  for (int i = 0; i < runs[0].k; i++)
    printf("| %d | %.12g | %.12g |\n", i + 1, runs[0].omega[i],
           i < runs[1].k ? runs[1].omega[i] : NAN);
  printf("\n%s: %d matvecs, %d restarts, ncv %d\n", runs[0].name, rep->matvecs,
         rep->iterations, rep->ncv);
}

/* The dense runs on S = B B^T of sys, formed explicitly from an operator of
 * its own (the analysis keeps none): dsyevr, then dsyevd unless no_evd;
 * *nruns counts the runs done (the sparse one is runs[0]). *t_form: the
 * forming of S alone. */
static int cm__compare_dense(cm_context_t *ctx, const cm_system_t *sys,
                             const cm__cargs_t *a, cm__run_t *runs, int *nruns,
                             double *t_form) {
  cm_operator_t *op = NULL;
  int st = cm_operator_create(ctx, sys, &op);
  double *S = NULL;
  if (!st) {
    double t1 = cm__now();
    S = cm_operator_dense_S(ctx, op);
    *t_form = cm__now() - t1;
    st = S ? CM_OK : ctx->status ? ctx->status : CM_NOMEM;
  }
  cm_operator_destroy(&op);
  cm__blas_threads(ctx->threads > 0 ? ctx->threads : 2);
  if (!st) {
    runs[1].name = "dsyevr";
    st = cm__dense_run(S, sys->nc, a->opts.modes, 0, &runs[1]);
    *nruns = 2;
  }
  if (!st && !a->no_evd) {
    runs[2].name = "dsyevd";
    st = cm__dense_run(S, sys->nc, a->opts.modes, 1, &runs[2]);
    *nruns = 3;
  }
  free(S);
  return st;
}

/* The sparse run: the pipeline of `cmodes analyze` through the analysis
 * object, with compare's options (components solved one by one, as
 * analyze does). A partial result (CM_NOT_CONVERGED) is compared as it is.
 * Refuses a scene above --max-dense before solving. */
static int cm__compare_sparse(cm_context_t *ctx, const cm__cargs_t *a,
                              const cm_scene_t *scene, cm_analysis_t **an,
                              cm__run_t *run) {
  int st = cm_analysis_create(ctx, scene, NULL, &a->opts, an); /* assembles */
  const cm_system_t *sys = st ? NULL : cm_analysis_system(*an);
  if (!st && sys->nc > a->max_dense)
    return CM__ERR(ctx, CM_LIMIT, NULL,
                   "%d contacts: the dense S would need %.3g GB; raise "
                   "--max-dense to force it",
                   sys->nc, 8e-9 * sys->nc * (double)sys->nc);
  if (!st && sys->nc == 0)
    return CM__ERR(ctx, CM_INVALID_SCENE, NULL,
                   "the scene has no contacts: S is empty and there are no "
                   "modes to compare");
  if (!st)
    st = cm_analysis_solve(ctx, *an, 0);
  if (st == CM_NOT_CONVERGED)
    st = CM_OK;
  if (st)
    return st;
  const cm_report_t *rep = cm_analysis_report(*an);
  run->name = rep->method;
  run->seconds = rep->t_eigen;
  run->k = rep->nmodes < a->opts.modes ? rep->nmodes : a->opts.modes;
  for (int i = 0; i < run->k; i++)
    run->omega[i] = rep->modes[i].omega;
  return CM_OK;
}

int cm__cmd_compare(int argc, char **argv) {
  cm__cargs_t a;
  memset(&a, 0, sizeof a);
  cm_options_init(&a.opts);
  a.opts.method = CM_METHOD_LANCZOS; /* compare's default */
  a.max_dense = 12000;
  int code = cm__compare_args(argc, argv, &a);
  if (code)
    return code == 1 ? 0 : code;
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = a.threads;
  cm_scene_t *scene = NULL;
  cm_analysis_t *an = NULL;
  cm__run_t runs[3];
  memset(runs, 0, sizeof runs);
  int nruns = 0;
  double t_form = 0;
  int st = cm_scene_read_file(&ctx, argv[optind], &scene);
  if (!st)
    st = cm__compare_sparse(&ctx, &a, scene, &an, &runs[0]);
  const cm_system_t *sys = an ? cm_analysis_system(an) : NULL;
  const cm_report_t *rep = an ? cm_analysis_report(an) : NULL;
  if (!st) { /* the dense path: the same system, S formed explicitly */
    nruns = 1;
    st = cm__compare_dense(&ctx, sys, &a, runs, &nruns, &t_form);
  }
  if (!st) {
    double t_setup = rep->t_assemble + rep->t_factor + rep->t_operator;
    if (a.json)
      cm__compare_json(sys, t_setup, t_form, runs, nruns, rep);
    else
      cm__compare_text(argv[optind], sys, t_setup, t_form, runs, nruns, rep);
  } else {
    fprintf(stderr, "cmodes compare: %s\n",
            ctx.message[0] ? ctx.message : cm_status_message(st));
  }
  cm_analysis_destroy(&an);
  cm_scene_destroy(&scene);
  return cm_status_exit(st);
}
