/* SPDX-License-Identifier: BSD-2-Clause */
/* libtirpc SVCXPRT * over RPC-over-RDMA: programs register with svc_register() and their
 * dispatch functions use svc_getargs(), svc_sendreply() and svcerr_*() as over TCP.
 *
 * One progress thread per listener accepts connections and drives every connection's
 * engine. Each connection is an SVCXPRT whose xp_fd is an eventfd, readable while it has
 * requests ready, registered with xprt_register(): svc_run() dispatches them through
 * svc_getreq_common(), or rpcrdma_svc_run() does with worker threads. */
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

#define DEF_INLINE 4096u
#define DEF_CREDITS 32u
#define DEF_RECV_BUDGET 32768u
#define ACCEPT_MS 5000
#define MAX_PENDING 128u   /* accepted connections awaiting their clients' confirmation */
#define DRC_AVG_REPLY 256u   /* knfsd keeps replies of up to 256 bytes (RC_REPLBUFF) */
#define DEF_DRC_REPLY_MAX 4096u

struct srv;

/* Kept per listener: a request's queue entry and its reply's context, for the requests
 * in flight at once on its busiest connections (a few hundred bytes each). */
#define READIES_KEPT 64
#define REPLIES_KEPT 64

/* A request handed up by the engine, waiting for dispatch. */
struct ready {
	struct ready *next;
	struct rpcrdma_eng_req *er;
};

/* A call sent again while its original still runs (the duplicate request cache found
 * it running): it gets the original's reply when that is sent. */
struct parked {
	struct parked *next;
	struct sconn *c;                 /* its connection (never a lane) */
	struct rpcrdma_eng_req *er;
	struct rpcrdma__drc_ent *ent;    /* the original's entry */
};

/* A connection; or a lane of one (prim set): a second SVCXPRT on the same connection, so
 * that rpcrdma_svc_run()'s workers dispatch several of its requests at once
 * (opts.conn_parallel). A lane has its own descriptor, request being dispatched and
 * credential state; the queue of ready requests, the engine and the endpoint are the
 * connection's. */
struct sconn {
	SVCXPRT xprt;
	SVCXPRT_EXT ext;
	struct srv *srv;
	struct sconn *next;
	struct sconn *prim;              /* a lane's connection; NULL for a connection */
	struct sconn **lanes;            /* a connection's lanes, made as needed */
	uint32_t nlanes;
	struct rpcrdma_ep *ep;
	struct rpcrdma_eng *eng;
	struct ready *head, *tail;
	struct rpcrdma_eng_req *cur;     /* being dispatched */
	struct rpcrdma__xdr dec;         /* its call */
	struct rpcrdma__drc_ent *drc;    /* its entry in the duplicate request cache */
	struct rpcrdma__held *held;      /* a connection's calls its lanes' arguments point */
	uint32_t nheld, held_cap;        /* into (opts.lend_args); under srv lock */
	rpcprog_t prog;
	rpcvers_t vers;
	rpcproc_t proc;
	int ddp;                         /* the call's credential leaves its body alone */
	int dead, destroyed, busy;
	int owned;                       /* a thread is between xp_recv and xp_stat */
	uint64_t accept_until;           /* pending: when the client's confirmation is given up */
	int rung;                        /* its eventfd was written and not drained since */
	int watched;                     /* its endpoint's descriptor is in srv.epfd */
	int bc_refs;                     /* backchannel clients holding it (not freed) */
	pthread_t owner;
	struct sockaddr_storage peer;
};

struct srv {
	SVCXPRT xprt;
	SVCXPRT_EXT ext;
	struct rpcrdma__svc_src src;     /* what rpcrdma_svc_run()'s workers take from */
	struct rpcrdma__bufcache cache;  /* reply buffers kept for reuse; under lock */
	struct rpcrdma__objpool readies; /* struct ready and struct reply_ctx kept for the */
	struct rpcrdma__objpool replies; /* next requests (no malloc per call); under lock */
	struct rpcrdma_eng_stats closed; /* summed over closed connections */
	struct rpcrdma__drc *drc;        /* NULL: opts.drc_entries -1 */
	struct parked *parked;
	int *spare_fds;                  /* eventfds of closed connections, for new ones */
	uint64_t *spare_round;           /* svc_rounds when each was given back */
	int nspare, spare_cap;
	uint64_t svc_rounds;             /* lst_recv() calls: svc_run() went round */
	struct rpcrdma_svc_opts opts;
	struct rpcrdma_prov *p;
	struct rpcrdma_listener *l;
	struct rpcrdma_credit_pool pool;
	struct sockaddr_storage laddr;   /* bound address (xp_ltaddr of all its transports) */
	pthread_mutex_t lock;
	pthread_t thread;
	int stop;
	pthread_cond_t reply_cv;         /* a reply a dispatcher waits for is done */
	int reply_waiters;               /* dispatchers waiting in svc_sendreply() */
	int epfd;                        /* the progress thread sleeps here when idle */
	int wake_fd;                     /* an eventfd in it: stop, a connection destroyed */
	uint64_t next_due;               /* earliest engine deadline of this round */
	uint64_t listener_looked;        /* when the progress thread last polled it (ms) */
	bool listener_due;               /* poll it at the next round, whenever that was */
	uint32_t lend_min;               /* results this long are written from where they are */
	int encode_failed;               /* a reply's results failed to encode (logged once) */
	struct sconn *conns;
	struct sconn *pending;           /* accepted, their clients' confirmation awaited */
	uint32_t npending;
};

static void wake_workers(void)
{
	rpcrdma__svc_wake_workers();
}

/* An eventfd's counter only says "look": a write that finds it full (EAGAIN) or a read
 * that finds it empty loses nothing. */
static void signal_fd(int fd)
{
	uint64_t one = 1;

	(void)!write(fd, &one, sizeof(one));
}

static void drain_fd(int fd)
{
	uint64_t v;

	(void)!read(fd, &v, sizeof(v));
}

/* Whether svc_run() dispatches this listener's connections: their descriptors stay
 * registered (rpcrdma_svc_run()'s workers reach them through svc_getreq_common()), but
 * are only made readable for svc_run() to see. */
static bool svc_run_sees(const struct srv *s)
{
	return !s->opts.dispatch_inline && !s->opts.workers_only;
}

/* ---- engine upper face (progress thread, srv lock held) ---- */

static struct sconn *prim(struct sconn *c)
{
	return c->prim ? c->prim : c;
}

static bool lanes_busy(const struct sconn *c)
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
static void ring(struct sconn *c)
{
	if (svc_run_sees(c->srv) && !c->rung) {
		c->rung = 1;
		signal_fd(c->xprt.xp_fd);
	}
}

/* r joins c's requests ready for dispatch: last, or first (a call that waited). */
static void enqueue(struct sconn *c, struct rpcrdma_eng_req *r, bool first)
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
	ring(c);
}

static void on_request(void *ctx, struct rpcrdma_eng_req *r)
{
	enqueue(ctx, r, false);
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
static void srv_trim(struct srv *s)
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

static void conn_log(struct sconn *c, int level, const char *what, const char *why);

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
		conn_log(c, reason == -RPCRDMA_ERR_DISCONN ? RPCRDMA_LOG_INFO : RPCRDMA_LOG_WARN,
			 "lost the connection from", why);
	c->dead = 1;
	/* inline dispatch: the progress thread destroys it; svc_run() must not see it */
	ring(c);
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

static uint32_t lend_min(const struct rpcrdma_prov_caps *caps)
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
static struct reply_ctx *own_reply(struct srv *s, const struct rpcrdma_reply_args *in,
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

static int poll_conn(struct sconn *c, uint64_t now, int *polled);

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
		if (poll_conn(c, rpcrdma__rpc_now(), &polled) || polled) {   /* the reply's own */
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

	while (!x->done && !prim(c)->dead && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
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
static bool_t give_reply(struct sconn *c, struct rpcrdma_eng_req *er, struct reply_ctx *x)
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

/* ---- the duplicate request cache (svc_drc.c, docs/RPC.md) ---- */

/* A copy of the reply a goes to er, a call sent again. */
static void replay(struct sconn *c, struct rpcrdma_eng_req *er, const struct rpcrdma_reply_args *a)
{
	struct reply_ctx *x = own_reply(c->srv, a, 0, NULL, 0);

	if (!x) {
		rpcrdma_eng_req_drop(c->eng, er);
		return;
	}
	give_reply(c, er, x);
}

/* Calls the cache leaves alone: NULL (no effect, no result: knfsd's RC_NOCACHE), and
 * RPCSEC_GSS, whose reply's verifier seals the sequence number of the first sending,
 * which the client no longer accepts for a call sent again with a new one (RFC 2203
 * §5.3.3.1). */
static bool drc_applies(const struct rpc_msg *msg)
{
	return msg->rm_call.cb_proc != 0 && msg->rm_call.cb_cred.oa_flavor != RPCSEC_GSS;
}

/* The call waits for the reply of its original, which is running. */
static void park(struct sconn *c, struct rpcrdma_eng_req *er, struct rpcrdma__drc_ent *e)
{
	struct parked *q = malloc(sizeof(*q));

	if (!q) {
		rpcrdma_eng_req_drop(c->eng, er);
		return;
	}
	q->c = c;
	q->er = er;
	q->ent = e;
	q->next = c->srv->parked;
	c->srv->parked = q;
}

static void drc_log(struct sconn *c, const char *what, uint32_t xid)
{
	char why[64];

	if (rpcrdma_log_level() < RPCRDMA_LOG_INFO)
		return;
	snprintf(why, sizeof(why), "XID 0x%08x", xid);
	conn_log(c, RPCRDMA_LOG_INFO, what, why);
}

/* 1 when the call is to be dispatched; 0 when it was sent again and its original's reply
 * answers it, now (kept) or once sent (running). c may be a lane. */
static int drc_admit(struct sconn *c, struct rpcrdma_eng_req *er, const struct rpc_msg *msg,
		     const uint8_t *call, uint32_t len)
{
	struct srv *s = c->srv;
	struct sconn *p = prim(c);
	struct rpcrdma__drc_key k;
	struct rpcrdma__drc_ent *e;
	uint32_t at = rpcrdma__xdr_pos(&c->dec);
	int found;

	if (!s->drc || !drc_applies(msg) || at > len)
		return 1;
	rpcrdma__drc_key(&k, &p->peer, p->xprt.xp_rtaddr.len, msg, call + at, len - at, len);
	found = rpcrdma__drc_lookup(s->drc, &k, rpcrdma__rpc_now(), &e);
	if (found == RPCRDMA__DRC_NEW) {
		c->drc = e;
		return 1;
	}
	if (found == RPCRDMA__DRC_KEPT) {
		drc_log(p, "answered from the duplicate request cache a call sent again by", k.xid);
		replay(p, er, rpcrdma__drc_reply(e));
	} else {
		drc_log(p, "holds until its original is answered a call sent again by", k.xid);
		park(p, er, e);
	}
	return 0;
}

/* The next waiting call for entry e (NULL: any) of connection c (NULL: any), taken off
 * the list; NULL when there is none. */
static struct parked *unpark(struct srv *s, const struct rpcrdma__drc_ent *e,
			     const struct sconn *c)
{
	struct parked **pp, *q;

	for (pp = &s->parked; (q = *pp) != NULL; pp = &q->next)
		if ((!e || q->ent == e) && (!c || q->c == c)) {
			*pp = q->next;
			return q;
		}
	return NULL;
}

/* The call being dispatched on c was answered with a (NULL: not answered). Calls sent
 * again that wait for it get a copy of the reply, or, when there is none, are dispatched
 * themselves; the cache keeps the reply if it is short enough. */
static void drc_finish(struct sconn *c, const struct rpcrdma_reply_args *a)
{
	struct srv *s = c->srv;
	struct rpcrdma__drc_ent *e = c->drc;
	struct parked *q;

	if (!e)
		return;
	c->drc = NULL;
	while ((q = unpark(s, e, NULL)) != NULL) {
		if (a)
			replay(q->c, q->er, a);
		else
			enqueue(q->c, q->er, true);
		free(q);
	}
	if (a)
		rpcrdma__drc_keep(s->drc, e, a, rpcrdma__rpc_now());
	else
		rpcrdma__drc_forget(s->drc, e);
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
	conn_log(prim(c), level, "answered SYSTEM_ERR: the results could not be encoded, to",
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
		drc_finish(c, NULL);
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
	x = ok ? own_reply(c->srv, &made, items_to_lend(c->srv, er, &enc), buf, bcap) : NULL;
	if (!x || x->flat != buf)
		rpcrdma__bufcache_put(&c->srv->cache, buf, bcap);
	/* before the engine has it: lent items are the dispatcher's until then */
	drc_finish(c, x ? &x->a : NULL);
	if (!x) {
		rpcrdma_eng_req_drop(c->eng, er);
		return FALSE;
	}
	return give_reply(c, er, x) && !failed;
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

static struct sconn *conn_of(SVCXPRT *xprt)
{
	return (struct sconn *)xprt->xp_p1;
}

/* A request the dispatcher took and did not answer gives its credit back. */
static void drop_cur(struct sconn *c)
{
	drc_finish(c, NULL);
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
static bool needs_prim(const struct rpcrdma_eng_req *er)
{
	uint32_t len;
	const uint8_t *call = rpcrdma_eng_req_call(er, &len);

	return !call || len < 28 || rpcrdma__get32(call + 24) == RPCSEC_GSS;
}

static struct rpcrdma_eng_req *pop_ready(struct sconn *lane)
{
	struct sconn *c = prim(lane);
	struct ready *q = c->head;
	struct rpcrdma_eng_req *er;

	if (q && lane != c && needs_prim(q->er)) {
		drain_fd(lane->xprt.xp_fd);
		lane->rung = 0;
		return NULL;
	}
	if (!q) {
		drain_fd(lane->xprt.xp_fd);
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

static void drop_all(struct sconn *c)
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
	if (!drc_admit(c, er, msg, call, len)) {
		c->cur = NULL;
		return FALSE;
	}
	return TRUE;
}

static bool_t conn_recv(SVCXPRT *xprt, struct rpc_msg *msg)
{
	struct sconn *c = conn_of(xprt);
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
	struct sconn *c = conn_of(xprt);
	enum xprt_stat st;

	pthread_mutex_lock(&c->srv->lock);
	if (c->owned && !pthread_equal(c->owner, pthread_self())) {
		pthread_mutex_unlock(&c->srv->lock);
		return XPRT_IDLE;      /* another thread is dispatching it */
	}
	drop_cur(c);
	c->owned = 0;
	/* only the connection itself dies, once none of its lanes is dispatching */
	if (c->dead && !c->head && !c->prim && !lanes_busy(c))
		st = XPRT_DIED;
	else if (c->prim && c->prim->head && needs_prim(c->prim->head->er))
		st = XPRT_IDLE;        /* a lane leaves a GSS call to its connection (no spin) */
	else
		st = prim(c)->head ? XPRT_MOREREQS : XPRT_IDLE;
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
	struct sconn *p = prim(c);
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
	struct sconn *c = conn_of(xprt);
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
	struct sconn *c = conn_of(xprt);
	bool_t ok;

	pthread_mutex_lock(&c->srv->lock);
	ok = send_reply(c, msg);
	pthread_mutex_unlock(&c->srv->lock);
	return ok;
}

static bool_t conn_freeargs(SVCXPRT *xprt, xdrproc_t xargs, void *args)
{
	struct sconn *c = conn_of(xprt), *p = prim(c);
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
static void srv_wake(struct srv *s);
static int watch_fd(struct srv *s, int fd);

static void conn_destroy(SVCXPRT *xprt)
{
	struct sconn *c = conn_of(xprt);
	struct srv *s = c->srv;   /* c may be freed as soon as the lock is released */

	xprt_unregister(xprt);
	pthread_mutex_lock(&s->lock);
	drop_all(c);
	c->destroyed = 1;
	pthread_mutex_unlock(&s->lock);
	srv_wake(s);   /* it frees the connection now, not at its next wake-up */
}

static bool_t conn_control(SVCXPRT *xprt, const u_int req, void *info)
{
	(void)xprt;
	(void)req;
	(void)info;
	return FALSE;
}

static const struct xp_ops conn_ops = {
	.xp_recv = conn_recv,
	.xp_stat = conn_stat,
	.xp_getargs = conn_getargs,
	.xp_reply = conn_reply,
	.xp_freeargs = conn_freeargs,
	.xp_destroy = conn_destroy,
};

static const struct xp_ops2 conn_ops2 = { .xp_control = conn_control };

/* ---- accepting (progress thread, srv lock held) ---- */

static int conn_engine(struct srv *s, struct sconn *c, struct rpcrdma_connreq *req)
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
static void conn_addresses(struct sconn *c)
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

static int conn_fd(struct srv *s)
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
	drain_fd(fd);
	if (s->nspare == s->spare_cap && spares_grow(s)) {
		close(fd);   /* out of memory: closed at once, as before the pool could grow */
		return;
	}
	s->spare_round[s->nspare] = s->svc_rounds;
	s->spare_fds[s->nspare++] = fd;
	if (s->nspare > SPARES_KEPT)
		signal_fd(s->xprt.xp_fd);
}

/* The oldest spares beyond SPARES_KEPT that svc_run() can no longer poll are closed;
 * while some are too recent, svc_run() is rung for another round. srv lock held. */
static void spares_trim(struct srv *s)
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
		signal_fd(s->xprt.xp_fd);
}

/* Every field before inline_send is a uint64_t counter: they are summed as an array. */
_Static_assert(offsetof(struct rpcrdma_eng_stats, inline_send) ==
	       offsetof(struct rpcrdma_eng_stats, errors) + sizeof(uint64_t) * RPCRDMA_EC_COUNT,
	       "rpcrdma_eng_stats: only uint64_t counters before inline_send");

static void stats_add(struct rpcrdma_eng_stats *t, const struct rpcrdma_eng_stats *a)
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
}

static void conn_log(struct sconn *c, int level, const char *what, const char *why)
{
	char peer[96];

	if (rpcrdma_log_level() < level || !c->eng)
		return;
	rpcrdma__addr_text(&c->peer, c->xprt.xp_rtaddr.len, peer, sizeof(peer));
	rpcrdma__log_conn(level, what, peer, why, c->srv->opts.provider, c->eng);
}

static void conn_free(struct sconn *c)
{
	struct rpcrdma_eng_stats st;
	uint32_t i;

	if (c->xprt.xp_ops)
		conn_log(c, RPCRDMA_LOG_INFO, "closed the connection from", NULL);
	if (c->watched)
		epoll_ctl(c->srv->epfd, EPOLL_CTL_DEL, rpcrdma_ep_fd(c->ep), NULL);
	if (c->eng) {
		rpcrdma_eng_stats(c->eng, &st);
		stats_add(&c->srv->closed, &st);
	}
	for (i = 0; i < c->nlanes; i++)
		drop_cur(c->lanes[i]);
	if (c->eng) {
		struct parked *q;

		/* with the calls a lane's unanswered original gave back to the queue */
		drop_all(c);
		while ((q = unpark(c->srv, NULL, c)) != NULL) {
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

/* While connections keep the progress thread busy, the listener is polled once a
 * millisecond, not every round: over tcp each poll is a system call (libfabric runs its
 * event queue's progress), two per call at depth 1 on a busy host. Before the thread
 * sleeps, arming the listener finds a pending connection (can_sleep), and the next
 * round polls it whatever the time. */
#define LISTENER_LOOK_MS 1

static bool listener_look_now(struct srv *s, uint64_t now_ms)
{
	if (!s->listener_due && now_ms - s->listener_looked < LISTENER_LOOK_MS)
		return false;
	s->listener_due = false;
	s->listener_looked = now_ms;
	return true;
}

static void conn_activate(struct srv *s, struct sconn *c);

static int accept_one(struct srv *s, uint64_t now_ms)
{
	struct rpcrdma_connreq *req;
	struct sconn *c;
	int rc;

	if (!listener_look_now(s, now_ms) || rpcrdma_listener_get(s->l, 0, &req))
		return 0;
	s->listener_due = true;   /* another may be waiting behind it */
	/* each pending one holds a queue pair, buffers and a credit of the pool: a flood
	 * of requests never confirmed is refused beyond MAX_PENDING, not paid for */
	if (s->npending >= MAX_PENDING) {
		rpcrdma_log(RPCRDMA_LOG_WARN, "refused a connection over %s: %u accepted ones "
			    "still await their clients' confirmation", s->opts.provider,
			    s->npending);
		rpcrdma_reject(req, NULL, 0);
		return 1;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		rpcrdma_reject(req, NULL, 0);
		return 1;
	}
	c->srv = s;
	c->xprt.xp_fd = conn_fd(s);
	rc = c->xprt.xp_fd < 0 ? -RPCRDMA_ERR_NOMEM : conn_engine(s, c, req);
	if (rc == -RPCRDMA_ERR_AGAIN) {   /* the client has not confirmed it yet */
		c->accept_until = now_ms + ACCEPT_MS;
		/* its descriptor (verbs: the CM's events with the queue's) wakes this thread
		 * when the confirmation comes */
		c->watched = watch_fd(s, rpcrdma_ep_fd(c->ep));
		c->next = s->pending;
		s->pending = c;
		s->npending++;
		return 1;
	}
	if (rc) {
		/* the budget's refusal says so itself */
		if (rc != -RPCRDMA_ERR_NOSPC)
			rpcrdma_log(RPCRDMA_LOG_WARN, "could not accept a connection over %s: %s%s",
				    s->opts.provider, rpcrdma_strerror(rc),
				    c->xprt.xp_fd < 0 ? " (no descriptor for it)" : "");
		conn_free(c);
		return 1;
	}
	conn_activate(s, c);
	return 1;
}

/* A connection whose handshake is complete joins the listener's: libtirpc and the
 * progress thread see it from now on. */
static void conn_activate(struct srv *s, struct sconn *c)
{
	c->xprt.xp_ops = &conn_ops;
	c->xprt.xp_ops2 = &conn_ops2;
	c->xprt.xp_p1 = c;
	c->xprt.xp_p3 = &c->ext;
	c->xprt.xp_port = s->xprt.xp_port;
	c->xprt.xp_tp = "rdma";
	conn_addresses(c);
	conn_log(c, RPCRDMA_LOG_INFO, "accepted a connection from", NULL);
	c->next = s->conns;
	s->conns = c;
	if (!c->watched)   /* a pending one is watched already */
		c->watched = watch_fd(s, rpcrdma_ep_fd(c->ep));
	xprt_register(&c->xprt);
	if (svc_run_sees(s))
		signal_fd(s->xprt.xp_fd);   /* svc_run() polls a copy of the fd set: wake it */
}

/* Connections accepted whose clients have not confirmed them (verbs: the RDMA CM's RTU)
 * are looked at each round, and when their descriptor wakes this thread, rather than
 * waited for: a client that never confirms, or a flood of them, would otherwise hold
 * this thread, and every connection with it, for ACCEPT_MS each. Given up after
 * ACCEPT_MS. Returns how many moved on. */
#define PENDING_LOOK_MS 10

static int finish_accepts(struct srv *s, uint64_t now_ms)
{
	struct sconn **pp = &s->pending, *c;
	uint64_t due;
	int moved = 0, rc;

	while ((c = *pp) != NULL) {
		rc = rpcrdma_accept_finish(c->ep, 0);
		if (rc == -RPCRDMA_ERR_AGAIN && now_ms < c->accept_until) {
			/* woken by its descriptor; looked at now and then where it has none */
			due = c->watched ? c->accept_until : now_ms + PENDING_LOOK_MS;
			if (due < s->next_due)
				s->next_due = due;
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		s->npending--;
		moved++;
		if (!rc) {
			conn_activate(s, c);
			continue;
		}
		rpcrdma_log(rc == -RPCRDMA_ERR_AGAIN ? RPCRDMA_LOG_WARN : RPCRDMA_LOG_INFO,
			    "gave up a connection over %s its client did not complete: %s",
			    s->opts.provider, rc == -RPCRDMA_ERR_AGAIN ?
			    "no confirmation within 5 s" : rpcrdma_strerror(rc));
		conn_free(c);
	}
	return moved;
}

/* ---- the progress thread ----
 * It polls while there is work, and for IDLE_SPINS empty rounds after (a reply often
 * follows within microseconds) unless its core is contended (rpcrdma__spin_more: then
 * those rounds would delay whoever is to send it work); then it sleeps in epoll on every
 * connection's descriptor, the listener's and its wake-up eventfd, until one is ready or
 * the next engine deadline, at most SLEEP_MAX_MS (the tcp listener reaps lost sockets
 * about once a second). Yielding instead would hand the core to any busy program for a
 * whole scheduler slice. Over shm the descriptors are the connections' doorbells and the
 * listener's (docs/PROVIDERS.md); without them (the mock) it keeps the old back-off. */
#define IDLE_SPINS 64
/* ... and at least this long after the last work: over shm a round is ~0.1 us, 64 of them
 * end before a client at depth 1 sends its next call, and each call then paid a sleep
 * and a doorbell ring (NULL over shm ~12% slower). */
#define IDLE_SPIN_US 100
/* Busy polling (opts.busy_poll_us) extends that time, and within it the thread polls
 * whatever the pressure on the host says (rpcrdma__busy_poll_on). */
#define PREPARE_QUIET_MS 1   /* quiet this long: the listener prepares the next accept */
#define SLEEP_MAX_MS 1000

static void srv_wake(struct srv *s)
{
	signal_fd(s->wake_fd);
}

/* 1 when fd is in the progress thread's epoll set. */
static int watch_fd(struct srv *s, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return s->epfd >= 0 && fd >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

enum { SLEEP_NO, SLEEP_YES, SLEEP_PENDING };

/* SLEEP_YES when every source of work would wake the thread: the listener and each live
 * connection have a descriptor, and nothing is already pending on them; SLEEP_PENDING
 * when arming found something pending (the next round takes it, at once: backing off
 * would hand a contended core away first); SLEEP_NO when some source has no descriptor.
 * Under s->lock. */
static int can_sleep(struct srv *s)
{
	struct sconn *c;
	int rc;

	if (s->epfd < 0)
		return SLEEP_NO;
	rc = rpcrdma_listener_arm(s->l);
	if (rc) {
		s->listener_due = true;
		return rc == -RPCRDMA_ERR_AGAIN ? SLEEP_PENDING : SLEEP_NO;
	}
	for (c = s->conns; c; c = c->next) {
		if (c->destroyed || c->dead)
			continue;   /* nothing more comes from it; svc_run destroys it (wake) */
		if (!c->watched)
			return SLEEP_NO;
		rc = rpcrdma_ep_arm(c->ep);
		if (rc)
			return rc == -RPCRDMA_ERR_AGAIN ? SLEEP_PENDING : SLEEP_NO;
	}
	return SLEEP_YES;
}

#define SLEEP_EVENTS 16

/* Each connection armed for the sleep hears whether its descriptor was among those that
 * ended it (rpcrdma_ep_slept): one that was not need not look at its event queue (over
 * tcp a system call: with 100 idle connections, 99 of them after each wake-up). When
 * the events filled the array, some may be missing: no one hears. */
static void tell_slept(struct srv *s, const struct epoll_event *ev, int n)
{
	struct sconn *c;
	int i, fd, fired;

	if (n < 0 || n >= SLEEP_EVENTS)
		return;
	pthread_mutex_lock(&s->lock);
	for (c = s->conns; c; c = c->next) {
		if (c->destroyed || c->dead || !c->watched)
			continue;
		fd = rpcrdma_ep_fd(c->ep);
		for (i = 0, fired = 0; i < n && !fired; i++)
			fired = ev[i].data.fd == fd;
		rpcrdma_ep_slept(c->ep, fired);
	}
	pthread_mutex_unlock(&s->lock);
}

static void sleep_until(struct srv *s, uint64_t due)
{
	struct epoll_event ev[SLEEP_EVENTS];
	uint64_t now = rpcrdma__rpc_now();
	int ms = SLEEP_MAX_MS, n, i;

	if (due <= now)
		return;
	if (due - now < (uint64_t)ms)
		ms = (int)(due - now);
	n = epoll_wait(s->epfd, ev, SLEEP_EVENTS, ms);
	for (i = 0; i < n; i++)
		if (ev[i].data.fd == s->wake_fd)
			drain_fd(s->wake_fd);
	tell_slept(s, ev, n);
}

/* Returns the completions that were news (rpcrdma__cqe_is_news); *polled counts all. */
static int poll_conn(struct sconn *c, uint64_t now, int *polled)
{
	struct rpcrdma_cqe cq[32];
	uint64_t due;
	int i, n, news = 0;

	if (c->destroyed || c->dead)
		return 0;
	n = rpcrdma_ep_poll(c->ep, cq, 32);
	*polled += n;
	for (i = 0; i < n; i++) {
		news += rpcrdma__cqe_is_news(&cq[i]);
		rpcrdma_eng_on_cqe(c->eng, &cq[i], now);
	}
	due = rpcrdma_eng_tick(c->eng, now);
	if (due < c->srv->next_due)
		c->srv->next_due = due;
	return news;
}

/* Frees the connections libtirpc has destroyed; returns how many. When the last one
 * goes, the reply buffers kept for reuse go too: an idle server holds no bulk memory. */
static int reap(struct srv *s)
{
	struct sconn **pp = &s->conns, *c;
	int n = 0;

	while ((c = *pp) != NULL) {
		if (c->destroyed && !c->busy && !c->bc_refs && !lanes_busy(c)) {
			*pp = c->next;
			conn_free(c);
			n++;
		} else {
			pp = &c->next;
		}
	}
	if (n && !s->conns)
		srv_trim(s);
	return n;
}

/* Inline dispatch: the progress thread runs libtirpc's dispatch for every connection with
 * requests ready (or dead, to be destroyed), one connection at a time. */
static int dispatch_ready(struct srv *s)
{
	struct sconn *c;
	int n = 0;

	for (;;) {
		pthread_mutex_lock(&s->lock);
		for (c = s->conns; c; c = c->next)
			if (!c->busy && !c->destroyed && (c->head || c->dead))
				break;
		if (c)
			c->busy = 1;
		pthread_mutex_unlock(&s->lock);
		if (!c)
			return n;
		svc_getreq_common(c->xprt.xp_fd);
		pthread_mutex_lock(&s->lock);
		c->busy = 0;
		pthread_mutex_unlock(&s->lock);
		n++;
	}
}

/* Once the server has been quiet a while (not between a client's connect and its first
 * call), the listener builds what its next accept needs. Called with the lock held. */
static void prepare_accept(struct srv *s, uint64_t *quiet_since)
{
	uint64_t now = rpcrdma__rpc_now();

	if (!*quiet_since)
		*quiet_since = now;
	else if (now - *quiet_since >= PREPARE_QUIET_MS)
		rpcrdma_listener_prepare(s->l);
}

static void *progress(void *arg)
{
	struct srv *s = arg;
	unsigned idle = 0, backoff = 0;   /* empty rounds; back-off rounds (no descriptor) */
	uint64_t quiet_since = 0;         /* of the current empty rounds */
	uint64_t work_us = 0;             /* the last round that found work */
	bool trim = false;
	bool pending_again = false;       /* an arm found work pending, no round found any since */

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		uint64_t now_us = rpcrdma__rpc_now_us();   /* one clock read a round */
		struct sconn *c;
		int work, ready = 0, sleep = SLEEP_NO, polled = 0;
		bool spin, mine, busy;

		/* the provider locks its shared queue itself: a dispatcher sending a reply does
		 * not wait behind this read (a system call over tcp) for the srv lock */
		(void)rpcrdma_listener_drain(s->l);   /* once a round, not once per connection */
		pthread_mutex_lock(&s->lock);
		s->next_due = UINT64_MAX;
		work = accept_one(s, now_us / 1000u);
		work += s->pending ? finish_accepts(s, now_us / 1000u) : 0;
		for (c = s->conns; c; c = c->next) {
			work += poll_conn(c, now_us / 1000u, &polled);
			ready |= c->head != NULL || (c->dead && !c->destroyed);
		}
		trim |= reap(s) > 0;
		if (polled) {   /* Sends done only: spin on as after work, where spinning is free */
			idle = 0;
			work_us = now_us;
		}
		/* requests queued for svc_run() or the workers are theirs: they were told when
		 * each was queued (enqueue, on_fatal, wake_workers), so a round that found
		 * nothing new is empty for this thread, which would otherwise poll (a system
		 * call a round over tcp) for as long as a dispatcher takes, on the core it needs */
		mine = ready && s->opts.dispatch_inline;
		/* an empty round: poll again a while, unless this core is contended and the
		 * thread can sleep on descriptors (no epoll set where the listener has none:
		 * see the client's drive()) */
		busy = s->opts.busy_poll_us && now_us - work_us < s->opts.busy_poll_us;
		spin = !work && !mine &&
		       (busy ? rpcrdma__busy_poll_on(idle + 1)
			     : (idle < IDLE_SPINS || now_us - work_us < IDLE_SPIN_US) &&
				       (s->epfd < 0 || rpcrdma__spin_more(idle + 1)));
		if (!work && !mine && !spin) {
			rpcrdma__drc_expire(s->drc, now_us / 1000u);
			prepare_accept(s, &quiet_since);
			sleep = can_sleep(s);
		}
		pthread_mutex_unlock(&s->lock);
		if (trim && rpcrdma__rpc_give_back_memory())
			trim = false;
		if (s->opts.dispatch_inline && ready)   /* a look costs two lock round trips */
			work += dispatch_ready(s);
		else if (ready)
			wake_workers();
		if (work || mine) {
			idle = backoff = 0;
			quiet_since = 0;
			pending_again = false;
			work_us = rpcrdma__rpc_now_us();
		} else if (sleep == SLEEP_YES && !trim) {
			sleep_until(s, s->next_due);
			idle = backoff = 0;
			pending_again = false;
		} else if (sleep == SLEEP_PENDING && !pending_again) {
			/* once: over shm an arm also fails while our RDMA operations wait for
			 * the peer's polling, and then backing off is what lets the peer run */
			pending_again = true;
			idle = backoff = 0;
		} else {
			idle++;
			/* without descriptors the spin ends after IDLE_SPINS rounds, in back-off */
			if (!spin || (s->epfd < 0 && idle > IDLE_SPINS && !busy))
				rpcrdma__idle_backoff(&backoff);   /* quiet time starts at 0 */
		}
	}
	return NULL;
}

/* ---- the listener's SVCXPRT ---- */

/* The listener's eventfd wakes svc_run() so that it polls a new connection, or goes round
 * for the spare descriptors to be closed (spares_trim). */
static bool_t lst_recv(SVCXPRT *xprt, struct rpc_msg *msg)
{
	struct srv *s = (struct srv *)xprt->xp_p1;

	(void)msg;
	drain_fd(xprt->xp_fd);
	pthread_mutex_lock(&s->lock);
	s->svc_rounds++;
	spares_trim(s);
	pthread_mutex_unlock(&s->lock);
	return FALSE;
}

static enum xprt_stat lst_stat(SVCXPRT *xprt)
{
	(void)xprt;
	return XPRT_IDLE;
}

static bool_t lst_args(SVCXPRT *xprt, xdrproc_t x, void *p)
{
	(void)xprt;
	(void)x;
	(void)p;
	return FALSE;
}

static bool_t lst_reply(SVCXPRT *xprt, struct rpc_msg *msg)
{
	(void)xprt;
	(void)msg;
	return FALSE;
}

static SVCXPRT *claim(struct rpcrdma__svc_src *src);
static void release(struct rpcrdma__svc_src *src, SVCXPRT *x);

static void srv_unlink(struct srv *s)
{
	rpcrdma__svc_src_remove(&s->src);
}

static void lst_destroy(SVCXPRT *xprt)
{
	struct srv *s = (struct srv *)xprt->xp_p1;
	struct sconn *c;

	srv_unlink(s);
	rpcrdma__rpcb_listener_remove(s);
	xprt_unregister(xprt);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	srv_wake(s);
	pthread_join(s->thread, NULL);
	/* a dispatcher waiting for a reply sees the stop and leaves it to the engine */
	pthread_mutex_lock(&s->lock);
	while (s->reply_waiters) {
		pthread_cond_broadcast(&s->reply_cv);
		pthread_cond_wait(&s->reply_cv, &s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	while ((c = s->conns) != NULL) {
		s->conns = c->next;
		if (!c->destroyed)
			xprt_unregister(&c->xprt);
		drop_all(c);
		conn_free(c);
	}
	while ((c = s->pending) != NULL) {
		s->pending = c->next;
		conn_free(c);
	}
	rpcrdma_listener_close(s->l);
	rpcrdma_prov_close(s->p);
	srv_trim(s);
	while (s->nspare)
		close(s->spare_fds[--s->nspare]);
	free(s->spare_fds);
	free(s->spare_round);
	rpcrdma__drc_free(s->drc);
	close(xprt->xp_fd);
	close(s->wake_fd);
	close(s->epfd);
	pthread_cond_destroy(&s->reply_cv);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static const struct xp_ops lst_ops = {
	.xp_recv = lst_recv,
	.xp_stat = lst_stat,
	.xp_getargs = lst_args,
	.xp_reply = lst_reply,
	.xp_freeargs = lst_args,
	.xp_destroy = lst_destroy,
};

/* The duplicate request cache sized by memory, as knfsd's (svc_drc.c): 160k entries on
 * a host of 24 GiB. */
static int32_t drc_default_entries(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	if (pages <= 0 || size <= 0)
		return (int32_t)rpcrdma__drc_entries_for(0);
	return (int32_t)rpcrdma__drc_entries_for((uint64_t)pages * (uint64_t)size);
}

/* Its replies' bytes: knfsd's 256 a reply on average when sized by memory (so at most
 * 64 MiB of replies, with 256k entries); as many as the entries hold when the program
 * chose their number (opts, as the program gave them). */
static uint64_t drc_bytes(const struct rpcrdma_svc_opts *opts, int32_t entries)
{
	if (!opts || !opts->drc_entries)
		return (uint64_t)entries * DRC_AVG_REPLY;
	return UINT64_MAX;
}

static void svc_defaults(struct rpcrdma_svc_opts *o, const struct rpcrdma_svc_opts *in)
{
	memset(o, 0, sizeof(*o));
	if (in)
		*o = *in;
	if (!o->provider)
		o->provider = rpcrdma__env_provider();
	if (!o->inline_size)
		o->inline_size = DEF_INLINE;
	if (!o->max_credits)
		o->max_credits = DEF_CREDITS;
	if (!o->recv_budget)
		o->recv_budget = DEF_RECV_BUDGET;
	if (!o->drc_entries)
		o->drc_entries = drc_default_entries();
	if (!o->drc_reply_max)
		o->drc_reply_max = DEF_DRC_REPLY_MAX;
	o->busy_poll_us = o->busy_poll_us ? rpcrdma__busy_poll_cap(o->busy_poll_us)
					  : rpcrdma__env_busy_poll_us();
}

/* The port asked for: the options', else RPCRDMA_PORT from the environment (0: any),
 * else the NFS/RDMA port. Returns what rpcrdma_listen() takes (0: any), or -1 for a
 * number that is no port. */
static int listen_port(const struct rpcrdma_svc_opts *opts)
{
	uint32_t env;

	if (opts && opts->port == RPCRDMA_PORT_ANY)
		return 0;
	if (opts && opts->port)
		return opts->port > 65535 ? -1 : (int)opts->port;
	if (rpcrdma__env_port(&env))
		return (uint16_t)env;
	return RPCRDMA_PORT;
}

/* With no host, every address of both families: "::" takes IPv4 too (v4-mapped), where
 * the host has IPv6; else all IPv4 addresses. Sets *dual for the first. */
static int listen_any(struct srv *s, uint16_t port, int *dual)
{
	*dual = 0;
	if (s->opts.host)
		return rpcrdma_listen(s->p, s->opts.host, port, &s->l);
	if (rpcrdma_prov_caps(s->p)->ep_type == RPCRDMA_EP_MSG &&
	    rpcrdma_listen(s->p, "::", port, &s->l) == 0) {
		*dual = 1;
		return 0;
	}
	return rpcrdma_listen(s->p, NULL, port, &s->l);
}

/* The listener's address, netid (RFC 5666 §12) and rpcbind registration. A provider
 * without network addresses (shm) is registered under "rdma" with the unspecified
 * address, so that svc_register(..., IPPROTO_TCP) never reaches libtirpc's TCP
 * registration for it (which fails without rpcbind, and would say "tcp"). */
static void listener_addresses(struct srv *s, int dual)
{
	size_t len = sizeof(s->laddr);

	if (rpcrdma_listener_addr(s->l, &s->laddr, &len)) {
		rpcrdma__rpcb_listener_add(s, s->xprt.xp_port, NULL, 0, 0);
		return;
	}
	s->xprt.xp_ltaddr.buf = &s->laddr;
	s->xprt.xp_ltaddr.len = s->xprt.xp_ltaddr.maxlen = (unsigned)len;
	s->xprt.xp_netid = s->laddr.ss_family == AF_INET6 ? "rdma6" : "rdma";
	rpcrdma__rpcb_listener_add(s, s->xprt.xp_port, &s->laddr, len, dual);
}

SVCXPRT *svc_rdma_create(const struct rpcrdma_svc_opts *opts)
{
	struct srv *s = calloc(1, sizeof(*s));
	char err[256];
	int dual, port, rc;

	rpcrdma__create_err(NULL);
	if (!s) {
		rpcrdma__create_err("out of memory");
		return NULL;
	}
	svc_defaults(&s->opts, opts);
	rpcrdma_credit_pool_init(&s->pool, s->opts.recv_budget);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->reply_cv, NULL);
	port = listen_port(opts);
	if (port < 0) {
		rpcrdma__create_err("port %u is not a port (0..65535, or RPCRDMA_PORT_ANY)",
				    opts->port);
		goto out_free;
	}
	rc = rpcrdma_prov_open(s->opts.provider, &s->p, err, sizeof(err));
	if (rc) {
		rpcrdma__create_err("provider '%s': %s", s->opts.provider,
				    err[0] ? err : rpcrdma_strerror(rc));
		goto out_free;
	}
	rc = listen_any(s, (uint16_t)port, &dual);
	if (rc) {
		rpcrdma__create_err_conn(rc, 1, s->opts.provider, s->opts.host, (unsigned)port, 0);
		goto out_prov;
	}
	s->xprt.xp_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->xprt.xp_fd < 0) {
		rpcrdma__create_err("eventfd: %s", strerror(errno));
		goto out_listen;
	}
	s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->wake_fd < 0 || s->epfd < 0 || !watch_fd(s, s->wake_fd) ||
	    !watch_fd(s, rpcrdma_listener_fd(s->l))) {
		/* no sleeping then: the thread polls with back-off */
		if (s->epfd >= 0)
			close(s->epfd);
		s->epfd = -1;
	}
	if (s->opts.drc_entries > 0 &&
	    !(s->drc = rpcrdma__drc_new((uint32_t)s->opts.drc_entries, s->opts.drc_reply_max,
					drc_bytes(opts, s->opts.drc_entries)))) {
		rpcrdma__create_err("out of memory");
		goto out_fd;
	}
	s->lend_min = lend_min(rpcrdma_prov_caps(s->p));
	s->xprt.xp_port = rpcrdma_listener_port(s->l);
	s->xprt.xp_ops = &lst_ops;
	s->xprt.xp_ops2 = &conn_ops2;
	s->xprt.xp_p1 = s;
	s->xprt.xp_p3 = &s->ext;
	s->xprt.xp_netid = "rdma";
	s->xprt.xp_tp = "rdma";
	listener_addresses(s, dual);
	if (pthread_create(&s->thread, NULL, progress, s)) {
		rpcrdma__create_err("cannot start the progress thread");
		goto out_fd;
	}
	xprt_register(&s->xprt);
	rpcrdma_log(RPCRDMA_LOG_INFO, "listening on %s port %u over %s (netid %s)",
		    s->opts.host ? s->opts.host : "every address", s->xprt.xp_port, s->opts.provider,
		    s->xprt.xp_netid);
	s->src.claim = claim;
	s->src.release = release;
	rpcrdma__svc_src_add(&s->src);
	return &s->xprt;
out_fd:
	rpcrdma__drc_free(s->drc);
	close(s->xprt.xp_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->epfd >= 0)
		close(s->epfd);
out_listen:
	rpcrdma_listener_close(s->l);
out_prov:
	rpcrdma_prov_close(s->p);
out_free:
	pthread_cond_destroy(&s->reply_cv);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}

int rpcrdma_svc_stats(SVCXPRT *listener, rpcrdma_svc_stats_fn fn, void *ctx)
{
	struct srv *s;
	struct sconn *c;
	struct rpcrdma_eng_stats st;
	int n = 0;

	if (!listener || listener->xp_ops != &lst_ops)
		return -RPCRDMA_ERR_INVAL;
	s = (struct srv *)listener->xp_p1;
	pthread_mutex_lock(&s->lock);
	for (c = s->conns; c; c = c->next) {
		if (c->destroyed)
			continue;
		rpcrdma_eng_stats(c->eng, &st);
		if (fn)
			fn(ctx, c->xprt.xp_rtaddr.len ? (const struct sockaddr *)&c->peer : NULL, &st);
		n++;
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

int rpcrdma_svc_drc_stats(SVCXPRT *listener, struct rpcrdma_svc_drc_stats *out)
{
	struct srv *s;

	if (listener && listener->xp_ops != &lst_ops)
		return rpcrdma__tcp_drc_stats(listener, out);
	if (!listener || !out)
		return -RPCRDMA_ERR_INVAL;
	s = (struct srv *)listener->xp_p1;
	if (!s->drc)
		return -RPCRDMA_ERR_INVAL;
	pthread_mutex_lock(&s->lock);
	rpcrdma__drc_stats(s->drc, out);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int rpcrdma_svc_totals(SVCXPRT *listener, struct rpcrdma_eng_stats *out)
{
	struct rpcrdma_eng_stats st;
	struct sconn *c;
	struct srv *s;

	if (!listener || listener->xp_ops != &lst_ops || !out)
		return -RPCRDMA_ERR_INVAL;
	s = (struct srv *)listener->xp_p1;
	pthread_mutex_lock(&s->lock);
	*out = s->closed;
	for (c = s->conns; c; c = c->next) {
		rpcrdma_eng_stats(c->eng, &st);
		stats_add(out, &st);
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int rpcrdma_svc_mem_add(SVCXPRT *listener, void *addr, size_t len)
{
	if (!listener || listener->xp_ops != &lst_ops)
		return -RPCRDMA_ERR_INVAL;
	return rpcrdma_mem_add(((struct srv *)listener->xp_p1)->p, addr, len);
}

int rpcrdma_svc_mem_remove(SVCXPRT *listener, void *addr)
{
	if (!listener || listener->xp_ops != &lst_ops)
		return -RPCRDMA_ERR_INVAL;
	return rpcrdma_mem_remove(((struct srv *)listener->xp_p1)->p, addr);
}

uint32_t rpcrdma_svc_getxid(SVCXPRT *xprt)
{
	struct sconn *c;
	uint32_t xid = 0;

	if (xprt && xprt->xp_ops != &conn_ops)
		return rpcrdma__tcp_getxid(xprt);
	if (!xprt)
		return 0;
	c = conn_of(xprt);
	pthread_mutex_lock(&c->srv->lock);
	if (c->cur)
		xid = rpcrdma_eng_req_xid(c->cur);
	pthread_mutex_unlock(&c->srv->lock);
	return xid;
}

uint16_t svc_rdma_port(SVCXPRT *listener)
{
	return listener ? listener->xp_port : 0;
}

/* ---- rpcrdma_svc_run ---- */

/* A lane of c that no worker holds, made if c has fewer than conn_parallel - 1; NULL if
 * none. Under the srv lock. */
static struct sconn *free_lane(struct srv *s, struct sconn *c)
{
	struct sconn *l, **grown;
	uint32_t i;

	for (i = 0; i < c->nlanes; i++)
		if (!c->lanes[i]->busy)
			return c->lanes[i];
	if (c->nlanes + 1 >= s->opts.conn_parallel)
		return NULL;
	grown = realloc(c->lanes, sizeof(*grown) * (c->nlanes + 1));
	if (!grown)
		return NULL;
	c->lanes = grown;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->xprt = c->xprt;   /* its operations, port and addresses, set when accepted */
	l->srv = s;
	l->ep = c->ep;
	l->eng = c->eng;
	l->prim = c;
	l->xprt.xp_p1 = l;
	l->xprt.xp_p3 = &l->ext;
	l->xprt.xp_fd = conn_fd(s);
	if (l->xprt.xp_fd < 0) {
		free(l);
		return NULL;
	}
	xprt_register(&l->xprt);
	c->lanes[c->nlanes++] = l;
	return l;
}

/* Something to dispatch that no worker holds, marked busy: a connection with requests
 * ready (or dead, to be destroyed once no lane of it is busy), or a lane of a connection
 * whose requests are already being dispatched (svc_work.c). */
static SVCXPRT *claim(struct rpcrdma__svc_src *src)
{
	struct srv *s = (struct srv *)((char *)src - offsetof(struct srv, src));
	struct sconn *found = NULL, *c;

	pthread_mutex_lock(&s->lock);
	for (c = s->conns; c && !found; c = c->next) {
		if (c->destroyed)
			continue;
		if (!c->busy && (c->head || (c->dead && !lanes_busy(c))))
			found = c;
		else if (c->busy && c->head && !c->dead && !needs_prim(c->head->er))
			found = free_lane(s, c);
		if (found)
			found->busy = 1;
	}
	pthread_mutex_unlock(&s->lock);
	return found ? &found->xprt : NULL;
}

static void release(struct rpcrdma__svc_src *src, SVCXPRT *x)
{
	struct sconn *c = conn_of(x);

	(void)src;
	pthread_mutex_lock(&c->srv->lock);
	c->busy = 0;
	pthread_mutex_unlock(&c->srv->lock);
}

/* ---- the backchannel (RFC 8167): calls to a connection's client ---- */

int rpcrdma__svc_conn_hold(SVCXPRT *conn)
{
	struct sconn *c;

	if (!conn || conn->xp_ops != &conn_ops)
		return -1;
	c = prim(conn_of(conn));
	pthread_mutex_lock(&c->srv->lock);
	c->bc_refs++;
	pthread_mutex_unlock(&c->srv->lock);
	return 0;
}

/* Once the lock is released c may be freed at once (the progress thread reaps a
 * destroyed connection with no references): only s is used after it. */
void rpcrdma__svc_conn_release(SVCXPRT *conn)
{
	struct sconn *c = prim(conn_of(conn));
	struct srv *s = c->srv;
	int gone;

	pthread_mutex_lock(&s->lock);
	gone = --c->bc_refs == 0 && c->destroyed;
	pthread_mutex_unlock(&s->lock);
	if (gone)
		srv_wake(s);   /* its progress thread frees it */
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
	struct sconn *c = prim(conn_of(conn));
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
		srv_wake(s);   /* a sleeping progress thread polls again */
		rc = bc_wait(s, w, deadline);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int rpcrdma_svc_conns(SVCXPRT *listener, rpcrdma_svc_conn_fn fn, void *ctx)
{
	struct sconn **held = NULL, *c;
	struct srv *s;
	int n = 0, i;

	if (!listener || listener->xp_ops != &lst_ops)
		return -RPCRDMA_ERR_INVAL;
	s = (struct srv *)listener->xp_p1;
	pthread_mutex_lock(&s->lock);
	for (c = s->conns; c; c = c->next)
		n += !c->destroyed && !c->dead;
	held = n ? calloc((size_t)n, sizeof(*held)) : NULL;
	n = 0;
	for (c = s->conns; c && held; c = c->next)
		if (!c->destroyed && !c->dead) {
			c->bc_refs++;   /* kept while fn runs unlocked */
			held[n++] = c;
		}
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < n; i++) {
		if (fn)
			fn(ctx, &held[i]->xprt);
		rpcrdma__svc_conn_release(&held[i]->xprt);
	}
	free(held);
	return n;
}
