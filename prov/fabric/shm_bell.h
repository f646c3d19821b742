/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal: the doorbell of an emulated (shm) connection, so that a side with nothing to
 * do can sleep in the kernel instead of polling (prov/fabric/shm_bell.c, docs/PROVIDERS.md). */
#ifndef RPCRDMA_SHM_BELL_H
#define RPCRDMA_SHM_BELL_H

#include <stddef.h>
#include <stdint.h>

#define RPCRDMA__BELL_FILE_MAX 48

struct rpcrdma__bell_page;

struct rpcrdma__bell {
	int rx;                          /* ours: a datagram socket a ring makes readable */
	int tx;                          /* connected to the peer's rx, or -1 */
	struct rpcrdma__bell_page *pg;   /* shared with the peer: who sleeps; or NULL */
	int side;                        /* 0: the accepting side, 1: the connecting side */
	char file[RPCRDMA__BELL_FILE_MAX];   /* the acceptor's page file while it is named */
};

/* No bell yet (all descriptors -1). */
void rpcrdma__bell_init(struct rpcrdma__bell *b);
/* Bind rx to the name derived from our endpoint's provider name. */
int rpcrdma__bell_open(struct rpcrdma__bell *b, const void *own, size_t len);
/* Connect tx to the peer's rx (its provider name); again to another peer's. */
int rpcrdma__bell_connect(struct rpcrdma__bell *b, const void *peer, size_t len);
/* Acceptor, connected: create the shared page; its file name (for ACCEPT) to name. */
int rpcrdma__bell_share(struct rpcrdma__bell *b, char *name, size_t cap);
/* Connector, connected: map the acceptor's page (and remove its name). */
int rpcrdma__bell_join(struct rpcrdma__bell *b, const void *name, size_t len);
/* 0: marked asleep, a ring will come (the caller then looks for work once more and
 * sleeps on rx); -1: the peer cannot ring us. */
int rpcrdma__bell_arm(struct rpcrdma__bell *b);
/* Awake again: not asleep any more, rings spent. */
void rpcrdma__bell_disarm(struct rpcrdma__bell *b);
/* After posting to the peer: wake it if it sleeps. */
void rpcrdma__bell_ring(struct rpcrdma__bell *b);
/* Read what rang rx; the number of rings. */
int rpcrdma__bell_drain(struct rpcrdma__bell *b);
void rpcrdma__bell_close(struct rpcrdma__bell *b);
/* One ring, whether the peer sleeps or not (a listener, which has no page). */
void rpcrdma__bell_knock(struct rpcrdma__bell *b);

#endif
