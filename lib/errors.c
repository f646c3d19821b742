/* SPDX-License-Identifier: BSD-2-Clause */
/* Error and reason texts, and the library's version. */
#include "rpcrdma/codec.h"
#include "rpcrdma/version.h"

const char *rpcrdma_version(void)
{
	return RPCRDMA_VERSION_STRING;
}

const char *rpcrdma_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case 0: return "success";
	case RPCRDMA_ERR_INVAL: return "invalid argument";
	case RPCRDMA_ERR_NOSPC: return "buffer or storage too small";
	case RPCRDMA_ERR_PROTO: return "malformed message from peer";
	case RPCRDMA_ERR_VERSION: return "unsupported RPC-over-RDMA version";
	case RPCRDMA_ERR_NOMEM: return "out of memory";
	case RPCRDMA_ERR_RANGE: return "value out of range for the wire format";
	case RPCRDMA_ERR_AGAIN: return "queue full, try again after polling";
	case RPCRDMA_ERR_DISCONN: return "connection lost";
	case RPCRDMA_ERR_TIMEDOUT: return "timed out";
	case RPCRDMA_ERR_NOPROV: return "no usable RDMA provider";
	case RPCRDMA_ERR_REJECTED: return "connection rejected by peer";
	case RPCRDMA_ERR_REFUSED: return "connection refused";
	case RPCRDMA_ERR_IO: return "RDMA operation failed";
	case RPCRDMA_ERR_ACCESS: return "remote access refused";
	case RPCRDMA_ERR_ADDR: return "address not usable";
	case RPCRDMA_ERR_NOTSUP: return "not supported by this provider";
	default: return "unknown error";
	}
}
