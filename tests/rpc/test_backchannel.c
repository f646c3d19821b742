/* SPDX-License-Identifier: BSD-2-Clause */
/* The RPC layer's backchannel (RFC 8167), over libfabric tcp and shm, server and clients
 * in one process: rpcgen stubs on both sides; the clnt_stat of every outcome (success,
 * PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL, timeout, arguments too long for inline, the
 * connection gone, a call from the progress thread); a callback that calls forward;
 * backward calls from several threads at once beyond the client's credits. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "rpcrdma/rpc.h"

#include "bctest.h"

void bt_prog_1(struct svc_req *rqstp, SVCXPRT *transp);
void bt_cb_1(struct svc_req *rqstp, SVCXPRT *transp);

/* the first: $RPCRDMA_PROVIDER (verbs in the VM suite, on a real device), else tcp */
static const char *provs[] = { "tcp", "shm" };

/* The longest argument a backward call carries: 4096 inline, less the transport header
 * (28) and the call's header with the opaque's length (44). */
#define INLINE_MAX (4096u - 28u - 44u)

static uint8_t pat(uint32_t i)
{
	return (uint8_t)(i * 7u + 3u);
}

/* ---- the server's side ---- */

static void fill(bt_data *d, uint32_t len)
{
	uint32_t i;

	d->bt_data_len = len;
	d->bt_data_val = malloc(len + 1);
	for (i = 0; i < len; i++)
		d->bt_data_val[i] = (char)pat(i);
}

static int intact(const bt_data *d, uint32_t len)
{
	uint32_t i;

	if (d->bt_data_len != len)
		return 0;
	for (i = 0; i < len; i++)
		if ((uint8_t)d->bt_data_val[i] != pat(i))
			return 0;
	return 1;
}

/* One backward call as a carries it, on cb. */
static void try_call(CLIENT *cb, const bt_try_args *a, bt_try_res *r)
{
	struct timeval tv = { (time_t)(a->timeout_ms / 1000), (long)(a->timeout_ms % 1000) * 1000 };
	bt_data d, back = { 0, NULL };
	struct rpc_err e;

	fill(&d, a->len);
	r->stat = (int)clnt_call(cb, a->proc, (xdrproc_t)xdr_bt_data, (caddr_t)&d,
				 (xdrproc_t)xdr_bt_data, (caddr_t)&back, tv);
	clnt_geterr(cb, &e);
	r->eno = e.re_errno;
	r->len_back = back.bt_data_len;
	r->intact = intact(&back, a->len);
	clnt_freeres(cb, (xdrproc_t)xdr_bt_data, (caddr_t)&back);
	free(d.bt_data_val);
}

bool_t bt_null_1_svc(void *a, void *r, struct svc_req *rq)
{
	(void)a;
	(void)r;
	(void)rq;
	return TRUE;
}

bool_t bt_try_1_svc(bt_try_args *a, bt_try_res *r, struct svc_req *rq)
{
	CLIENT *cb = svc_rdma_bc_create(rq->rq_xprt, a->prog, a->vers);

	memset(r, 0, sizeof(*r));
	r->stat = -1;
	if (!cb)
		return TRUE;
	try_call(cb, a, r);
	auth_destroy(cb->cl_auth);
	clnt_destroy(cb);
	return TRUE;
}

int bt_prog_1_freeresult(SVCXPRT *x, xdrproc_t xres, caddr_t res)
{
	(void)x;
	xdr_free(xres, res);
	return 1;
}

/* ---- the client's side: BT_CB ---- */

static CLIENT *g_cl;              /* the client a callback calls forward on */
static int g_forward_ok, g_forward_bad;

bool_t bt_cb_echo_1_svc(bt_data *a, bt_data *r, struct svc_req *rq)
{
	(void)rq;
	if (a->bt_data_len >= 3 && !memcmp(a->bt_data_val, "fwd", 3)) {
		if (bt_null_1(NULL, NULL, g_cl) == RPC_SUCCESS)
			__atomic_add_fetch(&g_forward_ok, 1, __ATOMIC_RELAXED);
		else
			__atomic_add_fetch(&g_forward_bad, 1, __ATOMIC_RELAXED);
	}
	r->bt_data_len = a->bt_data_len;
	r->bt_data_val = malloc(a->bt_data_len + 1);
	if (a->bt_data_len)
		memcpy(r->bt_data_val, a->bt_data_val, a->bt_data_len);
	return TRUE;
}

bool_t bt_cb_sleep_1_svc(u_int *ms, void *r, struct svc_req *rq)
{
	struct timespec ts = { (time_t)(*ms / 1000), (long)(*ms % 1000) * 1000000 };

	(void)r;
	(void)rq;
	nanosleep(&ts, NULL);
	return TRUE;
}

int bt_cb_1_freeresult(SVCXPRT *x, xdrproc_t xres, caddr_t res)
{
	(void)x;
	xdr_free(xres, res);
	return 1;
}

/* ---- rig: a listener per provider, served by workers; clients of our own ---- */

static SVCXPRT *listeners[2];
static pthread_t workers;

static void *run_workers(void *arg)
{
	(void)arg;
	rpcrdma_svc_run(4);
	return NULL;
}

static SVCXPRT *listen_on(const char *prov, int inline_dispatch)
{
	struct rpcrdma_svc_opts o = { .provider = prov, .host = test_host(),
				      .port = RPCRDMA_PORT_ANY,
				      .dispatch_inline = inline_dispatch };
	SVCXPRT *x = svc_rdma_create(&o);

	CHECK(x != NULL);
	if (x)
		CHECK(svc_register(x, BT_PROG, BT_V1, bt_prog_1, 0));
	return x;
}

static void rig_up(void)
{
	listeners[0] = listen_on(provs[0], 0);
	listeners[1] = listen_on(provs[1], 0);
	pthread_create(&workers, NULL, run_workers, NULL);
}

static void rig_down(void)
{
	rpcrdma_svc_exit();
	pthread_join(workers, NULL);
}

static CLIENT *client(const char *prov, SVCXPRT *l, int serve_cb)
{
	struct rpcrdma_clnt_opts o = { .provider = prov, .port = svc_rdma_port(l) };
	CLIENT *cl = clnt_rdma_create(test_host(), BT_PROG, BT_V1, &o);

	CHECK(cl != NULL);
	if (cl && serve_cb)
		CHECK_EQ_I(clnt_rdma_set_callback(cl, BT_CB, BT_CB_V1, bt_cb_1), 0);
	return cl;
}

static void drop(CLIENT *cl)
{
	if (!cl)
		return;
	auth_destroy(cl->cl_auth);
	clnt_destroy(cl);
}

/* Ask the server to call us back as a says; returns the backward call's outcome. */
static bt_try_res try_back(CLIENT *cl, uint32_t prog, uint32_t vers, uint32_t proc,
			   uint32_t len, uint32_t timeout_ms)
{
	bt_try_args a = { prog, vers, proc, len, timeout_ms };
	bt_try_res r;

	memset(&r, 0, sizeof(r));
	r.stat = -2;
	CHECK_EQ_I(bt_try_1(&a, &r, cl), RPC_SUCCESS);
	return r;
}

/* ---- cases ---- */

/* Echoes of 0 bytes up to what fits inline, verified; one byte more than fits is
 * RPC_CANTENCODEARGS (backward calls are inline only, RFC 8167 §4.2). */
static void test_echo_and_sizes(void)
{
	static const uint32_t lens[] = { 0, 1, 100, 3000, INLINE_MAX };
	int p, i;

	rig_up();
	for (p = 0; p < 2; p++) {
		CLIENT *cl = client(provs[p], listeners[p], 1);
		bt_try_res r;

		for (i = 0; cl && i < (int)(sizeof(lens) / sizeof(lens[0])); i++) {
			r = try_back(cl, BT_CB, BT_CB_V1, BT_CB_ECHO, lens[i], 5000);
			CHECK_EQ_I(r.stat, RPC_SUCCESS);
			CHECK(r.intact);
		}
		r = try_back(cl, BT_CB, BT_CB_V1, BT_CB_ECHO, INLINE_MAX + 1, 5000);
		CHECK_EQ_I(r.stat, RPC_CANTENCODEARGS);
		CHECK_EQ_I(r.eno, EMSGSIZE);
		/* the connection goes on both ways */
		r = try_back(cl, BT_CB, BT_CB_V1, BT_CB_ECHO, 64, 5000);
		CHECK(r.stat == RPC_SUCCESS && r.intact);
		drop(cl);
	}
	rig_down();
}

/* What a server that does not serve the call answers, as over TCP. */
static void test_program_errors(void)
{
	int p;

	rig_up();
	for (p = 0; p < 2; p++) {
		CLIENT *cl = client(provs[p], listeners[p], 1), *plain = client(provs[p], listeners[p], 0);

		CHECK_EQ_I(try_back(cl, 0x20049099, 1, 1, 8, 5000).stat, RPC_PROGUNAVAIL);
		CHECK_EQ_I(try_back(cl, BT_CB, 2, 1, 8, 5000).stat, RPC_PROGVERSMISMATCH);
		CHECK_EQ_I(try_back(cl, BT_CB, BT_CB_V1, 9, 8, 5000).stat, RPC_PROCUNAVAIL);
		/* a client that serves nothing */
		CHECK_EQ_I(try_back(plain, BT_CB, BT_CB_V1, BT_CB_ECHO, 8, 5000).stat,
			   RPC_PROGUNAVAIL);
		drop(cl);
		drop(plain);
	}
	rig_down();
}

/* A callback slower than the call's timeout: RPC_TIMEDOUT; the next call works once the
 * slow one is done (its late reply is dropped). */
static void test_timeout(void)
{
	int p;

	rig_up();
	for (p = 0; p < 2; p++) {
		CLIENT *cl = client(provs[p], listeners[p], 1);
		bt_try_res r = try_back(cl, BT_CB, BT_CB_V1, BT_CB_SLEEP, 1500, 300);

		CHECK_EQ_I(r.stat, RPC_TIMEDOUT);
		r = try_back(cl, BT_CB, BT_CB_V1, BT_CB_ECHO, 200, 10000);
		CHECK(r.stat == RPC_SUCCESS && r.intact);
		drop(cl);
	}
	rig_down();
}

/* A backward call from a dispatch function on the progress thread cannot be completed:
 * it fails at once. */
static void test_progress_thread(void)
{
	SVCXPRT *l = listen_on(provs[0], 1);
	CLIENT *cl = l ? client(provs[0], l, 1) : NULL;
	bt_try_res r;

	if (cl) {
		r = try_back(cl, BT_CB, BT_CB_V1, BT_CB_ECHO, 8, 5000);
		CHECK_EQ_I(r.stat, RPC_CANTSEND);
		CHECK_EQ_I(r.eno, EDEADLK);
	}
	drop(cl);
	if (l)
		svc_destroy(l);
}

struct conn_pick {
	CLIENT *bc[4];
	int n;
};

static void pick(void *ctx, SVCXPRT *conn)
{
	struct conn_pick *k = ctx;

	if (k->n < 4)
		k->bc[k->n++] = svc_rdma_bc_create(conn, BT_CB, BT_CB_V1);
}

/* From a server thread of its own (the connections from rpcrdma_svc_conns): a callback
 * that makes a forward call on the client it serves; then the client gone, the
 * backchannel's CLIENT says so (RPC_CANTSEND) and is still destroyed cleanly. */
static void test_forward_from_callback_and_lost(void)
{
	int p;

	rig_up();
	for (p = 0; p < 2; p++) {
		struct conn_pick k = { { NULL }, 0 };
		struct timeval tv = { 5, 0 };
		bt_data d = { 3, (char *)"fwd" }, back = { 0, NULL };
		int i;

		g_cl = client(provs[p], listeners[p], 1);
		g_forward_ok = g_forward_bad = 0;
		CHECK_EQ_I(bt_null_1(NULL, NULL, g_cl), RPC_SUCCESS);
		CHECK_EQ_I(rpcrdma_svc_conns(listeners[p], pick, &k), 1);
		CHECK(k.n == 1 && k.bc[0]);
		if (!k.bc[0])
			continue;
		for (i = 0; i < 5; i++) {
			CHECK_EQ_I(clnt_call(k.bc[0], BT_CB_ECHO, (xdrproc_t)xdr_bt_data, (caddr_t)&d,
					     (xdrproc_t)xdr_bt_data, (caddr_t)&back, tv), RPC_SUCCESS);
			CHECK(back.bt_data_len == 3 && !memcmp(back.bt_data_val, "fwd", 3));
			clnt_freeres(k.bc[0], (xdrproc_t)xdr_bt_data, (caddr_t)&back);
		}
		CHECK_EQ_I(g_forward_ok, 5);
		CHECK_EQ_I(g_forward_bad, 0);
		drop(g_cl);
		g_cl = NULL;
		/* the client is gone: its connection ends; the backchannel cannot reconnect */
		for (i = 0; i < 50; i++) {
			struct rpc_err e;

			if (clnt_call(k.bc[0], BT_CB_ECHO, (xdrproc_t)xdr_bt_data, (caddr_t)&d,
				      (xdrproc_t)xdr_bt_data, (caddr_t)&back, tv) == RPC_CANTSEND) {
				clnt_geterr(k.bc[0], &e);
				CHECK_EQ_I(e.re_errno, ECONNRESET);
				break;
			}
			nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
		}
		CHECK(i < 50);
		drop(k.bc[0]);
	}
	rig_down();
}

struct burst {
	CLIENT *bc;
	int ok;
};

static void *burst(void *arg)
{
	struct burst *b = arg;
	bt_try_args a = { BT_CB, BT_CB_V1, BT_CB_ECHO, 0, 10000 };
	bt_try_res r;
	int i;

	for (i = 0; i < 50; i++) {
		a.len = (uint32_t)(i * 61 % 3000);
		try_call(b->bc, &a, &r);
		b->ok += r.stat == RPC_SUCCESS && r.intact;
	}
	return NULL;
}

/* Six server threads call back one client at once, beyond its 4 backward credits: every
 * call waits for a credit in turn and comes back whole. */
static void test_many_threads(void)
{
	int p, i;

	rig_up();
	for (p = 0; p < 2; p++) {
		CLIENT *cl = client(provs[p], listeners[p], 1);
		struct conn_pick k = { { NULL }, 0 };
		struct burst b[6];
		pthread_t th[6];

		/* answered: the server has taken the connection (the client is connected a
		 * moment before the server hears of it: the RDMA CM's RTU travels one way) */
		CHECK_EQ_I(bt_null_1(NULL, NULL, cl), RPC_SUCCESS);
		CHECK_EQ_I(rpcrdma_svc_conns(listeners[p], pick, &k), 1);
		if (!k.bc[0])
			continue;
		for (i = 0; i < 6; i++) {
			b[i].bc = k.bc[0];
			b[i].ok = 0;
			pthread_create(&th[i], NULL, burst, &b[i]);
		}
		for (i = 0; i < 6; i++) {
			pthread_join(th[i], NULL);
			CHECK_EQ_I(b[i].ok, 50);
		}
		drop(k.bc[0]);
		drop(cl);
	}
	rig_down();
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	if (getenv("RPCRDMA_PROVIDER") && *getenv("RPCRDMA_PROVIDER")) {
		provs[0] = getenv("RPCRDMA_PROVIDER");
		if (!h_list && test_prov_absent(provs[0]))
			return 77;
	}
	RUN(test_echo_and_sizes);
	RUN(test_program_errors);
	RUN(test_timeout);
	RUN(test_progress_thread);
	RUN(test_forward_from_callback_and_lost);
	RUN(test_many_threads);
	HARNESS_END();
}
