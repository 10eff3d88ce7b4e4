/* test_mujoco.c: `cmodes import mjcf` against MuJoCo's own dynamics
 * (bench/mujoco: mode_probe settles a model in MuJoCo, kicks it along a
 * mode and times the oscillation). MuJoCo's soft constraints oscillate at
 * the eigenvalues of (A + R)^-1 diag(K imp) A (docs/importers.md, "What
 * MuJoCo's own dynamics do"); the importer's penalty model is above them,
 * on the safe side. Built where MuJoCo is (CM_MJ_PROBE); otherwise the test
 * says so and passes. */
#include "cmtest.h"

#include <math.h>
#include <stdlib.h>

#ifdef CM_MJ_PROBE
/* Runs the probe on MODEL with the kick V; reads K, imp, R of its rows
 * (at most 2) and the measured omega. 0 on success. */
static int mj_probe(const char *model, const char *v, double K[2],
                    double imp[2], double R[2], double *omega) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s %s/bench/mujoco/%s %s 2>&1", CM_MJ_PROBE,
           CM_SOURCE_DIR, model, v);
  int code = -1, rows = 0;
  char *out = cmt_run(cmd, &code);
  *omega = -1;
  for (char *l = out ? strtok(out, "\n") : NULL; l; l = strtok(NULL, "\n")) {
    int i;
    double b, dg;
    if (rows < 2 &&
        sscanf(l, "row %d: K %lf B %lf imp %lf R %lf diagApprox %lf", &i,
               &K[rows], &b, &imp[rows], &R[rows], &dg) == 6)
      rows++;
    sscanf(l, "along the kick: %*d periods, omega %lf", omega);
  }
  free(out);
  return code == 0 && rows > 0 && *omega > 0 ? 0 : -1;
}

/* cmodes' omega_max of MODEL imported after 1 s of MuJoCo. */
static double mj_cmodes(const char *model) {
  char dir[64], cmd[2048];
  if (!cmt_tmpdir(dir, sizeof dir))
    return -1;
  snprintf(cmd, sizeof cmd,
           "%s import mjcf %s/bench/mujoco/%s --settle 1 -o %s/m 2>&1 && "
           "%s analyze --matrices %s/m/manifest.json --json",
           CM_BINARY, CM_SOURCE_DIR, model, dir, CM_BINARY, dir);
  int code = -1;
  char *out = cmt_run(cmd, &code);
  const char *at = out ? strstr(out, "\"omega_max\": ") : NULL;
  double w = at && code == 0 ? atof(at + 13) : -1;
  free(out);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  free(cmt_run(cmd, &code));
  return w;
}
#endif

CM_TEST(mjcf_vs_mujoco_dynamics) {
#ifndef CM_MJ_PROBE
  fprintf(stderr, "mjcf_vs_mujoco_dynamics: built without MuJoCo "
                  "(libmujoco-dev): nothing to compare\n");
#else
  /* one sphere (1 kg, a z slide: A = 1/m = 1) on the floor */
  double K[2], imp[2], R[2], w;
  CMT_EQ_INT(mj_probe("one.xml", "1", K, imp, R, &w), 0);
  double pred = sqrt(K[0] * imp[0] / (1 + R[0]));
  CMT_REL(w, pred, 5e-3);           /* measured: 979.6, predicted 980.6 */
  double wc = mj_cmodes("one.xml"); /* the importer: sqrt(K) */
  CMT_REL(wc, sqrt(K[0]), 1e-9);
  CMT_TRUE(wc >= w);
  /* two stacked: A = [[1, -1], [-1, 2]] (J = [[1, 0], [-1, 1]], M = I);
   * the eigenvalues of X = (A + R)^-1 D A, D = K imp (equal rows here) */
  CMT_EQ_INT(mj_probe("two.xml", "0.58578644 1", K, imp, R, &w), 0);
  double a11 = 1 + R[0], a12 = -1, a22 = 2 + R[1];
  double det = a11 * a22 - a12 * a12, d = K[0] * imp[0];
  /* (A + R)^-1 A times d, entries */
  double x11 = d * (a22 * 1 - a12 * -1) / det,
         x12 = d * (a22 * -1 - a12 * 2) / det;
  double x21 = d * (-a12 * 1 + a11 * -1) / det,
         x22 = d * (-a12 * -1 + a11 * 2) / det;
  double tr = x11 + x22, dx = x11 * x22 - x12 * x21;
  double l1 = 0.5 * (tr - sqrt(tr * tr - 4 * dx)),
         l2 = 0.5 * (tr + sqrt(tr * tr - 4 * dx));
  CMT_REL(w, sqrt(l1), 5e-3); /* measured 940.4, predicted 940.9 */
  wc = mj_cmodes("two.xml");
  CMT_TRUE(wc >= sqrt(l2)); /* 1375.3 >= 988.0: on the safe side */
#endif
}
