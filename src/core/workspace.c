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
 * Off by default (cap 0: every buffer is freed as before); the caller sets
 * the cap, in bytes, with cm_workspace_keep. Kept buffers count in the
 * resident set until taken, evicted (oldest first, when a buffer given
 * back would pass the cap) or released (cm_workspace_keep(0)). A taken
 * buffer holds what its last user left in it, like any malloc'd memory:
 * every user writes before it reads, which the tests check by comparing
 * reports bit for bit with the pool on and off.
 *
 * Each buffer carries a header with its capacity, so cm__ws_free needs no
 * size; buffers under CM__WS_MIN are never kept. Not for small or
 * short-lived arrays: use malloc. */
#include "internal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* header bytes before a buffer (its capacity, a size_t): 64 keeps the
 * 64-byte alignment of page-aligned blocks */
#define CM__WS_HEAD 64
#define CM__WS_MIN ((size_t)1 << 20) /* smaller buffers are never kept */
#define CM__WS_SLOTS                                                           \
  96                   /* most buffers kept at once: an assembly (about 30     \
                          of them) and an analysis (about 15) */
#define CM__WS_WASTE 8 /* a kept buffer serves a request at most 8x smaller */

static struct {
  pthread_mutex_t mu;
  size_t cap, kept; /* the cap, and the bytes kept now */
  int n;            /* kept buffers, oldest first */
  char *base[CM__WS_SLOTS];
  size_t bytes[CM__WS_SLOTS];
  unsigned long taken; /* buffers taken from the kept ones (tests) */
} cm__ws = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, {0}, {0}, 0};

/* removes slot i (mutex held) */
static char *cm__ws_remove(int i) {
  char *b = cm__ws.base[i];
  cm__ws.kept -= cm__ws.bytes[i];
  for (int j = i + 1; j < cm__ws.n; j++) {
    cm__ws.base[j - 1] = cm__ws.base[j];
    cm__ws.bytes[j - 1] = cm__ws.bytes[j];
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
    /* the smallest kept buffer that holds need, if at most CM__WS_WASTE
     * times need: a larger one's pages past need stay mapped, unused,
     * until it goes back, and a small buffer that took the basis's would
     * leave the basis to fresh pages (the search's basis, 168 MB on the
     * 1e6 pile, and the residual products' 96 MB take the solve's 600 MB;
     * the pair list's 72 MB, allocated before the solve, does not) */
    pthread_mutex_lock(&cm__ws.mu);
    int best = -1;
    for (int i = 0; i < cm__ws.n; i++)
      if (cm__ws.bytes[i] >= need && cm__ws.bytes[i] / CM__WS_WASTE <= need &&
          (best < 0 || cm__ws.bytes[i] < cm__ws.bytes[best]))
        best = i;
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

void cm__ws_free(void *p) {
  if (!p)
    return;
  char *b = (char *)p - CM__WS_HEAD, *drop[CM__WS_SLOTS + 1];
  int nd = 0;
  size_t bytes;
  memcpy(&bytes, b, sizeof bytes);
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
      cm__ws.n++, cm__ws.kept += bytes;
      b = NULL;
    }
  }
  pthread_mutex_unlock(&cm__ws.mu);
  for (int i = 0; i < nd; i++)
    free(drop[i]);
  free(b);
}

size_t cm_workspace_keep(size_t bytes) {
  char *drop[CM__WS_SLOTS];
  int nd = 0;
  pthread_mutex_lock(&cm__ws.mu);
  size_t old = cm__ws.cap;
  cm__ws.cap = bytes;
  while (cm__ws.n > 0 && cm__ws.kept > cm__ws.cap)
    drop[nd++] = cm__ws_remove(0);
  pthread_mutex_unlock(&cm__ws.mu);
  for (int i = 0; i < nd; i++)
    free(drop[i]);
  return old;
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
