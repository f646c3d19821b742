#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# nfs3d as a server on a network (examples/nfs3d, nfs3d(8)): for each provider in
# $EXAMPLE_PROVIDERS (default: tcp), over ONC RPC/TCP and over RDMA, check_nfs3d's
# modes check each caller's rights against the export's own files (check_auth.c):
#  - default options (rw, root_squash, secure): users, groups, a squashed root, AUTH_NONE,
#    device nodes and FIFOs, forged and padded handles, a tree deeper than PATH_MAX,
#    removed files, and MOUNT's answers;
#  - -o ro; -o all_squash,anonuid=1234,anongid=1234;
#  - a client list without this host; calls from unprivileged TCP ports, refused by
#    "secure" (the default) and taken with "insecure".
# Needs root (nfs3d's open_by_handle_at and its identity switches); exit 77 without.
# Usage: test_nfs3d_auth.sh BINDIR
set -u
BIN=$1
[ "$(id -u)" = 0 ] || { echo "SKIPPED: nfs3d needs root"; exit 77; }
out=$(mktemp -d "${TMPDIR:-/tmp}/nfs3d-auth.XXXXXX")
chmod 755 "$out"   # the squashed and the users below must reach the export through it
spid=
cleanup() {
	[ -n "$spid" ] && kill -9 "$spid" 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT
. "$(dirname "$0")/../peer_lib.sh"
PROVS=${EXAMPLE_PROVIDERS:-tcp}

# start PROVIDER NFS3D_ARGUMENTS...: sets spid, rport, tport, mport
start() {
	local p=$1
	shift
	nfs3d_run "$out/nfs3d.log" --state-dir "$out/state" --provider "$p" --listen "$H:0" "$@"
}

stop() {
	kill "$spid" && wait "$spid"
	spid=
}

# the files whose owners and modes the checks ask about
prepare() {
	local e=$1
	rm -rf "$e"
	mkdir -p "$e/open"
	chmod 755 "$e"
	chmod 1777 "$e/open"
	echo secret >"$e/secret"; chmod 600 "$e/secret"
	echo pub >"$e/pub"; chmod 644 "$e/pub"
	echo grp >"$e/grp"; chown 0:4242 "$e/grp"; chmod 640 "$e/grp"
	echo prog >"$e/prog"; chmod 711 "$e/prog"
	echo kept >"$e/kept"
	mknod "$e/zero" c 1 5
	mkfifo "$e/fifo"
}

check() {   # check HOW MODE [ARG]
	timeout 300 "$BIN/check_nfs3d" "$1" "$H" "$([ "$1" = onc ] && echo "$tport" || echo "$rport")" \
		"$mport" "$exp" "${@:2}"
}

rc=0
for p in $PROVS; do
	echo "== nfs3d over $p"
	exp=$out/export.$p
	for how in onc "$p"; do
		prepare "$exp"
		start "$p" -v "$exp" || { rc=1; continue; }
		check "$how" identity || rc=1
		check "$how" save "$out/fh" || rc=1
		stop
		start "$p" -o ro "$exp" || { rc=1; continue; }
		check "$how" ro || rc=1
		stop
		start "$p" -o all_squash,anonuid=1234,anongid=1234 "$exp" || { rc=1; continue; }
		check "$how" allsquash || rc=1
		stop
		start "$p" "$exp" 192.0.2.0/24 || { rc=1; continue; }
		check "$how" denied "$out/fh" || rc=1
		stop
	done
	# the source port counts over TCP only (over RDMA every call is "secure", as knfsd's)
	start "$p" "$exp" || { rc=1; continue; }
	check onc port-refused "$out/fh" || rc=1
	stop
	start "$p" "$exp" '*(insecure)' || { rc=1; continue; }
	check onc port-taken "$out/fh" || rc=1
	stop
done
[ $rc = 0 ] || cat "$out/nfs3d.log"
exit $rc
