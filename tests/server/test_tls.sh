#!/usr/bin/env bash
# test_tls.sh — ringkeeperd --tls-cert/--tls-key serving HTTPS with a CA and a certificate for
# 127.0.0.1 made here with openssl: curl and the CLI (--ca-file, RINGKEEPER_CA_FILE; lookup goes
# through the client library's ca_file) verify it, a wrong or missing CA is refused, plain HTTP to
# the port gets no answer; and the flag errors exit 2.
# usage: test_tls.sh RINGKEEPERD RINGKEEPER
. "$(dirname "$0")/lib.sh" "$1"
RK=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
unset RINGKEEPER_SERVER RINGKEEPER_TOKEN RINGKEEPER_CA_FILE
J='Content-Type: application/json'

# ca NAME: a self-signed CA in $TMP/NAME.pem (key NAME.key)
ca() {
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/$1.key" -out "$TMP/$1.pem" -days 2 \
        -subj "/CN=ringkeeper test $1" 2>/dev/null
}
ca ca && ca other || { echo "openssl failed"; exit 1; }
openssl req -newkey rsa:2048 -nodes -keyout "$TMP/server.key" -out "$TMP/server.csr" \
    -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$TMP/ext"
openssl x509 -req -in "$TMP/server.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" -CAcreateserial \
    -out "$TMP/server.pem" -days 2 -extfile "$TMP/ext" 2>/dev/null || { echo "openssl failed"; exit 1; }

# flag errors: one of the two, an unreadable file, a file that is not PEM
flags() { # flags NAME WANT_TEXT FLAGS...: exit 2 with WANT_TEXT on stderr, before listening
    local name=$1 want=$2
    shift 2
    timeout 10 "$RKD" --listen 127.0.0.1:0 --db "$TMP/flags.db" "$@" 2>"$TMP/err"
    check "$name: exit code" 2 "$?"
    has "$name: message" "$TMP/err" "$want"
}
flags "cert without key" "--tls-cert needs --tls-key" --tls-cert "$TMP/server.pem"
flags "key without cert" "--tls-key needs --tls-cert" --tls-key "$TMP/server.key"
flags "unreadable cert" "--tls-cert $TMP/nope.pem: cannot be read" --tls-cert "$TMP/nope.pem" \
    --tls-key "$TMP/server.key"
flags "unreadable key" "--tls-key $TMP/nope.key: cannot be read" --tls-cert "$TMP/server.pem" \
    --tls-key "$TMP/nope.key"
echo "not a certificate" >"$TMP/junk"
flags "not PEM" "is not a PEM file" --tls-cert "$TMP/junk" --tls-key "$TMP/server.key"
timeout 10 "$RKD" --listen 127.0.0.1:0 --db "$TMP/flags.db" --tls-cert "$TMP/server.pem" \
    --tls-key "$TMP/other.key" 2>"$TMP/err"
check "key of another certificate: exit code" 1 "$?"
has "key of another certificate: message" "$TMP/err" "certificate and key do not match"

RK_SCHEME=https
rk_start --tls-cert "$TMP/server.pem" --tls-key "$TMP/server.key"
has "start line says https" "$TMP/server.log" ", https,"
case $BASE in https://127.0.0.1:*) ok ;; *) bad "BASE is $BASE" ;; esac

# curl: verified with the CA, refused without it or with another, nothing over plain HTTP
check "healthz with the CA" 200 "$(req GET /healthz --cacert "$TMP/ca.pem")"
curl -s -o /dev/null --max-time 10 "$BASE/healthz"
check "no CA: certificate not verified (curl 60)" 60 "$?"
curl -s -o /dev/null --max-time 10 --cacert "$TMP/other.pem" "$BASE/healthz"
check "another CA: certificate not verified (curl 60)" 60 "$?"
got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PORT/healthz")
check "plain http to the TLS port gets no HTTP answer" 000 "$got"
check "healthz still answers after the plain request" 200 "$(req GET /healthz --cacert "$TMP/ca.pem")"

# publish and activate over HTTPS, with curl and with the CLI (--ca-file and RINGKEEPER_CA_FILE)
topo 4 >"$TMP/t4"
check "publish v1 over https" 201 "$(req POST /v1/clusters/c/versions -H "$J" --cacert "$TMP/ca.pem" \
    --data-binary @"$TMP/t4")"
topo 5 >"$TMP/t5"
"$RK" publish "$TMP/t5" --activate --server "$BASE" --cluster c --ca-file "$TMP/ca.pem" \
    >"$TMP/out" 2>"$TMP/err"
check "cli publish --activate --ca-file (stderr: $(head -c 300 "$TMP/err"))" 0 "$?"
has "cli publish made v2 active" "$TMP/out" '"state": "active"'
RINGKEEPER_CA_FILE=$TMP/ca.pem "$RK" versions --server "$BASE" --cluster c >"$TMP/out" 2>"$TMP/err"
check "cli versions with RINGKEEPER_CA_FILE (stderr: $(head -c 300 "$TMP/err"))" 0 "$?"
"$RK" versions --server "$BASE" --cluster c >"$TMP/out" 2>"$TMP/err"
check "cli versions without a CA: unreachable" 4 "$?"
has "cli versions without a CA says why" "$TMP/err" "certificate"

# lookup --server goes through the client library (rk_client_config.ca_file)
echo user:1 | "$RK" lookup --server "$BASE" --cluster c --ca-file "$TMP/ca.pem" >"$TMP/out" 2>"$TMP/err"
check "cli lookup --ca-file (stderr: $(head -c 300 "$TMP/err"))" 0 "$?"
echo user:1 | "$RK" lookup --topology "$TMP/t5" >"$TMP/want"
if cmp -s "$TMP/want" "$TMP/out"; then ok; else bad "lookup over https: $(cat "$TMP/out")"; fi
echo user:1 | RINGKEEPER_CA_FILE=$TMP/ca.pem "$RK" lookup --server "$BASE" --cluster c \
    >"$TMP/out" 2>"$TMP/err"
check "cli lookup with RINGKEEPER_CA_FILE (stderr: $(head -c 300 "$TMP/err"))" 0 "$?"
echo user:1 | "$RK" lookup --server "$BASE" --cluster c --ca-file "$TMP/other.pem" \
    >"$TMP/out" 2>"$TMP/err"
check "cli lookup with another CA: refused as unreachable" 4 "$?"
has "cli lookup with another CA says why" "$TMP/err" "certificate"
if [ -s "$TMP/out" ]; then bad "a refused lookup printed: $(cat "$TMP/out")"; else ok; fi

rk_stop
check "stopped by SIGTERM" 0 "$STOP_CODE"
finish
