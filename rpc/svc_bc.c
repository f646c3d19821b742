/* SPDX-License-Identifier: BSD-2-Clause */
/* A CLIENT * over a server connection's backchannel (RFC 8167): rpcgen client stubs call
 * the client that opened the connection. Each call is encoded whole (backward calls are
 * inline only), sent by the connection's engine within the backward credits the client
 * granted, and waited for here; the listener's progress thread completes it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rpc_int.h"

#define DEF_TIMEOUT_MS 25000
#define CALL_SLACK (128u + 2u * MAX_AUTH_BYTES)

struct bc_clnt {
	CLIENT cl;
	SVCXPRT *conn;
	struct rpcrdma__clnt_ids ids;   /* XID, program, version, timeouts */
	pthread_mutex_t lock;        /* err: several threads may call at once */
	struct rpc_err err;          /* of the last call to finish */
};

static struct bc_clnt *bc_of(CLIENT *cl)
{
	return (struct bc_clnt *)cl->cl_private;
}

static enum clnt_stat fail(struct rpc_err *err, enum clnt_stat stat, int eno)
{
	memset(err, 0, sizeof(*err));
	err->re_status = stat;
	err->re_errno = eno;
	return stat;
}

/* The whole call, header, credential and arguments, into a buffer of its own. */
static enum clnt_stat encode(struct bc_clnt *bc, rpcproc_t proc, xdrproc_t xargs, void *args,
			     uint8_t **buf, uint32_t *len)
{
	u_int cap = CALL_SLACK + (u_int)xdr_sizeof(xargs, args), p = (u_int)proc;
	struct rpc_msg msg;
	bool_t ok;
	XDR x;

	*buf = malloc(cap);
	if (!*buf)
		return RPC_SYSTEMERROR;
	memset(&msg, 0, sizeof(msg));
	msg.rm_xid = rpcrdma__ids_next_xid(&bc->ids);
	msg.rm_direction = CALL;
	msg.rm_call.cb_rpcvers = RPC_MSG_VERSION;
	msg.rm_call.cb_prog = bc->ids.prog;
	msg.rm_call.cb_vers = bc->ids.vers;
	xdrmem_create(&x, (char *)*buf, cap, XDR_ENCODE);
	ok = xdr_callhdr(&x, &msg) && xdr_u_int(&x, &p) && AUTH_MARSHALL(bc->cl.cl_auth, &x) &&
	     AUTH_WRAP(bc->cl.cl_auth, &x, xargs, args);
	*len = XDR_GETPOS(&x);
	XDR_DESTROY(&x);
	return ok ? RPC_SUCCESS : RPC_CANTENCODEARGS;
}

static enum clnt_stat decode(struct bc_clnt *bc, const uint8_t *rep, uint32_t len,
			     xdrproc_t xres, void *res, struct rpc_err *err)
{
	XDR x;

	xdrmem_create(&x, (char *)(uintptr_t)rep, len, XDR_DECODE);
	rpcrdma__reply_take(&x, bc->cl.cl_auth, xres, res, err);
	XDR_DESTROY(&x);
	return err->re_status;
}

/* What the transport's outcome means to the caller (docs/RPC.md, "Backchannel"). */
static enum clnt_stat transport_stat(int rc, struct rpc_err *err)
{
	switch (rc) {
	case -RPCRDMA_ERR_TIMEDOUT:
		return fail(err, RPC_TIMEDOUT, 0);
	case -RPCRDMA_ERR_NOSPC:
		return fail(err, RPC_CANTENCODEARGS, EMSGSIZE);
	case -RPCRDMA_ERR_AGAIN:
		return fail(err, RPC_CANTSEND, EDEADLK);
	case -RPCRDMA_ERR_DISCONN:
		return fail(err, RPC_CANTSEND, ECONNRESET);
	case -RPCRDMA_ERR_NOMEM:
		return fail(err, RPC_SYSTEMERROR, ENOMEM);
	default:
		return fail(err, RPC_CANTRECV, EIO);
	}
}

static enum clnt_stat bc_call(CLIENT *cl, rpcproc_t proc, xdrproc_t xargs, void *args,
			      xdrproc_t xres, void *res, struct timeval tv)
{
	struct bc_clnt *bc = bc_of(cl);
	struct rpcrdma__bcw w;
	struct rpc_err err;
	enum clnt_stat stat;
	uint8_t *buf = NULL;
	uint32_t len;
	int rc, ms = rpcrdma__ids_timeout(&bc->ids, tv);

	stat = encode(bc, proc, xargs, args, &buf, &len);
	if (stat != RPC_SUCCESS) {
		fail(&err, stat, 0);
	} else {
		memset(&w, 0, sizeof(w));
		pthread_cond_init(&w.cv, NULL);
		rc = rpcrdma__svc_bc_call(bc->conn, buf, len, &w,
					  rpcrdma__rpc_now() + (uint64_t)ms);
		pthread_cond_destroy(&w.cv);
		stat = rc ? transport_stat(rc, &err)
			  : decode(bc, w.reply, w.reply_len, xres, res, &err);
		free(w.reply);
	}
	free(buf);
	pthread_mutex_lock(&bc->lock);
	bc->err = err;
	pthread_mutex_unlock(&bc->lock);
	return stat;
}

static void bc_abort(CLIENT *cl)
{
	(void)cl;
}

static void bc_geterr(CLIENT *cl, struct rpc_err *err)
{
	struct bc_clnt *bc = bc_of(cl);

	pthread_mutex_lock(&bc->lock);
	*err = bc->err;
	pthread_mutex_unlock(&bc->lock);
}

static bool_t bc_freeres(CLIENT *cl, xdrproc_t xres, void *res)
{
	(void)cl;
	xdr_free(xres, res);
	return TRUE;
}

static void bc_destroy(CLIENT *cl)
{
	struct bc_clnt *bc = bc_of(cl);

	/* cl_auth is the caller's, as with every libtirpc client */
	rpcrdma__svc_conn_release(bc->conn);
	pthread_mutex_destroy(&bc->lock);
	free(bc);
}

static bool_t bc_control(CLIENT *cl, u_int req, void *info)
{
	struct bc_clnt *bc = bc_of(cl);
	bool_t ok;

	if (!info)
		return FALSE;
	if (rpcrdma__ids_control(&bc->ids, req, info, &ok))
		return ok;
	if (req != CLGET_SVC_ADDR)
		return FALSE;
	*(struct netbuf *)info = bc->conn->xp_rtaddr;
	return TRUE;
}

static struct clnt_ops bc_ops = {
	.cl_call = bc_call,
	.cl_abort = bc_abort,
	.cl_geterr = bc_geterr,
	.cl_freeres = bc_freeres,
	.cl_destroy = bc_destroy,
	.cl_control = bc_control,
};

CLIENT *svc_rdma_bc_create(SVCXPRT *conn, rpcprog_t prog, rpcvers_t vers)
{
	struct bc_clnt *bc = calloc(1, sizeof(*bc));

	if (!bc || rpcrdma__svc_conn_hold(conn)) {
		rpc_createerr.cf_stat = bc ? RPC_UNKNOWNPROTO : RPC_SYSTEMERROR;
		rpc_createerr.cf_error.re_errno = bc ? EINVAL : ENOMEM;
		free(bc);
		return NULL;
	}
	pthread_mutex_init(&bc->lock, NULL);
	bc->conn = conn;
	rpcrdma__ids_init(&bc->ids, prog, vers, DEF_TIMEOUT_MS);
	bc->cl.cl_ops = &bc_ops;
	bc->cl.cl_private = bc;
	bc->cl.cl_auth = authnone_create();
	bc->cl.cl_netid = conn->xp_netid;
	bc->cl.cl_tp = "rdma";
	return &bc->cl;
}
