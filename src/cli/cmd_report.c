/* cmd_report.c: `cmodes report SCENE... -o FILE.html`: the report as one
 * self-contained HTML page (a campaign page over several scenes), and the
 * mode fields as a LAMMPS-style dump (--dump) and VTK polydata (--vtk).
 * Not for the text or JSON report (cmd_analyze.c). */
#include "args.h"
#include "cli.h"
#include "cmodes.h"
#include "internal.h"
#include "io/fields_io.h"
#include "report/report_html.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void cm__report_usage(FILE *f) {
  fprintf(
      f,
      "usage: cmodes report [options] SCENE... -o FILE.html\n"
      "       cmodes report [options] --matrices MANIFEST -o FILE.html\n"
      "       cmodes report --track SERIES.jsonl -o FILE.html\n"
      "\n"
      "One self-contained HTML page (no network, no external files): the\n"
      "stable steps, the spectrum, the scene drawn with each contact's share\n"
      "of the top mode, which contacts to soften to reach a target step\n"
      "(planned from d lambda/d k_c and confirmed by re-solving), components,\n"
      "solver statistics. Several scenes give a campaign page: a sortable\n"
      "table, then one section per scene.\n\n"
      "  -o, --out FILE          the HTML page (required unless --dump/--vtk)\n"
      "      --title T           page title (default: the scene, or 'cmodes\n"
      "                          campaign')\n"
      "      --target-step H     step the softening plan aims at, s (default:\n"
      "                          the deck step when it is unstable, else 1.1\n"
      "                          times the critical step)\n"
      "      --no-soften         no softening plan (no re-solves)\n"
      "      --dump FILE         top modes as a LAMMPS-style dump, one frame\n"
      "                          per mode (one scene only)\n"
      "      --vtk FILE          contacts as VTK legacy polydata with their\n"
      "                          shares as cell data (one scene only)\n"
      "  -k, --modes K           top modes (default 6)\n"
      "      --tol T             Lanczos tolerance (1e-10)\n"
      "      --method M          auto | lanczos | arpack | dense\n"
      "      --threads N         OpenMP threads (default: all)\n"
      "      --matrices          the input is a Matrix Market manifest\n"
      "      --track             the input is the output of 'cmodes track\n"
      "                          --format jsonl': the steps over the run\n"
      "  -h, --help              this help\n"
      "\nProgress goes to standard error when it is a terminal.\n"
      "exit codes: 0 ok, 2 usage, 3 invalid input, 4 numerical failure,\n"
      "            5 not converged (partial report written), 1 other\n");
}

typedef struct {
  cm_scene_t *scene;   /* NULL for matrices */
  cm_system_t *sys;    /* matrices only */
  cm_report_t *report; /* the analysis */
  cm__fields_t fields; /* full fields */
  cm__soften_t soften; /* softening plan */
} cm__rep_item_t;

static void cm__item_free(cm__rep_item_t *it) {
  cm_report_destroy(&it->report);
  cm__fields_free(&it->fields);
  cm__soften_free(&it->soften);
  cm_scene_destroy(&it->scene);
  cm_system_destroy(&it->sys);
}

/* Reads and analyses one input; prints the failure and returns its status. */
static int cm__report_one(cm_context_t *ctx, const char *path, int matrices,
                          const cm_options_t *opts, int soften, double target,
                          cm__rep_item_t *it) {
  double t0 = cm__now();
  int st = matrices ? cm_system_read_manifest(ctx, path, &it->sys)
                    : cm_scene_read_file(ctx, path, &it->scene);
  double t_parse = cm__now() - t0;
  it->fields.want = opts->modes;
  if (!st)
    st = matrices ? cm__analyze_system_fields(ctx, it->sys, NULL, opts,
                                              &it->report, &it->fields)
                  : cm__analyze_fields(ctx, it->scene, opts, &it->report,
                                       &it->fields);
  if (st >= 0 && it->report)
    it->report->t_parse = t_parse;
  if (st >= 0 && soften && it->scene) {
    int st2 = cm__soften_plan(ctx, it->scene, opts, it->report, &it->fields,
                              target, &it->soften);
    if (st2 < 0)
      st = st2;
  }
  if (st < 0)
    fprintf(stderr, "cmodes report: %s: %s: %s\n", path, cm_status_message(st),
            ctx->message[0] ? ctx->message : "");
  return st;
}

static int cm__write_exports(cm_context_t *ctx, const cm__rep_item_t *it,
                             const char *dump, const char *vtk) {
  const char *paths[2] = {dump, vtk};
  for (int k = 0; k < 2; k++) {
    if (!paths[k])
      continue;
    if (!it->scene) {
      fprintf(stderr, "cmodes report: --%s needs a scene, not matrices\n",
              k ? "vtk" : "dump");
      return CM_USAGE;
    }
    FILE *f = fopen(paths[k], "w");
    if (!f) {
      fprintf(stderr, "cmodes report: cannot write %s: %s\n", paths[k],
              strerror(errno));
      return CM_IO;
    }
    int st =
        k ? cm__fields_write_vtk(ctx, f, it->scene, it->report, &it->fields)
          : cm__fields_write_dump(ctx, f, it->scene, it->report, &it->fields);
    if ((ferror(f) | (fclose(f) != 0)) && !st)
      st = CM_IO;
    if (st) {
      fprintf(stderr, "cmodes report: %s: %s\n", paths[k],
              cm_status_message(st));
      return st;
    }
  }
  return CM_OK;
}

size_t cm__input_limit(void); /* core/util.c */

/* --track: the page of a `cmodes track --format jsonl` file. */
static int cm__report_track(cm_context_t *ctx, const char *path,
                            const char *out, const char *title) {
  if (!out) {
    fprintf(stderr, "cmodes report: --track needs -o FILE.html\n");
    return cm_status_exit(CM_USAGE);
  }
  FILE *in = strcmp(path, "-") ? cm__fopen_input(path, "rb") : stdin;
  char *text = NULL;
  size_t len = 0, cap = 0, got;
  char buf[65536];
  size_t limit = cm__input_limit();
  while (in && (got = fread(buf, 1, sizeof buf, in)) > 0) {
    if (len + got > limit) { /* /dev/zero, an endless FIFO */
      free(text);
      if (in != stdin)
        fclose(in);
      fprintf(stderr,
              "cmodes report: %s: more than %zu bytes of input, the input "
              "limit (physical memory / 4 unless CMODES_MAX_INPUT=BYTES is "
              "set): an endless stream? Set CMODES_MAX_INPUT to read a "
              "larger input\n",
              path, limit);
      return cm_status_exit(CM_LIMIT);
    }
    if (len + got + 1 > cap) {
      cap = 2 * (len + got + 1);
      char *t = realloc(text, cap);
      if (!t) {
        free(text);
        fprintf(stderr, "cmodes report: out of memory\n");
        return cm_status_exit(CM_NOMEM);
      }
      text = t;
    }
    memcpy(text + len, buf, got);
    len += got;
  }
  if (!in) {
    fprintf(stderr, "cmodes report: cannot read %s: %s\n", path,
            strerror(errno));
    return cm_status_exit(CM_IO);
  }
  if (in != stdin)
    fclose(in);
  FILE *f = fopen(out, "w");
  int st = f ? cm__report_track_html(ctx, f, text ? text : "", len,
                                     title ? title : path)
             : CM_IO;
  if (f && (ferror(f) | (fclose(f) != 0)) && !st)
    st = CM_IO;
  free(text);
  if (st)
    fprintf(stderr, "cmodes report: %s: %s%s%s\n", path, cm_status_message(st),
            ctx->message[0] ? ": " : "", ctx->message);
  return cm_status_exit(st);
}

enum {
  O_TITLE = 256,
  O_TARGET,
  O_NOSOFT,
  O_DUMP,
  O_VTK,
  O_TOL,
  O_METHOD,
  O_THREADS,
  O_MATRICES,
  O_TRACK
};

/* The command line of report. */
typedef struct {
  cm_options_t opts;
  const char *out, *title, *dump, *vtk;
  double target;
  int soften, matrices, track, threads;
} cm__rargs_t;

/* One option: 1 if valid. */
static int cm__report_opt(int c, const char *arg, cm__rargs_t *a) {
  switch (c) {
  case 'o':
    a->out = arg;
    return 1;
  case O_TITLE:
    a->title = arg;
    return 1;
  case O_TARGET:
    return cm__arg_num("report", "--target-step", arg, &a->target);
  case O_NOSOFT:
    a->soften = 0;
    return 1;
  case O_DUMP:
    a->dump = arg;
    return 1;
  case O_VTK:
    a->vtk = arg;
    return 1;
  case 'k':
    return cm__arg_int("report", "--modes", arg, &a->opts.modes);
  case O_TOL:
    return cm__arg_num("report", "--tol", arg, &a->opts.tol);
  case O_METHOD:
    if ((a->opts.method = cm__method_parse(arg)) < 0) {
      fprintf(stderr,
              "cmodes report: --method: '%s' is not " CM__METHOD_NAMES "\n",
              arg);
      return 0;
    }
    return 1;
  case O_THREADS:
    return cm__arg_threads("report", arg, &a->threads);
  case O_MATRICES:
    a->matrices = 1;
    return 1;
  case O_TRACK:
    a->track = 1;
    return 1;
  default:
    return 0;
  }
}

/* Parses the command line: 0, 1 after --help, or a usage error (exit
 * status) after its message. */
static int cm__report_args(int argc, char **argv, cm__rargs_t *a) {
  static const struct option longopts[] = {
      {"out", required_argument, 0, 'o'},
      {"title", required_argument, 0, O_TITLE},
      {"target-step", required_argument, 0, O_TARGET},
      {"no-soften", no_argument, 0, O_NOSOFT},
      {"dump", required_argument, 0, O_DUMP},
      {"vtk", required_argument, 0, O_VTK},
      {"modes", required_argument, 0, 'k'},
      {"tol", required_argument, 0, O_TOL},
      {"method", required_argument, 0, O_METHOD},
      {"threads", required_argument, 0, O_THREADS},
      {"matrices", no_argument, 0, O_MATRICES},
      {"track", no_argument, 0, O_TRACK},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int ok = 1, c;
  optind = 1;
  while (ok && (c = getopt_long(argc, argv, "o:k:h", longopts, NULL)) != -1) {
    if (c == 'h') {
      cm__report_usage(stdout);
      return 1;
    }
    ok = cm__report_opt(c, optarg, a);
  }
  int n = argc - optind;
  if (ok && n < 1) {
    fprintf(stderr, "cmodes report: expected at least one scene\n");
    ok = 0;
  }
  if (ok && !a->out && !a->dump && !a->vtk) {
    fprintf(stderr, "cmodes report: expected -o FILE.html (or --dump/--vtk)\n");
    ok = 0;
  }
  if (ok && (a->dump || a->vtk) && n != 1) {
    fprintf(stderr, "cmodes report: --dump and --vtk take one scene\n");
    ok = 0;
  }
  if (!ok) {
    fprintf(stderr, "try 'cmodes report --help'\n");
    return cm_status_exit(CM_USAGE);
  }
  return 0;
}

/* Analyses the n scenes of paths into items and html; the worst status. */
static int cm__report_all(cm_context_t *ctx, const cm__rargs_t *a, char **paths,
                          int n, cm__rep_item_t *items, cm__html_item_t *html) {
  int tty = isatty(2), st = CM_OK;
  double t0 = cm__now();
  for (int i = 0; i < n; i++) {
    const char *path = paths[i];
    if (tty)
      fprintf(stderr, "\r\033[Kcmodes report: [%d/%d] %s (%.1f s)", i + 1, n,
              path, cm__now() - t0);
    cm_context_clear(ctx);
    int s1 = cm__report_one(ctx, path, a->matrices, &a->opts, a->soften,
                            a->target, &items[i]);
    if (s1 < 0) {
      st = s1;
      break;
    }
    if (s1 == CM_NOT_CONVERGED)
      st = s1;
    const char *nm =
        items[i].scene && items[i].scene->name ? items[i].scene->name : NULL;
    html[i] = (cm__html_item_t){
        nm ? nm : path, items[i].scene, items[i].report, &items[i].fields,
        a->soften && items[i].scene ? &items[i].soften : NULL};
  }
  if (tty)
    fprintf(stderr, "\r\033[Kcmodes report: %d scene%s in %.1f s\n", n,
            n == 1 ? "" : "s", cm__now() - t0);
  return st;
}

/* The page (-o) and the exports (--dump, --vtk). */
static int cm__report_write(cm_context_t *ctx, const cm__rargs_t *a, int n,
                            cm__rep_item_t *items, cm__html_item_t *html) {
  int st = CM_OK;
  if (a->out) {
    FILE *f = fopen(a->out, "w");
    if (!f) {
      fprintf(stderr, "cmodes report: cannot write %s: %s\n", a->out,
              strerror(errno));
      st = CM_IO;
    } else {
      const char *t = a->title ? a->title
                      : n == 1 ? html[0].title
                               : "cmodes campaign";
      int s2 = cm__report_write_html(f, html, n, t);
      if ((ferror(f) | (fclose(f) != 0)) || s2) {
        fprintf(stderr, "cmodes report: writing %s failed\n", a->out);
        st = CM_IO;
      }
    }
  }
  if (st >= 0 && (a->dump || a->vtk)) {
    int s3 = cm__write_exports(ctx, &items[0], a->dump, a->vtk);
    if (s3)
      st = s3;
  }
  return st;
}

int cm__cmd_report(int argc, char **argv) {
  cm__rargs_t a;
  memset(&a, 0, sizeof a);
  cm_options_init(&a.opts);
  a.soften = 1;
  cm_context_t ctx;
  cm_context_init(&ctx);
  int code = cm__report_args(argc, argv, &a);
  if (code)
    return code == 1 ? 0 : code;
  ctx.threads = a.threads;
  int n = argc - optind;
  cm__cli_heap(); /* the softening plan's re-solves reuse the pages */
  if (a.track)
    return cm__report_track(&ctx, argv[optind], a.out, a.title);
  /* ---- analyse every scene ---- */
  cm__rep_item_t *items = calloc((size_t)n, sizeof *items);
  cm__html_item_t *html = calloc((size_t)n, sizeof *html);
  if (!items || !html) {
    free(items), free(html);
    return cm_status_exit(CM_NOMEM);
  }
  int st = cm__report_all(&ctx, &a, argv + optind, n, items, html);
  /* ---- write ---- */
  if (st >= 0) {
    int s2 = cm__report_write(&ctx, &a, n, items, html);
    if (s2)
      st = s2;
  }
  for (int i = 0; i < n; i++)
    cm__item_free(&items[i]);
  free(items), free(html);
  return cm_status_exit(st);
}
