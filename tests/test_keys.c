/* SPDX-License-Identifier: BSD-2-Clause */
/* Steering-tag keys (prov/prov_util.c): random (RFC 5042), never 0, never one of the last
 * RPCRDMA_KEY_QUARANTINE released. The random values are put in the batch by hand here,
 * so that a quarantined one is offered and must be passed over. */
#include "harness.h"
#include "prov_int.h"

/* The next values key_new() takes, in order. */
static void offer(struct rpcrdma__keys *k, const uint32_t *v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		k->fresh[n - 1 - i] = v[i];
	k->nfresh = n;
}

static void release_range(struct rpcrdma__keys *k, uint32_t from, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		rpcrdma__key_release(k, from + i);
}

/* x with (x * 2654435761) >> 19 == bucket, the i-th such (the multiplier is odd, so it
 * has an inverse modulo 2^32). */
static uint32_t in_bucket(uint32_t bucket, uint32_t i)
{
	uint32_t inv = 2654435761u;

	for (int n = 0; n < 5; n++)   /* Newton: each step doubles the correct low bits */
		inv *= 2u - 2654435761u * inv;
	return (bucket << (32 - RPCRDMA_KEY_FILTER_BITS) | i) * inv;
}

static void test_quarantine(void)
{
	static struct rpcrdma__keys k;
	const uint32_t a[] = { 0, 5, 777777 }, b[] = { 5 };

	rpcrdma__keys_init(&k);
	release_range(&k, 1, RPCRDMA_KEY_QUARANTINE);
	offer(&k, a, 3);
	CHECK_EQ_U(rpcrdma__key_new(&k), 777777);   /* 0 and a quarantined 5 passed over */
	release_range(&k, 100000, RPCRDMA_KEY_QUARANTINE);   /* 1..1024 leave */
	offer(&k, b, 1);
	CHECK_EQ_U(rpcrdma__key_new(&k), 5);
}

/* More keys in one bucket than its count holds (256: a count that wrapped would say
 * none): it stays "look", and the look decides, both ways, also once they have all left. */
static void test_full_bucket(void)
{
	static struct rpcrdma__keys k;
	uint32_t v[3];

	CHECK_EQ_U(in_bucket(77, 3) * 2654435761u >> (32 - RPCRDMA_KEY_FILTER_BITS), 77);
	rpcrdma__keys_init(&k);
	for (uint32_t i = 1; i <= 256; i++)
		rpcrdma__key_release(&k, in_bucket(77, i));
	v[0] = in_bucket(77, 10);    /* quarantined */
	v[1] = in_bucket(77, 256);   /* quarantined */
	v[2] = in_bucket(77, 1000);  /* same bucket, never used */
	offer(&k, v, 3);
	CHECK_EQ_U(rpcrdma__key_new(&k), in_bucket(77, 1000));
	release_range(&k, 5000000, RPCRDMA_KEY_QUARANTINE);
	offer(&k, v, 1);
	CHECK_EQ_U(rpcrdma__key_new(&k), in_bucket(77, 10));
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_quarantine);
	RUN(test_full_bucket);
	HARNESS_END();
}
