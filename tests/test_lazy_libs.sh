#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# libfabric and rdma-core are loaded on first use (prov/dl.h), never with librpcrdma:
# - librpcrdma.so names none of them (NEEDED) and refers to none of their symbols, not
#   even through an inline function of their headers (fi_allocinfo() would);
# - the tool's codec-only commands load none of them; `info`, which lists libfabric's
#   providers, loads libfabric (so the check below can see a load);
# - a libfabric.so.1 without the functions the build saw (an older one) is refused with
#   a message that names the function, and the program goes on; so is one that
#   RPCRDMA_LIBFABRIC names, and a missing one it names is reported as such.
# The verbs side (a process that used only verbs has no libfabric mapped) is checked by
# test_prov_verbs's test_data, over the stand-in here and over soft-RoCE in the VM.
# usage: test_lazy_libs.sh BUILD_DIR STUB_DIR
set -u
b=$1 stub=$2
fail=0
bad() { echo "FAIL: $*"; fail=1; }

lib=$b/librpcrdma.so
needed=$(readelf -d "$lib" | grep NEEDED)
echo "$needed" | grep -Eq 'libfabric|librdmacm|libibverbs' && bad "librpcrdma.so links them: $needed"
undef=$(nm -D --undefined-only "$lib" | grep -E ' (fi|ibv|rdma)_' || true)
[ -z "$undef" ] || bad "librpcrdma.so refers to their symbols directly: $undef"

# what the dynamic loader opened while the command ran
loaded() { LD_DEBUG=files "$@" 2>&1 >/dev/null | grep -Eo 'file=lib(fabric|rdmacm|ibverbs)[^ ]*' | sort -u; }
for cmd in "version" "--help" "decode --help"; do
	got=$(loaded "$b/rpcrdma" $cmd)
	[ -z "$got" ] || bad "rpcrdma $cmd loaded: $got"
done
msg='{"xid":1,"vers":1,"credits":1,"proc":"RDMA_MSG"}'
hex=$(echo "$msg" | "$b/rpcrdma" encode --json) || bad "encode failed"
got=$(echo "$msg" | loaded "$b/rpcrdma" encode --json; loaded "$b/rpcrdma" decode "$hex")
[ -z "$got" ] || bad "rpcrdma encode/decode loaded: $got"
got=$(loaded "$b/rpcrdma" info)
echo "$got" | grep -q 'file=libfabric.so.1' || bad "rpcrdma info did not load libfabric: '$got'"

# an older libfabric (the stub has none of the functions): refused, by name
out=$(LD_LIBRARY_PATH=$stub "$b/rpcrdma" ping 127.0.0.1 -c 1 --provider tcp 2>&1)
rc=$?
echo "$out" | grep -q "libfabric.so.1 has no fi_getinfo" ||
	bad "older libfabric: rc $rc, message: $out"
[ $rc -ne 0 ] || bad "older libfabric: ping succeeded"
# ... also when named by RPCRDMA_LIBFABRIC; and one that is not there
out=$(RPCRDMA_LIBFABRIC=$stub/libfabric.so.1 "$b/rpcrdma" ping 127.0.0.1 -c 1 --provider tcp 2>&1)
echo "$out" | grep -q "$stub/libfabric.so.1 has no fi_getinfo" ||
	bad "RPCRDMA_LIBFABRIC, older libfabric: $out"
out=$(RPCRDMA_LIBFABRIC=/nonexistent/libfabric.so.1 "$b/rpcrdma" ping 127.0.0.1 -c 1 --provider shm 2>&1)
echo "$out" | grep -q "/nonexistent/libfabric.so.1 cannot be loaded.*RPCRDMA_LIBFABRIC" ||
	bad "RPCRDMA_LIBFABRIC, missing: $out"
out=$(LD_LIBRARY_PATH=$stub "$b/rpcrdma" info 2>&1)
rc=$?
[ $rc -ne 139 ] && [ $rc -ne 134 ] || bad "info with an older libfabric crashed ($rc): $out"

[ $fail -eq 0 ] && echo "lazy libs: ok"
exit $fail
