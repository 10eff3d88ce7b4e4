/* scene_json_internal.h: the parts of the JSON scene reader shared by its
 * two front ends, the streaming reader of text (scene_stream.c) and the
 * reader of a parsed jansson tree (scene_json.c, for the server's patches
 * and its stdio transport). Both fill one "record" per object (the values
 * of its known keys, captured as cm__jv_t) and hand it to the same checks,
 * so every message exists once. Not for other formats. */
#ifndef CM_SCENE_JSON_INTERNAL_H
#define CM_SCENE_JSON_INTERNAL_H

#include "internal.h"
#include "io/json_pull.h"

typedef struct {
  cm_context_t *ctx;  /* error sink */
  const char *source; /* input name for messages */
  int version;        /* the scene's format version (1 or 2) */
} cm__rd_t;

/* The keys of each kind of object, in the order the messages list them. */
enum {
  CM__BK_NAME,
  CM__BK_FIXED,
  CM__BK_MASS,
  CM__BK_INERTIA,
  CM__BK_POSITION,
  CM__BK_ORIENTATION,
  CM__BK_META,
  CM__BK_N
};
enum {
  CM__CK_NAME,
  CM__CK_A,
  CM__CK_B,
  CM__CK_POINT,
  CM__CK_NORMAL,
  CM__CK_STIFFNESS,
  CM__CK_STIFFNESS_T,
  CM__CK_DAMPING_N,
  CM__CK_DAMPING_T,
  CM__CK_ARM_A,
  CM__CK_ARM_B,
  CM__CK_META,
  CM__CK_N
};
enum {
  CM__RK_FORMAT,
  CM__RK_VERSION,
  CM__RK_DIM,
  CM__RK_BODIES,
  CM__RK_CONTACTS,
  CM__RK_META,
  CM__RK_NAME,
  CM__RK_TIMESTEP,
  CM__RK_N
};
extern const char *const cm__body_keys[];    /* NULL-terminated */
extern const char *const cm__contact_keys[]; /* NULL-terminated */
extern const char *const cm__root_keys[];    /* NULL-terminated */

/* One object: the values of its known keys (valid where the bit of
 * `present` is set) and its first unknown key (NULL if none). */
typedef struct {
  unsigned present;
  const char *unknown;
  cm__jv_t v[CM__CK_N];
} cm__rec_t;

/* The key's index in keys (NULL-terminated), or -1. */
int cm__key_index(const char *const *keys, const char *k, size_t n);

/* The checks, on records. Each returns CM_OK or the status of the error
 * it recorded in rd->ctx (messages "SOURCE: PATH: what"). */
int cm__rec_keys(cm__rd_t *rd, const cm__rec_t *rec, const char *arr, int i,
                 const char *const *keys);
int cm__rec_body(cm__rd_t *rd, cm_scene_t *s, const cm__rec_t *rec, int i);
int cm__rec_contact(cm__rd_t *rd, const cm_scene_t *s, const cm__rec_t *rec,
                    const char *arr, int i, cm_contact_t *out,
                    const char **name);
/* The top level: format, version, timestep and dim in this order (the
 * first error wins); sets rd->version, *dim and *timestep. */
int cm__rec_root_head(cm__rd_t *rd, const cm__rec_t *root, int *dim,
                      double *timestep);
/* The top-level "name" into s->name. */
int cm__rec_root_name(cm__rd_t *rd, const cm__rec_t *root, cm_scene_t *s);
int cm__scene_bad(cm__rd_t *rd, const char *path, const char *fmt,
                  const char *detail);
/* cm_scene_validate, its message prefixed with the source. */
int cm__scene_validate_named(cm__rd_t *rd, cm_scene_t *s);

#endif
