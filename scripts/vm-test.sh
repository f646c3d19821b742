#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The VM suite: Debian's own kernel booted under qemu (TCG: no KVM needed), with soft-RoCE
# (rdma_rxe) as a real RDMA device driven by the real rdma-core, and the kernel's NFS/RDMA
# server and client as peers. One boot runs the named suites (default: all) over the
# build in BUILD_DIR (default build/, built by scripts/test.sh or scripts/build.sh) and
# returns their result. Installs its packages (root; Debian 12).
#
#   scripts/vm-test.sh [SUITE...]        suites: tests/vm/guest.sh lists them
#
# Exit: 0 all passed; 1 a suite failed; 77 qemu cannot run here (one line says why;
# RPCRDMA_VM_REQUIRED=1, as CI sets, turns that into a failure); 124 time-out.
# Env: BUILD_DIR, VM_TIMEOUT (s, default 1500), VM_MEM (MiB, 3072), VM_SMP (2),
# RPCRDMA_VM_DIR (the initramfs and the results, default /var/tmp/rpcrdma-vm),
# VM_KEEP=1 keeps the console log and results there; VM_CTEST_R=REGEX runs only those
# of the device suite's tests, and shows all they print.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
build=$(realpath -m "${BUILD_DIR:-build}")
vmdir=${RPCRDMA_VM_DIR:-/var/tmp/rpcrdma-vm}

cannot() {
	echo "vm-test: cannot run the VM suite here: $*"
	[ "${RPCRDMA_VM_REQUIRED:-0}" = 1 ] && exit 1
	exit 77
}

pkgs=(qemu-system-x86 linux-image-amd64 busybox-static cpio kmod zstd xz-utils bc rdma-core
      ibverbs-providers ibverbs-utils rdmacm-utils perftest nfs-kernel-server nfs-common
      rpcbind iproute2 fio dbench git cmake make gcc pkg-config)
if [ "$(id -u)" -eq 0 ]; then
	scripts/setup.sh "${pkgs[@]}" || cannot "the packages it needs did not install (${pkgs[*]})"
else
	command -v qemu-system-x86_64 >/dev/null || cannot "not root, and qemu-system-x86 is not installed"
fi
kernel=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n1)
[ -n "$kernel" ] && [ -r "$kernel" ] || cannot "no readable kernel in /boot (linux-image-amd64)"
kv=${kernel#/boot/vmlinuz-}
[ -d "/lib/modules/$kv" ] || cannot "no modules for kernel $kv in /lib/modules"
[ -x "$build/rpcrdma" ] || cannot "no build in $build (run scripts/build.sh first)"

mkdir -p "$vmdir"
# the initramfs, rebuilt when the kernel or its recipe changes
sum=$(cat tests/vm/mkinitrd.sh | md5sum | cut -c1-12)
initrd=$vmdir/initrd-$kv-$sum.gz
[ -f "$initrd" ] || tests/vm/mkinitrd.sh "$kv" "$initrd" || cannot "the initramfs could not be built"

res=$(mktemp -d "$vmdir/run.XXXXXX")
trap '[ "${VM_KEEP:-0}" = 1 ] || rm -rf "$res"' EXIT
{
	printf 'VM_SRC=%q\nVM_BUILD=%q\nVM_SUITES=%q\n' "$src" "$build" "$*"
	printf 'VM_SMP=%q\nVM_CTEST_R=%q\n' "${VM_SMP:-2}" "${VM_CTEST_R:-}"
} >"$res/env.sh"

echo "== VM suite: kernel $kv under qemu (TCG), suites: ${*:-all}"
t0=$(date +%s)
set +e
timeout --foreground -k 10 "${VM_TIMEOUT:-1500}" qemu-system-x86_64 -accel tcg,thread=multi \
	-cpu max -m "${VM_MEM:-3072}" -smp "${VM_SMP:-2}" -nographic -no-reboot -nic none \
	-kernel "$kernel" -initrd "$initrd" \
	-append "console=ttyS0 quiet loglevel=3 panic=-1 mitigations=off guest=$src/tests/vm/guest.sh" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs local,path="$res",mount_tag=vmout,security_model=none \
	</dev/null >"$res/console" 2>&1
qrc=$?
set -e
t1=$(date +%s)
rc=$(tr -d '\r' <"$res/console" | sed -n 's/.*VM-GUEST-DONE rc=\([0-9]*\).*/\1/p' | tail -n1)
# the guest's own log (every suite's output) went to the results folder
[ -f "$res/guest.log" ] && cat "$res/guest.log"
if [ -z "$rc" ]; then
	tr -d '\r' <"$res/console" | tail -n 40
	[ "$qrc" = 124 ] && { echo "vm-test: timed out after ${VM_TIMEOUT:-1500} s"; exit 124; }
	grep -q -i 'could not\|failed to\|cannot' "$res/console" &&
		cannot "qemu did not start: $(grep -i -m1 'could not\|failed to\|cannot' "$res/console")"
	echo "vm-test: the guest stopped without a result (qemu exit $qrc)"
	exit 1
fi
echo "vm-test: guest rc $rc, $((t1 - t0)) s"
[ "$rc" = 125 ] && cannot "the guest could not start: $(tr -d '\r' <"$res/console" | grep -m1 'vm-init:')"
[ "$rc" = 0 ]
