/* SPDX-License-Identifier: BSD-2-Clause */
/* Completions that rpcrdma_ep_wait() collects while the caller is not polling are kept,
 * also when the caller posts more work before polling: nothing is lost or overwritten.
 * Two processes over libfabric tcp: the client sends two waves of messages; the server
 * waits (collecting) after each wave, posting the second wave's receives in between,
 * and only then polls. Every receive must come out exactly once, with its data. */
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

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_stash_keeps_everything);
	HARNESS_END();
}
