/* SPDX-License-Identifier: BSD-2-Clause */
/* The libfabric provider: completions, endpoints, waiting for work, posting, memory
 * registration, and the list of this process's shm endpoints (prov_fabric.c). */
#include <stddef.h>
#include <sys/eventfd.h>

#include "fabric_int.h"

/* ---- errors ---- */

int rpcrdma__fab_map_err(int fi_err)
{
	switch (fi_err < 0 ? -fi_err : fi_err) {
	case 0: return 0;
	case FI_EAGAIN: return -RPCRDMA_ERR_AGAIN;
	case FI_ENOMEM: return -RPCRDMA_ERR_NOMEM;
	case FI_ETIMEDOUT: return -RPCRDMA_ERR_TIMEDOUT;
	case FI_ECONNREFUSED: return -RPCRDMA_ERR_REFUSED;
	case FI_ECANCELED:
	case FI_ECONNRESET:
	case FI_ECONNABORTED:
	case FI_ENOTCONN:
	case FI_ESHUTDOWN: return -RPCRDMA_ERR_DISCONN;
	case FI_EACCES:
	case FI_EKEYREJECTED:
	case FI_EPERM: return -RPCRDMA_ERR_ACCESS;
	case FI_EINVAL: return -RPCRDMA_ERR_INVAL;
	case FI_EADDRNOTAVAIL:
	case FI_EADDRINUSE:
	case FI_EHOSTUNREACH:   /* no route: the address, not the peer, is the trouble */
	case FI_ENETUNREACH:
	case FI_EHOSTDOWN:
	case FI_ENETDOWN:
	case FI_ENODATA: return -RPCRDMA_ERR_ADDR;
	default: return -RPCRDMA_ERR_IO;
	}
}

void rpcrdma__fab_set_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
	if (err && errlen)
		snprintf(err, errlen, fmt, a, b);
}

/* ---- completions ---- */

static void peer_check(struct fab_ep *e, struct rpcrdma__sink *s);

/* The endpoint whose operation a completion names. */
static struct fab_ep *owner_of(void *op_context)
{
	struct rpcrdma__op *op = ((struct rpcrdma__piece *)op_context)->op;

	return (struct fab_ep *)(void *)((char *)op->q - offsetof(struct fab_ep, q));
}

/* A completion went to o's stash while o may be asleep on its descriptor (armed, on a
 * shared queue): its wake_fd wakes it. Not when this thread armed it: it is awake, and
 * polls or arms o again (which sees the stash) before it sleeps — a server's progress
 * thread draining the listener after a sleep paid a write and a read of the eventfd per
 * call. Under sh's lock. */
static void wake_owner(struct fab_ep *o)
{
	uint64_t one = 1;

	if (o->armed && !o->signalled && !pthread_equal(o->armer, pthread_self()))
		o->signalled = write(o->wake_fd, &one, sizeof(one)) == (ssize_t)sizeof(one);
}

/* A piece completed on e's queue: to s when it is e's and s is given, else to its owner's
 * stash, and then, on a shared queue, the owner woken if it may be asleep on its
 * descriptor (rpcrdma__fab_arm): another endpoint's drain, or the listener's
 * (rpcrdma_listener_drain, which drains through one of its endpoints with no sink). */
static void complete_piece(struct fab_ep *e, void *op_context, int status, uint32_t len,
			   struct rpcrdma__sink *s)
{
	struct fab_ep *o = e->sh ? owner_of(op_context) : e;
	struct rpcrdma__sink *to = o == e ? s : NULL;

	rpcrdma__piece_done(&o->q, (struct rpcrdma__piece *)op_context, status, len, to);
	if (!to && e->sh)
		wake_owner(o);
}

/* Its completions are read by its listener's owner (rpcrdma_listener_drain), not by its
 * own polls: while it is on a listener that drains. Under sh's lock. */
static bool drained_for(const struct fab_ep *e)
{
	return e->sh && e->sh->drained_by_listener && e->lst;
}

void rpcrdma__fab_cq_error(struct fab_ep *e, struct rpcrdma__sink *s)
{
	struct fi_cq_err_entry err;

	memset(&err, 0, sizeof(err));
	if (fi_cq_readerr(e->cq, &err, 0) != 1)
		return;
	if (err.op_context == &e->ctrl.fctx || err.op_context == &e->ctrl.tx_fctx)
		return;  /* control traffic of an endpoint being torn down */
	/* libfabric's tcp reports some connection failures with no operation attached (a
	 * peer killed mid-transfer): the connection is gone, after this batch */
	if (!err.op_context && e->sh) {
		/* whose is unknown on a shared queue: the connection's own event (FI_SHUTDOWN
		 * on its EQ) and its failed operations end it */
		rpcrdma_log(RPCRDMA_LOG_INFO, "%s: connection error on a shared queue: %s",
			    e->fp->base.caps.name, fi_strerror(err.err));
		return;
	}
	if (!err.op_context) {
		rpcrdma_log(RPCRDMA_LOG_INFO, "%s: connection error: %s",
			    e->fp->base.caps.name, fi_strerror(err.err));
		e->peer_gone = 1;
		return;
	}
	/* the provider's own words for it, which our error code cannot carry */
	if (rpcrdma_log_level() >= RPCRDMA_LOG_WARN && err.err != FI_ECANCELED) {
		char buf[128];
		const char *why = fi_cq_strerror(e->cq, err.prov_errno, err.err_data, buf,
						 sizeof(buf));

		rpcrdma_log(RPCRDMA_LOG_WARN, "%s: operation failed: %s (%s)",
			    e->fp->base.caps.name, fi_strerror(err.err), why ? why : "");
	}
	complete_piece(e, err.op_context, rpcrdma__fab_map_err(err.err), 0, s);
}

/* ---- peers in this process ----
 * With both ends of a shm connection in one process (a program that calls itself),
 * libfabric's shm (1.17; 2.1 too: smr_map_to_region() takes the region of an endpoint
 * of the same process from its list) reaches the peer's region through that endpoint's
 * mapping, which goes when that endpoint is closed: a post or a completion after that touches
 * unmapped memory. So this process keeps a list of its live shm endpoints; an endpoint
 * whose peer is one of them holds the list's read lock around each libfabric call and
 * goes ahead only while the peer is listed, and an endpoint leaves the list (write lock,
 * so no such call is under way) before libfabric frees its region. */
static pthread_rwlock_t local_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct fab_ep *local_eps;

void rpcrdma__fab_local_add(struct fab_ep *e)
{
	e->own_name_len = sizeof(e->own_name);
	if (fi_getname(&e->ep->fid, e->own_name, &e->own_name_len) ||
	    e->own_name_len > sizeof(e->own_name))
		return;
	pthread_rwlock_wrlock(&local_lock);
	e->local_next = local_eps;
	local_eps = e;
	e->local_listed = 1;
	pthread_rwlock_unlock(&local_lock);
}

static void local_remove(struct fab_ep *e)
{
	struct fab_ep **pp;

	if (!e->local_listed)
		return;
	pthread_rwlock_wrlock(&local_lock);
	for (pp = &local_eps; *pp; pp = &(*pp)->local_next) {
		if (*pp == e) {
			*pp = e->local_next;
			break;
		}
	}
	e->local_listed = 0;
	pthread_rwlock_unlock(&local_lock);
}

void rpcrdma__fab_local_peer_set(struct fab_ep *e, const void *name, size_t len, uint32_t pid)
{
	if (pid != (uint32_t)getpid() || len > sizeof(e->peer_name))
		return;
	memcpy(e->peer_name, name, len);
	e->peer_name_len = len;
	e->peer_local = 1;
}

/* Before a libfabric call on e: 0 to go ahead (then rpcrdma__fab_local_leave() after it), -1 when
 * the peer, in this process, has closed. */
int rpcrdma__fab_local_enter(struct fab_ep *e)
{
	struct fab_ep *p;

	if (!e->peer_local)
		return 0;
	pthread_rwlock_rdlock(&local_lock);
	for (p = local_eps; p; p = p->local_next)
		if (p->own_name_len == e->peer_name_len &&
		    !memcmp(p->own_name, e->peer_name, e->peer_name_len))
			return 0;
	pthread_rwlock_unlock(&local_lock);
	return -1;
}

void rpcrdma__fab_local_leave(struct fab_ep *e)
{
	if (e->peer_local)
		pthread_rwlock_unlock(&local_lock);
}

/* Read the CQ until it is empty; completions go to s first, the stash after (another
 * endpoint's, on a shared queue, to that endpoint's stash). A peer's
 * DISCONNECT is acted on only after the whole batch: tearing down frees the outstanding
 * ops, and later entries of the same batch may still name them. */
void rpcrdma__fab_cq_drain(struct fab_ep *e, struct rpcrdma__sink *s)
{
	struct fi_cq_msg_entry ent[CQ_BATCH];
	ssize_t n, i;

	while (e->cq) {
		if (e->peer_gone) {
			e->peer_gone = 0;
			rpcrdma__fab_lose_connection(e, s);
		}
		if (e->ep && rpcrdma__fab_local_enter(e)) {
			if (!e->base.connected)
				return;   /* being torn down already (rpcrdma__fab_lose_connection) */
			rpcrdma__fab_lose_connection(e, s);
			continue;
		}
		busy_begin(e);
		n = fi_cq_read(e->cq, ent, CQ_BATCH);
		busy_end(e);
		if (e->sh && n != -FI_EAGAIN)
			e->sh->armed = false;   /* what it took may have left the fd signalled */
		if (e->ep)
			rpcrdma__fab_local_leave(e);
		if (n == -FI_EAVAIL) {
			rpcrdma__fab_cq_error(e, s);
			continue;
		}
		if (n <= 0)
			return;
		for (i = 0; i < n; i++) {
			if (ent[i].op_context == &e->ctrl.fctx && e->fp->hooks)
				e->fp->hooks->ctrl(e, ent[i].len);
			else if (ent[i].op_context == &e->ctrl.tx_fctx)
				continue;  /* a control send finishing late */
			else if (ent[i].op_context)   /* none is ours without one */
				complete_piece(e, ent[i].op_context, 0, (uint32_t)ent[i].len, s);
		}
		/* a short batch emptied the queue: on a live connection, what comes next is for
		 * the next poll (reading again to find it empty was a whole fi_cq_read, locks
		 * and all, per message received); a closing one is drained to the end */
		if (n < CQ_BATCH && e->base.connected)
			return;
	}
}

/* What the shared event queue said of one of its endpoints, kept on it (the endpoint is
 * live: libfabric removes an endpoint's events from its queue when it is closed), and
 * its owner woken if it sleeps. */
static void sheq_event(struct fab_ep *e, uint32_t event, const struct fi_eq_cm_entry *ent,
		       size_t len)
{
	if (event == FI_CONNECTED) {
		e->ev_connected = true;
		rpcrdma__fab_copy_pdata(e->base.peer_pdata, &e->base.peer_pdata_len, ent + 1,
					len > sizeof(*ent) ? len - sizeof(*ent) : 0);
	} else if (event == FI_SHUTDOWN) {
		e->ev_lost = true;
	}
	wake_owner(e);
}

/* Every event in sh's queue to the endpoint it names. Under sh's lock. */
void rpcrdma__fab_sheq_drain(struct fab_shcq *sh)
{
	struct fab_cm_buf buf;
	struct fi_eq_err_entry err;
	uint32_t event;
	ssize_t rc;

	sh->eq_due = false;
	sh->eq_looked = rpcrdma__coarse_ms();
	for (;;) {
		rpcrdma__fab_clear_errno();
		rc = fi_eq_read(sh->eq, &event, &buf, sizeof(buf), 0);
		if (rc == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_eq_readerr(sh->eq, &err, 0) < 0)
				return;
			if (err.fid && err.fid->context) {
				struct fab_ep *e = err.fid->context;

				e->ev_err = err.err ? err.err : FI_EIO;
				wake_owner(e);
			}
		} else if (rc >= (ssize_t)sizeof(buf.ent)) {
			if (buf.ent.fid && buf.ent.fid->context)
				sheq_event(buf.ent.fid->context, event, &buf.ent, (size_t)rc);
		} else {
			return;
		}
	}
}

/* Read at most once per every_ms, unless an arm found it pending. Under sh's lock. */
void rpcrdma__fab_sheq_look(struct fab_shcq *sh, int64_t every_ms)
{
	if (sh->eq_due || rpcrdma__coarse_ms() - sh->eq_looked >= every_ms)
		rpcrdma__fab_sheq_drain(sh);
}

/* A connection's event queue has news only when the connection ends, but each read of
 * it costs a system call (libfabric tcp runs its progress, an epoll_wait): a polled
 * connection reads it at most once per EQ_LOOK_MS of the coarse clock (so once per tick
 * of it, 1-10 ms: a connection lost while busy is seen that much later). The
 * connections a listener accepted share one queue (struct fab_shcq) with one clock:
 * while the listener drains it (once per EQ_LOOK_MS), their own polls look only once
 * per EQ_LOOK_SHARED_MS. Before sleeping, fi_trywait covers it; when that found it
 * pending (arm_locked), the next poll reads it whatever the time. */
static void eq_check(struct fab_ep *e, struct rpcrdma__sink *s)
{
	struct fi_eq_cm_entry ent;
	uint32_t event;
	int64_t now, every;
	ssize_t rc;

	every = drained_for(e) ? EQ_LOOK_SHARED_MS : EQ_LOOK_MS;
	if (e->sh && e->sh->eq && e->ep) {
		rpcrdma__fab_sheq_look(e->sh, every);
		if (e->ev_lost || e->ev_err)
			rpcrdma__fab_lose_connection(e, s);
		return;
	}
	if (!e->eq || !e->ep)
		return;
	now = rpcrdma__coarse_ms();
	if (!e->eq_due && now - e->eq_looked < every)
		return;
	e->eq_looked = now;
	e->eq_due = 0;
	rpcrdma__fab_clear_errno();
	rc = fi_eq_read(e->eq, &event, &ent, sizeof(ent), 0);
	if (rc != -FI_EAGAIN)
		e->eq_armed = false;   /* what it took may have left the fd signalled */
	if (rc == -FI_EAVAIL) {
		struct fi_eq_err_entry err;

		memset(&err, 0, sizeof(err));
		fi_eq_readerr(e->eq, &err, 0);
		rpcrdma__fab_lose_connection(e, s);
	} else if (rc >= 0 && event == FI_SHUTDOWN) {
		rpcrdma__fab_lose_connection(e, s);
	}
}

/* The connection is gone: let libfabric finish what it can, close the endpoint so it
 * touches nothing more, then complete everything still outstanding with DISCONN. */
void rpcrdma__fab_lose_connection(struct fab_ep *e, struct rpcrdma__sink *s)
{
	if (!e->ep)
		return;
	e->base.connected = 0;
	rpcrdma__fab_cq_drain(e, s);
	if (!e->ep)
		return;   /* the drain met the peer's DISCONNECT and ended it already (both
			     sides closing at once) */
	local_remove(e);
	fi_close(&e->ep->fid);
	e->ep = NULL;
	rpcrdma__fab_cq_drain(e, s);
	rpcrdma__opq_fail_all(&e->q, s);
}

/* ---- endpoints: creation ---- */

int rpcrdma__fab_add_wait_fd(int epfd, struct fid *fid)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd;

	if (fi_control(fid, FI_GETWAIT, &fd))
		return -1;
	ev.data.fd = fd;
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int add_event_fd(struct fab_ep *e)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = e->wake_fd };

	return epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->wake_fd, &ev);
}

/* Sized for one endpoint's operations; a shared queue's overflow is libfabric's to hold. */
static int open_cq(struct fab_prov *fp, struct fid_cq **cq)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_FD };

	attr.size = fp->base.caps.tx_depth + fp->base.caps.rx_depth + 8;
	if (fp->base.caps.has_fd && fi_cq_open(fp->domain, &attr, cq, NULL) == 0)
		return 0;
	attr.wait_obj = FI_WAIT_NONE;
	return rpcrdma__fab_map_err(fi_cq_open(fp->domain, &attr, cq, NULL));
}

/* With a wait fd where the provider's queues have one (as open_cq). */
static int open_eq(struct fab_prov *fp, struct fid_eq **eq)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_FD };

	if (fp->base.caps.has_fd && fi_eq_open(fp->fabric, &attr, eq, NULL) == 0)
		return 0;
	attr.wait_obj = FI_WAIT_NONE;
	return rpcrdma__fab_map_err(fi_eq_open(fp->fabric, &attr, eq, NULL));
}

int rpcrdma__fab_shcq_open(struct fab_prov *fp, struct fab_shcq **out)
{
	struct fab_shcq *sh = calloc(1, sizeof(*sh));
	pthread_mutexattr_t ma;
	int rc;

	if (!sh)
		return -RPCRDMA_ERR_NOMEM;
	rc = open_cq(fp, &sh->cq);
	if (rc) {
		free(sh);
		return rc;
	}
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&sh->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	sh->refs = 1;
	if (!fp->base.caps.has_fd || fi_control(&sh->cq->fid, FI_GETWAIT, &sh->fd))
		sh->fd = -1;
	sh->eq_fd = -1;
	rc = open_eq(fp, &sh->eq);
	if (rc) {
		rpcrdma__fab_shcq_put(sh);
		return rc;
	}
	if (fp->base.caps.has_fd && fi_control(&sh->eq->fid, FI_GETWAIT, &sh->eq_fd))
		sh->eq_fd = -1;
	*out = sh;
	return 0;
}

/* The queue goes with its last user, after every endpoint on it is closed. */
void rpcrdma__fab_shcq_put(struct fab_shcq *sh)
{
	unsigned left;

	if (!sh)
		return;
	pthread_mutex_lock(&sh->lock);
	left = --sh->refs;
	pthread_mutex_unlock(&sh->lock);
	if (left)
		return;
	if (sh->eq)
		fi_close(&sh->eq->fid);
	fi_close(&sh->cq->fid);
	pthread_mutex_destroy(&sh->lock);
	free(sh);
}

static int share_cq(struct fab_ep *e, struct fab_shcq *sh)
{
	pthread_mutex_lock(&sh->lock);
	sh->refs++;
	pthread_mutex_unlock(&sh->lock);
	e->sh = sh;
	e->cq = sh->cq;
	e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return e->wake_fd < 0 ? -RPCRDMA_ERR_IO : 0;
}

static struct fab_ep *ep_alloc(struct fab_prov *fp)
{
	struct fab_ep *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->base.prov = &fp->base;
	e->fp = fp;
	e->epfd = -1;
	e->pidfd = -1;
	e->wake_fd = -1;
	rpcrdma__bell_init(&e->bell);
	if (rpcrdma__opq_init(&e->q, fp->base.caps.tx_depth, fp->base.caps.rx_depth)) {
		free(e);
		return NULL;
	}
	return e;
}

void rpcrdma__fab_lst_unlink(struct fab_ep *e)
{
	if (!e->lst)
		return;
	if (e->lst_prev)
		e->lst_prev->lst_next = e->lst_next;
	else
		e->lst->accepted = e->lst_next;
	if (e->lst_next)
		e->lst_next->lst_prev = e->lst_prev;
	e->lst = NULL;
}

/* Its listener is closing: from now on its own descriptor carries its completions. */
void rpcrdma__fab_orphan(struct fab_ep *e)
{
	struct epoll_event ev = { .events = EPOLLIN };

	sh_lock(e);
	rpcrdma__fab_lst_unlink(e);
	if (e->sh && e->sh->fd >= 0 && e->epfd >= 0) {
		ev.data.fd = e->sh->fd;
		epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->sh->fd, &ev);
	}
	/* each orphan holds it: Linux's bound on nested sets (struct fab_shcq) applies again,
	 * to a server that closed its listener and serves on */
	if (e->sh && e->sh->eq_fd >= 0 && e->epfd >= 0) {
		ev.data.fd = e->sh->eq_fd;
		epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->sh->eq_fd, &ev);
	}
	sh_unlock(e);
}

/* The address vector of an endpoint whose peer was in this process is never closed.
 * libfabric's shm (1.17, 2.1) reaches such a peer through that peer's own mapping of its
 * region, and closing the AV after the peer has closed unmaps through a stale pointer: a read of
 * freed memory (test_backchannel crashed in 1-7% of runs), or, once the range is mapped
 * again, another endpoint's region unmapped. Kept here, reachable, for the process's life
 * (its table of peers each); only programs that connect to themselves pay it. */
struct kept_av {
	struct fid_av *av;
	struct kept_av *next;
};
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept_av *kept_avs;

static void close_av(struct fab_ep *e)
{
	struct kept_av *k = e->peer_local ? malloc(sizeof(*k)) : NULL;

	if (!k) {
		fi_close(&e->av->fid);
		return;
	}
	k->av = e->av;
	pthread_mutex_lock(&kept_lock);
	k->next = kept_avs;
	kept_avs = k;
	pthread_mutex_unlock(&kept_lock);
}

/* On a shared queue, what closing the endpoint flushed is read before its operations are
 * freed: nothing left in the queue may name them. */
void rpcrdma__fab_ep_free(struct fab_ep *e)
{
	struct fab_shcq *sh = e->sh;

	sh_lock(e);
	if (e->fp->hooks)
		e->fp->hooks->unwatch(e);
	rpcrdma__fab_lst_unlink(e);
	local_remove(e);
	if (e->ep) {
		fi_close(&e->ep->fid);
		e->ep = NULL;
		if (sh)
			rpcrdma__fab_cq_drain(e, NULL);
	}
	if (e->ctrl.mr)
		rpcrdma__fab_mr_dereg(&e->ctrl.mr->base);
	if (e->av)
		close_av(e);
	if (e->cq && !sh)
		fi_close(&e->cq->fid);
	if (e->wake_fd >= 0)
		close(e->wake_fd);
	if (e->eq)
		fi_close(&e->eq->fid);
	if (e->epfd >= 0)
		close(e->epfd);
	if (e->pidfd >= 0)
		close(e->pidfd);
	rpcrdma__bell_close(&e->bell);
	rpcrdma__opq_free(&e->q);
	free(e);
	if (sh) {
		pthread_mutex_unlock(&sh->lock);
		rpcrdma__fab_shcq_put(sh);
	}
}

/* The provider's own objects; the last of its parked endpoints (fabric_rdm.c) frees
 * them when the provider was closed first. */
void rpcrdma__fab_prov_free(struct fab_prov *fp)
{
	void *m;

	while ((m = rpcrdma__spares_get(&fp->spare_mrs)) != NULL)
		free(m);
	if (fp->domain)
		fi_close(&fp->domain->fid);
	if (fp->fabric)
		fi_close(&fp->fabric->fid);
	if (fp->info)
		fi_freeinfo(fp->info);
	free(fp);
}

void rpcrdma__fab_copy_pdata(uint8_t *dst, size_t *dlen, const void *src, size_t len)
{
	*dlen = len > RPCRDMA_PDATA_MAX ? RPCRDMA_PDATA_MAX : len;
	if (*dlen)
		memcpy(dst, src, *dlen);
}

/* Endpoint, CQ (its own, or sh's) and (MSG) EQ or (RDM) AV, bound and enabled; the wait
 * fds in an epoll. name (RDM listeners) is set as the endpoint's address before it is
 * enabled. */
int rpcrdma__fab_ep_open(struct fab_prov *fp, struct fi_info *info, const char *name,
			 struct fab_shcq *sh, struct fab_ep **out)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_FD };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct fab_ep *e = ep_alloc(fp);
	int rc;

	if (!e)
		return -RPCRDMA_ERR_NOMEM;
	rc = sh ? share_cq(e, sh) : open_cq(fp, &e->cq);
	if (rc)
		goto out_free;
	rc = rpcrdma__fab_map_err(fi_endpoint(fp->domain, info, &e->ep, e));
	if (rc)
		goto out_free;
	rc = rpcrdma__fab_map_err(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV));
	if (rc)
		goto out_free;
	if (fp->rdm) {
		rc = rpcrdma__fab_map_err(fi_av_open(fp->domain, &ava, &e->av, NULL));
		if (!rc)
			rc = rpcrdma__fab_map_err(fi_ep_bind(e->ep, &e->av->fid, 0));
	} else if (sh) {
		rc = rpcrdma__fab_map_err(fi_ep_bind(e->ep, &sh->eq->fid, 0));
	} else {
		rc = rpcrdma__fab_map_err(fi_eq_open(fp->fabric, &eqa, &e->eq, NULL));
		if (!rc)
			rc = rpcrdma__fab_map_err(fi_ep_bind(e->ep, &e->eq->fid, 0));
	}
	if (!rc && name)
		rc = rpcrdma__fab_map_err(fi_setname(&e->ep->fid, (void *)name, strlen(name) + 1));
	if (rc)
		goto out_free;
	rc = rpcrdma__fab_map_err(fi_enable(e->ep));
	if (rc)
		goto out_free;
	if (fp->base.caps.has_fd) {
		e->epfd = epoll_create1(EPOLL_CLOEXEC);
		/* a shared queue's descriptor wakes the listener's (rpcrdma__fab_ep_fd) */
		if (e->epfd < 0 || (!sh && rpcrdma__fab_add_wait_fd(e->epfd, &e->cq->fid)) ||
		    (e->eq && rpcrdma__fab_add_wait_fd(e->epfd, &e->eq->fid)) ||
		    (sh && add_event_fd(e))) {
			rc = -RPCRDMA_ERR_IO;
			goto out_free;
		}
	}
	*out = e;
	return 0;
out_free:
	rpcrdma__fab_ep_free(e);
	return rc;
}

/* ---- waiting ---- */

/* Without a wait fd (shm) the only way to progress is to poll, and the target of an
 * RDMA operation moves it only while it polls, though it sees no completion of its own.
 * So a wait yields the CPU without sleeping for its first BUSY_MS, which covers any
 * exchange in progress, and only then sleeps briefly between polls (an idle peer). */
#define BUSY_MS 100

void rpcrdma__fab_backoff(unsigned *spins)
{
	static __thread int64_t busy_until;
	struct timespec ts = { 0, 20000 };

	if (*spins == 0)
		busy_until = rpcrdma__now_ms() + BUSY_MS;
	if (++*spins < 64 || rpcrdma__now_ms() < busy_until) {
		sched_yield();
		return;
	}
	nanosleep(&ts, NULL);
}

/* The owner is awake: a wake-up meant for its sleep is spent (shm: no longer marked
 * asleep, rings read). Under sh's lock. */
static void awake(struct fab_ep *e)
{
	uint64_t v;

	if (e->armed && e->fp->rdm)
		rpcrdma__bell_disarm(&e->bell);
	e->armed = 0;
	if (e->signalled && read(e->wake_fd, &v, sizeof(v)) >= 0)
		e->signalled = 0;
}

/* An emulated (shm) connection sleeps on its doorbell (shm_bell.c): marked asleep, it
 * looks for work once more; what its peer posts from then on rings it. Work it waits
 * for that only the peer's polling moves (its own RDMA operations, Sends still in
 * flight) keeps it awake, and rings the peer if that one sleeps. Without a doorbell, or
 * a pidfd to see the peer end, it cannot sleep (-RPCRDMA_ERR_NOPROV). */
static int rdm_arm_locked(struct fab_ep *e)
{
	if (e->epfd < 0 || e->pidfd < 0)
		return -RPCRDMA_ERR_NOPROV;
	if (e->q.stash.n || !e->ep || e->peer_gone)
		return -RPCRDMA_ERR_AGAIN;   /* nothing to mark: work, or no connection */
	if (rpcrdma__bell_arm(&e->bell))
		return -RPCRDMA_ERR_NOPROV;
	e->armed = 1;
	rpcrdma__fab_cq_drain(e, NULL);
	if (e->q.stash.n || !e->ep || e->peer_gone || e->q.tx_used) {
		if (e->q.tx_used)
			rpcrdma__bell_ring(&e->bell);
		awake(e);
		return -RPCRDMA_ERR_AGAIN;
	}
	return 0;
}

/* 0 when nothing is pending that the descriptor would not signal. On a shared queue
 * the endpoint is then armed: a completion another thread drains for it writes its
 * wake_fd. Under sh's lock. */
static int arm_locked(struct fab_ep *e)
{
	struct fid *fids[3];
	bool try_cq, try_eq, try_sheq;
	int n = 0;

	if (e->fp->rdm)
		return rdm_arm_locked(e);
	if (e->q.stash.n || !e->ep || e->peer_gone || e->epfd < 0)
		return -RPCRDMA_ERR_AGAIN;
	try_cq = e->cq && !(e->sh && e->sh->armed);
	try_eq = e->eq && !e->eq_armed;
	/* the shared event queue: unless the listener's arm covers it */
	try_sheq = e->sh && e->sh->eq && !drained_for(e);
	if (try_cq)
		fids[n++] = &e->cq->fid;
	if (try_eq)
		fids[n++] = &e->eq->fid;
	if (try_sheq)
		fids[n++] = &e->sh->eq->fid;
	if (n && fi_trywait(e->fp->fabric, fids, n) != FI_SUCCESS) {
		e->eq_due = 1;   /* whichever of them has news */
		e->eq_armed = false;
		if (try_sheq)
			e->sh->eq_due = true;
		return -RPCRDMA_ERR_AGAIN;
	}
	if (e->sh && try_cq)
		e->sh->armed = true;
	e->eq_armed = e->eq != NULL;
	e->eq_skipped = e->eq && !try_eq;
	e->armed = e->sh != NULL;
	if (e->armed)
		e->armer = pthread_self();
	return 0;
}

/* The first look after an arm that left the event queue out of its try: when it found
 * no work, the queue is read now (struct fab_ep, eq_skipped). */
static void eq_after_arm(struct fab_ep *e, bool found)
{
	if (e->eq_skipped && !found)
		e->eq_due = 1;
	e->eq_skipped = false;
}

/* Under sh's lock, released while asleep. A shared queue's descriptor is not in epfd
 * (see rpcrdma__fab_ep_fd): it is polled beside it. 0 after a sleep; arm_locked's error
 * when it could not sleep. */
static int fd_wait(struct fab_ep *e, int timeout_ms)
{
	struct pollfd p[3] = { { .fd = e->epfd, .events = POLLIN },
			       { .fd = e->sh ? e->sh->fd : -1, .events = POLLIN },
			       { .fd = e->sh && !drained_for(e) ? e->sh->eq_fd : -1,
				 .events = POLLIN } };
	int n, rc = arm_locked(e);

	if (rc)
		return rc;
	sh_unlock(e);
	do
		n = poll(p, 3, timeout_ms);
	while (n < 0 && errno == EINTR);
	sh_lock(e);
	awake(e);
	return 0;
}

/* Its descriptor did not wake the sleeper: nothing it carries (the event queue) came. */
void rpcrdma__fab_slept(struct rpcrdma_ep *base, int fired)
{
	struct fab_ep *e = (struct fab_ep *)base;

	if (fired)
		return;
	sh_lock(e);
	e->eq_skipped = false;
	sh_unlock(e);
}

int rpcrdma__fab_arm(struct rpcrdma_ep *base)
{
	struct fab_ep *e = (struct fab_ep *)base;
	int rc;

	sh_lock(e);
	rc = arm_locked(e);
	sh_unlock(e);
	return rc;
}

static int wait_locked(struct fab_ep *e, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : rpcrdma__now_ms() + timeout_ms;
	unsigned spins = 0, naps = 0;

	for (;;) {
		rpcrdma__fab_cq_drain(e, NULL);
		eq_after_arm(e, e->q.stash.n != 0);
		eq_check(e, NULL);
		peer_check(e, NULL);
		if (e->q.stash.n)
			return 0;
		if (!e->ep)
			return -RPCRDMA_ERR_DISCONN;
		if (rpcrdma__now_ms() >= deadline)
			return -RPCRDMA_ERR_TIMEDOUT;
		if (e->epfd >= 0 && ++spins > SPIN_BEFORE_BLOCK) {
			int64_t left = deadline - rpcrdma__now_ms();

			if (fd_wait(e, left > 100 ? 100 : (int)(left < 0 ? 0 : left)) ==
			    -RPCRDMA_ERR_NOPROV)
				rpcrdma__fab_backoff(&naps);
		} else if (e->epfd < 0) {
			rpcrdma__fab_backoff(&spins);
		}
	}
}

int rpcrdma__fab_wait(struct rpcrdma_ep *base, int timeout_ms)
{
	struct fab_ep *e = (struct fab_ep *)base;
	int rc;

	sh_lock(e);
	rc = wait_locked(e, timeout_ms);
	sh_unlock(e);
	return rc;
}

/* An emulated connection's peer that ended without a word (SIGKILL) is gone all the
 * same: looked at every PEER_CHECK_MS while the endpoint is idle. */
static void peer_check(struct fab_ep *e, struct rpcrdma__sink *s)
{
	int64_t now;

	if ((e->pidfd < 0 && !e->peer_pid) || !e->ep)
		return;
	now = rpcrdma__coarse_ms();   /* as rpcrdma__fab_peer_alive_now reads it */
	if (now - e->peer_checked < PEER_CHECK_MS)
		return;
	e->peer_checked = now;
	if (rpcrdma__proc_gone(e->pidfd, e->peer_pid))
		rpcrdma__fab_lose_connection(e, s);
}

int rpcrdma__fab_poll(struct rpcrdma_ep *base, struct rpcrdma_cqe *out, int max)
{
	struct fab_ep *e = (struct fab_ep *)base;
	struct rpcrdma__sink s = { out, max, 0 };

	sh_lock(e);
	awake(e);
	/* completions kept from before (an injected Send's) are news enough for one poll:
	 * the completion queue is read at the next (a read is a system call over tcp) */
	s.n = rpcrdma__opq_pop(&e->q, out, max);
	if (s.n == 0 && !drained_for(e))
		rpcrdma__fab_cq_drain(e, &s);
	eq_after_arm(e, s.n != 0);
	if (s.n == 0) {
		eq_check(e, &s);
		if (s.n == 0)
			peer_check(e, &s);
	}
	sh_unlock(e);
	return s.n;
}

/* Its connection events and wake_fd; its completions too unless its queue is shared with
 * a live listener, whose descriptor has them (struct fab_shcq). */
int rpcrdma__fab_ep_fd(const struct rpcrdma_ep *base)
{
	return ((const struct fab_ep *)base)->epfd;
}

/* Connected endpoints know their peer's socket address; emulated ones (shm) do not. */
int rpcrdma__fab_peer_addr(struct rpcrdma_ep *base, void *addr, size_t *len)
{
	struct fab_ep *e = (struct fab_ep *)base;
	int rc;

	sh_lock(e);
	rc = !e->ep || e->av || fi_getpeer(e->ep, addr, len) ? -RPCRDMA_ERR_NOPROV : 0;
	sh_unlock(e);
	return rc;
}

/* Our name and the peer's: socket addresses on MSG endpoints, the emulated endpoint
 * names on RDM ones (the peer's from the address vector). */
int rpcrdma__fab_names(struct rpcrdma_ep *base, void *local, size_t *llen, void *peer,
		       size_t *plen)
{
	struct fab_ep *e = (struct fab_ep *)base;
	int rc;

	sh_lock(e);
	if (!e->ep || fi_getname(&e->ep->fid, local, llen))
		rc = -RPCRDMA_ERR_NOPROV;
	else if (e->av)
		rc = fi_av_lookup(e->av, e->peer, peer, plen) ? -RPCRDMA_ERR_NOPROV : 0;
	else
		rc = fi_getpeer(e->ep, peer, plen) ? -RPCRDMA_ERR_NOPROV : 0;
	sh_unlock(e);
	return rc;
}

/* ---- posting ---- */

/* shm keeps a spin lock in each process's shared region and takes the peer's to post to
 * it; a peer killed while holding its own lock (it does while it polls) would make every
 * later post to it spin forever. So a post to an emulated connection's peer first looks
 * whether that process still lives (at most once per tick of the coarse clock, 1-10 ms:
 * the look is a poll() system call, and once per post it was a third of each side's
 * time at 4 KiB; a precise clock read per post was another 25 ns), and a dead one ends
 * the connection instead. A peer killed between this look and the post
 * can still hold us, until the lock watchdog (fabric_rdm.c) releases the lock it died
 * with (docs/PROVIDERS.md). */
#define POST_PEER_CHECK_MS 1

int rpcrdma__fab_peer_alive_now(struct fab_ep *e)
{
	int64_t now;
	int gone;

	if (!e->ep || (e->pidfd < 0 && !e->peer_pid))
		return e->ep != NULL;
	now = rpcrdma__coarse_ms();
	if (now - e->peer_checked < POST_PEER_CHECK_MS)
		return 1;
	e->peer_checked = now;
	gone = rpcrdma__proc_gone(e->pidfd, e->peer_pid);
	if (gone)
		rpcrdma__fab_lose_connection(e, NULL);
	return !gone;
}


static void *sge_desc(struct rpcrdma_mr *mr)
{
	return ((struct fab_mr *)mr)->desc;
}

/* One libfabric call per piece (rpcrdma__post_fn). */
static int post_piece(void *impl, uint32_t opcode, void *laddr, uint32_t len,
		      struct rpcrdma_mr *mr, uint64_t raddr, uint32_t key, struct rpcrdma__piece *pc)
{
	struct fab_ep *e = impl;
	void *desc = sge_desc(mr), *fctx = pc->ctx;
	int budget = pc == &pc->op->pieces[0] ? POST_RETRY_MS : POST_PIECE_RETRY_MS;
	bool done = false;
	ssize_t rc;

	if (opcode == RPCRDMA_OP_RECV && e->fp->rdm)
		POST_RETRY(e, rc, budget, fi_trecv(e->ep, laddr, len, desc, e->peer, TAG_DATA, 0, fctx));
	else if (opcode == RPCRDMA_OP_RECV)
		POST_RETRY(e, rc, budget, fi_recv(e->ep, laddr, len, desc, 0, fctx));
	else if (opcode == RPCRDMA_OP_SEND && len <= e->fp->inject_max) {
		if (e->fp->rdm)
			POST_RETRY(e, rc, budget, fi_tinject(e->ep, laddr, len, e->peer, TAG_DATA));
		else
			POST_RETRY(e, rc, budget, fi_inject(e->ep, laddr, len, 0));
		done = !rc;   /* no completion comes for it */
	} else if (opcode == RPCRDMA_OP_SEND && e->fp->rdm)
		POST_RETRY(e, rc, budget, fi_tsend(e->ep, laddr, len, desc, e->peer, TAG_DATA, fctx));
	else if (opcode == RPCRDMA_OP_SEND)
		POST_RETRY(e, rc, budget, fi_send(e->ep, laddr, len, desc, 0, fctx));
	else if (opcode == RPCRDMA_OP_READ)
		POST_RETRY(e, rc, budget, fi_read(e->ep, laddr, len, desc, e->peer, raddr, key, fctx));
	else
		POST_RETRY(e, rc, budget, fi_write(e->ep, laddr, len, desc, e->peer, raddr, key, fctx));
	if (rc)
		return e->ep ? rpcrdma__fab_map_err((int)rc) : -RPCRDMA_ERR_DISCONN;
	if (opcode != RPCRDMA_OP_RECV)
		rpcrdma__bell_ring(&e->bell);   /* shm: the peer moves it only while awake */
	return done ? RPCRDMA__POSTED_DONE : 0;
}

int rpcrdma__fab_post_recv(struct rpcrdma_ep *base, const struct rpcrdma_sge *sge, void *ctx)
{
	struct fab_ep *e = (struct fab_ep *)base;
	int rc;

	sh_lock(e);
	rc = rpcrdma__post_one(&e->q, e->ep != NULL, RPCRDMA_OP_RECV, sge, ctx, post_piece, e);
	sh_unlock(e);
	return rc;
}

int rpcrdma__fab_post_send(struct rpcrdma_ep *base, const struct rpcrdma_sge *sge, void *ctx)
{
	struct fab_ep *e = (struct fab_ep *)base;
	uint32_t kept;
	int rc;

	sh_lock(e);
	kept = e->q.stash.n;
	rc = rpcrdma__post_one(&e->q, e->ep != NULL, RPCRDMA_OP_SEND, sge, ctx, post_piece, e);
	if (rc == 0 && e->q.stash.n > kept)
		wake_owner(e);   /* done as posted (fi_inject) by a thread other than a sleeping
				    owner: a server's worker */
	sh_unlock(e);
	return rc;
}

int rpcrdma__fab_post_rma(struct rpcrdma_ep *base, uint32_t opcode, const struct rpcrdma_sge *l,
			  uint32_t nl, const struct rpcrdma_segment *r, uint32_t nr, void *ctx)
{
	struct fab_ep *e = (struct fab_ep *)base;
	int rc;

	sh_lock(e);
	rc = rpcrdma__post_rma(&e->q, e->ep != NULL, opcode, l, nl, r, nr, ctx, post_piece, e);
	sh_unlock(e);
	return rc;
}

_Static_assert(sizeof(struct fi_context2) <= RPCRDMA__PIECE_CTX, "a piece holds fi_context2");

/* ---- memory ---- */

static uint64_t fi_access(unsigned access)
{
	uint64_t a = FI_SEND | FI_RECV | FI_READ | FI_WRITE;

	if (access & RPCRDMA_ACC_REMOTE_READ)
		a |= FI_REMOTE_READ;
	if (access & RPCRDMA_ACC_REMOTE_WRITE)
		a |= FI_REMOTE_WRITE;
	return a;
}

static int reg_with_our_key(struct fab_prov *fp, struct fab_mr *m, uint64_t access)
{
	int tries, rc = -FI_ENOKEY;

	for (tries = 0; tries < 16 && rc == -FI_ENOKEY; tries++) {
		m->key = rpcrdma__key_new(&fp->keys);
		rc = fi_mr_reg(fp->domain, m->base.addr, m->base.len, access, 0, m->key, 0, &m->mr,
			       NULL);
	}
	return rpcrdma__fab_map_err(rc);
}

static int reg_with_prov_key(struct fab_prov *fp, struct fab_mr *m, uint64_t access)
{
	int rc = fi_mr_reg(fp->domain, m->base.addr, m->base.len, access, 0, 0, 0, &m->mr, NULL);

	if (rc)
		return rpcrdma__fab_map_err(rc);
	m->key = fi_mr_key(m->mr);
	if (m->key > UINT32_MAX) {
		fi_close(&m->mr->fid);
		return -RPCRDMA_ERR_RANGE;  /* RFC 5666 §2: handles are 32 bits */
	}
	return 0;
}

int rpcrdma__fab_mr_reg(struct rpcrdma_prov *p, void *addr, size_t len, unsigned access,
			struct rpcrdma_mr **out)
{
	struct fab_prov *fp = (struct fab_prov *)p;
	struct fab_mr *m = rpcrdma__spares_get(&fp->spare_mrs);
	int rc;

	if (m)
		memset(m, 0, sizeof(*m));
	else if (!(m = calloc(1, sizeof(*m))))
		return -RPCRDMA_ERR_NOMEM;
	m->base.addr = addr;
	m->base.len = len;
	m->base.access = access;
	m->base.prov = p;
	if (fp->mr_mode & FI_MR_PROV_KEY)
		rc = reg_with_prov_key(fp, m, fi_access(access));
	else
		rc = reg_with_our_key(fp, m, fi_access(access));
	if (rc) {
		if (!rpcrdma__spares_put(&fp->spare_mrs, m))
			free(m);
		return rc;
	}
	m->desc = fi_mr_desc(m->mr);
	m->base.handle = (uint32_t)m->key;
	m->base.offset = (fp->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)addr : 0;
	*out = &m->base;
	return 0;
}

int rpcrdma__fab_mr_dereg(struct rpcrdma_mr *base)
{
	struct fab_mr *m = (struct fab_mr *)base;
	struct fab_prov *fp = (struct fab_prov *)base->prov;
	int rc = rpcrdma__fab_map_err(fi_close(&m->mr->fid));

	if (!(fp->mr_mode & FI_MR_PROV_KEY))
		rpcrdma__key_release(&fp->keys, (uint32_t)m->key);
	if (!rpcrdma__spares_put(&fp->spare_mrs, m))
		free(m);
	return rc;
}
