/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal: what every connected implementation (libfabric, verbs) keeps per endpoint so
 * that prov.h's contract holds — each posted operation completes exactly once; an RDMA
 * Read/Write split into pieces (one local and one remote segment each) completes once,
 * when all its pieces have, with the first error; completions found while nobody asked
 * are kept (the stash) until rpcrdma_ep_poll(); a lost connection completes everything
 * still outstanding with -RPCRDMA_ERR_DISCONN. */
#ifndef RPCRDMA_PROV_OPQ_H
#define RPCRDMA_PROV_OPQ_H

#include <stdint.h>

#include "objpool.h"
#include "rpcrdma/prov.h"

/* Bytes an implementation may use as its per-piece context (libfabric's fi_context2 is
 * 64); the implementation's completion names this address, i.e. the piece. */
#define RPCRDMA__PIECE_CTX 64

struct rpcrdma__op;
struct rpcrdma__opq;

struct rpcrdma__piece {
	_Alignas(16) uint8_t ctx[RPCRDMA__PIECE_CTX];   /* first */
	struct rpcrdma__op *op;
};

struct rpcrdma__op {
	struct rpcrdma__op *prev, *next;
	struct rpcrdma__opq *q;      /* whose: a completion queue shared by several endpoints
					names only the piece */
	void *ctx;
	uint32_t opcode;
	uint32_t len;
	int status;
	uint32_t pending;            /* pieces posted and not completed, + 1 while posting */
	uint32_t npieces;
	int posting;                 /* its pieces are being posted: only the poster frees it */
	struct rpcrdma__piece pieces[];
};

/* A growing ring of completions (the stash here, the mock's completion queue). */
struct rpcrdma__ring {
	struct rpcrdma_cqe *v;
	uint32_t head, n, cap;
};

/* Room for at least need entries in all. */
int rpcrdma__ring_reserve(struct rpcrdma__ring *r, uint32_t need);
/* The caller reserved room first. */
void rpcrdma__ring_push(struct rpcrdma__ring *r, const struct rpcrdma_cqe *c);
int rpcrdma__ring_pop(struct rpcrdma__ring *r, struct rpcrdma_cqe *out, int max);
void rpcrdma__ring_free(struct rpcrdma__ring *r);

struct rpcrdma__opq {
	struct rpcrdma__op *ops;     /* outstanding */
	uint32_t tx_used, rx_used;
	uint32_t tx_depth, rx_depth;
	struct rpcrdma__ring stash;  /* completions found while not asked for them */
	struct rpcrdma__objpool ones; /* finished one-piece ops (Sends, receives), for the
					 next: no malloc per message (objpool.h) */
};

/* Where completions go: the caller's array first, the stash when it is full or absent. */
struct rpcrdma__sink {
	struct rpcrdma_cqe *out;
	int max;
	int n;
};

int rpcrdma__opq_init(struct rpcrdma__opq *q, uint32_t tx_depth, uint32_t rx_depth);
/* Frees what is outstanding without completing it (the endpoint is being freed). */
void rpcrdma__opq_free(struct rpcrdma__opq *q);

void rpcrdma__opq_emit(struct rpcrdma__opq *q, struct rpcrdma__sink *s,
		       const struct rpcrdma_cqe *c);
int rpcrdma__opq_pop(struct rpcrdma__opq *q, struct rpcrdma_cqe *out, int max);

/* One piece of an operation completed (len: bytes received, for a receive). */
void rpcrdma__piece_done(struct rpcrdma__opq *q, struct rpcrdma__piece *pc, int status,
			 uint32_t len, struct rpcrdma__sink *s);

/* The connection is gone: the DISCONNECT event, then every outstanding operation
 * completed with -RPCRDMA_ERR_DISCONN. */
void rpcrdma__opq_fail_all(struct rpcrdma__opq *q, struct rpcrdma__sink *s);

/* Post one piece: the implementation's call, returning 0, RPCRDMA__POSTED_DONE when the
 * piece was done as it was posted and no completion will come for it (libfabric's
 * fi_inject: the data was copied), or a negative RPCRDMA_ERR_*. For a Send or receive,
 * raddr and key are 0. Only rpcrdma__post_one's Sends may be done at once. */
#define RPCRDMA__POSTED_DONE 1
typedef int (*rpcrdma__post_fn)(void *impl, uint32_t opcode, void *laddr, uint32_t len,
				struct rpcrdma_mr *mr, uint64_t raddr, uint32_t key,
				struct rpcrdma__piece *pc);

/* A Send or a receive of one piece. connected: 0 gives -RPCRDMA_ERR_DISCONN. */
int rpcrdma__post_one(struct rpcrdma__opq *q, int connected, uint32_t opcode,
		      const struct rpcrdma_sge *sge, void *ctx, rpcrdma__post_fn post, void *impl);

/* An RDMA Read or Write, split into pieces of one local and one remote segment each.
 * A failure after some pieces went out completes the operation with that error once the
 * posted pieces have completed; a failure of the first piece is returned. */
int rpcrdma__post_rma(struct rpcrdma__opq *q, int connected, uint32_t opcode,
		      const struct rpcrdma_sge *l, uint32_t nl, const struct rpcrdma_segment *r,
		      uint32_t nr, void *ctx, rpcrdma__post_fn post, void *impl);

#endif
