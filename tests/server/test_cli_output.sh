#!/usr/bin/env bash
# test_cli_output.sh — the CLI's uniform output against a real ringkeeperd: -o json|table and
# --quiet on every command that prints a result (defaults unchanged), and `plan` with a file on one
# side and a version of the cluster on the other (plan --cluster C --to-file F, like kubectl diff).
# usage: test_cli_output.sh RINGKEEPERD RINGKEEPER SOURCE_DIR
. "$(dirname "$0")/lib.sh" "$1"
RK=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
src=$(cd "$3" && pwd)
four=$src/tests/cli/four.json
five=$src/tests/cli/five.json
unset RINGKEEPER_SERVER RINGKEEPER_TOKEN RINGKEEPER_CA_FILE

cli() { # cli CODE NAME ARGS...: ringkeeper ARGS, stdin $TMP/in, stdout $TMP/out, stderr $TMP/err
    local want=$1 name=$2
    shift 2
    timeout 60 "$RK" "$@" <"$TMP/in" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    check "$name: exit code (stderr: $(head -c 300 "$TMP/err"))" "$want" "$got"
}
json() { # json NAME EXPR: EXPR (python, over the document `d`) of $TMP/out
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
        "$TMP/out" "$2" 2>&1
}
seq -f 'user:%g' 1 2000 >"$TMP/keys"
printf 'a\nb\n' >"$TMP/in"
printf '{"hash":"xxh3_64","vnode_factor":160,"nodes":[{"id":"a","addr":"h:1","weight":-1}]}' >"$TMP/bad.json"

rk_start
S=(--server "$BASE" --cluster c)

# a plan against a cluster that has no version yet: the server's words
cli 2 "plan --to-file, no cluster" plan "${S[@]}" --to-file "$five"
check "plan --to-file, no cluster: the message" \
    "ringkeeper plan: server: there is no cluster named c; publishing a version creates it (HTTP 404)" \
    "$(cat "$TMP/err")"

# publish, activate, revert: --quiet prints the version number, or nothing for activate
cli 0 "publish --quiet" publish "$four" "${S[@]}" --quiet
check "publish --quiet: the version" 1 "$(cat "$TMP/out")"
cli 0 "activate -q" activate 1 "${S[@]}" -q
check "activate -q: nothing" "" "$(cat "$TMP/out")"
cli 0 "publish -o table" publish "$five" "${S[@]}" -o table
check "publish -o table: version line" "version       2" "$(grep '^version ' "$TMP/out")"
check "publish -o table: state line" "state         staged" "$(grep '^state ' "$TMP/out")"
has "publish -o table: the nodes as columns" "$TMP/out" "cache-e  10.0.0.5:11211  1"
check "publish -o table: the nodes' header" "id       addr            weight" "$(sed -n '/^nodes:$/{n;p}' "$TMP/out")"
cli 0 "revert --quiet" revert 1 "${S[@]}" --quiet
check "revert --quiet: the new version" 3 "$(cat "$TMP/out")"

# show: JSON by default, a table, or its number
cli 0 "show" show 2 "${S[@]}"
check "show: JSON by default" dbb9f9d3244ab4f7 "$(json show 'd["fingerprint"]')"
cli 0 "show -o json" show 2 "${S[@]}" -o json
check "show -o json: the same" dbb9f9d3244ab4f7 "$(json show 'd["fingerprint"]')"
cli 0 "show -o table" show 2 "${S[@]}" -o table
check "show -o table: fingerprint line" "fingerprint   dbb9f9d3244ab4f7" "$(grep '^fingerprint' "$TMP/out")"
check "show -o table: activated_at null as -" "activated_at  -" "$(grep '^activated_at' "$TMP/out")"
cli 0 "show --quiet" show 2 "${S[@]}" --quiet
check "show --quiet" 2 "$(cat "$TMP/out")"
cli 2 "show -o yaml" show 2 "${S[@]}" -o yaml
check "show -o yaml: says why" 'ringkeeper show: --output: must be json or table, got "yaml"' "$(cat "$TMP/err")"
cli 2 "show -o without a value" show 2 "${S[@]}" -o
check "show -o: needs a value" "ringkeeper show: --output needs a value
Try 'ringkeeper show --help' for the options." "$(cat "$TMP/err")"
cli 2 "show --quiet, unknown version" show 9 "${S[@]}" --quiet
check "errors still on stderr with --quiet" \
    "ringkeeper show: server: cluster c has no version 9 (HTTP 404)" "$(cat "$TMP/err")"

# versions and events: tables by default, JSON, or their numbers
cli 0 "versions" versions "${S[@]}"
check "versions: the table's header" "version  state" "$(head -1 "$TMP/out" | cut -c1-14)"
cli 0 "versions -o json" versions "${S[@]}" -o json
check "versions -o json" "[3, 2, 1]" "$(json versions '[v["version"] for v in d["versions"]]')"
cli 0 "versions --quiet" versions "${S[@]}" --quiet
check "versions --quiet" "3 2 1" "$(tr "\n" " " <"$TMP/out" | sed "s/ $//")"
cli 0 "events -o json" events "${S[@]}" -o json
check "events -o json" "['revert', 'publish', 'activate', 'publish']" "$(json events '[e["kind"] for e in d["events"]]')"
cli 0 "events -q" events "${S[@]}" -q
check "events -q" "4 3 2 1" "$(tr "\n" " " <"$TMP/out" | sed "s/ $//")"
cli 0 "policy show -o table" policy show "${S[@]}" -o table
check "policy show -o table" "approvals           0" "$(grep '^approvals' "$TMP/out")"
cli 0 "policy show -q" policy show "${S[@]}" -q
check "policy show -q: nothing" "" "$(cat "$TMP/out")"

# simulate: a table by default, JSON, or the keys that move
cli 0 "simulate" simulate --keys "$TMP/keys" --from-file "$four" --to-file "$five"
cp "$TMP/out" "$TMP/sim-table"
moved=$(sed -n 's/^moved *\([0-9]*\) .*/\1/p' "$TMP/sim-table")
cli 0 "simulate -o json" simulate --keys "$TMP/keys" --from-file "$four" --to-file "$five" -o json
check "simulate -o json: keys" 2000 "$(json simulate 'd["keys"]')"
check "simulate -o json: moved as in the table" "$moved" "$(json simulate 'd["moved"]')"
check "simulate -o json: nodes" 5 "$(json simulate 'len(d["nodes"])')"
cli 0 "simulate --quiet" simulate --keys "$TMP/keys" --from-file "$four" --to-file "$five" --quiet
check "simulate --quiet: the keys that move" "$moved" "$(cat "$TMP/out")"
cli 0 "simulate -o table" simulate --keys "$TMP/keys" --from-file "$four" --to-file "$five" -o table
same_file() { if cmp -s "$2" "$3"; then ok; else bad "$1"; diff "$2" "$3" | head; fi; }
same_file "simulate -o table is the default" "$TMP/sim-table" "$TMP/out"
cli 0 "simulate, active version to a file" simulate --keys "$TMP/keys" "${S[@]}" --to-file "$five"
same_file "simulate --cluster --to-file = the two files" "$TMP/sim-table" "$TMP/out"

# lookup: key<TAB>node, JSON Lines, or the nodes only
cli 0 "lookup -o json" lookup --topology "$four" -o json --replicas 2
check "lookup -o json" '{"key":"a","nodes":["cache-a","cache-b"]}
{"key":"b","nodes":["cache-a","cache-c"]}' "$(cat "$TMP/out")"
cli 0 "lookup --quiet" lookup --topology "$four" --quiet --replicas 2
check "lookup --quiet" "cache-a	cache-b
cache-a	cache-c" "$(cat "$TMP/out")"
printf 'a\377\n' >"$TMP/in"
cli 2 "lookup -o json, not UTF-8" lookup --topology "$four" -o json
check "lookup -o json, not UTF-8: says why" \
    "ringkeeper lookup: -o json: the key on line 1 is not UTF-8; use -o table" "$(cat "$TMP/err")"
: >"$TMP/in"

# plan: the active version (v1: four) against a file, computed here, equals the plan of two files
cli 0 "plan of two files" plan --from-file "$four" --to-file "$five" --max-step 0.1
tail -n +2 "$TMP/out" | grep -v '^digest' >"$TMP/plan-files"
cli 0 "plan --cluster --to-file" plan "${S[@]}" --to-file "$five" --max-step 0.1
check "plan --to-file: the title names both sides" \
    "plan (xxh3_64): c (active) (7bb0b9b16b5a8abe) -> $five (dbb9f9d3244ab4f7)" "$(head -1 "$TMP/out")"
tail -n +2 "$TMP/out" | grep -v '^digest' >"$TMP/plan-mixed"
same_file "plan --to-file: the same plan as the two files" "$TMP/plan-files" "$TMP/plan-mixed"
cli 0 "plan --to-file -o json" plan "${S[@]}" --to-file "$five" -o json
check "plan --to-file -o json: the to side" dbb9f9d3244ab4f7 "$(json plan 'd["to"]["fingerprint"]')"
cli 0 "plan --to-file --quiet" plan "${S[@]}" --to-file "$five" --quiet
check "plan --quiet: the moved fraction" 0.1918555667664909 "$(cat "$TMP/out")"
cli 0 "plan --to-file --format svg" plan "${S[@]}" --to-file "$five" --format svg
has "plan --to-file --format svg" "$TMP/out" "<svg"
cli 0 "plan --from-file, to the latest" plan "${S[@]}" --from-file "$five"
check "plan --from-file: the title" \
    "plan (xxh3_64): $five (dbb9f9d3244ab4f7) -> c (latest) (7bb0b9b16b5a8abe)" "$(head -1 "$TMP/out")"
cli 0 "plan --from 2 --to-file" plan "${S[@]}" --from 2 --to-file "$four"
check "plan --from 2: the title" \
    "plan (xxh3_64): c v2 (dbb9f9d3244ab4f7) -> $four (7bb0b9b16b5a8abe)" "$(head -1 "$TMP/out")"
cli 0 "plan from the server, --quiet" plan "${S[@]}" --from 1 --to 2 --quiet
check "plan --quiet from the server" 0.1918555667664909 "$(cat "$TMP/out")"
cli 2 "plan --to-file: an invalid topology" plan "${S[@]}" --to-file "$TMP/bad.json"
check "plan --to-file: invalid: the field" \
    "ringkeeper plan: $TMP/bad.json: nodes[0].weight: must be a number 0..1000, got -1" "$(cat "$TMP/err")"
cli 2 "plan --to-file and --to" plan "${S[@]}" --to-file "$five" --to 2
check "plan --to-file and --to: says why" "ringkeeper plan: --to-file and --to do not mix: that side is a file or a version
Try 'ringkeeper plan --help' for the options." "$(cat "$TMP/err")"
cli 2 "plan --format and -o" plan "${S[@]}" --to-file "$five" --format svg -o json
check "plan --format and -o: says why" "ringkeeper plan: --format and -o/--output do not mix: give one
Try 'ringkeeper plan --help' for the options." "$(cat "$TMP/err")"
cli 2 "plan --to-file, unknown version" plan "${S[@]}" --to-file "$five" --from 9
check "plan --from 9: the server's words" "ringkeeper plan: server: cluster c has no version 9 (HTTP 404)" \
    "$(cat "$TMP/err")"
finish
