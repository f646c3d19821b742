/* SPDX-License-Identifier: BSD-2-Clause */
/* Completions that rpcrdma_ep_wait() collects while the caller is not polling are kept,
 * also when the caller posts more work before polling: nothing is lost or overwritten.
 * Two processes over libfabric tcp: the client sends two waves of messages; the server
 * waits (collecting) after each wave, posting the second wave's receives in between,
 * and only then polls. Every receive must come out exactly once, with its data.
 * Sends no larger than the tcp or shm provider's inject size are done as they are posted
 * (no completion comes from libfabric): each still completes exactly once, from the
 * stash, and the data of each arrives whole and in order, over both providers. */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "prov_child.h"

#define WAVE 24
#define MSG 256

static uint8_t *mem;
static struct rpcrdma_mr *mr;

static void reg(struct rpcrdma_prov *p)
{
	mem = calloc(2 * WAVE + 1, MSG);
	if (!mem || rpcrdma_mr_reg(p, mem, (2 * WAVE + 1) * MSG, RPCRDMA_ACC_LOCAL, &mr))
		exit(3);
}

static struct rpcrdma_sge slot(int i)
{
	struct rpcrdma_sge s = { mr, mem + (size_t)i * MSG, MSG };

	return s;
}

static int client(uint16_t port, int go_fd, int sent_fd)
{
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *ep;
	struct rpcrdma_cqe c;
	int wave, i, n;
	char b;

	if (rpcrdma_prov_open("tcp", &p, NULL, 0) ||
	    rpcrdma_connect(p, "127.0.0.1", port, NULL, 0, 10000, &ep))
		return 1;
	reg(p);
	for (wave = 0; wave < 2; wave++) {
		if (read(go_fd, &b, 1) != 1)
			return 1;
		for (i = 0; i < WAVE; i++) {
			struct rpcrdma_sge s = slot(2 * WAVE);
			int k = wave * WAVE + i;

			memset(s.addr, k + 1, MSG);
			if (rpcrdma_post_send(ep, &s, NULL))
				return 1;
			/* one send buffer: wait for each send before reusing it */
			for (n = 0; n == 0;) {
				n = rpcrdma_ep_poll(ep, &c, 1);
				if (n == 0 && rpcrdma_ep_wait(ep, 5000))
					return 1;
			}
			if (c.status)
				return 1;
		}
		if (write(sent_fd, "s", 1) != 1)
			return 1;
	}
	if (read(go_fd, &b, 1) != 1)  /* the server has everything */
		return 1;
	rpcrdma_ep_close(ep);
	rpcrdma_mr_dereg(mr);
	rpcrdma_prov_close(p);
	free(mem);
	return 0;
}

/* Collect without polling for a while: everything that arrives goes to the stash. */
static void collect(struct rpcrdma_ep *ep)
{
	int i;

	for (i = 0; i < 20; i++) {
		rpcrdma_ep_wait(ep, 10);
		nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
	}
}

static void test_stash_keeps_everything(void)
{
	int go[2], sent[2], i, got[2 * WAVE] = { 0 }, total = 0;
	struct rpcrdma_listener *l;
	struct rpcrdma_connreq *req;
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *ep;
	struct rpcrdma_cqe c[8];
	pid_t child;
	char b;

	CHECK(pipe(go) == 0 && pipe(sent) == 0);
	child = tcp_child(client, go[0], sent[1], &p, &l);
	CHECK_EQ_I(rpcrdma_listener_get(l, 10000, &req), 0);
	CHECK_EQ_I(rpcrdma_accept(req, NULL, 0, 10000, &ep), 0);
	reg(p);
	for (i = 0; i < WAVE; i++) {
		struct rpcrdma_sge s = slot(i);

		CHECK_EQ_I(rpcrdma_post_recv(ep, &s, (void *)(uintptr_t)(i + 1)), 0);
	}
	CHECK(write(go[1], "g", 1) == 1 && read(sent[0], &b, 1) == 1);
	collect(ep);
	/* more work posted while the first wave's completions wait unpolled */
	for (i = WAVE; i < 2 * WAVE; i++) {
		struct rpcrdma_sge s = slot(i);

		CHECK_EQ_I(rpcrdma_post_recv(ep, &s, (void *)(uintptr_t)(i + 1)), 0);
	}
	CHECK(write(go[1], "g", 1) == 1 && read(sent[0], &b, 1) == 1);
	collect(ep);
	while (total < 2 * WAVE) {
		int n = rpcrdma_ep_poll(ep, c, 8), k;

		if (n == 0 && rpcrdma_ep_wait(ep, 5000))
			break;
		for (k = 0; k < n; k++) {
			int idx = (int)(uintptr_t)c[k].ctx - 1;

			CHECK(c[k].op == RPCRDMA_OP_RECV && c[k].status == 0 && c[k].len == MSG);
			if (idx < 0 || idx >= 2 * WAVE)
				continue;
			got[idx]++;
			total++;
		}
	}
	for (i = 0; i < 2 * WAVE; i++) {
		int j, same = 1;

		CHECK_EQ_U(got[i], 1);
		for (j = 0; j < MSG; j++)
			same &= mem[(size_t)i * MSG + j] == (uint8_t)(i + 1);
		CHECK(same);
	}
	CHECK(write(go[1], "g", 1) == 1);
	tcp_child_done(child);
	rpcrdma_ep_close(ep);
	rpcrdma_listener_close(l);
	rpcrdma_mr_dereg(mr);
	rpcrdma_prov_close(p);
	free(mem);
}

#define MIXED 1500       /* more than the send queue holds (tcp 256, shm 1024), were
			    small sends queued */
#define SMALL 100        /* under tcp's inject size (128) and shm's (4096) */
#define LARGE 8192       /* over both */

static const char *mixed_prov;

static uint32_t mixed_len(int k)
{
	return k % 4 == 3 ? LARGE : SMALL;
}

/* The completions c[0..n): each Send's exactly once, with its context. 0, or the
 * client's exit code. */
static int mixed_take(const struct rpcrdma_cqe *c, int n, int *done, int *large)
{
	static uint8_t seen[MIXED];

	for (int i = 0; i < n; i++) {
		int idx = (int)(uintptr_t)c[i].ctx - 1;

		if (c[i].op != RPCRDMA_OP_SEND || c[i].status || idx < 0 || idx >= MIXED ||
		    seen[idx]++)
			return 6;
		*large -= mixed_len(idx) == LARGE;
		(*done)++;
	}
	return 0;
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Post one Send. Our own queue full answers -RPCRDMA_ERR_AGAIN at once: the failure
 * this test is for (small sends holding places). libfabric's queue full (shm: the peer
 * has not yet taken what it was sent; a slow server under ASan) answers it only after
 * the provider drove progress for POST_RETRY_MS: then completions are taken and the
 * post tried again, as the contract says. */
static int mixed_post(struct rpcrdma_ep *ep, struct rpcrdma_sge *s, int k, int *done,
		      int *large)
{
	struct rpcrdma_cqe c[16];

	for (;;) {
		double t0 = mono_ms();
		int rc = rpcrdma_post_send(ep, s, (void *)(uintptr_t)(k + 1)), n;

		if (rc != -RPCRDMA_ERR_AGAIN)
			return rc ? 4 : 0;
		if (mono_ms() - t0 < 0.5)
			return 13;
		n = rpcrdma_ep_poll(ep, c, 16);
		rc = mixed_take(c, n, done, large);
		if (rc)
			return rc;
	}
}

/* Every send posted, only then every completion read: the small ones must not hold
 * places in the send queue, and each completes once with its context. Completions are
 * read only while a quarter of the queue's places are held by large sends, so small
 * ones that held places would fill it first. */
static int mixed_client(uint16_t port, int a, int b)
{
	struct rpcrdma_cqe c[16];
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *ep;
	uint8_t *buf;
	int k, n, rc, done = 0, large = 0, hold;

	(void)a;
	(void)b;
	if (rpcrdma_prov_open(mixed_prov, &p, NULL, 0) ||
	    rpcrdma_connect(p, "127.0.0.1", port, NULL, 0, 10000, &ep))
		return 1;
	if (rpcrdma_prov_caps(p)->inject_size < SMALL || rpcrdma_prov_caps(p)->inject_size >= LARGE)
		return 2;
	hold = (int)rpcrdma_prov_caps(p)->tx_depth / 4;
	buf = calloc(MIXED, LARGE);
	if (!buf || rpcrdma_mr_reg(p, buf, (size_t)MIXED * LARGE, RPCRDMA_ACC_LOCAL, &mr))
		return 3;
	for (k = 0; k < MIXED; k++) {
		struct rpcrdma_sge s = { mr, buf + (size_t)k * LARGE, mixed_len(k) };

		memset(s.addr, (k % 251) + 1, s.len);
		rc = mixed_post(ep, &s, k, &done, &large);
		if (rc)
			return rc;
		large += mixed_len(k) == LARGE;
		/* the large ones take places in the queue until they complete */
		while (large > hold) {
			n = rpcrdma_ep_poll(ep, c, 16);
			if (n == 0 && rpcrdma_ep_wait(ep, 5000))
				return 5;
			rc = mixed_take(c, n, &done, &large);
			if (rc)
				return rc;
		}
	}
	while (done < MIXED) {
		n = rpcrdma_ep_poll(ep, c, 16);
		if (n == 0 && rpcrdma_ep_wait(ep, 5000))
			return 7;
		rc = mixed_take(c, n, &done, &large);
		if (rc)
			return rc;
	}
	n = rpcrdma_ep_poll(ep, c, 16);   /* nothing more: each exactly once */
	rpcrdma_ep_close(ep);
	rpcrdma_mr_dereg(mr);
	rpcrdma_prov_close(p);
	free(buf);
	return n == 0 ? 0 : 9;
}

static void small_sends_done_at_once(const char *prov)
{
	struct rpcrdma_listener *l;
	struct rpcrdma_connreq *req;
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *ep;
	struct rpcrdma_cqe c[16];
	int i, total = 0, bad = 0;
	uint8_t *buf;
	pid_t child;

	mixed_prov = prov;
	child = prov_child(prov, mixed_client, -1, -1, &p, &l);
	CHECK_EQ_I(rpcrdma_listener_get(l, 10000, &req), 0);
	CHECK_EQ_I(rpcrdma_accept(req, NULL, 0, 10000, &ep), 0);
	buf = calloc(MIXED, LARGE);
	CHECK(buf && !rpcrdma_mr_reg(p, buf, (size_t)MIXED * LARGE, RPCRDMA_ACC_LOCAL, &mr));
	if (!buf || !mr)
		return;
	for (i = 0; i < 256; i++) {
		struct rpcrdma_sge s = { mr, buf + (size_t)i * LARGE, LARGE };

		CHECK_EQ_I(rpcrdma_post_recv(ep, &s, (void *)(uintptr_t)(i + 1)), 0);
	}
	/* both keep the order: the k-th message lands in the k-th receive posted */
	while (total < MIXED) {
		int n = rpcrdma_ep_poll(ep, c, 16), k;

		if (n == 0 && rpcrdma_ep_wait(ep, 5000))
			break;
		/* the client closes once all went: its DISCONNECT (and the receives posted
		 * beyond the last message, flushed) may follow the last one in the same poll */
		for (k = 0; k < n && total < MIXED; k++) {
			int idx = (int)(uintptr_t)c[k].ctx - 1, j;
			uint8_t *d = buf + (size_t)idx * LARGE;

			CHECK(c[k].op == RPCRDMA_OP_RECV && c[k].status == 0);
			CHECK_EQ_U(c[k].len, mixed_len(total));
			CHECK_EQ_I(idx, total);
			for (j = 0; j < (int)c[k].len; j++)
				bad += d[j] != (uint8_t)((total % 251) + 1);
			total++;
			if (idx + 256 < MIXED) {
				struct rpcrdma_sge s = { mr, buf + (size_t)(idx + 256) * LARGE, LARGE };

				CHECK_EQ_I(rpcrdma_post_recv(ep, &s, (void *)(uintptr_t)(idx + 257)), 0);
			}
		}
	}
	CHECK_EQ_I(total, MIXED);
	CHECK_EQ_I(bad, 0);
	tcp_child_done(child);
	rpcrdma_ep_close(ep);
	rpcrdma_listener_close(l);
	rpcrdma_mr_dereg(mr);
	rpcrdma_prov_close(p);
	free(buf);
}

static void test_small_sends_done_at_once(void)
{
	small_sends_done_at_once("tcp");
}

static void test_small_sends_done_at_once_shm(void)
{
	small_sends_done_at_once("shm");
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_stash_keeps_everything);
	RUN(test_small_sends_done_at_once);
	RUN(test_small_sends_done_at_once_shm);
	HARNESS_END();
}
