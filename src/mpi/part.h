/* part.h: the partitioned scene layout of cmodes-mpi (docs/distributed.md):
 * fixed little-endian sections that let each rank read only its bodies and
 * contacts with positioned reads, and the per-rank reader and partition.
 * Not for the serial binary format (io/scene_bin.c). No MPI here. */
#ifndef CM_MPI_PART_H
#define CM_MPI_PART_H

#include "internal.h"

#include <stdint.h>

#define CM__PART_MAGIC "CMPART01" /* 8 bytes */

/* The header at offset 0 (no padding: every field 8 bytes after dim). */
typedef struct {
  char magic[8];        /* CM__PART_MAGIC */
  uint32_t version;     /* 1 */
  uint32_t dim;         /* 2 or 3 */
  uint64_t nbodies;     /* all bodies */
  uint64_t ncontacts;   /* all contacts */
  uint64_t ncomp;       /* components (as cm_system_assemble numbers them) */
  uint64_t ncompbodies; /* bodies in components: the first ones in order */
  uint64_t nrows;       /* rows of J (normal + tangents), undamped */
  double timestep;      /* the deck's time step, 0 = none */
  /* byte offsets of the sections */
  uint64_t off_bodies;   /* nbodies body records (cm__part_body_t) */
  uint64_t off_borig;    /* nbodies int64: scene index of each body */
  uint64_t off_bcstart;  /* nbodies + 1 uint64: contacts owned by body i
                            are [bcstart[i], bcstart[i+1]) */
  uint64_t off_contacts; /* ncontacts contact records (cm__part_contact_t) */
  uint64_t off_corig;    /* ncontacts int64: scene index of each contact */
  uint64_t off_comp;     /* ncomp + 1 pairs uint64 (first body, first
                            contact) of each component, then the ends */
  uint64_t off_bname;    /* nbodies uint64: end of each body's name in the
                            body name pool (empty: unnamed) */
  uint64_t off_bpool;    /* the body name pool */
  uint64_t off_cname;    /* ncontacts uint64: ends in the contact pool */
  uint64_t off_cpool;    /* the contact name pool */
  uint64_t file_size;    /* total bytes */
} cm__part_head_t;

typedef struct {
  uint64_t fixed; /* 0 or 1 */
  double mass;
  double inertia[9];
  double position[3];
  double orientation[4];
} cm__part_body_t; /* 144 bytes */

typedef struct {
  int64_t a, b; /* body positions in the file's order; b = -1 */
  double point[3], normal[3], stiffness;
  double stiffness_t, damping_n, damping_t;
  uint64_t has_arms;
  double arm_a[3], arm_b[3];
} cm__part_contact_t; /* 152 bytes */

/* Writes scene s in the partitioned layout to path: bodies ordered by
 * (component, column order of the serial assembly), then bodies in no
 * component, then fixed bodies; each contact owned by its moving body of
 * lower position, contacts ordered by owner. Validates s (assembly). */
int cm__part_write(cm_context_t *ctx, const cm_scene_t *s, const char *path);

/* An open partitioned file. */
typedef struct {
  int fd;
  const char *path;
  cm__part_head_t h;
  uint64_t *comp; /* 2 (ncomp + 1): (first body, first contact) */
} cm__part_file_t;

int cm__part_open(cm_context_t *ctx, const char *path, cm__part_file_t *f);
void cm__part_close(cm__part_file_t *f);
/* count items of size bytes at byte offset off + first * size into out. */
int cm__part_read(cm_context_t *ctx, const cm__part_file_t *f, uint64_t off,
                  uint64_t first, uint64_t count, size_t size, void *out);
/* The label of body position p as the serial report gives it (its name,
 * "#ORIG" when unnamed, "world" for -1), and the name of contact position
 * p (NULL when unnamed); malloc'd. NULL when out of memory or unreadable. */
char *cm__part_body_label(const cm__part_file_t *f, int64_t p);
char *cm__part_contact_name(const cm__part_file_t *f, int64_t p, int *named);

/* The partition for np ranks: cut[0..np] body positions, rank r owning
 * bodies [cut[r], cut[r+1]) of the component bodies. Contacts balanced;
 * a component of at most ceil(ncontacts / np) contacts (or fewer than
 * CM__PART_MIN_SPAN) is never cut. Deterministic from the file alone. */
#define CM__PART_MIN_SPAN 64
int cm__part_cuts(cm_context_t *ctx, const cm__part_file_t *f, int np,
                  int64_t *cut);
/* The component of body position p (< ncompbodies), by bisection. */
int cm__part_comp_of(const cm__part_file_t *f, int64_t p);

#endif
