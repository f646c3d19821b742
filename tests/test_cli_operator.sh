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

usage_error() {   # EXPECTED_TEXT ARGS...
	local want=$1 got
	shift
	timeout 30 "$BIN" "$@" >/dev/null 2>"$out/err"
	got=$?
	if [ "$got" -ne 2 ] || ! grep -qF -- "$want" "$out/err"; then
		fail "rpcrdma $*: exit $got, stderr: $(head -3 "$out/err") (wanted 2 and \"$want\")"
	fi
}

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

kill -TERM "$spid"
wait "$spid"
spid=

[ $rc -eq 0 ] && echo "cli operator: ok"
exit $rc
