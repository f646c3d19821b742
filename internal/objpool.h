/* SPDX-License-Identifier: BSD-2-Clause */
/* Per-call objects without calloc (internal).
 *
 * glibc's calloc does not use its per-thread cache, and objects past 1 KiB miss that
 * cache whichever call makes them: callgrind counted ~220 instructions per small calloc
 * and ~7,000 for the server's 6.6 KiB request (allocation, clearing, and the free's
 * consolidation), several of each per RPC. Small objects come from malloc and are
 * cleared here (rpcrdma__zalloc); large ones are kept, a few per owner, for the next call
 * (struct rpcrdma__objpool). Under AddressSanitizer nothing is kept, so that a use after
 * free is still caught. Not thread-safe: the owner serialises. */
#ifndef RPCRDMA_OBJPOOL_H
#define RPCRDMA_OBJPOOL_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define RPCRDMA__OBJPOOL_KEEPS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RPCRDMA__OBJPOOL_KEEPS 0
#endif
#endif
#ifndef RPCRDMA__OBJPOOL_KEEPS
#define RPCRDMA__OBJPOOL_KEEPS 1
#endif

/* calloc(1, size) for objects of up to ~1 KiB, through the per-thread cache. The empty
 * asm hides where p came from: gcc otherwise fuses malloc and memset back into calloc. */
static inline void *rpcrdma__zalloc(size_t size)
{
	void *p = malloc(size);

	__asm__("" : "+r"(p));
	if (p)
		memset(p, 0, size);
	return p;
}

/* Freed objects of one size, linked through their first bytes. */
struct rpcrdma__objpool {
	void *head;
	unsigned n;
};

/* A kept object (its contents as left), or NULL. */
static inline void *rpcrdma__objpool_get(struct rpcrdma__objpool *p)
{
	void *o = p->head;

	if (o) {
		memcpy(&p->head, o, sizeof(void *));
		p->n--;
	}
	return o;
}

/* Keep o (at least a pointer's size) if fewer than max are kept; false: the caller frees
 * it. */
static inline bool rpcrdma__objpool_put(struct rpcrdma__objpool *p, void *o, unsigned max)
{
	if (!RPCRDMA__OBJPOOL_KEEPS || p->n >= max)
		return false;
	memcpy(o, &p->head, sizeof(void *));
	p->head = o;
	p->n++;
	return true;
}

static inline void rpcrdma__objpool_free(struct rpcrdma__objpool *p)
{
	void *o;

	while ((o = rpcrdma__objpool_get(p)) != NULL)
		free(o);
}

#endif
