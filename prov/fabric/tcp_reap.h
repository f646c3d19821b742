/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal to prov/: closing sockets libfabric's tcp listener lost track of (tcp_reap.c). */
#ifndef RPCRDMA_TCP_REAP_H
#define RPCRDMA_TCP_REAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* A live connection of the listener: its two ends, as the kernel sees them. */
struct rpcrdma__tcp_pair {
	struct sockaddr_storage local, peer;
};

struct rpcrdma__reap_seen {
	uint64_t inode;
	int64_t since;     /* first seen in CLOSE-WAIT */
	int mark;
};

struct rpcrdma__tcp_reaper {
	struct rpcrdma__reap_seen *seen;
	uint32_t nseen, cap;
	uint64_t reaped;   /* sockets closed so far */
};

/* Close this process's sockets on `port` that have been in CLOSE-WAIT for a while and are
 * none of `live`. Call now and then (a netlink query; /proc where that fails). */
void rpcrdma__tcp_reap(struct rpcrdma__tcp_reaper *rp, uint16_t port,
		       const struct rpcrdma__tcp_pair *live, size_t nlive, int64_t now);
void rpcrdma__tcp_reaper_free(struct rpcrdma__tcp_reaper *rp);

#endif
