#!/usr/bin/env bash
# test_copy.sh — the mover's copy engine against real servers: starts four memcached and four
# redis-server on free loopback ports, the data servers of a cluster growing from three nodes to
# four, once per store, runs test_copy against them and stops them on exit.
# Skips (77) only when memcached or redis-server is not installed (deploy/install-deps.sh).
# usage: test_copy.sh TEST_COPY [WRAPPER...]   (WRAPPER: e.g. valgrind --leak-check=full)
set -u
BIN=$1
shift
# shellcheck source=servers.sh
. "$(dirname "$0")/servers.sh"

rkm_ports 8
MC=() RD=()
# the LRU maintainer runs, as in production: the driver's scan (`metadump hash`) must see every
# key however it reorders the LRU lists (docs/MIGRATE.md, "memcached's scan and its LRU segments")
for p in "${PORTS[@]:0:4}"; do
    rkm_memcached "$p"
    MC+=("127.0.0.1:$p")
done
for p in "${PORTS[@]:4:4}"; do
    rkm_redis "$p"
    RD+=("127.0.0.1:$p")
done
rkm_up "${PORTS[@]}" || exit 1

RKM_MEMCACHED_NODES=$(IFS=,; echo "${MC[*]}") RKM_REDIS_NODES=$(IFS=,; echo "${RD[*]}") "$@" "$BIN"
