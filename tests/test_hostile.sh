#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Peers that die or misbehave never cost the server for good, nor stall other clients:
#  A (tcp) TCP connections that never finish the fabric's handshake, closed while a real
#          client connects: none stays in CLOSE-WAIT, the server keeps serving; then 350
#          that connect and close without a word: the server's descriptors come back to
#          within 10% of what they were.
#  B (shm, verbs) a client killed with SIGKILL in the middle of 1 MiB WRITEs, 8 in
#          flight: the server notices, drops the connection, and serves the next client at
#          once.
#  C (tcp, shm, verbs) 50 clients killed with SIGKILL while moving data: the server's
#          descriptors and memory come back to what they were, no connection is left
#          open, and (shm) no shared-memory region of theirs is left in /dev/shm.
#  E (tcp, shm, verbs) a burst of 150 clients that connect, call once and close: the
#          server's descriptors come back to within 10% of what they were (eventfds of
#          ended connections are pooled only up to one, svc_conn.c spares_trim).
#  D (shm) the server stopped (SIGSTOP) while three clients give up connecting to it and
#          exit: their requests wait in its queue, naming regions whose owners are gone;
#          resumed, the server takes them and serves the next client (fabric_rdm.c,
#          parking; libfabric 1.17 crashed here).
# verbs runs on a real RDMA device at $RPCRDMA_TEST_HOST (the VM suite); skipped without.
# Usage: test_hostile.sh BUILD_DIR tcp|shm|verbs
set -u
BIN=$1/rpcrdma
PROV=$2
PEER_LIB_TMP=1
. "$(dirname "$0")/peer_lib.sh"
if [ "$PROV" = verbs ] && ! rdma_device_here; then
	echo "SKIPPED: no RDMA device here"
	exit 77
fi
# Under AddressSanitizer, freed memory waits in a 256 MiB quarantine and is never handed
# back: a small quarantine, returned to the system, keeps resident memory meaningful here
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16:allocator_release_to_os_interval_ms=100"
rc=0
fail() { echo "FAIL: $*"; rc=1; }

serve() {
	start_server "$out/serve" "$BIN" serve --provider "$PROV" --listen "$H:0"
	rport=$port
}
nfds() { ls "/proc/$spid/fd" | wc -l; }
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$spid/status"; }
open_conns() {   # connections the server still has, from its SIGUSR1 statistics
	local before
	before=$(grep -c 'statistics (SIGUSR1)' "$out/serve")
	kill -USR1 "$spid"
	for _ in $(seq 50); do
		[ "$(grep -c 'statistics (SIGUSR1)' "$out/serve")" -gt "$before" ] && break
		sleep 0.05
	done
	sleep 0.1
	# no answer in 2.5 s: the server is stalled, and its last statistics would be stale
	if [ "$(grep -c 'statistics (SIGUSR1)' "$out/serve")" -le "$before" ]; then
		echo "the server did not print its statistics within 2.5 s of SIGUSR1" >&2
		echo "unknown (server stalled)"
		return
	fi
	awk '/statistics \(SIGUSR1\)/ { n = 0; counting = 1; next }
	     /^all connections/ { counting = 0 }
	     counting && /^  [^(]/ { n++ }
	     END { print n + 0 }' "$out/serve"
}
ping_ok() {
	timeout 30 "$BIN" ping "$H:$rport" --provider "$PROV" -c 2 >"$out/ping" 2>&1 && return 0
	cat "$out/ping"
	return 1
}
# a client that moves data until killed
client() {
	exec "$BIN" perf "$H:$rport" --provider "$PROV" --ops "$1" --sizes 1m --depths 8 \
		--seconds 60 >/dev/null 2>&1
}

serve
ping_ok || fail "first ping"

if [ "$PROV" = tcp ]; then
	echo "== A: TCP connections that never finish the handshake"
	exec 5<>/dev/tcp/127.0.0.1/$rport 6<>/dev/tcp/127.0.0.1/$rport 7<>/dev/tcp/127.0.0.1/$rport
	ping_ok || fail "ping beside half-open connections"
	exec 5>&- 6>&- 7>&-
	for _ in $(seq 100); do
		cw=$(ss -tan state close-wait "( sport = :$rport )" | tail -n +2 | wc -l)
		[ "$cw" -eq 0 ] && break
		sleep 0.1
	done
	echo "sockets left in CLOSE-WAIT after 10 s: $cw"
	[ "$cw" -eq 0 ] || fail "$cw sockets stay in CLOSE-WAIT"
	ping_ok || fail "ping after the half-open connections"
	# 250 peers that connect and close without a word, then 100 that wait 0.5 s first:
	# libfabric 1.17 kept such sockets (a stale errno, fabric_int.h), and they were
	# retired onto /dev/null one descriptor each (252 of 350 here before the fix)
	fa0=$(nfds)
	for _ in $(seq 250); do exec 5<>/dev/tcp/127.0.0.1/$rport; exec 5>&-; done
	for i in $(seq 100); do eval "exec {fd_$i}<>/dev/tcp/127.0.0.1/$rport"; done
	sleep 0.5
	for i in $(seq 100); do eval "exec {fd_$i}>&-"; done
	fa1=$(nfds)
	for _ in $(seq 60); do [ "$fa1" -le $((fa0 + fa0 / 10)) ] && break; sleep 0.1; fa1=$(nfds); done
	echo "350 silent TCP peers: the server's descriptors $fa0 -> $fa1" \
		"($(ls -l "/proc/$spid/fd" | grep -c /dev/null) on /dev/null)"
	[ "$fa1" -le $((fa0 + fa0 / 10)) ] || fail "descriptors grew from $fa0 to $fa1 after silent TCP peers"
	ping_ok || fail "ping after the silent TCP peers"
else
	echo "== B: a client killed during 1 MiB WRITEs, 8 in flight"
	client write &
	cpid=$!
	sleep 1.5
	kill -9 "$cpid"
	wait "$cpid" 2>/dev/null
	t0=$(date +%s%N)
	ping_ok || fail "the next client is not served"
	echo "next client served $(( ($(date +%s%N) - t0) / 1000000 )) ms after the kill"
	n=$(open_conns)
	[ "$n" = 0 ] || fail "connections still open: $n"
fi

echo "== C: 50 clients killed with SIGKILL"
# ten at a time; the first round brings the server's pools and caches to their working
# size (e.g. one descriptor kept per connection open at once, docs/RPC.md), and what comes
# after must cost nothing more
kill_round() {
	local pids=() i ops
	for i in $(seq 10); do
		ops=read
		[ $((i % 3)) -eq 0 ] && ops=write
		[ $((i % 3)) -eq 1 ] && ops=echo
		client $ops &
		pids+=($!)
	done
	sleep 0.8
	kill -9 "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null
}
alive() { kill -0 "$spid" 2>/dev/null || { cat "$out/serve"; echo "FAIL: the server died"; exit 1; }; }
socks() { ls -l "/proc/$spid/fd" | grep -c 'socket:'; }
settle() { for _ in $(seq 100); do alive; [ "$(open_conns)" = 0 ] && break; sleep 0.1; done; sleep 1; }
kill_round
kill_round
settle
fd0=$(nfds)
sk0=$(socks)
rss0=$(rss_kb)
for round in 1 2 3 4 5; do
	kill_round
	alive
	echo "round $round: 10 clients killed"
done
settle
# a client killed in the middle of its handshake leaves a socket libfabric's listener has
# lost: the server closes it after 3 s in CLOSE-WAIT (tcp_reap.c), so wait that long
for _ in $(seq 100); do [ "$(socks)" -le "$sk0" ] && break; sleep 0.1; done
n=$(open_conns)
fd1=$(nfds)
sk1=$(socks)
rss1=$(rss_kb)
echo "server: $fd0 -> $fd1 descriptors ($sk0 -> $sk1 sockets), $rss0 -> $rss1 KiB resident," \
	"$n connections open"
if [ "$n" != 0 ]; then
	fail "connections of dead clients still open: $n"
	# the server's own account of them: its last statistics block
	awk '/statistics \(SIGUSR1\)/ { b = "" } { b = b $0 "\n" } END { printf "%s", b }' "$out/serve" | head -40
fi
[ "$sk1" -le "$sk0" ] || fail "sockets grew from $sk0 to $sk1"
# eventfds of ended connections are closed once svc_run() can no longer poll them
# (svc_conn.c spares_trim): the count comes back
[ "$fd1" -le $((fd0 + 10)) ] || fail "descriptors grew from $fd0 to $fd1"
# with no connection left the server keeps no bulk memory (reply buffers kept for reuse
# are freed, the heaps trimmed: svc_listen.c reap): a few MiB of slack for the allocator's
# own bookkeeping; one connection's buffers left behind would be megabytes each, tens of
# MiB for 50. Under AddressSanitizer resident memory grew by 5-18 MiB here with nothing
# leaked (three runs each of f632375 and of 77e5819; the optimised build: 0.1-0.2 MiB),
# from its 16 MiB quarantine (above) and its allocator's caches; LeakSanitizer looks for
# leaks at exit there, and the allowance is 16 MiB more.
slack=16384
ldd "$BIN" 2>/dev/null | grep -q libasan && slack=$((slack + 16384))
[ "$rss1" -le $((rss0 + slack)) ] || fail "resident memory grew by $((rss1 - rss0)) KiB"

# E: a burst of connections leaves no descriptors behind
"$1/bench_conns" "$H" "$rport" 1 "$PROV" 0 >/dev/null 2>&1 || fail "one client before the burst"
settle
fe0=$(nfds)
"$1/bench_conns" "$H" "$rport" 150 "$PROV" 0 >"$out/burst" 2>&1 || fail "the burst: $(tail -2 "$out/burst")"
settle
fe1=$(nfds)
for _ in $(seq 30); do [ "$fe1" -le $((fe0 + fe0 / 10)) ] && break; sleep 0.1; fe1=$(nfds); done
echo "a burst of 150 clients: the server's descriptors $fe0 -> $fe1"
[ "$fe1" -le $((fe0 + fe0 / 10)) ] || fail "descriptors grew from $fe0 to $fe1 after the burst: $(ls -l "/proc/$spid/fd" | awk '{ print $NF }' | sort | uniq -c | sort -rn | head -3 | tr '\n' ' ')"

if [ "$PROV" = shm ]; then
	left=$(find /dev/shm -maxdepth 1 -user "$(id -u)" -name '[0-9]*:*' | while read -r f; do
		p=${f##*/}; p=${p%%:*}
		[ -d "/proc/$p" ] || echo "$f"
	done | wc -l)
	echo "shared-memory regions of dead processes left: $left"
	# processes that use shm remove them (shm_life.c): the first marks them, one 5 s
	# later removes them (a message of the dead may still be queued somewhere)
	ping_ok || fail "ping after the killed clients"
	sleep 6
	ping_ok || fail "ping 6 s later"
	left=$(find /dev/shm -maxdepth 1 -user "$(id -u)" -name '[0-9]*:*' | while read -r f; do
		p=${f##*/}; p=${p%%:*}
		[ -d "/proc/$p" ] || echo "$f"
	done | wc -l)
	echo "... after the next clients: $left"
	[ "$left" -eq 0 ] || fail "$left regions of dead clients stay in /dev/shm"
fi
if [ "$PROV" = shm ]; then
	kill -STOP "$spid"
	gone=()
	for _ in 1 2 3; do
		timeout 60 "$BIN" ping "127.0.0.1:$rport" --provider shm -c 1 >"$out/gone" 2>&1 &
		gone+=($!)
	done
	wait "${gone[@]}"
	kill -CONT "$spid"
	sleep 1
	alive
	ping_ok || fail "ping after the server was stopped and resumed"
	echo "server stopped while 3 clients gave up connecting: alive, serving"
fi
ping_ok || fail "ping at the end"
# how often a killed client held a shm region lock the server needed (prov_fabric.c)
echo "region locks of killed processes released by the server: $(grep -c 'released a region lock' "$out/serve")"
grep 'released a region lock' "$out/serve" | sed 's/^/  /'
[ $rc -eq 0 ] && echo "hostile peers ($PROV): all checks passed"
exit $rc
