/* SPDX-License-Identifier: BSD-2-Clause */
/* librpcrdma — the mock provider ("mock"): endpoints inside one process, every operation
 * carried out at once and deterministically, with fault injection, for tests.
 *
 * Semantics, stricter than real fabrics so that bugs show:
 * - A Send with no receive posted at the peer breaks the connection (RDMA's "receiver
 *   not ready" with no retry), unless faults.rnr_wait is set (then it waits, as with
 *   infinite RNR retry, and is delivered when a receive is posted).
 * - A receive buffer smaller than the message breaks the connection.
 * - RDMA Read/Write check key, range and access right (RFC 5042); a violation completes
 *   the operation with -RPCRDMA_ERR_ACCESS and breaks the connection, as verbs does.
 * - A Send With Invalidate (rpcrdma_post_send_inv) names a registration with remote
 *   access, which no RDMA Read or Write reaches afterwards (it may still be released);
 *   any other handle breaks the connection (-RPCRDMA_ERR_ACCESS), as a device does.
 * - A broken connection reports RPCRDMA_OP_DISCONNECT on both endpoints and completes
 *   everything posted with -RPCRDMA_ERR_DISCONN.
 * - rpcrdma_connect() with timeout 0 returns at once; the endpoint becomes connected
 *   when the request is accepted (so one thread can play both sides). With a timeout it
 *   waits for the accept like any provider.
 * Counting for faults is per provider handle, from 1, in the order things happen. */
#ifndef RPCRDMA_PROV_MOCK_H
#define RPCRDMA_PROV_MOCK_H

#include "rpcrdma/prov.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rpcrdma_mock_faults {
	uint32_t fail_completion;   /* the Nth completion gets -RPCRDMA_ERR_IO, connection breaks */
	uint32_t delay_completion;  /* the Nth completion is held back ... */
	uint32_t delay_polls;       /* ... for this many polls of its endpoint */
	uint32_t disconnect_at_post; /* the connection breaks as the Nth operation is posted */
	uint32_t corrupt_recv;      /* the Nth message received gets a byte flipped ... */
	uint32_t corrupt_offset;    /* ... at this offset (clamped to the message) */
	uint32_t rnr_wait;          /* 1: a Send waits for a receive instead of failing */
	uint32_t again_at_post;     /* from the Nth post on, ... */
	uint32_t again_count;       /* ... this many (0: 1) return -RPCRDMA_ERR_AGAIN: the
				       queue is full, nothing is posted, try again later */
	uint32_t no_remote_inv;     /* 1: no Send With Invalidate (caps.remote_inv 0, as
				       libfabric's providers); read by lower faces made after */
};

struct rpcrdma_mock_stats {
	uint64_t posts, completions;
	uint64_t sends, recvs, reads, writes, bytes;
	uint64_t access_errors, rnr_errors, disconnects;
	uint64_t mrs_live;          /* registrations not yet released */
	uint64_t sends_inv;         /* Sends With Invalidate */
	uint32_t last_inv_handle;   /* the handle the last of them invalidated */
	uint32_t inv_errors;        /* ... that named no remotely reachable registration */
};

/* A mock provider of its own (faults and counters are per provider). */
int rpcrdma_mock_open(struct rpcrdma_prov **out);
int rpcrdma_mock_set_faults(struct rpcrdma_prov *p, const struct rpcrdma_mock_faults *f);
int rpcrdma_mock_get_stats(struct rpcrdma_prov *p, struct rpcrdma_mock_stats *out);
/* Two endpoints connected to each other, each with the other's private data. */
int rpcrdma_mock_pair(struct rpcrdma_prov *p, const void *pdata_a, size_t len_a,
				  const void *pdata_b, size_t len_b, struct rpcrdma_ep **a,
				  struct rpcrdma_ep **b);
/* Break the connection of ep now (both sides see it). */
int rpcrdma_mock_disconnect(struct rpcrdma_ep *ep);

#ifdef __cplusplus
}
#endif
#endif
