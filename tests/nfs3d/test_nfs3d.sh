#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# nfs3d (examples/nfs3) without a kernel client: for each provider in $EXAMPLE_PROVIDERS
# (default: tcp shm; verbs in the VM suite) one nfs3d serves a fresh directory, and
#  - check_nfs3d runs every procedure and every hostile input over ONC RPC/TCP and over
#    RDMA, checking each answer against the directory itself;
#  - nfs3cp copies 16 MiB each way over RDMA, byte for byte, and lists a directory;
#  - a handle taken before a SIGKILL and restart of nfs3d still works after it.
# The kernel's client mounting nfs3d is the VM suite's (tests/vm, suite nfs3d).
# Needs root (open_by_handle_at) and a $TMPDIR (else /tmp) whose file system gives file
# handles (not overlayfs); exit 77 without root. Usage: test_nfs3d.sh BINDIR
set -u
BIN=$1
[ "$(id -u)" = 0 ] || { echo "SKIPPED: nfs3d needs root (CAP_DAC_READ_SEARCH)"; exit 77; }
out=$(mktemp -d "${TMPDIR:-/tmp}/nfs3d-test.XXXXXX")
spid=
cleanup() {
	[ -n "$spid" ] && kill -9 "$spid" 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT
. "$(dirname "$0")/../peer_lib.sh"
example_providers

# start_nfs3d PROVIDER DIR [RDMA_PORT TCP_PORT MOUNT_PORT]: sets spid, rport, tport, mport
start_nfs3d() {
	nfs3d_run "$out/nfs3d.$1.log" -o no_root_squash --state-dir "$out/state" --provider "$1" \
		--listen "$H:${3:-0}" --tcp-port "${4:-0}" --mount-port "${5:-0}" "$2"
}

stop_nfs3d() {
	kill "$spid" && wait "$spid"
	local rc=$?
	spid=
	return $rc
}

rc=0
head -c 16777216 /dev/urandom >"$out/src.bin"
for p in $PROVS; do
	echo "== nfs3d over $p"
	exp=$out/export.$p
	mkdir -p "$exp/sub"
	start_nfs3d "$p" "$exp" || { rc=1; continue; }
	for how in onc "$p"; do
		port=$rport
		[ "$how" = onc ] && port=$tport
		timeout 300 "$BIN/check_nfs3d" "$how" "$H" "$port" "$mport" "$exp" || rc=1
	done
	copy() { timeout 300 "$BIN/nfs3cp" --provider "$p" --port "$rport" --mount-port "$mport" "$@"; }
	copy "$out/src.bin" "$H:$exp/sub/to.bin" || rc=1
	cmp "$out/src.bin" "$exp/sub/to.bin" || rc=1
	cp "$out/src.bin" "$exp/from.bin"
	copy "$H:$exp/from.bin" "$out/back.bin" || rc=1
	cmp "$out/src.bin" "$out/back.bin" || rc=1
	copy --list "$H:$exp" >"$out/list" 2>"$out/list.err" || rc=1
	grep -q ' from.bin$' "$out/list" && grep -q ' sub$' "$out/list" || { cat "$out/list"; rc=1; }
	# the summary names the directory listed (it printed an empty path)
	grep -qF "entries in $H:$exp (READDIRPLUS)" "$out/list.err" ||
		{ echo "nfs3cp --list summary: $(cat "$out/list.err")"; rc=1; }
	# without --mount-port and with no rpcbind to ask, the error says what to do
	if ! (exec 3<>/dev/tcp/127.0.0.1/111) 2>/dev/null; then
		timeout 60 "$BIN/nfs3cp" --provider "$p" --port "$rport" --list "$H:$exp" \
			>/dev/null 2>"$out/nomount" && rc=1
		grep -q -- '--mount-port N' "$out/nomount" ||
			{ echo "no hint without rpcbind: $(cat "$out/nomount")"; rc=1; }
	else
		echo "rpcbind answers on port 111 here: the hint without it not checked"
	fi
	# a handle survives a SIGKILL and a restart on the same ports
	echo kept >"$exp/kept"
	"$BIN/check_nfs3d" "$p" "$H" "$rport" "$mport" "$exp" save "$out/fh" || rc=1
	kill -9 "$spid"; wait "$spid" 2>/dev/null
	start_nfs3d "$p" "$exp" "$rport" "$tport" "$mport" || { rc=1; continue; }
	"$BIN/check_nfs3d" "$p" "$H" "$rport" "$mport" "$exp" reuse "$out/fh" &&
		echo "a handle from before a SIGKILL and restart still works" || rc=1
	stop_nfs3d || { echo "nfs3d did not stop cleanly on SIGTERM"; rc=1; }
	cat "$out/nfs3d.$p.log"
done
exit $rc
