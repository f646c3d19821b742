/* SPDX-License-Identifier: BSD-2-Clause */
/* Several requests of one connection dispatched at once (opts.conn_parallel): a slow call
 * does not hold back a quick one sent after it on the same CLIENT *, and slow calls
 * overlap; with conn_parallel 0 they stay one at a time, in arrival order.
 * Usage: test_conn_parallel tcp|shm|verbs [HOST] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "rpcrdma/rpc.h"
#include "test_host.h"

#define PROG 0x20000177u
#define VERS 1u
#define SLOW 1u      /* sleeps SLOW_MS, as a disk might */
#define QUICK 2u
#define SLOW_SILENT 3u   /* sleeps SLOW_MS and sends no reply: a batched call's procedure */
#define SLOW_MS 400

static bool_t x_void(XDR *x, void *p)
{
	(void)x;
	(void)p;
	return TRUE;
}

static int in_slow, most_in_slow;   /* SLOW calls being served at once, and the most */

static void dispatch(struct svc_req *rq, SVCXPRT *x)
{
	struct timespec slow = { 0, SLOW_MS * 1000000L };
	int n;

	if (rq->rq_proc == SLOW_SILENT) {
		nanosleep(&slow, NULL);
		return;
	}
	if (rq->rq_proc == SLOW) {
		n = __atomic_add_fetch(&in_slow, 1, __ATOMIC_SEQ_CST);
		if (n > __atomic_load_n(&most_in_slow, __ATOMIC_SEQ_CST))
			__atomic_store_n(&most_in_slow, n, __ATOMIC_SEQ_CST);
		nanosleep(&slow, NULL);
		__atomic_sub_fetch(&in_slow, 1, __ATOMIC_SEQ_CST);
	} else if (rq->rq_proc != QUICK) {
		svcerr_noproc(x);
		return;
	}
	svc_sendreply(x, (xdrproc_t)x_void, NULL);
}

static void *serve(void *arg)
{
	(void)arg;
	rpcrdma_svc_run(8);
	return NULL;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

struct done {
	double at;
	enum clnt_stat st;
	int order;
};

static int finished;
static const char *g_prov, *g_host;
static SVCXPRT *g_par, *g_ord;

static void on_done(void *ctx, enum clnt_stat st)
{
	struct done *d = ctx;

	d->at = now_ms();
	d->st = st;
	d->order = ++finished;
}

static CLIENT *client(const char *prov, const char *host, uint16_t port)
{
	struct rpcrdma_clnt_opts co;

	memset(&co, 0, sizeof(co));
	co.provider = prov;
	co.port = port;
	return clnt_rdma_create(host, PROG, VERS, &co);
}

/* The client starts with one credit (RFC 8166 §3.3.3), and the server grants what the
 * last calls asked (twice those in flight): rounds of QUICK calls in flight first, so
 * that the calls measured all go at once. */
static void warm_up(CLIENT *cl)
{
	struct done d[16];
	int round, i;

	for (round = 0; round < 4; round++) {
		for (i = 0; i < 16; i++)
			CHECK(rpcrdma_clnt_call_async(cl, QUICK, (xdrproc_t)x_void, NULL,
						      (xdrproc_t)x_void, NULL, on_done, &d[i]) == 0);
		while (rpcrdma_clnt_progress(cl, 100) > 0)
			;
	}
}

/* n SLOW calls then one QUICK, all in flight on one connection; the times they took */
static void run(CLIENT *cl, int n, struct done *slow, struct done *quick, double *total)
{
	double t0;
	int i;

	warm_up(cl);
	memset(slow, 0, sizeof(*slow) * (size_t)n);
	memset(quick, 0, sizeof(*quick));
	most_in_slow = 0;
	t0 = now_ms();
	finished = 0;
	for (i = 0; i < n; i++)
		CHECK(rpcrdma_clnt_call_async(cl, SLOW, (xdrproc_t)x_void, NULL, (xdrproc_t)x_void,
					      NULL, on_done, &slow[i]) == 0);
	CHECK(rpcrdma_clnt_call_async(cl, QUICK, (xdrproc_t)x_void, NULL, (xdrproc_t)x_void,
				      NULL, on_done, quick) == 0);
	while (rpcrdma_clnt_progress(cl, 100) > 0 && now_ms() - t0 < 30000)
		;
	for (i = 0; i < n; i++) {
		CHECK(slow[i].st == RPC_SUCCESS);
		slow[i].at -= t0;
	}
	CHECK(quick->st == RPC_SUCCESS);
	quick->at -= t0;
	*total = now_ms() - t0;
}

static SVCXPRT *server(const char *prov, const char *host, uint32_t parallel)
{
	struct rpcrdma_svc_opts so;
	SVCXPRT *x;

	memset(&so, 0, sizeof(so));
	so.provider = prov;
	so.host = host;
	so.port = RPCRDMA_PORT_ANY;
	so.workers_only = 1;
	so.conn_parallel = parallel;
	x = svc_rdma_create(&so);
	if (!x || !svc_register(x, PROG, VERS, dispatch, 0)) {
		fprintf(stderr, "cannot serve over %s: %s\n", prov, rpcrdma_create_errtext());
		exit(1);
	}
	return x;
}

/* conn_parallel 4: the QUICK call comes back long before the SLOW one sent first; four
 * SLOW calls overlap */
static void test_parallel(void)
{
	CLIENT *cl = client(g_prov, g_host, svc_rdma_port(g_par));
	struct done slow[4], quick;
	double total;

	CHECK(cl != NULL);
	if (!cl)
		return;
	run(cl, 1, slow, &quick, &total);
	printf("conn_parallel 4, SLOW then QUICK: QUICK back at %.0f ms, SLOW at %.0f ms\n",
	       quick.at, slow[0].at);
	CHECK(quick.order == 1 && quick.at < SLOW_MS / 2);
	run(cl, 4, slow, &quick, &total);
	printf("conn_parallel 4, 4 SLOW and a QUICK: %.0f ms in all, %d SLOW at once\n", total,
	       most_in_slow);
	/* four at once when the client has the credits for them all; it has at least two
	 * (the last warm-up reply granted what its call asked), and one at a time would take
	 * four SLOW_MS */
	CHECK(most_in_slow >= 2 && total < 3 * SLOW_MS);
	clnt_destroy(cl);
}

/* Batching with lanes: a batched call (zero timeout, no result procedure) that takes long
 * and never replies, then 64 asynchronous quick calls, five rounds. The quick calls are
 * answered while the batched one runs; the client reuses its credit at the first of those
 * replies, and the server must count it the same way. The server closed the connection
 * for a credit overrun 2-3 times a run before. */
static void test_batched_lanes(void)
{
	CLIENT *cl = client(g_prov, g_host, svc_rdma_port(g_par));
	struct timeval zero = { 0, 0 };
	struct rpcrdma_eng_stats st;
	struct done q[64];
	int round, i, ok = 0;
	double t0;

	CHECK(cl != NULL);
	if (!cl)
		return;
	warm_up(cl);
	for (round = 0; round < 5; round++) {
		memset(q, 0, sizeof(q));
		CHECK(clnt_call(cl, SLOW_SILENT, (xdrproc_t)x_void, NULL, NULL, NULL, zero) ==
		      RPC_SUCCESS);
		for (i = 0; i < 64; i++)
			CHECK(rpcrdma_clnt_call_async(cl, QUICK, (xdrproc_t)x_void, NULL,
						      (xdrproc_t)x_void, NULL, on_done, &q[i]) == 0);
		t0 = now_ms();
		while (rpcrdma_clnt_progress(cl, 100) > 0 && now_ms() - t0 < 30000)
			;
		for (i = 0; i < 64; i++)
			ok += q[i].st == RPC_SUCCESS;
	}
	CHECK_EQ_I(ok, 5 * 64);
	clnt_destroy(cl);
	CHECK_EQ_I(rpcrdma_svc_totals(g_par, &st), 0);
	printf("batched with conn_parallel 4: %d of %d quick calls answered, %" PRIu64
	       " credit overruns\n", ok, 5 * 64, st.errors[RPCRDMA_EC_CREDIT_OVERRUN]);
	CHECK_EQ_U(st.errors[RPCRDMA_EC_CREDIT_OVERRUN], 0);
}

/* conn_parallel 0: one at a time, in the order the calls came */
static void test_ordered(void)
{
	CLIENT *cl = client(g_prov, g_host, svc_rdma_port(g_ord));
	struct done slow[2], quick;
	double total;

	CHECK(cl != NULL);
	if (!cl)
		return;
	run(cl, 2, slow, &quick, &total);
	printf("conn_parallel 0, 2 SLOW then QUICK: QUICK back at %.0f ms, %.0f ms in all, %d SLOW "
	       "at once\n", quick.at, total, most_in_slow);
	CHECK(quick.order == 3 && quick.at >= 2 * SLOW_MS && most_in_slow == 1);
	clnt_destroy(cl);
}

int main(int argc, char **argv)
{
	pthread_t th;

	g_prov = argc > 1 ? argv[1] : "tcp";
	g_host = argc > 2 ? argv[2] : test_host();
	if (test_prov_absent(g_prov))
		return 77;
	g_par = server(g_prov, g_host, 4);
	g_ord = server(g_prov, g_host, 0);
	pthread_create(&th, NULL, serve, NULL);
	RUN(test_parallel);
	RUN(test_ordered);
	RUN(test_batched_lanes);
	rpcrdma_svc_exit();
	pthread_join(th, NULL);
	svc_destroy(g_par);
	svc_destroy(g_ord);
	HARNESS_END();
}
