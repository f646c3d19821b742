/* SPDX-License-Identifier: BSD-2-Clause */
/* Spin or sleep (rpcrdma__spin_more, rpc/xdr_rdma.c): a thread that shares its core with
 * another runnable thread stops spinning, and stays calm for a while; a thread new to the
 * question spins first. Busy polling's budget from the environment. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "harness.h"
#include "rpc_int.h"

static atomic_int stop_hog;

static void *hog(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_hog))
		;
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool pin_to(pthread_t t, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(t, sizeof(set), &set) == 0;
}

/* Another thread runnable on the same core: within a few scheduler slices the spinner
 * is told to sleep, and the next wait starts asleep (calm). */
static void contended_core_stops_spinning(void)
{
	int cpu = sched_getcpu();
	pthread_t t;
	unsigned polls = 1;
	double t0;

	CHECK(cpu >= 0);
	CHECK(pin_to(pthread_self(), cpu));
	atomic_store(&stop_hog, 0);
	CHECK(pthread_create(&t, NULL, hog, NULL) == 0);
	CHECK(pin_to(t, cpu));
	t0 = now_s();
	rpcrdma__spin_more(1);   /* its first look may already see the pressure: calm */
	while (rpcrdma__spin_more(++polls) && now_s() - t0 < 5)
		;
	CHECK(now_s() - t0 < 5);
	CHECK(!rpcrdma__spin_more(1));   /* calm: the next wait sleeps at once */
	atomic_store(&stop_hog, 1);
	pthread_join(t, NULL);
}

static void *first_polls(void *arg)
{
	unsigned i;

	for (i = 1; i < 32; i++)
		if (!rpcrdma__spin_more(i))
			*(int *)arg = (int)i;
	return NULL;
}

/* A thread's first wait spins: no pressure has been seen yet, and its first 31 polls
 * take no look at the scheduler's count. */
static void new_thread_spins(void)
{
	pthread_t t;
	int stopped_at = 0;

	CHECK(pthread_create(&t, NULL, first_polls, &stopped_at) == 0);
	pthread_join(t, NULL);
	CHECK_EQ_I(stopped_at, 0);
}

/* RPCRDMA_BUSY_POLL_US: microseconds, capped at a second; anything else is off. */
static void busy_poll_from_environment(void)
{
	unsetenv("RPCRDMA_BUSY_POLL_US");
	CHECK_EQ_U(rpcrdma__env_busy_poll_us(), 0);
	setenv("RPCRDMA_BUSY_POLL_US", "5000", 1);
	CHECK_EQ_U(rpcrdma__env_busy_poll_us(), 5000);
	setenv("RPCRDMA_BUSY_POLL_US", "99999999", 1);
	CHECK_EQ_U(rpcrdma__env_busy_poll_us(), RPCRDMA__BUSY_POLL_MAX_US);
	setenv("RPCRDMA_BUSY_POLL_US", "50ms", 1);
	CHECK_EQ_U(rpcrdma__env_busy_poll_us(), 0);
	setenv("RPCRDMA_BUSY_POLL_US", "", 1);
	CHECK_EQ_U(rpcrdma__env_busy_poll_us(), 0);
	unsetenv("RPCRDMA_BUSY_POLL_US");
	CHECK_EQ_U(rpcrdma__busy_poll_cap(2000000), RPCRDMA__BUSY_POLL_MAX_US);
	CHECK_EQ_U(rpcrdma__busy_poll_cap(70), 70);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(contended_core_stops_spinning);
	RUN(new_thread_spins);
	RUN(busy_poll_from_environment);
	HARNESS_END();
}
