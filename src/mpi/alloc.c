/* alloc.c: the tracked allocations of cmodes-mpi (mpi_alloc.h): a
 * test-only failure injection, CMODES_MPI_FAIL_ALLOC=RANK:N, makes rank
 * RANK's N-th allocation in src/mpi return NULL, as an exhausted machine
 * would, so that the out-of-memory path of every phase is tested. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static long cm__alloc_n;     /* allocations so far on this rank */
static long cm__alloc_fail;  /* the one to fail (1-based), 0 = none */
static int cm__alloc_traced; /* the variable names this rank */

int cm__mpi_alloc_init(int rank) {
  const char *s = getenv("CMODES_MPI_FAIL_ALLOC");
  if (!s || !*s)
    return 0;
  char *end;
  errno = 0;
  long r = strtol(s, &end, 10), n = -1;
  if (end != s && *end == ':') {
    const char *t = end + 1;
    n = strtol(t, &end, 10);
    if (end == t || *end)
      n = -1;
  }
  if (errno || n < 0 || r < 0) {
    fprintf(stderr,
            "cmodes-mpi: CMODES_MPI_FAIL_ALLOC='%s' is not RANK:N (a rank "
            "and the allocation to fail, 0 to count only); unset it\n",
            s);
    return -1;
  }
  cm__alloc_traced = r == rank;
  cm__alloc_fail = r == rank ? n : 0;
  return 0;
}

long cm__mpi_alloc_count(void) { return cm__alloc_n; }

int cm__mpi_alloc_counting(void) {
  return cm__alloc_traced && cm__alloc_fail == 0;
}

static int cm__alloc_fails(void) { return ++cm__alloc_n == cm__alloc_fail; }

void *cm__mpi_malloc(size_t n) { return cm__alloc_fails() ? NULL : malloc(n); }

void *cm__mpi_calloc(size_t n, size_t size) {
  return cm__alloc_fails() ? NULL : calloc(n, size);
}

void *cm__mpi_realloc(void *p, size_t n) {
  return cm__alloc_fails() ? NULL : realloc(p, n);
}
