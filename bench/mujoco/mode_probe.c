/* mode_probe.c: the frequency of a contact mode as MuJoCo itself
 * integrates it. Loads MODEL, simulates it for 1 s to rest, prints each
 * constraint row's K, B, imp (efc_KBIP), R and diagApprox, then adds a
 * velocity 1e-5 * (v_1 .. v_nv) and counts the zero crossings of the
 * displacement projected on v over 0.03 s: omega = 2 pi periods / span.
 * Not built by CMake (MuJoCo is optional); see README.md. */
#include <mujoco/mujoco.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  char err[1000];
  mjModel *m = argc > 1 ? mj_loadXML(argv[1], NULL, err, sizeof err) : NULL;
  if (!m || argc != 2 + m->nv) {
    fprintf(stderr, "usage: mode_probe MODEL.xml V_1 ... V_nv%s%s\n",
            m ? "" : ": ",
            m          ? ""
            : argc > 1 ? err
                       : "");
    return 2;
  }
  mjData *d = mj_makeData(m);
  int nv = m->nv;
  while (d->time < 1.0)
    mj_step(m, d);
  double *q0 = malloc(sizeof(double) * nv), *v = malloc(sizeof(double) * nv);
  for (int j = 0; j < nv; j++)
    q0[j] = d->qpos[j], v[j] = atof(argv[2 + j]);
  for (int i = 0; i < d->nefc; i++)
    printf("row %d: K %.10g B %.10g imp %.10g R %.10g diagApprox %.10g\n", i,
           d->efc_KBIP[4 * i], d->efc_KBIP[4 * i + 1], d->efc_KBIP[4 * i + 2],
           d->efc_R[i], d->efc_diagApprox[i]);
  for (int j = 0; j < nv; j++)
    d->qvel[j] += 1e-5 * v[j];
  double prev = 0, t0 = -1, t1 = 0, start = d->time;
  int periods = 0;
  while (d->time < start + 0.03) {
    mj_step(m, d);
    double y = 0;
    for (int j = 0; j < nv; j++)
      y += v[j] * (d->qpos[j] - q0[j]);
    if (prev < 0 && y >= 0) { /* upward crossing, interpolated */
      double tc = d->time - m->opt.timestep * y / (y - prev);
      if (t0 < 0)
        t0 = tc;
      else
        t1 = tc, periods++;
    }
    prev = y;
  }
  printf("along the kick: %d periods, omega %.2f rad/s\n", periods,
         periods ? 2 * M_PI * periods / (t1 - t0) : 0.0);
  free(q0), free(v);
  mj_deleteData(d);
  mj_deleteModel(m);
  return 0;
}
