#!/usr/bin/env bash
# The test command of the README: installs dependencies, builds, and runs every test
# twice — optimised, then under AddressSanitizer + UndefinedBehaviorSanitizer — and
# fuzzes the decoder briefly when clang's libFuzzer is there (FUZZ_SECONDS, default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

echo "== build and test (optimised)"
BUILD_DIR=build scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc)")

echo "== build and test (ASan + UBSan)"
BUILD_DIR=build-asan scripts/build.sh -DRPCRDMA_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$(nproc)")

scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
