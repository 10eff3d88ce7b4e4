#!/bin/sh
# report_html.sh [COUNTS...]: size of the HTML report and Chromium's time to
# render it, on generated 3-D piles (default sphere counts 3700 37000, about
# 1e4 and 1e5 contacts). Render time = wall time of a headless screenshot of
# the report minus that of an empty page (median of 3 each), so Chromium's
# start-up is not counted; and the page's own clock: performance.now() when
# the load event fires after a forced layout (parse, style, layout; not
# paint), read back with --dump-dom. Prints a Markdown table row per pile.
# Usage: bench/report_html.sh [3700 37000 370000]   (from the source tree,
#        with build/cmodes built; CHROMIUM overrides the browser)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cmodes=${CMODES:-$top/build/cmodes}
chrome=${CHROMIUM:-$(command -v chromium)}
work=${WORK:-$(mktemp -d)}
counts=${*:-3700 37000}
shot() { # shot HTML: seconds of one headless screenshot
  ud=$(mktemp -d "$work/p.XXXXXX")
  t0=$(date +%s.%N)
  timeout 300 "$chrome" --headless --no-sandbox --disable-gpu \
    --disable-background-networking --disable-component-update --no-first-run \
    --user-data-dir="$ud" --host-resolver-rules='MAP * ~NOTFOUND' \
    --hide-scrollbars --window-size=1200,2000 --screenshot="$work/s.png" \
    "file://$1" >/dev/null 2>&1
  t1=$(date +%s.%N)
  rm -rf "$ud"
  echo "$t1 - $t0" | bc -l
}
timed() { # timed HTML: ms from navigation to load + layout, in the page
  sed 's|</body></html>|<script>addEventListener("load",function(){var h=document.body.offsetHeight;document.title="T"+performance.now().toFixed(0)})</script></body></html>|' "$1" >"$work/timed.html"
  ud=$(mktemp -d "$work/p.XXXXXX")
  timeout 300 "$chrome" --headless --no-sandbox --disable-gpu \
    --disable-background-networking --disable-component-update --no-first-run \
    --user-data-dir="$ud" --host-resolver-rules='MAP * ~NOTFOUND' \
    --dump-dom "file://$work/timed.html" 2>/dev/null |
    sed -n 's|.*<title>T\([0-9]*\)</title>.*|\1|p'
  rm -rf "$ud"
}
median3() { printf '%s\n%s\n%s\n' "$1" "$2" "$3" | sort -g | sed -n 2p; }
printf '<!DOCTYPE html><html><body>empty</body></html>' >"$work/empty.html"
base=$(median3 "$(shot "$work/empty.html")" "$(shot "$work/empty.html")" "$(shot "$work/empty.html")")
echo "| spheres | contacts | analysis + page (s) | page bytes | render (s) | load + layout in the page (ms) |"
echo "|---:|---:|---:|---:|---:|---:|"
for n in $counts; do
  scene=$work/pile$n.cmsb
  [ -f "$scene" ] || { "$cmodes" generate pile --dim 3 --count "$n" --seed 1 -o "$work/pile$n.json" &&
                       "$cmodes" convert "$work/pile$n.json" "$scene" && rm -f "$work/pile$n.json"; }
  t0=$(date +%s.%N)
  "$cmodes" report "$scene" --no-soften -o "$work/pile$n.html"
  t1=$(date +%s.%N)
  nc=$(grep -o '[0-9]* contacts,' "$work/pile$n.html" | head -1 | cut -d' ' -f1)
  bytes=$(stat -c %s "$work/pile$n.html")
  r=$(median3 "$(shot "$work/pile$n.html")" "$(shot "$work/pile$n.html")" "$(shot "$work/pile$n.html")")
  ms=$(median3 "$(timed "$work/pile$n.html")" "$(timed "$work/pile$n.html")" "$(timed "$work/pile$n.html")")
  printf '| %s | %s | %.1f | %s | %.2f | %s |\n' "$n" "$nc" "$(echo "$t1 - $t0" | bc -l)" \
    "$bytes" "$(echo "$r - $base" | bc -l)" "$ms"
done
echo "(empty page: $(printf '%.2f' "$base") s, $(timed "$work/empty.html") ms in the page; $(lscpu | sed -n 's/^Model name: *//p'))"
