/* cmd_track.c: `cmodes track DUMP... [--deck IN]`: the stable step over a
 * run. Every snapshot of one or more LAMMPS / LIGGGHTS text dumps, in
 * timestep order, is imported (with the deck's contact laws and walls, or
 * the dump options of `import dump`) and analysed; each solve starts from
 * the previous snapshot's dominant vector, mapped by particle ids. One line
 * per snapshot (CSV or JSON lines), progress on stderr when it is a
 * terminal, and an optional SVG of the step against time.
 * Not for one snapshot (`import` then `analyze`). */
#include "args.h"
#include "cli.h"
#include "cmodes.h"
#include "internal.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* freed analysis buffers kept from one snapshot to the next (bytes) */
#define CM__TRACK_KEEP ((size_t)1 << 30)

static void cm__track_usage(FILE *f) {
  fprintf(
      f,
      "usage: cmodes track DUMP... [--deck IN] [options]\n"
      "\n"
      "Analyses every snapshot of the dumps in timestep order (a timestep "
      "found\n"
      "in two files is taken from the first) and writes one line per "
      "snapshot:\n"
      "step, time, contacts, omega_max, the step per integrator (critical and\n"
      "certified), the per-contact step, the deck step's fraction of the\n"
      "critical step, the particles (LAMMPS ids) that set it, and the "
      "solver's\n"
      "matrix-vector products. Each solve starts cold, from a Gaussian "
      "vector,\n"
      "which also gives the certified step's bound; --warm starts it from the\n"
      "previous snapshot's dominant vector, mapped by particle ids, and then\n"
      "the bound takes a run of its own (more products in all, measured).\n"
      "Up to 1 GiB of the analyses' largest buffers (basis, B) is kept from\n"
      "one snapshot to the next, so their pages are not fresh each time.\n"
      "\n"
      "model (as `cmodes import`):\n"
      "  --deck IN             LAMMPS or LIGGGHTS input deck: contact laws, "
      "walls,\n"
      "                        timestep (then no --k, --young or walls)\n"
      "  --k K | --young E --poisson NU   without a deck: the normal "
      "stiffness\n"
      "  --density RHO, --radius R, --dim 2|3, --touch-tol TOL\n"
      "  --wall-plane SPEC (repeatable), --wall-zcylinder R[,CX,CY]\n"
      "  --periodic image|drop|error      pairs across periodic boundaries\n"
      "analysis:\n"
      "  -k, --modes K         modes per solve (default 6)\n"
      "      --tol T           Lanczos tolerance (default 1e-10)\n"
      "      --warm            warm starts from the previous snapshot\n"
      "      --cold            cold starts (the default)\n"
      "      --threads N       OpenMP threads\n"
      "output:\n"
      "  -o, --output FILE     the table (default: stdout)\n"
      "      --format csv|jsonl   (default csv)\n"
      "      --svg FILE        the steps against time as an SVG chart\n"
      "  -q, --quiet           no progress or summary on stderr\n"
      "  -h, --help            this help\n");
}

/* ---- snapshots in timestep order --------------------------------------- */

typedef struct {
  long step;        /* ITEM: TIMESTEP */
  int file;         /* index of its dump in the arguments */
  const char *path; /* its dump */
} cm__snap_t;

static int cm__snap_cmp(const void *pa, const void *pb) {
  const cm__snap_t *a = pa, *b = pb;
  if (a->step != b->step)
    return a->step < b->step ? -1 : 1;
  return a->file - b->file;
}

/* Every snapshot of the files, sorted, duplicates dropped (the first file
 * wins). *out malloc'd. */
static int cm__snapshots(cm_context_t *ctx, char **paths, int nf,
                         cm__snap_t **out, int *n, int *dups) {
  cm__snap_t *v = NULL;
  int cnt = 0, st = CM_OK;
  *dups = 0;
  for (int f = 0; f < nf && !st; f++) {
    long *steps = NULL;
    int ns = 0;
    st = cm__dump_timesteps(ctx, paths[f], &steps, &ns);
    cm__snap_t *nv = st ? NULL : realloc(v, sizeof *v * (size_t)(cnt + ns));
    if (!st && !nv)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
    for (int i = 0; !st && i < ns; i++)
      nv[cnt++] = (cm__snap_t){steps[i], f, paths[f]};
    if (nv)
      v = nv;
    free(steps);
  }
  if (st) {
    free(v);
    return st;
  }
  qsort(v, (size_t)cnt, sizeof *v, cm__snap_cmp);
  int k = 0;
  for (int i = 0; i < cnt; i++) {
    if (k && v[k - 1].step == v[i].step) {
      (*dups)++;
      continue;
    }
    v[k++] = v[i];
  }
  *out = v, *n = k;
  return CM_OK;
}

/* ---- warm starts mapped by particle ids --------------------------------- */

/* Key of row j of contact c: its bodies' names and the row kind (FNV-1a). */
static uint64_t cm__row_key(const cm_scene_t *s, int c, int j) {
  const cm_contact_t *ct = &s->contacts[c];
  uint64_t h = 1469598103934665603ULL;
  const char *na = cm_scene_body_name(s, ct->a);
  const char *nb = ct->b == CM_WORLD ? "world" : cm_scene_body_name(s, ct->b);
  const char *part[2] = {na ? na : "?", nb ? nb : "?"};
  for (int p = 0; p < 2; p++) {
    for (const char *q = part[p]; *q; q++)
      h = (h ^ (unsigned char)*q) * 1099511628211ULL;
    h = (h ^ 0xffu) * 1099511628211ULL;
  }
  return (h ^ (uint64_t)(j + 1)) * 1099511628211ULL;
}

typedef struct {
  uint64_t key; /* cm__row_key */
  double v;     /* the dominant vector's entry */
} cm__kv_t;

static int cm__kv_cmp(const void *pa, const void *pb) {
  const cm__kv_t *a = pa, *b = pb;
  return a->key < b->key ? -1 : a->key > b->key;
}

/* Rows of contact c in the report's scene-row order (the undamped
 * system's). */
static int cm__rows_of(const cm_scene_t *s, int c) {
  return cm__contact_nrows(s->dim, &s->contacts[c], 0);
}

/* The report's dominant vector keyed by rows, sorted (malloc'd). */
static cm__kv_t *cm__keyed(const cm_scene_t *s, const cm_report_t *r, int *n) {
  cm__kv_t *kv = malloc(sizeof *kv * ((size_t)r->nstart + 1));
  int k = 0;
  for (int c = 0; kv && c < s->ncontacts; c++)
    for (int j = 0; j < cm__rows_of(s, c) && k < r->nstart; j++, k++)
      kv[k] = (cm__kv_t){cm__row_key(s, c, j), r->start_vector[k]};
  if (kv)
    qsort(kv, (size_t)k, sizeof *kv, cm__kv_cmp);
  *n = k;
  return kv;
}

/* The warm start of scene s from the previous keyed vector (rows that are
 * new get 0; the solver adds seeded noise). NULL: none. */
static double *cm__warm(const cm_scene_t *s, const cm__kv_t *kv, int nkv) {
  if (!kv || !nkv)
    return NULL;
  int rows = 0;
  for (int c = 0; c < s->ncontacts; c++)
    rows += cm__rows_of(s, c);
  double *w = calloc((size_t)rows + 1, sizeof(double));
  int k = 0, hits = 0;
  for (int c = 0; w && c < s->ncontacts; c++)
    for (int j = 0; j < cm__rows_of(s, c); j++, k++) {
      cm__kv_t want = {cm__row_key(s, c, j), 0};
      const cm__kv_t *f =
          bsearch(&want, kv, (size_t)nkv, sizeof *kv, cm__kv_cmp);
      if (f) {
        w[k] = f->v;
        hits++;
      }
    }
  if (w && !hits) {
    free(w);
    return NULL;
  }
  return w;
}

/* ---- one line per snapshot ------------------------------------------------
 */

typedef struct {
  long step;
  double time_s; /* step x deck timestep, NAN without one */
  int contacts, rows;
  double omega_max;
  double cd, cd_cert, cd_undamped, rk3, rk4, per_contact;
  double deck_fraction;
  char ids[96]; /* LAMMPS ids of the top bodies of mode 1 */
  int matvecs;
  const char *status;
} cm__line_t;

static void cm__fill_line(const cm_scene_t *s, const cm_report_t *r, long step,
                          cm__line_t *l) {
  memset(l, 0, sizeof *l);
  l->step = step;
  l->time_s = s->timestep_s > 0 ? (double)step * s->timestep_s : NAN;
  l->contacts = r->ncontacts, l->rows = r->nrows;
  l->omega_max = r->omega_max;
  l->cd = r->central_difference.h_s;
  l->cd_cert = r->central_difference.certified_s;
  l->cd_undamped = r->cd_undamped.h_s;
  l->rk3 = r->rk3.h_s, l->rk4 = r->rk4.h_s;
  l->per_contact = r->pc_omega_max > 0 ? 2.0 / r->pc_omega_max : NAN;
  l->deck_fraction = r->deck_fraction;
  l->matvecs = r->matvecs;
  l->status = r->status == CM_NOT_CONVERGED ? "not_converged" : "ok";
  size_t o = 0;
  for (int i = 0; r->nmodes && i < r->modes[0].nbodies && i < 3; i++) {
    const char *nm = r->modes[0].bodies[i].name;
    const char *id = nm && !strncmp(nm, "atom-", 5) ? nm + 5 : nm;
    o += (size_t)snprintf(l->ids + o, sizeof l->ids - o, "%s%s", i ? " " : "",
                          id ? id : "?");
    if (o >= sizeof l->ids)
      break;
  }
}

static void cm__csv_num(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, ",%.10g", v);
  else
    fputs(",", f);
}

static void cm__write_line(FILE *f, int jsonl, const cm__line_t *l) {
  const double num[] = {l->time_s,  l->omega_max,   l->cd,
                        l->cd_cert, l->cd_undamped, l->rk3,
                        l->rk4,     l->per_contact, l->deck_fraction};
  static const char *const key[] = {
      "time", "omega_max", "central_difference", "certified",    "undamped",
      "rk3",  "rk4",       "per_contact",        "deck_fraction"};
  if (!jsonl) {
    fprintf(f, "%ld", l->step);
    for (int i = 0; i < 2; i++)
      cm__csv_num(f, num[i]);
    fprintf(f, ",%d,%d", l->contacts, l->rows);
    for (int i = 2; i < 9; i++)
      cm__csv_num(f, num[i]);
    fprintf(f, ",%s,%d,%s\n", l->ids, l->matvecs, l->status);
    return;
  }
  fprintf(f, "{\"step\": %ld, \"contacts\": %d, \"rows\": %d", l->step,
          l->contacts, l->rows);
  for (int i = 0; i < 9; i++) {
    if (isfinite(num[i]))
      fprintf(f, ", \"%s\": %.17g", key[i], num[i]);
    else
      fprintf(f, ", \"%s\": null", key[i]);
  }
  fprintf(f, ", \"limiting_ids\": [");
  const char *p = l->ids;
  for (int first = 1; *p;) {
    size_t len = strcspn(p, " ");
    fprintf(f, "%s\"%.*s\"", first ? "" : ", ", (int)len, p);
    first = 0;
    p += len;
    p += *p == ' ';
  }
  fprintf(f, "], \"matvecs\": %d, \"status\": \"%s\"}\n", l->matvecs,
          l->status);
}

/* ---- the chart ----------------------------------------------------------- */

/* Step against time (or timestep): critical, certified, per-contact, and
 * the deck's step; log-scaled h. Writes to f (opened before the work, so
 * that an unwritable path fails at once) and closes it; 1 on success. */
static int cm__svg(FILE *f, const cm__line_t *v, int n, double deck_dt) {
  const double W = 720, H = 400, L = 80, R = 190, T = 30, B = 50;
  int use_t = n > 0 && isfinite(v[0].time_s);
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (int i = 0; i < n; i++) {
    double x = use_t ? v[i].time_s : (double)v[i].step;
    x0 = fmin(x0, x), x1 = fmax(x1, x);
    const double ys[] = {v[i].cd, v[i].cd_cert, v[i].per_contact};
    for (int k = 0; k < 3; k++)
      if (ys[k] > 0)
        y0 = fmin(y0, ys[k]), y1 = fmax(y1, ys[k]);
  }
  if (deck_dt > 0)
    y0 = fmin(y0, deck_dt), y1 = fmax(y1, deck_dt);
  if (!(x1 > x0))
    x0 -= 0.5, x1 += 0.5;
  if (!(y1 > y0))
    y0 = y0 > 0 ? y0 / 2 : 1e-6, y1 = y1 > 0 ? y1 * 2 : 1e-3;
  double ly0 = log10(y0 / 1.25), ly1 = log10(y1 * 1.25);
#define X(x) (L + ((x)-x0) / (x1 - x0) * (W - L - R))
#define Y(y) (H - B - (log10(y) - ly0) / (ly1 - ly0) * (H - T - B))
  fprintf(f,
          "<svg xmlns='http://www.w3.org/2000/svg' width='%g' height='%g' "
          "font-family='sans-serif' font-size='12'>\n"
          "<rect width='100%%' height='100%%' fill='white'/>\n",
          W, H);
  fprintf(f,
          "<text x='%g' y='18' font-size='14'>stable time step over the "
          "run (central difference)</text>\n",
          L);
  for (double e = floor(ly0); e <= ceil(ly1); e++) /* 1, 2, 5 x 10^e */
    for (int m = 1; m <= 5; m += m == 1 ? 1 : 3) {
      double y = m * pow(10, e);
      if (log10(y) < ly0 || log10(y) > ly1)
        continue;
      fprintf(f,
              "<line x1='%g' y1='%.2f' x2='%g' y2='%.2f' stroke='#ddd'/>"
              "<text x='%g' y='%.2f' text-anchor='end'>%ge%g</text>\n",
              L, Y(y), W - R, Y(y), L - 6, Y(y) + 4, (double)m, e);
    }
  fprintf(f, "<line x1='%g' y1='%g' x2='%g' y2='%g' stroke='black'/>\n", L,
          H - B, W - R, H - B);
  fprintf(f,
          "<text x='%g' y='%g' text-anchor='start'>%.4g</text>"
          "<text x='%g' y='%g' text-anchor='end'>%.4g</text>"
          "<text x='%g' y='%g' text-anchor='middle'>%s</text>\n",
          L, H - B + 16, x0, W - R, H - B + 16, x1, (L + W - R) / 2, H - 12,
          use_t ? "time, s" : "timestep");
  fprintf(f,
          "<text x='16' y='%g' transform='rotate(-90 16 %g)' "
          "text-anchor='middle'>step h, s</text>\n",
          (T + H - B) / 2, (T + H - B) / 2);
  static const char *const color[] = {"#d62728", "#1f77b4", "#7f7f7f"};
  static const char *const label[] = {"critical", "certified",
                                      "per-contact (unsafe)"};
  for (int k = 0; k < 3; k++) {
    fprintf(f,
            "<polyline fill='none' stroke='%s' stroke-width='2'%s "
            "points='",
            color[k], k == 2 ? " stroke-dasharray='5,4'" : "");
    for (int i = 0; i < n; i++) {
      double y = k == 0 ? v[i].cd : k == 1 ? v[i].cd_cert : v[i].per_contact;
      double x = use_t ? v[i].time_s : (double)v[i].step;
      if (y > 0)
        fprintf(f, "%.2f,%.2f ", X(x), Y(y));
    }
    fprintf(f,
            "'/>\n<line x1='%g' y1='%g' x2='%g' y2='%g' stroke='%s' "
            "stroke-width='2'%s/><text x='%g' y='%g'>%s</text>\n",
            W - R + 10, T + 10 + 18.0 * k, W - R + 30, T + 10 + 18.0 * k,
            color[k], k == 2 ? " stroke-dasharray='5,4'" : "", W - R + 36,
            T + 14 + 18.0 * k, label[k]);
  }
  if (deck_dt > 0)
    fprintf(f,
            "<line x1='%g' y1='%g' x2='%g' y2='%g' stroke='#2ca02c' "
            "stroke-width='2'/><line x1='%g' y1='%g' x2='%g' y2='%g' "
            "stroke='#2ca02c' stroke-width='2'/><text x='%g' y='%g'>the "
            "deck's step</text>\n",
            L, Y(deck_dt), W - R, Y(deck_dt), W - R + 10, T + 64, W - R + 30,
            T + 64, W - R + 36, T + 68);
#undef X
#undef Y
  fprintf(f, "</svg>\n");
  return fclose(f) == 0;
}

/* ---- the command ------------------------------------------------------------
 */

typedef struct {
  cm_dump_options_t dump; /* import options (the deck's laws and walls) */
  cm_options_t an;        /* analysis options */
  const char *deck, *out, *svg;
  int jsonl, cold, quiet;
} cm__track_opts_t;

static int cm__track_fail(const cm_context_t *ctx, int st) {
  fprintf(stderr, "cmodes track: %s\n",
          ctx->message[0] ? ctx->message : cm_status_message(st));
  return cm_status_exit(st);
}

enum {
  O_DECK = 256,
  O_K,
  O_YOUNG,
  O_POISSON,
  O_DENSITY,
  O_RADIUS,
  O_DIM,
  O_TOUCH,
  O_PLANE,
  O_CYL,
  O_PERIODIC,
  O_TOL,
  O_COLD,
  O_WARM,
  O_THREADS,
  O_FORMAT,
  O_SVG
};

/* The import options (the dump's laws, walls and box): 1 if valid, -1 if
 * c is not one of them. */
static int cm__track_dump_opt(int c, const char *optarg, cm__track_opts_t *o,
                              cm_context_t *ctx) {
  static const char cmd[] = "track";
  int ok = 1;
  switch (c) {
  case O_K:
    ok = cm__arg_num(cmd, "--k", optarg, &o->dump.k);
    break;
  case O_YOUNG:
    ok = cm__arg_num(cmd, "--young", optarg, &o->dump.young);
    break;
  case O_POISSON:
    ok = cm__arg_num(cmd, "--poisson", optarg, &o->dump.poisson);
    break;
  case O_DENSITY:
    ok = cm__arg_num(cmd, "--density", optarg, &o->dump.density);
    break;
  case O_RADIUS:
    ok = cm__arg_num(cmd, "--radius", optarg, &o->dump.radius);
    break;
  case O_TOUCH:
    ok = cm__arg_num(cmd, "--touch-tol", optarg, &o->dump.touch_tol);
    break;
  case O_DIM:
    ok = cm__arg_int(cmd, "--dim", optarg, &o->dump.dim);
    if (ok && o->dump.dim != 2 && o->dump.dim != 3) {
      fprintf(stderr, "cmodes track: --dim: '%s' is not 2 or 3\n", optarg);
      ok = 0;
    }
    break;
  case O_PLANE:
    ok = !cm_dump_options_add_plane(ctx, &o->dump, optarg);
    if (!ok)
      fprintf(stderr, "cmodes track: --wall-plane: %s\n", ctx->message);
    break;
  case O_CYL:
    ok = !cm_dump_options_set_cylinder(ctx, &o->dump, optarg);
    if (!ok)
      fprintf(stderr, "cmodes track: --wall-zcylinder: %s\n", ctx->message);
    break;
  case O_PERIODIC:
    if (!strcmp(optarg, "image"))
      o->dump.periodic = CM_DUMP_PERIODIC_IMAGE, o->dump.periodic_ignore = 0;
    else if (!strcmp(optarg, "drop") || !strcmp(optarg, "ignore"))
      o->dump.periodic = CM_DUMP_PERIODIC_DROP, o->dump.periodic_ignore = 1;
    else if (!strcmp(optarg, "error"))
      o->dump.periodic = CM_DUMP_PERIODIC_ERROR, o->dump.periodic_ignore = 0;
    else {
      fprintf(stderr,
              "cmodes track: --periodic: '%s' is not image, drop "
              "or error\n",
              optarg);
      ok = 0;
    }
    break;
  default:
    return -1;
  }
  return ok;
}

static int cm__track_parse(int argc, char **argv, cm__track_opts_t *o,
                           cm_context_t *ctx) {
  static const struct option longopts[] = {
      {"deck", required_argument, 0, O_DECK},
      {"k", required_argument, 0, O_K},
      {"young", required_argument, 0, O_YOUNG},
      {"poisson", required_argument, 0, O_POISSON},
      {"density", required_argument, 0, O_DENSITY},
      {"radius", required_argument, 0, O_RADIUS},
      {"dim", required_argument, 0, O_DIM},
      {"touch-tol", required_argument, 0, O_TOUCH},
      {"wall-plane", required_argument, 0, O_PLANE},
      {"wall-zcylinder", required_argument, 0, O_CYL},
      {"periodic", required_argument, 0, O_PERIODIC},
      {"modes", required_argument, 0, 'k'},
      {"tol", required_argument, 0, O_TOL},
      {"cold", no_argument, 0, O_COLD},
      {"warm", no_argument, 0, O_WARM},
      {"threads", required_argument, 0, O_THREADS},
      {"output", required_argument, 0, 'o'},
      {"format", required_argument, 0, O_FORMAT},
      {"svg", required_argument, 0, O_SVG},
      {"quiet", no_argument, 0, 'q'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  static const char cmd[] = "track";
  int c, ok = 1;
  optind = 1;
  while (ok && (c = getopt_long(argc, argv, "k:o:qh", longopts, NULL)) != -1) {
    switch (c) {
    case O_DECK:
      o->deck = optarg;
      break;
    case 'k':
      ok = cm__arg_int(cmd, "--modes", optarg, &o->an.modes);
      break;
    case O_TOL:
      ok = cm__arg_num(cmd, "--tol", optarg, &o->an.tol);
      break;
    case O_COLD:
      o->cold = 1;
      break;
    case O_WARM:
      o->cold = 0;
      break;
    case O_THREADS:
      ok = cm__arg_threads(cmd, optarg, &ctx->threads);
      break;
    case 'o':
      o->out = optarg;
      break;
    case O_FORMAT:
      if (!strcmp(optarg, "jsonl"))
        o->jsonl = 1;
      else if (strcmp(optarg, "csv")) {
        fprintf(stderr, "cmodes track: --format: '%s' is not csv or jsonl\n",
                optarg);
        ok = 0;
      }
      break;
    case O_SVG:
      o->svg = optarg;
      break;
    case 'q':
      o->quiet = 1;
      break;
    case 'h':
      cm__track_usage(stdout);
      exit(0);
    default:
      ok = cm__track_dump_opt(c, optarg, o, ctx) > 0;
      break;
    }
  }
  if (ok && optind >= argc) {
    fprintf(stderr, "cmodes track: no dump given\n");
    ok = 0;
  }
  if (!ok)
    fprintf(stderr, "cmodes track: see cmodes track --help\n");
  return ok ? CM_OK : CM_USAGE;
}

/* Imports one snapshot; *s owned by the caller. */
static int cm__track_import(cm_context_t *ctx, const cm__track_opts_t *o,
                            const cm__snap_t *sn, cm_scene_t **s) {
  cm_dump_options_t d = o->dump;
  d.timestep = sn->step;
  d.wall_bodies = 1; /* named walls: the warm start maps contacts by name */
  cm_dump_t *dump = NULL;
  int st = cm_dump_read(ctx, sn->path, &d, &dump);
  if (!st)
    st = cm_dump_to_scene(ctx, dump, &d, s);
  cm_dump_destroy(&dump);
  return st;
}

/* Imports and analyses snapshot sn warm-started from *kv, which it then
 * replaces by this snapshot's keyed dominant vector. */
static int cm__track_step(cm_context_t *ctx, const cm__track_opts_t *o,
                          const cm__snap_t *sn, cm__kv_t **kv, int *nkv,
                          cm__line_t *line) {
  cm_scene_t *s = NULL;
  cm_report_t *r = NULL;
  int st = cm__track_import(ctx, o, sn, &s);
  double *warm = !st && !o->cold ? cm__warm(s, *kv, *nkv) : NULL;
  if (!st) {
    cm_options_t an = o->an;
    an.warm_start = warm;
    st = cm_analyze(ctx, s, &an, &r);
    if (st == CM_NOT_CONVERGED) {
      fprintf(stderr, "cmodes track: timestep %ld: %s\n", sn->step,
              ctx->message);
      cm_context_clear(ctx);
      st = CM_OK;
    }
  }
  if (!st) {
    cm__fill_line(s, r, sn->step, line);
    free(*kv);
    *kv = cm__keyed(s, r, nkv);
    if (!*kv)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  } else {
    char msg[sizeof ctx->message + 320];
    snprintf(msg, sizeof msg, "%.255s (timestep %ld): %s", sn->path, sn->step,
             ctx->message);
    memcpy(ctx->message, msg, sizeof ctx->message - 1);
    ctx->message[sizeof ctx->message - 1] = 0;
  }
  free(warm);
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
  return st;
}

static void cm__progress(int i, int n, long step, double h) {
  fprintf(stderr, "\rcmodes track: [%-30.*s] %d/%d  step %ld  h %.4g s   ",
          n ? 30 * (i + 1) / n : 30, "##############################", i + 1, n,
          step, h);
  if (i + 1 == n)
    fputc('\n', stderr);
}

int cm__cmd_track(int argc, char **argv) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm__track_opts_t o = {0};
  o.cold = 1; /* the bound needs a Gaussian start (docs/cli.md) */
  cm_dump_options_init(&o.dump);
  o.dump.periodic = CM_DUMP_PERIODIC_IMAGE;
  cm_options_init(&o.an);
  if (cm__track_parse(argc, argv, &o, &ctx))
    return cm_status_exit(CM_USAGE);
  cm_lammps_deck_t *deck = NULL;
  int st = CM_OK;
  if (o.deck) {
    st = cm_lammps_deck_read(&ctx, o.deck, &deck);
    if (!st)
      st = cm_lammps_deck_apply(&ctx, deck, &o.dump);
  } else if (!(o.dump.k > 0) && !(o.dump.young > 0)) {
    fprintf(stderr, "cmodes track: give --deck IN, or --k K or --young E "
                    "--poisson NU for the contacts\n");
    return cm_status_exit(CM_USAGE);
  }
  cm__snap_t *snaps = NULL;
  int n = 0, dups = 0;
  if (!st)
    st = cm__snapshots(&ctx, argv + optind, argc - optind, &snaps, &n, &dups);
  if (st) {
    cm_lammps_deck_destroy(&deck);
    return cm__track_fail(&ctx, st);
  }
  if (dups && !o.quiet)
    fprintf(stderr,
            "cmodes track: %d timestep(s) found in two files: the "
            "first file's snapshot is used\n",
            dups);
  FILE *f = o.out ? fopen(o.out, "w") : stdout;
  const char *unwritable = f ? NULL : o.out;
  /* the chart's file too, before the work: a path that cannot be written
   * fails now, not after every snapshot */
  FILE *svg = !unwritable && o.svg ? fopen(o.svg, "w") : NULL;
  if (!unwritable && o.svg && !svg)
    unwritable = o.svg;
  int why = errno; /* the failed fopen's, when a path is unwritable */
  cm__line_t *lines = unwritable ? NULL : calloc((size_t)n + 1, sizeof *lines);
  if (unwritable || !lines) {
    fprintf(stderr, "cmodes track: cannot write %s: %s\n",
            unwritable ? unwritable : "-", strerror(unwritable ? why : ENOMEM));
    if (f && f != stdout)
      fclose(f);
    if (svg)
      fclose(svg), remove(o.svg);
    free(snaps), free(lines);
    cm_lammps_deck_destroy(&deck);
    return cm_status_exit(CM_IO);
  }
  if (!o.jsonl)
    fprintf(f, "step,time_s,omega_max,contacts,rows,central_difference_s,"
               "certified_s,undamped_s,rk3_s,rk4_s,per_contact_s,"
               "deck_fraction,limiting_ids,matvecs,status\n");
  int tty = !o.quiet && isatty(2);
  long matvecs = 0;
  cm__kv_t *kv = NULL;
  int nkv = 0, done = 0;
  cm_workspace_keep(CM__TRACK_KEEP);
  for (int i = 0; i < n && !st; i++, done++) {
    st = cm__track_step(&ctx, &o, &snaps[i], &kv, &nkv, &lines[i]);
    if (st)
      break;
    cm__write_line(f, o.jsonl, &lines[i]);
    fflush(f);
    matvecs += lines[i].matvecs;
    if (tty)
      cm__progress(i, n, lines[i].step, lines[i].cd);
  }
  if (!st && !o.quiet)
    fprintf(stderr,
            "cmodes track: %d snapshots, %ld matrix-vector products "
            "(%s)\n",
            done, matvecs, o.cold ? "cold starts" : "warm starts");
  errno = 0;     /* what a failing write below leaves says why */
  if (svg && st) /* no chart of a failed run: its empty file goes */
    fclose(svg), remove(o.svg);
  else if (svg && !cm__svg(svg, lines, done,
                           deck && deck->model ? deck->model->timestep_s : 0)) {
    st = CM_IO; /* said once, by cm__track_fail */
    snprintf(ctx.message, sizeof ctx.message, "cannot write %s: %s", o.svg,
             errno ? strerror(errno) : "a write failed (disk full?)");
  }
  cm_workspace_keep(0);
  free(kv), free(lines), free(snaps);
  cm_lammps_deck_destroy(&deck);
  /* a write error (full disk) fails the run; stdout: main.c checks */
  int bad = f != stdout && (ferror(f) | (fclose(f) != 0));
  if (bad && !st) {
    st = CM_IO;
    snprintf(ctx.message, sizeof ctx.message, "cannot write %s: %s", o.out,
             errno ? strerror(errno) : "a write failed (disk full?)");
  }
  return st ? cm__track_fail(&ctx, st) : 0;
}
