#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The public API as users meet it: one header, <rpcrdma/rpcrdma.h>, declares every function
# the shared library exports (a program built with -Werror=implicit-function-declaration
# that takes the address of each one compiles and links), and every function a public
# header declares is exported (none is left hidden).
# The three layers' libraries (core, providers, RPC) are checked together against
# <rpcrdma/rpcrdma.h>; the NFSv3 binding's against <rpcrdma/nfs3.h>, the NFSv4 binding's
# against <rpcrdma/nfs4.h>.
# Usage: test_public_api.sh INCLUDE_DIR GENERATED_INCLUDE_DIR CC LIBCORE LIBPROV LIBRPC LIBNFS3 LIBNFS4
set -u
INC=$1
GEN=$2
CC=$3
LIBS=("$4" "$5" "$6")
NFS3=$7
NFS4=$8
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rc=0
# exported functions; libtirpc's pmap_set / pmap_unset (which the RPC layer defines on
# purpose, rpc/rpcb_rdma.c) aside
exported() {
	nm -D --defined-only "$@" | awk '$2 == "T" { print $3 }' | sed 's/@.*//' |
		grep -v -e '^pmap_set$' -e '^pmap_unset$' | sort -u
}
exported "${LIBS[@]}" >"$out/exported"
exported "$NFS3" >"$out/exported_nfs3"
exported "$NFS4" >"$out/exported_nfs4"
# a program that takes the address of each: compiles only if HEADER declares them all
takes_all() {   # HEADER LIST OUT LIBS...
	local header=$1 list=$2 prog=$3
	shift 3
	{
		echo "#include <rpcrdma/$header>"
		echo 'int main(void) {'
		sed 's/.*/\t(void)\&&;/' "$list"
		echo '	return 0;'
		echo '}'
	} >"$prog.c"
	if ! $CC -std=c11 -Wall -Wextra -Werror -Werror=implicit-function-declaration \
		-I"$INC" -I"$GEN" $(pkg-config --cflags libtirpc) "$prog.c" -o "$prog" "$@" \
		$(pkg-config --libs libtirpc) 2>"$prog.log"; then
		cat "$prog.log"
		echo "FAIL: <rpcrdma/$header> does not declare every exported function"
		rc=1
	fi
}
takes_all rpcrdma.h "$out/exported" "$out/all" "${LIBS[@]}"
takes_all nfs3.h "$out/exported_nfs3" "$out/nfs3" "$NFS3" "${LIBS[@]}"
takes_all nfs4.h "$out/exported_nfs4" "$out/nfs4" "$NFS4" "${LIBS[@]}"
cat "$out/exported_nfs3" "$out/exported_nfs4" >>"$out/exported"
sort -u -o "$out/exported" "$out/exported"
# declared in the public headers
for h in errors codec types prov engine pcap rpc nfs3 nfs4; do
	grep -v '^#' "$INC/rpcrdma/$h.h" | tr '\n' ' ' | grep -o 'RPCRDMA_API[^;{(]*(' |
		sed -E 's/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\($/\1/'
done | sort -u >"$out/declared"
grep -v '^#' "$GEN/rpcrdma/version.h" | tr '\n' ' ' | grep -o 'RPCRDMA_API[^;{(]*(' |
	sed -E 's/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\($/\1/' >>"$out/declared"
sort -u -o "$out/declared" "$out/declared"
# a declaration without RPCRDMA_API is hidden in the shared library
for h in errors codec types prov engine pcap rpc nfs3 nfs4; do
	grep -E '^[a-z][a-z_ ]*\**[[:space:]]*\**(rpcrdma|clnt_rdma|svc_rdma|xdr_rdma)_[a-z0-9_]*\(' \
		"$INC/rpcrdma/$h.h" | grep -v RPCRDMA_API
done >"$out/unmarked"
if [ -s "$out/unmarked" ]; then
	cat "$out/unmarked"
	echo "FAIL: public declarations without RPCRDMA_API (not exported)"
	rc=1
fi
missing=$(comm -23 "$out/declared" "$out/exported")
if [ -n "$missing" ]; then
	echo "FAIL: declared but not exported: $missing"
	rc=1
fi
echo "$(wc -l <"$out/exported") exported functions, $(wc -l <"$out/declared") declared"
[ $rc -eq 0 ] && echo "public API: one header declares all, all declared are exported"
exit $rc
