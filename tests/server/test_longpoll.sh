#!/usr/bin/env bash
# test_longpoll.sh — GET /ring?wait: held without a worker thread each (200 waiting clients do not
# stop other requests), woken by an activation, 304 when the wait ends with nothing new; and GET
# .../changes?wait beside them: woken by any change, which leaves the ring polls held; and the polls
# of clients that closed their connection while held let go of within seconds.
# usage: test_longpoll.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
rk_start --threads 2
J='Content-Type: application/json'
topo 3 >"$TMP/t"
check "publish+activate v1" 201 "$(req POST '/v1/clusters/lp/versions?activate=true' -H "$J" --data-binary @"$TMP/t")"

check "the ring" 200 "$(req GET /v1/clusters/lp/ring)"
tag=$(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')

# a wait that ends with nothing new: 304 after about S seconds; a bare "v1" (an older client's,
# which may name a ring lost in a restore) waits as long but then gets the ring, never a 304
for inm in "$tag" '"v1"'; do
    want=$([ "$inm" = "$tag" ] && echo 304 || echo 200)
    start=$(date +%s%N)
    check "wait timeout with $inm" "$want" "$(req GET '/v1/clusters/lp/ring?wait=1' -H "If-None-Match: $inm")"
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    if [ "$ms" -ge 900 ] && [ "$ms" -lt 5000 ]; then ok; else bad "wait=1 with $inm took ${ms} ms"; fi
done

# 200 clients wait at once on 2 worker threads
pids=()
for i in $(seq 1 200); do
    curl -s -o /dev/null -w '%{http_code}\n' --max-time 70 -H "If-None-Match: $tag" \
        "$BASE/v1/clusters/lp/ring?wait=30" >"$TMP/wait.$i" &
    pids+=($!)
done
polls_held "200 polls held" 200
start=$(date +%s%N)
check "healthz while 200 wait" 200 "$(req GET /healthz)"
check "publish while 200 wait" 201 "$(req POST /v1/clusters/lp/versions -H "$J" --data-binary @"$TMP/t")"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ "$ms" -lt 1000 ]; then ok; else bad "answers took ${ms} ms while polls waited"; fi

# an activation wakes them all with the new ring
check "activate v2" 200 "$(req POST /v1/clusters/lp/versions/2/activate)"
wait "${pids[@]}" # not a bare wait: the server is a job of this shell too
check "all 200 woken with 200" 200 "$(cat "$TMP"/wait.* | grep -c '^200$')"
# Watchers of the cluster's changes (GET .../changes, the console's live panels) beside ring polls:
# a change that is no activation (a client's first fetch) answers the watchers and leaves the ring
# polls held; an activation answers both.
check "the ring of v2" 200 "$(req GET /v1/clusters/lp/ring)"
tag=$(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')
check "the change counter" 200 "$(req GET /v1/clusters/lp/changes)"
seq=$(sed 's/.*"seq": *\([0-9]*\).*/\1/' "$TMP/body")
rm -f "$TMP"/wait.* "$TMP"/watch.*
pids=()
for i in $(seq 1 20); do
    curl -s -o "$TMP/watch.$i" --max-time 70 "$BASE/v1/clusters/lp/changes?since=$seq&wait=30" &
    pids+=($!)
    curl -s -o /dev/null -w '%{http_code}\n' --max-time 70 -H "If-None-Match: $tag" \
        "$BASE/v1/clusters/lp/ring?wait=30" >"$TMP/wait.$i" &
    rings+=($!)
done
polls_held "20 watchers and 20 ring polls held" 40
check "a client's first fetch" 200 "$(req GET /v1/clusters/lp/ring -H 'RK-Client: newcomer')"
wait "${pids[@]}"
check "every watcher answered with the next count" 20 "$(grep -l "\"seq\": *$((seq + 1))," "$TMP"/watch.* | wc -l)"
polls_held "the ring polls still held" 20
check "publish v3" 201 "$(req POST /v1/clusters/lp/versions -H "$J" --data-binary @"$TMP/t")"
check "activate v3" 200 "$(req POST /v1/clusters/lp/versions/3/activate)"
wait "${rings[@]}"
check "the ring polls woken by the activation" 20 "$(cat "$TMP"/wait.* | grep -c '^200$')"
# Clients that leave while held (a fleet restarting): a held connection is not read, so the server
# looks for them about once a second and lets their polls go, not at their deadline (30 s here).
check "the ring of v3" 200 "$(req GET /v1/clusters/lp/ring)"
tag=$(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')
gone=()
for i in $(seq 1 10); do
    curl -s -o /dev/null --max-time 70 -H "If-None-Match: $tag" "$BASE/v1/clusters/lp/ring?wait=30" &
    gone+=($!)
    curl -s -o /dev/null --max-time 70 "$BASE/v1/clusters/lp/changes?since=$((seq + 3))&wait=30" &
    gone+=($!)
done
polls_held "10 ring polls and 10 watchers held" 20
{
    kill -9 "${gone[@]}"
    wait "${gone[@]}"
} 2>/dev/null # no "Killed" lines
start=$(date +%s%N)
polls_held "the polls of the clients gone let go of" 0
echo "the polls of the clients gone: let go of within $(( ($(date +%s%N) - start) / 1000000 )) ms"
check "the ring after they left" 200 "$(req GET /v1/clusters/lp/ring)"
rk_stop
check "stopped cleanly" 0 "$STOP_CODE"
finish
