#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# rpcrdma serve / ping / perf end to end: a server on loopback (RDMA over PROV, and ONC
# RPC/TCP), ping, and a short `perf --json-lines --check --compare` whose every result must have
# the documented shape, moved verified data and no failed call.
# Usage: test_cli_perf.sh RPCRDMA_BIN PROV
set -u
BIN=$1
PROV=$2
PEER_LIB_TMP=1
. "$(dirname "$0")/peer_lib.sh"
fail() { echo "FAIL: $*"; exit 1; }

start_server "$out/serve" "$BIN" serve --provider "$PROV" --listen 127.0.0.1:0 --tcp 0
read -r rport tport <<<"$port"
"$BIN" ping "127.0.0.1:$rport" --provider "$PROV" -c 3 -i 0 >"$out/ping" || fail "ping"
cat "$out/ping"
grep -q '^3 calls, 3 replies, 0% lost' "$out/ping" || fail "ping summary"
"$BIN" ping "127.0.0.1:$tport" --tirpc -c 2 -i 0 >/dev/null || fail "ping over TCP"
"$BIN" perf "127.0.0.1:$rport" --provider "$PROV" --tcp-port "$tport" --seconds 0.1 \
	--sizes 0,4k,1m --json-lines --check --compare >"$out/perf" || fail "perf exit status"
cat "$out/perf"
results=$(grep -c '^{"transport":"\(rdma\|tirpc\)/' "$out/perf")
[ "$results" -eq 30 ] || fail "expected 30 results (15 per transport), got $results"
shape='^{"transport":"[a-z]*/[a-z]*","op":"\(null\|read\|write\)","size":[0-9]*,"depth":[0-9]*,"calls_per_s":[0-9]*,"MBps":[0-9.]*,"p50_us":[0-9.]*,"p99_us":[0-9.]*,"cpu_s_per_GB":[0-9.]*,"verified":[0-9]*,"failed":0}$'
setup='^{"transport":"[a-z]*/[a-z]*","op":"setup","size":0,"depth":1,"calls_per_s":[0-9]*,"MBps":0.0,"p50_us":[0-9.]*,"p99_us":[0-9.]*,"cpu_s_per_GB":0.00,"verified":[1-9][0-9]*,"failed":0,"first_us":[0-9.]*}$'
[ "$(grep -c "$setup" "$out/perf")" -eq 2 ] || fail "no setup figure (new client to first reply) for each transport"
grep -q '^{"ratio":"rdma/[a-z]*/tirpc/tcp","op":"setup",.*"what":"clients/s"' "$out/perf" ||
	fail "no setup ratio against tirpc"
bad=$(grep '^{"transport":"\(rdma\|tirpc\)/' "$out/perf" | grep -v '"op":"setup"' | grep -vc "$shape")
[ "$bad" -eq 0 ] || fail "$bad results without the documented shape or with failed calls"
unverified=$(grep '"op":"\(read\|write\)"' "$out/perf" | grep -c '"verified":0,')
[ "$unverified" -eq 0 ] || fail "$unverified data results verified nothing"
grep -q '^{"ratio":"rdma/[a-z]*/tirpc/tcp"' "$out/perf" || fail "no ratio against tirpc"
grep -q '^{"transport":"raw/' "$out/perf" || fail "no raw provider figures"
# statistics on SIGUSR1 and at exit
kill -USR1 "$spid"
sleep 0.5
grep -q 'statistics (SIGUSR1)' "$out/serve" || fail "no statistics on SIGUSR1"
kill -TERM "$spid"
wait "$spid"
spid=
grep -q 'statistics at exit' "$out/serve" || fail "no statistics at exit"
cat "$out/serve"
# perf with its own server, and one core kept busy by a process of its own that ends with it
"$BIN" perf --provider "$PROV" --seconds 0.05 --ops null,read --sizes 4k --depths 1 --check \
	--busy 1 >"$out/own" || fail "perf with its own server"
cat "$out/own"
bpid=$(sed -n 's/^busy: 1 thread spinning in process \([0-9]*\) .*/\1/p' "$out/own")
[ -n "$bpid" ] || fail "perf --busy 1 did not say which process spins"
! kill -0 "$bpid" 2>/dev/null || fail "the --busy process $bpid outlived perf"
grep -q '^rdma/[a-z]* *read' "$out/own" || fail "no figure with --busy"
"$BIN" perf --provider "$PROV" --seconds 0.05 --ops setup --busy 2 --json-lines >"$out/busyjson" ||
	fail "perf --busy 2 --json-lines"
grep -q '"busy":2,"idle":0}}$' "$out/busyjson" || fail "the run object does not say busy 2"
# idle connections: the server's memory and wake-ups, over RDMA and ONC RPC/TCP
"$BIN" perf --provider "$PROV" --seconds 0.05 --ops null --depths 1 --idle 5 --compare --json-lines \
	>"$out/idle" || fail "perf --idle 5"
cat "$out/idle"
idle='^{"idle":{"transport":"\(rdma/[a-z]*\|tirpc/tcp\)","connections":5,"opened":5,"server_rss_kib":[1-9][0-9]*,"base_rss_kib":[1-9][0-9]*,"kib_per_connection":-*[0-9]*,"fds_per_connection":[0-9.]*,"rss_after_kib":[1-9][0-9]*,"fds_after":[1-9][0-9]*,"base_fds":[1-9][0-9]*,"wakeups_per_s":[0-9.]*}}$'
[ "$(grep -c "$idle" "$out/idle")" -eq 2 ] || fail "no idle figure for each transport"
"$BIN" perf 127.0.0.1:1 --idle 1 >/dev/null 2>"$out/idle_err"
[ $? -eq 2 ] && grep -q 'give no HOST' "$out/idle_err" || fail "--idle with a HOST is not refused"
echo "serve, ping and perf: ok"
