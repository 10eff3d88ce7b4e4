/* load.c: the error agreement and record buffer that every part shares,
 * one rank's part of a partitioned scene (its bodies, contacts and
 * their origins, read with positioned reads), and the components that the
 * partition cuts. Used by cmodes-mpi (main.c) and the SLEPc bench
 * (bench/slepc/bench_mpi_slepc.c). */
#include "mpi_internal.h"

#include "mpi_alloc.h" /* last: malloc, calloc, realloc tracked */
#include <stdlib.h>
#include <string.h>

/* ---- shared helpers ------------------------------------------- */

void cm__dbuf_push(cm__dbuf_t *b, double x) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 256;
    double *v = realloc(b->v, sizeof(double) * cap);
    if (!v) {
      b->nomem = 1;
      return;
    }
    b->v = v, b->cap = cap;
  }
  b->v[b->n++] = x;
}

void cm__dbuf_free(cm__dbuf_t *b) {
  free(b->v);
  memset(b, 0, sizeof *b);
}

int cm__mpi_agree(cm_context_t *ctx, int st, MPI_Comm comm) {
  int rank, np;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &np);
  int mine = st < 0 ? rank : np, first = np;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == np) { /* no error: the largest warning */
    int w = st > 0 ? st : 0, all = 0;
    MPI_Allreduce(&w, &all, 1, MPI_INT, MPI_MAX, comm);
    return all;
  }
  struct {
    int status, line;
    char message[sizeof ctx->message];
    char path[sizeof ctx->path];
  } e;
  memset(&e, 0, sizeof e);
  if (rank == first) {
    e.status = st, e.line = ctx->line;
    memcpy(e.message, ctx->message, sizeof e.message);
    memcpy(e.path, ctx->path, sizeof e.path);
  }
  MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, first, comm);
  if (rank != first) {
    ctx->status = e.status, ctx->line = e.line;
    memcpy(ctx->message, e.message, sizeof ctx->message);
    memcpy(ctx->path, e.path, sizeof ctx->path);
  }
  if (np > 1 && !strstr(ctx->message, "(rank ")) {
    char tail[32];
    snprintf(tail, sizeof tail, " (rank %d)", first);
    size_t n = strlen(ctx->message);
    if (n + strlen(tail) < sizeof ctx->message)
      memcpy(ctx->message + n, tail, strlen(tail) + 1);
  }
  return e.status;
}

/* ---- one rank's part ------------------------------------------ */

void cm__part_prepare(cm__mpi_part_t *P, cm__part_file_t *f, int rank, int np) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  memset(P, 0, sizeof *P);
  P->rank = rank, P->np = np, P->f = f;
}

void cm__part_free(cm__mpi_part_t *P) {
  free(P->cut), free(P->bodies), free(P->contacts), free(P->corig);
  free(P->borig), free(P->bcs);
}

int cm__part_load(cm_context_t *ctx, cm__mpi_part_t *P) {
  const cm__part_file_t *f = P->f;
  P->dim = (int)f->h.dim, P->nd = P->dim == 2 ? 3 : 6;
  P->cut = malloc(sizeof(int64_t) * ((size_t)P->np + 1));
  if (!P->cut)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  int st = cm__part_cuts(ctx, f, P->np, P->cut);
  if (st)
    return st;
  P->b0 = P->cut[P->rank], P->b1 = P->cut[P->rank + 1];
  size_t nb = (size_t)(P->b1 - P->b0);
  P->bcs = malloc(sizeof(uint64_t) * (nb + 1));
  if (!P->bcs)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  st = cm__part_read(ctx, f, f->h.off_bcstart, (uint64_t)P->b0, nb + 1, 8,
                     P->bcs);
  if (st)
    return st;
  P->c0 = (int64_t)P->bcs[0], P->c1 = (int64_t)P->bcs[nb];
  if (P->c1 < P->c0 || (uint64_t)P->c1 > f->h.ncontacts)
    return CM__ERR(ctx, CM_PARSE, f->path,
                   "%s: contact ranges out of "
                   "order",
                   f->path);
  size_t nc = (size_t)(P->c1 - P->c0);
  P->bodies = malloc(sizeof(cm__part_body_t) * (nb + 1));
  P->borig = malloc(sizeof(int64_t) * (nb + 1));
  P->contacts = malloc(sizeof(cm__part_contact_t) * (nc + 1));
  P->corig = malloc(sizeof(int64_t) * (nc + 1));
  if (!P->bodies || !P->borig || !P->contacts || !P->corig)
    return CM__ERR(ctx, CM_NOMEM, NULL,
                   "out of memory reading %zu bodies "
                   "and %zu contacts",
                   nb, nc);
  st = cm__part_read(ctx, f, f->h.off_bodies, (uint64_t)P->b0, nb,
                     sizeof(cm__part_body_t), P->bodies);
  if (!st)
    st =
        cm__part_read(ctx, f, f->h.off_borig, (uint64_t)P->b0, nb, 8, P->borig);
  if (!st)
    st = cm__part_read(ctx, f, f->h.off_contacts, (uint64_t)P->c0, nc,
                       sizeof(cm__part_contact_t), P->contacts);
  if (!st)
    st =
        cm__part_read(ctx, f, f->h.off_corig, (uint64_t)P->c0, nc, 8, P->corig);
  for (size_t k = 0; !st && k < nc; k++) {
    const cm__part_contact_t *c = &P->contacts[k];
    if (c->a < -1 || c->b < -1 || c->a >= (int64_t)f->h.nbodies ||
        c->b >= (int64_t)f->h.nbodies || c->a == c->b)
      st = CM__ERR(ctx, CM_INVALID_SCENE, "contacts",
                   "%s: contact "
                   "position %lld: bodies %lld and %lld out of range",
                   f->path, (long long)(P->c0 + (int64_t)k), (long long)c->a,
                   (long long)c->b);
  }
  return st;
}

/* The components cut by the partition, ascending (the same on every rank). */
int cm__cut_components(const cm__mpi_part_t *P, int *span) {
  int nspan = 0;
  for (int q = 1; q < P->np; q++) {
    int64_t x = P->cut[q];
    if (x <= 0 || x >= (int64_t)P->f->h.ncompbodies)
      continue;
    int cc = cm__part_comp_of(P->f, x);
    if ((int64_t)P->f->comp[2 * cc] < x && (!nspan || span[nspan - 1] != cc))
      span[nspan++] = cc;
  }
  return nspan;
}
