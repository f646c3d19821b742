/* SPDX-License-Identifier: BSD-2-Clause */
/* librpcrdma — RPC-over-RDMA Version One wire codec (RFC 5666 §4, RFC 8166 §4-§5).
 *
 * Pure functions over byte buffers: no I/O, no allocation, no global state.
 * Decoding never reads past (buf, len), sums lengths in 64 bits and checks every
 * count against explicit limits. A rejected message comes with the RDMA_ERROR a
 * receiver must answer with (ERR_VERS or ERR_CHUNK), the reason, and the byte offset
 * of the problem. See docs/CODEC.md for the choices made where the RFC is silent.
 */
#ifndef RPCRDMA_CODEC_H
#define RPCRDMA_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "errors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RPCRDMA_VERSION 1u         /* the only version this codec speaks */
#define RPCRDMA_FIXED_HDR_LEN 16u  /* xid, vers, credits, proc (RFC 5666 §4.2) */
#define RPCRDMA_MIN_RPC_LEN 8u     /* an RPC message has at least xid and msg_type */

/* Message type (rdma_proc), RFC 5666 §4.2. */
enum rpcrdma_proc {
	RPCRDMA_MSG = 0,
	RPCRDMA_NOMSG = 1,
	RPCRDMA_MSGP = 2,
	RPCRDMA_DONE = 3,
	RPCRDMA_ERROR = 4,
};

/* Error codes carried by RDMA_ERROR (rpc_rdma_errcode), RFC 5666 §4.3. */
enum rpcrdma_wire_err {
	RPCRDMA_WIRE_ERR_NONE = 0, /* not an RDMA_ERROR code: "no answer needed" */
	RPCRDMA_WIRE_ERR_VERS = 1,
	RPCRDMA_WIRE_ERR_CHUNK = 2,
};

/* Which side sent the message being decoded. Rules differ: a zero-segment write or
 * reply chunk is an error in a call but reports an unused chunk in a reply.
 * RPCRDMA_DIR_ANY takes the direction from the RPC msg_type when a body is present
 * and otherwise applies only the rules common to both. */
enum rpcrdma_dir {
	RPCRDMA_DIR_ANY = 0,
	RPCRDMA_DIR_CALL = 1,
	RPCRDMA_DIR_REPLY = 2,
};

/* An RDMA segment (RFC 5666 §2, §4.2): steering tag, length, offset. */
struct rpcrdma_segment {
	uint32_t handle;
	uint32_t length;
	uint64_t offset;
};

/* One read-list entry. Consecutive entries with the same position form one read chunk. */
struct rpcrdma_read_segment {
	uint32_t position;
	struct rpcrdma_segment seg;
};

/* A write chunk (also the shape of the reply chunk): a counted array of segments. */
struct rpcrdma_write_chunk {
	struct rpcrdma_segment *segs;
	uint32_t nsegs;
};

/* Limits a decoder enforces on what a peer may send. */
struct rpcrdma_limits {
	uint32_t max_chunk_segs;  /* segments in one read, write or reply chunk */
	uint32_t max_list_chunks; /* chunks in the read list, and in the write list */
	uint32_t max_total_segs;  /* segments in one message, all lists together */
};

#define RPCRDMA_DEF_CHUNK_SEGS 16u
#define RPCRDMA_DEF_LIST_CHUNKS 8u
#define RPCRDMA_DEF_TOTAL_SEGS 64u

/* A decoded (or to-be-encoded) transport header. The arrays are the caller's: bind
 * them with rpcrdma_msg_bind() or set the pointers and capacities by hand. */
struct rpcrdma_msg {
	uint32_t xid;
	uint32_t vers;
	uint32_t credits;
	uint32_t proc;       /* enum rpcrdma_proc */
	uint32_t align;      /* RDMA_MSGP only */
	uint32_t thresh;     /* RDMA_MSGP only */
	uint32_t err;        /* RDMA_ERROR: the code, known or not */
	uint32_t vers_low;   /* RDMA_ERROR / ERR_VERS */
	uint32_t vers_high;  /* RDMA_ERROR / ERR_VERS */

	struct rpcrdma_read_segment *reads; /* read list, wire order */
	uint32_t nreads;
	uint32_t reads_cap;
	struct rpcrdma_write_chunk *writes; /* write list */
	uint32_t nwrites;
	uint32_t writes_cap;
	uint32_t has_reply;                 /* reply chunk present */
	struct rpcrdma_write_chunk reply;
	struct rpcrdma_segment *segs;       /* decode: storage for write/reply segments */
	uint32_t segs_cap;

	/* Filled by the decoder. */
	uint32_t hdr_len;        /* transport header bytes; the RPC message follows */
	uint32_t body_len;       /* bytes after the header */
	const uint8_t *body;     /* the RPC message (MSG/MSGP); an unknown RDMA_ERROR's
				    undecoded remainder; else NULL */
	uint32_t dir;            /* enum rpcrdma_dir as decided */
};

/* Storage sized for the default limits. */
struct rpcrdma_msg_storage {
	struct rpcrdma_read_segment reads[RPCRDMA_DEF_TOTAL_SEGS];
	struct rpcrdma_write_chunk writes[RPCRDMA_DEF_LIST_CHUNKS];
	struct rpcrdma_segment segs[RPCRDMA_DEF_TOTAL_SEGS];
};

/* Why a message was rejected. Each has exactly one RDMA_ERROR answer. */
enum rpcrdma_reason {
	RPCRDMA_OK = 0,
	RPCRDMA_BAD_SHORT,          /* header ends inside a field */
	RPCRDMA_BAD_VERS,           /* version other than 1 (ERR_VERS) */
	RPCRDMA_BAD_PROC,           /* unknown message type */
	RPCRDMA_BAD_DISCRIM,        /* list discriminator other than 0 or 1 */
	RPCRDMA_BAD_CHUNK_SEGS,     /* too many segments in one chunk */
	RPCRDMA_BAD_LIST_CHUNKS,    /* too many chunks in one list */
	RPCRDMA_BAD_TOTAL_SEGS,     /* too many segments in the message */
	RPCRDMA_BAD_EMPTY_CHUNK,    /* zero-segment write or reply chunk in a call */
	RPCRDMA_BAD_LEN_OVERFLOW,   /* a chunk's segment lengths sum past 2^32-1 */
	RPCRDMA_BAD_SEG_WRAP,       /* segment offset + length wraps 64 bits */
	RPCRDMA_BAD_POS_ALIGN,      /* read position not a multiple of 4 */
	RPCRDMA_BAD_POS_ORDER,      /* read chunks out of order or overlapping */
	RPCRDMA_BAD_POS_RANGE,      /* read chunk beyond the end of its XDR stream */
	RPCRDMA_BAD_POS_ZERO,       /* position-zero read chunk with an inline message */
	RPCRDMA_BAD_NOMSG_EMPTY,    /* RDMA_NOMSG with no chunk that carries the message */
	RPCRDMA_BAD_TRAILING,       /* bytes after a message that carries none */
	RPCRDMA_BAD_NO_BODY,        /* RDMA_MSG/MSGP without an RPC message */
	RPCRDMA_BAD_XID,            /* RPC XID differs from the header XID */
	RPCRDMA_BAD_ALIGN,          /* RDMA_MSGP align not 0 or a power of two >= 4 */
	RPCRDMA_REASON_COUNT
};

struct rpcrdma_decode_status {
	uint32_t reason;  /* enum rpcrdma_reason */
	uint32_t answer;  /* enum rpcrdma_wire_err: what the receiver must send back */
	uint32_t offset;  /* byte offset of the offending field */
};

/* Point m's arrays at st, capacities at the defaults. Resets counts. */
RPCRDMA_API void rpcrdma_msg_bind(struct rpcrdma_msg *m, struct rpcrdma_msg_storage *st);

/* The default limits (RPCRDMA_DEF_*). */
RPCRDMA_API void rpcrdma_limits_default(struct rpcrdma_limits *lim);

/* Decode one transport header and locate the RPC message.
 * lim NULL = defaults; st may be NULL. Returns 0, -RPCRDMA_ERR_VERSION (answer ERR_VERS),
 * -RPCRDMA_ERR_PROTO (answer ERR_CHUNK) or -RPCRDMA_ERR_INVAL (bad arguments). */
RPCRDMA_API int rpcrdma_decode(const void *buf, size_t len, enum rpcrdma_dir dir,
			       const struct rpcrdma_limits *lim, struct rpcrdma_msg *m,
			       struct rpcrdma_decode_status *st);

/* Bytes rpcrdma_encode() writes for m. */
RPCRDMA_API size_t rpcrdma_encoded_len(const struct rpcrdma_msg *m);

/* Encode m's header (not its body) into buf. Returns the length written,
 * -RPCRDMA_ERR_NOSPC if cap is too small, -RPCRDMA_ERR_INVAL for an unknown proc. */
RPCRDMA_API int rpcrdma_encode(const struct rpcrdma_msg *m, void *buf, size_t cap);

/* Length of read chunk that starts at read-list entry i (sum of its segments), and the
 * index one past its last entry. */
RPCRDMA_API uint64_t rpcrdma_read_chunk_len(const struct rpcrdma_msg *m, uint32_t i,
					    uint32_t *next);
/* Sum of the segment lengths of a write or reply chunk. */
RPCRDMA_API uint64_t rpcrdma_write_chunk_len(const struct rpcrdma_write_chunk *c);

RPCRDMA_API const char *rpcrdma_proc_name(uint32_t proc);       /* "RDMA_MSG", or NULL */
RPCRDMA_API const char *rpcrdma_reason_str(uint32_t reason);    /* never NULL */
RPCRDMA_API const char *rpcrdma_reason_name(uint32_t reason);   /* short token */
RPCRDMA_API const char *rpcrdma_wire_err_name(uint32_t err);    /* "ERR_VERS", or NULL */

/* ---- ONC RPC (RFC 5531) header peek: enough to route a message. ---- */

enum rpcrdma_rpc_msg_type { RPCRDMA_RPC_CALL = 0, RPCRDMA_RPC_REPLY = 1 };

struct rpcrdma_rpc_info {
	uint32_t xid;
	uint32_t msg_type;     /* enum rpcrdma_rpc_msg_type */
	/* call */
	uint32_t rpcvers, prog, vers, proc;
	uint32_t cred_flavor, verf_flavor;
	/* reply */
	uint32_t reply_stat;   /* 0 MSG_ACCEPTED, 1 MSG_DENIED */
	uint32_t accept_stat;  /* when accepted: SUCCESS .. SYSTEM_ERR */
	uint32_t reject_stat;  /* when denied: RPC_MISMATCH, AUTH_ERROR */
	uint32_t auth_stat;    /* when denied with AUTH_ERROR */
	uint32_t mismatch_low, mismatch_high; /* PROG_MISMATCH / RPC_MISMATCH */
	uint32_t hdr_len;      /* bytes before the procedure's arguments / results */
};

/* Parse the RPC header at buf. Returns 0 or -RPCRDMA_ERR_PROTO when it is truncated,
 * has an unknown msg_type or status, or an auth body over 400 bytes (RFC 5531 §8.2).
 * On failure, info holds the fields that were read before the problem. */
RPCRDMA_API int rpcrdma_rpc_peek(const void *buf, size_t len, struct rpcrdma_rpc_info *info);

/* ---- RFC 8797 connection private data. ---- */

#define RPCRDMA_PDATA_FORMAT 0xf6ab0e18u
#define RPCRDMA_PDATA_VERSION 1u
#define RPCRDMA_PDATA_LEN 8u
#define RPCRDMA_PDATA_F_REMOTE_INV 0x01u   /* peer may use Send With Invalidate */
#define RPCRDMA_DEF_INLINE 1024u           /* inline threshold when nothing is known */
#define RPCRDMA_PDATA_MAX_SIZE (256u * 1024u)

/* librpcrdma's own block, sent right after the RFC 8797 block when ext_flags is not 0:
 * format RPCRDMA_PDATA_EXT_FORMAT (u32), version 1 (u8), flags (u8), two zero octets.
 * Peers that know only RFC 8797 read the first 8 bytes and ignore the rest (fabrics pad
 * private data anyway), so it changes nothing for them (docs/ENGINE.md). */
#define RPCRDMA_PDATA_EXT_FORMAT 0x52524458u   /* "RRDX" */
#define RPCRDMA_PDATA_EXT_VERSION 1u
#define RPCRDMA_PDATA_EXT_LEN 16u              /* both blocks */
#define RPCRDMA_PDATA_X_REPLY_READS 0x01u      /* takes read chunks in replies and answers
						  them with RDMA_DONE (RFC 5666 §3.5, §3.8) */

struct rpcrdma_pdata {
	uint8_t version;
	uint8_t flags;
	uint32_t send_size;  /* bytes, a multiple of 1024 in [1 KiB, 256 KiB] */
	uint32_t recv_size;
	uint8_t ext_flags;   /* RPCRDMA_PDATA_X_*: 0 when the peer sent no extension block */
};

/* Sizes must be multiples of 1024 in [1024, 262144]; else -RPCRDMA_ERR_RANGE. Returns 8,
 * or 16 with the extension block when ext_flags is set. */
RPCRDMA_API int rpcrdma_pdata_encode(const struct rpcrdma_pdata *pd, void *buf, size_t cap);
/* Returns 0, or -RPCRDMA_ERR_PROTO when the block is short, of another format or of an
 * unknown version: RFC 8797 says to ignore it then and use 1024 each way (out is set so).
 * An extension block of another format or version leaves ext_flags 0. */
RPCRDMA_API int rpcrdma_pdata_decode(const void *buf, size_t len, struct rpcrdma_pdata *out);

/* ---- Connection Configuration Protocol, RFC 5666 §6.2 (XDR of CONF_RDMA). ---- */

#define RPCRDMA_CCP_PROG 100417u
#define RPCRDMA_CCP_VERS 1u
#define RPCRDMA_CCP_PROC_CONF_RDMA 1u
#define RPCRDMA_CCP_XDR_LEN 12u

struct rpcrdma_ccp_args {
	uint32_t maxcall_sendsize;
	uint32_t maxreply_sendsize;
	uint32_t maxrdmaread;
};

struct rpcrdma_ccp_res {
	uint32_t maxcall_sendsize;
	uint32_t align;
	uint32_t maxrdmaread;
};

/* Return 12 (bytes written / consumed), -RPCRDMA_ERR_NOSPC or -RPCRDMA_ERR_PROTO. */
RPCRDMA_API int rpcrdma_ccp_args_encode(const struct rpcrdma_ccp_args *a, void *buf, size_t cap);
RPCRDMA_API int rpcrdma_ccp_args_decode(const void *buf, size_t len, struct rpcrdma_ccp_args *a);
RPCRDMA_API int rpcrdma_ccp_res_encode(const struct rpcrdma_ccp_res *r, void *buf, size_t cap);
RPCRDMA_API int rpcrdma_ccp_res_decode(const void *buf, size_t len, struct rpcrdma_ccp_res *r);

#ifdef __cplusplus
}
#endif
#endif
