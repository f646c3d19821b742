#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# libfabric 2.1 in a private prefix, for building and testing the project against a newer
# libfabric than Debian 12's 1.17 (docs/BUILD.md). The system's libfabric is never
# touched: the upstream tarball comes from Debian trixie's source package through an apt
# configuration of its own (a trixie deb-src entry in a scratch folder, not in
# /etc/apt), and installs under PREFIX only.
#
#   scripts/libfabric2.sh [PREFIX]     default /var/tmp/rpcrdma-libfabric-2.1.0
#
# Prints the prefix on its last line. A prefix that already holds this version is kept
# (the build takes ~3 minutes on 2 cores). Then, for example:
#   PKG_CONFIG_PATH=PREFIX/lib/pkgconfig cmake -S . -B build-lf2 && cmake --build build-lf2
# The providers built: tcp, shm, udp, sockets and the utility ones (no verbs, psm or efa:
# the project reaches RDMA devices through rdma-core itself).
set -eu
VERSION=2.1.0
PREFIX=${1:-/var/tmp/rpcrdma-libfabric-$VERSION}

have() {
	[ -f "$PREFIX/lib/pkgconfig/libfabric.pc" ] &&
		[ "$(PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" pkg-config --modversion libfabric)" = "$VERSION" ]
}
if have; then
	echo "libfabric $VERSION already in $PREFIX"
	echo "$PREFIX"
	exit 0
fi

need=()
for p in autoconf automake libtool make gcc xz-utils pkg-config; do
	dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || { echo "libfabric2: needs ${need[*]} (run as root to install)"; exit 1; }
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma-lf2.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/src"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
	"http://deb.debian.org/debian trixie main" >"$work/sources.list"
apt_private=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
	     -o "Dir::State::Lists=$work/lists" -o Debug::NoLocking=1)
apt-get "${apt_private[@]}" update -qq
# the .dsc may be missing from the mirror: the upstream tarball is all that is needed
(cd "$work/src" && apt-get "${apt_private[@]}" source --download-only libfabric \
	>"$work/source.log" 2>&1) || true
tarball=$work/src/libfabric_$VERSION.orig.tar.xz
[ -f "$tarball" ] || { cat "$work/source.log"; echo "libfabric2: no $tarball"; exit 1; }
tar -C "$work" -xJf "$tarball"
cd "$work/libfabric-$VERSION"
[ -x configure ] || ./autogen.sh >"$work/autogen.log" 2>&1 || { tail -20 "$work/autogen.log"; exit 1; }
./configure --prefix="$PREFIX" --disable-verbs --disable-psm2 --disable-psm3 --disable-efa \
	--disable-usnic --disable-opx >"$work/configure.log" 2>&1 ||
	{ tail -30 "$work/configure.log"; exit 1; }
make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -30 "$work/make.log"; exit 1; }
make install >"$work/install.log" 2>&1 || { tail -30 "$work/install.log"; exit 1; }
have || { echo "libfabric2: $PREFIX does not report version $VERSION"; exit 1; }
echo "libfabric $VERSION installed in $PREFIX"
echo "$PREFIX"
