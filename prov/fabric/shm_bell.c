/* SPDX-License-Identifier: BSD-2-Clause */
/* The doorbell of an emulated (shm) connection. libfabric's shm has no wait object: a side
 * waiting for its peer could only poll, so an idle shm server woke ~1,000 times a second.
 *
 * - Each endpoint binds a datagram socket in the abstract namespace, named after its
 *   provider name ("rpcrdma-bell:" + name): it goes with the process however it ends,
 *   and its descriptor is what the endpoint's epoll set waits on.
 * - The accepting side creates a page in /dev/shm ("<pid>:rpcrdma_bell:<n>", which the
 *   dead-process sweep of shm_life.c knows), names it in ACCEPT; the connecting side maps
 *   it and removes its name. It holds, for each side, "can be rung" and "asleep".
 * - A side about to sleep marks itself asleep, then looks for work once more; a side that
 *   posted something to its peer looks at the peer's mark and, if set, clears it and
 *   sends one datagram. Both with full fences (store, fence, load on each side), so at
 *   least one of them sees the other: the sleeper its work, or the poster its mark.
 *   A post to a peer that polls costs one fence and one load.
 * - A side sleeps only if the peer can ring it: the acceptor connected to the connector's
 *   socket before it named the page; the connector marks itself ringable once connected
 *   to the acceptor's. Where one cannot reach the other (other network namespaces with a
 *   shared /dev/shm), that side never sleeps and both poll as before. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "shm_bell.h"

#define BELL_MAGIC 0x52424c31u   /* "RBL1" */
#define BELL_PAGE 4096
#define SHM_DIR "/dev/shm/"

struct rpcrdma__bell_page {
	uint32_t magic;
	uint32_t ringable[2];   /* by side: the other side may sleep on this one's rings */
	uint32_t asleep[2];     /* by side: sleeping or about to; cleared by whoever rings */
};

void rpcrdma__bell_init(struct rpcrdma__bell *b)
{
	memset(b, 0, sizeof(*b));
	b->rx = b->tx = -1;
}

/* "\0rpcrdma-bell:" + the provider name without its trailing NUL; a longer name than an
 * abstract address holds is folded into a hash of it. */
static socklen_t bell_addr(struct sockaddr_un *a, const void *name, size_t len)
{
	const char *s = name;
	size_t n;

	while (len && s[len - 1] == '\0')
		len--;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (len + 14 <= sizeof(a->sun_path) - 1) {
		memcpy(a->sun_path + 1, "rpcrdma-bell:", 13);
		memcpy(a->sun_path + 14, s, len);
		n = 14 + len;
	} else {
		uint64_t h = 1469598103934665603ull;   /* FNV-1a */
		size_t i;

		for (i = 0; i < len; i++)
			h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
		n = 1 + (size_t)snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
					 "rpcrdma-bell#%016llx", (unsigned long long)h);
	}
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
}

static int dgram(void)
{
	return socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

int rpcrdma__bell_open(struct rpcrdma__bell *b, const void *own, size_t len)
{
	struct sockaddr_un a;
	socklen_t alen = bell_addr(&a, own, len);

	b->rx = dgram();
	if (b->rx < 0)
		return -1;
	if (bind(b->rx, (struct sockaddr *)&a, alen)) {
		close(b->rx);
		b->rx = -1;
		return -1;
	}
	return 0;
}

int rpcrdma__bell_connect(struct rpcrdma__bell *b, const void *peer, size_t len)
{
	struct sockaddr_un a;
	socklen_t alen = bell_addr(&a, peer, len);

	if (b->tx < 0)
		b->tx = dgram();
	if (b->tx < 0)
		return -1;
	if (connect(b->tx, (struct sockaddr *)&a, alen)) {
		close(b->tx);
		b->tx = -1;
		return -1;
	}
	return 0;
}

static struct rpcrdma__bell_page *map_fd(int fd)
{
	void *p = mmap(NULL, BELL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The name comes from the peer: only a page of ours of the right size is mapped (a shorter
 * file would fault on the first touch), and only that is unlinked. */
static int is_page(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	       st.st_size == BELL_PAGE;
}

int rpcrdma__bell_share(struct rpcrdma__bell *b, char *name, size_t cap)
{
	static unsigned serial;
	char path[sizeof(SHM_DIR) + RPCRDMA__BELL_FILE_MAX];
	int fd, n;

	if (b->rx < 0 || b->tx < 0)
		return -1;
	n = snprintf(b->file, sizeof(b->file), "%d:rpcrdma_bell:%u", (int)getpid(),
		     __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED));
	if (n <= 0 || (size_t)n >= cap)
		goto out_noname;
	snprintf(path, sizeof(path), SHM_DIR "%s", b->file);
	unlink(path);   /* a dead process's of the same id: the pid is ours now */
	fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		goto out_noname;
	if (ftruncate(fd, BELL_PAGE) || !(b->pg = map_fd(fd))) {
		close(fd);
		unlink(path);
		goto out_noname;
	}
	close(fd);
	b->side = 0;
	b->pg->magic = BELL_MAGIC;
	__atomic_store_n(&b->pg->ringable[0], 1, __ATOMIC_RELEASE);
	memcpy(name, b->file, (size_t)n);
	return n;
out_noname:
	b->file[0] = '\0';
	return -1;
}

int rpcrdma__bell_join(struct rpcrdma__bell *b, const void *name, size_t len)
{
	char path[sizeof(SHM_DIR) + RPCRDMA__BELL_FILE_MAX];
	int fd;

	if (len == 0 || len >= RPCRDMA__BELL_FILE_MAX || memchr(name, '/', len) || b->tx < 0)
		return -1;
	memcpy(path, SHM_DIR, sizeof(SHM_DIR) - 1);
	memcpy(path + sizeof(SHM_DIR) - 1, name, len);
	path[sizeof(SHM_DIR) - 1 + len] = '\0';
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	b->pg = is_page(fd) ? map_fd(fd) : NULL;
	close(fd);
	if (b->pg && __atomic_load_n(&b->pg->magic, __ATOMIC_ACQUIRE) != BELL_MAGIC) {
		munmap(b->pg, BELL_PAGE);
		b->pg = NULL;
	}
	if (!b->pg)
		return -1;   /* not a doorbell's page: left as it is */
	unlink(path);   /* mapped on both sides: the name has done its work */
	b->side = 1;
	__atomic_store_n(&b->pg->ringable[1], 1, __ATOMIC_RELEASE);
	return 0;
}

int rpcrdma__bell_arm(struct rpcrdma__bell *b)
{
	if (!b->pg || b->rx < 0 || !__atomic_load_n(&b->pg->ringable[!b->side], __ATOMIC_ACQUIRE))
		return -1;
	__atomic_store_n(&b->pg->asleep[b->side], 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return 0;
}

int rpcrdma__bell_drain(struct rpcrdma__bell *b)
{
	char buf[64];
	int n = 0;

	while (b->rx >= 0 && recv(b->rx, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
		n++;
	return n;
}

void rpcrdma__bell_disarm(struct rpcrdma__bell *b)
{
	if (!b->pg)
		return;
	if (__atomic_load_n(&b->pg->asleep[b->side], __ATOMIC_RELAXED))
		__atomic_store_n(&b->pg->asleep[b->side], 0, __ATOMIC_RELAXED);
	rpcrdma__bell_drain(b);
}

void rpcrdma__bell_ring(struct rpcrdma__bell *b)
{
	uint32_t *peer;

	if (!b->pg)
		return;
	peer = &b->pg->asleep[!b->side];
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(peer, __ATOMIC_RELAXED) && __atomic_exchange_n(peer, 0, __ATOMIC_SEQ_CST))
		(void)!send(b->tx, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void rpcrdma__bell_knock(struct rpcrdma__bell *b)
{
	if (b->tx >= 0)
		(void)!send(b->tx, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void rpcrdma__bell_close(struct rpcrdma__bell *b)
{
	char path[sizeof(SHM_DIR) + RPCRDMA__BELL_FILE_MAX];

	if (b->pg)
		munmap(b->pg, BELL_PAGE);
	if (b->file[0]) {
		snprintf(path, sizeof(path), SHM_DIR "%s", b->file);
		unlink(path);   /* a connector that never came (it removes the name once mapped) */
	}
	if (b->rx >= 0)
		close(b->rx);
	if (b->tx >= 0)
		close(b->tx);
	rpcrdma__bell_init(b);
}
