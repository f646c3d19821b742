#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The main job of the README: install, build, show the codec at work on the bundled sample
# messages, the providers, and the transport engine between two processes over tcp
# and the built-in RPC service with serve, ping and perf.
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
echo
echo "== rpcrdma serve, and a client using every message form: inline, read chunks (WRITE),"
echo "   write chunks (READ), long call and long reply (ECHO of 512 KiB, no binding)"
log=$(mktemp)
build/rpcrdma serve --listen 127.0.0.1:0 --tcp 0 >"$log" &
spid=$!
trap 'kill $spid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 50); do grep -q listening "$log" && break; sleep 0.1; done
read -r _ rport tport <"$log"
build/rpcrdma ping "127.0.0.1:$rport" -c 3 -i 0.2
build/rpcrdma perf "127.0.0.1:$rport" --ops null,read,write,echo --sizes 100,512k --depths 1 \
	--seconds 0.2 --check
kill -USR1 $spid
sleep 0.5
sed -n '/statistics/,$p' "$log"
echo
echo "== the same traffic as Wireshark sees it: perf's side captured with --pcap as RoCEv2"
echo "   frames (docs/CAPTURE.md), read back by tshark and by rpcrdma decode --pcap"
cap=$(mktemp --suffix=.pcap)
trap 'kill $spid 2>/dev/null; rm -f "$log" "$cap"' EXIT
build/rpcrdma perf "127.0.0.1:$rport" --ops read,write --sizes 64k --depths 1 --seconds 0.05 \
	--pcap "$cap" 2>&1 >/dev/null
if command -v tshark >/dev/null; then
	tshark -2 -o rpc.dissect_unknown_programs:TRUE -r "$cap" 2>/dev/null |
		grep -m 12 -E 'CM:|proc-[23]|Read Re|Write First' || true
else
	echo "   (tshark is not installed: scripts/setup.sh installs it when it can)"
fi
build/rpcrdma decode --pcap "$cap" | grep -m 1 -B 3 -A 3 '^    position' || true
echo
echo "== rpcrdma perf --compare: RPC-over-RDMA (libfabric tcp) against ONC RPC/TCP (libtirpc)"
echo "   and the raw provider, on loopback (about 15 s)"
build/rpcrdma perf "127.0.0.1:$rport" --tcp-port "$tport" --compare --seconds 0.25
echo
echo "== large opaques without a binding (echo: long calls and replies) against ONC RPC/TCP,"
echo "   with glibc's heap kept (GLIBC_TUNABLES: top_pad 64 MiB, mmap_threshold 32 MiB): by"
echo "   default both transports fault in fresh pages per call (docs/TUNING.md)"
echo "   (perf's own server, so that it runs with the same setting)"
GLIBC_TUNABLES=glibc.malloc.top_pad=67108864:glibc.malloc.mmap_threshold=33554432 \
	build/rpcrdma perf --compare --ops echo \
	--sizes 1m,8m --depths 1 --seconds 0.5
