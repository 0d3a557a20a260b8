#!/usr/bin/env bash
# Installs the Debian packages carma needs to build and test, when they are missing.
# Used by `make run` and `make test`; safe to run again (it installs only what is missing).
set -euo pipefail

packages=(
    gcc make meson ninja-build pkg-config python3    # build
    libjansson-dev                                   # JSON (reading with line/column errors)
    libssl-dev                                       # libcrypto: SHA-256 of exported files
    libmicrohttpd-dev                                # HTTP server (carma exporter)
    libcurl4-openssl-dev                             # HTTP client (carma collect)
    libgsl-dev                                       # least squares (carma model fit)
    libsqlite3-dev                                   # Nsight Systems exports (carma import-nsys)
)
# what the tests need besides (scripts/deps.sh --test)
test_packages=(
    libcmocka-dev                                    # unit tests
    clang-format                                     # format check
    clang libclang-rt-14-dev                         # libFuzzer (fuzz/)
    prometheus                                       # promtool and a real Prometheus server
    curl                                             # HTTP requests in the tests
    slurm-wlm                                        # a single-node Slurm cluster (test_slurm)
    python3-numpy                                    # the report's references (numpy's sums, percentiles)
    chromium                                         # headless: opens the HTML report (test_html)
    tmux                                             # a terminal for the live view (test_live)
    iproute2                                         # ip netns: several hosts (test_multihost, test_slurm_2node)
    liburing-dev                                     # io_uring batch reads beside pread (bench/uring)
)
if [ "${1:-}" = "--test" ]; then
    packages+=("${test_packages[@]}")
    shift
fi
if [ "${1:-}" = "--print" ]; then
    printf '%s\n' "${packages[@]}"
    exit 0
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "carma: installing missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    echo "carma: not root and no sudo: install these packages first: ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
