/* SPDX-License-Identifier: BSD-2-Clause */
/* Registrations known to the capture: where the bytes behind a handle are, so that an
 * endpoint can show the RDMA its peer did on our memory (which no completion reports)
 * from the data itself. Tracked only while a capture file is open. */
#include <pthread.h>
#include <stdlib.h>

#include "pcap_int.h"

#define MR_BUCKETS 1024

struct mr_node {
	struct mr_node *next;
	const struct rpcrdma_mr *mr;
};

static pthread_mutex_t mr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mr_node *mr_table[MR_BUCKETS];
static int mr_users;
static int mr_entries;   /* read without the lock: releases skip the table when empty */

void rpcrdma__cap_mr_use(int delta)
{
	pthread_mutex_lock(&mr_lock);
	mr_users += delta;
	pthread_mutex_unlock(&mr_lock);
}

static struct mr_node **bucket(uint32_t handle)
{
	return &mr_table[(handle * 2654435761u) >> 22];
}

void rpcrdma__cap_mr_add(const struct rpcrdma_mr *mr)
{
	struct mr_node *n;

	pthread_mutex_lock(&mr_lock);
	if (mr_users > 0 &&
	    (mr->access & (unsigned)(RPCRDMA_ACC_REMOTE_READ | RPCRDMA_ACC_REMOTE_WRITE)) &&
	    (n = malloc(sizeof(*n)))) {
		struct mr_node **b = bucket(mr->handle);

		n->mr = mr;
		n->next = *b;
		*b = n;
		__atomic_add_fetch(&mr_entries, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&mr_lock);
}

void rpcrdma__cap_mr_del(const struct rpcrdma_mr *mr)
{
	struct mr_node **pp, *n;

	if (!__atomic_load_n(&mr_entries, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&mr_lock);
	for (pp = bucket(mr->handle); (n = *pp); pp = &n->next) {
		if (n->mr == mr) {
			*pp = n->next;
			free(n);
			__atomic_sub_fetch(&mr_entries, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	pthread_mutex_unlock(&mr_lock);
}

/* The caller uses the bytes at once, on the thread that owns the registration's use, so
 * they cannot be released meanwhile. */
const uint8_t *rpcrdma__cap_mr_find(const struct rpcrdma_prov *prov, uint32_t handle,
				    uint64_t offset, uint32_t len)
{
	const uint8_t *p = NULL;
	struct mr_node *n;

	pthread_mutex_lock(&mr_lock);
	for (n = *bucket(handle); n; n = n->next) {
		const struct rpcrdma_mr *mr = n->mr;

		if (mr->prov == prov && mr->handle == handle && offset >= mr->offset &&
		    offset - mr->offset <= mr->len && len <= mr->len - (offset - mr->offset)) {
			p = (const uint8_t *)mr->addr + (offset - mr->offset);
			break;
		}
	}
	pthread_mutex_unlock(&mr_lock);
	return p;
}
