/* scene_bin.c: the compact binary scene format (docs/scene-format.md,
 * "Binary scenes"): fixed-size little-endian records that read at disk
 * speed, for scenes with millions of contacts where JSON parsing would cost
 * more than the analysis. Same content as JSON except names and meta;
 * version 2 (written only for scenes with version 2 values) adds the deck's
 * time step after the header and three doubles to each contact. Not for
 * hand-written scenes (use JSON). */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CM__BIN_MAGIC "CMSCENE1" /* 8 bytes */

typedef struct {
  char magic[8];      /* CM__BIN_MAGIC */
  uint32_t version;   /* 1 or 2 */
  uint32_t dim;       /* 2 or 3 */
  uint64_t nbodies;   /* body records that follow */
  uint64_t ncontacts; /* contact records after the bodies */
} cm__bin_head_t;

typedef struct {
  uint64_t fixed;        /* 0 or 1 */
  double mass;           /* kg */
  double inertia[9];     /* body frame, row-major (2D: [0]) */
  double position[3];    /* m */
  double orientation[4]; /* w, x, y, z */
} cm__bin_body_t;        /* 144 bytes */

typedef struct {
  int64_t a, b;      /* body indices; b = -1: the world */
  double point[3];   /* m */
  double normal[3];  /* unit, b -> a */
  double stiffness;  /* N/m */
} cm__bin_contact_t; /* 72 bytes */

typedef struct {
  cm__bin_contact_t v1; /* as in version 1 */
  double stiffness_t;   /* N/m */
  double damping_n;     /* N s/m */
  double damping_t;     /* N s/m */
  uint64_t has_arms;    /* 0 or 1 */
  double arm_a[3];      /* m, world frame */
  double arm_b[3];      /* m */
} cm__bin_contact2_t;   /* 152 bytes */

int cm__scene_is_binary(const char *buf, size_t len) {
  return len >= 8 && memcmp(buf, CM__BIN_MAGIC, 8) == 0;
}

static int cm__little_endian(void) {
  const uint16_t one = 1;
  return *(const uint8_t *)&one == 1;
}

int cm__scene_parse_binary(cm_context_t *ctx, const char *buf, size_t len,
                           const char *source, cm_scene_t **out) {
  *out = NULL;
  /* ---- check inputs ---- */
  if (!cm__little_endian())
    return CM__ERR(ctx, CM_IO, source,
                   "%s: binary scenes are little-endian; this machine is not",
                   source);
  cm__bin_head_t h;
  if (len < sizeof h)
    return CM__ERR(ctx, CM_PARSE, source,
                   "%s: truncated binary scene (%zu bytes, header needs %zu)",
                   source, len, sizeof h);
  memcpy(&h, buf, sizeof h);
  if ((h.version != 1 && h.version != 2) || (h.dim != 2 && h.dim != 3))
    return CM__ERR(ctx, CM_PARSE, source,
                   "%s: binary scene version %u, dim %u: expected version 1 "
                   "or 2 and dim 2 or 3",
                   source, h.version, h.dim);
  if (h.nbodies > (uint64_t)INT32_MAX || h.ncontacts > (uint64_t)INT32_MAX)
    return CM__ERR(ctx, CM_LIMIT, source,
                   "%s: %llu bodies and %llu contacts: at most 2^31 - 1 each",
                   source, (unsigned long long)h.nbodies,
                   (unsigned long long)h.ncontacts);
  int v2 = h.version == 2;
  size_t crec = v2 ? sizeof(cm__bin_contact2_t) : sizeof(cm__bin_contact_t);
  size_t need = sizeof h + (v2 ? sizeof(double) : 0) +
                (size_t)h.nbodies * sizeof(cm__bin_body_t) +
                (size_t)h.ncontacts * crec;
  if (len != need)
    return CM__ERR(ctx, CM_PARSE, source,
                   "%s: %zu bytes, but %llu bodies and %llu contacts take "
                   "%zu: the file is truncated or has trailing data",
                   source, len, (unsigned long long)h.nbodies,
                   (unsigned long long)h.ncontacts, need);
  /* ---- allocate ---- */
  cm_scene_t *s = cm_scene_create((int)h.dim);
  int nb = (int)h.nbodies, nc = (int)h.ncontacts;
  if (s) {
    s->bodies = malloc(sizeof(cm_body_t) * ((size_t)nb + 1));
    s->body_name = malloc(sizeof(long) * ((size_t)nb + 1));
    s->contacts =
        calloc((size_t)nc + 1, sizeof(cm_contact_t)); /* padding too */
    s->contact_name = malloc(sizeof(long) * ((size_t)nc + 1));
  }
  if (!s || !s->bodies || !s->body_name || !s->contacts || !s->contact_name) {
    cm_scene_destroy(&s);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory reading %s", source);
  }
  s->body_cap = nb + 1, s->contact_cap = nc + 1;
  cm__huge_pages(s->bodies, sizeof(cm_body_t) * ((size_t)nb + 1));
  cm__huge_pages(s->contacts, sizeof(cm_contact_t) * ((size_t)nc + 1));
  /* ---- copy records (bounds checked by cm_scene_validate) ---- */
  const char *p = buf + sizeof h;
  if (v2) {
    memcpy(&s->timestep_s, p, sizeof(double));
    p += sizeof(double);
  }
  /* the records are independent: copied on all threads (the bodies' and
   * contacts' fresh pages first written there too) */
  int threads = cm__threads(ctx);
#pragma omp parallel for schedule(static)                                      \
    num_threads(threads) if (nb > CM__PAR_MIN)
  for (int i = 0; i < nb; i++) {
    cm__bin_body_t rb;
    memcpy(&rb, p + (size_t)i * sizeof rb, sizeof rb);
    cm_body_t *b = &s->bodies[i];
    b->fixed = rb.fixed != 0;
    b->mass = rb.mass;
    memcpy(b->inertia, rb.inertia, sizeof b->inertia);
    memcpy(b->position, rb.position, sizeof b->position);
    memcpy(b->orientation, rb.orientation, sizeof b->orientation);
    s->body_name[i] = -1;
  }
  p += (size_t)nb * sizeof(cm__bin_body_t);
#pragma omp parallel for schedule(static)                                      \
    num_threads(threads) if (nc > CM__PAR_MIN)
  for (int i = 0; i < nc; i++) {
    cm__bin_contact2_t r2 = {0};
    memcpy(&r2, p + (size_t)i * crec, crec);
    const cm__bin_contact_t rc = r2.v1;
    cm_contact_t *c = &s->contacts[i];
    c->stiffness_t = r2.stiffness_t;
    c->damping_n = r2.damping_n;
    c->damping_t = r2.damping_t;
    c->has_arms = r2.has_arms != 0;
    memcpy(c->arm_a, r2.arm_a, sizeof c->arm_a);
    memcpy(c->arm_b, r2.arm_b, sizeof c->arm_b);
    c->a = rc.a >= INT32_MIN && rc.a <= INT32_MAX ? (int)rc.a : -2;
    c->b = rc.b >= INT32_MIN && rc.b <= INT32_MAX ? (int)rc.b : -2;
    memcpy(c->point, rc.point, sizeof c->point);
    memcpy(c->normal, rc.normal, sizeof c->normal);
    c->stiffness = rc.stiffness;
    s->contact_name[i] = -1;
  }
  s->nbodies = nb, s->ncontacts = nc;
  int st = cm_scene_validate(ctx, s);
  if (st) {
    char msg[sizeof ctx->message + 300];
    snprintf(msg, sizeof msg, "%s: %s", source, ctx->message);
    msg[sizeof ctx->message - 1] = 0;
    memcpy(ctx->message, msg, sizeof ctx->message);
    cm_scene_destroy(&s);
    return st;
  }
  *out = s;
  return CM_OK;
}

int cm_scene_write_binary(cm_context_t *ctx, const cm_scene_t *s, FILE *f) {
  if (!cm__little_endian())
    return CM__ERR(ctx, CM_IO, NULL, "binary scenes are little-endian");
  cm__bin_head_t h;
  memcpy(h.magic, CM__BIN_MAGIC, 8);
  int v2 = cm__scene_is_v2(s);
  h.version = v2 ? 2 : 1, h.dim = (uint32_t)s->dim;
  h.nbodies = (uint64_t)s->nbodies, h.ncontacts = (uint64_t)s->ncontacts;
  fwrite(&h, sizeof h, 1, f);
  if (v2)
    fwrite(&s->timestep_s, sizeof(double), 1, f);
  for (int i = 0; i < s->nbodies; i++) {
    const cm_body_t *b = &s->bodies[i];
    cm__bin_body_t rb;
    memset(&rb, 0, sizeof rb);
    rb.fixed = b->fixed ? 1 : 0;
    rb.mass = b->mass;
    memcpy(rb.inertia, b->inertia, sizeof rb.inertia);
    memcpy(rb.position, b->position, sizeof rb.position);
    memcpy(rb.orientation, b->orientation, sizeof rb.orientation);
    fwrite(&rb, sizeof rb, 1, f);
  }
  for (int i = 0; i < s->ncontacts; i++) {
    const cm_contact_t *c = &s->contacts[i];
    cm__bin_contact2_t r2;
    memset(&r2, 0, sizeof r2);
    cm__bin_contact_t *rc = &r2.v1;
    rc->a = c->a, rc->b = c->b;
    memcpy(rc->point, c->point, sizeof rc->point);
    memcpy(rc->normal, c->normal, sizeof rc->normal);
    rc->stiffness = c->stiffness;
    r2.stiffness_t = c->stiffness_t;
    r2.damping_n = c->damping_n;
    r2.damping_t = c->damping_t;
    r2.has_arms = c->has_arms ? 1 : 0;
    memcpy(r2.arm_a, c->arm_a, sizeof r2.arm_a);
    memcpy(r2.arm_b, c->arm_b, sizeof r2.arm_b);
    fwrite(&r2, v2 ? sizeof r2 : sizeof *rc, 1, f);
  }
  if (ferror(f))
    return CM__ERR(ctx, CM_IO, NULL, "error writing the binary scene: %s",
                   strerror(errno));
  return CM_OK;
}
