/* SPDX-License-Identifier: BSD-2-Clause */
/* The engine's lower face over a provider endpoint (include/rpcrdma/engine.h): the
 * engine's requests go straight to the public provider calls. */
#include "prov_int.h"
#include "rpcrdma/engine.h"

static int lo_mr_reg(void *ctx, void *addr, size_t len, unsigned acc, struct rpcrdma_mr **out)
{
	struct rpcrdma_ep *ep = ctx;

	return rpcrdma_mr_reg(ep->prov, addr, len, acc, out);
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
}
