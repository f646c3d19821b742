#!/usr/bin/env bash
# The RPC layer end to end: rt_server (RDMA over libfabric tcp and shm, and plain TCP) and
# rt_client over each transport; the outcomes printed over RDMA must be those over TCP.
# Usage: test_rpc.sh SERVER CLIENT svc_run|workers
set -u
SERVER=$1
CLIENT=$2
MODE=$3
PEER_LIB_TMP=1
. "$(dirname "$0")/../peer_lib.sh"

run_server() {
	start_server "$out/server" "$SERVER" "$MODE" "$@"
	read -r rport sport tport <<<"$port"
}

rc=0
run_server
for t in rdma-tcp:$rport rdma-shm:$sport tcp:$tport; do
	tr=${t%%:*}
	[ "$MODE" = workers ] && [ "$tr" = tcp ] && continue   # workers serve RDMA only
	echo "== $tr"
	timeout 300 "$CLIENT" "$tr" 127.0.0.1 "${t##*:}" >"$out/$tr" || rc=1
	cat "$out/$tr"
done
if [ "$MODE" = svc_run ]; then
	# same outcomes over RDMA as over TCP (lines that exist on both)
	for tr in rdma-tcp rdma-shm; do
		sed "s/^$tr //" "$out/$tr" | grep -v -e 'passed' -e ddp -e async -e 'server gone' >"$out/a"
		sed 's/^tcp //' "$out/tcp" | grep -v -e 'passed' >"$out/b"
		diff "$out/b" "$out/a" || { echo "outcomes differ: $tr vs tcp"; rc=1; }
	done
fi
kill "$spid"; wait "$spid" 2>/dev/null; spid=
# without a binding: long calls and replies still work
run_server nobinding
echo "== rdma-tcp nobinding"
timeout 120 "$CLIENT" rdma-tcp 127.0.0.1 "$rport" nobinding || rc=1
kill "$spid"; wait "$spid" 2>/dev/null; spid=
# the server goes away under a connected client
echo "== server gone"
run_server
mkfifo "$out/go"
timeout 60 "$CLIENT" rdma-tcp 127.0.0.1 "$rport" gone <"$out/go" >"$out/gone" &
cpid=$!
exec 3>"$out/go"
for _ in $(seq 100); do grep -q ready "$out/gone" && break; sleep 0.1; done
kill -9 "$spid"; wait "$spid" 2>/dev/null; spid=
echo go >&3
exec 3>&-
wait "$cpid" || rc=1
cat "$out/gone"
exit $rc
