/* SPDX-License-Identifier: BSD-2-Clause */
/* The doorbell of emulated (shm) connections (prov/fabric/shm_bell.c), its two sides in one
 * process: a side may sleep only once the other can ring it; a post rings a side marked
 * asleep, once, and a side awake not at all; the page's name is gone once both sides
 * hold it; a page that is not a doorbell's, or a peer out of reach, leaves both polling. */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "shm_bell.h"

static char name_a[64], name_b[64];

static void names(const char *tag)
{
	snprintf(name_a, sizeof(name_a), "test-bell-%d-%s-a", (int)getpid(), tag);
	snprintf(name_b, sizeof(name_b), "test-bell-%d-%s-b", (int)getpid(), tag);
}

static int readable(const struct rpcrdma__bell *b)
{
	struct pollfd p = { .fd = b->rx, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static int file_exists(const char *page)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "/dev/shm/%s", page);
	return stat(path, &st) == 0;
}

/* a: the accepting side, b: the connecting side, joined as a connection does. */
static int pair(struct rpcrdma__bell *a, struct rpcrdma__bell *b, char *page, size_t cap)
{
	int n;

	rpcrdma__bell_init(a);
	rpcrdma__bell_init(b);
	CHECK_EQ_I(rpcrdma__bell_open(a, name_a, strlen(name_a) + 1), 0);
	CHECK_EQ_I(rpcrdma__bell_open(b, name_b, strlen(name_b) + 1), 0);
	CHECK_EQ_I(rpcrdma__bell_connect(a, name_b, strlen(name_b)), 0);
	n = rpcrdma__bell_share(a, page, cap);
	CHECK(n > 0);
	if (n <= 0)
		return -1;
	page[n] = '\0';
	CHECK(file_exists(page));
	CHECK_EQ_I(rpcrdma__bell_arm(a), -1);   /* b cannot ring a yet */
	CHECK_EQ_I(rpcrdma__bell_connect(b, name_a, strlen(name_a)), 0);
	return rpcrdma__bell_join(b, page, (size_t)n);
}

static void ring_only_a_sleeper(void)
{
	struct rpcrdma__bell a, b;
	char page[RPCRDMA__BELL_FILE_MAX + 1];

	names("ring");
	CHECK_EQ_I(pair(&a, &b, page, sizeof(page)), 0);
	CHECK(!file_exists(page));             /* both hold it: the name has gone */
	/* awake: a post rings nothing */
	rpcrdma__bell_ring(&a);
	rpcrdma__bell_ring(&b);
	CHECK(!readable(&a) && !readable(&b));
	/* b asleep: a's posts ring it once */
	CHECK_EQ_I(rpcrdma__bell_arm(&b), 0);
	rpcrdma__bell_ring(&a);
	rpcrdma__bell_ring(&a);
	CHECK(readable(&b) && !readable(&a));
	CHECK_EQ_I(rpcrdma__bell_drain(&b), 1);
	/* marked asleep, then awake again before any post: no ring */
	CHECK_EQ_I(rpcrdma__bell_arm(&a), 0);
	rpcrdma__bell_disarm(&a);
	rpcrdma__bell_ring(&b);
	CHECK(!readable(&a));
	/* both ways */
	CHECK_EQ_I(rpcrdma__bell_arm(&a), 0);
	rpcrdma__bell_ring(&b);
	CHECK(readable(&a));
	rpcrdma__bell_disarm(&a);
	CHECK(!readable(&a));                  /* disarming reads the rings */
	rpcrdma__bell_close(&a);
	rpcrdma__bell_close(&b);
	/* a peer gone: ringing it is harmless */
	rpcrdma__bell_ring(&a);
}

/* A client that never joins: the acceptor's close removes the page's name. */
static void unjoined_page_removed(void)
{
	struct rpcrdma__bell a, b;
	char page[RPCRDMA__BELL_FILE_MAX + 1];
	int n;

	names("unjoined");
	rpcrdma__bell_init(&a);
	rpcrdma__bell_init(&b);
	CHECK_EQ_I(rpcrdma__bell_open(&b, name_b, strlen(name_b)), 0);
	CHECK_EQ_I(rpcrdma__bell_open(&a, name_a, strlen(name_a)), 0);
	CHECK_EQ_I(rpcrdma__bell_connect(&a, name_b, strlen(name_b)), 0);
	n = rpcrdma__bell_share(&a, page, sizeof(page));
	CHECK(n > 0);
	page[n > 0 ? n : 0] = '\0';
	CHECK(file_exists(page));
	rpcrdma__bell_close(&a);
	CHECK(!file_exists(page));
	rpcrdma__bell_close(&b);
}

/* Out of reach: nobody bound the peer's name, so no page is offered and nobody sleeps.
 * The page's name comes from the peer: a file that is not a doorbell's page (zeros; empty,
 * which would fault when touched) is refused and left where it is; a name with a slash is
 * not looked up. */
static void out_of_reach_polls(void)
{
	struct rpcrdma__bell a, b;
	char page[RPCRDMA__BELL_FILE_MAX + 1], path[128];
	int fd;

	names("reach");
	rpcrdma__bell_init(&a);
	rpcrdma__bell_init(&b);
	CHECK_EQ_I(rpcrdma__bell_open(&a, name_a, strlen(name_a)), 0);
	CHECK_EQ_I(rpcrdma__bell_connect(&a, name_b, strlen(name_b)), -1);
	CHECK_EQ_I(rpcrdma__bell_share(&a, page, sizeof(page)), -1);
	CHECK_EQ_I(rpcrdma__bell_arm(&a), -1);
	/* a file of zeros where the page should be */
	snprintf(page, sizeof(page), "test-bell-%d-zeros", (int)getpid());
	snprintf(path, sizeof(path), "/dev/shm/%s", page);
	fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	CHECK(fd >= 0 && ftruncate(fd, 4096) == 0);
	if (fd >= 0)
		close(fd);
	CHECK_EQ_I(rpcrdma__bell_open(&b, name_b, strlen(name_b)), 0);
	CHECK_EQ_I(rpcrdma__bell_connect(&b, name_a, strlen(name_a)), 0);
	CHECK_EQ_I(rpcrdma__bell_join(&b, page, strlen(page)), -1);
	CHECK_EQ_I(rpcrdma__bell_arm(&b), -1);
	CHECK(file_exists(page));
	fd = open(path, O_RDWR | O_TRUNC);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK_EQ_I(rpcrdma__bell_join(&b, page, strlen(page)), -1);
	CHECK(file_exists(page));
	CHECK_EQ_I(rpcrdma__bell_join(&b, "../etc/passwd", 13), -1);
	unlink(path);
	rpcrdma__bell_close(&a);
	rpcrdma__bell_close(&b);
}

/* Two endpoints cannot take one name: the second bind fails (its endpoint then polls). */
static void name_taken(void)
{
	struct rpcrdma__bell a, a2;

	names("taken");
	rpcrdma__bell_init(&a);
	rpcrdma__bell_init(&a2);
	CHECK_EQ_I(rpcrdma__bell_open(&a, name_a, strlen(name_a)), 0);
	CHECK_EQ_I(rpcrdma__bell_open(&a2, name_a, strlen(name_a) + 1), -1);
	CHECK_EQ_I(a2.rx, -1);
	rpcrdma__bell_close(&a);
	rpcrdma__bell_close(&a2);
	rpcrdma__bell_close(&a2);   /* closing twice is harmless */
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(ring_only_a_sleeper);
	RUN(unjoined_page_removed);
	RUN(out_of_reach_polls);
	RUN(name_taken);
	HARNESS_END();
}
