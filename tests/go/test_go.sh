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
# docs/CLIENT.md's example, as written, in a module of its own that requires the binding
mkdir "$tmp/example"
printf 'module example\n\ngo 1.19\n\nrequire ringkeeper v0.0.0\n\nreplace ringkeeper => %s\n' \
    "$src/client/go" >"$tmp/example/go.mod"
/usr/bin/python3 "$src/tests/python/docs_example.py" "$src/docs/CLIENT.md" go sh -c \
    'cp "$0" '"$tmp/example/main.go"' && cd '"$tmp/example"' && go run .'
