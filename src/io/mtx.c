/* mtx.c: reads a general system (M, J, k) from Matrix Market files with
 * CHOLMOD's reader, and the JSON manifest that names them. A light line
 * scanner runs first so that every bad file gets a message naming the file
 * and line (CHOLMOD's reader only says "invalid format"). Not for writing
 * (mtx_write.c) or for scenes. */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cholmod.h"

/* ---- CHOLMOD's messages -------------------------------------------------- */

/* CHOLMOD reports errors through a handler with no user pointer, so the
 * last message is kept per thread (the only static state here). */
static _Thread_local char cm__chol_msg[256];

static void cm__chol_handler(int status, const char *file, int line,
                             const char *message) {
  (void)file, (void)line;
  snprintf(cm__chol_msg, sizeof cm__chol_msg, "%s (CHOLMOD status %d)",
           message ? message : "?", status);
}

static void cm__chol_start(cholmod_common *c) {
  cholmod_start(c);
  c->print = 0;
  c->error_handler = cm__chol_handler;
  cm__chol_msg[0] = 0;
}

/* ---- the line scanner ----------------------------------------------------- */

/* What the banner and size line say, and where things are. */
typedef struct {
  const char *path; /* file name for messages */
  const char *name; /* "M", "J" or "k" */
  int array;        /* 1: array format; 0: coordinate */
  int pattern;      /* 1: pattern field (no values) */
  int symmetric;    /* 1: symmetric (or skew/hermitian: rejected) */
  long nrow, ncol;  /* size */
  long nnz;         /* entries declared (coordinate) or values (array) */
  long size_line;   /* line of the size line */
} cm__mm_t;

typedef struct {
  FILE *f;
  char *buf;
  size_t cap;
  long lineno;
  size_t total; /* bytes read */
  long err;     /* < -1: cm__getline_limited stopped at a limit */
} cm__lines_t;

static int cm__getline(cm__lines_t *l) {
  long n = cm__getline_limited(&l->buf, &l->cap, l->f, &l->total);
  if (n < 0) { /* the end, or a limit: /dev/zero stops (l->err) */
    l->err = n;
    return 0;
  }
  l->lineno++;
  while (n > 0 && (l->buf[n - 1] == '\n' || l->buf[n - 1] == '\r'))
    l->buf[--n] = 0;
  return 1;
}

static int cm__is_blank(const char *s) {
  for (; *s; s++)
    if (!isspace((unsigned char)*s))
      return 0;
  return 1;
}

/* Next line that is not a comment or blank; 0 at end of file. */
static int cm__data_line(cm__lines_t *l) {
  while (cm__getline(l))
    if (l->buf[0] != '%' && !cm__is_blank(l->buf))
      return 1;
  return 0;
}

static int cm__streq_ci(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
      return 0;
  return *a == *b;
}

/* Parses "%%MatrixMarket matrix FORMAT FIELD SYMMETRY". */
static int cm__banner(cm_context_t *ctx, cm__lines_t *l, cm__mm_t *mm) {
  if (!cm__getline(l))
    return CM__ERR(ctx, CM_PARSE, mm->path,
                   "%s:1: empty file: expected a Matrix Market matrix (%s)",
                   mm->path, mm->name);
  char w[5][64] = {{0}};
  int nw = sscanf(l->buf, "%63s %63s %63s %63s %63s", w[0], w[1], w[2], w[3],
                  w[4]);
  /* the banner word exactly, as CHOLMOD's reader (and mmio) take it:
   * "%%MatrixMarKet" passed here, then CHOLMOD read the file another way,
   * failed and leaked its matrix (found by fuzz_mtx) */
  if (nw < 5 || strcmp(w[0], "%%MatrixMarket") ||
      !cm__streq_ci(w[1], "matrix"))
    return CM__ERR(ctx, CM_PARSE, mm->path,
                   "%s:1: not a Matrix Market file: the first line must be "
                   "like '%%%%MatrixMarket matrix coordinate real general'",
                   mm->path);
  if (cm__streq_ci(w[2], "array"))
    mm->array = 1;
  else if (!cm__streq_ci(w[2], "coordinate"))
    return CM__ERR(ctx, CM_PARSE, mm->path,
                   "%s:1: format '%s': expected coordinate or array",
                   mm->path, w[2]);
  if (cm__streq_ci(w[3], "pattern"))
    mm->pattern = 1;
  else if (!cm__streq_ci(w[3], "real") && !cm__streq_ci(w[3], "integer"))
    return CM__ERR(ctx, CM_PARSE, mm->path,
                   "%s:1: field '%s': %s must be real (or integer)",
                   mm->path, w[3], mm->name);
  if (mm->pattern)
    return CM__ERR(ctx, CM_PARSE, mm->path,
                   "%s:1: a pattern matrix has no values: %s needs real "
                   "entries",
                   mm->path, mm->name);
  if (cm__streq_ci(w[4], "symmetric"))
    mm->symmetric = 1;
  else if (!cm__streq_ci(w[4], "general"))
    return CM__ERR(ctx, CM_PARSE, mm->path,
                   "%s:1: symmetry '%s': expected general or symmetric",
                   mm->path, w[4]);
  return CM_OK;
}

/* Strict integer token; 1 on success. */
static int cm__tok_long(const char *s, long *v) {
  char *end;
  errno = 0;
  *v = strtol(s, &end, 10);
  return end != s && !*end && !errno;
}

/* Strict finite double token; 0 ok, 1 not a number, 2 not finite. */
static int cm__tok_double(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  if (end == s || *end)
    return 1;
  return isfinite(*v) ? 0 : 2;
}

/* Splits a line into at most max tokens (modifies it). */
static int cm__tokens(char *s, char **tok, int max) {
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(s, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
    if (n++ < max)
      tok[n - 1] = t;
  return n;
}

/* Value checks the scanner applies to every entry. */
#define CM__MM_POSITIVE 1 /* every value > 0 (k) */
#define CM__MM_DIAG 2     /* diagonal entries > 0 (M) */

/* The size line after the banner: "rows cols" (array) or "rows cols
 * entries" (coordinate) into mm, with the line it stands on. */
static int cm__mm_size(cm_context_t *ctx, cm__lines_t *l, cm__mm_t *mm) {
  const char *path = mm->path;
  char *tok[4];
  if (!cm__data_line(l))
    return CM__ERR(ctx, CM_PARSE, path,
                   "%s:%ld: truncated: no size line after the banner", path,
                   l->lineno);
  mm->size_line = l->lineno;
  long v[3] = {0, 0, 0};
  int want = mm->array ? 2 : 3;
  int nt = cm__tokens(l->buf, tok, 4);
  int ok = nt == want;
  for (int i = 0; ok && i < want; i++)
    ok = cm__tok_long(tok[i], &v[i]) && v[i] >= 0 && v[i] < INT_MAX;
  if (!ok)
    return CM__ERR(ctx, CM_PARSE, path,
                   "%s:%ld: expected the size line '%s' with %s", path,
                   l->lineno, mm->array ? "rows cols" : "rows cols entries",
                   "non-negative integers");
  mm->nrow = v[0], mm->ncol = v[1];
  mm->nnz =
      mm->array ? (mm->symmetric ? v[0] * (v[0] + 1) / 2 : v[0] * v[1]) : v[2];
  if (mm->symmetric && mm->nrow != mm->ncol)
    return CM__ERR(ctx, CM_PARSE, path,
                   "%s:%ld: a symmetric matrix must be square, this one is "
                   "%ld x %ld",
                   path, l->lineno, mm->nrow, mm->ncol);
  return CM_OK;
}

/* Where the scan stands in the entries: the one-triangle check of a
 * symmetric coordinate file needs the first line above and below. */
typedef struct {
  long e;          /* entry index (0-based) */
  long upper_line; /* first line of an entry above the diagonal, 0: none */
  long lower_line; /* first line of an entry below it, 0: none */
} cm__mm_pos_t;

/* The (0-based) position of entry e and its value token from the tokens of
 * its line (nt of them). */
static int cm__mm_where(cm_context_t *ctx, const cm__lines_t *l,
                        const cm__mm_t *mm, cm__mm_pos_t *p, char **tok, int nt,
                        long *i, long *j, const char **vt) {
  const char *path = mm->path;
  if (mm->array) {
    if (nt != 1)
      return CM__ERR(ctx, CM_PARSE, path,
                     "%s:%ld: expected one value per line (array format), "
                     "found %d",
                     path, l->lineno, nt);
    *vt = tok[0];
    /* column-major; symmetric arrays hold the lower triangle */
    if (mm->symmetric) {
      long rem = p->e, c;
      for (c = 0; rem >= mm->nrow - c; c++)
        rem -= mm->nrow - c;
      *j = c, *i = c + rem;
    } else {
      *i = mm->nrow ? p->e % mm->nrow : 0;
      *j = mm->nrow ? p->e / mm->nrow : 0;
    }
    return CM_OK;
  }
  if (nt != 3 || !cm__tok_long(tok[0], i) || !cm__tok_long(tok[1], j))
    return CM__ERR(ctx, CM_PARSE, path,
                   "%s:%ld: expected an entry 'row col value' (1-based "
                   "indices)",
                   path, l->lineno);
  if (*i < 1 || *i > mm->nrow || *j < 1 || *j > mm->ncol)
    return CM__ERR(ctx, CM_PARSE, path,
                   "%s:%ld: entry (%ld, %ld) is outside the %ld x %ld "
                   "matrix declared on line %ld",
                   path, l->lineno, *i, *j, mm->nrow, mm->ncol, mm->size_line);
  --*i, --*j;
  *vt = tok[2];
  if (mm->symmetric && *i < *j && !p->upper_line)
    p->upper_line = l->lineno;
  if (mm->symmetric && *i > *j && !p->lower_line)
    p->lower_line = l->lineno;
  return CM_OK;
}

/* Reads and checks entry p->e: its line, position, value and the value
 * checks. */
static int cm__mm_entry(cm_context_t *ctx, cm__lines_t *l, const cm__mm_t *mm,
                        int checks, cm__mm_pos_t *p) {
  const char *path = mm->path, *name = mm->name;
  if (!cm__data_line(l))
    return CM__ERR(ctx, CM_PARSE, path,
                   "%s:%ld: truncated: the size line (line %ld) declares "
                   "%ld %s, the file ends after %ld",
                   path, l->lineno, mm->size_line, mm->nnz,
                   mm->array ? "values" : "entries", p->e);
  long i = 0, j = 0;
  double v;
  char *tok[4];
  const char *vt = NULL;
  int nt = cm__tokens(l->buf, tok, 4);
  int st = cm__mm_where(ctx, l, mm, p, tok, nt, &i, &j, &vt);
  if (st)
    return st;
  int bad = cm__tok_double(vt, &v);
  if (bad)
    return CM__ERR(ctx, CM_PARSE, path, "%s:%ld: %s(%ld,%ld) = '%s' is %s",
                   path, l->lineno, name, i + 1, j + 1, vt,
                   bad == 1 ? "not a number" : "not finite (NaN or infinity)");
  if ((checks & CM__MM_POSITIVE) && !(v > 0))
    return CM__ERR(ctx, CM_PARSE, path,
                   "%s:%ld: %s[%ld] = %g: every penalty stiffness must be > 0",
                   path, l->lineno, name, (mm->nrow == 1 ? j : i) + 1, v);
  if ((checks & CM__MM_DIAG) && i == j && !(v > 0))
    return CM__ERR(ctx, CM_NOT_SPD, path,
                   "%s:%ld: diagonal entry %s(%ld,%ld) = %g is not positive: "
                   "a mass matrix is positive definite",
                   path, l->lineno, name, i + 1, j + 1, v);
  return CM_OK;
}

/* Scans the whole file: banner, size, every entry (indices in range, values
 * finite, the declared count). Errors name the file and line. */
static int cm__mm_scan(cm_context_t *ctx, const char *path, const char *name,
                       int checks, cm__mm_t *mm) {
  memset(mm, 0, sizeof *mm);
  mm->path = path;
  mm->name = name;
  cm__lines_t l = {cm__fopen_input(path, "r"), NULL, 0, 0, 0, 0};
  if (!l.f)
    return CM__ERR(ctx, CM_IO, path, "%s: cannot open %s: %s", path, name,
                   strerror(errno));
  int st = cm__banner(ctx, &l, mm);
  if (!st)
    st = cm__mm_size(ctx, &l, mm);
  cm__mm_pos_t p = {0, 0, 0};
  for (; !st && p.e < mm->nnz; p.e++)
    st = cm__mm_entry(ctx, &l, mm, checks, &p);
  if (!st && p.upper_line && p.lower_line)
    st =
        CM__ERR(ctx, CM_PARSE, path,
                "%s:%ld: a symmetric file stores one triangle, but this "
                "entry is above the diagonal and line %ld is below: keep "
                "only the lower (or only the upper) triangle",
                path, p.upper_line > p.lower_line ? p.upper_line : p.lower_line,
                p.upper_line > p.lower_line ? p.lower_line : p.upper_line);
  if (!st && cm__data_line(&l))
    st = CM__ERR(ctx, CM_PARSE, path,
                 "%s:%ld: more %s than the %ld declared on line %ld", path,
                 l.lineno, mm->array ? "values" : "entries", mm->nnz,
                 mm->size_line);
  if (l.err < -1) /* a limit, not the end the messages above assumed */
    st = cm__input_error(ctx, path, l.lineno + 1, l.err);
  fclose(l.f);
  free(l.buf);
  return st;
}

/* Line of entry (i, j) (0-based) in a coordinate file, or of (j, i) for a
 * symmetric one; 0 if absent. Only used on error paths. */
static long cm__mm_find_line(const char *path, long i, long j, int sym) {
  cm__lines_t l = {cm__fopen_input(path, "r"), NULL, 0, 0, 0, 0};
  long found = 0;
  if (!l.f)
    return 0;
  if (cm__getline(&l) && cm__data_line(&l)) /* banner, size */
    while (!found && cm__data_line(&l)) {
      long a, b;
      if (sscanf(l.buf, "%ld %ld", &a, &b) == 2 &&
          ((a == i + 1 && b == j + 1) || (sym && a == j + 1 && b == i + 1)))
        found = l.lineno;
    }
  fclose(l.f);
  free(l.buf);
  return found;
}

/* ---- reading with CHOLMOD ---------------------------------------------------- */

static int cm__chol_fail(cm_context_t *ctx, const char *path,
                         const char *what) {
  return CM__ERR(ctx, CM_PARSE, path, "%s: CHOLMOD could not read %s: %s",
                 path, what, cm__chol_msg[0] ? cm__chol_msg : "unknown error");
}

/* The nonzeros of a dense (array) matrix as a sparse one, both triangles
 * (a symmetric file's lower triangle mirrored, whatever CHOLMOD left in the
 * upper one), columns sorted; NULL when out of memory. */
static cholmod_sparse *cm__array_to_sparse(const cholmod_dense *X, int sym,
                                           cholmod_common *c) {
  size_t m = X->nrow, n = X->ncol, d = X->d, nz = 0;
  const double *x = X->x;
#define CM__AT(i, j) (sym && (i) < (j) ? x[(i) * d + (j)] : x[(j) * d + (i)])
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++)
      nz += CM__AT(i, j) != 0;
  cholmod_sparse *A = cholmod_allocate_sparse(m, n, nz, 1, 1, 0, CHOLMOD_REAL,
                                              c);
  if (!A)
    return NULL;
  int *Ap = A->p, *Ai = A->i;
  double *Ax = A->x;
  size_t q = 0;
  for (size_t j = 0; j < n; j++) {
    Ap[j] = (int)q;
    for (size_t i = 0; i < m; i++) {
      double v = CM__AT(i, j);
      if (v != 0)
        Ai[q] = (int)i, Ax[q++] = v;
    }
  }
  Ap[n] = (int)q;
#undef CM__AT
  return A;
}

static cholmod_sparse *cm__read_sparse(cm_context_t *ctx, const cm__mm_t *mm,
                                       cholmod_common *c) {
  FILE *f = cm__fopen_input(mm->path, "r");
  if (!f) {
    CM__ERR(ctx, CM_IO, mm->path, "%s: cannot open: %s", mm->path,
            strerror(errno));
    return NULL;
  }
  cholmod_sparse *A = NULL;
  if (mm->array) {
    /* CHOLMOD's sparse reader refuses the array format ("argument
     * missing"), which scipy's mmwrite writes for a dense matrix: read it
     * dense and keep its nonzeros (a symmetric array stores the lower
     * triangle; cm__array_to_sparse mirrors it) */
    int mtype = 0;
    void *p = cholmod_read_matrix(f, 1, &mtype, c);
    fclose(f);
    if (p && mtype == CHOLMOD_DENSE) {
      cholmod_dense *X = p;
      A = cm__array_to_sparse(X, mm->symmetric, c);
      cholmod_free_dense(&X, c);
      if (!A)
        CM__ERR(ctx, CM_NOMEM, mm->path, "%s: out of memory converting %s",
                mm->path, mm->name);
      return A;
    }
    if (p && mtype == CHOLMOD_SPARSE)
      A = p;
    else if (p && mtype == CHOLMOD_TRIPLET) {
      cholmod_triplet *T = p;
      A = cholmod_triplet_to_sparse(T, 0, c);
      cholmod_free_triplet(&T, c);
    }
  } else {
    A = cholmod_read_sparse(f, c);
    fclose(f);
  }
  if (!A)
    cm__chol_fail(ctx, mm->path, mm->name);
  return A;
}

/* Checks a general-stored M for symmetry: |M - M^T| <= 1e-14 max|M|. */
static int cm__check_symmetric(cm_context_t *ctx, const cm__mm_t *mm,
                               cholmod_sparse *A, cholmod_common *c) {
  cholmod_sparse *T = cholmod_transpose(A, 2, c);
  if (!T)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  const int *Ap = A->p, *Ai = A->i, *Tp = T->p, *Ti = T->i;
  const double *Ax = A->x, *Tx = T->x;
  double amax = 0;
  for (long q = 0; q < Ap[A->ncol]; q++)
    amax = fmax(amax, fabs(Ax[q]));
  long bi = -1, bj = -1;
  double va = 0, vt = 0;
  for (long j = 0; bi < 0 && j < (long)A->ncol; j++) {
    int qa = Ap[j], qt = Tp[j];
    while (bi < 0 && (qa < Ap[j + 1] || qt < Tp[j + 1])) {
      int ia = qa < Ap[j + 1] ? Ai[qa] : INT_MAX;
      int it = qt < Tp[j + 1] ? Ti[qt] : INT_MAX;
      double a = ia <= it ? Ax[qa] : 0, t = it <= ia ? Tx[qt] : 0;
      if (fabs(a - t) > 1e-14 * amax)
        bi = ia <= it ? ia : it, bj = j, va = a, vt = t;
      if (ia <= it)
        qa++;
      if (it <= ia)
        qt++;
    }
  }
  cholmod_free_sparse(&T, c);
  if (bi < 0)
    return CM_OK;
  long line = cm__mm_find_line(mm->path, bi, bj, 0);
  if (!line)
    line = cm__mm_find_line(mm->path, bj, bi, 0);
  return CM__ERR(ctx, CM_INVALID_SCENE, mm->path,
                 "%s:%ld: M is not symmetric: M(%ld,%ld) = %.17g but "
                 "M(%ld,%ld) = %.17g; store a symmetric mass matrix (or only "
                 "its lower triangle, as 'symmetric')",
                 mm->path, line ? line : mm->size_line, bi + 1, bj + 1, va,
                 bj + 1, bi + 1, vt);
}

/* Factors M (lower, stype -1) to check it is positive definite; names the
 * column where the factorisation fails and the line of its diagonal. */
static int cm__check_spd(cm_context_t *ctx, const cm__mm_t *mm,
                         cholmod_sparse *L_lower, cholmod_common *c) {
  c->final_ll = 1;
  c->quick_return_if_not_posdef = 1;
  cholmod_factor *F = cholmod_analyze(L_lower, c);
  if (!F)
    return CM__ERR(ctx, CM_NOMEM, NULL, "%s: cannot analyse M: %s", mm->path,
                   cm__chol_msg);
  cholmod_factorize(L_lower, F, c);
  int st = CM_OK;
  if (c->status == CHOLMOD_NOT_POSDEF || F->minor < F->n) {
    long col = F->minor < F->n && F->Perm ? ((int *)F->Perm)[F->minor]
                                          : (long)F->minor;
    long line = cm__mm_find_line(mm->path, col, col, 1);
    st = CM__ERR(ctx, CM_NOT_SPD, mm->path,
                 "%s:%ld: M is not positive definite: the Cholesky "
                 "factorisation fails at column %ld (1-based, as in the "
                 "file%s); check that block",
                 mm->path, line ? line : mm->size_line, col + 1,
                 line ? "; this line is its diagonal entry" : "");
  } else if (c->status < 0) {
    st = CM__ERR(ctx, CM_NUMERIC, mm->path, "%s: factorising M failed: %s",
                 mm->path, cm__chol_msg);
  }
  cholmod_free_factor(&F, c);
  return st;
}

/* Reads M and returns it as a lower-stored (stype -1) sparse matrix. */
static int cm__read_M(cm_context_t *ctx, const cm__mm_t *mm,
                      cholmod_common *c, cholmod_sparse **out) {
  *out = NULL;
  if (mm->nrow != mm->ncol)
    return CM__ERR(ctx, CM_INVALID_SCENE, mm->path,
                   "%s:%ld: M is %ld x %ld: a mass matrix is square",
                   mm->path, mm->size_line, mm->nrow, mm->ncol);
  if (mm->nrow == 0)
    return CM__ERR(ctx, CM_INVALID_SCENE, mm->path,
                   "%s:%ld: M is empty (0 x 0)", mm->path, mm->size_line);
  cholmod_sparse *A = cm__read_sparse(ctx, mm, c);
  if (!A)
    return ctx->status;
  int st = CM_OK;
  if (A->stype == 0)
    st = cm__check_symmetric(ctx, mm, A, c);
  cholmod_sparse *L = NULL;
  if (!st) { /* lower triangle, sorted, packed */
    L = A->stype > 0 ? cholmod_transpose(A, 2, c) : cholmod_copy(A, -1, 1, c);
    if (!L)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory converting M");
  }
  cholmod_free_sparse(&A, c);
  if (!st) {
    const int *Lp = L->p, *Li = L->i;
    for (long j = 0; !st && j < (long)L->ncol; j++) {
      int has = 0;
      for (int q = Lp[j]; q < Lp[j + 1]; q++)
        has |= Li[q] == j;
      if (!has)
        st = CM__ERR(ctx, CM_NOT_SPD, mm->path,
                     "%s:%ld: M(%ld,%ld) is missing: a mass matrix needs a "
                     "positive diagonal entry for every dof",
                     mm->path, mm->size_line, j + 1, j + 1);
    }
  }
  if (!st)
    st = cm__check_spd(ctx, mm, L, c);
  if (st) {
    cholmod_free_sparse(&L, c);
    return st;
  }
  *out = L;
  return CM_OK;
}

/* Reads J and returns J^T (n x nc, CSC), whose arrays are J in CSR. */
static int cm__read_J(cm_context_t *ctx, const cm__mm_t *mm, long n,
                      const char *m_path, cholmod_common *c,
                      cholmod_sparse **out) {
  *out = NULL;
  if (mm->ncol != n)
    return CM__ERR(ctx, CM_INVALID_SCENE, mm->path,
                   "%s:%ld: J is %ld x %ld but M (%s) is %ld x %ld: J needs "
                   "one column per dof of M",
                   mm->path, mm->size_line, mm->nrow, mm->ncol, m_path, n, n);
  cholmod_sparse *A = cm__read_sparse(ctx, mm, c);
  if (!A)
    return ctx->status;
  if (A->stype != 0) { /* a square J stored as symmetric: expand it */
    cholmod_sparse *U = cholmod_copy(A, 0, 1, c);
    cholmod_free_sparse(&A, c);
    A = U;
    if (!A)
      return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory expanding J");
  }
  cholmod_sparse *T = cholmod_transpose(A, 2, c);
  cholmod_free_sparse(&A, c);
  if (!T)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory transposing J");
  *out = T;
  return CM_OK;
}

/* Reads k as a dense vector of length nc. */
static int cm__read_k(cm_context_t *ctx, const cm__mm_t *mm, long nc,
                      const char *j_path, cholmod_common *c, double **out) {
  *out = NULL;
  if (!(mm->nrow == 1 || mm->ncol == 1) || mm->nrow * mm->ncol != nc)
    return CM__ERR(ctx, CM_INVALID_SCENE, mm->path,
                   "%s:%ld: k is %ld x %ld but J (%s) has %ld rows: k needs "
                   "one stiffness per row of J (%ld x 1)",
                   mm->path, mm->size_line, mm->nrow, mm->ncol, j_path, nc,
                   nc);
  FILE *f = cm__fopen_input(mm->path, "r");
  if (!f)
    return CM__ERR(ctx, CM_IO, mm->path, "%s: cannot open: %s", mm->path,
                   strerror(errno));
  int mtype = 0;
  void *p = cholmod_read_matrix(f, 1, &mtype, c);
  fclose(f);
  if (!p)
    return cm__chol_fail(ctx, mm->path, "k");
  cholmod_dense *X = NULL;
  if (mtype == CHOLMOD_DENSE) {
    X = p;
  } else if (mtype == CHOLMOD_SPARSE) {
    cholmod_sparse *S = p;
    X = cholmod_sparse_to_dense(S, c);
    cholmod_free_sparse(&S, c);
  } else {
    cholmod_triplet *T = p;
    cholmod_free_triplet(&T, c);
  }
  if (!X)
    return CM__ERR(ctx, CM_NOMEM, NULL, "%s: cannot convert k", mm->path);
  double *k = cm__malloc(ctx, (size_t)(nc ? nc : 1), sizeof *k);
  int st = k ? CM_OK : CM_NOMEM;
  if (k && nc)
    memcpy(k, X->x, (size_t)nc * sizeof *k); /* nc x 1 or 1 x nc: the same */
  for (long r = 0; !st && r < nc; r++)
    if (!(k[r] > 0)) /* only a missing coordinate entry can get here */
      st = CM__ERR(ctx, CM_INVALID_SCENE, mm->path,
                   "%s:%ld: k[%ld] is missing (zero): every row of J needs "
                   "a stiffness > 0",
                   mm->path, mm->size_line, r + 1);
  cholmod_free_dense(&X, c);
  if (st) {
    free(k);
    return st;
  }
  *out = k;
  return CM_OK;
}

int cm_system_read_matrices(cm_context_t *ctx, const char *m_path,
                            const char *j_path, const char *k_path,
                            cm_system_t **out) {
  /* ---- check inputs: scan the three files ---- */
  if (!out || !m_path || !j_path || !k_path)
    return CM__ERR(ctx, CM_USAGE, NULL,
                   "cm_system_read_matrices: NULL argument");
  *out = NULL;
  cm__mm_t mm, jm, km;
  int st = cm__mm_scan(ctx, m_path, "M", CM__MM_DIAG, &mm);
  if (!st)
    st = cm__mm_scan(ctx, j_path, "J", 0, &jm);
  if (!st)
    st = cm__mm_scan(ctx, k_path, "k", CM__MM_POSITIVE, &km);
  if (st)
    return st;
  /* ---- read with CHOLMOD ---- */
  cholmod_common c;
  cm__chol_start(&c);
  cholmod_sparse *M = NULL, *JT = NULL;
  double *k = NULL;
  st = cm__read_M(ctx, &mm, &c, &M);
  if (!st)
    st = cm__read_J(ctx, &jm, mm.nrow, m_path, &c, &JT);
  if (!st)
    st = cm__read_k(ctx, &km, jm.nrow, j_path, &c, &k);
  /* ---- build the system ---- */
  if (!st) {
    st = cm_system_from_matrices(ctx, (int)M->ncol, (int)JT->ncol, M->p,
                                 M->i, M->x, JT->p, JT->i, JT->x, k, out);
    if (st) { /* name the files in the message */
      char msg[sizeof ctx->message];
      memcpy(msg, ctx->message, sizeof msg);
      CM__ERR(ctx, st, ctx->path, "%s, %s, %s: %s", m_path, j_path, k_path,
              msg);
    }
  }
  cholmod_free_sparse(&M, &c);
  cholmod_free_sparse(&JT, &c);
  free(k);
  cholmod_finish(&c);
  return st;
}

/* ---- manifest ------------------------------------------------------------------ */

/* dir of path + rel, or rel when absolute; malloc'd. */
static char *cm__relative(const char *manifest, const char *rel) {
  if (rel[0] == '/')
    return cm__strdup(rel);
  const char *slash = strrchr(manifest, '/');
  size_t dl = slash ? (size_t)(slash - manifest + 1) : 0;
  char *p = malloc(dl + strlen(rel) + 1);
  if (p) {
    memcpy(p, manifest, dl);
    strcpy(p + dl, rel);
  }
  return p;
}

/* The manifest's optional "row_names" (one per row of J) and "col_names"
 * (one per dof of M): arrays of strings or nulls, given to the system. */
static int cm__manifest_names(cm_context_t *ctx, const char *path,
                              json_t *root, cm_system_t *sys) {
  static const char *const key[2] = {"row_names", "col_names"};
  const char **names[2] = {NULL, NULL};
  int want[2] = {sys->nc, sys->ndofs}, st = CM_OK;
  for (int w = 0; w < 2 && !st; w++) {
    json_t *a = json_object_get(root, key[w]);
    if (!a || json_is_null(a))
      continue;
    if (!json_is_array(a) || json_array_size(a) != (size_t)want[w]) {
      char got[64];
      snprintf(got, sizeof got, json_is_array(a) ? "has %zu names" : "is not "
               "an array", json_array_size(a));
      st = CM__ERR(ctx, CM_PARSE, key[w],
                   "%s: \"%s\" %s but %s %d %s: give one name (or null) "
                   "per %s",
                   path, key[w], got, w ? "M has" : "J has", want[w],
                   w ? "dofs" : "rows", w ? "dof of M" : "row of J");
      break;
    }
    names[w] = calloc((size_t)want[w] + 1, sizeof(char *));
    if (!names[w]) {
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
      break;
    }
    for (int i = 0; i < want[w] && !st; i++) {
      json_t *v = json_array_get(a, (size_t)i);
      if (json_is_string(v))
        names[w][i] = json_string_value(v);
      else if (!json_is_null(v))
        st = CM__ERR(ctx, CM_PARSE, key[w],
                     "%s: %s[%d] is not a string (a name) or null", path,
                     key[w], i);
    }
  }
  if (!st && (names[0] || names[1]))
    st = cm_system_set_names(ctx, sys, names[0], names[1]);
  free(names[0]), free(names[1]);
  return st;
}

int cm_system_read_manifest(cm_context_t *ctx, const char *path,
                            cm_system_t **out) {
  static const char *const allowed[] = {
      "format", "version", "M", "J", "k", "B", "S", "rows", "cols", "n",
      "nc", "ncomp", "source", "meta", "row_names", "col_names", NULL};
  static const char *const need[] = {"M", "J", "k"};
  /* ---- check inputs ---- */
  if (!out || !path)
    return CM__ERR(ctx, CM_USAGE, NULL, "cm_system_read_manifest: NULL "
                                        "argument");
  *out = NULL;
  FILE *f = cm__fopen_input(path, "r");
  if (!f)
    return CM__ERR(ctx, CM_IO, path, "%s: cannot open the manifest: %s", path,
                   strerror(errno));
  json_error_t err;
  json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &err);
  fclose(f);
  if (!root)
    return CM__ERR(ctx, CM_PARSE, path, "%s:%d:%d: malformed JSON: %s", path,
                   err.line, err.column, err.text);
  int st = CM_OK;
  if (!json_is_object(root))
    st = CM__ERR(ctx, CM_PARSE, path,
                 "%s:1: expected a JSON object {\"M\": \"M.mtx\", \"J\": "
                 "\"J.mtx\", \"k\": \"k.mtx\"}",
                 path);
  const char *key;
  json_t *val;
  if (!st)
    json_object_foreach(root, key, val) {
      int ok = 0;
      for (int i = 0; allowed[i]; i++)
        ok |= !strcmp(key, allowed[i]);
      if (!ok && !st)
        st = CM__ERR(ctx, CM_PARSE, key,
                     "%s: unknown key \"%s\" (a manifest names \"M\", \"J\" "
                     "and \"k\"; also allowed: row_names, col_names, format, "
                     "version, B, S, rows, cols, n, nc, ncomp, source, meta)",
                     path, key);
    }
  char *file[3] = {NULL, NULL, NULL};
  for (int i = 0; !st && i < 3; i++) {
    json_t *v = json_object_get(root, need[i]);
    if (!json_is_string(v) || !json_string_value(v)[0])
      st = CM__ERR(ctx, CM_PARSE, need[i],
                   "%s: \"%s\" %s: give the path of the %s file (relative "
                   "to the manifest)",
                   path, need[i], v ? "is not a file name" : "is missing",
                   i == 0 ? "mass matrix" : i == 1 ? "Jacobian" : "stiffness");
    else if (!(file[i] = cm__relative(path, json_string_value(v))))
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  }
  if (!st)
    st = cm_system_read_matrices(ctx, file[0], file[1], file[2], out);
  if (!st)
    st = cm__manifest_names(ctx, path, root, *out);
  if (st)
    cm_system_destroy(out);
  json_decref(root);
  for (int i = 0; i < 3; i++)
    free(file[i]);
  return st;
}
