/* SPDX-License-Identifier: BSD-2-Clause */
/* librpcrdma — ONC RPC over RDMA for libtirpc programs (rpc/).
 *
 * clnt_rdma_create() gives a libtirpc CLIENT * and svc_rdma_create() a listening
 * SVCXPRT *: rpcgen stubs, clnt_call(), svc_register(), svc_sendreply(), svcerr_*(),
 * clnt_perror() and rpc_createerr work as they do over TCP. Underneath, each connection is
 * one transport engine (engine.h) over a provider (prov.h). See docs/RPC.md. */
#ifndef RPCRDMA_RPC_H
#define RPCRDMA_RPC_H

#include <rpc/rpc.h>
#include <stdint.h>

#include "engine.h"
#include "prov.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- client ---- */

struct rpcrdma_clnt_opts {
	const char *provider;      /* libfabric provider: "tcp", "shm", "verbs"; NULL:
				      $RPCRDMA_PROVIDER, else "tcp" */
	uint32_t port;             /* 0: $RPCRDMA_PORT if set, else the host's rpcbind is
				      asked for netid rdma/rdma6, else RPCRDMA_PORT (20049);
				      above 65535: clnt_rdma_create fails (EINVAL) */
	uint32_t inline_size;      /* inline threshold both ways; 0: 4096 */
	uint32_t max_credits;      /* most credits asked for (a call asks twice the calls in
				      flight or waiting, up to this); 0: 32 */
	uint32_t max_reply;        /* reply chunk offered when a reply may be this long and no
				      binding says better; 0: 1 MiB */
	int connect_timeout_ms;    /* 0: 10 s */
	int use_ccp;               /* call CONF_RDMA (RFC 5666 §6.2) at connect, adopt sizes */
	uint32_t msgp_align, msgp_thresh;   /* send RDMA_MSGP (RFC 5666 §4.3); 0: never */
	int keepalive_ms;          /* > 0: a NULL call when nothing was received this long; no
				      answer as long again ends the connection. 0: off */
	int no_reconnect;          /* 1: a lost connection fails every call from then on, as
				      libtirpc's TCP client does; 0: reconnect and send again */
	uint32_t bc_credits;       /* backchannel (RFC 8167): calls from the server taken at
				      once; 0: 4 */
	int reconnect_ms;          /* once a lost connection cannot be made again, how long
				      attempts go on (backing off 50 ms to 2 s) before waiting
				      calls fail at once with RPC_CANTSEND and the reason
				      (ECONNREFUSED...); each later call then tries once. 0:
				      5000; -1: each call tries until its own timeout */
	uint32_t busy_poll_us;     /* a waiting caller polls this long for its reply before it
				      sleeps, holding a core (docs/RPC.md, "Busy polling");
				      0: $RPCRDMA_BUSY_POLL_US, else off (sleep as soon as
				      polling cannot win); at most 1 s */
	uint32_t reserved32;        /* zero */
	uint64_t reserved[6];       /* zero: room for fields to come without an ABI break */
};

/* A CLIENT * for prog/vers at host (a name or address, IPv4 or IPv6) over RDMA. NULL
 * opts: defaults. On failure NULL, with rpc_createerr set (clnt_pcreateerror() works) and
 * rpcrdma_create_errtext() saying what happened and what to do. */
RPCRDMA_API CLIENT *clnt_rdma_create(const char *host, rpcprog_t prog, rpcvers_t vers,
			 const struct rpcrdma_clnt_opts *opts);

/* Why this thread's last clnt_rdma_create() or svc_rdma_create() failed, in words that
 * say what to do (the provider's own error text included); "" if it did not fail. */
RPCRDMA_API const char *rpcrdma_create_errtext(void);

/* clnt_control() requests of our own (besides CLSET/CLGET_TIMEOUT, CLGET/CLSET_XID,
 * CLGET/CLSET_VERS, CLGET/CLSET_PROG, CLGET_SERVER_ADDR, CLGET_SVC_ADDR, CLGET_FD). */
#define RPCRDMA_CLSET_DDP_BUFS 0x7201  /* struct rpcrdma_ddp_bufs * (copied): the next call
					  this thread makes */
#define RPCRDMA_CLGET_STATS    0x7202  /* struct rpcrdma_eng_stats * */
#define RPCRDMA_CLGET_CCP      0x7203  /* struct rpcrdma_ccp_res *: what CONF_RDMA gave */
#define RPCRDMA_CLGET_CONNECTS 0x7204  /* uint64_t *: connections made so far (1 + the
					  reconnections) */
#define RPCRDMA_CLSET_MEM_ADD  0x7205  /* struct rpcrdma_mem *: long-lived memory of the
					  caller's (rpcrdma_mem_add()): arguments and result
					  buffers inside it need no registration per call */
#define RPCRDMA_CLSET_MEM_REMOVE 0x7206 /* struct rpcrdma_mem * (len unused): FALSE while
					  a call still uses it */

/* Memory for RPCRDMA_CLSET_MEM_ADD and rpcrdma_svc_mem_add(): it must stay mapped and
 * writable until removed (or the client destroyed, the listener closed). On verbs with a
 * device that has memory windows (caps.mem_windows), a chunk inside it is exposed through
 * a window bound for that call only; local-only uses cost nothing; elsewhere nothing
 * changes. docs/RPC.md, "Long-lived memory". */
struct rpcrdma_mem {
	void *addr;
	size_t len;
};

/* Caller buffers for the DDP-eligible results of one call, in result order: the data
 * lands there directly (RDMA Write) and xdr_rdma_ddp_bytes() hands it to the result
 * without a copy. */
struct rpcrdma_ddp_bufs {
	uint32_t n;
	struct {
		void *data;
		uint32_t cap;
	} buf[RPCRDMA_DEF_LIST_CHUNKS];
};

/* Why the last call failed, in words, where clnt_sperror() cannot say it (e.g. a reply
 * longer than the reply chunk offered, naming the option that raises it). "" if nothing
 * more is known. */
RPCRDMA_API const char *rpcrdma_clnt_errtext(CLIENT *cl);

/* Asynchronous calls: many in flight from one thread. done runs from
 * rpcrdma_clnt_progress() (or another call's wait) with the call's status; args must stay
 * valid until then; results are decoded into res before done runs. */
typedef void (*rpcrdma_clnt_cb)(void *ctx, enum clnt_stat stat);
RPCRDMA_API int rpcrdma_clnt_call_async(CLIENT *cl, rpcproc_t proc, xdrproc_t xargs, void *args,
			    xdrproc_t xres, void *res, rpcrdma_clnt_cb done, void *ctx);
/* Drive progress for up to timeout_ms (0: poll once); returns calls still pending. */
RPCRDMA_API int rpcrdma_clnt_progress(CLIENT *cl, int timeout_ms);

/* ---- the backchannel (RFC 8167): the server calls the client back ----
 * Over the connection the client opened: no second connection, no port on the client.
 * Backward calls and replies travel inline, so their arguments and results are bounded
 * by the inline threshold (4 KiB by default) less 28 bytes. docs/RPC.md, "Backchannel". */

/* An rpcgen-generated dispatch function, as svc_register() takes. */
typedef void (*rpcrdma_dispatch_fn)(struct svc_req *rqstp, SVCXPRT *xprt);

/* Serve prog/vers on cl's connection (each connection it makes): calls the server makes
 * back are dispatched to dispatch with svc_getargs()/svc_sendreply()/svcerr_*() as in
 * any server, one at a time in arrival order, on the client's background thread (never
 * on a thread inside clnt_call), which sleeps on the connection's descriptor meanwhile
 * (shm: polls every 1 ms). A dispatch function may make calls on cl or any other
 * client. Calls for a program not registered are answered PROG_UNAVAIL (PROG_MISMATCH
 * for a known program of another version). dispatch NULL: unregister. Returns 0, or -1
 * (not an RDMA client, or 16 programs already). */
RPCRDMA_API int clnt_rdma_set_callback(CLIENT *cl, rpcprog_t prog, rpcvers_t vers,
				       rpcrdma_dispatch_fn dispatch);

/* A CLIENT * that calls back the client of an RDMA connection, for rpcgen client stubs:
 * conn is the SVCXPRT * a dispatch function gets (rqstp->rq_xprt), or one that
 * rpcrdma_svc_conns() gives. clnt_call() behaves as on a forward CLIENT * (timeouts,
 * clnt_stat values, clnt_perror), except: arguments longer than the client takes inline
 * give RPC_CANTENCODEARGS; a lost connection gives RPC_CANTSEND (a backchannel cannot
 * reconnect: the client opens connections); calling from the listener's progress thread
 * (dispatch_inline) gives RPC_CANTSEND. The connection lives until clnt_destroy(); destroy
 * these clients before their listener. NULL (rpc_createerr set) if conn is not an RDMA
 * connection. */
RPCRDMA_API CLIENT *svc_rdma_bc_create(SVCXPRT *conn, rpcprog_t prog, rpcvers_t vers);

/* ---- server ---- */

struct rpcrdma_svc_opts {
	const char *provider;      /* NULL: $RPCRDMA_PROVIDER, else "tcp" */
	const char *host;          /* NULL: every address, IPv6 and IPv4 (IPv4 only on a host
				      without IPv6); "0.0.0.0": IPv4 only; "::1", ... */
	uint32_t port;             /* 0: $RPCRDMA_PORT (0 there: any), else RPCRDMA_PORT
				      (20049); RPCRDMA_PORT_ANY: an ephemeral one; any other
				      value above 65535: svc_rdma_create fails */
	uint32_t inline_size;      /* 0: 4096 */
	uint32_t max_credits;      /* per connection; 0: 32 */
	uint32_t recv_budget;      /* receive buffers for all connections; 0: 32768 */
	int no_ccp;                /* do not answer CONF_RDMA */
	uint32_t msgp_align, msgp_thresh;   /* send RDMA_MSGP replies; 0: never */
	int reply_read_chunks;     /* a reply longer than the reply chunk offered goes as RFC
				      5666 read chunks (the client pulls it, then RDMA_DONE):
				      0 to clients that say they take them (ours do), 1 to
				      every client, -1 never (ERR_CHUNK, as RFC 8166) */
	int dispatch_inline;       /* dispatch each request on the listener's progress thread
				      as soon as it is ready (lowest latency): the program must
				      accept dispatch on a library thread and not block there
				      (no connection of the listener moves meanwhile); svc_run()
				      and rpcrdma_svc_run() then see no RDMA request */
	int workers_only;          /* connections are dispatched by rpcrdma_svc_run() only,
				      never by svc_run(): for a program that runs svc_run() for
				      its other transports (TCP, UDP) on another thread */
	uint32_t conn_parallel;    /* rpcrdma_svc_run()'s workers dispatch up to this many
				      requests of one connection at once, so that a slow one
				      does not hold back the rest (replies then go in the order
				      they finish, as knfsd's do); 0 or 1: one at a time, in
				      the order they arrived */
	int32_t drc_entries;       /* the duplicate request cache (docs/RPC.md): replies kept
				      for calls sent again after a reconnection, a share per
				      client; 0: sized by memory as knfsd's (64 per square
				      root of the 4 KiB pages, 1024 to 256k, 256 bytes of
				      replies each), -1: no cache */
	uint32_t drc_reply_max;    /* replies longer than this (bytes, DDP items included) are
				      not kept; 0: 4096 */
	int lend_args;             /* opaques decoded by xdr_rdma_ddp_bytes() in svc_getargs()
				      point into the received call instead of a copy; valid
				      until svc_freeargs(), which must release them (never
				      xdr_free() or free(): docs/RPC.md, "Arguments lent") */
	uint32_t busy_poll_us;     /* the progress thread polls this long after its last work
				      before it sleeps, holding a core (docs/RPC.md, "Busy
				      polling"); 0: $RPCRDMA_BUSY_POLL_US, else 100 us; at
				      most 1 s */
	/* svc_rdma_tcp_create() only (docs/RPC.md, "ONC RPC over TCP"): */
	uint32_t tcp_max_record;   /* longest call (record, all fragments) taken; a client
				      that announces more is disconnected. 0: 4 MiB +
				      64 KiB (a 4 MiB payload and its header) */
	uint32_t tcp_reply_queue;  /* bytes of replies queued for one connection beyond which
				      no more of its calls are read or dispatched until it
				      reads them. 0: 4 MiB */
	int32_t tcp_idle_ms;       /* a connection with nothing received this long, and no
				      call or reply of its pending, is closed (a partial
				      record mark counts as nothing). 0: 6 minutes; -1 never */
	int32_t tcp_stall_ms;      /* a connection whose queued replies did not move this long
				      (its client reads none) is dropped. 0: 15 s; -1 never */
	uint32_t reserved32;        /* zero */
	uint64_t reserved[2];       /* zero: room for fields to come without an ABI break */
};
#define RPCRDMA_PORT_ANY 0xffffffffu

/* A listening SVCXPRT *. Its progress thread accepts connections and moves data; each
 * connection is an SVCXPRT * whose xp_fd (an eventfd) becomes readable when a request
 * is ready, so svc_run() dispatches it. Or run rpcrdma_svc_run(). NULL on failure. */
RPCRDMA_API SVCXPRT *svc_rdma_create(const struct rpcrdma_svc_opts *opts);
/* ONC RPC over TCP (RFC 5531, record marking) served by the library's runtime, as RDMA
 * is: rpcrdma_svc_run()'s worker threads dispatch its calls to the programs
 * svc_register()ed (protocol 0; rpcbind registration is the program's), up to
 * opts.conn_parallel calls of one connection at once, with the listener's duplicate
 * request cache (opts.drc_entries, drc_reply_max: a call sent again on a new connection
 * from the same address gets the kept reply). Sockets are read and written without
 * blocking, calls bounded (tcp_max_record), replies queued per connection (tcp_reply_queue)
 * with a slow reader dropped (tcp_stall_ms), idle connections closed (tcp_idle_ms): no
 * client delays another. opts.host (NULL: every address, IPv6 and IPv4), opts.port (0 or
 * RPCRDMA_PORT_ANY: any; svc_rdma_port() says which); other fields are RDMA's and unused.
 * Never dispatched by svc_run(). RPCSEC_GSS is refused (docs/RPC.md). NULL on failure
 * (rpcrdma_create_errtext()). */
RPCRDMA_API SVCXPRT *svc_rdma_tcp_create(const struct rpcrdma_svc_opts *opts);
/* Each open connection of the listener: its peer's address (NULL where the provider has
 * none) and its engine's statistics. Returns the number of connections. */
typedef void (*rpcrdma_svc_stats_fn)(void *ctx, const struct sockaddr *peer,
				     const struct rpcrdma_eng_stats *st);
RPCRDMA_API int rpcrdma_svc_stats(SVCXPRT *listener, rpcrdma_svc_stats_fn fn, void *ctx);
/* Sums over every connection the listener has had, open or closed (counters added; the
 * credit and threshold fields are the largest seen). */
RPCRDMA_API int rpcrdma_svc_totals(SVCXPRT *listener, struct rpcrdma_eng_stats *out);
/* Each open connection of the listener as its SVCXPRT * (for svc_rdma_bc_create()),
 * called without the listener's lock held. Returns the number of connections. */
typedef void (*rpcrdma_svc_conn_fn)(void *ctx, SVCXPRT *conn);
RPCRDMA_API int rpcrdma_svc_conns(SVCXPRT *listener, rpcrdma_svc_conn_fn fn, void *ctx);
/* The XID of the call being dispatched on this connection (0 if none, or not an RDMA
 * transport): what a duplicate request cache needs, since a client sends a call again
 * with the same XID after a reconnection (RFC 8166 §4.5). */
RPCRDMA_API uint32_t rpcrdma_svc_getxid(SVCXPRT *xprt);
/* Long-lived memory of the server's (struct rpcrdma_mem): results placed from inside
 * it (RDMA Write sources) and chunks of its need no registration per reply. Returns 0 or
 * a negative RPCRDMA_ERR_* (rpcrdma_mem_add(), rpcrdma_mem_remove()). */
RPCRDMA_API int rpcrdma_svc_mem_add(SVCXPRT *listener, void *addr, size_t len);
RPCRDMA_API int rpcrdma_svc_mem_remove(SVCXPRT *listener, void *addr);
/* The duplicate request cache of a listener (rpcrdma_svc_opts.drc_entries). */
struct rpcrdma_svc_drc_stats {
	uint64_t replayed;   /* calls sent again, answered with the kept reply */
	uint64_t waited;     /* calls sent again while the original ran: answered with its
				reply once it was sent */
	uint64_t kept;       /* replies kept */
	uint64_t too_long;   /* replies longer than drc_reply_max: not kept */
	uint64_t evicted;    /* kept replies dropped for room or age (120 s) */
	uint64_t entries;    /* now: calls running and replies kept */
	uint64_t bytes;      /* now: bytes of replies kept */
};
/* 0, or -RPCRDMA_ERR_INVAL where the listener has no cache (drc_entries -1). */
RPCRDMA_API int rpcrdma_svc_drc_stats(SVCXPRT *listener, struct rpcrdma_svc_drc_stats *out);
/* The port the listener got. */
RPCRDMA_API uint16_t svc_rdma_port(SVCXPRT *listener);
/* Dispatch requests of every RDMA connection with nthreads worker threads (<= 1: this
 * thread) until rpcrdma_svc_exit(). Requests of one connection are dispatched in order,
 * one at a time; different connections in parallel. */
RPCRDMA_API int rpcrdma_svc_run(int nthreads);
RPCRDMA_API void rpcrdma_svc_exit(void);

/* ---- DDP and upper-layer bindings (RFC 5666 §3.4, RFC 8267) ---- */

/* Use in place of xdr_bytes() for a DDP-eligible opaque item. On an RPC-over-RDMA stream
 * the item's data travels in a read chunk (argument) or write chunk (result); on any other
 * XDR stream it is exactly xdr_bytes(). Decoding a result the server placed in a caller
 * buffer (RPCRDMA_CLSET_DDP_BUFS) sets *sp to that buffer when *sp is NULL, with no copy;
 * decoding a server's argument under lend_args sets it to the bytes in the received call. */
RPCRDMA_API bool_t xdr_rdma_ddp_bytes(XDR *xdrs, char **sp, u_int *sizep, u_int maxsize);
/* The same for a string (READLINK/SYMLINK paths). */
RPCRDMA_API bool_t xdr_rdma_ddp_string(XDR *xdrs, char **sp, u_int maxsize);

/* A binding: for a program/version/procedure, the XDR routines that mark its DDP-eligible
 * items (used in place of the ones the caller passes) and the largest reply it makes. */
struct rpcrdma_ulb_proc {
	rpcproc_t proc;
	xdrproc_t xargs;           /* NULL: the caller's */
	xdrproc_t xres;            /* NULL: the caller's */
	uint32_t max_reply;        /* 0: the client's default */
	uint32_t nres_ddp;         /* DDP-eligible results: write chunks offered when the
				      caller gives no buffers of its own ... */
	uint32_t res_ddp_max;      /* ... each of this many bytes, */
	uint32_t (*res_ddp_size)(const void *args);  /* ... or as this says for these
							args (e.g. a READ's count) */
	uint32_t (*res_ddp_sizes)(const void *args, uint32_t *sizes, uint32_t max);
				   /* where set, in place of the three above: the
				      DDP-eligible results these args make, each with its own
				      size (an NFSv4 COMPOUND's READs): writes at most max
				      sizes, in result order, and returns how many */
	uint32_t (*max_reply_size)(const void *args);   /* where set, in place of
				      max_reply: the largest reply these args may make,
				      DDP-eligible results aside (RFC 8267 §5.2: an NFSv4
				      COMPOUND's is the sum of its operations'), but for those
				      past RPCRDMA_DEF_LIST_CHUNKS, which come inline; 0: the
				      client's default */
};

struct rpcrdma_ulb {
	rpcprog_t prog;
	rpcvers_t vers;
	const struct rpcrdma_ulb_proc *procs;
	uint32_t nprocs;
};

/* Register a binding for the whole process (client and server). */
RPCRDMA_API int rpcrdma_ulb_register(const struct rpcrdma_ulb *ulb);
RPCRDMA_API const struct rpcrdma_ulb_proc *rpcrdma_ulb_find(rpcprog_t prog, rpcvers_t vers, rpcproc_t proc);

#ifdef __cplusplus
}
#endif
#endif
