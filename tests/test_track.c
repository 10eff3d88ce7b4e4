/* test_track.c: `cmodes track` on a real LAMMPS settling run
 * (data/lammps/series: 300 spheres, 13 snapshots, the in.pile contact
 * model): one line per snapshot, each equal to analysing that snapshot
 * alone through the library, warm starts saving products against cold
 * solves, and the SVG written. Not for the deck reader (test_lammps_deck.c). */
#include "cmodes.h"
#include "cmtest.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SERIES CM_SOURCE_DIR "/data/lammps/series/"

/* The report of one snapshot imported alone with the deck. */
static cm_report_t *track_alone(const cm_lammps_deck_t *deck, long step) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  o.periodic = CM_DUMP_PERIODIC_IMAGE;
  o.timestep = step;
  cm_dump_t *d = NULL;
  cm_scene_t *s = NULL;
  cm_report_t *r = NULL;
  int st = cm_lammps_deck_apply(&ctx, deck, &o);
  if (!st)
    st = cm_dump_read(&ctx, SERIES "series.dump", &o, &d);
  if (!st)
    st = cm_dump_to_scene(&ctx, d, &o, &s);
  if (!st)
    st = cm_analyze(&ctx, s, NULL, &r);
  if (st)
    CMT_FAIL("timestep %ld: %s", step, ctx.message);
  cm_dump_destroy(&d);
  cm_scene_destroy(&s);
  return r;
}

/* Runs track with extra arguments; returns its JSON lines parsed (array)
 * and the total matvecs. */
static json_t *track_run(const char *extra, long *matvecs) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "%s track %s --deck %sin.series --format jsonl -q %s 2>&1",
           CM_BINARY, SERIES "series.dump", SERIES, extra);
  int code = 0;
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  json_t *all = json_array();
  *matvecs = 0;
  for (char *line = out ? strtok(out, "\n") : NULL; line;
       line = strtok(NULL, "\n")) {
    json_error_t err;
    json_t *j = json_loads(line, 0, &err);
    if (!j) {
      CMT_FAIL("not a JSON line: %s", line);
      continue;
    }
    *matvecs += json_integer_value(json_object_get(j, "matvecs"));
    json_array_append_new(all, j);
  }
  free(out);
  return all;
}

CM_TEST(track_lammps_series) {
  if (access("/usr/bin/env", X_OK)) /* cmt_run needs a shell */
    return;
  long warm_mv = 0, cold_mv = 0, cold2_mv = 0;
  char svg[] = "/tmp/cmodes-track-XXXXXX";
  int fd = mkstemp(svg);
  if (fd >= 0)
    close(fd);
  char extra[128];
  snprintf(extra, sizeof extra, "--svg %s", svg);
  json_t *cold = track_run(extra, &cold_mv); /* the default */
  json_t *warm = track_run("--warm", &warm_mv);
  json_t *cold2 = track_run("--cold", &cold2_mv);
  CMT_EQ_INT((int)json_array_size(warm), 13);
  CMT_EQ_INT((int)json_array_size(cold), 13);
  CMT_EQ_INT(cold2_mv, cold_mv); /* --cold: the default, still accepted */
  /* issue 19: counted with the bound's run of its own that a warm start
   * needs (its start is not Gaussian), warm starts cost more products
   * (4608 against 4301 when measured): cold is the default */
  CMT_TRUE(cold_mv > 0 && cold_mv < warm_mv);
  fprintf(stderr, "track_lammps_series: matvecs warm %ld, cold %ld\n", warm_mv,
          cold_mv);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_lammps_deck_t *deck = NULL;
  CMT_EQ_INT(cm_lammps_deck_read(&ctx, SERIES "in.series", &deck), 0);
  long prev = -1;
  for (size_t i = 0; deck && i < 2 * json_array_size(warm); i++) {
    json_t *w =
        i % 2 ? json_array_get(warm, i / 2) : json_array_get(cold, i / 2);
    long step = (long)json_integer_value(json_object_get(w, "step"));
    CMT_EQ_INT((int)step, (int)(400 * (i / 2))); /* timestep order */
    CMT_TRUE(i % 2 || step > prev);
    prev = step;
    cm_report_t *r = track_alone(deck, step);
    if (!r)
      continue;
    double om = json_real_value(json_object_get(w, "omega_max"));
    double cd = json_real_value(json_object_get(w, "central_difference"));
    double ce = json_real_value(json_object_get(w, "certified"));
    double t = json_real_value(json_object_get(w, "time"));
    CMT_REL(om, r->omega_max, 1e-8);
    CMT_REL(cd, r->central_difference.h_s, 1e-7);
    CMT_REL(ce, r->central_difference.certified_s, 1e-6);
    CMT_REL(t, (double)step * 1e-4, 1e-12);
    CMT_EQ_INT((int)json_integer_value(json_object_get(w, "contacts")),
               r->ncontacts);
    CMT_REL(json_real_value(json_object_get(w, "deck_fraction")),
            1e-4 / r->central_difference.h_s, 1e-7);
    /* the limiting particle is mode 1's first body, by LAMMPS id */
    json_t *ids = json_object_get(w, "limiting_ids");
    const char *id0 = json_string_value(json_array_get(ids, 0));
    CMT_TRUE(id0 && r->nmodes && !strcmp(r->modes[0].bodies[0].name + 5, id0));
    cm_report_destroy(&r);
  }
  cm_lammps_deck_destroy(&deck);
  char *pic = cmt_read_file(svg);
  CMT_TRUE(pic && strstr(pic, "<svg") && strstr(pic, "polyline") &&
           strstr(pic, "deck's step"));
  free(pic);
  unlink(svg);
  json_decref(warm), json_decref(cold), json_decref(cold2);
}

CM_TEST(track_errors) {
  char cmd[1024];
  int code = 0;
  snprintf(cmd, sizeof cmd, "%s track %s 2>&1", CM_BINARY,
           SERIES "series.dump");
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 2);
  CMT_CONTAINS(out, "give --deck IN, or --k K");
  free(out);
  snprintf(cmd, sizeof cmd, "%s track %s --k 1000 2>&1", CM_BINARY,
           SERIES "in.series");
  out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 3);
  CMT_CONTAINS(out, "no ITEM: TIMESTEP line");
  free(out);
}
