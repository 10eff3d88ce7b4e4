/* yajl_reader.c: yajl 2's streaming parser (callbacks) on a scene, in the
 * two modes of parsers.h. */
#include "parsers.h"

#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

enum {
  K_OTHER,
  K_DIM,
  K_BODIES,
  K_CONTACTS,
  K_FIXED,
  K_MASS,
  K_POSITION,
  K_INERTIA,
  K_ORIENTATION,
  K_A,
  K_B,
  K_POINT,
  K_NORMAL,
  K_STIFFNESS
};

#define MAXD 16

typedef struct {
  int mode;
  double sum;
  int depth; /* containers open */
  int is_array[MAXD];
  int next[MAXD]; /* next child index of the array at each depth */
  int cur[MAXD];  /* index of the current child in that array */
  int key[MAXD];  /* last key of the object at each depth */
  int dim, bad;
  cm_scene_t *scene;
  cm_context_t ctx;
  cm_body_t body;
  cm_contact_t contact;
} ys_t;

static int key_id(const unsigned char *s, size_t n) {
  static const char *names[] = {
      "",     "dim",      "bodies",  "contacts",    "fixed",
      "mass", "position", "inertia", "orientation", "a",
      "b",    "point",    "normal",  "stiffness"};
  for (int k = 1; k < (int)(sizeof names / sizeof *names); k++)
    if (strlen(names[k]) == n && !memcmp(names[k], s, n))
      return k;
  return K_OTHER;
}

/* A value starts at the current depth: inside an array it takes the next
 * index. */
static void value_start(ys_t *y) {
  if (y->depth > 0 && y->is_array[y->depth])
    y->cur[y->depth] = y->next[y->depth]++;
}

/* The section (bodies or contacts) the value at depth >= 3 belongs to. */
static int section(const ys_t *y) {
  return y->depth >= 3 ? y->key[1] : K_OTHER;
}

static void number(ys_t *y, double v) {
  value_start(y);
  y->sum += v;
  if (y->mode != CM_BENCH_SCENE)
    return;
  int sec = section(y), d = y->depth;
  if (d == 1 && y->key[1] == K_DIM) {
    y->dim = (int)v;
    return;
  }
  if (sec == K_BODIES) {
    cm_body_t *b = &y->body;
    int k = y->key[3];
    if (d == 3 && k == K_MASS)
      b->mass = v;
    else if (d == 4 && k == K_POSITION && y->cur[4] < 3)
      b->position[y->cur[4]] = v;
    else if (d == 4 && k == K_ORIENTATION && y->cur[4] < 4)
      b->orientation[y->cur[4]] = v;
    else if (d == 5 && k == K_INERTIA && y->cur[4] < 3 && y->cur[5] < 3)
      b->inertia[3 * y->cur[4] + y->cur[5]] = v;
    else if (d == 3 && k == K_INERTIA)
      b->inertia[0] = v; /* 2D: the scalar */
  } else if (sec == K_CONTACTS) {
    cm_contact_t *c = &y->contact;
    int k = y->key[3];
    if (d == 3 && k == K_A)
      c->a = (int)v;
    else if (d == 3 && k == K_B)
      c->b = (int)v;
    else if (d == 3 && k == K_STIFFNESS)
      c->stiffness = v;
    else if (d == 4 && k == K_POINT && y->cur[4] < 3)
      c->point[y->cur[4]] = v;
    else if (d == 4 && k == K_NORMAL && y->cur[4] < 3)
      c->normal[y->cur[4]] = v;
  }
}

static int cb_integer(void *u, long long v) {
  number(u, (double)v);
  return 1;
}

static int cb_double(void *u, double v) {
  number(u, v);
  return 1;
}

static int cb_boolean(void *u, int v) {
  ys_t *y = u;
  value_start(y);
  if (y->mode == CM_BENCH_SCENE && section(y) == K_BODIES && y->depth == 3 &&
      y->key[3] == K_FIXED)
    y->body.fixed = v;
  return 1;
}

static int cb_null(void *u) {
  ys_t *y = u;
  value_start(y);
  if (y->mode == CM_BENCH_SCENE && section(y) == K_CONTACTS && y->depth == 3 &&
      (y->key[3] == K_A || y->key[3] == K_B))
    *(y->key[3] == K_A ? &y->contact.a : &y->contact.b) = CM_WORLD;
  return 1;
}

static int cb_string(void *u, const unsigned char *s, size_t n) {
  (void)s, (void)n; /* names (of bodies, of a or b) are not read here */
  value_start(u);
  return 1;
}

static int cb_key(void *u, const unsigned char *s, size_t n) {
  ys_t *y = u;
  y->key[y->depth] = key_id(s, n);
  return 1;
}

static int open_container(ys_t *y, int array) {
  value_start(y);
  if (++y->depth >= MAXD)
    return 0;
  y->is_array[y->depth] = array;
  y->next[y->depth] = 0;
  y->key[y->depth] = K_OTHER;
  if (y->mode == CM_BENCH_SCENE && !array && y->depth == 3) {
    if (!y->scene && !(y->scene = cm_scene_create(y->dim ? y->dim : 3)))
      return 0;
    if (y->key[1] == K_BODIES)
      cm_body_init(&y->body);
    else if (y->key[1] == K_CONTACTS)
      cm_contact_init(&y->contact);
  }
  return 1;
}

static int cb_start_map(void *u) { return open_container(u, 0); }

static int cb_start_array(void *u) { return open_container(u, 1); }

static int cb_end_map(void *u) {
  ys_t *y = u;
  if (y->mode == CM_BENCH_SCENE && y->depth == 3) {
    int st = 0;
    if (y->key[1] == K_BODIES)
      st = cm_scene_add_body(&y->ctx, y->scene, &y->body, NULL);
    else if (y->key[1] == K_CONTACTS)
      st = cm_scene_add_contact(&y->ctx, y->scene, &y->contact, NULL);
    if (st < 0)
      return y->bad = 1, 0;
  }
  y->depth--;
  return 1;
}

static int cb_end_array(void *u) {
  ((ys_t *)u)->depth--;
  return 1;
}

int cm_bench_yajl(const char *text, size_t len, int mode, double *sum,
                  cm_scene_t **out) {
  static const yajl_callbacks cbs = {cb_null,        cb_boolean,  cb_integer,
                                     cb_double,      NULL,        cb_string,
                                     cb_start_map,   cb_key,      cb_end_map,
                                     cb_start_array, cb_end_array};
  ys_t *y = calloc(1, sizeof *y);
  if (!y)
    return 1;
  y->mode = mode;
  cm_context_init(&y->ctx);
  yajl_handle h = yajl_alloc(&cbs, NULL, y);
  int ok = h &&
           yajl_parse(h, (const unsigned char *)text, len) == yajl_status_ok &&
           yajl_complete_parse(h) == yajl_status_ok;
  if (h)
    yajl_free(h);
  if (ok && mode == CM_BENCH_SCENE)
    ok = y->scene && cm_scene_validate(&y->ctx, y->scene) == CM_OK;
  *sum = y->sum;
  if (ok && out)
    *out = y->scene;
  else
    cm_scene_destroy(&y->scene);
  free(y);
  return ok ? 0 : 1;
}
