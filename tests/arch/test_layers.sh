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
# A fresh copy of the tree to break.
fresh() {
    rm -rf "$tmp/tree" && mkdir -p "$tmp/tree" && cp -r "$src/server" "$src/client" "$tmp/tree/"
}
# refused WHAT PATTERN...: the check refuses the broken copy, naming each PATTERN in its output.
refused() {
    local what=$1 out="$tmp/out"
    shift
    if /usr/bin/python3 "$here/check_layers.py" "$tmp/tree" >"$out"; then
        echo "FAIL: $what passed"; failed=1; return
    fi
    for pattern in "$@"; do
        grep -qF "$pattern" "$out" || { echo "FAIL: $what is not named: $(cat "$out")"; failed=1; }
    done
}
fresh
printf '#include "api.h"\n' >>"$tmp/tree/server/store/store_rules.c"
refused "a store file including api.h" \
    'store_rules.c (store) includes server/api/api.h (api), a layer above it'
fresh
printf '#include "http_budget.h"\n' >>"$tmp/tree/server/ops/log.h"
printf '#include "log.h"\n' >>"$tmp/tree/server/ops/http_budget.h"
refused "two headers including each other" 'include circle'
fresh
printf '#include "api_picture.h"\nvoid rkd_plan_draws(rkd_call *c) { rkd_h_picture(c); }\n' \
    >>"$tmp/tree/server/api/api_plan.c"
refused "a handler calling another handler" \
    'handler server/api/api_plan.c includes server/api/api_picture.h' \
    'handler server/api/api_plan.c uses rkd_h_picture of handler server/api/api_picture.c'
fresh
printf 'int rkd_changes_active(rkd_app *a) { int rc; return rkd_active_entry(a, "c", &rc, 0) != 0; }\n' \
    >>"$tmp/tree/server/app/changes.c"
refused "two files calling each other" \
    'call circle: server/app/changes.c (rkd_active_entry) -> server/app/docs.c (rkd_app_wake) -> server/app/changes.c'
[ "$failed" -eq 0 ] && echo "layers: ok"
exit "$failed"
