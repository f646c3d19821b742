/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers every provider uses: the clock, steering-tag keys, the check of an RMA
 * request. Below prov.c (the API dispatcher) and the providers: it calls neither. */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "prov_int.h"

int64_t rpcrdma__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The clock as of the kernel's last tick: a few ns to read where CLOCK_MONOTONIC takes
 * ~25 ns on a VM's kvm-clock, for checks that only need to come round every few ms. */
int64_t rpcrdma__coarse_ms(void)
{
	struct timespec ts;

#ifdef CLOCK_MONOTONIC_COARSE
	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0)
		return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
#endif
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rpcrdma__keys_init(struct rpcrdma__keys *k)
{
	memset(k, 0, sizeof(*k));
	pthread_mutex_init(&k->lock, NULL);
}

static uint32_t key_bucket(uint32_t key)
{
	return (key * 2654435761u) >> (32 - RPCRDMA_KEY_FILTER_BITS);
}

static int key_is_recent(const struct rpcrdma__keys *k, uint32_t key)
{
	uint32_t i;

	if (!k->in_bucket[key_bucket(key)])
		return 0;
	for (i = 0; i < RPCRDMA_KEY_QUARANTINE; i++)
		if (k->recent[i] == key)
			return 1;
	return 0;
}

/* The kernel's random bytes, a batch at a time; the clock only if it has none to give. */
static uint32_t random_key(struct rpcrdma__keys *k)
{
	if (!k->nfresh &&
	    getrandom(k->fresh, sizeof(k->fresh), 0) == (ssize_t)sizeof(k->fresh))
		k->nfresh = RPCRDMA_KEY_BATCH;
	if (!k->nfresh)
		return (uint32_t)rpcrdma__now_ms() * 2654435761u;
	return k->fresh[--k->nfresh];
}

uint32_t rpcrdma__key_new(struct rpcrdma__keys *k)
{
	uint32_t key;

	pthread_mutex_lock(&k->lock);
	do {
		key = random_key(k);
	} while (key == 0 || key_is_recent(k, key));
	pthread_mutex_unlock(&k->lock);
	return key;
}

/* A full count stays full: it no longer says how many, only "look". */
static void bucket_add(struct rpcrdma__keys *k, uint32_t key, int by)
{
	uint8_t *n = &k->in_bucket[key_bucket(key)];

	if (*n != UINT8_MAX)
		*n = (uint8_t)(*n + by);
}

void rpcrdma__key_release(struct rpcrdma__keys *k, uint32_t key)
{
	uint32_t *slot;

	pthread_mutex_lock(&k->lock);
	slot = &k->recent[k->next++ % RPCRDMA_KEY_QUARANTINE];
	if (*slot)
		bucket_add(k, *slot, -1);   /* out of quarantine */
	*slot = key;
	if (key)
		bucket_add(k, key, 1);
	pthread_mutex_unlock(&k->lock);
}

int rpcrdma__rma_check(const struct rpcrdma_sge *local, uint32_t nlocal,
		       const struct rpcrdma_segment *remote, uint32_t nremote, uint64_t *total)
{
	uint64_t l = 0, r = 0;
	uint32_t i;

	if (!local || !remote || !nlocal || !nremote)
		return -RPCRDMA_ERR_INVAL;
	for (i = 0; i < nlocal; i++) {
		if (!local[i].mr || !local[i].len)
			return -RPCRDMA_ERR_INVAL;
		l += local[i].len;
	}
	for (i = 0; i < nremote; i++) {
		if (!remote[i].length)
			return -RPCRDMA_ERR_INVAL;
		r += remote[i].length;
	}
	if (l != r)
		return -RPCRDMA_ERR_INVAL;
	*total = l;
	return 0;
}
