# SPDX-License-Identifier: BSD-2-Clause
# Sourced by the tests that read captures with Wireshark's tshark.
# One pass of tshark (two, as Wireshark does) over a file: a line per frame, with
#  1 frame  2 BTH opcode  3 dest QP  4-12 the rpcordma header columns of docs/CAPTURE.md
#  13 RPC msgtyp  14 RPC xid  15 RPC program  16 NFSv3 procedure  17 malformed  18 expert
#  19 RPC procedure
dump() {
	tshark -2 -o rpc.dissect_unknown_programs:TRUE -o ip.check_checksum:TRUE \
		-o udp.check_checksum:TRUE -r "$1" -T fields -E occurrence=f \
		-e frame.number -e infiniband.bth.opcode -e infiniband.bth.destqp \
		-e rpcordma.xid -e rpcordma.msg_type -e rpcordma.flow_control \
		-e rpcordma.reads_count -e rpcordma.writes_count -e rpcordma.reply_count \
		-e rpcordma.errcode -e rpcordma.vers_low -e rpcordma.vers_high \
		-e rpc.msgtyp -e rpc.xid -e rpc.program -e nfs.procedure_v3 \
		-e _ws.malformed -e _ws.expert.severity -e rpc.procedure 2>/dev/null >"$2"
}

# The rpcordma header columns of a dump, one line per message, as `rpcrdma decode --pcap
# FILE --fields` prints them (docs/CAPTURE.md): diff the two.
ws_fields() {
	awk -F'\t' '$5 != "" { OFS = "\t"; print $1, $4, $5, $6, $7, $8, $9, $10, $11, $12 }' "$1"
}

# Frames of a dump that tshark finds malformed or in error (a bad IP or UDP checksum is one).
ws_bad_frames() {
	awk -F'\t' '$17 != "" || $18 >= 8388608' "$1" | wc -l
}
