/* SPDX-License-Identifier: BSD-2-Clause */
/* Golden vectors: each valid message decodes to exactly the fields written by hand,
 * and re-encoding it gives back the same bytes. */
#include <errno.h>
#include <stdlib.h>

#include "harness.h"
#include "vectors.h"

static struct rpcrdma_msg_storage store;
static struct rpcrdma_msg m;

static int decode_vec(const char *name)
{
	const struct vec *v = find_vector(name);
	struct rpcrdma_decode_status st;

	rpcrdma_msg_bind(&m, &store);
	if (!v)
		return -1;
	return rpcrdma_decode(v->bytes, v->len, v->dir, v->lim, &m, &st);
}

static void check_seg(const struct rpcrdma_segment *s, uint32_t h, uint32_t l, uint64_t o)
{
	CHECK_EQ_U(s->handle, h);
	CHECK_EQ_U(s->length, l);
	CHECK_EQ_U(s->offset, o);
}

static void test_all_valid_reencode(void)
{
	uint8_t out[1024];
	size_t i;

	for (i = 0; i < n_valid_vectors; i++) {
		const struct vec *v = &valid_vectors[i];
		struct rpcrdma_decode_status st;
		int rc, n;

		rpcrdma_msg_bind(&m, &store);
		rc = rpcrdma_decode(v->bytes, v->len, v->dir, NULL, &m, &st);
		if (rc)
			fprintf(stderr, "%s: %s at %u\n", v->name, rpcrdma_reason_str(st.reason),
				st.offset);
		CHECK_EQ_U(rc, 0);
		CHECK_EQ_U(st.reason, RPCRDMA_OK);
		CHECK_EQ_U(m.hdr_len + m.body_len, v->len);
		n = rpcrdma_encode(&m, out, sizeof(out));
		CHECK_EQ_U(n, m.hdr_len);
		CHECK_EQ_U(rpcrdma_encoded_len(&m), m.hdr_len);
		CHECK(n > 0 && memcmp(out, v->bytes, (size_t)n) == 0);
	}
}

static void test_null_call(void)
{
	struct rpcrdma_rpc_info ri;

	CHECK_EQ_U(decode_vec("msg_null_call"), 0);
	CHECK_EQ_U(m.xid, 0x2a);
	CHECK_EQ_U(m.vers, 1);
	CHECK_EQ_U(m.credits, 32);
	CHECK_EQ_U(m.proc, RPCRDMA_MSG);
	CHECK_EQ_U(m.nreads, 0);
	CHECK_EQ_U(m.nwrites, 0);
	CHECK_EQ_U(m.has_reply, 0);
	CHECK_EQ_U(m.hdr_len, 28);
	CHECK_EQ_U(m.body_len, 40);
	CHECK_EQ_U(m.dir, RPCRDMA_DIR_CALL);
	CHECK_EQ_I(rpcrdma_rpc_peek(m.body, m.body_len, &ri), 0);
	CHECK_EQ_U(ri.xid, 0x2a);
	CHECK_EQ_U(ri.prog, 100003);
	CHECK_EQ_U(ri.vers, 3);
	CHECK_EQ_U(ri.proc, 0);
}

static void test_read_call_write_chunk(void)
{
	CHECK_EQ_U(decode_vec("msg_read_call"), 0);
	CHECK_EQ_U(m.nwrites, 1);
	CHECK_EQ_U(m.writes[0].nsegs, 1);
	check_seg(&m.writes[0].segs[0], 0x11223344, 4096, 0x00007f0012340000ull);
	CHECK_EQ_U(rpcrdma_write_chunk_len(&m.writes[0]), 4096);
	CHECK_EQ_U(m.hdr_len, 52);
}

static void test_write_call_read_chunk(void)
{
	uint32_t next;

	CHECK_EQ_U(decode_vec("msg_write_call"), 0);
	CHECK_EQ_U(m.nreads, 1);
	CHECK_EQ_U(m.reads[0].position, 72);
	check_seg(&m.reads[0].seg, 0x55667788, 8192, 0x1000);
	CHECK_EQ_U(rpcrdma_read_chunk_len(&m, 0, &next), 8192);
	CHECK_EQ_U(next, 1);
	CHECK_EQ_U(m.has_reply, 1);
	CHECK_EQ_U(m.reply.nsegs, 1);
	check_seg(&m.reply.segs[0], 0x99aabbcc, 1024, 0x2000);
	CHECK_EQ_U(m.body_len, 72);
}

static void test_all_lists(void)
{
	uint32_t next;

	CHECK_EQ_U(decode_vec("msg_all_lists"), 0);
	CHECK_EQ_U(m.nreads, 3);
	CHECK_EQ_U(rpcrdma_read_chunk_len(&m, 0, &next), 100);
	CHECK_EQ_U(next, 2);
	CHECK_EQ_U(rpcrdma_read_chunk_len(&m, 2, &next), 32);
	CHECK_EQ_U(next, 3);
	CHECK_EQ_U(m.reads[2].position, 160);
	CHECK_EQ_U(m.nwrites, 2);
	CHECK_EQ_U(m.writes[0].nsegs, 2);
	check_seg(&m.writes[0].segs[1], 0x5, 4096, 0x50000);
	CHECK_EQ_U(m.writes[1].nsegs, 1);
	check_seg(&m.writes[1].segs[0], 0x6, 512, 0x60000);
	CHECK_EQ_U(m.has_reply, 1);
	check_seg(&m.reply.segs[0], 0x7, 2048, 0x70000);
}

static void test_long_call(void)
{
	CHECK_EQ_U(decode_vec("nomsg_long_call"), 0);
	CHECK_EQ_U(m.proc, RPCRDMA_NOMSG);
	CHECK(m.body == NULL);
	CHECK_EQ_U(m.body_len, 0);
	CHECK_EQ_U(m.nreads, 3);
	CHECK_EQ_U(m.reads[0].position, 0);
	CHECK_EQ_U(rpcrdma_read_chunk_len(&m, 0, NULL), 4000);
	CHECK_EQ_U(m.reads[2].position, 200);
	CHECK_EQ_U(m.has_reply, 1);
}

static void test_long_reply(void)
{
	CHECK_EQ_U(decode_vec("nomsg_long_reply"), 0);
	CHECK_EQ_U(m.has_reply, 1);
	CHECK_EQ_U(m.reply.nsegs, 2);
	CHECK_EQ_U(rpcrdma_write_chunk_len(&m.reply), 5000);
}

static void test_read_reply_empty_chunk(void)
{
	struct rpcrdma_rpc_info ri;

	CHECK_EQ_U(decode_vec("msg_read_reply"), 0);
	CHECK_EQ_U(m.nwrites, 2);
	CHECK_EQ_U(m.writes[0].segs[0].length, 1000);
	CHECK_EQ_U(m.writes[1].nsegs, 0);
	CHECK_EQ_I(rpcrdma_rpc_peek(m.body, m.body_len, &ri), 0);
	CHECK_EQ_U(ri.msg_type, RPCRDMA_RPC_REPLY);
	CHECK_EQ_U(ri.accept_stat, 0);
	CHECK_EQ_U(ri.hdr_len, 24);
}

static void test_reply_read_chunk(void)
{
	CHECK_EQ_U(decode_vec("msg_reply_read_chunk"), 0);
	CHECK_EQ_U(m.dir, RPCRDMA_DIR_REPLY);
	CHECK_EQ_U(m.nreads, 1);
	CHECK_EQ_U(m.reads[0].position, 40);
}

static void test_msgp(void)
{
	CHECK_EQ_U(decode_vec("msgp_call"), 0);
	CHECK_EQ_U(m.proc, RPCRDMA_MSGP);
	CHECK_EQ_U(m.align, 4096);
	CHECK_EQ_U(m.thresh, 1024);
	CHECK_EQ_U(m.hdr_len, 36);
	CHECK_EQ_U(m.body_len, 40);
}

static void test_done_and_errors(void)
{
	CHECK_EQ_U(decode_vec("done_msg"), 0);
	CHECK_EQ_U(m.proc, RPCRDMA_DONE);
	CHECK_EQ_U(m.hdr_len, 16);
	CHECK_EQ_U(decode_vec("error_vers"), 0);
	CHECK_EQ_U(m.err, RPCRDMA_WIRE_ERR_VERS);
	CHECK_EQ_U(m.vers_low, 1);
	CHECK_EQ_U(m.vers_high, 1);
	CHECK_EQ_U(decode_vec("error_chunk"), 0);
	CHECK_EQ_U(m.err, RPCRDMA_WIRE_ERR_CHUNK);
	CHECK_EQ_U(m.hdr_len, 20);
	CHECK_EQ_U(decode_vec("error_unknown"), 0);
	CHECK_EQ_U(m.err, 7);
	CHECK_EQ_U(m.hdr_len, 20);
	CHECK_EQ_U(m.body_len, 4);
	CHECK(m.body == find_vector("error_unknown")->bytes + 20);
	CHECK(rpcrdma_wire_err_name(m.err) == NULL);
	CHECK_EQ_U(decode_vec("error_vers_foreign"), 0);
	CHECK_EQ_U(m.vers, 2);
	CHECK_EQ_U(m.vers_low, 2);
	CHECK_EQ_U(m.vers_high, 2);
}

static void test_encode_nospace_and_inval(void)
{
	uint8_t out[64];

	CHECK_EQ_U(decode_vec("msg_all_lists"), 0);
	CHECK_ERR(rpcrdma_encode(&m, out, sizeof(out)), RPCRDMA_ERR_NOSPC);
	m.proc = 9;
	CHECK_ERR(rpcrdma_encode(&m, out, sizeof(out)), RPCRDMA_ERR_INVAL);
	CHECK_ERR(rpcrdma_decode(NULL, 4, RPCRDMA_DIR_ANY, NULL, &m, NULL), RPCRDMA_ERR_INVAL);
	CHECK_ERR(rpcrdma_decode(out, 4, RPCRDMA_DIR_ANY, NULL, NULL, NULL), RPCRDMA_ERR_INVAL);
	CHECK_ERR(rpcrdma_decode(out, 4, (enum rpcrdma_dir)7, NULL, &m, NULL), RPCRDMA_ERR_INVAL);
}

/* A storage smaller than the limits is itself a limit: never written past. */
static void test_small_storage(void)
{
	const struct vec *v = find_vector("msg_all_lists");
	struct rpcrdma_read_segment reads[2];
	struct rpcrdma_write_chunk writes[2];
	struct rpcrdma_segment segs[8];
	struct rpcrdma_decode_status st;
	struct rpcrdma_msg sm = { 0 };

	sm.reads = reads;
	sm.reads_cap = 2;
	sm.writes = writes;
	sm.writes_cap = 2;
	sm.segs = segs;
	sm.segs_cap = 8;
	CHECK_ERR(rpcrdma_decode(v->bytes, v->len, v->dir, NULL, &sm, &st), RPCRDMA_ERR_PROTO);
	CHECK_EQ_U(st.reason, RPCRDMA_BAD_TOTAL_SEGS);
	sm.reads_cap = 2;
	sm.segs_cap = 3;
	sm.writes = writes;
	v = find_vector("msg_read_call");
	CHECK_EQ_I(rpcrdma_decode(v->bytes, v->len, v->dir, NULL, &sm, &st), 0);
}

static int write_corpus(const char *dir)
{
	size_t i, j;

	for (j = 0; j < 2; j++) {
		const struct vec *tab = j ? invalid_vectors : valid_vectors;
		size_t n = j ? n_invalid_vectors : n_valid_vectors;

		for (i = 0; i < n; i++) {
			char path[512];
			FILE *f;

			snprintf(path, sizeof(path), "%s/%s", dir, tab[i].name);
			f = fopen(path, "wb");
			if (!f || fwrite(tab[i].bytes, 1, tab[i].len, f) != tab[i].len) {
				perror(path);
				return 1;
			}
			fclose(f);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write-corpus"))
		return write_corpus(argv[2]);
	HARNESS_BEGIN(argc, argv);
	RUN(test_all_valid_reencode);
	RUN(test_null_call);
	RUN(test_read_call_write_chunk);
	RUN(test_write_call_read_chunk);
	RUN(test_all_lists);
	RUN(test_long_call);
	RUN(test_long_reply);
	RUN(test_read_reply_empty_chunk);
	RUN(test_reply_read_chunk);
	RUN(test_msgp);
	RUN(test_done_and_errors);
	RUN(test_encode_nospace_and_inval);
	RUN(test_small_storage);
	HARNESS_END();
}
