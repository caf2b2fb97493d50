#!/usr/bin/env bash
# test_man.sh — the man pages deploy/man makes with help2man: each renders without a warning, has
# its NAME, SYNOPSIS-like usage and SEE ALSO; ringkeeper's has a subsection for every command that
# `ringkeeper --help` lists (with its options), ringkeeperd's every flag of `ringkeeperd --help`.
# Skips (77) when help2man was absent at build time (no pages were made).
# usage: test_man.sh BUILD_DIR RINGKEEPER RINGKEEPERD
set -u
man_dir=$1/deploy/man
RK=$2
RKD=$3
PASSED=0
FAILED=0
ok() { PASSED=$((PASSED + 1)); }
bad() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
check() { # check NAME WANT GOT
    if [ "$2" = "$3" ]; then ok; else bad "$1: want [$2], got [$3]"; fi
}
if [ ! -f "$man_dir/ringkeeper.1" ]; then
    echo "SKIP: no man pages in $man_dir (help2man was not installed when the build was configured)"
    exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# render PAGE: the page as a terminal shows it (man -l, else groff), warnings to $TMP/warn
render() {
    if command -v man >/dev/null; then
        MANWIDTH=100 MAN_KEEP_FORMATTING= man -l "$1" 2>"$TMP/warn" | col -b
    else
        groff -man -Tutf8 -ww "$1" 2>"$TMP/warn" | col -b
    fi
}
render "$man_dir/ringkeeper.1" >"$TMP/rk"
check "ringkeeper.1 renders without warnings" "" "$(cat "$TMP/warn")"
check "ringkeeper.1: NAME" 1 "$(grep -c '^ *ringkeeper - the ringkeeper CLI' "$TMP/rk")"
check "ringkeeper.1: COMMANDS" 1 "$(grep -cx 'COMMANDS' "$TMP/rk")"
check "ringkeeper.1: SEE ALSO" 1 "$(grep -cx 'SEE ALSO' "$TMP/rk")"
commands=$("$RK" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p')
check "ringkeeper --help lists the commands" 1 "$([ "$(echo "$commands" | wc -w)" -ge 14 ] && echo 1)"
for cmd in $commands; do
    check "ringkeeper.1: a subsection for $cmd" 1 "$(grep -cx "   $cmd" "$TMP/rk")"
    check "ringkeeper.1: $cmd's usage" 1 \
        "$([ "$(grep -c "usage: ringkeeper $cmd " "$TMP/rk")" -ge 1 ] && echo 1)"
done
check "ringkeeper.1: a line with a backslash survives" 1 \
    "$(grep -c 'one a line (the bytes before \\n; an empty line is the empty key)' "$TMP/rk")"

render "$man_dir/ringkeeperd.1" >"$TMP/rkd"
check "ringkeeperd.1 renders without warnings" "" "$(cat "$TMP/warn")"
check "ringkeeperd.1: NAME" 1 "$(grep -c '^ *ringkeeperd - serves versioned' "$TMP/rkd")"
# the usage forms one a line, as --help prints them, not run together in a paragraph
check "ringkeeperd.1: a SYNOPSIS" 1 "$(grep -cx 'SYNOPSIS' "$TMP/rkd")"
for form in 'ringkeeperd --version' 'ringkeeperd backup --db FILE --to FILE' 'ringkeeperd migrate-store --from'; do
    check "ringkeeperd.1: '$form' on a line of its own" 1 "$(grep -c "^       $form" "$TMP/rkd")"
done
# SEE ALSO names the documents where the package installs them
docdir=$(sed -n 's/.*the documents in \([^:]*\):.*/\1/p' "$TMP/rkd")
check "ringkeeperd.1: SEE ALSO names an installed folder" 1 "$(case $docdir in /*/share/doc/ringkeeperd) echo 1 ;; esac)"
for flag in $("$RKD" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
    check "ringkeeperd.1 mentions $flag" 1 "$([ "$(grep -c -- "$flag" "$TMP/rkd")" -ge 1 ] && echo 1)"
done
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
