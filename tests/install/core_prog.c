/* SPDX-License-Identifier: BSD-2-Clause */
/* Built against an installed librpcrdma with CMake (find_package(rpcrdma), rpcrdma::core
 * and rpcrdma::nfs3): decodes an RDMA_MSG header (RFC 5666 §4.1, bytes written out by
 * hand) and encodes it back byte for byte; checks the version macros against the library
 * it runs with and that the NFSv3 binding is there. Prints what it found; exit 1 if any
 * of it is wrong. */
#include <stdio.h>
#include <string.h>

#include <rpcrdma/codec.h>
#include <rpcrdma/nfs3.h>
#include <rpcrdma/version.h>

int main(void)
{
	static const unsigned char wire[] = {
		0x12, 0x34, 0x56, 0x78,   /* xid */
		0x00, 0x00, 0x00, 0x01,   /* version 1 */
		0x00, 0x00, 0x00, 0x20,   /* credits 32 */
		0x00, 0x00, 0x00, 0x00,   /* RDMA_MSG */
		0x00, 0x00, 0x00, 0x00,   /* no read list */
		0x00, 0x00, 0x00, 0x00,   /* no write list */
		0x00, 0x00, 0x00, 0x00,   /* no reply chunk */
		0x12, 0x34, 0x56, 0x78,   /* the RPC message: its xid ... */
		0x00, 0x00, 0x00, 0x00,   /* ... CALL */
	};
	struct rpcrdma_msg_storage st;
	struct rpcrdma_decode_status ds;
	struct rpcrdma_msg m;
	unsigned char out[64];
	int rc, n;

	rpcrdma_msg_bind(&m, &st);
	rc = rpcrdma_decode(wire, sizeof(wire), RPCRDMA_DIR_CALL, NULL, &m, &ds);
	if (rc || m.xid != 0x12345678u || m.vers != 1 || m.credits != 32 || m.hdr_len != 28 ||
	    m.body_len != 8) {
		printf("decode: %s (reason %u)\n", rpcrdma_strerror(rc), ds.reason);
		return 1;
	}
	n = rpcrdma_encode(&m, out, sizeof(out));
	if (n != 28 || memcmp(out, wire, 28)) {
		printf("encode: %d bytes, not the header decoded\n", n);
		return 1;
	}
	if (strcmp(rpcrdma_version(), RPCRDMA_VERSION_STRING) || !rpcrdma_ulb_nfs3()) {
		printf("library %s, headers %s, nfs3 binding %p\n", rpcrdma_version(),
		       RPCRDMA_VERSION_STRING, (const void *)rpcrdma_ulb_nfs3());
		return 1;
	}
	printf("core: RDMA_MSG xid %08x credits %u decoded and encoded back; library %s\n",
	       m.xid, m.credits, rpcrdma_version());
	return 0;
}
