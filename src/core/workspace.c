/* workspace.c: large buffers kept between analyses in one process (issue
 * 19, goal 4). A fresh buffer costs a page fault and a page clearing for
 * every 4 KiB the first time it is written: on a 1e6-contact pile that was
 * a third of the eigen phase of `--modes 1` and a third of the operator
 * build. A server, `cmodes track` or a Python loop analyses scene after
 * scene of about the same size, so the buffers that dominate (the Lanczos
 * basis, B's values and indices) are given back here instead of to the
 * allocator and taken again by the next analysis, whose pages are then
 * already mapped.
 *
 * Until the process sets a cap (cm_workspace_keep, 0 included), each
 * analysis keeps what it frees for its own later requests and frees the
 * rest when it returns (cm__ws_scope_begin and _end, around cm_analyze,
 * cm_analyze_system, cm_analyze_vectors and cm_system_assemble): its
 * solves follow each other (the solve, the search for missed copies, the
 * residuals, component after component), and each takes the last one's
 * buffers instead of fresh pages, as the CLI's heap gives them (1e6 pile,
 * 6 modes, a first analysis in one process: 252-260k page faults -> 187k,
 * peak RSS 893 -> 941 MB; performance.md, issue 19, session 31). Once set,
 * the cap holds
 * across analyses (a server, a loop), in bytes. Kept buffers count in the
 * resident set until taken, evicted (oldest first, when a buffer given
 * back would pass the cap) or released (cm_workspace_keep(0)). A taken
 * buffer holds what its last user left in it, like any malloc'd memory:
 * every user writes before it reads, which the tests check by comparing
 * reports bit for bit with the pool on and off.
 *
 * Each buffer carries a header with its capacity, so cm__ws_free needs no
 * size; a kept buffer's written extent (its pages resident from its start,
 * mincore) is noted when it comes back; buffers under CM__WS_MIN are never
 * kept. Not for small or short-lived arrays: use malloc. */
#include "internal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* header bytes before a buffer (its capacity, a size_t): 64 keeps the
 * 64-byte alignment of page-aligned blocks */
#define CM__WS_HEAD 64
#define CM__WS_MIN ((size_t)1 << 20) /* smaller buffers are never kept */
#define CM__WS_SLOTS                                                           \
  96                   /* most buffers kept at once: an assembly (about 30     \
                          of them) and an analysis (about 15) */
#define CM__WS_WASTE 8 /* a kept buffer serves a request at most 8x smaller */

/* an analysis's own cap while the process has set none */
#define CM__WS_SCOPE_CAP ((size_t)1 << 30)

static struct {
  pthread_mutex_t mu;
  int set;          /* 1 once cm_workspace_keep was called */
  int scopes;       /* analyses running (cm__ws_scope_begin) */
  size_t cap, kept; /* the cap, and the bytes kept now */
  int n;            /* kept buffers, oldest first */
  char *base[CM__WS_SLOTS];
  size_t bytes[CM__WS_SLOTS], hw[CM__WS_SLOTS]; /* capacity, written */
  unsigned long taken; /* buffers taken from the kept ones (tests) */
} cm__ws = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, {0}, {0}, {0}, 0};

/* removes slot i (mutex held) */
static char *cm__ws_remove(int i) {
  char *b = cm__ws.base[i];
  cm__ws.kept -= cm__ws.bytes[i];
  for (int j = i + 1; j < cm__ws.n; j++) {
    cm__ws.base[j - 1] = cm__ws.base[j];
    cm__ws.bytes[j - 1] = cm__ws.bytes[j];
    cm__ws.hw[j - 1] = cm__ws.hw[j];
  }
  cm__ws.n--;
  return b;
}

void *cm__ws_malloc(cm_context_t *ctx, size_t n, size_t size) {
  size_t need = n && size ? n * size : 1;
  if (n && size && need / size != n) { /* overflow */
    CM__ERR(ctx, CM_NOMEM, NULL, "out of memory allocating %zu x %zu bytes", n,
            size);
    return NULL;
  }
  char *b = NULL;
  if (need >= CM__WS_MIN) {
    /* a kept buffer that holds need, if at most CM__WS_WASTE times need
     * (a larger one's pages past need stay mapped, unused, until it goes
     * back, and a small buffer that took the basis's would leave the basis
     * to fresh pages: the search's basis, 168 MB on the 1e6 pile, and the
     * residual products' 96 MB take the solve's 600 MB; the pair list's
     * 72 MB, allocated before the solve, does not): of those written up
     * to need, the least written (then the smallest), so that no page is
     * fresh and the more written buffers stay for larger requests; else
     * the most written (the fewest fresh pages), then the smallest. Taking
     * the smallest alone, a step's buffers and a 6-mode analysis's
     * alternating (a server's requests) left the 6-mode run's basis on a
     * buffer of the same size that the step had written only up to its 54
     * columns: 168 MiB of fresh pages in its second kept run on the 1e6
     * pile, 46 (what it allocates outside the pool) only from its third;
     * now from its second. */
    pthread_mutex_lock(&cm__ws.mu);
    int best = -1;
    for (int i = 0; i < cm__ws.n; i++) {
      size_t by = cm__ws.bytes[i], h = cm__ws.hw[i];
      if (by < need || by / CM__WS_WASTE > need)
        continue;
      if (best < 0) {
        best = i;
        continue;
      }
      size_t bb = cm__ws.bytes[best], bh = cm__ws.hw[best];
      int cov = h >= need, bcov = bh >= need;
      if (cov != bcov ? cov
          : cov       ? h < bh || (h == bh && by < bb)
                      : h > bh || (h == bh && by < bb))
        best = i;
    }
    if (best >= 0) {
      b = cm__ws_remove(best);
      cm__ws.taken++;
    }
    pthread_mutex_unlock(&cm__ws.mu);
  }
  if (!b) {
    b = need <= SIZE_MAX - CM__WS_HEAD ? malloc(need + CM__WS_HEAD) : NULL;
    if (!b) {
      CM__ERR(ctx, CM_NOMEM, NULL, "out of memory allocating %zu x %zu bytes",
              n, size);
      return NULL;
    }
    memcpy(b, &need, sizeof need); /* the header: the capacity */
    cm__huge_pages(b, need + CM__WS_HEAD);
  }
  return b + CM__WS_HEAD;
}

void *cm__ws_calloc(cm_context_t *ctx, size_t n, size_t size) {
  void *p = cm__ws_malloc(ctx, n, size);
  if (p) /* a kept buffer holds its last user's values */
    memset(p, 0, n && size ? n * size : 1);
  return p;
}

/* The bytes of the buffer at p (capacity bytes) written from its start, as
 * far as the kernel shows: the pages resident from the first on (an
 * anonymous page is resident once written); bytes when it cannot tell. */
static size_t cm__ws_written(const char *p, size_t bytes) {
  long pg = sysconf(_SC_PAGESIZE);
  if (pg <= 0)
    return bytes;
  uintptr_t a0 = (uintptr_t)p & ~(uintptr_t)(pg - 1);
  uintptr_t a1 = (uintptr_t)p + bytes;
  size_t np = (size_t)((a1 - a0 + (uintptr_t)pg - 1) / (uintptr_t)pg);
  unsigned char *vec = malloc(np);
  size_t w = bytes;
  if (vec && !mincore((void *)a0, a1 - a0, vec)) {
    size_t i = 0;
    while (i < np && (vec[i] & 1))
      i++;
    uintptr_t end = a0 + (uintptr_t)i * (uintptr_t)pg; /* first unwritten */
    w = i == np               ? bytes
        : end <= (uintptr_t)p ? 0
                              : (size_t)(end - (uintptr_t)p);
  }
  free(vec);
  return w;
}

void cm__ws_free(void *p) {
  if (!p)
    return;
  char *b = (char *)p - CM__WS_HEAD, *drop[CM__WS_SLOTS + 1];
  int nd = 0;
  size_t bytes, hw = 0;
  memcpy(&bytes, b, sizeof bytes);
  pthread_mutex_lock(&cm__ws.mu);
  size_t cap = cm__ws.cap;
  pthread_mutex_unlock(&cm__ws.mu);
  if (bytes >= CM__WS_MIN && bytes <= cap) /* to be kept: how far written */
    hw = cm__ws_written(b + CM__WS_HEAD, bytes);
  pthread_mutex_lock(&cm__ws.mu);
  if (bytes >= CM__WS_MIN && bytes <= cm__ws.cap) {
    /* room by evicting the oldest buffers no larger than this one: a
     * buffer given back never pushes out a larger one (a system's arrays,
     * given back after the analysis, would otherwise evict the Lanczos
     * basis once the two pass the cap); no room that way: not kept */
    int ev[CM__WS_SLOTS], ne = 0; /* the slots to evict, ascending */
    size_t kept = cm__ws.kept;
    for (int i = 0; i < cm__ws.n && (kept + bytes > cm__ws.cap ||
                                     cm__ws.n - ne == CM__WS_SLOTS);
         i++)
      if (cm__ws.bytes[i] <= bytes)
        ev[ne++] = i, kept -= cm__ws.bytes[i];
    if (kept + bytes <= cm__ws.cap && cm__ws.n - ne < CM__WS_SLOTS) {
      while (ne > 0) /* from the last: the earlier slots keep their index */
        drop[nd++] = cm__ws_remove(ev[--ne]);
      cm__ws.base[cm__ws.n] = b, cm__ws.bytes[cm__ws.n] = bytes;
      cm__ws.hw[cm__ws.n] = hw;
      cm__ws.n++, cm__ws.kept += bytes;
      b = NULL;
    }
  }
  pthread_mutex_unlock(&cm__ws.mu);
  for (int i = 0; i < nd; i++)
    free(drop[i]);
  free(b);
}

/* Sets the cap to bytes (mutex held) and removes the oldest buffers past
 * it into drop[] (*nd of them, for the caller to free unlocked). */
static void cm__ws_set_cap(size_t bytes, char **drop, int *nd) {
  cm__ws.cap = bytes;
  while (cm__ws.n > 0 && cm__ws.kept > cm__ws.cap)
    drop[(*nd)++] = cm__ws_remove(0);
}

size_t cm_workspace_keep(size_t bytes) {
  char *drop[CM__WS_SLOTS];
  int nd = 0;
  pthread_mutex_lock(&cm__ws.mu);
  size_t old = cm__ws.set ? cm__ws.cap : 0;
  cm__ws.set = 1;
  cm__ws_set_cap(bytes, drop, &nd);
  pthread_mutex_unlock(&cm__ws.mu);
  for (int i = 0; i < nd; i++)
    free(drop[i]);
  return old;
}

void cm__ws_scope_begin(void) {
  pthread_mutex_lock(&cm__ws.mu);
  if (cm__ws.scopes++ == 0 && !cm__ws.set)
    cm__ws.cap = CM__WS_SCOPE_CAP;
  pthread_mutex_unlock(&cm__ws.mu);
}

void cm__ws_scope_end(void) {
  char *drop[CM__WS_SLOTS];
  int nd = 0;
  pthread_mutex_lock(&cm__ws.mu);
  if (--cm__ws.scopes == 0 && !cm__ws.set) /* the last one out */
    cm__ws_set_cap(0, drop, &nd);
  pthread_mutex_unlock(&cm__ws.mu);
  for (int i = 0; i < nd; i++)
    free(drop[i]);
}

void cm__ws_unset(void) {
  char *drop[CM__WS_SLOTS];
  int nd = 0;
  pthread_mutex_lock(&cm__ws.mu);
  cm__ws.set = 0;
  cm__ws_set_cap(cm__ws.scopes ? CM__WS_SCOPE_CAP : 0, drop, &nd);
  pthread_mutex_unlock(&cm__ws.mu);
  for (int i = 0; i < nd; i++)
    free(drop[i]);
}

size_t cm_workspace_kept(void) {
  pthread_mutex_lock(&cm__ws.mu);
  size_t k = cm__ws.kept;
  pthread_mutex_unlock(&cm__ws.mu);
  return k;
}

unsigned long cm__ws_reused(void) {
  pthread_mutex_lock(&cm__ws.mu);
  unsigned long t = cm__ws.taken;
  pthread_mutex_unlock(&cm__ws.mu);
  return t;
}
