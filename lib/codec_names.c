/* SPDX-License-Identifier: BSD-2-Clause */
/* Names of wire values and decode reasons, for logs, the CLI and JSON. */
#include "rpcrdma/codec.h"

const char *rpcrdma_proc_name(uint32_t proc)
{
	static const char *const names[] = {
		"RDMA_MSG", "RDMA_NOMSG", "RDMA_MSGP", "RDMA_DONE", "RDMA_ERROR",
	};

	return proc < sizeof(names) / sizeof(names[0]) ? names[proc] : NULL;
}

const char *rpcrdma_wire_err_name(uint32_t err)
{
	if (err == RPCRDMA_WIRE_ERR_VERS)
		return "ERR_VERS";
	if (err == RPCRDMA_WIRE_ERR_CHUNK)
		return "ERR_CHUNK";
	return NULL;
}

struct reason_text {
	const char *name;
	const char *text;
};

static const struct reason_text reasons[RPCRDMA_REASON_COUNT] = {
	[RPCRDMA_OK] = { "ok", "valid" },
	[RPCRDMA_BAD_SHORT] = { "short", "message ends inside a field" },
	[RPCRDMA_BAD_VERS] = { "version", "unsupported RPC-over-RDMA version" },
	[RPCRDMA_BAD_PROC] = { "proc", "unknown message type" },
	[RPCRDMA_BAD_DISCRIM] = { "discriminator", "list discriminator is neither 0 nor 1" },
	[RPCRDMA_BAD_CHUNK_SEGS] = { "chunk_segments", "too many segments in one chunk" },
	[RPCRDMA_BAD_LIST_CHUNKS] = { "list_chunks", "too many chunks in one list" },
	[RPCRDMA_BAD_TOTAL_SEGS] = { "total_segments", "too many segments in the message" },
	[RPCRDMA_BAD_EMPTY_CHUNK] = { "empty_chunk", "zero-segment write or reply chunk in a call" },
	[RPCRDMA_BAD_LEN_OVERFLOW] = { "length_overflow", "chunk length exceeds 2^32-1" },
	[RPCRDMA_BAD_SEG_WRAP] = { "segment_wrap", "segment offset plus length wraps" },
	[RPCRDMA_BAD_POS_ALIGN] = { "position_align", "read position not a multiple of 4" },
	[RPCRDMA_BAD_POS_ORDER] = { "position_order", "read chunks out of order or overlapping" },
	[RPCRDMA_BAD_POS_RANGE] = { "position_range", "read chunk outside its XDR stream" },
	[RPCRDMA_BAD_POS_ZERO] = { "position_zero", "position-zero read chunk with an inline message" },
	[RPCRDMA_BAD_NOMSG_EMPTY] = { "nomsg_empty", "RDMA_NOMSG without a chunk carrying the message" },
	[RPCRDMA_BAD_TRAILING] = { "trailing", "bytes after the end of the message" },
	[RPCRDMA_BAD_NO_BODY] = { "no_body", "no RPC message after the header" },
	[RPCRDMA_BAD_XID] = { "xid_mismatch", "RPC XID differs from the header XID" },
	[RPCRDMA_BAD_ALIGN] = { "msgp_align", "RDMA_MSGP align is not 0 or a power of two >= 4" },
};

const char *rpcrdma_reason_str(uint32_t reason)
{
	return reason < RPCRDMA_REASON_COUNT ? reasons[reason].text : "unknown reason";
}

const char *rpcrdma_reason_name(uint32_t reason)
{
	return reason < RPCRDMA_REASON_COUNT ? reasons[reason].name : "unknown";
}
