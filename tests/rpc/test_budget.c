/* SPDX-License-Identifier: BSD-2-Clause */
/* The server's receive budget (svc_rdma_create's recv_budget, RFC 5666 §3.3): a client
 * that would need a receive the budget no longer has is refused at connect (the create
 * fails with ECONNREFUSED), not accepted and then dropped; the connections already there
 * go on, and a client that leaves gives its share back to the next. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "harness.h"
#include "rpcrdma/rpc.h"

#define PROG 0x20049020
#define VERS 1

static void null_prog(struct svc_req *rq, SVCXPRT *x)
{
	if (rq->rq_proc == NULLPROC)
		svc_sendreply(x, (xdrproc_t)(void (*)(void))xdr_void, NULL);
	else
		svcerr_noproc(x);
}

static void *workers(void *arg)
{
	(void)arg;
	rpcrdma_svc_run(2);
	return NULL;
}

static CLIENT *client(uint16_t port)
{
	struct rpcrdma_clnt_opts o = { .provider = "tcp", .port = port, .max_credits = 4,
				       .connect_timeout_ms = 5000, .no_reconnect = 1 };

	return clnt_rdma_create("127.0.0.1", PROG, VERS, &o);
}

static bool null_call(CLIENT *cl)
{
	struct timeval tv = { 10, 0 };

	return clnt_call(cl, NULLPROC, (xdrproc_t)(void (*)(void))xdr_void, NULL,
			 (xdrproc_t)(void (*)(void))xdr_void, NULL, tv) == RPC_SUCCESS;
}

static void drop(CLIENT *cl)
{
	auth_destroy(cl->cl_auth);
	clnt_destroy(cl);
}

/* A budget of 4 receives: two clients hold it all after a call each (a client with one
 * call in flight asks 2 credits, and the server posts a receive for each before granting
 * them); the third is refused; once one leaves, a fourth gets in. */
static void budget_refuses_then_frees(void)
{
	struct rpcrdma_svc_opts so = { .provider = "tcp", .port = RPCRDMA_PORT_ANY,
				       .max_credits = 4, .recv_budget = 4 };
	SVCXPRT *x = svc_rdma_create(&so);
	CLIENT *a, *b, *c, *d;
	pthread_t t;
	uint16_t port;

	CHECK(x != NULL);
	if (!x)
		return;
	port = svc_rdma_port(x);
	CHECK(svc_register(x, PROG, VERS, null_prog, 0));
	CHECK_EQ_I(pthread_create(&t, NULL, workers, NULL), 0);
	a = client(port);
	b = client(port);
	CHECK(a && b);
	CHECK(a && null_call(a));
	CHECK(b && null_call(b));
	c = client(port);
	CHECK(c == NULL);
	if (c)
		drop(c);
	else
		CHECK(rpc_createerr.cf_stat == RPC_SYSTEMERROR &&
		      rpc_createerr.cf_error.re_errno == ECONNREFUSED);
	CHECK(a && null_call(a));   /* the others go on */
	if (a)
		drop(a);
	d = NULL;
	for (int i = 0; i < 50 && !d; i++) {   /* the server frees a's share as it reaps it */
		struct timespec ms = { 0, 20000000 };

		nanosleep(&ms, NULL);
		d = client(port);
	}
	CHECK(d != NULL);
	CHECK(d && null_call(d));
	if (d)
		drop(d);
	if (b)
		drop(b);
	rpcrdma_svc_exit();
	pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(budget_refuses_then_frees);
	HARNESS_END();
}
