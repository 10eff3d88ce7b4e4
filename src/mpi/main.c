/* main.c: `cmodes-mpi`: `convert IN OUT` (the partitioned layout) and
 * `analyze [options] SCENE` over MPI ranks (docs/distributed.md). Each rank
 * reads its part of the scene; components on one rank are solved there by the
 * serial pipeline; components cut by the partition by PARPACK over the
 * ranks that hold them (span.c); rank 0 gathers the records and prints the
 * report with the serial writers. */
#include "mpi_internal.h"

#include "analyze/analyze_internal.h"
#include "cli/args.h"

#include "mpi_alloc.h" /* last: malloc, calloc, realloc tracked */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* ---- convert -------------------------------------------------- */

static int cm__mpi_convert(int argc, char **argv, int rank) {
  if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    if (!rank)
      printf("usage: cmodes-mpi convert IN OUT\n\n"
             "Reads a scene (JSON or binary, as `cmodes analyze` does) and\n"
             "writes the partitioned layout of docs/distributed.md that each "
             "rank of\n"
             "`cmodes-mpi analyze` reads its own part of. Runs on one\n"
             "process (rank 0 under mpirun).\n");
    return 0;
  }
  if (argc != 3) {
    if (!rank)
      fprintf(stderr, "cmodes-mpi convert: expected IN and OUT; try "
                      "--help\n");
    return cm_status_exit(CM_USAGE);
  }
  int st = CM_OK;
  cm_context_t ctx;
  cm_context_init(&ctx);
  if (rank == 0) {
    cm_scene_t *s = NULL;
    st = cm_scene_read_file(&ctx, argv[1], &s);
    if (!st)
      st = cm__part_write(&ctx, s, argv[2]);
    cm_scene_destroy(&s);
    if (st)
      fprintf(stderr, "cmodes-mpi convert: %s: %s\n", cm_status_message(st),
              ctx.message[0] ? ctx.message : cm_status_message(st));
  }
  MPI_Bcast(&st, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return cm_status_exit(st);
}

/* ---- one rank's part ------------------------------------------ */

/* ---- components on this rank alone: the serial pipeline ------- */

static int cm__is_span(const int *span, int nspan, int c) {
  for (int i = 0; i < nspan; i++)
    if (span[i] == c)
      return 1;
  return 0;
}

/* The scene of this rank's components that no cut touches. */
typedef struct {
  cm_scene_t *sub;
  int *slot;     /* per owned body: its index in sub, -1 (cut component) */
  int64_t *bpos; /* per body of sub: its position in the file */
  int *cidx;     /* per contact of sub: the owned contact (into P) */
  int nsb, nsc;  /* bodies and contacts of sub */
} cm__local_t;

static void cm__local_free(cm__local_t *L) {
  free(L->slot), free(L->bpos), free(L->cidx);
  cm_scene_destroy(&L->sub);
}

int cm__ord_cmp(const void *pa, const void *pb) {
  const cm__ord_t *a = pa, *b = pb;
  return (a->key > b->key) - (a->key < b->key);
}

/* Contact k (into P) of the sub-scene, its bodies mapped by L->slot. */
static int cm__local_contact(cm_context_t *ctx, const cm__mpi_part_t *P,
                             int64_t k, cm__local_t *L) {
  const cm__part_contact_t *pc = &P->contacts[k];
  int sl[2] = {CM_WORLD, CM_WORLD};
  int64_t side[2] = {pc->a, pc->b};
  for (int s = 0; s < 2; s++) {
    if (side[s] < 0 || side[s] >= (int64_t)P->f->h.ncompbodies)
      continue; /* the world or a fixed body */
    if (side[s] < P->b0 || side[s] >= P->b1 || L->slot[side[s] - P->b0] < 0)
      return CM__ERR(ctx, CM_INTERNAL, NULL,
                     "contact position %lld: body %lld not on this rank",
                     (long long)(P->c0 + k), (long long)side[s]);
    sl[s] = L->slot[side[s] - P->b0];
  }
  cm_contact_t ct = cm__contact_to(pc, sl[0], sl[1]);
  if (cm_scene_add_contact(ctx, L->sub, &ct, NULL) < 0)
    return ctx->status;
  L->cidx[L->nsc++] = (int)k;
  return CM_OK;
}

/* The sub-scene lists its bodies and contacts in the scene's order (by
 * borig, corig), not the file's, so that it is the serial scene restricted
 * to these components: the same component numbering and the same order
 * among near-equal shares (cm__pick_settle) as `cmodes`. */
static int cm__local_scene(cm_context_t *ctx, const cm__mpi_part_t *P,
                           const int *span, int nspan, cm__local_t *L) {
  int64_t nb = P->b1 - P->b0, nc = P->c1 - P->c0;
  L->slot = malloc(sizeof(int) * ((size_t)nb + 1));
  L->bpos = malloc(sizeof(int64_t) * ((size_t)nb + 1));
  L->cidx = malloc(sizeof(int) * ((size_t)nc + 1));
  L->sub = cm_scene_create(P->dim);
  cm__ord_t *ord = malloc(sizeof *ord * ((size_t)(nb > nc ? nb : nc) + 1));
  if (!L->slot || !L->bpos || !L->cidx || !L->sub || !ord) {
    free(ord);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  int64_t n = 0;
  for (int64_t i = 0; i < nb; i++) {
    L->slot[i] = -1;
    if (!cm__is_span(span, nspan, cm__part_comp_of(P->f, P->b0 + i)))
      ord[n++] = (cm__ord_t){P->borig[i], i};
  }
  qsort(ord, (size_t)n, sizeof *ord, cm__ord_cmp);
  int st = CM_OK;
  for (int64_t j = 0; j < n && !st; j++) {
    int64_t i = ord[j].i;
    cm_body_t b = cm__body_from(&P->bodies[i]);
    if (cm_scene_add_body(ctx, L->sub, &b, NULL) < 0)
      st = ctx->status;
    L->bpos[L->nsb] = P->b0 + i;
    L->slot[i] = L->nsb++;
  }
  n = 0;
  for (int64_t i = 0; i < nb; i++) {
    uint64_t k0 = P->bcs[i] - P->bcs[0], k1 = P->bcs[i + 1] - P->bcs[0];
    for (uint64_t k = k0; L->slot[i] >= 0 && k < k1; k++)
      ord[n++] = (cm__ord_t){P->corig[k], (int64_t)k};
  }
  qsort(ord, (size_t)n, sizeof *ord, cm__ord_cmp);
  for (int64_t j = 0; j < n && !st; j++)
    st = cm__local_contact(ctx, P, ord[j].i, L);
  free(ord);
  return st;
}

/* The local report's modes and components as records, in the file's
 * numbering (gcomp: the file's component of each of sys's). */
static void cm__local_records(const cm__mpi_part_t *P, const cm__local_t *L,
                              const cm_system_t *sys, const cm_report_t *r,
                              const int *gcomp, cm__dbuf_t *out) {
  for (int i = 0; i < r->nmodes; i++) {
    const cm_mode_t *m = &r->modes[i];
    double head[8] = {CM__REC_MODE, m->lambda, m->omega,
                      m->residual,  m->zeta,   gcomp[m->component],
                      m->ncontacts, m->nbodies};
    for (int j = 0; j < 8; j++)
      cm__dbuf_push(out, head[j]);
    for (int j = 0; j < m->ncontacts; j++) {
      cm__dbuf_push(out, (double)(P->c0 + L->cidx[m->contacts[j].index]));
      cm__dbuf_push(out, m->contacts[j].share);
    }
    for (int j = 0; j < m->nbodies; j++) {
      cm__dbuf_push(out, (double)L->bpos[m->bodies[j].index]);
      cm__dbuf_push(out, m->bodies[j].share);
    }
  }
  for (int i = 0; i < r->ncomp_listed; i++) {
    const cm_component_t *c = &r->components[i];
    double head[12] = {CM__REC_COMP,    c->omega_max, c->omega_upper,
                       gcomp[c->index], c->nbodies,   c->ncontacts,
                       c->ndofs,        c->method,    c->iterations,
                       c->matvecs,      c->converged, c->rank};
    for (int j = 0; j < 12; j++)
      cm__dbuf_push(out, head[j]);
    int nl = 0; /* bodies in column order, as the serial listing */
    int64_t lst[20];
    int k = c->index;
    for (int j = sys->comp_col[k]; j < sys->comp_col[k + 1] && nl < 20; j++)
      if (j == sys->comp_col[k] || sys->col_body[j] != sys->col_body[j - 1])
        lst[nl++] = L->bpos[sys->col_body[j]];
    cm__dbuf_push(out, nl);
    for (int j = 0; j < nl; j++)
      cm__dbuf_push(out, (double)lst[j]);
  }
}

void cm__mpi_sums_pc(cm__mpi_sums_t *sums, double omega, double index) {
  if (omega > sums->pc_omega)
    sums->pc_omega = omega, sums->pc_contact = index;
}

/* The local report's bounds, counts and solver figures into the sums. */
void cm__mpi_local_sums(const cm_report_t *r, cm__mpi_sums_t *sums,
                        cm__mpi_more_t *more) {
  sums->active_dofs += r->active_dofs;
  sums->rows += r->nrows;
  sums->omega_upper = fmax(sums->omega_upper, r->omega_upper);
  sums->omega_upper_prob = fmax(sums->omega_upper_prob, r->omega_upper_prob);
  sums->iterations += r->iterations;
  sums->matvecs += r->matvecs;
  sums->search_matvecs += r->search_matvecs;
  sums->ncv = fmax(sums->ncv, r->ncv);
  sums->notconv += r->status == CM_NOT_CONVERGED || !r->converged;
  const char *m = r->method ? r->method : "none";
  sums->n_dense += !strcmp(m, "dense") || !strcmp(m, "mixed");
  sums->n_arpack += !strcmp(m, "arpack") || !strcmp(m, "mixed");
  sums->n_lanczos += !strcmp(m, "lanczos") || !strcmp(m, "mixed");
  sums->t_eigen += r->t_eigen;
  sums->t_operator += r->t_operator;
  more->t_factor += r->t_factor;
  more->t_assemble += r->t_assemble;
  more->prob_steps += r->prob_steps;
  if (r->free_motions < 0 && r->counts_note && strstr(r->counts_note, "budget"))
    more->unknown_late = 1;
  else if (r->free_motions < 0)
    more->unknown_rank = 1;
  else
    more->free_motions += r->free_motions, more->zero_modes += r->zero_modes,
        more->rank_dropped =
            fmax(more->rank_dropped, r->rank_sharp == 0 ? 1.0 : 0.0);
}

/* The local report's damped limit (damped.c on this rank's components)
 * into the sums, its component in the file's numbering. */
static void cm__local_damped(const cm_report_t *r, const int *gcomp,
                             cm__mpi_sums_t *sums) {
  /* this rank's components have no dashpots (others do): their limit is
   * the undamped one, of the top mode, zeta 0 */
  int undamped = !r->dashpots && r->nmodes > 0 && r->omega_max > 0;
  if (!undamped && (!r->dashpots || r->damped_component < 0))
    return;
  double h = r->central_difference.h_s;
  double c = gcomp[undamped ? r->comp_max : r->damped_component];
  if (h < sums->damp_h || (h == sums->damp_h && c < sums->damp_comp)) {
    sums->damp_h = h, sums->damp_comp = c;
    sums->damp_zeta = undamped ? 0 : r->damped_zeta;
  }
  sums->damp_iter = fmax(sums->damp_iter, r->damped_iterations);
  if (!undamped && r->central_difference.certified_s < sums->damp_cert)
    sums->damp_cert = r->central_difference.certified_s, sums->damp_cw = 0;
}

/* This rank's components have no dashpots (others do): their limit h is
 * the undamped 2 / omega_max, certified as damped.c certifies the whole
 * scene: the first h (1 - 1e-4 2^j) above the Gershgorin step at which
 * 4 M - h^2 K is positive definite (one CHOLMOD factorization each, up to
 * 300,000 dofs as there; above, the Gershgorin step stays). deadline (a
 * cm__now() time, 0 = none): a factorization that would not fit before it
 * is not started (the step certified so far stays), as in damped.c. */
static int cm__local_certify(cm_context_t *ctx, const cm_system_t *sys,
                             const cm_report_t *r, double deadline,
                             cm__mpi_sums_t *sums) {
  double h = r->central_difference.h_s, hc = r->central_difference.certified_s;
  for (double f = 1e-4; sys->n <= 300000 && f < 1.0; f *= 2) {
    double hh = h * (1.0 - f);
    int ok = 0;
    if (hh <= hc)
      break;
    int st = cm__op_definite(ctx, sys, 4.0 * (1.0 - 1e-9) / (hh * hh), deadline,
                             &ok);
    if (st)
      return st;
    if (ok < 0) /* would not fit in the budget */
      break;
    if (ok) {
      hc = hh;
      break;
    }
  }
  if (hc < sums->damp_cert)
    sums->damp_cert = hc, sums->damp_cw = 0;
  return CM_OK;
}

int cm__mpi_list_comps(int ncomp, const cm_options_t *opts) {
  int n = ncomp < CM__MPI_LIST_MAX ? ncomp : CM__MPI_LIST_MAX;
  return n > opts->top_components ? n : opts->top_components;
}

/* The components on this rank alone: the serial pipeline on their scene. */
static int cm__local_solve(cm_context_t *ctx, const cm__mpi_part_t *P,
                           const int *span, int nspan, const cm_options_t *opts,
                           cm__dbuf_t *out, cm__mpi_sums_t *sums,
                           cm__mpi_more_t *more) {
  double deadline = opts->max_seconds > 0 ? cm__now() + opts->max_seconds : 0;
  cm__local_t L;
  memset(&L, 0, sizeof L);
  cm_system_t *sys = NULL;
  cm_report_t *r = NULL;
  cm_vectors_t *vec = NULL;
  int *gcomp = NULL;
  int st = cm__local_scene(ctx, P, span, nspan, &L);
  if (!st && L.nsc > 0) {
    st = cm_system_assemble(ctx, L.sub, &sys);
    cm_options_t o = *opts;
    if (!st)
      o.top_components = cm__mpi_list_comps(sys->ncomp, opts);
    if (!st && P->vecs) /* --vectors: the shapes too */
      st = cm_analyze_vectors(ctx, sys, L.sub, &o, &r, &vec);
    else if (!st)
      st = cm_analyze_system(ctx, sys, L.sub, &o, &r);
    if (st >= 0 && !(gcomp = malloc(sizeof(int) * ((size_t)sys->ncomp + 1))))
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  if (st >= 0 && r) { /* the sub-scene's components in the file's numbering */
    for (int b = 0; b < L.nsb; b++)
      if (sys->body_comp[b] >= 0)
        gcomp[sys->body_comp[b]] = cm__part_comp_of(P->f, L.bpos[b]);
    cm__local_records(P, &L, sys, r, gcomp, out);
    if (vec)
      cm__mpi_vecs_local(P->vecs, P, vec, r, gcomp, L.cidx, L.bpos);
    if (r->pc_omega_max > sums->pc_omega)
      cm__mpi_sums_pc(sums, r->pc_omega_max,
                      (double)P->corig[L.cidx[r->pc_contact]]);
    cm__mpi_local_sums(r, sums, more);
    cm__local_damped(r, gcomp, sums);
    if (st == CM_NOT_CONVERGED && strstr(ctx->message, "time budget"))
      sums->timed_out += 1; /* the serial solve's --max-seconds */
    st = CM_OK;             /* not converged: counted in the sums */
    if (P->dashpots && !r->dashpots && r->omega_max > 0)
      st = cm__local_certify(ctx, sys, r, deadline, sums);
  }
  free(gcomp);
  cm_vectors_destroy(&vec);
  cm_report_destroy(&r);
  cm_system_destroy(&sys);
  cm__local_free(&L);
  return st;
}

/* ---- the report on rank 0 ------------------------------------- */

size_t cm__mpi_rec_len(const double *p) {
  return p[0] == CM__REC_MODE   ? 8 + 2 * (size_t)p[6] + 2 * (size_t)p[7]
         : p[0] == CM__REC_COMP ? 13 + (size_t)p[12]
                                : 4;
}

typedef struct {
  cm__cand_t key;  /* first: cm__cand_sort's order */
  const double *p; /* the record */
} cm__rec_t;

static int cm__i32_cmp(const void *pa, const void *pb) {
  int a = *(const int *)pa, b = *(const int *)pb;
  return (a > b) - (a < b);
}

/* Contact position p's scene index, name and body labels. */
static int cm__share_contact(const cm__part_file_t *f, int64_t p,
                             cm_share_t *s) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  int64_t orig;
  cm__part_contact_t c;
  if (cm__part_read(&ctx, f, f->h.off_corig, (uint64_t)p, 1, 8, &orig) ||
      cm__part_read(&ctx, f, f->h.off_contacts, (uint64_t)p, 1, sizeof c, &c))
    return CM_IO;
  s->index = (int)orig;
  int named;
  s->name = cm__part_contact_name(f, p, &named);
  if (!s->name) /* a read or an allocation failed ("" when unnamed) */
    return CM_NOMEM;
  if (!named) {
    free(s->name);
    s->name = NULL;
  }
  s->a_name = cm__part_body_label(f, c.a);
  s->b_name = cm__part_body_label(f, c.b);
  return s->a_name && s->b_name ? CM_OK : CM_NOMEM;
}

static int cm__share_body(const cm__part_file_t *f, int64_t p, cm_share_t *s) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  int64_t orig;
  if (cm__part_read(&ctx, f, f->h.off_borig, (uint64_t)p, 1, 8, &orig))
    return CM_IO;
  s->index = (int)orig;
  s->name = cm__part_body_label(f, p);
  return s->name ? CM_OK : CM_NOMEM;
}

/* Component comp's name as the serial report gives it (cm__comp_name in
 * analyze.c): the part before the first '.' that all its bodies' names
 * share, else the label of its first body (the serial's first column:
 * the file's first body of the component). Reads the names of the
 * component's bodies until one differs (positioned reads on rank 0).
 * NULL: out of memory or a read failed. */
static char *cm__tie_name(const cm__part_file_t *f, int comp) {
  int64_t b0 = (int64_t)f->comp[2 * comp], b1 = (int64_t)f->comp[2 * comp + 2];
  char *first = cm__part_body_label(f, b0);
  if (!first)
    return NULL;
  const char *dot = strchr(first, '.');
  size_t len = dot ? (size_t)(dot - first) : 0; /* shared prefix, 0: none */
  for (int64_t p = b0 + 1; p < b1 && len; p++) {
    char *lab = cm__part_body_label(f, p);
    if (!lab) {
      free(first);
      return NULL;
    }
    if (strncmp(lab, first, len + 1))
      len = 0;
    free(lab);
  }
  if (len)
    first[len] = 0;
  return first;
}

/* r->ties (cm__list_ties in analyze.c): the components whose top
 * eigenvalue (omega_max squared) is within opts->tol (relative) of the
 * largest, ascending by index, named; cp sorted by omega_max. */
static int cm__report_ties(const cm__mpi_src_t *src, const cm_options_t *opts,
                           const cm__rec_t *cp, size_t nc, cm_report_t *r) {
  double top = nc ? cp[0].p[1] * cp[0].p[1] : 0;
  if (!(top > 0) || !r->nmodes)
    return CM_OK;
  size_t n = 0;
  while (n < nc && top - cp[n].p[1] * cp[n].p[1] <= opts->tol * top)
    n++;
  int cap = (int)(n < CM_TIES_LISTED ? n : CM_TIES_LISTED);
  r->ties = calloc((size_t)n + 1, sizeof(int));
  r->tie_names = calloc((size_t)cap + 1, sizeof(char *));
  if (!r->ties || !r->tie_names)
    return CM_NOMEM;
  for (size_t i = 0; i < n; i++)
    r->ties[i] = (int)cp[i].p[3];
  qsort(r->ties, n, sizeof(int), cm__i32_cmp);
  r->nties = (int)n;
  for (int i = 0; i < cap; i++) {
    r->tie_names[i] = src->msys ? cm__mpimat_comp_name(src->msys, r->ties[i])
                                : cm__tie_name(src->f, r->ties[i]);
    r->nties_listed++;
    if (!r->tie_names[i])
      return CM_NOMEM;
  }
  return CM_OK;
}

#define CM__NSUMS ((int)(sizeof(cm__mpi_sums_t) / sizeof(double)))
#define CM__NMORE ((int)(sizeof(cm__mpi_more_t) / sizeof(double)))

/* Mode record p into m, named from src (a matrix system's record lists
 * dofs where a scene's lists bodies). */
static int cm__report_mode(const cm__mpi_src_t *src, const double *p,
                           cm_mode_t *m) {
  const cm_system_t *ms = src->msys;
  m->lambda = p[1], m->omega = p[2], m->residual = p[3], m->zeta = p[4];
  m->component = (int)p[5];
  int ncs = (int)p[6], nbs = (int)p[7];
  m->contacts = calloc((size_t)ncs + 1, sizeof(cm_share_t));
  m->bodies = calloc((size_t)(ms ? 0 : nbs) + 1, sizeof(cm_share_t));
  m->dofs = ms ? calloc((size_t)nbs + 1, sizeof(cm_share_t)) : NULL;
  if (!m->contacts || !m->bodies || (ms && !m->dofs))
    return CM_NOMEM;
  m->ncontacts = ncs;
  int st = CM_OK;
  for (int j = 0; j < ncs && !st; j++) {
    m->contacts[j].share = p[8 + 2 * j + 1];
    st = ms ? cm__mpimat_share_row(ms, (int64_t)p[8 + 2 * j], &m->contacts[j])
            : cm__share_contact(src->f, (int64_t)p[8 + 2 * j], &m->contacts[j]);
  }
  cm_share_t *bs = ms ? m->dofs : m->bodies;
  *(ms ? &m->ndofs : &m->nbodies) = nbs;
  const double *q = p + 8 + 2 * ncs;
  for (int j = 0; j < nbs && !st; j++) {
    bs[j].share = q[2 * j + 1];
    st = ms ? cm__mpimat_share_dof(ms, (int64_t)q[2 * j], &bs[j])
            : cm__share_body(src->f, (int64_t)q[2 * j], &bs[j]);
  }
  return st;
}

/* The report's modes and components: the gathered records (recs, nrec
 * doubles) sorted as the serial report sorts them, the top ones listed
 * with their names read from the file. */
/* The records' modes (md), listed components (cp) and components' tops
 * (tp), each sorted as the serial sorts them; their numbers in n[3]. The
 * arrays are NULL when out of memory. */
static void cm__report_sort(const double *recs, size_t nrec, cm__rec_t **md,
                            cm__rec_t **cp, cm__rec_t **tp, size_t *n) {
  n[0] = n[1] = n[2] = 0;
  for (size_t i = 0; i < nrec; i += cm__mpi_rec_len(recs + i))
    n[recs[i] == CM__REC_MODE ? 0 : recs[i] == CM__REC_COMP ? 1 : 2]++;
  *md = malloc(sizeof **md * (n[0] + 1));
  *cp = malloc(sizeof **cp * (n[1] + 1));
  *tp = malloc(sizeof **tp * (n[2] + 1));
  if (!*md || !*cp || !*tp)
    return;
  n[0] = n[1] = n[2] = 0;
  for (size_t i = 0; i < nrec; i += cm__mpi_rec_len(recs + i)) {
    const double *p = recs + i;
    if (p[0] == CM__REC_MODE) {
      (*md)[n[0]] = (cm__rec_t){{p[1], (int)p[5], (int)n[0]}, p};
      n[0]++;
    } else { /* keyed by omega_max squared: the serial's groups */
      int t = p[0] == CM__REC_COMP ? 1 : 2;
      cm__rec_t *a = t == 1 ? *cp : *tp;
      a[n[t]] = (cm__rec_t){{p[1] * p[1], (int)p[3], (int)n[t]}, p};
      n[t]++;
    }
  }
  cm__cand_sort(*md, n[0], sizeof **md);
  cm__cand_sort(*cp, n[1], sizeof **cp);
  cm__cand_sort(*tp, n[2], sizeof **tp);
}

static int cm__report_lists(cm_context_t *ctx, const cm__mpi_src_t *src,
                            const cm_options_t *opts, const double *recs,
                            size_t nrec, cm_report_t *r) {
  cm__rec_t *md, *cp, *tp;
  size_t n[3];
  cm__report_sort(recs, nrec, &md, &cp, &tp, n);
  if (!md || !cp || !tp) {
    free(md), free(cp), free(tp);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (report)");
  }
  size_t nm = n[0], nc = n[1];
  int st = CM_OK;
  /* ---- modes ---------------------------------------------------- */
  int k = (int)(nm < (size_t)opts->modes ? nm : (size_t)opts->modes);
  r->modes = calloc((size_t)k + 1, sizeof(cm_mode_t));
  r->nmodes = r->modes ? k : 0;
  if (!r->modes)
    st = CM_NOMEM;
  for (int i = 0; i < r->nmodes && !st; i++)
    st = cm__report_mode(src, md[i].p, &r->modes[i]);
  /* ---- components ----------------------------------------------- */
  int kc =
      (int)(nc < (size_t)opts->top_components ? nc
                                              : (size_t)opts->top_components);
  r->components = calloc((size_t)kc + 1, sizeof(cm_component_t));
  r->ncomp_listed = r->components ? kc : 0;
  if (!r->components)
    st = CM_NOMEM;
  for (int i = 0; i < r->ncomp_listed && !st; i++) {
    const double *p = cp[i].p;
    cm_component_t *c = &r->components[i];
    c->omega_max = p[1], c->omega_upper = p[2], c->index = (int)p[3];
    c->nbodies = (int)p[4], c->ncontacts = (int)p[5], c->ndofs = (int)p[6];
    c->method = (int)p[7], c->iterations = (int)p[8], c->matvecs = (int)p[9];
    c->converged = (int)p[10], c->rank = (int)p[11];
    int nl = (int)p[12];
    c->body_names = calloc(20, sizeof(char *));
    if (!c->body_names) {
      st = CM_NOMEM;
      break;
    }
    for (int j = 0; j < nl && j < 20 && !st; j++) {
      c->body_names[j] = cm__part_body_label(src->f, (int64_t)p[13 + j]);
      c->nlisted++;
      st = c->body_names[j] ? CM_OK : CM_NOMEM;
    }
  }
  if (!st)
    st = n[2] ? cm__report_ties(src, opts, tp, n[2], r) /* every one's top */
              : cm__report_ties(src, opts, cp, nc, r);
  free(md), free(cp), free(tp);
  if (st && src->msys)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (report names)");
  if (st)
    return CM__ERR(ctx, st == CM_IO ? CM_IO : CM_NOMEM, src->f->path,
                   "%s: could not read the names of the report", src->f->path);
  return CM_OK;
}

/* With dashpots, the damped step as cm__damped_step leaves it: the
 * coupled limit (the smallest of the ranks' groups), its certified step,
 * the listed modes' own limits; the undamped steps move to cd_undamped. */
static int cm__report_damped(const cm__mpi_sums_t *sums,
                             const cm__mpi_more_t *more, cm_report_t *r) {
  r->cd_undamped = r->central_difference;
  r->damped_component = -1;
  if (!(more->dashpots > 0))
    return CM_OK;
  double h = INFINITY;
  for (int i = 0; i < r->nmodes; i++)
    h = fmin(h,
             cm_step_central_difference(r->modes[i].omega, r->modes[i].zeta));
  r->damped_modal_h_s = isfinite(h) ? h : NAN;
  if (!(r->omega_max > 0) || !isfinite(h))
    return CM_OK; /* no mode: the notes already say why */
  if (sums->damp_fail > 0 || !isfinite(sums->damp_h)) {
    /* a cut component's search did not finish: the undamped steps would
     * be too long, so none is given */
    r->central_difference.h_s = r->central_difference.certified_s = NAN;
    r->central_difference.certified_prob_s = NAN;
    r->central_difference.note =
        "the damped-step search of a component spread over MPI ranks did "
        "not finish (the time budget or no converged vector): no damped "
        "step is given";
    return cm__dashpot_warning(r);
  }
  r->damped_iterations = (int)sums->damp_iter;
  r->damped_component = (int)sums->damp_comp;
  r->damped_zeta = sums->damp_zeta;
  r->central_difference.h_s = sums->damp_h;
  r->central_difference.certified_s = fmin(sums->damp_cert, sums->damp_h);
  r->central_difference.certified_prob_s = NAN;
  const char *why = cm__mpi_damped_reason((int)sums->damp_cw);
  if (why) /* a cut component's: how it was certified (schur.c) */
    r->central_difference.note = why;
  return cm__dashpot_warning(r);
}

/* The report's counts of bodies, dofs, contacts and components: a
 * scene's from the file and the ranks' counts, a matrix system's as
 * cm__counts (analyze.c) gives them (its mass blocks are the "bodies",
 * none moving; the dofs no row reaches add to the free motions). */
static void cm__report_counts(const cm__mpi_src_t *src,
                              const cm__mpi_sums_t *sums,
                              const cm__mpi_more_t *more, cm_report_t *r) {
  const cm_system_t *ms = src->msys;
  int nd = ms || src->f->h.dim == 2 ? 3 : 6;
  r->nrows = (int)sums->rows;
  r->nbodies = ms ? ms->nbodies : (int)src->f->h.nbodies;
  r->moving_bodies = ms ? ms->moving_bodies : (int)more->moving;
  r->fixed_bodies = ms ? ms->nbodies - ms->moving_bodies : (int)more->fixed;
  r->free_bodies = ms ? ms->free_bodies : (int)more->free_moving;
  r->ndofs = ms ? ms->ndofs : r->moving_bodies * nd;
  r->active_dofs = (int)sums->active_dofs;
  r->ncontacts = ms ? ms->ncontacts : (int)src->f->h.ncontacts;
  r->dropped_dofs = r->ndofs - r->active_dofs;
  int unknown = more->unknown_rank > 0 || more->unknown_late > 0;
  double fm = ms ? more->free_motions + ms->dropped_dofs
                 : more->free_motions + more->free_moving * nd;
  r->free_motions = unknown ? -1 : (int)fm;
  r->zero_modes = unknown ? -1 : (int)more->zero_modes;
  r->rank_sharp = unknown ? -1 : !(more->rank_dropped > CM__RANK_SHARP);
  r->counts_note = /* the serial's reasons (cm__counts in analyze.c) */
      !unknown ? NULL
      : more->unknown_late > 0
          ? "the rank of J was not computed: the solve budget "
            "(max_seconds) ran out before the sparse QR of every "
            "component"
          : "the rank of J was not computed: a component has more rows "
            "than rank_max_rows (default 20000), past which the sparse "
            "QR costs more than the analysis";
  r->ncomp = ms ? ms->ncomp : (int)src->f->h.ncomp;
}

static int cm__build_report(cm_context_t *ctx, const cm__mpi_src_t *src,
                            const cm_options_t *opts, const double *recs,
                            size_t nrec, const cm__mpi_sums_t *sums,
                            const cm__mpi_more_t *more, cm_report_t **out) {
  cm_report_t *r = calloc(1, sizeof *r);
  if (!r)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (report)");
  int st = cm__report_lists(ctx, src, opts, recs, nrec, r);
  if (st) {
    cm_report_destroy(&r);
    return st;
  }
  /* ---- bounds, counts, solver ----------------------------------- */
  r->status = sums->notconv > 0 ? CM_NOT_CONVERGED : CM_OK;
  r->pc_omega_max = sums->pc_omega;
  r->pc_contact = (int)sums->pc_contact;
  cm__report_top(r);
  r->omega_lower = r->pc_omega_max;
  r->omega_upper = sums->omega_upper;
  r->omega_upper_prob = sums->omega_upper_prob;
  r->failure_probability = opts->failure_probability;
  r->prob_steps = (int)(more->prob_steps + sums->prob_steps);
  r->tangential = more->tangential > 0;
  r->dashpots = more->dashpots > 0;
  r->model = cm__model_label(r->tangential, r->dashpots);
  cm__report_counts(src, sums, more, r);
  int kinds =
      (sums->n_dense > 0) + (sums->n_arpack > 0) + (sums->n_lanczos > 0);
  r->method = r->ncomp == 0         ? "none"
              : kinds > 1           ? "mixed"
              : sums->n_arpack > 0  ? "arpack"
              : sums->n_lanczos > 0 ? "lanczos"
                                    : "dense";
  r->nev = opts->modes;
  r->ncv = (int)sums->ncv;
  r->iterations = (int)sums->iterations;
  r->matvecs = (int)sums->matvecs;
  r->search_matvecs = (int)sums->search_matvecs;
  r->converged = sums->notconv == 0;
  r->tol = opts->tol;
  r->t_eigen = sums->t_eigen;
  r->t_operator = sums->t_operator;
  r->t_factor = more->t_factor;
  r->t_assemble = more->t_assemble;
  cm__report_steps(opts, r);
  st = cm__report_damped(sums, more, r);
  if (st) {
    cm_report_destroy(&r);
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (report)");
  }
  double ts = src->f ? src->f->h.timestep : 0; /* matrices: no deck */
  r->deck_timestep_s = ts;
  r->deck_fraction = ts > 0 && r->central_difference.h_s > 0
                         ? ts / r->central_difference.h_s
                         : NAN;
  *out = r;
  return CM_OK;
}

/* The --partition table: one line per rank (standard error, rank 0). */
static void cm__print_partition(const double *all, int W, int np, int nspan,
                                int matrices) {
  fprintf(stderr,
          "cmodes-mpi: %d ranks, %d component(s) spread over ranks\n"
          "rank  %s  halo_bodies  msgs/product  "
          "bytes/product  products  s/product  max_rss_MiB\n",
          np, nspan,
          matrices ? "components    rows        " /* matrices.c's ranges */
                   : "bodies        contacts    ");
  for (int q = 0; q < np; q++) {
    const double *a = all + (size_t)q * W;
    cm__mpi_sums_t s;
    memcpy(&s, a, sizeof s);
    const double *pi = a + CM__NSUMS + CM__NMORE;
    char b[48], c[48];
    snprintf(b, sizeof b, "[%.0f,%.0f)", pi[0], pi[1]);
    snprintf(c, sizeof c, "[%.0f,%.0f)", pi[2], pi[3]);
    fprintf(stderr,
            "%4d  %-12s  %-12s  %11.0f  %12.0f  %13.0f  %8.0f  %9.3g  "
            "%11.1f\n",
            q, b, c, s.halo_bodies, s.halo_msgs, s.halo_bytes, s.products,
            s.products > 0 ? s.t_products / s.products : 0.0, pi[4]);
  }
}

/* ---- analyze -------------------------------------------------- */

static void cm__analyze_usage(FILE *f) {
  fprintf(f, "usage: mpirun -np N cmodes-mpi analyze [options] SCENE.cmpart\n"
             "       mpirun -np N cmodes-mpi analyze [options] --matrices "
             "MANIFEST | M.mtx J.mtx k.mtx\n"
             "\nThe report of `cmodes analyze` computed over MPI ranks, each\n"
             "reading only its part of a partitioned scene (write one with\n"
             "`cmodes-mpi convert SCENE OUT.cmpart`; docs/distributed.md).\n"
             "With --matrices rank 0 reads the matrix system and gives each\n"
             "rank whole components of it.\n\n"
             "analysis options (as `cmodes analyze`):\n");
  cm__opt_usage(f, NULL);
  fprintf(f, "other options:\n"
             "      --threads N         OpenMP threads per rank (default 1)\n"
             "      --json              print the report as JSON\n"
             "      --no-timings        omit timings from the JSON\n"
             "      --partition         print each rank's part, halo and "
             "memory\n"
             "                          (standard error)\n"
             "      --matrices          read Matrix Market M, J, k (or a "
             "manifest)\n"
             "      --vectors FILE      also write the mode shapes (z, xi, "
             "phi) as\n"
             "                          `cmodes analyze --vectors` does "
             "(rank 0)\n"
             "  -h, --help              this help\n");
}

/* Parses analyze's arguments: -1 to go on, else the exit code. */
static int cm__analyze_args(int argc, char **argv, int rank, cm__args_t *a) {
  enum { O_THREADS = 256, O_JSON, O_NOTIME, O_PART, O_MATRICES, O_VECTORS };
  static const struct option own[] = {
      {"threads", required_argument, 0, O_THREADS},
      {"json", no_argument, 0, O_JSON},
      {"no-timings", no_argument, 0, O_NOTIME},
      {"partition", no_argument, 0, O_PART},
      {"matrices", no_argument, 0, O_MATRICES},
      {"vectors", required_argument, 0, O_VECTORS},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  struct option longopts[64];
  cm__opt_longopts(longopts, 64, own, NULL);
  memset(a, 0, sizeof *a);
  cm_options_init(&a->opts);
  a->threads = 1;
  int ok = 1, c;
  optind = 1;
  while (ok && (c = getopt_long(argc, argv, "k:h", longopts, NULL)) != -1) {
    switch (c) {
    case O_THREADS:
      ok = cm__arg_int("analyze", "--threads", optarg, &a->threads);
      break;
    case O_JSON:
      a->json = 1;
      break;
    case O_NOTIME:
      a->notime = 1;
      break;
    case O_PART:
      a->part = 1;
      break;
    case O_MATRICES: /* a matrix system (matrices.c) */
      a->matrices = 1;
      break;
    case O_VECTORS:
      a->vectors = optarg;
      break;
    case 'h':
      if (!rank)
        cm__analyze_usage(stdout);
      return 0;
    default:
      ok = cm__opt_parse("analyze", c, optarg, NULL, &a->opts) > 0;
    }
  }
  cm_context_t ctx;
  cm_context_init(&ctx);
  int nargs = argc - optind;
  if (ok && (a->matrices ? nargs != 1 && nargs != 3 : nargs != 1)) {
    fprintf(stderr, "cmodes-mpi analyze: expected %s\n",
            a->matrices ? "a manifest or three Matrix Market files (M J k)"
                        : "one partitioned scene file");
    ok = 0;
  }
  if (ok && cm_options_validate(&ctx, &a->opts)) {
    fprintf(stderr, "cmodes-mpi analyze: %s\n", ctx.message);
    ok = 0;
  }
  if (!ok) {
    fprintf(stderr, "try 'cmodes-mpi analyze --help'\n");
    return cm_status_exit(CM_USAGE);
  }
  a->path = argv[optind];
  for (int i = 0; nargs == 3 && i < 3; i++)
    a->mtx[i] = argv[optind + i];
  return -1;
}

/* Opens the file and reads this rank's part, counting the bodies in no
 * component (split evenly) and the contacts' springs and dashpots. */
static int cm__read_rank(cm_context_t *ctx, cm__mpi_part_t *P,
                         cm__part_file_t *f, const char *path,
                         cm__mpi_more_t *more) {
  int st = cm__part_open(ctx, path, f);
  if (!st)
    st = cm__part_load(ctx, P);
  if (!st) {
    uint64_t ncb = f->h.ncompbodies, nt = f->h.nbodies - ncb;
    uint64_t t0b = ncb + nt * (uint64_t)P->rank / (uint64_t)P->np;
    uint64_t t1b = ncb + nt * (uint64_t)(P->rank + 1) / (uint64_t)P->np;
    more->moving += (double)(P->b1 - P->b0);
    for (uint64_t b = t0b; b < t1b && !st; b++) {
      cm__part_body_t rb;
      st = cm__part_read(ctx, f, f->h.off_bodies, b, 1, sizeof rb, &rb);
      if (rb.fixed)
        more->fixed++;
      else
        more->moving++, more->free_moving++;
    }
  }
  for (int64_t k = 0; !st && k < P->c1 - P->c0; k++) {
    more->tangential += P->contacts[k].stiffness_t > 0;
    more->dashpots +=
        P->contacts[k].damping_n > 0 || P->contacts[k].damping_t > 0;
  }
  return st;
}

/* The rank of J of cut component comp (collective on cc): into the
 * component record that cm__mpi_span_solve appended to recs from rec0 (on
 * cc's rank 0) and into the counts, as the serial counts it. */
static int cm__cut_rank(cm_context_t *ctx, const cm__mpi_part_t *P, int comp,
                        MPI_Comm cc, const cm_options_t *opts, double deadline,
                        cm__dbuf_t *recs, size_t rec0, cm__mpi_more_t *more) {
  int rank = -1, q;
  double rows = 0, ndofs = 0, near = NAN;
  MPI_Comm_rank(cc, &q);
  int st = cm__mpi_cut_rank(ctx, P, comp, cc, opts->rank_max_rows, deadline,
                            &rank, &rows, &ndofs, &near);
  if (st || q != 0)
    return st;
  for (size_t i = rec0; i < recs->n; i += cm__mpi_rec_len(recs->v + i)) {
    double *p = recs->v + i; /* the component's record */
    if (p[0] == CM__REC_COMP && (int)p[3] == comp)
      p[11] = rank < 0 ? -1 : rank;
  }
  if (rank == -2)
    more->unknown_late = 1;
  else if (rank < 0)
    more->unknown_rank = 1;
  else
    more->free_motions += ndofs - rank, more->zero_modes += rows - rank,
        more->rank_dropped = fmax(more->rank_dropped, near);
  return CM_OK;
}

/* Each cut component in turn on the ranks that hold part of it. */
static int cm__solve_cut(cm_context_t *ctx, const cm__mpi_part_t *P,
                         const int *span, int nspan, int *members,
                         const cm_options_t *opts, double deadline,
                         cm__dbuf_t *recs, cm__mpi_sums_t *sums,
                         cm__mpi_more_t *more, int st) {
  for (int i = 0; st >= 0 && i < nspan; i++) {
    int cc = span[i], nmem = 0, me = 0;
    int64_t cb0 = (int64_t)P->f->comp[2 * cc];
    int64_t cb1 = (int64_t)P->f->comp[2 * cc + 2];
    for (int q = 0; q < P->np; q++)
      if (P->cut[q] < P->cut[q + 1] && P->cut[q] < cb1 && P->cut[q + 1] > cb0) {
        me |= q == P->rank;
        members[nmem++] = q;
      }
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, me ? 0 : MPI_UNDEFINED, P->rank, &sub);
    int sst = CM_OK;
    if (me) {
      size_t rec0 = recs->n;
      sst = cm__mpi_span_solve(ctx, P, cc, sub, members, opts, deadline, recs,
                               sums);
      if (sst >= 0 && recs->nomem) /* the records' allocation failed */
        sst = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (records)");
      sst = cm__mpi_agree(ctx, sst, sub); /* then every member or none */
      if (sst >= 0)
        sst = cm__cut_rank(ctx, P, cc, sub, opts, deadline, recs, rec0, more);
      MPI_Comm_free(&sub);
    }
    st = cm__mpi_agree(ctx, sst < 0 ? sst : (st > sst ? st : sst),
                       MPI_COMM_WORLD);
  }
  return st;
}

/* Rank 0: the ranks' sums and counts (rows of W doubles) combined. */
static void cm__combine(const double *all, int W, int np, cm__mpi_sums_t *S,
                        cm__mpi_more_t *M) {
  memset(S, 0, sizeof *S);
  memset(M, 0, sizeof *M);
  S->pc_contact = -1;
  for (int q = 0; q < np; q++) {
    cm__mpi_sums_t s;
    cm__mpi_more_t m;
    memcpy(&s, all + (size_t)q * W, sizeof s);
    memcpy(&m, all + (size_t)q * W + CM__NSUMS, sizeof m);
    double *sv = (double *)S, *xv = (double *)&s;
    for (int j = 0; j < CM__NSUMS; j++)
      sv[j] += xv[j];
    double *mv = (double *)M, *yv = (double *)&m;
    for (int j = 0; j < CM__NMORE; j++)
      mv[j] += yv[j];
    /* maxima, and the contact that attains one, instead of sums */
    S->pc_omega -= s.pc_omega, S->pc_contact -= s.pc_contact;
    if (s.pc_omega > S->pc_omega)
      S->pc_omega = s.pc_omega, S->pc_contact = s.pc_contact;
    S->omega_upper -= s.omega_upper;
    S->omega_upper = fmax(S->omega_upper, s.omega_upper);
    S->omega_upper_prob -= s.omega_upper_prob;
    S->omega_upper_prob = fmax(S->omega_upper_prob, s.omega_upper_prob);
    S->ncv -= s.ncv;
    S->ncv = fmax(S->ncv, s.ncv);
    M->rank_dropped -= m.rank_dropped;
    M->rank_dropped = fmax(M->rank_dropped, m.rank_dropped);
  }
  /* the damped limit: the smallest over the ranks (ties: the lower
   * component), the smallest certified step, the most solves */
  S->damp_h = S->damp_cert = INFINITY, S->damp_comp = -1;
  S->damp_zeta = S->damp_iter = S->damp_cw = 0;
  for (int q = 0; q < np; q++) {
    cm__mpi_sums_t s;
    memcpy(&s, all + (size_t)q * W, sizeof s);
    if (s.damp_h < S->damp_h ||
        (s.damp_h == S->damp_h && s.damp_comp < S->damp_comp))
      S->damp_h = s.damp_h, S->damp_comp = s.damp_comp,
      S->damp_zeta = s.damp_zeta;
    if (s.damp_cert < S->damp_cert)
      S->damp_cert = s.damp_cert, S->damp_cw = s.damp_cw;
    S->damp_iter = fmax(S->damp_iter, s.damp_iter);
  }
  S->t_eigen /= np, S->t_operator /= np; /* means over the ranks */
  M->t_factor /= np, M->t_assemble /= np;
}

/* Gathers every rank's sums and records to rank 0, which builds the
 * report into *rep (buffers allocated and agreed before each gather). */
int cm__mpi_gather_report(cm_context_t *ctx, const cm__mpi_src_t *src,
                          const double part[4], const cm__args_t *a, int nspan,
                          const cm__dbuf_t *recs, const cm__mpi_sums_t *sums,
                          const cm__mpi_more_t *more, double t_read,
                          cm_report_t **rep) {
  enum { W = CM__NSUMS + CM__NMORE + 6 };
  double mine[W];
  memcpy(mine, sums, sizeof *sums);
  memcpy(mine + CM__NSUMS, more, sizeof *more);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double *pi = mine + CM__NSUMS + CM__NMORE; /* the --partition row */
  memcpy(pi, part, 4 * sizeof(double));
  pi[4] = (double)ru.ru_maxrss / 1024.0;
  pi[5] = nspan;
  int rank, np, st = CM_OK;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  double *all = NULL, *rv = NULL;
  int n = (int)recs->n, *cnt = NULL, *dsp = NULL;
  size_t tot = 0;
  if (!rank) {
    all = malloc(sizeof mine * (size_t)np);
    cnt = malloc(sizeof(int) * (size_t)np);
    dsp = malloc(sizeof(int) * (size_t)np);
    if (!all || !cnt || !dsp)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (gather)");
  }
  st = cm__mpi_agree(ctx, st, MPI_COMM_WORLD);
  if (!st) {
    MPI_Gather(mine, W, MPI_DOUBLE, all, W, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (a->part && !rank)
      cm__print_partition(all, W, np, nspan, src->msys != NULL);
    MPI_Gather(&n, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int q = 0; !rank && q < np; q++)
      dsp[q] = (int)tot, tot += (size_t)cnt[q];
    if (!rank && !(rv = malloc(sizeof(double) * (tot + 1))))
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory (gather)");
    st = cm__mpi_agree(ctx, st, MPI_COMM_WORLD);
  }
  if (!st)
    MPI_Gatherv(recs->v, n, MPI_DOUBLE, rv, cnt, dsp, MPI_DOUBLE, 0,
                MPI_COMM_WORLD);
  if (!st && !rank) {
    cm__mpi_sums_t S;
    cm__mpi_more_t M;
    cm__combine(all, W, np, &S, &M);
    st = cm__build_report(ctx, src, &a->opts, rv, tot, &S, &M, rep);
    if (!st)
      (*rep)->t_parse = t_read;
  }
  free(all), free(cnt), free(dsp), free(rv);
  return cm__mpi_agree(ctx, st, MPI_COMM_WORLD);
}

void cm__mpi_print_report(const cm_report_t *rep, const cm__args_t *a, int st,
                          int timed_out) {
  if (a->json) {
    char *text = cm_report_to_json(
        rep, CM_JSON_INDENT | (a->notime ? CM_JSON_NO_TIMINGS : 0));
    if (text)
      printf("%s\n", text);
    free(text);
  } else {
    cm_report_write_text(rep, stdout);
  }
  fflush(stdout);
  if (st == CM_NOT_CONVERGED && timed_out)
    fprintf(stderr,
            "cmodes-mpi analyze: warning: not converged: the "
            "eigen-solve stopped by its time budget (--max-seconds "
            "%g); the report is partial (solver.converged false)\n",
            a->opts.max_seconds);
  else if (st == CM_NOT_CONVERGED)
    fprintf(stderr, "cmodes-mpi analyze: warning: not converged: a "
                    "component's modes did not meet --tol within "
                    "--max-iter; the report is partial (solver.converged "
                    "false)\n");
}

/* With components cut by the partition (solved by PARPACK only): the
 * options of `cmodes analyze` that choose another solver are refused by
 * name (docs/distributed.md, "Options"). */
static int cm__cut_options(cm_context_t *ctx, const cm_options_t *o, int nspan,
                           int np) {
  if (o->method == CM_METHOD_DENSE || o->method == CM_METHOD_LANCZOS)
    return CM__ERR(ctx, CM_USAGE, "method",
                   "--method %s: %d component(s) spread over the %d ranks "
                   "are solved by PARPACK only (no distributed dense or "
                   "Lanczos solve); use --method auto or arpack, or run "
                   "'cmodes analyze'",
                   o->method == CM_METHOD_DENSE ? "dense" : "lanczos", nspan,
                   np);
  if (o->chebyshev >= 2)
    return CM__ERR(ctx, CM_USAGE, "chebyshev",
                   "--chebyshev %d: %d component(s) spread over the %d "
                   "ranks are solved by PARPACK on S itself (no distributed "
                   "Chebyshev filter); leave --chebyshev at 0, or run "
                   "'cmodes analyze'",
                   o->chebyshev, nspan, np);
  return CM_OK;
}

static int cm__mpi_analyze(int argc, char **argv, int rank, int np) {
  cm__args_t a;
  int code = cm__analyze_args(argc, argv, rank, &a);
  if (code >= 0)
    return code;
  if (a.matrices)
    return cm__mpimat_analyze(&a, rank, np);
  cm_context_t ctx;
  cm_context_init(&ctx);
  ctx.threads = a.threads;
  cm__part_file_t f;
  cm__mpi_part_t P;
  cm__part_prepare(&P, &f, rank, np);
  cm__dbuf_t recs = {0};
  cm__mpi_sums_t sums;
  cm__mpi_more_t more;
  memset(&sums, 0, sizeof sums);
  memset(&more, 0, sizeof more);
  sums.pc_contact = -1;
  sums.damp_h = sums.damp_cert = INFINITY, sums.damp_comp = -1;
  int *span = malloc(sizeof(int) * ((size_t)np + 1)), nspan = 0;
  int *members = malloc(sizeof(int) * ((size_t)np + 1));
  cm_report_t *rep = NULL;
  /* ---- read this rank's part ---- */
  double t0 = MPI_Wtime();
  int st = span && members ? cm__read_rank(&ctx, &P, &f, a.path, &more)
                           : CM__ERR(&ctx, CM_NOMEM, NULL, "out of memory");
  if (!st && a.vectors)
    st = cm__mpi_vecs_init(&ctx, &P);
  double t_read = MPI_Wtime() - t0, dash = 0;
  st = cm__mpi_agree(&ctx, st, MPI_COMM_WORLD);
  if (!st) {
    MPI_Allreduce(&more.dashpots, &dash, 1, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    P.dashpots = dash > 0;
    if (dash > 0 && a.opts.damping_ratio > 0) /* as cm_analyze_system */
      st = CM__ERR(&ctx, CM_USAGE, "damping_ratio",
                   "damping_ratio: the scene has dashpots, whose damping "
                   "the step already includes (C = J^T G J); a modal ratio "
                   "on top would count it twice: leave damping_ratio at 0");
  }
  /* ---- solve: components on one rank, then the cut ones ---- */
  if (!st)
    nspan = cm__cut_components(&P, span);
  if (!st && nspan > 0) /* the same on every rank: the options that a cut
                           component's PARPACK solve cannot honour */
    st = cm__cut_options(&ctx, &a.opts, nspan, np);
  /* the probabilistic bound's failure probability split over the np
   * local analyses and the cut components (a union bound) */
  cm_options_t sopts = a.opts;
  sopts.failure_probability = a.opts.failure_probability / (np + nspan);
  /* --max-seconds: one budget for the local and the cut solves, from here
   * (each rank's clock; the cut solves stop when any rank is past it) */
  double deadline =
      a.opts.max_seconds > 0 ? MPI_Wtime() + a.opts.max_seconds : 0;
  if (!st)
    st = cm__local_solve(&ctx, &P, span, nspan, &sopts, &recs, &sums, &more);
  st = cm__mpi_agree(&ctx, st, MPI_COMM_WORLD);
  st = cm__solve_cut(&ctx, &P, span, nspan, members, &sopts, deadline, &recs,
                     &sums, &more, st);
  if (recs.nomem)
    st = CM__ERR(&ctx, CM_NOMEM, NULL, "out of memory (records)");
  st = cm__mpi_agree(&ctx, st, MPI_COMM_WORLD);
  /* ---- the report on rank 0 ---- */
  if (st >= 0) {
    int warn = st; /* not converged: a partial report, exit 5 */
    double timed = 0;
    MPI_Allreduce(&sums.timed_out, &timed, 1, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    cm__mpi_src_t src = {P.f, NULL};
    double part[4] = {(double)P.b0, (double)P.b1, (double)P.c0, (double)P.c1};
    st = cm__mpi_gather_report(&ctx, &src, part, &a, nspan, &recs, &sums, &more,
                               t_read, &rep);
    if (!st && a.vectors) /* written before the report, as by cmodes */
      st = cm__mpi_vecs_write(&ctx, &P, rep, a.vectors);
    int fs = !st && !rank && rep ? rep->status : CM_OK;
    MPI_Bcast(&fs, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!st)
      st = warn > fs ? warn : fs;
    if (st >= 0 && !rank)
      cm__mpi_print_report(rep, &a, st, timed > 0);
  }
  if (st < 0 && !rank)
    fprintf(stderr, "cmodes-mpi analyze: %s: %s\n", cm_status_message(st),
            ctx.message[0] ? ctx.message : cm_status_message(st));
  cm_report_destroy(&rep);
  cm__dbuf_free(&recs);
  free(span), free(members);
  cm__mpi_vecs_free(&P);
  cm__part_free(&P);
  cm__part_close(&f);
  return cm_status_exit(st);
}

static void cm__usage(FILE *f) {
  fprintf(f, "usage: cmodes-mpi convert IN OUT.cmpart\n"
             "       mpirun -np N cmodes-mpi analyze [options] "
             "SCENE.cmpart\n"
             "       mpirun -np N cmodes-mpi analyze [options] --matrices "
             "MANIFEST | M.mtx J.mtx k.mtx\n\n"
             "cmodes over MPI (docs/distributed.md).\n");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int code;
  /* CMODES_KERNELS may differ between ranks (mpirun -x, or not): the
   * first rank whose value names no set says so, and every rank stops */
  int kbad = cm__isa_env_check(NULL) ? rank : np, kfirst = np;
  MPI_Allreduce(&kbad, &kfirst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  char kprog[48];
  snprintf(kprog, sizeof kprog, rank ? "cmodes-mpi (rank %d)" : "cmodes-mpi",
           rank);
  if (kfirst < np && kfirst == rank)
    cm__isa_env_check(kprog);
  else if (kfirst == np && !rank)
    cm__isa_env_check("cmodes-mpi");  /* the note of a set above the CPU's */
  if (cm__mpi_alloc_init(rank) < 0 || /* the same on every rank */
      kfirst < np) {
    code = cm_status_exit(CM_USAGE);
  } else if (argc < 2) {
    if (!rank)
      cm__usage(stderr);
    code = cm_status_exit(CM_USAGE);
  } else if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    if (!rank)
      cm__usage(stdout);
    code = 0;
  } else if (!strcmp(argv[1], "convert")) {
    code = cm__mpi_convert(argc - 1, argv + 1, rank);
  } else if (!strcmp(argv[1], "analyze")) {
    if (rank) /* one copy of the messages: rank 0 prints them */
      (void)!freopen("/dev/null", "w", stderr);
    code = cm__mpi_analyze(argc - 1, argv + 1, rank, np);
    /* every rank agreed on the status and rank 0 wrote the report and
     * returns it; another rank exiting non-zero first could make mpirun
     * abort the job while rank 0's report was still on its way to
     * mpirun's stdout (seen once under ASan and load: exit 5 with no
     * report) */
    if (rank)
      code = 0;
    if (cm__mpi_alloc_counting()) /* RANK:0: the test's count (stdout,
                                      as rank > 0 has no stderr) */
      printf("cmodes-mpi: rank %d: %ld tracked allocations\n", rank,
             cm__mpi_alloc_count());
  } else {
    if (!rank)
      fprintf(stderr,
              "cmodes-mpi: unknown command '%s' (convert, "
              "analyze)\n",
              argv[1]);
    code = cm_status_exit(CM_USAGE);
  }
  MPI_Finalize();
  return code;
}
