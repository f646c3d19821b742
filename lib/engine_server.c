/* SPDX-License-Identifier: BSD-2-Clause */
/* The responder side of the engine (RFC 5666 §3-§5, RFC 8166 §4.5): validate each
 * message, answer ERR_VERS / ERR_CHUNK, pull read chunks, hand the call up; send the
 * reply inline, with its results RDMA-Written into write chunks, the whole reply written
 * into the reply chunk, or (when configured) offered as read chunks until RDMA_DONE.
 * Credits are granted by policy and a client beyond its grant is disconnected. */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "xdr_be.h"

static struct rpcrdma_eng_req *req_of(struct eng_link *k)
{
	return k ? ENG_OF(k, struct rpcrdma_eng_req, link) : NULL;
}

static void release_mrs(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r)
{
	uint32_t i;

	for (i = 0; i < r->nmrs; i++)
		rpcrdma__eng_dereg(e, &r->mrs[i]);
	r->nmrs = 0;
	rpcrdma__eng_dereg(e, &r->call_mr);
}

/* Requests kept per connection for the next ones: a 6.6 KiB object from malloc was the
 * server's costliest step per call (objpool.h); two serve a client at depth 1, and as
 * many as 32 calls in flight leave. They go back to malloc once the connection has had
 * no request for a while (rpcrdma__eng_objs_release). */
#define REQS_KEPT 32

static void req_free(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r)
{
	rpcrdma__list_unlink(&e->reqs, &r->link);
	rpcrdma__bufcache_put(&e->cache, r->call, r->call_cap);
	free(r->flat);
	if (rpcrdma__objpool_put(&e->objs, r, REQS_KEPT))
		e->objs_since = e->now;
	else
		free(r);
}

static struct rpcrdma_eng_req *req_alloc(struct rpcrdma_eng *e)
{
	struct rpcrdma_eng_req *r = rpcrdma__objpool_get(&e->objs);

	if (!r)
		return calloc(1, sizeof(*r));
	memset(r, 0, sizeof(*r));
	return r;
}

static bool req_busy(const struct rpcrdma_eng_req *r)
{
	return r->ops_pending || r->send_posted;
}

/* The request is over for the engine; the object goes once nothing posted refers to it. */
static void finish(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r, int status)
{
	bool tell = r->upper_saw && r->state != REQ_FINISHED;

	rpcrdma__eng_unstall(e, &r->task);
	release_mrs(e, r);
	if (r->outstanding) {
		r->outstanding = false;
		e->outstanding--;
	}
	if (r->overtaken) {
		r->overtaken = false;
		e->overtaken--;
	}
	if (r->awaits_done) {
		r->awaits_done = false;
		e->done_pending--;
	}
	r->state = REQ_FINISHED;
	if (tell && e->up.reply_done)
		e->up.reply_done(e->up.ctx, r, status);
	if (!req_busy(r))
		req_free(e, r);
}

/* ---- credits (RFC 5666 §3.3) ---- */

/* Grant what the client asks, within the per-connection cap and the receive buffers this
 * connection could post (shared budget), with one receive kept for every RDMA_DONE
 * awaited; receives are posted before the grant leaves; never 0. */
static uint32_t grant_credits(struct rpcrdma_eng *e, const struct rpcrdma_eng_req *r)
{
	uint32_t want = r->credits_asked, owned, g;

	if (want == 0)
		want = 1;
	if (want > e->cfg.max_credits)
		want = e->cfg.max_credits;
	owned = rpcrdma__eng_take_recvs(e, want + e->done_pending);
	g = owned > e->done_pending ? owned - e->done_pending : 1;
	if (g > want)
		g = want;
	if (g > e->grant_hi)
		e->grant_hi = g;
	e->st.credits_granted = g;
	if (g > e->st.credits_max)
		e->st.credits_max = g;
	return g;
}

/* ---- sending a reply ---- */

/* A client takes a reply as proof that every batched call it sent before that call was
 * taken, and reuses their credits (RFC 5666 §3.3 returns credits only with replies;
 * batched calls get none). Calls dispatched at once (the RPC layer's lanes) may be
 * answered out of order, so the server keeps the same books: a call received before the
 * one answered stops counting against the grant, while it still runs. The client still
 * counts those of them that await a reply, so this never lets it send more than it may. */
static void free_overtaken(struct rpcrdma_eng *e, const struct rpcrdma_eng_req *answered)
{
	struct eng_link *k;

	for (k = e->reqs.head; k; k = k->next) {
		struct rpcrdma_eng_req *r = req_of(k);

		if (r->outstanding && r->seq < answered->seq) {
			r->outstanding = false;
			e->outstanding--;
			r->overtaken = true;
			e->overtaken++;
		}
	}
}

static int encode_reply(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r, struct eng_buf *b)
{
	const struct rpcrdma_reply_args *a = r->args;
	struct rpcrdma_msg *m = &r->out;
	int n;

	m->proc = r->form;
	m->credits = grant_credits(e, r);
	n = rpcrdma_encode(m, b->mem, e->inline_send);
	if (n < 0)
		return n;
	if (r->form == RPCRDMA_MSG || r->form == RPCRDMA_MSGP)
		n += (int)rpcrdma__flatten(b->mem + n, a->xdr, a->xdr_len, a->items, a->nitems,
					   r->inline_mask, m->align, m->thresh, (uint32_t)n);
	return n;
}

/* RFC 8797 §3.2: a reply may invalidate one registration of its client, when the
 * client said in its private data that it takes Send With Invalidate, and only a handle
 * that client named in this call. As Linux's svcrdma (svc_rdma_get_inv_rkey), only when
 * every segment of the call's chunks names the same handle (the client registered one
 * region for the call), and never with an RDMA_ERROR. Providers that cannot (libfabric's)
 * leave post_send_inv NULL. */
static bool remote_inv(const struct rpcrdma_eng *e, const struct rpcrdma_eng_req *r)
{
	return r->has_inv && r->form != RPCRDMA_ERROR && e->lo.post_send_inv &&
	       (e->peer_flags & RPCRDMA_PDATA_F_REMOTE_INV);
}

static int post_send(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r)
{
	struct eng_buf *b = rpcrdma__eng_sbuf_get(e);
	int n, rc;

	n = encode_reply(e, r, b);
	if (n < 0) {
		rpcrdma__eng_sbuf_put(e, b);
		return n;
	}
	b->send_for = r->form == RPCRDMA_ERROR ? SEND_ERROR : SEND_REPLY;
	b->owner = r;
	if (remote_inv(e, r))
		rc = rpcrdma__eng_post_send_inv(e, b, (uint32_t)n, r->form, r->inv_handle);
	else
		rc = rpcrdma__eng_post_send(e, b, (uint32_t)n, r->form);
	if (rc) {
		rpcrdma__eng_sbuf_put(e, b);
		return rc;
	}
	r->send_posted = true;
	r->send_at = e->now;
	/* once the reply is on its way the client may reuse the credit */
	if (r->outstanding) {
		r->outstanding = false;
		e->outstanding--;
	}
	/* answered: no longer a call that still runs */
	if (r->overtaken) {
		r->overtaken = false;
		e->overtaken--;
	}
	if (e->outstanding)
		free_overtaken(e, r);
	if (r->form != RPCRDMA_ERROR)
		e->st.replies++;
	if (remote_inv(e, r))
		e->st.remote_inv++;
	return 0;
}

/* The reply's RDMA Writes not yet posted; any the provider cannot take yet wait. */
static int post_writes(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r)
{
	int rc;

	while (r->wr_next < r->nwr) {
		struct rpcrdma_segment segs[RPCRDMA_DEF_TOTAL_SEGS];
		uint32_t i = r->wr_next, n;

		if (!rpcrdma__eng_sq_room(e, 1))
			return -RPCRDMA_ERR_AGAIN;
		n = rpcrdma__segs_with_bytes(segs, r->wr[i].remote, r->wr[i].nremote);
		e->sq_used++;
		rc = e->lo.post_write(e->lo.ctx, &r->wr[i].local, 1, segs, n, &r->op);
		if (rc) {
			e->sq_used--;
			return rc;
		}
		r->wr_next++;
		r->ops_pending++;
		e->st.rdma_writes++;
		e->st.rdma_write_bytes += r->wr[i].local.len;
	}
	r->nwr = r->wr_next = 0;
	return 0;
}

/* RDMA Writes, then the Send: posted together when the provider places Writes before a
 * later Send (RFC 5666 §2's ordering), else the Send waits for the Writes' completions.
 * Resumable: whatever part went already does not go again. */
static int transmit(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r)
{
	int rc;

	if (r->send_posted || r->reply_sent)
		return 0;
	rc = post_writes(e, r);
	if (rc)
		return rc;
	if (!e->cfg.write_send_ordered && r->ops_pending)
		return 0;    /* the Send waits for Writes already posted */
	if (!rpcrdma__eng_sq_room(e, 1) || !e->sfree)
		return -RPCRDMA_ERR_AGAIN;
	return post_send(e, r);
}

static int resume_transmit(struct rpcrdma_eng *e, struct eng_task *t, uint64_t now)
{
	(void)now;
	return rpcrdma__eng_settle(e, transmit(e, ENG_OF(t, struct rpcrdma_eng_req, task)));
}

static void start_transmit(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r)
{
	r->state = REQ_SENDING;
	r->task.resume = resume_transmit;
	rpcrdma__eng_try(e, &r->task, transmit(e, r));
}

/* Make r's answer an RDMA_ERROR (RFC 5666 §4.3), with its call's XID. */
static void prepare_error(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r, uint32_t code)
{
	struct rpcrdma_msg *m = &r->out;

	release_mrs(e, r);
	r->nwr = r->wr_next = 0;
	m->proc = RPCRDMA_ERROR;
	m->err = code;
	m->vers_low = m->vers_high = RPCRDMA_VERSION;
	m->nreads = m->nwrites = 0;
	m->has_reply = 0;
	r->form = RPCRDMA_ERROR;
	rpcrdma__eng_count(e, code == RPCRDMA_WIRE_ERR_VERS ? RPCRDMA_EC_ERR_VERS_SENT :
			   RPCRDMA_EC_ERR_CHUNK_SENT);
}

static void reply_error(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r, uint32_t code)
{
	prepare_error(e, r, code);
	start_transmit(e, r);
}

/* An RDMA_ERROR for a message that never became a request (it could not be decoded):
 * sent when a Send buffer is free, else counted and dropped. */
static void send_error(struct rpcrdma_eng *e, uint32_t xid, uint32_t code)
{
	struct rpcrdma_msg_storage st;
	struct rpcrdma_msg m;
	struct eng_buf *b;
	int n, rc;

	if (!e->sfree || !rpcrdma__eng_sq_room(e, 1)) {
		rpcrdma__eng_count(e, RPCRDMA_EC_NO_RESOURCES);
		return;
	}
	rpcrdma_msg_bind(&m, &st);
	m.xid = xid;
	m.vers = RPCRDMA_VERSION;
	m.credits = (uint32_t)(e->st.credits_granted ? e->st.credits_granted : 1);
	m.proc = RPCRDMA_ERROR;
	m.err = code;
	m.vers_low = m.vers_high = RPCRDMA_VERSION;
	b = rpcrdma__eng_sbuf_get(e);
	n = rpcrdma_encode(&m, b->mem, e->inline_send);
	b->send_for = SEND_ERROR;
	rc = n < 0 ? n : rpcrdma__eng_post_send(e, b, (uint32_t)n, RPCRDMA_ERROR);
	if (rc) {
		rpcrdma__eng_sbuf_put(e, b);
		if (rc == -RPCRDMA_ERR_AGAIN)
			rpcrdma__eng_count(e, RPCRDMA_EC_NO_RESOURCES);   /* dropped, counted */
		else
			rpcrdma__eng_fail(e, -RPCRDMA_ERR_IO, RPCRDMA_EC_DISCONNECT);
		return;
	}
	rpcrdma__eng_count(e, code == RPCRDMA_WIRE_ERR_VERS ? RPCRDMA_EC_ERR_VERS_SENT :
			   RPCRDMA_EC_ERR_CHUNK_SENT);
}

/* ---- receiving a call ---- */

static void copy_chunk(struct rpcrdma_eng_req *r, uint32_t *k, struct rpcrdma_write_chunk *dst,
		       const struct rpcrdma_write_chunk *src)
{
	dst->segs = &r->segs[*k];
	dst->nsegs = src->nsegs;
	memcpy(dst->segs, src->segs, src->nsegs * sizeof(*src->segs));
	*k += src->nsegs;
}

/* Fold one segment's handle into the call's candidate for remote invalidation: the
 * first handle seen, until a segment names another (then none). */
static void inv_fold(struct rpcrdma_eng_req *r, bool *seen, uint32_t handle)
{
	if (!*seen) {
		*seen = true;
		r->has_inv = true;
		r->inv_handle = handle;
	} else if (r->inv_handle != handle) {
		r->has_inv = false;
	}
}

/* The handle a reply may invalidate (remote_inv): the one every segment of the call's
 * read list, write list and reply chunk names; none when they name several or none. */
static void pick_inv_handle(struct rpcrdma_eng_req *r, const struct rpcrdma_msg *m)
{
	bool seen = false;
	uint32_t i, j;

	r->has_inv = false;
	for (i = 0; i < m->nreads; i++)
		inv_fold(r, &seen, m->reads[i].seg.handle);
	for (i = 0; i < m->nwrites; i++)
		for (j = 0; j < m->writes[i].nsegs; j++)
			inv_fold(r, &seen, m->writes[i].segs[j].handle);
	for (j = 0; m->has_reply && j < m->reply.nsegs; j++)
		inv_fold(r, &seen, m->reply.segs[j].handle);
}

/* Keep what the reply needs from the call's header: its write list and reply chunk,
 * and its read list while the reads are outstanding. */
static void keep_header(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r,
			const struct rpcrdma_msg *m)
{
	uint32_t i, k = 0;

	for (i = 0; i < m->nwrites; i++) {
		copy_chunk(r, &k, &r->writes[i], &m->writes[i]);
		e->st.write_chunks++;
	}
	r->nwrites = m->nwrites;
	if (m->has_reply) {
		copy_chunk(r, &k, &r->reply, &m->reply);
		r->has_reply = true;
		e->st.reply_chunks++;
	}
	rpcrdma_msg_bind(&r->in, &r->in_hdr);
	memcpy(r->in.reads, m->reads, m->nreads * sizeof(*m->reads));
	r->in.nreads = m->nreads;
	pick_inv_handle(r, m);
	if (m->proc == RPCRDMA_MSGP) {
		r->in_align = m->align;
		r->in_thresh = m->thresh;
		r->in_base = m->hdr_len;
	}
}

/* Post the RDMA Reads that pull the call's read chunks into place; those the provider
 * cannot take yet wait and go later, in order. */
static int post_call_reads(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r)
{
	uint32_t n = rpcrdma__asm_nreads(&r->as);
	int rc;

	while (r->reads_next < n) {
		rc = rpcrdma__eng_post_asm_read(e, &r->as, r->reads_next, r->in.reads, r->call_mr,
						r->call, &r->op);
		if (rc)
			return rc;
		r->reads_next++;
		r->ops_pending++;
	}
	return 0;
}

static int resume_reads(struct rpcrdma_eng *e, struct eng_task *t, uint64_t now)
{
	(void)now;
	return rpcrdma__eng_settle(e, post_call_reads(e, ENG_OF(t, struct rpcrdma_eng_req, task)));
}

static void hand_up(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r)
{
	r->state = REQ_UPPER;
	r->upper_saw = true;
	e->up.request(e->up.ctx, r);
}

/* Calls go up in the order they arrived, as a stream transport delivers them: one whose
 * read chunks are still being pulled holds back the ones after it. The upper layer may
 * answer at once; a failure there fails every request, so the walk stops when dead. */
static void hand_up_ready(struct rpcrdma_eng *e)
{
	struct eng_link *k, *next;

	for (k = e->reqs.head; k && !e->dead; k = next) {
		struct rpcrdma_eng_req *r = req_of(k);

		next = k->next;
		if (r->state == REQ_READING)
			return;
		if (r->state == REQ_READY)
			hand_up(e, r);
	}
}

/* Reassemble the call: inline bytes copied, read chunks pulled into place (RFC 5666
 * §3.4; a position-zero chunk is the whole call, §3.5). */
static void start_call(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r,
		       const struct rpcrdma_msg *m)
{
	int rc = rpcrdma__asm_plan(&r->as, m, m->body_len, e->cfg.max_message);

	if (rc) {
		rpcrdma__eng_count(e, rc == -RPCRDMA_ERR_RANGE ? RPCRDMA_EC_TOO_LONG :
				   RPCRDMA_EC_CHUNK_MISMATCH);
		reply_error(e, r, RPCRDMA_WIRE_ERR_CHUNK);
		return;
	}
	r->call_len = (uint32_t)r->as.total;
	r->call = rpcrdma__bufcache_get(&e->cache, r->call_len, &r->call_cap);
	if (!r->call) {
		rpcrdma__eng_count(e, RPCRDMA_EC_NO_RESOURCES);
		reply_error(e, r, RPCRDMA_WIRE_ERR_CHUNK);
		return;
	}
	if (!r->as.pos_zero)
		rpcrdma__asm_copy_inline(&r->as, r->call, m->body);
	if (!rpcrdma__asm_nreads(&r->as)) {   /* no chunk, or only chunks of nothing */
		r->state = REQ_READY;
		hand_up_ready(e);
		return;
	}
	e->st.read_chunks += r->as.nchunks + r->as.pos_zero;
	e->st.long_calls += r->as.pos_zero;
	if (rpcrdma__eng_reg(e, r->call, r->call_len, RPCRDMA_ACC_READ_SINK, &r->call_mr)) {
		reply_error(e, r, RPCRDMA_WIRE_ERR_CHUNK);
		return;
	}
	r->state = REQ_READING;
	r->task.resume = resume_reads;
	rpcrdma__eng_try(e, &r->task, post_call_reads(e, r));
}

static void new_request(struct rpcrdma_eng *e, const struct rpcrdma_msg *m)
{
	struct rpcrdma_eng_req *r;

	/* RFC 5666 §3.3: more calls than granted is a fatal error for this connection. Calls
	 * overtaken by a later reply no longer count against the grant, but a client cannot
	 * pile up more of them than a grant's worth (see free_overtaken) */
	if (e->outstanding + 1 > e->grant_hi ||
	    (uint64_t)e->outstanding + e->overtaken + 1 > 2 * (uint64_t)e->grant_hi) {
		rpcrdma__eng_fail(e, -RPCRDMA_ERR_PROTO, RPCRDMA_EC_CREDIT_OVERRUN);
		return;
	}
	r = req_alloc(e);
	if (!r) {
		rpcrdma__eng_count(e, RPCRDMA_EC_NO_RESOURCES);
		send_error(e, m->xid, RPCRDMA_WIRE_ERR_CHUNK);
		return;
	}
	r->e = e;
	r->state = REQ_READING;   /* until its call is whole */
	r->xid = m->xid;
	r->credits_asked = m->credits;
	r->op.kind = OPK_REQ_RDMA;
	r->op.owner = r;
	r->outstanding = true;
	r->seq = e->recv_seq++;
	r->out.reads = r->out_reads;
	r->out.reads_cap = RPCRDMA_DEF_LIST_CHUNKS;
	r->out.writes = r->out_writes;
	r->out.writes_cap = RPCRDMA_DEF_LIST_CHUNKS;
	r->out.segs = r->out_segs;
	r->out.segs_cap = RPCRDMA_DEF_TOTAL_SEGS;
	r->out.xid = r->xid;
	r->out.vers = RPCRDMA_VERSION;
	e->outstanding++;
	rpcrdma__list_push(&e->reqs, &r->link);
	e->st.calls++;
	keep_header(e, r, m);
	start_call(e, r, m);
}

static void on_done(struct rpcrdma_eng *e, uint32_t xid)
{
	struct rpcrdma_eng_req *r = NULL;
	struct eng_link *k;

	/* the DONE may come before our Send's completion has been seen */
	for (k = e->reqs.head; k; k = k->next) {
		r = req_of(k);
		if (r->awaits_done && r->xid == xid &&
		    (r->state == REQ_WAIT_DONE || (r->state == REQ_SENDING && r->send_posted)))
			break;
		r = NULL;
	}
	if (!r) {
		rpcrdma__eng_count(e, RPCRDMA_EC_UNKNOWN_XID);
		return;
	}
	if (r->send_posted || r->ops_pending) {
		r->done_rcvd = true;   /* released when the Send completes */
		return;
	}
	finish(e, r, 0);
}

/* A malformed RDMA_ERROR or RDMA_DONE gets no RDMA_ERROR back: two peers would otherwise
 * answer each other's errors forever, and a DONE answers no call. */
static bool answers_nothing(const uint8_t *buf, uint32_t len)
{
	uint32_t proc;

	if (len < RPCRDMA_FIXED_HDR_LEN)
		return false;
	proc = rpcrdma__get32(buf + 12);
	return proc == RPCRDMA_ERROR || proc == RPCRDMA_DONE;
}

/* Returns whether the receive it used is posted again: not when it answered a backward
 * call (RFC 8167), whose receive was posted for that answer alone. */
bool rpcrdma__eng_server_recv(struct rpcrdma_eng *e, const uint8_t *buf, uint32_t len,
			      uint64_t now)
{
	struct rpcrdma_msg_storage st;
	struct rpcrdma_decode_status ds;
	struct rpcrdma_msg m;

	(void)now;
	if (len >= RPCRDMA_FIXED_HDR_LEN && rpcrdma__get32(buf + 12) < 5)
		e->st.rcvd[rpcrdma__get32(buf + 12)]++;
	if (len < 4) {
		rpcrdma__eng_count(e, RPCRDMA_EC_DECODE);   /* no XID to answer with */
		return true;
	}
	rpcrdma_msg_bind(&m, &st);
	if (rpcrdma_decode(buf, len, RPCRDMA_DIR_CALL, &e->cfg.limits, &m, &ds)) {
		/* RFC 5666 §4.3: ERR_VERS or ERR_CHUNK, with the message's XID; but an error
		 * is never answered with an error, nor a DONE (no call waits for it) */
		rpcrdma__eng_count(e, RPCRDMA_EC_DECODE);
		if (!answers_nothing(buf, len))
			send_error(e, rpcrdma__get32(buf), ds.answer);
		return true;
	}
	if (rpcrdma__eng_bc_server_recv(e, &m))
		return false;
	switch (m.proc) {
	case RPCRDMA_DONE:
		on_done(e, m.xid);
		return true;
	case RPCRDMA_ERROR:
		rpcrdma__eng_count(e, RPCRDMA_EC_UNEXPECTED);
		return true;
	case RPCRDMA_MSG:
	case RPCRDMA_MSGP:
		if (rpcrdma__eng_is_reply(&m)) {
			/* a reply to no backward call of ours */
			rpcrdma__eng_count(e, RPCRDMA_EC_UNKNOWN_XID);
			return true;
		}
		break;
	default:
		break;
	}
	new_request(e, &m);
	return true;
}

/* ---- RDMA completions ---- */

static void reads_done(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r)
{
	rpcrdma__eng_dereg(e, &r->call_mr);
	if (r->ops_failed) {
		/* RFC 8166 §4.5: a read chunk that cannot be pulled is answered ERR_CHUNK */
		r->ops_failed = 0;
		reply_error(e, r, RPCRDMA_WIRE_ERR_CHUNK);
	} else {
		rpcrdma__asm_zero_pads(&r->as, r->call);
		r->state = REQ_READY;
	}
	hand_up_ready(e);
}

/* The reply's Send completed and no Write of it is outstanding: done, unless read chunks
 * wait for RDMA_DONE. */
static void after_send(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r)
{
	if (r->form == RPCRDMA_ERROR) {
		finish(e, r, -RPCRDMA_ERR_NOSPC);
		return;
	}
	if (r->awaits_done && !r->done_rcvd) {
		r->state = REQ_WAIT_DONE;
		return;
	}
	finish(e, r, 0);
}

void rpcrdma__eng_server_rdma_done(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r,
				   int status, uint64_t now)
{
	(void)now;
	r->ops_pending--;
	if (status) {
		r->ops_failed++;
		rpcrdma__eng_count(e, RPCRDMA_EC_RDMA_FAILED);
	}
	if (r->ops_pending)
		return;
	if (r->state == REQ_FINISHED) {
		if (!req_busy(r))
			req_free(e, r);
		return;
	}
	if (r->state == REQ_READING) {
		if (r->reads_next == rpcrdma__asm_nreads(&r->as))
			reads_done(e, r);   /* else the rest wait for room to be posted */
		return;
	}
	if (r->state != REQ_SENDING)
		return;
	if (r->ops_failed) {
		finish(e, r, -RPCRDMA_ERR_IO);
		return;
	}
	if (r->reply_sent)
		after_send(e, r);             /* the Send completed before the Writes */
	else if (!r->send_posted)
		start_transmit(e, r);         /* Writes placed: the Send may go */
}

void rpcrdma__eng_server_sent(struct rpcrdma_eng *e, struct eng_buf *b, int status)
{
	struct rpcrdma_eng_req *r = b->owner;

	if (!r)
		return;
	r->send_posted = false;
	if (r->state == REQ_FINISHED) {
		if (!req_busy(r))
			req_free(e, r);
		return;
	}
	if (status && !r->done_rcvd) {
		finish(e, r, status);
		return;
	}
	r->reply_sent = true;
	/* its Writes' memory stays registered until their completions are seen too */
	if (!r->ops_pending)
		after_send(e, r);
}

/* ---- the reply (RFC 5666 §3.6, §4.3, §5; RFC 8166 §4.5) ---- */

static int reg_out(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r, const void *addr,
		   uint32_t len, unsigned acc, struct rpcrdma_mr **mr)
{
	int rc = rpcrdma__eng_reg(e, (void *)addr, len, acc, mr);

	if (!rc)
		r->mrs[r->nmrs++] = *mr;
	return rc;
}

/* The write list echoed: item i goes into write chunk i when there is one large enough;
 * every chunk returns with the lengths written (zero when unused). */
static int place_writes(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r,
			const struct rpcrdma_reply_args *a, uint32_t *placed, bool use)
{
	struct rpcrdma_msg *m = &r->out;
	uint32_t i, k = 0;
	int rc;

	*placed = 0;
	for (i = 0; i < r->nwrites; i++) {
		const struct rpcrdma_write_chunk *c = &r->writes[i];
		uint64_t len = 0;

		if (use && i < a->nitems && a->items[i].len <= rpcrdma_write_chunk_len(c)) {
			len = a->items[i].len;
			*placed |= 1u << i;
		}
		m->writes[i].segs = &m->segs[k];
		m->writes[i].nsegs = c->nsegs;
		rpcrdma__fill_segments(&m->segs[k], c, len);
		k += c->nsegs;
		if (len) {
			struct rpcrdma_mr *mr;

			rc = reg_out(e, r, a->items[i].data, a->items[i].len, RPCRDMA_ACC_LOCAL, &mr);
			if (rc)
				return rc;
			r->wr[r->nwr].local.mr = mr;
			r->wr[r->nwr].local.addr = (void *)a->items[i].data;
			r->wr[r->nwr].local.len = a->items[i].len;
			r->wr[r->nwr].remote = m->writes[i].segs;
			r->wr[r->nwr].nremote = c->nsegs;
			r->nwr++;
			e->st.write_chunk_bytes += len;
		}
	}
	m->nwrites = r->nwrites;
	return 0;
}

static uint32_t wsegs(const struct rpcrdma_eng_req *r)
{
	uint32_t i, n = 0;

	for (i = 0; i < r->nwrites; i++)
		n += r->writes[i].nsegs;
	return n;
}

static uint32_t popcount(uint32_t x)
{
	uint32_t n = 0;

	for (; x; x &= x - 1)
		n++;
	return n;
}

/* RDMA_MSGP when configured: every item inline, padded, if it fits (RFC 5666 §4.3). */
static bool try_msgp(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r,
		     const struct rpcrdma_reply_args *a)
{
	uint32_t placed, base, all = (1u << a->nitems) - 1u;
	uint64_t len;

	if (!e->cfg.msgp_align || !a->nitems)
		return false;
	base = rpcrdma__hdr_chunks_len(0, r->nwrites, wsegs(r), 0, false) + 8u;
	len = rpcrdma__flatten(NULL, a->xdr, a->xdr_len, a->items, a->nitems, all,
			       e->cfg.msgp_align, e->cfg.msgp_thresh, base);
	if (base + len > e->inline_send || place_writes(e, r, a, &placed, false))
		return false;
	r->form = RPCRDMA_MSGP;
	r->out.align = e->cfg.msgp_align;
	r->out.thresh = e->cfg.msgp_thresh;
	r->inline_mask = all;
	return true;
}

/* RFC 5666 mode: items without a write chunk offered as read chunks at their positions. */
static int offer_read_chunks(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r,
			     const struct rpcrdma_reply_args *a, uint32_t items)
{
	struct rpcrdma_msg *m = &r->out;
	uint32_t i, removed = 0;
	int rc;

	for (i = 0; i < a->nitems; i++) {
		struct rpcrdma_mr *mr;

		if (!(items & (1u << i)))
			continue;
		if (a->items[i].len) {
			rc = reg_out(e, r, a->items[i].data, a->items[i].len,
				     RPCRDMA_ACC_REMOTE_READ, &mr);
			if (rc)
				return rc;
			m->reads[m->nreads].position = a->items[i].offset + removed;
			m->reads[m->nreads].seg.handle = mr->handle;
			m->reads[m->nreads].seg.length = a->items[i].len;
			m->reads[m->nreads].seg.offset = mr->offset;
			m->nreads++;
			e->st.read_chunks++;
			e->st.read_chunk_bytes += a->items[i].len;
		}
		removed += eng_roundup4(a->items[i].len);
	}
	r->awaits_done = true;
	e->done_pending++;
	return 0;
}

/* The whole reply stream (items not placed in write chunks back inline) as one buffer:
 * the caller's own when nothing needs inserting. */
static const uint8_t *flat_reply(struct rpcrdma_eng_req *r, const struct rpcrdma_reply_args *a,
				 uint32_t mask, uint64_t len)
{
	if (!mask)
		return a->xdr;
	r->flat = malloc(len);
	if (r->flat)
		rpcrdma__flatten(r->flat, a->xdr, a->xdr_len, a->items, a->nitems, mask, 0, 0, 0);
	return r->flat;
}

static int use_reply_chunk(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r,
			   const uint8_t *flat, uint64_t len)
{
	struct rpcrdma_msg *m = &r->out;
	struct rpcrdma_segment *segs = &m->segs[wsegs(r)];
	struct rpcrdma_mr *mr;
	int rc = reg_out(e, r, flat, (uint32_t)len, RPCRDMA_ACC_LOCAL, &mr);

	if (rc)
		return rc;
	rpcrdma__fill_segments(segs, &r->reply, len);
	m->has_reply = 1;
	m->reply.segs = segs;
	m->reply.nsegs = r->reply.nsegs;
	r->wr[r->nwr].local.mr = mr;
	r->wr[r->nwr].local.addr = (void *)flat;
	r->wr[r->nwr].local.len = (uint32_t)len;
	r->wr[r->nwr].remote = segs;
	r->wr[r->nwr].nremote = r->reply.nsegs;
	r->nwr++;
	r->form = RPCRDMA_NOMSG;
	e->st.reply_chunk_bytes += len;
	e->st.long_replies++;
	return 0;
}

static int offer_long_reply(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r,
			    const uint8_t *flat, uint64_t len)
{
	struct rpcrdma_msg *m = &r->out;
	struct rpcrdma_mr *mr;
	int rc = reg_out(e, r, flat, (uint32_t)len, RPCRDMA_ACC_REMOTE_READ, &mr);

	if (rc)
		return rc;
	m->reads[0].position = 0;
	m->reads[0].seg.handle = mr->handle;
	m->reads[0].seg.length = (uint32_t)len;
	m->reads[0].seg.offset = mr->offset;
	m->nreads = 1;
	r->form = RPCRDMA_NOMSG;
	r->awaits_done = true;
	e->done_pending++;
	e->st.read_chunks++;
	e->st.read_chunk_bytes += len;
	e->st.long_replies++;
	return 0;
}

/* Choose the reply's form, in order of preference: inline (results in write chunks);
 * the reply chunk (RFC 5666 §5.2 prefers RDMA Write); when configured (RFC 5666 §3.5),
 * results offered as read chunks, then the whole reply as a position-zero read chunk.
 * Returns -RPCRDMA_ERR_NOSPC when none fits. */
static int plan_reply(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r,
		      const struct rpcrdma_reply_args *a)
{
	bool rrc = rpcrdma__eng_reply_reads(e);
	uint32_t placed, left, hdr;
	const uint8_t *flat;
	uint64_t len;
	bool chunk_fits;
	int rc;

	if (try_msgp(e, r, a))
		return 0;
	rc = place_writes(e, r, a, &placed, true);
	if (rc)
		return rc;
	left = ((a->nitems >= 32) ? ~0u : (1u << a->nitems) - 1u) & ~placed;
	hdr = rpcrdma__hdr_chunks_len(0, r->nwrites, wsegs(r), 0, false);
	len = rpcrdma__flatten(NULL, a->xdr, a->xdr_len, a->items, a->nitems, left, 0, 0, 0);
	r->form = RPCRDMA_MSG;
	r->inline_mask = left;
	if (hdr + len <= e->inline_send)
		return 0;
	chunk_fits = r->has_reply && len <= rpcrdma_write_chunk_len(&r->reply);
	/* the reply is our program's own: only the 32-bit segment length bounds it */
	if (len > UINT32_MAX || (!chunk_fits && !rrc))
		return -RPCRDMA_ERR_NOSPC;
	/* read chunks need a receive for the RDMA_DONE: wait for one to free up */
	if (!chunk_fits && e->done_pending >= e->cfg.max_done_pending)
		return -RPCRDMA_ERR_AGAIN;
	if (!chunk_fits && left &&
	    hdr + RPCRDMA__READ_ENTRY_LEN * popcount(left) + a->xdr_len <= e->inline_send) {
		r->inline_mask = 0;
		return offer_read_chunks(e, r, a, left);
	}
	flat = flat_reply(r, a, left, len);
	if (!flat)
		return -RPCRDMA_ERR_NOMEM;
	if (chunk_fits)
		return use_reply_chunk(e, r, flat, len);
	return offer_long_reply(e, r, flat, len);
}

/* RFC 8166 §4.5: a reply that fits nowhere the requester offered is answered ERR_CHUNK. */
static void refuse_reply(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r, int rc)
{
	if (r->awaits_done) {
		r->awaits_done = false;
		e->done_pending--;
	}
	r->out.nreads = 0;
	rpcrdma__eng_count(e, rc == -RPCRDMA_ERR_NOSPC ? RPCRDMA_EC_REPLY_TOO_BIG :
			   RPCRDMA_EC_NO_RESOURCES);
	prepare_error(e, r, RPCRDMA_WIRE_ERR_CHUNK);
}

/* Plan r's reply: 0 (ready to transmit, possibly as ERR_CHUNK, rc_out says which), or
 * -RPCRDMA_ERR_AGAIN with nothing held when it must wait for an RDMA_DONE slot. */
static int plan_or_refuse(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r, uint64_t now,
			  int *rc_out)
{
	int rc;

	r->done_deadline = now + e->cfg.done_timeout_ms;
	rc = plan_reply(e, r, r->args);
	*rc_out = rc;
	if (rc == -RPCRDMA_ERR_AGAIN) {
		release_mrs(e, r);
		r->nwr = r->wr_next = 0;
		return rc;
	}
	if (rc)
		refuse_reply(e, r, rc);
	return 0;
}

/* A reply that waited for an RDMA_DONE slot is planned again. */
static int resume_plan(struct rpcrdma_eng *e, struct eng_task *t, uint64_t now)
{
	struct rpcrdma_eng_req *r = ENG_OF(t, struct rpcrdma_eng_req, task);
	int rc;

	if (plan_or_refuse(e, r, now, &rc) == -RPCRDMA_ERR_AGAIN)
		return -RPCRDMA_ERR_AGAIN;
	r->task.resume = resume_transmit;
	return rpcrdma__eng_settle(e, transmit(e, r));
}

int rpcrdma_eng_reply(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r,
		      const struct rpcrdma_reply_args *a, uint64_t now)
{
	int rc;

	if (!e || !r || !a || r->state != REQ_UPPER)
		return -RPCRDMA_ERR_INVAL;
	e->now = now;
	if (e->dead || r->dead) {
		finish(e, r, -RPCRDMA_ERR_DISCONN);
		return -RPCRDMA_ERR_DISCONN;
	}
	if (!a->xdr || a->xdr_len < RPCRDMA_MIN_RPC_LEN ||
	    rpcrdma__check_items(a->items, a->nitems, a->xdr_len))
		return -RPCRDMA_ERR_INVAL;
	r->args = a;
	r->state = REQ_SENDING;
	if (plan_or_refuse(e, r, now, &rc) == -RPCRDMA_ERR_AGAIN) {
		/* waits, holding nothing, until an RDMA_DONE frees a slot */
		r->task.resume = resume_plan;
		rpcrdma__eng_stall(e, &r->task);
		return 0;
	}
	start_transmit(e, r);
	return rc ? -RPCRDMA_ERR_NOSPC : 0;
}

void rpcrdma_eng_req_drop(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r)
{
	if (!e || !r || r->state != REQ_UPPER)
		return;
	r->upper_saw = false;
	finish(e, r, 0);
}

/* ---- timers, failure, teardown ---- */

/* RFC 5666 §11: a client that withholds RDMA_DONE must not hold server memory forever. */
/* A reply's Send that has not completed for stall_timeout_ms, while nothing this side
 * posted completed either: a client that stopped posting receives, to which the device
 * retries the Send without end (the RNR retry count is the client's to set in its
 * connection request, and 7 means for ever), holding back everything posted after it.
 * (A Send queued behind long RDMA Writes that still move is not stalled.) The
 * connection is as good as gone, and it holds the reply's memory and credits: it goes,
 * counted as stalled. Returns when the oldest such Send is due, or UINT64_MAX. */
static uint64_t send_stalled(struct rpcrdma_eng *e, uint64_t now, bool *failed)
{
	uint64_t limit = e->cfg.stall_timeout_ms, soonest = UINT64_MAX;
	struct eng_link *k;

	*failed = false;
	if (!limit)
		return UINT64_MAX;
	for (k = e->reqs.head; k; k = k->next) {
		const struct rpcrdma_eng_req *r = req_of(k);

		if (!r->send_posted)
			continue;
		/* now may be older than send_at: a dispatcher posted after the caller read
		 * its clock */
		if (now >= r->send_at + limit && now >= e->sq_seen_at + limit) {
			*failed = true;
			return UINT64_MAX;
		}
		if (r->send_at + limit < soonest)
			soonest = r->send_at + limit;
	}
	return soonest;
}

uint64_t rpcrdma__eng_server_tick(struct rpcrdma_eng *e, uint64_t now)
{
	struct eng_link *k, *nk;
	uint64_t soonest, next;
	bool stalled;

	soonest = send_stalled(e, now, &stalled);
	if (stalled) {
		rpcrdma__eng_fail(e, -RPCRDMA_ERR_TIMEDOUT, RPCRDMA_EC_STALLED);
		return UINT64_MAX;
	}
	for (k = e->reqs.head; k; k = nk) {
		struct rpcrdma_eng_req *r = req_of(k);

		nk = k->next;
		if (r->state != REQ_WAIT_DONE)
			continue;
		if (r->done_deadline <= now) {
			rpcrdma__eng_count(e, RPCRDMA_EC_DONE_TIMEOUT);
			finish(e, r, -RPCRDMA_ERR_TIMEDOUT);
		} else if (r->done_deadline < soonest) {
			soonest = r->done_deadline;
		}
	}
	next = rpcrdma__eng_objs_release(e, now, e->outstanding != 0, free);
	return next < soonest ? next : soonest;
}

void rpcrdma__eng_server_fail_all(struct rpcrdma_eng *e)
{
	struct eng_link *k, *next;
	bool blocked = false;

	for (k = e->reqs.head; k; k = next) {
		struct rpcrdma_eng_req *r = req_of(k);

		next = k->next;
		blocked |= r->state == REQ_READING;
		if (r->state == REQ_READY && !blocked) {
			/* it arrived whole before the connection went: still served, in order,
			 * as over a stream transport; its reply will find no connection */
			r->dead = true;
			hand_up(e, r);
			continue;
		}
		if (r->state == REQ_UPPER) {
			/* the upper layer still holds it: its reply or drop frees it */
			r->dead = true;
			release_mrs(e, r);
			continue;
		}
		/* an RDMA_DONE proves the reply arrived, whatever its Send's completion says */
		if (r->state != REQ_FINISHED)
			finish(e, r, r->done_rcvd && !r->ops_pending ? 0 : -RPCRDMA_ERR_DISCONN);
	}
}

void rpcrdma__eng_server_destroy(struct rpcrdma_eng *e)
{
	struct rpcrdma_eng_req *r;

	while ((r = req_of(e->reqs.head)) != NULL) {
		release_mrs(e, r);
		req_free(e, r);
	}
	rpcrdma__objpool_free(&e->objs);
}

/* ---- accessors ---- */

uint32_t rpcrdma_eng_max_reads(const struct rpcrdma_eng *e)
{
	return e->cfg.sq_depth;
}

void rpcrdma_eng_req_set_user(struct rpcrdma_eng_req *r, void *user)
{
	r->user = user;
}

void *rpcrdma_eng_req_user(const struct rpcrdma_eng_req *r)
{
	return r->user;
}

const void *rpcrdma_eng_req_call(const struct rpcrdma_eng_req *r, uint32_t *len)
{
	*len = r->call_len;
	return r->call;
}

void *rpcrdma_eng_req_take_call(struct rpcrdma_eng_req *r, size_t *cap)
{
	void *buf = r->call;

	*cap = r->call_cap;
	r->call = NULL;
	r->call_cap = 0;
	return buf;
}

void rpcrdma_eng_buf_put(struct rpcrdma_eng *e, void *buf, size_t cap)
{
	rpcrdma__bufcache_put(&e->cache, buf, cap);
}

uint32_t rpcrdma_eng_req_xid(const struct rpcrdma_eng_req *r)
{
	return r->xid;
}

uint32_t rpcrdma_eng_req_nwrites(const struct rpcrdma_eng_req *r)
{
	return r->nwrites;
}

uint64_t rpcrdma_eng_req_write_cap(const struct rpcrdma_eng_req *r, uint32_t i)
{
	return i < r->nwrites ? rpcrdma_write_chunk_len(&r->writes[i]) : 0;
}

/* A write list echoed back may alone be larger than the inline size: no room inline. */
uint64_t rpcrdma_eng_req_reply_cap(const struct rpcrdma_eng_req *r)
{
	uint32_t hdr = rpcrdma__hdr_chunks_len(0, r->nwrites, wsegs(r), 0, false);
	uint64_t inl = r->e->inline_send > hdr ? r->e->inline_send - hdr : 0;

	if (r->has_reply && rpcrdma_write_chunk_len(&r->reply) > inl)
		return rpcrdma_write_chunk_len(&r->reply);
	return inl;
}

void rpcrdma_eng_req_msgp(const struct rpcrdma_eng_req *r, uint32_t *align, uint32_t *thresh,
			  uint32_t *base)
{
	*align = r->in_align;
	*thresh = r->in_thresh;
	*base = r->in_base;
}
