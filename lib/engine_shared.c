/* SPDX-License-Identifier: BSD-2-Clause */
/* What the requester (engine_client.c) and the responder (engine_server.c) both use:
 * registration, send and receive buffers, posting, the queue of tasks waiting for room,
 * failure, lists, the shared receive budget. The dispatcher (engine.c) calls the roles,
 * the roles call this file, and this file calls neither: a completion flows one way. A
 * failure reaches the role through e->fail_all, which the dispatcher sets. */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "xdr_be.h"

/* Take up to n receive buffers from the shared budget; returns how many. */
uint32_t rpcrdma__pool_take(struct rpcrdma_credit_pool *pool, uint32_t n)
{
	uint32_t cur = __atomic_load_n(&pool->used, __ATOMIC_RELAXED), got;

	do {
		got = cur >= pool->limit ? 0 : pool->limit - cur;
		if (got > n)
			got = n;
		if (!got)
			return 0;
	} while (!__atomic_compare_exchange_n(&pool->used, &cur, cur + got, false,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return got;
}

void rpcrdma__pool_give(struct rpcrdma_credit_pool *pool, uint32_t n)
{
	if (pool && n)
		__atomic_fetch_sub(&pool->used, n, __ATOMIC_RELAXED);
}

int rpcrdma__eng_reg(struct rpcrdma_eng *e, void *addr, size_t len, unsigned acc,
		     struct rpcrdma_mr **out)
{
	int rc = e->lo.mr_reg(e->lo.ctx, addr, len ? len : 1, acc, out);

	if (rc) {
		rpcrdma__eng_count(e, RPCRDMA_EC_NO_RESOURCES);
		return rc;
	}
	e->st.mrs_live++;
	return 0;
}

void rpcrdma__eng_dereg(struct rpcrdma_eng *e, struct rpcrdma_mr **mr)
{
	if (!*mr)
		return;
	e->lo.mr_dereg(e->lo.ctx, *mr);
	*mr = NULL;
	e->st.mrs_live--;
}

/* Kept on 1,000 idle connections, a server's requests held 19 MiB (perf --idle 1000). */
uint64_t rpcrdma__eng_objs_release(struct rpcrdma_eng *e, uint64_t now, bool busy,
				   void (*free_obj)(void *))
{
	void *o;

	if (!e->objs.n || busy)
		return UINT64_MAX;
	if (now - e->objs_since < RPCRDMA__OBJS_KEPT_MS)
		return e->objs_since + RPCRDMA__OBJS_KEPT_MS;
	while ((o = rpcrdma__objpool_get(&e->objs)) != NULL)
		free_obj(o);
	return UINT64_MAX;
}

/* Whether this server may answer with read chunks (the peer's private data is known). */
bool rpcrdma__eng_reply_reads(const struct rpcrdma_eng *e)
{
	return e->cfg.reply_read_chunks == RPCRDMA_RRC_ALWAYS ||
	       (e->cfg.reply_read_chunks == RPCRDMA_RRC_AUTO &&
		(e->peer_ext & RPCRDMA_PDATA_X_REPLY_READS));
}

struct eng_buf *rpcrdma__eng_sbuf_get(struct rpcrdma_eng *e)
{
	struct eng_buf *b = e->sfree;

	if (b) {
		e->sfree = b->next;
		b->next = NULL;
		b->owner = NULL;
	}
	return b;
}

void rpcrdma__eng_sbuf_put(struct rpcrdma_eng *e, struct eng_buf *b)
{
	b->next = e->sfree;
	e->sfree = b;
}

bool rpcrdma__eng_sq_room(const struct rpcrdma_eng *e, uint32_t n)
{
	return e->sq_used + n <= e->cfg.sq_depth;
}

/* RDMA Read k of an assembly (a call's read chunks on the server, a reply's on the
 * client) into buf, registered as mr: one send-queue place, the counters.
 * -RPCRDMA_ERR_AGAIN while the queue is full. */
int rpcrdma__eng_post_asm_read(struct rpcrdma_eng *e, const struct eng_asm *as, uint32_t k,
			       const struct rpcrdma_read_segment *reads, struct rpcrdma_mr *mr,
			       uint8_t *buf, void *op)
{
	struct rpcrdma_segment segs[RPCRDMA_DEF_TOTAL_SEGS];
	struct rpcrdma_sge sge[ENG_MAX_ASM + 1];
	uint32_t nsge, nsegs, j;
	int rc;

	if (!rpcrdma__eng_sq_room(e, 1))
		return -RPCRDMA_ERR_AGAIN;
	nsegs = rpcrdma__asm_read(as, k, reads, mr, buf, sge, &nsge, segs);
	e->sq_used++;
	rc = e->lo.post_read(e->lo.ctx, sge, nsge, segs, nsegs, op);
	if (rc) {
		e->sq_used--;
		return rc;
	}
	e->st.rdma_reads++;
	for (j = 0; j < nsegs; j++)
		e->st.rdma_read_bytes += segs[j].length;
	return 0;
}

static int post_send_as(struct rpcrdma_eng *e, struct eng_buf *b, uint32_t len, uint32_t proc,
			const uint32_t *inv)
{
	struct rpcrdma_sge sge = { e->smr, b->mem, len };
	int rc;

	e->sq_used++;
	rc = inv ? e->lo.post_send_inv(e->lo.ctx, &sge, *inv, &b->op)
		 : e->lo.post_send(e->lo.ctx, &sge, &b->op);
	if (rc) {
		e->sq_used--;
		return rc;
	}
	e->st.sent[proc]++;
	e->st.inline_bytes_sent += len;
	return 0;
}

int rpcrdma__eng_post_send(struct rpcrdma_eng *e, struct eng_buf *b, uint32_t len, uint32_t proc)
{
	return post_send_as(e, b, len, proc, NULL);
}

int rpcrdma__eng_post_send_inv(struct rpcrdma_eng *e, struct eng_buf *b, uint32_t len,
			       uint32_t proc, uint32_t handle)
{
	return post_send_as(e, b, len, proc, &handle);
}

int rpcrdma__eng_post_recv(struct rpcrdma_eng *e)
{
	struct eng_buf *b = e->rfree;
	struct rpcrdma_sge sge;
	int rc;

	if (!b)
		return -RPCRDMA_ERR_NOSPC;
	sge.mr = e->rmr;
	sge.addr = b->mem;
	sge.len = e->inline_recv;
	rc = e->lo.post_recv(e->lo.ctx, &sge, &b->op);
	if (rc)
		return rc;
	e->rfree = b->next;
	b->next = NULL;
	e->recvs_posted++;
	return 0;
}

void rpcrdma__eng_count(struct rpcrdma_eng *e, uint32_t ec)
{
	if (ec < RPCRDMA_EC_COUNT)
		e->st.errors[ec]++;
}

void rpcrdma__list_push(struct eng_list *l, struct eng_link *n)
{
	n->next = NULL;
	n->prev = l->tail;
	if (l->tail)
		l->tail->next = n;
	else
		l->head = n;
	l->tail = n;
}

void rpcrdma__list_unlink(struct eng_list *l, struct eng_link *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else if (l->head == n)
		l->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else if (l->tail == n)
		l->tail = n->prev;
	n->next = n->prev = NULL;
}

/* What an attempt of a task returned: -RPCRDMA_ERR_AGAIN leaves it waiting; any other
 * error breaks the connection. */
int rpcrdma__eng_settle(struct rpcrdma_eng *e, int rc)
{
	if (rc == -RPCRDMA_ERR_AGAIN)
		return rc;
	if (rc)
		rpcrdma__eng_fail(e, rc, RPCRDMA_EC_DISCONNECT);
	return 0;
}

/* The first attempt of t returned rc: queue t if it must wait. */
void rpcrdma__eng_try(struct rpcrdma_eng *e, struct eng_task *t, int rc)
{
	if (rpcrdma__eng_settle(e, rc) == -RPCRDMA_ERR_AGAIN)
		rpcrdma__eng_stall(e, t);
}

void rpcrdma__eng_stall(struct rpcrdma_eng *e, struct eng_task *t)
{
	if (t->queued)
		return;
	t->queued = true;
	t->next = NULL;
	if (e->stall_tail) {
		e->stall_tail->next = t;
	} else {
		e->stall_head = t;
		e->stall_since = e->now;
	}
	e->stall_tail = t;
}

/* Drop t from the stall queue (its owner finished or is going away). */
void rpcrdma__eng_unstall(struct rpcrdma_eng *e, struct eng_task *t)
{
	struct eng_task **pp = &e->stall_head, *prev = NULL;

	if (!t->queued)
		return;
	while (*pp && *pp != t) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (*pp) {
		*pp = t->next;
		if (e->stall_tail == t)
			e->stall_tail = prev;
	}
	t->queued = false;
}

void rpcrdma__eng_fail(struct rpcrdma_eng *e, int reason, uint32_t ec)
{
	if (e->dead)
		return;
	e->dead = true;
	e->dead_reason = reason;
	e->dead_class = ec + 1;
	rpcrdma__eng_count(e, ec);
	e->stall_head = e->stall_tail = NULL;
	e->fail_all(e);   /* the role's: set by the dispatcher */
	if (e->up.fatal)
		e->up.fatal(e->up.ctx, reason);
}

/* Post receives until this connection owns want of them (bounded by its buffers and
 * the shared pool). Returns how many it owns. */
uint32_t rpcrdma__eng_take_recvs(struct rpcrdma_eng *e, uint32_t want)
{
	uint32_t more, got;

	if (want > e->nrbufs)
		want = e->nrbufs;
	if (want <= e->pool_taken)
		return e->pool_taken;
	more = want - e->pool_taken;
	got = e->cfg.pool ? rpcrdma__pool_take(e->cfg.pool, more) : more;
	while (got) {
		if (rpcrdma__eng_post_recv(e)) {
			rpcrdma__pool_give(e->cfg.pool, got);
			break;
		}
		e->pool_taken++;
		got--;
	}
	return e->pool_taken;
}

uint32_t rpcrdma_msgp_pad(uint32_t align, uint32_t thresh, uint32_t base, uint32_t off,
			  uint32_t len)
{
	uint32_t at;

	if (!align || len <= thresh)
		return 0;
	at = (base + off) & (align - 1);
	return at ? align - at : 0;
}
