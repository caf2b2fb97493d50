#!/usr/bin/env bash
# ab_instructions.sh — builds and lookups of two builds of the library, A/B, in instructions counted
# by callgrind (docs/PERFORMANCE.md, "Issue 55: the scheme seams, no slower"): for each hash of the
# ringkeeper scheme, a 100 x 160 ring's build, a 1000 x 1000 ring's build, and the instructions of
# one lookup (100,000 lookups on the 100 x 160 ring, less its build, over 100,000; the key's
# snprintf included, the same on both sides).
# usage: ab_instructions.sh BENCH_INSTRUCTIONS_A BENCH_INSTRUCTIONS_B
set -eu
[ $# = 2 ] || { echo "usage: ab_instructions.sh BENCH_INSTRUCTIONS_A BENCH_INSTRUCTIONS_B" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "ab_instructions.sh: valgrind is needed" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ir() { # ir BINARY ARGS...: the instructions the run executed
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$@" >/dev/null 2>"$out/err"
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/err"
}
printf '%-9s %-7s %16s %16s %14s\n' hash side "build 100x160" "build 1000x1000" "per lookup"
for hash in xxh3_64 fnv1a_32 md5_32; do
    for side in A B; do
        bin=$1
        [ "$side" = B ] && bin=$2
        small=$(ir "$bin" "$hash" 100 160 0)
        big=$(ir "$bin" "$hash" 1000 1000 0)
        looked=$(ir "$bin" "$hash" 100 160 100000)
        printf '%-9s %-7s %16s %16s %14.1f\n' "$hash" "$side" "$small" "$big" \
            "$(echo "($looked - $small) / 100000" | bc -l)"
    done
done
