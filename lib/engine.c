/* SPDX-License-Identifier: BSD-2-Clause */
/* The transport engine's dispatcher: lifecycle, completions, timers, statistics. It
 * hands each event to its role (engine_client.c, engine_server.c); both roles use the
 * helpers of engine_shared.c, which calls neither back. */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "xdr_be.h"

#define DEF_INLINE 4096u
#define DEF_CREDITS 32u
#define DEF_SQ_DEPTH 256u
#define DEF_MAX_CALL (64u << 20)    /* a server reassembles calls up to this */
#define DEF_MAX_REPLY (256u << 20)  /* a client takes replies up to this */
#define DEF_DONE_TIMEOUT_MS 5000u
#define DEF_CREDIT_TIMEOUT_MS 30000u
#define DEF_DONE_PENDING 8u   /* long replies awaiting RDMA_DONE; each needs a receive */
#define DEF_STALL_TIMEOUT_MS 15000u
#define MAX_CREDITS 1024u
#define SEND_SLACK 8u    /* Send buffers beyond the credit window: DONEs, errors */

void rpcrdma_credit_pool_init(struct rpcrdma_credit_pool *pool, uint32_t limit)
{
	pool->limit = limit;
	pool->used = 0;
}

uint32_t rpcrdma_credit_pool_free(const struct rpcrdma_credit_pool *pool)
{
	uint32_t used = __atomic_load_n(&pool->used, __ATOMIC_RELAXED);

	return used >= pool->limit ? 0 : pool->limit - used;
}



void rpcrdma_eng_config_default(struct rpcrdma_eng_config *cfg, uint32_t role)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->role = role;
	cfg->inline_send = DEF_INLINE;
	cfg->inline_recv = DEF_INLINE;
	cfg->max_credits = DEF_CREDITS;
	cfg->sq_depth = DEF_SQ_DEPTH;
	cfg->write_send_ordered = 1;
	cfg->max_message = role == RPCRDMA_ENG_CLIENT ? DEF_MAX_REPLY : DEF_MAX_CALL;
	rpcrdma_limits_default(&cfg->limits);
	cfg->done_timeout_ms = DEF_DONE_TIMEOUT_MS;
	cfg->max_done_pending = DEF_DONE_PENDING;
	cfg->credit_timeout_ms = DEF_CREDIT_TIMEOUT_MS;
	cfg->stall_timeout_ms = DEF_STALL_TIMEOUT_MS;
}

/* The request and reply objects hold header arrays sized by the defaults, so a
 * configuration may only tighten the limits. */
static int check_config(const struct rpcrdma_eng_config *c)
{
	if (c->role != RPCRDMA_ENG_CLIENT && c->role != RPCRDMA_ENG_SERVER)
		return -RPCRDMA_ERR_INVAL;
	if (c->inline_send < RPCRDMA_DEF_INLINE || c->inline_recv < RPCRDMA_DEF_INLINE ||
	    c->inline_send > RPCRDMA_PDATA_MAX_SIZE || c->inline_recv > RPCRDMA_PDATA_MAX_SIZE)
		return -RPCRDMA_ERR_RANGE;
	if (!c->max_credits || c->max_credits > MAX_CREDITS || c->sq_depth < 2)
		return -RPCRDMA_ERR_RANGE;
	if (c->limits.max_chunk_segs == 0 || c->limits.max_list_chunks == 0 ||
	    c->limits.max_chunk_segs > RPCRDMA_DEF_CHUNK_SEGS ||
	    c->limits.max_list_chunks > RPCRDMA_DEF_LIST_CHUNKS ||
	    c->limits.max_total_segs > RPCRDMA_DEF_TOTAL_SEGS)
		return -RPCRDMA_ERR_RANGE;
	if (c->msgp_align && (c->msgp_align < 4 || (c->msgp_align & (c->msgp_align - 1))))
		return -RPCRDMA_ERR_RANGE;
	if (c->max_message < c->inline_recv)
		return -RPCRDMA_ERR_RANGE;
	if (c->reply_read_chunks > RPCRDMA_RRC_NEVER ||
	    (c->role == RPCRDMA_ENG_SERVER && c->reply_read_chunks != RPCRDMA_RRC_NEVER &&
	     !c->max_done_pending))
		return -RPCRDMA_ERR_RANGE;
	return 0;
}

/* A lost connection fails every call of a requester, in both directions. */
static void client_fail_all(struct rpcrdma_eng *e)
{
	rpcrdma__eng_client_fail_all(e, -RPCRDMA_ERR_DISCONN);
	rpcrdma__eng_bc_fail_all(e);
}

static void server_fail_all(struct rpcrdma_eng *e)
{
	rpcrdma__eng_server_fail_all(e);
	rpcrdma__eng_bc_fail_all(e);
}

int rpcrdma_eng_create(const struct rpcrdma_eng_config *cfg, const struct rpcrdma_eng_upper *up,
		       struct rpcrdma_eng **out)
{
	struct rpcrdma_eng *e;
	int rc;

	if (!cfg || !up || !out)
		return -RPCRDMA_ERR_INVAL;
	if ((cfg->role == RPCRDMA_ENG_CLIENT && !up->call_done) ||
	    (cfg->role == RPCRDMA_ENG_SERVER && !up->request))
		return -RPCRDMA_ERR_INVAL;
	rc = check_config(cfg);
	if (rc)
		return rc;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -RPCRDMA_ERR_NOMEM;
	e->cfg = *cfg;
	e->up = *up;
	e->fail_all = cfg->role == RPCRDMA_ENG_CLIENT ? client_fail_all : server_fail_all;
	e->inline_send = RPCRDMA_DEF_INLINE;   /* until the peer says more (RFC 8797) */
	e->inline_recv = cfg->inline_recv & ~1023u;
	e->inline_reply = RPCRDMA_DEF_INLINE;  /* likewise: the peer sends this much at least */
	e->granted = 1;                        /* RFC 8166 §3.3.3 */
	e->grant_hi = 1;
	e->st.inline_send = e->inline_send;
	e->st.inline_recv = e->inline_recv;
	rc = rpcrdma__eng_bc_init(e);
	if (rc) {
		rpcrdma__eng_bc_destroy(e);
		free(e);
		return rc;
	}
	*out = e;
	return 0;
}

/* A client also says that it takes read chunks in replies (RFC 5666 §3.5), so that a
 * librpcrdma server may send a reply longer than the reply chunk offered. Neither role
 * sets RFC 8797's Remote Invalidation flag (§3.2): a server receives no replies, and our
 * client registers most chunks with ibv_reg_mr, which a peer's Send With Invalidate
 * cannot invalidate (the device would fail the connection), so it cannot promise to
 * take one (docs/ENGINE.md). */
int rpcrdma_eng_pdata(const struct rpcrdma_eng *e, void *buf, size_t cap)
{
	struct rpcrdma_pdata pd = {
		.version = RPCRDMA_PDATA_VERSION,
		.flags = 0,
		.send_size = e->cfg.inline_send & ~1023u,
		.recv_size = e->inline_recv,
		.ext_flags = e->cfg.role == RPCRDMA_ENG_CLIENT ? RPCRDMA_PDATA_X_REPLY_READS : 0,
	};

	return rpcrdma_pdata_encode(&pd, buf, cap);
}

/* RFC 8797 §4: our inline sends may be as large as the peer's receive buffers, never
 * larger than we were configured for; without its block, 1024 bytes. */
void rpcrdma_eng_set_peer_pdata(struct rpcrdma_eng *e, const void *pd, size_t len)
{
	struct rpcrdma_pdata p;
	uint32_t peer_recv = RPCRDMA_DEF_INLINE, peer_send = RPCRDMA_DEF_INLINE;

	e->peer_ext = 0;
	e->peer_flags = 0;
	if (pd && len && rpcrdma_pdata_decode(pd, len, &p) == 0) {
		peer_recv = p.recv_size;
		peer_send = p.send_size;
		e->peer_ext = p.ext_flags;
		e->peer_flags = p.flags;
	}
	e->inline_send = peer_recv < e->cfg.inline_send ? peer_recv : e->cfg.inline_send;
	e->inline_reply = peer_send < e->inline_recv ? peer_send : e->inline_recv;
	e->st.inline_send = e->inline_send;
}

uint32_t rpcrdma_eng_inline_reply(const struct rpcrdma_eng *e)
{
	return e->inline_reply;
}

uint32_t rpcrdma_eng_set_inline_send(struct rpcrdma_eng *e, uint32_t size)
{
	if (size < RPCRDMA_DEF_INLINE)
		size = RPCRDMA_DEF_INLINE;
	e->inline_send = size < e->cfg.inline_send ? size : e->cfg.inline_send;
	e->st.inline_send = e->inline_send;
	return e->inline_send;
}

/* ---- resources ---- */



static int alloc_bufs(struct rpcrdma_eng *e, uint32_t n, uint32_t size, uint8_t **mem,
		      struct rpcrdma_mr **mr, struct eng_buf **bufs, struct eng_buf **freel,
		      uint32_t kind)
{
	uint32_t i;
	int rc;

	*mem = aligned_alloc(64, (size_t)n * size);
	*bufs = calloc(n, sizeof(**bufs));
	if (!*mem || !*bufs)
		return -RPCRDMA_ERR_NOMEM;
	rc = rpcrdma__eng_reg(e, *mem, (size_t)n * size, RPCRDMA_ACC_LOCAL, mr);
	if (rc)
		return rc;
	for (i = n; i-- > 0;) {
		(*bufs)[i].op.kind = kind;
		(*bufs)[i].op.owner = &(*bufs)[i];
		(*bufs)[i].mem = *mem + (size_t)i * size;
		(*bufs)[i].next = *freel;
		*freel = &(*bufs)[i];
	}
	return 0;
}


/* Receive buffers: a client needs one per call in flight; a server one per credit it
 * grants plus one per RDMA_DONE it awaits (RFC 5666 §3.8); both, one per backward call
 * (RFC 8167 §4.3). */
static uint32_t recv_buffers(const struct rpcrdma_eng *e)
{
	uint32_t bc = rpcrdma__eng_bc_recvs(e);

	if (e->cfg.role == RPCRDMA_ENG_CLIENT)
		return e->cfg.max_credits + 1 + bc;
	return e->cfg.max_credits + bc +
	       (rpcrdma__eng_reply_reads(e) ? e->cfg.max_done_pending : 0);
}

int rpcrdma_eng_start(struct rpcrdma_eng *e, const struct rpcrdma_eng_lower *lo,
		      uint64_t now_ms)
{
	int rc;

	if (e)
		e->now = now_ms;
	if (!e || !lo || e->started || !lo->mr_reg || !lo->mr_dereg || !lo->post_recv ||
	    !lo->post_send || !lo->post_read || !lo->post_write)
		return -RPCRDMA_ERR_INVAL;
	e->lo = *lo;
	e->started = true;
	e->nrbufs = recv_buffers(e);
	e->nsbufs = e->cfg.max_credits + SEND_SLACK + rpcrdma__eng_bc_sends(e);
	rc = alloc_bufs(e, e->nrbufs, e->inline_recv, &e->rmem, &e->rmr, &e->rbufs, &e->rfree,
			OPK_RECV);
	if (!rc)
		rc = alloc_bufs(e, e->nsbufs, e->cfg.inline_send, &e->smem, &e->smr, &e->sbufs,
				&e->sfree, OPK_SEND);
	if (rc)
		goto out_fail;
	if (e->cfg.role == RPCRDMA_ENG_SERVER) {
		/* the first credit every client holds (RFC 8166 §3.3.3) needs a receive */
		if (e->cfg.pool && !rpcrdma__pool_take(e->cfg.pool, 1)) {
			rc = -RPCRDMA_ERR_NOSPC;
			goto out_fail;
		}
		e->pool_taken = 1;
		rc = rpcrdma__eng_post_recv(e);
		if (rc)
			goto out_fail;
	}
	rc = rpcrdma__eng_bc_start(e);
	if (rc)
		goto out_fail;
	return 0;
out_fail:
	e->dead = true;
	e->dead_reason = rc;
	return rc;
}







/* ---- lists ---- */



/* ---- tasks waiting for resources ---- */




static void unstall_all(struct rpcrdma_eng *e, uint64_t now)
{
	struct eng_task *t;

	while ((t = e->stall_head) != NULL) {
		if (t->resume(e, t, now) == -RPCRDMA_ERR_AGAIN)
			return;
		/* resume may have re-queued nothing; pop this one */
		if (e->stall_head == t) {
			e->stall_head = t->next;
			if (!e->stall_head)
				e->stall_tail = NULL;
			t->queued = false;
		}
		e->stall_since = now;   /* work moves: the wait starts again */
	}
}



static void repost_owed(struct rpcrdma_eng *e);

static void pump(struct rpcrdma_eng *e, uint64_t now)
{
	if (e->dead)
		return;
	repost_owed(e);
	unstall_all(e, now);
	if (e->cfg.role == RPCRDMA_ENG_CLIENT && !e->dead)
		rpcrdma__eng_client_pump(e, now);
	else if (!e->dead)
		rpcrdma__eng_bc_pump(e);
}

/* ---- failure ---- */


void rpcrdma_eng_shutdown(struct rpcrdma_eng *e, int reason)
{
	struct rpcrdma_eng_upper saved;

	if (!e || e->dead)
		return;
	saved = e->up;
	e->up.fatal = NULL;
	rpcrdma__eng_fail(e, reason ? reason : -RPCRDMA_ERR_DISCONN, RPCRDMA_EC_COUNT);
	e->up = saved;
}

int rpcrdma_eng_sending(const struct rpcrdma_eng *e)
{
	return e && !e->dead && e->sq_used > 0;
}

int rpcrdma_eng_alive(const struct rpcrdma_eng *e)
{
	return e && e->started && !e->dead;
}

/* ---- completions ---- */

/* Post a receive again; a connection already lost is a disconnect, not a lack of
 * resources (its DISCONNECT event may still be on its way). */
static void repost(struct rpcrdma_eng *e)
{
	int rc;

	if (e->dead)
		return;
	rc = rpcrdma__eng_post_recv(e);
	/* Gone: the provider reports DISCONNECT after the completions it has already
	 * delivered (its contract), and messages received whole before it, such as the
	 * rest of a batch of RDMA_DONEs, are still acted on until then. A full queue: it is
	 * posted on the next event, before anything is sent. */
	if (rc == -RPCRDMA_ERR_AGAIN)
		e->recvs_owed++;
	else if (rc && rc != -RPCRDMA_ERR_DISCONN)
		rpcrdma__eng_fail(e, rc, RPCRDMA_EC_NO_RESOURCES);
}

static void repost_owed(struct rpcrdma_eng *e)
{
	while (e->recvs_owed && !e->dead) {
		int rc = rpcrdma__eng_post_recv(e);

		if (rc == -RPCRDMA_ERR_AGAIN)
			return;
		if (rc && rc != -RPCRDMA_ERR_DISCONN) {
			rpcrdma__eng_fail(e, rc, RPCRDMA_EC_NO_RESOURCES);
			return;
		}
		e->recvs_owed--;
	}
}

static void on_recv(struct rpcrdma_eng *e, struct eng_buf *b, const struct rpcrdma_cqe *c,
		    uint64_t now)
{
	bool keep;

	e->recvs_posted--;
	if (c->status || e->dead) {
		b->next = e->rfree;
		e->rfree = b;
		if (c->status)
			rpcrdma__eng_fail(e, c->status, RPCRDMA_EC_DISCONNECT);
		return;
	}
	e->st.inline_bytes_rcvd += c->len;
	/* the buffer goes back only after its contents were used: a callback below may
	 * post receives */
	if (e->cfg.role == RPCRDMA_ENG_CLIENT) {
		bool matched = rpcrdma__eng_client_recv(e, b->mem, c->len, now);

		b->next = e->rfree;
		e->rfree = b;
		/* a message that answered no call used a receive meant for a reply */
		if (!matched)
			repost(e);
		return;
	}
	keep = rpcrdma__eng_server_recv(e, b->mem, c->len, now);
	b->next = e->rfree;
	e->rfree = b;
	/* keep every receive this connection owns posted (credits already granted); one
	 * posted for a backward reply (RFC 8167) has done its work */
	if (keep)
		repost(e);
}

static void on_send(struct rpcrdma_eng *e, struct eng_buf *b, const struct rpcrdma_cqe *c)
{
	uint32_t what = b->send_for;

	e->sq_used--;
	if (what == SEND_DONE)
		rpcrdma__eng_client_done_sent(e);
	else if (what == SEND_REPLY || what == SEND_ERROR)
		rpcrdma__eng_server_sent(e, b, c->status);
	rpcrdma__eng_sbuf_put(e, b);
	if (c->status)
		rpcrdma__eng_fail(e, c->status, RPCRDMA_EC_DISCONNECT);
}

void rpcrdma_eng_on_cqe(struct rpcrdma_eng *e, const struct rpcrdma_cqe *c, uint64_t now)
{
	struct eng_op *op;

	if (!e || !c)
		return;
	e->now = now;
	if (c->op == RPCRDMA_OP_DISCONNECT) {
		rpcrdma__eng_fail(e, -RPCRDMA_ERR_DISCONN, RPCRDMA_EC_DISCONNECT);
		return;
	}
	op = c->ctx;
	if (!op)
		return;
	if (op->kind != OPK_RECV)
		e->sq_seen_at = now;   /* this side's work moves (send_stalled) */
	switch (op->kind) {
	case OPK_RECV:
		on_recv(e, op->owner, c, now);
		break;
	case OPK_SEND:
		on_send(e, op->owner, c);
		break;
	case OPK_CALL_READ:
		e->sq_used--;
		rpcrdma__eng_client_read_done(e, op->owner, c->status, now);
		break;
	case OPK_REQ_RDMA:
		e->sq_used--;
		rpcrdma__eng_server_rdma_done(e, op->owner, c->status, now);
		break;
	default:
		break;
	}
	pump(e, now);
}

uint64_t rpcrdma_eng_tick(struct rpcrdma_eng *e, uint64_t now)
{
	uint64_t next;

	if (!e || e->dead)
		return UINT64_MAX;
	e->now = now;
	/* a peer that takes nothing for that long is as good as gone: bounded retries */
	if (e->stall_head && e->cfg.stall_timeout_ms &&
	    now >= e->stall_since + e->cfg.stall_timeout_ms) {   /* now may be a little stale */
		rpcrdma__eng_fail(e, -RPCRDMA_ERR_TIMEDOUT, RPCRDMA_EC_STALLED);
		return UINT64_MAX;
	}
	if (e->cfg.role == RPCRDMA_ENG_CLIENT)
		next = rpcrdma__eng_client_tick(e, now);
	else
		next = rpcrdma__eng_server_tick(e, now);
	pump(e, now);
	return next;
}

/* ---- teardown ---- */

void rpcrdma_eng_destroy(struct rpcrdma_eng *e)
{
	if (!e)
		return;
	rpcrdma_eng_shutdown(e, -RPCRDMA_ERR_DISCONN);
	if (e->cfg.role == RPCRDMA_ENG_CLIENT)
		rpcrdma__eng_client_destroy(e);
	else
		rpcrdma__eng_server_destroy(e);
	rpcrdma__eng_bc_destroy(e);
	rpcrdma__eng_dereg(e, &e->rmr);
	rpcrdma__eng_dereg(e, &e->smr);
	rpcrdma__pool_give(e->cfg.pool, e->pool_taken);
	/* last: freeing the calls and requests above returned their buffers here */
	rpcrdma__bufcache_free(&e->cache);
	free(e->rmem);
	free(e->smem);
	free(e->rbufs);
	free(e->sbufs);
	free(e);
}

/* ---- server receive budget ---- */


/* ---- statistics ---- */

void rpcrdma_eng_stats(const struct rpcrdma_eng *e, struct rpcrdma_eng_stats *out)
{
	*out = e->st;
	out->credits_in_use = e->cfg.role == RPCRDMA_ENG_CLIENT ? e->in_use : e->outstanding;
	out->recvs_posted = e->recvs_posted;
}

static const char *const ec_names[RPCRDMA_EC_COUNT] = {
	[RPCRDMA_EC_DECODE] = "decode",
	[RPCRDMA_EC_UNKNOWN_XID] = "unknown_xid",
	[RPCRDMA_EC_CREDIT_OVERRUN] = "credit_overrun",
	[RPCRDMA_EC_ERR_VERS_RCVD] = "err_vers_rcvd",
	[RPCRDMA_EC_ERR_CHUNK_RCVD] = "err_chunk_rcvd",
	[RPCRDMA_EC_ERR_VERS_SENT] = "err_vers_sent",
	[RPCRDMA_EC_ERR_CHUNK_SENT] = "err_chunk_sent",
	[RPCRDMA_EC_REPLY_TOO_BIG] = "reply_too_big",
	[RPCRDMA_EC_TOO_LONG] = "too_long",
	[RPCRDMA_EC_CHUNK_MISMATCH] = "chunk_mismatch",
	[RPCRDMA_EC_RDMA_FAILED] = "rdma_failed",
	[RPCRDMA_EC_DONE_TIMEOUT] = "done_timeout",
	[RPCRDMA_EC_CREDIT_TIMEOUT] = "credit_timeout",
	[RPCRDMA_EC_UNEXPECTED] = "unexpected",
	[RPCRDMA_EC_NO_RESOURCES] = "no_resources",
	[RPCRDMA_EC_DISCONNECT] = "disconnect",
	[RPCRDMA_EC_STALLED] = "stalled",
};

const char *rpcrdma_eng_fatal_class(const struct rpcrdma_eng *e)
{
	return e && e->dead_class ? rpcrdma_eng_errclass_name(e->dead_class - 1) : NULL;
}

const char *rpcrdma_eng_errclass_name(uint32_t ec)
{
	return ec < RPCRDMA_EC_COUNT ? ec_names[ec] : "unknown";
}

