/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal to the engine (lib/engine*.c). */
#ifndef RPCRDMA_ENGINE_INT_H
#define RPCRDMA_ENGINE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bufcache.h"
#include "objpool.h"
#include "rpcrdma/engine.h"

/* Intrusive doubly-linked lists (calls waiting or in flight, live requests). */
struct eng_link {
	struct eng_link *prev, *next;
};

struct eng_list {
	struct eng_link *head, *tail;
};

#define ENG_OF(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* What a posted operation's context points at. */
enum eng_op_kind { OPK_RECV = 1, OPK_SEND, OPK_CALL_READ, OPK_REQ_RDMA };

struct eng_op {
	uint32_t kind;
	void *owner;
};

/* Who a Send buffer was used for: decides what its completion releases. */
enum eng_send_for { SEND_CALL = 1, SEND_DONE, SEND_REPLY, SEND_ERROR, SEND_BACKWARD };

/* Work that waits for a resource (Send buffer, receive buffer, send-queue room). */
struct eng_task {
	struct eng_task *next;
	int (*resume)(struct rpcrdma_eng *e, struct eng_task *t, uint64_t now);
	bool queued;
};

/* A slot in the registered receive or send area. */
struct eng_buf {
	struct eng_op op;
	uint8_t *mem;
	struct eng_buf *next;     /* free list */
	uint32_t send_for;        /* enum eng_send_for */
	void *owner;              /* the req a reply Send belongs to */
	struct eng_task task;     /* a backward message waiting for send-queue room */
	uint32_t len, proc;       /* ... and what it posts then */
};

/* The inline stream and the read chunks to put back into it (RFC 5666 §3.4). */
struct eng_asm_chunk {
	uint32_t first, nsegs;     /* read-list entries */
	uint64_t dst;              /* where its bytes go in the assembled stream */
	uint32_t len;
};

#define ENG_MAX_ASM (RPCRDMA_DEF_LIST_CHUNKS + 1u)
#define RPCRDMA__READ_ENTRY_LEN 24u   /* discriminator, position, segment (RFC 5666 §4.2) */

struct eng_asm {
	uint32_t nchunks;
	struct eng_asm_chunk chunks[ENG_MAX_ASM];   /* non-zero positions */
	/* inline pieces: bytes [src, src+len) of the inline stream go to dst */
	uint32_t npieces;
	struct { uint64_t src, dst, len; } pieces[ENG_MAX_ASM + 1];
	uint64_t total;
	bool pos_zero;                 /* the inline stream is itself read chunk 0 */
	uint32_t p0_first, p0_nsegs;
};

enum call_state { CALL_WAITING = 1, CALL_SENT, CALL_READING, CALL_COMPLETE };

/* A call's registrations held in the call itself (its items, its results, the reply
 * chunk): more only with more items than calls usually carry. */
#define CALL_MRS_INLINE 6

struct rpcrdma_eng_call {
	struct rpcrdma_eng *e;
	struct eng_link link;          /* in the wait queue, then in the in-flight list */
	struct eng_task task;
	struct eng_op op;              /* RDMA Reads of a reply's read chunks */
	const struct rpcrdma_call_args *a;
	void *user;
	uint32_t state;
	uint32_t xid;
	int status;
	bool user_freed;               /* timed out and freed: a late reply only frees it,
					  and a (the caller's) is no longer read */
	bool no_reply;                 /* a->no_reply, kept: a may be gone (user_freed) */
	bool holds_credit;
	bool orphan;                   /* its credit is counted in e->orphaned */
	uint64_t seq;                  /* order sent on this connection */
	uint8_t *p0_buf;               /* a long call with its items put back inline */
	bool done_owed;                /* send RDMA_DONE once the reads are done */
	uint32_t reads_pending;
	uint32_t reads_next;           /* reply reads posted so far (the rest wait for room) */
	uint64_t deadline;
	struct rpcrdma_mr **mrs;       /* chunks of this call: mrs_inline, or allocated */
	uint32_t nmrs, mrs_cap;
	struct rpcrdma_mr *mrs_inline[CALL_MRS_INLINE];
	struct rpcrdma_mr *reply_mr;   /* the reply chunk offered */
	uint8_t *reply_buf;
	uint32_t reply_cap;
	size_t reply_buf_cap;          /* its allocation (a reused buffer may be larger) */
	struct rpcrdma_mr *asm_mr;     /* a reply with read chunks, reassembled */
	uint8_t *asm_buf;              /* ... or an inline reply, copied */
	uint32_t proc;                 /* form of the call */
	uint32_t mask;                 /* items sent inline (RDMA_MSGP, or RDMA_MSG that fits) */
	uint32_t inline_len;
	bool credit_counted;           /* counted once in credit_waits */
	const uint8_t *reply;
	uint32_t reply_len;
	uint32_t vers_low, vers_high;
	uint32_t wire_err;
	uint32_t msgp_align, msgp_thresh, msgp_base;
	struct rpcrdma_msg_storage *hdr;   /* decoded reply header while reading */
	uint8_t *inl_buf;              /* an inline reply's copy; kept, as hdr, with a kept call */
	uint32_t inl_cap;
	struct rpcrdma_msg msg;
	struct eng_asm as;
};

enum req_state { REQ_READING = 1, REQ_READY, REQ_UPPER, REQ_SENDING, REQ_WAIT_DONE,
		 REQ_FINISHED };

struct rpcrdma_eng_req {
	struct rpcrdma_eng *e;
	struct eng_link link;          /* in the list of live requests */
	struct eng_task task;
	struct eng_op op;              /* RDMA Reads of the call, Writes of the reply */
	void *user;
	uint32_t state;
	uint32_t xid;
	uint32_t credits_asked;
	bool outstanding;              /* counts against the client's grant */
	bool overtaken;                /* ... no more: a later call was answered first */
	uint64_t seq;                  /* order of arrival on the connection */
	bool dead;                     /* the connection is gone */
	uint32_t ops_pending;          /* RDMA operations posted */
	uint32_t reads_next;           /* call reads posted so far (the rest wait for room) */
	uint32_t wr_next;              /* RDMA Writes of the reply posted so far */
	uint32_t ops_failed;
	bool send_posted;
	bool reply_sent;               /* the Send completed */
	uint8_t *call;                 /* the assembled call */
	uint32_t call_len;
	size_t call_cap;
	struct rpcrdma_mr *call_mr;
	uint32_t in_align, in_thresh, in_base;   /* MSGP parameters of the call */
	/* the call's write list and reply chunk, copied out of the receive buffer */
	uint32_t nwrites;
	struct rpcrdma_write_chunk writes[RPCRDMA_DEF_LIST_CHUNKS];
	bool has_reply;
	struct rpcrdma_write_chunk reply;
	struct rpcrdma_segment segs[RPCRDMA_DEF_TOTAL_SEGS];
	/* the one handle every segment of the call's chunks named, if they named one */
	bool has_inv;
	uint32_t inv_handle;
	/* the reply being sent */
	struct rpcrdma_msg out;
	struct rpcrdma_read_segment out_reads[RPCRDMA_DEF_LIST_CHUNKS];
	struct rpcrdma_write_chunk out_writes[RPCRDMA_DEF_LIST_CHUNKS];
	struct rpcrdma_segment out_segs[RPCRDMA_DEF_TOTAL_SEGS];
	struct rpcrdma_mr *mrs[RPCRDMA_DEF_LIST_CHUNKS + 2];
	uint32_t nmrs;
	uint8_t *flat;                 /* copy of a reply built from several pieces */
	uint32_t form;                 /* proc of the reply, or RDMA_ERROR */
	uint32_t inline_mask;          /* items that travel inline */
	const struct rpcrdma_reply_args *args;
	bool upper_saw;                /* handed up: reply_done is owed */
	bool awaits_done;              /* read chunks offered: RDMA_DONE releases them */
	bool done_rcvd;
	uint32_t nwr;                  /* RDMA Writes to post */
	struct {
		struct rpcrdma_sge local;
		const struct rpcrdma_segment *remote;
		uint32_t nremote;
	} wr[RPCRDMA_DEF_LIST_CHUNKS + 1];
	uint64_t done_deadline;
	uint64_t send_at;              /* when the reply's Send was posted */
	struct eng_asm as;
	struct rpcrdma_msg_storage in_hdr;   /* decoded call header while reading */
	struct rpcrdma_msg in;
};

enum bcall_state { BC_WAITING = 1, BC_SENT, BC_FINISHED };

/* Server: a backward-direction call (RFC 8167). */
struct rpcrdma_eng_bcall {
	struct rpcrdma_eng *e;
	struct eng_link link;          /* in bc_waitq, then in bc_sent */
	void *user;
	const uint8_t *xdr;
	uint32_t len, xid;
	uint32_t state;                /* enum bcall_state */
	bool abandoned;                /* freed by its owner: a late reply only frees it */
	int status;
	uint8_t *reply;
	uint32_t reply_len;
};

struct rpcrdma_eng {
	struct rpcrdma_eng_config cfg;
	struct rpcrdma_eng_lower lo;
	struct rpcrdma_eng_upper up;
	struct rpcrdma_eng_stats st;
	bool started, dead;
	int dead_reason;
	uint32_t dead_class;           /* RPCRDMA_EC_* counted when it failed (+1; 0: none) */
	void (*fail_all)(struct rpcrdma_eng *e);   /* the role's, for rpcrdma__eng_fail */
	uint32_t inline_send;          /* in effect: ours capped by the peer's receive size */
	uint32_t inline_recv;
	uint32_t inline_reply;         /* what the peer sends us inline: inline_recv capped by
					  the peer's send size */
	uint8_t peer_ext;              /* RPCRDMA_PDATA_X_* from the peer's private data */
	uint8_t peer_flags;            /* RPCRDMA_PDATA_F_* from the peer's RFC 8797 block */
	/* buffers */
	uint8_t *rmem, *smem;
	struct rpcrdma_mr *rmr, *smr;
	struct eng_buf *rbufs, *sbufs;
	uint32_t nrbufs, nsbufs;
	struct eng_buf *rfree, *sfree;
	uint32_t recvs_posted;
	uint32_t recvs_owed;           /* reposts the provider could not take yet */
	uint32_t sq_used;
	/* client */
	uint32_t granted;
	uint32_t in_use;               /* calls and DONEs counted against the grant */
	uint32_t orphaned;             /* ... of which abandoned calls hold this many */
	uint32_t nwaiting;             /* calls in waitq */
	uint64_t send_seq;             /* calls sent on this connection */
	struct eng_list waitq;         /* calls waiting for a credit, in order */
	struct eng_list inflight;      /* calls sent, being read, or completed not freed */
	/* server */
	uint64_t sq_seen_at;           /* when something this side posted last completed */
	uint32_t outstanding;          /* calls received, reply not yet sent */
	uint32_t overtaken;            /* calls still running, freed by a later call's reply */
	uint64_t recv_seq;             /* calls received on this connection */
	uint32_t grant_hi;             /* highest grant sent */
	uint32_t pool_taken;           /* receive buffers counted in cfg.pool */
	uint32_t done_pending;
	struct eng_list reqs;
	/* backchannel (RFC 8167), engine_bc.c. Server: calls waiting for a backward
	 * credit, calls sent; the client's last grant; receives posted for their replies.
	 * Client: XIDs of backward calls awaiting our answer (cfg.bc_credits slots). */
	struct eng_list bc_waitq, bc_sent;
	uint32_t bc_granted, bc_inflight, bc_recvs;
	uint32_t *bc_xids;
	uint8_t *bc_held;
	uint32_t bc_nheld;
	/* reply-chunk (client) and call (server) buffers kept for reuse */
	struct rpcrdma__bufcache cache;
	/* finished calls (with their header storage) or requests, for the next ones */
	struct rpcrdma__objpool objs;
	uint64_t objs_since;           /* when the last one was kept */
	/* work waiting for resources */
	struct eng_task *stall_head, *stall_tail;
	uint64_t stall_since;          /* the head has waited since */
	uint64_t now;                  /* the latest time the owner gave */
};

/* engine.c */
bool rpcrdma__eng_reply_reads(const struct rpcrdma_eng *e);
void rpcrdma__list_push(struct eng_list *l, struct eng_link *n);
void rpcrdma__list_unlink(struct eng_list *l, struct eng_link *n);
int rpcrdma__eng_settle(struct rpcrdma_eng *e, int rc);
void rpcrdma__eng_try(struct rpcrdma_eng *e, struct eng_task *t, int rc);
void rpcrdma__eng_fail(struct rpcrdma_eng *e, int reason, uint32_t ec);
void rpcrdma__eng_count(struct rpcrdma_eng *e, uint32_t ec);
struct eng_buf *rpcrdma__eng_sbuf_get(struct rpcrdma_eng *e);
void rpcrdma__eng_sbuf_put(struct rpcrdma_eng *e, struct eng_buf *b);
int rpcrdma__eng_post_send(struct rpcrdma_eng *e, struct eng_buf *b, uint32_t len,
			   uint32_t proc);
/* The same as a Send With Invalidate of the peer's handle (lo.post_send_inv set). */
int rpcrdma__eng_post_send_inv(struct rpcrdma_eng *e, struct eng_buf *b, uint32_t len,
			       uint32_t proc, uint32_t handle);
int rpcrdma__eng_post_recv(struct rpcrdma_eng *e);
void rpcrdma__eng_stall(struct rpcrdma_eng *e, struct eng_task *t);
bool rpcrdma__eng_sq_room(const struct rpcrdma_eng *e, uint32_t n);
int rpcrdma__eng_post_asm_read(struct rpcrdma_eng *e, const struct eng_asm *as, uint32_t k,
			       const struct rpcrdma_read_segment *reads, struct rpcrdma_mr *mr,
			       uint8_t *buf, void *op);
int rpcrdma__eng_reg(struct rpcrdma_eng *e, void *addr, size_t len, unsigned acc,
		     struct rpcrdma_mr **out);
void rpcrdma__eng_dereg(struct rpcrdma_eng *e, struct rpcrdma_mr **mr);
/* Finished calls or requests kept in e->objs for the next ones go back (free_obj) once
 * the connection has been without work (busy false) for RPCRDMA__OBJS_KEPT_MS; returns
 * when to look again (UINT64_MAX: nothing kept). */
#define RPCRDMA__OBJS_KEPT_MS 100
uint64_t rpcrdma__eng_objs_release(struct rpcrdma_eng *e, uint64_t now, bool busy,
				   void (*free_obj)(void *));
void rpcrdma__eng_unstall(struct rpcrdma_eng *e, struct eng_task *t);
uint32_t rpcrdma__eng_take_recvs(struct rpcrdma_eng *e, uint32_t want);
/* The shared receive budget (NULL pool: unlimited). */
uint32_t rpcrdma__pool_take(struct rpcrdma_credit_pool *pool, uint32_t n);
void rpcrdma__pool_give(struct rpcrdma_credit_pool *pool, uint32_t n);

/* engine_chunks.c */
int rpcrdma__asm_plan(struct eng_asm *as, const struct rpcrdma_msg *m, uint64_t inline_len,
		      uint64_t max_total);
void rpcrdma__asm_copy_inline(const struct eng_asm *as, uint8_t *dst, const uint8_t *src);
uint32_t rpcrdma__asm_p0_sges(const struct eng_asm *as, struct rpcrdma_mr *mr, uint8_t *dst,
			      struct rpcrdma_sge *sge);
void rpcrdma__asm_zero_pads(const struct eng_asm *as, uint8_t *dst);
uint32_t rpcrdma__asm_nreads(const struct eng_asm *as);
uint32_t rpcrdma__asm_read(const struct eng_asm *as, uint32_t k,
			   const struct rpcrdma_read_segment *reads, struct rpcrdma_mr *mr,
			   uint8_t *dst, struct rpcrdma_sge *sge, uint32_t *nsge,
			   struct rpcrdma_segment *segs);
uint32_t rpcrdma__segs_with_bytes(struct rpcrdma_segment *out, const struct rpcrdma_segment *s,
				  uint32_t n);
void rpcrdma__fill_segments(struct rpcrdma_segment *out, const struct rpcrdma_write_chunk *c,
			    uint64_t len);
uint64_t rpcrdma__flatten(uint8_t *dst, const uint8_t *xdr, uint32_t xdr_len,
			  const struct rpcrdma_ddp_item *items, uint32_t nitems, uint32_t mask,
			  uint32_t align, uint32_t thresh, uint32_t base);
int rpcrdma__check_items(const struct rpcrdma_ddp_item *items, uint32_t nitems, uint32_t xdr_len);
uint32_t rpcrdma__hdr_chunks_len(uint32_t nreads, uint32_t nwrite_chunks,
				 uint32_t nwrite_segs, uint32_t reply_segs, bool has_reply);

/* engine_bc.c: the backchannel, both roles */
int rpcrdma__eng_bc_init(struct rpcrdma_eng *e);
int rpcrdma__eng_bc_start(struct rpcrdma_eng *e);
bool rpcrdma__eng_bc_client_recv(struct rpcrdma_eng *e, const struct rpcrdma_msg *m,
				 const uint8_t *buf);
bool rpcrdma__eng_bc_server_recv(struct rpcrdma_eng *e, const struct rpcrdma_msg *m);
bool rpcrdma__eng_is_reply(const struct rpcrdma_msg *m);
void rpcrdma__eng_bc_pump(struct rpcrdma_eng *e);
void rpcrdma__eng_bc_fail_all(struct rpcrdma_eng *e);
void rpcrdma__eng_bc_destroy(struct rpcrdma_eng *e);
uint32_t rpcrdma__eng_bc_recvs(const struct rpcrdma_eng *e);
uint32_t rpcrdma__eng_bc_sends(const struct rpcrdma_eng *e);

/* engine_client.c / engine_server.c */
bool rpcrdma__eng_client_recv(struct rpcrdma_eng *e, const uint8_t *buf, uint32_t len,
			      uint64_t now);
void rpcrdma__eng_client_read_done(struct rpcrdma_eng *e, struct rpcrdma_eng_call *c,
				   int status, uint64_t now);
void rpcrdma__eng_client_done_sent(struct rpcrdma_eng *e);
void rpcrdma__eng_client_fail_all(struct rpcrdma_eng *e, int reason);
uint64_t rpcrdma__eng_client_tick(struct rpcrdma_eng *e, uint64_t now);
void rpcrdma__eng_client_pump(struct rpcrdma_eng *e, uint64_t now);
bool rpcrdma__eng_server_recv(struct rpcrdma_eng *e, const uint8_t *buf, uint32_t len,
			      uint64_t now);
void rpcrdma__eng_server_rdma_done(struct rpcrdma_eng *e, struct rpcrdma_eng_req *r,
				   int status, uint64_t now);
void rpcrdma__eng_server_sent(struct rpcrdma_eng *e, struct eng_buf *b, int status);
void rpcrdma__eng_server_fail_all(struct rpcrdma_eng *e);
uint64_t rpcrdma__eng_server_tick(struct rpcrdma_eng *e, uint64_t now);
void rpcrdma__eng_server_destroy(struct rpcrdma_eng *e);
void rpcrdma__eng_client_destroy(struct rpcrdma_eng *e);

static inline uint32_t eng_roundup4(uint32_t n)
{
	return (n + 3u) & ~3u;
}

#endif
