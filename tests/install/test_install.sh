#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs the build into a fresh prefix and uses it as a new user would:
#  - the pkg-config files name that prefix (and still do once the prefix is moved);
#  - a program built with pkg-config (librpcrdma-rpc) calls itself over RDMA;
#  - a CMake project finds the package (find_package(rpcrdma)), links rpcrdma::core and
#    rpcrdma::nfs3, shared and static, and runs;
#  - the installed rpcrdma runs without LD_LIBRARY_PATH (its RPATH), perf --compare finds
#    bench_prov in libexec, and man finds its pages;
#  - nothing test-only (the mock provider) and nothing of the build tree is installed;
#  - the psm stand-ins (prov/fabric/psm_stub.c) are installed and found by the library.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR
set -u
BUILD=$1
SRC=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rc=0
fail() { echo "FAIL: $*"; rc=1; }
prefix=$work/opt/rpcrdma

cmake --install "$BUILD" --prefix "$prefix" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; echo "FAIL: cmake --install"; exit 1; }
libdir=$(dirname "$(find "$prefix" -name 'librpcrdma_core.so' | head -1)")
echo "installed into $prefix (libraries in ${libdir#"$prefix"/})"

# nothing that points back into the build or source tree, nothing test-only
if grep -rIl -e "$BUILD" -e "$SRC" "$prefix" >"$work/leaks"; then
	fail "installed files name the build or source tree: $(tr '\n' ' ' <"$work/leaks")"
fi
[ -z "$(find "$prefix" -name '*mock*')" ] || fail "the mock provider is installed"

# pkg-config: the prefix the files are in, whatever cmake was configured with
export PKG_CONFIG_PATH=$libdir/pkgconfig
# the prefix as given, and paths with no '..' in them: a program's rpath is made of them
for pc in librpcrdma-core librpcrdma librpcrdma-rpc librpcrdma-nfs3; do
	p=$(pkg-config --variable=prefix "$pc") || { fail "pkg-config $pc"; continue; }
	[ "$p" = "$prefix" ] || fail "$pc says prefix $p"
	l=$(pkg-config --variable=libdir "$pc")
	[ "$l" = "$libdir" ] || fail "$pc says libdir $l, not $libdir"
done
# SAN_FLAGS: a sanitizer build's libraries need the programs built the same way
san=${SAN_FLAGS:-}
cc -std=c11 -Wall -Wextra -Werror $san "$SRC/tests/install/rpc_prog.c" -o "$work/rpc_prog" \
	$(pkg-config --cflags --libs librpcrdma-rpc) 2>"$work/cc.log" ||
	{ cat "$work/cc.log"; fail "a program does not build with pkg-config"; }
if [ -x "$work/rpc_prog" ]; then
	LD_LIBRARY_PATH=$libdir timeout 60 "$work/rpc_prog" tcp || fail "the pkg-config program over tcp"
	LD_LIBRARY_PATH=$libdir timeout 60 "$work/rpc_prog" shm || fail "the pkg-config program over shm"
fi
# the stand-ins for Debian's libfabric's psm libraries: installed beside the libraries
# (never as libpsm2.so for a linker to find), and what the installed library loads
[ -e "$libdir/rpcrdma-psm/libpsm2.so.2" ] && [ -e "$libdir/rpcrdma-psm/libpsm_infinipath.so.1" ] ||
	fail "the psm stand-ins are not installed in ${libdir#"$prefix"/}/rpcrdma-psm"
[ -e "$libdir/rpcrdma-psm/libpsm2.so" ] && fail "a libpsm2.so link is installed"
if [ -x "$work/rpc_prog" ] && readelf -d "$(ldconfig -p | grep -m1 -o '/[^ ]*libfabric.so.1$')" 2>/dev/null |
	grep -q 'NEEDED.*libpsm2'; then
	LD_DEBUG=files LD_LIBRARY_PATH=$libdir timeout 60 "$work/rpc_prog" tcp 2>&1 >/dev/null |
		grep -q "file=$libdir/rpcrdma-psm/libpsm2.so.2" ||
		fail "the installed library does not load its psm stand-ins"
fi
# the same from a prefix moved elsewhere as a whole (relative pkg-config files)
mv "$work/opt" "$work/moved"
libdir2=${libdir/"$work/opt"/"$work/moved"}
# a prefix moved as a whole: pkg-config finds it from the files' place (docs/BUILD.md)
p=$(PKG_CONFIG_PATH=$libdir2/pkgconfig pkg-config --define-prefix --variable=libdir librpcrdma-rpc)
[ "$(cd "$p" 2>/dev/null && pwd -P)" = "$(cd "$libdir2" && pwd -P)" ] ||
	fail "after moving the prefix pkg-config --define-prefix says libdir $p"
mv "$work/moved" "$work/opt"

# CMake: find_package in a user's project
cmake -S "$SRC/tests/install" -B "$work/user" -DCMAKE_PREFIX_PATH="$prefix" \
	-DCMAKE_C_COMPILER="${CC:-cc}" -DCMAKE_C_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" \
	>"$work/user.log" 2>&1 &&
	cmake --build "$work/user" >>"$work/user.log" 2>&1 ||
	{ cat "$work/user.log"; fail "a CMake project does not build with find_package(rpcrdma)"; }
for p in core_prog core_prog_static; do
	[ -x "$work/user/$p" ] && { "$work/user/$p" || fail "$p"; }
done
if [ -x "$work/user/core_prog_static" ] && ldd "$work/user/core_prog_static" | grep -q rpcrdma; then
	fail "rpcrdma::nfs3_static linked a shared librpcrdma"
fi

# the tool: found its libraries by itself
if [ -x "$prefix/bin/rpcrdma" ]; then
	env -u LD_LIBRARY_PATH "$prefix/bin/rpcrdma" --version || fail "the installed rpcrdma does not run"
fi
# perf --compare from the prefix finds bench_prov (libexec) for the raw ceiling
if [ -x "$prefix/bin/rpcrdma" ]; then
	env -u LD_LIBRARY_PATH "$prefix/bin/rpcrdma" perf --compare --ops null --depths 1 \
		--seconds 0.05 >"$work/perf.log" 2>&1 || fail "perf --compare from the prefix: $(tail -3 "$work/perf.log")"
	grep -q '^  raw/[a-z]* *send_pingpong' "$work/perf.log" ||
		fail "perf --compare from the prefix has no raw ceiling: $(grep raw "$work/perf.log" | head -2)"
fi
# man pages, where the build made them
if [ -d "$prefix/share/man" ]; then
	for page in rpcrdma.1 librpcrdma.3 rpcrdma-engine.3 rpcrdma.7; do
		MANPATH=$prefix/share/man man -w "${page##*.}" "${page%.*}" >/dev/null 2>&1 ||
			fail "man ${page##*.} ${page%.*} is not installed"
	done
fi
[ $rc -eq 0 ] && echo "install: pkg-config and CMake users build, link and run"
exit $rc
