/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal: the transport header's general decoder, for the tests and the fuzz target
 * that compare it with rpcrdma_decode()'s fast path for the common shapes. */
#ifndef RPCRDMA_CODEC_INT_H
#define RPCRDMA_CODEC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rpcrdma/codec.h"

/* rpcrdma_decode() without the fast path: every shape, every error with its reason. */
int rpcrdma__decode_full(const void *buf, size_t len, enum rpcrdma_dir dir,
			 const struct rpcrdma_limits *lim, struct rpcrdma_msg *m,
			 struct rpcrdma_decode_status *st);

/* The fast path alone: true, with m and st filled as rpcrdma__decode_full() fills them,
 * when buf is one of the common shapes; false, touching nothing, otherwise.
 * buf, m and st are not NULL; dir is an enum rpcrdma_dir. */
bool rpcrdma__decode_fast(const uint8_t *buf, size_t len, enum rpcrdma_dir dir,
			  const struct rpcrdma_limits *lim, struct rpcrdma_msg *m,
			  struct rpcrdma_decode_status *st);

#endif
