/* pile.c: granular piles by sequential deposition. Each particle is dropped
 * at a seeded random horizontal position, falls, and rolls on the grains it
 * meets (steepest descent, frictionless rolling geometry) until gravity is
 * inside the cone of its supports: 2 (2D) or 3 (3D) grains, walls or the
 * floor. A cell grid finds the neighbours. The static loads then go top-down
 * (reverse deposition order): each particle's load (its weight plus the
 * forces of the particles resting on it) is carried exactly by its supports
 * when it lies inside their cone, else its vertical component is, and each
 * contact's force sets its overlap and (Hertz) stiffness. Not for dense or
 * jammed packings made by dynamics (import those: src/import/).
 *
 * Internally z is up in both dimensions (2D lives in the x-z plane) and is
 * mapped to the scene's y axis in 2D. */
#include "generate/gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cm_pile_options_init(cm_pile_options_t *o) {
  o->dim = 2;
  o->count = 200;
  o->seed = 1;
  o->radius = 0.005;
  o->polydispersity = 0.2;
  o->density = 2500.0;
  o->gravity = 9.81;
  o->width = 0;
  o->k = 1e5;
  o->young = 0;
  o->poisson = 0.25;
  o->walls = 1;
}

/* ---- check ------------------------------------------------------------------
 */

static int cm__pile_check(cm_context_t *ctx, const cm_pile_options_t *o) {
  if (o->dim != 2 && o->dim != 3)
    return CM__OPT(ctx, "dim", "dim: %d is not 2 or 3", o->dim);
  if (o->count < 1)
    return CM__OPT(ctx, "count",
                   "count: %d; a pile needs at least 1 particle (try --count "
                   "200)",
                   o->count);
  if ((double)o->count * 4.0 > CM__GEN_MAX_ITEMS)
    return CM__ERR(ctx, CM_LIMIT, "count",
                   "count: %d particles is too many (contacts must stay below "
                   "2^31)",
                   o->count);
  if (!(o->radius > 0) || !isfinite(o->radius))
    return CM__OPT(ctx, "radius", "radius: %g is not a positive length (m)",
                   o->radius);
  if (!(o->polydispersity >= 0 && o->polydispersity < 1))
    return CM__OPT(ctx, "polydispersity",
                   "polydispersity: %g must be in [0, 1) (radii are "
                   "radius (1 +- p))",
                   o->polydispersity);
  if (!(o->density > 0) || !isfinite(o->density))
    return CM__OPT(ctx, "density", "density: %g is not positive (kg/m^3)",
                   o->density);
  if (!(o->gravity > 0) || !isfinite(o->gravity))
    return CM__OPT(ctx, "gravity",
                   "gravity: %g must be > 0 (m/s^2): a pile rests under its "
                   "weight",
                   o->gravity);
  if (!(o->width >= 0) || !isfinite(o->width))
    return CM__OPT(ctx, "width", "width: %g must be >= 0 (0 = auto)", o->width);
  if (o->width > 0 && o->width < 4 * o->radius)
    return CM__OPT(ctx, "width",
                   "width: %g m is less than two diameters (%g m)", o->width,
                   4 * o->radius);
  if (o->young > 0) {
    if (!isfinite(o->young))
      return CM__OPT(ctx, "young", "young: not a finite modulus (Pa)");
    if (!(o->poisson >= 0 && o->poisson < 0.5))
      return CM__OPT(ctx, "poisson", "poisson: %g must be in [0, 0.5)",
                     o->poisson);
  } else if (o->young < 0 || !(o->young == 0)) {
    return CM__OPT(ctx, "young", "young: %g must be > 0 (or 0 for linear k)",
                   o->young);
  } else if (!(o->k > 0) || !isfinite(o->k)) {
    return CM__OPT(ctx, "k", "k: %g is not a positive stiffness (N/m)", o->k);
  }
  return CM_OK;
}

/* ---- the deposit: objects and their grid
 * -------------------------------------- */

#define CM__MAXSUP 3
#define CM__NWALL 5 /* x = 0, x = W, y = 0, y = W (3D), floor z = 0 */
#define CM__WALL(w) (-1 - (w)) /* support id of wall w */

typedef struct {
  int id[CM__MAXSUP];   /* object index or CM__WALL(w) */
  cm__v3 n[CM__MAXSUP]; /* unit normal from the support to the particle */
  double a[CM__MAXSUP]; /* share of the vertical load: sum a n = e_z */
  int ns;               /* supports in use */
  int wedged;           /* 1: rests under an overhang (cm__unwedge) */
} cm__sup_t;

typedef struct {
  cm_context_t *ctx;
  const cm_pile_options_t *o;
  int dim;        /* 2 or 3 */
  int nobj;       /* objects placed: floor grains then particles */
  int nfloor;     /* fixed floor grains */
  cm__v3 *c;      /* centres, size cap */
  double *r;      /* radii, size cap */
  int *next;      /* grid list links, size cap */
  cm__sup_t *sup; /* supports of the particles, size count */
  double W;       /* box width (x and y), m */
  double rmax;    /* largest radius of any object */
  double h;       /* grid cell size = 2 rmax */
  int ncx, ncy;   /* grid columns */
  int nlay;       /* grid layers allocated */
  int *head;      /* first object of each cell, size ncx ncy nlay */
  double *top;    /* highest grain top in each column, size ncx ncy */
  cm__v3 wall_p[CM__NWALL], wall_n[CM__NWALL]; /* wall planes */
  int nwall; /* walls in use (floor plane always last) */
} cm__pile_t;

static int cm__cell_xy(const cm__pile_t *P, double v, int n) {
  int c = (int)floor(v / P->h);
  return c < 0 ? 0 : c >= n ? n - 1 : c;
}

/* Inserts object i into the grid, growing it upwards as needed. */
static int cm__grid_put(cm__pile_t *P, int i) {
  cm__v3 p = P->c[i];
  int lz = (int)floor(p.z / P->h);
  if (lz < 0)
    lz = 0;
  size_t layer = (size_t)P->ncx * P->ncy;
  if (lz >= P->nlay) {
    int nl = P->nlay ? P->nlay : 8;
    while (nl <= lz)
      nl *= 2;
    int *nh = realloc(P->head, (size_t)nl * layer * sizeof *nh);
    if (!nh)
      return CM__ERR(P->ctx, CM_NOMEM, NULL, "out of memory (pile grid)");
    for (size_t j = (size_t)P->nlay * layer; j < (size_t)nl * layer; j++)
      nh[j] = -1;
    P->head = nh;
    P->nlay = nl;
  }
  int cx = cm__cell_xy(P, p.x, P->ncx), cy = cm__cell_xy(P, p.y, P->ncy);
  size_t cell = (size_t)lz * layer + (size_t)cy * P->ncx + cx;
  P->next[i] = P->head[cell];
  P->head[cell] = i;
  double t = p.z + P->r[i];
  if (t > P->top[cy * P->ncx + cx])
    P->top[cy * P->ncx + cx] = t;
  return CM_OK;
}

/* Visits the objects in the grid box [lo, hi] (x, y, z), calling fn. */
typedef void (*cm__visit_fn)(cm__pile_t *P, int obj, void *arg);
static void cm__grid_box(cm__pile_t *P, cm__v3 lo, cm__v3 hi, cm__visit_fn fn,
                         void *arg) {
  int x0 = cm__cell_xy(P, lo.x, P->ncx), x1 = cm__cell_xy(P, hi.x, P->ncx);
  int y0 = cm__cell_xy(P, lo.y, P->ncy), y1 = cm__cell_xy(P, hi.y, P->ncy);
  int z0 = (int)floor(lo.z / P->h), z1 = (int)floor(hi.z / P->h);
  if (z0 < 0)
    z0 = 0;
  if (z1 >= P->nlay)
    z1 = P->nlay - 1;
  size_t layer = (size_t)P->ncx * P->ncy;
  for (int lz = z0; lz <= z1; lz++)
    for (int cy = y0; cy <= y1; cy++)
      for (int cx = x0; cx <= x1; cx++)
        for (int i = P->head[(size_t)lz * layer + (size_t)cy * P->ncx + cx];
             i >= 0; i = P->next[i])
          fn(P, i, arg);
}

/* ---- falling
 * ------------------------------------------------------------------ */

typedef struct {
  cm__v3 p;    /* falling centre */
  double r;    /* its radius */
  int exclude; /* object not to hit (the one just left), or -1 */
  double best; /* highest hit height so far */
  int hit;     /* object hit, or CM__WALL(floor) */
} cm__fall_t;

static void cm__fall_visit(cm__pile_t *P, int i, void *arg) {
  cm__fall_t *F = arg;
  if (i == F->exclude)
    return;
  double R = F->r + P->r[i];
  double dx = F->p.x - P->c[i].x, dy = F->p.y - P->c[i].y;
  double dh2 = dx * dx + dy * dy;
  if (dh2 >= R * R)
    return;
  double z = P->c[i].z + sqrt(R * R - dh2);
  if (z > F->best && z <= F->p.z + 1e-12 * R) {
    F->best = z;
    F->hit = i;
  }
}

/* Drops the particle straight down from p; returns the object hit (or the
 * floor plane) and sets p->z to the contact height. Scans grid layers from
 * the top down and stops once lower layers cannot hold a higher hit. */
static int cm__fall(cm__pile_t *P, cm__v3 *p, double r, int exclude) {
  cm__fall_t F = {*p, r, exclude, r, CM__WALL(P->nwall - 1)};
  double reach = r + P->rmax;
  int lz = (int)floor((p->z + 1e-12) / P->h);
  if (lz >= P->nlay)
    lz = P->nlay - 1;
  for (; lz >= 0; lz--) {
    if (F.best >= (lz + 1) * P->h + reach)
      break;
    cm__v3 lo = cm__v3make(p->x - reach, p->y - reach, (lz + 0.5) * P->h);
    cm__v3 hi = cm__v3make(p->x + reach, p->y + reach, (lz + 0.5) * P->h);
    cm__grid_box(P, lo, hi, cm__fall_visit, &F);
  }
  p->z = F.best;
  return F.hit;
}

/* ---- rolling: sweeping a circle
 * ---------------------------------------------- */

/* Circle o + rho (cos phi e1 + sin phi e2), phi in (0, phimax]: the first
 * phi where the particle (radius r) touches an object not in `skip`. */
typedef struct {
  cm__v3 o, e1, e2;
  double rho, phimax, r;
  const int *skip;
  int nskip;
  double best; /* first touching phi */
  int hit;     /* what it touches, or CM__WALL(w); INT32_MIN = nothing */
} cm__sweep_t;

/* First root of A cos phi + B sin phi = C in (0, phimax] that enters the
 * object (g = A cos + B sin - C goes from > 0 to < 0); NAN if none. */
static double cm__first_entry(double A, double B, double C, double phimax,
                              double scale) {
  double g0 = A - C, tol = 1e-10 * scale;
  if (g0 < tol && g0 > -tol && B < 0)
    return 0; /* touching at the start and moving in */
  double M = sqrt(A * A + B * B);
  if (!(M > 0) || fabs(C) > M)
    return NAN;
  double al = atan2(B, A), de = acos(C / M);
  double best = NAN;
  for (int s = -1; s <= 1; s += 2) {
    double phi = fmod(al + s * de, 2 * M_PI);
    if (phi < 0)
      phi += 2 * M_PI;
    if (phi <= 1e-11 || phi > phimax)
      continue;
    double dg = -A * sin(phi) + B * cos(phi); /* g'(phi) */
    if (dg < 0 && (isnan(best) || phi < best))
      best = phi;
  }
  return best;
}

static int cm__skipped(const cm__sweep_t *S, int id) {
  for (int k = 0; k < S->nskip; k++)
    if (S->skip[k] == id)
      return 1;
  return 0;
}

static void cm__sweep_visit(cm__pile_t *P, int i, void *arg) {
  cm__sweep_t *S = arg;
  if (cm__skipped(S, i))
    return;
  cm__v3 w = cm__v3sub(S->o, P->c[i]);
  double R = S->r + P->r[i];
  double A = 2 * S->rho * cm__v3dot(w, S->e1);
  double B = 2 * S->rho * cm__v3dot(w, S->e2);
  double C = R * R - cm__v3dot(w, w) - S->rho * S->rho;
  double phi = cm__first_entry(A, B, C, S->phimax, R * R);
  if (!isnan(phi) && phi < S->best) {
    S->best = phi;
    S->hit = i;
  }
}

static void cm__sweep(cm__pile_t *P, cm__sweep_t *S) {
  S->best = INFINITY;
  S->hit = INT32_MIN;
  /* bounding box of the swept arc: 8 chords, padded by their sagitta and
   * by the reach of a touching grain */
  double dphi = S->phimax / 8, pad = S->r + P->rmax;
  pad += S->rho * (1 - cos(0.5 * dphi)) + 1e-12 * S->rho;
  cm__v3 lo = cm__v3make(INFINITY, INFINITY, INFINITY);
  cm__v3 hi = cm__v3scale(lo, -1);
  for (int t = 0; t <= 8; t++) {
    double ph = t * dphi;
    cm__v3 q =
        cm__v3add(S->o, cm__v3scale(cm__v3add(cm__v3scale(S->e1, cos(ph)),
                                              cm__v3scale(S->e2, sin(ph))),
                                    S->rho));
    lo = cm__v3make(fmin(lo.x, q.x), fmin(lo.y, q.y), fmin(lo.z, q.z));
    hi = cm__v3make(fmax(hi.x, q.x), fmax(hi.y, q.y), fmax(hi.z, q.z));
  }
  lo = cm__v3sub(lo, cm__v3make(pad, pad, pad));
  hi = cm__v3add(hi, cm__v3make(pad, pad, pad));
  cm__grid_box(P, lo, hi, cm__sweep_visit, S);
  for (int w = 0; w < P->nwall; w++) {
    if (cm__skipped(S, CM__WALL(w)))
      continue;
    cm__v3 n = P->wall_n[w];
    double A = S->rho * cm__v3dot(S->e1, n), B = S->rho * cm__v3dot(S->e2, n);
    double C = S->r - cm__v3dot(cm__v3sub(S->o, P->wall_p[w]), n);
    double phi = cm__first_entry(A, B, C, S->phimax, S->r);
    if (!isnan(phi) && phi < S->best) {
      S->best = phi;
      S->hit = CM__WALL(w);
    }
  }
}

/* ---- supports
 * -------------------------------------------------------------------- */

/* Unit normal from support id to the particle at p (radius r). */
static cm__v3 cm__sup_normal(const cm__pile_t *P, int id, cm__v3 p) {
  if (id < 0)
    return P->wall_n[-1 - id];
  cm__v3 d = cm__v3sub(p, P->c[id]);
  return cm__v3scale(d, 1.0 / cm__v3norm(d));
}

/* Solves e_z = sum a_s n_s over ns supports (least squares in their span);
 * returns 0 if singular. */
static int cm__shares(int ns, const cm__v3 *n, cm__v3 target, double *a) {
  if (ns == 1) {
    a[0] = cm__v3dot(n[0], target);
    return 1;
  }
  double G[3][3], b[3];
  for (int i = 0; i < ns; i++) {
    b[i] = cm__v3dot(n[i], target);
    for (int j = 0; j < ns; j++)
      G[i][j] = cm__v3dot(n[i], n[j]);
  }
  if (ns == 2) {
    double det = G[0][0] * G[1][1] - G[0][1] * G[1][0];
    if (!(fabs(det) > 1e-12))
      return 0;
    a[0] = (b[0] * G[1][1] - G[0][1] * b[1]) / det;
    a[1] = (G[0][0] * b[1] - G[1][0] * b[0]) / det;
    return 1;
  }
  double det = G[0][0] * (G[1][1] * G[2][2] - G[1][2] * G[2][1]) -
               G[0][1] * (G[1][0] * G[2][2] - G[1][2] * G[2][0]) +
               G[0][2] * (G[1][0] * G[2][1] - G[1][1] * G[2][0]);
  if (!(fabs(det) > 1e-12))
    return 0;
  for (int k = 0; k < 3; k++) { /* Cramer */
    double M[3][3];
    memcpy(M, G, sizeof M);
    for (int i = 0; i < 3; i++)
      M[i][k] = b[i];
    a[k] = (M[0][0] * (M[1][1] * M[2][2] - M[1][2] * M[2][1]) -
            M[0][1] * (M[1][0] * M[2][2] - M[1][2] * M[2][0]) +
            M[0][2] * (M[1][0] * M[2][1] - M[1][1] * M[2][0])) /
           det;
  }
  return 1;
}

static void cm__drop_support(cm__sup_t *S, int k) {
  for (int j = k; j + 1 < S->ns; j++) {
    S->id[j] = S->id[j + 1];
    S->n[j] = S->n[j + 1];
  }
  S->ns--;
}

/* ---- placing one particle
 * ------------------------------------------------------ */

typedef struct {
  const cm__pile_t *P;
  cm__v3 p;
  double r;
  const cm__sup_t *S;
  int bad;
} cm__ovl_t;

static void cm__ovl_visit(cm__pile_t *P, int i, void *arg) {
  cm__ovl_t *V = arg;
  for (int k = 0; k < V->S->ns; k++)
    if (V->S->id[k] == i)
      return;
  double R = V->r + P->r[i];
  cm__v3 d = cm__v3sub(V->p, P->c[i]);
  if (cm__v3dot(d, d) < R * R * (1 - 1e-9))
    V->bad = 1;
}

/* Final geometric check: inside the box, overlapping nothing. */
static int cm__clear(cm__pile_t *P, cm__v3 p, double r, const cm__sup_t *S) {
  for (int w = 0; w < P->nwall; w++)
    if (cm__v3dot(cm__v3sub(p, P->wall_p[w]), P->wall_n[w]) < r * (1 - 1e-9))
      return 0;
  cm__ovl_t V = {P, p, r, S, 0};
  double e = r + P->rmax;
  cm__grid_box(P, cm__v3sub(p, cm__v3make(e, e, e)),
               cm__v3add(p, cm__v3make(e, e, e)), cm__ovl_visit, &V);
  return !V.bad;
}

/* Keeps only the supports below the centre (n_z > 0) of a particle wedged
 * under an overhang, with shares that carry the vertical load exactly
 * (sum a n_z = 1) and the least horizontal residual. Returns 0 if none. */
static int cm__unwedge(cm__sup_t *S) {
  for (int s = S->ns - 1; s >= 0; s--)
    if (S->id[s] >= 0 && !(S->n[s].z > 1e-9))
      cm__drop_support(S, s);
  if (S->ns == 0)
    return 0;
  int ok = cm__shares(S->ns, S->n, cm__v3make(0, 0, 1), S->a);
  for (int s = 0; ok && s < S->ns; s++)
    ok = S->a[s] > 1e-9;
  if (!ok) { /* the steepest support alone */
    int best = 0;
    for (int s = 1; s < S->ns; s++)
      if (S->n[s].z > S->n[best].z)
        best = s;
    S->id[0] = S->id[best];
    S->n[0] = S->n[best];
    S->ns = 1;
    S->a[0] = 1;
  }
  double vz = 0;
  for (int s = 0; s < S->ns; s++)
    vz += S->a[s] * S->n[s].z;
  if (!(vz > 1e-9))
    return 0;
  for (int s = 0; s < S->ns; s++)
    S->a[s] /= vz;
  S->wedged = 1;
  return 1;
}

/* A rest is accepted when every support carries a share (> 0) and no grain
 * pushes from above the centre (n_z > 0), so the top-down loads stay
 * compressive. Walls (n_z = 0) carry sideways. When not strict (a particle
 * whose drops keep ending under an overhang), the overhanging grains are
 * left touching but unloaded (cm__unwedge). */
static int cm__rest_ok(cm__pile_t *P, cm__v3 p, double r, cm__sup_t *S,
                       int strict) {
  S->wedged = 0;
  int dropped = 0; /* supports touching but carrying nothing */
  for (int s = S->ns - 1; s >= 0; s--)
    if (!(S->a[s] > 1e-9)) {
      if (!(S->a[s] > -1e-12))
        return 0;
      cm__drop_support(S, s);
      dropped = 1;
    }
  if (S->ns == 0)
    return 0;
  if (dropped) { /* the rest must carry e_z exactly (e.g. the flat floor) */
    if (!cm__shares(S->ns, S->n, cm__v3make(0, 0, 1), S->a))
      return 0;
    cm__v3 sum = cm__v3make(0, 0, -1);
    for (int s = 0; s < S->ns; s++) {
      if (!(S->a[s] > 1e-9))
        return 0;
      sum = cm__v3add(sum, cm__v3scale(S->n[s], S->a[s]));
    }
    if (!(cm__v3norm(sum) < 1e-12))
      return 0;
  }
  for (int s = 0; s < S->ns; s++)
    if (S->id[s] >= 0 && !(S->n[s].z > 1e-9)) {
      if (strict || !cm__unwedge(S))
        return 0;
      break;
    }
  return cm__clear(P, p, r, S);
}

/* Horizontal descent direction when balanced on top of one grain. */
static cm__v3 cm__random_horizontal(const cm__pile_t *P, uint64_t key) {
  if (P->dim == 2)
    return cm__v3make(
        cm__hash_uniform(P->o->seed ^ 0x5bd1e995ULL, key) < 0 ? -1 : 1, 0, 0);
  double t = M_PI * cm__hash_uniform(P->o->seed ^ 0x5bd1e995ULL, key);
  return cm__v3make(cos(t), sin(t), 0);
}

/* Rolls down the meridian of support S->id[0]; returns 1 on a new contact
 * (added to S), 0 when it leaves the grain at the equator. */
static int cm__roll1(cm__pile_t *P, cm__v3 *p, double r, cm__sup_t *S,
                     uint64_t key) {
  int i = S->id[0];
  cm__v3 o = i >= 0 ? P->c[i] : *p;
  if (i < 0)
    return 0; /* resting against a wall alone: slide down */
  double rho = r + P->r[i];
  cm__v3 e1 = cm__v3scale(cm__v3sub(*p, o), 1.0 / rho);
  cm__v3 down = cm__v3make(0, 0, -1);
  cm__v3 e2 = cm__v3sub(down, cm__v3scale(e1, cm__v3dot(down, e1)));
  double l2 = cm__v3norm(e2);
  if (l2 < 1e-9) /* exactly on top: pick a direction */
    e2 = cm__random_horizontal(P, key);
  else
    e2 = cm__v3scale(e2, 1.0 / l2);
  double phimax = e1.z > 0 ? atan2(e1.z, -e2.z) : 0;
  cm__sweep_t W = {o, e1,    e2,    rho,      phimax,
                   r, S->id, S->ns, INFINITY, INT32_MIN};
  if (phimax > 0)
    cm__sweep(P, &W);
  double phi = W.hit != INT32_MIN ? W.best : phimax;
  *p = cm__v3add(o, cm__v3scale(cm__v3add(cm__v3scale(e1, cos(phi)),
                                          cm__v3scale(e2, sin(phi))),
                                rho));
  if (W.hit == INT32_MIN)
    return 0;
  S->id[S->ns++] = W.hit;
  return 1;
}

/* 3D: rolls along the circle of the two supports. Returns 1 on a third
 * contact, 2 when it rests at the bottom of the circle, -1 if degenerate. */
static int cm__roll2(cm__pile_t *P, cm__v3 *p, double r, cm__sup_t *S) {
  int i = S->id[0], k = S->id[1];
  if (i < 0) { /* keep the grain first */
    int t = i;
    i = k;
    k = t;
  }
  if (i < 0)
    return -1; /* two walls: cannot happen with a grain under it */
  double Ri = r + P->r[i];
  cm__v3 u, o;
  double rho2;
  if (k >= 0) {
    double Rk = r + P->r[k];
    u = cm__v3sub(P->c[k], P->c[i]);
    double d = cm__v3norm(u);
    u = cm__v3scale(u, 1.0 / d);
    double a = (d * d + Ri * Ri - Rk * Rk) / (2 * d);
    o = cm__v3add(P->c[i], cm__v3scale(u, a));
    rho2 = Ri * Ri - a * a;
  } else {
    u = P->wall_n[-1 - k];
    double s = cm__v3dot(cm__v3sub(P->c[i], P->wall_p[-1 - k]), u) - r;
    o = cm__v3sub(P->c[i], cm__v3scale(u, s));
    rho2 = Ri * Ri - s * s;
  }
  if (!(rho2 > 0))
    return -1;
  double rho = sqrt(rho2);
  cm__v3 e1 = cm__v3sub(*p, o);
  e1 = cm__v3sub(e1, cm__v3scale(u, cm__v3dot(e1, u)));
  double l1 = cm__v3norm(e1);
  if (!(l1 > 0))
    return -1;
  e1 = cm__v3scale(e1, 1.0 / l1);
  cm__v3 e2 = cm__v3cross(u, e1);
  if (e2.z > 0)
    e2 = cm__v3scale(e2, -1);
  double phimin = atan2(-e2.z, -e1.z);
  if (phimin < 0)
    phimin += 2 * M_PI;
  if (phimin > M_PI)
    phimin = 0;
  cm__sweep_t W = {o, e1,    e2,    rho,      phimin,
                   r, S->id, S->ns, INFINITY, INT32_MIN};
  if (phimin > 1e-11)
    cm__sweep(P, &W);
  double phi = W.hit != INT32_MIN ? W.best : phimin;
  *p = cm__v3add(o, cm__v3scale(cm__v3add(cm__v3scale(e1, cos(phi)),
                                          cm__v3scale(e2, sin(phi))),
                                rho));
  if (W.hit == INT32_MIN)
    return 2;
  S->id[S->ns++] = W.hit;
  return 1;
}

/* Tries to deposit particle j (object index obj) dropped at (x, y). Returns
 * 1 placed (S filled), 0 rejected (degenerate path: retry elsewhere). */
static int cm__deposit(cm__pile_t *P, int obj, double x, double y, cm__sup_t *S,
                       uint64_t key, int strict, cm__v3 *pos) {
  double r = P->r[obj];
  int d3 = P->dim == 3;
  cm__v3 p = cm__v3make(x, d3 ? y : 0, 0);
  /* start above everything in the footprint */
  double reach = r + P->rmax, zs = r;
  int x0 = cm__cell_xy(P, x - reach, P->ncx),
      x1 = cm__cell_xy(P, x + reach, P->ncx);
  int y0 = d3 ? cm__cell_xy(P, p.y - reach, P->ncy) : 0;
  int y1 = d3 ? cm__cell_xy(P, p.y + reach, P->ncy) : 0;
  for (int cy = y0; cy <= y1; cy++)
    for (int cx = x0; cx <= x1; cx++)
      if (P->top[cy * P->ncx + cx] + r > zs)
        zs = P->top[cy * P->ncx + cx] + r;
  p.z = zs;
  S->ns = 0;
  int left = -1; /* grain just rolled off */
  for (int step = 0; step < 64; step++) {
    if (S->ns == 0) {
      S->id[0] = cm__fall(P, &p, r, left);
      S->ns = 1;
      if (S->id[0] == CM__WALL(P->nwall - 1)) { /* on the flat floor */
        S->n[0] = cm__v3make(0, 0, 1);
        S->a[0] = 1;
        *pos = p;
        return cm__rest_ok(P, p, r, S, strict);
      }
      continue;
    }
    for (int s = 0; s < S->ns; s++)
      S->n[s] = cm__sup_normal(P, S->id[s], p);
    if (S->ns == 1) {
      left = S->id[0];
      if (!cm__roll1(P, &p, r, S, key + 7919u * (uint64_t)step))
        S->ns = 0;
      continue;
    }
    if (S->ns == 2 && d3) {
      /* does it stay on both while rolling along their circle? */
      double a[2];
      cm__v3 t = cm__v3cross(S->n[0], S->n[1]);
      double lt = cm__v3norm(t);
      if (!(lt > 1e-12))
        return 0;
      t = cm__v3scale(t, 1.0 / lt);
      cm__v3 up = cm__v3make(0, 0, 1);
      cm__v3 upp = cm__v3sub(up, cm__v3scale(t, cm__v3dot(up, t)));
      if (!cm__shares(2, S->n, upp, a))
        return 0;
      if (a[0] < 0 || a[1] < 0) {
        cm__drop_support(S, a[0] < a[1] ? 0 : 1);
        continue;
      }
      int rs = cm__roll2(P, &p, r, S);
      if (rs < 0)
        return 0;
      if (rs == 2) { /* bottom of the circle: rests on two */
        for (int s = 0; s < 2; s++)
          S->n[s] = cm__sup_normal(P, S->id[s], p);
        if (!cm__shares(2, S->n, up, S->a))
          return 0;
        *pos = p;
        return cm__rest_ok(P, p, r, S, strict);
      }
      continue;
    }
    /* dim supports: stable if e_z is inside their cone */
    if (!cm__shares(S->ns, S->n, cm__v3make(0, 0, 1), S->a))
      return 0;
    int worst = 0;
    for (int s = 1; s < S->ns; s++)
      if (S->a[s] < S->a[worst])
        worst = s;
    if (S->a[worst] >= 0) {
      *pos = p;
      return cm__rest_ok(P, p, r, S, strict);
    }
    cm__drop_support(S, worst);
  }
  return 0;
}

/* ---- setup ------------------------------------------------------------------
 */

static int cm__pile_setup(cm__pile_t *P) {
  const cm_pile_options_t *o = P->o;
  int d3 = o->dim == 3;
  double rf = o->radius; /* floor grain radius */
  int ncol;
  if (o->width > 0)
    ncol = (int)floor(o->width / (2 * rf));
  else
    ncol = d3 ? (int)lround(0.95 * cbrt((double)o->count))
              : (int)lround(sqrt((double)o->count));
  if (ncol < 2)
    ncol = 2;
  P->W = 2 * rf * ncol;
  P->nfloor = d3 ? ncol * ncol : ncol;
  size_t cap = (size_t)P->nfloor + (size_t)o->count;
  P->c = cm__malloc(P->ctx, cap, sizeof *P->c);
  P->r = cm__malloc(P->ctx, cap, sizeof *P->r);
  P->next = cm__malloc(P->ctx, cap, sizeof *P->next);
  P->sup = cm__malloc(P->ctx, (size_t)o->count, sizeof *P->sup);
  P->rmax = fmax(rf, o->radius * (1 + o->polydispersity));
  P->h = 2 * P->rmax;
  P->ncx = (int)ceil(P->W / P->h);
  P->ncy = d3 ? P->ncx : 1;
  P->top = cm__calloc(P->ctx, (size_t)P->ncx * P->ncy, sizeof *P->top);
  if (!P->c || !P->r || !P->next || !P->sup || !P->top)
    return CM_NOMEM;
  /* walls: inward normals; the flat floor plane is last */
  P->nwall = 0;
  if (o->walls) {
    P->wall_p[P->nwall] = cm__v3make(0, 0, 0);
    P->wall_n[P->nwall++] = cm__v3make(1, 0, 0);
    P->wall_p[P->nwall] = cm__v3make(P->W, 0, 0);
    P->wall_n[P->nwall++] = cm__v3make(-1, 0, 0);
    if (d3) {
      P->wall_p[P->nwall] = cm__v3make(0, 0, 0);
      P->wall_n[P->nwall++] = cm__v3make(0, 1, 0);
      P->wall_p[P->nwall] = cm__v3make(0, P->W, 0);
      P->wall_n[P->nwall++] = cm__v3make(0, -1, 0);
    }
  }
  P->wall_p[P->nwall] = cm__v3make(0, 0, 0);
  P->wall_n[P->nwall++] = cm__v3make(0, 0, 1);
  /* the rough floor: touching fixed grains */
  for (int f = 0; f < P->nfloor; f++) {
    int ix = f % ncol, iy = f / ncol;
    /* heights jittered by +-0.25 rf: no symmetric four-grain pockets */
    double jz = 0.25 * rf *
                cm__hash_uniform(o->seed ^ 0x2545f4914f6cdd1dULL, (uint64_t)f);
    P->c[f] =
        cm__v3make(rf * (2 * ix + 1), d3 ? rf * (2 * iy + 1) : 0, rf + jz);
    P->r[f] = rf;
    P->nobj = f + 1;
    int st = cm__grid_put(P, f);
    if (st)
      return st;
  }
  return CM_OK;
}

static void cm__pile_free(cm__pile_t *P) {
  free(P->c);
  free(P->r);
  free(P->next);
  free(P->sup);
  free(P->top);
  free(P->head);
}

/* ---- deposition
 * ------------------------------------------------------------------ */

static int cm__pile_deposit(cm__pile_t *P) {
  const cm_pile_options_t *o = P->o;
  uint64_t seed = o->seed;
  int d3 = o->dim == 3;
  for (int j = 0; j < o->count; j++) {
    int obj = P->nfloor + j;
    int placed = 0;
    /* 4 radius draws x 8 drops that must rest strictly (no wedge); then
     * up to 1000 drops of the first draw that may rest wedged */
    for (int t = 0; t < 32 + 1000 && !placed; t++) {
      int draw = t < 32 ? t / 8 : 0, strict = t < 32;
      double u = draw ? cm__hash_uniform(seed ^ 0x9fb21c651e98df25ULL,
                                         64 * (uint64_t)j + (uint64_t)draw)
                      : cm__hash_uniform(seed, 4 * (uint64_t)j);
      double r = o->radius * (1 + o->polydispersity * u);
      P->r[obj] = r;
      uint64_t key = ((uint64_t)j << 12 | (uint64_t)t) * 4;
      uint64_t sx = seed ^ 0xa0761d6478bd642fULL;
      double ux = 0.5 * (cm__hash_uniform(sx, key + 1) + 1);
      double uy = 0.5 * (cm__hash_uniform(sx, key + 2) + 1);
      double x = r + ux * (P->W - 2 * r), y = d3 ? r + uy * (P->W - 2 * r) : 0;
      cm__v3 pos;
      placed = cm__deposit(P, obj, x, y, &P->sup[j], key + 3, strict, &pos);
      if (placed)
        P->c[obj] = pos;
    }
    if (!placed)
      return CM__ERR(P->ctx, CM_NUMERIC, "count",
                     "pile: particle %d found no resting place in 1032 drops "
                     "(try another --seed or a wider box)",
                     j);
    P->nobj = obj + 1;
    int st = cm__grid_put(P, obj);
    if (st)
      return st;
  }
  return CM_OK;
}

/* ---- loads, top-down
 * ---------------------------------------------------------------- */

/* force[j * CM__MAXSUP + s]: normal force of support s of particle j (N).
 * In reverse deposition order, particle j's load is L_j = m_j g e_z + the
 * forces f n that the particles resting on it press onto it. When L_j is
 * inside the cone of its support normals, sum_s f_s n_s = L_j is solved
 * exactly (frictionless equilibrium, f_s > 0). Otherwise only the vertical
 * component is carried, f_s = a_s L_j.z (sum_s f_s n_s = L_j.z e_z; in a
 * real pile friction takes the rest). *nexact counts the first kind. */
static int cm__pile_loads(const cm__pile_t *P, const double *mass, cm__v3 *L,
                          double *force, int *nexact) {
  int N = P->o->count;
  *nexact = 0;
  for (int j = 0; j < N; j++)
    L[j] = cm__v3make(0, 0, mass[j] * P->o->gravity);
  for (int j = N - 1; j >= 0; j--) {
    const cm__sup_t *S = &P->sup[j];
    double *f = force + (size_t)j * CM__MAXSUP;
    if (!(L[j].z > 0))
      return CM__ERR(P->ctx, CM_INTERNAL, "seed",
                     "pile: particle %d carries a load of %g N (a bug: "
                     "please report the options)",
                     j, L[j].z);
    /* ---- the whole load, if the supports can take it ---- */
    double b[CM__MAXSUP], ln = cm__v3norm(L[j]);
    int exact = cm__shares(S->ns, S->n, L[j], b);
    cm__v3 res = L[j];
    for (int s = 0; exact && s < S->ns; s++) {
      exact = b[s] > 1e-9 * ln;
      res = cm__v3sub(res, cm__v3scale(S->n[s], b[s]));
    }
    exact = exact && cm__v3norm(res) <= 1e-12 * ln;
    /* ---- else its vertical component ---- */
    for (int s = 0; s < S->ns; s++)
      f[s] = exact ? b[s] : S->a[s] * L[j].z;
    *nexact += exact;
    for (int s = 0; s < S->ns; s++) {
      int q = S->id[s] - P->nfloor;
      if (S->id[s] >= 0 && q >= 0)
        L[q] = cm__v3add(L[q], cm__v3scale(S->n[s], f[s]));
    }
  }
  return CM_OK;
}

/* ---- the scene
 * ------------------------------------------------------------------ */

static cm__v3 cm__pile_out(int dim, cm__v3 v) {
  return dim == 2 ? cm__v3make(v.x, v.z, 0) : v;
}

static int cm__pile_scene(cm__pile_t *P, const double *mass,
                          const double *force, int nexact, cm_scene_t **out,
                          double **forces_out) {
  const cm_pile_options_t *o = P->o;
  cm_context_t *ctx = P->ctx;
  int N = o->count, st = CM_OK;
  cm_scene_t *s = cm_scene_create(o->dim);
  double *fo = NULL;
  size_t nc = 0;
  for (int j = 0; j < N; j++)
    nc += (size_t)P->sup[j].ns;
  if (forces_out)
    fo = cm__malloc(ctx, nc, sizeof *fo);
  if (!s || (forces_out && !fo)) {
    cm_scene_destroy(&s);
    free(fo);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  for (int f = 0; f < P->nfloor && st >= 0; f++)
    st = cm__gen_fixed(ctx, s, cm__pile_out(o->dim, P->c[f]), NULL);
  for (int j = 0; j < N && st >= 0; j++) {
    double r = P->r[P->nfloor + j], I = 0.4 * mass[j] * r * r;
    double Iv[3] = {I, I, I};
    st = cm__gen_body(ctx, s, mass[j], Iv,
                      cm__pile_out(o->dim, P->c[P->nfloor + j]), NULL);
  }
  size_t c = 0;
  for (int j = 0; j < N && st >= 0; j++) {
    const cm__sup_t *S = &P->sup[j];
    int obj = P->nfloor + j;
    double r = P->r[obj];
    for (int k = 0; k < S->ns && st >= 0; k++, c++) {
      double f = force[(size_t)j * CM__MAXSUP + k], kc = o->k;
      int id = S->id[k];
      if (o->young > 0)
        cm_hertz_overlap(f, o->young, o->poisson, r, id >= 0 ? P->r[id] : 0,
                         &kc);
      cm__v3 pt = cm__v3sub(P->c[obj], cm__v3scale(S->n[k], r));
      int b = id >= 0 ? id : CM_WORLD;
      st = cm__gen_contact(ctx, s, obj, b, cm__pile_out(o->dim, pt),
                           cm__pile_out(o->dim, S->n[k]), kc, NULL);
      if (fo)
        fo[c] = f;
    }
  }
  if (st >= 0) {
    double htop = 0;
    int wedged = 0;
    for (int i = 0; i < P->nobj; i++)
      htop = fmax(htop, P->c[i].z + P->r[i]);
    for (int j = 0; j < N; j++)
      wedged += P->sup[j].wedged;
    char meta[768];
    snprintf(meta, sizeof meta,
             "{\"generator\": \"pile\", \"dim\": %d, \"count\": %d, "
             "\"seed\": %llu, \"radius\": %.15g, \"polydispersity\": %.15g, "
             "\"density\": %.15g, \"gravity\": %.15g, \"width\": %.15g, "
             "\"height\": %.15g, \"floor_grains\": %d, \"wedged\": %d, "
             "\"exact_balance\": %d, "
             "\"walls\": %s, "
             "\"stiffness\": \"%s\", \"k\": %.15g, \"young\": %.15g, "
             "\"poisson\": %.15g}",
             o->dim, N, (unsigned long long)o->seed, o->radius,
             o->polydispersity, o->density, o->gravity, P->W, htop, P->nfloor,
             wedged, nexact, o->walls ? "true" : "false",
             o->young > 0 ? "hertz" : "linear", o->young > 0 ? 0 : o->k,
             o->young, o->poisson);
    st = cm__gen_meta(ctx, s, meta);
  }
  if (st < 0) {
    cm_scene_destroy(&s);
    free(fo);
    return st;
  }
  *out = s;
  if (forces_out)
    *forces_out = fo;
  return CM_OK;
}

/* ---- driver
 * ------------------------------------------------------------------ */

int cm_generate_pile_forces(cm_context_t *ctx, const cm_pile_options_t *o,
                            cm_scene_t **out, double **forces_out) {
  *out = NULL;
  if (forces_out)
    *forces_out = NULL;
  int st = cm__pile_check(ctx, o);
  if (st)
    return st;
  cm__pile_t P;
  memset(&P, 0, sizeof P);
  P.ctx = ctx;
  P.o = o;
  P.dim = o->dim;
  double *mass = NULL, *force = NULL;
  cm__v3 *V = NULL;
  int nexact = 0;
  st = cm__pile_setup(&P);
  if (!st)
    st = cm__pile_deposit(&P);
  if (!st) {
    size_t N = (size_t)o->count;
    mass = cm__malloc(ctx, N, sizeof *mass);
    V = cm__malloc(ctx, N, sizeof *V);
    force = cm__calloc(ctx, N * CM__MAXSUP, sizeof *force);
    if (!mass || !V || !force)
      st = CM_NOMEM;
  }
  if (!st) {
    for (int j = 0; j < o->count; j++) {
      double r = P.r[P.nfloor + j];
      mass[j] = o->density * 4.0 / 3.0 * M_PI * r * r * r;
    }
    st = cm__pile_loads(&P, mass, V, force, &nexact);
    if (!st)
      st = cm__pile_scene(&P, mass, force, nexact, out, forces_out);
  }
  if (st == CM_NOMEM && !ctx->status)
    CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (pile of %d)", o->count);
  free(mass);
  free(V);
  free(force);
  cm__pile_free(&P);
  return st;
}

int cm_generate_pile(cm_context_t *ctx, const cm_pile_options_t *o,
                     cm_scene_t **out) {
  return cm_generate_pile_forces(ctx, o, out, NULL);
}
