/* fleet.c: robot fleets on a warehouse floor: quadrupeds and wheeled bases,
 * some carrying boxes, each robot its own component, with the static
 * preload of every contact. The models (masses, sizes, stiffnesses) are
 * documented in docs/generators.md. Not for articulated dynamics: joints are
 * stiff penalty bushings, i.e. three orthogonal contacts at a point. */
#include "generate/gen.h"

#include <stdio.h>
#include <stdlib.h>

void cm_fleet_options_init(cm_fleet_options_t *o) {
  o->count = 8;
  o->seed = 1;
  o->wheeled_fraction = 0.5;
  o->payload_fraction = 0.3;
  o->per_row = 0;
  o->spacing = 1.5;
  o->gravity = 9.81;
}

/* ---- the robot models (SI) ------------------------------------------------
 */

/* Quadruped, 12.7 kg: a 5.2 kg trunk and four 1.875 kg legs. */
#define Q_TRUNK_M 5.2
#define Q_TRUNK_L 0.40, 0.20, 0.12 /* box Lx, Ly, Lz */
#define Q_LEG_M 1.875
#define Q_LEG_LEN 0.30 /* hip to foot; hips at the trunk COM height */
#define Q_LEG_R 0.025  /* leg radius for the axial inertia */
#define Q_HIP_X 0.18   /* hip offsets from the trunk COM */
#define Q_HIP_Y 0.13
#define Q_HIP_K 2e6  /* hip bushing, per axis, N/m */
#define Q_FOOT_K 1e5 /* rubber foot on concrete, N/m */
#define Q_BOX_M0 1.0 /* payload mass range, kg */
#define Q_BOX_M1 5.0
#define Q_BOX_L 0.30, 0.18, 0.15

/* Wheeled base, 46 kg: a 35.6 kg chassis and four 2.6 kg wheels. */
#define W_CHASSIS_M 35.6
#define W_CHASSIS_L 0.60, 0.50, 0.20
#define W_WHEEL_M 2.6
#define W_WHEEL_R 0.10
#define W_WHEEL_W 0.05
#define W_AXLE_X 0.22 /* wheel centres from the chassis COM */
#define W_AXLE_Y 0.29
#define W_HUB 0.03   /* the two axle bushings at +-W_HUB along y */
#define W_AXLE_K 5e6 /* axle bushing, per axis, N/m */
#define W_TYRE_K 2e5 /* tyre on concrete, N/m */
#define W_BOX_M0 5.0
#define W_BOX_M1 30.0
#define W_BOX_L 0.40, 0.30, 0.30

#define BOX_CORNER_K 5e5 /* box corner on the robot's deck, N/m */

/* ---- check ------------------------------------------------------------------
 */

static int cm__fleet_check(cm_context_t *ctx, const cm_fleet_options_t *o) {
  if (o->count < 1)
    return CM__OPT(ctx, "count",
                   "count: %d; a fleet needs at least 1 robot (try --count "
                   "8)",
                   o->count);
  if ((double)o->count * 28.0 > CM__GEN_MAX_ITEMS)
    return CM__ERR(ctx, CM_LIMIT, "count",
                   "count: %d robots is too many (contacts must stay below "
                   "2^31)",
                   o->count);
  if (!(o->wheeled_fraction >= 0 && o->wheeled_fraction <= 1))
    return CM__OPT(ctx, "wheeled", "wheeled fraction %g is not in [0, 1]",
                   o->wheeled_fraction);
  if (!(o->payload_fraction >= 0 && o->payload_fraction <= 1))
    return CM__OPT(ctx, "payload", "payload fraction %g is not in [0, 1]",
                   o->payload_fraction);
  if (o->per_row < 0)
    return CM__OPT(ctx, "per-row", "per-row: %d must be >= 0 (0 = auto)",
                   o->per_row);
  if (!(o->spacing >= 0.8) || !isfinite(o->spacing))
    return CM__OPT(ctx, "spacing",
                   "spacing: %g m is too small; robots would overlap (use "
                   ">= 0.8)",
                   o->spacing);
  if (!(o->gravity >= 0) || !isfinite(o->gravity))
    return CM__OPT(ctx, "gravity", "gravity: %g must be >= 0 (m/s^2)",
                   o->gravity);
  return CM_OK;
}

/* ---- building blocks
 * ---------------------------------------------------------- */

typedef struct {
  cm_context_t *ctx;
  cm_scene_t *s;
  cm__darr f; /* preloads, one per contact */
  double g;   /* gravity */
  int named;  /* give bodies names */
} cm__fleet_t;

static void cm__box_inertia(double m, double lx, double ly, double lz,
                            double I[3]) {
  I[0] = m * (ly * ly + lz * lz) / 12.0;
  I[1] = m * (lx * lx + lz * lz) / 12.0;
  I[2] = m * (lx * lx + ly * ly) / 12.0;
}

static int cm__fl_body(cm__fleet_t *F, double m, const double I[3], cm__v3 p,
                       int robot, const char *part, int j) {
  char name[64];
  if (j >= 0)
    snprintf(name, sizeof name, "r%d.%s%d", robot, part, j);
  else
    snprintf(name, sizeof name, "r%d.%s", robot, part);
  return cm__gen_body(F->ctx, F->s, m, I, p, F->named ? name : NULL);
}

/* A contact named by `name` (a printf format with the robot and part
 * index) when the fleet is named. */
static int cm__fl_contact(cm__fleet_t *F, int a, int b, cm__v3 p, cm__v3 n,
                          double k, double preload, const char *name) {
  int st = cm__gen_contact(F->ctx, F->s, a, b, p, n, k, F->named ? name : NULL);
  return st < 0 ? st : cm__darr_push(F->ctx, &F->f, preload);
}

/* Three orthogonal contacts at p joining a (carried) and b (carrier),
 * named "<name>.x", ".y", ".z" by their axis; the vertical one carries
 * `up_load` newtons. */
static int cm__fl_bushing(cm__fleet_t *F, int a, int b, cm__v3 p, double k,
                          double up_load, const char *name) {
  static const char axis[3] = {'x', 'y', 'z'};
  int st = CM_OK;
  for (int d = 0; d < 3 && st >= 0; d++) {
    char nm[80];
    snprintf(nm, sizeof nm, "%s.%c", name, axis[d]);
    st = cm__fl_contact(F, a, b, p, cm__v3make(d == 0, d == 1, d == 2), k,
                        d == 2 ? up_load : 0, nm);
  }
  return st;
}

/* A box of mass m and size L resting by its four bottom corners on the deck
 * of body `on` at height z, centred at (x, y). */
static int cm__fl_box(cm__fleet_t *F, int robot, int on, double x, double y,
                      double z, double m, const double L[3]) {
  double I[3];
  cm__box_inertia(m, L[0], L[1], L[2], I);
  int box =
      cm__fl_body(F, m, I, cm__v3make(x, y, z + 0.5 * L[2]), robot, "box", -1);
  for (int c = 0; c < 4 && box >= 0; c++) {
    cm__v3 p = cm__v3make(x + ((c & 1) ? 0.5 : -0.5) * L[0],
                          y + ((c & 2) ? 0.5 : -0.5) * L[1], z);
    char nm[64];
    snprintf(nm, sizeof nm, "r%d.box.corner%d", robot, c);
    int st = cm__fl_contact(F, box, on, p, cm__v3make(0, 0, 1), BOX_CORNER_K,
                            0.25 * m * F->g, nm);
    if (st < 0)
      return st;
  }
  return box;
}

/* ---- the two robots
 * ------------------------------------------------------------- */

static int cm__fl_quadruped(cm__fleet_t *F, int r, double x, double y,
                            double box_m) {
  static const double TL[3] = {Q_TRUNK_L}, BL[3] = {Q_BOX_L};
  double I[3], Il[3];
  double zt = Q_LEG_LEN; /* trunk COM height = hip height */
  cm__box_inertia(Q_TRUNK_M, TL[0], TL[1], TL[2], I);
  int trunk =
      cm__fl_body(F, Q_TRUNK_M, I, cm__v3make(x, y, zt), r, "trunk", -1);
  if (trunk < 0)
    return trunk;
  double carried = (Q_TRUNK_M + box_m) * F->g / 4; /* per hip, N */
  Il[0] = Il[1] = Q_LEG_M * Q_LEG_LEN * Q_LEG_LEN / 12.0;
  Il[2] = 0.5 * Q_LEG_M * Q_LEG_R * Q_LEG_R;
  for (int j = 0; j < 4; j++) {
    double hx = x + ((j & 1) ? Q_HIP_X : -Q_HIP_X);
    double hy = y + ((j & 2) ? Q_HIP_Y : -Q_HIP_Y);
    int leg = cm__fl_body(F, Q_LEG_M, Il, cm__v3make(hx, hy, 0.5 * Q_LEG_LEN),
                          r, "leg", j);
    int st = leg;
    char hip[48], foot[48];
    snprintf(hip, sizeof hip, "r%d.hip%d", r, j);
    snprintf(foot, sizeof foot, "r%d.foot%d", r, j);
    if (st >= 0)
      st = cm__fl_bushing(F, trunk, leg, cm__v3make(hx, hy, zt), Q_HIP_K,
                          carried, hip);
    if (st >= 0)
      st = cm__fl_contact(F, leg, CM_WORLD, cm__v3make(hx, hy, 0),
                          cm__v3make(0, 0, 1), Q_FOOT_K,
                          carried + Q_LEG_M * F->g, foot);
    if (st < 0)
      return st;
  }
  if (box_m > 0)
    return cm__fl_box(F, r, trunk, x, y, zt + 0.5 * TL[2], box_m, BL);
  return CM_OK;
}

static int cm__fl_wheeled(cm__fleet_t *F, int r, double x, double y,
                          double box_m) {
  static const double CL[3] = {W_CHASSIS_L}, BL[3] = {W_BOX_L};
  double I[3], Iw[3];
  double zc = 2.0 * W_WHEEL_R; /* chassis COM height */
  cm__box_inertia(W_CHASSIS_M, CL[0], CL[1], CL[2], I);
  int ch =
      cm__fl_body(F, W_CHASSIS_M, I, cm__v3make(x, y, zc), r, "chassis", -1);
  if (ch < 0)
    return ch;
  double carried = (W_CHASSIS_M + box_m) * F->g / 4; /* per wheel, N */
  double R = W_WHEEL_R, w = W_WHEEL_W;
  Iw[0] = Iw[2] = W_WHEEL_M * (3 * R * R + w * w) / 12.0; /* diameters */
  Iw[1] = 0.5 * W_WHEEL_M * R * R;                        /* axle (y) */
  for (int j = 0; j < 4; j++) {
    double wx = x + ((j & 1) ? W_AXLE_X : -W_AXLE_X);
    double wy = y + ((j & 2) ? W_AXLE_Y : -W_AXLE_Y);
    int wh =
        cm__fl_body(F, W_WHEEL_M, Iw, cm__v3make(wx, wy, R), r, "wheel", j);
    int st = wh;
    char nm[48];
    for (int e = -1; e <= 1 && st >= 0; e += 2) {
      /* axle<j>a at -y, axle<j>b at +y of the wheel's centre */
      snprintf(nm, sizeof nm, "r%d.axle%d%c", r, j, e < 0 ? 'a' : 'b');
      st = cm__fl_bushing(F, ch, wh, cm__v3make(wx, wy + e * W_HUB, R),
                          W_AXLE_K, 0.5 * carried, nm);
    }
    snprintf(nm, sizeof nm, "r%d.tyre%d", r, j);
    if (st >= 0)
      st = cm__fl_contact(F, wh, CM_WORLD, cm__v3make(wx, wy, 0),
                          cm__v3make(0, 0, 1), W_TYRE_K,
                          carried + W_WHEEL_M * F->g, nm);
    if (st < 0)
      return st;
  }
  if (box_m > 0)
    return cm__fl_box(F, r, ch, x, y, zc + 0.5 * CL[2], box_m, BL);
  return CM_OK;
}

/* ---- generate
 * ----------------------------------------------------------------- */

/* Uniform in [0, 1) from the seeded stream. */
static double cm__u01(uint64_t seed, uint64_t i) {
  return 0.5 * (cm__hash_uniform(seed, i) + 1.0);
}

int cm_generate_fleet_forces(cm_context_t *ctx, const cm_fleet_options_t *o,
                             cm_scene_t **out, double **forces_out) {
  *out = NULL;
  if (forces_out)
    *forces_out = NULL;
  int st = cm__fleet_check(ctx, o);
  if (st)
    return st;
  cm__fleet_t F = {
      ctx, cm_scene_create(3), {0}, o->gravity, o->count <= 200000};
  if (!F.s)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  int per_row = o->per_row ? o->per_row : (int)ceil(sqrt((double)o->count));
  int nwheeled = 0, nbox = 0;
  for (int r = 0; r < o->count && st >= 0; r++) {
    double x = (r % per_row) * o->spacing, y = (r / per_row) * o->spacing;
    int wheeled = cm__u01(o->seed, 3 * (uint64_t)r) < o->wheeled_fraction;
    int carries = cm__u01(o->seed, 3 * (uint64_t)r + 1) < o->payload_fraction;
    double u = cm__u01(o->seed, 3 * (uint64_t)r + 2);
    double box_m = !carries  ? 0
                   : wheeled ? W_BOX_M0 + u * (W_BOX_M1 - W_BOX_M0)
                             : Q_BOX_M0 + u * (Q_BOX_M1 - Q_BOX_M0);
    nwheeled += wheeled;
    nbox += carries;
    st = wheeled ? cm__fl_wheeled(&F, r, x, y, box_m)
                 : cm__fl_quadruped(&F, r, x, y, box_m);
  }
  if (st >= 0) {
    char meta[512];
    snprintf(meta, sizeof meta,
             "{\"generator\": \"fleet\", \"count\": %d, \"seed\": %llu, "
             "\"wheeled\": %d, \"legged\": %d, \"payloads\": %d, "
             "\"spacing\": %.15g, \"gravity\": %.15g}",
             o->count, (unsigned long long)o->seed, nwheeled,
             o->count - nwheeled, nbox, o->spacing, o->gravity);
    st = cm__gen_meta(ctx, F.s, meta);
  }
  if (st < 0) {
    cm_scene_destroy(&F.s);
    free(F.f.v);
    return st;
  }
  if (forces_out)
    *forces_out = F.f.v;
  else
    free(F.f.v);
  *out = F.s;
  return CM_OK;
}

int cm_generate_fleet(cm_context_t *ctx, const cm_fleet_options_t *o,
                      cm_scene_t **out) {
  return cm_generate_fleet_forces(ctx, o, out, NULL);
}
