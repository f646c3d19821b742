/* SPDX-License-Identifier: BSD-2-Clause */
/* The verbs provider: RDMA CM (librdmacm) and verbs (libibverbs) driven directly, for
 * InfiniBand, RoCE and iWARP — the way the Linux kernel's NFS/RDMA client and server
 * drive them.
 *
 * Why not libfabric's verbs provider: it puts a header of its own (a length byte) in
 * front of the connection private data, so RFC 8797's block does not start the private
 * data a kernel peer reads, and a kernel peer's block is taken for that header. Here the
 * private data handed to rdma_connect()/rdma_accept()/rdma_reject() is exactly the
 * caller's bytes, and a peer's is read from the first byte (verbs_cm_param() and
 * verbs_peer_pdata(), the rules RFC 8797 §3 relies on). libfabric's verbs stays
 * reachable as "fi_verbs".
 *
 * One device per provider handle ("verbs" = the first, "verbs:mlx5_1" = that one): its
 * protection domain holds every registration. A connection is one RC queue pair with its
 * own completion queue, completion channel and CM event channel; rpcrdma_ep_fd() is an
 * epoll over the last two. Work requests carry one local and one remote segment; the
 * operation bookkeeping is prov_opq.c's, shared with the libfabric provider. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "dl_versions.h"
#include "objpool.h"
#include "prov_int.h"
#include "prov_opq.h"
#include "prov_verbs.h"
#include "verbs_dl.h"

#define VB_DEPTH 128u             /* work requests per direction */
#define VB_RD_ATOM 16u            /* RDMA Reads in flight, each way, at most */
#define VB_RESOLVE_MS 2000
#define VB_CONNECT_MS 10000       /* when the caller gives no time-out */
#define VB_BACKLOG 128
#define VB_CQ_BATCH 16
#define VB_SPIN_BEFORE_BLOCK 200
#define VB_FLUSH_MS 200           /* for flushed work requests to come back */
#define VB_ACK_EVERY 64
#define VB_INLINE_WANT 256u       /* bytes a small Send may carry in its work request */
#define VB_MIN_RNR_TIMER 12       /* 0.64 ms (InfiniBand's encoding; 0 means 655 ms) */
#define VB_CM_LOOK_MS 1           /* a polling loop reads the CM channel this often */
#define VB_REGIONS 16             /* long-lived memory (rpcrdma_mem_add) per handle */
#define VB_MW_WRS 64u             /* window binds and invalidations in flight per QP */
#define VB_MW_KEPT 256u           /* unbound windows an endpoint keeps for its next chunks */
#define VB_INV_MS 1000            /* for an invalidation to complete, before the window is
				     destroyed instead */
/* work request ids of window operations: never a piece's address */
#define VB_WR_BIND 1u
#define VB_WR_INV 2u

struct vb_prov {
	struct rpcrdma_prov base;
	struct ibv_context **devs;   /* rdma_get_devices(), freed at close */
	struct ibv_context *ctx;     /* the device */
	struct ibv_pd *pd;
	uint8_t rd_atom, init_depth;
	int iwarp;                   /* the device is iWARP (siw, Chelsio, Intel E810...) */
	struct rpcrdma__spares spare_mrs;   /* struct vb_mr of deregistered memory, for the
					       next registration: none allocated per chunk */
	uint32_t max_qp_wr;
	int windows;                 /* the device binds type 2 memory windows */
	int wc_inv;                  /* the wc_flags that say a receive invalidated a key */
	int windows_failed;          /* a bind failed: none more (atomic) */
	pthread_mutex_t rlock;       /* the regions, shared by the endpoints' threads */
	struct vb_region {
		uint8_t *addr;
		size_t len;
		struct ibv_mr *mr;   /* local write and window binding, no remote right */
		unsigned users;      /* registrations inside it that live */
	} regions[VB_REGIONS];
};

/* How a registration was made: a registration of its own (ibv_reg_mr), the region's
 * (local access inside long-lived memory), a window bound over the region on one
 * endpoint, or a window whose queue pair went (closed or lost: destroyed before it). */
enum vb_kind { VB_OWN, VB_SUB, VB_WIN, VB_ORPHAN };

struct vb_mr {
	struct rpcrdma_mr base;
	struct ibv_mr *mr;           /* its own, or its region's */
	enum vb_kind kind;
	struct vb_region *region;    /* VB_SUB, VB_WIN, VB_ORPHAN */
	struct ibv_mw *mw;           /* VB_WIN */
	struct vb_ep *ep;            /* VB_WIN */
	struct vb_mr *wprev, *wnext; /* VB_WIN: the endpoint's live windows */
	int remote_inv;              /* VB_WIN: the peer's Send With Invalidate freed it */
};

struct vb_ep {
	struct rpcrdma_ep base;
	struct vb_prov *vp;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	int qp_live;                 /* the QP exists and the connection stands */
	int broken;                  /* a completion in error: tear down after the batch */
	int epfd;
	unsigned cq_events;          /* completion events not yet acknowledged */
	int64_t cm_looked;           /* when the CM channel was last read (ms); 0: read next */
	uint32_t max_inline;         /* Sends up to this long go inline (IBV_SEND_INLINE) */
	struct vb_connreq *req;      /* the request, until it is accepted: rejected if freed */
	int accepted;                /* the request was accepted (REP sent) */
	uint32_t mw_cap;             /* window operations the send queue has room for */
	uint32_t mw_wrs;             /* ... in flight */
	uint64_t inv_posted, inv_seen;   /* invalidations, in send-queue order */
	struct vb_mr *wins;          /* windows bound on this QP and not yet released */
	int inv_next;                /* the next Send posted invalidates inv_rkey at the peer */
	uint32_t inv_rkey;
	struct ibv_mw **mw_free;     /* unbound windows, VB_MW_KEPT at most */
	uint32_t nmw_free;
	struct rpcrdma__opq q;
};

struct vb_listener {
	struct rpcrdma_listener base;
	struct vb_prov *vp;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
};

struct vb_connreq {
	struct rpcrdma_connreq base;
	struct vb_listener *l;
	struct rdma_cm_id *id;       /* the new connection's */
	/* from the connect request, as the CM gives them: seen from here (the peer's
	 * initiator depth is the Read responder resources it wants of us) */
	uint8_t resp_res, init_depth;
};

static const struct rpcrdma_prov_ops vb_ops;

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

struct rpcrdma__ibv_fns rpcrdma__ibv_fns;
struct rpcrdma__rdmacm_fns rpcrdma__rdmacm_fns;
RPCRDMA__DL_LIB(ibv_lib, "libibverbs.so.1", NULL, "libibverbs1 and ibverbs-providers",
		RPCRDMA__IBV_FNS, rpcrdma__ibv_fns);
RPCRDMA__DL_LIB(rdmacm_lib, "librdmacm.so.1", NULL, "librdmacm1", RPCRDMA__RDMACM_FNS,
		rpcrdma__rdmacm_fns);

int rpcrdma__verbs_load(char *err, size_t errlen)
{
	int rc = rpcrdma__dl_load(&ibv_lib, err, errlen);

	return rc ? rc : rpcrdma__dl_load(&rdmacm_lib, err, errlen);
}

/* ---- the bytes on the wire: private data exactly the caller's (RFC 8797) ---- */

void rpcrdma__verbs_cm_param(struct rdma_conn_param *p, const void *pdata, size_t len,
			     uint8_t responder_resources, uint8_t initiator_depth)
{
	memset(p, 0, sizeof(*p));
	p->private_data = len ? pdata : NULL;
	p->private_data_len = (uint8_t)len;
	p->responder_resources = responder_resources;
	p->initiator_depth = initiator_depth;
	p->flow_control = 1;
	p->retry_count = 7;
	/* RPC-over-RDMA's credits keep a receive posted for every Send the peer may make
	 * (RFC 5666 §3.3); a Send that still meets none is retried, not failed */
	p->rnr_retry_count = 7;
}

/* Fabrics pad private data (InfiniBand: 56 bytes in a request, 196 in a reply); the
 * block starts at the first byte and the padding is kept (rpcrdma_pdata_decode allows
 * it), up to RPCRDMA_PDATA_MAX. */
size_t rpcrdma__verbs_peer_pdata(const struct rdma_conn_param *p, uint8_t *out)
{
	size_t len = p->private_data ? p->private_data_len : 0;

	if (len > RPCRDMA_PDATA_MAX)
		len = RPCRDMA_PDATA_MAX;
	if (len)
		memcpy(out, p->private_data, len);
	return len;
}

/* ---- errors ---- */

static int map_errno(int e)
{
	switch (e) {
	case 0: return 0;
	case EAGAIN:
	case ENOMEM: return -RPCRDMA_ERR_AGAIN;   /* a work queue is full */
	case ETIMEDOUT: return -RPCRDMA_ERR_TIMEDOUT;
	case ECONNREFUSED: return -RPCRDMA_ERR_REFUSED;
	case EADDRINUSE:
	case EADDRNOTAVAIL:
	case ENODEV: return -RPCRDMA_ERR_ADDR;
	case EINVAL: return -RPCRDMA_ERR_INVAL;
	default: return -RPCRDMA_ERR_IO;
	}
}

static int map_wc(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_SUCCESS: return 0;
	case IBV_WC_WR_FLUSH_ERR:
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR: return -RPCRDMA_ERR_DISCONN;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR: return -RPCRDMA_ERR_ACCESS;
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_REM_INV_REQ_ERR: return -RPCRDMA_ERR_PROTO;
	default: return -RPCRDMA_ERR_IO;
	}
}

static void set_err(char *err, size_t errlen, const char *msg, const char *arg)
{
	if (err && errlen)
		snprintf(err, errlen, msg, arg);
}

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ? -1 : 0;
}

/* ---- CM events ---- */

/* The next event on ch within timeout_ms (-1: forever); the caller acks it. */
static int cm_next(struct rdma_event_channel *ch, int timeout_ms, struct rdma_cm_event **ev)
{
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : rpcrdma__now_ms() + timeout_ms;

	for (;;) {
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };
		int64_t left = deadline - rpcrdma__now_ms();

		if (rdma_get_cm_event(ch, ev) == 0)
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			return map_errno(errno);
		if (left <= 0)
			return -RPCRDMA_ERR_TIMEDOUT;
		poll(&p, 1, left > 1000 ? 1000 : (int)left);
	}
}

/* Wait for one event of type want on a connecting id; any other ends the wait with the
 * error that event means. *ev is left for the caller (to read, then ack) on success. */
static int cm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		     int timeout_ms, struct rdma_cm_event **ev)
{
	int rc = cm_next(ch, timeout_ms, ev);

	if (rc)
		return rc;
	if ((*ev)->event == want)
		return 0;
	switch ((*ev)->event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR: rc = -RPCRDMA_ERR_ADDR; break;
	case RDMA_CM_EVENT_UNREACHABLE: rc = -RPCRDMA_ERR_REFUSED; break;
	/* IB_CM_REJ_CONSUMER_DEFINED (28): the listener said no; anything else (no
	 * listener on that port, iWARP's ECONNREFUSED): nobody there */
	case RDMA_CM_EVENT_REJECTED:
		rc = (*ev)->status == 28 ? -RPCRDMA_ERR_REJECTED : -RPCRDMA_ERR_REFUSED;
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL: rc = -RPCRDMA_ERR_NOPROV; break;
	default: rc = -RPCRDMA_ERR_DISCONN; break;
	}
	rdma_ack_cm_event(*ev);
	*ev = NULL;
	return rc;
}

/* ---- endpoints ---- */

static struct vb_ep *ep_alloc(struct vb_prov *vp)
{
	struct vb_ep *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->base.prov = &vp->base;
	e->vp = vp;
	e->epfd = -1;
	if (rpcrdma__opq_init(&e->q, vp->base.caps.tx_depth, vp->base.caps.rx_depth)) {
		free(e);
		return NULL;
	}
	e->ch = rdma_create_event_channel();
	if (!e->ch || nonblock(e->ch->fd)) {
		if (e->ch)
			rdma_destroy_event_channel(e->ch);
		rpcrdma__opq_free(&e->q);
		free(e);
		return NULL;
	}
	return e;
}

static int epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Completion channel, CQ and RC queue pair on the id's device, and the wait fd. */
static int ep_make_qp(struct vb_ep *e)
{
	const struct rpcrdma_prov_caps *c = &e->vp->base.caps;
	struct ibv_qp_init_attr qa;

	if (e->id->verbs != e->vp->ctx)
		return -RPCRDMA_ERR_ADDR;   /* the address is on another device */
	e->cc = ibv_create_comp_channel(e->vp->ctx);
	if (!e->cc || nonblock(e->cc->fd))
		return -RPCRDMA_ERR_IO;
	/* windows' binds and invalidations take send-queue places beyond the operations' */
	e->mw_cap = e->vp->windows && e->vp->max_qp_wr > c->tx_depth
		    ? min32(VB_MW_WRS, e->vp->max_qp_wr - c->tx_depth) : 0;
	e->cq = ibv_create_cq(e->vp->ctx, (int)(c->tx_depth + e->mw_cap + c->rx_depth), e,
			      e->cc, 0);
	if (!e->cq)
		return -RPCRDMA_ERR_NOMEM;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = e->cq;
	qa.recv_cq = e->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = c->tx_depth + e->mw_cap;
	qa.cap.max_recv_wr = c->rx_depth;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	/* small Sends (RPC-over-RDMA headers, short replies, RDMA_DONE) copied into the work
	 * request: no DMA read of the buffer, and on most HCAs one fewer round trip over PCIe.
	 * A device that offers none gets a queue pair without. */
	qa.cap.max_inline_data = VB_INLINE_WANT;
	if (rdma_create_qp(e->id, e->vp->pd, &qa)) {
		qa.cap.max_inline_data = 0;
		if (rdma_create_qp(e->id, e->vp->pd, &qa))
			return map_errno(errno);
	}
	e->max_inline = qa.cap.max_inline_data;
	e->qp_live = 1;
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epfd < 0 || epoll_add(e->epfd, e->cc->fd) || epoll_add(e->epfd, e->ch->fd))
		return -RPCRDMA_ERR_IO;
	return 0;
}

static void ack_cq_events(struct vb_ep *e)
{
	if (e->cq && e->cq_events) {
		ibv_ack_cq_events(e->cq, e->cq_events);
		e->cq_events = 0;
	}
}

static void cq_drain(struct vb_ep *e, struct rpcrdma__sink *s);
static void windows_orphan(struct vb_ep *e);

/* Flushed work requests come back as completions once the QP is in error; they are
 * given VB_FLUSH_MS before the QP is destroyed, and what is left is failed by the caller.
 * A QP that could not be disconnected (one never connected: a request rejected with its
 * receives posted) flushes nothing, so nothing is waited for. */
static void flush_qp(struct vb_ep *e, struct rpcrdma__sink *s)
{
	int64_t until = rpcrdma__now_ms() + VB_FLUSH_MS;

	if (rdma_disconnect(e->id) == 0)   /* moves the QP to the error state */
		while (e->q.ops && rpcrdma__now_ms() < until)
			cq_drain(e, s);
	windows_orphan(e);
	rdma_destroy_qp(e->id);
	cq_drain(e, s);
}

/* The connection is gone: nothing more can complete after this. */
static void lose_connection(struct vb_ep *e, struct rpcrdma__sink *s)
{
	if (!e->qp_live)
		return;
	e->qp_live = 0;
	e->base.connected = 0;
	flush_qp(e, s);
	rpcrdma__opq_fail_all(&e->q, s);
}

/* A bind or an invalidation completed (or was flushed): its send-queue place is free;
 * invalidations complete in the order they were posted (one send queue). A bind the
 * device refused (not flushed) broke this connection: the next ones get registrations
 * instead, or every reconnection would break the same way. */
static void window_op_done(struct vb_ep *e, const struct ibv_wc *wc)
{
	e->mw_wrs--;
	if (wc->wr_id == VB_WR_INV)
		e->inv_seen++;
	if (wc->wr_id == VB_WR_BIND && wc->status != IBV_WC_SUCCESS &&
	    wc->status != IBV_WC_WR_FLUSH_ERR &&
	    !__atomic_exchange_n(&e->vp->windows_failed, 1, __ATOMIC_RELAXED))
		rpcrdma_log(RPCRDMA_LOG_WARN, "verbs: the device refused a memory window (work "
			    "completion status %d): chunks get registrations from now on",
			    (int)wc->status);
}

/* A peer's Send With Invalidate (RFC 8797 §3.2) took one of our keys: a window of ours
 * bound on this QP is then free, and its release must not invalidate it again (a
 * registration of ibv_reg_mr cannot be invalidated remotely: the device refuses the
 * Send, and the connection breaks, which is why our client does not offer it). */
static void remote_invalidated(struct vb_ep *e, uint32_t rkey)
{
	struct vb_mr *m;

	for (m = e->wins; m; m = m->wnext)
		if (m->mw->rkey == rkey) {
			m->remote_inv = 1;
			return;
		}
}

static void cq_drain(struct vb_ep *e, struct rpcrdma__sink *s)
{
	struct ibv_wc wc[VB_CQ_BATCH];
	int n, i;

	while (e->cq && (n = ibv_poll_cq(e->cq, VB_CQ_BATCH, wc)) > 0) {
		for (i = 0; i < n; i++) {
			int st = map_wc(wc[i].status);

			if (st)
				e->broken = 1;
			if (wc[i].wr_id == VB_WR_BIND || wc[i].wr_id == VB_WR_INV) {
				window_op_done(e, &wc[i]);
				continue;
			}
			if (!st && wc[i].opcode == IBV_WC_RECV && (wc[i].wc_flags & e->vp->wc_inv))
				remote_invalidated(e, wc[i].invalidated_rkey);
			rpcrdma__piece_done(&e->q, (struct rpcrdma__piece *)(uintptr_t)wc[i].wr_id,
					    st, wc[i].opcode == IBV_WC_RECV ? wc[i].byte_len : 0, s);
		}
	}
}

/* Disconnects and errors reported by the CM on the connection's own channel. */
static void cm_check(struct vb_ep *e, struct rpcrdma__sink *s)
{
	struct rdma_cm_event *ev;

	e->cm_looked = rpcrdma__now_ms();
	while (rdma_get_cm_event(e->ch, &ev) == 0) {
		int gone = ev->event == RDMA_CM_EVENT_DISCONNECTED ||
			   ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
			   ev->event == RDMA_CM_EVENT_CONNECT_ERROR;

		rdma_ack_cm_event(ev);
		if (gone)
			e->broken = 1;
	}
	if (e->broken) {
		e->broken = 0;
		lose_connection(e, s);
	}
}

/* Reading the CM channel is a system call (rdma_get_cm_event, EAGAIN when empty), where
 * polling the CQ is not on most devices: a loop that polls reads it only every
 * VB_CM_LOOK_MS, and at once after a completion in error, after a sleep that woke up,
 * and before arming. A disconnect is seen at most that much later; over soft-RoCE the
 * read was one of six system calls per RPC in a client's loop. */
static void cm_check_due(struct vb_ep *e, struct rpcrdma__sink *s)
{
	if (e->broken || e->cm_looked == 0 || rpcrdma__now_ms() - e->cm_looked >= VB_CM_LOOK_MS)
		cm_check(e, s);
}

/* The QP goes: its bound windows are destroyed first (soft-RoCE holds the QP while a
 * window is bound to it: destroying the QP then waited 51 s in the VM suite); the
 * registrations still held on them become orphans, released by rpcrdma_mr_dereg() as
 * before. */
static void windows_orphan(struct vb_ep *e)
{
	struct vb_mr *m;

	for (m = e->wins; m; m = m->wnext) {
		ibv_dealloc_mw(m->mw);
		m->mw = NULL;
		m->ep = NULL;
		m->kind = VB_ORPHAN;
	}
	e->wins = NULL;
}

/* ... and the endpoint: the unbound windows it kept too. */
static void windows_free(struct vb_ep *e)
{
	windows_orphan(e);
	while (e->nmw_free)
		ibv_dealloc_mw(e->mw_free[--e->nmw_free]);
	free(e->mw_free);
	e->mw_free = NULL;
}

static void ep_free(struct vb_ep *e)
{
	if (e->req) {   /* prepared, never accepted: the client hears a refusal */
		rdma_reject(e->id, NULL, 0);
		free(e->req);
	}
	if (e->qp_live) {
		e->qp_live = 0;
		flush_qp(e, NULL);
	}
	windows_free(e);
	ack_cq_events(e);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	if (e->cc)
		ibv_destroy_comp_channel(e->cc);
	if (e->id)
		rdma_destroy_id(e->id);
	if (e->ch)
		rdma_destroy_event_channel(e->ch);
	if (e->epfd >= 0)
		close(e->epfd);
	rpcrdma__opq_free(&e->q);
	free(e);
}

/* ---- connecting ---- */

static int resolve(struct vb_ep *e, const char *host, uint16_t port, int timeout_ms)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct rdma_cm_event *ev;
	char serv[8];
	int rc, ms = timeout_ms >= 0 && timeout_ms < VB_RESOLVE_MS ? timeout_ms : VB_RESOLVE_MS;

	snprintf(serv, sizeof(serv), "%u", port);
	if (getaddrinfo(host, serv, &hints, &ai))
		return -RPCRDMA_ERR_ADDR;
	rc = rdma_resolve_addr(e->id, NULL, ai->ai_addr, ms) ? map_errno(errno) : 0;
	freeaddrinfo(ai);
	if (!rc)
		rc = cm_expect(e->ch, RDMA_CM_EVENT_ADDR_RESOLVED, ms + 500, &ev);
	if (rc)
		return rc;
	rdma_ack_cm_event(ev);
	rc = rdma_resolve_route(e->id, ms) ? map_errno(errno) : 0;
	if (!rc)
		rc = cm_expect(e->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, ms + 500, &ev);
	if (!rc)
		rdma_ack_cm_event(ev);
	return rc;
}

/* A Send that finds no receive posted is NAKed (RNR) and retried (rnr_retry_count 7: for
 * ever) after the receiver's minimum RNR timer. The RDMA CM leaves that at 0, which the
 * InfiniBand specification (and RoCE) reads as 655 ms: each such Send would stall the
 * connection for two thirds of a second. Credits keep receives posted for calls, but not
 * for a client's first call, which can arrive before the server's engine has posted its
 * first receive on the new connection, nor for a peer's accounting slip. The timer is
 * an optional attribute of the RTS to RTS transition, so it is set once connected; a
 * device that refuses it keeps the default, with a warning. iWARP has no RNR retry. */
static void rnr_timer_short(struct vb_ep *e)
{
	struct ibv_qp_attr a;
	int rc;

	if (e->vp->iwarp)
		return;
	memset(&a, 0, sizeof(a));
	a.min_rnr_timer = VB_MIN_RNR_TIMER;
	rc = ibv_modify_qp(e->id->qp, &a, IBV_QP_MIN_RNR_TIMER);   /* an errno value */
	if (rc)
		rpcrdma_log(RPCRDMA_LOG_WARN, "verbs: cannot shorten the RNR timer (%s): a Send "
			    "that finds no receive waits 655 ms before its retry", strerror(rc));
}

static int vb_connect(struct rpcrdma_prov *p, const char *host, uint16_t port,
		      const void *pdata, size_t len, int timeout_ms, struct rpcrdma_ep **out)
{
	struct vb_prov *vp = (struct vb_prov *)p;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct vb_ep *e = ep_alloc(vp);
	int rc;

	if (!e)
		return -RPCRDMA_ERR_NOMEM;
	rc = rdma_create_id(e->ch, &e->id, e, RDMA_PS_TCP) ? map_errno(errno) : 0;
	if (!rc)
		rc = resolve(e, host ? host : "127.0.0.1", port, timeout_ms);
	if (!rc)
		rc = ep_make_qp(e);
	if (rc)
		goto out_free;
	rpcrdma__verbs_cm_param(&cp, pdata, len, vp->rd_atom, vp->init_depth);
	rc = rdma_connect(e->id, &cp) ? map_errno(errno) : 0;
	if (!rc)
		rc = cm_expect(e->ch, RDMA_CM_EVENT_ESTABLISHED,
			       timeout_ms < 0 ? VB_CONNECT_MS : timeout_ms, &ev);
	if (rc)
		goto out_free;
	e->base.peer_pdata_len = rpcrdma__verbs_peer_pdata(&ev->param.conn, e->base.peer_pdata);
	rdma_ack_cm_event(ev);
	rnr_timer_short(e);
	e->base.connected = 1;
	*out = &e->base;
	return 0;
out_free:
	ep_free(e);
	return rc;
}

/* ---- listening ---- */

static int vb_listen(struct rpcrdma_prov *p, const char *host, uint16_t port,
		     struct rpcrdma_listener **out)
{
	struct vb_prov *vp = (struct vb_prov *)p;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai = NULL;
	struct vb_listener *l = calloc(1, sizeof(*l));
	char serv[8];
	int rc = -RPCRDMA_ERR_IO, off = 0;

	if (!l)
		return -RPCRDMA_ERR_NOMEM;
	l->base.prov = p;
	l->vp = vp;
	snprintf(serv, sizeof(serv), "%u", port);
	hints.ai_family = host ? AF_UNSPEC : AF_INET;
	if (getaddrinfo(host, serv, &hints, &ai)) {
		rc = -RPCRDMA_ERR_ADDR;
		goto out_free;
	}
	l->ch = rdma_create_event_channel();
	if (!l->ch || nonblock(l->ch->fd) || rdma_create_id(l->ch, &l->id, l, RDMA_PS_TCP))
		goto out_free;
	/* "::" takes IPv4 too, as a TCP socket would */
	if (ai->ai_family == AF_INET6)
		rdma_set_option(l->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &off, sizeof(off));
	if (rdma_bind_addr(l->id, ai->ai_addr) || rdma_listen(l->id, VB_BACKLOG)) {
		rc = map_errno(errno);
		goto out_free;
	}
	freeaddrinfo(ai);
	l->base.port = ntohs(rdma_get_src_port(l->id));
	*out = &l->base;
	return 0;
out_free:
	if (ai)
		freeaddrinfo(ai);
	if (l->id)
		rdma_destroy_id(l->id);
	if (l->ch)
		rdma_destroy_event_channel(l->ch);
	free(l);
	return rc;
}

static int vb_listener_get(struct rpcrdma_listener *base, int timeout_ms,
			   struct rpcrdma_connreq **out)
{
	struct vb_listener *l = (struct vb_listener *)base;
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : rpcrdma__now_ms() + timeout_ms;

	for (;;) {
		int64_t left = deadline - rpcrdma__now_ms();
		struct rdma_cm_event *ev;
		struct vb_connreq *r;
		int rc = cm_next(l->ch, left < 0 ? 0 : (int)(left > INT32_MAX ? INT32_MAX : left), &ev);

		if (rc)
			return rc;
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);   /* events of ids not yet migrated: none of ours */
			continue;
		}
		r = calloc(1, sizeof(*r));
		if (!r || ev->id->verbs != l->vp->ctx) {
			/* no memory, or a request that came in on another device */
			rdma_reject(ev->id, NULL, 0);
			rdma_destroy_id(ev->id);
			rdma_ack_cm_event(ev);
			free(r);
			continue;
		}
		r->base.prov = base->prov;
		r->l = l;
		r->id = ev->id;
		r->resp_res = ev->param.conn.responder_resources;
		r->init_depth = ev->param.conn.initiator_depth;
		r->base.pdata_len = rpcrdma__verbs_peer_pdata(&ev->param.conn, r->base.pdata);
		rdma_ack_cm_event(ev);
		*out = &r->base;
		return 0;
	}
}

static int vb_listener_fd(const struct rpcrdma_listener *base)
{
	return ((const struct vb_listener *)base)->ch->fd;
}

static int copy_sockaddr(const struct sockaddr *sa, void *addr, size_t *len)
{
	size_t n = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					     : sizeof(struct sockaddr_in);

	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
		return -RPCRDMA_ERR_NOPROV;
	if (*len < n)
		return -RPCRDMA_ERR_NOSPC;
	memcpy(addr, sa, n);
	*len = n;
	return 0;
}

static int vb_listener_addr(const struct rpcrdma_listener *base, void *addr, size_t *len)
{
	return copy_sockaddr(rdma_get_local_addr(((const struct vb_listener *)base)->id), addr, len);
}

static void vb_listener_close(struct rpcrdma_listener *base)
{
	struct vb_listener *l = (struct vb_listener *)base;

	rdma_destroy_id(l->id);
	rdma_destroy_event_channel(l->ch);
	free(l);
}

static uint8_t min8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

static void vb_reject(struct rpcrdma_connreq *base, const void *pdata, size_t len)
{
	struct vb_connreq *r = (struct vb_connreq *)base;

	rdma_reject(r->id, len ? pdata : NULL, (uint8_t)len);
	rdma_destroy_id(r->id);
	free(r);
}

/* The new id moves to a channel of its own before it is accepted, so that its events
 * (established, disconnected) reach the connection and not the listener; its queue pair
 * is made now, so that the caller posts receives before the client can send. */
static int vb_accept_prepare(struct rpcrdma_connreq *base, struct rpcrdma_ep **out)
{
	struct vb_connreq *r = (struct vb_connreq *)base;
	struct vb_ep *e = ep_alloc(r->l->vp);
	int rc;

	if (!e) {
		vb_reject(base, NULL, 0);
		return -RPCRDMA_ERR_NOMEM;
	}
	e->id = r->id;
	e->id->context = e;
	e->req = r;
	rc = rdma_migrate_id(e->id, e->ch) ? map_errno(errno) : 0;
	if (!rc)
		rc = ep_make_qp(e);
	if (rc) {
		ep_free(e);
		return rc;
	}
	memcpy(e->base.peer_pdata, r->base.pdata, r->base.pdata_len);
	e->base.peer_pdata_len = r->base.pdata_len;
	*out = &e->base;
	return 0;
}

static int vb_accept_finish(struct rpcrdma_ep *base, const void *pdata, size_t len,
			    int timeout_ms)
{
	struct vb_ep *e = (struct vb_ep *)base;
	struct vb_connreq *r = e->req;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	int rc;

	if (!r && !e->accepted)
		return -RPCRDMA_ERR_INVAL;
	if (!r)
		goto wait;   /* accepted before: the handshake's end is still awaited */
	/* we answer no more Reads than it may issue, and issue no more than it answers: the
	 * request's fields are already seen from this side (the IB CM swaps them), so
	 * Linux's client (initiator depth 0, responder resources N) gets depth N from us;
	 * mirroring them left our server no Read to issue, and soft-RoCE waits for ever */
	rpcrdma__verbs_cm_param(&cp, pdata, len, min8(e->vp->rd_atom, r->resp_res),
				min8(e->vp->init_depth, r->init_depth));
	if (rdma_accept(e->id, &cp))
		return map_errno(errno);
	e->req = NULL;
	e->accepted = 1;
	free(r);
wait:
	/* timeout 0: the client's confirmation (RTU) has not come yet; the caller asks again
	 * later instead of waiting here, where a client that never sends it would hold a
	 * server's progress thread (a flood of such requests, every connection) */
	rc = cm_expect(e->ch, RDMA_CM_EVENT_ESTABLISHED,
		       timeout_ms < 0 ? VB_CONNECT_MS : timeout_ms, &ev);
	if (rc == -RPCRDMA_ERR_TIMEDOUT && timeout_ms == 0)
		return -RPCRDMA_ERR_AGAIN;
	if (rc)
		return rc;
	rdma_ack_cm_event(ev);
	rnr_timer_short(e);
	e->base.connected = 1;
	return 0;
}

static void vb_ep_close(struct rpcrdma_ep *base)
{
	ep_free((struct vb_ep *)base);
}

/* ---- memory ---- */

static struct vb_mr *mr_alloc(struct vb_prov *vp)
{
	struct vb_mr *m = rpcrdma__spares_get(&vp->spare_mrs);

	if (m)
		memset(m, 0, sizeof(*m));
	else
		m = calloc(1, sizeof(*m));
	return m;
}

static void mr_free(struct vb_prov *vp, struct vb_mr *m)
{
	if (!rpcrdma__spares_put(&vp->spare_mrs, m))
		free(m);
}

/* The verbs access for ours. Local write is what receives, RDMA Read sinks and remotely
 * written memory need (the verbs specification requires it with remote write), and only
 * them: a read chunk's source may be a constant (a symbolic link's target given as a
 * string literal), which the kernel cannot pin for writing (EFAULT). */
static int vb_access(const struct vb_prov *vp, unsigned access)
{
	int flags = access == RPCRDMA_ACC_REMOTE_READ ? 0 : IBV_ACCESS_LOCAL_WRITE;

	if (access & RPCRDMA_ACC_REMOTE_READ)
		flags |= IBV_ACCESS_REMOTE_READ;
	/* iWARP: a Read's data arrives as tagged writes into the sink (RFC 5040 §4.4) */
	if ((access & RPCRDMA_ACC_REMOTE_WRITE) || ((access & RPCRDMA_ACC_READ_SINK) && vp->iwarp))
		flags |= IBV_ACCESS_REMOTE_WRITE;
	return flags;
}

static int vb_mr_reg(struct rpcrdma_prov *p, void *addr, size_t len, unsigned access,
		     struct rpcrdma_mr **out)
{
	struct vb_prov *vp = (struct vb_prov *)p;
	struct vb_mr *m = mr_alloc(vp);
	int flags = vb_access(vp, access);

	if (!m)
		return -RPCRDMA_ERR_NOMEM;
	m->mr = ibv_reg_mr(vp->pd, addr, len, flags);
	/* local-only memory that the process may not write (a constant sent by Send or RDMA
	 * Write): the kernel cannot pin it for writing, and nothing writes it */
	if (!m->mr && errno == EFAULT && access == RPCRDMA_ACC_LOCAL)
		m->mr = ibv_reg_mr(vp->pd, addr, len, flags & ~IBV_ACCESS_LOCAL_WRITE);
	if (!m->mr) {
		int rc = map_errno(errno);

		mr_free(vp, m);
		return rc == -RPCRDMA_ERR_AGAIN ? -RPCRDMA_ERR_NOMEM : rc;
	}
	m->base.handle = m->mr->rkey;
	m->base.offset = (uint64_t)(uintptr_t)addr;
	m->base.addr = addr;
	m->base.len = len;
	m->base.access = access;
	m->base.prov = p;
	*out = &m->base;
	return 0;
}

/* ---- long-lived memory and windows (rpcrdma_mem_add, rpcrdma_ep_mr_reg) ---- */

static int vb_mem_add(struct rpcrdma_prov *p, void *addr, size_t len)
{
	struct vb_prov *vp = (struct vb_prov *)p;
	uint8_t *a = addr;
	struct vb_region *free_r = NULL;
	struct ibv_mr *mr;
	int i;

	/* binding needs the right on the region; remote write through a window needs local
	 * write on it (verbs specification, C10-74) */
	mr = ibv_reg_mr(vp->pd, addr, len,
			IBV_ACCESS_LOCAL_WRITE | (vp->windows ? IBV_ACCESS_MW_BIND : 0));
	if (!mr) {
		int rc = map_errno(errno);

		return rc == -RPCRDMA_ERR_AGAIN ? -RPCRDMA_ERR_NOMEM : rc;
	}
	pthread_mutex_lock(&vp->rlock);
	for (i = 0; i < VB_REGIONS; i++) {
		struct vb_region *r = &vp->regions[i];

		if (!r->mr) {
			free_r = free_r ? free_r : r;
		} else if (a < r->addr + r->len && r->addr < a + len) {
			pthread_mutex_unlock(&vp->rlock);
			ibv_dereg_mr(mr);
			return -RPCRDMA_ERR_INVAL;   /* overlaps one added before */
		}
	}
	if (free_r)
		*free_r = (struct vb_region){ a, len, mr, 0 };
	pthread_mutex_unlock(&vp->rlock);
	if (!free_r) {
		ibv_dereg_mr(mr);
		return -RPCRDMA_ERR_NOSPC;
	}
	return 0;
}

static int vb_mem_remove(struct rpcrdma_prov *p, void *addr)
{
	struct vb_prov *vp = (struct vb_prov *)p;
	struct ibv_mr *mr = NULL;
	int i, rc = -RPCRDMA_ERR_INVAL;

	pthread_mutex_lock(&vp->rlock);
	for (i = 0; i < VB_REGIONS; i++) {
		struct vb_region *r = &vp->regions[i];

		if (r->mr && r->addr == addr) {
			rc = r->users ? -RPCRDMA_ERR_AGAIN : 0;
			if (!rc) {
				mr = r->mr;
				r->mr = NULL;
			}
			break;
		}
	}
	pthread_mutex_unlock(&vp->rlock);
	if (mr && ibv_dereg_mr(mr))
		rc = -RPCRDMA_ERR_IO;
	return rc;
}

/* The region holding [addr, addr+len), taken (it cannot be removed until given back);
 * NULL if none does. */
static struct vb_region *region_take(struct vb_prov *vp, void *addr, size_t len)
{
	uint8_t *a = addr;
	struct vb_region *found = NULL;
	int i;

	pthread_mutex_lock(&vp->rlock);
	for (i = 0; i < VB_REGIONS && !found; i++) {
		struct vb_region *r = &vp->regions[i];

		if (r->mr && a >= r->addr && (size_t)(a - r->addr) <= r->len &&
		    len <= r->len - (size_t)(a - r->addr)) {
			r->users++;
			found = r;
		}
	}
	pthread_mutex_unlock(&vp->rlock);
	return found;
}

static void region_give(struct vb_prov *vp, struct vb_region *r)
{
	pthread_mutex_lock(&vp->rlock);
	r->users--;
	pthread_mutex_unlock(&vp->rlock);
}

static struct ibv_mw *window_get(struct vb_ep *e)
{
	if (e->nmw_free)
		return e->mw_free[--e->nmw_free];
	return ibv_alloc_mw(e->vp->pd, IBV_MW_TYPE_2);
}

/* An unbound window kept for the next chunk, or destroyed. */
static void window_put(struct vb_ep *e, struct ibv_mw *mw)
{
	if (!e->mw_free)
		e->mw_free = calloc(VB_MW_KEPT, sizeof(*e->mw_free));
	if (e->mw_free && e->nmw_free < VB_MW_KEPT)
		e->mw_free[e->nmw_free++] = mw;
	else
		ibv_dealloc_mw(mw);
}

/* Whether a bind or an invalidation may be posted: the connection stands and the send
 * queue has a place for it. Completions of earlier ones not yet polled are collected
 * first (the others found are kept for rpcrdma_ep_poll()): chunks registered in a burst
 * would otherwise find the places taken. */
static int window_room(struct vb_ep *e)
{
	if (e->qp_live && !e->broken && e->mw_wrs >= e->mw_cap)
		cq_drain(e, NULL);
	return e->qp_live && !e->broken && e->mw_wrs < e->mw_cap;
}

/* A type 2 window over exactly [addr, addr+len) with exactly the remote rights, bound
 * on this QP (only its peer can use it) under a new key: the work request goes before
 * any Send that advertises it, and the send queue keeps their order. */
static int window_bind(struct vb_ep *e, struct vb_mr *m, void *addr, size_t len, int rights)
{
	struct ibv_mw *mw;
	struct ibv_send_wr wr, *bad;
	uint32_t key;

	if (!window_room(e) || __atomic_load_n(&e->vp->windows_failed, __ATOMIC_RELAXED))
		return -RPCRDMA_ERR_AGAIN;
	mw = window_get(e);
	if (!mw)
		return -RPCRDMA_ERR_NOMEM;
	key = ibv_inc_rkey(mw->rkey);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = VB_WR_BIND;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = key;
	wr.bind_mw.bind_info.mr = m->region->mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = (unsigned)rights;
	if (ibv_post_send(e->id->qp, &wr, &bad)) {
		window_put(e, mw);
		return -RPCRDMA_ERR_AGAIN;
	}
	mw->rkey = key;   /* the device checks the next bind against the key now current */
	e->mw_wrs++;
	m->mw = mw;
	m->ep = e;
	m->kind = VB_WIN;
	m->wnext = e->wins;
	if (e->wins)
		e->wins->wprev = m;
	e->wins = m;
	return 0;
}

static int vb_ep_mr_reg(struct rpcrdma_ep *base, void *addr, size_t len, unsigned access,
			struct rpcrdma_mr **out)
{
	struct vb_ep *e = (struct vb_ep *)base;
	struct vb_prov *vp = e->vp;
	int flags = vb_access(vp, access);
	int rights = flags & (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	struct vb_region *r = region_take(vp, addr, len);
	struct vb_mr *m;

	if (!r)
		return vb_mr_reg(base->prov, addr, len, access, out);
	m = mr_alloc(vp);
	if (!m) {
		region_give(vp, r);
		return -RPCRDMA_ERR_NOMEM;
	}
	m->region = r;
	m->mr = r->mr;
	m->kind = VB_SUB;
	if (rights && window_bind(e, m, addr, len, rights)) {
		/* no window to be had: a registration of its own, as anywhere else; it holds
		 * the region all the same, so that removing it behaves alike on every device */
		int rc = vb_mr_reg(base->prov, addr, len, access, out);

		mr_free(vp, m);
		if (rc)
			region_give(vp, r);
		else
			((struct vb_mr *)*out)->region = r;
		return rc;
	}
	m->base.handle = m->kind == VB_WIN ? m->mw->rkey : r->mr->lkey;
	m->base.offset = (uint64_t)(uintptr_t)addr;
	m->base.addr = addr;
	m->base.len = len;
	m->base.access = access;
	m->base.prov = base->prov;
	*out = &m->base;
	return 0;
}

/* Invalidates the window on its QP and waits for that to complete: when this returns
 * the peer can no longer reach the chunk. Other completions found meanwhile are kept
 * for rpcrdma_ep_poll(). A window that cannot be invalidated so (the connection is
 * failing, the queue is full, no completion in VB_INV_MS) is destroyed instead, which
 * the device does at once. */
static void window_unbind(struct vb_ep *e, struct vb_mr *m)
{
	struct ibv_send_wr wr, *bad;
	int64_t until;
	uint64_t mine;

	if (m->wprev)
		m->wprev->wnext = m->wnext;
	else
		e->wins = m->wnext;
	if (m->wnext)
		m->wnext->wprev = m->wprev;
	if (m->remote_inv) {         /* already free: the peer's Send invalidated it */
		window_put(e, m->mw);
		return;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = VB_WR_INV;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = m->mw->rkey;
	if (!window_room(e) || ibv_post_send(e->id->qp, &wr, &bad)) {
		ibv_dealloc_mw(m->mw);
		return;
	}
	e->mw_wrs++;
	mine = ++e->inv_posted;
	until = rpcrdma__now_ms() + VB_INV_MS;
	while (e->inv_seen < mine && !e->broken && rpcrdma__now_ms() < until)
		cq_drain(e, NULL);
	if (e->inv_seen >= mine && !e->broken)
		window_put(e, m->mw);
	else
		ibv_dealloc_mw(m->mw);
}

static int vb_mr_dereg(struct rpcrdma_mr *base)
{
	struct vb_mr *m = (struct vb_mr *)base;
	struct vb_prov *vp = (struct vb_prov *)base->prov;
	int rc = 0;

	if (m->kind == VB_OWN)
		rc = ibv_dereg_mr(m->mr) ? -RPCRDMA_ERR_IO : 0;
	else if (m->kind == VB_WIN)
		window_unbind(m->ep, m);
	if (m->region)
		region_give(vp, m->region);
	mr_free(vp, m);
	return rc;
}

/* ---- posting ---- */

/* One work request per piece (rpcrdma__post_fn), always signalled. */
static int post_piece(void *impl, uint32_t opcode, void *laddr, uint32_t len,
		      struct rpcrdma_mr *mr, uint64_t raddr, uint32_t key, struct rpcrdma__piece *pc)
{
	struct vb_ep *e = impl;
	struct ibv_sge sge = { (uintptr_t)laddr, len, ((struct vb_mr *)mr)->mr->lkey };
	int rc;

	if (opcode == RPCRDMA_OP_RECV) {
		struct ibv_recv_wr wr = { .wr_id = (uintptr_t)pc, .sg_list = &sge, .num_sge = 1 },
				   *bad;

		rc = ibv_post_recv(e->id->qp, &wr, &bad);
	} else {
		struct ibv_send_wr wr = { .wr_id = (uintptr_t)pc, .sg_list = &sge,
					  .num_sge = len ? 1 : 0, .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		wr.opcode = opcode == RPCRDMA_OP_SEND ? IBV_WR_SEND
			  : opcode == RPCRDMA_OP_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
		if (opcode == RPCRDMA_OP_SEND && e->inv_next) {
			wr.opcode = IBV_WR_SEND_WITH_INV;
			wr.invalidate_rkey = e->inv_rkey;
		}
		if (opcode == RPCRDMA_OP_SEND && len && len <= e->max_inline)
			wr.send_flags |= IBV_SEND_INLINE;
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = key;
		rc = ibv_post_send(e->id->qp, &wr, &bad);
	}
	return map_errno(rc);
}

static int vb_post_recv(struct rpcrdma_ep *base, const struct rpcrdma_sge *sge, void *ctx)
{
	struct vb_ep *e = (struct vb_ep *)base;

	return rpcrdma__post_one(&e->q, e->qp_live, RPCRDMA_OP_RECV, sge, ctx, post_piece, e);
}

static int vb_post_send(struct rpcrdma_ep *base, const struct rpcrdma_sge *sge, void *ctx)
{
	struct vb_ep *e = (struct vb_ep *)base;

	return rpcrdma__post_one(&e->q, e->qp_live, RPCRDMA_OP_SEND, sge, ctx, post_piece, e);
}

/* The Send's one piece goes through rpcrdma__post_one like any Send; the key to
 * invalidate rides on the endpoint for that call (an endpoint has one user at a time). */
static int vb_post_send_inv(struct rpcrdma_ep *base, const struct rpcrdma_sge *sge,
			    uint32_t handle, void *ctx)
{
	struct vb_ep *e = (struct vb_ep *)base;
	int rc;

	e->inv_next = 1;
	e->inv_rkey = handle;
	rc = rpcrdma__post_one(&e->q, e->qp_live, RPCRDMA_OP_SEND, sge, ctx, post_piece, e);
	e->inv_next = 0;
	return rc;
}

static int vb_post_rma(struct rpcrdma_ep *base, uint32_t opcode, const struct rpcrdma_sge *l,
		       uint32_t nl, const struct rpcrdma_segment *r, uint32_t nr, void *ctx)
{
	struct vb_ep *e = (struct vb_ep *)base;

	return rpcrdma__post_rma(&e->q, e->qp_live, opcode, l, nl, r, nr, ctx, post_piece, e);
}

/* ---- progress ---- */

static int vb_poll(struct rpcrdma_ep *base, struct rpcrdma_cqe *out, int max)
{
	struct vb_ep *e = (struct vb_ep *)base;
	struct rpcrdma__sink s = { out, max, 0 };

	s.n = rpcrdma__opq_pop(&e->q, out, max);
	if (s.n < max && e->qp_live) {
		cq_drain(e, &s);
		cm_check_due(e, &s);
	}
	return s.n;
}

/* Armed, then looked at once more (a completion may have come before the arming), then
 * asleep on the completion and CM channels. */
static int fd_wait(struct vb_ep *e, int timeout_ms)
{
	struct epoll_event ev;
	struct ibv_cq *cq;
	void *cq_ctx;
	int n;

	if (ibv_req_notify_cq(e->cq, 0))
		return -RPCRDMA_ERR_IO;
	cq_drain(e, NULL);
	if (e->q.stash.n)
		return 0;
	do
		n = epoll_wait(e->epfd, &ev, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		e->cm_looked = 0;   /* the CM channel may be what woke us */
	while (ibv_get_cq_event(e->cc, &cq, &cq_ctx) == 0)
		if (++e->cq_events >= VB_ACK_EVERY)
			ack_cq_events(e);
	return n > 0 ? 0 : -RPCRDMA_ERR_TIMEDOUT;
}

/* Safe to sleep on the endpoint's descriptor: the completion events already delivered
 * are taken off the channel, the CQ is armed, and nothing was completed meanwhile. */
static int vb_arm(struct rpcrdma_ep *base)
{
	struct vb_ep *e = (struct vb_ep *)base;
	struct ibv_cq *cq;
	void *cq_ctx;

	if (!e->qp_live || e->q.stash.n)
		return -RPCRDMA_ERR_AGAIN;
	while (ibv_get_cq_event(e->cc, &cq, &cq_ctx) == 0)
		if (++e->cq_events >= VB_ACK_EVERY)
			ack_cq_events(e);
	if (ibv_req_notify_cq(e->cq, 0))
		return -RPCRDMA_ERR_AGAIN;
	cq_drain(e, NULL);
	cm_check(e, NULL);   /* a pending CM event keeps the descriptor readable */
	return e->q.stash.n || !e->qp_live ? -RPCRDMA_ERR_AGAIN : 0;
}

/* The CM channel's descriptor is readable while events wait on it. */
static int vb_listener_arm(struct rpcrdma_listener *base)
{
	struct pollfd p = { .fd = ((struct vb_listener *)base)->ch->fd, .events = POLLIN };

	return poll(&p, 1, 0) == 0 ? 0 : -RPCRDMA_ERR_AGAIN;
}

static int vb_wait(struct rpcrdma_ep *base, int timeout_ms)
{
	struct vb_ep *e = (struct vb_ep *)base;
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : rpcrdma__now_ms() + timeout_ms;
	unsigned spins = 0;

	for (;;) {
		if (e->qp_live) {
			cq_drain(e, NULL);
			cm_check_due(e, NULL);
		}
		if (e->q.stash.n)
			return 0;
		if (!e->qp_live)
			return -RPCRDMA_ERR_DISCONN;
		if (rpcrdma__now_ms() >= deadline)
			return -RPCRDMA_ERR_TIMEDOUT;
		if (++spins > VB_SPIN_BEFORE_BLOCK) {
			int64_t left = deadline - rpcrdma__now_ms();

			fd_wait(e, left > 100 ? 100 : (int)(left < 0 ? 0 : left));
		}
	}
}

static int vb_ep_fd(const struct rpcrdma_ep *base)
{
	return ((const struct vb_ep *)base)->epfd;
}

static int vb_peer_addr(struct rpcrdma_ep *base, void *addr, size_t *len)
{
	struct vb_ep *e = (struct vb_ep *)base;

	return copy_sockaddr(rdma_get_peer_addr(e->id), addr, len);
}

static int vb_names(struct rpcrdma_ep *base, void *local, size_t *llen, void *peer, size_t *plen)
{
	struct vb_ep *e = (struct vb_ep *)base;
	int rc = copy_sockaddr(rdma_get_local_addr(e->id), local, llen);

	return rc ? rc : copy_sockaddr(rdma_get_peer_addr(e->id), peer, plen);
}

/* ---- provider ---- */

static void vb_close(struct rpcrdma_prov *p)
{
	struct vb_prov *vp = (struct vb_prov *)p;
	struct vb_mr *m;

	int i;

	while ((m = rpcrdma__spares_get(&vp->spare_mrs)) != NULL)
		free(m);
	for (i = 0; i < VB_REGIONS; i++)
		if (vp->regions[i].mr)
			ibv_dereg_mr(vp->regions[i].mr);
	pthread_mutex_destroy(&vp->rlock);
	if (vp->pd)
		ibv_dealloc_pd(vp->pd);
	if (vp->devs)
		rdma_free_devices(vp->devs);
	free(vp);
}

static const struct rpcrdma_prov_ops vb_ops = {
	.close = vb_close,
	.listen = vb_listen,
	.listener_get = vb_listener_get,
	.listener_fd = vb_listener_fd,
	.listener_close = vb_listener_close,
	.accept_prepare = vb_accept_prepare,
	.accept_finish = vb_accept_finish,
	.reject = vb_reject,
	.connect = vb_connect,
	.ep_close = vb_ep_close,
	.mr_reg = vb_mr_reg,
	.mr_dereg = vb_mr_dereg,
	.mem_add = vb_mem_add,
	.mem_remove = vb_mem_remove,
	.ep_mr_reg = vb_ep_mr_reg,
	.post_recv = vb_post_recv,
	.post_send = vb_post_send,
	.post_send_inv = vb_post_send_inv,
	.post_rma = vb_post_rma,
	.poll = vb_poll,
	.wait = vb_wait,
	.ep_fd = vb_ep_fd,
	.ep_arm = vb_arm,
	.listener_arm = vb_listener_arm,
	.listener_addr = vb_listener_addr,
	.peer_addr = vb_peer_addr,
	.names = vb_names,
};

/* Whether chunks in long-lived memory get type 2 memory windows on this device.
 * Soft-RoCE (rdma_rxe, vendor 0xffffff) binds them, but Debian 12's kernel (6.1) checks a
 * Read or Write through a window against the whole registration under it, not against
 * the window's own bytes (seen in the VM suite: test_windows_range): it would expose the
 * rest of the long-lived memory to the peer for as long as a window lives. So not there,
 * unless RPCRDMA_VERBS_WINDOWS=1 asks (tests, measurements); =0 turns them off anywhere. */
#define VB_SOFT_ROCE_VENDOR 0xffffffu

static uint32_t windows_usable(const struct ibv_device_attr *a)
{
	const char *env = getenv("RPCRDMA_VERBS_WINDOWS");
	int has = !!(a->device_cap_flags &
		     (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B));

	if (env && (*env == '0' || *env == '1'))
		return has && *env == '1';
	return has && a->vendor_id != VB_SOFT_ROCE_VENDOR;
}

/* Soft-RoCE's user-space provider hands its receive completions' flags over as the kernel
 * wrote them, and the kernel's IB_WC_WITH_INVALIDATE is bit 2 (IBV_WC_IP_CSUM_OK's), not
 * IBV_WC_WITH_INV (bit 3): seen in the VM suite (Debian 12, 6.1), where a window a peer
 * had invalidated was invalidated again on its release, which crashed that kernel
 * (rxe_invalidate_mw on a free window). RC receives carry no checksum flag, so on that
 * device either bit means the key was invalidated. */
#define VB_RXE_WC_WITH_INV (1 << 2)

static int wc_inv_flags(const struct ibv_device_attr *a)
{
	return IBV_WC_WITH_INV | (a->vendor_id == VB_SOFT_ROCE_VENDOR ? VB_RXE_WC_WITH_INV : 0);
}

static void fill_caps(struct rpcrdma_prov_caps *c, struct ibv_context *ctx,
		      const struct ibv_device_attr *a)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "verbs");
	snprintf(c->fabric, sizeof(c->fabric), "%s", ibv_get_device_name(ctx->device));
	c->ep_type = RPCRDMA_EP_MSG;
	c->key_size = 4;
	c->prov_keys = 1;
	c->virt_addr = 1;
	c->write_send_ordered = 1;   /* RC: a Send is delivered after the Writes before it */
	c->enforces_access = 1;
	c->iov_limit = 1;
	c->rma_iov_limit = 1;
	c->tx_depth = min32(VB_DEPTH, (uint32_t)a->max_qp_wr);
	c->rx_depth = min32(VB_DEPTH, (uint32_t)a->max_qp_wr);
	c->has_fd = 1;
	c->max_msg_size = (size_t)1 << 31;   /* an RC message, at most */
	c->mem_windows = windows_usable(a);
	/* Send With Invalidate is part of the memory management extensions (IB base
	 * memory management; iWARP has it always), which Linux's svcrdma also asks for */
	c->remote_inv = !!(a->device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS);
}

/* The device named (NULL: the first). */
static struct ibv_context *pick_device(struct ibv_context **devs, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!name || !name[0] || !strcmp(ibv_get_device_name(devs[i]->device), name))
			return devs[i];
	return NULL;
}

int rpcrdma__prov_verbs_open(const char *domain, struct rpcrdma_prov **out, char *err,
			     size_t errlen)
{
	struct vb_prov *vp;
	struct ibv_device_attr attr;
	int n = 0, rc;

	rc = rpcrdma__verbs_load(err, errlen);
	if (rc)
		return rc;
	rc = -RPCRDMA_ERR_NOPROV;
	vp = calloc(1, sizeof(*vp));
	if (!vp)
		return -RPCRDMA_ERR_NOMEM;
	vp->base.ops = &vb_ops;
	pthread_mutex_init(&vp->rlock, NULL);
	vp->devs = rdma_get_devices(&n);
	vp->ctx = vp->devs ? pick_device(vp->devs, n, domain) : NULL;
	if (!vp->ctx) {
		set_err(err, errlen, n ? "verbs: no RDMA device named '%s' (rpcrdma info lists them)"
				       : "verbs: no RDMA device here%s",
			n ? domain : "");
		goto out_close;
	}
	if (ibv_query_device(vp->ctx, &attr)) {
		set_err(err, errlen, "verbs: cannot query device %s",
			ibv_get_device_name(vp->ctx->device));
		goto out_close;
	}
	vp->pd = ibv_alloc_pd(vp->ctx);
	if (!vp->pd) {
		set_err(err, errlen, "verbs: cannot allocate a protection domain on %s",
			ibv_get_device_name(vp->ctx->device));
		goto out_close;
	}
	fill_caps(&vp->base.caps, vp->ctx, &attr);
	vp->wc_inv = wc_inv_flags(&attr);
	vp->iwarp = vp->ctx->device->transport_type == IBV_TRANSPORT_IWARP;
	vp->max_qp_wr = (uint32_t)attr.max_qp_wr;
	vp->windows = (int)vp->base.caps.mem_windows;
	vp->rd_atom = (uint8_t)min32(VB_RD_ATOM, (uint32_t)attr.max_qp_rd_atom);
	vp->init_depth = (uint8_t)min32(VB_RD_ATOM, (uint32_t)attr.max_qp_init_rd_atom);
	*out = &vp->base;
	return 0;
out_close:
	vb_close(&vp->base);
	return rc;
}

int rpcrdma__prov_verbs_probe(struct rpcrdma_prov_caps *out, int max)
{
	struct ibv_context **devs;
	int n = 0, i, k = 0;

	if (rpcrdma__verbs_load(NULL, 0))
		return 0;   /* no rdma-core here: no devices */
	devs = rdma_get_devices(&n);
	for (i = 0; devs && i < n && k < max; i++) {
		struct ibv_device_attr attr;

		if (ibv_query_device(devs[i], &attr))
			continue;
		fill_caps(&out[k++], devs[i], &attr);
	}
	if (devs)
		rdma_free_devices(devs);
	return k;
}
