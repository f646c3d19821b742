/* SPDX-License-Identifier: BSD-2-Clause */
/* nfs3d's parts: the export and its options (exports.c), the caller's identity (cred.c),
 * file handles and the cache of open files (fh.c), the NFSv3 procedures (procs.c), MOUNT
 * (mount.c) and setup (main.c). nfs3d(8) says what it does; this says how. */
#ifndef NFS3D_H
#define NFS3D_H

#define _GNU_SOURCE
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "mount3.h"
#include "nfs3_prot.h"
#include "rpcrdma/nfs3.h"
#include "siphash.h"

#define MAX_IO (1024u * 1024u)    /* rtmax and wtmax (FSINFO) */
#define OFFSET_MAX ((uint64_t)INT64_MAX)
#define NFS3D_MAX_CLIENTS 64
#define NFS3D_MAX_GROUPS 16       /* AUTH_SYS carries at most 16 (RFC 5531 appendix A) */

/* ---- export options (exports(5), with knfsd's defaults) ---- */

struct nfs3d_opts {
	bool ro;                  /* default rw (nfs3d's, as exportfs's since nfs-utils 1.0.1) */
	bool root_squash;         /* default on */
	bool all_squash;
	bool insecure;            /* default off: TCP calls from ports >= 1024 refused */
	uint32_t anonuid, anongid;   /* default 65534 */
};

/* One entry of the client list: an address prefix (a host is a /32 or /128) or anyone. */
struct nfs3d_client {
	char spec[256];           /* as written */
	bool any;
	int family;
	unsigned char addr[16];
	unsigned prefix;          /* bits */
	struct nfs3d_opts opts;
};

struct nfs3d_export {
	int root_fd;              /* the mount open_by_handle_at() decodes in */
	char path[PATH_MAX];      /* canonical */
	size_t path_len;
	struct stat st;
	int mount_id;
	uint32_t tag;             /* of the export: mixed into every handle's MAC */
	unsigned char key[16];    /* the handles' MAC key, kept in the state directory */
	char verf[NFS3_WRITEVERFSIZE];   /* new at every start: unstable writes are resent */
	int verbose;
	struct nfs3d_opts defaults;      /* -o */
	struct nfs3d_client clients[NFS3D_MAX_CLIENTS];
	int nclients;             /* 0: everyone, with the defaults */
};

extern struct nfs3d_export ex;

int nfs3d_parse_opts(const char *s, struct nfs3d_opts *o);
void nfs3d_opts_default(struct nfs3d_opts *o);
int nfs3d_add_client(const char *spec);
/* The options that apply to a caller at this address, or NULL: it is not in the list. */
const struct nfs3d_opts *nfs3d_client_opts(const struct sockaddr *sa, socklen_t len);
/* Whether the caller's source port is privileged (below 1024). */
bool nfs3d_port_secure(const struct sockaddr *sa, socklen_t len);
void nfs3d_opts_text(const struct nfs3d_opts *o, char *buf, size_t cap);

/* ---- the caller's identity (cred.c) ---- */

struct nfs3d_cred {
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[NFS3D_MAX_GROUPS];
};

/* The identity a call runs as: its AUTH_SYS credential squashed by the options, or the
 * anonymous one for AUTH_NONE. */
void nfs3d_cred_map(const struct nfs3d_opts *o, int flavor, const void *authsys,
		    struct nfs3d_cred *out);
/* Switch this worker thread's file-system identity (fsuid, fsgid, groups) to c; checked:
 * -1 when it did not take, and the thread is left as anonymous-or-worse, never as root. */
int nfs3d_cred_enter(const struct nfs3d_cred *c);
/* Become root for one privileged step (open_by_handle_at), and back. */
int nfs3d_root_begin(void);
int nfs3d_root_end(void);
bool nfs3d_cred_is_root(void);
/* The threads that run procedures as their callers (the library's workers never change
 * identity: cred.c says why): started once; nfs3d_run_as() runs fn(args, res) on one of
 * them under c and o and waits. 1: fn took its arguments; 0: it refused them
 * (GARBAGE_ARGS); -1: the identity could not be taken. *legs: where the time went. */
struct nfs3d_legs {
	uint64_t wait;   /* ns from the hand-over to a thread of the pool taking it */
	uint64_t proc;   /* fn, the identity switch included */
	uint64_t back;   /* from fn's end to the waiting worker running again */
};
int nfs3d_pool_start(int n);
int nfs3d_run_as(const struct nfs3d_cred *c, const struct nfs3d_opts *o,
		 bool (*fn)(void *, void *), void *args, void *res, struct nfs3d_legs *legs);
/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t nfs3d_now_ns(void);
/* Each procedure's calls and mean times, by transport, to stderr (on stopping): where a
 * call's time goes, for docs/BENCHMARKS.md's table. */
void nfs3d_times_print(void);
/* The export options of the call this thread runs. */
void nfs3d_opts_set(const struct nfs3d_opts *o);
const struct nfs3d_opts *nfs3d_opts_now(void);
uint32_t nfs3d_cred_uid(void);

/* ---- file handles and open files (fh.c) ---- */

/* DIR opened, and its handle tried at once: nothing works without handles. */
int nfs3d_export_open(const char *dir);
int nfs3d_key_load(const char *state_dir);
nfsstat3 nfs3d_fh_of(int dirfd, const char *name, nfs_fh3 *out);
/* An O_PATH descriptor of the handle's object (the caller closes it). BADHANDLE: not ours
 * in form; STALE: not made by this nfs3d for this export, gone, or a directory outside DIR. */
nfsstat3 nfs3d_fh_open(const nfs_fh3 *fh, int *fd);
/* A descriptor of the handle's regular file for I/O, after the caller's permission was
 * checked as knfsd checks it (the owner may always read and write: RFC 1813 §4.4). */
nfsstat3 nfs3d_fh_io(const nfs_fh3 *fh, bool write, int *fd, struct stat *sb);
nfsstat3 nfs3d_truncate(int pfd, const struct stat *sb, uint64_t size);
/* An object of this inode was removed or replaced: its cached descriptors go. */
void nfs3d_fh_forget(dev_t dev, ino_t ino);
int nfs3d_fh_cache_init(unsigned entries);
nfsstat3 nfs3d_errno_status(int e);

/* ---- programs ---- */

void nfs3d_dispatch(struct svc_req *rq, SVCXPRT *x);
void mount_program_3(struct svc_req *rqstp, SVCXPRT *transp);
/* The options for this call's client and transport, or an RPC-level refusal sent. */
const struct nfs3d_opts *nfs3d_call_opts(struct svc_req *rq, SVCXPRT *x);

#endif
