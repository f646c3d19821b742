#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The test command of the README: installs dependencies, builds, and runs every test
# twice — optimised, then under AddressSanitizer + UndefinedBehaviorSanitizer — with
# warnings as errors; builds against libfabric 2.1 (scripts/libfabric2.sh, a private
# prefix) and runs the tests of the layers over it; runs the VM suite (scripts/vm-test.sh:
# the verbs provider, our NFSv3 client and the kernel's NFS/RDMA over soft-RoCE under
# qemu) on the optimised build; runs
# the core's tests on a big-endian host (s390x under qemu), and fuzzes the decoder
# briefly when clang's libFuzzer is there (FUZZ_SECONDS, default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

echo "== build and test (optimised)"
BUILD_DIR=build scripts/build.sh -DRPCRDMA_WERROR=ON
(cd build && ctest --output-on-failure -j"$(nproc)")

echo "== against libfabric 2.1 (built into a private prefix; the system's 1.17 stays)"
# the layers over libfabric: providers, engine, RPC, examples, hostile peers, capture,
# install (docs/BUILD.md)
lf2=$(scripts/libfabric2.sh | tail -n 1)
PKG_CONFIG_PATH="$lf2/lib/pkgconfig" BUILD_DIR=build-lf2 scripts/build.sh -DRPCRDMA_WERROR=ON
(cd build-lf2 && ctest --output-on-failure -j"$(nproc)" \
	-R '^(prov_|test_prov|test_fabric_env|test_shm|test_keys|test_engine|engine_e2e|rpc_|test_allocs|test_budget|test_spin|test_drc|conn_parallel|nfs3_|nfs4_|example_|hostile_tcp|hostile_shm|capture_|install_prefix)')
# the build against 1.17 running with 2.1 picked at run time (RPCRDMA_LIBFABRIC,
# docs/PROVIDERS.md): what users without psm's start-up cost do
(cd build && RPCRDMA_LIBFABRIC="$lf2/lib/libfabric.so.1" ctest --output-on-failure \
	-R '^(prov_tcp|prov_shm|rpc_inline|nfs3_tcp|nfs3_shm|cli_perf_shm|test_fabric_env\..*)$')

echo "== the verbs provider on a real RDMA stack: soft-RoCE and the kernel's NFS/RDMA in a VM"
# CI must run it: there a VM that cannot start is a failure, not a skip
[ "${CI:-}" = true ] && export RPCRDMA_VM_REQUIRED=1
rc=0
BUILD_DIR=build scripts/vm-test.sh || rc=$?
[ $rc -eq 0 ] || [ $rc -eq 77 ] || exit $rc

echo "== build and test (ASan + UBSan)"
BUILD_DIR=build-asan scripts/build.sh -DRPCRDMA_WERROR=ON -DRPCRDMA_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
# (not cli_perf_*: a minute of throughput figures, meaningless under ASan; the perf tool's
# data path runs under ASan in liars_* (perf --check: every byte) and cli_operator)
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$(nproc)" -E '^cli_perf_')

echo "== the protocol core on a big-endian host (s390x under qemu-user)"
scripts/cross_s390x.sh

scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
