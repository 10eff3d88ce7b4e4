#!/usr/bin/env bash
# setup.sh: installs what is missing (Debian 12, as root), builds cmodes, and
#   run     analyses the bundled reference bar (data/bar2d.json), or
#   test    builds the tests (also under ASan/UBSan) and runs them with ctest,
#   install installs the library, headers and Python package (cmake
#           --install build, under /usr/local) and checks `import cmodes`.
#   bench-deps installs also what only bench/ uses (yajl, simdjson, SLEPc).
# Usage: scripts/setup.sh run|test|install|deps|bench-deps|build
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
what=${1:-run}

pkgs=(build-essential cmake pkg-config libsuitesparse-dev libarpack2-dev
      libparpack2-dev libopenblas-dev liblapacke-dev libjansson-dev
      libmicrohttpd-dev curl python3 lammps python3-lammps liblammps-dev
      openmpi-bin libopenmpi-dev
      python3-numpy python3-scipy python3-cffi python3-pytest python3-wheel
      python3-setuptools python3-pip libmujoco-dev libmujoco-samples
      chromium python3-pil python3-vtk9 python3-ase
      clang libclang-rt-dev libomp-dev # clang: the libFuzzer harnesses
      )
# Only for bench/ (never needed to build or test): the parser rows of
# bench_intake (yajl, simdjson) and SLEPc (bench/slepc, bench_mpi_slepc).
# `scripts/setup.sh bench-deps` installs them with the rest.
bench_pkgs=(libyajl-dev libsimdjson-dev slepc-dev)
deps() { # deps [extra packages...]
  local missing=()
  for p in "${pkgs[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
      missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then
      echo "setup: these Debian packages are missing and this is not root:" \
           "install them with: apt-get install ${missing[*]}" >&2
      exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

jobs=$(nproc 2>/dev/null || echo 2)
build() { # build DIR [cmake args...] [-- build args...]
  local dir=$1; shift
  local conf=() args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do conf+=("$1"); shift; done
  [ $# -gt 0 ] && shift && args=("$@")
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${conf[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs" "${args[@]}"
}

case "$what" in
deps) deps ;;
bench-deps) deps "${bench_pkgs[@]}" ;;
build) deps; build build ;;
run)
  deps; build build
  ./build/cmodes analyze data/bar2d.json
  ;;
install)
  deps; build build
  cmake --install build >/dev/null
  (cd / && /usr/bin/python3 -c "import cmodes; print('cmodes', \
    cmodes.__version__, cmodes.__file__, 'library', cmodes.library_path)")
  ;;
test)
  deps
  build build
  (cd build && ctest --output-on-failure -j "$jobs")
  # the Python tests' own count (pytest's summary line in ctest's log)
  grep -h -E "^[0-9]+ passed.* in [0-9.]+s" build/Testing/Temporary/LastTest.log |
    sed 's/^/python tests: /' || true
  build build-asan -DCMODES_SANITIZE=ON
  (cd build-asan &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=suppressions="$top/tests/lsan.supp" \
    ctest --output-on-failure -j "$jobs" -LE no-sanitizer)
  # the server's libFuzzer harnesses, a short run each (fuzz/README.md)
  CC=clang build build-fuzz -DCMODES_FUZZ=ON -DCMODES_SANITIZE=ON \
    -DCMODES_TESTS=OFF -- --target cmodes_fuzz
  (cd build-fuzz &&
    ASAN_OPTIONS=detect_leaks=1 \
    LSAN_OPTIONS=suppressions="$top/tests/lsan.supp" \
    ctest --output-on-failure -L fuzz)
  ;;
*) echo "usage: scripts/setup.sh run|test|install|deps|build" >&2; exit 2 ;;
esac
