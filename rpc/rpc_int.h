/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal to rpc/. */
#ifndef RPCRDMA_RPC_INT_H
#define RPCRDMA_RPC_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "rpcrdma/rpc.h"

/* libtirpc declares xdr_void() without parameters */
#define RPCRDMA_XDR_VOID ((xdrproc_t)(void (*)(void))xdr_void)

/* A call buffer kept past its reply because decoded arguments point into it (svc_rdma's
 * lend_args): svc_freeargs() gives it back once it finds such a pointer. */
struct rpcrdma__held {
	uint8_t *buf;
	size_t cap;
	uint32_t len;
	bool hit;                  /* svc_freeargs() met a pointer into it */
};

#define RPCRDMA__LENT_MAX 16       /* arguments one call lends; the rest are copied */

/* An XDR stream over one RPC message, with what DDP needs (RFC 5666 §3.4): items marked
 * while encoding, placed results and RDMA_MSGP padding while decoding. The XDR itself is
 * libtirpc's memory stream. */
struct rpcrdma__xdr {
	XDR x;
	uint8_t *buf;
	uint32_t cap;
	/* encoding: items moved out of the stream */
	struct rpcrdma_ddp_item items[RPCRDMA_DEF_LIST_CHUNKS];
	uint32_t nitems;
	/* decoding: results placed in write chunks, in order */
	struct rpcrdma_ddp_buf *results;
	uint32_t nresults, next_result;
	uint8_t caller_owned[RPCRDMA_DEF_LIST_CHUNKS]; /* results[i].data is the caller's */
	uint8_t handed_over[RPCRDMA_DEF_LIST_CHUNKS];  /* ... or now belongs to the result */
	uint32_t align, thresh, base;                  /* RDMA_MSGP of the received message */
	/* a server's decoding with lend set: opaques point into buf (no copy, no malloc) */
	bool lend;
	uint32_t nlent;
	char **lent[RPCRDMA__LENT_MAX];                /* where each lent pointer went */
	/* freeing (XDR_FREE): pointers into these buffers are not the heap's */
	struct rpcrdma__held *held;
	uint32_t nheld;
};

/* Start encoding into buf (cap bytes) / decoding buf (len bytes). The stream is "ours"
 * (xdr_rdma_ddp_bytes acts on it) while it is the thread's current one. */
void rpcrdma__xdr_encode(struct rpcrdma__xdr *s, uint8_t *buf, uint32_t cap);
void rpcrdma__xdr_decode(struct rpcrdma__xdr *s, const uint8_t *buf, uint32_t len);
void rpcrdma__xdr_enter(struct rpcrdma__xdr *s);
void rpcrdma__xdr_leave(void);
uint32_t rpcrdma__xdr_pos(struct rpcrdma__xdr *s);
/* After a failed decode: the pointers it lent become NULL, so that the partial arguments
 * hold none into a buffer that will not be kept. */
void rpcrdma__xdr_unlend(struct rpcrdma__xdr *s);

/* The XDR of CONF_RDMA (RFC 5666 §6.2). */
bool_t rpcrdma__xdr_ccp_args(XDR *x, struct rpcrdma_ccp_args *a);
bool_t rpcrdma__xdr_ccp_res(XDR *x, struct rpcrdma_ccp_res *r);

/* 1 when the RPC body under this credential (flavour, and body: len bytes of XDR) is
 * never checksummed or encrypted, so that DDP-eligible items may leave the stream
 * (RFC 8166 §8.2.1). */
int rpcrdma__cred_allows_ddp(uint32_t flavor, const void *body, uint32_t len);

/* A copy of reply a into buf (room for its stream and the items not in lent, bit i: item
 * i stays where it is): the stream (unless buf is where it already is), then each item
 * copied, in order; out and items describe the copy. */
void rpcrdma__reply_copy(uint8_t *buf, const struct rpcrdma_reply_args *a, uint32_t lent,
			 struct rpcrdma_ddp_item *items, struct rpcrdma_reply_args *out);

/* svc_drc.c: the server's duplicate request cache (at most once across reconnections). */
struct rpcrdma__drc;
struct rpcrdma__drc_ent;
struct rpcrdma__drc_key {
	uint32_t xid, prog, vers, proc, len, sum;
	uint32_t family;
	uint8_t addr[16];
};
enum { RPCRDMA__DRC_NEW, RPCRDMA__DRC_RUNNING, RPCRDMA__DRC_KEPT };
/* At most max_entries entries and max_bytes bytes of replies kept. */
struct rpcrdma__drc *rpcrdma__drc_new(uint32_t max_entries, uint32_t reply_max,
				      uint64_t max_bytes);
/* The default size on a host of mem_bytes of memory, as knfsd sizes its cache. */
uint32_t rpcrdma__drc_entries_for(uint64_t mem_bytes);
void rpcrdma__drc_free(struct rpcrdma__drc *d);
/* The key of a call: args_len bytes of arguments follow its header; call_len is the
 * whole call's. */
void rpcrdma__drc_key(struct rpcrdma__drc_key *k, const struct sockaddr_storage *peer,
		      size_t peer_len, const struct rpc_msg *call, const uint8_t *args,
		      uint32_t args_len, uint32_t call_len);
/* NEW: a new entry for the call, now running (*e NULL when out of memory: served without
 * the cache); RUNNING: its original is still being served (*e); KEPT: its reply is kept
 * (rpcrdma__drc_reply(*e)). */
int rpcrdma__drc_lookup(struct rpcrdma__drc *d, const struct rpcrdma__drc_key *k,
			uint64_t now_ms, struct rpcrdma__drc_ent **e);
/* The running call's reply: kept (1), or too long to keep, and the entry gone (0).
 * Keeping it may evict other replies (its client's own first) to stay within max_bytes. */
int rpcrdma__drc_keep(struct rpcrdma__drc *d, struct rpcrdma__drc_ent *e,
		      const struct rpcrdma_reply_args *a, uint64_t now_ms);
/* Replies kept longer than their time (120 s) go. */
void rpcrdma__drc_expire(struct rpcrdma__drc *d, uint64_t now_ms);
/* The running call gets no reply: its entry goes. */
void rpcrdma__drc_forget(struct rpcrdma__drc *d, struct rpcrdma__drc_ent *e);
const struct rpcrdma_reply_args *rpcrdma__drc_reply(const struct rpcrdma__drc_ent *e);
void rpcrdma__drc_stats(const struct rpcrdma__drc *d, struct rpcrdma_svc_drc_stats *out);

/* svc_work.c: what rpcrdma_svc_run()'s workers serve. claim: an SVCXPRT with a request
 * ready, held for the calling worker until release (NULL: none); called with the workers'
 * lock held, so it must not block. */
struct rpcrdma__svc_src {
	struct rpcrdma__svc_src *next;
	SVCXPRT *(*claim)(struct rpcrdma__svc_src *src);
	void (*release)(struct rpcrdma__svc_src *src, SVCXPRT *x);
};
void rpcrdma__svc_src_add(struct rpcrdma__svc_src *src);
/* Once it returns, no worker claims from src any more (one may still hold an SVCXPRT). */
void rpcrdma__svc_src_remove(struct rpcrdma__svc_src *src);
/* A source has work: sleeping workers look again. */
void rpcrdma__svc_wake_workers(void);

/* svc_tcp.c, for the listener functions of svc_listen.c: a TCP listener's cache, a TCP
 * dispatch's XID (-RPCRDMA_ERR_INVAL, 0: not one). */
int rpcrdma__tcp_drc_stats(SVCXPRT *listener, struct rpcrdma_svc_drc_stats *out);
uint32_t rpcrdma__tcp_getxid(SVCXPRT *xprt);

/* rpcb_rdma.c: registration of RDMA listeners with rpcbind, and the client's lookup. */
void rpcrdma__rpcb_listener_add(const void *key, uint16_t port, const void *addr, size_t len,
				int dual);
void rpcrdma__rpcb_listener_remove(const void *key);
int rpcrdma__rpcb_lookup(const char *host, rpcprog_t prog, rpcvers_t vers, int timeout_ms,
			 uint16_t *port);

/* The environment's defaults (RPCRDMA_PROVIDER, RPCRDMA_PORT) for options left unset. */
const char *rpcrdma__env_provider(void);
int rpcrdma__env_port(uint32_t *port);
/* Busy polling (docs/RPC.md, "Busy polling"): RPCRDMA_BUSY_POLL_US, 0 where unset;
 * an option's or the environment's value, capped. */
#define RPCRDMA__BUSY_POLL_MAX_US 1000000u
uint32_t rpcrdma__env_busy_poll_us(void);
uint32_t rpcrdma__busy_poll_cap(unsigned long us);

/* An engine configuration from the transport's options and the provider's caps, as the
 * client and the server both start from. role: RPCRDMA_ENG_CLIENT or _SERVER. */
void rpcrdma__eng_config_rpc(struct rpcrdma_eng_config *cfg, int role,
			     const struct rpcrdma_prov_caps *caps, uint32_t inline_size,
			     uint32_t max_credits, uint32_t msgp_align, uint32_t msgp_thresh);

/* Hands freed heap memory back to the system after connections close (glibc keeps
 * freed bulk buffers in its arenas otherwise); no more than a few times a second: false
 * when it was too soon, and the caller tries again later. */
bool rpcrdma__rpc_give_back_memory(void);

/* "ADDR port N" of a socket address, or "(shm)" where the provider has none. */
void rpcrdma__addr_text(const struct sockaddr_storage *a, size_t len, char *buf, size_t cap);
/* One log line with a connection's negotiated sizes and credits (rpcrdma_log). */
void rpcrdma__log_conn(int level, const char *what, const char *peer, const char *why,
		       const char *provider, const struct rpcrdma_eng *e);

/* Sets (fmt NULL: clears) this thread's rpcrdma_create_errtext(). */
void rpcrdma__create_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The text of a failed rpcrdma_connect/_listen toward host:port, for the user. */
void rpcrdma__create_err_conn(int rc, int listening, const char *provider, const char *host,
			      unsigned port, int timeout_ms);

/* cb_svc.c: a client's callback service (RFC 8167). send: answer backward call xid,
 * which came on connection gen, with the reply xdr (0, or a negative RPCRDMA_ERR_*). */
typedef int (*rpcrdma__cb_send_fn)(void *ctx, uint32_t xid, uint64_t gen, const void *xdr,
				   uint32_t len);
struct rpcrdma__cbsvc;
struct rpcrdma__cbsvc *rpcrdma__cb_create(rpcrdma__cb_send_fn send, void *ctx);
void rpcrdma__cb_destroy(struct rpcrdma__cbsvc *cb);
void rpcrdma__cb_set_peer(struct rpcrdma__cbsvc *cb, const struct netbuf *addr, int v6);
int rpcrdma__cb_register(struct rpcrdma__cbsvc *cb, rpcprog_t prog, rpcvers_t vers,
			 rpcrdma_dispatch_fn dispatch);
int rpcrdma__cb_active(struct rpcrdma__cbsvc *cb);
int rpcrdma__cb_enqueue(struct rpcrdma__cbsvc *cb, uint32_t xid, uint64_t gen,
			const void *call, uint32_t len);
int rpcrdma__cb_pending(struct rpcrdma__cbsvc *cb);
int rpcrdma__cb_run(struct rpcrdma__cbsvc *cb);

/* svc_conn.c, for svc_bc.c: a backward call on a connection, waited for. */
struct rpcrdma__bcw {
	pthread_cond_t cv;
	int done, status;
	uint8_t *reply;              /* malloc'd; the caller frees it */
	uint32_t reply_len;
	struct rpcrdma_eng_bcall *b;
};
/* Keep a connection's SVCXPRT (not freed until released); -1: not an RDMA connection. */
int rpcrdma__svc_conn_hold(SVCXPRT *conn);
void rpcrdma__svc_conn_release(SVCXPRT *conn);
/* Send xdr (a whole RPC call) on conn and wait until its reply or deadline: 0 (the reply
 * in w), or -RPCRDMA_ERR_TIMEDOUT, _DISCONN, _NOSPC (longer than the client takes
 * inline), _PROTO (the client answered RDMA_ERROR), _AGAIN (called on the listener's
 * progress thread, which alone could complete it). */
int rpcrdma__svc_bc_call(SVCXPRT *conn, const void *xdr, uint32_t len, struct rpcrdma__bcw *w,
			 uint64_t deadline);

/* clnt_ids.c: what a CLIENT * answers in clnt_control() (XID, program, version,
 * timeouts), shared by the forward and the backchannel clients. */
struct rpcrdma__clnt_ids {
	uint32_t xid;                /* the last one used (atomic) */
	rpcprog_t prog;
	rpcvers_t vers;
	int timeout_ms;              /* CLSET_TIMEOUT; -1: the call's own */
	int last_timeout_ms;         /* the last valid one a call gave (CLGET_TIMEOUT) */
};
void rpcrdma__ids_init(struct rpcrdma__clnt_ids *ids, rpcprog_t prog, rpcvers_t vers,
		       int def_timeout_ms);
uint32_t rpcrdma__ids_next_xid(struct rpcrdma__clnt_ids *ids);
/* The milliseconds a call with timeout tv waits (CLSET_TIMEOUT wins). */
int rpcrdma__ids_timeout(struct rpcrdma__clnt_ids *ids, struct timeval tv);
/* Decode a reply from x as libtirpc's clnt_vc_call does: the header, the verifier
 * through auth, then (accepted and successful) the results; err says how it went. */
enum clnt_stat rpcrdma__reply_take(XDR *x, AUTH *auth, xdrproc_t xres, void *res,
				   struct rpc_err *err);
/* 1 when req is one of these (*ok: the answer), 0 otherwise. */
int rpcrdma__ids_control(struct rpcrdma__clnt_ids *ids, u_int req, void *info, bool_t *ok);

/* Monotonic milliseconds, microseconds. */
uint64_t rpcrdma__rpc_now(void);
uint64_t rpcrdma__rpc_now_us(void);

/* Wait a little for work on a provider endpoint: yield while busy recently, then sleep,
 * growing up to 1 ms. idle counts the empty rounds. */
void rpcrdma__idle_backoff(unsigned *idle);

/* Before the polls-th empty poll in a row of the calling thread (1: the first of this
 * wait): true to poll again, false to sleep now. Spinning pays only while the thread has
 * a core to itself: under CPU pressure (/proc/pressure/cpu), or once the scheduler has
 * preempted it during a spin, the thread sleeps at once for a while (rpc/xdr_rdma.c). */
bool rpcrdma__spin_more(unsigned polls);
/* A busy-polling wait found nothing: go on (true), yielding the core now and then. */
bool rpcrdma__busy_poll_on(unsigned polls);

/* Whether a completion says anything of the peer: a Send done does not (over tcp a small
 * one is done as it is posted), so a waiter that found only those may go on to sleep
 * instead of polling once more (a system call over tcp). */
static inline int rpcrdma__cqe_is_news(const struct rpcrdma_cqe *c)
{
	return c->op != RPCRDMA_OP_SEND || c->status;
}

/* svc_listen.c: a listener's xp_ops where it has no call (RDMA's and TCP's listeners) */
enum xprt_stat rpcrdma__svc_lst_stat(SVCXPRT *xprt);
bool_t rpcrdma__svc_lst_args(SVCXPRT *xprt, xdrproc_t x, void *p);
bool_t rpcrdma__svc_lst_reply(SVCXPRT *xprt, struct rpc_msg *msg);

#endif
