/* counts_ref.h: the dense truth of issue #13's checks and the random scenes
 * of the property test, shared by tests/test_counts.c (CI: 1000 scenes) and
 * bench/fuzz_counts.c (--scenes N). Header-only (static functions): built
 * from the scene's geometry alone, never from cmodes' assembly. */
#ifndef COUNTS_REF_H
#define COUNTS_REF_H

#include "cmodes.h"

#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the dense truth
 * ----------------------------------------------------------- */

/* The problem built from the scene's geometry alone: every dof of every
 * moving body (nothing dropped), J with normal and tangent rows, and M^-1
 * exactly from the principal moments (the tests give body-frame inertias in
 * principal axes: M^-1 = R diag(1/I) R^T), so that a near-singular tensor is
 * no obstacle to the truth. S = K^1/2 J M^-1 J^T K^1/2 is solved by LAPACK
 * dsyevd; rank J by dgesdd with numpy's tolerance. */
typedef struct {
  int ndof, nrow; /* all dofs of moving bodies, rows of J */
  double *lambda; /* eigenvalues of S, descending, size nrow */
  int rank;       /* rank of J */
  int clear;      /* 1: no singular value within a factor 0.1..1e3 of
                     numpy's tolerance (the rank does not hang on it) */
} ref_t;

static inline void ref_free(ref_t *R) { free(R->lambda); }

static inline void quat_R(const double *q, double *R) {
  double w = q[0], x = q[1], y = q[2], z = q[3];
  R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z);
  R[2] = 2 * (x * z + w * y), R[3] = 2 * (x * y + w * z);
  R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
  R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x);
  R[8] = 1 - 2 * (x * x + y * y);
}

/* Tangents of the unit n: 2D (-n_y, n_x); 3D an orthonormal pair of the
 * tangent plane (any pair gives the same spectrum). */
static inline void ref_tangents(int dim, const double *n, double *t1,
                                double *t2) {
  if (dim == 2) {
    t1[0] = -n[1], t1[1] = n[0], t1[2] = 0;
    return;
  }
  double a[3] = {fabs(n[0]) < 0.9 ? 1 : 0, fabs(n[0]) < 0.9 ? 0 : 1, 0};
  double d = a[0] * n[0] + a[1] * n[1] + a[2] * n[2], l = 0;
  for (int i = 0; i < 3; i++)
    t1[i] = a[i] - d * n[i], l += t1[i] * t1[i];
  for (int i = 0; i < 3; i++)
    t1[i] /= sqrt(l);
  t2[0] = n[1] * t1[2] - n[2] * t1[1];
  t2[1] = n[2] * t1[0] - n[0] * t1[2];
  t2[2] = n[0] * t1[1] - n[1] * t1[0];
}

static inline int ref_build(const cm_scene_t *s, ref_t *R) {
  int dim = s->dim, per = dim == 2 ? 3 : 6, nb = s->nbodies;
  int *col = malloc(sizeof(int) * (nb + 1)), ndof = 0, nrow = 0;
  for (int b = 0; b < nb; b++)
    col[b] = s->bodies[b].fixed ? -1 : (ndof += per) - per;
  for (int c = 0; c < s->ncontacts; c++)
    nrow += s->contacts[c].stiffness_t > 0 ? dim : 1;
  R->ndof = ndof, R->nrow = nrow;
  double *J = calloc((size_t)nrow * ndof + 1, sizeof(double)); /* col-major */
  double *Mi = calloc((size_t)ndof * ndof + 1, sizeof(double));
  double *k = malloc(sizeof(double) * (nrow + 1));
  /* M^-1 */
  for (int b = 0; b < nb; b++) {
    if (col[b] < 0)
      continue;
    const cm_body_t *bd = &s->bodies[b];
    int c0 = col[b];
    for (int d = 0; d < (dim == 2 ? 2 : 3); d++)
      Mi[(size_t)(c0 + d) * ndof + c0 + d] = 1 / bd->mass;
    if (dim == 2) {
      Mi[(size_t)(c0 + 2) * ndof + c0 + 2] = 1 / bd->inertia[0];
      continue;
    }
    double Rm[9];
    quat_R(bd->orientation, Rm);
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        double v = 0;
        for (int l = 0; l < 3; l++)
          v += Rm[3 * i + l] * Rm[3 * j + l] / bd->inertia[4 * l];
        Mi[(size_t)(c0 + 3 + j) * ndof + c0 + 3 + i] = v;
      }
  }
  /* J and k */
  int r = 0;
  for (int c = 0; c < s->ncontacts; c++) {
    const cm_contact_t *ct = &s->contacts[c];
    double dir[3][3], t2[3];
    memcpy(dir[0], ct->normal, sizeof dir[0]);
    if (dim == 2)
      dir[0][2] = 0;
    int nr = ct->stiffness_t > 0 ? dim : 1;
    if (nr > 1) {
      ref_tangents(dim, dir[0], dir[1], t2);
      if (dim == 3)
        memcpy(dir[2], t2, sizeof t2);
    }
    for (int j = 0; j < nr; j++, r++) {
      k[r] = j ? ct->stiffness_t : ct->stiffness;
      int side[2] = {ct->a, ct->b};
      for (int sd = 0; sd < 2; sd++) {
        int b = side[sd];
        if (b == CM_WORLD || col[b] < 0)
          continue;
        double sg = sd ? -1 : 1, *x = s->bodies[b].position, *d = dir[j];
        double rr[3] = {ct->point[0] - x[0], ct->point[1] - x[1],
                        dim == 3 ? ct->point[2] - x[2] : 0};
        double row[6];
        int nd = 0;
        for (int i = 0; i < dim; i++)
          row[nd++] = d[i];
        if (dim == 2)
          row[nd++] = rr[0] * d[1] - rr[1] * d[0];
        else {
          row[nd++] = rr[1] * d[2] - rr[2] * d[1];
          row[nd++] = rr[2] * d[0] - rr[0] * d[2];
          row[nd++] = rr[0] * d[1] - rr[1] * d[0];
        }
        for (int i = 0; i < nd; i++)
          J[(size_t)(col[b] + i) * nrow + r] += sg * row[i];
      }
    }
  }
  /* S = K^1/2 J M^-1 J^T K^1/2 */
  double *JM = calloc((size_t)nrow * ndof + 1, sizeof(double));
  double *S = calloc((size_t)nrow * nrow + 1, sizeof(double));
  for (int j = 0; j < ndof; j++)
    for (int l = 0; l < ndof; l++) {
      double m = Mi[(size_t)j * ndof + l];
      if (m != 0)
        for (int i = 0; i < nrow; i++)
          JM[(size_t)j * nrow + i] += J[(size_t)l * nrow + i] * m;
    }
  for (int a = 0; a < nrow; a++)
    for (int b = 0; b < nrow; b++) {
      double v = 0;
      for (int j = 0; j < ndof; j++)
        v += JM[(size_t)j * nrow + a] * J[(size_t)j * nrow + b];
      S[(size_t)b * nrow + a] = sqrt(k[a]) * v * sqrt(k[b]);
    }
  R->lambda = malloc(sizeof(double) * (nrow + 1));
  int ok = nrow == 0 || LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'N', 'U', nrow, S,
                                       nrow, R->lambda) == 0;
  for (int i = 0; i < nrow / 2; i++) { /* descending */
    double t = R->lambda[i];
    R->lambda[i] = R->lambda[nrow - 1 - i], R->lambda[nrow - 1 - i] = t;
  }
  /* rank J */
  int mn = nrow < ndof ? nrow : ndof;
  double *sv = malloc(sizeof(double) * (mn + 1));
  R->rank = 0, R->clear = 1;
  if (mn > 0 && LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', nrow, ndof, J, nrow, sv,
                               NULL, 1, NULL, 1) == 0) {
    double tol = sv[0] * (nrow > ndof ? nrow : ndof) * 2.220446049250313e-16;
    for (int i = 0; i < mn; i++) {
      R->rank += sv[i] > tol;
      if (sv[i] > 0.1 * tol && sv[i] < 1e3 * tol)
        R->clear = 0;
    }
  } else if (mn > 0)
    ok = 0;
  free(sv), free(J), free(Mi), free(k), free(JM), free(S), free(col);
  return ok ? 0 : -1;
}

static inline int add_body(cm_scene_t *s, double m, const double *I3,
                           const double *x, const double *q) {
  cm_body_t b;
  cm_body_init(&b);
  b.mass = m;
  memset(b.inertia, 0, sizeof b.inertia);
  b.inertia[0] = I3[0];
  if (s->dim == 3)
    b.inertia[4] = I3[1], b.inertia[8] = I3[2];
  memcpy(b.position, x, sizeof b.position);
  if (q)
    memcpy(b.orientation, q, sizeof b.orientation);
  return cm_scene_add_body(NULL, s, &b, NULL);
}

static inline void add_contact(cm_scene_t *s, int a, int b, const double *p,
                               const double *n, double k, double kt) {
  cm_contact_t c;
  cm_contact_init(&c);
  c.a = a, c.b = b;
  memcpy(c.point, p, sizeof c.point);
  memcpy(c.normal, n, sizeof c.normal);
  c.stiffness = k, c.stiffness_t = kt;
  cm_scene_add_contact(NULL, s, &c, NULL);
}

/* ---- random scenes ----------------------------------------------------------
 */

typedef struct {
  uint64_t s; /* splitmix64 state */
} fz_rng_t;

static inline uint64_t fz_next(fz_rng_t *g) {
  uint64_t z = (g->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static inline double fz_u(fz_rng_t *g) { /* [0, 1) */
  return (double)(fz_next(g) >> 11) / 9007199254740992.0;
}
static inline double fz_range(fz_rng_t *g, double a, double b) {
  return a + (b - a) * fz_u(g);
}
static inline int fz_int(fz_rng_t *g, int n) { return (int)(fz_u(g) * n); }

/* A random unit vector (in-plane in 2D). */
static inline void fz_unit(fz_rng_t *g, int dim, double *v) {
  double l;
  do {
    l = 0;
    for (int i = 0; i < 3; i++) {
      v[i] = i < dim ? fz_range(g, -1, 1) : 0;
      l += v[i] * v[i];
    }
  } while (l < 0.01 || l > 1);
  for (int i = 0; i < 3; i++)
    v[i] /= sqrt(l);
}

typedef struct {
  int wide;    /* wide mass and stiffness ranges */
  int copies;  /* the sub-structure repeated (1: once) */
  double cond; /* largest inertia condition number of a rotated body */
  int tiny;    /* some body has a tiny inertia */
  int tangent; /* some contact has a tangential spring */
} fz_info_t;

/* Scene number `seed`: 2D or 3D; 1-7 moving bodies (sometimes a fixed one)
 * with ordinary, tiny (I / (m R^2) down to 1e-26) or, in 3D, near-singular
 * (cond up to 1e12) rotated inertias; contacts to the world and between
 * bodies, through the centre (sphere-like spins), with a lever arm of
 * about 1e-12 R, or anywhere; tangential springs on some; duplicated
 * contacts (redundant gaps); and sometimes the whole sub-structure copied
 * (identical components: repeated eigenvalues). */
static inline cm_scene_t *fz_scene(uint64_t seed, fz_info_t *info) {
  fz_rng_t g = {seed * 0x2545f4914f6cdd1dULL + 1};
  memset(info, 0, sizeof *info);
  info->cond = 1;
  int dim = 2 + (int)(seed & 1);
  cm_scene_t *s = cm_scene_create(dim);
  info->wide = fz_u(&g) < 0.3;
  double lm0 = info->wide ? -6 : -2, lm1 = info->wide ? 6 : 2;
  double lk0 = info->wide ? -1 : 3, lk1 = info->wide ? 10 : 6;
  double L = fz_u(&g) < 0.2 ? pow(10, fz_range(&g, -3, 2)) : 1;
  int nb = 1 + fz_int(&g, 7);
  int fixed = fz_u(&g) < 0.15 ? nb : -1; /* a fixed body after the others */
  double R[8], pos[8][3];
  for (int b = 0; b < nb + (fixed >= 0); b++) {
    cm_body_t bd;
    cm_body_init(&bd);
    double m = pow(10, fz_range(&g, lm0, lm1));
    R[b] = L * fz_range(&g, 0.2, 1.0);
    int kind = fz_int(&g, 10); /* 0-5 ordinary, 6-7 tiny, 8-9 near-singular */
    memset(bd.inertia, 0, sizeof bd.inertia);
    for (int i = 0; i < 3; i++) {
      double f = fz_range(&g, 0.1, 0.6);
      if (kind >= 6 && kind < 8) {
        f = pow(10, fz_range(&g, -26, -16));
        info->tiny = 1;
      }
      bd.inertia[4 * i] = f * m * R[b] * R[b];
    }
    if (dim == 3 && kind >= 8) {
      int ax = fz_int(&g, 3);
      double c = pow(10, fz_range(&g, 6, 12));
      bd.inertia[4 * ax] /= c;
    }
    if (dim == 3 && fz_u(&g) < 0.7) {
      double q[4], l = 0;
      for (int i = 0; i < 4; i++)
        q[i] = fz_range(&g, -1, 1), l += q[i] * q[i];
      for (int i = 0; i < 4; i++)
        bd.orientation[i] = q[i] / sqrt(l);
    }
    if (dim == 3) { /* the accuracy cmodes states for this tensor */
      double lo = fmin(bd.inertia[0], fmin(bd.inertia[4], bd.inertia[8]));
      double hi = fmax(bd.inertia[0], fmax(bd.inertia[4], bd.inertia[8]));
      info->cond = fmax(info->cond, hi / lo);
    }
    bd.mass = m;
    for (int i = 0; i < 3; i++)
      pos[b][i] = bd.position[i] = i < dim ? L * fz_range(&g, -2, 2) : 0;
    bd.fixed = b == fixed;
    cm_scene_add_body(NULL, s, &bd, NULL);
  }
  int nbt = nb + (fixed >= 0);
  int ncon = 1 + fz_int(&g, 3 * nb);
  for (int c = 0; c < ncon; c++) {
    int a = fz_int(&g, nb), b = fz_u(&g) < 0.5 ? CM_WORLD : fz_int(&g, nbt);
    if (b == a)
      b = CM_WORLD;
    double n[3], p[3], t[3];
    fz_unit(&g, dim, n);
    int kind = fz_int(&g, 10);
    for (int i = 0; i < 3; i++) /* through a's centre (sphere-like) */
      p[i] = i < dim ? pos[a][i] - R[a] * n[i] : 0;
    if (kind >= 6 && kind < 8) { /* a lever arm of about 1e-12 R */
      fz_unit(&g, dim, t);
      double tn = t[0] * n[0] + t[1] * n[1] + t[2] * n[2];
      for (int i = 0; i < dim; i++)
        p[i] += 1e-12 * R[a] * fz_range(&g, 0.5, 1.5) * (t[i] - tn * n[i]);
    } else if (kind >= 8) { /* anywhere near a */
      for (int i = 0; i < dim; i++)
        p[i] += R[a] * fz_range(&g, -0.7, 0.7);
    }
    double k = pow(10, fz_range(&g, lk0, lk1));
    double kt = fz_u(&g) < 0.3 ? k * fz_range(&g, 0.2, 1.0) : 0;
    info->tangent |= kt > 0;
    add_contact(s, a, b, p, n, k, kt);
    if (fz_u(&g) < 0.15) { /* a redundant copy: a zero mode */
      add_contact(s, a, b, p, n, k * fz_range(&g, 0.5, 2), kt);
      c++;
    }
  }
  if (fz_u(&g) < 0.2) { /* the sub-structure again, shifted: a copy */
    int nb0 = s->nbodies, nc0 = s->ncontacts;
    double shift = 100 * L;
    for (int b = 0; b < nb0; b++) {
      cm_body_t bd = s->bodies[b];
      bd.position[0] += shift;
      cm_scene_add_body(NULL, s, &bd, NULL);
    }
    for (int c = 0; c < nc0; c++) {
      cm_contact_t ct = s->contacts[c];
      ct.a += nb0;
      if (ct.b != CM_WORLD)
        ct.b += nb0;
      ct.point[0] += shift;
      cm_scene_add_contact(NULL, s, &ct, NULL);
    }
    info->copies = 2;
  } else {
    info->copies = 1;
  }
  return s;
}

/* ---- the property checks ----------------------------------------------------
 */

/* Top-k multiplicities are checked strictly (on since the repeated-modes
 * search of src/spectrum/lanczos.c); -DFZ_CHECK_MULTIPLICITY=0 only
 * counts missing copies. */
#ifndef FZ_CHECK_MULTIPLICITY
#define FZ_CHECK_MULTIPLICITY 1
#endif

typedef struct {
  int scenes, failed; /* scenes checked, scenes with a failure */
  int ambiguous;      /* rank of J hanging on a tolerance: not compared */
  int multiplicity;   /* top-k copies missing (not failed unless
                         FZ_CHECK_MULTIPLICITY) */
  int refused;        /* refused scenes (there should be none) */
  double worst_rel;   /* largest |omega_max - truth| / truth */
  double worst_upper; /* smallest omega_upper / truth */
} fz_stats_t;

/* Checks one scene with options o against the dense truth; prints what
 * fails (with the seed) and returns the number of failures. */
static inline int fz_check(uint64_t seed, const cm_options_t *o,
                           fz_stats_t *st) {
  fz_info_t info;
  cm_scene_t *s = fz_scene(seed, &info);
  ref_t R = {0};
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_report_t *r = NULL;
  int fails = 0;
  st->scenes++;
#define FZ_FAIL(...)                                                           \
  do {                                                                         \
    fprintf(stderr, "fuzz seed %llu (dim %d, %d bodies, %d contacts): ",       \
            (unsigned long long)seed, s->dim, s->nbodies, s->ncontacts);       \
    fprintf(stderr, __VA_ARGS__);                                              \
    fprintf(stderr, "\n");                                                     \
    fails++;                                                                   \
  } while (0)
  if (ref_build(s, &R))
    FZ_FAIL("the dense reference failed");
  int rc = cm_analyze(&ctx, s, o, &r);
  if (rc != CM_OK) {
    st->refused++;
    FZ_FAIL("cm_analyze: %d %s", rc, ctx.message);
  }
  if (r && !fails) {
    double w = R.nrow ? sqrt(fmax(R.lambda[0], 0)) : 0;
    double d = 3.6e-15 * info.cond; /* stated accuracy of near-singular */
    double tol = 1e-8 + d;
    double rel = w > 0 ? fabs(r->omega_max - w) / w : r->omega_max;
    st->worst_rel = fmax(st->worst_rel, rel);
    if (w > 0)
      st->worst_upper = fmin(st->worst_upper, r->omega_upper / w);
    if (!(rel <= tol))
      FZ_FAIL("omega_max %.17g, truth %.17g (rel %.3g > %.3g)", r->omega_max, w,
              rel, tol);
    if (!(r->pc_omega_max <= w * (1 + tol)))
      FZ_FAIL("per-contact %.17g above the truth %.17g", r->pc_omega_max, w);
    if (!(w <= r->omega_upper * (1 + 1e-13)))
      FZ_FAIL("omega_upper %.17g below the truth %.17g", r->omega_upper, w);
    if (w > 0 && !(r->central_difference.certified_s <= 2 / w * (1 + 1e-13)))
      FZ_FAIL("certified step %.17g above the critical %.17g",
              r->central_difference.certified_s, 2 / w);
    if (!R.clear)
      st->ambiguous++;
    else if (r->zero_modes != R.nrow - R.rank ||
             r->free_motions != R.ndof - R.rank)
      FZ_FAIL("zero_modes %d free_motions %d, rank of J %d of %d x %d: "
              "expected %d and %d",
              r->zero_modes, r->free_motions, R.rank, R.nrow, R.ndof,
              R.nrow - R.rank, R.ndof - R.rank);
    /* the listed top k against the truth's top k, copies included */
    int miss = 0;
    for (int i = 0; i < r->nmodes && i < R.nrow; i++)
      if (!(fabs(r->modes[i].lambda - R.lambda[i]) <=
            (1e-7 + 2 * d) * R.lambda[0])) {
        int repeated = (i > 0 && fabs(R.lambda[i] - R.lambda[i - 1]) <=
                                     1e-7 * R.lambda[0]) ||
                       (i + 1 < R.nrow && fabs(R.lambda[i] - R.lambda[i + 1]) <=
                                              1e-7 * R.lambda[0]);
        if (repeated && !FZ_CHECK_MULTIPLICITY) {
          miss = 1;
          break;
        }
        FZ_FAIL("mode %d: lambda %.17g, truth %.17g", i, r->modes[i].lambda,
                R.lambda[i]);
        break;
      }
    st->multiplicity += miss;
  }
#undef FZ_FAIL
  st->failed += fails > 0;
  cm_report_destroy(&r);
  ref_free(&R);
  cm_scene_destroy(&s);
  return fails;
}

/* Options of scene i: the default, dense, or Lanczos forced on every
 * component it can take (dense_max 0). */
static inline void fz_options(uint64_t i, cm_options_t *o) {
  cm_options_init(o);
  switch (i % 4) {
  case 1:
    o->method = CM_METHOD_DENSE;
    break;
  case 3:
    o->method = CM_METHOD_LANCZOS, o->dense_max = 0;
    break;
  default:
    break;
  }
}

#endif
