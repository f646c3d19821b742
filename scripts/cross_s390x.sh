#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The protocol core on a big-endian host: cross-builds lib/ and its tests for s390x
# (gcc-s390x-linux-gnu) and runs them under qemu-user, the codec's RFC byte vectors
# included. Installs the two Debian packages when run as root. BUILD_DIR: build-s390x.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BUILD_DIR:-build-s390x}
scripts/setup.sh gcc-s390x-linux-gnu libc6-dev-s390x-cross qemu-user
cmake -S . -B "$dir" -DRPCRDMA_CORE_ONLY=ON -DRPCRDMA_WERROR=ON \
	-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=s390x \
	-DCMAKE_C_COMPILER=s390x-linux-gnu-gcc \
	-DCMAKE_CROSSCOMPILING_EMULATOR="qemu-s390x;-L;/usr/s390x-linux-gnu" >/dev/null
cmake --build "$dir" -j"$(nproc)"
# prove the host is what it says: a big-endian word in memory starts with its high byte
printf 'int main(void){unsigned x=1;return *(unsigned char*)&x;}' >"$dir/be.c"
s390x-linux-gnu-gcc "$dir/be.c" -o "$dir/be"
if qemu-s390x -L /usr/s390x-linux-gnu "$dir/be"; then
	echo "s390x under qemu: big-endian"
else
	echo "cross_s390x: the emulated host is not big-endian" >&2
	exit 1
fi
(cd "$dir" && ctest --output-on-failure)
