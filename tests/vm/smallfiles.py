#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# 5,000 small files in 50 directories under DIR: create (with 100 bytes each), stat,
# rename, remove; prints each phase's seconds as "PHASE SECONDS". Used by the VM suite's
# nfs3d_bench (tests/vm/guest_lib.sh) on the kernel's NFS mounts of knfsd and nfs3d.
import os
import sys
import time

top = sys.argv[1]
dirs, per = 50, 100
data = b"x" * 100


def phase(name, fn):
    t = time.monotonic()
    for d in range(dirs):
        for f in range(per):
            fn(os.path.join(top, "d%02d" % d), "f%03d" % f)
    print("%s %.3f" % (name, time.monotonic() - t), flush=True)


def create(d, f):
    if f == "f000":
        os.mkdir(d)
    with open(os.path.join(d, f), "wb") as o:
        o.write(data)


def stat(d, f):
    os.stat(os.path.join(d, f))


def rename(d, f):
    os.rename(os.path.join(d, f), os.path.join(d, "r" + f))


def remove(d, f):
    os.unlink(os.path.join(d, "r" + f))


os.makedirs(top, exist_ok=True)
phase("create", create)
phase("stat", stat)
phase("rename", rename)
phase("remove", remove)
