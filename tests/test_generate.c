/* test_generate.c: the scene generators against independent checks: scene
 * validation, geometry recomputed from the bodies (radii from masses,
 * touching distances, no overlaps by brute force), static equilibrium of the
 * returned preloads, Hertz stiffness against a finite-difference derivative,
 * reproducibility to the byte, and clear errors for bad options. */
#include "cmodes.h"
#include "cmtest.h"

#include <stdint.h>

/* ---- helpers
 * ------------------------------------------------------------------ */

static double gt_up(const cm_scene_t *s, const double *v) {
  return s->dim == 2 ? v[1] : v[2];
}

/* Radius of a pile particle from its mass and the density. */
static double gt_radius(double m, double rho) {
  return cbrt(3.0 * m / (4.0 * M_PI * rho));
}

/* Union-find over bodies plus the world (index nbodies). */
static int gt_find(int *p, int i) {
  while (p[i] != i)
    i = p[i] = p[p[i]];
  return i;
}

/* Components of the contact graph; with_world joins the world and fixed
 * bodies into one node (the ground). */
static int gt_components(const cm_scene_t *s, int with_world) {
  int n = s->nbodies + 1, *p = malloc(sizeof(int) * (size_t)n), comps = 0;
  for (int i = 0; i < n; i++)
    p[i] = i;
  for (int c = 0; c < s->ncontacts; c++) {
    int a = s->contacts[c].a, b = s->contacts[c].b;
    int na = s->bodies[a].fixed ? s->nbodies : a;
    int nb = b == CM_WORLD || s->bodies[b].fixed ? s->nbodies : b;
    if (!with_world && (na == s->nbodies || nb == s->nbodies))
      continue;
    p[gt_find(p, na)] = gt_find(p, nb);
  }
  for (int i = 0; i < s->nbodies; i++)
    if (!s->bodies[i].fixed && gt_find(p, i) == i)
      comps++;
  if (with_world) {
    comps = 0;
    for (int i = 0; i < s->nbodies; i++)
      if (!s->bodies[i].fixed && gt_find(p, i) != gt_find(p, s->nbodies))
        comps++;
  }
  free(p);
  return comps;
}

/* Max over moving bodies of |sum of contact forces + weight| / weight scale
 * (vector balance, all components) for preloads f. */
static double gt_force_residual(const cm_scene_t *s, const double *f,
                                double g) {
  int d = s->dim, nb = s->nbodies;
  double *F = calloc((size_t)nb * 3, sizeof *F), worst = 0;
  double *scale = calloc((size_t)nb, sizeof *scale);
  for (int c = 0; c < s->ncontacts; c++) {
    const cm_contact_t *k = &s->contacts[c];
    for (int j = 0; j < d; j++) {
      F[3 * k->a + j] += f[c] * k->normal[j];
      if (k->b != CM_WORLD)
        F[3 * k->b + j] -= f[c] * k->normal[j];
    }
    scale[k->a] += fabs(f[c]);
    if (k->b != CM_WORLD)
      scale[k->b] += fabs(f[c]);
  }
  for (int i = 0; i < nb; i++) {
    if (s->bodies[i].fixed)
      continue;
    F[3 * i + d - 1] -= s->bodies[i].mass * g;
    double r = 0;
    for (int j = 0; j < d; j++)
      r = fmax(r, fabs(F[3 * i + j]));
    worst = fmax(worst, r / (scale[i] + s->bodies[i].mass * g));
  }
  free(F);
  free(scale);
  return worst;
}

/* ---- pile ------------------------------------------------------------------
 */

/* Geometry, supports and the top-down load balance of one pile. */
static void gt_check_pile(int dim, int count, uint64_t seed, double young,
                          int walls) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_pile_options_t o;
  cm_pile_options_init(&o);
  o.dim = dim;
  o.count = count;
  o.seed = seed;
  o.young = young;
  o.walls = walls;
  cm_scene_t *s = NULL;
  double *f = NULL;
  int st = cm_generate_pile_forces(&ctx, &o, &s, &f);
  CMT_EQ_INT(st, CM_OK);
  if (st) {
    fprintf(stderr, "%s\n", ctx.message);
    return;
  }
  CMT_EQ_INT(cm_scene_validate(&ctx, s), CM_OK);
  int nfix = 0;
  for (int i = 0; i < s->nbodies; i++)
    nfix += s->bodies[i].fixed;
  CMT_EQ_INT(s->nbodies - nfix, count);
  /* radii: particles from their masses, floor grains = mean radius */
  int nb = s->nbodies;
  double *r = malloc(sizeof(double) * (size_t)nb);
  for (int i = 0; i < nb; i++)
    r[i] =
        s->bodies[i].fixed ? o.radius : gt_radius(s->bodies[i].mass, o.density);
  /* every contact: touching, normal from b to a, point on a's surface */
  double worst_gap = 0;
  for (int c = 0; c < s->ncontacts; c++) {
    const cm_contact_t *k = &s->contacts[c];
    const double *pa = s->bodies[k->a].position;
    CMT_TRUE(!s->bodies[k->a].fixed);
    CMT_TRUE(f[c] > 0);
    if (k->b == CM_WORLD) {
      /* a wall or the floor plane: distance to the plane along n = r */
      double along = 0;
      for (int j = 0; j < dim; j++)
        along += (pa[j] - k->point[j]) * k->normal[j];
      worst_gap = fmax(worst_gap, fabs(along - r[k->a]) / r[k->a]);
      continue;
    }
    const double *pb = s->bodies[k->b].position;
    double dist = 0, dot = 0;
    for (int j = 0; j < dim; j++)
      dist += (pa[j] - pb[j]) * (pa[j] - pb[j]);
    dist = sqrt(dist);
    for (int j = 0; j < dim; j++)
      dot += (pa[j] - pb[j]) / dist * k->normal[j];
    worst_gap = fmax(worst_gap, fabs(dist - r[k->a] - r[k->b]) / r[k->a]);
    CMT_REL(dot, 1.0, 1e-9);
    /* the support is below the particle's centre */
    CMT_TRUE(gt_up(s, k->normal) > 0);
  }
  CMT_LE(worst_gap, 1e-9);
  /* no two bodies overlap (brute force) */
  int overlaps = 0;
  for (int i = 0; i < nb; i++)
    for (int j = i + 1; j < nb; j++) {
      double d2 = 0;
      for (int t = 0; t < dim; t++) {
        double dx = s->bodies[i].position[t] - s->bodies[j].position[t];
        d2 += dx * dx;
      }
      double R = r[i] + r[j];
      if (!(s->bodies[i].fixed && s->bodies[j].fixed) &&
          d2 < R * R * (1 - 1e-8))
        overlaps++;
    }
  CMT_EQ_INT(overlaps, 0);
  /* supports: every particle is carried by its supports with a vertical
   * net force equal to its weight plus the vertical loads from above */
  /* supports: each particle's supports carry either its whole load (weight
   * plus the forces of the particles resting on it: exact frictionless
   * equilibrium) or, where that load is outside their cone, its vertical
   * component (horizontal support resultant zero); only particles wedged
   * under an overhang may have a horizontal support resultant */
  double *sup = calloc((size_t)nb * 3, sizeof *sup);   /* sum f n as a */
  double *load = calloc((size_t)nb * 3, sizeof *load); /* sum f n as b */
  int *nsup = calloc((size_t)nb, sizeof *nsup);
  for (int c = 0; c < s->ncontacts; c++) {
    const cm_contact_t *k = &s->contacts[c];
    nsup[k->a]++;
    for (int j = 0; j < dim; j++) {
      sup[3 * k->a + j] += f[c] * k->normal[j];
      if (k->b != CM_WORLD)
        load[3 * k->b + j] += f[c] * k->normal[j];
    }
  }
  double worst = 0;
  int unsupported = 0, exact = 0, vertical = 0, other = 0;
  for (int i = 0; i < nb; i++) {
    if (s->bodies[i].fixed)
      continue;
    double *S = sup + 3 * i, *L = load + 3 * i;
    L[dim - 1] += s->bodies[i].mass * o.gravity;
    if (nsup[i] < 1 || !(S[dim - 1] > 0))
      unsupported++;
    double ln = 0, dv = 0, dh = 0, sh = 0;
    for (int j = 0; j < dim; j++) {
      ln += L[j] * L[j];
      dv = fmax(dv, fabs(S[j] - L[j]));
      if (j < dim - 1)
        sh = fmax(sh, fabs(S[j]));
    }
    ln = sqrt(ln);
    dh = fabs(S[dim - 1] - L[dim - 1]) / L[dim - 1];
    worst = fmax(worst, dh); /* the vertical balance holds for all */
    if (dv <= 1e-9 * ln)
      exact++;
    else if (sh <= 1e-9 * L[dim - 1])
      vertical++;
    else
      other++;
  }
  CMT_EQ_INT(unsupported, 0);
  CMT_LE(worst, 1e-9);
  const char *wm = s->meta_json ? strstr(s->meta_json, "\"wedged\": ") : NULL;
  const char *em =
      s->meta_json ? strstr(s->meta_json, "\"exact_balance\": ") : NULL;
  int wedged = wm ? atoi(wm + 10) : -1;
  int nexact = em ? atoi(em + 17) : -1;
  CMT_TRUE(wedged >= 0);
  CMT_EQ_INT(exact, nexact);
  CMT_LE(other, wedged);
  CMT_LE(wedged, 0.05 * count);
  CMT_LE(0.4 * count, exact); /* most are in exact equilibrium */
  printf("pile dim %d count %d: exact %d, vertical %d, other %d\n", dim, count,
         exact, vertical, other);
  /* global check: the floor and walls carry the total weight */
  double W = 0, floor_up = 0;
  for (int i = 0; i < nb; i++)
    if (!s->bodies[i].fixed)
      W += s->bodies[i].mass * o.gravity;
  for (int c = 0; c < s->ncontacts; c++) {
    int b = s->contacts[c].b;
    if (b == CM_WORLD || s->bodies[b].fixed)
      floor_up += f[c] * gt_up(s, s->contacts[c].normal);
  }
  CMT_REL(floor_up, W, 1e-9);
  /* connected: every particle reaches the ground through contacts */
  CMT_EQ_INT(gt_components(s, 1), 0);
  /* stiffness: linear, or the Hertz derivative at the overlap */
  double Es = young / (2 * (1 - o.poisson * o.poisson)), kmin = INFINITY,
         kmax = 0;
  for (int c = 0; c < s->ncontacts; c++) {
    const cm_contact_t *k = &s->contacts[c];
    double kc = k->stiffness;
    kmin = fmin(kmin, kc);
    kmax = fmax(kmax, kc);
    if (young == 0) {
      CMT_REL(kc, o.k, 0);
      continue;
    }
    double ra = r[k->a], rb = k->b == CM_WORLD ? 0 : r[k->b];
    double Rs = rb > 0 ? ra * rb / (ra + rb) : ra;
    /* overlap from F = 4/3 E* sqrt(R*) d^1.5, then dF/dd by central
     * differences of that law */
    double dlt = pow(3 * f[c] / (4 * Es * sqrt(Rs)), 2.0 / 3.0);
    double h = 1e-4 * dlt;
    double Fp = 4.0 / 3.0 * Es * sqrt(Rs) * pow(dlt + h, 1.5);
    double Fm = 4.0 / 3.0 * Es * sqrt(Rs) * pow(dlt - h, 1.5);
    CMT_REL(kc, (Fp - Fm) / (2 * h), 1e-7);
    double dk;
    CMT_REL(cm_hertz_overlap(f[c], young, o.poisson, ra, rb, &dk), dlt, 1e-12);
    CMT_REL(dk, kc, 1e-12);
  }
  if (young > 0) /* force chains: stiffness heterogeneity */
    CMT_TRUE(kmax > 1.5 * kmin);
  free(sup);
  free(load);
  free(nsup);
  free(r);
  free(f);
  cm_scene_destroy(&s);
}

CM_TEST(gen_pile_2d_linear) { gt_check_pile(2, 300, 1, 0, 1); }
CM_TEST(gen_pile_2d_hertz) { gt_check_pile(2, 300, 7, 7e10, 1); }
CM_TEST(gen_pile_3d_linear) { gt_check_pile(3, 400, 3, 0, 1); }
CM_TEST(gen_pile_3d_hertz) { gt_check_pile(3, 400, 11, 7e10, 1); }
CM_TEST(gen_pile_no_walls) {
  gt_check_pile(2, 300, 2, 7e10, 0);
  gt_check_pile(3, 500, 2, 0, 0);
}

CM_TEST(gen_pile_contacts_per_particle) {
  /* isostatic deposit: dim supports per particle except rare 2-support
   * rests at the bottom of a groove in 3D */
  cm_context_t ctx;
  cm_context_init(&ctx);
  for (int dim = 2; dim <= 3; dim++) {
    cm_pile_options_t o;
    cm_pile_options_init(&o);
    o.dim = dim;
    o.count = 2000;
    cm_scene_t *s = NULL;
    CMT_EQ_INT(cm_generate_pile(&ctx, &o, &s), CM_OK);
    if (!s)
      continue;
    CMT_LE(s->ncontacts, dim * o.count);
    CMT_LE(0.95 * dim * o.count, s->ncontacts);
    cm_scene_destroy(&s);
  }
}

CM_TEST(gen_pile_seed_bytes) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_pile_options_t o;
  cm_pile_options_init(&o);
  o.dim = 3;
  o.count = 500;
  o.seed = 42;
  o.young = 1e9;
  cm_scene_t *a = NULL, *b = NULL, *c = NULL;
  CMT_EQ_INT(cm_generate_pile(&ctx, &o, &a), CM_OK);
  CMT_EQ_INT(cm_generate_pile(&ctx, &o, &b), CM_OK);
  o.seed = 43;
  CMT_EQ_INT(cm_generate_pile(&ctx, &o, &c), CM_OK);
  char *ja = a ? cm_scene_to_json(&ctx, a) : NULL;
  char *jb = b ? cm_scene_to_json(&ctx, b) : NULL;
  char *jc = c ? cm_scene_to_json(&ctx, c) : NULL;
  CMT_TRUE(ja && jb && jc);
  if (ja && jb && jc) {
    CMT_TRUE(strcmp(ja, jb) == 0);
    CMT_TRUE(strcmp(ja, jc) != 0);
  }
  free(ja);
  free(jb);
  free(jc);
  cm_scene_destroy(&a);
  cm_scene_destroy(&b);
  cm_scene_destroy(&c);
}

CM_TEST(gen_cli_seed_bytes) {
  int code1, code2;
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s generate pile --count 300 --seed 5", CM_BINARY);
  char *a = cmt_run(cmd, &code1);
  char *b = cmt_run(cmd, &code2);
  CMT_EQ_INT(code1, 0);
  CMT_EQ_INT(code2, 0);
  CMT_TRUE(a && b && strlen(a) > 1000 && strcmp(a, b) == 0);
  CMT_CONTAINS(a, "\"generator\": \"pile\"");
  /* and the output reads back as a valid scene */
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_scene_parse_json(&ctx, a, strlen(a), "gen", &s), CM_OK);
  if (s)
    CMT_EQ_INT(s->nbodies, 300 + 17); /* 17 floor grains: round(sqrt 300) */
  cm_scene_destroy(&s);
  free(a);
  free(b);
}

/* ---- crystal
 * ------------------------------------------------------------------ */

/* Every pair of sites at the neighbour distance has exactly one contact;
 * floor contacts exactly on the bottom layer. */
static void gt_check_crystal(int lattice, int n) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_crystal_options_t o;
  cm_crystal_options_init(&o);
  o.lattice = lattice;
  o.nx = o.ny = o.nz = n;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_crystal(&ctx, &o, &s), CM_OK);
  if (!s)
    return;
  CMT_EQ_INT(cm_scene_validate(&ctx, s), CM_OK);
  int d = s->dim, nb = s->nbodies;
  double dist0 = 2 * o.radius * (1 - o.overlap);
  int pairs = 0, bottom = 0, links = 0, floors = 0;
  for (int i = 0; i < nb; i++) {
    if (fabs(gt_up(s, s->bodies[i].position) -
             (o.radius - 2 * o.radius * o.overlap)) < 1e-12)
      bottom++;
    for (int j = i + 1; j < nb; j++) {
      double d2 = 0;
      for (int t = 0; t < d; t++) {
        double dx = s->bodies[i].position[t] - s->bodies[j].position[t];
        d2 += dx * dx;
      }
      CMT_LE(dist0 * (1 - 1e-9), sqrt(d2)); /* nothing closer */
      if (fabs(sqrt(d2) - dist0) < 1e-9 * dist0)
        pairs++;
    }
  }
  for (int c = 0; c < s->ncontacts; c++) {
    if (s->contacts[c].b == CM_WORLD) {
      floors++;
      continue;
    }
    links++;
    const double *pa = s->bodies[s->contacts[c].a].position;
    const double *pb = s->bodies[s->contacts[c].b].position;
    double d2 = 0;
    for (int t = 0; t < d; t++)
      d2 += (pa[t] - pb[t]) * (pa[t] - pb[t]);
    CMT_REL(sqrt(d2), dist0, 1e-12);
  }
  CMT_EQ_INT(links, pairs);
  CMT_EQ_INT(floors, bottom);
  CMT_TRUE(bottom > 0);
  cm_scene_destroy(&s);
}

CM_TEST(gen_crystal_square) { gt_check_crystal(CM_LATTICE_SQUARE, 5); }
CM_TEST(gen_crystal_hex) { gt_check_crystal(CM_LATTICE_HEX, 5); }
CM_TEST(gen_crystal_sc) { gt_check_crystal(CM_LATTICE_SC, 4); }
CM_TEST(gen_crystal_fcc) { gt_check_crystal(CM_LATTICE_FCC, 5); }

/* ---- stack and fleet
 * ------------------------------------------------------------ */

CM_TEST(gen_stack_balance) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  for (int shape = 0; shape <= 1; shape++)
    for (int dim = 2; dim <= 3; dim++) {
      cm_stack_options_t o;
      cm_stack_options_init(&o);
      o.shape = shape;
      o.dim = dim;
      o.count = 6;
      o.towers = 3;
      cm_scene_t *s = NULL;
      double *f = NULL;
      CMT_EQ_INT(cm_generate_stack_forces(&ctx, &o, &s, &f), CM_OK);
      if (!s)
        continue;
      CMT_EQ_INT(cm_scene_validate(&ctx, s), CM_OK);
      CMT_EQ_INT(s->nbodies, 18);
      int per = shape ? 1 : (dim == 2 ? 2 : 4);
      CMT_EQ_INT(s->ncontacts, 18 * per);
      CMT_LE(gt_force_residual(s, f, o.gravity), 1e-12);
      CMT_EQ_INT(gt_components(s, 0), 3); /* towers are separate */
      free(f);
      cm_scene_destroy(&s);
    }
}

CM_TEST(gen_fleet_models) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_fleet_options_t o;
  cm_fleet_options_init(&o);
  o.count = 40;
  o.payload_fraction = 0.5;
  cm_scene_t *s = NULL;
  double *f = NULL;
  CMT_EQ_INT(cm_generate_fleet_forces(&ctx, &o, &s, &f), CM_OK);
  if (!s)
    return;
  CMT_EQ_INT(cm_scene_validate(&ctx, s), CM_OK);
  CMT_EQ_INT(gt_components(s, 0), 40); /* one component per robot */
  CMT_LE(gt_force_residual(s, f, o.gravity), 1e-12);
  /* robot masses from the bodies' names */
  int legged = 0, wheeled = 0, boxes = 0;
  for (int r = 0; r < 40; r++) {
    char nm[64];
    double m = 0;
    int is_w = 0;
    for (int i = 0; i < s->nbodies; i++) {
      const char *n = cm_scene_body_name(s, i);
      snprintf(nm, sizeof nm, "r%d.", r);
      if (!n || strncmp(n, nm, strlen(nm)))
        continue;
      if (strstr(n, ".box")) {
        boxes++;
        continue;
      }
      if (strstr(n, ".chassis"))
        is_w = 1;
      m += s->bodies[i].mass;
    }
    CMT_REL(m, is_w ? 46.0 : 12.7, 1e-12);
    is_w ? wheeled++ : legged++;
  }
  CMT_TRUE(wheeled > 5 && legged > 5 && boxes > 5);
  int trunk = cm_scene_find_body(s, "r0.trunk") >= 0
                  ? cm_scene_find_body(s, "r0.trunk")
                  : cm_scene_find_body(s, "r0.chassis");
  CMT_TRUE(trunk >= 0);
  if (trunk >= 0 && cm_scene_find_body(s, "r0.trunk") >= 0)
    CMT_REL(s->bodies[trunk].mass, 5.2, 0);
  for (int c = 0; c < s->ncontacts; c++) {
    CMT_LE(1e5, s->contacts[c].stiffness);
    CMT_LE(s->contacts[c].stiffness, 1e7);
    CMT_TRUE(f[c] >= 0);
  }
  free(f);
  cm_scene_destroy(&s);
}

CM_TEST(gen_bar_scene) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  for (int dim = 2; dim <= 3; dim++) {
    cm_bar_options_t o;
    cm_bar_options_init(&o);
    o.dim = dim;
    cm_scene_t *s = NULL;
    CMT_EQ_INT(cm_generate_bar(&ctx, &o, &s), CM_OK);
    if (!s)
      continue;
    CMT_EQ_INT(cm_scene_validate(&ctx, s), CM_OK);
    CMT_EQ_INT(s->nbodies, 1);
    CMT_EQ_INT(s->ncontacts, 2);
    CMT_REL(s->contacts[1].point[0] - s->contacts[0].point[0], 0.2, 1e-15);
    CMT_REL(dim == 2 ? s->bodies[0].inertia[0] : s->bodies[0].inertia[4], 0.005,
            0);
    cm_scene_destroy(&s);
  }
}

/* ---- bad options
 * ------------------------------------------------------------------ */

CM_TEST(gen_bad_options) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = (cm_scene_t *)&ctx; /* must be reset to NULL */
  cm_pile_options_t p;
  cm_pile_options_init(&p);
  p.count = 0;
  CMT_EQ_INT(cm_generate_pile(&ctx, &p, &s), CM_USAGE);
  CMT_TRUE(s == NULL);
  CMT_CONTAINS(ctx.path, "count");
  CMT_CONTAINS(ctx.message, "at least 1");
  cm_pile_options_init(&p);
  p.dim = 4;
  CMT_EQ_INT(cm_generate_pile(&ctx, &p, &s), CM_USAGE);
  CMT_CONTAINS(ctx.path, "dim");
  cm_pile_options_init(&p);
  p.polydispersity = 1.0;
  CMT_EQ_INT(cm_generate_pile(&ctx, &p, &s), CM_USAGE);
  CMT_CONTAINS(ctx.path, "polydispersity");
  cm_pile_options_init(&p);
  p.young = -1;
  CMT_EQ_INT(cm_generate_pile(&ctx, &p, &s), CM_USAGE);
  cm_crystal_options_t c;
  cm_crystal_options_init(&c);
  c.lattice = 9;
  CMT_EQ_INT(cm_generate_crystal(&ctx, &c, &s), CM_USAGE);
  CMT_CONTAINS(ctx.path, "lattice");
  cm_fleet_options_t f;
  cm_fleet_options_init(&f);
  f.count = -3;
  CMT_EQ_INT(cm_generate_fleet(&ctx, &f, &s), CM_USAGE);
  f.count = 2000000000;
  CMT_EQ_INT(cm_generate_fleet(&ctx, &f, &s), CM_LIMIT);
  cm_stack_options_t k;
  cm_stack_options_init(&k);
  k.k = 0;
  CMT_EQ_INT(cm_generate_stack(&ctx, &k, &s), CM_USAGE);
  CMT_CONTAINS(ctx.path, "k");
  cm_bar_options_t b;
  cm_bar_options_init(&b);
  b.mass = NAN;
  CMT_EQ_INT(cm_generate_bar(&ctx, &b, &s), CM_USAGE);
  CMT_CONTAINS(ctx.message, "mass");
  CMT_TRUE(s == NULL);
}

CM_TEST(gen_cli_errors) {
  static const struct {
    const char *args;   /* after "generate" */
    const char *needle; /* in the message */
  } cases[] = {
      {"pile --count 0", "at least 1"},
      {"blob", "unknown kind 'blob'"},
      {"", "missing KIND"},
      {"pile --count abc", "not an integer"},
      {"pile --lattice fcc", "does not apply to pile"},
      {"crystal --lattice bcc", "not square, hex, sc or fcc"},
      {"pile --k 1e5 --young 1e9", "not both"},
      {"stack --shape cones", "not boxes or spheres"},
      {"bar --frobnicate", "unknown option"},
      {"pile --dim 5", "dim"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char cmd[512];
    int code;
    snprintf(cmd, sizeof cmd, "%s generate %s 2>&1 >/dev/null", CM_BINARY,
             cases[i].args);
    char *out = cmt_run(cmd, &code);
    CMT_EQ_INT(code, 2); /* usage */
    CMT_CONTAINS(out, cases[i].needle);
    free(out);
  }
}

CM_TEST(gen_cli_forces_file) {
  char cmd[512];
  int code;
  const char *tmp = "gen_cli_forces.txt";
  snprintf(cmd, sizeof cmd,
           "%s generate stack --count 3 --towers 2 --forces %s", CM_BINARY,
           tmp);
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  char *txt = cmt_read_file(tmp);
  CMT_TRUE(txt != NULL);
  if (txt) {
    int lines = 0;
    double first = strtod(txt, NULL);
    for (char *p = txt; *p; p++)
      lines += *p == '\n';
    CMT_EQ_INT(lines, 24);                      /* 2 towers x 3 boxes x 4 */
    CMT_REL(first, 3 * 10.0 * 9.81 / 4, 1e-15); /* bottom corner */
  }
  remove(tmp);
  free(txt);
  free(out);
}

CM_TEST(gen_cli_out_and_help) {
  char cmd[512];
  int code;
  const char *tmp = "gen_cli_out.json";
  snprintf(cmd, sizeof cmd,
           "%s generate bar --dim 3 --mass 3 --inertia 0.01 --half-length "
           "0.2 --k 2e5 --out %s",
           CM_BINARY, tmp);
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  CMT_TRUE(out && out[0] == 0); /* nothing on standard output */
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_scene_read_file(&ctx, tmp, &s), CM_OK);
  if (s) {
    CMT_EQ_INT(s->dim, 3);
    CMT_REL(s->bodies[0].mass, 3, 0);
    CMT_REL(s->bodies[0].inertia[4], 0.01, 0);
    CMT_REL(s->contacts[1].point[0], 0.2, 0);
    CMT_REL(s->contacts[0].stiffness, 2e5, 0);
  }
  cm_scene_destroy(&s);
  remove(tmp);
  free(out);
  snprintf(cmd, sizeof cmd, "%s generate --help", CM_BINARY);
  out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  CMT_CONTAINS(out, "usage: cmodes generate KIND");
  free(out);
}
