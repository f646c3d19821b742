/* SPDX-License-Identifier: BSD-2-Clause */
/* ONC RPC message header peek (RFC 5531 §9): just enough for a transport to route a
 * message and report it; the RPC layer proper is libtirpc's. */
#include "rpcrdma/codec.h"
#include "xdr_be.h"

#define RPC_MAX_AUTH_BYTES 400u  /* RFC 5531 §8.2: opaque_auth body limit */

enum { MSG_ACCEPTED = 0, MSG_DENIED = 1 };
enum { PROG_MISMATCH = 2, SYSTEM_ERR = 5 };
enum { RPC_MISMATCH = 0, AUTH_ERROR = 1 };

struct rd {
	const uint8_t *p;
	size_t len;
	size_t off;
};

static int get(struct rd *r, uint32_t *v)
{
	if (r->len - r->off < 4)
		return -RPCRDMA_ERR_PROTO;
	*v = rpcrdma__get32(r->p + r->off);
	r->off += 4;
	return 0;
}

/* opaque_auth: flavor, then an opaque body of at most 400 bytes, XDR-padded. */
static int skip_auth(struct rd *r, uint32_t *flavor)
{
	uint32_t blen;
	size_t padded;

	if (get(r, flavor) || get(r, &blen) || blen > RPC_MAX_AUTH_BYTES)
		return -RPCRDMA_ERR_PROTO;
	padded = ((size_t)blen + 3) & ~(size_t)3;
	if (r->len - r->off < padded)
		return -RPCRDMA_ERR_PROTO;
	r->off += padded;
	return 0;
}

static int peek_call(struct rd *r, struct rpcrdma_rpc_info *in)
{
	if (get(r, &in->rpcvers) || get(r, &in->prog) || get(r, &in->vers) || get(r, &in->proc))
		return -RPCRDMA_ERR_PROTO;
	if (skip_auth(r, &in->cred_flavor) || skip_auth(r, &in->verf_flavor))
		return -RPCRDMA_ERR_PROTO;
	return 0;
}

static int peek_accepted(struct rd *r, struct rpcrdma_rpc_info *in)
{
	if (skip_auth(r, &in->verf_flavor) || get(r, &in->accept_stat))
		return -RPCRDMA_ERR_PROTO;
	if (in->accept_stat > SYSTEM_ERR)
		return -RPCRDMA_ERR_PROTO;
	if (in->accept_stat == PROG_MISMATCH &&
	    (get(r, &in->mismatch_low) || get(r, &in->mismatch_high)))
		return -RPCRDMA_ERR_PROTO;
	return 0;
}

static int peek_denied(struct rd *r, struct rpcrdma_rpc_info *in)
{
	if (get(r, &in->reject_stat))
		return -RPCRDMA_ERR_PROTO;
	if (in->reject_stat == RPC_MISMATCH)
		return get(r, &in->mismatch_low) || get(r, &in->mismatch_high) ?
			       -RPCRDMA_ERR_PROTO : 0;
	if (in->reject_stat == AUTH_ERROR)
		return get(r, &in->auth_stat);
	return -RPCRDMA_ERR_PROTO;
}

static int peek_reply(struct rd *r, struct rpcrdma_rpc_info *in)
{
	if (get(r, &in->reply_stat))
		return -RPCRDMA_ERR_PROTO;
	if (in->reply_stat == MSG_ACCEPTED)
		return peek_accepted(r, in);
	if (in->reply_stat == MSG_DENIED)
		return peek_denied(r, in);
	return -RPCRDMA_ERR_PROTO;
}

int rpcrdma_rpc_peek(const void *buf, size_t len, struct rpcrdma_rpc_info *info)
{
	struct rd r = { buf, len, 0 };
	int rc;

	if (!info || (!buf && len))
		return -RPCRDMA_ERR_INVAL;
	*info = (struct rpcrdma_rpc_info){ 0 };
	if (get(&r, &info->xid) || get(&r, &info->msg_type))
		return -RPCRDMA_ERR_PROTO;
	if (info->msg_type == RPCRDMA_RPC_CALL)
		rc = peek_call(&r, info);
	else if (info->msg_type == RPCRDMA_RPC_REPLY)
		rc = peek_reply(&r, info);
	else
		rc = -RPCRDMA_ERR_PROTO;
	info->hdr_len = (uint32_t)r.off;
	return rc;
}
