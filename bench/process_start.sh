#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# What a short-lived process pays before and for its first call (issue 32, part 1):
#   - `rpcrdma version` against a C program that only links libtirpc, and /bin/true;
#   - `rpcrdma ping -c 1` (a process: start, clnt_rdma_create, one NULL, clnt_destroy)
#     over tcp and shm against `rpcrdma serve`, beside `ping --tirpc -c 1` (libtirpc's
#     clnttcp_create, same server, same process image);
#   - how much of it is loading libfabric: dlopen("libfabric.so.1") alone, and its first
#     fi_getinfo().
# RPCRDMA_LIBFABRIC=PATH measures with another libfabric (docs/PROVIDERS.md).
# Median and minimum of RUNS runs each (default 20), wall-clock ms, then one JSON line.
# usage: bench/process_start.sh BUILD_DIR [RUNS]
set -eu
b=$(cd "$1" && pwd) runs=${2:-20}
tmp=$(mktemp -d)
trap 'kill $srv $srv_shm 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
cc -O2 -x c -o "$tmp/tirpc_only" -I/usr/include/tirpc - -ltirpc <<'C'
#include <rpc/rpc.h>
#include <stdio.h>
int main(void) { printf("%p\n", (void *)&clnt_create); return 0; }
C
cc -O2 -x c -o "$tmp/dl_fabric" - -ldl <<'C'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double ms(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(void)
{
	double t0 = ms(), t1, t2;
	const char *lib = getenv("RPCRDMA_LIBFABRIC");
	void *h = dlopen(lib && *lib ? lib : "libfabric.so.1", RTLD_NOW | RTLD_LOCAL), *info = NULL;
	int (*gi)(unsigned, const char *, const char *, unsigned long, const void *, void **);

	t1 = ms();
	if (!h)
		return 1;
	*(void **)&gi = dlsym(h, "fi_getinfo");
	gi((1u << 16) | 17u, NULL, NULL, 0, NULL, &info);
	t2 = ms();
	printf("%.1f %.1f\n", t1 - t0, t2 - t1);
	return 0;
}
C
"$b/rpcrdma" serve --listen 127.0.0.1:0 --tcp 0 > "$tmp/srv" 2>&1 & srv=$!
"$b/rpcrdma" serve --provider shm --listen 127.0.0.1:0 > "$tmp/srv_shm" 2>&1 & srv_shm=$!
for i in $(seq 100); do
	[ -s "$tmp/srv" ] && [ -s "$tmp/srv_shm" ] && break
	sleep 0.1
done
read -r _ port tport < "$tmp/srv"
read -r _ sport < "$tmp/srv_shm"

# median and minimum, in ms, of RUNS runs of a command
timeit() {
	python3 - "$runs" "$@" <<'PY'
import subprocess, sys, time
n = int(sys.argv[1]); cmd = sys.argv[2:]; t = []
for _ in range(n):
    a = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t.append((time.perf_counter() - a) * 1e3)
    if r.returncode: sys.exit("failed: " + " ".join(cmd))
t.sort(); print("%.1f %.1f" % (t[n // 2], t[0]))
PY
}
json="{\"bench\":\"process_start\",\"runs\":$runs"
row() {   # KEY LABEL CMD...
	local key=$1 label=$2 r
	shift 2
	r=$(timeit "$@")
	printf '%-44s median %7s ms   min %7s ms\n' "$label" ${r% *} ${r#* }
	json="$json,\"$key\":{\"median_ms\":${r% *},\"min_ms\":${r#* }}"
}
row true "/bin/true" /bin/true
row tirpc_only "a program linking libtirpc only" "$tmp/tirpc_only"
row version "rpcrdma version" "$b/rpcrdma" version
row ping_tirpc "ping --tirpc -c 1 (libtirpc TCP)" "$b/rpcrdma" ping 127.0.0.1:$port --tirpc --tcp-port "$tport" -c 1
row ping_tcp "ping -c 1 over RDMA/tcp" "$b/rpcrdma" ping 127.0.0.1:$port -c 1
row ping_shm "ping -c 1 over RDMA/shm" "$b/rpcrdma" ping 127.0.0.1:$sport --provider shm -c 1
for i in $(seq "$runs"); do "$tmp/dl_fabric"; done > "$tmp/dl"
median() { awk "{print \$$1}" "$tmp/dl" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
d="$(median 1) $(median 2)"
printf '%-44s median %7s ms\n' "dlopen(libfabric.so.1) alone" "${d% *}"
printf '%-44s median %7s ms\n' "... then its first fi_getinfo()" "${d#* }"
json="$json,\"dlopen_libfabric_ms\":${d% *},\"first_getinfo_ms\":${d#* }}"
echo "$json"
