/* SPDX-License-Identifier: BSD-2-Clause */
/* The NFSv3 procedures (RFC 1813 §3.3), each run under its caller's identity (cred.c)
 * on an object reached by a checked handle (fh.c); and their dispatch, which applies the
 * export's options first. */
#include "nfs3d.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <rpc/rpc.h>

nfsstat3 nfs3d_errno_status(int e)
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

static uint32_t get32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static void proc_path(int fd, char *buf, size_t cap)
{
	snprintf(buf, cap, "/proc/self/fd/%d", fd);
}

static nfsstat3 dir_open(const nfs_fh3 *fh, int *fd)
{
	nfsstat3 st = nfs3d_fh_open(fh, fd);
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
	return *fd < 0 ? nfs3d_errno_status(errno) : NFS3_OK;
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

/* Apply the settable attributes as the caller, through the descriptor's /proc path (an
 * O_PATH descriptor takes no fchmod() or futimens()): the kernel decides who may chown,
 * chmod (a setuid bit only on one's own file) and set times. */
static nfsstat3 set_attrs(int fd, const sattr3 *s)
{
	char p[40];
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
	struct stat sb;

	proc_path(fd, p, sizeof(p));
	if (fstat(fd, &sb) < 0)
		return nfs3d_errno_status(errno);
	if (s->size.set_it && !S_ISREG(sb.st_mode))
		return S_ISDIR(sb.st_mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
	if (s->size.set_it && s->size.set_size3_u.size > OFFSET_MAX)
		return NFS3ERR_FBIG;
	if (s->size.set_it) {
		nfsstat3 st = nfs3d_truncate(fd, &sb, s->size.set_size3_u.size);

		if (st)
			return st;
	}
	if ((s->uid.set_it || s->gid.set_it) &&
	    fchownat(fd, "", s->uid.set_it ? s->uid.set_uid3_u.uid : (uid_t)-1,
		     s->gid.set_it ? s->gid.set_gid3_u.gid : (gid_t)-1, AT_EMPTY_PATH) < 0)
		return nfs3d_errno_status(errno);
	/* a symbolic link has no mode of its own to set (Linux) */
	if (s->mode.set_it && !S_ISLNK(sb.st_mode) &&
	    chmod(p, s->mode.set_mode3_u.mode & 07777) < 0)
		return nfs3d_errno_status(errno);
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
		return nfs3d_errno_status(errno);
	return NFS3_OK;
}

/* The results a new object gives (CREATE, MKDIR, SYMLINK): its handle and attributes. */
static void new_obj(int dirfd, const char *name, post_op_fh3 *obj, post_op_attr *attrs)
{
	int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	obj->handle_follows = fd >= 0 && nfs3d_fh_of(fd, "", &obj->post_op_fh3_u.handle) == NFS3_OK;
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

	r->status = nfs3d_fh_open(&a->object, &fd);
	if (r->status)
		return true;
	if (fstat(fd, &sb) < 0)
		r->status = nfs3d_errno_status(errno);
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

	r->status = nfs3d_fh_open(&a->object, &fd);
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
		r->status = nfs3d_fh_of(fd, "", &ok->object);
		post_attr(fd, &ok->obj_attributes);
		close(fd);
	}
	post_attr(dirfd, r->status ? &r->LOOKUP3res_u.resfail.dir_attributes
				   : &ok->dir_attributes);
	close(dirfd);
	return true;
}

/* What this caller may do, asked of the kernel under its identity, bit by bit as knfsd
 * maps them (nfsd_access(): nfs3_regaccess, nfs3_diraccess, nfs3_anyaccess); a read-only
 * export grants no change to a file or a directory. */
struct access_map {
	uint32 bit;
	int mode;
	bool changes;
};

static const struct access_map reg_access[] = {
	{ ACCESS3_READ, R_OK, false }, { ACCESS3_EXECUTE, X_OK, false },
	{ ACCESS3_MODIFY, W_OK, true }, { ACCESS3_EXTEND, W_OK, true }, { 0, 0, false },
};
static const struct access_map dir_access[] = {
	{ ACCESS3_READ, R_OK, false }, { ACCESS3_LOOKUP, X_OK, false },
	{ ACCESS3_MODIFY, X_OK | W_OK, true }, { ACCESS3_EXTEND, X_OK | W_OK, true },
	{ ACCESS3_DELETE, X_OK | W_OK, true }, { 0, 0, false },
};
static const struct access_map any_access[] = {
	{ ACCESS3_READ, R_OK, false }, { ACCESS3_EXECUTE, X_OK, false },
	{ ACCESS3_MODIFY, W_OK, false }, { ACCESS3_EXTEND, W_OK, false }, { 0, 0, false },
};

static uint32 access_of(int fd, const struct stat *sb, uint32 asked)
{
	const struct access_map *m = S_ISREG(sb->st_mode) ? reg_access
				     : S_ISDIR(sb->st_mode) ? dir_access : any_access;
	uint32 ok = 0;

	for (; m->bit; m++) {
		if (!(asked & m->bit) || (m->changes && nfs3d_opts_now()->ro))
			continue;
		if (syscall(SYS_faccessat2, fd, "", m->mode, AT_EACCESS | AT_EMPTY_PATH) == 0)
			ok |= m->bit;
	}
	return ok;
}

static bool p_access(ACCESS3args *a, ACCESS3res *r)
{
	int fd;
	struct stat sb;

	r->status = nfs3d_fh_open(&a->object, &fd);
	if (r->status)
		return true;
	if (fstat(fd, &sb) < 0)
		r->status = nfs3d_errno_status(errno);
	else
		r->ACCESS3res_u.resok.access = access_of(fd, &sb, a->access);
	post_attr(fd, r->status ? &r->ACCESS3res_u.resfail.obj_attributes
				: &r->ACCESS3res_u.resok.obj_attributes);
	close(fd);
	return true;
}

static bool p_readlink(READLINK3args *a, READLINK3res *r)
{
	int fd;
	char buf[RPCRDMA_NFS3_MAXPATHLEN + 1];
	ssize_t n;
	READLINK3resok *ok = &r->READLINK3res_u.resok;

	r->status = nfs3d_fh_open(&a->symlink, &fd);
	if (r->status)
		return true;
	n = readlinkat(fd, "", buf, sizeof(buf) - 1);
	if (n < 0) {
		r->status = errno == ENOENT ? NFS3ERR_INVAL : nfs3d_errno_status(errno);
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
			return nfs3d_errno_status(errno);
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

	r->status = nfs3d_fh_io(&a->file, false, &fd, &sb);
	if (r->status)
		return true;
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
			return n < 0 ? nfs3d_errno_status(errno) : NFS3ERR_IO;
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

	struct stat sb;

	r->status = nfs3d_fh_io(&a->file, true, &fd, &sb);
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
		r->status = nfs3d_errno_status(errno);
	if (!r->status) {
		ok->count = a->count;
		ok->committed = a->stable;
		memcpy(ok->verf, ex.verf, sizeof(ex.verf));
	}
	wcc_end(fd, w);
	close(fd);
	return true;
}

/* The attributes a new object takes after it is made: an owner only from root, as
 * knfsd's nfsd_create_setattr() drops uid and gid for anyone else (the object is the
 * caller's already). */
static sattr3 new_attrs(const sattr3 *s)
{
	sattr3 rest = *s;

	if (!nfs3d_cred_is_root())
		rest.uid.set_it = rest.gid.set_it = FALSE;
	return rest;
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
		return nfs3d_errno_status(errno);
	if (futimens(fd, ts) < 0) {
		close(fd);
		return nfs3d_errno_status(errno);
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
	/* UNCHECKED finds the one there without opening it (a FIFO's open would block, a
	 * device's act), as knfsd does not open it either */
	if (fd < 0 && errno == EEXIST && how->mode == UNCHECKED)
		fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? NFS3ERR_EXIST : nfs3d_errno_status(errno);
	if (!made && (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))) {
		close(fd);
		return NFS3ERR_EXIST;   /* a directory or a special file of that name */
	}
	if (made) {
		sattr3 rest = new_attrs(s);

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
	sattr3 rest = new_attrs(s);

	r->status = dir_open(&a->where.dir, &dirfd);
	if (r->status)
		return true;
	wcc_begin(dirfd, &ok->dir_wcc);
	if (is_dot(a->where.name))
		r->status = NFS3ERR_EXIST;
	else if (mkdirat(dirfd, a->where.name,
			 s->mode.set_it ? s->mode.set_mode3_u.mode & 07777 : 0755) < 0)
		r->status = nfs3d_errno_status(errno);
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
		r->status = nfs3d_errno_status(errno);
	if (!r->status)
		new_obj(dirfd, a->where.name, &ok->obj, &ok->obj_attributes);
	wcc_end(dirfd, &ok->dir_wcc);
	wcc_to_fail(r->status, &ok->dir_wcc, &r->SYMLINK3res_u.resfail.dir_wcc);
	close(dirfd);
	return true;
}

/* The node MKNOD makes: a device only for a caller the kernel lets make one (a root that
 * was not squashed keeps CAP_MKNOD; no other caller has it), as knfsd. */
static nfsstat3 mknod_mode(const mknoddata3 *w, const sattr3 **s, mode_t *mode, dev_t *dev)
{
	*dev = 0;
	switch (w->type) {
	case NF3CHR:
	case NF3BLK:
		*s = &w->mknoddata3_u.device.dev_attributes;
		*mode = w->type == NF3CHR ? S_IFCHR : S_IFBLK;
		*dev = makedev(w->mknoddata3_u.device.spec.specdata1,
			       w->mknoddata3_u.device.spec.specdata2);
		if (major(*dev) != w->mknoddata3_u.device.spec.specdata1 ||
		    minor(*dev) != w->mknoddata3_u.device.spec.specdata2)
			return NFS3ERR_INVAL;
		break;
	case NF3SOCK:
	case NF3FIFO:
		*s = &w->mknoddata3_u.pipe_attributes;
		*mode = w->type == NF3SOCK ? S_IFSOCK : S_IFIFO;
		break;
	default:
		return NFS3ERR_BADTYPE;
	}
	if ((*s)->mode.set_it)
		*mode |= (*s)->mode.set_mode3_u.mode & 07777;
	return NFS3_OK;
}

static bool p_mknod(MKNOD3args *a, MKNOD3res *r)
{
	int dirfd, fd;
	MKNOD3resok *ok = &r->MKNOD3res_u.resok;
	const sattr3 *s = NULL;
	sattr3 rest;
	mode_t mode = 0;
	dev_t dev;

	r->status = dir_open(&a->where.dir, &dirfd);
	if (r->status)
		return true;
	wcc_begin(dirfd, &ok->dir_wcc);
	r->status = mknod_mode(&a->what, &s, &mode, &dev);
	if (!r->status && is_dot(a->where.name))
		r->status = NFS3ERR_EXIST;
	else if (!r->status && mknodat(dirfd, a->where.name, mode, dev) < 0)
		r->status = nfs3d_errno_status(errno);
	if (!r->status) {
		rest = new_attrs(s);
		rest.mode.set_it = FALSE;
		rest.size.set_it = FALSE;
		fd = openat(dirfd, a->where.name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		r->status = fd < 0 ? nfs3d_errno_status(errno) : set_attrs(fd, &rest);
		close_fd(fd);
	}
	if (!r->status)
		new_obj(dirfd, a->where.name, &ok->obj, &ok->obj_attributes);
	wcc_end(dirfd, &ok->dir_wcc);
	wcc_to_fail(r->status, &ok->dir_wcc, &r->MKNOD3res_u.resfail.dir_wcc);
	close(dirfd);
	return true;
}

/* What a name in a directory is now, so that its cached descriptors go once it is
 * removed or replaced (fh.c: a removed file is not held open). */
static bool name_stat(int dirfd, const char *name, struct stat *sb)
{
	return fstatat(dirfd, name, sb, AT_SYMLINK_NOFOLLOW) == 0;
}

/* REMOVE and RMDIR ("." and "..": ACCES, as knfsd). */
static nfsstat3 unlink_in(const diropargs3 *d, int flags, wcc_data *w)
{
	int dirfd;
	struct stat sb;
	bool known;
	nfsstat3 st = dir_open(&d->dir, &dirfd);

	if (st)
		return st;
	wcc_begin(dirfd, w);
	known = !is_dot(d->name) && name_stat(dirfd, d->name, &sb);
	if (is_dot(d->name))
		st = NFS3ERR_ACCES;
	else if (unlinkat(dirfd, d->name, flags) < 0)
		st = nfs3d_errno_status(errno);
	if (!st && known)
		nfs3d_fh_forget(sb.st_dev, sb.st_ino);
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
	struct stat old;
	bool replaced = false;

	r->status = dir_open(&a->from.dir, &from);
	if (r->status)
		return true;
	r->status = dir_open(&a->to.dir, &to);
	wcc_begin(from, &ok->fromdir_wcc);
	wcc_begin(to, &ok->todir_wcc);
	if (!r->status && (is_dot(a->from.name) || is_dot(a->to.name)))
		r->status = NFS3ERR_INVAL;
	else if (!r->status && (replaced = name_stat(to, a->to.name, &old),
				renameat(from, a->from.name, to, a->to.name) < 0))
		r->status = nfs3d_errno_status(errno);
	if (!r->status && replaced)
		nfs3d_fh_forget(old.st_dev, old.st_ino);
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

	r->status = nfs3d_fh_open(&a->file, &fd);
	if (r->status)
		return true;
	r->status = dir_open(&a->link.dir, &dirfd);
	wcc_begin(dirfd, &ok->linkdir_wcc);
	proc_path(fd, p, sizeof(p));
	if (!r->status && is_dot(a->link.name))
		r->status = NFS3ERR_EXIST;
	else if (!r->status && linkat(AT_FDCWD, p, dirfd, a->link.name, AT_SYMLINK_FOLLOW) < 0)
		r->status = nfs3d_errno_status(errno);
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
	char p[40];
	int pfd;
	nfsstat3 st = nfs3d_fh_open(fh, &pfd);

	d->n = d->pos = 0;
	d->fd = -1;
	if (st)
		return st;
	/* opened for reading as the caller: the kernel checks its read permission */
	proc_path(pfd, p, sizeof(p));
	d->fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	st = d->fd < 0 ? (errno == ENOTDIR ? NFS3ERR_NOTDIR : nfs3d_errno_status(errno)) : NFS3_OK;
	close(pfd);
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
		fd >= 0 && nfs3d_fh_of(fd, "", &n->name_handle.post_op_fh3_u.handle) == NFS3_OK;
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

	r->status = nfs3d_fh_open(&a->fsroot, &fd);
	if (r->status)
		return true;
	if (fstatvfs(fd, &v) < 0) {
		r->status = nfs3d_errno_status(errno);
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

	r->status = nfs3d_fh_open(&a->fsroot, &fd);
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

	r->status = nfs3d_fh_open(&a->object, &fd);
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

	struct stat sb;

	r->status = nfs3d_fh_io(&a->file, true, &fd, &sb);
	if (r->status)
		return true;
	wcc_begin(fd, &ok->file_wcc);
	if (fsync(fd) < 0)
		r->status = nfs3d_errno_status(errno);
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

/* The procedures that change the file system: NFS3ERR_ROFS on a read-only export. */
static bool changes(rpcproc_t proc)
{
	switch (proc) {
	case NFSPROC3_SETATTR: case NFSPROC3_WRITE: case NFSPROC3_CREATE:
	case NFSPROC3_MKDIR: case NFSPROC3_SYMLINK: case NFSPROC3_MKNOD:
	case NFSPROC3_REMOVE: case NFSPROC3_RMDIR: case NFSPROC3_RENAME:
	case NFSPROC3_LINK: case NFSPROC3_COMMIT:
		return true;
	default:
		return false;
	}
}

/* Over RDMA every call counts as from a privileged port, as knfsd's svc_rdma sets
 * RQ_SECURE for all: an RDMA connection's port says nothing of its sender's rights. */
static bool from_rdma(const SVCXPRT *x)
{
	return x->xp_netid && !strncmp(x->xp_netid, "rdma", 4);
}

/* What knfsd answers before it runs a call (nfsd_setuser_and_check_port(),
 * nfsd_permission()), in its order: a TCP call from an unprivileged port on a "secure"
 * export gets NFS3ERR_PERM, a change on a read-only one NFS3ERR_ROFS. */
static nfsstat3 call_refusal(struct svc_req *rq, SVCXPRT *x, const struct nfs3d_opts *o)
{
	const struct netbuf *nb = svc_getrpccaller(x);

	if (!o->insecure && !from_rdma(x) &&
	    !nfs3d_port_secure(nb ? nb->buf : NULL, nb ? nb->len : 0))
		return NFS3ERR_PERM;
	if (o->ro && changes(rq->rq_proc))
		return NFS3ERR_ROFS;
	return NFS3_OK;
}

/* The options for a call's client; NULL, with the RPC-level answer sent, for a client the
 * list does not hold (AUTH_BADCRED, as knfsd's svcauth_unix_set_client() denies it) or a
 * flavour other than AUTH_SYS and AUTH_NONE (AUTH_TOOWEAK). */
const struct nfs3d_opts *nfs3d_call_opts(struct svc_req *rq, SVCXPRT *x)
{
	const struct netbuf *nb = svc_getrpccaller(x);
	const struct nfs3d_opts *o = nfs3d_client_opts(nb ? nb->buf : NULL, nb ? nb->len : 0);

	if (rq->rq_cred.oa_flavor != AUTH_SYS && rq->rq_cred.oa_flavor != AUTH_NONE) {
		svcerr_weakauth(x);
		return NULL;
	}
	if (!o)
		svcerr_auth(x, AUTH_BADCRED);
	return o;
}

/* Per transport (0: RDMA, 1: TCP) and procedure: calls, the time from nfs3d_dispatch()'s
 * start to its reply handed to the library, and in it the hand-over to a thread of the
 * pool and back, the procedure, and svc_sendreply(). What is left of the client's round
 * trip is the transport's and the library's. */
#define NPROCS 22
_Static_assert(sizeof(procs) / sizeof(procs[0]) == NPROCS, "NFSv3 has 22 procedures");
static struct {
	_Atomic uint64_t calls, call, wait, proc, back, reply;
} times[2][NPROCS];

uint64_t nfs3d_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void times_add(const SVCXPRT *x, uint32_t proc, uint64_t call_ns,
		      const struct nfs3d_legs *l, uint64_t reply_ns)
{
	int t = from_rdma(x) ? 0 : 1;

	times[t][proc].calls++;
	times[t][proc].call += call_ns;
	times[t][proc].wait += l->wait;
	times[t][proc].proc += l->proc;
	times[t][proc].back += l->back;
	times[t][proc].reply += reply_ns;
}

/* The procedure, on a thread of the pool under the caller's identity (or refused: never
 * run as root by mistake). NULL takes no identity. */
static bool run_call(struct svc_req *rq, const struct proc *p, const struct nfs3d_opts *o,
		     union nfs3_args *a, union nfs3_res *r, struct nfs3d_legs *legs)
{
	struct nfs3d_cred c;
	int rc;

	if (rq->rq_proc == NFSPROC3_NULL)
		return true;
	nfs3d_cred_map(o, (int)rq->rq_cred.oa_flavor, rq->rq_clntcred, &c);
	rc = nfs3d_run_as(&c, o, p->fn, a, r, legs);
	if (rc < 0)
		r->getattr.status = NFS3ERR_SERVERFAULT;
	return rc != 0;
}

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

void nfs3d_dispatch(struct svc_req *rq, SVCXPRT *x)
{
	uint64_t t0 = nfs3d_now_ns(), t1;
	struct nfs3d_legs legs = { 0, 0, 0 };
	const struct proc *p;
	union nfs3_args a;
	union nfs3_res r;
	const struct nfs3d_opts *o = NULL;
	bool ok;

	if (rq->rq_proc >= sizeof(procs) / sizeof(procs[0])) {
		svcerr_noproc(x);
		return;
	}
	p = &procs[rq->rq_proc];
	memset(&a, 0, sizeof(a));
	memset(&r, 0, sizeof(r));
	if (rq->rq_proc != NFSPROC3_NULL && !(o = nfs3d_call_opts(rq, x)))
		return;   /* refused at the RPC level (an unlisted client, a flavour not taken) */
	ok = svc_getargs(x, p->xargs, (caddr_t)&a);
	if (ok && rq->rq_proc != NFSPROC3_NULL)
		r.getattr.status = call_refusal(rq, x, o);
	if (ok && !r.getattr.status)
		ok = run_call(rq, p, o, &a, &r, &legs);
	log_call(p, x, !ok, &r);
	t1 = nfs3d_now_ns();
	if (!ok)
		svcerr_decode(x);
	else if (!svc_sendreply(x, p->xres, (caddr_t)&r))
		svcerr_systemerr(x);
	times_add(x, rq->rq_proc, nfs3d_now_ns() - t0, &legs, nfs3d_now_ns() - t1);
	svc_freeargs(x, p->xargs, (caddr_t)&a);
	xdr_free(p->xres, (caddr_t)&r);
}

static double us(uint64_t ns, uint64_t n)
{
	return (double)ns / (double)n / 1e3;
}

void nfs3d_times_print(void)
{
	static const char *const tname[2] = { "RDMA", "TCP" };
	uint64_t n;
	int t, i;

	for (t = 0; t < 2; t++)
		for (i = 0; i < NPROCS; i++) {
			n = times[t][i].calls;
			if (!n)
				continue;
			fprintf(stderr, "nfs3d: %s over %s: %" PRIu64 " calls, %.1f us each in "
				"nfs3d: %.1f to hand it to a thread, %.1f in the procedure, %.1f "
				"back, %.1f in svc_sendreply\n", procs[i].name, tname[t], n,
				us(times[t][i].call, n), us(times[t][i].wait, n),
				us(times[t][i].proc, n), us(times[t][i].back, n),
				us(times[t][i].reply, n));
		}
}
