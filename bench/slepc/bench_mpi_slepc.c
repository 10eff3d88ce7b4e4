/* bench_mpi_slepc.c: SLEPc's Krylov-Schur against PARPACK on cmodes-mpi's
 * distributed operator (docs/distributed.md, "SLEPc against PARPACK").
 * Every rank reads its part of a partitioned scene (cmodes-mpi convert),
 * and the largest component is treated as spread over the ranks that hold
 * it (at np = 1 too, where cmodes-mpi would solve it serially): the same
 * halo plan and rows of B as cmodes-mpi (src/mpi/span.c), and the same
 * product y = S x / s, which a PETSc shell matrix (MatShell) calls. Then,
 * --reps times each, alternating: PARPACK (pdsaupd/pdseupd as cmodes-mpi
 * runs it) and SLEPc EPSKRYLOVSCHUR (EPS_HEP, largest real, the same nev,
 * ncv, tolerance and start vector keyed by the global row; any -eps_*
 * option of SLEPc is honoured). Prints a line per solve and a Markdown
 * row per engine on rank 0: median seconds per solve (slowest rank),
 * products, seconds per product, the top eigenvalue (omega_max^2) and its
 * relative difference from PARPACK's. Not a test: nothing asserts a time.
 *
 *   mpirun -np N bench_mpi_slepc SCENE.cmpart [--nev 6] [--tol 1e-10]
 *                                [--ncv 0] [--reps 3] [-eps_...]
 *
 * Built by cmake/cmodes_mpi.cmake only when SLEPc (Debian's slepc-dev)
 * and cmodes-mpi's dependencies are found. */
#include "mpi_internal.h"

#include <math.h>
#include <slepceps.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  void *S;
} cm__shell_t;

static PetscErrorCode cm__shell_mult(Mat A, Vec x, Vec y) {
  cm__shell_t *c;
  const PetscScalar *xa;
  PetscScalar *ya;
  PetscCall(MatShellGetContext(A, &c));
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArray(y, &ya));
  cm__mpi_bench_apply(c->S, xa, ya);
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscCall(VecRestoreArray(y, &ya));
  return 0;
}

static int cm__dcmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double cm__median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cm__dcmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One SLEPc solve on the shell matrix: seconds (slowest rank), the top
 * eigenvalue (of S / s) and the converged pairs. */
static PetscErrorCode cm__slepc_solve(Mat A, Vec v0, int nev, int ncv,
                                      double tol, int maxit, MPI_Comm cc,
                                      double *sec, double *top, int *nconv) {
  EPS eps;
  PetscCall(EPSCreate(cc, &eps));
  PetscCall(EPSSetOperators(eps, A, NULL));
  PetscCall(EPSSetProblemType(eps, EPS_HEP));
  PetscCall(EPSSetType(eps, EPSKRYLOVSCHUR));
  PetscCall(EPSSetWhichEigenpairs(eps, EPS_LARGEST_REAL));
  PetscCall(EPSSetDimensions(eps, nev, ncv, PETSC_DEFAULT));
  PetscCall(EPSSetTolerances(eps, tol, maxit));
  PetscCall(EPSSetInitialSpace(eps, 1, &v0));
  PetscCall(EPSSetFromOptions(eps));
  MPI_Barrier(cc);
  double t0 = MPI_Wtime();
  PetscCall(EPSSolve(eps));
  double t = MPI_Wtime() - t0;
  MPI_Allreduce(&t, sec, 1, MPI_DOUBLE, MPI_MAX, cc);
  PetscInt nc = 0;
  PetscCall(EPSGetConverged(eps, &nc));
  *nconv = (int)nc;
  *top = NAN;
  if (nc > 0) {
    PetscScalar kr;
    PetscCall(EPSGetEigenvalue(eps, 0, &kr, NULL));
    *top = (double)kr;
  }
  PetscCall(EPSDestroy(&eps));
  return 0;
}

int main(int argc, char **argv) {
  const char *path = NULL;
  int nev = 6, ncv = 0, reps = 3;
  double tol = 1e-10;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--nev") && i + 1 < argc)
      nev = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--tol") && i + 1 < argc)
      tol = atof(argv[++i]);
    else if (!strcmp(argv[i], "--ncv") && i + 1 < argc)
      ncv = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (argv[i][0] != '-' && !path)
      path = argv[i];
    else if (!strncmp(argv[i], "-eps_", 5) || !strncmp(argv[i], "-st_", 4))
      i += i + 1 < argc && argv[i + 1][0] != '-'; /* SLEPc's own */
  }
  PetscCall(SlepcInitialize(&argc, &argv, NULL, NULL));
  int rank, np;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  MPI_Comm_size(PETSC_COMM_WORLD, &np);
  if (!path || nev < 1 || reps < 1) {
    if (!rank)
      fprintf(stderr, "usage: mpirun -np N bench_mpi_slepc SCENE.cmpart "
                      "[--nev K] [--tol T] [--ncv N] [--reps R]\n");
    PetscCall(SlepcFinalize());
    return 2;
  }
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm__part_file_t f;
  cm__mpi_part_t P;
  cm__part_prepare(&P, &f, rank, np);
  int st = cm__part_open(&ctx, path, &f);
  if (!st)
    st = cm__part_load(&ctx, &P);
  st = cm__mpi_agree(&ctx, st, PETSC_COMM_WORLD);
  int comp = -1;
  for (uint64_t c = 0; !st && c < f.h.ncomp; c++) /* the most contacts */
    if (comp < 0 || f.comp[2 * c + 3] - f.comp[2 * c + 1] >
                        f.comp[2 * comp + 3] - f.comp[2 * comp + 1])
      comp = (int)c;
  if (!st && comp < 0)
    st = CM__ERR(&ctx, CM_USAGE, NULL, "%s: no component", path);
  if (st) {
    if (!rank)
      fprintf(stderr, "bench_mpi_slepc: %s\n", ctx.message);
    PetscCall(SlepcFinalize());
    return 1;
  }
  int64_t cb0 = (int64_t)f.comp[2 * comp], cb1 = (int64_t)f.comp[2 * comp + 2];
  int *members = malloc(sizeof(int) * (size_t)np), nmem = 0, me = 0;
  for (int q = 0; q < np; q++)
    if (P.cut[q] < P.cut[q + 1] && P.cut[q] < cb1 && P.cut[q + 1] > cb0) {
      me |= q == rank;
      members[nmem++] = q;
    }
  MPI_Comm cc;
  MPI_Comm_split(PETSC_COMM_WORLD, me ? 0 : MPI_UNDEFINED, rank, &cc);
  if (me) {
    cm_options_t o;
    cm_options_init(&o);
    o.modes = nev, o.tol = tol, o.ncv = ncv;
    void *S = NULL;
    st = cm__mpi_bench_open(&ctx, &P, comp, cc, members, &o, &S);
    int q = -1;
    MPI_Comm_rank(cc, &q);
    if (st) {
      if (!q)
        fprintf(stderr, "bench_mpi_slepc: %s\n", ctx.message);
    } else {
      int nloc;
      long long goff, N;
      double scale;
      cm__mpi_bench_info(S, &nloc, &goff, &N, &scale);
      int ncv_used = ncv > 0 ? ncv : (2 * nev + 1 > 20 ? 2 * nev + 1 : 20);
      Mat A;
      Vec v0;
      cm__shell_t sh = {S};
      PetscCall(
          MatCreateShell(cc, nloc, nloc, (PetscInt)N, (PetscInt)N, &sh, &A));
      PetscCall(
          MatShellSetOperation(A, MATOP_MULT, (void (*)(void))cm__shell_mult));
      PetscCall(MatCreateVecs(A, &v0, NULL));
      PetscScalar *va;
      PetscCall(VecGetArray(v0, &va));
      cm__mpi_bench_start(S, va);
      PetscCall(VecRestoreArray(v0, &va));
      double *ts[2], *tp[2], top[2] = {NAN, NAN};
      long prod[2] = {0, 0};
      for (int e = 0; e < 2; e++) {
        ts[e] = calloc((size_t)reps, sizeof(double));
        tp[e] = calloc((size_t)reps, sizeof(double));
      }
      double *lam = calloc((size_t)nev + 1, sizeof(double));
      if (!q)
        printf("bench_mpi_slepc: %s, np %d, component %d: %lld rows, nev "
               "%d, ncv %d, tol %g\n",
               path, np, comp, N, nev, ncv_used, tol);
      for (int r = 0; r < reps && !st; r++)
        for (int e = 0; e < 2 && !st; e++) { /* alternating */
          double s0, s1, sec = 0, t = 0;
          long p0 = cm__mpi_bench_products(S, &s0);
          int nconv = 0;
          MPI_Barrier(cc);
          double t0 = MPI_Wtime();
          if (e == 0) {
            st = cm__mpi_bench_parpack(&ctx, S, &o, lam, &nconv);
            t = MPI_Wtime() - t0;
            MPI_Allreduce(&t, &sec, 1, MPI_DOUBLE, MPI_MAX, cc);
            top[0] = nconv > 0 ? lam[0] : NAN;
          } else {
            double tl = NAN;
            PetscCall(cm__slepc_solve(A, v0, nev, ncv_used, tol, 3000, cc, &sec,
                                      &tl, &nconv));
            top[1] = tl * scale;
          }
          long p1 = cm__mpi_bench_products(S, &s1);
          double tpr = (s1 - s0) / (double)(p1 - p0 > 0 ? p1 - p0 : 1), tmax;
          MPI_Allreduce(&tpr, &tmax, 1, MPI_DOUBLE, MPI_MAX, cc);
          ts[e][r] = sec, tp[e][r] = tmax, prod[e] = p1 - p0;
          if (!q)
            printf("  rep %d %-8s %8.3f s  %5ld products  %.3e s/product  "
                   "%d converged  lambda_max %.17g\n",
                   r, e ? "slepc" : "parpack", sec, p1 - p0, tmax, nconv,
                   top[e]);
          fflush(stdout);
        }
      if (!q && !st) {
        printf("\n| np | engine | s/solve (median of %d) | products | "
               "s/product | lambda_max | rel. diff |\n|---|---|---|---|---|"
               "---|---|\n",
               reps);
        for (int e = 0; e < 2; e++)
          printf("| %d | %s | %.3f | %ld | %.3e | %.17g | %.1e |\n", np,
                 e ? "SLEPc Krylov-Schur" : "PARPACK", cm__median(ts[e], reps),
                 prod[e], cm__median(tp[e], reps), top[e],
                 fabs(top[e] - top[0]) / top[0]);
      }
      if (st && !q)
        fprintf(stderr, "bench_mpi_slepc: %s\n", ctx.message);
      for (int e = 0; e < 2; e++)
        free(ts[e]), free(tp[e]);
      free(lam);
      PetscCall(VecDestroy(&v0));
      PetscCall(MatDestroy(&A));
    }
    cm__mpi_bench_close(&S);
    MPI_Comm_free(&cc);
  }
  free(members);
  cm__part_free(&P);
  cm__part_close(&f);
  PetscCall(SlepcFinalize());
  return st ? 1 : 0;
}
