#!/usr/bin/env bash
# lammps-pile.sh: installs Debian's lammps package when missing, runs the
# committed granular pour data/lammps/in.pile and leaves its snapshot in
# data/lammps/pile.dump (and the run's log in data/lammps/log.lammps).
# Usage: scripts/lammps-pile.sh [extra lmp arguments, e.g. -var seed 123]
# The tests use the committed pile.dump and never need lammps installed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top/data/lammps"

lmp_bin=""
for b in lmp lmp_serial lmp_stable; do
  if command -v "$b" >/dev/null 2>&1; then lmp_bin=$b; break; fi
done
if [ -z "$lmp_bin" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "lammps-pile: no LAMMPS binary (lmp) found and this is not root:" \
         "install it with: apt-get install lammps" >&2
    exit 1
  fi
  echo "lammps-pile: installing Debian's lammps package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends lammps
  for b in lmp lmp_serial; do
    if command -v "$b" >/dev/null 2>&1; then lmp_bin=$b; break; fi
  done
  [ -n "$lmp_bin" ] || { echo "lammps-pile: lmp still missing" >&2; exit 1; }
fi

# Debian's lmp is an MPI program run here as a singleton: Open MPI need
# not start its daemon (LAMMPS never spawns), one moving part fewer.
export OMPI_MCA_ess_singleton_isolated=${OMPI_MCA_ess_singleton_isolated:-1}
echo "lammps-pile: using $lmp_bin ($("$lmp_bin" -h | sed -n "s/^Large-scale[^-]*- //p" | head -1))"
start=$(date +%s)
"$lmp_bin" -in in.pile -log log.lammps -screen none "$@"
end=$(date +%s)
[ -s pile.dump ] || { echo "lammps-pile: pile.dump was not written" >&2; exit 1; }
grep '^PILE' log.lammps || true
echo "lammps-pile: wrote data/lammps/pile.dump ($(($(wc -l < pile.dump) - 9)) atoms) in $((end - start)) s"
