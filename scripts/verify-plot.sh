#!/usr/bin/env bash
# verify-plot.sh: regenerates the plots and the worked example of
# docs/verification.md from the reference bar and a generated pile.
# Needs only a built cmodes (no plotting package: `cmodes verify --plot`
# writes SVG itself).
# Usage: scripts/verify-plot.sh [BUILD_DIR]   (default: build)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$top/build}/cmodes
[ -x "$bin" ] || { echo "verify-plot: no $bin; build first" >&2; exit 1; }
mkdir -p "$top/docs/img"
"$bin" verify "$top/data/bar2d.json" --gravity 0,-9.81 -q \
  --amplitudes 0.01,1.5 --steps 0.05,0.2 \
  --plot "$top/docs/img/verify-bar-energy.svg"
echo "verify-plot: wrote docs/img/verify-bar-energy.svg" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" generate pile --dim 2 --count 1000 --seed 3 >"$tmp/pile.json"
"$bin" verify "$tmp/pile.json" --stability-only --integrators cd -q \
  --plot "$top/docs/img/verify-pile-energy.svg"
echo "verify-plot: wrote docs/img/verify-pile-energy.svg" >&2
