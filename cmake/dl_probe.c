/* SPDX-License-Identifier: BSD-2-Clause */
/* Built and linked at configure time against the libraries the back ends load on first
 * use (prov/dl.h): the symbol versions its references get ("fi_getinfo@FABRIC_1.3") are
 * the ones the back ends look up, so they get the functions their headers describe. */
#define RPCRDMA_DL_PROBE
#include "fabric_dl.h"
#ifdef RPCRDMA_HAVE_VERBS
#include "verbs_dl.h"
#endif

#define ADDR(n) (void (*)(void))&n,
static void (*volatile keep[])(void) = {
	RPCRDMA__FABRIC_FNS(ADDR)
#ifdef RPCRDMA_HAVE_VERBS
	RPCRDMA__IBV_FNS(ADDR) RPCRDMA__RDMACM_FNS(ADDR)
#endif
};

int main(void)
{
	return keep[0] == 0;
}
