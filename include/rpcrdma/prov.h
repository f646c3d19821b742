/* SPDX-License-Identifier: BSD-2-Clause */
/* librpcrdma — the RDMA provider layer (prov/): one contract, several implementations.
 *
 *   "tcp"    libfabric FI_EP_MSG over TCP sockets: any Linux host (the default)
 *   "verbs"  RDMA CM + verbs directly, on InfiniBand / RoCE / iWARP hardware; RFC 8797
 *            private data exactly as kernel peers read it ("verbs:DEVICE" picks one)
 *   "shm"    libfabric FI_EP_RDM over shared memory, one host; connections emulated
 *   "fi_NAME" libfabric's provider NAME (e.g. "fi_verbs"); any other libfabric provider
 *            name that meets the requirements below works without the prefix
 *   "mock"   in-process, deterministic, with fault injection (tests)
 *
 * The contract, which every implementation keeps:
 * - Connections carry private data both ways (RFC 8797 blocks, up to
 *   RPCRDMA_PDATA_MAX bytes) on connect, accept and reject.
 * - Memory is registered for exactly the bytes and the access asked for. A region
 *   gets a 32-bit handle (RFC 5666 §2) that is unpredictable and not reused soon after
 *   release, and the 64-bit offset to advertise for its first byte. Release is
 *   synchronous: when rpcrdma_mr_dereg() returns, the peer can no longer reach it.
 * - Send buffers, receive buffers and RDMA Read destinations need only
 *   RPCRDMA_ACC_LOCAL, and are never remotely accessible.
 * - Every posted operation completes exactly once, through rpcrdma_ep_poll(): with
 *   status 0, or with a negative RPCRDMA_ERR_*. When the connection is lost (peer
 *   closed, peer failed, local close) a RPCRDMA_OP_DISCONNECT event is reported and
 *   every operation still posted completes with -RPCRDMA_ERR_DISCONN: nothing is lost.
 * - Progress: operations advance only while the process calls rpcrdma_ep_poll() or
 *   rpcrdma_ep_wait() on the endpoint (libfabric tcp moves RMA data only then, on both
 *   sides). An endpoint that is the target of RDMA Reads must keep being polled.
 * - RDMA Write then Send on one endpoint: caps.write_send_ordered says whether the
 *   Send is delivered only after the Writes are placed (RFC 5666 relies on it). When it
 *   is 0 the caller (the engine) must wait for the Writes' completions first.
 *
 * Thread safety: a provider handle may be shared; an endpoint, and a listener, is used by
 * one thread at a time (the engine serialises).
 */
#ifndef RPCRDMA_PROV_H
#define RPCRDMA_PROV_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "errors.h"
#include "engine.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RPCRDMA_PORT 20049           /* NFS/RDMA, RFC 5666 §12 */
#define RPCRDMA_PDATA_MAX 56         /* private data bytes any provider must carry */

struct rpcrdma_prov;
struct rpcrdma_listener;
struct rpcrdma_connreq;
struct rpcrdma_ep;

enum rpcrdma_ep_type { RPCRDMA_EP_MSG = 1, RPCRDMA_EP_RDM_EMULATED = 2, RPCRDMA_EP_MOCK = 3 };

struct rpcrdma_prov_caps {
	char name[32];            /* provider, e.g. "tcp" */
	char fabric[64];          /* libfabric fabric name, or "mock" */
	uint32_t ep_type;         /* enum rpcrdma_ep_type */
	uint32_t key_size;        /* bytes of the provider's keys; handles are 32 bits */
	uint32_t prov_keys;       /* 1: the provider picks keys; 0: we do (randomly) */
	uint32_t virt_addr;       /* 1: offsets are virtual addresses */
	uint32_t write_send_ordered;
	uint32_t enforces_access; /* 0: remote access is not checked (shm) */
	uint32_t iov_limit;       /* local pieces per operation */
	uint32_t rma_iov_limit;   /* remote segments per libfabric call (we split beyond) */
	uint32_t tx_depth;        /* operations in flight per endpoint */
	uint32_t rx_depth;
	uint32_t has_fd;          /* rpcrdma_ep_fd() gives a pollable descriptor */
	size_t inject_size;
	size_t max_msg_size;
	uint32_t rma_by_copy;       /* 1: RMA data goes through a socket the CPU copies into
				     * (libfabric tcp): a copy of ours costs less than waiting
				     * for the completion of a Write from the caller's memory */
	uint32_t mem_windows;       /* 1: chunks inside long-lived memory (rpcrdma_mem_add)
				     * are exposed through memory windows, not registrations */
	uint32_t remote_inv;        /* 1: rpcrdma_post_send_inv() works (verbs: Send With
				     * Invalidate); 0: it answers -RPCRDMA_ERR_NOTSUP */
	uint32_t reserved32;        /* zero */
	uint64_t reserved[6];       /* zero: room for fields to come without an ABI break */
};

/* ---- provider ---- */

/* Open a provider by name (NULL = "tcp"). Fails with -RPCRDMA_ERR_NOPROV and a message
 * in err (if given) saying what is missing. */
RPCRDMA_API int rpcrdma_prov_open(const char *name, struct rpcrdma_prov **out,
				  char *err, size_t errlen);
RPCRDMA_API void rpcrdma_prov_close(struct rpcrdma_prov *p);
RPCRDMA_API const struct rpcrdma_prov_caps *rpcrdma_prov_caps(const struct rpcrdma_prov *p);

/* List the libfabric providers usable here, one caps each; returns how many (<= max). */
RPCRDMA_API int rpcrdma_prov_probe(struct rpcrdma_prov_caps *out, int max);

/* libfabric and rdma-core are loaded when a provider of theirs is first opened or
 * probed, not with librpcrdma. The version of the libfabric in use ("1.17"), loading it
 * if this process has not yet; NULL where it cannot be loaded. */
RPCRDMA_API const char *rpcrdma_libfabric_version(void);

/* ---- connections ---- */

/* Listen on host:port (host NULL = any IPv4; "::" for IPv6; port 0 = ephemeral).
 * For shm the host is ignored: the port names the listener on this host. */
RPCRDMA_API int rpcrdma_listen(struct rpcrdma_prov *p, const char *host, uint16_t port,
			       struct rpcrdma_listener **out);
RPCRDMA_API uint16_t rpcrdma_listener_port(const struct rpcrdma_listener *l);
RPCRDMA_API int rpcrdma_listener_fd(const struct rpcrdma_listener *l);  /* -1 if none */
/* The address the listener is bound to (a struct sockaddr) into addr (*len bytes,
 * updated). -RPCRDMA_ERR_NOPROV where the provider has none (shm, mock). */
RPCRDMA_API int rpcrdma_listener_addr(const struct rpcrdma_listener *l, void *addr, size_t *len);
/* Wait up to timeout_ms (-1 forever, 0 poll) for a connection request. Returns 0 with
 * *req set, or -RPCRDMA_ERR_TIMEDOUT. */
RPCRDMA_API int rpcrdma_listener_get(struct rpcrdma_listener *l, int timeout_ms,
				     struct rpcrdma_connreq **req);
RPCRDMA_API void rpcrdma_listener_close(struct rpcrdma_listener *l);

/* The request's private data (valid until accept/reject). */
RPCRDMA_API const void *rpcrdma_connreq_pdata(const struct rpcrdma_connreq *r, size_t *len);
/* Accept with our private data; the request is consumed either way. */
RPCRDMA_API int rpcrdma_accept(struct rpcrdma_connreq *r, const void *pdata, size_t len,
			       int timeout_ms, struct rpcrdma_ep **out);
RPCRDMA_API void rpcrdma_reject(struct rpcrdma_connreq *r, const void *pdata, size_t len);
/* Accepting in two steps, so that a server's receives are posted before its client can
 * send: the client may send as soon as its side is established, and iWARP has no RNR
 * retry (a Send that finds no receive ends the connection). rpcrdma_accept_prepare()
 * makes the endpoint the request will be accepted on, with our private data; receives
 * may be posted to it, nothing else, until rpcrdma_accept_finish() returns 0 (connected).
 * From a successful prepare on, the request belongs to the endpoint and the endpoint to
 * the caller, who closes it, also after a failed finish: closing one not yet accepted
 * rejects the request, one accepted disconnects. -RPCRDMA_ERR_NOTSUP: the provider makes
 * its endpoint only when it accepts (libfabric's, whose byte streams hold what arrives
 * early); the request is untouched, for rpcrdma_accept(). Other errors consume the
 * request (rejected). */
RPCRDMA_API int rpcrdma_accept_prepare(struct rpcrdma_connreq *r, const void *pdata, size_t len,
				       struct rpcrdma_ep **out);
/* timeout_ms 0 does not wait: -RPCRDMA_ERR_AGAIN while the client has not confirmed the
 * connection (the RDMA CM's RTU), to be asked again; a server's progress thread must
 * not wait on a client that may never confirm. */
RPCRDMA_API int rpcrdma_accept_finish(struct rpcrdma_ep *ep, int timeout_ms);

/* Connect with private data; the peer's is then rpcrdma_ep_peer_pdata(). A refusal is
 * -RPCRDMA_ERR_REJECTED, nobody listening -RPCRDMA_ERR_REFUSED or _TIMEDOUT. */
RPCRDMA_API int rpcrdma_connect(struct rpcrdma_prov *p, const char *host, uint16_t port,
				const void *pdata, size_t len, int timeout_ms,
				struct rpcrdma_ep **out);
RPCRDMA_API const void *rpcrdma_ep_peer_pdata(const struct rpcrdma_ep *ep, size_t *len);
RPCRDMA_API int rpcrdma_ep_connected(const struct rpcrdma_ep *ep);
/* Close: disconnects, completes what is posted with -RPCRDMA_ERR_DISCONN (those
 * completions are discarded), frees. Registrations are the caller's to release. */
RPCRDMA_API void rpcrdma_ep_close(struct rpcrdma_ep *ep);

/* ---- memory ---- */

RPCRDMA_API int rpcrdma_mr_reg(struct rpcrdma_prov *p, void *addr, size_t len,
			       unsigned access, struct rpcrdma_mr **out);
RPCRDMA_API int rpcrdma_mr_dereg(struct rpcrdma_mr *mr);

/* Long-lived memory (a pool of buffers, a cache's pages), added once so that chunks
 * inside it cost no registration each: on verbs, with a device that has type 2 memory
 * windows (caps.mem_windows; not soft-RoCE unless RPCRDMA_VERBS_WINDOWS=1, as its driver
 * does not hold an access to the window's bytes), rpcrdma_ep_mr_reg() binds a window over exactly the chunk's bytes with exactly
 * its rights, and rpcrdma_mr_dereg() invalidates it and waits until that is done (RFC
 * 5666 §2, RFC 5042: nothing stays exposed after its RPC); local-only chunks cost
 * nothing. The region itself is registered for local access and window binding only: the
 * peer reaches none of it but through a window. It must stay mapped and writable until
 * rpcrdma_mem_remove(), which returns -RPCRDMA_ERR_AGAIN while a registration inside it
 * lives. Regions may not overlap; at most 16 per provider handle (-RPCRDMA_ERR_NOSPC).
 * Providers whose registrations cost little (libfabric's) take it and change nothing: 0.
 * docs/PROVIDERS.md, "Registration". */
RPCRDMA_API int rpcrdma_mem_add(struct rpcrdma_prov *p, void *addr, size_t len);
RPCRDMA_API int rpcrdma_mem_remove(struct rpcrdma_prov *p, void *addr);
/* As rpcrdma_mr_reg(), for use on this endpoint only; inside memory added with
 * rpcrdma_mem_add(), a window (verbs) or the region's own registration (local access).
 * Elsewhere, or with no window to be had (the device has none, the endpoint's queue of
 * binds is full), a registration of its own as rpcrdma_mr_reg() makes. Released with
 * rpcrdma_mr_dereg(), before or after the endpoint is closed (closing it destroys its
 * windows). The engine registers every chunk this way. */
RPCRDMA_API int rpcrdma_ep_mr_reg(struct rpcrdma_ep *ep, void *addr, size_t len,
				  unsigned access, struct rpcrdma_mr **out);

/* ---- data ---- */

/* Post a receive buffer (one piece). Fails with -RPCRDMA_ERR_AGAIN when the receive
 * queue is full, -RPCRDMA_ERR_DISCONN when the connection is gone. */
RPCRDMA_API int rpcrdma_post_recv(struct rpcrdma_ep *ep, const struct rpcrdma_sge *sge, void *ctx);
RPCRDMA_API int rpcrdma_post_send(struct rpcrdma_ep *ep, const struct rpcrdma_sge *sge, void *ctx);
/* A Send that also invalidates the peer's registration `handle` when it arrives (Send
 * With Invalidate; RFC 8797 §3.2: a server may end a reply so when its client said in
 * its private data that it takes them, invalidating a handle that client named in the
 * call). The peer's device fails the connection if handle is not one of the peer's
 * registrations that can be invalidated remotely, so only a handle the peer named may
 * go here. -RPCRDMA_ERR_NOTSUP where caps.remote_inv is 0 (libfabric's providers);
 * otherwise as rpcrdma_post_send(). */
RPCRDMA_API int rpcrdma_post_send_inv(struct rpcrdma_ep *ep, const struct rpcrdma_sge *sge,
				      uint32_t handle, void *ctx);
/* RDMA Read the remote segments into the local pieces (scatter/gather on both sides;
 * byte counts must match). One completion for the whole operation. */
RPCRDMA_API int rpcrdma_post_read(struct rpcrdma_ep *ep, const struct rpcrdma_sge *local,
				  uint32_t nlocal, const struct rpcrdma_segment *remote,
				  uint32_t nremote, void *ctx);
RPCRDMA_API int rpcrdma_post_write(struct rpcrdma_ep *ep, const struct rpcrdma_sge *local,
				   uint32_t nlocal, const struct rpcrdma_segment *remote,
				   uint32_t nremote, void *ctx);

/* Non-blocking: drive progress, return up to max completions (0 if none). */
RPCRDMA_API int rpcrdma_ep_poll(struct rpcrdma_ep *ep, struct rpcrdma_cqe *out, int max);
/* Block up to timeout_ms until rpcrdma_ep_poll() may return something. Returns 0
 * (ready) or -RPCRDMA_ERR_TIMEDOUT. Drives progress while it waits. */
RPCRDMA_API int rpcrdma_ep_wait(struct rpcrdma_ep *ep, int timeout_ms);
/* A descriptor that becomes readable when the endpoint may have work (-1 if the
 * provider has none: then poll with back-off, as rpcrdma_ep_wait() does; shm: its
 * doorbell, docs/PROVIDERS.md). An endpoint
 * accepted from a libfabric MSG listener (tcp, verbs) shares that listener's completion
 * queue: while the listener is open, its completions wake rpcrdma_listener_fd(), and its
 * own descriptor carries its connection events and completions another thread's poll
 * found for it; sleep on both (docs/PROVIDERS.md). */
RPCRDMA_API int rpcrdma_ep_fd(const struct rpcrdma_ep *ep);
/* Before sleeping on rpcrdma_ep_fd() (with other descriptors, in one poll/epoll): 0 when
 * it is safe (the descriptor will become readable for any new work), -RPCRDMA_ERR_AGAIN
 * when work is already pending (poll the endpoint first), -RPCRDMA_ERR_NOPROV where the
 * provider has no descriptor (shm: when its doorbell is out of reach). libfabric's
 * fi_trywait, verbs' ibv_req_notify_cq, shm's doorbell marked. An arm holds until the
 * endpoint is polled: work another thread finds for it (rpcrdma_listener_drain(), a
 * shared queue) wakes the descriptor, work the arming thread finds itself need not (it
 * is awake; libfabric MSG does not): so that thread polls the endpoint, or arms it
 * again, before it sleeps. */
RPCRDMA_API int rpcrdma_ep_arm(struct rpcrdma_ep *ep);
/* Optional, after a sleep that began with rpcrdma_ep_arm() returning 0: fired says
 * whether rpcrdma_ep_fd() was among the descriptors that ended it. Without it, the
 * endpoint's first poll after the sleep looks for what only its descriptor could have
 * told (libfabric MSG: it reads the connection's event queue when it finds no
 * completion); a program sleeping on many endpoints' descriptors (epoll) knows which
 * fired and spares the others that look. A wrong "not fired" only delays what the
 * descriptor signalled until the next sleep, which then ends at once. */
RPCRDMA_API void rpcrdma_ep_slept(struct rpcrdma_ep *ep, int fired);
/* The same for rpcrdma_listener_fd(): new connection requests wake the descriptor, and
 * completions of the endpoints it accepted where they share its queue (rpcrdma_ep_fd). */
RPCRDMA_API int rpcrdma_listener_arm(struct rpcrdma_listener *l);
/* Where the endpoints a listener accepted share its completion queue (libfabric MSG:
 * tcp, verbs): read that queue once, each completion kept for its endpoint's next
 * rpcrdma_ep_poll() (and an armed endpoint's descriptor woken). Once a program calls it,
 * those endpoints' polls return only what was kept for them and no longer read the queue
 * themselves: a server that polls N connections a round reads it once, not N times (a
 * read is a system call over tcp). The program must then call it before polling them,
 * as long as the listener is open. Returns 0 (also where the provider shares no queue:
 * then each endpoint's poll reads its own). */
RPCRDMA_API int rpcrdma_listener_drain(struct rpcrdma_listener *l);
/* Make ready, ahead of time, what the next accept would otherwise build while a client
 * waits: call it when the server has nothing else to do. On shm each connection has an
 * endpoint of its own whose shared region takes milliseconds to set up; the listener
 * keeps one such endpoint spare. 0 (also where there is nothing to prepare), or a
 * negative RPCRDMA_ERR_* (the next accept then builds it as before). */
RPCRDMA_API int rpcrdma_listener_prepare(struct rpcrdma_listener *l);

/* The peer's network address (a struct sockaddr) into addr (*len bytes, updated).
 * -RPCRDMA_ERR_NOPROV where the provider has none (shm, mock). */
RPCRDMA_API int rpcrdma_ep_peer_addr(struct rpcrdma_ep *ep, void *addr, size_t *len);

RPCRDMA_API const char *rpcrdma_op_name(uint32_t op);

/* ---- the library's log ----
 * Silent by default. RPCRDMA_LOG=error|warn|info|debug (or 0..4) in the environment, or
 * rpcrdma_log_set_level(), turns it on: connections made, accepted, lost and closed (peer,
 * provider, negotiated sizes, credits), reconnections, errors with their cause. One line
 * per event on stderr ("rpcrdma info: ..."), or to the function set with
 * rpcrdma_log_set_fn() (called from library threads; it must be thread-safe). */
enum rpcrdma_log_level {
	RPCRDMA_LOG_OFF = 0,
	RPCRDMA_LOG_ERROR = 1,
	RPCRDMA_LOG_WARN = 2,
	RPCRDMA_LOG_INFO = 3,
	RPCRDMA_LOG_DEBUG = 4,
};
typedef void (*rpcrdma_log_fn)(void *ctx, int level, const char *line);
RPCRDMA_API int rpcrdma_log_level(void);
RPCRDMA_API void rpcrdma_log_set_level(int level);
RPCRDMA_API void rpcrdma_log_set_fn(rpcrdma_log_fn fn, void *ctx);
/* A level's name or number as RPCRDMA_LOG takes it; -1 if it is neither. */
RPCRDMA_API int rpcrdma_log_parse(const char *s);
RPCRDMA_API void rpcrdma_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The engine's lower face (engine.h) on a provider endpoint: the engine posts to ep and
 * registers memory with p. */
RPCRDMA_API void rpcrdma_eng_lower_ep(struct rpcrdma_eng_lower *lo, struct rpcrdma_prov *p,
				      struct rpcrdma_ep *ep);
/* A server engine (created, not started) takes a connection request: it reads the
 * client's private data, answers with its own, and starts on the new endpoint with its
 * receives posted before the accept where the provider makes that possible
 * (rpcrdma_accept_prepare; after it elsewhere). The request is consumed. Returns 0 with
 * *out connected, or an error with *out NULL (the engine is then to be destroyed). With
 * timeout_ms 0, a provider that accepts in two steps (verbs) may return
 * -RPCRDMA_ERR_AGAIN with *out set and the engine started: the client has not confirmed
 * yet; rpcrdma_accept_finish(*out, 0) says when it has (0), or the caller gives up and
 * closes *out. A provider that accepts in one step (libfabric's, whose handshake needs
 * no answer from the client) waits up to 5 s then. */
RPCRDMA_API int rpcrdma_eng_accept(struct rpcrdma_eng *e, struct rpcrdma_connreq *req,
				   int timeout_ms, uint64_t now_ms, struct rpcrdma_ep **out);

#ifdef __cplusplus
}
#endif
#endif
