/* SPDX-License-Identifier: BSD-2-Clause */
/* Per-call objects without calloc, or without malloc at all once warm (internal).
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

/* A cleared object of size bytes: a kept one, else a new one (rpcrdma__zalloc). */
static inline void *rpcrdma__objpool_zget(struct rpcrdma__objpool *p, size_t size)
{
	void *o = rpcrdma__objpool_get(p);

	if (!o)
		return rpcrdma__zalloc(size);
	memset(o, 0, size);
	return o;
}

static inline void rpcrdma__objpool_free(struct rpcrdma__objpool *p)
{
	void *o;

	while ((o = rpcrdma__objpool_get(p)) != NULL)
		free(o);
}

/* A few objects kept for an owner that several threads use without a common lock (a
 * client's callers, a provider's registrations): each slot is taken and filled by an
 * atomic exchange. */
#define RPCRDMA__SPARES 32   /* as many as calls in flight at the usual deepest */

struct rpcrdma__spares {
	void *slot[RPCRDMA__SPARES];
};

/* A kept object (its contents as left), or NULL. A slot is read before it is exchanged:
 * a locked exchange per empty slot would cost more than the malloc it saves. */
static inline void *rpcrdma__spares_get(struct rpcrdma__spares *s)
{
	void *o;
	int i;

	for (i = 0; i < RPCRDMA__SPARES; i++)
		if (__atomic_load_n(&s->slot[i], __ATOMIC_RELAXED) &&
		    (o = __atomic_exchange_n(&s->slot[i], NULL, __ATOMIC_ACQUIRE)) != NULL)
			return o;
	return NULL;
}

/* Keep o in a free slot; false: none was free (or nothing is kept), the caller frees o. */
static inline bool rpcrdma__spares_put(struct rpcrdma__spares *s, void *o)
{
	int i;

	if (!RPCRDMA__OBJPOOL_KEEPS)
		return false;
	for (i = 0; i < RPCRDMA__SPARES; i++) {
		void *none = NULL;

		if (!__atomic_load_n(&s->slot[i], __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&s->slot[i], &none, o, false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return true;
	}
	return false;
}

#endif
