/* SPDX-License-Identifier: BSD-2-Clause */
/* rpcrdma_decode() takes the common shapes by a fast path (lib/codec_hdr.c) and gives
 * everything else to the general decoder. decode_same() runs the bytes through
 * rpcrdma_decode(), the general decoder alone and the fast path alone, and names the
 * first thing in which they differ. Used by tests/test_codec_fast.c and by the fuzz
 * target fuzz/fuzz_decode.c. */
#ifndef RPCRDMA_TEST_DECODE_SAME_H
#define RPCRDMA_TEST_DECODE_SAME_H

#include <stdbool.h>
#include <string.h>

#include "codec_int.h"
#include "rpcrdma/codec.h"

struct decode_run {
	struct rpcrdma_msg_storage st;
	struct rpcrdma_msg m;
	struct rpcrdma_decode_status ds;
	int rc;
};

/* Binds r's storage with at most cap entries in each array, and leaves in every other
 * field what an earlier message might have: a decoder must set each one. */
static void decode_run_bind(struct decode_run *r, uint32_t cap)
{
	struct rpcrdma_msg *m = &r->m;

	rpcrdma_msg_bind(m, &r->st);
	m->xid = m->vers = m->credits = m->proc = m->align = m->thresh = 0xdead;
	m->err = m->vers_low = m->vers_high = m->hdr_len = m->body_len = m->dir = 0xdead;
	m->nreads = m->nwrites = m->has_reply = 3;
	m->reply.segs = m->segs + 3;
	m->reply.nsegs = 3;
	m->body = (const uint8_t *)m;
	if (cap < r->m.reads_cap)
		r->m.reads_cap = cap;
	if (cap < r->m.writes_cap)
		r->m.writes_cap = cap;
	if (cap < r->m.segs_cap)
		r->m.segs_cap = cap;
}

static bool same_segs(const struct rpcrdma_segment *a, const struct rpcrdma_segment *b,
		      uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (a[i].handle != b[i].handle || a[i].length != b[i].length ||
		    a[i].offset != b[i].offset)
			return false;
	return true;
}

/* Where a chunk's segments lie in its own run's storage (the runs differ in address). */
static long seg_index(const struct decode_run *r, const struct rpcrdma_segment *s)
{
	return s ? (long)(s - r->m.segs) : -1;
}

static bool same_chunk(const struct decode_run *a, const struct rpcrdma_write_chunk *ca,
		       const struct decode_run *b, const struct rpcrdma_write_chunk *cb)
{
	return ca->nsegs == cb->nsegs && seg_index(a, ca->segs) == seg_index(b, cb->segs) &&
	       (!ca->nsegs || same_segs(ca->segs, cb->segs, ca->nsegs));
}

static const char *same_msg(const struct decode_run *a, const struct decode_run *b)
{
	const struct rpcrdma_msg *x = &a->m, *y = &b->m;
	uint32_t i;

	if (x->xid != y->xid || x->vers != y->vers || x->credits != y->credits ||
	    x->proc != y->proc)
		return "fixed header";
	if (x->align != y->align || x->thresh != y->thresh || x->err != y->err ||
	    x->vers_low != y->vers_low || x->vers_high != y->vers_high)
		return "MSGP or error fields";
	if (x->nreads != y->nreads)
		return "nreads";
	for (i = 0; i < x->nreads; i++)
		if (x->reads[i].position != y->reads[i].position ||
		    !same_segs(&x->reads[i].seg, &y->reads[i].seg, 1))
			return "read list";
	if (x->nwrites != y->nwrites)
		return "nwrites";
	for (i = 0; i < x->nwrites; i++)
		if (!same_chunk(a, &x->writes[i], b, &y->writes[i]))
			return "write list";
	if (x->has_reply != y->has_reply || !same_chunk(a, &x->reply, b, &y->reply))
		return "reply chunk";
	if (x->hdr_len != y->hdr_len || x->body_len != y->body_len || x->body != y->body)
		return "header and body lengths";
	if (x->dir != y->dir)
		return "direction";
	return NULL;
}

static const char *same_result(const struct decode_run *a, const struct decode_run *b)
{
	if (a->rc != b->rc)
		return "return code";
	if (a->ds.reason != b->ds.reason || a->ds.answer != b->ds.answer ||
	    a->ds.offset != b->ds.offset)
		return "decode status";
	return a->rc ? NULL : same_msg(a, b);
}

/* NULL when rpcrdma_decode(), rpcrdma__decode_full() and (where it accepts) the fast path
 * agree on buf; *fast says whether the fast path accepted it. */
static const char *decode_same(const uint8_t *buf, size_t len, enum rpcrdma_dir dir,
			       const struct rpcrdma_limits *lim, uint32_t cap, bool *fast)
{
	static struct decode_run full, api, quick;
	const char *why;

	decode_run_bind(&full, cap);
	decode_run_bind(&api, cap);
	decode_run_bind(&quick, cap);
	full.rc = rpcrdma__decode_full(buf, len, dir, lim, &full.m, &full.ds);
	api.rc = rpcrdma_decode(buf, len, dir, lim, &api.m, &api.ds);
	why = same_result(&full, &api);
	if (why)
		return why;
	*fast = buf && rpcrdma__decode_fast(buf, len, dir, lim, &quick.m, &quick.ds);
	if (!*fast)
		return NULL;
	quick.rc = 0;
	return same_result(&full, &quick);
}

#endif
