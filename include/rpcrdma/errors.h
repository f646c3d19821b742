/* SPDX-License-Identifier: BSD-2-Clause */
/* librpcrdma — error codes shared by every layer.
 *
 * Functions return 0, a length, or a negative RPCRDMA_ERR_* value.
 */
#ifndef RPCRDMA_ERRORS_H
#define RPCRDMA_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RPCRDMA_BUILDING) && defined(__GNUC__)
#define RPCRDMA_API __attribute__((visibility("default")))
#else
#define RPCRDMA_API
#endif

enum rpcrdma_err {
	RPCRDMA_ERR_INVAL = 1,   /* bad argument from the caller */
	RPCRDMA_ERR_NOSPC = 2,   /* output buffer or storage too small */
	RPCRDMA_ERR_PROTO = 3,   /* malformed message from the peer */
	RPCRDMA_ERR_VERSION = 4, /* unsupported RPC-over-RDMA version */
	RPCRDMA_ERR_NOMEM = 5,   /* allocation failed */
	RPCRDMA_ERR_RANGE = 6,   /* value outside what the format can carry */
	RPCRDMA_ERR_AGAIN = 7,   /* queue full: poll for completions, then retry */
	RPCRDMA_ERR_DISCONN = 8, /* the connection is gone */
	RPCRDMA_ERR_TIMEDOUT = 9,
	RPCRDMA_ERR_NOPROV = 10, /* no usable RDMA provider of that name */
	RPCRDMA_ERR_REJECTED = 11, /* the peer rejected the connection */
	RPCRDMA_ERR_REFUSED = 12,  /* nobody listening there */
	RPCRDMA_ERR_IO = 13,     /* an RDMA operation failed */
	RPCRDMA_ERR_ACCESS = 14, /* remote access refused (bad key, range or right) */
	RPCRDMA_ERR_ADDR = 15,   /* host or port not usable */
	RPCRDMA_ERR_NOTSUP = 16, /* not something this provider does */
};

/* Text for a negative (or positive) RPCRDMA_ERR_* value; never NULL. */
RPCRDMA_API const char *rpcrdma_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
