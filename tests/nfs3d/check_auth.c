/* SPDX-License-Identifier: BSD-2-Clause */
/* nfs3d as a server on a network (issue 49): every call runs as its caller, squashed as
 * the export says; only regular files are opened for data; handles cannot be forged or
 * padded; MOUNT and the client list; a privileged source port over TCP. Each mode runs
 * against an nfs3d started by test_nfs3d_auth.sh on a directory it prepared:
 *   identity   default options (rw, root_squash, secure)
 *   ro         -o ro
 *   allsquash  -o all_squash,anonuid=1234,anongid=1234
 *   denied F   a client list without this host; F holds DIR's handle
 *   port-E F   from an unprivileged TCP port: E is "refused" (secure) or "taken" */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check_nfs3d.h"

#define NOBODY 65534u

/* ---- who calls ---- */

static void as_user(uint32_t uid, uint32_t gid, int ngroups, const uint32_t *groups)
{
	gid_t g[16];
	int i;

	for (i = 0; i < ngroups && i < 16; i++)
		g[i] = (gid_t)groups[i];
	auth_destroy(cl->cl_auth);
	cl->cl_auth = authunix_create("check", (uid_t)uid, (gid_t)gid, ngroups, g);
}

static void as_none(void)
{
	auth_destroy(cl->cl_auth);
	cl->cl_auth = authnone_create();
}

/* ---- calls the common ones do not make ---- */

/* CREATE with how (UNCHECKED or GUARDED), a mode, and an owner when uid is not -1 */
static int create_how(const nfs_fh3 *d, const char *name, createmode3 how, uint32_t mode,
		      int64_t uid, nfs_fh3 *out)
{
	CREATE3args a;
	CREATE3res r;
	int st;

	memset(&a, 0, sizeof(a));
	memset(&r, 0, sizeof(r));
	a.where.dir = *d;
	a.where.name = (char *)name;
	a.how.mode = how;
	a.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
	a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = mode;
	if (uid >= 0) {
		a.how.createhow3_u.obj_attributes.uid.set_it = TRUE;
		a.how.createhow3_u.obj_attributes.uid.set_uid3_u.uid = (uint32_t)uid;
	}
	if (nfsproc3_create_3(&a, &r, cl) != RPC_SUCCESS)
		return -1;
	st = r.status;
	if (!st && out && r.CREATE3res_u.resok.obj.handle_follows)
		*out = fh_copy(&r.CREATE3res_u.resok.obj.post_op_fh3_u.handle);
	xdr_free((xdrproc_t)xdr_CREATE3res, (char *)&r);
	return st;
}

static int create_mode(const nfs_fh3 *d, const char *name, uint32_t mode, nfs_fh3 *out)
{
	return create_how(d, name, GUARDED, mode, -1, out);
}

static int setattr(const nfs_fh3 *f, const sattr3 *s)
{
	SETATTR3args a;
	SETATTR3res r;
	int st;

	memset(&a, 0, sizeof(a));
	memset(&r, 0, sizeof(r));
	a.object = *f;
	a.new_attributes = *s;
	if (nfsproc3_setattr_3(&a, &r, cl) != RPC_SUCCESS)
		return -1;
	st = r.status;
	xdr_free((xdrproc_t)xdr_SETATTR3res, (char *)&r);
	return st;
}

static int set_mode(const nfs_fh3 *f, uint32_t mode)
{
	sattr3 s;

	memset(&s, 0, sizeof(s));
	s.mode.set_it = TRUE;
	s.mode.set_mode3_u.mode = mode;
	return setattr(f, &s);
}

static int set_owner(const nfs_fh3 *f, uint32_t uid)
{
	sattr3 s;

	memset(&s, 0, sizeof(s));
	s.uid.set_it = TRUE;
	s.uid.set_uid3_u.uid = uid;
	return setattr(f, &s);
}

/* The ACCESS bits granted, or -1 with the status in *st. */
static long access3(const nfs_fh3 *f, uint32_t asked)
{
	ACCESS3args a = { *f, asked };
	ACCESS3res r;
	long got;

	memset(&r, 0, sizeof(r));
	if (nfsproc3_access_3(&a, &r, cl) != RPC_SUCCESS)
		return -1;
	got = r.status ? -1 : (long)r.ACCESS3res_u.resok.access;
	xdr_free((xdrproc_t)xdr_ACCESS3res, (char *)&r);
	return got;
}

static int mknod3(const nfs_fh3 *d, const char *name, ftype3 type, uint32_t maj, uint32_t min)
{
	MKNOD3args a;
	MKNOD3res r;
	int st;

	memset(&a, 0, sizeof(a));
	memset(&r, 0, sizeof(r));
	a.where.dir = *d;
	a.where.name = (char *)name;
	a.what.type = type;
	if (type == NF3CHR || type == NF3BLK) {
		a.what.mknoddata3_u.device.spec.specdata1 = maj;
		a.what.mknoddata3_u.device.spec.specdata2 = min;
		a.what.mknoddata3_u.device.dev_attributes.mode.set_it = TRUE;
		a.what.mknoddata3_u.device.dev_attributes.mode.set_mode3_u.mode = 0666;
	} else {
		a.what.mknoddata3_u.pipe_attributes.mode.set_it = TRUE;
		a.what.mknoddata3_u.pipe_attributes.mode.set_mode3_u.mode = 0644;
	}
	if (nfsproc3_mknod_3(&a, &r, cl) != RPC_SUCCESS)
		return -1;
	st = r.status;
	xdr_free((xdrproc_t)xdr_MKNOD3res, (char *)&r);
	return st;
}

static int commit3(const nfs_fh3 *f)
{
	COMMIT3args a = { *f, 0, 0 };
	COMMIT3res r;
	int st;

	memset(&r, 0, sizeof(r));
	if (nfsproc3_commit_3(&a, &r, cl) != RPC_SUCCESS)
		return -1;
	st = r.status;
	xdr_free((xdrproc_t)xdr_COMMIT3res, (char *)&r);
	return st;
}

static int read_text(const nfs_fh3 *f, char *buf, size_t cap)
{
	uint32_t got = 0;
	bool_t eof;
	int st = read3(f, 0, (uint32_t)cap - 1, buf, &got, &eof);

	buf[st ? 0 : got] = '\0';
	return st;
}

/* Who owns a file of DIR, as the server's own file system says. */
static bool owned(const char *rel, uint32_t uid, uint32_t gid)
{
	struct stat sb;

	return lstat(local(rel), &sb) == 0 && sb.st_uid == uid && sb.st_gid == gid;
}

static nfs_fh3 need(const nfs_fh3 *d, const char *name)
{
	nfs_fh3 f = { { 0, NULL } };

	CHECK(lookup(d, name, &f, NULL) == NFS3_OK, "LOOKUP %s", name);
	return f;
}

/* ---- identity: root squashed, AUTH_NONE, users and their groups ---- */

static void check_readers(const nfs_fh3 *root)
{
	nfs_fh3 secret = need(root, "secret"), pub = need(root, "pub"), grp = need(root, "grp"),
		prog = need(root, "prog");
	uint32_t g4242 = 4242;
	char buf[64];

	as_user(NOBODY, NOBODY, 0, NULL);
	CHECK(read_text(&secret, buf, sizeof(buf)) == NFS3ERR_ACCES, "nobody reads a 0600 file");
	CHECK(read_text(&pub, buf, sizeof(buf)) == NFS3_OK && !strcmp(buf, "pub\n"),
	      "nobody reads a 0644 file");
	CHECK(write3(&pub, 0, "x", 1, FILE_SYNC, NULL) == NFS3ERR_ACCES, "nobody writes a 0644 file");
	CHECK(access3(&secret, ACCESS3_READ | ACCESS3_MODIFY) == 0, "ACCESS of a 0600 file for nobody");
	CHECK(access3(&pub, ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND) == ACCESS3_READ,
	      "ACCESS of a 0644 file for nobody: %ld", access3(&pub, 7));
	as_user(0, 0, 0, NULL);
	CHECK(read_text(&secret, buf, sizeof(buf)) == NFS3ERR_ACCES, "a squashed root reads a 0600 file");
	CHECK(access3(&secret, ACCESS3_READ) == 0, "ACCESS of a 0600 file for a squashed root");
	as_user(1000, 1000, 1, &g4242);
	CHECK(read_text(&grp, buf, sizeof(buf)) == NFS3_OK && !strcmp(buf, "grp\n"),
	      "a member of group 4242 reads a 0640 root:4242 file");
	as_user(1000, 1000, 0, NULL);
	CHECK(read_text(&grp, buf, sizeof(buf)) == NFS3ERR_ACCES,
	      "a user outside group 4242 reads a 0640 root:4242 file");
	as_user(1000, 4242, 0, NULL);
	CHECK(read_text(&grp, buf, sizeof(buf)) == NFS3_OK, "primary group 4242 reads it");
	as_user(1000, 1000, 0, NULL);
	CHECK(read_text(&prog, buf, sizeof(buf)) == NFS3_OK && !strcmp(buf, "prog\n"),
	      "a 0711 file is read by who may execute it (knfsd: to run it)");
	CHECK(access3(&prog, ACCESS3_READ | ACCESS3_EXECUTE) == ACCESS3_EXECUTE,
	      "ACCESS of a 0711 file: execute only");
}

static void check_makers(const nfs_fh3 *root)
{
	nfs_fh3 open = need(root, "open"), pub = need(root, "pub"), f = { { 0, NULL } };
	struct stat sb;

	as_user(0, 0, 0, NULL);
	CHECK(create_mode(root, "r-made", 0644, NULL) == NFS3ERR_ACCES,
	      "a squashed root creates in a 0755 root directory");
	CHECK(create_mode(&open, "root-made", 0644, NULL) == NFS3_OK &&
	      owned("open/root-made", NOBODY, NOBODY), "a squashed root's file is nobody's");
	as_none();
	CHECK(create_mode(&open, "none-made", 0644, NULL) == NFS3_OK &&
	      owned("open/none-made", NOBODY, NOBODY), "an AUTH_NONE caller's file is nobody's");
	as_user(1000, 1000, 0, NULL);
	CHECK(create_mode(&open, "u", 0644, &f) == NFS3_OK && owned("open/u", 1000, 1000),
	      "a user's file is the user's");
	CHECK(set_mode(&f, 04755) == NFS3_OK && lstat(local("open/u"), &sb) == 0 &&
	      (sb.st_mode & 07777) == 04755 && sb.st_uid == 1000,
	      "a setuid bit on one's own file leaves it the user's, never root's");
	CHECK(set_owner(&f, 0) == NFS3ERR_PERM && owned("open/u", 1000, 1000),
	      "a user gives a file to root");
	CHECK(set_mode(&pub, 04777) == NFS3ERR_PERM, "a user changes the mode of root's file");
	CHECK(access3(&open, ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
			     ACCESS3_DELETE) == (ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY |
						  ACCESS3_EXTEND | ACCESS3_DELETE),
	      "ACCESS of a 1777 directory");
	/* the owner writes a file it made read-only, as a local open(O_CREAT, 0444) does */
	CHECK(create_mode(&open, "ro-file", 0444, &f) == NFS3_OK &&
	      write3(&f, 0, "mine", 4, FILE_SYNC, NULL) == NFS3_OK, "the owner writes its 0444 file");
	as_user(1001, 1001, 0, NULL);
	CHECK(write3(&f, 0, "not", 3, FILE_SYNC, NULL) == NFS3ERR_ACCES,
	      "another user writes a 0444 file");
	as_user(1000, 1000, 0, NULL);
	CHECK(mknod3(&open, "dev", NF3CHR, 1, 5) == NFS3ERR_PERM && access(local("open/dev"), F_OK),
	      "a user makes a device node");
	CHECK(mknod3(&open, "fifo-u", NF3FIFO, 0, 0) == NFS3_OK && lstat(local("open/fifo-u"), &sb) == 0 &&
	      S_ISFIFO(sb.st_mode) && sb.st_uid == 1000, "a user makes a FIFO");
	CHECK(mknod3(&open, "reg", NF3REG, 0, 0) == NFS3ERR_BADTYPE, "MKNOD of a regular file");
	/* CREATE UNCHECKED over a FIFO finds it without opening it, more times than nfs3d
	 * has threads (the client's timeout is short: a blocked open would time it out) */
	{
		struct timeval quick = { 10, 0 };
		int i;

		clnt_control(cl, CLSET_TIMEOUT, (char *)&quick);
		for (i = 0; i < 12; i++)
			CHECK(create_how(&open, "fifo-u", UNCHECKED, 0644, -1, NULL) == NFS3ERR_EXIST,
			      "CREATE UNCHECKED %d over a FIFO", i);
		clnt_control(cl, CLSET_TIMEOUT, (char *)&tmo);
	}
	/* an owner asked for by a user is ignored, as knfsd ignores it: the file is the user's */
	CHECK(create_how(&open, "given", GUARDED, 0644, 0, NULL) == NFS3_OK &&
	      owned("open/given", 1000, 1000), "CREATE with uid 0 from a user");
	as_user(0, 0, 0, NULL);
	CHECK(mknod3(&open, "dev0", NF3BLK, 7, 0) == NFS3ERR_PERM, "a squashed root makes a device node");
}

/* READ, WRITE and COMMIT of a device or a FIFO: NFS3ERR_INVAL, with nothing opened (a
 * FIFO's open would block a worker) and nothing written to a device. */
static void check_special(const nfs_fh3 *root)
{
	nfs_fh3 zero = need(root, "zero"), fifo = need(root, "fifo"), open = need(root, "open");
	struct timeval quick = { 10, 0 };
	char buf[16];
	int i;

	as_user(0, 0, 0, NULL);
	clnt_control(cl, CLSET_TIMEOUT, (char *)&quick);
	CHECK(read_text(&zero, buf, sizeof(buf)) == NFS3ERR_INVAL, "READ of a device node");
	CHECK(write3(&zero, 0, "x", 1, FILE_SYNC, NULL) == NFS3ERR_INVAL, "WRITE of a device node");
	CHECK(commit3(&zero) == NFS3ERR_INVAL, "COMMIT of a device node");
	for (i = 0; i < 12; i++)   /* more than the workers: none may block */
		CHECK(read_text(&fifo, buf, sizeof(buf)) == NFS3ERR_INVAL, "READ %d of a FIFO", i);
	CHECK(write3(&fifo, 0, "x", 1, FILE_SYNC, NULL) == NFS3ERR_INVAL, "WRITE of a FIFO");
	CHECK(read_text(&open, buf, sizeof(buf)) == NFS3ERR_ISDIR, "READ of a directory");
	clnt_control(cl, CLSET_TIMEOUT, (char *)&tmo);
}

static void check_handles(const nfs_fh3 *root)
{
	char b[NFS3_FHSIZE + 4];
	nfs_fh3 bad = { { 0, b } };
	int st;

	as_user(1000, 1000, 0, NULL);
	memcpy(b, root->data.data_val, root->data.data_len);
	memset(b + root->data.data_len, 0, 4);
	bad.data.data_len = root->data.data_len + 4;
	st = getattr(&bad, NULL);
	CHECK(st == NFS3ERR_STALE || st == NFS3ERR_BADHANDLE, "a handle padded with zeros: %d", st);
	bad.data.data_len = root->data.data_len - 1;
	st = getattr(&bad, NULL);
	CHECK(st == NFS3ERR_STALE || st == NFS3ERR_BADHANDLE, "a handle one byte short: %d", st);
	bad.data.data_len = root->data.data_len;
	b[bad.data.data_len - 1] ^= 1;
	CHECK(getattr(&bad, NULL) == NFS3ERR_STALE, "a handle with its MAC changed");
}

/* A tree deeper than PATH_MAX: made here with relative calls, walked over NFS. */
static void check_deep(const nfs_fh3 *root)
{
	char name[201];
	nfs_fh3 d = need(root, "open"), f;
	int fd = open(local("open"), O_RDONLY | O_DIRECTORY), next, i;
	char buf[16];

	memset(name, 'd', 200);
	name[200] = '\0';
	for (i = 0; fd >= 0 && i < 30; i++) {   /* 30 x 201 bytes: past 4096 */
		if (mkdirat(fd, name, 0777) < 0 && errno != EEXIST)
			break;
		next = openat(fd, name, O_RDONLY | O_DIRECTORY);
		fchmod(next, 0777);
		close(fd);
		fd = next;
	}
	if (fd >= 0)
		close(fd);
	CHECK(i == 30, "a tree 30 levels deep made locally");
	as_user(1000, 1000, 0, NULL);
	for (i = 0; i < 30; i++)
		if (lookup(&d, name, &d, NULL) != NFS3_OK)
			break;
	CHECK(i == 30, "LOOKUP down to level %d of 30 (past PATH_MAX)", i);
	CHECK(getattr(&d, NULL) == NFS3_OK, "GETATTR of a directory past PATH_MAX");
	CHECK(create_mode(&d, "deep", 0644, &f) == NFS3_OK &&
	      write3(&f, 0, "deep\n", 5, FILE_SYNC, NULL) == NFS3_OK &&
	      read_text(&f, buf, sizeof(buf)) == NFS3_OK && !strcmp(buf, "deep\n"),
	      "a file past PATH_MAX made, written and read");
}

/* A removed file's handle is STALE at once, whether removed over NFS or on the server. */
static void check_removed(const nfs_fh3 *root)
{
	nfs_fh3 open = need(root, "open"), f;

	as_user(1000, 1000, 0, NULL);
	CHECK(create_mode(&open, "gone", 0644, &f) == NFS3_OK && getattr(&f, NULL) == NFS3_OK &&
	      dirop(NFSPROC3_REMOVE, &open, "gone") == NFS3_OK &&
	      getattr(&f, NULL) == NFS3ERR_STALE, "a file removed over NFS is stale");
	CHECK(create_mode(&open, "gone2", 0644, &f) == NFS3_OK && getattr(&f, NULL) == NFS3_OK &&
	      unlink(local("open/gone2")) == 0 && getattr(&f, NULL) == NFS3ERR_STALE,
	      "a file removed on the server is stale");
}

static int mnt(CLIENT *mc, const char *path)
{
	char *p = (char *)path;
	mountres3 r;
	int st;

	memset(&r, 0, sizeof(r));
	if (mountproc3_mnt_3(&p, &r, mc) != RPC_SUCCESS)
		return -1;
	st = r.fhs_status;
	xdr_free((xdrproc_t)xdr_mountres3, (char *)&r);
	return st;
}

/* How many exports EXPORT lists, -1 on an RPC failure. */
static int exports(CLIENT *mc)
{
	exports3 r = NULL, e;
	int n = 0;

	if (mountproc3_export_3(NULL, &r, mc) != RPC_SUCCESS)
		return -1;
	for (e = r; e; e = e->ex_next)
		n++;
	xdr_free((xdrproc_t)xdr_exports3, (char *)&r);
	return n;
}

static void check_mount(const char *host, unsigned mport)
{
	CLIENT *mc = tcp_client(host, mport, MOUNT_PROGRAM, MOUNT_V3);
	char sub[4096];

	CHECK(mc, "MOUNT client");
	if (!mc)
		return;
	CHECK(mnt(mc, "/etc") == MNT3ERR_ACCES, "MNT of an existing path outside DIR");
	CHECK(mnt(mc, "/no-such-path-outside") == MNT3ERR_ACCES,
	      "MNT of a missing path outside DIR: the same answer");
	snprintf(sub, sizeof(sub), "%s/open/../open", dir);
	CHECK(mnt(mc, sub) == MNT3_OK, "MNT of DIR/open/../open");
	snprintf(sub, sizeof(sub), "%s/../%s", dir, strrchr(dir, '/') + 1);
	CHECK(mnt(mc, sub) == MNT3_OK, "MNT of DIR/../DIR");
	snprintf(sub, sizeof(sub), "%s/no-such-sub", dir);
	CHECK(mnt(mc, sub) == MNT3ERR_NOENT, "MNT of a missing directory inside DIR");
	/* through symbolic links inside DIR that lead out: the same answer whether the path
	 * beyond exists or not, and never a handle */
	CHECK(symlink("/", local("open/up")) == 0 && symlink("../..", local("open/rel")) == 0,
	      "symbolic links out of DIR made");
	snprintf(sub, sizeof(sub), "%s/open/up/etc", dir);
	CHECK(mnt(mc, sub) == MNT3ERR_ACCES, "MNT through a link to / of an existing directory");
	snprintf(sub, sizeof(sub), "%s/open/up/no-such-dir-anywhere", dir);
	CHECK(mnt(mc, sub) == MNT3ERR_ACCES, "MNT through a link to / of a missing one");
	snprintf(sub, sizeof(sub), "%s/open/rel", dir);
	CHECK(mnt(mc, sub) == MNT3ERR_ACCES, "MNT of a relative link out of DIR");
	snprintf(sub, sizeof(sub), "%s/pub", dir);
	CHECK(mnt(mc, sub) == MNT3ERR_NOTDIR, "MNT of a file inside DIR");
	CHECK(exports(mc) == 1, "EXPORT lists DIR");
	auth_destroy(mc->cl_auth);
	clnt_destroy(mc);
}

static void check_identity(const nfs_fh3 *root, const char *host, unsigned mport)
{
	check_readers(root);
	check_makers(root);
	check_special(root);
	check_handles(root);
	check_deep(root);
	check_removed(root);
	check_mount(host, mport);
}

/* ---- the other option sets ---- */

static void check_ro(const nfs_fh3 *root)
{
	nfs_fh3 open = need(root, "open"), pub = need(root, "pub");
	char buf[16];

	as_user(1000, 1000, 0, NULL);
	CHECK(read_text(&pub, buf, sizeof(buf)) == NFS3_OK, "READ on a read-only export");
	CHECK(write3(&pub, 0, "x", 1, FILE_SYNC, NULL) == NFS3ERR_ROFS, "WRITE on a read-only export");
	CHECK(create_mode(&open, "ro-made", 0644, NULL) == NFS3ERR_ROFS,
	      "CREATE on a read-only export");
	CHECK(dirop(NFSPROC3_REMOVE, &open, "u") == NFS3ERR_ROFS, "REMOVE on a read-only export");
	CHECK(access3(&open, ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
			     ACCESS3_DELETE) == (ACCESS3_READ | ACCESS3_LOOKUP),
	      "ACCESS on a read-only export grants no change");
}

static void check_allsquash(const nfs_fh3 *root)
{
	nfs_fh3 open = need(root, "open");

	as_user(1000, 1000, 0, NULL);
	CHECK(create_mode(&open, "sq", 0644, NULL) == NFS3_OK && owned("open/sq", 1234, 1234),
	      "all_squash,anonuid=1234,anongid=1234: a user's file is 1234's");
}

static bool read_handle(const char *file, char *buf, nfs_fh3 *f)
{
	FILE *i = fopen(file, "r");

	if (!i)
		return false;
	f->data.data_val = buf;
	f->data.data_len = (u_int)fread(buf, 1, NFS3_FHSIZE, i);
	fclose(i);
	return f->data.data_len > 0;
}

/* A client the list does not hold: AUTH_BADCRED for NFS (NULL still answers), ACCES
 * and an empty EXPORT for MOUNT. */
static void check_denied(const char *file, const char *host, unsigned mport)
{
	char buf[NFS3_FHSIZE];
	nfs_fh3 root;
	struct rpc_err e;
	CLIENT *mc = tcp_client(host, mport, MOUNT_PROGRAM, MOUNT_V3);

	CHECK(read_handle(file, buf, &root), "the saved handle");
	CHECK(clnt_call(cl, NFSPROC3_NULL, (xdrproc_t)x_void, NULL, (xdrproc_t)x_void, NULL, tmo) ==
	      RPC_SUCCESS, "NULL from an unlisted client");
	CHECK(getattr(&root, NULL) == -1, "GETATTR from an unlisted client is refused");
	clnt_geterr(cl, &e);
	CHECK(e.re_status == RPC_AUTHERROR && e.re_why == AUTH_BADCRED,
	      "with AUTH_BADCRED: %d/%d", e.re_status, e.re_why);
	CHECK(mc && mnt(mc, dir) == MNT3ERR_ACCES, "MNT from an unlisted client");
	CHECK(mc && exports(mc) == 0, "EXPORT to an unlisted client lists nothing");
	if (mc) {
		auth_destroy(mc->cl_auth);
		clnt_destroy(mc);
	}
}

/* A TCP client on a port >= 1024 (a user's program, not the kernel's client). */
static CLIENT *unprivileged(const char *host, unsigned port, rpcprog_t prog, rpcvers_t vers)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct sockaddr_storage ss;
	struct netbuf nb;
	char serv[12];
	CLIENT *c = NULL;
	int fd;

	snprintf(serv, sizeof(serv), "%u", port);
	if (getaddrinfo(host, serv, &hints, &ai))
		return NULL;
	memset(&ss, 0, sizeof(ss));
	ss.ss_family = (sa_family_t)ai->ai_family;   /* port 0: an ephemeral one, >= 1024 */
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&ss, ai->ai_addrlen) == 0 &&
	    connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		nb.buf = ai->ai_addr;
		nb.len = nb.maxlen = ai->ai_addrlen;
		c = clnt_vc_create(fd, &nb, prog, vers, 0, 0);
	}
	if (c) {
		clnt_control(c, CLSET_FD_CLOSE, NULL);
		auth_destroy(c->cl_auth);
		c->cl_auth = authunix_create("check", 1000, 1000, 0, NULL);
	} else if (fd >= 0) {
		close(fd);
	}
	freeaddrinfo(ai);
	return c;
}

static void check_port(const char *expect, const char *file, const char *host,
		       unsigned nport, unsigned mport)
{
	char buf[NFS3_FHSIZE];
	nfs_fh3 root;
	CLIENT *keep = cl, *mc = unprivileged(host, mport, MOUNT_PROGRAM, MOUNT_V3);
	bool taken = !strcmp(expect, "taken");

	cl = unprivileged(host, nport, NFS_PROGRAM, NFS_V3);
	CHECK(cl && mc && read_handle(file, buf, &root), "clients from unprivileged ports");
	if (cl && mc) {
		CHECK(getattr(&root, NULL) == (taken ? NFS3_OK : NFS3ERR_PERM),
		      "GETATTR from an unprivileged port, %s", expect);
		CHECK(mnt(mc, dir) == (taken ? MNT3_OK : MNT3ERR_ACCES),
		      "MNT from an unprivileged port, %s", expect);
	}
	if (cl) {
		auth_destroy(cl->cl_auth);
		clnt_destroy(cl);
	}
	if (mc) {
		auth_destroy(mc->cl_auth);
		clnt_destroy(mc);
	}
	cl = keep;
}

int check_auth(const char *mode, const char *arg, const nfs_fh3 *root, const char *host,
	       unsigned nfs_port, unsigned mount_port)
{
	if (!strcmp(mode, "identity"))
		check_identity(root, host, mount_port);
	else if (!strcmp(mode, "ro"))
		check_ro(root);
	else if (!strcmp(mode, "allsquash"))
		check_allsquash(root);
	else if (!strcmp(mode, "denied"))
		check_denied(arg, host, mount_port);
	else if (!strncmp(mode, "port-", 5))
		check_port(mode + 5, arg, host, nfs_port, mount_port);
	else
		return 2;
	return 0;
}
