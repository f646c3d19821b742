/* SPDX-License-Identifier: BSD-2-Clause */
/* nfs3d: an NFS version 3 server (RFC 1813) of one directory, over RPC-over-RDMA (RFC
 * 5666, with the NFSv3 binding of RFC 8267) on any provider and over ONC RPC/TCP, with
 * MOUNT v3 over TCP. The Linux kernel's client mounts it with proto=rdma or proto=tcp.
 *
 *   nfs3d [--provider P] [--listen ADDR:PORT] [--mount-port N] [--tcp-port N]
 *         [--threads N] [-v] DIR
 *
 * Every object is reached through a kernel file handle (name_to_handle_at(2)), opened
 * again with open_by_handle_at(2): the handles a client holds stay valid when nfs3d
 * restarts. That needs CAP_DAC_READ_SEARCH (root). Every handle opened is checked to lie
 * inside DIR, and no path a client sends is ever followed: names are single components
 * (no '/', no NUL), ".." of DIR is DIR. Everyone who reaches the ports may read and
 * write: there are no export options (README.md). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <netinet/in.h>
#include <rpc/rpcb_clnt.h>

#include "mount3.h"
#include "nfs3_prot.h"
#include "rpcrdma/nfs3.h"

void mount_program_3(struct svc_req *rqstp, SVCXPRT *transp);

#define FH_MAGIC 0x4e334431u      /* "N3D1" */
#define FH_HEAD 12u               /* magic, export tag, handle type */
#define KFH_MAX (NFS3_FHSIZE - FH_HEAD)
#define MAX_IO (1024u * 1024u)    /* rtmax and wtmax (FSINFO) */
#define OFFSET_MAX ((uint64_t)INT64_MAX)

/* ---- the export ---- */

static struct {
	int root_fd;                  /* the mount open_by_handle_at() decodes in */
	char path[PATH_MAX];          /* canonical */
	size_t path_len;
	struct stat st;
	int mount_id;
	uint32_t tag;                 /* in every handle: handles of another export are stale */
	char verf[NFS3_WRITEVERFSIZE];   /* new at every start: unstable writes are resent */
	int verbose;
} ex;

static nfsstat3 errno_status(int e)
{
	switch (e) {
	case 0: return NFS3_OK;
	case EPERM: return NFS3ERR_PERM;
	case ENOENT: return NFS3ERR_NOENT;
	case ENXIO: return NFS3ERR_NXIO;
	case EACCES: case ETXTBSY: return NFS3ERR_ACCES;
	case EEXIST: return NFS3ERR_EXIST;
	case EXDEV: return NFS3ERR_XDEV;
	case ENODEV: return NFS3ERR_NODEV;
	case ENOTDIR: return NFS3ERR_NOTDIR;
	case EISDIR: return NFS3ERR_ISDIR;
	case EINVAL: return NFS3ERR_INVAL;
	case EFBIG: case EOVERFLOW: return NFS3ERR_FBIG;
	case ENOSPC: return NFS3ERR_NOSPC;
	case EROFS: return NFS3ERR_ROFS;
	case EMLINK: return NFS3ERR_MLINK;
	case ENAMETOOLONG: return NFS3ERR_NAMETOOLONG;
	case ENOTEMPTY: return NFS3ERR_NOTEMPTY;
	case EDQUOT: return NFS3ERR_DQUOT;
	case ESTALE: return NFS3ERR_STALE;
	case EOPNOTSUPP: return NFS3ERR_NOTSUPP;
	case ENOMEM: case EAGAIN: return NFS3ERR_JUKEBOX;   /* "try again later" */
	default: return NFS3ERR_IO;
	}
}

static void put32(char *p, uint32_t v)
{
	p[0] = (char)(v >> 24);
	p[1] = (char)(v >> 16);
	p[2] = (char)(v >> 8);
	p[3] = (char)v;
}

static uint32_t get32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

struct kfh {
	struct file_handle h;
	unsigned char bytes[KFH_MAX];
};

/* The kernel's handle of an object, as an NFS handle of this export (malloc'd data). */
static nfsstat3 fh_of(int dirfd, const char *name, nfs_fh3 *out)
{
	struct kfh k;
	int mount_id, flags = *name ? 0 : AT_EMPTY_PATH;

	k.h.handle_bytes = KFH_MAX;
	if (name_to_handle_at(dirfd, name, &k.h, &mount_id, flags) < 0)
		return errno == EOVERFLOW ? NFS3ERR_SERVERFAULT : errno_status(errno);
	if (mount_id != ex.mount_id)
		return NFS3ERR_XDEV;   /* another file system mounted inside DIR: not served */
	out->data.data_val = malloc(FH_HEAD + k.h.handle_bytes);
	if (!out->data.data_val)
		return NFS3ERR_JUKEBOX;
	out->data.data_len = FH_HEAD + k.h.handle_bytes;
	put32(out->data.data_val, FH_MAGIC);
	put32(out->data.data_val + 4, ex.tag);
	put32(out->data.data_val + 8, (uint32_t)k.h.handle_type);
	memcpy(out->data.data_val + FH_HEAD, k.h.f_handle, k.h.handle_bytes);
	return NFS3_OK;
}

static void proc_path(int fd, char *buf, size_t cap)
{
	snprintf(buf, cap, "/proc/self/fd/%d", fd);
}

/* Whether an opened object lies inside DIR: open_by_handle_at() opens anything of the
 * file system DIR is on, so a forged handle could name /etc/shadow. An object whose path
 * the kernel cannot give (disconnected, unlinked) is refused too. */
static bool inside(int fd)
{
	char lnk[40], path[PATH_MAX];
	ssize_t n;

	proc_path(fd, lnk, sizeof(lnk));
	n = readlink(lnk, path, sizeof(path) - 1);
	if (n < 0 || (size_t)n < ex.path_len || memcmp(path, ex.path, ex.path_len))
		return false;
	return (size_t)n == ex.path_len || path[ex.path_len] == '/' || ex.path_len == 1;
}

/* Open the object of a handle. BADHANDLE: not one of ours in form; STALE: of another
 * export, gone, or outside DIR. */
static nfsstat3 fh_open(const nfs_fh3 *fh, int flags, int *fd)
{
	struct kfh k;
	const char *d = fh->data.data_val;
	u_int len = fh->data.data_len;

	if (len < FH_HEAD + 4 || len > NFS3_FHSIZE || get32(d) != FH_MAGIC)
		return NFS3ERR_BADHANDLE;
	if (get32(d + 4) != ex.tag)
		return NFS3ERR_STALE;
	k.h.handle_bytes = len - FH_HEAD;
	k.h.handle_type = (int)get32(d + 8);
	memcpy(k.h.f_handle, d + FH_HEAD, len - FH_HEAD);
	*fd = open_by_handle_at(ex.root_fd, &k.h, flags | O_CLOEXEC);
	if (*fd < 0)
		return errno == EINVAL ? NFS3ERR_BADHANDLE : errno == ELOOP ? NFS3ERR_INVAL
			: errno_status(errno);
	if (!inside(*fd)) {
		close(*fd);
		*fd = -1;
		return NFS3ERR_STALE;
	}
	return NFS3_OK;
}

static nfsstat3 dir_open(const nfs_fh3 *fh, int *fd)
{
	nfsstat3 st = fh_open(fh, O_PATH, fd);
	struct stat sb;

	if (st)
		return st;
	if (fstat(*fd, &sb) == 0 && S_ISDIR(sb.st_mode))
		return NFS3_OK;
	close(*fd);
	*fd = -1;
	return NFS3ERR_NOTDIR;
}

static bool is_root(const struct stat *sb)
{
	return sb->st_dev == ex.st.st_dev && sb->st_ino == ex.st.st_ino;
}

static bool is_dot(const char *name)
{
	return !strcmp(name, ".") || !strcmp(name, "..");
}

/* A name inside directory dirfd, opened O_PATH without following it; ".." of DIR is DIR
 * (a client never climbs out of the export). */
static nfsstat3 child_open(int dirfd, const char *name, int *fd)
{
	struct stat sb;

	if (!strcmp(name, "..") && fstat(dirfd, &sb) == 0 && is_root(&sb))
		name = ".";
	*fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	return *fd < 0 ? errno_status(errno) : NFS3_OK;
}

/* ---- attributes ---- */

static ftype3 ftype_of(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFDIR: return NF3DIR;
	case S_IFLNK: return NF3LNK;
	case S_IFBLK: return NF3BLK;
	case S_IFCHR: return NF3CHR;
	case S_IFSOCK: return NF3SOCK;
	case S_IFIFO: return NF3FIFO;
	default: return NF3REG;
	}
}

static nfstime3 time3(const struct timespec *t)
{
	nfstime3 r = { (uint32)t->tv_sec, (uint32)t->tv_nsec };

	return r;
}

static void fattr_of(const struct stat *sb, fattr3 *a)
{
	memset(a, 0, sizeof(*a));
	a->type = ftype_of(sb->st_mode);
	a->mode = sb->st_mode & 07777;
	a->nlink = (uint32)sb->st_nlink;
	a->uid = sb->st_uid;
	a->gid = sb->st_gid;
	a->size = (size3)sb->st_size;
	a->used = (size3)sb->st_blocks * 512;
	a->rdev.specdata1 = major(sb->st_rdev);
	a->rdev.specdata2 = minor(sb->st_rdev);
	a->fsid = (uint64)ex.st.st_dev;
	a->fileid = (fileid3)sb->st_ino;
	a->atime = time3(&sb->st_atim);
	a->mtime = time3(&sb->st_mtim);
	a->ctime = time3(&sb->st_ctim);
}

static void post_attr(int fd, post_op_attr *p)
{
	struct stat sb;

	p->attributes_follow = fd >= 0 && fstat(fd, &sb) == 0;
	if (p->attributes_follow)
		fattr_of(&sb, &p->post_op_attr_u.attributes);
}

/* Weak cache consistency data (RFC 1813 §2.6): before, taken by wcc_begin(), and after. */
static void wcc_begin(int fd, wcc_data *w)
{
	struct stat sb;
	wcc_attr *a = &w->before.pre_op_attr_u.attributes;

	w->before.attributes_follow = fd >= 0 && fstat(fd, &sb) == 0;
	if (!w->before.attributes_follow)
		return;
	a->size = (size3)sb.st_size;
	a->mtime = time3(&sb.st_mtim);
	a->ctime = time3(&sb.st_ctim);
}

static void wcc_end(int fd, wcc_data *w)
{
	post_attr(fd, &w->after);
}

/* CREATE, MKDIR and SYMLINK keep their directory's wcc data at another place in the
 * failure arm of their result than in the success arm: moved there on failure. */
static void wcc_to_fail(nfsstat3 st, wcc_data *ok, wcc_data *fail)
{
	wcc_data w = *ok;

	if (!st)
		return;
	memset(ok, 0, sizeof(*ok));
	*fail = w;
}

static void close_fd(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* Apply the settable attributes, through the descriptor's /proc path (an O_PATH
 * descriptor takes no fchmod(), ftruncate() or futimens()). */
static nfsstat3 set_attrs(int fd, const sattr3 *s)
{
	char p[40];
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
	struct stat sb;

	proc_path(fd, p, sizeof(p));
	if (fstat(fd, &sb) < 0)
		return errno_status(errno);
	if (s->size.set_it && !S_ISREG(sb.st_mode))
		return S_ISDIR(sb.st_mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
	if (s->size.set_it && s->size.set_size3_u.size > OFFSET_MAX)
		return NFS3ERR_FBIG;
	if (s->size.set_it && truncate(p, (off_t)s->size.set_size3_u.size) < 0)
		return errno_status(errno);
	if ((s->uid.set_it || s->gid.set_it) &&
	    fchownat(fd, "", s->uid.set_it ? s->uid.set_uid3_u.uid : (uid_t)-1,
		     s->gid.set_it ? s->gid.set_gid3_u.gid : (gid_t)-1, AT_EMPTY_PATH) < 0)
		return errno_status(errno);
	/* a symbolic link has no mode of its own to set (Linux) */
	if (s->mode.set_it && !S_ISLNK(sb.st_mode) &&
	    chmod(p, s->mode.set_mode3_u.mode & 07777) < 0)
		return errno_status(errno);
	if (s->atime.set_it == SET_TO_SERVER_TIME)
		ts[0].tv_nsec = UTIME_NOW;
	else if (s->atime.set_it == SET_TO_CLIENT_TIME)
		ts[0] = (struct timespec){ s->atime.set_atime_u.atime.seconds,
					   s->atime.set_atime_u.atime.nseconds };
	if (s->mtime.set_it == SET_TO_SERVER_TIME)
		ts[1].tv_nsec = UTIME_NOW;
	else if (s->mtime.set_it == SET_TO_CLIENT_TIME)
		ts[1] = (struct timespec){ s->mtime.set_mtime_u.mtime.seconds,
					   s->mtime.set_mtime_u.mtime.nseconds };
	if ((ts[0].tv_nsec != UTIME_OMIT || ts[1].tv_nsec != UTIME_OMIT) &&
	    utimensat(AT_FDCWD, p, ts, 0) < 0)
		return errno_status(errno);
	return NFS3_OK;
}

/* The results a new object gives (CREATE, MKDIR, SYMLINK): its handle and attributes. */
static void new_obj(int dirfd, const char *name, post_op_fh3 *obj, post_op_attr *attrs)
{
	int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	obj->handle_follows = fd >= 0 && fh_of(fd, "", &obj->post_op_fh3_u.handle) == NFS3_OK;
	post_attr(fd, attrs);
	close_fd(fd);
}

/* ---- the procedures (RFC 1813 §3.3). Each returns false for arguments it refuses
 * outright (GARBAGE_ARGS, as knfsd answers a name with '/' in it). ---- */

static bool p_null(void *a, void *r)
{
	(void)a;
	(void)r;
	return true;
}

static bool p_getattr(GETATTR3args *a, GETATTR3res *r)
{
	int fd;
	struct stat sb;

	r->status = fh_open(&a->object, O_PATH, &fd);
	if (r->status)
		return true;
	if (fstat(fd, &sb) < 0)
		r->status = errno_status(errno);
	else
		fattr_of(&sb, &r->GETATTR3res_u.resok.obj_attributes);
	close(fd);
	return true;
}

static bool p_setattr(SETATTR3args *a, SETATTR3res *r)
{
	int fd;
	struct stat sb;
	wcc_data *w = &r->SETATTR3res_u.resok.obj_wcc;

	r->status = fh_open(&a->object, O_PATH, &fd);
	if (r->status)
		return true;
	wcc_begin(fd, w);
	/* the guard: only if the object's ctime is still the one the client saw */
	if (a->guard.check && fstat(fd, &sb) == 0 &&
	    ((uint32)sb.st_ctim.tv_sec != a->guard.sattrguard3_u.obj_ctime.seconds ||
	     (uint32)sb.st_ctim.tv_nsec != a->guard.sattrguard3_u.obj_ctime.nseconds))
		r->status = NFS3ERR_NOT_SYNC;
	else
		r->status = set_attrs(fd, &a->new_attributes);
	wcc_end(fd, w);
	close(fd);
	return true;
}

static bool p_lookup(LOOKUP3args *a, LOOKUP3res *r)
{
	int dirfd, fd;
	LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;

	r->status = dir_open(&a->what.dir, &dirfd);
	if (r->status)
		return true;
	r->status = child_open(dirfd, a->what.name, &fd);
	if (!r->status) {
		r->status = fh_of(fd, "", &ok->object);
		post_attr(fd, &ok->obj_attributes);
		close(fd);
	}
	post_attr(dirfd, r->status ? &r->LOOKUP3res_u.resfail.dir_attributes
				   : &ok->dir_attributes);
	close(dirfd);
	return true;
}

/* Everyone may read and write (no export options); execute needs an execute bit. */
static bool p_access(ACCESS3args *a, ACCESS3res *r)
{
	int fd;
	struct stat sb;
	uint32 ok = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
		    ACCESS3_DELETE;

	r->status = fh_open(&a->object, O_PATH, &fd);
	if (r->status)
		return true;
	if (fstat(fd, &sb) == 0 && (S_ISDIR(sb.st_mode) || (sb.st_mode & 0111)))
		ok |= ACCESS3_EXECUTE;
	r->ACCESS3res_u.resok.access = a->access & ok;
	post_attr(fd, &r->ACCESS3res_u.resok.obj_attributes);
	close(fd);
	return true;
}

static bool p_readlink(READLINK3args *a, READLINK3res *r)
{
	int fd;
	char buf[RPCRDMA_NFS3_MAXPATHLEN + 1];
	ssize_t n;
	READLINK3resok *ok = &r->READLINK3res_u.resok;

	r->status = fh_open(&a->symlink, O_PATH, &fd);
	if (r->status)
		return true;
	n = readlinkat(fd, "", buf, sizeof(buf) - 1);
	if (n < 0) {
		r->status = errno == ENOENT ? NFS3ERR_INVAL : errno_status(errno);
		post_attr(fd, &r->READLINK3res_u.resfail.symlink_attributes);
	} else if (!(ok->data = strndup(buf, (size_t)n))) {
		r->status = NFS3ERR_JUKEBOX;
	} else {
		post_attr(fd, &ok->symlink_attributes);
	}
	close(fd);
	return true;
}

static nfsstat3 read_at(int fd, char *buf, uint32_t count, uint64_t off, uint32_t *got)
{
	ssize_t n;

	*got = 0;
	while (*got < count) {
		n = pread(fd, buf + *got, count - *got, (off_t)(off + *got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno_status(errno);
		if (n == 0)
			break;
		*got += (uint32_t)n;
	}
	return NFS3_OK;
}

/* READ's data goes into the client's write chunk (RFC 8267 §4): it is handed to the
 * reply as it is, and written from this buffer when long enough (docs/RPC.md). */
static bool p_read(READ3args *a, READ3res *r)
{
	int fd;
	struct stat sb;
	uint32_t count = a->count > MAX_IO ? MAX_IO : a->count, got = 0;
	READ3resok *ok = &r->READ3res_u.resok;

	r->status = fh_open(&a->file, O_RDONLY, &fd);
	if (r->status)
		return true;
	if (fstat(fd, &sb) < 0) {
		r->status = errno_status(errno);
		goto out_attr;
	}
	if (!S_ISREG(sb.st_mode)) {
		r->status = S_ISDIR(sb.st_mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
		goto out_attr;
	}
	/* past the largest offset there is nothing: an empty read at its end, as knfsd */
	if (a->offset > OFFSET_MAX || count > OFFSET_MAX - a->offset)
		count = a->offset > OFFSET_MAX ? 0 : (uint32_t)(OFFSET_MAX - a->offset);
	if (!(ok->data.data_val = malloc(count ? count : 1))) {
		r->status = NFS3ERR_JUKEBOX;
		goto out_attr;
	}
	r->status = read_at(fd, ok->data.data_val, count, a->offset, &got);
	ok->count = ok->data.data_len = got;
	ok->eof = a->offset + got >= (uint64_t)sb.st_size;
out_attr:
	post_attr(fd, r->status ? &r->READ3res_u.resfail.file_attributes : &ok->file_attributes);
	close(fd);
	return true;
}

static nfsstat3 write_at(int fd, const char *buf, uint32_t count, uint64_t off)
{
	uint32_t done = 0;
	ssize_t n;

	while (done < count) {
		n = pwrite(fd, buf + done, count - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno_status(errno) : NFS3ERR_IO;
		done += (uint32_t)n;
	}
	return NFS3_OK;
}

/* WRITE's data arrived in a read chunk. UNSTABLE data waits for COMMIT; the verifier
 * changes when nfs3d restarts, so a client resends what a crash may have lost. */
static bool p_write(WRITE3args *a, WRITE3res *r)
{
	int fd;
	WRITE3resok *ok = &r->WRITE3res_u.resok;
	wcc_data *w = &ok->file_wcc;   /* resfail's wcc_data is at the same place */
	int sync_rc = 0;

	r->status = fh_open(&a->file, O_WRONLY, &fd);
	if (r->status)
		return true;
	wcc_begin(fd, w);
	if (a->count != a->data.data_len || a->stable > FILE_SYNC)
		r->status = NFS3ERR_INVAL;
	else if (a->offset > OFFSET_MAX || a->count > OFFSET_MAX - a->offset)
		r->status = NFS3ERR_FBIG;
	else
		r->status = write_at(fd, a->data.data_val, a->count, a->offset);
	if (!r->status && a->stable == FILE_SYNC)
		sync_rc = fsync(fd);
	else if (!r->status && a->stable == DATA_SYNC)
		sync_rc = fdatasync(fd);
	if (sync_rc < 0)
		r->status = errno_status(errno);
	if (!r->status) {
		ok->count = a->count;
		ok->committed = a->stable;
		memcpy(ok->verf, ex.verf, sizeof(ex.verf));
	}
	wcc_end(fd, w);
	close(fd);
	return true;
}

/* EXCLUSIVE creation keeps the client's verifier in the new file's atime and mtime, as
 * knfsd does: a retransmitted CREATE finds its own file and succeeds. */
static nfsstat3 create_exclusive(int dirfd, const char *name, const char *verf)
{
	struct timespec ts[2] = { { get32(verf), 0 }, { get32(verf + 4), 0 } };
	struct stat sb;
	int fd = openat(dirfd, name, O_CREAT | O_EXCL | O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);

	if (fd < 0 && errno == EEXIST) {
		if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) &&
		    sb.st_atim.tv_sec == ts[0].tv_sec && sb.st_mtim.tv_sec == ts[1].tv_sec)
			return NFS3_OK;
		return NFS3ERR_EXIST;
	}
	if (fd < 0)
		return errno_status(errno);
	if (futimens(fd, ts) < 0) {
		close(fd);
		return errno_status(errno);
	}
	close(fd);
	return NFS3_OK;
}

static nfsstat3 create_file(int dirfd, const char *name, const createhow3 *how)
{
	const sattr3 *s = &how->createhow3_u.obj_attributes;
	mode_t mode = s->mode.set_it ? s->mode.set_mode3_u.mode & 07777 : 0644;
	int flags = O_CREAT | O_RDONLY | O_NOFOLLOW | O_CLOEXEC, fd;
	struct stat sb;
	bool made;
	nfsstat3 st;

	if (how->mode == EXCLUSIVE)
		return create_exclusive(dirfd, name, how->createhow3_u.verf);
	/* exclusive first, whatever the mode: whether the file was made decides which
	 * attributes apply; UNCHECKED then opens the one that was there */
	fd = openat(dirfd, name, flags | O_EXCL, mode);
	made = fd >= 0;
	if (fd < 0 && errno == EEXIST && how->mode == UNCHECKED)
		fd = openat(dirfd, name, flags & ~O_CREAT);
	if (fd < 0)
		return errno == ELOOP ? NFS3ERR_EXIST : errno_status(errno);
	if (!made && (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))) {
		close(fd);
		return NFS3ERR_EXIST;   /* a directory or a special file of that name */
	}
	if (made) {
		sattr3 rest = *s;

		rest.mode.set_it = FALSE;   /* given to openat() */
		st = set_attrs(fd, &rest);
	} else {
		sattr3 size_only = { .size = s->size };   /* UNCHECKED on an existing file */

		st = set_attrs(fd, &size_only);
	}
	close(fd);
	return st;
}

static bool p_create(CREATE3args *a, CREATE3res *r)
{
	int dirfd;
	CREATE3resok *ok = &r->CREATE3res_u.resok;

	r->status = dir_open(&a->where.dir, &dirfd);
	if (r->status)
		return true;
	wcc_begin(dirfd, &ok->dir_wcc);
	r->status = is_dot(a->where.name) ? NFS3ERR_EXIST
					  : create_file(dirfd, a->where.name, &a->how);
	if (!r->status)
		new_obj(dirfd, a->where.name, &ok->obj, &ok->obj_attributes);
	wcc_end(dirfd, &ok->dir_wcc);
	wcc_to_fail(r->status, &ok->dir_wcc, &r->CREATE3res_u.resfail.dir_wcc);
	close(dirfd);
	return true;
}

static bool p_mkdir(MKDIR3args *a, MKDIR3res *r)
{
	int dirfd, fd;
	MKDIR3resok *ok = &r->MKDIR3res_u.resok;
	const sattr3 *s = &a->attributes;
	sattr3 rest = *s;

	r->status = dir_open(&a->where.dir, &dirfd);
	if (r->status)
		return true;
	wcc_begin(dirfd, &ok->dir_wcc);
	if (is_dot(a->where.name))
		r->status = NFS3ERR_EXIST;
	else if (mkdirat(dirfd, a->where.name,
			 s->mode.set_it ? s->mode.set_mode3_u.mode & 07777 : 0755) < 0)
		r->status = errno_status(errno);
	rest.mode.set_it = FALSE;
	rest.size.set_it = FALSE;
	if (!r->status && (fd = openat(dirfd, a->where.name, O_PATH | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		r->status = set_attrs(fd, &rest);
		close(fd);
	}
	if (!r->status)
		new_obj(dirfd, a->where.name, &ok->obj, &ok->obj_attributes);
	wcc_end(dirfd, &ok->dir_wcc);
	wcc_to_fail(r->status, &ok->dir_wcc, &r->MKDIR3res_u.resfail.dir_wcc);
	close(dirfd);
	return true;
}

static bool p_symlink(SYMLINK3args *a, SYMLINK3res *r)
{
	int dirfd;
	SYMLINK3resok *ok = &r->SYMLINK3res_u.resok;

	r->status = dir_open(&a->where.dir, &dirfd);
	if (r->status)
		return true;
	wcc_begin(dirfd, &ok->dir_wcc);
	if (is_dot(a->where.name))
		r->status = NFS3ERR_EXIST;
	else if (!*a->symlink.symlink_data)
		r->status = NFS3ERR_INVAL;
	else if (symlinkat(a->symlink.symlink_data, dirfd, a->where.name) < 0)
		r->status = errno_status(errno);
	if (!r->status)
		new_obj(dirfd, a->where.name, &ok->obj, &ok->obj_attributes);
	wcc_end(dirfd, &ok->dir_wcc);
	wcc_to_fail(r->status, &ok->dir_wcc, &r->SYMLINK3res_u.resfail.dir_wcc);
	close(dirfd);
	return true;
}

/* Devices, sockets and FIFOs are not made over the network here. */
static bool p_mknod(MKNOD3args *a, MKNOD3res *r)
{
	int dirfd;

	r->status = dir_open(&a->where.dir, &dirfd);
	if (r->status)
		return true;
	wcc_begin(dirfd, &r->MKNOD3res_u.resfail.dir_wcc);
	r->status = NFS3ERR_NOTSUPP;
	wcc_end(dirfd, &r->MKNOD3res_u.resfail.dir_wcc);
	close(dirfd);
	return true;
}

/* REMOVE and RMDIR ("." and "..": ACCES, as knfsd). */
static nfsstat3 unlink_in(const diropargs3 *d, int flags, wcc_data *w)
{
	int dirfd;
	nfsstat3 st = dir_open(&d->dir, &dirfd);

	if (st)
		return st;
	wcc_begin(dirfd, w);
	if (is_dot(d->name))
		st = NFS3ERR_ACCES;
	else if (unlinkat(dirfd, d->name, flags) < 0)
		st = errno_status(errno);
	wcc_end(dirfd, w);
	close(dirfd);
	return st;
}

static bool p_remove(REMOVE3args *a, REMOVE3res *r)
{
	r->status = unlink_in(&a->object, 0, &r->REMOVE3res_u.resok.dir_wcc);
	return true;
}

static bool p_rmdir(RMDIR3args *a, RMDIR3res *r)
{
	r->status = unlink_in(&a->object, AT_REMOVEDIR, &r->RMDIR3res_u.resok.dir_wcc);
	return true;
}

static bool p_rename(RENAME3args *a, RENAME3res *r)
{
	int from, to = -1;
	RENAME3resok *ok = &r->RENAME3res_u.resok;

	r->status = dir_open(&a->from.dir, &from);
	if (r->status)
		return true;
	r->status = dir_open(&a->to.dir, &to);
	wcc_begin(from, &ok->fromdir_wcc);
	wcc_begin(to, &ok->todir_wcc);
	if (!r->status && (is_dot(a->from.name) || is_dot(a->to.name)))
		r->status = NFS3ERR_INVAL;
	else if (!r->status && renameat(from, a->from.name, to, a->to.name) < 0)
		r->status = errno_status(errno);
	wcc_end(from, &ok->fromdir_wcc);
	wcc_end(to, &ok->todir_wcc);
	close(from);
	close_fd(to);
	return true;
}

static bool p_link(LINK3args *a, LINK3res *r)
{
	int fd, dirfd = -1;
	char p[40];
	LINK3resok *ok = &r->LINK3res_u.resok;

	r->status = fh_open(&a->file, O_PATH, &fd);
	if (r->status)
		return true;
	r->status = dir_open(&a->link.dir, &dirfd);
	wcc_begin(dirfd, &ok->linkdir_wcc);
	proc_path(fd, p, sizeof(p));
	if (!r->status && is_dot(a->link.name))
		r->status = NFS3ERR_EXIST;
	else if (!r->status && linkat(AT_FDCWD, p, dirfd, a->link.name, AT_SYMLINK_FOLLOW) < 0)
		r->status = errno_status(errno);
	post_attr(fd, &ok->file_attributes);
	wcc_end(dirfd, &ok->linkdir_wcc);
	close(fd);
	close_fd(dirfd);
	return true;
}

/* ---- READDIR and READDIRPLUS ----
 * Cookies are the directory's own offsets (getdents64's d_off), so a listing continues
 * where it stopped whatever happened in between; the cookie verifier is always zero. */

struct dscan {
	int fd;
	long n, pos;
	char buf[32768];
};

static struct dirent64 *dscan_next(struct dscan *d)
{
	struct dirent64 *e;

	if (d->pos >= d->n) {
		d->n = getdents64(d->fd, d->buf, sizeof(d->buf));
		d->pos = 0;
		if (d->n <= 0)
			return NULL;
	}
	e = (struct dirent64 *)(d->buf + d->pos);
	d->pos += e->d_reclen;
	return e;
}

static uint32_t xdr_len(size_t n)
{
	return 4 + (uint32_t)((n + 3) & ~(size_t)3);
}

#define ENTRY_SIZE(name) (4 + 8 + xdr_len(strlen(name)) + 8)    /* value follows, ... */
#define ATTR_SIZE (4 + 84)                                      /* post_op_attr */
#define FH_SIZE (4 + 4 + NFS3_FHSIZE)                           /* post_op_fh3, at most */
#define DIR_HEAD (4 + ATTR_SIZE + 8 + 4 + 4)   /* status, dir attributes, verifier, end, eof */

/* The directory of a READDIR/READDIRPLUS, positioned at the cookie. */
static nfsstat3 dir_at(const nfs_fh3 *fh, cookie3 cookie, struct dscan *d, struct stat *sb)
{
	nfsstat3 st = fh_open(fh, O_RDONLY | O_DIRECTORY, &d->fd);

	d->n = d->pos = 0;
	if (st)
		return st;
	if (fstat(d->fd, sb) < 0 || (cookie && lseek(d->fd, (off_t)cookie, SEEK_SET) < 0)) {
		close(d->fd);
		d->fd = -1;
		return NFS3ERR_BAD_COOKIE;
	}
	return NFS3_OK;
}

/* ".." of DIR is DIR, here as in LOOKUP. */
static const char *entry_name(const struct stat *dir, const struct dirent64 *e)
{
	return !strcmp(e->d_name, "..") && is_root(dir) ? "." : e->d_name;
}

static bool p_readdir(READDIR3args *a, READDIR3res *r)
{
	struct dscan *d = malloc(sizeof(*d));
	struct dirent64 *e;
	struct stat sb;
	READDIR3resok *ok = &r->READDIR3res_u.resok;
	entry3 **tail = &ok->reply.entries;
	uint32_t used = DIR_HEAD, count = a->count > MAX_IO ? MAX_IO : a->count;

	if (!d) {
		r->status = NFS3ERR_JUKEBOX;
		return true;
	}
	r->status = dir_at(&a->dir, a->cookie, d, &sb);
	if (r->status)
		goto out_free;
	ok->reply.eof = TRUE;
	while ((e = dscan_next(d)) != NULL) {
		entry3 *n;

		if (used + ENTRY_SIZE(e->d_name) > count) {
			ok->reply.eof = FALSE;
			break;
		}
		if (!(n = calloc(1, sizeof(*n))) || !(n->name = strdup(e->d_name))) {
			free(n);
			r->status = NFS3ERR_JUKEBOX;
			break;
		}
		used += ENTRY_SIZE(e->d_name);
		n->fileid = !strcmp(e->d_name, "..") && is_root(&sb) ? sb.st_ino : e->d_ino;
		n->cookie = (cookie3)e->d_off;
		*tail = n;
		tail = &n->nextentry;
	}
	if (!r->status && !ok->reply.entries && !ok->reply.eof)
		r->status = NFS3ERR_TOOSMALL;
	post_attr(d->fd, r->status ? &r->READDIR3res_u.resfail.dir_attributes
				   : &ok->dir_attributes);
	close(d->fd);
out_free:
	free(d);
	return true;
}

static bool plus_entry(int dirfd, const struct stat *dir, const struct dirent64 *e,
		       entryplus3 *n)
{
	int fd = openat(dirfd, entry_name(dir, e), O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (!(n->name = strdup(e->d_name))) {
		close_fd(fd);
		return false;
	}
	n->cookie = (cookie3)e->d_off;
	n->fileid = e->d_ino;
	post_attr(fd, &n->name_attributes);
	if (n->name_attributes.attributes_follow)
		n->fileid = n->name_attributes.post_op_attr_u.attributes.fileid;
	n->name_handle.handle_follows =
		fd >= 0 && fh_of(fd, "", &n->name_handle.post_op_fh3_u.handle) == NFS3_OK;
	close_fd(fd);
	return true;
}

static bool p_readdirplus(READDIRPLUS3args *a, READDIRPLUS3res *r)
{
	struct dscan *d = malloc(sizeof(*d));
	struct dirent64 *e;
	struct stat sb;
	READDIRPLUS3resok *ok = &r->READDIRPLUS3res_u.resok;
	entryplus3 **tail = &ok->reply.entries;
	uint32_t used = DIR_HEAD, names = 0, max = a->maxcount > MAX_IO ? MAX_IO : a->maxcount;

	if (!d) {
		r->status = NFS3ERR_JUKEBOX;
		return true;
	}
	r->status = dir_at(&a->dir, a->cookie, d, &sb);
	if (r->status)
		goto out_free;
	ok->reply.eof = TRUE;
	while ((e = dscan_next(d)) != NULL) {
		entryplus3 *n;
		uint32_t sz = ENTRY_SIZE(e->d_name);

		if (used + sz + ATTR_SIZE + FH_SIZE > max ||
		    (a->dircount && names + sz > a->dircount)) {
			ok->reply.eof = FALSE;
			break;
		}
		if (!(n = calloc(1, sizeof(*n))) || !plus_entry(d->fd, &sb, e, n)) {
			free(n);
			r->status = NFS3ERR_JUKEBOX;
			break;
		}
		used += sz + ATTR_SIZE + FH_SIZE;
		names += sz;
		*tail = n;
		tail = &n->nextentry;
	}
	if (!r->status && !ok->reply.entries && !ok->reply.eof)
		r->status = NFS3ERR_TOOSMALL;
	post_attr(d->fd, r->status ? &r->READDIRPLUS3res_u.resfail.dir_attributes
				   : &ok->dir_attributes);
	close(d->fd);
out_free:
	free(d);
	return true;
}

/* ---- the file system ---- */

static bool p_fsstat(FSSTAT3args *a, FSSTAT3res *r)
{
	int fd;
	struct statvfs v;
	FSSTAT3resok *ok = &r->FSSTAT3res_u.resok;

	r->status = fh_open(&a->fsroot, O_RDONLY, &fd);
	if (r->status)
		return true;
	if (fstatvfs(fd, &v) < 0) {
		r->status = errno_status(errno);
		post_attr(fd, &r->FSSTAT3res_u.resfail.obj_attributes);
	} else {
		ok->tbytes = (size3)v.f_blocks * v.f_frsize;
		ok->fbytes = (size3)v.f_bfree * v.f_frsize;
		ok->abytes = (size3)v.f_bavail * v.f_frsize;
		ok->tfiles = v.f_files;
		ok->ffiles = v.f_ffree;
		ok->afiles = v.f_favail;
		ok->invarsec = 0;
		post_attr(fd, &ok->obj_attributes);
	}
	close(fd);
	return true;
}

static bool p_fsinfo(FSINFO3args *a, FSINFO3res *r)
{
	int fd;
	FSINFO3resok *ok = &r->FSINFO3res_u.resok;

	r->status = fh_open(&a->fsroot, O_PATH, &fd);
	if (r->status)
		return true;
	ok->rtmax = ok->rtpref = ok->wtmax = ok->wtpref = MAX_IO;
	ok->rtmult = ok->wtmult = 4096;
	ok->dtpref = 64 * 1024;
	ok->maxfilesize = OFFSET_MAX;
	ok->time_delta.seconds = 0;
	ok->time_delta.nseconds = 1;
	ok->properties = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
	post_attr(fd, &ok->obj_attributes);
	close(fd);
	return true;
}

static bool p_pathconf(PATHCONF3args *a, PATHCONF3res *r)
{
	int fd;
	PATHCONF3resok *ok = &r->PATHCONF3res_u.resok;

	r->status = fh_open(&a->object, O_PATH, &fd);
	if (r->status)
		return true;
	ok->linkmax = 32000;
	ok->name_max = RPCRDMA_NFS3_MAXNAMLEN;
	ok->no_trunc = TRUE;
	ok->chown_restricted = TRUE;
	ok->case_insensitive = FALSE;
	ok->case_preserving = TRUE;
	post_attr(fd, &ok->obj_attributes);
	close(fd);
	return true;
}

static bool p_commit(COMMIT3args *a, COMMIT3res *r)
{
	int fd;
	COMMIT3resok *ok = &r->COMMIT3res_u.resok;

	r->status = fh_open(&a->file, O_RDONLY, &fd);
	if (r->status)
		return true;
	wcc_begin(fd, &ok->file_wcc);
	if (fsync(fd) < 0)
		r->status = errno_status(errno);
	else
		memcpy(ok->verf, ex.verf, sizeof(ex.verf));
	wcc_end(fd, &ok->file_wcc);
	close(fd);
	return true;
}

/* ---- arguments with names, decoded strictly (rpcrdma_xdr_nfs3_name) ---- */

static bool_t xdr_dirop(XDR *x, diropargs3 *d)
{
	return xdr_nfs_fh3(x, &d->dir) && rpcrdma_xdr_nfs3_name(x, &d->name);
}

static bool_t xa_lookup(XDR *x, LOOKUP3args *a)
{
	return xdr_dirop(x, &a->what);
}

static bool_t xa_create(XDR *x, CREATE3args *a)
{
	return xdr_dirop(x, &a->where) && xdr_createhow3(x, &a->how);
}

static bool_t xa_mkdir(XDR *x, MKDIR3args *a)
{
	return xdr_dirop(x, &a->where) && xdr_sattr3(x, &a->attributes);
}

/* Over RDMA the binding's routines decode SYMLINK and WRITE (their bulk items are
 * DDP-eligible, bounded by the chunks pulled); these are for ONC RPC/TCP, where the
 * generated ones would allocate whatever length the client claims (nfspath3 and opaque
 * data<> have no bound): the path is bounded as the binding bounds it, the data by wtmax. */
static bool_t xa_symlink(XDR *x, SYMLINK3args *a)
{
	return xdr_dirop(x, &a->where) && xdr_sattr3(x, &a->symlink.symlink_attributes) &&
	       xdr_string(x, &a->symlink.symlink_data, RPCRDMA_NFS3_MAXPATHLEN);
}

static bool_t xa_write(XDR *x, WRITE3args *a)
{
	return xdr_nfs_fh3(x, &a->file) && xdr_offset3(x, &a->offset) &&
	       xdr_count3(x, &a->count) && xdr_stable_how(x, &a->stable) &&
	       xdr_bytes(x, &a->data.data_val, &a->data.data_len, MAX_IO);
}

static bool_t xa_mknod(XDR *x, MKNOD3args *a)
{
	return xdr_dirop(x, &a->where) && xdr_mknoddata3(x, &a->what);
}

static bool_t xa_remove(XDR *x, REMOVE3args *a)
{
	return xdr_dirop(x, &a->object);
}

static bool_t xa_rmdir(XDR *x, RMDIR3args *a)
{
	return xdr_dirop(x, &a->object);
}

static bool_t xa_rename(XDR *x, RENAME3args *a)
{
	return xdr_dirop(x, &a->from) && xdr_dirop(x, &a->to);
}

static bool_t xa_link(XDR *x, LINK3args *a)
{
	return xdr_nfs_fh3(x, &a->file) && xdr_dirop(x, &a->link);
}

/* ---- dispatch ---- */

typedef bool (*proc_fn)(void *args, void *res);

/* xdr_void() as an xdrproc_t (libtirpc declares it without arguments) */
static bool_t x_void(XDR *x, void *p)
{
	(void)x;
	(void)p;
	return TRUE;
}

struct proc {
	const char *name;
	xdrproc_t xargs, xres;
	proc_fn fn;
};

#define P(n, xa, xr, f) { n, (xdrproc_t)(xa), (xdrproc_t)(xr), (proc_fn)(f) }

static const struct proc procs[] = {
	[NFSPROC3_NULL] = P("NULL", x_void, x_void, p_null),
	[NFSPROC3_GETATTR] = P("GETATTR", xdr_GETATTR3args, xdr_GETATTR3res, p_getattr),
	[NFSPROC3_SETATTR] = P("SETATTR", xdr_SETATTR3args, xdr_SETATTR3res, p_setattr),
	[NFSPROC3_LOOKUP] = P("LOOKUP", xa_lookup, xdr_LOOKUP3res, p_lookup),
	[NFSPROC3_ACCESS] = P("ACCESS", xdr_ACCESS3args, xdr_ACCESS3res, p_access),
	[NFSPROC3_READLINK] = P("READLINK", xdr_READLINK3args, xdr_READLINK3res, p_readlink),
	[NFSPROC3_READ] = P("READ", xdr_READ3args, xdr_READ3res, p_read),
	[NFSPROC3_WRITE] = P("WRITE", xa_write, xdr_WRITE3res, p_write),
	[NFSPROC3_CREATE] = P("CREATE", xa_create, xdr_CREATE3res, p_create),
	[NFSPROC3_MKDIR] = P("MKDIR", xa_mkdir, xdr_MKDIR3res, p_mkdir),
	[NFSPROC3_SYMLINK] = P("SYMLINK", xa_symlink, xdr_SYMLINK3res, p_symlink),
	[NFSPROC3_MKNOD] = P("MKNOD", xa_mknod, xdr_MKNOD3res, p_mknod),
	[NFSPROC3_REMOVE] = P("REMOVE", xa_remove, xdr_REMOVE3res, p_remove),
	[NFSPROC3_RMDIR] = P("RMDIR", xa_rmdir, xdr_RMDIR3res, p_rmdir),
	[NFSPROC3_RENAME] = P("RENAME", xa_rename, xdr_RENAME3res, p_rename),
	[NFSPROC3_LINK] = P("LINK", xa_link, xdr_LINK3res, p_link),
	[NFSPROC3_READDIR] = P("READDIR", xdr_READDIR3args, xdr_READDIR3res, p_readdir),
	[NFSPROC3_READDIRPLUS] = P("READDIRPLUS", xdr_READDIRPLUS3args, xdr_READDIRPLUS3res,
				   p_readdirplus),
	[NFSPROC3_FSSTAT] = P("FSSTAT", xdr_FSSTAT3args, xdr_FSSTAT3res, p_fsstat),
	[NFSPROC3_FSINFO] = P("FSINFO", xdr_FSINFO3args, xdr_FSINFO3res, p_fsinfo),
	[NFSPROC3_PATHCONF] = P("PATHCONF", xdr_PATHCONF3args, xdr_PATHCONF3res, p_pathconf),
	[NFSPROC3_COMMIT] = P("COMMIT", xdr_COMMIT3args, xdr_COMMIT3res, p_commit),
};

union nfs3_args {
	GETATTR3args getattr; SETATTR3args setattr; LOOKUP3args lookup; ACCESS3args access;
	READLINK3args readlink; READ3args read; WRITE3args write; CREATE3args create;
	MKDIR3args mkdir; SYMLINK3args symlink; MKNOD3args mknod; REMOVE3args remove;
	RMDIR3args rmdir; RENAME3args rename; LINK3args link; READDIR3args readdir;
	READDIRPLUS3args readdirplus; FSSTAT3args fsstat; FSINFO3args fsinfo;
	PATHCONF3args pathconf; COMMIT3args commit;
};

union nfs3_res {
	GETATTR3res getattr; SETATTR3res setattr; LOOKUP3res lookup; ACCESS3res access;
	READLINK3res readlink; READ3res read; WRITE3res write; CREATE3res create;
	MKDIR3res mkdir; SYMLINK3res symlink; MKNOD3res mknod; REMOVE3res remove;
	RMDIR3res rmdir; RENAME3res rename; LINK3res link; READDIR3res readdir;
	READDIRPLUS3res readdirplus; FSSTAT3res fsstat; FSINFO3res fsinfo;
	PATHCONF3res pathconf; COMMIT3res commit;
};

/* Every result union starts with its nfsstat3. */
static void log_call(const struct proc *p, const SVCXPRT *x, bool garbage, const void *res)
{
	if (!ex.verbose)
		return;
	if (garbage)
		fprintf(stderr, "nfs3d: %s over %s: GARBAGE_ARGS\n", p->name, x->xp_netid);
	else
		fprintf(stderr, "nfs3d: %s over %s: %d\n", p->name, x->xp_netid,
			p->xres == (xdrproc_t)x_void ? 0 : *(const int *)res);
}

static void nfs3_dispatch(struct svc_req *rq, SVCXPRT *x)
{
	const struct proc *p;
	union nfs3_args a;
	union nfs3_res r;
	bool ok;

	if (rq->rq_proc >= sizeof(procs) / sizeof(procs[0])) {
		svcerr_noproc(x);
		return;
	}
	p = &procs[rq->rq_proc];
	memset(&a, 0, sizeof(a));
	memset(&r, 0, sizeof(r));
	ok = svc_getargs(x, p->xargs, (caddr_t)&a) && p->fn(&a, &r);
	log_call(p, x, !ok, &r);
	if (!ok)
		svcerr_decode(x);
	else if (!svc_sendreply(x, p->xres, (caddr_t)&r))
		svcerr_systemerr(x);
	svc_freeargs(x, p->xargs, (caddr_t)&a);
	xdr_free(p->xres, (caddr_t)&r);
}

/* ---- MOUNT v3 (RFC 1813 Appendix I) ---- */

bool_t mountproc3_null_3_svc(void *a, void *r, struct svc_req *rq)
{
	(void)a;
	(void)r;
	(void)rq;
	return TRUE;
}

/* DIR, or a directory below it (as knfsd lets a client mount part of an export). */
bool_t mountproc3_mnt_3_svc(dirpath3 *a, mountres3 *r, struct svc_req *rq)
{
	char real[PATH_MAX];
	struct stat sb;
	nfs_fh3 fh = { { 0, NULL } };
	static int flavors[] = { AUTH_UNIX };
	mountres3_ok *ok = &r->mountres3_u.mountinfo;

	(void)rq;
	memset(r, 0, sizeof(*r));
	if (!realpath(*a, real) || stat(real, &sb) < 0) {
		r->fhs_status = MNT3ERR_NOENT;
	} else if (strncmp(real, ex.path, ex.path_len) ||
		   (real[ex.path_len] != '/' && real[ex.path_len] && ex.path_len > 1)) {
		r->fhs_status = MNT3ERR_ACCES;
	} else if (!S_ISDIR(sb.st_mode)) {
		r->fhs_status = MNT3ERR_NOTDIR;
	} else if (fh_of(AT_FDCWD, real, &fh) != NFS3_OK) {
		r->fhs_status = MNT3ERR_SERVERFAULT;
	} else {
		r->fhs_status = MNT3_OK;
		ok->fhandle.fhandle3_val = fh.data.data_val;
		ok->fhandle.fhandle3_len = fh.data.data_len;
		ok->auth_flavors.auth_flavors_val = malloc(sizeof(flavors));
		if (ok->auth_flavors.auth_flavors_val) {
			memcpy(ok->auth_flavors.auth_flavors_val, flavors, sizeof(flavors));
			ok->auth_flavors.auth_flavors_len = 1;
		}
	}
	if (ex.verbose)
		fprintf(stderr, "nfs3d: MNT %s: %d\n", *a, r->fhs_status);
	return TRUE;
}

bool_t mountproc3_umnt_3_svc(dirpath3 *a, void *r, struct svc_req *rq)
{
	(void)a;
	(void)r;
	(void)rq;
	return TRUE;   /* nfs3d keeps no list of mounts */
}

bool_t mountproc3_export_3_svc(void *a, exports3 *r, struct svc_req *rq)
{
	exportnode3 *n = calloc(1, sizeof(*n));

	(void)a;
	(void)rq;
	*r = NULL;
	if (n && (n->ex_dir = strdup(ex.path)))
		*r = n;
	else
		free(n);
	return TRUE;
}

int mount_program_3_freeresult(SVCXPRT *x, xdrproc_t xres, caddr_t res)
{
	(void)x;
	xdr_free(xres, res);
	return 1;
}

/* ---- setup ---- */

struct opts {
	const char *provider;
	char host[256];             /* "": every address */
	uint32_t port;              /* RDMA */
	uint32_t mount_port, tcp_port;
	int threads;
	const char *dir;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nfs3d [--provider P] [--listen ADDR:PORT] [--mount-port N] [--tcp-port N]\n"
		"             [--threads N] [-v] DIR\n"
		"Serves DIR over NFSv3: over RPC-over-RDMA (RFC 5666/8267) and ONC RPC/TCP, with\n"
		"MOUNT v3 over TCP. Everyone who reaches the ports may read and write DIR.\n"
		"  --provider P    tcp, shm or verbs (default: $RPCRDMA_PROVIDER, else tcp)\n"
		"  --listen A:P    RDMA address and port (default: every address, port 20049);\n"
		"                  the TCP ports listen on the same address; port 0: any\n"
		"  --mount-port N  MOUNT v3 over TCP (default 0: any)\n"
		"  --tcp-port N    NFSv3 over TCP (default 0: any)\n"
		"  --threads N     RDMA dispatch threads, also for one connection (default 8)\n"
		"  -v              a line per call on stderr\n"
		"Needs CAP_DAC_READ_SEARCH (root): file handles are the kernel's, valid across\n"
		"restarts. Prints \"nfs3d: DIR rdma=P tcp=P mount=P provider=P\" when it serves.\n");
}

static int parse_port(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (!*s || *end || v > 65535)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* ADDR:PORT, [ADDR6]:PORT or :PORT */
static int parse_listen(const char *s, struct opts *o)
{
	const char *colon = strrchr(s, ':');
	size_t hl;

	if (!colon || parse_port(colon + 1, &o->port) < 0)
		return -1;
	hl = (size_t)(colon - s);
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		s++;
		hl -= 2;
	}
	if (hl >= sizeof(o->host))
		return -1;
	memcpy(o->host, s, hl);
	o->host[hl] = '\0';
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->port = 20049;
	o->threads = 8;
	for (i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(argv[i], "-v")) {
			ex.verbose = 1;
		} else if (!strcmp(argv[i], "--provider") && v) {
			o->provider = v;
			i++;
		} else if (!strcmp(argv[i], "--listen") && v && parse_listen(v, o) == 0) {
			i++;
		} else if (!strcmp(argv[i], "--mount-port") && v && parse_port(v, &o->mount_port) == 0) {
			i++;
		} else if (!strcmp(argv[i], "--tcp-port") && v && parse_port(v, &o->tcp_port) == 0) {
			i++;
		} else if (!strcmp(argv[i], "--threads") && v && atoi(v) > 0 && atoi(v) <= 64) {
			o->threads = atoi(v);
			i++;
		} else if (argv[i][0] != '-' && !o->dir) {
			o->dir = argv[i];
		} else {
			fprintf(stderr, "nfs3d: bad argument '%s'\n", argv[i]);
			return -1;
		}
	}
	if (!o->dir) {
		fprintf(stderr, "nfs3d: no directory to serve\n");
		return -1;
	}
	return 0;
}

static uint32_t fnv1a(const unsigned char *p, size_t n, uint32_t h)
{
	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

/* DIR: its handle is tried at once, since nothing works without handles. */
static int export_open(const char *dir)
{
	struct kfh k;
	int fd;
	uint32_t type;

	if (!realpath(dir, ex.path)) {
		fprintf(stderr, "nfs3d: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	ex.path_len = strlen(ex.path);
	ex.root_fd = open(ex.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ex.root_fd < 0 || fstat(ex.root_fd, &ex.st) < 0) {
		fprintf(stderr, "nfs3d: %s: %s\n", ex.path, strerror(errno));
		return -1;
	}
	k.h.handle_bytes = KFH_MAX;
	if (name_to_handle_at(ex.root_fd, "", &k.h, &ex.mount_id, AT_EMPTY_PATH) < 0) {
		fprintf(stderr, "nfs3d: %s: the file system gives no file handles "
			"(name_to_handle_at: %s)\n", ex.path, strerror(errno));
		return -1;
	}
	type = (uint32_t)k.h.handle_type;
	ex.tag = fnv1a((const unsigned char *)&type, sizeof(type), 2166136261u);
	ex.tag = fnv1a(k.h.f_handle, k.h.handle_bytes, ex.tag);
	fd = open_by_handle_at(ex.root_fd, &k.h, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "nfs3d: open_by_handle_at: %s%s\n", strerror(errno),
			errno == EPERM ? " (it needs CAP_DAC_READ_SEARCH: run nfs3d as root)" : "");
		return -1;
	}
	close(fd);
	if (getrandom(ex.verf, sizeof(ex.verf), 0) != (ssize_t)sizeof(ex.verf)) {
		fprintf(stderr, "nfs3d: getrandom: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* A TCP listener on the given address (every one if empty; port 0: any) served by the
 * library's runtime, as RDMA is: rpcrdma_svc_run()'s workers, lanes calls of one
 * connection at once, the duplicate request cache across reconnections, and no client
 * (silent, slow to read its replies) holding a worker or another client. */
static SVCXPRT *tcp_listener(const char *host, uint32_t port, uint32_t lanes, uint16_t *bound)
{
	struct rpcrdma_svc_opts so;
	SVCXPRT *x;

	memset(&so, 0, sizeof(so));
	so.host = *host ? host : NULL;
	so.port = port ? port : RPCRDMA_PORT_ANY;
	so.conn_parallel = lanes;
	x = svc_rdma_tcp_create(&so);
	if (!x) {
		fprintf(stderr, "nfs3d: TCP port %u on %s: %s\n", port, *host ? host : "every address",
			rpcrdma_create_errtext());
		return NULL;
	}
	*bound = svc_rdma_port(x);
	return x;
}

static int rpcb_one(rpcprog_t prog, rpcvers_t vers, const char *netid, struct netbuf *addr)
{
	struct netconfig *nc = getnetconfigent(netid);
	int ok = nc && rpcb_set(prog, vers, nc, addr);

	if (nc)
		freenetconfigent(nc);
	return ok;
}

/* rpcbind, when it runs, learns the TCP services: netid tcp6 for an IPv6 listener (and
 * tcp with 0.0.0.0 as well when it takes IPv4 too), tcp for an IPv4 one. rpcb_set()
 * rather than pmap_set(), which is IPv4 only. (The RDMA ones are registered by
 * svc_register() on the RDMA listener, under netid rdma/rdma6.) */
static void tcp_register(rpcprog_t prog, rpcvers_t vers, SVCXPRT *x)
{
	struct sockaddr_storage *ss = (struct sockaddr_storage *)x->xp_ltaddr.buf;
	struct sockaddr_in any4 = { .sin_family = AF_INET };
	struct netbuf nb4 = { sizeof(any4), sizeof(any4), &any4 };
	int ok;

	if (ss->ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		ok = rpcb_one(prog, vers, "tcp6", &x->xp_ltaddr);
		any4.sin_port = s6->sin6_port;
		if (ok && IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))
			ok = rpcb_one(prog, vers, "tcp", &nb4);
	} else {
		ok = rpcb_one(prog, vers, "tcp", &x->xp_ltaddr);
	}
	if (!ok)
		fprintf(stderr, "nfs3d: rpcbind took no registration of program %lu version %lu "
			"over TCP (not running?): clients must name the port\n",
			(unsigned long)prog, (unsigned long)vers);
}

/* Every netid of prog/vers in rpcbind: tcp, tcp6, rdma, rdma6. */
static void rpcb_drop(rpcprog_t prog, rpcvers_t vers)
{
	rpcb_unset(prog, vers, NULL);
}

static uint16_t g_tcp_port, g_mount_port;

static void *signals(void *arg)
{
	sigset_t *set = arg;
	int sig;

	sigwait(set, &sig);
	rpcb_drop(NFS_PROGRAM, NFS_V3);
	rpcb_drop(MOUNT_PROGRAM, MOUNT_V3);
	exit(0);   /* the library takes its own RDMA registrations back at exit too */
	return NULL;
}

static SVCXPRT *rdma_listener(const struct opts *o)
{
	struct rpcrdma_svc_opts so;
	SVCXPRT *x;

	memset(&so, 0, sizeof(so));
	so.provider = o->provider;
	so.host = *o->host ? o->host : NULL;
	so.port = o->port ? o->port : RPCRDMA_PORT_ANY;
	so.max_credits = 128;      /* what Linux's client asks for */
	so.workers_only = 1;       /* svc_run() serves the TCP transports on its own thread */
	so.conn_parallel = (uint32_t)o->threads;   /* Linux's client: one connection a mount */
	so.lend_args = 1;          /* a WRITE's data is written from where its chunk landed */
	x = svc_rdma_create(&so);
	if (!x)
		fprintf(stderr, "nfs3d: RDMA: %s\n", rpcrdma_create_errtext());
	return x;
}

int main(int argc, char **argv)
{
	struct opts o;
	SVCXPRT *rdma, *tcp, *mnt;
	pthread_t th;
	static sigset_t set;

	if (parse_args(argc, argv, &o) < 0) {
		usage(stderr);
		return 2;
	}
	if (export_open(o.dir) < 0)
		return 1;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	rpcrdma_ulb_register(rpcrdma_ulb_nfs3());
	rdma = rdma_listener(&o);
	tcp = rdma ? tcp_listener(o.host, o.tcp_port, (uint32_t)o.threads, &g_tcp_port) : NULL;
	mnt = tcp ? tcp_listener(o.host, o.mount_port, 1, &g_mount_port) : NULL;
	if (!mnt)
		return 1;
	/* what a killed nfs3d left in rpcbind goes first */
	rpcb_drop(NFS_PROGRAM, NFS_V3);
	rpcb_drop(MOUNT_PROGRAM, MOUNT_V3);
	if (!svc_register(rdma, NFS_PROGRAM, NFS_V3, nfs3_dispatch, IPPROTO_TCP) ||
	    !svc_register(tcp, NFS_PROGRAM, NFS_V3, nfs3_dispatch, 0) ||
	    !svc_register(mnt, MOUNT_PROGRAM, MOUNT_V3, mount_program_3, 0)) {
		fprintf(stderr, "nfs3d: svc_register failed\n");
		return 1;
	}
	tcp_register(NFS_PROGRAM, NFS_V3, tcp);
	tcp_register(MOUNT_PROGRAM, MOUNT_V3, mnt);
	if (pthread_create(&th, NULL, signals, &set)) {
		fprintf(stderr, "nfs3d: cannot start threads\n");
		return 1;
	}
	printf("nfs3d: %s rdma=%u tcp=%u mount=%u provider=%s\n", ex.path, svc_rdma_port(rdma),
	       g_tcp_port, g_mount_port,
	       o.provider ? o.provider : getenv("RPCRDMA_PROVIDER") ? getenv("RPCRDMA_PROVIDER") : "tcp");
	fflush(stdout);
	rpcrdma_svc_run(o.threads);   /* RDMA, NFS over TCP and MOUNT alike */
	return 0;
}
