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
# - Debian's libfabric's psm libraries are left out (stand-ins loaded first) unless asked.
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

# Debian's libfabric 1.17 needs libpsm2 and libpsm_infinipath, whose constructors sleep
# 0.2 s: our stand-ins (rpcrdma-psm/, beside librpcrdma.so) are loaded in their place,
# unless RPCRDMA_LIBFABRIC_PSM=1 or the provider opened is a psm one
sys_lf=$(LD_DEBUG=files "$b/rpcrdma" info 2>&1 >/dev/null | grep -Eo 'file=/[^ ]*libfabric.so.1' | head -1)
sys_lf=${sys_lf#file=}
if [ -n "$sys_lf" ] && readelf -d "$sys_lf" | grep -q 'NEEDED.*libpsm2'; then
	psm() { LD_DEBUG=files "$@" 2>&1 >/dev/null | grep -Eo 'file=[^ ]*(psm|infinipath)[^ ]*' | sort -u; }
	got=$(psm "$b/rpcrdma" info)
	echo "$got" | grep -q 'rpcrdma-psm/libpsm2.so.2' || bad "stand-ins not loaded: '$got'"
	echo "$got" | grep -q 'libinfinipath' && bad "psm loaded with the stand-ins: '$got'"
	got=$(RPCRDMA_LIBFABRIC_PSM=1 psm "$b/rpcrdma" info)
	echo "$got" | grep -q 'rpcrdma-psm' && bad "RPCRDMA_LIBFABRIC_PSM=1 loaded the stand-ins"
	echo "$got" | grep -q 'file=libpsm2.so.2' || bad "RPCRDMA_LIBFABRIC_PSM=1: no libpsm2: '$got'"
	got=$(psm "$b/rpcrdma" ping 127.0.0.1 -c 1 --provider fi_psm2)
	echo "$got" | grep -q 'rpcrdma-psm' && bad "--provider fi_psm2 loaded the stand-ins"
	# what the stand-ins save: a process's time to list the providers
	t0=$(date +%s%N); "$b/rpcrdma" info >/dev/null; t1=$(date +%s%N)
	RPCRDMA_LIBFABRIC_PSM=1 "$b/rpcrdma" info >/dev/null; t2=$(date +%s%N)
	echo "rpcrdma info: $(((t1 - t0) / 1000000)) ms, with libfabric's psm libraries $(((t2 - t1) / 1000000)) ms"
else
	echo "libfabric ($sys_lf) needs no psm library: nothing left out"
fi

[ $fail -eq 0 ] && echo "lazy libs: ok"
exit $fail
