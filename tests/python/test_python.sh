#!/bin/sh
# test_python.sh — the Python binding (client/python) installed as docs/CLIENT.md says, then its
# tests (pytest): into a venv made with --system-site-packages against the build tree (the docs'
# commands as written, with another python3 first on PATH), and the Debian-style --target install into a directory of its own; then the docs' example as written.
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
# The venv install exactly as docs/CLIENT.md's block writes it, from a tree of the same shape (the
# package copied, the build tree as build/), with HOME for ~ and a python3 first on PATH that is
# not Debian's: the documented commands must not depend on which python3 PATH finds.
mkdir -p "$tmp/repo/client" "$tmp/home" "$tmp/bin"
cp -R "$src/client/python" "$tmp/repo/client/python"
ln -s "$src/client/include" "$tmp/repo/client/include"
ln -s "$build" "$tmp/repo/build"
printf '#!/bin/sh\necho "not Debian'"'"'s python3: $0" >&2\nexit 1\n' >"$tmp/bin/python3"
chmod +x "$tmp/bin/python3"
sed -n '/^# in a virtual environment that sees Debian/,/^# for system use/p' "$src/docs/CLIENT.md" |
    sed '$d' >"$tmp/install.sh"
grep -q 'rk-venv/bin/pip install' "$tmp/install.sh" || { echo "no venv install in docs/CLIENT.md"; exit 1; }
(cd "$tmp/repo" && HOME="$tmp/home" PATH="$tmp/bin:$PATH" sh -eu "$tmp/install.sh" >/dev/null)
venv="$tmp/home/rk-venv"
export RINGKEEPER_INCLUDE_DIR="$src/client/include" RINGKEEPER_LIBRARY_DIR="$build/client"
"$py" -m pip install --no-build-isolation --no-index --no-deps --quiet --target "$tmp/site" \
    "$tmp/pkg" 2>/dev/null
if [ "$sanitize" = 1 ]; then
    export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
    export ASAN_OPTIONS=detect_leaks=0
fi
PYTHONPATH="$tmp/site" "$py" -c 'import ringkeeper; print("the --target install:", ringkeeper.__file__)'
export RINGKEEPERD="$build/server/ringkeeperd" RK_VECTORS_DIR="$src/tests/vectors"
cd "$tmp"
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python"
# docs/CLIENT.md's example, as written, against a server of its own
"$py" "$src/tests/python/docs_example.py" "$src/docs/CLIENT.md" python "$venv/bin/python"
