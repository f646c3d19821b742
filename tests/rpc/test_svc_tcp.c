/* SPDX-License-Identifier: BSD-2-Clause */
/* ONC RPC over TCP served by the library's runtime (svc_rdma_tcp_create()), seen from raw
 * sockets: hostile and slow clients delay no one, the record limit holds, the duplicate
 * request cache answers a call sent again on a new connection, a connection's calls run
 * at once on lanes. The server runs in this process with ONE worker thread where a
 * client must not be able to hold it: a transport that blocked the worker on a client
 * (libtirpc's svc_vc under svc_run()) fails those tests. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "rpcrdma/rpc.h"

#define PROG 0x20000277u
#define VERS 1u
#define P_BIG 1u      /* u_int n -> opaque<> of n bytes (a READ) */
#define P_COUNT 2u    /* u_int ms: sleeps ms, then counts one -> u_int the count (not
			 idempotent) */
#define P_MEET 3u     /* waits (2 s at most) for a second P_MEET to run -> 1 met, 0 not */

#define WAIT_S 5      /* a client's receive timeout: "promptly" is well within it */

static unsigned g_count;
static unsigned g_bigs;   /* P_BIG calls run */
static int g_meet;

#define XP(f) ((xdrproc_t)(void (*)(void))(f))

struct big {
	char *p;
	u_int n;
};

static bool_t xdr_big(XDR *x, struct big *b)
{
	return xdr_bytes(x, &b->p, &b->n, 16u << 20);
}

static void proc_big(SVCXPRT *x)
{
	struct big b = { NULL, 0 };
	u_int n = 0;

	if (!svc_getargs(x, XP(xdr_u_int), (char *)&n) || n > (16u << 20)) {
		svcerr_decode(x);
		return;
	}
	__atomic_add_fetch(&g_bigs, 1, __ATOMIC_SEQ_CST);
	b.p = malloc(n ? n : 1);
	b.n = n;
	if (b.p)
		memset(b.p, 0x5a, n);
	if (!b.p || !svc_sendreply(x, XP(xdr_big), (char *)&b))
		svcerr_systemerr(x);
	free(b.p);
}

static void proc_count(SVCXPRT *x)
{
	struct timespec ts;
	u_int ms = 0, v;

	if (!svc_getargs(x, XP(xdr_u_int), (char *)&ms) || ms > 5000) {
		svcerr_decode(x);
		return;
	}
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
	v = __atomic_add_fetch(&g_count, 1, __ATOMIC_SEQ_CST);
	svc_sendreply(x, XP(xdr_u_int), (char *)&v);
}

static void proc_meet(SVCXPRT *x)
{
	struct timespec ts = { 0, 10 * 1000000L };
	u_int met = 0;
	int i;

	__atomic_add_fetch(&g_meet, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 200 && !met; i++) {
		met = __atomic_load_n(&g_meet, __ATOMIC_SEQ_CST) >= 2;
		if (!met)
			nanosleep(&ts, NULL);
	}
	svc_sendreply(x, XP(xdr_u_int), (char *)&met);
}

static void dispatch(struct svc_req *rq, SVCXPRT *x)
{
	switch (rq->rq_proc) {
	case 0:
		svc_sendreply(x, XP(xdr_void), NULL);
		return;
	case P_BIG:
		proc_big(x);
		return;
	case P_COUNT:
		proc_count(x);
		return;
	case P_MEET:
		proc_meet(x);
		return;
	default:
		svcerr_noproc(x);
	}
}

/* ---- the server: a listener and rpcrdma_svc_run() on a thread ---- */

struct server {
	SVCXPRT *x;
	pthread_t th;
	int workers;
	uint16_t port;
};

static void *serve(void *arg)
{
	struct server *sv = arg;

	rpcrdma_svc_run(sv->workers);
	return NULL;
}

static int server_start(struct server *sv, struct rpcrdma_svc_opts *o, int workers)
{
	o->host = "127.0.0.1";
	o->port = 0;
	sv->x = svc_rdma_tcp_create(o);
	if (!sv->x) {
		fprintf(stderr, "svc_rdma_tcp_create: %s\n", rpcrdma_create_errtext());
		return -1;
	}
	sv->port = svc_rdma_port(sv->x);
	if (!sv->port || !svc_register(sv->x, PROG, VERS, dispatch, 0))
		return -1;
	sv->workers = workers;
	return pthread_create(&sv->th, NULL, serve, sv) ? -1 : 0;
}

static void server_stop(struct server *sv)
{
	rpcrdma_svc_exit();
	pthread_join(sv->th, NULL);
	svc_destroy(sv->x);
}

/* ---- a raw client ---- */

static int cl_connect(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { WAIT_S, 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A call record (AUTH_NONE) of proc with one u_int argument (none for NULL). */
static int cl_send(int fd, uint32_t xid, uint32_t proc, uint32_t arg)
{
	uint8_t b[48];
	uint32_t len = proc ? 44 : 40;

	put32(b, 0x80000000u | len);
	put32(b + 4, xid);
	put32(b + 8, 0);         /* CALL */
	put32(b + 12, 2);        /* RPC version */
	put32(b + 16, PROG);
	put32(b + 20, VERS);
	put32(b + 24, proc);
	memset(b + 28, 0, 16);   /* cred and verifier: AUTH_NONE, empty */
	put32(b + 44, arg);
	return send(fd, b, 4 + len, MSG_NOSIGNAL) == (ssize_t)(4 + len) ? 0 : -1;
}

static int read_all(int fd, void *buf, size_t n)
{
	uint8_t *p = buf;
	ssize_t k;

	while (n) {
		k = recv(fd, p, n, 0);
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* One reply record: its XID and, for a successful reply with a u_int first result, that
 * (*res); -1 when none came within WAIT_S or it is not a successful reply. */
static int cl_recv(int fd, uint32_t *xid, uint32_t *res)
{
	uint8_t h[4], *r;
	uint32_t len, vlen;
	int rc = -1;

	if (read_all(fd, h, 4))
		return -1;
	len = get32(h) & 0x7fffffffu;
	if (!(get32(h) & 0x80000000u) || len < 24 || len > (32u << 20))
		return -1;
	r = malloc(len);
	if (!r || read_all(fd, r, len))
		goto out;
	*xid = get32(r);
	vlen = get32(r + 16);
	if (get32(r + 4) != 1 || get32(r + 8) != 0 || vlen > 400 || 24 + vlen > len ||
	    get32(r + 20 + vlen) != 0)
		goto out;
	if (res)
		*res = 24 + vlen + 4 <= len ? get32(r + 24 + vlen) : 0;
	rc = 0;
out:
	free(r);
	return rc;
}

static int cl_call(int fd, uint32_t xid, uint32_t proc, uint32_t arg, uint32_t *res)
{
	uint32_t got;

	if (cl_send(fd, xid, proc, arg) || cl_recv(fd, &got, res))
		return -1;
	return got == xid ? 0 : -1;
}

static void msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Still connected: the server did not close it (replies may wait to be read). */
static int still_open(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);

	return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

/* The server closed fd within s seconds (what was queued before is read and dropped). */
static int closed_within(int fd, int s, size_t *bytes)
{
	static char sink[65536];
	struct timeval tv = { 1, 0 };
	double until = now_s() + s;
	ssize_t n;

	*bytes = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (now_s() < until) {
		n = recv(fd, sink, sizeof(sink), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return 1;
		if (n > 0)
			*bytes += (size_t)n;
	}
	return 0;
}

/* A NULL call on a fresh connection, answered within limit seconds. */
static int fresh_null(uint16_t port, double limit, double *took)
{
	double t0 = now_s();
	int fd = cl_connect(port), rc;

	rc = fd < 0 ? -1 : cl_call(fd, 0x1111, 0, 0, NULL);
	*took = now_s() - t0;
	if (fd >= 0)
		close(fd);
	return !rc && *took < limit ? 0 : -1;
}

/* (a) Two bytes of a record mark, then silence: another client's NULL call is answered
 * at once by the only worker while the silent one stays connected; a listener with a
 * short tcp_idle_ms closes the silent one. */
static void test_partial_mark(void)
{
	struct rpcrdma_svc_opts o = { .tcp_idle_ms = 1500 };
	struct server sv;
	uint8_t two[2] = { 0x80, 0x00 };
	size_t bytes;
	double took;
	int fd;

	CHECK_OK(server_start(&sv, &o, 1));
	fd = cl_connect(sv.port);
	CHECK(fd >= 0);
	CHECK(send(fd, two, 2, MSG_NOSIGNAL) == 2);
	msleep(100);
	CHECK_OK(fresh_null(sv.port, 3.0, &took));
	printf("NULL answered in %.3f s beside a client silent after 2 bytes\n", took);
	CHECK(still_open(fd));
	/* idle: reaped after tcp_idle_ms (swept every 200 ms) */
	CHECK(closed_within(fd, 10, &bytes));
	CHECK_EQ_U(bytes, 0);
	close(fd);
	server_stop(&sv);
}

/* (b) A client pipelines 64 calls with 1 MiB replies and reads none: it is neither read
 * nor dispatched beyond tcp_reply_queue, another client is served at once by the only
 * worker, and the reader that never reads is dropped after tcp_stall_ms. */
static void test_never_reads(void)
{
	struct rpcrdma_svc_opts o = { .tcp_stall_ms = 2000 };
	struct server sv;
	size_t bytes;
	double took;
	int fd, bufsz = 64 * 1024, i, ok = 1;

	CHECK_OK(server_start(&sv, &o, 1));
	fd = cl_connect(sv.port);
	CHECK(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	for (i = 0; i < 64; i++)
		ok &= cl_send(fd, 0x2000u + (uint32_t)i, P_BIG, 1u << 20) == 0;
	CHECK(ok);
	msleep(300);   /* the worker has made all the replies it will */
	CHECK_OK(fresh_null(sv.port, 3.0, &took));
	printf("NULL answered in %.3f s beside a client with 64 MiB of replies unread\n", took);
	CHECK(still_open(fd));
	/* dropped after tcp_stall_ms without progress (reading now would be progress); far
	 * fewer than its 64 replies were made or sent */
	sleep(5);
	CHECK(closed_within(fd, 20, &bytes));
	printf("the reader that never read got %zu bytes before it was dropped; %u of its 64 "
	       "calls ran\n", bytes, __atomic_load_n(&g_bigs, __ATOMIC_SEQ_CST));
	CHECK(bytes < (size_t)32 << 20);
	/* backpressure: its calls stopped running once tcp_reply_queue was unread */
	CHECK(__atomic_load_n(&g_bigs, __ATOMIC_SEQ_CST) < 32);
	close(fd);
	CHECK_OK(fresh_null(sv.port, 3.0, &took));
	server_stop(&sv);
}

/* Raise the soft descriptor limit to want, if the hard limit allows; returns the limit. */
static rlim_t raise_nofile(rlim_t want)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r))
		return 0;
	if (r.rlim_cur < want) {
		r.rlim_cur = want < r.rlim_max ? want : r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
		getrlimit(RLIMIT_NOFILE, &r);
	}
	return r.rlim_cur;
}

/* (c) 1,000 idle connections (both ends in this process: 2,000 descriptors), then a
 * fresh client is served at once, and so are the idle ones when they call. */
static void test_thousand_idle(void)
{
	struct rpcrdma_svc_opts o = { 0 };
	struct server sv;
	rlim_t lim = raise_nofile(4096);
	int n = 1000, i, opened = 0, *fds;
	double took;
	uint32_t v;

	if (lim < 2200) {
		n = lim > 300 ? (int)(lim - 200) / 2 : 50;
		printf("descriptor limit %lu: %d connections\n", (unsigned long)lim, n);
	}
	CHECK_OK(server_start(&sv, &o, 2));
	fds = calloc((size_t)n, sizeof(*fds));
	CHECK(fds != NULL);
	for (i = 0; fds && i < n; i++) {
		fds[i] = cl_connect(sv.port);
		opened += fds[i] >= 0;
	}
	CHECK_EQ_I(opened, n);
	msleep(200);
	CHECK_OK(fresh_null(sv.port, 3.0, &took));
	printf("NULL answered in %.3f s beside %d idle connections\n", took, opened);
	/* the idle ones are connections the server serves, first and last alike */
	for (i = 0; fds && i < n; i += n / 10)
		CHECK(fds[i] >= 0 && cl_call(fds[i], 0x3000u + (uint32_t)i, P_COUNT, 0, &v) == 0);
	for (i = 0; fds && i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	server_stop(&sv);
}

/* (d) A non-idempotent call sent again with its XID on a new connection gets the kept
 * reply, and the procedure runs once: also when the first connection was gone before its
 * reply was sent (the NFS client's REMOVE after a reconnection). */
static void test_drc_new_connection(void)
{
	struct rpcrdma_svc_opts o = { 0 };
	struct rpcrdma_svc_drc_stats st;
	struct server sv;
	uint32_t v1 = 0, v2 = 0, v3 = 0;
	int fd;

	CHECK_OK(server_start(&sv, &o, 2));
	__atomic_store_n(&g_count, 0, __ATOMIC_SEQ_CST);
	fd = cl_connect(sv.port);
	CHECK(fd >= 0 && cl_call(fd, 0x4001, P_COUNT, 0, &v1) == 0);
	close(fd);
	CHECK_EQ_U(v1, 1);
	fd = cl_connect(sv.port);
	CHECK(fd >= 0 && cl_call(fd, 0x4001, P_COUNT, 0, &v2) == 0);
	CHECK_EQ_U(v2, 1);   /* the kept reply */
	CHECK_EQ_U(__atomic_load_n(&g_count, __ATOMIC_SEQ_CST), 1);
	close(fd);
	/* the connection ends while the call runs: its reply is kept all the same */
	fd = cl_connect(sv.port);
	CHECK(fd >= 0 && cl_send(fd, 0x4002, P_COUNT, 300) == 0);
	msleep(100);
	close(fd);
	msleep(600);
	CHECK_EQ_U(__atomic_load_n(&g_count, __ATOMIC_SEQ_CST), 2);
	fd = cl_connect(sv.port);
	CHECK(fd >= 0 && cl_call(fd, 0x4002, P_COUNT, 300, &v3) == 0);
	CHECK_EQ_U(v3, 2);
	CHECK_EQ_U(__atomic_load_n(&g_count, __ATOMIC_SEQ_CST), 2);
	/* a new XID runs */
	CHECK(fd >= 0 && cl_call(fd, 0x4003, P_COUNT, 0, &v3) == 0);
	CHECK_EQ_U(v3, 3);
	close(fd);
	CHECK_OK(rpcrdma_svc_drc_stats(sv.x, &st));
	CHECK_EQ_U(st.replayed, 2);
	server_stop(&sv);
}

/* (e) A record announced longer than tcp_max_record, in one fragment or summed over
 * several, ends its connection; others are served. */
static void test_record_too_long(void)
{
	struct rpcrdma_svc_opts o = { .tcp_max_record = 64 * 1024 };
	struct server sv;
	uint8_t m[4], frag[4 + 40 * 1024];
	size_t bytes;
	double took;
	int fd;

	CHECK_OK(server_start(&sv, &o, 1));
	fd = cl_connect(sv.port);
	put32(m, 0x80000000u | (1u << 20));
	CHECK(fd >= 0 && send(fd, m, 4, MSG_NOSIGNAL) == 4);
	CHECK(closed_within(fd, 5, &bytes));
	close(fd);
	/* 40 KiB fragments: the second passes the limit */
	memset(frag, 0, sizeof(frag));
	put32(frag, 40 * 1024);
	fd = cl_connect(sv.port);
	CHECK(fd >= 0 && send(fd, frag, sizeof(frag), MSG_NOSIGNAL) == (ssize_t)sizeof(frag));
	CHECK(fd >= 0 && send(fd, frag, 4, MSG_NOSIGNAL) == 4);
	CHECK(closed_within(fd, 5, &bytes));
	close(fd);
	CHECK_OK(fresh_null(sv.port, 3.0, &took));
	/* a call in several fragments within the limit is served */
	fd = cl_connect(sv.port);
	if (fd >= 0) {
		uint8_t b[64];
		uint32_t xid = 0, v = 0;

		put32(b, 20);                  /* first fragment: 20 bytes of the header */
		put32(b + 4, 0x5001);
		put32(b + 8, 0);
		put32(b + 12, 2);
		put32(b + 16, PROG);
		put32(b + 20, VERS);
		put32(b + 24, 0x80000000u | 24);   /* last: the rest */
		put32(b + 28, P_COUNT);
		memset(b + 32, 0, 16);
		put32(b + 48, 0);
		CHECK(send(fd, b, 52, MSG_NOSIGNAL) == 52);
		CHECK(cl_recv(fd, &xid, &v) == 0 && xid == 0x5001);
		close(fd);
	}
	server_stop(&sv);
}

/* (f) Lanes: with conn_parallel 2, two calls of one connection run at once (each waits
 * for the other); with one lane they would not meet. */
static void test_lanes(void)
{
	struct rpcrdma_svc_opts o = { .conn_parallel = 2 };
	struct server sv;
	uint32_t xid, v, met = 0;
	int fd, i;

	CHECK_OK(server_start(&sv, &o, 4));
	__atomic_store_n(&g_meet, 0, __ATOMIC_SEQ_CST);
	fd = cl_connect(sv.port);
	CHECK(fd >= 0);
	CHECK(cl_send(fd, 0x6001, P_MEET, 0) == 0 && cl_send(fd, 0x6002, P_MEET, 0) == 0);
	for (i = 0; i < 2; i++) {
		v = 0;
		CHECK(cl_recv(fd, &xid, &v) == 0);
		met += v;
	}
	CHECK_EQ_U(met, 2);
	close(fd);
	server_stop(&sv);
}

/* Without lanes, a connection's calls run one at a time, in order: the two never meet. */
static void test_one_lane(void)
{
	struct rpcrdma_svc_opts o = { 0 };
	struct server sv;
	uint32_t xid = 0, v = 1;
	int fd;

	CHECK_OK(server_start(&sv, &o, 4));
	__atomic_store_n(&g_meet, 0, __ATOMIC_SEQ_CST);
	fd = cl_connect(sv.port);
	CHECK(fd >= 0);
	CHECK(cl_send(fd, 0x7001, P_MEET, 0) == 0 && cl_send(fd, 0x7002, P_MEET, 0) == 0);
	CHECK(cl_recv(fd, &xid, &v) == 0);
	CHECK_EQ_U(xid, 0x7001);
	CHECK_EQ_U(v, 0);   /* waited 2 s alone */
	CHECK(cl_recv(fd, &xid, &v) == 0);
	CHECK_EQ_U(xid, 0x7002);
	close(fd);
	server_stop(&sv);
}

/* RPCSEC_GSS is refused (AUTH_ERROR, AUTH_REJECTEDCRED), never dispatched: libtirpc would
 * keep the context on a dispatch slot that other connections use next. */
static void test_gss_refused(void)
{
	struct rpcrdma_svc_opts o = { 0 };
	struct server sv;
	uint8_t b[64], h[4], r[64];
	uint32_t len;
	int fd;

	CHECK_OK(server_start(&sv, &o, 1));
	__atomic_store_n(&g_count, 0, __ATOMIC_SEQ_CST);
	fd = cl_connect(sv.port);
	CHECK(fd >= 0);
	put32(b, 0x80000000u | 52);
	put32(b + 4, 0x8001);
	put32(b + 8, 0);
	put32(b + 12, 2);
	put32(b + 16, PROG);
	put32(b + 20, VERS);
	put32(b + 24, P_COUNT);
	put32(b + 28, 6);          /* RPCSEC_GSS, an 8-byte body */
	put32(b + 32, 8);
	memset(b + 36, 0, 8);
	memset(b + 44, 0, 8);      /* verifier: AUTH_NONE */
	put32(b + 52, 0);
	CHECK(fd >= 0 && send(fd, b, 56, MSG_NOSIGNAL) == 56);
	CHECK(fd >= 0 && read_all(fd, h, 4) == 0);
	len = get32(h) & 0x7fffffffu;
	CHECK(len == 20 && read_all(fd, r, len) == 0);
	if (len == 20) {
		CHECK_EQ_U(get32(r), 0x8001);
		CHECK_EQ_U(get32(r + 8), 1);    /* MSG_DENIED */
		CHECK_EQ_U(get32(r + 12), 1);   /* AUTH_ERROR */
		CHECK_EQ_U(get32(r + 16), 2);   /* AUTH_REJECTEDCRED */
	}
	CHECK_EQ_U(__atomic_load_n(&g_count, __ATOMIC_SEQ_CST), 0);
	if (fd >= 0)
		close(fd);
	server_stop(&sv);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_partial_mark);
	RUN(test_never_reads);
	RUN(test_thousand_idle);
	RUN(test_drc_new_connection);
	RUN(test_record_too_long);
	RUN(test_lanes);
	RUN(test_one_lane);
	RUN(test_gss_refused);
	HARNESS_END();
}
