/* SPDX-License-Identifier: BSD-2-Clause */
/* The server's duplicate request cache (rpc/svc_drc.c): what makes two calls the same,
 * what a kept reply holds, and the bounds (entries, bytes, reply length, age, a share
 * per client). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "harness.h"
#include "rpc_int.h"

static struct sockaddr_storage addr4(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	in->sin_family = AF_INET;
	in->sin_port = htons(port);
	inet_pton(AF_INET, ip, &in->sin_addr);
	return ss;
}

/* The key of a call of xid to proc 7 of program 100003 v3 from ip:port, args as given. */
static void key_of(struct rpcrdma__drc_key *k, uint32_t xid, const char *ip, uint16_t port,
		   uint32_t proc, const uint8_t *args, uint32_t args_len)
{
	struct sockaddr_storage ss = addr4(ip, port);
	struct rpc_msg m;

	memset(&m, 0, sizeof(m));
	m.rm_xid = xid;
	m.rm_call.cb_prog = 100003;
	m.rm_call.cb_vers = 3;
	m.rm_call.cb_proc = proc;
	rpcrdma__drc_key(k, &ss, sizeof(struct sockaddr_in), &m, args, args_len, 40 + args_len);
}

static bool same_key(const struct rpcrdma__drc_key *a, const struct rpcrdma__drc_key *b)
{
	struct rpcrdma__drc *d = rpcrdma__drc_new(8, 4096, UINT64_MAX);
	struct rpcrdma__drc_ent *e;
	int found;

	rpcrdma__drc_lookup(d, a, 0, &e);
	found = rpcrdma__drc_lookup(d, b, 0, &e);
	rpcrdma__drc_free(d);
	return found == RPCRDMA__DRC_RUNNING;
}

/* A call sent again from another port of the same host is the same call; a change in
 * XID, host, procedure or arguments (within the first 256 bytes) makes another. */
static void test_drc_key(void)
{
	uint8_t args[300], other[300];
	struct rpcrdma__drc_key k, k2;

	memset(args, 1, sizeof(args));
	key_of(&k, 0x1234, "10.0.0.1", 700, 7, args, sizeof(args));
	key_of(&k2, 0x1234, "10.0.0.1", 701, 7, args, sizeof(args));
	CHECK(same_key(&k, &k2));
	key_of(&k2, 0x1235, "10.0.0.1", 700, 7, args, sizeof(args));
	CHECK(!same_key(&k, &k2));
	key_of(&k2, 0x1234, "10.0.0.2", 700, 7, args, sizeof(args));
	CHECK(!same_key(&k, &k2));
	key_of(&k2, 0x1234, "10.0.0.1", 700, 8, args, sizeof(args));
	CHECK(!same_key(&k, &k2));
	memcpy(other, args, sizeof(other));
	other[255] ^= 1;
	key_of(&k2, 0x1234, "10.0.0.1", 700, 7, other, sizeof(other));
	CHECK(!same_key(&k, &k2));
	key_of(&k2, 0x1234, "10.0.0.1", 700, 7, args, sizeof(args) - 4);   /* another length */
	CHECK(!same_key(&k, &k2));
}

/* New, then running while it is served, then its reply, stream and DDP item, byte for
 * byte from a copy (the original's memory is gone). */
static void test_drc_running_then_kept(void)
{
	struct rpcrdma__drc *d = rpcrdma__drc_new(8, 4096, UINT64_MAX);
	struct rpcrdma__drc_ent *e, *e2;
	struct rpcrdma_svc_drc_stats st;
	uint8_t xdr[64], item[100];
	struct rpcrdma_ddp_item it = { 28, sizeof(item), item };
	struct rpcrdma_reply_args a = { xdr, sizeof(xdr), &it, 1 };
	const struct rpcrdma_reply_args *r;
	struct rpcrdma__drc_key k;

	memset(xdr, 0x5a, sizeof(xdr));
	memset(item, 0xa5, sizeof(item));
	key_of(&k, 1, "10.0.0.1", 700, 7, xdr, 8);
	CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 1000, &e), RPCRDMA__DRC_NEW);
	CHECK(e != NULL);
	CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 1001, &e2), RPCRDMA__DRC_RUNNING);
	CHECK(e2 == e);
	CHECK_EQ_I(rpcrdma__drc_keep(d, e, &a, 1002), 1);
	memset(xdr, 0, sizeof(xdr));
	memset(item, 0, sizeof(item));
	CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 1003, &e2), RPCRDMA__DRC_KEPT);
	r = rpcrdma__drc_reply(e2);
	CHECK_EQ_U(r->xdr_len, 64);
	CHECK_EQ_U(r->nitems, 1);
	CHECK_EQ_U(r->items[0].offset, 28);
	CHECK_EQ_U(r->items[0].len, 100);
	CHECK(((const uint8_t *)r->xdr)[63] == 0x5a && ((const uint8_t *)r->items[0].data)[99] == 0xa5);
	rpcrdma__drc_stats(d, &st);
	CHECK_EQ_U(st.kept, 1);
	CHECK_EQ_U(st.replayed, 1);
	CHECK_EQ_U(st.waited, 1);
	CHECK_EQ_U(st.entries, 1);
	CHECK_EQ_U(st.bytes, 164);
	rpcrdma__drc_free(d);
}

/* A reply longer than reply_max is not kept: the call is new again. A call that got no
 * reply leaves nothing. */
static void test_drc_too_long_and_forget(void)
{
	struct rpcrdma__drc *d = rpcrdma__drc_new(8, 100, UINT64_MAX);
	struct rpcrdma__drc_ent *e;
	struct rpcrdma_svc_drc_stats st;
	uint8_t xdr[64], item[40];
	struct rpcrdma_ddp_item it = { 8, sizeof(item), item };
	struct rpcrdma_reply_args a = { xdr, sizeof(xdr), &it, 1 };
	struct rpcrdma__drc_key k;

	memset(xdr, 0, sizeof(xdr));
	memset(item, 0, sizeof(item));
	key_of(&k, 2, "10.0.0.1", 700, 7, xdr, 8);
	rpcrdma__drc_lookup(d, &k, 0, &e);
	CHECK_EQ_I(rpcrdma__drc_keep(d, e, &a, 0), 0);   /* 104 bytes > 100 */
	CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 0, &e), RPCRDMA__DRC_NEW);
	rpcrdma__drc_forget(d, e);
	CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 0, &e), RPCRDMA__DRC_NEW);
	a.nitems = 0;
	CHECK_EQ_I(rpcrdma__drc_keep(d, e, &a, 0), 1);
	rpcrdma__drc_stats(d, &st);
	CHECK_EQ_U(st.too_long, 1);
	CHECK_EQ_U(st.entries, 1);
	CHECK_EQ_U(st.bytes, 64);
	rpcrdma__drc_free(d);
}

/* At most max entries: the oldest kept replies make room; calls still running are never
 * evicted (their count is the credits'), so the cache may hold more of them. */
static void test_drc_bounded(void)
{
	struct rpcrdma__drc *d = rpcrdma__drc_new(4, 4096, UINT64_MAX);
	struct rpcrdma__drc_ent *e, *run[6];
	struct rpcrdma_svc_drc_stats st;
	uint8_t xdr[16] = { 0 };
	struct rpcrdma_reply_args a = { xdr, sizeof(xdr), NULL, 0 };
	struct rpcrdma__drc_key k;
	uint32_t x;

	for (x = 0; x < 6; x++) {
		key_of(&k, 100 + x, "10.0.0.1", 700, 7, xdr, 4);
		rpcrdma__drc_lookup(d, &k, x, &e);
		rpcrdma__drc_keep(d, e, &a, x);
	}
	rpcrdma__drc_stats(d, &st);
	CHECK_EQ_U(st.entries, 4);
	CHECK_EQ_U(st.evicted, 2);
	key_of(&k, 100, "10.0.0.1", 700, 7, xdr, 4);   /* the oldest went */
	CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 10, &e), RPCRDMA__DRC_NEW);
	rpcrdma__drc_forget(d, e);
	key_of(&k, 105, "10.0.0.1", 700, 7, xdr, 4);   /* the newest stayed */
	CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 10, &e), RPCRDMA__DRC_KEPT);
	for (x = 0; x < 6; x++) {
		key_of(&k, 200 + x, "10.0.0.1", 700, 7, xdr, 4);
		CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 20, &run[x]), RPCRDMA__DRC_NEW);
	}
	rpcrdma__drc_stats(d, &st);
	CHECK_EQ_U(st.entries, 6);   /* every kept one gave way; the running stay */
	for (x = 0; x < 6; x++)
		rpcrdma__drc_keep(d, run[x], &a, 30);
	rpcrdma__drc_expire(d, 30);
	rpcrdma__drc_stats(d, &st);
	CHECK_EQ_U(st.entries, 4);
	rpcrdma__drc_free(d);
}

/* A kept reply answers for 120 s (knfsd's RC_EXPIRE); after that the call is new, and an
 * idle server's expiry drops it without a lookup. */
static void test_drc_expires(void)
{
	struct rpcrdma__drc *d = rpcrdma__drc_new(8, 4096, UINT64_MAX);
	struct rpcrdma__drc_ent *e;
	struct rpcrdma_svc_drc_stats st;
	uint8_t xdr[16] = { 0 };
	struct rpcrdma_reply_args a = { xdr, sizeof(xdr), NULL, 0 };
	struct rpcrdma__drc_key k, k2;

	key_of(&k, 7, "10.0.0.1", 700, 7, xdr, 4);
	key_of(&k2, 8, "10.0.0.1", 700, 7, xdr, 4);
	rpcrdma__drc_lookup(d, &k, 0, &e);
	rpcrdma__drc_keep(d, e, &a, 0);
	rpcrdma__drc_lookup(d, &k2, 60000, &e);
	rpcrdma__drc_keep(d, e, &a, 60000);
	CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 120000, &e), RPCRDMA__DRC_KEPT);
	CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 120001, &e), RPCRDMA__DRC_NEW);
	rpcrdma__drc_forget(d, e);
	rpcrdma__drc_expire(d, 180000);
	rpcrdma__drc_stats(d, &st);
	CHECK_EQ_U(st.entries, 1);
	rpcrdma__drc_expire(d, 180001);
	rpcrdma__drc_stats(d, &st);
	CHECK_EQ_U(st.entries, 0);
	CHECK_EQ_U(st.bytes, 0);
	rpcrdma__drc_free(d);
}

/* A share per client: a client sending calls as fast as it can (the flood of one busy or
 * hostile client) evicts its own oldest replies and none of the few another client keeps
 * within the reconnect window. Before, one LRU of all: the quiet client's 3 replies went
 * after 4 of the other's calls. */
static void test_drc_share(void)
{
	struct rpcrdma__drc *d = rpcrdma__drc_new(64, 4096, UINT64_MAX);
	struct rpcrdma__drc_ent *e;
	struct rpcrdma_svc_drc_stats st;
	uint8_t xdr[16] = { 0 };
	struct rpcrdma_reply_args a = { xdr, sizeof(xdr), NULL, 0 };
	struct rpcrdma__drc_key k;
	uint32_t x, kept = 0;

	for (x = 0; x < 3; x++) {
		key_of(&k, 10 + x, "10.0.0.1", 700, 7, xdr, 4);
		rpcrdma__drc_lookup(d, &k, x, &e);
		rpcrdma__drc_keep(d, e, &a, x);
	}
	for (x = 0; x < 100000; x++) {
		key_of(&k, 1000 + x, "10.0.0.2", 800, 7, xdr, 4);
		rpcrdma__drc_lookup(d, &k, 10, &e);
		rpcrdma__drc_keep(d, e, &a, 10);
	}
	rpcrdma__drc_stats(d, &st);
	CHECK_EQ_U(st.entries, 64);
	for (x = 0; x < 3; x++) {
		key_of(&k, 10 + x, "10.0.0.1", 701, 7, xdr, 4);   /* sent again, a new port */
		CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 20, &e), RPCRDMA__DRC_KEPT);
	}
	/* the busy one keeps the rest: its newest */
	for (x = 100000 - 61; x < 100000; x++) {
		key_of(&k, 1000 + x, "10.0.0.2", 800, 7, xdr, 4);
		kept += rpcrdma__drc_lookup(d, &k, 20, &e) == RPCRDMA__DRC_KEPT;
	}
	CHECK_EQ_U(kept, 61);
	/* a third client takes its share from the one over it, not from the quiet one */
	for (x = 0; x < 30; x++) {
		key_of(&k, 5000 + x, "10.0.0.3", 900, 7, xdr, 4);
		rpcrdma__drc_lookup(d, &k, 30, &e);
		rpcrdma__drc_keep(d, e, &a, 30);
	}
	for (x = 0; x < 3; x++) {
		key_of(&k, 10 + x, "10.0.0.1", 701, 7, xdr, 4);
		CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 40, &e), RPCRDMA__DRC_KEPT);
	}
	for (kept = 0, x = 30; x-- > 0;) {   /* newest first: a miss adds an entry */
		key_of(&k, 5000 + x, "10.0.0.3", 900, 7, xdr, 4);
		kept += rpcrdma__drc_lookup(d, &k, 40, &e) == RPCRDMA__DRC_KEPT;
	}
	CHECK_EQ_U(kept, 21);   /* its share: 64 / 3 */
	rpcrdma__drc_free(d);
}

/* Bytes bound the cache as entries do: the oldest replies go to keep a new one within
 * max_bytes. */
static void test_drc_bytes(void)
{
	struct rpcrdma__drc *d = rpcrdma__drc_new(100, 4096, 1000);
	struct rpcrdma__drc_ent *e;
	struct rpcrdma_svc_drc_stats st;
	uint8_t xdr[300] = { 0 };
	struct rpcrdma_reply_args a = { xdr, sizeof(xdr), NULL, 0 };
	struct rpcrdma__drc_key k;
	uint32_t x;

	for (x = 0; x < 5; x++) {
		key_of(&k, 10 + x, "10.0.0.1", 700, 7, xdr, 4);
		rpcrdma__drc_lookup(d, &k, x, &e);
		CHECK_EQ_I(rpcrdma__drc_keep(d, e, &a, x), 1);
	}
	rpcrdma__drc_stats(d, &st);
	CHECK_EQ_U(st.bytes, 900);
	CHECK_EQ_U(st.entries, 3);
	CHECK_EQ_U(st.evicted, 2);
	key_of(&k, 14, "10.0.0.1", 700, 7, xdr, 4);
	CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 10, &e), RPCRDMA__DRC_KEPT);
	key_of(&k, 11, "10.0.0.1", 700, 7, xdr, 4);
	CHECK_EQ_I(rpcrdma__drc_lookup(d, &k, 10, &e), RPCRDMA__DRC_NEW);
	rpcrdma__drc_free(d);
}

/* Sized by memory as knfsd sizes its cache: 64 entries per square root of the 4 KiB
 * pages, at least 1024 here, at most 256k. */
static void test_drc_sized_by_memory(void)
{
	CHECK_EQ_U(rpcrdma__drc_entries_for(0), 1024);
	CHECK_EQ_U(rpcrdma__drc_entries_for(64ull << 20), 64 * 128);         /* 16k pages */
	CHECK_EQ_U(rpcrdma__drc_entries_for(1ull << 30), 64 * 512);          /* 256k pages */
	CHECK_EQ_U(rpcrdma__drc_entries_for(24ull << 30), 64 * 2508);        /* 6M pages */
	CHECK_EQ_U(rpcrdma__drc_entries_for(1ull << 40), 256 * 1024);
	CHECK_EQ_U(rpcrdma__drc_entries_for((1ull << 30) + 4096), 64 * 512);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_drc_key);
	RUN(test_drc_running_then_kept);
	RUN(test_drc_too_long_and_forget);
	RUN(test_drc_bounded);
	RUN(test_drc_expires);
	RUN(test_drc_share);
	RUN(test_drc_bytes);
	RUN(test_drc_sized_by_memory);
	HARNESS_END();
}
