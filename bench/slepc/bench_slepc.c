/* bench_slepc.c: SLEPc's default Krylov-Schur eigensolver on the very
 * operator cmodes solved. Reads the binary B written by bench_modes
 * --export ("CMB1": int32 nr, ncol, int64 nnz, int32 Bp[nr+1], Bj[nnz],
 * float64 Bx[nnz]) and wraps S = B B^T (nr <= ncol) or G = B^T B, the
 * smaller, as a PETSc shell matrix whose MatMult is two row-parallel OpenMP
 * CSR loops over B and B^T: the same kernel shape as cmodes' matvec.
 * EPS_HEP, largest real, nev and tol as given (relative residual test);
 * everything else at SLEPc's defaults. Prints one JSON line with the median
 * EPSSolve time of --reps fresh solves, the matvecs and the top
 * frequencies. Not for anything but this comparison.
 *
 * usage: bench_slepc B.bin [--nev 6] [--tol 1e-6] [--reps 3] [--threads 2]
 */
#include <math.h>
#include <omp.h>
#include <slepceps.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  int nr, ncol;          /* rows (contacts), columns (dofs) of B */
  int *Bp, *Bj;          /* B in CSR: row pointers nr+1, columns */
  double *Bx;            /* values */
  int *Tp, *Tj;          /* B^T in CSR: row pointers ncol+1, columns */
  double *Tx;            /* values */
  double *tmp;           /* workspace, size max(nr, ncol) */
  int use_S;             /* 1: S = B B^T, 0: G = B^T B */
  int threads;           /* OpenMP threads of the matvec */
  long matvecs;          /* MatMult calls */
} shell_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

static PetscErrorCode shell_mult(Mat A, Vec x, Vec y) {
  shell_t *s;
  const PetscScalar *xa;
  PetscScalar *ya;
  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(A, &s));
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArray(y, &ya));
  if (s->use_S) {
    spmv(s->ncol, s->Tp, s->Tj, s->Tx, xa, s->tmp, s->threads); /* t = B^T x */
    spmv(s->nr, s->Bp, s->Bj, s->Bx, s->tmp, ya, s->threads);   /* y = B t */
  } else {
    spmv(s->nr, s->Bp, s->Bj, s->Bx, xa, s->tmp, s->threads);   /* t = B x */
    spmv(s->ncol, s->Tp, s->Tj, s->Tx, s->tmp, ya, s->threads); /* y = B^T t */
  }
  s->matvecs++;
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscCall(VecRestoreArray(y, &ya));
  PetscFunctionReturn(0);
}

static int read_B(const char *path, shell_t *s) {
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
  fclose(f);
  /* B^T by a counting transpose */
  s->Tp = calloc((size_t)s->ncol + 2, sizeof(int));
  s->Tj = malloc(sizeof(int) * ((size_t)nnz + 1));
  s->Tx = malloc(sizeof(double) * ((size_t)nnz + 1));
  int *next = malloc(sizeof(int) * ((size_t)s->ncol + 1));
  for (int64_t q = 0; q < nnz; q++)
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
  s->tmp = malloc(sizeof(double) *
                  ((size_t)(s->nr > s->ncol ? s->nr : s->ncol) + 1));
  s->use_S = s->nr <= s->ncol;
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  PetscFunctionBeginUser;
  PetscCall(SlepcInitialize(&argc, &argv, NULL, NULL));
  const char *path = NULL;
  int nev = 6, reps = 3, threads = 2;
  double tol = 1e-6;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--nev") && i + 1 < argc) nev = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--tol") && i + 1 < argc) tol = atof(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (argv[i][0] != '-') path = argv[i];
  }
  if (!path) {
    fprintf(stderr, "usage: bench_slepc B.bin [--nev K] [--tol X] [--reps R]"
                    " [--threads T]\n");
    return 2;
  }
  if (reps < 1) reps = 1;
  if (reps > 64) reps = 64;
  shell_t s;
  memset(&s, 0, sizeof s);
  s.threads = threads;
  if (read_B(path, &s))
    return 1;
  int N = s.use_S ? s.nr : s.ncol;
  Mat A;
  PetscCall(MatCreateShell(PETSC_COMM_SELF, N, N, N, N, &s, &A));
  PetscCall(MatShellSetOperation(A, MATOP_MULT, (void (*)(void))shell_mult));
  PetscCall(MatSetOption(A, MAT_SYMMETRIC, PETSC_TRUE));

  double t[64], omega[64];
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
    s.matvecs = 0;
    double t0 = now_s();
    PetscCall(EPSSolve(eps));
    t[r] = now_s() - t0;
    mv = s.matvecs;
    PetscCall(EPSGetConverged(eps, &nconv));
    PetscCall(EPSGetIterationNumber(eps, &its));
    PetscCall(EPSGetDimensions(eps, NULL, &ncv, &mpd));
    for (PetscInt i = 0; i < nconv && i < 64; i++) {
      PetscScalar kr;
      PetscCall(EPSGetEigenvalue(eps, i, &kr, NULL));
      omega[i] = sqrt(PetscRealPart(kr) > 0 ? PetscRealPart(kr) : 0);
    }
    fprintf(stderr, "  slepc run %d: %.3f s, %ld matvecs, %d restarts, "
                    "%d converged\n", r, t[r], mv, (int)its, (int)nconv);
    PetscCall(EPSDestroy(&eps));
  }
  qsort(t, (size_t)reps, sizeof t[0], cmp_double);
  double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
  printf("{\"slepc_version\":\"%d.%d.%d\",\"t_slepc\":%.6g,"
         "\"slepc_matvecs\":%ld,\"slepc_restarts\":%d,\"slepc_ncv\":%d,"
         "\"slepc_nconv\":%d,\"slepc_omega\":[",
         SLEPC_VERSION_MAJOR, SLEPC_VERSION_MINOR, SLEPC_VERSION_SUBMINOR, med,
         mv, (int)its, (int)ncv, (int)nconv);
  for (PetscInt i = 0; i < nconv && i < nev; i++)
    printf("%s%.15g", i ? "," : "", omega[i]);
  printf("]}\n");
  PetscCall(MatDestroy(&A));
  PetscCall(SlepcFinalize());
  return 0;
}
