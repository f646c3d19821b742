/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal to the libfabric provider (prov_fabric.c, fabric_ep.c, fabric_msg.c,
 * fabric_rdm.c): its types and what its files use of each other. */
#ifndef RPCRDMA_FABRIC_INT_H
#define RPCRDMA_FABRIC_INT_H

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
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

#include "dl_versions.h"
#include "fabric_dl.h"
#include "objpool.h"
#include "prov_int.h"
#include "prov_opq.h"
#include "shm_bell.h"
#include "tcp_reap.h"

#define FAB_VERSION FI_VERSION(1, 17)
#define TAG_DATA 0x5250435244415441ull  /* "RPCRDATA" */
#define TAG_CTRL 0x52504352434f4e4eull  /* "RPCRCONN" */
#define CTRL_MAGIC 0x5252434du
#define CTRL_NAME_MAX 96
#define CTRL_F_PID 0x01u           /* the sender's process id follows the header */
#define CTRL_F_BELL 0x02u          /* ... then the doorbell page's name (ACCEPT) */
#define CTRL_MAX (12 + 1 + RPCRDMA__BELL_FILE_MAX + CTRL_NAME_MAX + RPCRDMA_PDATA_MAX)
#define PEER_CHECK_MS 50           /* how often an emulated connection looks at its peer */
#define EQ_LOOK_MS 1               /* how often a polled connection reads its event queue */
#define EQ_LOOK_SHARED_MS 100      /* ... one whose listener drains its completions */
#define REAP_EVERY_MS 1000         /* how often a quiet tcp listener looks for lost sockets */
#define REAP_BUSY_MS 10000         /* ... and one that is never quiet, on its request path */
#define CQ_BATCH 16
#define DEPTH_CAP 1024u
#define REJECT_MARK "RJCT"
/* Polls before sleeping on the wait fd: a reply often arrives within microseconds, and
 * a sleep and wake-up costs tens of them. */
#define SPIN_BEFORE_BLOCK 200

enum ctrl_type { CTRL_CONNREQ = 1, CTRL_ACCEPT, CTRL_REJECT, CTRL_DISCONNECT,
		 CTRL_PROBE /* dropped on receipt: sent by a parked endpoint (fabric_rdm.c) */ };

/* What the endpoint code (fabric_ep.c), below both kinds of connection, asks of the
 * emulated one (fabric_rdm.c) without calling up into it: RDM's only. */
struct fab_ep;
struct fab_ep_hooks {
	void (*ctrl)(struct fab_ep *e, size_t len);   /* a control message was received */
	void (*unwatch)(struct fab_ep *e);            /* first, when the endpoint is freed */
};

struct fab_prov {
	struct rpcrdma_prov base;
	const struct fab_ep_hooks *hooks;   /* RDM: rpcrdma__fab_rdm_hooks; MSG: NULL */
	struct fi_info *info;        /* template for endpoints */
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	int rdm;
	size_t inject_max;           /* Sends up to this size go by fi_inject (tcp); or 0 */
	unsigned parked;             /* RDM: its endpoints parked (fabric_rdm.c); under the
					park lock */
	int closed;                  /* closed by its owner; freed by the last parked one */
	uint64_t mr_mode;
	struct rpcrdma__keys keys;
	struct rpcrdma__spares spare_mrs;   /* struct fab_mr of deregistered memory, for the
					      next: a reply chunk is registered per call */
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

/* A connection-management event as read from an event queue: the entry, then the
 * peer's private data (RFC 8797's fits with room to spare). */
struct fab_cm_buf {
	struct fi_eq_cm_entry ent;
	uint8_t data[256];
};

/* One completion queue for every connection a MSG listener accepts. libfabric's tcp
 * keeps its transfer state (~430 KiB, allocated at the first operation) per completion
 * queue: one per connection made 1,000 idle connections cost 500 MiB. Each entry names
 * its piece, whose operation names the endpoint (rpcrdma__op.q). The lock (recursive: a
 * post may end the connection, which drains) covers the queue and the operations of every
 * endpoint on it, so one thread's drain may complete another endpoint's operations.
 * Its wait fd is in the listener's descriptor, not in each endpoint's: Linux refuses an
 * epoll set that would reach one file through more than 100 nested sets (a server
 * watching 100 endpoints' descriptors that each held it). */
struct fab_shcq {
	struct fid_cq *cq;
	int fd;                      /* its wait fd, or -1 */
	pthread_mutex_t lock;
	unsigned refs;               /* the listener and each endpoint; under lock */
	/* a trywait found it empty and no read has taken anything from it since: its wait
	 * fd signals the next completion, so arming another of its users need not try it
	 * again (a try is a system call over tcp, once per endpoint per sleep); under lock */
	bool armed;
	/* the listener's owner reads it (rpcrdma_listener_drain): its endpoints' polls take
	 * only what was kept for them while they are on the listener; under lock */
	bool drained_by_listener;
	/* The event queue of the same connections, for the same reason: libfabric 2.x's tcp
	 * puts its domain's epoll set (every connection's socket) into each event queue's
	 * wait set, so one queue per connection made each socket reachable through as many
	 * nested sets, and Linux refused the 50th connection's descriptor (EINVAL). Each
	 * event goes to the endpoint it names (rpcrdma__fab_sheq_drain); under lock. */
	struct fid_eq *eq;
	int eq_fd;                   /* its wait fd, or -1 */
	bool eq_due;                 /* a trywait found it pending: read at the next look */
	int64_t eq_looked;           /* when it was last read (coarse clock) */
};

struct fab_ep {
	struct rpcrdma_ep base;
	struct fab_prov *fp;
	struct fid_ep *ep;           /* NULL once the connection is gone */
	struct fid_cq *cq;           /* its own, or sh's */
	struct fab_shcq *sh;         /* MSG, accepted: the listener's completion queue */
	int wake_fd;                 /* with sh: an eventfd in epfd, for completions another
					thread drained while this endpoint was armed; or -1 */
	int armed;                   /* with sh: its owner may sleep on epfd; under sh->lock.
					RDM: marked asleep in the doorbell's page */
	int signalled;               /* with sh: wake_fd was written; under sh->lock */
	pthread_t armer;             /* with sh, while armed: the thread that armed it */
	struct fid_eq *eq;           /* MSG, its own (connecting); NULL on sh->eq */
	/* MSG: a trywait found eq quiet and no read has taken anything from it since: its
	 * wait fd signals the next event, so an arm need not try it again (over tcp each
	 * try is a system call, one per sleep) */
	bool eq_armed;
	/* MSG: the last arm left eq out of its try: if the first poll after finds no work,
	 * an event may be what woke the owner, and eq is read then (else each sleep would
	 * end at once until eq_check's clock came round) */
	bool eq_skipped;
	int64_t eq_looked;           /* MSG: when eq was last read (coarse clock) */
	int eq_due;                  /* MSG: read eq at the next poll, whenever it was read */
	/* MSG, accepted (its events on sh->eq): what the shared queue said of it, under
	 * sh->lock */
	bool ev_connected, ev_lost;
	int ev_err;                  /* the error event's libfabric code, or 0 */
	struct fid_av *av;           /* RDM */
	fi_addr_t peer;              /* RDM: the peer's address; MSG: unused */
	int epfd;                    /* epoll over the wait fds, or -1 */
	struct rpcrdma__opq q;       /* outstanding operations, kept completions */
	int peer_gone;               /* teardown pending: RDM's DISCONNECT received, or an
					error with no operation (tcp) */
	int pidfd;                   /* RDM: the peer process, readable once it ended; or -1 */
	uint32_t peer_pid;           /* RDM: the peer process, for kernels without pidfd_open */
	int64_t peer_checked;        /* RDM: when pidfd was last looked at */
	void *own_hdr, *peer_hdr;    /* RDM: our and the peer's region headers, or NULL */
	unsigned busy_gen;           /* RDM: odd while a libfabric call is under way; each
					call's start and end add one (busy_begin/_end) */
	unsigned wd_gen;             /* RDM, the watchdog's: busy_gen when it first saw ... */
	int64_t wd_since;            /* ... the call now under way, and when; or 0 */
	int watched;                 /* RDM: in the watchdog's list */
	int local_listed;            /* RDM: in this process's list of live endpoints */
	int peer_local;              /* RDM: the peer is an endpoint of this process */
	int contact_pending;         /* RDM: a first message (CONNREQ, ACCEPT) still waits for
					its receiver to take our name (fabric_rdm.c, parking) */
	fi_addr_t pending_to;        /* ... to whom */
	uint16_t pending_port;       /* ... CONNREQ: the listener's port, else 0 */
	struct fab_ep *park_next;
	char own_name[CTRL_NAME_MAX], peer_name[CTRL_NAME_MAX];
	size_t own_name_len, peer_name_len;
	struct fab_ep *local_next;
	struct fab_ep *wd_prev, *wd_next;
	struct fab_listener *lst;    /* MSG: the listener that accepted it, while both live */
	struct fab_ep *lst_prev, *lst_next;
	struct rpcrdma__tcp_pair pair;   /* MSG: its two ends */
	int pair_known;                  /* ... when libfabric could say them */
	struct fab_ctrl ctrl;        /* RDM: control receive */
	struct rpcrdma__bell bell;   /* RDM: what wakes a side that sleeps (shm_bell.c); its
					rx is in epfd */
};

struct fab_listener {
	struct rpcrdma_listener base;
	struct fab_prov *fp;
	struct fid_pep *pep;         /* MSG */
	struct fid_eq *eq;           /* MSG */
	struct fab_shcq *sh;         /* MSG: what the connections it accepts complete on */
	int epfd;                    /* MSG with a wait fd: over eq's and sh's (listener_fd) */
	struct fab_ep *lep;          /* RDM: the named endpoint */
	struct fab_ep *spare;        /* RDM: made while idle, for the next accept */
	int lockfd;                  /* RDM: holds the name while we live (shm_life.c) */
	char name[40];               /* RDM */
	struct rpcrdma__bell bell;   /* RDM: rung by each client after its CONNREQ; rx in epfd */
	struct fab_ep *accepted;     /* MSG: live connections it accepted */
	struct rpcrdma__tcp_reaper reaper;   /* tcp: sockets the provider lost (tcp_reap.c) */
	int64_t last_reap;
	struct fab_connreq *idle_req;  /* zeroed, for the next listener_get */
};

struct fab_connreq {
	struct rpcrdma_connreq base;
	struct fab_listener *l;
	struct fi_info *info;        /* MSG: from FI_CONNREQ */
	char name[CTRL_NAME_MAX];    /* RDM: the client's endpoint name */
	size_t name_len;
	uint32_t pid;                /* RDM: the client's process, 0 if it did not say */
};

extern const struct rpcrdma_prov_ops rpcrdma__fab_ops;

/* Around each entry point on an endpoint that shares its completion queue. */
static inline void sh_lock(struct fab_ep *e)
{
	if (e->sh)
		pthread_mutex_lock(&e->sh->lock);
}

static inline void sh_unlock(struct fab_ep *e)
{
	if (e->sh)
		pthread_mutex_unlock(&e->sh->lock);
}

/* Around each libfabric call on an endpoint the shm watchdog looks after (fabric_rdm.c).
 * A count, not a time: the watchdog times what it sees, and a clock read here was paid
 * by every poll and post (a fifth of a polling thread's time on a VM's kvm-clock). One
 * thread at a time uses an endpoint, so a load and a store suffice. */
static inline void busy_step(struct fab_ep *e)
{
	__atomic_store_n(&e->busy_gen, __atomic_load_n(&e->busy_gen, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
}

static inline void busy_begin(struct fab_ep *e)
{
	if (e->watched)
		busy_step(e);
}

static inline void busy_end(struct fab_ep *e)
{
	if (e->watched)
		busy_step(e);
}


/* prov/fabric/fabric_ep.c: completions, endpoints, waiting, posting, memory */
void rpcrdma__fab_prov_free(struct fab_prov *fp);
void rpcrdma__fab_copy_pdata(uint8_t *dst, size_t *dlen, const void *src, size_t len);
int rpcrdma__fab_ep_open(struct fab_prov *fp, struct fi_info *info, const char *name,
			 struct fab_shcq *sh, struct fab_ep **out);
int rpcrdma__fab_shcq_open(struct fab_prov *fp, struct fab_shcq **out);
void rpcrdma__fab_sheq_drain(struct fab_shcq *sh);
void rpcrdma__fab_sheq_look(struct fab_shcq *sh, int64_t every_ms);
int rpcrdma__fab_add_wait_fd(int epfd, struct fid *fid);
void rpcrdma__fab_shcq_put(struct fab_shcq *sh);
int rpcrdma__fab_ep_fd(const struct rpcrdma_ep *base);
int rpcrdma__fab_mr_dereg(struct rpcrdma_mr *base);
int rpcrdma__fab_mr_reg(struct rpcrdma_prov *p, void *addr, size_t len, unsigned access,
			struct rpcrdma_mr **out);
int rpcrdma__fab_names(struct rpcrdma_ep *base, void *local, size_t *llen, void *peer,
		       size_t *plen);
int rpcrdma__fab_peer_addr(struct rpcrdma_ep *base, void *addr, size_t *len);
int rpcrdma__fab_poll(struct rpcrdma_ep *base, struct rpcrdma_cqe *out, int max);
int rpcrdma__fab_post_recv(struct rpcrdma_ep *base, const struct rpcrdma_sge *sge, void *ctx);
int rpcrdma__fab_post_rma(struct rpcrdma_ep *base, uint32_t opcode,
			  const struct rpcrdma_sge *l, uint32_t nl, const struct rpcrdma_segment *r, uint32_t nr, void *ctx);
int rpcrdma__fab_post_send(struct rpcrdma_ep *base, const struct rpcrdma_sge *sge, void *ctx);
int rpcrdma__fab_wait(struct rpcrdma_ep *base, int timeout_ms);
int rpcrdma__fab_arm(struct rpcrdma_ep *base);
void rpcrdma__fab_slept(struct rpcrdma_ep *base, int fired);
int rpcrdma__fab_local_enter(struct fab_ep *e);
int rpcrdma__fab_map_err(int fi_err);
int rpcrdma__fab_peer_alive_now(struct fab_ep *e);
void rpcrdma__fab_backoff(unsigned *spins);
void rpcrdma__fab_cq_drain(struct fab_ep *e, struct rpcrdma__sink *s);
void rpcrdma__fab_cq_error(struct fab_ep *e, struct rpcrdma__sink *s);
void rpcrdma__fab_ep_free(struct fab_ep *e);
void rpcrdma__fab_local_add(struct fab_ep *e);
void rpcrdma__fab_local_leave(struct fab_ep *e);
void rpcrdma__fab_local_peer_set(struct fab_ep *e, const void *name, size_t len, uint32_t pid);
void rpcrdma__fab_lose_connection(struct fab_ep *e, struct rpcrdma__sink *s);
/* libfabric 1.17's tcp provider reads a connection request with recv() and, when the peer
 * has already closed (recv returns 0), takes errno for the reason: an EAGAIN left over
 * from any earlier non-blocking call (an eventfd drained, a socket polled) makes it keep
 * the socket in its poll set, never closed, never reported: the sockets tcp_reap.c finds.
 * errno cleared before each look at an event queue, it sees FI_EIO and closes them. */
static inline void rpcrdma__fab_clear_errno(void)
{
	errno = 0;
}
void rpcrdma__fab_lst_unlink(struct fab_ep *e);
void rpcrdma__fab_orphan(struct fab_ep *e);
void rpcrdma__fab_set_err(char *err, size_t errlen, const char *fmt, const char *a,
			  const char *b);

/* prov/fabric/fabric_rdm.c: emulated connections over FI_EP_RDM (shm), its lock watchdog */
int rpcrdma__fab_ctrl_send(struct fab_ep *e, fi_addr_t to, uint32_t type,
			   const void *pdata, size_t plen, int timeout_ms, int pidfd,
			   uint32_t pid);
int rpcrdma__fab_rdm_accept(struct fab_connreq *r, const void *pdata, size_t len,
			    int timeout_ms, struct fab_ep **out);
int rpcrdma__fab_rdm_connect(struct fab_prov *fp, uint16_t port, const void *pdata,
			     size_t len, int timeout_ms, struct fab_ep **out);
int rpcrdma__fab_rdm_get(struct fab_listener *l, int timeout_ms, struct fab_connreq *r);
int rpcrdma__fab_rdm_prepare(struct rpcrdma_listener *l);
void rpcrdma__fab_msg_prepare(struct fab_listener *l);
int rpcrdma__fab_rdm_listen(struct fab_prov *fp, uint16_t port, struct fab_listener *l);
int rpcrdma__fab_rdm_listener_arm(struct fab_listener *l);
void rpcrdma__fab_rdm_reject(struct fab_connreq *r, const void *pdata, size_t len);
int rpcrdma__fab_park_close(struct fab_prov *fp);
extern const struct fab_ep_hooks rpcrdma__fab_rdm_hooks;

/* prov/fabric/fabric_msg.c: native connections over FI_EP_MSG (tcp, verbs) */
int rpcrdma__fab_msg_accept(struct fab_connreq *r, const void *pdata, size_t len,
			    int timeout_ms, struct fab_ep **out);
int rpcrdma__fab_msg_connect(struct fab_prov *fp, const char *host, uint16_t port,
			     const void *pdata, size_t len, int timeout_ms, struct fab_ep **out);
int rpcrdma__fab_msg_get(struct fab_listener *l, int timeout_ms, struct fab_connreq *r);
int rpcrdma__fab_msg_listen(struct fab_prov *fp, const char *host, uint16_t port,
			    struct fab_listener *l);
void rpcrdma__fab_remember_accepted(struct fab_listener *l, struct fab_ep *e);

/* Retry a post that found libfabric's queue full, driving progress meanwhile, for at
 * most budget_ms: a peer that stops taking data must not hold the caller (a server's
 * progress thread serves every connection). After that rc is still -FI_EAGAIN, which
 * reaches the caller as -RPCRDMA_ERR_AGAIN: the engine waits and tries again later.
 * A later piece of an RMA split in pieces cannot be "tried again later" (its first ones
 * are already on their way): it gets POST_PIECE_RETRY_MS before the operation fails. */
#define POST_RETRY_MS 2
#define POST_PIECE_RETRY_MS 100
#define POST_RETRY(e, rc, budget_ms, call)                                                     \
	do {                                                                        \
		int64_t until_ = 0;   /* the clock only once the queue is full */   \
		unsigned spins_ = 0;                                                \
		for (;;) {                                                          \
			if (!rpcrdma__fab_peer_alive_now(e) || rpcrdma__fab_local_enter(e)) { \
				if (e->ep)                                          \
					rpcrdma__fab_lose_connection((e), NULL);    \
				(rc) = -FI_ENOTCONN;                                \
				break;                                              \
			}                                                           \
			busy_begin(e);                                              \
			(rc) = (call);                                              \
			busy_end(e);                                                \
			rpcrdma__fab_local_leave(e);                                \
			if ((rc) != -FI_EAGAIN)                                     \
				break;                                              \
			if (!until_)                                                \
				until_ = rpcrdma__now_ms() + (budget_ms);           \
			else if (rpcrdma__now_ms() >= until_)                       \
				break;                                              \
			rpcrdma__bell_ring(&(e)->bell);   /* shm: room comes from  \
							     the peer's polling */ \
			rpcrdma__fab_cq_drain((e), NULL);                           \
			rpcrdma__fab_backoff(&spins_);                              \
		}                                                                   \
	} while (0)

#endif
