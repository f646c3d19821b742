/* Test service shared by the engine tests (mock and end-to-end): an ECHO procedure whose
 * argument and result are one opaque item, DDP-eligible both ways.
 *
 *   call  = xid, CALL, rpcvers 2, prog, vers, proc, AUTH_NONE cred + verf, opaque data
 *   reply = xid, REPLY, MSG_ACCEPTED, AUTH_NONE verf, SUCCESS, opaque data
 *
 * Data bytes follow a pattern of (xid, index), so each side checks every byte. */
#ifndef RPCRDMA_TEST_ENGINE_RIG_H
#define RPCRDMA_TEST_ENGINE_RIG_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/engine.h"

#define ECHO_CALL_HDR 40u
#define ECHO_REPLY_HDR 24u
#define ECHO_PROG 0x20000099u

static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint8_t pattern(uint32_t xid, uint32_t i)
{
	return (uint8_t)(xid * 131u + i * 7u + (i >> 8));
}

static inline void fill_pattern(uint8_t *d, uint32_t xid, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		d[i] = pattern(xid, i);
}

/* Index of the first byte that breaks the pattern, or len. */
static inline uint32_t check_pattern(const uint8_t *d, uint32_t xid, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (d[i] != pattern(xid, i))
			return i;
	return len;
}

/* An echo call of len bytes: with ddp, the data is an item (read chunk), else inline.
 * xdr must hold ECHO_CALL_HDR + 4 + len + 3 bytes. Returns the xdr length. */
static inline uint32_t echo_call(uint8_t *xdr, uint32_t xid, const uint8_t *data, uint32_t len,
				 int ddp, struct rpcrdma_ddp_item *item)
{
	put32(xdr, xid);
	put32(xdr + 4, 0);
	put32(xdr + 8, 2);
	put32(xdr + 12, ECHO_PROG);
	put32(xdr + 16, 1);
	put32(xdr + 20, 1);
	memset(xdr + 24, 0, 16);
	put32(xdr + 40, len);
	if (ddp) {
		item->offset = 44;
		item->len = len;
		item->data = data;
		return 44;
	}
	memcpy(xdr + 44, data, len);
	memset(xdr + 44 + len, 0, (4 - (len & 3)) & 3);
	return 44 + ((len + 3) & ~3u);
}

/* Find the opaque in a call or reply stream at off (its length word), honouring RDMA_MSGP
 * padding. Returns the data pointer or NULL if the stream is too short. */
static inline const uint8_t *echo_opaque(const uint8_t *s, uint32_t slen, uint32_t off,
					 uint32_t align, uint32_t thresh, uint32_t base,
					 uint32_t *len)
{
	uint32_t pad;

	if (slen < off + 4)
		return NULL;
	*len = get32(s + off);
	pad = rpcrdma_msgp_pad(align, thresh, base, off + 4, *len);
	if ((uint64_t)off + 4 + pad + *len > slen)
		return NULL;
	return s + off + 4 + pad;
}

/* The reply xdr (without data) into out (ECHO_REPLY_HDR + 4 bytes) and the item. */
static inline uint32_t echo_reply(uint8_t *out, uint32_t xid, const uint8_t *data, uint32_t len,
				  struct rpcrdma_ddp_item *item)
{
	put32(out, xid);
	put32(out + 4, 1);
	memset(out + 8, 0, 16);
	put32(out + 24, len);
	item->offset = 28;
	item->len = len;
	item->data = data;
	return 28;
}

#endif
