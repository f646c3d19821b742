/* SPDX-License-Identifier: BSD-2-Clause */
/* librpcrdma — the transport engine: one RPC-over-RDMA Version One association
 * (RFC 5666), requester or responder, without I/O of its own.
 *
 * The engine is fed events — a completion from the provider, a timer tick, a call or
 * a reply from the upper layer — always with the current time (milliseconds, any
 * monotonic origin) as an argument. It acts through a lower face (post a Send, a
 * Receive, an RDMA Read or Write; register or release memory) and reports to an upper
 * face (a call completed; a request arrived; a reply finished; the connection must be
 * closed). rpcrdma_eng_lower_ep() (prov.h) fills the lower face from a provider endpoint;
 * tests use the mock provider through the same path.
 *
 * Threading: an engine is not thread-safe; its owner serialises every call into it.
 * A credit pool may be shared by engines on different threads.
 *
 * Lifetime: the owner closes the endpoint first (no completion is delivered after
 * that), then calls rpcrdma_eng_destroy(), which releases everything still held.
 * See docs/ENGINE.md for each rule and the RFC section it comes from. */
#ifndef RPCRDMA_ENGINE_H
#define RPCRDMA_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "errors.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rpcrdma_eng;
struct rpcrdma_eng_call;   /* requester: one RPC call in progress */
struct rpcrdma_eng_req;    /* responder: one RPC call received */
struct rpcrdma_eng_bcall;  /* responder: one backward-direction call it made (RFC 8167) */

enum rpcrdma_eng_role { RPCRDMA_ENG_CLIENT = 1, RPCRDMA_ENG_SERVER = 2 };

/* A receive budget shared by the server engines of one process (RFC 5666 §3.3: a server
 * grants credits by its resources). Counts receive buffers posted. */
struct rpcrdma_credit_pool {
	uint32_t limit;
	uint32_t used;   /* atomically updated */
};
RPCRDMA_API void rpcrdma_credit_pool_init(struct rpcrdma_credit_pool *pool, uint32_t limit);
/* Receive buffers the pool can still give (a server engine takes one as it starts). */
RPCRDMA_API uint32_t rpcrdma_credit_pool_free(const struct rpcrdma_credit_pool *pool);

struct rpcrdma_eng_config {
	uint32_t role;              /* enum rpcrdma_eng_role */
	uint32_t inline_send;       /* largest inline message we send (then capped by the peer's) */
	uint32_t inline_recv;       /* our receive buffer size, advertised (RFC 8797) */
	uint32_t max_credits;       /* client: most credits asked for (twice the calls in flight
				       or waiting, up to this); server: per-connection cap */
	uint32_t sq_depth;          /* operations the endpoint accepts at once (caps.tx_depth) */
	uint32_t write_send_ordered;/* caps.write_send_ordered: a Send follows its Writes */
	uint32_t max_message;       /* largest reassembled message accepted from the peer: a
				       call (server) or a reply (client) */
	struct rpcrdma_limits limits; /* what a peer's header may contain */
	uint32_t msgp_align;        /* nonzero (with msgp_thresh): send RDMA_MSGP (RFC 5666 §4.3) */
	uint32_t msgp_thresh;
	uint32_t reply_read_chunks; /* server: enum rpcrdma_rrc, when a reply that fits neither
				       inline nor in the reply chunk goes as read chunks
				       (RFC 5666 §3.5) */
	uint32_t done_timeout_ms;   /* server: release read chunks of a reply without RDMA_DONE */
	uint32_t max_done_pending;  /* server: replies awaiting RDMA_DONE at once (more wait) */
	uint32_t credit_timeout_ms; /* client: a call waits this long for a credit, then fails */
	uint32_t stall_timeout_ms;  /* work the provider takes none of for this long (a peer
				       that stopped taking data), or (server) a reply's Send
				       that does not complete for this long (a client that
				       stopped posting receives), breaks the connection; 0:
				       never */
	uint32_t combine_p0;        /* client: a long call keeps its DDP items as read chunks
				       beside the position-zero chunk; 0 (default): they go
				       inline in it, the one form Linux servers take */
	struct rpcrdma_credit_pool *pool; /* server: shared receive budget, NULL for none */
	uint32_t bc_credits;        /* backchannel (RFC 8167). Client: backward calls it takes
				       at once (receives posted for them, granted in its
				       backward replies); 0: none (a backward call is answered
				       PROG_UNAVAIL). Server: backward calls in flight at most */
	uint32_t reserved32;
	uint64_t reserved[7];       /* zero: room for fields to come without an ABI break */
};

/* Read chunks in replies (RFC 5666 §3.5, §3.8; withdrawn by RFC 8166): a client engine
 * always takes them and says so in its private data (RPCRDMA_PDATA_X_REPLY_READS). */
enum rpcrdma_rrc {
	RPCRDMA_RRC_AUTO = 0,     /* to clients whose private data says they take them */
	RPCRDMA_RRC_ALWAYS = 1,   /* to every client (RFC 5666 peers) */
	RPCRDMA_RRC_NEVER = 2,    /* never: such a reply is answered ERR_CHUNK */
};

/* Defaults: inline 4096 both ways, 32 credits, sq_depth 256, calls up to 64 MiB (server)
 * and replies up to 256 MiB (client), default limits, no MSGP, read chunks in replies to
 * clients that take them (8 awaiting RDMA_DONE at once), DONE deadline 5 s, credit wait
 * 30 s, 15 s without progress ends a connection, long calls in one position-zero chunk. */
RPCRDMA_API void rpcrdma_eng_config_default(struct rpcrdma_eng_config *cfg, uint32_t role);

/* Lower face: the provider. ctx is passed back unchanged. */
struct rpcrdma_eng_lower {
	void *ctx;
	int (*mr_reg)(void *ctx, void *addr, size_t len, unsigned access, struct rpcrdma_mr **out);
	int (*mr_dereg)(void *ctx, struct rpcrdma_mr *mr);
	int (*post_recv)(void *ctx, const struct rpcrdma_sge *sge, void *op);
	int (*post_send)(void *ctx, const struct rpcrdma_sge *sge, void *op);
	int (*post_read)(void *ctx, const struct rpcrdma_sge *local, uint32_t nlocal,
			 const struct rpcrdma_segment *remote, uint32_t nremote, void *op);
	int (*post_write)(void *ctx, const struct rpcrdma_sge *local, uint32_t nlocal,
			  const struct rpcrdma_segment *remote, uint32_t nremote, void *op);
	/* optional (NULL: the provider cannot): a Send that invalidates the peer's
	 * registration `handle` (Send With Invalidate). A server engine uses it for a reply
	 * to a client whose RFC 8797 private data says it takes them (docs/ENGINE.md) */
	int (*post_send_inv)(void *ctx, const struct rpcrdma_sge *sge, uint32_t handle, void *op);
};

/* Upper face. Every callback is optional except the one for the engine's role. */
struct rpcrdma_eng_upper {
	void *ctx;
	/* client: c finished (rpcrdma_eng_call_status); free it with rpcrdma_eng_call_free */
	void (*call_done)(void *ctx, struct rpcrdma_eng_call *c);
	/* server: a call arrived; answer with rpcrdma_eng_reply() (or drop it) */
	void (*request)(void *ctx, struct rpcrdma_eng_req *r);
	/* server: r's reply is fully sent (and, for read chunks, acknowledged or expired):
	 * the reply buffers given to rpcrdma_eng_reply() may be reused; r is freed after */
	void (*reply_done)(void *ctx, struct rpcrdma_eng_req *r, int status);
	/* the engine found a connection error (reason is a negative RPCRDMA_ERR_*): the owner
	 * should close the endpoint. Pending work has already failed. */
	void (*fatal)(void *ctx, int reason);
	/* client: a backward-direction call arrived (RFC 8167): the whole RPC call, valid
	 * during the callback only. Answer it with rpcrdma_eng_bc_reply(xid) */
	void (*bc_request)(void *ctx, uint32_t xid, const void *call, uint32_t len);
	/* server: backward call b finished (rpcrdma_eng_bcall_status); free it with
	 * rpcrdma_eng_bcall_free */
	void (*bc_done)(void *ctx, struct rpcrdma_eng_bcall *b);
};

/* ---- upper-face data ---- */

/* A DDP-eligible item moved out of the inline XDR stream (RFC 5666 §3.4): in a call it
 * becomes a read chunk; in a reply it goes into the next write chunk. offset: where it
 * belongs in the stream without the items (a multiple of 4); len: bytes, without the
 * XDR pad (RFC 8166 §3.4.5). The memory must stay valid until the call completes /
 * the reply is done. */
struct rpcrdma_ddp_item {
	uint32_t offset;
	uint32_t len;
	const void *data;
};

/* A caller buffer offered for one DDP-eligible result (a write chunk, RFC 5666 §3.6). */
struct rpcrdma_ddp_buf {
	void *data;
	uint32_t cap;
	uint32_t len;     /* out: bytes the responder wrote there */
	uint32_t used;    /* out: 1 when the responder placed the result there */
};

struct rpcrdma_call_args {
	const void *xdr;            /* the RPC call (starting with its XID), items removed */
	uint32_t xdr_len;
	const struct rpcrdma_ddp_item *items;   /* argument items, by increasing offset */
	uint32_t nitems;
	struct rpcrdma_ddp_buf *results;        /* result buffers, in result order */
	uint32_t nresults;
	uint32_t max_reply;         /* largest reply (without results placed in buffers) */
	uint32_t no_reply;          /* batched: the responder sends no reply. The call holds
				       its credit and memory until a reply to a later call
				       arrives (the responder took it, in order) or the
				       connection ends; then it completes with status 0 */
};

struct rpcrdma_reply_args {
	const void *xdr;            /* the RPC reply, items removed */
	uint32_t xdr_len;
	const struct rpcrdma_ddp_item *items;   /* result items, by increasing offset */
	uint32_t nitems;
};

/* ---- lifecycle ---- */

/* The engine exists before its connection (its private data goes into the connect or
 * accept); the lower face comes with rpcrdma_eng_start(). */
RPCRDMA_API int rpcrdma_eng_create(const struct rpcrdma_eng_config *cfg,
				   const struct rpcrdma_eng_upper *up, struct rpcrdma_eng **out);
/* Our RFC 8797 private data for connect/accept. Returns its length. */
RPCRDMA_API int rpcrdma_eng_pdata(const struct rpcrdma_eng *e, void *buf, size_t cap);
/* The peer's private data (NULL/0 when it sent none: 1024 bytes each way, RFC 8797). */
RPCRDMA_API void rpcrdma_eng_set_peer_pdata(struct rpcrdma_eng *e, const void *pd, size_t len);
/* The connection is up: take its lower face, register buffers, post the first receives.
 * Call rpcrdma_eng_set_peer_pdata() first. */
RPCRDMA_API int rpcrdma_eng_start(struct rpcrdma_eng *e, const struct rpcrdma_eng_lower *lo,
				  uint64_t now_ms);
/* Set the largest inline message we send (e.g. after CONF_RDMA, RFC 5666 §6.2): capped by
 * the configured inline_send, at least 1024. Returns what is in effect. */
RPCRDMA_API uint32_t rpcrdma_eng_set_inline_send(struct rpcrdma_eng *e, uint32_t size);
/* The longest message the peer may send us inline: our receive buffer, or less where its
 * RFC 8797 private data says it sends less (1024 bytes without private data, and until
 * rpcrdma_eng_set_peer_pdata() has run). */
RPCRDMA_API uint32_t rpcrdma_eng_inline_reply(const struct rpcrdma_eng *e);
/* Fail everything pending (the endpoint is being closed or is gone). Idempotent. */
RPCRDMA_API void rpcrdma_eng_shutdown(struct rpcrdma_eng *e, int reason);
RPCRDMA_API void rpcrdma_eng_destroy(struct rpcrdma_eng *e);

/* ---- events ---- */

/* A completion from the endpoint. */
RPCRDMA_API void rpcrdma_eng_on_cqe(struct rpcrdma_eng *e, const struct rpcrdma_cqe *cqe,
				    uint64_t now_ms);
/* Timers: returns the time of the next deadline, or UINT64_MAX. */
RPCRDMA_API uint64_t rpcrdma_eng_tick(struct rpcrdma_eng *e, uint64_t now_ms);
/* 1 while operations of ours are still in flight (e.g. RDMA_DONEs whose calls have
 * completed): drive the endpoint until 0 before closing it, or they are lost. */
RPCRDMA_API int rpcrdma_eng_sending(const struct rpcrdma_eng *e);
/* 1 when the engine still works (not failed, not shut down). */
RPCRDMA_API int rpcrdma_eng_alive(const struct rpcrdma_eng *e);

/* ---- requester ---- */

/* Start a call. The engine keeps pointers into a (and a itself) until the call
 * completes. Returns 0 with *out set; the call completes through call_done. */
RPCRDMA_API int rpcrdma_eng_call(struct rpcrdma_eng *e, const struct rpcrdma_call_args *a,
				 void *user, uint64_t now_ms, struct rpcrdma_eng_call **out);
RPCRDMA_API void *rpcrdma_eng_call_user(const struct rpcrdma_eng_call *c);
/* 0, or -RPCRDMA_ERR_VERSION (ERR_VERS: see call_vers), -RPCRDMA_ERR_PROTO (ERR_CHUNK,
 * or a reply that broke the rules), -RPCRDMA_ERR_DISCONN, -RPCRDMA_ERR_TIMEDOUT. */
RPCRDMA_API int rpcrdma_eng_call_status(const struct rpcrdma_eng_call *c);
/* The reply stream (its results placed in the caller's buffers are not in it). */
RPCRDMA_API const void *rpcrdma_eng_call_reply(const struct rpcrdma_eng_call *c, uint32_t *len);
/* The RDMA_ERROR code the reply carried (RPCRDMA_WIRE_ERR_VERS/_CHUNK), 0 if none. */
RPCRDMA_API uint32_t rpcrdma_eng_call_wire_err(const struct rpcrdma_eng_call *c);
/* The length of the reply chunk the call offered (RFC 5666 §3.6), 0 when it offered none. */
RPCRDMA_API uint32_t rpcrdma_eng_call_reply_chunk(const struct rpcrdma_eng_call *c);
/* The version range an ERR_VERS reported. */
RPCRDMA_API void rpcrdma_eng_call_vers(const struct rpcrdma_eng_call *c, uint32_t *low,
				       uint32_t *high);
/* The RDMA_MSGP parameters of the reply (0, 0 if it was not MSGP), with the offset of its
 * RPC message in the receive buffer, for rpcrdma_msgp_pad(). */
RPCRDMA_API void rpcrdma_eng_call_msgp(const struct rpcrdma_eng_call *c, uint32_t *align,
				       uint32_t *thresh, uint32_t *base);
/* Free a completed call; on a call still in progress, abandon it: no call_done follows,
 * its memory is withdrawn from the peer at once, the engine no longer reads its
 * rpcrdma_call_args (the caller may free them), and a call already sent keeps its credit
 * until its reply (dropped) or the connection's end. */
RPCRDMA_API void rpcrdma_eng_call_free(struct rpcrdma_eng_call *c);
/* 1 once the call has been sent (the responder may hold it), 0 while it waits. */
RPCRDMA_API int rpcrdma_eng_call_sent(const struct rpcrdma_eng_call *c);
/* Credits a new call could use at once: granted, less those in use and those promised to
 * calls already waiting. */
RPCRDMA_API uint32_t rpcrdma_eng_credits_free(const struct rpcrdma_eng *e);
/* 1 when calls wait for a credit and every credit in use is held by an abandoned call:
 * nothing will give one back but a new connection (RFC 8166 §4.5). */
RPCRDMA_API int rpcrdma_eng_starved(const struct rpcrdma_eng *e);

/* ---- responder ---- */

RPCRDMA_API void rpcrdma_eng_req_set_user(struct rpcrdma_eng_req *r, void *user);
RPCRDMA_API void *rpcrdma_eng_req_user(const struct rpcrdma_eng_req *r);
/* The whole call: inline bytes with every read chunk back at its position. */
RPCRDMA_API const void *rpcrdma_eng_req_call(const struct rpcrdma_eng_req *r, uint32_t *len);
/* The call's buffer, from now on the caller's (NULL if already taken): a server whose
 * decoded arguments point into the call keeps it past the reply. *cap gets its size, for
 * rpcrdma_eng_buf_put(), which keeps it for the engine's next calls; free() also does. */
RPCRDMA_API void *rpcrdma_eng_req_take_call(struct rpcrdma_eng_req *r, size_t *cap);
RPCRDMA_API void rpcrdma_eng_buf_put(struct rpcrdma_eng *e, void *buf, size_t cap);
RPCRDMA_API uint32_t rpcrdma_eng_req_xid(const struct rpcrdma_eng_req *r);
/* Write chunks the caller offered (count) and the bytes each can take. */
RPCRDMA_API uint32_t rpcrdma_eng_req_nwrites(const struct rpcrdma_eng_req *r);
RPCRDMA_API uint64_t rpcrdma_eng_req_write_cap(const struct rpcrdma_eng_req *r, uint32_t i);
/* The largest reply this call can receive (inline threshold or its reply chunk). */
RPCRDMA_API uint64_t rpcrdma_eng_req_reply_cap(const struct rpcrdma_eng_req *r);
RPCRDMA_API void rpcrdma_eng_req_msgp(const struct rpcrdma_eng_req *r, uint32_t *align,
				      uint32_t *thresh, uint32_t *base);
/* Send the reply. The engine picks the form (inline, write list, reply chunk, read chunks
 * when configured); when it fits nowhere the caller gets RDMA_ERROR/ERR_CHUNK (RFC 8166
 * §4.5) and this returns -RPCRDMA_ERR_NOSPC. -RPCRDMA_ERR_DISCONN: the connection is gone.
 * reply_done follows (or has already run) for every result except -RPCRDMA_ERR_INVAL, which
 * changes nothing: r is still the caller's to answer or drop. */
RPCRDMA_API int rpcrdma_eng_reply(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r,
				  const struct rpcrdma_reply_args *a, uint64_t now_ms);
/* Answer nothing (the upper layer drops the call): the credit is given back. */
RPCRDMA_API void rpcrdma_eng_req_drop(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r);
/* RDMA Reads this responder keeps in flight at most, per connection (what CONF_RDMA's
 * maxrdmaread reports, RFC 5666 §6.2). */
RPCRDMA_API uint32_t rpcrdma_eng_max_reads(const struct rpcrdma_eng *e);

/* ---- backchannel (RFC 8167): calls from the responder to the requester ----
 * Inline only, in both directions (RDMA_MSG, empty chunk lists: RFC 8167 §5), with
 * credits and receives accounted apart from the forward direction's (§4). */

/* Server: call the client back. xdr is the whole RPC call (its XID first); it must stay
 * valid until bc_done. The call waits for a backward credit (the client's last backward
 * reply grants them; 1 at first) and goes inline: -RPCRDMA_ERR_NOSPC when it is longer
 * than the client's receive buffers, -RPCRDMA_ERR_DISCONN when the connection is gone.
 * Status of a finished call: 0 (its reply is in rpcrdma_eng_bcall_reply), or
 * -RPCRDMA_ERR_PROTO (the client answered RDMA_ERROR, or broke the rules),
 * -RPCRDMA_ERR_DISCONN. */
RPCRDMA_API int rpcrdma_eng_bc_call(struct rpcrdma_eng *e, const void *xdr, uint32_t len,
				    void *user, uint64_t now_ms, struct rpcrdma_eng_bcall **out);
RPCRDMA_API void *rpcrdma_eng_bcall_user(const struct rpcrdma_eng_bcall *b);
RPCRDMA_API int rpcrdma_eng_bcall_status(const struct rpcrdma_eng_bcall *b);
RPCRDMA_API const void *rpcrdma_eng_bcall_reply(const struct rpcrdma_eng_bcall *b, uint32_t *len);
/* Free a finished call; on one in progress, abandon it: no bc_done follows, and a call
 * already sent keeps its backward credit until its reply (dropped) or the connection's
 * end. */
RPCRDMA_API void rpcrdma_eng_bcall_free(struct rpcrdma_eng_bcall *b);
/* Client: answer backward call xid with the whole RPC reply. -RPCRDMA_ERR_INVAL: no such
 * call is waiting for an answer; -RPCRDMA_ERR_NOSPC: longer than the server's receive
 * buffers (the server gets RDMA_ERROR/ERR_CHUNK instead); -RPCRDMA_ERR_DISCONN. The call
 * is answered (its slot free) whatever the result. */
RPCRDMA_API int rpcrdma_eng_bc_reply(struct rpcrdma_eng *e, uint32_t xid, const void *xdr,
				     uint32_t len, uint64_t now_ms);
/* Backward calls in progress (server: waiting or sent; client: awaiting our answer). */
RPCRDMA_API uint32_t rpcrdma_eng_bc_pending(const struct rpcrdma_eng *e);

/* ---- RDMA_MSGP (RFC 5666 §4.3) ---- */

/* Pad bytes a padded message carries before the data of an opaque item of len bytes
 * whose data would start at offset off of the RPC message, the message starting at
 * byte base of the receive buffer: 0 unless len > thresh. */
RPCRDMA_API uint32_t rpcrdma_msgp_pad(uint32_t align, uint32_t thresh, uint32_t base,
				      uint32_t off, uint32_t len);

/* ---- statistics ---- */

enum rpcrdma_eng_errclass {
	RPCRDMA_EC_DECODE = 0,       /* peer header rejected by the codec */
	RPCRDMA_EC_UNKNOWN_XID,      /* reply or DONE for nothing pending (dropped) */
	RPCRDMA_EC_CREDIT_OVERRUN,   /* client sent beyond its grant (connection closed) */
	RPCRDMA_EC_ERR_VERS_RCVD,    /* RDMA_ERROR/ERR_VERS received */
	RPCRDMA_EC_ERR_CHUNK_RCVD,   /* RDMA_ERROR/ERR_CHUNK received */
	RPCRDMA_EC_ERR_VERS_SENT,
	RPCRDMA_EC_ERR_CHUNK_SENT,
	RPCRDMA_EC_REPLY_TOO_BIG,    /* reply fitted no form the caller offered */
	RPCRDMA_EC_TOO_LONG,         /* message longer than max_message */
	RPCRDMA_EC_CHUNK_MISMATCH,   /* chunks in a reply that do not match the call */
	RPCRDMA_EC_RDMA_FAILED,      /* an RDMA Read or Write failed */
	RPCRDMA_EC_DONE_TIMEOUT,     /* read chunks of a reply released without DONE */
	RPCRDMA_EC_CREDIT_TIMEOUT,   /* call failed waiting for a credit */
	RPCRDMA_EC_UNEXPECTED,       /* message of a kind this side does not take */
	RPCRDMA_EC_NO_RESOURCES,     /* registration or allocation failed */
	RPCRDMA_EC_DISCONNECT,
	RPCRDMA_EC_STALLED,          /* nothing could be posted, or (server) a reply's Send
					did not complete, for stall_timeout_ms */
	RPCRDMA_EC_COUNT
};

struct rpcrdma_eng_stats {
	uint64_t calls, replies;                   /* started/received; sent/received */
	uint64_t sent[5], rcvd[5];                 /* by enum rpcrdma_proc */
	uint64_t read_chunks, write_chunks, reply_chunks;      /* chunks used, both ways */
	uint64_t read_chunk_bytes, write_chunk_bytes, reply_chunk_bytes;
	uint64_t long_calls, long_replies;         /* position-zero call / reply chunk or p0 reply */
	uint64_t rdma_reads, rdma_writes, rdma_read_bytes, rdma_write_bytes;
	uint64_t inline_bytes_sent, inline_bytes_rcvd;
	uint64_t credits_granted;   /* last grant sent (server) or received (client) */
	uint64_t credits_max;       /* highest grant */
	uint64_t credits_in_use;    /* now: calls (and DONEs) counted against the grant */
	uint64_t credit_waits;      /* client: calls that had to wait for a credit */
	uint64_t recvs_posted;      /* now */
	uint64_t mrs_live;          /* registrations held now */
	/* backchannel (RFC 8167): calls sent (server) or received (client); replies
	 * received (server) or sent (client); backward calls a client answered itself
	 * (no backchannel: PROG_UNAVAIL; over its grant: SYSTEM_ERR; chunks: ERR_CHUNK);
	 * backward calls that failed (server: RDMA_ERROR, disconnect; client: reply too
	 * long) */
	uint64_t bc_calls, bc_replies, bc_refused, bc_failed;
	uint64_t errors[RPCRDMA_EC_COUNT];
	uint32_t inline_send, inline_recv;         /* thresholds in effect */
	/* server: replies sent with Send With Invalidate of a handle of the call (RFC 8797
	 * §3.2) */
	uint64_t remote_inv;
	uint64_t reserved[15];      /* zero: room for counters to come without an ABI break */
};

RPCRDMA_API void rpcrdma_eng_stats(const struct rpcrdma_eng *e, struct rpcrdma_eng_stats *out);
RPCRDMA_API const char *rpcrdma_eng_errclass_name(uint32_t ec);
/* Why the engine ended its connection (the class counted when it failed, e.g.
 * "credit_overrun", "stalled", "disconnect"), for a log line; NULL while it stands. */
RPCRDMA_API const char *rpcrdma_eng_fatal_class(const struct rpcrdma_eng *e);

#ifdef __cplusplus
}
#endif
#endif
