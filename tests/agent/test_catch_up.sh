#!/usr/bin/env bash
# test_catch_up.sh — `ringkeeper agent --catch-up` (docs/AGENT.md, "No stale read: --catch-up")
# before a real nutcracker over three real memcached, on a real ringkeeperd: the moving keys of
# v1 -> v2 hold a pre-warmed copy on their new owner and a newer value (written through nutcracker)
# on their old one; the agent stops nutcracker, writes each of them over on its new owner, starts
# it on v2, and every key then reads its newest value through nutcracker. A v3 whose new node
# cannot be reached is refused (catch-up: that node), the file restored and nutcracker started
# again on v2, still serving every key. Options refused: --catch-up with nginx (from a config
# file's line, a flag alone), --stop alone.
# Skips (77) when memcached or nutcracker is not installed.
# usage: test_catch_up.sh RINGKEEPERD RINGKEEPER
set -u
# shellcheck source=../mover/migrate_lib.sh
. "$(dirname "$0")/../mover/migrate_lib.sh" "$1" "$2"
command -v nutcracker >/dev/null || { echo "SKIP: nutcracker is not installed"; exit 77; }
KEYS=300
OPS=ops-token-0123456789ab
printf 'ops:%s\n' "$OPS" >"$TMP/tokens"
rk_start --token-file "$TMP/tokens"
export RINGKEEPER_SERVER=$BASE RINGKEEPER_TOKEN=$OPS
C=/v1/clusters/cu
data_servers memcached 3
rkm_ports 3
NC=${PORTS[0]} STATS=${PORTS[1]} DEAD=${PORTS[2]} # DEAD: nothing listens there

# topo NODE...: a ketama topology of the nodes named (n0, n1, n2 on ADDR; n3 on DEAD)
topo() {
    local nodes='' n a
    for n in "$@"; do
        a=${ADDR[${n#n}]:-127.0.0.1:$DEAD}
        nodes="$nodes${nodes:+,}{\"id\":\"$n\",\"addr\":\"$a\",\"weight\":1}"
    done
    printf '{"scheme":"ketama","hash":"md5","data":"memcached","nodes":[%s]}' "$nodes"
}

# mc ADDR set PREFIX | get: every key-i set to PREFIX-i, or printed "key-i<TAB>value" (- if none)
mc() {
    /usr/bin/python3 - "$@" "$KEYS" <<'PY'
import socket, sys
addr, op = sys.argv[1], sys.argv[2]
host, port = addr.rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=5)
f = s.makefile("rb")
for i in range(int(sys.argv[-1])):
    k = b"key-%d" % i
    if op == "set":
        v = b"%s-%d" % (sys.argv[3].encode(), i)
        s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v))
        assert f.readline() == b"STORED\r\n"
    else:
        s.sendall(b"get %s\r\n" % k)
        line, v = f.readline(), "-"
        if line.startswith(b"VALUE"):
            v = f.read(int(line.split()[3]) + 2)[:-2].decode()
            f.readline()
        print("key-%d\t%s" % (i, v))
PY
}

cat >"$TMP/nc.sh" <<EOF
#!/bin/sh
stop() {
    pid=\$(cat "$TMP/nc.pid" 2>/dev/null) || return 0
    kill -TERM "\$pid" 2>/dev/null
    i=0
    while kill -0 "\$pid" 2>/dev/null && [ \$i -lt 100 ]; do sleep 0.05; i=\$((i + 1)); done
    rm -f "$TMP/nc.pid"
}
start() { nutcracker -d -c "$TMP/nc.yml" -s $STATS -a 127.0.0.1 -p "$TMP/nc.pid" -o "$TMP/nc.log"; }
case \$1 in start) start ;; stop) stop ;; restart) stop; start ;; esac
EOF
chmod +x "$TMP/nc.sh"

# until the agent's log has N lines saying TEXT (20 s at most)
wait_log() {
    for _ in $(seq 1 200); do
        [ "$(grep -c "$2" "$TMP/agent.log")" -ge "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

topo n0 n1 >"$TMP/t1"
topo n0 n1 n2 >"$TMP/t2"
check "v1" 201 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t1")"
"$RK" export --format nutcracker --pool rk --listen "127.0.0.1:$NC" --cluster cu --version 1 \
    >"$TMP/nc.yml"
if ! "$TMP/nc.sh" start || ! rkm_up "$NC"; then echo "FAIL: nutcracker did not start"; exit 1; fi

printf 'proxy = nginx\nupstream = rk\n# a flag alone on its line\ncatch-up\n' >"$TMP/agent.conf"
"$RK" agent --config "$TMP/agent.conf" --file "$TMP/nc.yml" --cluster cu >/dev/null 2>"$TMP/e"; rc=$?
check "--catch-up (a config file's flag) with nginx is refused" 2 $rc
has "... it needs a proxy that stops" "$TMP/e" "--catch-up needs a proxy that stops: nginx reloads"
"$RK" agent --proxy nutcracker --file "$TMP/nc.yml" --pool rk --stop true --cluster cu \
    >/dev/null 2>"$TMP/e"; rc=$?
check "--stop without --catch-up is refused" "2" "$rc"
has "... saying so" "$TMP/e" "--stop and --start go with --catch-up"

"$RK" agent --proxy nutcracker --file "$TMP/nc.yml" --pool rk --cluster cu \
    --stats "127.0.0.1:$STATS" --reload "$TMP/nc.sh restart" --catch-up \
    --stop "$TMP/nc.sh stop" --start "$TMP/nc.sh start" --client-id nc@test \
    >/dev/null 2>"$TMP/agent.log" &
AGENT=$!
wait_log 1 "held" || bad "the agent did not hold v1: $(tail -3 "$TMP/agent.log")"

# pre-warmed copies on n2 (of every key: those that do not move are not n2's), then newer
# values written through nutcracker to their owners by v1
mc "127.0.0.1:$NC" set old
"$RK" lookup --topology "$TMP/t2" < <(seq -f 'key-%g' 0 $((KEYS - 1))) | awk '$2 == "n2"' >"$TMP/moving"
MOVING=$(wc -l <"$TMP/moving")
mc "${ADDR[2]}" set old
mc "127.0.0.1:$NC" set new
check "the new node holds stale copies before the cutover" "$KEYS" \
    "$(mc "${ADDR[2]}" get | grep -c $'\told-')"

check "v2 activated" 201 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t2")"
wait_log 2 "held" || bad "the agent did not hold v2: $(tail -3 "$TMP/agent.log")"
has "... caught up, the moving keys written to n2" "$TMP/agent.log" \
    "compared, $MOVING written to their new owners"
rkm_up "$NC"
check "every key reads its newest value through nutcracker on v2" "0 $KEYS" \
    "$(mc "127.0.0.1:$NC" get | awk '$2 !~ /^new-/ {bad++} END {print bad + 0, NR}')"
if [ "$MOVING" -gt 10 ]; then ok; else bad "only $MOVING of $KEYS keys move to n2"; fi

topo n0 n1 n2 n3 >"$TMP/t3"
check "v3 (n3 unreachable) activated" 201 \
    "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t3")"
wait_log 1 "refused" || bad "the agent did not refuse v3: $(tail -3 "$TMP/agent.log")"
has "... by its catch-up, naming n3" "$TMP/agent.log" "refused: restart: catch-up: node n3"
wait_log 1 "restart sent again" || bad "nutcracker not started again: $(tail -3 "$TMP/agent.log")"
rkm_up "$NC"
check "... the file restored: three servers" 3 "$(grep -c ' n[0-9]"$' "$TMP/nc.yml")"
check "... nutcracker serves every key again on v2" "0 $KEYS" \
    "$(mc "127.0.0.1:$NC" get | awk '$2 !~ /^new-/ {bad++} END {print bad + 0, NR}')"

kill -TERM $AGENT
wait $AGENT; rc=$?
check "the agent stops on SIGTERM" 0 $rc
"$TMP/nc.sh" stop
finish
