#!/usr/bin/env bash
# make_man.sh — a man page from a program's --help and --version, with help2man; for ringkeeper, a
# COMMANDS section holds each command's --help (the commands read from `ringkeeper --help`), so
# the page documents every option and cannot fall behind the binary. The usage lines (the first
# paragraph of --help) become a verbatim SYNOPSIS, one form a line: help2man would run them
# together. SEE ALSO names the documents where `cmake --install` puts them (DOCDIR).
# usage: make_man.sh PROGRAM NAME_LINE OUT.1 DOCDIR DOC.md...
set -euo pipefail
prog=$1 name=$2 out=$3 docdir=$4
shift 4
include=$out.include wrapper=$out.help
help=$("$prog" --help)
# roff-safe verbatim text: backslashes as \e, a leading . or ' escaped with \&
roff() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
{
    echo '[SYNOPSIS]'
    echo '.nf'
    printf '%s\n' "$help" | sed -n '/^$/q; s/^usage: //; s/^       //; p' | roff
    echo '.fi'
} >"$include"
# what help2man reads: --help without its usage paragraph, --version as it is
printf '#!/bin/sh\n[ "$1" = --help ] && { "%s" --help | sed "1,/^$/d"; exit; }\nexec "%s" "$@"\n' \
    "$prog" "$prog" >"$wrapper"
chmod +x "$wrapper"
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
    } >>"$include"
fi
{
    echo '[SEE ALSO]'
    echo '.BR ringkeeper (1),'
    echo '.BR ringkeeperd (1);'
    echo "the documents in $docdir: $*." | sed 's/\.md /.md, /g'
} >>"$include"
help2man --no-info --no-discard-stderr --name "$name" --include "$include" \
    --output "$out" "$wrapper"
# help2man names the page after the program it ran: the wrapper's name is the page's file name
sed -i "s/$(basename "$wrapper")/$(basename "$prog")/g" "$out"
rm -f "$include" "$wrapper"
