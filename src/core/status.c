/* status.c: status tables generated from CM_STATUS_MAP, the context object
 * and error recording. Not for formatting reports. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  int value;         /* status code */
  const char *name;  /* machine name, e.g. "invalid_scene" */
  const char *msg;   /* human message */
  int http;          /* HTTP status */
  int exitc;         /* CLI exit code */
} cm__status_row_t;

#define CM__ROW(n, v, m, h, e) {(v), #n, (m), (h), (e)},
static const cm__status_row_t cm__rows[] = {CM_STATUS_MAP(CM__ROW)};
#undef CM__ROW

static const cm__status_row_t *cm__find(int status) {
  for (size_t i = 0; i < sizeof cm__rows / sizeof cm__rows[0]; i++)
    if (cm__rows[i].value == status)
      return &cm__rows[i];
  return NULL;
}

/* Lower-case machine names, generated once from the upper-case enum names. */
const char *cm_status_name(int status) {
  static char names[sizeof cm__rows / sizeof cm__rows[0]][32];
  const cm__status_row_t *r = cm__find(status);
  if (!r)
    return "unknown";
  size_t i = (size_t)(r - cm__rows);
  if (!names[i][0]) {
    char tmp[32];
    size_t j = 0;
    for (; r->name[j] && j < sizeof tmp - 1; j++) {
      char c = r->name[j];
      tmp[j] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    tmp[j] = 0;
    memcpy(names[i], tmp, j + 1);
  }
  return names[i];
}

const char *cm_status_message(int status) {
  const cm__status_row_t *r = cm__find(status);
  return r ? r->msg : "unknown status";
}

int cm_status_http(int status) {
  const cm__status_row_t *r = cm__find(status);
  return r ? r->http : 500;
}

int cm_status_exit(int status) {
  const cm__status_row_t *r = cm__find(status);
  return r ? r->exitc : 1;
}

void cm_context_init(cm_context_t *ctx) {
  memset(ctx, 0, sizeof *ctx);
}

void cm_context_clear(cm_context_t *ctx) {
  int threads = ctx->threads;
  cm_context_init(ctx);
  ctx->threads = threads;
}

int cm__error_at(cm_context_t *ctx, int status, const char *file, int line,
                 const char *path, const char *fmt, ...) {
  if (!ctx)
    return status;
  ctx->status = status;
  ctx->file = file;
  ctx->line = line;
  snprintf(ctx->path, sizeof ctx->path, "%s", path ? path : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->message, sizeof ctx->message, fmt, ap);
  va_end(ap);
  return status;
}
