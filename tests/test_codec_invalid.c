/* SPDX-License-Identifier: BSD-2-Clause */
/* Negative vectors: one per validation rule, each with the exact reason, the RDMA_ERROR
 * a receiver must answer with, and the byte offset of the problem. */
#include "harness.h"
#include "vectors.h"

static struct rpcrdma_msg_storage store;

static void test_each_invalid_vector(void)
{
	size_t i;

	for (i = 0; i < n_invalid_vectors; i++) {
		const struct vec *v = &invalid_vectors[i];
		struct rpcrdma_decode_status st;
		struct rpcrdma_msg m;
		int rc, want_rc;
		uint32_t want_answer;

		rpcrdma_msg_bind(&m, &store);
		rc = rpcrdma_decode(v->bytes, v->len, v->dir, v->lim, &m, &st);
		want_rc = v->reason == RPCRDMA_BAD_VERS ? -RPCRDMA_ERR_VERSION : -RPCRDMA_ERR_PROTO;
		want_answer = v->reason == RPCRDMA_BAD_VERS ? RPCRDMA_WIRE_ERR_VERS
							    : RPCRDMA_WIRE_ERR_CHUNK;
		if (rc != want_rc || st.reason != v->reason || st.offset != v->offset)
			fprintf(stderr, "%s: rc %d reason %s offset %u (want %s at %u)\n", v->name,
				rc, rpcrdma_reason_name(st.reason), st.offset,
				rpcrdma_reason_name(v->reason), v->offset);
		CHECK_EQ_U(rc, want_rc);
		CHECK_EQ_U(st.reason, v->reason);
		CHECK_EQ_U(st.answer, want_answer);
		CHECK_EQ_U(st.offset, v->offset);
		CHECK(st.offset <= v->len);
	}
}

/* Every rule has at least one vector. */
static void test_every_reason_covered(void)
{
	uint32_t r;
	size_t i;

	for (r = 1; r < RPCRDMA_REASON_COUNT; r++) {
		int seen = 0;

		for (i = 0; i < n_invalid_vectors; i++)
			seen |= invalid_vectors[i].reason == r;
		if (!seen)
			fprintf(stderr, "no vector for %s\n", rpcrdma_reason_name(r));
		CHECK(seen);
		CHECK(strcmp(rpcrdma_reason_name(r), "unknown") != 0);
	}
}

/* Cutting a valid message anywhere inside its header is reported as truncation at or
 * before the cut, never as success and never read past. */
static void test_truncation_everywhere(void)
{
	size_t i, cut;

	for (i = 0; i < n_valid_vectors; i++) {
		const struct vec *v = &valid_vectors[i];
		struct rpcrdma_decode_status st;
		struct rpcrdma_msg m;
		uint32_t hdr_len;

		rpcrdma_msg_bind(&m, &store);
		CHECK_EQ_I(rpcrdma_decode(v->bytes, v->len, v->dir, NULL, &m, &st), 0);
		hdr_len = m.hdr_len;
		if (m.vers != RPCRDMA_VERSION)
			continue;
		for (cut = 0; cut < hdr_len; cut++) {
			int rc;

			rc = rpcrdma_decode(v->bytes, cut, v->dir, NULL, &m, &st);
			CHECK_ERR(rc, RPCRDMA_ERR_PROTO);
			CHECK_EQ_U(st.reason, RPCRDMA_BAD_SHORT);
			CHECK(st.offset <= cut);
		}
	}
}

/* The same zero-segment write chunk is an error in a call, an unused chunk in a reply. */
static void test_empty_chunk_depends_on_direction(void)
{
	const struct vec *v = find_vector("bad_empty_reply_call");
	struct rpcrdma_decode_status st;
	struct rpcrdma_msg m;

	rpcrdma_msg_bind(&m, &store);
	CHECK_EQ_I(rpcrdma_decode(v->bytes, v->len, RPCRDMA_DIR_REPLY, NULL, &m, &st), 0);
	CHECK_EQ_U(m.has_reply, 1);
	CHECK_EQ_U(m.reply.nsegs, 0);
	/* ANY takes the direction from the RPC body, which is a call. */
	CHECK_EQ_U(rpcrdma_decode(v->bytes, v->len, RPCRDMA_DIR_ANY, NULL, &m, &st),
		   -RPCRDMA_ERR_PROTO);
	CHECK_EQ_U(st.reason, RPCRDMA_BAD_EMPTY_CHUNK);
}

/* Defaults allow what the vectors use; limits of zero refuse any chunk. */
static void test_zero_limits(void)
{
	const struct vec *v = find_vector("msg_read_call");
	struct rpcrdma_limits zero = { 0, 0, 0 };
	struct rpcrdma_decode_status st;
	struct rpcrdma_msg m;

	rpcrdma_msg_bind(&m, &store);
	CHECK_ERR(rpcrdma_decode(v->bytes, v->len, v->dir, &zero, &m, &st), RPCRDMA_ERR_PROTO);
	CHECK_EQ_U(st.reason, RPCRDMA_BAD_LIST_CHUNKS);
	v = find_vector("msg_null_call");
	CHECK_EQ_I(rpcrdma_decode(v->bytes, v->len, v->dir, &zero, &m, &st), 0);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_each_invalid_vector);
	RUN(test_every_reason_covered);
	RUN(test_truncation_everywhere);
	RUN(test_empty_chunk_depends_on_direction);
	RUN(test_zero_limits);
	HARNESS_END();
}
