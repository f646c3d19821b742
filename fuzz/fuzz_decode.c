/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target: decode any bytes in every direction; whatever decodes must
 * re-encode to exactly the header bytes it was decoded from, and the fast path for the
 * common shapes must agree with the general decoder (tests/decode_same.h), under the
 * defaults and under small limits. Also feeds the RPC peek and the connection formats.
 * Aborts on any inconsistency. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode_same.h"
#include "rpcrdma/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_same_decoders(const uint8_t *data, size_t size, enum rpcrdma_dir dir)
{
	static const struct rpcrdma_limits small = { 1, 1, 3 };
	bool fast;

	if (decode_same(data, size, dir, NULL, 64, &fast) ||
	    decode_same(data, size, dir, &small, 2, &fast))
		abort();
}

static void check_roundtrip(const uint8_t *data, size_t size, enum rpcrdma_dir dir)
{
	static struct rpcrdma_msg_storage st;
	struct rpcrdma_decode_status ds;
	struct rpcrdma_rpc_info ri;
	struct rpcrdma_msg m;
	uint8_t out[4096];
	int rc, n;

	check_same_decoders(data, size, dir);
	rpcrdma_msg_bind(&m, &st);
	rc = rpcrdma_decode(data, size, dir, NULL, &m, &ds);
	if (rc) {
		if (ds.reason == RPCRDMA_OK || ds.reason >= RPCRDMA_REASON_COUNT || ds.offset > size)
			abort();
		return;
	}
	if (m.hdr_len + (size_t)m.body_len != size)
		abort();
	n = rpcrdma_encode(&m, out, sizeof(out));
	if (n < 0 || (size_t)n != m.hdr_len || memcmp(out, data, (size_t)n) != 0)
		abort();
	if (m.body)
		(void)rpcrdma_rpc_peek(m.body, m.body_len, &ri);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpcrdma_pdata pd;
	struct rpcrdma_ccp_res res;

	check_roundtrip(data, size, RPCRDMA_DIR_ANY);
	check_roundtrip(data, size, RPCRDMA_DIR_CALL);
	check_roundtrip(data, size, RPCRDMA_DIR_REPLY);
	(void)rpcrdma_pdata_decode(data, size, &pd);
	(void)rpcrdma_ccp_res_decode(data, size, &res);
	return 0;
}
