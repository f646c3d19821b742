/* Error and reason texts. */
#include "rpcrdma/codec.h"

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
	default: return "unknown error";
	}
}
