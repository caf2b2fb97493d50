#!/usr/bin/env bash
# test_sqlite_only.sh — the SQLite-only ringkeeperd (cmake -DRK_CLIENT=OFF -DRK_STORE_ETCD=OFF,
# docs/OPERATIONS.md "A SQLite-only server"): it configures without looking for libcurl or libyaml,
# links no libcurl, publishes and serves a ring from SQLite, and refuses an etcd:// store naming
# the option that builds it.
# usage: test_sqlite_only.sh SOURCE_DIR
set -u
src=$(cd "$1" && pwd)
build=$(mktemp -d)
mkdir -p "$build/server"
. "$src/tests/server/lib.sh" "$build/server/ringkeeperd"
trap 'rk_cleanup; rm -rf "$build"' EXIT

if cmake -S "$src" -B "$build" -DRK_CLIENT=OFF -DRK_STORE_ETCD=OFF >"$build/cmake.log" 2>&1 &&
    cmake --build "$build" -j2 --target ringkeeperd >>"$build/cmake.log" 2>&1; then
    ok
else
    bad "the SQLite-only build failed:"
    tail -n 30 "$build/cmake.log"
    finish
    exit
fi
check "libcurl and libyaml not looked for" 0 "$(grep -c '^CURL_\|^YAML_' "$build/CMakeCache.txt")"
check "ringkeeperd links no libcurl" 0 "$(readelf -d "$RKD" | grep -c 'NEEDED.*libcurl')"
check "the client's targets are not built" 0 "$(find "$build/client" -name 'ringkeeper' -type f | wc -l)"

rk_start
check "publish" 201 "$(req POST '/v1/clusters/c/versions?activate=true' --data-binary \
    '{"hash":"xxh3_64","vnode_factor":8,"nodes":[{"id":"a","addr":"10.0.0.1:11211","weight":1}]}')"
check "the ring" 200 "$(req GET /v1/clusters/c/ring)"
has "the ring's nodes" "$TMP/body" '"id":"a"'
rk_stop
check "stopped cleanly" 0 "$STOP_CODE"

"$RKD" --listen 127.0.0.1:0 --store etcd://127.0.0.1:1 >"$TMP/etcd.out" 2>&1
check "an etcd store: exit 2" 2 "$?"
has "an etcd store: the option named" "$TMP/etcd.out" \
    'this ringkeeperd was built without the etcd store (cmake -DRK_STORE_ETCD=OFF)'
finish
