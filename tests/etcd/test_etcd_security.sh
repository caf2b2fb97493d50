#!/usr/bin/env bash
# test_etcd_security.sh — ringkeeperd over etcd with TLS and etcd's authentication, as etcdctl
# users set them up: three members serving clients over https with --client-cert-auth (CA and
# certificates made here with openssl), then three plain members with `etcdctl auth enable` and a
# user limited to ringkeeper's prefix, with a token TTL of 1 s so that re-authentication is needed.
# Checked: the store works through both (publish, activate, the ring), and every refusal is clear:
# no client certificate, another CA, plain http to TLS, a wrong password (exit 1, naming etcd),
# a password file others can read and the flags' pairs (exit 2).
# usage: test_etcd_security.sh RINGKEEPERD
. "$(dirname "$0")/../server/lib.sh" "$1"
J='Content-Type: application/json'

# ---- certificates ----
ca() { # ca NAME: a self-signed CA in $TMP/NAME.pem
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/$1.key" -out "$TMP/$1.pem" -days 2 \
        -subj "/CN=ringkeeper test $1" 2>/dev/null
}
cert() { # cert NAME CN USAGE: a certificate signed by ca, for 127.0.0.1
    openssl req -newkey rsa:2048 -nodes -keyout "$TMP/$1.key" -out "$TMP/$1.csr" -subj "/CN=$2" 2>/dev/null &&
        printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=%s\n' "$3" >"$TMP/$1.ext" &&
        openssl x509 -req -in "$TMP/$1.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" -CAcreateserial \
            -out "$TMP/$1.pem" -days 2 -extfile "$TMP/$1.ext" 2>/dev/null
}
# the server certificate is a client one too: etcd's gateway dials its own gRPC with it
ca ca && ca other && cert server 127.0.0.1 serverAuth,clientAuth && cert client ringkeeper clientAuth ||
    { echo "openssl failed"; exit 1; }

# start_rk NAME FLAGS...: ringkeeperd with FLAGS; its exit code when it does not start, else 0
start_rk() {
    local name=$1
    shift
    timeout 20 "$RKD" --listen 127.0.0.1:0 "$@" >"$TMP/$name.log" 2>&1 &
    local pid=$! _
    for _ in $(seq 1 200); do
        grep -q "listening on port" "$TMP/$name.log" && { kill -TERM "$pid"; wait "$pid"; echo 0; return; }
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    wait "$pid"
    echo $?
}

# ---- TLS with client certificates ----
ETCD_SCHEME=https
ETCD_CLIENT_ARGS=(--cert-file "$TMP/server.pem" --key-file "$TMP/server.key" --client-cert-auth
    --trusted-ca-file "$TMP/ca.pem")
ETCD_CURL_ARGS=(--cacert "$TMP/ca.pem" --cert "$TMP/client.pem" --key "$TMP/client.key")
etcd_start_cluster
TLS=(--etcd-cacert "$TMP/ca.pem" --etcd-cert "$TMP/client.pem" --etcd-key "$TMP/client.key")
rk_start --store "etcds://$ETCD_ENDPOINTS/rk-tls" "${TLS[@]}"
topo 3 >"$TMP/t3"
check "tls: publish and activate" 201 "$(req POST "/v1/clusters/c/versions?activate=true" -H "$J" --data-binary @"$TMP/t3")"
check "tls: the ring" 200 "$(req GET /v1/clusters/c/ring)"
check "tls: ready" 200 "$(req GET /readyz)"
rk_stop
check "tls: stopped cleanly" 0 "$STOP_CODE"
check "tls: without a client certificate" 1 "$(start_rk nocert --store "etcds://$ETCD_ENDPOINTS/rk-tls" --etcd-cacert "$TMP/ca.pem")"
has "tls: without a client certificate: names etcd" "$TMP/nocert.log" "rk-tls: etcd "
check "tls: another CA" 1 "$(start_rk otherca --store "etcds://$ETCD_ENDPOINTS/rk-tls" --etcd-cacert "$TMP/other.pem" --etcd-cert "$TMP/client.pem" --etcd-key "$TMP/client.key")"
has "tls: another CA: says why" "$TMP/otherca.log" "certificate"
check "tls: plain http to TLS members" 1 "$(start_rk plain --store "etcd://$ETCD_ENDPOINTS/rk-tls")"
check "tls: certificates with etcd://" 2 "$(start_rk certplain --store "etcd://$ETCD_ENDPOINTS/rk-tls" "${TLS[@]}")"
has "tls: certificates with etcd://: says etcds://" "$TMP/certplain.log" "give the location as etcds://"
check "tls: a certificate without its key" 2 "$(start_rk nokey --store "etcds://$ETCD_ENDPOINTS/rk-tls" --etcd-cert "$TMP/client.pem")"
has "tls: a certificate without its key: why" "$TMP/nokey.log" "--etcd-cert needs its pair"
check "tls: an unreadable CA" 2 "$(start_rk noca --store "etcds://$ETCD_ENDPOINTS/rk-tls" --etcd-cacert "$TMP/nope.pem")"
has "tls: an unreadable CA: names the flag" "$TMP/noca.log" "--etcd-cacert $TMP/nope.pem: cannot be read"
check "tls: etcd flags with --db" 2 "$(start_rk withdb --db "$TMP/x.db" --etcd-cacert "$TMP/ca.pem")"
has "tls: etcd flags with --db: why" "$TMP/withdb.log" "--etcd-cacert is for an etcd store"
etcd_stop_cluster

# ---- etcd users: auth enabled, tokens that expire after 1 s ----
ETCD_SCHEME=http
ETCD_CLIENT_ARGS=(--auth-token-ttl 1)
ETCD_CURL_ARGS=()
etcd_start_cluster
ctl() { ETCDCTL_API=3 etcdctl --endpoints "http://127.0.0.1:${ETCD_CLIENT_PORTS[0]}" "$@" >>"$TMP/etcdctl.log" 2>&1; }
ctl user add root:root-pw-123 && ctl role add rk && ctl role grant-permission rk readwrite --prefix=true /rk-auth &&
    ctl user add rk:rk-pw-456 && ctl user grant-role rk rk && ctl auth enable ||
    { echo "etcdctl failed:"; cat "$TMP/etcdctl.log"; exit 1; }
printf 'rk-pw-456\n' >"$TMP/pw" && chmod 600 "$TMP/pw"
AUTH=(--etcd-user rk --etcd-password-file "$TMP/pw")
rk_start --store "etcd://$ETCD_ENDPOINTS/rk-auth" "${AUTH[@]}"
check "auth: publish and activate" 201 "$(req POST "/v1/clusters/c/versions?activate=true" -H "$J" --data-binary @"$TMP/t3")"
# a token taken now, as ringkeeperd's was, is refused after the sleep: so ringkeeperd's is too
EP=http://127.0.0.1:${ETCD_CLIENT_PORTS[0]}
token=$(curl -s -X POST -d '{"name":"rk","password":"rk-pw-456"}' "$EP/v3/auth/authenticate" |
    sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
sleep 3 # past the TTL: ringkeeperd's next request is refused once, authenticated again, sent again
curl -s -X POST -H "Authorization: $token" -d '{"key":"L3JrLWF1dGg="}' "$EP/v3/kv/range" >"$TMP/expired"
has "auth: a token 3 s old is refused by etcd" "$TMP/expired" "invalid auth token"
check "auth: publish after the token expired" 201 "$(req POST "/v1/clusters/c/versions?activate=true" -H "$J" --data-binary @"$TMP/t3")"
check "auth: the ring after the token expired" 200 "$(req GET /v1/clusters/c/ring)"
has "auth: the second version" "$TMP/body" '"version":2'
rk_stop
check "auth: stopped cleanly" 0 "$STOP_CODE"
printf 'wrong-password\n' >"$TMP/badpw" && chmod 600 "$TMP/badpw"
check "auth: a wrong password" 1 "$(start_rk badpw --store "etcd://$ETCD_ENDPOINTS/rk-auth" --etcd-user rk --etcd-password-file "$TMP/badpw")"
has "auth: a wrong password: names etcd and the user" "$TMP/badpw.log" "etcd did not authenticate user rk"
has "auth: a wrong password: etcd's reason" "$TMP/badpw.log" "authentication failed"
check "auth: no user" 1 "$(start_rk nouser --store "etcd://$ETCD_ENDPOINTS/rk-auth")"
has "auth: no user: names etcd" "$TMP/nouser.log" "etcd"
chmod 644 "$TMP/pw"
check "auth: a password file others can read" 2 "$(start_rk pwmode --store "etcd://$ETCD_ENDPOINTS/rk-auth" "${AUTH[@]}")"
has "auth: a password file others can read: why" "$TMP/pwmode.log" "--etcd-password-file $TMP/pw has mode 0644"
chmod 600 "$TMP/pw"
check "auth: a user without a password file" 2 "$(start_rk nopw --store "etcd://$ETCD_ENDPOINTS/rk-auth" --etcd-user rk)"
has "auth: a user without a password file: why" "$TMP/nopw.log" "--etcd-user needs its pair"
: >"$TMP/empty" && chmod 600 "$TMP/empty"
check "auth: an empty password file" 2 "$(start_rk emptypw --store "etcd://$ETCD_ENDPOINTS/rk-auth" --etcd-user rk --etcd-password-file "$TMP/empty")"
check "auth: outside the user's prefix" 1 "$(start_rk prefix --store "etcd://$ETCD_ENDPOINTS/elsewhere" "${AUTH[@]}")"
has "auth: outside the user's prefix: etcd's reason" "$TMP/prefix.log" "permission denied"

# migrate-store takes the same flags
rk_start --db "$TMP/src.db"
req POST "/v1/clusters/m/versions?activate=true" -H "$J" --data-binary @"$TMP/t3" >/dev/null
rk_stop
"$RKD" migrate-store --from "$TMP/src.db" --to "etcd://$ETCD_ENDPOINTS/rk-auth/copy" "${AUTH[@]}" >"$TMP/migrate.log" 2>&1
check "migrate-store with etcd users" 0 "$?"
has "migrate-store with etcd users: summary" "$TMP/migrate.log" "and verified: 1 clusters, 1 versions"
finish
