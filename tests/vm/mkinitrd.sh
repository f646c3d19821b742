#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# mkinitrd.sh KVER OUT — the VM suite's initramfs (scripts/vm-test.sh): busybox-static and
# the installed kernel's modules for virtio, 9p and overlayfs, with an /init that
#   - mounts the host's root read-only (9p tag "hostroot") under a tmpfs overlay, so the
#     guest sees every host file (the build tree included) and writes nothing back;
#   - mounts the results folder (9p tag "vmout", read-write) at /vmout;
#   - runs `bash GUEST` (guest=GUEST on the kernel command line) in the new root, prints
#     "VM-GUEST-DONE rc=N" on the console and powers off.
set -euo pipefail
kv=$1
out=$2
w=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma-initrd.XXXXXX")
trap 'rm -rf "$w"' EXIT
mkdir -p "$w"/{bin,mods,proc,sys,dev,ro,rw,root}
cp /bin/busybox "$w/bin/busybox"
for a in sh mount insmod switch_root mkdir cat tr sed echo; do ln -s busybox "$w/bin/$a"; done

# modules in load order, each after what it depends on
order=()
want() {
	local m=$1 d x
	for x in "${order[@]:-}"; do [ "$x" = "$m" ] && return 0; done
	for d in $(modinfo -k "$kv" -F depends "$m" | tr ',' ' '); do want "$d"; done
	order+=("$m")
}
for m in virtio_pci 9pnet_virtio 9p overlay; do want "$m"; done
: >"$w/mods/order"
for m in "${order[@]}"; do
	f=$(modinfo -k "$kv" -n "$m")
	case $f in
	(builtin* | "") continue ;;
	(*.ko) cp "$f" "$w/mods/" ;;
	(*.ko.xz) xz -dc "$f" >"$w/mods/$(basename "$f" .xz)"; f=${f%.xz} ;;
	(*.ko.zst) zstd -qdc "$f" >"$w/mods/$(basename "$f" .zst)"; f=${f%.zst} ;;
	esac
	basename "$f" >>"$w/mods/order"
done

cat >"$w/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /mods/order); do insmod /mods/$m || echo "vm-init: insmod $m failed"; done
fail() { echo "vm-init: $1"; echo "VM-GUEST-DONE rc=125"; echo o >/proc/sysrq-trigger; sleep 60; }
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288,cache=loose hostroot /ro ||
	fail "cannot mount the host's root over 9p"
mount -t tmpfs -o size=2g rw /rw && mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/ro,upperdir=/rw/upper,workdir=/rw/work root /root ||
	fail "cannot put an overlay on the host's root"
mount -t devtmpfs dev /root/dev; mount -t proc proc /root/proc; mount -t sysfs sys /root/sys
mount -t tmpfs run /root/run
mkdir -p /root/vmout
mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 vmout /root/vmout ||
	fail "cannot mount the results folder"
g=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^guest=//p')
exec switch_root /root /usr/bin/env -i HOME=/root TERM=dumb \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	/bin/bash -c "cd /; bash $g; echo VM-GUEST-DONE rc=\$?; sync; echo o >/proc/sysrq-trigger; sleep 60"
INIT
chmod +x "$w/init"
(cd "$w" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
