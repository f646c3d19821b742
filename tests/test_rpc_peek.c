/* SPDX-License-Identifier: BSD-2-Clause */
/* ONC RPC header peek (RFC 5531 §9) over hand-written calls and replies. */
#include "harness.h"
#include "rpcrdma/codec.h"

#define W(x) (uint8_t)((uint32_t)(x) >> 24), (uint8_t)((uint32_t)(x) >> 16), \
	     (uint8_t)((uint32_t)(x) >> 8), (uint8_t)(x)

/* Call with an AUTH_SYS credential (RFC 5531 §14): stamp, machine "box", uid, gid, no gids. */
static const uint8_t call_auth_sys[] = {
	W(0x99), W(0), W(2), W(100003), W(3), W(6),
	W(1), W(24), W(12345), W(3), 'b', 'o', 'x', 0, W(1000), W(1000), W(0),
	W(0), W(0),
	W(0xfeedf00d),                    /* first argument word */
};

static const uint8_t reply_prog_mismatch[] = {
	W(0x99), W(1), W(0), W(0), W(0), W(2), W(2), W(4),
};

static const uint8_t reply_rpc_mismatch[] = { W(0x99), W(1), W(1), W(0), W(2), W(2) };
static const uint8_t reply_auth_error[] = { W(0x99), W(1), W(1), W(1), W(5) };
static const uint8_t reply_garbage_args[] = { W(0x99), W(1), W(0), W(0), W(0), W(4) };

static void test_call(void)
{
	struct rpcrdma_rpc_info ri;

	CHECK_EQ_I(rpcrdma_rpc_peek(call_auth_sys, sizeof(call_auth_sys), &ri), 0);
	CHECK_EQ_U(ri.xid, 0x99);
	CHECK_EQ_U(ri.msg_type, RPCRDMA_RPC_CALL);
	CHECK_EQ_U(ri.rpcvers, 2);
	CHECK_EQ_U(ri.prog, 100003);
	CHECK_EQ_U(ri.vers, 3);
	CHECK_EQ_U(ri.proc, 6);
	CHECK_EQ_U(ri.cred_flavor, 1);
	CHECK_EQ_U(ri.verf_flavor, 0);
	CHECK_EQ_U(ri.hdr_len, sizeof(call_auth_sys) - 4);
}

static void test_replies(void)
{
	struct rpcrdma_rpc_info ri;

	CHECK_EQ_I(rpcrdma_rpc_peek(reply_prog_mismatch, sizeof(reply_prog_mismatch), &ri), 0);
	CHECK_EQ_U(ri.msg_type, RPCRDMA_RPC_REPLY);
	CHECK_EQ_U(ri.reply_stat, 0);
	CHECK_EQ_U(ri.accept_stat, 2);
	CHECK_EQ_U(ri.mismatch_low, 2);
	CHECK_EQ_U(ri.mismatch_high, 4);
	CHECK_EQ_I(rpcrdma_rpc_peek(reply_rpc_mismatch, sizeof(reply_rpc_mismatch), &ri), 0);
	CHECK_EQ_U(ri.reply_stat, 1);
	CHECK_EQ_U(ri.reject_stat, 0);
	CHECK_EQ_U(ri.mismatch_low, 2);
	CHECK_EQ_I(rpcrdma_rpc_peek(reply_auth_error, sizeof(reply_auth_error), &ri), 0);
	CHECK_EQ_U(ri.reject_stat, 1);
	CHECK_EQ_U(ri.auth_stat, 5);
	CHECK_EQ_I(rpcrdma_rpc_peek(reply_garbage_args, sizeof(reply_garbage_args), &ri), 0);
	CHECK_EQ_U(ri.accept_stat, 4);
	CHECK_EQ_U(ri.hdr_len, 24);
}

static void test_truncated_and_bad(void)
{
	static const uint8_t bad_type[] = { W(1), W(2) };
	static const uint8_t bad_auth_len[] = {
		W(1), W(0), W(2), W(1), W(1), W(1), W(1), W(401),
	};
	static const uint8_t bad_accept[] = { W(1), W(1), W(0), W(0), W(0), W(6) };
	static const uint8_t bad_reject[] = { W(1), W(1), W(1), W(2) };
	struct rpcrdma_rpc_info ri;
	size_t cut;

	for (cut = 0; cut < sizeof(call_auth_sys) - 4; cut++)
		CHECK_ERR(rpcrdma_rpc_peek(call_auth_sys, cut, &ri), RPCRDMA_ERR_PROTO);
	for (cut = 0; cut < sizeof(reply_prog_mismatch); cut++)
		CHECK_ERR(rpcrdma_rpc_peek(reply_prog_mismatch, cut, &ri), RPCRDMA_ERR_PROTO);
	CHECK_ERR(rpcrdma_rpc_peek(call_auth_sys, 24, &ri), RPCRDMA_ERR_PROTO);
	CHECK_EQ_U(ri.proc, 6); /* what was read before the cut is still reported */
	CHECK_ERR(rpcrdma_rpc_peek(bad_type, sizeof(bad_type), &ri), RPCRDMA_ERR_PROTO);
	CHECK_ERR(rpcrdma_rpc_peek(bad_auth_len, sizeof(bad_auth_len), &ri), RPCRDMA_ERR_PROTO);
	CHECK_ERR(rpcrdma_rpc_peek(bad_accept, sizeof(bad_accept), &ri), RPCRDMA_ERR_PROTO);
	CHECK_ERR(rpcrdma_rpc_peek(bad_reject, sizeof(bad_reject), &ri), RPCRDMA_ERR_PROTO);
	CHECK_ERR(rpcrdma_rpc_peek(NULL, 8, &ri), RPCRDMA_ERR_INVAL);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_call);
	RUN(test_replies);
	RUN(test_truncated_and_bad);
	HARNESS_END();
}
