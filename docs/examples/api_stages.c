/* api_stages.c: the pipeline stage by stage (docs/c-api.md): read a scene
 * file, assemble M and J, factor M and form B, take the two bounds, solve
 * the spectrum of the whole operator, and check the per-integrator steps.
 *
 *   cc api_stages.c $(pkg-config --cflags --libs cmodes) -lm -o api_stages
 *   ./api_stages data/bar2d.json
 *
 * tests/test_docs.c includes this file with main renamed. */
#include <cmodes.h>

#include <math.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: api_stages SCENE.json\n");
    return 2;
  }
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = 1; /* any count gives the same bits */
  cm_scene_t *scene = NULL;
  cm_system_t *sys = NULL;
  cm_operator_t *op = NULL;
  cm_spectrum_t *spec = NULL;

  /* ---- scene -> system -> operator ---- */
  int st = cm_scene_read_file(&ctx, argv[1], &scene);
  if (!st)
    st = cm_system_assemble(&ctx, scene, &sys);
  if (!st)
    st = cm_operator_create(&ctx, sys, &op); /* op points into sys */
  if (st)
    goto done;
  printf("%d contacts x %d active dofs (%d dofs, %d dropped), %d component(s)\n",
         sys->nc, sys->n, sys->ndofs, sys->dropped_dofs, sys->ncomp);

  /* ---- bounds: no eigen-solve needed ---- */
  double lo, hi;
  st = cm_operator_bounds(&ctx, op, &lo, &hi);
  if (st)
    goto done;
  printf("%.7f <= omega_max <= %.7f rad/s\n", lo, hi);

  /* ---- spectrum of the whole operator (one component here) ---- */
  cm_options_t opts;
  cm_options_init(&opts);
  opts.modes = 2;
  st = cm_spectrum_solve(&ctx, op, -1, &opts, &spec);
  if (st < 0)
    goto done;
  for (int i = 0; i < spec->nev; i++)
    printf("omega %d = %.7f rad/s (residual %.1e)\n", i + 1,
           sqrt(spec->lambda[i]), spec->residual[i]);

  /* ---- steps from the formulas ---- */
  double w = sqrt(spec->lambda[0]);
  printf("central difference %.9f s, RK4 %.9f s, certified CD %.9f s\n",
         cm_step_central_difference(w, 0.0), cm_step_rk4(w),
         cm_step_central_difference(hi, 0.0));

done:
  if (st < 0)
    fprintf(stderr, "api_stages: %s: %s\n", cm_status_message(st),
            ctx.message);
  cm_spectrum_destroy(&spec); /* all destroys accept NULL */
  cm_operator_destroy(&op);   /* before the system it points into */
  cm_system_destroy(&sys);
  cm_scene_destroy(&scene);
  return cm_status_exit(st);
}
