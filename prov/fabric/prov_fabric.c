/* SPDX-License-Identifier: BSD-2-Clause */
/* The libfabric provider: FI_EP_MSG (tcp, verbs, ...) natively, FI_EP_RDM (shm) with
 * emulated connections. Nothing here is specific to one provider's name except the
 * documented fact that shm does not check remote access (caps.enforces_access).
 *
 * Operations (prov_opq.c): each posted operation has one or more pieces (libfabric
 * calls, each with its own fi_context2 in the piece); RMA scatter lists are split into
 * pieces so that no call exceeds one local and one remote segment.
 *
 * Emulated connections (RDM): a listener is an endpoint named "rpcrdma_<port>"; a
 * client sends it a CONNREQ control message (its name and private data) and the
 * listener answers from a new endpoint made for that connection (ACCEPT with its name
 * and private data) or with REJECT. DISCONNECT tells the peer we are gone. Control
 * messages use their own tag, and data uses directed receives from the peer only, so
 * neither can be taken for the other. */
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_int.h"

/* ---- signals taken by a library we never use ----
 * Debian's libfabric links its psm provider's libinfinipath, whose constructor takes
 * SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGILL and SIGABRT as it is loaded (libpsm2's builds may
 * too): a program linked with us exited with status 1 on ^C or SIGTERM instead of dying
 * by the signal (a shell's `wait` saw 1, not 130/143; systemd counts such a stop as a
 * failure), and a crash left a "PROGRAM.HOST-PID,..." .btr backtrace file in the working
 * directory; loaded on first use, after the program set its own handlers, they took
 * those (rpcrdma perf's SIGINT report was lost). We never use psm, so once libfabric is
 * loaded (rpcrdma__fabric_load()) each signal those libraries took gets back what it had
 * before: the program's handler or the default. RPCRDMA_KEEP_PSM_SIGNALS=1 keeps them
 * (docs/RPC.md). */
static bool psm_owns(void *handler)
{
	Dl_info d;
	const char *base;

	if (handler == (void *)SIG_DFL || handler == (void *)SIG_IGN ||
	    !dladdr(handler, &d) || !d.dli_fname)
		return false;
	base = strrchr(d.dli_fname, '/');
	base = base ? base + 1 : d.dli_fname;
	return !strncmp(base, "libinfinipath.", 14) || !strncmp(base, "libpsm", 6);
}

static const int psm_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV,
				SIGBUS, SIGILL, SIGFPE, SIGABRT };
#define PSM_NSIGS (sizeof(psm_sigs) / sizeof(psm_sigs[0]))

static void save_signals(struct sigaction *saved)
{
	size_t i;

	for (i = 0; i < PSM_NSIGS; i++)
		if (sigaction(psm_sigs[i], NULL, &saved[i]))
			saved[i].sa_handler = SIG_DFL;
}

/* Each signal a psm library took while libfabric was loaded gets back what it had
 * before: the program's own handler (installed before its first provider opened), or
 * the default. */
static void give_back_psm_signals(const struct sigaction *saved)
{
	const char *keep = getenv("RPCRDMA_KEEP_PSM_SIGNALS");
	size_t i;

	if (keep && *keep && strcmp(keep, "0"))
		return;
	for (i = 0; i < PSM_NSIGS; i++) {
		struct sigaction sa;
		void *h;

		if (sigaction(psm_sigs[i], NULL, &sa))
			continue;
		h = (sa.sa_flags & SA_SIGINFO) ? (void *)sa.sa_sigaction : (void *)sa.sa_handler;
		if (psm_owns(h))
			sigaction(psm_sigs[i], &saved[i], NULL);
	}
}

/* ---- ops table glue ---- */

static int fab_listen(struct rpcrdma_prov *p, const char *host, uint16_t port,
		      struct rpcrdma_listener **out)
{
	struct fab_prov *fp = (struct fab_prov *)p;
	struct fab_listener *l = calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return -RPCRDMA_ERR_NOMEM;
	l->base.prov = p;
	l->fp = fp;
	l->lockfd = -1;
	l->epfd = -1;
	rpcrdma__bell_init(&l->bell);
	rc = fp->rdm ? rpcrdma__fab_rdm_listen(fp, port, l) : rpcrdma__fab_msg_listen(fp, host, port, l);
	if (rc) {
		rpcrdma__fab_ops.listener_close(&l->base);
		return rc;
	}
	*out = &l->base;
	return 0;
}

static int fab_listener_fd(const struct rpcrdma_listener *base)
{
	const struct fab_listener *l = (const struct fab_listener *)base;
	int fd;

	if (l->epfd >= 0)
		return l->epfd;
	if (l->eq && fi_control(&l->eq->fid, FI_GETWAIT, &fd) == 0)
		return fd;
	return -1;
}

/* The shared completion queue is tried only when no try since found it empty
 * (fab_shcq.armed); the shared event queue each time (one try a sleep, for all the
 * connections), and read at the next drain when it has news. */
static int fab_listener_arm(struct rpcrdma_listener *base)
{
	struct fab_listener *l = (struct fab_listener *)base;
	struct fid *fids[3];
	bool try_cq;
	int n = 1, rc = 0;

	if (l->fp->rdm)
		return rpcrdma__fab_rdm_listener_arm(l);
	if (!l->eq)
		return -RPCRDMA_ERR_NOPROV;
	fids[0] = &l->eq->fid;
	if (l->sh)
		pthread_mutex_lock(&l->sh->lock);
	try_cq = l->sh && !l->sh->armed;
	if (try_cq)
		fids[n++] = &l->sh->cq->fid;
	if (l->sh && l->sh->eq)
		fids[n++] = &l->sh->eq->fid;
	if (fi_trywait(l->fp->fabric, fids, n) != FI_SUCCESS) {
		rc = -RPCRDMA_ERR_AGAIN;
		if (l->sh)
			l->sh->eq_due = true;
	} else if (try_cq) {
		l->sh->armed = true;
	}
	if (l->sh)
		pthread_mutex_unlock(&l->sh->lock);
	return rc;
}

/* Drained as one of its endpoints would drain it: each completion goes to its owner's
 * stash (the first endpoint's too: no sink is given). The connections' event queue is
 * read once per EQ_LOOK_MS, as a polled connection reads its own: once a round would be a
 * system call a round (libfabric's tcp runs its progress), and a caller that polls the
 * listener's descriptor, readable while an event waits, spins until the look. */
static int fab_listener_drain(struct rpcrdma_listener *base)
{
	struct fab_listener *l = (struct fab_listener *)base;

	if (l->fp->rdm || !l->sh)
		return 0;
	pthread_mutex_lock(&l->sh->lock);
	l->sh->drained_by_listener = true;
	if (l->accepted)
		rpcrdma__fab_cq_drain(l->accepted, NULL);
	if (l->sh->eq)
		rpcrdma__fab_sheq_look(l->sh, EQ_LOOK_MS);
	pthread_mutex_unlock(&l->sh->lock);
	return 0;
}

static int fab_listener_addr(const struct rpcrdma_listener *base, void *addr, size_t *len)
{
	const struct fab_listener *l = (const struct fab_listener *)base;

	if (!l->pep || fi_getname(&l->pep->fid, addr, len))
		return -RPCRDMA_ERR_NOPROV;
	return 0;
}

static int fab_listener_get(struct rpcrdma_listener *base, int timeout_ms,
			    struct rpcrdma_connreq **out)
{
	struct fab_listener *l = (struct fab_listener *)base;
	struct fab_connreq *r = l->idle_req ? l->idle_req : calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -RPCRDMA_ERR_NOMEM;
	l->idle_req = NULL;
	r->base.prov = base->prov;
	r->l = l;
	rc = l->fp->rdm ? rpcrdma__fab_rdm_get(l, timeout_ms, r) : rpcrdma__fab_msg_get(l, timeout_ms, r);
	if (rc) {
		/* most polls find nothing: the record, still as calloc left it (the getters
		 * write it only on success), waits for the next one */
		l->idle_req = r;
		return rc;
	}
	*out = &r->base;
	return 0;
}

static void fab_listener_close(struct rpcrdma_listener *base)
{
	struct fab_listener *l = (struct fab_listener *)base;

	while (l->accepted)
		rpcrdma__fab_orphan(l->accepted);
	rpcrdma__tcp_reaper_free(&l->reaper);
	if (l->pep)
		fi_close(&l->pep->fid);
	if (l->eq)
		fi_close(&l->eq->fid);
	rpcrdma__fab_shcq_put(l->sh);
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->lep)
		rpcrdma__fab_ep_free(l->lep);
	if (l->spare)
		rpcrdma__fab_ep_free(l->spare);
	rpcrdma__bell_close(&l->bell);
	rpcrdma__shm_name_release(l->name, l->lockfd);
	free(l->idle_req);
	free(l);
}

static int fab_accept(struct rpcrdma_connreq *base, const void *pdata, size_t len, int timeout_ms,
		      struct rpcrdma_ep **out)
{
	struct fab_connreq *r = (struct fab_connreq *)base;
	struct fab_ep *e = NULL;
	int rc;

	rc = r->l->fp->rdm ? rpcrdma__fab_rdm_accept(r, pdata, len, timeout_ms, &e)
			   : rpcrdma__fab_msg_accept(r, pdata, len, timeout_ms, &e);
	if (!rc) {
		/* the peer's private data is what it sent with its request */
		rpcrdma__fab_copy_pdata(e->base.peer_pdata, &e->base.peer_pdata_len, base->pdata, base->pdata_len);
		if (!r->l->fp->rdm)
			rpcrdma__fab_remember_accepted(r->l, e);
		*out = &e->base;
	}
	if (r->info)
		fi_freeinfo(r->info);
	free(r);
	return rc;
}

static void fab_reject(struct rpcrdma_connreq *base, const void *pdata, size_t len)
{
	struct fab_connreq *r = (struct fab_connreq *)base;

	if (r->l->fp->rdm) {
		rpcrdma__fab_rdm_reject(r, pdata, len);
	} else {
		/* Always some private data, so that the client can tell a refusal by us from
		 * nobody listening. */
		fi_reject(r->l->pep, r->info->handle, pdata && len ? pdata : REJECT_MARK,
			  pdata && len ? len : 4);
		fi_freeinfo(r->info);
	}
	free(r);
}

static int fab_connect(struct rpcrdma_prov *p, const char *host, uint16_t port, const void *pdata,
		       size_t len, int timeout_ms, struct rpcrdma_ep **out)
{
	struct fab_prov *fp = (struct fab_prov *)p;
	struct fab_ep *e = NULL;
	int rc;

	if (!fp->rdm && !host)
		return -RPCRDMA_ERR_ADDR;
	rc = fp->rdm ? rpcrdma__fab_rdm_connect(fp, port, pdata, len, timeout_ms, &e)
		     : rpcrdma__fab_msg_connect(fp, host, port, pdata, len, timeout_ms, &e);
	if (!rc)
		*out = &e->base;
	return rc;
}

static void fab_ep_close(struct rpcrdma_ep *base)
{
	struct fab_ep *e = (struct fab_ep *)base;

	sh_lock(e);
	if (e->ep && e->fp->rdm && e->base.connected)
		rpcrdma__fab_ctrl_send(e, e->peer, CTRL_DISCONNECT, NULL, 0, 2000, e->pidfd,
				       e->peer_pid);
	else if (e->ep && e->base.connected)
		fi_shutdown(e->ep, 0);
	if (e->ep) {
		/* completions of a closing endpoint are not reported */
		rpcrdma__fab_lose_connection(e, NULL);
	}
	sh_unlock(e);
	rpcrdma__fab_ep_free(e);
}

/* ---- provider ---- */

/* An endpoint of ours that is parked (fabric_rdm.c) still needs the domain: the last one
 * to go frees it. */
static void fab_close(struct rpcrdma_prov *p)
{
	struct fab_prov *fp = (struct fab_prov *)p;

	if (!rpcrdma__fab_park_close(fp))
		rpcrdma__fab_prov_free(fp);
}

/* What a quiet listener does ahead: an endpoint for the next connection (shm), a look for
 * sockets libfabric lost (tcp). */
static int fab_listener_prepare(struct rpcrdma_listener *base)
{
	struct fab_listener *l = (struct fab_listener *)base;

	if (l->fp->rdm)
		return rpcrdma__fab_rdm_prepare(base);
	rpcrdma__fab_msg_prepare(l);
	return 0;
}

const struct rpcrdma_prov_ops rpcrdma__fab_ops = {
	.close = fab_close,
	.listen = fab_listen,
	.listener_get = fab_listener_get,
	.listener_fd = fab_listener_fd,
	.listener_addr = fab_listener_addr,
	.listener_close = fab_listener_close,
	.accept = fab_accept,
	.reject = fab_reject,
	.connect = fab_connect,
	.ep_close = fab_ep_close,
	.mr_reg = rpcrdma__fab_mr_reg,
	.mr_dereg = rpcrdma__fab_mr_dereg,
	.post_recv = rpcrdma__fab_post_recv,
	.post_send = rpcrdma__fab_post_send,
	.post_rma = rpcrdma__fab_post_rma,
	.poll = rpcrdma__fab_poll,
	.wait = rpcrdma__fab_wait,
	.ep_fd = rpcrdma__fab_ep_fd,
	.ep_arm = rpcrdma__fab_arm,
	.ep_slept = rpcrdma__fab_slept,
	.listener_arm = fab_listener_arm,
	.listener_drain = fab_listener_drain,
	.listener_prepare = fab_listener_prepare,
	.peer_addr = rpcrdma__fab_peer_addr,
	.names = rpcrdma__fab_names,
};

struct rpcrdma__fabric_fns rpcrdma__fabric_fns;
/* RPCRDMA_LIBFABRIC picks another libfabric at run time (docs/PROVIDERS.md): one built
 * without psm starts in a few ms where Debian's takes 0.2 s */
RPCRDMA__DL_LIB(fabric_lib, "libfabric.so.1", "RPCRDMA_LIBFABRIC", "libfabric1",
		RPCRDMA__FABRIC_FNS, rpcrdma__fabric_fns);

/* ---- the psm libraries, left out ----
 * Debian's libfabric 1.17 needs libpsm_infinipath.so.1 and libpsm2.so.2 (for its psm and
 * psm2 providers), whose constructors sleep 100 ms each calibrating a clock, in every
 * process that loads libfabric: 0.2 s of a one-call process's 0.29 s (docs/BENCHMARKS-HISTORY.md,
 * "Process start"). A library already loaded under a soname satisfies a later library's
 * need for it, so stand-ins that fail every call (psm_stub.c, installed in rpcrdma-psm/
 * beside this library) are loaded first: libfabric's psm providers then find no device,
 * as on any host without Omni-Path or InfiniPath hardware, and the rest of libfabric is
 * untouched. Not when RPCRDMA_LIBFABRIC_PSM=1, nor when the provider that loads libfabric
 * is a psm one (fi_psm, fi_psm2); where the stand-ins are not beside this library (a
 * static link) the real libraries load as before. */
static const char *const psm_stubs[] = { "libpsm2.so.2", "libpsm_infinipath.so.1" };

static bool psm_wanted(const char *prov)
{
	const char *keep = getenv("RPCRDMA_LIBFABRIC_PSM");

	if (keep && *keep && strcmp(keep, "0"))
		return true;
	if (prov && !strncmp(prov, "fi_", 3))
		prov += 3;
	return prov && !strncmp(prov, "psm", 3);
}

static void load_psm_stubs(const char *prov)
{
	char path[PATH_MAX];
	const char *slash;
	Dl_info d;
	size_t i;

	if (psm_wanted(prov) || !dladdr((void *)load_psm_stubs, &d) || !d.dli_fname ||
	    !(slash = strrchr(d.dli_fname, '/')))
		return;
	for (i = 0; i < sizeof(psm_stubs) / sizeof(psm_stubs[0]); i++) {
		snprintf(path, sizeof(path), "%.*s/rpcrdma-psm/%s", (int)(slash - d.dli_fname),
			 d.dli_fname, psm_stubs[i]);
		if (!dlopen(path, RTLD_NOW | RTLD_LOCAL))
			(void)dlerror();   /* not installed here: the real one loads */
	}
}

/* Loads libfabric (once: later calls find it loaded), for provider prov (NULL: a probe
 * or a version query), and gives back the signals its psm libraries' constructors took
 * meanwhile. */
int rpcrdma__fabric_load_for(const char *prov, char *err, size_t errlen)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static bool tried;
	struct sigaction saved[PSM_NSIGS];
	int rc;

	pthread_mutex_lock(&lock);
	if (!tried)
		load_psm_stubs(prov);
	tried = true;
	save_signals(saved);
	rc = rpcrdma__dl_load(&fabric_lib, err, errlen);
	if (!rc)
		give_back_psm_signals(saved);
	pthread_mutex_unlock(&lock);
	return rc;
}

int rpcrdma__fabric_load(char *err, size_t errlen)
{
	return rpcrdma__fabric_load_for(NULL, err, errlen);
}

const char *rpcrdma_libfabric_version(void)
{
	static char text[24];
	uint32_t v;

	if (rpcrdma__fabric_load(NULL, 0))
		return NULL;
	v = fi_version();
	snprintf(text, sizeof(text), "%u.%u", FI_MAJOR(v), FI_MINOR(v));
	return text;
}

static struct fi_info *make_hints(const char *prov, const char *domain, enum fi_ep_type type)
{
	struct fi_info *h = fi_dupinfo(NULL);   /* fi_allocinfo() would call it unloaded */

	if (!h)
		return NULL;
	h->ep_attr->type = type;
	h->caps = FI_MSG | FI_RMA;
	if (type == FI_EP_RDM)
		h->caps |= FI_TAGGED | FI_DIRECTED_RECV;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	/* the registration modes we handle; the provider says which it needs */
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_SAFE;
	if (prov)
		h->fabric_attr->prov_name = strdup(prov);
	if (domain)
		h->domain_attr->name = strdup(domain);
	return h;
}

static void fill_caps(struct rpcrdma_prov_caps *c, const struct fi_info *i, int rdm)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", i->fabric_attr->prov_name);
	snprintf(c->fabric, sizeof(c->fabric), "%s", i->fabric_attr->name);
	c->ep_type = rdm ? RPCRDMA_EP_RDM_EMULATED : RPCRDMA_EP_MSG;
	c->key_size = (uint32_t)i->domain_attr->mr_key_size;
	c->prov_keys = !!(i->domain_attr->mr_mode & FI_MR_PROV_KEY);
	c->virt_addr = !!(i->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
	c->write_send_ordered = !!(i->tx_attr->msg_order & FI_ORDER_SAW);
	/* shm moves RMA data with cross-memory attach and checks neither key nor range */
	c->enforces_access = strcmp(c->name, "shm") != 0;
	c->rma_by_copy = !strcmp(c->name, "tcp") || !strcmp(c->name, "sockets");
	c->iov_limit = (uint32_t)i->tx_attr->iov_limit;
	c->rma_iov_limit = (uint32_t)i->tx_attr->rma_iov_limit;
	c->tx_depth = (uint32_t)(i->tx_attr->size < DEPTH_CAP ? i->tx_attr->size : DEPTH_CAP);
	c->rx_depth = (uint32_t)(i->rx_attr->size < DEPTH_CAP ? i->rx_attr->size : DEPTH_CAP);
	c->inject_size = i->tx_attr->inject_size;
	c->max_msg_size = i->ep_attr->max_msg_size;
}

static int probe_fd(struct fab_prov *fp)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_FD, .size = 8 };
	struct fid_cq *cq;

	if (fi_cq_open(fp->domain, &attr, &cq, NULL))
		return 0;
	fi_close(&cq->fid);
	return 1;
}

/* "prov" or "prov:domain" */
static void split_name(const char *name, char *prov, size_t plen, char *dom, size_t dlen)
{
	const char *colon = strchr(name, ':');
	size_t n = colon ? (size_t)(colon - name) : strlen(name);

	snprintf(prov, plen, "%.*s", (int)n, name);
	snprintf(dom, dlen, "%s", colon ? colon + 1 : "");
}

/* libfabric tcp sends a message of up to its inject size without a completion
 * (fi_inject): the completion queue then has one entry less to read per call, each read
 * a system call (docs/PROVIDERS.md). 64 bytes by default, 128 on request: enough for a
 * NULL call (84 bytes) and a READ's call with its write chunk. */
#define TCP_INJECT 128
#define TCP_STR_(x) #x
#define TCP_STR(x) TCP_STR_(x)

/* RPC-over-RDMA sends a small reply right after a large RDMA Write, and many calls at
 * once: Nagle's algorithm on the tcp provider's sockets holds them back (measured: 1 MiB
 * READs, 32 in flight, 5x slower). Off unless the user set FI_TCP_NODELAY.
 * libfabric 2.x's tcp provider keeps one transfer entry per operation in a pool that grows
 * 1,024 entries at a time, each with a buffer of FI_TCP_MAX_RX_SIZE (16 KiB by default)
 * for inject data and for messages that arrive before their receive is posted: the first
 * receive of a process faulted in 17 MB, 44 ms of a one-call process's 81 ms here. Our
 * receives are posted ahead (credits, RFC 5666 §3.3) and we inject at most TCP_INJECT
 * bytes, so buffers of that size do; a message that does arrive unexpected still gets a
 * buffer of its own size from the provider. libfabric 1.17 does not know the variable.
 * Neither is set where the user set it. */
static void tcp_defaults(void)
{
	setenv("FI_TCP_NODELAY", "1", 0);
	setenv("FI_TCP_MAX_RX_SIZE", TCP_STR(TCP_INJECT), 0);
}

static struct fi_info *ask(const char *prov, const char *dom, enum fi_ep_type type,
			   int ordered, size_t inject)
{
	struct fi_info *h = make_hints(prov, dom[0] ? dom : NULL, type), *info = NULL;

	if (!h)
		return NULL;
	if (ordered)
		h->tx_attr->msg_order = FI_ORDER_SAW;
	h->tx_attr->inject_size = inject;
	if (fi_getinfo(FAB_VERSION, NULL, NULL, 0, h, &info))
		info = NULL;
	fi_freeinfo(h);
	return info;
}

/* MSG before RDM; within each, an endpoint that orders Sends after earlier RDMA Writes
 * (FI_ORDER_SAW) is preferred, since RFC 5666 replies rely on it. */
static struct fi_info *find_info(const char *prov, const char *dom, int *rdm)
{
	enum fi_ep_type types[2] = { FI_EP_MSG, FI_EP_RDM };
	struct fi_info *info = NULL, *more;
	int t, ordered, was_ordered = 0;

	tcp_defaults();
	for (t = 0; t < 2 && !info; t++) {
		for (ordered = 1; ordered >= 0 && !info; ordered--) {
			info = ask(prov, dom, types[t], ordered, 0);
			was_ordered = ordered;
			*rdm = t == 1;
		}
	}
	if (info && !*rdm && !strcmp(info->fabric_attr->prov_name, "tcp") &&
	    info->tx_attr->inject_size < TCP_INJECT &&
	    (more = ask("tcp", dom, FI_EP_MSG, was_ordered, TCP_INJECT)) != NULL) {
		fi_freeinfo(info);
		info = more;
	}
	return info;
}

static int check_usable(const struct fi_info *i, char *err, size_t errlen)
{
	if ((i->domain_attr->mr_mode & FI_MR_PROV_KEY) && i->domain_attr->mr_key_size > 4) {
		rpcrdma__fab_set_err(err, errlen, "provider %s uses keys of more than 32 bits and does not let %s",
			i->fabric_attr->prov_name, "us choose them (RFC 5666 §2 needs 32-bit handles)");
		return -RPCRDMA_ERR_NOPROV;
	}
	return 0;
}

int rpcrdma__prov_fabric_open(const char *name, struct rpcrdma_prov **out, char *err,
			      size_t errlen)
{
	char prov[32], dom[64];
	struct fab_prov *fp;
	int rdm = 0, rc;

	rc = rpcrdma__fabric_load_for(name, err, errlen);
	if (rc)
		return rc;
	split_name(name, prov, sizeof(prov), dom, sizeof(dom));
	fp = calloc(1, sizeof(*fp));
	if (!fp)
		return -RPCRDMA_ERR_NOMEM;
	fp->base.ops = &rpcrdma__fab_ops;
	rpcrdma__keys_init(&fp->keys);
	fp->info = find_info(prov, dom, &rdm);
	if (!fp->info) {
		rpcrdma__fab_set_err(err, errlen, "libfabric provider '%s' is not usable here: it is missing, "
			"has no device, or lacks reliable messaging with RDMA (FI_MSG+FI_RMA)%s",
			prov, dom[0] ? " on that domain" : "");
		rc = -RPCRDMA_ERR_NOPROV;
		goto out_free;
	}
	rc = check_usable(fp->info, err, errlen);
	if (rc)
		goto out_free;
	fp->rdm = rdm;
	fp->hooks = rdm ? &rpcrdma__fab_rdm_hooks : NULL;
	fp->mr_mode = fp->info->domain_attr->mr_mode;
	rc = rpcrdma__fab_map_err(fi_fabric(fp->info->fabric_attr, &fp->fabric, NULL));
	if (!rc)
		rc = rpcrdma__fab_map_err(fi_domain(fp->fabric, fp->info, &fp->domain, NULL));
	if (rc) {
		rpcrdma__fab_set_err(err, errlen, "cannot open libfabric provider '%s'%s", prov, "");
		rc = -RPCRDMA_ERR_NOPROV;
		goto out_free;
	}
	fill_caps(&fp->base.caps, fp->info, rdm);
	fp->base.caps.has_fd = (uint32_t)probe_fd(fp);
	/* tcp and shm (verbs would post such a send unsignalled): a completion read is a
	 * system call over tcp, and over shm one more entry to take from the queue and
	 * process per message (docs/BENCHMARKS.md, "NULL over shm against the raw
	 * ping-pong") */
	if (!strcmp(fp->base.caps.name, rdm ? "shm" : "tcp"))
		fp->inject_max = fp->base.caps.inject_size;
	*out = &fp->base;
	return 0;
out_free:
	fab_close(&fp->base);
	return rc;
}

static int seen(const struct rpcrdma_prov_caps *out, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(out[i].name, name))
			return 1;
	return 0;
}

int rpcrdma__prov_fabric_probe(struct rpcrdma_prov_caps *out, int max)
{
	enum fi_ep_type types[2] = { FI_EP_MSG, FI_EP_RDM };
	int n = 0, t;

	if (rpcrdma__fabric_load(NULL, 0))
		return 0;   /* no libfabric here: none of its providers */

	for (t = 0; t < 2; t++) {
		struct fi_info *h = make_hints(NULL, NULL, types[t]), *list = NULL, *i;

		if (!h)
			break;
		if (fi_getinfo(FAB_VERSION, NULL, NULL, 0, h, &list))
			list = NULL;
		fi_freeinfo(h);
		for (i = list; i && n < max; i = i->next) {
			/* layered utility providers ("tcp;ofi_rxm") are not ours to drive */
			if (strchr(i->fabric_attr->prov_name, ';') ||
			    seen(out, n, i->fabric_attr->prov_name))
				continue;
			fill_caps(&out[n], i, t == 1);
			out[n].has_fd = 2;  /* unknown until opened */
			n++;
		}
		fi_freeinfo(list);
	}
	return n;
}
