/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared by the RPC layer's test server and client: the binding that marks RT_ECHO's data
 * DDP-eligible, and the data pattern. */
#ifndef RT_COMMON_H
#define RT_COMMON_H

#include <stdint.h>

#include "rpcrdma/rpcrdma.h"
#include "rpctest.h"

/* A hash of (seed, i): no run of bytes repeats elsewhere, in this seed's data or
 * another's, so a piece of it found in a capture came from that very place. */
static inline uint8_t rt_byte(uint32_t seed, uint32_t i)
{
	uint32_t x = seed * 0x9e3779b1u ^ (i >> 2) * 0x85ebca77u;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	x *= 0x297a2d39u;
	x ^= x >> 15;
	return (uint8_t)(x >> ((i & 3) * 8));
}

static inline void rt_fill(char *d, uint32_t seed, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		d[i] = (char)rt_byte(seed, i);
}

static inline int rt_check(const char *d, uint32_t seed, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if ((uint8_t)d[i] != rt_byte(seed, i))
			return 0;
	return 1;
}

/* RT_ECHO with its data as a DDP item both ways (RFC 5666 §3.4: the binding decides). */
static inline bool_t xdr_rt_echo_args_ddp(XDR *x, rt_echo_args *a)
{
	return xdr_u_int(x, &a->seed) && xdr_u_int(x, &a->reply_len) &&
	       xdr_rdma_ddp_bytes(x, &a->data.rt_data_val, &a->data.rt_data_len, RT_MAX);
}

static inline bool_t xdr_rt_data_ddp(XDR *x, rt_data *d)
{
	return xdr_rdma_ddp_bytes(x, &d->rt_data_val, &d->rt_data_len, RT_MAX);
}

/* The result's size is known from the arguments (as an NFS READ's count): a write chunk
 * of exactly that size. */
static inline uint32_t rt_echo_res_size(const void *args)
{
	const rt_echo_args *a = (const rt_echo_args *)args;

	return a->reply_len == ~0u ? a->data.rt_data_len : a->reply_len;
}

static const struct rpcrdma_ulb_proc rt_ulb_procs[] = {
	{ RT_ECHO, (xdrproc_t)xdr_rt_echo_args_ddp, (xdrproc_t)xdr_rt_data_ddp, 0, 1, 0,
	  rt_echo_res_size, NULL, NULL },
};

static const struct rpcrdma_ulb rt_ulb = { RT_PROG, RT_V1, rt_ulb_procs, 1 };

#endif
