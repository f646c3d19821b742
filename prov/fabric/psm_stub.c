/* SPDX-License-Identifier: BSD-2-Clause */
/* Stand-ins for libpsm2.so.2 (built with PSM_STUB_PSM2) and libpsm_infinipath.so.1 (without),
 * loaded ahead of Debian's libfabric 1.17, which needs both (prov_fabric.c,
 * load_psm_stubs): the real ones' constructors calibrate a clock by sleeping at least
 * 100 ms each and take the program's signals, in every process that loads libfabric,
 * though we never use psm. Every function the providers call fails, as the libraries do
 * on a host without Omni-Path or InfiniPath hardware, so libfabric's psm and psm2
 * providers report themselves unusable and nothing else changes. The prototypes are not
 * the libraries' (their headers are not needed): arguments are ignored, and on the ABIs
 * we build for a callee that ignores them is called correctly. */
#include <stdint.h>

#define STUB_ERR 0x7fffffff   /* not PSM_OK, PSM_OK_NO_PROGRESS or any code they define */
#define STUB __attribute__((visibility("default")))   /* the project hides symbols */
#define FAIL(name) STUB int name(void); int name(void) { return STUB_ERR; }
/* the functions of both that return something else than an error code */
#define COMMON(p, lib)                                                               \
	STUB const char *p##_error_get_string(void);                                 \
	const char *p##_error_get_string(void)                                       \
	{                                                                            \
		return lib " left out by librpcrdma (RPCRDMA_LIBFABRIC_PSM=1 loads it)"; \
	}                                                                            \
	STUB void *p##_epaddr_getctxt(void);                                         \
	void *p##_epaddr_getctxt(void)                                               \
	{                                                                            \
		return 0;                                                            \
	}                                                                            \
	STUB void p##_epaddr_setctxt(void);                                          \
	void p##_epaddr_setctxt(void)                                                \
	{                                                                            \
	}

#ifdef PSM_STUB_PSM2
FAIL(psm2_am_get_parameters)
FAIL(psm2_am_get_source)
FAIL(psm2_am_register_handlers_2)
FAIL(psm2_am_reply_short)
FAIL(psm2_am_request_short)
FAIL(psm2_ep_close)
FAIL(psm2_ep_connect)
FAIL(psm2_ep_disconnect2)
FAIL(psm2_ep_epid_lookup2)
FAIL(psm2_ep_open)
FAIL(psm2_ep_open_opts_get_defaults)
FAIL(psm2_epaddr_to_epid)
FAIL(psm2_error_register_handler)
FAIL(psm2_finalize)
FAIL(psm2_info_query)
FAIL(psm2_init)
FAIL(psm2_mq_cancel)
FAIL(psm2_mq_improbe2)
FAIL(psm2_mq_imrecv)
FAIL(psm2_mq_init)
FAIL(psm2_mq_ipeek)
FAIL(psm2_mq_iprobe2)
FAIL(psm2_mq_irecv2)
FAIL(psm2_mq_isend2)
FAIL(psm2_mq_send2)
FAIL(psm2_mq_test2)
FAIL(psm2_mq_wait2)
FAIL(psm2_poll)
COMMON(psm2, "libpsm2")

STUB uint64_t psm2_get_capability_mask(void);
uint64_t psm2_get_capability_mask(void)
{
	return 0;
}
#else
FAIL(psm_am_get_parameters)
FAIL(psm_am_register_handlers)
FAIL(psm_am_reply_short)
FAIL(psm_am_request_short)
FAIL(psm_ep_close)
FAIL(psm_ep_connect)
FAIL(psm_ep_epid_lookup)
FAIL(psm_ep_num_devunits)
FAIL(psm_ep_open)
FAIL(psm_ep_open_opts_get_defaults)
FAIL(psm_error_register_handler)
FAIL(psm_finalize)
FAIL(psm_init)
FAIL(psm_mq_cancel)
FAIL(psm_mq_finalize)
FAIL(psm_mq_init)
FAIL(psm_mq_ipeek)
FAIL(psm_mq_iprobe)
FAIL(psm_mq_irecv)
FAIL(psm_mq_isend)
FAIL(psm_mq_send)
FAIL(psm_mq_test)
COMMON(psm, "libpsm_infinipath")
#endif
