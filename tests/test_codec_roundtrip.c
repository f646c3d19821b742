/* SPDX-License-Identifier: BSD-2-Clause */
/* Property tests over seeded random messages:
 *  - every generated valid header decodes to the same fields and re-encodes to the same
 *    bytes (decode . encode = identity);
 *  - random corruptions of valid messages never crash, never read past the buffer (the
 *    sanitizer build checks), and whatever decodes re-encodes to the header it read. */
#include <stdlib.h>

#include "harness.h"
#include "rpcrdma/codec.h"

#define ITERATIONS 20000
#define MUTATIONS 40000

static uint64_t rng_state;

static uint32_t rnd(void)
{
	/* xorshift64*: deterministic, seedable, no libc dependency on rand() quality */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

static uint32_t below(uint32_t n)
{
	return n ? rnd() % n : 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void rand_seg(struct rpcrdma_segment *s, uint32_t maxlen)
{
	s->handle = rnd();
	s->length = below(maxlen) + 1;
	s->offset = ((uint64_t)rnd() << 20) | (rnd() & 0xff000u);
}

struct gen {
	struct rpcrdma_msg m;
	struct rpcrdma_read_segment reads[12];
	struct rpcrdma_write_chunk writes[4];
	struct rpcrdma_segment segs[24];
	uint8_t buf[4096];
	size_t len;
};

/* Read chunks at increasing, non-overlapping positions; returns the reduced offset of
 * the last one, which the inline stream must reach. */
static uint32_t gen_reads(struct gen *g, int pos_zero)
{
	uint32_t nchunks = below(4), c, k, pos = 40, removed = 0, need = 0;

	g->m.nreads = 0;
	if (pos_zero) {
		uint32_t nseg = below(2) + 1;

		for (k = 0; k < nseg; k++) {
			g->reads[g->m.nreads].position = 0;
			rand_seg(&g->reads[g->m.nreads].seg, 4000);
			g->reads[g->m.nreads].seg.length += 400;
			g->m.nreads++;
		}
		pos = 40;
	}
	for (c = 0; c < nchunks; c++) {
		uint32_t nseg = below(3) + 1, clen = 0;

		pos += 4 * below(8);
		for (k = 0; k < nseg; k++) {
			struct rpcrdma_read_segment *r = &g->reads[g->m.nreads++];

			r->position = pos;
			rand_seg(&r->seg, 300);
			clen += r->seg.length;
		}
		need = pos - removed;
		removed += (clen + 3) & ~3u;
		pos += (clen + 3) & ~3u;
	}
	return need;
}

static void gen_write_chunk(struct gen *g, struct rpcrdma_write_chunk *c, uint32_t *used,
			    int allow_empty)
{
	uint32_t n = below(3) + (allow_empty ? 0 : 1), k;

	c->segs = &g->segs[*used];
	c->nsegs = n;
	for (k = 0; k < n; k++)
		rand_seg(&c->segs[k], 1u << 20);
	*used += n;
}

static void gen_body(struct gen *g, size_t hdr, uint32_t min_len, int is_call)
{
	uint32_t body = min_len < 8 ? 8 : min_len, k;

	body = (body + 3) & ~3u;
	body += 4 * below(16);
	put32(g->buf + hdr, g->m.xid);
	put32(g->buf + hdr + 4, is_call ? 0 : 1);
	for (k = 8; k < body; k++)
		g->buf[hdr + k] = (uint8_t)rnd();
	g->len = hdr + body;
}

static enum rpcrdma_dir gen_msg(struct gen *g)
{
	uint32_t used = 0, k, need = 0;
	int is_call = (int)below(2), n;
	enum rpcrdma_dir dir = is_call ? RPCRDMA_DIR_CALL : RPCRDMA_DIR_REPLY;

	memset(&g->m, 0, sizeof(g->m));
	g->m.reads = g->reads;
	g->m.writes = g->writes;
	g->m.xid = rnd();
	g->m.vers = 1;
	g->m.credits = rnd();
	g->m.proc = below(5);
	if (g->m.proc == RPCRDMA_DONE) {
		g->len = (size_t)rpcrdma_encode(&g->m, g->buf, sizeof(g->buf));
		return dir;
	}
	if (g->m.proc == RPCRDMA_ERROR) {
		g->m.err = below(2) + 1;
		g->m.vers_low = 1;
		g->m.vers_high = below(3) + 1;
		g->len = (size_t)rpcrdma_encode(&g->m, g->buf, sizeof(g->buf));
		return dir;
	}
	if (g->m.proc == RPCRDMA_MSGP) {
		g->m.align = below(2) ? 0 : 4u << below(12);
		g->m.thresh = rnd();
	}
	need = gen_reads(g, g->m.proc == RPCRDMA_NOMSG && (is_call || below(2)));
	g->m.nwrites = below(4);
	for (k = 0; k < g->m.nwrites; k++)
		gen_write_chunk(g, &g->writes[k], &used, !is_call);
	g->m.has_reply = g->m.proc == RPCRDMA_NOMSG && !is_call ? 1 : below(2);
	if (g->m.has_reply)
		gen_write_chunk(g, &g->m.reply, &used, !is_call && g->m.proc != RPCRDMA_NOMSG);
	if (g->m.proc == RPCRDMA_NOMSG && !is_call && g->m.nreads && g->reads[0].position) {
		/* A long reply's read chunks index the reply in the reply chunk: keep it simple. */
		g->m.nreads = 0;
	}
	n = rpcrdma_encode(&g->m, g->buf, sizeof(g->buf));
	g->len = n > 0 ? (size_t)n : 0;
	if (g->m.proc != RPCRDMA_NOMSG)
		gen_body(g, g->len, need, is_call);
	return dir;
}

static void check_same_header(const struct rpcrdma_msg *a, const struct rpcrdma_msg *b)
{
	uint32_t i, k;

	CHECK_EQ_U(a->xid, b->xid);
	CHECK_EQ_U(a->credits, b->credits);
	CHECK_EQ_U(a->proc, b->proc);
	CHECK_EQ_U(a->align, b->align);
	CHECK_EQ_U(a->thresh, b->thresh);
	CHECK_EQ_U(a->err, b->err);
	CHECK_EQ_U(a->nreads, b->nreads);
	CHECK_EQ_U(a->nwrites, b->nwrites);
	CHECK_EQ_U(a->has_reply, b->has_reply);
	for (i = 0; i < a->nreads && i < b->nreads; i++) {
		CHECK_EQ_U(a->reads[i].position, b->reads[i].position);
		CHECK_EQ_U(a->reads[i].seg.offset, b->reads[i].seg.offset);
	}
	for (i = 0; i < a->nwrites && i < b->nwrites; i++) {
		CHECK_EQ_U(a->writes[i].nsegs, b->writes[i].nsegs);
		for (k = 0; k < a->writes[i].nsegs && k < b->writes[i].nsegs; k++)
			CHECK_EQ_U(a->writes[i].segs[k].length, b->writes[i].segs[k].length);
	}
}

static void test_roundtrip(void)
{
	static struct gen g;
	static struct rpcrdma_msg_storage st;
	struct rpcrdma_decode_status ds;
	struct rpcrdma_msg d;
	uint8_t again[4096];
	int i, fails = 0;

	rng_state = 0x5eed5eed12345678ull;
	for (i = 0; i < ITERATIONS && fails < 5; i++) {
		enum rpcrdma_dir dir = gen_msg(&g);
		int rc, n;

		rpcrdma_msg_bind(&d, &st);
		rc = rpcrdma_decode(g.buf, g.len, dir, NULL, &d, &ds);
		if (rc) {
			fprintf(stderr, "iteration %d: proc %u: %s at %u\n", i, g.m.proc,
				rpcrdma_reason_str(ds.reason), ds.offset);
			fails++;
		}
		CHECK_EQ_U(rc, 0);
		check_same_header(&g.m, &d);
		n = rpcrdma_encode(&d, again, sizeof(again));
		CHECK(n > 0 && (size_t)n == d.hdr_len && memcmp(again, g.buf, (size_t)n) == 0);
	}
}

static void test_mutations(void)
{
	static struct gen g;
	static struct rpcrdma_msg_storage st;
	struct rpcrdma_decode_status ds;
	struct rpcrdma_msg d;
	uint8_t again[4096];
	int i, valid = 0, invalid = 0;

	rng_state = 0xfeedface0badf00dull;
	for (i = 0; i < MUTATIONS; i++) {
		enum rpcrdma_dir dir = gen_msg(&g);
		uint32_t k, flips = below(4) + 1;
		size_t len = g.len;
		uint8_t *copy;
		int rc;

		for (k = 0; k < flips && len; k++)
			g.buf[below((uint32_t)len)] ^= (uint8_t)(1u << below(8));
		if (below(4) == 0)
			len = below((uint32_t)len + 1);
		/* an exact-size heap copy so the sanitizer sees any read past the end */
		copy = malloc(len ? len : 1);
		memcpy(copy, g.buf, len);
		rpcrdma_msg_bind(&d, &st);
		rc = rpcrdma_decode(copy, len, below(2) ? dir : RPCRDMA_DIR_ANY, NULL, &d, &ds);
		if (rc == 0) {
			int n = rpcrdma_encode(&d, again, sizeof(again));

			valid++;
			CHECK(n > 0 && (size_t)n == d.hdr_len && memcmp(again, copy, (size_t)n) == 0);
		} else {
			invalid++;
			CHECK(ds.reason != RPCRDMA_OK && ds.reason < RPCRDMA_REASON_COUNT);
			CHECK(ds.offset <= len);
			CHECK(ds.answer == RPCRDMA_WIRE_ERR_VERS || ds.answer == RPCRDMA_WIRE_ERR_CHUNK);
		}
		free(copy);
	}
	printf("mutations: %d decoded, %d rejected\n", valid, invalid);
	CHECK(valid > 0 && invalid > 0);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_roundtrip);
	RUN(test_mutations);
	HARNESS_END();
}
