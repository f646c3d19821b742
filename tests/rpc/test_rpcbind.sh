#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# rpcbind and RDMA, with a real rpcbind (the host's if one answers, else one started here):
# a server that registers as rpcgen's main does (pmap_unset, then svc_register(...,
# IPPROTO_TCP)) is listed under netids rdma and rdma6 with its RDMA port and under tcp with
# its TCP port only; clients given no port find it over IPv4 and IPv6; svc_unregister()
# and exit withdraw it; with no rpcbind at all the server still serves, saying so.
# Needs root (rpcbind binds port 111). Usage: test_rpcbind.sh SERVER CLIENT
set -u
SERVER=$1
CLIENT=$2
[ "$(id -u)" -eq 0 ] || { echo "SKIPPED: rpcbind needs root"; exit 77; }
for c in rpcbind rpcinfo; do
	command -v "$c" >/dev/null || [ -x "/usr/sbin/$c" ] ||
		{ echo "SKIPPED: $c is not installed"; exit 77; }
done
export PATH=$PATH:/usr/sbin
PEER_LIB_TMP=1
. "$(dirname "$0")/../peer_lib.sh"
PROG=537169922   # RT_PROG
rbpid=
stop_all() {
	[ -n "${spid:-}" ] && kill "$spid" 2>/dev/null
	[ -n "$rbpid" ] && kill "$rbpid" 2>/dev/null
	rm -rf "$out"
}
trap stop_all EXIT

rpcbind_up() {
	for _ in $(seq 50); do rpcinfo -p "$H" >/dev/null 2>&1 && return 0; sleep 0.1; done
	return 1
}
if ! rpcinfo -p "$H" >/dev/null 2>&1; then
	rpcbind -f >"$out/rpcbind.log" 2>&1 &
	rbpid=$!
	rpcbind_up || { cat "$out/rpcbind.log"; echo "SKIPPED: rpcbind did not start"; exit 77; }
	echo "started rpcbind (pid $rbpid)"
fi

rc=0
fail() { echo "FAIL: $*"; rc=1; }
serve() {   # start the rpcbind-mode server; $rport / $tport its RDMA and TCP ports
	rm -f "$out/quit"
	mkfifo "$out/quit"
	exec 3<>"$out/quit"   # read-write: opening it does not wait for the other end
	# started here rather than by start_server: a background job's own redirection is
	# the only way its stdin is not /dev/null
	"$SERVER" svc_run rpcbind "$@" <"$out/quit" >"$out/server" 2>&1 &
	spid=$!
	for _ in $(seq 100); do
		grep -q '^listening' "$out/server" && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	read -r _ rport _ tport < <(grep '^listening' "$out/server")
	if [ -z "${rport:-}" ]; then
		cat "$out/server"
		skip_if_server_skipped
		echo "FAIL: the server did not start"
		exit 1
	fi
}

serve
echo "== registered: RDMA port $rport, TCP port $tport"
rpcinfo -s "$H" | grep "^ *$PROG " | tee "$out/s"
grep -q rdma6 "$out/s" && grep -q 'rdma[,[:space:]]' "$out/s" || fail "rpcinfo -s lacks rdma or rdma6"
rpcinfo "$H" | grep "^ *$PROG " | tee "$out/all"
grep -q "rdma .*\.$((rport >> 8))\.$((rport & 255)) " "$out/all" || fail "rdma's address is not port $rport"
rpcinfo -p "$H" | awk -v p=$PROG '$1 == p' | tee "$out/p"
grep -q " $tport *\$" "$out/p" || fail "rpcinfo -p lacks the TCP port $tport"
grep -q " $rport *\$" "$out/p" && fail "rpcinfo -p lists the RDMA port $rport as tcp or udp"
echo "== clients with no port"
timeout 60 "$CLIENT" rdma-$R "$H" 0 rpcbind || fail "IPv4 client through rpcbind"
if [ -f /proc/net/if_inet6 ]; then
	timeout 60 "$CLIENT" rdma-$R "${RPCRDMA_TEST_HOST6:-::1}" 0 rpcbind || fail "IPv6 client through rpcbind"
fi
timeout 60 "$CLIENT" tcp "$H" "$tport" >/dev/null 2>&1 || fail "the TCP transport of the same program"
echo "== svc_unregister and exit"
echo quit >&3
exec 3>&-
wait "$spid"; spid=
cat "$out/server"
rpcinfo -s "$H" | grep -q "^ *$PROG " && fail "still registered after svc_unregister and exit"

# an shm listener, registered as rpcgen's main does: netid rdma, address 0.0.0.0 and its
# port (shm has no network address), never tcp
shm_serve() {   # the provider the others use ($RPCRDMA_PROVIDER: verbs in the VM) stays
	local was=${RPCRDMA_PROVIDER-} set=${RPCRDMA_PROVIDER+1}
	export RPCRDMA_PROVIDER=shm
	serve rdmaonly
	if [ -n "$set" ]; then RPCRDMA_PROVIDER=$was; else unset RPCRDMA_PROVIDER; fi
}
shm_quit() {
	echo quit >&3
	exec 3>&-
	wait "$spid"; spid=
}
echo "== an shm listener"
shm_serve
rpcinfo "$H" | grep "^ *$PROG " | tee "$out/shm"
grep -q "rdma .*0\.0\.0\.0\.$((rport >> 8))\.$((rport & 255)) " "$out/shm" ||
	fail "the shm listener is not registered under rdma with 0.0.0.0 and port $rport"
grep -q "^ *$PROG .* tcp " "$out/shm" && fail "the shm listener is registered as tcp"
timeout 60 "$CLIENT" rdma-shm "$H" "$rport" rpcbind || fail "a client over shm"
shm_quit
rpcinfo -s "$H" | grep -q "^ *$PROG " && fail "the shm listener is still registered after exit"

if [ -n "$rbpid" ]; then
	echo "== no rpcbind"
	kill "$rbpid"; wait "$rbpid" 2>/dev/null; rbpid=
	serve rdmaonly
	grep -q "rpcbind is not running" "$out/server" || fail "no word about the missing rpcbind"
	timeout 60 "$CLIENT" rdma-$R "$H" "$rport" rpcbind || fail "served without rpcbind"
	cat "$out/server"
	echo quit >&3
	exec 3>&-
	wait "$spid"; spid=
	echo "== no rpcbind, shm"
	shm_serve
	grep -q "rpcbind is not running" "$out/server" || fail "shm: no word about the missing rpcbind"
	timeout 60 "$CLIENT" rdma-shm "$H" "$rport" rpcbind || fail "shm: served without rpcbind"
	shm_quit
fi
[ $rc -eq 0 ] && echo "rpcbind: all checks passed"
exit $rc
