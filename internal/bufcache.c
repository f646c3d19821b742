/* SPDX-License-Identifier: BSD-2-Clause */
/* Large buffers kept for reuse (bufcache.h). */
#include <stdlib.h>

#include "bufcache.h"

void *rpcrdma__bufcache_get(struct rpcrdma__bufcache *c, size_t len, size_t *cap)
{
	int i, best = -1;
	void *p;

	for (i = 0; i < c->n; i++)
		if (c->cap[i] >= len && (best < 0 || c->cap[i] < c->cap[best]))
			best = i;
	if (best < 0) {
		*cap = len ? len : 1;
		return malloc(*cap);
	}
	p = c->p[best];
	*cap = c->cap[best];
	c->bytes -= c->cap[best];
	c->n--;
	c->p[best] = c->p[c->n];
	c->cap[best] = c->cap[c->n];
	return p;
}

static void drop(struct rpcrdma__bufcache *c, int i)
{
	free(c->p[i]);
	c->bytes -= c->cap[i];
	c->n--;
	c->p[i] = c->p[c->n];
	c->cap[i] = c->cap[c->n];
}

void rpcrdma__bufcache_put(struct rpcrdma__bufcache *c, void *p, size_t cap)
{
	int i, small;

	if (!p)
		return;
	if (cap > RPCRDMA_BUFCACHE_BYTES) {
		free(p);
		return;
	}
	/* make room by dropping the smallest kept buffers while this one is larger */
	while (c->n && (c->n == RPCRDMA_BUFCACHE_N || c->bytes + cap > RPCRDMA_BUFCACHE_BYTES)) {
		for (small = 0, i = 1; i < c->n; i++)
			if (c->cap[i] < c->cap[small])
				small = i;
		if (c->cap[small] >= cap) {
			free(p);
			return;
		}
		drop(c, small);
	}
	c->p[c->n] = p;
	c->cap[c->n++] = cap;
	c->bytes += cap;
}

void rpcrdma__bufcache_free(struct rpcrdma__bufcache *c)
{
	while (c->n)
		drop(c, c->n - 1);
}
