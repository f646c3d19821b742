/* SPDX-License-Identifier: BSD-2-Clause */
/* A client's callback service (RFC 8167 backchannel): calls its server makes back over
 * the client's own connection, dispatched to rpcgen dispatch functions through an
 * SVCXPRT of their own, so that svc_getargs(), svc_sendreply(), svcerr_*() and
 * svc_getrpccaller() work as in any libtirpc server. The engine hands each call up
 * whole; it waits here, in arrival order, until the client's background thread
 * dispatches it (rpcrdma__cb_run). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rpc_int.h"

#include <rpc/svc_auth.h>

#define MAX_PROGS 16
#define REPLY_SLACK (256u + 2u * MAX_AUTH_BYTES)
#define CLNTCRED_SIZE 1024   /* the decoded credential (libtirpc keeps 400, RQCRED_SIZE) */

struct cb_call {
	struct cb_call *next;
	uint32_t xid;
	uint64_t gen;
	uint32_t len;
	uint8_t data[];
};

struct cb_prog {
	rpcprog_t prog;
	rpcvers_t vers;
	rpcrdma_dispatch_fn dispatch;
};

struct rpcrdma__cbsvc {
	SVCXPRT xprt;
	SVCXPRT_EXT ext;
	pthread_mutex_t lock;            /* the queue and the table */
	struct cb_call *head, *tail;
	struct cb_prog progs[MAX_PROGS];
	int nprogs;
	rpcrdma__cb_send_fn send;
	void *ctx;
	/* the call being dispatched (only the dispatching thread touches these) */
	struct cb_call *cur;
	struct rpcrdma__xdr dec;
	int replied;
};

static struct rpcrdma__cbsvc *cb_of(SVCXPRT *x)
{
	return (struct rpcrdma__cbsvc *)x->xp_p1;
}

/* ---- xp_ops ---- */

static bool_t cb_recv(SVCXPRT *x, struct rpc_msg *msg)
{
	(void)x;
	(void)msg;
	return FALSE;   /* calls come from rpcrdma__cb_run, never from svc_run() */
}

static enum xprt_stat cb_stat(SVCXPRT *x)
{
	(void)x;
	return XPRT_IDLE;
}

static bool_t cb_getargs(SVCXPRT *x, xdrproc_t xargs, void *args)
{
	struct rpcrdma__cbsvc *cb = cb_of(x);

	if (SVC_XP_AUTH(x).svc_ah_ops)
		return SVCAUTH_UNWRAP(&SVC_XP_AUTH(x), &cb->dec.x, xargs, args);
	return xargs(&cb->dec.x, args);
}

static bool_t cb_freeargs(SVCXPRT *x, xdrproc_t xargs, void *args)
{
	(void)x;
	xdr_free(xargs, args);
	return TRUE;
}

static bool_t encode_reply(SVCXPRT *x, struct rpc_msg *msg, XDR *enc)
{
	xdrproc_t xres = NULL;
	void *where = NULL;
	bool_t ok;

	if (msg->rm_reply.rp_stat == MSG_ACCEPTED && msg->acpted_rply.ar_stat == SUCCESS &&
	    SVC_XP_AUTH(x).svc_ah_ops) {
		xres = msg->acpted_rply.ar_results.proc;
		where = msg->acpted_rply.ar_results.where;
		msg->acpted_rply.ar_results.proc = RPCRDMA_XDR_VOID;
	}
	ok = xdr_replymsg(enc, msg) &&
	     (!xres || SVCAUTH_WRAP(&SVC_XP_AUTH(x), enc, xres, where));
	if (xres)
		msg->acpted_rply.ar_results.proc = xres;
	return ok;
}

/* The reply goes back inline over the connection the call came on (RFC 8167 §5.2). */
static bool_t cb_reply(SVCXPRT *x, struct rpc_msg *msg)
{
	struct rpcrdma__cbsvc *cb = cb_of(x);
	u_int cap = REPLY_SLACK;
	uint8_t *buf;
	XDR enc;
	int rc;

	if (!cb->cur || cb->replied)
		return FALSE;
	cb->replied = 1;
	msg->rm_xid = cb->cur->xid;
	if (msg->rm_reply.rp_stat == MSG_ACCEPTED && msg->acpted_rply.ar_stat == SUCCESS)
		cap += (u_int)xdr_sizeof(msg->acpted_rply.ar_results.proc,
					 msg->acpted_rply.ar_results.where);
	buf = malloc(cap);
	if (!buf)
		return FALSE;
	xdrmem_create(&enc, (char *)buf, cap, XDR_ENCODE);
	rc = encode_reply(x, msg, &enc) ? 0 : -RPCRDMA_ERR_NOSPC;
	if (!rc)
		rc = cb->send(cb->ctx, cb->cur->xid, cb->cur->gen, buf, XDR_GETPOS(&enc));
	XDR_DESTROY(&enc);
	free(buf);
	return rc == 0;
}

static void cb_destroy_xprt(SVCXPRT *x)
{
	(void)x;   /* lives as long as its client */
}

static bool_t cb_control(SVCXPRT *x, const u_int req, void *info)
{
	(void)x;
	(void)req;
	(void)info;
	return FALSE;
}

static const struct xp_ops cb_ops = {
	.xp_recv = cb_recv,
	.xp_stat = cb_stat,
	.xp_getargs = cb_getargs,
	.xp_reply = cb_reply,
	.xp_freeargs = cb_freeargs,
	.xp_destroy = cb_destroy_xprt,
};

static const struct xp_ops2 cb_ops2 = { .xp_control = cb_control };

/* ---- life ---- */

struct rpcrdma__cbsvc *rpcrdma__cb_create(rpcrdma__cb_send_fn send, void *ctx)
{
	struct rpcrdma__cbsvc *cb = calloc(1, sizeof(*cb));

	if (!cb)
		return NULL;
	pthread_mutex_init(&cb->lock, NULL);
	cb->send = send;
	cb->ctx = ctx;
	cb->xprt.xp_ops = &cb_ops;
	cb->xprt.xp_ops2 = &cb_ops2;
	cb->xprt.xp_p1 = cb;
	cb->xprt.xp_p3 = &cb->ext;
	cb->xprt.xp_fd = -1;
	cb->xprt.xp_tp = "rdma";
	cb->xprt.xp_netid = "rdma";
	return cb;
}

/* The server's address, for svc_getrpccaller() in a dispatch function. */
void rpcrdma__cb_set_peer(struct rpcrdma__cbsvc *cb, const struct netbuf *addr, int v6)
{
	cb->xprt.xp_rtaddr = *addr;
	cb->xprt.xp_netid = v6 ? "rdma6" : "rdma";
}

void rpcrdma__cb_destroy(struct rpcrdma__cbsvc *cb)
{
	struct cb_call *c;

	if (!cb)
		return;
	while ((c = cb->head) != NULL) {
		cb->head = c->next;
		free(c);
	}
	if (SVC_XP_AUTH(&cb->xprt).svc_ah_ops)
		SVCAUTH_DESTROY(&SVC_XP_AUTH(&cb->xprt));
	pthread_mutex_destroy(&cb->lock);
	free(cb);
}

int rpcrdma__cb_register(struct rpcrdma__cbsvc *cb, rpcprog_t prog, rpcvers_t vers,
			 rpcrdma_dispatch_fn dispatch)
{
	int i, rc = 0;

	pthread_mutex_lock(&cb->lock);
	for (i = 0; i < cb->nprogs; i++)
		if (cb->progs[i].prog == prog && cb->progs[i].vers == vers)
			break;
	if (!dispatch) {                     /* unregister */
		if (i < cb->nprogs)
			cb->progs[i] = cb->progs[--cb->nprogs];
	} else if (i < cb->nprogs) {
		cb->progs[i].dispatch = dispatch;
	} else if (cb->nprogs == MAX_PROGS) {
		rc = -RPCRDMA_ERR_NOSPC;
	} else {
		cb->progs[cb->nprogs++] = (struct cb_prog){ prog, vers, dispatch };
	}
	pthread_mutex_unlock(&cb->lock);
	return rc;
}

int rpcrdma__cb_active(struct rpcrdma__cbsvc *cb)
{
	int n;

	pthread_mutex_lock(&cb->lock);
	n = cb->nprogs;
	pthread_mutex_unlock(&cb->lock);
	return n;
}

/* A backward call the engine handed up (the bytes are copied: they live in a receive
 * buffer). gen: the connection it came on. Returns -1 when it could not be kept. */
int rpcrdma__cb_enqueue(struct rpcrdma__cbsvc *cb, uint32_t xid, uint64_t gen,
			const void *call, uint32_t len)
{
	struct cb_call *c = malloc(sizeof(*c) + len);

	if (!c)
		return -1;
	c->next = NULL;
	c->xid = xid;
	c->gen = gen;
	c->len = len;
	memcpy(c->data, call, len);
	pthread_mutex_lock(&cb->lock);
	if (cb->tail)
		cb->tail->next = c;
	else
		cb->head = c;
	cb->tail = c;
	pthread_mutex_unlock(&cb->lock);
	return 0;
}

int rpcrdma__cb_pending(struct rpcrdma__cbsvc *cb)
{
	int any;

	pthread_mutex_lock(&cb->lock);
	any = cb->head != NULL;
	pthread_mutex_unlock(&cb->lock);
	return any;
}

/* ---- dispatch ---- */

static struct cb_call *pop(struct rpcrdma__cbsvc *cb, struct cb_prog *progs, int *nprogs)
{
	struct cb_call *c;

	pthread_mutex_lock(&cb->lock);
	c = cb->head;
	if (c) {
		cb->head = c->next;
		if (!cb->head)
			cb->tail = NULL;
	}
	memcpy(progs, cb->progs, sizeof(cb->progs));
	*nprogs = cb->nprogs;
	pthread_mutex_unlock(&cb->lock);
	return c;
}

/* As svc_getreq_common() does for a call: the program and version registered get it;
 * a known program without that version gets PROG_MISMATCH, any other PROG_UNAVAIL. */
static void route(struct rpcrdma__cbsvc *cb, struct svc_req *r, const struct cb_prog *progs,
		  int n)
{
	rpcvers_t lo = (rpcvers_t)-1, hi = 0;
	int i, known = 0;

	for (i = 0; i < n; i++) {
		if (progs[i].prog != r->rq_prog)
			continue;
		if (progs[i].vers == r->rq_vers) {
			progs[i].dispatch(r, &cb->xprt);
			return;
		}
		known = 1;
		lo = progs[i].vers < lo ? progs[i].vers : lo;
		hi = progs[i].vers > hi ? progs[i].vers : hi;
	}
	if (known)
		svcerr_progvers(&cb->xprt, lo, hi);
	else
		svcerr_noprog(&cb->xprt);
}

static void dispatch_one(struct rpcrdma__cbsvc *cb, struct cb_call *c,
			 const struct cb_prog *progs, int n)
{
	char cred[2 * MAX_AUTH_BYTES + CLNTCRED_SIZE];
	struct rpc_msg msg;
	struct svc_req r;
	enum auth_stat why;

	memset(&msg, 0, sizeof(msg));
	memset(&r, 0, sizeof(r));
	msg.rm_call.cb_cred.oa_base = cred;
	msg.rm_call.cb_verf.oa_base = &cred[MAX_AUTH_BYTES];
	r.rq_clntcred = &cred[2 * MAX_AUTH_BYTES];
	cb->cur = c;
	cb->replied = 0;
	rpcrdma__xdr_decode(&cb->dec, c->data, c->len);
	if (!xdr_callmsg(&cb->dec.x, &msg))
		return;   /* no header to answer: dropped, as a TCP server does */
	r.rq_xprt = &cb->xprt;
	r.rq_prog = msg.rm_call.cb_prog;
	r.rq_vers = msg.rm_call.cb_vers;
	r.rq_proc = msg.rm_call.cb_proc;
	r.rq_cred = msg.rm_call.cb_cred;
	cb->xprt.xp_verf = _null_auth;
	why = _authenticate(&r, &msg);
	if (why != AUTH_OK) {
		svcerr_auth(&cb->xprt, why);
		return;
	}
	route(cb, &r, progs, n);
}

/* Dispatch every call waiting, in order, on the calling thread (the client's background
 * thread). Called without the client's lock: a dispatch function may call the client.
 * Returns how many were dispatched. */
int rpcrdma__cb_run(struct rpcrdma__cbsvc *cb)
{
	struct cb_prog progs[MAX_PROGS];
	struct cb_call *c;
	int n = 0, np;

	while ((c = pop(cb, progs, &np)) != NULL) {
		dispatch_one(cb, c, progs, np);
		cb->cur = NULL;
		free(c);
		n++;
	}
	return n;
}
