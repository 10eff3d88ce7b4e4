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
#include <unistd.h>

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

/* The header's checks, for a file or buffer of len bytes: its version and
 * dim, the counts, and a length that matches them. *crec: a contact
 * record's size. */
static int cm__bin_check(cm_context_t *ctx, const cm__bin_head_t *h, size_t len,
                         const char *source, size_t *crec) {
  if (!cm__little_endian())
    return CM__ERR(ctx, CM_IO, source,
                   "%s: binary scenes are little-endian; this machine is not",
                   source);
  if (len < sizeof *h)
    return CM__ERR(ctx, CM_PARSE, source,
                   "%s: truncated binary scene (%zu bytes, header needs %zu)",
                   source, len, sizeof *h);
  if ((h->version != 1 && h->version != 2) || (h->dim != 2 && h->dim != 3))
    return CM__ERR(ctx, CM_PARSE, source,
                   "%s: binary scene version %u, dim %u: expected version 1 "
                   "or 2 and dim 2 or 3",
                   source, h->version, h->dim);
  if (h->nbodies > (uint64_t)INT32_MAX || h->ncontacts > (uint64_t)INT32_MAX)
    return CM__ERR(ctx, CM_LIMIT, source,
                   "%s: %llu bodies and %llu contacts: at most 2^31 - 1 each",
                   source, (unsigned long long)h->nbodies,
                   (unsigned long long)h->ncontacts);
  int v2 = h->version == 2;
  *crec = v2 ? sizeof(cm__bin_contact2_t) : sizeof(cm__bin_contact_t);
  size_t need = sizeof *h + (v2 ? sizeof(double) : 0) +
                (size_t)h->nbodies * sizeof(cm__bin_body_t) +
                (size_t)h->ncontacts * *crec;
  if (len != need)
    return CM__ERR(ctx, CM_PARSE, source,
                   "%s: %zu bytes, but %llu bodies and %llu contacts take "
                   "%zu: the file is truncated or has trailing data",
                   source, len, (unsigned long long)h->nbodies,
                   (unsigned long long)h->ncontacts, need);
  return CM_OK;
}

/* The scene the header asks for, its arrays allocated (NULL: no memory). */
static cm_scene_t *cm__bin_alloc(const cm__bin_head_t *h) {
  cm_scene_t *s = cm_scene_create((int)h->dim);
  size_t nb = (size_t)h->nbodies, nc = (size_t)h->ncontacts;
  if (s) {
    s->bodies = malloc(sizeof(cm_body_t) * (nb + 1));
    s->body_name = malloc(sizeof(long) * (nb + 1));
    s->contacts = calloc(nc + 1, sizeof(cm_contact_t)); /* padding too */
    s->contact_name = malloc(sizeof(long) * (nc + 1));
  }
  if (!s || !s->bodies || !s->body_name || !s->contacts || !s->contact_name) {
    cm_scene_destroy(&s);
    return NULL;
  }
  s->body_cap = (int)nb + 1, s->contact_cap = (int)nc + 1;
  cm__huge_pages(s->bodies, sizeof(cm_body_t) * (nb + 1));
  cm__huge_pages(s->contacts, sizeof(cm_contact_t) * (nc + 1));
  return s;
}

/* Body records [i0, i0 + n) from p (bounds checked by cm_scene_validate).
 * The records are independent: copied on all threads (the bodies' and
 * contacts' fresh pages first written there too). */
static void cm__bin_bodies(cm_scene_t *s, const char *p, int i0, int n,
                           int threads) {
#pragma omp parallel for schedule(static)                                      \
    num_threads(threads) if (n > CM__PAR_MIN)
  for (int i = 0; i < n; i++) {
    cm__bin_body_t rb;
    memcpy(&rb, p + (size_t)i * sizeof rb, sizeof rb);
    cm_body_t *b = &s->bodies[i0 + i];
    b->fixed = rb.fixed != 0;
    b->mass = rb.mass;
    memcpy(b->inertia, rb.inertia, sizeof b->inertia);
    memcpy(b->position, rb.position, sizeof b->position);
    memcpy(b->orientation, rb.orientation, sizeof b->orientation);
    s->body_name[i0 + i] = -1;
  }
}

/* Contact records [i0, i0 + n) of crec bytes from p, as cm__bin_bodies. */
static void cm__bin_contacts(cm_scene_t *s, const char *p, size_t crec, int i0,
                             int n, int threads) {
#pragma omp parallel for schedule(static)                                      \
    num_threads(threads) if (n > CM__PAR_MIN)
  for (int i = 0; i < n; i++) {
    cm__bin_contact2_t r2 = {0};
    memcpy(&r2, p + (size_t)i * crec, crec);
    const cm__bin_contact_t rc = r2.v1;
    cm_contact_t *c = &s->contacts[i0 + i];
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
    s->contact_name[i0 + i] = -1;
  }
}

/* The filled scene's counts and validation; *out on success, else the
 * scene is destroyed and the error names the source. */
static int cm__bin_finish(cm_context_t *ctx, const cm__bin_head_t *h,
                          cm_scene_t *s, const char *source, cm_scene_t **out) {
  s->nbodies = (int)h->nbodies, s->ncontacts = (int)h->ncontacts;
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

int cm__scene_parse_binary(cm_context_t *ctx, const char *buf, size_t len,
                           const char *source, cm_scene_t **out) {
  *out = NULL;
  cm__bin_head_t h;
  memset(&h, 0, sizeof h);
  size_t crec = 0;
  memcpy(&h, buf, len < sizeof h ? len : sizeof h);
  int st = cm__bin_check(ctx, &h, len, source, &crec);
  if (st)
    return st;
  cm_scene_t *s = cm__bin_alloc(&h);
  if (!s)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory reading %s", source);
  const char *p = buf + sizeof h;
  if (h.version == 2) {
    memcpy(&s->timestep_s, p, sizeof(double));
    p += sizeof(double);
  }
  int threads = cm__threads(ctx), nb = (int)h.nbodies, nc = (int)h.ncontacts;
  cm__bin_bodies(s, p, 0, nb, threads);
  cm__bin_contacts(s, p + (size_t)nb * sizeof(cm__bin_body_t), crec, 0, nc,
                   threads);
  return cm__bin_finish(ctx, &h, s, source, out);
}

/* Bytes read at once by one thread of cm__scene_read_binary: the file goes
 * through one buffer of this size a thread, never held whole (a
 * 1e6-contact scene's 120 MB of fresh pages and of peak memory saved), and
 * each piece is converted while it is in the thread's cache. */
#define CM__BIN_CHUNK ((size_t)1 << 20)

/* Reads len bytes at off: 0, or an errno value (EIO: the file ended). */
static int cm__bin_pread(int fd, char *buf, size_t len, size_t off) {
  while (len) {
    ssize_t r = pread(fd, buf, len, (off_t)off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return r < 0 ? errno : EIO;
    buf += r, len -= (size_t)r, off += (size_t)r;
  }
  return 0;
}

/* The error of a read that cm__bin_pread answered with err. */
static int cm__bin_read_error(cm_context_t *ctx, int err, const char *source,
                              size_t len) {
  return err == EIO ? CM__ERR(ctx, CM_PARSE, source,
                              "%s: the file ended before its %zu bytes were "
                              "read (truncated while it was read?)",
                              source, len)
                    : CM__ERR(ctx, CM_IO, source, "%s: cannot read: %s", source,
                              strerror(err));
}

int cm__scene_read_binary(cm_context_t *ctx, FILE *f, size_t len,
                          const char *source, cm_scene_t **out) {
  *out = NULL;
  int fd = fileno(f);
  cm__bin_head_t h;
  memset(&h, 0, sizeof h);
  size_t crec = 0;
  int err = len >= sizeof h ? cm__bin_pread(fd, (char *)&h, sizeof h, 0) : 0;
  if (err)
    return cm__bin_read_error(ctx, err, source, len);
  int st = cm__bin_check(ctx, &h, len, source, &crec);
  if (st)
    return st;
  cm_scene_t *s = cm__bin_alloc(&h);
  if (!s)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory reading %s", source);
  size_t off = sizeof h;
  if (h.version == 2) {
    err = cm__bin_pread(fd, (char *)&s->timestep_s, sizeof(double), off);
    off += sizeof(double);
  }
  /* bodies, then contacts: whole records a piece, pieces spread over the
   * threads (the records are independent; each thread reads its own with
   * pread and converts them) */
  int nomem = 0, threads = cm__threads(ctx);
  for (int part = 0; !err && !nomem && part < 2; part++) {
    size_t rec = part ? crec : sizeof(cm__bin_body_t);
    long n = (long)(part ? h.ncontacts : h.nbodies),
         per = (long)(CM__BIN_CHUNK / rec), np = (n + per - 1) / per;
#pragma omp parallel num_threads(threads) if (np > 1)
    {
      char *buf = malloc(CM__BIN_CHUNK);
      int e = buf ? 0 : ENOMEM;
#pragma omp for schedule(static)
      for (long c = 0; c < np; c++) {
        long i0 = c * per;
        int k = (int)(n - i0 < per ? n - i0 : per);
        if (!e)
          e = cm__bin_pread(fd, buf, (size_t)k * rec, off + (size_t)i0 * rec);
        if (!e && part)
          cm__bin_contacts(s, buf, crec, (int)i0, k, 1);
        else if (!e)
          cm__bin_bodies(s, buf, (int)i0, k, 1);
      }
#pragma omp critical(cm__bin_read)
      {
        if (e == ENOMEM)
          nomem = 1;
        else if (e && !err)
          err = e;
      }
      free(buf);
    }
    off += (size_t)n * rec;
  }
  if (err || nomem) {
    cm_scene_destroy(&s);
    return nomem ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory reading %s",
                           source)
                 : cm__bin_read_error(ctx, err, source, len);
  }
  return cm__bin_finish(ctx, &h, s, source, out);
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
