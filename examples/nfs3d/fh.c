/* SPDX-License-Identifier: BSD-2-Clause */
/* File handles and the cache of open files.
 *
 * A handle is the kernel's (name_to_handle_at(2)) behind a magic number and the kernel
 * handle's type, and ends in a keyed MAC (SipHash-2-4 with a 128-bit key kept in the
 * state directory, so handles survive a restart) over the export's tag and every byte
 * before it: a client can present only handles this nfs3d made for this export, of the
 * exact length made (no bytes added). open_by_handle_at(2) would open anything on DIR's
 * file system, so the MAC is what keeps a forged handle from naming /etc/shadow.
 * A directory is also checked to lie inside DIR when it is opened (by walking "..", so
 * no path length limits it), not each time its cached descriptor is used: one renamed out
 * of DIR goes stale once it leaves the cache. A non-directory keeps its handle wherever it
 * is renamed on the file system. knfsd's default, no_subtree_check, checks neither.
 *
 * Opened objects are cached by handle (an O_PATH descriptor, and one for I/O of a regular
 * file): an operation pays neither open_by_handle_at(2) nor the walk again. An entry goes
 * when nfs3d removes or replaces its object (nfs3d_fh_forget), when its object is found
 * unlinked on use (the answer is then STALE, as knfsd's), and by least recent use. */
#include "nfs3d.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FH_MAGIC 0x4e334432u      /* "N3D2" */
#define FH_HEAD 8u                /* magic, the kernel handle's type */
#define FH_MAC 8u
#define KFH_MAX (NFS3_FHSIZE - FH_HEAD - FH_MAC)
#define WALK_MAX 65536u           /* directory levels walked to find DIR */

struct kfh {
	struct file_handle h;
	unsigned char bytes[KFH_MAX];
};

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The MAC of a handle's first n bytes, bound to this export. */
static uint64_t fh_mac(const unsigned char *fh, size_t n)
{
	unsigned char buf[4 + NFS3_FHSIZE];

	put32(buf, ex.tag);
	memcpy(buf + 4, fh, n);
	return nfs3d_siphash(ex.key, buf, 4 + n);
}

/* ---- the key ---- */

static int key_read(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, ex.key, sizeof(ex.key));
	close(fd);
	if (n != (ssize_t)sizeof(ex.key)) {
		fprintf(stderr, "nfs3d: %s: not a key of %zu bytes\n", path, sizeof(ex.key));
		errno = EINVAL;
		return -2;
	}
	return 0;
}

/* A new key, made whole under another name and linked into place: of two nfs3d starting
 * at once, both end with the one that was linked first. */
static int key_make(const char *dir, const char *path)
{
	char tmp[PATH_MAX];
	unsigned char k[sizeof(ex.key)];
	int fd, rc = -1;

	if (getrandom(k, sizeof(k), 0) != (ssize_t)sizeof(k))
		return -1;
	snprintf(tmp, sizeof(tmp), "%s/fh.key.%ld", dir, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (write(fd, k, sizeof(k)) == (ssize_t)sizeof(k) && fsync(fd) == 0 &&
	    (link(tmp, path) == 0 || errno == EEXIST))
		rc = 0;
	close(fd);
	unlink(tmp);
	return rc;
}

int nfs3d_key_load(const char *dir)
{
	char path[PATH_MAX];
	int rc;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "nfs3d: state directory %s: %s\n", dir, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/fh.key", dir);
	rc = key_read(path);
	if (rc == -1 && errno == ENOENT && key_make(dir, path) == 0)
		rc = key_read(path);
	if (rc < 0) {
		fprintf(stderr, "nfs3d: file handle key %s: %s\n", path, strerror(errno));
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
int nfs3d_export_open(const char *dir)
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

/* ---- handles ---- */

nfsstat3 nfs3d_fh_of(int dirfd, const char *name, nfs_fh3 *out)
{
	struct kfh k;
	unsigned char *d;
	int mount_id, flags = *name ? 0 : AT_EMPTY_PATH;
	size_t n;

	k.h.handle_bytes = KFH_MAX;
	if (name_to_handle_at(dirfd, name, &k.h, &mount_id, flags) < 0)
		return errno == EOVERFLOW ? NFS3ERR_SERVERFAULT : nfs3d_errno_status(errno);
	if (mount_id != ex.mount_id)
		return NFS3ERR_XDEV;   /* another file system mounted inside DIR: not served */
	n = FH_HEAD + k.h.handle_bytes;
	d = malloc(n + FH_MAC);
	if (!d)
		return NFS3ERR_JUKEBOX;
	put32(d, FH_MAGIC);
	put32(d + 4, (uint32_t)k.h.handle_type);
	memcpy(d + FH_HEAD, k.h.f_handle, k.h.handle_bytes);
	uint64_t mac = fh_mac(d, n);
	put32(d + n, (uint32_t)(mac >> 32));
	put32(d + n + 4, (uint32_t)mac);
	out->data.data_val = (char *)d;
	out->data.data_len = (u_int)(n + FH_MAC);
	return NFS3_OK;
}

/* BADHANDLE: not of our form at all; STALE: of our form, not made here for this export
 * (another export's, another key's, forged or padded). */
static nfsstat3 fh_check(const nfs_fh3 *fh)
{
	const unsigned char *d = (const unsigned char *)fh->data.data_val;
	u_int len = fh->data.data_len;
	uint64_t mac;

	if (len < FH_HEAD + 4 + FH_MAC || len > NFS3_FHSIZE || get32(d) != FH_MAGIC)
		return NFS3ERR_BADHANDLE;
	mac = fh_mac(d, len - FH_MAC);
	/* both halves compared at once: the time taken tells nothing of where they differ */
	if ((get32(d + len - FH_MAC) ^ (uint32_t)(mac >> 32)) |
	    (get32(d + len - 4) ^ (uint32_t)mac))
		return NFS3ERR_STALE;
	return NFS3_OK;
}

static bool is_root_dir(const struct stat *sb)
{
	return sb->st_dev == ex.st.st_dev && sb->st_ino == ex.st.st_ino;
}

/* Up through ".." until DIR (inside) or the file system's root (outside). */
static bool dir_inside(int fd)
{
	struct stat sb, up_sb;
	int cur = fcntl(fd, F_DUPFD_CLOEXEC, 0), up;
	unsigned depth;
	bool in = false;

	for (depth = 0; cur >= 0 && depth < WALK_MAX; depth++) {
		if (fstat(cur, &sb) < 0)
			break;
		if (is_root_dir(&sb)) {
			in = true;
			break;
		}
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0 || fstat(up, &up_sb) < 0 ||
		    (up_sb.st_dev == sb.st_dev && up_sb.st_ino == sb.st_ino)) {
			if (up >= 0)
				close(up);
			break;   /* the top: DIR was not on the way */
		}
		close(cur);
		cur = up;
	}
	if (cur >= 0)
		close(cur);
	return in;
}

/* Open a checked handle's object O_PATH, as root (open_by_handle_at needs
 * CAP_DAC_READ_SEARCH, which a caller's identity does not have). */
static nfsstat3 fh_decode(const nfs_fh3 *fh, int *fd, struct stat *sb)
{
	const unsigned char *d = (const unsigned char *)fh->data.data_val;
	struct kfh k;
	nfsstat3 st = NFS3_OK;
	int e;

	k.h.handle_bytes = fh->data.data_len - FH_HEAD - FH_MAC;
	k.h.handle_type = (int)get32(d + 4);
	memcpy(k.h.f_handle, d + FH_HEAD, k.h.handle_bytes);
	if (nfs3d_root_begin() < 0)
		return NFS3ERR_SERVERFAULT;
	*fd = open_by_handle_at(ex.root_fd, &k.h, O_PATH | O_CLOEXEC);
	e = errno;
	if (*fd < 0)
		st = e == EINVAL || e == ESTALE || e == ENOENT ? NFS3ERR_STALE
							       : nfs3d_errno_status(e);
	else if (fstat(*fd, sb) < 0 || sb->st_nlink == 0)
		st = NFS3ERR_STALE;
	else if (S_ISDIR(sb->st_mode) && !dir_inside(*fd))
		st = NFS3ERR_STALE;
	if (nfs3d_root_end() < 0)
		st = NFS3ERR_SERVERFAULT;   /* the thread may still be root: nothing more */
	if (st && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return st;
}

/* ---- the cache ---- */

struct fce {
	unsigned char fh[NFS3_FHSIZE];
	unsigned len;
	int path_fd, io_fd;
	bool io_rw;
	dev_t dev;
	ino_t ino;
	struct fce *hnext, *prev, *next;   /* hash chain; least recent use list */
};

static struct {
	pthread_mutex_t lock;
	struct fce *slots;
	struct fce **hash;
	unsigned nslots, nhash, used;
	struct fce lru;                     /* head: lru.next most recent */
	struct fce *free;
} fc = { .lock = PTHREAD_MUTEX_INITIALIZER };

int nfs3d_fh_cache_init(unsigned entries)
{
	struct rlimit rl;
	unsigned i;

	/* two descriptors an entry, and room for the connections */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < 2 * (rlim_t)entries + 2048)
		entries = rl.rlim_cur > 2048 + 32 ? (unsigned)(rl.rlim_cur - 2048) / 2 : 16;
	fc.nslots = entries;
	fc.nhash = 1;
	while (fc.nhash < 2 * entries)
		fc.nhash <<= 1;
	fc.slots = calloc(entries, sizeof(*fc.slots));
	fc.hash = calloc(fc.nhash, sizeof(*fc.hash));
	if (!fc.slots || !fc.hash)
		return -1;
	for (i = 0; i < entries; i++) {
		fc.slots[i].hnext = fc.free;
		fc.free = &fc.slots[i];
	}
	fc.lru.next = fc.lru.prev = &fc.lru;
	return 0;
}

static unsigned bucket(const unsigned char *fh, unsigned len)
{
	/* the MAC at the end is already a keyed hash of the rest */
	return (len >= 4 ? get32(fh + len - 4) : 0) & (fc.nhash - 1);
}

static void lru_unlink(struct fce *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
}

static void lru_front(struct fce *e)
{
	e->next = fc.lru.next;
	e->prev = &fc.lru;
	fc.lru.next->prev = e;
	fc.lru.next = e;
}

static struct fce *find(const unsigned char *fh, unsigned len)
{
	struct fce *e;

	for (e = fc.hash[bucket(fh, len)]; e; e = e->hnext)
		if (e->len == len && !memcmp(e->fh, fh, len))
			return e;
	return NULL;
}

/* Out of the cache, its descriptors closed (a caller's dup keeps working). */
static void drop(struct fce *e)
{
	struct fce **pp = &fc.hash[bucket(e->fh, e->len)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	lru_unlink(e);
	close(e->path_fd);
	if (e->io_fd >= 0)
		close(e->io_fd);
	e->hnext = fc.free;
	fc.free = e;
	fc.used--;
}

static void insert(const nfs_fh3 *fh, int fd, const struct stat *sb)
{
	struct fce *e;
	unsigned len = fh->data.data_len;

	if (!fc.nslots || find((const unsigned char *)fh->data.data_val, len))
		return;
	if (!fc.free)
		drop(fc.lru.prev);
	e = fc.free;
	fc.free = e->hnext;
	memcpy(e->fh, fh->data.data_val, len);
	e->len = len;
	e->path_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	e->io_fd = -1;
	e->io_rw = false;
	e->dev = sb->st_dev;
	e->ino = sb->st_ino;
	if (e->path_fd < 0) {
		e->hnext = fc.free;
		fc.free = e;
		return;
	}
	e->hnext = fc.hash[bucket(e->fh, len)];
	fc.hash[bucket(e->fh, len)] = e;
	lru_front(e);
	fc.used++;
}

void nfs3d_fh_forget(dev_t dev, ino_t ino)
{
	struct fce *e, *next;

	pthread_mutex_lock(&fc.lock);
	for (e = fc.lru.next; e != &fc.lru; e = next) {
		next = e->next;
		if (e->dev == dev && e->ino == ino)
			drop(e);
	}
	pthread_mutex_unlock(&fc.lock);
}

/* A cached object's descriptor, duplicated; -1: not cached. */
static int cached(const nfs_fh3 *fh)
{
	struct fce *e;
	int fd = -1;

	pthread_mutex_lock(&fc.lock);
	e = fc.nslots ? find((const unsigned char *)fh->data.data_val, fh->data.data_len) : NULL;
	if (e) {
		lru_unlink(e);
		lru_front(e);
		fd = fcntl(e->path_fd, F_DUPFD_CLOEXEC, 0);
	}
	pthread_mutex_unlock(&fc.lock);
	return fd;
}

static void forget_fh(const nfs_fh3 *fh)
{
	struct fce *e;

	pthread_mutex_lock(&fc.lock);
	e = find((const unsigned char *)fh->data.data_val, fh->data.data_len);
	if (e)
		drop(e);
	pthread_mutex_unlock(&fc.lock);
}

static nfsstat3 open_checked(const nfs_fh3 *fh, int *fd, struct stat *sb)
{
	nfsstat3 st = fh_check(fh);

	*fd = -1;
	if (st)
		return st;
	*fd = cached(fh);
	if (*fd >= 0) {
		/* an object unlinked since it was cached is gone, as knfsd finds it */
		if (fstat(*fd, sb) == 0 && sb->st_nlink > 0)
			return NFS3_OK;
		close(*fd);
		*fd = -1;
		forget_fh(fh);
		return NFS3ERR_STALE;
	}
	st = fh_decode(fh, fd, sb);
	if (!st) {
		pthread_mutex_lock(&fc.lock);
		insert(fh, *fd, sb);
		pthread_mutex_unlock(&fc.lock);
	}
	return st;
}

nfsstat3 nfs3d_fh_open(const nfs_fh3 *fh, int *fd)
{
	struct stat sb;

	return open_checked(fh, fd, &sb);
}

/* knfsd's nfsd_permission() for READ, WRITE and COMMIT: the owner may always (a file
 * created 0444 is still written by the client that created it, as a local open for
 * writing would); else the kernel decides under the caller's identity, and a file the
 * caller may execute may be read (to run it). */
static nfsstat3 io_permission(int fd, const struct stat *sb, bool write)
{
	long rc;

	if (write && nfs3d_opts_now()->ro)
		return NFS3ERR_ROFS;
	if (sb->st_uid == nfs3d_cred_uid() && !nfs3d_cred_is_root())
		return NFS3_OK;
	rc = syscall(SYS_faccessat2, fd, "", write ? W_OK : R_OK, AT_EACCESS | AT_EMPTY_PATH);
	if (rc < 0 && errno == EACCES && !write)
		rc = syscall(SYS_faccessat2, fd, "", X_OK, AT_EACCESS | AT_EMPTY_PATH);
	return rc < 0 ? nfs3d_errno_status(errno) : NFS3_OK;
}

/* The entry's descriptor for I/O, opened (as root: the permission was checked) through
 * the O_PATH one, read-write when it can be and must be. */
static int io_fd_of(const nfs_fh3 *fh, int pfd, bool write)
{
	struct fce *e;
	char p[40];
	int fd = -1;

	pthread_mutex_lock(&fc.lock);
	e = fc.nslots ? find((const unsigned char *)fh->data.data_val, fh->data.data_len) : NULL;
	if (e && e->io_fd >= 0 && (e->io_rw || !write))
		fd = fcntl(e->io_fd, F_DUPFD_CLOEXEC, 0);
	pthread_mutex_unlock(&fc.lock);
	if (fd >= 0)
		return fd;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
	if (nfs3d_root_begin() < 0)
		return -1;
	/* read-write only for a write: a descriptor kept open for writing would make the
	 * server's own exec of the file fail (ETXTBSY) and break its read leases */
	fd = open(p, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (nfs3d_root_end() < 0) {
		if (fd >= 0)
			close(fd);
		errno = EPERM;
		return -1;
	}
	if (fd < 0)
		return -1;
	pthread_mutex_lock(&fc.lock);
	e = fc.nslots ? find((const unsigned char *)fh->data.data_val, fh->data.data_len) : NULL;
	if (e && (e->io_fd < 0 || (!e->io_rw && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR))) {
		if (e->io_fd >= 0)
			close(e->io_fd);
		e->io_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		e->io_rw = (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR;
	}
	pthread_mutex_unlock(&fc.lock);
	return fd;
}

nfsstat3 nfs3d_fh_io(const nfs_fh3 *fh, bool write, int *fd, struct stat *sb)
{
	int pfd;
	nfsstat3 st = open_checked(fh, &pfd, sb);

	*fd = -1;
	if (st)
		return st;
	if (!S_ISREG(sb->st_mode))   /* nothing but a regular file is opened for data */
		st = S_ISDIR(sb->st_mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
	else
		st = io_permission(pfd, sb, write);
	if (!st && (*fd = io_fd_of(fh, pfd, write)) < 0)
		st = nfs3d_errno_status(errno);
	close(pfd);
	return st;
}

/* SETATTR's size, with WRITE's permission (knfsd: NFSD_MAY_WRITE|NFSD_MAY_OWNER_OVERRIDE),
 * cut as the caller (a setuid bit goes, as on a local truncate). */
nfsstat3 nfs3d_truncate(int pfd, const struct stat *sb, uint64_t size)
{
	nfsstat3 st = io_permission(pfd, sb, true);
	char p[40];
	int fd;

	if (st)
		return st;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
	if (nfs3d_root_begin() < 0)
		return NFS3ERR_SERVERFAULT;
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (nfs3d_root_end() < 0) {
		if (fd >= 0)
			close(fd);
		return NFS3ERR_SERVERFAULT;
	}
	if (fd < 0)
		return nfs3d_errno_status(errno);
	st = ftruncate(fd, (off_t)size) < 0 ? nfs3d_errno_status(errno) : NFS3_OK;
	close(fd);
	return st;
}
