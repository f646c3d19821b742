/* SPDX-License-Identifier: BSD-2-Clause */
/* A test flavour that transforms every byte of the RPC body, in place on the message's
 * own XDR stream, as RPCSEC_GSS integrity and privacy do (RFC 2203 §5.3.2): the body is
 * encoded after a length word, then XORed where it lies (so it needs a memory stream, as
 * RDMA's are; libtirpc's TCP record stream cannot be rewound that far). A transport that moved a DDP
 * item out of the stream would send that item untransformed (in clear) and the peer would
 * decode garbage (RFC 8166 §8.2.1 forbids it). Both sides: the client's AUTH and the
 * server's handler, registered with svc_auth_reg(). */
#ifndef RT_AUTH_H
#define RT_AUTH_H

#include <stdlib.h>

#include <rpc/rpc.h>
#include <rpc/svc_auth.h>
#include <rpc/svc_mt.h>

#define RT_XOR_FLAVOR 390100    /* private use */
#define RT_XOR_KEY 0x5a

static inline void rt_xor(char *b, u_int len)
{
	u_int i;

	for (i = 0; i < len; i++)
		b[i] ^= RT_XOR_KEY;
}

static inline bool_t rt_xor_encode(XDR *x, xdrproc_t f, caddr_t p)
{
	u_int start = XDR_GETPOS(x), end, len;
	char *b;

	if (!XDR_SETPOS(x, start + 4) || !f(x, p))
		return FALSE;
	end = XDR_GETPOS(x);
	len = end - start - 4;
	if (!XDR_SETPOS(x, start + 4) || !(b = (char *)XDR_INLINE(x, (int)len)))
		return FALSE;
	rt_xor(b, len);
	return XDR_SETPOS(x, start) && xdr_u_int(x, &len) && XDR_SETPOS(x, end);
}

/* Decoding reads the body as an opaque and decodes it from memory once restored (as
 * libtirpc's RPCSEC_GSS does), so it works on any stream. */
static inline bool_t rt_xor_decode(XDR *x, xdrproc_t f, caddr_t p)
{
	char *b = NULL;
	u_int len = 0;
	bool_t ok;
	XDR m;

	if (!xdr_bytes(x, &b, &len, ~0u))
		return FALSE;
	rt_xor(b, len);
	xdrmem_create(&m, b, len, XDR_DECODE);
	ok = f(&m, p);
	free(b);
	return ok;
}

/* ---- client ---- */

static inline void rt_xor_nextverf(AUTH *a)
{
	(void)a;
}

static inline int rt_xor_marshal(AUTH *a, XDR *x)
{
	return xdr_opaque_auth(x, &a->ah_cred) && xdr_opaque_auth(x, &a->ah_verf);
}

static inline int rt_xor_validate(AUTH *a, struct opaque_auth *v)
{
	(void)a;
	(void)v;
	return TRUE;
}

static inline int rt_xor_refresh(AUTH *a, void *arg)
{
	(void)a;
	(void)arg;
	return FALSE;
}

static inline void rt_xor_destroy(AUTH *a)
{
	free(a);
}

static inline int rt_xor_wrap(AUTH *a, XDR *x, xdrproc_t f, caddr_t p)
{
	(void)a;
	return rt_xor_encode(x, f, p);
}

static inline int rt_xor_unwrap(AUTH *a, XDR *x, xdrproc_t f, caddr_t p)
{
	(void)a;
	return rt_xor_decode(x, f, p);
}

static struct auth_ops rt_xor_ops = { rt_xor_nextverf, rt_xor_marshal, rt_xor_validate,
				       rt_xor_refresh, rt_xor_destroy, rt_xor_wrap,
				       rt_xor_unwrap };

static inline AUTH *rt_xor_auth_create(void)
{
	AUTH *a = (AUTH *)calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->ah_cred.oa_flavor = RT_XOR_FLAVOR;
	a->ah_verf = _null_auth;
	a->ah_ops = &rt_xor_ops;
	return a;
}

/* ---- server ---- */

static inline int rt_xor_svc_wrap(SVCAUTH *a, XDR *x, xdrproc_t f, caddr_t p)
{
	(void)a;
	return rt_xor_encode(x, f, p);
}

static inline int rt_xor_svc_unwrap(SVCAUTH *a, XDR *x, xdrproc_t f, caddr_t p)
{
	(void)a;
	return rt_xor_decode(x, f, p);
}

static inline int rt_xor_svc_destroy(SVCAUTH *a)
{
	(void)a;
	return TRUE;
}

static struct svc_auth_ops rt_xor_svc_ops = { rt_xor_svc_wrap, rt_xor_svc_unwrap,
					       rt_xor_svc_destroy };

static inline enum auth_stat rt_xor_handler(struct svc_req *rq, struct rpc_msg *msg)
{
	(void)msg;
	SVC_XP_AUTH(rq->rq_xprt).svc_ah_ops = &rt_xor_svc_ops;
	SVC_XP_AUTH(rq->rq_xprt).svc_ah_private = NULL;
	rq->rq_xprt->xp_verf = _null_auth;
	return AUTH_OK;
}

#endif
