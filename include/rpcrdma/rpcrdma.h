/* SPDX-License-Identifier: BSD-2-Clause */
/* librpcrdma — ONC RPC over RDMA (RFC 5666 / RFC 8166). Umbrella header: the whole API of
 * the library (codec, providers, engine, capture, and the libtirpc CLIENT * / SVCXPRT *
 * layer). The NFSv3 binding (nfs3.h, its own library) and the test-only mock provider
 * (prov/mock/prov_mock.h, not installed) have headers of their own. */
#ifndef RPCRDMA_RPCRDMA_H
#define RPCRDMA_RPCRDMA_H

#include <rpcrdma/version.h>
#include "errors.h"
#include "codec.h"
#include "prov.h"
#include "engine.h"
#include "pcap.h"
#include "rpc.h"

#endif
