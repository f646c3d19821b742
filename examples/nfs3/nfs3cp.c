/* SPDX-License-Identifier: BSD-2-Clause */
/* nfs3cp: copies a file to or from an NFSv3 server over RPC-over-RDMA, as a user's own
 * client would: MOUNT v3 over TCP for the export's root handle, LOOKUP down the path,
 * then READ (the data lands through a write chunk, RFC 8267) or WRITE UNSTABLE (the data
 * goes as a read chunk) plus COMMIT, several calls in flight, sizes checked with GETATTR.
 * Written against the Linux kernel's server (knfsd) and any RFC 8267 peer.
 *
 *   nfs3cp [OPTIONS] HOST:/export/path/file LOCAL     read a file
 *   nfs3cp [OPTIONS] LOCAL HOST:/export/path/file     write a file (created, or truncated)
 *   nfs3cp [OPTIONS] --list HOST:/export/path/dir     list a directory (READDIRPLUS)
 *
 * Every failure says what failed: the procedure and the NFS status by name, or the RPC
 * error. Exit status 0 on success, 1 on a failure, 2 on a usage error. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rpcrdma/nfs3.h>
#include <rpcrdma/rpcrdma.h>

#include "mount3.h"
#include "nfs3_prot.h"

#include "../cp_args.h"

#define DEPTH_MAX 64u
#define CALL_TIMEOUT_S 60

struct opts {
	struct cp_opts cp;      /* chunk: at most the server's rtmax/wtmax */
	uint32_t mount_port;    /* 0: ask rpcbind for MOUNT v3 over tcp */
	int plain_readdir;
};

struct remote {
	char host[256];
	char path[MNTPATHLEN3 + 1];
};

/* One NFS session: the RDMA client and what FSINFO said. */
struct nfs {
	CLIENT *cl;
	const char *host;
	nfs_fh3 root;
	uint32_t rtmax, wtmax;
};

static int failf(const char *fmt, ...)
{
	va_list ap;

	fputs("nfs3cp: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

static const char *nfsstat3_name(nfsstat3 s)
{
	switch (s) {
	case NFS3_OK: return "NFS3_OK";
	case NFS3ERR_PERM: return "NFS3ERR_PERM";
	case NFS3ERR_NOENT: return "NFS3ERR_NOENT";
	case NFS3ERR_IO: return "NFS3ERR_IO";
	case NFS3ERR_NXIO: return "NFS3ERR_NXIO";
	case NFS3ERR_ACCES: return "NFS3ERR_ACCES";
	case NFS3ERR_EXIST: return "NFS3ERR_EXIST";
	case NFS3ERR_XDEV: return "NFS3ERR_XDEV";
	case NFS3ERR_NODEV: return "NFS3ERR_NODEV";
	case NFS3ERR_NOTDIR: return "NFS3ERR_NOTDIR";
	case NFS3ERR_ISDIR: return "NFS3ERR_ISDIR";
	case NFS3ERR_INVAL: return "NFS3ERR_INVAL";
	case NFS3ERR_FBIG: return "NFS3ERR_FBIG";
	case NFS3ERR_NOSPC: return "NFS3ERR_NOSPC";
	case NFS3ERR_ROFS: return "NFS3ERR_ROFS";
	case NFS3ERR_MLINK: return "NFS3ERR_MLINK";
	case NFS3ERR_NAMETOOLONG: return "NFS3ERR_NAMETOOLONG";
	case NFS3ERR_NOTEMPTY: return "NFS3ERR_NOTEMPTY";
	case NFS3ERR_DQUOT: return "NFS3ERR_DQUOT";
	case NFS3ERR_STALE: return "NFS3ERR_STALE";
	case NFS3ERR_REMOTE: return "NFS3ERR_REMOTE";
	case NFS3ERR_BADHANDLE: return "NFS3ERR_BADHANDLE";
	case NFS3ERR_NOT_SYNC: return "NFS3ERR_NOT_SYNC";
	case NFS3ERR_BAD_COOKIE: return "NFS3ERR_BAD_COOKIE";
	case NFS3ERR_NOTSUPP: return "NFS3ERR_NOTSUPP";
	case NFS3ERR_TOOSMALL: return "NFS3ERR_TOOSMALL";
	case NFS3ERR_SERVERFAULT: return "NFS3ERR_SERVERFAULT";
	case NFS3ERR_BADTYPE: return "NFS3ERR_BADTYPE";
	case NFS3ERR_JUKEBOX: return "NFS3ERR_JUKEBOX";
	}
	return "an unknown NFS status";
}

static const char *mountstat3_name(mountstat3 s)
{
	switch (s) {
	case MNT3_OK: return "MNT3_OK";
	case MNT3ERR_PERM: return "MNT3ERR_PERM";
	case MNT3ERR_NOENT: return "MNT3ERR_NOENT";
	case MNT3ERR_IO: return "MNT3ERR_IO";
	case MNT3ERR_ACCES: return "MNT3ERR_ACCES";
	case MNT3ERR_NOTDIR: return "MNT3ERR_NOTDIR";
	case MNT3ERR_INVAL: return "MNT3ERR_INVAL";
	case MNT3ERR_NAMETOOLONG: return "MNT3ERR_NAMETOOLONG";
	case MNT3ERR_NOTSUPP: return "MNT3ERR_NOTSUPP";
	case MNT3ERR_SERVERFAULT: return "MNT3ERR_SERVERFAULT";
	}
	return "an unknown MOUNT status";
}

/* An RPC that did not complete: clnt_sperror's words, and ours where there are more. */
static int rpc_fail(CLIENT *cl, const char *what)
{
	const char *more = rpcrdma_clnt_errtext(cl);

	failf("%s: %s%s%s", what, clnt_sperror(cl, ""), *more ? ": " : "", more);
	return -1;
}

/* An asynchronous call that did not complete. */
static int async_fail(CLIENT *cl, const char *what, enum clnt_stat st)
{
	const char *more = rpcrdma_clnt_errtext(cl);

	failf("%s: %s%s%s", what, clnt_sperrno(st), *more ? ": " : "", more);
	return -1;
}

static int nfs_fail(const char *what, const char *name, nfsstat3 s)
{
	return failf("%s %s: %s", what, name, nfsstat3_name(s));
}

/* ---- arguments ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nfs3cp [--provider P] [--port N] [--mount-port N] [--chunk BYTES]\n"
		"              [--depth N] [--quiet] SRC DST\n"
		"       nfs3cp [--provider P] [--port N] [--mount-port N] [--readdir] --list "
		"HOST:/export/dir\n"
		"exactly one of SRC and DST is HOST:/export/path/file (IPv6: [ADDR]:/path)\n"
		"  --provider P    RDMA provider: verbs (InfiniBand, RoCE, iWARP), tcp, shm\n"
		"                  (default: $RPCRDMA_PROVIDER, else tcp)\n"
		"  --port N        NFS/RDMA port (default: rpcbind's netid rdma, else 20049)\n"
		"  --mount-port N  MOUNT v3 over TCP (default: asked of rpcbind)\n"
		"  --chunk BYTES   bytes per READ or WRITE (default 1m; at most the server's\n"
		"                  rtmax/wtmax, which FSINFO gives)\n"
		"  --depth N       READs or WRITEs in flight (default 8, at most 64)\n"
		"  --list          list a directory with READDIRPLUS (--readdir: READDIR)\n");
}

/* ---- MOUNT v3 over TCP ---- */

static CLIENT *mount_client(const char *host, uint32_t port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct netconfig *nc;
	struct netbuf nb;
	char serv[12];
	CLIENT *cl;

	if (!port)
		return clnt_create(host, MOUNT_PROGRAM, MOUNT_V3, "tcp");
	snprintf(serv, sizeof(serv), "%u", port);
	if (getaddrinfo(host, serv, &hints, &ai)) {
		failf("MOUNT: cannot resolve %s", host);
		return NULL;
	}
	nc = getnetconfigent(ai->ai_family == AF_INET6 ? "tcp6" : "tcp");
	nb.buf = ai->ai_addr;
	nb.len = nb.maxlen = ai->ai_addrlen;
	cl = nc ? clnt_tli_create(RPC_ANYFD, nc, &nb, MOUNT_PROGRAM, MOUNT_V3, 0, 0) : NULL;
	if (nc)
		freenetconfigent(nc);
	freeaddrinfo(ai);
	return cl;
}

/* The export holding path: the longest one in the server's list that is path or one of
 * its parent directories. */
static int pick_export(CLIENT *mc, const char *path, char *out, size_t cap)
{
	exports3 ex = NULL, e;
	size_t best = 0;

	if (mountproc3_export_3(NULL, &ex, mc) != RPC_SUCCESS)
		return rpc_fail(mc, "MOUNT EXPORT");
	for (e = ex; e; e = e->ex_next) {
		size_t n = strlen(e->ex_dir);

		while (n > 1 && e->ex_dir[n - 1] == '/')
			n--;
		if (n > best && n < cap && !strncmp(path, e->ex_dir, n) &&
		    (path[n] == '/' || path[n] == 0 || n == 1)) {
			best = n;
			memcpy(out, e->ex_dir, n);
			out[n] = 0;
		}
	}
	xdr_free((xdrproc_t)xdr_exports3, (char *)&ex);
	if (!best)
		return failf("MOUNT: no export of the server holds %s", path);
	return 0;
}

/* Without --mount-port, MOUNT's port comes from the server's rpcbind (port 111); a
 * server without one (nfs3d with no rpcbind running) refuses that connection, which
 * libtirpc reports as a bare "Connection refused". -1. */
static int mount_hint(uint32_t mount_port)
{
	if (!mount_port)
		fprintf(stderr, "nfs3cp: MOUNT's port is asked of the server's rpcbind (port 111); "
				"if the server runs none, give the port its MOUNT service "
				"listens on: --mount-port N (nfs3d prints it)\n");
	return -1;
}

/* The root handle of the export holding path; *rest: what is left of path below it. */
static int mount_root(const struct remote *r, const struct opts *o, nfs_fh3 *root,
		      const char **rest)
{
	char export[MNTPATHLEN3 + 1];
	dirpath3 dp = export;
	mountres3 res;
	CLIENT *mc = mount_client(r->host, o->mount_port);
	int rc = -1;

	if (!mc) {
		char what[300], *e;

		snprintf(what, sizeof(what), "MOUNT v3 over TCP at %s", r->host);
		e = clnt_spcreateerror(what);
		e[strcspn(e, "\n")] = 0;
		failf("%s", e);
		return mount_hint(o->mount_port);
	}
	auth_destroy(mc->cl_auth);
	mc->cl_auth = authunix_create_default();
	if (pick_export(mc, r->path, export, sizeof(export)))
		goto out_destroy;
	memset(&res, 0, sizeof(res));
	if (mountproc3_mnt_3(&dp, &res, mc) != RPC_SUCCESS) {
		rpc_fail(mc, "MOUNT MNT");
		goto out_destroy;
	}
	if (res.fhs_status != MNT3_OK) {
		failf("MOUNT MNT %s: %s", export, mountstat3_name(res.fhs_status));
	} else {
		fhandle3 *fh = &res.mountres3_u.mountinfo.fhandle;

		root->data.data_len = fh->fhandle3_len;
		root->data.data_val = malloc(fh->fhandle3_len ? fh->fhandle3_len : 1);
		memcpy(root->data.data_val, fh->fhandle3_val, fh->fhandle3_len);
		*rest = r->path + strlen(export);
		rc = 0;
	}
	xdr_free((xdrproc_t)xdr_mountres3, (char *)&res);
out_destroy:
	auth_destroy(mc->cl_auth);
	clnt_destroy(mc);
	return rc;
}

/* ---- NFS over RDMA ---- */

static int nfs_open(struct nfs *n, const struct remote *r, const struct opts *o)
{
	struct rpcrdma_clnt_opts co;
	struct timeval tv = { CALL_TIMEOUT_S, 0 };

	memset(&co, 0, sizeof(co));
	co.provider = o->cp.provider;
	co.port = o->cp.port;
	n->host = r->host;
	n->cl = clnt_rdma_create(r->host, NFS_PROGRAM, NFS_V3, &co);
	if (!n->cl)
		return failf("NFS over RDMA at %s: %s", r->host, rpcrdma_create_errtext());
	clnt_control(n->cl, CLSET_TIMEOUT, (char *)&tv);
	auth_destroy(n->cl->cl_auth);
	n->cl->cl_auth = authunix_create_default();
	return 0;
}

static void nfs_close(struct nfs *n)
{
	if (!n->cl)
		return;
	auth_destroy(n->cl->cl_auth);
	clnt_destroy(n->cl);
	n->cl = NULL;
}

static void fh_copy(nfs_fh3 *dst, const nfs_fh3 *src)
{
	free(dst->data.data_val);
	dst->data.data_len = src->data.data_len;
	dst->data.data_val = malloc(src->data.data_len ? src->data.data_len : 1);
	memcpy(dst->data.data_val, src->data.data_val, src->data.data_len);
}

/* LOOKUP of one name in dir: 1 found (*out set), 0 not there, -1 another failure. */
static int lookup(struct nfs *n, const nfs_fh3 *dir, const char *name, nfs_fh3 *out)
{
	LOOKUP3args a;
	LOOKUP3res res;
	int rc;

	a.what.dir = *dir;
	a.what.name = (char *)name;
	memset(&res, 0, sizeof(res));
	if (nfsproc3_lookup_3(&a, &res, n->cl) != RPC_SUCCESS)
		return rpc_fail(n->cl, "LOOKUP");
	rc = res.status == NFS3_OK ? 1 : res.status == NFS3ERR_NOENT ? 0 : -1;
	if (rc == 1)
		fh_copy(out, &res.LOOKUP3res_u.resok.object);
	else if (rc < 0)
		nfs_fail("LOOKUP", name, res.status);
	xdr_free((xdrproc_t)xdr_LOOKUP3res, (char *)&res);
	return rc;
}

/* Walk path (relative to the export's root) with LOOKUP; stop before the last name when
 * last is given (it gets that name). */
static int walk(struct nfs *n, const char *path, nfs_fh3 *out, char *last, size_t cap)
{
	char buf[MNTPATHLEN3 + 1], *save = NULL, *tok, *next;

	snprintf(buf, sizeof(buf), "%s", path);
	fh_copy(out, &n->root);
	if (last)
		last[0] = 0;
	for (tok = strtok_r(buf, "/", &save); tok; tok = next) {
		next = strtok_r(NULL, "/", &save);
		if (last && !next) {
			if (strlen(tok) >= cap)
				return failf("%s: name too long", tok);
			strcpy(last, tok);
			return 0;
		}
		int found = lookup(n, out, tok, out);

		if (found != 1)
			return found < 0 ? -1 : failf("LOOKUP %s: NFS3ERR_NOENT", tok);
	}
	if (last)
		return failf("%s: names a directory, not a file", path);
	return 0;
}

static int getattr(struct nfs *n, const nfs_fh3 *fh, const char *name, fattr3 *out)
{
	GETATTR3args a = { *fh };
	GETATTR3res res;
	int rc = 0;

	memset(&res, 0, sizeof(res));
	if (nfsproc3_getattr_3(&a, &res, n->cl) != RPC_SUCCESS)
		return rpc_fail(n->cl, "GETATTR");
	if (res.status != NFS3_OK)
		rc = nfs_fail("GETATTR", name, res.status);
	else
		*out = res.GETATTR3res_u.resok.obj_attributes;
	xdr_free((xdrproc_t)xdr_GETATTR3res, (char *)&res);
	return rc;
}

/* rtmax and wtmax: the largest READ and WRITE the server takes (knfsd answers a larger
 * one with ERR_CHUNK over RDMA). */
static int fsinfo(struct nfs *n)
{
	FSINFO3args a = { n->root };
	FSINFO3res res;
	int rc = 0;

	memset(&res, 0, sizeof(res));
	if (nfsproc3_fsinfo_3(&a, &res, n->cl) != RPC_SUCCESS)
		return rpc_fail(n->cl, "FSINFO");
	if (res.status != NFS3_OK) {
		rc = nfs_fail("FSINFO", "/", res.status);
	} else {
		n->rtmax = res.FSINFO3res_u.resok.rtmax;
		n->wtmax = res.FSINFO3res_u.resok.wtmax;
	}
	xdr_free((xdrproc_t)xdr_FSINFO3res, (char *)&res);
	return rc;
}

static uint32_t io_size(uint32_t want, uint32_t server_max)
{
	uint32_t n = server_max && server_max < want ? server_max : want;

	return n >= 4096 ? n & ~4095u : n ? n : 4096;   /* whole pages where it can */
}

/* ---- reading: READs in flight, each landing in its own buffer ---- */

struct slot {
	int busy, done;
	enum clnt_stat st;
	uint64_t off;
	uint32_t len;
	char *buf;
	union {
		READ3args ra;
		WRITE3args wa;
	} a;
	union {
		READ3res rr;
		WRITE3res wr;
	} r;
};

static void slot_done(void *ctx, enum clnt_stat st)
{
	struct slot *s = ctx;

	s->st = st;
	s->done = 1;
}

/* Wait until slot s has its answer; it is free again after that. */
static int slot_wait(struct nfs *n, struct slot *s, const char *what)
{
	while (!s->done)
		rpcrdma_clnt_progress(n->cl, 1000);
	s->busy = 0;
	return s->st == RPC_SUCCESS ? 0 : async_fail(n->cl, what, s->st);
}

static int read_issue(struct nfs *n, struct slot *s, const nfs_fh3 *fh, uint64_t off, uint32_t len)
{
	struct rpcrdma_ddp_bufs b = { 1, { { s->buf, len } } };

	s->busy = 1;
	s->done = 0;
	s->off = off;
	s->len = len;
	s->a.ra.file = *fh;
	s->a.ra.offset = off;
	s->a.ra.count = len;
	memset(&s->r.rr, 0, sizeof(s->r.rr));
	/* the data lands in s->buf directly: the write chunk is that buffer (RFC 8267) */
	clnt_control(n->cl, RPCRDMA_CLSET_DDP_BUFS, (char *)&b);
	if (rpcrdma_clnt_call_async(n->cl, NFSPROC3_READ, (xdrproc_t)xdr_READ3args, &s->a.ra,
				    (xdrproc_t)xdr_READ3res, &s->r.rr, slot_done, s))
		return rpc_fail(n->cl, "READ");
	return 0;
}

/* The READ in s answered: its bytes written at their offset; *n_got says how many, *eof
 * whether the server said the file ends there. */
static int read_finish(struct nfs *n, struct slot *s, int fd, const char *name, uint32_t *n_got,
		       int *eof)
{
	READ3resok *ok = &s->r.rr.READ3res_u.resok;
	int rc = 0;

	if (slot_wait(n, s, "READ"))
		return -1;
	if (s->r.rr.status != NFS3_OK) {
		rc = nfs_fail("READ", name, s->r.rr.status);
	} else if (ok->data.data_len > s->len) {
		rc = failf("READ %s: %u bytes answered for %u asked", name, ok->data.data_len, s->len);
	} else if (ok->data.data_len &&
		   pwrite(fd, ok->data.data_val, ok->data.data_len, (off_t)s->off) !=
			   (ssize_t)ok->data.data_len) {
		rc = failf("writing the local file: %s", strerror(errno));
	} else {
		*n_got = ok->data.data_len;
		*eof = ok->eof;
	}
	if (ok->data.data_val == s->buf)
		ok->data.data_val = NULL;   /* ours, not the decoder's */
	xdr_free((xdrproc_t)xdr_READ3res, (char *)&s->r.rr);
	return rc;
}

/* The slots' buffers are one block, handed to the client as long-lived memory: over
 * verbs each READ's write chunk and each WRITE's read chunk is then a memory window bound
 * for that call, not a registration of its own (docs/RPC.md, "Long-lived memory"). Where
 * it cannot be added, calls register as without. */
static struct slot *slots_new(struct nfs *n, uint32_t depth, uint32_t chunk)
{
	struct slot *s = calloc(depth, sizeof(*s));
	struct rpcrdma_mem m = { NULL, (size_t)depth * chunk };
	uint32_t i;

	if (!s || posix_memalign(&m.addr, 4096, m.len)) {
		free(s);
		return NULL;
	}
	for (i = 0; i < depth; i++)
		s[i].buf = (char *)m.addr + (size_t)i * chunk;
	clnt_control(n->cl, RPCRDMA_CLSET_MEM_ADD, (char *)&m);
	return s;
}

static void slots_free(struct nfs *n, struct slot *s)
{
	struct rpcrdma_mem m = { s ? s[0].buf : NULL, 0 };

	if (!s)
		return;
	clnt_control(n->cl, RPCRDMA_CLSET_MEM_REMOVE, (char *)&m);
	free(s[0].buf);
	free(s);
}

/* Wait out whatever is still in flight (after a failure): the calls' arguments and
 * buffers must outlive them. */
static void slots_drain(struct nfs *n, struct slot *s, uint32_t depth, xdrproc_t xres)
{
	uint32_t i;

	for (i = 0; s && i < depth; i++) {
		if (!s[i].busy)
			continue;
		while (!s[i].done)
			rpcrdma_clnt_progress(n->cl, 1000);
		s[i].busy = 0;
		if (s[i].st == RPC_SUCCESS)
			xdr_free(xres, (char *)&s[i].r);
	}
}

static int copy_from(struct nfs *n, const char *path, const char *local, const struct opts *o)
{
	uint32_t chunk = io_size(o->cp.chunk, n->rtmax), i;
	nfs_fh3 fh = { { 0, NULL } };
	struct slot *s = NULL;
	uint64_t size, off = 0, got = 0;
	uint32_t inflight = 0;
	fattr3 at;
	int fd = -1, eof = 0, rc = -1;

	if (walk(n, path, &fh, NULL, 0) || getattr(n, &fh, path, &at))
		goto out_free;
	if (at.type != NF3REG) {
		failf("%s: not a regular file", path);
		goto out_free;
	}
	size = at.size;
	fd = open(local, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		failf("%s: %s", local, strerror(errno));
		goto out_free;
	}
	s = slots_new(n, o->cp.depth, chunk);
	if (!s) {
		failf("out of memory");
		goto out_close;
	}
	/* READs of [0, size) in flight on the depth's slots, taken back in turn; a short one
	 * before the end is asked again for the rest */
	for (i = 0; off < size || inflight; i = (i + 1) % o->cp.depth) {
		if (s[i].busy) {
			uint64_t from = s[i].off;
			uint32_t want = s[i].len, n_got = 0;

			inflight--;
			if (read_finish(n, &s[i], fd, path, &n_got, &eof))
				goto out_drain;
			got += n_got;
			if (n_got < want && eof) {
				failf("%s: the file ends at %llu, GETATTR said %llu bytes", path,
				      (unsigned long long)(from + n_got), (unsigned long long)size);
				goto out_drain;
			}
			/* asked again only while the server makes progress: a READ of nothing
			 * that is not the end would be asked for ever */
			if (!n_got) {
				failf("READ %s at %llu: no data and no end of file", path,
				      (unsigned long long)from);
				goto out_drain;
			}
			if (n_got < want) {
				if (read_issue(n, &s[i], &fh, from + n_got, want - n_got))
					goto out_drain;
				inflight++;
				continue;
			}
		}
		if (off < size) {
			uint32_t len = size - off < chunk ? (uint32_t)(size - off) : chunk;

			if (read_issue(n, &s[i], &fh, off, len))
				goto out_drain;
			inflight++;
			off += len;
		}
	}
	if (fsync(fd)) {
		failf("%s: %s", local, strerror(errno));
		goto out_drain;
	}
	if (!o->cp.quiet)
		printf("read %llu bytes from %s:%s (READ of %u bytes, %u in flight)\n",
		       (unsigned long long)got, n->host, path, chunk, o->cp.depth);
	rc = 0;
out_drain:
	slots_drain(n, s, o->cp.depth, (xdrproc_t)xdr_READ3res);
	slots_free(n, s);
out_close:
	if (close(fd) && !rc)
		rc = failf("%s: %s", local, strerror(errno));
out_free:
	free(fh.data.data_val);
	return rc;
}

/* ---- writing: WRITE UNSTABLE in flight, then COMMIT ---- */

/* The file to write: LOOKUP'd and truncated to 0, or CREATE'd (UNCHECKED, mode 0644). */
static int open_target(struct nfs *n, const char *path, nfs_fh3 *fh)
{
	char name[NAME_MAX + 1];
	nfs_fh3 dir = { { 0, NULL } };
	int found, rc = -1;

	if (walk(n, path, &dir, name, sizeof(name)))
		goto out_free;
	found = lookup(n, &dir, name, fh);
	if (found < 0)
		goto out_free;
	if (found) {
		SETATTR3args a;
		SETATTR3res res;

		memset(&a, 0, sizeof(a));
		a.object = *fh;
		a.new_attributes.size.set_it = TRUE;
		a.new_attributes.size.set_size3_u.size = 0;
		memset(&res, 0, sizeof(res));
		if (nfsproc3_setattr_3(&a, &res, n->cl) != RPC_SUCCESS) {
			rpc_fail(n->cl, "SETATTR");
			goto out_free;
		}
		rc = res.status == NFS3_OK ? 0 : nfs_fail("SETATTR (truncate)", path, res.status);
		xdr_free((xdrproc_t)xdr_SETATTR3res, (char *)&res);
	} else {
		CREATE3args a;
		CREATE3res res;

		memset(&a, 0, sizeof(a));
		a.where.dir = dir;
		a.where.name = name;
		a.how.mode = UNCHECKED;
		a.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
		a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
		memset(&res, 0, sizeof(res));
		if (nfsproc3_create_3(&a, &res, n->cl) != RPC_SUCCESS) {
			rpc_fail(n->cl, "CREATE");
			goto out_free;
		}
		if (res.status != NFS3_OK)
			nfs_fail("CREATE", path, res.status);
		else if (!res.CREATE3res_u.resok.obj.handle_follows)
			rc = lookup(n, &dir, name, fh) == 1 ? 0 : -1;
		else
			fh_copy(fh, &res.CREATE3res_u.resok.obj.post_op_fh3_u.handle), rc = 0;
		xdr_free((xdrproc_t)xdr_CREATE3res, (char *)&res);
	}
out_free:
	free(dir.data.data_val);
	return rc;
}

static int write_issue(struct nfs *n, struct slot *s, const nfs_fh3 *fh, int fd, uint64_t off,
		       uint32_t len)
{
	ssize_t got = pread(fd, s->buf, len, (off_t)off);

	if (got != (ssize_t)len)
		return failf("reading the local file: %s", got < 0 ? strerror(errno) : "it shrank");
	s->busy = 1;
	s->done = 0;
	s->off = off;
	s->len = len;
	memset(&s->a.wa, 0, sizeof(s->a.wa));
	s->a.wa.file = *fh;
	s->a.wa.offset = off;
	s->a.wa.count = len;
	s->a.wa.stable = UNSTABLE;
	s->a.wa.data.data_len = len;
	s->a.wa.data.data_val = s->buf;   /* goes as a read chunk, from this buffer */
	memset(&s->r.wr, 0, sizeof(s->r.wr));
	if (rpcrdma_clnt_call_async(n->cl, NFSPROC3_WRITE, (xdrproc_t)xdr_WRITE3args, &s->a.wa,
				    (xdrproc_t)xdr_WRITE3res, &s->r.wr, slot_done, s))
		return rpc_fail(n->cl, "WRITE");
	return 0;
}

/* The WRITE in s answered: all of it taken, and the server's write verifier kept (all
 * WRITEs before a COMMIT must carry the same one, or the server lost them: RFC 1813
 * §3.3.7). */
static int write_finish(struct nfs *n, struct slot *s, const char *name, writeverf3 verf,
			int *have_verf, int *verf_changed)
{
	WRITE3resok *ok = &s->r.wr.WRITE3res_u.resok;
	int rc = 0;

	if (slot_wait(n, s, "WRITE"))
		return -1;
	if (s->r.wr.status != NFS3_OK) {
		rc = nfs_fail("WRITE", name, s->r.wr.status);
	} else if (ok->count != s->len) {
		/* a short WRITE: the rest again, synchronously, is not worth the code here */
		rc = failf("WRITE %s: the server took %u of %u bytes", name, ok->count, s->len);
	} else if (!*have_verf) {
		memcpy(verf, ok->verf, NFS3_WRITEVERFSIZE);
		*have_verf = 1;
	} else if (memcmp(verf, ok->verf, NFS3_WRITEVERFSIZE)) {
		*verf_changed = 1;
	}
	xdr_free((xdrproc_t)xdr_WRITE3res, (char *)&s->r.wr);
	return rc;
}

static int commit(struct nfs *n, const nfs_fh3 *fh, const char *name, writeverf3 verf)
{
	COMMIT3args a = { *fh, 0, 0 };
	COMMIT3res res;
	int rc;

	memset(&res, 0, sizeof(res));
	if (nfsproc3_commit_3(&a, &res, n->cl) != RPC_SUCCESS)
		return rpc_fail(n->cl, "COMMIT");
	rc = res.status != NFS3_OK ? nfs_fail("COMMIT", name, res.status)
	     : memcmp(verf, res.COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE) ? 1 : 0;
	xdr_free((xdrproc_t)xdr_COMMIT3res, (char *)&res);
	return rc;
}

/* One pass: every byte written UNSTABLE, then COMMIT. 1: the server's verifier changed
 * (it restarted and may have lost data), so the pass must be made again. */
static int write_pass(struct nfs *n, const nfs_fh3 *fh, const char *path, int fd, uint64_t size,
		      uint32_t chunk, struct slot *s, uint32_t depth)
{
	writeverf3 verf;
	int have_verf = 0, changed = 0, rc = 0;
	uint64_t off = 0;
	uint32_t i, inflight = 0;

	for (i = 0; off < size || inflight; i = (i + 1) % depth) {
		if (s[i].busy) {
			inflight--;
			if ((rc = write_finish(n, &s[i], path, verf, &have_verf, &changed)))
				break;
		}
		if (off < size) {
			uint32_t len = size - off < chunk ? (uint32_t)(size - off) : chunk;

			if ((rc = write_issue(n, &s[i], fh, fd, off, len)))
				break;
			inflight++;
			off += len;
		}
	}
	if (rc) {
		slots_drain(n, s, depth, (xdrproc_t)xdr_WRITE3res);
		return -1;
	}
	if (!have_verf)
		return 0;   /* nothing was written: nothing to commit */
	rc = commit(n, fh, path, verf);
	return rc < 0 ? -1 : rc || changed;
}

static int copy_to(struct nfs *n, const char *local, const char *path, const struct opts *o)
{
	uint32_t chunk = io_size(o->cp.chunk, n->wtmax);
	nfs_fh3 fh = { { 0, NULL } };
	struct slot *s = NULL;
	struct stat st;
	fattr3 at;
	int fd, rc = -1, pass;

	fd = open(local, O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		failf("%s: %s", local, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		failf("%s: not a regular file", local);
		goto out_close;
	}
	if (open_target(n, path, &fh))
		goto out_close;
	s = slots_new(n, o->cp.depth, chunk);
	if (!s) {
		failf("out of memory");
		goto out_close;
	}
	for (pass = 0; pass < 3; pass++) {
		rc = write_pass(n, &fh, path, fd, (uint64_t)st.st_size, chunk, s, o->cp.depth);
		if (rc <= 0)
			break;
		fprintf(stderr, "nfs3cp: the server's write verifier changed (it restarted): "
				"writing %s again\n", path);
	}
	if (rc > 0)
		rc = failf("COMMIT %s: the server's write verifier kept changing", path);
	if (!rc && getattr(n, &fh, path, &at))
		rc = -1;
	if (!rc && at.size != (uint64_t)st.st_size)
		rc = failf("%s: GETATTR says %llu bytes after writing %llu", path,
			   (unsigned long long)at.size, (unsigned long long)st.st_size);
	if (!rc && !o->cp.quiet)
		printf("wrote %llu bytes to %s:%s (WRITE of %u bytes, %u in flight, COMMIT)\n",
		       (unsigned long long)st.st_size, n->host, path, chunk, o->cp.depth);
	slots_free(n, s);
out_close:
	if (fd >= 0)
		close(fd);
	free(fh.data.data_val);
	return rc;
}

/* ---- listing: READDIRPLUS (or READDIR) until eof; the long replies come in reply
 * chunks ---- */

#define DIR_COUNT 8192u
#define DIR_MAXCOUNT 65536u

static int list_plus(struct nfs *n, const nfs_fh3 *dir, const char *path, unsigned long *count)
{
	READDIRPLUS3args a;
	READDIRPLUS3res res;
	int eof = 0, rc = 0;

	memset(&a, 0, sizeof(a));
	a.dir = *dir;
	a.dircount = DIR_COUNT;
	a.maxcount = DIR_MAXCOUNT;
	while (!eof && !rc) {
		entryplus3 *e;

		memset(&res, 0, sizeof(res));
		if (nfsproc3_readdirplus_3(&a, &res, n->cl) != RPC_SUCCESS)
			return rpc_fail(n->cl, "READDIRPLUS");
		if (res.status != NFS3_OK) {
			rc = nfs_fail("READDIRPLUS", path, res.status);
		} else {
			for (e = res.READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
				fattr3 *at = &e->name_attributes.post_op_attr_u.attributes;

				if (e->name_attributes.attributes_follow)
					printf("%c %12llu %s\n", at->type == NF3DIR ? 'd' : at->type == NF3LNK ? 'l' : '-',
					       (unsigned long long)at->size, e->name);
				else
					printf("? %12s %s\n", "", e->name);
				a.cookie = e->cookie;
				(*count)++;
			}
			memcpy(a.cookieverf, res.READDIRPLUS3res_u.resok.cookieverf, NFS3_COOKIEVERFSIZE);
			eof = res.READDIRPLUS3res_u.resok.reply.eof;
			/* no entry and no end: the same cookie would be asked for ever */
			if (!eof && !res.READDIRPLUS3res_u.resok.reply.entries)
				rc = failf("READDIRPLUS %s: no entries and no end of directory", path);
		}
		xdr_free((xdrproc_t)xdr_READDIRPLUS3res, (char *)&res);
	}
	return rc;
}

static int list_plain(struct nfs *n, const nfs_fh3 *dir, const char *path, unsigned long *count)
{
	READDIR3args a;
	READDIR3res res;
	int eof = 0, rc = 0;

	memset(&a, 0, sizeof(a));
	a.dir = *dir;
	a.count = DIR_MAXCOUNT;
	while (!eof && !rc) {
		entry3 *e;

		memset(&res, 0, sizeof(res));
		if (nfsproc3_readdir_3(&a, &res, n->cl) != RPC_SUCCESS)
			return rpc_fail(n->cl, "READDIR");
		if (res.status != NFS3_OK) {
			rc = nfs_fail("READDIR", path, res.status);
		} else {
			for (e = res.READDIR3res_u.resok.reply.entries; e; e = e->nextentry) {
				printf("%s\n", e->name);
				a.cookie = e->cookie;
				(*count)++;
			}
			memcpy(a.cookieverf, res.READDIR3res_u.resok.cookieverf, NFS3_COOKIEVERFSIZE);
			eof = res.READDIR3res_u.resok.reply.eof;
			/* no entry and no end: the same cookie would be asked for ever */
			if (!eof && !res.READDIR3res_u.resok.reply.entries)
				rc = failf("READDIR %s: no entries and no end of directory", path);
		}
		xdr_free((xdrproc_t)xdr_READDIR3res, (char *)&res);
	}
	return rc;
}

/* full: the directory as the user named it (path is what is left below the export) */
static int list(struct nfs *n, const char *path, const char *full, const struct opts *o)
{
	nfs_fh3 dir = { { 0, NULL } };
	unsigned long count = 0;
	int rc = walk(n, path, &dir, NULL, 0);

	if (!rc)
		rc = o->plain_readdir ? list_plain(n, &dir, path, &count)
				      : list_plus(n, &dir, path, &count);
	if (!rc && !o->cp.quiet)
		fprintf(stderr, "nfs3cp: %lu entries in %s:%s (%s)\n", count, n->host, full,
			o->plain_readdir ? "READDIR" : "READDIRPLUS");
	free(dir.data.data_val);
	return rc;
}

/* ---- main ---- */

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		CP_LONG_OPTIONS,
		{ "mount-port", required_argument, NULL, 'm' },
		{ "readdir", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	memset(o, 0, sizeof(*o));
	cp_opts_init(&o->cp);
	while ((c = getopt_long(argc, argv, "q", lo, NULL)) != -1) {
		rc = cp_opt("nfs3cp", c, optarg, DEPTH_MAX, &o->cp);
		if (rc < 0)
			return -1;
		if (rc)
			continue;
		switch (c) {
		case 'm':
			if (cp_parse_u32(optarg, 1, 65535, &o->mount_port))
				return failf("--mount-port: '%s' is not a port (1-65535)", optarg);
			break;
		case 'r': o->plain_readdir = 1; break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct remote src, dst;
	struct nfs n = { 0 };
	struct opts o;
	const char *rest = "";
	int rs, rd, rc;

	if (parse_args(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	argc -= optind;
	argv += optind;
	if (argc != (o.cp.list ? 1 : 2)) {
		usage(stderr);
		return 2;
	}
	rs = cp_parse_remote(argv[0], src.host, sizeof(src.host), src.path, sizeof(src.path));
	rd = o.cp.list ? 0
		    : cp_parse_remote(argv[1], dst.host, sizeof(dst.host), dst.path, sizeof(dst.path));
	if (rs < 0 || rd < 0) {
		failf("a host or path too long");
		return 2;
	}
	if (rs + rd != 1 || (o.cp.list && !rs)) {
		failf(o.cp.list ? "--list takes HOST:/export/dir"
			     : "exactly one of SRC and DST must be HOST:/export/path/file");
		return 2;
	}
	if (rpcrdma_ulb_register(rpcrdma_ulb_nfs3())) {
		failf("cannot register the NFSv3 binding");
		return 1;
	}
	rc = mount_root(rs ? &src : &dst, &o, &n.root, &rest);
	if (!rc)
		rc = nfs_open(&n, rs ? &src : &dst, &o);
	if (!rc)
		rc = fsinfo(&n);
	if (!rc)
		rc = o.cp.list ? list(&n, rest, src.path, &o)
		     : rs   ? copy_from(&n, rest, argv[1], &o)
			    : copy_to(&n, argv[0], rest, &o);
	nfs_close(&n);
	free(n.root.data.data_val);
	return rc ? 1 : 0;
}
