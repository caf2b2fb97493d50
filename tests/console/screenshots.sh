#!/usr/bin/env bash
# screenshots.sh RINGKEEPERD — regenerates the console's pictures in docs/console/: runs the browser
# test (test_console.sh, which seeds a server and drives every view in Debian's chromium) and keeps
# the first screen of each view named below. Run after changing server/ui/:
#   tests/console/screenshots.sh build/server/ringkeeperd
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
DOCS=$HERE/../../docs/console
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$HERE/test_console.sh" "$1" "$OUT" >"$OUT/log" 2>&1 || { tail -20 "$OUT/log"; exit 1; }
mkdir -p "$DOCS"
# view name in the test -> picture in docs/console/
while read -r from to; do
    install -m 644 "$OUT/$from.png" "$DOCS/$to.png"
done <<'LIST'
clusters clusters
cluster cluster
plan plan-verdict
plan-hover plan-rings
verdict-force-bad-info-info-info-warn-info-ok plan-over-budget
verdict-approve-info-info-warn-warn-warn-info-ok plan-approvals-missing
verdict-load plan-load
verdict-self-approval plan-self-approval
verdict-window-open plan-window-open
big-plan plan-100k-nodes
plan-1000 plan-1000-nodes
rollout-review rollout
cluster-live cluster-live
LIST
ls -l "$DOCS"
