/* mpi_alloc.h: the tracked allocations of cmodes-mpi (docs/distributed.md,
 * "Errors"). Included last in the .c files of src/mpi, after every system
 * header: the allocations of src/mpi go through counters so that a test can
 * make one rank's N-th allocation fail (CMODES_MPI_FAIL_ALLOC=RANK:N). free()
 * is the ordinary one. The serial pipeline (components on one rank) keeps its
 * own allocations. */
#ifndef CM_MPI_ALLOC_H
#define CM_MPI_ALLOC_H

#include <stddef.h>

/* Reads CMODES_MPI_FAIL_ALLOC ("RANK:N"; N = 0 counts only) for this
 * rank; -1 with a message on stderr when it is malformed. */
int cm__mpi_alloc_init(int rank);
/* The allocations counted on this rank so far. */
long cm__mpi_alloc_count(void);
/* Whether CMODES_MPI_FAIL_ALLOC is RANK:0 for this rank (count only). */
int cm__mpi_alloc_counting(void);

void *cm__mpi_malloc(size_t n);
void *cm__mpi_calloc(size_t n, size_t size);
void *cm__mpi_realloc(void *p, size_t n);

#define malloc(n) cm__mpi_malloc(n)
#define calloc(n, size) cm__mpi_calloc(n, size)
#define realloc(p, n) cm__mpi_realloc(p, n)

#endif
