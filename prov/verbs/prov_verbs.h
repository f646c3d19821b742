/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal: the verbs provider's rules for connection private data (prov_verbs.c), apart
 * so that a test can hold them to RFC 8797 without a device. */
#ifndef RPCRDMA_PROV_VERBS_H
#define RPCRDMA_PROV_VERBS_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/rdma_cma.h>

/* The connection parameters for rdma_connect()/rdma_accept(): the private data is the
 * caller's bytes exactly, nothing before or after them. */
void rpcrdma__verbs_cm_param(struct rdma_conn_param *p, const void *pdata, size_t len,
			     uint8_t responder_resources, uint8_t initiator_depth);
/* The peer's private data from a CM event, from its first byte, at most
 * RPCRDMA_PDATA_MAX bytes (padding included); returns how many were copied. */
size_t rpcrdma__verbs_peer_pdata(const struct rdma_conn_param *p, uint8_t *out);

#endif
