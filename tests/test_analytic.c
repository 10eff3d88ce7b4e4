/* test_analytic.c: cm_analyze on generated scenes against analytic truth:
 * a sphere on a plane, two free spheres, columns of N spheres (the fixed-free
 * chain spectrum), a box on its four corners, the reference bar in 2D and
 * 3D, simple-cubic and square crystals (exact chain formula), FCC and
 * hexagonal crystals (monotone approach to the band edge 8k/m and 6k/m of
 * the infinite lattice with normal springs), and the bounds on a pile. */
#include "cmodes.h"
#include "cmtest.h"

/* ---- helpers
 * ------------------------------------------------------------------ */

static cm_report_t *at_analyze(const cm_scene_t *s, int modes, int method) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_options_t o;
  cm_options_init(&o);
  o.modes = modes;
  o.method = method;
  cm_report_t *r = NULL;
  int st = cm_analyze(&ctx, s, &o, &r);
  if (st != CM_OK)
    CMT_FAIL("cm_analyze: status %d: %s", st, ctx.message);
  return r;
}

static cm_scene_t *at_column(int n, double m, double k) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_stack_options_t o;
  cm_stack_options_init(&o);
  o.shape = CM_STACK_SPHERES;
  o.count = n;
  o.mass = m;
  o.k = k;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_stack(&ctx, &o, &s), CM_OK);
  return s;
}

/* lambda_j of N masses m on springs k, fixed at the bottom, free on top */
static double at_chain(int N, int j, double k, double m) {
  double s = sin((2.0 * j - 1) * M_PI / (2.0 * (2 * N + 1)));
  return 4 * k / m * s * s;
}

/* ---- one and two bodies
 * ------------------------------------------------------ */

CM_TEST(ana_sphere_on_plane) {
  cm_scene_t *s = at_column(1, 0.37, 2.5e5);
  if (!s)
    return;
  cm_report_t *r = at_analyze(s, 3, CM_METHOD_DENSE);
  if (r) {
    CMT_EQ_INT(r->nmodes >= 1, 1);
    CMT_REL(r->modes[0].lambda, 2.5e5 / 0.37, 1e-12);
    CMT_REL(r->omega_max, sqrt(2.5e5 / 0.37), 1e-12);
    CMT_EQ_INT(r->free_motions, 5); /* x, y, three rotations */
    CMT_EQ_INT(r->zero_modes, 0);
    CMT_EQ_INT(r->dropped_dofs, 5);
  }
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
}

CM_TEST(ana_two_free_spheres) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = cm_scene_create(3);
  double m1 = 0.8, m2 = 2.3, k = 7e5;
  cm_body_t b;
  cm_body_init(&b);
  b.mass = m1;
  b.inertia[0] = b.inertia[4] = b.inertia[8] = 0.4 * m1 * 0.01 * 0.01;
  cm_scene_add_body(&ctx, s, &b, "s1");
  b.mass = m2;
  b.position[0] = 0.02;
  b.inertia[0] = b.inertia[4] = b.inertia[8] = 0.4 * m2 * 0.01 * 0.01;
  cm_scene_add_body(&ctx, s, &b, "s2");
  cm_contact_t c;
  cm_contact_init(&c);
  c.a = 1;
  c.b = 0;
  c.point[0] = 0.01;
  c.normal[0] = 1;
  c.stiffness = k;
  cm_scene_add_contact(&ctx, s, &c, NULL);
  cm_report_t *r = at_analyze(s, 2, CM_METHOD_DENSE);
  if (r) {
    CMT_REL(r->modes[0].lambda, k * (1 / m1 + 1 / m2), 1e-12);
    CMT_EQ_INT(r->free_motions, 11); /* 12 dofs, rank 1 */
    CMT_EQ_INT(r->zero_modes, 0);
    CMT_EQ_INT(r->dropped_dofs, 10);
    CMT_EQ_INT(r->free_bodies, 0);
  }
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
}

/* ---- columns of spheres
 * --------------------------------------------------------- */

CM_TEST(ana_column_dense) {
  double m = 0.05, k = 3e6, worst = 0;
  for (int N = 1; N <= 50; N++) {
    cm_scene_t *s = at_column(N, m, k);
    if (!s)
      return;
    cm_report_t *r = at_analyze(s, N, CM_METHOD_DENSE);
    if (r) {
      CMT_EQ_INT(r->nmodes, N);
      for (int i = 0; i < r->nmodes; i++) {
        double want = at_chain(N, N - i, k, m); /* descending */
        double e = fabs(r->modes[i].lambda - want) / want;
        worst = fmax(worst, e);
        if (e > 1e-10)
          CMT_FAIL("N=%d mode %d: lambda %.17g, want %.17g (rel %.3g)", N, i,
                   r->modes[i].lambda, want, e);
      }
      CMT_EQ_INT(r->zero_modes, 0);
    }
    cm_report_destroy(&r);
    cm_scene_destroy(&s);
  }
  printf("column N=1..50 dense: worst relative error %.3g\n", worst);
}

CM_TEST(ana_column_arpack) {
  double m = 0.05, k = 3e6;
  int sizes[] = {10, 30, 50, 120};
  for (int t = 0; t < 4; t++) {
    int N = sizes[t], want_modes = N < 6 ? N : 6;
    cm_scene_t *s = at_column(N, m, k);
    if (!s)
      return;
    cm_report_t *r = at_analyze(s, want_modes, CM_METHOD_ARPACK);
    if (r) {
      CMT_EQ_INT(r->nmodes, want_modes);
      for (int i = 0; i < r->nmodes; i++)
        CMT_REL(r->modes[i].lambda, at_chain(N, N - i, k, m), 1e-10);
    }
    cm_report_destroy(&r);
    cm_scene_destroy(&s);
  }
}

/* ---- a box on its four corners
 * ------------------------------------------------ */

/* Corners at (+-Lx/2, +-Ly/2, -Lz/2), normal z: gap = z + y_c th_x - x_c th_y,
 * so H = diag(4k, k Ly^2, k Lx^2) on (z, th_x, th_y), Ixx = M (Ly^2 + Lz^2)/12,
 * Iyy = M (Lx^2 + Lz^2)/12; rank 3 of 4 rows: one redundant gap. */
CM_TEST(ana_box_on_corners) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_stack_options_t o;
  cm_stack_options_init(&o);
  o.count = 1;
  o.size[0] = 0.5, o.size[1] = 0.3, o.size[2] = 0.2;
  o.mass = 12;
  o.k = 4e5;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_stack(&ctx, &o, &s), CM_OK);
  if (!s)
    return;
  double Lx = 0.5, Ly = 0.3, Lz = 0.2, M = 12, k = 4e5;
  double want[3] = {4 * k / M, 12 * k * Ly * Ly / (M * (Ly * Ly + Lz * Lz)),
                    12 * k * Lx * Lx / (M * (Lx * Lx + Lz * Lz))};
  /* sort descending */
  for (int i = 0; i < 3; i++)
    for (int j = i + 1; j < 3; j++)
      if (want[j] > want[i]) {
        double t = want[i];
        want[i] = want[j];
        want[j] = t;
      }
  cm_report_t *r = at_analyze(s, 3, CM_METHOD_DENSE);
  if (r) {
    CMT_EQ_INT(r->nmodes, 3);
    for (int i = 0; i < 3 && i < r->nmodes; i++)
      CMT_REL(r->modes[i].lambda, want[i], 1e-12);
    CMT_EQ_INT(r->zero_modes, 1);   /* four corners, three dofs */
    CMT_EQ_INT(r->free_motions, 3); /* x, y, th_z */
  }
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
}

/* ---- the reference bar
 * ---------------------------------------------------------- */

CM_TEST(ana_bar_2d_3d) {
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
    cm_report_t *r = at_analyze(s, 2, CM_METHOD_DENSE);
    if (r) {
      CMT_EQ_INT(r->nmodes, 2);
      /* rocking 2 k L^2 / I, translation 2 k / m */
      CMT_REL(r->modes[0].omega, sqrt(2 * 1e5 * 0.01 / 0.005), 1e-12);
      CMT_REL(r->modes[1].omega, sqrt(2 * 1e5 / 2.0), 1e-12);
      CMT_REL(r->pc_omega_max, 500.0, 1e-12); /* sqrt(k (1/m + L^2/I)) */
    }
    cm_report_destroy(&r);
    cm_scene_destroy(&s);
  }
}

/* ---- crystals
 * -------------------------------------------------------------------- */

static double at_crystal(int lattice, int n, double *m_out, double *k_out) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_crystal_options_t o;
  cm_crystal_options_init(&o);
  o.lattice = lattice;
  o.nx = o.ny = o.nz = n;
  cm_scene_t *s = NULL;
  double lam = NAN;
  CMT_EQ_INT(cm_generate_crystal(&ctx, &o, &s), CM_OK);
  if (!s)
    return lam;
  cm_report_t *r = at_analyze(s, 1, CM_METHOD_AUTO);
  if (r)
    lam = r->omega_max * r->omega_max;
  *m_out = s->bodies[0].mass;
  *k_out = o.k;
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
  return lam;
}

/* Normal springs along the axes decouple by axis: the vertical chains (floor
 * spring at the bottom) set lambda_max = (4k/m) sin^2((2n-1) pi/(2(2n+1))),
 * above the free-free horizontal chains, below the band edge 4k/m. */
CM_TEST(ana_crystal_sc_square) {
  int lats[2] = {CM_LATTICE_SC, CM_LATTICE_SQUARE};
  for (int t = 0; t < 2; t++) {
    double prev = 0, m = 0, k = 0;
    for (int n = 1; n <= 7; n++) {
      double lam = at_crystal(lats[t], n, &m, &k);
      CMT_REL(lam, at_chain(n, n, k, m), 1e-10);
      CMT_TRUE(lam > prev);
      CMT_TRUE(lam < 4 * k / m);
      prev = lam;
    }
  }
}

/* FCC (normal springs only) has the band edge 8k/m at X and L; a finite
 * piece on a floor is bounded by it (its quadratic form is the infinite one
 * minus boundary springs; the floor spring k e_z e_z^T is below the missing
 * neighbours' sum diag(1, 1, 2) k). Hexagonal: 6k/m. The largest finite
 * value grows with the size toward the edge. */
static void at_band_edge(int lattice, double edge, int nmax, double reach) {
  double prev = 0, m = 0, k = 0, lam = 0;
  for (int n = 2; n <= nmax; n++) {
    lam = at_crystal(lattice, n, &m, &k);
    printf("lattice %d n=%d: lambda_max / (k/m) = %.6f (edge %g)\n", lattice, n,
           lam / (k / m), edge);
    CMT_TRUE(lam > prev);
    CMT_LE(lam, edge * k / m * (1 + 1e-12));
    prev = lam;
  }
  CMT_LE(reach * edge * k / m, lam);
}

CM_TEST(ana_crystal_fcc) { at_band_edge(CM_LATTICE_FCC, 8.0, 7, 0.9); }
CM_TEST(ana_crystal_hex) { at_band_edge(CM_LATTICE_HEX, 6.0, 12, 0.9); }

/* The band edge itself, by brute force over wave vectors: the largest
 * eigenvalue of D(q) = sum_R (1 - cos q.R) n n^T (k = m = 1). */
static double at_sym3_max(double A[3][3]) {
  /* power iteration on A + c I (A is PSD): enough digits for 1e-6 */
  double v[3] = {1, 0.7, 0.3}, lam = 0;
  for (int it = 0; it < 500; it++) {
    double w[3] = {0, 0, 0}, nn = 0;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        w[i] += A[i][j] * v[j];
    for (int i = 0; i < 3; i++)
      nn += w[i] * w[i];
    nn = sqrt(nn);
    if (nn == 0)
      return 0;
    lam = nn;
    for (int i = 0; i < 3; i++)
      v[i] = w[i] / nn;
  }
  return lam;
}

CM_TEST(ana_fcc_band_edge_brute_force) {
  double R[12][3];
  int c = 0;
  for (int s1 = -1; s1 <= 1; s1 += 2)
    for (int s2 = -1; s2 <= 1; s2 += 2) {
      double a[3][3] = {{s1, s2, 0}, {s1, 0, s2}, {0, s1, s2}};
      for (int t = 0; t < 3; t++, c++)
        for (int j = 0; j < 3; j++)
          R[c][j] = 0.5 * a[t][j]; /* cube side 1 */
    }
  double best = 0;
  int G = 24;
  for (int a = 0; a < G; a++)
    for (int b = 0; b < G; b++)
      for (int e = 0; e < G; e++) {
        double q[3] = {4 * M_PI * a / G, 4 * M_PI * b / G, 4 * M_PI * e / G};
        double D[3][3] = {{0}};
        for (int r = 0; r < 12; r++) {
          double qr = q[0] * R[r][0] + q[1] * R[r][1] + q[2] * R[r][2];
          double w = 1 - cos(qr), l2 = 0.5; /* |R|^2 */
          for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
              D[i][j] += w * R[r][i] * R[r][j] / l2;
        }
        best = fmax(best, at_sym3_max(D));
      }
  CMT_REL(best, 8.0, 1e-9); /* reached on the grid at X = (2 pi, 0, 0) */
}

/* ---- a pile: the rigorous bounds bracket the coupled value
 * --------------------- */

CM_TEST(ana_pile_bounds) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  for (int dim = 2; dim <= 3; dim++) {
    cm_pile_options_t o;
    cm_pile_options_init(&o);
    o.dim = dim;
    o.count = 150;
    o.young = 7e10;
    cm_scene_t *s = NULL;
    CMT_EQ_INT(cm_generate_pile(&ctx, &o, &s), CM_OK);
    if (!s)
      continue;
    cm_report_t *d = at_analyze(s, 3, CM_METHOD_DENSE);
    cm_report_t *a = at_analyze(s, 3, CM_METHOD_ARPACK);
    if (d && a) {
      CMT_REL(a->omega_max, d->omega_max, 1e-9);
      CMT_LE(d->omega_lower, d->omega_max * (1 + 1e-12));
      CMT_LE(d->omega_max, d->omega_upper * (1 + 1e-12));
      CMT_TRUE(d->pc_ratio >= 1 - 1e-12);
    }
    cm_report_destroy(&d);
    cm_report_destroy(&a);
    cm_scene_destroy(&s);
  }
}

/* ---- a tower of N boxes
 * ------------------------------------------------------- */

/* Corner contacts act on (z, th_x, th_y) only (n = e_z, r x n = (y, -x, 0)),
 * so the tower is three fixed-free chains: springs 4k, k Ly^2, k Lx^2 per
 * interface on masses M, Ixx, Iyy. The 3N eigenvalues are their union. */
static int at_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

CM_TEST(ana_box_tower) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_stack_options_t o;
  cm_stack_options_init(&o);
  int N = 7;
  o.count = N;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_stack(&ctx, &o, &s), CM_OK);
  if (!s)
    return;
  double M = o.mass, k = o.k, Lx = o.size[0], Ly = o.size[1], Lz = o.size[2];
  double Ixx = M * (Ly * Ly + Lz * Lz) / 12, Iyy = M * (Lx * Lx + Lz * Lz) / 12;
  double want[3 * 7];
  for (int j = 1; j <= N; j++) {
    want[3 * (j - 1)] = at_chain(N, j, 4 * k, M);
    want[3 * (j - 1) + 1] = at_chain(N, j, k * Ly * Ly, Ixx);
    want[3 * (j - 1) + 2] = at_chain(N, j, k * Lx * Lx, Iyy);
  }
  qsort(want, 3 * N, sizeof want[0], at_desc);
  cm_report_t *r = at_analyze(s, 3 * N, CM_METHOD_DENSE);
  if (r) {
    CMT_EQ_INT(r->nmodes, 3 * N);
    for (int i = 0; i < r->nmodes; i++)
      CMT_REL(r->modes[i].lambda, want[i], 1e-10);
    CMT_EQ_INT(r->zero_modes, N); /* one redundant corner per interface */
  }
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
}

/* ---- the bundled scenes (data/) keep their analytic values ------------------
 */

CM_TEST(ana_bundled_data) {
  static const struct {
    const char *file;
    double omega; /* analytic omega_max, rad/s */
  } cases[] = {
      {"bar3d.json", 632.45553203367586},         /* sqrt(2 k L^2 / I) */
      {"stack_spheres.json", 988.83082622512852}, /* 1000 sin(19 pi/42) */
      {"stack_boxes.json", 594.57604921791692},   /* see data/README.md */
      {"crystal_sc.json", 29408.251214836804},    /* sqrt(4k/m) sin(7pi/18) */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/data/%s", CM_SOURCE_DIR, cases[i].file);
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_scene_t *s = NULL;
    int st = cm_scene_read_file(&ctx, path, &s);
    CMT_EQ_INT(st, CM_OK);
    if (st) {
      fprintf(stderr, "%s\n", ctx.message);
      continue;
    }
    cm_report_t *r = at_analyze(s, 1, CM_METHOD_AUTO);
    if (r)
      CMT_REL(r->omega_max, cases[i].omega, 1e-10);
    cm_report_destroy(&r);
    cm_scene_destroy(&s);
  }
}
