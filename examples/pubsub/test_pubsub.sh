#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The pubsub example over RDMA/tcp and RDMA/shm ($EXAMPLE_PROVIDERS: verbs in the VM): several subscribers at once, each
# publishing while the server pushes notifications back over its connection (RFC 8167);
# every subscriber must get every notification exactly once, in order, and its lease
# revoked. Usage: test_pubsub.sh BINDIR [CLIENTS]
set -u
BIN=$1
N=${2:-6}
PEER_LIB_TMP=1
. "$(dirname "$0")/../../tests/peer_lib.sh"

example_providers
rc=0
for prov in $PROVS; do
	start_server "$out/server.$prov" "$BIN/pubsub_server" "$prov"
	cpids=()
	for i in $(seq "$N"); do
		timeout 120 "$BIN/pubsub_client" "$H" "$port" "$prov" 20 \
			>"$out/client.$prov.$i" 2>&1 &
		cpids+=($!)
	done
	for i in $(seq "$N"); do
		wait "${cpids[$((i - 1))]}" || { echo "client $i failed over $prov"; rc=1; }
		cat "$out/client.$prov.$i"
	done
	kill "$spid"; wait "$spid" 2>/dev/null
	n=$(grep -c 'in order, 0 wrong; lease revoked' "$out"/client.$prov.* | awk -F: '{s+=$2} END {print s}')
	echo "== $prov: $n of $N subscribers got every notification once, in order"
	[ "$n" = "$N" ] || rc=1
done
exit $rc
