/* SPDX-License-Identifier: BSD-2-Clause */
/* librpcrdma — capture of RPC-over-RDMA traffic as a Wireshark-readable pcap file.
 *
 * Whatever the provider (tcp, shm, verbs, mock), each event an endpoint sees is written as
 * a synthetic RoCEv2 frame (Ethernet / IPv4 or IPv6 / UDP 4791 / InfiniBand BTH ... ICRC):
 *   Send posted or received   RC SEND ONLY, or FIRST / MIDDLE... / LAST above the MTU
 *   RDMA Write posted         RC RDMA WRITE ONLY or FIRST (with RETH) / MIDDLE / LAST
 *   RDMA Read posted          RC RDMA READ REQUEST (RETH) per remote segment, and on its
 *                             completion READ RESPONSE frames carrying the data
 *   connection start          CM REQ / REP / RTU MADs on QP 1 (UD), carrying the QP
 *                             numbers and the RFC 8797 private data, so that Wireshark
 *                             links both directions of the connection
 * Wireshark's "rpcordma" dissector then decodes every Send, hands the RPC inside to the
 * RPC (and NFS) dissectors and reassembles chunks from the RDMA Read/Write frames.
 *
 * Frames are built on the thread that saw the event and copied into a bounded buffer that
 * a writer thread drains to the file; when the buffer is full the frame is dropped and
 * counted (rpcrdma_pcap_stats), never waited for. Docs: docs/CAPTURE.md.
 */
#ifndef RPCRDMA_PCAP_H
#define RPCRDMA_PCAP_H

#include <stddef.h>
#include <stdint.h>

#include "errors.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rpcrdma_pcap;
struct rpcrdma_ep;

#define RPCRDMA_PCAP_MTU 4096              /* payload bytes per frame (IB's largest MTU) */
#define RPCRDMA_PCAP_SNAPLEN_DEFAULT 65535  /* whole frames */
#define RPCRDMA_PCAP_BUFFER_DEFAULT (32u << 20)

struct rpcrdma_pcap_opts {
	uint32_t snaplen;        /* bytes kept of each frame (0: default); at least 128 */
	size_t buffer_bytes;     /* bound on frames waiting for the writer (0: default) */
	uint64_t reserved[8];       /* zero: room for fields to come without an ABI break */
};

struct rpcrdma_pcap_stats {
	uint64_t frames;         /* written to the file */
	uint64_t bytes;          /* of frames written, as captured (after snaplen) */
	uint64_t truncated;      /* frames cut at the snap length */
	uint64_t dropped;        /* frames lost because the buffer was full */
	uint64_t dropped_bytes;
	uint64_t write_errors;   /* failed writes to the file (the frames are lost) */
	uint64_t sends[5];       /* Sends captured, by RPC-over-RDMA message type 0..4
				    (RDMA_MSG, NOMSG, MSGP, DONE, ERROR) */
	uint64_t sends_other;    /* Sends whose type is none of those */
	uint64_t writes, reads;  /* RDMA Write / Read operations this side posted */
	uint64_t peer_writes, peer_reads;  /* the peer's on our memory, shown from the data
					      when its answer arrived (docs/CAPTURE.md) */
	uint64_t reserved[8];       /* zero: room for fields to come without an ABI break */
};

/* Open a capture file (created or truncated). "%p" in the path becomes the process id,
 * for programs that start others with the same environment. */
RPCRDMA_API int rpcrdma_pcap_open(const char *path, const struct rpcrdma_pcap_opts *opts,
				  struct rpcrdma_pcap **out);
/* Write what is buffered, stop the writer, close the file. Endpoints still attached
 * stop capturing. Accepts NULL. */
RPCRDMA_API void rpcrdma_pcap_close(struct rpcrdma_pcap *c);
/* Wait until every frame queued so far is in the file (or lost to a write error). */
RPCRDMA_API void rpcrdma_pcap_flush(struct rpcrdma_pcap *c);
RPCRDMA_API void rpcrdma_pcap_stats(struct rpcrdma_pcap *c, struct rpcrdma_pcap_stats *out);
RPCRDMA_API const char *rpcrdma_pcap_path(const struct rpcrdma_pcap *c);

/* Capture one endpoint into c (NULL stops it). Connection frames are written at once. */
RPCRDMA_API int rpcrdma_ep_capture(struct rpcrdma_ep *ep, struct rpcrdma_pcap *c);

/* The capture every endpoint connected or accepted from now on joins (NULL: none).
 * Replacing or closing it while other threads are connecting is not safe: set it before
 * connections start, and close it (after setting NULL) when they are done.
 * Unless set, the environment variable RPCRDMA_PCAP=FILE opens one at the first
 * connection (RPCRDMA_PCAP_SNAPLEN and RPCRDMA_PCAP_BUFFER set its options), written
 * and closed at exit. Returns the previous one. */
RPCRDMA_API struct rpcrdma_pcap *rpcrdma_pcap_set_default(struct rpcrdma_pcap *c);
/* The default capture, opening it from the environment if asked for there; NULL if none. */
RPCRDMA_API struct rpcrdma_pcap *rpcrdma_pcap_default(void);

#ifdef __cplusplus
}
#endif
#endif
