#!/usr/bin/env bash
# install-deps.sh — installs everything ringkeeper needs to build, test and benchmark, from Debian
# packages. Used by the README's set-up commands and by .ci/run; safe to run again.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
    exec sudo "$0" "$@"
fi
packages=(
    build-essential cmake pkg-config git clang-format
    libjansson-dev libxxhash-dev nettle-dev # ring library: JSON, XXH3, MD5
    zlib1g-dev                              # ring library: the ketama scheme's crc32 hashes
    libyaml-dev                             # CLI: import/export of twemproxy pools
    libcurl4-openssl-dev                    # the library's client: HTTP(S) to ringkeeperd
    libsqlite3-dev libmicrohttpd-dev        # ringkeeperd: its store and its HTTP server
    curl sqlite3 openssl                    # integration tests (TLS certificates made at test time)
    valgrind                                # leak checks of the CLI and a server run (.ci)
    libcmocka-dev                           # unit tests
    clang-14 libclang-rt-14-dev             # fuzzing (.ci/fuzz.sh: libFuzzer)
    libmemcached-dev                        # ketama peer: its test and the benchmark
    nutcracker memcached python3            # ketama oracle test: a real twemproxy and memcached
    wrk                                     # server benchmark (tests/bench/bench_server.sh)
    chromium nodejs                         # the console's browser test (tests/console)
)
command -v npm >/dev/null || packages+=(npm) # NodeSource's nodejs carries its own npm
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
# puppeteer-core for the console's browser test, at the version package-lock.json pins; it drives
# the system chromium and downloads no browser.
npm ci --prefix "$(dirname "$0")/../tests/console" --ignore-scripts --no-audit --no-fund >/dev/null
echo "install-deps: ${#packages[@]} packages present"
