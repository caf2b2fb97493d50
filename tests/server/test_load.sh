#!/usr/bin/env bash
# test_load.sh — a cluster's load profile over HTTP (docs/LOAD.md, docs/API.md "The load
# profile"): PUT .../load checks the profile field by field and keeps nothing it refuses, stores
# it as the cluster's latest (a `load` event), GET .../load answers it with its age; a profile
# over the stored bound is refused naming `load`; writes need a publish token; the server's plan
# is weighed by it (or says why not); the policy's max_moved_bytes is counted by it (and refuses
# without one); the profile survives a restart. Run on SQLite and on etcd (RK_TEST_STORE=etcd).
# usage: test_load.sh RINGKEEPERD SOURCE_DIR
. "$(dirname "$0")/lib.sh" "$1"
PY=/usr/bin/python3 # Debian's, whatever comes first on PATH
ALICE=alice-token-0123456789
printf 'alice:%s\n' "$ALICE" >"$TMP/tokens"
A=(-H "Authorization: Bearer $ALICE")
C=/v1/clusters/lp
rk_start --token-file "$TMP/tokens"

# profile BINS MORE: into $TMP/profile (a file: a big one is over an argument's bound), a profile
# of BINS bins (each with 1234567 keys of 1000000.5 bytes), MORE's members over it
profile() {
    $PY - "$1" "${2:-}" <<'PY'
import json, sys
bins, more = int(sys.argv[1]), json.loads(sys.argv[2] or "{}")
doc = {"profile": 1, "cluster": "lp", "hash": "xxh3_64", "data": "redis",
       "measured_at": "2026-12-07T08:00:00Z", "measured_epoch_s": 1796630400, "seconds": 0.5,
       "sample_rate": 0.5, "servers": [{"id": "n0", "addr": "10.0.0.0:6379"}],
       "load": {"bits": 64, "bins": bins, "sample_rate": 0.5, "keys": [1234567] * bins,
                "bytes": [1000000.5] * bins, "requests": [0] * bins}}
for k, v in more.items():
    if k == "pad":  # that many zeros in servers: a long body, whatever its bins
        doc["servers"] = [0] * v
    elif k.startswith("load."):
        doc["load"][k[5:]] = v
    elif v is None:
        del doc[k]
    else:
        doc[k] = v
print(json.dumps(doc))
PY
}
put() { profile "$@" >"$TMP/profile" && req PUT "$C/load" "${A[@]}" --data-binary @"$TMP/profile"; }
jq_() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

check "publish the cluster" 201 "$(req POST "$C/versions" "${A[@]}" --data-binary "$(topo 3 40 xxh3_64)")"
check "no profile yet: 404" 404 "$(req GET "$C/load")"
has "... no_load_profile" "$TMP/body" '"code":"no_load_profile"'
profile 4 >"$TMP/profile"
check "a write without a token: 401" 401 "$(req PUT "$C/load" --data-binary @"$TMP/profile")"

# refusals, field by field: 400 naming it, nothing kept
refused() { # refused NAME FIELD MORE [BINS]
    check "$1: 400" 400 "$(put "${4:-4}" "$3")"
    has "... naming $2" "$TMP/body" "\"field\":\"$2\""
}
refused "another format" profile '{"profile": 2}'
refused "no hash" hash '{"hash": null}'
refused "no time" measured_epoch_s '{"measured_epoch_s": 0}'
refused "a rate of 0" sample_rate '{"sample_rate": 0}'
refused "a rate over 1" sample_rate '{"sample_rate": 1.5}'
refused "another cluster" cluster '{"cluster": "web"}'
refused "3 bins" load.bins '{"load.bins": 3}'
refused "a negative byte count" load.bytes[2] '{"load.bytes": [1, 2, -3, 4]}'
check "not an object: 400" 400 "$(req PUT "$C/load" "${A[@]}" --data-binary '[1]')"
# 65536 bins: about 1.3 MB of profile, over the 1 MiB kept
refused "over the stored bound" load '' 65536
has "... saying to use fewer bins" "$TMP/body" "fewer --bins"
refused "a body over 2 MiB, before it is parsed" load '{"pad": 1100000}'
check "nothing kept: still 404" 404 "$(req GET "$C/load")"
profile 4 '{"cluster": null}' >"$TMP/profile"
check "an unknown cluster: 404" 404 "$(req PUT /v1/clusters/nope/load "${A[@]}" --data-binary @"$TMP/profile")"
has "... unknown_cluster" "$TMP/body" '"code":"unknown_cluster"'

# stored, answered without its bins, read back whole with its age
check "a profile of 4096 bins: 200" 200 "$(put 4096)"
check "... answered without its bins, by alice" "False alice" "$(jq_ "$TMP/body" "'load' in d, d['stored_by']" | tr -d "(),'")"
check "GET: 200" 200 "$(req GET "$C/load")"
check "... the bins as sent" "4096 5056786432 4096002048.0" \
    "$(jq_ "$TMP/body" "d['load']['bins'], sum(d['load']['keys']), sum(d['load']['bytes'])" | tr -d '(),')"
now=$(date +%s)
check "... with its age" True "$(jq_ "$TMP/body" "abs(d['age_s'] - ($now - 1796630400)) <= 5")"
check "a load event" True "$(req GET "$C/events" >/dev/null; jq_ "$TMP/body" "any(e['kind'] == 'load' and e['author'] == 'alice' for e in d['events'])")"

# the next replaces it, and survives a restart
check "another profile: 200" 200 "$(put 16 '{"measured_epoch_s": 1796640000}')"
# the server's plan is weighed by it (a uniform load moves what the hash space does), with its age
check "publish a fourth node" 201 "$(req POST "$C/versions" "${A[@]}" --data-binary "$(topo 4 40 xxh3_64)")"
check "the plan: 200" 200 "$(req GET "$C/plan?from=1&to=2&arcs=false")"
check "... weighed: the keys that move are the moved fraction" True \
    "$(jq_ "$TMP/body" "abs(d['load']['moving_keys'] / d['load']['keys'] - d['moved_fraction']) < 1e-9")"
check "... by the profile, with its age" "1796640000 True" \
    "$(jq_ "$TMP/body" "d['load']['profile']['measured_epoch_s'], d['load']['profile']['age_s'] > 0" | tr -d '(),')"
check "the plan as a table: 200" 200 "$(req GET "$C/plan?from=1&to=2&format=text")"
has "... with the load's lines" "$TMP/body" "load: lp, measured 2026-12-07T08:00:00Z"
has "... what moves by bytes" "$TMP/body" "by bytes the most loaded node holds"
check "a profile of another hash: 200" 200 "$(put 16 '{"hash": "fnv1a_64"}')"
check "... the plan says why it is not weighed" "False True" \
    "$(req GET "$C/plan?from=1&to=2" >/dev/null; jq_ "$TMP/body" "'load' in d, 'hash fnv1a_64' in d['load_error']" | tr -d '(),')"
check "... and its table too" 200 "$(req GET "$C/plan?from=1&to=2&format=text")"
has "... saying why" "$TMP/body" "load: not weighed: hash: the profile placed keys with hash fnv1a_64"
check "the latest again: 200" 200 "$(put 16 '{"measured_epoch_s": 1796640000}')"

# a budget in bytes (the policy's max_moved_bytes), counted by the profile: 16 bins of 1000000.5
# bytes at a rate of 0.5, 32000016 bytes in all, of which 3 -> 4 nodes moves about a quarter
check "activate version 1" 200 "$(req POST "$C/versions/1/activate" "${A[@]}")"
check "a byte budget of 100 MB: 200" 200 "$(req PUT "$C/policy" "${A[@]}" --data-binary '{"max_moved_bytes": 100000000}')"
check "... read back" 100000000 "$(jq_ "$TMP/body" "d['max_moved_bytes']")"
check "version 2 moves less: activated" 200 "$(req POST "$C/versions/2/activate" "${A[@]}")"
check "a byte budget of 1 MB: 200" 200 "$(req PUT "$C/policy" "${A[@]}" --data-binary '{"max_moved_bytes": 1000000}')"
check "publish 5 nodes" 201 "$(req POST "$C/versions" "${A[@]}" --data-binary "$(topo 5 40 xxh3_64)")"
check "version 3 moves more: 422" 422 "$(req POST "$C/versions/3/activate" "${A[@]}")"
has "... budget_exceeded, naming max_moved_bytes" "$TMP/body" '"field":"max_moved_bytes"'
has "... with the bytes the profile counts" "$TMP/body" "bytes by the load profile"
check "a byte budget of 0: 400" 400 "$(req PUT "$C/policy" "${A[@]}" --data-binary '{"max_moved_bytes": 0}')"
has "... naming it" "$TMP/body" '"field":"max_moved_bytes"'
check "forced past it: 200" 200 "$(req POST "$C/versions/3/activate" "${A[@]}" --data-binary '{"force": true, "reason": "a planned drain"}')"
# a byte budget with no profile to count by refuses
N=/v1/clusters/nb
check "another cluster, active" 201 "$(req POST "$N/versions?activate=true" "${A[@]}" --data-binary "$(topo 3 40 xxh3_64)")"
check "... its byte budget" 200 "$(req PUT "$N/policy" "${A[@]}" --data-binary '{"max_moved_bytes": 1000000000}')"
check "... a change of it" 201 "$(req POST "$N/versions" "${A[@]}" --data-binary "$(topo 4 40 xxh3_64)")"
check "no profile to count by: 422" 422 "$(req POST "$N/versions/2/activate" "${A[@]}")"
has "... saying to measure it" "$TMP/body" "has no load profile to count them by: measure it"
check "no byte budget again: 200" 200 "$(req PUT "$N/policy" "${A[@]}" --data-binary '{"max_moved_bytes": null}')"
check "... activated" 200 "$(req POST "$N/versions/2/activate" "${A[@]}")"

rk_stop
check "stopped cleanly" 0 "$STOP_CODE"
rk_start --token-file "$TMP/tokens"
check "after a restart: 200" 200 "$(req GET "$C/load")"
check "... the latest profile" "16 1796640000" "$(jq_ "$TMP/body" "d['load']['bins'], d['measured_epoch_s']" | tr -d '(),')"
rk_stop
finish
