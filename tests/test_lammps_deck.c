/* test_lammps_deck.c: `import lammps` against independent truths: the
 * committed LAMMPS pile imported from its deck equals the hand-written
 * `import dump` contact by contact; hand-computed Hertz, Mindlin, Tsuji and
 * LIGGGHTS contacts (formulas written here from the engines' documented
 * equations); a periodic bed against an O(N^2) minimum-image search; the
 * warnings; and bad decks whose messages must name file:line and say what
 * is supported. */
#include "cmodes.h"
#include "cmtest.h"
#include "io/lammps_internal.h"

#include <unistd.h>

#define PILE_DUMP CM_SOURCE_DIR "/data/lammps/pile.dump"
#define PILE_DECK CM_SOURCE_DIR "/data/lammps/in.pile"
#define LIGGGHTS                                                               \
  CM_SHARED_DIR "/data/liggghts-contactModels/dump20000.newModels"
#define PI 3.14159265358979323846

/* ---- helpers ---------------------------------------------------------------
 */

/* dir/name, in a static ring of buffers. */
static const char *in_dir(const char *dir, const char *name) {
  static char buf[8][256];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

static void rm_dir(const char *dir) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd))
    CMT_FAIL("cannot remove %s", dir);
}

/* Two spheres of radii r1, r2 and masses m1, m2 along z with overlap
 * delta, the lower one also pressed into a floor z = 0 by wall_delta. */
static void write_two_spheres(const char *path, double r1, double r2, double m1,
                              double m2, double delta, double wall_delta) {
  char text[1024];
  double z1 = r1 - wall_delta, z2 = z1 + r1 + r2 - delta;
  snprintf(text, sizeof text,
           "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\n"
           "ITEM: BOX BOUNDS ff ff ff\n-1 1\n-1 1\n0 2\n"
           "ITEM: ATOMS id type x y z radius mass\n"
           "1 1 0 0 %.17g %.17g %.17g\n2 1 0 0 %.17g %.17g %.17g\n",
           z1, r1, m1, z2, r2, m2);
  cmt_write_text(path, text);
}

/* Imports deck + dump through the library; NULL on failure (reported). */
/* 1 if Debian's lmp (package lammps) is on PATH; else says that test
 * skips its comparison with LAMMPS (what), and 0. */
static int have_lmp(const char *test, const char *what) {
  int code = -1;
  free(cmt_run("command -v lmp >/dev/null 2>&1", &code));
  if (code)
    fprintf(stderr, "%s: no 'lmp' (Debian package lammps) on PATH: %s\n", test,
            what);
  return !code;
}

static cm_scene_t *import(const char *deck, const char *dump) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  int st = cm_import_lammps(&ctx, deck, dump, NULL, &s);
  CMT_EQ_INT(st, CM_OK);
  if (st)
    fprintf(stderr, "%s\n", ctx.message);
  return s;
}

/* The index of the contact with bodies a, b (b may be CM_WORLD), or -1. */
static int find_contact(const cm_scene_t *s, int a, int b) {
  for (int q = 0; q < s->ncontacts; q++)
    if (s->contacts[q].a == a && s->contacts[q].b == b)
      return q;
  return -1;
}

/* ---- the LAMMPS pile: deck = hand-written import
 * ------------------------------ */

CM_TEST(lammps_deck_pile_equivalence) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  /* the hand-written import of docs/importers.md */
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  o.k = 2000;
  const char *walls[] = {"z=0", "x>-0.05", "x<0.05", "y>-0.05", "y<0.05"};
  for (int w = 0; w < 5; w++)
    CMT_EQ_INT(cm_dump_options_add_plane(NULL, &o, walls[w]), CM_OK);
  cm_scene_t *hand = NULL, *deck = import(PILE_DECK, PILE_DUMP);
  CMT_EQ_INT(cm_import_dump(&ctx, PILE_DUMP, &o, &hand), CM_OK);
  /* the deck's walls are the hand-written ones, in the same order */
  cm_lammps_deck_t *dk = NULL;
  CMT_EQ_INT(cm_lammps_deck_read(&ctx, PILE_DECK, &dk), CM_OK);
  if (dk) {
    CMT_EQ_INT(dk->nplanes, 5);
    CMT_EQ_INT(dk->cylinder, 0);
    CMT_TRUE(!memcmp(dk->planes, o.planes, 5 * sizeof o.planes[0]));
    CMT_REL(dk->model->timestep_s, 1e-4, 0);
    CMT_TRUE(!strcmp(dk->pair_style, "gran/hooke/history"));
    CMT_CONTAINS(dk->model->summary, "gran/hooke/history: kn 2000 N/m, kt "
                                     "571.429 N/m, gamma_n 1000 1/s, gamma_t "
                                     "500 1/s, friction 0.5; walls: 5 planes");
    CMT_TRUE(dk->warnings == NULL);
  }
  cm_lammps_deck_destroy(&dk);
  if (!hand || !deck) {
    cm_scene_destroy(&hand);
    cm_scene_destroy(&deck);
    return;
  }
  /* contact by contact: bodies, geometry and k_n to the bit */
  CMT_EQ_INT(deck->ncontacts, hand->ncontacts);
  CMT_EQ_INT(deck->ncontacts, 5507);
  CMT_EQ_INT(deck->nbodies, hand->nbodies);
  int same = deck->ncontacts == hand->ncontacts, bad = 0;
  for (int q = 0; same && q < deck->ncontacts; q++) {
    const cm_contact_t *a = &deck->contacts[q], *b = &hand->contacts[q];
    bad += a->a != b->a || a->b != b->b || a->stiffness != b->stiffness ||
           memcmp(a->point, b->point, sizeof a->point) ||
           memcmp(a->normal, b->normal, sizeof a->normal);
  }
  CMT_EQ_INT(bad, 0);
  /* the new fields from the deck's law (gran/hooke/history, kt NULL =
   * 2/7 kn, gamma_t NULL = gamma_n / 2, dampflag 1): k_t = 4000/7,
   * c_n = m* 1000, c_t = m* 500 with m* = m_i m_j / (m_i + m_j), walls m_i */
  int nbad = 0;
  for (int q = 0; q < deck->ncontacts; q++) {
    const cm_contact_t *c = &deck->contacts[q];
    double mi = deck->bodies[c->a].mass;
    double meff = c->b == CM_WORLD ? mi
                                   : mi * deck->bodies[c->b].mass /
                                         (mi + deck->bodies[c->b].mass);
    nbad += fabs(c->stiffness_t - 2000.0 * 2.0 / 7.0) > 1e-12 * 2000 ||
            fabs(c->damping_n - 1000 * meff) > 1e-12 * 1000 * meff ||
            fabs(c->damping_t - 500 * meff) > 1e-12 * 500 * meff;
  }
  CMT_EQ_INT(nbad, 0);
  CMT_REL(deck->timestep_s, 1e-4, 0);
  CMT_CONTAINS(deck->meta_json, "\"importer\":\"cmodes import lammps\"");
  cm_scene_destroy(&hand);
  cm_scene_destroy(&deck);
}

/* The CLI spelling of the acceptance: the same scene, and the summary. */
CM_TEST(lammps_deck_cli) {
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "%s import lammps --deck %s --dump %s --threads 1 -o %s 2>&1",
           CM_BINARY, PILE_DECK, PILE_DUMP, in_dir(dir, "pile.json"));
  int code = -1;
  char *log = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  CMT_CONTAINS(log, "gran/hooke/history: kn 2000 N/m, kt 571.429 N/m, "
                    "gamma_n 1000 1/s, gamma_t 500 1/s, friction 0.5; walls: "
                    "5 planes from fix wall/gran");
  CMT_CONTAINS(log, "5507 contacts (4887 pairs, 620 with walls)");
  CMT_TRUE(log && !strstr(log, "warning"));
  free(log);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL, *lib = import(PILE_DECK, PILE_DUMP);
  CMT_EQ_INT(cm_scene_read_file(&ctx, in_dir(dir, "pile.json"), &s), CM_OK);
  if (s && lib) {
    CMT_EQ_INT(s->ncontacts, lib->ncontacts);
    int bad = 0;
    for (int q = 0; q < s->ncontacts && s->ncontacts == lib->ncontacts; q++)
      bad += s->contacts[q].stiffness != lib->contacts[q].stiffness ||
             s->contacts[q].b != lib->contacts[q].b;
    CMT_EQ_INT(bad, 0);
  }
  cm_scene_destroy(&s);
  /* binary output by the extension */
  snprintf(cmd, sizeof cmd,
           "%s import lammps --deck %s --dump %s -q -o %s 2>&1", CM_BINARY,
           PILE_DECK, PILE_DUMP, in_dir(dir, "pile.cmsb"));
  free(cmt_run(cmd, &code));
  CMT_EQ_INT(code, 0);
  CMT_EQ_INT(cm_scene_read_file(&ctx, in_dir(dir, "pile.cmsb"), &s), CM_OK);
  if (s && lib)
    CMT_EQ_INT(s->ncontacts, lib->ncontacts);
  cm_scene_destroy(&s);
  cm_scene_destroy(&lib);
  /* a deck with a bad line: exit 3, file:line */
  cmt_write_text(in_dir(dir, "in.bad"), "units si\npair_style lj/cut 2.5\n");
  snprintf(cmd, sizeof cmd, "%s import lammps --deck %s --dump %s 2>&1",
           CM_BINARY, in_dir(dir, "in.bad"), PILE_DUMP);
  log = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 3);
  CMT_CONTAINS(log, "in.bad:2: pair_style lj/cut: not supported; supported:");
  free(log);
  rm_dir(dir);
}

/* ---- hand-computed contacts
 * ------------------------------------------------------ */

/* gran/hertz/history (LAMMPS doc of the pair gran styles: every term times
 * sqrt(delta R*)), on a pair and on a floor. */
CM_TEST(lammps_deck_hertz_history) {
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  const double r1 = 0.004, r2 = 0.006, m1 = 0.002, m2 = 0.005;
  const double delta = 2e-5, wdelta = 1e-5;
  const double kn = 2e5, gn = 500; /* Kn in N/m^2 for Hertz */
  write_two_spheres(in_dir(dir, "two.dump"), r1, r2, m1, m2, delta, wdelta);
  cmt_write_text(
      in_dir(dir, "in.hertz"),
      "units si\natom_style sphere\nboundary f f f\n"
      "region box block -1 1 -1 1 0 2\ncreate_box 1 box\n"
      "pair_style gran/hertz/history 2e5 NULL 500 NULL 0.5 1\n"
      "pair_coeff * *\ntimestep 2e-6\n"
      "fix floor all wall/gran hertz/history 2e5 NULL 500 NULL 0.5 1 "
      "zplane 0 NULL\n");
  cm_scene_t *s = import(in_dir(dir, "in.hertz"), in_dir(dir, "two.dump"));
  if (s) {
    int p = find_contact(s, 0, 1), w = find_contact(s, 0, CM_WORLD);
    CMT_TRUE(p >= 0 && w >= 0);
    CMT_EQ_INT(s->ncontacts, 2);
    if (p >= 0 && w >= 0) {
      double R = r1 * r2 / (r1 + r2), meff = m1 * m2 / (m1 + m2);
      double ph = sqrt(delta * R); /* polyhertz */
      const cm_contact_t *c = &s->contacts[p];
      CMT_REL(c->stiffness, 1.5 * kn * ph, 1e-12); /* d(kn delta ph) */
      CMT_REL(c->stiffness_t, 2.0 / 7.0 * kn * ph, 1e-12);
      CMT_REL(c->damping_n, meff * gn * ph, 1e-12);
      CMT_REL(c->damping_t, meff * 0.5 * gn * ph, 1e-12);
      double pw = sqrt(wdelta * r1); /* the wall: R* = r_i, m* = m_i */
      c = &s->contacts[w];
      CMT_REL(c->stiffness, 1.5 * kn * pw, 1e-12);
      CMT_REL(c->stiffness_t, 2.0 / 7.0 * kn * pw, 1e-12);
      CMT_REL(c->damping_n, m1 * gn * pw, 1e-12);
      CMT_REL(c->damping_t, m1 * 0.5 * gn * pw, 1e-12);
    }
    CMT_REL(s->timestep_s, 2e-6, 0);
  }
  cm_scene_destroy(&s);
  rm_dir(dir);
}

/* pair granular hertz/material + tsuji + mindlin NULL (LAMMPS doc of pair
 * granular: F_ne = 4/3 E_eff a delta, a = sqrt(R delta), eta_n = alpha
 * sqrt(m_eff k_n) with k_n = 4/3 E_eff a, k_t = 8 G_eff a, eta_t =
 * x_gamma_t eta_n), and gran/hooke (no tangential spring). */
CM_TEST(lammps_deck_granular_hand) {
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  const double r1 = 0.005, r2 = 0.003, m1 = 0.004, m2 = 0.001;
  const double delta = 3e-6, E = 1e8, nu = 0.3, e = 0.6, xgt = 0.5;
  write_two_spheres(in_dir(dir, "two.dump"), r1, r2, m1, m2, delta, 2e-6);
  cmt_write_text(
      in_dir(dir, "in.granular"),
      "variable E equal 1e8\nvariable nu index 0.3\n"
      "units si\natom_style sphere\nboundary f f f\n"
      "region box block -1 1 -1 1 0 2\ncreate_box 1 box\n"
      "pair_style granular\n"
      "pair_coeff * * hertz/material ${E} 0.6 ${nu} damping tsuji &\n"
      "    tangential mindlin NULL 0.5 0.4 rolling none\n"
      "timestep 1e-7\n"
      "fix floor all wall/gran hooke 1000 NULL 50 NULL 0.5 0 zplane 0 "
      "NULL\n");
  cm_scene_t *s = import(in_dir(dir, "in.granular"), in_dir(dir, "two.dump"));
  if (s) {
    int p = find_contact(s, 0, 1), w = find_contact(s, 0, CM_WORLD);
    CMT_TRUE(p >= 0 && w >= 0);
    if (p >= 0) {
      double R = r1 * r2 / (r1 + r2), meff = m1 * m2 / (m1 + m2);
      double a = sqrt(R * delta);
      double Eeff = 1.0 / (2 * (1 - nu * nu) / E);
      double Geff = 1.0 / (2 * 2 * (2 - nu) * (1 + nu) / E);
      double alpha = 1.2728 - 4.2783 * e + 11.087 * e * e - 22.348 * e * e * e +
                     27.467 * pow(e, 4) - 18.022 * pow(e, 5) +
                     4.8218 * pow(e, 6);
      double eta_n = alpha * sqrt(meff * 4.0 / 3.0 * Eeff * a);
      const cm_contact_t *c = &s->contacts[p];
      CMT_REL(c->stiffness, 2 * Eeff * a, 1e-12); /* d(4/3 E a delta) */
      CMT_REL(c->stiffness_t, 8 * Geff * a, 1e-12);
      CMT_REL(c->damping_n, eta_n, 1e-12);
      CMT_REL(c->damping_t, xgt * eta_n, 1e-12);
    }
    if (w >= 0) { /* wall/gran hooke: k_t = 0, c_t = 0 (dampflag 0) */
      const cm_contact_t *c = &s->contacts[w];
      CMT_REL(c->stiffness, 1000, 0);
      CMT_EQ_INT(c->stiffness_t == 0, 1);
      CMT_REL(c->damping_n, m1 * 50, 1e-14);
      CMT_EQ_INT(c->damping_t == 0, 1);
    }
  }
  cm_scene_destroy(&s);
  rm_dir(dir);
}

/* LIGGGHTS model hertz with material properties (LIGGGHTS doc of gran
 * model hertz: k_n = 4/3 Y* sqrt(R* delta) for F_n = k_n delta, so the
 * tangent is S_n = 2 Y* sqrt(R* delta); gamma_n = -2 sqrt(5/6) beta
 * sqrt(S_n m*), beta = ln e / sqrt(ln^2 e + pi^2); k_t = S_t = 8 G*
 * sqrt(R* delta); gamma_t likewise with S_t). */
static const char *liggghts_deck =
    "atom_style granular\natom_modify map array\nboundary m m m\n"
    "newton off\ncommunicate single vel yes\nunits si\n"
    "region reg block -0.05 0.05 -0.05 0.05 0. 0.15 units box\n"
    "create_box 1 reg\nneighbor 0.002 bin\n"
    "fix m1 all property/global youngsModulus peratomtype 5.e6\n"
    "fix m2 all property/global poissonsRatio peratomtype 0.45\n"
    "fix m3 all property/global coefficientRestitution peratomtypepair 1 "
    "0.95\n"
    "fix m4 all property/global coefficientFriction peratomtypepair 1 0.05\n"
    "pair_style gran model hertz tangential history\npair_coeff * *\n"
    "timestep 0.00001\n"
    "fix zwalls1 all wall/gran model hertz tangential history primitive "
    "type 1 zplane 0.0\n"
    "fix zwalls2 all wall/gran model hertz tangential history primitive "
    "type 1 zplane 0.15\n"
    "fix cylwalls all wall/gran model hertz tangential history primitive "
    "type 1 zcylinder 0.05 0. 0.\n"
    "fix pts1 all particletemplate/sphere 15485863 atom_type 1 density "
    "constant 2500 radius constant 0.0025\n"
    "fix integr all nve/sphere\nrun 5000\n";

static void liggghts_expect(const cm_scene_t *s, int q, double ri, double rj,
                            double mi, double mj, double delta) {
  const double E = 5e6, nu = 0.45, e = 0.95;
  double Y = 1.0 / (2 * (1 - nu * nu) / E);
  double G = 1.0 / (2 * 2 * (2 - nu) * (1 + nu) / E);
  double R = rj > 0 ? ri * rj / (ri + rj) : ri;
  double m = mj > 0 ? mi * mj / (mi + mj) : mi;
  double beta = log(e) / sqrt(log(e) * log(e) + PI * PI);
  double Sn = 2 * Y * sqrt(R * delta), St = 8 * G * sqrt(R * delta);
  const cm_contact_t *c = &s->contacts[q];
  CMT_REL(c->stiffness, Sn, 1e-9);
  CMT_REL(c->stiffness_t, St, 1e-9);
  CMT_REL(c->damping_n, -2 * sqrt(5.0 / 6.0) * beta * sqrt(Sn * m), 1e-9);
  CMT_REL(c->damping_t, -2 * sqrt(5.0 / 6.0) * beta * sqrt(St * m), 1e-9);
}

CM_TEST(lammps_deck_liggghts) {
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  cmt_write_text(in_dir(dir, "in.lig"), liggghts_deck);
  /* two spheres: independent of ../shared */
  const double r1 = 0.0025, r2 = 0.002, m1 = 1e-4, m2 = 6e-5;
  write_two_spheres(in_dir(dir, "two.dump"), r1, r2, m1, m2, 1e-5, 4e-6);
  cm_scene_t *s = import(in_dir(dir, "in.lig"), in_dir(dir, "two.dump"));
  if (s) {
    int p = find_contact(s, 0, 1), w = find_contact(s, 0, CM_WORLD);
    CMT_TRUE(p >= 0 && w >= 0);
    if (p >= 0)
      liggghts_expect(s, p, r1, r2, m1, m2, 1e-5);
    if (w >= 0)
      liggghts_expect(s, w, r1, 0, m1, 0, 4e-6);
    CMT_REL(s->timestep_s, 1e-5, 0);
  }
  cm_scene_destroy(&s);
  /* model hooke (LIGGGHTS doc: k_n = 16/15 sqrt(R*) Y* (15 m* V^2 /
   * (16 sqrt(R*) Y*))^(1/5), gamma_n = sqrt(4 m* k_n / (1 + (pi / ln e)^2)),
   * k_t = k_n, gamma_t = gamma_n), characteristic velocity 2 m/s */
  char text[4096];
  const char *hz = strstr(liggghts_deck, "pair_style gran model hertz");
  snprintf(text, sizeof text,
           "%.*spair_style gran model hooke tangential "
           "history\nfix m5 all property/global characteristicVelocity "
           "scalar 2.\n%s",
           (int)(hz - liggghts_deck), liggghts_deck, strchr(hz, '\n') + 1);
  for (char *w = text; (w = strstr(w, "model hertz"));) /* the walls too */
    memcpy(w, "model hooke", 11);
  cmt_write_text(in_dir(dir, "in.hooke"), text);
  s = import(in_dir(dir, "in.hooke"), in_dir(dir, "two.dump"));
  if (s) {
    int p = find_contact(s, 0, 1);
    CMT_TRUE(p >= 0);
    if (p >= 0) {
      double Y = 1.0 / (2 * (1 - 0.45 * 0.45) / 5e6), V = 2, e = 0.95;
      double R = r1 * r2 / (r1 + r2), m = m1 * m2 / (m1 + m2);
      double kn = 16.0 / 15.0 * sqrt(R) * Y *
                  pow(15 * m * V * V / (16 * sqrt(R) * Y), 0.2);
      double gn = sqrt(4 * m * kn / (1 + pow(PI / log(e), 2)));
      CMT_REL(s->contacts[p].stiffness, kn, 1e-12);
      CMT_REL(s->contacts[p].stiffness_t, kn, 1e-12);
      CMT_REL(s->contacts[p].damping_n, gn, 1e-12);
      CMT_REL(s->contacts[p].damping_t, gn, 1e-12);
    }
  }
  cm_scene_destroy(&s);
  /* the real LIGGGHTS bed: the deck's walls and Hertz = the hand import */
  if (access(LIGGGHTS, R_OK)) {
    fprintf(stderr,
            "lammps_deck_liggghts: %s not found: the check on the "
            "real LIGGGHTS bed is skipped\n",
            LIGGGHTS);
    rm_dir(dir);
    return;
  }
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  o.density = 2500, o.young = 5e6, o.poisson = 0.45;
  cm_dump_options_add_plane(NULL, &o, "z=0");
  cm_dump_options_set_cylinder(NULL, &o, "0.05");
  cm_scene_t *hand = NULL;
  CMT_EQ_INT(cm_import_dump(&ctx, LIGGGHTS, &o, &hand), CM_OK);
  s = import(in_dir(dir, "in.lig"), LIGGGHTS); /* density from the deck */
  if (s && hand) {
    CMT_EQ_INT(s->ncontacts, hand->ncontacts);
    CMT_EQ_INT(s->ncontacts, 1174);
    int bad = 0;
    for (int q = 0; q < s->ncontacts && s->ncontacts == hand->ncontacts; q++) {
      const cm_contact_t *a = &s->contacts[q], *b = &hand->contacts[q];
      bad += a->a != b->a || a->b != b->b ||
             fabs(a->stiffness - b->stiffness) > 1e-12 * b->stiffness ||
             s->bodies[a->a].mass != hand->bodies[a->a].mass;
    }
    CMT_EQ_INT(bad, 0);
  }
  cm_scene_destroy(&s);
  cm_scene_destroy(&hand);
  rm_dir(dir);
}

/* ---- periodic bed
 * ------------------------------------------------------------------ */

typedef struct {
  double x[3], r;
} sph_t;

/* Deterministic uniform numbers in [0, 1). */
static double lcg(unsigned long long *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) / 9007199254740992.0;
}

/* A bed of n spheres in a box periodic along x and y (length L), z in
 * [0, H]; written as a dump. */
static sph_t *periodic_bed(const char *path, int n, double L, double H) {
  sph_t *p = malloc((size_t)n * sizeof *p);
  unsigned long long seed = 12345;
  FILE *f = fopen(path, "w");
  if (!f || !p) {
    CMT_FAIL("cannot write %s", path);
    if (f)
      fclose(f);
    free(p);
    return NULL;
  }
  fprintf(f,
          "ITEM: TIMESTEP\n7\nITEM: NUMBER OF ATOMS\n%d\n"
          "ITEM: BOX BOUNDS pp pp ff\n%.17g %.17g\n%.17g %.17g\n0 %.17g\n"
          "ITEM: ATOMS id type x y z radius mass\n",
          n, -L / 2, L / 2, -L / 2, L / 2, H);
  for (int i = 0; i < n; i++) {
    p[i].r = 0.004 + 0.002 * lcg(&seed);
    p[i].x[0] = -L / 2 + L * lcg(&seed);
    p[i].x[1] = -L / 2 + L * lcg(&seed);
    p[i].x[2] = p[i].r + (H - 2 * p[i].r) * lcg(&seed);
    fprintf(f, "%d 1 %.17g %.17g %.17g %.17g 0.001\n", i + 1, p[i].x[0],
            p[i].x[1], p[i].x[2], p[i].r);
  }
  fclose(f);
  return p;
}

/* O(N^2) minimum-image count: all, and those that cross the boundary. */
static void brute_periodic(const sph_t *p, int n, double L, int *all,
                           int *across) {
  *all = *across = 0;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      double s = 0;
      int cross = 0;
      for (int a = 0; a < 3; a++) {
        double d = p[i].x[a] - p[j].x[a];
        if (a < 2 && fabs(d) > L / 2) {
          d -= L * round(d / L);
          cross = 1;
        }
        s += d * d;
      }
      if (p[i].r + p[j].r - sqrt(s) > 0) {
        (*all)++;
        *across += cross;
      }
    }
}

CM_TEST(lammps_deck_periodic_bed) {
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  const int n = 900;
  const double L = 0.12, H = 0.05;
  sph_t *p = periodic_bed(in_dir(dir, "bed.dump"), n, L, H);
  if (!p)
    return;
  int all = 0, across = 0;
  brute_periodic(p, n, L, &all, &across);
  CMT_TRUE(across > 10 && all > 300); /* the bed has both kinds */
  fprintf(stderr,
          "lammps_deck_periodic_bed: %d spheres, %d pairs by brute "
          "force, %d of them across the periodic boundary\n",
          n, all, across);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  cm_dump_t *d = NULL;
  CMT_EQ_INT(cm_dump_read(&ctx, in_dir(dir, "bed.dump"), &o, &d), CM_OK);
  cm_dump_contact_t *c = NULL;
  int nc = 0;
  o.periodic = CM_DUMP_PERIODIC_IMAGE;
  for (int threads = 1; threads <= 2 && d; threads++) {
    o.threads = threads;
    CMT_EQ_INT(cm_dump_find_contacts(&ctx, d, &o, &c, &nc), CM_OK);
    CMT_EQ_INT(nc, all);
    int crossing = 0, bad = 0;
    for (int q = 0; q < nc; q++) {
      const cm_dump_contact_t *k = &c[q];
      crossing += k->image[0] || k->image[1] || k->image[2];
      /* on the minimum image: x_i - (x_j + image L) = (r_i + r_j - delta) n */
      double gap = d->radius[k->i] + d->radius[k->j] - k->overlap;
      for (int a = 0; a < 3; a++) {
        double xj = d->x[3 * k->j + a] + k->image[a] * L;
        bad += fabs(d->x[3 * k->i + a] - xj - gap * k->normal[a]) > 1e-12;
        bad += fabs(k->point[a] - (xj + (d->radius[k->j] - 0.5 * k->overlap) *
                                            k->normal[a])) > 1e-12;
      }
    }
    CMT_EQ_INT(crossing, across);
    CMT_EQ_INT(bad, 0);
    free(c);
    c = NULL;
  }
  /* drop: only the pairs that do not cross */
  o.periodic = CM_DUMP_PERIODIC_DROP;
  if (d && !cm_dump_find_contacts(&ctx, d, &o, &c, &nc))
    CMT_EQ_INT(nc, all - across);
  free(c);
  /* the library default stays an error */
  o.periodic = CM_DUMP_PERIODIC_ERROR;
  if (d)
    CMT_EQ_INT(cm_dump_find_contacts(&ctx, d, &o, &c, &nc), CM_USAGE);
  cm_dump_destroy(&d);
  /* the CLI finds them by default; drop warns that the step is unsafe */
  char cmd[1024];
  int code = -1;
  snprintf(cmd, sizeof cmd, "%s import dump %s --k 100 -o %s 2>&1", CM_BINARY,
           in_dir(dir, "bed.dump"), in_dir(dir, "bed.json"));
  char *log = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  char want[128];
  snprintf(want, sizeof want, "%d contacts (%d pairs", all, all);
  CMT_CONTAINS(log, want);
  CMT_CONTAINS(log, "cross the periodic boundary along xy");
  free(log);
  snprintf(cmd, sizeof cmd,
           "%s import dump %s --k 100 --periodic drop -o %s 2>&1", CM_BINARY,
           in_dir(dir, "bed.dump"), in_dir(dir, "bed.json"));
  log = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  snprintf(want, sizeof want, "%d contacts", all - across);
  CMT_CONTAINS(log, want);
  CMT_CONTAINS(log, "the step will be unsafe");
  free(log);
  free(p);
  rm_dir(dir);
}

/* ---- warnings
 * ---------------------------------------------------------------------- */

CM_TEST(lammps_deck_warnings) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  o.k = 2000;
  cm_dump_t *d = NULL;
  CMT_EQ_INT(cm_dump_read(&ctx, PILE_DUMP, &o, &d), CM_OK);
  if (!d)
    return;
  /* no walls at all: count the spheres through each face by hand */
  int cnt[6] = {0, 0, 0, 0, 0, 0};
  for (int i = 0; i < d->natoms; i++)
    for (int a = 0; a < 3; a++) {
      cnt[2 * a] += d->x[3 * i + a] - d->radius[i] < d->box[a][0];
      cnt[2 * a + 1] += d->x[3 * i + a] + d->radius[i] > d->box[a][1];
    }
  char *w = cm_dump_warnings(&ctx, d, &o);
  char want[160];
  snprintf(want, sizeof want,
           "%d particles overlap the box face x=-0.05 (boundary f) and no "
           "wall is given there: add --wall-plane 'x>-0.05' or a fix "
           "wall/gran",
           cnt[0]);
  CMT_CONTAINS(w, want);
  snprintf(want, sizeof want, "%d particles overlap the box face z=0", cnt[4]);
  CMT_CONTAINS(w, want);
  CMT_TRUE(cnt[5] == 0 && w && !strstr(w, "z=0.5"));
  /* the scene's meta has them too */
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_dump_to_scene(&ctx, d, &o, &s), CM_OK);
  if (s)
    CMT_CONTAINS(s->meta_json, "\"warnings\":[");
  cm_scene_destroy(&s);
  free(w);
  /* with the five walls: no warning */
  const char *walls[] = {"z=0", "x>-0.05", "x<0.05", "y>-0.05", "y<0.05"};
  for (int k = 0; k < 5; k++)
    cm_dump_options_add_plane(NULL, &o, walls[k]);
  w = cm_dump_warnings(&ctx, d, &o);
  CMT_TRUE(w == NULL);
  free(w);
  cm_dump_destroy(&d);
  /* 2D import of a dump whose z varies */
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir))
    return;
  cmt_write_text(
      in_dir(dir, "z.dump"),
      "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\n"
      "ITEM: BOX BOUNDS ff ff ff\n-1 1\n-1 1\n-1 1\n"
      "ITEM: ATOMS id x y z radius\n1 0 0 0 0.1\n2 0.5 0 0.25 0.1\n");
  cm_dump_options_init(&o);
  o.dim = 2;
  o.k = 1;
  CMT_EQ_INT(cm_dump_read(&ctx, in_dir(dir, "z.dump"), &o, &d), CM_OK);
  w = d ? cm_dump_warnings(&ctx, d, &o) : NULL;
  CMT_CONTAINS(w, "--dim 2 ignores the z column, which varies by 0.25");
  free(w);
  cm_dump_destroy(&d);
  rm_dir(dir);
}

/* ---- variables
 * ---------------------------------------------------------------------- */

CM_TEST(lammps_deck_variables) {
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  cmt_write_text(
      in_dir(dir, "walls.inc"),
      "fix w all wall/gran hooke/history ${kn} $k ${gn} NULL 0.5 1 &\n"
      "    zplane $(v_lo*2) NULL  # the floor\n");
  cmt_write_text(in_dir(dir, "in.vars"),
                 "variable kn index 1000\nvariable kn index 5  # ignored\n"
                 "variable k equal 2*v_kn/7+1\nvariable lo equal -0.5*0\n"
                 "variable gn string 40\nvariable n equal count(all)\n"
                 "units si\nboundary f f f\n"
                 "region b block -1 1 -1 1 0 2\ncreate_box 1 b\n"
                 "pair_style gran/hooke/history ${kn} NULL ${gn} NULL 0.5 1\n"
                 "pair_coeff * *\ntimestep $((1+1)*1e-5)\n"
                 "include walls.inc\nprint \"${n} particles\"\n");
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_lammps_deck_t *d = NULL;
  int st = cm_lammps_deck_read(&ctx, in_dir(dir, "in.vars"), &d);
  CMT_EQ_INT(st, CM_OK);
  if (st)
    fprintf(stderr, "%s\n", ctx.message);
  if (d) {
    CMT_REL(d->model->pair[1][1].kn, 1000, 0);
    CMT_REL(d->model->pair[1][1].kt, 1000 * 2.0 / 7.0, 1e-15);
    CMT_REL(d->model->pair[1][1].gamma_n, 40, 0);
    CMT_REL(d->model->timestep_s, 2e-5, 1e-15);
    CMT_EQ_INT(d->nplanes, 1);
    CMT_REL(d->model->wall[0].kt, 2 * 1000.0 / 7 + 1, 1e-14);
    CMT_REL(d->planes[0][5], 1, 0);
    CMT_TRUE(d->have_box && d->box[2][1] == 2);
  }
  cm_lammps_deck_destroy(&d);
  /* the command line's -var (--var NAME=VALUE) wins over the deck's index */
  const char *vars[] = {"kn=3000", "gn=7", NULL};
  CMT_EQ_INT(cm_lammps_deck_read_vars(&ctx, in_dir(dir, "in.vars"), vars, &d),
             CM_OK);
  if (d) {
    CMT_REL(d->model->pair[1][1].kn, 3000, 0);
    CMT_REL(d->model->pair[1][1].gamma_n, 40, 0); /* string: redefined */
  }
  cm_lammps_deck_destroy(&d);
  const char *bad[] = {"kn", NULL};
  CMT_EQ_INT(cm_lammps_deck_read_vars(&ctx, in_dir(dir, "in.vars"), bad, &d),
             CM_USAGE);
  CMT_CONTAINS(ctx.message, "--var 'kn': expected NAME=VALUE");
  /* a variable defined from one that needs a run is ignored with a
   * warning (main's rule, d55673a) until a read line uses it */
  cmt_write_text(in_dir(dir, "in.lazy"),
                 "variable n equal count(all)\nvariable n0 equal ${n}\n"
                 "variable half equal $n/2\nunits si\n"
                 "pair_style gran/hooke 10 NULL 1 NULL 0.5 1\npair_coeff * *\n"
                 "timestep 1e-3\n");
  CMT_EQ_INT(cm_lammps_deck_read(&ctx, in_dir(dir, "in.lazy"), &d), CM_OK);
  if (d)
    CMT_CONTAINS(d->warnings, "in.lazy:2: variable not evaluable before a "
                              "run, ignored");
  cm_lammps_deck_destroy(&d);
  /* a variable that needs a run, used where it matters */
  cmt_write_text(in_dir(dir, "in.run"),
                 "variable n equal count(all)\nunits si\n"
                 "pair_style gran/hooke ${n} NULL 1 NULL 0.5 1\n");
  CMT_EQ_INT(cm_lammps_deck_read(&ctx, in_dir(dir, "in.run"), &d), CM_PARSE);
  CMT_CONTAINS(ctx.message, "in.run:3: expression 'count(all)'");
  /* variables that refer to themselves, directly or through another:
   * the message quotes the reference, not the text after it */
  cmt_write_text(in_dir(dir, "in.self"),
                 "variable kn equal v_kn+1\nunits si\n"
                 "pair_style gran/hooke ${kn} NULL 1 NULL 0.5 1\n");
  CMT_EQ_INT(cm_lammps_deck_read(&ctx, in_dir(dir, "in.self"), &d), CM_PARSE);
  CMT_CONTAINS(ctx.message, "in.self:3: expression 'v_kn+1': 'v_kn' refers "
                            "to itself");
  cmt_write_text(in_dir(dir, "in.cycle"),
                 "variable kn equal 2*v_x\nvariable x equal v_kn\nunits si\n"
                 "pair_style gran/hooke ${kn} NULL 1 NULL 0.5 1\n");
  CMT_EQ_INT(cm_lammps_deck_read(&ctx, in_dir(dir, "in.cycle"), &d), CM_PARSE);
  CMT_CONTAINS(ctx.message, "refers to itself");
  CMT_TRUE(strstr(ctx.message, "': 'v_x' refers") ||
           strstr(ctx.message, "': 'v_kn' refers"));
  rm_dir(dir);
}

/* ---- expressions against LAMMPS
 * ------------------------------------------------------------------------ */

/* An equal-style expression as the deck reader evaluates it: CM_OK and
 * *x, or the error (its message in ctx). */
static int deck_eval(cm_context_t *ctx, const char *expr, double *x) {
  cm__drd_t r = {0};
  r.ctx = ctx, r.file = "in.expr", r.line = 1;
  cm_context_clear(ctx);
  return cm__deck_eval(&r, expr, x);
}

/* Expressions whose value depends on LAMMPS's precedence and
 * associativity (src/variable.cpp: unary - and ! bind tightest, then ^
 * left to right, * / %, + -, < <= > >=, == !=, &&, || |^), with the
 * values Debian's lmp (29 Sep 2021) prints for them. */
static const struct {
  const char *expr;
  double value;
} deck_exprs[] = {{"2^3^2", 64},
                  {"-2^2", 4},
                  {"2^-1", 0.5},
                  {"-2^-2", 0.25},
                  {"2*3^2", 18},
                  {"2^3*2", 16},
                  {"4^0.5^2", 4},
                  {"-3-2", -5},
                  {"2-3-4", -5},
                  {"8/2/2", 2},
                  {"7%3%2", 1},
                  {"-(2)^2", 4},
                  {"2^(3^2)", 512},
                  {"!0^2", 1},
                  {"--2", 2},
                  {"-2*-2", 4},
                  {"1+2*3", 7},
                  {"2^2^3^1", 64},
                  {"-2^3", -8},
                  {"2^-2^2", 0.0625},
                  {"-7%3", -1},
                  {"7%-3", 1},
                  {"3--2", 5},
                  {"!1+1", 1},
                  {"!0+!0", 2},
                  {"0^0", 1},
                  {"3>2>1", 0},
                  {"1&&0||1", 1},
                  {"!2^0", 1},
                  {"2^!0", 2},
                  {"-2^-2^2", 0.0625},
                  {"2*-2^2", 8},
                  {"-2*2^2", -8},
                  {"2^-1^2", 0.25},
                  {"2^3%5", 3},
                  {"-0^0", 1},
                  {"10-2^2^0.5", 8},
                  {"1|^1", 0},
                  {"1|^0", 1},
                  {"1||0&&0", 1},
                  {"2==1<3", 0},
                  {"1<2==1", 1},
                  {"1-2^2", -3},
                  {"!0&&0", 0},
                  {"1+!0", 2},
                  {"2^0.5^-1", 0.70710678118654746},
                  {"-PI^2", 9.8696044010893580}};

CM_TEST(lammps_deck_expressions) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  int n = (int)(sizeof deck_exprs / sizeof deck_exprs[0]);
  for (int i = 0; i < n; i++) {
    double x = NAN;
    int st = deck_eval(&ctx, deck_exprs[i].expr, &x);
    CMT_EQ_INT(st, CM_OK);
    if (fabs(x - deck_exprs[i].value) >
        1e-15 * fmax(1, fabs(deck_exprs[i].value)))
      CMT_FAIL("%s: %.17g, LAMMPS %.17g", deck_exprs[i].expr, x,
               deck_exprs[i].value);
  }
  /* what LAMMPS gives as nan is refused; an unfinished one says where */
  CMT_EQ_INT(deck_eval(&ctx, "-1^0.5", &(double){0}), CM_PARSE);
  CMT_CONTAINS(ctx.message, "is not finite");
  CMT_EQ_INT(deck_eval(&ctx, "2*(3+", &(double){0}), CM_PARSE);
  CMT_CONTAINS(ctx.message, "in.expr:1: expression '2*(3+' ends where a "
                            "number, a variable, a function or '(' was "
                            "expected");
  CMT_EQ_INT(deck_eval(&ctx, "(2+3", &(double){0}), CM_PARSE);
  CMT_CONTAINS(ctx.message, "expression '(2+3' needs a closing parenthesis");
  /* the same expressions through Debian's lmp itself, where it is */
  if (!have_lmp("lammps_deck_expressions",
                "the table is not compared with LAMMPS here"))
    return;
  int code = -1;
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  FILE *f = fopen(in_dir(dir, "in.expr"), "w");
  for (int i = 0; f && i < n; i++)
    fprintf(f, "variable a%d equal %s\nprint \"R%d=${a%d}\"\n", i,
            deck_exprs[i].expr, i, i);
  if (f)
    fclose(f);
  char *out = cmt_run_lmp(dir, "-in in.expr -log none", &code);
  CMT_EQ_INT(code, 0);
  for (int i = 0; out && i < n; i++) {
    char key[32];
    snprintf(key, sizeof key, "\nR%d=", i);
    const char *at = strstr(out, key);
    if (!at) {
      CMT_FAIL("lmp printed no value for %s", deck_exprs[i].expr);
      continue;
    }
    double v = strtod(at + strlen(key), NULL); /* LAMMPS prints %.15g */
    if (fabs(v - deck_exprs[i].value) > 1e-14 * fmax(1, fabs(v)))
      CMT_FAIL("%s: lmp %.17g, the table %.17g", deck_exprs[i].expr, v,
               deck_exprs[i].value);
  }
  free(out);
  rm_dir(dir);
}

/* Substitution as LAMMPS does it: v_name through the variable's "%.15g"
 * text, $(expr) in "%.20g" or its own ":%fmt", ${name} in "%.15g"; the
 * line against what Debian's lmp prints for it, character for character. */
CM_TEST(lammps_deck_substitution_vs_lmp) {
  static const char *const defs[][3] = {
      {"a", "equal", "ln(10)"},       {"b", "equal", "v_a*1e15"},
      {"c", "equal", "2000.0/3"},     {"d", "equal", "v_c*3-2000"},
      {"e", "index", "0.1"},          {"f", "equal", "v_e+0.2"},
      {"g", "loop", "5 10 pad"},      {"h", "loop", "7"},
      {"i", "uloop", "3 pad"},        {"j", "internal", "2.000000000000001"},
      {"k", "equal", "v_j*1e15-2e15"}};
  const char *line = "X=$(v_b) Y=$(ln(10):%.3f) Z=${a} W=$(v_d) V=${f} "
                     "U=$(v_c:%10.4e) T=$(0.1+0.2) S=$(v_a*v_a:%08.3f) "
                     "R=$(v_a:%.17g) Q=${g} P=$h O=${i} N=${j} M=${k}";
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm__drd_t r = {0};
  r.ctx = &ctx, r.file = "in.subst", r.line = 1;
  int n = (int)(sizeof defs / sizeof defs[0]);
  for (int i = 0; i < n; i++) {
    char cmd[128], *argv[8];
    snprintf(cmd, sizeof cmd, "variable %s %s %s", defs[i][0], defs[i][1],
             defs[i][2]);
    int argc = cm__deck_split(cmd, argv, 8);
    CMT_EQ_INT(cm__deck_variable(&r, argc, argv), CM_OK);
  }
  char *ours = NULL;
  CMT_EQ_INT(cm__deck_substitute(&r, line, &ours), CM_OK);
  /* formats that are not one conversion of a number, or overflow */
  char *bad = NULL;
  CMT_EQ_INT(cm__deck_substitute(&r, "$(v_a:%d)", &bad), CM_PARSE);
  CMT_CONTAINS(ctx.message, "format '%d' is not one LAMMPS accepts");
  CMT_EQ_INT(cm__deck_substitute(&r, "$(v_a:%g)", &bad), CM_PARSE);
  /* a format that would not fit the copy: refused, not cut short */
  CMT_EQ_INT(cm__deck_substitute(&r, "$(v_a:%00000000000010.3f)", &bad),
             CM_PARSE);
  CMT_CONTAINS(ctx.message, "longer than 15 characters");
  CMT_EQ_INT(cm__deck_substitute(&r, "$(1e300:%.99f)", &bad), CM_PARSE);
  CMT_CONTAINS(ctx.message, "formats to more than");
  /* a style the reader does not evaluate, and a deleted variable: errors
   * naming them (they substituted an empty text before) */
  char *gv[] = {"variable", "kn", "getenv", "KN"};
  CMT_EQ_INT(cm__deck_variable(&r, 4, gv), CM_OK);
  CMT_EQ_INT(cm__deck_substitute(&r, "pair_style ${kn} 1", &bad), CM_PARSE);
  CMT_CONTAINS(ctx.message, "variable 'kn' (line 1) is of style getenv");
  CMT_CONTAINS(ctx.message, "--var kn=VALUE");
  CMT_EQ_INT(cm__deck_substitute(&r, "$(2*v_kn)", &bad), CM_PARSE);
  CMT_CONTAINS(ctx.message, "is of style getenv");
  char *dv[] = {"variable", "e", "delete"};
  CMT_EQ_INT(cm__deck_variable(&r, 3, dv), CM_OK);
  CMT_EQ_INT(cm__deck_substitute(&r, "${e}", &bad), CM_PARSE);
  CMT_CONTAINS(ctx.message, "variable 'e' is not defined");
  char *ev[] = {"variable", "e", "index", "0.7"}; /* defined anew */
  CMT_EQ_INT(cm__deck_variable(&r, 4, ev), CM_OK);
  CMT_EQ_INT(cm__deck_substitute(&r, "${e}", &bad), CM_OK);
  CMT_TRUE(bad && !strcmp(bad, "0.7"));
  char *lv[] = {"variable", "l", "loop", "x", "pad"};
  CMT_EQ_INT(cm__deck_variable(&r, 5, lv), CM_PARSE);
  CMT_CONTAINS(ctx.message, "variable l loop: expected N [pad] or N1 N2");
  free(bad);
  cm__deck_vars_free(&r);
  if (!ours || !have_lmp("lammps_deck_substitution_vs_lmp",
                         "the line is not compared with LAMMPS here")) {
    free(ours);
    return;
  }
  int code = -1;
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    free(ours);
    return;
  }
  FILE *f = fopen(in_dir(dir, "in.subst"), "w");
  for (int i = 0; f && i < n; i++)
    fprintf(f, "variable %s %s %s\n", defs[i][0], defs[i][1], defs[i][2]);
  if (f)
    fprintf(f, "print \"LINE %s\"\n", line), fclose(f);
  char *out = cmt_run_lmp(dir, "-in in.subst -log none", &code);
  CMT_EQ_INT(code, 0);
  const char *at = out ? strstr(out, "\nLINE ") : NULL;
  if (!at)
    CMT_FAIL("lmp printed no line: %s", out ? out : "(nothing)");
  else {
    const char *eol = strchr(at + 6, '\n');
    int len = eol ? (int)(eol - at - 6) : (int)strlen(at + 6);
    if ((int)strlen(ours) != len || strncmp(ours, at + 6, (size_t)len))
      CMT_FAIL("cmodes '%s', lmp '%.*s'", ours, len, at + 6);
  }
  free(out), free(ours);
  rm_dir(dir);
}

/* ---- bad decks
 * ------------------------------------------------------------------------ */

/* Reads deck text; expects an error containing each of the needles. */
static void expect_bad(const char *dir, const char *text, const char *n1,
                       const char *n2) {
  cmt_write_text(in_dir(dir, "in.bad"), text);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_lammps_deck_t *d = NULL;
  int st = cm_lammps_deck_read(&ctx, in_dir(dir, "in.bad"), &d);
  CMT_TRUE(st < 0);
  CMT_CONTAINS(ctx.message, n1);
  if (n2)
    CMT_CONTAINS(ctx.message, n2);
  cm_lammps_deck_destroy(&d);
}

/* The deck TEXT written as DIR/NAME and read, which must succeed (NULL
 * after a failure, reported). */
static cm_lammps_deck_t *deck_of_text(const char *dir, const char *name,
                                      const char *text) {
  cmt_write_text(in_dir(dir, name), text);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_lammps_deck_t *d = NULL;
  CMT_EQ_INT(cm_lammps_deck_read(&ctx, in_dir(dir, name), &d), CM_OK);
  return d;
}

CM_TEST(lammps_deck_bad_decks) {
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  const char *head = "units si\nregion b block -1 1 -1 1 0 1\ncreate_box 1 b\n";
  char text[1024];
  /* unsupported pair style */
  snprintf(text, sizeof text, "%spair_style gran/foo 1 2 3\n", head);
  expect_bad(dir, text, "in.bad:4: pair_style gran/foo: not supported",
             "supported: gran/hooke, gran/hooke/history");
  /* units lj */
  expect_bad(dir, "# a comment\nunits lj\n",
             "in.bad:2: units lj: not "
             "supported",
             "supported: si");
  /* no units at all: LAMMPS' lj */
  expect_bad(dir, "pair_style gran/hooke 1 NULL 1 NULL 0.5 1\n",
             "no units command", "supported: units si");
  /* unknown fix wall style */
  snprintf(text, sizeof text,
           "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "fix w all wall/gran hooke 1 NULL 1 NULL 0.5 1 xcylinder 0.1\n",
           head);
  expect_bad(dir, text,
             "in.bad:6: fix wall/gran wall style 'xcylinder': "
             "not supported",
             "supported: xplane, yplane, zplane");
  /* unknown fix wall/gran interaction */
  snprintf(text, sizeof text,
           "%sfix w all wall/gran hertz 1 NULL 1 NULL 0.5 1 zplane 0 NULL\n",
           head);
  expect_bad(dir, text, "in.bad:4: fix wall/gran hertz: not supported",
             "supported: hooke, hooke/history");
  /* negative gamma */
  snprintf(text, sizeof text,
           "%spair_style gran/hooke/history 2000 NULL -5 NULL 0.5 1\n", head);
  expect_bad(dir, text, "in.bad:4: pair_style: negative gamma_n (-5)",
             "must be >= 0");
  /* jkr refused, dmt fine */
  snprintf(text, sizeof text,
           "%spair_style granular\npair_coeff * * jkr 1e6 0.1 0.3 1 "
           "tangential linear_history 100 0.5 0.5\n",
           head);
  expect_bad(dir, text,
             "in.bad:5: pair_coeff: normal model jkr: not "
             "supported",
             "supported: hooke, hertz, hertz/material, dmt");
  /* rolling springs */
  snprintf(text, sizeof text,
           "%spair_style granular\npair_coeff * * hooke 1000 0.1 tangential "
           "linear_history 100 0.5 0.5 rolling sds 1 1 1\n",
           head);
  expect_bad(dir, text, "in.bad:5: pair_coeff: rolling sds: not supported",
             "supported: rolling none");
  /* frozen particles */
  snprintf(text, sizeof text, "%sfix f all freeze\n", head);
  expect_bad(dir, text, "in.bad:4: fix freeze: not supported", "supported");
  /* bonds, and damping or tethers still in effect at the end: the step
   * would not hold for the run */
  snprintf(text, sizeof text,
           "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "bond_style harmonic\n",
           head);
  expect_bad(dir, text, "in.bad:6: bond_style harmonic: not supported",
             "bonds carry springs");
  const char *unsafe[][2] = {{"viscous/sphere 0.5", "damping of the rotations"},
                             {"spring tether 10 0 0 0 0", "centre of mass"}};
  for (int k = 0; k < 2; k++) {
    snprintf(text, sizeof text,
             "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
             "fix d all %s\nrun 10\n",
             head, unsafe[k][0]);
    expect_bad(dir, text, "in.bad:6: fix d ", unsafe[k][1]);
  }
  /* removed before the end (unfix, or the ID defined again): read */
  const char *gone[] = {"unfix d\n", "fix d all nve/sphere\n"};
  for (int k = 0; k < 2; k++) {
    snprintf(text, sizeof text,
             "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
             "fix d all viscous 0.5\nfix w all wall/gran hooke 1 NULL 1 NULL "
             "0.5 1 zplane 0 NULL\nrun 10\n%sfix w all nve\n",
             head, gone[k]);
    cmt_write_text(in_dir(dir, "in.gone"), text);
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_lammps_deck_t *d = NULL;
    CMT_EQ_INT(cm_lammps_deck_read(&ctx, in_dir(dir, "in.gone"), &d), CM_OK);
    CMT_EQ_INT(d ? d->nplanes : -1, 0);    /* fix w replaced: no wall */
    CMT_TRUE(d && d->model->drag[1] == 0); /* fix d gone: no drag */
    cm_lammps_deck_destroy(&d);
  }
  /* fix viscous in effect: read as a drag per type (scale: gamma ratio),
   * two fixes add; a group other than all, or another keyword: refused */
  snprintf(text, sizeof text,
           "units si\nregion b block -1 1 -1 1 0 1\ncreate_box 3 b\n"
           "pair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "fix d all viscous 0.5 scale 2 3.0 scale 3 0\n"
           "fix e all viscous 0.25\nrun 10\n");
  cm_lammps_deck_t *vd0 = deck_of_text(dir, "in.visc", text);
  if (vd0) {
    CMT_REL(vd0->model->drag[1], 0.75, 1e-15);
    CMT_REL(vd0->model->drag[2], 1.75, 1e-15);
    CMT_REL(vd0->model->drag[3], 0.25, 1e-15);
    CMT_CONTAINS(vd0->model->summary,
                 "fix viscous: drag 0.25 to 1.75 N s/m by type");
  }
  cm_lammps_deck_destroy(&vd0);
  /* fix spring/self: a tether K on the flagged axes; two fixes add */
  snprintf(text, sizeof text,
           "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "fix t all spring/self 50 xz\nfix u all spring/self 20.0\n"
           "run 10\n",
           head);
  cm_lammps_deck_t *td = deck_of_text(dir, "in.tether", text);
  if (td) {
    CMT_REL(td->model->tether[1][0], 70.0, 1e-15);
    CMT_REL(td->model->tether[1][1], 20.0, 1e-15);
    CMT_REL(td->model->tether[1][2], 70.0, 1e-15);
    CMT_CONTAINS(td->model->summary, "tethers of 70, 20, 70 N/m");
  }
  cm_lammps_deck_destroy(&td);
  snprintf(text, sizeof text,
           "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "fix d wall spring/self 50\n",
           head);
  expect_bad(dir, text,
             "in.bad:6: fix d wall spring/self: group wall is not "
             "defined",
             "groups of atom types only");
  /* groups of types: lists, ranges and comparisons; others refused */
  snprintf(text, sizeof text,
           "units si\nregion b block -1 1 -1 1 0 1\ncreate_box 6 b\n"
           "pair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "group a type 1 3:6:2\ngroup b type <> 2 3\ngroup c type > 5\n"
           "group c type == 1\ngroup r region b\n"
           "fix d a viscous 1.0\nfix e b spring/self 10 z\n"
           "fix f c langevin 0 0 0.5 1\nrun 10\n");
  cm_lammps_deck_t *gd = deck_of_text(dir, "in.groups", text);
  if (gd) {
    const cm_contact_model_t *M = gd->model;
    for (int t = 1; t <= 6; t++) {
      CMT_TRUE(M->drag[t] == (t == 1 || t == 3 || t == 5 ? 1.0 : 0.0));
      CMT_TRUE(M->tether[t][2] == (t == 2 || t == 3 ? 10.0 : 0.0));
      CMT_TRUE(M->tether[t][0] == 0 && M->tether[t][1] == 0);
      CMT_TRUE(M->drag_rate[t] == (t == 1 || t == 6 ? 2.0 : 0.0));
    }
  }
  cm_lammps_deck_destroy(&gd);
  snprintf(text, sizeof text,
           "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "group top region b\nfix d top viscous 0.5\n",
           head);
  expect_bad(dir, text,
             "in.bad:7: fix d top viscous: group top is not built from atom "
             "types",
             "unfix the fix before the run");
  snprintf(text, sizeof text,
           "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "group top type 1 1-2\n",
           head);
  expect_bad(dir, text, "in.bad:6: group top type: '1-2' is not a type",
             "a:b:d");
  /* fix langevin: a drag m / (damp ratio_t); its rotational drags and the
   * GJF integrator are refused, as are bad spring/self lines (below) */
  snprintf(text, sizeof text,
           "units si\nregion b block -1 1 -1 1 0 1\ncreate_box 2 b\n"
           "pair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "fix t all langevin 0.0 v_temp 0.002 4829 zero yes scale 2 4.0 "
           "tally no omega no\nrun 10\n");
  cm_lammps_deck_t *lgv = deck_of_text(dir, "in.lgv", text);
  if (lgv) {
    CMT_REL(lgv->model->drag_rate[1], 500.0, 1e-15);
    CMT_REL(lgv->model->drag_rate[2], 125.0, 1e-15);
    CMT_TRUE(lgv->model->drag[1] == 0);
    CMT_CONTAINS(lgv->model->summary,
                 "fix langevin: drag per unit mass 125 to 500 1/s");
  }
  cm_lammps_deck_destroy(&lgv);
  const char *lbad[][2] = {
      {"langevin 1 1 0 4829", "damp 0 must be > 0"},
      {"langevin 1 1 0.1 4829 omega yes", "omega yes: not supported"},
      {"langevin 1 1 0.1 4829 gjf vhalf", "the GJF integrator"},
      {"langevin 1 1 0.1 4829 angmom 3.0", "a drag on the rotations"},
      {"langevin 1 1 0.1 4829 scale 1 0", "ratio > 0"},
      {"langevin 1 1 0.1 4829 bias yes", "unknown keyword 'bias'"},
      {"langevin 1 1 0.1", "expected 'fix ID group langevin"},
      {"spring/self 50 w", "direction 'w'"},
      {"spring/self -1", "K -1 must be >= 0"},
      {"spring/self", "expected 'fix ID group spring"}};
  for (int k = 0; k < 10; k++) {
    snprintf(text, sizeof text,
             "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
             "fix d all %s\n",
             head, lbad[k][0]);
    expect_bad(dir, text, "in.bad:6: fix", lbad[k][1]);
  }
  snprintf(text, sizeof text,
           "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "fix d top viscous 0.5\n",
           head);
  expect_bad(dir, text, "in.bad:6: fix d top viscous: group top is not defined",
             "unfix the fix before the run");
  snprintf(text, sizeof text,
           "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "fix d all viscous 0.5 scale 2 1\n",
           head);
  expect_bad(dir, text, "in.bad:6: type range '2' is not within 1..1",
             "create_box");
  snprintf(text, sizeof text,
           "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "fix d all viscous -1\n",
           head);
  expect_bad(dir, text, "in.bad:6: fix viscous: gamma -1 must be >= 0",
             "N s/m");
  /* an if that sets what is read: refused; a variable it sets: an error
   * where used, unless --var gives it; next: a warning */
  snprintf(text, sizeof text,
           "%svariable mode index 1\nif \"${mode} == 1\" then "
           "\"timestep 1e-5\"\n",
           head);
  expect_bad(dir, text, "in.bad:5: if: its commands set what cmodes reads",
             "remove the if");
  snprintf(text, sizeof text,
           "%sif \"1 > 0\" then \"variable kn equal 5000\"\n"
           "pair_style gran/hooke ${kn} NULL 1 NULL 0.5 1\n",
           head);
  expect_bad(dir, text, "in.bad:5: variable 'kn' is set inside an if (line 4)",
             "--var kn=VALUE");
  cmt_write_text(in_dir(dir, "in.ifvar"), text);
  const char *const given[] = {"kn=3000", NULL};
  cm_context_t vctx;
  cm_context_init(&vctx);
  cm_lammps_deck_t *vd = NULL;
  CMT_EQ_INT(
      cm_lammps_deck_read_vars(&vctx, in_dir(dir, "in.ifvar"), given, &vd),
      CM_OK);
  cm_lammps_deck_destroy(&vd);
  snprintf(text, sizeof text,
           "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "variable a loop 3\nlabel l\nif \"${a} > 2\" then \"print "
           "done\" else \"run 10\"\nnext a\njump SELF l\n",
           head);
  cm_lammps_deck_t *ld = deck_of_text(dir, "in.loop", text);
  CMT_CONTAINS(ld ? ld->warnings : NULL, "in.loop:9: next a: the deck loops");
  cm_lammps_deck_destroy(&ld);
  /* constraints: read, with a warning that the step is safe for them */
  snprintf(text, sizeof text,
           "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "group top id 5\nfix s top setforce 0 0 NULL\n",
           head);
  cm_lammps_deck_t *hd = deck_of_text(dir, "in.held", text);
  CMT_CONTAINS(hd ? hd->warnings : NULL,
               "in.held:7: fix setforce: the particles of group top are "
               "analysed as free bodies");
  cm_lammps_deck_destroy(&hd);
  /* a deforming box: read as the dump gives it, no timestep: the
   * deck-wide warning names no line */
  snprintf(text, sizeof text,
           "%spair_style gran/hooke 1 NULL 1 NULL 0.5 1\npair_coeff * *\n"
           "fix sh all deform 1 xy erate 0.1 remap v\n",
           head);
  hd = deck_of_text(dir, "in.shear", text);
  CMT_CONTAINS(hd ? hd->warnings : NULL,
               "in.shear:6: fix deform: the box is analysed as the dump "
               "gives it at the snapshot");
  CMT_CONTAINS(hd ? hd->warnings : NULL, "in.shear: no timestep command");
  cm_lammps_deck_destroy(&hd);
  /* a contradictory gran/hooke: kt is a warning (LAMMPS ignores it) */
  snprintf(text, sizeof text,
           "%spair_style gran/hooke 2000 500 10 NULL 0.5 1\npair_coeff * *\n"
           "timestep 1e-4\n",
           head);
  cm_lammps_deck_t *d = deck_of_text(dir, "in.kt", text);
  if (d) {
    CMT_CONTAINS(d->warnings, "in.kt:4: pair_style: Kt 500 is ignored: "
                              "gran/hooke keeps no shear history");
    double v[4];
    cm_contact_law_eval(&d->model->pair[1][1], 0.01, 0.002, 1e-4, v);
    CMT_TRUE(v[0] == 2000 && v[1] == 0 && v[3] == 0.002 * 5);
  }
  cm_lammps_deck_destroy(&d);
  /* friction 0 with history: no tangential spring, a warning */
  snprintf(text, sizeof text,
           "%spair_style gran/hooke/history 2000 NULL 10 NULL 0 1\n"
           "pair_coeff * *\ntimestep 1e-4\n",
           head);
  d = deck_of_text(dir, "in.mu0", text);
  if (d) {
    CMT_CONTAINS(d->warnings, "friction xmu 0");
    double v[4];
    cm_contact_law_eval(&d->model->pair[1][1], 0.01, 0.002, 1e-4, v);
    CMT_TRUE(v[0] == 2000 && v[1] == 0 && v[3] == 0);
  }
  cm_lammps_deck_destroy(&d);
  rm_dir(dir);
}

/* ---- against the installed LAMMPS
 * ------------------------------------------------ */

/* One measurement setup: the contact-law lines (shared by the LAMMPS run
 * and the deck cmodes reads), two spheres along z or one sphere at x0
 * against the walls of the law lines. */
typedef struct {
  const char *name;
  const char *law; /* pair_style ... / pair_coeff ... / fix wall/gran */
  int two;         /* 1: spheres r1 at 0 and r2 above; 0: one at x0 */
  double x0[3];    /* the single sphere's centre */
  int tdir, ndir;  /* tangential and normal axes of the contact */
} lmp_case_t;

/* Runs lmp on the case with overlap-setting geometry z2 (two spheres),
 * velocity v along axis vdir of the moving sphere, nsteps steps of dt
 * without an integrator (positions stay, shear history grows); returns
 * the force component fcomp on atom 1, NAN on failure. */
static double lmp_force(const char *dir, const lmp_case_t *c, double z2,
                        int vdir, double v, int nsteps, int fcomp) {
  const double r1 = 0.005, r2 = 0.003;
  char deck[4096], vel[96];
  double vv[3] = {0, 0, 0};
  vv[vdir] = v;
  snprintf(vel, sizeof vel, "%.17g %.17g %.17g", vv[0], vv[1], vv[2]);
  snprintf(
      deck, sizeof deck,
      "units si\natom_style sphere\nboundary f f f\n"
      "region box block -1 1 -1 1 -1 1 units box\ncreate_box 1 box\n"
      "create_atoms 1 single %.17g %.17g %.17g units box\n%s"
      "set atom 1 diameter %.17g density 2500\n%s\n"
      "neighbor 0.001 bin\ncomm_modify vel yes\ntimestep 1e-8\n"
      "velocity all set %s units box\n%s"
      "dump d all custom 1 %s/f.dump id fx fy fz\n"
      "dump_modify d sort id format float %%.17g\nrun %d\n",
      c->two ? 0.0 : c->x0[0], c->two ? 0.0 : c->x0[1], c->two ? 0.0 : c->x0[2],
      c->two ? "create_atoms 1 single 0 0 0 units box\n" : "", 2 * r1, c->law,
      vel, c->two ? "group one id 1\nvelocity one set 0 0 0 units box\n" : "",
      dir, nsteps);
  if (c->two) { /* place atom 2 at z2: replace the second create_atoms */
    char *p = strstr(deck, "create_atoms 1 single 0 0 0 units box\n");
    char z[64];
    snprintf(z, sizeof z, "create_atoms 1 single 0 0 %.17g units box\n", z2);
    if (p) {
      char rest[4096];
      snprintf(rest, sizeof rest, "%s%s", z,
               p + strlen("create_atoms 1 single 0 0 0 units box\n"));
      snprintf(p, sizeof deck - (size_t)(p - deck), "%s", rest);
    }
    p = strstr(deck, "density 2500\n");
    if (p) {
      char rest[4096];
      snprintf(rest, sizeof rest,
               "density 2500\nset atom 2 diameter %.17g density 2500\n%s",
               2 * r2, p + strlen("density 2500\n"));
      snprintf(p, sizeof deck - (size_t)(p - deck), "%s", rest);
    }
  }
  cmt_write_text(in_dir(dir, "in.run"), deck);
  int code;
  char *said = cmt_run_lmp(dir, "-in in.run -log none -screen none", &code);
  if (code)
    CMT_FAIL("%s: lmp exit status %d: %s", c->name, code,
             said ? said : "(no output)");
  free(said);
  if (code)
    return NAN;
  char *text = cmt_read_file(in_dir(dir, "f.dump"));
  char *last = NULL;
  for (char *p = text; p && (p = strstr(p, "ITEM: ATOMS")); p++)
    last = p;
  double f[3] = {NAN, NAN, NAN};
  long id;
  if (last) {
    char *line = strchr(last, '\n');
    if (!line || sscanf(line, "%ld %lf %lf %lf", &id, &f[0], &f[1], &f[2]) != 4)
      f[0] = f[1] = f[2] = NAN;
  }
  free(text);
  return f[fcomp];
}

/* The contact cmodes computes for the case at overlap delta. */
static int cm_case_contact(const char *dir, const lmp_case_t *c, double delta,
                           cm_contact_t *out) {
  const double r1 = 0.005, r2 = 0.003, rho = 2500;
  double m1 = 4.0 / 3.0 * PI * r1 * r1 * r1 * rho;
  double m2 = 4.0 / 3.0 * PI * r2 * r2 * r2 * rho;
  char text[1024];
  if (c->two)
    snprintf(text, sizeof text,
             "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\n"
             "ITEM: BOX BOUNDS ff ff ff\n-1 1\n-1 1\n-1 1\n"
             "ITEM: ATOMS id type x y z radius mass\n"
             "1 1 0 0 0 %.17g %.17g\n2 1 0 0 %.17g %.17g %.17g\n",
             r1, m1, r1 + r2 - delta, r2, m2);
  else
    snprintf(text, sizeof text,
             "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1\n"
             "ITEM: BOX BOUNDS ff ff ff\n-1 1\n-1 1\n-1 1\n"
             "ITEM: ATOMS id type x y z radius mass\n"
             "1 1 %.17g %.17g %.17g %.17g %.17g\n",
             c->x0[0], c->x0[1], c->x0[2], r1, m1);
  cmt_write_text(in_dir(dir, "c.dump"), text);
  snprintf(text, sizeof text,
           "units si\nregion box block -1 1 -1 1 -1 1\ncreate_box 1 box\n"
           "%s\ntimestep 1e-8\n",
           c->law);
  cmt_write_text(in_dir(dir, "in.c"), text);
  cm_scene_t *s = import(in_dir(dir, "in.c"), in_dir(dir, "c.dump"));
  int ok = s && s->ncontacts == 1;
  if (ok)
    *out = s->contacts[0];
  cm_scene_destroy(&s);
  return ok;
}

CM_TEST(lammps_deck_vs_lmp) {
  if (!have_lmp("lammps_deck_vs_lmp", "the comparison with LAMMPS is "
                                      "skipped"))
    return;
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  const double d = 1e-5, r1 = 0.005, Rc = 0.05, v = 0.01, h = 1e-6;
  static char plane[256], cyl[256];
  snprintf(plane, sizeof plane,
           "pair_style granular\npair_coeff * * hertz/material 1e8 0.6 0.3 "
           "damping tsuji tangential mindlin NULL 0.5 0.4\n"
           "fix w all wall/gran granular hertz/material 1e8 0.6 0.3 damping "
           "tsuji tangential mindlin NULL 0.5 0.4 zplane %.17g NULL",
           -(r1 - d));
  snprintf(cyl, sizeof cyl,
           "pair_style gran/hertz/history 2e5 NULL 500 NULL 0.5 1\n"
           "pair_coeff * *\nfix w all wall/gran hertz/history 2e5 NULL 500 "
           "NULL 0.5 1 zcylinder %.17g",
           Rc);
  const lmp_case_t cases[] = {
      {"gran/hertz/history pair",
       "pair_style gran/hertz/history 2e5 NULL 500 NULL 0.5 1\npair_coeff * *",
       1,
       {0, 0, 0},
       0,
       2},
      {"granular hertz/material tsuji mindlin NULL pair",
       "pair_style granular\npair_coeff * * hertz/material 1e8 0.6 0.3 "
       "damping tsuji tangential mindlin NULL 0.5 0.4",
       1,
       {0, 0, 0},
       0,
       2},
      {"gran/hooke pair (no history)",
       "pair_style gran/hooke 2e3 NULL 500 NULL 0.5 1\npair_coeff * *",
       1,
       {0, 0, 0},
       0,
       2},
      {"granular hooke viscoelastic linear_history pair",
       "pair_style granular\npair_coeff * * hooke 2e3 0.3 tangential "
       "linear_history 600 0.4 0.5",
       1,
       {0, 0, 0},
       0,
       2},
      /* friction 1000: the dashpot alone at the test's slip speed
       * exceeds 0.4 F_n, and LAMMPS then caps it at Coulomb's limit */
      {"granular hertz velocity linear_nohistory pair",
       "pair_style granular\npair_coeff * * hertz 2e5 3 damping velocity "
       "tangential linear_nohistory 0.5 1000",
       1,
       {0, 0, 0},
       0,
       2},
      {"granular hooke mass_velocity mindlin pair",
       "pair_style granular\npair_coeff * * hooke 2e3 300 damping "
       "mass_velocity tangential mindlin 3e5 0.5 0.4",
       1,
       {0, 0, 0},
       0,
       2},
      {"granular dmt tsuji mindlin_rescale NULL pair",
       "pair_style granular\npair_coeff * * dmt 1e8 0.6 0.3 0 damping tsuji "
       "tangential mindlin_rescale NULL 0.5 0.4",
       1,
       {0, 0, 0},
       0,
       2},
      {"granular hertz/material viscoelastic mindlin/force pair",
       "pair_style granular\npair_coeff * * hertz/material 1e8 0.3 0.3 "
       "tangential mindlin/force 3e5 0.5 0.4",
       1,
       {0, 0, 0},
       0,
       2},
      {"wall/gran granular plane", plane, 0, {0, 0, 0}, 0, 2},
      {"wall/gran hertz/history zcylinder", cyl, 0, {Rc - r1 + d, 0, 0}, 1, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const lmp_case_t *c = &cases[k];
    double z2 = 0.005 + 0.003 - d, z2h = 0.005 + 0.003 - d * (1 + h);
    /* one sphere: moved d h into its wall (the floor below, the cylinder
     * outward); two spheres: z2h */
    lmp_case_t ch = *c;
    ch.x0[c->ndir] += c->ndir == 2 ? -d * h : d * h;
    double f0 = lmp_force(dir, c, z2, 0, 0, 0, c->ndir);
    double f1 = lmp_force(dir, &ch, z2h, 0, 0, 0, c->ndir);
    double fv = lmp_force(dir, c, z2, c->ndir, v, 0, c->ndir);
    double ft0 = lmp_force(dir, c, z2, c->tdir, v, 0, c->tdir);
    double ft10 = lmp_force(dir, c, z2, c->tdir, v, 10, c->tdir);
    cm_contact_t ct;
    if (!cm_case_contact(dir, c, d, &ct)) {
      CMT_FAIL("%s: no contact imported", c->name);
      continue;
    }
    fprintf(stderr,
            "lammps_deck_vs_lmp: %s: lmp k_n %.9g k_t %.9g c_n %.9g "
            "c_t %.9g; cmodes %.9g %.9g %.9g %.9g\n",
            c->name, fabs(f1 - f0) / (d * h),
            fabs(ft10 - ft0) / (10 * v * 1e-8), fabs(fv - f0) / v,
            fabs(ft0) / v, ct.stiffness, ct.stiffness_t, ct.damping_n,
            ct.damping_t);
    CMT_REL(fabs(f1 - f0) / (d * h), ct.stiffness, 1e-5);
    CMT_REL(fabs(ft10 - ft0) / (10 * v * 1e-8), ct.stiffness_t, 1e-6);
    CMT_REL(fabs(fv - f0) / v, ct.damping_n, 1e-6);
    CMT_REL(fabs(ft0) / v, ct.damping_t, 1e-6);
  }
  rm_dir(dir);
}

/* Type-dependent laws come from the dump's type column: pair granular
 * hooke with kn 1000 (type 1) and 4000 (type 2), the 1-2 pair not set:
 * LAMMPS mixes it geometrically (2000); a pair_coeff 1 2 overrides. */
CM_TEST(lammps_deck_types) {
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  /* atoms 1 (type 1), 2 and 3 (type 2) in a row along x, each pair
   * overlapping by 1e-4 */
  cmt_write_text(in_dir(dir, "t.dump"),
                 "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n3\n"
                 "ITEM: BOX BOUNDS ff ff ff\n-1 1\n-1 1\n-1 1\n"
                 "ITEM: ATOMS id type x y z radius mass\n"
                 "1 1 0 0 0 0.01 0.002\n2 2 0.0199 0 0 0.01 0.003\n"
                 "3 2 0.0398 0 0 0.01 0.003\n");
  const char *head =
      "units si\nregion b block -1 1 -1 1 -1 1\ncreate_box 2 b\n"
      "pair_style granular\n"
      "pair_coeff 1 1 hooke 1000 0.2 tangential linear_history 300 0.5 0.5 "
      "damping mass_velocity\n"
      "pair_coeff 2 2 hooke 4000 0.8 tangential linear_history 1200 0.5 "
      "0.5 damping mass_velocity\ntimestep 1e-5\n";
  cmt_write_text(in_dir(dir, "in.mix"), head);
  cm_scene_t *s = import(in_dir(dir, "in.mix"), in_dir(dir, "t.dump"));
  if (s) {
    int p12 = find_contact(s, 0, 1), p23 = find_contact(s, 1, 2);
    CMT_TRUE(p12 >= 0 && p23 >= 0);
    if (p12 >= 0 && p23 >= 0) {
      double m12 = 0.002 * 0.003 / 0.005, m23 = 0.003 * 0.003 / 0.006;
      CMT_REL(s->contacts[p12].stiffness, sqrt(1000.0 * 4000.0), 1e-15);
      CMT_REL(s->contacts[p12].stiffness_t, sqrt(300.0 * 1200.0), 1e-15);
      CMT_REL(s->contacts[p12].damping_n, sqrt(0.2 * 0.8) * m12, 1e-14);
      CMT_REL(s->contacts[p23].stiffness, 4000, 0);
      CMT_REL(s->contacts[p23].stiffness_t, 1200, 0);
      CMT_REL(s->contacts[p23].damping_n, 0.8 * m23, 1e-14);
      CMT_REL(s->contacts[p23].damping_t, 0.5 * 0.8 * m23, 1e-14);
    }
  }
  cm_scene_destroy(&s);
  char text[1024];
  snprintf(text, sizeof text,
           "%spair_coeff 1 2 hooke 1500 0.1 tangential linear_nohistory 0.5 "
           "0.5 damping velocity\n",
           head);
  cmt_write_text(in_dir(dir, "in.mix"), text);
  s = import(in_dir(dir, "in.mix"), in_dir(dir, "t.dump"));
  if (s) {
    int p12 = find_contact(s, 0, 1);
    if (p12 >= 0) {
      CMT_REL(s->contacts[p12].stiffness, 1500, 0);
      CMT_TRUE(s->contacts[p12].stiffness_t == 0);
      CMT_REL(s->contacts[p12].damping_n, 0.1, 0);
      CMT_REL(s->contacts[p12].damping_t, 0.05, 1e-15);
    }
  }
  cm_scene_destroy(&s);
  /* a type the deck does not cover */
  cmt_write_text(
      in_dir(dir, "in.one"),
      "units si\nregion b block -1 1 -1 1 -1 1\ncreate_box 2 b\n"
      "pair_style granular\npair_coeff 1 1 hooke 1000 0.2 tangential "
      "linear_history 300 0.5 0.5\ntimestep 1e-5\n");
  cm_context_t ctx;
  cm_context_init(&ctx);
  CMT_EQ_INT(cm_import_lammps(&ctx, in_dir(dir, "in.one"),
                              in_dir(dir, "t.dump"), NULL, &s),
             CM_USAGE);
  CMT_CONTAINS(ctx.message, "t.dump:10: atoms 1 (type 1) and 2 (type 2) "
                            "touch but the deck sets no contact law");
  rm_dir(dir);
}

/* The fixes on every particle, imported and analysed against their
 * analytic limits: two free spheres (no contact, no wall) of masses m_i,
 * each tethered (fix spring/self K) and dragged (fix viscous gamma): a
 * mode K / m_i on each translation, and velocity Verlet with the drag on
 * the half-step velocity stable while h^2 K / m + 2 h gamma / m < 4. A
 * tether on x and y alone gives one contact per axis. */
CM_TEST(lammps_deck_particle_fixes) {
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  const double m[2] = {0.002, 0.005}, K = 800.0, g = 0.3;
  char text[1024];
  snprintf(text, sizeof text,
           "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS "
           "ff ff ff\n-1 1\n-1 1\n0 1\nITEM: ATOMS id type radius mass x y "
           "z\n1 1 0.01 %.17g 0 0 0.5\n2 1 0.01 %.17g 0.5 0.5 0.5\n",
           m[0], m[1]);
  cmt_write_text(in_dir(dir, "two.dump"), text);
  for (int axes = 0; axes < 2; axes++) {
    snprintf(text, sizeof text,
             "units si\nregion b block -1 1 -1 1 0 1\ncreate_box 1 b\n"
             "pair_style gran/hooke 1000 NULL 0 NULL 0.5 1\npair_coeff * *\n"
             "timestep 1e-4\nfix t all spring/self %g%s\n"
             "fix d all viscous %g\nrun 10\n",
             K, axes ? " xy" : "", g);
    cmt_write_text(in_dir(dir, "in.fixes"), text);
    cm_scene_t *s = import(in_dir(dir, "in.fixes"), in_dir(dir, "two.dump"));
    if (!s)
      continue;
    CMT_EQ_INT(s->ncontacts, axes ? 6 : 4); /* drags, then tethers */
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_report_t *r = NULL;
    CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &r), CM_OK);
    if (r) {
      CMT_REL(r->omega_max, sqrt(K / m[0]), 1e-12);
      CMT_EQ_INT(r->nrows, axes ? 4 : 6); /* no row for a drag */
      double want = INFINITY;
      for (int i = 0; i < 2; i++) {
        double a = K / m[i], b = g / m[i];
        want = fmin(want, 4.0 / (b + sqrt(b * b + 4.0 * a)));
      }
      CMT_REL(r->central_difference.h_s, want, 1e-9);
      CMT_LE(r->central_difference.certified_s, want * (1 + 1e-12));
      CMT_REL(r->cd_undamped.h_s, 2.0 / sqrt(K / m[0]), 1e-12);
    }
    cm_report_destroy(&r);
    cm_scene_destroy(&s);
  }
  /* a tether on a group of types: sphere 2 (type 2) alone is tethered,
   * sphere 1's only limit is its drag, h = 2 m_1 / gamma */
  snprintf(text, sizeof text,
           "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS "
           "ff ff ff\n-1 1\n-1 1\n0 1\nITEM: ATOMS id type radius mass x y "
           "z\n1 1 0.01 %.17g 0 0 0.5\n2 2 0.01 %.17g 0.5 0.5 0.5\n",
           m[0], m[1]);
  cmt_write_text(in_dir(dir, "types.dump"), text);
  snprintf(text, sizeof text,
           "units si\nregion b block -1 1 -1 1 0 1\ncreate_box 2 b\n"
           "pair_style gran/hooke 1000 NULL 0 NULL 0.5 1\npair_coeff * *\n"
           "timestep 1e-4\ngroup wall type 2\nfix t wall spring/self %g\n"
           "fix d all viscous %g\nrun 10\n",
           K, g);
  cmt_write_text(in_dir(dir, "in.group"), text);
  cm_scene_t *s = import(in_dir(dir, "in.group"), in_dir(dir, "types.dump"));
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_report_t *r = NULL;
  if (s && !cm_analyze(&ctx, s, NULL, &r) && r) {
    CMT_EQ_INT(s->ncontacts, 3); /* two drags, one tether */
    CMT_REL(r->omega_max, sqrt(K / m[1]), 1e-12);
    double a = K / m[1], b = g / m[1];
    double want = fmin(2.0 * m[0] / g, 4.0 / (b + sqrt(b * b + 4.0 * a)));
    CMT_REL(r->central_difference.h_s, want, 1e-9);
  } else
    CMT_FAIL("import or analysis: %s", ctx.message);
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
  /* the same without the type column: every atom would be type 1, and
   * sphere 2's tether would be lost (a step too large): refused */
  snprintf(text, sizeof text,
           "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS "
           "ff ff ff\n-1 1\n-1 1\n0 1\nITEM: ATOMS id radius mass x y z\n"
           "1 0.01 %.17g 0 0 0.5\n2 0.01 %.17g 0.5 0.5 0.5\n",
           m[0], m[1]);
  cmt_write_text(in_dir(dir, "untyped.dump"), text);
  cm_context_init(&ctx);
  CMT_EQ_INT(cm_import_lammps(&ctx, in_dir(dir, "in.group"),
                              in_dir(dir, "untyped.dump"), NULL, &s),
             CM_USAGE);
  CMT_CONTAINS(ctx.message, "untyped.dump: no type column");
  CMT_CONTAINS(ctx.message, "acts on types 1 and 2 differently");
  cm_scene_destroy(&s);
  rm_dir(dir);
}
