/* SPDX-License-Identifier: BSD-2-Clause */
/* check_nfs3d's client calls (check_nfs3d.c), shared with the checks of identities and
 * export options (check_auth.c). Each call returns the nfsstat3, or -1 when the RPC
 * itself failed. */
#ifndef CHECK_NFS3D_H
#define CHECK_NFS3D_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mount3.h"
#include "nfs3_prot.h"

extern CLIENT *cl;
extern int onc;            /* cl is ONC RPC over TCP (else RPC-over-RDMA) */
extern const char *dir;
extern int failures;
extern struct timeval tmo;

#define CHECK(cond, ...)                                                          \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "check_nfs3d:%d: ", __LINE__);            \
			fprintf(stderr, __VA_ARGS__);                             \
			fprintf(stderr, "\n");                                    \
			failures++;                                               \
		}                                                                 \
	} while (0)

bool_t x_void(XDR *x, void *p);
CLIENT *tcp_client(const char *host, unsigned port, rpcprog_t prog, rpcvers_t vers);
char *local(const char *rel);
nfs_fh3 fh_copy(const nfs_fh3 *f);
int lookup(const nfs_fh3 *d, const char *name, nfs_fh3 *out, fattr3 *attr);
int getattr(const nfs_fh3 *f, fattr3 *attr);
int create(const nfs_fh3 *d, const char *name, createmode3 mode, const char *verf,
	   nfs_fh3 *out);
int mkdir3(const nfs_fh3 *d, const char *name, nfs_fh3 *out);
int write3(const nfs_fh3 *f, uint64_t off, const char *data, uint32_t len,
	   stable_how how, char *verf);
int read3(const nfs_fh3 *f, uint64_t off, uint32_t count, char *buf, uint32_t *got,
	  bool_t *eof);
int dirop(rpcproc_t proc, const nfs_fh3 *d, const char *name);

/* check_auth.c: MODE (identity, ro, allsquash, denied, port) with its argument */
int check_auth(const char *mode, const char *arg, const nfs_fh3 *root, const char *host,
	       unsigned nfs_port, unsigned mount_port);

#endif
