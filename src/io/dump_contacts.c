/* dump_contacts.c: turns a dump snapshot into a frozen contact scene:
 * overlapping pairs from a cell list (OpenMP, same result at any thread
 * count), plane and z-cylinder wall contacts, linear or linearised Hertz
 * stiffness, masses and inertias. Not for reading files (dump.c). */
#include "internal.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CM__PI 3.14159265358979323846

/* ---- checks shared by contacts and scenes ------------------------------- */

/* The periodic mode in force: periodic_ignore (the old flag) means drop. */
static int cm__periodic_mode(const cm_dump_options_t *o) {
  return o->periodic_ignore ? CM_DUMP_PERIODIC_DROP : o->periodic;
}

/* 1 if axis a is periodic and searched on the minimum image. */
static int cm__image_axis(const cm_dump_t *d, const cm_dump_options_t *o,
                          int a) {
  return a < o->dim && strchr(d->boundary[a], 'p') &&
         cm__periodic_mode(o) == CM_DUMP_PERIODIC_IMAGE;
}

static int cm__check_walls(cm_context_t *ctx, const cm_dump_t *d,
                           const cm_dump_options_t *o) {
  int dim = o->dim;
  if (o->nplanes < 0 || o->nplanes > CM_DUMP_MAX_PLANES)
    return CM__ERR(ctx, CM_USAGE, "walls", "nplanes %d out of range",
                   o->nplanes);
  for (int w = 0; w < o->nplanes; w++) {
    const double *n = o->planes[w] + 3;
    double nn = dim == 3 ? n[0] * n[0] + n[1] * n[1] + n[2] * n[2]
                         : n[0] * n[0] + n[1] * n[1];
    if (!(nn > 0) || !isfinite(nn))
      return CM__ERR(ctx, CM_USAGE, "walls",
                     "wall plane %d: the inward normal is zero%s", w,
                     dim == 2 ? " in the plane of motion (2D uses nx, ny)"
                              : "");
  }
  if (o->cylinder && !(o->cyl_radius > 0))
    return CM__ERR(ctx, CM_USAGE, "walls",
                   "z-cylinder wall: radius %g is not positive",
                   o->cyl_radius);
  for (int a = 0; a < dim; a++)
    if (strchr(d->boundary[a], 'p') &&
        cm__periodic_mode(o) == CM_DUMP_PERIODIC_ERROR)
      return CM__ERR(ctx, CM_USAGE, "boundary",
                     "%s: the box is periodic along %c (boundary '%s'); "
                     "give --periodic image to find the contacts across it "
                     "on the minimum image, or --periodic drop to drop them "
                     "(the pile is then cut open there)",
                     d->source ? d->source : "dump", "xyz"[a],
                     d->boundary[a]);
  return CM_OK;
}

/* ---- cell list -------------------------------------------------------------- */

typedef struct {
  int dim;          /* 2 or 3 */
  double lo[3];     /* lower corner of the grid */
  double h;         /* cell edge (non-periodic axes) */
  long nc[3];       /* cells per axis (nc[2] = 1 in 2D) */
  int per[3];       /* 1: periodic axis searched on the minimum image */
  double len[3];    /* periodic axes: box length (a tilted box: its width
                       across the axis, between the faces of constant
                       fractional coordinate); the cells tile the box,
                       edge hp[a] = len[a] / nc[a] >= h */
  double hp[3];     /* cell edge of a periodic axis */
  int tri;          /* a tilted triclinic box: cells and images on the
                       fractional coordinates lambda = hinv (x - org),
                       binned as len[a] lambda_a, so that a pair within h
                       is at most one cell apart on every axis */
  double org[3];    /* tri: the box's origin */
  double vec[3][3]; /* tri: box vectors a, b, c (vec[k][axis]): (lx, 0, 0),
                       (xy, ly, 0), (xz, yz, lz); an image shifts j by
                       sum_k image[k] vec[k] */
  double hinv[3][3]; /* tri: the inverse of the matrix of columns vec[k] */
  int *start;       /* first slot of each cell, size ncells+1 */
  int *atoms;       /* atoms by cell, ascending within a cell, size n */
  double *xr;       /* x, y, z, r of atoms[s] at 4 s (cache locality) */
  long *cell;       /* cell of each atom, size n */
} cm__grid_t;

static void cm__grid_free(cm__grid_t *g) {
  free(g->start);
  free(g->atoms);
  free(g->xr);
  free(g->cell);
}

/* A tilted box (some tilt factor not 0; 2D: xy only) with an axis
 * searched on the minimum image (g->per): its origin, box vectors and
 * their inverse in g; returns 1, or 0 for an orthogonal box or one that
 * nothing wraps around (g untouched: searched on the positions). */
static int cm__grid_frame(const cm_dump_t *d, int dim, cm__grid_t *g) {
  double xy = d->tilt[0], xz = dim == 3 ? d->tilt[1] : 0.0,
         yz = dim == 3 ? d->tilt[2] : 0.0, lo[3], l[3];
  if (!d->triclinic || (xy == 0 && xz == 0 && yz == 0) ||
      !(g->per[0] || g->per[1] || g->per[2]))
    return 0;
  cm__dump_box_frame(d, lo, l);
  if (dim == 2)
    l[2] = 1;
  double v[3][3] = {{l[0], 0, 0}, {xy, l[1], 0}, {xz, yz, l[2]}};
  double hi[3][3] = {{1 / l[0], -xy / (l[0] * l[1]),
                      (xy * yz - l[1] * xz) / (l[0] * l[1] * l[2])},
                     {0, 1 / l[1], -yz / (l[1] * l[2])},
                     {0, 0, 1 / l[2]}};
  memcpy(g->org, lo, sizeof g->org);
  memcpy(g->vec, v, sizeof g->vec);
  memcpy(g->hinv, hi, sizeof g->hinv);
  return 1;
}

/* The width of a tilted box across axis a (the distance between its faces
 * of constant lambda_a). */
static double cm__tri_width(const cm__grid_t *g, int a) {
  double s = 0;
  for (int b = 0; b < g->dim; b++)
    s += g->hinv[a][b] * g->hinv[a][b];
  return 1 / sqrt(s);
}

/* The cell-list coordinates of every atom (3 per atom): its position, or
 * in a tilted box width_a lambda_a, which no pair within h differs in by
 * more than h. *q is d->x (not to free) or a new array (*own = 1). */
static int cm__grid_coords(const cm_dump_t *d, const cm__grid_t *g,
                           const double **q, double **own) {
  *q = d->x, *own = NULL;
  if (!g->tri)
    return CM_OK;
  int n = d->natoms;
  double *t = malloc(3 * (size_t)(n ? n : 1) * sizeof *t), w[3] = {1, 1, 1};
  if (!t)
    return CM_NOMEM;
  for (int a = 0; a < g->dim; a++)
    w[a] = cm__tri_width(g, a);
  for (int i = 0; i < n; i++) {
    double u[3] = {0, 0, 0};
    for (int b = 0; b < g->dim; b++)
      u[b] = d->x[3 * i + b] - g->org[b];
    for (int a = 0; a < 3; a++) {
      double lam = 0;
      for (int b = a; b < g->dim; b++)
        lam += g->hinv[a][b] * u[b];
      t[3 * i + a] = a < g->dim ? w[a] * lam : 0.0;
    }
  }
  *q = *own = t;
  return CM_OK;
}

/* The atom farthest from the origin along axis a of q (for messages). */
static int cm__far_atom(const cm_dump_t *d, const double *q, int a) {
  int far = 0;
  for (int i = 1; i < d->natoms; i++)
    if (fabs(q[3 * i + a]) > fabs(q[3 * far + a]))
      far = i;
  return far;
}

/* Where atom i is, for a message about axis a: "z = 1.5", or in a tilted
 * box "(x, y, z) = (...)". */
static void cm__atom_at(const cm_dump_t *d, const cm__grid_t *g, int i, int a,
                        char *buf, size_t size) {
  const double *x = d->x + 3 * (size_t)i;
  if (g->tri)
    snprintf(buf, size, "(x, y, z) = (%g, %g, %g)", x[0], x[1], x[2]);
  else
    snprintf(buf, size, "%c = %g", "xyz"[a], x[a]);
}

/* Refuses an extent of the atoms (hi - lo per axis, hi[a] - g->lo[a], in
 * the cell list's coordinates q) that makes the cell list meaningless: not
 * a finite number (atoms at +-1e308), or so wide that the spacing of
 * doubles there exceeds 1e-3 of the contact range h (extent > 4e12 h), or
 * a contact range that is not finite. */
static int cm__check_extent(cm_context_t *ctx, const cm_dump_t *d, int dim,
                            const cm__grid_t *g, const double *q,
                            const double hi[3]) {
  char at[128];
  /* squared distances of radii past ~1e154 overflow: every overlap was
   * missed (0 contacts, exit 0); scenes refuse arms past 1e150 m anyway */
  if (d->natoms > 0 && isfinite(g->h) && g->h > 1e150) {
    int big = 0;
    for (int i = 1; i < d->natoms; i++)
      big = d->radius[i] > d->radius[big] ? i : big;
    return CM__ERR(ctx, CM_INVALID_SCENE, "atoms",
                   "%s:%ld: atom %ld has radius %g m: contact ranges past "
                   "1e150 m (2 r_max + touch_tol = %g m) leave no room in "
                   "double precision for squared distances or lever arms; "
                   "check the units, or rescale the lengths",
                   d->source ? d->source : "dump", d->line[big], d->id[big],
                   d->radius[big], g->h);
  }
  for (int a = 0; a < dim; a++) {
    if (g->per[a]) { /* the atoms' distance from the periodic box */
      int far = 0;
      double dmax = -1;
      for (int i = 0; i < d->natoms; i++) {
        double x = q[3 * i + a], u = fmax(g->lo[a] - x, x - hi[a]);
        if (!(u <= dmax)) /* NaN first */
          dmax = isnan(u) ? INFINITY : u, far = i;
      }
      if (dmax <= 1e9 * g->len[a] && dmax <= 4e12 * g->h)
        continue;
      cm__atom_at(d, g, far, a, at, sizeof at);
      return CM__ERR(ctx, CM_INVALID_SCENE, "atoms",
                     "%s:%ld: atom %ld at %s lies %g box lengths "
                     "outside the periodic box %s%g, %g]: its periodic image "
                     "cannot be resolved (more than 1e9 box lengths, or "
                     "4e12 contact ranges, away); dump wrapped positions "
                     "(x, not xu) or fix the atom",
                     d->source ? d->source : "dump", d->line[far], d->id[far],
                     at, dmax / g->len[a],
                     g->tri ? "(its widths across the axis) [" : "[",
                     g->lo[a], hi[a]);
    }
    double ext = hi[a] - g->lo[a];
    if (isfinite(ext) && isfinite(g->h) && ext <= 4e12 * g->h)
      continue;
    int i = cm__far_atom(d, q, a);
    cm__atom_at(d, g, i, a, at, sizeof at);
    return CM__ERR(ctx, CM_INVALID_SCENE, "atoms",
                   "%s:%ld: atom %ld at %s: the atoms span %g m %s "
                   "%c against a contact range of %g m (2 r_max + "
                   "touch_tol); positions spread over more than 4e12 "
                   "contact ranges cannot resolve contacts: fix or remove "
                   "the far-away atom (or check the units)",
                   d->source ? d->source : "dump", d->line[i], d->id[i], at,
                   ext, g->tri ? "across" : "along", "xyz"[a], g->h);
  }
  return CM_OK;
}

/* Bins the atoms into cells of edge >= 2 rmax + tol (counting sort, serial:
 * deterministic). The cell count is capped near 2n by enlarging h. */
static int cm__grid_build(cm_context_t *ctx, const cm_dump_t *d, int dim,
                          double tol, const int per[3], cm__grid_t *g) {
  int n = d->natoms, st;
  memset(g, 0, sizeof *g);
  g->dim = dim;
  memcpy(g->per, per, sizeof g->per);
  g->tri = cm__grid_frame(d, dim, g);
  const double *q; /* the atoms' cell-list coordinates */
  double *qown, rmax = 0, hi[3];
  if (cm__grid_coords(d, g, &q, &qown))
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for the cell list");
  for (int a = 0; a < 3; a++)
    g->lo[a] = hi[a] = n ? q[a] : 0;
  for (int i = 0; i < n; i++) {
    rmax = fmax(rmax, d->radius[i]);
    for (int a = 0; a < dim; a++) {
      g->lo[a] = fmin(g->lo[a], q[3 * i + a]);
      hi[a] = fmax(hi[a], q[3 * i + a]);
    }
  }
  g->h = 2 * rmax + (tol > 0 ? tol : 0);
  if (!(g->h > 0))
    g->h = 1;
  for (int a = 0; a < dim; a++)
    if (per[a]) { /* the box, not the atoms, bounds a periodic axis */
      g->lo[a] = g->tri ? 0.0 : d->box[a][0];
      g->len[a] = g->tri ? cm__tri_width(g, a) : d->box[a][1] - d->box[a][0];
      hi[a] = g->tri ? g->len[a] : d->box[a][1];
      if (!(g->len[a] > 2 * g->h)) {
        free(qown);
        return CM__ERR(ctx, CM_USAGE, "boundary",
                       "%s: the periodic box %s %c is %g %s, not more "
                       "than twice the contact range %g (2 r_max + "
                       "touch_tol): a pair could touch through two images; "
                       "the minimum-image search needs a longer box",
                       d->source ? d->source : "dump",
                       g->tri ? "across" : "along", "xyz"[a], g->len[a],
                       g->tri ? "wide (between its tilted faces)" : "long",
                       g->h);
      }
    }
  if ((st = cm__check_extent(ctx, d, dim, g, q, hi))) {
    free(qown);
    return st;
  }
  for (;;) { /* count in double first: a far-away atom must not overflow */
    double cells = 1, pc[3] = {1, 1, 1};
    for (int a = 0; a < dim; a++)
      cells *= pc[a] = per[a] ? fmax(1.0, floor(g->len[a] / g->h))
                              : floor((hi[a] - g->lo[a]) / g->h) + 1;
    if (cells <= 2.0 * n + 8) {
      for (int a = 0; a < 3; a++)
        g->nc[a] = (long)pc[a];
      break;
    }
    g->h *= cells > 1e6 * (2.0 * n + 8) ? 10.0 : 1.26; /* ~2x fewer in 3D */
  }
  for (int a = 0; a < dim; a++)
    if (per[a])
      g->hp[a] = g->len[a] / (double)g->nc[a];
  long ncells = g->nc[0] * g->nc[1] * g->nc[2];
  g->start = calloc((size_t)ncells + 1, sizeof *g->start);
  g->atoms = malloc((size_t)(n ? n : 1) * sizeof *g->atoms);
  g->cell = malloc((size_t)(n ? n : 1) * sizeof *g->cell);
  g->xr = malloc(4 * (size_t)(n ? n : 1) * sizeof *g->xr);
  if (!g->start || !g->atoms || !g->cell || !g->xr) {
    free(qown);
    cm__grid_free(g);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for the cell list");
  }
  for (int i = 0; i < n; i++) {
    long c[3] = {0, 0, 0};
    for (int a = 0; a < dim; a++) {
      if (per[a]) { /* wrap into the box, then bin */
        double u = q[3 * i + a] - g->lo[a];
        u -= g->len[a] * floor(u / g->len[a]);
        c[a] = (long)floor(u / g->hp[a]);
      } else {
        c[a] = (long)floor((q[3 * i + a] - g->lo[a]) / g->h);
      }
      if (c[a] >= g->nc[a])
        c[a] = g->nc[a] - 1;
      if (c[a] < 0)
        c[a] = 0;
    }
    g->cell[i] = (c[2] * g->nc[1] + c[1]) * g->nc[0] + c[0];
    g->start[g->cell[i] + 1]++;
  }
  free(qown);
  for (long c = 0; c < ncells; c++)
    g->start[c + 1] += g->start[c];
  int *fill = malloc((size_t)ncells * sizeof *fill);
  if (!fill) {
    cm__grid_free(g);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory for the cell list");
  }
  memcpy(fill, g->start, (size_t)ncells * sizeof *fill);
  for (int i = 0; i < n; i++) {
    int slot = fill[g->cell[i]]++;
    g->atoms[slot] = i;
    memcpy(g->xr + 4 * (size_t)slot, d->x + 3 * (size_t)i, 3 * sizeof(double));
    g->xr[4 * (size_t)slot + 3] = d->radius[i];
  }
  free(fill);
  return CM_OK;
}

/* Overlap of atoms at xi, xj (x, y, z, r each): delta = r_i + r_j -
 * |x_i - x_j|; also returns the distance. */
static double cm__pair_overlap(const double *xi, const double *xj,
                               const cm__grid_t *g, double *dist,
                               double dx[3], int image[3]) {
  double s = 0;
  if (g->tri) { /* minimum image on the lattice: lambda_a rounded, the top
                 * axis first (vec[k] has no component above k; a pair
                 * within h has |lambda_a| < 1/2 as len[a] > 2 h) */
    for (int a = 0; a < g->dim; a++)
      dx[a] = xi[a] - xj[a];
    for (int a = g->dim - 1; a >= 0; a--) {
      image[a] = 0;
      if (!g->per[a])
        continue;
      double lam = 0;
      for (int b = a; b < g->dim; b++)
        lam += g->hinv[a][b] * dx[b];
      double k = nearbyint(lam);
      image[a] = (int)k;
      for (int b = 0; b <= a; b++)
        dx[b] -= k * g->vec[a][b];
    }
    for (int a = 0; a < g->dim; a++)
      s += dx[a] * dx[a];
    *dist = sqrt(s);
    return xi[3] + xj[3] - *dist;
  }
  for (int a = 0; a < g->dim; a++) {
    double t = xi[a] - xj[a];
    image[a] = 0;
    if (g->per[a]) { /* minimum image: j shifted by image[a] lengths */
      double k = nearbyint(t / g->len[a]);
      image[a] = (int)k;
      t -= k * g->len[a];
    }
    dx[a] = t;
    s += t * t;
  }
  *dist = sqrt(s);
  return xi[3] + xj[3] - *dist;
}

/* The distinct cells at offsets -1, 0, 1 of cell c along axis a (wrapped on
 * a periodic axis, so fewer than 3 cells are each visited once); returns
 * their count. */
static int cm__axis_cells(const cm__grid_t *g, int a, long c, long out[3]) {
  int m = 0;
  for (long o = -1; o <= 1; o++) {
    long x = c + o;
    if (g->per[a])
      x = ((x % g->nc[a]) + g->nc[a]) % g->nc[a];
    else if (x < 0 || x >= g->nc[a])
      continue;
    int dup = 0;
    for (int k = 0; k < m; k++)
      dup |= out[k] == x;
    if (!dup)
      out[m++] = x;
  }
  return m;
}

/* Visits the neighbours j > i of atom i that are contacts; writes them to
 * out (when not NULL) and returns their count, or -1 - j when atom j sits
 * at the same position as i. */
static int cm__pairs_of(const cm_dump_t *d, const cm__grid_t *g, double tol,
                        int i, cm_dump_contact_t *out) {
  int dim = g->dim, count = 0;
  long c = g->cell[i];
  const double xi[4] = {d->x[3 * i], d->x[3 * i + 1], d->x[3 * i + 2],
                        d->radius[i]};
  long cx = c % g->nc[0], cy = (c / g->nc[0]) % g->nc[1],
       cz = c / (g->nc[0] * g->nc[1]);
  long zs[3], ys[3], xs[3];
  int nz = cm__axis_cells(g, 2, cz, zs), ny = cm__axis_cells(g, 1, cy, ys),
      nx = cm__axis_cells(g, 0, cx, xs);
  for (int iz = 0; iz < nz; iz++) {
    for (int iy = 0; iy < ny; iy++) {
      for (int ix = 0; ix < nx; ix++) {
        long cc = (zs[iz] * g->nc[1] + ys[iy]) * g->nc[0] + xs[ix];
        for (int s = g->start[cc]; s < g->start[cc + 1]; s++) {
          int j = g->atoms[s];
          if (j <= i)
            continue;
          double dist, dx[3] = {0, 0, 0};
          int img[3] = {0, 0, 0};
          double delta = cm__pair_overlap(xi, g->xr + 4 * (size_t)s, g,
                                          &dist, dx, img);
          if (!(delta > -tol))
            continue;
          if (!(dist > 0))
            return -1 - j;
          if (out) {
            cm_dump_contact_t *k = &out[count];
            memset(k, 0, sizeof *k);
            k->i = i, k->j = j, k->wall = -1, k->overlap = delta;
            for (int a = 0; a < dim; a++) {
              /* x_j on its minimum image (the same bits when img = 0) */
              double xj = img[a] && !g->tri
                              ? d->x[3 * j + a] + img[a] * g->len[a]
                              : d->x[3 * j + a];
              for (int b = a; g->tri && b < dim; b++) /* vec[b][a] */
                if (img[b])
                  xj += img[b] * g->vec[b][a];
              k->image[a] = img[a];
              k->normal[a] = dx[a] / dist;
              k->point[a] = xj + (d->radius[j] - 0.5 * delta) * k->normal[a];
            }
          }
          count++;
        }
      }
    }
  }
  if (out) /* cell order -> ascending j (insertion sort: few neighbours) */
    for (int a = 1; a < count; a++)
      for (int b = a; b > 0 && out[b - 1].j > out[b].j; b--) {
        cm_dump_contact_t t = out[b];
        out[b] = out[b - 1];
        out[b - 1] = t;
      }
  return count;
}

long cm_dump_default_max_contacts(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || size <= 0)
    return 10000000L;
  double cap = (double)pages * (double)size / 1024.0;
  return cap > 2147483647.0 ? 2147483647L : (long)cap;
}

/* The contact cap in force (opts->max_contacts or the default). */
static long cm__max_contacts(const cm_dump_options_t *o) {
  long cap = o->max_contacts > 0 ? o->max_contacts
                                 : cm_dump_default_max_contacts();
  return cap > 2147483647L ? 2147483647L : cap;
}

static int cm__too_many(cm_context_t *ctx, const cm_dump_t *d,
                        const cm_dump_options_t *o, long cap) {
  return CM__ERR(ctx, CM_LIMIT, "max_contacts",
                 "%s: more than %ld contacts among %d atoms (over %.3g per "
                 "atom; a packing has about 6-12): stopped the search at "
                 "the contact limit %ld%s; check the radius or diameter "
                 "column and the units, or raise the limit (--max-contacts "
                 "N) if the memory allows",
                 d->source ? d->source : "dump", cap, d->natoms,
                 d->natoms ? 2.0 * (double)cap / d->natoms : 0.0, cap,
                 o->max_contacts > 0 ? " (--max-contacts)"
                                     : " (the default: physical memory / "
                                       "1 KiB)");
}

/* All pairs, ordered by (i, j): count per atom in parallel, prefix sum,
 * fill in parallel into the precomputed offsets. */
static int cm__find_pairs(cm_context_t *ctx, const cm_dump_t *d,
                          const cm_dump_options_t *o, int threads,
                          cm_dump_contact_t **out, int *count) {
  int n = d->natoms, st, dim = o->dim;
  double tol = o->touch_tol;
  cm__grid_t g;
  int per[3] = {0, 0, 0};
  for (int a = 0; a < dim; a++)
    per[a] = cm__image_axis(d, o, a);
  if ((st = cm__grid_build(ctx, d, dim, tol, per, &g)))
    return st;
  long *off = calloc((size_t)n + 1, sizeof *off);
  if (!off) {
    cm__grid_free(&g);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  int bad = n; /* smallest atom that coincides with another */
  long cap = cm__max_contacts(o), seen = 0;
  int over = 0; /* the count passed cap: stop early */
#pragma omp parallel for schedule(dynamic, 256) num_threads(threads) \
    reduction(min : bad)
  for (int i = 0; i < n; i++) {
    int stop;
#pragma omp atomic read
    stop = over;
    if (stop)
      continue;
    int c = cm__pairs_of(d, &g, tol, i, NULL);
    if (c < 0 && i < bad)
      bad = i;
    off[i + 1] = c < 0 ? 0 : c;
    long now;
#pragma omp atomic capture
    now = seen += off[i + 1];
    if (now > cap) {
#pragma omp atomic write
      over = 1;
    }
  }
  if (over) {
    free(off);
    cm__grid_free(&g);
    return cm__too_many(ctx, d, o, cap);
  }
  if (bad < n) {
    int j = -1 - cm__pairs_of(d, &g, tol, bad, NULL);
    free(off);
    cm__grid_free(&g);
    return CM__ERR(ctx, CM_INVALID_SCENE, "atoms",
                   "%s:%ld: atoms %ld and %ld (line %ld) are at the same "
                   "position: no contact normal; remove the duplicate",
                   d->source ? d->source : "dump", d->line[bad], d->id[bad],
                   d->id[j], d->line[j]);
  }
  for (int i = 0; i < n; i++)
    off[i + 1] += off[i];
  long total = off[n];
  cm_dump_contact_t *c = malloc((size_t)(total ? total : 1) * sizeof *c);
  if (!c) {
    free(off);
    cm__grid_free(&g);
    return CM__ERR(ctx, CM_NOMEM, NULL,
                   "out of memory for %ld contacts (%.3g GB); lower "
                   "--max-contacts to stop earlier",
                   total, (double)total * sizeof *c / 1e9);
  }
#pragma omp parallel for schedule(dynamic, 256) num_threads(threads)
  for (int i = 0; i < n; i++)
    cm__pairs_of(d, &g, tol, i, c + off[i]);
  *out = c;
  *count = (int)off[n];
  free(off);
  cm__grid_free(&g);
  return CM_OK;
}

/* Contact of atom i with wall w (planes, then the cylinder); 1 if it is a
 * contact, 0 if not, -1 if the centre is on the wrong side of the wall. */
static int cm__wall_contact(const cm_dump_t *d, const cm_dump_options_t *o,
                            int w, int i, cm_dump_contact_t *k) {
  int dim = o->dim;
  const double *x = d->x + 3 * i;
  double r = d->radius[i], n[3] = {0, 0, 0}, dist;
  if (w < o->nplanes) { /* plane: dist = (x - p) . n */
    const double *p = o->planes[w];
    double nn = 0;
    for (int a = 0; a < dim; a++)
      nn += p[3 + a] * p[3 + a];
    nn = sqrt(nn);
    dist = 0;
    for (int a = 0; a < dim; a++) {
      n[a] = p[3 + a] / nn;
      dist += (x[a] - p[a]) * n[a];
    }
  } else { /* z-cylinder, particles inside: dist = R - rho */
    double rx = x[0] - o->cyl_center[0], ry = x[1] - o->cyl_center[1];
    double rho = sqrt(rx * rx + ry * ry);
    dist = o->cyl_radius - rho;
    if (rho > 0)
      n[0] = -rx / rho, n[1] = -ry / rho;
    else
      n[0] = 1; /* on the axis: no contact unless R < r */
  }
  if (dist < 0)
    return -1;
  double delta = r - dist;
  if (!(delta > -o->touch_tol))
    return 0;
  memset(k, 0, sizeof *k);
  k->i = i, k->j = -1, k->wall = w, k->overlap = delta;
  for (int a = 0; a < dim; a++) {
    k->normal[a] = n[a];
    k->point[a] = x[a] - (r - 0.5 * delta) * n[a];
  }
  return 1;
}

static void cm__wall_name(const cm_dump_options_t *o, int w, char *buf,
                          size_t size) {
  if (w < o->nplanes)
    snprintf(buf, size, "wall-plane-%d", w);
  else
    snprintf(buf, size, "wall-zcylinder");
}

int cm_dump_find_contacts(cm_context_t *ctx, const cm_dump_t *d,
                          const cm_dump_options_t *o, cm_dump_contact_t **out,
                          int *count) {
  /* ---- check inputs ---- */
  if (!d || !o || !out || !count)
    return CM__ERR(ctx, CM_USAGE, NULL, "cm_dump_find_contacts: NULL "
                                        "argument");
  *out = NULL;
  *count = 0;
  if (o->dim != 2 && o->dim != 3)
    return CM__ERR(ctx, CM_USAGE, "dim", "dim %d: expected 2 or 3", o->dim);
  if (!(o->touch_tol >= 0) || !isfinite(o->touch_tol))
    return CM__ERR(ctx, CM_USAGE, "touch_tol",
                   "touch tolerance %g: expected a finite number >= 0",
                   o->touch_tol);
  int st = cm__check_walls(ctx, d, o);
  if (st)
    return st;
  int threads = o->threads > 0 ? o->threads : cm__threads(ctx);
  if (threads > cm__threads_max())
    threads = cm__threads_max();
  /* ---- pairs ---- */
  cm_dump_contact_t *c = NULL;
  int np = 0;
  if ((st = cm__find_pairs(ctx, d, o, threads, &c, &np)))
    return st;
  /* ---- walls: count, then fill (walls by index, atoms ascending) ---- */
  int nwalls = o->nplanes + (o->cylinder ? 1 : 0), nw = 0;
  cm_dump_contact_t k;
  for (int w = 0; w < nwalls; w++)
    for (int i = 0; i < d->natoms; i++) {
      int r = cm__wall_contact(d, o, w, i, &k);
      if (r < 0) {
        char nm[32];
        cm__wall_name(o, w, nm, sizeof nm);
        free(c);
        return CM__ERR(ctx, CM_USAGE, "walls",
                       "%s:%ld: atom %ld is outside %s (its centre is on "
                       "the wrong side): check the wall's position and its "
                       "inward direction (z=V and z>V mean inside is z > V, "
                       "z<V the opposite)",
                       d->source ? d->source : "dump", d->line[i], d->id[i],
                       nm);
      }
      nw += r;
    }
  if ((long)np + nw > cm__max_contacts(o)) {
    free(c);
    return cm__too_many(ctx, d, o, cm__max_contacts(o));
  }
  if (nw > 0) {
    cm_dump_contact_t *cc = realloc(c, (size_t)(np + nw) * sizeof *cc);
    if (!cc) {
      free(c);
      return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
    }
    c = cc;
    int m = np;
    for (int w = 0; w < nwalls; w++)
      for (int i = 0; i < d->natoms; i++)
        if (cm__wall_contact(d, o, w, i, &c[m]) == 1)
          m++;
  }
  *out = c;
  *count = np + nw;
  return CM_OK;
}

/* ---- stiffness ---------------------------------------------------------------- */

double cm_dump_stiffness(const cm_dump_options_t *o, const cm_dump_t *d,
                         const cm_dump_contact_t *c) {
  if (o->k > 0)
    return o->k;
  if (!(o->young > 0))
    return 0;
  double estar = o->young / (2 * (1 - o->poisson * o->poisson));
  double ri = d->radius[c->i];
  double rstar = c->j >= 0 ? ri * d->radius[c->j] / (ri + d->radius[c->j])
                           : ri;
  double delta = fmax(c->overlap, o->touch_tol);
  return 2 * estar * sqrt(rstar * delta); /* dF/d delta, F = 4/3 E* sqrt(R*)
                                             delta^1.5 */
}

/* ---- scene ------------------------------------------------------------------ */

static int cm__check_mass(cm_context_t *ctx, const cm_dump_t *d,
                          const cm_dump_options_t *o) {
  if (!(o->density > 0) && !d->mass)
    return CM__ERR(ctx, CM_USAGE, "density",
                   "%s: the dump has no mass column: give the particle "
                   "density (--density, kg/m^3)",
                   d->source ? d->source : "dump");
  if (o->dim == 2 && !(o->thickness > 0))
    return CM__ERR(ctx, CM_USAGE, "thickness",
                   "disk thickness %g: expected > 0", o->thickness);
  return CM_OK;
}

static int cm__check_model(cm_context_t *ctx, const cm_dump_t *d,
                           const cm_dump_options_t *o) {
  if (o->model && (o->k > 0 || o->young > 0))
    return CM__ERR(ctx, CM_USAGE, "stiffness",
                   "the contact laws come from the input deck: give no "
                   "--k, --young or --poisson with it");
  if (o->model)
    return cm__check_mass(ctx, d, o);
  if (o->k > 0 && o->young > 0)
    return CM__ERR(ctx, CM_USAGE, "stiffness",
                   "give either a linear stiffness (--k) or Hertz "
                   "(--young, --poisson), not both");
  if (!(o->k > 0) && !(o->young > 0))
    return CM__ERR(ctx, CM_USAGE, "stiffness",
                   "no contact stiffness: give --k K (linear, N/m) or "
                   "--young E --poisson NU (Hertz, linearised at each "
                   "overlap)");
  if (!isfinite(o->k) || !isfinite(o->young))
    return CM__ERR(ctx, CM_USAGE, "stiffness", "stiffness is not finite");
  if (o->young > 0 && !(o->poisson > -1 && o->poisson < 0.5))
    return CM__ERR(ctx, CM_USAGE, "poisson",
                   "Poisson's ratio %g: expected -1 < nu < 0.5", o->poisson);
  if (o->young > 0 && o->dim == 2)
    return CM__ERR(ctx, CM_USAGE, "young",
                   "Hertz contact is for spheres: for disks (--dim 2) give a "
                   "linear stiffness (--k)");
  return cm__check_mass(ctx, d, o);
}

/* ---- warnings ---------------------------------------------------------------- */

/* A growing text of lines; oom set on a failed allocation. */
typedef struct {
  char *s;
  size_t len, cap;
  int oom;
} cm__text_t;

static void cm__addline(cm__text_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void cm__addline(cm__text_t *t, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  size_t n = strlen(line);
  if (t->len + n + 2 > t->cap) {
    size_t cap = 2 * (t->len + n + 2);
    char *p = realloc(t->s, cap);
    if (!p) {
      t->oom = 1;
      return;
    }
    t->s = p, t->cap = cap;
  }
  memcpy(t->s + t->len, line, n);
  t->len += n;
  t->s[t->len++] = '\n';
  t->s[t->len] = 0;
}

/* Particles that stick out of face (axis a, side 0 lo / 1 hi) of a
 * non-periodic box and touch no wall. */
static void cm__face_warnings(const cm_dump_t *d, const cm_dump_options_t *o,
                              const char *touched, cm__text_t *t) {
  const char *src = d->source ? d->source : "dump";
  for (int a = 0; a < o->dim; a++) {
    for (int side = 0; side < 2; side++) {
      char flag = d->boundary[a][d->boundary[a][1] ? side : 0];
      if (flag == 'p' || !flag || d->triclinic)
        continue;
      double face = d->box[a][side];
      int count = 0;
      for (int i = 0; i < d->natoms; i++) {
        double x = d->x[3 * i + a], r = d->radius[i];
        count += !(touched[i] & (1 << (2 * a + side))) &&
                 (side ? x + r > face : x - r < face);
      }
      if (count)
        cm__addline(t,
                    "%s: %d particle%s overlap%s the box face %c=%g "
                    "(boundary %c) and no wall is given there: add "
                    "--wall-plane '%c%c%g' or a fix wall/gran",
                    src, count, count > 1 ? "s" : "", count > 1 ? "" : "s",
                    "xyz"[a], face, flag, "xyz"[a], side ? '<' : '>', face);
    }
  }
}

/* Periodic boundaries: pairs kept across them (image) or dropped. */
static void cm__periodic_warnings(const cm_dump_t *d,
                                  const cm_dump_options_t *o,
                                  const cm_dump_contact_t *c, int nc,
                                  cm__text_t *t) {
  const char *src = d->source ? d->source : "dump";
  char axes[4] = "";
  for (int a = 0, k = 0; a < o->dim; a++)
    if (strchr(d->boundary[a], 'p'))
      axes[k++] = "xyz"[a], axes[k] = 0;
  if (!axes[0])
    return;
  if (cm__periodic_mode(o) == CM_DUMP_PERIODIC_DROP) {
    cm__addline(t,
                "%s: the box is periodic along %s and the pairs across it "
                "are dropped (--periodic drop): the frequencies are lowered "
                "and the step will be unsafe",
                src, axes);
    return;
  }
  int across = 0;
  for (int q = 0; q < nc; q++)
    across += c[q].image[0] || c[q].image[1] || c[q].image[2];
  if (across)
    cm__addline(t,
                "%s: %d contact%s cross%s the periodic boundary along %s "
                "(minimum image): each carries the lever arms of b's image "
                "(arm_a, arm_b), so its rows are those of the image (b's "
                "image shift is in meta periodic_images)",
                src, across, across > 1 ? "s" : "", across > 1 ? "" : "es",
                axes);
}

/* All warnings as lines (malloc'd, NULL if none). */
static char *cm__warnings(const cm_dump_t *d, const cm_dump_options_t *o,
                          const cm_dump_contact_t *c, int nc) {
  cm__text_t t = {NULL, 0, 0, 0};
  if (o->dim == 2 && d->z_spread > 0)
    cm__addline(&t,
                "%s: --dim 2 ignores the z column, which varies by %g in "
                "this snapshot: the particles are not in one plane (a 3D "
                "dump?)",
                d->source ? d->source : "dump", d->z_spread);
  char *touched = calloc((size_t)(d->natoms ? d->natoms : 1), 1);
  if (touched) {
    for (int q = 0; q < nc; q++) /* bit 2a + side: a wall on that face */
      for (int a = 0; a < 3 && c[q].j < 0; a++)
        touched[c[q].i] |= (char)((c[q].normal[a] > 0.5 ? 1 << (2 * a) : 0) |
                                  (c[q].normal[a] < -0.5 ? 2 << (2 * a) : 0));
    cm__face_warnings(d, o, touched, &t);
    free(touched);
  }
  cm__periodic_warnings(d, o, c, nc, &t);
  if (t.oom) {
    free(t.s);
    return NULL;
  }
  return t.s;
}

char *cm_dump_warnings(cm_context_t *ctx, const cm_dump_t *d,
                       const cm_dump_options_t *o) {
  cm_dump_contact_t *c = NULL;
  int nc = 0;
  if (!d || !o || cm_dump_find_contacts(ctx, d, o, &c, &nc))
    return NULL;
  char *w = cm__warnings(d, o, c, nc);
  free(c);
  return w;
}

/* What the meta records besides the options: warnings (newline-separated
 * text or NULL) and the contacts across periodic boundaries. */
typedef struct {
  const char *warnings;          /* cm__warnings text, or NULL */
  const cm_dump_contact_t *c;    /* the contacts, in scene order */
  int nc;                        /* their count */
  int ndrag;                     /* drags (fix viscous) after them */
  int ntether;                   /* tethers (fix spring/self), then */
} cm__extra_t;

/* "warnings": [...] and "periodic_images": [[contact, ix, iy, iz], ...]
 * (body b of that contact sits at x_b + image . box lengths, or box
 * vectors in a triclinic box: cm_dump_contact_t.image), only when
 * there are any: meta stays as it was for other imports. */
static void cm__meta_extra(json_t *m, const cm__extra_t *x) {
  if (x->warnings && x->warnings[0]) {
    json_t *w = json_array();
    const char *p = x->warnings;
    while (*p) {
      const char *e = strchr(p, '\n');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      json_array_append_new(w, json_stringn(p, len));
      p += len + (e ? 1 : 0);
    }
    json_object_set_new(m, "warnings", w);
  }
  json_t *img = NULL;
  for (int q = 0; q < x->nc; q++) {
    const int *k = x->c[q].image;
    if (!k[0] && !k[1] && !k[2])
      continue;
    if (!img)
      img = json_array();
    json_array_append_new(img, json_pack("[i,i,i,i]", q, k[0], k[1], k[2]));
  }
  if (img)
    json_object_set_new(m, "periodic_images", img);
  if (x->ndrag) /* contacts nc .. nc + ndrag - 1 */
    json_object_set_new(m, "drags", json_integer(x->ndrag));
  if (x->ntether) /* the next ntether contacts */
    json_object_set_new(m, "tethers", json_integer(x->ntether));
}

/* The scene's meta object: where it came from and how it was built. */
static char *cm__meta(const cm_dump_t *d, const cm_dump_options_t *o, int np,
                      int nw, const cm__extra_t *x) {
  json_t *m = json_object(), *st = json_object(), *walls = json_array();
  json_object_set_new(m, "importer", json_string(o->model
                                                     ? "cmodes import lammps"
                                                     : "cmodes import dump"));
  json_object_set_new(m, "source", json_string(d->source ? d->source : ""));
  json_object_set_new(m, "timestep", json_integer(d->timestep));
  json_object_set_new(m, "atoms", json_integer(d->natoms));
  json_object_set_new(m, "pairs", json_integer(np));
  json_object_set_new(m, "wall_contacts", json_integer(nw));
  json_object_set_new(m, "positions", json_string(d->position));
  if (o->density > 0)
    json_object_set_new(m, "density", json_real(o->density));
  else
    json_object_set_new(m, "mass", json_string("dump column"));
  if (o->dim == 2)
    json_object_set_new(m, "thickness", json_real(o->thickness));
  if (o->model) {
    json_object_set_new(st, "model", json_string("deck"));
    json_object_set_new(st, "laws", json_string(o->model->summary));
    json_object_set_new(m, "timestep_s", json_real(o->model->timestep_s));
  } else if (o->k > 0) {
    json_object_set_new(st, "model", json_string("linear"));
    json_object_set_new(st, "k", json_real(o->k));
  } else {
    json_object_set_new(st, "model", json_string("hertz"));
    json_object_set_new(st, "young", json_real(o->young));
    json_object_set_new(st, "poisson", json_real(o->poisson));
  }
  json_object_set_new(st, "touch_tol", json_real(o->touch_tol));
  json_object_set_new(m, "stiffness", st);
  for (int w = 0; w < o->nplanes; w++) {
    json_t *p = json_pack("{s:s,s:[f,f,f],s:[f,f,f]}", "type", "plane",
                          "point", o->planes[w][0], o->planes[w][1],
                          o->planes[w][2], "normal", o->planes[w][3],
                          o->planes[w][4], o->planes[w][5]);
    json_array_append_new(walls, p);
  }
  if (o->cylinder)
    json_array_append_new(
        walls, json_pack("{s:s,s:f,s:[f,f]}", "type", "zcylinder", "radius",
                         o->cyl_radius, "center", o->cyl_center[0],
                         o->cyl_center[1]));
  json_object_set_new(m, "walls", walls);
  cm__meta_extra(m, x);
  char *text = json_dumps(m, JSON_COMPACT | JSON_REAL_PRECISION(17));
  json_decref(m);
  return text;
}

/* Appends the atoms as bodies and the walls as fixed bodies (if asked). */
static int cm__add_bodies(cm_context_t *ctx, const cm_dump_t *d,
                          const cm_dump_options_t *o, cm_scene_t *s) {
  int dim = o->dim;
  for (int i = 0; i < d->natoms; i++) {
    cm_body_t b;
    cm_body_init(&b);
    double r = d->radius[i];
    if (o->density > 0)
      b.mass = dim == 3 ? 4.0 / 3.0 * CM__PI * r * r * r * o->density
                        : CM__PI * r * r * o->thickness * o->density;
    else
      b.mass = d->mass[i];
    double I = (dim == 3 ? 0.4 : 0.5) * b.mass * r * r; /* 2/5 or 1/2 m r^2 */
    memset(b.inertia, 0, sizeof b.inertia);
    b.inertia[0] = I;
    if (dim == 3)
      b.inertia[4] = b.inertia[8] = I;
    memcpy(b.position, d->x + 3 * i, 3 * sizeof(double));
    char name[40];
    snprintf(name, sizeof name, "atom-%ld", d->id[i]);
    int st = cm_scene_add_body(ctx, s, &b, name);
    if (st < 0)
      return st;
  }
  if (!o->wall_bodies)
    return CM_OK;
  int nwalls = o->nplanes + (o->cylinder ? 1 : 0);
  for (int w = 0; w < nwalls; w++) {
    cm_body_t b;
    cm_body_init(&b);
    b.fixed = 1;
    if (w < o->nplanes)
      memcpy(b.position, o->planes[w], 3 * sizeof(double));
    else
      b.position[0] = o->cyl_center[0], b.position[1] = o->cyl_center[1];
    char name[32];
    cm__wall_name(o, w, name, sizeof name);
    int st = cm_scene_add_body(ctx, s, &b, name);
    if (st < 0)
      return st;
  }
  return CM_OK;
}

/* The masses of the atom bodies (malloc'd in *out). */
static int cm__masses(cm_context_t *ctx, const cm_dump_t *d,
                      const cm_scene_t *s, double **out) {
  double *m = malloc((size_t)(d->natoms ? d->natoms : 1) * sizeof *m);
  if (!m)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  for (int i = 0; i < d->natoms; i++)
    m[i] = s->bodies[i].mass;
  *out = m;
  return CM_OK;
}

/* Lever arms. With a deck's laws the engines put the force of a sphere at
 * its own surface, a full radius from its centre (LAMMPS pair_gran*.cpp,
 * pair_granular.cpp and fix_wall_gran.cpp: radi * omega_i + radj * omega_j),
 * not at one shared point: arm_a = -r_i n, arm_b = r_j n (n from j to i).
 * A pair across a periodic boundary gets arms too (the image of j is not at
 * j's position): those of the shared midpoint, (r - delta/2) each. */
static void cm__contact_arms(const cm_dump_t *d, const cm_dump_options_t *o,
                             const cm_dump_contact_t *c, cm_contact_t *k) {
  int across = c->j >= 0 && (c->image[0] || c->image[1] || c->image[2]);
  if (!o->model && !across)
    return;
  double ri = d->radius[c->i], rj = c->j >= 0 ? d->radius[c->j] : 0;
  if (!o->model) /* the midpoint's arms */
    ri -= 0.5 * c->overlap, rj -= 0.5 * c->overlap;
  for (int t = 0; t < 3; t++) {
    k->arm_a[t] = -ri * c->normal[t];
    k->arm_b[t] = c->j >= 0 ? rj * c->normal[t] : 0.0;
  }
  k->has_arms = 1;
}

/* Appends contact c: bodies, geometry, and its stiffness (the deck's laws
 * when o->model is set: k_n, k_t, c_n, c_t). Counts pairs in *np. */
static int cm__add_contact(cm_context_t *ctx, const cm_dump_t *d,
                           const cm_dump_options_t *o, const double *mass,
                           const cm_dump_contact_t *c, cm_scene_t *s,
                           int *np) {
  cm_contact_t k;
  cm_contact_init(&k);
  k.a = c->i;
  k.b = c->j >= 0 ? c->j : (o->wall_bodies ? d->natoms + c->wall : CM_WORLD);
  *np += c->j >= 0;
  memcpy(k.point, c->point, sizeof k.point);
  memcpy(k.normal, c->normal, sizeof k.normal);
  cm__contact_arms(d, o, c, &k);
  if (o->model) {
    double v[4];
    int st = cm_dump_contact_law(ctx, o, d, mass, c, v);
    if (st)
      return st;
    k.stiffness = v[0], k.stiffness_t = v[1];
    k.damping_n = v[2], k.damping_t = v[3];
  } else {
    k.stiffness = cm_dump_stiffness(o, d, c);
  }
  return cm_scene_add_contact(ctx, s, &k, NULL);
}

/* A dump without a type column takes every atom as type 1: refused when
 * the deck's drags or tethers differ between its types (a group of types,
 * or scale), as the atoms of the others would get type 1's. */
static int cm__check_fix_types(cm_context_t *ctx, const cm_dump_t *d,
                               const cm_contact_model_t *m) {
  for (int t = 2; !d->typed && t <= m->ntypes && t <= CM_LAW_MAX_TYPES; t++)
    if (m->drag[t] != m->drag[1] || m->drag_rate[t] != m->drag_rate[1] ||
        memcmp(m->tether[t], m->tether[1], sizeof m->tether[1]))
      return CM__ERR(ctx, CM_USAGE, "type",
                     "%s: no type column, so every atom is taken as type 1, "
                     "but the deck's fix viscous, langevin or spring/self "
                     "acts on types 1 and %d differently (a group of types "
                     "or scale); dump the type column",
                     d->source ? d->source : "dump", t);
  return CM_OK;
}

/* A contact between atom i and the world at its centre (no lever arm, no
 * rotation), its normal along axis a; no stiffness or dashpot yet. */
static cm_contact_t cm__centre_contact(const cm_dump_t *d, int i, int a) {
  cm_contact_t k;
  cm_contact_init(&k);
  k.a = i, k.b = CM_WORLD;
  memcpy(k.point, d->x + 3 * (size_t)i, sizeof k.point);
  memset(k.normal, 0, sizeof k.normal);
  k.normal[a] = 1;
  return k;
}

/* Appends atom i's drag, if the deck's fix viscous or langevin gives its
 * type one (force -gamma v): a dashpot alone between the atom and the world at its
 * centre (no lever arm, no rotation), damping_n = damping_t = gamma, whose
 * normal and tangent rows span the translations. Counts it in *nd. */
static int cm__add_drag(cm_context_t *ctx, const cm_dump_t *d,
                        const cm_dump_options_t *o, int i, cm_scene_t *s,
                        int *nd) {
  int t = d->type[i];
  const cm_contact_model_t *m = o->model;
  double g = t >= 1 && t <= CM_LAW_MAX_TYPES
                 ? m->drag[t] + s->bodies[i].mass * m->drag_rate[t]
                 : 0; /* fix viscous's gamma, fix langevin's m / damp */
  if (!(g > 0))
    return CM_OK;
  cm_contact_t k = cm__centre_contact(d, i, o->dim - 1);
  k.stiffness = 0, k.damping_n = k.damping_t = g;
  (*nd)++;
  return cm_scene_add_contact(ctx, s, &k, NULL);
}

/* Appends atom i's tethers, if the deck's fix spring/self gives them: a
 * spring to the world at its centre (no lever arm), K on the flagged
 * axes. Equal K on every axis of the dimension is one contact (its normal
 * and tangent rows span the translations, stiffness = stiffness_t = K),
 * else one contact per axis. Counts them in *nt. */
static int cm__add_tether(cm_context_t *ctx, const cm_dump_t *d,
                          const cm_dump_options_t *o, int i, cm_scene_t *s,
                          int *nt) {
  int t = d->type[i];
  if (t < 1 || t > CM_LAW_MAX_TYPES)
    return CM_OK;
  const double *K = o->model->tether[t];
  int dim = o->dim, iso = 1, st = CM_OK;
  for (int a = 1; a < dim; a++)
    iso &= K[a] == K[0];
  for (int a = 0; a < dim && st >= 0; a++) {
    if (!(K[a] > 0) || (iso && a != dim - 1))
      continue; /* isotropic: one contact, normal along the last axis */
    cm_contact_t k = cm__centre_contact(d, i, a);
    k.stiffness = K[a], k.stiffness_t = iso ? K[a] : 0;
    (*nt)++;
    st = cm_scene_add_contact(ctx, s, &k, NULL);
  }
  return st;
}

/* A scene error at bodies[i] or contacts[q] (ctx->path) of the scene built
 * from a dump: prefixes the message with the dump's file, line and atom id
 * (both atoms of a pair), so it points at the input, not at a scene the
 * user never saw. Returns st. */
static int cm__dump_where(cm_context_t *ctx, const cm_dump_t *d,
                          const cm_dump_contact_t *c, int nc, int st) {
  if (!ctx || !ctx->path[0])
    return st;
  int i = -1, j = -1, k;
  if (sscanf(ctx->path, "bodies[%d]", &k) == 1 && k >= 0 && k < d->natoms)
    i = k;
  else if (sscanf(ctx->path, "contacts[%d]", &k) == 1 && k >= 0 && k < nc)
    i = c[k].i, j = c[k].j;
  if (i < 0)
    return st;
  char where[256], msg[sizeof ctx->message];
  if (j >= 0)
    snprintf(where, sizeof where, "%s:%ld: atom %ld (and atom %ld, line %ld)",
             d->source ? d->source : "dump", d->line[i], d->id[i], d->id[j],
             d->line[j]);
  else
    snprintf(where, sizeof where, "%s:%ld: atom %ld",
             d->source ? d->source : "dump", d->line[i], d->id[i]);
  snprintf(msg, sizeof msg, "%s", ctx->message);
  snprintf(ctx->message, sizeof ctx->message, "%s: %.700s", where, msg);
  return st;
}

int cm_dump_to_scene(cm_context_t *ctx, const cm_dump_t *d,
                     const cm_dump_options_t *o, cm_scene_t **out) {
  /* ---- check inputs ---- */
  if (!d || !o || !out)
    return CM__ERR(ctx, CM_USAGE, NULL, "cm_dump_to_scene: NULL argument");
  *out = NULL;
  int st = cm__check_model(ctx, d, o);
  if (st)
    return st;
  /* ---- contacts ---- */
  cm_dump_contact_t *c = NULL;
  int nc = 0;
  if ((st = cm_dump_find_contacts(ctx, d, o, &c, &nc)))
    return st;
  /* ---- scene ---- */
  cm_scene_t *s = cm_scene_create(o->dim);
  if (!s) {
    free(c);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  st = cm__add_bodies(ctx, d, o, s);
  double *mass = NULL;
  if (st >= 0 && o->model)
    st = cm__masses(ctx, d, s, &mass);
  int np = 0;
  for (int q = 0; q < nc && st >= 0; q++)
    st = cm__add_contact(ctx, d, o, mass, &c[q], s, &np);
  int nd = 0, nt = 0;
  if (st >= 0 && o->model)
    st = cm__check_fix_types(ctx, d, o->model);
  for (int i = 0; o->model && i < d->natoms && st >= 0; i++)
    st = cm__add_drag(ctx, d, o, i, s, &nd);
  for (int i = 0; o->model && i < d->natoms && st >= 0; i++)
    st = cm__add_tether(ctx, d, o, i, s, &nt);
  char *warn = st >= 0 ? cm__warnings(d, o, c, nc) : NULL;
  if (st >= 0) {
    cm__extra_t x = {warn, c, nc, nd, nt};
    if (o->model)
      s->timestep_s = o->model->timestep_s;
    s->meta_json = cm__meta(d, o, np, nc - np, &x);
    st = s->meta_json ? cm_scene_validate(ctx, s)
                      : CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  free(warn);
  free(mass);
  if (st < 0)
    cm__dump_where(ctx, d, c, nc, st);
  free(c);
  if (st < 0) {
    cm_scene_destroy(&s);
    return st;
  }
  *out = s;
  return CM_OK;
}

int cm_import_dump(cm_context_t *ctx, const char *path,
                   const cm_dump_options_t *opts, cm_scene_t **out) {
  cm_dump_t *d = NULL;
  if (out)
    *out = NULL;
  int st = cm_dump_read(ctx, path, opts, &d);
  if (!st)
    st = cm_dump_to_scene(ctx, d, opts, out);
  cm_dump_destroy(&d);
  return st;
}
