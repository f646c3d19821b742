/* SPDX-License-Identifier: BSD-2-Clause */
/* The provider layer's public face: argument checks, then the implementation's ops. */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "pcap_int.h"
#include "prov_int.h"

int rpcrdma_prov_open(const char *name, struct rpcrdma_prov **out, char *err, size_t errlen)
{
	if (!out)
		return -RPCRDMA_ERR_INVAL;
	if (err && errlen)
		err[0] = '\0';
	if (!name)
		name = "tcp";
#ifdef RPCRDMA_HAVE_VERBS
	/* our own verbs provider (RFC 8797's private data as kernel peers read it) */
	if (!strcmp(name, "verbs"))
		return rpcrdma__prov_verbs_open(NULL, out, err, errlen);
	if (!strncmp(name, "verbs:", 6))
		return rpcrdma__prov_verbs_open(name + 6, out, err, errlen);
#endif
	/* "fi_NAME": libfabric's provider of that name, where ours has it too */
	if (!strncmp(name, "fi_", 3))
		name += 3;
	return rpcrdma__prov_fabric_open(name, out, err, errlen);
}

void rpcrdma_prov_close(struct rpcrdma_prov *p)
{
	if (p)
		p->ops->close(p);
}

const struct rpcrdma_prov_caps *rpcrdma_prov_caps(const struct rpcrdma_prov *p)
{
	return p ? &p->caps : NULL;
}

int rpcrdma_prov_probe(struct rpcrdma_prov_caps *out, int max)
{
	int n;

	if (!out || max < 0)
		return -RPCRDMA_ERR_INVAL;
	n = rpcrdma__prov_fabric_probe(out, max);
#ifdef RPCRDMA_HAVE_VERBS
	{
		int i;

		for (i = 0; i < n; i++)   /* libfabric's verbs answers to "fi_verbs" */
			if (!strcmp(out[i].name, "verbs"))
				snprintf(out[i].name, sizeof(out[i].name), "fi_verbs");
		n += rpcrdma__prov_verbs_probe(out + n, max - n);
	}
#endif
	return n;
}

int rpcrdma_listen(struct rpcrdma_prov *p, const char *host, uint16_t port,
		   struct rpcrdma_listener **out)
{
	if (!p || !out)
		return -RPCRDMA_ERR_INVAL;
	return p->ops->listen(p, host, port, out);
}

uint16_t rpcrdma_listener_port(const struct rpcrdma_listener *l)
{
	return l ? l->port : 0;
}

int rpcrdma_listener_fd(const struct rpcrdma_listener *l)
{
	return l ? l->prov->ops->listener_fd(l) : -1;
}

int rpcrdma_listener_addr(const struct rpcrdma_listener *l, void *addr, size_t *len)
{
	if (!l || !addr || !len)
		return -RPCRDMA_ERR_INVAL;
	if (!l->prov->ops->listener_addr)
		return -RPCRDMA_ERR_NOPROV;
	return l->prov->ops->listener_addr(l, addr, len);
}

int rpcrdma_listener_get(struct rpcrdma_listener *l, int timeout_ms, struct rpcrdma_connreq **req)
{
	if (!l || !req)
		return -RPCRDMA_ERR_INVAL;
	return l->prov->ops->listener_get(l, timeout_ms, req);
}

void rpcrdma_listener_close(struct rpcrdma_listener *l)
{
	if (l)
		l->prov->ops->listener_close(l);
}

const void *rpcrdma_connreq_pdata(const struct rpcrdma_connreq *r, size_t *len)
{
	if (len)
		*len = r ? r->pdata_len : 0;
	return r ? r->pdata : NULL;
}

static int pdata_ok(const void *pdata, size_t len)
{
	return len <= RPCRDMA_PDATA_MAX && (pdata || !len);
}

/* A new connection remembers its side and what it sent, and joins the default capture
 * (whose failure never fails the connection). */
static int connected(int rc, struct rpcrdma_ep **out, int active, const void *pdata,
		     size_t len)
{
	struct rpcrdma_pcap *c;
	struct rpcrdma_ep *ep;

	if (rc)
		return rc;
	ep = *out;
	ep->active = active;
	ep->my_pdata_len = len;
	if (len)
		memcpy(ep->my_pdata, pdata, len);
	c = rpcrdma_pcap_default();
	if (c)
		rpcrdma_ep_capture(ep, c);
	return 0;
}

/* The capture joins here, not when connected: it must see the receives posted between. */
int rpcrdma_accept_prepare(struct rpcrdma_connreq *r, const void *pdata, size_t len,
			   struct rpcrdma_ep **out)
{
	if (!r || !out)
		return -RPCRDMA_ERR_INVAL;
	if (!r->prov->ops->accept_prepare)
		return -RPCRDMA_ERR_NOTSUP;
	if (!pdata_ok(pdata, len)) {
		r->prov->ops->reject(r, NULL, 0);
		return -RPCRDMA_ERR_INVAL;
	}
	return connected(r->prov->ops->accept_prepare(r, out), out, 0, pdata, len);
}

int rpcrdma_accept_finish(struct rpcrdma_ep *ep, int timeout_ms)
{
	if (!ep || ep->active || ep->connected || !ep->prov->ops->accept_finish)
		return -RPCRDMA_ERR_INVAL;
	return ep->prov->ops->accept_finish(ep, ep->my_pdata, ep->my_pdata_len, timeout_ms);
}

/* A provider that accepts in two steps (verbs) needs no one-step accept of its own. */
static int accept_two_steps(struct rpcrdma_connreq *r, const void *pdata, size_t len,
			    int timeout_ms, struct rpcrdma_ep **out)
{
	struct rpcrdma_ep *ep = NULL;
	int rc = rpcrdma_accept_prepare(r, pdata, len, &ep);

	if (!rc)
		rc = rpcrdma_accept_finish(ep, timeout_ms);
	if (rc) {
		rpcrdma_ep_close(ep);   /* NULL when the prepare failed */
		return rc;
	}
	*out = ep;
	return 0;
}

int rpcrdma_accept(struct rpcrdma_connreq *r, const void *pdata, size_t len, int timeout_ms,
		   struct rpcrdma_ep **out)
{
	if (!r || !out)
		return -RPCRDMA_ERR_INVAL;
	if (r->prov->ops->accept_prepare)
		return accept_two_steps(r, pdata, len, timeout_ms, out);
	if (!pdata_ok(pdata, len)) {
		r->prov->ops->reject(r, NULL, 0);
		return -RPCRDMA_ERR_INVAL;
	}
	return connected(r->prov->ops->accept(r, pdata, len, timeout_ms, out), out, 0, pdata, len);
}

void rpcrdma_reject(struct rpcrdma_connreq *r, const void *pdata, size_t len)
{
	if (!r)
		return;
	if (!pdata_ok(pdata, len))
		len = 0;
	r->prov->ops->reject(r, pdata, len);
}

int rpcrdma_connect(struct rpcrdma_prov *p, const char *host, uint16_t port, const void *pdata,
		    size_t len, int timeout_ms, struct rpcrdma_ep **out)
{
	if (!p || !out || !pdata_ok(pdata, len))
		return -RPCRDMA_ERR_INVAL;
	return connected(p->ops->connect(p, host, port, pdata, len, timeout_ms, out), out, 1,
			 pdata, len);
}

const void *rpcrdma_ep_peer_pdata(const struct rpcrdma_ep *ep, size_t *len)
{
	if (len)
		*len = ep ? ep->peer_pdata_len : 0;
	return ep ? ep->peer_pdata : NULL;
}

int rpcrdma_ep_connected(const struct rpcrdma_ep *ep)
{
	return ep ? ep->connected : 0;
}

void rpcrdma_ep_close(struct rpcrdma_ep *ep)
{
	if (!ep)
		return;
	rpcrdma__cap_ep_free(ep->cap);
	ep->cap = NULL;
	ep->prov->ops->ep_close(ep);
}

static int access_ok(unsigned access)
{
	return !(access & ~(unsigned)(RPCRDMA_ACC_REMOTE_READ | RPCRDMA_ACC_REMOTE_WRITE |
				      RPCRDMA_ACC_READ_SINK));
}

int rpcrdma_mr_reg(struct rpcrdma_prov *p, void *addr, size_t len, unsigned access,
		   struct rpcrdma_mr **out)
{
	int rc;

	if (!p || !addr || !len || !out || !access_ok(access))
		return -RPCRDMA_ERR_INVAL;
	rc = p->ops->mr_reg(p, addr, len, access, out);
	if (!rc)
		rpcrdma__cap_mr_add(*out);
	return rc;
}

int rpcrdma_ep_mr_reg(struct rpcrdma_ep *ep, void *addr, size_t len, unsigned access,
		      struct rpcrdma_mr **out)
{
	int rc;

	if (!ep || !ep->prov->ops->ep_mr_reg)
		return rpcrdma_mr_reg(ep ? ep->prov : NULL, addr, len, access, out);
	if (!addr || !len || !out || !access_ok(access))
		return -RPCRDMA_ERR_INVAL;
	rc = ep->prov->ops->ep_mr_reg(ep, addr, len, access, out);
	if (!rc)
		rpcrdma__cap_mr_add(*out);
	return rc;
}

int rpcrdma_mem_add(struct rpcrdma_prov *p, void *addr, size_t len)
{
	if (!p || !addr || !len)
		return -RPCRDMA_ERR_INVAL;
	return p->ops->mem_add ? p->ops->mem_add(p, addr, len) : 0;
}

int rpcrdma_mem_remove(struct rpcrdma_prov *p, void *addr)
{
	if (!p || !addr)
		return -RPCRDMA_ERR_INVAL;
	return p->ops->mem_remove ? p->ops->mem_remove(p, addr) : 0;
}

int rpcrdma_mr_dereg(struct rpcrdma_mr *mr)
{
	if (!mr)
		return 0;
	rpcrdma__cap_mr_del(mr);
	return mr->prov->ops->mr_dereg(mr);
}

static int sge_ok(const struct rpcrdma_sge *sge)
{
	return sge && sge->mr && (uint8_t *)sge->addr >= (uint8_t *)sge->mr->addr &&
	       (size_t)((uint8_t *)sge->addr - (uint8_t *)sge->mr->addr) + sge->len <= sge->mr->len;
}

/* Capture hooks run only after the provider accepted the operation, so the file shows
 * what went on the wire; the capture's order lock is held from before the post, so that
 * nothing the operation causes (the peer's answer, seen by another thread or, both sides
 * in one process, sent by the peer) is queued before it (pcap_int.h). */
static struct rpcrdma_pcap *order_begin(const struct rpcrdma_ep *ep)
{
	struct rpcrdma_pcap *c = ep->cap ? rpcrdma__cap_sink(ep->cap) : NULL;

	if (c)
		rpcrdma__cap_order_lock(c);
	return c;
}

static void order_end(struct rpcrdma_pcap *c)
{
	if (c)
		rpcrdma__cap_order_unlock(c);
}

int rpcrdma_post_recv(struct rpcrdma_ep *ep, const struct rpcrdma_sge *sge, void *ctx)
{
	int rc;

	if (!ep || !sge_ok(sge))
		return -RPCRDMA_ERR_INVAL;
	rc = ep->prov->ops->post_recv(ep, sge, ctx);
	if (!rc && ep->cap)
		rpcrdma__cap_on_recv_post(ep->cap, sge, ctx);
	return rc;
}

int rpcrdma_post_send(struct rpcrdma_ep *ep, const struct rpcrdma_sge *sge, void *ctx)
{
	struct rpcrdma_pcap *c;
	int rc;

	if (!ep || !sge_ok(sge))
		return -RPCRDMA_ERR_INVAL;
	c = order_begin(ep);
	rc = ep->prov->ops->post_send(ep, sge, ctx);
	if (!rc && ep->cap)
		rpcrdma__cap_on_send(ep->cap, sge);
	order_end(c);
	return rc;
}

int rpcrdma_post_send_inv(struct rpcrdma_ep *ep, const struct rpcrdma_sge *sge, uint32_t handle,
			  void *ctx)
{
	struct rpcrdma_pcap *c;
	int rc;

	if (!ep || !sge_ok(sge))
		return -RPCRDMA_ERR_INVAL;
	if (!ep->prov->ops->post_send_inv || !ep->prov->caps.remote_inv)
		return -RPCRDMA_ERR_NOTSUP;
	c = order_begin(ep);
	rc = ep->prov->ops->post_send_inv(ep, sge, handle, ctx);
	if (!rc && ep->cap)
		rpcrdma__cap_on_send_inv(ep->cap, sge, handle);
	order_end(c);
	return rc;
}

static int post_rma(struct rpcrdma_ep *ep, uint32_t op, const struct rpcrdma_sge *local,
		    uint32_t nlocal, const struct rpcrdma_segment *remote, uint32_t nremote,
		    void *ctx)
{
	struct rpcrdma_pcap *c;
	uint64_t total;
	uint32_t i;
	int rc;

	if (!ep)
		return -RPCRDMA_ERR_INVAL;
	rc = rpcrdma__rma_check(local, nlocal, remote, nremote, &total);
	if (rc)
		return rc;
	for (i = 0; i < nlocal; i++)
		if (!sge_ok(&local[i]))
			return -RPCRDMA_ERR_INVAL;
	c = order_begin(ep);
	rc = ep->prov->ops->post_rma(ep, op, local, nlocal, remote, nremote, ctx);
	if (!rc && ep->cap)
		rpcrdma__cap_on_rma(ep->cap, op, local, nlocal, remote, nremote, ctx);
	order_end(c);
	return rc;
}

int rpcrdma_post_read(struct rpcrdma_ep *ep, const struct rpcrdma_sge *local, uint32_t nlocal,
		      const struct rpcrdma_segment *remote, uint32_t nremote, void *ctx)
{
	return post_rma(ep, RPCRDMA_OP_READ, local, nlocal, remote, nremote, ctx);
}

int rpcrdma_post_write(struct rpcrdma_ep *ep, const struct rpcrdma_sge *local, uint32_t nlocal,
		       const struct rpcrdma_segment *remote, uint32_t nremote, void *ctx)
{
	return post_rma(ep, RPCRDMA_OP_WRITE, local, nlocal, remote, nremote, ctx);
}

int rpcrdma_ep_poll(struct rpcrdma_ep *ep, struct rpcrdma_cqe *out, int max)
{
	int n, i;

	if (!ep || !out || max <= 0)
		return -RPCRDMA_ERR_INVAL;
	n = ep->prov->ops->poll(ep, out, max);
	if (n > 0 && ep->cap) {
		struct rpcrdma_pcap *c = order_begin(ep);

		for (i = 0; i < n; i++)
			rpcrdma__cap_on_cqe(ep->cap, &out[i]);
		order_end(c);
	}
	return n;
}

int rpcrdma_ep_wait(struct rpcrdma_ep *ep, int timeout_ms)
{
	if (!ep)
		return -RPCRDMA_ERR_INVAL;
	return ep->prov->ops->wait(ep, timeout_ms);
}

int rpcrdma_ep_fd(const struct rpcrdma_ep *ep)
{
	return ep ? ep->prov->ops->ep_fd(ep) : -1;
}

int rpcrdma_ep_arm(struct rpcrdma_ep *ep)
{
	if (!ep)
		return -RPCRDMA_ERR_INVAL;
	if (!ep->prov->ops->ep_arm || ep->prov->ops->ep_fd(ep) < 0)
		return -RPCRDMA_ERR_NOPROV;
	return ep->prov->ops->ep_arm(ep);
}

void rpcrdma_ep_slept(struct rpcrdma_ep *ep, int fired)
{
	if (ep && ep->prov->ops->ep_slept)
		ep->prov->ops->ep_slept(ep, fired);
}

int rpcrdma_listener_arm(struct rpcrdma_listener *l)
{
	if (!l)
		return -RPCRDMA_ERR_INVAL;
	if (!l->prov->ops->listener_arm || l->prov->ops->listener_fd(l) < 0)
		return -RPCRDMA_ERR_NOPROV;
	return l->prov->ops->listener_arm(l);
}

int rpcrdma_listener_drain(struct rpcrdma_listener *l)
{
	if (!l)
		return -RPCRDMA_ERR_INVAL;
	return l->prov->ops->listener_drain ? l->prov->ops->listener_drain(l) : 0;
}

int rpcrdma_listener_prepare(struct rpcrdma_listener *l)
{
	if (!l)
		return -RPCRDMA_ERR_INVAL;
	return l->prov->ops->listener_prepare ? l->prov->ops->listener_prepare(l) : 0;
}

int rpcrdma_ep_peer_addr(struct rpcrdma_ep *ep, void *addr, size_t *len)
{
	if (!ep || !addr || !len)
		return -RPCRDMA_ERR_INVAL;
	if (!ep->prov->ops->peer_addr)
		return -RPCRDMA_ERR_NOPROV;
	return ep->prov->ops->peer_addr(ep, addr, len);
}

const char *rpcrdma_op_name(uint32_t op)
{
	switch (op) {
	case RPCRDMA_OP_SEND: return "send";
	case RPCRDMA_OP_RECV: return "recv";
	case RPCRDMA_OP_READ: return "read";
	case RPCRDMA_OP_WRITE: return "write";
	case RPCRDMA_OP_DISCONNECT: return "disconnect";
	default: return "unknown";
	}
}
