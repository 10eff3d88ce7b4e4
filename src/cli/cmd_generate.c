/* cmd_generate.c: `cmodes generate KIND [options]`: writes a generated scene
 * (pile, crystal, stack, fleet, bar) as JSON to standard output or -o,
 * and optionally the contact preloads to --forces. Not for the generators
 * themselves (src/generate/). */
#include "analyze/options_table.h"
#include "cli.h"
#include "cmodes.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  O_COUNT = 'n',
  O_SEED = 's',
  O_DIM = 'd',
  O_OUT = 'o',
  O_HELP = 'h',
  O_FORCES = 256,
  O_K, /* --k only: -k is --modes in analyze, compare and verify */
  O_RADIUS,
  O_POLY,
  O_DENSITY,
  O_GRAVITY,
  O_WIDTH,
  O_YOUNG,
  O_POISSON,
  O_NOWALLS,
  O_LATTICE,
  O_N,
  O_NX,
  O_NY,
  O_NZ,
  O_OVERLAP,
  O_SHAPE,
  O_TOWERS,
  O_SIZE,
  O_MASS,
  O_WHEELED,
  O_PAYLOAD,
  O_PERROW,
  O_SPACING,
  O_INERTIA,
  O_HALF,
  O_LAST
};

static const struct option cm__gen_longopts[] = {
    {"count", required_argument, 0, O_COUNT},
    {"seed", required_argument, 0, O_SEED},
    {"dim", required_argument, 0, O_DIM},
    {"k", required_argument, 0, O_K},
    {"output", required_argument, 0, O_OUT},
    {"out", required_argument, 0, O_OUT}, /* the old spelling */
    {"forces", required_argument, 0, O_FORCES},
    {"radius", required_argument, 0, O_RADIUS},
    {"polydispersity", required_argument, 0, O_POLY},
    {"density", required_argument, 0, O_DENSITY},
    {"gravity", required_argument, 0, O_GRAVITY},
    {"width", required_argument, 0, O_WIDTH},
    {"young", required_argument, 0, O_YOUNG},
    {"poisson", required_argument, 0, O_POISSON},
    {"no-walls", no_argument, 0, O_NOWALLS},
    {"lattice", required_argument, 0, O_LATTICE},
    {"n", required_argument, 0, O_N},
    {"nx", required_argument, 0, O_NX},
    {"ny", required_argument, 0, O_NY},
    {"nz", required_argument, 0, O_NZ},
    {"overlap", required_argument, 0, O_OVERLAP},
    {"shape", required_argument, 0, O_SHAPE},
    {"towers", required_argument, 0, O_TOWERS},
    {"size", required_argument, 0, O_SIZE},
    {"mass", required_argument, 0, O_MASS},
    {"wheeled", required_argument, 0, O_WHEELED},
    {"payload", required_argument, 0, O_PAYLOAD},
    {"per-row", required_argument, 0, O_PERROW},
    {"spacing", required_argument, 0, O_SPACING},
    {"inertia", required_argument, 0, O_INERTIA},
    {"half-length", required_argument, 0, O_HALF},
    {"help", no_argument, 0, O_HELP},
    {0, 0, 0, 0}};

static const char cm__gen_usage[] =
    "usage: cmodes generate KIND [options] > scene.json\n"
    "\n"
    "KIND is one of:\n"
    "  pile     polydisperse disks (2D) / spheres (3D) deposited under "
    "gravity\n"
    "           in a box: --dim --count --seed --radius --polydispersity\n"
    "           --density --gravity --width --k | --young --poisson "
    "--no-walls\n"
    "  crystal  equal spheres on a lattice on a floor: --lattice\n"
    "           square|hex|sc|fcc --n N (or --nx --ny --nz) --radius\n"
    "           --density --k --overlap\n"
    "  stack    towers of boxes or columns of spheres: --shape boxes|spheres\n"
    "           --count (per tower) --towers --dim --size LX[,LY[,LZ]] --mass\n"
    "           --k --gravity\n"
    "  fleet    robots on a warehouse floor: --count --seed --wheeled F\n"
    "           --payload F --per-row --spacing --gravity\n"
    "  bar      the reference bar: --dim --mass --inertia --half-length --k\n"
    "\n"
    "common options:\n"
    "  -o, --output FILE  write the scene to FILE instead of standard output\n"
    "      --forces FILE  write each contact's static normal force (N), one\n"
    "                     per line in contact order (pile, stack, fleet)\n"
    "  -h, --help         this text\n"
    "\n"
    "Units are SI. Defaults and models: docs/generators.md.\n"
    "Example: cmodes generate pile --dim 3 --count 1000 --young 7e10 --seed "
    "2\n";

/* Which options each kind accepts. */
static const int cm__opts_pile[] = {
    O_COUNT,   O_SEED,  O_DIM,   O_K,       O_RADIUS,  O_POLY, O_DENSITY,
    O_GRAVITY, O_WIDTH, O_YOUNG, O_POISSON, O_NOWALLS, 0};
static const int cm__opts_crystal[] = {
    O_LATTICE, O_N, O_NX, O_NY, O_NZ, O_RADIUS, O_DENSITY, O_K, O_OVERLAP, 0};
static const int cm__opts_stack[] = {O_SHAPE, O_COUNT, O_TOWERS,  O_DIM, O_SIZE,
                                     O_MASS,  O_K,     O_GRAVITY, 0};
static const int cm__opts_fleet[] = {O_COUNT,  O_SEED,    O_WHEELED, O_PAYLOAD,
                                     O_PERROW, O_SPACING, O_GRAVITY, 0};
static const int cm__opts_bar[] = {O_DIM, O_MASS, O_INERTIA, O_HALF, O_K, 0};

static const char *cm__opt_name(int id) {
  for (const struct option *o = cm__gen_longopts; o->name; o++)
    if (o->val == id)
      return o->name;
  return "?";
}

/* ---- number parsing ---------------------------------------------------------
 */

static int cm__num(const char *opt, const char *s, double *out) {
  if (!cm__parse_number(s, out)) {
    fprintf(stderr, "cmodes generate: --%s: '%s' is not a number\n", opt, s);
    return CM_USAGE;
  }
  return CM_OK;
}

static int cm__int(const char *opt, const char *s, int *out) {
  double v;
  if (!cm__parse_number(s, &v) || v != floor(v) || fabs(v) > 2147483647.0) {
    fprintf(stderr, "cmodes generate: --%s: '%s' is not an integer\n", opt, s);
    return CM_USAGE;
  }
  *out = (int)v;
  return CM_OK;
}

/* Seeds: all 64 bits, so strtoull rather than the double parser. */
static int cm__u64(const char *opt, const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *end || errno == ERANGE || s[0] == '-') {
    fprintf(stderr,
            "cmodes generate: --%s: '%s' is not a non-negative integer\n", opt,
            s);
    return CM_USAGE;
  }
  *out = (uint64_t)v;
  return CM_OK;
}

/* ---- options
 * ------------------------------------------------------------------ */

typedef struct {
  const char *arg[O_LAST]; /* argument of each option given, or NULL */
  int set[O_LAST];         /* option given */
} cm__args_t;

static int cm__allowed(const int *list, int id) {
  for (; *list; list++)
    if (*list == id)
      return 1;
  return 0;
}

/* Applies the numeric options common to several kinds. */
#define NUM(id, field)                                                         \
  if (A->set[id] && (st = cm__num(cm__opt_name(id), A->arg[id], &(field))))    \
  return st
#define INT(id, field)                                                         \
  if (A->set[id] && (st = cm__int(cm__opt_name(id), A->arg[id], &(field))))    \
  return st

static int cm__build_pile(cm_context_t *ctx, const cm__args_t *A,
                          cm_scene_t **s, double **f) {
  cm_pile_options_t o;
  cm_pile_options_init(&o);
  int st;
  INT(O_COUNT, o.count);
  INT(O_DIM, o.dim);
  NUM(O_K, o.k);
  NUM(O_RADIUS, o.radius);
  NUM(O_POLY, o.polydispersity);
  NUM(O_DENSITY, o.density);
  NUM(O_GRAVITY, o.gravity);
  NUM(O_WIDTH, o.width);
  NUM(O_YOUNG, o.young);
  NUM(O_POISSON, o.poisson);
  if (A->set[O_SEED] && (st = cm__u64("seed", A->arg[O_SEED], &o.seed)))
    return st;
  if (A->set[O_NOWALLS])
    o.walls = 0;
  if (A->set[O_K] && A->set[O_YOUNG]) {
    fprintf(stderr, "cmodes generate pile: give either --k (linear) or "
                    "--young (Hertz), not both\n");
    return CM_USAGE;
  }
  return cm_generate_pile_forces(ctx, &o, s, f);
}

static int cm__build_crystal(cm_context_t *ctx, const cm__args_t *A,
                             cm_scene_t **s) {
  cm_crystal_options_t o;
  cm_crystal_options_init(&o);
  int st, n;
  if (A->set[O_LATTICE]) {
    static const char *names[] = {"square", "hex", "sc", "fcc"};
    o.lattice = -1;
    for (int i = 0; i < 4; i++)
      if (!strcmp(A->arg[O_LATTICE], names[i]))
        o.lattice = i;
    if (o.lattice < 0) {
      fprintf(stderr,
              "cmodes generate crystal: --lattice: '%s' is not square, hex, "
              "sc or fcc\n",
              A->arg[O_LATTICE]);
      return CM_USAGE;
    }
  }
  if (A->set[O_N]) {
    if ((st = cm__int("n", A->arg[O_N], &n)))
      return st;
    o.nx = o.ny = o.nz = n;
  }
  INT(O_NX, o.nx);
  INT(O_NY, o.ny);
  INT(O_NZ, o.nz);
  NUM(O_RADIUS, o.radius);
  NUM(O_DENSITY, o.density);
  NUM(O_K, o.k);
  NUM(O_OVERLAP, o.overlap);
  return cm_generate_crystal(ctx, &o, s);
}

static int cm__build_stack(cm_context_t *ctx, const cm__args_t *A,
                           cm_scene_t **s, double **f) {
  cm_stack_options_t o;
  cm_stack_options_init(&o);
  int st;
  if (A->set[O_SHAPE]) {
    if (!strcmp(A->arg[O_SHAPE], "boxes"))
      o.shape = CM_STACK_BOXES;
    else if (!strcmp(A->arg[O_SHAPE], "spheres"))
      o.shape = CM_STACK_SPHERES;
    else {
      fprintf(stderr,
              "cmodes generate stack: --shape: '%s' is not boxes or "
              "spheres\n",
              A->arg[O_SHAPE]);
      return CM_USAGE;
    }
  }
  INT(O_COUNT, o.count);
  INT(O_TOWERS, o.towers);
  INT(O_DIM, o.dim);
  NUM(O_MASS, o.mass);
  NUM(O_K, o.k);
  NUM(O_GRAVITY, o.gravity);
  if (A->set[O_SIZE]) {
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", A->arg[O_SIZE]);
    int i = 0;
    for (char *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
      if (i == 3) {
        fprintf(stderr, "cmodes generate stack: --size takes at most 3 "
                        "lengths (LX,LY,LZ)\n");
        return CM_USAGE;
      }
      if ((st = cm__num("size", t, &o.size[i++])))
        return st;
    }
    for (; i > 0 && i < 3; i++)
      o.size[i] = o.size[i - 1];
  }
  return cm_generate_stack_forces(ctx, &o, s, f);
}

static int cm__build_fleet(cm_context_t *ctx, const cm__args_t *A,
                           cm_scene_t **s, double **f) {
  cm_fleet_options_t o;
  cm_fleet_options_init(&o);
  int st;
  INT(O_COUNT, o.count);
  INT(O_PERROW, o.per_row);
  NUM(O_WHEELED, o.wheeled_fraction);
  NUM(O_PAYLOAD, o.payload_fraction);
  NUM(O_SPACING, o.spacing);
  NUM(O_GRAVITY, o.gravity);
  if (A->set[O_SEED] && (st = cm__u64("seed", A->arg[O_SEED], &o.seed)))
    return st;
  return cm_generate_fleet_forces(ctx, &o, s, f);
}

static int cm__build_bar(cm_context_t *ctx, const cm__args_t *A,
                         cm_scene_t **s) {
  cm_bar_options_t o;
  cm_bar_options_init(&o);
  int st;
  INT(O_DIM, o.dim);
  NUM(O_MASS, o.mass);
  NUM(O_INERTIA, o.inertia);
  NUM(O_HALF, o.half_length);
  NUM(O_K, o.k);
  return cm_generate_bar(ctx, &o, s);
}

/* ---- output
 * ------------------------------------------------------------------ */

static int cm__write_forces(const char *path, const double *f, int n) {
  FILE *out = fopen(path, "w");
  if (!out) {
    fprintf(stderr, "cmodes generate: --forces %s: cannot open: %s\n", path,
            strerror(errno));
    return CM_IO;
  }
  for (int i = 0; i < n; i++)
    fprintf(out, "%.17g\n", f[i]);
  int bad = ferror(out);
  if (fclose(out) || bad) {
    fprintf(stderr, "cmodes generate: --forces %s: write error\n", path);
    return CM_IO;
  }
  return CM_OK;
}

/* Writes the scene to out_path (or stdout); a write error (a full disk)
 * fails with CM_IO and a message. */
static int cm__gen_write(cm_context_t *ctx, const cm_scene_t *s,
                         const char *out_path) {
  FILE *out = out_path ? fopen(out_path, "w") : stdout;
  if (!out) {
    fprintf(stderr, "cmodes generate: --output %s: cannot open: %s\n", out_path,
            strerror(errno));
    return CM_IO;
  }
  int st = cm_scene_write_json(ctx, s, out);
  if (out_path && (ferror(out) | (fclose(out) != 0)) && !st) {
    st = CM_IO;
    snprintf(ctx->message, sizeof ctx->message, "cannot write %s: %s", out_path,
             strerror(errno));
  }
  if (st)
    fprintf(stderr, "cmodes generate: %s\n", ctx->message);
  return st;
}

int cm__cmd_generate(int argc, char **argv) {
  cm__args_t A;
  memset(&A, 0, sizeof A);
  const char *out_path = NULL, *forces_path = NULL;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":n:s:d:o:h", cm__gen_longopts, NULL)) !=
         -1) {
    if (c == O_HELP) {
      fputs(cm__gen_usage, stdout);
      return 0;
    }
    if (c == '?' || c == ':') {
      const char *bad = argv[optind - 1];
      fprintf(stderr, "cmodes generate: %s '%s'\n",
              c == ':' ? "missing value for" : "unknown option", bad);
      fputs("try 'cmodes generate --help'\n", stderr);
      return cm_status_exit(CM_USAGE);
    }
    if (c == O_OUT)
      out_path = optarg;
    else if (c == O_FORCES)
      forces_path = optarg;
    else if (c > 0 && c < O_LAST) {
      A.set[c] = 1;
      A.arg[c] = optarg;
    }
  }
  if (optind >= argc) {
    fprintf(stderr, "cmodes generate: missing KIND (pile, crystal, stack, "
                    "fleet or bar)\ntry 'cmodes generate --help'\n");
    return cm_status_exit(CM_USAGE);
  }
  const char *kind = argv[optind];
  if (optind + 1 < argc) {
    fprintf(stderr, "cmodes generate: unexpected argument '%s'\n",
            argv[optind + 1]);
    return cm_status_exit(CM_USAGE);
  }
  /* ---- which kind, and are its options valid? ---- */
  static const char *kinds[] = {"pile", "crystal", "stack", "fleet", "bar"};
  const int *allowed[] = {cm__opts_pile, cm__opts_crystal, cm__opts_stack,
                          cm__opts_fleet, cm__opts_bar};
  int which = -1;
  for (int i = 0; i < 5; i++)
    if (!strcmp(kind, kinds[i]))
      which = i;
  if (which < 0) {
    fprintf(stderr,
            "cmodes generate: unknown kind '%s' (use pile, crystal, stack, "
            "fleet or bar)\n",
            kind);
    return cm_status_exit(CM_USAGE);
  }
  for (int id = 1; id < O_LAST; id++)
    if (A.set[id] && !cm__allowed(allowed[which], id)) {
      fprintf(stderr,
              "cmodes generate %s: option --%s does not apply to %s (see "
              "'cmodes generate --help')\n",
              kind, cm__opt_name(id), kind);
      return cm_status_exit(CM_USAGE);
    }
  if (forces_path && (which == 1 || which == 4)) {
    fprintf(stderr,
            "cmodes generate %s: --forces is available for pile, "
            "stack and fleet\n",
            kind);
    return cm_status_exit(CM_USAGE);
  }
  /* ---- generate ---- */
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  double *f = NULL;
  double **fp = forces_path ? &f : NULL;
  int st;
  switch (which) {
  case 0:
    st = cm__build_pile(&ctx, &A, &s, fp);
    break;
  case 1:
    st = cm__build_crystal(&ctx, &A, &s);
    break;
  case 2:
    st = cm__build_stack(&ctx, &A, &s, fp);
    break;
  case 3:
    st = cm__build_fleet(&ctx, &A, &s, fp);
    break;
  default:
    st = cm__build_bar(&ctx, &A, &s);
    break;
  }
  if (st < 0) {
    if (ctx.status)
      fprintf(stderr, "cmodes generate %s: %s\n", kind, ctx.message);
    return cm_status_exit(st);
  }
  st = cm__gen_write(&ctx, s, out_path);
  if (!st && forces_path)
    st = cm__write_forces(forces_path, f, s->ncontacts);
  free(f);
  cm_scene_destroy(&s);
  return cm_status_exit(st);
}
