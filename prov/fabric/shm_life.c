/* SPDX-License-Identifier: BSD-2-Clause */
/* What libfabric's shm provider leaves to us for the connections we emulate on it
 * (prov_fabric.c): a process killed with SIGKILL says nothing to its peers, leaves its
 * shared-memory regions behind in /dev/shm, and may die holding the spin lock of its
 * region, which its peers take to post to it.
 *
 * - A listener owns its fixed name ("rpcrdma_<port>") through a lock file that the kernel
 *   releases when the process dies however it dies; a region of that name without a live
 *   owner is stale and is removed, so a restarted server gets its port back.
 * - Regions of dead processes are removed (ours only: same user, a name that starts
 *   with a process id that no longer exists), so killed clients do not fill /dev/shm.
 *   Not at once: a message the dead process sent may still be queued at a peer, and
 *   libfabric maps the sender's region by name when it takes the message (and crashes
 *   when the region is gone). The first sweep marks the region (sticky bit, which also
 *   stamps its ctime), a sweep REAP_GRACE_S later removes it.
 * - A connection maps the first page of its peer's region itself, so that a lock the
 *   peer died holding can be released (rpcrdma__shm_region_unlock). This knows the
 *   region headers of libfabric 1.17 (SMR_VERSION 4) and 2.1 (8), and does nothing with
 *   another.
 * - Each side learns the other's process id when the connection is made and watches it
 *   with a pidfd, which becomes readable when that process ends: that is the disconnect
 *   a killed peer never sends. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "prov_int.h"

#define SHM_DIR "/dev/shm"
#define REAP_GRACE_S 5
/* The region headers known here, by their first byte (SMR_VERSION). Both start u8 version,
 * u8 resv, u16 flags, int pid. libfabric 1.17's (4): two u8 caps, u32
 * max_sar_buf_per_peer, void *base_addr, then pthread_spinlock_t lock. libfabric 2.1's
 * (8, prov/shm/src/smr_util.h): four u8, u32 max_sar_buf_per_peer, two struct
 * ofi_xpmem_pinfo (int64_t, uintptr_t), void *base_addr, then the lock, which 2.1 still
 * takes to post to a peer. Another version: no lock is ever released. */
#define SMR_PID_OFF 4
#define SMR_HDR_LEN 4096
static const struct {
	uint8_t version;
	uint8_t lock_off;
} smr_layouts[] = { { 4, 24 }, { 8, 56 } };

/* Where the region's lock is, or -1 for a header of another version. */
static int smr_lock_off(const uint8_t *hdr)
{
	size_t i;

	for (i = 0; i < sizeof(smr_layouts) / sizeof(smr_layouts[0]); i++)
		if (hdr[0] == smr_layouts[i].version)
			return smr_layouts[i].lock_off;
	return -1;
}

static pthread_spinlock_t *smr_lock(void *hdr)
{
	return (pthread_spinlock_t *)((uint8_t *)hdr + smr_lock_off(hdr));
}

/* The file of a region named `name` (libfabric drops its "fi_shm://" prefix); names
 * come from readdir() or our own listeners, so they fit. */
static void region_path(const char *name, const char *suffix, char *buf, size_t len)
{
	const char *base = strncmp(name, "fi_shm://", 9) ? name : name + 9;

	if ((size_t)snprintf(buf, len, SHM_DIR "/%.255s%.8s", base, suffix) >= len)
		buf[0] = '\0';
}

int rpcrdma__shm_name_claim(const char *name, int *lockfd)
{
	char lock[300], region[300];
	int fd;

	region_path(name, ".lock", lock, sizeof(lock));
	region_path(name, "", region, sizeof(region));
	fd = open(lock, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return -RPCRDMA_ERR_ADDR;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		return -RPCRDMA_ERR_ADDR;   /* a live listener has it */
	}
	/* no live owner: whatever region has the name was left by a dead one */
	if (unlink(region) && errno != ENOENT) {
		close(fd);
		return -RPCRDMA_ERR_ADDR;
	}
	*lockfd = fd;
	return 0;
}

int rpcrdma__shm_name_exists(const char *name)
{
	char region[300];
	struct stat st;

	region_path(name, "", region, sizeof(region));
	return region[0] && stat(region, &st) == 0;
}

void rpcrdma__shm_name_release(const char *name, int lockfd)
{
	char lock[300];

	if (lockfd < 0)
		return;
	region_path(name, ".lock", lock, sizeof(lock));
	unlink(lock);
	close(lockfd);
}

/* "<pid>:<n>:<n>": a region libfabric named after the process that made it. */
static pid_t region_pid(const char *name)
{
	char *end;
	long pid = strtol(name, &end, 10);

	if (end == name || *end != ':' || pid <= 0 || pid > 0x7fffffff)
		return 0;
	return (pid_t)pid;
}

static int process_gone(pid_t pid)
{
	return kill(pid, 0) && errno == ESRCH;
}

/* A listener region ("rpcrdma_<port>"), or its lock file, whose lock nobody holds. A lock
 * file is left for a while: a listener may be just about to take it. */
static int listener_orphaned(const char *name, const struct stat *st)
{
	const char *dot = strchr(name, '.');
	char lock[300];
	int fd, orphan;

	if (strncmp(name, "rpcrdma_", 8) || (dot && strcmp(dot, ".lock")))
		return 0;
	if (dot && time(NULL) - st->st_mtime < 10)
		return 0;
	if (dot)
		snprintf(lock, sizeof(lock), SHM_DIR "/%.255s", name);
	else
		region_path(name, ".lock", lock, sizeof(lock));
	fd = open(lock, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	orphan = flock(fd, LOCK_EX | LOCK_NB) == 0;
	close(fd);   /* releases the lock if we took it */
	return orphan;
}

/* Marked on first sight (the sticky bit; chmod stamps ctime), removed once the mark is
 * REAP_GRACE_S old. */
static void reap_after_grace(const char *path, const struct stat *st)
{
	if (!(st->st_mode & S_ISVTX))
		chmod(path, (st->st_mode & 07777) | S_ISVTX);
	else if (time(NULL) - st->st_ctime >= REAP_GRACE_S)
		unlink(path);
}

void rpcrdma__shm_reap(void)
{
	DIR *d = opendir(SHM_DIR);
	struct dirent *de;
	uid_t me = geteuid();

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		char path[300];   /* SHM_DIR, '/', a name of up to 255 bytes */
		struct stat st;
		pid_t pid = region_pid(de->d_name);

		if (!pid && strncmp(de->d_name, "rpcrdma_", 8))
			continue;
		snprintf(path, sizeof(path), SHM_DIR "/%s", de->d_name);
		if (lstat(path, &st) || !S_ISREG(st.st_mode) || st.st_uid != me)
			continue;
		if (pid && pid != getpid() && process_gone(pid))
			reap_after_grace(path, &st);
		else if (!pid && listener_orphaned(de->d_name, &st))
			unlink(path);
	}
	closedir(d);
}

int rpcrdma__pid_watch(uint32_t pid)
{
#ifdef SYS_pidfd_open
	if (pid && (pid_t)pid != getpid())
		return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#else
	(void)pid;
#endif
	return -1;
}

/* Whether a watched process has ended. Its pidfd says so where there is one; without
 * one (no pidfd_open, or a process killed and reaped before it could be watched) its pid
 * does: a wait on a peer gone that way must not last its whole timeout. */
int rpcrdma__proc_gone(int pidfd, uint32_t pid)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	if (pidfd >= 0)
		return poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP | POLLERR));
	return pid && process_gone((pid_t)pid);
}

/* The process that made the region (its header says). */
uint32_t rpcrdma__shm_region_pid(const void *hdr)
{
	uint32_t pid = 0;

	if (hdr)
		memcpy(&pid, (const uint8_t *)hdr + SMR_PID_OFF, sizeof(pid));
	return pid;
}

void *rpcrdma__shm_region_map(const char *name, uint32_t pid)
{
#if UINTPTR_MAX == 0xffffffffffffffffu
	char path[300];
	uint8_t *hdr;
	uint32_t owner;
	int fd;

	region_path(name, "", path, sizeof(path));
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	hdr = mmap(NULL, SMR_HDR_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (hdr == MAP_FAILED)
		return NULL;
	owner = rpcrdma__shm_region_pid(hdr);
	if (smr_lock_off(hdr) < 0 || (pid && owner != pid) || sizeof(pthread_spinlock_t) != 4) {
		munmap(hdr, SMR_HDR_LEN);
		return NULL;
	}
	return hdr;
#else
	(void)name;
	(void)pid;
	return NULL;
#endif
}

void rpcrdma__shm_region_unmap(void *hdr)
{
	if (hdr)
		munmap(hdr, SMR_HDR_LEN);
}

/* A region that must outlive its endpoint (a peer may still map it by name: fabric_rdm.c,
 * parking): a second name for its file before the endpoint is closed, which unlinks the
 * first; the first back after. The file is then removed like any region of a process
 * that ended (rpcrdma__shm_reap, REAP_GRACE_S after). */
int rpcrdma__shm_keep_begin(const char *name, char *keep, size_t len)
{
	char region[300];

	region_path(name, "", region, sizeof(region));
	region_path(name, ".keep", keep, len);
	if (!region[0] || !keep[0])
		return -RPCRDMA_ERR_ADDR;
	unlink(keep);
	return link(region, keep) ? -RPCRDMA_ERR_IO : 0;
}

void rpcrdma__shm_keep_end(const char *name, const char *keep)
{
	char region[300];

	region_path(name, "", region, sizeof(region));
	if (rename(keep, region))
		unlink(keep);
}

/* Take the region's lock and keep it, as a process stopped or killed inside libfabric
 * does (tests of the lock watchdog, fabric_rdm.c). */
void rpcrdma__shm_region_hold(void *hdr)
{
	if (hdr)
		pthread_spin_lock(smr_lock(hdr));
}

/* Only for a region whose owner is dead: its lock then has no holder that will ever
 * release it, and whoever waits for it spins for ever. */
int rpcrdma__shm_region_unlock(void *hdr)
{
	pthread_spinlock_t *lock;

	if (!hdr)
		return 0;
	lock = smr_lock(hdr);
	if (pthread_spin_trylock(lock) == 0) {
		pthread_spin_unlock(lock);
		return 0;
	}
	pthread_spin_unlock(lock);
	return 1;
}
