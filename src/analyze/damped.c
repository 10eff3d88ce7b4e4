/* damped.c: the central-difference limit with the contact dashpots, from
 * the actual dashpot matrix C = J^T G J, not a modal damping ratio.
 *
 * The engines (LAMMPS, LIGGGHTS velocity Verlet) compute the dashpot force
 * from the half-step velocity. In mass-normalised coordinates, with
 * K~ = L^-1 J^T K J L^-T and C~ = L^-1 J^T G J L^-T, that scheme is stable
 * while 4 I - h^2 K~ - 2 h C~ is positive definite (a discrete energy,
 * docs/math.md), i.e. while lambda_max(h^2 K~ + 2 h C~) < 4. That operator
 * is cmodes' own S with row weights h^2 k_r + 2 h c_r, so the limit h* is
 * found with the same assembly, operator and eigen-solvers:
 *
 *   h_{i+1} = the root of a h^2 + 2 b h = 4 for the top vector at h_i,
 *             a = its Rayleigh quotient of K~, b = of C~,
 *
 * which decreases monotonically to h* from any start above it (the listed
 * modes' own damped limits are such a start: each is >= h*). The root of
 * any vector's quotients is >= h*, so early solves may be loose. The certified
 * step starts from Gershgorin bounds U_K >= lambda_max(K~), U_C >=
 * lambda_max(C~): h^2 U_K + 2 h U_C = 4 gives h_c <= h*; it is then raised
 * by bisection on the Gershgorin bound of the damped operator itself.
 *
 * The solve budget (max_seconds, what the undamped eigen-solve left of it)
 * holds here too: every loop checks it, the eigen-solves get what is left,
 * and a factorization that would not fit is not started. When it runs out,
 * h_s is the last iterate (>= h*, an upper estimate) and certified_s the
 * best certified step so far (<= h*, still safe); the report is partial
 * (CM_NOT_CONVERGED) and its warning says so. */
#include "analyze/analyze_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The budget: its end (a cm__now() time, 0 = none) and whether a step
 * was cut short by it. */
typedef struct {
  double end;
  int hit;
} cm__budget_t;

/* 1 (and hit set) when the budget is spent. */
static int cm__spent(cm__budget_t *b) {
  if (b->end > 0 && cm__now() >= b->end)
    b->hit = 1;
  return b->hit;
}

/* The top vector of h^2 K~ + 2 h C~ over all components. */
typedef struct {
  double lambda;      /* its eigenvalue */
  double a, b;        /* its Rayleigh quotients of K~ and C~ */
  int comp;           /* its component */
  double *z;          /* every component's top vector over scene rows (size
                         nz): the certified search's seeds */
  int nz;             /* size of z */
  int matvecs;        /* operator applications of all evaluations */
  int search_matvecs; /* of them, the searches for missed copies */
} cm__top_t;

/* Root h > 0 of a h^2 + 2 b h = 4: the damped limit of one mode with
 * omega^2 = a and 2 zeta omega = b. */
static double cm__damped_root(double a, double b) {
  return 4.0 / (b + sqrt(b * b + 4.0 * a));
}

/* Evaluates the top vector at h (top->z: replaced by the new vectors). */
static int cm__top_at(cm_context_t *ctx, const cm_scene_t *scene,
                      const cm_options_t *opts, double h, cm__budget_t *b,
                      cm__top_t *top) {
  cm_system_t *sys = NULL;
  cm_operator_t *op = NULL;
  cm__eig_t *eig = NULL;
  int *srow = NULL;
  double *znew = NULL;
  int st = cm__system_assemble_weighted(ctx, scene, h * h, 2.0 * h, &sys);
  if (!st)
    st = cm_operator_create(ctx, sys, &op);
  if (!st) {
    eig = calloc((size_t)sys->ncomp + 1, sizeof *eig);
    srow = cm__scene_rows(sys);
    znew = calloc((size_t)sys->nc + 1, sizeof(double));
    if (!eig || !srow || !znew)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  if (!st) {
    cm_options_t o = *opts;
    o.modes = 1;
    /* from a Gaussian start, not the last top vector: a warm-started
     * one-mode solve is followed by a search that its start missed no
     * higher mode (a probe from a fresh Gaussian start, about as long as
     * a solve), which a Gaussian start does not need (lz_search); on the
     * LAMMPS decks of data/lammps 18-40% fewer products in all
     * (docs/performance.md, issue 19 session 23), the same h */
    o.warm_start = NULL;
    if (b->end > 0) /* what is left of the budget */
      o.max_seconds = fmax(b->end - cm__now(), 1e-300);
    st = cm__solve_all(ctx, op, sys, &o, eig);
    if (st == CM_NOT_CONVERGED) { /* the partial vector still serves */
      cm_context_clear(ctx);
      cm__spent(b); /* a solve stopped by the budget: the last one */
      st = CM_OK;
    }
  }
  if (!st) { /* the new vectors replace the last ones */
    free(top->z);
    top->z = znew;
    top->nz = sys->nc;
    znew = NULL;
    top->lambda = -1, top->comp = -1;
    for (int c = 0; c < sys->ncomp; c++) {
      int r0, m, c0, n;
      cm__op_comp(op, c, &r0, &m, &c0, &n);
      top->matvecs += eig[c].matvecs;
      top->search_matvecs += eig[c].search_matvecs;
      if (!eig[c].nev)
        continue;
      for (int i = 0; i < m; i++)
        top->z[srow[r0 + i]] = eig[c].z[i];
      if (eig[c].lambda[0] <= top->lambda)
        continue;
      double al = 0, be = 0;
      for (int i = 0; i < m; i++) { /* z_r^2 split by weight */
        double zz = eig[c].z[i] * eig[c].z[i] / sys->k[r0 + i];
        al += sys->spring[r0 + i] * zz;
        be += sys->g ? sys->g[r0 + i] * zz : 0.0;
      }
      top->lambda = eig[c].lambda[0];
      top->a = top->lambda * al;
      top->b = top->lambda * be;
      top->comp = c;
    }
  }
  for (int c = 0; eig && c < sys->ncomp; c++)
    cm__eig_free(&eig[c]);
  free(eig), free(srow), free(znew);
  cm_operator_destroy(&op);
  cm_system_destroy(&sys);
  return st;
}

/* Collatz-Wielandt: for N = |B| |B|^T >= |S| (elementwise) and any v > 0,
 * lambda_max(S) <= rho(N) <= max_r (N v)_r / v_r. Power steps on N from
 * v decrease that bound towards rho(N); the smallest seen is kept. v
 * (size m, > 0) is overwritten. */
static int cm__cw_bound(cm_context_t *ctx, cm_operator_t *op, int m, double *v,
                        int steps, cm__budget_t *b, double *u) {
  double *nv = malloc(sizeof(double) * ((size_t)m + 1));
  if (!nv)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  int st = CM_OK;
  *u = INFINITY;
  /* any step's bound holds: past the budget, the smallest so far */
  for (int it = 0; it <= steps && !st && !(it > 0 && cm__spent(b)); it++) {
    st = cm__op_abs_product(ctx, op, -1, v, nv);
    double b = 0, top = 0;
    for (int r = 0; !st && r < m; r++) {
      b = fmax(b, nv[r] / v[r]);
      top = fmax(top, nv[r]);
    }
    if (st || !(top > 0))
      break;
    *u = fmin(*u, b);
    for (int r = 0; r < m; r++) /* the next v stays > 0: N v >= diag v */
      v[r] = nv[r] / top;
  }
  free(nv);
  return st;
}

/* An upper bound U >= lambda_max of the operator with row weights
 * wk k + wg c ((0, 1): C~; (h^2, 2h): the damped operator at h).
 * vs == NULL: Gershgorin. Else vs (over scene rows, size nvs) seeds
 * Collatz-Wielandt power steps: v = |vs| + max|vs| / 10. */
static int cm__weighted_bound(cm_context_t *ctx, const cm_scene_t *scene,
                              double wk, double wg, const double *vs, int nvs,
                              cm__budget_t *b, double *uc) {
  cm_system_t *sys = NULL;
  cm_operator_t *op = NULL;
  double *diag = NULL, *gersh = NULL;
  int *srow = NULL;
  int st = cm__system_assemble_weighted(ctx, scene, wk, wg, &sys);
  if (!st)
    st = cm_operator_create(ctx, sys, &op);
  if (!st) {
    diag = calloc((size_t)sys->nc + 1, sizeof(double));
    gersh = calloc((size_t)sys->nc + 1, sizeof(double));
    srow = vs ? cm__scene_rows(sys) : NULL;
    if (!diag || !gersh || (vs && !srow))
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  *uc = 0;
  if (!st && sys->nc && sys->n) {
    if (vs && nvs == sys->nc) {
      double vmax = 0;
      for (int r = 0; r < sys->nc; r++)
        vmax = fmax(vmax, fabs(vs[r]));
      for (int r = 0; r < sys->nc; r++)
        diag[r] = fabs(vs[srow[r]]) + 0.1 * vmax + 1e-300;
      st = cm__cw_bound(ctx, op, sys->nc, diag, 30, b, uc);
    } else {
      st = cm__op_row_bounds(ctx, op, -1, diag, gersh);
      for (int r = 0; !st && r < sys->nc; r++)
        *uc = gersh[r] > *uc ? gersh[r] : *uc;
    }
  }
  if (!st)
    *uc *= 1 + cm__inertia_delta(sys); /* a near-singular inertia */
  free(diag), free(gersh), free(srow);
  cm_operator_destroy(&op);
  cm_system_destroy(&sys);
  return st;
}

/* Systems up to this many active dofs certify by factorization; larger
 * ones by the Collatz-Wielandt bound (a sparse Cholesky of a 3D contact
 * network fills in like n^(4/3)). */
#define CM__DEFINITE_MAX_DOFS 300000

/* 1 when h is certified: 4 M - h^2 K - 2 h C is positive definite (by a
 * factorization, with a 1e-9 margin for its rounding), or, for large
 * systems, a Collatz-Wielandt bound from the top vector vs is <= 4. A
 * factorization that would not fit in the budget is not made (*ok = 0,
 * b->hit set). */
static int cm__certify(cm_context_t *ctx, const cm_scene_t *scene, double h,
                       const double *vs, int nvs, cm__budget_t *b, int *ok) {
  cm_system_t *sys = NULL;
  int st = cm__system_assemble_weighted(ctx, scene, h * h, 2.0 * h, &sys);
  if (!st && sys->n <= CM__DEFINITE_MAX_DOFS) {
    st = cm__op_definite(ctx, sys, 4.0 * (1.0 - 1e-9), b->end, ok);
    cm_system_destroy(&sys);
    if (*ok < 0) /* would not fit in the budget */
      *ok = 0, b->hit = 1;
    return st;
  }
  cm_system_destroy(&sys);
  double u = INFINITY;
  if (!st)
    st = cm__weighted_bound(ctx, scene, h * h, 2.0 * h, vs, nvs, b, &u);
  *ok = u <= 4.0;
  return st;
}

/* Tightens the certified step: the first of h* (1 - 1e-4 2^j), j = 0, 1,
 * ..., above *hc that cm__certify accepts (the criterion is exact, so
 * usually the first). */
static int cm__certified_search(cm_context_t *ctx, const cm_scene_t *scene,
                                double h_star, const double *vs, int nvs,
                                cm__budget_t *b, double *hc) {
  for (double f = 1e-4; f < 1.0 && !cm__spent(b); f *= 2) {
    double h = h_star * (1.0 - f);
    if (h <= *hc)
      break;
    int ok = 0, st = cm__certify(ctx, scene, h, vs, nvs, b, &ok);
    if (st)
      return st;
    if (ok) {
      *hc = h;
      break;
    }
  }
  return CM_OK;
}

/* The report's note of a damped step cut short by the budget (appended to
 * r->warning). */
static int cm__budget_warning(cm_report_t *r, int it) {
  char w[400];
  snprintf(w, sizeof w,
           "damped step: the solve budget (max_seconds) ran out after %d "
           "iteration%s: h_s is an upper estimate of the damped limit, "
           "certified_s the best certified step found so far (a lower bound, "
           "still safe)",
           it, it == 1 ? "" : "s");
  return cm__report_warn(r, w);
}

int cm__damped_step(cm_context_t *ctx, const cm_scene_t *scene,
                    const cm_options_t *opts, double deadline, cm_report_t *r) {
  cm__budget_t b = {deadline, 0};
  /* ---- the undamped steps and each listed mode's own damped limit ---- */
  r->cd_undamped = r->central_difference;
  r->damped_component = -1;
  double h = INFINITY;
  for (int i = 0; i < r->nmodes; i++)
    h = fmin(h,
             cm_step_central_difference(r->modes[i].omega, r->modes[i].zeta));
  r->damped_modal_h_s = isfinite(h) ? h : NAN;
  int no_mode = !(r->omega_max > 0) || !isfinite(h);
  /* no spring at all (every row a dashpot alone, stiffness 0: the
   * undamped system is empty and its Gershgorin bound 0): the dashpots
   * alone limit the step, h* = 2 / lambda_max(C~) */
  int springless = r->omega_upper == 0;
  if (no_mode && !springless &&
      !(r->omega_upper > 0 && isfinite(r->omega_upper)))
    return CM_OK; /* the solve gave no mode: the notes already say why */
  /* ---- certified, first: h^2 U_K + 2 h U_C = 4 ---- */
  double uc = 0;
  int st = cm__weighted_bound(ctx, scene, 0.0, 1.0, NULL, 0, &b, &uc);
  if (st)
    return st;
  double hc = cm__damped_root(r->omega_upper * r->omega_upper, uc);
  if (springless && !(uc > 0))
    return CM_OK; /* no dashpot row either (all on fixed bodies) */
  cm__top_t top = {0};
  if (springless && !cm__spent(&b)) {
    /* a start above h*: the root of the top vector at any h (the
     * operator is 2 h C~, its top vector the same at every h) */
    st = cm__top_at(ctx, scene, opts, hc, &b, &top);
    if (!st && top.comp >= 0)
      h = cm__damped_root(top.a, top.b), no_mode = 0;
    if (st) {
      free(top.z);
      return st;
    }
  }
  if (no_mode) {
    free(top.z);
    /* no listed mode (a budget that stopped the solve before its first
     * pair): no iteration, but the undamped certified step is not safe
     * with dashpots; the damped one from the bounds is */
    r->central_difference.certified_s =
        fmin(hc, r->central_difference.certified_s);
    if (!cm__spent(&b))
      return CM_OK;
    return cm__budget_warning(r, 0)
               ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory")
               : CM__ERR(ctx, CM_NOT_CONVERGED, NULL,
                         "damped step: stopped by its time budget "
                         "(max_seconds) before its first iteration; partial "
                         "result");
  }
  /* ---- the coupled limit: monotone iteration from above ---- */
  if (!top.z) { /* (springless: the vectors of its first evaluation) */
    top.z = malloc(sizeof(double) * ((size_t)r->nstart + 1));
    if (top.z && r->start_vector) { /* the undamped modes: a first guess */
      memcpy(top.z, r->start_vector, sizeof(double) * (size_t)r->nstart);
      top.nz = r->nstart;
    }
  }
  /* Any vector's quotients give a root >= h*, so the early solves may be
   * loose (tol 1e-6); the last ones run at the asked tolerance. */
  double hn = h, tol = fmax(opts->tol, 1e-12);
  cm_options_t o = *opts;
  o.tol = fmax(opts->tol, 1e-6);
  int it = 0;
  while (it < 60 && !cm__spent(&b)) {
    st = cm__top_at(ctx, scene, &o, h, &b, &top);
    if (st)
      break;
    it++;
    if (top.comp < 0)
      break;
    hn = fmin(h, cm__damped_root(top.a, top.b));
    if (h - hn <= fmax(tol, o.tol) * h) {
      if (o.tol <= opts->tol)
        break;
      o.tol = opts->tol; /* converged loosely: tighten */
    }
    h = hn;
  }
  if (!st && hc < hn)
    st = cm__certified_search(ctx, scene, hn, top.z, top.nz, &b, &hc);
  free(top.z);
  if (!st && b.hit)
    st = cm__budget_warning(r, it)
             ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory")
             : CM__ERR(ctx, CM_NOT_CONVERGED, NULL,
                       "damped step: stopped by its time budget "
                       "(max_seconds) after %d iterations; partial result",
                       it);
  if (st < 0)
    return st;
  r->damped_iterations = it;
  r->matvecs += top.matvecs;
  r->search_matvecs += top.search_matvecs;
  r->damped_component = top.comp;
  /* a dashpot alone: no oscillation, no ratio (null) */
  r->damped_zeta = top.a > 0    ? top.b / (2.0 * sqrt(top.a))
                   : springless ? NAN
                                : 0;
  r->central_difference.h_s = hn;
  r->central_difference.certified_s = fmin(hc, hn);
  if (springless) { /* the dashpots' limit, found; RK's not sought */
    r->central_difference.note = NULL;
    r->rk3.note = r->rk4.note = "no spring: only the damped central "
                                "difference step is computed for dashpots "
                                "alone";
  }
  return st;
}
