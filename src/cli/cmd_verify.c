/* cmd_verify.c: `cmodes verify SCENE [options]`: checks the predictions of
 * `cmodes analyze` by simulation (docs/verification.md), and optionally
 * writes an SVG plot of the linear model's energy below and above the
 * bisected stable step. Not for the simulation itself (src/verify/). */
#include "analyze/options_table.h"
#include "args.h"
#include "cli.h"
#include "cmodes.h"
#include "internal.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The analysis options verify passes to its prediction (modes and tol are
 * verify's own: the modes perturbed and the agreement tolerance). */
static const char *const cm__verify_opts[] = {
    "method", "ncv", "max_iter", "max_seconds", "dense_max", "chebyshev", NULL};

static void cm__verify_usage(FILE *f) {
  fprintf(
      f,
      "usage: cmodes verify SCENE [options]      (SCENE may be - for stdin)\n"
      "\n"
      "Checks the predicted contact modes and stable steps by simulation:\n"
      "preloads the supports, perturbs the equilibrium along predicted modes,\n"
      "integrates (central difference, RK4) in the linear, unilateral and\n"
      "nonlinear models, measures the frequencies from the gaps and bisects\n"
      "the step at which the linear model's energy grows without bound.\n"
      "The scene's tangential springs and dashpots are simulated too\n"
      "(central difference takes the dashpots from the half-step velocity,\n"
      "as LAMMPS does, and is compared with the damped limit).\n\n"
      "preload (one of them; not needed with --stability-only):\n"
      "  -g, --gravity GX,GY[,GZ]   static equilibrium under gravity, m/s^2\n"
      "      --preload F            the same compressive force F (N) on every\n"
      "                             contact, balanced by constant loads\n"
      "      --preload-file FILE    one force (N) per contact, scene order\n"
      "      --unloaded-bilateral   keep contacts without load as bilateral\n"
      "                             joints (never open) instead of an error\n"
      "perturbation and runs:\n"
      "  -k, --modes K              perturb the top K modes (default 2)\n"
      "  -m, --mode I               only mode I (1 = highest frequency)\n"
      "      --direction V1,V2,...  a user direction over the dofs of the\n"
      "                             moving bodies (3 or 6 each, scene order)\n"
      "  -a, --amplitudes A,...     gap amplitude as a fraction of the\n"
      "                             smallest overlap (0.01,0.1,0.5,1.5)\n"
      "  -s, --steps S,...          fractions of each integrator's predicted\n"
      "                             critical step (0.05,0.2,0.5)\n"
      "      --models M,...         linear,unilateral,nonlinear,full\n"
      "                             (default linear,unilateral,nonlinear)\n"
      "      --integrators I,...    cd,rk4 (default both)\n"
      "      --periods P            periods simulated per run (40)\n"
      "      --tol E                relative error counted as agreement "
      "(1e-4)\n"
      "stability:\n"
      "      --bisect-steps N       steps per stability trial (5000)\n"
      "      --bisect-tol E         relative width of the bisection (1e-4)\n"
      "      --seed S               random start of the trials\n"
      "      --no-stability         skip the bisection\n"
      "      --stability-only       only the bisection (no preload needed)\n"
      "output:\n"
      "      --json                 the result as JSON\n"
      "      --plot FILE.svg        energy against time below and above the\n"
      "                             bisected central-difference limit\n"
      "  -q, --quiet                no progress on stderr\n"
      "      --threads N            OpenMP threads of the analysis\n"
      "  -h, --help                 this help\n"
      "options of the predicting analysis (as for analyze):\n");
  cm__opt_usage(f, cm__verify_opts);
  fprintf(f, "\nexit codes: 0 ok, 2 usage, 3 invalid input (no equilibrium, "
             "tension),\n"
             "            4 numerical failure, 1 other\n");
}

/* Parses "a,b,c" into at most max numbers; returns the count or -1. */
static int cm__list(const char *opt, const char *s, double *v, int max) {
  int n = 0;
  const char *p = s;
  while (*p) {
    char *end;
    double x = strtod(p, &end);
    if (end == p || !isfinite(x) || n >= max || (*end && *end != ',')) {
      fprintf(stderr,
              "cmodes verify: %s: '%s' is not a list of at most %d "
              "numbers separated by commas\n",
              opt, s, max);
      return -1;
    }
    v[n++] = x;
    p = *end ? end + 1 : end;
  }
  if (!n)
    fprintf(stderr, "cmodes verify: %s: empty list\n", opt);
  return n ? n : -1;
}

static int cm__flags(const char *opt, const char *s, const char *const *names,
                     const int *flags, int *out) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  *out = 0;
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    int found = 0;
    for (int i = 0; names[i]; i++)
      if (!strcmp(tok, names[i]))
        *out |= flags[i], found = 1;
    if (!found) {
      fprintf(stderr, "cmodes verify: %s: unknown '%s' (choose from", opt, tok);
      for (int i = 0; names[i]; i++)
        fprintf(stderr, " %s", names[i]);
      fprintf(stderr, ")\n");
      return 0;
    }
  }
  return *out != 0;
}

/* Reads whitespace- or comma-separated numbers; NULL on failure. */
static double *cm__read_numbers(const char *path, int *n) {
  FILE *f = cm__fopen_input(path, "r");
  if (!f) {
    fprintf(stderr, "cmodes verify: --preload-file: cannot open '%s': %s\n",
            path, strerror(errno));
    return NULL;
  }
  int cap = 1024, len = 0, line = 1, ch;
  double *v = malloc((size_t)cap * sizeof *v);
  char tok[128];
  while (v) {
    int tl = 0;
    while ((ch = fgetc(f)) != EOF &&
           (ch == ' ' || ch == '\t' || ch == ',' || ch == '\n' || ch == '\r'))
      line += ch == '\n';
    if (ch == EOF)
      break;
    do
      tok[tl++] = (char)ch;
    while (tl < 127 && (ch = fgetc(f)) != EOF && ch != ' ' && ch != '\t' &&
           ch != ',' && ch != '\n' && ch != '\r');
    if (ch == '\n')
      ungetc(ch, f);
    tok[tl] = 0;
    char *end;
    double x = strtod(tok, &end);
    if (*end || !isfinite(x)) {
      fprintf(stderr, "cmodes verify: %s:%d: '%s' is not a number\n", path,
              line, tok);
      free(v);
      v = NULL;
      break;
    }
    if (len == cap) {
      double *nv = realloc(v, (size_t)(cap *= 2) * sizeof *v);
      if (!nv) {
        free(v);
        v = NULL;
        break;
      }
      v = nv;
    }
    v[len++] = x;
  }
  fclose(f);
  *n = len;
  return v;
}

/* ---- SVG plot of energy traces ---------------------------------------------
 */

static void cm__svg(FILE *f, int ntr, double *const *E, long n, const double *h,
                    const char *const *label) {
  const char *col[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};
  const double W = 760, H = 440, x0 = 80, y0 = 30, pw = 520, ph = 340;
  const double ymin = -2, ymax = 12; /* log10 of E / E0 */
  double tmax = 0;
  for (int t = 0; t < ntr; t++)
    tmax = fmax(tmax, h[t] * (double)n);
  fprintf(f,
          "<svg xmlns='http://www.w3.org/2000/svg' width='%g' height='%g' "
          "font-family='sans-serif' font-size='12'>\n",
          W, H);
  fprintf(f, "<rect width='100%%' height='100%%' fill='white'/>\n");
  fprintf(f,
          "<rect x='%g' y='%g' width='%g' height='%g' fill='none' "
          "stroke='black'/>\n",
          x0, y0, pw, ph);
  for (int e = (int)ymin; e <= (int)ymax; e += 2) {
    double y = y0 + ph * (ymax - e) / (ymax - ymin);
    fprintf(f,
            "<line x1='%g' y1='%g' x2='%g' y2='%g' stroke='#ddd'/>"
            "<text x='%g' y='%g' text-anchor='end'>1e%d</text>\n",
            x0, y, x0 + pw, y, x0 - 6, y + 4, e);
  }
  for (int i = 0; i <= 5; i++) {
    double x = x0 + pw * i / 5.0;
    fprintf(f, "<text x='%g' y='%g' text-anchor='middle'>%.4g</text>\n", x,
            y0 + ph + 16, 1e3 * tmax * i / 5.0);
  }
  fprintf(f,
          "<text x='%g' y='18' text-anchor='middle'>linear-model energy, "
          "central difference, seeded random start (clipped at 1e12)"
          "</text>\n",
          x0 + pw / 2);
  fprintf(f, "<text x='%g' y='%g' text-anchor='middle'>time (ms)</text>\n",
          x0 + pw / 2, y0 + ph + 34);
  fprintf(f,
          "<text x='18' y='%g' transform='rotate(-90 18 %g)' "
          "text-anchor='middle'>energy / initial energy</text>\n",
          y0 + ph / 2, y0 + ph / 2);
  for (int t = 0; t < ntr; t++) {
    fprintf(f,
            "<polyline fill='none' stroke='%s' stroke-width='1.5' "
            "points='",
            col[t % 4]);
    for (long i = 0; i <= n; i++) {
      double e = E[t][i];
      if (!isfinite(e))
        break;
      double ly = log10(fmax(e, 1e-300));
      ly = fmin(fmax(ly, ymin), ymax);
      fprintf(f, "%.1f,%.1f ", x0 + pw * h[t] * (double)i / tmax,
              y0 + ph * (ymax - ly) / (ymax - ymin));
      if (ly >= ymax)
        break;
    }
    fprintf(f,
            "'/>\n<line x1='%g' y1='%g' x2='%g' y2='%g' stroke='%s' "
            "stroke-width='3'/><text x='%g' y='%g'>%s</text>\n",
            x0 + pw + 12, y0 + 20 + 22.0 * t, x0 + pw + 32, y0 + 20 + 22.0 * t,
            col[t % 4], x0 + pw + 38, y0 + 24 + 22.0 * t, label[t]);
  }
  fprintf(f, "</svg>\n");
}

static int cm__plot(cm_context_t *ctx, const cm_scene_t *scene,
                    const cm_verify_options_t *o, const cm_verify_result_t *r,
                    const char *path) {
  const cm_verify_stability_t *s = NULL;
  for (int i = 0; i < r->nstab; i++)
    if (r->stab[i].integrator == CM_VERIFY_CD)
      s = &r->stab[i];
  if (!s) {
    fprintf(stderr, "cmodes verify: --plot needs the central-difference "
                    "bisection (drop --no-stability, keep cd)\n");
    return CM_USAGE;
  }
  long n = 120;
  double h[3] = {0.99 * s->h_bisect_s, 1.01 * s->h_bisect_s, s->h_pc_s};
  char lab[3][96];
  snprintf(lab[0], sizeof lab[0], "h = 0.99 h_limit");
  snprintf(lab[1], sizeof lab[1], "h = 1.01 h_limit");
  snprintf(lab[2], sizeof lab[2], "h per-contact = %.3g h_limit",
           s->h_pc_s / s->h_bisect_s);
  const char *labels[3] = {lab[0], lab[1], lab[2]};
  double *E[3] = {0};
  int st = CM_OK;
  for (int t = 0; t < 3 && !st; t++) {
    E[t] = malloc((size_t)(n + 1) * sizeof(double));
    st = E[t] ? cm_verify_energy_trace(ctx, scene, o, CM_VERIFY_CD, h[t], n,
                                       E[t])
              : CM_NOMEM;
  }
  FILE *f = st ? NULL : fopen(path, "w");
  if (!st && !f) {
    fprintf(stderr, "cmodes verify: --plot: cannot write '%s'\n", path);
    st = CM_IO;
  }
  if (f) {
    cm__svg(f, 3, E, n, h, labels);
    if (ferror(f) |
        (fclose(f) != 0)) { /* a full disk: no half-written plot passes */
      fprintf(stderr, "cmodes verify: --plot: cannot write '%s'\n", path);
      st = CM_IO;
    }
  }
  for (int t = 0; t < 3; t++)
    free(E[t]);
  return st;
}

/* ---- main ------------------------------------------------------------------
 */

static int cm__vfail(const cm_context_t *ctx, int st) {
  fprintf(stderr, "cmodes verify: %s: %s\n", cm_status_message(st),
          ctx->message[0] ? ctx->message : cm_status_message(st));
  return cm_status_exit(st);
}

enum {
  O_PRELOAD = 256,
  O_PFILE,
  O_DIR,
  O_MODELS,
  O_INTEG,
  O_PERIODS,
  O_TOL,
  O_BSTEPS,
  O_BTOL,
  O_SEED,
  O_NOSTAB,
  O_STABONLY,
  O_JSON,
  O_PLOT,
  O_THREADS,
  O_UNLOADED
};

/* The command line of verify. */
typedef struct {
  cm_verify_options_t o;
  int threads, json, ndir;
  const char *plot, *pfile;
  double *dir;
} cm__vargs_t;

/* The options with a number: 1 if arg is valid. */
static int cm__verify_number_opt(int c, const char *arg, cm__vargs_t *a) {
  cm_verify_options_t *o = &a->o;
  double x;
  int ok;
  switch (c) {
  case O_PRELOAD:
    ok = cm__parse_number(arg, &x) && x > 0;
    if (!ok)
      fprintf(stderr,
              "cmodes verify: --preload: '%s' is not a force > 0 "
              "(N)\n",
              arg);
    o->preload_uniform = x;
    return ok;
  case 'k':
  case 'm':
    ok = cm__parse_number(arg, &x) && x >= 1 && x <= 1e6 && x == floor(x);
    if (!ok)
      fprintf(stderr, "cmodes verify: --%s: '%s' is not an integer >= 1\n",
              c == 'k' ? "modes" : "mode", arg);
    if (c == 'k')
      o->nmodes = (int)x;
    else
      o->mode = (int)x;
    return ok;
  case O_PERIODS:
  case O_TOL:
  case O_BTOL:
    ok = cm__parse_number(arg, &x) && x > 0;
    if (!ok)
      fprintf(stderr, "cmodes verify: '%s' is not a number > 0\n", arg);
    if (c == O_PERIODS)
      o->periods = x;
    if (c == O_TOL)
      o->tol = x;
    if (c == O_BTOL)
      o->bisect_tol = x;
    return ok;
  default: /* O_BSTEPS, O_SEED, O_THREADS */
    ok = cm__parse_number(arg, &x) && x >= 0 && x <= 1e12 && x == floor(x);
    if (!ok)
      fprintf(stderr,
              "cmodes verify: '%s' is not a non-negative "
              "integer\n",
              arg);
    if (c == O_BSTEPS)
      o->bisect_steps = (long)x;
    if (c == O_SEED)
      o->seed = (uint64_t)x;
    if (c == O_THREADS && ok)
      ok = cm__arg_threads_ok("verify", x);
    if (c == O_THREADS)
      a->threads = (int)x;
    return ok;
  }
}

/* The options with a list: 1 if arg is valid. */
static int cm__verify_list_opt(int c, const char *arg, cm__vargs_t *a) {
  static const char *const mnames[] = {"linear", "unilateral", "nonlinear",
                                       "full", NULL};
  static const int mflags[] = {CM_VERIFY_LINEAR, CM_VERIFY_UNILATERAL,
                               CM_VERIFY_NONLINEAR, CM_VERIFY_FULL};
  static const char *const inames[] = {"cd", "rk4", NULL};
  static const int iflags[] = {CM_VERIFY_CD, CM_VERIFY_RK4};
  cm_verify_options_t *o = &a->o;
  double tmp[CM_VERIFY_MAX_LIST];
  int n, ok;
  switch (c) {
  case 'g':
    n = cm__list("--gravity", arg, tmp, 3);
    ok = n >= 2;
    if (n == 1)
      fprintf(stderr, "cmodes verify: --gravity: give gx,gy (2D) or "
                      "gx,gy,gz (3D)\n");
    if (ok) {
      o->use_gravity = 1;
      for (int i = 0; i < 3; i++)
        o->gravity[i] = i < n ? tmp[i] : 0;
    }
    return ok;
  case O_DIR:
    free(a->dir);
    a->dir = malloc((strlen(arg) / 2 + 2) * sizeof *a->dir);
    a->ndir = a->dir ? cm__list("--direction", arg, a->dir,
                                (int)(strlen(arg) / 2 + 1))
                     : -1;
    return a->ndir > 0;
  case 'a':
    o->namplitudes =
        cm__list("--amplitudes", arg, o->amplitudes, CM_VERIFY_MAX_LIST);
    return o->namplitudes > 0;
  case 's':
    o->nsteps = cm__list("--steps", arg, o->steps, CM_VERIFY_MAX_LIST);
    return o->nsteps > 0;
  case O_MODELS:
    return cm__flags("--models", arg, mnames, mflags, &o->models);
  default: /* O_INTEG */
    return cm__flags("--integrators", arg, inames, iflags, &o->integrators);
  }
}

/* One option: 1 if valid. */
static int cm__verify_opt(int c, const char *arg, cm__vargs_t *a) {
  switch (c) {
  case 'g':
  case O_DIR:
  case 'a':
  case 's':
  case O_MODELS:
  case O_INTEG:
    return cm__verify_list_opt(c, arg, a);
  case O_PRELOAD:
  case 'k':
  case 'm':
  case O_PERIODS:
  case O_TOL:
  case O_BTOL:
  case O_BSTEPS:
  case O_SEED:
  case O_THREADS:
    return cm__verify_number_opt(c, arg, a);
  case O_PFILE:
    a->pfile = arg;
    return 1;
  case O_NOSTAB:
    a->o.stability = 0;
    return 1;
  case O_UNLOADED:
    a->o.bilateral_unloaded = 1;
    return 1;
  case O_STABONLY:
    a->o.runs = 0, a->o.stability = 1;
    return 1;
  case O_JSON:
    a->json = 1;
    return 1;
  case O_PLOT:
    a->plot = arg;
    return 1;
  case 'q':
    a->o.progress = 0;
    return 1;
  default:
    return cm__opt_parse("verify", c, arg, cm__verify_opts, &a->o.analysis) > 0;
  }
}

/* Parses the command line: 0, 1 after --help, or a usage error (exit
 * status) after its message. */
static int cm__verify_args(int argc, char **argv, cm__vargs_t *a) {
  static const struct option own[] = {
      {"gravity", required_argument, 0, 'g'},
      {"preload", required_argument, 0, O_PRELOAD},
      {"preload-file", required_argument, 0, O_PFILE},
      {"modes", required_argument, 0, 'k'},
      {"mode", required_argument, 0, 'm'},
      {"direction", required_argument, 0, O_DIR},
      {"amplitudes", required_argument, 0, 'a'},
      {"steps", required_argument, 0, 's'},
      {"models", required_argument, 0, O_MODELS},
      {"integrators", required_argument, 0, O_INTEG},
      {"periods", required_argument, 0, O_PERIODS},
      {"tol", required_argument, 0, O_TOL},
      {"bisect-steps", required_argument, 0, O_BSTEPS},
      {"bisect-tol", required_argument, 0, O_BTOL},
      {"seed", required_argument, 0, O_SEED},
      {"no-stability", no_argument, 0, O_NOSTAB},
      {"stability-only", no_argument, 0, O_STABONLY},
      {"json", no_argument, 0, O_JSON},
      {"plot", required_argument, 0, O_PLOT},
      {"quiet", no_argument, 0, 'q'},
      {"threads", required_argument, 0, O_THREADS},
      {"unloaded-bilateral", no_argument, 0, O_UNLOADED},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  struct option longopts[64];
  cm__opt_longopts(longopts, 64, own, cm__verify_opts);
  int ok = 1, c;
  optind = 1;
  while (ok &&
         (c = getopt_long(argc, argv, "g:k:m:a:s:qh", longopts, NULL)) != -1) {
    if (c == 'h') {
      cm__verify_usage(stdout);
      return 1;
    }
    ok = cm__verify_opt(c, optarg, a);
  }
  if (ok && argc - optind != 1) {
    fprintf(stderr, "cmodes verify: expected one scene file (or - for "
                    "standard input)\n");
    ok = 0;
  }
  if (ok &&
      a->o.use_gravity + (a->o.preload_uniform > 0) + (a->pfile != NULL) > 1) {
    fprintf(stderr, "cmodes verify: give one of --gravity, --preload, "
                    "--preload-file\n");
    ok = 0;
  }
  if (!ok) {
    fprintf(stderr, "try 'cmodes verify --help'\n");
    return cm_status_exit(CM_USAGE);
  }
  return 0;
}

/* The preload file and the direction against the scene: 0 or a usage
 * error (exit status) after its message. */
static int cm__verify_inputs(cm__vargs_t *a, const cm_scene_t *scene,
                             double **pre) {
  if (a->pfile) {
    int npre = 0;
    *pre = cm__read_numbers(a->pfile, &npre);
    if (*pre && npre != scene->ncontacts) {
      fprintf(stderr,
              "cmodes verify: --preload-file: %s has %d numbers, the "
              "scene has %d contacts: give one force per contact\n",
              a->pfile, npre, scene->ncontacts);
      free(*pre);
      *pre = NULL;
    }
    if (!*pre)
      return cm_status_exit(CM_USAGE);
    a->o.preload = *pre;
  }
  if (a->dir) {
    int need = 0;
    for (int i = 0; i < scene->nbodies; i++)
      need += scene->bodies[i].fixed ? 0 : (scene->dim == 2 ? 3 : 6);
    if (a->ndir != need) {
      fprintf(stderr,
              "cmodes verify: --direction: %d numbers, the scene's "
              "moving bodies have %d dofs (%d per body)\n",
              a->ndir, need, scene->dim == 2 ? 3 : 6);
      return cm_status_exit(CM_USAGE);
    }
    a->o.direction = a->dir;
  }
  return 0;
}

int cm__cmd_verify(int argc, char **argv) {
  cm__vargs_t a;
  memset(&a, 0, sizeof a);
  cm_verify_options_init(&a.o);
  a.o.progress = 1;
  cm_context_t ctx;
  cm_context_init(&ctx);
  int code = cm__verify_args(argc, argv, &a);
  if (code) {
    free(a.dir);
    return code == 1 ? 0 : code;
  }
  ctx.threads = a.threads;
  /* ---- read ---- */
  cm_scene_t *scene = NULL;
  double *pre = NULL;
  int st = cm_scene_read_file(&ctx, argv[optind], &scene);
  if (st < 0) {
    free(a.dir);
    return cm__vfail(&ctx, st);
  }
  if ((code = cm__verify_inputs(&a, scene, &pre))) {
    cm_scene_destroy(&scene);
    free(a.dir), free(pre);
    return code;
  }
  /* ---- run and print ---- */
  cm_verify_result_t *res = NULL;
  st = cm_verify(&ctx, scene, &a.o, &res);
  if (st >= 0) {
    if (a.json) {
      char *txt = cm_verify_to_json(res, CM_JSON_INDENT);
      if (txt)
        printf("%s\n", txt);
      else
        st = CM_NOMEM;
      free(txt);
    } else {
      cm_verify_write_text(res, stdout);
    }
    if (a.plot && st >= 0)
      st = cm__plot(&ctx, scene, &a.o, res, a.plot);
  }
  code = st < 0 ? cm__vfail(&ctx, st) : 0;
  cm_verify_result_destroy(&res);
  cm_scene_destroy(&scene);
  free(a.dir), free(pre);
  return code;
}
