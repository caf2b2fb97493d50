#!/bin/sh
# test_python.sh — the Python binding (client/python) installed as docs/CLIENT.md says, then its
# tests (pytest): into a venv made with --system-site-packages against the build tree, and the
# Debian-style --target install into a directory of its own; then the docs' example as written.
# With a sanitizer build (SANITIZE=1) the interpreter runs with ASan and UBSan preloaded, so the
# C library is checked under Python too (leaks not counted: the interpreter's own are many).
# usage: test_python.sh BUILD_DIR SOURCE_DIR [SANITIZE]; exits 77 without python3-cffi or pytest.
set -eu
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) sanitize=${3:-0}
py=/usr/bin/python3
if ! "$py" -c 'import cffi, pytest' 2>/dev/null; then
    echo "SKIPPED: python3-cffi and python3-pytest are needed (deploy/install-deps.sh installs them)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R "$src/client/python" "$tmp/pkg" # an in-tree build writes beside the sources: not in ours
export RINGKEEPER_INCLUDE_DIR="$src/client/include" RINGKEEPER_LIBRARY_DIR="$build/client"
"$py" -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/pip" install --no-build-isolation --no-index --quiet "$tmp/pkg"
"$py" -m pip install --no-build-isolation --no-index --no-deps --quiet --target "$tmp/site" \
    "$tmp/pkg" 2>/dev/null
if [ "$sanitize" = 1 ]; then
    export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
    export ASAN_OPTIONS=detect_leaks=0
fi
PYTHONPATH="$tmp/site" "$py" -c 'import ringkeeper; print("the --target install:", ringkeeper.__file__)'
export RINGKEEPERD="$build/server/ringkeeperd" RK_VECTORS_DIR="$src/tests/vectors"
cd "$tmp"
"$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python"
# docs/CLIENT.md's example, as written, against a server of its own
"$py" "$src/tests/python/docs_example.py" "$src/docs/CLIENT.md" python "$tmp/venv/bin/python"
