/* SPDX-License-Identifier: BSD-2-Clause */
/* The NFSv3 binding (RFC 8267 §4): the XDR routines of READ, WRITE, READLINK and SYMLINK
 * with their bulk items through xdr_rdma_ddp_bytes()/_string(), everything else through
 * the generated routines. On a stream that is not RPC-over-RDMA they are exactly the
 * generated ones. */
#include "rpcrdma/nfs3.h"

#include <stdlib.h>
#include <string.h>

#include "nfs3_prot.h"

bool_t rpcrdma_xdr_nfs3_name(XDR *x, char **name)
{
	u_int len;
	char *s = *name;

	if (x->x_op != XDR_DECODE)
		return xdr_string(x, name, RPCRDMA_NFS3_MAXNAMLEN);
	if (!xdr_u_int(x, &len) || len == 0 || len > RPCRDMA_NFS3_MAXNAMLEN)
		return FALSE;
	if (!s && !(s = malloc(len + 1)))
		return FALSE;
	s[len] = '\0';
	if (!xdr_opaque(x, s, len) || memchr(s, '\0', len) || memchr(s, '/', len)) {
		if (!*name)
			free(s);
		return FALSE;
	}
	*name = s;
	return TRUE;
}

static bool_t xdr_READ3res_ddp(XDR *x, READ3res *r)
{
	READ3resok *ok = &r->READ3res_u.resok;

	if (!xdr_nfsstat3(x, &r->status))
		return FALSE;
	if (r->status != NFS3_OK)
		return xdr_READ3resfail(x, &r->READ3res_u.resfail);
	return xdr_post_op_attr(x, &ok->file_attributes) && xdr_count3(x, &ok->count) &&
	       xdr_bool(x, &ok->eof) &&
	       xdr_rdma_ddp_bytes(x, &ok->data.data_val, &ok->data.data_len, ~0u);
}

static bool_t xdr_WRITE3args_ddp(XDR *x, WRITE3args *a)
{
	return xdr_nfs_fh3(x, &a->file) && xdr_offset3(x, &a->offset) &&
	       xdr_count3(x, &a->count) && xdr_stable_how(x, &a->stable) &&
	       xdr_rdma_ddp_bytes(x, &a->data.data_val, &a->data.data_len, ~0u);
}

static bool_t xdr_READLINK3res_ddp(XDR *x, READLINK3res *r)
{
	READLINK3resok *ok = &r->READLINK3res_u.resok;

	if (!xdr_nfsstat3(x, &r->status))
		return FALSE;
	if (r->status != NFS3_OK)
		return xdr_READLINK3resfail(x, &r->READLINK3res_u.resfail);
	return xdr_post_op_attr(x, &ok->symlink_attributes) &&
	       xdr_rdma_ddp_string(x, &ok->data, RPCRDMA_NFS3_MAXPATHLEN);
}

static bool_t xdr_SYMLINK3args_ddp(XDR *x, SYMLINK3args *a)
{
	return xdr_nfs_fh3(x, &a->where.dir) && rpcrdma_xdr_nfs3_name(x, &a->where.name) &&
	       xdr_sattr3(x, &a->symlink.symlink_attributes) &&
	       xdr_rdma_ddp_string(x, &a->symlink.symlink_data, RPCRDMA_NFS3_MAXPATHLEN);
}

/* A READ's data needs a write chunk of its count. */
static uint32_t read_size(const void *args)
{
	return ((const READ3args *)args)->count;
}

static uint32_t path_size(const void *args)
{
	(void)args;
	return RPCRDMA_NFS3_MAXPATHLEN;
}

/* With their bulk items in chunks these replies are a few hundred bytes (attributes,
 * wcc data, a file handle): no reply chunk is needed (RFC 8267 §4). */
#define NFS3_SHORT_REPLY 1024u

/* A procedure with no DDP-eligible item whose reply is short whatever its arguments. */
#define NFS3_SHORT(proc) { proc, NULL, NULL, NFS3_SHORT_REPLY, 0, 0, NULL, NULL, NULL }

static const struct rpcrdma_ulb_proc nfs3_procs[] = {
	{ NFSPROC3_READ, NULL, (xdrproc_t)xdr_READ3res_ddp, NFS3_SHORT_REPLY, 1, 0, read_size,
	  NULL, NULL },
	{ NFSPROC3_WRITE, (xdrproc_t)xdr_WRITE3args_ddp, NULL, NFS3_SHORT_REPLY, 0, 0, NULL,
	  NULL, NULL },
	{ NFSPROC3_READLINK, NULL, (xdrproc_t)xdr_READLINK3res_ddp, NFS3_SHORT_REPLY, 1, 0,
	  path_size, NULL, NULL },
	{ NFSPROC3_SYMLINK, (xdrproc_t)xdr_SYMLINK3args_ddp, NULL, NFS3_SHORT_REPLY, 0, 0, NULL,
	  NULL, NULL },
	/* The rest carry attributes, wcc data and handles: at most 280 bytes of results
	 * (CREATE, RFC 1813 §3.3.8). Without these entries every such call offered a reply
	 * chunk of the client's max_reply, and Linux's server writes the reply there whenever
	 * one is offered, however short (docs/ENGINE.md, "What the Linux kernel does").
	 * READDIR and READDIRPLUS are not here: their replies grow with the count asked. */
	NFS3_SHORT(NFSPROC3_GETATTR),
	NFS3_SHORT(NFSPROC3_SETATTR),
	NFS3_SHORT(NFSPROC3_LOOKUP),
	NFS3_SHORT(NFSPROC3_ACCESS),
	NFS3_SHORT(NFSPROC3_CREATE),
	NFS3_SHORT(NFSPROC3_MKDIR),
	NFS3_SHORT(NFSPROC3_MKNOD),
	NFS3_SHORT(NFSPROC3_REMOVE),
	NFS3_SHORT(NFSPROC3_RMDIR),
	NFS3_SHORT(NFSPROC3_RENAME),
	NFS3_SHORT(NFSPROC3_LINK),
	NFS3_SHORT(NFSPROC3_FSSTAT),
	NFS3_SHORT(NFSPROC3_FSINFO),
	NFS3_SHORT(NFSPROC3_PATHCONF),
	NFS3_SHORT(NFSPROC3_COMMIT),
};

static const struct rpcrdma_ulb nfs3 = { NFS_PROGRAM, NFS_V3, nfs3_procs,
					 sizeof(nfs3_procs) / sizeof(nfs3_procs[0]) };

const struct rpcrdma_ulb *rpcrdma_ulb_nfs3(void)
{
	return &nfs3;
}
