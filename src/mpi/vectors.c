/* vectors.c: `cmodes-mpi analyze --vectors FILE` (docs/distributed.md): the
 * mode shapes of the report's modes in the file `cmodes analyze --vectors`
 * writes (z and xi over the scene's rows, phi over the active dofs). Each
 * rank keeps the shapes of its own mode records over its own rows and
 * bodies (components on one rank: the serial cm_analyze_vectors; cut
 * components: the PARPACK vectors, through hooks in span.c), and rank 0
 * writes the file, receiving the entries in chunks in the ranks' order.
 * Not for the report itself (main.c). */
#include "mpi_internal.h"

#include "mpi_alloc.h" /* last: malloc, calloc, realloc tracked */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CM__CHUNK 4096 /* doubles per message to rank 0 */

/* The shape of one mode record of this rank. */
typedef struct {
  int comp;      /* component (the file's numbering) */
  double lambda; /* as in its record: identifies it with the report's */
  double *z;     /* this rank's rows (the file's order), unit over all */
  double *xi;    /* omega z / sqrt(k) per row */
  double *phi;   /* nd per owned body (all dofs; the active ones written) */
} cm__vmode_t;

struct cm__mpi_vecs {
  int nd, nrows;       /* dofs per body; rows of this rank's contacts */
  int nb;              /* owned bodies */
  int *crow;           /* per owned contact + 1: its first local row */
  unsigned char *mask; /* per owned body: its active dofs (bit d) */
  cm__vmode_t *m;
  int nm, cap;
  int nomem; /* an allocation failed (agreed before writing) */
};

/* ---- this rank's shapes --------------------------------------- */

int cm__mpi_vecs_init(cm_context_t *ctx, cm__mpi_part_t *P) {
  cm__mpi_vecs_t *v = calloc(1, sizeof *v);
  int nc = (int)(P->c1 - P->c0);
  if (v) {
    v->nd = P->nd, v->nb = (int)(P->b1 - P->b0);
    v->crow = malloc(sizeof(int) * ((size_t)nc + 1));
    v->mask = calloc((size_t)v->nb + 1, 1);
  }
  P->vecs = v;
  if (!v || !v->crow || !v->mask)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (mode shapes)");
  v->crow[0] = 0;
  for (int k = 0; k < nc; k++)
    v->crow[k + 1] = v->crow[k] + (P->contacts[k].stiffness_t > 0 ? P->dim : 1);
  v->nrows = v->crow[nc];
  return CM_OK;
}

void cm__mpi_vecs_free(cm__mpi_part_t *P) {
  cm__mpi_vecs_t *v = P->vecs;
  if (!v)
    return;
  for (int i = 0; i < v->nm; i++)
    free(v->m[i].z), free(v->m[i].xi), free(v->m[i].phi);
  free(v->m), free(v->crow), free(v->mask), free(v);
  P->vecs = NULL;
}

/* A new zeroed shape for a mode record (NULL: out of memory, noted). */
static cm__vmode_t *cm__vecs_add(cm__mpi_vecs_t *v, int comp, double lambda) {
  if (v->nm == v->cap) {
    int cap = v->cap ? 2 * v->cap : 16;
    cm__vmode_t *m = realloc(v->m, sizeof *m * (size_t)cap);
    if (!m) {
      v->nomem = 1;
      return NULL;
    }
    v->m = m, v->cap = cap;
  }
  cm__vmode_t *m = &v->m[v->nm];
  m->comp = comp, m->lambda = lambda;
  m->z = calloc((size_t)v->nrows + 1, sizeof(double));
  m->xi = calloc((size_t)v->nrows + 1, sizeof(double));
  m->phi = calloc((size_t)v->nb * v->nd + 1, sizeof(double));
  if (!m->z || !m->xi || !m->phi) {
    free(m->z), free(m->xi), free(m->phi);
    v->nomem = 1;
    return NULL;
  }
  v->nm++;
  return m;
}

static void cm__vecs_negate(const cm__mpi_vecs_t *v, cm__vmode_t *m) {
  for (int i = 0; i < v->nrows; i++)
    m->z[i] = -m->z[i], m->xi[i] = -m->xi[i];
  for (int i = 0; i < v->nb * v->nd; i++)
    m->phi[i] = -m->phi[i];
}

void cm__mpi_vecs_local(cm__mpi_vecs_t *v, const cm__mpi_part_t *P,
                        const cm_vectors_t *vec, const cm_report_t *r,
                        const int *gcomp, const int *cidx,
                        const int64_t *bpos) {
  int nc = vec->nrows, n = vec->ndofs;
  for (int j = 0; j < n; j++) /* the sub-system's columns */
    v->mask[bpos[vec->col_body[j]] - P->b0] |=
        (unsigned char)(1u << vec->col_dof[j]);
  for (int p = 0; p < r->nmodes; p++) {
    cm__vmode_t *m =
        cm__vecs_add(v, gcomp[r->modes[p].component], r->modes[p].lambda);
    if (!m)
      return;
    for (int s = 0; s < nc; s++) {
      int row = v->crow[cidx[vec->row_contact[s]]] + vec->row_kind[s];
      m->z[row] = vec->z[(size_t)p * nc + s];
      m->xi[row] = vec->xi[(size_t)p * nc + s];
    }
    for (int j = 0; j < n; j++)
      m->phi[(bpos[vec->col_body[j]] - P->b0) * v->nd + vec->col_dof[j]] =
          vec->phi[(size_t)p * n + j];
    /* the serial's sign: the largest |z| (first in the serial's row
     * order, the file's) positive; the sub-scene's rows are in another */
    int imax = 0;
    for (int i = 1; i < v->nrows; i++)
      if (fabs(m->z[i]) > fabs(m->z[imax]))
        imax = i;
    if (v->nrows && m->z[imax] < 0)
      cm__vecs_negate(v, m);
  }
}

void cm__mpi_vecs_mask(cm__mpi_vecs_t *v, int64_t i0, int no, int nd,
                       const double *cnt) {
  for (int b = 0; b < no; b++)
    for (int d = 0; d < nd; d++)
      if (cnt[(size_t)b * nd + d] > 0)
        v->mask[i0 + b] |= (unsigned char)(1u << d);
}

/* The sign of a cut component's mode as the serial fixes it: the entry of
 * largest |z| over the component's rows (first on ties, in the serial's
 * row order: the global row) positive. Collective on cc. */
static double cm__span_sign(const double *z, int nloc, long long goff,
                            MPI_Comm cc) {
  struct {
    double v;
    int i;
  } mine = {-1.0, INT_MAX}, top;
  for (int i = 0; i < nloc; i++)
    if (fabs(z[i]) > mine.v)
      mine.v = fabs(z[i]), mine.i = (int)(goff + i);
  MPI_Allreduce(&mine, &top, 1, MPI_DOUBLE_INT, MPI_MAXLOC, cc);
  int s = 1, all = 1;
  if (top.i >= goff && top.i < goff + nloc && z[top.i - goff] < 0)
    s = -1;
  MPI_Allreduce(&s, &all, 1, MPI_INT, MPI_MIN, cc);
  return all;
}

void cm__mpi_vecs_span(cm__mpi_vecs_t *v, const cm__mpi_part_t *P, int comp,
                       MPI_Comm cc, const double *z, int nloc, int k0, int k1,
                       long long goff, const double *u, int64_t o0, int no,
                       double lambda) {
  double sgn = cm__span_sign(z, nloc, goff, cc), omega = sqrt(lambda);
  cm__vmode_t *m = cm__vecs_add(v, comp, lambda);
  if (!m)
    return;
  int r0 = v->crow[k0], nd = v->nd;
  for (int k = k0; k < k1; k++) /* xi = omega z / sqrt(k) */
    for (int r = v->crow[k]; r < v->crow[k + 1] && r - r0 < nloc; r++) {
      const cm__part_contact_t *c = &P->contacts[k];
      double kr = r == v->crow[k] ? c->stiffness : c->stiffness_t;
      m->z[r] = sgn * z[r - r0];
      m->xi[r] = omega * m->z[r] / sqrt(kr);
    }
  for (int b = 0; b < no; b++) { /* phi = L^-T (B^T z) / omega */
    int64_t i = o0 - P->b0 + b;
    double L[36], *phi = m->phi + i * nd;
    const double *ub = u + (size_t)b * nd;
    if (cm__body_chol(P->dim, &P->bodies[i], L))
      continue; /* not reached: the operator factored it */
    for (int a = nd - 1; a >= 0; a--) {
      double acc = ub[a];
      for (int c = a + 1; c < nd; c++)
        acc -= L[c * nd + a] * phi[c];
      phi[a] = acc / L[a * nd + a];
    }
    for (int a = 0; a < nd; a++)
      phi[a] *= sgn / omega;
  }
}

int cm__mpi_vecs_nomem(const cm__mpi_part_t *P) {
  return P->vecs && P->vecs->nomem;
}

/* ---- the file, written by rank 0 ------------------------------ */

/* Rank 0's writer: the file, the scene-order maps and the buffers. */
typedef struct {
  FILE *out;
  int dim, first; /* first: no value written yet in the current list */
  int ints;       /* write values as integers */
  int64_t nc;     /* contacts */
  int64_t *perm;  /* per scene contact: its position in the file */
  int64_t *frow;  /* per position + 1: its first row in the file's order */
  double *zfile;  /* one mode's rows in the file's order */
  size_t zn;      /* filled so far */
  double *chunk;  /* CM__CHUNK */
} cm__vw_t;

/* A double as jansson prints it with JSON_REAL_PRECISION(17). */
static void cm__vw_real(FILE *out, double x) {
  char b[40];
  snprintf(b, sizeof b, "%.17g", x);
  if (!strpbrk(b, ".eEn"))
    strcat(b, ".0");
  char *e = strchr(b, 'e');
  if (e) { /* jansson: "e-7", "e20": no '+' and no leading zeros */
    char *src = e + 1, *dst = e + 1;
    if (*src == '-')
      *dst++ = *src++;
    else if (*src == '+')
      src++;
    while (*src == '0' && src[1])
      src++;
    memmove(dst, src, strlen(src) + 1);
  }
  fputs(b, out);
}

static void cm__vw_put(void *arg, const double *x, int n) {
  cm__vw_t *w = arg;
  for (int i = 0; i < n; i++) {
    if (!w->first)
      fputc(',', w->out);
    w->first = 0;
    if (w->ints)
      fprintf(w->out, "%lld", (long long)x[i]);
    else
      cm__vw_real(w->out, x[i]);
  }
}

static void cm__vw_fill(void *arg, const double *x, int n) {
  cm__vw_t *w = arg;
  memcpy(w->zfile + w->zn, x, sizeof(double) * (size_t)n);
  w->zn += (size_t)n;
}

/* Every rank's n values of loc to rank 0 in the ranks' order, CM__CHUNK
 * at a time; rank 0 hands each chunk to put. Collective on comm. */
static void cm__stream(MPI_Comm comm, int rank, int np, const double *loc,
                       long n, double *buf,
                       void (*put)(void *, const double *, int), void *arg) {
  if (rank) {
    MPI_Send(&n, 1, MPI_LONG, 0, 71, comm);
    for (long i = 0; i < n; i += CM__CHUNK)
      MPI_Send(loc + i, (int)(n - i < CM__CHUNK ? n - i : CM__CHUNK),
               MPI_DOUBLE, 0, 72, comm);
    return;
  }
  for (long i = 0; i < n; i += CM__CHUNK)
    put(arg, loc + i, (int)(n - i < CM__CHUNK ? n - i : CM__CHUNK));
  for (int q = 1; q < np; q++) {
    long m = 0;
    MPI_Recv(&m, 1, MPI_LONG, q, 71, comm, MPI_STATUS_IGNORE);
    for (long i = 0; i < m; i += CM__CHUNK) {
      int k = (int)(m - i < CM__CHUNK ? m - i : CM__CHUNK);
      MPI_Recv(buf, k, MPI_DOUBLE, q, 72, comm, MPI_STATUS_IGNORE);
      put(arg, buf, k);
    }
  }
}

/* Rank 0: the scene-order maps from the file (corig, the contacts' rows),
 * read CM__CHUNK records at a time. */
static int cm__vw_maps(cm_context_t *ctx, const cm__part_file_t *f,
                       cm__vw_t *w) {
  int64_t nc = w->nc, *ix = (int64_t *)w->chunk;
  cm__part_contact_t *rec = malloc(sizeof *rec * 256);
  if (!rec)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (mode shapes)");
  int st = CM_OK;
  for (int64_t p = 0; p < nc && !st; p += CM__CHUNK) {
    int64_t k = nc - p < CM__CHUNK ? nc - p : CM__CHUNK;
    st = cm__part_read(ctx, f, f->h.off_corig, (uint64_t)p, (uint64_t)k, 8, ix);
    for (int64_t i = 0; i < k && !st; i++) {
      if (ix[i] < 0 || ix[i] >= nc)
        st = CM__ERR(ctx, CM_PARSE, f->path,
                     "%s: contact position %lld: scene index %lld out of "
                     "range",
                     f->path, (long long)(p + i), (long long)ix[i]);
      else
        w->perm[ix[i]] = p + i;
    }
  }
  w->frow[0] = 0;
  for (int64_t p = 0; p < nc && !st; p += 256) {
    int64_t k = nc - p < 256 ? nc - p : 256;
    st = cm__part_read(ctx, f, f->h.off_contacts, (uint64_t)p, (uint64_t)k,
                       sizeof *rec, rec);
    for (int64_t i = 0; i < k && !st; i++)
      w->frow[p + i + 1] =
          w->frow[p + i] + (rec[i].stiffness_t > 0 ? w->dim : 1);
  }
  free(rec);
  return st;
}

/* A JSON string (jansson's escapes) or null. */
static void cm__vw_string(FILE *out, const char *s) {
  if (!s) {
    fputs("null", out);
    return;
  }
  fputc('"', out);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\')
      fprintf(out, "\\%c", *c);
    else if (*c == '\n')
      fputs("\\n", out);
    else if (*c == '\t')
      fputs("\\t", out);
    else if (*c == '\r')
      fputs("\\r", out);
    else if (*c == '\b')
      fputs("\\b", out);
    else if (*c == '\f')
      fputs("\\f", out);
    else if (*c < 0x20)
      fprintf(out, "\\u%04x", *c);
    else
      fputc(*c, out);
  }
  fputc('"', out);
}

/* Rank 0: row_contact, row_kind and row_names in the scene's order. */
static int cm__vw_rows(const cm__part_file_t *f, cm__vw_t *w) {
  for (int kind = 0; kind < 2; kind++) {
    fputs(kind ? "\"row_kind\":[" : "\"row_contact\":[", w->out);
    for (int64_t c = 0; c < w->nc; c++) {
      int64_t p = w->perm[c], nr = w->frow[p + 1] - w->frow[p];
      for (int64_t j = 0; j < nr; j++)
        fprintf(w->out, c || j ? ",%lld" : "%lld", (long long)(kind ? j : c));
    }
    fputs("],", w->out);
  }
  fputs("\"row_names\":[", w->out);
  for (int64_t c = 0; c < w->nc; c++) {
    int64_t p = w->perm[c], nr = w->frow[p + 1] - w->frow[p];
    int named = 0;
    char *nm = cm__part_contact_name(f, p, &named);
    if (!nm)
      return CM_NOMEM;
    for (int64_t j = 0; j < nr; j++) {
      if (c || j)
        fputc(',', w->out);
      cm__vw_string(w->out, named ? nm : NULL);
    }
    free(nm);
  }
  fputc(']', w->out);
  return CM_OK;
}

/* Which of this rank's shapes each listed mode is (key: component and
 * lambda of each; -1: another rank's). Equal keys (a repeated eigenvalue
 * of one component) are in the order of the records on either side. */
static void cm__vw_match(const cm__mpi_vecs_t *v, const double *key, int nm,
                         int *idx) {
  for (int i = 0; i < nm; i++) {
    int k = 0; /* earlier listed modes with the same key */
    for (int j = 0; j < i; j++)
      k += key[2 * j] == key[2 * i] && key[2 * j + 1] == key[2 * i + 1];
    idx[i] = -1;
    for (int s = 0; s < v->nm && idx[i] < 0; s++)
      if (v->m[s].comp == (int)key[2 * i] && v->m[s].lambda == key[2 * i + 1] &&
          k-- == 0)
        idx[i] = s;
  }
}

/* This rank's active columns: the scene index of the body, or the dof,
 * or mode m's phi (NULL: zeros) into lb; returns their number. */
static long cm__vw_cols(const cm__mpi_vecs_t *v, const cm__mpi_part_t *P,
                        int what, const cm__vmode_t *m, double *lb) {
  long n = 0;
  for (int b = 0; b < v->nb; b++)
    for (int d = 0; d < v->nd; d++)
      if ((v->mask[b] >> d) & 1)
        lb[n++] = what == 0   ? (double)P->borig[b]
                  : what == 1 ? d
                  : m         ? m->phi[(size_t)b * v->nd + d]
                              : 0.0;
  return n;
}

/* z or xi of every listed mode: gathered in the file's order on rank 0,
 * written in the scene's. */
static void cm__vw_zlist(const cm__mpi_part_t *P, cm__vw_t *w, int xi,
                         const int *idx, int nm, double *lb) {
  const cm__mpi_vecs_t *v = P->vecs;
  if (!P->rank)
    fputs(xi ? ",\"xi\":[" : ",\"z\":[", w->out);
  memset(lb, 0, sizeof(double) * ((size_t)v->nrows + 1));
  for (int i = 0; i < nm; i++) {
    const cm__vmode_t *m = idx[i] >= 0 ? &v->m[idx[i]] : NULL;
    const double *loc = m ? (xi ? m->xi : m->z) : lb;
    w->zn = 0;
    cm__stream(MPI_COMM_WORLD, P->rank, P->np, loc, v->nrows, w->chunk,
               cm__vw_fill, w);
    if (P->rank)
      continue;
    fputs(i ? ",[" : "[", w->out);
    w->first = 1, w->ints = 0;
    for (int64_t c = 0; c < w->nc; c++) {
      int64_t p = w->perm[c];
      cm__vw_put(w, w->zfile + w->frow[p], (int)(w->frow[p + 1] - w->frow[p]));
    }
    fputc(']', w->out);
  }
  if (!P->rank)
    fputc(']', w->out);
}

/* col_body, col_dof (in the ranks' order: the serial's column order),
 * col_names and phi. */
static void cm__vw_cols_all(const cm__mpi_part_t *P, cm__vw_t *w,
                            const int *idx, int nm, double *lb) {
  const cm__mpi_vecs_t *v = P->vecs;
  for (int what = 0; what < 2; what++) {
    long n = cm__vw_cols(v, P, what, NULL, lb);
    if (!P->rank)
      fputs(what ? ",\"col_dof\":[" : ",\"col_body\":[", w->out);
    w->first = 1, w->ints = 1;
    cm__stream(MPI_COMM_WORLD, P->rank, P->np, lb, n, w->chunk, cm__vw_put, w);
    if (!P->rank)
      fputc(']', w->out);
  }
  if (!P->rank)
    fputs(",\"col_names\":null", w->out);
  cm__vw_zlist(P, w, 0, idx, nm, lb);
  cm__vw_zlist(P, w, 1, idx, nm, lb);
  if (!P->rank)
    fputs(",\"phi\":[", w->out);
  for (int i = 0; i < nm; i++) {
    long n = cm__vw_cols(v, P, 2, idx[i] >= 0 ? &v->m[idx[i]] : NULL, lb);
    if (!P->rank)
      fputs(i ? ",[" : "[", w->out);
    w->first = 1, w->ints = 0;
    cm__stream(MPI_COMM_WORLD, P->rank, P->np, lb, n, w->chunk, cm__vw_put, w);
    if (!P->rank)
      fputc(']', w->out);
  }
  if (!P->rank)
    fputs("]}", w->out);
}

/* Rank 0: the head of the file up to the rows' lists. */
static int cm__vw_head(const cm__part_file_t *f, cm__vw_t *w,
                       const cm_report_t *rep, long long R, long long D) {
  fprintf(w->out,
          "{\"format\":\"cmodes-vectors\",\"version\":1,\"nmodes\":%d,"
          "\"nrows\":%lld,\"ndofs\":%lld,\"omega\":[",
          rep->nmodes, R, D);
  for (int i = 0; i < rep->nmodes; i++) {
    if (i)
      fputc(',', w->out);
    cm__vw_real(w->out, rep->modes[i].omega);
  }
  fputs("],", w->out);
  return cm__vw_rows(f, w);
}

/* Allocations of the writer (rank 0: the maps, one mode's rows, a chunk;
 * every rank: its local list lb), and the file opened on rank 0. */
static int cm__vw_open(cm_context_t *ctx, const cm__mpi_part_t *P, cm__vw_t *w,
                       long long R, const char *path) {
  int st = CM_OK;
  w->nc = (int64_t)P->f->h.ncontacts, w->dim = P->dim;
  w->chunk = malloc(sizeof(double) * CM__CHUNK);
  if (!P->rank) {
    w->perm = malloc(sizeof(int64_t) * ((size_t)w->nc + 1));
    w->frow = malloc(sizeof(int64_t) * ((size_t)w->nc + 2));
    w->zfile = malloc(sizeof(double) * ((size_t)R + 1));
  }
  if (!w->chunk || (!P->rank && (!w->perm || !w->frow || !w->zfile)))
    st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (mode shapes)");
  if (!st && !P->rank)
    st = cm__vw_maps(ctx, P->f, w);
  if (!st && !P->rank && w->frow[w->nc] != R)
    st = CM__ERR(ctx, CM_PARSE, P->f->path,
                 "%s: the contacts' rows (%lld) are not the ranks' (%lld)",
                 P->f->path, (long long)w->frow[w->nc], R);
  if (!st && !P->rank && !(w->out = fopen(path, "w")))
    st = CM__ERR(ctx, CM_IO, path, "%s: cannot write the mode shapes", path);
  return st;
}

int cm__mpi_vecs_write(cm_context_t *ctx, const cm__mpi_part_t *P,
                       const cm_report_t *rep, const char *path) {
  const cm__mpi_vecs_t *v = P->vecs;
  cm__vw_t w;
  memset(&w, 0, sizeof w);
  if (!v) /* not reached: main.c ends the run when vecs_init fails */
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (mode shapes)");
  long long loc[2] = {v->nrows, 0}, tot[2] = {0, 0};
  for (int b = 0; b < v->nb; b++)
    for (int d = 0; d < v->nd; d++)
      loc[1] += (v->mask[b] >> d) & 1;
  MPI_Allreduce(loc, tot, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  int nm = P->rank ? 0 : rep->nmodes;
  MPI_Bcast(&nm, 1, MPI_INT, 0, MPI_COMM_WORLD);
  size_t nl = (size_t)(loc[0] > loc[1] ? loc[0] : loc[1]) + 1;
  double *key = malloc(sizeof(double) * (2 * (size_t)nm + 1));
  int *idx = malloc(sizeof(int) * ((size_t)nm + 1));
  double *lb = malloc(sizeof(double) * nl);
  int st = v->nomem || !key || !idx || !lb
               ? CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (mode shapes)")
               : CM_OK;
  if (!st)
    st = cm__vw_open(ctx, P, &w, tot[0], path);
  st = cm__mpi_agree(ctx, st, MPI_COMM_WORLD);
  if (!st) {
    for (int i = 0; !P->rank && i < nm; i++)
      key[2 * i] = rep->modes[i].component,
              key[2 * i + 1] = rep->modes[i].lambda;
    MPI_Bcast(key, 2 * nm, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    cm__vw_match(v, key, nm, idx);
    if (!P->rank && cm__vw_head(P->f, &w, rep, tot[0], tot[1]))
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (mode shapes)");
    cm__vw_cols_all(P, &w, idx, nm, lb);
    if (w.out && (ferror(w.out) | fclose(w.out)) && !st)
      st = CM__ERR(ctx, CM_IO, path, "%s: cannot write the mode shapes", path);
    w.out = NULL;
  }
  if (w.out)
    fclose(w.out);
  free(w.perm), free(w.frow), free(w.zfile), free(w.chunk);
  free(key), free(idx), free(lb);
  return cm__mpi_agree(ctx, st, MPI_COMM_WORLD);
}
