/* SPDX-License-Identifier: BSD-2-Clause */
/* The transport engine over the mock provider: every message type both ways, every chunk
 * combination, long calls and replies, RDMA_MSGP, read chunks in replies with RDMA_DONE,
 * credits, every RDMA_ERROR case, disconnects, and a fault at each step of an exchange.
 * Each test ends with no registration left (the mock counts them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_rig.h"
#include "harness.h"
#include "objpool.h"
#include "prov_mock.h"

#define MAXQ 64
#define ANY_RC 1

struct side {
	struct rpcrdma_eng *eng;
	struct rpcrdma_ep *ep;
	int fatal;
};

struct rig {
	struct rpcrdma_prov *p;
	struct rpcrdma_prov *shared_p;   /* set before rig_up: use this provider */
	struct side cl, sv;
	uint64_t now;
	/* server behaviour */
	int hold;                   /* keep requests instead of answering */
	struct rpcrdma_eng_req *held[MAXQ];
	int nheld;
	int replies_done, reply_status[8];
	int requests;
	uint32_t order[MAXQ];       /* XIDs of the requests, in the order handed up */
	int bad_calls;              /* calls whose data did not verify at the server */
	int inline_results;         /* reply with the data in the stream, not as an item */
	/* client */
	struct echo_slot slots[MAXQ];
	int nslots, completed;
	/* backchannel (RFC 8167): the client answers backward echo calls */
	int bc_hold;                /* keep them unanswered (their XIDs in bc_held) */
	uint32_t bc_held[MAXQ];
	int bc_nheld;
	uint32_t bc_order[MAXQ];    /* XIDs of the backward calls, in the order handed up */
	int bc_requests, bc_bad;
	struct bslot {
		uint32_t xid, len;
		uint8_t *xdr;
		struct rpcrdma_eng_bcall *b;
		int done, status, verified;
		uint32_t accept_stat;   /* of the reply (RFC 5531), when it has one */
	} bslots[MAXQ];
	int nbslots;
};

/* ---- server upper face ---- */

static void answer(struct rig *g, struct rpcrdma_eng_req *r)
{
	if (echo_answer(g->sv.eng, r, g->now, g->inline_results))
		g->bad_calls++;
}

static void on_request(void *ctx, struct rpcrdma_eng_req *r)
{
	struct rig *g = ctx;

	if (g->requests < MAXQ)
		g->order[g->requests] = rpcrdma_eng_req_xid(r);
	g->requests++;
	if (g->hold && g->nheld < MAXQ) {
		g->held[g->nheld++] = r;
		return;
	}
	answer(g, r);
}

static void on_reply_done(void *ctx, struct rpcrdma_eng_req *r, int status)
{
	struct rig *g = ctx;

	if (g->replies_done < 8)
		g->reply_status[g->replies_done] = status;
	g->replies_done++;
	echo_reply_free(rpcrdma_eng_req_user(r));
}

static void sv_fatal(void *ctx, int reason)
{
	(void)reason;
	((struct rig *)ctx)->sv.fatal++;
}

/* ---- client upper face ---- */

static void on_call_done(void *ctx, struct rpcrdma_eng_call *c)
{
	struct rig *g = ctx;
	struct echo_slot *s = rpcrdma_eng_call_user(c);

	s->done = 1;
	s->status = rpcrdma_eng_call_status(c);
	if (!s->status)
		s->verified = echo_verify(s, c);
	if (!s->status && s->keep_reply) {
		const void *rep = rpcrdma_eng_call_reply(c, &s->reply_len);

		s->reply = malloc(s->reply_len + 1);
		if (s->reply && s->reply_len)
			memcpy(s->reply, rep, s->reply_len);
	}
	g->completed++;
	rpcrdma_eng_call_free(c);
	s->c = NULL;
}

static void cl_fatal(void *ctx, int reason)
{
	(void)reason;
	((struct rig *)ctx)->cl.fatal++;
}

/* ---- the backchannel's upper faces: a backward echo, inline both ways ---- */

static int bc_answer(struct rig *g, uint32_t xid, int expect_rc)
{
	const struct bslot *b = NULL;
	uint8_t *rep;
	uint32_t n, len;
	int i, rc;

	for (i = 0; i < g->nbslots; i++)
		if (g->bslots[i].xid == xid)
			b = &g->bslots[i];
	len = b ? b->len : 0;
	rep = malloc(ECHO_REPLY_HDR + 8 + len);
	if (!rep)
		abort();
	put32(rep, xid);
	put32(rep + 4, 1);
	memset(rep + 8, 0, 16);
	put32(rep + ECHO_REPLY_HDR, len);
	fill_pattern(rep + ECHO_REPLY_HDR + 4, xid, len);
	n = ECHO_REPLY_HDR + 4 + ((len + 3) & ~3u);
	memset(rep + ECHO_REPLY_HDR + 4 + len, 0, n - ECHO_REPLY_HDR - 4 - len);
	rc = rpcrdma_eng_bc_reply(g->cl.eng, xid, rep, n, g->now);
	free(rep);
	if (expect_rc != ANY_RC)
		CHECK_EQ_U((uint32_t)rc, (uint32_t)expect_rc);
	return rc;
}

static void on_bc_request(void *ctx, uint32_t xid, const void *call, uint32_t len)
{
	struct rig *g = ctx;
	uint32_t dlen;
	const uint8_t *data = echo_opaque(call, len, ECHO_CALL_HDR, 0, 0, 0, &dlen);

	if (!data || get32(call) != xid || check_pattern(data, xid, dlen) != dlen)
		g->bc_bad++;
	if (g->bc_requests < MAXQ)
		g->bc_order[g->bc_requests] = xid;
	g->bc_requests++;
	if (g->bc_hold && g->bc_nheld < MAXQ) {
		g->bc_held[g->bc_nheld++] = xid;
		return;
	}
	bc_answer(g, xid, ANY_RC);
}

static void on_bc_done(void *ctx, struct rpcrdma_eng_bcall *b)
{
	struct bslot *s = rpcrdma_eng_bcall_user(b);
	uint32_t rlen, dlen;
	const uint8_t *rep = rpcrdma_eng_bcall_reply(b, &rlen), *data;

	(void)ctx;
	s->done = 1;
	s->status = rpcrdma_eng_bcall_status(b);
	if (!s->status && rlen >= 24)
		s->accept_stat = get32(rep + 20);
	if (!s->status && rep && rlen >= 8 && get32(rep) == s->xid && get32(rep + 4) == 1) {
		data = echo_opaque(rep, rlen, ECHO_REPLY_HDR, 0, 0, 0, &dlen);
		s->verified = data && dlen == s->len && check_pattern(data, s->xid, dlen) == dlen;
	}
	rpcrdma_eng_bcall_free(b);
	s->b = NULL;
}

/* ---- rig ---- */

typedef void (*cfg_fn)(struct rpcrdma_eng_config *cl, struct rpcrdma_eng_config *sv);

static void rig_up_on(struct rig *g, cfg_fn tweak, const struct rpcrdma_mock_faults *f,
		      struct rpcrdma_prov *shared)
{
	struct rpcrdma_eng_config cc, sc;
	struct rpcrdma_eng_lower lo;
	struct rpcrdma_eng_upper cu = { .ctx = g, .call_done = on_call_done, .fatal = cl_fatal,
					.bc_request = on_bc_request };
	struct rpcrdma_eng_upper su = { .ctx = g, .request = on_request,
					.reply_done = on_reply_done, .fatal = sv_fatal,
					.bc_done = on_bc_done };
	uint8_t cpd[16], spd[16];
	int cn, sn;
	size_t plen;
	const void *pd;

	memset(g, 0, sizeof(*g));
	g->now = 1000;
	g->shared_p = shared;
	rpcrdma_eng_config_default(&cc, RPCRDMA_ENG_CLIENT);
	rpcrdma_eng_config_default(&sc, RPCRDMA_ENG_SERVER);
	if (tweak)
		tweak(&cc, &sc);
	if (shared)
		g->p = shared;
	else
		CHECK_EQ_I(rpcrdma_mock_open(&g->p), 0);
	if (f)
		CHECK_EQ_I(rpcrdma_mock_set_faults(g->p, f), 0);
	/* the engines exist before the connection: their private data goes in it */
	CHECK_EQ_I(rpcrdma_eng_create(&cc, &cu, &g->cl.eng), 0);
	CHECK_EQ_I(rpcrdma_eng_create(&sc, &su, &g->sv.eng), 0);
	cn = rpcrdma_eng_pdata(g->cl.eng, cpd, sizeof(cpd));
	sn = rpcrdma_eng_pdata(g->sv.eng, spd, sizeof(spd));
	/* the client says it takes read chunks in replies; the server has nothing to add */
	CHECK_EQ_U(cn, RPCRDMA_PDATA_EXT_LEN);
	CHECK_EQ_U(sn, RPCRDMA_PDATA_LEN);
	CHECK_EQ_U(rpcrdma_mock_pair(g->p, cpd, (size_t)cn, spd, (size_t)sn, &g->cl.ep,
				     &g->sv.ep), 0);
	pd = rpcrdma_ep_peer_pdata(g->cl.ep, &plen);
	rpcrdma_eng_set_peer_pdata(g->cl.eng, pd, plen);
	pd = rpcrdma_ep_peer_pdata(g->sv.ep, &plen);
	rpcrdma_eng_set_peer_pdata(g->sv.eng, pd, plen);
	rpcrdma_eng_lower_ep(&lo, g->p, g->sv.ep);
	CHECK_EQ_I(rpcrdma_eng_start(g->sv.eng, &lo, g->now), 0);
	rpcrdma_eng_lower_ep(&lo, g->p, g->cl.ep);
	CHECK_EQ_I(rpcrdma_eng_start(g->cl.eng, &lo, g->now), 0);
}

static void rig_up_with(struct rig *g, cfg_fn tweak, const struct rpcrdma_mock_faults *f)
{
	rig_up_on(g, tweak, f, NULL);
}

static void rig_up(struct rig *g, cfg_fn tweak)
{
	rig_up_with(g, tweak, NULL);
}

/* Deliver completions both ways until nothing moves (for longer than the mock's
 * delayed completions wait). */
static void pump(struct rig *g)
{
	struct rpcrdma_cqe c[16];
	int i, n, quiet = 0;

	while (quiet < 12) {
		int moved = 0;

		if (g->cl.ep) {
			n = rpcrdma_ep_poll(g->cl.ep, c, 16);
			for (i = 0; i < n; i++)
				rpcrdma_eng_on_cqe(g->cl.eng, &c[i], g->now);
			moved += n > 0;
		}
		if (g->sv.ep) {
			n = rpcrdma_ep_poll(g->sv.ep, c, 16);
			for (i = 0; i < n; i++)
				rpcrdma_eng_on_cqe(g->sv.eng, &c[i], g->now);
			moved += n > 0;
		}
		if (!moved) {
			/* the owner's loop ticks: work that waited for room is tried again */
			if (g->cl.eng)
				rpcrdma_eng_tick(g->cl.eng, g->now);
			if (g->sv.eng)
				rpcrdma_eng_tick(g->sv.eng, g->now);
		}
		quiet = moved ? 0 : quiet + 1;
	}
}

static void free_slots(struct rig *g)
{
	int i;

	for (i = 0; i < g->nslots; i++)
		echo_slot_free(&g->slots[i]);
	for (i = 0; i < g->nbslots; i++) {
		free(g->bslots[i].xdr);
		g->bslots[i].xdr = NULL;
	}
}

/* Tear down and check nothing is left registered or pending. */
static void rig_down(struct rig *g)
{
	struct rpcrdma_mock_stats ms;
	int i;

	for (i = 0; i < g->nheld; i++)
		rpcrdma_eng_req_drop(g->sv.eng, g->held[i]);
	g->nheld = 0;
	rpcrdma_ep_close(g->cl.ep);
	rpcrdma_ep_close(g->sv.ep);
	rpcrdma_eng_destroy(g->cl.eng);
	rpcrdma_eng_destroy(g->sv.eng);
	if (!g->shared_p) {
		CHECK_EQ_I(rpcrdma_mock_get_stats(g->p, &ms), 0);
		CHECK_EQ_U(ms.mrs_live, 0);
		rpcrdma_prov_close(g->p);
	}
	free_slots(g);
}

/* Start an echo call of len bytes. ddp_arg: the argument as a read chunk; ddp_res: a
 * result buffer offered (write chunk); max_reply: the reply's size bound. */
static struct echo_slot *start(struct rig *g, uint32_t len, int ddp_arg, int ddp_res,
			       uint32_t max_reply, int expect_rc)
{
	struct echo_slot *s = &g->slots[g->nslots++];
	int rc;

	echo_slot_setup(s, 0x1000u + (uint32_t)g->nslots * 17u, len, ddp_arg, ddp_res, max_reply);
	rc = rpcrdma_eng_call(g->cl.eng, &s->a, s, g->now, &s->c);
	if (expect_rc != ANY_RC)
		CHECK_EQ_U((uint32_t)rc, (uint32_t)expect_rc);
	if (rc) {
		s->done = 1;
		s->status = rc;
	}
	return s;
}

/* The server calls the client back: a backward echo call of len bytes, inline. */
static struct bslot *start_bc(struct rig *g, uint32_t len, int expect_rc)
{
	struct bslot *b = &g->bslots[g->nbslots++];
	uint8_t *data = malloc(len + 1);
	struct rpcrdma_ddp_item unused;
	uint32_t n;
	int rc;

	memset(b, 0, sizeof(*b));
	b->xid = 0x8000u + (uint32_t)g->nbslots * 13u;
	b->len = len;
	b->xdr = malloc(ECHO_CALL_HDR + 8 + len);
	if (!data || !b->xdr)
		abort();
	fill_pattern(data, b->xid, len);
	n = echo_call(b->xdr, b->xid, data, len, 0, &unused);
	free(data);
	rc = rpcrdma_eng_bc_call(g->sv.eng, b->xdr, n, b, g->now, &b->b);
	if (expect_rc != ANY_RC)
		CHECK_EQ_U((uint32_t)rc, (uint32_t)expect_rc);
	if (rc) {
		b->done = 1;
		b->status = rc;
	}
	return b;
}

static void stats(struct rig *g, struct rpcrdma_eng_stats *c, struct rpcrdma_eng_stats *s)
{
	rpcrdma_eng_stats(g->cl.eng, c);
	rpcrdma_eng_stats(g->sv.eng, s);
}

#define REPLY_MAX(len) ((len) + 64u)

/* ---- message forms ---- */

static void test_inline_both_ways(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s;

	rig_up(&g, NULL);
	s = start(&g, 100, 0, 0, REPLY_MAX(100), 0);
	pump(&g);
	CHECK(s->done && s->status == 0 && s->verified);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.sent[RPCRDMA_MSG], 1);
	CHECK_EQ_U(ss.rcvd[RPCRDMA_MSG], 1);
	CHECK_EQ_U(ss.sent[RPCRDMA_MSG], 1);
	CHECK_EQ_U(cs.rcvd[RPCRDMA_MSG], 1);
	CHECK_EQ_U(cs.read_chunks + cs.write_chunks + cs.reply_chunks, 0);
	CHECK_EQ_U(cs.calls, 1);
	CHECK_EQ_U(cs.replies, 1);
	CHECK_EQ_U(ss.calls, 1);
	CHECK_EQ_U(ss.replies, 1);
	CHECK_EQ_U(cs.credits_granted, 2);    /* the server granted what was asked: twice the
						 one call in flight */
	CHECK_EQ_U(ss.recvs_posted, 2);       /* ... having posted the receives first */
	CHECK_EQ_U(cs.inline_send, 4096);     /* RFC 8797 private data raised it */
	CHECK_EQ_U(rpcrdma_eng_inline_reply(g.cl.eng), 4096);   /* and what comes back */
	CHECK_EQ_U(cs.mrs_live, 2);           /* only the send and receive areas */
	CHECK_EQ_U(g.replies_done, 1);
	CHECK_EQ_U(g.bad_calls, 0);
	rig_down(&g);
}

/* Read list + write list + reply chunk in one call: the argument pulled by RDMA Read, the
 * result RDMA-Written into the caller's buffer, the reply chunk offered and unused. */
static void test_all_chunks_in_one_call(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s;

	rig_up(&g, NULL);
	s = start(&g, 200000, 1, 1, 100000, 0);
	pump(&g);
	CHECK(s->done && s->status == 0 && s->verified);
	CHECK(s->buf.used && s->buf.len == 200000);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.read_chunks, 1);
	CHECK_EQ_U(cs.write_chunks, 1);
	CHECK_EQ_U(cs.reply_chunks, 1);
	CHECK_EQ_U(ss.rdma_reads, 1);
	CHECK_EQ_U(ss.rdma_read_bytes, 200000);
	CHECK_EQ_U(ss.rdma_writes, 1);
	CHECK_EQ_U(ss.rdma_write_bytes, 200000);
	CHECK_EQ_U(cs.write_chunk_bytes, 200000);
	CHECK_EQ_U(ss.sent[RPCRDMA_MSG], 1);     /* the rest of the reply fits inline */
	CHECK_EQ_U(cs.long_replies, 0);
	CHECK_EQ_U(g.bad_calls, 0);
	rig_down(&g);
}

/* Finished calls and requests are kept for the next ones (internal/objpool.h): each shape
 * of message, one after another on one connection, finds nothing left of the one before
 * (chunk lists, a long call's read, a reply chunk, DDP results). */
static void test_objects_reused_clean(void)
{
	static const struct {
		uint32_t len;
		int arg, res;
		uint32_t max;
	} shape[] = {
		{ 200000, 1, 1, 100000 },        /* read list, write list, reply chunk */
		{ 100, 0, 0, REPLY_MAX(100) },   /* all inline */
		{ 9000, 0, 0, REPLY_MAX(9000) }, /* past the 4 KiB inline: long call and reply */
		{ 3, 1, 1, REPLY_MAX(3) },       /* argument inline (it fits), result in a chunk */
		{ 4099, 1, 1, REPLY_MAX(4099) }, /* odd length past the inline: chunks again */
		{ 0, 0, 0, REPLY_MAX(0) },
	};
	const unsigned n = sizeof(shape) / sizeof(shape[0]);
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s;
	struct rig g;
	unsigned round, i;

	rig_up(&g, NULL);
	for (round = 0; round < 2; round++)
		for (i = 0; i < n; i++) {
			s = start(&g, shape[i].len, shape[i].arg, shape[i].res, shape[i].max, 0);
			pump(&g);
			CHECK(s->done && s->status == 0 && s->verified);
			CHECK(!shape[i].res || (s->buf.used && s->buf.len == shape[i].len));
		}
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.calls, 2 * n);
	CHECK_EQ_U(cs.replies, 2 * n);
	CHECK_EQ_U(ss.replies, 2 * n);
	CHECK_EQ_U(cs.write_chunks, 2 * 3);
	CHECK_EQ_U(cs.long_calls, 2);
	CHECK_EQ_U(ss.rdma_reads, 2 * 2 + 2);   /* two read chunks and one long call a round */
	CHECK_EQ_U(cs.read_chunks, 2 * 2 + 2);
	CHECK_EQ_U(g.bad_calls, 0);
	/* the server's kept requests, and the client's kept calls, go after 100 ms without
	 * work: the tick asks to be called then, and after it nothing is due */
	CHECK_EQ_U(rpcrdma_eng_tick(g.sv.eng, g.now),
		   RPCRDMA__OBJPOOL_KEEPS ? g.now + 100 : UINT64_MAX);
	CHECK_EQ_U(rpcrdma_eng_tick(g.sv.eng, g.now + 100), UINT64_MAX);
	CHECK_EQ_U(rpcrdma_eng_tick(g.cl.eng, g.now),
		   RPCRDMA__OBJPOOL_KEEPS ? g.now + 100 : UINT64_MAX);
	CHECK_EQ_U(rpcrdma_eng_tick(g.cl.eng, g.now + 100), UINT64_MAX);
	rig_down(&g);
}

/* Odd lengths: XDR roundup is in neither chunk nor stream (RFC 8166 §3.4.5); the server
 * puts the pad back. */
static void test_odd_length_roundup(void)
{
	struct rig g;
	uint32_t lens[] = { 1, 2, 3, 5, 1023, 1025, 4097 };
	unsigned i;

	rig_up(&g, NULL);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		start(&g, lens[i], 1, 1, REPLY_MAX(lens[i]), 0);
	pump(&g);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		CHECK(g.slots[i].done && g.slots[i].status == 0 && g.slots[i].verified);
	CHECK_EQ_U(g.bad_calls, 0);
	rig_down(&g);
}

/* A call too long to send inline goes as RDMA_NOMSG with a position-zero read chunk. */
static void test_long_call(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s;

	rig_up(&g, NULL);
	s = start(&g, 50000, 0, 1, 128, 0);
	pump(&g);
	CHECK(s->done && s->status == 0 && s->verified);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.sent[RPCRDMA_NOMSG], 1);
	CHECK_EQ_U(ss.rcvd[RPCRDMA_NOMSG], 1);
	CHECK_EQ_U(cs.long_calls, 1);
	CHECK_EQ_U(ss.long_calls, 1);
	CHECK_EQ_U(ss.rdma_read_bytes, 44 + 50000);
	rig_down(&g);
}

static void combine_p0_cfg(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	(void)s;
	c->combine_p0 = 1;
}

/* Position zero and a DDP item in one call: the server gets the same assembled call
 * either way. By default the item goes back inline in the position-zero chunk (one read
 * chunk: what Linux servers take); with combine_p0 it stays a chunk of its own. */
static void long_call_with_item(cfg_fn tweak, uint32_t want_reads, uint32_t want_chunks)
{
	struct rig g;
	struct echo_slot *s;
	struct rpcrdma_eng_stats ss, cs;
	static uint8_t big[6000];
	struct rpcrdma_ddp_item items[2];
	uint8_t *xdr;
	uint32_t l1 = 5001, l2 = 70001, off, kept_len = 0;
	uint8_t *kept = NULL;
	size_t kept_cap = 0;

	/* call: header, opaque<l1> inline (long), opaque<l2> as an item */
	rig_up(&g, tweak);
	s = &g.slots[g.nslots++];
	s->xid = 0x77;
	s->len = l2;
	s->data = malloc(l2);
	fill_pattern(s->data, s->xid, l2);
	xdr = s->xdr = malloc(sizeof(big) + 64);
	echo_call(xdr, s->xid, big, 0, 0, &items[0]);
	/* replace the argument: first an inline opaque of l1 pattern bytes, then the item */
	put32(xdr + 40, l1);
	fill_pattern(xdr + 44, s->xid ^ 0xff, l1);
	memset(xdr + 44 + l1, 0, 3);
	off = 44 + ((l1 + 3) & ~3u);
	put32(xdr + off, l2);
	items[0].offset = off + 4;
	items[0].len = l2;
	items[0].data = s->data;
	s->item = items[0];
	s->a.xdr = xdr;
	s->a.xdr_len = off + 4;
	s->a.items = &s->item;
	s->a.nitems = 1;
	s->a.max_reply = 128;
	g.hold = 1;
	CHECK_EQ_I(rpcrdma_eng_call(g.cl.eng, &s->a, s, g.now, &s->c), 0);
	pump(&g);
	CHECK_EQ_U(g.nheld, 1);
	if (g.nheld == 1) {
		uint32_t clen, n;
		size_t again;
		const uint8_t *call = rpcrdma_eng_req_call(g.held[0], &clen), *d;

		CHECK_EQ_U(clen, off + 4 + ((l2 + 3) & ~3u));
		d = echo_opaque(call, clen, 40, 0, 0, 0, &n);
		CHECK(d && n == l1 && check_pattern(d, s->xid ^ 0xff, l1) == l1);
		d = echo_opaque(call, clen, off, 0, 0, 0, &n);
		CHECK(d && n == l2 && check_pattern(d, s->xid, l2) == l2);
		/* the call is taken out of the request (lend_args), kept past the reply */
		kept = rpcrdma_eng_req_take_call(g.held[0], &kept_cap);
		CHECK(kept == call && kept_cap >= clen);
		CHECK(rpcrdma_eng_req_call(g.held[0], &n) == NULL);
		CHECK(rpcrdma_eng_req_take_call(g.held[0], &again) == NULL && !again);
		kept_len = clen;
		/* answer with an empty echo */
		g.hold = 0;
		{
			struct echo_reply_ctx *x = calloc(1, sizeof(*x));

			x->a.xdr = x->hdr;
			x->a.xdr_len = echo_reply(x->hdr, s->xid, NULL, 0, &x->item);
			rpcrdma_eng_req_set_user(g.held[0], x);
			CHECK_EQ_I(rpcrdma_eng_reply(g.sv.eng, g.held[0], &x->a, g.now), 0);
		}
		g.nheld = 0;
	}
	pump(&g);
	CHECK(s->done && s->status == 0);
	if (kept) {   /* the request is gone, its call intact, then given back */
		uint32_t n;
		const uint8_t *d = echo_opaque(kept, kept_len, off, 0, 0, 0, &n);

		CHECK(d && n == l2 && check_pattern(d, s->xid, l2) == l2);
		rpcrdma_eng_buf_put(g.sv.eng, kept, kept_cap);
	}
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.sent[RPCRDMA_NOMSG], 1);
	CHECK_EQ_U(ss.rdma_reads, want_reads);
	CHECK_EQ_U(cs.read_chunks, want_chunks);
	CHECK_EQ_U(ss.read_chunks, want_chunks);
	rig_down(&g);
}

static void test_long_call_with_item(void)
{
	long_call_with_item(NULL, 1, 1);
}

static void test_long_call_with_item_combined(void)
{
	long_call_with_item(combine_p0_cfg, 2, 2);
}

/* A reply too long for inline, without a result buffer: written into the reply chunk and
 * sent as RDMA_NOMSG (RFC 5666 §5.2). */
static void test_long_reply(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s;

	rig_up(&g, NULL);
	s = start(&g, 30000, 1, 0, REPLY_MAX(30000), 0);
	pump(&g);
	CHECK(s->done && s->status == 0 && s->verified);
	CHECK(!s->buf.used);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(ss.sent[RPCRDMA_NOMSG], 1);
	CHECK_EQ_U(cs.rcvd[RPCRDMA_NOMSG], 1);
	CHECK_EQ_U(ss.long_replies, 1);
	CHECK_EQ_U(cs.long_replies, 1);
	CHECK_EQ_U(ss.reply_chunk_bytes, 28 + 30000);
	rig_down(&g);
}

static void no_rrc_cfg(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	(void)c;
	s->reply_read_chunks = RPCRDMA_RRC_NEVER;
}

/* A reply that fits nowhere the client offered: RDMA_ERROR/ERR_CHUNK (RFC 8166 §4.5). */
static void test_reply_fits_nowhere(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s;

	rig_up(&g, no_rrc_cfg);
	s = start(&g, 30000, 1, 0, 256, 0);     /* no reply chunk: max_reply is small */
	pump(&g);
	CHECK(s->done);
	CHECK_EQ_U((uint32_t)s->status, (uint32_t)-RPCRDMA_ERR_PROTO);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(ss.errors[RPCRDMA_EC_REPLY_TOO_BIG], 1);
	CHECK_EQ_U(ss.errors[RPCRDMA_EC_ERR_CHUNK_SENT], 1);
	CHECK_EQ_U(cs.errors[RPCRDMA_EC_ERR_CHUNK_RCVD], 1);
	CHECK_EQ_U(ss.sent[RPCRDMA_ERROR], 1);
	CHECK_EQ_U(g.replies_done, 1);
	CHECK_EQ_U((uint32_t)g.reply_status[0], (uint32_t)-RPCRDMA_ERR_NOSPC);
	/* the connection goes on */
	s = start(&g, 10, 0, 0, 128, 0);
	pump(&g);
	CHECK(s->done && s->status == 0 && s->verified);
	rig_down(&g);
}

static void small_max(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	(void)c;
	s->max_message = 8192;
}

/* A call longer than the server's max_message is answered ERR_CHUNK, not read. */
static void test_call_too_long(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s;

	rig_up(&g, small_max);
	s = start(&g, 20000, 1, 1, 128, 0);
	pump(&g);
	CHECK(s->done);
	CHECK_EQ_U((uint32_t)s->status, (uint32_t)-RPCRDMA_ERR_PROTO);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(ss.errors[RPCRDMA_EC_TOO_LONG], 1);
	CHECK_EQ_U(ss.errors[RPCRDMA_EC_ERR_CHUNK_SENT], 1);
	CHECK_EQ_U(ss.rdma_reads, 0);
	CHECK_EQ_U(g.requests, 0);
	s = start(&g, 2000, 1, 1, 128, 0);
	pump(&g);
	CHECK(s->done && s->status == 0 && s->verified);
	rig_down(&g);
}

static void msgp_cfg(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	c->msgp_align = s->msgp_align = 64;
	c->msgp_thresh = s->msgp_thresh = 256;
}

/* RDMA_MSGP both ways: data longer than thresh lands align-aligned in the receive buffer
 * (RFC 5666 §4.3); shorter data is not padded. */
static void test_msgp(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s1, *s2;

	rig_up(&g, msgp_cfg);
	s1 = start(&g, 1000, 1, 0, 2000, 0);
	s2 = start(&g, 100, 1, 0, 2000, 0);
	pump(&g);
	CHECK(s1->done && s1->status == 0 && s1->verified);
	CHECK(s2->done && s2->status == 0 && s2->verified);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.sent[RPCRDMA_MSGP], 2);
	CHECK_EQ_U(ss.rcvd[RPCRDMA_MSGP], 2);
	CHECK_EQ_U(ss.sent[RPCRDMA_MSGP], 2);
	CHECK_EQ_U(cs.rcvd[RPCRDMA_MSGP], 2);
	CHECK_EQ_U(cs.read_chunks, 0);
	CHECK_EQ_U(g.bad_calls, 0);
	/* too big to pad inline: falls back to chunks */
	s1 = start(&g, 8000, 1, 1, 2000, 0);
	pump(&g);
	CHECK(s1->done && s1->status == 0 && s1->verified && s1->buf.used);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.sent[RPCRDMA_MSG], 1);
	rig_down(&g);
}

static void test_msgp_pad_rule(void)
{
	CHECK_EQ_I(rpcrdma_msgp_pad(64, 256, 36, 28, 1000), 0);   /* 64: aligned already */
	CHECK_EQ_U(rpcrdma_msgp_pad(64, 256, 36, 32, 1000), 60);
	CHECK_EQ_I(rpcrdma_msgp_pad(64, 256, 36, 32, 256), 0);    /* not above thresh */
	CHECK_EQ_I(rpcrdma_msgp_pad(0, 0, 36, 32, 1000), 0);      /* not MSGP */
}

static void rrc_cfg(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	(void)c;
	s->reply_read_chunks = 1;
	s->done_timeout_ms = 1000;
}

/* RFC 5666 §3.5/§3.8: read chunks in replies, pulled by the client, then RDMA_DONE. */
static void test_read_chunks_in_reply_with_done(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s1, *s2;

	rig_up(&g, rrc_cfg);
	/* no write chunk: the result is offered as a read chunk at its position */
	s1 = start(&g, 20000, 1, 0, 256, 0);
	/* a long reply without reply chunk: offered as a position-zero read chunk */
	pump(&g);
	CHECK(s1->done && s1->status == 0 && s1->verified);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.rdma_reads, 1);
	CHECK_EQ_U(cs.rdma_read_bytes, 20000);
	CHECK_EQ_U(cs.sent[RPCRDMA_DONE], 1);
	CHECK_EQ_U(ss.rcvd[RPCRDMA_DONE], 1);
	CHECK_EQ_U(g.replies_done, 1);
	CHECK_EQ_U(g.reply_status[0], 0);
	CHECK_EQ_U(cs.credits_in_use, 0);       /* the DONE's credit came back */
	CHECK_EQ_U(ss.mrs_live, 2);             /* the offered chunk was released */
	g.inline_results = 1;
	s2 = start(&g, 5000, 0, 0, 256, 0);
	/* a reply of 5028 bytes with no item to offer: the whole reply as a position-zero
	 * read chunk */
	pump(&g);
	CHECK(s2->done && s2->status == 0 && s2->verified);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.long_replies, 1);
	CHECK_EQ_U(cs.sent[RPCRDMA_DONE], 2);
	CHECK_EQ_U(g.replies_done, 2);
	rig_down(&g);
}

/* By default a reply too long for what the client offered goes as read chunks when the
 * client's private data says it takes them (ours does): the client pulls the whole reply
 * and answers RDMA_DONE. */
static void test_long_reply_auto_read_chunks(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s;

	rig_up(&g, NULL);
	g.inline_results = 1;
	s = start(&g, 300000, 1, 0, 256, 0);   /* a 300 kB reply, no reply chunk offered */
	pump(&g);
	CHECK(s->done && s->status == 0 && s->verified);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(ss.sent[RPCRDMA_NOMSG], 1);
	CHECK_EQ_U(ss.errors[RPCRDMA_EC_ERR_CHUNK_SENT], 0);
	CHECK_EQ_U(cs.long_replies, 1);
	CHECK_EQ_U(cs.sent[RPCRDMA_DONE], 1);
	CHECK_EQ_U(ss.rcvd[RPCRDMA_DONE], 1);
	CHECK_EQ_U(g.replies_done, 1);
	CHECK_EQ_U(g.reply_status[0], 0);
	CHECK_EQ_U(ss.mrs_live, 2);            /* only the send and receive areas */
	rig_down(&g);
}

/* A client whose private data is RFC 8797's alone (an RFC 8166 peer) never gets read
 * chunks in a reply: ERR_CHUNK as before. */
static void test_no_reply_reads_for_rfc8166_peer(void)
{
	static const uint8_t rfc8797_only[8] = { 0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3 };
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s;

	rig_up(&g, NULL);
	/* the server learns the peer's data before it starts; here it is told again, as
	 * an RFC 8166 peer would have sent it */
	rpcrdma_eng_set_peer_pdata(g.sv.eng, rfc8797_only, sizeof(rfc8797_only));
	g.inline_results = 1;
	s = start(&g, 30000, 1, 0, 256, 0);
	pump(&g);
	CHECK(s->done);
	CHECK_EQ_U((uint32_t)s->status, (uint32_t)-RPCRDMA_ERR_PROTO);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(ss.errors[RPCRDMA_EC_REPLY_TOO_BIG], 1);
	CHECK_EQ_U(ss.sent[RPCRDMA_ERROR], 1);
	CHECK_EQ_U(cs.sent[RPCRDMA_DONE], 0);
	rig_down(&g);
}

static void one_done_slot(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	(void)c;
	s->max_done_pending = 1;
}

/* With one RDMA_DONE slot, a second long reply waits for the first DONE instead of
 * failing; both arrive whole. */
static void test_done_slot_wait(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s1, *s2;

	rig_up(&g, one_done_slot);
	s1 = start(&g, 16, 0, 0, 128, 0);      /* a first exchange raises the grant above 1 */
	pump(&g);
	CHECK(s1->done && s1->status == 0);
	g.inline_results = 1;
	g.hold = 1;
	s1 = start(&g, 20000, 1, 0, 256, 0);
	s2 = start(&g, 24000, 1, 0, 256, 0);
	pump(&g);
	CHECK_EQ_U(g.nheld, 2);
	/* answer both at once: the second has no slot yet */
	g.hold = 0;
	answer(&g, g.held[0]);
	answer(&g, g.held[1]);
	g.nheld = 0;
	stats(&g, &cs, &ss);
	CHECK_EQ_U(ss.sent[RPCRDMA_NOMSG], 1);   /* the second waits for the first DONE */
	pump(&g);
	CHECK(s1->done && s1->status == 0 && s1->verified);
	CHECK(s2->done && s2->status == 0 && s2->verified);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.sent[RPCRDMA_DONE], 2);
	CHECK_EQ_U(ss.errors[RPCRDMA_EC_ERR_CHUNK_SENT], 0);
	CHECK_EQ_U(g.replies_done, 3);
	rig_down(&g);
}

/* A read-list entry is 24 bytes (RFC 5666 §4.2). A call with one read chunk whose header
 * and inline part fill the peer's 4096-byte threshold exactly goes as RDMA_MSG; four
 * bytes more, as RDMA_NOMSG. Either way the server assembles the same call. want_reads:
 * the read chunks it must have offered (a long call's counts one). */
static void read_entry_call(uint32_t pad_len, uint32_t want_proc, uint32_t want_reads)
{
	struct rig g;
	struct echo_slot *s;
	struct rpcrdma_eng_stats cs, ss;
	uint32_t off, item_len = 100;
	uint8_t *xdr;

	rig_up(&g, NULL);
	s = &g.slots[g.nslots++];
	s->xid = 0x55;
	s->len = item_len;
	s->data = malloc(item_len);
	fill_pattern(s->data, s->xid, item_len);
	xdr = s->xdr = malloc(64 + pad_len);
	echo_call(xdr, s->xid, s->data, 0, 0, &s->item);
	put32(xdr + 40, pad_len);
	fill_pattern(xdr + 44, s->xid ^ 0xff, pad_len);
	off = 44 + ((pad_len + 3) & ~3u);
	put32(xdr + off, item_len);
	s->item.offset = off + 4;
	s->item.len = item_len;
	s->item.data = s->data;
	s->a.xdr = xdr;
	s->a.xdr_len = off + 4;
	s->a.items = &s->item;
	s->a.nitems = 1;
	s->a.max_reply = 128;
	g.hold = 1;
	CHECK_EQ_I(rpcrdma_eng_call(g.cl.eng, &s->a, s, g.now, &s->c), 0);
	pump(&g);
	CHECK_EQ_U(g.nheld, 1);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.sent[want_proc], 1);
	CHECK_EQ_U(cs.read_chunks, want_reads);
	CHECK_EQ_U(ss.errors[RPCRDMA_EC_ERR_CHUNK_SENT] + cs.errors[RPCRDMA_EC_DISCONNECT], 0);
	if (g.nheld == 1) {
		uint32_t clen, n;
		const uint8_t *call = rpcrdma_eng_req_call(g.held[0], &clen), *d;

		CHECK_EQ_U(clen, off + 4 + ((item_len + 3) & ~3u));
		d = echo_opaque(call, clen, 40, 0, 0, 0, &n);
		CHECK(d && n == pad_len && check_pattern(d, s->xid ^ 0xff, pad_len) == pad_len);
		d = echo_opaque(call, clen, off, 0, 0, 0, &n);
		CHECK(d && n == item_len && check_pattern(d, s->xid, item_len) == item_len);
		g.hold = 0;
		answer(&g, g.held[0]);
		g.nheld = 0;
	}
	pump(&g);
	CHECK(s->done);
	rig_down(&g);
}

static void test_read_entry_len_call(void)
{
	read_entry_call(3996, RPCRDMA_MSG, 1);     /* 52-byte header + 4044 = 4096 */
	read_entry_call(4000, RPCRDMA_NOMSG, 1);   /* 4100: too long by the 4 bytes */
}

/* A DDP item goes inline when the whole call, item included, fits the threshold (as
 * Linux's client sends it): a 28-byte header with empty lists + 4068 = 4096; four bytes
 * more, and the item goes as a read chunk. */
static void test_item_inline_call(void)
{
	read_entry_call(3920, RPCRDMA_MSG, 0);
	read_entry_call(3924, RPCRDMA_MSG, 1);
}

/* The same boundary in a reply whose result goes as a read chunk (RFC 5666 §3.5): a header
 * of 52 bytes and 4044 inline bytes fit the client's 4096-byte receive; 4048 do not, and
 * the whole reply goes as a position-zero read chunk instead. The client gets the same
 * reply either way and no connection breaks. */
struct rrc_reply {
	uint8_t *xdr, *data;
	struct rpcrdma_ddp_item item;
	struct rpcrdma_reply_args a;
};

static void read_entry_reply(uint32_t pad_len, uint32_t want_long)
{
	struct rig g;
	struct echo_slot *s;
	struct rpcrdma_eng_stats cs, ss;
	struct rrc_reply x;
	uint32_t off, item_len = 5000, rlen, n;
	const uint8_t *rep, *d;

	rig_up(&g, NULL);
	g.hold = 1;
	s = start(&g, 16, 0, 0, 256, 0);      /* no write chunk, no reply chunk */
	s->keep_reply = 1;
	pump(&g);
	CHECK_EQ_U(g.nheld, 1);
	if (g.nheld != 1) {
		rig_down(&g);
		return;
	}
	memset(&x, 0, sizeof(x));
	x.data = malloc(item_len);
	x.xdr = malloc(64 + pad_len);
	fill_pattern(x.data, s->xid, item_len);
	put32(x.xdr, s->xid);
	put32(x.xdr + 4, 1);
	memset(x.xdr + 8, 0, 16);
	put32(x.xdr + 24, pad_len);
	fill_pattern(x.xdr + 28, s->xid ^ 0xff, pad_len);
	off = 28 + ((pad_len + 3) & ~3u);
	put32(x.xdr + off, item_len);
	x.item.offset = off + 4;
	x.item.len = item_len;
	x.item.data = x.data;
	x.a.xdr = x.xdr;
	x.a.xdr_len = off + 4;
	x.a.items = &x.item;
	x.a.nitems = 1;
	CHECK_EQ_I(rpcrdma_eng_reply(g.sv.eng, g.held[0], &x.a, g.now), 0);
	g.nheld = 0;
	g.hold = 0;
	pump(&g);
	CHECK(s->done && s->status == 0);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.long_replies, want_long);
	CHECK_EQ_U(cs.sent[RPCRDMA_DONE], 1);
	CHECK_EQ_U(cs.errors[RPCRDMA_EC_DISCONNECT] + ss.errors[RPCRDMA_EC_DISCONNECT], 0);
	CHECK_EQ_U(g.cl.fatal + g.sv.fatal, 0);
	rep = s->reply;
	rlen = s->reply_len;
	CHECK_EQ_U(rlen, off + 4 + ((item_len + 3) & ~3u));
	d = rep ? echo_opaque(rep, rlen, 24, 0, 0, 0, &n) : NULL;
	CHECK(d && n == pad_len && check_pattern(d, s->xid ^ 0xff, pad_len) == pad_len);
	d = rep ? echo_opaque(rep, rlen, off, 0, 0, 0, &n) : NULL;
	CHECK(d && n == item_len && check_pattern(d, s->xid, item_len) == item_len);
	free(s->reply);
	free(x.xdr);
	free(x.data);
	rig_down(&g);
}

static void test_read_entry_len_reply(void)
{
	read_entry_reply(4012, 0);   /* 52 + 4044 = 4096: read chunk, header inline */
	read_entry_reply(4016, 1);   /* 4100: the whole reply as a position-zero chunk */
}

/* ---- raw peers: hand-written messages against one engine ---- */

struct raw {
	struct rpcrdma_ep *ep;
	uint8_t *mem;
	struct rpcrdma_mr *mr;
	int recvs;
};

#define RAW_SLOT 8192

static void raw_post_recvs(struct raw *r, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		uint8_t *slot = r->mem + (size_t)(8 + r->recvs % 8) * RAW_SLOT;
		struct rpcrdma_sge sg = { r->mr, slot, RAW_SLOT };

		CHECK_EQ_I(rpcrdma_post_recv(r->ep, &sg, slot), 0);
		r->recvs++;
	}
}

static void raw_send(struct raw *r, const uint8_t *msg, uint32_t len)
{
	static int k;
	uint8_t *slot = r->mem + (size_t)(k++ % 8) * RAW_SLOT;
	struct rpcrdma_sge sg = { r->mr, slot, len };

	memcpy(slot, msg, len);
	CHECK_EQ_I(rpcrdma_post_send(r->ep, &sg, NULL), 0);
}

/* Poll the raw side; copy the last message received to out and return its length (0 if
 * none). Each message received is replaced by a new receive. */
static uint32_t raw_poll(struct raw *r, uint8_t *out, int *disc)
{
	struct rpcrdma_cqe c;
	uint32_t got = 0;

	while (rpcrdma_ep_poll(r->ep, &c, 1) == 1) {
		if (c.op == RPCRDMA_OP_DISCONNECT && disc)
			(*disc)++;
		if (c.op == RPCRDMA_OP_RECV && c.status == 0) {
			got = c.len;
			if (out)
				memcpy(out, c.ctx, got);
			raw_post_recvs(r, 1);
		}
	}
	return got;
}

struct raw_rig {
	struct rig g;       /* one engine side in use */
	struct raw raw;
	struct rpcrdma_eng_stats st;
};

/* What raw_up gives the engine as its raw peer's private data (none by default), and
 * the mock's faults (none) */
static const uint8_t *raw_peer_pd;
static size_t raw_peer_pd_len;
static const struct rpcrdma_mock_faults *raw_faults;

/* An engine of role `role` connected to a raw peer. */
static void raw_up(struct raw_rig *x, uint32_t role, cfg_fn tweak)
{
	struct rpcrdma_eng_config cfg, other;
	struct rpcrdma_eng_lower lo;
	struct rpcrdma_eng_upper up = { .ctx = &x->g };
	struct side *s;

	memset(x, 0, sizeof(*x));
	x->g.now = 1000;
	rpcrdma_eng_config_default(&cfg, role);
	rpcrdma_eng_config_default(&other, role);
	if (tweak) {
		if (role == RPCRDMA_ENG_CLIENT)
			tweak(&cfg, &other);
		else
			tweak(&other, &cfg);
	}
	CHECK_EQ_I(rpcrdma_mock_open(&x->g.p), 0);
	if (raw_faults)
		CHECK_EQ_I(rpcrdma_mock_set_faults(x->g.p, raw_faults), 0);
	s = role == RPCRDMA_ENG_CLIENT ? &x->g.cl : &x->g.sv;
	CHECK_EQ_I(rpcrdma_mock_pair(x->g.p, NULL, 0, NULL, 0, &s->ep, &x->raw.ep), 0);
	if (role == RPCRDMA_ENG_CLIENT) {
		up.call_done = on_call_done;
		up.fatal = cl_fatal;
		up.bc_request = on_bc_request;
	} else {
		up.request = on_request;
		up.reply_done = on_reply_done;
		up.fatal = sv_fatal;
		up.bc_done = on_bc_done;
	}
	rpcrdma_eng_lower_ep(&lo, x->g.p, s->ep);
	CHECK_EQ_I(rpcrdma_eng_create(&cfg, &up, &s->eng), 0);
	rpcrdma_eng_set_peer_pdata(s->eng, raw_peer_pd, raw_peer_pd_len);
	CHECK_EQ_I(rpcrdma_eng_start(s->eng, &lo, x->g.now), 0);
	x->raw.mem = calloc(16, RAW_SLOT);
	CHECK_EQ_U(rpcrdma_mr_reg(x->g.p, x->raw.mem, 16 * RAW_SLOT,
				  RPCRDMA_ACC_LOCAL | RPCRDMA_ACC_REMOTE_READ |
				  RPCRDMA_ACC_REMOTE_WRITE, &x->raw.mr), 0);
}

static void raw_pump(struct raw_rig *x)
{
	struct rpcrdma_cqe c[16];
	struct side *s = x->g.cl.eng ? &x->g.cl : &x->g.sv;
	int i, n, quiet = 0;

	while (quiet < 3) {
		n = rpcrdma_ep_poll(s->ep, c, 16);
		for (i = 0; i < n; i++)
			rpcrdma_eng_on_cqe(s->eng, &c[i], x->g.now);
		quiet = n > 0 ? 0 : quiet + 1;
	}
}

static void raw_down(struct raw_rig *x)
{
	struct rpcrdma_mock_stats ms;
	struct side *s = x->g.cl.eng ? &x->g.cl : &x->g.sv;
	int i;

	for (i = 0; i < x->g.nheld; i++)
		rpcrdma_eng_req_drop(s->eng, x->g.held[i]);
	rpcrdma_eng_stats(s->eng, &x->st);
	rpcrdma_ep_close(s->ep);
	rpcrdma_ep_close(x->raw.ep);
	rpcrdma_eng_destroy(s->eng);
	CHECK_EQ_I(rpcrdma_mr_dereg(x->raw.mr), 0);
	CHECK_EQ_I(rpcrdma_mock_get_stats(x->g.p, &ms), 0);
	CHECK_EQ_U(ms.mrs_live, 0);
	rpcrdma_prov_close(x->g.p);
	free(x->raw.mem);
	free_slots(&x->g);
}

/* A transport header (+ optional RPC call body) with an empty chunk list. */
static uint32_t raw_msg(uint8_t *b, uint32_t xid, uint32_t vers, uint32_t credits,
			uint32_t proc, int body)
{
	uint32_t n = 16;

	put32(b, xid);
	put32(b + 4, vers);
	put32(b + 8, credits);
	put32(b + 12, proc);
	if (proc <= RPCRDMA_MSGP) {
		put32(b + 16, 0);
		put32(b + 20, 0);
		put32(b + 24, 0);
		n = 28;
	}
	if (body) {
		uint8_t item_unused[4];
		struct rpcrdma_ddp_item it;

		(void)item_unused;
		n += echo_call(b + n, xid, (const uint8_t *)"abcd", 4, 0, &it);
		fill_pattern(b + n - 4, xid, 4);
	}
	return n;
}

/* Server: wrong version → ERR_VERS with the supported range, the message's XID. */
static void test_server_err_vers(void)
{
	struct raw_rig x;
	uint8_t m[256], out[RAW_SLOT];
	uint32_t n;

	raw_up(&x, RPCRDMA_ENG_SERVER, NULL);
	raw_post_recvs(&x.raw, 1);
	n = raw_msg(m, 0xabc, 2, 1, RPCRDMA_MSG, 1);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	n = raw_poll(&x.raw, out, NULL);
	CHECK_EQ_U(n, 28);
	CHECK_EQ_U(get32(out), 0xabc);
	CHECK_EQ_U(get32(out + 4), 1);
	CHECK_EQ_U(get32(out + 12), RPCRDMA_ERROR);
	CHECK_EQ_U(get32(out + 16), RPCRDMA_WIRE_ERR_VERS);
	CHECK_EQ_U(get32(out + 20), 1);
	CHECK_EQ_U(get32(out + 24), 1);
	CHECK_EQ_U(x.g.requests, 0);
	raw_down(&x);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_ERR_VERS_SENT], 1);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_DECODE], 1);
}

/* Server: a bad chunk list → ERR_CHUNK; a truncated header → ERR_CHUNK; then a good call
 * still works on the same connection. */
/* A malformed RDMA_ERROR or RDMA_DONE is never answered with an RDMA_ERROR (two peers
 * would answer each other forever; a DONE answers no call); a malformed call still is. */
static void test_server_silent_on_bad_error_or_done(void)
{
	struct raw_rig x;
	uint8_t m[256], out[RAW_SLOT];
	uint32_t n;

	raw_up(&x, RPCRDMA_ENG_SERVER, NULL);
	raw_post_recvs(&x.raw, 1);
	n = raw_msg(m, 0x61, 1, 1, RPCRDMA_ERROR, 0);
	raw_send(&x.raw, m, 16);          /* an RDMA_ERROR without its code */
	raw_pump(&x);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 0);
	put32(m + 16, 9);                 /* no such error code: read, not answered */
	raw_send(&x.raw, m, 20);
	raw_pump(&x);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 0);
	n = raw_msg(m, 0x62, 1, 1, RPCRDMA_ERROR, 0);
	put32(m + 16, RPCRDMA_WIRE_ERR_VERS);
	raw_send(&x.raw, m, 20);          /* ERR_VERS without its range: truncated */
	raw_pump(&x);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 0);
	n = raw_msg(m, 0x63, 2, 1, RPCRDMA_DONE, 0);
	raw_send(&x.raw, m, n);           /* a DONE of version 2 */
	raw_pump(&x);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 0);
	n = raw_msg(m, 0x64, 2, 1, RPCRDMA_ERROR, 0);
	put32(m + 16, RPCRDMA_WIRE_ERR_CHUNK);
	raw_send(&x.raw, m, 20);          /* an ERROR of version 2 */
	raw_pump(&x);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 0);
	n = raw_msg(m, 0x65, 2, 1, RPCRDMA_MSG, 1);
	raw_send(&x.raw, m, n);           /* a call of version 2: ERR_VERS */
	raw_pump(&x);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 28);
	CHECK_EQ_U(get32(out), 0x65);
	CHECK_EQ_U(get32(out + 16), RPCRDMA_WIRE_ERR_VERS);
	raw_down(&x);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_DECODE], 5);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_UNEXPECTED], 1);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_ERR_VERS_SENT], 1);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_ERR_CHUNK_SENT], 0);
	CHECK_EQ_U(x.st.sent[RPCRDMA_ERROR], 1);
}

/* Calls go up in the order they arrived even when the first has a read chunk still being
 * pulled and the second is complete at once: the order a stream transport keeps. */
static void test_server_calls_in_order(void)
{
	struct raw_rig x;
	uint8_t m[256], out[RAW_SLOT];
	uint32_t n, item = 3000, src = 12 * RAW_SLOT;
	uint64_t off;

	raw_up(&x, RPCRDMA_ENG_SERVER, NULL);
	raw_post_recvs(&x.raw, 4);
	n = raw_msg(m, 0x70, 1, 8, RPCRDMA_MSG, 1);      /* raises the grant to 8 */
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK(raw_poll(&x.raw, out, NULL) > 28);
	/* call 0x71: its 3000-byte argument in a read chunk at position 44 */
	fill_pattern(x.raw.mem + src, 0x71, item);
	off = x.raw.mr->offset + src;
	put32(m, 0x71);
	put32(m + 4, 1);
	put32(m + 8, 8);
	put32(m + 12, RPCRDMA_MSG);
	put32(m + 16, 1);
	put32(m + 20, 44);
	put32(m + 24, x.raw.mr->handle);
	put32(m + 28, item);
	put32(m + 32, (uint32_t)(off >> 32));
	put32(m + 36, (uint32_t)off);
	put32(m + 40, 0);
	put32(m + 44, 0);
	put32(m + 48, 0);
	n = 52 + echo_call(m + 52, 0x71, x.raw.mem + src, item, 1, &(struct rpcrdma_ddp_item){ 0 });
	raw_send(&x.raw, m, n);
	n = raw_msg(m, 0x72, 1, 8, RPCRDMA_MSG, 1);      /* complete on arrival */
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK_EQ_U(x.g.requests, 3);
	CHECK_EQ_U(x.g.order[1], 0x71);
	CHECK_EQ_U(x.g.order[2], 0x72);
	CHECK_EQ_U(x.g.bad_calls, 0);
	raw_down(&x);
	CHECK_EQ_U(x.st.rdma_reads, 1);
}

/* One segment of a chunk at byte `at` of mr: handle, length, 64-bit offset. */
static uint8_t *put_seg(uint8_t *p, const struct rpcrdma_mr *mr, uint32_t len, uint64_t at)
{
	uint64_t off = mr->offset + at;

	put32(p, mr->handle);
	put32(p + 4, len);
	put32(p + 8, (uint32_t)(off >> 32));
	put32(p + 12, (uint32_t)off);
	return p + 16;
}

static uint8_t *put_read(uint8_t *p, const struct rpcrdma_mr *mr, uint32_t pos, uint32_t len,
			 uint64_t at)
{
	put32(p, 1);
	put32(p + 4, pos);
	return put_seg(p + 8, mr, len, at);
}

/* The room for a reply (rpcrdma_eng_req_reply_cap) when the echoed write list alone is
 * larger than the peer's inline size (1024: no private data): none inline, so only a
 * reply chunk holds it; it once wrapped around to 4 GiB. */
static void test_reply_cap_write_list_past_inline(void)
{
	struct raw_rig x;
	uint8_t m[2048], out[RAW_SLOT], *p;
	uint32_t i, j, n;
	int disc = 0;

	raw_up(&x, RPCRDMA_ENG_SERVER, NULL);
	raw_post_recvs(&x.raw, 4);
	n = raw_msg(m, 0x8f, 1, 4, RPCRDMA_MSG, 1);      /* raises the grant to 4 */
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK(raw_poll(&x.raw, out, NULL) > 28);
	x.g.hold = 1;
	for (n = 0; n < 3; n++) {
		p = m;
		put32(p, 0x90 + n), put32(p + 4, 1), put32(p + 8, 4), put32(p + 12, RPCRDMA_MSG);
		put32(p + 16, 0);
		p += 20;
		for (i = 0; i < (n ? 8u : 1u); i++) {      /* 1 chunk of 1, 8 of 8, 8 of 7 */
			put32(p, 1), put32(p + 4, n ? 9 - n : 1);
			p += 8;
			for (j = 0; j < (n ? 9 - n : 1u); j++)
				p = put_seg(p, x.raw.mr, 16, 0);
		}
		put32(p, 0);
		p += 4;
		if (n == 2) {            /* and a reply chunk of 4096 bytes */
			put32(p, 1), put32(p + 4, 1);
			p = put_seg(p + 8, x.raw.mr, 4096, 0);
		} else {
			put32(p, 0);
			p += 4;
		}
		p += echo_call(p, 0x90 + n, (const uint8_t *)"abcd", 4, 0, &(struct rpcrdma_ddp_item){ 0 });
		fill_pattern(p - 4, 0x90 + n, 4);
		raw_send(&x.raw, m, (uint32_t)(p - m));
		raw_pump(&x);
		CHECK_EQ_I(x.g.nheld, (int)n + 1);
		CHECK_EQ_I(x.g.sv.fatal, 0);
	}
	/* 1024 - (16 + 4 + 8 + 16 + 4 + 4) */
	CHECK_EQ_U(rpcrdma_eng_req_reply_cap(x.g.held[0]), 972);
	CHECK_EQ_U(rpcrdma_eng_req_reply_cap(x.g.held[1]), 0);
	CHECK_EQ_U(rpcrdma_eng_req_reply_cap(x.g.held[2]), 4096);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 0);
	/* answered: the one whose header cannot go inline gets ERR_CHUNK, the others go on */
	for (i = 0; i < 3; i++) {
		answer(&x.g, x.g.held[i]);
		raw_pump(&x);
		CHECK(raw_poll(&x.raw, out, &disc) >= 20);
		CHECK_EQ_U(get32(out), 0x90 + i);
		CHECK_EQ_U(get32(out + 12), i == 1 ? RPCRDMA_ERROR : RPCRDMA_MSG);
	}
	CHECK_EQ_U(get32(out + 24), 7);                /* the last: its write list echoed */
	CHECK_EQ_I(disc, 0);
	CHECK_EQ_I(x.g.sv.fatal, 0);
	x.g.nheld = 0;
	raw_down(&x);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_ERR_CHUNK_SENT], 1);
}

/* Zero-length segments in a read, write or reply chunk are served (they carry nothing),
 * a chunk of nothing included; only a call whose whole stream is an empty position-zero
 * chunk gets ERR_CHUNK, and the connection goes on. */
static void test_server_zero_length_segments(void)
{
	enum { A = 0, B0 = 8192, B1 = 16384, B2 = 24576, C0 = 32768, C1 = 40960 };
	struct raw_rig x;
	struct rpcrdma_mr *mr;
	uint8_t m[512], out[RAW_SLOT], *p, *buf = calloc(1, 65536), got[8192];
	uint32_t n;
	int disc = 0;

	raw_up(&x, RPCRDMA_ENG_SERVER, NULL);
	CHECK_EQ_I(rpcrdma_mr_reg(x.g.p, buf, 65536, RPCRDMA_ACC_LOCAL | RPCRDMA_ACC_REMOTE_READ |
				  RPCRDMA_ACC_REMOTE_WRITE, &mr), 0);
	raw_post_recvs(&x.raw, 4);
	n = raw_msg(m, 0x80, 1, 8, RPCRDMA_MSG, 1);      /* raises the grant to 8 */
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK(raw_poll(&x.raw, out, NULL) > 28);

	/* 0x81: its 3000-byte argument behind an empty segment of the same chunk; the result
	 * into a write chunk of segments 0, 2000 and 2000 bytes */
	fill_pattern(buf + A, 0x81, 3000);
	memset(buf + B0, 0xee, 16);
	p = m;
	put32(p, 0x81), put32(p + 4, 1), put32(p + 8, 8), put32(p + 12, RPCRDMA_MSG);
	p = put_read(p + 16, mr, 44, 0, A + 4000);
	p = put_read(p, mr, 44, 3000, A);
	put32(p, 0), put32(p + 4, 1), put32(p + 8, 3);
	p = put_seg(p + 12, mr, 0, B0);
	p = put_seg(p, mr, 2000, B1);
	p = put_seg(p, mr, 2000, B2);
	put32(p, 0), put32(p + 4, 0);
	p += 8;
	p += echo_call(p, 0x81, buf + A, 3000, 1, &(struct rpcrdma_ddp_item){ 0 });
	raw_send(&x.raw, m, (uint32_t)(p - m));
	raw_pump(&x);
	n = raw_poll(&x.raw, out, &disc);
	CHECK_EQ_U(n, 84 + ECHO_REPLY_HDR + 4);
	CHECK_EQ_U(get32(out), 0x81);
	CHECK_EQ_U(get32(out + 12), RPCRDMA_MSG);
	CHECK_EQ_U(get32(out + 16), 0);                 /* no read list */
	CHECK_EQ_U(get32(out + 20), 1);                 /* one write chunk, three segments */
	CHECK_EQ_U(get32(out + 24), 3);
	CHECK_EQ_U(get32(out + 32), 0);
	CHECK_EQ_U(get32(out + 48), 2000);
	CHECK_EQ_U(get32(out + 64), 1000);
	CHECK_EQ_U(get32(out + 84 + ECHO_REPLY_HDR), 3000);
	memcpy(got, buf + B1, 2000);
	memcpy(got + 2000, buf + B2, 1000);
	CHECK_EQ_U(check_pattern(got, 0x81, 3000), 3000);
	CHECK_EQ_U(buf[B0], 0xee);

	/* 0x82: a read chunk of one empty segment: an empty opaque */
	p = m;
	put32(p, 0x82), put32(p + 4, 1), put32(p + 8, 8), put32(p + 12, RPCRDMA_MSG);
	p = put_read(p + 16, mr, 44, 0, A);
	put32(p, 0), put32(p + 4, 0), put32(p + 8, 0);
	p += 12;
	p += echo_call(p, 0x82, buf + A, 0, 1, &(struct rpcrdma_ddp_item){ 0 });
	raw_send(&x.raw, m, (uint32_t)(p - m));
	raw_pump(&x);
	n = raw_poll(&x.raw, out, &disc);
	CHECK_EQ_U(n, 28 + ECHO_REPLY_HDR + 4);
	CHECK_EQ_U(get32(out), 0x82);
	CHECK_EQ_U(get32(out + 12), RPCRDMA_MSG);
	CHECK_EQ_U(get32(out + 28 + ECHO_REPLY_HDR), 0);

	/* 0x83: a 6000-byte argument; the reply goes into a reply chunk of segments 0 and
	 * 8192 bytes */
	fill_pattern(buf + A, 0x83, 6000);
	p = m;
	put32(p, 0x83), put32(p + 4, 1), put32(p + 8, 8), put32(p + 12, RPCRDMA_MSG);
	p = put_read(p + 16, mr, 44, 6000, A);
	put32(p, 0), put32(p + 4, 0), put32(p + 8, 1), put32(p + 12, 2);
	p = put_seg(p + 16, mr, 0, C0);
	p = put_seg(p, mr, 8192, C1);
	p += echo_call(p, 0x83, buf + A, 6000, 1, &(struct rpcrdma_ddp_item){ 0 });
	raw_send(&x.raw, m, (uint32_t)(p - m));
	raw_pump(&x);
	n = raw_poll(&x.raw, out, &disc);
	CHECK_EQ_U(n, 64);
	CHECK_EQ_U(get32(out), 0x83);
	CHECK_EQ_U(get32(out + 12), RPCRDMA_NOMSG);
	CHECK_EQ_U(get32(out + 24), 1);                 /* the reply chunk, two segments */
	CHECK_EQ_U(get32(out + 28), 2);
	CHECK_EQ_U(get32(out + 36), 0);
	CHECK_EQ_U(get32(out + 52), ECHO_REPLY_HDR + 4 + 6000);
	CHECK_EQ_U(get32(buf + C1), 0x83);
	CHECK_EQ_U(get32(buf + C1 + ECHO_REPLY_HDR), 6000);
	CHECK_EQ_U(check_pattern(buf + C1 + ECHO_REPLY_HDR + 4, 0x83, 6000), 6000);

	/* 0x84: a position-zero chunk of nothing is a call of no bytes: ERR_CHUNK */
	p = m;
	put32(p, 0x84), put32(p + 4, 1), put32(p + 8, 8), put32(p + 12, RPCRDMA_NOMSG);
	p = put_read(p + 16, mr, 0, 0, A);
	put32(p, 0), put32(p + 4, 0), put32(p + 8, 0);
	p += 12;
	raw_send(&x.raw, m, (uint32_t)(p - m));
	raw_pump(&x);
	CHECK_EQ_U(raw_poll(&x.raw, out, &disc), 20);
	CHECK_EQ_U(get32(out), 0x84);
	CHECK_EQ_U(get32(out + 12), RPCRDMA_ERROR);
	CHECK_EQ_U(get32(out + 16), RPCRDMA_WIRE_ERR_CHUNK);

	n = raw_msg(m, 0x85, 1, 8, RPCRDMA_MSG, 1);      /* the connection goes on */
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK(raw_poll(&x.raw, out, &disc) > 28);
	CHECK_EQ_U(get32(out), 0x85);
	CHECK_EQ_I(disc, 0);
	CHECK_EQ_I(x.g.sv.fatal, 0);
	CHECK_EQ_U(x.g.requests, 5);
	CHECK_EQ_U(x.g.bad_calls, 0);
	CHECK_EQ_I(rpcrdma_mr_dereg(mr), 0);
	raw_down(&x);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_ERR_CHUNK_SENT], 1);
	CHECK_EQ_U(x.st.rdma_reads, 2);
	CHECK_EQ_U(x.st.rdma_writes, 2);
	free(buf);
}

/* ---- remote invalidation (RFC 8797 §3.2) ---- */

/* The RFC 8797 block of a client that takes Send With Invalidate (as Linux's does), 1 KiB
 * each way. */
static const uint8_t pd_remote_inv[8] = { 0xf6, 0xab, 0x0e, 0x18, 1, RPCRDMA_PDATA_F_REMOTE_INV,
					  0, 0 };

struct inv_mem {
	uint8_t *buf;
	struct rpcrdma_mr *mr;
};

static struct rpcrdma_mr *inv_reg(struct raw_rig *x, struct inv_mem *m)
{
	m->buf = calloc(1, 32768);
	CHECK_EQ_I(rpcrdma_mr_reg(x->g.p, m->buf, 32768, RPCRDMA_ACC_LOCAL |
				  RPCRDMA_ACC_REMOTE_READ | RPCRDMA_ACC_REMOTE_WRITE, &m->mr), 0);
	return m->mr;
}

static void inv_unreg(struct inv_mem *m)
{
	CHECK_EQ_I(rpcrdma_mr_dereg(m->mr), 0);
	free(m->buf);
}

/* One echo call from the raw client with its argument (600 bytes) in a read chunk of rd
 * or inline (NULL), a write chunk of wr for the result, a reply chunk of rp (NULL: none
 * of either), all in the first bytes of their registrations. Returns the reply's proc;
 * the connection must stand. */
static uint32_t inv_call(struct raw_rig *x, uint32_t xid, struct inv_mem *rd, struct inv_mem *wr,
			 struct inv_mem *rp)
{
	uint8_t m[512], out[RAW_SLOT], *p = m, arg[600];
	int disc = 0;

	fill_pattern(arg, xid, sizeof(arg));
	put32(p, xid), put32(p + 4, 1), put32(p + 8, 8), put32(p + 12, RPCRDMA_MSG);
	p += 16;
	if (rd) {
		memcpy(rd->buf, arg, sizeof(arg));
		p = put_read(p, rd->mr, 44, sizeof(arg), 0);
	}
	put32(p, 0);
	p += 4;
	if (wr) {
		put32(p, 1), put32(p + 4, 1);
		p = put_seg(p + 8, wr->mr, 4096, 4096);
	}
	put32(p, 0);
	p += 4;
	if (rp) {
		put32(p, 1), put32(p + 4, 1);
		p = put_seg(p + 8, rp->mr, 8192, 16384);
	} else {
		put32(p, 0);
		p += 4;
	}
	p += echo_call(p, xid, rd ? rd->buf : arg, rd ? sizeof(arg) : 8, rd != NULL,
		       &(struct rpcrdma_ddp_item){ 0 });
	raw_send(&x->raw, m, (uint32_t)(p - m));
	raw_pump(x);
	CHECK(raw_poll(&x->raw, out, &disc) >= 28);
	CHECK_EQ_I(disc, 0);
	CHECK_EQ_U(get32(out), xid);
	return get32(out + 12);
}

static struct rpcrdma_mock_stats inv_stats(struct raw_rig *x)
{
	struct rpcrdma_mock_stats ms;

	CHECK_EQ_I(rpcrdma_mock_get_stats(x->g.p, &ms), 0);
	return ms;
}

/* A client that said it takes Send With Invalidate: a reply invalidates the one handle
 * every segment of its call's chunks named (write list, reply chunk, read list; as Linux's
 * svcrdma), and nothing when they named several, none, or when the answer is RDMA_ERROR.
 * The mock breaks the connection on a handle that is no remotely reachable registration
 * and takes the one invalidated out of reach (so each call registers anew). */
static void test_remote_inv_server(void)
{
	struct raw_rig x;
	struct inv_mem a, b, c, d, f;
	uint8_t m[256], out[RAW_SLOT], *p;
	uint32_t n;

	raw_peer_pd = pd_remote_inv;
	raw_peer_pd_len = sizeof(pd_remote_inv);
	raw_up(&x, RPCRDMA_ENG_SERVER, NULL);
	raw_peer_pd = NULL;
	raw_peer_pd_len = 0;
	raw_post_recvs(&x.raw, 4);
	n = raw_msg(m, 0x100, 1, 8, RPCRDMA_MSG, 1);      /* no chunk: a plain Send */
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK(raw_poll(&x.raw, out, NULL) > 28);
	CHECK_EQ_U(inv_stats(&x).sends_inv, 0);

	/* a write chunk: its handle */
	inv_reg(&x, &a);
	CHECK_EQ_U(inv_call(&x, 0x101, NULL, &a, NULL), RPCRDMA_MSG);
	CHECK_EQ_U(inv_stats(&x).sends_inv, 1);
	CHECK_EQ_U(inv_stats(&x).last_inv_handle, a.mr->handle);
	inv_unreg(&a);

	/* a read chunk, then a reply chunk: its handle */
	inv_reg(&x, &a);
	CHECK_EQ_U(inv_call(&x, 0x102, &a, NULL, NULL), RPCRDMA_MSG);
	CHECK_EQ_U(inv_stats(&x).sends_inv, 2);
	CHECK_EQ_U(inv_stats(&x).last_inv_handle, a.mr->handle);
	inv_unreg(&a);
	inv_reg(&x, &a);
	inv_call(&x, 0x103, NULL, NULL, &a);
	CHECK_EQ_U(inv_stats(&x).sends_inv, 3);
	CHECK_EQ_U(inv_stats(&x).last_inv_handle, a.mr->handle);
	inv_unreg(&a);

	/* read, write and reply chunks all in one registration: that one */
	inv_reg(&x, &a);
	inv_call(&x, 0x104, &a, &a, &a);
	CHECK_EQ_U(inv_stats(&x).sends_inv, 4);
	CHECK_EQ_U(inv_stats(&x).last_inv_handle, a.mr->handle);
	inv_unreg(&a);

	/* two handles, in any lists: a plain Send, each still reachable */
	inv_reg(&x, &a);
	inv_reg(&x, &b);
	inv_reg(&x, &c);
	inv_reg(&x, &d);
	CHECK_EQ_U(inv_call(&x, 0x105, NULL, &a, &b), RPCRDMA_MSG);
	inv_call(&x, 0x106, &c, &d, NULL);
	inv_call(&x, 0x107, &a, &a, &d);
	inv_call(&x, 0x108, &c, NULL, &b);
	CHECK_EQ_U(inv_stats(&x).sends_inv, 4);
	CHECK_EQ_U(inv_call(&x, 0x109, NULL, &a, NULL), RPCRDMA_MSG);   /* not invalidated */
	CHECK_EQ_U(inv_stats(&x).sends_inv, 5);
	inv_unreg(&a);
	inv_unreg(&b);
	inv_unreg(&c);
	inv_unreg(&d);

	/* an RDMA_ERROR (a position-zero chunk of nothing) invalidates nothing */
	inv_reg(&x, &f);
	p = m;
	put32(p, 0x10a), put32(p + 4, 1), put32(p + 8, 8), put32(p + 12, RPCRDMA_NOMSG);
	p = put_read(p + 16, f.mr, 0, 0, 0);
	put32(p, 0), put32(p + 4, 0), put32(p + 8, 0);
	p += 12;
	raw_send(&x.raw, m, (uint32_t)(p - m));
	raw_pump(&x);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 20);
	CHECK_EQ_U(get32(out + 12), RPCRDMA_ERROR);
	CHECK_EQ_U(inv_stats(&x).sends_inv, 5);
	inv_unreg(&f);

	CHECK_EQ_U(inv_stats(&x).inv_errors, 0);
	CHECK_EQ_I(x.g.sv.fatal, 0);
	raw_down(&x);
	CHECK_EQ_U(x.st.remote_inv, 5);
	CHECK_EQ_U(x.st.replies, 10);
}

/* Without the client's flag, or over a provider that cannot (libfabric's), every reply
 * is a plain Send. */
static void test_remote_inv_not_offered(void)
{
	struct rpcrdma_mock_faults nf = { .no_remote_inv = 1 };
	struct raw_rig x;
	struct inv_mem a;
	int k;

	for (k = 0; k < 2; k++) {
		raw_peer_pd = k ? pd_remote_inv : NULL;
		raw_peer_pd_len = k ? sizeof(pd_remote_inv) : 0;
		raw_faults = k ? &nf : NULL;
		raw_up(&x, RPCRDMA_ENG_SERVER, NULL);
		raw_peer_pd = NULL;
		raw_peer_pd_len = 0;
		raw_faults = NULL;
		raw_post_recvs(&x.raw, 4);
		inv_reg(&x, &a);
		CHECK_EQ_U(inv_call(&x, 0x110, NULL, &a, NULL), RPCRDMA_MSG);
		inv_call(&x, 0x111, NULL, NULL, &a);
		CHECK_EQ_U(inv_stats(&x).sends_inv, 0);
		inv_unreg(&a);
		raw_down(&x);
		CHECK_EQ_U(x.st.remote_inv, 0);
		CHECK_EQ_U(x.st.replies, 2);
	}
}

/* Two engines: a server told that its client takes Send With Invalidate invalidates the
 * registration of a call's only chunk; the client then releases it as usual (our client
 * registers each chunk apart, so calls with several chunks get plain Sends). */
static void test_remote_inv_engines(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	struct rpcrdma_mock_stats ms;
	struct echo_slot *s[3];
	uint8_t pd[16];
	int n;

	rig_up(&g, NULL);
	n = rpcrdma_eng_pdata(g.cl.eng, pd, sizeof(pd));
	CHECK_EQ_U(pd[5], 0);                      /* our client does not claim it */
	pd[5] |= RPCRDMA_PDATA_F_REMOTE_INV;
	rpcrdma_eng_set_peer_pdata(g.sv.eng, pd, (size_t)n);
	s[0] = start(&g, 2000, 0, 1, 512, 0);      /* the result in a write chunk, alone */
	pump(&g);
	s[1] = start(&g, 20000, 1, 1, 512, 0);     /* a read chunk and a write chunk */
	pump(&g);
	s[2] = start(&g, 20, 0, 0, 64 * 1024, 0);  /* a reply chunk, alone */
	pump(&g);
	for (n = 0; n < 3; n++)
		CHECK(s[n]->done && s[n]->status == 0 && s[n]->verified);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.write_chunks, 2);
	CHECK_EQ_U(cs.reply_chunks, 1);
	CHECK_EQ_U(ss.remote_inv, 2);
	CHECK_EQ_I(rpcrdma_mock_get_stats(g.p, &ms), 0);
	CHECK_EQ_U(ms.sends_inv, 2);
	CHECK_EQ_U(ms.inv_errors, 0);
	CHECK_EQ_U(g.bad_calls, 0);
	rig_down(&g);
}

static void test_server_err_chunk(void)
{
	struct raw_rig x;
	uint8_t m[256], out[RAW_SLOT];
	uint32_t n;

	raw_up(&x, RPCRDMA_ENG_SERVER, NULL);
	raw_post_recvs(&x.raw, 1);
	n = raw_msg(m, 0x55, 1, 1, RPCRDMA_MSG, 1);
	put32(m + 16, 7);                 /* read-list discriminator 7 */
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 20);
	CHECK_EQ_U(get32(out), 0x55);
	CHECK_EQ_U(get32(out + 16), RPCRDMA_WIRE_ERR_CHUNK);
	raw_post_recvs(&x.raw, 1);
	raw_send(&x.raw, m, 10);          /* truncated */
	raw_pump(&x);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 20);
	CHECK_EQ_U(get32(out + 16), RPCRDMA_WIRE_ERR_CHUNK);
	n = raw_msg(m, 0x57, 1, 1, RPCRDMA_ERROR, 0);   /* an RDMA_ERROR to a server */
	put32(m + 16, RPCRDMA_WIRE_ERR_CHUNK);
	raw_send(&x.raw, m, 20);
	raw_pump(&x);
	raw_post_recvs(&x.raw, 1);
	n = raw_msg(m, 0x56, 1, 4, RPCRDMA_MSG, 1);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	n = raw_poll(&x.raw, out, NULL);
	CHECK(n > 28);
	CHECK_EQ_U(get32(out), 0x56);
	CHECK_EQ_U(get32(out + 8), 4);    /* granted what was asked */
	CHECK_EQ_U(get32(out + 12), RPCRDMA_MSG);
	CHECK_EQ_U(x.g.requests, 1);
	raw_down(&x);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_ERR_CHUNK_SENT], 2);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_UNEXPECTED], 1);
	CHECK_EQ_U(x.st.rcvd[RPCRDMA_ERROR], 1);
}

/* Server: a client beyond its grant (1 at start) is disconnected (RFC 5666 §3.3); a DONE
 * or a reply for nothing is counted and dropped. */
static void test_server_credit_overrun(void)
{
	struct raw_rig x;
	uint8_t m[256];
	uint32_t n;
	int disc = 0;

	struct rig other;
	struct echo_slot *s;

	raw_up(&x, RPCRDMA_ENG_SERVER, NULL);
	/* another connection of the same provider, busy before and after */
	rig_up_on(&other, NULL, NULL, x.g.p);
	s = start(&other, 5000, 1, 1, 100, 0);
	x.g.hold = 1;
	n = raw_msg(m, 0x99, 1, 1, RPCRDMA_DONE, 0);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	n = raw_msg(m, 0x1, 1, 1, RPCRDMA_MSG, 1);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK_EQ_U(x.g.requests, 1);
	CHECK_EQ_U(x.g.sv.fatal, 0);
	n = raw_msg(m, 0x2, 1, 1, RPCRDMA_MSG, 1);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK_EQ_U(x.g.requests, 1);
	CHECK_EQ_U(x.g.sv.fatal, 1);
	/* the owner closes the endpoint on fatal: the peer sees the disconnect */
	rpcrdma_ep_close(x.g.sv.ep);
	x.g.sv.ep = NULL;
	raw_poll(&x.raw, NULL, &disc);
	CHECK_EQ_U(disc, 1);
	pump(&other);
	CHECK(s->done && s->status == 0 && s->verified);
	s = start(&other, 70000, 0, 0, 70100, 0);
	pump(&other);
	CHECK(s->done && s->status == 0 && s->verified);
	CHECK_EQ_U(other.cl.fatal + other.sv.fatal, 0);
	rig_down(&other);
	raw_down(&x);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_CREDIT_OVERRUN], 1);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_UNKNOWN_XID], 1);
}

/* Server: a client that stops posting receives. Its device retries the reply's Send
 * without end (RNR retry 7, which the client sets in its connection request); after
 * stall_timeout_ms (15 s) the server ends that connection, counted as stalled. Before,
 * it held the reply, its credit and its memory for as long as the client stayed. */
static void test_server_send_stalled(void)
{
	struct rpcrdma_mock_faults f;
	struct raw_rig x;
	uint8_t m[256];
	uint32_t n;
	uint64_t sent_at;

	raw_up(&x, RPCRDMA_ENG_SERVER, NULL);
	memset(&f, 0, sizeof(f));
	f.rnr_wait = 1;   /* a Send that finds no receive waits, as a device retrying it */
	CHECK_EQ_I(rpcrdma_mock_set_faults(x.g.p, &f), 0);
	n = raw_msg(m, 0x31, 1, 1, RPCRDMA_MSG, 1);   /* a call; no receive for the reply */
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK_EQ_U(x.g.requests, 1);
	sent_at = x.g.now;
	/* a caller's clock read just before the Send was posted is no stall */
	rpcrdma_eng_tick(x.g.sv.eng, sent_at - 1);
	CHECK_EQ_U(x.g.sv.fatal, 0);
	CHECK_EQ_U(rpcrdma_eng_tick(x.g.sv.eng, x.g.now + 1000), sent_at + 15000);
	CHECK_EQ_U(x.g.sv.fatal, 0);
	rpcrdma_eng_tick(x.g.sv.eng, sent_at + 14999);
	CHECK_EQ_U(x.g.sv.fatal, 0);      /* still within its time */
	CHECK(rpcrdma_eng_fatal_class(x.g.sv.eng) == NULL);
	rpcrdma_eng_tick(x.g.sv.eng, sent_at + 15000);
	CHECK_EQ_U(x.g.sv.fatal, 1);
	CHECK(!strcmp(rpcrdma_eng_fatal_class(x.g.sv.eng), "stalled"));   /* for the log */
	raw_down(&x);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_STALLED], 1);
}

/* Server: RDMA_DONE withheld — the read chunks are released at the deadline, the credit
 * grant does not drop to 0, the connection stays usable (RFC 5666 §11). */
static void test_server_done_withheld(void)
{
	struct raw_rig x;
	uint8_t m[256], out[RAW_SLOT];
	uint32_t n;
	uint64_t next;

	raw_up(&x, RPCRDMA_ENG_SERVER, rrc_cfg);
	raw_post_recvs(&x.raw, 2);
	/* an echo of 3000 inline bytes: the reply is longer than 1024 (no private data from
	 * this client), no write or reply chunk → the result offered as a read chunk */
	{
		struct rpcrdma_ddp_item it;
		uint8_t *d = malloc(3000);

		fill_pattern(d, 0x31, 3000);
		put32(m, 0x31);
		put32(m + 4, 1);
		put32(m + 8, 8);
		put32(m + 12, RPCRDMA_MSG);
		put32(m + 16, 0);
		put32(m + 20, 0);
		put32(m + 24, 0);
		{
			uint8_t *big = malloc(6000);

			memcpy(big, m, 28);
			n = 28 + echo_call(big + 28, 0x31, d, 3000, 0, &it);
			raw_send(&x.raw, big, n);
			free(big);
		}
		free(d);
	}
	raw_pump(&x);
	n = raw_poll(&x.raw, out, NULL);
	CHECK_EQ_U(n, 16 + 24 + 4 + 4 + 4 + 28);
	CHECK_EQ_U(get32(out + 12), RPCRDMA_MSG);
	CHECK_EQ_U(get32(out + 16), 1);        /* a read list */
	CHECK_EQ_U(get32(out + 20), 28);       /* at the result's position */
	CHECK_EQ_U(get32(out + 28), 3000);
	CHECK(get32(out + 8) >= 1);            /* credits granted, never 0 */
	rpcrdma_eng_stats(x.g.sv.eng, &x.st);
	CHECK_EQ_U(x.st.mrs_live, 3);          /* the offered chunk is held */
	CHECK_EQ_U(x.g.replies_done, 0);
	next = rpcrdma_eng_tick(x.g.sv.eng, x.g.now + 10);
	CHECK_EQ_U(next, x.g.now + 1000);
	rpcrdma_eng_tick(x.g.sv.eng, x.g.now + 1000);
	rpcrdma_eng_stats(x.g.sv.eng, &x.st);
	CHECK_EQ_U(x.st.mrs_live, 2);
	CHECK_EQ_U(x.g.replies_done, 1);
	CHECK_EQ_U((uint32_t)x.g.reply_status[0], (uint32_t)-RPCRDMA_ERR_TIMEDOUT);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_DONE_TIMEOUT], 1);
	/* a late DONE is just counted */
	n = raw_msg(m, 0x31, 1, 1, RPCRDMA_DONE, 0);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	n = raw_msg(m, 0x32, 1, 1, RPCRDMA_MSG, 1);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL) > 0, 1);
	CHECK_EQ_U(get32(out), 0x32);
	CHECK_EQ_U(x.g.sv.fatal, 0);
	raw_down(&x);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_UNKNOWN_XID], 1);
}

/* Client: replies from a hand-written server — a grant of 0, an unknown XID, ERR_VERS,
 * ERR_CHUNK, a malformed reply. */
static uint32_t client_call_raw(struct raw_rig *x, uint32_t len, uint8_t *out)
{
	struct echo_slot *s = start(&x->g, len, 0, 0, 128, 0);

	raw_pump(x);
	CHECK(raw_poll(&x->raw, out, NULL) > 0);
	return s->xid;
}

static uint32_t raw_reply(uint8_t *b, uint32_t xid, uint32_t credits)
{
	uint32_t n = raw_msg(b, xid, 1, credits, RPCRDMA_MSG, 0);

	put32(b + n, xid);
	put32(b + n + 4, 1);
	memset(b + n + 8, 0, 16);
	put32(b + n + 24, 0);
	return n + 28;
}

/* A reply's read chunks may hold empty segments, or be empty: what has bytes is read,
 * and the DONE still goes, since the server waits for it (RFC 5666 §3.8). */
static void test_client_zero_length_reply_reads(void)
{
	static const uint32_t lens[2] = { 4, 0 };
	struct raw_rig x;
	struct rpcrdma_mr *mr;
	uint8_t m[256], out[RAW_SLOT], *p, *buf = calloc(1, 4096);
	struct rpcrdma_eng_stats st;
	uint32_t xid;
	int i;

	raw_up(&x, RPCRDMA_ENG_CLIENT, NULL);
	CHECK_EQ_I(rpcrdma_mr_reg(x.g.p, buf, 4096, RPCRDMA_ACC_LOCAL | RPCRDMA_ACC_REMOTE_READ,
				  &mr), 0);
	raw_post_recvs(&x.raw, 8);
	for (i = 0; i < 2; i++) {
		xid = client_call_raw(&x, lens[i], out);
		fill_pattern(buf, xid, lens[i]);
		p = m;
		put32(p, xid), put32(p + 4, 1), put32(p + 8, 2), put32(p + 12, RPCRDMA_MSG);
		p = put_read(p + 16, mr, ECHO_REPLY_HDR + 4, 0, 1024);
		if (lens[i])
			p = put_read(p, mr, ECHO_REPLY_HDR + 4, lens[i], 0);
		put32(p, 0), put32(p + 4, 0), put32(p + 8, 0);
		p += 12;
		put32(p, xid), put32(p + 4, 1);
		memset(p + 8, 0, 16);
		put32(p + 24, lens[i]);
		raw_send(&x.raw, m, (uint32_t)(p + 28 - m));
		raw_pump(&x);
		CHECK(x.g.slots[i].done && x.g.slots[i].status == 0 && x.g.slots[i].verified);
		CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 16);
		CHECK_EQ_U(get32(out), xid);
		CHECK_EQ_U(get32(out + 12), RPCRDMA_DONE);
	}
	rpcrdma_eng_stats(x.g.cl.eng, &st);
	CHECK_EQ_U(st.rdma_reads, 1);
	CHECK_EQ_U(st.sent[RPCRDMA_DONE], 2);
	CHECK_EQ_I(rpcrdma_mr_dereg(mr), 0);
	raw_down(&x);
	free(buf);
}

static void test_client_credits_and_errors(void)
{
	struct raw_rig x;
	uint8_t m[256], out[RAW_SLOT];
	uint32_t xid, n;
	struct rpcrdma_eng_stats st;

	raw_up(&x, RPCRDMA_ENG_CLIENT, NULL);
	raw_post_recvs(&x.raw, 8);
	xid = client_call_raw(&x, 4, out);
	CHECK_EQ_U(get32(out + 8), 2);                  /* asks twice its one call */
	/* a second call waits: 1 credit at start (RFC 8166 §3.3.3) */
	start(&x.g, 4, 0, 0, 128, 0);
	raw_pump(&x);
	rpcrdma_eng_stats(x.g.cl.eng, &st);
	CHECK_EQ_U(st.credit_waits, 1);
	CHECK_EQ_U(st.sent[RPCRDMA_MSG], 1);
	/* a reply for an unknown XID changes nothing */
	n = raw_reply(m, 0xdead, 9);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	rpcrdma_eng_stats(x.g.cl.eng, &st);
	CHECK_EQ_U(st.errors[RPCRDMA_EC_UNKNOWN_XID], 1);
	CHECK_EQ_U(st.sent[RPCRDMA_MSG], 1);
	/* the real reply grants 0: taken as 1, so the waiting call goes */
	n = raw_reply(m, xid, 0);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK(x.g.slots[0].done && x.g.slots[0].status == 0);
	rpcrdma_eng_stats(x.g.cl.eng, &st);
	CHECK_EQ_U(st.credits_granted, 1);
	CHECK_EQ_U(st.sent[RPCRDMA_MSG], 2);
	n = raw_poll(&x.raw, out, NULL);
	xid = get32(out);
	CHECK_EQ_U(xid, x.g.slots[1].xid);
	/* ERR_VERS: the call fails with the server's range */
	n = raw_msg(m, xid, 1, 2, RPCRDMA_ERROR, 0);
	put32(m + 16, RPCRDMA_WIRE_ERR_VERS);
	put32(m + 20, 1);
	put32(m + 24, 1);
	raw_send(&x.raw, m, 28);
	raw_pump(&x);
	CHECK(x.g.slots[1].done);
	CHECK_EQ_U((uint32_t)x.g.slots[1].status, (uint32_t)-RPCRDMA_ERR_VERSION);
	/* ERR_CHUNK */
	xid = client_call_raw(&x, 8, out);
	n = raw_msg(m, xid, 1, 2, RPCRDMA_ERROR, 0);
	put32(m + 16, RPCRDMA_WIRE_ERR_CHUNK);
	raw_send(&x.raw, m, 20);
	raw_pump(&x);
	CHECK(x.g.slots[2].done);
	CHECK_EQ_U((uint32_t)x.g.slots[2].status, (uint32_t)-RPCRDMA_ERR_PROTO);
	/* a malformed reply (bad discriminator) fails its call */
	xid = client_call_raw(&x, 8, out);
	n = raw_reply(m, xid, 2);
	put32(m + 20, 9);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK(x.g.slots[3].done);
	CHECK_EQ_U((uint32_t)x.g.slots[3].status, (uint32_t)-RPCRDMA_ERR_PROTO);
	/* a write list in a reply to a call that offered none */
	xid = client_call_raw(&x, 8, out);
	n = raw_msg(m, xid, 1, 2, RPCRDMA_MSG, 0);
	put32(m + 20, 1);                 /* write list: one chunk of one segment */
	put32(m + 24, 1);
	put32(m + 28, 0x1234);
	put32(m + 32, 16);
	put32(m + 36, 0);
	put32(m + 40, 0);
	put32(m + 44, 0);                 /* end of write list */
	put32(m + 48, 0);                 /* no reply chunk */
	put32(m + 52, xid);
	put32(m + 56, 1);
	memset(m + 60, 0, 20);
	raw_send(&x.raw, m, 80);
	raw_pump(&x);
	CHECK(x.g.slots[4].done);
	CHECK_EQ_U((uint32_t)x.g.slots[4].status, (uint32_t)-RPCRDMA_ERR_PROTO);
	/* an RDMA_DONE sent to a client: counted, dropped; an RPC call (backchannel) to a
	 * client that offered none: answered PROG_UNAVAIL (RFC 8167 §4.3.3), its call kept */
	xid = client_call_raw(&x, 8, out);
	n = raw_msg(m, xid, 1, 2, RPCRDMA_DONE, 0);
	raw_send(&x.raw, m, n);
	raw_pump(&x);         /* the client reposts the receive the DONE took */
	n = raw_msg(m, xid, 1, 2, RPCRDMA_MSG, 1);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK(!x.g.slots[5].done);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 28 + 24);
	CHECK_EQ_U(get32(out + 12), RPCRDMA_MSG);
	CHECK_EQ_U(get32(out + 8), 0);             /* no backward credits */
	CHECK_EQ_U(get32(out + 28), xid);
	CHECK_EQ_U(get32(out + 32), 1);            /* REPLY */
	CHECK_EQ_U(get32(out + 36), 0);            /* MSG_ACCEPTED */
	CHECK_EQ_U(get32(out + 48), 1);            /* PROG_UNAVAIL */
	/* ... and the call still gets its reply: a reply chunk it never offered */
	n = raw_msg(m, xid, 1, 2, RPCRDMA_NOMSG, 0);
	put32(m + 24, 1);                 /* reply chunk: one segment */
	put32(m + 28, 1);
	put32(m + 32, 0x77);
	put32(m + 36, 100);
	put32(m + 40, 0);
	put32(m + 44, 0);
	raw_send(&x.raw, m, 48);
	raw_pump(&x);
	CHECK(x.g.slots[5].done);
	CHECK_EQ_U((uint32_t)x.g.slots[5].status, (uint32_t)-RPCRDMA_ERR_PROTO);
	raw_down(&x);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_UNEXPECTED], 1);
	CHECK_EQ_U(x.st.bc_refused, 1);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_CHUNK_MISMATCH], 2);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_ERR_VERS_RCVD], 1);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_ERR_CHUNK_RCVD], 1);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_DECODE], 1);
}

static void short_wait_cfg(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	(void)s;
	c->credit_timeout_ms = 500;
}

/* Client: a call that waits too long for a credit fails with TIMEDOUT. */
static void test_client_credit_timeout(void)
{
	struct raw_rig x;
	uint8_t out[RAW_SLOT];

	raw_up(&x, RPCRDMA_ENG_CLIENT, short_wait_cfg);
	raw_post_recvs(&x.raw, 4);
	client_call_raw(&x, 4, out);
	start(&x.g, 4, 0, 0, 128, 0);
	CHECK_EQ_U(rpcrdma_eng_tick(x.g.cl.eng, x.g.now + 100), x.g.now + 500);
	CHECK(!x.g.slots[1].done);
	rpcrdma_eng_tick(x.g.cl.eng, x.g.now + 500);
	CHECK(x.g.slots[1].done);
	CHECK_EQ_U((uint32_t)x.g.slots[1].status, (uint32_t)-RPCRDMA_ERR_TIMEDOUT);
	CHECK(!x.g.slots[0].done);
	raw_down(&x);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_CREDIT_TIMEOUT], 1);
	CHECK(x.g.slots[0].done);     /* failed at shutdown */
	CHECK_EQ_U((uint32_t)x.g.slots[0].status, (uint32_t)-RPCRDMA_ERR_DISCONN);
}

/* ---- credits end to end ---- */

/* Every message the raw side received since the last look: its XID and credit value. */
static int raw_credits(struct raw *r, uint32_t *xids, uint32_t *credits, int max)
{
	struct rpcrdma_cqe c;
	int n = 0;

	while (n < max && rpcrdma_ep_poll(r->ep, &c, 1) == 1) {
		if (c.op != RPCRDMA_OP_RECV || c.status != 0)
			continue;
		xids[n] = get32(c.ctx);
		credits[n++] = get32((const uint8_t *)c.ctx + 8);
		raw_post_recvs(r, 1);
	}
	return n;
}

static void max8(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	(void)s;
	c->max_credits = 8;
}

/* RFC 5666 §3.3: a call asks for the credits the client would like, here twice what it
 * has in flight or waiting, within max_credits: a lone call asks 2, each of seven calls
 * queued behind the first credit asks 14 (8 when max_credits is 8), a lone call after
 * them 2 again. */
static void test_credit_ask_follows_demand(void)
{
	static const uint32_t cap[2] = { 32, 8 };
	struct raw_rig x;
	uint8_t m[256], out[RAW_SLOT];
	uint32_t xid, xids[8], cr[8], n;
	int i, k, got;

	for (k = 0; k < 2; k++) {
		raw_up(&x, RPCRDMA_ENG_CLIENT, k ? max8 : NULL);
		raw_post_recvs(&x.raw, 8);
		xid = client_call_raw(&x, 4, out);
		CHECK_EQ_U(get32(out + 8), 2);
		for (i = 0; i < 7; i++)
			start(&x.g, 4, 0, 0, 128, 0);    /* wait: 1 credit at start */
		n = raw_reply(m, xid, 32);
		raw_send(&x.raw, m, n);
		raw_pump(&x);
		got = raw_credits(&x.raw, xids, cr, 8);
		CHECK_EQ_I(got, 7);
		for (i = 0; i < got; i++) {
			CHECK_EQ_U(cr[i], k ? 8 : 14);
			n = raw_reply(m, xids[i], cap[k]);
			raw_send(&x.raw, m, n);
		}
		raw_pump(&x);
		for (i = 0; i < 8; i++)
			CHECK(x.g.slots[i].done && x.g.slots[i].status == 0);
		xid = client_call_raw(&x, 4, out);
		CHECK_EQ_U(get32(out + 8), 2);
		raw_down(&x);
	}
}

static void credits8(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	c->max_credits = 8;
	s->max_credits = 4;
}

/* 40 calls at once with a server cap of 4: never more than granted in flight, all done. */
static void test_credit_window(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	int i, ok = 0;

	rig_up(&g, credits8);
	for (i = 0; i < 40; i++)
		start(&g, (uint32_t)(i * 997 % 9000), i & 1, (i >> 1) & 1, 10000, 0);
	pump(&g);
	for (i = 0; i < 40; i++)
		ok += g.slots[i].done && g.slots[i].status == 0 && g.slots[i].verified;
	CHECK_EQ_U(ok, 40);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.credits_granted, 4);
	CHECK(cs.credits_max <= 4);
	CHECK_EQ_U(ss.credits_max, 4);
	CHECK_EQ_U(ss.recvs_posted, 4);
	CHECK_EQ_U(ss.errors[RPCRDMA_EC_CREDIT_OVERRUN], 0);
	CHECK(cs.credit_waits > 0);
	rig_down(&g);
}

/* A shared receive budget: the second connection gets what the first left. */
static struct rpcrdma_credit_pool shared_pool;

static void pooled(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	(void)c;
	s->pool = &shared_pool;
	s->max_credits = 4;
}

static void test_credit_pool(void)
{
	struct rig g[3];
	struct rpcrdma_eng_stats cs, ss;
	uint32_t expect[3] = { 4, 4, 1 };
	int i, k;

	rpcrdma_credit_pool_init(&shared_pool, 9);
	for (k = 0; k < 3; k++) {
		rig_up(&g[k], pooled);
		for (i = 0; i < 3; i++)
			start(&g[k], 10, 0, 0, 128, 0);
		pump(&g[k]);
		stats(&g[k], &cs, &ss);
		CHECK_EQ_U(cs.credits_granted, expect[k]);
		CHECK_EQ_U(ss.recvs_posted, expect[k]);
		CHECK_EQ_U(g[k].completed, 3);
	}
	CHECK_EQ_U(shared_pool.used, 9);
	CHECK_EQ_U(rpcrdma_credit_pool_free(&shared_pool), 0);
	/* no receive left for a fourth connection's first credit: it cannot start */
	{
		struct rpcrdma_eng_config c;
		struct rpcrdma_eng_upper up = { .request = on_request };
		struct rpcrdma_eng_lower lo;
		struct rpcrdma_ep *a, *b;
		struct rpcrdma_eng *e;

		rpcrdma_eng_config_default(&c, RPCRDMA_ENG_SERVER);
		c.pool = &shared_pool;
		CHECK_EQ_I(rpcrdma_mock_pair(g[0].p, NULL, 0, NULL, 0, &a, &b), 0);
		CHECK_EQ_I(rpcrdma_eng_create(&c, &up, &e), 0);
		rpcrdma_eng_lower_ep(&lo, g[0].p, b);
		CHECK_EQ_U((uint32_t)rpcrdma_eng_start(e, &lo, 0), (uint32_t)-RPCRDMA_ERR_NOSPC);
		rpcrdma_eng_destroy(e);
		rpcrdma_ep_close(a);
		rpcrdma_ep_close(b);
	}
	CHECK_EQ_U(shared_pool.used, 9);
	for (k = 2; k >= 0; k--)
		rig_down(&g[k]);
	CHECK_EQ_U(shared_pool.used, 0);
	CHECK_EQ_U(rpcrdma_credit_pool_free(&shared_pool), 9);
}

/* ---- disconnects and faults ---- */

/* Disconnect with calls waiting, sent and being read: all fail, nothing stays
 * registered; a new connection starts again at one credit. */
static void test_disconnect_fails_everything(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs;
	int i;

	rig_up(&g, credits8);
	g.hold = 1;
	for (i = 0; i < 6; i++)
		start(&g, 3000, 1, 1, 5000, 0);
	pump(&g);
	CHECK_EQ_U(g.nheld, 1);         /* one credit at first: one call reached the server */
	rpcrdma_mock_disconnect(g.cl.ep);
	pump(&g);
	for (i = 0; i < 6; i++)
		CHECK(g.slots[i].done &&
		      g.slots[i].status == -RPCRDMA_ERR_DISCONN);
	CHECK_EQ_U(g.cl.fatal, 1);
	CHECK_EQ_U(g.sv.fatal, 1);
	rpcrdma_eng_stats(g.cl.eng, &cs);
	CHECK_EQ_U(cs.mrs_live, 2);
	CHECK_EQ_U(cs.errors[RPCRDMA_EC_DISCONNECT], 1);
	/* the held request: replying now says the connection is gone, and reply_done runs
	 * (it frees the reply's context, as after any other outcome) */
	{
		struct echo_reply_ctx *x = calloc(1, sizeof(*x));
		int before = g.replies_done;

		x->a.xdr = x->hdr;
		x->a.xdr_len = echo_reply(x->hdr, 1, NULL, 0, &x->item);
		rpcrdma_eng_req_set_user(g.held[0], x);
		CHECK_EQ_U((uint32_t)rpcrdma_eng_reply(g.sv.eng, g.held[0], &x->a, g.now),
			   (uint32_t)-RPCRDMA_ERR_DISCONN);
		CHECK_EQ_U(g.replies_done, before + 1);
		CHECK_EQ_U((uint32_t)g.reply_status[before], (uint32_t)-RPCRDMA_ERR_DISCONN);
		g.nheld = 0;
	}
	CHECK_EQ_U((uint32_t)rpcrdma_eng_call(g.cl.eng, &g.slots[0].a, NULL, g.now, &g.slots[0].c),
		   (uint32_t)-RPCRDMA_ERR_DISCONN);
	rig_down(&g);
	rig_up(&g, credits8);
	rpcrdma_eng_stats(g.cl.eng, &cs);
	CHECK_EQ_U(cs.credits_granted, 0);
	start(&g, 10, 0, 0, 128, 0);
	start(&g, 10, 0, 0, 128, 0);
	rpcrdma_eng_stats(g.cl.eng, &cs);
	CHECK_EQ_U(cs.credits_in_use, 1);      /* one credit at the start */
	pump(&g);
	CHECK_EQ_U(g.completed, 2);
	rig_down(&g);
}

/* Abandoning calls: waiting, sent, completed. */
/* Batched calls (no reply expected) hold their credits and memory until a reply to a
 * later call shows the server took them, then complete with status 0. */
static void test_batched_settled_by_later_reply(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs;
	struct echo_slot *s, *b[3];
	int i;

	rig_up(&g, NULL);
	for (i = 0; i < 3; i++)                /* raise the grant to 4: three calls at once */
		s = start(&g, 16, 0, 0, 128, 0);
	pump(&g);
	CHECK(s->done && s->status == 0);
	rpcrdma_eng_stats(g.cl.eng, &cs);
	CHECK_EQ_U(cs.credits_granted, 4);
	g.hold = 1;
	for (i = 0; i < 3; i++) {
		b[i] = &g.slots[g.nslots++];
		echo_slot_setup(b[i], 0x900u + (uint32_t)i, 6000, 1, 0, 128);  /* a read chunk */
		b[i]->a.no_reply = 1;
		CHECK_EQ_I(rpcrdma_eng_call(g.cl.eng, &b[i]->a, b[i], g.now, &b[i]->c), 0);
	}
	pump(&g);
	CHECK_EQ_U(g.nheld, 3);                /* the server pulled every argument */
	rpcrdma_eng_stats(g.cl.eng, &cs);
	CHECK_EQ_U(cs.credits_in_use, 3);
	CHECK_EQ_U(cs.mrs_live, 5);            /* their read chunks stay exposed */
	CHECK_EQ_U(g.completed, 3);
	for (i = 0; i < g.nheld; i++)
		rpcrdma_eng_req_drop(g.sv.eng, g.held[i]);   /* no reply, as batching wants */
	g.nheld = 0;
	g.hold = 0;
	s = start(&g, 16, 0, 0, 128, 0);       /* answered: the server took all before it */
	pump(&g);
	CHECK(s->done && s->status == 0 && s->verified);
	for (i = 0; i < 3; i++)
		CHECK(b[i]->done && b[i]->status == 0);
	rpcrdma_eng_stats(g.cl.eng, &cs);
	CHECK_EQ_U(cs.credits_in_use, 0);
	CHECK_EQ_U(cs.mrs_live, 2);
	/* receives left by batched calls serve later calls: many rounds never run out */
	for (i = 0; i < 40; i++) {
		struct echo_slot *k = &g.slots[g.nslots++];

		echo_slot_setup(k, 0xa00u + (uint32_t)i, 16, 0, 0, 128);
		k->a.no_reply = 1;
		g.hold = 1;
		CHECK_EQ_I(rpcrdma_eng_call(g.cl.eng, &k->a, k, g.now, &k->c), 0);
		pump(&g);
		if (g.nheld)
			rpcrdma_eng_req_drop(g.sv.eng, g.held[0]);
		g.nheld = 0;
		g.hold = 0;
		s = start(&g, 16, 0, 0, 128, 0);
		pump(&g);
		CHECK(k->done && s->done && s->status == 0);
		if (g.nslots > MAXQ - 4) {
			free_slots(&g);
			g.nslots = 0;
		}
	}
	rpcrdma_eng_stats(g.cl.eng, &cs);
	CHECK(cs.recvs_posted <= 4);
	rig_down(&g);
}

/* A server that dispatches several calls of a connection at once (the RPC layer's lanes)
 * may answer a later call while a batched one still runs. The client then reuses the
 * batched call's credit (settle_batched); the server must keep the same books and not
 * take the calls that follow for an overrun. Failed with credit_overrun before. */
static void test_batched_overtaken(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s = NULL, *b, *q, *more[4];
	int i;

	rig_up(&g, NULL);
	for (i = 0; i < 3; i++)                /* raise the grant to 4 */
		s = start(&g, 16, 0, 0, 128, 0);
	pump(&g);
	CHECK(s->done && s->status == 0);
	g.hold = 1;
	b = &g.slots[g.nslots++];
	echo_slot_setup(b, 0x700u, 16, 0, 0, 128);
	b->a.no_reply = 1;
	CHECK_EQ_I(rpcrdma_eng_call(g.cl.eng, &b->a, b, g.now, &b->c), 0);
	q = start(&g, 16, 0, 0, 128, 0);
	pump(&g);
	CHECK_EQ_U(g.nheld, 2);
	answer(&g, g.held[1]);                 /* the later call first: b still runs */
	pump(&g);
	CHECK(q->done && q->status == 0 && q->verified);
	CHECK(b->done && b->status == 0);      /* the client took b as settled */
	rpcrdma_eng_stats(g.cl.eng, &cs);
	CHECK_EQ_U(cs.credits_in_use, 0);
	for (i = 0; i < 4; i++)                /* the whole grant at once, b still held */
		more[i] = start(&g, 16, 0, 0, 128, 0);
	pump(&g);
	CHECK_EQ_U(g.sv.fatal, 0);
	CHECK_EQ_U(g.nheld, 6);
	for (i = 2; i < 6; i++)
		answer(&g, g.held[i]);
	rpcrdma_eng_req_drop(g.sv.eng, g.held[0]);   /* b ends with no reply */
	g.nheld = 0;
	g.hold = 0;
	pump(&g);
	for (i = 0; i < 4; i++)
		CHECK(more[i]->done && more[i]->status == 0 && more[i]->verified);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(ss.errors[RPCRDMA_EC_CREDIT_OVERRUN], 0);
	CHECK_EQ_U(g.cl.fatal + g.sv.fatal, 0);
	rig_down(&g);
}

/* A client cannot use early-freed credits to pile up calls past twice its grant: calls
 * overtaken by a later reply still count toward that bound. */
static void test_overtaken_bounded(void)
{
	struct raw_rig x;
	uint8_t m[256], out[RAW_SLOT];
	uint32_t n, xid = 0x40;
	int i;

	raw_up(&x, RPCRDMA_ENG_SERVER, NULL);
	x.g.hold = 1;
	raw_post_recvs(&x.raw, 64);
	n = raw_msg(m, xid++, 1, 2, RPCRDMA_MSG, 1);   /* the grant rises to 2 */
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	answer(&x.g, x.g.held[0]);
	x.g.held[0] = NULL;   /* answered: raw_down must not drop it */
	raw_pump(&x);
	CHECK(raw_poll(&x.raw, out, NULL) > 0);
	CHECK_EQ_U(get32(out + 8), 2);
	/* rounds of (slow call, quick call), the quick one answered first: each round leaves
	 * one call running that no longer counts against the grant */
	for (i = 0; i < 5; i++) {
		n = raw_msg(m, xid++, 1, 2, RPCRDMA_MSG, 1);
		raw_send(&x.raw, m, n);
		n = raw_msg(m, xid++, 1, 2, RPCRDMA_MSG, 1);
		raw_send(&x.raw, m, n);
		raw_pump(&x);
		if (x.g.sv.fatal)
			break;
		answer(&x.g, x.g.held[x.g.nheld - 1]);
		x.g.held[x.g.nheld - 1] = NULL;
		raw_pump(&x);
		CHECK(raw_poll(&x.raw, out, NULL) > 0);
	}
	/* three rounds leave three overtaken; the fourth's second call makes 3 + 2 > 2 * 2 */
	CHECK_EQ_U(i, 3);
	CHECK_EQ_U(x.g.sv.fatal, 1);
	raw_down(&x);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_CREDIT_OVERRUN], 1);
}

/* An abandoned call's arguments are the caller's again (rpcrdma_eng_call_free): a reply
 * to a later call must not read them. Before, settle_batched() read no_reply through
 * them; memory reused so that it read 1 completed the abandoned call there and gave its
 * credit back while the server still held it (and ASan saw the freed read: rt_client's
 * busy polling after a timed-out call, whose memory libtirpc's caller had freed). */
static void test_abandoned_args_not_read(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs;
	struct echo_slot *s = NULL, *a, *b;
	int i;

	rig_up(&g, NULL);
	for (i = 0; i < 3; i++)                /* raise the grant: two calls at once */
		s = start(&g, 16, 0, 0, 128, 0);
	pump(&g);
	CHECK(s->done && s->status == 0);
	g.hold = 1;
	a = start(&g, 16, 0, 0, 128, 0);
	b = start(&g, 16, 0, 0, 128, 0);
	pump(&g);
	CHECK_EQ_U(g.nheld, 2);
	rpcrdma_eng_call_free(a->c);           /* a times out: abandoned, credit kept */
	a->c = NULL;
	a->done = 1;
	a->a.no_reply = 1;                     /* its arguments' memory, reused */
	answer(&g, g.held[1]);                 /* b's reply: a was sent before it */
	pump(&g);
	CHECK(b->done && b->status == 0 && b->verified);
	rpcrdma_eng_stats(g.cl.eng, &cs);
	CHECK_EQ_U(cs.credits_in_use, 1);      /* still a's: the server holds it */
	answer(&g, g.held[0]);                 /* a's late reply frees it */
	g.nheld = 0;
	g.hold = 0;
	pump(&g);
	rpcrdma_eng_stats(g.cl.eng, &cs);
	CHECK_EQ_U(cs.credits_in_use, 0);
	CHECK_EQ_U(g.cl.fatal + g.sv.fatal, 0);
	rig_down(&g);
}

/* A peer that takes nothing (its queue stays full) holds work back only so long: after
 * stall_timeout_ms the connection is closed and counted, never retried forever. */
static void test_stall_timeout(void)
{
	struct rpcrdma_mock_faults f;
	struct rpcrdma_eng_stats cs, ss;
	struct echo_slot *s;
	struct rig g;

	memset(&f, 0, sizeof(f));
	rig_up_with(&g, NULL, &f);
	g.hold = 1;
	s = start(&g, 100, 0, 0, 256, 0);
	pump(&g);
	CHECK_EQ_U(g.nheld, 1);
	f.again_at_post = 1;            /* from now on every post finds the queue full */
	f.again_count = 1000000;
	CHECK_EQ_I(rpcrdma_mock_set_faults(g.p, &f), 0);
	g.hold = 0;
	answer(&g, g.held[0]);
	g.nheld = 0;
	pump(&g);
	CHECK(!s->done);
	g.now += 14000;
	pump(&g);
	CHECK_EQ_U(g.sv.fatal, 0);      /* still within its time */
	g.now += 2000;
	pump(&g);
	CHECK_EQ_U(g.sv.fatal, 1);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(ss.errors[RPCRDMA_EC_STALLED], 1);
	rig_down(&g);
	CHECK(s->done);
}

/* Credits held by abandoned calls come back only with a new connection: once calls wait
 * and every credit in use is such a one, the engine says it is starved. */
static void test_starved_by_abandoned_calls(void)
{
	struct rig g;
	struct echo_slot *s, *w;

	rig_up(&g, NULL);
	CHECK_EQ_U(rpcrdma_eng_credits_free(g.cl.eng), 1);   /* RFC 8166 §3.3.3 */
	g.hold = 1;
	s = start(&g, 100, 0, 0, 256, 0);
	pump(&g);
	CHECK_EQ_U(rpcrdma_eng_call_sent(s->c), 1);
	CHECK_EQ_I(rpcrdma_eng_credits_free(g.cl.eng), 0);
	w = start(&g, 100, 0, 0, 256, 0);      /* waits for the only credit */
	CHECK_EQ_I(rpcrdma_eng_call_sent(w->c), 0);
	CHECK_EQ_I(rpcrdma_eng_starved(g.cl.eng), 0);        /* s may still be answered */
	rpcrdma_eng_call_free(s->c);           /* s times out: abandoned, credit kept */
	s->c = NULL;
	s->done = 1;
	CHECK_EQ_U(rpcrdma_eng_starved(g.cl.eng), 1);
	/* a late reply after all: the credit comes back and w goes */
	g.hold = 0;
	answer(&g, g.held[0]);
	g.nheld = 0;
	pump(&g);
	CHECK_EQ_I(rpcrdma_eng_starved(g.cl.eng), 0);
	CHECK(w->done && w->status == 0 && w->verified);
	rig_down(&g);
}

static void test_call_abandon(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs;
	struct echo_slot *s;

	rig_up(&g, NULL);
	g.hold = 1;
	start(&g, 100, 0, 0, 256, 0);
	start(&g, 100, 1, 1, 5000, 0);
	pump(&g);
	rpcrdma_eng_call_free(g.slots[1].c);     /* waiting for a credit */
	rpcrdma_eng_call_free(g.slots[0].c);     /* sent: withdrawn, credit kept */
	rpcrdma_eng_stats(g.cl.eng, &cs);
	CHECK_EQ_U(cs.mrs_live, 2);
	CHECK_EQ_U(cs.credits_in_use, 1);
	/* the late (inline) reply frees it and gives the credit back */
	g.hold = 0;
	answer(&g, g.held[0]);
	g.nheld = 0;
	pump(&g);
	rpcrdma_eng_stats(g.cl.eng, &cs);
	CHECK_EQ_U(cs.credits_in_use, 0);
	CHECK_EQ_U(g.completed, 0);
	CHECK_EQ_U(g.cl.fatal + g.sv.fatal, 0);
	s = start(&g, 100, 0, 0, 256, 0);
	pump(&g);
	CHECK(s->done && s->status == 0 && s->verified);
	rig_down(&g);

	/* abandoned with a write chunk: the server's RDMA Write meets withdrawn memory,
	 * which a real provider (and the mock) answers by breaking the connection */
	rig_up(&g, NULL);
	g.hold = 1;
	start(&g, 100, 1, 1, 5000, 0);
	pump(&g);
	rpcrdma_eng_call_free(g.slots[0].c);
	g.hold = 0;
	answer(&g, g.held[0]);
	g.nheld = 0;
	pump(&g);
	CHECK_EQ_U(g.cl.fatal, 1);
	CHECK_EQ_U(g.completed, 0);
	rig_down(&g);
}

/* A reply the engine refuses (items out of order) changes nothing: the request is still
 * the caller's to answer. */
static void test_reply_arg_checks(void)
{
	struct rig g;
	struct rpcrdma_ddp_item it[2] = { { 28, 4, "abcd" }, { 24, 4, "efgh" } };
	struct rpcrdma_reply_args a;
	uint8_t hdr[32];

	rig_up(&g, NULL);
	g.hold = 1;
	start(&g, 10, 0, 0, 128, 0);
	pump(&g);
	CHECK_EQ_U(g.nheld, 1);
	memset(&a, 0, sizeof(a));
	a.xdr = hdr;
	a.xdr_len = echo_reply(hdr, g.slots[0].xid, NULL, 0, &it[0]);
	a.items = it;
	a.nitems = 2;
	CHECK_EQ_U((uint32_t)rpcrdma_eng_reply(g.sv.eng, g.held[0], &a, g.now),
		   (uint32_t)-RPCRDMA_ERR_INVAL);
	CHECK_EQ_U(g.replies_done, 0);
	answer(&g, g.held[0]);
	g.nheld = 0;
	pump(&g);
	CHECK(g.slots[0].done && g.slots[0].status == 0 && g.slots[0].verified);
	rig_down(&g);
}

static void test_call_arg_checks(void)
{
	struct rig g;
	struct rpcrdma_call_args a;
	struct rpcrdma_ddp_item it[2];
	struct rpcrdma_eng_call *c;
	uint8_t xdr[64] = { 0 };

	rig_up(&g, NULL);
	memset(&a, 0, sizeof(a));
	a.xdr = xdr;
	a.xdr_len = 4;
	CHECK_EQ_U((uint32_t)rpcrdma_eng_call(g.cl.eng, &a, NULL, 0, &c), (uint32_t)-RPCRDMA_ERR_INVAL);
	a.xdr_len = 48;
	it[0].offset = 46;      /* not 4-aligned */
	it[0].len = 4;
	it[0].data = xdr;
	a.items = it;
	a.nitems = 1;
	CHECK_EQ_U((uint32_t)rpcrdma_eng_call(g.cl.eng, &a, NULL, 0, &c), (uint32_t)-RPCRDMA_ERR_INVAL);
	it[0].offset = 44;
	it[1] = it[0];
	it[1].offset = 40;      /* out of order */
	a.nitems = 2;
	CHECK_EQ_U((uint32_t)rpcrdma_eng_call(g.cl.eng, &a, NULL, 0, &c), (uint32_t)-RPCRDMA_ERR_INVAL);
	a.nitems = 0;
	a.max_reply = 1u << 30; /* beyond max_message */
	CHECK_EQ_U((uint32_t)rpcrdma_eng_call(g.cl.eng, &a, NULL, 0, &c), (uint32_t)-RPCRDMA_ERR_RANGE);
	CHECK_EQ_U((uint32_t)rpcrdma_eng_call(g.sv.eng, &a, NULL, 0, &c), (uint32_t)-RPCRDMA_ERR_INVAL);
	rig_down(&g);
}

static int sweep_bc;   /* fault sweeps: backward calls too */

static void full_exchange(struct rig *g, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		start(g, 6000 + (uint32_t)i, 1, 1, 9000, ANY_RC);
		if (sweep_bc)
			start_bc(g, 100 + (uint32_t)i * 50, ANY_RC);
	}
	start(g, 9000, 0, 0, 9100, ANY_RC);   /* long call, long reply */
	pump(g);
}

static void rrc_all(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	rrc_cfg(c, s);
}

/* A fault at each step of exchanges that use every mechanism: each completion failed,
 * the connection broken at each post, each received message corrupted. Every call
 * completes (successfully or with an error), nothing leaks, nothing crashes. */
static void fault_sweep(int kind, cfg_fn cfg)
{
	int step, total_ok = 0, total_err = 0;

	for (step = 1; step <= 64; step++) {
		struct rpcrdma_mock_faults f;
		struct rig g;
		int i, done = 0;

		memset(&f, 0, sizeof(f));
		if (kind == 0)
			f.fail_completion = (uint32_t)step;
		else if (kind == 1)
			f.disconnect_at_post = (uint32_t)step;
		else if (kind == 2) {
			f.corrupt_recv = (uint32_t)(step % 12 + 1);
			f.corrupt_offset = (uint32_t)(step / 12 * 4 + (step % 5) * 4);
		} else if (kind == 3) {
			f.delay_completion = (uint32_t)step;
			f.delay_polls = 3;
		} else {
			/* no queue is full before anything was posted: from the second post */
			f.again_at_post = (uint32_t)step + 1;
			f.again_count = (uint32_t)(step % 4 + 1);
		}
		rig_up_with(&g, cfg, &f);
		full_exchange(&g, 3);
		for (i = 0; i < g.nslots; i++) {
			done += g.slots[i].done;
			if (g.slots[i].done && g.slots[i].status == 0) {
				CHECK(g.slots[i].verified);
				total_ok++;
			} else {
				total_err++;
			}
		}
		for (i = 0; i < g.nbslots; i++) {
			if (kind >= 3)
				CHECK(g.bslots[i].done && g.bslots[i].verified);
			if (g.bslots[i].done && g.bslots[i].status == 0 && kind != 2)
				CHECK(g.bslots[i].verified);
		}
		if (kind >= 3)
			CHECK_EQ_U(done, g.nslots);
		if (kind == 4)   /* a full queue is no failure: everything completes */
			CHECK_EQ_U(total_err, 0);
		/* a corrupt message may leave a call waiting for a reply that never comes:
		 * the connection's end completes it */
		rig_down(&g);
		for (i = 0; i < g.nslots; i++)
			CHECK(g.slots[i].done);
		for (i = 0; i < g.nbslots; i++)
			CHECK(g.bslots[i].done);
	}
	printf("  fault kind %d: %d calls ok, %d failed\n", kind, total_ok, total_err);
	CHECK(total_err > 0 || kind >= 3);   /* delays and full queues fail nothing */
	CHECK(total_ok > 0);
}

static void test_fault_fail_completion(void) { fault_sweep(0, NULL); }
static void test_fault_disconnect_at_post(void) { fault_sweep(1, NULL); }
static void test_fault_corrupt(void) { fault_sweep(2, NULL); }
static void test_fault_delay(void) { fault_sweep(3, NULL); }
static void test_fault_queue_full(void) { fault_sweep(4, NULL); }
static void test_fault_queue_full_rrc(void) { fault_sweep(4, rrc_cfg); }
static void test_fault_rrc(void)
{
	int k;

	for (k = 0; k < 4; k++)
		fault_sweep(k, rrc_all);
}

static void tight_cfg(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	c->sq_depth = 2;
	s->sq_depth = 2;
	s->write_send_ordered = 0;
	s->reply_read_chunks = 1;
	c->max_credits = 16;
}

/* A send queue of 2 and a provider said not to order Writes before Sends: work waits
 * for room in order, each reply's Send waits for its Writes' completions, and every
 * mechanism still completes. */
static void test_tight_send_queue_unordered(void)
{
	struct rig g;
	struct rpcrdma_eng_stats cs, ss;
	int i, ok = 0;

	rig_up(&g, tight_cfg);
	for (i = 0; i < 24; i++)
		start(&g, 3000u + (uint32_t)i * 1111u, i % 3 == 0, i % 2 == 0,
		      i % 4 == 1 ? 256u : 40000u, 0);
	pump(&g);
	for (i = 0; i < 24; i++)
		ok += g.slots[i].done && g.slots[i].status == 0 && g.slots[i].verified;
	CHECK_EQ_U(ok, 24);
	stats(&g, &cs, &ss);
	CHECK(ss.rdma_writes > 0);
	CHECK(cs.sent[RPCRDMA_DONE] > 0);
	CHECK_EQ_U(g.bad_calls, 0);
	rig_down(&g);
}

static void server_sq2(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	(void)c;
	s->sq_depth = 2;
}

/* A server whose send queue fills: replies and reads wait their turn in order. */
static void test_server_send_queue_full(void)
{
	struct rig g;
	int i, ok = 0;

	rig_up(&g, server_sq2);
	for (i = 0; i < 12; i++)
		start(&g, 3000u + (uint32_t)i, i & 1, 1, 256, 0);
	pump(&g);
	for (i = 0; i < 12; i++)
		ok += g.slots[i].done && g.slots[i].status == 0 && g.slots[i].verified;
	CHECK_EQ_U(ok, 12);
	CHECK_EQ_U(g.bad_calls, 0);
	rig_down(&g);
}

/* RDMA_DONE may arrive before the server has seen its reply's Send complete: it must
 * still release the reply (never be taken for an unknown XID). The delay moves one
 * completion at a time past the others. */
static void test_done_before_send_completion(void)
{
	uint32_t n;

	for (n = 1; n <= 12; n++) {
		struct rpcrdma_mock_faults f;
		struct rpcrdma_eng_stats cs, ss;
		struct echo_slot *s;
		struct rig g;

		memset(&f, 0, sizeof(f));
		f.delay_completion = n;
		f.delay_polls = 6;
		rig_up_with(&g, rrc_cfg, &f);
		s = start(&g, 20000, 1, 0, 256, 0);
		pump(&g);
		CHECK(s->done && s->status == 0 && s->verified);
		stats(&g, &cs, &ss);
		CHECK_EQ_U(ss.rcvd[RPCRDMA_DONE], 1);
		CHECK_EQ_U(ss.errors[RPCRDMA_EC_UNKNOWN_XID], 0);
		CHECK_EQ_U(g.replies_done, 1);
		CHECK_EQ_U(g.reply_status[0], 0);
		CHECK_EQ_U(ss.mrs_live, 2);
		rig_down(&g);
	}
}

/* A DONE proves the reply arrived: a connection lost while the server still waits for
 * that reply's Send completion does not fail the reply. (Seen on shm, where a Send's
 * completion can come after the peer has answered it.) */
static void test_done_then_disconnect_before_send_completion(void)
{
	uint32_t n;
	int exercised = 0;

	for (n = 1; n <= 12; n++) {
		struct rpcrdma_mock_faults f;
		struct rpcrdma_eng_stats cs, ss;
		struct rig g;

		memset(&f, 0, sizeof(f));
		f.delay_completion = n;
		f.delay_polls = 1000;   /* held past the disconnect */
		rig_up_with(&g, rrc_cfg, &f);
		start(&g, 20000, 1, 0, 256, 0);
		pump(&g);
		stats(&g, &cs, &ss);
		if (ss.rcvd[RPCRDMA_DONE] == 1 && g.replies_done == 0) {
			exercised++;
			rpcrdma_mock_disconnect(g.sv.ep);
			pump(&g);
			CHECK_EQ_U(g.replies_done, 1);
			CHECK_EQ_U(g.reply_status[0], 0);
		}
		rig_down(&g);
	}
	CHECK(exercised > 0);
}

static void test_config_checks(void)
{
	struct rpcrdma_eng_config c;
	struct rpcrdma_eng_upper up = { .call_done = on_call_done };
	struct rpcrdma_eng *e;

	rpcrdma_eng_config_default(&c, RPCRDMA_ENG_CLIENT);
	c.max_credits = 0;
	CHECK_EQ_U((uint32_t)rpcrdma_eng_create(&c, &up, &e), (uint32_t)-RPCRDMA_ERR_RANGE);
	rpcrdma_eng_config_default(&c, RPCRDMA_ENG_CLIENT);
	c.inline_recv = 512;
	CHECK_EQ_U((uint32_t)rpcrdma_eng_create(&c, &up, &e), (uint32_t)-RPCRDMA_ERR_RANGE);
	rpcrdma_eng_config_default(&c, RPCRDMA_ENG_CLIENT);
	c.msgp_align = 6;
	CHECK_EQ_U((uint32_t)rpcrdma_eng_create(&c, &up, &e), (uint32_t)-RPCRDMA_ERR_RANGE);
	rpcrdma_eng_config_default(&c, RPCRDMA_ENG_SERVER);
	CHECK_EQ_U((uint32_t)rpcrdma_eng_create(&c, &up, &e), (uint32_t)-RPCRDMA_ERR_INVAL);
	CHECK_EQ_U(strcmp(rpcrdma_eng_errclass_name(RPCRDMA_EC_CREDIT_OVERRUN), "credit_overrun"), 0);
}

/* Without RFC 8797 private data from the peer, 1024 bytes inline (RFC 8166 §3.3.2). */
static void test_no_pdata_1024(void)
{
	struct raw_rig x;
	struct rpcrdma_eng_stats st;
	uint8_t out[RAW_SLOT];

	raw_up(&x, RPCRDMA_ENG_CLIENT, NULL);
	raw_post_recvs(&x.raw, 2);
	rpcrdma_eng_stats(x.g.cl.eng, &st);
	CHECK_EQ_U(st.inline_send, 1024);
	CHECK_EQ_U(rpcrdma_eng_inline_reply(x.g.cl.eng), 1024);   /* either way */
	client_call_raw(&x, 1024 - 28 - 44, out);       /* 1024 bytes: inline */
	rpcrdma_eng_stats(x.g.cl.eng, &st);
	CHECK_EQ_U(st.sent[RPCRDMA_MSG], 1);
	raw_down(&x);
}

/* A reply that fits our 4096-byte receives but not the 1024 bytes a peer without private
 * data sends inline gets a reply chunk (RFC 8797 §4, RFC 8166 §3.3.2): the peer could not
 * send it otherwise. One that fits 1024 bytes does not. */
static void test_no_pdata_reply_chunk(void)
{
	static const uint32_t max_reply[2] = { 1024 - 28 - 100, 2000 };
	struct raw_rig x;
	struct rpcrdma_msg m;
	struct rpcrdma_msg_storage ms;
	uint8_t out[RAW_SLOT];
	struct echo_slot *s;
	uint32_t n;
	int i;

	for (i = 0; i < 2; i++) {   /* a connection each: the first call holds the one credit */
		raw_up(&x, RPCRDMA_ENG_CLIENT, NULL);
		raw_post_recvs(&x.raw, 2);
		s = start(&x.g, 8, 0, 0, max_reply[i], 0);
		raw_pump(&x);
		n = raw_poll(&x.raw, out, NULL);
		CHECK(n > 0);
		rpcrdma_msg_bind(&m, &ms);
		CHECK_EQ_I(rpcrdma_decode(out, n, RPCRDMA_DIR_CALL, NULL, &m, NULL), 0);
		CHECK_EQ_U(m.has_reply, (uint32_t)i);
		if (i)
			CHECK(m.reply.nsegs == 1 && m.reply.segs[0].length >= 2000);
		CHECK_EQ_U(rpcrdma_eng_call_reply_chunk(s->c), i ? m.reply.segs[0].length : 0);
		raw_down(&x);
	}
}

/* ---- the backchannel (RFC 8167) ---- */

static void bc4(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	c->bc_credits = 4;
	s->bc_credits = 8;
}

/* Backward and forward calls interleaved on one connection, each verified byte for byte
 * at both ends, handed up in the order sent. */
static void test_bc_both_directions(void)
{
	struct rpcrdma_eng_stats cs, ss;
	struct rig g;
	int i;

	rig_up(&g, bc4);
	for (i = 0; i < 6; i++) {
		start(&g, 100 + (uint32_t)i, 0, 0, REPLY_MAX(100u + (uint32_t)i), 0);
		start_bc(&g, 200 + (uint32_t)i * 3, 0);
	}
	pump(&g);
	for (i = 0; i < 6; i++) {
		CHECK(g.slots[i].done && g.slots[i].status == 0 && g.slots[i].verified);
		CHECK(g.bslots[i].done && g.bslots[i].status == 0 && g.bslots[i].verified);
		CHECK_EQ_U(g.bc_order[i], g.bslots[i].xid);
	}
	CHECK_EQ_U(g.bc_bad, 0);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(ss.bc_calls, 6);
	CHECK_EQ_U(ss.bc_replies, 6);
	CHECK_EQ_U(cs.bc_calls, 6);
	CHECK_EQ_U(cs.bc_replies, 6);
	CHECK_EQ_U(cs.bc_refused + cs.bc_failed + ss.bc_failed, 0);
	CHECK_EQ_U(ss.calls, 6);
	CHECK_EQ_U(cs.replies, 6);
	CHECK_EQ_U(cs.errors[RPCRDMA_EC_UNKNOWN_XID] + ss.errors[RPCRDMA_EC_UNKNOWN_XID], 0);
	CHECK_EQ_U(rpcrdma_eng_bc_pending(g.sv.eng) + rpcrdma_eng_bc_pending(g.cl.eng), 0);
	/* every receive posted for a backward reply was used by it (server: 1 per credit of
	 * its highest grant; the grant follows the client's demand down, its receives stay) */
	CHECK_EQ_U(ss.recvs_posted, ss.credits_max);
	/* a client keeps its backward receives posted, its forward calls all answered */
	CHECK_EQ_U(cs.recvs_posted, 4);
	rig_down(&g);
}

static void bc2_fwd2(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	c->max_credits = 2;
	c->bc_credits = 2;
	s->bc_credits = 8;
}

static void answer_held(struct rig *g)
{
	int i;

	for (i = 0; i < g->nheld; i++)
		answer(g, g->held[i]);
	g->nheld = 0;
	for (i = 0; i < g->bc_nheld; i++)
		bc_answer(g, g->bc_held[i], 0);
	g->bc_nheld = 0;
}

/* Credits exhausted in both directions at once: the client's forward calls wait for
 * forward credits while the server's backward calls wait for backward ones; each grant
 * comes from its own direction's replies (RFC 8167 §4.1), neither starves the other, and
 * neither side ever has more outstanding than granted. */
static void test_bc_credits_each_direction(void)
{
	struct rpcrdma_eng_stats cs, ss;
	struct rig g;
	int i, rounds = 0;

	rig_up(&g, bc2_fwd2);
	g.hold = 1;
	g.bc_hold = 1;
	for (i = 0; i < 7; i++) {
		start(&g, 64, 0, 0, REPLY_MAX(64), 0);
		start_bc(&g, 64, 0);
	}
	pump(&g);
	/* one credit each way at first (RFC 8166 §3.3.3, RFC 8167 §4.1) */
	CHECK_EQ_I(g.requests, 1);
	CHECK_EQ_I(g.bc_requests, 1);
	CHECK_EQ_U(rpcrdma_eng_bc_pending(g.sv.eng), 7);
	CHECK_EQ_U(rpcrdma_eng_bc_pending(g.cl.eng), 1);
	while (g.completed < 7 || g.bc_requests < 7 || g.nheld || g.bc_nheld) {
		CHECK(g.nheld <= 2 && g.bc_nheld <= 2);
		CHECK(++rounds < 20);
		if (rounds >= 20)
			break;
		answer_held(&g);
		pump(&g);
	}
	/* the second round already had both grants at 2 */
	CHECK(rounds <= 5);
	for (i = 0; i < 7; i++) {
		CHECK(g.slots[i].done && g.slots[i].verified);
		CHECK(g.bslots[i].done && g.bslots[i].verified);
		CHECK_EQ_U(g.bc_order[i], g.bslots[i].xid);
	}
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.credits_max, 2);
	CHECK_EQ_U(cs.errors[RPCRDMA_EC_CREDIT_OVERRUN] + ss.errors[RPCRDMA_EC_CREDIT_OVERRUN], 0);
	CHECK_EQ_U(cs.bc_refused, 0);
	rig_down(&g);
}

/* A client that offered no backchannel answers a backward call PROG_UNAVAIL (RFC 8167
 * §4.3.3: the server should not have called, and gets an answer rather than a lost
 * connection); the forward direction carries on. */
static void test_bc_no_backchannel(void)
{
	struct rpcrdma_eng_stats cs;
	struct bslot *b;
	struct rig g;

	rig_up(&g, NULL);
	b = start_bc(&g, 40, 0);
	start(&g, 300, 1, 1, REPLY_MAX(300), 0);
	pump(&g);
	CHECK(b->done);
	CHECK_EQ_I(b->status, 0);
	CHECK_EQ_U(b->accept_stat, 1);        /* PROG_UNAVAIL */
	CHECK_EQ_I(g.bc_requests, 0);
	CHECK(g.slots[0].done && g.slots[0].verified);
	b = start_bc(&g, 40, 0);              /* a grant of 0 does not stop the next one */
	pump(&g);
	CHECK(b->done && b->accept_stat == 1);
	rpcrdma_eng_stats(g.cl.eng, &cs);
	CHECK_EQ_U(cs.bc_refused, 2);
	CHECK_EQ_U(g.cl.fatal + g.sv.fatal, 0);
	rig_down(&g);
}

/* Backward messages are inline only (RFC 8167 §4.2, §5.3): a call longer than the
 * client's receive buffers is refused before it goes; a reply longer than the server's
 * gets the server an RDMA_ERROR/ERR_CHUNK for that call. */
static void test_bc_too_long(void)
{
	struct rpcrdma_eng_stats cs, ss;
	struct bslot *b;
	struct rig g;
	uint8_t *big;

	rig_up(&g, bc4);
	b = start_bc(&g, 4096 - 28 - 44 + 1, -RPCRDMA_ERR_NOSPC);
	CHECK(b->done);
	b = start_bc(&g, 4096 - 28 - 44, 0);   /* exactly the client's 4096 bytes */
	pump(&g);
	CHECK(b->done && b->status == 0 && b->verified);
	g.bc_hold = 1;
	b = start_bc(&g, 8, 0);
	pump(&g);
	CHECK_EQ_I(g.bc_nheld, 1);
	big = calloc(1, 5000);
	put32(big, b->xid);
	put32(big + 4, 1);
	CHECK_EQ_U((uint32_t)rpcrdma_eng_bc_reply(g.cl.eng, b->xid, big, 5000, g.now),
		   (uint32_t)-RPCRDMA_ERR_NOSPC);
	/* answered once: the slot is free */
	CHECK_EQ_U((uint32_t)rpcrdma_eng_bc_reply(g.cl.eng, b->xid, big, 40, g.now),
		   (uint32_t)-RPCRDMA_ERR_INVAL);
	free(big);
	g.bc_nheld = 0;
	pump(&g);
	CHECK(b->done);
	CHECK_EQ_U((uint32_t)b->status, (uint32_t)-RPCRDMA_ERR_PROTO);
	stats(&g, &cs, &ss);
	CHECK_EQ_U(cs.bc_failed, 1);
	CHECK_EQ_U(ss.errors[RPCRDMA_EC_ERR_CHUNK_RCVD], 1);
	CHECK_EQ_U(ss.bc_failed, 1);
	/* the connection still works both ways */
	g.bc_hold = 0;
	b = start_bc(&g, 8, 0);
	start(&g, 8, 0, 0, REPLY_MAX(8), 0);
	pump(&g);
	CHECK(b->done && b->verified && g.slots[0].verified);
	rig_down(&g);
}

/* Argument checks, and a reply to a call the client does not hold. */
static void test_bc_arg_checks(void)
{
	struct rpcrdma_eng_bcall *b;
	struct rig g;
	uint8_t x[64];

	rig_up(&g, bc4);
	memset(x, 0, sizeof(x));
	put32(x + 4, 1);   /* a reply is no call */
	CHECK_EQ_U((uint32_t)rpcrdma_eng_bc_call(g.sv.eng, x, 40, NULL, g.now, &b),
		   (uint32_t)-RPCRDMA_ERR_INVAL);
	CHECK_EQ_U((uint32_t)rpcrdma_eng_bc_call(g.cl.eng, x, 40, NULL, g.now, &b),
		   (uint32_t)-RPCRDMA_ERR_INVAL);   /* the client does not call back */
	CHECK_EQ_U((uint32_t)rpcrdma_eng_bc_call(g.sv.eng, x, 4, NULL, g.now, &b),
		   (uint32_t)-RPCRDMA_ERR_INVAL);
	CHECK_EQ_U((uint32_t)rpcrdma_eng_bc_reply(g.cl.eng, 77, x, 40, g.now),
		   (uint32_t)-RPCRDMA_ERR_INVAL);
	CHECK_EQ_U((uint32_t)rpcrdma_eng_bc_reply(g.sv.eng, 77, x, 40, g.now),
		   (uint32_t)-RPCRDMA_ERR_INVAL);
	rpcrdma_eng_bcall_free(NULL);
	rig_down(&g);
}

/* A disconnect with backward calls outstanding: waiting and sent ones fail with
 * -RPCRDMA_ERR_DISCONN, the client's answer finds the connection gone, nothing leaks. */
static void test_bc_disconnect(void)
{
	struct rig g;
	int i;

	rig_up(&g, bc4);
	g.bc_hold = 1;
	g.hold = 1;
	for (i = 0; i < 4; i++) {
		start_bc(&g, 32, 0);
		start(&g, 32, 0, 0, REPLY_MAX(32), 0);
	}
	pump(&g);
	CHECK_EQ_I(g.bc_nheld, 1);
	rpcrdma_mock_disconnect(g.sv.ep);
	pump(&g);
	for (i = 0; i < 4; i++) {
		CHECK(g.bslots[i].done);
		CHECK_EQ_U((uint32_t)g.bslots[i].status, (uint32_t)-RPCRDMA_ERR_DISCONN);
		CHECK(g.slots[i].done && g.slots[i].status == -RPCRDMA_ERR_DISCONN);
	}
	CHECK_EQ_U(rpcrdma_eng_bc_pending(g.sv.eng), 0);
	CHECK_EQ_U(rpcrdma_eng_bc_pending(g.cl.eng), 0);
	bc_answer(&g, g.bc_held[0], -RPCRDMA_ERR_INVAL);   /* forgotten with the connection */
	g.bc_nheld = 0;
	start_bc(&g, 32, -RPCRDMA_ERR_DISCONN);
	rig_down(&g);
}

/* An abandoned backward call: one waiting goes at once; one sent keeps its credit and
 * receive until its reply, which is dropped; the next call goes on. */
static void test_bc_abandon(void)
{
	struct rpcrdma_eng_stats ss;
	struct bslot *a, *b, *c;
	struct rig g;

	rig_up(&g, bc4);
	g.bc_hold = 1;
	a = start_bc(&g, 16, 0);
	b = start_bc(&g, 16, 0);
	pump(&g);
	CHECK_EQ_I(g.bc_nheld, 1);                 /* one backward credit at first */
	rpcrdma_eng_bcall_free(a->b);
	rpcrdma_eng_bcall_free(b->b);
	a->b = b->b = NULL;
	CHECK_EQ_U(rpcrdma_eng_bc_pending(g.sv.eng), 1);   /* the sent one */
	g.bc_hold = 0;
	answer_held(&g);
	pump(&g);
	CHECK(!a->done && !b->done);
	CHECK_EQ_U(rpcrdma_eng_bc_pending(g.sv.eng), 0);
	c = start_bc(&g, 16, 0);
	pump(&g);
	CHECK(c->done && c->verified);
	CHECK_EQ_I(g.bc_requests, 2);
	rpcrdma_eng_stats(g.sv.eng, &ss);
	CHECK_EQ_U(ss.recvs_posted, 1);   /* the first credit's: no backward reply owed */
	rig_down(&g);
}

static void bc1(struct rpcrdma_eng_config *c, struct rpcrdma_eng_config *s)
{
	c->bc_credits = 1;
	s->bc_credits = 1;
}

/* The client's side against hand-written messages: its backward receives are posted
 * before it makes any call (RFC 8167 §4.3.1); a call beyond its grant is answered
 * SYSTEM_ERR, one with chunks RDMA_ERROR/ERR_CHUNK (§5.3); its reply is RDMA_MSG with
 * empty lists, the grant in its credit field (§5.2). */
static void test_bc_client_wire(void)
{
	struct raw_rig x;
	uint8_t m[256], out[RAW_SLOT];
	uint32_t n;

	raw_up(&x, RPCRDMA_ENG_CLIENT, bc1);
	raw_post_recvs(&x.raw, 4);
	x.g.bc_hold = 1;
	n = raw_msg(m, 0x900, 1, 5, RPCRDMA_MSG, 1);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK_EQ_I(x.g.bc_requests, 1);
	CHECK_EQ_I(x.g.bc_bad, 0);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 0);
	n = raw_msg(m, 0x901, 1, 5, RPCRDMA_MSG, 1);    /* over the grant of 1 */
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK_EQ_I(x.g.bc_requests, 1);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 28 + 24);
	CHECK_EQ_U(get32(out), 0x901);
	CHECK_EQ_U(get32(out + 8), 1);
	CHECK_EQ_U(get32(out + 48), 5);                 /* SYSTEM_ERR */
	/* a backward call with a read chunk */
	put32(m, 0x902);
	put32(m + 16, 1);
	put32(m + 20, 44);     /* position: the echo's data */
	put32(m + 24, 0x55);   /* handle */
	put32(m + 28, 8);
	put32(m + 32, 0);
	put32(m + 36, 0);
	put32(m + 40, 0);      /* end of read list */
	put32(m + 44, 0);
	put32(m + 48, 0);
	n = echo_call(m + 52, 0x902, (const uint8_t *)"abcd", 4, 0, &(struct rpcrdma_ddp_item){ 0 });
	raw_send(&x.raw, m, 52 + n);
	raw_pump(&x);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 20);
	CHECK_EQ_U(get32(out), 0x902);
	CHECK_EQ_U(get32(out + 12), RPCRDMA_ERROR);
	CHECK_EQ_U(get32(out + 16), RPCRDMA_WIRE_ERR_CHUNK);
	/* the held call answered */
	x.g.bc_nheld = 0;
	bc_answer(&x.g, 0x900, 0);
	raw_pump(&x);
	n = raw_poll(&x.raw, out, NULL);
	CHECK_EQ_U(n, 28 + ECHO_REPLY_HDR + 4);
	CHECK_EQ_U(get32(out), 0x900);
	CHECK_EQ_U(get32(out + 4), 1);
	CHECK_EQ_U(get32(out + 8), 1);                  /* the backward grant */
	CHECK_EQ_U(get32(out + 12), RPCRDMA_MSG);
	CHECK_EQ_U(get32(out + 16) | get32(out + 20) | get32(out + 24), 0);
	CHECK_EQ_U(get32(out + 28), 0x900);
	CHECK_EQ_U(get32(out + 32), 1);                 /* REPLY */
	raw_down(&x);
	CHECK_EQ_U(x.st.bc_calls, 3);
	CHECK_EQ_U(x.st.bc_refused, 2);
	CHECK_EQ_U(x.st.bc_replies, 1);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_CREDIT_OVERRUN], 1);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_ERR_CHUNK_SENT], 1);
}

/* The server's side: its backward call is RDMA_MSG with empty lists, the backward
 * credits it asks for in the credit field, a receive posted for the reply first
 * (§5.1); a reply for no call is counted and changes nothing; an RDMA_ERROR fails its
 * call; the grant of each reply bounds the calls in flight. */
static void test_bc_server_wire(void)
{
	struct rpcrdma_eng_stats st;
	struct raw_rig x;
	struct bslot *a, *b;
	uint8_t m[256], out[RAW_SLOT];
	uint32_t n;

	raw_up(&x, RPCRDMA_ENG_SERVER, bc4);
	raw_post_recvs(&x.raw, 4);
	a = start_bc(&x.g, 12, 0);
	raw_pump(&x);
	rpcrdma_eng_stats(x.g.sv.eng, &st);
	CHECK_EQ_U(st.recvs_posted, 2);                 /* the first credit's and the reply's */
	n = raw_poll(&x.raw, out, NULL);
	CHECK_EQ_U(n, 28 + ECHO_CALL_HDR + 4 + 12);
	CHECK_EQ_U(get32(out), a->xid);
	CHECK_EQ_U(get32(out + 8), 8);
	CHECK_EQ_U(get32(out + 12), RPCRDMA_MSG);
	CHECK_EQ_U(get32(out + 16) | get32(out + 20) | get32(out + 24), 0);
	CHECK_EQ_U(get32(out + 28), a->xid);
	CHECK_EQ_U(get32(out + 32), 0);                 /* CALL */
	b = start_bc(&x.g, 12, 0);                      /* waits: one backward credit */
	raw_pump(&x);
	CHECK_EQ_U(raw_poll(&x.raw, out, NULL), 0);
	/* a reply to nothing */
	n = raw_reply(m, 0x4444, 2);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK(!a->done);
	/* a's reply grants 2: b goes */
	n = raw_reply(m, a->xid, 2);
	raw_send(&x.raw, m, n);
	raw_pump(&x);
	CHECK(a->done && a->status == 0);
	n = raw_poll(&x.raw, out, NULL);
	CHECK_EQ_U(get32(out), b->xid);
	/* b answered RDMA_ERROR */
	n = raw_msg(m, b->xid, 1, 2, RPCRDMA_ERROR, 0);
	put32(m + 16, RPCRDMA_WIRE_ERR_CHUNK);
	raw_send(&x.raw, m, 20);
	raw_pump(&x);
	CHECK(b->done);
	CHECK_EQ_U((uint32_t)b->status, (uint32_t)-RPCRDMA_ERR_PROTO);
	rpcrdma_eng_stats(x.g.sv.eng, &st);
	CHECK_EQ_U(st.recvs_posted, 1);
	raw_down(&x);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_UNKNOWN_XID], 1);
	CHECK_EQ_U(x.st.errors[RPCRDMA_EC_ERR_CHUNK_RCVD], 1);
	CHECK_EQ_U(x.st.bc_calls, 2);
	CHECK_EQ_U(x.st.bc_failed, 1);
	CHECK_EQ_U(x.g.sv.fatal, 0);
}

/* The fault sweeps with backward calls beside the forward ones. */
static void test_fault_bc(void)
{
	int k;

	sweep_bc = 1;
	for (k = 0; k < 5; k++)
		fault_sweep(k, bc4);
	sweep_bc = 0;
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_config_checks);
	RUN(test_msgp_pad_rule);
	RUN(test_inline_both_ways);
	RUN(test_all_chunks_in_one_call);
	RUN(test_odd_length_roundup);
	RUN(test_objects_reused_clean);
	RUN(test_long_call);
	RUN(test_long_call_with_item);
	RUN(test_long_call_with_item_combined);
	RUN(test_long_reply_auto_read_chunks);
	RUN(test_no_reply_reads_for_rfc8166_peer);
	RUN(test_done_slot_wait);
	RUN(test_read_entry_len_call);
	RUN(test_item_inline_call);
	RUN(test_read_entry_len_reply);
	RUN(test_long_reply);
	RUN(test_reply_fits_nowhere);
	RUN(test_call_too_long);
	RUN(test_msgp);
	RUN(test_read_chunks_in_reply_with_done);
	RUN(test_server_err_vers);
	RUN(test_server_err_chunk);
	RUN(test_server_silent_on_bad_error_or_done);
	RUN(test_server_calls_in_order);
	RUN(test_server_zero_length_segments);
	RUN(test_reply_cap_write_list_past_inline);
	RUN(test_remote_inv_server);
	RUN(test_remote_inv_not_offered);
	RUN(test_remote_inv_engines);
	RUN(test_client_zero_length_reply_reads);
	RUN(test_server_credit_overrun);
	RUN(test_server_send_stalled);
	RUN(test_batched_overtaken);
	RUN(test_overtaken_bounded);
	RUN(test_server_done_withheld);
	RUN(test_client_credits_and_errors);
	RUN(test_credit_ask_follows_demand);
	RUN(test_client_credit_timeout);
	RUN(test_credit_window);
	RUN(test_credit_pool);
	RUN(test_disconnect_fails_everything);
	RUN(test_call_abandon);
	RUN(test_stall_timeout);
	RUN(test_batched_settled_by_later_reply);
	RUN(test_abandoned_args_not_read);
	RUN(test_starved_by_abandoned_calls);
	RUN(test_call_arg_checks);
	RUN(test_reply_arg_checks);
	RUN(test_no_pdata_1024);
	RUN(test_no_pdata_reply_chunk);
	RUN(test_tight_send_queue_unordered);
	RUN(test_server_send_queue_full);
	RUN(test_done_before_send_completion);
	RUN(test_done_then_disconnect_before_send_completion);
	RUN(test_fault_fail_completion);
	RUN(test_fault_disconnect_at_post);
	RUN(test_fault_corrupt);
	RUN(test_fault_delay);
	RUN(test_fault_queue_full);
	RUN(test_fault_queue_full_rrc);
	RUN(test_fault_rrc);
	RUN(test_bc_both_directions);
	RUN(test_bc_credits_each_direction);
	RUN(test_bc_no_backchannel);
	RUN(test_bc_too_long);
	RUN(test_bc_arg_checks);
	RUN(test_bc_disconnect);
	RUN(test_bc_abandon);
	RUN(test_bc_client_wire);
	RUN(test_bc_server_wire);
	RUN(test_fault_bc);
	HARNESS_END();
}
