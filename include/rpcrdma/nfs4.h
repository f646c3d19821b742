/* SPDX-License-Identifier: BSD-2-Clause */
/* librpcrdma — the NFS version 4 upper-layer binding of RFC 8267 §5 (library
 * rpcrdma_nfs4), for every minor version (the COMPOUND's minorversion changes nothing).
 *
 * NFSv4 has one procedure that carries data, COMPOUND, whose operations are a list: the
 * binding walks it. DDP-eligible (RFC 8267 §5.1), and nothing else:
 *   - in a call: the data of each WRITE and the link text of each CREATE of a symbolic
 *     link (read chunks, at their places in the COMPOUND);
 *   - in a reply: the data of each READ and the link text of each READLINK (write
 *     chunks, one per such operation, in the order the operations come: RFC 8166 §4.3.2).
 * A client offers one write chunk for each READ (of the READ's count) and READLINK (of
 * RPCRDMA_NFS4_MAXLINK) in the COMPOUND, at most RPCRDMA_DEF_LIST_CHUNKS (the data of the
 * later ones comes inline, and the reply estimate counts it); a COMPOUND that
 * stops early (an operation failed) leaves the chunks of the later ones unused. Never moved
 * by DDP: attributes (GETATTR, READDIR's entries, OPEN's), file handles, names, state,
 * the SEQUENCE and session operations, and every callback (CB_COMPOUND travels inline:
 * RFC 8167 §4); a long reply of those (READDIR) goes in a reply chunk.
 *
 * The XDR is the one generated from rpc/nfs4/nfs4_prot.x (a subset of RFC 5662). Register
 * the binding once per process, on clients and servers alike. */
#ifndef RPCRDMA_NFS4_H
#define RPCRDMA_NFS4_H

#include "rpc.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RPCRDMA_NFS4_MAXLINK 4096u   /* write chunk offered for a READLINK's text */

RPCRDMA_API const struct rpcrdma_ulb *rpcrdma_ulb_nfs4(void);

#ifdef __cplusplus
}
#endif
#endif
