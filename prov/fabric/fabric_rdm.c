/* SPDX-License-Identifier: BSD-2-Clause */
/* The libfabric provider: connections emulated over FI_EP_RDM (shm) with control
 * messages, and the watchdog that frees a region lock whose holder died. */
#include "fabric_int.h"

/* ---- shm: processes killed holding a region's lock ----
 *
 * libfabric's shm (1.17, and 2.1 still) keeps a spin lock in each endpoint's shared
 * region: the owner takes it to progress, a peer to post to it. A process killed while
 * holding one (it does while it polls or posts) leaves whoever needs that lock spinning
 * for ever inside libfabric, and with it every connection that thread serves.
 * rpcrdma__fab_peer_alive_now() keeps us from posting to a peer already dead; the
 * watchdog covers the rest. Every libfabric call
 * on an emulated endpoint is marked (busy_begin/_end) and the watchdog times the calls it
 * sees under way; a call stuck for WD_DEAD_MS while the connection's peer is dead, or for
 * WD_STUCK_MS in any case (a spin lock is held for microseconds, so its holder is dead or
 * stopped), has the lock it waits for released: the peer region's if held, else our own.
 * Timed from the first look that sees it, a call is stuck a look's interval longer than
 * the figures say (at most WD_IDLE_MS). */
#define WD_EVERY_MS 10
#define WD_DEAD_MS 50
#define WD_STUCK_MS 500

static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fab_ep *wd_eps;
static pthread_once_t wd_once = PTHREAD_ONCE_INIT;

static int peer_dead(const struct fab_ep *e)
{
	return rpcrdma__proc_gone(e->pidfd, e->peer_pid);
}

/* Whether a libfabric call is under way on e; the first look at a call notes when. */
static int wd_busy(struct fab_ep *e, int64_t now)
{
	unsigned gen = __atomic_load_n(&e->busy_gen, __ATOMIC_ACQUIRE);

	if (!(gen & 1u)) {
		e->wd_since = 0;
		return 0;
	}
	if (!e->wd_since || gen != e->wd_gen) {
		e->wd_gen = gen;
		e->wd_since = now;
	}
	return 1;
}

/* Returns whether a call is under way. */
static int wd_check(struct fab_ep *e, int64_t now)
{
	int64_t stuck;

	if (!wd_busy(e, now))
		return 0;
	stuck = now - e->wd_since;
	if (stuck < WD_DEAD_MS || (stuck < WD_STUCK_MS && !peer_dead(e)))
		return 1;
	if (rpcrdma__shm_region_unlock(e->peer_hdr) || rpcrdma__shm_region_unlock(e->own_hdr))
		fprintf(stderr, "librpcrdma: shm: released a region lock held for %" PRId64
				" ms (peer process %u %s)\n", stuck, e->peer_pid,
			peer_dead(e) ? "dead" : "alive");
	return 1;
}

/* Every WD_EVERY_MS while some call is under way at a look; after a look that found none,
 * twice as long each time up to WD_IDLE_MS, so that an idle process is not woken 100
 * times a second. A call stuck meanwhile is found within WD_IDLE_MS of its start, and is
 * then looked at every WD_EVERY_MS again. */
#define WD_IDLE_MS 200

static void *watchdog(void *arg)
{
	long ms = WD_EVERY_MS;
	struct fab_ep *e;
	int64_t now;
	int busy;

	(void)arg;
	for (;;) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
		busy = 0;
		pthread_mutex_lock(&wd_lock);
		now = rpcrdma__now_ms();
		for (e = wd_eps; e; e = e->wd_next)
			busy |= wd_check(e, now);
		pthread_mutex_unlock(&wd_lock);
		ms = busy ? WD_EVERY_MS : (ms * 2 > WD_IDLE_MS ? WD_IDLE_MS : ms * 2);
	}
	return NULL;
}

static void wd_start(void)
{
	pthread_t t;
	pthread_attr_t a;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_create(&t, &a, watchdog, NULL);
	pthread_attr_destroy(&a);
}

static void wd_list(struct fab_ep *e)
{
	if (e->watched || (!e->own_hdr && !e->peer_hdr))
		return;
	pthread_once(&wd_once, wd_start);
	pthread_mutex_lock(&wd_lock);
	e->wd_prev = NULL;
	e->wd_next = wd_eps;
	if (wd_eps)
		wd_eps->wd_prev = e;
	wd_eps = e;
	e->watched = 1;
	pthread_mutex_unlock(&wd_lock);
}

/* The region named by a provider name (len bytes, not NUL-terminated); pid 0 when its
 * owner is not known yet (a listener). */
static void *map_region(const void *name, size_t len, uint32_t pid)
{
	char buf[CTRL_NAME_MAX + 1];

	if (len == 0 || len > CTRL_NAME_MAX)
		return NULL;
	memcpy(buf, name, len);
	buf[len] = '\0';
	return rpcrdma__shm_region_map(buf, pid);
}

/* Our own region, once the endpoint is enabled. */
static void wd_watch_own(struct fab_ep *e)
{
	char name[CTRL_NAME_MAX];
	size_t len = sizeof(name);

	if (!fi_getname(&e->ep->fid, name, &len))
		e->own_hdr = map_region(name, len, (uint32_t)getpid());
	wd_list(e);
	rpcrdma__fab_local_add(e);
}

/* The peer's region (the listener's while connecting, the connection's after). */
static void wd_watch_peer(struct fab_ep *e, const void *name, size_t len, uint32_t pid)
{
	void *hdr = map_region(name, len, pid);

	rpcrdma__fab_local_peer_set(e, name, len, pid);
	pthread_mutex_lock(&wd_lock);
	rpcrdma__shm_region_unmap(e->peer_hdr);
	e->peer_hdr = hdr;
	pthread_mutex_unlock(&wd_lock);
	wd_list(e);
}

static void handle_ctrl(struct fab_ep *e, size_t len);

static void wd_unwatch(struct fab_ep *e)
{
	pthread_mutex_lock(&wd_lock);
	if (e->watched) {
		if (e->wd_prev)
			e->wd_prev->wd_next = e->wd_next;
		else
			wd_eps = e->wd_next;
		if (e->wd_next)
			e->wd_next->wd_prev = e->wd_prev;
		e->watched = 0;
	}
	pthread_mutex_unlock(&wd_lock);
	rpcrdma__shm_region_unmap(e->peer_hdr);
	rpcrdma__shm_region_unmap(e->own_hdr);
	e->peer_hdr = e->own_hdr = NULL;
}


/* ---- parking: first messages a peer has not taken yet ----
 *
 * libfabric 1.17's shm: an endpoint's first message to another puts the sender's region
 * name in the receiver's queue; the receiver maps that region by name when it next
 * polls, and crashes if the name is gone by then (a NULL region: the sender closed its
 * endpoint, which unlinks it). A connect whose CONNREQ the listener did not take in time
 * (a server stopped, or blocked in an inline dispatch) left exactly that, and the server
 * died when it polled again; an ACCEPT a stopped client did not take, the client.
 * So an endpoint whose CONNREQ or ACCEPT was not taken (its last post said EAGAIN) is
 * parked instead of closed: kept open, with no connection, until its peer has taken the
 * name (a CTRL_PROBE then goes through) or has ended. Parked endpoints are looked at
 * before each connect and accept; at exit their region files are kept for the peer to
 * map (removed by rpcrdma__shm_reap once we are gone). A connect to a listener that has
 * not taken our last CONNREQ yet waits for that one (its timeout) instead of queueing
 * another name. Only where the peer's region header is known (libfabric 1.17, 2.1). */
#define PARK_PROBE_MS 0   /* one try: a look, not a wait (an accept sweeps too) */

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fab_ep *parked;
static pid_t park_pid;   /* the process that parked them: a child made by fork() has
			    copies, which are not its to close */

/* The process at the other end: a listener's is in its region's header. */
static int park_peer_gone(const struct fab_ep *e)
{
	if (e->pending_port)
		return rpcrdma__proc_gone(-1, rpcrdma__shm_region_pid(e->peer_hdr));
	return rpcrdma__proc_gone(e->pidfd, e->peer_pid);
}

/* Taken, or nobody left to take it (or no endpoint left: its region went with it). */
static int park_settled(struct fab_ep *e)
{
	if (!e->ep || park_peer_gone(e))
		return 1;
	if (rpcrdma__fab_ctrl_send(e, e->pending_to, CTRL_PROBE, NULL, 0, PARK_PROBE_MS, -1, 0) ==
	    -RPCRDMA_ERR_DISCONN)
		return 1;   /* the peer, in this process, has closed */
	return !e->contact_pending;
}

static void park_free(struct fab_ep *e)
{
	struct fab_prov *fp = e->fp;

	rpcrdma__fab_ep_free(e);
	if (--fp->parked == 0 && fp->closed)
		rpcrdma__fab_prov_free(fp);
}

/* Under park_lock. A child made by fork() starts with none: the copies it inherited
 * name its parent's regions. */
static struct fab_ep *park_inherited;   /* left alone, reachable */

static void park_mine(void)
{
	if (parked && park_pid != getpid()) {
		park_inherited = parked;
		parked = NULL;
	}
	park_pid = getpid();
}

/* Under park_lock. */
static void park_sweep_locked(void)
{
	struct fab_ep **pp = &parked, *e;

	park_mine();
	while ((e = *pp) != NULL) {
		if (park_settled(e)) {
			*pp = e->park_next;
			park_free(e);
		} else {
			pp = &e->park_next;
		}
	}
}

static void park_sweep(void)
{
	pthread_mutex_lock(&park_lock);
	park_sweep_locked();
	pthread_mutex_unlock(&park_lock);
}

/* An endpoint given up: parked if its first message may still be queued, else closed. */
static void rdm_drop(struct fab_ep *e)
{
	if (!e->contact_pending || !e->peer_hdr || !e->ep) {
		rpcrdma__fab_ep_free(e);
		return;
	}
	rpcrdma_log(RPCRDMA_LOG_INFO, "shm: %s not taken in time: the endpoint is kept until its "
		    "peer takes it", e->pending_port ? "connection request" : "acceptance");
	pthread_mutex_lock(&park_lock);
	park_mine();
	e->park_next = parked;
	parked = e;
	e->fp->parked++;
	pthread_mutex_unlock(&park_lock);
}

/* Whether our last CONNREQ to this port is still untaken after *timeout_ms, which
 * loses the time waited (-1: 10 s, as a connect's wait for its CONNREQ to leave). */
static int park_blocks(uint16_t port, int *timeout_ms)
{
	int64_t until = rpcrdma__now_ms() + (*timeout_ms < 0 ? 10000 : *timeout_ms);
	struct fab_ep *e;
	int waiting;

	for (;;) {
		pthread_mutex_lock(&park_lock);
		park_sweep_locked();
		for (e = parked; e && e->pending_port != port; e = e->park_next)
			;
		waiting = e != NULL;
		pthread_mutex_unlock(&park_lock);
		if (!waiting || rpcrdma__now_ms() >= until)
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	if (*timeout_ms > 0)
		*timeout_ms = (int)(until - rpcrdma__now_ms() > 1 ? until - rpcrdma__now_ms() : 1);
	return waiting;
}

/* Its owner closes fp: 1 if parked endpoints still need it (the last frees it). */
int rpcrdma__fab_park_close(struct fab_prov *fp)
{
	int held;

	pthread_mutex_lock(&park_lock);
	park_mine();
	held = fp->parked > 0;
	fp->closed = held;
	pthread_mutex_unlock(&park_lock);
	return held;
}

/* At exit: what is still parked is closed, its region file kept under its name. */
__attribute__((destructor)) static void park_exit(void)
{
	char name[CTRL_NAME_MAX + 1], keep[300];
	struct fab_ep *e;

	if (park_pid != getpid())
		return;
	pthread_mutex_lock(&park_lock);
	while ((e = parked) != NULL) {
		size_t len = sizeof(name) - 1;
		int kept = 0;

		parked = e->park_next;
		if (e->ep && !fi_getname(&e->ep->fid, name, &len)) {
			name[len] = '\0';
			kept = rpcrdma__shm_keep_begin(name, keep, sizeof(keep)) == 0;
		}
		park_free(e);
		if (kept)
			rpcrdma__shm_keep_end(name, keep);
	}
	pthread_mutex_unlock(&park_lock);
}


/* ---- RDM (emulated) connections ---- */

struct ctrl_view {
	uint32_t type;
	uint32_t pid;
	const uint8_t *name;
	size_t name_len;
	const uint8_t *pdata;
	size_t pdata_len;
	const uint8_t *bell;         /* ACCEPT: the doorbell page's name, or NULL */
	size_t bell_len;
};

/* magic (4), type, name length, private data length, flags; with CTRL_F_PID the sender's
 * process id (4, big-endian); with CTRL_F_BELL the length (1) and name of the doorbell page
 * (ACCEPT: shm_bell.c); the name; the private data */
static size_t ctrl_encode(uint8_t *buf, uint32_t type, const void *name, size_t name_len,
			  const void *pdata, size_t pdata_len, const char *bell, size_t bell_len)
{
	uint32_t pid = (uint32_t)getpid();
	size_t at = 12;

	buf[0] = (uint8_t)(CTRL_MAGIC >> 24);
	buf[1] = (uint8_t)(CTRL_MAGIC >> 16);
	buf[2] = (uint8_t)(CTRL_MAGIC >> 8);
	buf[3] = (uint8_t)CTRL_MAGIC;
	buf[4] = (uint8_t)type;
	buf[5] = (uint8_t)name_len;
	buf[6] = (uint8_t)pdata_len;
	buf[7] = CTRL_F_PID | (bell_len ? CTRL_F_BELL : 0);
	buf[8] = (uint8_t)(pid >> 24);
	buf[9] = (uint8_t)(pid >> 16);
	buf[10] = (uint8_t)(pid >> 8);
	buf[11] = (uint8_t)pid;
	if (bell_len) {
		buf[at++] = (uint8_t)bell_len;
		memcpy(buf + at, bell, bell_len);
		at += bell_len;
	}
	if (name_len)
		memcpy(buf + at, name, name_len);
	if (pdata_len)
		memcpy(buf + at + name_len, pdata, pdata_len);
	return at + name_len + pdata_len;
}

/* Control messages come from peers we do not trust more than any other: checked. */
static int ctrl_decode(const uint8_t *buf, size_t len, struct ctrl_view *v)
{
	if (len < 8 || buf[0] != (uint8_t)(CTRL_MAGIC >> 24) || buf[1] != (uint8_t)(CTRL_MAGIC >> 16) ||
	    buf[2] != (uint8_t)(CTRL_MAGIC >> 8) || buf[3] != (uint8_t)CTRL_MAGIC)
		return -1;
	size_t hdr = buf[7] & CTRL_F_PID ? 12 : 8;

	if (hdr > len)
		return -1;
	v->pid = hdr == 12 ? (uint32_t)buf[8] << 24 | (uint32_t)buf[9] << 16 |
			     (uint32_t)buf[10] << 8 | buf[11] : 0;
	v->bell = NULL;
	v->bell_len = 0;
	if (buf[7] & CTRL_F_BELL) {
		if (hdr + 1 > len || buf[hdr] == 0 || buf[hdr] >= RPCRDMA__BELL_FILE_MAX)
			return -1;
		v->bell_len = buf[hdr];
		v->bell = buf + hdr + 1;
		hdr += 1 + v->bell_len;
	}
	v->type = buf[4];
	v->name_len = buf[5];
	v->pdata_len = buf[6];
	if (v->name_len > CTRL_NAME_MAX || v->pdata_len > RPCRDMA_PDATA_MAX ||
	    hdr + v->name_len + v->pdata_len > len)
		return -1;
	v->name = buf + hdr;
	v->pdata = buf + hdr + v->name_len;
	return 0;
}

static int ctrl_post_recv(struct fab_ep *e)
{
	ssize_t rc;

	POST_RETRY(e, rc, POST_RETRY_MS, fi_trecv(e->ep, e->ctrl.buf, CTRL_MAX, e->ctrl.mr->desc, FI_ADDR_UNSPEC,
				   TAG_CTRL, 0, &e->ctrl.fctx));
	return rpcrdma__fab_map_err((int)rc);
}

static int ctrl_setup(struct fab_ep *e)
{
	struct rpcrdma_mr *mr;
	int rc = rpcrdma__fab_mr_reg(&e->fp->base, &e->ctrl, sizeof(e->ctrl), RPCRDMA_ACC_LOCAL, &mr);

	if (rc)
		return rc;
	e->ctrl.mr = (struct fab_mr *)mr;
	return ctrl_post_recv(e);
}

/* Read and dispatch one completion (driving progress); 1 if it was the one wanted. */
static int ctrl_progress(struct fab_ep *e, const void *want)
{
	struct fi_cq_msg_entry ent;
	ssize_t n;

	if (rpcrdma__fab_local_enter(e))
		return -1;   /* the peer, in this process, has closed */
	busy_begin(e);
	n = fi_cq_read(e->cq, &ent, 1);
	busy_end(e);
	rpcrdma__fab_local_leave(e);

	if (n == 1 && ent.op_context == want)
		return 1;
	if (n == 1 && ent.op_context == &e->ctrl.fctx)
		handle_ctrl(e, ent.len);
	else if (n == 1 && ent.op_context && ent.op_context != &e->ctrl.tx_fctx)
		rpcrdma__piece_done(&e->q, (struct rpcrdma__piece *)ent.op_context, 0,
				    (uint32_t)ent.len, NULL);
	else if (n == -FI_EAVAIL)
		rpcrdma__fab_cq_error(e, NULL);
	return 0;
}

/* The receiver of a control message may sleep, and shm takes a send (a first send to an
 * endpoint: not even the post) only once the receiver has polled: rung after the post and
 * while it waits. A listener has no page to say whether it sleeps: knocked each time; a
 * connection's peer only if marked asleep (shm_bell.c). */
static void ctrl_wake(struct fab_ep *e, fi_addr_t to, uint32_t type)
{
	if (type == CTRL_CONNREQ)
		rpcrdma__bell_knock(&e->bell);
	else if (to == e->peer && type != CTRL_PROBE)
		rpcrdma__bell_ring(&e->bell);
}

/* Send one control message and wait (bounded) for it to leave; other completions met
 * meanwhile are handled as usual. A peer that ends meanwhile (pidfd and pid watch it,
 * rpcrdma__proc_gone) ends the wait: a dead peer's queue stays full, and nobody else may
 * wait behind it (the server's progress thread accepts). */
int rpcrdma__fab_ctrl_send(struct fab_ep *e, fi_addr_t to, uint32_t type, const void *pdata,
			   size_t plen, int timeout_ms, int pidfd, uint32_t pid)
{
	int64_t deadline = rpcrdma__now_ms() + timeout_ms;
	uint8_t name[CTRL_NAME_MAX];
	size_t name_len = sizeof(name), len;
	unsigned spins = 0;
	int rc, done = 0;

	if (fi_getname(&e->ep->fid, name, &name_len) || name_len > CTRL_NAME_MAX)
		name_len = 0;
	len = ctrl_encode(e->ctrl.tx, type, name, name_len, pdata, plen,
			  type == CTRL_ACCEPT ? e->bell.file : "",
			  type == CTRL_ACCEPT ? strlen(e->bell.file) : 0);
	for (;;) {
		if (to == e->peer && rpcrdma__fab_local_enter(e))
			return -RPCRDMA_ERR_DISCONN;
		busy_begin(e);
		rc = (int)fi_tsend(e->ep, e->ctrl.tx, len, e->ctrl.mr->desc, to, TAG_CTRL,
				   &e->ctrl.tx_fctx);
		busy_end(e);
		if (to == e->peer)
			rpcrdma__fab_local_leave(e);
		if (rc != -FI_EAGAIN || !e->ep || rpcrdma__now_ms() >= deadline)
			break;
		ctrl_wake(e, to, type);
		if (rpcrdma__proc_gone(pidfd, pid))
			return -RPCRDMA_ERR_DISCONN;
		if (ctrl_progress(e, NULL) < 0)
			return -RPCRDMA_ERR_DISCONN;
		rpcrdma__fab_backoff(&spins);
	}
	if (type == CTRL_CONNREQ || type == CTRL_ACCEPT || type == CTRL_PROBE) {
		e->contact_pending = rc == -FI_EAGAIN;   /* see "parking" below */
		e->pending_to = to;
	}
	rc = rc == -FI_EAGAIN ? -RPCRDMA_ERR_TIMEDOUT : rpcrdma__fab_map_err(rc);
	if (!rc)
		ctrl_wake(e, to, type);
	while (!rc && !done && e->ep && rpcrdma__now_ms() < deadline) {
		done = ctrl_progress(e, &e->ctrl.tx_fctx);
		if (done < 0)
			return -RPCRDMA_ERR_DISCONN;
		if (!done && rpcrdma__proc_gone(pidfd, pid))
			return -RPCRDMA_ERR_DISCONN;
	}
	if (!rc && !done)
		rc = e->ep ? -RPCRDMA_ERR_TIMEDOUT : -RPCRDMA_ERR_DISCONN;
	return rc;
}

static void handle_ctrl(struct fab_ep *e, size_t len)
{
	struct ctrl_view v;

	if (ctrl_decode(e->ctrl.buf, len, &v) == 0 && v.type == CTRL_DISCONNECT &&
	    e->base.connected) {
		e->peer_gone = 1;  /* rpcrdma__fab_cq_drain tears down once the current batch is done */
		return;
	}
	if (e->ep)
		ctrl_post_recv(e);
}

/* A peer's name is exactly the bytes its control message declared (a trailing NUL,
 * which fi_getname includes, is allowed), never more. */
static int av_insert_name(struct fab_ep *e, const void *name, size_t len, fi_addr_t *out)
{
	char buf[CTRL_NAME_MAX + 1];

	if (len == 0 || len > CTRL_NAME_MAX)
		return -RPCRDMA_ERR_ADDR;
	memcpy(buf, name, len);
	buf[len] = '\0';
	return fi_av_insert(e->av, buf, 1, out, 0, NULL) == 1 ? 0 : -RPCRDMA_ERR_ADDR;
}

/* The listener's address is a fixed function of the port, set on its endpoint
 * (fi_setname), so that a client needs only the port, as with TCP. */
static void rdm_listener_name(uint16_t port, char *buf, size_t len)
{
	snprintf(buf, len, "fi_shm://rpcrdma_%u", port);
}

/* The named endpoint for port p, its name claimed first (a live listener keeps it; a
 * dead one's region is removed: shm_life.c). */
static int rdm_listen_on(struct fab_prov *fp, uint16_t p, struct fab_listener *l)
{
	struct fi_info *info;
	int rc;

	rdm_listener_name(p, l->name, sizeof(l->name));
	rc = rpcrdma__shm_name_claim(l->name, &l->lockfd);
	if (rc)
		return rc;
	info = fi_dupinfo(fp->info);
	if (!info)
		rc = -RPCRDMA_ERR_NOMEM;
	else
		rc = rpcrdma__fab_ep_open(fp, info, l->name, NULL, &l->lep);
	fi_freeinfo(info);
	if (rc) {
		rpcrdma__shm_name_release(l->name, l->lockfd);
		l->lockfd = -1;
	}
	return rc == -RPCRDMA_ERR_IO ? -RPCRDMA_ERR_ADDR : rc;
}

/* A doorbell named after `name` and an epoll set over it; the set, or -1 (and no
 * doorbell) when either cannot be made. */
static int bell_epoll(struct rpcrdma__bell *b, const void *name, size_t len)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int epfd;

	if (rpcrdma__bell_open(b, name, len))
		return -1;
	epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = b->rx;
	if (epfd >= 0 && epoll_ctl(epfd, EPOLL_CTL_ADD, b->rx, &ev) == 0)
		return epfd;
	if (epfd >= 0)
		close(epfd);
	rpcrdma__bell_close(b);
	return -1;
}

/* Clients ring it after posting their CONNREQ (rpcrdma__fab_ctrl_send): the listener's
 * descriptor (rpcrdma_listener_fd), so that a server with nothing to do sleeps. */
static void listener_bell(struct fab_listener *l)
{
	l->epfd = bell_epoll(&l->bell, l->name, strlen(l->name));
}

/* 0 when nothing rang since the last look: a client knocks after its CONNREQ is in the
 * listener's queue (and while its post waits), so a knock read here means one more look. */
int rpcrdma__fab_rdm_listener_arm(struct fab_listener *l)
{
	if (l->epfd < 0)
		return -RPCRDMA_ERR_NOPROV;
	return rpcrdma__bell_drain(&l->bell) ? -RPCRDMA_ERR_AGAIN : 0;
}

int rpcrdma__fab_rdm_listen(struct fab_prov *fp, uint16_t port, struct fab_listener *l)
{
	int rc = 0, tries;

	rpcrdma__shm_reap();
	for (tries = 0; tries < 32; tries++) {
		uint16_t p = port ? port : (uint16_t)(49152 + rpcrdma__key_new(&fp->keys) % 16384);

		rc = rdm_listen_on(fp, p, l);
		if (!rc) {
			l->base.port = p;
			break;
		}
		if (port)
			return rc;
	}
	if (rc)
		return rc;
	l->lep->base.connected = 1;
	rc = ctrl_setup(l->lep);
	if (!rc)
		wd_watch_own(l->lep);
	if (!rc)
		listener_bell(l);
	return rc;
}

/* Wait for a control message of one of the wanted types (a bit per type); others are
 * dropped. The view points into the receive buffer: the caller copies what it needs,
 * then re-posts the receive. Requests and acceptances must name their sender. */
static int ctrl_wait(struct fab_ep *e, int timeout_ms, uint32_t want, struct ctrl_view *v)
{
	/* a poll (timeout 0, a server's every round) reads no clock */
	int64_t deadline = timeout_ms > 0 ? rpcrdma__now_ms() + timeout_ms : 0;
	struct fi_cq_msg_entry ent;
	unsigned spins = 0;

	for (;;) {
		ssize_t n;

		busy_begin(e);
		n = fi_cq_read(e->cq, &ent, 1);
		busy_end(e);

		if (n == 1 && ent.op_context == &e->ctrl.fctx) {
			if (ctrl_decode(e->ctrl.buf, ent.len, v) == 0 && v->type < 32 &&
			    (want & (1u << v->type)) &&
			    (v->name_len > 0 || (v->type != CTRL_CONNREQ && v->type != CTRL_ACCEPT)))
				return 0;
			ctrl_post_recv(e);
		} else if (n == -FI_EAVAIL) {
			rpcrdma__fab_cq_error(e, NULL);
		}
		if (!timeout_ms || (deadline && rpcrdma__now_ms() >= deadline))
			return -RPCRDMA_ERR_TIMEDOUT;
		rpcrdma__fab_backoff(&spins);
	}
}

int rpcrdma__fab_rdm_get(struct fab_listener *l, int timeout_ms, struct fab_connreq *r)
{
	struct ctrl_view v;
	int rc = ctrl_wait(l->lep, timeout_ms, 1u << CTRL_CONNREQ, &v);

	if (rc)
		return rc;
	memcpy(r->name, v.name, v.name_len);
	r->name_len = v.name_len;
	r->pid = v.pid;
	rpcrdma__fab_copy_pdata(r->base.pdata, &r->base.pdata_len, v.pdata, v.pdata_len);
	ctrl_post_recv(l->lep);
	return 0;
}

/* The endpoint's doorbell socket and the epoll set over it (rpcrdma_ep_fd). Without
 * them the endpoint polls, as it did before there was a doorbell. */
static void bell_setup(struct fab_ep *e)
{
	char name[CTRL_NAME_MAX];
	size_t len = sizeof(name);

	if (!fi_getname(&e->ep->fid, name, &len))
		e->epfd = bell_epoll(&e->bell, name, len);
}

/* The peer process, once known: its end wakes a side asleep (a pidfd is readable then;
 * without one the endpoint does not sleep, rpcrdma__fab_arm). */
static void watch_peer(struct fab_ep *e, uint32_t pid)
{
	struct epoll_event ev = { .events = EPOLLIN };

	e->pidfd = rpcrdma__pid_watch(pid);
	e->peer_pid = pid;
	ev.data.fd = e->pidfd;
	if (e->epfd >= 0 && e->pidfd >= 0)
		epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->pidfd, &ev);
}

/* Acceptor: reach the client's doorbell, then make the page ACCEPT names; failing either,
 * ACCEPT names none and both sides poll. */
static void bell_offer(struct fab_ep *e, const void *client, size_t len)
{
	char page[RPCRDMA__BELL_FILE_MAX];

	if (e->epfd >= 0 && rpcrdma__bell_connect(&e->bell, client, len) == 0)
		rpcrdma__bell_share(&e->bell, page, sizeof(page));
}

/* Connector: the page ACCEPT named, and the server's doorbell. */
static void bell_take(struct fab_ep *e, const struct ctrl_view *v)
{
	if (e->epfd < 0 || !v->bell)
		return;
	if (rpcrdma__bell_connect(&e->bell, v->name, v->name_len) ||
	    rpcrdma__bell_join(&e->bell, v->bell, v->bell_len))
		rpcrdma_log(RPCRDMA_LOG_INFO, "shm: the server's doorbell is out of reach: this "
			    "connection polls");
}

static int rdm_new_ep(struct fab_prov *fp, struct fab_ep **out)
{
	struct fi_info *info = fi_dupinfo(fp->info);
	int rc;

	if (!info)
		return -RPCRDMA_ERR_NOMEM;
	rc = rpcrdma__fab_ep_open(fp, info, NULL, NULL, out);
	fi_freeinfo(info);
	if (!rc)
		rc = ctrl_setup(*out);
	if (!rc) {
		wd_watch_own(*out);
		bell_setup(*out);
	}
	if (rc && *out) {
		rpcrdma__fab_ep_free(*out);
		*out = NULL;
	}
	return rc;
}

/* A new shm endpoint creates and initialises its shared region (16 MiB with libfabric
 * 1.17's defaults): about 3 ms of page faults here, on each side of a connection. The
 * listener makes the endpoint of its next connection while the server is idle, so an
 * accept finds it ready. */
int rpcrdma__fab_rdm_prepare(struct rpcrdma_listener *base)
{
	struct fab_listener *l = (struct fab_listener *)base;

	if (!l->lep || l->spare)
		return 0;
	return rdm_new_ep(l->fp, &l->spare);
}

int rpcrdma__fab_rdm_accept(struct fab_connreq *r, const void *pdata, size_t len, int timeout_ms,
			    struct fab_ep **out)
{
	struct fab_ep *e = r->l->spare;
	int rc = 0;

	/* a client killed after its request: nothing to accept */
	if (rpcrdma__proc_gone(-1, r->pid))
		return -RPCRDMA_ERR_DISCONN;
	park_sweep();
	r->l->spare = NULL;
	if (!e)
		rc = rdm_new_ep(r->l->fp, &e);
	if (!rc) {
		watch_peer(e, r->pid);
		rc = av_insert_name(e, r->name, r->name_len, &e->peer);
	}
	if (!rc) {
		wd_watch_peer(e, r->name, r->name_len, r->pid);
		bell_offer(e, r->name, r->name_len);
	}
	if (!rc)
		rc = rpcrdma__fab_ctrl_send(e, e->peer, CTRL_ACCEPT, pdata, len, timeout_ms < 0 ? 10000 : timeout_ms,
			       e->pidfd, e->peer_pid);
	if (rc) {
		if (e)
			rdm_drop(e);
		return rc;
	}
	e->base.connected = 1;
	*out = e;
	return 0;
}

void rpcrdma__fab_rdm_reject(struct fab_connreq *r, const void *pdata, size_t len)
{
	fi_addr_t to;

	int pidfd;

	if (rpcrdma__proc_gone(-1, r->pid) ||
	    av_insert_name(r->l->lep, r->name, r->name_len, &to))
		return;
	pidfd = rpcrdma__pid_watch(r->pid);
	rpcrdma__fab_ctrl_send(r->l->lep, to, CTRL_REJECT, pdata ? pdata : REJECT_MARK, pdata ? len : 4, 1000,
		  pidfd, r->pid);
	if (pidfd >= 0)
		close(pidfd);
}

int rpcrdma__fab_rdm_connect(struct fab_prov *fp, uint16_t port, const void *pdata, size_t len,
			     int timeout_ms, struct fab_ep **out)
{
	struct fab_ep *e = NULL;
	struct ctrl_view v;
	fi_addr_t listener;
	char name[40];
	int rc;

	rpcrdma__shm_reap();
	if (park_blocks(port, &timeout_ms))
		return -RPCRDMA_ERR_REFUSED;   /* as below: our request is still not taken */
	rdm_listener_name(port, name, sizeof(name));
	/* no region of that name: no listener, live or dead, so nobody could take a request
	 * (as a TCP port with nothing bound refuses at once); a stale one is found out by
	 * the wait below */
	if (!rpcrdma__shm_name_exists(name))
		return -RPCRDMA_ERR_REFUSED;
	rc = rdm_new_ep(fp, &e);
	if (rc)
		return rc;
	e->pending_port = port;
	rc = av_insert_name(e, name, strlen(name), &listener);
	if (!rc) {
		wd_watch_peer(e, name, strlen(name), 0);
		if (e->epfd >= 0)
			rpcrdma__bell_connect(&e->bell, name, strlen(name));   /* the listener's */
	}
	if (!rc)
		rc = rpcrdma__fab_ctrl_send(e, listener, CTRL_CONNREQ, pdata, len, timeout_ms < 0 ? 10000 : timeout_ms,
			       -1, 0);
	if (rc == -RPCRDMA_ERR_TIMEDOUT)
		rc = -RPCRDMA_ERR_REFUSED;  /* nobody took our request off the wire */
	if (!rc)
		rc = ctrl_wait(e, timeout_ms, 1u << CTRL_ACCEPT | 1u << CTRL_REJECT, &v);
	if (!rc && v.type == CTRL_REJECT)
		rc = -RPCRDMA_ERR_REJECTED;
	if (!rc)
		rc = av_insert_name(e, v.name, v.name_len, &e->peer);
	if (rc) {
		rdm_drop(e);
		return rc;
	}
	rpcrdma__fab_copy_pdata(e->base.peer_pdata, &e->base.peer_pdata_len, v.pdata, v.pdata_len);
	watch_peer(e, v.pid);
	wd_watch_peer(e, v.name, v.name_len, v.pid);
	bell_take(e, &v);
	ctrl_post_recv(e);
	e->base.connected = 1;
	*out = e;
	return 0;
}

/* fabric_ep.c's calls into this file (fabric_int.h) */
const struct fab_ep_hooks rpcrdma__fab_rdm_hooks = {
	.ctrl = handle_ctrl,
	.unwatch = wd_unwatch,
};
