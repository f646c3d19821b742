/* SPDX-License-Identifier: BSD-2-Clause */
/* Raw provider benchmark: the ceiling the RPC layers are compared with later.
 * For each provider (default: tcp, shm) a server child is forked on loopback; the
 * client measures 64-byte Send ping-pong latency, RDMA Read / Write bandwidth at 4 KiB and
 * 1 MiB with several operations in flight, and the RPC pattern (Send call, RDMA Write
 * 4 KiB, Send reply) with 32 calls in flight: once into one region registered up front,
 * once registering each call's 4 KiB for remote write before the call and deregistering
 * it at the reply, as the engine does for a write chunk (RFC 5666 §2: a chunk is exposed
 * only while its RPC runs), and the cost of one such registration alone. Prints a
 * table, or one JSON object per figure with --json. Not a test: it never fails on speed.
 * --host ADDR: server and client on that address (a real RDMA device cannot use
 * loopback: soft-RoCE, RoCE and iWARP need the interface's address).
 *   bench_prov [--provider NAME]... [--host ADDR] [--seconds S] [--json] */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rpcrdma/prov.h"

#define REGION (1u << 20)
#define DEPTH 16
#define PING 64
#define NBUF 32

struct opts {
	double seconds;
	int json;
	const char *host;   /* NULL: loopback */
};

enum { MSG_INFO = 1, MSG_PING, MSG_BYE, MSG_CALL, MSG_REPLY };

/* The RPC pattern: a call names a client buffer; the server RDMA-Writes len bytes there,
 * then Sends the reply (as a READ over RPC-over-RDMA does). */
struct call_msg {
	uint32_t type;
	uint32_t handle;
	uint64_t offset;
	uint32_t len;
	uint32_t idx;
};

#define PATTERN_DEPTH 32
#define PATTERN_SIZE 4096
static int write_marker;

struct info {
	uint32_t type;
	uint32_t handle;
	uint64_t offset;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_prov: %s: %s\n", what, rpcrdma_strerror(rc));
	exit(1);
}

/* One completion, waiting if needed (the wait drives progress); quiet_s seconds with
 * none is an error. */
static struct rpcrdma_cqe next_cqe(struct rpcrdma_ep *ep, double quiet_s)
{
	double give_up = now_s() + quiet_s;
	struct rpcrdma_cqe c;
	int rc;

	while ((rc = rpcrdma_ep_poll(ep, &c, 1)) == 0)
		if (rpcrdma_ep_wait(ep, 1000) == -RPCRDMA_ERR_TIMEDOUT && now_s() > give_up)
			die("wait", -RPCRDMA_ERR_TIMEDOUT);
	if (rc < 0)
		die("poll", rc);
	return c;
}

static struct rpcrdma_cqe next(struct rpcrdma_ep *ep)
{
	return next_cqe(ep, 10);
}

struct msgbufs {
	uint8_t *mem;
	struct rpcrdma_mr *mr;
};

static void msgbufs_init(struct rpcrdma_prov *p, struct msgbufs *m)
{
	int rc;

	m->mem = aligned_alloc(4096, (NBUF + 1) * 4096);
	rc = rpcrdma_mr_reg(p, m->mem, (NBUF + 1) * 4096, RPCRDMA_ACC_LOCAL, &m->mr);
	if (rc)
		die("register", rc);
}

static struct rpcrdma_sge slot(struct msgbufs *m, int i, uint32_t len)
{
	struct rpcrdma_sge s = { m->mr, m->mem + (size_t)i * 4096, len };

	return s;
}

static void post_recvs(struct rpcrdma_ep *ep, struct msgbufs *m)
{
	int i, rc;

	for (i = 0; i < NBUF; i++) {
		struct rpcrdma_sge s = slot(m, i, 4096);

		rc = rpcrdma_post_recv(ep, &s, (void *)(uintptr_t)(i + 1));
		if (rc)
			die("post recv", rc);
	}
}

/* Send from the last slot and wait for that send's completion. */
static void send_now(struct rpcrdma_ep *ep, struct msgbufs *m, const void *data, uint32_t len,
		     struct rpcrdma_cqe *early, int *nearly)
{
	struct rpcrdma_sge s = slot(m, NBUF, len);
	struct rpcrdma_cqe c;
	int rc;

	memcpy(s.addr, data, len);
	rc = rpcrdma_post_send(ep, &s, m);
	if (rc)
		die("post send", rc);
	for (;;) {
		c = next(ep);
		if (c.ctx == m)
			break;
		early[(*nearly)++] = c;  /* a receive that arrived first */
	}
	if (c.status)
		die("send", c.status);
}

/* RDMA Write the data the call asks for, then Send the reply without waiting: the
 * provider orders the Write before the Send (caps.write_send_ordered). */
static void answer_call(struct rpcrdma_ep *ep, struct msgbufs *m, struct rpcrdma_mr *rmr,
			uint8_t *region, const void *msg)
{
	struct call_msg call, reply;
	struct rpcrdma_sge l = { rmr, region, 0 }, r;
	struct rpcrdma_segment seg;
	int rc;

	memcpy(&call, msg, sizeof(call));
	l.len = call.len;
	seg.handle = call.handle;
	seg.length = call.len;
	seg.offset = call.offset;
	rc = rpcrdma_post_write(ep, &l, 1, &seg, 1, &write_marker);
	if (rc)
		die("pattern write", rc);
	reply = call;
	reply.type = MSG_REPLY;
	r = slot(m, NBUF, sizeof(reply));
	memcpy(r.addr, &reply, sizeof(reply));   /* every reply is the same size; see idx */
	rc = rpcrdma_post_send(ep, &r, &write_marker);
	if (rc)
		die("pattern reply", rc);
}

static void server(const char *prov, const struct opts *o, int fd)
{
	struct rpcrdma_listener *l;
	struct rpcrdma_connreq *req;
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *ep;
	struct msgbufs m;
	struct rpcrdma_mr *rmr;
	uint8_t *region = aligned_alloc(4096, REGION);
	struct info in = { MSG_INFO, 0, 0 };
	struct rpcrdma_cqe early[4];
	uint16_t port;
	int rc, n = 0;

	rc = rpcrdma_prov_open(prov, &p, NULL, 0);
	if (!rc)
		rc = rpcrdma_listen(p, o->host, 0, &l);
	port = rc ? 0 : rpcrdma_listener_port(l);
	if (write(fd, &port, sizeof(port)) != sizeof(port) || rc)
		exit(1);
	close(fd);
	memset(region, 0x5a, REGION);
	rc = rpcrdma_listener_get(l, 30000, &req);
	if (!rc)
		rc = rpcrdma_accept(req, NULL, 0, 10000, &ep);
	if (rc)
		die("accept", rc);
	msgbufs_init(p, &m);
	post_recvs(ep, &m);
	rc = rpcrdma_mr_reg(p, region, REGION, RPCRDMA_ACC_REMOTE_READ | RPCRDMA_ACC_REMOTE_WRITE, &rmr);
	if (rc)
		die("register region", rc);
	in.handle = rmr->handle;
	in.offset = rmr->offset;
	send_now(ep, &m, &in, sizeof(in), early, &n);
	/* echo pings; keep polling (progress) while the client reads and writes: that gives
	 * this side no completion for as long as it lasts (4 x --seconds), and the client's
	 * end arrives as a disconnect */
	for (;;) {
		struct rpcrdma_cqe c = n ? early[--n] : next_cqe(ep, 4 * o->seconds + 30);
		struct rpcrdma_sge s;
		uint8_t msg[4096];
		uint32_t type;

		if (c.op == RPCRDMA_OP_DISCONNECT)
			break;
		if (c.op != RPCRDMA_OP_RECV || c.status)
			continue;   /* the pattern's Writes and Sends complete here too */
		/* the receive goes back before the answer leaves: the client's next message
		 * follows the answer, and one that found no receive would wait for the
		 * fabric's RNR retry (verbs) */
		s = slot(&m, (int)(uintptr_t)c.ctx - 1, 4096);
		memcpy(msg, s.addr, c.len < sizeof(msg) ? c.len : sizeof(msg));
		rpcrdma_post_recv(ep, &s, c.ctx);
		if (c.len < 4)
			continue;
		memcpy(&type, msg, 4);
		if (type == MSG_PING)
			send_now(ep, &m, msg, c.len, early, &n);
		else if (type == MSG_CALL)
			answer_call(ep, &m, rmr, region, msg);
		if (type == MSG_BYE)
			break;
	}
	rpcrdma_ep_close(ep);
	rpcrdma_mr_dereg(rmr);
	rpcrdma_mr_dereg(m.mr);
	rpcrdma_listener_close(l);
	rpcrdma_prov_close(p);
	free(m.mem);
	free(region);
	exit(0);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report_lat(const char *prov, double *lat, int n, const struct opts *o)
{
	double sum = 0;
	int i;

	qsort(lat, (size_t)n, sizeof(*lat), cmp_d);
	for (i = 0; i < n; i++)
		sum += lat[i];
	if (o->json)
		printf("{\"transport\":\"raw/%s\",\"op\":\"send_pingpong\",\"size\":%d,\"depth\":1,"
		       "\"round_trips\":%d,\"avg_us\":%.2f,\"p50_us\":%.2f,\"p99_us\":%.2f}\n",
		       prov, PING, n, sum / n * 1e6, lat[n / 2] * 1e6, lat[n * 99 / 100] * 1e6);
	else
		printf("%-5s %-14s %8d %5d %12.2f %10.2f %10.2f %10s\n", prov, "send ping-pong", PING, 1,
		       sum / n * 1e6, lat[n / 2] * 1e6, lat[n * 99 / 100] * 1e6, "-");
}

static void pingpong(struct rpcrdma_ep *ep, struct msgbufs *m, const char *prov, const struct opts *o)
{
	int max = 200000, n = 0, nearly = 0;
	double *lat = malloc(sizeof(double) * (size_t)max), end = now_s() + o->seconds;
	struct rpcrdma_cqe early[4];
	uint8_t msg[PING] = { 0 };

	memcpy(msg, &(uint32_t){ MSG_PING }, 4);
	while (n < max && now_s() < end) {
		double t0 = now_s();
		struct rpcrdma_cqe c;
		struct rpcrdma_sge s;

		send_now(ep, m, msg, PING, early, &nearly);
		c = nearly ? early[--nearly] : next(ep);
		if (c.op != RPCRDMA_OP_RECV || c.status)
			die("ping", c.status);
		lat[n++] = now_s() - t0;
		s = slot(m, (int)(uintptr_t)c.ctx - 1, 4096);
		rpcrdma_post_recv(ep, &s, c.ctx);
	}
	report_lat(prov, lat, n, o);
	free(lat);
}

/* Keep DEPTH operations of size bytes in flight for the time given. */

/* A full queue (-RPCRDMA_ERR_AGAIN, prov.h) is not an error: wait for progress and post
 * again, for 10 s at most. */
static int post_rma(struct rpcrdma_ep *ep, uint32_t op, struct rpcrdma_sge *l,
		    struct rpcrdma_segment *r, void *ctx)
{
	double give_up = now_s() + 10;
	int rc;

	for (;;) {
		rc = op == RPCRDMA_OP_READ ? rpcrdma_post_read(ep, l, 1, r, 1, ctx)
					   : rpcrdma_post_write(ep, l, 1, r, 1, ctx);
		if (rc != -RPCRDMA_ERR_AGAIN || now_s() > give_up)
			return rc;
		rpcrdma_ep_wait(ep, 1);
	}
}
static void bandwidth(struct rpcrdma_ep *ep, struct rpcrdma_prov *p, const struct info *in,
		      uint32_t op, uint32_t size, const char *prov, const struct opts *o)
{
	uint8_t *buf = aligned_alloc(4096, (size_t)size * DEPTH);
	struct rpcrdma_mr *mr;
	uint64_t done = 0, posted = 0;
	double t0, end, dt;
	int i, rc;

	memset(buf, 1, (size_t)size * DEPTH);
	rc = rpcrdma_mr_reg(p, buf, (size_t)size * DEPTH, RPCRDMA_ACC_READ_SINK, &mr);
	if (rc)
		die("register", rc);
	t0 = now_s();
	end = t0 + o->seconds;
	for (i = 0; i < DEPTH; i++) {
		struct rpcrdma_sge l = { mr, buf + (size_t)i * size, size };
		struct rpcrdma_segment r = { in->handle, size, in->offset + (REGION - size) / DEPTH * i / 4096 * 4096 };

		rc = post_rma(ep, op, &l, &r, (void *)(uintptr_t)i);
		if (rc)
			die("post rma", rc);
		posted++;
	}
	while (done < posted) {
		struct rpcrdma_cqe c = next(ep);
		int k = (int)(uintptr_t)c.ctx;

		if (c.status)
			die("rma", c.status);
		done++;
		if (now_s() < end) {
			struct rpcrdma_sge l = { mr, buf + (size_t)k * size, size };
			struct rpcrdma_segment r = { in->handle, size,
						     in->offset + (REGION - size) / DEPTH * k / 4096 * 4096 };

			rc = post_rma(ep, op, &l, &r, c.ctx);
			if (rc)
				die("post rma", rc);
			posted++;
		}
	}
	dt = now_s() - t0;
	if (o->json)
		printf("{\"transport\":\"raw/%s\",\"op\":\"%s\",\"size\":%u,\"depth\":%d,"
		       "\"ops_per_s\":%.0f,\"MBps\":%.1f}\n",
		       prov, op == RPCRDMA_OP_READ ? "rdma_read" : "rdma_write", size, DEPTH,
		       done / dt, done * (double)size / dt / 1e6);
	else
		printf("%-5s %-14s %8u %5d %12s %10s %10s %10.1f\n", prov,
		       op == RPCRDMA_OP_READ ? "RDMA Read" : "RDMA Write", size, DEPTH, "-", "-", "-",
		       done * (double)size / dt / 1e6);
	rpcrdma_mr_dereg(mr);
	free(buf);
}

/* The call for slot i: its 4 KiB target, registered for this call alone when per_call
 * (held in mrs[i] until the reply), else inside the region registered up front. */
static struct call_msg pattern_call(struct rpcrdma_prov *p, uint8_t *buf, struct rpcrdma_mr *all,
				    struct rpcrdma_mr **mrs, int per_call, uint32_t i)
{
	struct call_msg call = { MSG_CALL, all->handle, all->offset + (uint64_t)i * PATTERN_SIZE,
				 PATTERN_SIZE, i };
	int rc;

	if (!per_call)
		return call;
	rc = rpcrdma_mr_reg(p, buf + (size_t)i * PATTERN_SIZE, PATTERN_SIZE, RPCRDMA_ACC_REMOTE_WRITE,
			    &mrs[i]);
	if (rc)
		die("register a call's target", rc);
	call.handle = mrs[i]->handle;
	call.offset = mrs[i]->offset;
	return call;
}

/* 32 calls in flight, each answered by a 4 KiB RDMA Write and a reply Send. */
static void rpc_pattern(struct rpcrdma_ep *ep, struct rpcrdma_prov *p, struct msgbufs *m,
			const char *prov, const struct opts *o, int per_call)
{
	uint8_t *buf = aligned_alloc(4096, (size_t)PATTERN_SIZE * PATTERN_DEPTH);
	struct rpcrdma_cqe early[PATTERN_DEPTH + 4];   /* replies that arrive during a Send */
	struct rpcrdma_mr *mr, *mrs[PATTERN_DEPTH] = { 0 };
	const char *name = per_call ? "rpc_pattern_reg" : "rpc_pattern";
	uint64_t done = 0;
	double t0, end, dt;
	int i, rc, n = 0, outstanding = 0;

	rc = rpcrdma_mr_reg(p, buf, (size_t)PATTERN_SIZE * PATTERN_DEPTH, RPCRDMA_ACC_REMOTE_WRITE,
			    &mr);
	if (rc)
		die("register", rc);
	t0 = now_s();
	end = t0 + o->seconds;
	for (i = 0; i < PATTERN_DEPTH; i++) {
		struct call_msg call = pattern_call(p, buf, mr, mrs, per_call, (uint32_t)i);

		send_now(ep, m, &call, sizeof(call), early, &n);
		outstanding++;
	}
	while (outstanding) {
		struct rpcrdma_cqe c = n ? early[--n] : next(ep);
		struct rpcrdma_sge s;
		struct call_msg reply;

		if (c.op != RPCRDMA_OP_RECV || c.status)
			die("pattern", c.status);
		s = slot(m, (int)(uintptr_t)c.ctx - 1, 4096);
		memcpy(&reply, s.addr, sizeof(reply));
		rpcrdma_post_recv(ep, &s, c.ctx);
		if (reply.idx >= PATTERN_DEPTH)
			die("pattern reply", -RPCRDMA_ERR_PROTO);
		if (per_call) {   /* the RPC ended: its chunk's remote access with it */
			rpcrdma_mr_dereg(mrs[reply.idx]);
			mrs[reply.idx] = NULL;
		}
		outstanding--;
		done++;
		if (now_s() < end) {
			struct call_msg call = pattern_call(p, buf, mr, mrs, per_call, reply.idx);

			send_now(ep, m, &call, sizeof(call), early, &n);
			outstanding++;
		}
	}
	dt = now_s() - t0;
	if (o->json)
		printf("{\"transport\":\"raw/%s\",\"op\":\"%s\",\"size\":%d,\"depth\":%d,"
		       "\"ops_per_s\":%.0f,\"MBps\":%.1f}\n", prov, name, PATTERN_SIZE, PATTERN_DEPTH,
		       done / dt, done * (double)PATTERN_SIZE / dt / 1e6);
	else
		printf("%-5s %-14s %8d %5d %12s %10s %10s %10.1f\n", prov,
		       per_call ? "s/w/s, reg each" : "send/write/send", PATTERN_SIZE, PATTERN_DEPTH,
		       "-", "-", "-", done * (double)PATTERN_SIZE / dt / 1e6);
	rpcrdma_mr_dereg(mr);
	free(buf);
}

/* One registration of 4 KiB for remote write and its deregistration, back to back: what
 * an RPC with one write chunk pays for least exposure with this provider. */
static void reg_cost(struct rpcrdma_prov *p, const char *prov, const struct opts *o)
{
	uint8_t *buf = aligned_alloc(4096, PATTERN_SIZE);
	double t0 = now_s(), end = t0 + o->seconds / 4, dt, us;
	uint64_t n = 0;

	memset(buf, 0, PATTERN_SIZE);
	while (now_s() < end) {
		struct rpcrdma_mr *mr;
		int rc = rpcrdma_mr_reg(p, buf, PATTERN_SIZE, RPCRDMA_ACC_REMOTE_WRITE, &mr);

		if (rc)
			die("register", rc);
		rpcrdma_mr_dereg(mr);
		n++;
	}
	dt = now_s() - t0;
	us = dt / (double)n * 1e6;
	if (o->json)
		printf("{\"transport\":\"raw/%s\",\"op\":\"reg_dereg\",\"size\":%d,\"depth\":1,"
		       "\"avg_us\":%.2f}\n", prov, PATTERN_SIZE, us);
	else
		printf("%-5s %-14s %8d %5d %12.2f %10s %10s %10s\n", prov, "reg+dereg", PATTERN_SIZE, 1,
		       us, "-", "-", "-");
	free(buf);
}

static int run_provider(const char *prov, const struct opts *o)
{
	struct rpcrdma_cqe early[4];
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *ep;
	struct msgbufs m;
	struct info in;
	uint16_t port = 0;
	int fds[2], rc, status, n = 0;
	pid_t child;

	if (pipe(fds))
		return 1;
	fflush(stdout);
	child = fork();  /* before libfabric is opened here: it is not fork-safe */
	if (child == 0) {
		close(fds[0]);
		server(prov, o, fds[1]);
	}
	close(fds[1]);
	if (read(fds[0], &port, sizeof(port)) != sizeof(port) || !port) {
		fprintf(stderr, "bench_prov: %s: server did not start\n", prov);
		waitpid(child, &status, 0);
		return 1;
	}
	close(fds[0]);
	rc = rpcrdma_prov_open(prov, &p, NULL, 0);
	if (!rc)
		rc = rpcrdma_connect(p, o->host ? o->host : "127.0.0.1", port, NULL, 0, 10000, &ep);
	if (rc)
		die("connect", rc);
	msgbufs_init(p, &m);
	post_recvs(ep, &m);
	struct rpcrdma_cqe c = next(ep);

	if (c.op != RPCRDMA_OP_RECV || c.status)
		die("info", c.status);
	memcpy(&in, m.mem + ((uintptr_t)c.ctx - 1) * 4096, sizeof(in));
	pingpong(ep, &m, prov, o);
	bandwidth(ep, p, &in, RPCRDMA_OP_READ, 4096, prov, o);
	bandwidth(ep, p, &in, RPCRDMA_OP_READ, REGION, prov, o);
	bandwidth(ep, p, &in, RPCRDMA_OP_WRITE, 4096, prov, o);
	bandwidth(ep, p, &in, RPCRDMA_OP_WRITE, REGION, prov, o);
	rpc_pattern(ep, p, &m, prov, o, 0);
	rpc_pattern(ep, p, &m, prov, o, 1);
	reg_cost(p, prov, o);
	send_now(ep, &m, &(struct info){ MSG_BYE, 0, 0 }, sizeof(struct info), early, &n);
	rpcrdma_ep_close(ep);
	rpcrdma_mr_dereg(m.mr);
	rpcrdma_prov_close(p);
	free(m.mem);
	waitpid(child, &status, 0);
	return 0;
}

int main(int argc, char **argv)
{
	const char *provs[8];
	struct opts o = { 1.0, 0, NULL };
	int np = 0, i, rc = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			o.json = 1;
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			o.seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--host") && i + 1 < argc)
			o.host = argv[++i];
		else if (!strcmp(argv[i], "--provider") && i + 1 < argc && np < 8)
			provs[np++] = argv[++i];
		else {
			fprintf(stderr, "usage: bench_prov [--provider NAME]... [--host ADDR] [--seconds S] "
				"[--json]\n");
			return 2;
		}
	}
	if (!np) {
		provs[np++] = "tcp";
		provs[np++] = "shm";
	}
	if (!o.json)
		printf("%-5s %-14s %8s %5s %12s %10s %10s %10s\n", "prov", "operation", "bytes", "depth",
		       "avg us", "p50 us", "p99 us", "MB/s");
	for (i = 0; i < np; i++)
		rc |= run_provider(provs[i], &o);
	return rc;
}
