/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal to the RDMA server runtime: svc_listen.c (the listener and its progress
 * thread), svc_conn.c (a connection: the engine's upper face, replies, its xp_ops), svc_drc.c
 * (the duplicate request cache and its use) and svc_work.c (the workers and lanes). */
#ifndef RPCRDMA_SVC_INT_H
#define RPCRDMA_SVC_INT_H

#include <stdint.h>
#include <sys/socket.h>

#include "rpc_int.h"
#include "bufcache.h"
#include "objpool.h"

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

struct reply_ctx;

extern const struct xp_ops rpcrdma__svc_conn_ops;
extern const struct xp_ops2 rpcrdma__svc_conn_ops2;

/* svc_listen.c: the listener and its progress thread */
int rpcrdma__svc_poll_conn(struct sconn *c, uint64_t now, int *polled);
void rpcrdma__svc_srv_wake(struct srv *s);
int rpcrdma__svc_watch_fd(struct srv *s, int fd);

/* svc_conn.c: a connection (engine upper face, replies, xp_ops, descriptors, end) */
void rpcrdma__svc_conn_addresses(struct sconn *c);
int rpcrdma__svc_conn_engine(struct srv *s, struct sconn *c, struct rpcrdma_connreq *req);
int rpcrdma__svc_conn_fd(struct srv *s);
void rpcrdma__svc_conn_free(struct sconn *c);
void rpcrdma__svc_conn_log(struct sconn *c, int level, const char *what, const char *why);
struct sconn *rpcrdma__svc_conn_of(SVCXPRT *xprt);
void rpcrdma__svc_drain_fd(int fd);
void rpcrdma__svc_drop_all(struct sconn *c);
void rpcrdma__svc_enqueue(struct sconn *c, struct rpcrdma_eng_req *r, bool first);
bool_t rpcrdma__svc_give_reply(struct sconn *c, struct rpcrdma_eng_req *er, struct reply_ctx *x);
bool rpcrdma__svc_lanes_busy(const struct sconn *c);
uint32_t rpcrdma__svc_lend_min(const struct rpcrdma_prov_caps *caps);
bool rpcrdma__svc_needs_prim(const struct rpcrdma_eng_req *er);
struct reply_ctx *rpcrdma__svc_own_reply(struct srv *s, const struct rpcrdma_reply_args *in,
				   uint32_t lent, uint8_t *enc, size_t encap);
struct sconn *rpcrdma__svc_prim(struct sconn *c);
void rpcrdma__svc_ring(struct sconn *c);
void rpcrdma__svc_signal_fd(int fd);
void rpcrdma__svc_spares_trim(struct srv *s);
void rpcrdma__svc_srv_trim(struct srv *s);
void rpcrdma__svc_stats_add(struct rpcrdma_eng_stats *t, const struct rpcrdma_eng_stats *a);
bool rpcrdma__svc_run_sees(const struct srv *s);

/* svc_drc.c: the duplicate request cache as the RDMA server uses it */
int rpcrdma__svc_drc_admit(struct sconn *c, struct rpcrdma_eng_req *er, const struct rpc_msg *msg,
		     const uint8_t *call, uint32_t len);
void rpcrdma__svc_drc_finish(struct sconn *c, const struct rpcrdma_reply_args *a);
struct parked *rpcrdma__svc_unpark(struct srv *s, const struct rpcrdma__drc_ent *e,
			     const struct sconn *c);

/* svc_work.c: lanes, as rpcrdma_svc_run()'s workers take them */
SVCXPRT *rpcrdma__svc_claim(struct rpcrdma__svc_src *src);
void rpcrdma__svc_release(struct rpcrdma__svc_src *src, SVCXPRT *x);

#endif
