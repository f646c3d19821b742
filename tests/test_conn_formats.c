/* SPDX-License-Identifier: BSD-2-Clause */
/* RFC 8797 private data and RFC 5666 §6.2 CONF_RDMA XDR. */
#include "harness.h"
#include "rpcrdma/codec.h"

static void test_pdata_vector(void)
{
	/* format id, version 1, remote invalidation, send 4 KiB (3), receive 1 KiB (0) */
	static const uint8_t want[8] = { 0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 0 };
	struct rpcrdma_pdata pd = { 1, RPCRDMA_PDATA_F_REMOTE_INV, 4096, 1024, 0 }, back;
	uint8_t out[8];

	CHECK_EQ_U(rpcrdma_pdata_encode(&pd, out, sizeof(out)), 8);
	CHECK(memcmp(out, want, 8) == 0);
	CHECK_EQ_I(rpcrdma_pdata_decode(want, 8, &back), 0);
	CHECK_EQ_U(back.version, 1);
	CHECK_EQ_U(back.flags, 1);
	CHECK_EQ_U(back.send_size, 4096);
	CHECK_EQ_U(back.recv_size, 1024);
}

static void test_pdata_limits(void)
{
	struct rpcrdma_pdata pd = { 1, 0, 256 * 1024, 1024, 0 }, back;
	uint8_t out[16];

	CHECK_EQ_U(rpcrdma_pdata_encode(&pd, out, sizeof(out)), 8);
	CHECK_EQ_U(out[6], 255);
	/* fabrics may pad private data: a longer block is read */
	memset(out + 8, 0xee, 8);
	CHECK_EQ_I(rpcrdma_pdata_decode(out, 16, &back), 0);
	CHECK_EQ_U(back.send_size, 256 * 1024);
	pd.send_size = 1000;
	CHECK_ERR(rpcrdma_pdata_encode(&pd, out, sizeof(out)), RPCRDMA_ERR_RANGE);
	pd.send_size = 257 * 1024;
	CHECK_ERR(rpcrdma_pdata_encode(&pd, out, sizeof(out)), RPCRDMA_ERR_RANGE);
	pd.send_size = 0;
	CHECK_ERR(rpcrdma_pdata_encode(&pd, out, sizeof(out)), RPCRDMA_ERR_RANGE);
	pd.send_size = 4096;
	CHECK_ERR(rpcrdma_pdata_encode(&pd, out, 7), RPCRDMA_ERR_NOSPC);
}

/* Another format, another version, or too short: ignored, defaults of 1024 each way. */
static void test_pdata_ignored(void)
{
	static const uint8_t other_fmt[8] = { 0xf6, 0xab, 0x0e, 0x19, 1, 0, 3, 3 };
	static const uint8_t other_ver[8] = { 0xf6, 0xab, 0x0e, 0x18, 2, 0, 3, 3 };
	struct rpcrdma_pdata back;

	CHECK_ERR(rpcrdma_pdata_decode(other_fmt, 8, &back), RPCRDMA_ERR_PROTO);
	CHECK_EQ_U(back.send_size, RPCRDMA_DEF_INLINE);
	CHECK_EQ_U(back.recv_size, RPCRDMA_DEF_INLINE);
	CHECK_ERR(rpcrdma_pdata_decode(other_ver, 8, &back), RPCRDMA_ERR_PROTO);
	CHECK_EQ_U(back.send_size, RPCRDMA_DEF_INLINE);
	CHECK_ERR(rpcrdma_pdata_decode(other_ver, 7, &back), RPCRDMA_ERR_PROTO);
	CHECK_ERR(rpcrdma_pdata_decode(NULL, 0, &back), RPCRDMA_ERR_PROTO);
	CHECK_EQ_U(back.recv_size, RPCRDMA_DEF_INLINE);
}

/* The extension block rides after RFC 8797's; an RFC 8797-only peer sees its 8 bytes
 * unchanged, and a block padded with zeros (IB CM pads private data to 56 bytes) or with
 * an unknown format or version carries no extension. */
static void test_pdata_extension(void)
{
	static const uint8_t want[16] = { 0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3,
					  0x52, 0x52, 0x44, 0x58, 1, RPCRDMA_PDATA_X_REPLY_READS, 0, 0 };
	struct rpcrdma_pdata pd = { 1, 0, 4096, 4096, RPCRDMA_PDATA_X_REPLY_READS }, back;
	uint8_t out[56];

	CHECK_ERR(rpcrdma_pdata_encode(&pd, out, 15), RPCRDMA_ERR_NOSPC);
	memset(out, 0, sizeof(out));
	CHECK_EQ_U(rpcrdma_pdata_encode(&pd, out, sizeof(out)), 16);
	CHECK(memcmp(out, want, 16) == 0);
	CHECK_EQ_I(rpcrdma_pdata_decode(out, 56, &back), 0);
	CHECK_EQ_U(back.ext_flags, RPCRDMA_PDATA_X_REPLY_READS);
	CHECK_EQ_U(back.recv_size, 4096);
	/* the RFC 8797 part alone, as a peer that reads only 8 bytes takes it */
	CHECK_EQ_I(rpcrdma_pdata_decode(out, 8, &back), 0);
	CHECK_EQ_U(back.ext_flags, 0);
	CHECK_EQ_I(rpcrdma_pdata_decode(out, 15, &back), 0);
	CHECK_EQ_U(back.ext_flags, 0);
	out[12] = 2;   /* unknown extension version */
	CHECK_EQ_I(rpcrdma_pdata_decode(out, 16, &back), 0);
	CHECK_EQ_U(back.ext_flags, 0);
	out[12] = 1;
	out[11] ^= 1;  /* another format */
	CHECK_EQ_I(rpcrdma_pdata_decode(out, 16, &back), 0);
	CHECK_EQ_U(back.ext_flags, 0);
	pd.ext_flags = 0;
	memset(out, 0, sizeof(out));
	CHECK_EQ_U(rpcrdma_pdata_encode(&pd, out, sizeof(out)), 8);
	CHECK_EQ_I(rpcrdma_pdata_decode(out, 56, &back), 0);   /* zero padding */
	CHECK_EQ_U(back.ext_flags, 0);
}

static void test_ccp(void)
{
	static const uint8_t args_bytes[12] = { 0, 0, 0x10, 0, 0, 0, 0x20, 0, 0, 0, 0, 4 };
	struct rpcrdma_ccp_args a = { 4096, 8192, 4 }, ab;
	struct rpcrdma_ccp_res r = { 4096, 4096, 16 }, rb;
	uint8_t out[12];

	CHECK_EQ_U(rpcrdma_ccp_args_encode(&a, out, sizeof(out)), 12);
	CHECK(memcmp(out, args_bytes, 12) == 0);
	CHECK_EQ_U(rpcrdma_ccp_args_decode(out, 12, &ab), 12);
	CHECK_EQ_U(ab.maxreply_sendsize, 8192);
	CHECK_EQ_U(rpcrdma_ccp_res_encode(&r, out, sizeof(out)), 12);
	CHECK_EQ_U(rpcrdma_ccp_res_decode(out, 12, &rb), 12);
	CHECK_EQ_U(rb.align, 4096);
	CHECK_EQ_U(rb.maxrdmaread, 16);
	CHECK_ERR(rpcrdma_ccp_res_decode(out, 11, &rb), RPCRDMA_ERR_PROTO);
	CHECK_ERR(rpcrdma_ccp_args_encode(&a, out, 11), RPCRDMA_ERR_NOSPC);
	CHECK_ERR(rpcrdma_ccp_args_decode(out, 12, NULL), RPCRDMA_ERR_INVAL);
}

static void test_strerror(void)
{
	CHECK(strcmp(rpcrdma_strerror(-RPCRDMA_ERR_PROTO), "malformed message from peer") == 0);
	CHECK(strcmp(rpcrdma_strerror(-9999), "unknown error") == 0);
	CHECK(strcmp(rpcrdma_proc_name(RPCRDMA_MSGP), "RDMA_MSGP") == 0);
	CHECK(rpcrdma_proc_name(5) == NULL);
	CHECK(strcmp(rpcrdma_reason_str(RPCRDMA_REASON_COUNT), "unknown reason") == 0);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(test_pdata_vector);
	RUN(test_pdata_limits);
	RUN(test_pdata_ignored);
	RUN(test_pdata_extension);
	RUN(test_ccp);
	RUN(test_strerror);
	HARNESS_END();
}
