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

/* NULL has a void reply; COMPOUND's reply, DDP items aside, is short unless it reads a
 * directory or many attributes: the client's default max_reply bounds it (a reply chunk
 * of that size is offered, RFC 8267 §5.2: a requester that cannot estimate the reply
 * provides one). */
static const struct rpcrdma_ulb_proc nfs4_procs[] = {
	{ 1 /* NFSPROC4_COMPOUND */, (xdrproc_t)xdr_COMPOUND4args_ddp,
	  (xdrproc_t)xdr_COMPOUND4res_ddp, 0, 0, 0, NULL, compound_ddp_sizes },
};

static const struct rpcrdma_ulb nfs4 = { NFS4_PROGRAM, NFS_V4, nfs4_procs,
					 sizeof(nfs4_procs) / sizeof(nfs4_procs[0]) };

const struct rpcrdma_ulb *rpcrdma_ulb_nfs4(void)
{
	return &nfs4;
}
