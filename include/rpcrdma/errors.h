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
};

/* Text for a negative (or positive) RPCRDMA_ERR_* value; never NULL. */
RPCRDMA_API const char *rpcrdma_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
