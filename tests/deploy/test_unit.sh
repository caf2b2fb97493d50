#!/usr/bin/env bash
# test_unit.sh — deploy/ringkeeperd.service as installed by `cmake --install`: `systemd-analyze
# verify` finds no error in it (any message about the unit fails the test: systemd ignores a
# mistyped directive with a message and exit 0, so the exit code alone would pass a typo; a copy with
# a typo proves that this check catches it here), it has the settings the operations guide relies on,
# and its ExecStart= command line, run as systemd would (state directory and port substituted), starts
# ringkeeperd, answers /healthz and /readyz, reloads the token file on ExecReload's signal, and
# exits 0 on SIGTERM.
# usage: test_unit.sh BUILD_DIR SOURCE_DIR
# shellcheck disable=SC2016 # $MAINPID and $RINGKEEPERD_FLAGS are meant literally
# shellcheck source=tests/deploy/unit_lib.sh
. "$(dirname "$0")/unit_lib.sh" "$1" "$2"

# ---- systemd-analyze verify (unit_lib.sh) ----
if command -v systemd-analyze >/dev/null; then
    if verify "$UNIT"; then ok; else bad "systemd-analyze verify $UNIT: $(cat "$TMP/verify.out")"; fi
    # the same check must catch a typo: an unknown directive, and a bad value
    mkdir -p "$TMP/typo"
    for edit in 's/^ProtectHome=/ProtectHom=/' 's/^Restart=on-failure/Restart=on-falure/'; do
        sed "$edit" "$UNIT" >"$TMP/typo/ringkeeperd.service"
        if verify "$TMP/typo/ringkeeperd.service"; then
            bad "systemd-analyze verify did not catch [$edit]"
        else ok; fi
    done
else
    echo "SKIP: systemd-analyze not found: the unit is not verified (the rest still runs)"
fi

# ---- the settings docs/OPERATIONS.md relies on ----
for kv in DynamicUser=yes StateDirectory=ringkeeper ProtectSystem=strict NoNewPrivileges=yes \
    PrivateTmp=yes Restart=on-failure 'ExecReload=/bin/kill -HUP $MAINPID' \
    EnvironmentFile=-/etc/ringkeeper/ringkeeperd.env UMask=0077 CapabilityBoundingSet= \
    'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX'; do
    check "unit: ${kv%%=*}" "${kv#*=}" "$(unit_value "${kv%%=*}")"
done
stop_s=$(unit_value TimeoutStopSec)
check "TimeoutStopSec ($stop_s) is longer than the daemon's 10 s grace" 1 \
    "$([ "${stop_s%s}" -gt 10 ] 2>/dev/null && echo 1)"
exec_start=$(unit_value ExecStart)
case $exec_start in
"$P/bin/ringkeeperd "*) ok ;;
*) bad "ExecStart is not the installed $P/bin/ringkeeperd: $exec_start" ;;
esac
has "ExecStart: the state directory's database" <(echo "$exec_start") "--db /var/lib/ringkeeper/ringkeeper.db"
has "ExecStart: loopback by default" <(echo "$exec_start") "--listen 127.0.0.1:7070"
has "ExecStart: the env file's flags" <(echo "$exec_start") '$RINGKEEPERD_FLAGS'

# ---- the ExecStart= command line, as systemd runs it ----
mkdir -p "$TMP/state" && chmod 0700 "$TMP/state"
printf '# ops tokens\nalice:%s\n' "$(printf 'a%.0s' $(seq 1 24))" >"$TMP/tokens"
chmod 600 "$TMP/tokens"
flags="--listen 127.0.0.1:0 --token-file $TMP/tokens"
if [ ! -d "$P/share/ringkeeper/migrations" ]; then # not yet installed: tests/deploy/test_deploy.sh fails on that
    echo "note: $P/share/ringkeeper/migrations not installed: passing --migrations $src/migrations"
    flags="$flags --migrations $src/migrations"
fi
unit_argv "$TMP/state" "$flags" || { finish; exit; }
unit_start "$TMP/server.log" "${ARGV[@]}" || { finish; exit; }
check "/healthz" 200 "$(req GET /healthz)"
check "/readyz" 200 "$(req GET /readyz)"
if [ -f "$TMP/state/ringkeeper.db" ]; then ok; else bad "no database in the state directory"; fi
topo 3 >"$TMP/t3.json"
publish() { # publish TOKEN: the status of a publish with that bearer token
    req POST /v1/clusters/cache/versions -H "Authorization: Bearer $1" \
        -H 'Content-Type: application/json' --data-binary @"$TMP/t3.json"
}
bob=$(printf 'b%.0s' $(seq 1 24))
check "publish as alice" 201 "$(publish "$(printf 'a%.0s' $(seq 1 24))")"
check "bob is not known yet" 403 "$(publish "$bob")"

# ExecReload=, with $MAINPID, after adding bob to the token file
printf 'bob:%s\n' "$bob" >>"$TMP/tokens"
reload=$(unit_value ExecReload)
read -r -a reload_argv <<<"${reload//\$MAINPID/$PID}"
if timeout 10 "${reload_argv[@]}"; then ok; else bad "ExecReload failed: ${reload_argv[*]}"; fi
for _ in $(seq 1 50); do
    grep -q 'SIGHUP: tokens reloaded' "$TMP/server.log" && break
    sleep 0.1
done
has "reloaded on ExecReload" "$TMP/server.log" "SIGHUP: tokens reloaded"
check "still alive after the reload" 200 "$(req GET /healthz)"
check "/readyz after the reload" 200 "$(req GET /readyz)"
check "bob is known after the reload" 201 "$(publish "$bob")"

# SIGTERM (systemd's KillSignal=) within TimeoutStopSec: exit 0
kill_signal=$(unit_value KillSignal)
check "KillSignal" SIGTERM "$kill_signal"
rk_stop
check "SIGTERM: exit 0 (log: $(tail -3 "$TMP/server.log"))" 0 "$STOP_CODE"

# ---- the data mover's template unit: verified as an instance, its ExecStart the installed CLI ----
MOVER=$P/lib/systemd/system/ringkeeper-mover@.service
if [ -f "$MOVER" ]; then ok; else bad "not installed: lib/systemd/system/ringkeeper-mover@.service"; fi
mkdir -p "$TMP/mover"
cp "$MOVER" "$TMP/mover/ringkeeper-mover@sessions.service"
if command -v systemd-analyze >/dev/null; then
    if verify "$TMP/mover/ringkeeper-mover@sessions.service" &&
        ! grep -q 'ringkeeper-mover' "$TMP/verify.out"; then ok; else
        bad "systemd-analyze verify of the mover unit: $(cat "$TMP/verify.out")"; fi
    sed 's/^KillSignal=SIGTERM/KillSignl=SIGTERM/' "$MOVER" >"$TMP/mover/typo@sessions.service"
    verify "$TMP/mover/typo@sessions.service"
    if grep -q 'typo@sessions' "$TMP/verify.out"; then ok; else bad "a typo in the mover unit is not caught"; fi
fi
has "the mover runs the installed CLI with --follow" "$MOVER" \
    "ExecStart=$P/bin/ringkeeper migrate run --follow --cluster %i \$RINGKEEPER_MOVER_FLAGS"
"$P/bin/ringkeeper" migrate run --follow --cluster sessions --server "$BASE" >/dev/null 2>"$TMP/follow.err" &
follower=$!
for _ in $(seq 1 50); do grep -q "trying again" "$TMP/follow.err" 2>/dev/null && break; sleep 0.1; done
kill -TERM $follower # the server is stopped: it waits, trying again, until the signal
wait $follower
check "the mover's ExecStart exits 0 on SIGTERM ($(cat "$TMP/follow.err"))" 0 $?

# ---- the proxies' agent's template unit (docs/AGENT.md): verified as an instance; its ExecStart,
# run as systemd would with a config whose upstream the file lacks, exits 2, which
# RestartPreventExitStatus keeps from restarting ----
AGENT=$P/lib/systemd/system/ringkeeper-agent@.service
if [ -f "$AGENT" ]; then ok; else bad "not installed: lib/systemd/system/ringkeeper-agent@.service"; fi
mkdir -p "$TMP/agent"
cp "$AGENT" "$TMP/agent/ringkeeper-agent@nginx.service"
if command -v systemd-analyze >/dev/null; then
    if verify "$TMP/agent/ringkeeper-agent@nginx.service" &&
        ! grep -q 'ringkeeper-agent' "$TMP/verify.out"; then ok; else
        bad "systemd-analyze verify of the agent unit: $(cat "$TMP/verify.out")"; fi
    sed 's/^RestartPreventExitStatus=/RestartPreventExitStats=/' "$AGENT" >"$TMP/agent/typo@nginx.service"
    verify "$TMP/agent/typo@nginx.service"
    if grep -q 'typo@nginx' "$TMP/verify.out"; then ok; else bad "a typo in the agent unit is not caught"; fi
fi
agent_start="ExecStart=$P/bin/ringkeeper agent --config /etc/ringkeeper/agent-%i.conf \$RINGKEEPER_AGENT_FLAGS"
has "the agent runs the installed CLI with its instance's config" "$AGENT" "$agent_start"
has "the agent is not restarted after exit 2" "$AGENT" "RestartPreventExitStatus=2"
printf 'events {}\nhttp {\n    upstream other {\n        hash $request_uri consistent;\n        server 127.0.0.1:1;\n    }\n}\n' >"$TMP/agent/nginx.conf"
printf '# the instance nginx\nproxy = nginx\nfile = %s\nupstream = cache\ncluster = cache\n' \
    "$TMP/agent/nginx.conf" >"$TMP/agent/agent-nginx.conf"
RINGKEEPER_SERVER=$BASE "$P/bin/ringkeeper" agent --config "$TMP/agent/agent-nginx.conf" 2>"$TMP/agent.err"
rc=$?
check "the agent's ExecStart: exit 2 on a file without the upstream ($(cat "$TMP/agent.err"))" 2 $rc
has "the agent says which upstream" "$TMP/agent.err" "cache"
finish
