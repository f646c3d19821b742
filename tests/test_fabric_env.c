/* SPDX-License-Identifier: BSD-2-Clause */
/* What librpcrdma sets in the environment for libfabric's tcp provider (docs/PROVIDERS.md,
 * "Environment set on the libfabric tcp provider"): FI_TCP_NODELAY=1 and
 * FI_TCP_MAX_RX_SIZE=128 unless the program set them, and what the second buys with
 * libfabric 2.x: the first receive of a process no longer faults in a 17 MB transfer
 * pool. scripts/test.sh runs this also with libfabric 2.1 picked at run time, where the
 * last case can tell (with 1.17, which ignores the variable, it holds either way). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prov_child.h"

#define MSG 64

static int open_tcp(void)
{
	struct rpcrdma_prov *p = NULL;
	int rc = rpcrdma_prov_open("tcp", &p, NULL, 0);

	rpcrdma_prov_close(p);
	return rc;
}

static int env_is(const char *name, const char *want)
{
	const char *v = getenv(name);

	return v && !strcmp(v, want);
}

static void test_defaults_set(void)
{
	unsetenv("FI_TCP_NODELAY");
	unsetenv("FI_TCP_MAX_RX_SIZE");
	CHECK_EQ_I(open_tcp(), 0);
	CHECK(env_is("FI_TCP_NODELAY", "1"));
	CHECK(env_is("FI_TCP_MAX_RX_SIZE", "128"));
}

/* A fresh copy of this program with the user's own values: it keeps them (the child
 * exits 0 when it does). */
static void test_user_values_kept(void)
{
	int status = 0;
	pid_t child;

	fflush(NULL);
	child = fork();
	if (child == 0) {
		setenv("FI_TCP_NODELAY", "0", 1);
		setenv("FI_TCP_MAX_RX_SIZE", "4096", 1);
		execl("/proc/self/exe", "test_fabric_env", "--user-values", (char *)NULL);
		_exit(127);
	}
	CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status));
	CHECK_EQ_I(WEXITSTATUS(status), 0);
}

static int user_values(void)
{
	return open_tcp() == 0 && env_is("FI_TCP_NODELAY", "0") &&
	       env_is("FI_TCP_MAX_RX_SIZE", "4096") ? 0 : 1;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	long kib = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kib = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kib;
}

/* The child connects and sends one message. */
static int send_one(uint16_t port, int a, int b)
{
	static uint8_t buf[MSG];
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *ep;
	struct rpcrdma_mr *mr;
	struct rpcrdma_cqe c;
	struct rpcrdma_sge s = { NULL, buf, MSG };
	int n = 0;

	(void)a;
	(void)b;
	if (rpcrdma_prov_open("tcp", &p, NULL, 0) ||
	    rpcrdma_connect(p, "127.0.0.1", port, NULL, 0, 10000, &ep) ||
	    rpcrdma_mr_reg(p, buf, MSG, RPCRDMA_ACC_LOCAL, &mr))
		return 1;
	s.mr = mr;
	memset(buf, 'x', MSG);
	if (rpcrdma_post_send(ep, &s, NULL))
		return 1;
	while (n == 0) {
		n = rpcrdma_ep_poll(ep, &c, 1);
		if (n == 0 && rpcrdma_ep_wait(ep, 5000))
			return 1;
	}
	sleep(1);   /* the parent reads before the connection goes */
	return c.status != 0;
}

/* The process's first receive over tcp adds well under 17 MB to its RSS (libfabric 2.1
 * with its default FI_TCP_MAX_RX_SIZE: +16.4 MiB; with 128: +0.5 MiB, as with 1.17). */
static void test_first_receive_small(void)
{
	static uint8_t buf[MSG];
	struct rpcrdma_prov *p;
	struct rpcrdma_listener *l;
	struct rpcrdma_connreq *req;
	struct rpcrdma_ep *ep;
	struct rpcrdma_mr *mr;
	struct rpcrdma_cqe c;
	struct rpcrdma_sge s = { NULL, buf, MSG };
	pid_t child = tcp_child(send_one, 0, 0, &p, &l);
	long before;
	int n = 0;

	CHECK_EQ_I(rpcrdma_listener_get(l, 10000, &req), 0);
	CHECK_EQ_I(rpcrdma_accept(req, NULL, 0, 10000, &ep), 0);
	CHECK_EQ_I(rpcrdma_mr_reg(p, buf, MSG, RPCRDMA_ACC_LOCAL, &mr), 0);
	s.mr = mr;
	before = rss_kib();
	CHECK_EQ_I(rpcrdma_post_recv(ep, &s, NULL), 0);
	while (n == 0) {
		n = rpcrdma_ep_poll(ep, &c, 1);
		if (n == 0)
			CHECK_EQ_I(rpcrdma_ep_wait(ep, 5000), 0);
	}
	CHECK(n == 1 && c.status == 0 && c.len == MSG && buf[0] == 'x' && buf[MSG - 1] == 'x');
	printf("RSS: %ld KiB before the first receive, +%ld KiB after it\n", before,
	       rss_kib() - before);
	CHECK(before > 0 && rss_kib() - before < 8 * 1024);
	rpcrdma_ep_close(ep);
	rpcrdma_mr_dereg(mr);
	rpcrdma_listener_close(l);
	rpcrdma_prov_close(p);
	tcp_child_done(child);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--user-values"))
		return user_values();
	HARNESS_BEGIN(argc, argv);
	RUN(test_first_receive_small);   /* first: this process's first receive */
	RUN(test_defaults_set);
	RUN(test_user_values_kept);
	HARNESS_END();
}
