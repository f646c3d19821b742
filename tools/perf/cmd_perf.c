/* SPDX-License-Identifier: BSD-2-Clause */
/* rpcrdma perf: a matrix of operations x sizes x calls in flight against the built-in
 * service, over RPC-over-RDMA and (--compare) over ONC RPC/TCP with libtirpc, with the raw
 * provider ceiling from bench_prov. Figures only: it never fails on speed. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "perf_common.h"

/* setup: a new client, its connection and the first NULL reply, timed together (what a
 * program that makes a client per task pays); echo: the data inline both ways, no
 * binding: long calls and long replies (reply chunk) once it is larger than the inline
 * threshold */
enum { OP_SETUP, OP_NULL, OP_READ, OP_WRITE, OP_ECHO, OP_COUNT };
static const char *const op_names[OP_COUNT] = { "setup", "null", "read", "write", "echo" };
#define OPS_DEFAULT ((1u << OP_SETUP) | (1u << OP_NULL) | (1u << OP_READ) | (1u << OP_WRITE))
#define SETUP_MAX 1000   /* clients made per setup figure, at most */

struct cfg {
	const char *provider;
	char host[256];
	uint16_t port, tcp_port;
	pid_t child;
	int busy;          /* --busy N: threads spinning in another process meanwhile */
	int idle;          /* --idle N: connections held idle while the server is measured */
	pid_t busy_pid;
	double secs;
	int json, compare, check;
	int csv;           /* --csv: the figures as CSV on stdout, the rest as text on stderr */
	int parallel;      /* -P N: connections at once, each with the depth's calls */
	double interval;   /* -i S: a report every S seconds while a figure is measured */
	unsigned ops;
	uint32_t sizes[16];
	int nsizes;
	int depths[8];
	int ndepths;
	const char *pcap;
	uint32_t snaplen;
	const char *svg;   /* --svg FILE */
	int prereg;        /* --prereg: buffers added as long-lived memory, both sides */
};

#define MAX_SVG_ROWS 256
static struct perf_svg_row svg_rows[MAX_SVG_ROWS];
static int nsvg;

/* Where the text that is no figure goes: stdout, or stderr beside --csv's figures. */
static FILE *text_out(const struct cfg *c)
{
	return c->csv ? stderr : stdout;
}

struct result {
	char transport[32];
	int op;
	uint32_t size;
	int depth;
	int conns;         /* connections the figure used at once (-P) */
	double calls_s, mbps, p50, p99, cpu_gb;
	double first_us;   /* setup: the first client of the figure */
	uint64_t calls, verified, failed;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU seconds of this process and of the server child (when we started it). */
static double cpu_now(pid_t child)
{
	struct rusage ru;
	double s;
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	FILE *f;

	getrusage(RUSAGE_SELF, &ru);
	s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	    ru.ru_stime.tv_usec / 1e6;
	if (child <= 0)
		return s;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)child);
	f = fopen(path, "r");
	if (!f)
		return s;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
		s += (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	fclose(f);
	return s;
}

/* ---- --busy: other programs holding cores ---- */

static void *spin(void *arg)
{
	volatile unsigned long *sink = arg;

	for (;;)
		(*sink)++;
	return NULL;
}

/* N threads spinning in a process of their own for as long as perf runs, as another
 * program on a shared server would; it dies with perf (PR_SET_PDEATHSIG). Returns its
 * pid, or -1. */
static pid_t start_busy(int n)
{
	static volatile unsigned long sink;
	pid_t parent = getpid(), pid;
	pthread_t t;
	int i;

	fflush(stdout);
	pid = fork();
	if (pid != 0)
		return pid;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(0);
	for (i = 1; i < n; i++)
		if (pthread_create(&t, NULL, spin, (void *)&sink))
			_exit(1);
	spin((void *)&sink);
	_exit(0);
}

static void stop_busy(struct cfg *c)
{
	if (c->busy_pid <= 0)
		return;
	kill(c->busy_pid, SIGKILL);
	waitpid(c->busy_pid, NULL, 0);
	c->busy_pid = 0;
}

/* ---- one call of an operation, checked when asked ---- */

struct slot {
	struct cfg *c;
	CLIENT *cl;
	int op;
	uint32_t size;
	ps_read_args ra;
	ps_write_args wa;
	ps_data rd;
	u_int wr;
	double t0;
	/* collected */
	double *lat;
	uint64_t nlat, cap;
	uint64_t completed;   /* calls done, read by the -i reporter while they go on */
	uint64_t verified, failed;
	int inflight;
	double end;
	char *buf;            /* RDMA: where READ results land */
};

static char *wdata;   /* WRITE arguments: pattern bytes */
static uint32_t wdata_sum_len;
static uint32_t wdata_sum;

static void prepare(struct slot *s)
{
	memset(&s->rd, 0, sizeof(s->rd));
	s->ra.count = s->size;
	s->wa.check = (u_int)s->c->check;
	s->wa.data.ps_data_len = s->size;
	s->wa.data.ps_data_val = wdata;
}

static void record(struct slot *s, enum clnt_stat st)
{
	double dt = now_s() - s->t0;
	uint32_t i;
	int ok = st == RPC_SUCCESS;

	if (ok && s->c->check && s->op == OP_READ) {
		ok = s->rd.ps_data_len == s->size;
		for (i = 0; ok && i < s->size; i++)
			ok = (uint8_t)s->rd.ps_data_val[i] == ps_byte(i);
	} else if (ok && s->c->check && s->op == OP_WRITE) {
		ok = s->wr == wdata_sum;
	} else if (ok && s->c->check && s->op == OP_ECHO) {
		ok = s->rd.ps_data_len == s->size &&
		     (!s->size || !memcmp(s->rd.ps_data_val, wdata, s->size));
	}
	if (ok && s->c->check)
		s->verified++;
	if (!ok)
		s->failed++;
	if (s->nlat < s->cap)
		s->lat[s->nlat++] = dt;
	__atomic_fetch_add(&s->completed, 1, __ATOMIC_RELAXED);
	if (s->op == OP_READ && s->rd.ps_data_val == s->buf)
		s->rd.ps_data_val = NULL;   /* ours, kept for the next call */
	if (s->op == OP_READ || s->op == OP_ECHO)
		xdr_free((xdrproc_t)xdr_ps_data, (char *)&s->rd);
}

/* READ results land in a buffer of the slot's, reused: the data is placed there by
 * RDMA Write, and no allocation or page fault is timed (as a file system's page cache). */
static void offer_buffer(struct slot *s)
{
	struct rpcrdma_ddp_bufs b;

	if (s->op != OP_READ || !s->buf)
		return;
	b.n = 1;
	b.buf[0].data = s->buf;
	b.buf[0].cap = s->size;
	clnt_control(s->cl, RPCRDMA_CLSET_DDP_BUFS, (char *)&b);
	s->rd.ps_data_val = NULL;
}

static enum clnt_stat call_sync(struct slot *s)
{
	struct timeval tv = { 30, 0 };

	prepare(s);
	offer_buffer(s);
	s->t0 = now_s();
	switch (s->op) {
	case OP_READ:
		return clnt_call(s->cl, PS_READ, (xdrproc_t)xdr_ps_read_args, (char *)&s->ra,
				 (xdrproc_t)xdr_ps_data, (char *)&s->rd, tv);
	case OP_WRITE:
		return clnt_call(s->cl, PS_WRITE, (xdrproc_t)xdr_ps_write_args, (char *)&s->wa,
				 (xdrproc_t)xdr_u_int, (char *)&s->wr, tv);
	case OP_ECHO:
		return clnt_call(s->cl, PS_ECHO, (xdrproc_t)xdr_ps_data, (char *)&s->wa.data,
				 (xdrproc_t)xdr_ps_data, (char *)&s->rd, tv);
	default:
		return clnt_call(s->cl, PS_NULL, (xdrproc_t)(void (*)(void))xdr_void, NULL,
				 (xdrproc_t)(void (*)(void))xdr_void, NULL, tv);
	}
}

static int call_async(struct slot *s);

/* SIGINT or SIGTERM: every loop ends at its next turn, what was measured is printed
 * marked interrupted, the server perf started is stopped, and perf exits 128 + signal. */
static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	stop_sig = sig;
}


static int running(double end)
{
	return !stop_sig && now_s() < end;
}

static void async_done(void *ctx, enum clnt_stat st)
{
	struct slot *s = ctx;

	record(s, st);
	s->inflight = 0;
	if (running(s->end))
		call_async(s);
}

static int call_async(struct slot *s)
{
	int rc;

	prepare(s);
	s->t0 = now_s();
	switch (s->op) {
	case OP_READ:
		offer_buffer(s);
		rc = rpcrdma_clnt_call_async(s->cl, PS_READ, (xdrproc_t)xdr_ps_read_args, &s->ra,
					     (xdrproc_t)xdr_ps_data, &s->rd, async_done, s);
		break;
	case OP_WRITE:
		rc = rpcrdma_clnt_call_async(s->cl, PS_WRITE, (xdrproc_t)xdr_ps_write_args, &s->wa,
					     (xdrproc_t)xdr_u_int, &s->wr, async_done, s);
		break;
	case OP_ECHO:
		rc = rpcrdma_clnt_call_async(s->cl, PS_ECHO, (xdrproc_t)xdr_ps_data, &s->wa.data,
					     (xdrproc_t)xdr_ps_data, &s->rd, async_done, s);
		break;
	default:
		rc = rpcrdma_clnt_call_async(s->cl, PS_NULL, (xdrproc_t)(void (*)(void))xdr_void,
					     NULL, (xdrproc_t)(void (*)(void))xdr_void, NULL,
					     async_done, s);
	}
	s->inflight = rc == 0;
	if (rc)
		s->failed++;
	return rc;
}

static void *sync_loop(void *arg)
{
	struct slot *s = arg;

	while (running(s->end))
		record(s, call_sync(s));
	return NULL;
}

/* ---- one measurement ---- */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void summarise(struct result *r, struct slot *sl, int n, double dt, double cpu)
{
	uint64_t total = 0, k = 0;
	double *all;
	int i;

	for (i = 0; i < n; i++)
		total += sl[i].nlat;
	all = malloc(sizeof(double) * (total ? total : 1));
	for (i = 0; i < n; i++) {
		memcpy(all + k, sl[i].lat, sl[i].nlat * sizeof(double));
		k += sl[i].nlat;
		r->verified += sl[i].verified;
		r->failed += sl[i].failed;
	}
	qsort(all, total, sizeof(double), cmp_d);
	r->calls = total;
	r->calls_s = dt > 0 ? total / dt : 0;
	r->mbps = total * (double)r->size / (dt > 0 ? dt : 1) / 1e6;
	r->p50 = total ? all[total / 2] * 1e6 : 0;
	r->p99 = total ? all[(total - 1) * 99 / 100] * 1e6 : 0;
	r->cpu_gb = !total || !r->size ? 0 :
		    cpu / (total * (double)r->size / 1e9);
	free(all);
}

/* setup: clients made one after another for the figure's time (at most SETUP_MAX), each
 * created, used for one NULL call and destroyed; creation and call are timed, the
 * destruction is not. The figure's calls/s is clients per second of that time. */
static int measure_setup(struct cfg *c, const char *provider, struct result *r)
{
	struct slot s = { .c = c, .op = OP_NULL, .cap = SETUP_MAX };
	double end = now_s() + c->secs, spent = 0;

	s.lat = malloc(sizeof(double) * s.cap);
	if (!s.lat)
		return -1;
	while (s.nlat < s.cap && (s.nlat == 0 || running(end))) {
		double t0 = now_s();
		enum clnt_stat st;

		s.cl = ps_client(provider, c->host, provider ? c->port : c->tcp_port);
		if (!s.cl) {
			ps_explain_create_error("perf", provider, c->host,
						provider ? c->port : c->tcp_port, c->json);
			free(s.lat);
			return -1;
		}
		st = call_sync(&s);
		s.t0 = t0;
		record(&s, st);
		spent += now_s() - t0;
		clnt_destroy(s.cl);
	}
	r->first_us = s.lat[0] * 1e6;
	summarise(r, &s, 1, spent, 0);
	free(s.lat);
	return 0;
}

/* The table's head goes with its first row: a run that fails to connect prints none. */
static void print_table_head(void)
{
	static int done;

	if (done++)
		return;
	printf("%-10s %-5s %9s %5s %11s %9s %9s %9s %9s\n", "transport", "op", "bytes", "depth",
	       "calls/s", "MB/s", "p50 us", "p99 us", "cpu s/GB");
}

/* -i: while a figure is measured, every interval the calls completed in it, as iperf3
 * reports; the figure itself is printed at the end as without -i. With -P, a row per
 * connection ("stream", as iperf3 says) and their sum. */
#define MAX_STREAMS 64
struct reporter {
	struct cfg *c;
	const struct result *r;   /* transport, op, size, depth */
	struct slot *sl;
	int n;
	int streams;              /* -P: slots [k*depth, (k+1)*depth) are stream k */
	double t0, end;
};

/* Decimals that show the interval as given: 0.25 s intervals are 0.00-0.25, not 0.0-0.3. */
static int whole(double x)
{
	double r = (double)(long)(x + 0.5);

	return x - r < 1e-6 && r - x < 1e-6;
}

static int interval_decimals(double iv)
{
	return whole(iv * 10) ? 1 : whole(iv * 100) ? 2 : 3;
}

/* One row: stream k (1-based), or the sum of every stream (k 0). Over [a, b] of the
 * figure's time, by the clock; the rate is over dt, the time really elapsed. */
static void print_interval(const struct reporter *rp, int k, double a, double b, double dt,
			   uint64_t calls)
{
	double cps = calls / dt, mbps = calls * (double)rp->r->size / dt / 1e6;
	int dec = interval_decimals(rp->c->interval);
	char who[16] = "";

	if (rp->streams > 1)
		snprintf(who, sizeof(who), k ? "  [%d]" : "  [SUM]", k);
	if (rp->c->json) {
		printf("{\"interval\":{\"transport\":\"%s\",\"op\":\"%s\",\"size\":%u,"
		       "\"depth\":%d,", rp->r->transport, op_names[rp->r->op], rp->r->size,
		       rp->r->depth);
		if (rp->streams > 1 && k)
			printf("\"stream\":%d,", k);
		else if (rp->streams > 1)
			printf("\"connections\":%d,", rp->streams);
		printf("\"start\":%.*f,\"t\":%.*f,\"calls_per_s\":%.0f,\"MBps\":%.1f}}\n", dec,
		       a, dec, b, cps, mbps);
	} else if (rp->c->csv) {
		fprintf(stderr, "%s %s %u %d %.*f-%.*f s: %.0f calls/s %.1f MB/s%s\n",
			rp->r->transport, op_names[rp->r->op], rp->r->size, rp->r->depth, dec, a,
			dec, b, cps, mbps, who);
	} else {
		print_table_head();
		printf("%-10s %-5s %9u %5d %11.0f %9.1f  (%.*f-%.*f s)%s\n", rp->r->transport,
		       op_names[rp->r->op], rp->r->size, rp->r->depth, cps, mbps, dec, a, dec, b, who);
	}
}

/* Calls each stream completed so far (streams of depth slots each). */
static void stream_counts(const struct reporter *rp, uint64_t *per)
{
	int i, per_stream = rp->n / rp->streams;

	memset(per, 0, sizeof(*per) * (size_t)rp->streams);
	for (i = 0; i < rp->n; i++)
		per[i / per_stream] += __atomic_load_n(&rp->sl[i].completed, __ATOMIC_RELAXED);
}

static void report_interval(const struct reporter *rp, int k, double last, double now,
			    uint64_t *before)
{
	uint64_t per[MAX_STREAMS], sum = 0, sum_before = 0;
	double iv = rp->c->interval;
	int i;

	stream_counts(rp, per);
	for (i = 0; i < rp->streams; i++) {
		if (rp->streams > 1)
			print_interval(rp, i + 1, k * iv, (k + 1) * iv, now - last, per[i] - before[i]);
		sum += per[i];
		sum_before += before[i];
		before[i] = per[i];
	}
	print_interval(rp, 0, k * iv, (k + 1) * iv, now - last, sum - sum_before);
	fflush(stdout);
}

static void *report_loop(void *arg)
{
	struct reporter *rp = arg;
	double last = rp->t0;
	uint64_t before[MAX_STREAMS] = { 0 };
	int k = 0;

	while (running(rp->end)) {
		/* on the interval's grid from the figure's start: labels stay exact */
		double next = rp->t0 + (k + 1) * rp->c->interval, now = now_s();

		if (next > rp->end)
			break;   /* the figure itself covers the last stretch */
		if (now < next) {
			struct timespec ts = { 0, 0 };
			double w = next - now < 0.05 ? next - now : 0.05;

			ts.tv_nsec = (long)(w * 1e9);
			nanosleep(&ts, NULL);
			continue;
		}
		report_interval(rp, k, last, now, before);
		last = now;
		k++;
	}
	return NULL;
}

/* -P: the slots of one RDMA connection, driven by a thread of their own. */
struct conn_run {
	struct slot *sl;
	int n;
};

static void *async_loop(void *arg)
{
	struct conn_run *cr = arg;
	int i;

	for (i = 0; i < cr->n; i++)
		call_async(&cr->sl[i]);
	while (rpcrdma_clnt_progress(cr->sl[0].cl, 100) > 0)
		;
	return NULL;
}

/* --prereg: WRITE's data and, for READ, one block holding every slot's result buffer
 * (returned, len bytes) added to each client as long-lived memory: chunks inside them
 * get memory windows instead of registrations (verbs). A provider that cannot says so
 * once, and the calls register as without. */
static char *prereg(const struct cfg *c, CLIENT **cls, int n, size_t len)
{
	static int warned;
	char *arena = len ? malloc(len) : NULL;
	struct rpcrdma_mem w = { wdata, PS_MAX }, a = { arena, len };
	int i, ok = 1;

	for (i = 0; i < n; i++) {
		ok &= clnt_control(cls[i], RPCRDMA_CLSET_MEM_ADD, (char *)&w);
		if (arena)
			ok &= clnt_control(cls[i], RPCRDMA_CLSET_MEM_ADD, (char *)&a);
	}
	if ((!ok || (len && !arena)) && !warned++)
		fprintf(text_out(c), "perf: --prereg: could not add long-lived memory (locked "
			"memory: ulimit -l); registering per call\n");
	return arena;
}

/* Run op/size/depth over RDMA (provider) or ONC RPC/TCP (provider NULL), on c->parallel
 * connections at once: over RDMA each carries depth asynchronous calls (one thread per
 * connection); libtirpc has none, so there each call in flight is a thread with a
 * connection of its own. */
static int measure(struct cfg *c, const char *provider, int op, uint32_t size, int depth,
		   struct result *r)
{
	int i, conns = c->parallel, nslots = depth * conns;
	int nclients = provider ? conns : nslots;
	struct slot *sl = calloc((size_t)nslots, sizeof(*sl));
	pthread_t *th = calloc((size_t)(nslots > conns ? nslots : conns), sizeof(*th));
	CLIENT **cls = calloc((size_t)nclients, sizeof(*cls));
	struct conn_run *runs = calloc((size_t)conns, sizeof(*runs));
	struct reporter rep;
	pthread_t rth;
	int reporting = 0;
	double t0, cpu0, end;
	char *arena = NULL;

	memset(r, 0, sizeof(*r));
	snprintf(r->transport, sizeof(r->transport), "%s/%s", provider ? "rdma" : "tirpc",
		 provider ? provider : "tcp");
	r->op = op;
	r->size = size;
	r->depth = depth;
	r->conns = op == OP_SETUP ? 1 : conns;
	if (op == OP_SETUP || !sl || !th || !cls || !runs) {
		free(sl);
		free(th);
		free(cls);
		free(runs);
		return op == OP_SETUP ? measure_setup(c, provider, r) : -1;
	}
	for (i = 0; i < nclients; i++) {
		cls[i] = ps_client(provider, c->host, provider ? c->port : c->tcp_port);
		if (!cls[i]) {
			ps_explain_create_error("perf", provider, c->host,
						provider ? c->port : c->tcp_port, c->json);
			while (i--)
				clnt_destroy(cls[i]);
			free(sl);
			free(th);
			free(cls);
			free(runs);
			return -1;
		}
	}
	if (provider && c->prereg)
		arena = prereg(c, cls, nclients, op == OP_READ ? (size_t)nslots * size : 0);
	/* warm up each connection (and a server that was idle) before timing */
	for (i = 0; i < nclients; i++) {
		struct slot w = { .c = c, .cl = cls[i], .op = OP_NULL, .end = now_s() + 0.05 };

		while (running(w.end))
			call_sync(&w);
	}
	t0 = now_s();
	end = t0 + c->secs;
	cpu0 = cpu_now(c->child);
	for (i = 0; i < nslots; i++) {
		sl[i].c = c;
		sl[i].cl = cls[provider ? i / depth : i];
		sl[i].op = op;
		sl[i].size = size;
		sl[i].end = end;
		sl[i].cap = 4000000 / (uint64_t)nslots + 16;
		sl[i].lat = malloc(sizeof(double) * sl[i].cap);
		if (provider && op == OP_READ)
			sl[i].buf = arena ? arena + (size_t)i * size : malloc(size ? size : 1);
	}
	if (c->interval > 0) {
		rep = (struct reporter){ c, r, sl, nslots, conns, t0, end };
		reporting = !pthread_create(&rth, NULL, report_loop, &rep);
	}
	if (!provider || depth == 1) {
		/* libtirpc has no asynchronous calls: one thread and one connection each */
		for (i = 1; i < nslots; i++)
			pthread_create(&th[i], NULL, sync_loop, &sl[i]);
		sync_loop(&sl[0]);
		for (i = 1; i < nslots; i++)
			pthread_join(th[i], NULL);
	} else {
		for (i = 0; i < conns; i++) {
			runs[i].sl = &sl[i * depth];
			runs[i].n = depth;
		}
		for (i = 1; i < conns; i++)
			pthread_create(&th[i], NULL, async_loop, &runs[i]);
		async_loop(&runs[0]);
		for (i = 1; i < conns; i++)
			pthread_join(th[i], NULL);
	}
	if (reporting)
		pthread_join(rth, NULL);
	summarise(r, sl, nslots, now_s() - t0, cpu_now(c->child) - cpu0);
	for (i = 0; i < nclients; i++)
		clnt_destroy(cls[i]);
	for (i = 0; i < nslots; i++) {
		free(sl[i].lat);
		if (!arena)
			free(sl[i].buf);
	}
	free(sl);
	free(th);
	free(cls);
	free(runs);
	free(arena);
	return 0;
}

/* ---- --idle: what connections cost a server while nothing happens ---- */

#define IDLE_SETTLE_S 1.0
#define IDLE_WATCH_S 2.0

/* VmRSS of a process, in KiB (-1 if unknown). */
static long rss_kib(pid_t pid)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Context switches of all of a process's threads, voluntary and not: each is a wake-up. */
static long long switches(pid_t pid)
{
	char path[320], line[256];
	long long sum = 0, v;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.32s/status", (int)pid, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %lld", &v) == 1 ||
			    sscanf(line, "nonvoluntary_ctxt_switches: %lld", &v) == 1)
				sum += v;
		fclose(f);
	}
	closedir(d);
	return sum;
}

/* Open descriptors of a process (-1 if unknown). */
static long fd_count(pid_t pid)
{
	char path[64];
	struct dirent *de;
	long n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && !stop_sig)
		;
}

struct idle_result {
	char transport[32];
	int asked, opened;
	long base_kib, rss_kib, after_kib;   /* before the clients, with them, after them */
	long base_fds, fds, after_fds;
	double wakeups_s;
};

/* N clients of perf's own server, each after one NULL call, held while nothing happens:
 * the server's resident memory and descriptors then, against before they came and after
 * they closed, and its threads' wake-ups per second over IDLE_WATCH_S. */
static int measure_idle(struct cfg *c, const char *provider, struct idle_result *r)
{
	CLIENT **cls = calloc((size_t)c->idle, sizeof(*cls));
	long long sw0;
	int i;

	memset(r, 0, sizeof(*r));
	snprintf(r->transport, sizeof(r->transport), "%s/%s", provider ? "rdma" : "tirpc",
		 provider ? provider : "tcp");
	r->asked = c->idle;
	if (!cls)
		return -1;
	r->base_kib = rss_kib(c->child);
	r->base_fds = fd_count(c->child);
	for (i = 0; i < c->idle && !stop_sig; i++) {
		struct slot w = { .c = c, .op = OP_NULL };

		cls[i] = ps_client(provider, c->host, provider ? c->port : c->tcp_port);
		if (!cls[i]) {
			fprintf(stderr, "rpcrdma perf: --idle: client %d of %d: %s\n", i + 1, c->idle,
				clnt_spcreateerror(r->transport));
			break;
		}
		w.cl = cls[i];
		if (call_sync(&w) != RPC_SUCCESS) {
			fprintf(stderr, "rpcrdma perf: --idle: client %d of %d: %s\n", i + 1, c->idle,
				clnt_sperror(w.cl, r->transport));
			break;
		}
		r->opened++;
	}
	sleep_s(IDLE_SETTLE_S);
	r->rss_kib = rss_kib(c->child);
	r->fds = fd_count(c->child);
	sw0 = switches(c->child);
	sleep_s(IDLE_WATCH_S);
	r->wakeups_s = (double)(switches(c->child) - sw0) / IDLE_WATCH_S;
	for (i = 0; i < c->idle; i++)
		if (cls[i])
			clnt_destroy(cls[i]);
	free(cls);
	sleep_s(IDLE_SETTLE_S);   /* the server lets go of them before anything else */
	r->after_kib = rss_kib(c->child);
	r->after_fds = fd_count(c->child);
	return 0;
}

static void print_idle(const struct cfg *c, const struct idle_result *r)
{
	long per = r->opened ? (r->rss_kib - r->base_kib) / r->opened : 0;
	double fds = r->opened ? (double)(r->fds - r->base_fds) / r->opened : 0;

	if (c->json)
		printf("{\"idle\":{\"transport\":\"%s\",\"connections\":%d,\"opened\":%d,"
		       "\"server_rss_kib\":%ld,\"base_rss_kib\":%ld,\"kib_per_connection\":%ld,"
		       "\"fds_per_connection\":%.1f,\"rss_after_kib\":%ld,\"fds_after\":%ld,"
		       "\"base_fds\":%ld,\"wakeups_per_s\":%.1f}}\n", r->transport, r->asked,
		       r->opened, r->rss_kib, r->base_kib, per, fds, r->after_kib, r->after_fds,
		       r->base_fds, r->wakeups_s);
	else
		fprintf(text_out(c), "%-10s idle  %d connections%s: server RSS %ld KiB (%ld before, %+ld KiB "
		       "each, %ld after they closed), %+.1f descriptors each (%ld after, %ld "
		       "before), %.1f wakeups/s\n", r->transport, r->opened,
		       r->opened < r->asked ? " (fewer than asked: a client failed)" : "", r->rss_kib,
		       r->base_kib, per, r->after_kib, fds, r->after_fds, r->base_fds, r->wakeups_s);
	fflush(stdout);
}

/* ---- output ---- */

/* --json: the run's metadata first, as one object, so a file of results says what made it. */
static void print_run(const struct cfg *c)
{
	/* a run over verbs has not loaded libfabric, and need not for this */
	const char *fab = c->provider && !strncmp(c->provider, "verbs", 5) ? NULL
			  : rpcrdma_libfabric_version();
	char host[256] = "";
	int i;

	gethostname(host, sizeof(host) - 1);
	printf("{\"run\":{\"tool\":\"rpcrdma perf\",\"version\":\"%s\",\"libfabric\":%s%s%s,"
	       "\"host\":\"%s\",\"server\":\"%s\",\"port\":%u,\"provider\":\"%s\",\"seconds\":%g,"
	       "\"ops\":[", rpcrdma_version(), fab ? "\"" : "", fab ? fab : "null", fab ? "\"" : "", host,
	       c->child > 0 ? "own" : c->host, c->port, c->provider, c->secs);
	for (i = 0; i < OP_COUNT; i++)
		if (c->ops & (1u << i))
			printf("%s\"%s\"", (c->ops & ((1u << i) - 1)) ? "," : "", op_names[i]);
	printf("],\"sizes\":[");
	for (i = 0; i < c->nsizes; i++)
		printf("%s%u", i ? "," : "", c->sizes[i]);
	printf("],\"depths\":[");
	for (i = 0; i < c->ndepths; i++)
		printf("%s%d", i ? "," : "", c->depths[i]);
	printf("],\"compare\":%s,\"check\":%s,\"parallel\":%d,\"busy\":%d,\"idle\":%d}}\n",
	       c->compare ? "true" : "false", c->check ? "true" : "false", c->parallel, c->busy,
	       c->idle);
}

static void print_header(const struct cfg *c)
{
	if (c->json)
		print_run(c);
	if (!c->json && c->busy)
		fprintf(text_out(c), "busy: %d thread%s spinning in process %d while the figures are taken\n",
		       c->busy, c->busy == 1 ? "" : "s", (int)c->busy_pid);
}


static void print_csv(const struct cfg *c, const struct result *r)
{
	static int head;

	if (!head++)
		printf("transport,op,bytes,depth,connections,calls_per_s,MBps,p50_us,p99_us,"
		       "cpu_s_per_GB,verified,failed,first_us,interrupted\n");
	printf("%s,%s,%u,%d,%d,%.0f,%.1f,%.1f,%.1f,%.2f,", r->transport, op_names[r->op], r->size,
	       r->depth, r->conns, r->calls_s, r->mbps, r->p50, r->p99, r->cpu_gb);
	if (c->check)
		printf("%llu,%llu,", (unsigned long long)r->verified, (unsigned long long)r->failed);
	else
		printf(",,");
	if (r->op == OP_SETUP)
		printf("%.1f", r->first_us);
	printf(",%d\n", stop_sig != 0);
}

static void print_result(const struct cfg *c, const struct result *r)
{
	if (c->csv) {
		print_csv(c, r);
		fflush(stdout);
		return;
	}
	if (!c->json)
		print_table_head();
	if (c->json) {
		printf("{\"transport\":\"%s\",\"op\":\"%s\",\"size\":%u,\"depth\":%d,\"calls_per_s\":%.0f,"
		       "\"MBps\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,\"cpu_s_per_GB\":%.2f",
		       r->transport, op_names[r->op], r->size, r->depth, r->calls_s, r->mbps, r->p50,
		       r->p99, r->cpu_gb);
		if (c->check)
			printf(",\"verified\":%llu,\"failed\":%llu", (unsigned long long)r->verified,
			       (unsigned long long)r->failed);
		if (r->op == OP_SETUP)
			printf(",\"first_us\":%.1f", r->first_us);
		if (r->conns > 1)
			printf(",\"connections\":%d", r->conns);
		printf("%s}\n", stop_sig ? ",\"interrupted\":true" : "");
	} else {
		printf("%-10s %-5s %9u %5d %11.0f %9.1f %9.1f %9.1f %9.2f", r->transport,
		       op_names[r->op], r->size, r->depth, r->calls_s, r->mbps, r->p50, r->p99,
		       r->cpu_gb);
		if (r->op == OP_SETUP)
			printf("  (first %.0f us)", r->first_us);
		if (r->conns > 1)
			printf("  (%d connections)", r->conns);
		printf("%s%s\n", r->failed ? "  FAILED CALLS" : "", stop_sig ? "  (interrupted)" : "");
	}
	fflush(stdout);
}

static void print_ratio(const struct cfg *c, const struct result *a, const struct result *b,
			const char *what, double x, double y)
{
	if (y <= 0)
		return;
	if (c->json)
		printf("{\"ratio\":\"%s/%s\",\"op\":\"%s\",\"size\":%u,\"depth\":%d,\"what\":\"%s\","
		       "\"value\":%.2f}\n", a->transport, b->transport, op_names[a->op], a->size,
		       a->depth, what, x / y);
	else
		fprintf(text_out(c), "  %s vs %s: %.2fx %s\n", a->transport, b->transport, x / y, what);
}

/* ---- the raw ceiling: bench_prov's figures ---- */

struct raw {
	double pingpong_avg_us, read_mbps_1m, write_mbps_1m, write_mbps_4k, pattern_mbps_4k;
	int have;
};

static double json_num(const char *line, const char *key)
{
	const char *p = strstr(line, key);

	return p ? atof(p + strlen(key)) : 0;
}

/* A string member of one of bench_prov's objects, into out ("" if none). */
static void json_str(const char *line, const char *key, char *out, size_t cap)
{
	const char *p = strstr(line, key), *e;

	out[0] = 0;
	if (!p)
		return;
	p += strlen(key);
	e = strchr(p, '"');
	if (e && (size_t)(e - p) < cap) {
		memcpy(out, p, (size_t)(e - p));
		out[e - p] = 0;
	}
}

/* One of bench_prov's JSON objects as a line of text beside the table. */
static void print_raw_text(FILE *f, const char *line)
{
	char tr[32], op[32];

	json_str(line, "\"transport\":\"", tr, sizeof(tr));
	json_str(line, "\"op\":\"", op, sizeof(op));
	if (!tr[0] || !op[0]) {
		fprintf(f, "  raw: %s", line);   /* not a figure: as it came */
		return;
	}
	fprintf(f, "  %-10s %-15s %9.0f B %3.0f in flight:", tr, op, json_num(line, "\"size\":"),
		json_num(line, "\"depth\":"));
	if (strstr(line, "\"MBps\":"))
		fprintf(f, " %.0f ops/s, %.1f MB/s\n", json_num(line, "\"ops_per_s\":"),
			json_num(line, "\"MBps\":"));
	else if (strstr(line, "\"p99_us\":"))
		fprintf(f, " avg %.1f us, p50 %.1f us, p99 %.1f us\n", json_num(line, "\"avg_us\":"),
			json_num(line, "\"p50_us\":"), json_num(line, "\"p99_us\":"));
	else
		fprintf(f, " avg %.2f us\n", json_num(line, "\"avg_us\":"));
}

#ifndef RPCRDMA_LIBEXEC_REL
#define RPCRDMA_LIBEXEC_REL "../libexec/rpcrdma"
#endif

/* bench_prov: next to rpcrdma in a build tree, in PREFIX/libexec/rpcrdma once installed. */
static int find_bench_prov(char *path, size_t len)
{
	char self[PATH_MAX], *dir;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return -1;
	self[n] = 0;
	dir = dirname(self);
	snprintf(path, len, "%s/bench_prov", dir);
	if (!access(path, X_OK))
		return 0;
	snprintf(path, len, "%s/" RPCRDMA_LIBEXEC_REL "/bench_prov", dir);
	return access(path, X_OK);
}

static void raw_ceiling(const struct cfg *c, const char *provider, struct raw *out)
{
	char prog[PATH_MAX + 64], cmd[PATH_MAX + 192], line[512];
	FILE *f;

	memset(out, 0, sizeof(*out));
	if (find_bench_prov(prog, sizeof(prog))) {
		if (!c->json)
			fprintf(text_out(c), "  raw: bench_prov is neither next to rpcrdma nor in "
				RPCRDMA_LIBEXEC_REL " from it: no raw ceiling\n");
		return;
	}
	snprintf(cmd, sizeof(cmd), "'%s' --provider %s --seconds %.2f --json 2>/dev/null", prog,
		 provider, c->secs);
	f = popen(cmd, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		int big = strstr(line, "\"size\":1048576") != NULL;

		if (!c->json)
			print_raw_text(text_out(c), line);
		else
			fputs(line, stdout);
		if (strstr(line, "\"op\":\"rpc_pattern\","))   /* not rpc_pattern_reg */
			out->pattern_mbps_4k = json_num(line, "\"MBps\":");
		else if (strstr(line, "send_pingpong"))
			out->pingpong_avg_us = json_num(line, "\"avg_us\":");
		else if (strstr(line, "rdma_read") && big)
			out->read_mbps_1m = json_num(line, "\"MBps\":");
		else if (strstr(line, "rdma_write") && big)
			out->write_mbps_1m = json_num(line, "\"MBps\":");
		else if (strstr(line, "rdma_write"))
			out->write_mbps_4k = json_num(line, "\"MBps\":");
		out->have = 1;
	}
	if (pclose(f) != 0 && !out->have && !c->json)
		fprintf(text_out(c), "  raw: %s failed: no raw ceiling\n", prog);
}

/* READ results travel by RDMA Write, WRITE arguments by RDMA Read. */
/* The raw provider's figure comparable with r (0 if none), and what it is. */
static double raw_for(const struct result *r, const struct raw *raw, const char **what)
{
	if (!raw->have)
		return 0;
	if (r->op == OP_NULL && r->depth == 1 && raw->pingpong_avg_us > 0) {
		*what = "calls/s of raw Send ping-pong";
		return 1e6 / raw->pingpong_avg_us;
	}
	if (r->op == OP_READ && r->size == 1u << 20) {
		*what = "MB/s of raw RDMA Write 1 MiB";
		return raw->write_mbps_1m;
	}
	if (r->op == OP_WRITE && r->size == 1u << 20) {
		*what = "MB/s of raw RDMA Read 1 MiB";
		return raw->read_mbps_1m;
	}
	if (r->op == OP_READ && r->size == 4096 && r->depth == 32) {
		*what = "MB/s of raw send/RDMA-write/send 4 KiB, 32 in flight";
		return raw->pattern_mbps_4k;
	}
	if (r->op == OP_READ && r->size == 4096) {
		*what = "MB/s of raw RDMA Write 4 KiB";
		return raw->write_mbps_4k;
	}
	return 0;
}

/* The RPC cannot beat the bare provider doing less: when it seems to, the ceiling's
 * own run was slowed (a busy host), and a ratio above 1 would mean nothing. */
static void print_disturbed(const struct cfg *c, const struct result *a, const struct result *b,
			    const char *what, double x, double y)
{
	if (c->json)
		printf("{\"ratio\":\"%s/%s\",\"op\":\"%s\",\"size\":%u,\"depth\":%d,\"what\":\"%s\","
		       "\"value\":null,\"ceiling_disturbed\":true,\"rpc\":%.1f,\"raw\":%.1f}\n",
		       a->transport, b->transport, op_names[a->op], a->size, a->depth, what, x, y);
	else
		fprintf(text_out(c), "  %s vs %s: no ratio: the RPC measured %.1f, above the raw "
			"ceiling's %.1f (%s): the ceiling's measurement was disturbed (a busy "
			"host?); run perf --compare again\n", a->transport, b->transport, x, y, what);
}

static void compare_raw(const struct cfg *c, const struct result *r, const struct raw *raw)
{
	const char *what = "";
	double v = raw_for(r, raw, &what), x;
	struct result rr;

	if (v <= 0)
		return;
	memset(&rr, 0, sizeof(rr));
	snprintf(rr.transport, sizeof(rr.transport), "raw/%s", c->provider);
	x = r->op == OP_NULL ? r->calls_s : r->mbps;
	if (x > v) {
		print_disturbed(c, r, &rr, what, x, v);
		return;
	}
	print_ratio(c, r, &rr, what, x, v);
}

/* One row of the --svg chart: this figure over RDMA, over libtirpc and raw. */
static void svg_add(const struct cfg *c, const struct result *r, const struct result *t,
		    const struct raw *raw)
{
	struct perf_svg_row *row;
	const char *what = "";

	if (!c->svg || nsvg == MAX_SVG_ROWS)
		return;
	row = &svg_rows[nsvg++];
	memset(row, 0, sizeof(*row));
	if (r->op == OP_SETUP)
		snprintf(row->label, sizeof(row->label), "new client + first NULL reply");
	else if (r->op == OP_NULL)
		snprintf(row->label, sizeof(row->label), "NULL, %d in flight", r->depth);
	else
		snprintf(row->label, sizeof(row->label), "%s %u B, %d in flight", op_names[r->op],
			 r->size, r->depth);
	row->unit = r->op == OP_SETUP ? "clients/s" : r->op == OP_NULL ? "calls/s" : "MB/s";
	row->rdma = r->op <= OP_NULL ? r->calls_s : r->mbps;
	row->tirpc = t ? (t->op <= OP_NULL ? t->calls_s : t->mbps) : 0;
	row->raw = raw_for(r, raw, &what);
}

/* ---- options and the run ---- */

/* A comma-separated list of sizes ("0,4k,1m", each at most max) or, with max 0, of counts
 * 1..64: how many, or -1 after a message naming the bad item. */
static int parse_list(const char *opt, const char *s, uint32_t *out, int cap, uint64_t max)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int n = 0;
	uint64_t v;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == cap) {
			fprintf(stderr, "rpcrdma perf: %s: at most %d values\n", opt, cap);
			n = -1;
			break;
		}
		if (max ? arg_size("perf", opt, tok, max, &v)
			: arg_uint("perf", opt, tok, 1, 64, &v)) {
			n = -1;
			break;
		}
		out[n++] = (uint32_t)v;
	}
	free(copy);
	if (n == 0)
		fprintf(stderr, "rpcrdma perf: %s: no value given\n", opt);
	return n > 0 ? n : -1;
}

/* "null,read": a mask of operations, 0 after a message naming an unknown one. */
static unsigned parse_ops(const char *s)
{
	char *copy = strdup(s), *tok, *save = NULL;
	unsigned m = 0;
	int i;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < OP_COUNT && strcmp(tok, op_names[i]); i++)
			;
		if (i == OP_COUNT) {
			fprintf(stderr, "rpcrdma perf: invalid --ops '%s': operations are setup, null, "
				"read, write and echo\n", tok);
			m = 0;
			break;
		}
		m |= 1u << i;
	}
	free(copy);
	return m;
}

static void usage(FILE *f)
{
	fputs("usage: rpcrdma perf [HOST[:PORT]] [--provider NAME] [--tcp-port PORT] [--seconds S]\n"
	      "                    [--ops null,read,write,echo] [--sizes 0,4k,64k,1m] [--depths 1,32]\n"
	      "                    [--compare] [--check] [--json | --json-lines | --csv] [--svg FILE]\n"
	      "                    [-P N] [-i SECONDS] [--busy N] [--idle N] [--prereg]\n"
	      "                    [--pcap FILE [--pcap-snaplen N]]\n"
	      "Calls/s, MB/s, p50/p99 latency and CPU seconds per GB (client + the server it\n"
	      "started) for each operation x size x calls in flight, each figure measured for\n"
	      "--seconds S (default 1; the run takes about S x the figures, twice that with\n"
	      "--compare). Without HOST it starts\n"
	      "`rpcrdma serve` in a child on loopback. --compare also runs each over ONC RPC/TCP\n"
	      "(libtirpc; with HOST, give the server's --tcp port as --tcp-port) and the\n"
	      "raw provider ceiling (bench_prov), and prints ratios. --check verifies every\n"
	      "payload. echo (not in the default set) sends its data inline both ways: long\n"
	      "calls and replies.\n"
	      "--svg FILE draws the figures (with --compare: against ONC RPC/TCP and raw) as\n"
	      "a chart a browser opens. setup (in the default set) times a new client, its\n"
	      "connection and its first NULL reply, one client after another. --busy N keeps\n"
	      "N threads spinning in another process meanwhile (a shared, busy host).\n"
	      "--idle N (no HOST): after the figures, N clients that made one call each are\n"
	      "held idle while the server's RSS, descriptors and wake-ups per second are\n"
	      "measured, and its RSS and descriptors after they close (with --compare, over\n"
	      "ONC RPC/TCP too).\n"
	      "--json: one document at the end, {\"run\":{...},\"results\":[...],\"ratios\":[...],\n"
	      "\"idle\":[...],\"summary\":{...}}; --json-lines: the same objects one per line, as they come.\n"
	      "-i SECONDS (--interval): while each figure is measured, the calls/s and MB/s of\n"
	      "every interval, as iperf3 reports (JSON: {\"interval\":...} objects; with -P,\n"
	      "a row per connection and their [SUM]).\n"
	      "-P N (--parallel): N connections at once, each with the depth's calls in flight\n"
	      "(ONC RPC/TCP: depth x N connections of one call each).\n"
	      "--prereg: the client's buffers (WRITE's data, READ's result buffers) and the\n"
	      "server's READ data (when perf starts it; else `serve --prereg`) are long-lived\n"
	      "memory: over verbs each chunk is a memory window bound for its call, with no\n"
	      "registration per call (docs/RPC.md, \"Long-lived memory\").\n"
	      "--csv: a header and a row per figure on stdout (ratios, raw ceiling, idle\n"
	      "figures and the summary as text on stderr).\n"
	      PS_PCAP_USAGE
	      "                       (the client's side; a server perf starts is not captured)\n",
	      f);
}

static int parse(int argc, char **argv, struct cfg *c)
{
	static const struct option lo[] = {
		{ "provider", required_argument, 0, 'p' }, { "tcp-port", required_argument, 0, 'T' },
		{ "seconds", required_argument, 0, 's' }, { "ops", required_argument, 0, 'o' },
		{ "sizes", required_argument, 0, 'z' }, { "depths", required_argument, 0, 'd' },
		{ "compare", no_argument, 0, 'C' }, { "check", no_argument, 0, 'k' },
		{ "json", no_argument, 0, 'j' }, { "svg", required_argument, 0, 'G' },
		{ "csv", no_argument, 0, 'V' }, { "parallel", required_argument, 0, 'P' },
		{ "interval", required_argument, 0, 'i' },
		{ "busy", required_argument, 0, 'B' }, { "idle", required_argument, 0, 'I' },
		{ "prereg", no_argument, 0, 'R' }, PS_PCAP_OPTIONS, { "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 }
	};
	uint32_t d[8];
	uint64_t v;
	int ch, i;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "p:T:s:o:z:d:CkjVG:B:I:P:i:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'G': c->svg = optarg; break;
		case 'B':
			if (arg_uint("perf", "--busy", optarg, 0, 1024, &v))
				return -1;
			c->busy = (int)v;
			break;
		case 'I':
			if (arg_uint("perf", "--idle", optarg, 0, 100000, &v))
				return -1;
			c->idle = (int)v;
			break;
		case 'p': c->provider = optarg; break;
		case 'T':
			if (arg_uint("perf", "--tcp-port", optarg, 1, 65535, &v))
				return -1;
			c->tcp_port = (uint16_t)v;
			break;
		case 's':
			if (arg_double("perf", "--seconds", optarg, 0.001, 86400, &c->secs))
				return -1;
			break;
		case 'o':
			if (!(c->ops = parse_ops(optarg)))
				return -1;
			break;
		case 'z':
			if ((c->nsizes = parse_list("--sizes", optarg, c->sizes, 16, PS_MAX)) < 0)
				return -1;
			break;
		case 'd':
			if ((c->ndepths = parse_list("--depths", optarg, d, 8, 0)) < 0)
				return -1;
			for (i = 0; i < c->ndepths; i++)
				c->depths[i] = (int)d[i];
			break;
		case 'C': c->compare = 1; break;
		case 'k': c->check = 1; break;
		case 'R': c->prereg = ps_prereg = 1; break;
		case 'j': c->json = 1; break;
		case 'V': c->csv = 1; break;
		case 'i':
			if (arg_double("perf", "-i", optarg, 0.1, 3600, &c->interval))
				return -1;
			break;
		case 'P':
			if (arg_uint("perf", "-P", optarg, 1, 64, &v))
				return -1;
			c->parallel = (int)v;
			break;
		case PS_OPT_PCAP: c->pcap = optarg; break;
		case PS_OPT_SNAPLEN:
			if (arg_uint("perf", "--pcap-snaplen", optarg, 0, UINT32_MAX, &v))
				return -1;
			c->snaplen = (uint32_t)v;
			break;
		case 'h': usage(stdout); exit(EXIT_OK);
		default: return -1;
		}
	}
	if (optind < argc - 1) {
		fprintf(stderr, "rpcrdma perf: one host only ('%s')\n", argv[optind + 1]);
		return -1;
	}
	if (c->csv && c->json) {
		fprintf(stderr, "rpcrdma perf: --csv or --json, not both\n");
		return -1;
	}
	if (c->idle && optind == argc - 1) {
		fprintf(stderr, "rpcrdma perf: --idle measures the server perf starts itself: give "
			"no HOST\n");
		return -1;
	}
	if (c->compare && optind == argc - 1 && !c->tcp_port) {
		/* else the libtirpc half of the comparison would quietly not run */
		fprintf(stderr, "rpcrdma perf: --compare with HOST needs the server's ONC RPC/TCP "
			"port (serve --tcp PORT): give --tcp-port PORT\n");
		return -1;
	}
	if (optind == argc - 1)
		return ps_parse_addr("perf", argv[optind], c->host, sizeof(c->host), &c->port,
				     PS_DEFAULT_PORT) < 0 ? -1 : 0;
	return 0;
}

/* SIGTERM, and SIGKILL if that has not ended it within STOP_MS: perf never hangs on it. */
#define STOP_MS 2000

static void stop_server(struct cfg *c)
{
	int i;

	if (c->child <= 0)
		return;
	kill(c->child, SIGTERM);
	for (i = 0; i < STOP_MS && waitpid(c->child, NULL, WNOHANG) == 0; i++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	if (i == STOP_MS) {
		kill(c->child, SIGKILL);
		waitpid(c->child, NULL, 0);
	}
	c->child = 0;
}

/* No server given: `serve` in a child on loopback (forked before anything opens libfabric). */
static int start_server(struct cfg *c)
{
	int fds[2];
	uint16_t ports[2];

	if (pipe(fds))
		return -1;
	fflush(stdout);
	c->child = fork();
	if (c->child == 0) {
		uint16_t r = 0, t = 0;

		/* a terminal's Ctrl-C is perf's to handle: it stops the server with SIGTERM
		 * once it has printed what it measured (SIGTERM's default action is the
		 * library's doing, prov/fabric/prov_fabric.c: libinfinipath's handler, which Debian's
		 * libfabric loads, printed from the signal and once hung inside malloc) */
		signal(SIGINT, SIG_IGN);
		close(fds[0]);
		/* one process per capture file: the environment's is the client's */
		unsetenv("RPCRDMA_PCAP");
		if (!ps_serve(c->provider, "127.0.0.1", 0, 0, 1, &r, &t, NULL))
			_exit(1);
		ports[0] = r;
		ports[1] = t;
		if (write(fds[1], ports, sizeof(ports)) != sizeof(ports))
			_exit(1);
		close(fds[1]);
		svc_run();
		_exit(0);
	}
	close(fds[1]);
	if (c->child < 0 || read(fds[0], ports, sizeof(ports)) != sizeof(ports)) {
		close(fds[0]);
		return -1;
	}
	close(fds[0]);
	strcpy(c->host, "127.0.0.1");
	c->port = ports[0];
	c->tcp_port = ports[1];
	return 0;
}

static void progress(const struct cfg *c, int k, int total, double left)
{
	if (!isatty(2) || total * c->secs < 3)
		return;
	fprintf(stderr, "\r[%d/%d] about %.0f s left   ", k, total, left);
	if (k == total)
		fprintf(stderr, "\r%40s\r", "");
}

int cmd_perf(int argc, char **argv)
{
	struct cfg c = { .provider = "tcp", .secs = 1.0, .ops = OPS_DEFAULT, .sizes = { 0, 4096, 65536, 1u << 20 },
			 .nsizes = 4, .depths = { 1, 32 }, .ndepths = 2, .parallel = 1 };
	struct result r, t;
	struct raw raw;
	int o, s, d, k = 0, total = 0, failed = 0, figures = 0, rc = EXIT_OK;
	uint64_t verified = 0, bad_payloads = 0;

	if (parse(argc, argv, &c)) {
		cli_try_help("perf");
		return EXIT_USAGE;
	}
	/* the document's lists, as CLI.md shows them, are there in every run */
	json_doc_keep("results");
	json_doc_keep("ratios");
	json_doc_keep("idle");
	if (c.interval > 0)
		json_doc_keep("intervals");
	if (c.idle)
		ps_raise_fd_limit();   /* before the server is forked: it inherits it */
	if (!c.host[0] && start_server(&c)) {
		fprintf(stderr, "rpcrdma perf: cannot start a server over %s (try rpcrdma serve "
			"--provider %s to see why)\n", c.provider, c.provider);
		if (c.json)
			cli_json_error("perf", "cannot start a server over the provider");
		return EXIT_FAIL;
	}
	if (c.busy && (c.busy_pid = start_busy(c.busy)) < 0) {
		fprintf(stderr, "rpcrdma perf: --busy: cannot start a process: %s\n", strerror(errno));
		rc = EXIT_FAIL;
		goto out_server;
	}
	cli_catch(on_stop, 0, 0);
	if (c.pcap && ps_pcap_start(c.pcap, c.snaplen)) {
		rc = EXIT_FAIL;
		goto out_busy;
	}
	wdata = malloc(PS_MAX);
	for (s = 0; s < c.nsizes; s++)
		if (c.sizes[s] > wdata_sum_len && c.sizes[s] <= PS_MAX)
			wdata_sum_len = c.sizes[s];
	for (s = 0; s < (int)wdata_sum_len; s++)
		wdata[s] = (char)ps_byte((uint32_t)s);
	for (o = 0; o < OP_COUNT; o++)
		if (c.ops & (1u << o))
			total += (o <= OP_NULL ? 1 : c.nsizes) * (o == OP_SETUP ? 1 : c.ndepths);
	if (c.compare)
		raw_ceiling(&c, c.provider, &raw);
	else
		memset(&raw, 0, sizeof(raw));
	print_header(&c);
	for (o = 0; o < OP_COUNT; o++) {
		if (!(c.ops & (1u << o)))
			continue;
		/* setup and NULL have no size; setup is one client at a time */
		for (s = 0; s < (o <= OP_NULL ? 1 : c.nsizes); s++) {
			uint32_t size = o <= OP_NULL ? 0 : c.sizes[s];

			wdata_sum = ps_checksum(wdata, size);
			for (d = 0; d < (o == OP_SETUP ? 1 : c.ndepths); d++) {
				int depth = o == OP_SETUP ? 1 : c.depths[d];
				const char *unit = o == OP_SETUP ? "clients/s" : o == OP_NULL ? "calls/s"
											: "MB/s";

				progress(&c, k, total, (total - k) * c.secs * (c.compare ? 2 : 1));
				if (measure(&c, c.provider, o, size, depth, &r)) {
					failed++;   /* the summary says the run failed */
					rc = EXIT_FAIL;
					goto out;
				}
				print_result(&c, &r);
				figures++;
				failed += r.failed != 0;
				verified += r.verified;
				bad_payloads += r.failed;
				if (stop_sig)
					goto out;
				if (c.compare && c.tcp_port) {
					if (measure(&c, NULL, o, size, depth, &t)) {
						failed++;
						rc = EXIT_FAIL;
						goto out;
					}
					print_result(&c, &t);
					figures++;
					verified += t.verified;
					bad_payloads += t.failed;
					if (stop_sig)
						goto out;
					failed += t.failed != 0;
					print_ratio(&c, &r, &t, unit,
						    o <= OP_NULL ? r.calls_s : r.mbps,
						    o <= OP_NULL ? t.calls_s : t.mbps);
				}
				if (c.compare)
					compare_raw(&c, &r, &raw);
				svg_add(&c, &r, c.compare && c.tcp_port ? &t : NULL, &raw);
				k++;
			}
		}
	}
	progress(&c, total, total, 0);
	if (c.idle && !stop_sig) {
		struct idle_result ir;

		if (measure_idle(&c, c.provider, &ir) == 0)
			print_idle(&c, &ir);
		failed += ir.opened < ir.asked;
		if (c.compare && c.tcp_port && !stop_sig && measure_idle(&c, NULL, &ir) == 0) {
			print_idle(&c, &ir);
			failed += ir.opened < ir.asked;
		}
	}
	rc = failed ? EXIT_FAIL : EXIT_OK;
out:
	if (c.json)
		printf("{\"summary\":{\"figures\":%d,\"failed\":%d,\"interrupted\":%s}}\n", figures,
		       failed, stop_sig ? "true" : "false");
	else if (stop_sig)
		fprintf(text_out(&c), "interrupted by %s after %d figures\n",
			stop_sig == SIGINT ? "SIGINT" : "SIGTERM", figures);
	if (!c.json && c.check && figures)
		fprintf(text_out(&c), "--check: %llu results verified byte for byte, %llu calls "
			"failed or wrong\n", (unsigned long long)verified,
			(unsigned long long)bad_payloads);
	fflush(stdout);
	if (c.svg && perf_svg_write(c.svg, c.provider, svg_rows, nsvg)) {
		fprintf(stderr, "rpcrdma perf: cannot write %s\n", c.svg);
		rc = EXIT_FAIL;
	}
	ps_pcap_stop();
out_busy:
	stop_busy(&c);
out_server:
	stop_server(&c);
	free(wdata);
	return stop_sig ? 128 + stop_sig : rc;
}
