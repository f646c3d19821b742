/* SPDX-License-Identifier: BSD-2-Clause */
/* The engine's lower face over a provider endpoint (include/rpcrdma/engine.h): the
 * engine's requests go straight to the public provider calls; and a server engine's
 * accept, its receives posted first. */
#include <stdbool.h>

#include "prov_int.h"
#include "rpcrdma/codec.h"
#include "rpcrdma/engine.h"

static int lo_mr_reg(void *ctx, void *addr, size_t len, unsigned acc, struct rpcrdma_mr **out)
{
	struct rpcrdma_ep *ep = ctx;

	return rpcrdma_ep_mr_reg(ep, addr, len, acc, out);
}

static int lo_mr_dereg(void *ctx, struct rpcrdma_mr *mr)
{
	(void)ctx;
	return rpcrdma_mr_dereg(mr);
}

static int lo_post_recv(void *ctx, const struct rpcrdma_sge *sge, void *op)
{
	return rpcrdma_post_recv(ctx, sge, op);
}

static int lo_post_send(void *ctx, const struct rpcrdma_sge *sge, void *op)
{
	return rpcrdma_post_send(ctx, sge, op);
}

static int lo_post_send_inv(void *ctx, const struct rpcrdma_sge *sge, uint32_t handle, void *op)
{
	return rpcrdma_post_send_inv(ctx, sge, handle, op);
}

static int lo_post_read(void *ctx, const struct rpcrdma_sge *l, uint32_t nl,
			const struct rpcrdma_segment *r, uint32_t nr, void *op)
{
	return rpcrdma_post_read(ctx, l, nl, r, nr, op);
}

static int lo_post_write(void *ctx, const struct rpcrdma_sge *l, uint32_t nl,
			 const struct rpcrdma_segment *r, uint32_t nr, void *op)
{
	return rpcrdma_post_write(ctx, l, nl, r, nr, op);
}

void rpcrdma_eng_lower_ep(struct rpcrdma_eng_lower *lo, struct rpcrdma_prov *p,
			  struct rpcrdma_ep *ep)
{
	(void)p;
	lo->ctx = ep;
	lo->mr_reg = lo_mr_reg;
	lo->mr_dereg = lo_mr_dereg;
	lo->post_recv = lo_post_recv;
	lo->post_send = lo_post_send;
	lo->post_read = lo_post_read;
	lo->post_write = lo_post_write;
	/* offered only where the provider can: the engine then never asks the others */
	lo->post_send_inv = ep && ep->prov->caps.remote_inv ? lo_post_send_inv : NULL;
}

#define ONE_STEP_MS 5000

/* Whether the client's private data says it takes Send With Invalidate (RFC 8797 §3.2);
 * read before the accept, which may free the request and its private data. */
static bool takes_remote_inv(const void *peer, size_t plen)
{
	struct rpcrdma_pdata p;

	return peer && plen && rpcrdma_pdata_decode(peer, plen, &p) == 0 &&
	       (p.flags & RPCRDMA_PDATA_F_REMOTE_INV);
}

/* Whether this connection's replies may go with it: the client's word and the provider's
 * ability, for an operator to see (level info). */
static void log_remote_inv(bool asked, const struct rpcrdma_eng_lower *lo)
{
	rpcrdma_log(RPCRDMA_LOG_INFO, "accepted: the client %s Send With Invalidate, the "
		    "provider %s", asked ? "takes" : "does not take",
		    lo->post_send_inv ? "can send it" : "cannot");
}

int rpcrdma_eng_accept(struct rpcrdma_eng *e, struct rpcrdma_connreq *req, int timeout_ms,
		       uint64_t now_ms, struct rpcrdma_ep **out)
{
	uint8_t pd[RPCRDMA_PDATA_MAX];
	struct rpcrdma_eng_lower lo;
	struct rpcrdma_ep *ep = NULL;
	const void *peer;
	size_t plen;
	int n, rc, late;
	int pending;
	bool asked;

	if (!e || !req || !out) {
		rpcrdma_reject(req, NULL, 0);
		return -RPCRDMA_ERR_INVAL;
	}
	*out = NULL;
	peer = rpcrdma_connreq_pdata(req, &plen);
	rpcrdma_eng_set_peer_pdata(e, peer, plen);
	asked = takes_remote_inv(peer, plen);
	n = rpcrdma_eng_pdata(e, pd, sizeof(pd));
	if (n < 0) {
		rpcrdma_reject(req, NULL, 0);
		return n;
	}
	rc = rpcrdma_accept_prepare(req, pd, (size_t)n, &ep);
	late = rc == -RPCRDMA_ERR_NOTSUP;   /* connected first, then the receives posted */
	/* one step (libfabric's): its handshake ends without waiting for the client, so a
	 * wait of timeout_ms 0 is given the usual bound */
	if (late)
		rc = rpcrdma_accept(req, pd, (size_t)n, timeout_ms ? timeout_ms : ONE_STEP_MS, &ep);
	if (!rc) {
		rpcrdma_eng_lower_ep(&lo, ep->prov, ep);
		log_remote_inv(asked, &lo);
		rc = rpcrdma_eng_start(e, &lo, now_ms);
	}
	pending = !rc && !late;
	if (pending)
		rc = rpcrdma_accept_finish(ep, timeout_ms);
	/* only the finish's AGAIN means a handshake under way (the endpoint stands) */
	if (pending && rc == -RPCRDMA_ERR_AGAIN && !timeout_ms) {
		*out = ep;   /* started; the handshake ends with rpcrdma_accept_finish() */
		return rc;
	}
	if (rc) {
		rpcrdma_ep_close(ep);
		return rc;
	}
	*out = ep;
	return 0;
}
