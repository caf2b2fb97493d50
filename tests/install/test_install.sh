#!/usr/bin/env bash
# test_install.sh — `cmake --install` into a temporary prefix, then use it as an application would:
# the installed files, the shared library's exported symbols, the header on its own (C and C++),
# docs/examples/client_example.c built with pkg-config (shared and static) and with CMake
# find_package, and run against the INSTALLED ringkeeperd (started without --migrations from inside
# the prefix, on an empty database: it finds the installed migrations): it routes keys as
# `ringkeeper lookup` does, refreshes in the background to a new version with dual owners, refuses
# a ring with another vnode_factor, and runs from its last-known-good file once the server is gone. Also checks that
# docs/CLIENT.md shows the example file verbatim.
# usage: test_install.sh BUILD_DIR SOURCE_DIR
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
. "$src/tests/server/lib.sh" "$build/server/ringkeeperd"
P=$TMP/prefix
example=$src/docs/examples/client_example.c
four=$src/tests/cli/four.json
five=$src/tests/cli/five.json
CFLAGS=(-Wall -Wextra -Werror -std=c11 -D_POSIX_C_SOURCE=200809L)
# a sanitizer build's library needs its runtime loaded first: build the applications the same way
if grep -q '^RK_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
    CFLAGS+=("-fsanitize=address,undefined")
fi
hasnt() { # hasnt NAME FILE TEXT
    if grep -qF -- "$3" "$2"; then bad "$1: [$3] in $2"; else ok; fi
}
same() { # same NAME FILE_A FILE_B
    if cmp -s "$2" "$3"; then ok; else bad "$1"; diff "$2" "$3" | head -20; fi
}

# ---- the installed files ----
if timeout 120 cmake --install "$build" --prefix "$P" >"$TMP/install.log" 2>&1; then ok; else
    bad "cmake --install failed: $(tail -20 "$TMP/install.log")"
    finish
    exit
fi
pc=$(find "$P" -name ringkeeper.pc)
libdir=$(dirname "$(dirname "$pc")") # lib or lib/<multiarch>, as GNUInstallDirs chose
check "one ringkeeper.pc" 1 "$(echo "$pc" | grep -c .)"
for f in "$libdir/libringkeeper.so" "$libdir/libringkeeper.so.0" "$libdir/libringkeeper.a" \
    "$P/include/ringkeeper.h" "$libdir/cmake/ringkeeper/ringkeeperConfig.cmake" \
    "$libdir/cmake/ringkeeper/ringkeeperConfigVersion.cmake" \
    "$libdir/cmake/ringkeeper/ringkeeperTargets.cmake"; do
    if [ -f "$f" ]; then ok; else bad "not installed: ${f#"$P"/}"; fi
done
for f in ringkeeper ringkeeperd; do
    if [ -x "$P/bin/$f" ]; then ok; else bad "not installed: bin/$f"; fi
done
check "migrations installed" "$(find "$src/migrations" -name '*.sql' | wc -l)" \
    "$(find "$P" -path '*/ringkeeper/migrations/*.sql' | wc -l)"
check "only the public header is installed" "ringkeeper.h" "$(cd "$P/include" && find . -type f | sed 's|^\./||')"
export PKG_CONFIG_PATH=$libdir/pkgconfig
check "pc prefix is the install prefix" "$P" "$(pkg-config --variable=prefix ringkeeper)"
check "pc version" "$(sed -n 's/^project(ringkeeper VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" \
    "$(pkg-config --modversion ringkeeper)"

# ---- the shared library exports exactly the header's RK_API functions ----
nm -D --defined-only "$libdir/libringkeeper.so" | awk '{print $3}' | sort >"$TMP/exported"
grep '^RK_API' "$P/include/ringkeeper.h" | sed -E 's/\(.*//; s/.*[ *]//' | sort >"$TMP/declared"
check "exported symbols: some" 1 "$([ "$(wc -l <"$TMP/exported")" -ge 50 ] && echo 1)"
same "exported symbols = the header's RK_API functions" "$TMP/declared" "$TMP/exported"

# ---- the installed header on its own ----
printf '#include <ringkeeper.h>\nint main(void) { return rk_strerror(RK_OK)[0] == 0; }\n' >"$TMP/h.c"
if cc -Wall -Wextra -Werror -std=c11 -pedantic -I"$P/include" -c "$TMP/h.c" -o "$TMP/h.o" 2>"$TMP/err"; then
    ok
else bad "header alone in C: $(cat "$TMP/err")"; fi
if command -v c++ >/dev/null; then
    cp "$TMP/h.c" "$TMP/h.cpp"
    if c++ -Wall -Wextra -Werror -pedantic -I"$P/include" -c "$TMP/h.cpp" -o "$TMP/h.o" 2>"$TMP/err"; then
        ok
    else bad "header alone in C++: $(cat "$TMP/err")"; fi
fi

# ---- the example, built with pkg-config: shared, and static ----
# shellcheck disable=SC2046
if cc "${CFLAGS[@]}" "$example" $(pkg-config --cflags --libs ringkeeper) -o "$TMP/example" 2>"$TMP/err"; then
    ok
else bad "example with pkg-config: $(cat "$TMP/err")"; fi
# libringkeeper.a, linked by docs/CLIENT.md's two commands exactly as written there (the block after
# each marker), in a folder holding the example; `cc` takes this build's flags too
doc_block() { # doc_block MARKER: the shell lines of the code block after <!-- MARKER --> in CLIENT.md
    awk -v m="<!-- $1 -->" '$0 == m { on = 1; next } on && /^```sh/ { in_block = 1; next }
        in_block && /^```/ { exit } in_block { print }' "$src/docs/CLIENT.md"
}
mkdir -p "$TMP/static" && cp "$example" "$TMP/static/"
for marker in static-link static-link-direct; do
    block=$(doc_block "$marker")
    check "docs/CLIENT.md has the $marker command" 1 "$([ -n "$block" ] && echo 1)"
    if (cd "$TMP/static" && cc() { command cc "${CFLAGS[@]}" "$@"; } && eval "$block") 2>"$TMP/err"; then
        ok
    else bad "docs/CLIENT.md's $marker command: $(cat "$TMP/err")"; fi
done
cp "$TMP/static/client_example_static" "$TMP/example_static"
has "the static build links its dependencies shared" <(readelf -d "$TMP/example_static") "libcurl"
hasnt "... but not libringkeeper.so" <(readelf -d "$TMP/example_static") "libringkeeper"
export LD_LIBRARY_PATH=$libdir
has "the example uses the installed library" <(ldd "$TMP/example") "$libdir/libringkeeper.so.0"

# ---- the example, built with CMake find_package ----
mkdir -p "$TMP/app"
cat >"$TMP/app/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.18)
project(app LANGUAGES C)
find_package(ringkeeper 0.1 REQUIRED)
add_executable(app $example)
target_compile_options(app PRIVATE ${CFLAGS[*]})
target_link_options(app PRIVATE ${CFLAGS[*]})
target_link_libraries(app PRIVATE ringkeeper::ringkeeper)
EOF
if timeout 120 cmake -S "$TMP/app" -B "$TMP/app/build" -DCMAKE_PREFIX_PATH="$P" >"$TMP/cmake.log" 2>&1 &&
    timeout 120 cmake --build "$TMP/app/build" >>"$TMP/cmake.log" 2>&1; then
    ok
else bad "example with find_package: $(tail -20 "$TMP/cmake.log")"; fi

# ---- against the installed ringkeeperd ----
# shellcheck disable=SC2034 # rk_start (lib.sh) runs $RKD
RKD=$P/bin/ringkeeperd
# without --migrations, from a folder far from the source tree, on an empty database
has "the installed daemon defaults to the installed migrations" <("$RKD" --help) "here that is $P/"
cd "$P" || exit 1
rk_start
mapfile -t keys < <(printf '%s\n' user:1 user:2 session:9f2c; seq -f 'key:%g' 1 200)
printf '%s\n' "${keys[@]}" >"$TMP/keys"
"$P/bin/ringkeeper" lookup --topology "$four" <"$TMP/keys" >"$TMP/want4"
"$P/bin/ringkeeper" lookup --topology "$five" <"$TMP/keys" >"$TMP/want5"
check "publish v1" 201 "$(req POST '/v1/clusters/cache/versions?activate=true' \
    -H 'Content-Type: application/json' --data-binary @"$four")"

# run NAME CODE ARGS...: the example (shared) with stdout to $TMP/out
run() {
    local name=$1 want=$2
    shift 2
    timeout 60 "$TMP/example" "$@" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    check "$name: exit code (stderr: $(head -c 300 "$TMP/err"))" "$want" "$got"
}
lkg=$TMP/ring.lkg
run "fetch v1" 0 "$BASE" cache "$lkg" 0 "${keys[@]}"
has "fetch v1: says the version" "$TMP/out" "# ring v1 (fingerprint 7bb0b9b16b5a8abe)"
grep -v '^#' "$TMP/out" | cut -f1,2 >"$TMP/got"
same "fetch v1: routes as ringkeeper lookup" "$TMP/want4" "$TMP/got"
has "fetch v1: key -> addr" "$TMP/out" "$(printf 'user:1\tcache-d\t10.0.0.4:11211')"
has "fetch v1: saved the last-known-good file" "$lkg" "RK-LKG/1 bytes="
hasnt "fetch v1: not from the cache" "$TMP/out" "last-known-good"

# the static build routes the same
timeout 60 "$TMP/example_static" "$BASE" cache "$TMP/static.lkg" 0 "${keys[@]}" >"$TMP/out" 2>&1
check "static example: exit code" 0 "$?"
grep -v '^#' "$TMP/out" | cut -f1,2 >"$TMP/got"
same "static example: routes as ringkeeper lookup" "$TMP/want4" "$TMP/got"

# the refresher: v2 is activated while the example waits; it prints new and previous owners
# (generous bounds: a benchmark may be loading the machine)
: >"$TMP/out" # emptied here: the child's own truncation may come after the first grep below
timeout 120 "$TMP/example" "$BASE" cache "$lkg" 60 "${keys[@]}" >"$TMP/out" 2>"$TMP/err" &
ex=$!
for _ in $(seq 1 300); do
    grep -q '^# ring v1' "$TMP/out" && break
    sleep 0.1
done
has "refresh: started on v1" "$TMP/out" "# ring v1"
check "publish v2" 201 "$(req POST '/v1/clusters/cache/versions?activate=true' \
    -H 'Content-Type: application/json' --data-binary @"$five")"
wait "$ex"
got=$?
check "refresh: exit code (stderr: $(head -c 300 "$TMP/err"))" 0 "$got"
has "refresh: v2 with its previous ring" "$TMP/out" \
    "# ring v2 (fingerprint dbb9f9d3244ab4f7), previous ring kept for dual reads"
awk -F'\t' '!/^#/ && NF == 5' "$TMP/out" | cut -f1,2 >"$TMP/got"
same "refresh: owners as ringkeeper lookup on v2" "$TMP/want5" "$TMP/got"
awk -F'\t' '!/^#/ && NF == 5' "$TMP/out" | cut -f1,4 >"$TMP/got"
same "refresh: previous owners as ringkeeper lookup on v1" "$TMP/want4" "$TMP/got"
has "refresh: status" "$TMP/out" "# v2 in service; accepted 2, refused 0"

# verification: a ring with another vnode_factor is refused; the last-known-good v2 serves
sed 's/"vnode_factor": 160/"vnode_factor": 100/' "$five" >"$TMP/vf100.json"
check "publish v3 (vnode_factor 100)" 201 "$(req POST '/v1/clusters/cache/versions?activate=true' \
    -H 'Content-Type: application/json' --data-binary @"$TMP/vf100.json")"
run "refused v3" 3 "$BASE" cache "$lkg" 1 "${keys[@]}"
has "refused v3: from the last-known-good file" "$TMP/out" "# running from the last-known-good file $lkg (version 2)"
has "refused v3: says why" "$TMP/out" "vnode_factor"
has "refused v3: serves v2" "$TMP/out" "# ring v2"
grep -v '^#' "$TMP/out" | cut -f1,2 >"$TMP/got"
same "refused v3: routes as v2" "$TMP/want5" "$TMP/got"
has "refused v3: counted" "$TMP/out" "refused "
hasnt "refused v3: refused 0" "$TMP/out" "refused 0,"

# the server is gone: the CMake-built example starts from the last-known-good file
rk_stop
check "server stopped cleanly" 0 "$STOP_CODE"
# (port 1: nothing listens there, while the stopped server's port may be taken by another test)
timeout 60 env -u LD_LIBRARY_PATH "$TMP/app/build/app" http://127.0.0.1:1 cache "$lkg" 0 "${keys[@]}" \
    >"$TMP/out" 2>"$TMP/err"
got=$?
check "find_package example, no server: exit code (stderr: $(head -c 300 "$TMP/err"))" 0 "$got"
has "no server: from the last-known-good file" "$TMP/out" "# running from the last-known-good file $lkg"
grep -v '^#' "$TMP/out" | cut -f1,2 >"$TMP/got"
same "no server: routes as v2" "$TMP/want5" "$TMP/got"

# ---- docs/CLIENT.md shows the example verbatim ----
awk '/<!-- client-example -->/{on=1; next} on && /^```$/ && seen {exit} on && /^```/{seen=1; next} on{print}' \
    "$src/docs/CLIENT.md" >"$TMP/md_example.c"
same "docs/CLIENT.md's program is docs/examples/client_example.c" "$example" "$TMP/md_example.c"
# shellcheck disable=SC2016 # the backticks are Markdown
sed -n 's/^ *X(\([A-Z0-9]*\), \(-*[0-9]*\),.*/| `RK_\1` | \2 |/p' "$src/client/include/ringkeeper.h" >"$TMP/codes"
check "error codes: some" 1 "$([ "$(wc -l <"$TMP/codes")" -ge 18 ] && echo 1)"
while read -r row; do
    has "docs/CLIENT.md's error table: $row" "$src/docs/CLIENT.md" "$row"
done <"$TMP/codes"
finish
