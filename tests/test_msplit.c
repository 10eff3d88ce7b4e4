/* test_msplit.c: matrix systems (M, J, k given as matrices) split into
 * components, against dense LAPACK done here: a block-diagonal system of
 * identical and different blocks, its dofs and rows randomly permuted, is
 * built block by block; each block's S = K^1/2 J M^-1 J^T K^1/2 by dposv
 * and its spectrum by dsyev give each component's omega, and the dense
 * solve of the whole (unsplit) system gives omega_max. Both the general
 * path (dense SPD blocks of M) and the block path (M of 3 x 3 blocks,
 * components joined by rows of J) are checked, with the tie list, the
 * names, the same bits at 1 and 2 threads, and the errors of a row that
 * touches no dof and of a dropped part of M that is not positive
 * definite. Not for the scene path's ties (test_ties.c). */
#include "cmodes.h"
#include "cmtest.h"

#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* deterministic numbers in [0, 1) */
static double ms_rand(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) / 9007199254740992.0;
}

typedef struct {
  int n, m;      /* dofs, rows */
  double *M, *J; /* dense n x n (row-major), m x n */
  double *k;     /* m */
  double top;    /* lambda_max of its S, dense */
} ms_block_t;

/* Largest eigenvalue of K^1/2 J M^-1 J^T K^1/2 (cmt_dense_S, dsyev). */
static double ms_dense_top(int n, int m, const double *M, const double *J,
                           const double *k) {
  double *S = cmt_dense_S(n, m, M, J, k);
  double *w = malloc(sizeof(double) * (size_t)m);
  double top = NAN; /* cmt_dense_S failed (a failure already) */
  if (S && w) {
    CMT_EQ_INT(LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'N', 'U', m, S, m, w), 0);
    top = w[m - 1];
  }
  free(S), free(w);
  return top;
}

/* A block of type t: general path (blk3 0): a dense SPD M of n dofs; block
 * path (blk3 1): M of 3 x 3 SPD blocks, every row joining two of them so
 * that the type is one component. Rows: random J, k. */
static void ms_block_make(ms_block_t *b, int n, int m, int blk3,
                          uint64_t seed) {
  uint64_t s = seed;
  b->n = n, b->m = m;
  b->M = calloc((size_t)n * n, sizeof(double));
  b->J = calloc((size_t)m * n, sizeof(double));
  b->k = malloc(sizeof(double) * (size_t)m);
  for (int i = 0; i < n; i++) /* M = G G^T + n I on the pattern */
    for (int j = 0; j < n; j++) {
      if (blk3 && i / 3 != j / 3)
        continue;
      double v = 0;
      for (int t = 0; t < 3; t++) {
        uint64_t a = seed * 131 + (uint64_t)(i * n + t),
                 c = seed * 131 + (uint64_t)(j * n + t);
        v += ms_rand(&a) * ms_rand(&c);
      }
      b->M[(size_t)i * n + j] = v + (i == j ? 1.0 + 0.1 * i : 0);
    }
  for (int i = 0; i < n; i++) /* exactly symmetric */
    for (int j = 0; j < i; j++)
      b->M[(size_t)i * n + j] = b->M[(size_t)j * n + i];
  for (int r = 0; r < m; r++) {
    b->k[r] = 1e4 * (1 + ms_rand(&s));
    if (!blk3) {
      for (int i = 0; i < n; i++)
        if (ms_rand(&s) < 0.5 || i == r % n)
          b->J[(size_t)r * n + i] = ms_rand(&s) - 0.5;
    } else { /* rows join blocks r % nb and (r + 1) % nb */
      int nb = n / 3, p = r % nb, q = (r + 1) % nb;
      for (int t = 0; t < 3; t++) {
        b->J[(size_t)r * n + 3 * p + t] = ms_rand(&s) - 0.5;
        b->J[(size_t)r * n + 3 * q + t] += ms_rand(&s) - 0.5;
      }
    }
  }
  b->top = ms_dense_top(n, m, b->M, b->J, b->k);
}

static void ms_block_free(ms_block_t *b) { free(b->M), free(b->J), free(b->k); }

/* A random permutation of 0..n-1. */
static int *ms_perm(int n, uint64_t *s) {
  int *p = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++)
    p[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(ms_rand(s) * (i + 1)), t = p[i];
    p[i] = p[j], p[j] = t;
  }
  return p;
}

#define MS_NB 7 /* blocks: 3 of type A, 2 of B, 1 of C, 1 untouched */

typedef struct {
  int n, nc;
  int *Mp, *Mi, *Jp, *Jj;
  double *Mx, *Jx, *k;
  double *Md, *Jd; /* the whole system, dense (permuted order) */
  int *dof_block;  /* block of each input dof (-1: untouched part) */
  int *row_block;  /* block of each input row */
  char **rnames, **cnames;
  double top[MS_NB];
} ms_system_t;

/* The system of the blocks, in the permuted order: input dof pd[j] is
 * block-order dof j, input row pr[r] is block-order row r. The last block
 * type has rows = 0: a part of M that no row touches. */
static void ms_system_make(ms_system_t *S, int blk3, uint64_t seed) {
  /* types: A (top frequency: stiffer), B, C */
  int tn[3] = {blk3 ? 9 : 8, blk3 ? 6 : 9, blk3 ? 12 : 7};
  int tm[3] = {5, 4, 6};
  int type[MS_NB] = {0, 1, 0, 2, 1, 0, -1};
  ms_block_t t[3];
  for (int i = 0; i < 3; i++)
    ms_block_make(&t[i], tn[i], tm[i], blk3, seed + (uint64_t)i * 7919);
  for (int i = 0; i < t[0].m; i++) /* A sets the step */
    t[0].k[i] *= 20;
  t[0].top = ms_dense_top(t[0].n, t[0].m, t[0].M, t[0].J, t[0].k);
  int n = 0, nc = 0, off[MS_NB + 1], roff[MS_NB + 1];
  for (int b = 0; b < MS_NB; b++) {
    off[b] = n, roff[b] = nc;
    n += type[b] >= 0 ? tn[type[b]] : 3;
    nc += type[b] >= 0 ? tm[type[b]] : 0;
  }
  off[MS_NB] = n, roff[MS_NB] = nc;
  uint64_t s = seed ^ 0x9e3779b97f4a7c15ULL;
  int *pd = ms_perm(n, &s), *pr = ms_perm(nc, &s);
  S->n = n, S->nc = nc;
  S->Md = calloc((size_t)n * n, sizeof(double));
  S->Jd = calloc((size_t)nc * n, sizeof(double));
  S->k = malloc(sizeof(double) * (size_t)nc);
  S->dof_block = malloc(sizeof(int) * (size_t)n);
  S->row_block = malloc(sizeof(int) * (size_t)nc);
  S->rnames = calloc((size_t)nc, sizeof(char *));
  S->cnames = calloc((size_t)n, sizeof(char *));
  for (int b = 0; b < MS_NB; b++) {
    const ms_block_t *tb = type[b] >= 0 ? &t[type[b]] : NULL;
    int bn = off[b + 1] - off[b];
    char tag = type[b] >= 0 ? (char)('A' + type[b]) : 'U';
    S->top[b] = tb ? tb->top : 0;
    for (int i = 0; i < bn; i++) {
      int gi = pd[off[b] + i];
      S->dof_block[gi] = tb ? b : -1;
      char nm[32];
      snprintf(nm, sizeof nm, "%c%d.q%d", tag, b, i);
      S->cnames[gi] = strdup(nm);
      for (int j = 0; j < bn; j++) {
        int gj = pd[off[b] + j];
        S->Md[(size_t)gi * n + gj] =
            tb ? tb->M[(size_t)i * bn + j] : (i == j ? 2.0 : 0.5);
      }
    }
    for (int r = 0; tb && r < tb->m; r++) {
      int gr = pr[roff[b] + r];
      S->row_block[gr] = b;
      S->k[gr] = tb->k[r];
      char nm[32];
      snprintf(nm, sizeof nm, "%c%d.c%d", tag, b, r);
      S->rnames[gr] = strdup(nm);
      for (int i = 0; i < bn; i++)
        S->Jd[(size_t)gr * n + pd[off[b] + i]] = tb->J[(size_t)r * bn + i];
    }
  }
  /* compressed: M's lower triangle in CSC, J in CSR (nonzeros only) */
  S->Mp = calloc((size_t)n + 1, sizeof(int));
  S->Mi = malloc(sizeof(int) * (size_t)n * n);
  S->Mx = malloc(sizeof(double) * (size_t)n * n);
  for (int j = 0, q = 0; j < n; j++) {
    for (int i = j; i < n; i++)
      if (S->Md[(size_t)i * n + j] != 0)
        S->Mi[q] = i, S->Mx[q++] = S->Md[(size_t)i * n + j];
    S->Mp[j + 1] = q;
  }
  S->Jp = calloc((size_t)nc + 1, sizeof(int));
  S->Jj = malloc(sizeof(int) * (size_t)nc * n);
  S->Jx = malloc(sizeof(double) * (size_t)nc * n);
  for (int r = 0, q = 0; r < nc; r++) {
    for (int j = 0; j < n; j++)
      if (S->Jd[(size_t)r * n + j] != 0)
        S->Jj[q] = j, S->Jx[q++] = S->Jd[(size_t)r * n + j];
    S->Jp[r + 1] = q;
  }
  for (int i = 0; i < 3; i++)
    ms_block_free(&t[i]);
  free(pd), free(pr);
}

static void ms_system_free(ms_system_t *S) {
  for (int i = 0; i < S->nc; i++)
    free(S->rnames[i]);
  for (int i = 0; i < S->n; i++)
    free(S->cnames[i]);
  free(S->rnames), free(S->cnames);
  free(S->Mp), free(S->Mi), free(S->Mx), free(S->Jp), free(S->Jj), free(S->Jx);
  free(S->k), free(S->Md), free(S->Jd), free(S->dof_block), free(S->row_block);
}

/* The dense truth of a mode's dof participations: the top eigenvector phi
 * of J_b^T K J_b phi = lambda M_b phi (dsygv) over block b's dofs,
 * phi^T M phi = 1; share[d] = phi_d (M phi)_d for input dof d (0 off the
 * block). */
static void ms_dense_dofs(const ms_system_t *S, int b, double *share) {
  int n = S->n, nb = 0, *d = malloc(sizeof(int) * (size_t)n);
  for (int j = 0; j < n; j++)
    if (S->dof_block[j] == b)
      d[nb++] = j;
  double *A = calloc((size_t)nb * nb, sizeof(double));
  double *B = malloc(sizeof(double) * (size_t)nb * nb);
  double *w = malloc(sizeof(double) * (size_t)nb);
  for (int i = 0; i < nb; i++)
    for (int j = 0; j < nb; j++) {
      B[(size_t)i * nb + j] = S->Md[(size_t)d[i] * n + d[j]];
      for (int r = 0; r < S->nc; r++)
        A[(size_t)i * nb + j] +=
            S->k[r] * S->Jd[(size_t)r * n + d[i]] * S->Jd[(size_t)r * n + d[j]];
    }
  CMT_EQ_INT(LAPACKE_dsygv(LAPACK_ROW_MAJOR, 1, 'V', 'U', nb, A, nb, B, nb, w),
             0);
  for (int j = 0; j < n; j++)
    share[j] = 0;
  for (int i = 0; i < nb; i++) { /* column nb-1 of A: phi, phi^T M phi = 1 */
    double mp = 0;
    for (int j = 0; j < nb; j++)
      mp += S->Md[(size_t)d[i] * n + d[j]] * A[(size_t)j * nb + nb - 1];
    share[d[i]] = A[(size_t)i * nb + nb - 1] * mp;
  }
  free(d), free(A), free(B), free(w);
}

static cm_report_t *ms_analyze(cm_context_t *ctx, const cm_system_t *sys,
                               int threads) {
  cm_options_t o;
  cm_options_init(&o);
  o.top_components = 10;
  o.top_bodies = 1000; /* every dof of a mode's component */
  o.modes = 6;
  ctx->threads = threads;
  cm_report_t *r = NULL;
  CMT_EQ_INT(cm_analyze_system(ctx, sys, NULL, &o, &r), CM_OK);
  return r;
}

static void ms_check(int blk3) {
  ms_system_t S;
  ms_system_make(&S, blk3, blk3 ? 77 : 11);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL;
  CMT_EQ_INT(cm_system_from_matrices(&ctx, S.n, S.nc, S.Mp, S.Mi, S.Mx, S.Jp,
                                     S.Jj, S.Jx, S.k, &sys),
             CM_OK);
  if (!sys) {
    ms_system_free(&S);
    return;
  }
  CMT_EQ_INT(cm_system_set_names(&ctx, sys, (const char *const *)S.rnames,
                                 (const char *const *)S.cnames),
             CM_OK);
  CMT_EQ_INT(sys->block, blk3);
  CMT_EQ_INT(sys->ncomp, 6);
  CMT_EQ_INT(sys->ndofs, S.n);
  CMT_EQ_INT(sys->dropped_dofs, 3); /* the untouched 3 x 3 part */
  /* the unsplit dense solve: the whole system, dropped part included */
  double whole = ms_dense_top(S.n, S.nc, S.Md, S.Jd, S.k);
  cm_report_t *r1 = ms_analyze(&ctx, sys, 1);
  cm_report_t *r2 = ms_analyze(&ctx, sys, 2);
  if (!r1 || !r2) {
    cm_report_destroy(&r1), cm_report_destroy(&r2);
    cm_system_destroy(&sys);
    ms_system_free(&S);
    return;
  }
  CMT_REL(r1->omega_max, sqrt(whole), 1e-12);
  CMT_EQ_INT(r1->ncomp, 6);
  CMT_EQ_INT(r1->ncomp_listed, 6);
  for (int i = 0; i < r1->ncomp_listed; i++) {
    const cm_component_t *ci = &r1->components[i];
    /* the component's block, from its first row's input row */
    int b = S.row_block[sys->row_contact[sys->comp_row[ci->index]]];
    CMT_REL(ci->omega_max, sqrt(S.top[b]), 1e-12);
    for (int r = sys->comp_row[ci->index]; r < sys->comp_row[ci->index + 1];
         r++)
      CMT_EQ_INT(S.row_block[sys->row_contact[r]], b);
    for (int j = sys->comp_col[ci->index]; j < sys->comp_col[ci->index + 1];
         j++)
      CMT_EQ_INT(S.dof_block[sys->col_dof[j]], b);
    /* same bits at 2 threads */
    CMT_TRUE(
        !memcmp(&ci->omega_max, &r2->components[i].omega_max, sizeof(double)));
    CMT_EQ_INT(ci->index, r2->components[i].index);
  }
  CMT_TRUE(!memcmp(&r1->omega_max, &r2->omega_max, sizeof(double)));
  /* ties: the three copies of A (blocks 0, 2, 5), named A0, A2, A5 */
  CMT_EQ_INT(r1->nties, 3);
  CMT_EQ_INT(r1->nties_listed, 3);
  int seen = 0;
  for (int i = 0; i < r1->nties_listed; i++) {
    int c = r1->ties[i];
    int b = S.row_block[sys->row_contact[sys->comp_row[c]]];
    CMT_TRUE(b == 0 || b == 2 || b == 5);
    seen |= 1 << b;
    char want[8];
    snprintf(want, sizeof want, "A%d", b);
    CMT_TRUE(r1->tie_names[i] && !strcmp(r1->tie_names[i], want));
    CMT_EQ_INT(r1->ties[i], r2->ties[i]);
  }
  CMT_EQ_INT(seen, 1 << 0 | 1 << 2 | 1 << 5);
  /* the top mode's contacts are an A block's rows, named by row_names */
  const cm_mode_t *md = &r1->modes[0];
  CMT_TRUE(md->ncontacts > 0);
  for (int i = 0; i < md->ncontacts; i++) {
    int row = md->contacts[i].index; /* input row */
    CMT_TRUE(md->contacts[i].name &&
             !strcmp(md->contacts[i].name, S.rnames[row]));
    CMT_TRUE(md->contacts[i].name && md->contacts[i].name[0] == 'A');
  }
  /* the top mode's dofs: every dof of its component, named by col_names,
   * with the participations of the dense generalized eigenvector */
  int mb = S.row_block[sys->row_contact[sys->comp_row[md->component]]];
  double *share = malloc(sizeof(double) * (size_t)S.n), sum = 0;
  ms_dense_dofs(&S, mb, share);
  int nbd = 0;
  for (int j = 0; j < S.n; j++)
    nbd += S.dof_block[j] == mb;
  CMT_EQ_INT(md->ndofs, nbd);
  for (int i = 0; i < md->ndofs; i++) {
    int dof = md->dofs[i].index;
    CMT_EQ_INT(S.dof_block[dof], mb);
    CMT_TRUE(md->dofs[i].name && !strcmp(md->dofs[i].name, S.cnames[dof]));
    CMT_TRUE(fabs(md->dofs[i].share - share[dof]) <= 1e-10);
    if (i > 0)
      CMT_LE(md->dofs[i].share, md->dofs[i - 1].share);
    sum += md->dofs[i].share;
  }
  CMT_REL(sum, 1.0, 1e-12);
  free(share);
  /* the text report lists the ties by name */
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cm_report_write_text(r1, f);
  fclose(f);
  CMT_CONTAINS(buf, "components 6; 3 tie at the top frequency");
  free(buf);
  cm_report_destroy(&r1), cm_report_destroy(&r2);
  cm_system_destroy(&sys);
  ms_system_free(&S);
}

/* General M: dense SPD blocks (one CHOLMOD factor per component). */
CM_TEST(msplit_general_blocks_dense_truth) { ms_check(0); }

/* Block path: M of 3 x 3 blocks, components joined by J's rows. */
CM_TEST(msplit_block_path_dense_truth) { ms_check(1); }

/* Errors: a row of J with no nonzero; a part of M that no row reaches
 * and that is not positive definite. */
CM_TEST(msplit_errors) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  /* M = diag(2, 2, 1) with (2, 1) = 3: the dofs 1, 2 are indefinite */
  int Mp[4] = {0, 1, 3, 4}, Mi[4] = {0, 1, 2, 2};
  double Mx[4] = {2, 2, 3, 1};
  int Jp[3] = {0, 1, 2}, Jj[2] = {0, 1};
  double Jx[2] = {1, 0}, k[2] = {10, 10};
  cm_system_t *sys = NULL;
  CMT_EQ_INT(
      cm_system_from_matrices(&ctx, 3, 2, Mp, Mi, Mx, Jp, Jj, Jx, k, &sys),
      CM_INVALID_SCENE);
  CMT_CONTAINS(ctx.message, "J: row 1 has no nonzero entry");
  /* one row on dof 0: dofs 1 and 2 (coupled by M) are dropped, and their
   * block is not positive definite */
  CMT_EQ_INT(
      cm_system_from_matrices(&ctx, 3, 1, Mp, Mi, Mx, Jp, Jj, Jx, k, &sys),
      CM_NOT_SPD);
  CMT_CONTAINS(ctx.message, "M: not positive definite");
  CMT_TRUE(!sys);
  /* the same with M's (2, 1) = 0.5: fine, dofs 1 and 2 dropped */
  Mx[2] = 0.5;
  CMT_EQ_INT(
      cm_system_from_matrices(&ctx, 3, 1, Mp, Mi, Mx, Jp, Jj, Jx, k, &sys),
      CM_OK);
  if (sys) {
    CMT_EQ_INT(sys->n, 1);
    CMT_EQ_INT(sys->dropped_dofs, 2);
    cm_report_t *r = NULL;
    CMT_EQ_INT(cm_analyze_system(&ctx, sys, NULL, NULL, &r), CM_OK);
    if (r)
      CMT_REL(r->omega_max, sqrt(10.0 / 2.0), 1e-14);
    cm_report_destroy(&r);
  }
  cm_system_destroy(&sys);
}

/* The fleet (data/fleet.json) exported as matrices with `cmodes export`
 * and read back: the same tied robots, by name, and the same omega_max as
 * the scene, whose ties test_ties.c checks against dense LAPACK per
 * robot. */
CM_TEST(msplit_fleet_as_matrices) {
  char dir[] = "/tmp/cmodes-msplit-XXXXXX", cmd[512], man[128];
  if (!mkdtemp(dir)) {
    CMT_FAIL("mkdtemp");
    return;
  }
  snprintf(cmd, sizeof cmd,
           "%s export %s/data/fleet.json --matrices %s/m "
           ">/dev/null 2>&1",
           CM_BINARY, CM_SOURCE_DIR, dir);
  CMT_EQ_INT(system(cmd), 0);
  snprintf(man, sizeof man, "%s/m/manifest.json", dir);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = NULL;
  cm_system_t *sys = NULL;
  cm_report_t *rs = NULL, *rm = NULL;
  CMT_EQ_INT(cm_scene_read_file(&ctx, CM_SOURCE_DIR "/data/fleet.json", &s),
             CM_OK);
  if (s)
    CMT_EQ_INT(cm_analyze(&ctx, s, NULL, &rs), CM_OK);
  CMT_EQ_INT(cm_system_read_manifest(&ctx, man, &sys), CM_OK);
  if (sys)
    CMT_EQ_INT(cm_analyze_system(&ctx, sys, NULL, NULL, &rm), CM_OK);
  if (rs && rm) {
    CMT_REL(rm->omega_max, rs->omega_max, 1e-12);
    CMT_EQ_INT(rs->nties, 7);
    CMT_EQ_INT(rm->nties, rs->nties);
    for (int i = 0; i < rs->nties_listed; i++) { /* the same set of names */
      int found = 0;
      for (int j = 0; j < rm->nties_listed; j++)
        found += rm->tie_names[j] && rs->tie_names[i] &&
                 !strcmp(rm->tie_names[j], rs->tie_names[i]);
      CMT_EQ_INT(found, 1);
    }
    /* the top mode's rows and dofs are the tied robot's, by name */
    const cm_mode_t *md = &rm->modes[0];
    CMT_TRUE(md->ncontacts > 0 && md->ndofs > 0);
    char head[16];
    snprintf(head, sizeof head, "%s.",
             md->dofs[0].name ? md->dofs[0].name : "?");
    char *dot = strchr(head, '.');
    if (dot)
      dot[1] = 0;
    for (int i = 0; i < md->ncontacts; i++)
      CMT_TRUE(md->contacts[i].name &&
               !strncmp(md->contacts[i].name, head, strlen(head)));
  }
  cm_report_destroy(&rs), cm_report_destroy(&rm);
  cm_system_destroy(&sys);
  cm_scene_destroy(&s);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CMT_EQ_INT(system(cmd), 0);
}
