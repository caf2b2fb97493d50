#!/usr/bin/env bash
# make_man.sh — a man page from a program's --help and --version, with help2man; for ringkeeper, a
# COMMANDS section holds each command's --help (the commands read from `ringkeeper --help`), so
# the page documents every option and cannot fall behind the binary.
# usage: make_man.sh PROGRAM NAME_LINE OUT.1
set -euo pipefail
prog=$1 name=$2 out=$3
include=$out.include
# roff-safe verbatim text: backslashes as \e, a leading . or ' escaped with \&
roff() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
: >"$include"
commands=$("$prog" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p')
if [ -n "$commands" ] && "$prog" "${commands%%$'\n'*}" --help >/dev/null 2>&1; then
    {
        echo '[COMMANDS]'
        for cmd in $commands; do
            echo ".SS $cmd"
            echo '.nf'
            "$prog" "$cmd" --help | roff
            echo '.fi'
        done
    } >"$include"
fi
{
    echo '[SEE ALSO]'
    echo 'ringkeeper(1), ringkeeperd(1); in the source: README.md, docs/CLI.md (the CLI),'
    echo 'docs/RING.md (rings, plans and documents), docs/API.md (the HTTP API),'
    echo 'docs/OPERATIONS.md (running the server).'
} >>"$include"
help2man --no-info --no-discard-stderr --name "$name" --include "$include" \
    --output "$out" "$prog"
rm -f "$include"
