# SPDX-License-Identifier: BSD-2-Clause
# The address of both ends of the two-process tests ($H; tests/test_host.h for the C ones)
# and the provider of a test server's first RDMA listener ($R): 127.0.0.1 and tcp, or the
# VM suite's soft-RoCE address and verbs.
H=${RPCRDMA_TEST_HOST:-127.0.0.1}
R=${RPCRDMA_PROVIDER:-tcp}

# Sourced by the two-process tests. With PEER_LIB_TMP=1 set before sourcing, it also makes
# the scratch folder $out and removes it (and stops the server) on exit.
if [ "${PEER_LIB_TMP:-}" = 1 ]; then
	out=$(mktemp -d)
	peer_cleanup() {
		if [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null; then
			# a server left running would weigh on whatever runs next
			for _ in $(seq 50); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
			kill -9 "$spid" 2>/dev/null
		fi
		rm -rf "$out"
	}
	trap peer_cleanup EXIT
fi

# start_server: start a peer server that prints "listening PORT",
# wait for it, and set $spid and $port. Exits 77 (skip) when the provider is not usable
# here (the server says so, or exits 77), 1 when the server fails otherwise.
# Usage: start_server LOGFILE CMD...
start_server() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 &
	spid=$!
	for _ in $(seq 100); do
		grep -q '^listening' "$log" 2>/dev/null && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	port=$(sed -n 's/^listening //p' "$log")
	if [ -z "$port" ]; then
		cat "$log"
		grep -q 'no usable\|not usable' "$log" && { echo "SKIPPED: provider not usable"; exit 77; }
		skip_if_server_skipped
		exit 1
	fi
}

# A server ($spid) that exited 77 said its provider is not here: skip (exit 77).
skip_if_server_skipped() {
	kill -0 "$spid" 2>/dev/null && return 0
	wait "$spid"
	[ $? -eq 77 ] || return 0
	echo "SKIPPED: the server says its provider is not here"
	exit 77
}

# Is there an RDMA device (the verbs provider's) on this host?
rdma_device_here() {
	ls /sys/class/infiniband 2>/dev/null | grep -q .
}

# Wait for the server, show its log, and succeed only if both sides did.
# Usage: finish_peers LOGFILE CLIENT_EXIT
finish_peers() {
	local src
	wait "$spid"
	src=$?
	spid=
	cat "$1"
	echo "client exit $2, server exit $src"
	[ "$2" -eq 0 ] && [ "$src" -eq 0 ]
}

# The RDMA providers an example's test runs over, in $PROVS: $EXAMPLE_PROVIDERS (the VM
# suite's "verbs"), else "tcp shm". Exits 77 (skip) when verbs is asked for and there is
# no RDMA device here.
example_providers() {
	PROVS=${EXAMPLE_PROVIDERS:-tcp shm}
	case " $PROVS " in
	(*" verbs "*) rdma_device_here || { echo "SKIPPED: no RDMA device here for verbs"; exit 77; } ;;
	esac
}

# The tool $BIN exits STATUS and its stderr says EXPECTED_TEXT (the CLI tests; fail() and
# $out are the caller's). usage_error: exit 2; says: a failure, exit 1 (its line shown).
exits_saying() {   # STATUS EXPECTED_TEXT ARGS...
	local status=$1 want=$2 got
	shift 2
	timeout 30 "$BIN" "$@" >/dev/null 2>"$out/err"
	got=$?
	if [ "$got" -ne "$status" ] || ! grep -qF -- "$want" "$out/err"; then
		fail "rpcrdma $*: exit $got, stderr: $(head -3 "$out/err") (wanted $status and \"$want\")"
	elif [ "$status" -ne 2 ]; then
		echo "rpcrdma $*: $(head -1 "$out/err")"
	fi
}
usage_error() { exits_saying 2 "$@"; }
says() { exits_saying 1 "$@"; }

# nfs3d_run LOG NFS3D_ARGUMENTS...: nfs3d ($BIN/nfs3d) started in the background, logging
# to LOG; sets spid and the ports it prints (rport, tport, mport). Fails, showing the log,
# when it does not say it serves.
nfs3d_run() {
	local log=$1
	shift
	"$BIN/nfs3d" "$@" >"$log" 2>&1 &
	spid=$!
	for _ in $(seq 200); do grep -q '^nfs3d: .* rdma=' "$log" && break; sleep 0.05; done
	rport=$(sed -n 's/^nfs3d: .* rdma=\([0-9]*\) .*/\1/p' "$log")
	tport=$(sed -n 's/^nfs3d: .* tcp=\([0-9]*\) .*/\1/p' "$log")
	mport=$(sed -n 's/^nfs3d: .* mount=\([0-9]*\) .*/\1/p' "$log")
	[ -n "$mport" ] || { cat "$log"; return 1; }
}
