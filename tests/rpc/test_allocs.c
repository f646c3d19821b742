/* SPDX-License-Identifier: BSD-2-Clause */
/* No allocation per call once a connection is warm (issue 13, docs/BENCHMARKS-HISTORY.md "eleventh
 * step"): a client's calls and a server's requests reuse what the previous ones left — the
 * client's call records and encode buffers, the engine's calls with their inline reply
 * buffers, the provider's operation records, the server's queue entries and reply contexts.
 * This program counts every malloc, calloc and realloc made in the process (client,
 * server, libtirpc and libfabric alike: it defines them, forwarding to glibc's) while
 * thousands of calls run, synchronous and 16 in flight, over tcp and shm, and checks the
 * results. Skipped under AddressSanitizer, which owns malloc and keeps no pool. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"
#include "rpcrdma/rpc.h"

#define PROG 0x20049030
#define VERS 1
#define PROC_INC 1
#define WARM 300
#define CALLS 3000
#define DEPTH 16

/* ---- counting every allocation of the process ---- */

#if defined(__SANITIZE_ADDRESS__)
#define COUNTED 0
#else
#define COUNTED 1
#endif

static int counting;
static unsigned long allocs;

#if COUNTED
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);

/* a breakpoint here shows where an allocation came from */
void test_allocs_counted(void);
__attribute__((noinline)) void test_allocs_counted(void)
{
	__atomic_fetch_add(&allocs, 1, __ATOMIC_RELAXED);
}

static void count(void)
{
	if (__atomic_load_n(&counting, __ATOMIC_RELAXED))
		test_allocs_counted();
}

void *malloc(size_t size)
{
	count();
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	count();
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	count();
	return __libc_realloc(p, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	count();
	p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t size)
{
	count();
	return __libc_memalign(align, size);
}
#endif

static void count_from_now(void)
{
	__atomic_store_n(&allocs, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&counting, 1, __ATOMIC_RELEASE);
}

static unsigned long counted(void)
{
	__atomic_store_n(&counting, 0, __ATOMIC_RELEASE);
	return __atomic_load_n(&allocs, __ATOMIC_RELAXED);
}

/* ---- a server: NULL, and INC (u_int + 1) ---- */

static void prog(struct svc_req *rq, SVCXPRT *x)
{
	u_int v = 0, r;

	switch (rq->rq_proc) {
	case NULLPROC:
		svc_sendreply(x, (xdrproc_t)(void (*)(void))xdr_void, NULL);
		return;
	case PROC_INC:
		if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (caddr_t)&v)) {
			svcerr_decode(x);
			return;
		}
		r = v + 1;
		svc_sendreply(x, (xdrproc_t)xdr_u_int, (caddr_t)&r);
		return;
	default:
		svcerr_noproc(x);
	}
}

static void *workers(void *arg)
{
	(void)arg;
	rpcrdma_svc_run(1);
	return NULL;
}

struct rig {
	SVCXPRT *x;
	CLIENT *cl;
	pthread_t t;
	bool workers;
};

/* inline: requests dispatched on the listener's progress thread; otherwise by a worker
 * (rpcrdma_svc_run), as svc_run() programs are */
static bool rig_up(struct rig *g, const char *provider, bool inline_dispatch)
{
	/* the duplicate request cache allocates an entry a call until it is full, then
	 * reuses what it evicts: 64 entries fill within the warm-up (150 INC calls), and the
	 * counted calls show a full cache allocating nothing */
	struct rpcrdma_svc_opts so = { .provider = provider, .port = RPCRDMA_PORT_ANY,
				       .dispatch_inline = inline_dispatch, .drc_entries = 64 };
	struct rpcrdma_clnt_opts co = { .provider = provider, .connect_timeout_ms = 5000,
					.no_reconnect = 1 };

	memset(g, 0, sizeof(*g));
	g->x = svc_rdma_create(&so);
	CHECK(g->x != NULL);
	if (!g->x)
		return false;
	CHECK(svc_register(g->x, PROG, VERS, prog, 0));
	if (!inline_dispatch) {
		CHECK_EQ_I(pthread_create(&g->t, NULL, workers, NULL), 0);
		g->workers = true;
	}
	co.port = svc_rdma_port(g->x);
	g->cl = clnt_rdma_create(test_host(), PROG, VERS, &co);
	CHECK(g->cl != NULL);
	return g->cl != NULL;
}

static void rig_down(struct rig *g)
{
	if (g->cl) {
		auth_destroy(g->cl->cl_auth);
		clnt_destroy(g->cl);
	}
	if (g->workers) {
		rpcrdma_svc_exit();
		pthread_join(g->t, NULL);
	}
	if (g->x)
		svc_destroy(g->x);
}

static bool inc_call(CLIENT *cl, u_int v)
{
	struct timeval tv = { 10, 0 };
	u_int r = 0;

	return clnt_call(cl, PROC_INC, (xdrproc_t)xdr_u_int, (caddr_t)&v, (xdrproc_t)xdr_u_int,
			 (caddr_t)&r, tv) == RPC_SUCCESS && r == v + 1;
}

static bool null_call(CLIENT *cl)
{
	struct timeval tv = { 10, 0 };

	return clnt_call(cl, NULLPROC, (xdrproc_t)(void (*)(void))xdr_void, NULL,
			 (xdrproc_t)(void (*)(void))xdr_void, NULL, tv) == RPC_SUCCESS;
}

/* n calls, one at a time, NULL and INC in turn; how many went right */
static unsigned sync_calls(CLIENT *cl, unsigned n)
{
	unsigned ok = 0, i;

	for (i = 0; i < n; i++)
		ok += (i & 1) ? inc_call(cl, i) : null_call(cl);
	return ok;
}

/* What is not per call may allocate: the listener's next endpoint, prepared when it goes
 * to sleep; kept requests given back while a stalled (busy) host kept the client away for
 * 100 ms, then made again — 0 to 25 per 3,000 calls here with a core busy. Without the
 * pools every call made several (9 per NULL call over shm before them), and one pool
 * undone makes one per call: 5% tells them apart. */
static void check_few(unsigned long n, unsigned calls)
{
	fprintf(stderr, "%lu allocations in %u calls\n", n, calls);
	CHECK(n <= calls / 20);
}

typedef unsigned (*calls_fn)(CLIENT *cl, unsigned n);

/* WARM calls, then CALLS counted: all answered right, and almost nothing allocated */
static void run_case(const char *provider, bool inline_dispatch, calls_fn calls)
{
	struct rig g;

	if (rig_up(&g, provider, inline_dispatch)) {
		CHECK_EQ_U(calls(g.cl, WARM), WARM);
		count_from_now();
		unsigned ok = calls(g.cl, CALLS);
		unsigned long n = counted();

		CHECK_EQ_U(ok, CALLS);
		check_few(n, CALLS);
	}
	rig_down(&g);
}

/* ---- DEPTH calls in flight ---- */

struct slot {
	u_int arg, res;
	int done;
	enum clnt_stat st;
};

static void slot_done(void *ctx, enum clnt_stat st)
{
	struct slot *s = ctx;

	s->st = st;
	s->done = 1;
}

/* n INC calls, DEPTH in flight: each slot starts its next call once its last is done */
static unsigned async_calls(CLIENT *cl, unsigned n)
{
	struct slot s[DEPTH];
	unsigned started = 0, ok = 0, i;

	memset(s, 0, sizeof(s));
	for (i = 0; i < DEPTH; i++)
		s[i].done = 1;
	for (;;) {
		int busy = 0;

		for (i = 0; i < DEPTH; i++) {
			if (!s[i].done) {
				busy = 1;
				continue;
			}
			if (s[i].arg)   /* a call of this slot finished */
				ok += s[i].st == RPC_SUCCESS && s[i].res == s[i].arg + 1;
			s[i].arg = 0;
			if (started == n)
				continue;
			s[i].arg = ++started;
			s[i].done = 0;
			busy = 1;
			if (rpcrdma_clnt_call_async(cl, PROC_INC, (xdrproc_t)xdr_u_int,
						    &s[i].arg, (xdrproc_t)xdr_u_int, &s[i].res,
						    slot_done, &s[i]) != 0)
				s[i].done = 1, s[i].st = RPC_CANTSEND;
		}
		if (!busy)
			return ok;
		rpcrdma_clnt_progress(cl, 10);
	}
}

static void test_sync_tcp_workers(void) { run_case("tcp", false, sync_calls); }
static void test_sync_shm_workers(void) { run_case("shm", false, sync_calls); }
static void test_sync_shm_inline(void) { run_case("shm", true, sync_calls); }
static void test_depth_tcp_inline(void) { run_case("tcp", true, async_calls); }
static void test_depth_shm_workers(void) { run_case("shm", false, async_calls); }
/* on a real RDMA device (the VM suite; skipped where there is none) */
static void test_sync_verbs_workers(void) { run_case("verbs", false, sync_calls); }
static void test_depth_verbs_inline(void) { run_case("verbs", true, async_calls); }

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	if (!COUNTED && !h_list) {
		fprintf(stderr, "skipped: AddressSanitizer owns malloc here\n");
		return 77;
	}
	if (h_only && strstr(h_only, "verbs") && test_prov_absent("verbs"))
		return 77;
	RUN(test_sync_tcp_workers);
	RUN(test_sync_shm_workers);
	RUN(test_sync_shm_inline);
	RUN(test_depth_tcp_inline);
	RUN(test_depth_shm_workers);
	RUN(test_sync_verbs_workers);
	RUN(test_depth_verbs_inline);
	HARNESS_END();
}
