/* SPDX-License-Identifier: BSD-2-Clause */
/* Per-call objects without calloc (internal/objpool.h): rpcrdma__zalloc clears what
 * malloc hands back, used or not; a pool keeps at most what it is told, last in first
 * out, and nothing under AddressSanitizer. */
#include <pthread.h>
#include <stdint.h>

#include "harness.h"
#include "objpool.h"

/* malloc's per-thread cache hands a freed chunk straight back: dirty it first. */
static void test_zalloc_clears_reused_memory(void)
{
	const size_t sizes[] = { 8, 144, 700, 1000 };

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k], i, nonzero = 0;
		unsigned char *p = malloc(n);

		CHECK(p != NULL);
		memset(p, 0xa5, n);
		free(p);
		p = rpcrdma__zalloc(n);
		CHECK(p != NULL);
		for (i = 0; i < n; i++)
			nonzero += p[i] != 0;
		CHECK_EQ_U(nonzero, 0);
		free(p);
	}
}

static void test_pool_bounded_lifo(void)
{
	struct rpcrdma__objpool pool = { NULL, 0 };
	void *a = malloc(64), *b = malloc(64), *c = malloc(64);

	CHECK(rpcrdma__objpool_get(&pool) == NULL);
	if (!RPCRDMA__OBJPOOL_KEEPS) {
		/* AddressSanitizer: every object goes back to free() */
		CHECK(!rpcrdma__objpool_put(&pool, a, 2));
		CHECK(rpcrdma__objpool_get(&pool) == NULL);
		free(a);
		free(b);
		free(c);
		return;
	}
	CHECK(rpcrdma__objpool_put(&pool, a, 2));
	CHECK(rpcrdma__objpool_put(&pool, b, 2));
	CHECK(!rpcrdma__objpool_put(&pool, c, 2));   /* full: the caller frees it */
	CHECK_EQ_U(pool.n, 2);
	CHECK(rpcrdma__objpool_get(&pool) == b);
	CHECK(rpcrdma__objpool_get(&pool) == a);
	CHECK(rpcrdma__objpool_get(&pool) == NULL);
	CHECK_EQ_U(pool.n, 0);
	CHECK(rpcrdma__objpool_put(&pool, a, 1));
	CHECK(!rpcrdma__objpool_put(&pool, b, 1));
	rpcrdma__objpool_free(&pool);   /* frees a */
	CHECK(pool.head == NULL && pool.n == 0);
	free(b);
	free(c);
}

/* Only the first pointer's bytes of a kept object are the pool's. */
static void test_pool_keeps_the_rest(void)
{
	struct rpcrdma__objpool pool = { NULL, 0 };
	unsigned char *a = malloc(64);

	if (!RPCRDMA__OBJPOOL_KEEPS) {
		free(a);
		return;
	}
	memset(a, 0x5a, 64);
	CHECK(rpcrdma__objpool_put(&pool, a, 4));
	CHECK(rpcrdma__objpool_get(&pool) == a);
	for (size_t i = sizeof(void *); i < 64; i++)
		CHECK_EQ_U(a[i], 0x5a);
	free(a);
}

/* zget clears what it hands out, kept (dirty) or new. */
static void test_zget_clears_kept(void)
{
	struct rpcrdma__objpool pool = { NULL, 0 };
	unsigned char *a = malloc(200), *b;
	size_t i, nonzero = 0;

	CHECK(a != NULL);
	if (!a)
		return;
	memset(a, 0xa5, 200);
	if (!rpcrdma__objpool_put(&pool, a, 4))
		free(a);
	b = rpcrdma__objpool_zget(&pool, 200);
	CHECK(b != NULL && (!RPCRDMA__OBJPOOL_KEEPS || b == a));
	for (i = 0; b && i < 200; i++)
		nonzero += b[i] != 0;
	CHECK_EQ_U(nonzero, 0);
	CHECK(pool.n == 0);
	free(b);
	b = rpcrdma__objpool_zget(&pool, 200);   /* empty pool: a new one, cleared */
	for (i = 0, nonzero = 0; b && i < 200; i++)
		nonzero += b[i] != 0;
	CHECK(b != NULL);
	CHECK_EQ_U(nonzero, 0);
	free(b);
}

/* Spare slots: at most RPCRDMA__SPARES kept, each handed out once. */
static void test_spares_bounded(void)
{
	struct rpcrdma__spares sp;
	void *o[RPCRDMA__SPARES + 1], *got;
	int i, kept = 0, back = 0;

	memset(&sp, 0, sizeof(sp));
	CHECK(rpcrdma__spares_get(&sp) == NULL);
	for (i = 0; i <= RPCRDMA__SPARES; i++) {
		o[i] = malloc(16);
		kept += rpcrdma__spares_put(&sp, o[i]);
	}
	CHECK_EQ_I(kept, RPCRDMA__OBJPOOL_KEEPS ? RPCRDMA__SPARES : 0);
	while ((got = rpcrdma__spares_get(&sp)) != NULL) {
		for (i = 0; i < RPCRDMA__SPARES && o[i] != got; i++)
			;
		CHECK(i < RPCRDMA__SPARES);   /* one of those kept, not the refused last */
		if (i < RPCRDMA__SPARES)
			o[i] = NULL;
		back++;
		free(got);
	}
	CHECK_EQ_I(back, kept);
	for (i = 0; i <= RPCRDMA__SPARES; i++)
		free(o[i]);
}

/* Threads taking and putting back the same objects without a lock: none is lost or
 * handed to two at once (each marks what it holds, and checks the mark was clear). */
#define SPARE_ROUNDS 200000

struct spare_obj {
	int holder;
};

static struct rpcrdma__spares shared_sp;
static int spare_clash;

static void *spare_worker(void *arg)
{
	int me = (int)(intptr_t)arg;

	for (int r = 0; r < SPARE_ROUNDS; r++) {
		struct spare_obj *x = rpcrdma__spares_get(&shared_sp);

		if (!x)
			continue;
		if (__atomic_exchange_n(&x->holder, me, __ATOMIC_ACQ_REL) != 0)
			__atomic_store_n(&spare_clash, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&x->holder, 0, __ATOMIC_RELEASE);
		if (!rpcrdma__spares_put(&shared_sp, x))
			__atomic_store_n(&spare_clash, 2, __ATOMIC_RELAXED);   /* its slot was free */
	}
	return NULL;
}

static void test_spares_threads(void)
{
	struct spare_obj objs[8];
	pthread_t t[2];
	int i, n = 0;

	if (!RPCRDMA__OBJPOOL_KEEPS)
		return;
	memset(objs, 0, sizeof(objs));
	memset(&shared_sp, 0, sizeof(shared_sp));
	for (i = 0; i < 8; i++)
		CHECK(rpcrdma__spares_put(&shared_sp, &objs[i]));
	for (i = 0; i < 2; i++)
		CHECK_EQ_I(pthread_create(&t[i], NULL, spare_worker, (void *)(intptr_t)(i + 1)), 0);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ_I(spare_clash, 0);
	while (rpcrdma__spares_get(&shared_sp) != NULL)
		n++;
	CHECK_EQ_I(n, 8);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_zalloc_clears_reused_memory);
	RUN(test_pool_bounded_lifo);
	RUN(test_pool_keeps_the_rest);
	RUN(test_zget_clears_kept);
	RUN(test_spares_bounded);
	RUN(test_spares_threads);
	HARNESS_END();
}
