/* SPDX-License-Identifier: BSD-2-Clause */
/* Checks nfs3d (examples/nfs3d) as a client, over ONC RPC/TCP or RPC-over-RDMA,
 * and every answer against the exported directory itself, which this program reads too:
 *   check_nfs3d onc|PROVIDER HOST NFS_PORT MOUNT_PORT DIR            the whole check
 *   check_nfs3d onc|PROVIDER HOST NFS_PORT MOUNT_PORT DIR save FILE  a handle into FILE
 *   check_nfs3d onc|PROVIDER HOST NFS_PORT MOUNT_PORT DIR reuse FILE that handle works
 * (onc: ONC RPC over TCP; PROVIDER: an RDMA provider, tcp, shm or verbs). Runs as root: it forges a handle
 * of a file outside DIR with name_to_handle_at(). Exit 0: every check passed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mount3.h"
#include "nfs3_prot.h"
#include "rpcrdma/nfs3.h"
#include "check_nfs3d.h"

CLIENT *cl;
int onc;   /* cl is ONC RPC over TCP (else RPC-over-RDMA) */
const char *dir;
int failures;

struct timeval tmo = { 60, 0 };

/* xdr_void() as an xdrproc_t (libtirpc declares it without arguments) */
bool_t x_void(XDR *x, void *p)
{
	(void)x;
	(void)p;
	return TRUE;
}

CLIENT *tcp_client(const char *host, unsigned port, rpcprog_t prog, rpcvers_t vers)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct netconfig *nc;
	struct netbuf nb;
	char serv[12];
	CLIENT *c = NULL;

	snprintf(serv, sizeof(serv), "%u", port);
	if (getaddrinfo(host, serv, &hints, &ai))
		return NULL;
	nc = getnetconfigent(ai->ai_family == AF_INET6 ? "tcp6" : "tcp");
	nb.buf = ai->ai_addr;
	nb.len = nb.maxlen = ai->ai_addrlen;
	if (nc)
		c = clnt_tli_create(RPC_ANYFD, nc, &nb, prog, vers, 0, 0);
	if (nc)
		freenetconfigent(nc);
	freeaddrinfo(ai);
	if (c) {
		auth_destroy(c->cl_auth);
		c->cl_auth = authunix_create_default();
	}
	return c;
}

static CLIENT *nfs_client(const char *how, const char *host, unsigned port)
{
	struct rpcrdma_clnt_opts o;
	CLIENT *c;

	onc = !strcmp(how, "onc");
	if (onc)
		return tcp_client(host, port, NFS_PROGRAM, NFS_V3);
	memset(&o, 0, sizeof(o));
	o.provider = how;
	o.port = port;
	c = clnt_rdma_create(host, NFS_PROGRAM, NFS_V3, &o);
	if (!c)
		fprintf(stderr, "check_nfs3d: %s\n", rpcrdma_create_errtext());
	else {
		auth_destroy(c->cl_auth);
		c->cl_auth = authunix_create_default();
	}
	return c;
}


static int mount_root(const char *host, unsigned port, nfs_fh3 *root)
{
	CLIENT *mc = tcp_client(host, port, MOUNT_PROGRAM, MOUNT_V3);
	char *path = (char *)dir;
	mountres3 r;

	memset(&r, 0, sizeof(r));
	if (!mc || mountproc3_mnt_3(&path, &r, mc) != RPC_SUCCESS || r.fhs_status != MNT3_OK) {
		fprintf(stderr, "check_nfs3d: MOUNT of %s failed\n", dir);
		if (mc) {
			auth_destroy(mc->cl_auth);
			clnt_destroy(mc);
		}
		return -1;
	}
	root->data.data_len = r.mountres3_u.mountinfo.fhandle.fhandle3_len;
	root->data.data_val = r.mountres3_u.mountinfo.fhandle.fhandle3_val;
	*root = fh_copy(root);
	xdr_free((xdrproc_t)xdr_mountres3, (char *)&r);
	/* a path outside the export is refused */
	path = "/";
	memset(&r, 0, sizeof(r));
	CHECK(mountproc3_mnt_3(&path, &r, mc) == RPC_SUCCESS && r.fhs_status == MNT3ERR_ACCES,
	      "MNT / gave %d", r.fhs_status);
	auth_destroy(mc->cl_auth);
	clnt_destroy(mc);
	return 0;
}

char *local(const char *rel)
{
	static char p[4096];

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return p;
}

/* ---- calls, each returning the nfsstat3 (or -1 for an RPC failure) ---- */

/* Handles copied out of results are kept until the end (free_kept). */
static void *kept[1024];
static unsigned nkept;

nfs_fh3 fh_copy(const nfs_fh3 *f)
{
	nfs_fh3 c;

	c.data.data_len = f->data.data_len;
	c.data.data_val = malloc(f->data.data_len ? f->data.data_len : 1);
	memcpy(c.data.data_val, f->data.data_val, f->data.data_len);
	if (nkept < sizeof(kept) / sizeof(kept[0]))
		kept[nkept++] = c.data.data_val;
	return c;
}

static void free_kept(void)
{
	while (nkept)
		free(kept[--nkept]);
}

int lookup(const nfs_fh3 *d, const char *name, nfs_fh3 *out, fattr3 *attr)
{
	LOOKUP3args a = { { *d, (char *)name } };
	LOOKUP3res r;
	int st;

	memset(&r, 0, sizeof(r));
	if (nfsproc3_lookup_3(&a, &r, cl) != RPC_SUCCESS)
		return -1;
	st = r.status;
	if (!st && out)
		*out = fh_copy(&r.LOOKUP3res_u.resok.object);
	if (!st && attr)
		*attr = r.LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	xdr_free((xdrproc_t)xdr_LOOKUP3res, (char *)&r);
	return st;
}

int getattr(const nfs_fh3 *f, fattr3 *attr)
{
	GETATTR3args a = { *f };
	GETATTR3res r;
	int st;

	memset(&r, 0, sizeof(r));
	if (nfsproc3_getattr_3(&a, &r, cl) != RPC_SUCCESS)
		return -1;
	st = r.status;
	if (!st && attr)
		*attr = r.GETATTR3res_u.resok.obj_attributes;
	return st;
}

int create(const nfs_fh3 *d, const char *name, createmode3 mode, const char *verf,
		  nfs_fh3 *out)
{
	CREATE3args a;
	CREATE3res r;
	int st;

	memset(&a, 0, sizeof(a));
	memset(&r, 0, sizeof(r));
	a.where.dir = *d;
	a.where.name = (char *)name;
	a.how.mode = mode;
	if (mode == EXCLUSIVE)
		memcpy(a.how.createhow3_u.verf, verf, NFS3_CREATEVERFSIZE);
	else {
		a.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
		a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0640;
	}
	if (nfsproc3_create_3(&a, &r, cl) != RPC_SUCCESS)
		return -1;
	st = r.status;
	CHECK((st ? r.CREATE3res_u.resfail.dir_wcc : r.CREATE3res_u.resok.dir_wcc)
		      .after.attributes_follow, "CREATE %s: no wcc", name);
	if (!st && out) {
		CHECK(r.CREATE3res_u.resok.obj.handle_follows, "CREATE %s: no handle", name);
		*out = fh_copy(&r.CREATE3res_u.resok.obj.post_op_fh3_u.handle);
	}
	xdr_free((xdrproc_t)xdr_CREATE3res, (char *)&r);
	return st;
}

int mkdir3(const nfs_fh3 *d, const char *name, nfs_fh3 *out)
{
	MKDIR3args a;
	MKDIR3res r;
	int st;

	memset(&a, 0, sizeof(a));
	memset(&r, 0, sizeof(r));
	a.where.dir = *d;
	a.where.name = (char *)name;
	a.attributes.mode.set_it = TRUE;
	a.attributes.mode.set_mode3_u.mode = 0750;
	if (nfsproc3_mkdir_3(&a, &r, cl) != RPC_SUCCESS)
		return -1;
	st = r.status;
	if (!st && out)
		*out = fh_copy(&r.MKDIR3res_u.resok.obj.post_op_fh3_u.handle);
	xdr_free((xdrproc_t)xdr_MKDIR3res, (char *)&r);
	return st;
}

int write3(const nfs_fh3 *f, uint64_t off, const char *data, uint32_t len,
		  stable_how how, char *verf)
{
	WRITE3args a = { *f, off, len, how, { len, (char *)data } };
	WRITE3res r;
	int st;

	memset(&r, 0, sizeof(r));
	if (nfsproc3_write_3(&a, &r, cl) != RPC_SUCCESS)
		return -1;
	st = r.status;
	if (!st) {
		CHECK(r.WRITE3res_u.resok.count == len, "WRITE count %u", r.WRITE3res_u.resok.count);
		CHECK(r.WRITE3res_u.resok.committed >= how, "WRITE committed %d < %d",
		      r.WRITE3res_u.resok.committed, how);
		CHECK(r.WRITE3res_u.resok.file_wcc.before.attributes_follow &&
		      r.WRITE3res_u.resok.file_wcc.after.attributes_follow, "WRITE: no wcc data");
		if (verf)
			memcpy(verf, r.WRITE3res_u.resok.verf, NFS3_WRITEVERFSIZE);
	}
	xdr_free((xdrproc_t)xdr_WRITE3res, (char *)&r);
	return st;
}

int read3(const nfs_fh3 *f, uint64_t off, uint32_t count, char *buf, uint32_t *got,
		 bool_t *eof)
{
	READ3args a = { *f, off, count };
	READ3res r;
	int st;

	memset(&r, 0, sizeof(r));
	if (nfsproc3_read_3(&a, &r, cl) != RPC_SUCCESS)
		return -1;
	st = r.status;
	if (!st) {
		*got = r.READ3res_u.resok.data.data_len;
		*eof = r.READ3res_u.resok.eof;
		CHECK(*got <= count, "READ gave %u of %u", *got, count);
		if (*got && *got <= count)
			memcpy(buf, r.READ3res_u.resok.data.data_val, *got);
	}
	xdr_free((xdrproc_t)xdr_READ3res, (char *)&r);
	return st;
}

int dirop(rpcproc_t proc, const nfs_fh3 *d, const char *name)
{
	REMOVE3args a = { { *d, (char *)name } };   /* RMDIR3args has the same form */
	REMOVE3res r;
	int st;

	memset(&r, 0, sizeof(r));
	if (clnt_call(cl, proc, (xdrproc_t)xdr_REMOVE3args, (char *)&a, (xdrproc_t)xdr_REMOVE3res,
		      (char *)&r, tmo) != RPC_SUCCESS)
		return -1;
	st = r.status;
	xdr_free((xdrproc_t)xdr_REMOVE3res, (char *)&r);
	return st;
}

/* ---- READDIR and READDIRPLUS of DIR/work, page by page: the names against the
 * directory's ---- */

static int list_plus(const nfs_fh3 *d, int plus, uint32_t count, int *pages)
{
	cookie3 cookie = 0;
	cookieverf3 cv = { 0 };
	int n = 0, eof = 0;

	*pages = 0;
	while (!eof) {
		if (plus) {
			READDIRPLUS3args a = { *d, cookie, { 0 }, count / 2, count };
			READDIRPLUS3res r;
			entryplus3 *e;

			memcpy(a.cookieverf, cv, sizeof(cv));
			memset(&r, 0, sizeof(r));
			if (nfsproc3_readdirplus_3(&a, &r, cl) != RPC_SUCCESS || r.status)
				return -1;
			for (e = r.READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
				struct stat sb;
				char path[300];

				cookie = e->cookie;
				if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
					continue;
				n++;
				CHECK(e->name_handle.handle_follows &&
				      e->name_attributes.attributes_follow, "READDIRPLUS %s: no "
				      "handle or attributes", e->name);
				snprintf(path, sizeof(path), "work/%s", e->name);
				CHECK(fstatat(AT_FDCWD, local(path), &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
				      e->name_attributes.post_op_attr_u.attributes.fileid == sb.st_ino,
				      "READDIRPLUS %s: not that file", e->name);
			}
			eof = r.READDIRPLUS3res_u.resok.reply.eof;
			xdr_free((xdrproc_t)xdr_READDIRPLUS3res, (char *)&r);
		} else {
			READDIR3args a = { *d, cookie, { 0 }, count };
			READDIR3res r;
			entry3 *e;

			memset(&r, 0, sizeof(r));
			if (nfsproc3_readdir_3(&a, &r, cl) != RPC_SUCCESS || r.status)
				return -1;
			for (e = r.READDIR3res_u.resok.reply.entries; e; e = e->nextentry) {
				cookie = e->cookie;
				n += strcmp(e->name, ".") && strcmp(e->name, "..");
			}
			eof = r.READDIR3res_u.resok.reply.eof;
			xdr_free((xdrproc_t)xdr_READDIR3res, (char *)&r);
		}
		(*pages)++;
	}
	return n;
}

/* ---- a name with a NUL in it, which a C string cannot carry: LOOKUP by hand ---- */

struct raw_lookup {
	nfs_fh3 dir;
	const char *name;
	u_int len;
};

static bool_t xdr_raw_lookup(XDR *x, struct raw_lookup *a)
{
	char *n = (char *)a->name;

	return xdr_nfs_fh3(x, &a->dir) && xdr_bytes(x, &n, &a->len, ~0u);
}

static enum clnt_stat raw_lookup(const nfs_fh3 *d, const char *name, u_int len)
{
	struct raw_lookup a = { *d, name, len };
	LOOKUP3res r;
	enum clnt_stat s;

	memset(&r, 0, sizeof(r));
	s = clnt_call(cl, NFSPROC3_LOOKUP, (xdrproc_t)xdr_raw_lookup, (char *)&a,
		      (xdrproc_t)xdr_LOOKUP3res, (char *)&r, tmo);
	xdr_free((xdrproc_t)xdr_LOOKUP3res, (char *)&r);
	return s;
}

/* ---- the checks ---- */

static void check_files(const nfs_fh3 *root)
{
	nfs_fh3 d, f, f2;
	char verf[8], verf2[8], cverf[8] = "nfs3dchk", *buf = malloc(1 << 20), *back = malloc(1 << 20);
	uint32_t got, i;
	bool_t eof;
	struct stat sb;
	fattr3 at;

	for (i = 0; i < (1u << 20); i++)
		buf[i] = (char)(i * 7 + (i >> 9));
	CHECK(mkdir3(root, "work", &d) == NFS3_OK, "MKDIR work");
	CHECK(stat(local("work"), &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0750,
	      "work is no directory of mode 0750");
	CHECK(mkdir3(root, "work", NULL) == NFS3ERR_EXIST, "MKDIR work again");
	CHECK(create(&d, "f", GUARDED, NULL, &f) == NFS3_OK, "CREATE GUARDED");
	CHECK(create(&d, "f", GUARDED, NULL, NULL) == NFS3ERR_EXIST, "CREATE GUARDED again");
	CHECK(create(&d, "f", UNCHECKED, NULL, NULL) == NFS3_OK, "CREATE UNCHECKED existing");
	CHECK(create(&d, "x", EXCLUSIVE, cverf, &f2) == NFS3_OK, "CREATE EXCLUSIVE");
	CHECK(create(&d, "x", EXCLUSIVE, cverf, NULL) == NFS3_OK, "CREATE EXCLUSIVE resent");
	CHECK(create(&d, "x", EXCLUSIVE, "otherone", NULL) == NFS3ERR_EXIST,
	      "CREATE EXCLUSIVE, another verifier");
	CHECK(create(root, ".", UNCHECKED, NULL, NULL) == NFS3ERR_EXIST, "CREATE .");
	/* 1 MiB FILE_SYNC, then UNSTABLE past it, COMMIT with the same verifier */
	CHECK(write3(&f, 0, buf, 1 << 20, FILE_SYNC, verf) == NFS3_OK, "WRITE FILE_SYNC");
	CHECK(write3(&f, 1 << 20, buf, 4096, UNSTABLE, verf2) == NFS3_OK, "WRITE UNSTABLE");
	CHECK(!memcmp(verf, verf2, 8), "two verifiers from one server run");
	{
		COMMIT3args ca = { f, 0, 0 };
		COMMIT3res cr;

		memset(&cr, 0, sizeof(cr));
		CHECK(nfsproc3_commit_3(&ca, &cr, cl) == RPC_SUCCESS && cr.status == NFS3_OK &&
		      !memcmp(cr.COMMIT3res_u.resok.verf, verf, 8), "COMMIT");
	}
	CHECK(stat(local("work/f"), &sb) == 0 && sb.st_size == (1 << 20) + 4096,
	      "work/f is %lld bytes", (long long)sb.st_size);
	CHECK(read3(&f, 0, 1 << 20, back, &got, &eof) == NFS3_OK && got == (1 << 20) && !eof &&
	      !memcmp(back, buf, got), "READ 1 MiB");
	CHECK(read3(&f, (1 << 20) + 100, 8192, back, &got, &eof) == NFS3_OK && got == 3996 && eof &&
	      !memcmp(back, buf + 100, got), "READ at the end");
	/* SETATTR: size and mode, checked on the directory itself */
	{
		SETATTR3args sa;
		SETATTR3res sr;

		memset(&sa, 0, sizeof(sa));
		memset(&sr, 0, sizeof(sr));
		sa.object = f;
		sa.new_attributes.size.set_it = TRUE;
		sa.new_attributes.size.set_size3_u.size = 1000;
		sa.new_attributes.mode.set_it = TRUE;
		sa.new_attributes.mode.set_mode3_u.mode = 0600;
		CHECK(nfsproc3_setattr_3(&sa, &sr, cl) == RPC_SUCCESS && sr.status == NFS3_OK,
		      "SETATTR");
		CHECK(stat(local("work/f"), &sb) == 0 && sb.st_size == 1000 &&
		      (sb.st_mode & 0777) == 0600, "SETATTR did not reach the file");
		sa.guard.check = TRUE;   /* a ctime that is not the file's */
		CHECK(nfsproc3_setattr_3(&sa, &sr, cl) == RPC_SUCCESS &&
		      sr.status == NFS3ERR_NOT_SYNC, "SETATTR guard: %d", sr.status);
	}
	/* SYMLINK, READLINK; LINK; RENAME */
	{
		SYMLINK3args sa;
		SYMLINK3res sr;
		READLINK3args ra;
		READLINK3res rr;
		LINK3args la = { f, { d, "hard" } };
		LINK3res lr;
		RENAME3args na = { { d, "hard" }, { *root, "moved" } };
		RENAME3res nr;
		char tgt[64];
		nfs_fh3 s;

		memset(&sa, 0, sizeof(sa));
		memset(&sr, 0, sizeof(sr));
		sa.where.dir = d;
		sa.where.name = "ln";
		sa.symlink.symlink_data = "../../../etc/passwd";
		CHECK(nfsproc3_symlink_3(&sa, &sr, cl) == RPC_SUCCESS && sr.status == NFS3_OK,
		      "SYMLINK");
		CHECK(readlink(local("work/ln"), tgt, sizeof(tgt)) == 19 && !memcmp(tgt, "../../../etc/passwd", 19),
		      "work/ln is not that link");
		CHECK(lookup(&d, "ln", &s, &at) == NFS3_OK && at.type == NF3LNK, "LOOKUP ln");
		memset(&rr, 0, sizeof(rr));
		ra.symlink = s;
		CHECK(nfsproc3_readlink_3(&ra, &rr, cl) == RPC_SUCCESS && rr.status == NFS3_OK &&
		      !strcmp(rr.READLINK3res_u.resok.data, "../../../etc/passwd"), "READLINK");
		xdr_free((xdrproc_t)xdr_READLINK3res, (char *)&rr);
		xdr_free((xdrproc_t)xdr_SYMLINK3res, (char *)&sr);
		/* the link is never followed by the server */
		CHECK(lookup(&s, "x", NULL, NULL) == NFS3ERR_NOTDIR, "LOOKUP through a link");
		memset(&lr, 0, sizeof(lr));
		CHECK(nfsproc3_link_3(&la, &lr, cl) == RPC_SUCCESS && lr.status == NFS3_OK, "LINK");
		CHECK(stat(local("work/hard"), &sb) == 0 && sb.st_nlink == 2, "LINK: nlink");
		memset(&nr, 0, sizeof(nr));
		CHECK(nfsproc3_rename_3(&na, &nr, cl) == RPC_SUCCESS && nr.status == NFS3_OK, "RENAME");
		CHECK(access(local("moved"), F_OK) == 0 && access(local("work/hard"), F_OK) < 0,
		      "RENAME did not move it");
	}
	/* a directory of 300 names, listed in pages both ways */
	{
		char name[32];
		int pages, n;

		for (i = 0; i < 300; i++) {
			snprintf(name, sizeof(name), "entry-%03u-%s", i, i % 2 ? "odd" : "even");
			CHECK(create(&d, name, UNCHECKED, NULL, NULL) == NFS3_OK, "CREATE %s", name);
		}
		n = list_plus(&d, 0, 2048, &pages);
		CHECK(n == 303 && pages > 1, "READDIR: %d names in %d pages", n, pages);
		n = list_plus(&d, 1, 8192, &pages);
		CHECK(n == 303 && pages > 1, "READDIRPLUS: %d names in %d pages", n, pages);
		for (i = 0; i < 300; i++) {
			snprintf(name, sizeof(name), "entry-%03u-%s", i, i % 2 ? "odd" : "even");
			CHECK(dirop(NFSPROC3_REMOVE, &d, name) == NFS3_OK, "REMOVE %s", name);
		}
	}
	CHECK(dirop(NFSPROC3_RMDIR, root, "work") == NFS3ERR_NOTEMPTY, "RMDIR of a full directory");
	CHECK(dirop(NFSPROC3_REMOVE, &d, "f") == NFS3_OK && dirop(NFSPROC3_REMOVE, &d, "x") == 0 &&
	      dirop(NFSPROC3_REMOVE, &d, "ln") == 0, "REMOVE");
	/* a handle of a removed file is stale */
	CHECK(getattr(&f, NULL) == NFS3_OK, "GETATTR of a file that still has a name");
	CHECK(dirop(NFSPROC3_REMOVE, root, "moved") == NFS3_OK, "REMOVE moved");
	CHECK(getattr(&f, NULL) == NFS3ERR_STALE, "GETATTR of a removed file: %d", getattr(&f, NULL));
	CHECK(dirop(NFSPROC3_RMDIR, root, "work") == NFS3_OK, "RMDIR");
	CHECK(access(local("work"), F_OK) < 0, "work is still there");
	free(buf);
	free(back);
}

static void check_hostile(const nfs_fh3 *root)
{
	nfs_fh3 bad, fh;
	char junk[40], forged[64], name[300];
	fattr3 at, rat;
	struct { struct file_handle h; unsigned char b[64]; } k;
	int mnt, fd;
	char outside[4096];
	uint32_t got;
	bool_t eof;

	/* garbage, short and foreign handles */
	memset(junk, 0x5a, sizeof(junk));
	bad.data.data_val = junk;
	bad.data.data_len = sizeof(junk);
	CHECK(getattr(&bad, NULL) == NFS3ERR_BADHANDLE, "a garbage handle");
	bad.data.data_len = 3;
	CHECK(getattr(&bad, NULL) == NFS3ERR_BADHANDLE, "a 3-byte handle");
	bad.data.data_len = 0;
	CHECK(getattr(&bad, NULL) == NFS3ERR_BADHANDLE, "an empty handle");
	memcpy(forged, root->data.data_val, root->data.data_len);
	forged[5] ^= 0x40;   /* the export tag of another export */
	bad.data.data_val = forged;
	bad.data.data_len = root->data.data_len;
	CHECK(getattr(&bad, NULL) == NFS3ERR_STALE, "another export's handle");
	/* a real handle of a file outside DIR (beside it), on its file system, with DIR's
	 * tag */
	snprintf(outside, sizeof(outside), "%s-outside-XXXXXX", dir);
	fd = mkstemp(outside);
	k.h.handle_bytes = 64 - 12;
	if (fd >= 0 && name_to_handle_at(AT_FDCWD, outside, &k.h, &mnt, 0) == 0) {
		memcpy(forged, root->data.data_val, 12);
		forged[8] = (char)(k.h.handle_type >> 24);
		forged[9] = (char)(k.h.handle_type >> 16);
		forged[10] = (char)(k.h.handle_type >> 8);
		forged[11] = (char)k.h.handle_type;
		memcpy(forged + 12, k.h.f_handle, k.h.handle_bytes);
		bad.data.data_len = 12 + k.h.handle_bytes;
		CHECK(getattr(&bad, NULL) == NFS3ERR_STALE, "a handle of a file outside the export");
	} else {
		CHECK(0, "no handle of %s: %s", outside, strerror(errno));
	}
	if (fd >= 0) {
		close(fd);
		unlink(outside);
	}
	/* ".." of the root is the root */
	CHECK(getattr(root, &rat) == NFS3_OK, "GETATTR root");
	CHECK(lookup(root, "..", &fh, &at) == NFS3_OK && at.fileid == rat.fileid,
	      "LOOKUP .. of the root left it");
	CHECK(lookup(root, "no-such-name", NULL, NULL) == NFS3ERR_NOENT, "LOOKUP of nothing");
	/* names: '/', NUL, empty, too long: GARBAGE_ARGS, as knfsd */
	CHECK(raw_lookup(root, "../etc", 6) == RPC_CANTDECODEARGS, "a name with '/'");
	CHECK(raw_lookup(root, "a\0b", 3) == RPC_CANTDECODEARGS, "a name with a NUL");
	CHECK(raw_lookup(root, "", 0) == RPC_CANTDECODEARGS, "an empty name");
	memset(name, 'n', 256);
	CHECK(raw_lookup(root, name, 256) == RPC_CANTDECODEARGS, "a name of 256 bytes");
	CHECK(raw_lookup(root, name, 255) == RPC_SUCCESS, "a name of 255 bytes");
	/* offsets past 2^63 */
	CHECK(create(root, "big", GUARDED, NULL, &fh) == NFS3_OK, "CREATE big");
	CHECK(write3(&fh, 1ull << 63, "x", 1, FILE_SYNC, NULL) == NFS3ERR_FBIG, "WRITE at 2^63");
	CHECK(write3(&fh, ~0ull, "x", 1, FILE_SYNC, NULL) == NFS3ERR_FBIG, "WRITE at 2^64-1");
	CHECK(read3(&fh, (1ull << 63) + 5, 10, junk, &got, &eof) == NFS3_OK && got == 0 && eof,
	      "READ past 2^63");
	CHECK(lookup(&fh, "x", NULL, NULL) == NFS3ERR_NOTDIR, "LOOKUP in a file");
	CHECK(dirop(NFSPROC3_REMOVE, root, ".") == NFS3ERR_ACCES, "REMOVE .");
	CHECK(dirop(NFSPROC3_RMDIR, root, "..") == NFS3ERR_ACCES, "RMDIR ..");
	CHECK(dirop(NFSPROC3_RMDIR, root, "big") == NFS3ERR_NOTDIR, "RMDIR of a file");
	{
		MKNOD3args ma;
		MKNOD3res mr;

		memset(&ma, 0, sizeof(ma));
		memset(&mr, 0, sizeof(mr));
		ma.where.dir = *root;
		ma.where.name = "fifo";
		ma.what.type = NF3FIFO;
		CHECK(nfsproc3_mknod_3(&ma, &mr, cl) == RPC_SUCCESS && mr.status == NFS3_OK &&
		      mr.MKNOD3res_u.resok.obj.handle_follows, "MKNOD of a FIFO");
		xdr_free((xdrproc_t)xdr_MKNOD3res, (char *)&mr);
		CHECK(dirop(NFSPROC3_REMOVE, root, "fifo") == NFS3_OK, "REMOVE fifo");
	}
	/* lengths past nfs3d's bounds: wtmax (1 MiB) and a path of 4096 bytes. Over TCP the
	 * decoder refuses them before allocating; over RDMA the client's binding refuses to
	 * send the path, and WRITE data that arrived in a read chunk (bounded by the
	 * engine's largest message) is written */
	{
		char *big = calloc(1, (1 << 20) + 2);
		enum clnt_stat st;
		SYMLINK3args sa;
		SYMLINK3res sr;
		WRITE3args wa = { fh, 0, (1 << 20) + 1, UNSTABLE, { (1 << 20) + 1, big } };
		WRITE3res wr;

		memset(&wr, 0, sizeof(wr));
		st = nfsproc3_write_3(&wa, &wr, cl);
		CHECK(onc ? st == RPC_CANTDECODEARGS
			  : st == RPC_SUCCESS && wr.status == NFS3_OK &&
				    wr.WRITE3res_u.resok.count == (1 << 20) + 1,
		      "a WRITE past wtmax: %d/%d", st, wr.status);
		xdr_free((xdrproc_t)xdr_WRITE3res, (char *)&wr);
		memset(big, 'p', 4097);
		big[4097] = 0;
		memset(&sa, 0, sizeof(sa));
		memset(&sr, 0, sizeof(sr));
		sa.where.dir = *root;
		sa.where.name = "longpath";
		sa.symlink.symlink_data = big;
		st = nfsproc3_symlink_3(&sa, &sr, cl);
		CHECK(st != RPC_SUCCESS && access(local("longpath"), F_OK) < 0,
		      "a symlink path of 4097 bytes: %d", st);
		xdr_free((xdrproc_t)xdr_SYMLINK3res, (char *)&sr);
		free(big);
	}
	CHECK(dirop(NFSPROC3_REMOVE, root, "big") == NFS3_OK, "REMOVE big");
	/* a procedure NFSv3 does not have */
	CHECK(clnt_call(cl, 22, (xdrproc_t)x_void, NULL, (xdrproc_t)x_void, NULL, tmo) ==
	      RPC_PROCUNAVAIL, "procedure 22");
}

static int save_handle(const nfs_fh3 *root, const char *file)
{
	nfs_fh3 f;
	FILE *o = fopen(file, "w");

	if (!o || lookup(root, "kept", &f, NULL) != NFS3_OK)
		return 1;
	fwrite(f.data.data_val, 1, f.data.data_len, o);
	return fclose(o) ? 1 : 0;
}

static int reuse_handle(const char *file)
{
	nfs_fh3 f;
	char buf[64];
	FILE *i = fopen(file, "r");
	fattr3 at;
	struct stat sb;

	if (!i)
		return 1;
	f.data.data_len = (u_int)fread(buf, 1, sizeof(buf), i);
	f.data.data_val = buf;
	fclose(i);
	CHECK(getattr(&f, &at) == NFS3_OK && stat(local("kept"), &sb) == 0 &&
	      at.fileid == sb.st_ino, "a handle from before the restart");
	return failures ? 1 : 0;
}

static int finish(int rc)
{
	if (cl) {
		auth_destroy(cl->cl_auth);
		clnt_destroy(cl);
	}
	free_kept();
	free((char *)dir);
	return rc;
}

/* The modes that need no MOUNT first (they are refused it, or make their own). */
static bool unmounted(const char *mode)
{
	return !strcmp(mode, "denied") || !strncmp(mode, "port-", 5);
}

int main(int argc, char **argv)
{
	nfs_fh3 root = { { 0, NULL } };
	const char *mode = argc > 6 ? argv[6] : "all";

	if (argc < 6 || argc > 8) {
		fprintf(stderr, "usage: check_nfs3d onc|PROVIDER HOST NFS_PORT MOUNT_PORT DIR "
			"[save|reuse FILE | identity | ro | allsquash | denied FILE | "
			"port-refused|port-taken FILE]\n");
		return 2;
	}
	dir = strdup(argv[5]);
	rpcrdma_ulb_register(rpcrdma_ulb_nfs3());
	cl = nfs_client(argv[1], argv[2], (unsigned)atoi(argv[3]));
	if (!cl || (!unmounted(mode) && mount_root(argv[2], (unsigned)atoi(argv[4]), &root) < 0))
		return finish(1);
	clnt_control(cl, CLSET_TIMEOUT, (char *)&tmo);
	if (!strcmp(mode, "save") && argc == 8)
		return finish(save_handle(&root, argv[7]));
	if (!strcmp(mode, "reuse") && argc == 8)
		return finish(reuse_handle(argv[7]));
	if (!strcmp(mode, "all")) {
		check_files(&root);
		check_hostile(&root);
	} else if (check_auth(mode, argc == 8 ? argv[7] : NULL, &root, argv[2],
			      (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]))) {
		fprintf(stderr, "check_nfs3d: unknown mode %s\n", mode);
		return finish(2);
	}
	finish(0);
	if (failures)
		fprintf(stderr, "check_nfs3d: %d checks failed over %s (%s)\n", failures, argv[1], mode);
	else
		printf("check_nfs3d: every check passed over %s (%s)\n", argv[1], mode);
	return failures ? 1 : 0;
}
