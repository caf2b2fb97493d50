#!/usr/bin/env bash
# test_completion.sh — the bash completion (client/cli/ringkeeper.bash.in, as the build made it next
# to the binary: its schemes and formats are the registered ones) driven as bash drives it:
# COMP_WORDS and COMP_CWORD set, _ringkeeper called, COMPREPLY checked. Its commands are exactly
# those `ringkeeper --help` lists, and each command's options exactly those its --help lists, so
# the two cannot drift apart; and docs/CLI.md lists every command.
# usage: test_completion.sh RINGKEEPER SOURCE_DIR
set -u
RK=$1
src=$(cd "$2" && pwd)
PASSED=0
FAILED=0
ok() { PASSED=$((PASSED + 1)); }
bad() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
check() { # check NAME WANT GOT
    if [ "$2" = "$3" ]; then ok; else bad "$1: want [$2], got [$3]"; fi
}
# shellcheck source=/dev/null
. "$(dirname "$RK")/cli/ringkeeper.bash"

# complete WORDS...: completes the last word; prints COMPREPLY sorted, space-separated
complete_words() {
    COMP_WORDS=(ringkeeper "$@")
    COMP_CWORD=$#
    _ringkeeper
    printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}

check "registered for ringkeeper" "complete -F _ringkeeper ringkeeper" "$(complete -p ringkeeper)"

# commands: those of `ringkeeper --help` (its "  name  what it does" lines), and no other
"$RK" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p' | sort >"${TMPDIR:-/tmp}/rk-help-commands.$$"
help_commands=$(tr '\n' ' ' <"${TMPDIR:-/tmp}/rk-help-commands.$$" | sed 's/ $//')
rm -f "${TMPDIR:-/tmp}/rk-help-commands.$$"
check "--help lists commands" 1 "$([ "$(echo "$help_commands" | wc -w)" -ge 14 ] && echo 1)"
check "every command of --help completes, and no other" "--help --version $help_commands" \
    "$(complete_words '')"
check "a prefix" "plan policy publish" "$(complete_words p)"
check "an unknown command completes nothing" "" "$(complete_words frobnicate --s)"

# options: for each command, those its --help lists (and --help)
for cmd in $help_commands; do
    want=$( ("$RK" "$cmd" --help | grep -oE -- '(^|[ [(,])(--[a-z][a-z-]*|-[ocq])\b' | sed 's/^[ [(,]//'
        echo --help) | sort -u | tr '\n' ' ' | sed 's/ $//')
    check "$cmd: its options are those of its --help" "$want" "$(complete_words "$cmd" -)"
done
# the CLI reference (docs/CLI.md) has a row for every command too
for cmd in $help_commands; do
    check "docs/CLI.md: a row for $cmd" 1 "$(grep -c "^| \`$cmd[ \`]" "$src/docs/CLI.md")"
done
check "options by prefix" "--from --from-file" "$(complete_words plan --fro)"
check "watch --c" "--ca-file --cluster --count" "$(complete_words watch --c)"

# values
check "-o" "json table" "$(complete_words show 1 -o '')"
check "--output j" "json" "$(complete_words versions --output j)"
check "plan --format" "json svg text" "$(complete_words plan --format '')"
check "export --format" "envoy haproxy nginx nutcracker" "$(complete_words export --format '')"
check "--expect-scheme" "envoy_ring_hash grpc_ring_hash haproxy ketama maglev nginx ringkeeper" "$(complete_words lookup --expect-scheme '')"
check "--distinct-approver" "no yes" "$(complete_words policy set --distinct-approver '')"
check "policy's operand" "set show" "$(complete_words policy '')"
check "migration's operand" "finish" "$(complete_words migration '')"
check "--migration-window" "no yes" "$(complete_words policy set --migration-window '')"
check "--prewarm" "no yes" "$(complete_words policy set --prewarm '')"
check "a free value completes nothing" "" "$(complete_words watch --count '')"
cd "$src/tests/cli" || exit 1
check "--topology: file names" "four.json" "$(complete_words lookup --topology fo)"
check "simulate --keys: a file" "four.json" "$(complete_words simulate --keys fo)"
check "plan --keys: a number" "" "$(complete_words plan --keys f)"
check "publish's operand: a file" "four.json" "$(complete_words publish fo)"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
