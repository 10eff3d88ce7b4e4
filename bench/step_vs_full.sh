#!/bin/bash
# step_vs_full.sh: issue 19's goal 2, measured through the command line.
# The step alone (--modes 1) of this build against the full 6-mode analysis
# of a baseline build (the commit the issue was filed at, 763f861, or any
# other), both on the same saved scene, alternated round by round so both
# see the same machine; prints each run, a table of medians and the verdict
# against the target (step alone < 25 % of the baseline's full analysis).
#
#   bench/step_vs_full.sh --old OLD/build/cmodes --scene /tmp/pile1e6.cmsb \
#       [--new build/cmodes] [--rounds 3] [--threads 2] [--tol 1e-6]
#
# Wall time is the whole process (reading the binary scene included, the
# same for both); eigen and products come from each report. The baseline is
# any cmodes build: git worktree add --detach /tmp/old 763f861 && cmake -S
# /tmp/old -B /tmp/old/build -DCMODES_TESTS=OFF && cmake --build
# /tmp/old/build --target cmodes_cli. The scene: build/bench/bench_step
# --size 1e6 --reps 0 --save /tmp/pile1e6.cmsb (the 1e6 pile, seed 7).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NEW=$ROOT/build/cmodes OLD= SCENE= ROUNDS=3 THREADS=2 TOL=1e-6
while [ $# -gt 0 ]; do
  case $1 in
    --old) OLD=$2; shift 2 ;;
    --new) NEW=$2; shift 2 ;;
    --scene) SCENE=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --tol) TOL=$2; shift 2 ;;
    *) echo "step_vs_full.sh: unknown argument '$1' (see the head of $0)" >&2
       exit 2 ;;
  esac
done
for f in "$OLD" "$NEW"; do
  [ -x "$f" ] || { echo "step_vs_full.sh: '$f' is not an executable cmodes" \
    "(--old and --new)" >&2; exit 2; }
done
[ -r "$SCENE" ] || { echo "step_vs_full.sh: --scene '$SCENE' not readable" >&2
  exit 2; }
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

lscpu | grep -E '^(Model name|L1d|L2|L3)' | sed 's/  */ /g'
TRIAD=$ROOT/build/bench/triad
[ -x "$TRIAD" ] && "$TRIAD" --threads "$THREADS" || echo "triad: (build/bench/triad not built)"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg); scene $SCENE;" \
  "threads $THREADS; tol $TOL; $ROUNDS rounds"
echo

# one run: label binary modes -> appends "label wall eigen products" to runs
one() {
  local label=$1 bin=$2 modes=$3 t0 t1
  t0=$(date +%s.%N)
  "$bin" analyze --json --modes "$modes" --tol "$TOL" --threads "$THREADS" \
    "$SCENE" > "$TMP/r.json" 2> "$TMP/err" || {
    echo "step_vs_full.sh: $label failed: $(head -c 400 "$TMP/err")" >&2
    exit 1; }
  t1=$(date +%s.%N)
  "$PY" - "$label" "$t0" "$t1" "$TMP/r.json" >> "$TMP/runs" <<'PYEOF'
import json, sys
label, t0, t1, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
d = json.load(open(path))
t = d.get("timings", {})
print(label, f"{t1 - t0:.3f}", f"{t.get('eigen', float('nan')):.3f}",
      d["solver"].get("matvecs", -1), f"{d['omega_max']!r}")
PYEOF
  tail -1 "$TMP/runs" | awk '{printf "  %-14s whole %7.3f s  eigen %7.3f s  products %4d  omega_max %s\n", $1, $2, $3, $4, $5}'
}

for r in $(seq "$ROUNDS"); do
  echo "round $r"
  one old-full "$OLD" 6
  one new-full "$NEW" 6
  one new-step "$NEW" 1
done
echo
"$PY" - "$TMP/runs" <<'PYEOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    label, wall, eig, mv, om = line.split()
    runs.setdefault(label, []).append((float(wall), float(eig), int(mv)))
med = {k: [statistics.median(x[i] for x in v) for i in range(3)]
       for k, v in runs.items()}
print("| run | whole (s) | eigen (s) | products |")
print("|---|---|---|---|")
names = {"old-full": "baseline, full (--modes 6)",
         "new-full": "this build, full (--modes 6)",
         "new-step": "this build, step alone (--modes 1)"}
for k in ("old-full", "new-full", "new-step"):
    w, e, m = med[k]
    print(f"| {names[k]} | {w:.3f} | {e:.3f} | {m:.0f} |")
ratio = med["new-step"][0] / med["old-full"][0]
print()
print(f"step alone / baseline full analysis: {ratio:.3f} "
      f"(target < 0.25): {'holds' if ratio < 0.25 else 'does not hold'}")
print(f"this build's full / baseline full: {med['new-full'][0] / med['old-full'][0]:.3f}")
PYEOF
