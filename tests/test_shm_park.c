/* SPDX-License-Identifier: BSD-2-Clause */
/* First messages over shm that the receiver has not taken yet (prov/fabric/fabric_rdm.c,
 * parking). libfabric 1.17 maps a sender's region by name when the receiver takes its
 * first message, and crashes if the region is gone by then; so an endpoint whose
 * CONNREQ or ACCEPT was not taken is kept, not closed, and its region file outlives the
 * process. Each case stops the receiver (SIGSTOP) at the point where that happens, lets
 * the sender give up, resumes the receiver and checks that it lives on. */
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "prov_int.h"
#include "rpcrdma/prov.h"

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Until the kernel has stopped it (a signal is delivered asynchronously). */
static int wait_stopped(pid_t pid)
{
	char path[64], buf[256], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 2000; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = '\0';
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'T')
			return 1;
		sleep_ms(1);
	}
	return 0;
}

/* Whether every thread of pid is inside a system call: none then holds a libfabric shm
 * region lock (held for microseconds, around no system call on these paths). */
static int all_in_syscalls(pid_t pid)
{
	char path[300], line[64];
	struct dirent *de;
	DIR *d;
	int ok = 1;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (ok && (de = readdir(d)) != NULL) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.32s/syscall", (int)pid, de->d_name);
		f = fopen(path, "r");
		ok = f && fgets(line, sizeof(line), f) && strncmp(line, "-1 ", 3) &&
		     strncmp(line, "running", 7);
		if (f)
			fclose(f);
	}
	closedir(d);
	return ok;
}

/* SIGSTOP, where the process holds no shm region lock: stopped holding one, its peers
 * would wait (inside libfabric) until the lock watchdog released it after 500 ms under
 * the stopped holder (docs/PROVIDERS.md) - not what these cases are about. */
static int stop_safely(pid_t pid)
{
	for (int i = 0; i < 1000; i++) {
		kill(pid, SIGSTOP);
		if (!wait_stopped(pid))
			return 0;
		if (all_in_syscalls(pid))
			return 1;
		kill(pid, SIGCONT);
		sleep_ms(1);
	}
	return 0;
}

/* libfabric's shm regions of process pid ("PID:N:M"), by file name. */
static int regions_of(pid_t pid)
{
	char prefix[32];
	struct dirent *de;
	DIR *d = opendir("/dev/shm");
	int n = 0;

	if (!d)
		return -1;
	snprintf(prefix, sizeof(prefix), "%d:", (int)pid);
	while ((de = readdir(d)) != NULL) {
		const char *rest = de->d_name + strlen(prefix);

		if (!strncmp(de->d_name, prefix, strlen(prefix)) && rest[0] >= '0' &&
		    rest[0] <= '9' && !strchr(rest, '.'))
			n++;
	}
	closedir(d);
	return n;
}

static struct rpcrdma_prov *shm(void)
{
	struct rpcrdma_prov *p = NULL;
	char err[256];

	if (rpcrdma_prov_open("shm", &p, err, sizeof(err)))
		fprintf(stderr, "shm: %s\n", err);
	return p;
}

/* A child that listens and accepts whatever comes, until killed; its port via fd. */
static _Noreturn void listener_child(int fd)
{
	struct rpcrdma_prov *p = shm();
	struct rpcrdma_listener *l = NULL;
	uint16_t port = 0;

	if (p && rpcrdma_listen(p, NULL, 0, &l) == 0)
		port = rpcrdma_listener_port(l);
	if (write(fd, &port, sizeof(port)) != sizeof(port) || !port)
		_exit(2);
	for (;;) {
		struct rpcrdma_connreq *r;
		struct rpcrdma_ep *ep;

		if (rpcrdma_listener_get(l, 100, &r))
			continue;
		if (rpcrdma_accept(r, NULL, 0, 2000, &ep) == 0)
			rpcrdma_ep_close(ep);
	}
}

/* The children are this program again (fork and exec): a process forked from one with
 * threads is no place for libfabric, nor for LeakSanitizer's exit check. */
static pid_t spawn(const char *role, const char *arg)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl("/proc/self/exe", "test_shm_park", role, arg, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static pid_t spawn_listener(uint16_t *port)
{
	char fd[16];
	int fds[2];
	pid_t pid;

	*port = 0;
	if (pipe(fds))
		return -1;
	snprintf(fd, sizeof(fd), "%d", fds[1]);
	pid = spawn("--listener", fd);
	close(fds[1]);
	if (pid > 0 && read(fds[0], port, sizeof(*port)) != sizeof(*port))
		*port = 0;
	close(fds[0]);
	return pid;
}

/* A client that tries once and returns from main, as a program does (what is kept at
 * exit is kept): 0 if it was refused. */
static int client_child(const char *arg)
{
	unsigned port = 0, timeout_ms = 0;
	struct rpcrdma_prov *p = shm();
	struct rpcrdma_ep *ep;
	int rc;

	if (!p || sscanf(arg, "%u:%u", &port, &timeout_ms) != 2)
		return 2;
	rc = rpcrdma_connect(p, NULL, (uint16_t)port, NULL, 0, (int)timeout_ms, &ep);
	rpcrdma_prov_close(p);
	return rc == -RPCRDMA_ERR_REFUSED || rc == -RPCRDMA_ERR_TIMEDOUT ? 0 : 3;
}

static pid_t spawn_client(uint16_t port, int timeout_ms)
{
	char arg[32];

	snprintf(arg, sizeof(arg), "%u:%d", port, timeout_ms);
	return spawn("--client", arg);
}

/* Only a kill of ours ended it: not a crash. */
static void check_killed_by_us(pid_t pid)
{
	int st = 0;

	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	if (WIFSIGNALED(st) && WTERMSIG(st) != SIGKILL)
		fprintf(stderr, "the listener died of signal %d\n", WTERMSIG(st));
}

/* The listener stopped: our connects are refused; the second does not queue another
 * request (no second region); the provider is closed with its endpoint parked. Resumed,
 * the listener takes the first request, the parked endpoint (and its provider) go at the
 * next connect, which succeeds. A client process that gave up and exited leaves its
 * region file (kept), which the resumed listener maps. */
static void test_stopped_listener(void)
{
	struct rpcrdma_prov *p = shm();
	struct rpcrdma_ep *ep = NULL;
	uint16_t port;
	pid_t lpid = spawn_listener(&port), cpid;
	int st = 0, rc;

	CHECK(p != NULL && lpid > 0 && port != 0);
	if (!p || lpid <= 0 || !port)
		goto out;
	CHECK(stop_safely(lpid));
	rc = rpcrdma_connect(p, NULL, port, NULL, 0, 300, &ep);
	CHECK_EQ_I(rc, -RPCRDMA_ERR_REFUSED);
	CHECK_EQ_I(regions_of(getpid()), 1);   /* the parked endpoint's */
	rc = rpcrdma_connect(p, NULL, port, NULL, 0, 300, &ep);
	CHECK_EQ_I(rc, -RPCRDMA_ERR_REFUSED);
	CHECK_EQ_I(regions_of(getpid()), 1);   /* waited for it: no second one */

	cpid = spawn_client(port, 300);
	CHECK(waitpid(cpid, &st, 0) == cpid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ_I(regions_of(cpid), 1);       /* kept after its exit */

	/* closed with its endpoint parked: freed with it, by the sweep of another's connect */
	rpcrdma_prov_close(p);
	p = shm();
	kill(lpid, SIGCONT);
	rc = p ? rpcrdma_connect(p, NULL, port, NULL, 0, 5000, &ep) : -1;
	CHECK_EQ_I(rc, 0);
	if (!rc) {
		CHECK(rpcrdma_ep_connected(ep));
		CHECK_EQ_I(regions_of(getpid()), 1);   /* the connection's only */
		rpcrdma_ep_close(ep);
	}
	sleep_ms(200);   /* the listener polls again after its accept */
	CHECK(waitpid(lpid, &st, WNOHANG) == 0);
	check_killed_by_us(lpid);
out:
	rpcrdma_prov_close(p);
}

/* The client stopped after its CONNREQ: our ACCEPT is not taken, the endpoint parked;
 * resumed, the client takes its name (and gives up, the ACCEPT never posted) without
 * crashing. Once it has gone, the next connect's sweep closes the parked endpoint. */
static void test_stopped_client(void)
{
	struct rpcrdma_prov *p = shm();
	struct rpcrdma_listener *l = NULL;
	struct rpcrdma_connreq *r = NULL;
	struct rpcrdma_ep *ep = NULL;
	int st = 0, rc, before;
	pid_t cpid;

	CHECK(p != NULL);
	if (!p || rpcrdma_listen(p, NULL, 0, &l))
		goto out;
	before = regions_of(getpid());
	cpid = spawn_client(rpcrdma_listener_port(l), 3000);
	CHECK_EQ_I(rpcrdma_listener_get(l, 5000, &r), 0);
	CHECK(stop_safely(cpid));
	if (r) {
		rc = rpcrdma_accept(r, NULL, 0, 300, &ep);
		CHECK_EQ_I(rc, -RPCRDMA_ERR_TIMEDOUT);
	}
	CHECK(regions_of(getpid()) >= 1);
	kill(cpid, SIGCONT);
	CHECK(waitpid(cpid, &st, 0) == cpid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (WIFSIGNALED(st))
		fprintf(stderr, "the client died of signal %d\n", WTERMSIG(st));
	/* nobody listens on the listener's port + 1 (most likely): a sweep, then refused */
	rpcrdma_connect(p, NULL, (uint16_t)(rpcrdma_listener_port(l) + 1), NULL, 0, 50, &ep);
	CHECK_EQ_I(regions_of(getpid()), before);
out:
	rpcrdma_listener_close(l);
	rpcrdma_prov_close(p);
}

/* Both sides close at once (the listener child closes each connection it accepts): the
 * close that reads the peer's DISCONNECT while it drains ended the connection inside
 * its own teardown, which then closed a NULL endpoint (SIGSEGV). */
static void test_both_close(void)
{
	struct rpcrdma_prov *p = shm();
	uint16_t port;
	pid_t lpid = spawn_listener(&port);
	int ok = 0;

	CHECK(p != NULL && lpid > 0 && port != 0);
	for (int i = 0; p && port && i < 50; i++) {
		struct rpcrdma_ep *ep;

		if (rpcrdma_connect(p, NULL, port, NULL, 0, 5000, &ep) == 0) {
			ok++;
			rpcrdma_ep_close(ep);
		}
	}
	CHECK_EQ_I(ok, 50);
	if (lpid > 0)
		check_killed_by_us(lpid);
	rpcrdma_prov_close(p);
}

/* A client that connects, then takes the lock of each of its regions and keeps it, as if
 * stopped inside libfabric; says so through fd, then waits to be killed. */
static _Noreturn void holder_child(const char *arg)
{
	unsigned port = 0, fd = 0;
	struct rpcrdma_prov *p = shm();
	struct rpcrdma_ep *ep;
	char prefix[32], held = 0;
	struct dirent *de;
	DIR *d;

	if (!p || sscanf(arg, "%u:%u", &port, &fd) != 2 ||
	    rpcrdma_connect(p, NULL, (uint16_t)port, NULL, 0, 5000, &ep))
		_exit(2);
	snprintf(prefix, sizeof(prefix), "%d:", (int)getpid());
	d = opendir("/dev/shm");
	while (d && (de = readdir(d)) != NULL)
		if (!strncmp(de->d_name, prefix, strlen(prefix)) && !strchr(de->d_name, '.')) {
			void *hdr = rpcrdma__shm_region_map(de->d_name, (uint32_t)getpid());

			rpcrdma__shm_region_hold(hdr);
			held += hdr != NULL;
		}
	if (d)
		closedir(d);
	if (write((int)fd, &held, 1) != 1)
		_exit(3);
	for (;;)
		pause();
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The lock watchdog (prov/fabric/fabric_rdm.c): a post to a peer whose region lock is held by a
 * process that will not let go (alive, stopped) waits inside libfabric until the watchdog
 * releases the lock, WD_STUCK_MS after it first saw the call under way; then it goes. */
static void test_lock_watchdog(void)
{
	struct rpcrdma_prov *p = shm();
	struct rpcrdma_listener *l = NULL;
	struct rpcrdma_connreq *r;
	struct rpcrdma_ep *ep = NULL;
	struct rpcrdma_mr *mr = NULL;
	struct rpcrdma_cqe cqe;
	/* 1 KiB: libfabric 2.1 takes the peer's lock only for a message that does not fit
	 * its command (an inject buffer from the peer's pool); 1.17 for every post */
	static char msg[1024] = "after the lock";
	char arg[32], held = 0;
	int fds[2] = { -1, -1 }, rc = -1;
	double t0, took = 0;
	pid_t pid = -1;

	CHECK(p && rpcrdma_listen(p, NULL, 0, &l) == 0 && pipe(fds) == 0);
	if (!l || fds[0] < 0)
		goto out;
	snprintf(arg, sizeof(arg), "%u:%d", rpcrdma_listener_port(l), fds[1]);
	pid = spawn("--holder", arg);
	CHECK(rpcrdma_listener_get(l, 5000, &r) == 0 && rpcrdma_accept(r, NULL, 0, 5000, &ep) == 0);
	CHECK(read(fds[0], &held, 1) == 1 && held > 0);
	CHECK(rpcrdma_mr_reg(p, msg, sizeof(msg), RPCRDMA_ACC_LOCAL, &mr) == 0);
	if (!ep || !held || !mr)
		goto out;
	alarm(20);   /* without the watchdog the post spins for ever */
	t0 = now_s();
	rc = rpcrdma_post_send(ep, &(struct rpcrdma_sge){ mr, msg, sizeof(msg) }, msg);
	for (int i = 0; rc == 0 && i < 5000 && rpcrdma_ep_poll(ep, &cqe, 1) == 0; i++)
		sleep_ms(1);
	took = now_s() - t0;
	alarm(0);
	CHECK_EQ_I(rc, 0);
	/* WD_STUCK_MS (500) from the first look, which comes within WD_IDLE_MS (200) */
	CHECK(took >= 0.45 && took < 5.0);
	fprintf(stderr, "post under a held lock went after %.0f ms\n", took * 1000);
out:
	if (pid > 0)
		check_killed_by_us(pid);
	rpcrdma_mr_dereg(mr);
	rpcrdma_ep_close(ep);
	rpcrdma_listener_close(l);
	rpcrdma_prov_close(p);
	if (fds[0] >= 0) {
		close(fds[0]);
		close(fds[1]);
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--listener")) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlives the test */
		listener_child(atoi(argv[2]));
	}
	if (argc == 3 && !strcmp(argv[1], "--client"))
		return client_child(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--holder")) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		holder_child(argv[2]);
	}
	HARNESS_BEGIN(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	RUN(test_stopped_listener);
	RUN(test_stopped_client);
	RUN(test_both_close);
	RUN(test_lock_watchdog);
	HARNESS_END();
}
