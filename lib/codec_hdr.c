/* SPDX-License-Identifier: BSD-2-Clause */
/* RPC-over-RDMA Version One transport header: decode (validating) and encode.
 * RFC 5666 §4 is the wire format; RFC 8166 §3.4-§4.5 the rules applied on receipt.
 * Every count and length is checked against the bytes present and the limits before
 * it is used; lengths are summed in 64 bits. docs/CODEC.md lists the choices made. */
#include <stdbool.h>
#include <stddef.h>

#include "rpcrdma/codec.h"
#include "codec_int.h"
#include "xdr_be.h"

/* The decoder's helpers are one rule each; forcing them inline lets the compiler keep
 * the cursor in registers (it never escapes), which is most of the codec's speed. */
#define INLINE static inline __attribute__((always_inline))

#define NO_OFFSET UINT32_MAX
#define READ_ENTRY_LEN 24u  /* discriminator, position, handle, length, offset */
#define SEG_LEN 16u

struct dec {
	const uint8_t *p;        /* cursor */
	const uint8_t *end;
	const uint8_t *buf;      /* start: offsets in errors are from here */
	const struct rpcrdma_limits *lim;
	uint32_t segs_left;      /* segments the message may still have, all lists */
	uint32_t wsegs_left;     /* room left in m->segs for write and reply chunks */
	uint32_t empty_off;      /* first zero-segment write/reply chunk, or NO_OFFSET */
	uint32_t reads_off;      /* where the read list starts */
	struct rpcrdma_decode_status *st;
};

static __attribute__((cold, noinline)) int fail_at(struct rpcrdma_decode_status *st,
						     uint32_t reason, size_t off)
{
	st->reason = reason;
	st->offset = off > UINT32_MAX ? UINT32_MAX : (uint32_t)off;
	if (reason == RPCRDMA_BAD_VERS) {
		st->answer = RPCRDMA_WIRE_ERR_VERS;
		return -RPCRDMA_ERR_VERSION;
	}
	st->answer = RPCRDMA_WIRE_ERR_CHUNK;
	return -RPCRDMA_ERR_PROTO;
}

INLINE size_t off_of(const struct dec *d, const uint8_t *at)
{
	return (size_t)(at - d->buf);
}

#define fail(d, reason, at) fail_at((d)->st, (reason), off_of((d), (at)))

INLINE size_t left(const struct dec *d)
{
	return (size_t)(d->end - d->p);
}

/* Truncation is reported at the first field that is not all there. */
INLINE int need(struct dec *d, size_t n)
{
	if (left(d) < n)
		return fail(d, RPCRDMA_BAD_SHORT, d->p);
	return 0;
}

INLINE uint32_t take32(struct dec *d)
{
	uint32_t v = rpcrdma__get32(d->p);

	d->p += 4;
	return v;
}

/* handle | length | offset (64), RFC 5666 §4.3 */
INLINE void get_seg(struct rpcrdma_segment *s, const uint8_t *p)
{
	s->handle = rpcrdma__get32(p);
	s->length = rpcrdma__get32(p + 4);
	s->offset = rpcrdma__get64(p + 8);
}

INLINE void take_seg(struct dec *d, struct rpcrdma_segment *s)
{
	get_seg(s, d->p);
	d->p += SEG_LEN;
}

/* A segment names [offset, offset + length) of the peer's memory; it cannot wrap. */
INLINE bool seg_wraps(uint64_t offset, uint32_t length)
{
	return offset + length < offset;
}

/* The direction an RPC message declares (msg_type, RFC 5531 §9), where the caller left
 * it open (RPCRDMA_DIR_ANY): another value leaves it open. */
INLINE uint32_t body_dir(uint32_t dir, const uint8_t *body)
{
	uint32_t t;

	if (dir != RPCRDMA_DIR_ANY)
		return dir;
	t = rpcrdma__get32(body + 4);
	if (t == RPCRDMA_RPC_CALL)
		return RPCRDMA_DIR_CALL;
	return t == RPCRDMA_RPC_REPLY ? RPCRDMA_DIR_REPLY : RPCRDMA_DIR_ANY;
}

/* XDR optional-data discriminator: only 0 and 1 exist (RFC 4506 §4.19). */
INLINE int take_discrim(struct dec *d, uint32_t *present)
{
	int rc = need(d, 4);

	if (rc)
		return rc;
	*present = take32(d);
	if (*present > 1)
		return fail(d, RPCRDMA_BAD_DISCRIM, d->p - 4);
	return 0;
}

INLINE int check_seg_wrap(struct dec *d, const struct rpcrdma_segment *s, const uint8_t *at)
{
	if (seg_wraps(s->offset, s->length))
		return fail(d, RPCRDMA_BAD_SEG_WRAP, at + 8);
	return 0;
}

/* The XDR byte count of a chunked item is a u32, so a chunk's length must fit one
 * (RFC 5666 §3.4); the sum is kept in 64 bits. */
INLINE int add_chunk_len(struct dec *d, uint64_t *sum, uint32_t len, const uint8_t *at)
{
	*sum += len;
	if (*sum > UINT32_MAX)
		return fail(d, RPCRDMA_BAD_LEN_OVERFLOW, at + 4);
	return 0;
}

INLINE int count_segs(struct dec *d, uint32_t n, const uint8_t *at)
{
	if (n > d->segs_left)
		return fail(d, RPCRDMA_BAD_TOTAL_SEGS, at);
	d->segs_left -= n;
	return 0;
}

/* Chunks follow one another in XDR position order and never overlap (RFC 8166
 * §3.4.5). A position-zero chunk holds the whole message, which the other chunks'
 * positions index into, so it bounds nothing here. */
INLINE int check_read_order(struct dec *d, uint32_t prev_pos, uint64_t prev_len,
			    uint32_t pos, const uint8_t *at)
{
	if (pos < prev_pos)
		return fail(d, RPCRDMA_BAD_POS_ORDER, at);
	if (prev_pos != 0 && (uint64_t)pos < (uint64_t)prev_pos + prev_len)
		return fail(d, RPCRDMA_BAD_POS_ORDER, at);
	return 0;
}

struct read_state {
	uint32_t nchunks;
	uint32_t chunk_segs;
	uint32_t pos;
	uint64_t len;
};

INLINE int start_read_chunk(struct dec *d, struct read_state *rs, const struct rpcrdma_msg *m,
			    uint32_t pos, const uint8_t *at)
{
	int rc;

	if (m->nreads) {
		rc = check_read_order(d, rs->pos, rs->len, pos, at);
		if (rc)
			return rc;
	}
	if (++rs->nchunks > d->lim->max_list_chunks)
		return fail(d, RPCRDMA_BAD_LIST_CHUNKS, at);
	rs->chunk_segs = 0;
	rs->len = 0;
	rs->pos = pos;
	return 0;
}

INLINE int dec_read_entry(struct dec *d, struct rpcrdma_msg *m, struct read_state *rs)
{
	const uint8_t *at = d->p;
	struct rpcrdma_read_segment *r;
	uint32_t pos;
	int rc;

	rc = need(d, READ_ENTRY_LEN - 4);
	if (rc)
		return rc;
	pos = take32(d);
	if (pos & 3u)
		return fail(d, RPCRDMA_BAD_POS_ALIGN, at);
	if (!m->nreads || pos != rs->pos) {
		rc = start_read_chunk(d, rs, m, pos, at);
		if (rc)
			return rc;
	}
	if (++rs->chunk_segs > d->lim->max_chunk_segs)
		return fail(d, RPCRDMA_BAD_CHUNK_SEGS, at);
	if (m->nreads >= m->reads_cap)
		return fail(d, RPCRDMA_BAD_TOTAL_SEGS, at);
	rc = count_segs(d, 1, at);
	if (rc)
		return rc;
	r = &m->reads[m->nreads++];
	r->position = pos;
	take_seg(d, &r->seg);
	rc = check_seg_wrap(d, &r->seg, at + 4);
	if (rc)
		return rc;
	return add_chunk_len(d, &rs->len, r->seg.length, at + 4);
}

/* The read list (RFC 5666 §4.3): entries while the discriminator is 1.
 *
 *   1 | position | handle | length | offset (64) |  1 | ... |  0
 *   <--------------- one entry, 24 bytes ------->        end of list
 */
INLINE int dec_read_list(struct dec *d, struct rpcrdma_msg *m)
{
	struct read_state rs = { 0, 0, 0, 0 };
	uint32_t present;
	int rc;

	d->reads_off = (uint32_t)off_of(d, d->p);
	for (;;) {
		rc = take_discrim(d, &present);
		if (rc || !present)
			return rc;
		rc = dec_read_entry(d, m, &rs);
		if (rc)
			return rc;
	}
}

INLINE int dec_write_chunk(struct dec *d, struct rpcrdma_msg *m, struct rpcrdma_write_chunk *c)
{
	const uint8_t *at = d->p;
	struct rpcrdma_segment *s, *e;
	uint64_t sum = 0;
	size_t room;
	uint32_t n;
	int rc;

	rc = need(d, 4);
	if (rc)
		return rc;
	n = take32(d);
	if (n > d->lim->max_chunk_segs)
		return fail(d, RPCRDMA_BAD_CHUNK_SEGS, at);
	if (n > d->wsegs_left)
		return fail(d, RPCRDMA_BAD_TOTAL_SEGS, at);
	rc = count_segs(d, n, at);
	if (rc)
		return rc;
	room = left(d) / SEG_LEN;
	if (n > room)
		return fail(d, RPCRDMA_BAD_SHORT, d->p + room * SEG_LEN);
	if (n == 0 && d->empty_off == NO_OFFSET)
		d->empty_off = (uint32_t)off_of(d, at);
	s = m->segs + (m->segs_cap - d->wsegs_left);
	d->wsegs_left -= n;
	c->segs = s;
	c->nsegs = n;
	for (e = s + n; s < e; s++) {
		const uint8_t *seg_at = d->p;

		take_seg(d, s);
		rc = check_seg_wrap(d, s, seg_at);
		if (rc)
			return rc;
		rc = add_chunk_len(d, &sum, s->length, seg_at);
		if (rc)
			return rc;
	}
	return 0;
}

/* The write list (RFC 5666 §4.3): chunks while the discriminator is 1; a chunk is a
 * counted array of segments.
 *
 *   1 | count | handle | length | offset (64) | ... |  1 | ... |  0
 *       <---------- segment, 16 bytes ------>               end of list
 */
INLINE int dec_write_list(struct dec *d, struct rpcrdma_msg *m)
{
	uint32_t present, cap = d->lim->max_list_chunks;
	int rc;

	if (cap > m->writes_cap)
		cap = m->writes_cap;
	for (;;) {
		rc = take_discrim(d, &present);
		if (rc || !present)
			return rc;
		if (m->nwrites >= cap)
			return fail(d, RPCRDMA_BAD_LIST_CHUNKS, d->p - 4);
		rc = dec_write_chunk(d, m, &m->writes[m->nwrites]);
		if (rc)
			return rc;
		m->nwrites++;
	}
}

/* The reply chunk (RFC 5666 §4.3): an optional write chunk.
 *
 *   0                                     (absent)
 *   1 | count | handle | length | offset (64) | ...
 */
INLINE int dec_reply_chunk(struct dec *d, struct rpcrdma_msg *m)
{
	uint32_t present;
	int rc;

	rc = take_discrim(d, &present);
	if (rc)
		return rc;
	m->has_reply = present;
	if (!present)
		return 0;
	return dec_write_chunk(d, m, &m->reply);
}

INLINE int dec_chunk_lists(struct dec *d, struct rpcrdma_msg *m)
{
	int rc = dec_read_list(d, m);

	if (!rc)
		rc = dec_write_list(d, m);
	if (!rc)
		rc = dec_reply_chunk(d, m);
	return rc;
}

/* RDMA_MSGP padding is to an alignment boundary (RFC 5666 §4.3): 0 (none) or a power
 * of two of at least one XDR unit. */
INLINE int dec_msgp_fields(struct dec *d, struct rpcrdma_msg *m)
{
	int rc = need(d, 8);

	if (rc)
		return rc;
	m->align = take32(d);
	m->thresh = take32(d);
	if (m->align != 0 && (m->align < 4 || (m->align & (m->align - 1))))
		return fail(d, RPCRDMA_BAD_ALIGN, d->p - 8);
	return 0;
}

INLINE uint32_t read_entry_pos_off(uint32_t reads_off, uint32_t i)
{
	return reads_off + i * READ_ENTRY_LEN + 4;
}

/* Each read chunk must land inside the XDR stream it was taken from: its offset in the
 * reduced stream (position less the bytes, with XDR roundup, of the chunks before it)
 * is at most the stream's length (RFC 8166 §3.4.5). */
static int check_read_range(struct rpcrdma_decode_status *st, uint32_t reads_off,
			    const struct rpcrdma_msg *m, uint64_t stream_len)
{
	uint64_t removed = 0, clen;
	uint32_t i = 0, next;

	while (i < m->nreads) {
		uint32_t pos = m->reads[i].position;

		clen = rpcrdma_read_chunk_len(m, i, &next);
		if (pos != 0) {
			if ((uint64_t)pos - removed > stream_len)
				return fail_at(st, RPCRDMA_BAD_POS_RANGE,
					       read_entry_pos_off(reads_off, i));
			removed += (clen + 3) & ~(uint64_t)3;
		}
		i = next;
	}
	return 0;
}

INLINE bool has_pos_zero(const struct rpcrdma_msg *m)
{
	return m->nreads && m->reads[0].position == 0;
}

/* RDMA_MSG and RDMA_MSGP carry the RPC message inline after the header, with the same
 * XID (RFC 5666 §4.1); the message itself cannot also be in a position-zero chunk. */
INLINE int check_inline_body(struct dec *d, struct rpcrdma_msg *m)
{
	if (m->body_len < RPCRDMA_MIN_RPC_LEN)
		return fail(d, RPCRDMA_BAD_NO_BODY, m->body);
	if (rpcrdma__get32(m->body) != m->xid)
		return fail(d, RPCRDMA_BAD_XID, m->body);
	m->dir = body_dir(m->dir, m->body);
	if (has_pos_zero(m))
		return fail_at(d->st, RPCRDMA_BAD_POS_ZERO, read_entry_pos_off(d->reads_off, 0));
	return 0;
}

/* RDMA_NOMSG carries the message only in chunks (RFC 5666 §4.2): a call in a
 * position-zero read chunk, a reply in the reply chunk (or, RFC 5666 only, a
 * position-zero read chunk of the reply). Nothing follows the header. */
INLINE int check_nomsg(struct dec *d, struct rpcrdma_msg *m)
{
	bool p0 = has_pos_zero(m), ok;

	if (m->body_len)
		return fail(d, RPCRDMA_BAD_TRAILING, m->body);
	m->body = NULL;
	if (m->dir == RPCRDMA_DIR_CALL)
		ok = p0;
	else
		ok = p0 || m->has_reply;
	if (!ok)
		return fail_at(d->st, RPCRDMA_BAD_NOMSG_EMPTY, m->hdr_len);
	return 0;
}

/* A zero-segment write or reply chunk means "unused" only in a reply. */
INLINE int check_empty_chunks(struct dec *d, const struct rpcrdma_msg *m)
{
	if (m->dir == RPCRDMA_DIR_CALL && d->empty_off != NO_OFFSET)
		return fail_at(d->st, RPCRDMA_BAD_EMPTY_CHUNK, d->empty_off);
	return 0;
}

INLINE int dec_chunked_msg(struct dec *d, struct rpcrdma_msg *m)
{
	uint64_t stream_len;
	int rc;

	if (m->proc == RPCRDMA_MSGP) {
		rc = dec_msgp_fields(d, m);
		if (rc)
			return rc;
	}
	rc = dec_chunk_lists(d, m);
	if (rc)
		return rc;
	m->hdr_len = (uint32_t)off_of(d, d->p);
	m->body_len = (uint32_t)left(d);
	m->body = d->p;
	if (m->proc == RPCRDMA_NOMSG) {
		rc = check_nomsg(d, m);
		stream_len = has_pos_zero(m) ? rpcrdma_read_chunk_len(m, 0, NULL) : UINT64_MAX;
	} else {
		rc = check_inline_body(d, m);
		stream_len = m->body_len;
	}
	if (!rc)
		rc = check_empty_chunks(d, m);
	if (!rc && m->nreads && stream_len != UINT64_MAX)
		rc = check_read_range(d->st, d->reads_off, m, stream_len);
	return rc;
}

INLINE int end_exactly(struct dec *d, struct rpcrdma_msg *m)
{
	m->hdr_len = (uint32_t)off_of(d, d->p);
	if (d->p != d->end)
		return fail(d, RPCRDMA_BAD_TRAILING, d->p);
	return 0;
}

/* RDMA_ERROR (RFC 5666 §4.2): ERR_VERS carries the peer's range, ERR_CHUNK nothing.
 * An unknown code is reported as such; its body, whatever it is, is left undecoded. */
INLINE int dec_error(struct dec *d, struct rpcrdma_msg *m)
{
	int rc = need(d, 4);

	if (rc)
		return rc;
	m->err = take32(d);
	if (m->err == RPCRDMA_WIRE_ERR_VERS) {
		rc = need(d, 8);
		if (rc)
			return rc;
		m->vers_low = take32(d);
		m->vers_high = take32(d);
	} else if (m->err != RPCRDMA_WIRE_ERR_CHUNK) {
		m->hdr_len = (uint32_t)off_of(d, d->p);
		m->body_len = (uint32_t)left(d);
		m->body = d->p;
		return 0;
	}
	return end_exactly(d, m);
}

/* Another version's RDMA_ERROR/ERR_VERS answers our own message: its first words are
 * fixed across versions (RFC 8166 §4.2), so it is read rather than rejected. */
INLINE bool is_foreign_err_vers(const uint8_t *buf, size_t len)
{
	return len >= 28 && rpcrdma__get32(buf + 12) == RPCRDMA_ERROR &&
	       rpcrdma__get32(buf + 16) == RPCRDMA_WIRE_ERR_VERS;
}

INLINE int dec_fixed(struct dec *d, struct rpcrdma_msg *m)
{
	size_t len = left(d);

	if (len >= 8 && rpcrdma__get32(d->p + 4) != RPCRDMA_VERSION &&
	    !is_foreign_err_vers(d->p, len))
		return fail_at(d->st, RPCRDMA_BAD_VERS, 4);
	if (len < RPCRDMA_FIXED_HDR_LEN)
		return fail_at(d->st, RPCRDMA_BAD_SHORT, len & ~(size_t)3);
	m->xid = take32(d);
	m->vers = take32(d);
	m->credits = take32(d);
	m->proc = take32(d);
	return 0;
}

INLINE void reset_msg(struct rpcrdma_msg *m, enum rpcrdma_dir dir)
{
	m->align = m->thresh = 0;
	m->err = m->vers_low = m->vers_high = 0;
	m->nreads = m->nwrites = 0;
	m->has_reply = 0;
	m->reply.segs = NULL;
	m->reply.nsegs = 0;
	m->hdr_len = m->body_len = 0;
	m->body = NULL;
	m->dir = dir;
}

static const struct rpcrdma_limits default_limits = {
	RPCRDMA_DEF_CHUNK_SEGS, RPCRDMA_DEF_LIST_CHUNKS, RPCRDMA_DEF_TOTAL_SEGS,
};

/* Not inlined into rpcrdma_decode(): its frame would be paid by the fast path too. */
__attribute__((noinline)) int rpcrdma__decode_full(const void *buf, size_t len,
						   enum rpcrdma_dir dir,
						   const struct rpcrdma_limits *lim,
						   struct rpcrdma_msg *m,
						   struct rpcrdma_decode_status *st)
{
	struct rpcrdma_decode_status dummy;
	struct dec d;
	int rc;

	if (!m || (!buf && len) || dir > RPCRDMA_DIR_REPLY)
		return -RPCRDMA_ERR_INVAL;
	d.buf = d.p = buf;
	d.end = d.p + len;
	d.lim = lim ? lim : &default_limits;
	d.segs_left = d.lim->max_total_segs;
	d.wsegs_left = m->segs_cap;
	d.empty_off = NO_OFFSET;
	d.reads_off = 0;
	d.st = st ? st : &dummy;
	d.st->reason = RPCRDMA_OK;
	d.st->answer = RPCRDMA_WIRE_ERR_NONE;
	d.st->offset = 0;
	reset_msg(m, dir);

	rc = dec_fixed(&d, m);
	if (rc)
		return rc;
	switch (m->proc) {
	case RPCRDMA_MSG:
	case RPCRDMA_NOMSG:
	case RPCRDMA_MSGP:
		return dec_chunked_msg(&d, m);
	case RPCRDMA_DONE:
		return end_exactly(&d, m);
	case RPCRDMA_ERROR:
		return dec_error(&d, m);
	default:
		return fail_at(d.st, RPCRDMA_BAD_PROC, 12);
	}
}

/* ---- the common shapes ----
 *
 * Nearly every message is an RDMA_MSG whose read list, write list and reply chunk each
 * hold at most one item of one segment (a NULL call, an NFS READ's write chunk, a WRITE's
 * read chunk, a reply chunk, a reply echoing its write chunk). Such a header is accepted
 * here without the general machinery: every rule that applies to it is checked on the
 * words themselves, and anything else (another shape, a limit below three, any doubt) goes
 * to rpcrdma__decode_full(), which alone reports errors. Both give the same result for
 * every input the fast path accepts: tests/test_codec_fast.c and fuzz/fuzz_decode.c
 * compare them. */

#define FAST_MAX_SEGS 3u

/* The limits and the caller's storage leave room for any of the common shapes. */
INLINE bool fast_room(const struct rpcrdma_limits *lim, const struct rpcrdma_msg *m)
{
	if (lim && (lim->max_chunk_segs < 1 || lim->max_list_chunks < 1 ||
		    lim->max_total_segs < FAST_MAX_SEGS))
		return false;
	return m->reads_cap >= 1 && m->writes_cap >= 1 && m->segs_cap >= 2;
}

/* One optional item at *q: the word 0 (none), or 1, a lead word (a position, or a segment
 * count) and one segment that does not wrap. *item is the lead word, or NULL. */
INLINE bool fast_item(const uint8_t **q, const uint8_t *end, const uint8_t **item)
{
	const uint8_t *p = *q;
	uint32_t d;

	if (end - p < 4)
		return false;
	d = rpcrdma__get32(p);
	if (d == 0) {
		*item = NULL;
		*q = p + 4;
		return true;
	}
	if (d != 1 || end - p < (ptrdiff_t)(8 + SEG_LEN))
		return false;
	if (seg_wraps(rpcrdma__get64(p + 16), rpcrdma__get32(p + 12)))
		return false;
	*item = p + 4;
	*q = p + 8 + SEG_LEN;
	return true;
}

/* A list of at most one item: the item, then the list's end. */
INLINE bool fast_list(const uint8_t **q, const uint8_t *end, const uint8_t **item)
{
	const uint8_t *none;

	if (!fast_item(q, end, item))
		return false;
	return !*item || (fast_item(q, end, &none) && !none);
}

INLINE void fast_chunk(struct rpcrdma_write_chunk *c, struct rpcrdma_segment *s,
		       const uint8_t *item)
{
	get_seg(s, item + 4);
	c->segs = s;
	c->nsegs = 1;
}

/* Each field of m is stored once (reset_msg()'s stores could not be merged with the
 * later ones: the segment stores may alias m for all the compiler knows). */
INLINE bool decode_fast(const uint8_t *buf, size_t len, enum rpcrdma_dir dir,
			const struct rpcrdma_limits *lim, struct rpcrdma_msg *m,
			struct rpcrdma_decode_status *st)
{
	const uint8_t *q, *end = buf + len, *rd, *wr, *rp;
	uint32_t xid, pos = 0, body_len;
	struct rpcrdma_segment *s;

	if (!fast_room(lim, m) || len < RPCRDMA_FIXED_HDR_LEN || len > UINT32_MAX ||
	    rpcrdma__get32(buf + 4) != RPCRDMA_VERSION || rpcrdma__get32(buf + 12) != RPCRDMA_MSG)
		return false;
	q = buf + RPCRDMA_FIXED_HDR_LEN;
	if (!fast_list(&q, end, &rd) || !fast_list(&q, end, &wr) || !fast_item(&q, end, &rp))
		return false;
	if ((wr && rpcrdma__get32(wr) != 1) || (rp && rpcrdma__get32(rp) != 1))
		return false;
	body_len = (uint32_t)(end - q);
	xid = rpcrdma__get32(buf);
	if (body_len < RPCRDMA_MIN_RPC_LEN || rpcrdma__get32(q) != xid)
		return false;
	if (rd) {
		/* RFC 8166 §3.4.5: inside the inline stream; no position zero in RDMA_MSG */
		pos = rpcrdma__get32(rd);
		if (pos == 0 || (pos & 3u) || pos > body_len)
			return false;
	}

	m->xid = xid;
	m->vers = RPCRDMA_VERSION;
	m->credits = rpcrdma__get32(buf + 8);
	m->proc = RPCRDMA_MSG;
	m->align = m->thresh = 0;
	m->err = m->vers_low = m->vers_high = 0;
	m->nreads = rd != NULL;
	m->nwrites = wr != NULL;
	m->has_reply = rp != NULL;
	m->reply.segs = NULL;
	m->reply.nsegs = 0;
	m->hdr_len = (uint32_t)(q - buf);
	m->body_len = body_len;
	m->body = q;
	m->dir = body_dir(dir, q);
	st->reason = RPCRDMA_OK;
	st->answer = RPCRDMA_WIRE_ERR_NONE;
	st->offset = 0;
	if (rd) {
		m->reads[0].position = pos;
		get_seg(&m->reads[0].seg, rd + 4);
	}
	s = m->segs;
	if (wr)
		fast_chunk(&m->writes[0], s++, wr);
	if (rp)
		fast_chunk(&m->reply, s, rp);
	return true;
}

bool rpcrdma__decode_fast(const uint8_t *buf, size_t len, enum rpcrdma_dir dir,
			  const struct rpcrdma_limits *lim, struct rpcrdma_msg *m,
			  struct rpcrdma_decode_status *st)
{
	return decode_fast(buf, len, dir, lim, m, st);
}

int rpcrdma_decode(const void *buf, size_t len, enum rpcrdma_dir dir,
		   const struct rpcrdma_limits *lim, struct rpcrdma_msg *m,
		   struct rpcrdma_decode_status *st)
{
	if (m && buf && st && dir <= RPCRDMA_DIR_REPLY && decode_fast(buf, len, dir, lim, m, st))
		return 0;
	return rpcrdma__decode_full(buf, len, dir, lim, m, st);
}

uint64_t rpcrdma_read_chunk_len(const struct rpcrdma_msg *m, uint32_t i, uint32_t *next)
{
	uint64_t sum = 0;
	uint32_t pos;

	if (i >= m->nreads) {
		if (next)
			*next = m->nreads;
		return 0;
	}
	pos = m->reads[i].position;
	for (; i < m->nreads && m->reads[i].position == pos; i++)
		sum += m->reads[i].seg.length;
	if (next)
		*next = i;
	return sum;
}

uint64_t rpcrdma_write_chunk_len(const struct rpcrdma_write_chunk *c)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < c->nsegs; i++)
		sum += c->segs[i].length;
	return sum;
}

void rpcrdma_limits_default(struct rpcrdma_limits *lim)
{
	*lim = default_limits;
}

void rpcrdma_msg_bind(struct rpcrdma_msg *m, struct rpcrdma_msg_storage *st)
{
	reset_msg(m, RPCRDMA_DIR_ANY);
	m->reads = st->reads;
	m->reads_cap = RPCRDMA_DEF_TOTAL_SEGS;
	m->writes = st->writes;
	m->writes_cap = RPCRDMA_DEF_LIST_CHUNKS;
	m->segs = st->segs;
	m->segs_cap = RPCRDMA_DEF_TOTAL_SEGS;
}

/* ---- encoding ---- */

static size_t write_chunk_len(const struct rpcrdma_write_chunk *c)
{
	return 4 + (size_t)c->nsegs * SEG_LEN;
}

static size_t lists_len(const struct rpcrdma_msg *m)
{
	size_t n = 4 + (size_t)m->nreads * READ_ENTRY_LEN;  /* read list and its end */
	uint32_t i;

	for (i = 0; i < m->nwrites; i++)
		n += 4 + write_chunk_len(&m->writes[i]);
	n += 4;                                               /* write list end */
	n += 4 + (m->has_reply ? write_chunk_len(&m->reply) : 0);
	return n;
}

size_t rpcrdma_encoded_len(const struct rpcrdma_msg *m)
{
	switch (m->proc) {
	case RPCRDMA_MSG:
	case RPCRDMA_NOMSG:
		return RPCRDMA_FIXED_HDR_LEN + lists_len(m);
	case RPCRDMA_MSGP:
		return RPCRDMA_FIXED_HDR_LEN + 8 + lists_len(m);
	case RPCRDMA_DONE:
		return RPCRDMA_FIXED_HDR_LEN;
	case RPCRDMA_ERROR:
		return RPCRDMA_FIXED_HDR_LEN + 4 + (m->err == RPCRDMA_WIRE_ERR_VERS ? 8 : 0);
	default:
		return 0;
	}
}

/* Writers load what they need into locals before storing: the output is bytes, which
 * may alias anything, so the compiler would otherwise reload *m after every store.
 * They check their room as they go (one pass); NULL means the buffer is too small. */
INLINE uint8_t *put_seg(uint8_t *p, const struct rpcrdma_segment *s)
{
	uint32_t h = s->handle, l = s->length;
	uint64_t o = s->offset;

	rpcrdma__put32(p, h);
	rpcrdma__put32(p + 4, l);
	rpcrdma__put64(p + 8, o);
	return p + SEG_LEN;
}

INLINE uint8_t *put_segs(uint8_t *p, const struct rpcrdma_segment *s, uint32_t n)
{
	const struct rpcrdma_segment *e = s + n;

	for (; s < e; s++)
		p = put_seg(p, s);
	return p;
}

/* discriminator (when disc), count, segments */
INLINE uint8_t *put_write_chunk(uint8_t *p, const uint8_t *end,
				const struct rpcrdma_write_chunk *c, int disc)
{
	const struct rpcrdma_segment *s = c->segs;
	uint32_t n = c->nsegs;

	if ((size_t)(end - p) < 4 * (size_t)(disc + 1) + (size_t)n * SEG_LEN)
		return NULL;
	if (disc) {
		rpcrdma__put32(p, 1);
		p += 4;
	}
	rpcrdma__put32(p, n);
	return put_segs(p + 4, s, n);
}

/* The read list (RFC 5666 §4.3): entries while the discriminator is 1.
 *
 *   1 | position | handle | length | offset (64) |  1 | ... |  0
 *   <--------------- one entry, 24 bytes ------->        end of list
 */
INLINE uint8_t *put_read_list(uint8_t *p, const uint8_t *end, const struct rpcrdma_msg *m)
{
	const struct rpcrdma_read_segment *r = m->reads, *e = r + m->nreads;

	if ((size_t)(end - p) < 4 + (size_t)m->nreads * READ_ENTRY_LEN)
		return NULL;
	for (; r < e; r++) {
		uint32_t pos = r->position;

		rpcrdma__put32(p, 1);
		rpcrdma__put32(p + 4, pos);
		p = put_seg(p + 8, &r->seg);
	}
	rpcrdma__put32(p, 0);
	return p + 4;
}

/* The write list (RFC 5666 §4.3): chunks while the discriminator is 1; a chunk is a
 * counted array of segments.
 *
 *   1 | count | handle | length | offset (64) | ... |  1 | ... |  0
 *       <---------- segment, 16 bytes ------>               end of list
 */
INLINE uint8_t *put_write_list(uint8_t *p, const uint8_t *end, const struct rpcrdma_msg *m)
{
	const struct rpcrdma_write_chunk *c = m->writes, *e = c + m->nwrites;

	for (; c < e && p; c++)
		p = put_write_chunk(p, end, c, 1);
	if (!p || end - p < 4)
		return NULL;
	rpcrdma__put32(p, 0);
	return p + 4;
}

/* The reply chunk (RFC 5666 §4.3): an optional write chunk.
 *
 *   0                                     (absent)
 *   1 | count | handle | length | offset (64) | ...
 */
INLINE uint8_t *put_reply_chunk(uint8_t *p, const uint8_t *end, const struct rpcrdma_msg *m)
{
	uint32_t has_reply = m->has_reply;

	if (!has_reply) {
		if (end - p < 4)
			return NULL;
		rpcrdma__put32(p, 0);
		return p + 4;
	}
	return put_write_chunk(p, end, &m->reply, 1);
}

/* The three lists in wire order, as dec_chunk_lists reads them. */
INLINE uint8_t *put_lists(uint8_t *p, const uint8_t *end, const struct rpcrdma_msg *m)
{
	p = put_read_list(p, end, m);
	if (p)
		p = put_write_list(p, end, m);
	return p ? put_reply_chunk(p, end, m) : NULL;
}

INLINE uint8_t *put_error(uint8_t *p, const uint8_t *end, const struct rpcrdma_msg *m)
{
	uint32_t err = m->err, lo = m->vers_low, hi = m->vers_high;
	size_t n = err == RPCRDMA_WIRE_ERR_VERS ? 12 : 4;

	if ((size_t)(end - p) < n)
		return NULL;
	rpcrdma__put32(p, err);
	if (n == 12) {
		rpcrdma__put32(p + 4, lo);
		rpcrdma__put32(p + 8, hi);
	}
	return p + n;
}

int rpcrdma_encode(const struct rpcrdma_msg *m, void *buf, size_t cap)
{
	uint8_t *p = buf, *end = p + cap;
	uint32_t xid = m->xid, vers = m->vers, credits = m->credits, proc = m->proc;

	if (proc > RPCRDMA_ERROR)
		return -RPCRDMA_ERR_INVAL;
	if (cap < RPCRDMA_FIXED_HDR_LEN)
		return -RPCRDMA_ERR_NOSPC;
	rpcrdma__put32(p, xid);
	rpcrdma__put32(p + 4, vers);
	rpcrdma__put32(p + 8, credits);
	rpcrdma__put32(p + 12, proc);
	p += RPCRDMA_FIXED_HDR_LEN;
	switch (proc) {
	case RPCRDMA_MSGP:
		if (end - p < 8)
			return -RPCRDMA_ERR_NOSPC;
		rpcrdma__put32(p, m->align);
		rpcrdma__put32(p + 4, m->thresh);
		p += 8;
		/* fall through */
	case RPCRDMA_MSG:
	case RPCRDMA_NOMSG:
		p = put_lists(p, end, m);
		break;
	case RPCRDMA_ERROR:
		p = put_error(p, end, m);
		break;
	default:
		break;
	}
	if (!p)
		return -RPCRDMA_ERR_NOSPC;
	return (int)(p - (uint8_t *)buf);
}
