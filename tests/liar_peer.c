/* SPDX-License-Identifier: BSD-2-Clause */
/* A client that lies to an RPC-over-RDMA server, over the provider API directly (no
 * engine: it sends whatever bytes it likes). The server must answer each lie as RFC 5666
 * says (ERR_VERS / ERR_CHUNK / disconnect), keep serving everyone else and never crash.
 * Scenarios (tests/test_liars.sh runs them one after another against one server, with a
 * well-behaved client between them):
 *   chunks   calls with read chunks, write chunks and reply chunks claiming 4 GiB, under
 *            keys that were never registered
 *   garbage  10 connections: malformed headers, then 1,000 Sends of random bytes
 *   overrun  four times the credit grant, back to back, without waiting
 *   silent N S   N connections that never send, held S seconds
 *   rnr S    a connection that posts no receive, sends a call and waits S seconds: over
 *            verbs the server's reply is retried without end (RNR), and the server must
 *            end the connection itself (its stall_timeout_ms, 15 s)
 *   errors   1,000 RDMA_ERRORs and 1,000 RDMA_DONEs for nothing, back to back
 *   pastend  asks for a 64 KiB result that the server offers as a read chunk (RFC 5666
 *            §3.5: it says it takes them), then RDMA Reads 4 KiB past the chunk's end
 *   afterdone  the same chunk read whole, RDMA_DONE sent, then read again
 *   stale    a write chunk under a key this peer has already released
 *   The three print whether the provider let the bad access through ("refused" is right;
 *   shm does not check remote access at all: caps.enforces_access).
 * Usage: liar_peer PROVIDER HOST PORT SCENARIO [N] [S]. Exit 0 when the scenario ran;
 * 2 on usage; 1 when not even a connection could be made. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rpcrdma/codec.h"
#include "rpcrdma/prov.h"

#define SLOT 4096
#define SLOTS 32
#define PROG 0x20000000u   /* no such program: a call that gets through is refused */

struct peer {
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *ep;
	struct rpcrdma_mr *mr;
	uint8_t *mem;
	unsigned sent, rcvd, errors;
	int gone;
	uint8_t last[SLOT];              /* the last message received */
	uint32_t last_len;
	int op_status, op_done;          /* of the last RDMA Read posted */
};

static uint64_t seed = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	seed ^= seed >> 12;
	seed ^= seed << 25;
	seed ^= seed >> 27;
	return (uint32_t)((seed * 0x2545f4914f6cdd1dull) >> 32);
}

static uint8_t *put(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
	return b + 4;
}

static uint8_t *put64(uint8_t *b, uint64_t v)
{
	return put(put(b, (uint32_t)(v >> 32)), (uint32_t)v);
}

/* An RPC call of no program, AUTH_NONE. */
static uint8_t *rpc_call(uint8_t *b, uint32_t xid)
{
	b = put(put(put(b, xid), 0), 2);
	b = put(put(put(b, PROG), 1), 1);
	return put(put(put(put(b, 0), 0), 0), 0);
}

static int peer_open(struct peer *x, const char *prov, const char *host, uint16_t port,
		     int recvs)
{
	/* RFC 8797: 1 KiB each way, and our extension saying read chunks in replies are
	 * taken (so that the server offers them) */
	struct rpcrdma_pdata pd = { 1, 0, 1024, 1024, RPCRDMA_PDATA_X_REPLY_READS };
	uint8_t pdata[RPCRDMA_PDATA_EXT_LEN];
	struct rpcrdma_sge sg;
	int i, n = rpcrdma_pdata_encode(&pd, pdata, sizeof(pdata));

	memset(x, 0, sizeof(*x));
	if (rpcrdma_prov_open(prov, &x->p, NULL, 0))
		return -1;
	x->mem = calloc(2 * SLOTS, SLOT);
	if (!x->mem || rpcrdma_mr_reg(x->p, x->mem, 2 * SLOTS * SLOT, RPCRDMA_ACC_LOCAL,
				      &x->mr) ||
	    rpcrdma_connect(x->p, host, port, pdata, n > 0 ? (size_t)n : 0, 10000, &x->ep))
		return -1;
	for (i = 0; i < recvs; i++) {
		sg = (struct rpcrdma_sge){ x->mr, x->mem + (size_t)(SLOTS + i) * SLOT, SLOT };
		if (rpcrdma_post_recv(x->ep, &sg, sg.addr))
			return -1;
	}
	return 0;
}

/* Completions so far: receives put back, a disconnect noted. */
static void peer_poll(struct peer *x, int wait_ms)
{
	struct rpcrdma_cqe c[16];
	int n, i;

	if (x->gone)
		return;
	if (wait_ms)
		rpcrdma_ep_wait(x->ep, wait_ms);
	while ((n = rpcrdma_ep_poll(x->ep, c, 16)) > 0)
		for (i = 0; i < n; i++) {
			if (c[i].op == RPCRDMA_OP_READ) {
				x->op_done = 1;
				x->op_status = c[i].status;
			}
			if (c[i].op == RPCRDMA_OP_DISCONNECT || c[i].status) {
				x->gone = 1;
				continue;
			}
			if (c[i].op == RPCRDMA_OP_RECV) {
				struct rpcrdma_sge sg = { x->mr, c[i].ctx, SLOT };

				x->rcvd++;
				x->last_len = c[i].len < SLOT ? c[i].len : SLOT;
				memcpy(x->last, c[i].ctx, x->last_len);
				/* an RDMA_ERROR: proc 4 at offset 12 */
				if (c[i].len >= 16 && ((uint8_t *)c[i].ctx)[15] == 4)
					x->errors++;
				rpcrdma_post_recv(x->ep, &sg, c[i].ctx);
			}
		}
	if (n < 0)
		x->gone = 1;
}

static void peer_send(struct peer *x, const uint8_t *msg, uint32_t len)
{
	uint8_t *slot = x->mem + (size_t)(x->sent % SLOTS) * SLOT;
	struct rpcrdma_sge sg = { x->mr, slot, len };
	int rc, tries = 0;

	if (x->gone)
		return;
	memcpy(slot, msg, len);
	while ((rc = rpcrdma_post_send(x->ep, &sg, NULL)) == -RPCRDMA_ERR_AGAIN && tries++ < 100)
		peer_poll(x, 10);
	if (rc)
		x->gone = 1;
	else
		x->sent++;
	peer_poll(x, 0);
}

static void peer_close(struct peer *x)
{
	rpcrdma_ep_close(x->ep);
	rpcrdma_mr_dereg(x->mr);
	rpcrdma_prov_close(x->p);
	free(x->mem);
}

/* Header: xid, version 1, credits asked, proc. */
static uint8_t *hdr(uint8_t *b, uint32_t xid, uint32_t credits, uint32_t proc)
{
	return put(put(put(put(b, xid), 1), credits), proc);
}

static int chunks(struct peer *x)
{
	uint8_t m[256], *b;
	uint32_t xid = 0x10000;
	int i;

	for (i = 0; i < 8; i++) {
		/* a read chunk of 4 GiB - 4 at position 0 (a long call), then at position 40 */
		b = hdr(m, xid++, 1, 0);
		b = put(b, 1);
		b = put(put(put(b, i & 1 ? 40 : 0), rnd()), 0xfffffffcu);
		b = put64(b, ((uint64_t)rnd() << 32) | rnd());
		b = put(put(put(b, 0), 0), 0);
		if (i & 1)
			b = rpc_call(b, xid - 1);
		peer_send(x, m, (uint32_t)(b - m));
		/* a write chunk of two segments of 2 GiB each */
		b = hdr(m, xid++, 1, 0);
		b = put(put(b, 0), 1);
		b = put(b, 2);
		b = put64(put(put(b, rnd()), 0x80000000u), rnd());
		b = put64(put(put(b, rnd()), 0x80000000u), rnd());
		b = put(put(b, 0), 0);
		b = rpc_call(b, xid - 1);
		peer_send(x, m, (uint32_t)(b - m));
		/* a reply chunk of 4 GiB - 4 */
		b = hdr(m, xid++, 1, 0);
		b = put(put(put(b, 0), 0), 1);
		b = put(b, 1);
		b = put64(put(put(b, rnd()), 0xfffffffcu), rnd());
		b = rpc_call(b, xid - 1);
		peer_send(x, m, (uint32_t)(b - m));
		peer_poll(x, 50);
	}
	peer_poll(x, 200);
	printf("chunks: %u sent, %u answers (%u RDMA_ERROR)%s\n", x->sent, x->rcvd, x->errors,
	       x->gone ? ", disconnected" : "");
	return 0;
}

static void garbage_one(struct peer *x, int sends)
{
	uint8_t m[SLOT], *b;
	uint32_t len;
	int i, j;

	b = hdr(m, 1, 1, 0);   /* truncated: no chunk lists */
	peer_send(x, m, (uint32_t)(b - m));
	b = hdr(m, 2, 1, 0);
	m[7] = 7;              /* version 7 */
	b = put(put(put(b, 0), 0), 0);
	peer_send(x, m, (uint32_t)(rpc_call(b, 2) - m));
	b = hdr(m, 3, 1, 9);   /* no such proc */
	peer_send(x, m, (uint32_t)(b - m));
	for (i = 0; i < sends && !x->gone; i++) {
		len = 1 + rnd() % 600;
		for (j = 0; j < (int)len; j++)
			m[j] = (uint8_t)rnd();
		if (rnd() & 1) {   /* half of them look like a header at first */
			hdr(m, rnd(), rnd() % 64, rnd() % 6);
			if (len < 16)
				len = 16;
		}
		peer_send(x, m, len);
	}
}

static int garbage(const char *prov, const char *host, uint16_t port)
{
	struct peer x[10];
	unsigned sent = 0, gone = 0, errs = 0;
	int i, n = 0;

	for (i = 0; i < 10; i++)
		if (!peer_open(&x[n], prov, host, port, SLOTS))
			n++;
	for (i = 0; i < n; i++)
		garbage_one(&x[i], 100);
	for (i = 0; i < n; i++) {
		peer_poll(&x[i], 100);
		sent += x[i].sent;
		gone += (unsigned)x[i].gone;
		errs += x[i].errors;
		peer_close(&x[i]);
	}
	printf("garbage: %d connections, %u Sends, %u RDMA_ERROR back, %u disconnected\n", n, sent,
	       errs, gone);
	return n ? 0 : 1;
}

/* Credits: the grant comes in the first reply; then four times that many calls at once. */
static int overrun(struct peer *x)
{
	uint8_t m[256], *b;
	uint32_t xid = 0x20000, grant = 1, i;

	b = hdr(m, xid++, 32, 0);
	b = put(put(put(b, 0), 0), 0);
	peer_send(x, m, (uint32_t)(rpc_call(b, xid - 1) - m));
	for (i = 0; i < 50 && !x->rcvd && !x->gone; i++)
		peer_poll(x, 20);
	if (x->rcvd) {
		const uint8_t *r = x->mem + (size_t)SLOTS * SLOT;   /* the first receive's */

		grant = (uint32_t)r[8] << 24 | (uint32_t)r[9] << 16 | (uint32_t)r[10] << 8 | r[11];
		if (grant == 0 || grant > 1024)
			grant = 32;
	}
	for (i = 0; i < 4 * grant && !x->gone; i++) {
		b = hdr(m, xid++, 32, 0);
		b = put(put(put(b, 0), 0), 0);
		peer_send(x, m, (uint32_t)(rpc_call(b, xid - 1) - m));
	}
	for (i = 0; i < 20 && !x->gone; i++)
		peer_poll(x, 20);
	printf("overrun: grant %u, %u calls sent, %u answers%s\n", grant, x->sent, x->rcvd,
	       x->gone ? ", disconnected" : "");
	return 0;
}

/* No receive posted: the server's reply to this call has nowhere to land. */
static int rnr(struct peer *x, int secs)
{
	uint8_t m[256], *b;
	time_t t0 = time(NULL);

	b = hdr(m, 0x30000, 1, 0);
	b = put(put(put(b, 0), 0), 0);
	peer_send(x, m, (uint32_t)(rpc_call(b, 0x30000) - m));
	while (!x->gone && time(NULL) - t0 < secs)
		peer_poll(x, 200);
	if (x->gone)
		printf("rnr: the server ended the connection after %ld s\n", (long)(time(NULL) - t0));
	else
		printf("rnr: still connected after %d s\n", secs);
	return 0;
}

/* RDMA_ERROR (ERR_VERS, ERR_CHUNK) and RDMA_DONE for calls that never were. */
static int errors(struct peer *x)
{
	uint8_t m[64], *b;
	int i;

	for (i = 0; i < 1000 && !x->gone; i++) {
		b = hdr(m, rnd(), 1, 4);
		b = put(b, i & 1 ? 1 : 2);   /* ERR_VERS: low and high versions follow */
		if (i & 1)
			b = put(put(b, 1), 1);
		peer_send(x, m, (uint32_t)(b - m));
		b = hdr(m, rnd(), 1, 3);
		peer_send(x, m, (uint32_t)(b - m));
	}
	peer_poll(x, 200);
	printf("errors: %u sent, %u answers%s\n", x->sent, x->rcvd,
	       x->gone ? ", disconnected" : "");
	return 0;
}

static uint32_t get(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

#define PERF_PROG 0x20049010u   /* rpcrdma serve's program (tools/perf/perfsvc.x) */
#define PS_READ 2u

/* A PS_READ call of count bytes, with one write chunk of one segment when seg is given. */
static uint32_t ps_read_call(uint8_t *m, uint32_t xid, uint32_t count,
			     const struct rpcrdma_segment *seg)
{
	uint8_t *b = hdr(m, xid, 1, 0);

	b = put(b, 0);                  /* no read list */
	if (seg) {
		b = put(put(b, 1), 1);  /* a write chunk of one segment */
		b = put64(put(put(b, seg->handle), seg->length), seg->offset);
		b = put(b, 0);
	} else {
		b = put(b, 0);
	}
	b = put(b, 0);                  /* no reply chunk */
	b = put(put(put(b, xid), 0), 2);
	b = put(put(put(b, PERF_PROG), 1), PS_READ);
	b = put(put(put(put(b, 0), 0), 0), 0);
	return (uint32_t)(put(b, count) - m);
}

/* Waits for the reply to xid; its first read segment into seg. 0, or -1. */
static int offered_chunk(struct peer *x, uint32_t xid, struct rpcrdma_segment *seg)
{
	int i;

	for (i = 0; i < 100 && !x->gone; i++) {
		peer_poll(x, 50);
		if (x->last_len >= 44 && get(x->last) == xid && get(x->last + 12) <= 1 &&
		    get(x->last + 16) == 1) {
			seg->handle = get(x->last + 24);
			seg->length = get(x->last + 28);
			seg->offset = (uint64_t)get(x->last + 32) << 32 | get(x->last + 36);
			return 0;
		}
	}
	return -1;
}

/* An RDMA Read of len bytes at seg into our memory: 0 done, else its error (the read
 * refused, or the connection gone). */
static int read_chunk(struct peer *x, const struct rpcrdma_segment *seg, uint32_t len,
		      struct rpcrdma_mr *sink, uint8_t *mem)
{
	struct rpcrdma_segment r = *seg;
	struct rpcrdma_sge sg = { sink, mem, len };
	int i, rc;

	r.length = len;
	x->op_done = 0;
	rc = rpcrdma_post_read(x->ep, &sg, 1, &r, 1, x);
	if (rc)
		return rc;
	for (i = 0; i < 100 && !x->op_done && !x->gone; i++)
		peer_poll(x, 50);
	return x->op_done ? x->op_status : -RPCRDMA_ERR_DISCONN;
}

static void say_access(const struct peer *x, const char *what, int rc)
{
	const struct rpcrdma_prov_caps *c = rpcrdma_prov_caps(x->p);

	printf("%s: %s (%s)%s\n", what, rc ? "refused" : "let through",
	       rc ? rpcrdma_strerror(rc) : "read", c->enforces_access ? ""
	       : " [this provider does not check remote access]");
}

static int chunk_abuse(struct peer *x, const char *what)
{
	size_t big = 128 * 1024;
	uint8_t m[256], *mem = calloc(1, big);
	struct rpcrdma_segment seg;
	struct rpcrdma_mr *sink = NULL;
	uint32_t xid = 0x40000;
	int rc;

	if (!mem || rpcrdma_mr_reg(x->p, mem, big, RPCRDMA_ACC_LOCAL | RPCRDMA_ACC_READ_SINK |
				   RPCRDMA_ACC_REMOTE_WRITE, &sink)) {
		free(mem);
		return 1;
	}
	if (!strcmp(what, "stale")) {
		struct rpcrdma_mr *gone;

		/* a key registered and released before the call names it */
		rc = rpcrdma_mr_reg(x->p, mem, 65536, RPCRDMA_ACC_REMOTE_WRITE, &gone);
		seg.handle = rc ? 0x1234 : gone->handle;
		seg.length = 65536;
		seg.offset = rc ? 0 : gone->offset;
		if (!rc)
			rpcrdma_mr_dereg(gone);
		peer_send(x, m, ps_read_call(m, xid, 65536, &seg));
		for (rc = 0; rc < 40 && !x->gone && !x->rcvd; rc++)
			peer_poll(x, 50);
		printf("stale: a write chunk under a released key: %s\n",
		       x->gone ? "the server ended the connection"
		       : x->rcvd ? "answered" : "no answer");
		goto out;
	}
	peer_send(x, m, ps_read_call(m, xid, 65536, NULL));
	if (offered_chunk(x, xid, &seg)) {
		printf("%s: no read chunk offered (the server answered %u messages)\n", what,
		       x->rcvd);
		goto out;
	}
	if (!strcmp(what, "pastend")) {
		say_access(x, "pastend: 4 KiB past the offered chunk's end",
			   read_chunk(x, &seg, seg.length + 4096, sink, mem));
		goto out;
	}
	rc = read_chunk(x, &seg, seg.length, sink, mem);
	printf("afterdone: the offered chunk read whole: %s\n", rc ? rpcrdma_strerror(rc) : "ok");
	peer_send(x, m, (uint32_t)(hdr(m, xid, 1, 3) - m));   /* RDMA_DONE */
	peer_poll(x, 300);
	say_access(x, "afterdone: the chunk read again after RDMA_DONE",
		   read_chunk(x, &seg, seg.length, sink, mem));
out:
	rpcrdma_mr_dereg(sink);
	free(mem);
	return 0;
}

static int silent(const char *prov, const char *host, uint16_t port, int n, int secs)
{
	struct rpcrdma_prov *p;
	struct rpcrdma_ep **eps = calloc((size_t)n, sizeof(*eps));
	int i, made = 0;

	if (!eps || rpcrdma_prov_open(prov, &p, NULL, 0))
		return 1;
	for (i = 0; i < n; i++)
		made += !rpcrdma_connect(p, host, port, NULL, 0, 10000, &eps[i]);
	printf("silent: %d of %d connections made, held %d s\n", made, n, secs);
	fflush(stdout);
	sleep((unsigned)secs);
	for (i = 0; i < n; i++)
		rpcrdma_ep_close(eps[i]);
	rpcrdma_prov_close(p);
	free(eps);
	return made ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct peer x;
	const char *what;
	uint16_t port;
	int rc;

	if (argc < 5) {
		fprintf(stderr, "usage: liar_peer PROVIDER HOST PORT "
			"chunks|garbage|overrun|errors|pastend|afterdone|stale|silent N S|rnr S\n");
		return 2;
	}
	port = (uint16_t)atoi(argv[3]);
	what = argv[4];
	seed ^= (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	if (!strcmp(what, "garbage"))
		return garbage(argv[1], argv[2], port);
	if (!strcmp(what, "silent"))
		return silent(argv[1], argv[2], port, argc > 5 ? atoi(argv[5]) : 200,
			      argc > 6 ? atoi(argv[6]) : 5);
	if (strcmp(what, "chunks") && strcmp(what, "overrun") && strcmp(what, "rnr") &&
	    strcmp(what, "errors") && strcmp(what, "pastend") && strcmp(what, "afterdone") &&
	    strcmp(what, "stale")) {
		fprintf(stderr, "liar_peer: no scenario '%s'\n", what);
		return 2;
	}
	if (peer_open(&x, argv[1], argv[2], port, strcmp(what, "rnr") ? SLOTS : 0)) {
		fprintf(stderr, "liar_peer: cannot connect to %s:%u over %s\n", argv[2], port,
			argv[1]);
		return 1;
	}
	rc = !strcmp(what, "chunks")  ? chunks(&x)
	   : !strcmp(what, "overrun") ? overrun(&x)
	   : !strcmp(what, "errors")  ? errors(&x)
	   : !strcmp(what, "rnr")     ? rnr(&x, argc > 5 ? atoi(argv[5]) : 20)
				      : chunk_abuse(&x, what);
	peer_close(&x);
	return rc;
}
