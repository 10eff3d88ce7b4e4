/* api_bar.c: the reference planar bar of docs/math.md built in memory,
 * analysed with the C API and printed (docs/c-api.md walks through it).
 *
 *   cc api_bar.c $(pkg-config --cflags --libs cmodes) -o api_bar
 *
 * A bar (m = 2 kg, I = 0.005 kg m^2) rests on two penalty contacts at
 * x = -0.1 m and x = +0.1 m (k = 1e5 N/m each) against the world. The
 * coupled modes are translation sqrt(2 k / m) = 316.2277660 rad/s and
 * rocking sqrt(2 k d^2 / I) = 632.4555320 rad/s; the per-contact estimate
 * says 500 rad/s for both contacts.
 *
 * tests/test_docs.c includes this file with main renamed and checks what it
 * prints, so keep the output lines stable. */
#include <cmodes.h>

#include <stdio.h>
#include <stdlib.h>

/* Prints the failure recorded in ctx and returns the CLI-style exit code. */
static int fail(const cm_context_t *ctx, int st) {
  fprintf(stderr, "api_bar: %s (%s): %s [at %s]\n", cm_status_name(st),
          cm_status_message(st), ctx->message,
          ctx->path[0] ? ctx->path : "-");
  return cm_status_exit(st);
}

int main(void) {
  cm_context_t ctx;
  cm_context_init(&ctx); /* threads = 0: the OpenMP default */

  /* ---- the scene: one moving body, two contacts with the world ---- */
  cm_scene_t *scene = cm_scene_create(2); /* owned by us */
  if (!scene)
    return 1;
  cm_body_t bar;
  cm_body_init(&bar); /* moving, mass 1, identity inertia, at the origin */
  bar.mass = 2.0;        /* kg */
  bar.inertia[0] = 0.005; /* kg m^2 about the centre of mass (2D: scalar) */
  int ib = cm_scene_add_body(&ctx, scene, &bar, "bar"); /* copied */
  if (ib < 0) {
    cm_scene_destroy(&scene);
    return fail(&ctx, ib);
  }
  for (int i = 0; i < 2; i++) {
    cm_contact_t c;
    cm_contact_init(&c); /* b = CM_WORLD */
    c.a = ib;
    c.point[0] = i == 0 ? -0.1 : 0.1; /* m, world frame */
    c.normal[1] = 1.0;                /* unit normal from b (world) to a */
    c.stiffness = 1e5;                /* N/m */
    int ic = cm_scene_add_contact(&ctx, scene, &c, i == 0 ? "left" : "right");
    if (ic < 0) {
      cm_scene_destroy(&scene);
      return fail(&ctx, ic);
    }
  }

  /* ---- analyse: options start from their documented defaults ---- */
  cm_options_t opts;
  cm_options_init(&opts);
  opts.modes = 4; /* ask for more than exist: the bar has two */
  cm_report_t *rep = NULL;
  int st = cm_analyze(&ctx, scene, &opts, &rep);
  if (st < 0) { /* error: rep is NULL, ctx says why */
    cm_scene_destroy(&scene);
    return fail(&ctx, st);
  }
  if (st > 0) /* CM_NOT_CONVERGED: rep is a partial result */
    fprintf(stderr, "api_bar: warning: %s\n", cm_status_message(st));

  /* ---- print: the numbers, then the report as JSON ---- */
  printf("modes %d\n", rep->nmodes);
  for (int i = 0; i < rep->nmodes; i++)
    printf("mode %d omega %.7f rad/s residual %.1e\n", i + 1,
           rep->modes[i].omega, rep->modes[i].residual);
  printf("per-contact estimate %.7f rad/s (contact %d)\n", rep->pc_omega_max,
         rep->pc_contact);
  printf("bounds %.7f <= omega_max <= %.7f rad/s\n", rep->omega_lower,
         rep->omega_upper);
  printf("central difference step %.9f s (certified %.9f s)\n",
         rep->central_difference.h_s, rep->central_difference.certified_s);
  printf("accuracy step %.9f s (frequency error <= %g)\n", rep->accuracy_h_s,
         rep->freq_tol);
  char *json = cm_report_to_json(rep, CM_JSON_INDENT | CM_JSON_NO_TIMINGS);
  if (json)
    printf("%s\n", json);
  free(json); /* the JSON text is ours */

  /* ---- clean up: destroy takes the address and sets it to NULL ---- */
  cm_report_destroy(&rep);
  cm_scene_destroy(&scene);
  return json ? cm_status_exit(st) : 1;
}
