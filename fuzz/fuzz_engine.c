/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target: one message from a hostile peer, delivered to a server engine or to
 * a client engine with a call in flight (over the mock provider). Whatever the bytes,
 * the engine must not crash, must answer or drop, and must leave no registration behind
 * once the connection is closed.
 *
 * Input: byte 0 = mode bits (1: client, 2: read chunks in replies, 4: RDMA_MSGP,
 * 8: client: the message takes the XID of the call in flight), then the message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine_rig.h"
#include "prov_mock.h"

#define RAW_BUF 8192

struct fz {
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *ep, *raw;
	struct rpcrdma_eng *eng;
	uint8_t *mem;
	struct rpcrdma_mr *mr;
	int fatal;
};

static void on_request(void *ctx, struct rpcrdma_eng_req *r)
{
	struct fz *f = ctx;

	echo_answer(f->eng, r, 0, 0);
}

static void on_reply_done(void *ctx, struct rpcrdma_eng_req *r, int status)
{
	(void)ctx;
	(void)status;
	echo_reply_free(rpcrdma_eng_req_user(r));
}

static void on_call_done(void *ctx, struct rpcrdma_eng_call *c)
{
	(void)ctx;
	rpcrdma_eng_call_free(c);
}

static void on_fatal(void *ctx, int reason)
{
	(void)reason;
	((struct fz *)ctx)->fatal = 1;
}

static void pump(struct fz *f)
{
	struct rpcrdma_cqe c[8];
	int i, n, quiet = 0, rounds = 0;

	while (quiet < 3 && rounds++ < 1000 && !f->fatal) {
		n = rpcrdma_ep_poll(f->ep, c, 8);
		for (i = 0; i < n; i++)
			rpcrdma_eng_on_cqe(f->eng, &c[i], 0);
		/* the raw peer keeps its receives topped up and ignores what it gets */
		while (rpcrdma_ep_poll(f->raw, c, 1) == 1)
			if (c[0].op == RPCRDMA_OP_RECV && c[0].status == 0) {
				struct rpcrdma_sge sg = { f->mr, c[0].ctx, 2048 };

				rpcrdma_post_recv(f->raw, &sg, c[0].ctx);
				n++;
			}
		quiet = n > 0 ? 0 : quiet + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpcrdma_eng_config cfg;
	struct rpcrdma_eng_upper up;
	struct rpcrdma_eng_lower lo;
	struct rpcrdma_mock_stats ms;
	struct echo_slot slot;
	struct fz f;
	uint8_t mode;
	uint32_t len, i;

	if (size < 1)
		return 0;
	mode = data[0];
	data++;
	size--;
	len = size > 4096 ? 4096 : (uint32_t)size;
	memset(&f, 0, sizeof(f));
	memset(&up, 0, sizeof(up));
	memset(&slot, 0, sizeof(slot));
	if (rpcrdma_mock_open(&f.p))
		abort();
	rpcrdma_mock_pair(f.p, NULL, 0, NULL, 0, &f.ep, &f.raw);
	rpcrdma_eng_config_default(&cfg, (mode & 1) ? RPCRDMA_ENG_CLIENT : RPCRDMA_ENG_SERVER);
	cfg.reply_read_chunks = (mode & 2) != 0;
	if (mode & 4) {
		cfg.msgp_align = 64;
		cfg.msgp_thresh = 64;
	}
	up.ctx = &f;
	up.call_done = on_call_done;
	up.request = on_request;
	up.reply_done = on_reply_done;
	up.fatal = on_fatal;
	if (rpcrdma_eng_create(&cfg, &up, &f.eng))
		abort();
	rpcrdma_eng_set_peer_pdata(f.eng, NULL, 0);
	rpcrdma_eng_lower_ep(&lo, f.p, f.ep);
	rpcrdma_eng_start(f.eng, &lo, 0);
	f.mem = calloc(8, RAW_BUF);
	rpcrdma_mr_reg(f.p, f.mem, 8 * RAW_BUF, RPCRDMA_ACC_LOCAL, &f.mr);
	for (i = 1; i < 8; i++) {
		struct rpcrdma_sge sg = { f.mr, f.mem + i * RAW_BUF, 2048 };

		rpcrdma_post_recv(f.raw, &sg, sg.addr);
	}
	if (mode & 1) {
		echo_slot_setup(&slot, 0x1234, 3000, 1, 1, 20000);
		rpcrdma_eng_call(f.eng, &slot.a, &slot, 0, &slot.c);
		pump(&f);
	}
	if (len) {
		struct rpcrdma_sge sg = { f.mr, f.mem, len };

		memcpy(f.mem, data, len);
		if ((mode & 8) && len >= 4)
			put32(f.mem, 0x1234);
		rpcrdma_post_send(f.raw, &sg, NULL);
		pump(&f);
	}
	rpcrdma_eng_tick(f.eng, 1u << 30);
	rpcrdma_ep_close(f.ep);
	rpcrdma_ep_close(f.raw);
	rpcrdma_eng_destroy(f.eng);
	rpcrdma_mr_dereg(f.mr);
	rpcrdma_mock_get_stats(f.p, &ms);
	if (ms.mrs_live)
		abort();   /* a registration outlived its connection */
	rpcrdma_prov_close(f.p);
	free(f.mem);
	echo_slot_free(&slot);
	return 0;
}
