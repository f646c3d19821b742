/* SPDX-License-Identifier: BSD-2-Clause */
/* Connection set-up formats: RFC 8797 private data and the RFC 5666 §6.2 Connection
 * Configuration Protocol (CONF_RDMA) arguments and results. */
#include "rpcrdma/codec.h"
#include "xdr_be.h"

/* RFC 8797 §4: sizes travel as (KiB - 1) in one octet, so 1 KiB .. 256 KiB. */
static int size_to_octet(uint32_t size, uint8_t *out)
{
	if (size < 1024 || size > RPCRDMA_PDATA_MAX_SIZE || size % 1024)
		return -RPCRDMA_ERR_RANGE;
	*out = (uint8_t)(size / 1024 - 1);
	return 0;
}

int rpcrdma_pdata_encode(const struct rpcrdma_pdata *pd, void *buf, size_t cap)
{
	uint8_t *p = buf, snd, rcv;
	size_t len;

	if (!pd || !buf)
		return -RPCRDMA_ERR_INVAL;
	len = pd->ext_flags ? RPCRDMA_PDATA_EXT_LEN : RPCRDMA_PDATA_LEN;
	if (cap < len)
		return -RPCRDMA_ERR_NOSPC;
	if (size_to_octet(pd->send_size, &snd) || size_to_octet(pd->recv_size, &rcv))
		return -RPCRDMA_ERR_RANGE;
	rpcrdma__put32(p, RPCRDMA_PDATA_FORMAT);
	p[4] = pd->version;
	p[5] = pd->flags;
	p[6] = snd;
	p[7] = rcv;
	if (pd->ext_flags) {
		rpcrdma__put32(p + 8, RPCRDMA_PDATA_EXT_FORMAT);
		p[12] = RPCRDMA_PDATA_EXT_VERSION;
		p[13] = pd->ext_flags;
		p[14] = p[15] = 0;
	}
	return (int)len;
}

static void pdata_defaults(struct rpcrdma_pdata *out)
{
	out->version = 0;
	out->flags = 0;
	out->ext_flags = 0;
	out->send_size = RPCRDMA_DEF_INLINE;
	out->recv_size = RPCRDMA_DEF_INLINE;
}

/* Private data of another format or version is ignored (RFC 8797 §5), and the peer is
 * then assumed to use the 1024-byte default both ways. Longer blocks are allowed:
 * fabrics pad private data. */
int rpcrdma_pdata_decode(const void *buf, size_t len, struct rpcrdma_pdata *out)
{
	const uint8_t *p = buf;

	if (!out || (!buf && len))
		return -RPCRDMA_ERR_INVAL;
	pdata_defaults(out);
	if (len < RPCRDMA_PDATA_LEN || rpcrdma__get32(p) != RPCRDMA_PDATA_FORMAT ||
	    p[4] != RPCRDMA_PDATA_VERSION)
		return -RPCRDMA_ERR_PROTO;
	out->version = p[4];
	out->flags = p[5];
	out->send_size = ((uint32_t)p[6] + 1) * 1024;
	out->recv_size = ((uint32_t)p[7] + 1) * 1024;
	if (len >= RPCRDMA_PDATA_EXT_LEN && rpcrdma__get32(p + 8) == RPCRDMA_PDATA_EXT_FORMAT &&
	    p[12] == RPCRDMA_PDATA_EXT_VERSION)
		out->ext_flags = p[13];
	return 0;
}

static int put3(uint32_t a, uint32_t b, uint32_t c, void *buf, size_t cap)
{
	uint8_t *p = buf;

	if (!buf)
		return -RPCRDMA_ERR_INVAL;
	if (cap < RPCRDMA_CCP_XDR_LEN)
		return -RPCRDMA_ERR_NOSPC;
	rpcrdma__put32(p, a);
	rpcrdma__put32(p + 4, b);
	rpcrdma__put32(p + 8, c);
	return RPCRDMA_CCP_XDR_LEN;
}

static int get3(const void *buf, size_t len, uint32_t *a, uint32_t *b, uint32_t *c)
{
	const uint8_t *p = buf;

	if (!buf)
		return -RPCRDMA_ERR_INVAL;
	if (len < RPCRDMA_CCP_XDR_LEN)
		return -RPCRDMA_ERR_PROTO;
	*a = rpcrdma__get32(p);
	*b = rpcrdma__get32(p + 4);
	*c = rpcrdma__get32(p + 8);
	return RPCRDMA_CCP_XDR_LEN;
}

int rpcrdma_ccp_args_encode(const struct rpcrdma_ccp_args *a, void *buf, size_t cap)
{
	if (!a)
		return -RPCRDMA_ERR_INVAL;
	return put3(a->maxcall_sendsize, a->maxreply_sendsize, a->maxrdmaread, buf, cap);
}

int rpcrdma_ccp_args_decode(const void *buf, size_t len, struct rpcrdma_ccp_args *a)
{
	if (!a)
		return -RPCRDMA_ERR_INVAL;
	return get3(buf, len, &a->maxcall_sendsize, &a->maxreply_sendsize, &a->maxrdmaread);
}

int rpcrdma_ccp_res_encode(const struct rpcrdma_ccp_res *r, void *buf, size_t cap)
{
	if (!r)
		return -RPCRDMA_ERR_INVAL;
	return put3(r->maxcall_sendsize, r->align, r->maxrdmaread, buf, cap);
}

int rpcrdma_ccp_res_decode(const void *buf, size_t len, struct rpcrdma_ccp_res *r)
{
	if (!r)
		return -RPCRDMA_ERR_INVAL;
	return get3(buf, len, &r->maxcall_sendsize, &r->align, &r->maxrdmaread);
}
