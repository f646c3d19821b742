#!/usr/bin/env bash
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
NFS_PROG=100003

ts() {
	tshark -2 -o rpc.dissect_unknown_programs:TRUE -r "$@" 2>/dev/null
}

bad() {
	echo "FAIL: $*"
	fail=1
}

# Every Send frame (SEND ONLY, or the LAST of a split one) is an rpcordma message, none is
# malformed, and tshark's header fields are ours.
check_sends() {
	local f=$1 sends msgs malformed
	sends=$(ts "$f" -Y 'infiniband.bth.opcode == 4 || infiniband.bth.opcode == 2' | wc -l)
	ts "$f" -Y rpcordma -T fields -e frame.number -e rpcordma.xid -e rpcordma.msg_type \
		-e rpcordma.flow_control -e rpcordma.reads_count -e rpcordma.writes_count \
		-e rpcordma.reply_count -e rpcordma.errcode -e rpcordma.vers_low \
		-e rpcordma.vers_high >"$out/ws.tsv"
	msgs=$(wc -l <"$out/ws.tsv")
	malformed=$(ts "$f" -Y '_ws.malformed || _ws.expert.severity >= 8388608' | wc -l)
	echo "$(basename "$f"): $sends Sends, $msgs decoded as rpcordma, $malformed malformed"
	[ "$sends" -gt 0 ] && [ "$sends" -eq "$msgs" ] || bad "$f: not every Send is rpcordma"
	[ "$malformed" -eq 0 ] || {
		ts "$f" -Y '_ws.malformed || _ws.expert.severity >= 8388608' | head -5
		bad "$f: malformed frames"
	}
	"$BUILD/rpcrdma" decode --pcap "$f" --fields >"$out/ours.tsv" || bad "$f: decode --pcap"
	diff "$out/ws.tsv" "$out/ours.tsv" >"$out/diff" ||
		{ head -5 "$out/diff"; bad "$f: tshark and rpcrdma decode --pcap differ"; }
}

# The Sends to (or not to) one QP, by message type, as "MSG/NOMSG/MSGP/DONE/ERROR".
sent_by_type() {
	local f=$1 op=$2 qp=$3
	ts "$f" -Y "rpcordma && infiniband.bth.destqp $op $qp" -T fields -e rpcordma.msg_type |
		awk '{ n[$1]++ } END { printf "%d/%d/%d/%d/%d", n[0], n[1], n[2], n[3], n[4] }'
}

# What an engine_peer side printed: "sent MSG/NOMSG/MSGP/DONE/ERROR a/b/c/d/e"
logged() {
	sed -n "s/^$1: calls.* sent MSG\/NOMSG\/MSGP\/DONE\/ERROR \([0-9/]*\) .*/\1/p" "$2"
}

# The server's QP: where the first call went.
server_qp() {
	ts "$1" -Y rpcordma -T fields -e infiniband.bth.destqp | head -1
}

# Calls and replies in the file whose RPC decodes as program $2, and how many of the
# calls' XIDs have a decoded reply.
rpc_counts() {
	local f=$1 prog=$2
	ts "$f" -Y "rpc.program == $prog" -T fields -e rpc.msgtyp -e rpc.xid |
		awk '{ split($1, t, ","); split($2, x, ","); if (t[1] == 0) c[x[1]] = 1; else r[x[1]] = 1 }
		     END { m = 0; for (k in c) if (k in r) m++; printf "%d %d %d", length(c), length(r), m }'
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
	check_sends "$out/server.pcap"
	check_sends "$out/client.pcap"
	sq=$(server_qp "$out/server.pcap")
	s_sent=$(sent_by_type "$out/server.pcap" '!=' "$sq")
	c_sent=$(sent_by_type "$out/client.pcap" '==' "$sq")
	echo "server Sends in its file $s_sent, its engine says $(logged server "$out/server.log")"
	echo "client Sends in its file $c_sent, its engine says $(logged client "$out/client.log")"
	[ "$s_sent" = "$(logged server "$out/server.log")" ] || bad "server's Sends differ"
	[ "$c_sent" = "$(logged client "$out/client.log")" ] || bad "client's Sends differ"
	read -r calls replies matched <<<"$(rpc_counts "$out/server.pcap" $ECHO_PROG)"
	echo "server file: $calls calls and $replies replies decode as program $ECHO_PROG, $matched matched"
	# the server sees every call whole (it reads the read chunks itself); plain mode: every
	# reply too (it writes the write and reply chunks), except the ERR_CHUNK one
	local want_calls want_replies
	want_calls=$(grep -o 'client: [0-9]* calls' "$out/client.log" | grep -o '[0-9]*')
	want_replies=$((want_calls - 1))
	[ "$calls" -eq "$want_calls" ] || bad "server file: calls decoded $calls of $want_calls"
	if [ "$mode" = plain ]; then
		[ "$replies" -eq "$want_replies" ] && [ "$matched" -eq "$want_replies" ] ||
			bad "server file: replies decoded $replies (matched $matched) of $want_replies"
		ts "$out/server.pcap" -Y 'rpcordma.msg_type == 4' -T fields -e rpcordma.xid \
			-e rpcordma.errcode | grep -q '^0x5eee0000	2$' || bad "no ERR_CHUNK for 0x5eee0000"
	else
		# replies with read chunks are whole only in the client's file, which has its reads
		local rr rd
		rr=$(ts "$out/client.pcap" -Y 'rpcordma.msg_type < 3 && rpcordma.reads_count > 0 && infiniband.bth.destqp != '"$sq" | wc -l)
		rd=$(ts "$out/client.pcap" -Y 'rpc.msgtyp == 1 && (infiniband.bth.opcode == 15 || infiniband.bth.opcode == 16)' | wc -l)
		echo "client file: $rr replies with read chunks, $rd decoded as RPC replies after the client's RDMA Reads"
		[ "$rr" -gt 0 ] && [ "$rd" -eq "$rr" ] || bad "client file: replies from read chunks not decoded"
		rr=$(ts "$out/client.pcap" -Y 'rpcordma.msg_type == 2' | wc -l)
		[ "$rr" -gt 0 ] || bad "no RDMA_MSGP"
		[ "$(ts "$out/client.pcap" -Y 'rpcordma.msg_type == 3' | wc -l)" -gt 0 ] || bad "no RDMA_DONE"
		[ "$(ts "$out/client.pcap" -Y 'infiniband.bth.opcode == 12' | wc -l)" -gt 0 ] ||
			bad "no RDMA Read by the client"
	fi
	rm -f "$out"/*.pcap
}

nfs_run() {
	local calls replies matched procs
	echo "== NFSv3 over $PROV, both sides in one file"
	RPCRDMA_PCAP="$out/nfs.pcap" timeout 120 "$BUILD/test_nfs3" "$PROV" >"$out/nfs.log" 2>&1 ||
		{ cat "$out/nfs.log"; bad "test_nfs3"; return; }
	check_sends "$out/nfs.pcap"
	read -r calls replies matched <<<"$(rpc_counts "$out/nfs.pcap" $NFS_PROG)"
	procs=$(ts "$out/nfs.pcap" -Y 'nfs && rpc.msgtyp == 0' -T fields -e nfs.procedure_v3 |
		cut -d, -f1 | sort -un | tr '\n' ' ')
	echo "nfs.pcap: $calls NFS calls, $replies replies, $matched matched; procedures $procs"
	sends=$(ts "$out/nfs.pcap" -Y 'rpcordma.msg_type != 3' | wc -l)
	[ "$((calls + replies))" -eq "$sends" ] && [ "$matched" -eq "$calls" ] ||
		bad "nfs.pcap: not every call and reply decodes as NFS"
	[ "$procs" = "5 6 7 10 " ] || bad "nfs.pcap: procedures $procs, want READLINK READ WRITE SYMLINK"
	rm -f "$out"/*.pcap
}

engine_run plain
engine_run rfc5666
nfs_run
[ "$fail" -eq 0 ] && echo "capture over $PROV: all checks passed"
exit "$fail"
