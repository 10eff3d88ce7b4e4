/* mtx_write.c: writes an assembled system as Matrix Market files (M, J, k,
 * and optionally B = K^1/2 J L^-T and S = B B^T) with the row and column
 * maps and a manifest, all numbers in %.17g, for scipy / MATLAB / Julia
 * comparisons and for `cmodes analyze --matrices`. B is the operator's
 * (cm_operator_create): this file only writes. Not for reading (mtx.c). */
#include "internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cholmod.h"

/* dir/name, malloc'd. */
static char *cm__join(const char *dir, const char *name) {
  size_t dl = strlen(dir);
  char *p = malloc(dl + strlen(name) + 2);
  if (p)
    sprintf(p, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", name);
  return p;
}

typedef struct {
  cm_context_t *ctx;
  const char *dir;
  char *path; /* the file being written */
  FILE *f;
} cm__out_t;

static int cm__open(cm__out_t *o, const char *name) {
  free(o->path);
  o->path = cm__join(o->dir, name);
  if (!o->path)
    return CM__ERR(o->ctx, CM_NOMEM, NULL, "out of memory");
  o->f = fopen(o->path, "w");
  if (!o->f)
    return CM__ERR(o->ctx, CM_IO, o->path, "%s: cannot write: %s", o->path,
                   strerror(errno));
  return CM_OK;
}

static int cm__close(cm__out_t *o) {
  int bad = ferror(o->f);
  bad |= fclose(o->f) != 0;
  o->f = NULL;
  if (bad)
    return CM__ERR(o->ctx, CM_IO, o->path, "%s: write error (disk full?)",
                   o->path);
  return CM_OK;
}

/* A CSC (or CSR read as CSC of the transpose) matrix as coordinate entries;
 * transpose swaps the row and column written. */
static void cm__put_coord(FILE *f, int nouter, const int *p, const int *idx,
                          const double *x, int transpose) {
  for (int j = 0; j < nouter; j++)
    for (int q = p[j]; q < p[j + 1]; q++)
      if (transpose)
        fprintf(f, "%d %d %.17g\n", j + 1, idx[q] + 1, x[q]);
      else
        fprintf(f, "%d %d %.17g\n", idx[q] + 1, j + 1, x[q]);
}

static int cm__write_M(cm__out_t *o, const cm_system_t *s) {
  int st = cm__open(o, "M.mtx");
  if (st)
    return st;
  fprintf(o->f,
          "%%%%MatrixMarket matrix coordinate real symmetric\n"
          "%% cmodes: mass matrix M (lower triangle), %d x %d; column j is "
          "the dof in line j of cols.txt\n%d %d %d\n",
          s->n, s->n, s->n, s->n, s->Mp[s->n]);
  cm__put_coord(o->f, s->n, s->Mp, s->Mi, s->Mx, 0);
  return cm__close(o);
}

static int cm__write_J(cm__out_t *o, const cm_system_t *s) {
  int st = cm__open(o, "J.mtx");
  if (st)
    return st;
  fprintf(o->f,
          "%%%%MatrixMarket matrix coordinate real general\n"
          "%% cmodes: contact Jacobian J, %d x %d, gaps xi = J q; row i is "
          "the contact in line i of rows.txt\n%d %d %d\n",
          s->nc, s->n, s->nc, s->n, s->Jp[s->nc]);
  cm__put_coord(o->f, s->nc, s->Jp, s->Jj, s->Jx, 1);
  return cm__close(o);
}

static int cm__write_k(cm__out_t *o, const cm_system_t *s) {
  int st = cm__open(o, "k.mtx");
  if (st)
    return st;
  fprintf(o->f,
          "%%%%MatrixMarket matrix array real general\n"
          "%% cmodes: penalty stiffness k of each row of J, N/m\n%d 1\n",
          s->nc);
  for (int r = 0; r < s->nc; r++)
    fprintf(o->f, "%.17g\n", s->k[r]);
  return cm__close(o);
}

/* rows.txt and cols.txt: where each row and column comes from. */
static int cm__write_maps(cm__out_t *o, const cm_system_t *s) {
  int st = cm__open(o, "rows.txt");
  if (st)
    return st;
  fprintf(o->f, "# row contact component a b\n"
                "# (0-based: J row, scene contact index, component, bodies "
                "a and b; -1 = the world)\n");
  for (int c = 0; c < s->ncomp; c++)
    for (int r = s->comp_row[c]; r < s->comp_row[c + 1]; r++)
      fprintf(o->f, "%d %d %d %d %d\n", r, s->row_contact[r], c,
              s->row_a ? s->row_a[r] : -1, s->row_b ? s->row_b[r] : -1);
  if ((st = cm__close(o)))
    return st;
  if ((st = cm__open(o, "cols.txt")))
    return st;
  fprintf(o->f, "# col body dof component\n"
                "# (0-based: J and M column, scene body index, its dof: 2D "
                "0..2 = x y theta, 3D 0..5 = x y z rx ry rz; -1 = none)\n");
  for (int c = 0; c < s->ncomp; c++)
    for (int j = s->comp_col[c]; j < s->comp_col[c + 1]; j++)
      fprintf(o->f, "%d %d %d %d\n", j, s->col_body ? s->col_body[j] : -1,
              s->col_dof ? s->col_dof[j] : j, c);
  return cm__close(o);
}

/* ---- B and S: the operator's B, written ---------------------------------- */

/* B (nc x n) in CSR: the operator's own (cm_operator_csr) when M is block
 * diagonal; for a general M (a system read from Matrix Market files, whose
 * operator applies B by solves) row r is B^T e_r, one solve per row, exact
 * zeros dropped. *owned: the arrays are malloc'd here (free them). */
static int cm__B_csr(cm_context_t *ctx, cm_operator_t *op, const int **Bp,
                     const int **Bj, const double **Bx, int *owned) {
  *owned = 0;
  int st = cm_operator_csr(op, Bp, Bj, Bx);
  if (st != CM_USAGE)
    return st ? CM__ERR(ctx, st, NULL, "out of memory forming B") : CM_OK;
  int nc = cm_operator_rows(op), n = cm_operator_cols(op);
  int *p = malloc(((size_t)nc + 1) * sizeof *p), *j = NULL;
  double *x = NULL, *e = calloc((size_t)nc + 1, sizeof *e);
  double *row = malloc(((size_t)n + 1) * sizeof *row);
  size_t cap = (size_t)n + 1, len = 0;
  j = malloc(cap * sizeof *j);
  x = malloc(cap * sizeof *x);
  st = p && e && row && j && x ? CM_OK : CM_NOMEM;
  if (p)
    p[0] = 0;
  for (int r = 0; !st && r < nc; r++) {
    e[r] = 1;
    st = cm_operator_apply_BT(op, e, row); /* row r of B */
    e[r] = 0;
    if (!st && len + (size_t)n > cap) {
      cap = 2 * cap + (size_t)n;
      int *nj = realloc(j, cap * sizeof *j);
      double *nx = nj ? realloc(x, cap * sizeof *x) : NULL;
      j = nj ? nj : j;
      x = nx ? nx : x;
      st = nj && nx ? CM_OK : CM_NOMEM;
    }
    for (int c = 0; !st && c < n; c++)
      if (row[c] != 0)
        j[len] = c, x[len++] = row[c];
    if (!st)
      p[r + 1] = (int)len;
  }
  free(e), free(row);
  if (st) {
    free(p), free(j), free(x);
    return CM__ERR(ctx, st, NULL, "out of memory forming B");
  }
  *Bp = p, *Bj = j, *Bx = x, *owned = 1;
  return CM_OK;
}

/* B^T as a CHOLMOD view (n x nc CSC) of B's CSR arrays (not owned). */
static cholmod_sparse cm__BT_view(int nc, int n, const int *Bp, const int *Bj,
                                  const double *Bx) {
  cholmod_sparse A;
  memset(&A, 0, sizeof A);
  A.nrow = (size_t)n;
  A.ncol = (size_t)nc;
  A.nzmax = (size_t)(Bp[nc] > 0 ? Bp[nc] : 1);
  A.p = (void *)Bp;
  A.i = (void *)Bj;
  A.x = (void *)Bx;
  A.itype = CHOLMOD_INT;
  A.xtype = CHOLMOD_REAL;
  A.dtype = CHOLMOD_DOUBLE;
  A.packed = 1;
  return A;
}

static int cm__write_B(cm__out_t *o, int nc, int n, const int *Bp,
                       const int *Bj, const double *Bx) {
  int st = cm__open(o, "B.mtx");
  if (st)
    return st;
  fprintf(o->f,
          "%%%%MatrixMarket matrix coordinate real general\n"
          "%% cmodes: B = K^1/2 J L^-T with P M P^T = L L^T (the operator's "
          "B, as the analysis uses it): S = B B^T, omega_i = sigma_i(B); "
          "rows as J (rows.txt), columns are L's\n%d %d %d\n",
          nc, n, Bp[nc]);
  cm__put_coord(o->f, nc, Bp, Bj, Bx, 1);
  return cm__close(o);
}

/* S = B B^T, its lower triangle (CHOLMOD's product of the written B). */
static int cm__write_S(cm__out_t *o, int nc, int n, const int *Bp,
                       const int *Bj, const double *Bx) {
  cholmod_common c;
  cholmod_start(&c);
  c.print = 0;
  cholmod_sparse BT = cm__BT_view(nc, n, Bp, Bj, Bx);
  /* cholmod_aat(A) is A A^T: S = aat(B) with B = (B^T)^T */
  cholmod_sparse *B = cholmod_transpose(&BT, 1, &c);
  cholmod_sparse *S = B ? cholmod_aat(B, NULL, 0, 1, &c) : NULL;
  cholmod_sparse *SL = S ? cholmod_copy(S, -1, 1, &c) : NULL;
  int st = SL ? cm__open(o, "S.mtx")
              : CM__ERR(o->ctx, CM_NOMEM, NULL, "out of memory forming S");
  if (!st) {
    const int *p = SL->p;
    fprintf(o->f,
            "%%%%MatrixMarket matrix coordinate real symmetric\n%% cmodes: "
            "S = K^1/2 J M^-1 J^T K^1/2 = B B^T (lower triangle); eig(S) = "
            "omega^2\n%d %d %d\n",
            nc, nc, p[nc]);
    cm__put_coord(o->f, nc, SL->p, SL->i, SL->x, 0);
    st = cm__close(o);
  }
  cholmod_free_sparse(&B, &c);
  cholmod_free_sparse(&S, &c);
  cholmod_free_sparse(&SL, &c);
  cholmod_finish(&c);
  return st;
}

/* B.mtx and S.mtx as asked by flags, from the operator (one place builds
 * B: operator/operator.c). */
static int cm__write_operator(cm__out_t *o, const cm_system_t *s, int flags) {
  cm_operator_t *op = NULL;
  const int *Bp = NULL, *Bj = NULL;
  const double *Bx = NULL;
  int owned = 0;
  int st = cm_operator_create(o->ctx, s, &op);
  if (!st)
    st = cm__B_csr(o->ctx, op, &Bp, &Bj, &Bx, &owned);
  if (!st && (flags & CM_MTX_WRITE_B))
    st = cm__write_B(o, s->nc, s->n, Bp, Bj, Bx);
  if (!st && (flags & CM_MTX_WRITE_S))
    st = cm__write_S(o, s->nc, s->n, Bp, Bj, Bx);
  if (owned)
    free((void *)Bp), free((void *)Bj), free((void *)Bx);
  cm_operator_destroy(&op);
  return st;
}

/* row_names and col_names of the manifest, in the files' row and column
 * order: a matrix system's own names, or a scene's (a row: its contact's
 * name, ".t1"/".t2" for tangent rows, when some contact is named; a
 * column: "<body label>.<dof>"). Keys left out when there are none. */
static int cm__manifest_names(json_t *m, const cm_system_t *s,
                              const cm_scene_t *scene) {
  static const char *const d2[3] = {"x", "y", "theta"};
  static const char *const d3[6] = {"x", "y", "z", "rx", "ry", "rz"};
  int named = 0;
  for (int c = 0; scene && c < scene->ncontacts && !named; c++)
    named = cm_scene_contact_name(scene, c) != NULL;
  json_t *rows = named || s->row_names ? json_array() : NULL;
  json_t *cols = scene || s->col_names ? json_array() : NULL;
  char buf[300], lab[256];
  for (int r = 0; rows && r < s->nc; r++) {
    const char *nm = s->row_names
                         ? s->row_names[s->row_contact[r]]
                         : cm_scene_contact_name(scene, s->row_contact[r]);
    int kind = s->row_kind ? s->row_kind[r] : 0;
    if (nm && kind)
      snprintf(buf, sizeof buf, "%s.t%d", nm, kind);
    json_array_append_new(rows,
                          !nm ? json_null() : json_string(kind ? buf : nm));
  }
  for (int j = 0; cols && j < s->n; j++) {
    const char *nm = NULL;
    if (scene) {
      int d = s->col_dof[j];
      snprintf(buf, sizeof buf, "%s.%s",
               cm_scene_body_label(scene, s->col_body[j], lab, sizeof lab),
               scene->dim == 2 ? d2[d % 3] : d3[d % 6]);
      nm = buf;
    } else { /* a matrix system: column j is dof col_dof[j] of its M */
      nm = s->col_names[s->col_dof[j]];
    }
    json_array_append_new(cols, nm ? json_string(nm) : json_null());
  }
  if (rows)
    json_object_set_new(m, "row_names", rows);
  if (cols)
    json_object_set_new(m, "col_names", cols);
  return CM_OK;
}

static int cm__write_manifest(cm__out_t *o, const cm_system_t *s, int flags,
                              const char *source, const cm_scene_t *scene) {
  json_t *m = json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:i}", "format",
                        "cmodes-matrices", "version", 1, "M", "M.mtx", "J",
                        "J.mtx", "k", "k.mtx", "rows", "rows.txt", "cols",
                        "cols.txt", "n", s->n, "nc", s->nc, "ncomp", s->ncomp);
  if (!m)
    return CM__ERR(o->ctx, CM_NOMEM, NULL, "out of memory");
  if (flags & CM_MTX_WRITE_B)
    json_object_set_new(m, "B", json_string("B.mtx"));
  if (flags & CM_MTX_WRITE_S)
    json_object_set_new(m, "S", json_string("S.mtx"));
  if (source)
    json_object_set_new(m, "source", json_string(source));
  cm__manifest_names(m, s, scene);
  int st = cm__open(o, "manifest.json");
  if (!st) {
    json_dumpf(m, o->f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', o->f);
    st = cm__close(o);
  }
  json_decref(m);
  return st;
}

int cm_system_write_matrices(cm_context_t *ctx, const cm_system_t *sys,
                             const char *dir, int flags, const char *source) {
  return cm__system_write_matrices_named(ctx, sys, NULL, dir, flags, source);
}

int cm__system_write_matrices_named(cm_context_t *ctx, const cm_system_t *sys,
                                    const cm_scene_t *scene, const char *dir,
                                    int flags, const char *source) {
  if (!sys || !dir)
    return CM__ERR(ctx, CM_USAGE, NULL,
                   "cm_system_write_matrices: NULL "
                   "argument");
  cm__out_t o = {ctx, dir, NULL, NULL};
  int st = cm__write_M(&o, sys);
  if (!st)
    st = cm__write_J(&o, sys);
  if (!st)
    st = cm__write_k(&o, sys);
  if (!st)
    st = cm__write_maps(&o, sys);
  if (!st && (flags & (CM_MTX_WRITE_B | CM_MTX_WRITE_S)) && sys->nc > 0)
    st = cm__write_operator(&o, sys, flags);
  if (!st)
    st = cm__write_manifest(&o, sys, sys->nc > 0 ? flags : 0, source, scene);
  if (o.f)
    fclose(o.f);
  free(o.path);
  return st;
}
