/* test_workspace.c: buffers kept between analyses (cm_workspace_keep, issue
 * 19 goal 4). A report made with buffers taken from an earlier analysis of
 * another scene (so they hold that scene's values) is the same JSON text
 * as the one made with fresh buffers, at another thread count; the
 * buffers were really taken; the cap is honoured and 0 releases them.
 * Without a cap set, an analysis reuses its own freed buffers and keeps
 * none after it returns. */
#include "cmodes.h"
#include "cmtest.h"
#include "internal.h"

#include <string.h>

static cm_scene_t *cm__ws_pile(cm_context_t *ctx, int count, unsigned seed) {
  cm_pile_options_t po;
  cm_pile_options_init(&po);
  po.dim = 3, po.count = count, po.seed = seed;
  cm_scene_t *s = NULL;
  return cm_generate_pile(ctx, &po, &s) ? NULL : s;
}

static char *cm__ws_report(cm_context_t *ctx, const cm_scene_t *s, int modes,
                           int threads) {
  cm_options_t o;
  cm_options_init(&o);
  o.modes = modes, o.tol = 1e-8;
  ctx->threads = threads;
  return cmt_report_json(ctx, s, &o);
}

CM_TEST(workspace_same_bits) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  /* about 24 000 and 27 000 contacts: the basis and B's arrays are past the
   * 1 MiB below which nothing is kept, and the solver is Lanczos */
  cm_scene_t *a = cm__ws_pile(&ctx, 8000, 3), *b = cm__ws_pile(&ctx, 9000, 5);
  CMT_TRUE(a && b);
  CMT_TRUE(a && a->ncontacts > 20000);
  CMT_EQ_INT(cm_workspace_kept(), 0);
  for (int modes = 1; a && b && modes <= 6; modes += 5) {
    char *want = cm__ws_report(&ctx, a, modes, 1); /* fresh buffers */
    CMT_TRUE(want != NULL);
    CMT_EQ_INT(cm_workspace_keep((size_t)1 << 30), 0);
    char *other = cm__ws_report(&ctx, b, modes, 2);
    CMT_TRUE(cm_workspace_kept() > ((size_t)1 << 20));
    unsigned long taken = cm__ws_reused();
    char *got = cm__ws_report(&ctx, a, modes, 2); /* b's buffers */
    CMT_TRUE(cm__ws_reused() > taken);
    CMT_TRUE(want && got && !strcmp(want, got));
    if (want && got && strcmp(want, got))
      CMT_FAIL("modes %d: the report with kept buffers differs", modes);
    /* the cap: at most 2 MiB kept, then 0 releases everything */
    CMT_EQ_INT(cm_workspace_keep((size_t)2 << 20), (size_t)1 << 30);
    CMT_LE((double)cm_workspace_kept(), 2.0 * 1048576);
    free(got);
    got = cm__ws_report(&ctx, a, modes, 1);
    CMT_LE((double)cm_workspace_kept(), 2.0 * 1048576);
    CMT_TRUE(want && got && !strcmp(want, got));
    CMT_EQ_INT(cm_workspace_keep(0), (size_t)2 << 20);
    CMT_EQ_INT(cm_workspace_kept(), 0);
    free(want), free(other), free(got);
  }
  cm_scene_destroy(&a);
  cm_scene_destroy(&b);
}

/* An assembled system's arrays come from the pool and go back to it: an
 * assembly on buffers that hold another scene's system (garbage for this
 * one) gives the arrays of an assembly on fresh memory, bit for bit. */
static int cm__ws_same(const void *a, const void *b, size_t n) {
  return (!a && !b) || (a && b && !memcmp(a, b, n));
}

CM_TEST(workspace_assembly_same_arrays) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *a = cm__ws_pile(&ctx, 9000, 5), *b = cm__ws_pile(&ctx, 8000, 3);
  CMT_TRUE(a && b);
  for (int i = 0; b && i < b->ncontacts; i += 4) /* tangent rows too */
    b->contacts[i].stiffness_t = 0.4 * b->contacts[i].stiffness;
  cm_system_t *want = NULL, *other = NULL, *got = NULL;
  CMT_EQ_INT(cm_workspace_kept(), 0);
  ctx.threads = 1;
  CMT_EQ_INT(a && b ? cm_system_assemble(&ctx, b, &want) : -1, 0);
  CMT_EQ_INT(cm_workspace_keep((size_t)1 << 30), 0);
  ctx.threads = 2;
  CMT_EQ_INT(a && b ? cm_system_assemble(&ctx, a, &other) : -1, 0);
  cm_system_destroy(&other); /* its arrays kept, holding a's system */
  CMT_TRUE(cm_workspace_kept() > ((size_t)1 << 20));
  unsigned long taken = cm__ws_reused();
  CMT_EQ_INT(a && b ? cm_system_assemble(&ctx, b, &got) : -1, 0);
  CMT_TRUE(cm__ws_reused() > taken);
  if (want && got) {
    const cm_system_t *w = want, *g = got;
    size_t nc = (size_t)w->nc, n = (size_t)w->n, nnz = (size_t)w->Jp[w->nc];
    CMT_TRUE(g->nc == w->nc && g->n == w->n && g->ncomp == w->ncomp &&
             g->Jp[g->nc] == w->Jp[w->nc] && g->Mp[g->n] == w->Mp[w->n]);
    size_t mnz = (size_t)w->Mp[w->n], nb = (size_t)w->nbodies;
    int same = cm__ws_same(w->Jp, g->Jp, (nc + 1) * sizeof(int)) &&
               cm__ws_same(w->Jj, g->Jj, nnz * sizeof(int)) &&
               cm__ws_same(w->Jx, g->Jx, nnz * sizeof(double)) &&
               cm__ws_same(w->k, g->k, nc * sizeof(double)) &&
               cm__ws_same(w->Mp, g->Mp, (n + 1) * sizeof(int)) &&
               cm__ws_same(w->Mi, g->Mi, mnz * sizeof(int)) &&
               cm__ws_same(w->Mx, g->Mx, mnz * sizeof(double)) &&
               cm__ws_same(w->row_contact, g->row_contact, nc * sizeof(int)) &&
               cm__ws_same(w->contact_row, g->contact_row,
                           (size_t)w->ncontacts * sizeof(int)) &&
               cm__ws_same(w->row_kind, g->row_kind, nc) &&
               cm__ws_same(w->row_a, g->row_a, nc * sizeof(int)) &&
               cm__ws_same(w->row_b, g->row_b, nc * sizeof(int)) &&
               cm__ws_same(w->col_body, g->col_body, n * sizeof(int)) &&
               cm__ws_same(w->col_dof, g->col_dof, n * sizeof(int)) &&
               cm__ws_same(w->comp_row, g->comp_row,
                           ((size_t)w->ncomp + 1) * sizeof(int)) &&
               cm__ws_same(w->comp_col, g->comp_col,
                           ((size_t)w->ncomp + 1) * sizeof(int)) &&
               cm__ws_same(w->body_comp, g->body_comp, nb * sizeof(int));
    CMT_TRUE(same);
    CMT_TRUE(w->tangential && g->pooled && w->pooled);
  }
  cm_system_destroy(&want);
  cm_system_destroy(&got);
  CMT_EQ_INT(cm_workspace_keep(0), (size_t)1 << 30);
  CMT_EQ_INT(cm_workspace_kept(), 0);
  cm_scene_destroy(&a);
  cm_scene_destroy(&b);
}

/* Until the process sets a cap, an analysis keeps what it frees for its
 * own later requests (the solve's basis the search's) and frees it all
 * when it returns: buffers are taken within it, none is kept after, and the
 * report is the same text as with the cap set to 0 (nothing kept, nothing
 * taken), at another thread count. */
CM_TEST(workspace_analysis_scope) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm__ws_unset(); /* as in a new process: no cap set */
  cm_scene_t *a = cm__ws_pile(&ctx, 8000, 3);
  CMT_TRUE(a != NULL);
  for (int modes = 1; a && modes <= 6; modes += 5) {
    unsigned long t0 = cm__ws_reused();
    char *got = cm__ws_report(&ctx, a, modes, 2);
    if (modes > 1) /* the search's basis takes the solve's */
      CMT_TRUE(cm__ws_reused() > t0);
    CMT_EQ_INT(cm_workspace_kept(), 0);  /* and nothing kept after it */
    CMT_EQ_INT(cm_workspace_keep(0), 0); /* set: nothing kept */
    unsigned long t1 = cm__ws_reused();
    char *want = cm__ws_report(&ctx, a, modes, 1);
    CMT_EQ_INT(cm__ws_reused(), t1);
    CMT_EQ_INT(cm_workspace_kept(), 0);
    CMT_TRUE(want && got && !strcmp(want, got));
    if (want && got && strcmp(want, got))
      CMT_FAIL("modes %d: the report with the analysis's own buffers differs",
               modes);
    free(want), free(got);
    cm__ws_unset();
  }
  cm_scene_destroy(&a);
}

/* Empty arrays (a scene without contacts in a component, an MPI rank's
 * empty part) are buffers too, not an out-of-memory error. */
CM_TEST(workspace_empty_buffers) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  void *p = cm__ws_malloc(&ctx, 0, 8), *q = cm__ws_calloc(&ctx, 5, 0);
  CMT_TRUE(p && q && ctx.status == CM_OK);
  cm__ws_free(p), cm__ws_free(q);
  CMT_TRUE(cm__ws_malloc(&ctx, SIZE_MAX / 2, 4) == NULL);
  CMT_EQ_INT(ctx.status, CM_NOMEM);
}

/* Past the cap, a buffer given back evicts older buffers no larger than
 * itself, never a larger one: a small buffer that does not fit is freed
 * and the large one stays; a large one evicts the small ones. */
CM_TEST(workspace_keeps_the_larger) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  size_t mib = (size_t)1 << 20;
  CMT_EQ_INT(cm_workspace_keep(40 * mib), 0);
  char *big = cm__ws_malloc(&ctx, 30 * mib, 1);
  char *s1 = cm__ws_malloc(&ctx, 20 * mib, 1), *s2 = NULL;
  CMT_TRUE(big && s1);
  cm__ws_free(big);
  CMT_EQ_INT(cm_workspace_kept(), 30 * mib);
  cm__ws_free(s1); /* 30 + 20 > 40: not kept, the 30 MiB one stays */
  CMT_EQ_INT(cm_workspace_kept(), 30 * mib);
  /* 3 MiB: more than 8x below 30, so both fresh; both kept (36) */
  s1 = cm__ws_malloc(&ctx, 3 * mib, 1), s2 = cm__ws_malloc(&ctx, 3 * mib, 1);
  CMT_EQ_INT(cm_workspace_kept(), 30 * mib);
  cm__ws_free(s1), cm__ws_free(s2);
  CMT_EQ_INT(cm_workspace_kept(), 36 * mib);
  big = cm__ws_malloc(&ctx, 30 * mib, 1); /* the kept one */
  CMT_EQ_INT(cm_workspace_kept(), 6 * mib);
  char *more = cm__ws_malloc(&ctx, 35 * mib, 1);
  CMT_TRUE(big && more);
  cm__ws_free(more); /* 6 + 35 > 40: the oldest 3 MiB one goes */
  CMT_EQ_INT(cm_workspace_kept(), 38 * mib);
  cm__ws_free(big); /* no room from buffers no larger than 30: not kept */
  CMT_EQ_INT(cm_workspace_kept(), 38 * mib);
  CMT_EQ_INT(cm_workspace_keep(0), 40 * mib);
  CMT_EQ_INT(cm_workspace_kept(), 0);
}

/* Among kept buffers that hold a request, the one written up to it is
 * taken (no fresh pages), and of several, the least written; when none is,
 * the most written. Two 16 MiB buffers, one written only in its first
 * 2 MiB (a step's basis in a 6-mode analysis's buffer size), the other
 * whole: a 16 MiB request takes the whole one (the smallest-first rule
 * took the older, half-written one); a 2 MiB request then takes the
 * partly written one and leaves nothing fresh. */
CM_TEST(workspace_takes_the_written) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  size_t mib = (size_t)1 << 20;
  cm_workspace_keep(64 * mib);
  char *part = cm__ws_malloc(&ctx, 16 * mib, 1);
  char *whole = cm__ws_malloc(&ctx, 16 * mib, 1);
  CMT_TRUE(part && whole);
  if (part && whole) {
    memset(part, 1, 2 * mib);
    memset(whole, 2, 16 * mib);
    cm__ws_free(part); /* the older: the first a tie would take */
    cm__ws_free(whole);
    CMT_EQ_INT(cm_workspace_kept(), 32 * mib);
    char *a = cm__ws_malloc(&ctx, 16 * mib, 1);
#ifdef __linux__ /* where mincore tells what is written */
    CMT_TRUE(a == whole);
#endif
    char *b = cm__ws_malloc(&ctx, 2 * mib, 1);
    CMT_TRUE(a && b && a != b);
    cm__ws_free(a), cm__ws_free(b);
  }
  cm_workspace_keep(0);
  CMT_EQ_INT(cm_workspace_kept(), 0);
}

/* Huge pages for large buffers (core/util.c): the measured choice has
 * finite, positive costs; a buffer of 16 MiB or more has its first 2 MiB
 * block timed, its contents kept (a calloc'ed one stays zero); and a
 * report made with huge pages asked for is the same JSON text as one made
 * without. */
CM_TEST(huge_pages_same_bits) {
  double s4k = NAN, s2m = NAN;
  int live0 = cm__huge_pages_live(NULL);
  int on = cm__huge_pages_choice(&s4k, &s2m);
  if (cm__huge_pages_env() < 0) { /* measured, not set */
#ifdef __linux__
    CMT_TRUE(s4k > 0 && s4k < 1e3 && s2m > 0 && s2m < 1e3);
    if (cm__huge_pages_live(NULL) == 0) /* no buffer of the process has
                                           moved it (nor the tests before
                                           this one in the same process) */
      CMT_EQ_INT(on, s2m < 0.5 * s4k);
    /* on: whatever earlier buffers of this process left (a dear one while
     * off makes only buffers twice its size timed next), the next one of
     * 4 MiB or more is timed */
    cm__huge_pages_force(1);
    size_t n = (size_t)24 << 20;
    unsigned char *z = cm__calloc(NULL, n, 1);
    CMT_TRUE(z != NULL);
    CMT_EQ_INT(cm__huge_pages_live(NULL), live0 + 1);
    size_t nonzero = 0;
    for (size_t i = 0; z && i < n; i++)
      nonzero += z[i] != 0;
    CMT_EQ_INT((long)nonzero, 0);
    free(z);
    /* a buffer already written (a recycled heap chunk): the blocks timed,
     * the first or all of them, keep their bytes (twice the size: after a
     * dear block while off, only buffers twice as large are timed) */
    size_t n2 = 2 * n;
    unsigned char *w = malloc(n2);
    CMT_TRUE(w != NULL);
    for (size_t i = 0; w && i < n2; i++)
      w[i] = (unsigned char)(i * 2654435761u >> 13);
    if (w)
      cm__huge_pages(w, n2);
    CMT_EQ_INT(cm__huge_pages_live(NULL), live0 + 2);
    size_t moved = 0;
    for (size_t i = 0; w && i < n2; i++)
      moved += w[i] != (unsigned char)(i * 2654435761u >> 13);
    CMT_EQ_INT((long)moved, 0);
    free(w);
#endif
  }
  cm_context_t ctx;
  cm_context_init(&ctx);
  /* about 24 000 contacts: the basis is past the 4 MiB from which huge
   * pages are asked for */
  cm_scene_t *a = cm__ws_pile(&ctx, 8000, 3);
  CMT_TRUE(a != NULL);
  cm__huge_pages_force(0);
  char *want = a ? cm__ws_report(&ctx, a, 6, 2) : NULL;
  cm__huge_pages_force(1);
  char *got = a ? cm__ws_report(&ctx, a, 6, 2) : NULL;
  cm__huge_pages_force(on);
  CMT_TRUE(want && got && !strcmp(want, got));
  free(want), free(got);
  cm_scene_destroy(&a);
}
