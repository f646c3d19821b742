/* SPDX-License-Identifier: BSD-2-Clause */
/* The mock provider: a fabric inside one process (prov_mock.h; a test library, not installed).
 * Every operation is carried out when it is posted; completions wait in the endpoint's
 * queue until polled. One lock for the whole mock fabric keeps it simple and safe for
 * tests that run a server thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prov_int.h"
#include "prov_opq.h"
#include "prov_mock.h"

enum { ST_CONNECTING, ST_CONNECTED, ST_GONE };

struct mock_mr {
	struct rpcrdma_mr base;
	struct mock_mr *next;
	int invalidated;            /* by the peer's Send With Invalidate */
};

struct mock_recv {
	struct mock_recv *next;
	void *ctx;
	struct rpcrdma_sge sge;
};

/* A Send that found no receive (rnr_wait): held at the receiver. */
struct mock_held {
	struct mock_held *next;
	struct mock_ep *from;
	void *ctx;
	uint32_t len;
	uint8_t data[];
};

struct mock_delayed {
	struct mock_delayed *next;
	struct rpcrdma_cqe cqe;
	uint32_t polls_left;
};

struct mock_ep {
	struct rpcrdma_ep base;
	struct mock_prov *mp;
	struct mock_ep *peer;
	int state;
	int rejected;
	struct mock_recv *rq, *rq_tail;
	struct mock_held *held, *held_tail;
	struct mock_delayed *delayed;
	struct rpcrdma__ring cq;
	struct mock_ep *all_next;
};

struct mock_connreq {
	struct rpcrdma_connreq base;
	struct mock_connreq *next;
	struct mock_listener *l;
	struct mock_ep *client;     /* NULL once the client gave up */
};

struct mock_listener {
	struct rpcrdma_listener base;
	struct mock_listener *next;
	struct mock_connreq *q, *q_tail;
};

struct mock_prov {
	struct rpcrdma_prov base;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct mock_listener *listeners;
	struct mock_mr *mrs;
	struct mock_ep *eps;
	struct rpcrdma__keys keys;
	struct rpcrdma_mock_faults faults;
	struct rpcrdma_mock_stats stats;
	uint64_t nrecv_msgs;
};

static const struct rpcrdma_prov_ops mock_ops;

/* ---- completion queue ---- */

static void cq_push(struct mock_ep *e, const struct rpcrdma_cqe *c)
{
	if (rpcrdma__ring_reserve(&e->cq, e->cq.n + 1))
		abort();  /* a test fabric out of memory has nothing sensible left to do */
	rpcrdma__ring_push(&e->cq, c);
	pthread_cond_broadcast(&e->mp->cond);
}

static void break_conn(struct mock_ep *e);

/* Every completion passes here, where the fault plan can fail or delay it. */
static void complete(struct mock_ep *e, void *ctx, uint32_t op, uint32_t len, int status)
{
	struct mock_prov *mp = e->mp;
	struct rpcrdma_cqe c = { ctx, op, len, status };
	uint64_t n = ++mp->stats.completions;

	if (n == mp->faults.fail_completion && status == 0) {
		c.status = -RPCRDMA_ERR_IO;
		cq_push(e, &c);
		break_conn(e);
		return;
	}
	if (n == mp->faults.delay_completion) {
		struct mock_delayed *d = malloc(sizeof(*d));

		if (!d)
			abort();
		d->cqe = c;
		d->polls_left = mp->faults.delay_polls;
		d->next = e->delayed;
		e->delayed = d;
		return;
	}
	cq_push(e, &c);
}

/* ---- connection loss ---- */

static void flush_one_side(struct mock_ep *e)
{
	struct rpcrdma_cqe ev = { NULL, RPCRDMA_OP_DISCONNECT, 0, -RPCRDMA_ERR_DISCONN };

	cq_push(e, &ev);
	while (e->rq) {
		struct mock_recv *r = e->rq;

		e->rq = r->next;
		cq_push(e, &(struct rpcrdma_cqe){ r->ctx, RPCRDMA_OP_RECV, 0, -RPCRDMA_ERR_DISCONN });
		free(r);
	}
	e->rq_tail = NULL;
	while (e->held) {
		struct mock_held *h = e->held;

		e->held = h->next;
		if (h->from)
			cq_push(h->from, &(struct rpcrdma_cqe){ h->ctx, RPCRDMA_OP_SEND, 0,
							       -RPCRDMA_ERR_DISCONN });
		free(h);
	}
	e->held_tail = NULL;
	e->state = ST_GONE;
	e->base.connected = 0;
}

/* Both ends learn at once; everything posted completes with DISCONN. */
static void break_conn(struct mock_ep *e)
{
	struct mock_ep *p = e->peer;

	if (e->state == ST_GONE)
		return;
	e->mp->stats.disconnects++;
	e->peer = NULL;
	if (p) {
		p->peer = NULL;
		flush_one_side(p);
	}
	flush_one_side(e);
}

/* ---- memory ---- */

static struct mock_mr *mr_find(struct mock_prov *mp, uint32_t key)
{
	struct mock_mr *m;

	for (m = mp->mrs; m; m = m->next)
		if (m->base.handle == key)
			return m;
	return NULL;
}

static int mock_mr_reg(struct rpcrdma_prov *p, void *addr, size_t len, unsigned access,
		       struct rpcrdma_mr **out)
{
	struct mock_prov *mp = (struct mock_prov *)p;
	struct mock_mr *m = calloc(1, sizeof(*m));

	if (!m)
		return -RPCRDMA_ERR_NOMEM;
	pthread_mutex_lock(&mp->lock);
	do
		m->base.handle = rpcrdma__key_new(&mp->keys);
	while (mr_find(mp, m->base.handle));
	m->base.offset = (uint64_t)(uintptr_t)addr;
	m->base.addr = addr;
	m->base.len = len;
	m->base.access = access;
	m->base.prov = p;
	m->next = mp->mrs;
	mp->mrs = m;
	mp->stats.mrs_live++;
	pthread_mutex_unlock(&mp->lock);
	*out = &m->base;
	return 0;
}

static int mock_mr_dereg(struct rpcrdma_mr *base)
{
	struct mock_prov *mp = (struct mock_prov *)base->prov;
	struct mock_mr **pp;

	pthread_mutex_lock(&mp->lock);
	for (pp = &mp->mrs; *pp; pp = &(*pp)->next) {
		if (&(*pp)->base == base) {
			*pp = (*pp)->next;
			break;
		}
	}
	rpcrdma__key_release(&mp->keys, base->handle);
	mp->stats.mrs_live--;
	pthread_mutex_unlock(&mp->lock);
	free(base);
	return 0;
}

/* RFC 5042: the remote side reaches only what was advertised, with the right granted. */
static uint8_t *remote_bytes(struct mock_prov *mp, const struct rpcrdma_segment *s, unsigned need)
{
	struct mock_mr *m = mr_find(mp, s->handle);

	if (!m || m->invalidated || !(m->base.access & need) || s->offset < m->base.offset ||
	    s->offset - m->base.offset > m->base.len ||
	    m->base.len - (s->offset - m->base.offset) < s->length)
		return NULL;
	return (uint8_t *)m->base.addr + (s->offset - m->base.offset);
}

/* ---- data ---- */

/* The fault plan breaks the connection as this op is posted: it completes DISCONN. */
static void break_at_post(struct mock_ep *e, void *ctx, uint32_t op)
{
	cq_push(e, &(struct rpcrdma_cqe){ ctx, op, 0, -RPCRDMA_ERR_DISCONN });
	break_conn(e);
}

static int count_post(struct mock_ep *e)
{
	struct mock_prov *mp = e->mp;

	uint64_t n;

	if (e->state != ST_CONNECTED)
		return -RPCRDMA_ERR_DISCONN;
	n = ++mp->stats.posts;
	if (n == mp->faults.disconnect_at_post)
		return 1;  /* accepted, then the connection breaks */
	if (mp->faults.again_at_post && n >= mp->faults.again_at_post &&
	    n < (uint64_t)mp->faults.again_at_post + (mp->faults.again_count ? mp->faults.again_count : 1))
		return -RPCRDMA_ERR_AGAIN;   /* queue full: not taken, try again later */
	return 0;
}

static void deliver(struct mock_ep *to, struct mock_recv *r, struct mock_ep *from, void *sctx,
		    const uint8_t *data, uint32_t len)
{
	struct mock_prov *mp = to->mp;

	if (r->sge.len < len) {
		/* the message does not fit: a local length error at the receiver */
		free(r);
		if (from)
			complete(from, sctx, RPCRDMA_OP_SEND, 0, -RPCRDMA_ERR_IO);
		break_conn(to);
		return;
	}
	memcpy(r->sge.addr, data, len);
	if (++mp->nrecv_msgs == mp->faults.corrupt_recv && len) {
		uint32_t off = mp->faults.corrupt_offset < len ? mp->faults.corrupt_offset : len - 1;

		((uint8_t *)r->sge.addr)[off] ^= 0x5a;
	}
	mp->stats.recvs++;
	mp->stats.bytes += len;
	complete(to, r->ctx, RPCRDMA_OP_RECV, len, 0);
	free(r);
	/* if that completion was made to fail, the connection broke under the send too */
	if (from)
		complete(from, sctx, RPCRDMA_OP_SEND, to->state == ST_GONE ? 0 : len,
			 to->state == ST_GONE ? -RPCRDMA_ERR_DISCONN : 0);
}

static int hold_send(struct mock_ep *to, struct mock_ep *from, void *ctx, const uint8_t *data,
		     uint32_t len)
{
	struct mock_held *h = malloc(sizeof(*h) + len);

	if (!h)
		return -RPCRDMA_ERR_NOMEM;
	h->next = NULL;
	h->from = from;
	h->ctx = ctx;
	h->len = len;
	memcpy(h->data, data, len);
	if (to->held_tail)
		to->held_tail->next = h;
	else
		to->held = h;
	to->held_tail = h;
	return 0;
}

static struct mock_recv *rq_pop(struct mock_ep *e)
{
	struct mock_recv *r = e->rq;

	if (r) {
		e->rq = r->next;
		if (!e->rq)
			e->rq_tail = NULL;
	}
	return r;
}

/* Send With Invalidate: the peer's device takes the handle out of use as the message
 * arrives. A handle that is no registration reachable remotely is the device's
 * "invalid request": the connection breaks. 0, or 1 when it broke. */
static int invalidate(struct mock_ep *e, void *ctx, uint32_t handle)
{
	struct mock_prov *mp = e->mp;
	struct mock_mr *m = mr_find(mp, handle);

	if (!m || m->invalidated ||
	    !(m->base.access & (RPCRDMA_ACC_REMOTE_READ | RPCRDMA_ACC_REMOTE_WRITE))) {
		mp->stats.inv_errors++;
		complete(e, ctx, RPCRDMA_OP_SEND, 0, -RPCRDMA_ERR_ACCESS);
		break_conn(e);
		return 1;
	}
	m->invalidated = 1;
	mp->stats.sends_inv++;
	mp->stats.last_inv_handle = handle;
	return 0;
}

static int send_as(struct mock_ep *e, const struct rpcrdma_sge *sge, const uint32_t *inv,
		   void *ctx)
{
	struct mock_prov *mp = e->mp;
	struct mock_recv *r;
	int rc;

	pthread_mutex_lock(&mp->lock);
	rc = count_post(e);
	if (rc < 0)
		goto out_unlock;
	mp->stats.sends++;
	if (rc == 1) {
		rc = 0;
		break_at_post(e, ctx, RPCRDMA_OP_SEND);
		goto out_unlock;
	}
	if (inv && invalidate(e, ctx, *inv))
		goto out_unlock;
	r = rq_pop(e->peer);
	if (r) {
		deliver(e->peer, r, e, ctx, sge->addr, sge->len);
	} else if (mp->faults.rnr_wait) {
		rc = hold_send(e->peer, e, ctx, sge->addr, sge->len);
	} else {
		mp->stats.rnr_errors++;
		complete(e, ctx, RPCRDMA_OP_SEND, 0, -RPCRDMA_ERR_IO);
		break_conn(e);
	}
out_unlock:
	pthread_mutex_unlock(&mp->lock);
	return rc;
}

static int mock_post_send(struct rpcrdma_ep *base, const struct rpcrdma_sge *sge, void *ctx)
{
	return send_as((struct mock_ep *)base, sge, NULL, ctx);
}

static int mock_post_send_inv(struct rpcrdma_ep *base, const struct rpcrdma_sge *sge,
			      uint32_t handle, void *ctx)
{
	return send_as((struct mock_ep *)base, sge, &handle, ctx);
}

static int mock_post_recv(struct rpcrdma_ep *base, const struct rpcrdma_sge *sge, void *ctx)
{
	struct mock_ep *e = (struct mock_ep *)base;
	struct mock_prov *mp = e->mp;
	struct mock_recv *r;
	int rc;

	pthread_mutex_lock(&mp->lock);
	rc = count_post(e);
	if (rc < 0)
		goto out_unlock;
	r = calloc(1, sizeof(*r));
	if (!r) {
		rc = -RPCRDMA_ERR_NOMEM;
		goto out_unlock;
	}
	r->ctx = ctx;
	r->sge = *sge;
	if (rc == 1) {
		rc = 0;
		free(r);
		break_at_post(e, ctx, RPCRDMA_OP_RECV);
		goto out_unlock;
	}
	if (e->held) {
		struct mock_held *h = e->held;

		e->held = h->next;
		if (!e->held)
			e->held_tail = NULL;
		deliver(e, r, h->from, h->ctx, h->data, h->len);
		free(h);
	} else {
		if (e->rq_tail)
			e->rq_tail->next = r;
		else
			e->rq = r;
		e->rq_tail = r;
	}
out_unlock:
	pthread_mutex_unlock(&mp->lock);
	return rc;
}

/* Copy between the local pieces and the remote segments, in order. */
static int rma_copy(struct mock_prov *mp, uint32_t op, const struct rpcrdma_sge *l, uint32_t nl,
		    const struct rpcrdma_segment *r, uint32_t nr)
{
	unsigned need = op == RPCRDMA_OP_READ ? RPCRDMA_ACC_REMOTE_READ : RPCRDMA_ACC_REMOTE_WRITE;
	uint32_t li = 0, lo = 0, ri;

	for (ri = 0; ri < nr; ri++)
		if (!remote_bytes(mp, &r[ri], need))
			return -RPCRDMA_ERR_ACCESS;
	/* iWARP's rule, kept here on every fabric so that tests prove each Read
	 * destination is registered as one (RPCRDMA_ACC_READ_SINK) */
	for (li = 0; op == RPCRDMA_OP_READ && li < nl; li++)
		if (!(l[li].mr->access & RPCRDMA_ACC_READ_SINK))
			return -RPCRDMA_ERR_ACCESS;
	li = 0;
	for (ri = 0; ri < nr; ri++) {
		uint8_t *rem = remote_bytes(mp, &r[ri], need);
		uint32_t ro = 0;

		while (ro < r[ri].length && li < nl) {
			uint32_t step = l[li].len - lo < r[ri].length - ro ? l[li].len - lo
									 : r[ri].length - ro;
			uint8_t *loc = (uint8_t *)l[li].addr + lo;

			if (op == RPCRDMA_OP_READ)
				memcpy(loc, rem + ro, step);
			else
				memcpy(rem + ro, loc, step);
			lo += step;
			ro += step;
			if (lo == l[li].len) {
				li++;
				lo = 0;
			}
		}
	}
	return 0;
}

static int mock_post_rma(struct rpcrdma_ep *base, uint32_t op, const struct rpcrdma_sge *l,
			 uint32_t nl, const struct rpcrdma_segment *r, uint32_t nr, void *ctx)
{
	struct mock_ep *e = (struct mock_ep *)base;
	struct mock_prov *mp = e->mp;
	uint64_t total = 0;
	uint32_t i;
	int rc;

	pthread_mutex_lock(&mp->lock);
	rc = count_post(e);
	if (rc < 0)
		goto out_unlock;
	for (i = 0; i < nl; i++)
		total += l[i].len;
	if (op == RPCRDMA_OP_READ)
		mp->stats.reads++;
	else
		mp->stats.writes++;
	if (rc == 1) {
		rc = 0;
		break_at_post(e, ctx, op);
		goto out_unlock;
	}
	rc = rma_copy(mp, op, l, nl, r, nr);
	if (rc) {
		mp->stats.access_errors++;
		complete(e, ctx, op, 0, rc);
		break_conn(e);
		rc = 0;
		goto out_unlock;
	}
	mp->stats.bytes += total;
	complete(e, ctx, op, (uint32_t)total, 0);
out_unlock:
	pthread_mutex_unlock(&mp->lock);
	return rc;
}

static void age_delayed(struct mock_ep *e)
{
	struct mock_delayed **pp = &e->delayed;

	while (*pp) {
		struct mock_delayed *d = *pp;

		if (d->polls_left == 0 || --d->polls_left == 0) {
			*pp = d->next;
			cq_push(e, &d->cqe);
			free(d);
		} else {
			pp = &d->next;
		}
	}
}

static int mock_poll(struct rpcrdma_ep *base, struct rpcrdma_cqe *out, int max)
{
	struct mock_ep *e = (struct mock_ep *)base;
	int n = 0;

	pthread_mutex_lock(&e->mp->lock);
	age_delayed(e);
	n = rpcrdma__ring_pop(&e->cq, out, max);
	pthread_mutex_unlock(&e->mp->lock);
	return n;
}

static void deadline_ts(struct timespec *ts, int timeout_ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += timeout_ms / 1000;
	ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* Wait on the fabric's condition until pred(arg) holds; -RPCRDMA_ERR_TIMEDOUT if not. */
static int cond_wait_for(struct mock_prov *mp, int (*pred)(void *), void *arg, int timeout_ms)
{
	struct timespec ts;
	int rc = 0;

	deadline_ts(&ts, timeout_ms < 0 ? 0 : timeout_ms);
	while (!pred(arg) && rc == 0) {
		if (timeout_ms < 0)
			pthread_cond_wait(&mp->cond, &mp->lock);
		else
			rc = pthread_cond_timedwait(&mp->cond, &mp->lock, &ts);
	}
	return pred(arg) ? 0 : -RPCRDMA_ERR_TIMEDOUT;
}

static int ep_has_work(void *arg)
{
	struct mock_ep *e = arg;

	return e->cq.n || e->delayed;
}

static int mock_wait(struct rpcrdma_ep *base, int timeout_ms)
{
	struct mock_ep *e = (struct mock_ep *)base;
	int rc;

	pthread_mutex_lock(&e->mp->lock);
	rc = cond_wait_for(e->mp, ep_has_work, e, timeout_ms);
	pthread_mutex_unlock(&e->mp->lock);
	return rc;
}

static int mock_ep_fd(const struct rpcrdma_ep *base)
{
	(void)base;
	return -1;
}

/* ---- connections ---- */

static struct mock_ep *ep_new(struct mock_prov *mp)
{
	struct mock_ep *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->base.prov = &mp->base;
	e->mp = mp;
	e->all_next = mp->eps;
	mp->eps = e;
	return e;
}

static void ep_unlist(struct mock_prov *mp, struct mock_ep *e)
{
	struct mock_ep **pp;

	for (pp = &mp->eps; *pp; pp = &(*pp)->all_next) {
		if (*pp == e) {
			*pp = e->all_next;
			return;
		}
	}
}

static void link_pair(struct mock_ep *a, struct mock_ep *b)
{
	a->peer = b;
	b->peer = a;
	a->state = b->state = ST_CONNECTED;
	a->base.connected = b->base.connected = 1;
}

static void set_pdata(struct mock_ep *e, const void *p, size_t len)
{
	e->base.peer_pdata_len = len;
	if (len)
		memcpy(e->base.peer_pdata, p, len);
}

static struct mock_listener *listener_at(struct mock_prov *mp, uint16_t port)
{
	struct mock_listener *l;

	for (l = mp->listeners; l; l = l->next)
		if (l->base.port == port)
			return l;
	return NULL;
}

static int mock_listen(struct rpcrdma_prov *p, const char *host, uint16_t port,
		       struct rpcrdma_listener **out)
{
	struct mock_prov *mp = (struct mock_prov *)p;
	struct mock_listener *l;
	int rc = 0;

	(void)host;
	pthread_mutex_lock(&mp->lock);
	if (!port)
		for (port = 40000; listener_at(mp, port); port++)
			;
	if (listener_at(mp, port)) {
		rc = -RPCRDMA_ERR_ADDR;
		goto out_unlock;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		rc = -RPCRDMA_ERR_NOMEM;
		goto out_unlock;
	}
	l->base.prov = p;
	l->base.port = port;
	l->next = mp->listeners;
	mp->listeners = l;
	*out = &l->base;
out_unlock:
	pthread_mutex_unlock(&mp->lock);
	return rc;
}

static int has_request(void *arg)
{
	return ((struct mock_listener *)arg)->q != NULL;
}

static int mock_listener_get(struct rpcrdma_listener *base, int timeout_ms,
			     struct rpcrdma_connreq **out)
{
	struct mock_listener *l = (struct mock_listener *)base;
	struct mock_prov *mp = (struct mock_prov *)base->prov;
	int rc;

	pthread_mutex_lock(&mp->lock);
	rc = cond_wait_for(mp, has_request, l, timeout_ms);
	if (!rc) {
		struct mock_connreq *r = l->q;

		l->q = r->next;
		if (!l->q)
			l->q_tail = NULL;
		*out = &r->base;
	}
	pthread_mutex_unlock(&mp->lock);
	return rc;
}

static int mock_listener_fd(const struct rpcrdma_listener *l)
{
	(void)l;
	return -1;
}

static void mock_listener_close(struct rpcrdma_listener *base)
{
	struct mock_listener *l = (struct mock_listener *)base, **pp;
	struct mock_prov *mp = (struct mock_prov *)base->prov;

	pthread_mutex_lock(&mp->lock);
	for (pp = &mp->listeners; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	}
	while (l->q) {
		struct mock_connreq *r = l->q;

		l->q = r->next;
		if (r->client) {
			r->client->rejected = 1;
			flush_one_side(r->client);
		}
		free(r);
	}
	pthread_cond_broadcast(&mp->cond);
	pthread_mutex_unlock(&mp->lock);
	free(l);
}

static int mock_accept(struct rpcrdma_connreq *base, const void *pdata, size_t len, int timeout_ms,
		       struct rpcrdma_ep **out)
{
	struct mock_connreq *r = (struct mock_connreq *)base;
	struct mock_prov *mp = (struct mock_prov *)base->prov;
	struct mock_ep *e;
	int rc = 0;

	(void)timeout_ms;
	pthread_mutex_lock(&mp->lock);
	if (!r->client) {
		rc = -RPCRDMA_ERR_DISCONN;  /* the client gave up */
		goto out_unlock;
	}
	e = ep_new(mp);
	if (!e) {
		rc = -RPCRDMA_ERR_NOMEM;
		goto out_unlock;
	}
	link_pair(e, r->client);
	set_pdata(e, base->pdata, base->pdata_len);
	set_pdata(r->client, pdata, len);
	pthread_cond_broadcast(&mp->cond);
	*out = &e->base;
out_unlock:
	pthread_mutex_unlock(&mp->lock);
	free(r);
	return rc;
}

static void mock_reject(struct rpcrdma_connreq *base, const void *pdata, size_t len)
{
	struct mock_connreq *r = (struct mock_connreq *)base;
	struct mock_prov *mp = (struct mock_prov *)base->prov;

	pthread_mutex_lock(&mp->lock);
	if (r->client) {
		set_pdata(r->client, pdata, len);
		r->client->rejected = 1;
		flush_one_side(r->client);
	}
	pthread_cond_broadcast(&mp->cond);
	pthread_mutex_unlock(&mp->lock);
	free(r);
}

static int not_connecting(void *arg)
{
	return ((struct mock_ep *)arg)->state != ST_CONNECTING;
}

static void forget_request_of(struct mock_prov *mp, struct mock_ep *client)
{
	struct mock_listener *l;
	struct mock_connreq *r;

	for (l = mp->listeners; l; l = l->next)
		for (r = l->q; r; r = r->next)
			if (r->client == client)
				r->client = NULL;
}

static int mock_connect(struct rpcrdma_prov *p, const char *host, uint16_t port, const void *pdata,
			size_t len, int timeout_ms, struct rpcrdma_ep **out)
{
	struct mock_prov *mp = (struct mock_prov *)p;
	struct mock_listener *l;
	struct mock_connreq *r;
	struct mock_ep *e;
	int rc = 0;

	(void)host;
	pthread_mutex_lock(&mp->lock);
	l = listener_at(mp, port);
	r = l ? calloc(1, sizeof(*r)) : NULL;
	e = r ? ep_new(mp) : NULL;
	if (!e) {
		free(r);
		rc = l ? -RPCRDMA_ERR_NOMEM : -RPCRDMA_ERR_REFUSED;
		goto out_unlock;
	}
	r->base.prov = p;
	r->l = l;
	r->client = e;
	r->base.pdata_len = len;
	if (len)
		memcpy(r->base.pdata, pdata, len);
	if (l->q_tail)
		l->q_tail->next = r;
	else
		l->q = r;
	l->q_tail = r;
	pthread_cond_broadcast(&mp->cond);
	if (timeout_ms != 0) {
		rc = cond_wait_for(mp, not_connecting, e, timeout_ms);
		if (!rc && e->rejected)
			rc = -RPCRDMA_ERR_REJECTED;
		if (rc) {
			forget_request_of(mp, e);
			ep_unlist(mp, e);
			rpcrdma__ring_free(&e->cq);
			free(e);
			goto out_unlock;
		}
	}
	*out = &e->base;
out_unlock:
	pthread_mutex_unlock(&mp->lock);
	return rc;
}

static void free_queues(struct mock_ep *e)
{
	while (e->delayed) {
		struct mock_delayed *d = e->delayed;

		e->delayed = d->next;
		free(d);
	}
	rpcrdma__ring_free(&e->cq);
}

static void mock_ep_close(struct rpcrdma_ep *base)
{
	struct mock_ep *e = (struct mock_ep *)base, *o;
	struct mock_prov *mp = e->mp;
	struct mock_held **pp;

	pthread_mutex_lock(&mp->lock);
	break_conn(e);
	forget_request_of(mp, e);
	/* sends of ours still held at other endpoints must not point at us */
	for (o = mp->eps; o; o = o->all_next)
		for (pp = &o->held; *pp; pp = &(*pp)->next)
			if ((*pp)->from == e)
				(*pp)->from = NULL;
	ep_unlist(mp, e);
	free_queues(e);
	pthread_mutex_unlock(&mp->lock);
	free(e);
}

/* ---- provider ---- */

static void mock_close(struct rpcrdma_prov *p)
{
	struct mock_prov *mp = (struct mock_prov *)p;

	pthread_mutex_destroy(&mp->lock);
	pthread_cond_destroy(&mp->cond);
	free(mp);
}

/* Names for capture: the endpoints' addresses in this process, alike on both sides. */
static int mock_names(struct rpcrdma_ep *ep, void *local, size_t *llen, void *peer,
		      size_t *plen)
{
	struct mock_ep *e = (struct mock_ep *)ep;

	if (!e->peer || *llen < sizeof(void *) || *plen < sizeof(void *))
		return -RPCRDMA_ERR_NOPROV;
	memcpy(local, &e, sizeof(void *));
	memcpy(peer, &e->peer, sizeof(void *));
	*llen = *plen = sizeof(void *);
	return 0;
}

static const struct rpcrdma_prov_ops mock_ops = {
	.close = mock_close,
	.listen = mock_listen,
	.listener_get = mock_listener_get,
	.listener_fd = mock_listener_fd,
	.listener_close = mock_listener_close,
	.accept = mock_accept,
	.reject = mock_reject,
	.connect = mock_connect,
	.ep_close = mock_ep_close,
	.mr_reg = mock_mr_reg,
	.mr_dereg = mock_mr_dereg,
	.post_recv = mock_post_recv,
	.post_send = mock_post_send,
	.post_send_inv = mock_post_send_inv,
	.post_rma = mock_post_rma,
	.poll = mock_poll,
	.wait = mock_wait,
	.ep_fd = mock_ep_fd,
	.names = mock_names,
};

int rpcrdma_mock_open(struct rpcrdma_prov **out)
{
	struct mock_prov *mp = calloc(1, sizeof(*mp));
	struct rpcrdma_prov_caps *c;

	if (!mp)
		return -RPCRDMA_ERR_NOMEM;
	mp->base.ops = &mock_ops;
	pthread_mutex_init(&mp->lock, NULL);
	pthread_cond_init(&mp->cond, NULL);
	rpcrdma__keys_init(&mp->keys);
	c = &mp->base.caps;
	snprintf(c->name, sizeof(c->name), "mock");
	snprintf(c->fabric, sizeof(c->fabric), "mock");
	c->ep_type = RPCRDMA_EP_MOCK;
	c->key_size = 4;
	c->virt_addr = 1;
	c->write_send_ordered = 1;
	c->enforces_access = 1;
	c->iov_limit = 16;
	c->rma_iov_limit = 16;
	c->tx_depth = 1024;
	c->rx_depth = 1024;
	c->max_msg_size = UINT32_MAX;
	c->remote_inv = 1;
	*out = &mp->base;
	return 0;
}

static struct mock_prov *as_mock(struct rpcrdma_prov *p)
{
	return p && p->ops == &mock_ops ? (struct mock_prov *)p : NULL;
}

int rpcrdma_mock_set_faults(struct rpcrdma_prov *p, const struct rpcrdma_mock_faults *f)
{
	struct mock_prov *mp = as_mock(p);

	if (!mp || !f)
		return -RPCRDMA_ERR_INVAL;
	pthread_mutex_lock(&mp->lock);
	mp->faults = *f;
	mp->base.caps.remote_inv = !f->no_remote_inv;
	pthread_mutex_unlock(&mp->lock);
	return 0;
}

int rpcrdma_mock_get_stats(struct rpcrdma_prov *p, struct rpcrdma_mock_stats *out)
{
	struct mock_prov *mp = as_mock(p);

	if (!mp || !out)
		return -RPCRDMA_ERR_INVAL;
	pthread_mutex_lock(&mp->lock);
	*out = mp->stats;
	pthread_mutex_unlock(&mp->lock);
	return 0;
}

int rpcrdma_mock_pair(struct rpcrdma_prov *p, const void *pdata_a, size_t len_a,
		      const void *pdata_b, size_t len_b, struct rpcrdma_ep **a, struct rpcrdma_ep **b)
{
	struct mock_prov *mp = as_mock(p);
	struct mock_ep *ea, *eb;

	if (!mp || !a || !b || len_a > RPCRDMA_PDATA_MAX || len_b > RPCRDMA_PDATA_MAX)
		return -RPCRDMA_ERR_INVAL;
	pthread_mutex_lock(&mp->lock);
	ea = ep_new(mp);
	eb = ea ? ep_new(mp) : NULL;
	if (!eb) {
		if (ea) {
			ep_unlist(mp, ea);
			free(ea);
		}
		pthread_mutex_unlock(&mp->lock);
		return -RPCRDMA_ERR_NOMEM;
	}
	link_pair(ea, eb);
	set_pdata(ea, pdata_b, len_b);
	set_pdata(eb, pdata_a, len_a);
	/* as if a had connected to b: what prov.c records for connect and accept */
	ea->base.active = 1;
	if (len_a)
		memcpy(ea->base.my_pdata, pdata_a, len_a);
	ea->base.my_pdata_len = len_a;
	if (len_b)
		memcpy(eb->base.my_pdata, pdata_b, len_b);
	eb->base.my_pdata_len = len_b;
	pthread_mutex_unlock(&mp->lock);
	*a = &ea->base;
	*b = &eb->base;
	return 0;
}

int rpcrdma_mock_disconnect(struct rpcrdma_ep *ep)
{
	struct mock_ep *e = (struct mock_ep *)ep;

	if (!ep || !as_mock(ep->prov))
		return -RPCRDMA_ERR_INVAL;
	pthread_mutex_lock(&e->mp->lock);
	break_conn(e);
	pthread_mutex_unlock(&e->mp->lock);
	return 0;
}
