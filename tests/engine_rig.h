/* SPDX-License-Identifier: BSD-2-Clause */
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

/* ---- the requester's side of one echo call ---- */

struct echo_slot {
	uint32_t xid, len;
	uint8_t *data;              /* argument */
	uint8_t *xdr;
	uint8_t *res;               /* result buffer (write chunk), when offered */
	struct rpcrdma_ddp_item item;
	struct rpcrdma_ddp_buf buf;
	struct rpcrdma_call_args a;
	struct rpcrdma_eng_call *c;
	int done, status, verified;
	int keep_reply;             /* copy the reply stream into reply (freed by the test) */
	uint8_t *reply;
	uint32_t reply_len;
};

/* A call of len pattern bytes; ddp_arg: the argument as a read chunk; ddp_res: a result
 * buffer offered as a write chunk. */
static inline void echo_slot_setup(struct echo_slot *s, uint32_t xid, uint32_t len, int ddp_arg,
				   int ddp_res, uint32_t max_reply)
{
	memset(s, 0, sizeof(*s));
	s->xid = xid;
	s->len = len;
	s->data = malloc(len + 1);
	s->xdr = malloc(ECHO_CALL_HDR + 8 + len);
	if (!s->data || !s->xdr)
		abort();
	fill_pattern(s->data, xid, len);
	s->a.xdr = s->xdr;
	s->a.xdr_len = echo_call(s->xdr, xid, s->data, len, ddp_arg, &s->item);
	if (ddp_arg) {
		s->a.items = &s->item;
		s->a.nitems = 1;
	}
	if (ddp_res) {
		s->res = malloc(len + 1);
		if (!s->res)
			abort();
		s->buf.data = s->res;
		s->buf.cap = len;
		s->a.results = &s->buf;
		s->a.nresults = 1;
	}
	s->a.max_reply = max_reply;
}

static inline void echo_slot_free(struct echo_slot *s)
{
	free(s->data);
	free(s->xdr);
	free(s->res);
	s->data = s->xdr = s->res = NULL;
}

/* 1 when the reply carries the argument back, byte for byte, from the stream (MSGP
 * padding honoured) or from the result buffer. */
static inline int echo_verify(const struct echo_slot *s, const struct rpcrdma_eng_call *c)
{
	uint32_t rlen, len, align, thresh, base;
	const uint8_t *rep = (const uint8_t *)rpcrdma_eng_call_reply(c, &rlen), *data;

	rpcrdma_eng_call_msgp(c, &align, &thresh, &base);
	if (!rep || rlen < ECHO_REPLY_HDR + 4 || get32(rep) != s->xid || get32(rep + 4) != 1)
		return 0;
	len = get32(rep + ECHO_REPLY_HDR);
	if (len != s->len)
		return 0;
	if (s->buf.used)
		return s->buf.len == len && check_pattern(s->res, s->xid, len) == len;
	data = echo_opaque(rep, rlen, ECHO_REPLY_HDR, align, thresh, base, &len);
	return data && check_pattern(data, s->xid, len) == len;
}

/* ---- the responder's side ---- */

struct echo_reply_ctx {
	uint8_t hdr[32];
	uint8_t *flat;
	struct rpcrdma_ddp_item item;
	struct rpcrdma_reply_args a;
};

static inline void echo_reply_free(void *p)
{
	struct echo_reply_ctx *x = (struct echo_reply_ctx *)p;

	if (x)
		free(x->flat);
	free(x);
}

/* Check the call's argument and send it back: as a DDP item (from the call's own buffer,
 * no copy), or, with inline_results, inside the reply stream. Returns 1 if the argument
 * did not verify. The context is the request's user pointer (free it in reply_done). */
static inline int echo_answer(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r, uint64_t now,
			      int inline_results)
{
	uint32_t len, clen, align, thresh, base, xid = rpcrdma_eng_req_xid(r);
	const uint8_t *call = (const uint8_t *)rpcrdma_eng_req_call(r, &clen), *data;
	struct echo_reply_ctx *x = (struct echo_reply_ctx *)calloc(1, sizeof(*x));
	int bad;

	if (!x)
		abort();
	rpcrdma_eng_req_msgp(r, &align, &thresh, &base);
	data = echo_opaque(call, clen, ECHO_CALL_HDR, align, thresh, base, &len);
	bad = !data || check_pattern(data, xid, len) != len || get32(call) != xid;
	if (!data)
		len = 0;
	x->a.xdr = x->hdr;
	x->a.xdr_len = echo_reply(x->hdr, xid, data, len, &x->item);
	x->a.items = &x->item;
	x->a.nitems = 1;
	if (inline_results) {
		x->flat = (uint8_t *)malloc(x->a.xdr_len + len + 4);
		if (!x->flat)
			abort();
		memcpy(x->flat, x->hdr, x->a.xdr_len);
		if (len)
			memcpy(x->flat + x->a.xdr_len, data, len);
		memset(x->flat + x->a.xdr_len + len, 0, 3);
		x->a.xdr = x->flat;
		x->a.xdr_len += (len + 3) & ~3u;
		x->a.nitems = 0;
	}
	rpcrdma_eng_req_set_user(r, x);
	rpcrdma_eng_reply(e, r, &x->a, now);
	return bad;
}

#endif
