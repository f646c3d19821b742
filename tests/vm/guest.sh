#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs inside the VM of scripts/vm-test.sh, as root, on the host's files (read-only, with
# a tmpfs overlay): soft-RoCE on a dummy device, then the suites named in
# /vmout/env.sh (VM_SUITES; empty: all). Everything it prints goes to /vmout/guest.log;
# its exit status is the number of suites that failed.
#   stack    rdma-core's rping, and the kernel's NFSv3 client mounting knfsd over RDMA
#   device   ctest -L rdma_device: the verbs provider's tests on the real device
#   cli      rpcrdma serve / ping / perf --check over verbs
#   nfs3cp   our NFSv3 client (examples/nfs3) against knfsd over RDMA
#   nfs4cp   our NFSv4.1 client (examples/nfs4) against knfsd over RDMA: copies, a listing,
#            a read delegation recalled over our connection (RFC 8167) and answered
#   nfs3d    the kernel's NFSv3 client mounting our server (examples/nfs3d) over RDMA and TCP
#   nfs3d_work  through the kernel's RDMA mount of nfs3d: a squashed root's and nobody's
#            answers against knfsd's, fio with verification, dbench, a developer's day
#            (copy, git, cmake and make, tar), fio across a SIGKILL and restart
#   bench    figures, ratios within one run (only when named): rpcrdma perf against
#            perftest, bench_prov on rxe0 with and without a registration per call, the
#            nfs2 workload over verbs against TCP, nfs3cp against the kernel's client
#   nfs3d_bench  figures (only when named): the kernel's client on knfsd and on nfs3d,
#            fio, 5,000 small files and dbench, over RDMA and TCP (issue 49's table)
#   windows  figures (only when named): perf with a registration per call against
#            --prereg (memory windows), and nfs3cp with and without windows against the
#            kernel's client on knfsd, in turns
# The dummy device's address (TEST-NET-1) exists only inside this VM, which has no NIC.
set -u
. /vmout/env.sh
exec >/vmout/guest.log 2>&1
. "$VM_SRC/tests/vm/guest_lib.sh"

all="stack device cli nfs3cp nfs4cp nfs3d nfs3d_work"
suites=${VM_SUITES:-$all}
all="$all bench windows nfs3d_bench"   # figures: run only when named
dev_up || { echo "vm: /dev/shm or /dev/fd could not be made"; exit 99; }
rxe_up || { echo "vm: soft-RoCE did not come up"; exit 99; }
passed=0
failed=0
for s in $suites; do
	case " $all " in
	(*" $s "*) ;;
	(*) echo "vm: no suite named '$s' (suites: $all)"; failed=$((failed + 1)); continue ;;
	esac
	echo "== suite $s"
	t0=$(date +%s)
	# not in an if: there, set -e would be ignored inside the suite
	( set -e; "suite_$s" )
	if [ $? -eq 0 ]; then
		passed=$((passed + 1))
		echo "== suite $s: passed ($(($(date +%s) - t0)) s)"
	else
		failed=$((failed + 1))
		echo "== suite $s: FAILED ($(($(date +%s) - t0)) s)"
	fi
done
echo "vm: $passed passed, $failed failed"
exit $failed
