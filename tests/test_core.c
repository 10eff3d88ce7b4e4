/* test_core.c: the core engine against independent truths: the reference bar
 * (analytic), random 2D/3D scenes against a dense LAPACK solve of S built
 * here from the scene without the library's assembly, invariances, bounds,
 * determinism across thread counts, and bad inputs. */
#include "cmodes.h"
#include "cmtest.h"

#include <jansson.h>
#include <lapacke.h>
#include <unistd.h>

/* ---- helpers ---------------------------------------------------------------
 */

static uint64_t rng_state;
static double urand(void) { /* xorshift64*, in [0, 1) */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double)((rng_state * 2685821657736338717ULL) >> 11) /
         9007199254740992.0;
}
static double urange(double a, double b) { return a + (b - a) * urand(); }

static void quat_R(const double *q, double *R) {
  double w = q[0], x = q[1], y = q[2], z = q[3];
  double M[9] = {w * w + x * x - y * y - z * z, 2 * (x * y - w * z),
                 2 * (x * z + w * y),           2 * (x * y + w * z),
                 w * w - x * x + y * y - z * z, 2 * (y * z - w * x),
                 2 * (x * z - w * y),           2 * (y * z + w * x),
                 w * w - x * x - y * y + z * z};
  memcpy(R, M, sizeof M);
}

/* Eigenvalues (descending, into lam) of S = K^1/2 J M^-1 J^T K^1/2 from
 * dense row-major J (nc x nd) and M (nd x nd) by cmt_dense_S and dsyevd;
 * *dmax gets max S_cc. */
static void dense_eigs(int nd, int nc, double *M, const double *J,
                       const double *k, double *lam, double *dmax) {
  double *S = cmt_dense_S(nd, nc, M, J, k);
  double *w = malloc(sizeof(double) * ((size_t)nc + 1));
  if (!S || !w) { /* a failure already (cmt_dense_S) */
    for (int i = 0; i < nc; i++)
      lam[i] = NAN;
    free(S), free(w);
    return;
  }
  double dm = 0;
  for (int i = 0; i < nc; i++)
    dm = fmax(dm, S[(size_t)i * nc + i]);
  int info = nc ? LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'U', nc, S, nc, w) : 0;
  CMT_EQ_INT(info, 0);
  for (int i = 0; i < nc; i++)
    lam[i] = w[nc - 1 - i];
  if (dmax)
    *dmax = dm;
  free(S), free(w);
}

/* Eigenvalues of S (descending) from a dense solve built straight from the
 * scene: J full (nc x ndof), M dense, A = J M^-1 J^T by dposv. Returns nc. */
static int ref_eigs(const cm_scene_t *s, double *lam) {
  int nb = s->nbodies, nc = s->ncontacts, per = s->dim == 2 ? 3 : 6;
  int *dof0 = malloc(sizeof(int) * (size_t)nb), nd = 0;
  for (int b = 0; b < nb; b++) {
    dof0[b] = s->bodies[b].fixed ? -1 : nd;
    nd += s->bodies[b].fixed ? 0 : per;
  }
  double *J = calloc((size_t)nc * nd + 1, sizeof(double));
  double *M = calloc((size_t)nd * nd + 1, sizeof(double));
  for (int c = 0; c < nc; c++) {
    const cm_contact_t *ct = &s->contacts[c];
    int side[2] = {ct->a, ct->b};
    for (int k = 0; k < 2; k++) {
      int b = side[k];
      if (b < 0 || s->bodies[b].fixed)
        continue;
      double sg = k ? -1 : 1, r[3] = {0}, *n = (double *)ct->normal;
      for (int i = 0; i < s->dim; i++)
        r[i] = ct->point[i] - s->bodies[b].position[i];
      double *row = J + (size_t)c * nd + dof0[b]; /* row-major nc x nd */
      if (s->dim == 2) {
        row[0] = sg * n[0], row[1] = sg * n[1];
        row[2] = sg * (r[0] * n[1] - r[1] * n[0]);
      } else {
        for (int i = 0; i < 3; i++)
          row[i] = sg * n[i];
        row[3] = sg * (r[1] * n[2] - r[2] * n[1]);
        row[4] = sg * (r[2] * n[0] - r[0] * n[2]);
        row[5] = sg * (r[0] * n[1] - r[1] * n[0]);
      }
    }
  }
  for (int b = 0; b < nb; b++) {
    if (dof0[b] < 0)
      continue;
    const cm_body_t *bd = &s->bodies[b];
    int o = dof0[b];
    int nt = s->dim == 2 ? 2 : 3;
    for (int i = 0; i < nt; i++)
      M[(size_t)(o + i) * nd + o + i] = bd->mass;
    if (s->dim == 2) {
      M[(size_t)(o + 2) * nd + o + 2] = bd->inertia[0];
    } else {
      double R[9];
      quat_R(bd->orientation, R);
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
          double v = 0; /* (R I R^T)_ij */
          for (int a = 0; a < 3; a++)
            for (int c = 0; c < 3; c++)
              v += R[3 * i + a] * bd->inertia[3 * a + c] * R[3 * j + c];
          M[(size_t)(o + 3 + i) * nd + o + 3 + j] = v;
        }
    }
  }
  double *kk = malloc(sizeof(double) * ((size_t)nc + 1));
  for (int c = 0; c < nc; c++)
    kk[c] = s->contacts[c].stiffness;
  dense_eigs(nd, nc, M, J, kk, lam, NULL);
  free(dof0), free(J), free(M), free(kk);
  return nc;
}

/* A random scene: nb bodies (about 1 in 6 fixed), nc contacts. */
static cm_scene_t *random_scene(int dim, int nb, int nc, uint64_t seed) {
  rng_state = seed * 2654435761ULL + 88172645463325252ULL;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = cm_scene_create(dim);
  for (int b = 0; b < nb; b++) {
    cm_body_t bd;
    cm_body_init(&bd);
    bd.fixed = b > 0 && urand() < 1.0 / 6;
    bd.mass = urange(0.5, 5);
    for (int i = 0; i < dim; i++)
      bd.position[i] = urange(-1, 1);
    if (dim == 2) {
      bd.inertia[0] = urange(0.01, 0.5);
    } else {
      double A[9], In[9];
      for (int i = 0; i < 9; i++)
        A[i] = urange(-0.5, 0.5);
      for (int i = 0; i < 3; i++) /* I = A A^T + 0.05 */
        for (int j = 0; j < 3; j++) {
          double v = i == j ? 0.05 : 0;
          for (int l = 0; l < 3; l++)
            v += A[3 * i + l] * A[3 * j + l];
          In[3 * i + j] = v;
        }
      memcpy(bd.inertia, In, sizeof In);
      for (int i = 0; i < 4; i++)
        bd.orientation[i] = urange(-1, 1);
    }
    cm_scene_add_body(&ctx, s, &bd, NULL);
  }
  for (int c = 0; c < nc; c++) {
    cm_contact_t ct;
    cm_contact_init(&ct);
    do {
      ct.a = (int)(urand() * nb);
    } while (s->bodies[ct.a].fixed);
    ct.b = urand() < 0.2 ? CM_WORLD : (int)(urand() * nb);
    if (ct.b == ct.a)
      ct.b = CM_WORLD;
    if (c > 0 && urand() < 0.3) { /* several contacts per body pair */
      ct.a = s->contacts[c - 1].a;
      ct.b = s->contacts[c - 1].b;
    }
    for (int i = 0; i < dim; i++) {
      ct.point[i] = s->bodies[ct.a].position[i] + urange(-0.3, 0.3);
      ct.normal[i] = urange(-1, 1);
    }
    ct.stiffness = pow(10, urange(4, 6));
    cm_scene_add_contact(&ctx, s, &ct, NULL);
  }
  return s;
}

static cm_report_t *analyze(cm_scene_t *s, int method, int modes) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_options_t o;
  cm_options_init(&o);
  o.method = method;
  o.modes = modes;
  cm_report_t *r = NULL;
  int st = cm_analyze(&ctx, s, &o, &r);
  if (st)
    CMT_FAIL("cm_analyze: %d %s", st, ctx.message);
  return r;
}

/* ---- the reference bar -------------------------------------------------- */

CM_TEST(core_bar2d_reference) {
  cm_scene_t *s = cmt_data_scene("bar2d.json");
  cm_report_t *r = analyze(s, CM_METHOD_AUTO, 6);
  CMT_EQ_INT(r->nmodes, 2);
  CMT_REL(r->modes[0].omega, sqrt(2 * 1e5 * 0.01 / 0.005), 1e-6); /* 632.5 */
  CMT_REL(r->modes[1].omega, sqrt(2 * 1e5 / 2.0), 1e-6);          /* 316.2 */
  CMT_REL(r->pc_omega_max, 500.0, 1e-12);
  CMT_REL(r->central_difference.h_s, 2.0 / sqrt(4e5), 1e-9); /* 3.162 ms */
  CMT_REL(r->central_difference.h_s, 3.162e-3, 1e-3);
  CMT_EQ_INT(r->modes[0].ncontacts, 2);
  CMT_REL(r->modes[0].contacts[0].share, 0.5, 1e-12);
  CMT_REL(r->modes[0].contacts[1].share, 0.5, 1e-12);
  CMT_REL(r->modes[0].bodies[0].share, 1.0, 1e-12);
  CMT_LE(r->omega_lower, r->omega_max);
  CMT_LE(r->omega_max, r->omega_upper);
  CMT_REL(r->pc_ratio, sqrt(4e5) / 500, 1e-12);
  CMT_REL(r->rk4.h_s, 2 * sqrt(2) / sqrt(4e5), 1e-12);
  CMT_REL(r->rk3.h_s, sqrt(3) / sqrt(4e5), 1e-12);
  CMT_TRUE(isnan(r->explicit_euler.h_s));
  CMT_TRUE(isnan(r->newmark.h_s)); /* average acceleration: unconditional */
  CMT_EQ_INT(r->free_motions, 1);  /* x translation */
  CMT_EQ_INT(r->zero_modes, 0);
  CMT_EQ_INT(r->ncomp, 1);
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
}

/* The same bar in 3D, rotated about z in its body frame: same frequencies. */
CM_TEST(core_bar3d_same_modes) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = cm_scene_create(3);
  cm_body_t b;
  cm_body_init(&b);
  b.mass = 2;
  double th = 0.4; /* body frame rotated by th about z */
  b.orientation[0] = cos(th / 2), b.orientation[3] = sin(th / 2);
  memset(b.inertia, 0, sizeof b.inertia);
  b.inertia[0] = 0.001, b.inertia[4] = 0.004, b.inertia[8] = 0.005;
  cm_scene_add_body(&ctx, s, &b, "bar");
  cm_body_t g;
  cm_body_init(&g);
  g.fixed = 1;
  cm_scene_add_body(&ctx, s, &g, "ground");
  for (int i = 0; i < 2; i++) {
    cm_contact_t c;
    cm_contact_init(&c);
    c.a = 0, c.b = 1;
    c.point[0] = i ? 0.1 : -0.1;
    c.normal[1] = 1;
    c.stiffness = 1e5;
    cm_scene_add_contact(&ctx, s, &c, NULL);
  }
  cm_report_t *r = analyze(s, CM_METHOD_AUTO, 6);
  CMT_EQ_INT(r->nmodes, 2);
  CMT_REL(r->modes[0].omega, 632.45553203367586, 1e-12);
  CMT_REL(r->modes[1].omega, 316.22776601683793, 1e-12);
  CMT_EQ_INT(r->active_dofs, 2); /* y and rotation about z */
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
}

/* ---- random scenes against dense LAPACK --------------------------------- */

static void check_against_dense(cm_scene_t *s, int method, double rel) {
  double *lam = malloc(sizeof(double) * ((size_t)s->ncontacts + 1));
  ref_eigs(s, lam);
  cm_report_t *r = analyze(s, method, 6);
  if (!r)
    return;
  int k = r->nmodes;
  CMT_TRUE(k >= 1);
  for (int i = 0; i < k; i++)
    CMT_REL(r->modes[i].omega, sqrt(lam[i]), rel);
  CMT_LE(r->omega_lower, r->omega_max * (1 + 1e-12));
  CMT_LE(r->omega_max, r->omega_upper * (1 + 1e-12));
  /* the shares of every mode sum to 1 over all contacts: the top ones <= 1 */
  double sum = 0;
  for (int j = 0; j < r->modes[0].ncontacts; j++)
    sum += r->modes[0].contacts[j].share;
  CMT_LE(sum, 1 + 1e-12);
  cm_report_destroy(&r);
  free(lam);
}

CM_TEST(core_random_scenes_vs_lapack) {
  int n = 0;
  for (int seed = 1; seed <= 30; seed++) {
    int dim = seed % 2 ? 2 : 3;
    /* ~70 bodies and 160 contacts: one large component, Lanczos path */
    cm_scene_t *s = random_scene(dim, 70, 160, (uint64_t)seed);
    check_against_dense(s, CM_METHOD_ARPACK, 1e-8);
    check_against_dense(s, CM_METHOD_LANCZOS, 1e-8);
    check_against_dense(s, CM_METHOD_DENSE, 1e-10);
    cm_scene_destroy(&s);
    n++;
  }
  for (int seed = 100; seed < 125; seed++) { /* small, many components */
    int dim = seed % 2 ? 2 : 3;
    cm_scene_t *s = random_scene(dim, 40, 30, (uint64_t)seed);
    check_against_dense(s, CM_METHOD_AUTO, 1e-10);
    cm_scene_destroy(&s);
    n++;
  }
  CMT_TRUE(n >= 50);
}

/* cmodes' own Lanczos (partial re-orthogonalisation, thick restarts) against
 * dense LAPACK: frequencies, and the true residuals ||S z - lambda z|| /
 * lambda of the returned vectors, with a basis that needs no restart and
 * with small ones that restart many times. */
CM_TEST(core_lanczos_vs_lapack) {
  const int ncvs[3] = {0, 14, 24};
  int restarted = 0;
  for (int seed = 300; seed < 316; seed++) {
    int dim = seed % 2 ? 2 : 3, nb = seed < 308 ? 150 : 300;
    cm_scene_t *s = random_scene(dim, nb, nb * 8 / 3, (uint64_t)seed);
    double *lam = malloc(sizeof(double) * (size_t)s->ncontacts);
    ref_eigs(s, lam);
    for (int v = 0; v < 3; v++) {
      cm_context_t ctx;
      cm_context_init(&ctx);
      cm_options_t o;
      cm_options_init(&o);
      o.method = CM_METHOD_LANCZOS;
      o.ncv = ncvs[v];
      cm_report_t *r = NULL;
      CMT_EQ_INT(cm_analyze(&ctx, s, &o, &r), 0);
      CMT_TRUE(r && r->nmodes == 6 && r->converged);
      /* the top component by the own solver (not a fallback) */
      CMT_TRUE(r && r->components[0].method == CM_METHOD_LANCZOS);
      for (int i = 0; r && i < r->nmodes; i++) {
        CMT_REL(r->modes[i].omega, sqrt(lam[i]), 1e-9);
        CMT_LE(r->modes[i].residual, 1e-8);
      }
      if (r && r->iterations > 0)
        restarted++;
      cm_report_destroy(&r);
    }
    free(lam);
    cm_scene_destroy(&s);
  }
  CMT_TRUE(restarted >= 16); /* the small bases did restart */
}

/* A Krylov space that becomes invariant early (the SC crystal's chains have
 * few distinct frequencies): the top one is still found, exactly. */
CM_TEST(core_lanczos_invariant_subspace) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_crystal_options_t co;
  cm_crystal_options_init(&co);
  co.lattice = CM_LATTICE_SC;
  co.nx = co.ny = co.nz = 7;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_crystal(&ctx, &co, &s), CM_OK);
  cm_report_t *a = analyze(s, CM_METHOD_LANCZOS, 1);
  cm_report_t *d = analyze(s, CM_METHOD_DENSE, 1);
  CMT_TRUE(a && d);
  if (a && d) {
    CMT_REL(a->omega_max, d->omega_max, 1e-12);
    CMT_LE(a->modes[0].residual, 1e-10);
    /* it stopped at the invariant subspace; the search for a missed copy
     * (a probe, then a solve: the top is repeated) costs the rest */
    CMT_TRUE(a->matvecs < 60);
  }
  cm_report_destroy(&a);
  cm_report_destroy(&d);
  cm_scene_destroy(&s);
}

/* The Chebyshev-filtered Lanczos finds the same modes as dense LAPACK. */
CM_TEST(core_chebyshev_filter_vs_lapack) {
  for (int seed = 200; seed < 206; seed++) {
    cm_scene_t *s = random_scene(seed % 2 ? 2 : 3, 150, 400, (uint64_t)seed);
    double *lam = malloc(sizeof(double) * (size_t)s->ncontacts);
    ref_eigs(s, lam);
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_options_t o;
    cm_options_init(&o);
    o.method = CM_METHOD_ARPACK;
    o.chebyshev = 6;
    cm_report_t *r = NULL;
    CMT_EQ_INT(cm_analyze(&ctx, s, &o, &r), 0);
    for (int i = 0; r && i < r->nmodes; i++)
      CMT_REL(r->modes[i].omega, sqrt(lam[i]), 1e-8);
    CMT_TRUE(r && r->nmodes == 6);
    cm_report_destroy(&r);
    free(lam);
    cm_scene_destroy(&s);
  }
}

/* ---- invariances --------------------------------------------------------- */

static void omegas(cm_scene_t *s, double *w, int *k) {
  cm_report_t *r = analyze(s, CM_METHOD_AUTO, 6);
  *k = r ? r->nmodes : 0;
  for (int i = 0; i < *k; i++)
    w[i] = r->modes[i].omega;
  cm_report_destroy(&r);
}

static void qmul(const double *a, const double *b, double *o) {
  o[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  o[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
  o[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
  o[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

CM_TEST(core_invariances) {
  for (int dim = 2; dim <= 3; dim++) {
    cm_scene_t *s = random_scene(dim, 30, 60, 7 + (uint64_t)dim);
    double w0[6], w1[6];
    int k0, k1;
    omegas(s, w0, &k0);
    /* rigid motion: rotate about z (2D) or a general axis (3D), translate */
    cm_scene_t *t = cm_scene_copy(s);
    double q[4] = {cos(0.35), 0, 0, sin(0.35)};
    if (dim == 3) {
      double ax[3] = {0.3, -0.5, 0.8}, na = sqrt(0.09 + 0.25 + 0.64);
      q[1] = sin(0.35) * ax[0] / na, q[2] = sin(0.35) * ax[1] / na;
      q[3] = sin(0.35) * ax[2] / na;
    }
    double R[9];
    quat_R(q, R);
    double shift[3] = {3.0, -2.0, 1.5};
#define ROT(v)                                                                 \
  do {                                                                         \
    double o_[3] = {0};                                                        \
    for (int i_ = 0; i_ < 3; i_++)                                             \
      for (int j_ = 0; j_ < 3; j_++)                                           \
        o_[i_] += R[3 * i_ + j_] * (v)[j_];                                    \
    memcpy((v), o_, sizeof o_);                                                \
  } while (0)
    for (int b = 0; b < t->nbodies; b++) {
      ROT(t->bodies[b].position);
      for (int i = 0; i < dim; i++)
        t->bodies[b].position[i] += shift[i];
      if (dim == 3) {
        double o[4];
        qmul(q, t->bodies[b].orientation, o);
        memcpy(t->bodies[b].orientation, o, sizeof o);
      }
    }
    for (int c = 0; c < t->ncontacts; c++) {
      ROT(t->contacts[c].point);
      ROT(t->contacts[c].normal);
      for (int i = 0; i < dim; i++)
        t->contacts[c].point[i] += shift[i];
    }
    omegas(t, w1, &k1);
    CMT_EQ_INT(k0, k1);
    for (int i = 0; i < k0 && i < k1; i++)
      CMT_REL(w1[i], w0[i], 1e-9);
    cm_scene_destroy(&t);
    /* renumber bodies (reverse) and reorder contacts (reverse) */
    cm_context_t ctx;
    cm_context_init(&ctx);
    t = cm_scene_create(dim);
    for (int b = s->nbodies - 1; b >= 0; b--)
      cm_scene_add_body(&ctx, t, &s->bodies[b], NULL);
    for (int c = s->ncontacts - 1; c >= 0; c--) {
      cm_contact_t ct = s->contacts[c];
      ct.a = s->nbodies - 1 - ct.a;
      if (ct.b != CM_WORLD)
        ct.b = s->nbodies - 1 - ct.b;
      cm_scene_add_contact(&ctx, t, &ct, NULL);
    }
    omegas(t, w1, &k1);
    CMT_EQ_INT(k0, k1);
    for (int i = 0; i < k0 && i < k1; i++)
      CMT_REL(w1[i], w0[i], 1e-9);
    cm_scene_destroy(&t);
    /* k * 4 -> omega * 2; masses and inertias * 9 -> omega / 3 */
    t = cm_scene_copy(s);
    for (int c = 0; c < t->ncontacts; c++)
      t->contacts[c].stiffness *= 4;
    omegas(t, w1, &k1);
    for (int i = 0; i < k0 && i < k1; i++)
      CMT_REL(w1[i], 2 * w0[i], 1e-9);
    cm_scene_destroy(&t);
    t = cm_scene_copy(s);
    for (int b = 0; b < t->nbodies; b++) {
      t->bodies[b].mass *= 9;
      for (int i = 0; i < 9; i++)
        t->bodies[b].inertia[i] *= 9;
    }
    omegas(t, w1, &k1);
    for (int i = 0; i < k0 && i < k1; i++)
      CMT_REL(w1[i], w0[i] / 3, 1e-9);
    cm_scene_destroy(&t);
    cm_scene_destroy(&s);
  }
}

/* ---- general sparse M against dense ------------------------------------- */

/* A random system with a general M: M tridiagonal SPD (lower triangle CSC),
 * J nc rows of 4 random entries on consecutive dofs, k log-uniform in
 * [1e3, 1e5], from the test's generator at seed; Md and Jd their dense
 * copies (row-major), w S's eigenvalues by dense_eigs. */
typedef struct {
  int n, nc, *Mp, *Mi, *Jp, *Jj;
  double *Mx, *Jx, *k, *w, *Md, *Jd;
} core_gm_t;

static void core_gm_free(core_gm_t *g) {
  free(g->Mp), free(g->Mi), free(g->Jp), free(g->Jj), free(g->Mx);
  free(g->Jx), free(g->k), free(g->w), free(g->Md), free(g->Jd);
}

static int core_gm_build(core_gm_t *g, int n, int nc, unsigned seed) {
  memset(g, 0, sizeof *g);
  g->n = n, g->nc = nc;
  g->Mp = malloc(sizeof(int) * (size_t)(n + 1));
  g->Mi = malloc(sizeof(int) * 2 * (size_t)n);
  g->Jp = malloc(sizeof(int) * (size_t)(nc + 1));
  g->Jj = malloc(sizeof(int) * 4 * (size_t)nc);
  g->Mx = malloc(sizeof(double) * 2 * (size_t)n);
  g->Jx = malloc(sizeof(double) * 4 * (size_t)nc);
  g->k = malloc(sizeof(double) * (size_t)nc);
  g->w = malloc(sizeof(double) * (size_t)nc);
  g->Md = calloc((size_t)n * n, sizeof(double));
  g->Jd = calloc((size_t)nc * n, sizeof(double));
  if (!(g->Mp && g->Mi && g->Jp && g->Jj && g->Mx && g->Jx && g->k && g->w &&
        g->Md && g->Jd))
    return -1;
  rng_state = seed;
  int nz = 0;
  for (int j = 0; j < n; j++) {
    g->Mp[j] = nz;
    g->Mi[nz] = j, g->Mx[nz] = 4 + urand(), g->Md[j * n + j] = g->Mx[nz];
    nz++;
    if (j + 1 < n) {
      g->Mi[nz] = j + 1, g->Mx[nz] = urange(-1, 1);
      g->Md[j * n + j + 1] = g->Md[(j + 1) * n + j] = g->Mx[nz];
      nz++;
    }
  }
  g->Mp[n] = nz;
  nz = 0;
  for (int r = 0; r < nc; r++) {
    g->Jp[r] = nz;
    int c0 = (int)(urand() * (n - 4));
    for (int q = 0; q < 4; q++) {
      g->Jj[nz] = c0 + q;
      g->Jx[nz] = urange(-1, 1);
      g->Jd[r * n + c0 + q] = g->Jx[nz];
      nz++;
    }
    g->k[r] = pow(10, urange(3, 5));
  }
  g->Jp[nc] = nz;
  dense_eigs(n, nc, g->Md, g->Jd, g->k, g->w, NULL);
  return 0;
}

static int core_gm_system(cm_context_t *ctx, const core_gm_t *g,
                          cm_system_t **sys) {
  return cm_system_from_matrices(ctx, g->n, g->nc, g->Mp, g->Mi, g->Mx, g->Jp,
                                 g->Jj, g->Jx, g->k, sys);
}

CM_TEST(core_general_mass_matrix) {
  /* n = 40 dofs, M = tridiagonal SPD (not block-diagonal), J random sparse */
  core_gm_t g;
  CMT_EQ_INT(core_gm_build(&g, 40, 55, 12345), 0);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL;
  CMT_EQ_INT(core_gm_system(&ctx, &g, &sys), 0);
  for (int method = CM_METHOD_ARPACK; sys && method <= CM_METHOD_DENSE;
       method++) {
    cm_options_t o;
    cm_options_init(&o);
    o.method = method;
    cm_report_t *r = NULL;
    CMT_EQ_INT(cm_analyze_system(&ctx, sys, NULL, &o, &r), 0);
    CMT_EQ_INT(r->nmodes, 6);
    for (int i = 0; i < 6; i++)
      CMT_REL(r->modes[i].omega, sqrt(g.w[i]), 1e-9);
    CMT_LE(r->omega_lower, r->omega_max);
    CMT_LE(r->omega_max, r->omega_upper);
    cm_report_destroy(&r);
  }
  cm_system_destroy(&sys);
  /* a mass matrix that is not SPD is reported */
  if (g.Mx)
    g.Mx[0] = -1;
  CMT_EQ_INT(core_gm_system(&ctx, &g, &sys), 0);
  cm_report_t *r = NULL;
  CMT_EQ_INT(cm_analyze_system(&ctx, sys, NULL, NULL, &r), CM_NOT_SPD);
  CMT_CONTAINS(ctx.message, "not positive definite");
  cm_system_destroy(&sys);
  core_gm_free(&g);
}

/* One mode of a general M large enough for Lanczos (n = 300 dofs, 400
 * rows): the pair converges before the probabilistic bound's steps, whose
 * rest run as plain steps on the implicit operator (lanczos.c,
 * lz_pb_tail). Against dense LAPACK: omega_max, and the bound above it. */
CM_TEST(core_general_mass_one_mode) {
  core_gm_t g;
  CMT_EQ_INT(core_gm_build(&g, 300, 400, 4242), 0);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL;
  if (g.Jd)
    CMT_EQ_INT(core_gm_system(&ctx, &g, &sys), 0);
  double w0 = g.w ? sqrt(g.w[0]) : 0;
  for (int t = 0; sys && t < 2; t++) {
    cm_options_t o;
    cm_options_init(&o);
    o.method = CM_METHOD_LANCZOS;
    o.modes = 1;
    if (t)
      o.tol = 1e-6;
    cm_report_t *r = NULL;
    CMT_EQ_INT(cm_analyze_system(&ctx, sys, NULL, &o, &r), 0);
    if (!r)
      continue;
    fprintf(stderr,
            "  tol %g: omega %.10g (dense %.10g), prob %.10g, %d "
            "products, %d steps\n",
            o.tol, r->omega_max, w0, r->omega_upper_prob, r->matvecs,
            r->prob_steps);
    CMT_EQ_INT(r->nmodes, 1);
    CMT_REL(r->modes[0].omega, w0, t ? 1e-6 : 1e-9);
    CMT_LE(w0 * (1 - 1e-13), r->omega_upper_prob);
    CMT_LE(r->omega_upper_prob, r->omega_upper * (1 + 1e-15));
    CMT_TRUE(r->prob_steps > 0);
    cm_report_destroy(&r);
  }
  cm_system_destroy(&sys);
  core_gm_free(&g);
}

/* A block-diagonal M given as general matrices, its 2 x 2 blocks interleaved
 * (dof j pairs with dof j + 20), takes the explicit-B path and agrees with
 * dense LAPACK, bounds included. */
CM_TEST(core_matrices_interleaved_blocks) {
  int n = 40, nc = 30;
  rng_state = 777;
  double Md[40 * 40] = {0}, Jd[30 * 40] = {0}, k[30];
  for (int b = 0; b < 20; b++) {
    int i = b, j = b + 20;
    double a = 2 + urand(), c = 2 + urand(), off = urange(-1, 1);
    Md[i * n + i] = a, Md[j * n + j] = c, Md[i * n + j] = Md[j * n + i] = off;
  }
  int Mp[41], Mi[80], nz = 0;
  double Mx[80];
  for (int j = 0; j < n; j++) { /* lower triangle CSC from Md */
    Mp[j] = nz;
    for (int i = j; i < n; i++)
      if (Md[i * n + j] != 0)
        Mi[nz] = i, Mx[nz++] = Md[i * n + j];
  }
  Mp[n] = nz;
  int Jp[31], Jj[30 * 3];
  double Jx[30 * 3];
  nz = 0;
  for (int r = 0; r < nc; r++) {
    Jp[r] = nz;
    int cols[3] = {r % 20, 20 + (r * 7) % 20, (r * 3 + 1) % 20};
    if (cols[2] == cols[0])
      cols[2] = (cols[2] + 1) % 20;
    int ord[3] = {cols[0], cols[1], cols[2]};
    for (int a = 0; a < 3; a++) /* sorted columns */
      for (int b = a + 1; b < 3; b++)
        if (ord[b] < ord[a]) {
          int t = ord[a];
          ord[a] = ord[b], ord[b] = t;
        }
    for (int q = 0; q < 3; q++) {
      Jj[nz] = ord[q];
      Jx[nz] = urange(-1, 1);
      Jd[r * n + ord[q]] = Jx[nz];
      nz++;
    }
    k[r] = pow(10, urange(3, 5));
  }
  Jp[nc] = nz;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL;
  CMT_EQ_INT(
      cm_system_from_matrices(&ctx, n, nc, Mp, Mi, Mx, Jp, Jj, Jx, k, &sys), 0);
  CMT_EQ_INT(sys->block, 1);
  double w[30], dmax = 0;
  dense_eigs(n, nc, Md, Jd, k, w, &dmax);
  cm_report_t *r = NULL;
  CMT_EQ_INT(cm_analyze_system(&ctx, sys, NULL, NULL, &r), 0);
  for (int i = 0; i < r->nmodes; i++)
    CMT_REL(r->modes[i].omega, sqrt(w[i]), 1e-10);
  CMT_REL(r->pc_omega_max, sqrt(dmax), 1e-12);
  CMT_LE(r->omega_max, r->omega_upper);
  cm_report_destroy(&r);
  cm_system_destroy(&sys);
}

/* ---- components: many small problems --------------------------------- */

CM_TEST(core_components_fleet_like) {
  /* 200 bars of different masses: 200 components, the lightest sets it */
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = cm_scene_create(2);
  cm_body_t g;
  cm_body_init(&g);
  g.fixed = 1;
  cm_scene_add_body(&ctx, s, &g, "ground");
  for (int i = 0; i < 200; i++) {
    cm_body_t b;
    cm_body_init(&b);
    b.mass = 2.0 + 0.01 * ((i * 37) % 200);
    b.inertia[0] = 0.005;
    b.position[0] = 0; /* all at the origin: bitwise equal rocking modes */
    char name[32];
    snprintf(name, sizeof name, "bar%d", i);
    int bi = cm_scene_add_body(&ctx, s, &b, name);
    for (int j = 0; j < 2; j++) {
      cm_contact_t c;
      cm_contact_init(&c);
      c.a = bi, c.b = 0;
      c.point[0] = b.position[0] + (j ? 0.1 : -0.1);
      c.normal[1] = 1;
      c.stiffness = 1e5;
      cm_scene_add_contact(&ctx, s, &c, NULL);
    }
  }
  cm_report_t *r = analyze(s, CM_METHOD_AUTO, 4);
  CMT_EQ_INT(r->ncomp, 200);
  /* rocking depends on I only: 200 equal rocking modes at 632.46 */
  CMT_REL(r->omega_max, 632.45553203367586, 1e-12);
  CMT_EQ_INT(r->nmodes, 4);
  CMT_EQ_INT(r->zero_modes, 0);
  CMT_EQ_INT(r->free_motions, 200);
  CMT_EQ_INT(r->modes[0].component, 0); /* ties: lowest component first */
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
}

/* ---- determinism across thread counts ------------------------------------ */

static char *report_json(cm_scene_t *s, int threads, int method, int ncv) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = threads;
  cm_options_t o;
  cm_options_init(&o);
  o.method = method;
  o.ncv = ncv;
  return cmt_report_json(&ctx, s, &o);
}

CM_TEST(core_threads_bitwise) {
  /* large enough for parallel kernels (> 4096 rows) and Lanczos */
  cm_scene_t *s = random_scene(3, 3000, 9000, 99);
  char *a = report_json(s, 1, CM_METHOD_AUTO, 0);
  char *b = report_json(s, 2, CM_METHOD_AUTO, 0);
  CMT_TRUE(a && b && strcmp(a, b) == 0);
  CMT_CONTAINS(a, "\"method\":\"lanczos\"");
  free(a), free(b);
  /* with restarts, and ARPACK */
  for (int v = 0; v < 2; v++) {
    int method = v ? CM_METHOD_ARPACK : CM_METHOD_LANCZOS, ncv = v ? 0 : 16;
    a = report_json(s, 1, method, ncv), b = report_json(s, 2, method, ncv);
    CMT_TRUE(a && b && strcmp(a, b) == 0);
    CMT_CONTAINS(a, v ? "\"method\":\"arpack\"" : "\"method\":\"lanczos\"");
    CMT_TRUE(a && (v || !strstr(a, "\"iterations\":0,")));
    free(a), free(b);
  }
  cm_scene_destroy(&s);
  /* and the CLI on the bar */
  char cmd[2048];
  int c1, c2;
  snprintf(cmd, sizeof cmd,
           "%s analyze --json --no-timings --threads 1 %s/data/bar2d.json",
           CM_BINARY, CM_SOURCE_DIR);
  char *o1 = cmt_run(cmd, &c1);
  snprintf(cmd, sizeof cmd,
           "%s analyze --json --no-timings --threads 2 %s/data/bar2d.json",
           CM_BINARY, CM_SOURCE_DIR);
  char *o2 = cmt_run(cmd, &c2);
  CMT_EQ_INT(c1, 0);
  CMT_EQ_INT(c2, 0);
  CMT_TRUE(o1 && o2 && strcmp(o1, o2) == 0);
  CMT_CONTAINS(o1, "\"omega_max\": 632.45553203367");
  free(o1), free(o2);
}

/* `cmodes compare`: the sparse path against dense dsyevr on one scene, for
 * each sparse solver; a solver it does not know is a usage error. */
CM_TEST(core_compare_cli) {
  const char *methods[2] = {"lanczos", "arpack"};
  for (int v = 0; v < 2; v++) {
    char cmd[2048];
    int code = -1;
    snprintf(cmd, sizeof cmd,
             "%s compare --json --method %s %s/data/pile3d.json", CM_BINARY,
             methods[v], CM_SOURCE_DIR);
    char *out = cmt_run(cmd, &code);
    CMT_EQ_INT(code, 0);
    char want[64];
    snprintf(want, sizeof want, "{\"method\": \"%s\"", methods[v]);
    const char *p = out ? strstr(out, want) : NULL;
    CMT_TRUE(p != NULL);
    double diff = 1;
    const char *q = p ? strstr(p, "\"max_rel_diff_vs_dsyevr\": ") : NULL;
    CMT_TRUE(q && sscanf(q + 26, "%lf", &diff) == 1);
    CMT_LE(diff, 1e-9); /* the top 6 of 900 contacts, tol 1e-10 */
    free(out);
  }
  char cmd[2048];
  int code = -1;
  snprintf(cmd, sizeof cmd,
           "%s compare --method dense %s/data/pile3d.json 2>&1", CM_BINARY,
           CM_SOURCE_DIR);
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 2);
  CMT_CONTAINS(out, "is not lanczos or arpack");
  free(out);
}

/* `cmodes compare` runs the pipeline of `cmodes analyze` (the analysis
 * object): on the fleet (many components, tied robots) its sparse column is
 * analyze's omega to the bit, and dsyevr on the whole S agrees; with fewer
 * contacts than modes (bar2d: 2) it compares the 2 there are, which are
 * sqrt(k/m) analytically; a scene without contacts is an input error. */
CM_TEST(core_compare_is_analyze) {
  char cmd[2048];
  int c1 = -1, c2 = -1;
  snprintf(cmd, sizeof cmd,
           "%s analyze --json --no-timings --method lanczos -k 6 "
           "%s/data/fleet.json",
           CM_BINARY, CM_SOURCE_DIR);
  char *rep = cmt_run(cmd, &c1);
  snprintf(cmd, sizeof cmd,
           "%s compare --json --no-dsyevd -k 6 %s/data/fleet.json", CM_BINARY,
           CM_SOURCE_DIR);
  char *cmp = cmt_run(cmd, &c2);
  CMT_EQ_INT(c1, 0);
  CMT_EQ_INT(c2, 0);
  json_t *r = rep ? json_loads(rep, 0, NULL) : NULL;
  json_t *c = cmp ? json_loads(cmp, 0, NULL) : NULL;
  json_t *modes = json_object_get(r, "modes");
  json_t *runs = json_object_get(c, "runs");
  json_t *sparse = json_object_get(json_array_get(runs, 0), "omega");
  json_t *dense = json_object_get(json_array_get(runs, 1), "omega");
  CMT_EQ_INT((int)json_array_size(modes), 6);
  CMT_EQ_INT((int)json_array_size(sparse), 6);
  CMT_EQ_INT((int)json_array_size(dense), 6);
  for (size_t i = 0; i < json_array_size(sparse); i++) {
    double a =
        json_real_value(json_object_get(json_array_get(modes, i), "omega"));
    double b = json_real_value(json_array_get(sparse, i));
    double d = json_real_value(json_array_get(dense, i));
    CMT_TRUE(a == b);               /* the same bits as analyze */
    CMT_LE(fabs(b - d) / d, 1e-12); /* and dense LAPACK agrees */
  }
  json_decref(r), json_decref(c);
  free(rep), free(cmp);
  snprintf(cmd, sizeof cmd, "%s compare --json %s/data/bar2d.json 2>&1",
           CM_BINARY, CM_SOURCE_DIR);
  cmp = cmt_run(cmd, &c1);
  CMT_EQ_INT(c1, 0);
  c = cmp ? json_loads(cmp, 0, NULL) : NULL;
  runs = json_object_get(c, "runs");
  for (size_t k = 0; k < 3; k++) {
    json_t *om = json_object_get(json_array_get(runs, k), "omega");
    CMT_EQ_INT((int)json_array_size(om), 2);
    /* m = 2, I = 0.005, k = 1e5 at x = +-0.1: rocking sqrt(2 k x^2 / I)
     * and bouncing sqrt(2 k / m) */
    CMT_LE(fabs(json_real_value(json_array_get(om, 0)) - sqrt(4e5)), 1e-9);
    CMT_LE(fabs(json_real_value(json_array_get(om, 1)) - sqrt(1e5)), 1e-9);
  }
  json_decref(c);
  free(cmp);
  char dir[256], path[512];
  CMT_TRUE(cmt_tmpdir(dir, sizeof dir) != NULL);
  snprintf(path, sizeof path, "%s/empty.json", dir);
  FILE *f = fopen(path, "w");
  CMT_TRUE(f != NULL);
  if (f) {
    fputs("{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2, "
          "\"bodies\": [{\"mass\": 1, \"inertia\": 1, \"position\": "
          "[0, 0]}], \"contacts\": []}",
          f);
    fclose(f);
  }
  snprintf(cmd, sizeof cmd, "%s compare %s 2>&1", CM_BINARY, path);
  cmp = cmt_run(cmd, &c1);
  CMT_EQ_INT(c1, 3);
  CMT_CONTAINS(cmp, "cmodes compare: the scene has no contacts");
  free(cmp);
  remove(path);
  rmdir(dir);
}

/* Budgets: a Lanczos or ARPACK solve stopped by --max-iter or
 * --max-seconds returns Rayleigh-Ritz values of its basis, flagged; each is
 * below the converged value (Ritz values of a symmetric operator approach
 * its top eigenvalues from below), and the report is complete. */
CM_TEST(core_partial_results) {
  cm_scene_t *s = random_scene(3, 3000, 9000, 77);
  const int methods[2] = {CM_METHOD_LANCZOS, CM_METHOD_ARPACK};
  for (int v = 0; v < 2; v++) {
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_options_t o;
    cm_options_init(&o);
    o.method = methods[v];
    cm_report_t *full = NULL;
    CMT_EQ_INT(cm_analyze(&ctx, s, &o, &full), 0);
    for (int b = 0; b < 2 && full; b++) {
      cm_options_t ob = o;
      if (b == 0)
        ob.ncv = 16, ob.max_iter = 1;
      else
        ob.max_seconds = 1e-4;
      cm_report_t *p = NULL;
      cm_context_clear(&ctx);
      CMT_EQ_INT(cm_analyze(&ctx, s, &ob, &p), CM_NOT_CONVERGED);
      CMT_CONTAINS(ctx.message, b == 0 ? "iteration budget" : "time budget");
      CMT_TRUE(p && !p->converged && p->status == CM_NOT_CONVERGED);
      if (p) {
        CMT_LE(p->omega_max, full->omega_max * (1 + 1e-12));
        if (b == 0) /* one cycle of 16 already finds most of the top */
          CMT_LE(0.5 * full->omega_max, p->omega_max);
        /* the steps never trust a partial value below the lower bound */
        CMT_LE(p->central_difference.h_s, 2.0 / p->omega_lower * (1 + 1e-15));
        for (int i = 0; i < p->nmodes; i++)
          CMT_TRUE(p->modes[i].omega > 0 && isfinite(p->modes[i].residual));
      }
      cm_report_destroy(&p);
    }
    cm_report_destroy(&full);
  }
  cm_scene_destroy(&s);
}
