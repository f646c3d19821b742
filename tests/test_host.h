/* SPDX-License-Identifier: BSD-2-Clause */
/* The address the tests listen on and connect to: $RPCRDMA_TEST_HOST, or 127.0.0.1.
 * A real RDMA device cannot use loopback (soft-RoCE: "address not usable"), so the VM
 * suite (scripts/vm-test.sh) names the address of its soft-RoCE device here. */
#ifndef RPCRDMA_TEST_HOST_H
#define RPCRDMA_TEST_HOST_H

#include <stdio.h>
#include <stdlib.h>

#include "rpcrdma/prov.h"

static inline const char *test_host(void)
{
	const char *h = getenv("RPCRDMA_TEST_HOST");

	return h && *h ? h : "127.0.0.1";
}

/* A provider with nothing to open here (verbs without an RDMA device): the test is
 * skipped (exit 77), as ctest's SKIP_RETURN_CODE and peer_lib.sh read it. */
static inline int test_prov_absent(const char *name)
{
	struct rpcrdma_prov *p = NULL;
	char err[256];
	int rc = rpcrdma_prov_open(name, &p, err, sizeof(err));

	rpcrdma_prov_close(p);
	if (rc == -RPCRDMA_ERR_NOPROV)
		printf("SKIPPED: provider %s not usable here: %s\n", name, err);
	return rc == -RPCRDMA_ERR_NOPROV;
}

#endif
