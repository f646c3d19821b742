/* SPDX-License-Identifier: BSD-2-Clause */
/* Idle connections: opens N RPC-over-RDMA clients to a server, checks each with a NULL
 * call, and holds them while the caller measures the server (its RSS).
 *   bench_conns HOST PORT N [PROVIDER] [HOLD_SECONDS]
 * Prints "open N" once all are connected, then "closed" after holding them. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rpcrdma/rpc.h"

#define PERF_PROG 0x20049010
#define PERF_V1 1

int main(int argc, char **argv)
{
	struct rpcrdma_clnt_opts o = { 0 };
	struct timeval tv = { 10, 0 };
	struct rlimit rl;
	CLIENT **cl;
	int n, i, ok = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: bench_conns HOST PORT N [PROVIDER] [HOLD_SECONDS]\n");
		return 2;
	}
	n = atoi(argv[3]);
	o.port = (uint16_t)atoi(argv[2]);
	o.provider = argc > 4 ? argv[4] : "tcp";
	o.max_credits = 4;
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	cl = calloc((size_t)(n > 0 ? n : 1), sizeof(*cl));
	if (!cl)
		return 1;
	for (i = 0; i < n; i++) {
		cl[i] = clnt_rdma_create(argv[1], PERF_PROG, PERF_V1, &o);
		if (!cl[i]) {
			clnt_pcreateerror("bench_conns");
			break;
		}
		ok += clnt_call(cl[i], 0, (xdrproc_t)(void (*)(void))xdr_void, NULL,
				(xdrproc_t)(void (*)(void))xdr_void, NULL, tv) == RPC_SUCCESS;
	}
	printf("open %d (%d answered a NULL call)\n", i, ok);
	fflush(stdout);
	sleep(argc > 5 ? (unsigned)atoi(argv[5]) : 3);
	for (i = 0; i < n; i++)
		if (cl[i])
			clnt_destroy(cl[i]);
	free(cl);
	printf("closed\n");
	return ok == n ? 0 : 1;
}
