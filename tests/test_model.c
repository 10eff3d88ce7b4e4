/* test_model.c: the contact model of scene format version 2 (tangential
 * springs and dashpots) against independent truths: analytic frequencies
 * of a disk and a sphere on the ground with a sticking spring, and the
 * damped central-difference limit against the spectral radius of the
 * velocity-Verlet amplification matrix, formed densely here and bisected on
 * h with LAPACK's dgeev. Also the version 2 formats (JSON and binary) and
 * their checks. Not for the LAMMPS comparison (scripts/, tests/lammps). */
#include "cmtest.h"
#include "cmodes.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers -------------------------------------------------------------- */

static cm_report_t *model_analyze(cm_scene_t *s) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_report_t *r = NULL;
  int st = cm_analyze(&ctx, s, NULL, &r);
  if (st)
    CMT_FAIL("cm_analyze: %d %s", st, ctx.message);
  return r;
}

/* A body of mass m with a solid-disk (2D) or solid-sphere (3D) inertia. */
static int model_ball(cm_scene_t *s, double m, double R, double x,
                      double y, double z) {
  cm_body_t b;
  cm_body_init(&b);
  b.mass = m;
  double in = s->dim == 2 ? 0.5 * m * R * R : 0.4 * m * R * R;
  memset(b.inertia, 0, sizeof b.inertia);
  b.inertia[0] = in, b.inertia[4] = in, b.inertia[8] = in;
  b.position[0] = x, b.position[1] = y, b.position[2] = z;
  return cm_scene_add_body(NULL, s, &b, NULL);
}

static void model_contact(cm_scene_t *s, int a, int b, const double *p,
                          const double *n, double kn, double kt, double cn,
                          double ct) {
  cm_contact_t c;
  cm_contact_init(&c);
  c.a = a, c.b = b;
  memcpy(c.point, p, sizeof c.point);
  memcpy(c.normal, n, sizeof c.normal);
  c.stiffness = kn, c.stiffness_t = kt, c.damping_n = cn, c.damping_t = ct;
  cm_scene_add_contact(NULL, s, &c, NULL);
}

/* ---- analytic: one ball on the ground with a sticking spring ---------------- */

/* Disk (2D): the normal row gives k_n / m; the tangent row [t, r x t] with
 * r = (0, -R) gives k_t (1/m + R^2/I) = 3 k_t / m. Sphere (3D): k_n / m and
 * twice k_t (1/m + R^2/I) = 3.5 k_t / m. */
CM_TEST(model_ball_on_ground_tangential) {
  for (int dim = 2; dim <= 3; dim++) {
    double m = 0.7, R = 0.03, kn = 2e4, kt = 9e3;
    cm_scene_t *s = cm_scene_create(dim);
    model_ball(s, m, R, 0, dim == 2 ? R : 0, dim == 3 ? R : 0);
    double p[3] = {0, 0, 0}, n[3] = {0, dim == 2 ? 1 : 0, dim == 3 ? 1 : 0};
    model_contact(s, 0, CM_WORLD, p, n, kn, kt, 0, 0);
    cm_report_t *r = model_analyze(s);
    if (r) {
      double lt = (dim == 2 ? 3.0 : 3.5) * kt / m, ln = kn / m;
      CMT_EQ_INT(r->nrows, dim);
      CMT_EQ_INT(r->ncontacts, 1);
      CMT_TRUE(r->tangential && !r->dashpots);
      CMT_TRUE(!strcmp(r->model, "normal + tangential springs"));
      CMT_REL(r->omega_max, sqrt(fmax(lt, ln)), 1e-12);
      CMT_EQ_INT(r->nmodes, dim == 2 ? 2 : 3);
      CMT_REL(r->modes[r->nmodes - 1].lambda, fmin(lt, ln), 1e-12);
      /* one contact carries every mode's energy */
      CMT_REL(r->modes[0].contacts[0].share, 1.0, 1e-12);
      CMT_REL(r->central_difference.h_s, 2.0 / r->omega_max, 1e-12);
    }
    cm_report_destroy(&r);
    cm_scene_destroy(&s);
  }
}

/* ---- damped limit against the amplification matrix ------------------------- */

/* Dense M (n x n, row-major) from the system's lower CSC. */
static void model_dense_M(const cm_system_t *sys, double *M) {
  int n = sys->n;
  memset(M, 0, sizeof(double) * (size_t)n * (size_t)n);
  for (int j = 0; j < n; j++)
    for (int q = sys->Mp[j]; q < sys->Mp[j + 1]; q++) {
      int i = sys->Mi[q];
      M[i * n + j] = M[j * n + i] = sys->Mx[q];
    }
}

/* W = J^T diag(w) J, n x n row-major. */
static void model_dense_JtWJ(const cm_system_t *sys, const double *w,
                             double *W) {
  int n = sys->n;
  memset(W, 0, sizeof(double) * (size_t)n * (size_t)n);
  for (int r = 0; r < sys->nc; r++)
    for (int p = sys->Jp[r]; p < sys->Jp[r + 1]; p++)
      for (int q = sys->Jp[r]; q < sys->Jp[r + 1]; q++)
        W[sys->Jj[p] * n + sys->Jj[q]] += w[r] * sys->Jx[p] * sys->Jx[q];
}

/* Spectral radius of the velocity-Verlet step with the dashpot force from
 * the half-step velocity, state (x_n, v_{n-1/2}):
 *   v' = (I - h Mi C) v - h Mi K x,   x' = x + h v'. */
static double model_rho(int n, const double *MiK, const double *MiC,
                        double h) {
  int N = 2 * n;
  double *T = calloc((size_t)N * (size_t)N, sizeof(double));
  double *wr = malloc(sizeof(double) * (size_t)N);
  double *wi = malloc(sizeof(double) * (size_t)N);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double id = i == j;
      double vv = id - h * MiC[i * n + j]; /* I - h Mi C */
      double vx = -h * MiK[i * n + j];     /* -h Mi K */
      T[(n + i) * N + n + j] = vv;
      T[(n + i) * N + j] = vx;
      T[i * N + j] = id + h * vx; /* x' = x + h v' */
      T[i * N + n + j] = h * vv;
    }
  double rho = NAN;
  if (!LAPACKE_dgeev(LAPACK_ROW_MAJOR, 'N', 'N', N, T, N, wr, wi, NULL, 1,
                     NULL, 1)) {
    rho = 0;
    for (int i = 0; i < N; i++)
      rho = fmax(rho, hypot(wr[i], wi[i]));
  }
  free(T), free(wr), free(wi);
  return rho;
}

/* The largest h whose amplification matrix has no eigenvalue outside the
 * unit circle (1e-7: the double eigenvalue 1 of free motions is defective
 * and moves by about sqrt(eps)). drag (NULL: none): a drag gamma per body
 * added to C on its translations, which must all be active columns. */
static double model_true_limit(const cm_system_t *sys, double h_hi,
                               const double *drag) {
  int n = sys->n;
  size_t nn = (size_t)n * (size_t)n;
  double *M = malloc(sizeof(double) * nn), *K = malloc(sizeof(double) * nn);
  double *C = malloc(sizeof(double) * nn);
  model_dense_M(sys, M);
  model_dense_JtWJ(sys, sys->k, K);
  model_dense_JtWJ(sys, sys->g, C);
  int seen = 0, tdofs = sys->dim == 2 ? 2 : 3;
  for (int j = 0; drag && j < n; j++)
    if (sys->col_dof[j] < tdofs) /* a translation */
      C[j * n + j] += drag[sys->col_body[j]], seen++;
  if (drag)
    CMT_EQ_INT(seen, tdofs * sys->moving_bodies); /* all active */
  /* K := M^-1 K, C := M^-1 C */
  lapack_int *piv = malloc(sizeof(lapack_int) * (size_t)n);
  double *Mc = malloc(sizeof(double) * nn);
  memcpy(Mc, M, sizeof(double) * nn);
  LAPACKE_dgesv(LAPACK_ROW_MAJOR, n, n, Mc, n, piv, K, n);
  memcpy(Mc, M, sizeof(double) * nn);
  LAPACKE_dgesv(LAPACK_ROW_MAJOR, n, n, Mc, n, piv, C, n);
  double lo = 0, hi = h_hi;
  while (model_rho(n, K, C, hi) <= 1 + 1e-7)
    hi *= 2;
  for (int it = 0; it < 60 && hi - lo > 1e-9 * hi; it++) {
    double h = 0.5 * (lo + hi);
    if (model_rho(n, K, C, h) <= 1 + 1e-7)
      lo = h;
    else
      hi = h;
  }
  free(M), free(K), free(C), free(piv), free(Mc);
  return lo;
}

/* A row of nb balls on the ground, neighbours touching, every contact with
 * random k_n, k_t, c_n, c_t (c_t = 0 on some). */
static cm_scene_t *model_row(int dim, int nb, unsigned seed) {
  srand(seed);
#define U(a, b) ((a) + ((b) - (a)) * (rand() / (double)RAND_MAX))
  cm_scene_t *s = cm_scene_create(dim);
  double x = 0, prevR = 0;
  int up = dim == 2 ? 1 : 2;
  for (int i = 0; i < nb; i++) {
    double R = U(0.8, 1.2), m = U(0.5, 2.0);
    x += prevR + R;
    double pos[3] = {x, 0, 0};
    pos[up] = R;
    model_ball(s, m, R, pos[0], pos[1], pos[2]);
    double pg[3] = {x, 0, 0}, ng[3] = {0, 0, 0};
    ng[up] = 1;
    model_contact(s, i, CM_WORLD, pg, ng, U(1e3, 1e4), U(1e2, 5e3),
                  U(0, 40), rand() % 3 ? U(0, 20) : 0);
    if (i > 0) { /* contact with the previous ball, normal from it to i */
      double pc[3] = {x - R, 0, 0}, nc[3] = {1, 0, 0};
      pc[up] = R; /* not on the line of centres: couples the rotations */
      model_contact(s, i, i - 1, pc, nc, U(1e3, 1e4), U(1e2, 5e3), U(0, 40),
                    rand() % 3 ? U(0, 20) : 0);
    }
    prevR = R;
  }
#undef U
  return s;
}

CM_TEST(model_damped_limit_dense_truth) {
  for (int trial = 0; trial < 6; trial++) {
    int dim = 2 + trial % 2;
    cm_scene_t *s = model_row(dim, 2 + trial / 2, 1234u + (unsigned)trial);
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_system_t *sys = NULL;
    CMT_EQ_INT(cm_system_assemble(&ctx, s, &sys), 0);
    cm_report_t *r = model_analyze(s);
    if (sys && r) {
      CMT_TRUE(r->dashpots && r->tangential);
      double truth = model_true_limit(sys, r->central_difference.h_s, NULL);
      double h = r->central_difference.h_s;
      /* the criterion lambda_max(h^2 K~ + 2h C~) = 4 is the exact limit */
      CMT_REL(h, truth, 1e-6);
      CMT_LE(r->central_difference.certified_s, truth);
      /* certified by factorization at h* (1 - 1e-4 2^j) */
      CMT_TRUE(r->central_difference.certified_s >= 0.999 * truth);
      /* damping lowers the limit below the undamped one */
      CMT_LE(h, r->cd_undamped.h_s);
      /* each listed mode's own limit is >= the coupled one */
      CMT_LE(h, r->damped_modal_h_s * (1 + 1e-12));
    }
    cm_report_destroy(&r);
    cm_system_destroy(&sys);
    cm_scene_destroy(&s);
  }
}

/* A drag on every ball (LAMMPS' fix viscous: force -gamma_i v_i), as a
 * dashpot alone at its centre (stiffness 0, damping_n = damping_t =
 * gamma_i), beside the contacts of model_row. The truth: the amplification
 * matrix with C + diag(gamma_i) on the translations of ball i, the drags
 * added here to the dense C, not through the contacts. */
CM_TEST(model_viscous_dense_truth) {
  for (int trial = 0; trial < 4; trial++) {
    int dim = 2 + trial % 2, nb = 2 + trial / 2;
    cm_scene_t *s = model_row(dim, nb, 4321u + (unsigned)trial);
    cm_report_t *r0 = model_analyze(s); /* without the drags */
    int nc0 = s->ncontacts;
    double gam[8];
    for (int i = 0; i < nb; i++) {
      const double *x = s->bodies[i].position;
      double n[3] = {0.6, 0.0, 0.8}; /* any unit normal */
      if (dim == 2)
        n[0] = 0.6, n[1] = 0.8, n[2] = 0;
      gam[i] = 5.0 + 30.0 * i;
      model_contact(s, i, CM_WORLD, x, n, 0, 0, gam[i], gam[i]);
    }
    CMT_EQ_INT(s->ncontacts, nc0 + nb);
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_system_t *sys = NULL;
    CMT_EQ_INT(cm_system_assemble(&ctx, s, &sys), 0);
    cm_report_t *r = model_analyze(s);
    if (sys && r && r0) {
      /* the undamped system leaves the drags out: the same rows, modes */
      CMT_EQ_INT(sys->nc, r0->nrows);
      CMT_TRUE(r->omega_max == r0->omega_max);
      CMT_TRUE(r->cd_undamped.h_s == r0->cd_undamped.h_s);
      /* the truth: the dense C plus the drags on the translations */
      double lo = model_true_limit(sys, r->central_difference.h_s, gam);
      CMT_REL(r->central_difference.h_s, lo, 1e-6);
      CMT_LE(r->central_difference.certified_s, lo);
      CMT_TRUE(r->central_difference.certified_s >= 0.999 * lo);
      /* the drags lower the step below the contacts' dashpots alone */
      CMT_LE(r->central_difference.h_s,
             r0->central_difference.h_s * (1 - 1e-3));
    }
    cm_report_destroy(&r0), cm_report_destroy(&r);
    cm_system_destroy(&sys);
    cm_scene_destroy(&s);
  }
}

/* Dashpots alone and no spring: velocity Verlet's drag v' = (1 - h
 * gamma / m) v is stable for h <= 2 m / gamma; the step is the smallest
 * over the balls (no contact between them). */
CM_TEST(model_dashpots_alone) {
  for (int dim = 2; dim <= 3; dim++) {
    cm_scene_t *s = cm_scene_create(dim);
    double m[3] = {0.5, 2.0, 1.3}, gam[3] = {3.0, 25.0, 9.0}, want = INFINITY;
    for (int i = 0; i < 3; i++) {
      model_ball(s, m[i], 0.1, 3.0 * i, 1.0, dim == 3 ? 1.0 : 0);
      double n[3] = {0, 0, 0};
      n[dim - 1] = 1;
      model_contact(s, i, CM_WORLD, s->bodies[i].position, n, 0, 0, gam[i],
                    i == 1 ? 0 : gam[i]); /* ball 1: the normal only */
      want = fmin(want, 2.0 * m[i] / gam[i]);
    }
    cm_report_t *r = model_analyze(s);
    if (r) {
      CMT_EQ_INT(r->nrows, 0); /* no spring: no undamped row */
      CMT_TRUE(r->dashpots);
      CMT_REL(r->central_difference.h_s, want, 1e-9);
      CMT_LE(r->central_difference.certified_s, want * (1 + 1e-15));
      CMT_TRUE(r->central_difference.certified_s >= 0.999 * want);
      CMT_TRUE(isnan(r->damped_zeta));
      CMT_TRUE(isnan(r->rk3.h_s) && isnan(r->cd_undamped.h_s));
    }
    cm_report_destroy(&r);
    cm_scene_destroy(&s);
  }
}

/* Proportional damping C = alpha K: every mode has zeta = alpha omega / 2
 * and the limit is the top mode's 2 (sqrt(1 + zeta^2) - zeta) / omega. */
CM_TEST(model_damped_proportional) {
  double alpha = 2e-3;
  cm_scene_t *s = model_row(3, 3, 77u);
  for (int i = 0; i < s->ncontacts; i++) {
    cm_contact_t *c = &s->contacts[i];
    c->damping_n = alpha * c->stiffness;
    c->damping_t = alpha * c->stiffness_t;
  }
  cm_report_t *r = model_analyze(s);
  if (r) {
    double w = r->omega_max, zeta = 0.5 * alpha * w;
    CMT_REL(r->modes[0].zeta, zeta, 1e-9);
    CMT_REL(r->central_difference.h_s, cm_step_central_difference(w, zeta),
            1e-8);
  }
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
}

/* ---- formats ------------------------------------------------------------------ */

CM_TEST(model_v2_round_trips) {
  cm_scene_t *s = model_row(3, 3, 5u);
  s->timestep_s = 1e-4;
  cm_context_t ctx;
  cm_context_init(&ctx);
  char *text = cm_scene_to_json(&ctx, s);
  CMT_TRUE(text && strstr(text, "\"version\": 2"));
  CMT_TRUE(text && strstr(text, "\"timestep\": 0.0001"));
  cm_scene_t *back = NULL;
  CMT_EQ_INT(cm_scene_parse_json(&ctx, text, strlen(text), "v2", &back), 0);
  /* binary */
  char path[] = "/tmp/cmodes-model-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  CMT_TRUE(f != NULL);
  cm_scene_t *bin = NULL;
  if (f) {
    CMT_EQ_INT(cm_scene_write_binary(&ctx, s, f), 0);
    fclose(f);
    CMT_EQ_INT(cm_scene_read_file(&ctx, path, &bin), 0);
    unlink(path);
  }
  for (int i = 0; back && bin && i < s->ncontacts; i++) {
    const cm_contact_t *a = &s->contacts[i], *b = &back->contacts[i],
                       *c = &bin->contacts[i];
    CMT_TRUE(a->stiffness_t == b->stiffness_t && a->damping_n == b->damping_n &&
             a->damping_t == b->damping_t);
    CMT_TRUE(a->stiffness_t == c->stiffness_t && a->damping_n == c->damping_n &&
             a->damping_t == c->damping_t);
  }
  if (back && bin) {
    CMT_TRUE(back->timestep_s == 1e-4 && bin->timestep_s == 1e-4);
    cm_report_t *r = model_analyze(bin);
    if (r)
      CMT_REL(r->deck_fraction, 1e-4 / r->central_difference.h_s, 1e-15);
    cm_report_destroy(&r);
  }
  free(text);
  cm_scene_destroy(&back), cm_scene_destroy(&bin), cm_scene_destroy(&s);
}

CM_TEST(model_v2_errors) {
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2, \"bodies\": "
       "[{\"mass\": 1, \"inertia\": 1, \"position\": [0, 0]}], \"contacts\": "
       "[{\"a\": 0, \"b\": null, \"point\": [0, 0], \"normal\": [0, 1], "
       "\"stiffness\": 1, \"stiffness_t\": 1}]}",
       "contacts[0].stiffness_t: needs scene format version 2"},
      {"{\"format\": \"cmodes-scene\", \"version\": 2, \"dim\": 2, \"bodies\": "
       "[{\"mass\": 1, \"inertia\": 1, \"position\": [0, 0]}], \"contacts\": "
       "[{\"a\": 0, \"b\": null, \"point\": [0, 0], \"normal\": [0, 1], "
       "\"stiffness\": 1, \"damping_n\": -2}]}",
       "contacts[0].damping_n: must be >= 0"},
      {"{\"format\": \"cmodes-scene\", \"version\": 2, \"timestep\": -1, "
       "\"dim\": 2, \"bodies\": []}",
       "timestep: must be >= 0"},
      {"{\"format\": \"cmodes-scene\", \"version\": 2, \"dim\": 2, \"bodies\": "
       "[{\"mass\": 1, \"inertia\": 1, \"position\": [0, 0]}], \"contacts\": "
       "[{\"a\": 0, \"b\": null, \"point\": [0, 0], \"normal\": [0, 1], "
       "\"stiffness\": 0, \"damping_n\": 1, \"stiffness_t\": 2}]}",
       "contacts[0].stiffness: 0 with a tangential spring (stiffness_t)"},
      {"{\"format\": \"cmodes-scene\", \"version\": 2, \"dim\": 2, \"bodies\": "
       "[{\"mass\": 1, \"inertia\": 1, \"position\": [0, 0]}], \"contacts\": "
       "[{\"a\": 0, \"b\": null, \"point\": [0, 0], \"normal\": [0, 1], "
       "\"stiffness\": 0, \"damping_t\": 1}]}",
       "contacts[0].stiffness: 0 with no normal dashpot (damping_n)"},
      {"{\"format\": \"cmodes-scene\", \"version\": 3, \"dim\": 2, "
       "\"bodies\": []}",
       "version: expected 1 or 2"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_scene_t *s = NULL;
    int st = cm_scene_parse_json(&ctx, cases[i].text, strlen(cases[i].text),
                                 "t.json", &s);
    CMT_EQ_INT(st, CM_INVALID_SCENE);
    CMT_CONTAINS(ctx.message, cases[i].want);
    cm_scene_destroy(&s);
  }
  /* a modal ratio on top of dashpots is refused */
  cm_scene_t *s = model_row(2, 2, 9u);
  cm_options_t o;
  cm_options_init(&o);
  o.damping_ratio = 0.1;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_report_t *r = NULL;
  CMT_EQ_INT(cm_analyze(&ctx, s, &o, &r), CM_USAGE);
  CMT_CONTAINS(ctx.message, "count it twice");
  cm_scene_destroy(&s);
}
