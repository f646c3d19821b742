/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal to the verbs back end: the librdmacm and libibverbs functions it calls,
 * reached through pointers filled when the back end is first opened (dl.h), as
 * fabric_dl.h does for libfabric. Included after rdma-core's headers. ibv_reg_mr is a
 * macro there (it picks ibv_reg_mr_iova2 for optional access flags, which this back end
 * never asks for): here it is the plain function. */
#ifndef RPCRDMA_VERBS_DL_H
#define RPCRDMA_VERBS_DL_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "dl.h"

#define RPCRDMA__IBV_FNS(X) \
	X(ibv_ack_cq_events) X(ibv_alloc_pd) X(ibv_create_comp_channel) X(ibv_create_cq) \
	X(ibv_dealloc_pd) X(ibv_dereg_mr) X(ibv_destroy_comp_channel) X(ibv_destroy_cq) \
	X(ibv_get_cq_event) X(ibv_get_device_name) X(ibv_modify_qp) X(ibv_query_device) \
	X(ibv_reg_mr)
#define RPCRDMA__RDMACM_FNS(X) \
	X(rdma_accept) X(rdma_ack_cm_event) X(rdma_bind_addr) X(rdma_connect) \
	X(rdma_create_event_channel) X(rdma_create_id) X(rdma_create_qp) \
	X(rdma_destroy_event_channel) X(rdma_destroy_id) X(rdma_destroy_qp) X(rdma_disconnect) \
	X(rdma_free_devices) X(rdma_get_cm_event) X(rdma_get_devices) X(rdma_get_src_port) \
	X(rdma_listen) X(rdma_migrate_id) X(rdma_reject) X(rdma_resolve_addr) \
	X(rdma_resolve_route) X(rdma_set_option)

#define RPCRDMA__FN_SLOT(n) __typeof__(n) *n;
struct rpcrdma__ibv_fns {
	RPCRDMA__IBV_FNS(RPCRDMA__FN_SLOT)
};
struct rpcrdma__rdmacm_fns {
	RPCRDMA__RDMACM_FNS(RPCRDMA__FN_SLOT)
};
#undef RPCRDMA__FN_SLOT
#ifndef RPCRDMA_DL_PROBE   /* cmake/dl_probe.c: the lists alone */
extern struct rpcrdma__ibv_fns rpcrdma__ibv_fns;
extern struct rpcrdma__rdmacm_fns rpcrdma__rdmacm_fns;

/* Loads libibverbs and librdmacm once; 0 or -RPCRDMA_ERR_NOPROV with the reason. */
int rpcrdma__verbs_load(char *err, size_t errlen);

#undef ibv_reg_mr
#define ibv_ack_cq_events (*rpcrdma__ibv_fns.ibv_ack_cq_events)
#define ibv_alloc_pd (*rpcrdma__ibv_fns.ibv_alloc_pd)
#define ibv_create_comp_channel (*rpcrdma__ibv_fns.ibv_create_comp_channel)
#define ibv_create_cq (*rpcrdma__ibv_fns.ibv_create_cq)
#define ibv_dealloc_pd (*rpcrdma__ibv_fns.ibv_dealloc_pd)
#define ibv_dereg_mr (*rpcrdma__ibv_fns.ibv_dereg_mr)
#define ibv_destroy_comp_channel (*rpcrdma__ibv_fns.ibv_destroy_comp_channel)
#define ibv_destroy_cq (*rpcrdma__ibv_fns.ibv_destroy_cq)
#define ibv_get_cq_event (*rpcrdma__ibv_fns.ibv_get_cq_event)
#define ibv_get_device_name (*rpcrdma__ibv_fns.ibv_get_device_name)
#define ibv_modify_qp (*rpcrdma__ibv_fns.ibv_modify_qp)
#define ibv_query_device (*rpcrdma__ibv_fns.ibv_query_device)
#define ibv_reg_mr (*rpcrdma__ibv_fns.ibv_reg_mr)
#define rdma_accept (*rpcrdma__rdmacm_fns.rdma_accept)
#define rdma_ack_cm_event (*rpcrdma__rdmacm_fns.rdma_ack_cm_event)
#define rdma_bind_addr (*rpcrdma__rdmacm_fns.rdma_bind_addr)
#define rdma_connect (*rpcrdma__rdmacm_fns.rdma_connect)
#define rdma_create_event_channel (*rpcrdma__rdmacm_fns.rdma_create_event_channel)
#define rdma_create_id (*rpcrdma__rdmacm_fns.rdma_create_id)
#define rdma_create_qp (*rpcrdma__rdmacm_fns.rdma_create_qp)
#define rdma_destroy_event_channel (*rpcrdma__rdmacm_fns.rdma_destroy_event_channel)
#define rdma_destroy_id (*rpcrdma__rdmacm_fns.rdma_destroy_id)
#define rdma_destroy_qp (*rpcrdma__rdmacm_fns.rdma_destroy_qp)
#define rdma_disconnect (*rpcrdma__rdmacm_fns.rdma_disconnect)
#define rdma_free_devices (*rpcrdma__rdmacm_fns.rdma_free_devices)
#define rdma_get_cm_event (*rpcrdma__rdmacm_fns.rdma_get_cm_event)
#define rdma_get_devices (*rpcrdma__rdmacm_fns.rdma_get_devices)
#define rdma_get_src_port (*rpcrdma__rdmacm_fns.rdma_get_src_port)
#define rdma_listen (*rpcrdma__rdmacm_fns.rdma_listen)
#define rdma_migrate_id (*rpcrdma__rdmacm_fns.rdma_migrate_id)
#define rdma_reject (*rpcrdma__rdmacm_fns.rdma_reject)
#define rdma_resolve_addr (*rpcrdma__rdmacm_fns.rdma_resolve_addr)
#define rdma_resolve_route (*rpcrdma__rdmacm_fns.rdma_resolve_route)
#define rdma_set_option (*rpcrdma__rdmacm_fns.rdma_set_option)

#endif /* RPCRDMA_DL_PROBE */

#endif
