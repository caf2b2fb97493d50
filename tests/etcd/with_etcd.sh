#!/usr/bin/env bash
# with_etcd.sh — runs COMMAND with RK_TEST_ETCD set to the endpoints of three etcd members started
# on loopback for it (tests/etcd/etcd_lib.sh), and stops them by PID afterwards. For tests in C that
# take their etcd from the environment (test_store).
# usage: with_etcd.sh COMMAND [ARGS...]
set -u
TMP=$(mktemp -d)
. "$(dirname "$0")/etcd_lib.sh"
trap 'etcd_stop_cluster; rm -rf "$TMP"' EXIT
etcd_start_cluster
RK_TEST_ETCD=$ETCD_ENDPOINTS "$@"
