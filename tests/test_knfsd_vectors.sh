#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# What the Linux kernel's NFS server sends, kept as test data: samples/knfsd/*.pcap are our
# client's side of nfs3cp runs against knfsd over soft-RoCE (the VM suite, RPCRDMA_PCAP):
# a 300000-byte WRITE in read chunks, the READ of it in write chunks, a READDIRPLUS of 302
# entries. Every message decodes (rpcrdma decode --pcap), Wireshark reads each as we do
# (when tshark is here), and knfsd's choices documented in docs/ENGINE.md hold.
# Usage: test_knfsd_vectors.sh RPCRDMA_BIN SOURCE_DIR
set -u
BIN=$1
SRC=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
. "$(dirname "$0")/tshark_lib.sh"

for f in "$SRC"/samples/knfsd/*.pcap; do
	n=$(basename "$f" .pcap)
	"$BIN" decode --pcap "$f" --json >"$out/$n.json" || bad "$n: a message did not decode"
	echo "$n: $(wc -l <"$out/$n.json") messages decoded"
	if command -v tshark >/dev/null; then
		dump "$f" "$out/$n.ws"
		ws_fields "$out/$n.ws" >"$out/$n.ws.tsv"
		"$BIN" decode --pcap "$f" --fields >"$out/$n.ours.tsv"
		diff "$out/$n.ws.tsv" "$out/$n.ours.tsv" >/dev/null ||
			bad "$n: tshark and rpcrdma decode --pcap differ"
		[ "$(ws_bad_frames "$out/$n.ws")" -eq 0 ] || bad "$n: tshark finds malformed frames"
		echo "$n: Wireshark reads $(wc -l <"$out/$n.ws.tsv") messages as we do"
	else
		echo "tshark is not installed: Wireshark's reading not compared"
	fi
done

# knfsd's choices (docs/ENGINE.md, "What the Linux kernel does")
python3 - "$out" <<'PY' || fail=1
import json, sys
d = sys.argv[1]
def load(n):
    return [json.loads(l) for l in open(f"{d}/{n}.json")]
ok = True
def need(cond, what):
    global ok
    print(("ok:   " if cond else "FAIL: ") + what)
    ok &= bool(cond)
for n, proc in (("read", 6), ("write", 7), ("readdirplus", 17)):
    msgs = load(n)
    calls = {m["xid"]: m for m in msgs if m.get("rpc") and m["rpc"]["direction"] == "call"}
    replies = [m for m in msgs if m["xid"] in calls and m is not calls[m["xid"]]]
    ours = [m for m in replies if calls[m["xid"]]["rpc"]["proc"] == proc]
    need(ours, f"{n}: knfsd answered the calls of procedure {proc}")
    need(all(m["credits"] == 64 for m in replies), f"{n}: knfsd grants 64 credits in every reply")
    offered = [m for m in replies if calls[m["xid"]]["reply"]]
    need(all(m["proc"] == "RDMA_NOMSG" and m["reply"] for m in offered),
         f"{n}: where a reply chunk was offered, knfsd replied RDMA_NOMSG through it ({len(offered)})")
    if n == "read":
        need(all(m["proc"] == "RDMA_MSG" and len(m["writes"]) == 1 and m["reply"] is None
                 and sum(s["length"] for s in m["writes"][0]) <=
                 sum(s["length"] for s in calls[m["xid"]]["writes"][0]) for m in ours),
             "read: READ data in the write chunk offered, lengths rewritten, no reply chunk")
        need(sum(sum(s["length"] for s in m["writes"][0]) for m in ours) == 300000,
             "read: 300000 bytes in the write chunks, no XDR pad written")
    if n == "write":
        wc = [calls[m["xid"]] for m in ours]
        need(all(c["reads"] and c["reads"][0]["position"] > 0 for c in wc),
             "write: our WRITE data went as a read chunk at its XDR position")
        need(all(m["proc"] == "RDMA_MSG" and not m["reads"] and not m["writes"] and
                 m["reply"] is None for m in ours), "write: knfsd answered WRITE inline")
    if n == "readdirplus":
        need(all(m["reply"] and sum(s["length"] for s in m["reply"]) > 4096 for m in ours),
             "readdirplus: the long reply came in the reply chunk")
sys.exit(0 if ok else 1)
PY
[ $fail -eq 0 ] && echo "knfsd vectors: passed" || echo "knfsd vectors: FAILED"
exit $fail
