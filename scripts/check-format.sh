#!/bin/sh
# check-format.sh: clang-format --dry-run --Werror on the C files under
# src/, include/ and tests/ (the ctest entry `format`). Files listed in
# scripts/clang-format-pending.txt are not formatted yet and are skipped:
# format one (clang-format -i FILE) when nobody else is changing it and
# take it off the list; a new file must be formatted. Exit 77 (ctest:
# skipped) when clang-format is not installed.
cd "$(dirname "$0")/.." || exit 1
command -v clang-format >/dev/null 2>&1 || { echo "clang-format not found: skipped"; exit 77; }
pending=scripts/clang-format-pending.txt
bad=0
for f in $(find src include tests -name '*.[ch]' | sort); do
  if grep -qx "$f" "$pending"; then
    continue
  fi
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (clang-format -i $f)"
    bad=1
  fi
done
for f in $(cat "$pending"); do
  [ -f "$f" ] || { echo "$pending lists a missing file: $f"; bad=1; }
done
exit $bad
