#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Instructions per encode and per decode of a typical RDMA_MSG call with one write chunk
# (an NFS READ: 52-byte header, 68-byte RPC body), counted by callgrind inside
# rpcrdma_encode / rpcrdma_decode only (--toggle-collect), divided by the iterations.
# Deterministic for a given binary. Usage: scripts/callgrind-codec.sh [BUILD_DIR] [--json]
set -euo pipefail
build=${1:-build}
json=${2:-}
iters=100000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # function
	valgrind --tool=callgrind --toggle-collect="$1" --callgrind-out-file="$tmp/cg.$1" \
		"$build/bench_codec" --iters $iters >/dev/null 2>"$tmp/log.$1"
	local n
	n=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/log.$1")
	echo $(( (n + iters / 2) / iters ))
}
enc=$(count rpcrdma_encode)
dec=$(count rpcrdma_decode)
if [ "$json" = --json ]; then
	echo "{\"bench\":\"codec_msg_1write_instructions\",\"encode\":$enc,\"decode\":$dec,\"total\":$((enc + dec))}"
else
	echo "instructions, RDMA_MSG with one write chunk: encode $enc + decode $dec = $((enc + dec))"
fi
