#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Latency after an idle gap (docs/BENCHMARKS.md): one `rpcrdma serve` (RDMA and ONC
# RPC/TCP), and `rpcrdma ping` at intervals of 0.5 s, 50 ms, 5 ms and back to back, over
# RDMA and over libtirpc's TCP, alternating, RUNS times. Prints the average round trip in
# microseconds. With OLD_BUILD=DIR (a build or a copy of its libraries and tool, e.g. of an
# earlier commit), the same client from there too, against the same server.
# Usage: bench/idle_latency.sh BUILD_DIR [tcp|shm] [RUNS]
set -eu
B=$1
prov=${2:-tcp}
runs=${3:-3}
old=${OLD_BUILD:-}
tmp=$(mktemp -d)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
"$B/rpcrdma" serve --provider "$prov" --listen 127.0.0.1:0 --tcp 0 >"$tmp/serve" 2>&1 &
spid=$!
for _ in $(seq 100); do [ -s "$tmp/serve" ] && break; sleep 0.1; done
read -r _ port tport <"$tmp/serve"
avg() { tail -1 | sed 's|.*= [0-9.]*/\([0-9.]*\)/.*|\1|'; }
for r in $(seq "$runs"); do
	for i in 0.5 0.05 0.005 0; do
		case $i in 0.5) c=20 ;; 0.05) c=60 ;; 0.005) c=300 ;; *) c=5000 ;; esac
		line="$prov run $r -i $i:"
		if [ -n "$old" ]; then
			a=$(LD_LIBRARY_PATH="$old" "$old/rpcrdma" ping "127.0.0.1:$port" \
				--provider "$prov" -c $c -i $i | avg)
			line="$line old $a us"
		fi
		a=$("$B/rpcrdma" ping "127.0.0.1:$port" --provider "$prov" -c $c -i $i | avg)
		t=$("$B/rpcrdma" ping "127.0.0.1:$tport" --tirpc -c $c -i $i | avg)
		echo "$line rdma $a us, libtirpc $t us"
	done
done
