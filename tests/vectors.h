/* SPDX-License-Identifier: BSD-2-Clause */
/* Golden byte vectors written by hand from the XDR of RFC 5666 §4.2-§4.3. */
#ifndef RPCRDMA_TEST_VECTORS_H
#define RPCRDMA_TEST_VECTORS_H

#include <stddef.h>
#include <stdint.h>

#include "rpcrdma/codec.h"

struct vec {
	const char *name;
	const uint8_t *bytes;
	size_t len;
	enum rpcrdma_dir dir;
	const struct rpcrdma_limits *lim;  /* NULL: defaults */
	uint32_t reason;                   /* RPCRDMA_OK for valid vectors */
	uint32_t offset;                   /* of the problem, for invalid vectors */
};

extern const struct vec valid_vectors[];
extern const size_t n_valid_vectors;
extern const struct vec invalid_vectors[];
extern const size_t n_invalid_vectors;

const struct vec *find_vector(const char *name);

#endif
