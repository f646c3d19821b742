#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# A server holding many idle connections (docs/BENCHMARKS.md): `rpcrdma serve` over tcp,
# N connections from `bench_conns` that make one call each and stay; then the server's
# CPU and context switches over 3 s with only them there, and one client's NULL calls at
# depth 1 for 2 s with the server's system calls per call (perf stat). RUNS times; with
# OLD_BUILD=DIR, that build's server and clients alternate with BUILD_DIR's.
# RPCRDMA_LIBFABRIC picks the libfabric (docs/PROVIDERS.md); BUSY=N keeps N threads
# spinning in another process during the calls (perf --busy). System calls are counted
# with Linux's perf (package linux-perf); without it they read 0.
# Usage: bench/idle_conns.sh BUILD_DIR [N] [RUNS]
set -eu
n=${2:-100}
runs=${3:-3}
tmp=$(mktemp -d)
spid= bpid=
trap 'kill $spid $bpid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
switches() { cat /proc/"$1"/task/*/status | awk '/ctxt_switches/ { s += $2 } END { print s }'; }

one() {
	local b=$1 c0 c1 w0 w1 cps calls sc
	"$b/rpcrdma" serve --provider tcp --listen 127.0.0.1:0 >"$tmp/serve" 2>&1 &
	spid=$!
	for _ in $(seq 100); do [ -s "$tmp/serve" ] && break; sleep 0.1; done
	read -r _ port _ <"$tmp/serve"
	"$b/bench_conns" 127.0.0.1 "$port" "$n" tcp 60 >"$tmp/conns" 2>&1 &
	bpid=$!
	for _ in $(seq 300); do grep -q '^open' "$tmp/conns" && break; sleep 0.1; done
	sleep 1
	c0=$(cpu_ticks $spid) w0=$(switches $spid)
	sleep 3
	c1=$(cpu_ticks $spid) w1=$(switches $spid)
	perf stat -e raw_syscalls:sys_enter -p $spid -o "$tmp/stat" -- sleep 2.6 >/dev/null 2>&1 &
	cps=$("$b/rpcrdma" perf "127.0.0.1:$port" --ops null --sizes 0 --depths 1 --seconds 2 \
		--busy "${BUSY:-0}" --json 2>"$tmp/perf.err" | python3 -c \
		'import json,sys; print(json.load(sys.stdin)["results"][0]["calls_per_s"])' \
		2>/dev/null) || cps=0
	wait $! || true
	[ "$cps" != 0 ] || echo "$b: the client failed: $(head -c 200 "$tmp/perf.err")"
	sc=$(awk '/raw_syscalls/ { gsub(",", "", $1); print $1 }' "$tmp/stat")
	calls=$((cps * 2))
	echo "$b: $(head -1 "$tmp/conns") | idle: $(( (c1 - c0) * 1000 / $(getconf CLK_TCK) / 3 )) ms CPU/s," \
		"$(( (w1 - w0) / 3 )) switches/s | NULL depth 1: $cps calls/s," \
		"$(awk -v s="${sc:-0}" -v c="$calls" 'BEGIN { printf "%.1f", c ? s / c : 0 }') server system calls/call"
	kill $bpid $spid 2>/dev/null
	wait 2>/dev/null || true
	spid= bpid=
}

for _ in $(seq "$runs"); do
	[ -n "${OLD_BUILD:-}" ] && one "$OLD_BUILD"
	one "$1"
done
