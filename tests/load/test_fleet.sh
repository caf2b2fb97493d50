#!/usr/bin/env bash
# test_fleet.sh — a fleet converging (docs/PERFORMANCE.md, "A fleet converging"), loopback only:
# RK_FLEET_CLIENTS (default 10000) clients long-poll one cluster, each with its own RK-Client id;
# then one activation. Each client answered polls again at once, as the library does: 1% of them
# refusing the new ring. rk_fleet checks that every poll is answered 200 with the new version, that
# GET .../clients comes to count the others at it and the refusers at the old one, refusing (a ring
# sent is not a ring held), that the server lets go of the polls once the fleet closes its
# connections, then, over three more rounds, the same counts, never converged, and that the
# refusers are sent no byte of the ring they refused; and that ringkeeperd's RSS per held client
# stays under a generous bound (RK_FLEET_RSS bytes, default 65536; 0 drops it, for a sanitizer
# build whose memory grows by design), with the polls held on fresh connections and again after
# the wave, when each connection has served a request and holds all of its --header-buffer
# (RK_FLEET_HEADER_BUFFER bytes, default the server's). It prints the RSS per client, the time until the fleet
# report counts every client, the server's CPU per client meanwhile and what a client's own
# verification of the ring costs: figures, not checked.
# usage: test_fleet.sh RINGKEEPERD RK_FLEET
. "$(dirname "$0")/../server/lib.sh" "$1"
FLEET=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
N=${RK_FLEET_CLIENTS:-10000}
RSS=${RK_FLEET_RSS:-65536}
[ "$RSS" = 0 ] && RSS=1073741824
# One descriptor per poll here and in the server (which raises its own limit for
# --max-connections): both need the soft limit above N.
need=$((N + 512)) # the polls, 256 other connections, the server's own descriptors
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt "$need" ]; then
    echo "SKIP: ulimit -Hn is $(ulimit -Hn), under the $need descriptors $N clients need"
    exit 77
fi
ulimit -n "$need"
# All polls come from 127.0.0.1: the per-address limit must let them in. Held polls have a share
# of their own, beside --max-connections: a fleet of N watchers needs --max-polls N, and, as they
# all connect at once (a connection is a short one until its poll is held), N connections too.
# Both limits together would want 2N descriptors; N + 512 are enough for what is open at once.
# rk_fleet's own requests (the fleet report, asked every 2 ms) come on top: at exactly N, one of
# them arriving while the fleet's connections are between an answer and their next poll makes the
# server evict an idle one of the fleet (its slowloris rule), and that client's poll ends.
rk_start --threads 2 --max-connections "$((N + 64))" --max-polls "$N" --max-connections-per-address "$need" \
    ${RK_FLEET_HEADER_BUFFER:+--header-buffer "$RK_FLEET_HEADER_BUFFER"}
topo 3 >"$TMP/t"
check "publish v1" 201 "$(req POST '/v1/clusters/fleet/versions?activate=true' \
    -H 'Content-Type: application/json' --data-binary @"$TMP/t")"
"$FLEET" --url "$BASE" --cluster fleet --clients "$N" --pid "$PID" --rss-per-client "$RSS" \
    --refusers $((N / 100)) >"$TMP/fleet.out" 2>&1
code=$?
cat "$TMP/fleet.out"
check "rk_fleet exit code" 0 "$code"
rk_stop
check "stopped cleanly" 0 "$STOP_CODE"
finish
