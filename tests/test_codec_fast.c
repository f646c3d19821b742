/* SPDX-License-Identifier: BSD-2-Clause */
/* The decoder's fast path for the common shapes (lib/codec_hdr.c) against the general
 * decoder: it takes every common shape, declines every other one, and wherever it
 * accepts, rpcrdma_decode() gives exactly what rpcrdma__decode_full() gives — also for
 * every single-byte corruption, truncation and extension of the common shapes, under
 * small limits and small caller storage. */
#include <stdlib.h>

#include "decode_same.h"
#include "harness.h"
#include "vectors.h"

#define XID 0x0badcafeu

struct shape {
	int rd, wr, rp;     /* a read segment, a write chunk, a reply chunk */
	uint32_t pos;       /* the read chunk's position */
	uint32_t msg_type;  /* of the RPC body */
	uint32_t body_len;
};

struct wire {
	uint8_t b[256];
	size_t len;
};

static void word(struct wire *w, uint32_t v)
{
	uint8_t *p = w->b + w->len;

	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	w->len += 4;
}

static void seg(struct wire *w, uint32_t handle)
{
	word(w, handle);
	word(w, 4096);
	word(w, 0x00007f00u);
	word(w, 0x12345000u);
}

/* Shape number bits (0-7) of the eight: which of the three items it has. */
static void pick(struct shape *s, unsigned bits)
{
	s->rd = bits & 1;
	s->wr = !!(bits & 2);
	s->rp = !!(bits & 4);
}

/* An RDMA_MSG of the given shape, built word by word (RFC 5666 §4.3). */
static void build(struct wire *w, const struct shape *s)
{
	uint32_t i;

	w->len = 0;
	word(w, XID);
	word(w, 1);
	word(w, 32);
	word(w, RPCRDMA_MSG);
	if (s->rd) {
		word(w, 1);
		word(w, s->pos);
		seg(w, 0x11);
	}
	word(w, 0);
	if (s->wr) {
		word(w, 1);
		word(w, 1);
		seg(w, 0x22);
	}
	word(w, 0);
	word(w, s->rp ? 1 : 0);
	if (s->rp) {
		word(w, 1);
		seg(w, 0x33);
	}
	word(w, XID);
	word(w, s->msg_type);
	for (i = 8; i < s->body_len; i += 4)
		word(w, i);
}

static bool check_same_bytes(const uint8_t *b, size_t len, enum rpcrdma_dir dir,
			     const struct rpcrdma_limits *lim, uint32_t cap)
{
	bool fast = false;
	const char *why = decode_same(b, len, dir, lim, cap, &fast);

	if (why) {
		fprintf(stderr, "decoders differ in %s (len %zu, dir %d, cap %u)\n", why, len,
			(int)dir, cap);
		CHECK(why == NULL);
	}
	return fast;
}

static bool check_same(const struct wire *w, enum rpcrdma_dir dir,
		       const struct rpcrdma_limits *lim, uint32_t cap)
{
	return check_same_bytes(w->b, w->len, dir, lim, cap);
}

static void test_common_shapes_take_fast_path(void)
{
	static const uint32_t types[] = { RPCRDMA_RPC_CALL, RPCRDMA_RPC_REPLY, 7 };
	struct shape s = { 0, 0, 0, 16, 0, 64 };
	struct rpcrdma_decode_status ds;
	struct decode_run r;
	enum rpcrdma_dir dir;
	unsigned bits, t;
	struct wire w;

	for (bits = 0; bits < 8; bits++) {
		pick(&s, bits);
		for (t = 0; t < 3; t++) {
			s.msg_type = types[t];
			build(&w, &s);
			for (dir = RPCRDMA_DIR_ANY; dir <= RPCRDMA_DIR_REPLY; dir++)
				CHECK(check_same(&w, dir, NULL, 64));
		}
	}
	/* the fields, by hand, for the shape with all three */
	s.rd = s.wr = s.rp = 1;
	s.msg_type = RPCRDMA_RPC_REPLY;
	build(&w, &s);
	decode_run_bind(&r, 64);
	CHECK(rpcrdma__decode_fast(w.b, w.len, RPCRDMA_DIR_ANY, NULL, &r.m, &ds));
	CHECK_EQ_U(r.m.xid, XID);
	CHECK_EQ_U(r.m.credits, 32);
	CHECK_EQ_U(r.m.nreads, 1);
	CHECK_EQ_U(r.m.reads[0].position, 16);
	CHECK_EQ_U(r.m.reads[0].seg.handle, 0x11);
	CHECK_EQ_U(r.m.reads[0].seg.offset, 0x00007f0012345000ull);
	CHECK_EQ_U(r.m.nwrites, 1);
	CHECK(r.m.writes[0].segs == &r.m.segs[0]);
	CHECK_EQ_U(r.m.segs[0].handle, 0x22);
	CHECK_EQ_U(r.m.has_reply, 1);
	CHECK(r.m.reply.segs == &r.m.segs[1]);
	CHECK_EQ_U(r.m.segs[1].length, 4096);
	CHECK_EQ_U(r.m.hdr_len, 16 + 28 + 28 + 24);
	CHECK_EQ_U(r.m.body_len, 64);
	CHECK_EQ_U(r.m.dir, RPCRDMA_DIR_REPLY);
	CHECK_EQ_U(ds.reason, RPCRDMA_OK);
}

/* Each of these is a near miss of a common shape; the general decoder decides. */
static void test_other_shapes_declined(void)
{
	struct shape s = { 1, 1, 1, 16, 0, 64 };
	struct wire w;

	build(&w, &s);
	w.b[15] = RPCRDMA_NOMSG;
	CHECK(!check_same(&w, RPCRDMA_DIR_ANY, NULL, 64));
	w.b[15] = RPCRDMA_MSGP;
	CHECK(!check_same(&w, RPCRDMA_DIR_ANY, NULL, 64));
	s.pos = 0;                            /* position zero in RDMA_MSG: ERR_CHUNK */
	build(&w, &s);
	CHECK(!check_same(&w, RPCRDMA_DIR_ANY, NULL, 64));
	s.pos = 18;                           /* not XDR-aligned */
	build(&w, &s);
	CHECK(!check_same(&w, RPCRDMA_DIR_ANY, NULL, 64));
	s.pos = 68;                           /* past the inline stream */
	build(&w, &s);
	CHECK(!check_same(&w, RPCRDMA_DIR_ANY, NULL, 64));
	s.pos = 64;                           /* at its end: accepted */
	build(&w, &s);
	CHECK(check_same(&w, RPCRDMA_DIR_ANY, NULL, 64));
	s.body_len = 8;                       /* the smallest RPC message: accepted */
	s.pos = 4;
	build(&w, &s);
	CHECK(check_same(&w, RPCRDMA_DIR_ANY, NULL, 64));
	w.len -= 4;                           /* no room for one */
	CHECK(!check_same(&w, RPCRDMA_DIR_ANY, NULL, 64));
	w.b[w.len - 1] ^= 1;                  /* body XID other than the header's */
	w.len += 4;
	CHECK(!check_same(&w, RPCRDMA_DIR_ANY, NULL, 64));
}

/* Fewer than three segments allowed, or less storage than the shapes need: declined,
 * and the general decoder gives its own answer. */
static void test_small_limits_declined(void)
{
	static const struct rpcrdma_limits small[] = {
		{ 1, 1, 2 }, { 0, 8, 64 }, { 16, 0, 64 }, { 16, 8, 0 }, { 1, 1, 3 },
	};
	struct shape s = { 1, 1, 1, 16, 0, 64 };
	struct wire w;
	size_t i;

	build(&w, &s);
	for (i = 0; i < sizeof(small) / sizeof(small[0]); i++)
		CHECK_EQ_I(check_same(&w, RPCRDMA_DIR_CALL, &small[i], 64), i == 4);
	CHECK(!check_same(&w, RPCRDMA_DIR_CALL, NULL, 1));
	CHECK(check_same(&w, RPCRDMA_DIR_CALL, NULL, 2));
}

static const uint8_t byte_values[] = { 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x10,
				       0x40, 0x7f, 0x80, 0xfe, 0xff };

/* Every byte of every common shape's header and first body words set to each value
 * above, under the defaults and two small limit sets: both decoders agree on all of
 * them, and both outcomes occur. */
static void test_corruptions_agree(void)
{
	static const struct rpcrdma_limits lims[] = { { 1, 1, 3 }, { 2, 1, 4 } };
	struct shape s = { 0, 0, 0, 16, 0, 64 };
	unsigned bits, fast_n = 0, slow_n = 0;
	size_t at, v, l;
	struct wire w;

	for (bits = 0; bits < 8; bits++) {
		pick(&s, bits);
		build(&w, &s);
		for (at = 0; at < w.len - 56; at++) {
			uint8_t orig = w.b[at];

			for (v = 0; v < sizeof(byte_values); v++) {
				w.b[at] = byte_values[v];
				if (check_same(&w, RPCRDMA_DIR_ANY, NULL, 64))
					fast_n++;
				else
					slow_n++;
				for (l = 0; l < 2; l++)
					(void)check_same(&w, RPCRDMA_DIR_CALL, &lims[l], 64);
				(void)check_same(&w, RPCRDMA_DIR_REPLY, NULL, 2);
			}
			w.b[at] = orig;
		}
	}
	CHECK(fast_n > 1000);
	CHECK(slow_n > 1000);
}

/* Every length from nothing to the whole message and a few words past it. */
static void test_truncations_agree(void)
{
	struct shape s = { 1, 1, 1, 16, 0, 16 };
	unsigned bits;
	size_t full, n;
	struct wire w;

	for (bits = 0; bits < 8; bits++) {
		pick(&s, bits);
		build(&w, &s);
		full = w.len;
		memset(w.b + full, 0, sizeof(w.b) - full);
		for (n = 0; n <= full + 12; n++) {
			w.len = n;
			(void)check_same(&w, RPCRDMA_DIR_ANY, NULL, 64);
			(void)check_same(&w, RPCRDMA_DIR_CALL, NULL, 64);
		}
	}
}

/* The hand-written vectors from the RFC, valid and invalid, through both. */
static void test_vectors_agree(void)
{
	unsigned fast_n = 0;
	size_t i;

	for (i = 0; i < n_valid_vectors + n_invalid_vectors; i++) {
		const struct vec *v = i < n_valid_vectors ? &valid_vectors[i]
							  : &invalid_vectors[i - n_valid_vectors];

		fast_n += check_same_bytes(v->bytes, v->len, v->dir, v->lim, 64);
	}
	CHECK(fast_n > 0);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_common_shapes_take_fast_path);
	RUN(test_other_shapes_declined);
	RUN(test_small_limits_declined);
	RUN(test_corruptions_agree);
	RUN(test_truncations_agree);
	RUN(test_vectors_agree);
	HARNESS_END();
}
