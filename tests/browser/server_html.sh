#!/bin/sh
# server_html.sh CMODES SRCDIR: GET /v1/scenes/{id}/report.html serves the
# page of `cmodes report`: text/html, its headline equal to the JSON report.
# Exit 0 pass, 1 fail, 77 skip (no curl).
set -u
cmodes=$1
src=$2
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
tmp=$(mktemp -d)
"$cmodes" serve --listen 127.0.0.1:0 >"$tmp/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/log"; exit 1; }
i=0
while ! grep -q 'listening on' "$tmp/log" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
addr=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$tmp/log" | head -1)
[ -n "$addr" ] || fail "the server did not start"
id=$(curl -sf -X POST -H 'Content-Type: application/json' \
  --data-binary @"$src/data/bar2d.json" "http://$addr/v1/scenes" |
  sed -n 's/.*"id": *"\([0-9a-f]*\)".*/\1/p')
[ -n "$id" ] || fail "POST /v1/scenes"
curl -sf -D "$tmp/h" -o "$tmp/r.html" "http://$addr/v1/scenes/$id/report.html" ||
  fail "GET report.html"
grep -qi '^content-type: text/html' "$tmp/h" || fail "content type: $(cat "$tmp/h")"
h=$(sed -n 's/.*id="s0-h-cd" data-v="\([^"]*\)".*/\1/p' "$tmp/r.html")
want=$("$cmodes" analyze --json "$src/data/bar2d.json" |
  sed -n '/"central_difference"/,/}/s/.*"h": \([^,]*\),.*/\1/p' | head -1)
[ -n "$h" ] && [ "$(printf '%.17g' "$h")" = "$(printf '%.17g' "$want")" ] ||
  fail "headline step '$h' != JSON '$want'"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/v1/scenes/$id/report.htm")
[ "$code" = 404 ] || fail "report.htm gave $code"
echo "ok   GET /v1/scenes/{id}/report.html: text/html, step $h s = JSON"
