#!/usr/bin/env bash
# test_cpack.sh — `cpack -G DEB` on this build, its packages written to a temporary folder: two
# packages, ringkeeperd (the daemon, its migrations, the systemd unit running /usr/bin/ringkeeperd)
# and ringkeeper (libringkeeper shared and static, the header, .pc, CMake package, the CLI), each
# with only its own files, the project's version, and Depends computed from what its binaries link.
# usage: test_cpack.sh BUILD_DIR SOURCE_DIR
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
. "$src/tests/server/lib.sh" "$build/server/ringkeeperd"
arch=$(dpkg --print-architecture)
version=$(sed -n 's/^project(ringkeeper VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")

if (cd "$TMP" && timeout 240 cpack --config "$build/CPackConfig.cmake" -G DEB -B "$TMP/pkg") \
    >"$TMP/cpack.log" 2>&1; then ok; else
    bad "cpack failed: $(tail -20 "$TMP/cpack.log")"
    finish
    exit
fi
check "two packages" "ringkeeper_${version}_${arch}.deb ringkeeperd_${version}_${arch}.deb" \
    "$(cd "$TMP/pkg" && ls ./*.deb | sed 's|^\./||' | sort | tr '\n' ' ' | sed 's/ $//')"

# contents DEB: its regular files, one a line, without the leading ./usr/
contents() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { sub(/^\.\/usr\//, "", $6); print $6 }' | sort; }
server=$TMP/pkg/ringkeeperd_${version}_${arch}.deb
client=$TMP/pkg/ringkeeper_${version}_${arch}.deb
{
    echo bin/ringkeeperd
    echo lib/systemd/system/ringkeeperd.service
    echo share/ringkeeper/systemd/ringkeeperd-etcd.conf
    echo share/doc/ringkeeperd/LICENSE
    for d in API ETCD OPERATIONS RELIABILITY; do echo "share/doc/ringkeeperd/$d.md"; done # man: SEE ALSO
    ! command -v help2man >/dev/null || echo share/man/man1/ringkeeperd.1 # deploy/man
    (cd "$src/migrations" && ls ./*.sql | sed 's|^\./|share/ringkeeper/migrations/|')
} | sort >"$TMP/want_server"
contents "$server" >"$TMP/got_server"
if cmp -s "$TMP/want_server" "$TMP/got_server"; then ok; else
    bad "ringkeeperd's files: $(diff "$TMP/want_server" "$TMP/got_server")"
fi
contents "$client" >"$TMP/got_client"
for f in bin/ringkeeper include/ringkeeper.h lib/libringkeeper.so lib/libringkeeper.so.0 \
    "lib/libringkeeper.so.$version" lib/libringkeeper.a lib/pkgconfig/ringkeeper.pc \
    lib/cmake/ringkeeper/ringkeeperConfig.cmake lib/cmake/ringkeeper/ringkeeperTargets.cmake \
    share/doc/ringkeeper/LICENSE share/doc/ringkeeper/CLI.md share/doc/ringkeeper/CLIENT.md \
    share/doc/ringkeeper/AGENT.md "lib/systemd/system/ringkeeper-agent@.service" \
    share/bash-completion/completions/ringkeeper \
    $(command -v help2man >/dev/null && echo share/man/man1/ringkeeper.1); do
    check "ringkeeper has $f" 1 "$(grep -cx "$f" "$TMP/got_client")"
done
check "ringkeeper has nothing of the server" 0 "$(grep -c -e ringkeeperd -e migrations "$TMP/got_client")"

field() { dpkg-deb -f "$1" "$2"; }
check "server: name" ringkeeperd "$(field "$server" Package)"
check "client: name" ringkeeper "$(field "$client" Package)"
check "server: version" "$version" "$(field "$server" Version)"
check "client: version" "$version" "$(field "$client" Version)"
# deps NAME DEB PACKAGES...: each package is in DEB's Depends
deps() {
    local name=$1 deb=$2 p
    shift 2
    for p in "$@"; do
        if field "$deb" Depends | tr ',' '\n' | grep -q "^ *$p\b"; then ok; else
            bad "$name Depends has no $p: $(field "$deb" Depends)"
        fi
    done
}
deps ringkeeperd "$server" libc6 libsqlite3-0 libmicrohttpd12 libjansson4
deps ringkeeper "$client" libc6 libcurl4 libyaml-0-2 libjansson4
check "the packaged unit runs the packaged daemon" \
    "ExecStart=/usr/bin/ringkeeperd --db /var/lib/ringkeeper/ringkeeper.db" \
    "$(dpkg-deb --fsys-tarfile "$server" | tar -xOf - ./usr/lib/systemd/system/ringkeeperd.service |
        grep -o '^ExecStart=[^ ]* --db [^ ]*')"
finish
