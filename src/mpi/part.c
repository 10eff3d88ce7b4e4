/* part.c: the partitioned scene layout (part.h, docs/distributed.md): the
 * writer (serial: `cmodes-mpi convert`), positioned reads of one rank's part,
 * the labels of the report and the partition into contiguous body ranges. */
#define _FILE_OFFSET_BITS 64
#include "part.h"

#include "mpi_alloc.h" /* last: malloc, calloc, realloc tracked */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- writer --------------------------------------------------- */

typedef struct {
  int comp;  /* component, ncomp for free moving, ncomp + 1 for fixed */
  int first; /* first column in the serial assembly (INT32_MAX none) */
  int index; /* scene index */
} cm__border_t;

static int cm__border_cmp(const void *pa, const void *pb) {
  const cm__border_t *a = pa, *b = pb;
  if (a->comp != b->comp)
    return a->comp < b->comp ? -1 : 1;
  if (a->first != b->first)
    return a->first < b->first ? -1 : 1;
  return a->index - b->index;
}

typedef struct {
  int64_t owner; /* position of the owning body */
  int index;     /* scene index */
} cm__corder_t;

static int cm__corder_cmp(const void *pa, const void *pb) {
  const cm__corder_t *a = pa, *b = pb;
  if (a->owner != b->owner)
    return a->owner < b->owner ? -1 : 1;
  return a->index - b->index;
}

static int cm__fwrite(FILE *out, const void *p, size_t size, size_t n) {
  return n == 0 || fwrite(p, size, n, out) == n;
}

/* Writes the name-end array and the pool of n names (get(i) or NULL). */
static int cm__write_names(FILE *out, const cm_scene_t *s, int n,
                           const int *order, int bodies, uint64_t *pool_len) {
  uint64_t end = 0;
  for (int i = 0; i < n; i++) {
    const char *nm = bodies ? cm_scene_body_name(s, order[i])
                            : cm_scene_contact_name(s, order[i]);
    end += nm ? strlen(nm) : 0;
    if (!cm__fwrite(out, &end, sizeof end, 1))
      return 0;
  }
  *pool_len = end;
  for (int i = 0; i < n; i++) {
    const char *nm = bodies ? cm_scene_body_name(s, order[i])
                            : cm_scene_contact_name(s, order[i]);
    if (nm && !cm__fwrite(out, nm, 1, strlen(nm)))
      return 0;
  }
  return 1;
}

/* The body records in the file's order (border: scene index of each). */
static int cm__write_bodies(FILE *out, const cm_scene_t *s, int nb,
                            const int *border) {
  int ok = 1;
  for (int p = 0; ok && p < nb; p++) {
    const cm_body_t *b = &s->bodies[border[p]];
    cm__part_body_t r;
    memset(&r, 0, sizeof r);
    r.fixed = b->fixed != 0, r.mass = b->mass;
    memcpy(r.inertia, b->inertia, sizeof r.inertia);
    memcpy(r.position, b->position, sizeof r.position);
    memcpy(r.orientation, b->orientation, sizeof r.orientation);
    ok = cm__fwrite(out, &r, sizeof r, 1);
  }
  return ok;
}

/* The contact records in the file's order, bodies as positions (pos). */
static int cm__write_contacts(FILE *out, const cm_scene_t *s, int nc,
                              const int *corder, const int64_t *pos) {
  int ok = 1;
  for (int i = 0; ok && i < nc; i++) {
    const cm_contact_t *ct = &s->contacts[corder[i]];
    cm__part_contact_t r;
    memset(&r, 0, sizeof r);
    r.a = pos[ct->a], r.b = ct->b == CM_WORLD ? -1 : pos[ct->b];
    memcpy(r.point, ct->point, sizeof r.point);
    memcpy(r.normal, ct->normal, sizeof r.normal);
    r.stiffness = ct->stiffness, r.stiffness_t = ct->stiffness_t;
    r.damping_n = ct->damping_n, r.damping_t = ct->damping_t;
    r.has_arms = ct->has_arms != 0;
    memcpy(r.arm_a, ct->arm_a, sizeof r.arm_a);
    memcpy(r.arm_b, ct->arm_b, sizeof r.arm_b);
    ok = cm__fwrite(out, &r, sizeof r, 1);
  }
  return ok;
}

/* A dashpot alone (stiffness 0) is refused: the cut components' rows
 * (rank.c, vectors.c) count every contact as springs. */
static int cm__part_no_drag(cm_context_t *ctx, const cm_scene_t *s) {
  for (int i = 0; i < s->ncontacts; i++)
    if (!(s->contacts[i].stiffness > 0)) {
      char where[48];
      snprintf(where, sizeof where, "contacts[%d].stiffness", i);
      return CM__ERR(ctx, CM_INVALID_SCENE, where,
                     "%s: 0, a dashpot alone (a drag such as LAMMPS' fix "
                     "viscous): cmodes-mpi does not take these yet; analyse "
                     "the scene with cmodes analyze",
                     where);
    }
  return CM_OK;
}

int cm__part_write(cm_context_t *ctx, const cm_scene_t *s, const char *path) {
  cm_system_t *sys = NULL;
  int st = cm_system_assemble(ctx, s, &sys); /* validates, components */
  if (st)
    return st;
  if ((st = cm__part_no_drag(ctx, s))) {
    cm_system_destroy(&sys);
    return st;
  }
  int nb = s->nbodies, nc = s->ncontacts, ncomp = sys->ncomp;
  cm__border_t *bo = malloc(sizeof *bo * ((size_t)nb + 1));
  cm__corder_t *co = malloc(sizeof *co * ((size_t)nc + 1));
  int64_t *pos = malloc(sizeof *pos * ((size_t)nb + 1));
  int *border = malloc(sizeof(int) * ((size_t)nb + 1));
  int *corder = malloc(sizeof(int) * ((size_t)nc + 1));
  uint64_t *bcs = calloc((size_t)nb + 2, sizeof(uint64_t));
  uint64_t *comp = calloc(2 * ((size_t)ncomp + 1), sizeof(uint64_t));
  FILE *out = NULL;
  if (!bo || !co || !pos || !border || !corder || !bcs || !comp) {
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory converting the scene");
    goto done;
  }
  /* ---- bodies: (component, first column, index) ----------------- */
  for (int b = 0; b < nb; b++) {
    int c = sys->body_comp[b];
    bo[b].comp = s->bodies[b].fixed ? ncomp + 1 : c >= 0 ? c : ncomp;
    bo[b].first = INT32_MAX;
    bo[b].index = b;
  }
  for (int j = sys->n - 1; j >= 0; j--)
    bo[sys->col_body[j]].first = j;
  qsort(bo, (size_t)nb, sizeof *bo, cm__border_cmp);
  int ncb = 0;
  for (int p = 0; p < nb; p++) {
    pos[bo[p].index] = p;
    border[p] = bo[p].index;
    ncb += bo[p].comp < ncomp;
  }
  /* ---- contacts: by owner, the moving side of lower position ---- */
  long nrows = 0;
  for (int i = 0; i < nc; i++) {
    const cm_contact_t *ct = &s->contacts[i];
    int64_t pa = s->bodies[ct->a].fixed ? INT64_MAX : pos[ct->a];
    int64_t pb =
        ct->b == CM_WORLD || s->bodies[ct->b].fixed ? INT64_MAX : pos[ct->b];
    co[i].owner = pa < pb ? pa : pb;
    co[i].index = i;
    nrows += cm__contact_nrows(s->dim, ct, 0);
  }
  qsort(co, (size_t)nc, sizeof *co, cm__corder_cmp);
  for (int i = 0; i < nc; i++) {
    corder[i] = co[i].index;
    bcs[co[i].owner + 1]++;
  }
  for (int b = 0; b < nb; b++)
    bcs[b + 1] += bcs[b];
  for (int c = 0, p = 0; c <= ncomp; c++) {
    while (p < nb && bo[p].comp < c)
      p++;
    comp[2 * c] = (uint64_t)p;
    comp[2 * c + 1] = bcs[p];
  }
  /* ---- header --------------------------------------------------- */
  cm__part_head_t h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, CM__PART_MAGIC, 8);
  h.version = 1, h.dim = (uint32_t)s->dim;
  h.nbodies = (uint64_t)nb, h.ncontacts = (uint64_t)nc;
  h.ncomp = (uint64_t)ncomp, h.ncompbodies = (uint64_t)ncb;
  h.nrows = (uint64_t)nrows, h.timestep = s->timestep_s;
  h.off_bodies = sizeof h;
  h.off_borig = h.off_bodies + (uint64_t)nb * sizeof(cm__part_body_t);
  h.off_bcstart = h.off_borig + (uint64_t)nb * 8;
  h.off_contacts = h.off_bcstart + ((uint64_t)nb + 1) * 8;
  h.off_corig = h.off_contacts + (uint64_t)nc * sizeof(cm__part_contact_t);
  h.off_comp = h.off_corig + (uint64_t)nc * 8;
  h.off_bname = h.off_comp + 2 * ((uint64_t)ncomp + 1) * 8;
  out = fopen(path, "wb");
  if (!out) {
    st = CM__ERR(ctx, CM_IO, path, "%s: cannot write: %s", path,
                 strerror(errno));
    goto done;
  }
  int ok = cm__fwrite(out, &h, sizeof h, 1);
  ok = ok && cm__write_bodies(out, s, nb, border);
  for (int p = 0; ok && p < nb; p++) {
    int64_t v = border[p];
    ok = cm__fwrite(out, &v, sizeof v, 1);
  }
  ok = ok && cm__fwrite(out, bcs, sizeof(uint64_t), (size_t)nb + 1);
  ok = ok && cm__write_contacts(out, s, nc, corder, pos);
  for (int i = 0; ok && i < nc; i++) {
    int64_t v = corder[i];
    ok = cm__fwrite(out, &v, sizeof v, 1);
  }
  ok = ok && cm__fwrite(out, comp, sizeof(uint64_t), 2 * ((size_t)ncomp + 1));
  uint64_t blen = 0, clen = 0;
  ok = ok && cm__write_names(out, s, nb, border, 1, &blen);
  h.off_bpool = h.off_bname + (uint64_t)nb * 8;
  h.off_cname = h.off_bpool + blen;
  ok = ok && cm__write_names(out, s, nc, corder, 0, &clen);
  h.off_cpool = h.off_cname + (uint64_t)nc * 8;
  h.file_size = h.off_cpool + clen;
  ok = ok && fseek(out, 0, SEEK_SET) == 0 && cm__fwrite(out, &h, sizeof h, 1);
  if (fclose(out) != 0 || !ok) {
    out = NULL;
    st = CM__ERR(ctx, CM_IO, path, "%s: write failed: %s", path,
                 strerror(errno));
    goto done;
  }
  out = NULL;
done:
  if (out)
    fclose(out);
  free(bo), free(co), free(pos), free(border), free(corder), free(bcs);
  free(comp);
  cm_system_destroy(&sys);
  return st;
}

/* ---- reader --------------------------------------------------- */

static int cm__little_endian(void) {
  const uint16_t one = 1;
  return *(const uint8_t *)&one == 1;
}

int cm__part_read(cm_context_t *ctx, const cm__part_file_t *f, uint64_t off,
                  uint64_t first, uint64_t count, size_t size, void *out) {
  size_t n = (size_t)count * size;
  off_t at = (off_t)(off + first * size);
  char *p = out;
  while (n > 0) {
    ssize_t got = pread(f->fd, p, n, at);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return CM__ERR(ctx, CM_IO, f->path,
                     "%s: read of %zu bytes at offset %lld failed: %s", f->path,
                     n, (long long)at,
                     got < 0 ? strerror(errno) : "unexpected end of file");
    p += got, n -= (size_t)got, at += got;
  }
  return CM_OK;
}

void cm__part_close(cm__part_file_t *f) {
  if (f->fd >= 0)
    close(f->fd);
  f->fd = -1;
  free(f->comp);
  f->comp = NULL;
}

int cm__part_open(cm_context_t *ctx, const char *path, cm__part_file_t *f) {
  memset(f, 0, sizeof *f);
  f->path = path;
  f->fd = open(path, O_RDONLY);
  if (f->fd < 0)
    return CM__ERR(ctx, errno == ENOENT ? CM_NOT_FOUND : CM_IO, path,
                   "%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  int st = fstat(f->fd, &sb)
               ? CM__ERR(ctx, CM_IO, path, "%s: %s", path, strerror(errno))
           : S_ISDIR(sb.st_mode)
               ? CM__ERR(ctx, CM_IO, path, "%s: cannot open: %s", path,
                         strerror(EISDIR))
               : CM_OK;
  char magic[8] = {0};
  if (!st && (size_t)sb.st_size >= 8)
    st = cm__part_read(ctx, f, 0, 0, 8, 1, magic);
  if (!st && memcmp(magic, CM__PART_MAGIC, 8) != 0)
    st = CM__ERR(ctx, CM_PARSE, path,
                 "%s: not a partitioned scene (no %s magic): write one with "
                 "'cmodes-mpi convert %s SCENE.cmpart'",
                 path, CM__PART_MAGIC, path);
  if (!st && !cm__little_endian())
    st = CM__ERR(ctx, CM_IO, path, "%s: the layout is little-endian", path);
  if (!st && (size_t)sb.st_size < sizeof f->h)
    st = CM__ERR(ctx, CM_PARSE, path, "%s: truncated header", path);
  if (!st)
    st = cm__part_read(ctx, f, 0, 0, 1, sizeof f->h, &f->h);
  const cm__part_head_t *h = &f->h;
  if (!st && (h->version != 1 || (h->dim != 2 && h->dim != 3)))
    st = CM__ERR(ctx, CM_PARSE, path,
                 "%s: version %u, dim %u: expected 1 "
                 "and 2 or 3",
                 path, h->version, h->dim);
  if (!st && (h->nbodies > INT32_MAX || h->ncontacts > INT32_MAX ||
              h->ncomp > h->nbodies || h->ncompbodies > h->nbodies))
    st = CM__ERR(ctx, CM_LIMIT, path, "%s: counts out of range", path);
  if (!st &&
      (h->file_size != (uint64_t)sb.st_size || h->off_bodies != sizeof *h ||
       h->off_borig != h->off_bodies + h->nbodies * 144 ||
       h->off_bcstart != h->off_borig + h->nbodies * 8 ||
       h->off_contacts != h->off_bcstart + (h->nbodies + 1) * 8 ||
       h->off_corig != h->off_contacts + h->ncontacts * 152 ||
       h->off_comp != h->off_corig + h->ncontacts * 8 ||
       h->off_bname != h->off_comp + (h->ncomp + 1) * 16 ||
       h->off_bpool != h->off_bname + h->nbodies * 8 ||
       h->off_cname < h->off_bpool ||
       h->off_cpool != h->off_cname + h->ncontacts * 8 ||
       h->off_cpool > h->file_size))
    st = CM__ERR(ctx, CM_PARSE, path,
                 "%s: %lld bytes: the section offsets do not match the "
                 "counts (truncated or not written by cmodes-mpi convert)",
                 path, (long long)sb.st_size);
  if (!st) {
    f->comp = malloc(sizeof(uint64_t) * 2 * ((size_t)h->ncomp + 1));
    st = f->comp ? cm__part_read(ctx, f, h->off_comp, 0, 2 * (h->ncomp + 1), 8,
                                 f->comp)
                 : CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  for (uint64_t c = 0; !st && c < h->ncomp; c++)
    if (f->comp[2 * c] > f->comp[2 * c + 2] ||
        f->comp[2 * c + 1] > f->comp[2 * c + 3])
      st = CM__ERR(ctx, CM_PARSE, path, "%s: component table not sorted", path);
  if (!st && (f->comp[2 * h->ncomp] != h->ncompbodies ||
              f->comp[2 * h->ncomp + 1] != h->ncontacts))
    st = CM__ERR(ctx, CM_PARSE, path,
                 "%s: component table does not end at "
                 "the counts",
                 path);
  if (st)
    cm__part_close(f);
  return st;
}

/* Name p of a pool: ends at off_end, pool at off_pool; NULL if empty. */
static char *cm__part_name(const cm__part_file_t *f, uint64_t off_end,
                           uint64_t off_pool, int64_t p, int *named) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  uint64_t e[2] = {0, 0};
  *named = 0;
  if (p > 0 ? cm__part_read(&ctx, f, off_end, (uint64_t)p - 1, 2, 8, e)
            : cm__part_read(&ctx, f, off_end, 0, 1, 8, e + 1))
    return NULL;
  if (e[1] < e[0] || e[1] - e[0] > 1u << 20)
    return NULL;
  char *s = malloc(e[1] - e[0] + 1);
  if (!s || cm__part_read(&ctx, f, off_pool, e[0], e[1] - e[0], 1, s)) {
    free(s);
    return NULL;
  }
  s[e[1] - e[0]] = 0;
  *named = e[1] > e[0];
  return s;
}

char *cm__part_body_label(const cm__part_file_t *f, int64_t p) {
  if (p < 0)
    return cm__strdup("world");
  int named;
  char *s = cm__part_name(f, f->h.off_bname, f->h.off_bpool, p, &named);
  if (s && !named) {
    cm_context_t ctx;
    cm_context_init(&ctx);
    int64_t orig = 0;
    free(s);
    if (cm__part_read(&ctx, f, f->h.off_borig, (uint64_t)p, 1, 8, &orig))
      return NULL;
    char buf[32];
    snprintf(buf, sizeof buf, "#%lld", (long long)orig);
    return cm__strdup(buf);
  }
  return s;
}

char *cm__part_contact_name(const cm__part_file_t *f, int64_t p, int *named) {
  return cm__part_name(f, f->h.off_cname, f->h.off_cpool, p, named);
}

/* ---- partition ------------------------------------------------ */

int cm__part_comp_of(const cm__part_file_t *f, int64_t p) {
  int lo = 0, hi = (int)f->h.ncomp; /* comp[2 lo] <= p < comp[2 hi] */
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if ((int64_t)f->comp[2 * mid] <= p)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

int cm__part_cuts(cm_context_t *ctx, const cm__part_file_t *f, int np,
                  int64_t *cut) {
  uint64_t W = f->h.ncontacts, nb = f->h.ncompbodies;
  uint64_t share = (W + (uint64_t)np - 1) / (uint64_t)np;
  cut[0] = 0, cut[np] = (int64_t)nb;
  for (int r = 1; r < np; r++) {
    uint64_t t = W * (uint64_t)r / (uint64_t)np; /* contact position */
    int64_t at = cut[r - 1];
    if (W > 0 && f->h.ncomp > 0) {
      /* the component holding contact t */
      int lo = 0, hi = (int)f->h.ncomp;
      while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (f->comp[2 * mid + 1] <= t)
          lo = mid;
        else
          hi = mid;
      }
      uint64_t c0 = f->comp[2 * lo + 1], c1 = f->comp[2 * lo + 3];
      if (c1 - c0 <= share || c1 - c0 < CM__PART_MIN_SPAN) {
        at =
            (int64_t)(t - c0 <= c1 - t ? f->comp[2 * lo] : f->comp[2 * lo + 2]);
      } else { /* cut inside: the body whose contacts hold t */
        int64_t blo = (int64_t)f->comp[2 * lo],
                bhi = (int64_t)f->comp[2 * lo + 2];
        while (bhi - blo > 1) { /* bcstart[blo] <= t < bcstart[bhi] */
          int64_t mid = (blo + bhi) / 2;
          uint64_t v;
          int st =
              cm__part_read(ctx, f, f->h.off_bcstart, (uint64_t)mid, 1, 8, &v);
          if (st)
            return st;
          if (v <= t)
            blo = mid;
          else
            bhi = mid;
        }
        at = blo > (int64_t)f->comp[2 * lo] ? blo : blo + 1;
      }
    }
    cut[r] = at > cut[r - 1] ? at : cut[r - 1];
    if (cut[r] > (int64_t)nb)
      cut[r] = (int64_t)nb;
  }
  return CM_OK;
}
