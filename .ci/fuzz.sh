#!/usr/bin/env bash
# fuzz.sh — builds the libFuzzer harnesses (tests/fuzz) with clang, ASan and UBSan, and runs each
# for RK_FUZZ_SECONDS (default 60) on a copy of its corpus; fails when any harness crashes and says
# where the crashing input is (add it to tests/fuzz/corpus/<harness>/ once the bug is fixed).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${RK_FUZZ_SECONDS:-60}
build=${RK_FUZZ_BUILD:-build-fuzz}
harnesses=(fuzz_topology fuzz_verify fuzz_plan fuzz_api fuzz_formats)

CC=${CC:-clang-14} cmake -S . -B "$build" -DRK_FUZZ=ON -DRK_BENCH=OFF >/dev/null
cmake --build "$build" -j2 --target "${harnesses[@]}" >/dev/null

failed=0
for h in "${harnesses[@]}"; do
    work="$build/fuzz-run/$h"
    rm -rf "$work"
    mkdir -p "$work/corpus" "$work/artifacts"
    cp tests/fuzz/corpus/"$h"/* "$work/corpus/"
    echo "+ $h for ${seconds}s"
    if ! "$build/tests/fuzz/$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" \
        >"$work/log" 2>&1; then
        failed=1
        tail -n 40 "$work/log"
        echo "fuzz: $h crashed; its input: $(ls "$work"/artifacts/* 2>/dev/null | tr '\n' ' ')" >&2
        continue
    fi
    grep -E '^(stat::number_of_executed_units|Done)|DONE' "$work/log" | tr '\n' ' '
    echo
done
[ "$failed" -eq 0 ] || { echo "fuzz: a harness crashed (logs in $build/fuzz-run/)" >&2; exit 1; }
echo "fuzz: ${#harnesses[@]} harnesses ran ${seconds}s each without a crash"
