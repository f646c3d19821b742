/* SPDX-License-Identifier: BSD-2-Clause */
/* librpcrdma — the NFS version 3 upper-layer binding of RFC 8267 (library rpcrdma_nfs3).
 *
 * DDP-eligible, as RFC 8267 §4 lists them for NFS versions 2 and 3: the data of WRITE
 * (argument, a read chunk), the data of READ (result, a write chunk of the READ's count),
 * the path of SYMLINK (argument) and the path of READLINK (result). Every other procedure
 * but READDIR and READDIRPLUS is described as having a short reply, so that a client
 * offers no reply chunk for it. Register it once per process, on clients and servers
 * alike; the NFSv3 XDR is the one generated from rpc/nfs3/nfs3_prot.x (RFC 1813). */
#ifndef RPCRDMA_NFS3_H
#define RPCRDMA_NFS3_H

#include "rpc.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RPCRDMA_NFS3_MAXPATHLEN 4096u
#define RPCRDMA_NFS3_MAXNAMLEN 255u

RPCRDMA_API const struct rpcrdma_ulb *rpcrdma_ulb_nfs3(void);

/* A filename3 as a server must take it: decoding fails (the server answers GARBAGE_ARGS,
 * as Linux's knfsd does) for an empty name, one longer than RPCRDMA_NFS3_MAXNAMLEN, or one
 * holding a NUL or a '/' (xdr_string() would cut "a\0b" to "a" without a word). Encoding
 * and freeing are xdr_string()'s. The binding's SYMLINK arguments decode their name with
 * it; a server uses it for the names of its other procedures. */
RPCRDMA_API bool_t rpcrdma_xdr_nfs3_name(XDR *xdrs, char **name);

#ifdef __cplusplus
}
#endif
#endif
