/* analyze.c: the pipeline driver: scene -> system -> operator -> eigen-solves
 * per component (small ones densely and in parallel, large ones by Lanczos)
 * -> bounds, time steps, energy shares and counts, into a cm_report_t; with
 * dashpots, the damped limit (damped.c). Options and their checks are in
 * options.c. Not for output formats (report/report_json.c, report_text.c). */
#include "analyze/analyze_internal.h"
#include "analyze/fields.h"
#include "analyze/vectors_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- report teardown --------------------------------------------------- */

static void cm__shares_free(cm_share_t *s, int n) {
  for (int i = 0; s && i < n; i++)
    free(s[i].name), free(s[i].a_name), free(s[i].b_name);
  free(s);
}

void cm_report_destroy(cm_report_t **rp) {
  if (!rp || !*rp)
    return;
  cm_report_t *r = *rp;
  for (int i = 0; r->modes && i < r->nmodes; i++) {
    cm__shares_free(r->modes[i].contacts, r->modes[i].ncontacts);
    cm__shares_free(r->modes[i].bodies, r->modes[i].nbodies);
    cm__shares_free(r->modes[i].dofs, r->modes[i].ndofs);
  }
  free(r->modes);
  for (int i = 0; r->components && i < r->ncomp_listed; i++) {
    for (int j = 0; j < r->components[i].nlisted; j++)
      free(r->components[i].body_names[j]);
    free(r->components[i].body_names);
  }
  free(r->components);
  free(r->start_vector);
  free(r->warning);
  for (int i = 0; r->tie_names && i < r->nties_listed; i++)
    free(r->tie_names[i]);
  free(r->tie_names), free(r->ties);
  free(r);
  *rp = NULL;
}

/* ---- eigen-solves of all components ------------------------------------- */

/* Scene row of every system row: contacts in scene order, each with its
 * rows (normal, then tangents); malloc'd, caller frees, NULL when out of
 * memory. Without tangent rows it is row_contact. */
int *cm__scene_rows(const cm_system_t *sys) {
  int nc = sys->nc, ncon = sys->ncontacts;
  int *srow = malloc(sizeof(int) * ((size_t)nc + 1));
  int *base = calloc((size_t)ncon + 1, sizeof(int));
  if (!srow || !base) {
    free(srow), free(base);
    return NULL;
  }
  for (int r = 0; r < nc; r++)
    base[sys->row_contact[r] + 1]++;
  for (int c = 0; c < ncon; c++)
    base[c + 1] += base[c];
  for (int r = 0; r < nc; r++)
    srow[r] =
        base[sys->row_contact[r]] + (sys->row_kind ? sys->row_kind[r] : 0);
  free(base);
  return srow;
}

#define CM__PROB_DENSE_MAX 200 /* smaller components: a dense lambda_max */
/* Dense solves of less work than this (flops, about) run on one thread */
#define CM__DENSE_PAR_FLOPS 1e7

/* The components that get a probabilistic bound of their own (not solved
 * densely): the union bound gives each delta / their number. */
static int cm__prob_count(cm_operator_t *op, const cm_system_t *sys,
                          const cm_options_t *opts) {
  int niter = 0;
  for (int c = 0; c < sys->ncomp; c++) {
    int r0, m, c0, n;
    cm__op_comp(op, c, &r0, &m, &c0, &n);
    niter += m > 0 && n > 0 && !cm__eig_is_dense(opts, m, n);
  }
  return niter;
}

/* cm__solve_all; bound: each Lanczos solve of a component with operator
 * size above CM__PROB_DENSE_MAX also takes the probabilistic bound from
 * its first cycle (cm__prob_bound reads it) */
static int cm__solve_comps(cm_context_t *ctx, cm_operator_t *op,
                           const cm_system_t *sys, const cm_options_t *opts,
                           cm__eig_t *eig, int bound) {
  int ncomp = sys->ncomp, first_err = ncomp, nsmall = 0;
  int niter = bound ? cm__prob_count(op, sys, opts) : 0;
  cm_context_t err_ctx;
  cm_context_init(&err_ctx);
  double t0 = cm__now();
  double deadline = opts->max_seconds > 0 ? t0 + opts->max_seconds : 0;
  int *small = malloc(sizeof(int) * ((size_t)ncomp + 1));
  int *status = calloc((size_t)ncomp + 1, sizeof(int));
  int *srow = opts->warm_start ? cm__scene_rows(sys) : NULL;
  if (!small || !status || (opts->warm_start && !srow)) {
    free(small), free(status), free(srow);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  double work = 0; /* the dense solves' flops, about */
  for (int c = 0; c < ncomp; c++) {
    int r0, m, c0, n;
    cm__op_comp(op, c, &r0, &m, &c0, &n);
    if (cm__eig_is_dense(opts, m, n)) {
      small[nsmall++] = c;
      work += (double)m * n * (m < n ? m : n);
    }
  }
  /* small components: dense, in parallel, each sequential inside; not
   * when they are all tiny: a fork/join on shared cores cost more (22
   * humanoids, 6 x 27 each: 2.2 ms at 1 thread, 27 ms at 2, measured
   * under load); one that would start past the budget is not solved (no
   * pairs, not converged: a partial result) */
  int par = nsmall > 1 && work > CM__DENSE_PAR_FLOPS;
  int skipped = ncomp;
#pragma omp parallel for schedule(dynamic, 1)                                  \
    num_threads(cm__threads(ctx)) if (par)
  for (int i = 0; i < nsmall; i++) {
    cm_context_t local;
    cm_context_init(&local);
    int c = small[i];
    if (deadline > 0 && cm__now() > deadline) {
      memset(&eig[c], 0, sizeof eig[c]);
      eig[c].method = CM_METHOD_DENSE;
      eig[c].rank = -1;
      status[c] = CM_NOT_CONVERGED;
#pragma omp critical
      skipped = c < skipped ? c : skipped;
      continue;
    }
    status[c] = cm__eig_component(&local, op, c, opts, NULL, 0, 0, &eig[c]);
    if (status[c] < 0) {
#pragma omp critical
      if (c < first_err) {
        first_err = c;
        err_ctx = local;
      }
    }
  }
  /* large components: Lanczos one at a time, parallel matvecs */
  double *start = NULL;
  int is_small_j = 0;
  for (int c = 0; c < ncomp && first_err == ncomp; c++) {
    while (is_small_j < nsmall && small[is_small_j] < c)
      is_small_j++;
    if (is_small_j < nsmall && small[is_small_j] == c)
      continue;
    int r0, m, c0, n;
    cm__op_comp(op, c, &r0, &m, &c0, &n);
    if (opts->warm_start) {
      free(start);
      start = malloc(sizeof(double) * (size_t)m);
      for (int i = 0; start && i < m; i++)
        start[i] = opts->warm_start[srow[r0 + i]];
    }
    double pb = niter && (m < n ? m : n) > CM__PROB_DENSE_MAX
                    ? opts->failure_probability / niter
                    : 0;
    status[c] =
        cm__eig_component(&err_ctx, op, c, opts, start, deadline, pb, &eig[c]);
    if (status[c] < 0) {
      first_err = c;
    } else if (status[c] == CM_NOT_CONVERGED) {
      CM__ERR(ctx, CM_NOT_CONVERGED, NULL, "component %d: %s", c,
              err_ctx.message);
      cm_context_clear(&err_ctx);
    } else {
      cm_context_clear(&err_ctx);
    }
  }
  free(start);
  if (skipped < ncomp && first_err == ncomp)
    CM__ERR(ctx, CM_NOT_CONVERGED, NULL,
            "component %d: not solved: the time budget (max_seconds) ran out "
            "before its dense eigen-solve; partial result",
            skipped);
  int st = CM_OK;
  if (first_err < ncomp) {
    *ctx = err_ctx;
    st = ctx->status ? ctx->status : status[first_err];
    if (!ctx->status && st == CM_NOMEM) { /* a backend without a message */
      snprintf(err_ctx.message, sizeof err_ctx.message, "out of memory");
      ctx->status = st;
    }
    char msg[sizeof ctx->message + 32];
    snprintf(msg, sizeof msg, "component %d: %s", first_err, err_ctx.message);
    msg[sizeof ctx->message - 1] = 0;
    memcpy(ctx->message, msg, sizeof ctx->message);
  } else {
    for (int c = 0; c < ncomp; c++)
      if (status[c] == CM_NOT_CONVERGED)
        st = CM_NOT_CONVERGED;
  }
  free(small), free(status), free(srow);
  return st;
}

int cm__solve_all(cm_context_t *ctx, cm_operator_t *op, const cm_system_t *sys,
                  const cm_options_t *opts, cm__eig_t *eig) {
  return cm__solve_comps(ctx, op, sys, opts, eig, 0);
}

/* ---- shares ------------------------------------------------------------ */

/* Keeps the top T by share (ties: lower index) in pick[0..*n). */
static void cm__pick(cm__pick_t *pick, int *n, int T, int index, double share) {
  int k = *n;
  if (k == T && !(share > pick[k - 1].share ||
                  (share == pick[k - 1].share && index < pick[k - 1].index)))
    return;
  if (k < T)
    (*n)++;
  else
    k = T - 1;
  while (k > 0 && (share > pick[k - 1].share ||
                   (share == pick[k - 1].share && index < pick[k - 1].index))) {
    pick[k] = pick[k - 1];
    k--;
  }
  pick[k].index = index;
  pick[k].share = share;
}

/* (analyze_internal.h) In fixed chunks on threads, each keeping its own
 * top T (a group belongs to the chunk it starts in), merged in chunk
 * order: the top T of a strict order, each share summed as serially, so
 * the same picks at any thread count (a serial pass was 4 ms a mode at
 * 1e6). */
int cm__pick_groups(cm__pick_t *pick, int *np, int T, const int *key,
                    const double *v, double div, int n, int threads) {
  int nch = (n + CM__PICK_CHUNK - 1) / CM__PICK_CHUNK;
  cm__pick_t *part = malloc(sizeof *part * ((size_t)nch * (size_t)T + 1));
  int *cnt = calloc((size_t)nch + 1, sizeof(int));
  if (!part || !cnt) {
    free(part), free(cnt);
    return CM_NOMEM;
  }
#pragma omp parallel for schedule(static) num_threads(threads) if (nch > 1)
  for (int c = 0; c < nch; c++) {
    int i = c * CM__PICK_CHUNK,
        end = i + CM__PICK_CHUNK < n ? i + CM__PICK_CHUNK : n;
    while (i > 0 && i < end && key[i] == key[i - 1])
      i++; /* the previous chunk's group */
    while (i < end) {
      int k = key[i];
      double e = 0;
      for (; i < n && key[i] == k; i++)
        e += v[i] * v[i] / div; /* exact for div 1 */
      cm__pick(part + (size_t)c * T, &cnt[c], T, k, e);
    }
  }
  for (int c = 0; c < nch; c++)
    for (int q = 0; q < cnt[c]; q++)
      cm__pick(pick, np, T, part[(size_t)c * T + q].index,
               part[(size_t)c * T + q].share);
  free(part), free(cnt);
  return CM_OK;
}

/* Shares within CM__PICK_SAME (relative) of a run's first are listed by
 * index, not by their last bits, which OpenBLAS' CPU-specific kernels set
 * (docs/report-format.md, "Across CPUs": the four symmetric hips of a fleet
 * robot named hip1 first on one CPU, hip3 on another). The picks keep
 * CM__PICK_SLACK more than asked, so a tie across the cut is settled the
 * same way too unless it is longer than the slack. */
#define CM__PICK_SAME 1e-12
#define CM__PICK_SLACK 16

static int cm__pick_index_cmp(const void *pa, const void *pb) {
  const cm__pick_t *a = pa, *b = pb;
  return (a->index > b->index) - (a->index < b->index);
}

/* Orders near-equal runs of pick[0..*n) by index and keeps the first T. */
static void cm__pick_settle(cm__pick_t *pick, int *n, int T) {
  for (int i = 0, j; i < *n; i = j) {
    double low = pick[i].share - CM__PICK_SAME * fabs(pick[i].share);
    for (j = i + 1; j < *n && pick[j].share >= low; j++)
      ;
    if (j - i > 1)
      qsort(pick + i, (size_t)(j - i), sizeof *pick, cm__pick_index_cmp);
  }
  if (*n > T)
    *n = T;
}

/* A copy of s (NULL for NULL); sets *lost when s was not NULL but its copy
 * could not be made. */
static char *cm__dup_name(const char *s, int *lost) {
  char *d = cm__strdup(s);
  if (s && !d)
    *lost = 1;
  return d;
}

/* A matrix system's mode: the dofs of the top kinetic-energy
 * participations s_j = phi_j (M phi)_j, phi = M^-1 J^T K^1/2 z / omega
 * (phi^T M phi = 1, so they sum to 1), named by col_names. */
static int cm__mode_dofs(cm_operator_t *op, const cm_system_t *sys,
                         const cm_options_t *opts, int comp, const double *z,
                         double lambda, cm_mode_t *mode) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  int T = opts->top_bodies > 0 ? opts->top_bodies : 1, np = 0, lost = 0;
  double *phi = malloc(sizeof(double) * ((size_t)n + 1));
  double *mp = calloc((size_t)n + 1, sizeof(double));
  cm__pick_t *pick = malloc(sizeof *pick * ((size_t)T + CM__PICK_SLACK + 1));
  int st = phi && mp && pick ? cm__op_dof_shape(op, comp, z, phi) : CM_NOMEM;
  if (!st) {
    for (int j = 0; j < n; j++) /* M phi over the component (lower CSC) */
      for (int q = sys->Mp[c0 + j]; q < sys->Mp[c0 + j + 1]; q++) {
        int i = sys->Mi[q] - c0;
        mp[i] += sys->Mx[q] * phi[j];
        if (i != j)
          mp[j] += sys->Mx[q] * phi[i];
      }
    for (int j = 0; j < n; j++)
      cm__pick(pick, &np, T + CM__PICK_SLACK, sys->col_dof[c0 + j],
               phi[j] * mp[j] / lambda);
    cm__pick_settle(pick, &np, T);
    mode->dofs = calloc((size_t)np + 1, sizeof(cm_share_t));
    st = mode->dofs ? CM_OK : CM_NOMEM;
  }
  for (int i = 0; !st && i < np; i++) {
    char buf[32];
    const char *nm = sys->col_names ? sys->col_names[pick[i].index] : NULL;
    snprintf(buf, sizeof buf, "#%d", pick[i].index);
    mode->dofs[i].index = pick[i].index;
    mode->dofs[i].share = pick[i].share;
    mode->dofs[i].name = cm__dup_name(nm ? nm : buf, &lost);
    mode->ndofs = i + 1;
  }
  free(phi), free(mp), free(pick);
  return st ? st : lost ? CM_NOMEM : CM_OK;
}

/* The shares of mode z (unit, over component comp's rows); bz: B^T z if
 * the eigen-solve kept it (cm__eig_t's bz, the same bits as cm__op_BT's),
 * else NULL. */
static int cm__mode_shares(cm_operator_t *op, const cm_system_t *sys,
                           const cm_scene_t *scene, const cm_options_t *opts,
                           int comp, const double *z, const double *bz,
                           double lambda, cm_mode_t *mode) {
  int r0, m, c0, n;
  cm__op_comp(op, comp, &r0, &m, &c0, &n);
  int T = opts->top_contacts > 0 ? opts->top_contacts : 1;
  cm__pick_t *pick = malloc(sizeof *pick * ((size_t)T + CM__PICK_SLACK + 1));
  double *u = bz ? NULL : malloc(sizeof(double) * ((size_t)n + 1));
  if (!pick || (!bz && !u)) {
    free(pick), free(u);
    return CM_NOMEM;
  }
  char buf[256];
  int lost = 0; /* a name copy failed */
  /* contacts: e_c = k_c xi_c^2 / lambda = z_c^2, summed over the
   * contact's rows (consecutive) */
  int np = 0, th = cm__op_threads(op);
  if (cm__pick_groups(pick, &np, T + CM__PICK_SLACK, sys->row_contact + r0, z,
                      1.0, m, th))
    goto nomem;
  cm__pick_settle(pick, &np, T);
  mode->contacts = calloc((size_t)np + 1, sizeof(cm_share_t));
  if (!mode->contacts)
    goto nomem;
  mode->ncontacts = np;
  for (int i = 0; i < np; i++) {
    cm_share_t *s = &mode->contacts[i];
    int c = pick[i].index, row = sys->contact_row[c];
    s->index = c;
    s->share = pick[i].share;
    s->name = cm__dup_name(scene            ? cm_scene_contact_name(scene, c)
                           : sys->row_names ? sys->row_names[c]
                                            : NULL,
                           &lost);
    if (sys->dim) {
      s->a_name = cm__dup_name(
          cm_scene_body_label(scene, sys->row_a[row], buf, sizeof buf), &lost);
      s->b_name = cm__dup_name(
          cm_scene_body_label(scene, sys->row_b[row], buf, sizeof buf), &lost);
    }
  }
  /* bodies: kinetic-energy share of the mass-normalised mode, |u_b|^2 with
   * u = B^T z / sigma */
  if (sys->dim && n > 0) {
    if (u)
      cm__op_BT(op, comp, z, u);
    int TB = opts->top_bodies > 0 ? opts->top_bodies : 1;
    cm__pick_t *bp =
        realloc(pick, sizeof *bp * ((size_t)TB + CM__PICK_SLACK + 1));
    if (!bp)
      goto nomem;
    pick = bp;
    np = 0;
    if (cm__pick_groups(pick, &np, TB + CM__PICK_SLACK, sys->col_body + c0,
                        u ? u : bz, lambda, n, th))
      goto nomem;
    cm__pick_settle(pick, &np, TB);
    mode->bodies = calloc((size_t)np + 1, sizeof(cm_share_t));
    if (!mode->bodies)
      goto nomem;
    mode->nbodies = np;
    for (int i = 0; i < np; i++) {
      mode->bodies[i].index = pick[i].index;
      mode->bodies[i].share = pick[i].share;
      mode->bodies[i].name = cm__dup_name(
          cm_scene_body_label(scene, pick[i].index, buf, sizeof buf), &lost);
    }
  }
  free(pick), free(u);
  if (!sys->dim && n > 0 && !lost)
    return cm__mode_dofs(op, sys, opts, comp, z, lambda, mode);
  return lost ? CM_NOMEM : CM_OK;
nomem:
  free(pick), free(u);
  return CM_NOMEM;
}

/* Effective damping ratio of a mode from the dashpots: with the
 * mass-normalised mode phi and z the unit eigenvector of S, the gaps are
 * xi_r = omega z_r / sqrt(k_r), so phi^T C phi = omega^2 sum_r (c_r / k_r)
 * z_r^2 and zeta = phi^T C phi / (2 omega). 0 without dashpots. */
static double cm__mode_zeta(const cm_system_t *sys, int r0, int m,
                            const double *z, double omega) {
  if (!sys->g)
    return 0;
  double s = 0;
  for (int i = 0; i < m; i++)
    s += sys->g[r0 + i] / sys->k[r0 + i] * z[i] * z[i];
  return 0.5 * omega * s;
}

/* ---- modes: the global top k over all components --------------------------
 */

static int cm__cand_cmp(const void *pa, const void *pb) {
  const cm__cand_t *a = pa, *b = pb;
  if (a->lambda != b->lambda)
    return a->lambda > b->lambda ? -1 : 1;
  if (a->comp != b->comp)
    return a->comp < b->comp ? -1 : 1;
  return a->idx - b->idx;
}

/* Candidates whose eigenvalues agree to CM__SAME_REL (relative) are taken
 * in component order, not by their last bits: those bits come from
 * OpenBLAS' kernels, which differ between CPU families (docs/report-format.md,
 * "Across CPUs"; measured differences <= 3.2e-15), so without this the
 * first-named of identical robots changed with the CPU. qsort by value first,
 * then each run of values within CM__SAME_REL of the run's first is sorted
 * by (component, pair). */
#define CM__SAME_REL 1e-13

static int cm__cand_index_cmp(const void *pa, const void *pb) {
  const cm__cand_t *a = pa, *b = pb;
  if (a->comp != b->comp)
    return a->comp < b->comp ? -1 : 1;
  return a->idx - b->idx;
}

void cm__cand_sort(void *base, size_t n, size_t size) {
  char *v = base;
  qsort(v, n, size, cm__cand_cmp);
  for (size_t i = 0, j; i < n; i = j) {
    double top = ((const cm__cand_t *)(v + i * size))->lambda;
    double low = top - CM__SAME_REL * fabs(top);
    for (j = i + 1;
         j < n && ((const cm__cand_t *)(v + j * size))->lambda >= low; j++)
      ;
    if (j - i > 1)
      qsort(v + i * size, j - i, size, cm__cand_index_cmp);
  }
}

/* omega_max (the largest listed omega: modes[0]'s unless cm__cand_sort put
 * near-equal tops in component order, which may move one up to 1e-13
 * below), the component named for it and the per-contact ratio. */
void cm__report_top(cm_report_t *r) {
  r->omega_max = 0;
  for (int i = 0; i < r->nmodes; i++)
    if (r->modes[i].omega > r->omega_max)
      r->omega_max = r->modes[i].omega;
  r->comp_max = r->nmodes ? r->modes[0].component : -1;
  r->pc_ratio = r->pc_omega_max > 0 ? r->omega_max / r->pc_omega_max : NAN;
}

static int cm__collect_modes(cm_operator_t *op, const cm_system_t *sys,
                             const cm_scene_t *scene, const cm_options_t *opts,
                             const cm__eig_t *eig, cm_report_t *r) {
  size_t total = 0;
  for (int c = 0; c < sys->ncomp; c++)
    total += (size_t)eig[c].nev;
  cm__cand_t *cand = malloc(sizeof *cand * (total + 1));
  if (!cand)
    return CM_NOMEM;
  size_t k = 0;
  for (int c = 0; c < sys->ncomp; c++)
    for (int i = 0; i < eig[c].nev; i++)
      cand[k++] = (cm__cand_t){eig[c].lambda[i], c, i};
  cm__cand_sort(cand, total, sizeof *cand);
  int nm = (int)(total < (size_t)opts->modes ? total : (size_t)opts->modes);
  r->modes = calloc((size_t)nm + 1, sizeof(cm_mode_t));
  if (!r->modes) {
    free(cand);
    return CM_NOMEM;
  }
  r->nmodes = nm;
  int st = CM_OK;
  for (int i = 0; i < nm && !st; i++) {
    const cm__eig_t *e = &eig[cand[i].comp];
    int r0, m, c0, n;
    cm__op_comp(op, cand[i].comp, &r0, &m, &c0, &n);
    cm_mode_t *md = &r->modes[i];
    md->lambda = cand[i].lambda;
    md->omega = sqrt(md->lambda);
    md->residual = e->res[cand[i].idx];
    md->component = cand[i].comp;
    md->zeta = cm__mode_zeta(sys, r0, m, e->z + (size_t)cand[i].idx * (size_t)m,
                             md->omega);
    st = cm__mode_shares(op, sys, scene, opts, cand[i].comp,
                         e->z + (size_t)cand[i].idx * (size_t)m,
                         e->bz ? e->bz + (size_t)cand[i].idx * (size_t)n : NULL,
                         md->lambda, md);
  }
  free(cand);
  return st;
}

/* ---- components tied at the top ----------------------------------------- */

/* The length of name's part before its first separator (". _ / : -"),
 * 0 when it has none. */
static size_t cm__name_head(const char *name) {
  size_t len = strcspn(name, "._/:-");
  return name[len] ? len : 0;
}

/* A matrix system's component c: the part before the first separator of
 * its dofs' names (col_names), or else of its rows' names (row_names),
 * when they all share it ("r2", MuJoCo's "1a"); else the first dof's
 * name, the first row's, or "dof D" (D its first dof, 0-based in M). */
char *cm__matrix_comp_name(const cm_system_t *sys, int r0, int m, int c0,
                           int n) {
  for (int pass = 0; pass < 2; pass++) {
    char **names = pass ? sys->row_names : sys->col_names;
    int cnt = pass ? m : n;
    if (!names || cnt == 0)
      continue;
    const char *first = NULL;
    size_t len = 0;
    for (int j = 0; j < cnt; j++) {
      const char *nm =
          names[pass ? sys->row_contact[r0 + j] : sys->col_dof[c0 + j]];
      if (!nm) {
        len = 0;
        if (first)
          break;
        continue;
      }
      if (!first) {
        first = nm;
        len = cm__name_head(nm);
      } else if (len && strncmp(nm, first, len + 1)) {
        len = 0;
      }
    }
    if (!first)
      continue;
    char *out = cm__strdup(first);
    if (out && len)
      out[len] = 0;
    return out;
  }
  char buf[32];
  snprintf(buf, sizeof buf, "dof %d", n ? sys->col_dof[c0] : 0);
  return cm__strdup(buf);
}

/* A name for component c: the part before the first '.' of its bodies'
 * names when they all share it ("r2"), else its first body's label; for
 * matrices cm__matrix_comp_name. NULL when out of memory. */
static char *cm__comp_name(cm_operator_t *op, const cm_system_t *sys,
                           const cm_scene_t *scene, int c) {
  int r0, m, c0, n;
  cm__op_comp(op, c, &r0, &m, &c0, &n);
  if (!sys->dim)
    return cm__matrix_comp_name(sys, r0, m, c0, n);
  if (n == 0)
    return NULL;
  char first[256], buf[256];
  cm_scene_body_label(scene, sys->col_body[c0], first, sizeof first);
  const char *dot = strchr(first, '.');
  size_t len = dot ? (size_t)(dot - first) : 0;
  for (int j = 1; j < n && len; j++) {
    const char *b =
        cm_scene_body_label(scene, sys->col_body[c0 + j], buf, sizeof buf);
    if (strncmp(b, first, len + 1))
      len = 0;
  }
  if (len)
    first[len] = 0;
  return cm__strdup(first);
}

/* r->ties: every component whose top eigenvalue is within opts->tol
 * (relative) of the largest, ascending by index, with names. */
static int cm__list_ties(cm_operator_t *op, const cm_system_t *sys,
                         const cm_scene_t *scene, const cm_options_t *opts,
                         const cm__eig_t *eig, cm_report_t *r) {
  double top = 0;
  for (int c = 0; c < sys->ncomp; c++)
    if (eig[c].nev && eig[c].lambda[0] > top)
      top = eig[c].lambda[0];
  if (!(top > 0) || !r->nmodes)
    return CM_OK;
  int cap = sys->ncomp < CM_TIES_LISTED ? sys->ncomp : CM_TIES_LISTED;
  r->ties = calloc((size_t)cap + 1, sizeof(int));
  r->tie_names = calloc((size_t)cap + 1, sizeof(char *));
  if (!r->ties || !r->tie_names)
    return CM_NOMEM;
  for (int c = 0; c < sys->ncomp; c++) {
    if (!eig[c].nev || !(top - eig[c].lambda[0] <= opts->tol * top))
      continue;
    if (r->nties_listed < cap) {
      r->ties[r->nties_listed] = c;
      r->tie_names[r->nties_listed] = cm__comp_name(op, sys, scene, c);
      if (!r->tie_names[r->nties_listed])
        return CM_NOMEM;
      r->nties_listed++;
    }
    r->nties++;
  }
  return CM_OK;
}

/* ---- components listing ----------------------------------------------------
 */

static int cm__list_components(cm_operator_t *op, const cm_system_t *sys,
                               const cm_scene_t *scene,
                               const cm_options_t *opts, const cm__eig_t *eig,
                               const double *gersh, const int *crank,
                               cm_report_t *r) {
  int ncomp = sys->ncomp, lost = 0;
  cm__cand_t *ord = malloc(sizeof *ord * ((size_t)ncomp + 1));
  if (!ord)
    return CM_NOMEM;
  for (int c = 0; c < ncomp; c++)
    ord[c] = (cm__cand_t){eig[c].nev ? eig[c].lambda[0] : 0, c, 0};
  cm__cand_sort(ord, (size_t)ncomp, sizeof *ord);
  int nl = ncomp < opts->top_components ? ncomp : opts->top_components;
  r->components = calloc((size_t)nl + 1, sizeof(cm_component_t));
  if (!r->components) {
    free(ord);
    return CM_NOMEM;
  }
  r->ncomp_listed = nl;
  char buf[256];
  for (int i = 0; i < nl; i++) {
    int c = ord[i].comp, r0, m, c0, n;
    cm__op_comp(op, c, &r0, &m, &c0, &n);
    cm_component_t *ci = &r->components[i];
    const cm__eig_t *e = &eig[c];
    ci->index = c;
    ci->ncontacts = m;
    ci->ndofs = n;
    ci->omega_max = e->nev ? sqrt(e->lambda[0]) : 0;
    double g = 0;
    for (int q = 0; q < m; q++)
      g = gersh[r0 + q] > g ? gersh[r0 + q] : g;
    ci->omega_upper = m && isnan(gersh[r0]) ? NAN : sqrt(g);
    ci->method = e->method;
    ci->iterations = e->iterations;
    ci->matvecs = e->matvecs;
    ci->converged = e->converged;
    ci->rank = crank[c];
    ci->body_names = calloc(20, sizeof(char *));
    if (!ci->body_names) {
      free(ord);
      return CM_NOMEM;
    }
    for (int j = 0; j < n && sys->dim; j++) {
      int b = sys->col_body[c0 + j];
      if (j > 0 && sys->col_body[c0 + j - 1] == b)
        continue;
      if (ci->nlisted < 20)
        ci->body_names[ci->nlisted++] =
            cm__dup_name(cm_scene_body_label(scene, b, buf, sizeof buf), &lost);
      ci->nbodies++;
    }
  }
  if (lost) {
    free(ord);
    return CM_NOMEM;
  }
  free(ord);
  return cm__list_ties(op, sys, scene, opts, eig, r);
}

/* ---- the probabilistic upper bound
 * ------------------------------------------- */

/* The probabilistic upper bound of every component solved iteratively
 * (the Lanczos solve's own first cycle, or where it could not take it, a
 * warm start or ARPACK, bound.c's plain run of its own), each with failure
 * probability delta / (their number), so that the scene's fails with
 * probability at most delta (a union bound); for a dense component, or one of
 * operator size N <= 200 (where the theorem needs about as many steps as N),
 * its dense lambda_max (1 + 4 N eps) (dsyevr is backward stable). Each is at
 * least the solve's lambda_max (a Rayleigh quotient) and at most its Gershgorin
 * bound. A run whose Ritz value passes the solve's lambda_max by more than
 * its relative residual (and 1e-6) means the solve missed the top mode:
 * that component is flagged not converged and the status says so. */
static int cm__prob_bound(cm_context_t *ctx, cm_operator_t *op,
                          const cm_system_t *sys, const cm_options_t *opts,
                          cm__eig_t *eig, const double *gersh, double deadline,
                          cm_report_t *r) {
  int niter = cm__prob_count(op, sys, opts), st = CM_OK;
  double delta = opts->failure_probability, umax = 0;
  r->failure_probability = delta;
  for (int c = 0; c < sys->ncomp; c++) {
    int r0, m, c0, n;
    cm__op_comp(op, c, &r0, &m, &c0, &n);
    double lam = eig[c].nev ? eig[c].lambda[0] : 0, up, g = 0;
    if (m == 0 || n == 0)
      continue;
    int N = m < n ? m : n;
    if (!eig[c].nev && !eig[c].converged) {
      up = INFINITY; /* not solved (budget): its Gershgorin bound below */
    } else if (eig[c].method == CM_METHOD_DENSE) {
      up = lam * (1 + 4.0 * N * DBL_EPSILON);
    } else if (deadline > 0 && cm__now() > deadline && eig[c].pb_steps <= 0) {
      up = INFINITY; /* no run of its own past the budget: Gershgorin */
    } else if (N <= CM__PROB_DENSE_MAX) { /* too small for the theorem */
      cm__eig_t e;
      memset(&e, 0, sizeof e);
      int dst = cm__eig_dense(ctx, op, c, 1, &e);
      up = fmax(e.nev ? e.lambda[0] * (1 + 4.0 * N * DBL_EPSILON) : 0, lam);
      cm__eig_free(&e);
      if (dst)
        return dst;
    } else {
      cm__eig_bound_t b = {eig[c].pb_upper, eig[c].pb_theta, eig[c].pb_eps,
                           eig[c].pb_steps, 0};
      int own = eig[c].pb_steps <= 0;
      int bst = own ? cm__eig_prob_bound(ctx, op, c, delta / niter, &b) : 0;
      if (bst)
        return bst;
      if (own) /* a run of its own: its products count in solver.matvecs */
        eig[c].matvecs += b.steps;
      r->prob_steps += b.steps;
      up = fmax(b.upper, lam);
      /* the solve's top lies within its residual of lam: a Ritz value
       * (never above lambda_max) past that (and 1e-6) shows an eigenvalue
       * above it; within it, the two may be the same mode, at --tol */
      double rel = eig[c].res && eig[c].res[0] > 1e-6 ? eig[c].res[0] : 1e-6;
      if (b.theta > lam * (1 + rel)) {
        eig[c].converged = 0;
        st = CM_NOT_CONVERGED;
        CM__ERR(ctx, CM_NOT_CONVERGED, NULL,
                "component %d: the probabilistic bound's Lanczos run found "
                "lambda %.17g above the solve's %.17g: the solve missed the "
                "top mode",
                c, b.theta, lam);
      }
    }
    for (int q = 0; q < m; q++)
      g = gersh[r0 + q] > g ? gersh[r0 + q] : g;
    up = fmin(up, isnan(gersh[r0]) ? INFINITY : g);
    umax = up > umax ? up : umax;
  }
  r->omega_upper_prob = sqrt(umax);
  return st;
}

/* ---- bounds, steps, counts --------------------------------------------------
 */

void cm__report_steps(const cm_options_t *o, cm_report_t *r) {
  static const char *none = "no contacts: no contact mode limits the step";
  static const char *nomode = "no mode converged: no step can be given";
  /* A partial (not converged) omega_max can fall below the rigorous lower
   * bound: the steps never use less than that bound. */
  double w = fmax(r->omega_max, r->omega_lower); /* fmax ignores a NaN */
  double wu = r->omega_upper, wp = r->omega_upper_prob;
  r->damping_ratio = o->damping_ratio;
  r->newmark_gamma = o->newmark_gamma;
  r->newmark_beta = o->newmark_beta;
  r->freq_tol = o->freq_tol;
  r->central_difference.h_s = cm_step_central_difference(w, o->damping_ratio);
  r->central_difference.certified_s =
      cm_step_central_difference(wu, o->damping_ratio);
  r->central_difference.certified_prob_s =
      cm_step_central_difference(wp, o->damping_ratio);
  r->rk3.h_s = cm_step_rk3(w), r->rk3.certified_s = cm_step_rk3(wu);
  r->rk3.certified_prob_s = cm_step_rk3(wp);
  r->rk4.h_s = cm_step_rk4(w), r->rk4.certified_s = cm_step_rk4(wu);
  r->rk4.certified_prob_s = cm_step_rk4(wp);
  r->explicit_euler.h_s = r->explicit_euler.certified_s = NAN;
  r->explicit_euler.certified_prob_s = NAN;
  r->explicit_euler.note =
      "unstable for every step: |1 + i h omega| > 1 for all h > 0";
  r->newmark.h_s = cm_step_newmark(w, o->newmark_gamma, o->newmark_beta);
  r->newmark.certified_s =
      cm_step_newmark(wu, o->newmark_gamma, o->newmark_beta);
  r->newmark.certified_prob_s =
      cm_step_newmark(wp, o->newmark_gamma, o->newmark_beta);
  if (2 * o->newmark_beta >= o->newmark_gamma)
    r->newmark.note = "unconditionally stable (2 beta >= gamma)";
  r->accuracy_h_s = cm_step_accuracy(w, o->freq_tol);
  r->cd_undamped = r->central_difference;
  r->damped_modal_h_s = NAN;
  r->damped_component = -1;
  r->deck_fraction = NAN;
  if (!(w > 0)) {
    const char *why = r->ncontacts ? nomode : none;
    r->central_difference.note = r->rk3.note = r->rk4.note = why;
    if (!r->newmark.note)
      r->newmark.note = why;
  }
}

/* Near-singular inertia (docs/math.md): a body's mass block, formed and
 * factored in double precision, is exact to a relative delta =
 * CM_INERTIA_DELTA_PER_COND x cond in the PSD order, so every eigenvalue of
 * S is good to a relative delta. Above CM__DELTA_BOUND the Gershgorin
 * bound is raised by sqrt(1 + delta) (below it, the bound's own rounding
 * is of the same order); above CM__DELTA_WARN the report warns. */
#define CM__DELTA_BOUND 1e-12
#define CM__DELTA_WARN 1e-6

double cm__inertia_delta(const cm_system_t *sys) {
  double d = CM_INERTIA_DELTA_PER_COND * sys->inertia_cond;
  return d > CM__DELTA_BOUND ? d : 0;
}

/* With dashpots the damped step is exact for the linear model; LAMMPS'
 * pair granular goes unstable below it after a second run command
 * (data/lammps/README.md):
 * the report says so next to the step. Appended to any other warning. */
int cm__report_warn(cm_report_t *r, const char *w) {
  size_t n = (r->warning ? strlen(r->warning) + 2 : 0) + strlen(w) + 1;
  char *t = malloc(n);
  if (!t)
    return CM_NOMEM;
  snprintf(t, n, "%s%s%s", r->warning ? r->warning : "", r->warning ? "; " : "",
           w);
  free(r->warning);
  r->warning = t;
  return CM_OK;
}

int cm__dashpot_warning(cm_report_t *r) {
  static const char *const w =
      "dashpots: the damped step is exact (and certified) for the linear "
      "model and matched LAMMPS' threshold on the project's decks to 0.6 %, "
      "but pair granular beds continued by a second 'run' command in one "
      "LAMMPS process went unstable 2.4 % below it "
      "(data/lammps/README.md): keep a margin of a few percent there";
  return cm__report_warn(r, w);
}

static int cm__inertia_warning(const cm_system_t *sys, cm_report_t *r) {
  double d = cm__inertia_delta(sys);
  if (!(d > CM__DELTA_WARN))
    return CM_OK;
  char buf[512];
  snprintf(buf, sizeof buf,
           "bodies[%d]: inertia tensor condition number %.3g: its mass "
           "block is formed and factored in double precision to a relative "
           "%.2g, so omega_max is good to about %.2g relative (the bounds "
           "and certified steps include it)",
           sys->inertia_cond_body, sys->inertia_cond, d, 0.5 * d);
  r->warning = cm__strdup(buf);
  return r->warning ? CM_OK : CM_NOMEM;
}

static int cm__bounds(cm_context_t *ctx, cm_operator_t *op,
                      const cm_system_t *sys, cm_report_t *r, double *diag,
                      double *gersh) {
  if (sys->nc == 0 || sys->n == 0)
    return CM_OK;
  int st = cm__op_row_bounds(ctx, op, -1, diag, gersh);
  if (st == CM_LIMIT) { /* general M too large to bound: unknown */
    cm_context_clear(ctx);
    r->pc_omega_max = r->omega_lower = r->omega_upper = NAN;
    r->pc_contact = -1;
    for (int i = 0; i < sys->nc; i++)
      diag[i] = gersh[i] = NAN;
    return CM_OK;
  }
  if (st)
    return st;
  double dmax = -1, gmax = 0;
  int rmax = 0;
  for (int i = 0; i < sys->nc; i++) {
    if (diag[i] > dmax)
      dmax = diag[i], rmax = i;
    if (gersh[i] > gmax)
      gmax = gersh[i];
  }
  double grow = 1 + cm__inertia_delta(sys); /* lambda_true <= grow lambda */
  if (grow > 1)
    for (int i = 0; i < sys->nc; i++)
      gersh[i] *= grow;
  r->pc_omega_max = sqrt(dmax);
  r->pc_contact = sys->row_contact[rmax];
  r->omega_lower = r->pc_omega_max;
  r->omega_upper = sqrt(gmax * grow);
  return cm__inertia_warning(sys, r);
}

/* Scales beyond double precision (k/m of 1e600, say) would give inf or NaN
 * and then a silently wrong report: refuse them, naming the contact. */
static int cm__check_finite(cm_context_t *ctx, const cm_system_t *sys,
                            const double *diag, const double *gersh) {
  for (int i = 0; i < sys->nc; i++) {
    if (isnan(diag[i]) && isnan(gersh[i]))
      return CM_OK; /* general M too large to bound: nothing to check */
    if (!isfinite(diag[i]) || !isfinite(gersh[i]) || !(diag[i] > 0)) {
      char path[64];
      snprintf(path, sizeof path, "contacts[%d]", sys->row_contact[i]);
      return CM__ERR(ctx, CM_NUMERIC, path,
                     "%s: k_c (J M^-1 J^T)_cc = %g is not a positive finite "
                     "number in double precision; rescale the units (masses, "
                     "lengths, stiffnesses) so that k/m stays within about "
                     "1e-150..1e150",
                     path, diag[i]);
    }
  }
  return CM_OK;
}

const char *cm__model_label(int tangential, int dashpots) {
  return tangential ? dashpots ? "normal + tangential springs + dashpots"
                               : "normal + tangential springs"
         : dashpots ? "normal springs + dashpots"
                    : "normal springs only";
}

/* The end of the solve budget (max_seconds from t0, the eigen-solve's
 * start) as a cm__now() time, or 0 for none: the rank counts keep to it
 * too. */
static double cm__budget_end(const cm_options_t *opts, double t0) {
  return opts->max_seconds > 0 ? t0 + opts->max_seconds : 0;
}

/* rank: of the whole J (cm__system_rank). */
static void cm__counts(const cm_system_t *sys, const cm__eig_t *eig,
                       const cm_options_t *o, long rank, double near,
                       cm_report_t *r) {
  r->nbodies = sys->nbodies;
  r->moving_bodies = sys->moving_bodies;
  r->fixed_bodies = sys->nbodies - sys->moving_bodies;
  r->free_bodies = sys->free_bodies;
  r->ndofs = sys->ndofs;
  r->active_dofs = sys->n;
  r->ncontacts = sys->ncontacts;
  r->nrows = sys->nc;
  r->tangential = sys->tangential;
  r->dashpots = sys->dashpots;
  r->model = cm__model_label(sys->tangential, sys->dashpots);
  r->dropped_dofs = sys->dropped_dofs;
  r->ncomp = sys->ncomp;
  int nd = 0, na = 0, it_method = -1;
  r->converged = 1;
  for (int c = 0; c < sys->ncomp; c++) {
    if (eig[c].method == CM_METHOD_DENSE)
      nd++;
    else {
      na++;
      it_method = it_method < 0 || it_method == eig[c].method ? eig[c].method
                                                              : CM_METHOD_AUTO;
    }
    r->iterations += eig[c].iterations;
    r->matvecs += eig[c].matvecs;
    r->search_matvecs += eig[c].search_matvecs;
    r->t_matvec += eig[c].t_matvec;
    r->t_orth += eig[c].t_orth, r->t_restart += eig[c].t_restart;
    r->t_deflate += eig[c].t_deflate, r->t_finish += eig[c].t_finish;
    if (eig[c].ncv > r->ncv)
      r->ncv = eig[c].ncv;
    if (!eig[c].converged)
      r->converged = 0;
  }
  r->free_motions = rank < 0 ? -1 : (int)(sys->ndofs - rank);
  r->zero_modes = rank < 0 ? -1 : (int)(sys->nc - rank);
  r->rank_sharp = rank < 0 ? -1 : !(near > CM__RANK_SHARP);
  r->counts_note =
      rank == -2 ? "the rank of J was not computed: the solve budget "
                   "(max_seconds) ran out before the sparse QR of every "
                   "component"
      : rank < 0 ? "the rank of J was not computed: a component has more "
                   "rows than rank_max_rows (default 20000), past which the "
                   "sparse QR costs more than the analysis"
                 : NULL;
  r->method = !sys->ncomp                          ? "none"
              : !na                                ? "dense"
              : !nd && it_method != CM_METHOD_AUTO ? cm__method_name(it_method)
                                                   : "mixed";
  r->nev = o->modes;
  r->tol = o->tol;
}

/* Dominant vector per component, over scene rows (cm__scene_rows; scene
 * contacts when no contact has tangent rows): the warm start of a later
 * solve of a changed scene. */
static int cm__start_vector(cm_operator_t *op, const cm_system_t *sys,
                            const cm__eig_t *eig, cm_report_t *r) {
  r->nstart = sys->nc;
  r->start_vector = calloc((size_t)sys->nc + 1, sizeof(double));
  int *srow = cm__scene_rows(sys);
  if (!r->start_vector || !srow) {
    free(srow);
    return CM_NOMEM;
  }
  for (int c = 0; c < sys->ncomp; c++) {
    int r0, m, c0, n;
    cm__op_comp(op, c, &r0, &m, &c0, &n);
    /* the sum of the component's top vectors: a Krylov space from it
     * holds all of them, so a re-solve of a slightly changed scene finds
     * every wanted mode, not only the first, in few steps */
    const double *z = eig[c].z;
    int nev = eig[c].nev;
    /* srow is one-to-one: each entry sums its modes in order, alone */
#pragma omp parallel for schedule(static)                                      \
    num_threads(cm__op_threads(op)) if (m > CM__PAR_MIN)
    for (int i = 0; i < m; i++) {
      double s = r->start_vector[srow[r0 + i]];
      for (int j = 0; j < nev; j++)
        s += z[(size_t)j * m + i];
      r->start_vector[srow[r0 + i]] = s;
    }
  }
  free(srow);
  return CM_OK;
}

static int cm__analyze_core(cm_context_t *ctx, const cm_system_t *sys,
                            const cm_scene_t *scene, const cm_options_t *opts,
                            cm_report_t **out, cm_vectors_t **vectors,
                            cm__fields_t *f);

int cm_analyze_system(cm_context_t *ctx, const cm_system_t *sys,
                      const cm_scene_t *scene, const cm_options_t *opts,
                      cm_report_t **out) {
  return cm__analyze_core(ctx, sys, scene, opts, out, NULL, NULL);
}

int cm__analyze_system(cm_context_t *ctx, const cm_system_t *sys,
                       const cm_scene_t *scene, const cm_options_t *opts,
                       cm_report_t **out, cm_vectors_t **vectors) {
  return cm__analyze_core(ctx, sys, scene, opts, out, vectors, NULL);
}

int cm__analyze_system_fields(cm_context_t *ctx, const cm_system_t *sys,
                              const cm_scene_t *scene, const cm_options_t *opts,
                              cm_report_t **out, cm__fields_t *f) {
  return cm__analyze_core(ctx, sys, scene, opts, out, NULL, f);
}

int cm__analyze_system_both(cm_context_t *ctx, const cm_system_t *sys,
                            const cm_scene_t *scene, const cm_options_t *opts,
                            cm_report_t **out, cm_vectors_t **vectors,
                            cm__fields_t *f) {
  return cm__analyze_core(ctx, sys, scene, opts, out, vectors, f);
}

/* The damped step of a scene with dashpots (damped.c) and its warning:
 * CM_OK, CM_NOT_CONVERGED (the budget ran out: r is partial, its status
 * says so) or an error. */
static int cm__damped(cm_context_t *ctx, const cm_scene_t *scene,
                      const cm_options_t *opts, double deadline,
                      cm_report_t *r) {
  double t2 = cm__now();
  int st = cm__damped_step(ctx, scene, opts, deadline, r);
  r->t_eigen += cm__now() - t2;
  /* the probabilistic bound is on the undamped operator: it certifies
   * the undamped steps, not the damped limit */
  r->central_difference.certified_prob_s = NAN;
  if (st == CM_NOT_CONVERGED) /* stopped by the budget: a partial report */
    r->status = CM_NOT_CONVERGED, r->converged = 0;
  int wst = st < 0 ? CM_OK : cm__dashpot_warning(r);
  return wst ? wst : st;
}

/* The pipeline on a system; mode shapes into *vectors and full arrays into
 * f when asked (either may be NULL). */
static int cm__analyze_core_body(cm_context_t *ctx, const cm_system_t *sys,
                                 const cm_scene_t *scene,
                                 const cm_options_t *opts, cm_report_t **out,
                                 cm_vectors_t **vectors, cm__fields_t *f) {
  *out = NULL;
  cm_options_t def;
  if (!opts) {
    cm_options_init(&def);
    opts = &def;
  }
  /* ---- check inputs ---- */
  int st = cm__options_check(ctx, opts);
  if (st)
    return st;
  if (sys->dashpots && opts->damping_ratio > 0)
    return CM__ERR(ctx, CM_USAGE, "damping_ratio",
                   "damping_ratio: the scene has dashpots, whose damping "
                   "the step already includes (C = J^T G J); a modal ratio "
                   "on top would count it twice: leave damping_ratio at 0");
  int blas_threads = cm__blas_get_threads(); /* restored on return */
  cm__blas_single_thread();
  /* ---- allocate ---- */
  cm_report_t *r = calloc(1, sizeof *r);
  cm__eig_t *eig = calloc((size_t)sys->ncomp + 1, sizeof *eig);
  /* the row bounds: from the workspace (a kept analysis's 16 MB at 1e6) */
  double *diag = cm__ws_calloc(NULL, (size_t)sys->nc + 1, sizeof(double));
  double *gersh = cm__ws_calloc(NULL, (size_t)sys->nc + 1, sizeof(double));
  int *crank = calloc((size_t)sys->ncomp + 1, sizeof(int));
  long rank = 0;
  double near = NAN;
  cm_operator_t *op = NULL;
  if (!r || !eig || !diag || !gersh || !crank) {
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
    goto done;
  }
  r->t_assemble = sys->t_assemble_s;
  /* ---- compute ---- */
  st = cm__operator_create(ctx, sys, cm__eig_vals32(opts, sys->nc), &op);
  if (st)
    goto done;
  r->t_factor = cm_operator_factor_seconds(op);
  r->t_operator = cm_operator_build_seconds(op);
  st = cm__bounds(ctx, op, sys, r, diag, gersh);
  if (!st)
    st = cm__check_finite(ctx, sys, diag, gersh);
  if (st)
    goto done;
  double t0 = cm__now();
  st = cm__solve_comps(ctx, op, sys, opts, eig, 1);
  if (st >= 0) {
    cm_context_t bctx;
    cm_context_init(&bctx);
    int bst = cm__prob_bound(&bctx, op, sys, opts, eig, gersh,
                             cm__budget_end(opts, t0), r);
    if (bst < 0 || (bst == CM_NOT_CONVERGED && st == CM_OK))
      *ctx = bctx, st = bst;
  }
  if (st < 0)
    goto done;
  r->status = st;
  double t1 = cm__now();
  r->t_eigen = t1 - t0;
  int st2 = cm__system_rank(ctx, sys, cm__threads(ctx), opts->rank_max_rows,
                            cm__budget_end(opts, t0), crank, &rank, &near);
  if (!st2)
    st2 = cm__collect_modes(op, sys, scene, opts, eig, r);
  if (!st2)
    st2 = cm__list_components(op, sys, scene, opts, eig, gersh, crank, r);
  if (!st2)
    st2 = cm__start_vector(op, sys, eig, r);
  if (!st2 && vectors) /* mode shapes on request (vectors.c) */
    st2 = cm__mode_vectors(ctx, op, sys, eig, r, vectors);
  if (!st2 && f) /* fields.c: full arrays for pictures and exports */
    st2 = cm__fields_fill(f, op, sys, scene, eig, diag, r);
  if (st2) {
    st = ctx->status
             ? ctx->status
             : CM__ERR(ctx, CM_NOMEM, NULL, "out of memory in the report");
    goto done;
  }
  cm__report_top(r);
  cm__counts(sys, eig, opts, rank, near, r);
  cm__report_steps(opts, r);
  r->t_report = cm__now() - t1;
  /* ---- the scene's dashpots and deck step ---- */
  if (scene && sys->dashpots) {
    st2 = cm__damped(ctx, scene, opts, cm__budget_end(opts, t0), r);
    if (st2 < 0 || st2 == CM_NOT_CONVERGED)
      st = st2;
    if (st < 0)
      goto done;
  }
  if (scene) {
    r->deck_timestep_s = scene->timestep_s;
    r->deck_fraction = scene->timestep_s > 0 && r->central_difference.h_s > 0
                           ? scene->timestep_s / r->central_difference.h_s
                           : NAN;
  }
done:
  for (int c = 0; eig && c < sys->ncomp; c++)
    cm__eig_free(&eig[c]);
  free(eig), cm__ws_free(diag), cm__ws_free(gersh), free(crank);
  cm_operator_destroy(&op);
  if (blas_threads > 0)
    cm__blas_threads(blas_threads);
  if (st < 0) {
    cm_report_destroy(&r);
    if (vectors)
      cm_vectors_destroy(vectors);
    return st;
  }
  *out = r;
  return st;
}

/* cm__analyze_core_body in a workspace scope (cm__ws_scope_begin) */
static int cm__analyze_core(cm_context_t *ctx, const cm_system_t *sys,
                            const cm_scene_t *scene, const cm_options_t *opts,
                            cm_report_t **out, cm_vectors_t **vectors,
                            cm__fields_t *f) {
  cm__ws_scope_begin();
  int st = cm__analyze_core_body(ctx, sys, scene, opts, out, vectors, f);
  cm__ws_scope_end();
  return st;
}

int cm_analyze(cm_context_t *ctx, const cm_scene_t *scene,
               const cm_options_t *opts, cm_report_t **out) {
  return cm__analyze_fields(ctx, scene, opts, out, NULL);
}

int cm__analyze_fields(cm_context_t *ctx, const cm_scene_t *scene,
                       const cm_options_t *opts, cm_report_t **out,
                       cm__fields_t *f) {
  *out = NULL;
  cm_system_t *sys = NULL;
  cm__ws_scope_begin(); /* one scope: the assembly's buffers serve too */
  int st = cm_system_assemble(ctx, scene, &sys);
  if (!st)
    st = cm__analyze_system_fields(ctx, sys, scene, opts, out, f);
  cm_system_destroy(&sys);
  cm__ws_scope_end();
  return st;
}
