/* dump.c: reads LAMMPS / LIGGGHTS text dumps ("dump custom" / "dump atom"
 * style: ITEM: TIMESTEP, NUMBER OF ATOMS, BOX BOUNDS, ATOMS <columns>) into
 * a cm_dump_t, and parses the importer's wall options. Not for contact
 * detection or scenes (dump_contacts.c), nor for binary or gzipped dumps. */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- options ------------------------------------------------------------- */

void cm_dump_options_init(cm_dump_options_t *o) {
  memset(o, 0, sizeof *o);
  o->dim = 3;
  o->timestep = -1;
  o->thickness = 1.0;
}

/* Parses exactly n comma-separated finite numbers; 1 on success. */
static int cm__numbers(const char *s, double *v, int n) {
  for (int i = 0; i < n; i++) {
    char *end;
    errno = 0;
    v[i] = strtod(s, &end);
    if (end == s || errno || !isfinite(v[i]))
      return 0;
    while (isspace((unsigned char)*end))
      end++;
    if (i < n - 1) {
      if (*end != ',')
        return 0;
      s = end + 1;
    } else if (*end) {
      return 0;
    }
  }
  return 1;
}

static int cm__count_commas(const char *s) {
  int c = 0;
  for (; *s; s++)
    c += *s == ',';
  return c;
}

int cm_dump_options_add_plane(cm_context_t *ctx, cm_dump_options_t *o,
                              const char *spec) {
  /* ---- check inputs ---- */
  if (!o || !spec)
    return CM__ERR(ctx, CM_USAGE, "--wall-plane", "no wall-plane spec");
  if (o->nplanes >= CM_DUMP_MAX_PLANES)
    return CM__ERR(ctx, CM_USAGE, "--wall-plane",
                   "--wall-plane %s: at most %d plane walls", spec,
                   CM_DUMP_MAX_PLANES);
  double *p = o->planes[o->nplanes];
  memset(p, 0, 6 * sizeof *p);
  /* ---- "z=0", "z>0", "x<0.05" ---- */
  const char *s = spec;
  while (isspace((unsigned char)*s))
    s++;
  int axis = -1;
  if (*s && strchr("xyzXYZ", *s) && (s[1] == '=' || s[1] == '<' ||
                                     s[1] == '>' || isspace((unsigned char)s[1])))
    axis = tolower((unsigned char)*s) - 'x';
  if (axis >= 0) {
    const char *q = s + 1;
    while (isspace((unsigned char)*q))
      q++;
    double sign = (*q == '<') ? -1.0 : 1.0;
    if (*q != '=' && *q != '<' && *q != '>')
      goto bad;
    q++;
    double v;
    if (!cm__numbers(q, &v, 1))
      goto bad;
    p[axis] = v;
    p[3 + axis] = sign;
    o->nplanes++;
    return CM_OK;
  }
  /* ---- point and inward normal ---- */
  int commas = cm__count_commas(s);
  double v[6] = {0};
  if (commas == 5 && cm__numbers(s, v, 6)) {
    memcpy(p, v, sizeof v);
  } else if (commas == 3 && cm__numbers(s, v, 4)) {
    p[0] = v[0], p[1] = v[1], p[3] = v[2], p[4] = v[3];
  } else {
    goto bad;
  }
  double nn = sqrt(p[3] * p[3] + p[4] * p[4] + p[5] * p[5]);
  if (!(nn > 0))
    return CM__ERR(ctx, CM_USAGE, "--wall-plane",
                   "--wall-plane %s: the inward normal is zero", spec);
  for (int i = 3; i < 6; i++)
    p[i] /= nn;
  o->nplanes++;
  return CM_OK;
bad:
  return CM__ERR(ctx, CM_USAGE, "--wall-plane",
                 "--wall-plane '%s': expected AXIS=V or AXIS>V (inside is "
                 "AXIS > V), AXIS<V (inside is AXIS < V), or a point and an "
                 "inward normal px,py,pz,nx,ny,nz (2D: px,py,nx,ny)",
                 spec);
}

int cm_dump_options_set_cylinder(cm_context_t *ctx, cm_dump_options_t *o,
                                 const char *spec) {
  double v[3] = {0, 0, 0};
  int commas = spec ? cm__count_commas(spec) : -1;
  int ok = (commas == 0 && cm__numbers(spec, v, 1)) ||
           (commas == 2 && cm__numbers(spec, v, 3));
  if (!ok || !(v[0] > 0))
    return CM__ERR(ctx, CM_USAGE, "--wall-zcylinder",
                   "--wall-zcylinder '%s': expected R or R,cx,cy with a "
                   "radius R > 0 (particles inside)",
                   spec ? spec : "");
  o->cylinder = 1;
  o->cyl_radius = v[0];
  o->cyl_center[0] = v[1];
  o->cyl_center[1] = v[2];
  return CM_OK;
}

/* ---- the reader ------------------------------------------------------------ */

void cm_dump_destroy(cm_dump_t **dp) {
  if (!dp || !*dp)
    return;
  cm_dump_t *d = *dp;
  free(d->id);
  free(d->type);
  free(d->x);
  free(d->radius);
  free(d->mass);
  free(d->line);
  free(d->source);
  free(d);
  *dp = NULL;
}

/* Column indices of what the importer uses, -1 when absent. */
typedef struct {
  int ncols;          /* columns named in the ATOMS line */
  int id, type;       /* id, type */
  int pos[3];         /* position columns */
  int scaled;         /* 1 if pos are scaled (xs, xsu) */
  int radius, diameter, mass;
  char kind[8];       /* "x", "xu", "xs" or "xsu" */
} cm__cols_t;

typedef struct {
  cm_context_t *ctx;
  const cm_dump_options_t *opts;
  const char *path;   /* for messages */
  FILE *f;
  char *buf;          /* current line (getline) */
  size_t cap;
  long lineno;        /* number of the current line */
  int eof;
  int err;            /* a limit hit (CM_LIMIT, CM_NOMEM; message set) */
  size_t total;       /* bytes read */
} cm__rd_t;

/* Reads the next line, stripping the newline; 0 at end of file or at the
 * input limits (r->err: an endless /dev/zero or FIFO stops there). */
static int cm__next(cm__rd_t *r) {
  long n = cm__getline_limited(&r->buf, &r->cap, r->f, &r->total);
  if (n < 0) {
    r->eof = 1;
    if (n < -1)
      r->err = cm__input_error(r->ctx, r->path, r->lineno + 1, n);
    return 0;
  }
  r->lineno++;
  while (n > 0 && (r->buf[n - 1] == '\n' || r->buf[n - 1] == '\r'))
    r->buf[--n] = 0;
  return 1;
}

/* "ITEM: NAME ..." -> pointer past "ITEM:" and spaces, or NULL. */
static const char *cm__item(const char *line) {
  if (strncmp(line, "ITEM:", 5))
    return NULL;
  line += 5;
  while (isspace((unsigned char)*line))
    line++;
  return line;
}

static int cm__blank(const char *s) {
  for (; *s; s++)
    if (!isspace((unsigned char)*s))
      return 0;
  return 1;
}

/* Short printable excerpt of a line for messages. */
static const char *cm__excerpt(const char *s, char *buf, size_t size) {
  snprintf(buf, size, "%s", s);
  if (strlen(s) >= size - 1 && size > 4)
    memcpy(buf + size - 4, "...", 4);
  return buf;
}

#define CM__DERR(r, st, ...) CM__ERR((r)->ctx, (st), (r)->path, __VA_ARGS__)

static int cm__truncated(cm__rd_t *r, const char *what) {
  if (r->err) /* not the end: a limit (its message is set) */
    return r->err;
  return CM__DERR(r, CM_PARSE,
                  "%s:%ld: truncated file: it ends %s; the dump was cut "
                  "short (a run still writing it?): take an earlier "
                  "snapshot with --timestep or re-write the dump",
                  r->path, r->lineno, what);
}

static int cm__parse_long(const char *s, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || errno)
    return 0;
  while (isspace((unsigned char)*end))
    end++;
  if (*end)
    return 0;
  *out = v;
  return 1;
}

/* Reads "ITEM: ATOMS <names>" into column indices. */
static int cm__columns(cm__rd_t *r, const char *names, cm__cols_t *c) {
  memset(c, 0, sizeof *c);
  c->id = c->type = c->radius = c->diameter = c->mass = -1;
  int xi[4][3]; /* x, xu, xs, xsu */
  for (int k = 0; k < 4; k++)
    xi[k][0] = xi[k][1] = xi[k][2] = -1;
  static const char *const pn[4][3] = {{"x", "y", "z"},
                                       {"xu", "yu", "zu"},
                                       {"xs", "ys", "zs"},
                                       {"xsu", "ysu", "zsu"}};
  char *copy = cm__strdup(names);
  if (!copy)
    return CM__ERR(r->ctx, CM_NOMEM, NULL, "out of memory");
  int n = 0;
  for (char *save = NULL, *t = strtok_r(copy, " \t", &save); t;
       t = strtok_r(NULL, " \t", &save), n++) {
    if (!strcmp(t, "id"))
      c->id = n;
    else if (!strcmp(t, "type"))
      c->type = n;
    else if (!strcmp(t, "radius"))
      c->radius = n;
    else if (!strcmp(t, "diameter"))
      c->diameter = n;
    else if (!strcmp(t, "mass"))
      c->mass = n;
    for (int k = 0; k < 4; k++)
      for (int a = 0; a < 3; a++)
        if (!strcmp(t, pn[k][a]))
          xi[k][a] = n;
  }
  free(copy);
  c->ncols = n;
  int dim = r->opts->dim;
  for (int k = 0; k < 4; k++) {
    int have = xi[k][0] >= 0 && xi[k][1] >= 0 && (dim == 2 || xi[k][2] >= 0);
    if (have) {
      memcpy(c->pos, xi[k], sizeof c->pos);
      c->scaled = k >= 2;
      snprintf(c->kind, sizeof c->kind, "%s", pn[k][0]);
      break;
    }
  }
  if (!c->kind[0])
    return CM__DERR(r, CM_PARSE,
                    "%s:%ld: no position columns in 'ITEM: ATOMS %s': need "
                    "x y%s (or xu yu%s, xs ys%s, xsu ysu%s); dump them with "
                    "'dump ... custom ... id type x y z radius'",
                    r->path, r->lineno, names, dim == 3 ? " z" : "",
                    dim == 3 ? " zu" : "", dim == 3 ? " zs" : "",
                    dim == 3 ? " zsu" : "");
  if (c->radius < 0 && c->diameter < 0 && !(r->opts->radius > 0))
    return CM__DERR(r, CM_PARSE,
                    "%s:%ld: no radius or diameter column in 'ITEM: ATOMS "
                    "%s': add radius to the dump or give a radius for every "
                    "atom (--radius)",
                    r->path, r->lineno, names);
  return CM_OK;
}

/* Reads one number from token t of an atom line; errors name the column. */
static int cm__atom_value(cm__rd_t *r, const char *t, const char *col,
                          double *out) {
  char *end;
  char ex[64];
  errno = 0;
  double v = strtod(t, &end);
  if (end == t || *end)
    return CM__DERR(r, CM_PARSE,
                    "%s:%ld: column '%s': '%s' is not a number", r->path,
                    r->lineno, col, cm__excerpt(t, ex, sizeof ex));
  if (!isfinite(v))
    return CM__DERR(r, CM_PARSE,
                    "%s:%ld: column '%s': '%s' is not a finite number (NaN or "
                    "infinity): the simulation that wrote this snapshot had "
                    "blown up",
                    r->path, r->lineno, col, t);
  *out = v;
  return CM_OK;
}

/* The box's origin (xlo, ylo, zlo) and edge lengths (lx, ly, lz) from its
 * bounds, which for a triclinic box are the bounding box of the tilted
 * one (LAMMPS' xlo_bound ...): x = lo + lx xs + xy ys + xz zs, ... */
void cm__dump_box_frame(const cm_dump_t *d, double lo[3], double len[3]) {
  double xy = d->tilt[0], xz = d->tilt[1], yz = d->tilt[2];
  double xmin = 0, xmax = 0, ymin = 0, ymax = 0;
  if (d->triclinic) {
    xmin = fmin(fmin(0.0, xy), fmin(xz, xy + xz));
    xmax = fmax(fmax(0.0, xy), fmax(xz, xy + xz));
    ymin = fmin(0.0, yz);
    ymax = fmax(0.0, yz);
  }
  lo[0] = d->box[0][0] - xmin;
  len[0] = d->box[0][1] - xmax - lo[0];
  lo[1] = d->box[1][0] - ymin;
  len[1] = d->box[1][1] - ymax - lo[1];
  lo[2] = d->box[2][0];
  len[2] = d->box[2][1] - d->box[2][0];
}

/* 2D: the range zr[0..1] of the z column (scaled by len); zr[2] counts
 * the values seen. */
static void cm__track_z(const char *t, double len, double zr[3]) {
  char *end;
  double z = strtod(t, &end) * len;
  if (end == t || *end || !isfinite(z))
    return;
  if (!zr[2] || z < zr[0])
    zr[0] = z;
  if (!zr[2] || z > zr[1])
    zr[1] = z;
  zr[2] += 1;
}

/* Grows the atom arrays of d to n atoms (realloc: what was read stays). */
static int cm__alloc_atoms(cm__rd_t *r, cm_dump_t *d, long n, int mass) {
  size_t m = n > 0 ? (size_t)n : 1;
  int ok = 1;
#define CM__GROW(f, k)                                                         \
  do {                                                                         \
    void *p = realloc(d->f, (k) * m * sizeof *d->f);                           \
    if (p)                                                                     \
      d->f = p;                                                                \
    else                                                                       \
      ok = 0;                                                                  \
  } while (0)
  CM__GROW(id, 1);
  CM__GROW(type, 1);
  CM__GROW(x, 3);
  CM__GROW(radius, 1);
  CM__GROW(line, 1);
  if (mass)
    CM__GROW(mass, 1);
#undef CM__GROW
  if (!ok)
    return CM__ERR(r->ctx, CM_NOMEM, NULL,
                   "out of memory for %ld atoms of %s", n, r->path);
  return CM_OK;
}

/* Atoms allocated before any is read: the arrays grow with the lines
 * actually read, so a short file that declares 2e8 atoms costs what it
 * holds (it made the reader allocate 5 GB at once). */
#define CM__ATOMS_FIRST 4096

/* Room for atom i in arrays of *cap atoms: doubled when full (first
 * CM__ATOMS_FIRST), never past the declared count. */
static int cm__room(cm__rd_t *r, cm_dump_t *d, int i, long *cap, int mass) {
  if (i < *cap)
    return CM_OK;
  *cap = *cap > 0 ? 2 * *cap : CM__ATOMS_FIRST;
  *cap = *cap < d->natoms ? *cap : d->natoms;
  return cm__alloc_atoms(r, d, *cap, mass);
}

/* Reads the natoms lines after ITEM: ATOMS into d. */
static int cm__atoms(cm__rd_t *r, cm_dump_t *d, const cm__cols_t *c,
                     const char *names) {
  long cap = -1; /* atoms the arrays hold; -1: none yet */
  d->typed = c->type >= 0;
  int st = cm__room(r, d, 0, &cap, c->mass >= 0);
  if (st)
    return st;
  char **tok = malloc((size_t)(c->ncols + 1) * sizeof *tok);
  char *colnames = cm__strdup(names), *save = NULL;
  char **cname = malloc((size_t)(c->ncols + 1) * sizeof *cname);
  if (!tok || !colnames || !cname) {
    free(tok), free(colnames), free(cname);
    return CM__ERR(r->ctx, CM_NOMEM, NULL, "out of memory");
  }
  int nn = 0;
  for (char *t = strtok_r(colnames, " \t", &save); t && nn < c->ncols;
       t = strtok_r(NULL, " \t", &save))
    cname[nn++] = t;
  double lo[3], len[3], zr[3] = {0, 0, 0};
  cm__dump_box_frame(d, lo, len);
  int dim = r->opts->dim;
  for (int i = 0; i < d->natoms && !st; i++) {
    if ((st = cm__room(r, d, i, &cap, c->mass >= 0)))
      break;
    if (!cm__next(r)) {
      char what[160];
      snprintf(what, sizeof what,
               "after %d of the %d atoms of the snapshot at timestep %ld", i,
               d->natoms, d->timestep);
      st = cm__truncated(r, what);
      break;
    }
    if (cm__item(r->buf)) {
      st = CM__DERR(r, CM_PARSE,
                    "%s:%ld: the snapshot at timestep %ld declares %d atoms "
                    "but this ITEM: line comes after %d of them",
                    r->path, r->lineno, d->timestep, d->natoms, i);
      break;
    }
    int nt = 0;
    save = NULL;
    for (char *t = strtok_r(r->buf, " \t", &save); t;
         t = strtok_r(NULL, " \t", &save)) {
      if (nt < c->ncols)
        tok[nt] = t;
      nt++;
    }
    if (nt != c->ncols) {
      st = CM__DERR(r, CM_PARSE,
                    "%s:%ld: expected %d values (the columns of 'ITEM: "
                    "ATOMS %s'), found %d",
                    r->path, r->lineno, c->ncols, names, nt);
      break;
    }
    d->line[i] = r->lineno;
    double v, s[3] = {0, 0, 0};
    /* ---- id and type ---- */
    if (c->id >= 0) {
      if (!cm__parse_long(tok[c->id], &d->id[i]))
        st = CM__DERR(r, CM_PARSE,
                      "%s:%ld: column 'id': '%s' is not an integer", r->path,
                      r->lineno, tok[c->id]);
    } else {
      d->id[i] = i + 1;
    }
    long ty = 1;
    if (!st && c->type >= 0 && !cm__parse_long(tok[c->type], &ty))
      st = CM__DERR(r, CM_PARSE,
                    "%s:%ld: column 'type': '%s' is not an integer", r->path,
                    r->lineno, tok[c->type]);
    d->type[i] = (int)ty;
    /* ---- position ---- */
    for (int a = 0; a < dim && !st; a++)
      st = cm__atom_value(r, tok[c->pos[a]], cname[c->pos[a]], &s[a]);
    if (st)
      break;
    if (c->scaled) {
      d->x[3 * i + 0] = lo[0] + s[0] * len[0] + s[1] * d->tilt[0] +
                        s[2] * d->tilt[1];
      d->x[3 * i + 1] = lo[1] + s[1] * len[1] + s[2] * d->tilt[2];
      d->x[3 * i + 2] = dim == 3 ? lo[2] + s[2] * len[2] : 0.0;
    } else {
      d->x[3 * i + 0] = s[0];
      d->x[3 * i + 1] = s[1];
      d->x[3 * i + 2] = dim == 3 ? s[2] : 0.0;
    }
    if (dim == 2 && c->pos[2] >= 0) /* only for the warning: never an error */
      cm__track_z(tok[c->pos[2]], c->scaled ? len[2] : 1.0, zr);
    /* ---- radius and mass ---- */
    if (c->radius >= 0 || c->diameter >= 0) {
      int col = c->radius >= 0 ? c->radius : c->diameter;
      st = cm__atom_value(r, tok[col], cname[col], &v);
      if (st)
        break;
      d->radius[i] = c->radius >= 0 ? v : 0.5 * v;
    } else {
      d->radius[i] = r->opts->radius;
    }
    if (!(d->radius[i] > 0)) {
      st = CM__DERR(r, CM_PARSE,
                    "%s:%ld: atom %ld has radius %g: a particle needs a "
                    "radius > 0",
                    r->path, r->lineno, d->id[i], d->radius[i]);
      break;
    }
    if (c->mass >= 0) {
      st = cm__atom_value(r, tok[c->mass], "mass", &d->mass[i]);
      if (!st && !(d->mass[i] > 0) && !(r->opts->density > 0))
        st = CM__DERR(r, CM_PARSE,
                      "%s:%ld: atom %ld has mass %g: a particle needs a "
                      "mass > 0 (or give --density to compute it)",
                      r->path, r->lineno, d->id[i], d->mass[i]);
    }
  }
  d->z_spread = zr[1] - zr[0];
  free(tok);
  free(cname);
  free(colnames);
  return st;
}

/* Reads the three BOX BOUNDS lines. */
static int cm__box(cm__rd_t *r, cm_dump_t *d, const char *rest) {
  /* "BOX BOUNDS [xy xz yz] f1 f2 f3" */
  rest += strlen("BOX BOUNDS");
  char copy[256];
  snprintf(copy, sizeof copy, "%s", rest);
  int nflags = 0;
  char *save = NULL;
  for (char *t = strtok_r(copy, " \t", &save); t;
       t = strtok_r(NULL, " \t", &save)) {
    if (!strcmp(t, "xy") || !strcmp(t, "xz") || !strcmp(t, "yz"))
      d->triclinic = 1;
    else if (nflags < 3)
      snprintf(d->boundary[nflags++], sizeof d->boundary[0], "%.2s", t);
  }
  for (int a = 0; a < 3; a++) {
    if (!cm__next(r))
      return cm__truncated(r, "inside ITEM: BOX BOUNDS");
    double v[3] = {0, 0, 0};
    int got = sscanf(r->buf, "%lf %lf %lf", &v[0], &v[1], &v[2]);
    int want = d->triclinic ? 3 : 2;
    if (got < want || !isfinite(v[0]) || !isfinite(v[1]) ||
        !isfinite(v[2])) {
      char ex[80];
      return CM__DERR(r, CM_PARSE,
                      "%s:%ld: expected %d finite numbers (%s bounds%s) in "
                      "ITEM: BOX BOUNDS, found '%s'",
                      r->path, r->lineno, want, a == 0 ? "x" : a == 1 ? "y" : "z",
                      d->triclinic ? " and a tilt factor" : "",
                      cm__excerpt(r->buf, ex, sizeof ex));
    }
    d->box[a][0] = v[0];
    d->box[a][1] = v[1];
    d->tilt[a] = d->triclinic ? v[2] : 0.0;
  }
  return CM_OK;
}

/* Reads one "ITEM: X" header's single value line as a long. */
static int cm__item_long(cm__rd_t *r, const char *item, long *out) {
  if (!cm__next(r)) {
    char what[96];
    snprintf(what, sizeof what, "after ITEM: %s", item);
    return cm__truncated(r, what);
  }
  if (!cm__parse_long(r->buf, out)) {
    char ex[80];
    return CM__DERR(r, CM_PARSE,
                    "%s:%ld: expected an integer after ITEM: %s, found '%s'",
                    r->path, r->lineno, item,
                    cm__excerpt(r->buf, ex, sizeof ex));
  }
  return CM_OK;
}

/* Reads one snapshot starting at its ITEM: TIMESTEP line (already read).
 * Leaves the line after the snapshot's atoms unread. */
static int cm__snapshot(cm__rd_t *r, cm_dump_t *d) {
  int st = cm__item_long(r, "TIMESTEP", &d->timestep);
  if (st)
    return st;
  long natoms = -1;
  int have_box = 0;
  for (;;) {
    if (!cm__next(r)) {
      char what[128];
      snprintf(what, sizeof what,
               "before the ITEM: ATOMS of the snapshot at timestep %ld",
               d->timestep);
      return cm__truncated(r, what);
    }
    if (cm__blank(r->buf))
      continue;
    const char *it = cm__item(r->buf);
    if (!it) { /* stray line inside an unknown item: skip */
      continue;
    }
    if (!strncmp(it, "TIMESTEP", 8))
      return CM__DERR(r, CM_PARSE,
                      "%s:%ld: a new ITEM: TIMESTEP before the ITEM: ATOMS "
                      "of the snapshot at timestep %ld",
                      r->path, r->lineno, d->timestep);
    if (!strncmp(it, "NUMBER OF ATOMS", 15)) {
      if ((st = cm__item_long(r, "NUMBER OF ATOMS", &natoms)))
        return st;
      if (natoms < 0 || natoms > 500000000L)
        return CM__DERR(r, CM_PARSE,
                        "%s:%ld: NUMBER OF ATOMS %ld is out of range",
                        r->path, r->lineno, natoms);
    } else if (!strncmp(it, "BOX BOUNDS", 10)) {
      if ((st = cm__box(r, d, it)))
        return st;
      have_box = 1;
    } else if (!strncmp(it, "ATOMS", 5)) {
      if (natoms < 0)
        return CM__DERR(r, CM_PARSE,
                        "%s:%ld: ITEM: ATOMS before ITEM: NUMBER OF ATOMS in "
                        "the snapshot at timestep %ld",
                        r->path, r->lineno, d->timestep);
      const char *names = it + 5;
      while (isspace((unsigned char)*names))
        names++;
      char *nm = cm__strdup(names);
      if (!nm)
        return CM__ERR(r->ctx, CM_NOMEM, NULL, "out of memory");
      for (size_t k = strlen(nm); k > 0 && isspace((unsigned char)nm[k - 1]);)
        nm[--k] = 0;
      cm__cols_t c;
      st = cm__columns(r, nm, &c);
      if (!st && c.scaled && !have_box)
        st = CM__DERR(r, CM_PARSE,
                      "%s:%ld: scaled positions (%s) need ITEM: BOX BOUNDS "
                      "before ITEM: ATOMS",
                      r->path, r->lineno, c.kind);
      if (!st) {
        snprintf(d->position, sizeof d->position, "%s", c.kind);
        d->natoms = (int)natoms;
        st = cm__atoms(r, d, &c, nm);
      }
      free(nm);
      return st;
    }
    /* other items (TIME, UNITS, ...): their value lines are skipped */
  }
}

typedef struct {
  long id;  /* atom id */
  int idx;  /* its position in the file */
} cm__key_t;

static int cm__cmp_atom(const void *a, const void *b) {
  const cm__key_t *ka = a, *kb = b;
  if (ka->id != kb->id)
    return (ka->id > kb->id) - (ka->id < kb->id);
  return (ka->idx > kb->idx) - (ka->idx < kb->idx);
}

/* Sorts the atoms of d by id; errors on duplicate ids. */
static int cm__sort_atoms(cm__rd_t *r, cm_dump_t *d) {
  int n = d->natoms;
  cm__key_t *perm = malloc((size_t)(n ? n : 1) * sizeof *perm);
  cm_dump_t t = *d;
  size_t m = n ? (size_t)n : 1;
  long *id = malloc(m * sizeof *id), *line = malloc(m * sizeof *line);
  int *type = malloc(m * sizeof *type);
  double *x = malloc(3 * m * sizeof *x), *rad = malloc(m * sizeof *rad);
  double *mass = d->mass ? malloc(m * sizeof *mass) : NULL;
  int st = CM_OK;
  if (!perm || !id || !line || !type || !x || !rad || (d->mass && !mass)) {
    st = CM__ERR(r->ctx, CM_NOMEM, NULL, "out of memory sorting atoms");
    goto done;
  }
  for (int i = 0; i < n; i++)
    perm[i].id = d->id[i], perm[i].idx = i;
  qsort(perm, (size_t)n, sizeof *perm, cm__cmp_atom);
  for (int i = 0; i < n; i++) {
    int p = perm[i].idx;
    id[i] = t.id[p], line[i] = t.line[p], type[i] = t.type[p];
    memcpy(x + 3 * i, t.x + 3 * p, 3 * sizeof *x);
    rad[i] = t.radius[p];
    if (mass)
      mass[i] = t.mass[p];
    if (i > 0 && id[i] == id[i - 1]) {
      st = CM__DERR(r, CM_PARSE,
                    "%s:%ld: atom id %ld appears twice (also on line %ld); "
                    "every atom needs a unique id",
                    r->path, line[i] > line[i - 1] ? line[i] : line[i - 1],
                    id[i], line[i] > line[i - 1] ? line[i - 1] : line[i]);
      goto done;
    }
  }
  free(d->id), free(d->line), free(d->type), free(d->x), free(d->radius);
  free(d->mass);
  d->id = id, d->line = line, d->type = type, d->x = x, d->radius = rad;
  d->mass = mass;
  id = line = NULL, type = NULL, x = rad = mass = NULL;
done:
  free(perm), free(id), free(line), free(type), free(x), free(rad);
  free(mass);
  return st;
}

int cm_dump_read(cm_context_t *ctx, const char *path,
                 const cm_dump_options_t *opts, cm_dump_t **out) {
  /* ---- check inputs ---- */
  cm_dump_options_t defaults;
  if (!opts) {
    cm_dump_options_init(&defaults);
    opts = &defaults;
  }
  if (!out || !path)
    return CM__ERR(ctx, CM_USAGE, NULL, "cm_dump_read: NULL argument");
  *out = NULL;
  if (opts->dim != 2 && opts->dim != 3)
    return CM__ERR(ctx, CM_USAGE, "dim", "dim %d: expected 2 or 3",
                   opts->dim);
  cm__rd_t r = {ctx, opts, path, NULL, NULL, 0, 0, 0, 0, 0};
  r.f = strcmp(path, "-") ? cm__fopen_input(path, "r") : stdin;
  if (!r.f)
    return CM__ERR(ctx, CM_IO, path, "%s: cannot open: %s", path,
                   strerror(errno));
  /* ---- snapshots: keep the wanted one ---- */
  cm_dump_t *best = NULL;
  int st = CM_OK, nsnap = 0;
  long steps[8], last_step = 0;
  while (!st && cm__next(&r)) {
    if (cm__blank(r.buf))
      continue;
    const char *it = cm__item(r.buf);
    if (!it || strncmp(it, "TIMESTEP", 8)) {
      char ex[80];
      st = CM__DERR(&r, CM_PARSE,
                    "%s:%ld: expected 'ITEM: TIMESTEP' (the start of a "
                    "LAMMPS/LIGGGHTS text dump snapshot), found '%s'",
                    path, r.lineno, cm__excerpt(r.buf, ex, sizeof ex));
      break;
    }
    cm_dump_t *d = calloc(1, sizeof *d);
    if (!d) {
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
      break;
    }
    st = cm__snapshot(&r, d);
    if (st) {
      cm_dump_destroy(&d);
      break;
    }
    if (nsnap < 8)
      steps[nsnap] = d->timestep;
    last_step = d->timestep;
    nsnap++;
    if (opts->timestep < 0 || d->timestep == opts->timestep) {
      cm_dump_destroy(&best);
      best = d;
      if (opts->timestep >= 0)
        break;
    } else {
      cm_dump_destroy(&d);
    }
  }
  if (!st && r.err)
    st = r.err;
  if (r.f != stdin)
    fclose(r.f);
  free(r.buf);
  /* ---- result ---- */
  if (!st && nsnap == 0)
    st = CM__ERR(ctx, CM_PARSE, path,
                 "%s:%ld: no snapshot: the file is empty or not a "
                 "LAMMPS/LIGGGHTS text dump",
                 path, r.lineno > 0 ? r.lineno : 1);
  if (!st && !best) {
    char list[200] = "";
    for (int i = 0; i < nsnap && i < 8; i++) {
      size_t l = strlen(list);
      snprintf(list + l, sizeof list - l, "%s%ld", i ? ", " : "", steps[i]);
    }
    if (nsnap > 8) {
      size_t l = strlen(list);
      snprintf(list + l, sizeof list - l, ", ..., %ld", last_step);
    }
    st = CM__ERR(ctx, CM_NOT_FOUND, path,
                 "%s: no snapshot at timestep %ld (the file has %d: %s)",
                 path, opts->timestep, nsnap, list);
  }
  if (!st) {
    best->snapshots = nsnap;
    best->source = cm__strdup(path);
    if (!best->source)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  if (!st)
    st = cm__sort_atoms(&r, best);
  if (st)
    cm_dump_destroy(&best);
  *out = best;
  return st;
}
