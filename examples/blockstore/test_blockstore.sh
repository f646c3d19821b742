#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The block store example over plain TCP, RDMA on libfabric tcp, and RDMA on shm: the
# client prints what it read back; all three must print the same.
# Usage: test_blockstore.sh BINDIR
set -u
BIN=$1
out=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$out"
}
trap cleanup EXIT
. "$(dirname "$0")/../../tests/peer_lib.sh"

rc=0
for run in tcp rdma:tcp rdma:shm; do
	kind=${run%%:*}
	prov=${run#*:}
	[ "$kind" = tcp ] && prov=
	start_server "$out/server.$kind$prov" "$BIN/bs_server_$kind" $prov
	pids+=("$spid")
	timeout 120 "$BIN/bs_client_$kind" 127.0.0.1 "$port" $prov >"$out/$kind$prov" || rc=1
	echo "== $run"
	cat "$out/$kind$prov"
done
diff "$out/tcp" "$out/rdmatcp" && diff "$out/tcp" "$out/rdmashm" || { echo "outputs differ"; rc=1; }
[ $rc -eq 0 ] && echo "same results over TCP, RDMA/tcp and RDMA/shm"
exit $rc
