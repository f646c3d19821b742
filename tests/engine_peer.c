/* SPDX-License-Identifier: BSD-2-Clause */
/* Two-process test of the engine over a real provider:
 *   engine_peer server PROV PORT [INLINE [rfc5666]]
 *   engine_peer client PROV HOST PORT [INLINE [rfc5666]]
 * "rfc5666" turns on the optional RFC 5666 send modes on both sides: RDMA_MSGP, read
 * chunks in replies (acknowledged with RDMA_DONE), and long calls whose DDP items stay
 * read chunks beside the position-zero chunk. Without it, the server never sends read
 * chunks in replies: a reply that fits nowhere is answered ERR_CHUNK (tested).
 * The client runs echo calls of 0 B, the inline threshold ±1, 1 KiB ±1, 64 KiB, 1 MiB
 * and 16 MiB, each as read chunk or inline argument and as write chunk or inline/long
 * result, 32 in flight. The server checks every argument byte, the client every result
 * byte. Each side prints its statistics and exits non-zero on any failure. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_rig.h"
#include "rpcrdma/engine.h"
#include "rpcrdma/prov.h"
#include "test_host.h"

#define WINDOW 32
#define TIMEOUT_MS 20000
#define ERR_XID 0x5eee0000u    /* the call whose reply fits nowhere */
#define ERR_LEN 4096u

struct peer {
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *ep;
	struct rpcrdma_eng *eng;
	int fatal, bad, requests, completed, failed, err_chunk;
	struct echo_slot slots[WINDOW];
	int free_slots[WINDOW], nfree;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void on_fatal(void *ctx, int reason)
{
	(void)reason;
	((struct peer *)ctx)->fatal = 1;
}

static void on_request(void *ctx, struct rpcrdma_eng_req *r)
{
	struct peer *x = ctx;

	x->requests++;
	x->bad += echo_answer(x->eng, r, now_ms(), 0);
}

static void on_reply_done(void *ctx, struct rpcrdma_eng_req *r, int status)
{
	struct peer *x = ctx;

	if (status && rpcrdma_eng_req_xid(r) == ERR_XID) {
		x->err_chunk++;
	} else if (status) {
		fprintf(stderr, "server: reply %08x: %s\n", rpcrdma_eng_req_xid(r),
			rpcrdma_strerror(status));
		x->bad++;
	}
	echo_reply_free(rpcrdma_eng_req_user(r));
}

static void on_call_done(void *ctx, struct rpcrdma_eng_call *c)
{
	struct peer *x = ctx;
	struct echo_slot *s = rpcrdma_eng_call_user(c);
	int status = rpcrdma_eng_call_status(c);

	if (s->xid == ERR_XID) {
		/* answered RDMA_ERROR / ERR_CHUNK: the call fails as a protocol error */
		if (status == -RPCRDMA_ERR_PROTO)
			x->err_chunk++;
		else
			x->failed++;
	} else if (status || !echo_verify(s, c)) {
		fprintf(stderr, "client: call %08x (%u bytes): %s\n", s->xid, s->len,
			status ? rpcrdma_strerror(status) : "result differs");
		x->failed++;
	}
	x->completed++;
	rpcrdma_eng_call_free(c);
	echo_slot_free(s);
	x->free_slots[x->nfree++] = (int)(s - x->slots);
}

/* Feed completions and timers until done() or a connection error. */
static int drive(struct peer *x, int (*done)(struct peer *))
{
	struct rpcrdma_cqe c[32];
	uint64_t idle_since = now_ms();
	int i, n;

	while (!done(x) && !x->fatal) {
		n = rpcrdma_ep_poll(x->ep, c, 32);
		for (i = 0; i < n; i++)
			rpcrdma_eng_on_cqe(x->eng, &c[i], now_ms());
		if (n > 0) {
			idle_since = now_ms();
			continue;
		}
		rpcrdma_eng_tick(x->eng, now_ms());
		if (now_ms() - idle_since > TIMEOUT_MS) {
			fprintf(stderr, "no progress for %d ms\n", TIMEOUT_MS);
			return -1;
		}
		rpcrdma_ep_wait(x->ep, 100);
	}
	return 0;
}

static int rfc5666;

static void config(struct rpcrdma_eng_config *cfg, uint32_t role, struct rpcrdma_prov *p,
		   uint32_t inl)
{
	const struct rpcrdma_prov_caps *caps = rpcrdma_prov_caps(p);

	rpcrdma_eng_config_default(cfg, role);
	cfg->inline_send = cfg->inline_recv = inl;
	cfg->sq_depth = caps->tx_depth < 512 ? caps->tx_depth : 512;
	cfg->write_send_ordered = caps->write_send_ordered;
	/* plain: what every RFC 8166 peer accepts, so a reply that fits nowhere is ERR_CHUNK */
	cfg->reply_read_chunks = rfc5666 ? RPCRDMA_RRC_ALWAYS : RPCRDMA_RRC_NEVER;
	if (rfc5666) {
		cfg->msgp_align = 64;
		cfg->msgp_thresh = 128;
		cfg->combine_p0 = 1;
	}
}

static void print_stats(const char *who, struct rpcrdma_eng *e)
{
	struct rpcrdma_eng_stats st;
	unsigned i;

	rpcrdma_eng_stats(e, &st);
	printf("%s: calls %" PRIu64 " replies %" PRIu64 " sent MSG/NOMSG/MSGP/DONE/ERROR %" PRIu64
	       "/%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64 " chunks read/write/reply %" PRIu64
	       "/%" PRIu64 "/%" PRIu64 " RDMA reads %" PRIu64 " (%" PRIu64 " B) writes %" PRIu64
	       " (%" PRIu64 " B) credits %" PRIu64 " inline %u/%u\n",
	       who, st.calls, st.replies, st.sent[0], st.sent[1], st.sent[2], st.sent[3],
	       st.sent[4], st.read_chunks, st.write_chunks, st.reply_chunks, st.rdma_reads,
	       st.rdma_read_bytes, st.rdma_writes, st.rdma_write_bytes, st.credits_max,
	       st.inline_send, st.inline_recv);
	if (st.errors[RPCRDMA_EC_DISCONNECT])
		printf("%s: connection closed (by the peer or at the end)\n", who);
	for (i = 0; i < RPCRDMA_EC_COUNT; i++)
		if (st.errors[i] && i != RPCRDMA_EC_DISCONNECT)
			printf("%s: error %s: %" PRIu64 "\n", who, rpcrdma_eng_errclass_name(i),
			       st.errors[i]);
}

static int open_prov(struct peer *x, const char *name)
{
	char err[256];
	int rc = rpcrdma_prov_open(name, &x->p, err, sizeof(err));

	if (rc)
		fprintf(stderr, "provider %s not usable: %s\n", name, err);
	return rc;
}

static int server_done(struct peer *x)
{
	(void)x;
	return 0;   /* until the client leaves */
}

static int serve(const char *prov, uint16_t port, uint32_t inl)
{
	struct rpcrdma_eng_upper up = { 0 };
	struct rpcrdma_eng_config cfg;
	struct rpcrdma_listener *l;
	struct rpcrdma_connreq *req;
	struct peer x;
	int rc;

	memset(&x, 0, sizeof(x));
	if (test_prov_absent(prov))
		return 77;
	if (open_prov(&x, prov))
		return 1;
	rc = rpcrdma_listen(x.p, test_host(), port, &l);
	if (rc) {
		fprintf(stderr, "listen: %s\n", rpcrdma_strerror(rc));
		return 1;
	}
	printf("listening %u\n", rpcrdma_listener_port(l));
	fflush(stdout);
	config(&cfg, RPCRDMA_ENG_SERVER, x.p, inl);
	up.ctx = &x;
	up.request = on_request;
	up.reply_done = on_reply_done;
	up.fatal = on_fatal;
	if (rpcrdma_eng_create(&cfg, &up, &x.eng) || rpcrdma_listener_get(l, 30000, &req))
		return 1;
	rc = rpcrdma_eng_accept(x.eng, req, 10000, now_ms(), &x.ep);
	if (rc) {
		fprintf(stderr, "accept: %s\n", rpcrdma_strerror(rc));
		return 1;
	}
	drive(&x, server_done);
	print_stats("server", x.eng);
	printf("server: %d requests, %d bad, %d answered ERR_CHUNK\n", x.requests, x.bad,
	       x.err_chunk);
	rpcrdma_ep_close(x.ep);
	rpcrdma_eng_destroy(x.eng);
	rpcrdma_listener_close(l);
	rpcrdma_prov_close(x.p);
	return x.bad || !x.requests;
}

struct plan {
	uint32_t len;
	int ddp_arg, ddp_res, long_reply;
};

static int make_plan(struct plan *pl, uint32_t inl)
{
	/* payloads where the whole message is exactly the inline threshold, ±1 byte */
	uint32_t exact = inl - 28 - ECHO_CALL_HDR - 4;
	uint32_t sizes[] = { 0, exact - 1, exact, exact + 1, 1023, 1024, 1025,
			     65536, 1u << 20, 16u << 20 };
	int n = 0;
	unsigned i, k;

	for (k = 0; k < 2; k++)
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			unsigned combo;

			for (combo = 0; combo < 4; combo++) {
				if (k == 1 && sizes[i] >= (1u << 20))
					continue;   /* once is enough for the big ones */
				pl[n].len = sizes[i];
				pl[n].ddp_arg = combo & 1;
				pl[n].ddp_res = (combo >> 1) & 1;
				pl[n].long_reply = 0;
				n++;
			}
		}
	return n;
}

/* every call done, and every Send of ours (RDMA_DONEs) on the wire */
static int client_done(struct peer *x)
{
	return x->nfree == WINDOW && !rpcrdma_eng_sending(x->eng);
}

static int any_free(struct peer *x)
{
	return x->nfree > 0;
}

static int run_client(const char *prov, const char *host, uint16_t port, uint32_t inl)
{
	struct rpcrdma_eng_upper up = { 0 };
	struct rpcrdma_eng_config cfg;
	struct rpcrdma_eng_lower lo;
	struct plan pl[128];
	struct peer x;
	uint8_t pd[RPCRDMA_PDATA_MAX];
	const void *peer_pd;
	size_t plen;
	int n, rc, i, next = 0;
	uint64_t t0, bytes = 0;

	memset(&x, 0, sizeof(x));
	if (open_prov(&x, prov))
		return 1;
	config(&cfg, RPCRDMA_ENG_CLIENT, x.p, inl);
	up.ctx = &x;
	up.call_done = on_call_done;
	up.fatal = on_fatal;
	if (rpcrdma_eng_create(&cfg, &up, &x.eng))
		return 1;
	n = rpcrdma_eng_pdata(x.eng, pd, sizeof(pd));
	rc = rpcrdma_connect(x.p, host, port, pd, (size_t)n, 10000, &x.ep);
	if (rc) {
		fprintf(stderr, "connect: %s\n", rpcrdma_strerror(rc));
		return 1;
	}
	peer_pd = rpcrdma_ep_peer_pdata(x.ep, &plen);
	rpcrdma_eng_set_peer_pdata(x.eng, peer_pd, plen);
	rpcrdma_eng_lower_ep(&lo, x.p, x.ep);
	if (rpcrdma_eng_start(x.eng, &lo, now_ms()))
		return 1;
	for (i = 0; i < WINDOW; i++)
		x.free_slots[x.nfree++] = WINDOW - 1 - i;
	n = make_plan(pl, inl);
	if (!rfc5666) {
		pl[n].len = ERR_LEN;
		pl[n].ddp_arg = pl[n].ddp_res = 0;
		pl[n].long_reply = -1;   /* marks the ERR_CHUNK call */
		n++;
	}
	t0 = now_ms();
	while (next < n && !x.fatal) {
		while (x.nfree && next < n) {
			struct echo_slot *s = &x.slots[x.free_slots[--x.nfree]];
			const struct plan *q = &pl[next];

			/* a reply chunk for results not in a write chunk, except in RFC 5666
			 * mode: there the server offers them as read chunks */
			if (q->long_reply < 0)
				echo_slot_setup(s, ERR_XID, q->len, 0, 0, 256);
			else
				echo_slot_setup(s, 0x5000u + (uint32_t)next, q->len, q->ddp_arg,
						q->ddp_res, rfc5666 ? 256 : q->len + 64);
			rc = rpcrdma_eng_call(x.eng, &s->a, s, now_ms(), &s->c);
			if (rc) {
				fprintf(stderr, "call: %s\n", rpcrdma_strerror(rc));
				x.failed++;
				echo_slot_free(s);
				x.free_slots[x.nfree++] = (int)(s - x.slots);
			}
			bytes += 2ull * q->len;
			next++;
		}
		if (x.nfree == 0 || next == n)
			if (drive(&x, next == n ? client_done : any_free) < 0)
				break;
	}
	if (drive(&x, client_done) < 0)
		x.failed++;
	print_stats("client", x.eng);
	printf("client: %d calls, %d completed, %d failed, %d answered ERR_CHUNK as expected, "
	       "%.1f MB moved in %" PRIu64 " ms\n", n, x.completed, x.failed, x.err_chunk,
	       (double)bytes / 1e6, now_ms() - t0);
	rpcrdma_ep_close(x.ep);
	rpcrdma_eng_destroy(x.eng);
	rpcrdma_prov_close(x.p);
	return x.failed || x.completed != n || x.fatal || x.err_chunk != !rfc5666;
}

int main(int argc, char **argv)
{
	uint32_t inl;

	if (argc >= 4 && !strcmp(argv[1], "server")) {
		inl = argc > 4 ? (uint32_t)atoi(argv[4]) : 1024;
		rfc5666 = argc > 5 && !strcmp(argv[5], "rfc5666");
		return serve(argv[2], (uint16_t)atoi(argv[3]), inl);
	}
	if (argc >= 5 && !strcmp(argv[1], "client")) {
		inl = argc > 5 ? (uint32_t)atoi(argv[5]) : 1024;
		rfc5666 = argc > 6 && !strcmp(argv[6], "rfc5666");
		return run_client(argv[2], argv[3], (uint16_t)atoi(argv[4]), inl);
	}
	fprintf(stderr, "usage: engine_peer server PROV PORT [INLINE [rfc5666]] | client PROV HOST PORT [INLINE [rfc5666]]\n");
	return 2;
}
