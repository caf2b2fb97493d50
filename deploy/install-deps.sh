#!/usr/bin/env bash
# install-deps.sh — installs ringkeeper's Debian packages; safe to run again. Three sets, each the
# one before and more:
#   --runtime  what ringkeeperd and the ringkeeper CLI need to run (the Dockerfile's runtime stage)
#   --build    and what building them needs: `cmake -DRK_TESTS=OFF -DRK_BENCH=OFF` (the Dockerfile)
#   (none)     and everything developers and CI use: tests, fuzzing, benchmarks, the ketama oracle
# --list prints the chosen set, one package a line, and installs nothing (tests/deploy reads it).
set -euo pipefail
usage() {
    echo "usage: install-deps.sh [--runtime | --build] [--list]" >&2
    exit 2
}
runtime=(
    libjansson4 libxxhash0 libnettle8 # ring library: JSON, XXH3, MD5
    libunistring2                     # ring library: Unicode properties (what ids may hold)
    zlib1g                            # ring library: the ketama scheme's crc32 hashes
    libyaml-0-2                       # CLI: import/export of twemproxy pools
    libcurl4                          # the library's client: HTTP(S) to ringkeeperd
    libsqlite3-0 libmicrohttpd12      # ringkeeperd: its store and its HTTP server
    libmemcached11 libhiredis0.14     # CLI: `ringkeeper migrate`, the data mover's drivers
)
build=(
    build-essential cmake pkg-config
    libjansson-dev libxxhash-dev nettle-dev zlib1g-dev libyaml-dev libcurl4-openssl-dev
    libunistring-dev
    libsqlite3-dev libmicrohttpd-dev
    libmemcached-dev libhiredis-dev  # the data mover (client/mover), in `ringkeeper migrate`
    help2man                         # the man pages, made from the --help texts (deploy/man)
)
develop=(
    git clang-format
    curl sqlite3 openssl             # integration tests (TLS certificates made at test time)
    man-db groff-base                # the man pages' test renders them
    iproute2                         # ss: tests read the kernel memory of the server's sockets
    etcd-server etcd-client          # the etcd store's tests: three members on loopback, etcdctl
    valgrind                         # leak checks of the CLI and a server run (.ci)
    libcmocka-dev                    # unit tests
    clang-14 libclang-rt-14-dev      # fuzzing (.ci/fuzz.sh: libFuzzer)
    nutcracker memcached python3     # ketama oracle test: a real twemproxy and memcached
    redis-server                     # the data mover's tests (and memcached's)
    nginx                            # the nginx scheme's oracle test: a real nginx balancing
    haproxy                          # the haproxy scheme's oracle test: a real HAProxy balancing
    python3-cffi python3-dev python3-setuptools python3-wheel python3-venv python3-pytest \
                                     # the Python binding (client/python), built and tested
    golang-go                        # the Go binding (client/go): go vet, go test -race
    wrk                              # server benchmark (tests/bench/bench_server.sh)
    chromium nodejs                  # the console's browser test (tests/console)
    libnghttp2-dev libidn2-dev librtmp-dev libssh2-1-dev libpsl-dev libssl-dev libkrb5-dev \
    libldap-dev libzstd-dev libbrotli-dev # libcurl's private libraries: `pkg-config --static`
)
set_name=all list=
for arg in "$@"; do
    case $arg in
    --runtime | --build) [ "$set_name" = all ] || usage; set_name=${arg#--} ;;
    --list) list=1 ;;
    *) echo "install-deps.sh: unknown argument '$arg'" >&2; usage ;;
    esac
done
packages=("${runtime[@]}")
[ "$set_name" = runtime ] || packages+=("${build[@]}")
[ "$set_name" != all ] || packages+=("${develop[@]}")
if [ -n "$list" ]; then
    printf '%s\n' "${packages[@]}"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    exec sudo "$0" "$@"
fi
[ "$set_name" != all ] || command -v npm >/dev/null || packages+=(npm) # NodeSource's nodejs has one
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
if [ "$set_name" = all ]; then
    # puppeteer-core for the console's browser test, at the version package-lock.json pins; it
    # drives the system chromium and downloads no browser.
    npm ci --prefix "$(dirname "$0")/../tests/console" --ignore-scripts --no-audit --no-fund >/dev/null
    # grpc-js-xds, whose own ring_hash balancer is the grpc_ring_hash scheme's oracle
    # (tests/envoy/test_grpc_oracle.py), at the versions tests/envoy/package-lock.json pins
    npm ci --prefix "$(dirname "$0")/../tests/envoy" --ignore-scripts --no-audit --no-fund >/dev/null
fi
echo "install-deps: ${#packages[@]} packages present ($set_name)"
