#!/bin/sh
# html_chromium.sh CMODES SRCDIR: the HTML report in a real browser.
# Headless Chromium opens the report offline (every host name mapped to
# NOTFOUND, the page must reference no http(s) URL); the DOM after its
# scripts ran holds the headline numbers equal to the JSON report's; the
# screenshot is not blank and shows the scene; the console has no errors;
# the campaign page over data/ has one row per scene matching the JSON.
# Exit 0 pass, 1 fail, 77 skip (Chromium missing or cannot start).
set -u
cmodes=$1
src=$2
py=/usr/bin/python3
chrome=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$chrome" ]; then
  echo "SKIP: chromium not installed (apt-get install chromium)"
  exit 77
fi
if ! $py -c 'import PIL' 2>/dev/null; then
  echo "SKIP: python3-pil missing (apt-get install python3-pil)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # run LOG ARGS...: headless, offline, a fresh profile
  log=$1; shift
  ud=$(mktemp -d "$tmp/profile.XXXXXX")
  timeout 60 "$chrome" --headless --no-sandbox --disable-gpu \
    --disable-background-networking --disable-component-update \
    --no-first-run --user-data-dir="$ud" \
    --host-resolver-rules='MAP * ~NOTFOUND' \
    --enable-logging=stderr --v=0 "$@" 2>"$log"
}
fail() { echo "FAIL: $*"; exit 1; }

# ---- Chromium starts, and its console errors are seen ----
printf '<!DOCTYPE html><html><body><p id="x">ok</p><script>throw new Error("probe")</script></body></html>' >"$tmp/probe.html"
if ! run "$tmp/probe.log" --dump-dom "file://$tmp/probe.html" >"$tmp/probe.dom" ||
   ! grep -q 'id="x"' "$tmp/probe.dom"; then
  echo "SKIP: chromium cannot start here:"; tail -5 "$tmp/probe.log"
  exit 77
fi
grep -q 'Uncaught' "$tmp/probe.log" ||
  fail "the console probe's error was not logged: the console check would be blind"

# ---- one scene: the report and its JSON ----
scene=$src/data/pile2d.json
"$cmodes" report "$scene" -o "$tmp/r.html" --title pile2d || fail "cmodes report"
"$cmodes" analyze --json "$scene" >"$tmp/r.json" || fail "cmodes analyze"
grep -Eiq 'https?://' "$tmp/r.html" && fail "the page references a network URL"
grep -Eiq '<(link|img|iframe)[^>]*(src|href)=|<script[^>]+src=' "$tmp/r.html" &&
  fail "the page loads an external file"
run "$tmp/r.log" --dump-dom "file://$tmp/r.html" >"$tmp/r.dom" || fail "dump-dom"
grep -E 'Uncaught|ERROR:CONSOLE|:CONSOLE\(' "$tmp/r.log" && fail "console errors"
run "$tmp/s.log" --hide-scrollbars --window-size=1200,1400 \
  --screenshot="$tmp/r.png" "file://$tmp/r.html" >/dev/null || fail "screenshot"
grep -E 'Uncaught|ERROR:CONSOLE' "$tmp/s.log" && fail "console errors (screenshot)"

# ---- campaign over every scene in data/ ----
"$cmodes" report "$src"/data/*.json --no-soften -o "$tmp/c.html" || fail "campaign"
for f in "$src"/data/*.json; do
  "$cmodes" analyze --json "$f" >"$tmp/c.$(basename "$f")" || fail "analyze $f"
done
run "$tmp/c.log" --dump-dom "file://$tmp/c.html" >"$tmp/c.dom" || fail "dump-dom campaign"
grep -E 'Uncaught|ERROR:CONSOLE' "$tmp/c.log" && fail "console errors (campaign)"

$py - "$tmp" "$src" <<'PY' || exit 1
import glob, html.parser, json, math, os, sys
from PIL import Image
tmp, src = sys.argv[1], sys.argv[2]

class Grab(html.parser.HTMLParser):
    """ids -> (data-v, text); campaign rows -> cells' data-v / text."""
    def __init__(s):
        super().__init__(); s.v = {}; s.cur = None; s.rows = []; s.intab = 0; s.cell = None
    def handle_starttag(s, tag, a):
        a = dict(a)
        if 'id' in a: s.cur = a['id']; s.v[s.cur] = [a.get('data-v'), '']
        if tag == 'table' and a.get('id') == 'campaign': s.intab = 1
        if s.intab and tag == 'tr': s.rows.append([])
        if s.intab and tag == 'td': s.cell = [a.get('data-v'), '']; s.rows[-1].append(s.cell)
    def handle_endtag(s, tag):
        if tag == 'table': s.intab = 0
        if tag in ('span', 'div'): s.cur = None
        if tag == 'td': s.cell = None
    def handle_data(s, d):
        if s.cur: s.v[s.cur][1] += d
        if s.cell is not None: s.cell[1] += d

def same(a, b, what):
    if not (a == b or (math.isfinite(a) and abs(a - b) <= 1e-12 * abs(b))):
        print(f"FAIL: {what}: page {a!r} != JSON {b!r}"); sys.exit(1)

g = Grab(); g.feed(open(f"{tmp}/r.dom").read())
j = json.load(open(f"{tmp}/r.json"))
cd = j['timestep']['central_difference']
want = {'s0-h-cd': cd['h'], 's0-h-cert': cd['certified'],
        's0-h-omega': j['omega_max'], 's0-h-ratio': j['per_contact']['ratio'],
        's0-h-pc': 2 / j['per_contact']['omega_max']}
for k, w in want.items():
    if k not in g.v or g.v[k][0] is None: print(f"FAIL: {k} missing from the DOM"); sys.exit(1)
    same(float(g.v[k][0]), w, k)
    if f"{float(g.v[k][1]):.6g}" != f"{w:.6g}": print(f"FAIL: {k} shows {g.v[k][1]}"); sys.exit(1)
if g.v.get('s0-h-model', [0, ''])[1].strip() != j['model']['label']:
    print("FAIL: model label", g.v.get('s0-h-model')); sys.exit(1)
print("ok   DOM headline equals the JSON report:", {k: float(g.v[k][0]) for k in want})

im = Image.open(f"{tmp}/r.png").convert('RGB')
px = list(im.getdata())
n = len(px); mean = [sum(p[i] for p in px) / n for i in range(3)]
var = sum(sum((p[i] - mean[i]) ** 2 for i in range(3)) for p in px) / n
hot = sum(1 for r, gg, b in px if r > 150 and gg < 110 and b < 90)   # contact heat colours
blue = sum(1 for r, gg, b in px if b > 150 and r < 120)              # bodies' kinetic shading
print(f"ok   screenshot {im.size}: {len(set(px))} colours, variance {var:.0f}, "
      f"{hot} red contact pixels, {blue} blue body pixels")
if len(set(px)) < 50 or var < 100: print("FAIL: blank screenshot"); sys.exit(1)
if hot < 150 or blue < 300: print("FAIL: the scene is not drawn"); sys.exit(1)

g = Grab(); g.feed(open(f"{tmp}/c.dom").read())
rows = [r for r in g.rows if r]
files = sorted(glob.glob(f"{src}/data/*.json"))
if len(rows) != len(files): print(f"FAIL: {len(rows)} rows for {len(files)} scenes"); sys.exit(1)
for f, r in zip(files, rows):
    j = json.load(open(f"{tmp}/c.{os.path.basename(f)}"))
    cd = j['timestep']['central_difference']
    same(float(r[1][0]), j['counts']['contacts'], f"{f} contacts")
    same(float(r[2][0]), j['omega_max'], f"{f} omega_max")
    same(float(r[3][0]), cd['h'], f"{f} h")
    same(float(r[4][0]), cd['certified'], f"{f} certified")
    same(float(r[5][0]), j['timestep']['rk4']['h'], f"{f} rk4")
    same(float(r[6][0]), j['per_contact']['ratio'], f"{f} ratio")
    same(float(r[7][0]), j['components']['sets_step'], f"{f} component")
    top = j['modes'][0]['contacts'][0]['index']
    if not r[8][1].startswith(f"c{top} ") and r[8][1] != f"c{top}":
        print(f"FAIL: {f} limiting contact {r[8][1]!r}, JSON c{top}"); sys.exit(1)
print(f"ok   campaign table: {len(rows)} rows equal the JSON reports")
PY
echo "ok   no console errors, no network URL, no external file"
