/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal: big-endian XDR word access for the codec. Callers check bounds first.
 * Correct on hosts of either byte order. Reads are byte shifts, which compilers turn into
 * one load (and a bswap on little-endian hosts). Writes are not: gcc 12 left the four
 * byte stores apart, doubling the encoder's instructions (117 -> 228 per header,
 * scripts/callgrind-codec.sh), so with GCC or Clang a write is one swap where the host
 * is little-endian and one store. */
#ifndef RPCRDMA_XDR_BE_H
#define RPCRDMA_XDR_BE_H

#include <stdint.h>
#include <string.h>

/* gcc 12 kept rpcrdma__get64 out of line in the decoder's fast path (a call for each
 * segment offset); these are a load and a swap, always worth inlining. */
#if defined(__GNUC__)
#define XDR_BE_INLINE static inline __attribute__((always_inline))
#else
#define XDR_BE_INLINE static inline
#endif

XDR_BE_INLINE uint32_t rpcrdma__get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

XDR_BE_INLINE uint64_t rpcrdma__get64(const uint8_t *p)
{
	return ((uint64_t)rpcrdma__get32(p) << 32) | rpcrdma__get32(p + 4);
}

XDR_BE_INLINE void rpcrdma__put32(uint8_t *p, uint32_t v)
{
#if defined(__BYTE_ORDER__) && defined(__GNUC__)
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	memcpy(p, &v, sizeof(v));
#else
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
#endif
}

XDR_BE_INLINE void rpcrdma__put64(uint8_t *p, uint64_t v)
{
	rpcrdma__put32(p, (uint32_t)(v >> 32));
	rpcrdma__put32(p + 4, (uint32_t)v);
}

#endif
