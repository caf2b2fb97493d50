#!/usr/bin/env bash
# extra-checks.sh — the checks beyond ASan+UBSan: ThreadSanitizer on the tests that race threads
# against each other and on the server under load, and valgrind's leak check on the CLI and on a
# real server run.
# Run from .ci/run after the normal build (it reuses build/ for the valgrind part).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "+ ThreadSanitizer: client snapshots under refresh, API caches under activation, concurrent"
echo "  publishers in the store, ring builds on two threads"
cmake -S . -B build-tsan -DRK_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
    -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build build-tsan -j2 --target test_client test_api test_auth test_metrics test_store \
    test_clients test_ring ringkeeperd rk_load ringkeeper_cli >/dev/null
# gcc 12's ThreadSanitizer maps its shadow at fixed addresses, which a kernel placing mappings with
# more random bits (vm.mmap_rnd_bits 32, as newer machines set it) can take first: the program
# then dies at start ("unexpected memory mapping") whatever its code. Without address
# randomization (setarch -R, inherited by every process the tests start) the layout is the one
# TSan expects on any machine.
tsan=(setarch "$(uname -m)" -R env TSAN_OPTIONS=halt_on_error=1)
"${tsan[@]}" ctest --test-dir build-tsan --output-on-failure \
    -R '^(test_client|test_api|test_auth|test_metrics|test_store|test_clients|test_ring)$'

echo "+ ThreadSanitizer: ringkeeperd under the mixed load and kill rounds, shortened"
"${tsan[@]}" RK_LOAD_SANITIZER=tsan \
    tests/load/test_load.sh build-tsan/server/ringkeeperd build-tsan/tests/load/rk_load

echo "+ ThreadSanitizer: ring polls and watchers of changes held, woken by changes and activations"
"${tsan[@]}" tests/server/test_longpoll.sh build-tsan/server/ringkeeperd

echo "+ ThreadSanitizer: ringkeeperd driving a rollout (its driver thread beside the HTTP threads)"
"${tsan[@]}" tests/server/test_rollout_drive.sh build-tsan/server/ringkeeperd .

echo "+ ThreadSanitizer: ringkeeper agent (its refresher, /metrics and signal threads) beside real proxies"
"${tsan[@]}" /usr/bin/python3 tests/agent/test_agent.py build-tsan/server/ringkeeperd \
    build-tsan/client/ringkeeper

echo "+ valgrind: the CLI"
vg=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99)
cli=build/client/ringkeeper
"${vg[@]}" "$cli" plan --from-file tests/cli/four.json --to-file tests/cli/five.json \
    --max-step 0.05 --keys 1000 --format json >/dev/null
printf 'user:1\nuser:2\n\n' | "${vg[@]}" "$cli" lookup --topology tests/cli/five.json --replicas 2 >/dev/null
seq -f 'k%g' 1 2000 >build/keys.txt
"${vg[@]}" "$cli" simulate --keys build/keys.txt --from-file tests/cli/four.json \
    --to-file tests/cli/five.json >/dev/null
if "${vg[@]}" "$cli" plan --from-file tests/cli/four.json --to-file tests/cli/lookups/three-fnv.json \
    >/dev/null 2>&1; then
    echo "a refused plan exited 0" >&2
    exit 1
elif [ $? -eq 99 ]; then
    echo "valgrind found errors in a refused plan" >&2
    exit 1
fi

echo "+ valgrind: a server run (every route, then SIGTERM; leaks make its exit code non-zero)"
wrapper=$(mktemp)
trap 'rm -f "$wrapper"' EXIT
printf '#!/bin/sh\nexec valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99 %s "$@"\n' \
    "$PWD/build/server/ringkeeperd" >"$wrapper"
chmod +x "$wrapper"
tests/server/test_routes.sh "$wrapper"
