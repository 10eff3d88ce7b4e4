/* contact_law.c: the linearised contact laws of LAMMPS and LIGGGHTS input
 * decks: for one contact at its frozen overlap, the tangent normal
 * stiffness, the tangential sticking stiffness and the two dashpot
 * coefficients, evaluated with the engine's own formulas (conventions of
 * LAMMPS 29 Sep 2021, the Debian lmp, and of LIGGGHTS-PUBLIC 3.x; see
 * docs/importers.md). Not for parsing decks (lammps_deck.c) nor for finding
 * contacts (dump_contacts.c).
 *
 * Units: SI throughout (N/m, N s/m, m, kg). */
#include "internal.h"

#include <math.h>
#include <string.h>

#define CM__SQRT_5_6 0.91287092917527685576 /* sqrt(5/6), LIGGGHTS' value */

/* ---- LAMMPS gran/hooke, gran/hooke/history, gran/hertz/history ------------
 */

/* pair_gran_hooke*.cpp: F_n = kn delta - meff gamma_n v_n, F_t = -(kt s +
 * meff gamma_t v_t) (history) or -meff gamma_t v_t (gran/hooke: no spring).
 * pair_gran_hertz_history.cpp multiplies every term by polyhertz =
 * sqrt(delta R*), so dF_n/d delta = 1.5 kn polyhertz. */
static void cm__gran(const cm_contact_law_t *L, double reff, double meff,
                     double delta, double out[4]) {
  double p = 1.0; /* polyhertz; 1 for hooke */
  if (L->style == CM_LAW_GRAN_HERTZ_HISTORY)
    p = sqrt(delta * reff);
  out[0] = L->style == CM_LAW_GRAN_HERTZ_HISTORY ? 1.5 * L->kn * p : L->kn;
  out[1] = L->style == CM_LAW_GRAN_HOOKE ? 0.0 : L->kt * p;
  out[2] = meff * L->gamma_n * p; /* c_n = meff gamma_n (polyhertz) */
  out[3] = meff * L->gamma_t * p; /* c_t = meff gamma_t (polyhertz) */
}

/* ---- LAMMPS pair granular (and fix wall/gran granular) --------------------
 */

/* pair_granular.cpp compute(): a = sqrt(delta R*); knfac = E (hooke) or
 * E a; F_ne = knfac delta; damp_normal = 1, meff, a meff or sqrt(meff
 * knfac) (velocity, mass_velocity, viscoelastic, tsuji); c_n = damp
 * damp_normal; k_t = kt (linear_history), kt a (mindlin), 0 (nohistory);
 * c_t = x_gamma_t c_n. DMT's cohesion is a constant: same stiffness. */
static void cm__granular(const cm_contact_law_t *L, double reff, double meff,
                         double delta, double out[4]) {
  double a = sqrt(delta * reff);
  double hooke = L->normal == CM_GRAN_HOOKE;
  double knfac = hooke ? L->kn : L->kn * a;
  out[0] = hooke ? L->kn : 1.5 * L->kn * a; /* d(E a delta)/d delta */
  double dn = 0;
  switch (L->damping) {
  case CM_GRAN_VELOCITY:
    dn = 1;
    break;
  case CM_GRAN_MASS_VELOCITY:
    dn = meff;
    break;
  case CM_GRAN_VISCOELASTIC:
    dn = a * meff;
    break;
  case CM_GRAN_TSUJI:
    dn = sqrt(meff * knfac);
    break;
  }
  out[2] = L->gamma_n * dn;
  out[1] = L->tangential == CM_GRAN_LINEAR_HISTORY ? L->kt
           : L->tangential == CM_GRAN_MINDLIN      ? L->kt * a
                                                   : 0.0;
  out[3] = L->gamma_t * out[2];
}

/* ---- LIGGGHTS
 * ---------------------------------------------------------------- */

/* normal_model_hertz.h: s = sqrt(R* delta), Sn = 2 Y* s, St = 8 G* s,
 * F_n = 4/3 Y* s delta (tangent Sn), gamma_n = -2 sqrt(5/6) beta
 * sqrt(Sn meff), gamma_t the same with St; k_t = St (history). */
static void cm__liggghts_hertz(const cm_contact_law_t *L, double reff,
                               double meff, double delta, double out[4]) {
  double s = sqrt(reff * delta);
  double sn = 2.0 * L->kn * s, st = 8.0 * L->kt * s;
  out[0] = sn;
  out[1] = L->tangential == CM_GRAN_LINEAR_HISTORY ? st : 0.0;
  out[2] = -2.0 * CM__SQRT_5_6 * L->gamma_n * sqrt(sn * meff);
  out[3] = L->tdamp ? -2.0 * CM__SQRT_5_6 * L->gamma_n * sqrt(st * meff) : 0.0;
}

/* normal_model_hooke.h: kn = 16/15 sqrt(R*) Y* (15 meff V^2 /
 * (16 sqrt(R*) Y*))^(1/5), kt = kn (2/7 kn with ktToKn), gamma_n =
 * sqrt(4 meff kn ln^2 e / (ln^2 e + pi^2)) = 2 |beta| sqrt(meff kn),
 * gamma_t = gamma_n. */
static void cm__liggghts_hooke(const cm_contact_law_t *L, double reff,
                               double meff, double out[4]) {
  double sq = sqrt(reff), v = L->charvel;
  double kn = 16.0 / 15.0 * sq * L->kn *
              pow(15.0 * meff * v * v / (16.0 * sq * L->kn), 0.2);
  double kt = L->kt_to_kn ? kn * 0.285714286 : kn; /* LIGGGHTS' 2/7 */
  double gn = 2.0 * fabs(L->gamma_n) * sqrt(meff * kn);
  out[0] = kn;
  out[1] = L->tangential == CM_GRAN_LINEAR_HISTORY ? kt : 0.0;
  out[2] = gn;
  out[3] = L->tdamp ? gn : 0.0;
}

void cm_contact_law_eval(const cm_contact_law_t *law, double reff, double meff,
                         double delta, double out[4]) {
  out[0] = out[1] = out[2] = out[3] = 0;
  if (!law)
    return;
  double d = delta > 0 ? delta : 0;
  switch (law->style) {
  case CM_LAW_GRAN_HOOKE:
  case CM_LAW_GRAN_HOOKE_HISTORY:
  case CM_LAW_GRAN_HERTZ_HISTORY:
    cm__gran(law, reff, meff, d, out);
    break;
  case CM_LAW_GRANULAR:
    cm__granular(law, reff, meff, d, out);
    break;
  case CM_LAW_LIGGGHTS_HERTZ:
    cm__liggghts_hertz(law, reff, meff, d, out);
    break;
  case CM_LAW_LIGGGHTS_HOOKE:
    cm__liggghts_hooke(law, reff, meff, out);
    break;
  default:
    return;
  }
  /* friction 0: the engines cap the tangential force at mu F_n = 0, so a
   * contact has neither tangential spring nor tangential dashpot */
  if (!(law->mu > 0))
    out[1] = out[3] = 0;
}

/* ---- one contact of a snapshot
 * ------------------------------------------------ */

/* The law of contact c and its effective radius and mass. */
static const cm_contact_law_t *
cm__law_of(const cm_dump_options_t *o, const cm_dump_t *d, const double *mass,
           const cm_dump_contact_t *c, double *reff, double *meff) {
  const cm_contact_model_t *m = o->model;
  int ti = d->type[c->i];
  double ri = d->radius[c->i], mi = mass[c->i];
  if (ti < 1 || ti > m->ntypes)
    return NULL;
  if (c->j >= 0) {
    int tj = d->type[c->j];
    double rj = d->radius[c->j], mj = mass[c->j];
    if (tj < 1 || tj > m->ntypes)
      return NULL;
    *reff = ri * rj / (ri + rj); /* R* */
    *meff = mi * mj / (mi + mj); /* m* */
    return &m->pair[ti][tj];
  }
  int w = c->wall;
  *meff = mi; /* a wall is immovable: meff = m_i */
  *reff = ri;
  if (w == o->nplanes && m->cyl_rwall != 0) /* the cylinder (LAMMPS) */
    *reff = ri * m->cyl_rwall / (ri + m->cyl_rwall);
  if (w >= 0 && w <= CM_DUMP_MAX_PLANES && m->wall_type[w] > 0) {
    int tw = m->wall_type[w];
    return tw <= m->ntypes ? &m->pair[ti][tw] : NULL;
  }
  return w >= 0 && w <= CM_DUMP_MAX_PLANES ? &m->wall[w] : NULL;
}

int cm_dump_contact_law(cm_context_t *ctx, const cm_dump_options_t *o,
                        const cm_dump_t *d, const double *mass,
                        const cm_dump_contact_t *c, double out[4]) {
  out[0] = out[1] = out[2] = out[3] = 0;
  if (!o || !d || !c)
    return CM__ERR(ctx, CM_USAGE, NULL, "cm_dump_contact_law: NULL argument");
  if (!o->model) {
    out[0] = cm_dump_stiffness(o, d, c);
    return CM_OK;
  }
  if (!mass)
    return CM__ERR(ctx, CM_USAGE, NULL, "cm_dump_contact_law: no masses");
  double reff = 0, meff = 0;
  const cm_contact_law_t *law = cm__law_of(o, d, mass, c, &reff, &meff);
  if (!law || law->style == CM_LAW_NONE) {
    const char *src = d->source ? d->source : "dump";
    if (c->j >= 0)
      return CM__ERR(ctx, CM_USAGE, "types",
                     "%s:%ld: atoms %ld (type %d) and %ld (type %d) touch "
                     "but the deck sets no contact law for that type pair "
                     "(pair_coeff %d %d, %d types): add it to the deck",
                     src, d->line[c->i], d->id[c->i], d->type[c->i],
                     d->id[c->j], d->type[c->j], d->type[c->i], d->type[c->j],
                     o->model->ntypes);
    return CM__ERR(ctx, CM_USAGE, "types",
                   "%s:%ld: atom %ld (type %d) touches wall %d, which has "
                   "no contact law for that type in the deck",
                   src, d->line[c->i], d->id[c->i], d->type[c->i], c->wall);
  }
  cm_contact_law_eval(law, reff, meff, fmax(c->overlap, o->touch_tol), out);
  return CM_OK;
}
