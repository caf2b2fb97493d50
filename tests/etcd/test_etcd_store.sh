#!/usr/bin/env bash
# test_etcd_store.sh — what only the etcd store has: two ringkeeperd replicas over one three-member
# etcd cluster (each sees what the other wrote; publishers racing through both get gapless numbers),
# a long poll on one replica woken by an activation through the other (the etcd watch, also after
# etcd compacted its history), a migration window opened through one replica and finished through
# the other (B's held poll wakes, its ring drops `previous`), the --store flag's refusals, and
# quorum: lost (writes and /readyz 503, naming etcd; B serves the ring it has with RK-Stale), back
# (writes resume without a restart, RK-Stale gone), one member down (nothing noticed), and the
# leader killed -9 during publishes (nothing acknowledged lost, no gap).
# usage: test_etcd_store.sh RINGKEEPERD
export RK_TEST_STORE=etcd
. "$(dirname "$0")/../server/lib.sh" "$1"
J='Content-Type: application/json'

# flag refusals, before anything starts
"$RKD" --db "$TMP/x.db" --store etcd://127.0.0.1:1 2>"$TMP/err"
check "--db and --store: exit 2" 2 "$?"
has "--db and --store: says to give one" "$TMP/err" "--db and --store name two stores: give one"
"$RKD" --store http://127.0.0.1:1 2>"$TMP/err"
check "--store not etcd://: exit 2" 2 "$?"
has "--store not etcd://: the forms" "$TMP/err" "must be sqlite:PATH or etcd://HOST:PORT[,HOST:PORT...][/prefix]"
"$RKD" --store etcd://127.0.0.1 2>"$TMP/err"
check "endpoint without a port: exit 2" 2 "$?"
has "endpoint without a port: the form" "$TMP/err" "etcd endpoints are HOST:PORT"
"$RKD" --store "etcd://127.0.0.1:1/bad prefix/" 2>"$TMP/err"
check "bad prefix: exit 2" 2 "$?"
has "bad prefix: names it" "$TMP/err" 'the etcd key prefix "/bad prefix/"'
port=$(etcd_free_ports 1)
"$RKD" --listen 127.0.0.1:0 --store "etcd://127.0.0.1:$port" 2>"$TMP/err"
check "no etcd: exit 1" 1 "$?"
has "no etcd: names etcd" "$TMP/err" "etcd is unavailable"

# hold_on_b CLUSTER TAG NAME: a long poll on B's ring with If-None-Match TAG, in the background
# ($poll its PID, $TMP/poll its body, $TMP/poll_code its status), checked to be held
hold_on_b() {
    curl -s -o "$TMP/poll" -w '%{http_code}' --max-time 70 -H "If-None-Match: $2" \
        "$B/v1/clusters/$1/ring?wait=60" >"$TMP/poll_code" &
    poll=$!
    for _ in $(seq 1 100); do
        curl -s "$B/metrics" | grep -q '^ringkeeper_long_polls_waiting 1' && break
        sleep 0.1
    done
    check "$3" 1 "$(curl -s "$B/metrics" | grep -c '^ringkeeper_long_polls_waiting 1')"
}

# two replicas
rk_start
A=$BASE A_PID=$PID
PID= # rk_start's PID is the next replica's; A is stopped by hand below
rk_start
B=$BASE
topo 3 >"$TMP/t3"
check "publish and activate through A" 201 "$(curl -s -o "$TMP/body" -w '%{http_code}' -H "$J" \
    --data-binary @"$TMP/t3" "$A/v1/clusters/cache/versions?activate=true")"
check "B serves A's ring" 200 "$(curl -s -o "$TMP/body" -w '%{http_code}' "$B/v1/clusters/cache/ring")"
has "B's ring is version 1" "$TMP/body" '"version":1'
has "both give one store id" "$TMP/body" "$(curl -s "$A/v1/clusters/cache/ring" | grep -o '"store_id":"[0-9a-f]*"')"

# a long poll held on B wakes when A activates, and B's cached ring is replaced
tag=$(curl -s -D - -o /dev/null "$B/v1/clusters/cache/ring" | tr -d '\r' | sed -n 's/^ETag: //ip')
hold_on_b cache "$tag" "B holds the poll"
topo 4 >"$TMP/t4"
check "publish and activate v2 through A" 201 "$(curl -s -o /dev/null -w '%{http_code}' -H "$J" \
    --data-binary @"$TMP/t4" "$A/v1/clusters/cache/versions?activate=true")"
wait "$poll"
check "B's poll answered" 200 "$(cat "$TMP/poll_code")"
has "B's poll has version 2" "$TMP/poll" '"version":2'
check "B's ring now" 200 "$(curl -s -o "$TMP/body" -w '%{http_code}' "$B/v1/clusters/cache/ring")"
has "B's ring is version 2" "$TMP/body" '"version":2'
check "B's version 1 is retired" 200 "$(curl -s -o "$TMP/body" -w '%{http_code}' \
    "$B/v1/clusters/cache/versions/1")"
has "B's version 1 says so" "$TMP/body" '"state":"retired"'

# etcd compacted to its newest revision while B holds a poll: the next activation through A still
# wakes it
tag=$(curl -s -D - -o /dev/null "$B/v1/clusters/cache/ring" | tr -d '\r' | sed -n 's/^ETag: //ip')
hold_on_b cache "$tag" "B holds the poll during the compaction"
status=http://127.0.0.1:${ETCD_CLIENT_PORTS[0]}
rev=$(curl -s -X POST -d '{}' "$status/v3/maintenance/status" | sed 's/.*"revision":"\([0-9]*\)".*/\1/')
check "compaction" 200 "$(curl -s -o "$TMP/compact" -w '%{http_code}' -X POST \
    -d "{\"revision\":\"$rev\",\"physical\":true}" "$status/v3/kv/compaction")"
topo 5 >"$TMP/t5"
check "publish and activate v3 through A after the compaction" 201 "$(curl -s -o /dev/null \
    -w '%{http_code}' -H "$J" --data-binary @"$TMP/t5" "$A/v1/clusters/cache/versions?activate=true")"
wait "$poll"
check "B's poll answered after the compaction" 200 "$(cat "$TMP/poll_code")"
has "B's poll has version 3" "$TMP/poll" '"version":3'

# a migration window opened through A: B's ring names the previous version; A finishes it and a
# poll B holds with the open window's ETag wakes, B's ring has previous null and the plain ETag
ring_b() { # ring_b: B's ring of cluster win into $TMP/body, its ETag to stdout
    curl -s -D - -o "$TMP/body" "$B/v1/clusters/win/ring" | tr -d '\r' | sed -n 's/^ETag: //ip'
}
check "window: v1 through A" 201 "$(curl -s -o /dev/null -w '%{http_code}' -H "$J" \
    --data-binary @"$TMP/t3" "$A/v1/clusters/win/versions?activate=true")"
check "window: the policy through A" 200 "$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "$J" \
    --data-binary '{"migration_window":true}' "$A/v1/clusters/win/policy")"
check "window: v2 through A opens it" 201 "$(curl -s -o /dev/null -w '%{http_code}' -H "$J" \
    --data-binary @"$TMP/t4" "$A/v1/clusters/win/versions?activate=true")"
tag=$(ring_b)
has "window: B's ring names version 1" "$TMP/body" '"previous":{"version":1,'
check "window: B's ETag is the open window's" 1 "$(grep -c '^"v2+\.' <<<"$tag")"
check "window: activating through B is refused" 409 "$(curl -s -o "$TMP/body" -w '%{http_code}' \
    -H "$J" --data-binary @"$TMP/t5" "$B/v1/clusters/win/versions?activate=true")"
has "window: ... because it is open" "$TMP/body" '"code":"migration_open"'
hold_on_b win "$tag" "window: B holds the poll"
check "window: finished through A" 200 "$(curl -s -o /dev/null -w '%{http_code}' -X POST \
    "$A/v1/clusters/win/migration/finish")"
wait "$poll"
check "window: B's poll answered" 200 "$(cat "$TMP/poll_code")"
has "window: B's poll has previous null" "$TMP/poll" '"previous":null'
check "window: B's ETag is v2's without the window" "${tag/+/}" "$(ring_b)"
has "window: B's ring has previous null" "$TMP/body" '"previous":null'

# publishers racing through both replicas: 4 x 25 through each
pids=()
for w in 1 2 3 4 5 6 7 8; do
    base=$A
    [ $((w % 2)) = 0 ] && base=$B
    (for _ in $(seq 1 25); do
        curl -s -o /dev/null -w '%{http_code}\n' --max-time 30 -H "$J" --data-binary @"$TMP/t3" \
            "$base/v1/clusters/race/versions"
    done >"$TMP/codes.$w") &
    pids+=($!)
done
wait "${pids[@]}"
check "200 racing publishes got 201" 200 "$(cat "$TMP"/codes.* | grep -c '^201$')"
curl -s "$B/v1/clusters/race/versions?limit=1000" | grep -o '"version":[0-9]*' | cut -d: -f2 |
    sort -n >"$TMP/versions"
seq 1 200 >"$TMP/want"
if cmp -s "$TMP/versions" "$TMP/want"; then ok; else bad "versions are not exactly 1..200"; fi
check "events: one publish each" 200 "$(curl -s "$A/v1/clusters/race/events?limit=1000" |
    grep -o '"kind":"publish"' | wc -l)"

# the leader killed -9 while publishers run through both replicas: what was acknowledged is there,
# numbering has no gap
pids=()
for w in 1 2 3 4; do
    base=$A
    [ $((w % 2)) = 0 ] && base=$B
    (for _ in $(seq 1 30); do
        curl -s -o "$TMP/leader.$w.body" -w '%{http_code}\n' --max-time 30 -H "$J" \
            --data-binary @"$TMP/t3" "$base/v1/clusters/leader/versions"
        grep -o '"version":[0-9]*' "$TMP/leader.$w.body" | head -1 | cut -d: -f2 >>"$TMP/acked.$w"
    done >"$TMP/lcodes.$w") &
    pids+=($!)
done
until [ "$(cat "$TMP"/lcodes.* 2>/dev/null | wc -l)" -ge 20 ]; do sleep 0.05; done
leader=$(etcd_leader)
check "a leader to kill" 1 "$([ -n "$leader" ] && echo 1)"
etcd_kill "$leader"
wait "${pids[@]}"
etcd_launch "$leader" existing
etcd_wait_leader || bad "no leader after the old one came back"
curl -s "$A/v1/clusters/leader/versions?limit=1000" | grep -o '"version":[0-9]*' | cut -d: -f2 |
    sort -n >"$TMP/lversions"
n=$(wc -l <"$TMP/lversions")
seq 1 "$n" >"$TMP/lwant"
if cmp -s "$TMP/lversions" "$TMP/lwant"; then ok; else bad "leader killed: versions have a gap"; fi
grep -h '^201$' "$TMP"/lcodes.* | wc -l >"$TMP/nacked"
sort "$TMP"/acked.* | grep . >"$TMP/acked"
sort "$TMP/lversions" >"$TMP/lsorted"
check "leader killed: every acknowledged version listed once" "" \
    "$(comm -23 "$TMP/acked" "$TMP/lsorted"; uniq -d "$TMP/acked")"
check "leader killed: the 20 before the kill acknowledged at least" 1 \
    "$([ "$(cat "$TMP/nacked")" -ge 20 ] && echo 1)"
echo "leader killed: $(cat "$TMP/nacked") of 120 acknowledged, $n versions" # for the log

# one member down: nothing noticed
ring_stale() { # ring_stale: B's ring of cluster cache into $TMP/body, its RK-Stale to $TMP/stale
    curl -s -D "$TMP/ring_headers" -o "$TMP/body" -w '%{http_code}' --max-time 30 \
        "$B/v1/clusters/cache/ring"
    tr -d '\r' <"$TMP/ring_headers" | sed -n 's/^RK-Stale: //ip' >"$TMP/stale"
}
etcd_kill 0
# member 0 may have been the leader: "one member down" is the state after the election (at most 10 s)
for _ in $(seq 1 100); do etcd_leader >/dev/null && break; sleep 0.1; done
check "one member down: a leader among the other two" 1 "$(etcd_leader >/dev/null && echo 1)"
check "one member down: publish" 201 "$(curl -s -o "$TMP/body" -w '%{http_code}' -H "$J" \
    --data-binary @"$TMP/t3" "$A/v1/clusters/cache/versions")"
check "one member down: ready" 200 "$(curl -s -o /dev/null -w '%{http_code}' "$B/readyz")"
# When the member killed was the leader, B's heads read fails during the election and B says its
# ring may be stale until its next resync (0.5 s apart): it must be gone soon after, not stick.
for _ in $(seq 1 50); do
    [ "$(ring_stale)" = 200 ] && [ ! -s "$TMP/stale" ] && break
    sleep 0.1
done
check "one member down: B's ring" 200 "$(ring_stale)"
check "one member down: B's ring is not stale (within 5 s)" "" "$(cat "$TMP/stale")"

# quorum lost: two of three down
etcd_kill 1
check "no quorum: publish 503" 503 "$(curl -s -o "$TMP/body" -w '%{http_code}' --max-time 30 \
    -H "$J" --data-binary @"$TMP/t3" "$A/v1/clusters/cache/versions")"
has "no quorum: the answer names etcd" "$TMP/body" "etcd"
check "no quorum: not ready" 503 "$(curl -s -o "$TMP/body" -w '%{http_code}' --max-time 30 "$B/readyz")"
# B notices once its watch ends (etcd cancels it without a leader) and the heads cannot be read
for _ in $(seq 1 300); do
    [ "$(ring_stale)" = 200 ] && [ -s "$TMP/stale" ] && break
    sleep 0.1
done
check "no quorum: B serves the ring it has" 200 "$(ring_stale)"
has "no quorum: ... version 3" "$TMP/body" '"version":3'
check "no quorum: ... with RK-Stale" 1 \
    "$(grep -c '^etcd unreachable since [0-9-]*T[0-9:]*Z$' "$TMP/stale")"

# quorum back: writes resume without a restart
etcd_launch 0 existing
etcd_launch 1 existing
etcd_wait_leader || bad "no leader after the members came back"
check "quorum back: publish" 201 "$(curl -s -o "$TMP/body" -w '%{http_code}' --max-time 30 \
    -H "$J" --data-binary @"$TMP/t3" "$B/v1/clusters/cache/versions")"
has "quorum back: numbering went on without a gap" "$TMP/body" '"version":5'
for _ in $(seq 1 300); do
    [ "$(ring_stale)" = 200 ] && [ ! -s "$TMP/stale" ] && break
    sleep 0.1
done
check "quorum back: B's ring" 200 "$(ring_stale)"
check "quorum back: B's ring is not stale" "" "$(cat "$TMP/stale")"

kill -TERM "$A_PID"
wait "$A_PID"
check "replica A stopped cleanly" 0 "$?"
rk_stop
check "replica B stopped cleanly" 0 "$STOP_CODE"
finish
