/* report_text.c: the report for a person to read. Not for machines
 * (report_json.c is the stable format). */
#include "internal.h"

#include <math.h>

static void cm__h(FILE *f, const char *label, const cm_step_t *s) {
  if (isnan(s->h_s)) {
    fprintf(f, "  %-22s none      (%s)\n", label, s->note ? s->note : "");
    return;
  }
  fprintf(f, "  %-22s %-12.6g s   certified %.6g s", label, s->h_s,
          s->certified_s);
  if (!isnan(s->certified_prob_s))
    fprintf(f, "   probabilistic %.6g s", s->certified_prob_s);
  fprintf(f, "\n");
}

/* The counts lines: bodies, contacts, dofs, free motions and zero modes
 * (and when the rank they come from is not sharp, a line saying so). */
static void cm__text_counts(const cm_report_t *r, FILE *f) {
  fprintf(f, "\ncounts  bodies %d (moving %d, fixed %d, free %d)  contacts %d",
          r->nbodies, r->moving_bodies, r->fixed_bodies, r->free_bodies,
          r->ncontacts);
  if (r->nrows > r->ncontacts)
    fprintf(f, " (rows %d with the tangents)", r->nrows);
  else if (r->nrows < r->ncontacts) /* only a dashpot alone has no row */
    fprintf(f, " (rows %d%s; a dashpot alone has none)", r->nrows,
            r->tangential ? " with the tangents" : "");
  fputc('\n', f);
  fprintf(f, "        dofs %d, active %d, free motions removed %d", r->ndofs,
          r->active_dofs, r->dropped_dofs);
  if (r->free_motions >= 0)
    fprintf(f, ", free motions %d, zero modes %d", r->free_motions,
            r->zero_modes);
  if (r->free_motions >= 0 && r->rank_sharp == 0)
    fprintf(f, "\n        not sharp: the sparse QR dropped columns near its "
               "tolerance as dependent (J has singular values at the "
               "threshold; docs/math.md)");
}
/* The solver line: method, sizes, products (those of the search for
 * missed copies among them, when it made any), convergence. */
static void cm__text_solver(FILE *f, const cm_report_t *r) {
  fprintf(f, "\nsolver  %s, nev %d, ncv %d, iterations %d, matvecs %d",
          r->method, r->nev, r->ncv, r->iterations, r->matvecs);
  if (r->search_matvecs > 0)
    fprintf(f, " (%d in the search for copies)", r->search_matvecs);
  fprintf(f, ", %s, tol %g\n", r->converged ? "converged" : "NOT converged",
          r->tol);
}

int cm_report_write_text(const cm_report_t *r, FILE *f) {
  fprintf(f, "cmodes report%s\n",
          r->status == CM_NOT_CONVERGED ? "  [NOT CONVERGED: partial result]"
                                        : "");
  fprintf(f, "\nomega_max            %.10g rad/s  (%.6g Hz)\n", r->omega_max,
          r->omega_max / (2 * M_PI));
  if (r->warning)
    fprintf(f, "WARNING              %s\n", r->warning);
  fprintf(f, "bounds               %.10g <= omega_max <= %.10g rad/s\n",
          r->omega_lower, r->omega_upper);
  if (r->omega_upper_prob > 0)
    fprintf(f,
            "probabilistic bound  omega_max <= %.10g rad/s except with "
            "probability %g (%d Lanczos steps)\n",
            r->omega_upper_prob, r->failure_probability, r->prob_steps);
  if (r->ncontacts)
    fprintf(f,
            "per-contact estimate %.10g rad/s (contact %d): coupled/"
            "per-contact = %.4f\n",
            r->pc_omega_max, r->pc_contact, r->pc_ratio);
  fprintf(f,
          "\nstable time step (critical; certified from the upper bound; "
          "probabilistic from the probabilistic bound)\n"
          "  model: %s%s\n",
          r->model ? r->model : "normal springs only",
          r->dashpots ? " (central difference with the dashpots; RK and "
                        "Newmark undamped)"
                      : "");
  cm__h(f, "central difference", &r->central_difference);
  fprintf(f, "  %-22s (also leapfrog, velocity Verlet, symplectic Euler%s)\n",
          "", r->damping_ratio > 0 || r->dashpots ? "; damped" : "");
  if (r->dashpots && r->damped_component >= 0 && isnan(r->damped_zeta))
    fprintf(f, /* no spring: dashpots alone (cm__damped_step) */
            "  %-22s (set by the dashpots alone of component %d, no spring; "
            "%d solves)\n  %-22s none      (no spring)\n",
            "", r->damped_component, r->damped_iterations,
            "CD without dashpots");
  else if (r->dashpots && r->damped_component >= 0)
    fprintf(f,
            "  %-22s (set by a mode of component %d, effective damping "
            "ratio %.3g; each listed mode alone: %.6g s; %d solves)\n"
            "  %-22s %-12.6g s   certified %.6g s   probabilistic %.6g s\n",
            "", r->damped_component, r->damped_zeta, r->damped_modal_h_s,
            r->damped_iterations, "CD without dashpots", r->cd_undamped.h_s,
            r->cd_undamped.certified_s, r->cd_undamped.certified_prob_s);
  if (r->deck_timestep_s > 0)
    fprintf(f, "  %-22s %-12.6g s   = %.3g of the critical step%s\n",
            "the deck's step", r->deck_timestep_s, r->deck_fraction,
            r->deck_fraction >= 1 ? " (UNSTABLE)" : "");
  cm__h(f, "RK3", &r->rk3);
  cm__h(f, "RK4", &r->rk4);
  cm__h(f, "explicit Euler", &r->explicit_euler);
  char nm[64];
  snprintf(nm, sizeof nm, "Newmark(%.3g, %.3g)", r->newmark_gamma,
           r->newmark_beta);
  cm__h(f, nm, &r->newmark);
  if (!isnan(r->accuracy_h_s))
    fprintf(f,
            "  %-22s %-12.6g s   (CD frequency error of the top mode <= "
            "%g)\n",
            "accuracy step", r->accuracy_h_s, r->freq_tol);
  fprintf(f,
          "\nmodes (omega rad/s, residual, top contacts by strain energy)\n");
  for (int i = 0; i < r->nmodes; i++) {
    const cm_mode_t *m = &r->modes[i];
    fprintf(f, "  %2d  %14.8g  res %.1e  comp %d:", i + 1, m->omega,
            m->residual, m->component);
    if (r->dashpots)
      fprintf(f, "  zeta %.3g", m->zeta);
    for (int j = 0; j < m->ncontacts && j < 3; j++) {
      const cm_share_t *c = &m->contacts[j];
      if (c->name) /* a named contact or row: its name */
        fprintf(f, "  %s %.3f", c->name, c->share);
      else if (c->a_name) /* a scene's: its index and bodies */
        fprintf(f, "  c%d(%s-%s) %.3f", c->index, c->a_name,
                c->b_name ? c->b_name : "?", c->share);
      else /* a row of J given as matrices */
        fprintf(f, "  c%d %.3f", c->index, c->share);
    }
    fprintf(f, "\n");
    if (m->nbodies) {
      fprintf(f, "      bodies:");
      for (int j = 0; j < m->nbodies && j < 3; j++)
        fprintf(f, "  %s %.3f", m->bodies[j].name, m->bodies[j].share);
      fprintf(f, "\n");
    }
    if (m->ndofs) { /* a matrix system's dofs (their col_names) */
      fprintf(f, "      dofs:");
      for (int j = 0; j < m->ndofs && j < 3; j++)
        fprintf(f, "  %s %.3f", m->dofs[j].name, m->dofs[j].share);
      fprintf(f, "\n");
    }
  }
  cm__text_counts(r, f);
  fprintf(f, "\ncomponents %d", r->ncomp);
  if (r->nties > 1) { /* several at the top (to the solver tolerance) */
    fprintf(f, "; %d tie at the top frequency (to tol %g) and set the step:",
            r->nties, r->tol);
    for (int i = 0; i < r->nties_listed && i < 20; i++)
      fprintf(f, "%s %s%s%d%s", i ? "," : "",
              r->tie_names[i] ? r->tie_names[i] : "",
              r->tie_names[i] ? " (component " : "component ", r->ties[i],
              r->tie_names[i] ? ")" : "");
    if (r->nties > 20)
      fprintf(f, " and %d more", r->nties - 20);
  } else if (r->comp_max >= 0) {
    fprintf(f, "; component %d sets the step", r->comp_max);
  }
  cm__text_solver(f, r);
  fprintf(f,
          "timings parse %.3g s, assemble %.3g s, factor %.3g s, operator "
          "%.3g s, eigen %.3g s, report %.3g s\n",
          r->t_parse, r->t_assemble, r->t_factor, r->t_operator, r->t_eigen,
          r->t_report);
  return ferror(f) ? CM_IO : CM_OK;
}
