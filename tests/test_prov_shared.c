/* SPDX-License-Identifier: BSD-2-Clause */
/* Endpoints accepted from one libfabric MSG listener share its completion queue
 * (prov/fabric/fabric_int.h, struct fab_shcq): a poll of one endpoint must never return another's
 * completion, must keep it for its owner and wake the owner's descriptor if it was armed;
 * a Send done as it is posted wakes its armed endpoint too; arming the endpoints after
 * the listener need not try the shared queue again, and still misses nothing; once the
 * listener's owner drains the queue, endpoints take only what it kept for them, the
 * arming thread's own drain wakes no one; the connections share one event queue too, and
 * a peer's close read from it wakes the endpoint it names; a connecting endpoint, on an
 * event queue of its own, still sees its peer's close after an arm that left the queue
 * out of its try; closing one endpoint must not disturb the other; after the listener
 * closes, an endpoint's own descriptor carries its completions; 120 connections'
 * descriptors fit one epoll set (libfabric 2.x). Two processes over libfabric tcp: the child holds
 * connections, sends and listens on command. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "prov_child.h"

#define MSG 64
#define SLOTS 4

static uint8_t *mem;
static struct rpcrdma_mr *mr;

static void reg(struct rpcrdma_prov *p)
{
	mem = calloc(SLOTS + 1, MSG);
	if (!mem || rpcrdma_mr_reg(p, mem, (SLOTS + 1) * MSG, RPCRDMA_ACC_LOCAL, &mr))
		exit(3);
}

static struct rpcrdma_sge slot(int i)
{
	struct rpcrdma_sge s = { mr, mem + (size_t)i * MSG, MSG };

	return s;
}

/* One send on ep, filled with ch, waited for. */
static int send_one(struct rpcrdma_ep *ep, char ch)
{
	struct rpcrdma_sge s = slot(SLOTS);
	struct rpcrdma_cqe c;
	int n = 0;

	memset(s.addr, ch, MSG);
	if (rpcrdma_post_send(ep, &s, NULL))
		return -1;
	while (n == 0) {
		n = rpcrdma_ep_poll(ep, &c, 1);
		if (n == 0 && rpcrdma_ep_wait(ep, 5000))
			return -1;
	}
	return c.status;
}

/* 'L': listens, answers with the port, and accepts one connection (D). */
static int listen_for_d(struct rpcrdma_prov *p, int ack_fd, struct rpcrdma_listener **l,
			struct rpcrdma_ep **d)
{
	struct rpcrdma_connreq *req;
	uint16_t port;

	if (rpcrdma_listen(p, "127.0.0.1", 0, l))
		return -1;
	port = rpcrdma_listener_port(*l);
	if (write(ack_fd, &port, sizeof(port)) != sizeof(port) ||
	    rpcrdma_listener_get(*l, 10000, &req) || rpcrdma_accept(req, NULL, 0, 10000, d))
		return -1;
	return 0;
}

/* Connects twice (A, then B), then per command byte: 'a'/'b' sends on A/B, 'x' closes A,
 * 'c' connects C, 'y' closes C, 'z' closes D; each answered; 'L' listens for D
 * (listen_for_d). */
static int client(uint16_t port, int cmd_fd, int ack_fd)
{
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *ep[4] = { NULL, NULL, NULL, NULL };
	struct rpcrdma_listener *l = NULL;
	char b;

	if (rpcrdma_prov_open("tcp", &p, NULL, 0) ||
	    rpcrdma_connect(p, "127.0.0.1", port, NULL, 0, 10000, &ep[0]) ||
	    rpcrdma_connect(p, "127.0.0.1", port, NULL, 0, 10000, &ep[1]))
		return 1;
	reg(p);
	while (read(cmd_fd, &b, 1) == 1 && b != 'q') {
		if (b == 'L') {
			if (listen_for_d(p, ack_fd, &l, &ep[3]))
				return 1;
			continue;
		}
		if (b == 'z') {   /* D's peer goes */
			rpcrdma_ep_close(ep[3]);
			ep[3] = NULL;
		} else if (b == 'x' || b == 'y') {   /* A's or C's peer goes */
			rpcrdma_ep_close(ep[b == 'y' ? 2 : 0]);
			ep[b == 'y' ? 2 : 0] = NULL;   /* a later send on it fails, not crashes */
		} else if (b == 'c') {
			if (rpcrdma_connect(p, "127.0.0.1", port, NULL, 0, 10000, &ep[2]))
				return 1;
		} else if (send_one(ep[b == 'b'], (char)(b - 'a' + 'A')))
			return 1;
		if (write(ack_fd, &b, 1) != 1)
			return 1;
	}
	rpcrdma_listener_close(l);
	return 0;
}

static int to_child, from_child;

static void command(char b)
{
	CHECK(write(to_child, &b, 1) == 1 && read(from_child, &b, 1) == 1);
}

static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) > 0;
}

static void *arm_thread(void *ep)
{
	return (void *)(intptr_t)rpcrdma_ep_arm(ep);
}

/* Armed by another thread, as by a thread that then sleeps on its descriptor: a
 * completion this thread drains for it must wake it (the arming thread's own drains do
 * not: own_drain_quiet). */
static void arm_elsewhere(struct rpcrdma_ep *ep)
{
	pthread_t t;
	void *rc;

	CHECK(pthread_create(&t, NULL, arm_thread, ep) == 0 && pthread_join(t, &rc) == 0);
	CHECK_EQ_I((int)(intptr_t)rc, 0);
}

static int slot_is(int i, char ch)
{
	int j, same = 1;

	for (j = 0; j < MSG; j++)
		same &= mem[(size_t)i * MSG + j] == (uint8_t)ch;
	return same;
}

/* The receive with context ctx on ep, exactly one completion. */
static void expect_one(struct rpcrdma_ep *ep, uintptr_t ctx, int i, char ch)
{
	struct rpcrdma_cqe c[4];
	int n = rpcrdma_ep_poll(ep, c, 4);

	CHECK_EQ_I(n, 1);
	CHECK(c[0].op == RPCRDMA_OP_RECV && c[0].status == 0 && c[0].len == MSG);
	CHECK_EQ_U((uintptr_t)c[0].ctx, ctx);
	CHECK(slot_is(i, ch));
}

static void post(struct rpcrdma_ep *ep, int i, uintptr_t ctx)
{
	struct rpcrdma_sge s = slot(i);

	CHECK_EQ_I(rpcrdma_post_recv(ep, &s, (void *)ctx), 0);
}

/* A's polls drain B's completion from the shared queue: A never sees it, B's descriptor
 * (armed) turns readable, B's poll returns it. */
static void polls_route(struct rpcrdma_ep *a, struct rpcrdma_ep *b)
{
	struct rpcrdma_cqe c[4];
	int got_a = 0, tries, n, k;

	post(a, 0, 1);
	post(b, 1, 2);
	arm_elsewhere(b);
	command('b');
	command('a');
	for (tries = 0; tries < 500 && !(got_a && readable(rpcrdma_ep_fd(b), 0)); tries++) {
		n = rpcrdma_ep_poll(a, c, 4);
		for (k = 0; k < n; k++)
			CHECK_EQ_U((uintptr_t)c[k].ctx, 1);
		got_a += n;
		if (n == 0)
			rpcrdma_ep_wait(a, 10);
	}
	CHECK_EQ_I(got_a, 1);
	CHECK(slot_is(0, 'A'));
	CHECK(readable(rpcrdma_ep_fd(b), 0));
	expect_one(b, 2, 1, 'B');
}

/* A small Send is done as it is posted (fi_inject): posted by another thread while the
 * endpoint's owner sleeps armed — a server's worker replying while the progress thread
 * sleeps — it wakes the endpoint's descriptor, and completes once at the next poll. */
static void small_send_wakes(struct rpcrdma_ep *b)
{
	struct rpcrdma_sge s = slot(SLOTS);
	struct rpcrdma_cqe c[4];

	arm_elsewhere(b);
	CHECK(!readable(rpcrdma_ep_fd(b), 0));
	CHECK_EQ_I(rpcrdma_post_send(b, &s, (void *)9), 0);
	CHECK(readable(rpcrdma_ep_fd(b), 1000));
	CHECK_EQ_I(rpcrdma_ep_poll(b, c, 4), 1);
	CHECK(c[0].op == RPCRDMA_OP_SEND && c[0].status == 0 && c[0].ctx == (void *)9);
	CHECK_EQ_I(rpcrdma_ep_poll(b, c, 4), 0);
}

/* Arming the listener tries the shared queue; arming its endpoints right after need not
 * (struct fab_shcq, armed): a message for B still turns the listener's descriptor
 * readable. Once B has taken it, arming them all again tries the queue again: the
 * descriptor is quiet (a queue read leaves it signalled; not trying again would wake a
 * sleeper at once, over and over). */
static void arms_share_the_queue(struct rpcrdma_listener *l, struct rpcrdma_ep *a,
				 struct rpcrdma_ep *b)
{
	int lfd = rpcrdma_listener_fd(l);

	memset(mem + MSG, 0, MSG);
	post(b, 1, 5);
	CHECK_EQ_I(rpcrdma_listener_arm(l), 0);
	CHECK_EQ_I(rpcrdma_ep_arm(a), 0);
	CHECK_EQ_I(rpcrdma_ep_arm(b), 0);
	CHECK(!readable(lfd, 0));
	command('b');
	CHECK(readable(lfd, 5000));
	expect_one(b, 5, 1, 'B');
	CHECK_EQ_I(rpcrdma_ep_arm(a), 0);
	CHECK_EQ_I(rpcrdma_ep_arm(b), 0);
	CHECK_EQ_I(rpcrdma_listener_arm(l), 0);
	CHECK(!readable(lfd, 0));
}

/* After rpcrdma_listener_drain() an endpoint's poll does not read the shared queue: B's
 * message, arrived (the listener's descriptor readable), waits there until a drain
 * hands it to B, and wakes B's descriptor, armed meanwhile. B, accepted last, heads the
 * listener's list: the drain goes through B itself. */
static void listener_drains(struct rpcrdma_listener *l, struct rpcrdma_ep *b)
{
	struct rpcrdma_cqe c[4];
	int tries;

	memset(mem + MSG, 0, MSG);
	post(b, 1, 6);
	CHECK_EQ_I(rpcrdma_listener_drain(l), 0);
	CHECK_EQ_I(rpcrdma_listener_arm(l), 0);
	command('b');
	CHECK(readable(rpcrdma_listener_fd(l), 5000));
	CHECK_EQ_I(rpcrdma_ep_poll(b, c, 4), 0);
	arm_elsewhere(b);
	CHECK(!readable(rpcrdma_ep_fd(b), 0));
	for (tries = 0; tries < 500 && !readable(rpcrdma_ep_fd(b), 0); tries++) {
		CHECK_EQ_I(rpcrdma_listener_drain(l), 0);
		if (!readable(rpcrdma_ep_fd(b), 0))
			(void)readable(rpcrdma_listener_fd(l), 10);
	}
	CHECK(readable(rpcrdma_ep_fd(b), 0));
	CHECK_EQ_I(rpcrdma_ep_poll(b, c, 4), 1);
	CHECK(c[0].op == RPCRDMA_OP_RECV && c[0].status == 0 && c[0].len == MSG);
	CHECK_EQ_U((uintptr_t)c[0].ctx, 6);
	CHECK(slot_is(1, 'B'));
}

/* A completion the arming thread drains itself wakes no one (fabric_ep.c, wake_owner):
 * that thread is awake. B's descriptor stays quiet through the drain that keeps B's
 * message; arming B again says it is pending; B's poll returns it. */
static void own_drain_quiet(struct rpcrdma_listener *l, struct rpcrdma_ep *b)
{
	int tries, rc = 0;

	memset(mem + MSG, 0, MSG);
	post(b, 1, 7);
	CHECK_EQ_I(rpcrdma_ep_arm(b), 0);
	command('b');
	for (tries = 0; tries < 500; tries++) {
		CHECK_EQ_I(rpcrdma_listener_drain(l), 0);
		CHECK(!readable(rpcrdma_ep_fd(b), 0));
		rc = rpcrdma_ep_arm(b);
		if (rc)
			break;
		(void)readable(rpcrdma_listener_fd(l), 10);
	}
	CHECK_EQ_I(rc, -RPCRDMA_ERR_AGAIN);
	expect_one(b, 7, 1, 'B');
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The shared event queue is read once per tick of the coarse clock (EQ_LOOK_MS), and
 * the listener's descriptor stays readable until then: loops that wait for what it
 * brings are bounded in time, not in tries. */
#define EVENT_WAIT_MS 5000

/* The connections a listener accepted share one event queue (struct fab_shcq): C's
 * peer closing, the listener's drain (this thread) reads C's end from it and, C being
 * armed by another thread as by one asleep on its descriptor, turns C's descriptor
 * readable; C's poll then reports the end, once. C has no receive posted: its end shows
 * on the event queue only. With a queue per connection, libfabric 2.x's tcp made the
 * 50th connection's descriptor one that Linux refuses in a nested epoll set. */
static void shared_event_queue(struct rpcrdma_listener *l, struct rpcrdma_ep *c)
{
	struct rpcrdma_cqe cq[4];
	uint64_t t0;

	CHECK_EQ_I(rpcrdma_ep_poll(c, cq, 4), 0);
	arm_elsewhere(c);
	CHECK(!readable(rpcrdma_ep_fd(c), 0));
	command('y');
	for (t0 = ms_now(); ms_now() - t0 < EVENT_WAIT_MS && !readable(rpcrdma_ep_fd(c), 0);) {
		CHECK_EQ_I(rpcrdma_listener_drain(l), 0);
		(void)readable(rpcrdma_listener_fd(l), 10);
	}
	CHECK(readable(rpcrdma_ep_fd(c), 0));
	rpcrdma_ep_slept(c, 1);
	CHECK_EQ_I(rpcrdma_ep_poll(c, cq, 4), 1);
	CHECK(cq[0].op == RPCRDMA_OP_DISCONNECT);
	CHECK_EQ_I(rpcrdma_ep_poll(c, cq, 4), 0);
	CHECK(!readable(rpcrdma_ep_fd(c), 0));
}

/* This side connects D to a listener of the child's: a connecting endpoint keeps an
 * event queue of its own. */
static struct rpcrdma_ep *connect_d(struct rpcrdma_prov *p)
{
	struct rpcrdma_ep *d = NULL;
	uint16_t port = 0;
	char b = 'L';

	CHECK(write(to_child, &b, 1) == 1 &&
	      read(from_child, &port, sizeof(port)) == sizeof(port));
	CHECK_EQ_I(rpcrdma_connect(p, "127.0.0.1", port, NULL, 0, 10000, &d), 0);
	return d;
}

/* On a connecting endpoint's own event queue, an arm after one that found the queue
 * quiet leaves it out of its try (struct fab_ep, eq_armed): D's peer closing still turns
 * D's descriptor readable, and told that it fired, D's poll reads the queue and reports
 * the end, once. D has no receive posted: its end shows on the queue only. (Whether a
 * poll told otherwise skips the read depends on the coarse clock's tick, EQ_LOOK_MS,
 * and is not checked.) */
static void own_queue_end_seen(struct rpcrdma_ep *d)
{
	struct rpcrdma_cqe cq[4];
	uint64_t t0;
	int n = 0;

	CHECK_EQ_I(rpcrdma_ep_arm(d), 0);
	CHECK_EQ_I(rpcrdma_ep_poll(d, cq, 4), 0);   /* reads the queue */
	CHECK_EQ_I(rpcrdma_ep_arm(d), 0);           /* leaves it out */
	CHECK(!readable(rpcrdma_ep_fd(d), 0));
	command('z');
	CHECK(readable(rpcrdma_ep_fd(d), EVENT_WAIT_MS));
	rpcrdma_ep_slept(d, 1);
	for (t0 = ms_now(); ms_now() - t0 < EVENT_WAIT_MS && n == 0;)
		n = rpcrdma_ep_poll(d, cq, 4);
	CHECK_EQ_I(n, 1);
	CHECK(cq[0].op == RPCRDMA_OP_DISCONNECT);
	CHECK_EQ_I(rpcrdma_ep_poll(d, cq, 4), 0);
}

/* The child connects C while this side accepts it. */
static struct rpcrdma_ep *accept_third(struct rpcrdma_listener *l)
{
	struct rpcrdma_connreq *req;
	struct rpcrdma_ep *c;
	char b = 'c';

	CHECK(write(to_child, &b, 1) == 1);
	CHECK_EQ_I(rpcrdma_listener_get(l, 10000, &req), 0);
	CHECK_EQ_I(rpcrdma_accept(req, NULL, 0, 10000, &c), 0);
	CHECK(read(from_child, &b, 1) == 1);
	return c;
}

/* With the listener draining, a connection whose peer closed is still seen to end (its
 * event queue is read less often, struct fab_shcq): A's posted receive completes with
 * an error and the end is reported, each once. */
static void drained_loss_seen(struct rpcrdma_listener *l, struct rpcrdma_ep *a)
{
	struct rpcrdma_cqe c[4];
	int n, k, recv = 0, ends = 0;
	uint64_t t0;

	post(a, 2, 3);
	command('x');
	for (t0 = ms_now(); ms_now() - t0 < EVENT_WAIT_MS && !(ends && recv);) {
		CHECK_EQ_I(rpcrdma_listener_drain(l), 0);
		n = rpcrdma_ep_poll(a, c, 4);
		for (k = 0; k < n; k++) {
			if (c[k].op == RPCRDMA_OP_DISCONNECT) {
				ends++;
				continue;
			}
			CHECK(c[k].op == RPCRDMA_OP_RECV && c[k].status != 0);
			CHECK_EQ_U((uintptr_t)c[k].ctx, 3);
			recv++;
		}
		if (n == 0)
			(void)readable(rpcrdma_listener_fd(l), 10);
	}
	CHECK_EQ_I(recv, 1);
	CHECK_EQ_I(ends, 1);
	CHECK_EQ_I(rpcrdma_ep_poll(a, c, 4), 0);
}

static void test_shared_queue(void)
{
	int cmdp[2], ackp[2];
	struct rpcrdma_listener *l;
	struct rpcrdma_connreq *req;
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *a, *b, *c, *d;
	pid_t child;

	CHECK(pipe(cmdp) == 0 && pipe(ackp) == 0);
	child = tcp_child(client, cmdp[0], ackp[1], &p, &l);
	to_child = cmdp[1];
	from_child = ackp[0];
	CHECK_EQ_I(rpcrdma_listener_get(l, 10000, &req), 0);
	CHECK_EQ_I(rpcrdma_accept(req, NULL, 0, 10000, &a), 0);
	CHECK_EQ_I(rpcrdma_listener_get(l, 10000, &req), 0);
	CHECK_EQ_I(rpcrdma_accept(req, NULL, 0, 10000, &b), 0);
	reg(p);
	polls_route(a, b);
	small_send_wakes(b);
	arms_share_the_queue(l, a, b);
	listener_drains(l, b);
	own_drain_quiet(l, b);
	c = accept_third(l);
	shared_event_queue(l, c);
	rpcrdma_ep_close(c);
	d = connect_d(p);
	if (d)
		own_queue_end_seen(d);
	rpcrdma_ep_close(d);
	drained_loss_seen(l, a);
	/* A goes: B goes on */
	rpcrdma_ep_close(a);
	/* the listener goes: B's own descriptor now carries its completions, and its polls
	 * read the queue again */
	rpcrdma_listener_close(l);
	post(b, 3, 4);
	CHECK_EQ_I(rpcrdma_ep_arm(b), 0);
	command('b');
	CHECK(readable(rpcrdma_ep_fd(b), 5000));
	expect_one(b, 4, 3, 'B');
	CHECK(write(to_child, "q", 1) == 1);
	tcp_child_done(child);
	rpcrdma_ep_close(b);
	rpcrdma_mr_dereg(mr);
	rpcrdma_prov_close(p);
	free(mem);
}

/* More connections than Linux lets one file be reached through nested epoll sets (50
 * at the depth a server makes, struct fab_shcq). */
#define MANY 120

/* Connects MANY times, each over a provider of its own as each RPC client has (with
 * libfabric 2.x one provider holds at most about 50 connections: docs/PROVIDERS.md); at
 * 'm' sends one message on the last; holds them until 'q'. */
static int many_client(uint16_t port, int cmd_fd, int ack_fd)
{
	struct rpcrdma_prov *p[MANY];
	struct rpcrdma_ep *ep[MANY];
	char b = 0;
	int i;

	for (i = 0; i < MANY; i++)
		if (rpcrdma_prov_open("tcp", &p[i], NULL, 0) ||
		    rpcrdma_connect(p[i], "127.0.0.1", port, NULL, 0, 10000, &ep[i]))
			return 1;
	reg(p[MANY - 1]);
	if (read(cmd_fd, &b, 1) != 1 || send_one(ep[MANY - 1], 'M') || write(ack_fd, &b, 1) != 1)
		return 1;
	while (read(cmd_fd, &b, 1) == 1 && b != 'q')
		;
	for (i = 0; i < MANY; i++) {
		rpcrdma_ep_close(ep[i]);
		rpcrdma_prov_close(p[i]);
	}
	return 0;
}

static int watch(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Armed as a server arms before it sleeps: the listener, then every connection; what
 * an arm finds pending is taken first. */
static int arm_all(struct rpcrdma_listener *l, struct rpcrdma_ep **ep, int n)
{
	struct rpcrdma_cqe c[4];
	int i;

	(void)rpcrdma_listener_drain(l);
	if (rpcrdma_listener_arm(l))
		return 0;
	for (i = 0; i < n; i++)
		if (rpcrdma_ep_poll(ep[i], c, 4) != 0 || rpcrdma_ep_arm(ep[i]))
			return 0;
	return 1;
}

/* A server's descriptors in one epoll set, as svc_listen.c keeps them, for MANY
 * connections: each can be added (with libfabric 2.x's tcp and an event queue per
 * connection, from about the 50th on Linux refused it with EINVAL, and the server could
 * not sleep on those connections), and a message on the last one wakes the set. */
static void test_many_in_one_set(void)
{
	struct rpcrdma_ep *ep[MANY];
	struct rpcrdma_listener *l;
	struct rpcrdma_connreq *req;
	struct rpcrdma_prov *p;
	struct epoll_event ev;
	int cmdp[2], ackp[2], epfd, i, n = 0, armed = 0;
	struct rpcrdma_cqe c[4];
	struct rlimit rl;
	uint64_t t0;
	pid_t child;
	char b = 'm';

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	CHECK(pipe(cmdp) == 0 && pipe(ackp) == 0);
	child = tcp_child(many_client, cmdp[0], ackp[1], &p, &l);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	CHECK_EQ_I(watch(epfd, rpcrdma_listener_fd(l)), 0);
	for (i = 0; i < MANY; i++) {
		int rc = rpcrdma_listener_get(l, 10000, &req);

		if (!rc)
			rc = rpcrdma_accept(req, NULL, 0, 10000, &ep[i]);
		if (rc) {
			fprintf(stderr, "connection %d: %s\n", i, rpcrdma_strerror(rc));
			break;
		}
		if (watch(epfd, rpcrdma_ep_fd(ep[i])) && n++ == 0)
			fprintf(stderr, "connection %d: epoll_ctl: %s\n", i, strerror(errno));
	}
	CHECK_EQ_I(i, MANY);
	CHECK_EQ_I(n, 0);   /* connections whose descriptor the set refused */
	if (i < MANY) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		while (i > 0)
			rpcrdma_ep_close(ep[--i]);
		goto out_close;
	}
	reg(p);
	post(ep[MANY - 1], 0, 9);
	for (t0 = ms_now(); ms_now() - t0 < EVENT_WAIT_MS && !armed;)
		armed = arm_all(l, ep, MANY);
	CHECK(armed);
	CHECK(write(cmdp[1], &b, 1) == 1);
	CHECK(epoll_wait(epfd, &ev, 1, EVENT_WAIT_MS) == 1);
	for (t0 = ms_now(), n = 0; ms_now() - t0 < EVENT_WAIT_MS && n == 0;) {
		(void)rpcrdma_listener_drain(l);
		n = rpcrdma_ep_poll(ep[MANY - 1], c, 4);
	}
	CHECK_EQ_I(n, 1);
	CHECK(c[0].op == RPCRDMA_OP_RECV && c[0].status == 0 && (uintptr_t)c[0].ctx == 9);
	CHECK(slot_is(0, 'M'));
	CHECK(read(ackp[0], &b, 1) == 1);
	CHECK(write(cmdp[1], "q", 1) == 1);
	tcp_child_done(child);
	for (i = 0; i < MANY; i++)
		rpcrdma_ep_close(ep[i]);
	rpcrdma_mr_dereg(mr);
	free(mem);
out_close:
	close(epfd);
	rpcrdma_listener_close(l);
	rpcrdma_prov_close(p);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_shared_queue);
	RUN(test_many_in_one_set);
	HARNESS_END();
}
