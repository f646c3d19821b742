/* SPDX-License-Identifier: BSD-2-Clause */
/* Codec micro-benchmark: encode + decode of a typical RDMA_MSG call with one write
 * chunk (an NFS READ) and its RPC body. Prints headers/s and ns per pair; --json for
 * one JSON object. Instructions per pair: scripts/callgrind-codec.sh (docs/BENCHMARKS.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rpcrdma/codec.h"

static uint8_t wire[256];
static struct rpcrdma_msg_storage store;

/* The measured unit; noinline so callgrind can count it alone. */
__attribute__((noinline)) uint32_t bench_encode_decode(struct rpcrdma_msg *tx, struct rpcrdma_msg *rx,
						      uint32_t xid);

__attribute__((noinline)) uint32_t bench_encode_decode(struct rpcrdma_msg *tx, struct rpcrdma_msg *rx,
						      uint32_t xid)
{
	struct rpcrdma_decode_status st;
	int n;

	tx->xid = xid;
	n = rpcrdma_encode(tx, wire, sizeof(wire));
	/* the RPC body's XID must match the header's */
	memcpy(wire + n, &(uint32_t){ __builtin_bswap32(xid) }, 4);
	if (rpcrdma_decode(wire, (size_t)n + 68, RPCRDMA_DIR_CALL, NULL, rx, &st))
		abort();
	return rx->writes[0].segs[0].length;
}

static void setup(struct rpcrdma_msg *tx, struct rpcrdma_segment *seg,
		  struct rpcrdma_write_chunk *wc)
{
	static const uint8_t rpc_tail[64] = { 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 0x86, 0xa3,
					      0, 0, 0, 3, 0, 0, 0, 6 };

	memset(tx, 0, sizeof(*tx));
	tx->vers = RPCRDMA_VERSION;
	tx->credits = 32;
	tx->proc = RPCRDMA_MSG;
	seg->handle = 0x11223344;
	seg->length = 4096;
	seg->offset = 0x7f0012340000ull;
	wc->segs = seg;
	wc->nsegs = 1;
	tx->writes = wc;
	tx->nwrites = 1;
	/* RPC call: xid (patched per call), CALL, rpcvers 2, NFS v3 READ, then args */
	memcpy(wire + 52 + 4, rpc_tail + 4, sizeof(rpc_tail) - 4);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct rpcrdma_msg tx, rx;
	struct rpcrdma_segment seg;
	struct rpcrdma_write_chunk wc;
	uint64_t iters = 20000000, i, sink = 0;
	int json = 0, a;
	double t0, dt;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--json"))
			json = 1;
		else if (!strcmp(argv[a], "--iters") && a + 1 < argc)
			iters = strtoull(argv[++a], NULL, 10);
		else {
			fprintf(stderr, "usage: bench_codec [--json] [--iters N]\n");
			return 2;
		}
	}
	setup(&tx, &seg, &wc);
	rpcrdma_msg_bind(&rx, &store);
	t0 = now_s();
	for (i = 0; i < iters; i++)
		sink += bench_encode_decode(&tx, &rx, (uint32_t)i);
	dt = now_s() - t0;
	if (sink != iters * 4096)
		return 1;
	if (json)
		printf("{\"bench\":\"codec_msg_1write\",\"iters\":%" PRIu64
		       ",\"pairs_per_s\":%.0f,\"ns_per_pair\":%.1f}\n",
		       iters, iters / dt, dt * 1e9 / iters);
	else
		printf("encode+decode RDMA_MSG (1 write chunk, 52-byte header): %" PRIu64
		       " pairs in %.3f s: %.1f M headers/s, %.1f ns per encode+decode\n",
		       iters, dt, iters / dt / 1e6, dt * 1e9 / iters);
	return 0;
}
