/* soften.c: which contacts to soften, by how much, to reach a target
 * central-difference step; planned from the energy shares (d lambda / d k_c
 * = xi_c^2 = lambda e_c / k_c) and confirmed by re-solving the softened
 * scene. Not for drawing (report_html.c). */
#include "internal.h"
#include "report/report_html.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CM__SOFTEN_FMAX                                                        \
  0.75 /* largest fractional cut per contact and round                         \
        */
#define CM__SOFTEN_ROUNDS 8
#define CM__SOFTEN_MODES 12 /* modes of each re-solve */

void cm__soften_free(cm__soften_t *s) {
  if (!s)
    return;
  free(s->contact), free(s->factor);
  memset(s, 0, sizeof *s);
}

typedef struct {
  double v; /* sort key */
  int i;    /* contact */
} cm__kv_t;

static int cm__kv_desc(const void *pa, const void *pb) {
  const cm__kv_t *a = pa, *b = pb;
  return a->v != b->v ? (a->v > b->v ? -1 : 1) : a->i - b->i;
}

/* One round: cut[c] = the fraction to remove from contact c so that every
 * mode faster than omega_t drops to it at first order. */
static void cm__soften_round(const cm__fields_t *f, const cm_report_t *r,
                             double omega_t, cm__kv_t *idx, double *cut) {
  for (int c = 0; c < f->nc; c++)
    cut[c] = 0;
  for (int j = 0; j < f->nmodes; j++) {
    double lambda = r->modes[j].lambda;
    /* aim 2% below: the first-order change overestimates the drop (the
     * softened scene's top eigenvalue is >= the old vector's quotient) */
    double delta = 1 - 0.98 * omega_t * omega_t / lambda;
    if (!(delta > 0))
      continue;
    const double *e = f->share + (size_t)j * f->nc;
    int m = 0;
    for (int c = 0; c < f->nc; c++)
      if (e[c] > 0)
        idx[m++] = (cm__kv_t){e[c], c};
    qsort(idx, (size_t)m, sizeof *idx, cm__kv_desc);
    double E = 0;
    int p = 0;
    while (p < m && E < delta / CM__SOFTEN_FMAX)
      E += idx[p++].v;
    double frac = fmin(delta / E, 0.95);
    for (int q = 0; q < p; q++)
      cut[idx[q].i] = fmax(cut[idx[q].i], frac);
  }
}

int cm__soften_plan(cm_context_t *ctx, const cm_scene_t *scene,
                    const cm_options_t *opts, const cm_report_t *r,
                    const cm__fields_t *f, double target_h_s,
                    cm__soften_t *out) {
  memset(out, 0, sizeof *out);
  double h0 = r->central_difference.h_s;
  if (!scene || !(h0 > 0) || f->nmodes < 1)
    return CM_OK;
  if (!(target_h_s > 0))
    target_h_s = r->deck_fraction > 1 ? r->deck_timestep_s : 1.1 * h0;
  out->target_h_s = target_h_s;
  out->h0_s = out->h_s = h0;
  out->omega_s = r->omega_max;
  if (h0 >= target_h_s) {
    out->reached = 1;
    return CM_OK;
  }
  /* ---- allocate ---- */
  double t0 = cm__now();
  int nc = scene->ncontacts;
  cm_scene_t *s = cm_scene_copy(scene);
  double *factor = malloc(sizeof(double) * ((size_t)nc + 1));
  double *cut = malloc(sizeof(double) * ((size_t)nc + 1));
  cm__kv_t *idx = malloc(sizeof *idx * ((size_t)nc + 1));
  if (!s || !factor || !cut || !idx) {
    cm_scene_destroy(&s);
    free(factor), free(cut), free(idx);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  for (int c = 0; c < nc; c++)
    factor[c] = 1;
  /* ---- rounds: plan on the current modes, soften, re-solve ---- */
  cm_options_t o = *opts;
  /* more modes per re-solve: the top of a pile's spectrum is many local
   * modes of nearly the same frequency, and each round covers the listed
   * ones */
  o.modes = o.modes > CM__SOFTEN_MODES ? o.modes : CM__SOFTEN_MODES;
  const cm_report_t *cur = r;
  const cm__fields_t *curf = f;
  cm_report_t *next = NULL;
  cm__fields_t nf = {.want = f->nmodes};
  int st = CM_OK;
  while (out->rounds < CM__SOFTEN_ROUNDS) {
    /* with dashpots the damped step is not 2/omega: scale omega by the
     * ratio of the steps instead */
    double omega_t = cur->omega_max * cur->central_difference.h_s / target_h_s;
    cm__soften_round(curf, cur, omega_t, idx, cut);
    for (int c = 0; c < nc; c++) {
      factor[c] *= 1 - cut[c];
      s->contacts[c].stiffness = scene->contacts[c].stiffness * factor[c];
      s->contacts[c].stiffness_t = scene->contacts[c].stiffness_t * factor[c];
    }
    o.warm_start = cur->nstart == r->nstart ? cur->start_vector : NULL;
    cm_report_t *res = NULL;
    cm__fields_t rf = {.want = o.modes};
    st = cm__analyze_fields(ctx, s, &o, &res, &rf);
    if (st < 0) {
      cm__fields_free(&rf);
      break;
    }
    st = CM_OK;
    cm_context_clear(ctx);
    cm_report_destroy(&next);
    cm__fields_free(&nf);
    next = res, nf = rf, cur = next, curf = &nf;
    out->rounds++;
    out->h_s = cur->central_difference.h_s;
    out->omega_s = cur->omega_max;
    if (out->h_s >= target_h_s * (1 - 1e-12)) {
      out->reached = 1;
      break;
    }
  }
  /* ---- the plan: softened contacts, most softened first ---- */
  int n = 0;
  for (int c = 0; c < nc; c++)
    if (factor[c] < 1)
      idx[n++] = (cm__kv_t){1 - factor[c], c};
  qsort(idx, (size_t)n, sizeof *idx, cm__kv_desc);
  out->n = n;
  out->contact = malloc(sizeof(int) * ((size_t)n + 1));
  out->factor = malloc(sizeof(double) * ((size_t)n + 1));
  if (!out->contact || !out->factor) {
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
    out->n = 0;
  }
  for (int q = 0; q < out->n; q++)
    out->contact[q] = idx[q].i, out->factor[q] = factor[idx[q].i];
  out->seconds = cm__now() - t0;
  cm_report_destroy(&next);
  cm__fields_free(&nf);
  cm_scene_destroy(&s);
  free(factor), free(cut), free(idx);
  return st;
}
