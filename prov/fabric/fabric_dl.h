/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal to the libfabric back end: the libfabric functions it calls, reached through
 * pointers filled when the back end is first opened (dl.h), so that librpcrdma does not
 * load libfabric.so.1 until a program asks for one of its providers. Included after
 * libfabric's headers: each name below then means the pointer. The inline functions of
 * those headers (fi_endpoint(), fi_send(), ...) call through libfabric's own tables and
 * need nothing here; one that calls an exported function (fi_allocinfo()) must not be
 * used: the build's check (nm, tests/test_lazy_libs.sh) finds it. */
#ifndef RPCRDMA_FABRIC_DL_H
#define RPCRDMA_FABRIC_DL_H

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "dl.h"

#define RPCRDMA__FABRIC_FNS(X) \
	X(fi_getinfo) X(fi_freeinfo) X(fi_dupinfo) X(fi_fabric) X(fi_strerror) X(fi_version)

struct rpcrdma__fabric_fns {
#define RPCRDMA__FN_SLOT(n) __typeof__(n) *n;
	RPCRDMA__FABRIC_FNS(RPCRDMA__FN_SLOT)
#undef RPCRDMA__FN_SLOT
};
#ifndef RPCRDMA_DL_PROBE   /* cmake/dl_probe.c: the lists alone */
extern struct rpcrdma__fabric_fns rpcrdma__fabric_fns;

/* Loads libfabric once; 0 or -RPCRDMA_ERR_NOPROV with the reason in err. */
int rpcrdma__fabric_load(char *err, size_t errlen);
/* The same, for a provider about to open (a psm one keeps libfabric's psm libraries). */
int rpcrdma__fabric_load_for(const char *prov, char *err, size_t errlen);

#define fi_getinfo (*rpcrdma__fabric_fns.fi_getinfo)
#define fi_freeinfo (*rpcrdma__fabric_fns.fi_freeinfo)
#define fi_dupinfo (*rpcrdma__fabric_fns.fi_dupinfo)
#define fi_fabric (*rpcrdma__fabric_fns.fi_fabric)
#define fi_strerror (*rpcrdma__fabric_fns.fi_strerror)
#define fi_version (*rpcrdma__fabric_fns.fi_version)

#endif /* RPCRDMA_DL_PROBE */

#endif
