#!/usr/bin/env bash
# test_dockerfile.sh — the Dockerfile's commands without a Docker engine (docs/OPERATIONS.md,
# "Container"): both stages FROM debian:12, the build stage on `install-deps.sh --build` and the
# runtime stage on `--runtime`; the build stage's RUN lines run as written in a copy of the context
# (.dockerignore applied); every library the installed binaries link directly comes from a package
# of the runtime set; the runtime stage's CMD run from what COPY --from=build takes, as a user other
# than root (nobody, when the test runs as root), its database in a fresh folder standing for the
# volume: /healthz answers, a version is published, SIGTERM stops it with 0.
# usage: test_dockerfile.sh SOURCE_DIR
src=$(cd "$1" && pwd)
. "$src/tests/server/lib.sh" /bin/true # RKD unused: this test starts the installed daemon
chmod 0711 "$TMP" # the unprivileged daemon must reach its binary and its folder in here
ctx=$TMP/src

# stage_lines STAGE INSTRUCTION: the arguments of each INSTRUCTION of STAGE (0 = build, 1 = runtime),
# one line each, continuation lines joined
stage_lines() {
    awk -v want="$1" -v instr="$2" '
        /^[[:space:]]*#/ { next }
        { line = cont $0; cont = "" }
        line ~ /\\$/ { sub(/\\$/, "", line); cont = line; next }
        line ~ /^FROM / { stage++ }
        stage - 1 == want && index(line, instr " ") == 1 { print substr(line, length(instr) + 2) }
    ' "$src/Dockerfile"
}
check "build stage base" "debian:12 AS build" "$(stage_lines 0 FROM)"
check "runtime stage base" "debian:12" "$(stage_lines 1 FROM)"
check "build stage installs the build set" 1 "$(stage_lines 0 RUN | grep -c 'install-deps.sh --build$')"
check "runtime stage installs the runtime set" 1 \
    "$(stage_lines 1 RUN | grep -c 'install-deps.sh --runtime &&')"
user=$(stage_lines 1 USER)
check "runtime user is made by the stage" 1 "$(stage_lines 1 RUN | grep -c "useradd .* $user\b")"
if [ -n "$user" ] && [ "$user" != root ] && [ "$user" != 0 ]; then ok; else bad "USER [$user]"; fi
volume=$(stage_lines 1 VOLUME)
check "the volume is the user's home" 1 "$(stage_lines 1 RUN | grep -c -- "--home-dir $volume ")"

# ---- the build stage, its RUN lines in a copy of the context ----
excludes=()
while read -r pattern; do
    [ -n "$pattern" ] && excludes+=("--exclude=./${pattern%/}")
done <"$src/.dockerignore"
mkdir "$ctx" && tar -C "$src" "${excludes[@]}" -cf - . | (umask 022 && tar -C "$ctx" -xf -)
stage_lines 0 RUN | grep -v install-deps.sh >"$TMP/build_runs"
check "build stage: two commands to run" 2 "$(wc -l <"$TMP/build_runs")"
while read -r cmd; do
    if (cd "$ctx" && umask 022 && timeout 600 sh -c "$cmd") >"$TMP/build.log" 2>&1; then ok; else
        bad "build stage: $cmd: $(tail -20 "$TMP/build.log")"
        finish
        exit
    fi
done <"$TMP/build_runs"
from=$(stage_lines 1 COPY | sed -n 's|^--from=build /src/\([^ ]*\) /usr/local/$|\1|p')
P=$ctx/$from
for f in bin/ringkeeperd bin/ringkeeper share/ringkeeper/migrations/0001_init.sql; do
    if [ -e "$P/$f" ]; then ok; else bad "not in the runtime stage: /usr/local/$f"; fi
done
if grep -q cmocka "$ctx/build-docker/CMakeCache.txt"; then bad "RK_TESTS=OFF looked for cmocka"; else ok; fi

# ---- the runtime set is enough: each library linked directly, by package ----
"$src/deploy/install-deps.sh" --runtime --list >"$TMP/runtime_set"
echo libc6 >>"$TMP/runtime_set" # in every Debian image (Essential)
for bin in "$P/bin/ringkeeperd" "$P/bin/ringkeeper"; do
    for soname in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        path=$(ldd "$bin" | awk -v s="$soname" '$1 == s { print $3 }')
        # merged /usr: dpkg knows each file under one of its two names
        pkg=$(dpkg -S "$path" 2>/dev/null || dpkg -S "/usr${path#/usr}" 2>/dev/null ||
            dpkg -S "${path#/usr}" 2>/dev/null)
        pkg=${pkg%%:*}
        if grep -qx -- "$pkg" "$TMP/runtime_set"; then ok; else
            bad "${bin##*/} needs $soname ($path) from [$pkg], not in install-deps.sh --runtime"
        fi
    done
done

# ---- the runtime stage's CMD, unprivileged, its database in a folder standing for the volume ----
mapfile -t argv < <(stage_lines 1 CMD | sed 's/^\[//; s/\]$//' | sed 's/", "/\n/g' | tr -d '"')
check "CMD runs ringkeeperd" ringkeeperd "${argv[0]}"
argv=("${argv[@]//$volume/$TMP/volume}")
argv=("${argv[@]//0.0.0.0:7070/127.0.0.1:0}")
as_user=()
if [ "$(id -u)" -eq 0 ]; then
    as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
    install -d -m 0700 -o nobody -g nogroup "$TMP/volume"
else
    install -d -m 0700 "$TMP/volume"
fi
PATH=$P/bin:$PATH "${as_user[@]}" "${argv[@]}" 2>"$TMP/server.log" &
PID=$!
for _ in $(seq 1 100); do
    PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$TMP/server.log" | head -1)
    [ -n "$PORT" ] || ! kill -0 "$PID" 2>/dev/null && break
    sleep 0.1
done
if [ -z "$PORT" ]; then
    bad "the runtime CMD did not start: $(cat "$TMP/server.log")"
    finish
    exit
fi
BASE=http://127.0.0.1:$PORT
check "runs as a user other than root" 1 "$(awk '/^Uid:/ { print ($2 != 0) }' "/proc/$PID/status")"
check "/healthz" 200 "$(req GET /healthz)"
check "publish into the volume" 201 "$(req POST /v1/clusters/c/versions \
    -H 'Content-Type: application/json' --data-binary @"$src/tests/cli/four.json")"
check "the database is the daemon's, in the volume" "$(stat -c %U "$TMP/volume")" \
    "$(stat -c %U "$TMP/volume/ringkeeper.db")"
rk_stop
check "SIGTERM: exit 0" 0 "$STOP_CODE"
finish
