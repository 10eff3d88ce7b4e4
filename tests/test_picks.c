/* test_picks.c: the report's top contacts and bodies of a mode
 * (cm__pick_groups, which picks in fixed chunks on threads and merges)
 * against a brute force: every group's share summed in order, all groups
 * sorted by (share descending, index ascending), the first T taken. The
 * groups straddle the chunk boundaries, and some shares tie exactly, so a
 * merge that lost a group at a boundary or ordered a tie otherwise would
 * pick differently. Compared bit for bit, at 1 and 2 threads. */
#include "analyze/analyze_internal.h"
#include "cmtest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int picks_cmp(const void *pa, const void *pb) {
  const cm__pick_t *a = pa, *b = pb;
  if (a->share != b->share)
    return a->share > b->share ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

static uint64_t picks_next(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dULL;
}

CM_TEST(picks_groups_brute_force) {
  enum { N = 300000, TMAX = 300 };
  int *key = malloc(sizeof(int) * N);
  double *v = malloc(sizeof(double) * N);
  cm__pick_t *all = malloc(sizeof(cm__pick_t) * N);
  CMT_TRUE(key && v && all);
  if (!key || !v || !all)
    goto out;
  uint64_t s = 0x7069636b73ULL;
  int g = 0, k = 7;
  for (int i = 0; i < N; g++) { /* groups of 1 to 6 entries, keys rising */
    int len = 1 + (int)(picks_next(&s) % 6);
    k += 1 + (int)(picks_next(&s) % 3);
    for (int j = 0; j < len && i < N; j++, i++) {
      key[i] = k;
      /* a few large values (the top), many small; every 97th group's
       * entries all 1.2, so whole groups of a length tie exactly (those
       * of 6 at ranks 209 to 357: the longer list ends among them) */
      double u = (double)(picks_next(&s) >> 11) / 9007199254740992.0;
      v[i] = g % 97 == 0 ? 1.2 : (picks_next(&s) % 500 == 0 ? 4 * u : u);
    }
  }
  /* a large group across every chunk boundary: 2 entries before it, 3
   * from it (a chunk that skipped no group there, or stopped a group at
   * its end, would list a part of it) */
  for (int b = CM__PICK_CHUNK, c = 1; b + 3 < N; b += CM__PICK_CHUNK, c++) {
    int K = key[b - 2], lo = b - 2, hi = b + 3;
    for (int i = b - 2; i < hi; i++)
      key[i] = K; /* keys still rise: a later group keeps its own */
    while (lo > 0 && key[lo - 1] == K)
      lo--;
    while (hi < N && key[hi] == K)
      hi++;
    for (int i = lo; i < hi; i++)
      v[i] = 3.0 + 1e-3 * c;
  }
  for (int by_div = 0; by_div < 2; by_div++) {
    double div = by_div ? 3.7 : 1.0; /* 1: the plain squares, below */
    int ng = 0;                      /* brute force, serially in order */
    for (int i = 0; i < N;) {
      int kk = key[i];
      double e = 0;
      for (; i < N && key[i] == kk; i++)
        e += by_div ? v[i] * v[i] / div : v[i] * v[i];
      all[ng++] = (cm__pick_t){kk, e};
    }
    qsort(all, (size_t)ng, sizeof *all, picks_cmp);
    /* the longer list's cut falls inside a run of ties */
    CMT_TRUE(all[TMAX - 1].share == all[TMAX].share);
    for (int run = 0; run < 4; run++) {
      int th = 1 + run % 2, T = run < 2 ? 21 : TMAX;
      cm__pick_t pick[TMAX + 1];
      int np = 0;
      CMT_EQ_INT(cm__pick_groups(pick, &np, T, key, v, div, N, th), CM_OK);
      CMT_EQ_INT(np, T);
      for (int q = 0; q < np && q < T; q++) {
        CMT_EQ_INT(pick[q].index, all[q].index);
        CMT_TRUE(memcmp(&pick[q].share, &all[q].share, sizeof(double)) == 0);
      }
    }
  }
out:
  free(key), free(v), free(all);
}
