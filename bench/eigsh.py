#!/usr/bin/python3
"""eigsh.py: scipy.sparse.linalg.eigsh (scipy's ARPACK wrapper) on the very
operator cmodes solved, read from the binary B that bench_modes --export
wrote. The operator is x -> B (B^T x) on the contacts (nr <= ncol) or
x -> B^T (B x) on the dofs, the smaller one, as cmodes does. Same k, tol,
which = 'LA' and ncv (scipy's default max(2k+1, 20), as cmodes' ARPACK
backend's auto). Prints one JSON line: median eigsh time of --reps runs,
matvecs (with --starts S also the matvecs from S random starts, untimed:
how much the count owes to the start), the top frequencies and the time of
one matvec in scipy. Not for file loading
times (reported apart) or for anything cmodes does itself.

Run with Debian's /usr/bin/python3 (python3-scipy), not a pyenv one.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np
import scipy
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, eigsh


def read_B(path):
    """The CMB1 file: "CMB1", int32 nr, ncol, int64 nnz, Bp, Bj, Bx."""
    with open(path, "rb") as f:
        magic = f.read(4)
        if magic != b"CMB1":
            sys.exit(f"eigsh.py: {path}: not a CMB1 file")
        nr, ncol = np.fromfile(f, dtype="<i4", count=2)
        (nnz,) = np.fromfile(f, dtype="<i8", count=1)
        Bp = np.fromfile(f, dtype="<i4", count=nr + 1)
        Bj = np.fromfile(f, dtype="<i4", count=nnz)
        Bx = np.fromfile(f, dtype="<f8", count=nnz)
    return sp.csr_matrix((Bx, Bj, Bp), shape=(int(nr), int(ncol)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("B", help="binary B from bench_modes --export")
    ap.add_argument("--nev", type=int, default=6)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--starts", type=int, default=1,
                    help="products from this many random starts (the "
                    "first is the timed one's); untimed")
    args = ap.parse_args()

    t0 = time.perf_counter()
    B = read_B(args.B)
    BT = B.T.tocsr()  # both in CSR, as cmodes keeps them
    t_load = time.perf_counter() - t0
    nr, ncol = B.shape
    use_S = nr <= ncol
    N = nr if use_S else ncol
    count = [0]

    if use_S:
        def mv(x):
            count[0] += 1
            return B @ (BT @ x)  # S x = B (B^T x)
    else:
        def mv(x):
            count[0] += 1
            return BT @ (B @ x)  # G x = B^T (B x)

    op = LinearOperator((N, N), matvec=mv, dtype=np.float64)
    rng = np.random.default_rng(12345)
    v0 = rng.uniform(-1.0, 1.0, N)

    x = v0.copy()
    t0 = time.perf_counter()
    for _ in range(20):
        x = mv(x)
        x /= np.linalg.norm(x)
    t_mv = (time.perf_counter() - t0) / 20

    times, matvecs, omega = [], 0, []
    for r in range(args.reps):
        count[0] = 0
        t0 = time.perf_counter()
        w = eigsh(op, k=args.nev, which="LA", tol=args.tol, v0=v0,
                  return_eigenvectors=False)
        times.append(time.perf_counter() - t0)
        matvecs = count[0]
        omega = sorted((float(np.sqrt(max(v, 0.0))) for v in w), reverse=True)
        print(f"  eigsh run {r}: {times[-1]:.3f} s, {matvecs} matvecs",
              file=sys.stderr, flush=True)
    starts = [matvecs]
    for r in range(1, args.starts):
        count[0] = 0
        v = np.random.default_rng(12345 + r).uniform(-1.0, 1.0, N)
        eigsh(op, k=args.nev, which="LA", tol=args.tol, v0=v,
              return_eigenvectors=False)
        starts.append(count[0])
        print(f"  eigsh start {r}: {count[0]} matvecs", file=sys.stderr,
              flush=True)
    print(json.dumps({
        "scipy_version": scipy.__version__,
        "t_load": t_load,
        "t_eigsh": statistics.median(times),
        "eigsh_matvecs": matvecs,
        "eigsh_matvecs_starts": starts,
        "t_matvec_scipy": t_mv,
        "eigsh_omega": omega,
        "use_S": use_S,
    }))


if __name__ == "__main__":
    main()
