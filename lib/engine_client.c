/* SPDX-License-Identifier: BSD-2-Clause */
/* The requester side of the engine (RFC 5666 §3, §4): marshal calls into RDMA_MSG,
 * RDMA_MSGP or RDMA_NOMSG with read, write and reply chunks; keep within the credits
 * granted; take replies inline, from write chunks, from the reply chunk, or by pulling
 * their read chunks and answering RDMA_DONE. */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "xdr_be.h"

/* ---- call objects ---- */

static struct rpcrdma_eng_call *call_of(struct eng_link *k)
{
	return k ? ENG_OF(k, struct rpcrdma_eng_call, link) : NULL;
}

/* Every registration of a call goes before it completes to the caller (RFC 5666 §11). */
static void release_mrs(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c)
{
	uint32_t i;

	for (i = 0; i < c->nmrs; i++)
		rpcrdma__eng_dereg(e, &c->mrs[i]);
	c->nmrs = 0;
	rpcrdma__eng_dereg(e, &c->reply_mr);
	rpcrdma__eng_dereg(e, &c->asm_mr);
}

/* Calls kept, with their header storage (2.7 KiB) and inline reply buffer, for the next
 * ones (objpool.h): as many as 32 calls in flight leave, given back once the connection
 * has been idle a while (rpcrdma__eng_objs_release). */
#define CALLS_KEPT 32

static void free_kept_call(void *o)
{
	struct rpcrdma_eng_call *c = o;

	free(c->inl_buf);
	free(c->hdr);
	free(c);
}

static void free_call(struct rpcrdma_eng_call *c)
{
	struct rpcrdma_eng *e = c->e;   /* a kept call's first bytes link the pool */

	free(c->p0_buf);
	if (c->mrs != c->mrs_inline)
		free(c->mrs);
	rpcrdma__bufcache_put(&e->cache, c->reply_buf, c->reply_buf_cap);
	free(c->asm_buf);
	if (rpcrdma__objpool_put(&e->objs, c, CALLS_KEPT))
		e->objs_since = e->now;
	else
		free_kept_call(c);
}

/* A cleared call with its header storage (and the inline reply buffer it had). */
static struct rpcrdma_eng_call *alloc_call(struct rpcrdma_eng *e)
{
	struct rpcrdma_eng_call *c = rpcrdma__objpool_get(&e->objs);
	struct rpcrdma_msg_storage *hdr;
	uint8_t *inl;
	uint32_t inl_cap;

	if (c) {
		hdr = c->hdr;
		inl = c->inl_buf;
		inl_cap = c->inl_cap;
		memset(c, 0, sizeof(*c));
		c->hdr = hdr;
		c->inl_buf = inl;
		c->inl_cap = inl_cap;
		return c;
	}
	c = rpcrdma__zalloc(sizeof(*c));
	if (c && !(c->hdr = malloc(sizeof(*c->hdr)))) {
		free(c);
		c = NULL;
	}
	return c;
}

static void release_credit(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c)
{
	if (c->holds_credit) {
		c->holds_credit = false;
		e->in_use--;
	}
	if (c->orphan) {
		c->orphan = false;
		e->orphaned--;
	}
}

static void waitq_unlink(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c)
{
	rpcrdma__list_unlink(&e->waitq, &c->link);
	e->nwaiting--;
}

/* The call is finished: its memory is no longer exposed; tell the caller (or, for an
 * abandoned call, just free it once nothing refers to it). */
static void complete(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c, int status)
{
	release_mrs(e, c);
	rpcrdma__eng_unstall(e, &c->task);
	if (c->state == CALL_WAITING) {
		waitq_unlink(e, c);
		rpcrdma__list_push(&e->inflight, &c->link);
	}
	if (!c->done_owed)
		release_credit(e, c);
	c->state = CALL_COMPLETE;
	c->status = status;
	if (c->user_freed) {
		if (!c->reads_pending) {
			rpcrdma__list_unlink(&e->inflight, &c->link);
			free_call(c);
		}
		return;
	}
	e->up.call_done(e->up.ctx, c);
}

/* ---- marshalling (RFC 5666 §3.4, §3.5, §4.3) ---- */

static int add_mr(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c, const void *addr,
		  size_t len, unsigned acc, struct rpcrdma_segment *seg)
{
	struct rpcrdma_mr *mr;
	int rc = rpcrdma__eng_reg(e, (void *)addr, len, acc, &mr);

	if (rc)
		return rc;
	c->mrs[c->nmrs++] = mr;
	seg->handle = mr->handle;
	seg->length = (uint32_t)len;
	seg->offset = mr->offset;
	return 0;
}

static uint32_t all_items(uint32_t n)
{
	return n >= 32 ? ~0u : (1u << n) - 1u;
}

/* Header bytes of the reply if every write chunk comes back with one segment. */
static uint32_t reply_hdr_len(const struct rpcrdma_call_args *a)
{
	return rpcrdma__hdr_chunks_len(0, a->nresults, a->nresults, 0, false);
}

/* Every item back inline, if the whole call fits one Send: as RDMA_MSGP, padded (only
 * when configured), or as RDMA_MSG. DDP-eligible is not DDP-required (RFC 8166 §3.4):
 * for a few bytes a chunk would cost a registration and the server's RDMA Read round
 * trip, and Linux's client sends such calls inline too. */
static bool items_inline(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
			 const struct rpcrdma_call_args *a, bool reply_chunk, uint32_t proc)
{
	bool msgp = proc == RPCRDMA_MSGP;
	uint32_t align = msgp ? e->cfg.msgp_align : 0, base;
	uint64_t len;

	if ((msgp && !align) || !a->nitems)
		return false;
	base = rpcrdma__hdr_chunks_len(0, a->nresults, a->nresults, 1, reply_chunk) +
	       (msgp ? 8u : 0u);   /* RDMA_MSGP's align and thresh */
	len = rpcrdma__flatten(NULL, a->xdr, a->xdr_len, a->items, a->nitems,
			       all_items(a->nitems), align, e->cfg.msgp_thresh, base);
	if (base + len > e->inline_send)
		return false;
	c->proc = proc;
	c->mask = all_items(a->nitems);
	c->inline_len = (uint32_t)len;
	return true;
}

/* Read chunks: each non-empty item at its position in the stream with every item in
 * place, its XDR roundup in neither the chunk nor the inline stream (RFC 8166 §3.4.5). */
static int add_read_chunks(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
			   const struct rpcrdma_call_args *a, struct rpcrdma_msg *m)
{
	uint32_t i, removed = 0;
	int rc;

	for (i = 0; i < a->nitems; i++) {
		const struct rpcrdma_ddp_item *it = &a->items[i];
		struct rpcrdma_read_segment *r = &m->reads[m->nreads];

		if (!it->len)
			continue;
		rc = add_mr(e, c, it->data, it->len, RPCRDMA_ACC_REMOTE_READ, &r->seg);
		if (rc)
			return rc;
		r->position = it->offset + removed;
		removed += eng_roundup4(it->len);
		m->nreads++;
		e->st.read_chunks++;
		e->st.read_chunk_bytes += it->len;
	}
	return 0;
}

static int add_write_chunks(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
			    const struct rpcrdma_call_args *a, struct rpcrdma_msg *m)
{
	uint32_t i;
	int rc;

	for (i = 0; i < a->nresults; i++) {
		struct rpcrdma_ddp_buf *b = &a->results[i];

		m->writes[i].segs = &m->segs[i];
		m->writes[i].nsegs = 1;
		rc = add_mr(e, c, b->data, b->cap, RPCRDMA_ACC_REMOTE_WRITE, &m->segs[i]);
		if (rc)
			return rc;
		b->len = 0;
		b->used = 0;
		e->st.write_chunks++;
	}
	m->nwrites = a->nresults;
	return 0;
}

static int add_reply_chunk(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
			   const struct rpcrdma_call_args *a, struct rpcrdma_msg *m)
{
	struct rpcrdma_segment *seg = &m->segs[a->nresults];
	int rc;

	c->reply_cap = a->max_reply;
	c->reply_buf = rpcrdma__bufcache_get(&e->cache, c->reply_cap, &c->reply_buf_cap);
	if (!c->reply_buf)
		return -RPCRDMA_ERR_NOMEM;
	rc = rpcrdma__eng_reg(e, c->reply_buf, c->reply_cap, RPCRDMA_ACC_REMOTE_WRITE,
			      &c->reply_mr);
	if (rc)
		return rc;
	seg->handle = c->reply_mr->handle;
	seg->length = c->reply_cap;
	seg->offset = c->reply_mr->offset;
	m->has_reply = 1;
	m->reply.segs = seg;
	m->reply.nsegs = 1;
	e->st.reply_chunks++;
	return 0;
}

/* A long call (RFC 5666 §3.5): the whole stream in a position-zero read chunk. Its DDP
 * items go back inline in it unless combine_p0 asks for them as read chunks beside it:
 * Linux servers take a position-zero chunk or positioned chunks, not both. */
static int add_p0_chunk(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
			const struct rpcrdma_call_args *a, struct rpcrdma_msg *m, uint32_t nitems)
{
	const void *p0 = a->xdr;
	uint64_t len = a->xdr_len;
	int rc;

	if (nitems && !e->cfg.combine_p0) {
		len = rpcrdma__flatten(NULL, a->xdr, a->xdr_len, a->items, a->nitems,
				       all_items(a->nitems), 0, 0, 0);
		if (len > UINT32_MAX)
			return -RPCRDMA_ERR_RANGE;
		c->p0_buf = malloc(len);
		if (!c->p0_buf)
			return -RPCRDMA_ERR_NOMEM;
		rpcrdma__flatten(c->p0_buf, a->xdr, a->xdr_len, a->items, a->nitems,
				 all_items(a->nitems), 0, 0, 0);
		p0 = c->p0_buf;
	}
	rc = add_mr(e, c, p0, len, RPCRDMA_ACC_REMOTE_READ, &m->reads[0].seg);
	if (rc)
		return rc;
	m->reads[0].position = 0;
	m->nreads = 1;
	e->st.long_calls++;
	e->st.read_chunks++;
	e->st.read_chunk_bytes += len;
	return 0;
}

/* Choose the form: RDMA_MSGP when configured and it fits, else RDMA_MSG with the items
 * inline when it all fits, else RDMA_MSG with the items as read chunks, else RDMA_NOMSG
 * with the call in a position-zero read chunk (RFC 5666 §3.5 long call). A reply chunk
 * whenever the reply may not fit inline: our receive buffer, or less where the peer sends
 * less (RFC 8797 §4; 1024 bytes from a peer without private data, RFC 8166 §3.3.2). Linux's
 * client lowers its limit the same way; a server that cannot send a reply inline and
 * has no reply chunk answers ERR_CHUNK or nothing. */
static int marshal(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
		   const struct rpcrdma_call_args *a)
{
	struct rpcrdma_msg *m = &c->msg;
	bool reply_chunk = (uint64_t)a->max_reply + reply_hdr_len(a) > e->inline_reply;
	uint32_t nitems = 0, i, hdr;
	int rc;

	for (i = 0; i < a->nitems; i++)
		nitems += a->items[i].len != 0;
	m->xid = c->xid;
	m->vers = RPCRDMA_VERSION;
	c->mask = 0;
	if (!items_inline(e, c, a, reply_chunk, RPCRDMA_MSGP) &&
	    !items_inline(e, c, a, reply_chunk, RPCRDMA_MSG)) {
		hdr = rpcrdma__hdr_chunks_len(nitems, a->nresults, a->nresults, 1, reply_chunk);
		c->proc = hdr + a->xdr_len <= e->inline_send ? RPCRDMA_MSG : RPCRDMA_NOMSG;
		c->inline_len = c->proc == RPCRDMA_MSG ? a->xdr_len : 0;
	}
	m->proc = c->proc;
	if (c->proc == RPCRDMA_MSGP) {
		m->align = e->cfg.msgp_align;
		m->thresh = e->cfg.msgp_thresh;
	}
	if (c->proc == RPCRDMA_NOMSG) {
		rc = add_p0_chunk(e, c, a, m, nitems);
		if (rc)
			return rc;
	}
	if ((c->proc == RPCRDMA_MSG && !c->mask) || (c->proc == RPCRDMA_NOMSG && !c->p0_buf)) {
		rc = add_read_chunks(e, c, a, m);
		if (rc)
			return rc;
	}
	rc = add_write_chunks(e, c, a, m);
	if (!rc && reply_chunk)
		rc = add_reply_chunk(e, c, a, m);
	if (!rc && rpcrdma_encoded_len(m) + c->inline_len > e->inline_send)
		rc = -RPCRDMA_ERR_RANGE;   /* the chunk lists alone exceed the threshold */
	return rc;
}

static int check_call_args(const struct rpcrdma_eng *e, const struct rpcrdma_call_args *a)
{
	uint32_t i;
	int rc;

	if (!a->xdr || a->xdr_len < RPCRDMA_MIN_RPC_LEN)
		return -RPCRDMA_ERR_INVAL;
	rc = rpcrdma__check_items(a->items, a->nitems, a->xdr_len);
	if (rc)
		return rc;
	if (a->nresults > e->cfg.limits.max_list_chunks || a->max_reply > e->cfg.max_message)
		return -RPCRDMA_ERR_RANGE;
	for (i = 0; i < a->nresults; i++)
		if (!a->results[i].data && a->results[i].cap)
			return -RPCRDMA_ERR_INVAL;
	return 0;
}

int rpcrdma_eng_call(struct rpcrdma_eng *e, const struct rpcrdma_call_args *a, void *user,
		     uint64_t now, struct rpcrdma_eng_call **out)
{
	struct rpcrdma_eng_call *c;
	int rc;

	if (!e || !a || !out || e->cfg.role != RPCRDMA_ENG_CLIENT)
		return -RPCRDMA_ERR_INVAL;
	if (!e->started || e->dead)
		return -RPCRDMA_ERR_DISCONN;
	e->now = now;
	rc = check_call_args(e, a);
	if (rc)
		return rc;
	c = alloc_call(e);
	if (!c)
		return -RPCRDMA_ERR_NOMEM;
	c->mrs_cap = a->nitems + a->nresults + 1;
	c->mrs = c->mrs_cap <= CALL_MRS_INLINE ? c->mrs_inline
					       : rpcrdma__zalloc(c->mrs_cap * sizeof(*c->mrs));
	if (!c->mrs) {
		rc = -RPCRDMA_ERR_NOMEM;
		goto out_free;
	}
	rpcrdma_msg_bind(&c->msg, c->hdr);
	c->e = e;
	c->a = a;
	c->no_reply = a->no_reply != 0;
	c->user = user;
	c->xid = rpcrdma__get32(a->xdr);
	c->op.kind = OPK_CALL_READ;
	c->op.owner = c;
	rc = marshal(e, c, a);
	if (rc)
		goto out_release;
	c->state = CALL_WAITING;
	c->deadline = now + e->cfg.credit_timeout_ms;
	rpcrdma__list_push(&e->waitq, &c->link);
	e->nwaiting++;
	e->st.calls++;
	*out = c;
	rpcrdma__eng_client_pump(e, now);
	return 0;
out_release:
	release_mrs(e, c);
out_free:
	free_call(c);
	return rc;
}

/* ---- sending (RFC 5666 §3.3: never more calls than credits granted) ---- */

/* RFC 5666 §3.3: the value in a call is the credits the client would like. Ask for
 * twice what is in use or waiting, within max_credits: a connection that makes one call
 * now and then asks for 2, so its server keeps 2 receives posted for it rather than
 * max_credits; a pipeline that fills its grant has it doubled on the next reply. */
static uint32_t ask_credits(const struct rpcrdma_eng *e)
{
	uint64_t want = 2 * ((uint64_t)e->in_use + e->nwaiting);

	if (want < 1)
		want = 1;
	return want < e->cfg.max_credits ? (uint32_t)want : e->cfg.max_credits;
}

/* Receives posted cover every call that may still be answered, plus the one about to go:
 * a batched call settled without a reply leaves its receive for a later call. */
static bool needs_recv(const struct rpcrdma_eng *e)
{
	return e->recvs_posted < e->in_use + 1 + rpcrdma__eng_bc_recvs(e);
}

static int send_call(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c)
{
	const struct rpcrdma_call_args *a = c->a;
	struct eng_buf *b;
	int n, rc;

	/* the reply's receive is posted before the call can reach the server */
	if (needs_recv(e)) {
		rc = rpcrdma__eng_post_recv(e);
		if (rc)
			return rc;
	}
	b = rpcrdma__eng_sbuf_get(e);
	c->msg.credits = ask_credits(e);   /* the demand now, not when it was queued */
	n = rpcrdma_encode(&c->msg, b->mem, e->inline_send);
	if (n < 0) {
		rpcrdma__eng_sbuf_put(e, b);
		return n;
	}
	if (c->mask)   /* the items back in place; padded for RDMA_MSGP only */
		rpcrdma__flatten(b->mem + n, a->xdr, a->xdr_len, a->items, a->nitems, c->mask,
				 c->proc == RPCRDMA_MSGP ? e->cfg.msgp_align : 0,
				 e->cfg.msgp_thresh, (uint32_t)n);
	else if (c->proc == RPCRDMA_MSG)
		memcpy(b->mem + n, a->xdr, a->xdr_len);
	b->send_for = SEND_CALL;
	rc = rpcrdma__eng_post_send(e, b, (uint32_t)n + c->inline_len, c->proc);
	if (rc) {
		rpcrdma__eng_sbuf_put(e, b);
		return rc;
	}
	return 0;
}

void rpcrdma__eng_client_pump(struct rpcrdma_eng *e, uint64_t now)
{
	struct rpcrdma_eng_call *c;
	int rc;

	(void)now;
	while (!e->dead && (c = call_of(e->waitq.head)) != NULL) {
		if (e->in_use >= e->granted) {
			if (!c->credit_counted) {
				c->credit_counted = true;
				e->st.credit_waits++;
			}
			return;
		}
		if ((needs_recv(e) && !e->rfree) || !e->sfree || !rpcrdma__eng_sq_room(e, 1))
			return;
		rc = send_call(e, c);
		if (rc == -RPCRDMA_ERR_AGAIN)
			return;   /* the provider's queue is full: tried again on the next event */
		if (rc) {
			rpcrdma__eng_fail(e, rc, RPCRDMA_EC_DISCONNECT);
			return;
		}
		waitq_unlink(e, c);
		rpcrdma__list_push(&e->inflight, &c->link);
		c->state = CALL_SENT;
		c->seq = ++e->send_seq;
		c->holds_credit = true;
		e->in_use++;
		if (e->in_use > e->st.credits_max)
			e->st.credits_max = e->in_use;
	}
}

/* ---- replies ---- */

static struct rpcrdma_eng_call *find_sent(struct rpcrdma_eng *e, uint32_t xid)
{
	struct eng_link *k;

	for (k = e->inflight.head; k; k = k->next)
		if (call_of(k)->state == CALL_SENT && call_of(k)->xid == xid)
			return call_of(k);
	return NULL;
}

/* The client never goes above what it asked for, nor below 1 (RFC 5666 §3.3: a grant
 * of 0 with nothing outstanding would deadlock). */
static void take_credits(struct rpcrdma_eng *e, uint32_t credits)
{
	if (credits == 0)
		credits = 1;
	if (credits > e->cfg.max_credits)
		credits = e->cfg.max_credits;
	e->granted = credits;
	e->st.credits_granted = credits;
}

/* A reply's write list: the call's chunks, in order, with the lengths written
 * (RFC 5666 §3.6). A chunk may come back empty or with zero lengths when unused. */
static int take_write_list(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
			   const struct rpcrdma_msg *m)
{
	const struct rpcrdma_call_args *a = c->a;
	uint32_t i;

	if (m->nwrites > a->nresults)
		return -RPCRDMA_ERR_PROTO;
	for (i = 0; i < m->nwrites; i++) {
		uint64_t n = rpcrdma_write_chunk_len(&m->writes[i]);

		if (n > a->results[i].cap)
			return -RPCRDMA_ERR_PROTO;
		a->results[i].len = (uint32_t)n;
		a->results[i].used = n != 0;
		e->st.write_chunk_bytes += n;
	}
	return 0;
}

/* Post the RDMA Reads that pull a reply's read chunks into the assembly buffer; those the
 * provider cannot take yet wait (-RPCRDMA_ERR_AGAIN) and go later, in order. */
static int post_reply_reads(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c)
{
	uint32_t n = rpcrdma__asm_nreads(&c->as);
	int rc;

	while (c->reads_next < n) {
		rc = rpcrdma__eng_post_asm_read(e, &c->as, c->reads_next, c->msg.reads, c->asm_mr,
						c->asm_buf, &c->op);
		if (rc)
			return rc;
		c->reads_pending++;
		c->reads_next++;
	}
	return 0;
}

static int resume_reads(struct rpcrdma_eng *e, struct eng_task *t, uint64_t now)
{
	(void)now;
	return rpcrdma__eng_settle(e, post_reply_reads(e, ENG_OF(t, struct rpcrdma_eng_call, task)));
}

static void reply_whole(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c);

/* RFC 5666 §3.5, §3.8: a reply with read chunks is pulled with RDMA Read; RDMA_DONE then
 * lets the server release them. The call's credit carries over to the DONE. */
static int start_reply_reads(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
			     const struct rpcrdma_msg *m)
{
	int rc = rpcrdma__asm_plan(&c->as, m, m->body_len, e->cfg.max_message);

	if (rc) {
		rpcrdma__eng_count(e, rc == -RPCRDMA_ERR_RANGE ? RPCRDMA_EC_TOO_LONG :
				   RPCRDMA_EC_CHUNK_MISMATCH);
		return -RPCRDMA_ERR_PROTO;
	}
	c->asm_buf = malloc(c->as.total ? c->as.total : 1);
	if (!c->asm_buf)
		return -RPCRDMA_ERR_NOMEM;
	rc = rpcrdma__eng_reg(e, c->asm_buf, c->as.total, RPCRDMA_ACC_READ_SINK, &c->asm_mr);
	if (rc)
		return rc;
	if (!c->as.pos_zero)
		rpcrdma__asm_copy_inline(&c->as, c->asm_buf, m->body);
	c->state = CALL_READING;
	c->done_owed = true;
	e->st.long_replies += c->as.pos_zero;
	e->st.read_chunks += c->as.nchunks + c->as.pos_zero;
	if (!rpcrdma__asm_nreads(&c->as)) {
		reply_whole(e, c);   /* only chunks of nothing: no Read, but still a DONE */
		return 0;
	}
	c->task.resume = resume_reads;
	rpcrdma__eng_try(e, &c->task, post_reply_reads(e, c));
	return 0;
}

static int reads_or_status(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
			   const struct rpcrdma_msg *m)
{
	int rc = start_reply_reads(e, c, m);

	return rc ? rc : 1;
}

/* The receive buffer goes back to the provider at once: the reply is copied into a
 * buffer of the call's, as large as a receive, kept with the call for the next. */
static int take_inline(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
		       const struct rpcrdma_msg *m)
{
	uint32_t want = m->body_len > e->inline_recv ? m->body_len : e->inline_recv;

	if (c->inl_cap < m->body_len) {
		free(c->inl_buf);
		c->inl_cap = 0;
		c->inl_buf = malloc(want ? want : 1);
		if (!c->inl_buf)
			return -RPCRDMA_ERR_NOMEM;
		c->inl_cap = want;
	}
	memcpy(c->inl_buf, m->body, m->body_len);
	c->reply = c->inl_buf;
	c->reply_len = m->body_len;
	if (m->proc == RPCRDMA_MSGP) {
		c->msgp_align = m->align;
		c->msgp_thresh = m->thresh;
		c->msgp_base = m->hdr_len;
	}
	return 0;
}

/* RDMA_NOMSG with the reply chunk: the server wrote the whole reply there (§5.2). */
static int take_reply_chunk(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
			    const struct rpcrdma_msg *m)
{
	uint64_t n = rpcrdma_write_chunk_len(&m->reply);

	if (!c->reply_mr || n > c->reply_cap) {
		rpcrdma__eng_count(e, RPCRDMA_EC_CHUNK_MISMATCH);
		return -RPCRDMA_ERR_PROTO;
	}
	c->reply = c->reply_buf;
	c->reply_len = (uint32_t)n;
	e->st.reply_chunk_bytes += n;
	e->st.long_replies++;
	return 0;
}

static int error_status(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
			const struct rpcrdma_msg *m)
{
	c->wire_err = m->err;
	if (m->err == RPCRDMA_WIRE_ERR_VERS) {
		c->vers_low = m->vers_low;
		c->vers_high = m->vers_high;
		rpcrdma__eng_count(e, RPCRDMA_EC_ERR_VERS_RCVD);
		return -RPCRDMA_ERR_VERSION;
	}
	rpcrdma__eng_count(e, RPCRDMA_EC_ERR_CHUNK_RCVD);
	return -RPCRDMA_ERR_PROTO;
}

/* Returns 1 while the reply is still being pulled, else the call's status. */
static int process_reply(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
			 const struct rpcrdma_msg *m)
{
	int rc;

	switch (m->proc) {
	case RPCRDMA_ERROR:
		return error_status(e, c, m);
	case RPCRDMA_MSG:
	case RPCRDMA_MSGP:
		rc = take_write_list(e, c, m);
		if (rc) {
			rpcrdma__eng_count(e, RPCRDMA_EC_CHUNK_MISMATCH);
			return rc;
		}
		if (m->nreads)
			return reads_or_status(e, c, m);
		return take_inline(e, c, m);
	case RPCRDMA_NOMSG:
		rc = take_write_list(e, c, m);
		if (rc) {
			rpcrdma__eng_count(e, RPCRDMA_EC_CHUNK_MISMATCH);
			return rc;
		}
		if (m->has_reply && rpcrdma_write_chunk_len(&m->reply))
			return take_reply_chunk(e, c, m);
		if (m->nreads)
			return reads_or_status(e, c, m);
		rpcrdma__eng_count(e, RPCRDMA_EC_CHUNK_MISMATCH);
		return -RPCRDMA_ERR_PROTO;
	default:
		return -RPCRDMA_ERR_PROTO;
	}
}

/* A reply to a call proves that the responder took every batched call sent before it on
 * this connection (responders answer one connection's calls in order): those complete,
 * giving back their credits and memory. */
static void settle_batched(struct rpcrdma_eng *e, const struct rpcrdma_eng_call *answered)
{
	struct eng_link *k, *next;

	for (k = e->inflight.head; k; k = next) {
		struct rpcrdma_eng_call *c = call_of(k);

		next = k->next;
		if (c->no_reply && c->state == CALL_SENT && c->seq < answered->seq)
			complete(e, c, 0);
	}
}

/* A message that matches no call may be a backward-direction call (RFC 8167 §3.1). */
static void unmatched(struct rpcrdma_eng *e, const uint8_t *buf, uint32_t len)
{
	struct rpcrdma_msg_storage st;
	struct rpcrdma_decode_status ds;
	struct rpcrdma_msg m;

	rpcrdma_msg_bind(&m, &st);
	if (rpcrdma_decode(buf, len, RPCRDMA_DIR_ANY, &e->cfg.limits, &m, &ds) == 0 &&
	    rpcrdma__eng_bc_client_recv(e, &m, buf))
		return;
	/* a reply for nothing pending changes nothing, credits included */
	rpcrdma__eng_count(e, RPCRDMA_EC_UNKNOWN_XID);
}

/* Returns whether the message answered a call (and so used that call's receive). */
bool rpcrdma__eng_client_recv(struct rpcrdma_eng *e, const uint8_t *buf, uint32_t len,
			      uint64_t now)
{
	struct rpcrdma_decode_status ds;
	struct rpcrdma_eng_call *c;
	int rc;

	(void)now;
	if (len < RPCRDMA_FIXED_HDR_LEN) {
		rpcrdma__eng_count(e, RPCRDMA_EC_DECODE);
		return false;
	}
	if (rpcrdma__get32(buf + 12) < 5)
		e->st.rcvd[rpcrdma__get32(buf + 12)]++;
	c = find_sent(e, rpcrdma__get32(buf));
	if (!c) {
		unmatched(e, buf, len);
		return false;
	}
	/* the direction comes from the RPC message: a call here is a backward-direction call */
	rc = rpcrdma_decode(buf, len, RPCRDMA_DIR_ANY, &e->cfg.limits, &c->msg, &ds);
	if (rc) {
		rpcrdma__eng_count(e, RPCRDMA_EC_DECODE);
		complete(e, c, -RPCRDMA_ERR_PROTO);
		return true;
	}
	/* a backward call whose XID happens to match one of ours says nothing of our call */
	if (rpcrdma__eng_bc_client_recv(e, &c->msg, buf))
		return false;
	/* nor does a DONE */
	if (c->msg.proc == RPCRDMA_DONE) {
		rpcrdma__eng_count(e, RPCRDMA_EC_UNEXPECTED);
		return false;
	}
	take_credits(e, c->msg.credits);
	e->st.replies++;
	settle_batched(e, c);
	if (c->user_freed) {
		complete(e, c, -RPCRDMA_ERR_TIMEDOUT);
		return true;
	}
	rc = process_reply(e, c, &c->msg);
	if (rc == 1)
		return true;
	/* reads that never started owe no DONE */
	c->done_owed = false;
	complete(e, c, rc);
	return true;
}

/* ---- RDMA_DONE ---- */

static int send_done(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c)
{
	struct rpcrdma_msg_storage st;
	struct rpcrdma_msg m;
	struct eng_buf *b;
	int n, rc;

	if (!e->sfree || !rpcrdma__eng_sq_room(e, 1))
		return -RPCRDMA_ERR_AGAIN;
	rpcrdma_msg_bind(&m, &st);
	m.xid = c->xid;
	m.vers = RPCRDMA_VERSION;
	m.credits = ask_credits(e);
	m.proc = RPCRDMA_DONE;
	b = rpcrdma__eng_sbuf_get(e);
	n = rpcrdma_encode(&m, b->mem, e->inline_send);
	b->send_for = SEND_DONE;
	rc = n < 0 ? n : rpcrdma__eng_post_send(e, b, (uint32_t)n, RPCRDMA_DONE);
	if (rc) {
		rpcrdma__eng_sbuf_put(e, b);
		return rc;
	}
	/* the credit now belongs to the DONE until its Send completes */
	c->holds_credit = false;
	c->done_owed = false;
	return 0;
}

static int resume_done(struct rpcrdma_eng *e, struct eng_task *t, uint64_t now)
{
	struct rpcrdma_eng_call *c = ENG_OF(t, struct rpcrdma_eng_call, task);
	int rc = send_done(e, c);

	(void)now;
	if (!rc)
		complete(e, c, c->status);
	return rpcrdma__eng_settle(e, rc);
}

/* The reply's read chunks are all in: the reply is whole, and RDMA_DONE goes next. */
static void reply_whole(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c)
{
	if (!c->status) {
		rpcrdma__asm_zero_pads(&c->as, c->asm_buf);
		c->reply = c->asm_buf;
		c->reply_len = (uint32_t)c->as.total;
	} else {
		c->status = -RPCRDMA_ERR_IO;
	}
	c->task.resume = resume_done;
	rpcrdma__eng_stall(e, &c->task);
}

void rpcrdma__eng_client_read_done(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
				   int status, uint64_t now)
{
	c->reads_pending--;
	if (status && !c->status) {
		c->status = status;
		rpcrdma__eng_count(e, RPCRDMA_EC_RDMA_FAILED);
	}
	/* more to post (they wait for room) or to complete */
	if (c->reads_pending || (c->state == CALL_READING &&
				 c->reads_next < rpcrdma__asm_nreads(&c->as)))
		return;
	if (c->state != CALL_READING) {
		/* completed meanwhile (disconnect); free it if abandoned */
		if (c->user_freed) {
			rpcrdma__list_unlink(&e->inflight, &c->link);
			free_call(c);
		}
		return;
	}
	reply_whole(e, c);
	(void)now;
}

void rpcrdma__eng_client_done_sent(struct rpcrdma_eng *e)
{
	e->in_use--;
}

/* ---- timers, failure, teardown ---- */

uint64_t rpcrdma__eng_client_tick(struct rpcrdma_eng *e, uint64_t now)
{
	struct rpcrdma_eng_call *c;
	uint64_t next;

	/* the queue is in deadline order */
	while ((c = call_of(e->waitq.head)) != NULL && c->deadline <= now) {
		rpcrdma__eng_count(e, RPCRDMA_EC_CREDIT_TIMEOUT);
		complete(e, c, -RPCRDMA_ERR_TIMEDOUT);
	}
	next = rpcrdma__eng_objs_release(e, now, e->in_use || e->nwaiting, free_kept_call);
	return c && c->deadline < next ? c->deadline : next;
}

void rpcrdma__eng_client_fail_all(struct rpcrdma_eng *e, int reason)
{
	struct rpcrdma_eng_call *c;
	struct eng_link *k, *next;

	while ((c = call_of(e->waitq.head)) != NULL)
		complete(e, c, reason);
	for (k = e->inflight.head; k; k = next) {
		next = k->next;
		c = call_of(k);
		if (c->state == CALL_SENT || c->state == CALL_READING) {
			c->done_owed = false;
			complete(e, c, reason);
		}
	}
}

void rpcrdma__eng_client_destroy(struct rpcrdma_eng *e)
{
	struct eng_list *lists[2] = { &e->waitq, &e->inflight };
	struct rpcrdma_eng_call *c;
	int i;

	for (i = 0; i < 2; i++)
		while ((c = call_of(lists[i]->head)) != NULL) {
			rpcrdma__list_unlink(lists[i], &c->link);
			release_mrs(e, c);
			free_call(c);
		}
	while ((c = rpcrdma__objpool_get(&e->objs)) != NULL)
		free_kept_call(c);
}

/* ---- accessors ---- */

void *rpcrdma_eng_call_user(const struct rpcrdma_eng_call *c)
{
	return c->user;
}

int rpcrdma_eng_call_status(const struct rpcrdma_eng_call *c)
{
	return c->state == CALL_COMPLETE ? c->status : -RPCRDMA_ERR_AGAIN;
}

const void *rpcrdma_eng_call_reply(const struct rpcrdma_eng_call *c, uint32_t *len)
{
	if (len)
		*len = c->status ? 0 : c->reply_len;
	return c->status ? NULL : c->reply;
}

/* c->msg holds the reply once one came; reply_cap is set only with a reply chunk */
uint32_t rpcrdma_eng_call_reply_chunk(const struct rpcrdma_eng_call *c)
{
	return c->reply_cap;
}

uint32_t rpcrdma_eng_call_wire_err(const struct rpcrdma_eng_call *c)
{
	return c->wire_err;
}

void rpcrdma_eng_call_vers(const struct rpcrdma_eng_call *c, uint32_t *low, uint32_t *high)
{
	*low = c->vers_low;
	*high = c->vers_high;
}

void rpcrdma_eng_call_msgp(const struct rpcrdma_eng_call *c, uint32_t *align, uint32_t *thresh,
			   uint32_t *base)
{
	*align = c->msgp_align;
	*thresh = c->msgp_thresh;
	*base = c->msgp_base;
}

/* Freeing a call still in progress abandons it: its memory is withdrawn from the peer
 * at once; a call already sent keeps its credit until its reply (or the connection's
 * end) shows the server is done with it. */
void rpcrdma_eng_call_free(struct rpcrdma_eng_call *c)
{
	struct rpcrdma_eng *e;

	if (!c)
		return;
	e = c->e;
	switch (c->state) {
	case CALL_WAITING:
		waitq_unlink(e, c);
		release_mrs(e, c);
		free_call(c);
		return;
	case CALL_SENT:
	case CALL_READING:
		release_mrs(e, c);
		c->user_freed = true;
		if (c->holds_credit && !c->orphan) {
			c->orphan = true;
			e->orphaned++;
		}
		return;
	default:
		if (c->reads_pending) {
			c->user_freed = true;
			return;
		}
		rpcrdma__list_unlink(&e->inflight, &c->link);
		free_call(c);
	}
}

int rpcrdma_eng_call_sent(const struct rpcrdma_eng_call *c)
{
	return c && (c->state == CALL_SENT || c->state == CALL_READING ||
		     (c->state == CALL_COMPLETE && c->seq != 0));
}

uint32_t rpcrdma_eng_credits_free(const struct rpcrdma_eng *e)
{
	uint32_t used = e->in_use + e->nwaiting;

	return e->granted > used ? e->granted - used : 0;
}

int rpcrdma_eng_starved(const struct rpcrdma_eng *e)
{
	return e->nwaiting && e->in_use >= e->granted && e->orphaned >= e->in_use;
}
