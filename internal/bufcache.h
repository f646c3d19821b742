/* SPDX-License-Identifier: BSD-2-Clause */
/* A small cache of large buffers kept for reuse (internal). Fresh memory costs a page
 * fault per page on first touch, which on virtual machines costs more than the data copy
 * it precedes (docs/BENCHMARKS.md); buffers of a connection's recent calls and replies are
 * kept instead of freed. Not thread-safe: its owner serialises. */
#ifndef RPCRDMA_BUFCACHE_H
#define RPCRDMA_BUFCACHE_H

#include <stddef.h>

#define RPCRDMA_BUFCACHE_N 40
#define RPCRDMA_BUFCACHE_BYTES (96u << 20)

struct rpcrdma__bufcache {
	void *p[RPCRDMA_BUFCACHE_N];
	size_t cap[RPCRDMA_BUFCACHE_N];
	int n;
	size_t bytes;
};

/* The smallest kept buffer of at least len bytes, or a new one; *cap gets its size. */
void *rpcrdma__bufcache_get(struct rpcrdma__bufcache *c, size_t len, size_t *cap);
/* Keep p (cap bytes) if there is room, else free it (or the smallest kept one). */
void rpcrdma__bufcache_put(struct rpcrdma__bufcache *c, void *p, size_t cap);
void rpcrdma__bufcache_free(struct rpcrdma__bufcache *c);

#endif
