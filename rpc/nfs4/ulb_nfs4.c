/* SPDX-License-Identifier: BSD-2-Clause */
/* The NFSv4 binding (RFC 8267 §5): COMPOUND's arguments and results walked operation by
 * operation, the DDP-eligible items of WRITE, CREATE (a symbolic link), READ and READLINK
 * through xdr_rdma_ddp_bytes(), every other operation through the generated routines.
 *
 * The generated union routine decodes the operation number itself, so to pick the arm a
 * decoder reads the number, goes back to it and lets the chosen routine read it again:
 * the binding's routines need a stream that can go back (XDR_SETPOS), as the library's
 * own (memory) streams and xdr_sizeof() can; on others decoding fails. */
#include "rpcrdma/nfs4.h"

#include <stdlib.h>
#include <string.h>

#include "nfs4_prot.h"

/* RFC 8267 §5.1: WRITE's data travels in a read chunk. */
static bool_t xdr_WRITE4args_ddp(XDR *x, WRITE4args *a)
{
	return xdr_stateid4(x, &a->stateid) && xdr_offset4(x, &a->offset) &&
	       xdr_stable_how4(x, &a->stable) &&
	       xdr_rdma_ddp_bytes(x, &a->data.data_val, &a->data.data_len, ~0u);
}

/* RFC 8267 §5.1: the text of a symbolic link CREATE makes travels in a read chunk. */
static bool_t xdr_CREATE4args_ddp(XDR *x, CREATE4args *a)
{
	createtype4 *t = &a->objtype;

	if (!xdr_nfs_ftype4(x, &t->type))
		return FALSE;
	if (t->type == NF4LNK) {
		if (!xdr_rdma_ddp_bytes(x, &t->createtype4_u.linkdata.utf8string_val,
					&t->createtype4_u.linkdata.utf8string_len, ~0u))
			return FALSE;
	} else if ((t->type == NF4BLK || t->type == NF4CHR) &&
		   !xdr_specdata4(x, &t->createtype4_u.devdata)) {
		return FALSE;
	}
	return xdr_component4(x, &a->objname) && xdr_fattr4(x, &a->createattrs);
}

/* RFC 8267 §5.1: READ's data lands in a write chunk. */
static bool_t xdr_READ4res_ddp(XDR *x, READ4res *r)
{
	READ4resok *ok = &r->READ4res_u.resok4;

	if (!xdr_nfsstat4(x, &r->status))
		return FALSE;
	if (r->status != NFS4_OK)
		return TRUE;
	return xdr_bool(x, &ok->eof) &&
	       xdr_rdma_ddp_bytes(x, &ok->data.data_val, &ok->data.data_len, ~0u);
}

/* RFC 8267 §5.1: READLINK's text lands in a write chunk. */
static bool_t xdr_READLINK4res_ddp(XDR *x, READLINK4res *r)
{
	linktext4 *l = &r->READLINK4res_u.resok4.link;

	if (!xdr_nfsstat4(x, &r->status))
		return FALSE;
	if (r->status != NFS4_OK)
		return TRUE;
	return xdr_rdma_ddp_bytes(x, &l->utf8string_val, &l->utf8string_len, ~0u);
}

/* The operation number of the element about to be decoded (the stream is left where it
 * was); encoding and freeing know it already. */
static bool_t op_of(XDR *x, u_int *known, u_int *op)
{
	u_int pos;

	if (x->x_op != XDR_DECODE) {
		*op = *known;
		return TRUE;
	}
	pos = XDR_GETPOS(x);
	return xdr_u_int(x, op) && XDR_SETPOS(x, pos);
}

static bool_t xdr_nfs_argop4_ddp(XDR *x, nfs_argop4 *a)
{
	u_int op;

	if (!op_of(x, (u_int *)&a->argop, &op))
		return FALSE;
	if (op == OP_WRITE)
		return xdr_nfs_opnum4(x, &a->argop) &&
		       xdr_WRITE4args_ddp(x, &a->nfs_argop4_u.opwrite);
	if (op == OP_CREATE)
		return xdr_nfs_opnum4(x, &a->argop) &&
		       xdr_CREATE4args_ddp(x, &a->nfs_argop4_u.opcreate);
	return xdr_nfs_argop4(x, a);
}

static bool_t xdr_nfs_resop4_ddp(XDR *x, nfs_resop4 *r)
{
	u_int op;

	if (!op_of(x, (u_int *)&r->resop, &op))
		return FALSE;
	if (op == OP_READ)
		return xdr_nfs_opnum4(x, &r->resop) &&
		       xdr_READ4res_ddp(x, &r->nfs_resop4_u.opread);
	if (op == OP_READLINK)
		return xdr_nfs_opnum4(x, &r->resop) &&
		       xdr_READLINK4res_ddp(x, &r->nfs_resop4_u.opreadlink);
	return xdr_nfs_resop4(x, r);
}

/* The decoder refuses a COMPOUND of more operations than this before it allocates for
 * them; a session bounds them further (ca_maxoperations). */
#define NFS4_MAX_OPS 1024u

static bool_t xdr_COMPOUND4args_ddp(XDR *x, COMPOUND4args *a)
{
	return xdr_utf8str_cs(x, &a->tag) && xdr_u_int(x, &a->minorversion) &&
	       xdr_array(x, (char **)&a->argarray.argarray_val, &a->argarray.argarray_len,
			 NFS4_MAX_OPS, sizeof(nfs_argop4), (xdrproc_t)xdr_nfs_argop4_ddp);
}

static bool_t xdr_COMPOUND4res_ddp(XDR *x, COMPOUND4res *r)
{
	return xdr_nfsstat4(x, &r->status) && xdr_utf8str_cs(x, &r->tag) &&
	       xdr_array(x, (char **)&r->resarray.resarray_val, &r->resarray.resarray_len,
			 NFS4_MAX_OPS, sizeof(nfs_resop4), (xdrproc_t)xdr_nfs_resop4_ddp);
}

/* One write chunk per READ (its count) and per READLINK, in the order of the operations:
 * the responder fills them in that order (RFC 8166 §4.3.2, RFC 8267 §5.1). */
static uint32_t compound_ddp_sizes(const void *args, uint32_t *sizes, uint32_t max)
{
	const COMPOUND4args *a = args;
	uint32_t i, n = 0;

	for (i = 0; i < a->argarray.argarray_len && n < max; i++) {
		const nfs_argop4 *op = &a->argarray.argarray_val[i];

		if (op->argop == OP_READ)
			sizes[n++] = op->nfs_argop4_u.opread.count;
		else if (op->argop == OP_READLINK)
			sizes[n++] = RPCRDMA_NFS4_MAXLINK;
	}
	return n;
}

/* RFC 8267 §5.2: the requester estimates a COMPOUND's reply, its DDP-eligible items
 * aside, from its operations, and offers a reply chunk only where it may not fit inline.
 * Each operation's result is bounded here, but READDIR's (its maxcount) and GETATTR's
 * when it asks for an attribute of no fixed bound (an ACL, fs_locations, or any beyond
 * word 1, such as NFSv4.2's labels): with one of those, or an operation the subset does
 * not know, 0 (the client's default max_reply: a reply chunk that large). Besides
 * sparing a registration and an RDMA Write per call, this keeps a reply chunk off READs
 * (docs/ENGINE.md: knfsd of Linux 6.1 dropped the connection on 1 MiB READs that
 * offered one). */
#define NFS4_OP_REPLY 512u      /* a status, a stateid, a change_info, a handle: less */
#define NFS4_ATTR_REPLY 1024u   /* fattr4 of bounded attributes */
#define NFS4_UNBOUNDED_W0 ((1u << 12) | (1u << 24))   /* FATTR4_ACL, FATTR4_FS_LOCATIONS */

static uint32_t getattr_reply(const bitmap4 *b)
{
	if (b->bitmap4_len > 2 || (b->bitmap4_len && (b->bitmap4_val[0] & NFS4_UNBOUNDED_W0)))
		return 0;
	return NFS4_ATTR_REPLY;
}

static uint32_t op_reply(const nfs_argop4 *op)
{
	switch (op->argop) {
	case OP_READDIR:
		return op->nfs_argop4_u.opreaddir.maxcount ? op->nfs_argop4_u.opreaddir.maxcount + 256u : 0;
	case OP_GETATTR:
		return getattr_reply(&op->nfs_argop4_u.opgetattr.attr_request);
	case OP_EXCHANGE_ID:
		return 4096u;   /* owner, scope (1024 each) and an implementation id */
	case OP_ILLEGAL:
		return 0;
	default:
		return NFS4_OP_REPLY;
	}
}

/* The data of a DDP-eligible result past the write chunks a client offers
 * (compound_ddp_sizes stops at RPCRDMA_DEF_LIST_CHUNKS) comes inline: the bound counts
 * it, with its XDR pad, or a server that sends no read chunks in replies (knfsd) finds
 * no room for it in the reply chunk and answers ERR_CHUNK. */
static uint32_t ddp_inline_reply(const nfs_argop4 *op, uint32_t *ddp_seen)
{
	uint32_t size;

	if (op->argop == OP_READ)
		size = op->nfs_argop4_u.opread.count;
	else if (op->argop == OP_READLINK)
		size = RPCRDMA_NFS4_MAXLINK;
	else
		return 0;
	return ++*ddp_seen > RPCRDMA_DEF_LIST_CHUNKS ? size + 8u : 0;
}

static uint32_t compound_max_reply(const void *args)
{
	const COMPOUND4args *a = args;
	uint64_t sum = 256u + a->tag.utf8string_len;   /* RPC header, status, tag */
	uint32_t i, one, ddp_seen = 0;

	for (i = 0; i < a->argarray.argarray_len; i++) {
		const nfs_argop4 *op = &a->argarray.argarray_val[i];

		if (!(one = op_reply(op)))
			return 0;
		sum += one;
		sum += ddp_inline_reply(op, &ddp_seen);
	}
	return sum > UINT32_MAX ? 0 : (uint32_t)sum;
}

static const struct rpcrdma_ulb_proc nfs4_procs[] = {
	{ NFSPROC4_COMPOUND, (xdrproc_t)xdr_COMPOUND4args_ddp,
	  (xdrproc_t)xdr_COMPOUND4res_ddp, 0, 0, 0, NULL, compound_ddp_sizes,
	  compound_max_reply },
};

static const struct rpcrdma_ulb nfs4 = { NFS4_PROGRAM, NFS_V4, nfs4_procs,
					 sizeof(nfs4_procs) / sizeof(nfs4_procs[0]) };

const struct rpcrdma_ulb *rpcrdma_ulb_nfs4(void)
{
	return &nfs4;
}
