/* SPDX-License-Identifier: BSD-2-Clause */
/* Chunk arithmetic shared by both sides of the engine: putting read chunks back into an
 * XDR stream, building a stream with items inline, filling the segments of a write or
 * reply chunk, and header sizes. */
#include <string.h>

#include "engine_int.h"

static void add_piece(struct eng_asm *as, uint64_t src, uint64_t dst, uint64_t len)
{
	as->pieces[as->npieces].src = src;
	as->pieces[as->npieces].dst = dst;
	as->pieces[as->npieces].len = len;
	as->npieces++;
}

/* A chunk of no bytes (every segment empty) needs no RDMA Read: it is left out. */
static void add_chunk(struct eng_asm *as, uint32_t first, uint32_t nsegs, uint64_t dst,
		      uint64_t len)
{
	as->chunks[as->nchunks].first = first;
	as->chunks[as->nchunks].nsegs = nsegs;
	as->chunks[as->nchunks].dst = dst;
	as->chunks[as->nchunks].len = (uint32_t)len;
	as->nchunks++;
}

/* m must come from rpcrdma_decode() with limits no larger than the defaults.
 * Returns -RPCRDMA_ERR_PROTO for chunks outside the stream, -RPCRDMA_ERR_RANGE past max_total.
 * Lay out the whole XDR stream from its inline part and the read chunks (RFC 5666 §3.4,
 * position = offset in the stream with every chunk in place). A chunk whose length is
 * not a multiple of 4 is followed by zero XDR roundup, which requesters leave out of
 * both the chunk and the inline stream (RFC 8166 §3.4.5); a chunk that carries its
 * roundup needs none. A position-zero chunk is the inline stream itself; an empty one
 * (-RPCRDMA_ERR_PROTO) would be a message of no bytes. */
int rpcrdma__asm_plan(struct eng_asm *as, const struct rpcrdma_msg *m, uint64_t inline_len,
		      uint64_t max_total)
{
	uint64_t removed = 0, src = 0, dst = 0, clen;
	uint32_t i = 0, next;

	memset(as, 0, sizeof(*as));
	if (m->nreads && m->reads[0].position == 0) {
		clen = rpcrdma_read_chunk_len(m, 0, &next);
		if (!clen)
			return -RPCRDMA_ERR_PROTO;   /* a message of no bytes at all */
		as->pos_zero = true;
		as->p0_first = 0;
		as->p0_nsegs = next;
		inline_len = clen;
		i = next;
	}
	while (i < m->nreads) {
		uint32_t pos = m->reads[i].position;
		uint64_t off;

		/* The codec checked alignment and order, and the range where it knows the
		 * stream; it cannot for an RDMA_NOMSG whose stream is not in the message (a
		 * reply chunk, possibly empty, next to read chunks): the range is checked here,
		 * against the stream actually assembled (fuzz/corpus/engine keeps that case). */
		clen = rpcrdma_read_chunk_len(m, i, &next);
		if (pos == 0 || as->nchunks == ENG_MAX_ASM)
			return -RPCRDMA_ERR_PROTO;
		off = (uint64_t)pos - removed;
		if ((uint64_t)pos < removed || off < src || off > inline_len)
			return -RPCRDMA_ERR_PROTO;
		if (off > src) {
			add_piece(as, src, dst, off - src);
			dst += off - src;
		}
		if (clen)
			add_chunk(as, i, next - i, dst, clen);
		dst += (clen + 3) & ~(uint64_t)3;
		removed += (clen + 3) & ~(uint64_t)3;
		src = off;
		i = next;
	}
	if (inline_len > src) {
		add_piece(as, src, dst, inline_len - src);
		dst += inline_len - src;
	}
	as->total = dst;
	if (dst > max_total)
		return -RPCRDMA_ERR_RANGE;
	return 0;
}

void rpcrdma__asm_copy_inline(const struct eng_asm *as, uint8_t *dst, const uint8_t *src)
{
	uint32_t i;

	for (i = 0; i < as->npieces; i++)
		memcpy(dst + as->pieces[i].dst, src + as->pieces[i].src, as->pieces[i].len);
}

/* The local pieces a position-zero chunk is read into: its bytes are the inline stream,
 * scattered around the other chunks. */
uint32_t rpcrdma__asm_p0_sges(const struct eng_asm *as, struct rpcrdma_mr *mr, uint8_t *dst,
			      struct rpcrdma_sge *sge)
{
	uint32_t i;

	for (i = 0; i < as->npieces; i++) {
		sge[i].mr = mr;
		sge[i].addr = dst + as->pieces[i].dst;
		sge[i].len = (uint32_t)as->pieces[i].len;
	}
	return as->npieces;
}

uint32_t rpcrdma__asm_nreads(const struct eng_asm *as)
{
	return as->nchunks + (as->pos_zero ? 1u : 0u);
}

/* RDMA Read k of an assembly (k < rpcrdma__asm_nreads): the positioned chunks in order,
 * then the position-zero one. Fills the local pieces (mr, dst: the assembly buffer) and
 * the remote segments from the read list; returns the number of segments. */
uint32_t rpcrdma__asm_read(const struct eng_asm *as, uint32_t k,
			   const struct rpcrdma_read_segment *reads, struct rpcrdma_mr *mr,
			   uint8_t *dst, struct rpcrdma_sge *sge, uint32_t *nsge,
			   struct rpcrdma_segment *segs)
{
	uint32_t first, nsegs, j, n;

	if (k == as->nchunks) {
		first = as->p0_first;
		nsegs = as->p0_nsegs;
		*nsge = rpcrdma__asm_p0_sges(as, mr, dst, sge);
	} else {
		first = as->chunks[k].first;
		nsegs = as->chunks[k].nsegs;
		sge[0].mr = mr;
		sge[0].addr = dst + as->chunks[k].dst;
		sge[0].len = as->chunks[k].len;
		*nsge = 1;
	}
	for (j = 0, n = 0; j < nsegs; j++)
		if (reads[first + j].seg.length)   /* an empty segment is nothing to read */
			segs[n++] = reads[first + j].seg;
	return n;
}

/* The segments of s that carry bytes, into out: a requester may offer empty segments,
 * and the unused tail of a filled write or reply chunk is empty; neither is written. */
uint32_t rpcrdma__segs_with_bytes(struct rpcrdma_segment *out, const struct rpcrdma_segment *s,
				  uint32_t n)
{
	uint32_t i, k = 0;

	for (i = 0; i < n; i++)
		if (s[i].length)
			out[k++] = s[i];
	return k;
}

void rpcrdma__asm_zero_pads(const struct eng_asm *as, uint8_t *dst)
{
	uint32_t i;

	for (i = 0; i < as->nchunks; i++) {
		uint32_t len = as->chunks[i].len, pad = eng_roundup4(len) - len;

		if (pad)
			memset(dst + as->chunks[i].dst + len, 0, pad);
	}
}

/* The segments of chunk c with lengths rewritten to the first len bytes, in order
 * (RFC 5666 §3.6: a reply's write list carries the lengths actually written). */
void rpcrdma__fill_segments(struct rpcrdma_segment *out, const struct rpcrdma_write_chunk *c,
			    uint64_t len)
{
	uint32_t i;

	for (i = 0; i < c->nsegs; i++) {
		uint32_t n = len < c->segs[i].length ? (uint32_t)len : c->segs[i].length;

		out[i] = c->segs[i];
		out[i].length = n;
		len -= n;
	}
}

/* Bytes of a header (RFC 5666 §4.2) with nreads read-list entries, a write list of
 * nwrite_chunks chunks holding nwrite_segs segments, and a reply chunk. A read-list entry
 * is 24 bytes: its discriminator, position and a 16-byte segment. */
uint32_t rpcrdma__hdr_chunks_len(uint32_t nreads, uint32_t nwrite_chunks, uint32_t nwrite_segs,
				 uint32_t reply_segs, bool has_reply)
{
	uint32_t n = RPCRDMA_FIXED_HDR_LEN;

	n += RPCRDMA__READ_ENTRY_LEN * nreads + 4u;
	n += 8u * nwrite_chunks + 16u * nwrite_segs + 4u;
	n += has_reply ? 8u + 16u * reply_segs : 4u;
	return n;
}

/* Length of (and, when dst is not NULL, write) the stream xdr with the items selected by
 * mask back in place, each with its XDR roundup; under RDMA_MSGP an item longer than
 * thresh is preceded by the padding that aligns it in the receiver's buffer, the
 * stream starting at byte base of that buffer (RFC 5666 §4.3). */
uint64_t rpcrdma__flatten(uint8_t *dst, const uint8_t *xdr, uint32_t xdr_len,
			  const struct rpcrdma_ddp_item *items, uint32_t nitems, uint32_t mask,
			  uint32_t align, uint32_t thresh, uint32_t base)
{
	uint64_t out = 0;
	uint32_t src = 0, i;

	for (i = 0; i < nitems; i++) {
		const struct rpcrdma_ddp_item *it = &items[i];
		uint32_t pad, round;

		if (!(mask & (1u << i)))
			continue;
		if (dst)
			memcpy(dst + out, xdr + src, it->offset - src);
		out += it->offset - src;
		src = it->offset;
		pad = rpcrdma_msgp_pad(align, thresh, base, (uint32_t)out, it->len);
		round = eng_roundup4(it->len) - it->len;
		if (dst) {
			memset(dst + out, 0, pad);
			if (it->len)
				memcpy(dst + out + pad, it->data, it->len);
			memset(dst + out + pad + it->len, 0, round);
		}
		out += (uint64_t)pad + it->len + round;
	}
	if (dst)
		memcpy(dst + out, xdr + src, xdr_len - src);
	return out + (xdr_len - src);
}

/* Items must be in order, 4-aligned and inside the stream. */
int rpcrdma__check_items(const struct rpcrdma_ddp_item *items, uint32_t nitems, uint32_t xdr_len)
{
	uint32_t i, prev = 0;

	if (nitems > RPCRDMA_DEF_LIST_CHUNKS)
		return -RPCRDMA_ERR_RANGE;
	for (i = 0; i < nitems; i++) {
		if ((items[i].offset & 3u) || items[i].offset < prev || items[i].offset > xdr_len ||
		    (items[i].len && !items[i].data))
			return -RPCRDMA_ERR_INVAL;
		prev = items[i].offset;
	}
	return 0;
}
