/* SPDX-License-Identifier: BSD-2-Clause */
/* librpcrdma — the types the protocol core (engine.h) and the provider layer (prov.h)
 * share: registered memory, the pieces of it an operation names, and what a completion
 * reports. The core only carries them; providers give them meaning. */
#ifndef RPCRDMA_TYPES_H
#define RPCRDMA_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rpcrdma_prov;

/* Access a registration allows. LOCAL alone: send/receive buffers. */
enum rpcrdma_access {
	RPCRDMA_ACC_LOCAL = 0,
	RPCRDMA_ACC_REMOTE_READ = 1,   /* the peer may RDMA Read it (read chunks) */
	RPCRDMA_ACC_REMOTE_WRITE = 2,  /* the peer may RDMA Write it (write/reply chunks) */
	RPCRDMA_ACC_READ_SINK = 4,     /* our RDMA Reads land in it. iWARP carries a Read's
					  data as tagged writes into the sink (RFC 5040
					  §4.4), so there the verbs provider lets the peer
					  write it too; elsewhere it adds no remote right */
};

struct rpcrdma_mr {
	uint32_t handle;   /* steering tag to advertise */
	uint64_t offset;   /* offset to advertise for addr[0] */
	void *addr;
	size_t len;
	unsigned access;
	struct rpcrdma_prov *prov;   /* owner */
};

/* A piece of local registered memory. */
struct rpcrdma_sge {
	struct rpcrdma_mr *mr;
	void *addr;        /* inside mr */
	uint32_t len;
};

enum rpcrdma_op {
	RPCRDMA_OP_SEND = 1,
	RPCRDMA_OP_RECV,
	RPCRDMA_OP_READ,
	RPCRDMA_OP_WRITE,
	RPCRDMA_OP_DISCONNECT,   /* the connection is gone; ctx is NULL */
};

struct rpcrdma_cqe {
	void *ctx;         /* as posted */
	uint32_t op;       /* enum rpcrdma_op */
	uint32_t len;      /* bytes received (RECV) or moved */
	int status;        /* 0 or negative RPCRDMA_ERR_* */
};

#ifdef __cplusplus
}
#endif
#endif
