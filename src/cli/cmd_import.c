/* cmd_import.c: `cmodes import dump FILE [options]`: converts one snapshot of
 * a LAMMPS / LIGGGHTS text dump into a scene (JSON on stdout or -o FILE);
 * `cmodes import matrices MANIFEST | M.mtx J.mtx k.mtx` checks a Matrix
 * Market system and prints its sizes. Not for analysis (`cmodes analyze
 * --matrices` analyses such a system). */
#include "analyze/options_table.h"
#include "args.h"
#include "cli.h"
#include "cmodes.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void cm__import_usage(FILE *f) {
  fprintf(f,
"usage: cmodes import dump FILE [options] > scene.json\n"
"       cmodes import lammps --deck IN --dump FILE [options] [-o SCENE]\n"
"       cmodes import liggghts --deck IN --dump FILE [options] [-o SCENE]\n"
"       cmodes import matrices MANIFEST | M.mtx J.mtx k.mtx\n"
"       cmodes import mjcf MODEL.xml [options] -o DIR   (MuJoCo; --help)\n"
"\n"
"'lammps' (and its alias 'liggghts': the deck's syntax is detected) reads\n"
"the input deck IN for units (si), dimension, boundary, the box, the\n"
"timestep, the granular pair style and fix wall/gran walls, then the dump:\n"
"each contact gets k_n, k_t, c_n, c_t as the engine computes them at its\n"
"overlap, the scene the deck's timestep. With the deck, give no --k,\n"
"--young or walls. docs/importers.md lists what is read and refused.\n"
"\n"
"'matrices' reads a Matrix Market system (as written by cmodes export)\n"
"with every check of 'cmodes analyze --matrices' and prints its sizes.\n"
"\n"
"Reads the last snapshot (or --timestep N) of a LAMMPS/LIGGGHTS text dump\n"
"(ITEM: ATOMS with named columns: id type x y z | xu yu zu | xs ys zs,\n"
"radius | diameter, mass), finds the overlapping pairs and wall contacts\n"
"and writes a cmodes scene. FILE '-' reads standard input.\n"
"\n"
"particles:\n"
"  --dim 2|3             3: spheres (default); 2: disks, z ignored\n"
"  --timestep N          snapshot to take (default: the last)\n"
"  --density RHO         kg/m^3: mass from the radius (overrides a mass\n"
"                        column; needed when there is none)\n"
"  --thickness T         2D disk thickness, m (default 1: per unit)\n"
"  --radius R            radius of every atom when the dump has no\n"
"                        radius or diameter column\n"
"stiffness (one of):\n"
"  --k K                 linear penalty stiffness, N/m\n"
"  --young E --poisson NU\n"
"                        Hertz, linearised at each overlap:\n"
"                        k = 2 E* sqrt(R* delta), E* = E / (2 (1 - nu^2))\n"
"  --touch-tol TOL       m: pairs with overlap > -TOL count (default 0);\n"
"                        Hertz k is taken at max(delta, TOL)\n"
"walls (repeatable planes, one cylinder):\n"
"  --wall-plane SPEC     'z=0' or 'z>0' (inside is z > 0), 'x<0.05'\n"
"                        (inside is x < 0.05), or px,py,pz,nx,ny,nz\n"
"                        (a point and the inward normal; 2D px,py,nx,ny)\n"
"  --wall-zcylinder R[,CX,CY]  particles inside a z-cylinder\n"
"  --wall-bodies         walls as fixed bodies (default: the world)\n"
"  --periodic image|drop|error\n"
"                        pairs across a periodic boundary: found on the\n"
"                        minimum image (default), dropped (frequencies\n"
"                        lowered: unsafe; 'ignore' is the same), or an error\n"
"deck (import lammps / liggghts):\n"
"  --deck IN             the LAMMPS or LIGGGHTS input deck\n"
"  --dump FILE           the dump to import\n"
"  --var NAME=VALUE      an index variable set before the deck, as\n"
"                        lmp -var NAME VALUE (repeatable)\n"
"output:\n"
"  -o, --output FILE     write the scene there (default: stdout); binary\n"
"                        when FILE ends in .cmsb\n"
"  --threads N           threads for the contact search\n"
"  --max-contacts N      stop with an error past N contacts (default:\n"
"                        physical memory / 1 KiB; 0 = that default)\n"
"  -q, --quiet           no summary on stderr\n"
"  -h, --help            this help\n"
"\n"
"example (the LIGGGHTS contactModels tutorial):\n"
"  cmodes import dump dump20000.newModels --density 2500 --young 5e6 \\\n"
"      --poisson 0.45 --wall-plane z=0 --wall-zcylinder 0.05 > bed.json\n");
}

/* Parses a double option value; 0 on error (message printed). */
static int cm__num_arg(const char *opt, const char *s, double *v) {
  if (!cm__parse_number(s, v)) {
    fprintf(stderr, "cmodes import: %s '%s': expected a number\n", opt, s);
    return 0;
  }
  return 1;
}

static int cm__fail(cm_context_t *ctx, int st) {
  fprintf(stderr, "cmodes import: %s\n", ctx->message);
  return cm_status_exit(st);
}

/* `import matrices`: reads and checks, prints n, nc and the nonzeros. */
static int cm__import_matrices(cm_context_t *ctx, int nargs, char **args) {
  if (nargs != 1 && nargs != 3) {
    fprintf(stderr, "cmodes import matrices: expected a manifest or three "
                    "files M.mtx J.mtx k.mtx\n");
    return cm_status_exit(CM_USAGE);
  }
  cm_system_t *sys = NULL;
  int st = nargs == 1
               ? cm_system_read_manifest(ctx, args[0], &sys)
               : cm_system_read_matrices(ctx, args[0], args[1], args[2], &sys);
  if (st)
    return cm__fail(ctx, st);
  printf("n %d\nnc %d\nM_nonzeros_lower %d\nJ_nonzeros %d\n", sys->n,
         sys->nc, sys->Mp[sys->n], sys->Jp[sys->nc]);
  cm_system_destroy(&sys);
  return 0;
}

static int cm__ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Writes the scene (binary when output ends in .cmsb, else JSON). */
static int cm__write_scene(cm_context_t *ctx, const cm_scene_t *s,
                           const char *output) {
  int binary = output && cm__ends_with(output, ".cmsb");
  FILE *f = output ? fopen(output, binary ? "wb" : "w") : stdout;
  if (!f) {
    snprintf(ctx->message, sizeof ctx->message, "cannot write %s: %s",
             output, strerror(errno));
    return CM_IO;
  }
  int st = binary ? cm_scene_write_binary(ctx, s, f)
                  : cm_scene_write_json(ctx, s, f);
  if (output && (ferror(f) | (fclose(f) != 0)) && !st)
    st = CM_IO;
  if (st && output) { /* name the file the scene did not reach */
    char why[256];
    snprintf(why, sizeof why, "%.255s", ctx->message);
    snprintf(ctx->message, sizeof ctx->message, "cannot write %.512s: %s",
             output, why[0] ? why : "a write failed (disk full?)");
  }
  return st;
}

/* Prints each line of text as "cmodes import: warning: LINE". */
static void cm__print_warnings(const char *text) {
  while (text && *text) {
    const char *e = strchr(text, '\n');
    int n = e ? (int)(e - text) : (int)strlen(text);
    fprintf(stderr, "cmodes import: warning: %.*s\n", n, text);
    text += n + (e ? 1 : 0);
  }
}

/* 1 if contact c acts at its body a's centre (an importer's drag or
 * tether: a wall contact is at the particle's surface). */
static int cm__at_centre(const cm_scene_t *s, const cm_contact_t *c) {
  const double *x = s->bodies[c->a].position;
  return !c->has_arms && c->point[0] == x[0] && c->point[1] == x[1] &&
         c->point[2] == x[2];
}

/* Writes the scene, then the summary line and the warnings on stderr. */
static int cm__finish(cm_context_t *ctx, const cm_dump_t *d,
                      const cm_dump_options_t *o, const cm_scene_t *s,
                      const char *output, int quiet, const char *path) {
  int st = cm__write_scene(ctx, s, output);
  if (st)
    return st;
  if (!quiet) {
    int walls = 0, drags = 0, tethers = 0;
    for (int i = 0; i < s->ncontacts; i++) {
      const cm_contact_t *c = &s->contacts[i];
      int atom = c->b == CM_WORLD && cm__at_centre(s, c);
      drags += c->stiffness == 0; /* a dashpot alone: fix viscous */
      tethers += c->stiffness > 0 && atom; /* fix spring/self */
      walls += c->stiffness > 0 && !atom &&
               (c->b == CM_WORLD || c->b >= d->natoms);
    }
    char dr[64] = "", te[64] = "";
    if (drags)
      snprintf(dr, sizeof dr, ", %d drags of fix viscous or langevin", drags);
    if (tethers)
      snprintf(te, sizeof te, ", %d tethers of fix spring/self", tethers);
    fprintf(stderr,
            "cmodes import: %s: timestep %ld (snapshot %d), %d particles, "
            "%d contacts (%d pairs, %d with walls%s%s)\n",
            path, d->timestep, d->snapshots, d->natoms, s->ncontacts,
            s->ncontacts - walls - drags - tethers, walls, dr, te);
  }
  char *w = cm_dump_warnings(ctx, d, o);
  cm__print_warnings(w);
  free(w);
  return CM_OK;
}

/* `import lammps|liggghts --deck IN --dump FILE`. */
static int cm__import_deck(cm_context_t *ctx, cm_dump_options_t *o,
                           const char *deck_path, const char *const *vars,
                           const char *dump_path, const char *output,
                           int quiet) {
  cm_lammps_deck_t *deck = NULL;
  cm_dump_t *d = NULL;
  cm_scene_t *s = NULL;
  int st = cm_lammps_deck_read_vars(ctx, deck_path, vars, &deck);
  if (!st)
    st = cm_lammps_deck_apply(ctx, deck, o);
  if (!st)
    st = cm_dump_read(ctx, dump_path, o, &d);
  if (!st)
    cm_lammps_deck_complete(deck, d, o);
  if (!st)
    st = cm_dump_to_scene(ctx, d, o, &s);
  if (!st && !quiet)
    fprintf(stderr, "cmodes import: %s: %s\n", deck_path,
            deck->model->summary);
  if (!st)
    cm__print_warnings(deck->warnings);
  if (!st)
    st = cm__finish(ctx, d, o, s, output, quiet, dump_path);
  cm_dump_destroy(&d);
  cm_scene_destroy(&s);
  cm_lammps_deck_destroy(&deck);
  return st ? cm__fail(ctx, st) : 0;
}

enum {
  O_DIM = 256, O_TIMESTEP, O_DENSITY, O_THICK, O_RADIUS, O_K, O_YOUNG,
  O_POISSON, O_TOL, O_PLANE, O_CYL, O_WALLB, O_PERIODIC, O_THREADS,
  O_DECK, O_DUMP, O_VAR, O_MAXC
};

static const struct option cm__import_longopts[] = {
    {"dim", required_argument, 0, O_DIM},
    {"timestep", required_argument, 0, O_TIMESTEP},
    {"density", required_argument, 0, O_DENSITY},
    {"thickness", required_argument, 0, O_THICK},
    {"radius", required_argument, 0, O_RADIUS},
    {"k", required_argument, 0, O_K},
    {"young", required_argument, 0, O_YOUNG},
    {"poisson", required_argument, 0, O_POISSON},
    {"touch-tol", required_argument, 0, O_TOL},
    {"wall-plane", required_argument, 0, O_PLANE},
    {"wall-zcylinder", required_argument, 0, O_CYL},
    {"wall-bodies", no_argument, 0, O_WALLB},
    {"periodic", required_argument, 0, O_PERIODIC},
    {"threads", required_argument, 0, O_THREADS},
    {"deck", required_argument, 0, O_DECK},
    {"dump", required_argument, 0, O_DUMP},
    {"var", required_argument, 0, O_VAR},
    {"max-contacts", required_argument, 0, O_MAXC},
    {"output", required_argument, 0, 'o'},
    {"quiet", no_argument, 0, 'q'},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

/* The command line of import dump / lammps / liggghts / matrices. */
typedef struct {
  cm_dump_options_t o;
  const char *output, *deck, *dump;
  const char *vars[33];
  int nvars, quiet, have_poisson;
} cm__iargs_t;

/* The options that take one positive number (--touch-tol: >= 0). 1 if
 * read, 0 after the message. */
static int cm__import_number(int c, const char *arg, cm_dump_options_t *o) {
  const char *nm = c == O_DENSITY ? "--density" : c == O_THICK ? "--thickness"
                   : c == O_RADIUS ? "--radius" : c == O_K ? "--k"
                   : c == O_YOUNG ? "--young" : "--touch-tol";
  double v;
  if (!cm__num_arg(nm, arg, &v))
    return 0;
  if (c == O_TOL ? !(v >= 0) : !(v > 0)) {
    fprintf(stderr, "cmodes import: %s %s: expected a number %s 0\n", nm,
            arg, c == O_TOL ? ">=" : ">");
    return 0;
  }
  double *dst = c == O_DENSITY ? &o->density : c == O_THICK ? &o->thickness
                : c == O_RADIUS ? &o->radius : c == O_K ? &o->k
                : c == O_YOUNG ? &o->young : &o->touch_tol;
  *dst = v;
  return 1;
}

/* --dim, --timestep and --periodic: 1 if read, 0 after the message. */
static int cm__import_choice(int c, const char *arg, cm_dump_options_t *o) {
  if (c == O_DIM) {
    if (strcmp(arg, "2") && strcmp(arg, "3")) {
      fprintf(stderr, "cmodes import: --dim '%s': expected 2 or 3\n", arg);
      return 0;
    }
    o->dim = arg[0] - '0';
  } else if (c == O_TIMESTEP) {
    char *end;
    errno = 0;
    o->timestep = strtol(arg, &end, 10);
    if (end == arg || *end || errno || o->timestep < 0) {
      fprintf(stderr, "cmodes import: --timestep '%s': expected a step "
                      ">= 0\n", arg);
      return 0;
    }
  } else if (!strcmp(arg, "ignore") || !strcmp(arg, "drop"))
    o->periodic = CM_DUMP_PERIODIC_DROP;
  else if (!strcmp(arg, "image"))
    o->periodic = CM_DUMP_PERIODIC_IMAGE;
  else if (!strcmp(arg, "error"))
    o->periodic = CM_DUMP_PERIODIC_ERROR;
  else {
    fprintf(stderr, "cmodes import: --periodic '%s': expected image, "
                    "drop (or its alias ignore) or error\n", arg);
    return 0;
  }
  return 1;
}

/* One option c of getopt_long: -1 to go on, else the exit status (0 after
 * --help). */
static int cm__import_option(cm_context_t *ctx, int c, const char *arg,
                             cm__iargs_t *a) {
  int ok = 1;
  switch (c) {
  case O_DIM:
  case O_TIMESTEP:
  case O_PERIODIC:
    ok = cm__import_choice(c, arg, &a->o);
    break;
  case O_DENSITY:
  case O_THICK:
  case O_RADIUS:
  case O_K:
  case O_YOUNG:
  case O_TOL:
    ok = cm__import_number(c, arg, &a->o);
    break;
  case O_POISSON:
    ok = cm__num_arg("--poisson", arg, &a->o.poisson);
    a->have_poisson = 1;
    break;
  case O_PLANE:
    if (cm_dump_options_add_plane(ctx, &a->o, arg))
      return cm__fail(ctx, CM_USAGE);
    break;
  case O_CYL:
    if (cm_dump_options_set_cylinder(ctx, &a->o, arg))
      return cm__fail(ctx, CM_USAGE);
    break;
  case O_WALLB:
    a->o.wall_bodies = 1;
    break;
  case O_DECK:
    a->deck = arg;
    break;
  case O_DUMP:
    a->dump = arg;
    break;
  case O_VAR:
    if (a->nvars == 32) {
      fprintf(stderr, "cmodes import: at most 32 --var\n");
      return cm_status_exit(CM_USAGE);
    }
    a->vars[a->nvars++] = arg;
    break;
  case O_MAXC:
    ok = cm__arg_long("import", "--max-contacts", arg, &a->o.max_contacts);
    break;
  case O_THREADS:
    ok = cm__arg_threads("import", arg, &a->o.threads);
    ctx->threads = a->o.threads;
    break;
  case 'o':
    a->output = arg;
    break;
  case 'q':
    a->quiet = 1;
    break;
  case 'h':
    cm__import_usage(stdout);
    return 0;
  default:
    cm__import_usage(stderr);
    return cm_status_exit(CM_USAGE);
  }
  return ok ? -1 : cm_status_exit(CM_USAGE);
}

/* `import dump FILE`: the operands checked, then the dump to a scene. */
static int cm__import_dump(cm_context_t *ctx, int argc, char **argv,
                           cm__iargs_t *a) {
  if (optind >= argc || strcmp(argv[optind], "dump")) {
    fprintf(stderr, "cmodes import: expected 'dump FILE'%s%s%s\n\n",
            optind < argc ? " (got '" : "", optind < argc ? argv[optind] : "",
            optind < argc ? "')" : "");
    cm__import_usage(stderr);
    return cm_status_exit(CM_USAGE);
  }
  if (optind + 2 != argc) {
    fprintf(stderr, "cmodes import dump: expected exactly one FILE\n");
    return cm_status_exit(CM_USAGE);
  }
  if (a->o.young > 0 && !a->have_poisson) {
    fprintf(stderr, "cmodes import: --young needs --poisson NU\n");
    return cm_status_exit(CM_USAGE);
  }
  if (a->deck || a->dump) {
    fprintf(stderr, "cmodes import dump: --deck and --dump belong to "
                    "'cmodes import lammps'\n");
    return cm_status_exit(CM_USAGE);
  }
  const char *path = argv[optind + 1];
  cm_dump_t *d = NULL;
  cm_scene_t *s = NULL;
  int st = cm_dump_read(ctx, path, &a->o, &d);
  if (!st)
    st = cm_dump_to_scene(ctx, d, &a->o, &s);
  if (!st)
    st = cm__finish(ctx, d, &a->o, s, a->output, a->quiet, path);
  cm_dump_destroy(&d);
  cm_scene_destroy(&s);
  return st ? cm__fail(ctx, st) : 0;
}

int cm__cmd_import(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "mjcf")) /* MuJoCo: cmd_import_mjcf.c */
    return cm__cmd_import_mjcf(argc - 1, argv + 1);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm__iargs_t a;
  memset(&a, 0, sizeof a);
  cm_dump_options_init(&a.o);
  a.o.periodic = CM_DUMP_PERIODIC_IMAGE; /* the CLI finds them by default */
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:qh", cm__import_longopts, NULL)) !=
         -1) {
    int code = cm__import_option(&ctx, c, optarg, &a);
    if (code >= 0)
      return code;
  }
  /* ---- operands: matrices MANIFEST | M J k ---- */
  if (optind < argc && !strcmp(argv[optind], "matrices"))
    return cm__import_matrices(&ctx, argc - optind - 1, argv + optind + 1);
  /* ---- operands: lammps | liggghts --deck IN --dump FILE ---- */
  if (optind < argc && (!strcmp(argv[optind], "lammps") ||
                        !strcmp(argv[optind], "liggghts"))) {
    if (optind + 1 != argc || !a.deck || !a.dump) {
      fprintf(stderr, "cmodes import %s: expected --deck IN --dump FILE "
                      "(and no other operands)\n", argv[optind]);
      return cm_status_exit(CM_USAGE);
    }
    return cm__import_deck(&ctx, &a.o, a.deck, a.vars, a.dump, a.output,
                           a.quiet);
  }
  /* ---- operands: dump FILE ---- */
  return cm__import_dump(&ctx, argc, argv, &a);
}
