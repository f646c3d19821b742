/* SPDX-License-Identifier: BSD-2-Clause */
/* The libfabric provider: native connections over FI_EP_MSG (tcp, verbs), with the
 * sockets libfabric's tcp listener loses reaped (tcp_reap.c). */
#include "fabric_int.h"

/* ---- MSG connections ---- */

static void port_str(uint16_t port, char *buf, size_t len)
{
	snprintf(buf, len, "%u", port);
}

static struct fi_info *addr_info(struct fab_prov *fp, const char *host, uint16_t port,
				 uint64_t flags, int *rc)
{
	struct fi_info *hints = fi_dupinfo(fp->info), *info = NULL;
	char ps[8];

	if (!hints) {
		*rc = -RPCRDMA_ERR_NOMEM;
		return NULL;
	}
	free(hints->src_addr);
	free(hints->dest_addr);
	hints->src_addr = hints->dest_addr = NULL;
	hints->src_addrlen = hints->dest_addrlen = 0;
	hints->addr_format = FI_FORMAT_UNSPEC;
	free(hints->fabric_attr->name);
	hints->fabric_attr->name = NULL;
	free(hints->domain_attr->name);
	hints->domain_attr->name = NULL;
	port_str(port, ps, sizeof(ps));
	*rc = rpcrdma__fab_map_err(fi_getinfo(FAB_VERSION, host, ps, flags, hints, &info));
	if (*rc == -RPCRDMA_ERR_INVAL || *rc == -RPCRDMA_ERR_IO)
		*rc = -RPCRDMA_ERR_ADDR;
	fi_freeinfo(hints);
	return info;
}

static uint16_t sockaddr_port(const void *sa)
{
	const struct sockaddr *s = sa;

	if (s->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (s->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

/* The listener's descriptor: new connection requests, and the completions and events
 * of the connections it accepted. */
static int listener_epoll(struct fab_listener *l)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = l->sh->fd };
	struct epoll_event eqev = { .events = EPOLLIN, .data.fd = l->sh->eq_fd };

	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0 || rpcrdma__fab_add_wait_fd(l->epfd, &l->eq->fid) ||
	    epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->sh->fd, &ev) ||
	    (l->sh->eq_fd >= 0 && epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->sh->eq_fd, &eqev)))
		return -RPCRDMA_ERR_IO;
	return 0;
}

int rpcrdma__fab_msg_listen(struct fab_prov *fp, const char *host, uint16_t port,
			    struct fab_listener *l)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_FD };
	struct sockaddr_storage ss;
	size_t sslen = sizeof(ss);
	struct fi_info *info;
	int rc;

	info = addr_info(fp, host ? host : "0.0.0.0", port, FI_SOURCE, &rc);
	if (!info)
		return rc;
	rc = rpcrdma__fab_map_err(fi_passive_ep(fp->fabric, info, &l->pep, l));
	fi_freeinfo(info);
	if (rc)
		return rc;
	rc = rpcrdma__fab_map_err(fi_eq_open(fp->fabric, &eqa, &l->eq, NULL));
	if (!rc)
		rc = rpcrdma__fab_map_err(fi_pep_bind(l->pep, &l->eq->fid, 0));
	if (!rc)
		rc = rpcrdma__fab_shcq_open(fp, &l->sh);
	if (!rc && l->sh->fd >= 0)
		rc = listener_epoll(l);
	if (!rc)
		rc = rpcrdma__fab_map_err(fi_listen(l->pep));
	if (!rc && fi_getname(&l->pep->fid, &ss, &sslen) == 0)
		l->base.port = sockaddr_port(&ss);
	return rc == -RPCRDMA_ERR_IO ? -RPCRDMA_ERR_ADDR : rc;
}

static int eq_wait(struct fid_eq *eq, int timeout_ms, uint32_t *event, void *buf, size_t len,
		   struct fi_eq_err_entry *err)
{
	ssize_t rc;

	rpcrdma__fab_clear_errno();
	rc = fi_eq_sread(eq, event, buf, len, timeout_ms, 0);

	if (rc == -FI_EAVAIL) {
		memset(err, 0, sizeof(*err));
		fi_eq_readerr(eq, err, 0);
		return rpcrdma__fab_map_err(err->err ? err->err : FI_EIO);
	}
	if (rc == -FI_EAGAIN || rc == -FI_ETIMEDOUT)
		return -RPCRDMA_ERR_TIMEDOUT;
	return rc < 0 ? rpcrdma__fab_map_err((int)rc) : (int)rc;
}

/* libfabric's tcp listener loses sockets whose peers never sent a connection request
 * (tcp_reap.c): close them, now and then, sparing every live connection. While one of
 * them has ends libfabric could not tell (its peer died during the accept), nothing is
 * reaped: its socket, in CLOSE-WAIT, would look lost, and retiring it under libfabric
 * made a later close crash (hostile_tcp, once in CI). */
static void reap_lost(struct fab_listener *l, int64_t every_ms)
{
	struct rpcrdma__tcp_pair *live = NULL;
	int64_t now = rpcrdma__now_ms();
	size_t n = 0, i = 0;
	struct fab_ep *e;

	if (strcmp(l->fp->base.caps.name, "tcp") || now - l->last_reap < every_ms)
		return;
	l->last_reap = now;
	for (e = l->accepted; e; e = e->lst_next) {
		if (!e->pair_known)
			return;
		n++;
	}
	if (n && !(live = malloc(n * sizeof(*live))))
		return;
	for (e = l->accepted; e; e = e->lst_next)
		live[i++] = e->pair;
	rpcrdma__tcp_reap(&l->reaper, l->base.port, live, n, now);
	free(live);
}

/* The server is quiet: time to look for lost sockets. */
void rpcrdma__fab_msg_prepare(struct fab_listener *l)
{
	reap_lost(l, REAP_EVERY_MS);
}

void rpcrdma__fab_remember_accepted(struct fab_listener *l, struct fab_ep *e)
{
	size_t ll = sizeof(e->pair.local), pl = sizeof(e->pair.peer);

	e->pair_known = !fi_getname(&e->ep->fid, &e->pair.local, &ll) &&
			!fi_getpeer(e->ep, &e->pair.peer, &pl);
	e->lst = l;
	e->lst_next = l->accepted;
	if (l->accepted)
		l->accepted->lst_prev = e;
	l->accepted = e;
}

int rpcrdma__fab_msg_get(struct fab_listener *l, int timeout_ms, struct fab_connreq *r)
{
	struct fab_cm_buf buf;
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : rpcrdma__now_ms() + timeout_ms;
	struct fi_eq_err_entry err;
	uint32_t event = 0;
	int rc;

	/* the look costs two netlink queries (~0.1 ms, 2.7 ms under strace): made while the
	 * server is quiet (rpcrdma__fab_msg_prepare), here only for a server never quiet; in
	 * front of a request that woke an idle server it made ping -i 0.2 slower */
	reap_lost(l, REAP_BUSY_MS);
	/* other events on a listener (none expected) are skipped, within the time given */
	do {
		int64_t left = deadline - rpcrdma__now_ms();

		rc = eq_wait(l->eq, timeout_ms < 0 ? -1 : (int)(left > 0 ? left : 0), &event, &buf,
			     sizeof(buf), &err);
		if (rc < 0 && rc != -RPCRDMA_ERR_TIMEDOUT && rpcrdma__now_ms() < deadline)
			continue;  /* an error event about an earlier request: keep listening */
		if (rc < 0)
			return rc;
	} while (event != FI_CONNREQ);  /* entry.info is defined for FI_CONNREQ only */
	r->info = buf.ent.info;
	rpcrdma__fab_copy_pdata(r->base.pdata, &r->base.pdata_len, buf.data,
		   (size_t)rc > sizeof(buf.ent) ? (size_t)rc - sizeof(buf.ent) : 0);
	return 0;
}

/* Wait for FI_CONNECTED on the endpoint's EQ; its data is the peer's private data. */
static int msg_wait_connected(struct fab_ep *e, int timeout_ms)
{
	struct fab_cm_buf buf;
	struct fi_eq_err_entry err;
	uint32_t event;
	int rc = eq_wait(e->eq, timeout_ms, &event, &buf, sizeof(buf), &err);

	if (rc == -RPCRDMA_ERR_REFUSED && err.err_data_size > 0)
		return -RPCRDMA_ERR_REJECTED;
	if (rc < 0)
		return rc;
	if (event != FI_CONNECTED)
		return -RPCRDMA_ERR_DISCONN;
	rpcrdma__fab_copy_pdata(e->base.peer_pdata, &e->base.peer_pdata_len, buf.data,
		   (size_t)rc > sizeof(buf.ent) ? (size_t)rc - sizeof(buf.ent) : 0);
	e->base.connected = 1;
	return 0;
}

/* The same on the listener's shared queue, whose events any of its users may read and
 * hand to their endpoints (rpcrdma__fab_sheq_drain): sleeps in slices, as another
 * thread's read of our event does not wake us. */
#define ACCEPT_SLICE_MS 10

static int sheq_wait_connected(struct fab_ep *e, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : rpcrdma__now_ms() + timeout_ms;
	struct fab_shcq *sh = e->sh;
	unsigned naps = 0;

	for (;;) {
		rpcrdma__fab_sheq_drain(sh);
		if (e->ev_err)
			return rpcrdma__fab_map_err(e->ev_err);
		if (e->ev_lost)
			return -RPCRDMA_ERR_DISCONN;
		if (e->ev_connected) {
			e->base.connected = 1;
			return 0;
		}
		if (rpcrdma__now_ms() >= deadline)
			return -RPCRDMA_ERR_TIMEDOUT;
		if (sh->eq_fd < 0) {
			rpcrdma__fab_backoff(&naps);
		} else if (fi_trywait(e->fp->fabric, &(struct fid *){ &sh->eq->fid }, 1) ==
			   FI_SUCCESS) {
			struct pollfd p = { .fd = sh->eq_fd, .events = POLLIN };
			int64_t left = deadline - rpcrdma__now_ms();

			pthread_mutex_unlock(&sh->lock);
			(void)poll(&p, 1, left < ACCEPT_SLICE_MS ? (int)(left > 0 ? left : 0)
								 : ACCEPT_SLICE_MS);
			pthread_mutex_lock(&sh->lock);
		}
	}
}

int rpcrdma__fab_msg_accept(struct fab_connreq *r, const void *pdata, size_t len, int timeout_ms,
			    struct fab_ep **out)
{
	struct fab_ep *e;
	int rc = rpcrdma__fab_ep_open(r->l->fp, r->info, NULL, r->l->sh, &e);

	if (rc) {
		fi_reject(r->l->pep, r->info->handle, REJECT_MARK, 4);
		return rc;
	}
	pthread_mutex_lock(&e->sh->lock);
	rc = rpcrdma__fab_map_err(fi_accept(e->ep, pdata, len));
	if (!rc)
		rc = sheq_wait_connected(e, timeout_ms);
	pthread_mutex_unlock(&e->sh->lock);
	if (rc) {
		rpcrdma__fab_ep_free(e);
		return rc;
	}
	*out = e;
	return 0;
}

int rpcrdma__fab_msg_connect(struct fab_prov *fp, const char *host, uint16_t port, const void *pdata,
			     size_t len, int timeout_ms, struct fab_ep **out)
{
	struct fi_info *info;
	struct fab_ep *e;
	int rc;

	info = addr_info(fp, host, port, 0, &rc);
	if (!info)
		return rc;
	rc = rpcrdma__fab_ep_open(fp, info, NULL, NULL, &e);
	if (!rc) {
		rc = rpcrdma__fab_map_err(fi_connect(e->ep, info->dest_addr, pdata, len));
		if (!rc)
			rc = msg_wait_connected(e, timeout_ms);
		/* reached, then the handshake broke: something answers there that is not a
		 * libfabric peer (a plain TCP service, a proxy), not an RDMA failure */
		if (rc == -RPCRDMA_ERR_IO)
			rc = -RPCRDMA_ERR_DISCONN;
		if (rc)
			rpcrdma__fab_ep_free(e);
	}
	fi_freeinfo(info);
	if (!rc)
		*out = e;
	return rc;
}
