/* SPDX-License-Identifier: BSD-2-Clause */
/* SipHash-2-4 (Aumasson and Bernstein, 2012): a pseudo-random function made for short
 * keyed MACs, here of file handles. Checked against the paper's test vectors
 * (tests/nfs3d/test_siphash.c). */
#include "siphash.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void sipround(uint64_t v[4])
{
	v[0] += v[1]; v[1] = ROTL(v[1], 13); v[1] ^= v[0]; v[0] = ROTL(v[0], 32);
	v[2] += v[3]; v[3] = ROTL(v[3], 16); v[3] ^= v[2];
	v[0] += v[3]; v[3] = ROTL(v[3], 21); v[3] ^= v[0];
	v[2] += v[1]; v[1] = ROTL(v[1], 17); v[1] ^= v[2]; v[2] = ROTL(v[2], 32);
}

static void sip_absorb(uint64_t v[4], uint64_t m)
{
	v[3] ^= m;
	sipround(v);
	sipround(v);
	v[0] ^= m;
}

uint64_t nfs3d_siphash(const unsigned char key[16], const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t k0 = le64(key), k1 = le64(key + 8), last = (uint64_t)len << 56;
	uint64_t v[4] = { k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
			  k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull };
	size_t i, tail = len & 7;

	for (i = 0; i + 8 <= len; i += 8)
		sip_absorb(v, le64(p + i));
	while (tail--)
		last |= (uint64_t)p[len - (len & 7) + tail] << (8 * tail);
	sip_absorb(v, last);
	v[2] ^= 0xff;
	for (i = 0; i < 4; i++)
		sipround(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

