/* crystal.c: lattices of equal spheres on a floor (square and hexagonal in
 * 2D, simple cubic and FCC in 3D), every nearest-neighbour pair in contact
 * with the same small overlap. Not for disordered packings (pile.c). */
#include "generate/gen.h"

#include <stdio.h>
#include <stdlib.h>

void cm_crystal_options_init(cm_crystal_options_t *o) {
  o->lattice = CM_LATTICE_FCC;
  o->nx = o->ny = o->nz = 4;
  o->radius = 0.005;
  o->density = 7800.0;
  o->k = 1e6;
  o->overlap = 1e-4;
}

/* ---- check ------------------------------------------------------------------
 */

static int cm__crystal_check(cm_context_t *ctx, const cm_crystal_options_t *o) {
  if (o->lattice < CM_LATTICE_SQUARE || o->lattice > CM_LATTICE_FCC)
    return CM__OPT(ctx, "lattice", "lattice: %d is not square, hex, sc or fcc",
                   o->lattice);
  int d3 = o->lattice >= CM_LATTICE_SC;
  if (o->nx < 1 || o->ny < 1 || (d3 && o->nz < 1))
    return CM__OPT(ctx, "count",
                   "sites per axis (%d, %d, %d) must be >= 1 (try --n 4)",
                   o->nx, o->ny, d3 ? o->nz : 1);
  double sites = (double)o->nx * o->ny * (d3 ? o->nz : 1);
  if (sites * 6.0 > CM__GEN_MAX_ITEMS)
    return CM__ERR(ctx, CM_LIMIT, "count",
                   "%.0f sites is too many (contacts must stay below 2^31)",
                   sites);
  if (!(o->radius > 0) || !isfinite(o->radius))
    return CM__OPT(ctx, "radius", "radius: %g is not a positive length (m)",
                   o->radius);
  if (!(o->density > 0) || !isfinite(o->density))
    return CM__OPT(ctx, "density", "density: %g is not positive (kg/m^3)",
                   o->density);
  if (!(o->k > 0) || !isfinite(o->k))
    return CM__OPT(ctx, "k", "k: %g is not a positive stiffness (N/m)", o->k);
  if (!(o->overlap >= 0 && o->overlap < 0.1))
    return CM__OPT(ctx, "overlap",
                   "overlap: %g must be in [0, 0.1) (a fraction of the "
                   "diameter)",
                   o->overlap);
  return CM_OK;
}

/* ---- generate
 * ----------------------------------------------------------------- */

typedef struct {
  cm_context_t *ctx;
  cm_scene_t *s;
  const cm_crystal_options_t *o;
  int *site;      /* body of each lattice index, -1 if none */
  int nx, ny, nz; /* index ranges */
  double d;       /* centre distance of neighbours, m */
  double z0;      /* centre height of the bottom layer, m */
  double m, I;    /* sphere mass, moment of inertia */
} cm__xtal_t;

static int cm__xtal_at(const cm__xtal_t *x, int i, int j, int k) {
  if (i < 0 || j < 0 || k < 0 || i >= x->nx || j >= x->ny || k >= x->nz)
    return -1;
  return x->site[((size_t)k * x->ny + j) * x->nx + i];
}

/* Position of lattice index (i, j, k) in the scene's axes (2D: y up). */
static cm__v3 cm__xtal_pos(const cm__xtal_t *x, int i, int j, int k) {
  double d = x->d;
  switch (x->o->lattice) {
  case CM_LATTICE_SQUARE:
    return cm__v3make(i * d, x->z0 + j * d, 0);
  case CM_LATTICE_HEX:
    return cm__v3make(i * d + (j & 1 ? 0.5 * d : 0),
                      x->z0 + j * d * sqrt(3.0) / 2, 0);
  case CM_LATTICE_SC:
    return cm__v3make(i * d, j * d, x->z0 + k * d);
  default: { /* FCC: index units of a/2 with a = d sqrt 2 */
    double h = d / sqrt(2.0);
    return cm__v3make(i * h, j * h, x->z0 + k * h);
  }
  }
}

static int cm__xtal_link(cm__xtal_t *x, int a, int b) {
  const cm_body_t *A = &x->s->bodies[a], *B = &x->s->bodies[b];
  cm__v3 pa = cm__v3make(A->position[0], A->position[1], A->position[2]);
  cm__v3 pb = cm__v3make(B->position[0], B->position[1], B->position[2]);
  cm__v3 n = cm__v3sub(pa, pb);
  n = cm__v3scale(n, 1.0 / cm__v3norm(n));
  cm__v3 mid = cm__v3scale(cm__v3add(pa, pb), 0.5);
  return cm__gen_contact(x->ctx, x->s, a, b, mid, n, x->o->k, NULL);
}

static int cm__xtal_floor(cm__xtal_t *x, int a) {
  const cm_body_t *A = &x->s->bodies[a];
  int d3 = x->s->dim == 3;
  cm__v3 up = d3 ? cm__v3make(0, 0, 1) : cm__v3make(0, 1, 0);
  cm__v3 p = d3 ? cm__v3make(A->position[0], A->position[1], 0)
                : cm__v3make(A->position[0], 0, 0);
  return cm__gen_contact(x->ctx, x->s, a, CM_WORLD, p, up, x->o->k, NULL);
}

/* Neighbour offsets with a positive leading component (each pair once). */
static const int cm__sq_nb[][3] = {{1, 0, 0}, {0, 1, 0}};
static const int cm__sc_nb[][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
static const int cm__fcc_nb[][3] = {{1, 1, 0},  {1, -1, 0}, {1, 0, 1},
                                    {1, 0, -1}, {0, 1, 1},  {0, 1, -1}};

static int cm__xtal_contacts(cm__xtal_t *x, int i, int j, int k) {
  int a = cm__xtal_at(x, i, j, k), st = CM_OK;
  int lat = x->o->lattice;
  if ((lat >= CM_LATTICE_SC ? k : j) == 0)
    st = cm__xtal_floor(x, a);
  if (lat == CM_LATTICE_HEX) { /* right, and the two above */
    int up0 = j & 1 ? i : i - 1;
    int nb[3][2] = {{i + 1, j}, {up0, j + 1}, {up0 + 1, j + 1}};
    for (int t = 0; t < 3 && st >= 0; t++) {
      int b = cm__xtal_at(x, nb[t][0], nb[t][1], 0);
      if (b >= 0)
        st = cm__xtal_link(x, b, a);
    }
    return st;
  }
  const int(*nb)[3] = lat == CM_LATTICE_SQUARE ? cm__sq_nb
                      : lat == CM_LATTICE_SC   ? cm__sc_nb
                                               : cm__fcc_nb;
  int nn = lat == CM_LATTICE_SQUARE ? 2 : lat == CM_LATTICE_SC ? 3 : 6;
  for (int t = 0; t < nn && st >= 0; t++) {
    int b = cm__xtal_at(x, i + nb[t][0], j + nb[t][1], k + nb[t][2]);
    if (b >= 0)
      st = cm__xtal_link(x, b, a);
  }
  return st;
}

int cm_generate_crystal(cm_context_t *ctx, const cm_crystal_options_t *o,
                        cm_scene_t **out) {
  *out = NULL;
  int st = cm__crystal_check(ctx, o);
  if (st)
    return st;
  int d3 = o->lattice >= CM_LATTICE_SC;
  cm__xtal_t x = {ctx, NULL, o, NULL, o->nx, o->ny, d3 ? o->nz : 1, 0, 0, 0, 0};
  double r = o->radius, delta = o->overlap * 2.0 * r;
  x.d = 2.0 * r - delta;
  x.z0 = r - delta;
  x.m = o->density * 4.0 / 3.0 * M_PI * r * r * r;
  x.I = 0.4 * x.m * r * r;
  size_t nsite = (size_t)x.nx * x.ny * x.nz;
  x.s = cm_scene_create(d3 ? 3 : 2);
  x.site = cm__malloc(ctx, nsite, sizeof *x.site);
  if (!x.s || !x.site) {
    cm_scene_destroy(&x.s);
    free(x.site);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  /* ---- sites ---- */
  int named = nsite <= 100000;
  double I[3] = {x.I, x.I, x.I};
  char name[64];
  for (int k = 0; k < x.nz && st >= 0; k++)
    for (int j = 0; j < x.ny && st >= 0; j++)
      for (int i = 0; i < x.nx && st >= 0; i++) {
        size_t id = ((size_t)k * x.ny + j) * x.nx + i;
        x.site[id] = -1;
        if (o->lattice == CM_LATTICE_FCC && (i + j + k) % 2)
          continue;
        if (d3)
          snprintf(name, sizeof name, "p%d_%d_%d", i, j, k);
        else
          snprintf(name, sizeof name, "p%d_%d", i, j);
        st = x.site[id] = cm__gen_body(
            ctx, x.s, x.m, I, cm__xtal_pos(&x, i, j, k), named ? name : NULL);
      }
  /* ---- contacts ---- */
  for (int k = 0; k < x.nz && st >= 0; k++)
    for (int j = 0; j < x.ny && st >= 0; j++)
      for (int i = 0; i < x.nx && st >= 0; i++)
        if (cm__xtal_at(&x, i, j, k) >= 0)
          st = cm__xtal_contacts(&x, i, j, k);
  if (st >= 0) {
    static const char *lname[] = {"square", "hex", "sc", "fcc"};
    char meta[512];
    snprintf(meta, sizeof meta,
             "{\"generator\": \"crystal\", \"lattice\": \"%s\", \"n\": [%d, "
             "%d, %d], \"radius\": %.15g, \"mass\": %.15g, \"k\": %.15g, "
             "\"overlap\": %.15g}",
             lname[o->lattice], x.nx, x.ny, x.nz, r, x.m, o->k, o->overlap);
    st = cm__gen_meta(ctx, x.s, meta);
  }
  free(x.site);
  if (st < 0) {
    cm_scene_destroy(&x.s);
    return st;
  }
  *out = x.s;
  return CM_OK;
}
