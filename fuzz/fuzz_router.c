/* fuzz_router.c: libFuzzer harness of the server's request path in
 * process: the router (routes, auth, limits, options from the query and
 * the body, scene and patch bodies, sessions) exactly as both transports
 * call it. The input is "METHOD PATH[?QUERY]\n" then the body; a path
 * "/v1/scenes/@..." names a stored scene kept alive across inputs, so
 * PATCH and report paths are reached. Every answer must be well formed: a
 * status in 100..599 and, for a JSON error, an object with "error" and
 * "message"; otherwise the harness aborts (a finding). Built with
 * -DCMODES_FUZZ=ON and clang (fuzz/README.md). */
#include "fuzz_server.h"
#include "server.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static cm__server_t g_srv;
static char g_id[33];

static void answer_check(const cm__response_t *r) {
  if (r->status < 100 || r->status > 599 || !r->body)
    abort();
  if (r->status < 400 || strncmp(r->content_type, "application/json", 16))
    return;
  json_error_t e;
  json_t *j = json_loadb(r->body, r->body_len, 0, &e);
  if (!json_is_object(j) || !json_is_string(json_object_get(j, "error")) ||
      !json_is_string(json_object_get(j, "message")))
    abort();
  json_decref(j);
}

/* A stored scene for the "@" paths, made again when a delete or expiry
 * removed it. */
static void session_ensure(void) {
  cm__session_t *s = g_id[0] ? cm__store_get(&g_srv.store, g_id) : NULL;
  if (s) {
    cm__store_release(&g_srv.store, &s);
    return;
  }
  const char *bar =
      "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2, \"bodies\":"
      " [{\"name\": \"bar\", \"mass\": 2, \"inertia\": 0.005, \"position\":"
      " [0, 0]}, {\"name\": \"ground\", \"fixed\": true}], \"contacts\": "
      "[{\"a\": \"bar\", \"b\": \"ground\", \"point\": [-0.1, 0], "
      "\"normal\": [0, 1], \"stiffness\": 1e5, \"name\": \"left\"}, {\"a\": "
      "\"bar\", \"b\": \"ground\", \"point\": [0.1, 0], \"normal\": [0, 1], "
      "\"stiffness\": 1e5}]}";
  cm__request_t req;
  cm__response_t r;
  memset(&req, 0, sizeof req);
  req.method = "POST";
  req.path = "/v1/scenes";
  req.body = bar;
  req.body_len = strlen(bar);
  cm__route(&g_srv, &req, &r);
  if (r.status == 201 && r.location[0])
    snprintf(g_id, sizeof g_id, "%s", r.location + strlen("/v1/scenes/"));
  free(r.body);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  cm__fuzz_server_init(&g_srv, 0);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *in = (const char *)data;
  const char *nl = memchr(in, '\n', size);
  size_t head = nl ? (size_t)(nl - in) : size;
  char *line = malloc(head + 64);
  if (!line)
    return 0;
  memcpy(line, in, head);
  line[head] = 0;
  char *sp = strchr(line, ' ');
  const char *method = "GET";
  char *target = line;
  if (sp) {
    *sp = 0;
    method = line;
    target = sp + 1;
  }
  /* "/v1/scenes/@rest" -> the stored scene's id */
  char *path = malloc(strlen(target) + 40);
  if (!path) {
    free(line);
    return 0;
  }
  if (!strncmp(target, "/v1/scenes/@", 12)) {
    session_ensure();
    snprintf(path, strlen(target) + 40, "/v1/scenes/%s%s", g_id, target + 12);
  } else {
    snprintf(path, strlen(target) + 40, "%s", target);
  }
  cm__request_t req;
  memset(&req, 0, sizeof req);
  req.method = method;
  req.path = path;
  req.check_auth = 0;
  char *q = strchr(path, '?');
  int st = 0;
  if (q) {
    *q++ = 0;
    st = cm__query_parse(q, &req);
    if (st)
      req.query_dropped = 1;
  }
  req.body = nl ? nl + 1 : "";
  req.body_len = nl ? size - head - 1 : 0;
  cm__response_t r;
  cm__route(&g_srv, &req, &r);
  answer_check(&r);
  free(r.body);
  free(path);
  free(line);
  cm__store_expire(&g_srv.store, cm__now());
  return 0;
}
