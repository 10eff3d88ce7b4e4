/* bench_slepc.c: SLEPc's default Krylov-Schur eigensolver on the very
 * operator cmodes solved. Reads the binary B written by bench_modes
 * --export ("CMB1": int32 nr, ncol, int64 nnz, int32 Bp[nr+1], Bj[nnz],
 * float64 Bx[nnz]; optional trailer "GRP1": int32 ng, int32 g0[ng+1], the
 * operator's column groups) and wraps S = B B^T (nr <= ncol) or G = B^T B,
 * the smaller, as a PETSc shell matrix whose MatMult is cmodes' matvec
 * kernel: with the trailer, B by slots (one per group a row touches: first
 * column and size packed in one word, gmax values, zero-padded) and B^T by
 * groups (per group its rows ascending, gmax values each), the two products
 * specialised for a common group size 2, 3 or 6 and row-parallel in chunks
 * of 4096 rows above 20000 rows, their value streams prefetched 4 KiB
 * ahead, as src/operator/operator.c does them
 * (cm__slot_rows, cm__group_rows, cm__op_apply). Without the trailer (older
 * files) or with --csr two row-parallel OpenMP CSR loops over B and B^T.
 * Both give the same bits: the grouped sums are the CSR sums in the same
 * order with zero terms between. EPS_HEP, largest real, nev and tol as
 * given (relative residual test); everything else at SLEPc's defaults.
 * Prints one JSON line with the median EPSSolve time of --reps fresh
 * solves, the matvecs, the median time spent in them, the kernel (grouped
 * or csr) and the top frequencies. Not for anything but this comparison.
 *
 * usage: bench_slepc B.bin [--nev 6] [--tol 1e-6] [--reps 3] [--threads 2]
 *                          [--csr] [--check]
 * --csr: the CSR kernels even when the file has groups; --check: compare
 * the grouped products S x and G x with the CSR ones bit for bit on a few
 * vectors, print the result and exit (a debugging aid, not a test).
 */
#include <math.h>
#include <omp.h>
#include <slepceps.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GMAX 8            /* largest group cmodes forms (CM__GMAX) */
#define GCOLS (1 << 28)   /* columns that fit the packed slot word */
#define ROW_CHUNK 4096    /* rows per OpenMP chunk (CM__ROW_CHUNK) */
#define PAR_MIN 20000     /* parallel above this many rows (CM__PAR_MIN) */
#define PF_DOUBLES 512    /* value streams prefetched 4 KiB ahead (CM__PF_DOUBLES) */

typedef struct {
  int nr, ncol;          /* rows (contacts), columns (dofs) of B */
  int *Bp, *Bj;          /* B in CSR: row pointers nr+1, columns */
  double *Bx;            /* values */
  int *Tp, *Tj;          /* B^T in CSR: row pointers ncol+1, columns */
  double *Tx;            /* values */
  /* grouped forms (grouped = 1), as cmodes' operator keeps them */
  int grouped;
  int ng, gmax, guni;    /* groups, largest size, common size (0: mixed) */
  int *g0;               /* first column of each group, size ng+1 */
  int *Sp;               /* B: slots of each row, size nr+1 */
  unsigned *Sc;          /* B: slot = first column << 3 | (size - 1) */
  double *Sx;            /* B: gmax values per slot */
  int *Gp, *Gj;          /* B^T: entries of each group (ng+1), their rows */
  double *Gx;            /* B^T: gmax values per entry */
  double *tmp;           /* workspace, size max(nr, ncol) */
  int use_S;             /* 1: S = B B^T, 0: G = B^T B */
  int threads;           /* OpenMP threads of the matvec */
  long matvecs;          /* MatMult calls */
  double t_mv;           /* seconds in MatMult */
} shell_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- CSR kernels (files without groups) --------------------------------- */

/* y = A x for A in CSR with m rows, row-parallel. */
static void spmv(int m, const int *p, const int *j, const double *a,
                 const double *x, double *y, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (m > 4096)
  for (int i = 0; i < m; i++) {
    double s = 0;
    for (int q = p[i]; q < p[i + 1]; q++)
      s += a[q] * x[j[q]];
    y[i] = s;
  }
}

/* ---- grouped kernels: the shape of src/operator/operator.c -------------- */

/* The group holding column j (ng for j >= ncol). */
static int group_of(const shell_t *s, int j) {
  int lo = 0, hi = s->ng;
  if (j >= s->ncol)
    return s->ng;
  while (hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    if (s->g0[mid] <= j)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* (B x)_r for rows r in [i0, i1) from the slots; G: the common group size,
 * or 0 to read each slot's (cm__slot_rows). */
static inline __attribute__((always_inline)) void
slot_rows(const shell_t *s, int G, int i0, int i1, const double *x,
          double *y) {
  const int *Sp = s->Sp;
  const unsigned *Sc = s->Sc;
  const double *Sx = s->Sx;
  size_t stride = (size_t)(G ? G : s->gmax);
  for (int i = i0; i < i1; i++) {
    double sum = 0;
    for (int q = Sp[i]; q < Sp[i + 1]; q++) {
      unsigned u = Sc[q];
      int g = G ? G : (int)(u & 7) + 1;
      const double *a = Sx + (size_t)q * stride, *xs = x + (int)(u >> 3);
      __builtin_prefetch(a + PF_DOUBLES);
      for (int t = 0; t < g; t++)
        sum += a[t] * xs[t];
    }
    y[i - i0] = sum;
  }
}

/* (B^T y)_j for columns j in [j0, j1) from the groups: each group
 * overlapping the range is summed whole, its columns inside the range
 * stored (cm__group_rows). */
static inline __attribute__((always_inline)) void
group_rows(const shell_t *s, int G, int j0, int j1, const double *y,
           double *x) {
  const int *g0 = s->g0, *Gp = s->Gp, *Gj = s->Gj;
  const double *Gx = s->Gx;
  size_t stride = (size_t)(G ? G : s->gmax);
  for (int b = group_of(s, j0); b < s->ng && g0[b] < j1; b++) {
    int g = G ? G : g0[b + 1] - g0[b];
    double sum[GMAX] = {0};
    for (int e = Gp[b]; e < Gp[b + 1]; e++) {
      double v = y[Gj[e]];
      const double *a = Gx + (size_t)e * stride;
      __builtin_prefetch(a + PF_DOUBLES);
      for (int t = 0; t < g; t++)
        sum[t] += a[t] * v;
    }
    for (int t = 0; t < g; t++)
      if (g0[b] + t >= j0 && g0[b] + t < j1)
        x[g0[b] + t - j0] = sum[t];
  }
}

/* Rows [i0, i1) of B (trans 0) or B^T (trans 1) into out[0 .. i1 - i0),
 * specialised for a common group size (cm__op_rows). */
static void grouped_rows(const shell_t *s, int trans, const double *in,
                         int i0, int i1, double *out) {
#define ROWS(G)                                                                \
  (trans ? group_rows(s, G, i0, i1, in, out) : slot_rows(s, G, i0, i1, in, out))
  switch (s->guni) {
  case 2: ROWS(2); break;
  case 3: ROWS(3); break;
  case 6: ROWS(6); break;
  default: ROWS(0); break;
  }
#undef ROWS
}

/* out = B in (trans 0) or B^T in (trans 1), rows in fixed chunks on the
 * threads, each row summed by one thread (cm__op_apply). */
static void grouped_apply(const shell_t *s, int trans, const double *in,
                          double *out) {
  int len = trans ? s->ncol : s->nr;
  int nch = (len + ROW_CHUNK - 1) / ROW_CHUNK;
#pragma omp parallel for schedule(static)                                      \
    num_threads(s->threads) if (len > PAR_MIN)
  for (int c = 0; c < nch; c++) {
    int i0 = c * ROW_CHUNK, i1 = i0 + ROW_CHUNK < len ? i0 + ROW_CHUNK : len;
    grouped_rows(s, trans, in, i0, i1, out + i0);
  }
}

/* y = S x (use_S) or G x, with the grouped kernels (grouped) or CSR. */
static void apply(const shell_t *s, int use_S, int grouped, const double *x,
                  double *y) {
  if (grouped) {
    grouped_apply(s, use_S, x, s->tmp);  /* t = B^T x  or  t = B x */
    grouped_apply(s, !use_S, s->tmp, y); /* y = B t    or  y = B^T t */
  } else if (use_S) {
    spmv(s->ncol, s->Tp, s->Tj, s->Tx, x, s->tmp, s->threads); /* t = B^T x */
    spmv(s->nr, s->Bp, s->Bj, s->Bx, s->tmp, y, s->threads);   /* y = B t */
  } else {
    spmv(s->nr, s->Bp, s->Bj, s->Bx, x, s->tmp, s->threads);   /* t = B x */
    spmv(s->ncol, s->Tp, s->Tj, s->Tx, s->tmp, y, s->threads); /* y = B^T t */
  }
}

static PetscErrorCode shell_mult(Mat A, Vec x, Vec y) {
  shell_t *s;
  const PetscScalar *xa;
  PetscScalar *ya;
  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(A, &s));
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArray(y, &ya));
  double t0 = now_s();
  apply(s, s->use_S, s->grouped, xa, ya);
  s->t_mv += now_s() - t0;
  s->matvecs++;
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscCall(VecRestoreArray(y, &ya));
  PetscFunctionReturn(0);
}

/* ---- reading B, building the forms -------------------------------------- */

/* B^T in CSR by a counting transpose (rows ascending in each column). */
static int build_csr_T(shell_t *s) {
  size_t nnz = (size_t)s->Bp[s->nr];
  s->Tp = calloc((size_t)s->ncol + 2, sizeof(int));
  s->Tj = malloc(sizeof(int) * (nnz + 1));
  s->Tx = malloc(sizeof(double) * (nnz + 1));
  int *next = malloc(sizeof(int) * ((size_t)s->ncol + 1));
  if (!s->Tp || !s->Tj || !s->Tx || !next) {
    free(next);
    return -1;
  }
  for (size_t q = 0; q < nnz; q++)
    s->Tp[s->Bj[q] + 1]++;
  for (int j = 0; j < s->ncol; j++)
    s->Tp[j + 1] += s->Tp[j];
  memcpy(next, s->Tp, sizeof(int) * (size_t)s->ncol);
  for (int r = 0; r < s->nr; r++)
    for (int q = s->Bp[r]; q < s->Bp[r + 1]; q++) {
      int t = next[s->Bj[q]]++;
      s->Tj[t] = r, s->Tx[t] = s->Bx[q];
    }
  free(next);
  return 0;
}

/* The slots of B (Sp, Sc, Sx) and the groups of B^T (Gp, Gj, Gx) from the
 * CSR B and g0, laid out as cm__build_slots and cm__transpose_slots lay
 * them out. 0, or -1 when the groups do not fit this B (then the CSR
 * kernels run). */
static int build_groups(shell_t *s) {
  int nr = s->nr, n = s->ncol, ng = s->ng;
  const int *g0 = s->g0, *Bp = s->Bp, *Bj = s->Bj;
  const double *Bx = s->Bx;
  if (ng < 1 || g0[0] != 0 || g0[ng] != n || n >= GCOLS)
    return -1;
  int gmax = 0, guni = -1;
  for (int b = 0; b < ng; b++) {
    int g = g0[b + 1] - g0[b];
    if (g < 1 || g > GMAX)
      return -1;
    gmax = g > gmax ? g : gmax;
    guni = guni < 0 || guni == g ? g : 0;
  }
  s->gmax = gmax, s->guni = guni > 0 ? guni : 0;
  int *cg = malloc(sizeof(int) * ((size_t)n + 1)); /* group of a column */
  s->Sp = malloc(sizeof(int) * ((size_t)nr + 1));
  if (!cg || !s->Sp) {
    free(cg);
    return -1;
  }
  for (int b = 0; b < ng; b++)
    for (int j = g0[b]; j < g0[b + 1]; j++)
      cg[j] = b;
  s->Sp[0] = 0;
  for (int r = 0; r < nr; r++) { /* columns must ascend: the CSR order */
    int c = 0;
    for (int q = Bp[r]; q < Bp[r + 1]; q++) {
      if (Bj[q] < 0 || Bj[q] >= n || (q > Bp[r] && Bj[q] <= Bj[q - 1])) {
        free(cg);
        return -1;
      }
      c += q == Bp[r] || cg[Bj[q]] != cg[Bj[q - 1]];
    }
    s->Sp[r + 1] = s->Sp[r] + c;
  }
  size_t ns = (size_t)s->Sp[nr];
  s->Sc = malloc(sizeof(unsigned) * (ns + 1));
  s->Sx = malloc(sizeof(double) * (ns * (size_t)gmax + 1));
  int *q2g = malloc(sizeof(int) * (ns + 1));
  s->Gp = calloc((size_t)ng + 2, sizeof(int));
  s->Gj = malloc(sizeof(int) * (ns + 1));
  s->Gx = malloc(sizeof(double) * (ns * (size_t)gmax + 1));
  int *next = malloc(sizeof(int) * ((size_t)ng + 1));
  if (!s->Sc || !s->Sx || !q2g || !s->Gp || !s->Gj || !s->Gx || !next) {
    free(cg), free(q2g), free(next);
    return -1;
  }
  for (int r = 0; r < nr; r++) { /* slots */
    size_t q = (size_t)s->Sp[r];
    for (int e = Bp[r]; e < Bp[r + 1]; q++) {
      int b = cg[Bj[e]], c = g0[b];
      double *a = s->Sx + q * (size_t)gmax;
      s->Sc[q] = (unsigned)c << 3 | (unsigned)(g0[b + 1] - c - 1);
      q2g[q] = b;
      for (int t = 0; t < gmax; t++)
        a[t] = 0;
      for (; e < Bp[r + 1] && cg[Bj[e]] == b; e++)
        a[Bj[e] - c] = Bx[e];
    }
  }
  for (size_t q = 0; q < ns; q++) /* B^T by groups: a counting transpose */
    s->Gp[q2g[q] + 1]++;
  for (int b = 0; b < ng; b++)
    s->Gp[b + 1] += s->Gp[b];
  memcpy(next, s->Gp, sizeof(int) * (size_t)ng);
  for (int r = 0; r < nr; r++) /* rows ascending within each group */
    for (int q = s->Sp[r]; q < s->Sp[r + 1]; q++) {
      size_t e = (size_t)next[q2g[q]]++;
      s->Gj[e] = r;
      memcpy(s->Gx + e * (size_t)gmax, s->Sx + (size_t)q * (size_t)gmax,
             sizeof(double) * (size_t)gmax);
    }
  free(cg), free(q2g), free(next);
  return 0;
}

/* Reads the file; builds the grouped forms when it has groups (unless
 * csr), and the CSR B^T when those are absent or keep_csr is set. */
static int read_B(const char *path, shell_t *s, int csr, int keep_csr) {
  FILE *f = fopen(path, "rb");
  char magic[4];
  int32_t hdr[2];
  int64_t nnz;
  if (!f || fread(magic, 1, 4, f) != 4 || memcmp(magic, "CMB1", 4) ||
      fread(hdr, 4, 2, f) != 2 || fread(&nnz, 8, 1, f) != 1) {
    fprintf(stderr, "bench_slepc: %s: cannot read a CMB1 header\n", path);
    return -1;
  }
  s->nr = hdr[0], s->ncol = hdr[1];
  s->Bp = malloc(sizeof(int) * ((size_t)s->nr + 1));
  s->Bj = malloc(sizeof(int) * ((size_t)nnz + 1));
  s->Bx = malloc(sizeof(double) * ((size_t)nnz + 1));
  if (!s->Bp || !s->Bj || !s->Bx ||
      fread(s->Bp, 4, (size_t)s->nr + 1, f) != (size_t)s->nr + 1 ||
      fread(s->Bj, 4, (size_t)nnz, f) != (size_t)nnz ||
      fread(s->Bx, 8, (size_t)nnz, f) != (size_t)nnz) {
    fprintf(stderr, "bench_slepc: %s: truncated\n", path);
    return -1;
  }
  /* optional trailer: the column groups */
  int32_t ng = -1;
  if (fread(magic, 1, 4, f) == 4) {
    if (memcmp(magic, "GRP1", 4) || fread(&ng, 4, 1, f) != 1 || ng < 1 ||
        ng > s->ncol) {
      fprintf(stderr, "bench_slepc: %s: unknown trailer after B: ignored\n",
              path);
      ng = -1;
    } else {
      s->ng = ng;
      s->g0 = malloc(sizeof(int) * ((size_t)ng + 1));
      if (!s->g0 || fread(s->g0, 4, (size_t)ng + 1, f) != (size_t)ng + 1) {
        fprintf(stderr, "bench_slepc: %s: truncated groups\n", path);
        return -1;
      }
    }
  }
  fclose(f);
  if (ng > 0 && !csr) {
    s->grouped = !build_groups(s);
    if (!s->grouped)
      fprintf(stderr, "bench_slepc: %s: the groups do not fit B: CSR "
                      "kernels\n", path);
  }
  if ((!s->grouped || keep_csr) && build_csr_T(s)) {
    fprintf(stderr, "bench_slepc: out of memory\n");
    return -1;
  }
  if (s->grouped && !keep_csr) { /* the products read only the slots */
    free(s->Bp), free(s->Bj), free(s->Bx);
    s->Bp = s->Bj = NULL, s->Bx = NULL;
  }
  s->tmp = malloc(sizeof(double) *
                  ((size_t)(s->nr > s->ncol ? s->nr : s->ncol) + 1));
  s->use_S = s->nr <= s->ncol;
  return s->tmp ? 0 : -1;
}

/* --check: S x and G x by both kernels on a few vectors, bit for bit, with
 * the kernel for the file's common group size and with the generic one. */
static int check_kernels(shell_t *s) {
  if (!s->grouped) {
    fprintf(stderr, "bench_slepc --check: the file has no usable groups\n");
    return 1;
  }
  int m = s->nr > s->ncol ? s->nr : s->ncol, bad = 0;
  double *x = malloc(sizeof(double) * (size_t)m);
  double *y0 = malloc(sizeof(double) * (size_t)m);
  double *y1 = malloc(sizeof(double) * (size_t)m);
  if (!x || !y0 || !y1)
    return 1;
  unsigned long long rng = 12345;
  int guni = s->guni;
  for (int pass = 0; pass < 2; pass++, s->guni = 0)
  for (int use_S = 1; use_S >= 0; use_S--) {
    int N = use_S ? s->nr : s->ncol;
    for (int v = 0; v < 4; v++) {
      for (int i = 0; i < N; i++) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (double)(rng >> 11) * 0x1p-53 * 2.0 - 1.0;
      }
      apply(s, use_S, 0, x, y0);
      apply(s, use_S, 1, x, y1);
      int diff = 0;
      double dmax = 0;
      for (int i = 0; i < N; i++)
        if (memcmp(&y0[i], &y1[i], sizeof(double))) {
          diff++;
          double d = fabs(y0[i] - y1[i]);
          dmax = d > dmax ? d : dmax;
        }
      fprintf(stderr, "  check %s x, %s kernel, vector %d (N %d): %s (%d "
              "differ, max |diff| %.3g)\n", use_S ? "S" : "G",
              s->guni ? "common-size" : "generic", v, N,
              diff ? "DIFFERENT" : "bitwise equal", diff, dmax);
      bad |= diff != 0;
    }
  }
  s->guni = guni;
  free(x), free(y0), free(y1);
  printf("{\"check\":\"%s\",\"nr\":%d,\"ncol\":%d,\"ng\":%d,\"gmax\":%d,"
         "\"guni\":%d,\"slots\":%d}\n", bad ? "different" : "bitwise equal",
         s->nr, s->ncol, s->ng, s->gmax, s->guni, s->Sp[s->nr]);
  return bad;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  PetscFunctionBeginUser;
  PetscCall(SlepcInitialize(&argc, &argv, NULL, NULL));
  const char *path = NULL;
  int nev = 6, reps = 3, threads = 2, csr = 0, check = 0;
  double tol = 1e-6;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--nev") && i + 1 < argc) nev = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--tol") && i + 1 < argc) tol = atof(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--csr")) csr = 1;
    else if (!strcmp(argv[i], "--check")) check = 1;
    else if (argv[i][0] != '-') path = argv[i];
  }
  if (!path) {
    fprintf(stderr, "usage: bench_slepc B.bin [--nev K] [--tol X] [--reps R]"
                    " [--threads T] [--csr] [--check]\n");
    return 2;
  }
  if (reps < 1) reps = 1;
  if (reps > 64) reps = 64;
  shell_t s;
  memset(&s, 0, sizeof s);
  s.threads = threads;
  if (read_B(path, &s, csr && !check, check))
    return 1;
  if (check) {
    int bad = check_kernels(&s);
    PetscCall(SlepcFinalize());
    return bad;
  }
  fprintf(stderr, "  slepc shell: %s kernel, %s, %d x %d", s.grouped ?
          "grouped" : "CSR", s.use_S ? "S = B B^T" : "G = B^T B", s.nr,
          s.ncol);
  if (s.grouped)
    fprintf(stderr, ", %d groups (gmax %d, common %d), %d slots", s.ng,
            s.gmax, s.guni, s.Sp[s.nr]);
  fprintf(stderr, "\n");
  int N = s.use_S ? s.nr : s.ncol;
  Mat A;
  PetscCall(MatCreateShell(PETSC_COMM_SELF, N, N, N, N, &s, &A));
  PetscCall(MatShellSetOperation(A, MATOP_MULT, (void (*)(void))shell_mult));
  PetscCall(MatSetOption(A, MAT_SYMMETRIC, PETSC_TRUE));

  double t[64], tmv[64], omega[64];
  long mv = 0;
  PetscInt nconv = 0, its = 0, ncv = 0, mpd = 0;
  for (int r = 0; r < reps; r++) {
    EPS eps;
    PetscCall(EPSCreate(PETSC_COMM_SELF, &eps));
    PetscCall(EPSSetOperators(eps, A, NULL));
    PetscCall(EPSSetProblemType(eps, EPS_HEP));
    PetscCall(EPSSetWhichEigenpairs(eps, EPS_LARGEST_REAL));
    PetscCall(EPSSetDimensions(eps, nev, PETSC_DEFAULT, PETSC_DEFAULT));
    PetscCall(EPSSetTolerances(eps, tol, PETSC_DEFAULT));
    PetscCall(EPSSetFromOptions(eps));
    s.matvecs = 0, s.t_mv = 0;
    double t0 = now_s();
    PetscCall(EPSSolve(eps));
    t[r] = now_s() - t0;
    tmv[r] = s.t_mv;
    mv = s.matvecs;
    PetscCall(EPSGetConverged(eps, &nconv));
    PetscCall(EPSGetIterationNumber(eps, &its));
    PetscCall(EPSGetDimensions(eps, NULL, &ncv, &mpd));
    for (PetscInt i = 0; i < nconv && i < 64; i++) {
      PetscScalar kr;
      PetscCall(EPSGetEigenvalue(eps, i, &kr, NULL));
      omega[i] = sqrt(PetscRealPart(kr) > 0 ? PetscRealPart(kr) : 0);
    }
    fprintf(stderr, "  slepc run %d: %.3f s, %ld matvecs (%.3f s, %.4f ms "
                    "each), %d restarts, %d converged\n", r, t[r], mv, tmv[r],
            1e3 * tmv[r] / (double)(mv > 0 ? mv : 1), (int)its, (int)nconv);
    PetscCall(EPSDestroy(&eps));
  }
  qsort(t, (size_t)reps, sizeof t[0], cmp_double);
  qsort(tmv, (size_t)reps, sizeof tmv[0], cmp_double);
  double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
  double medmv =
      reps % 2 ? tmv[reps / 2] : 0.5 * (tmv[reps / 2 - 1] + tmv[reps / 2]);
  printf("{\"slepc_version\":\"%d.%d.%d\",\"t_slepc\":%.6g,"
         "\"slepc_matvecs\":%ld,\"t_slepc_matvecs\":%.6g,"
         "\"slepc_restarts\":%d,\"slepc_ncv\":%d,"
         "\"slepc_nconv\":%d,\"slepc_kernel\":\"%s\",\"slepc_omega\":[",
         SLEPC_VERSION_MAJOR, SLEPC_VERSION_MINOR, SLEPC_VERSION_SUBMINOR, med,
         mv, medmv, (int)its, (int)ncv, (int)nconv,
         s.grouped ? "grouped" : "csr");
  for (PetscInt i = 0; i < nconv && i < nev; i++)
    printf("%s%.15g", i ? "," : "", omega[i]);
  printf("]}\n");
  PetscCall(MatDestroy(&A));
  PetscCall(SlepcFinalize());
  return 0;
}
