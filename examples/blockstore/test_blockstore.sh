#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The block store example over plain TCP, RDMA on libfabric tcp, and RDMA on shm (or the
# providers in $EXAMPLE_PROVIDERS: verbs in the VM suite): the client prints what it read
# back; every run must print the same. Usage: test_blockstore.sh BINDIR
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

example_providers
rc=0
runs=tcp
for p in $PROVS; do runs="$runs rdma:$p"; done
for run in $runs; do
	kind=${run%%:*}
	prov=${run#*:}
	[ "$kind" = tcp ] && prov=
	start_server "$out/server.$kind$prov" "$BIN/bs_server_$kind" $prov
	pids+=("$spid")
	timeout 120 "$BIN/bs_client_$kind" "$H" "$port" $prov >"$out/$kind$prov" || rc=1
	echo "== $run"
	cat "$out/$kind$prov"
done
for p in $PROVS; do
	diff "$out/tcp" "$out/rdma$p" || { echo "outputs differ: RDMA/$p and TCP"; rc=1; }
done
[ $rc -eq 0 ] && echo "same results over TCP and RDMA/${PROVS// /, RDMA/}"
exit $rc
