/* SPDX-License-Identifier: BSD-2-Clause */
/* Watching a peer process for its end (prov/fabric/shm_life.c), the rule the shm connection
 * handshake relies on: a peer killed and reaped before its pidfd could be opened is still
 * seen as gone (by its pid), so no wait on it lasts its whole timeout; a live one is not. */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "prov_int.h"

/* A child that waits to be killed. */
static pid_t sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Watched from before its end: the pidfd says so, reaped or not. */
static void watched_then_killed(void)
{
	struct timespec ms = { 0, 1000000 };
	pid_t pid = sleeper();
	int fd;

	CHECK(pid > 0);
	fd = rpcrdma__pid_watch((uint32_t)pid);
	CHECK(!rpcrdma__proc_gone(fd, (uint32_t)pid));
	kill(pid, SIGKILL);
	for (int i = 0; i < 1000 && !rpcrdma__proc_gone(fd, (uint32_t)pid); i++)
		nanosleep(&ms, NULL);   /* the kernel ends it asynchronously */
	CHECK(rpcrdma__proc_gone(fd, (uint32_t)pid));   /* a zombie has ended */
	waitpid(pid, NULL, 0);
	CHECK(rpcrdma__proc_gone(fd, (uint32_t)pid));
	if (fd >= 0)
		close(fd);
}

/* Killed and reaped before anyone watched it: no pidfd can be had, its pid decides. */
static void reaped_before_watched(void)
{
	pid_t pid = sleeper();
	int fd;

	CHECK(pid > 0);
	reap(pid);
	fd = rpcrdma__pid_watch((uint32_t)pid);
	CHECK_EQ_I(fd, -1);
	CHECK(rpcrdma__proc_gone(fd, (uint32_t)pid));
}

/* Nothing to watch (no pid known) is never taken for a death; a live process without a
 * pidfd is alive. */
static void unknown_and_live(void)
{
	pid_t pid = sleeper();

	CHECK(!rpcrdma__proc_gone(-1, 0));
	CHECK(!rpcrdma__proc_gone(-1, (uint32_t)pid));
	reap(pid);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(watched_then_killed);
	RUN(reaped_before_watched);
	RUN(unknown_and_live);
	HARNESS_END();
}
