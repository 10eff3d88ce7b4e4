/* test_analysis.c: the analysis object (cm_analysis_*): its report is
 * cm_analyze's bit for bit, its shapes solve J^T K J phi = lambda M phi
 * (checked against dense matrices and LAPACK's dsygv), and bad calls get
 * statuses, not crashes. */
#include "cmodes.h"
#include "cmtest.h"

#include "internal.h"

#include <lapacke.h>
#include <unistd.h>

static const char *cm__analysis_files[] = {
    "bar2d.json",        "bar3d.json",      "crystal_fcc.json",
    "crystal_hex.json",  "crystal_sc.json", "fleet.json",
    "pile2d.json",       "pile3d.json",     "stack_boxes.json",
    "stack_spheres.json"};
#define CM__NFILES (int)(sizeof cm__analysis_files / sizeof *cm__analysis_files)

static cm_scene_t *cm__analysis_read(cm_context_t *ctx, const char *file) {
  char path[1024];
  snprintf(path, sizeof path, "%s/data/%s", CM_SOURCE_DIR, file);
  cm_scene_t *scene = NULL;
  if (cm_scene_read_file(ctx, path, &scene))
    return NULL;
  return scene;
}

/* The report, with and without shapes, is cm_analyze's: the same JSON text
 * without timings, on every scene in data/ (cm_analyze on 1 thread, the
 * analysis on 2). */
CM_TEST(analysis_report_bits) {
  for (int f = 0; f < CM__NFILES; f++) {
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_scene_t *scene = cm__analysis_read(&ctx, cm__analysis_files[f]);
    CMT_TRUE(scene != NULL);
    cm_options_t o;
    cm_options_init(&o);
    o.modes = 8;
    cm_report_t *ref = NULL;
    ctx.threads = 1; /* the reference on one thread, the object on two */
    int st_ref = cm_analyze(&ctx, scene, &o, &ref);
    ctx.threads = 2;
    CMT_TRUE(st_ref >= 0);
    char *want = cm_report_to_json(ref, CM_JSON_NO_TIMINGS);
    for (int flags = 0; flags <= CM_ANALYSIS_VECTORS; flags++) {
      cm_analysis_t *a = NULL;
      CMT_EQ_INT(cm_analysis_create(&ctx, scene, NULL, &o, &a), CM_OK);
      CMT_TRUE(cm_analysis_report(a) == NULL);
      CMT_EQ_INT(cm_analysis_solve(&ctx, a, flags), st_ref);
      char *got = cm_report_to_json(cm_analysis_report(a), CM_JSON_NO_TIMINGS);
      CMT_TRUE(want && got);
      if (strcmp(want, got))
        CMT_FAIL("%s (flags %d): the analysis' report differs from "
                 "cm_analyze's",
                 cm__analysis_files[f], flags);
      CMT_TRUE((cm_analysis_vectors(a) != NULL) == (flags != 0));
      free(got);
      cm_analysis_destroy(&a);
      CMT_TRUE(a == NULL);
    }
    free(want);
    cm_report_destroy(&ref);
    cm_scene_destroy(&scene);
  }
}

/* The report of a scene whose records were freed once assembled
 * (cm__scene_release_records: `cmodes analyze` and the server's POST) is
 * cm_analyze's, bit for bit, on every scene in data/ and on the LAMMPS
 * deck, whose dashpots keep the records (the damped step reads them). */
static void cm__released_same(cm_scene_t *scene, cm_scene_t *copy,
                              const char *what, int want_freed) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_options_t o;
  cm_options_init(&o);
  o.modes = 8;
  cm_report_t *ref = NULL, *got = NULL;
  cm_system_t *sys = NULL;
  int st_ref = cm_analyze(&ctx, scene, &o, &ref);
  CMT_TRUE(st_ref >= 0);
  CMT_EQ_INT(cm_system_assemble(&ctx, copy, &sys), CM_OK);
  int nb = copy->nbodies, nc = copy->ncontacts;
  CMT_EQ_INT(cm__scene_release_records(copy, sys), want_freed);
  CMT_TRUE((copy->contacts == NULL) == want_freed);
  CMT_TRUE((copy->bodies == NULL) == want_freed);
  CMT_EQ_INT(copy->nbodies, nb); /* the counts stay, for the names */
  CMT_EQ_INT(copy->ncontacts, nc);
  CMT_EQ_INT(cm_analyze_system(&ctx, sys, copy, &o, &got), st_ref);
  char *a = cm_report_to_json(ref, CM_JSON_NO_TIMINGS);
  char *b = cm_report_to_json(got, CM_JSON_NO_TIMINGS);
  CMT_TRUE(a && b);
  if (a && b && strcmp(a, b))
    CMT_FAIL("%s: the report after the records were freed differs from "
             "cm_analyze's",
             what);
  for (int i = 0; i < nb; i++) /* the names outlive the records */
    if (cm_scene_body_name(scene, i) != cm_scene_body_name(copy, i) &&
        strcmp(cm_scene_body_name(scene, i), cm_scene_body_name(copy, i)))
      CMT_FAIL("%s: body %d's name changed", what, i);
  free(a), free(b);
  cm_report_destroy(&ref), cm_report_destroy(&got);
  cm_system_destroy(&sys);
}

CM_TEST(analysis_released_records_same_report) {
  for (int f = 0; f < CM__NFILES; f++) {
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_scene_t *scene = cm__analysis_read(&ctx, cm__analysis_files[f]);
    cm_scene_t *copy = cm__analysis_read(&ctx, cm__analysis_files[f]);
    CMT_TRUE(scene && copy);
    if (scene && copy)
      cm__released_same(scene, copy, cm__analysis_files[f], 1);
    cm_scene_destroy(&scene), cm_scene_destroy(&copy);
  }
  char deck[64];
  if (cmt_lammps_deck(deck))
    return;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *scene = NULL, *copy = NULL;
  CMT_EQ_INT(cm_scene_read_file(&ctx, deck, &scene), CM_OK);
  CMT_EQ_INT(cm_scene_read_file(&ctx, deck, &copy), CM_OK);
  if (scene && copy)
    cm__released_same(scene, copy, "data/lammps/in.pile (dashpots)", 0);
  cm_scene_destroy(&scene), cm_scene_destroy(&copy);
  unlink(deck);
}

/* Dense K = J^T diag(k) J and M (n x n, column-major) from the system. */
static void cm__analysis_dense(const cm_system_t *sys, double *K, double *M) {
  int n = sys->n;
  memset(K, 0, sizeof(double) * (size_t)n * n);
  memset(M, 0, sizeof(double) * (size_t)n * n);
  for (int r = 0; r < sys->nc; r++)
    for (int p = sys->Jp[r]; p < sys->Jp[r + 1]; p++)
      for (int q = sys->Jp[r]; q < sys->Jp[r + 1]; q++)
        K[(size_t)sys->Jj[q] * n + sys->Jj[p]] +=
            sys->Jx[p] * sys->k[r] * sys->Jx[q];
  for (int j = 0; j < n; j++)
    for (int p = sys->Mp[j]; p < sys->Mp[j + 1]; p++) {
      int i = sys->Mi[p];
      M[(size_t)j * n + i] = sys->Mx[p];
      M[(size_t)i * n + j] = sys->Mx[p];
    }
}

/* Every shape solves K phi = omega^2 M phi with phi^T M phi = 1, and the
 * top omega^2 is dsygv's largest eigenvalue of (K, M). */
CM_TEST(analysis_vectors_dense) {
  const char *files[] = {"bar3d.json", "stack_spheres.json", "stack_boxes.json",
                         "crystal_hex.json"};
  for (int f = 0; f < 4; f++) {
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_scene_t *scene = cm__analysis_read(&ctx, files[f]);
    CMT_TRUE(scene != NULL);
    cm_analysis_t *a = NULL;
    CMT_EQ_INT(cm_analysis_create(&ctx, scene, NULL, NULL, &a), CM_OK);
    CMT_EQ_INT(cm_analysis_solve(&ctx, a, CM_ANALYSIS_VECTORS), CM_OK);
    const cm_system_t *sys = cm_analysis_system(a);
    const cm_report_t *r = cm_analysis_report(a);
    const cm_vectors_t *v = cm_analysis_vectors(a);
    int n = sys->n;
    CMT_EQ_INT(v->ndofs, n);
    CMT_EQ_INT(v->nmodes, r->nmodes);
    CMT_TRUE(r->nmodes > 0);
    double *K = malloc(sizeof(double) * (size_t)n * n);
    double *M = malloc(sizeof(double) * (size_t)n * n);
    double *K2 = malloc(sizeof(double) * (size_t)n * n);
    double *M2 = malloc(sizeof(double) * (size_t)n * n);
    double *w = malloc(sizeof(double) * (size_t)n);
    cm__analysis_dense(sys, K, M);
    memcpy(K2, K, sizeof(double) * (size_t)n * n);
    memcpy(M2, M, sizeof(double) * (size_t)n * n);
    CMT_EQ_INT(LAPACKE_dsygv(LAPACK_COL_MAJOR, 1, 'N', 'L', n, K2, n, M2, n, w),
               0);
    CMT_REL(r->modes[0].lambda, w[n - 1], 1e-9);
    for (int k = 0; k < v->nmodes; k++) {
      double omega = 0;
      const double *phi = NULL, *z = NULL, *xi = NULL;
      CMT_EQ_INT(cm_analysis_mode(&ctx, a, k, &omega, &phi, &z, &xi), CM_OK);
      CMT_TRUE(omega == r->modes[k].omega);
      CMT_TRUE(phi == v->phi + (size_t)k * n);
      double lam = omega * omega, mm = 0, res = 0, scale = 0;
      for (int i = 0; i < n; i++) {
        double Kp = 0, Mp = 0;
        for (int j = 0; j < n; j++) {
          Kp += K[(size_t)j * n + i] * phi[j];
          Mp += M[(size_t)j * n + i] * phi[j];
        }
        mm += phi[i] * Mp;
        res += (Kp - lam * Mp) * (Kp - lam * Mp);
        scale += (lam * Mp) * (lam * Mp);
      }
      CMT_REL(mm, 1.0, 1e-10);
      if (lam > 0)
        CMT_LE(sqrt(res), 1e-8 * sqrt(scale));
    }
    free(K), free(M), free(K2), free(M2), free(w);
    cm_analysis_destroy(&a);
    cm_scene_destroy(&scene);
  }
}

/* Create and destroy without a solve, a borrowed system, taking the
 * report, and every bad call: a status and a message, never a crash
 * (the ASan build checks that nothing leaks). */
CM_TEST(analysis_lifecycle_errors) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_bar_options_t bo;
  cm_bar_options_init(&bo);
  cm_scene_t *scene = NULL;
  CMT_EQ_INT(cm_generate_bar(&ctx, &bo, &scene), CM_OK);
  cm_analysis_t *a = NULL;
  /* created, never solved */
  CMT_EQ_INT(cm_analysis_create(&ctx, scene, NULL, NULL, &a), CM_OK);
  CMT_TRUE(cm_analysis_system(a) != NULL);
  CMT_TRUE(cm_analysis_report(a) == NULL);
  CMT_TRUE(cm_analysis_vectors(a) == NULL);
  CMT_TRUE(cm_analysis_take_report(a) == NULL);
  CMT_EQ_INT(cm_analysis_mode(&ctx, a, 0, NULL, NULL, NULL, NULL), CM_USAGE);
  CMT_CONTAINS(ctx.message, "solve with CM_ANALYSIS_VECTORS first");
  cm_analysis_destroy(&a);
  CMT_TRUE(a == NULL);
  cm_analysis_destroy(&a); /* NULL: no-op */
  cm_analysis_destroy(NULL);
  /* bad arguments */
  CMT_EQ_INT(cm_analysis_create(&ctx, scene, NULL, NULL, NULL), CM_USAGE);
  CMT_EQ_INT(cm_analysis_create(&ctx, NULL, NULL, NULL, &a), CM_USAGE);
  CMT_CONTAINS(ctx.message, "give a scene, a system or both");
  CMT_TRUE(a == NULL);
  cm_options_t o;
  cm_options_init(&o);
  o.tol = 2;
  CMT_EQ_INT(cm_analysis_create(&ctx, scene, NULL, &o, &a), CM_USAGE);
  CMT_CONTAINS(ctx.message, "tol");
  CMT_TRUE(a == NULL);
  CMT_EQ_INT(cm_analysis_solve(&ctx, NULL, 0), CM_USAGE);
  CMT_EQ_INT(cm_analysis_mode(&ctx, NULL, 0, NULL, NULL, NULL, NULL), CM_USAGE);
  CMT_TRUE(cm_analysis_report(NULL) == NULL);
  /* a borrowed system; bad flags; modes out of range; the report taken */
  cm_system_t *sys = NULL;
  CMT_EQ_INT(cm_system_assemble(&ctx, scene, &sys), CM_OK);
  CMT_EQ_INT(cm_analysis_create(&ctx, scene, sys, NULL, &a), CM_OK);
  CMT_TRUE(cm_analysis_system(a) == sys);
  CMT_EQ_INT(cm_analysis_solve(&ctx, a, 4), CM_USAGE);
  CMT_CONTAINS(ctx.message, "unknown flags");
  CMT_EQ_INT(cm_analysis_solve(&ctx, a, 0), CM_OK); /* report, no shapes */
  CMT_TRUE(cm_analysis_vectors(a) == NULL);
  CMT_EQ_INT(cm_analysis_solve(&ctx, a, CM_ANALYSIS_VECTORS), CM_OK);
  int nm = cm_analysis_report(a)->nmodes;
  CMT_EQ_INT(nm, 2);
  CMT_EQ_INT(cm_analysis_mode(&ctx, a, nm, NULL, NULL, NULL, NULL), CM_USAGE);
  CMT_CONTAINS(ctx.message, "mode 2 does not exist: the report has 2 modes");
  CMT_EQ_INT(cm_analysis_mode(&ctx, a, -1, NULL, NULL, NULL, NULL), CM_USAGE);
  double omega = 0;
  CMT_EQ_INT(cm_analysis_mode(&ctx, a, 1, &omega, NULL, NULL, NULL), CM_OK);
  cm_report_t *r = cm_analysis_take_report(a);
  CMT_TRUE(r != NULL && cm_analysis_report(a) == NULL);
  CMT_TRUE(omega == r->modes[1].omega);
  /* the shapes stay after the report is taken */
  CMT_EQ_INT(cm_analysis_mode(&ctx, a, 0, &omega, NULL, NULL, NULL), CM_OK);
  CMT_TRUE(omega == r->modes[0].omega);
  cm_report_destroy(&r);
  cm_analysis_destroy(&a);
  cm_system_destroy(&sys); /* borrowed: still the caller's */
  cm_scene_destroy(&scene);
}
