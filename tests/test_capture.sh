#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Captures read by Wireshark: real traffic over PROV with every message form, captured
# with RPCRDMA_PCAP, then read back with tshark (two passes, as Wireshark does) and with
# `rpcrdma decode --pcap`.
#   - engine_peer, plain: inline calls and replies, read list, write list, reply chunk,
#     long calls (position-zero read chunk), RDMA_ERROR (ERR_CHUNK)
#   - engine_peer, rfc5666: RDMA_MSGP, read chunks in replies and RDMA_DONE
#   - test_nfs3: NFSv3 READ/WRITE/READLINK/SYMLINK, both sides in one process and file
# Checked for each file: every Send decodes as rpcordma and nothing is malformed; every
# header field tshark shows equals our decoder's; each side's Sends by message type equal
# the counters its engine printed; the RPC inside decodes as the right program and
# procedure wherever the file holds all of its bytes (see docs/CAPTURE.md for the rest).
# Usage: test_capture.sh BUILD_DIR PROV
set -u
BUILD=$1
PROV=$2
if ! command -v tshark >/dev/null; then
	echo "SKIPPED: tshark is not installed (scripts/setup.sh installs it)"
	exit 77
fi
PEER_LIB_TMP=1
. "$(dirname "$0")/peer_lib.sh"
export RPCRDMA_PCAP_BUFFER=$((512 << 20))   # this test wants every frame
fail=0
ECHO_PROG=536871065   # 0x20000099, tests/engine_rig.h
ECHO_PROC=1
NFS_PROG=100003

. "$(dirname "$0")/tshark_lib.sh"

# awk over a dump, tab-separated
q() {
	local d=$1
	shift
	awk -F'\t' "$@" "$d"
}

bad() {
	echo "FAIL: $*"
	fail=1
}

# On failure, the evidence: the capture, the dump and the log, where CAPTURE_KEEP says
keep() {
	[ -n "${CAPTURE_KEEP:-}" ] || return 0
	mkdir -p "$CAPTURE_KEEP"
	cp "$out/$1".* "$CAPTURE_KEEP/" 2>/dev/null
	echo "kept $1.* in $CAPTURE_KEEP"
}

# Every Send frame (SEND ONLY, or the LAST of a split one) is an rpcordma message, none is
# malformed or has an error (a bad IP or UDP checksum is one), and tshark's header fields
# are ours.
check_sends() {
	local f=$1 d=$2 sends msgs malformed
	sends=$(q "$d" '$2 == 4 || $2 == 2' | wc -l)
	ws_fields "$d" >"$out/ws.tsv"
	msgs=$(wc -l <"$out/ws.tsv")
	malformed=$(ws_bad_frames "$d")
	echo "$(basename "$f"): $sends Sends, $msgs decoded as rpcordma, $malformed malformed"
	[ "$sends" -gt 0 ] && [ "$sends" -eq "$msgs" ] || bad "$f: not every Send is rpcordma"
	[ "$malformed" -eq 0 ] || bad "$f: malformed frames"
	"$BUILD/rpcrdma" decode --pcap "$f" --fields >"$out/ours.tsv" || bad "$f: decode --pcap"
	diff "$out/ws.tsv" "$out/ours.tsv" >"$out/diff" ||
		{ head -5 "$out/diff"; bad "$f: tshark and rpcrdma decode --pcap differ"; }
}

# The Sends to (or not to) one QP, by message type, as "MSG/NOMSG/MSGP/DONE/ERROR".
sent_by_type() {
	local d=$1 op=$2 qp=$3
	q "$d" -v qp="$qp" -v op="$op" '$5 != "" && (op == "to" ? $3 == qp : $3 != qp) { n[$5]++ }
		END { printf "%d/%d/%d/%d/%d", n[0], n[1], n[2], n[3], n[4] }'
}

# What an engine_peer side printed: "sent MSG/NOMSG/MSGP/DONE/ERROR a/b/c/d/e"
logged() {
	sed -n "s/^$1: calls.* sent MSG\/NOMSG\/MSGP\/DONE\/ERROR \([0-9/]*\) .*/\1/p" "$2"
}

# The server's QP: where the first call went.
server_qp() {
	q "$1" '$5 != "" { print $3; exit }'
}

# Calls and replies whose RPC decodes as program $2 (and procedure $3 if given), and how
# many calls have a reply.
rpc_counts() {
	q "$1" -v prog="$2" -v proc="${3:-}" '$15 == prog && (proc == "" || $19 == proc) {
		if ($13 == 0) c[$14] = 1; else r[$14] = 1 }
		END { m = 0; for (k in c) if (k in r) m++; printf "%d %d %d", length(c), length(r), m }'
}

# A capture file is input like any other: cut short or with bytes changed, the reader
# reports and goes on (exit 0, 1 or 2), never crashes.
damaged_files() {
	local f=$1 size cut rc i
	size=$(stat -c %s "$f")
	for cut in 10 24 30 100 400 1000 5000 $((size - 7)); do
		head -c "$cut" "$f" >"$out/cut.pcap"
		"$BUILD/rpcrdma" decode --pcap "$out/cut.pcap" >/dev/null 2>&1
		rc=$?
		[ "$rc" -le 2 ] || bad "decode --pcap of a file cut at $cut bytes: exit $rc"
	done
	for i in 1 2 3 4 5 6 7 8; do
		cp "$f" "$out/flip.pcap"
		# a run of bytes changed somewhere after the file header
		printf '\xff\x00\x7f\x80\xff\xff' | dd of="$out/flip.pcap" bs=1 \
			seek=$((24 + (i * 7919) % (size - 30))) conv=notrunc 2>/dev/null
		"$BUILD/rpcrdma" decode --pcap "$out/flip.pcap" --json >/dev/null 2>&1
		rc=$?
		[ "$rc" -le 2 ] || bad "decode --pcap of a damaged file: exit $rc"
	done
}

engine_run() {
	local mode=$1 sq cq s_sent c_sent calls replies matched
	echo "== engine_peer over $PROV, $mode"
	start_server "$out/server.log" env RPCRDMA_PCAP="$out/server.pcap" \
		"$BUILD/engine_peer" server "$PROV" 0 1024 "$mode"
	RPCRDMA_PCAP="$out/client.pcap" timeout 300 "$BUILD/engine_peer" client "$PROV" \
		127.0.0.1 "$port" 1024 "$mode" >"$out/client.log" 2>&1
	finish_peers "$out/server.log" $? >/dev/null || { cat "$out/client.log" "$out/server.log"; bad "engine_peer $mode"; return; }
	grep -h "dropped" "$out/client.log" "$out/server.log" && bad "frames dropped"
	dump "$out/server.pcap" "$out/server.tsv"
	dump "$out/client.pcap" "$out/client.tsv"
	check_sends "$out/server.pcap" "$out/server.tsv"
	check_sends "$out/client.pcap" "$out/client.tsv"
	sq=$(server_qp "$out/server.tsv")
	s_sent=$(sent_by_type "$out/server.tsv" from "$sq")
	c_sent=$(sent_by_type "$out/client.tsv" to "$sq")
	echo "server Sends in its file $s_sent, its engine says $(logged server "$out/server.log")"
	echo "client Sends in its file $c_sent, its engine says $(logged client "$out/client.log")"
	[ "$s_sent" = "$(logged server "$out/server.log")" ] || bad "server's Sends differ"
	[ "$c_sent" = "$(logged client "$out/client.log")" ] || bad "client's Sends differ"
	# Each file holds every call and reply whole: what a side did itself, and the peer's
	# RDMA on its memory, shown when the peer's answer arrived. The ERR_CHUNK call (a long
	# call) has no reply, and an RDMA_ERROR does not tell whether the server read the
	# call's chunk, so the client's file does not show that call's body.
	local all_calls want_calls want_replies side
	all_calls=$(grep -o 'client: [0-9]* calls' "$out/client.log" | grep -o '[0-9]*')
	want_replies=$all_calls
	[ "$mode" = plain ] && want_replies=$((all_calls - 1))
	for side in server client; do
		want_calls=$all_calls
		[ "$side" = client ] && want_calls=$want_replies
		read -r calls replies matched <<<"$(rpc_counts "$out/$side.tsv" $ECHO_PROG $ECHO_PROC)"
		echo "$side file: $calls calls and $replies replies decode as program $ECHO_PROG procedure $ECHO_PROC, $matched matched"
		[ "$calls" -eq "$want_calls" ] || bad "$side file: calls decoded $calls of $want_calls"
		[ "$replies" -eq "$want_replies" ] && [ "$matched" -eq "$want_replies" ] ||
			bad "$side file: replies decoded $replies (matched $matched) of $want_replies"
	done
	if [ "$mode" = plain ]; then
		[ "$(q "$out/server.tsv" '$5 == 4 && $4 == "0x5eee0000" && $10 == 2' | wc -l)" -eq 1 ] ||
			bad "no RDMA_ERROR / ERR_CHUNK for 0x5eee0000"
	else
		[ "$(q "$out/client.tsv" '$5 == 2' | wc -l)" -gt 0 ] || bad "no RDMA_MSGP"
		[ "$(q "$out/client.tsv" '$5 == 3' | wc -l)" -gt 0 ] || bad "no RDMA_DONE"
		[ "$(q "$out/client.tsv" -v qp="$sq" '$5 != "" && $5 < 3 && $7 > 0 && $3 != qp' | wc -l)" -gt 0 ] ||
			bad "no reply with read chunks"
	fi
	rm -f "$out"/*.pcap "$out"/*.tsv
}

nfs_run() {
	local calls replies matched procs host=${1:-127.0.0.1}
	echo "== NFSv3 over $PROV ($host), both sides in one file"
	RPCRDMA_PCAP="$out/nfs.pcap" timeout 120 "$BUILD/test_nfs3" "$PROV" "$host" >"$out/nfs.log" 2>&1 ||
		{ cat "$out/nfs.log"; bad "test_nfs3"; return; }
	dump "$out/nfs.pcap" "$out/nfs.tsv"
	check_sends "$out/nfs.pcap" "$out/nfs.tsv"
	read -r calls replies matched <<<"$(rpc_counts "$out/nfs.tsv" $NFS_PROG)"
	procs=$(q "$out/nfs.tsv" '$13 == 0 && $16 != "" { print $16 }' | sort -un | tr '\n' ' ')
	echo "nfs.pcap: $calls NFS calls, $replies replies, $matched matched; procedures $procs"
	sends=$(q "$out/nfs.tsv" '$5 != "" && $5 != 3' | wc -l)
	[ "$((calls + replies))" -eq "$sends" ] && [ "$matched" -eq "$calls" ] ||
		{ bad "nfs.pcap: not every call and reply decodes as NFS"; keep nfs; }
	[ "$procs" = "5 6 7 10 " ] || bad "nfs.pcap: procedures $procs, want READLINK READ WRITE SYMLINK"
	damaged_files "$out/nfs.pcap"
	rm -f "$out"/*.pcap
}

engine_run plain
engine_run rfc5666
nfs_run
[ "$PROV" = tcp ] && nfs_run ::1   # IPv6 frames for an IPv6 connection
[ "$fail" -eq 0 ] && echo "capture over $PROV: all checks passed"
exit "$fail"
