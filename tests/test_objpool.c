/* SPDX-License-Identifier: BSD-2-Clause */
/* Per-call objects without calloc (internal/objpool.h): rpcrdma__zalloc clears what
 * malloc hands back, used or not; a pool keeps at most what it is told, last in first
 * out, and nothing under AddressSanitizer. */
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

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_zalloc_clears_reused_memory);
	RUN(test_pool_bounded_lifo);
	RUN(test_pool_keeps_the_rest);
	HARNESS_END();
}
