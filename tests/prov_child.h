/* SPDX-License-Identifier: BSD-2-Clause */
/* Provider tests across two processes over libfabric tcp (or another provider): the
 * parent listens, a child connects. */
#ifndef RPCRDMA_TEST_PROV_CHILD_H
#define RPCRDMA_TEST_PROV_CHILD_H

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "rpcrdma/prov.h"

/* Forks before libfabric is opened (it is not fork-safe): the child runs fn(port, a, b)
 * once the parent's listener on 127.0.0.1 (provider prov) is up and exits with its
 * result; the parent gets the provider and listener. Returns the child's pid. */
static inline pid_t prov_child(const char *prov, int (*fn)(uint16_t port, int a, int b), int a,
			       int b, struct rpcrdma_prov **p, struct rpcrdma_listener **l)
{
	int portp[2];
	uint16_t port;
	pid_t child;

	CHECK(pipe(portp) == 0);
	fflush(NULL);
	child = fork();
	if (child == 0)
		_exit(read(portp[0], &port, sizeof(port)) == sizeof(port) ? fn(port, a, b) : 1);
	CHECK_EQ_I(rpcrdma_prov_open(prov, p, NULL, 0), 0);
	CHECK_EQ_I(rpcrdma_listen(*p, "127.0.0.1", 0, l), 0);
	port = rpcrdma_listener_port(*l);
	CHECK(write(portp[1], &port, sizeof(port)) == sizeof(port));
	close(portp[0]);
	close(portp[1]);
	return child;
}

static inline pid_t tcp_child(int (*fn)(uint16_t port, int a, int b), int a, int b,
			      struct rpcrdma_prov **p, struct rpcrdma_listener **l)
{
	return prov_child("tcp", fn, a, b, p, l);
}

/* The child's end: it must have exited with 0. */
static inline void tcp_child_done(pid_t child)
{
	int status;

	CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
}

#endif
