/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal: the provider ops table every implementation fills, and helpers they share. */
#ifndef RPCRDMA_PROV_INT_H
#define RPCRDMA_PROV_INT_H

#include <pthread.h>

#include "rpcrdma/prov.h"

struct rpcrdma_prov_ops {
	void (*close)(struct rpcrdma_prov *p);
	int (*listen)(struct rpcrdma_prov *p, const char *host, uint16_t port,
		      struct rpcrdma_listener **out);
	int (*listener_get)(struct rpcrdma_listener *l, int timeout_ms, struct rpcrdma_connreq **out);
	int (*listener_fd)(const struct rpcrdma_listener *l);
	void (*listener_close)(struct rpcrdma_listener *l);
	/* one step; not needed (NULL) where accept_prepare/accept_finish are given */
	int (*accept)(struct rpcrdma_connreq *r, const void *pdata, size_t len, int timeout_ms,
		      struct rpcrdma_ep **out);
	void (*reject)(struct rpcrdma_connreq *r, const void *pdata, size_t len);
	int (*connect)(struct rpcrdma_prov *p, const char *host, uint16_t port, const void *pdata,
		       size_t len, int timeout_ms, struct rpcrdma_ep **out);
	void (*ep_close)(struct rpcrdma_ep *ep);
	int (*mr_reg)(struct rpcrdma_prov *p, void *addr, size_t len, unsigned access,
		      struct rpcrdma_mr **out);
	int (*mr_dereg)(struct rpcrdma_mr *mr);
	int (*post_recv)(struct rpcrdma_ep *ep, const struct rpcrdma_sge *sge, void *ctx);
	int (*post_send)(struct rpcrdma_ep *ep, const struct rpcrdma_sge *sge, void *ctx);
	/* optional, with caps.remote_inv 1: a Send that invalidates the peer's handle */
	int (*post_send_inv)(struct rpcrdma_ep *ep, const struct rpcrdma_sge *sge,
			     uint32_t handle, void *ctx);
	int (*post_rma)(struct rpcrdma_ep *ep, uint32_t op, const struct rpcrdma_sge *local,
			uint32_t nlocal, const struct rpcrdma_segment *remote, uint32_t nremote,
			void *ctx);
	int (*poll)(struct rpcrdma_ep *ep, struct rpcrdma_cqe *out, int max);
	int (*wait)(struct rpcrdma_ep *ep, int timeout_ms);
	int (*ep_fd)(const struct rpcrdma_ep *ep);
	/* optional: the address a listener is bound to */
	int (*listener_addr)(const struct rpcrdma_listener *l, void *addr, size_t *len);
	/* optional: the peer's network address */
	int (*peer_addr)(struct rpcrdma_ep *ep, void *addr, size_t *len);
	/* optional: the endpoint's own and its peer's provider names (sockaddrs for MSG
	 * endpoints), which both sides of a connection see alike; for capture */
	int (*names)(struct rpcrdma_ep *ep, void *local, size_t *llen, void *peer, size_t *plen);
	/* optional: 0 when it is safe to sleep on the descriptor (nothing is pending that
	 * would not wake it), -RPCRDMA_ERR_AGAIN when there is work to poll first */
	int (*ep_arm)(struct rpcrdma_ep *ep);
	int (*listener_arm)(struct rpcrdma_listener *l);
	/* optional: after a sleep armed on its descriptor, whether that descriptor fired */
	void (*ep_slept)(struct rpcrdma_ep *ep, int fired);
	/* optional: read a shared completion queue for its endpoints */
	int (*listener_drain)(struct rpcrdma_listener *l);
	/* optional: make ready what the next accept needs (see rpcrdma_listener_prepare) */
	int (*listener_prepare)(struct rpcrdma_listener *l);
	/* optional, both or neither: accept in two steps (rpcrdma_accept_prepare); prepare
	 * consumes the request whatever it returns, finish leaves the endpoint to close */
	int (*accept_prepare)(struct rpcrdma_connreq *r, struct rpcrdma_ep **out);
	int (*accept_finish)(struct rpcrdma_ep *ep, const void *pdata, size_t len, int timeout_ms);
	/* optional, all three or none: long-lived memory (rpcrdma_mem_add), and registration
	 * for one endpoint, which may bind a window there; mr_dereg releases either */
	int (*mem_add)(struct rpcrdma_prov *p, void *addr, size_t len);
	int (*mem_remove)(struct rpcrdma_prov *p, void *addr);
	int (*ep_mr_reg)(struct rpcrdma_ep *ep, void *addr, size_t len, unsigned access,
			 struct rpcrdma_mr **out);
};

/* Every implementation's objects start with these. */
struct rpcrdma_prov {
	const struct rpcrdma_prov_ops *ops;
	struct rpcrdma_prov_caps caps;
};

struct rpcrdma_listener {
	struct rpcrdma_prov *prov;
	uint16_t port;
};

struct rpcrdma_connreq {
	struct rpcrdma_prov *prov;
	uint8_t pdata[RPCRDMA_PDATA_MAX];
	size_t pdata_len;
};

struct cap_ep;

struct rpcrdma_ep {
	struct rpcrdma_prov *prov;
	int connected;
	uint8_t peer_pdata[RPCRDMA_PDATA_MAX];
	size_t peer_pdata_len;
	/* set by prov.c: which side connected, what we sent, and the capture if any */
	int active;
	uint8_t my_pdata[RPCRDMA_PDATA_MAX];
	size_t my_pdata_len;
	struct cap_ep *cap;
};

/* Steering tags we choose ourselves: random 32-bit values (RFC 5042: unpredictable),
 * never one of the last RPCRDMA_KEY_QUARANTINE released, so a stale reference from a
 * peer cannot reach a new registration soon after. */
#define RPCRDMA_KEY_QUARANTINE 1024
/* Random values are fetched this many at a time: one getrandom() per registration was a
 * system call per RPC on each side. */
#define RPCRDMA_KEY_BATCH 64
/* How many of the quarantined keys fall in each of 2^RPCRDMA_KEY_FILTER_BITS buckets (255:
 * too many to count, for good): a key whose bucket holds none is not quarantined, which
 * spares most new keys the look through all 1,024 (8.5% of a client's time at 4 KiB). */
#define RPCRDMA_KEY_FILTER_BITS 13
struct rpcrdma__keys {
	pthread_mutex_t lock;
	uint32_t recent[RPCRDMA_KEY_QUARANTINE];
	uint32_t next;
	uint8_t in_bucket[1u << RPCRDMA_KEY_FILTER_BITS];
	uint32_t fresh[RPCRDMA_KEY_BATCH];   /* from getrandom(), not yet used */
	uint32_t nfresh;
};
void rpcrdma__keys_init(struct rpcrdma__keys *k);
uint32_t rpcrdma__key_new(struct rpcrdma__keys *k);
void rpcrdma__key_release(struct rpcrdma__keys *k, uint32_t key);

/* Check an RMA request: lengths positive, sums equal, no more pieces than the limits. */
int rpcrdma__rma_check(const struct rpcrdma_sge *local, uint32_t nlocal,
		       const struct rpcrdma_segment *remote, uint32_t nremote, uint64_t *total);

int rpcrdma__prov_fabric_open(const char *name, struct rpcrdma_prov **out, char *err,
			      size_t errlen);
int rpcrdma__prov_fabric_probe(struct rpcrdma_prov_caps *out, int max);
#ifdef RPCRDMA_HAVE_VERBS
/* prov_verbs.c: RDMA CM and verbs directly; domain NULL = the first device. */
int rpcrdma__prov_verbs_open(const char *domain, struct rpcrdma_prov **out, char *err,
			     size_t errlen);
int rpcrdma__prov_verbs_probe(struct rpcrdma_prov_caps *out, int max);
#endif

/* shm_life.c: emulated connections over shm survive killed processes. */
int rpcrdma__shm_name_claim(const char *name, int *lockfd);
/* Whether a region of that name exists: a listener on that shm port, live or stale. */
int rpcrdma__shm_name_exists(const char *name);
void rpcrdma__shm_name_release(const char *name, int lockfd);
void rpcrdma__shm_reap(void);
int rpcrdma__pid_watch(uint32_t pid);
int rpcrdma__proc_gone(int pidfd, uint32_t pid);
/* The header of a peer's region (the layouts of libfabric 1.17 and 2.1; NULL for another),
 * to release a lock its dead owner held: 1 if it was held. */
void *rpcrdma__shm_region_map(const char *name, uint32_t pid);
void rpcrdma__shm_region_unmap(void *hdr);
int rpcrdma__shm_region_unlock(void *hdr);
void rpcrdma__shm_region_hold(void *hdr);
uint32_t rpcrdma__shm_region_pid(const void *hdr);
int rpcrdma__shm_keep_begin(const char *name, char *keep, size_t len);
void rpcrdma__shm_keep_end(const char *name, const char *keep);

/* Monotonic milliseconds, for timeouts in the I/O layers; coarse: as of the last clock
 * tick (1-10 ms behind), cheaper to read. */
int64_t rpcrdma__now_ms(void);
int64_t rpcrdma__coarse_ms(void);

#endif
