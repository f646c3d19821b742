/* SPDX-License-Identifier: BSD-2-Clause */
/* ONC RPC over TCP (RFC 5531 §11, record marking) served by the library's runtime:
 * svc_rdma_tcp_create().
 *
 * One progress thread per listener accepts connections and moves bytes, never blocking:
 * non-blocking sockets in an epoll set, calls reassembled from their fragments within
 * tcp_max_record, replies queued per connection and written as the socket takes them.
 * rpcrdma_svc_run()'s workers (svc_work.c) take the calls read whole and dispatch them
 * through libtirpc (svc_getreq_common()), as they do RDMA's.
 *
 * A connection is not an SVCXPRT that libtirpc knows: a call is dispatched on a "slot",
 * an SVCXPRT registered with xprt_register() that a worker binds to a connection for as
 * long as it dispatches its calls. The slots are made once for the process, while
 * descriptor numbers are low (libtirpc's table ends at the descriptor limit of its first
 * look, and svc_getreq_common() does not check that bound), so 1,000 idle connections
 * cost their sockets and a few hundred bytes each, and none of libtirpc's table. Up to
 * opts.conn_parallel slots serve one connection at once (lanes); its replies then go in
 * the order they finish.
 *
 * No client delays another: a partial record leaves its connection waiting for bytes
 * (reaped after tcp_idle_ms), a connection with tcp_reply_queue bytes of replies unread is
 * neither read nor dispatched until it reads them (dropped after tcp_stall_ms without
 * progress), and workers never write to a socket that does not take the bytes at once. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rpc_int.h"

#include <rpc/svc_mt.h>

#define DEF_MAX_RECORD ((4u << 20) + 65536u)   /* a 4 MiB payload and its call */
#define DEF_REPLY_QUEUE (4u << 20)
#define DEF_IDLE_MS 360000        /* knfsd closes idle TCP connections after 6 minutes */
#define DEF_STALL_MS 15000        /* the engine's stall_timeout_ms over RDMA */
#define MAX_READY 64u             /* calls read whole and waiting per connection: beyond,
				     the connection is not read */
#define MAX_FRAGS 1024u           /* fragments of one record */
#define RX_CHUNK 65536u           /* bytes one read() takes */
#define READS_PER_EVENT 4         /* then the next connection's turn */
#define ACCEPTS_PER_EVENT 64
#define ACCEPT_PAUSE_MS 100       /* out of descriptors: the listener rests this long */
#define SWEEP_MS 200              /* timeouts are looked at this often */
#define SLOTS 64                  /* rpcrdma_svc_run()'s most workers */
#define BACKLOG 1024
#define REPLY_SLACK (256u + 2u * MAX_AUTH_BYTES)   /* reply header and verifier */

struct tsrv;

/* A call read whole (its record, fragments joined). */
struct trec {
	struct trec *next;
	uint8_t *buf;
	uint32_t len;
};

/* A reply to send: its record mark, then the reply. */
struct tout {
	struct tout *next;
	uint32_t len, off;         /* bytes in data; bytes sent */
	uint8_t data[];
};

struct tconn {
	struct tconn *next;        /* the listener's connections */
	struct tconn *rnext;       /* the listener's list of connections with calls to give */
	struct tsrv *s;
	int fd;
	uint32_t ev;               /* the epoll events asked for now */
	struct sockaddr_storage peer;
	socklen_t peer_len;
	/* receiving (progress thread): the fragment header, then the fragment */
	uint8_t mark[4];
	uint32_t mark_got;
	uint32_t frag_left;
	bool frag_last;
	uint8_t *rec;
	uint32_t rec_len, rec_cap, nfrags;
	/* calls read whole, in order */
	struct trec *head, *tail;
	uint32_t nready;
	uint32_t running;          /* slots bound to it */
	bool listed;               /* on the listener's list of connections to give */
	bool dead;
	/* replies */
	struct tout *out_head, *out_tail;
	size_t out_bytes;
	uint64_t rx_at, tx_at;     /* last byte received; last progress of the queued replies */
};

struct tsrv {
	SVCXPRT xprt;
	SVCXPRT_EXT ext;
	struct rpcrdma__svc_src src;
	uint32_t par, max_record;
	size_t reply_queue;
	int32_t idle_ms, stall_ms;
	int lfd, epfd, wake_fd;
	bool lfd_watched;
	uint64_t accept_resume;    /* out of descriptors: when the listener is looked at again */
	pthread_t thread;
	int stop;
	pthread_mutex_t lock;
	pthread_cond_t idle_cv;    /* a slot was given back (destroy waits for the last) */
	uint32_t running;          /* slots bound to its connections */
	struct tconn *conns;
	struct tconn *rq_head, *rq_tail;
	bool dead_seen;            /* some connection is dead: reap */
	bool told;                 /* calls were listed this round: wake the workers */
	struct rpcrdma__drc *drc;
	struct sockaddr_storage laddr;
	uint8_t rx[RX_CHUNK];      /* the progress thread's reads */
};

/* An SVCXPRT a worker dispatches a connection's calls on. */
struct tslot {
	SVCXPRT xprt;
	SVCXPRT_EXT ext;
	struct tsrv *s;
	struct tconn *c;
	struct trec *next_call;    /* taken for it when it was bound */
	struct trec *cur;          /* the call being dispatched */
	XDR dec;
	uint32_t xid;
	bool replied;              /* the call was answered */
	struct rpcrdma__drc_ent *drc;
	bool busy;
};

static pthread_mutex_t g_slot_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tslot g_slots[SLOTS];
static int g_nslots;

static const struct xp_ops slot_ops;
static const struct xp_ops lst_ops;

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

static void conn_log(struct tconn *c, int level, const char *what, const char *why)
{
	char peer[96];

	if (rpcrdma_log_level() < level)
		return;
	rpcrdma__addr_text(&c->peer, c->peer_len, peer, sizeof(peer));
	rpcrdma_log(level, "TCP: %s %s%s%s", what, peer, why ? ": " : "", why ? why : "");
}

/* ---- the state of a connection (listener lock held) ---- */

static bool can_read(const struct tconn *c)
{
	return !c->dead && c->nready < MAX_READY && c->out_bytes < c->s->reply_queue;
}

static bool can_dispatch(const struct tconn *c)
{
	return !c->dead && c->head && c->running < c->s->par &&
	       c->out_bytes < c->s->reply_queue;
}

/* The epoll events follow what the connection may do now: read while it has room for
 * calls and its client reads its replies (backpressure), write while replies wait. */
static void conn_watch(struct tconn *c)
{
	uint32_t want = (can_read(c) ? EPOLLIN : 0u) | (c->out_head ? EPOLLOUT : 0u);
	struct epoll_event ev = { .events = want, .data.ptr = c };

	if (c->dead || want == c->ev)
		return;
	if (epoll_ctl(c->s->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->ev = want;
}

/* c joins the list the workers take from, when it has a call to give. */
static void mark_ready(struct tconn *c)
{
	struct tsrv *s = c->s;

	if (c->listed || !can_dispatch(c))
		return;
	c->rnext = NULL;
	if (s->rq_tail)
		s->rq_tail->rnext = c;
	else
		s->rq_head = c;
	s->rq_tail = c;
	c->listed = true;
	s->told = true;
}

static void unlist(struct tsrv *s, struct tconn *c)
{
	struct tconn **pp, *prev = NULL;

	if (!c->listed)
		return;
	for (pp = &s->rq_head; *pp; prev = *pp, pp = &(*pp)->rnext)
		if (*pp == c) {
			*pp = c->rnext;
			if (s->rq_tail == c)
				s->rq_tail = prev;
			break;
		}
	c->listed = false;
}

static void free_calls(struct tconn *c)
{
	struct trec *r;

	while ((r = c->head) != NULL) {
		c->head = r->next;
		free(r->buf);
		free(r);
	}
	c->tail = NULL;
	c->nready = 0;
}

static void free_replies(struct tconn *c)
{
	struct tout *t;

	while ((t = c->out_head) != NULL) {
		c->out_head = t->next;
		free(t);
	}
	c->out_tail = NULL;
	c->out_bytes = 0;
}

/* The connection ends: its socket closes now (no thread writes to it after, under the
 * lock); the structure goes once no slot holds it (reap). Calls running go on, and their
 * replies are kept by the cache for the client's next connection. */
static void conn_kill(struct tconn *c, int level, const char *why)
{
	if (c->dead)
		return;
	conn_log(c, level, "closed the connection from", why);
	c->dead = true;
	epoll_ctl(c->s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	free_calls(c);
	free_replies(c);
	free(c->rec);
	c->rec = NULL;
	c->s->dead_seen = true;
}

/* ---- sending (listener lock held) ---- */

/* Writes what the socket takes now. 0, or -1 when the connection failed. */
static int conn_flush(struct tconn *c, uint64_t now)
{
	struct tout *t;
	ssize_t n;

	while ((t = c->out_head) != NULL) {
		n = send(c->fd, t->data + t->off, t->len - t->off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		c->tx_at = now;
		t->off += (uint32_t)n;
		c->out_bytes -= (size_t)n;
		if (t->off < t->len)
			return 0;
		c->out_head = t->next;
		if (!c->out_head)
			c->out_tail = NULL;
		free(t);
	}
	return 0;
}

/* A reply joins c's queue and goes as far as the socket takes it at once. */
static void conn_send(struct tconn *c, struct tout *t)
{
	uint64_t now = rpcrdma__rpc_now();

	if (c->dead) {
		free(t);
		return;
	}
	t->next = NULL;
	t->off = 0;
	if (!c->out_head)
		c->tx_at = now;   /* the stall clock starts with the queue */
	if (c->out_tail)
		c->out_tail->next = t;
	else
		c->out_head = t;
	c->out_tail = t;
	c->out_bytes += t->len;
	if (c->out_head == t && conn_flush(c, now)) {
		conn_kill(c, RPCRDMA_LOG_INFO, "its socket failed");
		signal_fd(c->s->wake_fd);   /* the progress thread reaps it */
		return;
	}
	conn_watch(c);
}

/* A reply record: mark (one last fragment) and len bytes of reply from xdr. */
static struct tout *tout_new(uint32_t cap)
{
	struct tout *t = malloc(sizeof(*t) + 4u + cap);

	if (t)
		t->len = 4;
	return t;
}

static void tout_mark(struct tout *t, uint32_t len)
{
	uint32_t m = 0x80000000u | len;

	t->data[0] = (uint8_t)(m >> 24);
	t->data[1] = (uint8_t)(m >> 16);
	t->data[2] = (uint8_t)(m >> 8);
	t->data[3] = (uint8_t)m;
	t->len = 4 + len;
}

/* ---- receiving (progress thread, listener lock held) ---- */

static int rec_grow(struct tconn *c, uint32_t need)
{
	uint32_t cap = c->rec_cap ? c->rec_cap : 1024;
	uint8_t *n;

	while (cap < need)
		cap = cap > UINT32_MAX / 2 ? need : cap * 2;
	if (cap > c->s->max_record)
		cap = c->s->max_record;   /* need is within it: the header was checked */
	n = realloc(c->rec, cap);
	if (!n)
		return -1;
	c->rec = n;
	c->rec_cap = cap;
	return 0;
}

/* The record is whole: it joins the calls waiting for a worker. */
static int rec_done(struct tconn *c)
{
	struct trec *r = malloc(sizeof(*r));

	if (!r)
		return -RPCRDMA_ERR_NOMEM;
	r->buf = c->rec;
	r->len = c->rec_len;
	r->next = NULL;
	c->rec = NULL;
	c->rec_len = c->rec_cap = c->nfrags = 0;
	if (c->tail)
		c->tail->next = r;
	else
		c->head = r;
	c->tail = r;
	c->nready++;
	mark_ready(c);
	return 0;
}

/* A fragment header is whole: its length is checked against what the record may still
 * take (never trust the wire). */
static int mark_done(struct tconn *c)
{
	uint32_t m = (uint32_t)c->mark[0] << 24 | (uint32_t)c->mark[1] << 16 |
		     (uint32_t)c->mark[2] << 8 | c->mark[3];
	uint32_t flen = m & 0x7fffffffu;

	c->mark_got = 0;
	c->frag_last = (m & 0x80000000u) != 0;
	if ((uint64_t)c->rec_len + flen > c->s->max_record)
		return -RPCRDMA_ERR_RANGE;
	if (++c->nfrags > MAX_FRAGS)
		return -RPCRDMA_ERR_PROTO;
	c->frag_left = flen;
	return !flen && c->frag_last ? rec_done(c) : 0;
}

/* n bytes read from c's socket: fragment headers and data, records as they end. */
static int rx_feed(struct tconn *c, const uint8_t *p, size_t n)
{
	uint32_t take;
	int rc;

	while (n) {
		if (!c->frag_left && c->mark_got < 4) {
			take = 4 - c->mark_got < n ? 4 - c->mark_got : (uint32_t)n;
			memcpy(c->mark + c->mark_got, p, take);
			c->mark_got += take;
			p += take;
			n -= take;
			if (c->mark_got == 4 && (rc = mark_done(c)) < 0)
				return rc;
			continue;
		}
		take = c->frag_left < n ? c->frag_left : (uint32_t)n;
		if (c->rec_len + take > c->rec_cap && rec_grow(c, c->rec_len + take))
			return -RPCRDMA_ERR_NOMEM;
		memcpy(c->rec + c->rec_len, p, take);
		c->rec_len += take;
		c->frag_left -= take;
		p += take;
		n -= take;
		if (!c->frag_left && c->frag_last && (rc = rec_done(c)) < 0)
			return rc;
	}
	return 0;
}

static void conn_read(struct tconn *c, uint64_t now)
{
	struct tsrv *s = c->s;
	ssize_t n;
	int i, rc;

	for (i = 0; i < READS_PER_EVENT && can_read(c); i++) {
		n = recv(c->fd, s->rx, sizeof(s->rx), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n <= 0) {
			conn_kill(c, RPCRDMA_LOG_INFO, n ? strerror(errno) : "closed by the client");
			return;
		}
		c->rx_at = now;
		rc = rx_feed(c, s->rx, (size_t)n);
		if (rc) {
			conn_kill(c, RPCRDMA_LOG_WARN, rc == -RPCRDMA_ERR_RANGE ?
				  "a call longer than tcp_max_record" : rpcrdma_strerror(rc));
			return;
		}
	}
}

static void conn_event(struct tconn *c, uint32_t events, uint64_t now)
{
	if (c->dead)
		return;
	if (events & EPOLLIN)
		conn_read(c, now);
	if (!c->dead && (events & EPOLLOUT) && conn_flush(c, now))
		conn_kill(c, RPCRDMA_LOG_INFO, "its socket failed");
	if (!c->dead && (events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLIN))
		conn_kill(c, RPCRDMA_LOG_INFO, "closed by the client");
	if (!c->dead) {
		mark_ready(c);   /* replies that went may let its calls go */
		conn_watch(c);
	}
}

/* ---- accepting and timeouts (progress thread, listener lock held) ---- */

static void conn_new(struct tsrv *s, int fd, const struct sockaddr_storage *ss, socklen_t len,
		     uint64_t now)
{
	struct tconn *c = calloc(1, sizeof(*c));
	struct epoll_event ev = { .events = EPOLLIN };
	int one = 1;

	if (!c) {
		close(fd);
		return;
	}
	c->s = s;
	c->fd = fd;
	c->peer = *ss;
	c->peer_len = len;
	c->rx_at = now;
	c->ev = EPOLLIN;
	ev.data.ptr = c;
	/* a reply goes in one send(): Nagle would hold its tail for the client's ACK */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		free(c);
		return;
	}
	c->next = s->conns;
	s->conns = c;
	conn_log(c, RPCRDMA_LOG_INFO, "accepted a connection from", NULL);
}

static void listener_watch(struct tsrv *s, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &s->lfd };

	if (on == s->lfd_watched)
		return;
	if (!epoll_ctl(s->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, s->lfd, on ? &ev : NULL))
		s->lfd_watched = on;
}

static void accept_some(struct tsrv *s, uint64_t now)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int i, fd;

	for (i = 0; i < ACCEPTS_PER_EVENT; i++) {
		len = sizeof(ss);
		fd = accept4(s->lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			conn_new(s, fd, &ss, len, now);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			/* the pending connection stays queued: the listener rests instead of
			 * waking this thread at once again (level-triggered) */
			rpcrdma_log(RPCRDMA_LOG_WARN, "TCP: cannot accept a connection: %s",
				    strerror(errno));
			listener_watch(s, false);
			s->accept_resume = now + ACCEPT_PAUSE_MS;
		}
		return;
	}
}

/* Timeouts: a connection whose replies do not move is dropped (tcp_stall_ms); one with
 * nothing received and nothing of its pending is closed (tcp_idle_ms); the cache ages. */
static void sweep(struct tsrv *s, uint64_t now)
{
	struct tconn *c;

	for (c = s->conns; c; c = c->next) {
		if (c->dead)
			continue;
		if (c->out_head && s->stall_ms >= 0 && now - c->tx_at >= (uint64_t)s->stall_ms)
			conn_kill(c, RPCRDMA_LOG_WARN,
				  "its client read none of its replies within tcp_stall_ms");
		else if (!c->out_head && !c->running && !c->head && s->idle_ms >= 0 &&
			 now - c->rx_at >= (uint64_t)s->idle_ms)
			conn_kill(c, RPCRDMA_LOG_INFO, "idle for tcp_idle_ms");
	}
	if (!s->lfd_watched && now >= s->accept_resume)
		listener_watch(s, true);
	rpcrdma__drc_expire(s->drc, now);   /* kept replies older than 120 s go */
}

static void conn_free(struct tconn *c)
{
	free_calls(c);
	free_replies(c);
	free(c->rec);
	free(c);
}

/* Dead connections no slot holds any more are freed. */
static void reap(struct tsrv *s)
{
	struct tconn **pp = &s->conns, *c;

	if (!s->dead_seen)
		return;
	s->dead_seen = false;
	while ((c = *pp) != NULL) {
		if (c->dead && !c->running) {
			*pp = c->next;
			unlist(s, c);
			conn_free(c);
			continue;
		}
		s->dead_seen |= c->dead;
		pp = &c->next;
	}
}

#define EVENTS 64

static void *progress(void *arg)
{
	struct tsrv *s = arg;
	struct epoll_event ev[EVENTS];
	uint64_t now, next_sweep = 0;
	int i, n, ms;

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		now = rpcrdma__rpc_now();
		ms = next_sweep > now ? (int)(next_sweep - now) : 0;
		n = epoll_wait(s->epfd, ev, EVENTS, ms);
		now = rpcrdma__rpc_now();
		pthread_mutex_lock(&s->lock);
		for (i = 0; i < n; i++) {
			if (ev[i].data.ptr == &s->wake_fd)
				drain_fd(s->wake_fd);
			else if (ev[i].data.ptr == &s->lfd)
				accept_some(s, now);
			else
				conn_event(ev[i].data.ptr, ev[i].events, now);
		}
		if (now >= next_sweep) {
			sweep(s, now);
			next_sweep = now + SWEEP_MS;
		}
		reap(s);
		n = s->told;
		s->told = false;
		pthread_mutex_unlock(&s->lock);
		if (n)
			rpcrdma__svc_wake_workers();
	}
	return NULL;
}

static struct trec *pop_call(struct tconn *c)
{
	struct trec *r = c->head;

	if (!r)
		return NULL;
	c->head = r->next;
	if (!c->head)
		c->tail = NULL;
	c->nready--;
	conn_watch(c);   /* room for more calls: read again */
	return r;
}

/* ---- slots: what the workers dispatch on ---- */

static struct tslot *slot_of(SVCXPRT *x)
{
	return (struct tslot *)x->xp_p1;
}

/* The slots are made once, for every listener of the process. */
static int slots_init(void)
{
	int rc = 0;

	pthread_mutex_lock(&g_slot_lock);
	while (g_nslots < SLOTS) {
		struct tslot *t = &g_slots[g_nslots];

		t->xprt.xp_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (t->xprt.xp_fd < 0) {
			rc = -RPCRDMA_ERR_NOMEM;
			break;
		}
		t->xprt.xp_ops = &slot_ops;
		t->xprt.xp_p1 = t;
		t->xprt.xp_p3 = &t->ext;
		t->xprt.xp_tp = "tcp";
		xprt_register(&t->xprt);
		g_nslots++;
	}
	pthread_mutex_unlock(&g_slot_lock);
	return rc;
}

static struct tslot *slot_get(void)
{
	struct tslot *t = NULL;
	int i;

	pthread_mutex_lock(&g_slot_lock);
	for (i = 0; i < g_nslots && !t; i++)
		if (!g_slots[i].busy)
			t = &g_slots[i];
	if (t)
		t->busy = true;
	pthread_mutex_unlock(&g_slot_lock);
	return t;
}

static void slot_put(struct tslot *t)
{
	pthread_mutex_lock(&g_slot_lock);
	t->s = NULL;
	t->c = NULL;
	t->busy = false;
	pthread_mutex_unlock(&g_slot_lock);
}

/* What svc_getcaller() and svc_getrpccaller() say during the dispatch: c's client. */
static void slot_bind(struct tslot *t, struct tsrv *s, struct tconn *c)
{
	SVCXPRT *x = &t->xprt;

	t->s = s;
	t->c = c;
	t->cur = t->next_call = NULL;
	t->drc = NULL;
	x->xp_addrlen = (int)(c->peer_len < sizeof(x->xp_raddr) ? c->peer_len
								  : sizeof(x->xp_raddr));
	memcpy(&x->xp_raddr, &c->peer, (size_t)x->xp_addrlen);
	x->xp_rtaddr.buf = &c->peer;
	x->xp_rtaddr.len = x->xp_rtaddr.maxlen = c->peer_len;
	x->xp_ltaddr = s->xprt.xp_ltaddr;
	x->xp_netid = c->peer.ss_family == AF_INET6 ? "tcp6" : "tcp";
	x->xp_port = s->xprt.xp_port;
}

/* A connection with a call to give and a lane free, bound to a slot (svc_work.c).
 * Called with the workers' lock held. */
static SVCXPRT *claim(struct rpcrdma__svc_src *src)
{
	struct tsrv *s = (struct tsrv *)((char *)src - offsetof(struct tsrv, src));
	struct tconn *c;
	struct tslot *t = NULL;

	pthread_mutex_lock(&s->lock);
	while ((c = s->rq_head) != NULL) {
		s->rq_head = c->rnext;
		if (!s->rq_head)
			s->rq_tail = NULL;
		c->listed = false;
		if (!can_dispatch(c))
			continue;   /* listed again when it can */
		t = slot_get();
		if (!t) {
			mark_ready(c);
			break;
		}
		slot_bind(t, s, c);
		/* its first call is taken now, so that another lane is bound only for a call
		 * still waiting */
		t->next_call = pop_call(c);
		c->running++;
		s->running++;
		mark_ready(c);   /* another lane may take its next call */
		break;
	}
	pthread_mutex_unlock(&s->lock);
	return t ? &t->xprt : NULL;
}

static void release(struct rpcrdma__svc_src *src, SVCXPRT *x)
{
	struct tslot *t = slot_of(x);
	struct tsrv *s = t->s;
	struct tconn *c = t->c;

	(void)src;
	pthread_mutex_lock(&s->lock);
	c->running--;
	s->running--;
	if (c->dead && !c->running) {
		s->dead_seen = true;
		signal_fd(s->wake_fd);
	} else {
		mark_ready(c);
		conn_watch(c);
	}
	slot_put(t);
	pthread_cond_broadcast(&s->idle_cv);
	pthread_mutex_unlock(&s->lock);
}

/* ---- the duplicate request cache (svc_drc.c, as over RDMA) ---- */

/* Calls the cache leaves alone, as over RDMA: NULL, and RPCSEC_GSS. */
static bool drc_applies(const struct rpc_msg *msg)
{
	return msg->rm_call.cb_proc != 0 && msg->rm_call.cb_cred.oa_flavor != RPCSEC_GSS;
}

/* A copy of the kept reply a goes to c. */
static void replay(struct tconn *c, const struct rpcrdma_reply_args *a)
{
	struct tout *t;

	if (a->nitems)
		return;   /* kept over RDMA with its DDP items: not a TCP reply */
	t = tout_new(a->xdr_len);
	if (!t)
		return;
	memcpy(t->data + 4, a->xdr, a->xdr_len);
	tout_mark(t, a->xdr_len);
	conn_send(c, t);
}

/* 1 when the call is to be dispatched; 0 when it was sent again: its kept reply answers
 * it, or, while its original still runs, it is dropped (knfsd drops it too; the client
 * sends it again and then finds the reply kept). Listener lock held. */
static int drc_admit(struct tslot *t, const struct rpc_msg *msg, const struct trec *r)
{
	struct tsrv *s = t->s;
	struct rpcrdma__drc_key k;
	struct rpcrdma__drc_ent *e;
	uint32_t at = xdr_getpos(&t->dec);
	int found;

	if (!s->drc || !drc_applies(msg) || at > r->len)
		return 1;
	rpcrdma__drc_key(&k, &t->c->peer, t->c->peer_len, msg, r->buf + at, r->len - at, r->len);
	found = rpcrdma__drc_lookup(s->drc, &k, rpcrdma__rpc_now(), &e);
	if (found == RPCRDMA__DRC_NEW) {
		t->drc = e;
		return 1;
	}
	if (found == RPCRDMA__DRC_KEPT) {
		conn_log(t->c, RPCRDMA_LOG_INFO,
			 "answered from the duplicate request cache a call sent again by", NULL);
		replay(t->c, rpcrdma__drc_reply(e));
	}
	return 0;
}

/* ---- xp_ops of a slot ---- */

static void slot_done(struct tslot *t)
{
	if (t->drc) {   /* no reply: the cache forgets the call */
		rpcrdma__drc_forget(t->s->drc, t->drc);
		t->drc = NULL;
	}
	if (t->cur) {
		free(t->cur->buf);
		free(t->cur);
		t->cur = NULL;
	}
}

static bool_t encode_reply(SVCXPRT *x, struct tout *t, uint32_t cap, struct rpc_msg *msg,
			   xdrproc_t xres, void *where);

/* A call under RPCSEC_GSS is refused (AUTH_REJECTEDCRED, as libtirpc answers a flavour
 * it does not serve): libtirpc would keep its context on the slot, which the next
 * connection's call would find. Listener lock held. */
static void deny_gss(struct tslot *t, const struct rpc_msg *call)
{
	struct rpc_msg rep;
	struct tout *o = tout_new(REPLY_SLACK);

	if (!o)
		return;
	memset(&rep, 0, sizeof(rep));
	rep.rm_xid = call->rm_xid;
	rep.rm_direction = REPLY;
	rep.rm_reply.rp_stat = MSG_DENIED;
	rep.rjcted_rply.rj_stat = AUTH_ERROR;
	rep.rjcted_rply.rj_why = AUTH_REJECTEDCRED;
	if (!encode_reply(&t->xprt, o, REPLY_SLACK, &rep, NULL, NULL)) {
		free(o);
		return;
	}
	conn_send(t->c, o);
}

/* Decode the next call's header (calls answered from the cache never reach the
 * program). */
static bool_t slot_recv(SVCXPRT *x, struct rpc_msg *msg)
{
	struct tslot *t = slot_of(x);
	struct trec *r;
	bool_t got = FALSE;

	pthread_mutex_lock(&t->s->lock);
	slot_done(t);
	if (t->c->dead && t->next_call) {
		t->cur = t->next_call;
		t->next_call = NULL;
		slot_done(t);
	}
	while (!got && !t->c->dead && (r = t->next_call ? t->next_call : pop_call(t->c))) {
		t->next_call = NULL;
		t->cur = r;
		xdrmem_create(&t->dec, (char *)r->buf, r->len, XDR_DECODE);
		if (!xdr_callmsg(&t->dec, msg)) {
			slot_done(t);   /* no header to answer: dropped, as libtirpc does */
			continue;
		}
		if (msg->rm_call.cb_cred.oa_flavor == RPCSEC_GSS) {
			deny_gss(t, msg);
			slot_done(t);
			continue;
		}
		if (!drc_admit(t, msg, r)) {
			slot_done(t);
			continue;
		}
		t->xid = msg->rm_xid;
		t->replied = false;
		got = TRUE;
	}
	pthread_mutex_unlock(&t->s->lock);
	return got;
}

static enum xprt_stat slot_stat(SVCXPRT *x)
{
	struct tslot *t = slot_of(x);
	enum xprt_stat st;

	pthread_mutex_lock(&t->s->lock);
	slot_done(t);
	/* never XPRT_DIED: the slot outlives its connections, the progress thread ends them */
	st = t->c->head && !t->c->dead && t->c->out_bytes < t->s->reply_queue ? XPRT_MOREREQS
									      : XPRT_IDLE;
	pthread_mutex_unlock(&t->s->lock);
	return st;
}

static bool_t slot_getargs(SVCXPRT *x, xdrproc_t xargs, void *args)
{
	struct tslot *t = slot_of(x);

	if (!t->cur)
		return FALSE;
	if (SVC_XP_AUTH(x).svc_ah_ops)
		return SVCAUTH_UNWRAP(&SVC_XP_AUTH(x), &t->dec, xargs, args);
	return xargs(&t->dec, args);
}

static bool_t slot_freeargs(SVCXPRT *x, xdrproc_t xargs, void *args)
{
	XDR f;

	(void)x;
	memset(&f, 0, sizeof(f));
	f.x_op = XDR_FREE;
	return xargs(&f, args);
}

static bool_t wrap_results(SVCXPRT *x, XDR *xdrs, xdrproc_t xres, void *where)
{
	if (SVC_XP_AUTH(x).svc_ah_ops)
		return SVCAUTH_WRAP(&SVC_XP_AUTH(x), xdrs, xres, where);
	return xres(xdrs, where);
}

static bool_t encode_reply(SVCXPRT *x, struct tout *t, uint32_t cap, struct rpc_msg *msg,
			   xdrproc_t xres, void *where)
{
	XDR e;
	bool_t ok;

	xdrmem_create(&e, (char *)t->data + 4, cap, XDR_ENCODE);
	ok = xdr_replymsg(&e, msg) && (!xres || wrap_results(x, &e, xres, where));
	if (ok)
		tout_mark(t, xdr_getpos(&e));
	xdr_destroy(&e);
	return ok;
}

/* The reply as a record, encoded on the worker's thread; results that cannot be encoded
 * are answered SYSTEM_ERR, as over RDMA (libtirpc's svc_vc sends a truncated record). */
static struct tout *make_reply(SVCXPRT *x, struct rpc_msg *msg, bool *failed)
{
	xdrproc_t xres = NULL;
	void *where = NULL;
	uint64_t cap = REPLY_SLACK;
	struct tout *t;
	struct rpc_msg err;

	*failed = false;
	if (msg->rm_reply.rp_stat == MSG_ACCEPTED && msg->acpted_rply.ar_stat == SUCCESS) {
		xres = msg->acpted_rply.ar_results.proc;
		where = msg->acpted_rply.ar_results.where;
		msg->acpted_rply.ar_results.proc = RPCRDMA_XDR_VOID;
		cap += xdr_sizeof(xres, where);
	}
	t = cap <= UINT32_MAX - 4 ? tout_new((uint32_t)cap) : NULL;
	if (t && !encode_reply(x, t, (uint32_t)cap, msg, xres, where)) {
		err = *msg;
		err.acpted_rply.ar_stat = SYSTEM_ERR;
		*failed = true;
		if (!xres || !encode_reply(x, t, (uint32_t)cap, &err, NULL, NULL)) {
			free(t);
			t = NULL;
		}
	}
	if (xres)
		msg->acpted_rply.ar_results.proc = xres;
	return t;
}

static bool_t slot_reply(SVCXPRT *x, struct rpc_msg *msg)
{
	struct tslot *t = slot_of(x);
	struct rpcrdma_reply_args a = { 0 };
	struct tout *o;
	bool failed;

	/* one reply a call: rpcgen's stubs answer svcerr_systemerr() after a failed
	 * svc_sendreply(), which already sent SYSTEM_ERR (as over RDMA, the second goes
	 * nowhere) */
	if (!t->cur || t->replied)
		return FALSE;
	t->replied = true;
	msg->rm_xid = t->xid;   /* svc_sendreply() and svcerr_*() leave it to the transport */
	o = make_reply(x, msg, &failed);
	pthread_mutex_lock(&t->s->lock);
	if (o && t->drc) {   /* kept whether or not the connection still lives */
		a.xdr = o->data + 4;
		a.xdr_len = o->len - 4;
		rpcrdma__drc_keep(t->s->drc, t->drc, &a, rpcrdma__rpc_now());
		t->drc = NULL;
	}
	if (o)
		conn_send(t->c, o);
	pthread_mutex_unlock(&t->s->lock);
	return o && !failed;
}

static void slot_destroy(SVCXPRT *x)
{
	(void)x;   /* slots live as long as the process; slot_stat never says XPRT_DIED */
}

static bool_t xp_control_none(SVCXPRT *x, const u_int req, void *info)
{
	(void)x;
	(void)req;
	(void)info;
	return FALSE;
}

static const struct xp_ops2 ops2 = { .xp_control = xp_control_none };

static const struct xp_ops slot_ops = {
	.xp_recv = slot_recv,
	.xp_stat = slot_stat,
	.xp_getargs = slot_getargs,
	.xp_reply = slot_reply,
	.xp_freeargs = slot_freeargs,
	.xp_destroy = slot_destroy,
};

/* ---- the listener's SVCXPRT ---- */

static bool_t lst_recv(SVCXPRT *x, struct rpc_msg *msg)
{
	(void)x;
	(void)msg;
	return FALSE;
}

static void srv_free(struct tsrv *s)
{
	struct tconn *c;

	while ((c = s->conns) != NULL) {
		s->conns = c->next;
		if (!c->dead) {
			close(c->fd);
			c->dead = true;
		}
		conn_free(c);
	}
	rpcrdma__drc_free(s->drc);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->epfd >= 0)
		close(s->epfd);
	pthread_cond_destroy(&s->idle_cv);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* Workers stop taking its calls, the progress thread stops, the calls being dispatched
 * finish (their replies go nowhere), then everything goes. */
static void lst_destroy(SVCXPRT *x)
{
	struct tsrv *s = (struct tsrv *)x->xp_p1;

	rpcrdma__svc_src_remove(&s->src);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	signal_fd(s->wake_fd);
	pthread_join(s->thread, NULL);
	pthread_mutex_lock(&s->lock);
	while (s->running)
		pthread_cond_wait(&s->idle_cv, &s->lock);
	pthread_mutex_unlock(&s->lock);
	srv_free(s);
}

static const struct xp_ops lst_ops = {
	.xp_recv = lst_recv,
	.xp_stat = rpcrdma__svc_lst_stat,
	.xp_getargs = rpcrdma__svc_lst_args,
	.xp_reply = rpcrdma__svc_lst_reply,
	.xp_freeargs = rpcrdma__svc_lst_args,
	.xp_destroy = lst_destroy,
};

/* ---- creating ---- */

/* A listening socket on host (NULL: "::" taking IPv4 too, else every IPv4 address). */
static int listen_on(const char *host, uint16_t port)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM }, *ai, *a;
	char ps[8];
	int fd = -1, one = 1, zero = 0;

	snprintf(ps, sizeof(ps), "%u", port);
	hints.ai_family = host ? AF_UNSPEC : AF_INET6;
	if (getaddrinfo(host ? host : "::", ps, &hints, &ai)) {
		if (host)
			return -1;
		hints.ai_family = AF_INET;   /* a host without IPv6 */
		if (getaddrinfo("0.0.0.0", ps, &hints, &ai))
			return -1;
	}
	for (a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (a->ai_family == AF_INET6 && !host)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, a->ai_addr, a->ai_addrlen) || listen(fd, BACKLOG)) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0 && !host && hints.ai_family == AF_INET6)
		return listen_on("0.0.0.0", port);
	return fd;
}

static void tcp_defaults(struct tsrv *s, const struct rpcrdma_svc_opts *o)
{
	s->par = o && o->conn_parallel > 1 ? o->conn_parallel : 1;
	if (s->par > SLOTS)
		s->par = SLOTS;
	s->max_record = o && o->tcp_max_record ? o->tcp_max_record : DEF_MAX_RECORD;
	if (s->max_record > 0x7fffffffu)
		s->max_record = 0x7fffffffu;
	s->reply_queue = o && o->tcp_reply_queue ? o->tcp_reply_queue : DEF_REPLY_QUEUE;
	s->idle_ms = o && o->tcp_idle_ms ? o->tcp_idle_ms : DEF_IDLE_MS;
	s->stall_ms = o && o->tcp_stall_ms ? o->tcp_stall_ms : DEF_STALL_MS;
}

/* The cache as over RDMA: sized by memory unless the program says (svc_drc.c). */
static int tcp_drc(struct tsrv *s, const struct rpcrdma_svc_opts *o)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	int32_t n = o ? o->drc_entries : 0;
	uint64_t bytes = UINT64_MAX;

	if (n < 0)
		return 0;
	if (!n) {
		n = (int32_t)rpcrdma__drc_entries_for(pages > 0 && size > 0 ?
						      (uint64_t)pages * (uint64_t)size : 0);
		bytes = (uint64_t)n * 256u;   /* knfsd's 256 bytes a reply on average */
	}
	s->drc = rpcrdma__drc_new((uint32_t)n, o && o->drc_reply_max ? o->drc_reply_max : 4096,
				  bytes);
	return s->drc ? 0 : -RPCRDMA_ERR_NOMEM;
}

static int tcp_open(struct tsrv *s, const struct rpcrdma_svc_opts *o, uint16_t port)
{
	struct epoll_event ev = { .events = EPOLLIN };
	socklen_t len = sizeof(s->laddr);

	s->lfd = listen_on(o ? o->host : NULL, port);
	if (s->lfd < 0) {
		rpcrdma__create_err("TCP port %u on %s: %s", port,
				    o && o->host ? o->host : "every address", strerror(errno));
		return -RPCRDMA_ERR_INVAL;
	}
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ev.data.ptr = &s->wake_fd;
	if (s->epfd < 0 || s->wake_fd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wake_fd, &ev) ||
	    getsockname(s->lfd, (struct sockaddr *)&s->laddr, &len)) {
		rpcrdma__create_err("TCP listener: %s", strerror(errno));
		return -RPCRDMA_ERR_NOMEM;
	}
	listener_watch(s, true);
	s->xprt.xp_fd = s->lfd;
	s->xprt.xp_port = ntohs(((struct sockaddr_in *)&s->laddr)->sin_port);  /* sin6 too */
	s->xprt.xp_ltaddr.buf = &s->laddr;
	s->xprt.xp_ltaddr.len = s->xprt.xp_ltaddr.maxlen = len;
	s->xprt.xp_netid = s->laddr.ss_family == AF_INET6 ? "tcp6" : "tcp";
	s->xprt.xp_tp = "tcp";
	return 0;
}

SVCXPRT *svc_rdma_tcp_create(const struct rpcrdma_svc_opts *opts)
{
	struct tsrv *s = calloc(1, sizeof(*s));
	uint32_t port = opts ? opts->port : 0;

	rpcrdma__create_err(NULL);
	if (!s) {
		rpcrdma__create_err("out of memory");
		return NULL;
	}
	s->lfd = s->epfd = s->wake_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle_cv, NULL);
	tcp_defaults(s, opts);
	if (port == RPCRDMA_PORT_ANY)
		port = 0;
	if (port > 65535) {
		rpcrdma__create_err("port %u is not a port (0..65535, or RPCRDMA_PORT_ANY)", port);
		goto out_free;
	}
	if (slots_init()) {
		rpcrdma__create_err("no descriptor for the dispatch slots: %s", strerror(errno));
		goto out_free;
	}
	if (tcp_drc(s, opts)) {
		rpcrdma__create_err("out of memory");
		goto out_free;
	}
	if (tcp_open(s, opts, (uint16_t)port))
		goto out_free;
	s->xprt.xp_ops = &lst_ops;
	s->xprt.xp_ops2 = &ops2;
	s->xprt.xp_p1 = s;
	s->xprt.xp_p3 = &s->ext;
	if (pthread_create(&s->thread, NULL, progress, s)) {
		rpcrdma__create_err("cannot start the progress thread");
		goto out_free;
	}
	s->src.claim = claim;
	s->src.release = release;
	rpcrdma__svc_src_add(&s->src);
	rpcrdma_log(RPCRDMA_LOG_INFO, "listening on %s port %u over TCP (netid %s)",
		    opts && opts->host ? opts->host : "every address", s->xprt.xp_port,
		    s->xprt.xp_netid);
	return &s->xprt;
out_free:
	srv_free(s);
	return NULL;
}

/* ---- for svc_listen.c's rpcrdma_svc_drc_stats() and rpcrdma_svc_getxid() ---- */

int rpcrdma__tcp_drc_stats(SVCXPRT *listener, struct rpcrdma_svc_drc_stats *out)
{
	struct tsrv *s;

	if (!listener || listener->xp_ops != &lst_ops || !out)
		return -RPCRDMA_ERR_INVAL;
	s = (struct tsrv *)listener->xp_p1;
	if (!s->drc)
		return -RPCRDMA_ERR_INVAL;
	pthread_mutex_lock(&s->lock);
	rpcrdma__drc_stats(s->drc, out);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

uint32_t rpcrdma__tcp_getxid(SVCXPRT *xprt)
{
	if (!xprt || xprt->xp_ops != &slot_ops || !slot_of(xprt)->cur)
		return 0;
	return slot_of(xprt)->xid;
}
