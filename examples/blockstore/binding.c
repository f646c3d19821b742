/* SPDX-License-Identifier: BSD-2-Clause */
/* The block store's upper-layer binding (RFC 5666 §3.4: the binding, not the protocol,
 * says which items may be placed directly): WRITE's data and READ's result are
 * DDP-eligible, and a READ's result needs a write chunk of its count. Linked into the
 * RDMA programs, it registers itself: their sources do not mention it. */
#include <rpcrdma/rpc.h>

#include "blockstore.h"

static bool_t xdr_bs_write_args_ddp(XDR *x, bs_write_args *a)
{
	return xdr_u_quad_t(x, &a->offset) &&
	       xdr_rdma_ddp_bytes(x, &a->data.bs_data_val, &a->data.bs_data_len, BS_MAX);
}

static bool_t xdr_bs_data_ddp(XDR *x, bs_data *d)
{
	return xdr_rdma_ddp_bytes(x, &d->bs_data_val, &d->bs_data_len, BS_MAX);
}

static uint32_t read_size(const void *args)
{
	return ((const bs_read_args *)args)->count;
}

static const struct rpcrdma_ulb_proc procs[] = {
	{ BS_WRITE, (xdrproc_t)xdr_bs_write_args_ddp, NULL, 0, 0, 0, NULL, NULL, NULL },
	{ BS_READ, NULL, (xdrproc_t)xdr_bs_data_ddp, 0, 1, 0, read_size, NULL, NULL },
};

static const struct rpcrdma_ulb binding = { BLOCKSTORE, BLOCKSTORE_V1, procs, 2 };

__attribute__((constructor)) static void register_binding(void)
{
	rpcrdma_ulb_register(&binding);
}
