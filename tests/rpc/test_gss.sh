#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# RPCSEC_GSS over RDMA with real Kerberos 5: a throwaway realm (its own KDC on a free
# port, database, keytab and ticket cache, all under a scratch folder; nothing of the
# host's Kerberos set-up is read or touched), the test server on svc_run() with the
# service key, and the client at each service level (none, integrity, privacy) over plain
# TCP, RDMA on libfabric tcp and RDMA on shm: the same outcomes everywhere, every byte
# checked, and in a capture of the RDMA traffic the privacy run's data never appears
# (no DDP under RPCSEC_GSS: RFC 8166 §8.2.1), while the integrity run's does. Then each
# level again with calls in flight against a server with lanes (conn_parallel).
# Needs krb5-kdc, krb5-admin-server (kadmin.local) and krb5-user (kinit); skipped without.
# Usage: test_gss.sh SERVER CLIENT
set -u
SERVER=$1
CLIENT=$2
export PATH=$PATH:/usr/sbin
for c in krb5kdc kdb5_util kadmin.local kinit; do
	command -v "$c" >/dev/null || { echo "SKIPPED: $c is not installed"; exit 77; }
done
PEER_LIB_TMP=1
. "$(dirname "$0")/../peer_lib.sh"
kpid=
stop_kdc() { [ -n "$kpid" ] && kill "$kpid" 2>/dev/null; peer_cleanup; }
trap stop_kdc EXIT

k=$out/krb
mkdir -p "$k"
realm=RPCRDMA.TEST
export KRB5_CONFIG=$k/krb5.conf KRB5_KDC_PROFILE=$k/kdc.conf KRB5CCNAME=FILE:$k/ccache \
	KRB5_KTNAME=FILE:$k/keytab RT_GSS_SERVICE=rpctest@localhost
write_conf() {
	cat >"$k/krb5.conf" <<EOF
[libdefaults]
	default_realm = $realm
	dns_lookup_kdc = false
	dns_lookup_realm = false
	dns_canonicalize_hostname = false
	rdns = false
	udp_preference_limit = 1
[realms]
	$realm = {
		kdc = 127.0.0.1:$1
	}
[domain_realm]
	localhost = $realm
EOF
	cat >"$k/kdc.conf" <<EOF
[kdcdefaults]
	kdc_ports = $1
	kdc_tcp_ports = $1
[realms]
	$realm = {
		database_name = $k/principal
		key_stash_file = $k/stash
		acl_file = $k/kadm5.acl
		supported_enctypes = aes256-cts-hmac-sha1-96:normal
	}
[logging]
	kdc = FILE:$k/kdc.log
EOF
}

# a KDC on a port nobody uses (tried until one is free)
for try in $(seq 20); do
	kport=$((20000 + RANDOM % 30000))
	write_conf "$kport"
	if [ ! -e "$k/principal" ]; then
		kdb5_util create -s -r "$realm" -P "master-$$" >"$k/setup.log" 2>&1 ||
			{ cat "$k/setup.log"; echo "FAIL: kdb5_util create"; exit 1; }
		kadmin.local -r "$realm" -q "addprinc -pw tester-$$ tester" >>"$k/setup.log" 2>&1
		kadmin.local -r "$realm" -q "addprinc -randkey rpctest/localhost" >>"$k/setup.log" 2>&1
		kadmin.local -r "$realm" -q "ktadd -k $k/keytab rpctest/localhost" >>"$k/setup.log" 2>&1
	fi
	krb5kdc -n -P "$k/kdc.pid" >>"$k/kdc.out" 2>&1 &
	kpid=$!
	sleep 0.5
	if kill -0 "$kpid" 2>/dev/null && echo "tester-$$" | kinit tester >"$k/kinit.log" 2>&1; then
		break
	fi
	kill "$kpid" 2>/dev/null
	kpid=
done
[ -n "$kpid" ] || { cat "$k/setup.log" "$k/kdc.out" "$k/kinit.log" 2>/dev/null;
	echo "FAIL: no KDC"; exit 1; }
echo "realm $realm: KDC on port $kport, ticket for tester@$realm, key for rpctest/localhost"

start_server "$out/serve" "$SERVER"
read -r rport sport tport <<<"$port"

rc=0
for t in tcp rdma-$R rdma-shm; do
	case $t in tcp) p=$tport ;; rdma-$R) p=$rport ;; rdma-shm) p=$sport ;; esac
	timeout 120 "$CLIENT" "$t" "$H" "$p" gss "$out/$t.pcap" >"$out/$t.out" 2>"$out/$t.err"
	crc=$?
	echo "== $t (exit $crc)"
	cat "$out/$t.out"
	grep -v '^$' "$out/$t.err" | sed 's/^/  /'
	[ $crc -eq 77 ] && { echo "SKIPPED: client built without RPCSEC_GSS"; exit 77; }
	[ $crc -eq 0 ] || rc=1
done
for t in rdma-$R rdma-shm; do
	if ! diff <(grep '^gss ' "$out/tcp.out") <(grep '^gss ' "$out/$t.out") >/dev/null; then
		echo "FAIL: $t differs from tcp"
		rc=1
	fi
done
[ "$(grep -c '^gss .* 3 of 3 echoes' "$out/tcp.out")" -eq 3 ] || { echo "FAIL: tcp outcomes"; rc=1; }
# sent again after a reconnect, the call under RPCSEC_GSS kept its XID and got a new
# sequence number (RFC 2203 §5.3.3.1): in the capture, the first RT_SLEEP call's XID
# twice, with two sequence numbers
if command -v tshark >/dev/null; then
	for t in rdma-$R rdma-shm; do
		tshark -2 -o rpc.dissect_unknown_programs:TRUE -r "$out/$t.pcap" \
			-Y 'rpc.msgtyp == 0 && rpc.program == 0x20049002 && rpc.procedure == 5' \
			-T fields -e rpc.xid -e rpc.authgss.seqnum 2>/dev/null >"$out/$t.sleeps"
		first=$(head -1 "$out/$t.sleeps" | cut -f1)
		n=$(awk -F'\t' -v x="$first" '$1 == x' "$out/$t.sleeps" | wc -l)
		u=$(awk -F'\t' -v x="$first" '$1 == x { print $2 }' "$out/$t.sleeps" | sort -u | wc -l)
		echo "$t: the call sent again under RPCSEC_GSS: xid $first $n times, $u sequence numbers"
		[ "$n" -ge 2 ] && [ "$u" -eq "$n" ] ||
			{ echo "FAIL: $t: resent without a new sequence number: $(tr '\n' ' ' <"$out/$t.sleeps")"; rc=1; }
	done
else
	echo "tshark not installed: the resent call's sequence numbers not checked"
fi
# a server that dispatches several calls of a connection at once (workers, conn_parallel
# 4): GSS calls in flight at every level, each intact (docs/RPC.md: a connection's GSS
# calls go one at a time on the connection itself)
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
start_server "$out/serve-lanes" "$SERVER" workers parallel
read -r rport sport tport <<<"$port"
for t in rdma-$R rdma-shm; do
	case $t in rdma-$R) p=$rport ;; rdma-shm) p=$sport ;; esac
	timeout 120 "$CLIENT" "$t" "$H" "$p" gsslanes >"$out/$t.lanes" 2>&1
	crc=$?
	echo "== $t, server with lanes (exit $crc)"
	cat "$out/$t.lanes"
	[ $crc -eq 0 ] || rc=1
done
[ $rc -eq 0 ] && echo "RPCSEC_GSS (krb5, krb5i, krb5p): same outcomes over TCP and RDMA; nothing in clear under privacy"
exit $rc
