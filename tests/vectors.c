/* SPDX-License-Identifier: BSD-2-Clause */
/* Hand-written RPC-over-RDMA v1 messages. Each line is one XDR field; comments give the
 * field, so every byte can be checked against RFC 5666 §4.2 by eye. */
#include <string.h>

#include "vectors.h"

#define W(x) (uint8_t)((uint32_t)(x) >> 24), (uint8_t)((uint32_t)(x) >> 16), \
	     (uint8_t)((uint32_t)(x) >> 8), (uint8_t)(x)
#define SEG(h, l, o) W(h), W(l), W((uint64_t)(o) >> 32), W((uint64_t)(o) & 0xffffffffu)
/* RFC 5531 call header, AUTH_NONE credential and verifier: 40 bytes. */
#define RPC_CALL(xid, prog, vers, proc) W(xid), W(0), W(2), W(prog), W(vers), W(proc), \
	W(0), W(0), W(0), W(0)
/* Accepted SUCCESS reply with AUTH_NONE verifier: 24 bytes. */
#define RPC_REPLY_OK(xid) W(xid), W(1), W(0), W(0), W(0), W(0)
#define HDR(xid, credits, proc) W(xid), W(1), W(credits), W(proc)
#define NFS 100003

/* NFSv3 NULL call, inline, no chunks. */
static const uint8_t msg_null_call[] = {
	HDR(0x2a, 32, RPCRDMA_MSG),
	W(0),             /* read list: empty */
	W(0),             /* write list: empty */
	W(0),             /* reply chunk: absent */
	RPC_CALL(0x2a, NFS, 3, 0),
};

/* NFSv3 READ call with one write chunk for the data (RFC 8267 §4.2). */
static const uint8_t msg_read_call[] = {
	HDR(0x1001, 16, RPCRDMA_MSG),
	W(0),                                   /* read list: empty */
	W(1), W(1), SEG(0x11223344, 4096, 0x00007f0012340000ull), /* write chunk, 1 seg */
	W(0),                                   /* end of write list */
	W(0),                                   /* no reply chunk */
	RPC_CALL(0x1001, NFS, 3, 6),
	W(8), W(0xaabbccdd), W(0x01020304),     /* fh: opaque<64>, 8 bytes */
	W(0), W(0x10000),                       /* offset */
	W(4096),                                /* count */
};

/* NFSv3 WRITE call: data in a read chunk at position 72, and a reply chunk. The
 * inline stream ends exactly where the chunk belongs. */
static const uint8_t msg_write_call[] = {
	HDR(0x1002, 16, RPCRDMA_MSG),
	W(1), W(72), SEG(0x55667788, 8192, 0x1000), /* read chunk at XDR position 72 */
	W(0),                                   /* end of read list */
	W(0),                                   /* write list: empty */
	W(1), W(1), SEG(0x99aabbcc, 1024, 0x2000), /* reply chunk, 1 seg */
	RPC_CALL(0x1002, NFS, 3, 7),
	W(8), W(0xaabbccdd), W(0x01020304),     /* fh */
	W(0), W(0),                             /* offset */
	W(8192),                                /* count */
	W(2),                                   /* stable: FILE_SYNC */
	W(8192),                                /* data: length; bytes are in the chunk */
};

/* Every list at once: two read chunks (the first of two segments, 100 bytes, its XDR
 * roundup not included), two write chunks, and a reply chunk. */
static const uint8_t msg_all_lists[] = {
	HDR(0x77, 8, RPCRDMA_MSG),
	W(1), W(48), SEG(0x1, 60, 0x10000),     /* read chunk A, segment 1 */
	W(1), W(48), SEG(0x2, 40, 0x20000),     /* read chunk A, segment 2 (A = 100 bytes) */
	W(1), W(160), SEG(0x3, 32, 0x30000),    /* read chunk B at 160 >= 48 + 100 */
	W(0),                                   /* end of read list */
	W(1), W(2), SEG(0x4, 4096, 0x40000), SEG(0x5, 4096, 0x50000), /* write chunk 1 */
	W(1), W(1), SEG(0x6, 512, 0x60000),     /* write chunk 2 */
	W(0),                                   /* end of write list */
	W(1), W(1), SEG(0x7, 2048, 0x70000),    /* reply chunk */
	RPC_CALL(0x77, 400100, 1, 3),
	W(100), W(0), W(0), W(0), W(0), W(32),  /* 24 bytes of arguments */
};

/* Long call: the whole RPC call in a position-zero read chunk of two segments, plus a
 * DDP read chunk inside it at position 200, and a reply chunk (RFC 8166 §3.5.3). */
static const uint8_t nomsg_long_call[] = {
	HDR(0x3003, 4, RPCRDMA_NOMSG),
	W(1), W(0), SEG(0xa1, 3000, 0x100000),  /* position zero, segment 1 */
	W(1), W(0), SEG(0xa2, 1000, 0x200000),  /* position zero, segment 2 */
	W(1), W(200), SEG(0xa3, 65536, 0x300000), /* DDP item at 200 of the call */
	W(0),
	W(0),
	W(1), W(1), SEG(0xa4, 8192, 0x400000),  /* reply chunk */
};

/* Long reply: the server wrote 5000 bytes into the reply chunk and says so. */
static const uint8_t nomsg_long_reply[] = {
	HDR(0x3004, 32, RPCRDMA_NOMSG),
	W(0),
	W(0),
	W(1), W(2), SEG(0xb1, 4096, 0x500000), SEG(0xb2, 904, 0x600000),
};

/* Reply to a READ: the write list returned with the length actually written; the
 * second chunk, unused, comes back empty (zero segments), which a reply may do. */
static const uint8_t msg_read_reply[] = {
	HDR(0x1001, 32, RPCRDMA_MSG),
	W(0),
	W(1), W(1), SEG(0x11223344, 1000, 0x00007f0012340000ull),
	W(1), W(0),                             /* unused write chunk, empty */
	W(0),
	W(0),
	RPC_REPLY_OK(0x1001),
	W(0),                                   /* nfsstat3 NFS3_OK */
	W(0),                                   /* no post-op attributes */
	W(1000), W(1),                          /* count, eof */
	W(1000),                                /* data: length; bytes in the chunk */
};

/* RFC 5666 reply that offers its result as a read chunk for the client to pull. */
static const uint8_t msg_reply_read_chunk[] = {
	HDR(0x1005, 32, RPCRDMA_MSG),
	W(1), W(40), SEG(0xc1, 16384, 0x700000),
	W(0),
	W(0),
	W(0),
	RPC_REPLY_OK(0x1005),
	W(0), W(0), W(16384), W(16384),        /* status, attrs, count, data length */
};

/* Padded message: align 4096, threshold 1024 (RFC 5666 §4.3). */
static const uint8_t msgp_call[] = {
	HDR(0x4004, 16, RPCRDMA_MSGP),
	W(4096), W(1024),                       /* rdma_align, rdma_thresh */
	W(0), W(0), W(0),
	RPC_CALL(0x4004, NFS, 3, 7),
};

static const uint8_t done_msg[] = { HDR(0x1005, 1, RPCRDMA_DONE) };

static const uint8_t error_vers[] = {
	HDR(0x5005, 0, RPCRDMA_ERROR), W(RPCRDMA_WIRE_ERR_VERS), W(1), W(1),
};

static const uint8_t error_chunk[] = { HDR(0x5006, 0, RPCRDMA_ERROR), W(RPCRDMA_WIRE_ERR_CHUNK) };

/* A code this version does not define, with a body we cannot know: read, not rejected. */
static const uint8_t error_unknown[] = {
	HDR(0x5007, 0, RPCRDMA_ERROR), W(7), W(0xdeadbeef),
};

/* ERR_VERS from a peer of another version (vers field 2), answering our call. */
static const uint8_t error_vers_foreign[] = {
	W(0x5008), W(2), W(0), W(RPCRDMA_ERROR), W(RPCRDMA_WIRE_ERR_VERS), W(2), W(2),
};

#define V(n, d) { #n, n, sizeof(n), d, NULL, RPCRDMA_OK, 0 }

const struct vec valid_vectors[] = {
	V(msg_null_call, RPCRDMA_DIR_CALL),
	V(msg_read_call, RPCRDMA_DIR_CALL),
	V(msg_write_call, RPCRDMA_DIR_CALL),
	V(msg_all_lists, RPCRDMA_DIR_CALL),
	V(nomsg_long_call, RPCRDMA_DIR_CALL),
	V(nomsg_long_reply, RPCRDMA_DIR_REPLY),
	V(msg_read_reply, RPCRDMA_DIR_REPLY),
	V(msg_reply_read_chunk, RPCRDMA_DIR_REPLY),
	V(msgp_call, RPCRDMA_DIR_CALL),
	V(done_msg, RPCRDMA_DIR_CALL),
	V(error_vers, RPCRDMA_DIR_REPLY),
	V(error_chunk, RPCRDMA_DIR_REPLY),
	V(error_unknown, RPCRDMA_DIR_REPLY),
	V(error_vers_foreign, RPCRDMA_DIR_REPLY),
};
const size_t n_valid_vectors = sizeof(valid_vectors) / sizeof(valid_vectors[0]);

/* ---- one negative vector per validation rule ---- */

static const uint8_t bad_short_fixed[] = { W(0x1), W(1), W(1) };
static const uint8_t bad_short_read_entry[] = {
	HDR(0x1, 1, RPCRDMA_MSG), W(1), W(8), W(0x1),       /* entry cut after the handle */
};
static const uint8_t bad_short_write_segs[] = {
	HDR(0x1, 1, RPCRDMA_MSG), W(0), W(1), W(2), SEG(1, 8, 0), W(5), W(6),
};
static const uint8_t bad_short_reply_discrim[] = { HDR(0x1, 1, RPCRDMA_MSG), W(0), W(0) };
static const uint8_t bad_vers[] = { W(0x1), W(2), W(1), W(RPCRDMA_MSG), W(0), W(0), W(0) };
static const uint8_t bad_vers_short[] = { W(0x1), W(0) };
static const uint8_t bad_proc[] = { HDR(0x1, 1, 5), W(0), W(0), W(0) };
static const uint8_t bad_discrim_read[] = { HDR(0x1, 1, RPCRDMA_MSG), W(2), W(0), W(0) };
static const uint8_t bad_discrim_write[] = { HDR(0x1, 1, RPCRDMA_MSG), W(0), W(0xffffffff), W(0) };
static const uint8_t bad_discrim_reply[] = { HDR(0x1, 1, RPCRDMA_MSG), W(0), W(0), W(3) };
static const uint8_t bad_chunk_segs_write[] = {
	HDR(0x1, 1, RPCRDMA_MSG), W(0),
	W(1), W(3), SEG(1, 8, 0), SEG(2, 8, 0), SEG(3, 8, 0), W(0), W(0),
	RPC_CALL(0x1, 1, 1, 1),
};
static const uint8_t bad_chunk_segs_read[] = {
	HDR(0x1, 1, RPCRDMA_MSG),
	W(1), W(40), SEG(1, 8, 0), W(1), W(40), SEG(2, 8, 0), W(1), W(40), SEG(3, 8, 0),
	W(0), W(0), W(0),
	RPC_CALL(0x1, 1, 1, 1),
};
static const uint8_t bad_list_chunks_write[] = {
	HDR(0x1, 1, RPCRDMA_MSG), W(0),
	W(1), W(1), SEG(1, 8, 0), W(1), W(1), SEG(2, 8, 0), W(1), W(1), SEG(3, 8, 0),
	W(0), W(0),
	RPC_CALL(0x1, 1, 1, 1),
};
static const uint8_t bad_list_chunks_read[] = {
	HDR(0x1, 1, RPCRDMA_MSG),
	W(1), W(40), SEG(1, 8, 0), W(1), W(48), SEG(2, 8, 0), W(1), W(56), SEG(3, 8, 0),
	W(0), W(0), W(0),
	RPC_CALL(0x1, 1, 1, 1),
};
static const uint8_t bad_total_segs[] = {
	HDR(0x1, 1, RPCRDMA_MSG),
	W(1), W(40), SEG(1, 8, 0), W(1), W(40), SEG(2, 8, 0), W(0),
	W(1), W(2), SEG(3, 8, 0), SEG(4, 8, 0), W(0), W(0),
	RPC_CALL(0x1, 1, 1, 1),
};
/* A count far beyond the bytes present must be refused before any loop runs on it. */
static const uint8_t bad_count_huge[] = {
	HDR(0x1, 1, RPCRDMA_MSG), W(0), W(1), W(0xffffffff), W(0),
};
static const uint8_t bad_empty_write_call[] = {
	HDR(0x1, 1, RPCRDMA_MSG), W(0), W(1), W(0), W(0), W(0),
	RPC_CALL(0x1, 1, 1, 1),
};
static const uint8_t bad_empty_reply_call[] = {
	HDR(0x1, 1, RPCRDMA_MSG), W(0), W(0), W(1), W(0),
	RPC_CALL(0x1, 1, 1, 1),
};
static const uint8_t bad_len_overflow_write[] = {
	HDR(0x1, 1, RPCRDMA_MSG), W(0),
	W(1), W(2), SEG(1, 0x80000000u, 0), SEG(2, 0x80000000u, 0x100000000ull), W(0), W(0),
	RPC_CALL(0x1, 1, 1, 1),
};
static const uint8_t bad_len_overflow_read[] = {
	HDR(0x1, 1, RPCRDMA_MSG),
	W(1), W(40), SEG(1, 0xfffffff0u, 0), W(1), W(40), SEG(2, 0x20, 0x100000000ull),
	W(0), W(0), W(0),
	RPC_CALL(0x1, 1, 1, 1),
};
static const uint8_t bad_seg_wrap[] = {
	HDR(0x1, 1, RPCRDMA_MSG), W(0),
	W(1), W(1), SEG(1, 0x2000, 0xfffffffffffff000ull), W(0), W(0),
	RPC_CALL(0x1, 1, 1, 1),
};
static const uint8_t bad_pos_align[] = {
	HDR(0x1, 1, RPCRDMA_MSG), W(1), W(42), SEG(1, 8, 0), W(0), W(0), W(0),
	RPC_CALL(0x1, 1, 1, 1),
};
static const uint8_t bad_pos_order[] = {
	HDR(0x1, 1, RPCRDMA_MSG),
	W(1), W(96), SEG(1, 8, 0), W(1), W(48), SEG(2, 8, 0), W(0), W(0), W(0),
	RPC_CALL(0x1, 1, 1, 1), W(0), W(0), W(0), W(0), W(0), W(0), W(0), W(0),
	W(0), W(0), W(0), W(0), W(0), W(0),
};
static const uint8_t bad_pos_overlap[] = {
	HDR(0x1, 1, RPCRDMA_MSG),
	W(1), W(48), SEG(1, 100, 0), W(1), W(144), SEG(2, 8, 0), W(0), W(0), W(0),
	RPC_CALL(0x1, 1, 1, 1), W(0), W(0), W(0), W(0), W(0), W(0),
};
/* Same lists as msg_all_lists but the inline stream is 4 bytes too short for chunk B
 * (its reduced offset is 160 - 104 = 56; the stream holds 52). */
static const uint8_t bad_pos_range[] = {
	HDR(0x77, 8, RPCRDMA_MSG),
	W(1), W(48), SEG(0x1, 60, 0x10000),
	W(1), W(48), SEG(0x2, 40, 0x20000),
	W(1), W(160), SEG(0x3, 32, 0x30000),
	W(0), W(0), W(0),
	RPC_CALL(0x77, 400100, 1, 3), W(100), W(0), W(0),
};
/* Long call whose DDP chunk lies beyond the 256-byte call in the position-zero chunk. */
static const uint8_t bad_pos_range_nomsg[] = {
	HDR(0x1, 1, RPCRDMA_NOMSG),
	W(1), W(0), SEG(0xa1, 256, 0x1000),
	W(1), W(260), SEG(0xa2, 64, 0x2000),
	W(0), W(0), W(0),
};
static const uint8_t bad_pos_zero_msg[] = {
	HDR(0x1, 1, RPCRDMA_MSG), W(1), W(0), SEG(1, 64, 0), W(0), W(0), W(0),
	RPC_CALL(0x1, 1, 1, 1),
};
static const uint8_t bad_nomsg_call_no_p0[] = {
	HDR(0x1, 1, RPCRDMA_NOMSG), W(0), W(0), W(1), W(1), SEG(1, 4096, 0),
};
static const uint8_t bad_nomsg_reply_empty[] = { HDR(0x1, 1, RPCRDMA_NOMSG), W(0), W(0), W(0) };
static const uint8_t bad_trailing_done[] = { HDR(0x1, 1, RPCRDMA_DONE), W(0) };
static const uint8_t bad_trailing_err_chunk[] = {
	HDR(0x1, 0, RPCRDMA_ERROR), W(RPCRDMA_WIRE_ERR_CHUNK), W(0),
};
static const uint8_t bad_trailing_err_vers[] = {
	HDR(0x1, 0, RPCRDMA_ERROR), W(RPCRDMA_WIRE_ERR_VERS), W(1), W(1), W(9),
};
static const uint8_t bad_short_err_vers[] = {
	HDR(0x1, 0, RPCRDMA_ERROR), W(RPCRDMA_WIRE_ERR_VERS), W(1),
};
static const uint8_t bad_trailing_nomsg[] = {
	HDR(0x1, 1, RPCRDMA_NOMSG), W(0), W(0), W(1), W(1), SEG(1, 4096, 0), W(0x1),
};
static const uint8_t bad_no_body[] = { HDR(0x1, 1, RPCRDMA_MSG), W(0), W(0), W(0) };
static const uint8_t bad_short_body[] = { HDR(0x1, 1, RPCRDMA_MSG), W(0), W(0), W(0), W(0x1) };
static const uint8_t bad_no_body_msgp[] = {
	HDR(0x1, 1, RPCRDMA_MSGP), W(64), W(512), W(0), W(0), W(0),
};
static const uint8_t bad_xid[] = {
	HDR(0x1, 1, RPCRDMA_MSG), W(0), W(0), W(0), RPC_CALL(0x2, 1, 1, 1),
};
static const uint8_t bad_msgp_align3[] = {
	HDR(0x1, 1, RPCRDMA_MSGP), W(3), W(512), W(0), W(0), W(0), RPC_CALL(0x1, 1, 1, 1),
};
static const uint8_t bad_msgp_align12[] = {
	HDR(0x1, 1, RPCRDMA_MSGP), W(12), W(512), W(0), W(0), W(0), RPC_CALL(0x1, 1, 1, 1),
};

static const struct rpcrdma_limits lim2 = { 2, 2, 3 };

#define B(n, d, lim, r, off) { #n, n, sizeof(n), d, lim, r, off }

const struct vec invalid_vectors[] = {
	B(bad_short_fixed, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_SHORT, 12),
	B(bad_short_read_entry, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_SHORT, 20),
	B(bad_short_write_segs, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_SHORT, 44),
	B(bad_short_reply_discrim, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_SHORT, 24),
	B(bad_vers, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_VERS, 4),
	B(bad_vers_short, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_VERS, 4),
	B(bad_proc, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_PROC, 12),
	B(bad_discrim_read, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_DISCRIM, 16),
	B(bad_discrim_write, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_DISCRIM, 20),
	B(bad_discrim_reply, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_DISCRIM, 24),
	B(bad_chunk_segs_write, RPCRDMA_DIR_CALL, &lim2, RPCRDMA_BAD_CHUNK_SEGS, 24),
	B(bad_chunk_segs_read, RPCRDMA_DIR_CALL, &lim2, RPCRDMA_BAD_CHUNK_SEGS, 68),
	B(bad_list_chunks_write, RPCRDMA_DIR_CALL, &lim2, RPCRDMA_BAD_LIST_CHUNKS, 68),
	B(bad_list_chunks_read, RPCRDMA_DIR_CALL, &lim2, RPCRDMA_BAD_LIST_CHUNKS, 68),
	B(bad_total_segs, RPCRDMA_DIR_CALL, &lim2, RPCRDMA_BAD_TOTAL_SEGS, 72),
	B(bad_count_huge, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_CHUNK_SEGS, 24),
	B(bad_empty_write_call, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_EMPTY_CHUNK, 24),
	B(bad_empty_reply_call, RPCRDMA_DIR_CALL, NULL, RPCRDMA_BAD_EMPTY_CHUNK, 28),
	B(bad_len_overflow_write, RPCRDMA_DIR_CALL, NULL, RPCRDMA_BAD_LEN_OVERFLOW, 48),
	B(bad_len_overflow_read, RPCRDMA_DIR_CALL, NULL, RPCRDMA_BAD_LEN_OVERFLOW, 52),
	B(bad_seg_wrap, RPCRDMA_DIR_CALL, NULL, RPCRDMA_BAD_SEG_WRAP, 36),
	B(bad_pos_align, RPCRDMA_DIR_CALL, NULL, RPCRDMA_BAD_POS_ALIGN, 20),
	B(bad_pos_order, RPCRDMA_DIR_CALL, NULL, RPCRDMA_BAD_POS_ORDER, 44),
	B(bad_pos_overlap, RPCRDMA_DIR_CALL, NULL, RPCRDMA_BAD_POS_ORDER, 44),
	B(bad_pos_range, RPCRDMA_DIR_CALL, NULL, RPCRDMA_BAD_POS_RANGE, 68),
	B(bad_pos_range_nomsg, RPCRDMA_DIR_CALL, NULL, RPCRDMA_BAD_POS_RANGE, 44),
	B(bad_pos_zero_msg, RPCRDMA_DIR_CALL, NULL, RPCRDMA_BAD_POS_ZERO, 20),
	B(bad_nomsg_call_no_p0, RPCRDMA_DIR_CALL, NULL, RPCRDMA_BAD_NOMSG_EMPTY, 48),
	B(bad_nomsg_reply_empty, RPCRDMA_DIR_REPLY, NULL, RPCRDMA_BAD_NOMSG_EMPTY, 28),
	B(bad_trailing_done, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_TRAILING, 16),
	B(bad_trailing_err_chunk, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_TRAILING, 20),
	B(bad_trailing_err_vers, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_TRAILING, 28),
	B(bad_short_err_vers, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_SHORT, 20),
	B(bad_trailing_nomsg, RPCRDMA_DIR_REPLY, NULL, RPCRDMA_BAD_TRAILING, 48),
	B(bad_no_body, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_NO_BODY, 28),
	B(bad_short_body, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_NO_BODY, 28),
	B(bad_no_body_msgp, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_NO_BODY, 36),
	B(bad_xid, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_XID, 28),
	B(bad_msgp_align3, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_ALIGN, 16),
	B(bad_msgp_align12, RPCRDMA_DIR_ANY, NULL, RPCRDMA_BAD_ALIGN, 16),
};
const size_t n_invalid_vectors = sizeof(invalid_vectors) / sizeof(invalid_vectors[0]);

const struct vec *find_vector(const char *name)
{
	size_t i;

	for (i = 0; i < n_valid_vectors; i++)
		if (!strcmp(valid_vectors[i].name, name))
			return &valid_vectors[i];
	for (i = 0; i < n_invalid_vectors; i++)
		if (!strcmp(invalid_vectors[i].name, name))
			return &invalid_vectors[i];
	return NULL;
}
