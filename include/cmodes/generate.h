/* cmodes/generate.h: scene generators (pile, crystal, stack, fleet, bar).
 * Included by cmodes.h; do not include directly. Owned by the generate
 * module (src/generate/). */
#ifndef CMODES_GENERATE_H
#define CMODES_GENERATE_H

/* Granular pile of polydisperse disks (dim 2) or spheres (dim 3). */
typedef struct cm_pile_options {
  int dim;       /* 2 or 3 */
  int count;     /* particles */
  uint64_t seed; /* reproducibility */
  /* further fields: see src/generate/ */
} cm_pile_options_t;

/* Fleet of robots on a warehouse floor. */
typedef struct cm_fleet_options {
  int count;     /* robots */
  uint64_t seed; /* reproducibility */
} cm_fleet_options_t;

#endif
