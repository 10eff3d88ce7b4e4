/* metrics.c: the counters behind GET /metrics, in the Prometheus text
 * exposition format (version 0.0.4): requests by route and status, solve
 * durations as a histogram, matvecs, bytes in, plus gauges the caller
 * passes in (sessions, queue depth). Not a general metrics library: the
 * label sets are the server's fixed routes. */
#include "server.h"

#include <stdlib.h>
#include <string.h>

#define CM__ROUTES 9
#define CM__STATUSES 16
#define CM__BUCKETS 12

static const char *const cm__routes[CM__ROUTES] = {"/healthz",
                                                   "/metrics",
                                                   "/v1/analyze",
                                                   "/v1/scenes",
                                                   "/v1/scenes/{id}",
                                                   "/v1/scenes/{id}/report",
                                                   "/v1/scenes/{id}/scene",
                                                   "stdio",
                                                   "other"};
static const int cm__statuses[CM__STATUSES] = {
    200, 201, 204, 400, 401, 404, 405, 409, 413, 415, 422, 429, 500, 503, 0, 0};
static const double cm__bounds[CM__BUCKETS] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};

struct cm__metrics {
  pthread_mutex_t lock;
  unsigned long req[CM__ROUTES][CM__STATUSES]; /* by route and status */
  unsigned long req_other_status[CM__ROUTES];  /* statuses not listed */
  double req_seconds[CM__ROUTES];              /* summed durations */
  unsigned long long bytes_in;                 /* request bodies */
  unsigned long solve_bucket[CM__BUCKETS];     /* cumulative at output */
  unsigned long solves, solves_unconverged;
  double solve_seconds;
  unsigned long long matvecs;
};

/* Returns NULL when out of memory; the caller destroys it. */
cm__metrics_t *cm__metrics_create(void) {
  cm__metrics_t *m = calloc(1, sizeof *m);
  if (m)
    pthread_mutex_init(&m->lock, NULL);
  return m;
}

void cm__metrics_destroy(cm__metrics_t **mp) {
  if (!mp || !*mp)
    return;
  pthread_mutex_destroy(&(*mp)->lock);
  free(*mp);
  *mp = NULL;
}

static int cm__route_index(const char *route) {
  for (int i = 0; i < CM__ROUTES; i++)
    if (route && !strcmp(route, cm__routes[i]))
      return i;
  return CM__ROUTES - 1;
}

void cm__metrics_request(cm__metrics_t *m, const char *route, int status,
                         size_t bytes_in, double seconds) {
  int r = cm__route_index(route), s = -1;
  for (int i = 0; i < CM__STATUSES && cm__statuses[i]; i++)
    if (cm__statuses[i] == status)
      s = i;
  pthread_mutex_lock(&m->lock);
  if (s >= 0)
    m->req[r][s]++;
  else
    m->req_other_status[r]++;
  m->req_seconds[r] += seconds;
  m->bytes_in += bytes_in;
  pthread_mutex_unlock(&m->lock);
}

void cm__metrics_solve(cm__metrics_t *m, double seconds, long matvecs,
                       int report_status) {
  pthread_mutex_lock(&m->lock);
  for (int b = 0; b < CM__BUCKETS; b++)
    if (seconds <= cm__bounds[b]) {
      m->solve_bucket[b]++;
      break;
    }
  m->solves++;
  if (report_status == CM_NOT_CONVERGED)
    m->solves_unconverged++;
  m->solve_seconds += seconds;
  m->matvecs += matvecs > 0 ? (unsigned long long)matvecs : 0;
  pthread_mutex_unlock(&m->lock);
}

/* ---- exposition ------------------------------------------------------------
 */

char *cm__metrics_text(cm__metrics_t *m, int sessions, int queue_depth,
                       int queue_running, int in_flight) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;
  pthread_mutex_lock(&m->lock);
  fprintf(f, "# HELP cmodes_http_requests_total Requests by route and "
             "status.\n# TYPE cmodes_http_requests_total counter\n");
  for (int r = 0; r < CM__ROUTES; r++) {
    for (int s = 0; s < CM__STATUSES && cm__statuses[s]; s++)
      if (m->req[r][s])
        fprintf(f,
                "cmodes_http_requests_total{route=\"%s\",status=\"%d\"} "
                "%lu\n",
                cm__routes[r], cm__statuses[s], m->req[r][s]);
    if (m->req_other_status[r])
      fprintf(f,
              "cmodes_http_requests_total{route=\"%s\",status=\"other\"} "
              "%lu\n",
              cm__routes[r], m->req_other_status[r]);
  }
  fprintf(f, "# HELP cmodes_http_request_seconds_total Time spent handling "
             "requests, by route.\n"
             "# TYPE cmodes_http_request_seconds_total counter\n");
  for (int r = 0; r < CM__ROUTES; r++)
    if (m->req_seconds[r] > 0)
      fprintf(f, "cmodes_http_request_seconds_total{route=\"%s\"} %.6f\n",
              cm__routes[r], m->req_seconds[r]);
  fprintf(f, "# HELP cmodes_solve_duration_seconds Factor and eigen-solve "
             "time per analysis.\n"
             "# TYPE cmodes_solve_duration_seconds histogram\n");
  unsigned long cum = 0;
  for (int b = 0; b < CM__BUCKETS; b++) {
    cum += m->solve_bucket[b];
    fprintf(f, "cmodes_solve_duration_seconds_bucket{le=\"%g\"} %lu\n",
            cm__bounds[b], cum);
  }
  fprintf(f, "cmodes_solve_duration_seconds_bucket{le=\"+Inf\"} %lu\n",
          m->solves);
  fprintf(f, "cmodes_solve_duration_seconds_sum %.6f\n", m->solve_seconds);
  fprintf(f, "cmodes_solve_duration_seconds_count %lu\n", m->solves);
  fprintf(f,
          "# HELP cmodes_solves_not_converged_total Analyses that hit "
          "their budget (partial reports).\n"
          "# TYPE cmodes_solves_not_converged_total counter\n"
          "cmodes_solves_not_converged_total %lu\n",
          m->solves_unconverged);
  fprintf(f,
          "# HELP cmodes_matvecs_total Operator applications in all "
          "solves.\n# TYPE cmodes_matvecs_total counter\n"
          "cmodes_matvecs_total %llu\n",
          m->matvecs);
  fprintf(f,
          "# HELP cmodes_request_bytes_total Request body bytes "
          "received.\n# TYPE cmodes_request_bytes_total counter\n"
          "cmodes_request_bytes_total %llu\n",
          m->bytes_in);
  pthread_mutex_unlock(&m->lock);
  fprintf(f,
          "# HELP cmodes_sessions Stored scenes.\n"
          "# TYPE cmodes_sessions gauge\ncmodes_sessions %d\n",
          sessions);
  fprintf(f,
          "# HELP cmodes_queue_depth Solves admitted (running and "
          "waiting).\n# TYPE cmodes_queue_depth gauge\n"
          "cmodes_queue_depth %d\n",
          queue_depth);
  fprintf(f,
          "# HELP cmodes_solves_running Solves running now (0 or 1).\n"
          "# TYPE cmodes_solves_running gauge\ncmodes_solves_running %d\n",
          queue_running);
  fprintf(f,
          "# HELP cmodes_requests_in_flight Requests being handled.\n"
          "# TYPE cmodes_requests_in_flight gauge\n"
          "cmodes_requests_in_flight %d\n",
          in_flight);
  if (fclose(f)) {
    free(buf);
    return NULL;
  }
  return buf;
}
