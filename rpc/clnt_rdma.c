/* A libtirpc CLIENT * over RPC-over-RDMA: rpcgen stubs call clnt_call() through cl_ops as
 * with TCP. Each call is XDR-encoded (DDP-eligible items marked by a binding move to read
 * chunks), run through the engine, and its reply decoded (results placed in write chunks
 * are taken without a copy). Several threads may call at once: whoever waits drives the
 * connection, under the client's lock, so calls pipeline up to the credit window. */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rpc_int.h"

#define DEF_MAX_REPLY (1u << 20)
#define DEF_CONNECT_MS 10000
#define DEF_TIMEOUT_MS 25000
#define WAIT_SLICE_MS 1
#define FLUSH_MS 1000
#define VOID_REPLY_MAX (24 + 2 * MAX_AUTH_BYTES)
#define SPIN_POLLS 20000

struct rdma_clnt;

/* One call in progress. */
struct ccall {
	struct rdma_clnt *ct;
	struct rpcrdma_eng_call *ec;
	struct rpcrdma_call_args a;
	struct rpcrdma__xdr enc;
	uint8_t *buf;
	struct rpcrdma_ddp_buf res[RPCRDMA_DEF_LIST_CHUNKS];
	uint8_t res_caller[RPCRDMA_DEF_LIST_CHUNKS];
	uint32_t nres;
	xdrproc_t xres;
	void *resp;
	int done;
	rpcrdma_clnt_cb cb;          /* asynchronous calls */
	void *cbctx;
	struct rpc_err err;
};

struct rdma_clnt {
	CLIENT cl;
	pthread_mutex_t lock;        /* recursive: callbacks may call in again */
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *ep;
	struct rpcrdma_eng *eng;
	struct rpcrdma_clnt_opts opts;
	rpcprog_t prog;
	rpcvers_t vers;
	uint32_t xid;
	int timeout_ms;              /* CLSET_TIMEOUT; -1: use clnt_call's */
	struct rpc_err err;          /* of the last call */
	struct sockaddr_storage addr;
	size_t addrlen;
	struct netbuf svcaddr;
	int async_pending;
	unsigned idle;               /* empty polls in a row */
	int dead;
	int ccp_done;
	struct rpcrdma_ccp_res ccp;
};

/* RPCRDMA_CLSET_DDP_BUFS, copied, for this thread's next call */
static __thread struct rpcrdma_ddp_bufs next_bufs_copy;
static __thread int next_bufs_set;

/* ---- progress ---- */

/* Feed what the endpoint completed to the engine, waiting up to wait_ms when nothing is
 * there. Called with the lock held. */
static void drive(struct rdma_clnt *ct, int wait_ms)
{
	struct rpcrdma_cqe c[32];
	int i, n;

	n = rpcrdma_ep_poll(ct->ep, c, 32);
	for (i = 0; i < n; i++)
		rpcrdma_eng_on_cqe(ct->eng, &c[i], rpcrdma__rpc_now());
	rpcrdma_eng_tick(ct->eng, rpcrdma__rpc_now());
	if (n)
		ct->idle = 0;
	/* an RDMA operation targeting us moves only while we poll: keep polling a while
	 * before sleeping in the provider's wait */
	else if (wait_ms && !ct->dead && ++ct->idle > SPIN_POLLS)
		rpcrdma_ep_wait(ct->ep, wait_ms);
}

/* ---- building a call ---- */

static void release_results(struct ccall *call)
{
	uint32_t i;

	for (i = 0; i < call->nres; i++)
		if (!call->res_caller[i])
			free(call->res[i].data);
	call->nres = 0;
}

static void free_call(struct ccall *call)
{
	release_results(call);
	free(call->buf);
	free(call);
}

/* Write chunks: the caller's buffers for this call (RPCRDMA_CLSET_DDP_BUFS), or, where
 * the binding says a result is DDP-eligible, buffers of ours handed to the result. */
static void offer_results(struct ccall *call, const struct rpcrdma_ulb_proc *b,
			  const void *args)
{
	uint32_t i, size = b ? b->res_ddp_max : 0;

	if (next_bufs_set) {
		const struct rpcrdma_ddp_bufs *nb = &next_bufs_copy;

		for (i = 0; i < nb->n && i < RPCRDMA_DEF_LIST_CHUNKS; i++) {
			call->res[i].data = nb->buf[i].data;
			call->res[i].cap = nb->buf[i].cap;
			call->res_caller[i] = 1;
		}
		call->nres = i;
		next_bufs_set = 0;
	} else if (b && b->nres_ddp) {
		if (b->res_ddp_size)
			size = b->res_ddp_size(args);
		for (i = 0; i < b->nres_ddp && i < RPCRDMA_DEF_LIST_CHUNKS; i++) {
			call->res[i].data = malloc(size ? size : 1);
			call->res[i].cap = size;
			if (!call->res[i].data)
				break;
		}
		call->nres = i;
	}
	call->a.results = call->res;
	call->a.nresults = call->nres;
}

static enum clnt_stat encode_call(struct rdma_clnt *ct, struct ccall *call, rpcprog_t prog,
				  rpcvers_t vers, rpcproc_t proc, xdrproc_t xargs, void *args)
{
	struct rpc_msg msg;
	u_int cap = 128 + 2 * MAX_AUTH_BYTES + (u_int)xdr_sizeof(xargs, args);
	u_int p = (u_int)proc;
	bool_t ok;

	call->buf = malloc(cap);
	if (!call->buf)
		return RPC_SYSTEMERROR;
	memset(&msg, 0, sizeof(msg));
	msg.rm_xid = __atomic_add_fetch(&ct->xid, 1, __ATOMIC_RELAXED);
	msg.rm_direction = CALL;
	msg.rm_call.cb_rpcvers = RPC_MSG_VERSION;
	msg.rm_call.cb_prog = prog;
	msg.rm_call.cb_vers = vers;
	rpcrdma__xdr_encode(&call->enc, call->buf, cap);
	rpcrdma__xdr_enter(&call->enc);
	ok = xdr_callhdr(&call->enc.x, &msg) && xdr_u_int(&call->enc.x, &p) &&
	     AUTH_MARSHALL(ct->cl.cl_auth, &call->enc.x) &&
	     AUTH_WRAP(ct->cl.cl_auth, &call->enc.x, xargs, args);
	rpcrdma__xdr_leave();
	if (!ok)
		return RPC_CANTENCODEARGS;
	call->a.xdr = call->buf;
	call->a.xdr_len = rpcrdma__xdr_pos(&call->enc);
	call->a.items = call->enc.items;
	call->a.nitems = call->enc.nitems;
	return RPC_SUCCESS;
}

static struct ccall *new_call(struct rdma_clnt *ct, rpcprog_t prog, rpcvers_t vers,
			      rpcproc_t proc, xdrproc_t xargs, void *args, xdrproc_t xres,
			      void *res, enum clnt_stat *stat)
{
	const struct rpcrdma_ulb_proc *b = rpcrdma_ulb_find(prog, vers, proc);
	struct ccall *call = calloc(1, sizeof(*call));

	if (!call) {
		*stat = RPC_SYSTEMERROR;
		return NULL;
	}
	call->ct = ct;
	call->xres = b && b->xres ? b->xres : xres;
	call->resp = res;
	*stat = encode_call(ct, call, prog, vers, proc, b && b->xargs ? b->xargs : xargs, args);
	if (*stat != RPC_SUCCESS) {
		free_call(call);
		return NULL;
	}
	offer_results(call, b, args);
	call->a.max_reply = b && b->max_reply ? b->max_reply : ct->opts.max_reply;
	/* a void result cannot make a long reply: header and verifier only, no reply chunk
	 * (one registration less per call) */
	if (call->xres == RPCRDMA_XDR_VOID)
		call->a.max_reply = VOID_REPLY_MAX;
	return call;
}

/* ---- the reply ---- */

/* What the engine's outcome means to the caller (docs/RPC.md). */
static enum clnt_stat engine_stat(const struct ccall *call, int status, struct rpc_err *err)
{
	switch (status) {
	case -RPCRDMA_ERR_TIMEDOUT:
		return RPC_TIMEDOUT;
	case -RPCRDMA_ERR_VERSION:
		rpcrdma_eng_call_vers(call->ec, (uint32_t *)&err->re_vers.low,
				      (uint32_t *)&err->re_vers.high);
		return RPC_VERSMISMATCH;
	case -RPCRDMA_ERR_PROTO:
		err->re_errno = EPROTO;
		/* ERR_CHUNK: the server could not take our chunks or fit the reply */
		return rpcrdma_eng_call_wire_err(call->ec) ? RPC_CANTSEND : RPC_CANTDECODERES;
	default:
		err->re_errno = status == -RPCRDMA_ERR_DISCONN ? ECONNRESET : EIO;
		return RPC_CANTRECV;
	}
}

static enum clnt_stat decode_reply(struct ccall *call, struct rpc_err *err)
{
	struct rdma_clnt *ct = call->ct;
	struct rpcrdma__xdr dec;
	struct rpc_msg rm;
	uint32_t len, i;
	const void *rep = rpcrdma_eng_call_reply(call->ec, &len);

	rpcrdma__xdr_decode(&dec, rep, len);
	rpcrdma_eng_call_msgp(call->ec, &dec.align, &dec.thresh, &dec.base);
	dec.results = call->res;
	dec.nresults = call->nres;
	memcpy(dec.caller_owned, call->res_caller, sizeof(call->res_caller));
	memset(&rm, 0, sizeof(rm));
	rm.acpted_rply.ar_verf = _null_auth;
	rm.acpted_rply.ar_results.where = NULL;
	rm.acpted_rply.ar_results.proc = RPCRDMA_XDR_VOID;
	rpcrdma__xdr_enter(&dec);
	if (!xdr_replymsg(&dec.x, &rm)) {
		err->re_status = RPC_CANTDECODERES;
	} else {
		_seterr_reply(&rm, err);
		if (err->re_status == RPC_SUCCESS) {
			if (!AUTH_VALIDATE(ct->cl.cl_auth, &rm.acpted_rply.ar_verf)) {
				err->re_status = RPC_AUTHERROR;
				err->re_why = AUTH_INVALIDRESP;
			} else if (!AUTH_UNWRAP(ct->cl.cl_auth, &dec.x, call->xres, call->resp)) {
				err->re_status = RPC_CANTDECODERES;
			}
		}
		if (rm.acpted_rply.ar_verf.oa_base) {
			dec.x.x_op = XDR_FREE;
			xdr_opaque_auth(&dec.x, &rm.acpted_rply.ar_verf);
		}
	}
	rpcrdma__xdr_leave();
	/* results handed to the caller's structure are theirs now (freed by clnt_freeres) */
	for (i = 0; i < call->nres; i++)
		if (dec.handed_over[i])
			call->res_caller[i] = 1;
	return err->re_status;
}

/* The call's outcome, into call->err. Called once it is done, without the lock. */
static enum clnt_stat finish_call(struct ccall *call)
{
	int status = rpcrdma_eng_call_status(call->ec);

	memset(&call->err, 0, sizeof(call->err));
	if (status)
		call->err.re_status = engine_stat(call, status, &call->err);
	else
		decode_reply(call, &call->err);
	return call->err.re_status;
}

static void on_call_done(void *ctx, struct rpcrdma_eng_call *ec)
{
	struct ccall *call = rpcrdma_eng_call_user(ec);
	struct rdma_clnt *ct = (struct rdma_clnt *)ctx;
	enum clnt_stat stat;

	call->done = 1;
	if (!call->cb)
		return;
	stat = finish_call(call);
	ct->err = call->err;
	rpcrdma_eng_call_free(ec);
	ct->async_pending--;
	call->cb(call->cbctx, stat);
	free_call(call);
}

static void on_fatal(void *ctx, int reason)
{
	(void)reason;
	((struct rdma_clnt *)ctx)->dead = 1;
}

/* ---- cl_ops ---- */

static int start_call(struct rdma_clnt *ct, struct ccall *call)
{
	int rc;

	if (ct->dead)
		return -RPCRDMA_ERR_DISCONN;
	rc = rpcrdma_eng_call(ct->eng, &call->a, call, rpcrdma__rpc_now(), &call->ec);
	return rc;
}

static enum clnt_stat fail_start(struct rpc_err *err, int rc)
{
	memset(err, 0, sizeof(*err));
	if (rc == -RPCRDMA_ERR_DISCONN) {
		err->re_status = RPC_CANTSEND;
		err->re_errno = ECONNRESET;
	} else {
		err->re_status = RPC_CANTENCODEARGS;   /* too long or too many items */
	}
	return err->re_status;
}

static enum clnt_stat do_call(struct rdma_clnt *ct, rpcprog_t prog, rpcvers_t vers,
			      rpcproc_t proc, xdrproc_t xargs, void *args, xdrproc_t xres,
			      void *res, int timeout_ms)
{
	enum clnt_stat stat;
	struct ccall *call = new_call(ct, prog, vers, proc, xargs, args, xres, res, &stat);
	uint64_t deadline = rpcrdma__rpc_now() + (uint64_t)timeout_ms;
	int rc;

	if (!call) {
		pthread_mutex_lock(&ct->lock);
		memset(&ct->err, 0, sizeof(ct->err));
		ct->err.re_status = stat;
		pthread_mutex_unlock(&ct->lock);
		return stat;
	}
	pthread_mutex_lock(&ct->lock);
	rc = start_call(ct, call);
	if (rc) {
		stat = fail_start(&ct->err, rc);
		pthread_mutex_unlock(&ct->lock);
		free_call(call);
		return stat;
	}
	while (!call->done && rpcrdma__rpc_now() < deadline) {
		drive(ct, WAIT_SLICE_MS);
		/* let another caller take the lock between slices */
		pthread_mutex_unlock(&ct->lock);
		pthread_mutex_lock(&ct->lock);
	}
	if (!call->done) {
		/* abandon: its memory is withdrawn at once (docs/ENGINE.md) */
		rpcrdma_eng_call_free(call->ec);
		memset(&ct->err, 0, sizeof(ct->err));
		ct->err.re_status = RPC_TIMEDOUT;
		pthread_mutex_unlock(&ct->lock);
		free_call(call);
		return RPC_TIMEDOUT;
	}
	pthread_mutex_unlock(&ct->lock);
	stat = finish_call(call);
	pthread_mutex_lock(&ct->lock);
	ct->err = call->err;
	rpcrdma_eng_call_free(call->ec);
	pthread_mutex_unlock(&ct->lock);
	free_call(call);
	return stat;
}

static int timeval_ms(struct timeval tv)
{
	long long ms = (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;

	return ms < 0 ? 0 : ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

static enum clnt_stat rdma_call(CLIENT *cl, rpcproc_t proc, xdrproc_t xargs, void *args,
				xdrproc_t xres, void *res, struct timeval tout)
{
	struct rdma_clnt *ct = (struct rdma_clnt *)cl->cl_private;
	int ms = ct->timeout_ms >= 0 ? ct->timeout_ms : timeval_ms(tout);

	return do_call(ct, ct->prog, ct->vers, proc, xargs, args, xres, res, ms);
}

static void rdma_abort(CLIENT *cl)
{
	(void)cl;
}

static void rdma_geterr(CLIENT *cl, struct rpc_err *err)
{
	struct rdma_clnt *ct = (struct rdma_clnt *)cl->cl_private;

	pthread_mutex_lock(&ct->lock);
	*err = ct->err;
	pthread_mutex_unlock(&ct->lock);
}

static bool_t rdma_freeres(CLIENT *cl, xdrproc_t xres, void *res)
{
	XDR x;

	(void)cl;
	memset(&x, 0, sizeof(x));
	x.x_op = XDR_FREE;
	return xres(&x, res);
}

static void rdma_destroy(CLIENT *cl)
{
	struct rdma_clnt *ct = (struct rdma_clnt *)cl->cl_private;
	uint64_t until = rpcrdma__rpc_now() + FLUSH_MS;

	/* RDMA_DONEs already posted go out before the connection closes */
	pthread_mutex_lock(&ct->lock);
	while (rpcrdma_eng_sending(ct->eng) && rpcrdma__rpc_now() < until)
		drive(ct, WAIT_SLICE_MS);
	pthread_mutex_unlock(&ct->lock);
	rpcrdma_eng_shutdown(ct->eng, -RPCRDMA_ERR_DISCONN);
	rpcrdma_ep_close(ct->ep);
	rpcrdma_eng_destroy(ct->eng);
	rpcrdma_prov_close(ct->p);
	if (cl->cl_auth)
		AUTH_DESTROY(cl->cl_auth);
	pthread_mutex_destroy(&ct->lock);
	free(ct);
}

static bool_t control_std(struct rdma_clnt *ct, u_int req, void *info)
{
	switch (req) {
	case CLSET_TIMEOUT:
		ct->timeout_ms = timeval_ms(*(struct timeval *)info);
		return TRUE;
	case CLGET_TIMEOUT:
		((struct timeval *)info)->tv_sec = ct->timeout_ms < 0 ? 0 : ct->timeout_ms / 1000;
		((struct timeval *)info)->tv_usec = ct->timeout_ms < 0 ? 0 :
						    (ct->timeout_ms % 1000) * 1000;
		return TRUE;
	case CLGET_XID:
		*(uint32_t *)info = __atomic_load_n(&ct->xid, __ATOMIC_RELAXED);
		return TRUE;
	case CLSET_XID:
		/* the next call uses this XID (libtirpc's meaning) */
		__atomic_store_n(&ct->xid, *(uint32_t *)info - 1, __ATOMIC_RELAXED);
		return TRUE;
	case CLGET_VERS:
		*(uint32_t *)info = (uint32_t)ct->vers;
		return TRUE;
	case CLSET_VERS:
		ct->vers = *(uint32_t *)info;
		return TRUE;
	case CLGET_PROG:
		*(uint32_t *)info = (uint32_t)ct->prog;
		return TRUE;
	case CLSET_PROG:
		ct->prog = *(uint32_t *)info;
		return TRUE;
	case CLGET_SERVER_ADDR:
		if (!ct->addrlen)
			return FALSE;
		memcpy(info, &ct->addr, ct->addrlen);
		return TRUE;
	case CLGET_SVC_ADDR:
		if (!ct->addrlen)
			return FALSE;
		*(struct netbuf *)info = ct->svcaddr;
		return TRUE;
	case CLGET_FD:
		*(int *)info = rpcrdma_ep_fd(ct->ep);
		return TRUE;
	case CLSET_FD_CLOSE:
	case CLSET_FD_NCLOSE:
		return TRUE;
	default:
		return FALSE;
	}
}

static bool_t rdma_control(CLIENT *cl, u_int req, void *info)
{
	struct rdma_clnt *ct = (struct rdma_clnt *)cl->cl_private;
	bool_t ok = TRUE;

	if (!info && req != CLSET_FD_CLOSE && req != CLSET_FD_NCLOSE)
		return FALSE;
	pthread_mutex_lock(&ct->lock);
	switch (req) {
	case RPCRDMA_CLSET_DDP_BUFS:
		next_bufs_copy = *(const struct rpcrdma_ddp_bufs *)info;
		next_bufs_set = 1;
		break;
	case RPCRDMA_CLGET_STATS:
		rpcrdma_eng_stats(ct->eng, info);
		break;
	case RPCRDMA_CLGET_CCP:
		if (ct->ccp_done)
			*(struct rpcrdma_ccp_res *)info = ct->ccp;
		ok = ct->ccp_done;
		break;
	default:
		ok = control_std(ct, req, info);
	}
	pthread_mutex_unlock(&ct->lock);
	return ok;
}

static struct clnt_ops rdma_ops = {
	.cl_call = rdma_call,
	.cl_abort = rdma_abort,
	.cl_geterr = rdma_geterr,
	.cl_freeres = rdma_freeres,
	.cl_destroy = rdma_destroy,
	.cl_control = rdma_control,
};

/* ---- asynchronous calls ---- */

int rpcrdma_clnt_call_async(CLIENT *cl, rpcproc_t proc, xdrproc_t xargs, void *args,
			    xdrproc_t xres, void *res, rpcrdma_clnt_cb done, void *ctx)
{
	struct rdma_clnt *ct;
	struct ccall *call;
	enum clnt_stat stat;
	int rc;

	if (!cl || cl->cl_ops != &rdma_ops || !done)
		return -RPCRDMA_ERR_INVAL;
	ct = (struct rdma_clnt *)cl->cl_private;
	call = new_call(ct, ct->prog, ct->vers, proc, xargs, args, xres, res, &stat);
	if (!call)
		return stat == RPC_SYSTEMERROR ? -RPCRDMA_ERR_NOMEM : -RPCRDMA_ERR_INVAL;
	call->cb = done;
	call->cbctx = ctx;
	pthread_mutex_lock(&ct->lock);
	rc = start_call(ct, call);
	if (!rc)
		ct->async_pending++;
	pthread_mutex_unlock(&ct->lock);
	if (rc)
		free_call(call);
	return rc;
}

int rpcrdma_clnt_progress(CLIENT *cl, int timeout_ms)
{
	struct rdma_clnt *ct = (struct rdma_clnt *)cl->cl_private;
	uint64_t deadline = rpcrdma__rpc_now() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	int left;

	pthread_mutex_lock(&ct->lock);
	do
		drive(ct, timeout_ms > 0 ? WAIT_SLICE_MS : 0);
	while (ct->async_pending && !ct->dead && rpcrdma__rpc_now() < deadline);
	left = ct->async_pending;
	pthread_mutex_unlock(&ct->lock);
	return left;
}

/* ---- creation ---- */

static void create_error(enum clnt_stat stat, int err)
{
	rpc_createerr.cf_stat = stat;
	rpc_createerr.cf_error.re_status = stat;
	rpc_createerr.cf_error.re_errno = err;
}

static void connect_error(int rc)
{
	switch (rc) {
	case -RPCRDMA_ERR_ADDR:
		create_error(RPC_UNKNOWNHOST, 0);
		break;
	case -RPCRDMA_ERR_TIMEDOUT:
		create_error(RPC_TIMEDOUT, ETIMEDOUT);
		break;
	default:
		create_error(RPC_SYSTEMERROR, ECONNREFUSED);
	}
}

static void fill_defaults(struct rpcrdma_clnt_opts *o, const struct rpcrdma_clnt_opts *in)
{
	memset(o, 0, sizeof(*o));
	if (in)
		*o = *in;
	if (!o->provider)
		o->provider = "tcp";
	if (!o->port)
		o->port = RPCRDMA_PORT;
	if (!o->inline_size)
		o->inline_size = 4096;
	if (!o->max_credits)
		o->max_credits = 32;
	if (!o->max_reply)
		o->max_reply = DEF_MAX_REPLY;
	if (!o->connect_timeout_ms)
		o->connect_timeout_ms = DEF_CONNECT_MS;
}

static int make_engine(struct rdma_clnt *ct)
{
	const struct rpcrdma_prov_caps *caps = rpcrdma_prov_caps(ct->p);
	struct rpcrdma_eng_upper up = { .ctx = ct, .call_done = on_call_done, .fatal = on_fatal };
	struct rpcrdma_eng_config cfg;

	rpcrdma_eng_config_default(&cfg, RPCRDMA_ENG_CLIENT);
	cfg.inline_send = cfg.inline_recv = ct->opts.inline_size;
	cfg.max_credits = ct->opts.max_credits;
	cfg.sq_depth = caps->tx_depth < 1024 ? caps->tx_depth : 1024;
	cfg.write_send_ordered = caps->write_send_ordered;
	cfg.msgp_align = ct->opts.msgp_align;
	cfg.msgp_thresh = ct->opts.msgp_thresh;
	if (cfg.max_message < ct->opts.max_reply)
		cfg.max_message = ct->opts.max_reply;
	return rpcrdma_eng_create(&cfg, &up, &ct->eng);
}

static int connect_engine(struct rdma_clnt *ct, const char *host)
{
	struct rpcrdma_eng_lower lo;
	uint8_t pd[RPCRDMA_PDATA_MAX];
	const void *peer;
	size_t plen;
	int n, rc;

	n = rpcrdma_eng_pdata(ct->eng, pd, sizeof(pd));
	rc = rpcrdma_connect(ct->p, host, ct->opts.port, pd, (size_t)n,
			     ct->opts.connect_timeout_ms, &ct->ep);
	if (rc)
		return rc;
	peer = rpcrdma_ep_peer_pdata(ct->ep, &plen);
	rpcrdma_eng_set_peer_pdata(ct->eng, peer, plen);
	rpcrdma_eng_lower_ep(&lo, ct->p, ct->ep);
	rc = rpcrdma_eng_start(ct->eng, &lo, rpcrdma__rpc_now());
	ct->addrlen = sizeof(ct->addr);
	if (rpcrdma_ep_peer_addr(ct->ep, &ct->addr, &ct->addrlen))
		ct->addrlen = 0;
	ct->svcaddr.buf = &ct->addr;
	ct->svcaddr.len = ct->svcaddr.maxlen = (unsigned)ct->addrlen;
	return rc;
}

/* RFC 5666 §6.2: ask the server what it takes; adopt its inline size for our calls. */
static void negotiate(struct rdma_clnt *ct)
{
	struct rpcrdma_ccp_args a = { ct->opts.inline_size, ct->opts.inline_size, 0 };
	struct rpcrdma_ccp_res r;

	memset(&r, 0, sizeof(r));
	if (do_call(ct, RPCRDMA_CCP_PROG, RPCRDMA_CCP_VERS, RPCRDMA_CCP_PROC_CONF_RDMA,
		    (xdrproc_t)rpcrdma__xdr_ccp_args, &a, (xdrproc_t)rpcrdma__xdr_ccp_res, &r,
		    DEF_CONNECT_MS) != RPC_SUCCESS)
		return;
	ct->ccp = r;
	ct->ccp_done = 1;
	rpcrdma_eng_set_inline_send(ct->eng, r.maxcall_sendsize);
}

CLIENT *clnt_rdma_create(const char *host, rpcprog_t prog, rpcvers_t vers,
			 const struct rpcrdma_clnt_opts *opts)
{
	pthread_mutexattr_t ma;
	struct rdma_clnt *ct;
	char err[256];
	int rc;

	ct = calloc(1, sizeof(*ct));
	if (!ct || !host) {
		free(ct);
		create_error(RPC_SYSTEMERROR, host ? ENOMEM : EINVAL);
		return NULL;
	}
	fill_defaults(&ct->opts, opts);
	ct->prog = prog;
	ct->vers = vers;
	ct->timeout_ms = -1;
	if (getrandom(&ct->xid, sizeof(ct->xid), 0) != sizeof(ct->xid))
		ct->xid = (uint32_t)getpid() ^ (uint32_t)rpcrdma__rpc_now();
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&ct->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	rc = rpcrdma_prov_open(ct->opts.provider, &ct->p, err, sizeof(err));
	if (rc) {
		create_error(RPC_SYSTEMERROR, ENOENT);
		goto out_free;
	}
	rc = make_engine(ct);
	if (rc) {
		create_error(RPC_SYSTEMERROR, EINVAL);
		goto out_prov;
	}
	rc = connect_engine(ct, host);
	if (rc) {
		connect_error(rc);
		goto out_eng;
	}
	ct->cl.cl_ops = &rdma_ops;
	ct->cl.cl_private = ct;
	ct->cl.cl_auth = authnone_create();
	ct->cl.cl_netid = ct->addrlen && ct->addr.ss_family == AF_INET6 ? "rdma6" : "rdma";
	ct->cl.cl_tp = "rdma";
	if (ct->opts.use_ccp)
		negotiate(ct);
	return &ct->cl;
out_eng:
	rpcrdma_ep_close(ct->ep);
	rpcrdma_eng_destroy(ct->eng);
out_prov:
	rpcrdma_prov_close(ct->p);
out_free:
	pthread_mutex_destroy(&ct->lock);
	free(ct);
	return NULL;
}
