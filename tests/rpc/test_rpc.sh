#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The RPC layer end to end: rt_server (RDMA over libfabric tcp and shm, and plain TCP) and
# rt_client over each transport; the outcomes printed over RDMA must be those over TCP.
# Then, over RDMA/tcp and RDMA/shm (over verbs alone where RPCRDMA_PROVIDER is verbs): calls without a binding (replies up to 64 MiB), an
# RFC 8166-style server (no read chunks in replies), the server killed under a client (with
# and without reconnection), a non-idempotent call sent again after a lost connection
# (runs once: the duplicate request cache), and the server killed and restarted under a
# client calling in a loop (no wrong result, calls sent again with their XIDs, calls after
# the restart succeed), and busy polling (svc_run mode). In workers mode TCP is the
# library's own (svc_rdma_tcp_create), also with 4 lanes a connection. inline (requests
# dispatched on the progress threads): the bulk run only.
# In workers and inline mode the server's arguments are lent from the calls (lend_args).
# Usage: test_rpc.sh SERVER CLIENT svc_run|workers|inline
set -u
SERVER=$1
CLIENT=$2
MODE=$3
PEER_LIB_TMP=1
. "$(dirname "$0")/../peer_lib.sh"

run_server() {
	start_server "$out/server" "$SERVER" "$MODE" "$@"
	read -r rport sport tport <<<"$port"
}

stop_server() {
	kill "$spid"
	wait "$spid" 2>/dev/null
	spid=
}

# Over verbs (the VM suite), the RDMA runs are verbs' alone: shm's are the host's, in
# the same CI run, and took half of this test's time under qemu's emulation
rdma_ts() {   # the RDMA transports of this run, as TRANSPORT:PORT
	echo "rdma-$R:$rport"
	[ "$R" = verbs ] || echo "rdma-shm:$sport"
}
rdma_trs() {
	echo "rdma-$R"
	[ "$R" = verbs ] || echo rdma-shm
}

rc=0
run_server
# results of up to 1 MiB by write chunk, 16 in flight: each intact although the server
# poisons it once svc_sendreply() returns (docs/RPC.md, "Results without a copy"). Run
# before the others only in inline mode: before them in workers mode, the main run's
# check of a waiting client's context switches failed twice over tcp (302, 369; cause
# not found)
bulk() {
	for t in $(rdma_ts); do
		echo "== ${t%%:*} bulk"
		timeout 120 "$CLIENT" "${t%%:*}" "$H" "${t##*:}" bulk || rc=1
	done
}
if [ "$MODE" = inline ]; then
	# dispatched on the progress thread: the rest has handlers that block for seconds
	bulk
	stop_server
	exit $rc
fi
for t in $(rdma_ts) tcp:$tport; do
	tr=${t%%:*}
	# workers: TCP is svc_rdma_tcp_create's (the library's runtime), svc_run: libtirpc's
	echo "== $tr"
	# workers: the waiting client's context switches are printed, not checked (rt_client.c)
	[ "$MODE" = workers ] && export RT_WAKE_CHECK=0 RT_TCP_LIB=1
	timeout 300 "$CLIENT" "$tr" "$H" "${t##*:}" >"$out/$tr" || rc=1
	cat "$out/$tr"
done
if [ "$MODE" = svc_run ]; then
	# same outcomes over RDMA as over TCP (lines that exist on both)
	for tr in $(rdma_trs); do
		sed "s/^$tr //" "$out/$tr" | grep -v -e 'passed' -e ddp -e async -e 'server gone' -e wrapping -e 'slow reply' -e 'CPU for a' -e 'leading caller' -e 'cannot be encoded' >"$out/a"
		sed 's/^tcp //' "$out/tcp" | grep -v -e 'passed' -e 'cannot be encoded' >"$out/b"
		diff "$out/b" "$out/a" || { echo "outcomes differ: $tr vs tcp"; rc=1; }
	done
fi
bulk
stop_server
if [ "$MODE" = workers ]; then
	# the library's TCP with 4 lanes a connection: the same calls, several of a
	# connection at once
	run_server parallel
	echo "== tcp, 4 lanes"
	# (but for the zero-timeout calls' order, which lanes do not keep)
	RT_LANES=1 timeout 300 "$CLIENT" tcp "$H" "$tport" >"$out/tcp-lanes" || rc=1
	cat "$out/tcp-lanes"
	stop_server
fi

# without a binding: long calls and replies still work, replies beyond the reply chunk too
run_server nobinding
for t in $(rdma_ts); do
	echo "== ${t%%:*} nobinding"
	timeout 300 "$CLIENT" "${t%%:*}" "$H" "${t##*:}" nobinding || rc=1
done
stop_server

# a server that never sends read chunks in replies, as RFC 8166 servers
run_server nobinding norrc
for t in $(rdma_ts); do
	echo "== ${t%%:*} foreign"
	timeout 120 "$CLIENT" "${t%%:*}" "$H" "${t##*:}" foreign || rc=1
done
stop_server

# the server goes away under a connected client
for flag in gone noreconnect; do
	echo "== server gone ($flag)"
	run_server
	rm -f "$out/go"
	mkfifo "$out/go"
	timeout 60 "$CLIENT" rdma-$R "$H" "$rport" "$flag" <"$out/go" >"$out/gone" &
	cpid=$!
	exec 3>"$out/go"
	for _ in $(seq 300); do grep -q ready "$out/gone" && break; sleep 0.1; done
	grep -q ready "$out/gone" || echo "the client did not say ready within 30 s"
	kill -9 "$spid"; wait "$spid" 2>/dev/null; spid=
	# a client already gone must not take this script with it (SIGPIPE on the fifo)
	(trap '' PIPE; echo go >&3) 2>/dev/null
	exec 3>&-
	wait "$cpid" || rc=1
	cat "$out/gone"
done

# a server that hangs without a word (SIGSTOP): keepalive notices, reconnects after
for tr in $(rdma_trs); do
	echo "== $tr keepalive"
	run_server
	p=$rport
	[ "$tr" = rdma-shm ] && p=$sport
	rm -f "$out/go"
	mkfifo "$out/go"
	exec 3<>"$out/go"
	timeout 60 "$CLIENT" "$tr" "$H" "$p" keepalive <"$out/go" >"$out/ka" &
	cpid=$!
	for _ in $(seq 100); do grep -q ready "$out/ka" && break; sleep 0.1; done
	kill -STOP "$spid"
	sleep 1.5
	kill -CONT "$spid"
	echo go >&3
	wait "$cpid" || rc=1
	exec 3>&-
	cat "$out/ka"
	stop_server
done

# busy polling (docs/RPC.md): the client polls through a wait when its options or the
# environment give it a budget; a server started with RPCRDMA_BUSY_POLL_US polls that long
# after a call, then sleeps (its CPU, read by the client from /proc)
busy_polling() {   # WHOSE [SERVER_PID]: rt_client busypoll over both providers
	for t in $(rdma_ts); do
		echo "== ${t%%:*} busy polling, the $1"
		timeout 60 "$CLIENT" "${t%%:*}" "$H" "${t##*:}" busypoll ${2:+"$2"} || rc=1
	done
}
if [ "$MODE" = svc_run ]; then
	run_server
	busy_polling client
	stop_server
	export RPCRDMA_BUSY_POLL_US=600000
	run_server
	unset RPCRDMA_BUSY_POLL_US
	busy_polling server "$spid"
	stop_server
fi

# at most once across reconnections: a call sent again after its connection was lost
# runs once (the server's duplicate request cache answers it); without the cache it runs
# twice, which shows that the scenario does send it again
run_server
for t in $(rdma_ts); do
	echo "== ${t%%:*} drc"
	timeout 120 "$CLIENT" "${t%%:*}" "$H" "${t##*:}" drc || rc=1
done
stop_server
if [ "$MODE" = svc_run ]; then
	run_server nodrc
	echo "== rdma-$R drc off"
	timeout 120 "$CLIENT" rdma-$R "$H" "$rport" drc-off || rc=1
	stop_server
fi

# killed and started again on the same port while a client calls in a loop
for tr in $(rdma_trs); do
	echo "== $tr restart"
	run_server xids
	p=$rport
	[ "$tr" = rdma-shm ] && p=$sport
	timeout 120 "$CLIENT" "$tr" "$H" "$p" restart 6 >"$out/restart" 2>&1 &
	cpid=$!
	for _ in $(seq 100); do grep -q ready "$out/restart" && break; sleep 0.1; done
	sleep 1
	# kill it while a 200 ms call is being served: that call must be sent again
	n=$(grep -c '^xid' "$out/server")
	for _ in $(seq 200); do [ "$(grep -c '^xid' "$out/server")" -gt "$n" ] && break; sleep 0.01; done
	kill -9 "$spid"; wait "$spid" 2>/dev/null; spid=
	mv "$out/server" "$out/server.1"
	sleep 0.5
	start_server "$out/server" "$SERVER" "$MODE" xids "ports=$rport,$sport"
	wait "$cpid" || rc=1
	cat "$out/restart"
	last=$(grep '^xid' "$out/server.1" | tail -n 1 | cut -d' ' -f2)
	if grep -q "^xid $last " "$out/server"; then
		echo "the call in flight (xid $last) reached the new server with its XID"
	else
		echo "FAIL: xid $last, in flight at the kill, never reached the new server"
		rc=1
	fi
	stop_server
done
exit $rc
