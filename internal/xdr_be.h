/* Internal: big-endian XDR word access for the codec. Callers check bounds first. */
#ifndef RPCRDMA_XDR_BE_H
#define RPCRDMA_XDR_BE_H

#include <stdint.h>
#include <string.h>

static inline uint32_t rpcrdma__get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return __builtin_bswap32(v);
}

static inline uint64_t rpcrdma__get64(const uint8_t *p)
{
	return ((uint64_t)rpcrdma__get32(p) << 32) | rpcrdma__get32(p + 4);
}

static inline void rpcrdma__put32(uint8_t *p, uint32_t v)
{
	v = __builtin_bswap32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void rpcrdma__put64(uint8_t *p, uint64_t v)
{
	rpcrdma__put32(p, (uint32_t)(v >> 32));
	rpcrdma__put32(p + 4, (uint32_t)v);
}

#endif
