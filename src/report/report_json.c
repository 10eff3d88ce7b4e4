/* report_json.c: the report as JSON (docs/report-format.md), built with
 * jansson; numbers print with 17 significant digits so they round-trip
 * bit for bit. Not for the human-readable text (report_text.c). */
#include "report_json.h"
#include "internal.h"
#include "jcheck.h"

#include <math.h>
#include <stdlib.h>

static json_t *cm__num(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

static json_t *cm__str(const char *s) {
  return s ? json_string(s) : json_null();
}

static json_t *cm__step(const cm_step_t *s) {
  json_t *o = json_object();
  json_object_set_new(o, "h", cm__num(s->h_s));
  json_object_set_new(o, "certified", cm__num(s->certified_s));
  json_object_set_new(o, "certified_probabilistic",
                      cm__num(s->certified_prob_s));
  if (s->note)
    json_object_set_new(o, "reason", json_string(s->note));
  return o;
}

static json_t *cm__shares(const cm_share_t *s, int n, int contacts) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++) {
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(s[i].index));
    json_object_set_new(o, "name", cm__str(s[i].name));
    if (contacts) {
      json_object_set_new(o, "a", cm__str(s[i].a_name));
      json_object_set_new(o, "b", cm__str(s[i].b_name));
    }
    json_object_set_new(o, "share", cm__num(s[i].share));
    json_array_append_new(a, o);
  }
  return a;
}

static json_t *cm__count(int v) {
  return v < 0 ? json_null() : json_integer(v);
}

/* The "model" object: label and which terms the operator includes. */
static json_t *cm__model_json(const cm_report_t *r) {
  json_t *md = json_object();
  json_object_set_new(md, "label", cm__str(r->model));
  json_object_set_new(md, "tangential", json_boolean(r->tangential));
  json_object_set_new(md, "dashpots", json_boolean(r->dashpots));
  return md;
}

/* The "modes" array: one object per computed mode with its shares. */
static json_t *cm__modes_json(const cm_report_t *r) {
  json_t *modes = json_array();
  for (int i = 0; i < r->nmodes; i++) {
    const cm_mode_t *m = &r->modes[i];
    json_t *jm = json_object();
    json_object_set_new(jm, "omega", cm__num(m->omega));
    json_object_set_new(jm, "lambda", cm__num(m->lambda));
    json_object_set_new(jm, "residual", cm__num(m->residual));
    json_object_set_new(jm, "zeta", cm__num(m->zeta));
    json_object_set_new(jm, "component", json_integer(m->component));
    json_object_set_new(jm, "contacts",
                        cm__shares(m->contacts, m->ncontacts, 1));
    json_object_set_new(jm, "bodies", cm__shares(m->bodies, m->nbodies, 0));
    json_object_set_new(jm, "dofs", cm__shares(m->dofs, m->ndofs, 0));
    json_array_append_new(modes, jm);
  }
  return modes;
}

/* The "per_contact" object: the single-contact estimate of omega_max. */
static json_t *cm__per_contact_json(const cm_report_t *r) {
  json_t *pc = json_object();
  json_object_set_new(pc, "omega_max", cm__num(r->pc_omega_max));
  json_object_set_new(pc, "contact",
                      r->ncontacts && r->pc_contact >= 0
                          ? json_integer(r->pc_contact)
                          : json_null());
  json_object_set_new(pc, "ratio", cm__num(r->pc_ratio));
  return pc;
}

/* The "bounds" object: certified and probabilistic bounds on omega_max. */
static json_t *cm__bounds_json(const cm_report_t *r) {
  json_t *bd = json_object();
  json_object_set_new(bd, "omega_lower", cm__num(r->omega_lower));
  json_object_set_new(bd, "omega_upper", cm__num(r->omega_upper));
  json_object_set_new(bd, "omega_upper_probabilistic",
                      cm__num(r->omega_upper_prob));
  json_object_set_new(bd, "failure_probability",
                      cm__num(r->failure_probability));
  json_object_set_new(bd, "probabilistic_steps", json_integer(r->prob_steps));
  return bd;
}

/* The central-difference step with its damped and undamped limits. */
static json_t *cm__central_difference_json(const cm_report_t *r) {
  json_t *cd = cm__step(&r->central_difference);
  json_t *covers = json_array();
  json_array_append_new(covers, json_string("leapfrog"));
  json_array_append_new(covers, json_string("velocity_verlet"));
  json_array_append_new(covers, json_string("symplectic_euler"));
  json_object_set_new(cd, "covers", covers);
  json_object_set_new(cd, "damping_ratio", json_real(r->damping_ratio));
  json_object_set_new(cd, "model", cm__str(r->model));
  json_t *und = json_object();
  json_object_set_new(und, "h", cm__num(r->cd_undamped.h_s));
  json_object_set_new(und, "certified", cm__num(r->cd_undamped.certified_s));
  json_object_set_new(und, "certified_probabilistic",
                      cm__num(r->cd_undamped.certified_prob_s));
  json_object_set_new(cd, "undamped", und);
  json_object_set_new(cd, "modal_limit", cm__num(r->damped_modal_h_s));
  json_object_set_new(cd, "damped_solves", json_integer(r->damped_iterations));
  json_object_set_new(cd, "component",
                      r->damped_component >= 0
                          ? json_integer(r->damped_component)
                          : json_null());
  json_object_set_new(cd, "zeta",
                      r->damped_component >= 0 ? cm__num(r->damped_zeta)
                                               : json_null());
  return cd;
}

/* The "timestep" object: the stable step of each integrator. */
static json_t *cm__timestep_json(const cm_report_t *r) {
  json_t *ts = json_object();
  json_object_set_new(ts, "central_difference", cm__central_difference_json(r));
  json_object_set_new(ts, "rk3", cm__step(&r->rk3));
  json_object_set_new(ts, "rk4", cm__step(&r->rk4));
  json_object_set_new(ts, "explicit_euler", cm__step(&r->explicit_euler));
  json_t *nm = cm__step(&r->newmark);
  json_object_set_new(nm, "gamma", json_real(r->newmark_gamma));
  json_object_set_new(nm, "beta", json_real(r->newmark_beta));
  json_object_set_new(ts, "newmark", nm);
  return ts;
}

/* The "accuracy" object: the step that keeps frequencies within freq_tol. */
static json_t *cm__accuracy_json(const cm_report_t *r) {
  json_t *acc = json_object();
  json_object_set_new(acc, "freq_tol", json_real(r->freq_tol));
  json_object_set_new(acc, "h", cm__num(r->accuracy_h_s));
  return acc;
}

/* The "deck" object: the input deck's own step and its share of the limit. */
static json_t *cm__deck_json(const cm_report_t *r) {
  json_t *dk = json_object();
  json_object_set_new(dk, "timestep",
                      r->deck_timestep_s > 0 ? cm__num(r->deck_timestep_s)
                                             : json_null());
  json_object_set_new(dk, "fraction", cm__num(r->deck_fraction));
  return dk;
}

/* The "counts" object: bodies, dofs, contacts, rows and free motions. */
static json_t *cm__counts_json(const cm_report_t *r) {
  json_t *ct = json_object();
  json_object_set_new(ct, "bodies", json_integer(r->nbodies));
  json_object_set_new(ct, "moving_bodies", json_integer(r->moving_bodies));
  json_object_set_new(ct, "fixed_bodies", json_integer(r->fixed_bodies));
  json_object_set_new(ct, "free_bodies", json_integer(r->free_bodies));
  json_object_set_new(ct, "dofs", json_integer(r->ndofs));
  json_object_set_new(ct, "active_dofs", json_integer(r->active_dofs));
  json_object_set_new(ct, "contacts", json_integer(r->ncontacts));
  json_object_set_new(ct, "rows", json_integer(r->nrows));
  json_object_set_new(ct, "free_motions_removed",
                      json_integer(r->dropped_dofs));
  json_object_set_new(ct, "free_motions", cm__count(r->free_motions));
  json_object_set_new(ct, "zero_modes", cm__count(r->zero_modes));
  json_object_set_new(ct, "rank_sharp",
                      r->rank_sharp < 0 ? json_null()
                                        : json_boolean(r->rank_sharp));
  if (r->counts_note)
    json_object_set_new(ct, "reason", json_string(r->counts_note));
  return ct;
}

/* One listed component: its limits, sizes, method and body names. */
static json_t *cm__component_json(const cm_component_t *c) {
  json_t *jc = json_object();
  json_object_set_new(jc, "index", json_integer(c->index));
  json_object_set_new(jc, "omega_max", cm__num(c->omega_max));
  json_object_set_new(jc, "omega_upper", cm__num(c->omega_upper));
  json_object_set_new(jc, "bodies", json_integer(c->nbodies));
  json_object_set_new(jc, "contacts", json_integer(c->ncontacts));
  json_object_set_new(jc, "dofs", json_integer(c->ndofs));
  json_object_set_new(jc, "method", json_string(cm__method_name(c->method)));
  json_object_set_new(jc, "rank", cm__count(c->rank));
  json_t *names = json_array();
  for (int j = 0; j < c->nlisted; j++)
    json_array_append_new(names, cm__str(c->body_names[j]));
  json_object_set_new(jc, "body_names", names);
  return jc;
}

/* The "components" object: count, ties and the listed top components. */
static json_t *cm__components_json(const cm_report_t *r) {
  json_t *cp = json_object();
  json_object_set_new(cp, "count", json_integer(r->ncomp));
  json_object_set_new(cp, "sets_step",
                      r->comp_max >= 0 ? json_integer(r->comp_max)
                                       : json_null());
  json_object_set_new(cp, "tied", json_integer(r->nties));
  json_t *tied = json_array();
  for (int i = 0; i < r->nties_listed; i++)
    json_array_append_new(tied, json_pack("{s:i,s:o}", "index", r->ties[i],
                                          "name", cm__str(r->tie_names[i])));
  json_object_set_new(cp, "tied_components", tied);
  json_t *top = json_array();
  for (int i = 0; i < r->ncomp_listed; i++)
    json_array_append_new(top, cm__component_json(&r->components[i]));
  json_object_set_new(cp, "top", top);
  return cp;
}

/* The "solver" object: eigensolver name, sizes and convergence. */
static json_t *cm__solver_json(const cm_report_t *r) {
  json_t *sv = json_object();
  json_object_set_new(sv, "method",
                      json_string(r->method ? r->method : "none"));
  json_object_set_new(sv, "nev", json_integer(r->nev));
  json_object_set_new(sv, "ncv", json_integer(r->ncv));
  json_object_set_new(sv, "iterations", json_integer(r->iterations));
  json_object_set_new(sv, "matvecs", json_integer(r->matvecs));
  json_object_set_new(sv, "search_matvecs", json_integer(r->search_matvecs));
  json_object_set_new(sv, "converged", json_boolean(r->converged));
  json_object_set_new(sv, "tol", json_real(r->tol));
  return sv;
}

/* The "timings" object: seconds spent in each stage. */
static json_t *cm__timings_json(const cm_report_t *r) {
  json_t *tm = json_object();
  json_object_set_new(tm, "parse", json_real(r->t_parse));
  json_object_set_new(tm, "assemble", json_real(r->t_assemble));
  json_object_set_new(tm, "factor", json_real(r->t_factor));
  json_object_set_new(tm, "operator", json_real(r->t_operator));
  json_object_set_new(tm, "eigen", json_real(r->t_eigen));
  json_object_set_new(tm, "report", json_real(r->t_report));
  return tm;
}

json_t *cm__report_json(const cm_report_t *r, int flags) {
  json_t *o = json_object();
  json_object_set_new(o, "format", json_string("cmodes-report"));
  json_object_set_new(o, "version", json_integer(1));
  json_object_set_new(
      o, "status",
      json_string(r->status == CM_NOT_CONVERGED ? "not_converged" : "ok"));
  json_object_set_new(o, "omega_max", cm__num(r->omega_max));
  json_object_set_new(o, "warning", cm__str(r->warning));
  json_object_set_new(o, "model", cm__model_json(r));
  json_object_set_new(o, "modes", cm__modes_json(r));
  json_object_set_new(o, "per_contact", cm__per_contact_json(r));
  json_object_set_new(o, "bounds", cm__bounds_json(r));
  json_object_set_new(o, "timestep", cm__timestep_json(r));
  json_object_set_new(o, "accuracy", cm__accuracy_json(r));
  json_object_set_new(o, "deck", cm__deck_json(r));
  json_object_set_new(o, "counts", cm__counts_json(r));
  json_object_set_new(o, "components", cm__components_json(r));
  json_object_set_new(o, "solver", cm__solver_json(r));
  if (!(flags & CM_JSON_NO_TIMINGS))
    json_object_set_new(o, "timings", cm__timings_json(r));
  return o;
}

char *cm_report_to_json(const cm_report_t *r, int flags) {
  cm__jbad = 0;
  json_t *o = cm__report_json(r, flags);
  if (!o || cm__jbad) { /* a member lost to an allocation failure */
    json_decref(o);
    return NULL;
  }
  size_t jf = JSON_REAL_PRECISION(17) |
              ((flags & CM_JSON_INDENT) ? JSON_INDENT(2) : JSON_COMPACT);
  char *s = json_dumps(o, jf);
  json_decref(o);
  return s;
}
