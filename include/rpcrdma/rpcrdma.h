/* librpcrdma — ONC RPC over RDMA (RFC 5666 / RFC 8166). Umbrella header. */
#ifndef RPCRDMA_RPCRDMA_H
#define RPCRDMA_RPCRDMA_H

#include "errors.h"
#include "codec.h"
#include "prov.h"
#include "engine.h"
#include "pcap.h"

#define RPCRDMA_LIB_VERSION "0.1.0"

#endif
