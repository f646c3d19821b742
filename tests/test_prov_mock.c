/* SPDX-License-Identifier: BSD-2-Clause */
/* The mock provider: every operation, every access rule, every fault it can inject,
 * and the provider contract's argument checks (prov/prov.c) on top of it. */
#include <pthread.h>
#include <stdlib.h>

#include "harness.h"
#include "prov_mock.h"

struct rig {
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *a, *b;
	uint8_t *mem;
	struct rpcrdma_mr *mr;  /* local buffers of both sides */
};

#define MEM (64 * 1024)

static void rig_up(struct rig *r)
{
	CHECK_EQ_I(rpcrdma_mock_open(&r->p), 0);
	CHECK_EQ_I(rpcrdma_mock_pair(r->p, "A", 1, "BB", 2, &r->a, &r->b), 0);
	r->mem = calloc(1, MEM);
	CHECK_EQ_I(rpcrdma_mr_reg(r->p, r->mem, MEM, RPCRDMA_ACC_READ_SINK, &r->mr), 0);
}

static void rig_down(struct rig *r)
{
	struct rpcrdma_mock_stats st;

	rpcrdma_ep_close(r->a);
	rpcrdma_ep_close(r->b);
	CHECK_EQ_I(rpcrdma_mr_dereg(r->mr), 0);
	CHECK_EQ_I(rpcrdma_mock_get_stats(r->p, &st), 0);
	CHECK_EQ_U(st.mrs_live, 0);
	rpcrdma_prov_close(r->p);
	free(r->mem);
}

static struct rpcrdma_sge sge(struct rig *r, size_t off, uint32_t len)
{
	struct rpcrdma_sge s = { r->mr, r->mem + off, len };

	return s;
}

static int poll1(struct rpcrdma_ep *ep, struct rpcrdma_cqe *c)
{
	return rpcrdma_ep_poll(ep, c, 1);
}

/* Drain ep; count completions with a given status and whether DISCONNECT was seen. */
static int drain(struct rpcrdma_ep *ep, int status, int *disc)
{
	struct rpcrdma_cqe c;
	int n = 0;

	*disc = 0;
	while (poll1(ep, &c) == 1) {
		if (c.op == RPCRDMA_OP_DISCONNECT)
			(*disc)++;
		else if (c.status == status)
			n++;
	}
	return n;
}

static void test_pair_pdata_and_send_recv(void)
{
	struct rig r;
	struct rpcrdma_cqe c;
	const void *pd;
	size_t len;

	rig_up(&r);
	pd = rpcrdma_ep_peer_pdata(r.a, &len);
	CHECK(len == 2 && memcmp(pd, "BB", 2) == 0);
	pd = rpcrdma_ep_peer_pdata(r.b, &len);
	CHECK(len == 1 && memcmp(pd, "A", 1) == 0);
	struct rpcrdma_sge rs = sge(&r, 0, 1024), ss = sge(&r, 4096, 100);

	memset(r.mem + 4096, 0x42, 100);
	CHECK_EQ_I(rpcrdma_post_recv(r.b, &rs, (void *)1), 0);
	CHECK_EQ_I(rpcrdma_post_send(r.a, &ss, (void *)2), 0);
	CHECK_EQ_U(poll1(r.a, &c), 1);
	CHECK(c.ctx == (void *)2 && c.op == RPCRDMA_OP_SEND && c.status == 0 && c.len == 100);
	CHECK_EQ_U(poll1(r.b, &c), 1);
	CHECK(c.ctx == (void *)1 && c.op == RPCRDMA_OP_RECV && c.status == 0 && c.len == 100);
	CHECK(r.mem[0] == 0x42 && r.mem[99] == 0x42 && r.mem[100] == 0);
	CHECK_EQ_U(poll1(r.b, &c), 0);
	CHECK_ERR(rpcrdma_ep_wait(r.b, 0), RPCRDMA_ERR_TIMEDOUT);
	rig_down(&r);
}

static void test_rma_scatter_gather(void)
{
	struct rig r;
	struct rpcrdma_mr *remote;
	uint8_t *target = malloc(8192);
	struct rpcrdma_cqe c;
	int i;

	rig_up(&r);
	for (i = 0; i < 8192; i++)
		target[i] = (uint8_t)(i * 7);
	CHECK_EQ_U(rpcrdma_mr_reg(r.p, target, 8192,
				  RPCRDMA_ACC_REMOTE_READ | RPCRDMA_ACC_REMOTE_WRITE, &remote), 0);
	struct rpcrdma_segment segs[2] = { { remote->handle, 3000, remote->offset + 100 },
					   { remote->handle, 1000, remote->offset + 5000 } };
	struct rpcrdma_sge l[3] = { sge(&r, 0, 1500), sge(&r, 2000, 2000), sge(&r, 8000, 500) };

	CHECK_EQ_I(rpcrdma_post_read(r.a, l, 3, segs, 2, (void *)9), 0);
	CHECK_EQ_U(poll1(r.a, &c), 1);
	CHECK(c.ctx == (void *)9 && c.op == RPCRDMA_OP_READ && c.status == 0 && c.len == 4000);
	CHECK(memcmp(r.mem, target + 100, 1500) == 0);
	CHECK(memcmp(r.mem + 2000, target + 1600, 1500) == 0);
	CHECK(memcmp(r.mem + 3500, target + 5000, 500) == 0);
	CHECK(memcmp(r.mem + 8000, target + 5500, 500) == 0);
	memset(r.mem, 0xab, 4000);
	struct rpcrdma_sge w = sge(&r, 0, 4000);

	CHECK_EQ_I(rpcrdma_post_write(r.a, &w, 1, segs, 2, (void *)10), 0);
	CHECK_EQ_U(poll1(r.a, &c), 1);
	CHECK(c.op == RPCRDMA_OP_WRITE && c.status == 0);
	CHECK(target[99] == (uint8_t)(99 * 7) && target[100] == 0xab && target[3099] == 0xab);
	CHECK(target[3100] == (uint8_t)(3100 * 7) && target[5000] == 0xab && target[5999] == 0xab);
	CHECK(target[6000] == (uint8_t)(6000 * 7));
	CHECK_EQ_I(rpcrdma_mr_dereg(remote), 0);
	rig_down(&r);
	free(target);
}

/* RFC 5042: bad key, released key, out of range, wrong right, and (4) a Read into memory
 * not registered as a Read sink (iWARP's rule, which the mock keeps on every fabric):
 * refused, connection ends, everything posted completes with DISCONN on both sides. */
static void check_bad_access(int which)
{
	struct rig r;
	struct rpcrdma_mr *remote, *gone, *plain = NULL;
	uint8_t *target = calloc(1, 4096), *other = calloc(1, 4096), *local = calloc(1, 64);
	struct rpcrdma_cqe c;
	int disc, flushed;

	rig_up(&r);
	CHECK_EQ_I(rpcrdma_mr_reg(r.p, target, 4096, RPCRDMA_ACC_REMOTE_READ, &remote), 0);
	CHECK_EQ_I(rpcrdma_mr_reg(r.p, other, 4096, RPCRDMA_ACC_REMOTE_READ, &gone), 0);
	struct rpcrdma_segment seg = { remote->handle, 64, remote->offset };

	if (which == 0)
		seg.handle ^= 0x1234;
	if (which == 1) {
		seg.handle = gone->handle;
		seg.offset = gone->offset;
	}
	CHECK_EQ_I(rpcrdma_mr_dereg(gone), 0);
	if (which == 2)
		seg.offset += 4096 - 32;
	struct rpcrdma_sge l = sge(&r, 0, 64), rb = sge(&r, 1024, 64);

	if (which == 4) {
		CHECK_EQ_I(rpcrdma_mr_reg(r.p, local, 64, RPCRDMA_ACC_LOCAL, &plain), 0);
		l = (struct rpcrdma_sge){ plain, local, 64 };
	}
	CHECK_EQ_I(rpcrdma_post_recv(r.b, &rb, (void *)5), 0);
	if (which == 3)
		CHECK_EQ_I(rpcrdma_post_write(r.a, &l, 1, &seg, 1, (void *)7), 0);
	else
		CHECK_EQ_I(rpcrdma_post_read(r.a, &l, 1, &seg, 1, (void *)7), 0);
	CHECK_EQ_U(poll1(r.a, &c), 1);
	CHECK(c.ctx == (void *)7 && c.status == -RPCRDMA_ERR_ACCESS);
	CHECK_EQ_U(poll1(r.a, &c), 1);
	CHECK_EQ_U(c.op, RPCRDMA_OP_DISCONNECT);
	flushed = drain(r.b, -RPCRDMA_ERR_DISCONN, &disc);
	CHECK_EQ_U(flushed, 1);
	CHECK_EQ_U(disc, 1);
	CHECK(!rpcrdma_ep_connected(r.a) && !rpcrdma_ep_connected(r.b));
	CHECK_ERR(rpcrdma_post_send(r.a, &l, NULL), RPCRDMA_ERR_DISCONN);
	CHECK(target[0] == 0);
	CHECK_EQ_I(rpcrdma_mr_dereg(remote), 0);
	if (plain)
		CHECK_EQ_I(rpcrdma_mr_dereg(plain), 0);
	rig_down(&r);
	free(target);
	free(other);
	free(local);
}

static void test_bad_access(void)
{
	int which;

	for (which = 0; which < 5; which++)
		check_bad_access(which);
}

static void test_rnr_and_short_buffer(void)
{
	struct rpcrdma_mock_faults f = { 0 };
	struct rpcrdma_mock_stats st;
	struct rpcrdma_cqe c;
	struct rig r;
	int disc;

	/* no receive posted: the send fails and the connection breaks */
	rig_up(&r);
	struct rpcrdma_sge s = sge(&r, 0, 16), big = sge(&r, 0, 2048), small = sge(&r, 4096, 16);

	CHECK_EQ_I(rpcrdma_post_send(r.a, &s, (void *)1), 0);
	CHECK_EQ_U(poll1(r.a, &c), 1);
	CHECK(c.status == -RPCRDMA_ERR_IO);
	CHECK_EQ_U(drain(r.b, 0, &disc), 0);
	CHECK_EQ_U(disc, 1);
	CHECK_EQ_I(rpcrdma_mock_get_stats(r.p, &st), 0);
	CHECK_EQ_U(st.rnr_errors, 1);
	rig_down(&r);

	/* rnr_wait: held until a receive is posted */
	rig_up(&r);
	s = sge(&r, 0, 16);
	big = sge(&r, 0, 2048);
	small = sge(&r, 4096, 16);
	f.rnr_wait = 1;
	CHECK_EQ_I(rpcrdma_mock_set_faults(r.p, &f), 0);
	r.mem[0] = 0x77;
	CHECK_EQ_I(rpcrdma_post_send(r.a, &s, (void *)1), 0);
	CHECK_EQ_U(poll1(r.a, &c), 0);
	CHECK_EQ_I(rpcrdma_post_recv(r.b, &small, (void *)2), 0);
	CHECK_EQ_U(poll1(r.a, &c), 1);
	CHECK(c.status == 0 && c.ctx == (void *)1);
	CHECK_EQ_U(poll1(r.b, &c), 1);
	CHECK(c.status == 0 && c.len == 16 && r.mem[4096] == 0x77);
	/* a message larger than the receive buffer breaks the connection */
	CHECK_EQ_I(rpcrdma_post_recv(r.b, &small, (void *)3), 0);
	CHECK_EQ_I(rpcrdma_post_send(r.a, &big, (void *)4), 0);
	CHECK_EQ_U(poll1(r.a, &c), 1);
	CHECK(c.ctx == (void *)4 && c.status == -RPCRDMA_ERR_IO);
	CHECK(!rpcrdma_ep_connected(r.b));
	rig_down(&r);
}

static void test_faults(void)
{
	struct rpcrdma_mock_faults f = { 0 };
	struct rpcrdma_cqe c;
	struct rig r;
	int i, disc;

	/* the 3rd completion fails: recv#1(b) send#1(a) then recv#2 fails */
	rig_up(&r);
	f.fail_completion = 3;
	rpcrdma_mock_set_faults(r.p, &f);
	struct rpcrdma_sge rb0 = sge(&r, 0, 64), rb1 = sge(&r, 64, 64), s = sge(&r, 4096, 8);

	CHECK_EQ_I(rpcrdma_post_recv(r.b, &rb0, (void *)1), 0);
	CHECK_EQ_I(rpcrdma_post_recv(r.b, &rb1, (void *)2), 0);
	CHECK_EQ_I(rpcrdma_post_send(r.a, &s, (void *)3), 0);
	CHECK_EQ_I(rpcrdma_post_send(r.a, &s, (void *)4), 0);
	CHECK_EQ_U(poll1(r.b, &c), 1);
	CHECK(c.ctx == (void *)1 && c.status == 0);
	CHECK_EQ_U(poll1(r.b, &c), 1);
	CHECK(c.ctx == (void *)2 && c.status == -RPCRDMA_ERR_IO);
	CHECK_EQ_U(drain(r.b, 0, &disc), 0);
	CHECK_EQ_U(disc, 1);
	rig_down(&r);

	/* the 2nd completion is delayed by 3 polls */
	rig_up(&r);
	rb0 = sge(&r, 0, 64);
	s = sge(&r, 4096, 8);
	memset(&f, 0, sizeof(f));
	f.delay_completion = 2;
	f.delay_polls = 3;
	rpcrdma_mock_set_faults(r.p, &f);
	CHECK_EQ_I(rpcrdma_post_recv(r.b, &rb0, (void *)1), 0);
	CHECK_EQ_I(rpcrdma_post_send(r.a, &s, (void *)3), 0);
	CHECK_EQ_U(poll1(r.b, &c), 1);   /* completion 1: the receive */
	for (i = 0; i < 2; i++)
		CHECK_EQ_U(poll1(r.a, &c), 0);
	CHECK_EQ_I(rpcrdma_ep_wait(r.a, 0), 0);  /* something is pending */
	CHECK_EQ_U(poll1(r.a, &c), 1);
	CHECK(c.ctx == (void *)3 && c.status == 0);
	rig_down(&r);

	/* the connection breaks as the 2nd operation is posted: that op completes DISCONN */
	rig_up(&r);
	rb0 = sge(&r, 0, 64);
	s = sge(&r, 4096, 8);
	memset(&f, 0, sizeof(f));
	f.disconnect_at_post = 2;
	rpcrdma_mock_set_faults(r.p, &f);
	CHECK_EQ_I(rpcrdma_post_recv(r.b, &rb0, (void *)1), 0);
	CHECK_EQ_I(rpcrdma_post_send(r.a, &s, (void *)3), 0);
	CHECK_EQ_U(poll1(r.a, &c), 1);
	CHECK(c.ctx == (void *)3 && c.status == -RPCRDMA_ERR_DISCONN);
	CHECK_EQ_U(poll1(r.a, &c), 1);
	CHECK_EQ_U(c.op, RPCRDMA_OP_DISCONNECT);
	CHECK_EQ_U(drain(r.b, -RPCRDMA_ERR_DISCONN, &disc), 1);
	CHECK_EQ_U(disc, 1);
	rig_down(&r);

	/* the 1st message received gets byte 5 flipped */
	rig_up(&r);
	rb0 = sge(&r, 0, 64);
	s = sge(&r, 4096, 8);
	memset(&f, 0, sizeof(f));
	f.corrupt_recv = 1;
	f.corrupt_offset = 5;
	rpcrdma_mock_set_faults(r.p, &f);
	memset(r.mem + 4096, 0x11, 8);
	CHECK_EQ_I(rpcrdma_post_recv(r.b, &rb0, (void *)1), 0);
	CHECK_EQ_I(rpcrdma_post_send(r.a, &s, (void *)3), 0);
	CHECK(r.mem[4] == 0x11 && r.mem[5] == (0x11 ^ 0x5a) && r.mem[6] == 0x11);
	rig_down(&r);
}

static void test_listen_connect_accept_reject(void)
{
	struct rpcrdma_listener *l;
	struct rpcrdma_connreq *req;
	struct rpcrdma_ep *c1, *s1, *c2;
	struct rpcrdma_prov *p;
	struct rpcrdma_cqe c;
	const void *pd;
	size_t len;

	CHECK_EQ_I(rpcrdma_mock_open(&p), 0);
	CHECK_ERR(rpcrdma_connect(p, "x", 20049, "hi", 2, 0, &c1), RPCRDMA_ERR_REFUSED);
	CHECK_EQ_I(rpcrdma_listen(p, NULL, 20049, &l), 0);
	CHECK_EQ_U(rpcrdma_listener_port(l), 20049);
	CHECK_EQ_U(rpcrdma_listen(p, NULL, 20049, &(struct rpcrdma_listener *){ NULL }),
		   -RPCRDMA_ERR_ADDR);
	CHECK_ERR(rpcrdma_listener_get(l, 0, &req), RPCRDMA_ERR_TIMEDOUT);
	CHECK_EQ_I(rpcrdma_connect(p, "x", 20049, "hi", 2, 0, &c1), 0);
	CHECK(!rpcrdma_ep_connected(c1));
	CHECK_EQ_I(rpcrdma_listener_get(l, 0, &req), 0);
	pd = rpcrdma_connreq_pdata(req, &len);
	CHECK(len == 2 && memcmp(pd, "hi", 2) == 0);
	CHECK_EQ_I(rpcrdma_accept(req, "yo!", 3, 0, &s1), 0);
	CHECK(rpcrdma_ep_connected(c1) && rpcrdma_ep_connected(s1));
	pd = rpcrdma_ep_peer_pdata(c1, &len);
	CHECK(len == 3 && memcmp(pd, "yo!", 3) == 0);
	pd = rpcrdma_ep_peer_pdata(s1, &len);
	CHECK(len == 2 && memcmp(pd, "hi", 2) == 0);
	/* rejected */
	CHECK_EQ_I(rpcrdma_connect(p, "x", 20049, NULL, 0, 0, &c2), 0);
	CHECK_EQ_I(rpcrdma_listener_get(l, 0, &req), 0);
	rpcrdma_reject(req, "no", 2);
	CHECK_EQ_U(poll1(c2, &c), 1);
	CHECK_EQ_U(c.op, RPCRDMA_OP_DISCONNECT);
	rpcrdma_ep_close(c2);
	/* closing one end: the other sees DISCONNECT */
	rpcrdma_ep_close(c1);
	CHECK_EQ_U(poll1(s1, &c), 1);
	CHECK_EQ_U(c.op, RPCRDMA_OP_DISCONNECT);
	rpcrdma_ep_close(s1);
	rpcrdma_listener_close(l);
	rpcrdma_prov_close(p);
}

struct srv_arg {
	struct rpcrdma_listener *l;
	struct rpcrdma_ep *ep;
	int reject;
};

static void *srv_thread(void *arg)
{
	struct srv_arg *a = arg;
	struct rpcrdma_connreq *req;

	if (rpcrdma_listener_get(a->l, 5000, &req) == 0) {
		if (a->reject)
			rpcrdma_reject(req, NULL, 0);
		else
			rpcrdma_accept(req, "srv", 3, 5000, &a->ep);
	}
	return NULL;
}

/* With a timeout, connect waits for the other side like a real provider. */
static void test_connect_waits_for_accept(void)
{
	struct srv_arg a = { NULL, NULL, 0 };
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *c;
	pthread_t t;

	CHECK_EQ_I(rpcrdma_mock_open(&p), 0);
	CHECK_EQ_I(rpcrdma_listen(p, NULL, 0, &a.l), 0);
	CHECK(rpcrdma_listener_port(a.l) != 0);
	pthread_create(&t, NULL, srv_thread, &a);
	CHECK_EQ_I(rpcrdma_connect(p, "x", rpcrdma_listener_port(a.l), "c", 1, 5000, &c), 0);
	pthread_join(t, NULL);
	CHECK(rpcrdma_ep_connected(c) && a.ep && rpcrdma_ep_connected(a.ep));
	rpcrdma_ep_close(c);
	rpcrdma_ep_close(a.ep);
	a.reject = 1;
	pthread_create(&t, NULL, srv_thread, &a);
	CHECK_EQ_U(rpcrdma_connect(p, "x", rpcrdma_listener_port(a.l), NULL, 0, 5000, &c),
		   -RPCRDMA_ERR_REJECTED);
	pthread_join(t, NULL);
	rpcrdma_listener_close(a.l);
	rpcrdma_prov_close(p);
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

/* Keys: unique among live registrations, not sequential, not reissued soon after. */
static void test_keys(void)
{
	enum { N = 512 };
	static uint8_t buf[N];
	struct rpcrdma_mr *mrs[N];
	uint32_t keys[2 * N];
	struct rpcrdma_prov *p;
	int i, dup = 0, seq = 0;

	CHECK_EQ_I(rpcrdma_mock_open(&p), 0);
	for (i = 0; i < N; i++) {
		CHECK_EQ_I(rpcrdma_mr_reg(p, buf + i, 1, RPCRDMA_ACC_REMOTE_READ, &mrs[i]), 0);
		keys[i] = mrs[i]->handle;
		if (i && mrs[i]->handle == mrs[i - 1]->handle + 1)
			seq++;
	}
	for (i = 0; i < N; i++)
		CHECK_EQ_I(rpcrdma_mr_dereg(mrs[i]), 0);
	for (i = 0; i < N; i++) {
		CHECK_EQ_I(rpcrdma_mr_reg(p, buf + i, 1, RPCRDMA_ACC_REMOTE_READ, &mrs[i]), 0);
		keys[N + i] = mrs[i]->handle;
	}
	qsort(keys, 2 * N, sizeof(keys[0]), cmp_u32);
	for (i = 1; i < 2 * N; i++)
		dup += keys[i] == keys[i - 1];
	CHECK_EQ_U(dup, 0);
	CHECK(seq < 4);
	CHECK(mrs[0]->offset == (uint64_t)(uintptr_t)buf);
	for (i = 0; i < N; i++)
		CHECK_EQ_I(rpcrdma_mr_dereg(mrs[i]), 0);
	rpcrdma_prov_close(p);
}

static void test_argument_checks(void)
{
	struct rig r;
	struct rpcrdma_cqe c;

	rig_up(&r);
	struct rpcrdma_sge outside = { r.mr, r.mem + MEM - 8, 16 }, ok = sge(&r, 0, 8);
	struct rpcrdma_segment seg = { 1, 9, 0 };

	CHECK_ERR(rpcrdma_post_send(r.a, &outside, NULL), RPCRDMA_ERR_INVAL);
	CHECK_ERR(rpcrdma_post_recv(r.a, NULL, NULL), RPCRDMA_ERR_INVAL);
	CHECK_ERR(rpcrdma_post_read(r.a, &ok, 1, &seg, 1, NULL), RPCRDMA_ERR_INVAL);
	seg.length = 0;
	CHECK_ERR(rpcrdma_post_write(r.a, &ok, 1, &seg, 1, NULL), RPCRDMA_ERR_INVAL);
	CHECK_ERR(rpcrdma_post_read(r.a, &ok, 0, &seg, 1, NULL), RPCRDMA_ERR_INVAL);
	CHECK_ERR(rpcrdma_ep_poll(r.a, &c, 0), RPCRDMA_ERR_INVAL);
	CHECK_EQ_U(rpcrdma_mr_reg(r.p, r.mem, 0, RPCRDMA_ACC_LOCAL, &(struct rpcrdma_mr *){ NULL }),
		   -RPCRDMA_ERR_INVAL);
	CHECK_ERR(rpcrdma_mr_reg(r.p, r.mem, 8, 8, &(struct rpcrdma_mr *){ NULL }), RPCRDMA_ERR_INVAL);
	CHECK_EQ_U(rpcrdma_connect(r.p, "x", 1, r.mem, RPCRDMA_PDATA_MAX + 1, 0,
				   &(struct rpcrdma_ep *){ NULL }),
		   -RPCRDMA_ERR_INVAL);
	CHECK_EQ_I(rpcrdma_mr_dereg(NULL), 0);
	rpcrdma_ep_close(NULL);
	rpcrdma_listener_close(NULL);
	rpcrdma_prov_close(NULL);
	CHECK(rpcrdma_prov_caps(r.p)->write_send_ordered == 1);
	CHECK(strcmp(rpcrdma_op_name(RPCRDMA_OP_READ), "read") == 0);
	rig_down(&r);
}

static void test_unknown_provider(void)
{
	struct rpcrdma_prov *p = NULL;
	char err[256];

	CHECK_ERR(rpcrdma_prov_open("no-such-provider", &p, err, sizeof(err)), RPCRDMA_ERR_NOPROV);
	CHECK(strstr(err, "no-such-provider") != NULL);
	CHECK(p == NULL);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_pair_pdata_and_send_recv);
	RUN(test_rma_scatter_gather);
	RUN(test_bad_access);
	RUN(test_rnr_and_short_buffer);
	RUN(test_faults);
	RUN(test_listen_connect_accept_reject);
	RUN(test_connect_waits_for_accept);
	RUN(test_keys);
	RUN(test_argument_checks);
	RUN(test_unknown_provider);
	HARNESS_END();
}
