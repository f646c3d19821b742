/* SPDX-License-Identifier: BSD-2-Clause */
/* The block store client: the rpcgen stubs (bs_write_1, bs_read_1, bs_size_1), unchanged.
 * Built twice: bs_client_tcp and bs_client_rdma; only the create call differs.
 * Usage: bs_client HOST PORT [PROVIDER]. Writes blocks of 0 B to 8 MiB, reads them back,
 * prints what it read (sizes and a hash), so runs over different transports compare. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockstore.h"
#ifdef USE_RDMA
#include <rpcrdma/rpc.h>
#endif

static uint64_t fnv(const char *p, u_int n)
{
	uint64_t h = 1469598103934665603ull;
	u_int i;

	for (i = 0; i < n; i++)
		h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
	return h;
}

int main(int argc, char **argv)
{
	static const u_int sizes[] = { 0, 1, 1000, 4096, 65537, 1u << 20, 8u << 20 };
	u_quad_t off = 0;
	CLIENT *clnt;
	unsigned i, k;

	if (argc < 3)
		return 2;
#ifdef USE_RDMA
	struct rpcrdma_clnt_opts o = { .port = (uint16_t)atoi(argv[2]),
				       .provider = argc > 3 ? argv[3] : NULL };

	clnt = clnt_rdma_create(argv[1], BLOCKSTORE, BLOCKSTORE_V1, &o);
#else
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])) };
	int sock = RPC_ANYSOCK;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	clnt = clnttcp_create(&sin, BLOCKSTORE, BLOCKSTORE_V1, &sock, 0, 0);
#endif
	if (!clnt) {
		clnt_pcreateerror(argv[1]);
		return 1;
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		bs_write_args w;
		int *res;

		w.offset = off;
		w.data.bs_data_len = sizes[i];
		w.data.bs_data_val = malloc(sizes[i] + 1);
		for (k = 0; k < sizes[i]; k++)
			w.data.bs_data_val[k] = (char)(k * 31 + i);
		res = bs_write_1(&w, clnt);
		if (!res || *res) {
			clnt_perror(clnt, "write");
			return 1;
		}
		free(w.data.bs_data_val);
		off += sizes[i];
	}
	off = 0;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		bs_read_args r = { off, sizes[i] };
		bs_data *d = bs_read_1(&r, clnt);

		if (!d) {
			clnt_perror(clnt, "read");
			return 1;
		}
		printf("block %u: %u bytes, hash %016llx\n", i, d->bs_data_len,
		       (unsigned long long)fnv(d->bs_data_val, d->bs_data_len));
		xdr_free((xdrproc_t)xdr_bs_data, (char *)d);
		off += sizes[i];
	}
	{
		u_quad_t *size = bs_size_1(NULL, clnt);

		if (!size) {
			clnt_perror(clnt, "size");
			return 1;
		}
		printf("store: %llu bytes\n", (unsigned long long)*size);
	}
	clnt_destroy(clnt);
	return 0;
}
