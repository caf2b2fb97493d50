#!/usr/bin/env bash
# test_layers.sh — the layers of docs/ARCHITECTURE.md hold on today's tree (check_layers.py finds
# no breach), and the check can fail: copies of the tree where the store includes the API's header,
# where two headers include each other, where a handler calls another handler, and where two files
# call each other, are each refused.
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
rm -rf "$tmp/tree" && mkdir -p "$tmp/tree" && cp -r "$src/server" "$src/client" "$tmp/tree/"
printf '#include "api_picture.h"\nvoid rkd_plan_draws(rkd_call *c) { rkd_h_picture(c); }\n' \
    >>"$tmp/tree/server/api/api_plan.c"
if /usr/bin/python3 "$here/check_layers.py" "$tmp/tree" >"$tmp/out3"; then
    echo "FAIL: a handler calling another handler passed"; failed=1
elif ! grep -q 'handler server/api/api_plan.c includes server/api/api_picture.h' "$tmp/out3" ||
    ! grep -q 'handler server/api/api_plan.c uses rkd_h_picture of handler server/api/api_picture.c' "$tmp/out3"; then
    echo "FAIL: the handler's call is not named: $(cat "$tmp/out3")"; failed=1
fi
rm -rf "$tmp/tree" && mkdir -p "$tmp/tree" && cp -r "$src/server" "$src/client" "$tmp/tree/"
printf 'int rkd_changes_active(rkd_app *a) { int rc; return rkd_active_entry(a, "c", &rc, 0) != 0; }\n' \
    >>"$tmp/tree/server/app/changes.c"
if /usr/bin/python3 "$here/check_layers.py" "$tmp/tree" >"$tmp/out4"; then
    echo "FAIL: two files calling each other passed"; failed=1
elif ! grep -q 'call circle: server/app/changes.c (rkd_active_entry) -> server/app/docs.c (rkd_app_wake) -> server/app/changes.c' "$tmp/out4"; then
    echo "FAIL: the call circle is not named: $(cat "$tmp/out4")"; failed=1
fi
[ "$failed" -eq 0 ] && echo "layers: ok"
exit "$failed"
