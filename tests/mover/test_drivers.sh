#!/usr/bin/env bash
# test_drivers.sh — the mover's data-store drivers against real servers: starts two memcached and
# two redis-server (a source and a destination of each) on free loopback ports, runs test_drivers
# against them, and stops them on exit. A third memcached closes connections idle for a second
# (the drivers must reconnect); a sixth port, left closed, is the dead server.
# Skips (77) only when memcached or redis-server is not installed (deploy/install-deps.sh).
# usage: test_drivers.sh TEST_DRIVERS [WRAPPER...]   (WRAPPER: e.g. valgrind --leak-check=full)
set -u
BIN=$1
shift
# shellcheck source=servers.sh
. "$(dirname "$0")/servers.sh"

rkm_ports 6
rkm_memcached "${PORTS[0]}"
rkm_memcached "${PORTS[1]}"
rkm_memcached "${PORTS[4]}" -o idle_timeout=1
rkm_redis "${PORTS[2]}"
rkm_redis "${PORTS[3]}"
rkm_up "${PORTS[@]:0:5}" || exit 1

RKM_MEMCACHED_SRC=127.0.0.1:${PORTS[0]} RKM_MEMCACHED_DST=127.0.0.1:${PORTS[1]} \
    RKM_REDIS_SRC=127.0.0.1:${PORTS[2]} RKM_REDIS_DST=127.0.0.1:${PORTS[3]} \
    RKM_MEMCACHED_IDLE=127.0.0.1:${PORTS[4]} RKM_DEAD=127.0.0.1:${PORTS[5]} "$@" "$BIN"
