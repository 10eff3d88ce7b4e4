/* test_unsafe.c: the inputs of the adversarial audit (issue 13) that gave
 * a wrong answer with status ok, each against an independent truth: a
 * dense LAPACK solve of S done here (dsyevd on cm_operator_dense_S, or on
 * S built here from U diag(d) U^T), the known spectrum of a system built
 * from its eigen-decomposition, and the scaling law omega(a k) =
 * sqrt(a) omega(k). */
#include "cmodes.h"
#include "cmtest.h"

#include <lapacke.h>
#include <stdint.h>

/* ---- helpers ---------------------------------------------------------------
 */

/* The analysis of s (or sys) with method, modes, tol (0: the default)
 * and basis size ncv (0: auto). */
static cm_report_t *run_ncv(const cm_scene_t *s, const cm_system_t *sys,
                            int method, int modes, double tol, int ncv,
                            int *st) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_options_t o;
  cm_options_init(&o);
  o.method = method;
  o.modes = modes;
  o.ncv = ncv;
  if (tol > 0)
    o.tol = tol;
  cm_report_t *r = NULL;
  *st = sys ? cm_analyze_system(&ctx, sys, NULL, &o, &r)
            : cm_analyze(&ctx, s, &o, &r);
  if (*st)
    fprintf(stderr, "  status %d: %s\n", *st, ctx.message);
  return r;
}

static cm_report_t *run(const cm_scene_t *s, const cm_system_t *sys, int method,
                        int modes, double tol, int *st) {
  return run_ncv(s, sys, method, modes, tol, 0, st);
}

/* All eigenvalues of S, descending, by dsyevd on the dense S. */
static double *dense_truth(const cm_system_t *sys, int *nc) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_operator_t *op = NULL;
  CMT_EQ_INT(cm_operator_create(&ctx, sys, &op), CM_OK);
  double *S = op ? cm_operator_dense_S(&ctx, op) : NULL;
  int m = op ? cm_operator_rows(op) : 0;
  double *w = malloc(sizeof(double) * ((size_t)m + 1));
  CMT_TRUE(S && w);
  if (S && w)
    CMT_EQ_INT(LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'N', 'U', m, S, m, w), 0);
  for (int i = 0; i < m / 2; i++) { /* descending */
    double t = w[i];
    w[i] = w[m - 1 - i], w[m - 1 - i] = t;
  }
  free(S);
  cm_operator_destroy(&op);
  *nc = m;
  return w;
}

static double *scene_truth(const cm_scene_t *s, int *nc) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL;
  CMT_EQ_INT(cm_system_assemble(&ctx, s, &sys), CM_OK);
  double *w = sys ? dense_truth(sys, nc) : NULL;
  cm_system_destroy(&sys);
  return w;
}

static void scale_stiffness(cm_scene_t *s, double a) {
  for (int c = 0; c < s->ncontacts; c++)
    s->contacts[c].stiffness *= a;
}

/* Every listed mode against the truth (descending eigenvalues), its
 * residual below the acceptance level, and the report converged. */
static void check_modes(const cm_report_t *r, const double *lam, int k,
                        double scale, double rel, double tol) {
  CMT_TRUE(r != NULL);
  if (!r)
    return;
  CMT_EQ_INT(r->status, CM_OK);
  CMT_EQ_INT(r->converged, 1);
  CMT_EQ_INT(r->nmodes, k);
  for (int i = 0; i < r->nmodes && i < k; i++) {
    CMT_REL(r->modes[i].omega, sqrt(lam[i] * scale), rel);
    CMT_TRUE(isfinite(r->modes[i].residual));
    CMT_LE(r->modes[i].residual, 1e3 * (tol > 0 ? tol : 1e-10) + 1e-12);
  }
  CMT_REL(r->omega_max, sqrt(lam[0] * scale), rel);
  CMT_LE(r->omega_lower, r->omega_max * (1 + 1e-12));
  CMT_LE(r->omega_max, r->omega_upper * (1 + 1e-12));
}

/* ---- 1. extreme scales
 * -------------------------------------------------------- */

/* pile3d with every stiffness times a: 1e94 (lambda_max ~ 8e103: no modes,
 * omega_max 0, status ok before), 1e-180 (~8e-171: 58% low with residual
 * 0), and the ends of the accepted range k/m ~ 1e150 and 1e-150. */
CM_TEST(unsafe_extreme_scales) {
  cm_scene_t *s = cmt_data_scene("pile3d.json");
  int nc = 0;
  double *lam = s ? scene_truth(s, &nc) : NULL;
  const double a[] = {1e94, 1e-180, 1e141, 1e-159, 1e-150};
  for (int i = 0; lam && i < (int)(sizeof a / sizeof a[0]); i++) {
    cm_scene_t *t = cm_scene_copy(s);
    scale_stiffness(t, a[i]);
    for (int method = CM_METHOD_ARPACK; method <= CM_METHOD_LANCZOS;
         method += 2) {
      int st;
      cm_report_t *r = run(t, NULL, method, 6, 0, &st);
      fprintf(stderr, "  scale %g method %d: omega_max %.17g\n", a[i], method,
              r ? r->omega_max : -1);
      check_modes(r, lam, 6, a[i], 1e-9, 0);
      cm_report_destroy(&r);
    }
    cm_scene_destroy(&t);
  }
  free(lam);
  cm_scene_destroy(&s);
}

/* ---- 2. the convergence floor
 * ------------------------------------------------ */

/* An FCC crystal in slow units (lambda_max ~ 1e-13, below the old absolute
 * floor eps^2/3 ~ 3.7e-11): was ok with residuals up to 7.5e-2 and omega
 * 0.30% low. */
CM_TEST(unsafe_small_lambda_floor) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_crystal_options_t co;
  cm_crystal_options_init(&co);
  co.lattice = CM_LATTICE_FCC;
  co.nx = co.ny = co.nz = 5;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_crystal(&ctx, &co, &s), CM_OK);
  int nc = 0;
  double *lam = s ? scene_truth(s, &nc) : NULL;
  double a = 1e-13 / (lam ? lam[0] : 1);
  scale_stiffness(s, a);
  for (int method = CM_METHOD_ARPACK; lam && method <= CM_METHOD_LANCZOS;
       method += 2) {
    int st;
    cm_report_t *r = run(s, NULL, method, 6, 0, &st);
    check_modes(r, lam, 6, a, 1e-9, 0);
    cm_report_destroy(&r);
  }
  free(lam);
  cm_scene_destroy(&s);
}

/* ---- systems built from their eigen-decomposition ---------------------------
 */

/* x <- H x, H = I - 2 v v^T / (v . v). */
static void householder(int n, const double *v, double *x) {
  double vv = 0, vx = 0;
  for (int i = 0; i < n; i++)
    vv += v[i] * v[i], vx += v[i] * x[i];
  for (int i = 0; vv > 0 && i < n; i++)
    x[i] -= 2 * vx / vv * v[i];
}

#define RNG_SEED 0x9e3779b97f4a7c15ULL
static uint64_t rng = RNG_SEED;
/* Each test that draws starts the stream afresh: its systems are the same
 * whichever tests ran before it in the process (ctest runs one a process,
 * `cmodes_tests` all in one). */
static void gauss_reset(void) { rng = RNG_SEED; }
static double gauss(void) { /* xorshift64* and Box-Muller */
  double u[2];
  for (int k = 0; k < 2; k++) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    u[k] = ((double)((rng * 2685821657736338717ULL) >> 11) + 0.5) /
           9007199254740992.0;
  }
  return sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

/* The system M = I (n = nc dofs), K = I, J = U diag(sqrt d): S = U diag(d)
 * U^T, U a product of nh Householder reflections (vectors hv, nc x nh,
 * column-major). Its J is dense. */
static cm_system_t *system_from_eig(int nc, const double *d, const double *hv,
                                    int nh) {
  int n = nc;
  int *Mp = malloc(sizeof(int) * (size_t)(n + 1)),
      *Mi = malloc(sizeof(int) * (size_t)n);
  double *Mx = malloc(sizeof(double) * (size_t)n),
         *k = malloc(sizeof(double) * (size_t)nc);
  int *Jp = malloc(sizeof(int) * (size_t)(nc + 1));
  int *Jj = malloc(sizeof(int) * (size_t)nc * (size_t)n);
  double *Jx = malloc(sizeof(double) * (size_t)nc * (size_t)n);
  double *U = calloc((size_t)nc * (size_t)nc, sizeof(double)); /* columns */
  for (int j = 0; j < n; j++)
    Mp[j] = j, Mi[j] = j, Mx[j] = 1;
  Mp[n] = n;
  for (int c = 0; c < nc; c++) { /* U e_c, reflections applied last first */
    U[(size_t)c * nc + c] = 1;
    for (int h = nh - 1; h >= 0; h--)
      householder(nc, hv + (size_t)h * nc, U + (size_t)c * nc);
  }
  for (int r = 0; r < nc; r++) { /* J_rj = U_rj sqrt(d_j) */
    k[r] = 1;
    Jp[r] = r * n;
    for (int j = 0; j < n; j++) {
      Jj[(size_t)r * n + j] = j;
      Jx[(size_t)r * n + j] = U[(size_t)j * nc + r] * sqrt(d[j]);
    }
  }
  Jp[nc] = nc * n;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL;
  CMT_EQ_INT(
      cm_system_from_matrices(&ctx, n, nc, Mp, Mi, Mx, Jp, Jj, Jx, k, &sys),
      CM_OK);
  free(Mp), free(Mi), free(Mx), free(k), free(Jp), free(Jj), free(Jx), free(U);
  return sys;
}

/* ---- 3. a top mode orthogonal to the old start vector
 * ------------------------ */

/* The old start vector (before issue 13): u_i = cm__hash_uniform(seed, i)
 * with seed "cmodes" for S, i the global row (splitmix64 of splitmix64(seed)
 * ^ i * 0xd1b54a32d192ed03, mapped to (-1, 1)). */
static uint64_t splitmix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static double old_start(uint64_t i) {
  uint64_t h =
      splitmix(splitmix(0x636d6f646573ULL) ^ (i * 0xd1b54a32d192ed03ULL));
  return ((double)(h >> 11) + 0.5) / 9007199254740992.0 * 2.0 - 1.0;
}

/* S = H diag(d) H with H e_1 = q, q orthogonal to the old start: Lanczos
 * from that start never sees the top mode (it converged on mode 2, omega
 * 1.2% low by default, 13% with tol 1e-6, status ok). */
CM_TEST(unsafe_start_orthogonal) {
  gauss_reset();
  enum { NC = 300 };
  double u[NC], q[NC], v[NC], d[NC], uu = 0, uq = 0;
  for (int i = 0; i < NC; i++) {
    u[i] = old_start((uint64_t)i);
    q[i] = gauss();
    uu += u[i] * u[i], uq += u[i] * q[i];
  }
  double nq = 0;
  for (int i = 0; i < NC; i++) /* q orthogonal to u, unit */
    q[i] -= uq / uu * u[i], nq += q[i] * q[i];
  for (int i = 0; i < NC; i++)
    q[i] /= sqrt(nq), v[i] = (i == 0) - q[i]; /* H e_1 = q */
  d[0] = 1.0; /* modes 2-7 well above the rest: they converge before
                rounding can feed the hidden top mode in */
  for (int i = 1; i < NC; i++) /* mode 2 at 0.976: omega 1.2% below */
    d[i] = i < 8 ? 0.976 - 0.01 * (i - 1) : 0.5 - 0.4 * (double)(i - 8) / NC;
  cm_system_t *sys = system_from_eig(NC, d, v, 1);
  int nc = 0;
  double *lam = sys ? dense_truth(sys, &nc) : NULL;
  double dot = 0;
  for (int i = 0; i < NC; i++)
    dot += q[i] * u[i];
  CMT_LE(fabs(dot), 1e-12 * sqrt(uu)); /* the adversarial property */
  for (int i = 0; lam && i < 6; i++)
    CMT_REL(lam[i], d[i], 1e-12); /* the dense truth is the construction */
  const double tols[] = {0, 1e-6};
  for (int t = 0; lam && t < 2; t++)
    for (int method = CM_METHOD_ARPACK; method <= CM_METHOD_LANCZOS;
         method += 2) {
      int st;
      cm_report_t *r = run(NULL, sys, method, 6, tols[t], &st);
      check_modes(r, lam, 6, 1.0, tols[t] > 0 ? 1e-6 : 1e-9, tols[t]);
      cm_report_destroy(&r);
    }
  free(lam);
  cm_system_destroy(&sys);
}

/* ---- 4. repeated modes
 * ---------------------------------------------------------- */

/* A top eigenvalue of multiplicity p (2, 3, 6) in a random orthogonal
 * basis, and the rest distinct, or in few distinct values (the Krylov
 * space then breaks down after a few steps): every copy within the top 6
 * is listed. */
CM_TEST(unsafe_repeated_modes) {
  gauss_reset();
  enum { NC = 150, NH = 3 };
  const int mult[] = {2, 3, 6};
  double d[NC], hv[NC * NH];
  for (int i = 0; i < NC * NH; i++)
    hv[i] = gauss();
  for (int few = 0; few < 2; few++)
    for (int t = 0; t < 3; t++) {
      int p = mult[t];
      for (int i = 0; i < NC; i++) /* ascending below the top, or 3 values */
        d[i] = i < p ? 2.0
               : few ? (i % 3 == 0   ? 1.5
                        : i % 3 == 1 ? 1.0
                                     : 0.5)
                     : 1.9 - 1.5 * (double)(i - p) / NC;
      cm_system_t *sys = system_from_eig(NC, d, hv, NH);
      int nc = 0;
      double *lam = sys ? dense_truth(sys, &nc) : NULL;
      for (int i = 0; lam && i < p; i++)
        CMT_REL(lam[i], 2.0, 1e-12);
      /* ARPACK's result goes through the same search for copies */
      for (int method = CM_METHOD_ARPACK; lam && method <= CM_METHOD_LANCZOS;
           method += CM_METHOD_LANCZOS - CM_METHOD_ARPACK) {
        int st;
        cm_report_t *r = run(NULL, sys, method, 6, 0, &st);
        fprintf(stderr, "  multiplicity %d%s, %s: %d modes, %d matvecs\n", p,
                few ? " (3 other values)" : "",
                method == CM_METHOD_ARPACK ? "arpack" : "lanczos",
                r ? r->nmodes : -1, r ? r->matvecs : -1);
        check_modes(r, lam, 6, 1.0, 1e-9, 0);
        /* one Krylov sequence lists one copy: the others came from the
         * search, whose products the report counts among matvecs */
        CMT_TRUE(r && r->search_matvecs > 0 && r->search_matvecs < r->matvecs);
        cm_report_destroy(&r);
      }
      /* one mode after a Gaussian start: no search (a copy of the top
       * value would not be listed) */
      int st1;
      cm_report_t *r1 =
          lam ? run(NULL, sys, CM_METHOD_LANCZOS, 1, 0, &st1) : NULL;
      CMT_TRUE(!lam || (r1 && r1->search_matvecs == 0 && r1->matvecs > 0));
      cm_report_destroy(&r1);
      free(lam);
      cm_system_destroy(&sys);
    }
}

/* A cube of identical spheres (simple cubic, 6^3): its top eigenvalue has
 * multiplicity 8; Lanczos listed 3 copies of it among its top 8 (and
 * ARPACK, before its result went through the same search, 2). */
CM_TEST(unsafe_repeated_modes_sc_crystal) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_crystal_options_t co;
  cm_crystal_options_init(&co);
  co.lattice = CM_LATTICE_SC;
  co.nx = co.ny = co.nz = 6;
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_generate_crystal(&ctx, &co, &s), CM_OK);
  int nc = 0;
  double *lam = s ? scene_truth(s, &nc) : NULL;
  for (int i = 1; lam && i < 8; i++)
    CMT_REL(lam[i], lam[0], 1e-12); /* the truth: 8 copies */
  for (int method = CM_METHOD_ARPACK; lam && method <= CM_METHOD_LANCZOS;
       method += CM_METHOD_LANCZOS - CM_METHOD_ARPACK) {
    int st;
    cm_report_t *r = run(s, NULL, method, 8, 0, &st);
    check_modes(r, lam, 8, 1.0, 1e-9, 0);
    cm_report_destroy(&r);
  }
  free(lam);
  cm_scene_destroy(&s);
}

/* ---- 6. the probabilistic bound
 * ------------------------------------------------ */

/* On the data scenes, crystals (breakdowns), the adversarial systems above
 * and the scaled piles: dense truth <= omega_upper_probabilistic <=
 * omega_upper, the probabilistic certified step <= the critical one of the
 * truth, and (the point of it) within a few percent of it on the pile. */
static void check_prob(const cm_report_t *r, double lam_max, const char *what) {
  CMT_TRUE(r != NULL);
  if (!r)
    return;
  double w = sqrt(lam_max), wp = r->omega_upper_prob;
  fprintf(stderr,
          "  %-28s omega %.10g  prob %.10g (%.4f)  gersh %.10g  "
          "%d steps\n",
          what, w, wp, w / wp, r->omega_upper, r->prob_steps);
  CMT_LE(w * (1 - 1e-13), wp);
  CMT_LE(wp, r->omega_upper * (1 + 1e-15));
  CMT_REL(r->failure_probability, 1e-9, 0);
  if (!r->dashpots)
    CMT_LE(r->central_difference.certified_prob_s, 2 / w * (1 + 1e-13));
  CMT_LE(r->rk4.certified_prob_s, 2 * sqrt(2) / w * (1 + 1e-13));
}

CM_TEST(unsafe_probabilistic_bound) {
  gauss_reset();
  const char *files[] = {
      "pile3d.json",     "pile2d.json",        "crystal_fcc.json",
      "crystal_sc.json", "crystal_hex.json",   "bar2d.json",
      "bar3d.json",      "stack_spheres.json", "fleet.json"};
  for (int f = 0; f < (int)(sizeof files / sizeof files[0]); f++) {
    cm_scene_t *s = cmt_data_scene(files[f]);
    int nc = 0, st;
    double *lam = s ? scene_truth(s, &nc) : NULL;
    for (int method = CM_METHOD_AUTO; lam && method <= CM_METHOD_LANCZOS;
         method += 3) {
      cm_report_t *r = run(s, NULL, method, 6, 0, &st);
      check_prob(r, lam[0], files[f]);
      if (f == 0 && method == CM_METHOD_LANCZOS && r) /* worth using */
        CMT_LE(0.97, sqrt(lam[0]) / r->omega_upper_prob);
      cm_report_destroy(&r);
    }
    /* the extreme scales */
    for (int e = -1; lam && f == 0 && e <= 1; e += 2) {
      double a = e < 0 ? 1e-180 : 1e94;
      cm_scene_t *t = cm_scene_copy(s);
      scale_stiffness(t, a);
      cm_report_t *r = run(t, NULL, CM_METHOD_LANCZOS, 6, 0, &st);
      check_prob(r, lam[0] * a, e < 0 ? "pile3d x 1e-180" : "pile3d x 1e94");
      cm_report_destroy(&r);
      cm_scene_destroy(&t);
    }
    free(lam);
    cm_scene_destroy(&s);
  }
  /* a repeated top (breakdown after a few steps) */
  enum { NC = 150 };
  double d[NC], hv[NC * 3];
  for (int i = 0; i < NC * 3; i++)
    hv[i] = gauss();
  for (int i = 0; i < NC; i++)
    d[i] = i < 3 ? 2.0 : i % 2 ? 1.0 : 0.5;
  cm_system_t *sys = system_from_eig(NC, d, hv, 3);
  int st;
  cm_report_t *r = sys ? run(NULL, sys, CM_METHOD_LANCZOS, 6, 0, &st) : NULL;
  check_prob(r, 2.0, "3 values, top triple");
  cm_report_destroy(&r);
  cm_system_destroy(&sys);
}

/* A basis set below the bound's steps (--ncv 16): the first cycle fills
 * it, the bound's remaining steps run plain before the first restart
 * (lanczos.c, lz_pb_tail, which must leave the restart its residual
 * vector), then the solve goes on. The bound against the dense truth,
 * taken past the basis, the modes to the tolerance, and no fallback. */
CM_TEST(unsafe_probabilistic_bound_small_basis) {
  const char *files[] = {"pile3d.json", "pile2d.json", "fcc 7^3 (generated)"};
  for (int f = 0; f < (int)(sizeof files / sizeof files[0]); f++) {
    cm_scene_t *s = NULL;
    if (f < 2) {
      s = cmt_data_scene(files[f]);
    } else { /* repeated top values: breakdowns, copies */
      cm_context_t gctx;
      cm_context_init(&gctx);
      cm_crystal_options_t co;
      cm_crystal_options_init(&co);
      co.nx = co.ny = co.nz = 7;
      CMT_EQ_INT(cm_generate_crystal(&gctx, &co, &s), CM_OK);
    }
    int nc = 0, st = 0;
    double *lam = s ? scene_truth(s, &nc) : NULL;
    cm_report_t *r =
        lam ? run_ncv(s, NULL, CM_METHOD_LANCZOS, 6, 0, 16, &st) : NULL;
    CMT_EQ_INT(st, CM_OK);
    if (r) {
      char what[64];
      snprintf(what, sizeof what, "%s, ncv 16", files[f]);
      check_prob(r, lam[0], what);
      CMT_TRUE(r->prob_steps > 16);
      check_modes(r, lam, 6, 1.0, 1e-9, 0);
      /* no fallback to ARPACK: a restart that lost its residual vector
       * fails and falls back (seen with the tail writing into V[:, J]) */
      CMT_TRUE(r->method && strcmp(r->method, "arpack") != 0);
    }
    cm_report_destroy(&r);
    free(lam);
    cm_scene_destroy(&s);
  }
}

/* One mode: the pair converges before the bound's steps are done, and the
 * rest of them run as plain steps that keep no basis (lanczos.c,
 * lz_pb_tail). The checks of check_prob against the dense truth, at the
 * default tol and at 1e-6 (earlier convergence, a longer tail), the top
 * value to the tolerance, and the bound's steps all taken (the products
 * are those steps: the pair converged within them). */
static void check_one_mode(const cm_scene_t *s, const cm_system_t *sys,
                           double lam_max, const char *name, double good) {
  for (int t = 0; t < 2; t++) {
    int st;
    cm_report_t *r = run(s, sys, CM_METHOD_LANCZOS, 1, t ? 1e-6 : 0, &st);
    char what[64];
    snprintf(what, sizeof what, "%s, 1 mode%s", name, t ? ", tol 1e-6" : "");
    check_prob(r, lam_max, what);
    if (!r)
      continue;
    CMT_REL(r->omega_max * r->omega_max, lam_max, t ? 2e-6 : 1e-9);
    CMT_EQ_INT(r->nmodes, 1);
    CMT_EQ_INT(r->matvecs, r->prob_steps);
    if (good > 0) /* worth using */
      CMT_LE(good, sqrt(lam_max) / r->omega_upper_prob);
    cm_report_destroy(&r);
  }
}

CM_TEST(unsafe_probabilistic_bound_one_mode) {
  gauss_reset();
  const char *files[] = {"pile3d.json", "pile2d.json"};
  for (int f = 0; f < 2; f++) {
    cm_scene_t *s = cmt_data_scene(files[f]);
    int nc = 0;
    double *lam = s ? scene_truth(s, &nc) : NULL;
    if (lam)
      check_one_mode(s, NULL, lam[0], files[f], 0.97);
    free(lam);
    cm_scene_destroy(&s);
  }
  /* 40 distinct values, the top one 10 times: the Krylov space of the
   * start ends after 40 steps in exact arithmetic, within the tail, where
   * the plain steps lose orthogonality instead */
  enum { NC = 400 };
  double d[NC], hv[NC * 3];
  for (int i = 0; i < NC * 3; i++)
    hv[i] = gauss();
  for (int i = 0; i < NC; i++)
    d[i] = 1.0 + (i % 40) / 40.0;
  cm_system_t *sys = system_from_eig(NC, d, hv, 3);
  if (sys)
    check_one_mode(NULL, sys, 1.975, "40 values, top x10", 0);
  cm_system_destroy(&sys);
}

/* A solve that converges on the wrong mode (a warm start that is mode 2
 * of the adversarial system above, a loose tol): the search for missed
 * copies looks at the complement of the list and finds the top there. */
CM_TEST(unsafe_warm_start_missed_top) {
  gauss_reset();
  enum { NC = 300 };
  /* several draws of the system (the first one alone once passed while a
   * later one showed the check below mistaking the top, found to 3.5e-6
   * at tol 1e-3, for a missed one) */
  for (int draw = 0; draw < 6; draw++) {
    double q[NC], v[NC], d[NC], z2[NC], nq = 0;
    for (int i = 0; i < NC; i++)
      q[i] = gauss(), nq += q[i] * q[i];
    for (int i = 0; i < NC; i++)
      q[i] /= sqrt(nq), v[i] = (i == 0) - q[i]; /* H e_1 = q */
    for (int i = 0; i < NC; i++)
      d[i] = i == 0 ? 1.0 : i < 8 ? 0.976 - 0.01 * (i - 1) : 0.3;
    for (int i = 0; i < NC; i++) /* mode 2: H e_2 */
      z2[i] = i == 1;
    householder(NC, v, z2);
    cm_system_t *sys = system_from_eig(NC, d, v, 1);
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_options_t o;
    cm_options_init(&o);
    o.method = CM_METHOD_LANCZOS;
    o.modes = 1;
    o.tol = 1e-3;
    o.warm_start = z2;
    cm_report_t *r = NULL;
    int st = sys ? cm_analyze_system(&ctx, sys, NULL, &o, &r) : -1;
    if (st != CM_OK)
      fprintf(stderr, "  draw %d: %s\n", draw, ctx.message);
    CMT_EQ_INT(st, CM_OK);
    if (r) {
      CMT_REL(r->omega_max, 1.0, 1e-3);      /* not sqrt(0.976) = 0.988 */
      CMT_TRUE(r->omega_max <= 1.0 + 1e-12); /* a Rayleigh quotient */
    }
    cm_report_destroy(&r);
    cm_system_destroy(&sys);
  }
}
