#!/usr/bin/env bash
# test_layers.sh — the layers of docs/ARCHITECTURE.md hold on today's tree (check_layers.py finds
# no breach), and the check can fail: a copy of the tree where the store includes the API's header,
# and one where two headers include each other, are each refused.
# usage: test_layers.sh SOURCE_DIR
set -u
src=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
/usr/bin/python3 "$here/check_layers.py" "$src" || failed=1
mkdir -p "$tmp/tree"
cp -r "$src/server" "$src/client" "$tmp/tree/"
printf '#include "api.h"\n' >>"$tmp/tree/server/store/store_rules.c"
if /usr/bin/python3 "$here/check_layers.py" "$tmp/tree" >"$tmp/out1"; then
    echo "FAIL: a store file including api.h passed"; failed=1
elif ! grep -q 'store_rules.c (store) includes server/api/api.h (api), a layer above it' "$tmp/out1"; then
    echo "FAIL: the breach is not named: $(cat "$tmp/out1")"; failed=1
fi
rm -rf "$tmp/tree" && mkdir -p "$tmp/tree" && cp -r "$src/server" "$src/client" "$tmp/tree/"
printf '#include "http_budget.h"\n' >>"$tmp/tree/server/ops/log.h"
printf '#include "log.h"\n' >>"$tmp/tree/server/ops/http_budget.h"
if /usr/bin/python3 "$here/check_layers.py" "$tmp/tree" >"$tmp/out2"; then
    echo "FAIL: two headers including each other passed"; failed=1
elif ! grep -q 'include circle' "$tmp/out2"; then
    echo "FAIL: the circle is not named: $(cat "$tmp/out2")"; failed=1
fi
[ "$failed" -eq 0 ] && echo "layers: ok"
exit "$failed"
