/* cmd_import_mjcf.c: `cmodes import mjcf MODEL.xml`: a MuJoCo model brought
 * to a contact configuration (a keyframe, or settled by simulation) with
 * MuJoCo's C API, written as a Matrix Market system (the --matrices
 * manifest form): M = mj_fullM (joint space, general M), one J row per
 * active contact, n^T (J_p(body2, p) - J_p(body1, p)) from mj_jac at the
 * contact point p along MuJoCo's contact normal n (geom1 -> geom2), and a
 * stiffness per row from --k or from the contact's solref/solimp:
 *
 *   k_c = k_mj / A_cc,  k_mj = 1 / (dmax^2 tau^2 zeta^2)  (1/s^2),
 *
 * MuJoCo's reference stiffness (tau = solref[0], at least twice the model
 * timestep as MuJoCo enforces, zeta = solref[1], dmax = solimp[1]) turned
 * from constraint-space acceleration into a force stiffness by the
 * contact's effective mass 1 / A_cc, A = J M^-1 J^T: each contact alone
 * then has the frequency sqrt(k_mj) of MuJoCo's reference acceleration,
 * and the coupled modes are those of these penalty springs. MuJoCo's own
 * solver is not a penalty model (its frequencies are those of
 * (A + R)^-1 diag(K imp) A, nearly uncoupled): docs/importers.md says how
 * far apart the two are, measured. Rows and columns carry MuJoCo's names (geom
 * pairs; joints and their dofs) in rows.txt, cols.txt and the manifest's
 * meta. Built only when MuJoCo (libmujoco-dev) is found; otherwise the
 * command says so. Not for other formats (cmd_import.c). */
#include "cli.h"

#include "cmodes.h"
#include "internal.h"

#include <stdio.h>
#include <string.h>

#ifndef CM_HAVE_MUJOCO

int cm__cmd_import_mjcf(int argc, char **argv) {
  (void)argc, (void)argv;
  fprintf(stderr, "cmodes import mjcf: this cmodes was built without "
                  "MuJoCo (apt-get install libmujoco-dev, then rebuild)\n");
  return cm_status_exit(CM_USAGE);
}

#else

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <mujoco/mujoco.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void cm__mjcf_usage(FILE *f) {
  fprintf(f, "usage: cmodes import mjcf MODEL.xml [--keyframe K | --settle S] "
             "[--k K] -o DIR\n\n"
             "Loads a MuJoCo model, takes keyframe K (index or name) or the "
             "initial state\nsettled for S seconds of simulation, and writes "
             "the contact system in the\n--matrices manifest form to DIR "
             "(M.mtx, J.mtx, k.mtx, rows.txt, cols.txt,\nmanifest.json): M "
             "from mj_fullM, one J row per active contact along its\nnormal "
             "(mj_jac), k from --k (N/m) or from solref/solimp (docs/"
             "importers.md).\nThen: cmodes analyze --matrices DIR/"
             "manifest.json\n");
}

/* "name" of object id, or "TYPE#id" when unnamed. */
static const char *cm__mj_name(const mjModel *m, int type, int id,
                               const char *what, char *buf, size_t n) {
  const char *s = id >= 0 ? mj_id2name(m, type, id) : NULL;
  if (s && *s)
    return s;
  snprintf(buf, n, "%s#%d", what, id);
  return buf;
}

/* A geom's name, or "BODY/geom#ID" when it has none (its body says which
 * robot and link it belongs to). */
static const char *cm__geom_name(const mjModel *m, int g, const char *body,
                                 char *buf, size_t n) {
  const char *s = mj_id2name(m, mjOBJ_GEOM, g);
  if (s && *s)
    return s;
  snprintf(buf, n, "%s/geom#%d", body, g);
  return buf;
}

static FILE *cm__mj_open(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f)
    fprintf(stderr, "cmodes import mjcf: cannot write %s: %s\n", path,
            strerror(errno));
  return f;
}

/* Name of dof j: its joint, with the axis for free and ball joints. */
static void cm__dof_name(const mjModel *m, int j, char *out, size_t n) {
  static const char *const freeax[] = {"x", "y", "z", "rx", "ry", "rz"};
  static const char *const ballax[] = {"rx", "ry", "rz"};
  char buf[64];
  int jnt = m->dof_jntid[j], k = j - m->jnt_dofadr[jnt];
  const char *jn = cm__mj_name(m, mjOBJ_JOINT, jnt, "joint", buf, sizeof buf);
  if (m->jnt_type[jnt] == mjJNT_FREE)
    snprintf(out, n, "%s.%s", jn, freeax[k]);
  else if (m->jnt_type[jnt] == mjJNT_BALL)
    snprintf(out, n, "%s.%s", jn, ballax[k]);
  else
    snprintf(out, n, "%s", jn);
}

/* Parsed arguments of `cmodes import mjcf`. */
typedef struct {
  const char *path;     /* MODEL.xml */
  const char *out;      /* -o DIR */
  const char *keyframe; /* --keyframe: index or name, or NULL */
  double settle_s;      /* --settle: seconds simulated, 0 = none */
  double kfix;          /* --k: one stiffness for all rows (N/m), 0 = none */
  int quiet;            /* -q: no summary line on stderr */
} cm__mjcf_args_t;

/* The contact system read from MuJoCo, dense, with its workspace. */
typedef struct {
  int nv;      /* dofs: columns of J, order of M */
  int nc;      /* active contacts: rows of J */
  double *J;   /* J, row-major, room for ncon rows of nv */
  double *k;   /* stiffness of each row, N/m, size ncon */
  int *con;    /* index into d->contact of each row, size ncon */
  double *jp1; /* translational Jacobian of body 1, 3 x nv */
  double *jp2; /* translational Jacobian of body 2, 3 x nv */
  double *w;   /* M^-1 row, size nv */
  double *M;   /* mj_fullM, nv x nv */
} cm__mj_system_t;

/* Reads the command line into a; returns -1 to go on, else the exit code. */
static int cm__mjcf_parse(int argc, char **argv, cm__mjcf_args_t *a) {
  static const struct option longopts[] = {
      {"keyframe", required_argument, 0, 'K'},
      {"settle", required_argument, 0, 'S'},
      {"k", required_argument, 0, 'k'},
      {"output", required_argument, 0, 'o'},
      {"quiet", no_argument, 0, 'q'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int c;
  memset(a, 0, sizeof *a);
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
    char *end = NULL;
    switch (c) {
    case 'K':
      a->keyframe = optarg;
      break;
    case 'S':
      a->settle_s = strtod(optarg, &end);
      if (!*optarg || *end || !(a->settle_s >= 0) || !isfinite(a->settle_s)) {
        fprintf(stderr,
                "cmodes import mjcf: --settle: '%s' is not a "
                "number >= 0\n",
                optarg);
        return cm_status_exit(CM_USAGE);
      }
      break;
    case 'k':
      a->kfix = strtod(optarg, &end);
      if (!*optarg || *end || !(a->kfix > 0) || !isfinite(a->kfix)) {
        fprintf(stderr,
                "cmodes import mjcf: --k: '%s' is not a number "
                "> 0\n",
                optarg);
        return cm_status_exit(CM_USAGE);
      }
      break;
    case 'o':
      a->out = optarg;
      break;
    case 'q':
      a->quiet = 1;
      break;
    case 'h':
      cm__mjcf_usage(stdout);
      return 0;
    default:
      cm__mjcf_usage(stderr);
      return cm_status_exit(CM_USAGE);
    }
  }
  if (optind + 1 != argc || !a->out || (a->keyframe && a->settle_s > 0)) {
    fprintf(stderr, "cmodes import mjcf: expected one MODEL.xml, -o DIR, "
                    "and at most one of --keyframe and --settle\n");
    cm__mjcf_usage(stderr);
    return cm_status_exit(CM_USAGE);
  }
  a->path = argv[optind];
  return -1;
}

/* --settle: at most this many of the model's steps */
#define CM__SETTLE_MAX_STEPS 1e8

/* MuJoCo's warnings (mju_user_warning): the first one's text, kept for
 * the message, instead of MuJoCo's own print to standard output and its
 * MUJOCO_LOG.TXT in the working folder. */
static char cm__mj_warning[512];

static void cm__mj_on_warning(const char *msg) {
  if (!cm__mj_warning[0])
    snprintf(cm__mj_warning, sizeof cm__mj_warning, "%s", msg);
}

/* What MuJoCo's warnings (d->warning) say of the pose: 0, or the exit
 * code after the message. A full contact or constraint buffer dropped
 * contacts (the system would lack their rows: a higher, unsafe step); a
 * bad number in qpos, qvel or qacc made MuJoCo reset the simulation (the
 * pose is not the settled one). */
static int cm__mjcf_warnings(const mjData *d, const cm__mjcf_args_t *a) {
  static const struct {
    int w, status;
    const char *why;
  } bad[] = {
      {mjWARN_CONTACTFULL, CM_LIMIT,
       "MuJoCo's contact buffer filled up and it dropped contacts, which "
       "the system would lack (its step would be too large); raise nconmax "
       "(<size nconmax=\"...\"/>) or the model's memory"},
      {mjWARN_CNSTRFULL, CM_LIMIT,
       "MuJoCo's constraint buffer filled up and it dropped constraints; "
       "raise njmax (<size njmax=\"...\"/>) or the model's memory"},
      {mjWARN_BADQPOS, CM_NUMERIC, "qpos"},
      {mjWARN_BADQVEL, CM_NUMERIC, "qvel"},
      {mjWARN_BADQACC, CM_NUMERIC, "qacc"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (d->warning[bad[i].w].number <= 0)
      continue;
    fprintf(stderr, "cmodes import mjcf: %s: ", a->path);
    if (bad[i].status == CM_NUMERIC)
      fprintf(stderr,
              "the simulation went unstable (a bad number in %s) and "
              "MuJoCo reset it, so the pose is not a settled one; settle "
              "for less time or give a keyframe",
              bad[i].why);
    else
      fputs(bad[i].why, stderr);
    fprintf(stderr, " (MuJoCo: %s)\n", cm__mj_warning);
    return cm_status_exit(bad[i].status);
  }
  if (d->warning[mjWARN_INERTIA].number > 0)
    fprintf(stderr, "cmodes import mjcf: %s: warning: MuJoCo: %s\n", a->path,
            cm__mj_warning);
  return 0;
}

/* Brings d to the contact configuration: keyframe or settled, then
 * mj_forward; returns 0 or the exit code. */
static int cm__mjcf_pose(const mjModel *m, mjData *d,
                         const cm__mjcf_args_t *a) {
  if (a->keyframe) {
    char *end;
    long key = strtol(a->keyframe, &end, 10);
    if (*end)
      key = mj_name2id(m, mjOBJ_KEY, a->keyframe);
    if (key < 0 || key >= m->nkey) {
      fprintf(stderr,
              "cmodes import mjcf: --keyframe %s: %s; the model has %d "
              "keyframe%s (give an index from 0 or a <key name=...>)\n",
              a->keyframe, *end ? "no keyframe of that name" : "no such index",
              m->nkey, m->nkey == 1 ? "" : "s");
      return cm_status_exit(CM_USAGE);
    }
    mj_resetDataKeyframe(m, d, (int)key);
  }
  double steps = ceil(a->settle_s / m->opt.timestep);
  if (steps > CM__SETTLE_MAX_STEPS) {
    fprintf(stderr,
            "cmodes import mjcf: --settle %g: %.3g steps of the model's "
            "timestep %g s, more than %.0e; settle for a few seconds (contacts "
            "come to rest in far less) or give a keyframe\n",
            a->settle_s, steps, m->opt.timestep, CM__SETTLE_MAX_STEPS);
    return cm_status_exit(CM_USAGE);
  }
  /* progress on a terminal, about once a second */
  int tty = isatty(2);
  double t0 = cm__now(), shown = t0;
  for (long s = 0; s < (long)steps; s++) {
    mj_step(m, d);
    if (tty && (s & 1023) == 1023 && cm__now() - shown > 1) {
      shown = cm__now();
      fprintf(stderr,
              "\r\033[Kcmodes import mjcf: settling, t = %.3g of %g s "
              "(%.0f s)",
              d->time, a->settle_s, shown - t0);
    }
  }
  if (tty && shown > t0)
    fprintf(stderr, "\r\033[K");
  mj_forward(m, d);
  return 0;
}

/* Frees the arrays of s (cannot fail; s may be partly allocated). */
static void cm__mj_system_free(cm__mj_system_t *s) {
  free(s->J), free(s->k), free(s->con), free(s->jp1), free(s->jp2);
  free(s->w), free(s->M);
}

/* Allocates s for nv dofs and up to ncon rows; CM_NOMEM on failure (then
 * the caller still frees s). */
static int cm__mj_system_alloc(cm__mj_system_t *s, int nv, int ncon) {
  memset(s, 0, sizeof *s);
  s->nv = nv;
  s->J = calloc((size_t)(ncon + 1) * (size_t)nv, sizeof(double));
  s->k = calloc((size_t)ncon + 1, sizeof(double));
  s->con = calloc((size_t)ncon + 1, sizeof(int));
  s->jp1 = calloc(3 * (size_t)nv + 1, sizeof(double));
  s->jp2 = calloc(3 * (size_t)nv + 1, sizeof(double));
  s->w = calloc((size_t)nv + 1, sizeof(double));
  s->M = calloc((size_t)nv * (size_t)nv + 1, sizeof(double));
  if (!s->J || !s->k || !s->con || !s->jp1 || !s->jp2 || !s->w || !s->M)
    return CM_NOMEM;
  return CM_OK;
}

/* One J row and stiffness per active contact along its normal, then M. */
static void cm__mjcf_rows(const mjModel *m, mjData *d, double kfix,
                          cm__mj_system_t *s) {
  int nv = s->nv;
  for (int i = 0; i < d->ncon; i++) {
    const mjContact *ct = &d->contact[i];
    if (ct->exclude)
      continue;
    int b1 = m->geom_bodyid[ct->geom1], b2 = m->geom_bodyid[ct->geom2];
    mj_jac(m, d, s->jp1, NULL, ct->pos, b1);
    mj_jac(m, d, s->jp2, NULL, ct->pos, b2);
    double *row = s->J + (size_t)s->nc * nv, amax = 0;
    for (int j = 0; j < nv; j++) { /* n^T (J_2 - J_1) */
      for (int a = 0; a < 3; a++)
        row[j] += ct->frame[a] * (s->jp2[a * nv + j] - s->jp1[a * nv + j]);
      amax = fmax(amax, fabs(row[j]));
    }
    if (amax == 0) { /* between bodies without dofs */
      memset(row, 0, sizeof(double) * (size_t)nv);
      continue;
    }
    mj_solveM(m, d, s->w, row, 1); /* A_cc = row M^-1 row^T */
    double acc = 0;
    for (int j = 0; j < nv; j++)
      acc += row[j] * s->w[j];
    double tau = fmax(ct->solref[0], 2 * m->opt.timestep);
    double zeta = ct->solref[1], dmax = ct->solimp[1];
    double kmj = 1 / (dmax * dmax * tau * tau * zeta * zeta);
    s->k[s->nc] = kfix > 0 ? kfix : kmj / acc;
    s->con[s->nc++] = i;
  }
  mj_fullM(m, s->M, d->qM);
}

/* M.mtx: the lower triangle of M, symmetric coordinate form. */
static void cm__mjcf_write_M(FILE *fm, const cm__mj_system_t *s,
                             const char *path) {
  int nv = s->nv;
  const double *M = s->M;
  long nzm = 0;
  for (int j = 0; j < nv; j++)
    for (int i = j; i < nv; i++)
      nzm += M[(size_t)i * nv + j] != 0;
  fprintf(fm,
          "%%%%MatrixMarket matrix coordinate real symmetric\n"
          "%% M: MuJoCo's joint-space mass matrix (mj_fullM) of %s\n"
          "%d %d %ld\n",
          path, nv, nv, nzm);
  for (int j = 0; j < nv; j++)
    for (int i = j; i < nv; i++)
      if (M[(size_t)i * nv + j] != 0)
        fprintf(fm, "%d %d %.17g\n", i + 1, j + 1, M[(size_t)i * nv + j]);
}

/* J.mtx: the nonzeros of J, general coordinate form. */
static void cm__mjcf_write_J(FILE *fj, const cm__mj_system_t *s) {
  int nv = s->nv, nc = s->nc;
  const double *J = s->J;
  long nzj = 0;
  for (size_t q = 0; q < (size_t)nc * nv; q++)
    nzj += J[q] != 0;
  fprintf(fj,
          "%%%%MatrixMarket matrix coordinate real general\n"
          "%% J: one row per active contact (rows.txt), n^T (J_2 - "
          "J_1) at the contact point\n%d %d %ld\n",
          nc, nv, nzj);
  for (int r = 0; r < nc; r++)
    for (int j = 0; j < nv; j++)
      if (J[(size_t)r * nv + j] != 0)
        fprintf(fj, "%d %d %.17g\n", r + 1, j + 1, J[(size_t)r * nv + j]);
}

/* k.mtx: the stiffness of each row, array form. */
static void cm__mjcf_write_k(FILE *fk, const cm__mj_system_t *s, double kfix) {
  fprintf(fk,
          "%%%%MatrixMarket matrix array real general\n"
          "%% k: stiffness of each row, N/m (%s)\n%d 1\n",
          kfix > 0 ? "--k" : "from solref/solimp", s->nc);
  for (int r = 0; r < s->nc; r++)
    fprintf(fk, "%.17g\n", s->k[r]);
}

/* rows.txt, and each row's name "geom1-geom2" (":2", ":3", ... for more
 * contact points of one geom pair) appended to rows. */
static void cm__mjcf_write_rows(FILE *fr, const mjModel *m, const mjData *d,
                                const cm__mj_system_t *s, json_t *rows) {
  fprintf(fr, "# row geom1 geom2 body1 body2 dist_m (0-based row of J; "
              "MuJoCo names)\n");
  for (int r = 0; r < s->nc; r++) {
    const mjContact *ct = &d->contact[s->con[r]];
    char b1[160], b2[160], b3[64], b4[64], name[400];
    const char *y1 =
        cm__mj_name(m, mjOBJ_BODY, m->geom_bodyid[ct->geom1], "body", b3, 64);
    const char *y2 =
        cm__mj_name(m, mjOBJ_BODY, m->geom_bodyid[ct->geom2], "body", b4, 64);
    const char *g1 = cm__geom_name(m, ct->geom1, y1, b1, sizeof b1);
    const char *g2 = cm__geom_name(m, ct->geom2, y2, b2, sizeof b2);
    fprintf(fr, "%d %s %s %s %s %.17g\n", r, g1, g2, y1, y2, ct->dist);
    snprintf(name, sizeof name, "%s-%s", g1, g2);
    int same = 0;
    size_t nl = strlen(name);
    for (int q = 0; q < r; q++) {
      const char *o = json_string_value(json_array_get(rows, (size_t)q));
      same += !strncmp(o, name, nl) && (!o[nl] || o[nl] == ':');
    }
    if (same)
      snprintf(name + nl, sizeof name - nl, ":%d", same + 1);
    json_array_append_new(rows, json_string(name));
  }
}

/* cols.txt, and each dof's name appended to cols. */
static void cm__mjcf_write_cols(FILE *fc, const mjModel *m, json_t *cols) {
  fprintf(fc, "# col dof body (0-based column of J and M; MuJoCo joint "
              "names, .x .. .rz for free and ball joints)\n");
  for (int j = 0; j < m->nv; j++) {
    char dn[200], bb[64];
    cm__dof_name(m, j, dn, sizeof dn);
    fprintf(fc, "%d %s %s\n", j, dn,
            cm__mj_name(m, mjOBJ_BODY, m->dof_bodyid[j], "body", bb, 64));
    json_array_append_new(cols, json_string(dn));
  }
}

/* manifest.json naming the files, rows and cols (both taken) and the
 * source; returns 0 or the exit code, with the summary line unless -q. */
static int cm__mjcf_write_manifest(const mjModel *m, const mjData *d,
                                   const cm__mjcf_args_t *a,
                                   const cm__mj_system_t *s, json_t *rows,
                                   json_t *cols) {
  int rc = 0;
  json_t *man = json_pack(
      "{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:s,s:o,s:o,s:{s:s,s:s,s:f,s:f,"
      "s:s}}",
      "format", "cmodes-matrices", "version", 1, "M", "M.mtx", "J", "J.mtx",
      "k", "k.mtx", "rows", "rows.txt", "cols", "cols.txt", "n", s->nv, "nc",
      s->nc, "source", a->path, "row_names", rows, "col_names", cols, "meta",
      "importer", "mjcf", "mujoco", mj_versionString(), "time_s", d->time,
      "mujoco_timestep_s", m->opt.timestep, "stiffness",
      a->kfix > 0 ? "option --k"
                  : "solref/solimp: k = 1/(dmax^2 tau^2 zeta^2) "
                    "/ A_cc");
  char mpath[4096];
  snprintf(mpath, sizeof mpath, "%s/manifest.json", a->out);
  if (!man || json_dump_file(man, mpath, JSON_INDENT(2))) {
    fprintf(stderr, "cmodes import mjcf: cannot write %s\n", mpath);
    rc = cm_status_exit(CM_IO);
  }
  json_decref(man);
  if (!rc && !a->quiet)
    fprintf(stderr,
            "cmodes import mjcf: %s: t = %g s, %d dofs, %d active "
            "contacts of %d; wrote %s\n",
            a->path, d->time, s->nv, s->nc, d->ncon, mpath);
  return rc;
}

/* Writes the system to the directory a->out; returns 0 or the exit code. */
static int cm__mjcf_write(const mjModel *m, const mjData *d,
                          const cm__mjcf_args_t *a, const cm__mj_system_t *s) {
  int rc = 0;
  mkdir(a->out, 0777); /* may exist */
  FILE *fm = cm__mj_open(a->out, "M.mtx"), *fj = cm__mj_open(a->out, "J.mtx");
  FILE *fk = cm__mj_open(a->out, "k.mtx"),
       *fr = cm__mj_open(a->out, "rows.txt");
  FILE *fc = cm__mj_open(a->out, "cols.txt");
  json_t *rows = json_array(), *cols = json_array();
  if (!fm || !fj || !fk || !fr || !fc) {
    rc = cm_status_exit(CM_IO);
    json_decref(rows), json_decref(cols);
  } else {
    cm__mjcf_write_M(fm, s, a->path);
    cm__mjcf_write_J(fj, s);
    cm__mjcf_write_k(fk, s, a->kfix);
    cm__mjcf_write_rows(fr, m, d, s, rows);
    cm__mjcf_write_cols(fc, m, cols);
    rc = cm__mjcf_write_manifest(m, d, a, s, rows, cols);
  }
  FILE *all[] = {fm, fj, fk, fr, fc};
  for (int i = 0; i < 5; i++)
    if (all[i])
      fclose(all[i]);
  return rc;
}

int cm__cmd_import_mjcf(int argc, char **argv) {
  cm__mjcf_args_t a;
  int rc = cm__mjcf_parse(argc, argv, &a);
  if (rc >= 0)
    return rc;
  char err[1024] = "";
  cm__mj_warning[0] = 0;
  mju_user_warning = cm__mj_on_warning;
  mjModel *m = mj_loadXML(a.path, NULL, err, sizeof err);
  if (!m) {
    /* MuJoCo's words for a missing file or a folder are its XML error
     * codes: say what opening it says instead */
    FILE *probe = cm__fopen_input(a.path, "r");
    if (!probe) {
      fprintf(stderr, "cmodes import mjcf: %s: cannot open: %s\n", a.path,
              strerror(errno));
      return cm_status_exit(CM_IO);
    }
    fclose(probe);
    fprintf(stderr, "cmodes import mjcf: %s: %s\n", a.path, err);
    return cm_status_exit(CM_PARSE);
  }
  mjData *d = mj_makeData(m);
  if (!d) {
    fprintf(stderr, "cmodes import mjcf: out of memory\n");
    mj_deleteModel(m);
    return cm_status_exit(CM_NOMEM);
  }
  rc = cm__mjcf_pose(m, d, &a);
  if (!rc)
    rc = cm__mjcf_warnings(d, &a);
  if (!rc) {
    cm__mj_system_t s;
    if (cm__mj_system_alloc(&s, m->nv, d->ncon)) {
      fprintf(stderr, "cmodes import mjcf: out of memory\n");
      rc = cm_status_exit(CM_NOMEM);
    } else {
      cm__mjcf_rows(m, d, a.kfix, &s);
      rc = cm__mjcf_write(m, d, &a, &s);
    }
    cm__mj_system_free(&s);
  }
  mj_deleteData(d);
  mj_deleteModel(m);
  return rc;
}

#endif
