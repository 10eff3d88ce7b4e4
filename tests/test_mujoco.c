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

#ifdef CM_MJ_PROBE
/* Runs `cmodes import mjcf MODEL.xml ARGS -o DIR/out` in DIR on the model
 * text xml; its output, exit code in *code. */
static char *mj_import(const char *dir, const char *xml, const char *args,
                       int *code) {
  char path[128], cmd[1024];
  snprintf(path, sizeof path, "%s/model.xml", dir);
  cmt_write_text(path, xml);
  snprintf(cmd, sizeof cmd,
           "cd %s && rm -rf out && %s import mjcf model.xml %s -o out 2>&1",
           dir, CM_BINARY, args);
  return cmt_run(cmd, code);
}
#endif

/* What MuJoCo's warnings say of the pose is not ignored: a full contact
 * buffer dropped contacts (the system would lack rows: a step too large),
 * an unstable settle was reset by MuJoCo (not the settled pose); neither
 * leaves MuJoCo's MUJOCO_LOG.TXT behind. A --settle of more than 1e8
 * steps is refused before it starts. */
CM_TEST(mjcf_mujoco_warnings) {
#ifndef CM_MJ_PROBE
  fprintf(stderr, "mjcf_mujoco_warnings: built without MuJoCo "
                  "(libmujoco-dev): nothing to check\n");
#else
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  /* four spheres resting on the floor: four contacts */
  const char *four =
      "<mujoco>%s<worldbody><geom type=\"plane\" size=\"5 5 0.1\"/>"
      "<body pos=\"0 0 0.1\"><freejoint/><geom type=\"sphere\" size=\"0.1\" "
      "mass=\"1\"/></body><body pos=\"0.3 0 0.1\"><freejoint/><geom "
      "type=\"sphere\" size=\"0.1\" mass=\"1\"/></body><body pos=\"0.6 0 "
      "0.1\"><freejoint/><geom type=\"sphere\" size=\"0.1\" mass=\"1\"/>"
      "</body><body pos=\"0.9 0 0.1\"><freejoint/><geom type=\"sphere\" "
      "size=\"0.1\" mass=\"1\"/></body></worldbody></mujoco>";
  char xml[1024];
  int code;
  snprintf(xml, sizeof xml, four, "");
  char *out = mj_import(dir, xml, "--settle 0.5", &code);
  CMT_EQ_INT(code, 0);
  CMT_CONTAINS(out, "4 active contacts of 4");
  free(out);
  snprintf(xml, sizeof xml, four, "<size nconmax=\"2\"/>");
  out = mj_import(dir, xml, "--settle 0.5", &code);
  CMT_EQ_INT(code, cm_status_exit(CM_LIMIT));
  CMT_CONTAINS(out, "contact buffer filled up and it dropped contacts");
  CMT_CONTAINS(out, "nconmax");
  free(out);
  /* a slide spring of 1e9 N/m on 1 kg at 10 ms, explicit Euler */
  out = mj_import(dir,
                  "<mujoco><option timestep=\"0.01\" integrator=\"Euler\"/>"
                  "<worldbody><geom type=\"plane\" size=\"5 5 0.1\"/><body "
                  "pos=\"0 0 0.1\"><joint type=\"slide\" axis=\"1 0 0\" "
                  "stiffness=\"1e9\" ref=\"-0.1\"/><geom type=\"sphere\" "
                  "size=\"0.1\" mass=\"1\"/></body></worldbody></mujoco>",
                  "--settle 2", &code);
  CMT_EQ_INT(code, cm_status_exit(CM_NUMERIC));
  CMT_CONTAINS(out, "went unstable");
  free(out);
  snprintf(xml, sizeof xml, four, "");
  out = mj_import(dir, xml, "--settle 1e7", &code); /* 5e9 steps of 2 ms */
  CMT_EQ_INT(code, cm_status_exit(CM_USAGE));
  CMT_CONTAINS(out, "more than 1e+08");
  free(out);
  out = mj_import(dir, xml, "--keyframe rest", &code); /* no <key> */
  CMT_EQ_INT(code, cm_status_exit(CM_USAGE));
  CMT_CONTAINS(out, "--keyframe rest: no keyframe of that name; the model "
                    "has 0 keyframes");
  free(out);
  char log[128];
  snprintf(log, sizeof log, "%s/MUJOCO_LOG.TXT", dir);
  char *text = cmt_read_file(log);
  if (text)
    CMT_FAIL("MuJoCo wrote %s: %s", log, text);
  free(text);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  free(cmt_run(cmd, &code));
#endif
}
