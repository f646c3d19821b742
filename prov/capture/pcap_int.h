/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal: the capture's frame builder (pcap_frame.c), sink (pcap_sink.c) and per-endpoint
 * state (pcap_ep.c). */
#ifndef RPCRDMA_PCAP_INT_H
#define RPCRDMA_PCAP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "rpcrdma/pcap.h"
#include "rpcrdma/prov.h"

/* InfiniBand transport opcodes (IBTA vol. 1, 9.2.1): RC and UD */
enum {
	IB_SEND_FIRST = 0x00, IB_SEND_MIDDLE = 0x01, IB_SEND_LAST = 0x02, IB_SEND_ONLY = 0x04,
	IB_WRITE_FIRST = 0x06, IB_WRITE_MIDDLE = 0x07, IB_WRITE_LAST = 0x08, IB_WRITE_ONLY = 0x0a,
	IB_READ_REQUEST = 0x0c, IB_READ_RESP_FIRST = 0x0d, IB_READ_RESP_MIDDLE = 0x0e,
	IB_READ_RESP_LAST = 0x0f, IB_READ_RESP_ONLY = 0x10,
	IB_SEND_LAST_INV = 0x16, IB_SEND_ONLY_INV = 0x17,
	IB_UD_SEND_ONLY = 0x64,
};

#define CAP_ETH_LEN 14
#define CAP_IP4_LEN 20
#define CAP_IP6_LEN 40
#define CAP_UDP_LEN 8
#define CAP_BTH_LEN 12
#define CAP_RETH_LEN 16
#define CAP_AETH_LEN 4
#define CAP_DETH_LEN 8
#define CAP_IETH_LEN 4
#define CAP_ICRC_LEN 4
#define CAP_MAD_LEN 256
#define CAP_HDR_MAX (CAP_ETH_LEN + CAP_IP6_LEN + CAP_UDP_LEN + CAP_BTH_LEN + CAP_RETH_LEN)
#define CAP_FRAME_MAX (CAP_HDR_MAX + RPCRDMA_PCAP_MTU + 3 + CAP_ICRC_LEN)
#define ROCEV2_PORT 4791

/* One direction of a connection, as frames show it. */
struct cap_path {
	int v6;
	uint8_t src_ip[16], dst_ip[16];  /* IPv4 in the first 4 bytes */
	uint8_t src_mac[6], dst_mac[6];
	uint16_t sport;                  /* UDP source port (RoCEv2 entropy) */
	uint32_t dst_qp;
};

/* Write Ethernet..BTH (and ext, the extended transport header) into buf; returns where
 * the payload goes. */
size_t rpcrdma__cap_headers(uint8_t *buf, const struct cap_path *p, uint8_t opcode,
			    uint32_t psn, const void *ext, size_t ext_len);
/* Pad the payload (paylen bytes at buf + hdr_len) to 4 bytes, fill in lengths, checksums
 * and the invariant CRC; returns the frame's length. Unless whole, only the headers are
 * in buf (the frame will be cut at the snap length): no pad, CRC or UDP checksum. */
size_t rpcrdma__cap_finish(uint8_t *buf, const struct cap_path *p, size_t hdr_len,
			   size_t paylen, int whole);
/* Extended transport headers */
void rpcrdma__cap_reth(uint8_t out[CAP_RETH_LEN], uint64_t va, uint32_t rkey, uint32_t len);
void rpcrdma__cap_aeth(uint8_t out[CAP_AETH_LEN], uint32_t msn);
void rpcrdma__cap_deth(uint8_t out[CAP_DETH_LEN], uint32_t qkey, uint32_t src_qp);

/* Connection management MADs (IBTA vol. 1, 12.6) for the RDMA IP CM service (annex A11) */
struct cap_cm {
	uint64_t tid;
	uint32_t comm_id[2];          /* [0] the active side's, [1] the passive side's */
	uint32_t qpn[2];
	uint32_t psn[2];
	uint16_t port[2];             /* TCP-style ports of the IP CM service id / header */
	int v6;
	uint8_t ip[2][16];
	const uint8_t *pdata[2];      /* RFC 8797 private data each side sent */
	size_t pdata_len[2];
};
void rpcrdma__cap_cm_req(uint8_t mad[CAP_MAD_LEN], const struct cap_cm *cm);
void rpcrdma__cap_cm_rep(uint8_t mad[CAP_MAD_LEN], const struct cap_cm *cm);
void rpcrdma__cap_cm_rtu(uint8_t mad[CAP_MAD_LEN], const struct cap_cm *cm);

/* ---- sink ---- */

/* Queue one frame (len bytes, of which the first min(len, snaplen) are kept). */
void rpcrdma__cap_put(struct rpcrdma_pcap *c, const uint8_t *frame, size_t len);
uint32_t rpcrdma__cap_snaplen(const struct rpcrdma_pcap *c);
/* Count a captured Send by its message type, and RDMA operations */
void rpcrdma__cap_count_send(struct rpcrdma_pcap *c, const uint8_t *msg, size_t len);
void rpcrdma__cap_count_rma(struct rpcrdma_pcap *c, uint32_t op, int peer);

/* Endpoints of one connection captured in the same file are paired: then each Send is
 * written once, by its sender. Returns 1 if the other side was already registered. */
int rpcrdma__cap_register(struct rpcrdma_pcap *c, void *who, uint64_t conn_key, int active);
void rpcrdma__cap_unregister(struct rpcrdma_pcap *c, void *who);
int rpcrdma__cap_paired(struct rpcrdma_pcap *c, void *who);
void rpcrdma__cap_ref(struct rpcrdma_pcap *c);
void rpcrdma__cap_unref(struct rpcrdma_pcap *c);

/* ---- registered memory, so that the peer's RDMA on it can be shown (pcap_mr.c) ---- */
void rpcrdma__cap_mr_add(const struct rpcrdma_mr *mr);
void rpcrdma__cap_mr_del(const struct rpcrdma_mr *mr);
/* Local bytes behind (handle, offset, len) of a registration of prov; NULL if unknown. */
const uint8_t *rpcrdma__cap_mr_find(const struct rpcrdma_prov *prov, uint32_t handle,
				    uint64_t offset, uint32_t len);
void rpcrdma__cap_mr_use(int delta);   /* sinks open: registrations are tracked while > 0 */

/* ---- per endpoint (hooks called by prov.c) ---- */
struct cap_ep;
void rpcrdma__cap_ep_free(struct cap_ep *s);
void rpcrdma__cap_on_send(struct cap_ep *s, const struct rpcrdma_sge *sge);
/* A Send With Invalidate: its last frame carries the handle in an IETH */
void rpcrdma__cap_on_send_inv(struct cap_ep *s, const struct rpcrdma_sge *sge, uint32_t handle);
void rpcrdma__cap_on_recv_post(struct cap_ep *s, const struct rpcrdma_sge *sge, void *ctx);
void rpcrdma__cap_on_rma(struct cap_ep *s, uint32_t op, const struct rpcrdma_sge *local,
			 uint32_t nlocal, const struct rpcrdma_segment *remote, uint32_t nremote,
			 void *ctx);
void rpcrdma__cap_on_cqe(struct cap_ep *s, const struct rpcrdma_cqe *c);
/* A file shows cause before effect only if an operation's frames are queued before
 * anything it causes: prov.c holds the capture's order lock from before a post until its
 * frames are queued, and while it queues the frames of completions. */
struct rpcrdma_pcap *rpcrdma__cap_sink(const struct cap_ep *s);
void rpcrdma__cap_order_lock(struct rpcrdma_pcap *c);
void rpcrdma__cap_order_unlock(struct rpcrdma_pcap *c);

#endif
