#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Real programs, short-lived processes (docs/BENCHMARKS.md): the NFSv2 example built from
# Debian's unmodified nfs_prot.x and mount.x (examples/nfs2), as its test runs it: one
# server on svc_run(), then four client processes at once and one client of eight
# threads, each process connecting, doing its work and exiting. Timed per phase (server
# start: exec to "listening"; one client process alone, before the others, not counted
# in the total; clients: the five started to the last one done; each client process's
# own wall time), over ONC RPC/TCP (libtirpc) and RPC-over-RDMA on
# libfabric tcp (and shm with PROVIDERS="tcp shm"), alternating, RUNS times. With
# LF2=PATH/libfabric.so.1 the RDMA runs are made once with the system's libfabric and
# once with that one (RPCRDMA_LIBFABRIC, docs/PROVIDERS.md). HOST=ADDR: the clients call
# the server there (default 127.0.0.1; PROVIDERS=verbs needs the RDMA interface's address,
# as in the VM suite's bench; the TCP clients always use loopback).
# Usage: bench/nfs2_workload.sh BUILD_DIR [RUNS]
set -eu
B=$1
runs=${2:-3}
provs=${PROVIDERS:-tcp}
host=${HOST:-127.0.0.1}
tmp=$(mktemp -d)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
now_us() { echo $(( $(date +%s%N) / 1000 )); }
ms() { awk -v u="$1" 'BEGIN { printf "%.0f", u / 1000 }'; }

# one configuration: KIND (tcp|rdma) PROVIDER LABEL, with RPCRDMA_LIBFABRIC as set
one() {
	local kind=$1 prov=$2 label=$3 t0 t1 t2 port i worst=0 sum=0 w alone
	rm -f "$tmp/stop" "$tmp/server" "$tmp"/c.*
	mkfifo "$tmp/stop"
	exec 3<>"$tmp/stop"
	t0=$(now_us)
	RPCRDMA_PROVIDER=$prov RPCRDMA_PORT=0 "$B/nfs2_server_$kind" <"$tmp/stop" >"$tmp/server" 2>&1 &
	spid=$!
	until grep -q '^listening' "$tmp/server" 2>/dev/null; do
		kill -0 $spid 2>/dev/null || { cat "$tmp/server"; echo "$label: no server"; exit 1; }
		sleep 0.001
	done
	t1=$(now_us)
	port=$(sed -n 's/^listening //p' "$tmp/server")
	# one client alone first: what a process costs without the crowd
	RPCRDMA_PROVIDER=$prov "$B/nfs2_client_$kind" "$host" "$port" work p0 >/dev/null \
		2>"$tmp/err.0" || { cat "$tmp/err.0"; echo "$label: the lone client failed"; exit 1; }
	alone=$(( $(now_us) - t1 ))
	t1=$(now_us)
	for i in 1 2 3 4 t; do
		(
			s=$(now_us)
			if [ $i = t ]; then
				args=(threads mt 8)
			else
				args=(work "p$i")
			fi
			RPCRDMA_PROVIDER=$prov "$B/nfs2_client_$kind" "$host" "$port" "${args[@]}" \
				>/dev/null 2>"$tmp/err.$i" || echo FAIL >"$tmp/failed"
			echo $(( $(now_us) - s )) >"$tmp/c.$i"
		) &
	done
	wait $(jobs -p | grep -v "^$spid$") 2>/dev/null || true
	t2=$(now_us)
	echo quit >&3
	wait $spid || true
	spid=
	exec 3>&-
	[ ! -e "$tmp/failed" ] || { cat "$tmp"/err.*; echo "$label: a client failed"; exit 1; }
	for i in 1 2 3 4 t; do
		w=$(cat "$tmp/c.$i")
		sum=$((sum + w))
		[ "$w" -gt "$worst" ] && worst=$w
	done
	printf '%-16s server start %5s ms | one client alone %5s ms | five clients %5s ms (each %s ms on average, the slowest %s) | total %5s ms\n' \
		"$label" "$(ms $((t1 - t0 - alone)))" "$(ms "$alone")" "$(ms $((t2 - t1)))" \
		"$(ms $((sum / 5)))" "$(ms "$worst")" "$(ms $((t2 - t0 - alone)))"
}

for r in $(seq "$runs"); do
	echo "-- run $r"
	one tcp tcp "TCP (libtirpc)"
	for p in $provs; do
		(unset RPCRDMA_LIBFABRIC; one rdma "$p" "RDMA/$p")
		[ -z "${LF2:-}" ] || (export RPCRDMA_LIBFABRIC=$LF2; one rdma "$p" "RDMA/$p lf2")
	done
done
