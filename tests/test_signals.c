/* SPDX-License-Identifier: BSD-2-Clause */
/* A program that uses librpcrdma's libfabric providers keeps the default actions of the
 * fatal signals: Debian's libfabric loads libinfinipath (its psm provider), whose
 * constructor takes SIGINT, SIGTERM, SIGSEGV, ... for itself (exit status 1 instead of
 * death by the signal), and librpcrdma gives them back once it has loaded libfabric
 * (prov/fabric/prov_fabric.c). Each case first opens the tcp provider, which loads it. Where no such library
 * is installed the first two cases hold trivially; the third shows the test can tell
 * (it sees the psm handlers when they are kept, or no psm library at all). The psm
 * libraries are loaded here (RPCRDMA_LIBFABRIC_PSM=1), as where librpcrdma's stand-ins
 * for them are not installed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "rpcrdma/prov.h"

static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGILL,
			    SIGFPE, SIGABRT };
#define NSIGS (sizeof(sigs) / sizeof(sigs[0]))

/* How many of the signals have a handler from libinfinipath or libpsm*. */
static int psm_handlers(void)
{
	size_t i;
	int n = 0;

	for (i = 0; i < NSIGS; i++) {
		struct sigaction sa;
		void *h;
		Dl_info d;

		if (sigaction(sigs[i], NULL, &sa))
			continue;
		h = (sa.sa_flags & SA_SIGINFO) ? (void *)sa.sa_sigaction : (void *)sa.sa_handler;
		if (h != (void *)SIG_DFL && h != (void *)SIG_IGN && dladdr(h, &d) && d.dli_fname &&
		    (strstr(d.dli_fname, "libinfinipath.") || strstr(d.dli_fname, "/libpsm")))
			n++;
	}
	return n;
}

/* Opens and closes the tcp provider: libfabric is loaded from then on. */
static int use_libfabric(void)
{
	struct rpcrdma_prov *p = NULL;
	int rc = rpcrdma_prov_open("tcp", &p, NULL, 0);

	rpcrdma_prov_close(p);
	return rc;
}

static void test_no_psm_handlers(void)
{
	CHECK_EQ_I(use_libfabric(), 0);
	CHECK(dlopen("libfabric.so.1", RTLD_NOW | RTLD_NOLOAD) != NULL);
	CHECK_EQ_I(psm_handlers(), 0);
}

static void own_handler(int sig)
{
	(void)sig;
}

/* A handler the program installed before its first provider opened (so before
 * libfabric and its psm libraries were loaded) is still its own after. */
static void test_own_handler_kept(void)
{
	struct sigaction sa = { .sa_handler = own_handler }, now;

	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGTERM, &sa, NULL) == 0 && sigaction(SIGINT, &sa, NULL) == 0);
	CHECK_EQ_I(use_libfabric(), 0);
	CHECK(sigaction(SIGTERM, NULL, &now) == 0 && now.sa_handler == own_handler);
	CHECK(sigaction(SIGINT, NULL, &now) == 0 && now.sa_handler == own_handler);
	CHECK_EQ_I(psm_handlers(), 0);
}

/* Each of SIGTERM and SIGINT ends a child by the signal, as without librpcrdma. */
static void test_term_and_int_kill(void)
{
	int s;

	CHECK_EQ_I(use_libfabric(), 0);
	for (s = 0; s < 2; s++) {
		int sig = s ? SIGINT : SIGTERM, status = 0;
		pid_t child = fork();

		if (child == 0) {
			raise(sig);
			_exit(0);
		}
		CHECK(waitpid(child, &status, 0) == child);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == sig);
	}
}

/* With RPCRDMA_KEEP_PSM_SIGNALS=1 a fresh copy of this program keeps them: it reports
 * how many it sees, which is 6 where libinfinipath is installed (Debian's libfabric). */
static void test_kept_on_request(void)
{
	int p[2], status = 0, n = -1;
	pid_t child;

	CHECK_EQ_I(use_libfabric(), 0);   /* for the look at libinfinipath below */
	CHECK(pipe(p) == 0);
	child = fork();
	if (child == 0) {
		dup2(p[1], 1);
		setenv("RPCRDMA_KEEP_PSM_SIGNALS", "1", 1);
		execl("/proc/self/exe", "test_signals", "--count", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status));
	{
		char buf[16] = { 0 };
		ssize_t r = read(p[0], buf, sizeof(buf) - 1);

		n = r > 0 ? atoi(buf) : -1;
	}
	close(p[0]);
	/* loaded into this process (by libfabric) or not there at all */
	if (dlopen("libinfinipath.so.4", RTLD_NOW | RTLD_NOLOAD))
		CHECK(n >= 4);
	else
		CHECK(n >= 0);
	printf("psm handlers kept on request: %d\n", n);
}

int main(int argc, char **argv)
{
	/* the psm libraries loaded, not left out (prov_fabric.c, load_psm_stubs): their
	 * signals are what this program checks (tests/test_lazy_libs.sh checks leaving out) */
	setenv("RPCRDMA_LIBFABRIC_PSM", "1", 1);
	if (argc > 1 && !strcmp(argv[1], "--count")) {
		printf("%d\n", use_libfabric() ? -2 : psm_handlers());
		return 0;
	}
	HARNESS_BEGIN(argc, argv);
	RUN(test_no_psm_handlers);
	RUN(test_own_handler_kept);
	RUN(test_term_and_int_kill);
	RUN(test_kept_on_request);
	HARNESS_END();
}
