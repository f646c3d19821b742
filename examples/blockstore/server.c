/* SPDX-License-Identifier: BSD-2-Clause */
/* The block store server: the rpcgen dispatch (blockstore_1) and these procedures.
 * Built twice: bs_server_tcp (svctcp_create) and bs_server_rdma (svc_rdma_create);
 * nothing else differs. Usage: bs_server [PROVIDER]; prints "listening PORT". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockstore.h"
#ifdef USE_RDMA
#include <rpcrdma/rpc.h>
#endif

void blockstore_1(struct svc_req *rqstp, SVCXPRT *transp);

static char *store;
static u_quad_t store_len;

int *bs_write_1_svc(bs_write_args *a, struct svc_req *rq)
{
	static int res;
	u_quad_t end = a->offset + a->data.bs_data_len;

	(void)rq;
	res = -1;
	if (end > 1ull << 30)
		return &res;
	if (end > store_len) {
		char *n = realloc(store, end);

		if (!n)
			return &res;
		memset(n + store_len, 0, end - store_len);
		store = n;
		store_len = end;
	}
	if (a->data.bs_data_len)
		memcpy(store + a->offset, a->data.bs_data_val, a->data.bs_data_len);
	res = 0;
	return &res;
}

bs_data *bs_read_1_svc(bs_read_args *a, struct svc_req *rq)
{
	static bs_data res;

	(void)rq;
	res.bs_data_len = 0;
	res.bs_data_val = NULL;
	if (a->offset < store_len) {
		u_quad_t n = store_len - a->offset;

		res.bs_data_len = n < a->count ? (u_int)n : a->count;
		res.bs_data_val = store + a->offset;
	}
	return &res;
}

u_quad_t *bs_size_1_svc(void *argp, struct svc_req *rq)
{
	(void)argp;
	(void)rq;
	return &store_len;
}

int main(int argc, char **argv)
{
	SVCXPRT *transp;

#ifdef USE_RDMA
	struct rpcrdma_svc_opts o = { .port = RPCRDMA_PORT_ANY,
				      .provider = argc > 1 ? argv[1] : NULL };

	transp = svc_rdma_create(&o);
#else
	(void)argc;
	(void)argv;
	transp = svctcp_create(RPC_ANYSOCK, 0, 0);
#endif
	if (!transp || !svc_register(transp, BLOCKSTORE, BLOCKSTORE_V1, blockstore_1, 0)) {
		fprintf(stderr, "cannot serve\n");
		return 1;
	}
	printf("listening %u\n", transp->xp_port);
	fflush(stdout);
	svc_run();
	return 1;
}
