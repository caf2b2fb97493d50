#!/bin/sh
# test_go.sh — the Go binding (client/go): the library installed (component "client") into a
# prefix in the build tree and found there by pkg-config, as docs/CLIENT.md says; then `go vet`, the
# binding's tests with the race detector, and the docs' example as written. Offline: no module
# proxy, no downloads (the module has no dependencies).
# usage: test_go.sh BUILD_DIR SOURCE_DIR [SANITIZE]; exits 77 without Debian's golang-go, and under
# a sanitizer build (SANITIZE=1): the race detector and ASan do not mix in one process.
set -eu
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) sanitize=${3:-0}
if ! command -v go >/dev/null 2>&1; then
    echo "SKIPPED: go is not installed (deploy/install-deps.sh installs golang-go)"
    exit 77
fi
if [ "$sanitize" = 1 ]; then
    echo "SKIPPED: a sanitizer build; the Go tests run with -race on the other builds"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# a prefix at a path that stays: go's build cache keeps the -L that pkg-config gave
prefix="$build/go-prefix"
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" --component client >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig" LD_LIBRARY_PATH="$prefix/lib"
export GOFLAGS=-mod=mod GOPROXY=off GOPATH="$build/go-path" GOCACHE="$build/go-cache"
export RINGKEEPERD="$build/server/ringkeeperd" RK_VECTORS_DIR="$src/tests/vectors"
cd "$src/client/go"
go vet ./...
go test -race -count=1 ./...
# docs/CLIENT.md's example, as written, built by its shell block as written (each run from a fresh
# program directory, as a newcomer's first): a fresh HOME, a checkout whose build is this one, no
# module proxy, no LD_LIBRARY_PATH (the rpath finds the library), GOPATH and GOCACHE under that HOME
mkdir -p "$tmp/home/myapp" "$tmp/checkout"
ln -s "$build" "$tmp/checkout/build"
ln -s "$src/client" "$tmp/checkout/client"
/usr/bin/python3 - "$src/docs/CLIENT.md" >"$tmp/setup.sh" <<'PY'
import re, sys
page = open(sys.argv[1]).read()
section = re.search(r"^## Go\b(.*?)(?=^## |\Z)", page, re.S | re.M).group(1)
print(re.search(r"^```sh\n(.*?)^```", section, re.S | re.M).group(1), end="")
PY
unset LD_LIBRARY_PATH PKG_CONFIG_PATH GOFLAGS GOPATH GOCACHE
/usr/bin/python3 "$src/tests/python/docs_example.py" "$src/docs/CLIENT.md" go env HOME="$tmp/home" \
    sh -c 'rm -rf "$HOME/myapp" && mkdir "$HOME/myapp" && cp "$0" "$HOME/myapp/main.go" &&
        cd '"$tmp/checkout"' && sh -eu '"$tmp/setup.sh"
# the program runs without the environment that built it
ldd "$tmp/home/myapp/myapp" | grep -qF "libringkeeper.so.0 => $tmp/home/.local/ringkeeper/lib/" ||
    { echo "FAIL: the program does not find the library by its rpath"; ldd "$tmp/home/myapp/myapp"; exit 1; }
echo "ok: docs/CLIENT.md's Go path from a fresh directory, offline, found by its rpath"
