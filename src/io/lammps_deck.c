/* lammps_deck.c: reads a LAMMPS or LIGGGHTS input deck for what a frozen
 * contact scene needs: units (si), dimension, boundary, the box
 * (region + create_box), the timestep, the granular pair style and its
 * coefficients per type pair, and the walls of fix wall/gran with their
 * own laws. Lines about running a simulation (thermo, dump, run, fix
 * nve/sphere, gravity, pour, ...) are skipped; anything that would change
 * the contact model and that cmodes cannot represent is an error naming
 * the deck's file and line. The conventions follow LAMMPS 29 Sep 2021
 * (Debian's lmp) and LIGGGHTS-PUBLIC 3.x; docs/importers.md lists them.
 * Not for the text layer (lammps_vars.c) nor the formulas (contact_law.c).
 */
#include "lammps_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CM__T CM_LAW_MAX_TYPES
#define CM__MAX_REGIONS 64
#define CM__PAIR_STYLES                                                        \
  "gran/hooke, gran/hooke/history, gran/hertz/history, granular (LAMMPS), "    \
  "gran model hertz|hooke (LIGGGHTS)"

/* One wall while reading (its final index is known only at the end). */
typedef struct {
  int cylinder;         /* 0 plane, 1 z-cylinder */
  double p[6];          /* plane: point, inward normal */
  double radius, c[2];  /* cylinder */
  cm_contact_law_t law; /* its law (LAMMPS) */
  int type;             /* LIGGGHTS: the wall's material type */
  char fix[32];         /* fix ID */
  long line;
} cm__wall_t;

#define CM__MAX_UNSAFE 16 /* fixes of cm__fix_unsafe in effect at once */

/* A fix on every particle of a group of types, in effect until unfixed:
 * fix viscous and langevin (a dashpot alone, cm_contact_model_t.drag and
 * drag_rate) or spring/self (a tether, cm_contact_model_t.tether). */
typedef struct {
  char id[32];
  double gamma[CM__T + 1];     /* viscous: N s/m */
  double rate[CM__T + 1];      /* langevin: gamma / m = 1 / (damp ratio) */
  double tether[CM__T + 1][3]; /* spring/self: K on x, y, z, N/m */
} cm__pfix_t;

/* Everything read so far that is resolved only at the end. */
typedef struct {
  int units_si;                  /* units si seen */
  int units_line_seen;           /* any units command */
  int pair;                      /* CM_LAW_* of the pair style, 0 none */
  long pair_line;                /* its line */
  cm_contact_law_t gran;         /* gran/ styles: the law of pair_style */
  int coeff_seen;                /* pair_coeff seen */
  int set[CM__T + 1][CM__T + 1]; /* granular: pair_coeff set i j */
  double emod[CM__T + 1], pois[CM__T + 1]; /* granular: E, nu of i i */
  int ntypes;                              /* from create_box, else CM__T */
  int have_dt;
  /* LIGGGHTS */
  cm_contact_law_t lig; /* model, tangential, switches */
  double young[CM__T + 1], nu[CM__T + 1];
  double rest[CM__T + 1][CM__T + 1], fric[CM__T + 1][CM__T + 1];
  int have_young, have_nu, have_rest, have_fric, have_charvel;
  /* walls and regions */
  cm__wall_t walls[CM_DUMP_MAX_PLANES + 2];
  int nwalls;
  char region_id[CM__MAX_REGIONS][32];
  double region_box[CM__MAX_REGIONS][6];
  int nregions;
  /* fixes in effect whose forces the contact model lacks and that would
   * make its step unsafe (cm__fix_unsafe): refused at the deck's end
   * unless unfixed */
  struct {
    char id[32], style[64], file[160];
    long line;
  } unsafe[CM__MAX_UNSAFE];
  int nunsafe;
  /* fixes on every particle in effect, modelled as contacts with the
   * world (cm__pfix_t) */
  cm__pfix_t drag[CM__MAX_UNSAFE];
  int ndrag;
  /* groups (group ID type ...): the types of each; opaque: built some
   * other way (region, id, ...), so its atoms are unknown */
  struct {
    char id[32];
    unsigned char type[CM__T + 1];
    int opaque;
  } group[CM__MAX_REGIONS];
  int ngroups;
} cm__dst_t;

#define ST(r) ((cm__dst_t *)(r)->priv)

/* ---- small parsers ---------------------------------------------------------
 */

static int cm__num(cm__drd_t *r, const char *cmd, const char *what,
                   const char *s, double *v) {
  if (!s)
    return CM__DECKERR(r, CM_PARSE, "%s: %s is missing", cmd, what);
  if (!cm__deck_number(s, v))
    return CM__DECKERR(r, CM_PARSE, "%s: %s '%s' is not a number", cmd, what,
                       s);
  return CM_OK;
}

/* A type range "*", "n", "n*", "*n", "m*n" into [lo, hi] within 1..nt. */
static int cm__range(cm__drd_t *r, const char *s, int nt, int *lo, int *hi) {
  const char *star = strchr(s, '*');
  char *end;
  if (!star) {
    long v = strtol(s, &end, 10);
    *lo = *hi = (int)v;
    if (end == s || *end || v < 1 || v > nt)
      goto bad;
    return CM_OK;
  }
  *lo = 1, *hi = nt;
  if (star > s) {
    *lo = (int)strtol(s, &end, 10);
    if (end != star)
      goto bad;
  }
  if (star[1]) {
    *hi = (int)strtol(star + 1, &end, 10);
    if (*end)
      goto bad;
  }
  if (*lo < 1 || *hi > nt || *lo > *hi)
    goto bad;
  return CM_OK;
bad:
  return CM__DECKERR(r, CM_PARSE,
                     "type range '%s' is not within 1..%d (the types of "
                     "create_box; cmodes reads at most %d)",
                     s, nt, CM__T);
}

/* Strips an accelerator suffix (/omp, /kk, /gpu, /intel, /opt). */
static void cm__unsuffix(char *s) {
  static const char *const suf[] = {"/omp", "/kk", "/gpu", "/intel", "/opt"};
  size_t n = strlen(s);
  for (size_t k = 0; k < sizeof suf / sizeof suf[0]; k++) {
    size_t m = strlen(suf[k]);
    if (n > m && !strcmp(s + n - m, suf[k]))
      s[n - m] = 0;
  }
}

/* ---- the gran/ styles: Kn Kt gamma_n gamma_t xmu dampflag
 * -------------------- */

/* Parses the six parameters at argv[0..5] of style (CM_LAW_GRAN_*), as
 * pair_gran_hooke_history.cpp settings() and fix_wall_gran.cpp do. */
static int cm__gran_params(cm__drd_t *r, const char *cmd, int style, int argc,
                           char **argv, cm_contact_law_t *L) {
  int st;
  double kt = 0, gt = 0, damp = 0;
  if (argc < 6)
    return CM__DECKERR(r, CM_PARSE,
                       "%s: expected Kn Kt gamma_n gamma_t xmu dampflag "
                       "(Kt and gamma_t may be NULL)",
                       cmd);
  memset(L, 0, sizeof *L);
  L->style = style;
  if ((st = cm__num(r, cmd, "Kn", argv[0], &L->kn)) ||
      (strcmp(argv[1], "NULL") && (st = cm__num(r, cmd, "Kt", argv[1], &kt))) ||
      (st = cm__num(r, cmd, "gamma_n", argv[2], &L->gamma_n)) ||
      (strcmp(argv[3], "NULL") &&
       (st = cm__num(r, cmd, "gamma_t", argv[3], &gt))) ||
      (st = cm__num(r, cmd, "xmu", argv[4], &L->mu)) ||
      (st = cm__num(r, cmd, "dampflag", argv[5], &damp)))
    return st;
  L->kt = strcmp(argv[1], "NULL") ? kt : 2.0 / 7.0 * L->kn; /* NULL: 2/7 Kn */
  L->gamma_t = strcmp(argv[3], "NULL") ? gt : 0.5 * L->gamma_n;
  if (!(L->kn > 0))
    return CM__DECKERR(r, CM_PARSE,
                       "%s: Kn %g: the normal stiffness must be > 0 (a "
                       "contact without it has no penalty mode)",
                       cmd, L->kn);
  if (kt < 0 || L->gamma_n < 0 || gt < 0)
    return CM__DECKERR(r, CM_PARSE,
                       "%s: negative %s (%g): LAMMPS refuses it too "
                       "(Illegal pair_style command); Kt, gamma_n and "
                       "gamma_t must be >= 0",
                       cmd,
                       kt < 0           ? "Kt"
                       : L->gamma_n < 0 ? "gamma_n"
                                        : "gamma_t",
                       kt < 0           ? kt
                       : L->gamma_n < 0 ? L->gamma_n
                                        : gt);
  if (L->mu < 0 || L->mu > 10000 || (damp != 0 && damp != 1))
    return CM__DECKERR(r, CM_PARSE,
                       "%s: xmu %g and dampflag %g: need 0 <= xmu <= 10000 "
                       "and dampflag 0 or 1",
                       cmd, L->mu, damp);
  if (damp == 0)
    L->gamma_t = 0; /* dampflag 0: no tangential damping */
  if (style == CM_LAW_GRAN_HOOKE && strcmp(argv[1], "NULL") && kt != 0)
    cm__deck_warn(r,
                  "%s: Kt %g is ignored: gran/hooke keeps no shear history, "
                  "so it has no tangential spring (only tangential damping)",
                  cmd, kt);
  if (L->mu == 0 && style != CM_LAW_GRAN_HOOKE)
    cm__deck_warn(r,
                  "%s: friction xmu 0: the tangential force is capped at 0, "
                  "so the contacts get no tangential stiffness or damping",
                  cmd);
  return CM_OK;
}

/* ---- pair granular models
 * ------------------------------------------------------ */

/* The Tsuji damping coefficient alpha(e) of pair_granular.cpp coeff(). */
static double cm__tsuji(double e) {
  return 1.2728 - 4.2783 * e + 11.087 * e * e - 22.348 * pow(e, 3) +
         27.467 * pow(e, 4) - 18.022 * pow(e, 5) + 4.8218 * pow(e, 6);
}

/* 1 if s starts a wall style of fix wall/gran (ends a granular model). */
static int cm__wallstyle(const char *s) {
  return !strcmp(s, "xplane") || !strcmp(s, "yplane") || !strcmp(s, "zplane") ||
         !strcmp(s, "zcylinder") || !strcmp(s, "region");
}

/* The normal model at argv[*i]: hooke kn damp | hertz kn damp |
 * hertz/material E damp nu | dmt E damp nu coh. */
static int cm__gr_normal(cm__drd_t *r, const char *cmd, int argc, char **argv,
                         int *i, cm_contact_law_t *L, double *E, double *nu) {
  const char *m = argv[*i];
  int mat = !strcmp(m, "hertz/material") || !strcmp(m, "dmt");
  int need = !strcmp(m, "dmt") ? 4 : mat ? 3 : 2, st;
  if (!strcmp(m, "jkr"))
    return CM__DECKERR(r, CM_PARSE,
                       "%s: normal model jkr: not supported (its adhesive "
                       "stiffness depends on the loading history); "
                       "supported: hooke, hertz, hertz/material, dmt",
                       cmd);
  if (*i + need >= argc)
    return CM__DECKERR(r, CM_PARSE, "%s: %s needs %d values", cmd, m, need);
  L->normal = !strcmp(m, "hooke")   ? CM_GRAN_HOOKE
              : !strcmp(m, "hertz") ? CM_GRAN_HERTZ
              : !strcmp(m, "dmt")   ? CM_GRAN_DMT
                                    : CM_GRAN_HERTZ_MATERIAL;
  double k;
  if ((st = cm__num(r, cmd, mat ? "E" : "kn", argv[*i + 1], &k)) ||
      (st = cm__num(r, cmd, "damping", argv[*i + 2], &L->gamma_n)))
    return st;
  *E = *nu = 0;
  if (mat && (st = cm__num(r, cmd, "Poisson's ratio", argv[*i + 3], nu)))
    return st;
  if (!(k > 0) || L->gamma_n < 0 || (mat && !(*nu > -1 && *nu < 0.5)))
    return CM__DECKERR(r, CM_PARSE,
                       "%s: %s %g, damping %g%s: need a stiffness > 0, a "
                       "damping >= 0 (negative damping adds energy) and "
                       "-1 < nu < 0.5",
                       cmd, m, k, L->gamma_n, mat ? " and nu" : "");
  if (mat) { /* normal_coeffs[0] = 4/3 E*, E* = 1/((1-nu^2)/E + (1-nu^2)/E) */
    *E = k;
    L->kn = 4.0 / 3.0 / (2.0 * (1 - *nu * *nu) / k);
  } else {
    L->kn = k;
  }
  *i += need + 1;
  return CM_OK;
}

/* tangential linear_nohistory x mu | linear_history kt x mu |
 * mindlin[_rescale][/force] kt|NULL x mu. */
static int cm__gr_tangential(cm__drd_t *r, const char *cmd, int argc,
                             char **argv, int *i, cm_contact_law_t *L,
                             int *kt_null) {
  const char *m = *i + 1 < argc ? argv[*i + 1] : "";
  int nohist = !strcmp(m, "linear_nohistory"), st;
  int mindlin = !strncmp(m, "mindlin", 7);
  if (!nohist && !mindlin && strcmp(m, "linear_history"))
    return CM__DECKERR(r, CM_PARSE,
                       "%s: tangential '%s': not supported; supported: "
                       "linear_nohistory, linear_history, mindlin, "
                       "mindlin_rescale, mindlin/force, mindlin_rescale/force",
                       cmd, m);
  int need = nohist ? 2 : 3;
  if (*i + 1 + need >= argc)
    return CM__DECKERR(r, CM_PARSE, "%s: tangential %s needs %d values", cmd, m,
                       need);
  char **v = argv + *i + 2;
  L->tangential = nohist    ? CM_GRAN_LINEAR_NOHISTORY
                  : mindlin ? CM_GRAN_MINDLIN
                            : CM_GRAN_LINEAR_HISTORY;
  *kt_null = !nohist && !strcmp(v[0], "NULL");
  if (!nohist && !*kt_null && (st = cm__num(r, cmd, "kt", v[0], &L->kt)))
    return st;
  if ((st = cm__num(r, cmd, "x_gamma_t", v[need - 2], &L->gamma_t)) ||
      (st = cm__num(r, cmd, "friction", v[need - 1], &L->mu)))
    return st;
  if (*kt_null && !mindlin)
    return CM__DECKERR(r, CM_PARSE, "%s: kt NULL is only for mindlin", cmd);
  if (L->kt < 0 || L->gamma_t < 0 || L->mu < 0)
    return CM__DECKERR(r, CM_PARSE,
                       "%s: tangential %s: kt, x_gamma_t and friction must be "
                       ">= 0",
                       cmd, m);
  *i += need + 2;
  return CM_OK;
}

/* Skips or refuses rolling/twisting/damping/cutoff keywords at argv[*i]. */
static int cm__gr_other(cm__drd_t *r, const char *cmd, int argc, char **argv,
                        int *i, cm_contact_law_t *L) {
  const char *k = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : "";
  if (!strcmp(k, "damping")) {
    L->damping = !strcmp(v, "velocity")        ? CM_GRAN_VELOCITY
                 : !strcmp(v, "mass_velocity") ? CM_GRAN_MASS_VELOCITY
                 : !strcmp(v, "viscoelastic")  ? CM_GRAN_VISCOELASTIC
                 : !strcmp(v, "tsuji")         ? CM_GRAN_TSUJI
                                               : -1;
    if (L->damping < 0)
      return CM__DECKERR(r, CM_PARSE,
                         "%s: damping '%s': not supported; supported: "
                         "velocity, mass_velocity, viscoelastic, tsuji",
                         cmd, v);
    *i += 2;
  } else if (!strcmp(k, "rolling") || !strcmp(k, "twisting")) {
    if (strcmp(v, "none"))
      return CM__DECKERR(r, CM_PARSE,
                         "%s: %s %s: not supported: a scene has no "
                         "rolling or twisting rows, and leaving out their "
                         "springs would lower the frequencies (an unsafe "
                         "step); supported: %s none. Import a copy of the "
                         "deck without it to see the rest",
                         cmd, k, v, k);
    *i += 2;
  } else if (!strcmp(k, "cutoff")) {
    *i += 2;
  } else if (!strcmp(k, "limit_damping")) {
    *i += 1; /* only clips attractive normal forces: no stiffness change */
  } else {
    return CM__DECKERR(r, CM_PARSE,
                       "%s: keyword '%s': not supported; supported: hooke, "
                       "hertz, hertz/material, dmt, damping, tangential, "
                       "rolling none, twisting none, cutoff, limit_damping",
                       cmd, k);
  }
  return CM_OK;
}

/* A granular model from argv[*i] up to the end or a wall style. */
static int cm__granular_model(cm__drd_t *r, const char *cmd, int argc,
                              char **argv, int *i, cm_contact_law_t *L,
                              double *E, double *nu, int *kt_null) {
  memset(L, 0, sizeof *L);
  L->style = CM_LAW_GRANULAR;
  L->normal = L->tangential = -1;
  L->damping = CM_GRAN_VISCOELASTIC; /* LAMMPS' default */
  *kt_null = 0;
  int st = CM_OK;
  while (!st && *i < argc && !cm__wallstyle(argv[*i])) {
    const char *k = argv[*i];
    if (!strcmp(k, "hooke") || !strcmp(k, "hertz") ||
        !strcmp(k, "hertz/material") || !strcmp(k, "dmt") || !strcmp(k, "jkr"))
      st = cm__gr_normal(r, cmd, argc, argv, i, L, E, nu);
    else if (!strcmp(k, "tangential"))
      st = cm__gr_tangential(r, cmd, argc, argv, i, L, kt_null);
    else
      st = cm__gr_other(r, cmd, argc, argv, i, L);
  }
  if (!st && (L->normal < 0 || L->tangential < 0))
    return CM__DECKERR(r, CM_PARSE,
                       "%s: a granular model needs a normal model (hooke, "
                       "hertz, hertz/material, dmt) and a tangential model",
                       cmd);
  if (!st && *kt_null &&
      (L->normal == CM_GRAN_HOOKE || L->normal == CM_GRAN_HERTZ))
    return CM__DECKERR(r, CM_PARSE,
                       "%s: mindlin kt NULL needs a normal model with "
                       "material properties (hertz/material or dmt), as in "
                       "LAMMPS",
                       cmd);
  if (!st && *kt_null) /* 8 G*, G* = 1/(2 (2-nu)(1+nu)/E * 2) */
    L->kt = 8.0 / (2.0 * (2.0 * (2 - *nu) * (1 + *nu) / *E));
  if (!st && L->damping == CM_GRAN_TSUJI) {
    if (!(L->gamma_n >= 0 && L->gamma_n <= 1))
      return CM__DECKERR(r, CM_PARSE,
                         "%s: damping tsuji takes the restitution "
                         "coefficient, %g is not in [0, 1]",
                         cmd, L->gamma_n);
    L->gamma_n = cm__tsuji(L->gamma_n);
  }
  if (!st && L->mu == 0 && L->tangential != CM_GRAN_LINEAR_NOHISTORY)
    cm__deck_warn(r, "%s: friction 0: no tangential stiffness or damping", cmd);
  return st;
}

/* ---- commands: pair_style, pair_coeff ---------------------------------------
 */

static int cm__liggghts_style(cm__drd_t *r, int argc, char **argv);
static int cm__liggghts_wall(cm__drd_t *r, int argc, char **argv,
                             cm__wall_t *w);

static int cm__pair_style(cm__drd_t *r, int argc, char **argv) {
  cm__dst_t *s = ST(r);
  char style[64];
  snprintf(style, sizeof style, "%s", argc > 1 ? argv[1] : "");
  cm__unsuffix(style);
  snprintf(r->deck->pair_style, sizeof r->deck->pair_style, "%s", style);
  s->pair_line = r->line;
  s->coeff_seen = 0;
  memset(s->set, 0, sizeof s->set);
  int g = !strcmp(style, "gran/hooke")           ? CM_LAW_GRAN_HOOKE
          : !strcmp(style, "gran/hooke/history") ? CM_LAW_GRAN_HOOKE_HISTORY
          : !strcmp(style, "gran/hertz/history") ? CM_LAW_GRAN_HERTZ_HISTORY
                                                 : 0;
  if (g && argc == 2) { /* LIGGGHTS 2.x: gran/hertz/history without args */
    r->deck->liggghts = 1;
    s->pair = g == CM_LAW_GRAN_HOOKE_HISTORY || g == CM_LAW_GRAN_HOOKE
                  ? CM_LAW_LIGGGHTS_HOOKE
                  : CM_LAW_LIGGGHTS_HERTZ;
    s->lig.tangential = g == CM_LAW_GRAN_HOOKE ? CM_GRAN_LINEAR_NOHISTORY
                                               : CM_GRAN_LINEAR_HISTORY;
    s->lig.tdamp = 1;
    return CM_OK;
  }
  if (g) {
    s->pair = g;
    return cm__gran_params(r, "pair_style", g, argc - 2, argv + 2, &s->gran);
  }
  if (!strcmp(style, "granular")) {
    s->pair = CM_LAW_GRANULAR;
    return CM_OK;
  }
  if (!strcmp(style, "gran"))
    return cm__liggghts_style(r, argc, argv);
  return CM__DECKERR(r, CM_PARSE,
                     "pair_style %s: not supported; supported: %s. Give the "
                     "stiffness by hand with 'cmodes import dump' (--k or "
                     "--young/--poisson) instead",
                     style, CM__PAIR_STYLES);
}

/* LIGGGHTS model words from argv[*i] up to the end, "primitive" or "mesh":
 * model hertz|hooke, tangential history|no_history, rolling_friction,
 * cohesion, surface, and on/off switches. */
static int cm__liggghts_model(cm__drd_t *r, const char *cmd, int argc,
                              char **argv, int *i, cm_contact_law_t *L) {
  memset(L, 0, sizeof *L);
  L->tangential = CM_GRAN_LINEAR_HISTORY;
  L->tdamp = 1;
  for (; *i < argc && strcmp(argv[*i], "primitive") && strcmp(argv[*i], "mesh");
       *i += 2) {
    const char *k = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : "";
    int off = !strcmp(v, "off") || !strcmp(v, "none");
    if (!strcmp(k, "model")) {
      L->style = !strcmp(v, "hertz")   ? CM_LAW_LIGGGHTS_HERTZ
                 : !strcmp(v, "hooke") ? CM_LAW_LIGGGHTS_HOOKE
                                       : 0;
      if (!L->style)
        return CM__DECKERR(r, CM_PARSE,
                           "%s: model %s: not supported; supported: model "
                           "hertz, model hooke (LIGGGHTS)",
                           cmd, v);
    } else if (!strcmp(k, "tangential")) {
      if (strcmp(v, "history") && strcmp(v, "no_history"))
        return CM__DECKERR(r, CM_PARSE,
                           "%s: tangential %s: not supported; supported: "
                           "history, no_history",
                           cmd, v);
      L->tangential = strcmp(v, "history") ? CM_GRAN_LINEAR_NOHISTORY
                                           : CM_GRAN_LINEAR_HISTORY;
    } else if (!strcmp(k, "rolling_friction") && !strcmp(v, "cdt")) {
      cm__deck_warn(r,
                    "%s: rolling_friction cdt is left out: a constant "
                    "torque, no spring, so no stiffness",
                    cmd);
    } else if ((!strcmp(k, "rolling_friction") || !strcmp(k, "cohesion") ||
                !strcmp(k, "surface")) &&
               !off && strcmp(v, "default")) {
      return CM__DECKERR(r, CM_PARSE,
                         "%s: %s %s: not supported (it adds stiffness a "
                         "scene cannot hold); supported: rolling_friction "
                         "off|cdt, cohesion off, surface default",
                         cmd, k, v);
    } else if (!strcmp(k, "tangential_damping")) {
      L->tdamp = !off;
    } else if (!strcmp(k, "ktToKnUser") || !strcmp(k, "ktToKn")) {
      L->kt_to_kn = !off;
    } else if (strcmp(k, "limitForce") && strcmp(k, "rolling_friction") &&
               strcmp(k, "cohesion") && strcmp(k, "surface")) {
      return CM__DECKERR(r, CM_PARSE,
                         "%s: '%s %s': not supported; supported: model, "
                         "tangential, rolling_friction, cohesion off, "
                         "surface default, tangential_damping, ktToKnUser, "
                         "limitForce",
                         cmd, k, v);
    }
  }
  if (!L->style)
    return CM__DECKERR(r, CM_PARSE, "%s: no 'model hertz' or 'model hooke'",
                       cmd);
  return CM_OK;
}

/* pair_style gran model ... (LIGGGHTS). */
static int cm__liggghts_style(cm__drd_t *r, int argc, char **argv) {
  cm__dst_t *s = ST(r);
  int i = 2;
  r->deck->liggghts = 1;
  int st = cm__liggghts_model(r, "pair_style gran", argc, argv, &i, &s->lig);
  s->pair = s->lig.style;
  return st;
}

/* pair_coeff I J [granular model]. */
static int cm__pair_coeff(cm__drd_t *r, int argc, char **argv) {
  cm__dst_t *s = ST(r);
  int ilo, ihi, jlo, jhi, st;
  if (!s->pair)
    return CM__DECKERR(r, CM_PARSE, "pair_coeff before pair_style");
  if (argc < 3)
    return CM__DECKERR(r, CM_PARSE, "pair_coeff: expected I J ...");
  if ((st = cm__range(r, argv[1], s->ntypes, &ilo, &ihi)) ||
      (st = cm__range(r, argv[2], s->ntypes, &jlo, &jhi)))
    return st;
  s->coeff_seen = 1;
  if (s->pair != CM_LAW_GRANULAR) { /* gran/ and LIGGGHTS: no arguments */
    if (argc > 3)
      cm__deck_warn(r,
                    "pair_coeff: %s takes no coefficients; '%s ...' is "
                    "ignored",
                    r->deck->pair_style, argv[3]);
    return CM_OK;
  }
  cm_contact_law_t L;
  double E = 0, nu = 0;
  int i = 3, kt_null = 0;
  if ((st = cm__granular_model(r, "pair_coeff", argc, argv, &i, &L, &E, &nu,
                               &kt_null)))
    return st;
  if (i < argc)
    return CM__DECKERR(r, CM_PARSE,
                       "pair_coeff: '%s' is not a granular "
                       "model keyword",
                       argv[i]);
  for (int a = ilo; a <= ihi; a++)
    for (int b = a > jlo ? a : jlo; b <= jhi; b++) {
      r->deck->model->pair[a][b] = r->deck->model->pair[b][a] = L;
      s->set[a][b] = s->set[b][a] = 1;
      if (a == b)
        s->emod[a] = E, s->pois[a] = nu;
    }
  return CM_OK;
}

/* ---- walls
 * ----------------------------------------------------------------------- */

/* Forgets what fix id holds, its walls and its place among the unsafe
 * fixes in effect (unfix, or a fix defined again). */
static void cm__drop_fix(cm__dst_t *s, const char *id) {
  int m = 0;
  for (int w = 0; w < s->nwalls; w++)
    if (strcmp(s->walls[w].fix, id))
      s->walls[m++] = s->walls[w];
  s->nwalls = m, m = 0;
  for (int k = 0; k < s->nunsafe; k++)
    if (strcmp(s->unsafe[k].id, id))
      s->unsafe[m++] = s->unsafe[k];
  s->nunsafe = m, m = 0;
  for (int k = 0; k < s->ndrag; k++)
    if (strcmp(s->drag[k].id, id))
      s->drag[m++] = s->drag[k];
  s->ndrag = m;
}

/* 1 if fix id holds walls or is an unsafe fix in effect: a fix defined
 * again under its ID replaces it. */
static int cm__fix_tracked(const cm__dst_t *s, const char *id) {
  for (int w = 0; w < s->nwalls; w++)
    if (!strcmp(s->walls[w].fix, id))
      return 1;
  for (int k = 0; k < s->nunsafe; k++)
    if (!strcmp(s->unsafe[k].id, id))
      return 1;
  for (int k = 0; k < s->ndrag; k++)
    if (!strcmp(s->drag[k].id, id))
      return 1;
  return 0;
}

static int cm__add_wall(cm__drd_t *r, const cm__wall_t *w) {
  cm__dst_t *s = ST(r);
  int planes = 0, cyl = 0;
  for (int k = 0; k < s->nwalls; k++)
    planes += !s->walls[k].cylinder, cyl += s->walls[k].cylinder;
  if (w->cylinder ? cyl >= 1 : planes >= CM_DUMP_MAX_PLANES)
    return CM__DECKERR(r, CM_PARSE,
                       "fix %s: too many walls: cmodes takes up to %d planes "
                       "and one z-cylinder",
                       w->fix, CM_DUMP_MAX_PLANES);
  s->walls[s->nwalls++] = *w;
  return CM_OK;
}

/* A plane at value v of axis a with inward direction sign. */
static int cm__plane(cm__drd_t *r, cm__wall_t *w, int a, double v,
                     double sign) {
  memset(w->p, 0, sizeof w->p);
  w->cylinder = 0;
  w->p[a] = v;
  w->p[3 + a] = sign;
  return cm__add_wall(r, w);
}

/* LAMMPS: xplane|yplane|zplane lo hi (NULL = none) | zcylinder R, then
 * keywords. */
static int cm__lammps_wallstyle(cm__drd_t *r, int argc, char **argv, int i,
                                cm__wall_t *w) {
  const char *ws = i < argc ? argv[i] : "(none)";
  int st = CM_OK;
  if (!strcmp(ws, "xplane") || !strcmp(ws, "yplane") || !strcmp(ws, "zplane")) {
    if (i + 2 >= argc)
      return CM__DECKERR(r, CM_PARSE, "fix wall/gran %s: expected lo hi", ws);
    int a = ws[0] - 'x';
    double lo, hi;
    if (strcmp(argv[i + 1], "NULL") &&
        !(st = cm__num(r, "fix wall/gran", "lo", argv[i + 1], &lo)))
      st = cm__plane(r, w, a, lo, 1.0); /* particles above lo */
    if (!st && strcmp(argv[i + 2], "NULL") &&
        !(st = cm__num(r, "fix wall/gran", "hi", argv[i + 2], &hi)))
      st = cm__plane(r, w, a, hi, -1.0); /* particles below hi */
    i += 3;
  } else if (!strcmp(ws, "zcylinder")) {
    if ((st = cm__num(r, "fix wall/gran zcylinder", "radius",
                      i + 1 < argc ? argv[i + 1] : NULL, &w->radius)))
      return st;
    w->cylinder = 1, w->c[0] = w->c[1] = 0; /* about the z axis */
    st = cm__add_wall(r, w);
    i += 2;
  } else {
    return CM__DECKERR(r, CM_PARSE,
                       "fix wall/gran wall style '%s': not supported; "
                       "supported: xplane, yplane, zplane, zcylinder (give "
                       "other walls with 'cmodes import dump --wall-plane')",
                       ws);
  }
  for (; !st && i < argc; i++) {
    if (!strcmp(argv[i], "wiggle"))
      return CM__DECKERR(r, CM_PARSE,
                         "fix wall/gran ... wiggle: not supported: the "
                         "wall's position at the dump's step is not in the "
                         "deck; supported keywords: shear, contacts, "
                         "limit_damping");
  }
  return st;
}

/* LIGGGHTS: primitive type T xplane|yplane|zplane V | zcylinder R cx cy.
 * A primitive plane is two-sided: inside is the side of the box centre. */
static int cm__liggghts_primitive(cm__drd_t *r, int argc, char **argv, int i,
                                  cm__wall_t *w) {
  int st;
  double t;
  if (i >= argc || strcmp(argv[i], "primitive"))
    return CM__DECKERR(r, CM_PARSE,
                       "fix wall/gran %s: not supported (mesh walls are "
                       "triangles); supported: primitive type T xplane, "
                       "yplane, zplane, zcylinder",
                       i < argc ? argv[i] : "(no wall)");
  if (i + 3 >= argc || strcmp(argv[i + 1], "type"))
    return CM__DECKERR(r, CM_PARSE,
                       "fix wall/gran primitive: expected "
                       "'primitive type T WALLSTYLE ARGS'");
  if ((st = cm__num(r, "fix wall/gran", "type", argv[i + 2], &t)))
    return st;
  w->type = (int)t;
  const char *ws = argv[i + 3];
  double v[3] = {0, 0, 0};
  if (!strcmp(ws, "zcylinder")) {
    for (int k = 0; k < 3 && !st; k++)
      st = cm__num(r, "fix wall/gran zcylinder", k ? "centre" : "radius",
                   i + 4 + k < argc ? argv[i + 4 + k] : NULL, &v[k]);
    w->cylinder = 1, w->radius = v[0], w->c[0] = v[1], w->c[1] = v[2];
    return st ? st : cm__add_wall(r, w);
  }
  if (strcmp(ws, "xplane") && strcmp(ws, "yplane") && strcmp(ws, "zplane"))
    return CM__DECKERR(r, CM_PARSE,
                       "fix wall/gran primitive %s: not supported; "
                       "supported: xplane, yplane, zplane, zcylinder",
                       ws);
  if ((st = cm__num(r, "fix wall/gran", ws, i + 4 < argc ? argv[i + 4] : NULL,
                    &v[0])))
    return st;
  int a = ws[0] - 'x';
  if (!r->deck->have_box)
    return CM__DECKERR(r, CM_PARSE,
                       "fix wall/gran primitive %s: which side is inside is "
                       "taken from the box centre, and no region + "
                       "create_box came before",
                       ws);
  double mid = 0.5 * (r->deck->box[a][0] + r->deck->box[a][1]);
  return cm__plane(r, w, a, v[0], mid >= v[0] ? 1.0 : -1.0);
}

/* LIGGGHTS walls: wall/gran model ... primitive ..., or the 2.x
 * wall/gran/hertz/history primitive ... (legacy = 1). */
static int cm__liggghts_wall(cm__drd_t *r, int argc, char **argv,
                             cm__wall_t *w) {
  cm__dst_t *s = ST(r);
  int i = 4, st;
  cm_contact_law_t L = s->lig;
  r->deck->liggghts = 1;
  if (argc > 4 && !strcmp(argv[4], "model") &&
      (st = cm__liggghts_model(r, "fix wall/gran", argc, argv, &i, &L)))
    return st;
  if (s->pair != CM_LAW_LIGGGHTS_HERTZ && s->pair != CM_LAW_LIGGGHTS_HOOKE)
    return CM__DECKERR(r, CM_PARSE,
                       "fix wall/gran model: the LIGGGHTS wall needs the "
                       "LIGGGHTS pair_style gran before it");
  if (L.style != s->lig.style || L.tangential != s->lig.tangential ||
      L.tdamp != s->lig.tdamp)
    return CM__DECKERR(r, CM_PARSE,
                       "fix wall/gran: a wall model different from the "
                       "pair_style's: not supported; supported: the same "
                       "model and tangential model as pair_style gran");
  return cm__liggghts_primitive(r, argc, argv, i, w);
}

/* fix wall/gran granular's material conventions in LAMMPS 29 Sep 2021
 * differ from pair granular's: normal_coeffs[0] = 4/3 E / (2 (1 - nu))
 * (not 1 - nu^2) and mindlin NULL kt = E (2 - nu)(1 + nu) / 4 (not 8 G*).
 * Measured with Debian's lmp (forces of one sphere on a plane at two
 * overlaps and after ten steps of tangential slip; see docs/importers.md);
 * newer LAMMPS (granular_model.cpp, 2023) uses the pair formulas for walls
 * too. The installed version's numbers are the ones reproduced here. */
static void cm__wall_material(cm_contact_law_t *L, double E, double nu,
                              int kt_null) {
  if (L->normal == CM_GRAN_HERTZ_MATERIAL || L->normal == CM_GRAN_DMT)
    L->kn = 4.0 / 3.0 * E / (2 * (1 - nu));
  if (kt_null)
    L->kt = E * (2 - nu) * (1 + nu) / 4;
}

/* fix ID group wall/gran (LAMMPS or LIGGGHTS syntax). */
static int cm__fix_wall_gran(cm__drd_t *r, int argc, char **argv) {
  cm__wall_t w;
  memset(&w, 0, sizeof w);
  snprintf(w.fix, sizeof w.fix, "%s", argv[1]);
  w.line = r->line; /* cm__fix dropped the old fix of this ID */
  if (argc < 5)
    return CM__DECKERR(r, CM_PARSE, "fix wall/gran: no model");
  const char *f = argv[4];
  if (!strcmp(f, "model"))
    return cm__liggghts_wall(r, argc, argv, &w);
  int g = !strcmp(f, "hooke")           ? CM_LAW_GRAN_HOOKE
          : !strcmp(f, "hooke/history") ? CM_LAW_GRAN_HOOKE_HISTORY
          : !strcmp(f, "hertz/history") ? CM_LAW_GRAN_HERTZ_HISTORY
          : !strcmp(f, "granular")      ? CM_LAW_GRANULAR
                                        : 0;
  int st, i;
  if (!g)
    return CM__DECKERR(r, CM_PARSE,
                       "fix wall/gran %s: not supported; supported: hooke, "
                       "hooke/history, hertz/history, granular (LAMMPS), "
                       "model hertz|hooke (LIGGGHTS)",
                       f);
  if (g == CM_LAW_GRANULAR) {
    double E = 0, nu = 0;
    int kt_null = 0;
    i = 5;
    if ((st = cm__granular_model(r, "fix wall/gran granular", argc, argv, &i,
                                 &w.law, &E, &nu, &kt_null)))
      return st;
    cm__wall_material(&w.law, E, nu, kt_null);
  } else {
    if ((st = cm__gran_params(r, "fix wall/gran", g, argc - 5, argv + 5,
                              &w.law)))
      return st;
    i = 11;
  }
  return cm__lammps_wallstyle(r, argc, argv, i, &w);
}

/* ---- LIGGGHTS material properties -------------------------------------------
 */

/* fix ID group property/global NAME peratomtype v1..vn |
 * peratomtypepair n v11 .. vnn | scalar v. */
static int cm__property_global(cm__drd_t *r, int argc, char **argv) {
  cm__dst_t *s = ST(r);
  if (argc < 6)
    return CM_OK;
  const char *name = argv[4], *kind = argv[5];
  int st = CM_OK;
  r->deck->liggghts = 1;
  if (!strcmp(name, "characteristicVelocity")) {
    s->have_charvel = 1;
    return cm__num(r, name, "value", argc > 6 ? argv[6] : NULL,
                   &s->lig.charvel);
  }
  int vec = !strcmp(name, "youngsModulus") || !strcmp(name, "poissonsRatio");
  int mat = !strcmp(name, "coefficientRestitution") ||
            !strcmp(name, "coefficientFriction");
  if (!vec && !mat)
    return CM_OK; /* other properties do not change the contact model */
  if (vec) {
    double *dst = name[0] == 'y' ? s->young : s->nu;
    int n = argc - 6;
    if (strcmp(kind, "peratomtype") || n < 1 || n > CM__T)
      return CM__DECKERR(r, CM_PARSE,
                         "property/global %s: expected "
                         "peratomtype and one value per type "
                         "(at most %d)",
                         name, CM__T);
    for (int t = 1; t <= n && !st; t++)
      st = cm__num(r, name, "value", argv[5 + t], &dst[t]);
    *(name[0] == 'y' ? &s->have_young : &s->have_nu) = n;
    return st;
  }
  double nd;
  if (strcmp(kind, "peratomtypepair") ||
      (st = cm__num(r, name, "type count", argc > 6 ? argv[6] : NULL, &nd)))
    return st ? st
              : CM__DECKERR(r, CM_PARSE,
                            "property/global %s: expected "
                            "peratomtypepair N values",
                            name);
  int n = (int)nd;
  if (n < 1 || n > CM__T || argc - 7 != n * n)
    return CM__DECKERR(r, CM_PARSE,
                       "property/global %s peratomtypepair %d: expected %d "
                       "values (and at most %d types)",
                       name, n, n * n, CM__T);
  double(*dst)[CM__T + 1] = name[11] == 'R' ? s->rest : s->fric;
  for (int a = 1; a <= n && !st; a++)
    for (int b = 1; b <= n && !st; b++)
      st = cm__num(r, name, "value", argv[7 + (a - 1) * n + (b - 1)],
                   &dst[a][b]);
  *(name[11] == 'R' ? &s->have_rest : &s->have_fric) = n;
  return st;
}

/* Densities: fix pour ... dens lo hi (when lo = hi), LIGGGHTS fix
 * particletemplate/sphere ... atom_type T density constant RHO. */
static void cm__density(cm__drd_t *r, int argc, char **argv) {
  cm_lammps_deck_t *d = r->deck;
  int type = 1;
  double v, lo = 0, hi = -1;
  for (int i = 4; i + 1 < argc; i++) {
    if (!strcmp(argv[i], "atom_type") && cm__deck_number(argv[i + 1], &v))
      type = v >= 1 && v <= CM__T ? (int)v : 0; /* 0: not a type read */
    if (!strcmp(argv[i], "density") && i + 2 < argc &&
        !strcmp(argv[i + 1], "constant"))
      cm__deck_number(argv[i + 2], &lo), hi = lo;
    if (!strcmp(argv[i], "dens") && i + 2 < argc)
      cm__deck_number(argv[i + 1], &lo), cm__deck_number(argv[i + 2], &hi);
  }
  if (!strcmp(argv[3], "pour") && argc > 5 && cm__deck_number(argv[5], &v))
    type = v >= 1 && v <= CM__T ? (int)v : 0;
  if (type >= 1 && type <= CM__T && lo == hi && lo > 0)
    d->density[type] = lo;
}

/* ---- the other commands
 * ------------------------------------------------------ */

/* Fixes that would change the contact model in ways a scene cannot hold. */
static int cm__fix_refused(const char *style) {
  static const char *const no[] = {
      "freeze",       "rigid",         "rigid/small",        "rigid/nve",
      "rigid/nvt",    "rigid/nph",     "rigid/npt",          "wall/gran/region",
      "wall/region",  "wall/lj93",     "wall/lj126",         "wall/lj1043",
      "wall/colloid", "wall/harmonic", "wall/morse",         "wall/table",
      "bond/create",  "mesh/surface",  "mesh/surface/stress"};
  for (size_t k = 0; k < sizeof no / sizeof no[0]; k++)
    if (!strcmp(style, no[k]))
      return 1;
  return 0;
}

/* Fixes whose forces the contact model lacks and that shorten the stable
 * step: damping on every particle's velocity (viscous, langevin), springs
 * to fixed points (spring/self) and a group's centre of mass tethered or
 * coupled (spring). The step cmodes reports would exceed the run's while
 * one is in effect; what it says of each. */
static const char *cm__fix_unsafe(const char *style) {
  static const char *const why[][2] = {
      {"viscous/sphere", "its damping of the rotations is not in the "
                         "contact model, and damping shortens the stable "
                         "step"},
      {"spring", "its spring (the group's centre of mass tethered to a "
                 "point or coupled to another group's) is not in the "
                 "contact model, and stiffness shortens the stable step"}};
  for (size_t k = 0; k < sizeof why / sizeof why[0]; k++)
    if (!strcmp(style, why[k][0]))
      return why[k][1];
  return NULL;
}

/* Fixes that hold particles to prescribed motions, forces or subspaces:
 * the analysis takes them as free bodies, which only raises the
 * frequencies (a constraint restricts the Rayleigh quotient of S to a
 * subspace; a prescribed motion is an infinite mass), so the step stays
 * safe for them, if smaller than the run's. */
static int cm__fix_constraint(const char *style) {
  return !strcmp(style, "setforce") || !strcmp(style, "move") ||
         !strcmp(style, "aveforce") || !strcmp(style, "lineforce") ||
         !strcmp(style, "planeforce");
}

/* Fixes that only drive the run (integrators, forces on single particles,
 * insertion, output): skipped without a word. */
static int cm__fix_harmless(const char *style) {
  static const char *const ok[] = {"nve/sphere",
                                   "nve",
                                   "nve/limit",
                                   "nve/asphere",
                                   "nvt/sphere",
                                   "gravity",
                                   "deposit",
                                   "insert/pack",
                                   "insert/stream",
                                   "insert/rate/region",
                                   "particledistribution/discrete",
                                   "halt",
                                   "print",
                                   "ave/time",
                                   "ave/atom",
                                   "ave/chunk",
                                   "ave/histo",
                                   "store/state",
                                   "momentum",
                                   "enforce2d",
                                   "addforce",
                                   "check/timestep/gran",
                                   "dt/reset",
                                   "recenter",
                                   "heat/gran",
                                   "heat/gran/conduction",
                                   "wall/reflect",
                                   "multisphere",
                                   "efield",
                                   "nve/sphere/omp",
                                   "temp/rescale"};
  for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++)
    if (!strcmp(style, ok[k]))
      return 1;
  return 0;
}

/* The group named id (NULL: none yet). */
static int cm__group_find(const cm__dst_t *s, const char *id) {
  for (int g = 0; g < s->ngroups; g++)
    if (!strcmp(s->group[g].id, id))
      return g;
  return -1;
}

/* group ID type v ... | type OP b [b2] (group.cpp: values and ranges
 * a:b[:d], or a comparison <, <=, >, >=, ==, !=, <> with its bounds),
 * adding types to the group; group ID delete | clear | empty; any other
 * style (region, id, molecule, variable, union, ...) makes the group
 * opaque: a fix on it is refused (cm__group_types). */
static int cm__group(cm__drd_t *r, int argc, char **argv) {
  cm__dst_t *s = ST(r);
  if (argc < 3)
    return CM__DECKERR(r, CM_PARSE, "group: expected 'group ID style ...'");
  int g = cm__group_find(s, argv[1]);
  if (!strcmp(argv[2], "delete")) {
    if (g >= 0)
      s->group[g] = s->group[--s->ngroups];
    return CM_OK;
  }
  if (!strcmp(argv[1], "all"))
    return CM_OK; /* LAMMPS' own group: every atom */
  if (g < 0) {
    if (s->ngroups == CM__MAX_REGIONS)
      return CM__DECKERR(r, CM_PARSE, "group: more than %d groups",
                         CM__MAX_REGIONS);
    g = s->ngroups++;
    memset(&s->group[g], 0, sizeof s->group[g]);
    snprintf(s->group[g].id, sizeof s->group[g].id, "%s", argv[1]);
  }
  unsigned char *in = s->group[g].type;
  if (!strcmp(argv[2], "clear") || !strcmp(argv[2], "empty")) {
    memset(in, 0, sizeof s->group[g].type);
    s->group[g].opaque = 0;
    return CM_OK;
  }
  if (strcmp(argv[2], "type")) {
    s->group[g].opaque = 1;
    return CM_OK;
  }
  static const char *const op[] = {"<", "<=", ">", ">=", "==", "!=", "<>"};
  int k = 0, nt = s->ntypes;
  while (k < 7 && (argc < 4 || strcmp(argv[3], op[k])))
    k++;
  if (k < 7) { /* a comparison */
    double b1 = 0, b2 = 0;
    int st = cm__num(r, "group type", "bound", argc > 4 ? argv[4] : NULL, &b1);
    if (!st && k == 6)
      st = cm__num(r, "group type", "bound", argc > 5 ? argv[5] : NULL, &b2);
    if (st)
      return st;
    for (int t = 1; t <= nt; t++) {
      int y[7] = {t<b1, t <= b1, t> b1, t >= b1, t == b1, t != b1,
                  t >= b1 && t <= b2};
      in[t] |= (unsigned char)y[k];
    }
    return CM_OK;
  }
  for (int i = 3; i < argc; i++) { /* values and ranges a:b[:d] */
    long v[3] = {0, 0, 1};
    int n = 0;
    const char *p = argv[i];
    char *end = NULL;
    int bad = 0;
    for (; n < 3; n++) {
      v[n] = strtol(p, &end, 10);
      if ((bad = end == p || (*end && *end != ':')))
        break;
      p = end + 1;
      if (!*end) {
        n++;
        break;
      }
    }
    if (bad || n == 0 || (end && *end) || v[2] < 1)
      return CM__DECKERR(r, CM_PARSE,
                         "group %s type: '%s' is not a type, a range a:b or "
                         "a:b:d",
                         argv[1], argv[i]);
    if (n == 1)
      v[1] = v[0];
    for (long t = v[0]; t <= v[1]; t += v[2])
      if (t >= 1 && t <= nt)
        in[t] = 1;
  }
  return CM_OK;
}

/* The types of group id for a fix (in[t] = 1 for the atoms of type t):
 * all, or a group of atom types; any other is refused. */
static int cm__group_types(cm__drd_t *r, const char *fix, const char *style,
                           const char *id, unsigned char *in) {
  const cm__dst_t *s = ST(r);
  int g = strcmp(id, "all") ? cm__group_find(s, id) : -2;
  if (g == -2 || (g >= 0 && !s->group[g].opaque)) {
    for (int t = 0; t <= CM__T; t++)
      in[t] = g == -2 || s->group[g].type[t];
    return CM_OK;
  }
  return CM__DECKERR(r, CM_PARSE,
                     "fix %s %s %s: group %s is %s: cmodes reads groups of "
                     "atom types only ('group ID type ...'), as the dump's "
                     "type column tells them apart; define it by types, or "
                     "unfix the fix before the run that wrote the dump",
                     fix, id, style, id,
                     g < 0 ? "not defined" : "not built from atom types");
}

/* The checks every fix on particles shares: its group's types (in[t]),
 * and room for one more such fix. */
static int cm__pfix_open(cm__drd_t *r, char **argv, const char *style,
                         unsigned char *in) {
  int st = cm__group_types(r, argv[1], style, argv[2], in);
  if (!st && ST(r)->ndrag == CM__MAX_UNSAFE)
    st = CM__DECKERR(r, CM_PARSE,
                     "fix %s: more than %d fixes on every particle in effect "
                     "at once",
                     style, CM__MAX_UNSAFE);
  return st;
}

/* A new fix on particles under fix ID id, zeroed (after cm__pfix_open). */
static cm__pfix_t *cm__pfix_new(cm__dst_t *s, const char *id) {
  cm__pfix_t *f = &s->drag[s->ndrag++];
  memset(f, 0, sizeof *f);
  snprintf(f->id, sizeof f->id, "%s", id);
  return f;
}

/* A keyword of fix langevin other than scale at argv[i], with its value:
 * tally and zero change no drag; angmom, omega and gjf are read only as
 * no (their rotational drags and the GJF integrator are not modelled). */
static int cm__langevin_key(cm__drd_t *r, int argc, char **argv, int i) {
  const char *k = argv[i];
  if (i + 1 >= argc)
    return CM__DECKERR(r, CM_PARSE, "fix langevin: %s needs a value", k);
  if (!strcmp(k, "tally") || !strcmp(k, "zero"))
    return CM_OK;
  if (!strcmp(k, "angmom") || !strcmp(k, "omega") || !strcmp(k, "gjf")) {
    if (!strcmp(argv[i + 1], "no"))
      return CM_OK;
    return CM__DECKERR(r, CM_PARSE,
                       "fix langevin: %s %s: not supported (%s); cmodes "
                       "models the drag on the velocities only",
                       k, argv[i + 1],
                       strcmp(k, "gjf") ? "a drag on the rotations"
                                        : "the GJF integrator");
  }
  return CM__DECKERR(r, CM_PARSE,
                     "fix langevin: unknown keyword '%s' (read: scale, "
                     "tally, zero; angmom, omega, gjf as no)",
                     k);
}

/* fix ID all viscous gamma [scale type ratio ...] (fix_viscous.cpp: the
 * force -gamma_t v on every particle of type t, gamma_t = gamma ratio_t)
 * and fix ID all langevin Tstart Tstop damp seed [keyword value ...]
 * (fix_langevin.cpp on finite-size particles: the drag -m v / (damp
 * ratio_t), and a random force, which changes no stability): kept under
 * its ID until unfixed, then a dashpot alone on every particle
 * (dump_contacts.c). Only group all: cmodes does not read groups. */
static int cm__fix_drag(cm__drd_t *r, int argc, char **argv, int langevin) {
  cm__dst_t *s = ST(r);
  const char *name = langevin ? "langevin" : "viscous";
  int first = langevin ? 8 : 5; /* the first keyword */
  if (argc < first)
    return CM__DECKERR(r, CM_PARSE, "fix %s: expected 'fix ID group %s'", name,
                       langevin ? "langevin Tstart Tstop damp seed ..."
                                : "viscous gamma [scale type ratio ...]");
  unsigned char in[CM__T + 1];
  int st = cm__pfix_open(r, argv, name, in);
  if (st)
    return st;
  double g = 0; /* viscous: gamma, N s/m; langevin: damp, s */
  st = cm__num(r, langevin ? "fix langevin" : "fix viscous",
               langevin ? "damp" : "gamma", argv[langevin ? 6 : 4], &g);
  if (st)
    return st;
  if (!(langevin ? g > 0 : g >= 0) || !isfinite(g))
    return CM__DECKERR(r, CM_PARSE, "fix %s: %s %s must be %s", name,
                       langevin ? "damp" : "gamma", argv[langevin ? 6 : 4],
                       langevin ? "> 0 (s)" : ">= 0 (N s/m)");
  double per[CM__T + 1]; /* the factor of each type (scale) */
  for (int t = 0; t <= CM__T; t++)
    per[t] = 1;
  for (int i = first, used = 3; i < argc; i += used) {
    used = 3;
    if (langevin && strcmp(argv[i], "scale")) {
      if ((st = cm__langevin_key(r, argc, argv, i)))
        return st;
      used = 2;
      continue;
    }
    if (strcmp(argv[i], "scale"))
      return CM__DECKERR(r, CM_PARSE,
                         "fix viscous: unknown keyword '%s' (LAMMPS' fix "
                         "viscous takes scale type ratio)",
                         argv[i]);
    double ratio = 0;
    int lo = 0, hi = 0;
    if (i + 2 >= argc)
      return CM__DECKERR(r, CM_PARSE, "fix %s: scale needs a type and a ratio",
                         name);
    if ((st = cm__range(r, argv[i + 1], s->ntypes, &lo, &hi)) ||
        (st = cm__num(r, "scale", "ratio", argv[i + 2], &ratio)))
      return st;
    if (lo != hi || !(langevin ? ratio > 0 : ratio >= 0) || !isfinite(ratio))
      return CM__DECKERR(r, CM_PARSE,
                         "fix %s: scale %s %s: one type and a ratio %s", name,
                         argv[i + 1], argv[i + 2], langevin ? "> 0" : ">= 0");
    per[lo] = ratio;
  }
  cm__pfix_t *f = cm__pfix_new(s, argv[1]);
  for (int t = 0; t <= CM__T; t++) { /* langevin: gamma = m / (damp ratio) */
    f->gamma[t] = langevin || !in[t] ? 0 : g * per[t];
    f->rate[t] = langevin && in[t] ? 1.0 / (g * per[t]) : 0;
  }
  return CM_OK;
}

/* fix ID all spring/self K [xyz|xy|xz|yz|x|y|z] (fix_spring_self.cpp:
 * the force -K (x - x0) on the flagged axes of every particle, x0 where
 * the fix was defined): kept under its ID until unfixed, then a tether
 * on every particle, a spring of stiffness K to the world at its centre
 * (dump_contacts.c). The snapshot is taken as the frozen state, whatever
 * its distance from x0: the spring is linear, its stiffness K. */
static int cm__fix_tether(cm__drd_t *r, int argc, char **argv) {
  cm__dst_t *s = ST(r);
  if (argc < 5 || argc > 6)
    return CM__DECKERR(r, CM_PARSE,
                       "fix spring/self: expected 'fix ID group spring/self "
                       "K [xyz|xy|xz|yz|x|y|z]'");
  unsigned char in[CM__T + 1];
  int st = cm__pfix_open(r, argv, "spring/self", in);
  if (st)
    return st;
  double k = 0;
  st = cm__num(r, "fix spring/self", "K", argv[4], &k);
  if (st)
    return st;
  if (!(k >= 0) || !isfinite(k))
    return CM__DECKERR(r, CM_PARSE, "fix spring/self: K %s must be >= 0 (N/m)",
                       argv[4]);
  const char *dir = argc == 6 ? argv[5] : "xyz";
  static const char *const dirs[] = {"xyz", "xy", "xz", "yz", "x", "y", "z"};
  int ok = 0;
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
    ok |= !strcmp(dir, dirs[i]);
  if (!ok)
    return CM__DECKERR(r, CM_PARSE,
                       "fix spring/self: direction '%s': expected xyz, xy, "
                       "xz, yz, x, y or z",
                       dir);
  cm__pfix_t *f = cm__pfix_new(s, argv[1]);
  for (int t = 0; t <= CM__T; t++)
    for (int a = 0; a < 3; a++)
      f->tether[t][a] = in[t] && strchr(dir, 'x' + a) ? k : 0;
  return CM_OK;
}

static int cm__fix(cm__drd_t *r, int argc, char **argv) {
  if (argc < 4)
    return CM__DECKERR(r, CM_PARSE, "fix: expected 'fix ID GROUP STYLE ...'");
  char style[64];
  snprintf(style, sizeof style, "%s", argv[3]);
  cm__unsuffix(style);
  cm__drop_fix(ST(r), argv[1]); /* a fix defined again replaces the old */
  if (!strcmp(style, "viscous") || !strcmp(style, "langevin"))
    return cm__fix_drag(r, argc, argv, !strcmp(style, "langevin"));
  if (!strcmp(style, "spring/self"))
    return cm__fix_tether(r, argc, argv);
  if (cm__fix_unsafe(style)) { /* refused at the end unless unfixed */
    cm__dst_t *s = ST(r);
    if (s->nunsafe == CM__MAX_UNSAFE)
      return CM__DECKERR(r, CM_PARSE,
                         "fix %s: more than %d damping or tethering fixes "
                         "in effect at once",
                         style, CM__MAX_UNSAFE);
    snprintf(s->unsafe[s->nunsafe].id, sizeof s->unsafe[0].id, "%s", argv[1]);
    snprintf(s->unsafe[s->nunsafe].style, sizeof s->unsafe[0].style, "%s",
             style);
    snprintf(s->unsafe[s->nunsafe].file, sizeof s->unsafe[0].file, "%s",
             r->file);
    s->unsafe[s->nunsafe++].line = r->line;
    return CM_OK;
  }
  if (!strcmp(style, "wall/gran"))
    return cm__fix_wall_gran(r, argc, argv);
  if (!strncmp(style, "wall/gran/", 10) && !cm__fix_refused(style)) {
    cm__wall_t w; /* LIGGGHTS 2.x: wall/gran/hertz/history primitive ... */
    memset(&w, 0, sizeof w);
    snprintf(w.fix, sizeof w.fix, "%s", argv[1]);
    w.line = r->line;
    return cm__liggghts_wall(r, argc, argv, &w);
  }
  if (!strcmp(style, "property/global"))
    return cm__property_global(r, argc, argv);
  if (!strcmp(style, "pour") || !strcmp(style, "particletemplate/sphere")) {
    cm__density(r, argc, argv);
    return CM_OK;
  }
  if (cm__fix_refused(style))
    return CM__DECKERR(r, CM_PARSE,
                       "fix %s: not supported: it changes the contact model "
                       "(frozen or rigid bodies, region, mesh or potential "
                       "walls); supported walls: fix wall/gran with xplane, "
                       "yplane, zplane, zcylinder",
                       style);
  if (cm__fix_constraint(style))
    cm__deck_warn(r,
                  "fix %s: the particles of group %s are analysed as free "
                  "bodies; what it imposes on them only lowers their "
                  "frequencies, so the step is safe for them but may be "
                  "smaller than the run's",
                  style, argv[2]);
  else if (!strcmp(style, "deform"))
    cm__deck_warn(r, "fix deform: the box is analysed as the dump gives it "
                     "at the snapshot (a tilted box on its lattice); the "
                     "deformation's rate is not part of the frozen scene");
  else if (!cm__fix_harmless(style))
    cm__deck_warn(r,
                  "fix %s is not read: cmodes assumes it does not change "
                  "the contact forces",
                  style);
  if (!strcmp(style, "wall/reflect"))
    cm__deck_warn(r, "fix wall/reflect has no stiffness: particles at it "
                     "get no wall contact");
  return CM_OK;
}

/* region ID block xlo xhi ylo yhi zlo zhi ... (other shapes: ignored). */
static int cm__region(cm__drd_t *r, int argc, char **argv) {
  cm__dst_t *s = ST(r);
  if (argc < 9 || strcmp(argv[2], "block") || s->nregions >= CM__MAX_REGIONS)
    return CM_OK;
  double *b = s->region_box[s->nregions];
  for (int k = 0; k < 6; k++) {
    if (!strcmp(argv[3 + k], "INF") || !strcmp(argv[3 + k], "EDGE"))
      return CM_OK; /* unbounded: not a box */
    int st = cm__num(r, "region block", "bound", argv[3 + k], &b[k]);
    if (st)
      return st;
  }
  snprintf(s->region_id[s->nregions++], sizeof s->region_id[0], "%s", argv[1]);
  return CM_OK;
}

/* create_box N region. */
static int cm__create_box(cm__drd_t *r, int argc, char **argv) {
  cm__dst_t *s = ST(r);
  double n;
  int st =
      cm__num(r, "create_box", "type count", argc > 1 ? argv[1] : NULL, &n);
  if (st)
    return st;
  if (n < 1 || n > CM__T)
    return CM__DECKERR(r, CM_PARSE,
                       "create_box %g: cmodes reads 1 to %d atom types", n,
                       CM__T);
  s->ntypes = (int)n;
  for (int k = s->nregions - 1; k >= 0 && argc > 2; k--)
    if (!strcmp(s->region_id[k], argv[2])) {
      for (int a = 0; a < 3; a++)
        r->deck->box[a][0] = s->region_box[k][2 * a],
        r->deck->box[a][1] = s->region_box[k][2 * a + 1];
      r->deck->have_box = 1;
      break;
    }
  return CM_OK;
}

static int cm__units(cm__drd_t *r, int argc, char **argv) {
  const char *u = argc > 1 ? argv[1] : "";
  ST(r)->units_line_seen = 1;
  ST(r)->units_si = !strcmp(u, "si");
  if (!ST(r)->units_si)
    return CM__DECKERR(r, CM_PARSE,
                       "units %s: not supported; supported: si (cmodes "
                       "scenes are SI and the dump's numbers are taken as "
                       "they are): convert the deck and the dump to units "
                       "si, or give the values by hand with 'cmodes import "
                       "dump'",
                       u);
  return CM_OK;
}

static int cm__boundary(cm__drd_t *r, int argc, char **argv) {
  if (argc < 4)
    return CM__DECKERR(r, CM_PARSE, "boundary: expected three flags");
  for (int a = 0; a < 3; a++) {
    const char *f = argv[1 + a];
    size_t n = strlen(f);
    if (n < 1 || n > 2 || strspn(f, "pfsm") != n)
      return CM__DECKERR(r, CM_PARSE,
                         "boundary %s: expected p, f, s or m (or two of "
                         "them)",
                         f);
    r->deck->boundary[a][0] = f[0];
    r->deck->boundary[a][1] = f[n - 1];
    r->deck->boundary[a][2] = 0;
  }
  return CM_OK;
}

/* 1 for the commands of bonded interactions (bond_style, angle_style,
 * dihedral_style, improper_style). */
static int cm__bonded(const char *c) {
  return !strcmp(c, "bond_style") || !strcmp(c, "angle_style") ||
         !strcmp(c, "dihedral_style") || !strcmp(c, "improper_style");
}

static int cm__simple(cm__drd_t *r, int argc, char **argv) {
  const char *c = argv[0];
  double v;
  int st;
  if (!strcmp(c, "dimension")) {
    if ((st = cm__num(r, c, "value", argc > 1 ? argv[1] : NULL, &v)))
      return st;
    if (v != 2 && v != 3)
      return CM__DECKERR(r, CM_PARSE, "dimension %g: expected 2 or 3", v);
    r->deck->dim = (int)v;
  } else if (!strcmp(c, "timestep")) {
    if ((st = cm__num(r, c, "value", argc > 1 ? argv[1] : NULL, &v)))
      return st;
    if (!(v > 0))
      return CM__DECKERR(r, CM_PARSE, "timestep %g: expected > 0", v);
    r->deck->model->timestep_s = v;
    ST(r)->have_dt = 1;
  } else if (!strcmp(c, "atom_style")) {
    const char *s = argc > 1 ? argv[1] : "";
    if (strcmp(s, "sphere") && strcmp(s, "granular") && strcmp(s, "hybrid"))
      return CM__DECKERR(r, CM_PARSE,
                         "atom_style %s: not a granular style; supported: "
                         "sphere, granular",
                         s);
  } else if (!strcmp(c, "unfix")) {
    if (argc > 1)
      cm__drop_fix(ST(r), argv[1]);
  } else if (!strcmp(c, "if")) { /* read only when it sets what is read */
    return CM__DECKERR(r, CM_PARSE,
                       "if: its commands set what cmodes reads (the pair "
                       "style, fixes, the timestep, ...), and cmodes does "
                       "not evaluate conditions: keep the branch of the run "
                       "that wrote the dump and remove the if");
  } else if (cm__bonded(c) && argc > 1 && strcmp(argv[1], "none") &&
             strcmp(argv[1], "zero")) {
    return CM__DECKERR(r, CM_PARSE,
                       "%s %s: not supported: bonds carry springs that the "
                       "contact model does not have, and the step cmodes "
                       "reports would not hold for them; cmodes reads "
                       "decks of contacts only (a %s of none or zero is "
                       "read)",
                       c, argv[1], c);
  }
  return CM_OK;
}

static int cm__read_file(cm__drd_t *r, const char *path);

/* include FILE: relative to the including deck's folder, else as given. */
static int cm__include(cm__drd_t *r, int argc, char **argv) {
  if (argc < 2)
    return CM__DECKERR(r, CM_PARSE, "include: no file");
  if (r->depth >= 8)
    return CM__DECKERR(r, CM_PARSE, "include %s: nested too deeply", argv[1]);
  char path[1024];
  const char *slash = strrchr(r->file, '/');
  if (argv[1][0] != '/' && slash)
    snprintf(path, sizeof path, "%.*s/%s", (int)(slash - r->file), r->file,
             argv[1]);
  else
    snprintf(path, sizeof path, "%s", argv[1]);
  FILE *f = fopen(path, "r");
  if (!f)
    snprintf(path, sizeof path, "%s", argv[1]);
  else
    fclose(f);
  const char *file = r->file;
  long line = r->line;
  r->depth++;
  int st = cm__read_file(r, path);
  r->depth--;
  r->file = file, r->line = line; /* messages are formatted already */
  return st;
}

/* ---- the reading loop
 * ---------------------------------------------------------- */

/* Commands skipped without a word: they run, output or set up atoms. */
static int cm__skipped(const char *c) {
  static const char *const skip[] = {"newton",
                                     "comm_modify",
                                     "communicate",
                                     "neighbor",
                                     "neigh_modify",
                                     "atom_modify",
                                     "thermo",
                                     "thermo_style",
                                     "thermo_modify",
                                     "dump",
                                     "dump_modify",
                                     "undump",
                                     "run",
                                     "compute",
                                     "uncompute",
                                     "label",
                                     "jump",
                                     "if",
                                     "print",
                                     "write_dump",
                                     "write_restart",
                                     "write_data",
                                     "restart",
                                     "log",
                                     "echo",
                                     "shell",
                                     "next",
                                     "processors",
                                     "velocity",
                                     "set",
                                     "create_atoms",
                                     "lattice",
                                     "mass",
                                     "reset_timestep",
                                     "run_style",
                                     "special_bonds",
                                     "minimize",
                                     "min_style",
                                     "min_modify",
                                     "balance",
                                     "partition",
                                     "suffix",
                                     "package",
                                     "delete_atoms",
                                     "displace_atoms",
                                     "change_box",
                                     "quit",
                                     "info",
                                     "fix_modify",
                                     "timer",
                                     "reset_atom_ids",
                                     "molecule",
                                     "read_data",
                                     "read_restart",
                                     "soft_particles",
                                     "hard_particles",
                                     "modify_timing",
                                     "clear"};
  for (size_t k = 0; k < sizeof skip / sizeof skip[0]; k++)
    if (!strcmp(c, skip[k]))
      return 1;
  return 0;
}

static int cm__dispatch(cm__drd_t *r, int argc, char **argv) {
  const char *c = argv[0];
  if (!strcmp(c, "variable"))
    return cm__deck_variable(r, argc, argv);
  if (!strcmp(c, "units"))
    return cm__units(r, argc, argv);
  if (!strcmp(c, "boundary"))
    return cm__boundary(r, argc, argv);
  if (!strcmp(c, "region"))
    return cm__region(r, argc, argv);
  if (!strcmp(c, "create_box"))
    return cm__create_box(r, argc, argv);
  if (!strcmp(c, "pair_style"))
    return cm__pair_style(r, argc, argv);
  if (!strcmp(c, "pair_coeff"))
    return cm__pair_coeff(r, argc, argv);
  if (!strcmp(c, "fix"))
    return cm__fix(r, argc, argv);
  if (!strcmp(c, "group"))
    return cm__group(r, argc, argv);
  if (!strcmp(c, "include"))
    return cm__include(r, argc, argv);
  return cm__simple(r, argc, argv);
}

/* 1 for a command the reader reads (whose variables it substitutes), 0
 * for one it skips silently, -1 for one it skips with a warning:
 * argv[0..n) of the command. */
static int cm__reads(cm__drd_t *r, int n, char **argv) {
  if (n <= 0 || cm__skipped(argv[0]))
    return 0;
  if (!strcmp(argv[0], "fix") && n >= 4 && !strchr(argv[3], '$')) {
    char style[64];
    snprintf(style, sizeof style, "%s", argv[3]);
    cm__unsuffix(style);
    /* a harmless fix is read when it replaces a wall or a damping fix */
    return !cm__fix_harmless(style) || !strcmp(style, "wall/reflect") ||
           cm__fix_tracked(ST(r), argv[1]);
  }
  static const char *const read[] = {
      "variable", "units",      "dimension", "boundary",   "atom_style",
      "region",   "create_box", "timestep",  "pair_style", "pair_coeff",
      "unfix",    "include",    "fix",       "group"};
  for (size_t k = 0; k < sizeof read / sizeof read[0]; k++)
    if (!strcmp(argv[0], read[k]))
      return 1;
  return cm__bonded(argv[0]) || strchr(argv[0], '$') ? 1 : -1;
}

/* For `if BOOL then C1 C2 ... [elif BOOL C ...] [else C ...]` (argv[0..n),
 * quotes removed): 1 if one of its commands is one the reader reads and
 * that sets what the contact model takes (the pair style, fixes, the
 * timestep, units, ...; the box commands create_box, region and
 * atom_style are structural and pass), to be refused (cm__simple); a
 * variable it sets is marked conditional (cm__deck_conditional): an error
 * only where it is used. */
static int cm__if_reads(cm__drd_t *r, int n, char **argv) {
  int reads = 0;
  for (int i = 2; i < n; i++) {
    if (!strcmp(argv[i], "then") || !strcmp(argv[i], "else"))
      continue;
    if (!strcmp(argv[i], "elif")) {
      i++; /* its condition */
      continue;
    }
    char *copy = cm__strdup(argv[i]), *sub[CM__DECK_MAX_ARGS];
    int m = copy ? cm__deck_split(copy, sub, CM__DECK_MAX_ARGS) : -1;
    if (m > 1 && !strcmp(sub[0], "variable"))
      cm__deck_conditional(r, sub[1], m > 2 ? sub[2] : NULL);
    else if (m < 0)
      reads = 1;
    else if (m > 0 && strcmp(sub[0], "create_box") &&
             strcmp(sub[0], "region") && strcmp(sub[0], "atom_style"))
      reads |= cm__reads(r, m, sub) == 1;
    free(copy);
  }
  return reads;
}

/* 1 if the command is read (then its variables are substituted): others
 * may use thermo keywords that only a run can evaluate. An `if` whose
 * commands the reader would read is read, to be refused (cm__simple);
 * `next` is skipped with a warning. */
static int cm__wanted(cm__drd_t *r, char *raw) {
  char *copy = cm__strdup(raw), *argv[CM__DECK_MAX_ARGS];
  if (!copy)
    return 1;
  int n = cm__deck_split(copy, argv, CM__DECK_MAX_ARGS);
  if (n < 0) {
    free(copy);
    return 1; /* too long: the command reports it */
  }
  int want = n > 0 && !strcmp(argv[0], "if") ? cm__if_reads(r, n, argv)
                                             : cm__reads(r, n, argv);
  if (want < 0) {
    cm__deck_warn(r, "command '%s' is not read", argv[0]);
    want = 0;
  }
  if (n > 1 && !strcmp(argv[0], "next"))
    cm__deck_warn(r,
                  "next %s: the deck loops; cmodes reads each line once, "
                  "with each variable's first value: if the dump was "
                  "written in a later pass, give that pass's values with "
                  "--var NAME=VALUE",
                  argv[1]);
  free(copy);
  return want;
}

/* 1 if the raw line is a `variable` command. */
static int cm__is_variable(const char *raw) {
  while (*raw == ' ' || *raw == '\t')
    raw++;
  return !strncmp(raw, "variable", 8) && (raw[8] == ' ' || raw[8] == '\t');
}

/* One command line: substitute, split, dispatch. */
static int cm__command(cm__drd_t *r, char *raw) {
  if (!cm__wanted(r, raw))
    return CM_OK;
  char *line = NULL, *argv[CM__DECK_MAX_ARGS];
  int st = cm__deck_substitute(r, raw, &line);
  if (st && cm__is_variable(raw)) {
    /* a variable defined from run-time values (count(all), thermo
     * keywords): not needed unless a command the importer reads uses it,
     * which then fails naming it as undefined */
    cm__deck_warn(r, "variable not evaluable before a run, ignored: %s",
                  r->ctx->message);
    cm_context_clear(r->ctx);
    return CM_OK;
  }
  if (st)
    return st;
  int argc = cm__deck_split(line, argv, CM__DECK_MAX_ARGS);
  if (argc < 0)
    st = CM__DECKERR(r, CM_PARSE, "more than %d words", CM__DECK_MAX_ARGS);
  else if (argc > 0)
    st = cm__dispatch(r, argc, argv);
  free(line);
  return st;
}

static int cm__read_file(cm__drd_t *r, const char *path) {
  FILE *f = cm__fopen_input(path, "r");
  if (!f)
    return CM__ERR(r->ctx, CM_IO, path, "%s%s%s: cannot open: %s",
                   r->depth ? r->file : "", r->depth ? ": include " : "", path,
                   strerror(errno));
  r->file = path;
  r->line = 0;
  char *buf = NULL;
  size_t cap = 0;
  long lines = 0;
  int st = CM_OK, got = 0;
  while (!st && (got = cm__deck_next(f, &buf, &cap, &lines, r)) > 0)
    st = cm__command(r, buf);
  if (!st && got < 0)
    st = got;
  free(buf);
  fclose(f);
  return st;
}

/* ---- resolving the laws at the end
 * --------------------------------------------- */

/* pair granular: a type pair i != j not set by pair_coeff gets LAMMPS'
 * mixed coefficients (PairGranular::init_one of 2021-2022: geometric means;
 * material models mix E* without the 4/3 that pair_coeff applies, a
 * LAMMPS quirk kept here; set the pair explicitly to avoid it). */
static int cm__granular_mix(cm__drd_t *r) {
  cm__dst_t *s = ST(r);
  cm_contact_model_t *m = r->deck->model;
  for (int a = 1; a <= s->ntypes; a++)
    for (int b = a + 1; b <= s->ntypes; b++) {
      if (s->set[a][b] || !s->set[a][a] || !s->set[b][b])
        continue;
      const cm_contact_law_t *A = &m->pair[a][a], *B = &m->pair[b][b];
      if (A->normal != B->normal || A->damping != B->damping ||
          A->tangential != B->tangential) {
        r->line = s->pair_line;
        return CM__DECKERR(r, CM_PARSE,
                           "pair granular: types %d and %d have different "
                           "models, which LAMMPS cannot mix: set 'pair_coeff "
                           "%d %d' explicitly",
                           a, b, a, b);
      }
      cm_contact_law_t L = *A;
      if (A->normal == CM_GRAN_HOOKE || A->normal == CM_GRAN_HERTZ)
        L.kn = sqrt(A->kn * B->kn);
      else
        L.kn = 1.0 / ((1 - s->pois[a] * s->pois[a]) / s->emod[a] +
                      (1 - s->pois[b] * s->pois[b]) / s->emod[b]);
      L.gamma_n = sqrt(A->gamma_n * B->gamma_n);
      L.kt = sqrt(A->kt * B->kt);
      L.gamma_t = sqrt(A->gamma_t * B->gamma_t);
      L.mu = sqrt(A->mu * B->mu);
      m->pair[a][b] = m->pair[b][a] = L;
    }
  return CM_OK;
}

/* LIGGGHTS: the law of types a, b from the material properties
 * (global_properties.cpp: Yeff, Geff, betaeff). */
static int cm__liggghts_law(cm__drd_t *r, int a, int b, cm_contact_law_t *L) {
  cm__dst_t *s = ST(r);
  double e = s->rest[a][b];
  if (!(e > 0 && e <= 1) || !(s->young[a] > 0) || !(s->young[b] > 0) ||
      !(s->nu[a] > -1 && s->nu[a] < 0.5) || !(s->nu[b] > -1 && s->nu[b] < 0.5))
    return CM__ERR(r->ctx, CM_PARSE, r->deck->path,
                   "%s: types %d and %d: need youngsModulus > 0, -1 < "
                   "poissonsRatio < 0.5 and 0 < coefficientRestitution <= 1 "
                   "(got E %g and %g, nu %g and %g, e %g)",
                   r->deck->path, a, b, s->young[a], s->young[b], s->nu[a],
                   s->nu[b], e);
  *L = s->lig;
  L->kn = 1.0 / ((1 - s->nu[a] * s->nu[a]) / s->young[a] +
                 (1 - s->nu[b] * s->nu[b]) / s->young[b]); /* Y* */
  L->kt = 1.0 / (2 * (2 - s->nu[a]) * (1 + s->nu[a]) / s->young[a] +
                 2 * (2 - s->nu[b]) * (1 + s->nu[b]) / s->young[b]); /* G* */
  L->gamma_n = log(e) / sqrt(log(e) * log(e) + M_PI * M_PI);         /* beta */
  L->mu = s->fric[a][b];
  return CM_OK;
}

static int cm__liggghts_laws(cm__drd_t *r) {
  cm__dst_t *s = ST(r);
  int n = s->ntypes, st = CM_OK;
  const char *miss = s->have_young < n  ? "youngsModulus"
                     : s->have_nu < n   ? "poissonsRatio"
                     : s->have_rest < n ? "coefficientRestitution"
                     : s->have_fric < n ? "coefficientFriction"
                     : s->pair == CM_LAW_LIGGGHTS_HOOKE && !s->have_charvel
                         ? "characteristicVelocity"
                         : NULL;
  if (miss)
    return CM__ERR(r->ctx, CM_PARSE, r->deck->path,
                   "%s: LIGGGHTS model %s needs fix property/global %s for "
                   "all %d atom types (create_box), as LIGGGHTS itself does",
                   r->deck->path,
                   s->pair == CM_LAW_LIGGGHTS_HOOKE ? "hooke" : "hertz", miss,
                   n);
  if (s->pair == CM_LAW_LIGGGHTS_HOOKE && !(s->lig.charvel > 0))
    return CM__ERR(r->ctx, CM_PARSE, r->deck->path,
                   "%s: characteristicVelocity %g: expected > 0", r->deck->path,
                   s->lig.charvel);
  for (int a = 1; a <= n && !st; a++)
    for (int b = 1; b <= n && !st; b++)
      st = cm__liggghts_law(r, a, b, &r->deck->model->pair[a][b]);
  return st;
}

/* The per-type-pair laws of the pair style. */
static int cm__pair_laws(cm__drd_t *r) {
  cm__dst_t *s = ST(r);
  cm_contact_model_t *m = r->deck->model;
  m->ntypes = s->ntypes;
  if (s->pair == CM_LAW_GRANULAR)
    return cm__granular_mix(r);
  if (s->pair == CM_LAW_LIGGGHTS_HERTZ || s->pair == CM_LAW_LIGGGHTS_HOOKE)
    return cm__liggghts_laws(r);
  if (!s->coeff_seen)
    cm__deck_warn(r,
                  "no pair_coeff after pair_style %s: LAMMPS would stop "
                  "(all pair coeffs are not set); its values are taken "
                  "for every type pair",
                  r->deck->pair_style);
  for (int a = 1; a <= s->ntypes; a++)
    for (int b = 1; b <= s->ntypes; b++)
      m->pair[a][b] = s->gran;
  return CM_OK;
}

/* Walls in their final order: planes as given, then the cylinder. */
static int cm__final_walls(cm__drd_t *r) {
  cm__dst_t *s = ST(r);
  cm_lammps_deck_t *d = r->deck;
  cm_contact_model_t *m = d->model;
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < s->nwalls; k++) {
      const cm__wall_t *w = &s->walls[k];
      if (w->cylinder != pass)
        continue;
      int idx = pass ? d->nplanes : d->nplanes++;
      if (pass) {
        d->cylinder = 1, d->cyl_radius = w->radius;
        d->cyl_center[0] = w->c[0], d->cyl_center[1] = w->c[1];
        m->cyl_rwall = d->liggghts ? 0.0 : -2.0 * w->radius; /* LAMMPS */
      } else {
        memcpy(d->planes[idx], w->p, sizeof w->p);
      }
      m->wall[idx] = w->law;
      m->wall_type[idx] = d->liggghts ? w->type : 0;
      snprintf(d->wall_fix[idx], sizeof d->wall_fix[idx], "%s", w->fix);
      d->wall_line[idx] = w->line;
      if (d->liggghts && (w->type < 1 || w->type > s->ntypes)) {
        r->line = w->line;
        return CM__DECKERR(r, CM_PARSE,
                           "fix %s: wall type %d is not an atom type "
                           "(1..%d)",
                           w->fix, w->type, s->ntypes);
      }
    }
  return CM_OK;
}

/* ---- the summary line
 * ------------------------------------------------------------ */

static void cm__law_text(const cm_lammps_deck_t *d, const cm_contact_law_t *L,
                         char *buf, size_t size) {
  static const char *const nm[] = {"hooke", "hertz", "hertz/material", "dmt"};
  static const char *const dm[] = {"velocity", "mass_velocity", "viscoelastic",
                                   "tsuji"};
  static const char *const tm[] = {"linear_nohistory", "linear_history",
                                   "mindlin"};
  switch (L->style) {
  case CM_LAW_GRAN_HOOKE:
  case CM_LAW_GRAN_HOOKE_HISTORY:
  case CM_LAW_GRAN_HERTZ_HISTORY: {
    int hz = L->style == CM_LAW_GRAN_HERTZ_HISTORY;
    snprintf(buf, size,
             "kn %.6g %s, kt %.6g %s, gamma_n %.6g 1/s, gamma_t %.6g 1/s, "
             "friction %.6g",
             L->kn, hz ? "N/m^2" : "N/m",
             L->style == CM_LAW_GRAN_HOOKE ? 0.0 : L->kt,
             L->style == CM_LAW_GRAN_HOOKE ? "(no history)"
             : hz                          ? "N/m^2"
                                           : "N/m",
             L->gamma_n, L->gamma_t, L->mu);
    break;
  }
  case CM_LAW_GRANULAR:
    snprintf(buf, size,
             "%s %.6g %s, damping %s %.6g, tangential %s kt %.6g, x_gamma_t "
             "%.6g, friction %.6g",
             nm[L->normal], L->kn,
             L->normal <= CM_GRAN_HERTZ ? "(kn)" : "Pa (4/3 E*)",
             dm[L->damping], L->gamma_n, tm[L->tangential], L->kt, L->gamma_t,
             L->mu);
    break;
  case CM_LAW_LIGGGHTS_HERTZ:
  case CM_LAW_LIGGGHTS_HOOKE:
    snprintf(buf, size,
             "model %s tangential %s: Y* %.6g Pa, G* %.6g Pa, beta %.6g, "
             "friction %.6g%s",
             L->style == CM_LAW_LIGGGHTS_HERTZ ? "hertz" : "hooke",
             L->tangential == CM_GRAN_LINEAR_HISTORY ? "history" : "no_history",
             L->kn, L->kt, L->gamma_n, L->mu,
             L->tdamp ? "" : ", tangential_damping off");
    break;
  default:
    snprintf(buf, size, "(none)");
  }
  (void)d;
}

static void cm__summary(cm_lammps_deck_t *d) {
  cm_contact_model_t *m = d->model;
  char law[400];
  cm__law_text(d, &m->pair[1][1], law, sizeof law);
  int same = 1; /* do all walls follow the pair law? */
  for (int w = 0; w < d->nplanes + d->cylinder; w++)
    same &=
        d->liggghts || !memcmp(&m->wall[w], &m->pair[1][1], sizeof m->wall[w]);
  snprintf(m->summary, sizeof m->summary,
           "%s%s: %s%s; walls: %d plane%s%s from fix wall/gran%s; timestep "
           "%g s",
           d->liggghts ? "LIGGGHTS " : "", d->pair_style, law,
           m->ntypes > 1 ? " (types 1 1)" : "", d->nplanes,
           d->nplanes == 1 ? "" : "s", d->cylinder ? " and a z-cylinder" : "",
           d->nplanes + d->cylinder == 0 ? ""
           : same                        ? " (the same law)"
                                         : " (their own laws)",
           m->timestep_s);
  for (int t = 1; t <= m->ntypes && t <= CM__T; t++) { /* spring/self */
    const double *kt = m->tether[t];
    size_t n = strlen(m->summary);
    char of[32] = "";
    if (m->ntypes > 1)
      snprintf(of, sizeof of, " of type %d", t);
    if (kt[0] > 0 || kt[1] > 0 || kt[2] > 0)
      snprintf(m->summary + n, sizeof m->summary - n,
               "; fix spring/self: tethers of %g, %g, %g N/m on x, y, z%s",
               kt[0], kt[1], kt[2], of);
  }
  /* the drags of fix viscous (N s/m) and fix langevin (1/s), by type */
  static const char *const what[2] = {"fix viscous: drag",
                                      "fix langevin: drag per unit mass"};
  static const char *const unit[2] = {"N s/m", "1/s"};
  for (int k = 0; k < 2; k++) {
    const double *v = k ? m->drag_rate : m->drag;
    double lo = INFINITY, hi = 0;
    for (int t = 1; t <= m->ntypes && t <= CM__T; t++)
      lo = fmin(lo, v[t]), hi = fmax(hi, v[t]);
    size_t n = strlen(m->summary);
    if (hi > 0 && lo == hi)
      snprintf(m->summary + n, sizeof m->summary - n,
               "; %s %g %s on every particle", what[k], hi, unit[k]);
    else if (hi > 0)
      snprintf(m->summary + n, sizeof m->summary - n,
               "; %s %g to %g %s by type", what[k], lo, hi, unit[k]);
  }
}

/* ---- public
 * ---------------------------------------------------------------------- */

void cm_lammps_deck_destroy(cm_lammps_deck_t **dp) {
  if (!dp || !*dp)
    return;
  free((*dp)->path);
  free((*dp)->model);
  free((*dp)->warnings);
  free(*dp);
  *dp = NULL;
}

/* Checks after the last line: units, a pair style, the laws, the walls. */
static int cm__finish(cm__drd_t *r) {
  cm__dst_t *s = ST(r);
  cm_lammps_deck_t *d = r->deck;
  if (!s->units_line_seen)
    return CM__ERR(r->ctx, CM_PARSE, d->path,
                   "%s: no units command: LAMMPS' default units are lj, "
                   "which cmodes cannot convert; supported: units si",
                   d->path);
  if (!s->pair)
    return CM__ERR(r->ctx, CM_PARSE, d->path,
                   "%s: no pair_style: supported: %s", d->path,
                   CM__PAIR_STYLES);
  if (!s->have_dt) {
    d->model->timestep_s = 1e-8; /* LAMMPS' default step for units si */
    r->line = 0;
    cm__deck_warn(r, "no timestep command: LAMMPS' default for units si, "
                     "1e-8 s, is recorded");
  }
  if (s->nunsafe) { /* the first such fix still in effect */
    r->file = s->unsafe[0].file, r->line = s->unsafe[0].line;
    int st = CM__DECKERR(
        r, CM_PARSE,
        "fix %s %s is still in effect at the end of the deck: %s, so the "
        "step cmodes reports could be unsafe for the run; unfix it before "
        "the run that wrote the dump (as the deck's run does, if it does), "
        "or remove it if that run had none",
        s->unsafe[0].id, s->unsafe[0].style,
        cm__fix_unsafe(s->unsafe[0].style));
    r->file = d->path;
    return st;
  }
  for (int k = 0; k < s->ndrag; k++) /* they add, as their forces */
    for (int t = 0; t <= CM__T; t++) {
      d->model->drag[t] += s->drag[k].gamma[t];
      d->model->drag_rate[t] += s->drag[k].rate[t];
      for (int a = 0; a < 3; a++)
        d->model->tether[t][a] += s->drag[k].tether[t][a];
    }
  int st = cm__pair_laws(r);
  if (!st)
    st = cm__final_walls(r);
  if (!st)
    cm__summary(d);
  return st;
}

/* A new deck with LAMMPS' defaults (3D, periodic box, no walls). */
static cm_lammps_deck_t *cm__deck_new(const char *path) {
  cm_lammps_deck_t *d = calloc(1, sizeof *d);
  if (!d)
    return NULL;
  d->path = cm__strdup(path);
  d->model = calloc(1, sizeof *d->model);
  d->dim = 3;
  for (int a = 0; a < 3; a++)
    snprintf(d->boundary[a], sizeof d->boundary[a], "pp");
  if (!d->path || !d->model)
    cm_lammps_deck_destroy(&d);
  return d;
}

/* Defines the command line's index variables ("NAME=VALUE"). */
static int cm__predefine(cm__drd_t *r, const char *const *vars) {
  int st = CM_OK;
  for (int k = 0; vars && vars[k] && !st; k++) {
    const char *eq = strchr(vars[k], '=');
    if (!eq || eq == vars[k])
      return CM__ERR(r->ctx, CM_USAGE, "--var",
                     "--var '%s': expected NAME=VALUE", vars[k]);
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(eq - vars[k]), vars[k]);
    char *argv[4] = {"variable", name, "index", (char *)(eq + 1)};
    st = cm__deck_variable(r, 4, argv);
  }
  return st;
}

int cm_lammps_deck_read_vars(cm_context_t *ctx, const char *path,
                             const char *const *vars, cm_lammps_deck_t **out) {
  if (!path || !out)
    return CM__ERR(ctx, CM_USAGE, NULL, "cm_lammps_deck_read: NULL argument");
  *out = NULL;
  cm_lammps_deck_t *d = cm__deck_new(path);
  cm__dst_t *s = calloc(1, sizeof *s);
  if (!d || !s) {
    cm_lammps_deck_destroy(&d);
    free(s);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  s->ntypes = CM__T;
  cm__drd_t r;
  memset(&r, 0, sizeof r);
  r.ctx = ctx, r.deck = d, r.priv = s, r.file = "--var";
  int st = cm__predefine(&r, vars);
  if (!st)
    st = cm__read_file(&r, d->path);
  r.file = d->path;
  if (!st)
    st = cm__finish(&r);
  cm__deck_vars_free(&r);
  free(s);
  if (st)
    cm_lammps_deck_destroy(&d);
  *out = d;
  return st;
}

int cm_lammps_deck_read(cm_context_t *ctx, const char *path,
                        cm_lammps_deck_t **out) {
  return cm_lammps_deck_read_vars(ctx, path, NULL, out);
}

int cm_lammps_deck_apply(cm_context_t *ctx, const cm_lammps_deck_t *d,
                         cm_dump_options_t *o) {
  if (!d || !o)
    return CM__ERR(ctx, CM_USAGE, NULL,
                   "cm_lammps_deck_apply: NULL "
                   "argument");
  if (o->nplanes || o->cylinder || o->k > 0 || o->young > 0)
    return CM__ERR(ctx, CM_USAGE, "walls",
                   "%s: the walls and the contact laws come from the deck: "
                   "give no --wall-plane, --wall-zcylinder, --k or --young "
                   "with it",
                   d->path);
  o->nplanes = d->nplanes;
  memcpy(o->planes, d->planes, sizeof o->planes);
  o->cylinder = d->cylinder;
  o->cyl_radius = d->cyl_radius;
  memcpy(o->cyl_center, d->cyl_center, sizeof o->cyl_center);
  o->dim = d->dim;
  o->model = d->model;
  return CM_OK;
}

/* A dump's header always has the boundary flags: the deck's only fill in
 * hand-written dumps without them. Several densities: the user says. */
void cm_lammps_deck_complete(const cm_lammps_deck_t *deck, cm_dump_t *d,
                             cm_dump_options_t *o) {
  if (!deck || !d || !o)
    return;
  for (int a = 0; a < 3; a++)
    if (strchr(deck->boundary[a], 'p') && !d->boundary[a][0])
      snprintf(d->boundary[a], sizeof d->boundary[a], "pp");
  if (d->mass || o->density > 0)
    return;
  double rho = 0;
  for (int t = 1; t <= CM__T; t++)
    if (deck->density[t] > 0 && (rho == 0 || deck->density[t] == rho))
      rho = deck->density[t];
    else if (deck->density[t] > 0)
      return; /* several densities: the user has to say */
  o->density = rho;
}

int cm_import_lammps(cm_context_t *ctx, const char *deck_path,
                     const char *dump_path, const cm_dump_options_t *opts,
                     cm_scene_t **out) {
  if (out)
    *out = NULL;
  cm_dump_options_t o;
  if (opts) {
    o = *opts;
  } else {
    cm_dump_options_init(&o);
    o.periodic = CM_DUMP_PERIODIC_IMAGE;
  }
  cm_lammps_deck_t *deck = NULL;
  cm_dump_t *d = NULL;
  int st = cm_lammps_deck_read(ctx, deck_path, &deck);
  if (!st)
    st = cm_lammps_deck_apply(ctx, deck, &o);
  if (!st)
    st = cm_dump_read(ctx, dump_path, &o, &d);
  if (!st) {
    cm_lammps_deck_complete(deck, d, &o);
    st = cm_dump_to_scene(ctx, d, &o, out);
  }
  cm_dump_destroy(&d);
  cm_lammps_deck_destroy(&deck);
  return st;
}
