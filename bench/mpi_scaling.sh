#!/bin/sh
# mpi_scaling.sh: cmodes-mpi on one generated 3D pile (one component, so
# it is cut over every rank and solved by PARPACK with halo exchange) at
# np = 1, 2, 4 next to the serial `cmodes analyze`, as a Markdown table:
# wall time, the eigen phase, time per product of S, halo messages and
# bytes per product (largest rank), peak memory per rank, and omega_max's
# relative difference from the serial one. Not a test: nothing asserts a
# time. See docs/distributed.md ("Measured").
#
#   bench/mpi_scaling.sh [--count N] [--np "1 2 4"] [--build DIR] [--out DIR]
#                        [--slepc-reps R]
#
# The pile has about 3 contacts per particle (--count 333000: ~1e6
# contacts). Runs are oversubscribed when np exceeds the cores; OpenMPI is
# told to yield when idle (OMPI_MCA_mpi_yield_when_idle=1).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
COUNT=30000 NPS="1 2 4" BUILD=$ROOT/build OUT= SLEPC_REPS=3
while [ $# -gt 0 ]; do
  case $1 in
    --count) COUNT=$2; shift ;;
    --np) NPS=$2; shift ;;
    --build) BUILD=$2; shift ;;
    --out) OUT=$2; shift ;;
    --slepc-reps) SLEPC_REPS=$2; shift ;;
    *) echo "usage: $0 [--count N] [--np LIST] [--build DIR] [--out DIR] [--slepc-reps R]" >&2
       exit 2 ;;
  esac
  shift
done
CM=$BUILD/cmodes CMPI=$BUILD/cmodes-mpi
[ -x "$CMPI" ] || { echo "mpi_scaling: $CMPI not built (MPI/PARPACK)" >&2; exit 1; }
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
ROOTFLAG=
[ "$(id -u)" = 0 ] && ROOTFLAG=--allow-run-as-root
export OMPI_MCA_mpi_yield_when_idle=1

echo "## cmodes-mpi scaling: 3D pile, --count $COUNT"
echo
echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores;" \
  "caches: $(lscpu | sed -n 's/^L[23] cache: *//p' | tr '\n' ' ')"
echo "- triad (numpy a = b + 3 c, 2^25 doubles, one core): $(/usr/bin/python3 -c '
import numpy as np, time
n = 1 << 25; b = np.ones(n); c = np.ones(n); a = np.empty(n); best = 1e9
for _ in range(5):
    t = time.perf_counter(); np.multiply(c, 3.0, out=a); np.add(a, b, out=a)
    best = min(best, time.perf_counter() - t)
print(f"{3 * 8 * n / best / 1e9:.1f} GB/s, STREAM bytes")')"
echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" \
  "(shared machine: figures are noisy; ratios from one run)"
t0=$(date +%s.%N)
"$CM" generate pile --dim 3 --count "$COUNT" --seed 7 --young 7e10 \
  -o "$OUT/pile.json" 2>/dev/null
t1=$(date +%s.%N)
"$CMPI" convert "$OUT/pile.json" "$OUT/pile.cmpart"
t2=$(date +%s.%N)
echo "- generate $(echo "$t1 - $t0" | bc) s, convert $(echo "$t2 - $t1" | bc) s;" \
  "partitioned file $(du -m "$OUT/pile.cmpart" | cut -f1) MiB"
/usr/bin/time -f "%e %M" -o "$OUT/serial.time" \
  "$CM" analyze --threads 1 --json "$OUT/pile.json" >"$OUT/serial.json"
for np in $NPS; do
  /usr/bin/time -f "%e %M" -o "$OUT/np$np.time" \
    mpirun $ROOTFLAG --oversubscribe -np "$np" "$CMPI" analyze --partition \
    --json "$OUT/pile.cmpart" >"$OUT/np$np.json" 2>"$OUT/np$np.part"
done
echo
/usr/bin/python3 - "$OUT" $NPS <<'PY'
import json, sys
out, nps = sys.argv[1], sys.argv[2:]
ser = json.load(open(f"{out}/serial.json"))
w, rss = open(f"{out}/serial.time").read().split()
print("| run | wall s | eigen s | rows | s/product | products | halo msgs/product (max rank) | halo KiB/product (max rank) | peak RSS MiB/rank (max) | omega_max rel. diff |")
print("|---|---|---|---|---|---|---|---|---|---|")
print(f"| serial `cmodes analyze --threads 1` | {float(w):.2f} | {ser['timings']['eigen']:.2f} | {ser['counts']['rows']} | - | {ser['solver']['matvecs']} | - | - | {int(rss)/1024:.0f} | 0 |")
for np in nps:
    r = json.load(open(f"{out}/np{np}.json"))
    w = open(f"{out}/np{np}.time").read().split()[0]
    rows = [l.split() for l in open(f"{out}/np{np}.part") if l[:4].strip().isdigit()]
    msgs = max(float(x[4]) for x in rows); kib = max(float(x[5]) for x in rows) / 1024
    sp = max(float(x[7]) for x in rows); prods = max(float(x[6]) for x in rows)
    mem = max(float(x[8]) for x in rows)
    d = abs(r["omega_max"] - ser["omega_max"]) / ser["omega_max"]
    print(f"| `mpirun -np {np} cmodes-mpi` | {float(w):.2f} | {r['timings']['eigen']:.2f} | {r['counts']['rows']} | {sp:.3g} | {prods:.0f} | {msgs:.0f} | {kib:.1f} | {mem:.0f} | {d:.1e} |")
PY
echo
echo "(eigen s: mean over ranks of the eigen phase; s/product: slowest rank's"
echo " mean time per product of S including its halo waits; files in $OUT)"
# SLEPc's Krylov-Schur against PARPACK on the same distributed operator
# (bench_mpi_slepc, built when slepc-dev is found; docs/distributed.md,
# "SLEPc against PARPACK"); --slepc-reps 0 skips it
SLEPC=$BUILD/bench/bench_mpi_slepc
if [ -x "$SLEPC" ] && [ "$SLEPC_REPS" -gt 0 ]; then
  echo
  echo "### SLEPc Krylov-Schur and PARPACK on the distributed operator" \
    "(nev 6, tol 1e-10, ncv 20, median of $SLEPC_REPS alternating solves)"
  echo
  echo "| np | engine | s/solve (median of $SLEPC_REPS) | products | s/product | lambda_max | rel. diff |"
  echo "|---|---|---|---|---|---|---|"
  for np in $NPS; do
    mpirun $ROOTFLAG --oversubscribe -np "$np" "$SLEPC" "$OUT/pile.cmpart" \
      --reps "$SLEPC_REPS" >"$OUT/slepc$np.txt" 2>&1 || true
    grep '^| [0-9]' "$OUT/slepc$np.txt" || echo "| $np | failed: see $OUT/slepc$np.txt | | | | | |"
  done
  echo "- load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
