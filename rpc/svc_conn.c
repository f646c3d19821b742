/* SPDX-License-Identifier: BSD-2-Clause */
/* A connection of an RDMA listener (svc_listen.c): the engine's upper face (requests
 * queued for dispatch, replies done, the connection lost), replies encoded and handed to
 * the engine, the connection's xp_ops (and its lanes'), its descriptors, its end, and
 * backward calls on it (RFC 8167). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rpc_int.h"
#include "bufcache.h"
#include "objpool.h"
#include "xdr_be.h"

#include <rpc/svc_mt.h>
#include "svc_int.h"

/* An eventfd's counter only says "look": a write that finds it full (EAGAIN) or a read
 * that finds it empty loses nothing. */
void rpcrdma__svc_signal_fd(int fd)
{
	uint64_t one = 1;

	(void)!write(fd, &one, sizeof(one));
}

void rpcrdma__svc_drain_fd(int fd)
{
	uint64_t v;

	(void)!read(fd, &v, sizeof(v));
}

/* Whether svc_run() dispatches this listener's connections: their descriptors stay
 * registered (rpcrdma_svc_run()'s workers reach them through svc_getreq_common()), but
 * are only made readable for svc_run() to see. */
bool rpcrdma__svc_run_sees(const struct srv *s)
{
	return !s->opts.dispatch_inline && !s->opts.workers_only;
}

/* ---- engine upper face (progress thread, srv lock held) ---- */

struct sconn *rpcrdma__svc_prim(struct sconn *c)
{
	return c->prim ? c->prim : c;
}

bool rpcrdma__svc_lanes_busy(const struct sconn *c)
{
	uint32_t i;

	for (i = 0; i < c->nlanes; i++)
		if (c->lanes[i]->busy)
			return true;
	return false;
}

/* svc_run() is told to look at c: once until it drains c's eventfd (pop_ready), as more
 * requests before then ride on that look (most of a busy server's eventfd writes found
 * it written already). */
void rpcrdma__svc_ring(struct sconn *c)
{
	if (rpcrdma__svc_run_sees(c->srv) && !c->rung) {
		c->rung = 1;
		rpcrdma__svc_signal_fd(c->xprt.xp_fd);
	}
}

/* r joins c's requests ready for dispatch: last, or first (a call that waited). */
void rpcrdma__svc_enqueue(struct sconn *c, struct rpcrdma_eng_req *r, bool first)
{
	struct ready *q = rpcrdma__objpool_get(&c->srv->readies);

	if (!q)
		q = malloc(sizeof(*q));
	if (!q) {
		rpcrdma_eng_req_drop(c->eng, r);
		return;
	}
	q->er = r;
	if (first) {
		q->next = c->head;
		c->head = q;
		if (!c->tail)
			c->tail = q;
	} else {
		q->next = NULL;
		if (c->tail)
			c->tail->next = q;
		else
			c->head = q;
		c->tail = q;
	}
	rpcrdma__svc_ring(c);
}

static void on_request(void *ctx, struct rpcrdma_eng_req *r)
{
	rpcrdma__svc_enqueue(ctx, r, false);
}

struct reply_ctx {
	struct rpcrdma_reply_args a;
	struct rpcrdma_ddp_item items[RPCRDMA_DEF_LIST_CHUNKS];
	uint8_t *flat;
	size_t cap;
	struct srv *srv;
	uint32_t lent;     /* items left in the dispatcher's memory (bit i: item i) */
	int waiter;        /* svc_sendreply() waits for it: reply_done marks, it frees */
	int done, status;
};

static void reply_free(struct reply_ctx *x)
{
	rpcrdma__bufcache_put(&x->srv->cache, x->flat, x->cap);
	if (!rpcrdma__objpool_put(&x->srv->replies, x, REPLIES_KEPT))
		free(x);
}

/* What a listener keeps for the next requests goes back once it has no connection. */
void rpcrdma__svc_srv_trim(struct srv *s)
{
	rpcrdma__bufcache_free(&s->cache);
	rpcrdma__objpool_free(&s->readies);
	rpcrdma__objpool_free(&s->replies);
}

static void on_reply_done(void *ctx, struct rpcrdma_eng_req *r, int status)
{
	struct reply_ctx *x = rpcrdma_eng_req_user(r);

	(void)ctx;
	if (!x)
		return;
	if (!x->waiter) {
		reply_free(x);
		return;
	}
	x->done = 1;
	x->status = status;
	pthread_cond_broadcast(&x->srv->reply_cv);
}

/* A backward call finished (RFC 8167): its waiter is woken. Under the srv lock. */
static void on_bc_done(void *ctx, struct rpcrdma_eng_bcall *b)
{
	struct rpcrdma__bcw *w = rpcrdma_eng_bcall_user(b);
	const void *rep = rpcrdma_eng_bcall_reply(b, &w->reply_len);

	(void)ctx;
	w->status = rpcrdma_eng_bcall_status(b);
	if (!w->status && !(w->reply = malloc(w->reply_len ? w->reply_len : 1)))
		w->status = -RPCRDMA_ERR_NOMEM;
	else if (!w->status)
		memcpy(w->reply, rep, w->reply_len);
	rpcrdma_eng_bcall_free(b);
	w->b = NULL;
	w->done = 1;
	pthread_cond_broadcast(&w->cv);
}

static void on_fatal(void *ctx, int reason)
{
	struct sconn *c = ctx;
	const char *cls = rpcrdma_eng_fatal_class(c->eng);
	char why[96];

	/* the engine's class says which rule ended it (credit_overrun, stalled, ...) */
	snprintf(why, sizeof(why), "%s%s%s", rpcrdma_strerror(reason), cls ? ": " : "",
		 cls ? cls : "");
	if (!c->dead && c->xprt.xp_ops)
		rpcrdma__svc_conn_log(c, reason == -RPCRDMA_ERR_DISCONN ? RPCRDMA_LOG_INFO : RPCRDMA_LOG_WARN,
			 "lost the connection from", why);
	c->dead = 1;
	/* inline dispatch: the progress thread destroys it; svc_run() must not see it */
	rpcrdma__svc_ring(c);
}

/* ---- replies ---- */

/* DDP results at least this long are written from the dispatcher's own memory and
 * svc_sendreply() returns once the RDMA Writes are done (the dispatcher may free its
 * results as soon as it returns); shorter ones are copied, which costs less than the wait.
 * Over shm a 1 MiB READ spent ~40% of the server's time in that copy
 * (docs/BENCHMARKS-HISTORY.md, "fifth step").
 * Never over a provider that copies RMA data into a socket itself (caps.rma_by_copy, tcp):
 * there each wait costs system calls that a batch of copied replies shares; nor while the
 * core is contended (items_to_lend). */
#define LEND_MIN (16u * 1024u)
#define LEND_SLEEP_MS 10   /* a waiting dispatcher looks at the listener's state this often */

uint32_t rpcrdma__svc_lend_min(const struct rpcrdma_prov_caps *caps)
{
	return caps->rma_by_copy ? UINT32_MAX : LEND_MIN;
}

/* The items that go into the client's write chunks from where they are: long enough, and
 * a chunk that holds them (RFC 5666 §3.4: item i into write chunk i). Never an item the
 * engine would offer as a read chunk: its memory would wait for the client's RDMA_DONE. */
static uint32_t items_to_lend(const struct srv *s, const struct rpcrdma_eng_req *er,
			      const struct rpcrdma__xdr *enc)
{
	uint32_t i, mask = 0;

	for (i = 0; i < enc->nitems; i++)
		if (enc->items[i].len >= s->lend_min &&
		    enc->items[i].len <= rpcrdma_eng_req_write_cap(er, i))
			mask |= 1u << i;
	/* the wait is cheap while this thread may spin through it; on a contended core each
	 * one hands the core away and the replies behind it wait in turn: copy then */
	if (mask && !rpcrdma__spin_more(1))
		mask = 0;
	return mask;
}

/* The reply as one buffer the engine owns until reply_done: the stream, then each DDP
 * item not lent (the dispatcher's memory may be freed as soon as svc_sendreply() returns
 * unless it waits). enc (encap bytes, the stream at its start) is the buffer the reply was
 * encoded into: it is taken over when the items fit after the stream, which spares a copy
 * of every reply's stream (a long reply's whole result); otherwise, and for a reply that
 * comes from elsewhere (enc NULL), the reply is copied. */
struct reply_ctx *rpcrdma__svc_own_reply(struct srv *s, const struct rpcrdma_reply_args *in,
				   uint32_t lent, uint8_t *enc, size_t encap)
{
	struct reply_ctx *x = rpcrdma__objpool_zget(&s->replies, sizeof(*x));
	uint64_t total = in->xdr_len;
	uint32_t i;

	for (i = 0; i < in->nitems; i++)
		if (!(lent & (1u << i)))
			total += in->items[i].len;
	if (!x)
		return NULL;
	if (enc && total <= encap) {
		x->flat = enc;
		x->cap = encap;
	} else if (!(x->flat = rpcrdma__bufcache_get(&s->cache, total, &x->cap))) {
		free(x);
		return NULL;
	}
	x->srv = s;
	x->lent = lent;
	rpcrdma__reply_copy(x->flat, in, lent, x->items, &x->a);
	return x;
}

static bool_t wrap_results(struct sconn *c, XDR *x, xdrproc_t xres, void *where)
{
	if (SVC_XP_AUTH(&c->xprt).svc_ah_ops)
		return SVCAUTH_WRAP(&SVC_XP_AUTH(&c->xprt), x, xres, where);
	return xres(x, where);
}

/* Inline dispatch: the progress thread is the one waiting, so it drives this connection
 * (alone) until the reply is done, sleeping when it may on the connection's descriptor
 * and the listener's (which carries the completions of the connections sharing its
 * queue). Under the srv lock. */
static void drive_until_done(struct sconn *c, struct reply_ctx *x)
{
	struct srv *s = c->srv;
	unsigned idle = 0, backoff = 0;
	bool armed;

	while (!x->done && !c->dead && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		struct pollfd p[2] = { { .fd = rpcrdma_ep_fd(c->ep), .events = POLLIN },
				       { .fd = rpcrdma_listener_fd(s->l), .events = POLLIN } };

		int polled = 0;

		(void)rpcrdma_listener_drain(s->l);
		if (rpcrdma__svc_poll_conn(c, rpcrdma__rpc_now(), &polled) || polled) {   /* the reply's own */
			idle = backoff = 0;
			continue;
		}
		if (rpcrdma__spin_more(++idle))
			continue;
		armed = p[0].fd >= 0 && !rpcrdma_ep_arm(c->ep) && !rpcrdma_listener_arm(s->l);
		pthread_mutex_unlock(&s->lock);
		if (!armed)
			rpcrdma__idle_backoff(&backoff);
		else if (poll(p, 2, LEND_SLEEP_MS) >= 0)
			rpcrdma_ep_slept(c->ep, p[0].revents != 0);
		pthread_mutex_lock(&s->lock);
	}
}

/* Another thread dispatches: the progress thread completes the reply and wakes it. */
static void sleep_until_done(struct sconn *c, struct reply_ctx *x)
{
	struct srv *s = c->srv;
	struct timespec ts;

	while (!x->done && !rpcrdma__svc_prim(c)->dead && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += LEND_SLEEP_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&s->reply_cv, &s->lock, &ts);
	}
}

/* svc_sendreply() with lent items returns once the engine is done with them (RFC 5666
 * §3.4: the Writes completed, or the connection is gone: fail_all finished the reply before
 * on_fatal marked it dead). 1 when the reply went. If the listener stops first, the reply
 * is left to the engine, which frees it. Under the srv lock. */
static int wait_reply(struct sconn *c, struct reply_ctx *x)
{
	struct srv *s = c->srv;
	int ok;

	s->reply_waiters++;
	if (pthread_equal(pthread_self(), s->thread))
		drive_until_done(c, x);
	else
		sleep_until_done(c, x);
	s->reply_waiters--;
	pthread_cond_broadcast(&s->reply_cv);   /* lst_destroy() waits for the last one */
	if (!x->done) {
		x->waiter = 0;
		return 0;
	}
	ok = x->status == 0;
	reply_free(x);
	return ok;
}

/* The reply x to er goes to the engine; with items lent, once they are written. */
bool_t rpcrdma__svc_give_reply(struct sconn *c, struct rpcrdma_eng_req *er, struct reply_ctx *x)
{
	int rc, wait;

	/* unless it waits, x may be freed by reply_done before rpcrdma_eng_reply() returns */
	wait = x->waiter = x->lent != 0;
	rpcrdma_eng_req_set_user(er, x);
	rc = rpcrdma_eng_reply(c->eng, er, &x->a, rpcrdma__rpc_now());
	if (rc == -RPCRDMA_ERR_INVAL) {
		/* refused before anything happened: no reply_done will come */
		x->waiter = 0;
		on_reply_done(NULL, er, rc);
		rpcrdma_eng_req_drop(c->eng, er);
		return FALSE;
	}
	if (wait && !wait_reply(c, x))
		return FALSE;
	return rc == 0;
}

/* The reply header and its results into buf; with ddp, results a binding marks become
 * DDP items. */
static bool_t encode_msg(struct sconn *c, struct rpcrdma__xdr *enc, uint8_t *buf, u_int cap,
			 struct rpc_msg *msg, xdrproc_t xres, void *where)
{
	bool_t ok;

	rpcrdma__xdr_encode(enc, buf, cap);
	if (c->ddp)
		rpcrdma__xdr_enter(enc);
	ok = xdr_replymsg(&enc->x, msg) && (!xres || wrap_results(c, &enc->x, xres, where));
	rpcrdma__xdr_leave();
	return ok;
}

/* Results the program's XDR routine cannot encode (a string past its bound, say): the
 * call is answered SYSTEM_ERR at once, as knfsd's svc_process does, rather than left for
 * the client's timeout, which would tear the connection down and resend every call in
 * flight. libtirpc's TCP transport sends a truncated record instead, which its client
 * reports as RPC_CANTDECODERES (docs/RPC.md). Logged once per listener, then at debug. */
static bool_t encode_syserr(struct sconn *c, struct rpcrdma__xdr *enc, uint8_t *buf, u_int cap,
			    const struct rpc_msg *msg)
{
	struct rpc_msg err = *msg;
	char why[96];
	int level = __atomic_exchange_n(&c->srv->encode_failed, 1, __ATOMIC_RELAXED) ?
			    RPCRDMA_LOG_DEBUG : RPCRDMA_LOG_WARN;

	snprintf(why, sizeof(why), "XID 0x%08x, program %lu version %lu procedure %lu",
		 (unsigned)msg->rm_xid, (unsigned long)c->prog, (unsigned long)c->vers,
		 (unsigned long)c->proc);
	rpcrdma__svc_conn_log(rpcrdma__svc_prim(c), level, "answered SYSTEM_ERR: the results could not be encoded, to",
		 why);
	err.acpted_rply.ar_stat = SYSTEM_ERR;
	return encode_msg(c, enc, buf, cap, &err, NULL, NULL);
}

/* Encode msg (results marked by a binding become DDP items) and give it to the engine.
 * FALSE when nothing was sent, or when the results failed to encode (SYSTEM_ERR was sent:
 * svc_sendreply() fails, as over TCP). Called with the srv lock held. */
static bool_t send_reply(struct sconn *c, struct rpc_msg *msg)
{
	struct rpcrdma_eng_req *er = c->cur;
	/* no result leaves the stream under a flavour that may wrap it (RFC 8166 §8.2.1) */
	const struct rpcrdma_ulb_proc *b = c->ddp ? rpcrdma_ulb_find(c->prog, c->vers, c->proc)
						  : NULL;
	struct rpcrdma__xdr enc;
	struct rpcrdma_reply_args made;
	xdrproc_t xres = NULL, saved = NULL;
	void *where = NULL;
	struct reply_ctx *x;
	u_int cap = 256 + 2 * MAX_AUTH_BYTES;
	size_t bcap;
	uint8_t *buf;
	bool_t ok, failed = FALSE;

	if (!er)
		return FALSE;
	c->cur = NULL;
	/* svc_sendreply() and svcerr_*() leave the XID to the transport */
	msg->rm_xid = rpcrdma_eng_req_xid(er);
	if (msg->rm_reply.rp_stat == MSG_ACCEPTED && msg->acpted_rply.ar_stat == SUCCESS) {
		saved = msg->acpted_rply.ar_results.proc;
		xres = b && b->xres ? b->xres : saved;
		where = msg->acpted_rply.ar_results.where;
		msg->acpted_rply.ar_results.proc = RPCRDMA_XDR_VOID;
		cap += (u_int)xdr_sizeof(xres, where);
	}
	buf = rpcrdma__bufcache_get(&c->srv->cache, cap, &bcap);
	if (!buf) {
		rpcrdma__svc_drc_finish(c, NULL);
		rpcrdma_eng_req_drop(c->eng, er);
		return FALSE;
	}
	ok = encode_msg(c, &enc, buf, cap, msg, xres, where);
	if (!ok && xres)
		ok = failed = encode_syserr(c, &enc, buf, cap, msg);
	if (saved)
		msg->acpted_rply.ar_results.proc = saved;
	made.xdr = enc.buf;
	made.xdr_len = rpcrdma__xdr_pos(&enc);
	made.items = enc.items;
	made.nitems = enc.nitems;
	x = ok ? rpcrdma__svc_own_reply(c->srv, &made, items_to_lend(c->srv, er, &enc), buf, bcap) : NULL;
	if (!x || x->flat != buf)
		rpcrdma__bufcache_put(&c->srv->cache, buf, bcap);
	/* before the engine has it: lent items are the dispatcher's until then */
	rpcrdma__svc_drc_finish(c, x ? &x->a : NULL);
	if (!x) {
		rpcrdma_eng_req_drop(c->eng, er);
		return FALSE;
	}
	return rpcrdma__svc_give_reply(c, er, x) && !failed;
}

/* RFC 5666 §6.2: CONF_RDMA, answered on every connection unless disabled. */
static void answer_ccp(struct sconn *c, struct rpc_msg *call)
{
	struct rpcrdma_ccp_args a;
	struct rpcrdma_ccp_res r;
	struct rpc_msg reply;
	uint32_t inl = c->srv->opts.inline_size;

	memset(&reply, 0, sizeof(reply));
	reply.rm_xid = call->rm_xid;
	reply.rm_direction = REPLY;
	reply.rm_reply.rp_stat = MSG_ACCEPTED;
	reply.acpted_rply.ar_verf = _null_auth;
	rpcrdma__xdr_enter(&c->dec);
	if (call->rm_call.cb_proc != RPCRDMA_CCP_PROC_CONF_RDMA) {
		reply.acpted_rply.ar_stat = PROC_UNAVAIL;
	} else if (!rpcrdma__xdr_ccp_args(&c->dec.x, &a)) {
		reply.acpted_rply.ar_stat = GARBAGE_ARGS;
	} else {
		r.maxcall_sendsize = a.maxcall_sendsize < inl ? a.maxcall_sendsize : inl;
		r.align = c->srv->opts.msgp_align;
		r.maxrdmaread = rpcrdma_eng_max_reads(c->eng);   /* ours, not the client's */
		reply.acpted_rply.ar_stat = SUCCESS;
		reply.acpted_rply.ar_results.where = (caddr_t)&r;
		reply.acpted_rply.ar_results.proc = (xdrproc_t)rpcrdma__xdr_ccp_res;
	}
	rpcrdma__xdr_leave();
	send_reply(c, &reply);
}

/* ---- xp_ops of a connection ---- */

struct sconn *rpcrdma__svc_conn_of(SVCXPRT *xprt)
{
	return (struct sconn *)xprt->xp_p1;
}

/* A request the dispatcher took and did not answer gives its credit back. */
static void drop_cur(struct sconn *c)
{
	rpcrdma__svc_drc_finish(c, NULL);
	if (c->cur) {
		rpcrdma_eng_req_drop(c->eng, c->cur);
		c->cur = NULL;
	}
}

/* libtirpc (1.3) finds a connection's RPCSEC_GSS context by its SVCXPRT's address, keeps
 * the sequence window there unlocked, and wraps each reply with the sequence number of
 * the last call it authenticated there. So a GSS call runs on its connection's own
 * SVCXPRT, one at a time, never on a lane: a lane would find no context (the call fails
 * RPCSEC_GSS_CREDPROBLEM) or, sharing one, wrap a reply with another call's number.
 * A call too short to say is left to the connection too. */
bool rpcrdma__svc_needs_prim(const struct rpcrdma_eng_req *er)
{
	uint32_t len;
	const uint8_t *call = rpcrdma_eng_req_call(er, &len);

	return !call || len < 28 || rpcrdma__get32(call + 24) == RPCSEC_GSS;
}

static struct rpcrdma_eng_req *pop_ready(struct sconn *lane)
{
	struct sconn *c = rpcrdma__svc_prim(lane);
	struct ready *q = c->head;
	struct rpcrdma_eng_req *er;

	if (q && lane != c && rpcrdma__svc_needs_prim(q->er)) {
		rpcrdma__svc_drain_fd(lane->xprt.xp_fd);
		lane->rung = 0;
		return NULL;
	}
	if (!q) {
		rpcrdma__svc_drain_fd(lane->xprt.xp_fd);
		lane->rung = 0;
		return NULL;
	}
	c->head = q->next;
	if (!c->head)
		c->tail = NULL;
	er = q->er;
	if (!rpcrdma__objpool_put(&c->srv->readies, q, READIES_KEPT))
		free(q);
	return er;
}

void rpcrdma__svc_drop_all(struct sconn *c)
{
	struct rpcrdma_eng_req *er;

	drop_cur(c);
	while ((er = pop_ready(c)) != NULL)
		rpcrdma_eng_req_drop(c->eng, er);
}

/* Decode the call's header; CONF_RDMA is answered here, never dispatched. */
static bool_t take_call(struct sconn *c, struct rpcrdma_eng_req *er, struct rpc_msg *msg)
{
	uint32_t len;
	const uint8_t *call = rpcrdma_eng_req_call(er, &len);
	bool_t ok;

	rpcrdma__xdr_decode(&c->dec, call, len);
	rpcrdma_eng_req_msgp(er, &c->dec.align, &c->dec.thresh, &c->dec.base);
	c->dec.lend = c->srv->opts.lend_args != 0;
	rpcrdma__xdr_enter(&c->dec);
	ok = xdr_callmsg(&c->dec.x, msg);
	rpcrdma__xdr_leave();
	if (!ok) {
		rpcrdma_eng_req_drop(c->eng, er);   /* no header to answer: as TCP does */
		return FALSE;
	}
	c->cur = er;
	c->prog = msg->rm_call.cb_prog;
	c->vers = msg->rm_call.cb_vers;
	c->proc = msg->rm_call.cb_proc;
	c->ddp = rpcrdma__cred_allows_ddp(msg->rm_call.cb_cred.oa_flavor,
					  msg->rm_call.cb_cred.oa_base,
					  msg->rm_call.cb_cred.oa_length);
	if (c->prog == RPCRDMA_CCP_PROG && c->vers == RPCRDMA_CCP_VERS && !c->srv->opts.no_ccp) {
		answer_ccp(c, msg);
		return FALSE;
	}
	if (!rpcrdma__svc_drc_admit(c, er, msg, call, len)) {
		c->cur = NULL;
		return FALSE;
	}
	return TRUE;
}

static bool_t conn_recv(SVCXPRT *xprt, struct rpc_msg *msg)
{
	struct sconn *c = rpcrdma__svc_conn_of(xprt);
	struct rpcrdma_eng_req *er;
	bool_t got = FALSE;

	pthread_mutex_lock(&c->srv->lock);
	/* svc_run() and rpcrdma_svc_run() may both look at this connection: one thread
	 * dispatches it at a time, its requests in order */
	if (c->owned && !pthread_equal(c->owner, pthread_self())) {
		pthread_mutex_unlock(&c->srv->lock);
		return FALSE;
	}
	c->owned = 1;
	c->owner = pthread_self();
	drop_cur(c);
	/* calls that arrived whole are served even once the connection is gone, as libtirpc
	 * serves what a TCP connection delivered before its end; their replies go nowhere */
	while (!got && (er = pop_ready(c)) != NULL)
		got = take_call(c, er, msg);
	if (!got)
		c->owned = 0;
	pthread_mutex_unlock(&c->srv->lock);
	return got;
}

static enum xprt_stat conn_stat(SVCXPRT *xprt)
{
	struct sconn *c = rpcrdma__svc_conn_of(xprt);
	enum xprt_stat st;

	pthread_mutex_lock(&c->srv->lock);
	if (c->owned && !pthread_equal(c->owner, pthread_self())) {
		pthread_mutex_unlock(&c->srv->lock);
		return XPRT_IDLE;      /* another thread is dispatching it */
	}
	drop_cur(c);
	c->owned = 0;
	/* only the connection itself dies, once none of its lanes is dispatching */
	if (c->dead && !c->head && !c->prim && !rpcrdma__svc_lanes_busy(c))
		st = XPRT_DIED;
	else if (c->prim && c->prim->head && rpcrdma__svc_needs_prim(c->prim->head->er))
		st = XPRT_IDLE;        /* a lane leaves a GSS call to its connection (no spin) */
	else
		st = rpcrdma__svc_prim(c)->head ? XPRT_MOREREQS : XPRT_IDLE;
	pthread_mutex_unlock(&c->srv->lock);
	return st;
}

/* The arguments' XDR routine: the binding's for this procedure, else the caller's. */
static xdrproc_t args_proc(const struct sconn *c, xdrproc_t xargs)
{
	const struct rpcrdma_ulb_proc *b = rpcrdma_ulb_find(c->prog, c->vers, c->proc);

	return b && b->xargs ? b->xargs : xargs;
}

/* ---- arguments lent from the call (opts.lend_args) ---- */

/* The call being dispatched is kept past its reply (the engine no longer recycles it).
 * false: no memory to note it, and the decode fails as xdr_bytes() fails without memory. */
static bool keep_call(struct sconn *c)
{
	struct sconn *p = rpcrdma__svc_prim(c);
	struct rpcrdma__held *h;
	uint32_t cap, len;
	bool ok = true;

	pthread_mutex_lock(&c->srv->lock);
	if (!c->cur || !rpcrdma_eng_req_call(c->cur, &len))
		goto out_unlock;   /* kept by an earlier svc_getargs() of this call */
	if (p->nheld == p->held_cap) {
		cap = p->held_cap ? 2 * p->held_cap : 4;
		h = realloc(p->held, cap * sizeof(*h));
		ok = h != NULL;
		if (!ok)
			goto out_unlock;
		p->held = h;
		p->held_cap = cap;
	}
	h = &p->held[p->nheld++];
	h->buf = rpcrdma_eng_req_take_call(c->cur, &h->cap);
	h->len = c->dec.cap;
	h->hit = false;
out_unlock:
	pthread_mutex_unlock(&c->srv->lock);
	return ok;
}

/* Calls whose lent arguments svc_freeargs() has just released go back to the engine's
 * buffers (srv lock held). */
static void give_back_held(struct sconn *p)
{
	uint32_t i = 0;

	while (i < p->nheld) {
		if (!p->held[i].hit) {
			i++;
			continue;
		}
		rpcrdma_eng_buf_put(p->eng, p->held[i].buf, p->held[i].cap);
		p->held[i] = p->held[--p->nheld];
	}
}

/* A closing connection's kept calls, released or not (a program that never called
 * svc_freeargs() leaked its arguments, as over TCP; their memory goes now). */
static void free_held(struct sconn *p)
{
	while (p->nheld)
		free(p->held[--p->nheld].buf);
	free(p->held);
	p->held = NULL;
	p->held_cap = 0;
}

static bool_t conn_getargs(SVCXPRT *xprt, xdrproc_t xargs, void *args)
{
	struct sconn *c = rpcrdma__svc_conn_of(xprt);
	bool_t ok;

	xargs = args_proc(c, xargs);
	rpcrdma__xdr_enter(&c->dec);
	if (SVC_XP_AUTH(xprt).svc_ah_ops)
		ok = SVCAUTH_UNWRAP(&SVC_XP_AUTH(xprt), &c->dec.x, xargs, args);
	else
		ok = xargs(&c->dec.x, args);
	rpcrdma__xdr_leave();
	if (ok && c->dec.nlent && !keep_call(c))
		ok = FALSE;
	if (!ok)
		rpcrdma__xdr_unlend(&c->dec);
	return ok;
}

static bool_t conn_reply(SVCXPRT *xprt, struct rpc_msg *msg)
{
	struct sconn *c = rpcrdma__svc_conn_of(xprt);
	bool_t ok;

	pthread_mutex_lock(&c->srv->lock);
	ok = send_reply(c, msg);
	pthread_mutex_unlock(&c->srv->lock);
	return ok;
}

static bool_t conn_freeargs(SVCXPRT *xprt, xdrproc_t xargs, void *args)
{
	struct sconn *c = rpcrdma__svc_conn_of(xprt), *p = rpcrdma__svc_prim(c);
	struct rpcrdma__xdr fs;
	bool_t ok;

	memset(&fs, 0, sizeof(fs));
	fs.x.x_op = XDR_FREE;
	xargs = args_proc(c, xargs);
	if (!c->srv->opts.lend_args)
		return xargs(&fs.x, args);
	pthread_mutex_lock(&c->srv->lock);
	fs.held = p->held;
	fs.nheld = p->nheld;
	rpcrdma__xdr_enter(&fs);
	ok = xargs(&fs.x, args);
	rpcrdma__xdr_leave();
	give_back_held(p);
	pthread_mutex_unlock(&c->srv->lock);
	return ok;
}

/* Called by svc_getreq_common() once the connection died: the progress thread releases
 * it when no worker holds it any more. */

static void conn_destroy(SVCXPRT *xprt)
{
	struct sconn *c = rpcrdma__svc_conn_of(xprt);
	struct srv *s = c->srv;   /* c may be freed as soon as the lock is released */

	xprt_unregister(xprt);
	pthread_mutex_lock(&s->lock);
	rpcrdma__svc_drop_all(c);
	c->destroyed = 1;
	pthread_mutex_unlock(&s->lock);
	rpcrdma__svc_srv_wake(s);   /* it frees the connection now, not at its next wake-up */
}

static bool_t conn_control(SVCXPRT *xprt, const u_int req, void *info)
{
	(void)xprt;
	(void)req;
	(void)info;
	return FALSE;
}

const struct xp_ops rpcrdma__svc_conn_ops = {
	.xp_recv = conn_recv,
	.xp_stat = conn_stat,
	.xp_getargs = conn_getargs,
	.xp_reply = conn_reply,
	.xp_freeargs = conn_freeargs,
	.xp_destroy = conn_destroy,
};

const struct xp_ops2 rpcrdma__svc_conn_ops2 = { .xp_control = conn_control };

/* ---- a connection's engine, descriptors and end ---- */

int rpcrdma__svc_conn_engine(struct srv *s, struct sconn *c, struct rpcrdma_connreq *req)
{
	const struct rpcrdma_prov_caps *caps = rpcrdma_prov_caps(s->p);
	struct rpcrdma_eng_upper up = { .ctx = c, .request = on_request,
					.reply_done = on_reply_done, .fatal = on_fatal,
					.bc_done = on_bc_done };
	struct rpcrdma_eng_config cfg;
	int rc;

	/* each connection needs a receive of the shared budget for its first credit (RFC 8166
	 * §3.3.3): with none left the request is refused, not accepted and then dropped */
	if (!rpcrdma_credit_pool_free(&s->pool)) {
		rpcrdma_log(RPCRDMA_LOG_WARN, "refused a connection: the receive budget of %u "
			    "buffers is taken by the live connections (recv_budget)", s->pool.limit);
		rpcrdma_reject(req, NULL, 0);
		return -RPCRDMA_ERR_NOSPC;
	}
	rpcrdma__eng_config_rpc(&cfg, RPCRDMA_ENG_SERVER, caps, s->opts.inline_size,
				s->opts.max_credits, s->opts.msgp_align, s->opts.msgp_thresh);
	cfg.reply_read_chunks = s->opts.reply_read_chunks < 0 ? RPCRDMA_RRC_NEVER :
				s->opts.reply_read_chunks ? RPCRDMA_RRC_ALWAYS : RPCRDMA_RRC_AUTO;
	cfg.pool = &s->pool;
	rc = rpcrdma_eng_create(&cfg, &up, &c->eng);
	if (rc) {
		rpcrdma_reject(req, NULL, 0);
		return rc;
	}
	/* 0: no wait for a client's confirmation here (finish_accepts) */
	return rpcrdma_eng_accept(c->eng, req, 0, rpcrdma__rpc_now(), &c->ep);
}

/* What svc_getcaller() and svc_getrpccaller() return, as over TCP. */
void rpcrdma__svc_conn_addresses(struct sconn *c)
{
	size_t len = sizeof(c->peer);

	if (rpcrdma_ep_peer_addr(c->ep, &c->peer, &len))
		len = 0;
	c->xprt.xp_addrlen = (int)(len < sizeof(c->xprt.xp_raddr) ? len : sizeof(c->xprt.xp_raddr));
	memcpy(&c->xprt.xp_raddr, &c->peer, (size_t)c->xprt.xp_addrlen);
	c->xprt.xp_rtaddr.buf = &c->peer;
	c->xprt.xp_rtaddr.len = c->xprt.xp_rtaddr.maxlen = (unsigned)len;
	c->xprt.xp_netid = len && c->peer.ss_family == AF_INET6 ? "rdma6" : "rdma";
	c->xprt.xp_ltaddr = c->srv->xprt.xp_ltaddr;
}

/* A connection's eventfd is not closed when the connection ends: svc_run() polls a copy
 * of its descriptor set and acts on a closed descriptor's number (POLLNVAL unregisters
 * whatever transport has that number by then, e.g. a TCP connection that reused it). It
 * goes back to a pool for the next connection. The pool keeps SPARES_KEPT; the others are
 * closed once svc_run() has gone round twice since they were given back (the listener's
 * eventfd, rung for it, brings it to lst_recv()): the copy it polls then was taken after
 * they left its set. So a burst of connections leaves no descriptors behind. */
#define SPARES_KEPT 1

int rpcrdma__svc_conn_fd(struct srv *s)
{
	if (s->nspare)
		return s->spare_fds[--s->nspare];
	return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

static int spares_grow(struct srv *s)
{
	size_t cap = (size_t)s->spare_cap * 2 + 8;
	int *n = realloc(s->spare_fds, sizeof(int) * cap);
	uint64_t *r;

	if (!n)
		return -1;
	s->spare_fds = n;
	r = realloc(s->spare_round, sizeof(uint64_t) * cap);
	if (!r)
		return -1;
	s->spare_round = r;
	s->spare_cap = (int)cap;
	return 0;
}

static void conn_fd_release(struct srv *s, int fd)
{
	if (fd < 0)
		return;
	rpcrdma__svc_drain_fd(fd);
	if (s->nspare == s->spare_cap && spares_grow(s)) {
		close(fd);   /* out of memory: closed at once, as before the pool could grow */
		return;
	}
	s->spare_round[s->nspare] = s->svc_rounds;
	s->spare_fds[s->nspare++] = fd;
	if (s->nspare > SPARES_KEPT)
		rpcrdma__svc_signal_fd(s->xprt.xp_fd);
}

/* The oldest spares beyond SPARES_KEPT that svc_run() can no longer poll are closed;
 * while some are too recent, svc_run() is rung for another round. srv lock held. */
void rpcrdma__svc_spares_trim(struct srv *s)
{
	int k = 0;

	while (s->nspare - k > SPARES_KEPT && s->spare_round[k] + 2 <= s->svc_rounds)
		close(s->spare_fds[k++]);
	if (k) {
		s->nspare -= k;
		memmove(s->spare_fds, s->spare_fds + k, sizeof(int) * (size_t)s->nspare);
		memmove(s->spare_round, s->spare_round + k, sizeof(uint64_t) * (size_t)s->nspare);
	}
	if (s->nspare > SPARES_KEPT)
		rpcrdma__svc_signal_fd(s->xprt.xp_fd);
}

/* Every field before inline_send is a uint64_t counter: they are summed as an array. */
_Static_assert(offsetof(struct rpcrdma_eng_stats, inline_send) ==
	       offsetof(struct rpcrdma_eng_stats, errors) + sizeof(uint64_t) * RPCRDMA_EC_COUNT,
	       "rpcrdma_eng_stats: only uint64_t counters before inline_send");

void rpcrdma__svc_stats_add(struct rpcrdma_eng_stats *t, const struct rpcrdma_eng_stats *a)
{
	const uint64_t *src = (const uint64_t *)a;
	uint64_t *dst = (uint64_t *)t;
	size_t i, n = offsetof(struct rpcrdma_eng_stats, inline_send) / sizeof(uint64_t);

	for (i = 0; i < n; i++) {
		if (&dst[i] == &t->credits_granted || &dst[i] == &t->credits_max)
			dst[i] = src[i] > dst[i] ? src[i] : dst[i];
		else
			dst[i] += src[i];
	}
	t->inline_send = a->inline_send > t->inline_send ? a->inline_send : t->inline_send;
	t->inline_recv = a->inline_recv > t->inline_recv ? a->inline_recv : t->inline_recv;
	t->remote_inv += a->remote_inv;   /* after the thresholds: not in the loop above */
}

void rpcrdma__svc_conn_log(struct sconn *c, int level, const char *what, const char *why)
{
	char peer[96];

	if (rpcrdma_log_level() < level || !c->eng)
		return;
	rpcrdma__addr_text(&c->peer, c->xprt.xp_rtaddr.len, peer, sizeof(peer));
	rpcrdma__log_conn(level, what, peer, why, c->srv->opts.provider, c->eng);
}

void rpcrdma__svc_conn_free(struct sconn *c)
{
	struct rpcrdma_eng_stats st;
	uint32_t i;

	if (c->xprt.xp_ops)
		rpcrdma__svc_conn_log(c, RPCRDMA_LOG_INFO, "closed the connection from", NULL);
	if (c->watched)
		epoll_ctl(c->srv->epfd, EPOLL_CTL_DEL, rpcrdma_ep_fd(c->ep), NULL);
	if (c->eng) {
		rpcrdma_eng_stats(c->eng, &st);
		rpcrdma__svc_stats_add(&c->srv->closed, &st);
	}
	for (i = 0; i < c->nlanes; i++)
		drop_cur(c->lanes[i]);
	if (c->eng) {
		struct parked *q;

		/* with the calls a lane's unanswered original gave back to the queue */
		rpcrdma__svc_drop_all(c);
		while ((q = rpcrdma__svc_unpark(c->srv, NULL, c)) != NULL) {
			rpcrdma_eng_req_drop(c->eng, q->er);
			free(q);
		}
	}
	free_held(c);
	rpcrdma_ep_close(c->ep);
	rpcrdma_eng_destroy(c->eng);
	conn_fd_release(c->srv, c->xprt.xp_fd);
	while (c->nlanes) {
		struct sconn *l = c->lanes[--c->nlanes];

		xprt_unregister(&l->xprt);
		conn_fd_release(c->srv, l->xprt.xp_fd);
		free(l);
	}
	free(c->lanes);
	free(c);
}

/* ---- the backchannel (RFC 8167): calls to a connection's client ---- */

int rpcrdma__svc_conn_hold(SVCXPRT *conn)
{
	struct sconn *c;

	if (!conn || conn->xp_ops != &rpcrdma__svc_conn_ops)
		return -1;
	c = rpcrdma__svc_prim(rpcrdma__svc_conn_of(conn));
	pthread_mutex_lock(&c->srv->lock);
	c->bc_refs++;
	pthread_mutex_unlock(&c->srv->lock);
	return 0;
}

/* Once the lock is released c may be freed at once (the progress thread reaps a
 * destroyed connection with no references): only s is used after it. */
void rpcrdma__svc_conn_release(SVCXPRT *conn)
{
	struct sconn *c = rpcrdma__svc_prim(rpcrdma__svc_conn_of(conn));
	struct srv *s = c->srv;
	int gone;

	pthread_mutex_lock(&s->lock);
	gone = --c->bc_refs == 0 && c->destroyed;
	pthread_mutex_unlock(&s->lock);
	if (gone)
		rpcrdma__svc_srv_wake(s);   /* its progress thread frees it */
}

/* Wait for w under the srv lock until it is done or the deadline passes; then the call
 * is abandoned (a late reply is dropped by the engine). */
static int bc_wait(struct srv *s, struct rpcrdma__bcw *w, uint64_t deadline)
{
	struct timespec ts;

	while (!w->done) {
		uint64_t now = rpcrdma__rpc_now(), ms;

		if (now >= deadline) {
			rpcrdma_eng_bcall_free(w->b);
			w->b = NULL;
			return -RPCRDMA_ERR_TIMEDOUT;
		}
		ms = deadline - now < 100 ? deadline - now : 100;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(ms * 1000000);
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&w->cv, &s->lock, &ts);
	}
	return w->status;
}

int rpcrdma__svc_bc_call(SVCXPRT *conn, const void *xdr, uint32_t len, struct rpcrdma__bcw *w,
			 uint64_t deadline)
{
	struct sconn *c = rpcrdma__svc_prim(rpcrdma__svc_conn_of(conn));
	struct srv *s = c->srv;
	int rc;

	/* only the progress thread moves the connection: it cannot also wait here */
	if (pthread_equal(pthread_self(), s->thread))
		return -RPCRDMA_ERR_AGAIN;
	pthread_mutex_lock(&s->lock);
	if (c->dead || c->destroyed || !c->eng) {
		pthread_mutex_unlock(&s->lock);
		return -RPCRDMA_ERR_DISCONN;
	}
	w->done = 0;
	rc = rpcrdma_eng_bc_call(c->eng, xdr, len, w, rpcrdma__rpc_now(), &w->b);
	if (!rc) {
		rpcrdma__svc_srv_wake(s);   /* a sleeping progress thread polls again */
		rc = bc_wait(s, w, deadline);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}
