#!/usr/bin/env bash
# test_etcd_units.sh — the etcd deployment of docs/OPERATIONS.md as installed: the unit with the
# installed drop-in (share/ringkeeper/systemd/ringkeeperd-etcd.conf) passes `systemd-analyze verify`
# (and a typo in the drop-in is caught, so the drop-in is really read); three etcd members run from
# deploy/etcd-member.env (its placeholders filled in: loopback, ports from the kernel, certificates
# made here) over TLS with client certificates; two replicas run the drop-in's ExecStart= with the
# environment file's variables; a version published through one is served by the other.
# usage: test_etcd_units.sh BUILD_DIR SOURCE_DIR
# shellcheck disable=SC2016 # ${RINGKEEPERD_STORE} and $RINGKEEPERD_FLAGS are meant literally
# shellcheck source=tests/deploy/unit_lib.sh
. "$(dirname "$0")/unit_lib.sh" "$1" "$2"
DROPIN=$P/share/ringkeeper/systemd/ringkeeperd-etcd.conf
if [ -f "$DROPIN" ]; then ok; else bad "not installed: $DROPIN"; finish; exit; fi

# ---- the unit with the drop-in, verified ----
mkdir -p "$TMP/units/ringkeeperd.service.d" "$TMP/typo/ringkeeperd.service.d"
cp "$UNIT" "$TMP/units/" && cp "$DROPIN" "$TMP/units/ringkeeperd.service.d/etcd.conf"
if command -v systemd-analyze >/dev/null; then
    if verify "$TMP/units/ringkeeperd.service"; then ok; else bad "verify with the drop-in: $(cat "$TMP/verify.out")"; fi
    cp "$UNIT" "$TMP/typo/"
    sed 's/^ExecStart=$/ExecStrt=/' "$DROPIN" >"$TMP/typo/ringkeeperd.service.d/etcd.conf"
    if verify "$TMP/typo/ringkeeperd.service"; then bad "a typo in the drop-in is not caught"; else ok; fi
else
    echo "SKIP: systemd-analyze not found: the drop-in is not verified (the rest still runs)"
fi
exec_start=$(grep '^ExecStart=.' "$DROPIN" | sed 's/^ExecStart=//')
case $exec_start in
"$P/bin/ringkeeperd --store \${RINGKEEPERD_STORE} "*) ok ;;
*) bad "the drop-in's ExecStart is not the installed ringkeeperd with \${RINGKEEPERD_STORE}: $exec_start" ;;
esac
check "the drop-in clears the unit's ExecStart first" 1 "$(grep -c '^ExecStart=$' "$DROPIN")"

# ---- certificates ----
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/ca.key" -out "$TMP/ca.pem" -days 2 \
    -subj "/CN=ringkeeper deploy test" 2>/dev/null || { echo "openssl failed"; exit 1; }
cert() { # cert NAME: signed by ca, for 127.0.0.1, server and client use
    openssl req -newkey rsa:2048 -nodes -keyout "$TMP/$1.key" -out "$TMP/$1.csr" -subj "/CN=$1" 2>/dev/null &&
        printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$TMP/$1.ext" &&
        openssl x509 -req -in "$TMP/$1.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" -CAcreateserial \
            -out "$TMP/$1.pem" -days 2 -extfile "$TMP/$1.ext" 2>/dev/null
}
cert member && cert ringkeeper || { echo "openssl failed"; exit 1; }

# ---- three members from deploy/etcd-member.env ----
read -r -a ports <<<"$(etcd_free_ports 6)"
member_env() { # member_env N: the example with member N's values, one VAR=value a line
    local n=$1 i script=
    for i in 1 2 3; do
        script="$script;s|HOST$i:2380|127.0.0.1:${ports[$((i + 2))]}|g"
    done
    sed -e "$script" -e "s|=NAME$|=m$n|" -e "s|HOST:2380|127.0.0.1:${ports[$((n + 2))]}|g" \
        -e "s|HOST:2379|127.0.0.1:${ports[$((n - 1))]}|g" -e "s|/var/lib/etcd/default|$TMP/m$n.data|" \
        -e "s|/etc/etcd/|$TMP/|" -e "s|ringkeeper-etcd$|rk-deploy-$$|" "$src/deploy/etcd-member.env" | grep -v '^#'
}
for n in 1 2 3; do
    member_env "$n" >"$TMP/m$n.env"
    # shellcheck disable=SC2046 # one VAR=value a word, as systemd's EnvironmentFile= gives them
    env -i PATH="$PATH" $(cat "$TMP/m$n.env") etcd >"$TMP/m$n.log" 2>&1 &
    ETCD_PIDS[n - 1]=$!
done
healthy() {
    curl -s --max-time 1 --cacert "$TMP/ca.pem" --cert "$TMP/ringkeeper.pem" --key "$TMP/ringkeeper.key" \
        "https://127.0.0.1:${ports[0]}/health" | grep -q '"health":"true"'
}
for _ in $(seq 1 200); do healthy && break; sleep 0.1; done
if healthy; then ok; else bad "the members did not come up: $(tail -5 "$TMP/m1.log")"; finish; exit; fi
has "a member's data is where the example puts it" <(ls "$TMP/m1.data") "member"

# ---- two replicas: the drop-in's command line with the environment file's variables ----
STORE="etcds://127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}/ringkeeper"
FLAGS="--listen 127.0.0.1:0 --etcd-cacert $TMP/ca.pem --etcd-cert $TMP/ringkeeper.pem --etcd-key $TMP/ringkeeper.key"
line=${exec_start//\$\{RINGKEEPERD_STORE\}/$STORE}
line=${line//\$RINGKEEPERD_FLAGS/$FLAGS}
read -r -a ARGV <<<"$line"
unit_start "$TMP/a.log" "${ARGV[@]}" || { finish; exit; }
A_PID=$PID A_BASE=$BASE
unit_start "$TMP/b.log" "${ARGV[@]}" || { finish; exit; }
topo 3 >"$TMP/t3"
check "publish through replica A" 201 "$(BASE=$A_BASE req POST "/v1/clusters/c/versions?activate=true" -H 'Content-Type: application/json' --data-binary @"$TMP/t3")"
check "the ring from replica B" 200 "$(req GET /v1/clusters/c/ring)"
has "replica B serves version 1" "$TMP/headers" 'ETag: "v1.'
rk_stop
check "replica B: SIGTERM, exit 0" 0 "$STOP_CODE"
PID=$A_PID
rk_stop
check "replica A: SIGTERM, exit 0" 0 "$STOP_CODE"
finish
