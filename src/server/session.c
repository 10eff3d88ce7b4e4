/* session.c: the stored scenes behind /v1/scenes: a fixed number of slots,
 * random ids, reference counts (a DELETE while a report is being computed
 * frees the scene when that request lets go) and idle expiry.
 * Not persistent: sessions live in memory and die with the process. */
#include "server.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* ---- one session -----------------------------------------------------------
 */

static void cm__session_free(cm__session_t *s) {
  if (!s)
    return;
  cm_scene_destroy(&s->scene);
  json_decref(s->options);
  free(s->start);
  free(s->report_key);
  free(s->report_json);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

/* 32 hex digits from the kernel's random source (ids must not be guessable:
 * with --token-file off they are the only thing guarding a session). */
static void cm__new_id(char id[33]) {
  unsigned char r[16];
  size_t got = 0;
  while (got < sizeof r) {
    ssize_t n = getrandom(r + got, sizeof r - got, 0);
    if (n <= 0) { /* cannot happen on Linux >= 3.17; fall back to time */
      uint64_t t = (uint64_t)(cm__now() * 1e9);
      for (size_t i = got; i < sizeof r; i++)
        r[i] = (unsigned char)(t >> (8 * (i % 8))) ^ (unsigned char)i;
      break;
    }
    got += (size_t)n;
  }
  for (int i = 0; i < 16; i++)
    snprintf(id + 2 * i, 3, "%02x", r[i]);
}

/* ---- store -----------------------------------------------------------------
 */

int cm__store_init(cm__store_t *st, int cap, double idle_s) {
  pthread_mutex_init(&st->lock, NULL);
  st->cap = cap < 1 ? 1 : cap;
  st->count = 0;
  st->idle_s = idle_s;
  st->slot = calloc((size_t)st->cap, sizeof *st->slot);
  return st->slot ? CM_OK : CM_NOMEM;
}

void cm__store_destroy(cm__store_t *st) {
  for (int i = 0; st->slot && i < st->cap; i++)
    cm__session_free(st->slot[i]);
  free(st->slot);
  st->slot = NULL;
  pthread_mutex_destroy(&st->lock);
}

/* Drops one reference (store lock held); frees at zero. */
static void cm__unref_locked(cm__session_t *s) {
  if (--s->refs == 0)
    cm__session_free(s);
}

int cm__store_add(cm__store_t *st, cm_scene_t *scene, json_t *options,
                  cm__session_t **out, int *retry_after_s) {
  *out = NULL;
  cm__session_t *s = calloc(1, sizeof *s);
  if (!s)
    return CM_NOMEM;
  pthread_mutex_init(&s->lock, NULL);
  cm__new_id(s->id);
  s->version = 1;
  s->refs = 2; /* the store's and the caller's */
  s->last_used = cm__now();
  pthread_mutex_lock(&st->lock);
  int free_slot = -1;
  double oldest = s->last_used;
  for (int i = 0; i < st->cap; i++) {
    if (!st->slot[i] && free_slot < 0)
      free_slot = i;
    else if (st->slot[i] && st->slot[i]->last_used < oldest)
      oldest = st->slot[i]->last_used;
  }
  if (free_slot < 0) {
    pthread_mutex_unlock(&st->lock);
    double wait = oldest + st->idle_s - s->last_used;
    *retry_after_s = wait < 1 ? 1 : wait > 86400 ? 86400 : (int)(wait + 0.999);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return CM_TOO_MANY;
  }
  s->scene = scene;
  s->options = options;
  st->slot[free_slot] = s;
  st->count++;
  pthread_mutex_unlock(&st->lock);
  *out = s;
  return CM_OK;
}

cm__session_t *cm__store_get(cm__store_t *st, const char *id) {
  cm__session_t *found = NULL;
  pthread_mutex_lock(&st->lock);
  for (int i = 0; i < st->cap; i++) {
    cm__session_t *s = st->slot[i];
    if (s && !s->dead && !strcmp(s->id, id)) {
      s->refs++;
      s->last_used = cm__now();
      found = s;
      break;
    }
  }
  pthread_mutex_unlock(&st->lock);
  return found;
}

void cm__store_release(cm__store_t *st, cm__session_t **sp) {
  if (!sp || !*sp)
    return;
  pthread_mutex_lock(&st->lock);
  (*sp)->last_used = cm__now();
  cm__unref_locked(*sp);
  pthread_mutex_unlock(&st->lock);
  *sp = NULL;
}

/* Removes slot i (store lock held). */
static void cm__drop_locked(cm__store_t *st, int i) {
  cm__session_t *s = st->slot[i];
  s->dead = 1;
  st->slot[i] = NULL;
  st->count--;
  cm__unref_locked(s);
}

int cm__store_delete(cm__store_t *st, const char *id) {
  int status = CM_NOT_FOUND;
  pthread_mutex_lock(&st->lock);
  for (int i = 0; i < st->cap; i++)
    if (st->slot[i] && !strcmp(st->slot[i]->id, id)) {
      cm__drop_locked(st, i);
      status = CM_OK;
      break;
    }
  pthread_mutex_unlock(&st->lock);
  return status;
}

int cm__store_expire(cm__store_t *st, double now) {
  int n = 0;
  pthread_mutex_lock(&st->lock);
  for (int i = 0; i < st->cap; i++) {
    cm__session_t *s = st->slot[i];
    /* refs == 1: nobody is using it right now */
    if (s && s->refs == 1 && now - s->last_used > st->idle_s) {
      cm__drop_locked(st, i);
      n++;
    }
  }
  pthread_mutex_unlock(&st->lock);
  return n;
}

int cm__store_count(cm__store_t *st) {
  pthread_mutex_lock(&st->lock);
  int n = st->count;
  pthread_mutex_unlock(&st->lock);
  return n;
}
