# shellcheck shell=bash
# unit_lib.sh — shared by the deploy tests: install the build into a temporary prefix, take the
# command lines of the INSTALLED systemd unit, and start ringkeeperd exactly as systemd would.
# usage: . unit_lib.sh BUILD_DIR SOURCE_DIR (after which $P is the prefix and $UNIT the unit)
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
. "$src/tests/server/lib.sh" "$build/server/ringkeeperd"
P=$TMP/prefix
UNIT=$P/lib/systemd/system/ringkeeperd.service

if timeout 120 cmake --install "$build" --prefix "$P" >"$TMP/install.log" 2>&1; then ok; else
    bad "cmake --install failed: $(tail -20 "$TMP/install.log")"
    finish
    exit
fi
if [ -f "$UNIT" ]; then ok; else
    bad "not installed: lib/systemd/system/ringkeeperd.service"
    finish
    exit
fi

# unit_value KEY: the value of the one KEY= line of [Service]; with none or several, prints
# "<KEY: N lines>" (which no check wants) and returns 1. Runs in $(...): it cannot count a failure.
unit_value() {
    awk -v key="$1" '/^\[/ {sec = $0; next}
        sec == "[Service]" && index($0, key "=") == 1 {n++; v = substr($0, length(key) + 2)}
        END {if (n == 1) print v; else {print "<" key ": " n + 0 " lines>"; exit 1}}' "$UNIT"
}

# unit_argv STATE_DIR FLAGS: the unit's ExecStart= as words in the array ARGV, the way systemd
# would run it: /var/lib/ringkeeper (StateDirectory=) is STATE_DIR, and $RINGKEEPERD_FLAGS (from the
# EnvironmentFile=) is FLAGS, split on white space as systemd splits an unbraced $VAR. The unit uses
# no quotes, specifiers or exec prefixes; a unit that does would need a real parser, so it fails here.
unit_argv() {
    local line
    if ! line=$(unit_value ExecStart); then
        bad "no single ExecStart= in $UNIT: $line"
        return 1
    fi
    case $line in
    *[\"\'%\\]* | [-@:+!]*)
        bad "ExecStart uses quotes, specifiers or prefixes this test cannot expand: $line"
        return 1
        ;;
    esac
    line=${line//\/var\/lib\/ringkeeper/$1}
    line=${line//\$RINGKEEPERD_FLAGS/$2}
    if [[ $line == *'$'* ]]; then
        bad "ExecStart uses a variable this test does not know: $line"
        return 1
    fi
    # shellcheck disable=SC2034 # for the caller
    read -r -a ARGV <<<"$line"
}

# unit_start LOG ARGV...: runs the command from / (systemd's working directory for a system
# service, far from the source tree), stderr to LOG; sets PID, PORT and BASE (lib.sh's names, so
# rk_stop and req work) and waits (at most 10 s) for "listening on port N".
unit_start() {
    local log=$1
    shift
    : >"$log"
    (cd / && exec "$@") 2>>"$log" &
    PID=$!
    PORT=
    for _ in $(seq 1 100); do
        PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$log" | head -1)
        [ -n "$PORT" ] && break
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$PORT" ]; then
        bad "the unit's command did not start: $* — $(cat "$log")"
        return 1
    fi
    BASE=http://127.0.0.1:$PORT
}

# verify UNIT_FILE: prints what systemd-analyze says about the unit; fails on an exit code other than
# 0 or on any line naming the unit (file:line messages, "ringkeeperd.service: ..."); other lines
# (the environment, e.g. no systemd running) are printed but not failures.
verify() {
    local out rc
    out=$(timeout 60 systemd-analyze verify --man=no "$1" 2>&1)
    rc=$?
    printf '%s' "$out" >"$TMP/verify.out"
    if [ "$rc" -ne 0 ] || grep -q 'ringkeeperd\.service' "$TMP/verify.out"; then
        return 1
    fi
    [ -s "$TMP/verify.out" ] && echo "note: systemd-analyze (not about the unit): $out"
    return 0
}
