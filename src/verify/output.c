/* output.c: the verification result as JSON (jansson) and as a text table.
 * Not for computing anything. */
#include "verify/verify_internal.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *cm__vmodel_name(int flag) {
  switch (flag) {
  case CM_VERIFY_LINEAR:
    return "linear";
  case CM_VERIFY_UNILATERAL:
    return "unilateral";
  case CM_VERIFY_NONLINEAR:
    return "nonlinear";
  case CM_VERIFY_FULL:
    return "full";
  default:
    return "?";
  }
}

static const char *cm__vinteg_name(int flag) {
  return flag == CM_VERIFY_RK4 ? "rk4" : "central_difference";
}

/* JSON number, or null when not finite. */
static json_t *cm__vnum(double x) {
  return isfinite(x) ? json_real(x) : json_null();
}

static json_t *cm__vrun_json(const cm_verify_run_t *r) {
  json_t *o = json_object();
  json_object_set_new(o, "mode", json_integer(r->mode));
  json_object_set_new(o, "amplitude", cm__vnum(r->amplitude));
  json_object_set_new(o, "step_fraction", cm__vnum(r->step_fraction));
  json_object_set_new(o, "h_s", cm__vnum(r->h_s));
  json_object_set_new(o, "model", json_string(cm__vmodel_name(r->model)));
  json_object_set_new(o, "integrator",
                      json_string(cm__vinteg_name(r->integrator)));
  json_object_set_new(o, "steps", json_integer(r->nsteps));
  json_object_set_new(o, "omega_pred", cm__vnum(r->omega_pred));
  json_object_set_new(o, "omega_shifted", cm__vnum(r->omega_shifted));
  json_object_set_new(o, "omega_meas", cm__vnum(r->omega_meas));
  json_object_set_new(o, "omega_corr", cm__vnum(r->omega_corr));
  json_object_set_new(o, "zeta_pred", cm__vnum(r->zeta_pred));
  json_object_set_new(o, "zeta_meas", cm__vnum(r->zeta_meas));
  json_object_set_new(o, "rel_err_raw", cm__vnum(r->err_raw));
  json_object_set_new(o, "rel_err", cm__vnum(r->err));
  json_object_set_new(o, "rel_err_vs_linear", cm__vnum(r->err_vs_linear));
  json_object_set_new(o, "measure_err", cm__vnum(r->meas_err));
  json_object_set_new(o, "periods", cm__vnum(r->periods));
  json_object_set_new(o, "contacts_opened", json_integer(r->opened));
  json_object_set_new(o, "openings", json_integer(r->openings));
  json_object_set_new(o, "max_open_at_once", json_integer(r->max_open));
  json_object_set_new(o, "verdict", json_string(r->verdict));
  return o;
}

static json_t *cm__vstab_json(const cm_verify_stability_t *s) {
  json_t *o = json_object(), *pc = json_object();
  json_object_set_new(o, "integrator",
                      json_string(cm__vinteg_name(s->integrator)));
  json_object_set_new(o, "h_pred_s", cm__vnum(s->h_pred_s));
  json_object_set_new(o, "h_undamped_s", cm__vnum(s->h_undamped_s));
  json_object_set_new(o, "h_bisect_s", cm__vnum(s->h_bisect_s));
  json_object_set_new(o, "h_stable_s", cm__vnum(s->h_stable_s));
  json_object_set_new(o, "h_unstable_s", cm__vnum(s->h_unstable_s));
  json_object_set_new(o, "rel_err", cm__vnum(s->rel_err));
  json_object_set_new(o, "trials", json_integer(s->trials));
  json_object_set_new(o, "trial_steps", json_integer(s->trial_steps));
  json_object_set_new(pc, "h_s", cm__vnum(s->h_pc_s));
  json_object_set_new(pc, "unstable", json_boolean(s->pc_unstable));
  json_object_set_new(pc, "steps", json_integer(s->pc_steps));
  json_object_set_new(pc, "energy_growth", cm__vnum(s->pc_growth));
  json_object_set_new(o, "per_contact", pc);
  return o;
}

char *cm_verify_to_json(const cm_verify_result_t *r, int flags) {
  if (!r)
    return NULL;
  json_t *root = json_object(), *eq = json_object(), *pr = json_object();
  json_t *modes = json_array(), *runs = json_array(), *stab = json_array();
  json_object_set_new(root, "dim", json_integer(r->dim));
  json_object_set_new(root, "bodies", json_integer(r->nbodies));
  json_object_set_new(root, "moving_bodies", json_integer(r->moving_bodies));
  json_object_set_new(root, "contacts", json_integer(r->ncontacts));
  json_object_set_new(root, "rows", json_integer(r->nrows));
  json_object_set_new(root, "tangential", json_boolean(r->tangential));
  json_object_set_new(root, "dashpots", json_boolean(r->dashpots));
  json_object_set_new(eq, "preload", json_string(r->preload));
  if (!strcmp(r->preload, "gravity")) {
    json_t *g = json_array();
    for (int t = 0; t < r->dim; t++)
      json_array_append_new(g, json_real(r->gravity[t]));
    json_object_set_new(eq, "gravity", g);
  }
  json_object_set_new(eq, "min_overlap_m", cm__vnum(r->min_overlap));
  json_object_set_new(eq, "min_overlap_contact",
                      json_integer(r->min_overlap_contact));
  json_object_set_new(eq, "max_overlap_m", cm__vnum(r->max_overlap));
  json_object_set_new(eq, "bilateral_contacts",
                      json_integer(r->bilateral_contacts));
  json_object_set_new(root, "equilibrium", eq);
  json_object_set_new(pr, "omega_max", cm__vnum(r->omega_max));
  json_object_set_new(pr, "pc_omega_max", cm__vnum(r->pc_omega_max));
  for (int i = 0; i < r->nmodes; i++) {
    json_t *md = json_object();
    json_object_set_new(md, "mode", json_integer(r->mode_index[i]));
    json_object_set_new(md, "omega", cm__vnum(r->mode_omega[i]));
    json_array_append_new(modes, md);
  }
  json_object_set_new(pr, "modes", modes);
  json_object_set_new(root, "predicted", pr);
  for (int i = 0; i < r->nruns; i++)
    json_array_append_new(runs, cm__vrun_json(&r->runs[i]));
  json_object_set_new(root, "runs", runs);
  for (int i = 0; i < r->nstab; i++)
    json_array_append_new(stab, cm__vstab_json(&r->stab[i]));
  json_object_set_new(root, "stability", stab);
  if (!(flags & CM_JSON_NO_TIMINGS))
    json_object_set_new(root, "seconds", json_real(r->seconds));
  size_t jf = JSON_REAL_PRECISION(17) | JSON_PRESERVE_ORDER;
  jf |= (flags & CM_JSON_INDENT) ? JSON_INDENT(2) : JSON_COMPACT;
  char *txt = json_dumps(root, jf);
  json_decref(root);
  return txt;
}

int cm_verify_write_text(const cm_verify_result_t *r, FILE *f) {
  if (!r || !f)
    return CM_USAGE;
  fprintf(f, "scene: %dD, %d moving bodies, %d contacts", r->dim,
          r->moving_bodies, r->ncontacts);
  if (r->tangential || r->dashpots)
    fprintf(f, " (%d rows: normal%s springs%s)", r->nrows,
            r->tangential ? " + tangential" : "",
            r->dashpots ? " + dashpots" : "");
  fprintf(f, "\n");
  if (!strcmp(r->preload, "gravity")) {
    fprintf(f, "preload: gravity (");
    for (int t = 0; t < r->dim; t++)
      fprintf(f, "%s%g", t ? ", " : "", r->gravity[t]);
    fprintf(f, ") m/s^2");
  } else if (!strcmp(r->preload, "none"))
    fprintf(f, "preload: none (stability only)");
  else
    fprintf(f, "preload: %s contact forces", r->preload);
  if (strcmp(r->preload, "none"))
    fprintf(f, "; overlap min %.4g m (contacts[%d]), max %.4g m",
            r->min_overlap, r->min_overlap_contact, r->max_overlap);
  if (r->bilateral_contacts)
    fprintf(f, "; %d unloaded contacts kept as bilateral joints",
            r->bilateral_contacts);
  fprintf(f, "\n");
  fprintf(f,
          "predicted: omega_max %.6g rad/s, per-contact estimate %.6g "
          "rad/s\n",
          r->omega_max, r->pc_omega_max);
  if (r->nruns) {
    /* with dashpots two more columns: the effective damping ratio
     * predicted (core) and measured from the decay */
    fprintf(f,
            "\n%-4s %-11s %-6s %-5s %-10s %-4s %-11s %-13s %-13s %-10s "
            "%-10s ",
            "mode", "omega_pred", "amp", "step", "model", "int", "h_s",
            "omega_meas", "omega_corr", "err_raw", "err");
    if (r->dashpots)
      fprintf(f, "%-9s %-9s ", "zeta_pred", "zeta_meas");
    fprintf(f, "%-6s %s\n", "opened", "verdict");
    for (int i = 0; i < r->nruns; i++) {
      const cm_verify_run_t *u = &r->runs[i];
      char op[32];
      snprintf(op, sizeof op, "%d/%d", u->opened, u->max_open);
      fprintf(f,
              "%-4d %-11.6g %-6g %-5g %-10s %-4s %-11.4e %-13.8g "
              "%-13.8g %-+10.2e %-+10.2e ",
              u->mode, u->omega_pred, u->amplitude, u->step_fraction,
              cm__vmodel_name(u->model),
              u->integrator == CM_VERIFY_RK4 ? "rk4" : "cd", u->h_s,
              u->omega_meas, u->omega_corr, u->err_raw, u->err);
      if (r->dashpots)
        fprintf(f, "%-9.5f %-9.5f ", u->zeta_pred, u->zeta_meas);
      fprintf(f, "%-6s %s\n", op, u->verdict);
    }
  }
  if (r->nstab) {
    fprintf(f,
            "\nstability of the linear model (energy growth > 1e6 from a "
            "seeded random start%s):\n",
            r->dashpots ? ", counted from its running minimum; with "
                          "dashpots cd's h_pred is the damped limit, rk4's "
                          "the undamped one"
                        : "");
    fprintf(f, "%-4s %-12s %-12s %-10s %-6s %-12s %s\n", "int", "h_pred_s",
            "h_bisect_s", "rel_err", "trials", "h_percontact", "outcome");
    for (int i = 0; i < r->nstab; i++) {
      const cm_verify_stability_t *s = &r->stab[i];
      char outcome[128];
      if (s->pc_unstable)
        snprintf(outcome, sizeof outcome,
                 "unstable: energy x1e6 after %ld steps", s->pc_steps);
      else
        snprintf(outcome, sizeof outcome,
                 "stable for %ld steps (max growth %.3g)", s->pc_steps,
                 s->pc_growth);
      fprintf(f, "%-4s %-12.6e %-12.6e %-+10.2e %-6d %-12.6e %s\n",
              s->integrator == CM_VERIFY_RK4 ? "rk4" : "cd", s->h_pred_s,
              s->h_bisect_s, s->rel_err, s->trials, s->h_pc_s, outcome);
    }
  }
  return ferror(f) ? CM_IO : CM_OK;
}
