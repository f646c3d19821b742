/* SPDX-License-Identifier: BSD-2-Clause */
/* The libfabric provider: FI_EP_MSG (tcp, verbs, ...) natively, FI_EP_RDM (shm) with
 * emulated connections. Nothing here is specific to one provider's name except the
 * documented fact that shm does not check remote access (caps.enforces_access).
 *
 * Operations (prov_opq.c): each posted operation has one or more pieces (libfabric
 * calls, each with its own fi_context2 in the piece); RMA scatter lists are split into
 * pieces so that no call exceeds one local and one remote segment.
 *
 * Emulated connections (RDM): a listener is an endpoint named "rpcrdma_<port>"; a
 * client sends it a CONNREQ control message (its name and private data) and the
 * listener answers from a new endpoint made for that connection (ACCEPT with its name
 * and private data) or with REJECT. DISCONNECT tells the peer we are gone. Control
 * messages use their own tag, and data uses directed receives from the peer only, so
 * neither can be taken for the other. */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "prov_int.h"
#include "prov_opq.h"
#include "tcp_reap.h"

#define FAB_VERSION FI_VERSION(1, 17)
#define TAG_DATA 0x5250435244415441ull  /* "RPCRDATA" */
#define TAG_CTRL 0x52504352434f4e4eull  /* "RPCRCONN" */
#define CTRL_MAGIC 0x5252434du
#define CTRL_NAME_MAX 96
#define CTRL_F_PID 0x01u           /* the sender's process id follows the header */
#define CTRL_MAX (12 + CTRL_NAME_MAX + RPCRDMA_PDATA_MAX)
#define PEER_CHECK_MS 50           /* how often an emulated connection looks at its peer */
#define REAP_EVERY_MS 1000         /* how often a tcp listener looks for lost sockets */
#define CQ_BATCH 16
#define DEPTH_CAP 1024u
#define REJECT_MARK "RJCT"
/* Polls before sleeping on the wait fd: a reply often arrives within microseconds, and
 * a sleep and wake-up costs tens of them. */
#define SPIN_BEFORE_BLOCK 200

enum ctrl_type { CTRL_CONNREQ = 1, CTRL_ACCEPT, CTRL_REJECT, CTRL_DISCONNECT };

struct fab_prov {
	struct rpcrdma_prov base;
	struct fi_info *info;        /* template for endpoints */
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	int rdm;
	uint64_t mr_mode;
	struct rpcrdma__keys keys;
};

struct fab_mr {
	struct rpcrdma_mr base;
	struct fid_mr *mr;
	void *desc;
	uint64_t key;
};

/* Control message buffers (RDM only), one registration: a receive always posted, and
 * one send at a time (ctrl_send waits for it; after a time-out the endpoint is closed
 * before the buffer can be reused or freed). */
struct fab_ctrl {
	struct fi_context2 fctx;     /* the receive */
	struct fi_context2 tx_fctx;
	uint8_t buf[CTRL_MAX];
	uint8_t tx[CTRL_MAX];
	struct fab_mr *mr;
};

struct fab_ep {
	struct rpcrdma_ep base;
	struct fab_prov *fp;
	struct fid_ep *ep;           /* NULL once the connection is gone */
	struct fid_cq *cq;
	struct fid_eq *eq;           /* MSG */
	struct fid_av *av;           /* RDM */
	fi_addr_t peer;              /* RDM: the peer's address; MSG: unused */
	int epfd;                    /* epoll over the wait fds, or -1 */
	struct rpcrdma__opq q;       /* outstanding operations, kept completions */
	int peer_gone;               /* RDM: DISCONNECT received, teardown pending */
	int pidfd;                   /* RDM: the peer process, readable once it ended; or -1 */
	uint32_t peer_pid;           /* RDM: the peer process, for kernels without pidfd_open */
	int64_t peer_checked;        /* RDM: when pidfd was last looked at */
	void *own_hdr, *peer_hdr;    /* RDM: our and the peer's region headers, or NULL */
	int64_t busy_since;          /* RDM: when the libfabric call under way began, or 0 */
	int watched;                 /* RDM: in the watchdog's list */
	int local_listed;            /* RDM: in this process's list of live endpoints */
	int peer_local;              /* RDM: the peer is an endpoint of this process */
	char own_name[CTRL_NAME_MAX], peer_name[CTRL_NAME_MAX];
	size_t own_name_len, peer_name_len;
	struct fab_ep *local_next;
	struct fab_ep *wd_prev, *wd_next;
	struct fab_listener *lst;    /* MSG: the listener that accepted it, while both live */
	struct fab_ep *lst_prev, *lst_next;
	struct rpcrdma__tcp_pair pair;   /* MSG: its two ends */
	struct fab_ctrl ctrl;        /* RDM: control receive */
};

struct fab_listener {
	struct rpcrdma_listener base;
	struct fab_prov *fp;
	struct fid_pep *pep;         /* MSG */
	struct fid_eq *eq;           /* MSG */
	struct fab_ep *lep;          /* RDM: the named endpoint */
	int lockfd;                  /* RDM: holds the name while we live (shm_life.c) */
	char name[40];               /* RDM */
	struct fab_ep *accepted;     /* MSG: live connections it accepted */
	struct rpcrdma__tcp_reaper reaper;   /* tcp: sockets the provider lost (tcp_reap.c) */
	int64_t last_reap;
};

struct fab_connreq {
	struct rpcrdma_connreq base;
	struct fab_listener *l;
	struct fi_info *info;        /* MSG: from FI_CONNREQ */
	char name[CTRL_NAME_MAX];    /* RDM: the client's endpoint name */
	size_t name_len;
	uint32_t pid;                /* RDM: the client's process, 0 if it did not say */
};

static const struct rpcrdma_prov_ops fab_ops;

/* Around each libfabric call on an endpoint the shm watchdog looks after (below). */
static void busy_begin(struct fab_ep *e)
{
	if (e->watched)
		__atomic_store_n(&e->busy_since, rpcrdma__now_ms(), __ATOMIC_RELEASE);
}

static void busy_end(struct fab_ep *e)
{
	if (e->watched)
		__atomic_store_n(&e->busy_since, 0, __ATOMIC_RELEASE);
}

/* ---- errors ---- */

static int map_err(int fi_err)
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
	case FI_ENODATA: return -RPCRDMA_ERR_ADDR;
	default: return -RPCRDMA_ERR_IO;
	}
}

static void set_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
	if (err && errlen)
		snprintf(err, errlen, fmt, a, b);
}

/* ---- completions ---- */

static void handle_ctrl(struct fab_ep *e, size_t len);
static void lose_connection(struct fab_ep *e, struct rpcrdma__sink *s);
static void peer_check(struct fab_ep *e, struct rpcrdma__sink *s);

static void cq_error(struct fab_ep *e, struct rpcrdma__sink *s)
{
	struct fi_cq_err_entry err;

	memset(&err, 0, sizeof(err));
	if (fi_cq_readerr(e->cq, &err, 0) != 1)
		return;
	if (err.op_context == &e->ctrl.fctx || err.op_context == &e->ctrl.tx_fctx)
		return;  /* control traffic of an endpoint being torn down */
	rpcrdma__piece_done(&e->q, (struct rpcrdma__piece *)err.op_context, map_err(err.err), 0, s);
}

/* ---- peers in this process ----
 * With both ends of a shm connection in one process (a program that calls itself),
 * libfabric 1.17's shm reaches the peer's region through the peer endpoint's own mapping,
 * which goes when that endpoint is closed: a post or a completion after that touches
 * unmapped memory. So this process keeps a list of its live shm endpoints; an endpoint
 * whose peer is one of them holds the list's read lock around each libfabric call and
 * goes ahead only while the peer is listed, and an endpoint leaves the list (write lock,
 * so no such call is under way) before libfabric frees its region. */
static pthread_rwlock_t local_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct fab_ep *local_eps;

static void local_add(struct fab_ep *e)
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

static void local_peer_set(struct fab_ep *e, const void *name, size_t len, uint32_t pid)
{
	if (pid != (uint32_t)getpid() || len > sizeof(e->peer_name))
		return;
	memcpy(e->peer_name, name, len);
	e->peer_name_len = len;
	e->peer_local = 1;
}

/* Before a libfabric call on e: 0 to go ahead (then local_leave() after it), -1 when
 * the peer, in this process, has closed. */
static int local_enter(struct fab_ep *e)
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

static void local_leave(struct fab_ep *e)
{
	if (e->peer_local)
		pthread_rwlock_unlock(&local_lock);
}

/* Read the CQ until it is empty; completions go to s first, the stash after. A peer's
 * DISCONNECT is acted on only after the whole batch: tearing down frees the outstanding
 * ops, and later entries of the same batch may still name them. */
static void cq_drain(struct fab_ep *e, struct rpcrdma__sink *s)
{
	struct fi_cq_msg_entry ent[CQ_BATCH];
	ssize_t n, i;

	while (e->cq) {
		if (e->peer_gone) {
			e->peer_gone = 0;
			lose_connection(e, s);
		}
		if (e->ep && local_enter(e)) {
			if (!e->base.connected)
				return;   /* being torn down already (lose_connection) */
			lose_connection(e, s);
			continue;
		}
		busy_begin(e);
		n = fi_cq_read(e->cq, ent, CQ_BATCH);
		busy_end(e);
		if (e->ep)
			local_leave(e);
		if (n == -FI_EAVAIL) {
			cq_error(e, s);
			continue;
		}
		if (n <= 0)
			return;
		for (i = 0; i < n; i++) {
			if (ent[i].op_context == &e->ctrl.fctx)
				handle_ctrl(e, ent[i].len);
			else if (ent[i].op_context == &e->ctrl.tx_fctx)
				continue;  /* a control send finishing late */
			else
				rpcrdma__piece_done(&e->q, (struct rpcrdma__piece *)ent[i].op_context, 0,
						    (uint32_t)ent[i].len, s);
		}
	}
}

static void eq_check(struct fab_ep *e, struct rpcrdma__sink *s)
{
	struct fi_eq_cm_entry ent;
	uint32_t event;
	ssize_t rc;

	if (!e->eq || !e->ep)
		return;
	rc = fi_eq_read(e->eq, &event, &ent, sizeof(ent), 0);
	if (rc == -FI_EAVAIL) {
		struct fi_eq_err_entry err;

		memset(&err, 0, sizeof(err));
		fi_eq_readerr(e->eq, &err, 0);
		lose_connection(e, s);
	} else if (rc >= 0 && event == FI_SHUTDOWN) {
		lose_connection(e, s);
	}
}

/* The connection is gone: let libfabric finish what it can, close the endpoint so it
 * touches nothing more, then complete everything still outstanding with DISCONN. */
static void lose_connection(struct fab_ep *e, struct rpcrdma__sink *s)
{
	if (!e->ep)
		return;
	e->base.connected = 0;
	cq_drain(e, s);
	local_remove(e);
	fi_close(&e->ep->fid);
	e->ep = NULL;
	cq_drain(e, s);
	rpcrdma__opq_fail_all(&e->q, s);
}

/* ---- endpoints: creation ---- */

static int add_wait_fd(struct fab_ep *e, struct fid *fid)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd;

	if (fi_control(fid, FI_GETWAIT, &fd))
		return -1;
	ev.data.fd = fd;
	return epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int open_cq(struct fab_ep *e)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_FD };

	attr.size = e->fp->base.caps.tx_depth + e->fp->base.caps.rx_depth + 8;
	if (e->fp->base.caps.has_fd && fi_cq_open(e->fp->domain, &attr, &e->cq, e) == 0)
		return 0;
	attr.wait_obj = FI_WAIT_NONE;
	return map_err(fi_cq_open(e->fp->domain, &attr, &e->cq, e));
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
	if (rpcrdma__opq_init(&e->q, fp->base.caps.tx_depth, fp->base.caps.rx_depth)) {
		free(e);
		return NULL;
	}
	return e;
}

static void lst_unlink(struct fab_ep *e)
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

/* ---- shm: processes killed holding a region's lock ----
 *
 * libfabric 1.17's shm keeps a spin lock in each endpoint's shared region: the owner
 * takes it to progress, a peer to post to it. A process killed while holding one (it
 * does while it polls or posts) leaves whoever needs that lock spinning for ever inside
 * libfabric, and with it every connection that thread serves. peer_alive_now() keeps us
 * from posting to a peer already dead; the watchdog covers the rest. Every libfabric call
 * on an emulated endpoint is timed (busy_begin/_end); a call stuck for WD_DEAD_MS while
 * the connection's peer is dead, or for WD_STUCK_MS in any case (a spin lock is held for
 * microseconds, so its holder is dead or stopped), has the lock it waits for released:
 * the peer region's if held, else our own. */
#define WD_EVERY_MS 10
#define WD_DEAD_MS 50
#define WD_STUCK_MS 500

static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fab_ep *wd_eps;
static pthread_once_t wd_once = PTHREAD_ONCE_INIT;

static int peer_dead(const struct fab_ep *e)
{
	if (e->pidfd >= 0)
		return rpcrdma__pid_gone(e->pidfd);
	return e->peer_pid && !rpcrdma__pid_exists(e->peer_pid);
}

static void wd_check(struct fab_ep *e)
{
	int64_t since = __atomic_load_n(&e->busy_since, __ATOMIC_ACQUIRE), stuck;

	if (!since)
		return;
	stuck = rpcrdma__now_ms() - since;
	if (stuck < WD_DEAD_MS || (stuck < WD_STUCK_MS && !peer_dead(e)))
		return;
	if (rpcrdma__shm_region_unlock(e->peer_hdr) || rpcrdma__shm_region_unlock(e->own_hdr))
		fprintf(stderr, "librpcrdma: shm: released a region lock held for %" PRId64
				" ms (peer process %u %s)\n", stuck, e->peer_pid,
			peer_dead(e) ? "dead" : "alive");
}

static void *watchdog(void *arg)
{
	struct timespec ts = { 0, WD_EVERY_MS * 1000000L };
	struct fab_ep *e;

	(void)arg;
	for (;;) {
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&wd_lock);
		for (e = wd_eps; e; e = e->wd_next)
			wd_check(e);
		pthread_mutex_unlock(&wd_lock);
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
	local_add(e);
}

/* The peer's region (the listener's while connecting, the connection's after). */
static void wd_watch_peer(struct fab_ep *e, const void *name, size_t len, uint32_t pid)
{
	void *hdr = map_region(name, len, pid);

	local_peer_set(e, name, len, pid);
	pthread_mutex_lock(&wd_lock);
	rpcrdma__shm_region_unmap(e->peer_hdr);
	e->peer_hdr = hdr;
	pthread_mutex_unlock(&wd_lock);
	wd_list(e);
}

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

static void ep_free(struct fab_ep *e)
{
	wd_unwatch(e);
	lst_unlink(e);
	local_remove(e);
	if (e->ep)
		fi_close(&e->ep->fid);
	if (e->ctrl.mr)
		rpcrdma_mr_dereg(&e->ctrl.mr->base);
	if (e->av)
		fi_close(&e->av->fid);
	if (e->cq)
		fi_close(&e->cq->fid);
	if (e->eq)
		fi_close(&e->eq->fid);
	if (e->epfd >= 0)
		close(e->epfd);
	if (e->pidfd >= 0)
		close(e->pidfd);
	rpcrdma__opq_free(&e->q);
	free(e);
}

/* Endpoint, CQ and (MSG) EQ or (RDM) AV, bound and enabled; the wait fds in an epoll.
 * name (RDM listeners) is set as the endpoint's address before it is enabled. */
static int ep_open(struct fab_prov *fp, struct fi_info *info, const char *name,
		   struct fab_ep **out)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_FD };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct fab_ep *e = ep_alloc(fp);
	int rc;

	if (!e)
		return -RPCRDMA_ERR_NOMEM;
	rc = open_cq(e);
	if (rc)
		goto out_free;
	rc = map_err(fi_endpoint(fp->domain, info, &e->ep, e));
	if (rc)
		goto out_free;
	rc = map_err(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV));
	if (rc)
		goto out_free;
	if (fp->rdm) {
		rc = map_err(fi_av_open(fp->domain, &ava, &e->av, NULL));
		if (!rc)
			rc = map_err(fi_ep_bind(e->ep, &e->av->fid, 0));
	} else {
		rc = map_err(fi_eq_open(fp->fabric, &eqa, &e->eq, NULL));
		if (!rc)
			rc = map_err(fi_ep_bind(e->ep, &e->eq->fid, 0));
	}
	if (!rc && name)
		rc = map_err(fi_setname(&e->ep->fid, (void *)name, strlen(name) + 1));
	if (rc)
		goto out_free;
	rc = map_err(fi_enable(e->ep));
	if (rc)
		goto out_free;
	if (fp->base.caps.has_fd) {
		e->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (e->epfd < 0 || add_wait_fd(e, &e->cq->fid) ||
		    (e->eq && add_wait_fd(e, &e->eq->fid))) {
			rc = -RPCRDMA_ERR_IO;
			goto out_free;
		}
	}
	*out = e;
	return 0;
out_free:
	ep_free(e);
	return rc;
}

/* ---- waiting ---- */

/* Without a wait fd (shm) the only way to progress is to poll, and the target of an
 * RDMA operation moves it only while it polls, though it sees no completion of its own.
 * So a wait yields the CPU without sleeping for its first BUSY_MS, which covers any
 * exchange in progress, and only then sleeps briefly between polls (an idle peer). */
#define BUSY_MS 100

static void backoff(unsigned *spins)
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

static int fd_wait(struct fab_ep *e, int timeout_ms)
{
	struct fid *fids[2] = { &e->cq->fid, e->eq ? &e->eq->fid : NULL };
	struct epoll_event ev;
	int n;

	if (fi_trywait(e->fp->fabric, fids, e->eq ? 2 : 1) != FI_SUCCESS)
		return 0;
	do
		n = epoll_wait(e->epfd, &ev, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	return n > 0 ? 0 : -RPCRDMA_ERR_TIMEDOUT;
}

static int fab_wait(struct rpcrdma_ep *base, int timeout_ms)
{
	struct fab_ep *e = (struct fab_ep *)base;
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : rpcrdma__now_ms() + timeout_ms;
	unsigned spins = 0;

	for (;;) {
		cq_drain(e, NULL);
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

			if (fd_wait(e, left > 100 ? 100 : (int)(left < 0 ? 0 : left)) == 0)
				continue;
		} else if (e->epfd < 0) {
			backoff(&spins);
		}
	}
}

/* An emulated connection's peer that ended without a word (SIGKILL) is gone all the
 * same: looked at every PEER_CHECK_MS while the endpoint is idle. */
static void peer_check(struct fab_ep *e, struct rpcrdma__sink *s)
{
	int64_t now;

	if ((e->pidfd < 0 && !e->peer_pid) || !e->ep)
		return;
	now = rpcrdma__now_ms();
	if (now - e->peer_checked < PEER_CHECK_MS)
		return;
	e->peer_checked = now;
	if (e->pidfd >= 0 ? rpcrdma__pid_gone(e->pidfd) : !rpcrdma__pid_exists(e->peer_pid))
		lose_connection(e, s);
}

static int fab_poll(struct rpcrdma_ep *base, struct rpcrdma_cqe *out, int max)
{
	struct fab_ep *e = (struct fab_ep *)base;
	struct rpcrdma__sink s = { out, max, 0 };

	s.n = rpcrdma__opq_pop(&e->q, out, max);
	if (s.n < max) {
		cq_drain(e, &s);
		if (s.n == 0)
			eq_check(e, &s);
		if (s.n == 0)
			peer_check(e, &s);
	}
	return s.n;
}

static int fab_ep_fd(const struct rpcrdma_ep *base)
{
	return ((const struct fab_ep *)base)->epfd;
}

/* Connected endpoints know their peer's socket address; emulated ones (shm) do not. */
static int fab_peer_addr(struct rpcrdma_ep *base, void *addr, size_t *len)
{
	struct fab_ep *e = (struct fab_ep *)base;

	if (!e->ep || e->av)
		return -RPCRDMA_ERR_NOPROV;
	return fi_getpeer(e->ep, addr, len) ? -RPCRDMA_ERR_NOPROV : 0;
}

/* Our name and the peer's: socket addresses on MSG endpoints, the emulated endpoint
 * names on RDM ones (the peer's from the address vector). */
static int fab_names(struct rpcrdma_ep *base, void *local, size_t *llen, void *peer,
		     size_t *plen)
{
	struct fab_ep *e = (struct fab_ep *)base;

	if (!e->ep || fi_getname(&e->ep->fid, local, llen))
		return -RPCRDMA_ERR_NOPROV;
	if (e->av)
		return fi_av_lookup(e->av, e->peer, peer, plen) ? -RPCRDMA_ERR_NOPROV : 0;
	return fi_getpeer(e->ep, peer, plen) ? -RPCRDMA_ERR_NOPROV : 0;
}

/* ---- posting ---- */

/* shm keeps a spin lock in each process's shared region and takes the peer's to post to
 * it; a peer killed while holding its own lock (it does while it polls) would make every
 * later post to it spin forever. So a post to an emulated connection's peer first looks
 * whether that process still lives, and a dead one ends the connection instead. A peer
 * killed in the microseconds between this look and the post can still hold us: that
 * residue is libfabric shm's (docs/PROVIDERS.md). */
static int peer_alive_now(struct fab_ep *e)
{
	int gone;

	if (!e->ep || (e->pidfd < 0 && !e->peer_pid))
		return e->ep != NULL;
	gone = e->pidfd >= 0 ? rpcrdma__pid_gone(e->pidfd) : !rpcrdma__pid_exists(e->peer_pid);
	if (gone)
		lose_connection(e, NULL);
	return !gone;
}

/* Retry a post that found libfabric's queue full, driving progress meanwhile, for at
 * most POST_RETRY_MS: a peer that stops taking data must not hold the caller (a server's
 * progress thread serves every connection). After that rc is still -FI_EAGAIN, which
 * reaches the caller as -RPCRDMA_ERR_AGAIN: the engine waits and tries again later. */
#define POST_RETRY_MS 2
#define POST_RETRY(e, rc, call)                                                     \
	do {                                                                        \
		int64_t until_ = rpcrdma__now_ms() + POST_RETRY_MS;                 \
		unsigned spins_ = 0;                                                \
		for (;;) {                                                          \
			if (!peer_alive_now(e) || local_enter(e)) {                 \
				if (e->ep)                                          \
					lose_connection((e), NULL);                 \
				(rc) = -FI_ENOTCONN;                                \
				break;                                              \
			}                                                           \
			busy_begin(e);                                              \
			(rc) = (call);                                              \
			busy_end(e);                                                \
			local_leave(e);                                             \
			if ((rc) != -FI_EAGAIN || rpcrdma__now_ms() >= until_)      \
				break;                                              \
			cq_drain((e), NULL);                                        \
			backoff(&spins_);                                           \
		}                                                                   \
	} while (0)

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
	ssize_t rc;

	if (opcode == RPCRDMA_OP_RECV && e->fp->rdm)
		POST_RETRY(e, rc, fi_trecv(e->ep, laddr, len, desc, e->peer, TAG_DATA, 0, fctx));
	else if (opcode == RPCRDMA_OP_RECV)
		POST_RETRY(e, rc, fi_recv(e->ep, laddr, len, desc, 0, fctx));
	else if (opcode == RPCRDMA_OP_SEND && e->fp->rdm)
		POST_RETRY(e, rc, fi_tsend(e->ep, laddr, len, desc, e->peer, TAG_DATA, fctx));
	else if (opcode == RPCRDMA_OP_SEND)
		POST_RETRY(e, rc, fi_send(e->ep, laddr, len, desc, 0, fctx));
	else if (opcode == RPCRDMA_OP_READ)
		POST_RETRY(e, rc, fi_read(e->ep, laddr, len, desc, e->peer, raddr, key, fctx));
	else
		POST_RETRY(e, rc, fi_write(e->ep, laddr, len, desc, e->peer, raddr, key, fctx));
	if (rc)
		return e->ep ? map_err((int)rc) : -RPCRDMA_ERR_DISCONN;
	return 0;
}

static int fab_post_recv(struct rpcrdma_ep *base, const struct rpcrdma_sge *sge, void *ctx)
{
	struct fab_ep *e = (struct fab_ep *)base;

	return rpcrdma__post_one(&e->q, e->ep != NULL, RPCRDMA_OP_RECV, sge, ctx, post_piece, e);
}

static int fab_post_send(struct rpcrdma_ep *base, const struct rpcrdma_sge *sge, void *ctx)
{
	struct fab_ep *e = (struct fab_ep *)base;

	return rpcrdma__post_one(&e->q, e->ep != NULL, RPCRDMA_OP_SEND, sge, ctx, post_piece, e);
}

static int fab_post_rma(struct rpcrdma_ep *base, uint32_t opcode, const struct rpcrdma_sge *l,
			uint32_t nl, const struct rpcrdma_segment *r, uint32_t nr, void *ctx)
{
	struct fab_ep *e = (struct fab_ep *)base;

	return rpcrdma__post_rma(&e->q, e->ep != NULL, opcode, l, nl, r, nr, ctx, post_piece, e);
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
	return map_err(rc);
}

static int reg_with_prov_key(struct fab_prov *fp, struct fab_mr *m, uint64_t access)
{
	int rc = fi_mr_reg(fp->domain, m->base.addr, m->base.len, access, 0, 0, 0, &m->mr, NULL);

	if (rc)
		return map_err(rc);
	m->key = fi_mr_key(m->mr);
	if (m->key > UINT32_MAX) {
		fi_close(&m->mr->fid);
		return -RPCRDMA_ERR_RANGE;  /* RFC 5666 §2: handles are 32 bits */
	}
	return 0;
}

static int fab_mr_reg(struct rpcrdma_prov *p, void *addr, size_t len, unsigned access,
		      struct rpcrdma_mr **out)
{
	struct fab_prov *fp = (struct fab_prov *)p;
	struct fab_mr *m = calloc(1, sizeof(*m));
	int rc;

	if (!m)
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
		free(m);
		return rc;
	}
	m->desc = fi_mr_desc(m->mr);
	m->base.handle = (uint32_t)m->key;
	m->base.offset = (fp->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)addr : 0;
	*out = &m->base;
	return 0;
}

static int fab_mr_dereg(struct rpcrdma_mr *base)
{
	struct fab_mr *m = (struct fab_mr *)base;
	struct fab_prov *fp = (struct fab_prov *)base->prov;
	int rc = map_err(fi_close(&m->mr->fid));

	if (!(fp->mr_mode & FI_MR_PROV_KEY))
		rpcrdma__key_release(&fp->keys, (uint32_t)m->key);
	free(m);
	return rc;
}

/* ---- MSG connections ---- */

static void port_str(uint16_t port, char *buf, size_t len)
{
	snprintf(buf, len, "%u", port);
}

static struct fi_info *addr_info(struct fab_prov *fp, const char *host, uint16_t port,
				 uint64_t flags, int *rc)
{
	struct fi_info *hints = fi_dupinfo(fp->info), *info = NULL;
	char ps[8];

	if (!hints) {
		*rc = -RPCRDMA_ERR_NOMEM;
		return NULL;
	}
	free(hints->src_addr);
	free(hints->dest_addr);
	hints->src_addr = hints->dest_addr = NULL;
	hints->src_addrlen = hints->dest_addrlen = 0;
	hints->addr_format = FI_FORMAT_UNSPEC;
	free(hints->fabric_attr->name);
	hints->fabric_attr->name = NULL;
	free(hints->domain_attr->name);
	hints->domain_attr->name = NULL;
	port_str(port, ps, sizeof(ps));
	*rc = map_err(fi_getinfo(FAB_VERSION, host, ps, flags, hints, &info));
	if (*rc == -RPCRDMA_ERR_INVAL || *rc == -RPCRDMA_ERR_IO)
		*rc = -RPCRDMA_ERR_ADDR;
	fi_freeinfo(hints);
	return info;
}

static uint16_t sockaddr_port(const void *sa)
{
	const struct sockaddr *s = sa;

	if (s->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (s->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

static int msg_listen(struct fab_prov *fp, const char *host, uint16_t port,
		      struct fab_listener *l)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_FD };
	struct sockaddr_storage ss;
	size_t sslen = sizeof(ss);
	struct fi_info *info;
	int rc;

	info = addr_info(fp, host ? host : "0.0.0.0", port, FI_SOURCE, &rc);
	if (!info)
		return rc;
	rc = map_err(fi_passive_ep(fp->fabric, info, &l->pep, l));
	fi_freeinfo(info);
	if (rc)
		return rc;
	rc = map_err(fi_eq_open(fp->fabric, &eqa, &l->eq, NULL));
	if (!rc)
		rc = map_err(fi_pep_bind(l->pep, &l->eq->fid, 0));
	if (!rc)
		rc = map_err(fi_listen(l->pep));
	if (!rc && fi_getname(&l->pep->fid, &ss, &sslen) == 0)
		l->base.port = sockaddr_port(&ss);
	return rc == -RPCRDMA_ERR_IO ? -RPCRDMA_ERR_ADDR : rc;
}

static int eq_wait(struct fid_eq *eq, int timeout_ms, uint32_t *event, void *buf, size_t len,
		   struct fi_eq_err_entry *err)
{
	ssize_t rc = fi_eq_sread(eq, event, buf, len, timeout_ms, 0);

	if (rc == -FI_EAVAIL) {
		memset(err, 0, sizeof(*err));
		fi_eq_readerr(eq, err, 0);
		return map_err(err->err ? err->err : FI_EIO);
	}
	if (rc == -FI_EAGAIN || rc == -FI_ETIMEDOUT)
		return -RPCRDMA_ERR_TIMEDOUT;
	return rc < 0 ? map_err((int)rc) : (int)rc;
}

static void copy_pdata(uint8_t *dst, size_t *dlen, const void *src, size_t len)
{
	*dlen = len > RPCRDMA_PDATA_MAX ? RPCRDMA_PDATA_MAX : len;
	if (*dlen)
		memcpy(dst, src, *dlen);
}

/* libfabric's tcp listener loses sockets whose peers never sent a connection request
 * (tcp_reap.c): close them, now and then, sparing every live connection. */
static void reap_lost(struct fab_listener *l)
{
	struct rpcrdma__tcp_pair *live = NULL;
	int64_t now = rpcrdma__now_ms();
	size_t n = 0, i = 0;
	struct fab_ep *e;

	if (strcmp(l->fp->base.caps.name, "tcp") || now - l->last_reap < REAP_EVERY_MS)
		return;
	l->last_reap = now;
	for (e = l->accepted; e; e = e->lst_next)
		n++;
	if (n && !(live = malloc(n * sizeof(*live))))
		return;
	for (e = l->accepted; e; e = e->lst_next)
		live[i++] = e->pair;
	rpcrdma__tcp_reap(&l->reaper, l->base.port, live, n, now);
	free(live);
}

static void remember_accepted(struct fab_listener *l, struct fab_ep *e)
{
	size_t ll = sizeof(e->pair.local), pl = sizeof(e->pair.peer);

	if (fi_getname(&e->ep->fid, &e->pair.local, &ll) || fi_getpeer(e->ep, &e->pair.peer, &pl))
		return;
	e->lst = l;
	e->lst_next = l->accepted;
	if (l->accepted)
		l->accepted->lst_prev = e;
	l->accepted = e;
}

static int msg_get(struct fab_listener *l, int timeout_ms, struct fab_connreq *r)
{
	struct {
		struct fi_eq_cm_entry ent;
		uint8_t data[256];
	} buf;
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : rpcrdma__now_ms() + timeout_ms;
	struct fi_eq_err_entry err;
	uint32_t event = 0;
	int rc;

	reap_lost(l);
	/* other events on a listener (none expected) are skipped, within the time given */
	do {
		int64_t left = deadline - rpcrdma__now_ms();

		rc = eq_wait(l->eq, timeout_ms < 0 ? -1 : (int)(left > 0 ? left : 0), &event, &buf,
			     sizeof(buf), &err);
		if (rc < 0 && rc != -RPCRDMA_ERR_TIMEDOUT && rpcrdma__now_ms() < deadline)
			continue;  /* an error event about an earlier request: keep listening */
		if (rc < 0)
			return rc;
	} while (event != FI_CONNREQ);  /* entry.info is defined for FI_CONNREQ only */
	r->info = buf.ent.info;
	copy_pdata(r->base.pdata, &r->base.pdata_len, buf.data,
		   (size_t)rc > sizeof(buf.ent) ? (size_t)rc - sizeof(buf.ent) : 0);
	return 0;
}

/* Wait for FI_CONNECTED on the endpoint's EQ; its data is the peer's private data. */
static int msg_wait_connected(struct fab_ep *e, int timeout_ms)
{
	struct {
		struct fi_eq_cm_entry ent;
		uint8_t data[256];
	} buf;
	struct fi_eq_err_entry err;
	uint32_t event;
	int rc = eq_wait(e->eq, timeout_ms, &event, &buf, sizeof(buf), &err);

	if (rc == -RPCRDMA_ERR_REFUSED && err.err_data_size > 0)
		return -RPCRDMA_ERR_REJECTED;
	if (rc < 0)
		return rc;
	if (event != FI_CONNECTED)
		return -RPCRDMA_ERR_DISCONN;
	copy_pdata(e->base.peer_pdata, &e->base.peer_pdata_len, buf.data,
		   (size_t)rc > sizeof(buf.ent) ? (size_t)rc - sizeof(buf.ent) : 0);
	e->base.connected = 1;
	return 0;
}

static int msg_accept(struct fab_connreq *r, const void *pdata, size_t len, int timeout_ms,
		      struct fab_ep **out)
{
	struct fab_ep *e;
	int rc = ep_open(r->l->fp, r->info, NULL, &e);

	if (rc) {
		fi_reject(r->l->pep, r->info->handle, REJECT_MARK, 4);
		return rc;
	}
	rc = map_err(fi_accept(e->ep, pdata, len));
	if (!rc)
		rc = msg_wait_connected(e, timeout_ms);
	if (rc) {
		ep_free(e);
		return rc;
	}
	*out = e;
	return 0;
}

static int msg_connect(struct fab_prov *fp, const char *host, uint16_t port, const void *pdata,
		       size_t len, int timeout_ms, struct fab_ep **out)
{
	struct fi_info *info;
	struct fab_ep *e;
	int rc;

	info = addr_info(fp, host, port, 0, &rc);
	if (!info)
		return rc;
	rc = ep_open(fp, info, NULL, &e);
	if (!rc) {
		rc = map_err(fi_connect(e->ep, info->dest_addr, pdata, len));
		if (!rc)
			rc = msg_wait_connected(e, timeout_ms);
		if (rc)
			ep_free(e);
	}
	fi_freeinfo(info);
	if (!rc)
		*out = e;
	return rc;
}

/* ---- RDM (emulated) connections ---- */

struct ctrl_view {
	uint32_t type;
	uint32_t pid;
	const uint8_t *name;
	size_t name_len;
	const uint8_t *pdata;
	size_t pdata_len;
};

/* magic (4), type, name length, private data length, flags; with CTRL_F_PID the sender's
 * process id (4, big-endian); the name; the private data */
static size_t ctrl_encode(uint8_t *buf, uint32_t type, const void *name, size_t name_len,
			  const void *pdata, size_t pdata_len)
{
	uint32_t pid = (uint32_t)getpid();

	buf[0] = (uint8_t)(CTRL_MAGIC >> 24);
	buf[1] = (uint8_t)(CTRL_MAGIC >> 16);
	buf[2] = (uint8_t)(CTRL_MAGIC >> 8);
	buf[3] = (uint8_t)CTRL_MAGIC;
	buf[4] = (uint8_t)type;
	buf[5] = (uint8_t)name_len;
	buf[6] = (uint8_t)pdata_len;
	buf[7] = CTRL_F_PID;
	buf[8] = (uint8_t)(pid >> 24);
	buf[9] = (uint8_t)(pid >> 16);
	buf[10] = (uint8_t)(pid >> 8);
	buf[11] = (uint8_t)pid;
	if (name_len)
		memcpy(buf + 12, name, name_len);
	if (pdata_len)
		memcpy(buf + 12 + name_len, pdata, pdata_len);
	return 12 + name_len + pdata_len;
}

/* Control messages come from peers we do not trust more than any other: checked. */
static int ctrl_decode(const uint8_t *buf, size_t len, struct ctrl_view *v)
{
	if (len < 8 || buf[0] != (uint8_t)(CTRL_MAGIC >> 24) || buf[1] != (uint8_t)(CTRL_MAGIC >> 16) ||
	    buf[2] != (uint8_t)(CTRL_MAGIC >> 8) || buf[3] != (uint8_t)CTRL_MAGIC)
		return -1;
	size_t hdr = buf[7] & CTRL_F_PID ? 12 : 8;

	v->type = buf[4];
	v->name_len = buf[5];
	v->pdata_len = buf[6];
	if (v->name_len > CTRL_NAME_MAX || v->pdata_len > RPCRDMA_PDATA_MAX ||
	    hdr + v->name_len + v->pdata_len > len)
		return -1;
	v->pid = hdr == 12 ? (uint32_t)buf[8] << 24 | (uint32_t)buf[9] << 16 |
			     (uint32_t)buf[10] << 8 | buf[11] : 0;
	v->name = buf + hdr;
	v->pdata = buf + hdr + v->name_len;
	return 0;
}

static int ctrl_post_recv(struct fab_ep *e)
{
	ssize_t rc;

	POST_RETRY(e, rc, fi_trecv(e->ep, e->ctrl.buf, CTRL_MAX, e->ctrl.mr->desc, FI_ADDR_UNSPEC,
				   TAG_CTRL, 0, &e->ctrl.fctx));
	return map_err((int)rc);
}

static int ctrl_setup(struct fab_ep *e)
{
	struct rpcrdma_mr *mr;
	int rc = fab_mr_reg(&e->fp->base, &e->ctrl, sizeof(e->ctrl), RPCRDMA_ACC_LOCAL, &mr);

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

	if (local_enter(e))
		return -1;   /* the peer, in this process, has closed */
	busy_begin(e);
	n = fi_cq_read(e->cq, &ent, 1);
	busy_end(e);
	local_leave(e);

	if (n == 1 && ent.op_context == want)
		return 1;
	if (n == 1 && ent.op_context == &e->ctrl.fctx)
		handle_ctrl(e, ent.len);
	else if (n == 1 && ent.op_context != &e->ctrl.tx_fctx)
		rpcrdma__piece_done(&e->q, (struct rpcrdma__piece *)ent.op_context, 0,
				    (uint32_t)ent.len, NULL);
	else if (n == -FI_EAVAIL)
		cq_error(e, NULL);
	return 0;
}

/* Send one control message and wait (bounded) for it to leave; other completions met
 * meanwhile are handled as usual. A peer that ends meanwhile (pidfd >= 0 watches it)
 * ends the wait: a dead peer's queue stays full, and nobody else may wait behind it. */
static int ctrl_send(struct fab_ep *e, fi_addr_t to, uint32_t type, const void *pdata,
		     size_t plen, int timeout_ms, int pidfd)
{
	int64_t deadline = rpcrdma__now_ms() + timeout_ms;
	uint8_t name[CTRL_NAME_MAX];
	size_t name_len = sizeof(name), len;
	unsigned spins = 0;
	int rc, done = 0;

	if (fi_getname(&e->ep->fid, name, &name_len) || name_len > CTRL_NAME_MAX)
		name_len = 0;
	len = ctrl_encode(e->ctrl.tx, type, name, name_len, pdata, plen);
	for (;;) {
		if (to == e->peer && local_enter(e))
			return -RPCRDMA_ERR_DISCONN;
		busy_begin(e);
		rc = (int)fi_tsend(e->ep, e->ctrl.tx, len, e->ctrl.mr->desc, to, TAG_CTRL,
				   &e->ctrl.tx_fctx);
		busy_end(e);
		if (to == e->peer)
			local_leave(e);
		if (rc != -FI_EAGAIN || !e->ep || rpcrdma__now_ms() >= deadline)
			break;
		if (rpcrdma__pid_gone(pidfd))
			return -RPCRDMA_ERR_DISCONN;
		if (ctrl_progress(e, NULL) < 0)
			return -RPCRDMA_ERR_DISCONN;
		backoff(&spins);
	}
	rc = rc == -FI_EAGAIN ? -RPCRDMA_ERR_TIMEDOUT : map_err(rc);
	while (!rc && !done && e->ep && rpcrdma__now_ms() < deadline) {
		done = ctrl_progress(e, &e->ctrl.tx_fctx);
		if (done < 0)
			return -RPCRDMA_ERR_DISCONN;
		if (!done && rpcrdma__pid_gone(pidfd))
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
		e->peer_gone = 1;  /* cq_drain tears down once the current batch is done */
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
		rc = ep_open(fp, info, l->name, &l->lep);
	fi_freeinfo(info);
	if (rc) {
		rpcrdma__shm_name_release(l->name, l->lockfd);
		l->lockfd = -1;
	}
	return rc == -RPCRDMA_ERR_IO ? -RPCRDMA_ERR_ADDR : rc;
}

static int rdm_listen(struct fab_prov *fp, uint16_t port, struct fab_listener *l)
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
	return rc;
}

/* Wait for a control message of one of the wanted types (a bit per type); others are
 * dropped. The view points into the receive buffer: the caller copies what it needs,
 * then re-posts the receive. Requests and acceptances must name their sender. */
static int ctrl_wait(struct fab_ep *e, int timeout_ms, uint32_t want, struct ctrl_view *v)
{
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : rpcrdma__now_ms() + timeout_ms;
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
			cq_error(e, NULL);
		}
		if (rpcrdma__now_ms() >= deadline)
			return -RPCRDMA_ERR_TIMEDOUT;
		backoff(&spins);
	}
}

static int rdm_get(struct fab_listener *l, int timeout_ms, struct fab_connreq *r)
{
	struct ctrl_view v;
	int rc = ctrl_wait(l->lep, timeout_ms, 1u << CTRL_CONNREQ, &v);

	if (rc)
		return rc;
	memcpy(r->name, v.name, v.name_len);
	r->name_len = v.name_len;
	r->pid = v.pid;
	copy_pdata(r->base.pdata, &r->base.pdata_len, v.pdata, v.pdata_len);
	ctrl_post_recv(l->lep);
	return 0;
}

static int rdm_new_ep(struct fab_prov *fp, struct fab_ep **out)
{
	struct fi_info *info = fi_dupinfo(fp->info);
	int rc;

	if (!info)
		return -RPCRDMA_ERR_NOMEM;
	rc = ep_open(fp, info, NULL, out);
	fi_freeinfo(info);
	if (!rc)
		rc = ctrl_setup(*out);
	if (!rc)
		wd_watch_own(*out);
	if (rc && *out) {
		ep_free(*out);
		*out = NULL;
	}
	return rc;
}

static int rdm_accept(struct fab_connreq *r, const void *pdata, size_t len, int timeout_ms,
		      struct fab_ep **out)
{
	struct fab_ep *e = NULL;
	int rc;

	/* a client killed after its request: nothing to accept */
	if (r->pid && !rpcrdma__pid_exists(r->pid))
		return -RPCRDMA_ERR_DISCONN;
	rc = rdm_new_ep(r->l->fp, &e);
	if (!rc) {
		e->pidfd = rpcrdma__pid_watch(r->pid);
		e->peer_pid = r->pid;
		rc = av_insert_name(e, r->name, r->name_len, &e->peer);
	}
	if (!rc)
		wd_watch_peer(e, r->name, r->name_len, r->pid);
	if (!rc)
		rc = ctrl_send(e, e->peer, CTRL_ACCEPT, pdata, len, timeout_ms < 0 ? 10000 : timeout_ms,
			       e->pidfd);
	if (rc) {
		if (e)
			ep_free(e);
		return rc;
	}
	e->base.connected = 1;
	*out = e;
	return 0;
}

static void rdm_reject(struct fab_connreq *r, const void *pdata, size_t len)
{
	fi_addr_t to;

	int pidfd;

	if ((r->pid && !rpcrdma__pid_exists(r->pid)) ||
	    av_insert_name(r->l->lep, r->name, r->name_len, &to))
		return;
	pidfd = rpcrdma__pid_watch(r->pid);
	ctrl_send(r->l->lep, to, CTRL_REJECT, pdata ? pdata : REJECT_MARK, pdata ? len : 4, 1000,
		  pidfd);
	if (pidfd >= 0)
		close(pidfd);
}

static int rdm_connect(struct fab_prov *fp, uint16_t port, const void *pdata, size_t len,
		       int timeout_ms, struct fab_ep **out)
{
	struct fab_ep *e = NULL;
	struct ctrl_view v;
	fi_addr_t listener;
	char name[40];
	int rc;

	rpcrdma__shm_reap();
	rc = rdm_new_ep(fp, &e);
	if (rc)
		return rc;
	rdm_listener_name(port, name, sizeof(name));
	rc = av_insert_name(e, name, strlen(name), &listener);
	if (!rc)
		wd_watch_peer(e, name, strlen(name), 0);
	if (!rc)
		rc = ctrl_send(e, listener, CTRL_CONNREQ, pdata, len, timeout_ms < 0 ? 10000 : timeout_ms,
			       -1);
	if (rc == -RPCRDMA_ERR_TIMEDOUT)
		rc = -RPCRDMA_ERR_REFUSED;  /* nobody took our request off the wire */
	if (!rc)
		rc = ctrl_wait(e, timeout_ms, 1u << CTRL_ACCEPT | 1u << CTRL_REJECT, &v);
	if (!rc && v.type == CTRL_REJECT)
		rc = -RPCRDMA_ERR_REJECTED;
	if (!rc)
		rc = av_insert_name(e, v.name, v.name_len, &e->peer);
	if (rc) {
		ep_free(e);
		return rc;
	}
	copy_pdata(e->base.peer_pdata, &e->base.peer_pdata_len, v.pdata, v.pdata_len);
	e->pidfd = rpcrdma__pid_watch(v.pid);
	e->peer_pid = v.pid;
	wd_watch_peer(e, v.name, v.name_len, v.pid);
	ctrl_post_recv(e);
	e->base.connected = 1;
	*out = e;
	return 0;
}

/* ---- ops table glue ---- */

static int fab_listen(struct rpcrdma_prov *p, const char *host, uint16_t port,
		      struct rpcrdma_listener **out)
{
	struct fab_prov *fp = (struct fab_prov *)p;
	struct fab_listener *l = calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return -RPCRDMA_ERR_NOMEM;
	l->base.prov = p;
	l->fp = fp;
	l->lockfd = -1;
	rc = fp->rdm ? rdm_listen(fp, port, l) : msg_listen(fp, host, port, l);
	if (rc) {
		fab_ops.listener_close(&l->base);
		return rc;
	}
	*out = &l->base;
	return 0;
}

static int fab_listener_fd(const struct rpcrdma_listener *base)
{
	const struct fab_listener *l = (const struct fab_listener *)base;
	int fd;

	if (l->eq && fi_control(&l->eq->fid, FI_GETWAIT, &fd) == 0)
		return fd;
	return -1;
}

static int fab_listener_addr(const struct rpcrdma_listener *base, void *addr, size_t *len)
{
	const struct fab_listener *l = (const struct fab_listener *)base;

	if (!l->pep || fi_getname(&l->pep->fid, addr, len))
		return -RPCRDMA_ERR_NOPROV;
	return 0;
}

static int fab_listener_get(struct rpcrdma_listener *base, int timeout_ms,
			    struct rpcrdma_connreq **out)
{
	struct fab_listener *l = (struct fab_listener *)base;
	struct fab_connreq *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -RPCRDMA_ERR_NOMEM;
	r->base.prov = base->prov;
	r->l = l;
	rc = l->fp->rdm ? rdm_get(l, timeout_ms, r) : msg_get(l, timeout_ms, r);
	if (rc) {
		free(r);
		return rc;
	}
	*out = &r->base;
	return 0;
}

static void fab_listener_close(struct rpcrdma_listener *base)
{
	struct fab_listener *l = (struct fab_listener *)base;

	while (l->accepted)
		lst_unlink(l->accepted);
	rpcrdma__tcp_reaper_free(&l->reaper);
	if (l->pep)
		fi_close(&l->pep->fid);
	if (l->eq)
		fi_close(&l->eq->fid);
	if (l->lep)
		ep_free(l->lep);
	rpcrdma__shm_name_release(l->name, l->lockfd);
	free(l);
}

static int fab_accept(struct rpcrdma_connreq *base, const void *pdata, size_t len, int timeout_ms,
		      struct rpcrdma_ep **out)
{
	struct fab_connreq *r = (struct fab_connreq *)base;
	struct fab_ep *e = NULL;
	int rc;

	rc = r->l->fp->rdm ? rdm_accept(r, pdata, len, timeout_ms, &e)
			   : msg_accept(r, pdata, len, timeout_ms, &e);
	if (!rc) {
		/* the peer's private data is what it sent with its request */
		copy_pdata(e->base.peer_pdata, &e->base.peer_pdata_len, base->pdata, base->pdata_len);
		if (!r->l->fp->rdm)
			remember_accepted(r->l, e);
		*out = &e->base;
	}
	if (r->info)
		fi_freeinfo(r->info);
	free(r);
	return rc;
}

static void fab_reject(struct rpcrdma_connreq *base, const void *pdata, size_t len)
{
	struct fab_connreq *r = (struct fab_connreq *)base;

	if (r->l->fp->rdm) {
		rdm_reject(r, pdata, len);
	} else {
		/* Always some private data, so that the client can tell a refusal by us from
		 * nobody listening. */
		fi_reject(r->l->pep, r->info->handle, pdata && len ? pdata : REJECT_MARK,
			  pdata && len ? len : 4);
		fi_freeinfo(r->info);
	}
	free(r);
}

static int fab_connect(struct rpcrdma_prov *p, const char *host, uint16_t port, const void *pdata,
		       size_t len, int timeout_ms, struct rpcrdma_ep **out)
{
	struct fab_prov *fp = (struct fab_prov *)p;
	struct fab_ep *e = NULL;
	int rc;

	if (!fp->rdm && !host)
		return -RPCRDMA_ERR_ADDR;
	rc = fp->rdm ? rdm_connect(fp, port, pdata, len, timeout_ms, &e)
		     : msg_connect(fp, host, port, pdata, len, timeout_ms, &e);
	if (!rc)
		*out = &e->base;
	return rc;
}

static void fab_ep_close(struct rpcrdma_ep *base)
{
	struct fab_ep *e = (struct fab_ep *)base;

	if (e->ep && e->fp->rdm && e->base.connected)
		ctrl_send(e, e->peer, CTRL_DISCONNECT, NULL, 0, 2000, e->pidfd);
	else if (e->ep && e->base.connected)
		fi_shutdown(e->ep, 0);
	if (e->ep) {
		/* completions of a closing endpoint are not reported */
		lose_connection(e, NULL);
	}
	ep_free(e);
}

/* ---- provider ---- */

static void fab_close(struct rpcrdma_prov *p)
{
	struct fab_prov *fp = (struct fab_prov *)p;

	if (fp->domain)
		fi_close(&fp->domain->fid);
	if (fp->fabric)
		fi_close(&fp->fabric->fid);
	if (fp->info)
		fi_freeinfo(fp->info);
	free(fp);
}

static const struct rpcrdma_prov_ops fab_ops = {
	.close = fab_close,
	.listen = fab_listen,
	.listener_get = fab_listener_get,
	.listener_fd = fab_listener_fd,
	.listener_addr = fab_listener_addr,
	.listener_close = fab_listener_close,
	.accept = fab_accept,
	.reject = fab_reject,
	.connect = fab_connect,
	.ep_close = fab_ep_close,
	.mr_reg = fab_mr_reg,
	.mr_dereg = fab_mr_dereg,
	.post_recv = fab_post_recv,
	.post_send = fab_post_send,
	.post_rma = fab_post_rma,
	.poll = fab_poll,
	.wait = fab_wait,
	.ep_fd = fab_ep_fd,
	.peer_addr = fab_peer_addr,
	.names = fab_names,
};

static struct fi_info *make_hints(const char *prov, const char *domain, enum fi_ep_type type)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = type;
	h->caps = FI_MSG | FI_RMA;
	if (type == FI_EP_RDM)
		h->caps |= FI_TAGGED | FI_DIRECTED_RECV;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	/* the registration modes we handle; the provider says which it needs */
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_SAFE;
	if (prov)
		h->fabric_attr->prov_name = strdup(prov);
	if (domain)
		h->domain_attr->name = strdup(domain);
	return h;
}

static void fill_caps(struct rpcrdma_prov_caps *c, const struct fi_info *i, int rdm)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", i->fabric_attr->prov_name);
	snprintf(c->fabric, sizeof(c->fabric), "%s", i->fabric_attr->name);
	c->ep_type = rdm ? RPCRDMA_EP_RDM_EMULATED : RPCRDMA_EP_MSG;
	c->key_size = (uint32_t)i->domain_attr->mr_key_size;
	c->prov_keys = !!(i->domain_attr->mr_mode & FI_MR_PROV_KEY);
	c->virt_addr = !!(i->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
	c->write_send_ordered = !!(i->tx_attr->msg_order & FI_ORDER_SAW);
	/* shm moves RMA data with cross-memory attach and checks neither key nor range */
	c->enforces_access = strcmp(c->name, "shm") != 0;
	c->iov_limit = (uint32_t)i->tx_attr->iov_limit;
	c->rma_iov_limit = (uint32_t)i->tx_attr->rma_iov_limit;
	c->tx_depth = (uint32_t)(i->tx_attr->size < DEPTH_CAP ? i->tx_attr->size : DEPTH_CAP);
	c->rx_depth = (uint32_t)(i->rx_attr->size < DEPTH_CAP ? i->rx_attr->size : DEPTH_CAP);
	c->inject_size = i->tx_attr->inject_size;
	c->max_msg_size = i->ep_attr->max_msg_size;
}

static int probe_fd(struct fab_prov *fp)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_FD, .size = 8 };
	struct fid_cq *cq;

	if (fi_cq_open(fp->domain, &attr, &cq, NULL))
		return 0;
	fi_close(&cq->fid);
	return 1;
}

/* "prov" or "prov:domain" */
static void split_name(const char *name, char *prov, size_t plen, char *dom, size_t dlen)
{
	const char *colon = strchr(name, ':');
	size_t n = colon ? (size_t)(colon - name) : strlen(name);

	snprintf(prov, plen, "%.*s", (int)n, name);
	snprintf(dom, dlen, "%s", colon ? colon + 1 : "");
}

/* MSG before RDM; within each, an endpoint that orders Sends after earlier RDMA Writes
 * (FI_ORDER_SAW) is preferred, since RFC 5666 replies rely on it. */
/* RPC-over-RDMA sends a small reply right after a large RDMA Write, and many calls at
 * once: Nagle's algorithm on the tcp provider's sockets holds them back (measured: 1 MiB
 * READs, 32 in flight, 5x slower). Off unless the user set FI_TCP_NODELAY. */
static void tcp_defaults(void)
{
	setenv("FI_TCP_NODELAY", "1", 0);
}

static struct fi_info *find_info(const char *prov, const char *dom, int *rdm)
{
	enum fi_ep_type types[2] = { FI_EP_MSG, FI_EP_RDM };
	struct fi_info *info = NULL;
	int t, ordered;

	tcp_defaults();
	for (t = 0; t < 2 && !info; t++) {
		for (ordered = 1; ordered >= 0 && !info; ordered--) {
			struct fi_info *h = make_hints(prov, dom[0] ? dom : NULL, types[t]);

			if (!h)
				return NULL;
			if (ordered)
				h->tx_attr->msg_order = FI_ORDER_SAW;
			if (fi_getinfo(FAB_VERSION, NULL, NULL, 0, h, &info))
				info = NULL;
			fi_freeinfo(h);
			*rdm = t == 1;
		}
	}
	return info;
}

static int check_usable(const struct fi_info *i, char *err, size_t errlen)
{
	if ((i->domain_attr->mr_mode & FI_MR_PROV_KEY) && i->domain_attr->mr_key_size > 4) {
		set_err(err, errlen, "provider %s uses keys of more than 32 bits and does not let %s",
			i->fabric_attr->prov_name, "us choose them (RFC 5666 §2 needs 32-bit handles)");
		return -RPCRDMA_ERR_NOPROV;
	}
	return 0;
}

int rpcrdma__prov_fabric_open(const char *name, struct rpcrdma_prov **out, char *err,
			      size_t errlen)
{
	char prov[32], dom[64];
	struct fab_prov *fp;
	int rdm = 0, rc;

	split_name(name, prov, sizeof(prov), dom, sizeof(dom));
	fp = calloc(1, sizeof(*fp));
	if (!fp)
		return -RPCRDMA_ERR_NOMEM;
	fp->base.ops = &fab_ops;
	rpcrdma__keys_init(&fp->keys);
	fp->info = find_info(prov, dom, &rdm);
	if (!fp->info) {
		set_err(err, errlen, "libfabric provider '%s' is not usable here: it is missing, "
			"has no device, or lacks reliable messaging with RDMA (FI_MSG+FI_RMA)%s",
			prov, dom[0] ? " on that domain" : "");
		rc = -RPCRDMA_ERR_NOPROV;
		goto out_free;
	}
	rc = check_usable(fp->info, err, errlen);
	if (rc)
		goto out_free;
	fp->rdm = rdm;
	fp->mr_mode = fp->info->domain_attr->mr_mode;
	rc = map_err(fi_fabric(fp->info->fabric_attr, &fp->fabric, NULL));
	if (!rc)
		rc = map_err(fi_domain(fp->fabric, fp->info, &fp->domain, NULL));
	if (rc) {
		set_err(err, errlen, "cannot open libfabric provider '%s'%s", prov, "");
		rc = -RPCRDMA_ERR_NOPROV;
		goto out_free;
	}
	fill_caps(&fp->base.caps, fp->info, rdm);
	fp->base.caps.has_fd = (uint32_t)probe_fd(fp);
	*out = &fp->base;
	return 0;
out_free:
	fab_close(&fp->base);
	return rc;
}

static int seen(const struct rpcrdma_prov_caps *out, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(out[i].name, name))
			return 1;
	return 0;
}

int rpcrdma__prov_fabric_probe(struct rpcrdma_prov_caps *out, int max)
{
	enum fi_ep_type types[2] = { FI_EP_MSG, FI_EP_RDM };
	int n = 0, t;

	for (t = 0; t < 2; t++) {
		struct fi_info *h = make_hints(NULL, NULL, types[t]), *list = NULL, *i;

		if (!h)
			break;
		if (fi_getinfo(FAB_VERSION, NULL, NULL, 0, h, &list))
			list = NULL;
		fi_freeinfo(h);
		for (i = list; i && n < max; i = i->next) {
			/* layered utility providers ("tcp;ofi_rxm") are not ours to drive */
			if (strchr(i->fabric_attr->prov_name, ';') ||
			    seen(out, n, i->fabric_attr->prov_name))
				continue;
			fill_caps(&out[n], i, t == 1);
			out[n].has_fd = 2;  /* unknown until opened */
			n++;
		}
		fi_freeinfo(list);
	}
	return n;
}
