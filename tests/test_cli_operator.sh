#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# What an operator types and reads (issue 50, "Operator and porter"): every --listen form
# the docs show; ping's header, ports and time units; perf --compare's text, its ratios
# against the raw ceiling, its intervals and its JSON document; errors that say what
# happened, with their errno; one-line usage errors.
# Usage: test_cli_operator.sh RPCRDMA_BIN
set -u
BIN=$1
PEER_LIB_TMP=1
. "$(dirname "$0")/peer_lib.sh"
rc=0
fail() { echo "FAIL: $*"; rc=1; }

# A port nothing listens on now: the kernel's choice for a socket that is then closed.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---- serve --listen: HOST:PORT, :PORT, :0, a bare PORT, [V6]:PORT ----
listen_as() {   # TEXT WANT_PORT (empty: any but 20049)
	local text=$1 want=$2 got
	start_server "$out/listen" "$BIN" serve --listen "$text"
	got=$port
	kill -TERM "$spid"
	wait "$spid"
	spid=
	if [ -n "$want" ]; then
		[ "$got" = "$want" ] || fail "serve --listen $text: listening on '$got', wanted $want"
	else
		[ -n "$got" ] && [ "$got" != 20049 ] || fail "serve --listen $text: listening on '$got'"
	fi
	echo "serve --listen $text: listening $got"
}
listen_as :0 ""
listen_as 127.0.0.1:0 ""
listen_as "[::1]:0" ""
p=$(free_port)
listen_as ":$p" "$p"
p=$(free_port)
listen_as "$p" "$p"   # a bare number is a port, not a host named so
listen_as 0 ""
usage_error "'70000'" serve --listen 70000
usage_error "'70000'" serve --listen :70000

# ---- ping: ports, the header, time units ----
start_server "$out/serve" "$BIN" serve --listen 127.0.0.1:0 --tcp 0
read -r rport tport <<<"$port"
# port 0 is no server's port: it does not quietly mean 20049
usage_error "port '0'" ping 127.0.0.1:0 -c 1
# --tcp-port is --tirpc's: over RDMA it would be ignored
usage_error "--tcp-port" ping "127.0.0.1:$rport" --tcp-port "$tport" -c 1
usage_error "--tcp-port" ping "127.0.0.1:$rport" -t "$tport" -c 1
"$BIN" ping "127.0.0.1:$tport" --tirpc -t "$tport" -c 1 -i 0 >/dev/null || fail "ping --tirpc -t"
"$BIN" ping "127.0.0.1:$rport" -s 100 -c 1 -i 0 >"$out/ps" || fail "ping -s 100: $(cat "$out/ps")"
grep -q "^PING 127.0.0.1 port $rport over RDMA/tcp, ECHO of 100 bytes$" "$out/ps" ||
	fail "ping -s 100 header: $(head -1 "$out/ps")"
# times in the unit that reads: us below 1 ms, then ms, then s, as ping(8)
"$BIN" ping "127.0.0.1:$rport" -s 16m -c 2 -i 0 >"$out/pbig" || fail "ping -s 16m: $(cat "$out/pbig")"
python3 - "$out/pbig" <<'PY' || fail "ping times: $(cat "$out/pbig")"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
times = [re.search(r" time=(\S+) (\S+)$", l) for l in lines if l.startswith("ECHO reply")]
assert len(times) == 2 and all(times), lines
for m in times:
    v, unit = float(m.group(1)), m.group(2)
    assert unit in ("us", "ms", "s"), m.group(0)
    assert (unit == "us" and v < 1000) or (unit == "ms" and 1 <= v < 1000) or (unit == "s" and v >= 1), m.group(0)
    assert unit != "us", "16 MiB both ways in under a millisecond? " + m.group(0)
rtt = [l for l in lines if l.startswith("rtt ")]
assert rtt and re.match(r"rtt min/avg/max/p99 = [0-9.]+/[0-9.]+/[0-9.]+/[0-9.]+ (ms|s)$", rtt[0]), rtt
print("ping -s 16m:", times[0].group(0).strip(), "|", rtt[0])
PY

# ---- errors ----
# serve's bind error says which: the port is in use, or the address is not this host's
says "port $rport is in use (bind: Address already in use)" serve --listen "127.0.0.1:$rport"
says "port $rport is in use (bind: Address already in use)" serve --listen "$rport"
# 192.0.2.1 (TEST-NET-1) is no address of this host
says "192.0.2.1 is not an address of this host (bind: Cannot assign requested address)" \
	serve --listen 192.0.2.1:0
# with -v, a failed connect is said once (the library's log), not twice
"$BIN" ping -v 127.0.0.1:1 -c 1 >/dev/null 2>"$out/v"
[ "$(grep -c 'connection refused' "$out/v")" -eq 1 ] || fail "ping -v to a closed port: $(cat "$out/v")"
"$BIN" ping 127.0.0.1:1 -c 1 >/dev/null 2>"$out/v"
[ "$(grep -c '^rpcrdma ping: connect to 127.0.0.1 port 1: connection refused' "$out/v")" -eq 1 ] ||
	fail "ping to a closed port: $(cat "$out/v")"
# a usage error is its line and where the help is, not the whole help (as iperf3)
for args in "perf -Z" "perf --sizes 4q" "ping --bogus 127.0.0.1" "ping 127.0.0.1 -c x" \
	"serve --threads 0" "serve x" "decode --bogus" "encode --bogus" "info --bogus" "version x" "nosuch"; do
	# shellcheck disable=SC2086
	"$BIN" $args >/dev/null 2>"$out/u"
	urc=$?
	n=$(wc -l <"$out/u")
	[ "$urc" -eq 2 ] && [ "$n" -eq 2 ] && grep -q "^Try 'rpcrdma.*--help'" "$out/u" ||
		fail "rpcrdma $args: exit $urc, $n lines on stderr: $(head -3 "$out/u")"
done
# decode --pcap of a file that is no capture: invalid input (2), said as the tool's
printf 'not a capture at all, no' >"$out/x.pcap"
"$BIN" decode --pcap "$out/x.pcap" >/dev/null 2>"$out/d"
drc=$?
[ "$drc" -eq 2 ] && grep -q "^rpcrdma decode: $out/x.pcap: not a classic pcap file" "$out/d" ||
	fail "decode --pcap of a non-pcap file: exit $drc, $(cat "$out/d")"
"$BIN" decode --pcap "$out/none.pcap" >/dev/null 2>"$out/d"
drc=$?
[ "$drc" -eq 1 ] && grep -q "^rpcrdma decode: $out/none.pcap: No such file" "$out/d" ||
	fail "decode --pcap of a missing file: exit $drc, $(cat "$out/d")"

# ---- perf ----
# --compare against a named server without its TCP port: a usage error, not a run that
# quietly leaves out the comparison (as ping --tirpc)
usage_error "--tcp-port" perf "127.0.0.1:$rport" --compare --ops null --seconds 0.05
kill -TERM "$spid"
wait "$spid"
spid=

# the raw ceiling in the text output is text, not bench_prov's JSON
"$BIN" perf --ops null --depths 1 --seconds 0.05 --compare >"$out/pc" 2>&1 || fail "perf --compare: $(cat "$out/pc")"
grep -q '{' "$out/pc" && fail "perf --compare prints JSON in its text: $(grep '{' "$out/pc")"
grep -Eq '^  raw/tcp +send_pingpong .*avg [0-9.]+ us' "$out/pc" || fail "perf --compare: no raw ceiling line: $(cat "$out/pc")"
# a ceiling that the RPC beats was measured while something disturbed it: said so, and
# no ratio above 1 (a bench_prov that reports 10 ms ping-pongs stands in for a busy host)
mkdir "$out/fake"
cp "$BIN" "$out/fake/rpcrdma"
printf '%s\n' '#!/bin/sh' \
	"echo '{\"transport\":\"raw/tcp\",\"op\":\"send_pingpong\",\"size\":64,\"depth\":1,\"round_trips\":5,\"avg_us\":10000.00,\"p50_us\":10000.00,\"p99_us\":10000.00}'" \
	>"$out/fake/bench_prov"
chmod +x "$out/fake/bench_prov"
LD_LIBRARY_PATH="$(dirname "$BIN")" "$out/fake/rpcrdma" perf --ops null --depths 1 --seconds 0.1 --compare >"$out/pd" 2>&1 || fail "perf --compare (disturbed): $(cat "$out/pd")"
grep -q 'vs raw/tcp: no ratio: .*disturbed' "$out/pd" && ! grep -q 'x calls/s of raw' "$out/pd" ||
	fail "a ratio above 1 against the raw ceiling: $(grep raw "$out/pd")"
LD_LIBRARY_PATH="$(dirname "$BIN")" "$out/fake/rpcrdma" perf --ops null --depths 1 --seconds 0.1 --compare --json >"$out/pdj" 2>/dev/null || fail "perf --compare --json (disturbed)"
python3 - "$out/pdj" <<'PY' || fail "perf --json, disturbed ceiling: $(cat "$out/pdj")"
import json, sys
raw = [r for r in json.load(open(sys.argv[1]))["ratios"] if "raw" in r["ratio"]]
assert raw and all(r["value"] is None and r["ceiling_disturbed"] for r in raw), raw
PY
# intervals labelled as asked (-i 0.25: 0.00-0.25, not 0.0-0.3)
"$BIN" perf --ops null --depths 1 --seconds 1 -i 0.25 >"$out/pi" 2>&1 || fail "perf -i 0.25: $(cat "$out/pi")"
for l in '(0.00-0.25 s)' '(0.25-0.50 s)' '(0.50-0.75 s)'; do
	grep -qF "$l" "$out/pi" || fail "perf -i 0.25: no interval $l: $(cat "$out/pi")"
done
# -P: a row per connection and their sum in every interval, as iperf3 -P
"$BIN" perf --ops null --depths 2 --seconds 0.6 -i 0.2 -P 3 >"$out/pp" 2>&1 || fail "perf -P 3 -i: $(cat "$out/pp")"
for l in '(0.0-0.2 s)  [1]' '(0.0-0.2 s)  [3]' '(0.0-0.2 s)  [SUM]' '(0.2-0.4 s)  [SUM]'; do
	grep -qF -- "$l" "$out/pp" || fail "perf -P 3 -i 0.2: no row $l: $(cat "$out/pp")"
done
"$BIN" perf --ops null --depths 2 --seconds 0.6 -i 0.2 -P 3 --json >"$out/ppj" 2>/dev/null || fail "perf -P 3 -i --json"
python3 - "$out/ppj" <<'PY' || fail "perf -P 3 -i --json: $(cat "$out/ppj")"
import json, sys
iv = json.load(open(sys.argv[1]))["intervals"]
sums = [i for i in iv if "stream" not in i]
streams = [i for i in iv if "stream" in i]
assert len(sums) >= 2 and all(i["connections"] == 3 for i in sums), iv
assert len(streams) == 3 * len(sums) and {i["stream"] for i in streams} == {1, 2, 3}, iv
for s in sums:
    mine = [i["calls_per_s"] for i in streams if i["t"] == s["t"]]
    assert abs(sum(mine) - s["calls_per_s"]) <= 3, (s, mine)
print("perf -P 3 -i 0.2:", len(sums), "intervals of 3 streams and their sum")
PY
# a run that fails says so in its summary, and the document has every list CLI.md names
"$BIN" perf 127.0.0.1:1 --ops null --seconds 0.05 --json >"$out/pf" 2>/dev/null && fail "perf to a closed port succeeded"
python3 - "$out/pf" <<'PY' || fail "perf --json of a failed run: $(cat "$out/pf")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["summary"]["failed"] >= 1 and d["errors"], d
assert all(d[k] == [] for k in ("results", "ratios", "idle")), d
PY

# ping after its server is killed: each failure says why, with its errno
start_server "$out/pk" "$BIN" serve --listen 127.0.0.1:0
"$BIN" ping "127.0.0.1:$port" -c 6 -i 0.5 >"$out/pkp" 2>&1 &
ppid=$!
sleep 1.2
kill -9 "$spid"
wait "$spid" 2>/dev/null
spid=
wait "$ppid"
grep -q '^seq=[0-9]*: RPC: Unable to send (Connection refused)' "$out/pkp" ||
	fail "ping after the server was killed: $(grep '^seq' "$out/pkp" | tail -2)"

# a host with no route to it (a network namespace with no interface up: nothing leaves
# it) is said to be unreachable, at once; it was 'not an RPC-over-RDMA server'
if unshare -n true 2>/dev/null; then
	unshare -n timeout 30 "$BIN" ping 192.0.2.1 -c 1 >/dev/null 2>"$out/unreach" &&
		fail "ping to a host with no route succeeded"
	grep -q 'cannot be reached from here.*no route' "$out/unreach" ||
		fail "ping to a host with no route: $(cat "$out/unreach")"
else
	echo "no network namespace here (unshare -n): the no-route message not checked"
fi

# info: the text's key size is the JSON's (it said 32bit where JSON said 8 bytes)
"$BIN" info --json >"$out/ij" 2>/dev/null
"$BIN" info >"$out/it" 2>/dev/null
python3 - "$out/ij" "$out/it" <<'PY' || fail "info's key sizes: $(head -3 "$out/it")"
import json, sys
d = json.load(open(sys.argv[1]))
rows = {}
for l in open(sys.argv[2]):
    if l.strip():
        rows.setdefault(l.split()[0], l)   # a provider's row comes before its notes
provs = d["providers"]
for p in provs:
    name, ks = p["provider"], p["key_size_bytes"]
    assert name in rows, name
    assert ("%d B" % ks) in rows[name], (name, ks, rows[name])
PY

[ $rc -eq 0 ] && echo "cli operator: ok"
exit $rc
