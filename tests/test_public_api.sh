#!/usr/bin/env bash
# The public API as users meet it: one header, <rpcrdma/rpcrdma.h>, declares every function
# the shared library exports (a program built with -Werror=implicit-function-declaration
# that takes the address of each one compiles and links), and every function a public
# header declares is exported (none is left hidden).
# Usage: test_public_api.sh LIBRPCRDMA.so INCLUDE_DIR CC
set -u
LIB=$1
INC=$2
CC=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rc=0
# exported functions; the test-only mock provider (prov_mock.h) and libtirpc's pmap_set /
# pmap_unset (which the library defines on purpose, rpc/rpcb_rdma.c) aside
nm -D --defined-only "$LIB" | awk '$2 == "T" { print $3 }' | sed 's/@.*//' |
	grep -v -e '^rpcrdma_mock_' -e '^pmap_set$' -e '^pmap_unset$' | sort -u >"$out/exported"
{
	echo '#include <rpcrdma/rpcrdma.h>'
	echo 'int main(void) {'
	sed 's/.*/\t(void)\&&;/' "$out/exported"
	echo '	return 0;'
	echo '}'
} >"$out/all.c"
if ! $CC -std=c11 -Wall -Wextra -Werror -Werror=implicit-function-declaration \
	-I"$INC" $(pkg-config --cflags libtirpc libfabric) "$out/all.c" -o "$out/all" "$LIB" \
	$(pkg-config --libs libtirpc) 2>"$out/cc.log"; then
	cat "$out/cc.log"
	echo "FAIL: <rpcrdma/rpcrdma.h> does not declare every exported function"
	rc=1
fi
# declared in the public headers (those of the library itself)
for h in errors codec prov engine pcap rpc; do
	grep -v '^#' "$INC/rpcrdma/$h.h" | tr '\n' ' ' | grep -o 'RPCRDMA_API[^;{]*(' |
		sed -E 's/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\($/\1/'
done | sort -u >"$out/declared"
# a declaration without RPCRDMA_API is hidden in the shared library
for h in errors codec prov engine pcap rpc; do
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
