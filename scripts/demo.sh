#!/usr/bin/env bash
# The main job of the README: install, build, show the codec at work on the bundled sample
# messages, the providers, and the transport engine between two processes over tcp
# (later: the live RPC demo).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD_DIR=build scripts/build.sh >/dev/null
echo "== rpcrdma decode < samples/messages.hex"
build/rpcrdma decode < samples/messages.hex
echo
echo "== the same messages as JSON"
build/rpcrdma decode --json < samples/messages.hex
echo
echo "== a malformed message (read chunks overlap) gets the RFC's answer"
build/rpcrdma decode --json \
	0000000100000001000000010000000000000001000000300000000100000064000000000000000000000001000000900000000200000008000000000000000000000000000000000000000000000001000000000000000200000001000000010000000100000000000000000000000000000000 || true
echo
echo "== codec speed"
build/bench_codec
echo
echo "== RDMA providers usable here (rpcrdma info)"
build/rpcrdma info
echo
echo "== raw provider layer over loopback (bench_prov, 0.3 s per figure)"
build/bench_prov --seconds 0.3
echo
echo "== the transport engine: two processes over libfabric tcp, 72 echo calls (0 B .. 16 MiB,"
echo "   inline / read chunk / write chunk / reply chunk / long call), 32 in flight"
bash tests/test_engine_e2e.sh build/engine_peer tcp 1024
echo
echo "== an unmodified rpcgen program (examples/blockstore) over TCP, RDMA/tcp and RDMA/shm"
bash examples/blockstore/test_blockstore.sh build
