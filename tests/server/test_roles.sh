#!/usr/bin/env bash
# test_roles.sh — tokens with roles (issue 20, items 4 and 5; docs/API.md, "Tokens and roles"):
#  - every write route against every role: a role the route needs gets past the check (to the
#    route's own answer: 400, 404 or 409 for the inputs below), any other 403 role_required;
#    every read route answers every token, a wrong one included;
#  - a policy change that loosens a guard needs admin (the author alone can no longer PUT
#    {"approvals": 0} and activate her unapproved version); tightening needs publish or approve;
#    a forced activation needs admin; a token without roles keeps today's behaviour (all of them);
#  - the fleet report: an RK-Client id sent without a client token, or with another client token
#    than the one that registered it, cannot change or evict the entry of one sent with it, and is
#    listed apart; --unauthenticated-clients ignore drops it.
# usage: test_roles.sh RINGKEEPERD RINGKEEPER
. "$(dirname "$0")/lib.sh" "$1"
CLI=$2
J='Content-Type: application/json'
declare -A TOK=([legacy]=legacy-0123456789abcdef [publish]=publish-0123456789abcdef
    [approve]=approve-0123456789abcdef [admin]=admin-0123456789abcdef
    [client]=client-0123456789abcdef [pubadmin]=pubadmin-0123456789abcdef
    [client2]=client2-0123456789abcdef)
printf '%s\n' "legacy:${TOK[legacy]}" "publish:${TOK[publish]} publish" \
    "approve:${TOK[approve]} approve" "admin:${TOK[admin]} admin" \
    "client:${TOK[client]} client" "pubadmin:${TOK[pubadmin]} publish,admin" \
    "client2:${TOK[client2]} client" >"$TMP/tokens"
rk_start --token-file "$TMP/tokens" --max-clients-per-cluster 50
as() { # as ROLE METHOD PATH [curl args]: the status
    local role=$1
    shift
    req "$@" -H "Authorization: Bearer ${TOK[$role]}"
}
code() { sed -n 's/.*"code":"\([a-z_]*\)".*/\1/p' "$TMP/body"; }
topo 3 >"$TMP/t3"
topo 4 >"$TMP/t4"
check "publish v1 (legacy token)" 201 "$(as legacy POST '/v1/clusters/r/versions?activate=true' -H "$J" --data-binary @"$TMP/t3")"
check "publish v2 (legacy token)" 201 "$(as legacy POST /v1/clusters/r/versions -H "$J" --data-binary @"$TMP/t4")"

# route: METHOD PATH BODY, the status its own handler gives, the roles that may call it
routes=(
    "POST /v1/clusters/r/versions {} 400 legacy publish pubadmin"
    "POST /v1/clusters/r/versions/999/activate {} 404 legacy publish pubadmin"
    "POST /v1/clusters/r/versions/999/revert {} 404 legacy publish pubadmin"
    "POST /v1/clusters/r/versions/999/approve {} 400 legacy approve"
    "POST /v1/clusters/r/migration/finish {} 409 legacy publish pubadmin"
    "PUT /v1/clusters/r/policy {\"nope\":1} 400 legacy publish approve admin pubadmin"
)
for r in "${routes[@]}"; do
    read -r method path body want allowed <<<"$r"
    for role in legacy publish approve admin client pubadmin; do
        got=$(as "$role" "$method" "$path" -H "$J" --data-binary "$body")
        if [[ " $allowed " == *" $role "* ]]; then
            check "$role: $method $path" "$want" "$got"
        else
            check "$role: $method $path refused" "403 role_required" "$got $(code)"
        fi
    done
    check "no token: $method $path" 401 "$(req "$method" "$path" -H "$J" --data-binary "$body")"
    check "a wrong token: $method $path" 403 "$(req "$method" "$path" -H "$J" --data-binary "$body" -H 'Authorization: Bearer wrong-0123456789abcdef')"
done
for path in /healthz /readyz /metrics /v1/clusters /v1/clusters/r/versions /v1/clusters/r/versions/1 \
    /v1/clusters/r/versions/1/picture '/v1/clusters/r/versions/1/arc?hash=80000000' /v1/clusters/r/ring \
    '/v1/clusters/r/plan?from=1&to=2' /v1/clusters/r/policy /v1/clusters/r/events \
    /v1/clusters/r/clients /ui/index.html; do
    for role in legacy publish approve admin client; do
        check "$role: GET $path" 200 "$(as "$role" GET "$path")"
    done
    check "a wrong token: GET $path (served: reads need none)" 200 \
        "$(req GET "$path" -H 'Authorization: Bearer wrong-0123456789abcdef')"
done

# the policy: tighten with publish, loosen only with admin
check "publish tightens approvals to 1" 200 "$(as publish PUT /v1/clusters/r/policy -H "$J" --data-binary '{"approvals":1}')"
for role in publish approve; do
    check "$role loosens approvals to 0: refused" "403 admin_required" \
        "$(as "$role" PUT /v1/clusters/r/policy -H "$J" --data-binary '{"approvals":0}') $(code)"
done
check "the author cannot activate her unapproved v2" 409 "$(as publish POST /v1/clusters/r/versions/2/activate)"
for change in '{"max_moved_fraction":0.5}' '{"distinct_approver":true}' '{"migration_window":true}' \
    '{"max_balance_after":2}' '{"prewarm":true}'; do
    check "publish tightens $change" 200 "$(as publish PUT /v1/clusters/r/policy -H "$J" --data-binary "$change")"
done
for change in '{"max_moved_fraction":0.9}' '{"distinct_approver":false}' \
    '{"migration_window":false}' '{"max_balance_after":3}' '{"max_balance_after":null}' \
    '{"prewarm":false}'; do
    check "publish loosens $change: refused" "403 admin_required" \
        "$(as publish PUT /v1/clusters/r/policy -H "$J" --data-binary "$change") $(code)"
done
check "a refused change changed nothing" 1 "$(as publish GET /v1/clusters/r/policy >/dev/null; sed -n 's/.*"approvals":\([0-9]*\).*/\1/p' "$TMP/body")"
check "admin loosens approvals to 0" 200 "$(as admin PUT /v1/clusters/r/policy -H "$J" --data-binary '{"approvals":0,"max_moved_fraction":1,"distinct_approver":false,"migration_window":false,"max_balance_after":null,"prewarm":false}')"
check "the legacy token loosens too (today's behaviour)" 200 "$(as legacy PUT /v1/clusters/r/policy -H "$J" --data-binary '{"approvals":0}')"
check "publish: a forced activation refused" "403 admin_required" \
    "$(as publish POST /v1/clusters/r/versions/2/activate -H "$J" --data-binary '{"force":true,"reason":"x"}') $(code)"
check "publish,admin: a forced activation" 200 \
    "$(as pubadmin POST /v1/clusters/r/versions/2/activate -H "$J" --data-binary '{"force":true,"reason":"x"}')"

# the fleet report: web-1 holds v1 with the client token; a stranger says it holds v2
tag2=$(as client GET /v1/clusters/r/ring >/dev/null; sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')
tag1=${tag2/\"v2./\"v1.} # "v1.<store id>": the ring it held before
as client GET /v1/clusters/r/ring -H 'RK-Client: web-1' -H "If-None-Match: $tag1" >/dev/null
req GET /v1/clusters/r/ring -H 'RK-Client: web-1' -H "If-None-Match: $tag2" >/dev/null
for i in $(seq 1 100); do # a flood of strangers past the per-cluster cap of 50
    req GET /v1/clusters/r/ring -H "RK-Client: forged-$i" -H "If-None-Match: $tag2" >/dev/null
done
# another client token names web-1 (issue 52, item 7): the id is bound to the token that
# registered it, so this one is listed apart, as a stranger's is
as client2 GET /v1/clusters/r/ring -H 'RK-Client: web-1' -H "If-None-Match: $tag2" >/dev/null
check "the listing" 200 "$(req GET '/v1/clusters/r/clients?limit=1000')"
python3 - "$TMP/body" >"$TMP/report" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
mine = {c["id"]: c for c in d["clients"]}
apart = d["unauthenticated"]
print("authenticated:", sorted(mine), "web-1 held", mine.get("web-1", {}).get("held"),
      "token", mine.get("web-1", {}).get("token"), "converged", d["summary"]["converged"])
print("apart:", apart["summary"]["total"], [c.get("token") for c in apart["clients"] if c["id"] == "web-1"])
PY
cat "$TMP/report"
has "a stranger cannot change web-1" "$TMP/report" "authenticated: ['web-1'] web-1 held 1 token client converged False"
has "strangers are listed apart, capped; another token's web-1 with them" "$TMP/report" "apart: 50 ['client2']"
# the library and the CLI send their token: lookup --token counts as authenticated
echo k1 | "$CLI" lookup --server "$BASE" --cluster r --token "${TOK[client]}" --client-id web-9 >/dev/null
"$CLI" clients --server "$BASE" --cluster r >"$TMP/table"
check "ringkeeper clients: strangers counted apart" 1 \
    "$(grep -c '^unauthenticated (not counted above): 50$' "$TMP/table")"
check "the listing" 200 "$(req GET '/v1/clusters/r/clients?limit=1000')"
has "lookup --token: authenticated" "$TMP/body" '"id":"web-9","held":null,"offered":2'
has "lookup --token: its token named" "$TMP/body" '"user_agent":"libringkeeper/0.2.0","token":"client"'
rk_stop

rk_start --token-file "$TMP/tokens" --unauthenticated-clients ignore
req GET /v1/clusters/r/ring -H 'RK-Client: web-2' >/dev/null
as client GET /v1/clusters/r/ring -H 'RK-Client: web-3' >/dev/null
check "the listing" 200 "$(req GET /v1/clusters/r/clients)"
has "only the authenticated client" "$TMP/body" '"clients":[{"id":"web-3"'
has "strangers not recorded" "$TMP/body" '"unauthenticated":null'
rk_stop
check "stopped by SIGTERM" 0 "$STOP_CODE"
check "--unauthenticated-clients takes apart or ignore" 2 \
    "$("$RKD" --listen 127.0.0.1:0 --db "$TMP/x.db" --unauthenticated-clients maybe 2>/dev/null; echo $?)"
finish
