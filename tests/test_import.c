/* test_import.c: the importers against independent truths: the LIGGGHTS and
 * LAMMPS dumps parsed here with fscanf and searched brute force (all N^2
 * pairs), closed-form frequencies of disk stacks, the reference bar through
 * Matrix Market, scene vs matrix paths of the same system, and bad files
 * whose messages must name the file and line. */
#include "cmodes.h"
#include "cmtest.h"

#include "cholmod.h"

#include <unistd.h>

#define LIGGGHTS                                                               \
  CM_SHARED_DIR "/data/liggghts-contactModels/dump20000.newModels"
#define PILE CM_SOURCE_DIR "/data/lammps/pile.dump"
#define PI 3.14159265358979323846

/* ---- helpers ---------------------------------------------------------------
 */

/* Atoms parsed independently of the library: id, x[3], r. */
typedef struct {
  long id;
  double x[3], r;
} atom_t;

static int cmp_atom(const void *a, const void *b) {
  long ia = ((const atom_t *)a)->id, ib = ((const atom_t *)b)->id;
  return (ia > ib) - (ia < ib);
}

/* Reads the single snapshot of a dump with 9 header lines, ncols columns of
 * which id, x, y, z and radius sit at the given indices. Sorted by id. */
static atom_t *read_atoms(const char *path, int ncols, int cid, int cx, int cr,
                          int *n) {
  FILE *f = fopen(path, "r");
  char line[4096];
  *n = 0;
  if (!f)
    return NULL;
  for (int i = 0; i < 4 && fgets(line, sizeof line, f); i++)
    if (i == 3)
      *n = atoi(line);
  for (int i = 0; i < 5; i++)
    if (!fgets(line, sizeof line, f))
      break;
  atom_t *a = calloc((size_t)*n, sizeof *a);
  for (int k = 0; k < *n; k++) {
    for (int c = 0; c < ncols; c++) {
      double v = 0;
      if (fscanf(f, "%lf", &v) != 1)
        CMT_FAIL("%s: short atom line %d", path, k);
      if (c == cid)
        a[k].id = (long)v;
      if (c >= cx && c < cx + 3)
        a[k].x[c - cx] = v;
      if (c == cr)
        a[k].r = v;
    }
  }
  fclose(f);
  qsort(a, (size_t)*n, sizeof *a, cmp_atom);
  return a;
}

/* Brute-force contacts: every pair i < j with overlap > 0, then each wall
 * (planes: point, inward normal; cylinder: radius about the z axis). */
typedef struct {
  int i, j, wall;
  double overlap;
} bf_t;

static bf_t *brute_force(const atom_t *a, int n, int nplanes,
                         const double (*planes)[6], double cyl_r, int *count) {
  int cap = 1024, m = 0;
  bf_t *c = malloc((size_t)cap * sizeof *c);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      double d2 = 0;
      for (int k = 0; k < 3; k++)
        d2 += (a[i].x[k] - a[j].x[k]) * (a[i].x[k] - a[j].x[k]);
      double delta = a[i].r + a[j].r - sqrt(d2);
      if (delta > 0) {
        if (m == cap)
          c = realloc(c, (size_t)(cap *= 2) * sizeof *c);
        c[m++] = (bf_t){i, j, -1, delta};
      }
    }
  int nwalls = nplanes + (cyl_r > 0);
  for (int w = 0; w < nwalls; w++)
    for (int i = 0; i < n; i++) {
      double delta;
      if (w < nplanes) {
        double dist = 0;
        for (int k = 0; k < 3; k++)
          dist += (a[i].x[k] - planes[w][k]) * planes[w][3 + k];
        delta = a[i].r - dist;
      } else {
        delta = sqrt(a[i].x[0] * a[i].x[0] + a[i].x[1] * a[i].x[1]) + a[i].r -
                cyl_r;
      }
      if (delta > 0) {
        if (m == cap)
          c = realloc(c, (size_t)(cap *= 2) * sizeof *c);
        c[m++] = (bf_t){i, -1, w, delta};
      }
    }
  *count = m;
  return c;
}

/* The importer's contacts equal the brute-force list: same pairs in the
 * same order, same overlaps. */
static void same_contacts(const cm_dump_contact_t *c, int nc, const bf_t *b,
                          int nb) {
  CMT_EQ_INT(nc, nb);
  int bad = 0;
  for (int q = 0; q < nc && q < nb && bad < 5; q++) {
    if (c[q].i != b[q].i || c[q].j != b[q].j || c[q].wall != b[q].wall) {
      CMT_FAIL("contact %d: (%d, %d, wall %d) vs brute force (%d, %d, wall "
               "%d)",
               q, c[q].i, c[q].j, c[q].wall, b[q].i, b[q].j, b[q].wall);
      bad++;
    } else if (fabs(c[q].overlap - b[q].overlap) > 1e-15) {
      CMT_FAIL("contact %d: overlap %.17g vs brute force %.17g", q,
               c[q].overlap, b[q].overlap);
      bad++;
    }
  }
}

/* 1 if the LIGGGHTS tutorial's dump (../shared/data, outside the
 * repository) is there; else says the test is skipped and why. */
static int have_liggghts(const char *test) {
  if (access(LIGGGHTS, R_OK) == 0)
    return 1;
  fprintf(stderr,
          "%s: skipped: %s is not here (the LIGGGHTS tutorial's dump lives "
          "in ../shared/data, outside the repository)\n",
          test, LIGGGHTS);
  return 0;
}

/* The liggghts tutorial's options: Hertz, floor, cylinder. */
static void liggghts_options(cm_dump_options_t *o) {
  cm_dump_options_init(o);
  o->density = 2500;
  o->young = 5e6;
  o->poisson = 0.45;
  CMT_EQ_INT(cm_dump_options_add_plane(NULL, o, "z=0"), CM_OK);
  CMT_EQ_INT(cm_dump_options_set_cylinder(NULL, o, "0.05"), CM_OK);
}

/* ---- LIGGGHTS
 * ------------------------------------------------------------------ */

CM_TEST(import_liggghts_bruteforce) {
  if (!have_liggghts("import_liggghts_bruteforce"))
    return;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  liggghts_options(&o);
  cm_dump_t *d = NULL;
  int st = cm_dump_read(&ctx, LIGGGHTS, &o, &d);
  CMT_EQ_INT(st, CM_OK);
  if (st) {
    fprintf(stderr, "%s\n", ctx.message);
    return;
  }
  CMT_EQ_INT(d->natoms, 1800);
  CMT_EQ_INT(d->timestep, 20000);
  /* independent parse: id type x y z ... radius (18 columns) */
  int n = 0;
  atom_t *a = read_atoms(LIGGGHTS, 18, 0, 2, 17, &n);
  CMT_EQ_INT(n, 1800);
  for (int i = 0; i < n && i < d->natoms; i++) {
    CMT_EQ_INT(d->id[i], a[i].id);
    CMT_TRUE(d->x[3 * i + 2] == a[i].x[2] && d->radius[i] == a[i].r);
  }
  const double planes[1][6] = {{0, 0, 0, 0, 0, 1}};
  int nb = 0;
  bf_t *b = brute_force(a, n, 1, planes, 0.05, &nb);
  cm_dump_contact_t *c = NULL, *c1 = NULL;
  int nc = 0, nc1 = 0;
  o.threads = 2;
  CMT_EQ_INT(cm_dump_find_contacts(&ctx, d, &o, &c, &nc), CM_OK);
  same_contacts(c, nc, b, nb);
  CMT_TRUE(nb > 1000); /* a real bed: ~950 pairs and ~200 wall contacts */
  /* the same bits with one thread */
  o.threads = 1;
  CMT_EQ_INT(cm_dump_find_contacts(&ctx, d, &o, &c1, &nc1), CM_OK);
  CMT_EQ_INT(nc1, nc);
  CMT_TRUE(nc1 == nc && !memcmp(c, c1, (size_t)nc * sizeof *c));
  /* the scene: masses, inertias, Hertz stiffness from the brute force */
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_dump_to_scene(&ctx, d, &o, &s), CM_OK);
  if (s) {
    CMT_EQ_INT(s->nbodies, 1800);
    CMT_EQ_INT(s->ncontacts, nb);
    double m = 4.0 / 3.0 * PI * pow(0.0025, 3) * 2500;
    CMT_REL(s->bodies[7].mass, m, 1e-14);
    CMT_REL(s->bodies[7].inertia[4], 0.4 * m * 0.0025 * 0.0025, 1e-14);
    CMT_TRUE(!strcmp(cm_scene_body_name(s, 0), "atom-1"));
    double estar = 5e6 / (2 * (1 - 0.45 * 0.45));
    for (int q = 0; q < nb && q < s->ncontacts; q++) {
      double ri = a[b[q].i].r,
             rs = b[q].j >= 0 ? ri * a[b[q].j].r / (ri + a[b[q].j].r) : ri;
      /* k = dF/d delta of F = 4/3 E* sqrt(R*) delta^1.5 */
      double k = 2 * estar * sqrt(rs) * sqrt(b[q].overlap);
      CMT_REL(s->contacts[q].stiffness, k, 1e-9);
      CMT_EQ_INT(s->contacts[q].b, b[q].j >= 0 ? b[q].j : CM_WORLD);
    }
    CMT_EQ_INT(cm_scene_validate(&ctx, s), CM_OK);
  }
  cm_scene_destroy(&s);
  free(c);
  free(c1);
  free(b);
  free(a);
  cm_dump_destroy(&d);
}

/* touch-tol: pairs within tol of touching join, with the Hertz floor. */
CM_TEST(import_touch_tolerance) {
  if (!have_liggghts("import_touch_tolerance"))
    return;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  liggghts_options(&o);
  cm_dump_t *d = NULL;
  CMT_EQ_INT(cm_dump_read(&ctx, LIGGGHTS, &o, &d), CM_OK);
  if (!d)
    return;
  double tol = 1e-5;
  cm_dump_contact_t *c0 = NULL, *c = NULL;
  int n0 = 0, n = 0;
  CMT_EQ_INT(cm_dump_find_contacts(&ctx, d, &o, &c0, &n0), CM_OK);
  o.touch_tol = tol;
  CMT_EQ_INT(cm_dump_find_contacts(&ctx, d, &o, &c, &n), CM_OK);
  /* brute force count with the tolerance */
  int want = 0;
  for (int i = 0; i < d->natoms; i++) {
    for (int j = i + 1; j < d->natoms; j++) {
      double s = 0;
      for (int k = 0; k < 3; k++)
        s += pow(d->x[3 * i + k] - d->x[3 * j + k], 2);
      want += d->radius[i] + d->radius[j] - sqrt(s) > -tol;
    }
    want += d->radius[i] - d->x[3 * i + 2] > -tol;
    want += hypot(d->x[3 * i], d->x[3 * i + 1]) + d->radius[i] - 0.05 > -tol;
  }
  CMT_EQ_INT(n, want);
  CMT_TRUE(n > n0);
  double kmin = 2 * 5e6 / (2 * (1 - 0.45 * 0.45)) * sqrt(0.00125 * tol);
  for (int q = 0; q < n; q++) {
    CMT_TRUE(c[q].overlap > -tol);
    if (c[q].j >= 0 && c[q].overlap <= tol)
      CMT_REL(cm_dump_stiffness(&o, d, &c[q]), kmin, 1e-12);
  }
  free(c0);
  free(c);
  cm_dump_destroy(&d);
}

/* ---- LAMMPS pile
 * ----------------------------------------------------------------- */

static void pile_options(cm_dump_options_t *o) {
  cm_dump_options_init(o);
  o->k = 2000; /* the deck's kn */
  const char *walls[] = {"z=0", "x>-0.05", "x<0.05", "y>-0.05", "y<0.05"};
  for (int w = 0; w < 5; w++)
    CMT_EQ_INT(cm_dump_options_add_plane(NULL, o, walls[w]), CM_OK);
}

CM_TEST(import_lammps_pile) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  pile_options(&o);
  cm_dump_t *d = NULL;
  int st = cm_dump_read(&ctx, PILE, &o, &d);
  CMT_EQ_INT(st, CM_OK);
  if (st) {
    fprintf(stderr, "%s\n", ctx.message);
    return;
  }
  CMT_TRUE(d->mass != NULL);
  /* independent parse: id type radius mass x y z vx vy vz fx fy fz */
  int n = 0;
  atom_t *a = read_atoms(PILE, 13, 0, 4, 2, &n);
  CMT_EQ_INT(d->natoms, n);
  CMT_TRUE(n >= 1000 && n <= 3000);
  const double planes[5][6] = {{0, 0, 0, 0, 0, 1},
                               {-0.05, 0, 0, 1, 0, 0},
                               {0.05, 0, 0, -1, 0, 0},
                               {0, -0.05, 0, 0, 1, 0},
                               {0, 0.05, 0, 0, -1, 0}};
  int nb = 0;
  bf_t *b = brute_force(a, n, 5, planes, 0, &nb);
  cm_dump_contact_t *c = NULL;
  int nc = 0;
  CMT_EQ_INT(cm_dump_find_contacts(&ctx, d, &o, &c, &nc), CM_OK);
  same_contacts(c, nc, b, nb);
  CMT_TRUE(nb > n); /* a settled pile: coordination well above 1 */
  /* analyse it */
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_dump_to_scene(&ctx, d, &o, &s), CM_OK);
  cm_report_t *r = NULL;
  cm_options_t opts;
  cm_options_init(&opts);
  st = s ? cm_analyze(&ctx, s, &opts, &r) : -1;
  CMT_EQ_INT(st, CM_OK);
  if (r) {
    CMT_EQ_INT(r->ncontacts, nb);
    CMT_TRUE(r->omega_max > 0);
    CMT_LE(r->omega_lower, r->omega_max * (1 + 1e-12));
    CMT_LE(r->omega_max, r->omega_upper * (1 + 1e-12));
    /* LAMMPS integrated this pile stably with velocity Verlet at 1e-4 s, so
     * the critical central-difference step must be larger */
    CMT_LE(1e-4, r->central_difference.h_s);
    /* the per-contact estimate of the heaviest-loaded wall contact is
     * sqrt(k / m) at least: omega_lower >= sqrt(k / m_max) */
    double mmax = 0;
    for (int i = 0; i < s->nbodies; i++)
      mmax = fmax(mmax, s->bodies[i].mass);
    CMT_LE(sqrt(2000 / mmax), r->omega_lower);
  }
  cm_report_destroy(&r);
  cm_scene_destroy(&s);
  free(c);
  free(b);
  free(a);
  cm_dump_destroy(&d);
}

/* ---- formats: scaled columns, shuffled order, snapshots, 2D ----------------
 */

CM_TEST(import_dump_formats) {
  char dir[64], path[128];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  snprintf(path, sizeof path, "%s/two.dump", dir);
  /* two snapshots; the second has scaled columns in a shuffled order and a
   * diameter column; box 0..2 x 0..4 x 0..1 */
  cmt_write_text(
      path, "ITEM: TIMESTEP\n100\nITEM: NUMBER OF ATOMS\n1\n"
            "ITEM: BOX BOUNDS pp ff ff\n0 2\n0 4\n0 1\n"
            "ITEM: ATOMS id type x y z radius\n"
            "1 1 1.0 1.0 0.5 0.5\n"
            "ITEM: TIMESTEP\n200\nITEM: TIME\n0.02\nITEM: NUMBER OF ATOMS\n2\n"
            "ITEM: BOX BOUNDS ff ff ff\n0 2\n0 4\n0 1\n"
            "ITEM: ATOMS zs diameter id ys type xs mass\n"
            "0.5 1.0 7 0.25 1 0.5 3.0\n"
            "0.5 1.0 3 0.4 1 0.5 2.0\n");
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  cm_dump_t *d = NULL;
  CMT_EQ_INT(cm_dump_read(&ctx, path, &o, &d), CM_OK);
  if (d) {
    CMT_EQ_INT(d->timestep, 200);
    CMT_EQ_INT(d->snapshots, 2);
    CMT_EQ_INT(d->natoms, 2);
    CMT_EQ_INT(d->id[0], 3); /* sorted by id */
    CMT_REL(d->x[0], 1.0, 1e-15);
    CMT_REL(d->x[1], 1.6, 1e-15); /* 0.4 * 4 */
    CMT_REL(d->x[4], 1.0, 1e-15); /* id 7: 0.25 * 4 */
    CMT_REL(d->radius[1], 0.5, 1e-15);
    CMT_REL(d->mass[0], 2.0, 1e-15);
    CMT_TRUE(!strcmp(d->position, "xs"));
    /* one pair, overlap 1 - 0.6 = 0.4, normal from 7 to 3 is +y */
    cm_dump_contact_t *c = NULL;
    int nc = 0;
    CMT_EQ_INT(cm_dump_find_contacts(&ctx, d, &o, &c, &nc), CM_OK);
    CMT_EQ_INT(nc, 1);
    if (nc == 1) {
      CMT_REL(c[0].overlap, 0.4, 1e-12);
      CMT_REL(c[0].normal[1], 1.0, 1e-15);
      CMT_REL(c[0].point[1], 1.0 + 0.5 - 0.2, 1e-12);
    }
    free(c);
  }
  cm_dump_destroy(&d);
  /* --timestep 100: the first snapshot; its box is periodic along x */
  o.timestep = 100;
  CMT_EQ_INT(cm_dump_read(&ctx, path, &o, &d), CM_OK);
  if (d) {
    CMT_EQ_INT(d->timestep, 100);
    CMT_EQ_INT(d->natoms, 1);
    cm_dump_contact_t *c = NULL;
    int nc = 0;
    o.k = 1;
    o.density = 1;
    CMT_EQ_INT(cm_dump_find_contacts(&ctx, d, &o, &c, &nc), CM_USAGE);
    CMT_CONTAINS(ctx.message, "periodic along x");
    o.periodic_ignore = 1;
    CMT_EQ_INT(cm_dump_find_contacts(&ctx, d, &o, &c, &nc), CM_OK);
    free(c);
  }
  cm_dump_destroy(&d);
  o.timestep = 150;
  CMT_EQ_INT(cm_dump_read(&ctx, path, &o, &d), CM_NOT_FOUND);
  CMT_CONTAINS(ctx.message, "no snapshot at timestep 150");
  CMT_CONTAINS(ctx.message, "100, 200");
  /* triclinic box: x = xlo + xs lx + ys xy + zs xz with xlo, xhi taken
   * back from the bounding box (xlo_bound = 0, xhi_bound = 2.5, xy = 0.5) */
  cmt_write_text(path, "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1\n"
                       "ITEM: BOX BOUNDS xy xz yz ff ff ff\n0 2.5 0.5\n0 4 0\n"
                       "0 1 0\nITEM: ATOMS id xs ys zs radius\n"
                       "1 0.5 0.5 0.5 0.1\n");
  o.timestep = -1;
  CMT_EQ_INT(cm_dump_read(&ctx, path, &o, &d), CM_OK);
  if (d) {
    CMT_TRUE(d->triclinic);
    CMT_REL(d->x[0], 0.5 * 2 + 0.5 * 0.5, 1e-15);
    CMT_REL(d->x[1], 2.0, 1e-15);
    CMT_REL(d->x[2], 0.5, 1e-15);
  }
  cm_dump_destroy(&d);
  /* wall specs: point and inward normal (normalised), 2D form */
  cm_dump_options_t w;
  cm_dump_options_init(&w);
  CMT_EQ_INT(cm_dump_options_add_plane(&ctx, &w, "0,0,1,0,0,-2"), CM_OK);
  CMT_EQ_INT(cm_dump_options_add_plane(&ctx, &w, "1,2,0,-1"), CM_OK);
  CMT_EQ_INT(cm_dump_options_add_plane(&ctx, &w, "y < 3"), CM_OK);
  CMT_EQ_INT(cm_dump_options_set_cylinder(&ctx, &w, "0.5,1,-1"), CM_OK);
  CMT_EQ_INT(w.nplanes, 3);
  CMT_REL(w.planes[0][2], 1, 0);
  CMT_REL(w.planes[0][5], -1, 0);
  CMT_REL(w.planes[1][1], 2, 0);
  CMT_REL(w.planes[1][4], -1, 0);
  CMT_REL(w.planes[2][1], 3, 0);
  CMT_REL(w.planes[2][4], -1, 0);
  CMT_REL(w.cyl_radius, 0.5, 0);
  CMT_REL(w.cyl_center[1], -1, 0);
  unlink(path);
  rmdir(dir);
}

/* Two disks stacked on a floor (2D): closed-form frequencies of the chain
 * floor -k- m -k- m: omega^2 = (k/m) (3 -+ sqrt 5) / 2. */
/* A triclinic periodic box whose tilt shifts the images across y: the
 * pair (0.05, 0.05) - (1.05, 1.95) touches through the image b = (xy, Ly)
 * = (1, 2) of atom 2, at (0.05, -0.05): overlap 0.2 - 0.1, normal +y, the
 * point midway. The orthogonal minimum image did not see it (the search
 * refused such boxes since 762372b; before, 0 contacts, silently). With
 * --periodic drop, or with the tilt 0, there is no pair. */
CM_TEST(import_dump_triclinic_periodic) {
  char dir[64], path[128];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  snprintf(path, sizeof path, "%s/tri.dump", dir);
  for (int k = 0; k < 3; k++) {
    char text[512];
    snprintf(text, sizeof text,
             "ITEM: TIMESTEP\n1\nITEM: NUMBER OF ATOMS\n2\n"
             "ITEM: BOX BOUNDS xy xz yz pp pp ff\n0 %s %s\n0 2 0\n0 2 0\n"
             "ITEM: ATOMS id type x y z radius\n"
             "1 1 0.05 0.05 0.5 0.1\n2 1 1.05 1.95 0.5 0.1\n",
             k == 2 ? "2" : "3", k == 2 ? "0" : "1.0");
    cmt_write_text(path, text);
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_dump_options_t o;
    cm_dump_options_init(&o);
    o.k = 1e5, o.density = 1000;
    o.periodic = k == 1 ? CM_DUMP_PERIODIC_DROP : CM_DUMP_PERIODIC_IMAGE;
    cm_dump_t *d = NULL;
    CMT_EQ_INT(cm_dump_read(&ctx, path, &o, &d), CM_OK);
    cm_dump_contact_t *c = NULL;
    int nc = -1;
    if (d)
      CMT_EQ_INT(cm_dump_find_contacts(&ctx, d, &o, &c, &nc), CM_OK);
    if (k == 0) {
      CMT_EQ_INT(nc, 1);
      if (nc == 1) {
        CMT_EQ_INT(c[0].i, 0);
        CMT_EQ_INT(c[0].j, 1);
        CMT_EQ_INT(c[0].image[0], 0);
        CMT_EQ_INT(c[0].image[1], -1);
        CMT_EQ_INT(c[0].image[2], 0);
        CMT_REL(c[0].overlap, 0.1, 1e-12);
        CMT_REL(c[0].normal[1], 1, 1e-12);
        CMT_LE(fabs(c[0].normal[0]) + fabs(c[0].normal[2]), 1e-12);
        CMT_REL(c[0].point[0], 0.05, 1e-12);
        CMT_REL(c[0].point[1], 0.0, 0); /* -0.05 + (0.1 - 0.05) */
      }
    } else { /* dropped: no pair; orthogonal: (0.05, 0.05) and (1.05,
              * -0.05) 1 apart in x, no pair either */
      CMT_EQ_INT(nc, 0);
    }
    free(c);
    cm_dump_destroy(&d);
  }
  unlink(path);
  rmdir(dir);
}

/* Each atom's contact count in a dump's snapshot at timestep step (-1: the
 * last) against its c_c column (LAMMPS' compute contact/atom: the atoms it
 * overlaps, on LAMMPS' own periodic images); returns the number of atoms
 * that differ, or -1 when the dump does not import. *pairs: the contacts
 * found. */
static int tri_vs_cc(const char *path, int dim, long step, int *pairs) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  o.dim = dim, o.k = 1e5, o.timestep = step;
  o.periodic = CM_DUMP_PERIODIC_IMAGE;
  cm_scene_t *s = NULL;
  char *text = cmt_read_file(path), head[64];
  if (!text || cm_import_dump(&ctx, path, &o, &s)) {
    fprintf(stderr, "%s: %s\n", path, text ? ctx.message : "unreadable");
    free(text);
    return -1;
  }
  int *cnt = calloc((size_t)s->nbodies + 1, sizeof *cnt), bad = 0, n = 0;
  for (int q = 0; q < s->ncontacts; q++)
    cnt[s->contacts[q].a]++, cnt[s->contacts[q].b]++;
  /* the snapshot's atoms, sorted by id in the dump as in the scene */
  snprintf(head, sizeof head, "ITEM: TIMESTEP\n%ld\n", step);
  char *at = step >= 0 ? strstr(text, head) : text;
  at = at ? strstr(at, "ITEM: ATOMS") : NULL; /* this snapshot's, or */
  for (char *a = at; step < 0 && a && (a = strstr(a + 1, "ITEM: ATOMS"));)
    at = a; /* the last one */
  char *line = at ? strchr(at, '\n') : NULL;
  while (line && *++line && n < s->nbodies) {
    char *col[16];
    int nw = 0;
    char *save = NULL, *eol = strchr(line, '\n');
    if (eol)
      *eol = 0;
    for (char *t = strtok_r(line, " ", &save); t && nw < 16;
         t = strtok_r(NULL, " ", &save))
      col[nw++] = t;
    if (nw && atoi(col[nw - 1]) != cnt[n]) {
      if (bad++ < 5)
        fprintf(stderr, "%s: atom %s: LAMMPS %s contacts, cmodes %d\n", path,
                col[0], col[nw - 1], cnt[n]);
    }
    n++;
    line = eol;
  }
  if (n != s->nbodies)
    bad = -1;
  *pairs = s->ncontacts;
  free(cnt), free(text);
  cm_scene_destroy(&s);
  return bad;
}

/* The contact search in tilted periodic boxes against LAMMPS itself:
 * every atom's contact count equals compute contact/atom's, in the dumps
 * data/lammps/triclinic holds (written by lmp: three tilts, a fixed y
 * under an xy tilt, where the box's bounds are not its period, scaled
 * positions, 2D); where lmp is installed, also in a dump it writes now
 * with another seed. */
CM_TEST(import_dump_triclinic_vs_lmp) {
  const struct {
    const char *file;
    int dim, pairs;
  } cases[] = {{"ppp.dump", 3, 557},
               {"pfp.dump", 3, 529},
               {"ppf.dump", 3, 933},
               {"2d.dump", 2, 675}};
  for (int k = 0; k < 4; k++) {
    char path[512];
    snprintf(path, sizeof path, "%s/data/lammps/triclinic/%s", CM_SOURCE_DIR,
             cases[k].file);
    int pairs = -1;
    CMT_EQ_INT(tri_vs_cc(path, cases[k].dim, -1, &pairs), 0);
    CMT_EQ_INT(pairs, cases[k].pairs);
  }
  int code = 0;
  free(cmt_run("command -v lmp >/dev/null 2>&1", &code));
  if (code) {
    fprintf(stderr, "import_dump_triclinic_vs_lmp: no 'lmp' (Debian package "
                    "lammps) on PATH: the committed dumps only\n");
    return;
  }
  char dir[64], cmd[1024], path[128];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  snprintf(cmd, sizeof cmd,
           "-in %s/data/lammps/triclinic/in.triclinic -log none "
           "-screen none -var b1 p -var b2 p -var b3 p -var xy -0.5 -var xz "
           "0.6 -var yz -0.45 -var dim 3 -var zlo 0 -var zhi 1.3 -var n 350 "
           "-var seed 4242 -var scaled 0 -var out now.dump",
           CM_SOURCE_DIR);
  char *out = cmt_run_lmp(dir, cmd, &code);
  CMT_EQ_INT(code, 0);
  if (code)
    fprintf(stderr, "%s\n", out ? out : "");
  free(out);
  snprintf(path, sizeof path, "%s/now.dump", dir);
  int pairs = -1;
  if (!code)
    CMT_EQ_INT(tri_vs_cc(path, 3, -1, &pairs), 0);
  CMT_TRUE(code || pairs > 300); /* a packed box: many pairs to check */
  unlink(path);
  rmdir(dir);
}

/* A bed sheared by LAMMPS' fix deform (xy erate, remap x, flip yes), 12
 * snapshots of data/lammps/sheared as the tilt grows from 0 to 0.024 m and
 * flips to -0.023 (lx 0.05): every atom's contact count in every snapshot
 * equals LAMMPS' compute contact/atom's. */
CM_TEST(import_dump_sheared_vs_lmp) {
  const int pairs_at[12] = {758, 668, 666, 647, 627, 666, /* sum c_c / 2 */
                            667, 672, 668, 663, 666, 662};
  for (int k = 0; k < 12; k++) {
    int pairs = -1;
    CMT_EQ_INT(tri_vs_cc(CM_SOURCE_DIR "/data/lammps/sheared/sheared.dump", 3,
                         300L * k, &pairs),
               0);
    CMT_EQ_INT(pairs, pairs_at[k]);
  }
}

/* A periodic box tilted by whole box vectors (xy = lx, yz = ly)
 * is the same lattice as the orthogonal one: the same atoms give the
 * same contacts (pairs, overlaps, normals) and the same frequencies. */
CM_TEST(import_dump_triclinic_lattice) {
  char dir[64], path[128];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  snprintf(path, sizeof path, "%s/lat.dump", dir);
  enum { N = 120 };
  double x[N][3];
  unsigned long long r = 88172645463325252ULL;
  for (int i = 0; i < N; i++)
    for (int a = 0; a < 3; a++) {
      r ^= r << 13, r ^= r >> 7, r ^= r << 17; /* xorshift */
      x[i][a] = (double)(r >> 11) / 9007199254740992.0 * (1.5 - 0.1 * a);
    }
  cm_scene_t *s[2] = {NULL, NULL};
  double omega[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    size_t cap = 128 * N + 512, len = 0;
    char *text = malloc(cap);
    len +=
        (size_t)snprintf(text + len, cap - len,
                         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n%d\n", N);
    if (k == 0)
      len += (size_t)snprintf(text + len, cap - len,
                              "ITEM: BOX BOUNDS pp pp pp\n0 1.5\n0 1.4\n"
                              "0 1.3\n");
    else /* bounds: x 0 + min(0, xy, xz, xy + xz) .. 1.5 + max(...) */
      len += (size_t)snprintf(text + len, cap - len,
                              "ITEM: BOX BOUNDS xy xz yz pp pp pp\n"
                              "0 3.0 1.5\n0 2.8 0\n0 1.3 1.4\n");
    len += (size_t)snprintf(text + len, cap - len,
                            "ITEM: ATOMS id type x y z radius\n");
    for (int i = 0; i < N; i++)
      len += (size_t)snprintf(text + len, cap - len,
                              "%d 1 %.17g %.17g %.17g "
                              "0.15\n",
                              i + 1, x[i][0], x[i][1], x[i][2]);
    cmt_write_text(path, text);
    free(text);
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_dump_options_t o;
    cm_dump_options_init(&o);
    o.k = 1e5, o.density = 1000;
    o.periodic = CM_DUMP_PERIODIC_IMAGE;
    CMT_EQ_INT(cm_import_dump(&ctx, path, &o, &s[k]), CM_OK);
    cm_options_t opts;
    cm_options_init(&opts);
    opts.modes = 1;
    cm_report_t *rep = NULL;
    if (s[k])
      CMT_EQ_INT(cm_analyze(&ctx, s[k], &opts, &rep), CM_OK);
    omega[k] = rep ? rep->omega_max : -1;
    cm_report_destroy(&rep);
  }
  if (s[0] && s[1]) {
    CMT_EQ_INT(s[1]->ncontacts, s[0]->ncontacts);
    CMT_TRUE(s[0]->ncontacts > 2 * N); /* packed: many across the faces */
    int across = 0;
    for (int q = 0; q < s[0]->ncontacts; q++)
      across += s[1]->contacts[q].has_arms;
    CMT_TRUE(across > N / 4); /* 55 of 261 */
    for (int q = 0; q < s[0]->ncontacts && q < s[1]->ncontacts; q++) {
      const cm_contact_t *p0 = &s[0]->contacts[q], *p1 = &s[1]->contacts[q];
      CMT_EQ_INT(p1->a, p0->a);
      CMT_EQ_INT(p1->b, p0->b);
      for (int a = 0; a < 3; a++) {
        CMT_LE(fabs(p1->normal[a] - p0->normal[a]), 1e-12);
        CMT_LE(fabs(p1->arm_a[a] - p0->arm_a[a]), 1e-12);
        CMT_LE(fabs(p1->arm_b[a] - p0->arm_b[a]), 1e-12);
      }
    }
    CMT_REL(omega[1], omega[0], 1e-10);
  }
  cm_scene_destroy(&s[0]);
  cm_scene_destroy(&s[1]);
  unlink(path);
  rmdir(dir);
}

CM_TEST(import_disks_2d_chain) {
  char dir[64], path[128];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  snprintf(path, sizeof path, "%s/disks.dump", dir);
  /* r = 0.01, floor y = 0: overlaps 1e-4 each; z column ignored in 2D */
  cmt_write_text(path, "ITEM: TIMESTEP\n5\nITEM: NUMBER OF ATOMS\n2\n"
                       "ITEM: BOX BOUNDS ff ff pp\n-1 1\n0 1\n-0.5 0.5\n"
                       "ITEM: ATOMS id x y z radius\n"
                       "1 0.0 0.0099 123.0 0.01\n"
                       "2 0.0 0.0297 -5.0 0.01\n");
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  o.dim = 2;
  o.density = 1000;
  o.thickness = 0.002;
  o.k = 5e4;
  CMT_EQ_INT(cm_dump_options_add_plane(&ctx, &o, "y>0"), CM_OK);
  cm_scene_t *s = NULL;
  int st = cm_import_dump(&ctx, path, &o, &s);
  CMT_EQ_INT(st, CM_OK);
  if (st)
    fprintf(stderr, "%s\n", ctx.message);
  if (s) {
    double m = PI * 0.01 * 0.01 * 0.002 * 1000;
    CMT_EQ_INT(s->dim, 2);
    CMT_EQ_INT(s->ncontacts, 2);
    CMT_REL(s->bodies[0].mass, m, 1e-14);
    CMT_REL(s->bodies[0].inertia[0], 0.5 * m * 1e-4, 1e-14);
    cm_options_t opts;
    cm_options_init(&opts);
    opts.modes = 2;
    cm_report_t *r = NULL;
    CMT_EQ_INT(cm_analyze(&ctx, s, &opts, &r), CM_OK);
    if (r && r->nmodes == 2) {
      double w2 = 5e4 / m;
      CMT_REL(r->modes[0].omega, sqrt(w2 * (3 + sqrt(5.0)) / 2), 1e-10);
      CMT_REL(r->modes[1].omega, sqrt(w2 * (3 - sqrt(5.0)) / 2), 1e-10);
    }
    cm_report_destroy(&r);
    /* walls as fixed bodies give the same modes */
    cm_scene_destroy(&s);
    o.wall_bodies = 1;
    CMT_EQ_INT(cm_import_dump(&ctx, path, &o, &s), CM_OK);
    if (s) {
      CMT_EQ_INT(s->nbodies, 3);
      CMT_TRUE(s->bodies[2].fixed);
      CMT_EQ_INT(s->contacts[1].b, 2);
      CMT_EQ_INT(cm_analyze(&ctx, s, &opts, &r), CM_OK);
      if (r)
        CMT_REL(r->omega_max, sqrt(5e4 / m * (3 + sqrt(5.0)) / 2), 1e-10);
      cm_report_destroy(&r);
    }
  }
  cm_scene_destroy(&s);
  unlink(path);
  rmdir(dir);
}

/* ---- bad dumps
 * ------------------------------------------------------------------ */

typedef struct {
  const char *text;  /* file content */
  const char *where; /* ":LINE:" expected in the message */
  const char *what;  /* phrase expected in the message */
} bad_case_t;

CM_TEST(import_bad_dumps) {
  static const char head[] = "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n3\n"
                             "ITEM: BOX BOUNDS ff ff ff\n0 1\n0 1\n0 1\n";
  static const bad_case_t cases[] = {
      {"ITEM: ATOMS id type radius\n1 1 0.1\n2 1 0.1\n3 1 0.1\n",
       ":9:", "no position columns"},
      {"ITEM: ATOMS id x y z\n1 0.1 0.1 0.1\n2 0.5 0.5 0.5\n3 .9 .9 .9\n",
       ":9:", "no radius or diameter"},
      {"ITEM: ATOMS id x y z radius\n1 0.1 0.1 0.1 0.1\n2 0.5 0.5 0.5 0.1\n",
       ":11:", "truncated"},
      {"ITEM: ATOMS id x y z radius\n1 nan 0.1 0.1 0.1\n2 .5 .5 .5 .1\n"
       "3 .9 .9 .9 .1\n",
       ":10:", "column 'x'"},
      {"ITEM: ATOMS id x y z radius\n1 .1 .1 .1 .1\n2 .5 .5 .5\n"
       "3 .9 .9 .9 .1\n",
       ":11:", "expected 5 values"},
      {"ITEM: ATOMS id x y z radius\n1 .1 .1 .1 .1\n2 .5 .5 .5 abc\n"
       "3 .9 .9 .9 .1\n",
       ":11:", "not a number"},
      {"ITEM: ATOMS id x y z radius\n1 .1 .1 .1 .1\n2 .5 .5 .5 .1\n"
       "1 .9 .9 .9 .1\n",
       ":12:", "appears twice (also on line 10)"},
      {"ITEM: ATOMS id x y z radius\n1 .1 .1 .1 .1\n2 .5 .5 .5 -1\n"
       "3 .9 .9 .9 .1\n",
       ":11:", "radius"},
      {"ITEM: ATOMS id x y z radius\n1 .1 .1 .1 .1\nITEM: TIMESTEP\n",
       ":11:", "declares 3 atoms"},
  };
  char dir[64], path[128];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  snprintf(path, sizeof path, "%s/bad.dump", dir);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[1024], where[256];
    snprintf(text, sizeof text, "%s%s", head, cases[i].text);
    cmt_write_text(path, text);
    cm_dump_t *d = NULL;
    int st = cm_dump_read(&ctx, path, &o, &d);
    CMT_EQ_INT(st, CM_PARSE);
    CMT_TRUE(d == NULL);
    snprintf(where, sizeof where, "%s%s", path, cases[i].where);
    CMT_CONTAINS(ctx.message, where);
    CMT_CONTAINS(ctx.message, cases[i].what);
    cm_dump_destroy(&d);
  }
  /* not a dump at all; empty file */
  cmt_write_text(path, "hello\n");
  CMT_EQ_INT(cm_dump_read(&ctx, path, &o, &(cm_dump_t *){NULL}), CM_PARSE);
  CMT_CONTAINS(ctx.message, ":1: expected 'ITEM: TIMESTEP'");
  cmt_write_text(path, "");
  CMT_EQ_INT(cm_dump_read(&ctx, path, &o, &(cm_dump_t *){NULL}), CM_PARSE);
  CMT_CONTAINS(ctx.message, "no snapshot");
  /* scene-level: no mass, no stiffness, an atom outside a wall */
  char text[1024];
  snprintf(text, sizeof text,
           "%sITEM: ATOMS id x y z radius\n"
           "1 .1 .1 .1 .1\n2 .5 .5 .5 .1\n3 .9 .9 .9 .1\n",
           head);
  cmt_write_text(path, text);
  cm_dump_t *d = NULL;
  CMT_EQ_INT(cm_dump_read(&ctx, path, &o, &d), CM_OK);
  cm_scene_t *s = NULL;
  if (d) {
    o.k = 10;
    CMT_EQ_INT(cm_dump_to_scene(&ctx, d, &o, &s), CM_USAGE);
    CMT_CONTAINS(ctx.message, "no mass column");
    o.k = 0;
    o.density = 1;
    CMT_EQ_INT(cm_dump_to_scene(&ctx, d, &o, &s), CM_USAGE);
    CMT_CONTAINS(ctx.message, "no contact stiffness");
    o.k = 10;
    CMT_EQ_INT(cm_dump_options_add_plane(&ctx, &o, "z<0.5"), CM_OK);
    CMT_EQ_INT(cm_dump_to_scene(&ctx, d, &o, &s), CM_USAGE);
    CMT_CONTAINS(ctx.message, ":12: atom 3 is outside wall-plane-0");
    CMT_EQ_INT(cm_dump_options_add_plane(&ctx, &o, "q=1"), CM_USAGE);
    CMT_CONTAINS(ctx.message, "--wall-plane 'q=1'");
    CMT_EQ_INT(cm_dump_options_set_cylinder(&ctx, &o, "-1"), CM_USAGE);
  }
  CMT_TRUE(s == NULL);
  cm_dump_destroy(&d);
  unlink(path);
  rmdir(dir);
}

/* ---- Matrix Market
 * ---------------------------------------------------------------- */

/* Exports sys to a fresh folder; returns the folder (caller removes). */
static int export_to(cm_context_t *ctx, const cm_system_t *sys, char *dir,
                     size_t size, int flags) {
  if (!cmt_tmpdir(dir, size))
    return -1;
  return cm_system_write_matrices(ctx, sys, dir, flags, "test");
}

static void remove_export(const char *dir) {
  const char *names[] = {"M.mtx",   "J.mtx",    "k.mtx",    "B.mtx",
                         "S.mtx",   "rows.txt", "cols.txt", "manifest.json",
                         "bad.mtx", "bed.json", "bad.json"};
  char p[256];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
  rmdir(dir);
}

/* Reads a Matrix Market file with CHOLMOD into a dense column-major array. */
static double *dense_from_mtx(const char *path, int *nrow, int *ncol) {
  cholmod_common c;
  cholmod_start(&c);
  FILE *f = fopen(path, "r");
  cholmod_sparse *A = f ? cholmod_read_sparse(f, &c) : NULL;
  if (f)
    fclose(f);
  double *X = NULL;
  if (A) {
    *nrow = (int)A->nrow, *ncol = (int)A->ncol;
    X = calloc(A->nrow * A->ncol, sizeof *X);
    const int *p = A->p, *i = A->i;
    const double *x = A->x;
    for (int j = 0; j < *ncol; j++)
      for (int q = p[j]; q < p[j + 1]; q++) {
        X[i[q] + (size_t)j * *nrow] = x[q];
        if (A->stype)
          X[j + (size_t)i[q] * *nrow] = x[q];
      }
  }
  cholmod_free_sparse(&A, &c);
  cholmod_finish(&c);
  return X;
}

/* The reference bar: S from S.mtx has eigenvalues 2k/m and 2 k d^2 / I, and
 * B B^T from B.mtx equals S; the read system gives 316.2 and 632.5 rad/s. */
CM_TEST(import_mtx_bar_reference) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  cm_system_t *sys = NULL, *back = NULL;
  CMT_EQ_INT(cm_scene_read_file(&ctx, CM_SOURCE_DIR "/data/bar2d.json", &s),
             CM_OK);
  CMT_EQ_INT(s ? cm_system_assemble(&ctx, s, &sys) : -1, CM_OK);
  char dir[64], p[128];
  if (!sys ||
      export_to(&ctx, sys, dir, sizeof dir, CM_MTX_WRITE_B | CM_MTX_WRITE_S)) {
    CMT_FAIL("export: %s", ctx.message);
    cm_system_destroy(&sys);
    cm_scene_destroy(&s);
    return;
  }
  int nr = 0, nc = 0, br = 0, bc = 0;
  snprintf(p, sizeof p, "%s/S.mtx", dir);
  double *S = dense_from_mtx(p, &nr, &nc);
  snprintf(p, sizeof p, "%s/B.mtx", dir);
  double *B = dense_from_mtx(p, &br, &bc);
  CMT_TRUE(S && B && nr == 2 && nc == 2 && br == 2 && bc == 2);
  if (S && B && nr == 2 && br == 2 && bc == 2) {
    double tr = S[0] + S[3], det = S[0] * S[3] - S[1] * S[2];
    double l1 = tr / 2 + sqrt(tr * tr / 4 - det),
           l2 = tr / 2 - sqrt(tr * tr / 4 - det);
    CMT_REL(l1, 2 * 1e5 * 0.1 * 0.1 / 0.005, 1e-12); /* rocking */
    CMT_REL(l2, 2 * 1e5 / 2.0, 1e-12);               /* translation */
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++) {
        double bbt = 0;
        for (int k = 0; k < 2; k++)
          bbt += B[i + 2 * k] * B[j + 2 * k];
        CMT_REL(bbt, S[i + 2 * j], 1e-12);
      }
  }
  free(S);
  free(B);
  snprintf(p, sizeof p, "%s/manifest.json", dir);
  CMT_EQ_INT(cm_system_read_manifest(&ctx, p, &back), CM_OK);
  cm_report_t *r = NULL;
  cm_options_t opts;
  cm_options_init(&opts);
  if (back)
    CMT_EQ_INT(cm_analyze_system(&ctx, back, NULL, &opts, &r), CM_OK);
  if (r && r->nmodes == 2) {
    CMT_REL(r->modes[0].omega, sqrt(2 * 1e5 * 0.01 / 0.005), 1e-10);
    CMT_REL(r->modes[1].omega, sqrt(1e5), 1e-10);
  }
  cm_report_destroy(&r);
  cm_system_destroy(&back);
  cm_system_destroy(&sys);
  cm_scene_destroy(&s);
  remove_export(dir);
}

/* Reads a Matrix Market file with CHOLMOD as a sparse matrix. */
static cholmod_sparse *sparse_from_mtx(const char *path, cholmod_common *c) {
  FILE *f = fopen(path, "r");
  cholmod_sparse *A = f ? cholmod_read_sparse(f, c) : NULL;
  if (f)
    fclose(f);
  return A;
}

/* B.mtx of a scene with full 6x6 mass blocks (rotated boxes with unequal
 * inertia): B B^T x equals K^1/2 J M^-1 J^T K^1/2 x with M^-1 applied by a
 * CHOLMOD solve on M.mtx, for random x; and S.mtx equals B B^T. */
CM_TEST(import_mtx_b_matches_solves) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = cm_scene_create(3);
  uint64_t z = 12345;
  for (int b = 0; b < 6; b++) {
    cm_body_t bd;
    cm_body_init(&bd);
    bd.mass = 1 + b;
    double I[3] = {0.1 + 0.05 * b, 0.2, 0.3 + 0.02 * b};
    memset(bd.inertia, 0, sizeof bd.inertia);
    bd.inertia[0] = I[0], bd.inertia[4] = I[1], bd.inertia[8] = I[2];
    double q[4] = {1, 0.3 * b, -0.2, 0.1 * b}, qn = 0;
    for (int i = 0; i < 4; i++)
      qn += q[i] * q[i];
    for (int i = 0; i < 4; i++)
      bd.orientation[i] = q[i] / sqrt(qn);
    bd.position[0] = b, bd.position[1] = 0.1 * b, bd.position[2] = 0.5;
    cm_scene_add_body(&ctx, s, &bd, NULL);
  }
  for (int c = 0; c < 14; c++) { /* chain, world contacts, off-centre */
    cm_contact_t k;
    cm_contact_init(&k);
    z = z * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(z >> 11) / 9007199254740992.0;
    k.a = c % 6;
    k.b = c < 5 ? c + 1 : CM_WORLD;
    k.point[0] = k.a + 0.3 * u, k.point[1] = 0.2 - 0.4 * u, k.point[2] = u;
    k.normal[0] = 0.2 + u, k.normal[1] = 1 - u, k.normal[2] = 0.5;
    k.stiffness = 1e4 * (1 + c);
    cm_scene_add_contact(&ctx, s, &k, NULL);
  }
  cm_system_t *sys = NULL;
  CMT_EQ_INT(cm_system_assemble(&ctx, s, &sys), CM_OK);
  char dir[64], p[128];
  if (!sys ||
      export_to(&ctx, sys, dir, sizeof dir, CM_MTX_WRITE_B | CM_MTX_WRITE_S)) {
    CMT_FAIL("export: %s", ctx.message);
    cm_system_destroy(&sys);
    cm_scene_destroy(&s);
    return;
  }
  cholmod_common c;
  cholmod_start(&c);
  snprintf(p, sizeof p, "%s/M.mtx", dir);
  cholmod_sparse *M = sparse_from_mtx(p, &c);
  snprintf(p, sizeof p, "%s/J.mtx", dir);
  cholmod_sparse *J = sparse_from_mtx(p, &c);
  snprintf(p, sizeof p, "%s/B.mtx", dir);
  cholmod_sparse *B = sparse_from_mtx(p, &c);
  snprintf(p, sizeof p, "%s/S.mtx", dir);
  cholmod_sparse *S = sparse_from_mtx(p, &c);
  CMT_TRUE(M && J && B && S);
  if (M && J && B && S) {
    int n = (int)M->nrow, nc = (int)J->nrow;
    CMT_TRUE(n > 20); /* full blocks: 6 bodies, 6 dofs each, some kept */
    CMT_TRUE(((int *)M->p)[n] > n + 6); /* rotated inertia: coupled blocks */
    cholmod_factor *F = cholmod_analyze(M, &c);
    cholmod_factorize(M, F, &c);
    cholmod_dense *x = cholmod_zeros((size_t)nc, 1, CHOLMOD_REAL, &c);
    cholmod_dense *t = cholmod_zeros((size_t)n, 1, CHOLMOD_REAL, &c);
    cholmod_dense *y1 = cholmod_zeros((size_t)nc, 1, CHOLMOD_REAL, &c);
    cholmod_dense *y2 = cholmod_zeros((size_t)nc, 1, CHOLMOD_REAL, &c);
    cholmod_dense *y3 = cholmod_zeros((size_t)nc, 1, CHOLMOD_REAL, &c);
    double one[2] = {1, 0}, zero[2] = {0, 0};
    for (int trial = 0; trial < 3; trial++) {
      double *xv = x->x;
      for (int i = 0; i < nc; i++)
        xv[i] = sin(1.0 + i * (trial + 1.7)) * sqrt(sys->k[i]);
      /* y1 = B (B^T x) */
      cholmod_sdmult(B, 1, one, zero, x, t, &c);
      cholmod_sdmult(B, 0, one, zero, t, y1, &c);
      /* y2 = K^1/2 J M^-1 J^T K^1/2 x */
      double *kx = x->x;
      for (int i = 0; i < nc; i++)
        kx[i] *= sqrt(sys->k[i]);
      cholmod_sdmult(J, 1, one, zero, x, t, &c);
      cholmod_dense *w = cholmod_solve(CHOLMOD_A, F, t, &c);
      cholmod_sdmult(J, 0, one, zero, w, y2, &c);
      cholmod_free_dense(&w, &c);
      for (int i = 0; i < nc; i++)
        kx[i] /= sqrt(sys->k[i]);
      double *v2 = y2->x, scale = 0;
      for (int i = 0; i < nc; i++)
        scale = fmax(scale, fabs(v2[i] *= sqrt(sys->k[i])));
      /* y3 = S x (S.mtx stores one triangle: stype != 0) */
      cholmod_sdmult(S, 0, one, zero, x, y3, &c);
      double *v1 = y1->x, *v3 = y3->x;
      for (int i = 0; i < nc; i++) {
        CMT_LE(fabs(v1[i] - v2[i]), 1e-12 * scale);
        CMT_LE(fabs(v3[i] - v2[i]), 1e-12 * scale);
      }
    }
    cholmod_free_dense(&x, &c), cholmod_free_dense(&t, &c);
    cholmod_free_dense(&y1, &c), cholmod_free_dense(&y2, &c);
    cholmod_free_dense(&y3, &c);
    cholmod_free_factor(&F, &c);
  }
  cholmod_free_sparse(&M, &c), cholmod_free_sparse(&J, &c);
  cholmod_free_sparse(&B, &c), cholmod_free_sparse(&S, &c);
  cholmod_finish(&c);
  cm_system_destroy(&sys);
  cm_scene_destroy(&s);
  remove_export(dir);
}

/* Scene path and Matrix Market path give the same frequencies. */
static void roundtrip(cm_scene_t *s) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL, *back = NULL;
  cm_report_t *r1 = NULL, *r2 = NULL;
  cm_options_t opts;
  cm_options_init(&opts);
  CMT_EQ_INT(cm_system_assemble(&ctx, s, &sys), CM_OK);
  char dir[64], p[128];
  if (!sys || export_to(&ctx, sys, dir, sizeof dir, 0)) {
    CMT_FAIL("export: %s", ctx.message);
    cm_system_destroy(&sys);
    return;
  }
  snprintf(p, sizeof p, "%s/manifest.json", dir);
  CMT_EQ_INT(cm_system_read_manifest(&ctx, p, &back), CM_OK);
  CMT_EQ_INT(cm_analyze(&ctx, s, &opts, &r1), CM_OK);
  if (back) {
    CMT_EQ_INT(back->n, sys->n);
    CMT_EQ_INT(back->nc, sys->nc);
    CMT_EQ_INT(back->Jp[back->nc], sys->Jp[sys->nc]);
    CMT_EQ_INT(cm_analyze_system(&ctx, back, NULL, &opts, &r2), CM_OK);
  }
  if (r1 && r2) {
    CMT_REL(r2->omega_max, r1->omega_max, 1e-9);
    CMT_EQ_INT(r2->nmodes, r1->nmodes);
    for (int m = 0; m < r1->nmodes && m < r2->nmodes; m++)
      CMT_REL(r2->modes[m].omega, r1->modes[m].omega, 1e-9);
    CMT_REL(r2->pc_omega_max, r1->pc_omega_max, 1e-12);
  }
  cm_report_destroy(&r1);
  cm_report_destroy(&r2);
  cm_system_destroy(&back);
  cm_system_destroy(&sys);
  remove_export(dir);
}

CM_TEST(import_mtx_roundtrip) {
  if (!have_liggghts("import_mtx_roundtrip"))
    return;
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  liggghts_options(&o);
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_import_dump(&ctx, LIGGGHTS, &o, &s), CM_OK);
  if (s)
    roundtrip(s);
  cm_scene_destroy(&s);
  CMT_EQ_INT(cm_scene_read_file(&ctx, CM_SOURCE_DIR "/data/bar2d.json", &s),
             CM_OK);
  if (s)
    roundtrip(s);
  cm_scene_destroy(&s);
}

/* ---- bad matrices
 * ---------------------------------------------------------------- */

static const char M_ok[] = "%%MatrixMarket matrix coordinate real symmetric\n"
                           "2 2 2\n1 1 2\n2 2 3\n";
static const char J_ok[] = "%%MatrixMarket matrix coordinate real general\n"
                           "3 2 3\n1 1 1\n2 2 1\n3 1 -1\n";
static const char k_ok[] = "%%MatrixMarket matrix array real general\n"
                           "3 1\n10\n20\n30\n";

/* Writes M, J, k to dir, reads them; returns the status. */
static int read_set(cm_context_t *ctx, const char *dir, const char *M,
                    const char *J, const char *k) {
  char pm[128], pj[128], pk[128];
  snprintf(pm, sizeof pm, "%s/M.mtx", dir);
  snprintf(pj, sizeof pj, "%s/J.mtx", dir);
  snprintf(pk, sizeof pk, "%s/k.mtx", dir);
  cmt_write_text(pm, M);
  cmt_write_text(pj, J);
  cmt_write_text(pk, k);
  cm_system_t *sys = NULL;
  int st = cm_system_read_matrices(ctx, pm, pj, pk, &sys);
  if (!st != !!sys)
    CMT_FAIL("status %d but system %p", st, (void *)sys);
  cm_system_destroy(&sys);
  return st;
}

/* Expects status st and "DIR/FILE:LINE:" plus a phrase in the message. */
static void expect(cm_context_t *ctx, int got, int st, const char *dir,
                   const char *fileline, const char *what) {
  char where[160];
  CMT_EQ_INT(got, st);
  snprintf(where, sizeof where, "%s/%s", dir, fileline);
  CMT_CONTAINS(ctx->message, where);
  CMT_CONTAINS(ctx->message, what);
}

CM_TEST(import_bad_matrices) {
  char dir[64];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  cm_context_t ctx;
  cm_context_init(&ctx);
  CMT_EQ_INT(read_set(&ctx, dir, M_ok, J_ok, k_ok), CM_OK);
  /* M */
  expect(&ctx,
         read_set(&ctx, dir,
                  "%%MatrixMarket matrix coordinate real general\n"
                  "% a comment\n2 3 2\n1 1 2\n2 2 3\n",
                  J_ok, k_ok),
         CM_INVALID_SCENE, dir, "M.mtx:3:", "square");
  expect(&ctx,
         read_set(&ctx, dir,
                  "%%MatrixMarket matrix coordinate real symmetric\n"
                  "2 2 3\n1 1 2\n2 2 3\n",
                  J_ok, k_ok),
         CM_PARSE, dir, "M.mtx:4:", "truncated");
  expect(&ctx,
         read_set(&ctx, dir,
                  "%%MatrixMarket matrix coordinate real symmetric\n"
                  "2 2 2\n1 1 2\n2 2 -3\n",
                  J_ok, k_ok),
         CM_NOT_SPD, dir, "M.mtx:4:", "not positive");
  expect(&ctx,
         read_set(&ctx, dir,
                  "%%MatrixMarket matrix coordinate real symmetric\n"
                  "2 2 2\n1 1 2\n2 2 NaN\n",
                  J_ok, k_ok),
         CM_PARSE, dir, "M.mtx:4:", "not finite");
  expect(&ctx,
         read_set(&ctx, dir,
                  "%%MatrixMarket matrix coordinate real general\n"
                  "2 2 3\n1 1 2\n2 2 3\n1 2 1\n",
                  J_ok, k_ok),
         CM_INVALID_SCENE, dir, "M.mtx:5:", "not symmetric");
  expect(&ctx,
         read_set(&ctx, dir,
                  "%%MatrixMarket matrix coordinate real symmetric\n"
                  "2 2 1\n1 1 2\n",
                  J_ok, k_ok),
         CM_NOT_SPD, dir, "M.mtx:2:", "M(2,2) is missing");
  /* indefinite with a positive diagonal: M = [4 3; 3 1] fails at the
   * second pivot whatever the order; the line is that column's diagonal */
  int st = read_set(&ctx, dir,
                    "%%MatrixMarket matrix coordinate real symmetric\n"
                    "2 2 3\n1 1 4\n2 1 3\n2 2 1\n",
                    J_ok, k_ok);
  CMT_EQ_INT(st, CM_NOT_SPD);
  CMT_CONTAINS(ctx.message, "not positive definite");
  char l3[160], l5[160];
  snprintf(l3, sizeof l3,
           "%s/M.mtx:3: M is not positive definite: the "
           "Cholesky factorisation fails at column 1",
           dir);
  snprintf(l5, sizeof l5,
           "%s/M.mtx:5: M is not positive definite: the "
           "Cholesky factorisation fails at column 2",
           dir);
  CMT_TRUE(strstr(ctx.message, l3) || strstr(ctx.message, l5));
  /* J */
  expect(&ctx,
         read_set(&ctx, dir, M_ok,
                  "%%MatrixMarket matrix coordinate real general\n"
                  "3 4 1\n1 1 1\n",
                  k_ok),
         CM_INVALID_SCENE, dir, "J.mtx:2:", "but M (");
  expect(&ctx,
         read_set(&ctx, dir, M_ok,
                  "%%MatrixMarket matrix coordinate real general\n"
                  "3 2 3\n1 1 1\n2 3 1\n3 1 -1\n",
                  k_ok),
         CM_PARSE, dir, "J.mtx:4:", "outside the 3 x 2 matrix");
  expect(&ctx,
         read_set(&ctx, dir, M_ok,
                  "%%MatrixMarket matrix coordinate real general\n"
                  "3 2 3\n1 1 1\n2 2 inf\n3 1 -1\n",
                  k_ok),
         CM_PARSE, dir, "J.mtx:4:", "not finite");
  expect(&ctx,
         read_set(&ctx, dir, M_ok,
                  "%%MatrixMarket matrix coordinate real general\n"
                  "3 2 2\n1 1 1\n2 2 1\n3 1 -1\n",
                  k_ok),
         CM_PARSE, dir, "J.mtx:5:", "more entries than the 2 declared");
  expect(&ctx, read_set(&ctx, dir, M_ok, "hello\n", k_ok), CM_PARSE, dir,
         "J.mtx:1:", "not a Matrix Market file");
  /* k */
  expect(&ctx,
         read_set(&ctx, dir, M_ok, J_ok,
                  "%%MatrixMarket matrix array real general\n"
                  "2 1\n10\n20\n"),
         CM_INVALID_SCENE, dir, "k.mtx:2:", "J (");
  expect(&ctx,
         read_set(&ctx, dir, M_ok, J_ok,
                  "%%MatrixMarket matrix array real general\n"
                  "3 1\n10\n-20\n30\n"),
         CM_PARSE, dir, "k.mtx:4:", "k[2] = -20");
  expect(&ctx,
         read_set(&ctx, dir, M_ok, J_ok,
                  "%%MatrixMarket matrix coordinate real general\n"
                  "3 1 2\n1 1 10\n3 1 30\n"),
         CM_INVALID_SCENE, dir, "k.mtx:2:", "k[2] is missing");
  /* manifest */
  char pm[128];
  snprintf(pm, sizeof pm, "%s/bad.json", dir);
  cmt_write_text(pm, "{\"M\": \"M.mtx\", \"J\": \"J.mtx\", \"k\": \"k.mtx\", "
                     "\"K\": 1}");
  CMT_EQ_INT(cm_system_read_manifest(&ctx, pm, &(cm_system_t *){NULL}),
             CM_PARSE);
  CMT_CONTAINS(ctx.message, "unknown key \"K\"");
  cmt_write_text(pm, "{\"M\": \"M.mtx\", \"k\": \"k.mtx\"}");
  CMT_EQ_INT(cm_system_read_manifest(&ctx, pm, &(cm_system_t *){NULL}),
             CM_PARSE);
  CMT_CONTAINS(ctx.message, "\"J\" is missing");
  cmt_write_text(pm, "{\"M\": \"M.mtx\",\n \"J\": }");
  CMT_EQ_INT(cm_system_read_manifest(&ctx, pm, &(cm_system_t *){NULL}),
             CM_PARSE);
  CMT_CONTAINS(ctx.message, "bad.json:2:");
  /* a good manifest with relative paths (written by read_set above) */
  read_set(&ctx, dir, M_ok, J_ok, k_ok);
  cmt_write_text(pm, "{\"M\": \"M.mtx\", \"J\": \"J.mtx\", \"k\": \"k.mtx\"}");
  cm_system_t *sys = NULL;
  CMT_EQ_INT(cm_system_read_manifest(&ctx, pm, &sys), CM_OK);
  if (sys) {
    CMT_EQ_INT(sys->n, 2);
    CMT_EQ_INT(sys->nc, 3);
    CMT_REL(sys->k[sys->contact_row[2]], 30, 0); /* input row 2 */
  }
  cm_system_destroy(&sys);
  remove_export(dir);
}

/* ---- command line
 * ------------------------------------------------------------------ */

CM_TEST(import_cli) {
  if (!have_liggghts("import_cli"))
    return;
  char dir[64], cmd[1024], p[128];
  if (!cmt_tmpdir(dir, sizeof dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  snprintf(p, sizeof p, "%s/bed.json", dir);
  snprintf(cmd, sizeof cmd,
           "%s import dump %s --density 2500 --young 5e6 --poisson 0.45 "
           "--wall-plane z=0 --wall-zcylinder 0.05 -o %s 2>&1",
           CM_BINARY, LIGGGHTS, p);
  int code = -1;
  char *out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  CMT_CONTAINS(out, "1800 particles");
  free(out);
  /* the CLI scene equals the library scene, bit for bit */
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_dump_options_t o;
  liggghts_options(&o);
  cm_scene_t *a = NULL, *b = NULL;
  CMT_EQ_INT(cm_import_dump(&ctx, LIGGGHTS, &o, &a), CM_OK);
  CMT_EQ_INT(cm_scene_read_file(&ctx, p, &b), CM_OK);
  if (a && b) {
    CMT_EQ_INT(b->nbodies, a->nbodies);
    CMT_EQ_INT(b->ncontacts, a->ncontacts);
    int same = b->ncontacts == a->ncontacts;
    for (int i = 0; same && i < a->ncontacts; i++)
      same = a->contacts[i].stiffness == b->contacts[i].stiffness &&
             a->contacts[i].a == b->contacts[i].a &&
             a->contacts[i].b == b->contacts[i].b &&
             fabs(a->contacts[i].normal[0] - b->contacts[i].normal[0]) +
                     fabs(a->contacts[i].normal[1] - b->contacts[i].normal[1]) +
                     fabs(a->contacts[i].normal[2] - b->contacts[i].normal[2]) <
                 1e-15; /* re-normalised on reading */
    CMT_TRUE(same);
  }
  cm_scene_destroy(&a);
  cm_scene_destroy(&b);
  /* export + analyze --matrices equals analyze on the scene */
  snprintf(cmd, sizeof cmd,
           "%s export %s --matrices %s 2>&1 && %s analyze --json --no-timings "
           "%s | grep -o '\"omega_max\": *[0-9.e+-]*' | head -1 && %s analyze "
           "--json --no-timings --matrices %s/manifest.json | grep -o "
           "'\"omega_max\": *[0-9.e+-]*' | head -1",
           CM_BINARY, CM_SOURCE_DIR "/data/bar2d.json", dir, CM_BINARY,
           CM_SOURCE_DIR "/data/bar2d.json", CM_BINARY, dir);
  out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, 0);
  double w1 = 0, w2 = 0;
  const char *q1 = out ? strstr(out, "\"omega_max\"") : NULL;
  const char *q2 = q1 ? strstr(q1 + 1, "\"omega_max\"") : NULL;
  if (q1 && q2) {
    w1 = strtod(strchr(q1, ':') + 1, NULL);
    w2 = strtod(strchr(q2, ':') + 1, NULL);
  }
  CMT_REL(w1, sqrt(2 * 1e5 * 0.01 / 0.005), 1e-9);
  CMT_REL(w2, w1, 1e-12);
  free(out);
  /* a bad dump: exit code 3, message with file and line */
  snprintf(p, sizeof p, "%s/bad.mtx", dir);
  cmt_write_text(p, "ITEM: TIMESTEP\n1\nITEM: NUMBER OF ATOMS\n1\n"
                    "ITEM: ATOMS id x y z\n1 0 0 0\n");
  snprintf(cmd, sizeof cmd, "%s import dump %s --k 1 --density 1 2>&1",
           CM_BINARY, p);
  out = cmt_run(cmd, &code);
  CMT_EQ_INT(code, cm_status_exit(CM_PARSE));
  char where[256];
  snprintf(where, sizeof where, "%s:5: no radius", p);
  CMT_CONTAINS(out, where);
  free(out);
  remove_export(dir);
}
