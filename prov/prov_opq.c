/* SPDX-License-Identifier: BSD-2-Clause */
/* Outstanding operations and kept completions of a connected endpoint (prov_opq.h). */
#include <stdlib.h>
#include <string.h>

#include "objpool.h"
#include "prov_opq.h"

/* One-piece ops kept per queue (144 bytes each): at 32 calls in flight a batch of
 * completions frees a Send, a receive and an RDMA Write per call before the next posts
 * take them (at most 13.5 KiB per connection that ran that deep); an idle connection
 * that made one call keeps two. */
#define OPS_KEPT 96

int rpcrdma__ring_reserve(struct rpcrdma__ring *r, uint32_t need)
{
	struct rpcrdma_cqe *v;
	uint32_t cap, i;

	if (need <= r->cap)
		return 0;
	cap = r->cap * 2 > need ? r->cap * 2 : need;
	v = malloc(cap * sizeof(*v));
	if (!v)
		return -RPCRDMA_ERR_NOMEM;
	for (i = 0; i < r->n; i++)
		v[i] = r->v[(r->head + i) % r->cap];
	free(r->v);
	r->v = v;
	r->cap = cap;
	r->head = 0;
	return 0;
}

void rpcrdma__ring_push(struct rpcrdma__ring *r, const struct rpcrdma_cqe *c)
{
	r->v[(r->head + r->n++) % r->cap] = *c;
}

int rpcrdma__ring_pop(struct rpcrdma__ring *r, struct rpcrdma_cqe *out, int max)
{
	int n = 0;

	while (n < max && r->n) {
		out[n++] = r->v[r->head];
		r->head = (r->head + 1) % r->cap;
		r->n--;
	}
	return n;
}

void rpcrdma__ring_free(struct rpcrdma__ring *r)
{
	free(r->v);
	memset(r, 0, sizeof(*r));
}

int rpcrdma__opq_init(struct rpcrdma__opq *q, uint32_t tx_depth, uint32_t rx_depth)
{
	memset(q, 0, sizeof(*q));
	q->tx_depth = tx_depth;
	q->rx_depth = rx_depth;
	return rpcrdma__ring_reserve(&q->stash, 4);
}

void rpcrdma__opq_free(struct rpcrdma__opq *q)
{
	while (q->ops) {
		struct rpcrdma__op *op = q->ops;

		q->ops = op->next;
		free(op);
	}
	rpcrdma__objpool_free(&q->ones);
	rpcrdma__ring_free(&q->stash);
}

static void op_release(struct rpcrdma__opq *q, struct rpcrdma__op *op)
{
	if (op->npieces == 1 && rpcrdma__objpool_put(&q->ones, op, OPS_KEPT))
		return;
	free(op);
}

/* Idle connections stay small: the stash grows with what it may have to hold, i.e.
 * the completions it already holds unpolled, one for each outstanding op and each op
 * about to be posted, and the disconnect event. So pushing to it never fails. */
static int stash_reserve(struct rpcrdma__opq *q, uint32_t more)
{
	return rpcrdma__ring_reserve(&q->stash, q->stash.n + q->tx_used + q->rx_used + more + 1);
}

int rpcrdma__opq_pop(struct rpcrdma__opq *q, struct rpcrdma_cqe *out, int max)
{
	return rpcrdma__ring_pop(&q->stash, out, max);
}

void rpcrdma__opq_emit(struct rpcrdma__opq *q, struct rpcrdma__sink *s,
		       const struct rpcrdma_cqe *c)
{
	if (s && s->n < s->max)
		s->out[s->n++] = *c;
	else
		rpcrdma__ring_push(&q->stash, c);
}

static void op_link(struct rpcrdma__opq *q, struct rpcrdma__op *op)
{
	op->prev = NULL;
	op->next = q->ops;
	if (q->ops)
		q->ops->prev = op;
	q->ops = op;
}

static void op_unlink(struct rpcrdma__opq *q, struct rpcrdma__op *op)
{
	if (op->prev)
		op->prev->next = op->next;
	else
		q->ops = op->next;
	if (op->next)
		op->next->prev = op->prev;
}

static void op_finish(struct rpcrdma__opq *q, struct rpcrdma__op *op, struct rpcrdma__sink *s)
{
	struct rpcrdma_cqe c = { op->ctx, op->opcode, op->len, op->status };

	op_unlink(q, op);
	if (op->opcode == RPCRDMA_OP_RECV)
		q->rx_used -= op->npieces;
	else
		q->tx_used -= op->npieces;
	op_release(q, op);
	rpcrdma__opq_emit(q, s, &c);
}

void rpcrdma__piece_done(struct rpcrdma__opq *q, struct rpcrdma__piece *pc, int status,
			 uint32_t len, struct rpcrdma__sink *s)
{
	struct rpcrdma__op *op = pc->op;

	if (status && !op->status)
		op->status = status;
	if (op->opcode == RPCRDMA_OP_RECV)
		op->len = len;
	if (--op->pending == 0)
		op_finish(q, op, s);
}

/* An op still being posted is left to its poster, holding only the posting reference:
 * its posted pieces will never complete now. */
void rpcrdma__opq_fail_all(struct rpcrdma__opq *q, struct rpcrdma__sink *s)
{
	struct rpcrdma_cqe ev = { NULL, RPCRDMA_OP_DISCONNECT, 0, -RPCRDMA_ERR_DISCONN };
	struct rpcrdma__op *op = q->ops, *next;

	rpcrdma__opq_emit(q, s, &ev);
	for (; op; op = next) {
		next = op->next;
		op->status = -RPCRDMA_ERR_DISCONN;
		if (op->posting)
			op->pending = 1;
		else
			op_finish(q, op, s);
	}
}

static struct rpcrdma__op *op_new(struct rpcrdma__opq *q, uint32_t opcode, uint32_t npieces,
				  void *ctx)
{
	size_t size = sizeof(struct rpcrdma__op) + npieces * sizeof(struct rpcrdma__piece);
	struct rpcrdma__op *op = npieces == 1 ? rpcrdma__objpool_zget(&q->ones, size)
					      : rpcrdma__zalloc(size);
	uint32_t i;

	if (!op)
		return NULL;
	op->q = q;
	op->ctx = ctx;
	op->opcode = opcode;
	op->npieces = npieces;
	for (i = 0; i < npieces; i++)
		op->pieces[i].op = op;
	return op;
}

static int queue_room(struct rpcrdma__opq *q, int connected, uint32_t opcode, uint32_t n)
{
	if (!connected)
		return -RPCRDMA_ERR_DISCONN;
	if (opcode == RPCRDMA_OP_RECV && q->rx_used + n > q->rx_depth)
		return -RPCRDMA_ERR_AGAIN;
	if (opcode != RPCRDMA_OP_RECV && q->tx_used + n > q->tx_depth)
		return -RPCRDMA_ERR_AGAIN;
	return stash_reserve(q, n);
}

int rpcrdma__post_one(struct rpcrdma__opq *q, int connected, uint32_t opcode,
		      const struct rpcrdma_sge *sge, void *ctx, rpcrdma__post_fn post, void *impl)
{
	struct rpcrdma__op *op;
	int rc = queue_room(q, connected, opcode, 1);

	if (rc)
		return rc;
	op = op_new(q, opcode, 1, ctx);
	if (!op)
		return -RPCRDMA_ERR_NOMEM;
	rc = post(impl, opcode, sge->addr, sge->len, sge->mr, 0, 0, &op->pieces[0]);
	if (rc < 0) {
		op_release(q, op);
		return rc;
	}
	op->pending = 1;
	op->len = opcode == RPCRDMA_OP_SEND ? sge->len : 0;
	op_link(q, op);
	if (opcode == RPCRDMA_OP_RECV)
		q->rx_used++;
	else
		q->tx_used++;
	if (rc == RPCRDMA__POSTED_DONE)   /* its completion, kept for the next poll */
		rpcrdma__piece_done(q, &op->pieces[0], 0, 0, NULL);
	return 0;
}

/* Walks the local pieces and remote segments together, one step per piece. */
struct rma_walk {
	uint32_t li, ri, lo, ro;
};

static uint32_t walk_step(struct rma_walk *w, const struct rpcrdma_sge *l,
			  const struct rpcrdma_segment *r)
{
	uint32_t step = l[w->li].len - w->lo < r[w->ri].length - w->ro ? l[w->li].len - w->lo
								       : r[w->ri].length - w->ro;
	return step;
}

static void walk_advance(struct rma_walk *w, uint32_t step, const struct rpcrdma_sge *l,
			 const struct rpcrdma_segment *r)
{
	w->lo += step;
	w->ro += step;
	if (w->lo == l[w->li].len) {
		w->li++;
		w->lo = 0;
	}
	if (w->ro == r[w->ri].length) {
		w->ri++;
		w->ro = 0;
	}
}

static uint32_t count_pieces(const struct rpcrdma_sge *l, uint32_t nl,
			     const struct rpcrdma_segment *r, uint32_t nr)
{
	struct rma_walk w = { 0, 0, 0, 0 };
	uint32_t n = 0;

	while (w.li < nl && w.ri < nr) {
		walk_advance(&w, walk_step(&w, l, r), l, r);
		n++;
	}
	return n;
}

/* Post each piece; after a failure the posted ones still complete, and the op then
 * reports the failure. */
static uint32_t post_pieces(struct rpcrdma__op *op, const struct rpcrdma_sge *l, uint32_t nl,
			    const struct rpcrdma_segment *r, uint32_t nr, rpcrdma__post_fn post,
			    void *impl)
{
	struct rma_walk w = { 0, 0, 0, 0 };
	uint32_t k = 0;

	while (w.li < nl && w.ri < nr && !op->status) {
		uint32_t step = walk_step(&w, l, r);
		int rc = post(impl, op->opcode, (uint8_t *)l[w.li].addr + w.lo, step, l[w.li].mr,
			      r[w.ri].offset + w.ro, r[w.ri].handle, &op->pieces[k]);

		if (rc) {
			if (!op->status)
				op->status = rc;
			break;
		}
		op->pending++;
		k++;
		walk_advance(&w, step, l, r);
	}
	return k;
}

/* The op is linked and holds a "posting" reference while its pieces are posted: posting
 * may drive progress (queue full), and pieces already posted may complete meanwhile, or
 * the connection may be lost (rpcrdma__opq_fail_all). */
int rpcrdma__post_rma(struct rpcrdma__opq *q, int connected, uint32_t opcode,
		      const struct rpcrdma_sge *l, uint32_t nl, const struct rpcrdma_segment *r,
		      uint32_t nr, void *ctx, rpcrdma__post_fn post, void *impl)
{
	uint32_t n = count_pieces(l, nl, r, nr), posted, i;
	struct rpcrdma__op *op;
	int rc = queue_room(q, connected, opcode, n);

	if (rc)
		return rc;
	op = op_new(q, opcode, n, ctx);
	if (!op)
		return -RPCRDMA_ERR_NOMEM;
	for (i = 0; i < nl; i++)
		op->len += l[i].len;
	op_link(q, op);
	q->tx_used += n;
	op->pending = 1;
	op->posting = 1;
	posted = post_pieces(op, l, nl, r, nr, post, impl);
	op->posting = 0;
	q->tx_used -= n - posted;
	op->npieces = posted;
	if (posted == 0) {
		rc = op->status;
		op_unlink(q, op);
		op_release(q, op);
		return rc;
	}
	if (--op->pending == 0)
		op_finish(q, op, NULL);
	return 0;
}
