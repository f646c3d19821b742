/* SPDX-License-Identifier: BSD-2-Clause */
/* libtirpc SVCXPRT * over RPC-over-RDMA: programs register with svc_register() and their
 * dispatch functions use svc_getargs(), svc_sendreply() and svcerr_*() as over TCP.
 *
 * One progress thread per listener accepts connections and drives every connection's
 * engine. Each connection is an SVCXPRT whose xp_fd is an eventfd, readable while it has
 * requests ready, registered with xprt_register(): svc_run() dispatches them through
 * svc_getreq_common(), or rpcrdma_svc_run() does with worker threads.
 *
 * This file is the listener and its progress thread; a connection is svc_conn.c, the
 * duplicate request cache's use svc_drc.c, the workers and lanes svc_work.c (svc_int.h
 * between them); ONC RPC over TCP is svc_tcp.c. */
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
	c->xprt.xp_fd = rpcrdma__svc_conn_fd(s);
	rc = c->xprt.xp_fd < 0 ? -RPCRDMA_ERR_NOMEM : rpcrdma__svc_conn_engine(s, c, req);
	if (rc == -RPCRDMA_ERR_AGAIN) {   /* the client has not confirmed it yet */
		c->accept_until = now_ms + ACCEPT_MS;
		/* its descriptor (verbs: the CM's events with the queue's) wakes this thread
		 * when the confirmation comes */
		c->watched = rpcrdma__svc_watch_fd(s, rpcrdma_ep_fd(c->ep));
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
		rpcrdma__svc_conn_free(c);
		return 1;
	}
	conn_activate(s, c);
	return 1;
}

/* A connection whose handshake is complete joins the listener's: libtirpc and the
 * progress thread see it from now on. */
static void conn_activate(struct srv *s, struct sconn *c)
{
	c->xprt.xp_ops = &rpcrdma__svc_conn_ops;
	c->xprt.xp_ops2 = &rpcrdma__svc_conn_ops2;
	c->xprt.xp_p1 = c;
	c->xprt.xp_p3 = &c->ext;
	c->xprt.xp_port = s->xprt.xp_port;
	c->xprt.xp_tp = "rdma";
	rpcrdma__svc_conn_addresses(c);
	rpcrdma__svc_conn_log(c, RPCRDMA_LOG_INFO, "accepted a connection from", NULL);
	c->next = s->conns;
	s->conns = c;
	if (!c->watched)   /* a pending one is watched already */
		c->watched = rpcrdma__svc_watch_fd(s, rpcrdma_ep_fd(c->ep));
	xprt_register(&c->xprt);
	if (rpcrdma__svc_run_sees(s))
		rpcrdma__svc_signal_fd(s->xprt.xp_fd);   /* svc_run() polls a copy of the fd set: wake it */
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
		rpcrdma__svc_conn_free(c);
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
 * and a doorbell rpcrdma__svc_ring (NULL over shm ~12% slower). */
#define IDLE_SPIN_US 100
/* Busy polling (opts.busy_poll_us) extends that time, and within it the thread polls
 * whatever the pressure on the host says (rpcrdma__busy_poll_on). */
#define PREPARE_QUIET_MS 1   /* quiet this long: the listener prepares the next accept */
#define SLEEP_MAX_MS 1000

void rpcrdma__svc_srv_wake(struct srv *s)
{
	rpcrdma__svc_signal_fd(s->wake_fd);
}

/* 1 when fd is in the progress thread's epoll set. */
int rpcrdma__svc_watch_fd(struct srv *s, int fd)
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
			rpcrdma__svc_drain_fd(s->wake_fd);
	tell_slept(s, ev, n);
}

/* Returns the completions that were news (rpcrdma__cqe_is_news); *polled counts all. */
int rpcrdma__svc_poll_conn(struct sconn *c, uint64_t now, int *polled)
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
		if (c->destroyed && !c->busy && !c->bc_refs && !rpcrdma__svc_lanes_busy(c)) {
			*pp = c->next;
			rpcrdma__svc_conn_free(c);
			n++;
		} else {
			pp = &c->next;
		}
	}
	if (n && !s->conns)
		rpcrdma__svc_srv_trim(s);
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
			work += rpcrdma__svc_poll_conn(c, now_us / 1000u, &polled);
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
			rpcrdma__svc_wake_workers();
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
	rpcrdma__svc_drain_fd(xprt->xp_fd);
	pthread_mutex_lock(&s->lock);
	s->svc_rounds++;
	rpcrdma__svc_spares_trim(s);
	pthread_mutex_unlock(&s->lock);
	return FALSE;
}

/* A listener's xp_ops where it has no call (RDMA's and TCP's listeners alike). */
enum xprt_stat rpcrdma__svc_lst_stat(SVCXPRT *xprt)
{
	(void)xprt;
	return XPRT_IDLE;
}

bool_t rpcrdma__svc_lst_args(SVCXPRT *xprt, xdrproc_t x, void *p)
{
	(void)xprt;
	(void)x;
	(void)p;
	return FALSE;
}

bool_t rpcrdma__svc_lst_reply(SVCXPRT *xprt, struct rpc_msg *msg)
{
	(void)xprt;
	(void)msg;
	return FALSE;
}

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
	rpcrdma__svc_srv_wake(s);
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
		rpcrdma__svc_drop_all(c);
		rpcrdma__svc_conn_free(c);
	}
	while ((c = s->pending) != NULL) {
		s->pending = c->next;
		rpcrdma__svc_conn_free(c);
	}
	rpcrdma_listener_close(s->l);
	rpcrdma_prov_close(s->p);
	rpcrdma__svc_srv_trim(s);
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
	.xp_stat = rpcrdma__svc_lst_stat,
	.xp_getargs = rpcrdma__svc_lst_args,
	.xp_reply = rpcrdma__svc_lst_reply,
	.xp_freeargs = rpcrdma__svc_lst_args,
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
	if (s->wake_fd < 0 || s->epfd < 0 || !rpcrdma__svc_watch_fd(s, s->wake_fd) ||
	    !rpcrdma__svc_watch_fd(s, rpcrdma_listener_fd(s->l))) {
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
	s->lend_min = rpcrdma__svc_lend_min(rpcrdma_prov_caps(s->p));
	s->xprt.xp_port = rpcrdma_listener_port(s->l);
	s->xprt.xp_ops = &lst_ops;
	s->xprt.xp_ops2 = &rpcrdma__svc_conn_ops2;
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
	s->src.claim = rpcrdma__svc_claim;
	s->src.release = rpcrdma__svc_release;
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
		rpcrdma__svc_stats_add(out, &st);
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

	if (xprt && xprt->xp_ops != &rpcrdma__svc_conn_ops)
		return rpcrdma__tcp_getxid(xprt);
	if (!xprt)
		return 0;
	c = rpcrdma__svc_conn_of(xprt);
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
