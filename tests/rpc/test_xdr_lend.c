/* SPDX-License-Identifier: BSD-2-Clause */
/* Arguments lent from the call (svc_rdma's lend_args, rpc/xdr_rdma.c): a server's
 * xdr_rdma_ddp_bytes() points into the received call instead of copying; freeing knows
 * those pointers; a failed decode leaves none behind. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rpc_int.h"

struct two {
	char *a;
	u_int alen;
	char *s;                  /* a string: needs its terminator, never lent */
	char *b;
	u_int blen;
};

static bool_t xdr_two(XDR *x, struct two *t)
{
	return xdr_rdma_ddp_bytes(x, &t->a, &t->alen, 1u << 20) &&
	       xdr_rdma_ddp_string(x, &t->s, 64) &&
	       xdr_rdma_ddp_bytes(x, &t->b, &t->blen, 1u << 20);
}

static uint32_t put_opaque(uint8_t *p, const void *data, uint32_t len)
{
	uint32_t n = htonl(len), padded = (len + 3u) & ~3u;

	memcpy(p, &n, 4);
	memset(p + 4, 0, padded);
	memcpy(p + 4, data, len);
	return 4 + padded;
}

/* A call's arguments: 1000 bytes of a, the string "name", 5 bytes of b. Returns the
 * length; *a_at and *b_at get where a's and b's bytes are. */
static uint32_t make_args(uint8_t *buf, uint32_t *a_at, uint32_t *b_at)
{
	uint8_t a[1000];
	uint32_t len = 0, i;

	for (i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(i * 7 + 1);
	*a_at = len + 4;
	len += put_opaque(buf + len, a, sizeof(a));
	len += put_opaque(buf + len, "name", 4);
	*b_at = len + 4;
	len += put_opaque(buf + len, "hello", 5);
	return len;
}

static bool_t decode(struct rpcrdma__xdr *s, const uint8_t *buf, uint32_t len, bool lend,
		     struct two *t)
{
	bool_t ok;

	rpcrdma__xdr_decode(s, buf, len);
	s->lend = lend;
	rpcrdma__xdr_enter(s);
	ok = xdr_two(&s->x, t);
	rpcrdma__xdr_leave();
	return ok;
}

/* svc_freeargs() over RDMA: XDR_FREE on a stream that knows the kept calls. */
static bool_t free_args(struct rpcrdma__held *held, uint32_t nheld, struct two *t)
{
	struct rpcrdma__xdr fs;
	bool_t ok;

	memset(&fs, 0, sizeof(fs));
	fs.x.x_op = XDR_FREE;
	fs.held = held;
	fs.nheld = nheld;
	rpcrdma__xdr_enter(&fs);
	ok = xdr_two(&fs.x, t);
	rpcrdma__xdr_leave();
	return ok;
}

static void test_lent_point_into_call(void)
{
	uint8_t *buf = malloc(2048);
	struct rpcrdma__xdr s;
	struct two t;
	struct rpcrdma__held h;
	uint32_t len, a_at, b_at, i;

	CHECK(buf != NULL);
	len = make_args(buf, &a_at, &b_at);
	memset(&t, 0, sizeof(t));
	CHECK(decode(&s, buf, len, true, &t));
	CHECK(t.a == (char *)buf + a_at);
	CHECK(t.b == (char *)buf + b_at);
	CHECK_EQ_U(t.alen, 1000);
	CHECK_EQ_U(t.blen, 5);
	for (i = 0; i < 1000; i++)
		CHECK_EQ_U((uint8_t)t.a[i], (uint8_t)(i * 7 + 1));
	CHECK(!memcmp(t.b, "hello", 5));
	CHECK_EQ_U(s.nlent, 2);
	CHECK_EQ_U(rpcrdma__xdr_pos(&s), len);       /* pads consumed */
	CHECK(t.s && !strcmp(t.s, "name"));
	CHECK((uintptr_t)t.s < (uintptr_t)buf || (uintptr_t)t.s >= (uintptr_t)buf + len);
	/* freeing: the lent pointers are cleared and their call marked, the string freed */
	h.buf = buf;
	h.cap = 2048;
	h.len = len;
	h.hit = false;
	CHECK(free_args(&h, 1, &t));
	CHECK(t.a == NULL && t.b == NULL && t.s == NULL);
	CHECK(h.hit);
	free(buf);
}

static void test_copies_without_lend(void)
{
	uint8_t buf[2048];
	struct rpcrdma__xdr s;
	struct two t;
	struct rpcrdma__held h = { buf, sizeof(buf), 0, false };
	uint32_t len, a_at, b_at;

	len = make_args(buf, &a_at, &b_at);
	h.len = len;
	memset(&t, 0, sizeof(t));
	CHECK(decode(&s, buf, len, false, &t));
	CHECK_EQ_U(s.nlent, 0);
	CHECK(t.a && t.a != (char *)buf + a_at && !memcmp(t.a, buf + a_at, 1000));
	CHECK(t.b && !memcmp(t.b, "hello", 5));
	/* heap copies are freed, never taken for lent ones, with or without kept calls */
	CHECK(free_args(&h, 1, &t));
	CHECK(!h.hit);
	CHECK(t.a == NULL && t.b == NULL && t.s == NULL);
}

/* A caller's own buffer is filled, as xdr_bytes() fills it. */
static void test_caller_buffer_filled(void)
{
	uint8_t buf[2048];
	char mine_a[1000], mine_b[8];
	struct rpcrdma__xdr s;
	struct two t;
	uint32_t len, a_at, b_at;

	len = make_args(buf, &a_at, &b_at);
	memset(&t, 0, sizeof(t));
	t.a = mine_a;
	t.b = mine_b;
	CHECK(decode(&s, buf, len, true, &t));
	CHECK(t.a == mine_a && t.b == mine_b);
	CHECK(!memcmp(mine_a, buf + a_at, 1000) && !memcmp(mine_b, "hello", 5));
	CHECK_EQ_U(s.nlent, 0);
	free(t.s);
}

/* A decode that fails after lending leaves no pointer into the call in the arguments
 * (the server does not keep a call whose decode failed). */
static void test_failed_decode_unlends(void)
{
	uint8_t buf[2048];
	struct rpcrdma__xdr s;
	struct two t;
	uint32_t len, a_at, b_at, big = htonl(64);

	len = make_args(buf, &a_at, &b_at);
	memcpy(buf + b_at - 4, &big, 4);     /* b claims 64 bytes; 8 are there */
	memset(&t, 0, sizeof(t));
	CHECK(!decode(&s, buf, len, true, &t));
	CHECK(t.a == (char *)buf + a_at);
	CHECK_EQ_U(s.nlent, 1);
	rpcrdma__xdr_unlend(&s);
	CHECK(t.a == NULL);
	CHECK_EQ_U(s.nlent, 0);
	CHECK(free_args(NULL, 0, &t));       /* what is left is the heap's */
}

/* Empty opaques are not lent (xdr_bytes gives them memory of their own); past
 * RPCRDMA__LENT_MAX lent arguments the rest are copied. */
static void test_lend_bounds(void)
{
	enum { N = RPCRDMA__LENT_MAX + 2 };
	uint8_t buf[N * 12 + 8];
	char *p[N + 1];
	u_int n[N + 1];
	struct rpcrdma__xdr s;
	struct rpcrdma__held h;
	uint32_t len = 0, i;
	bool_t ok = TRUE;

	len += put_opaque(buf, "", 0);
	for (i = 1; i <= N; i++)
		len += put_opaque(buf + len, "12345678", 8);
	memset(p, 0, sizeof(p));
	rpcrdma__xdr_decode(&s, buf, len);
	s.lend = true;
	rpcrdma__xdr_enter(&s);
	for (i = 0; i <= N && ok; i++)
		ok = xdr_rdma_ddp_bytes(&s.x, &p[i], &n[i], 64);
	rpcrdma__xdr_leave();
	CHECK(ok);
	CHECK_EQ_U(s.nlent, RPCRDMA__LENT_MAX);
	CHECK(p[0] && ((uintptr_t)p[0] < (uintptr_t)buf ||
		       (uintptr_t)p[0] >= (uintptr_t)buf + len));
	for (i = 1; i <= N; i++) {
		bool inside = (uintptr_t)p[i] >= (uintptr_t)buf &&
			      (uintptr_t)p[i] < (uintptr_t)buf + len;

		CHECK_EQ_U(inside, i <= RPCRDMA__LENT_MAX);
		CHECK(n[i] == 8 && !memcmp(p[i], "12345678", 8));
	}
	h.buf = buf;
	h.cap = sizeof(buf);
	h.len = len;
	h.hit = false;
	memset(&s, 0, sizeof(s));
	s.x.x_op = XDR_FREE;
	s.held = &h;
	s.nheld = 1;
	rpcrdma__xdr_enter(&s);
	for (i = 0; i <= N; i++)
		CHECK(xdr_rdma_ddp_bytes(&s.x, &p[i], &n[i], 64));
	rpcrdma__xdr_leave();
	for (i = 0; i <= N; i++)
		CHECK(p[i] == NULL);
	CHECK(h.hit);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_lent_point_into_call);
	RUN(test_copies_without_lend);
	RUN(test_caller_buffer_filled);
	RUN(test_failed_decode_unlends);
	RUN(test_lend_bounds);
	HARNESS_END();
}
