#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# What capture costs: `rpcrdma perf` with capture off and with --pcap, interleaved, on
# the same binary, in the same run. Prints a table (median of ROUNDS) and, with --json,
# one JSON object per figure.
# Usage: bench/capture_overhead.sh [BUILD_DIR] [--provider P] [--rounds N] [--seconds S]
#        [--json] [--snaplen N] [--rpcrdma OTHER_BINARY]   (OTHER_BINARY: a second "off" column, e.g.
#        a build from before capture existed, for the cost of the hooks when off)
set -euo pipefail
BUILD=build
PROV=shm
ROUNDS=3
SECS=1
JSON=0
OTHER=
SNAP=()
while [ $# -gt 0 ]; do
	case $1 in
	--provider) PROV=$2; shift ;;
	--rounds) ROUNDS=$2; shift ;;
	--seconds) SECS=$2; shift ;;
	--json) JSON=1 ;;
	--rpcrdma) OTHER=$2; shift ;;
	--snaplen) SNAP=(--pcap-snaplen "$2"); shift ;;
	*) BUILD=$1 ;;
	esac
	shift
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ARGS=(--provider "$PROV" --ops null,read,write --sizes 4k,1m --depths 1,32 --seconds "$SECS" --json-lines)

run() {   # run NAME BINARY [EXTRA...]
	local name=$1 bin=$2
	shift 2
	"$bin" perf "${ARGS[@]}" "$@" 2>>"$tmp/stderr" |
		sed "s/^{/{\"config\":\"$name\",/" >>"$tmp/all.json"
	rm -f "$tmp/cap.pcap"
}

for _ in $(seq "$ROUNDS"); do
	[ -n "$OTHER" ] && run other "$OTHER"
	run off "$BUILD/rpcrdma"
	run on "$BUILD/rpcrdma" --pcap "$tmp/cap.pcap" "${SNAP[@]}"
done
grep -h "dropped" "$tmp/stderr" | sed 's/^/note: /' | sort | uniq -c | head -3 || true

# median of each figure per config; the figure is calls/s for null, MB/s otherwise
awk -v json="$JSON" -v other="$OTHER" '
function get(s, k,   r) { r = s; sub(".*\"" k "\":\"?", "", r); sub("[\",}].*", "", r); return r }
{
	key = get($0, "op") " " get($0, "size") " " get($0, "depth")
	v = get($0, "op") == "null" ? get($0, "calls_per_s") : get($0, "MBps")
	c = get($0, "config")
	n[c, key]++; val[c, key, n[c, key]] = v + 0
	if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
}
function median(c, key,   i, j, t, m, a) {
	m = n[c, key]
	for (i = 1; i <= m; i++) a[i] = val[c, key, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return m ? a[int((m + 1) / 2)] : 0
}
END {
	if (!json) {
		printf "%-6s %8s %5s  %12s%s %12s %12s %9s\n", "op", "bytes", "depth",
		       "", other ? sprintf(" %12s", "other off") : "", "capture off", "capture on", "on/off"
	}
	for (k = 1; k <= nk; k++) {
		key = order[k]; split(key, p, " ")
		unit = p[1] == "null" ? "calls/s" : "MB/s"
		off = median("off", key); on = median("on", key); ot = median("other", key)
		if (json)
			printf "{\"op\":\"%s\",\"size\":%s,\"depth\":%s,\"unit\":\"%s\",\"off\":%.1f,\"on\":%.1f,\"on_over_off\":%.3f%s}\n",
			       p[1], p[2], p[3], unit, off, on, off ? on / off : 0,
			       other ? sprintf(",\"other_off\":%.1f,\"off_over_other\":%.3f", ot, ot ? off / ot : 0) : ""
		else
			printf "%-6s %8s %5s  %12s%s %12.1f %12.1f %8.2fx\n", p[1], p[2], p[3], unit,
			       other ? sprintf(" %12.1f", ot) : "", off, on, off ? on / off : 0
	}
}' "$tmp/all.json"
