/* api_analysis.c: the analysis object (docs/c-api.md): one run of the
 * pipeline on a scene file, then its report and each mode's shape, the
 * gaps xi = J phi of its contacts and phi^T M phi, without analysing again.
 *
 *   cc api_analysis.c $(pkg-config --cflags --libs cmodes) -o api_analysis
 *   ./api_analysis data/bar2d.json
 *
 * tests/test_docs.c includes this file with main renamed. */
#include <cmodes.h>

#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: api_analysis SCENE.json\n");
    return 2;
  }
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *scene = NULL;
  cm_analysis_t *an = NULL;
  int st = cm_scene_read_file(&ctx, argv[1], &scene);
  if (!st) /* assembles the system; opts NULL: the defaults */
    st = cm_analysis_create(&ctx, scene, NULL, NULL, &an);
  if (!st) /* CM_OK or CM_NOT_CONVERGED (a partial report) */
    st = cm_analysis_solve(&ctx, an, CM_ANALYSIS_VECTORS);
  if (st < 0)
    goto done;
  const cm_report_t *rep = cm_analysis_report(an); /* borrowed */
  const cm_system_t *sys = cm_analysis_system(an);
  printf("omega_max %.7f rad/s, %d modes\n", rep->omega_max, rep->nmodes);
  for (int k = 0; k < rep->nmodes; k++) {
    double omega;
    const double *phi, *xi;
    st = cm_analysis_mode(&ctx, an, k, &omega, &phi, NULL, &xi);
    if (st)
      goto done;
    /* phi^T M phi with M's lower triangle (CSC): 1 for every mode */
    double mm = 0;
    for (int j = 0; j < sys->n; j++)
      for (int p = sys->Mp[j]; p < sys->Mp[j + 1]; p++)
        mm += phi[j] * sys->Mx[p] * phi[sys->Mi[p]] * (sys->Mi[p] == j ? 1 : 2);
    printf("mode %d omega %.7f rad/s, phi^T M phi %.12f, gaps", k + 1, omega,
           mm);
    for (int r = 0; r < sys->nc; r++)
      printf(" %.7f", xi[r]);
    printf("\n");
  }
done:
  if (st < 0)
    fprintf(stderr, "api_analysis: %s: %s\n", cm_status_message(st),
            ctx.message);
  cm_analysis_destroy(&an); /* before the scene it borrows */
  cm_scene_destroy(&scene);
  return cm_status_exit(st);
}
