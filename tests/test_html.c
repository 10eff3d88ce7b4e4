/* test_html.c: the HTML report, the full mode fields and the softening plan
 * (the browser checks are tests/browser/html_chromium.sh). */
#include "cmtest.h"
#include "internal.h"
#include "io/fields_io.h"
#include "report/report_html.h"

#include <math.h>
#include <unistd.h>

/* Full fields agree with the report's top lists; shares sum to 1. */
CM_TEST(html_fields_match_report) {
  const char *names[] = {"pile2d.json", "pile3d.json", "fleet.json",
                         "stack_boxes.json"};
  for (int q = 0; q < 4; q++) {
    cm_scene_t *s = cmt_data_scene(names[q]);
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_report_t *r = NULL;
    cm__fields_t f = {.want = 6};
    CMT_EQ_INT(cm__analyze_fields(&ctx, s, NULL, &r, &f), CM_OK);
    CMT_EQ_INT(f.nmodes, r->nmodes);
    CMT_EQ_INT(f.nc, s->ncontacts);
    for (int m = 0; m < f.nmodes; m++) {
      double sum = 0, ksum = 0;
      for (int c = 0; c < f.nc; c++)
        sum += f.share[(size_t)m * f.nc + c];
      for (int b = 0; b < f.nb; b++)
        ksum += f.kinetic[(size_t)m * f.nb + b];
      CMT_REL(sum, 1.0, 1e-9);
      CMT_REL(ksum, 1.0, 1e-9);
      for (int j = 0; j < r->modes[m].ncontacts; j++)
        CMT_REL(f.share[(size_t)m * f.nc + r->modes[m].contacts[j].index],
                r->modes[m].contacts[j].share, 1e-13);
      for (int j = 0; j < r->modes[m].nbodies; j++)
        CMT_REL(f.kinetic[(size_t)m * f.nb + r->modes[m].bodies[j].index],
                r->modes[m].bodies[j].share, 1e-13);
    }
    double pcmax = 0;
    for (int c = 0; c < f.nc; c++)
      pcmax = fmax(pcmax, f.pc_omega[c]);
    CMT_REL(pcmax, r->pc_omega_max, 1e-14);
    CMT_REL(f.comp_omega[r->comp_max], r->omega_max, 1e-14);
    /* the plain analysis gives the same report */
    cm_report_t *r2 = NULL;
    CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &r2), CM_OK);
    CMT_REL(r2->omega_max, r->omega_max, 0);
    cm_report_destroy(&r2);
    cm__fields_free(&f);
    cm_report_destroy(&r);
    cm_scene_destroy(&s);
  }
}

/* The plan reaches its target and the re-solve is the truth: analysing the
 * softened scene again gives the plan's step. */
CM_TEST(html_soften_plan_confirmed) {
  cm_scene_t *s = cmt_data_scene("pile2d.json");
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_report_t *r = NULL;
  cm__fields_t f = {.want = 6};
  CMT_EQ_INT(cm__analyze_fields(&ctx, s, NULL, &r, &f), CM_OK);
  cm__soften_t sp;
  double target = 1.1 * r->central_difference.h_s;
  cm_options_t o;
  cm_options_init(&o);
  CMT_EQ_INT(cm__soften_plan(&ctx, s, &o, r, &f, target, &sp), CM_OK);
  CMT_TRUE(sp.reached);
  CMT_TRUE(sp.n > 0 && sp.n < s->ncontacts / 4);
  CMT_LE(target, sp.h_s);
  cm_scene_t *t = cm_scene_copy(s);
  for (int i = 0; i < sp.n; i++) {
    CMT_TRUE(sp.factor[i] > 0 && sp.factor[i] < 1);
    t->contacts[sp.contact[i]].stiffness *= sp.factor[i];
  }
  cm_report_t *r2 = NULL;
  CMT_EQ_INT(cm_analyze(&ctx, t, &o, &r2), CM_OK);
  CMT_REL(r2->central_difference.h_s, sp.h_s, 1e-8);
  cm_report_destroy(&r2);
  cm_scene_destroy(&t);
  cm__soften_free(&sp);
  cm__fields_free(&f);
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
}

/* The page is self-contained, holds the headline with full precision and
 * the campaign table has one row per scene. */
CM_TEST(html_page_self_contained) {
  char cmd[1536];
  snprintf(cmd, sizeof cmd,
           "cd /tmp && %s report %s/data/bar2d.json %s/data/fleet.json "
           "--no-soften -o /tmp/cmt_html_%d.html && cat /tmp/cmt_html_%d.html",
           CM_BINARY, CM_SOURCE_DIR, CM_SOURCE_DIR, (int)getpid(),
           (int)getpid());
  int code;
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  CMT_TRUE(out != NULL);
  if (!out)
    return;
  CMT_TRUE(!strstr(out, "http://") && !strstr(out, "https://"));
  CMT_CONTAINS(out, "id=\"s0-h-cd\" data-v=\"0.003162277660168379\"");
  CMT_CONTAINS(out, "<table class=\"sort\" id=\"campaign\">");
  CMT_CONTAINS(out, "<a href=\"#s1\">");
  CMT_CONTAINS(out, "7 tie at the top frequency (within the solver "
                    "tolerance 1e-10) and set the step: <b>r2</b> "
                    "(component 2), <b>r3</b> (component 3)");
  free(out);
  snprintf(cmd, sizeof cmd, "rm -f /tmp/cmt_html_%d.html", (int)getpid());
  free(cmt_run(cmd, &code));
  /* usage errors */
  snprintf(cmd, sizeof cmd, "%s report %s/data/bar2d.json 2>&1", CM_BINARY,
           CM_SOURCE_DIR);
  out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 2);
  CMT_CONTAINS(out, "expected -o FILE.html");
  free(out);
}

/* The time-series page: the smallest step of the run, one row per line;
 * a line that is not track output is refused with its number. */
CM_TEST(html_track_page) {
  char in[256], out[256], cmd[1024];
  snprintf(in, sizeof in, "/tmp/cmt_track_%d.jsonl", (int)getpid());
  snprintf(out, sizeof out, "/tmp/cmt_track_%d.html", (int)getpid());
  FILE *f = fopen(in, "w");
  CMT_TRUE(f != NULL);
  if (!f)
    return;
  fputs("{\"step\": 0, \"time\": 0, \"contacts\": 5, \"omega_max\": 10, "
        "\"central_difference\": 0.2, \"certified\": 0.1, \"per_contact\": "
        "0.3, \"deck_fraction\": 0.5, \"limiting_ids\": [\"7\"]}\n"
        "{\"step\": 10, \"time\": 0.5, \"contacts\": 6, \"omega_max\": 20, "
        "\"central_difference\": 0.1, \"certified\": 0.05, \"per_contact\": "
        "0.3, \"deck_fraction\": 1.25, \"limiting_ids\": [\"8\", \"9\"]}\n",
        f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s report --track %s -o %s && cat %s", CM_BINARY,
           in, out, out);
  int code;
  char *html = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  CMT_CONTAINS(html, "id=\"t-hmin\" data-v=\"0.10000000000000001\"");
  CMT_CONTAINS(html, "id=\"t-deck\" data-v=\"1.25\"");
  CMT_CONTAINS(html, ">unstable<");
  CMT_CONTAINS(html, "<td class=\"l\">8, 9</td>");
  free(html);
  f = fopen(in, "a");
  if (f) {
    fputs("{\"step\": 20}\n", f);
    fclose(f);
  }
  snprintf(cmd, sizeof cmd, "%s report --track %s -o %s 2>&1", CM_BINARY, in,
           out);
  html = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 3);
  CMT_CONTAINS(html, "line 3");
  free(html);
  remove(in), remove(out);
}

/* With dashpots and a deck step the headline carries the damped step, the
 * undamped one, the modal limit and the deck's fraction, each equal to the
 * report's double. */
CM_TEST(html_headline_dashpots_deck) {
  cm_scene_t *s = cmt_data_scene("bar2d.json");
  for (int c = 0; c < s->ncontacts; c++)
    s->contacts[c].damping_n = 20, s->contacts[c].stiffness_t = 3e4;
  s->timestep_s = 1e-3;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_report_t *r = NULL;
  cm__fields_t f = {.want = 6};
  CMT_EQ_INT(cm__analyze_fields(&ctx, s, NULL, &r, &f), CM_OK);
  CMT_TRUE(r->dashpots && r->tangential);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  cm__html_item_t it = {"bar", s, r, &f, NULL};
  CMT_EQ_INT(cm__report_write_html(m, &it, 1, "bar"), CM_OK);
  fclose(m);
  char want[128];
  struct {
    const char *id;
    double v;
  } w[] = {{"s0-h-cd", r->central_difference.h_s},
           {"s0-h-undamped", r->cd_undamped.h_s},
           {"s0-h-modal", r->damped_modal_h_s},
           {"s0-h-deck", r->deck_timestep_s},
           {"s0-h-deck-frac", r->deck_fraction}};
  for (int i = 0; i < 5; i++) {
    snprintf(want, sizeof want, "id=\"%s\" data-v=\"%.17g\"", w[i].id, w[i].v);
    CMT_CONTAINS(buf, want);
  }
  CMT_CONTAINS(buf, "normal + tangential springs + dashpots");
  CMT_CONTAINS(buf, "<th>&zeta;</th>");
  free(buf);
  cm__fields_free(&f);
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
}

/* A contact across a tilted periodic boundary is drawn to the image of b
 * it touches (the VTK export: to the contact point): two spheres of radius 0.1
 * whose centres are 0.1 apart through the image b = (xy, ly) of a triclinic box
 * 2 long. In the side view (y-z) the line runs along y from a's centre to the
 * image's, 0.1 m: twice the drawn disc radius (r - delta / 2 = 0.05 m); drawn
 * to b's own centre it would span the box (1.9 m, 38 disc radii). */
CM_TEST(html_periodic_contact_to_image) {
  char dir[64], cmd[2048];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  snprintf(cmd, sizeof cmd,
           "cd %s && printf 'ITEM: TIMESTEP\\n1\\nITEM: NUMBER OF ATOMS\\n2\\n"
           "ITEM: BOX BOUNDS xy xz yz pp pp ff\\n0 3 1.0\\n0 2 0\\n0 2 0\\n"
           "ITEM: ATOMS id type x y z radius\\n1 1 0.05 0.05 0.5 0.1\\n"
           "2 1 1.05 1.95 0.5 0.1\\n' > t.dump && %s import dump t.dump "
           "--k 1e5 --density 1000 -q -o t.json && %s report t.json "
           "--no-soften -o t.html --vtk t.vtk && cat t.html t.vtk",
           dir, CM_BINARY, CM_BINARY);
  int code = -1;
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  const char *side = out ? strstr(out, "aria-label=\"side") : NULL;
  const char *circ = side ? strstr(side, "<circle ") : NULL;
  const char *line = side ? strstr(side, "<line ") : NULL;
  double r = -1, x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  CMT_TRUE(circ && sscanf(strstr(circ, " r=\""), " r=\"%lf", &r) == 1);
  CMT_TRUE(line && sscanf(line,
                          "<line x1=\"%lf\" y1=\"%lf\" x2=\"%lf\" "
                          "y2=\"%lf\"",
                          &x1, &y1, &x2, &y2) == 4);
  CMT_TRUE(r > 5);
  CMT_LE(fabs(hypot(x2 - x1, y2 - y1) - 2 * r), 0.2); /* px, 0.1 rounding */
  /* the VTK line ends at the contact point (point 2: after the 2 bodies),
   * not at b's centre (point 1) a box away */
  CMT_CONTAINS(out, "LINES 1 3\n2 0 2\n");
  free(out);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  free(cmt_run(cmd, &code));
}
