/* queue.c: the solve queue of `cmodes serve`: one eigen-solve at a time, in
 * arrival order, with a bounded number admitted. Parsing and assembly run
 * before it, in parallel; only the factor and eigen phases wait here.
 * Not a general work queue: callers block in their own threads. */
#include "server.h"

#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- init / destroy: cannot fail ------------------------------------------
 */

void cm__queue_init(cm__queue_t *q, int depth) {
  pthread_mutex_init(&q->lock, NULL);
  pthread_cond_init(&q->turn, NULL);
  q->depth = depth < 1 ? 1 : depth;
  q->admitted = q->running = 0;
  q->next = q->now = 0;
  q->ewma_s = 1.0;
}

void cm__queue_destroy(cm__queue_t *q) {
  pthread_cond_destroy(&q->turn);
  pthread_mutex_destroy(&q->lock);
}

/* ---- enter: admit, then wait for the ticket's turn ------------------------
 */

/* Under the lock: 1 and the Retry-After seconds when no solve is admitted. */
static int cm__queue_is_full(const cm__queue_t *q, int *retry_after_s) {
  if (q->admitted < q->depth)
    return 0;
  /* the whole queue ahead must drain: about depth smoothed solve times */
  double wait = q->ewma_s * q->admitted;
  int s = (int)(wait + 0.999);
  *retry_after_s = s < 1 ? 1 : s > 3600 ? 3600 : s;
  return 1;
}

int cm__queue_full(cm__queue_t *q, int *retry_after_s) {
  pthread_mutex_lock(&q->lock);
  int full = cm__queue_is_full(q, retry_after_s);
  pthread_mutex_unlock(&q->lock);
  return full;
}

int cm__queue_enter(cm__queue_t *q, int *retry_after_s) {
  pthread_mutex_lock(&q->lock);
  if (cm__queue_is_full(q, retry_after_s)) {
    pthread_mutex_unlock(&q->lock);
    return CM_BUSY;
  }
  q->admitted++;
  unsigned long ticket = q->next++;
  while (q->now != ticket)
    pthread_cond_wait(&q->turn, &q->lock);
  q->running = 1;
  pthread_mutex_unlock(&q->lock);
  return CM_OK;
}

/* ---- leave: hand the turn to the next ticket ------------------------------
 */

void cm__queue_leave(cm__queue_t *q, double seconds) {
  pthread_mutex_lock(&q->lock);
  q->running = 0;
  q->admitted--;
  q->now++;
  q->ewma_s = 0.8 * q->ewma_s + 0.2 * (seconds > 0 ? seconds : 0);
  pthread_cond_broadcast(&q->turn);
  pthread_mutex_unlock(&q->lock);
}

void cm__queue_gauges(cm__queue_t *q, int *admitted, int *running) {
  pthread_mutex_lock(&q->lock);
  *admitted = q->admitted;
  *running = q->running;
  pthread_mutex_unlock(&q->lock);
}

/* ---- solving below the transport's priority ------------------------------
 */

typedef struct {
  void (*fn)(void *);
  void *arg;
  int nice;
} cm__below_t;

static void *cm__below_main(void *p) {
  cm__below_t *b = p;
  /* Linux: nice is per thread, and the threads this one starts (its
   * OpenMP team) inherit it */
  id_t tid = (id_t)syscall(SYS_gettid);
  errno = 0;
  int nice = getpriority(PRIO_PROCESS, tid);
  if (!errno) {
    nice += b->nice;
    setpriority(PRIO_PROCESS, tid, nice > 19 ? 19 : nice);
  }
  b->fn(b->arg);
  return NULL;
}

void cm__call_below(const cm__server_t *srv, void (*fn)(void *), void *arg) {
  cm__below_t b = {fn, arg, srv->cfg.solve_nice};
  pthread_t t;
  pthread_attr_t at;
  int ok = b.nice > 0 && !pthread_attr_init(&at);
  /* the solvers' stack needs, as a connection thread has them */
  if (ok && pthread_attr_setstacksize(&at, (size_t)8 << 20))
    ok = 0;
  if (ok && !pthread_create(&t, &at, cm__below_main, &b))
    pthread_join(t, NULL);
  else
    fn(arg); /* no thread: in the caller's, at its priority */
  if (b.nice > 0 && ok)
    pthread_attr_destroy(&at);
}
