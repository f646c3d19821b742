#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The NFSv2 example over ONC RPC/TCP, RPC-over-RDMA on libfabric tcp, and on shm (or the
# providers in $EXAMPLE_PROVIDERS: verbs in the VM suite): for each,
# one server (svc_run), four client processes at once and one client of eight threads
# sharing one CLIENT *; every transcript must be byte-identical across the three.
# Usage: test_nfs2.sh BINDIR
set -u
BIN=$1
out=$(mktemp -d)
spid=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
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
	name=$kind$prov
	[ "$kind" = tcp ] && name=tcp
	rm -f "$out/stop"
	mkfifo "$out/stop"
	exec 3<>"$out/stop"
	RPCRDMA_PROVIDER=$prov RPCRDMA_PORT=0 "$BIN/nfs2_server_$kind" <"$out/stop" \
		>"$out/server.$name" 2>&1 &
	spid=$!
	for _ in $(seq 100); do
		grep -q '^listening' "$out/server.$name" && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	port=$(sed -n 's/^listening //p' "$out/server.$name")
	[ -n "$port" ] || { cat "$out/server.$name"; echo "FAIL: no server for $run"; exit 1; }
	pids=()
	for i in 1 2 3 4; do
		RPCRDMA_PROVIDER=$prov timeout 300 "$BIN/nfs2_client_$kind" "$H" "$port" \
			work "p$i" >"$out/$name.p$i" 2>&1 &
		pids+=($!)
	done
	RPCRDMA_PROVIDER=$prov timeout 300 "$BIN/nfs2_client_$kind" "$H" "$port" \
		threads mt 8 >"$out/$name.mt" 2>&1 &
	pids+=($!)
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	echo quit >&3
	wait "$spid" || { echo "FAIL: the $run server did not exit cleanly"; rc=1; }
	spid=
	exec 3>&-
	cat "$out/$name".p1 "$out/$name".p2 "$out/$name".p3 "$out/$name".p4 "$out/$name".mt \
		>"$out/all.$name"
	echo "== $run: $(wc -l <"$out/all.$name") lines, $(grep -c UNEXPECTED "$out/all.$name") unexpected"
done
sed -n '1,40p' "$out/all.tcp"
for p in $PROVS; do
	name=rdma$p
	diff "$out/all.tcp" "$out/all.$name" >/dev/null ||
		{ diff "$out/all.tcp" "$out/all.$name" | head -20; echo "FAIL: $name differs from tcp"; rc=1; }
done
[ $rc -eq 0 ] && echo "same transcripts over TCP and RDMA/${PROVS// /, RDMA/}"
exit $rc
