/* SPDX-License-Identifier: BSD-2-Clause */
/* A libtirpc CLIENT * over RPC-over-RDMA: rpcgen stubs call clnt_call() through cl_ops as
 * with TCP. Each call is XDR-encoded (DDP-eligible items marked by a binding move to read
 * chunks), run through the engine, and its reply decoded (results placed in write chunks
 * are taken without a copy). Several threads may call at once, so calls pipeline up to the
 * credit window: one of the callers waiting drives the connection, under the client's
 * lock, for them all (take_lead); the others sleep until their call is done.
 *
 * Calls outlive connections (RFC 8166 §4.5, as the Linux client does): every live call is
 * on the client's list in the order it was made. When the connection is lost, the calls
 * still within their time are sent again, with their original XIDs, on a new connection
 * made with back-off; a call that times out with nothing heard since it was sent ends the
 * connection (RDMA has no keepalive of its own). Zero-timeout calls (message passing,
 * batching) are kept until answered and driven by the waiting callers, or by a
 * background thread when nobody waits. docs/RPC.md says how each libtirpc rule is met. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "objpool.h"
#include "rpc_int.h"
#include "xdr_be.h"

#define DEF_MAX_REPLY (1u << 20)
#define DEF_CONNECT_MS 10000
#define DEF_TIMEOUT_MS 25000
#define WAIT_SLICE_MS 1
#define FLUSH_MS 1000
#define VOID_REPLY_MAX (24 + 2 * MAX_AUTH_BYTES)
#define SPIN_POLLS 20000
#define DEF_RECONNECT_MS 5000   /* a server restarting is back within it; a gone one fails */
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000
#define HK_IDLE_MS 1000
#define DEF_BC_CREDITS 4   /* calls from the server taken at once (RFC 8167) */

struct rdma_clnt;

enum call_kind {
	CK_WAIT = 1,   /* clnt_call(): its caller waits for it */
	CK_ASYNC,      /* rpcrdma_clnt_call_async(): a callback reports it */
	CK_DETACHED,   /* zero timeout: nobody waits; kept until answered or too late */
	CK_PING,       /* ours: NULL procedure (keepalive, or taking back batched credits) */
};

/* One call, from clnt_call() until its outcome is known. */
/* Finished calls are kept per client (calls are built and freed without its lock:
 * rpcrdma__spares), each with its encode buffer up to SPARE_BUF_MAX: a call then costs no
 * malloc. */
#define SPARE_BUF_MAX (16u << 10)

struct ccall {
	struct ccall *prev, *next;       /* the client's calls, in the order made */
	struct rdma_clnt *ct;
	struct rpcrdma_eng_call *ec;     /* on the current connection; NULL: to be sent */
	uint32_t kind;                   /* enum call_kind */
	uint64_t deadline;
	uint64_t rx_mark;                /* ct->answers when it was last sent */
	int done;                        /* status is final */
	int status;                      /* the engine's */
	int fresh;                       /* being started: a failure is returned, not reported */
	int flush;                       /* a NULL call sent to settle batched calls */
	struct rpcrdma_call_args a;
	struct rpcrdma__xdr enc;
	uint8_t *buf;                    /* the encoded call; kept with a spare call */
	size_t buf_cap;
	struct rpcrdma_ddp_buf res[RPCRDMA_DEF_LIST_CHUNKS];
	uint8_t res_caller[RPCRDMA_DEF_LIST_CHUNKS];
	uint32_t nres;
	xdrproc_t xres;
	void *resp;
	/* what encoded it, to marshal it again for a resend under RPCSEC_GSS */
	rpcprog_t prog;
	rpcvers_t vers;
	rpcproc_t proc;
	xdrproc_t xargs;
	void *args;
	uint32_t xid;
	AUTH *auth;                      /* cl_auth when it was made: its reply is checked by
					  * the same (the caller may swap cl_auth meanwhile) */
	int ddp;
	int sent;                        /* went out on a connection at least once */
	pthread_cond_t *waiter;          /* its caller sleeps there while another drives */
	rpcrdma_clnt_cb cb;              /* asynchronous calls */
	void *cbctx;
	struct rpc_err err;
	char errtext[200];               /* rpcrdma_clnt_errtext() */
};

struct rdma_clnt {
	CLIENT cl;
	pthread_mutex_t lock;        /* recursive: callbacks may call in again */
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *ep;       /* the current connection, or NULL */
	struct rpcrdma_eng *eng;
	struct rpcrdma_clnt_opts opts;
	char *host;
	struct rpcrdma__clnt_ids ids;   /* XID, program, version, timeouts */
	struct rpc_err err;          /* of the last call */
	struct sockaddr_storage addr;
	size_t addrlen;
	struct netbuf svcaddr;
	struct ccall *head, *tail;   /* live calls */
	int async_pending;
	unsigned idle;               /* empty polls in a row */
	uint64_t busy_from_us;       /* when they began (busy polling counts from there) */
	unsigned held_polls;         /* polls between which the lock was kept (between_slices) */
	uint64_t answers;            /* calls answered, on any connection */
	uint64_t last_rx;            /* time anything was last received */
	uint64_t now;                /* the clock as drive() last read it */
	uint64_t next_connect;       /* no new connection before then */
	uint64_t down_since;         /* the first failed attempt since the last connection */
	unsigned backoff_ms;
	int conn_errno;              /* why the last connection attempt failed, 0 if none */
	uint64_t connects;           /* connections made, the first included */
	struct ccall *ka;            /* keepalive ping in flight */
	int nwaiters;                /* threads waiting in clnt_call */
	int leading;                 /* one of them drives the connection (take_lead) */
	pthread_t hk;                /* background thread, started when first needed */
	pthread_cond_t hk_cv;
	int hk_fd;                   /* eventfd: wakes the thread while it sleeps on the
					endpoint's descriptor (-1: none) */
	int hk_started, hk_stop;
	int sleep_ms;                /* drive() found nothing: sleep this long, unlocked */
	unsigned backoff;            /* rounds of it without a descriptor (shm) */
	int wake_fd;                 /* eventfd: wakes threads sleeping between slices */
	unsigned nsleepers;          /* threads sleeping between slices */
	int ccp_done;
	struct rpcrdma_ccp_res ccp;
	uint32_t reply_inline;       /* the longest reply the server sends us inline (0: not
					connected yet); read without the lock */
	struct rpcrdma__cbsvc *cb;   /* calls from the server (RFC 8167) */
	struct rpcrdma__spares spare_calls;   /* finished calls, for the next */
	char errtext[200];
};

/* RPCRDMA_CLSET_DDP_BUFS, copied, for this thread's next call */
static __thread struct rpcrdma_ddp_bufs next_bufs_copy;
static __thread int next_bufs_set;

static void conn_down(struct rdma_clnt *ct);
static void hk_signal(struct rdma_clnt *ct);
static void wake_sleepers(struct rdma_clnt *ct);
static void submit_queued(struct rdma_clnt *ct, uint64_t now);
static enum clnt_stat fail_stat(struct rdma_clnt *ct, enum clnt_stat stat, int eno);

/* ---- the list of live calls ---- */

static void calls_add(struct rdma_clnt *ct, struct ccall *c)
{
	c->prev = ct->tail;
	c->next = NULL;
	if (ct->tail)
		ct->tail->next = c;
	else
		ct->head = c;
	ct->tail = c;
}

static void calls_insert_before(struct rdma_clnt *ct, struct ccall *c, struct ccall *at)
{
	c->next = at;
	c->prev = at->prev;
	if (at->prev)
		at->prev->next = c;
	else
		ct->head = c;
	at->prev = c;
}

static void calls_del(struct rdma_clnt *ct, struct ccall *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else if (ct->head == c)
		ct->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else if (ct->tail == c)
		ct->tail = c->prev;
	c->prev = c->next = NULL;
}

static int is_background(const struct ccall *c)
{
	return c->kind == CK_DETACHED || c->kind == CK_PING;
}

/* Calls that nobody waits for and that still need the connection. */
static int background_calls(const struct rdma_clnt *ct)
{
	const struct ccall *c;

	for (c = ct->head; c; c = c->next)
		if (is_background(c) && !c->done)
			return 1;
	return 0;
}

static int pending_calls(const struct rdma_clnt *ct)
{
	const struct ccall *c;

	for (c = ct->head; c; c = c->next)
		if (!c->done)
			return 1;
	return 0;
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

/* A cleared call, with the encode buffer a spare one had. */
static struct ccall *alloc_call(struct rdma_clnt *ct)
{
	struct ccall *call = rpcrdma__spares_get(&ct->spare_calls);
	uint8_t *buf;
	size_t cap;

	if (!call)
		return rpcrdma__zalloc(sizeof(*call));
	buf = call->buf;
	cap = call->buf_cap;
	memset(call, 0, sizeof(*call));
	call->buf = buf;
	call->buf_cap = cap;
	return call;
}

static void free_call(struct ccall *call)
{
	release_results(call);
	if (call->buf_cap <= SPARE_BUF_MAX && rpcrdma__spares_put(&call->ct->spare_calls, call))
		return;
	free(call->buf);
	free(call);
}

static void free_spares(struct rdma_clnt *ct)
{
	struct ccall *call;

	while ((call = rpcrdma__spares_get(&ct->spare_calls)) != NULL) {
		free(call->buf);
		free(call);
	}
}

/* The sizes of the write chunks a binding's results need for these args, in result
 * order: one size for nres_ddp chunks, or each its own (res_ddp_sizes). Returns how many,
 * at most RPCRDMA_DEF_LIST_CHUNKS (results beyond them come inline). */
static uint32_t result_sizes(const struct rpcrdma_ulb_proc *b, const void *args,
			     uint32_t sizes[RPCRDMA_DEF_LIST_CHUNKS])
{
	uint32_t i, n, size;

	if (!b)
		return 0;
	if (b->res_ddp_sizes) {
		n = b->res_ddp_sizes(args, sizes, RPCRDMA_DEF_LIST_CHUNKS);
		return n > RPCRDMA_DEF_LIST_CHUNKS ? RPCRDMA_DEF_LIST_CHUNKS : n;
	}
	n = b->nres_ddp < RPCRDMA_DEF_LIST_CHUNKS ? b->nres_ddp : RPCRDMA_DEF_LIST_CHUNKS;
	size = n && b->res_ddp_size ? b->res_ddp_size(args) : b->res_ddp_max;
	for (i = 0; i < n; i++)
		sizes[i] = size;
	return n;
}

/* Write chunks: the caller's buffers for this call (RPCRDMA_CLSET_DDP_BUFS), or, where
 * the binding says a result is DDP-eligible, buffers of ours handed to the result. With
 * the results inline (results_inline) none is offered: the caller's buffers are only
 * where decoding copies them, and no buffer of ours is needed. */
static void offer_results(struct ccall *call, const struct rpcrdma_ulb_proc *b,
			  const void *args, bool inline_res)
{
	uint32_t sizes[RPCRDMA_DEF_LIST_CHUNKS];
	uint32_t i, n;

	if (next_bufs_set) {
		const struct rpcrdma_ddp_bufs *nb = &next_bufs_copy;

		for (i = 0; i < nb->n && i < RPCRDMA_DEF_LIST_CHUNKS; i++) {
			call->res[i].data = nb->buf[i].data;
			call->res[i].cap = nb->buf[i].cap;
			call->res_caller[i] = 1;
		}
		call->nres = i;
		next_bufs_set = 0;
	} else if (!inline_res && (n = result_sizes(b, args, sizes)) > 0) {
		for (i = 0; i < n; i++) {
			call->res[i].data = malloc(sizes[i] ? sizes[i] : 1);
			call->res[i].cap = sizes[i];
			if (!call->res[i].data)
				break;
		}
		call->nres = i;
	}
	call->a.results = call->res;
	call->a.nresults = inline_res ? 0 : call->nres;
}

/* RFC 8166 §8.2.1: under a flavour that may checksum or encrypt the body (RPCSEC_GSS
 * integrity or privacy, or any flavour not known to leave it alone) no item may leave the
 * stream: the wrap must cover every byte. The flavours below never transform the body,
 * nor does RPCSEC_GSS's service none (RFC 2203 §5.3.2: authentication only, krb5 without
 * i or p), where Linux's client and server keep DDP too: a Linux client mounted with
 * sec=krb5 offers a write chunk and no reply chunk for READ, which fails with EIO against
 * a server that puts the data inline. The GSS credential (RFC 2203 §5):
 * version 1, gss_proc, seq_num, service, handle. */
int rpcrdma__cred_allows_ddp(uint32_t flavor, const void *body, uint32_t len)
{
	enum { GSS_VERS_1 = 1, GSS_PROC_DATA = 0, GSS_SVC_NONE = 1 };
	const uint8_t *b = body;

	if (flavor == RPCSEC_GSS)
		return b && len >= 16 && rpcrdma__get32(b) == GSS_VERS_1 &&
		       rpcrdma__get32(b + 4) == GSS_PROC_DATA && rpcrdma__get32(b + 12) == GSS_SVC_NONE;
	return flavor == AUTH_NONE || flavor == AUTH_SYS || flavor == AUTH_SHORT ||
	       flavor == AUTH_DH;
}

/* The credential an encoded call carries (xid, direction, rpcvers, prog, vers, proc,
 * then flavour, length, body: RFC 5531 §9). */
static int call_allows_ddp(const uint8_t *call, uint32_t len)
{
	uint32_t clen;

	if (len < 32)
		return 0;
	clen = rpcrdma__get32(call + 28);
	return clen <= len - 32 && rpcrdma__cred_allows_ddp(rpcrdma__get32(call + 24), call + 32, clen);
}

/* The largest reply when results that would have gone into write chunks come inline. */
static uint32_t reply_bound(const struct rdma_clnt *ct, const struct rpcrdma_ulb_proc *b,
			    const void *args, int ddp)
{
	uint32_t bound = !b ? 0 : b->max_reply_size ? b->max_reply_size(args) : b->max_reply;
	uint64_t max = bound ? bound : ct->opts.max_reply;
	uint32_t sizes[RPCRDMA_DEF_LIST_CHUNKS];
	uint32_t i, n = ddp ? 0 : result_sizes(b, args, sizes);

	for (i = 0; i < n; i++)
		max += (uint64_t)sizes[i] + 8u;   /* the data and its XDR pad */
	return max > UINT32_MAX ? UINT32_MAX : (uint32_t)max;
}

/* A binding's results come inline, with no write chunk, when the whole reply with them
 * fits what the server sends us inline: a chunk would cost a registration and an RDMA
 * Write for a few bytes, and Linux's client offers none then either (RFC 8166 §3.4:
 * DDP-eligible is not DDP-required). Decoding copies them into the caller's buffers
 * (RPCRDMA_CLSET_DDP_BUFS) when it gave some, so the data is where it wanted it. */
static bool results_inline(const struct rdma_clnt *ct, const struct rpcrdma_ulb_proc *b,
			   const void *args)
{
	uint32_t room = __atomic_load_n(&ct->reply_inline, __ATOMIC_RELAXED);
	uint64_t hdr = RPCRDMA_FIXED_HDR_LEN + 12u;   /* three empty chunk lists */

	uint32_t sizes[RPCRDMA_DEF_LIST_CHUNKS];

	return room && result_sizes(b, args, sizes) && reply_bound(ct, b, args, 0) + hdr <= room;
}

static enum clnt_stat encode_call(struct rdma_clnt *ct, struct ccall *call, rpcprog_t prog,
				  rpcvers_t vers, rpcproc_t proc, xdrproc_t xargs, void *args,
				  int *ddp, uint32_t xid)
{
	struct rpc_msg msg;
	u_int cap = 128 + 2 * MAX_AUTH_BYTES + (u_int)xdr_sizeof(xargs, args);
	u_int p = (u_int)proc;
	bool_t ok;

	if (call->buf_cap < cap) {
		free(call->buf);
		call->buf_cap = 0;
		if (!(call->buf = malloc(cap)))
			return RPC_SYSTEMERROR;
		call->buf_cap = cap;
	}
	if (!xid)
		call->auth = ct->cl.cl_auth;
	memset(&msg, 0, sizeof(msg));
	msg.rm_xid = xid ? xid : rpcrdma__ids_next_xid(&ct->ids);
	msg.rm_direction = CALL;
	msg.rm_call.cb_rpcvers = RPC_MSG_VERSION;
	msg.rm_call.cb_prog = prog;
	msg.rm_call.cb_vers = vers;
	rpcrdma__xdr_encode(&call->enc, call->buf, cap);
	ok = xdr_callhdr(&call->enc.x, &msg) && xdr_u_int(&call->enc.x, &p) &&
	     AUTH_MARSHALL(call->auth, &call->enc.x);
	/* the credential as sent says whether the body will be wrapped (GSS's service is
	 * known to libtirpc's AUTH alone); off our stream, xdr_rdma_ddp_bytes() is plain
	 * xdr_bytes(): everything inline */
	*ddp = *ddp && ok && call_allows_ddp(call->buf, rpcrdma__xdr_pos(&call->enc));
	if (*ddp)
		rpcrdma__xdr_enter(&call->enc);
	ok = ok && AUTH_WRAP(call->auth, &call->enc.x, xargs, args);
	rpcrdma__xdr_leave();
	if (!ok)
		return RPC_CANTENCODEARGS;
	call->a.xdr = call->buf;
	call->a.xdr_len = rpcrdma__xdr_pos(&call->enc);
	call->a.items = call->enc.items;
	call->a.nitems = call->enc.nitems;
	call->xid = (uint32_t)msg.rm_xid;
	return RPC_SUCCESS;
}

/* A call of kind `kind`. Detached calls carry everything in their own buffer (the caller's
 * arguments may be gone when they are sent) and ask for nothing back but a short reply. */
static struct ccall *new_call(struct rdma_clnt *ct, uint32_t kind, rpcproc_t proc,
			      xdrproc_t xargs, void *args, xdrproc_t xres, void *res,
			      enum clnt_stat *stat)
{
	const struct rpcrdma_ulb_proc *b = rpcrdma_ulb_find(ct->ids.prog, ct->ids.vers, proc);
	struct ccall *call = alloc_call(ct);
	int ddp = kind != CK_DETACHED;   /* and the credential allows it: encode_call */
	bool res_inline;

	if (!call) {
		*stat = RPC_SYSTEMERROR;
		return NULL;
	}
	call->ct = ct;
	call->kind = kind;
	call->resp = res;
	call->prog = ct->ids.prog;
	call->vers = ct->ids.vers;
	call->proc = proc;
	call->xargs = b && b->xargs ? b->xargs : xargs;
	call->args = args;
	*stat = encode_call(ct, call, call->prog, call->vers, proc, call->xargs, args, &ddp, 0);
	if (*stat != RPC_SUCCESS) {
		free_call(call);
		return NULL;
	}
	call->xres = b && b->xres && ddp ? b->xres : xres;
	call->ddp = ddp;
	res_inline = ddp && results_inline(ct, b, args);
	if (ddp)
		offer_results(call, b, args, res_inline);
	else if (kind != CK_DETACHED)
		next_bufs_set = 0;   /* the buffers were for this call: they stay unused */
	call->a.max_reply = reply_bound(ct, b, args, ddp && !res_inline);
	/* a void result cannot make a long reply: header and verifier only, no reply chunk
	 * (one registration less per call); nor is a reply nobody reads worth one */
	if (call->xres == RPCRDMA_XDR_VOID || kind == CK_DETACHED || kind == CK_PING)
		call->a.max_reply = VOID_REPLY_MAX;
	return call;
}

/* ---- the reply ---- */

/* What the engine's outcome means to the caller (docs/RPC.md). */
static enum clnt_stat engine_stat(struct ccall *call, int status,
				  struct rpc_err *err)
{
	switch (status) {
	case -RPCRDMA_ERR_TIMEDOUT:
		return RPC_TIMEDOUT;
	case -RPCRDMA_ERR_RANGE:
	case -RPCRDMA_ERR_INVAL:
		return RPC_CANTENCODEARGS;   /* too long or too many items for the connection */
	case -RPCRDMA_ERR_NOMEM:
		err->re_errno = ENOMEM;
		return RPC_SYSTEMERROR;
	case -RPCRDMA_ERR_VERSION:
		rpcrdma_eng_call_vers(call->ec, (uint32_t *)&err->re_vers.low,
				      (uint32_t *)&err->re_vers.high);
		return RPC_VERSMISMATCH;
	case -RPCRDMA_ERR_PROTO:
		if (!rpcrdma_eng_call_wire_err(call->ec)) {
			err->re_errno = EPROTO;
			return RPC_CANTDECODERES;
		}
		if (rpcrdma_eng_call_reply_chunk(call->ec)) {
			/* ERR_CHUNK to a call that offered a reply chunk: most likely a reply
			 * longer than the chunk, from a server that cannot send read chunks */
			err->re_errno = EMSGSIZE;
			snprintf(call->errtext, sizeof(call->errtext),
				 "the server answered ERR_CHUNK: its reply did not fit the %u-byte "
				 "reply chunk offered (raise rpcrdma_clnt_opts.max_reply or the "
				 "binding's max_reply)", rpcrdma_eng_call_reply_chunk(call->ec));
			return RPC_CANTRECV;
		}
		err->re_errno = EPROTO;
		snprintf(call->errtext, sizeof(call->errtext),
			 "the server answered ERR_CHUNK: it could not take this call's chunks");
		return RPC_CANTSEND;
	default:
		err->re_errno = status == -RPCRDMA_ERR_DISCONN ? ECONNRESET : EIO;
		return RPC_CANTRECV;
	}
}

static enum clnt_stat decode_reply(struct ccall *call, struct rpc_err *err)
{
	struct rpcrdma__xdr dec;
	uint32_t len, i;
	const void *rep = rpcrdma_eng_call_reply(call->ec, &len);

	rpcrdma__xdr_decode(&dec, rep, len);
	rpcrdma_eng_call_msgp(call->ec, &dec.align, &dec.thresh, &dec.base);
	dec.results = call->res;
	dec.nresults = call->nres;
	memcpy(dec.caller_owned, call->res_caller, sizeof(call->res_caller));
	rpcrdma__xdr_enter(&dec);
	rpcrdma__reply_take(&dec.x, call->auth, call->xres, call->resp, err);
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
	memset(&call->err, 0, sizeof(call->err));
	call->errtext[0] = '\0';
	if (call->status)
		call->err.re_status = engine_stat(call, call->status, &call->err);
	else
		decode_reply(call, &call->err);
	return call->err.re_status;
}

static void release_engine_call(struct ccall *call)
{
	rpcrdma_eng_call_free(call->ec);
	call->ec = NULL;
}

/* A call nobody waits for is over: it leaves the list. */
static void drop_call(struct rdma_clnt *ct, struct ccall *call)
{
	if (call->ec)
		release_engine_call(call);
	calls_del(ct, call);
	if (ct->ka == call)
		ct->ka = NULL;
	free_call(call);
}

/* Callbacks of asynchronous calls run under the client's lock, which a call made from
 * one takes a second time: such a caller never sleeps on a condition variable (that
 * lets go of one hold only), it drives (take_lead). */
static __thread int in_callback;

/* A waiting caller whose call is now done wakes, if another thread drives for it. */
static void wake_waiter(struct ccall *call)
{
	if (call->waiter)
		pthread_cond_signal(call->waiter);
}

/* An asynchronous call's outcome goes to its callback; the call is then over. */
static void report_async(struct rdma_clnt *ct, struct ccall *call, enum clnt_stat stat)
{
	if (call->ec)
		release_engine_call(call);
	calls_del(ct, call);
	ct->async_pending--;
	memcpy(ct->errtext, call->errtext, sizeof(ct->errtext));
	in_callback++;
	call->cb(call->cbctx, stat);
	in_callback--;
	free_call(call);
}

static void on_call_done(void *ctx, struct rpcrdma_eng_call *ec)
{
	struct ccall *call = rpcrdma_eng_call_user(ec);
	struct rdma_clnt *ct = (struct rdma_clnt *)ctx;
	int status = rpcrdma_eng_call_status(ec);
	enum clnt_stat stat;

	if (status == -RPCRDMA_ERR_DISCONN && call->kind != CK_PING &&
	    !ct->opts.no_reconnect && rpcrdma__rpc_now() < call->deadline) {
		/* lost with its connection: sent again, same XID, on the next one */
		release_engine_call(call);
		return;
	}
	if (status != -RPCRDMA_ERR_DISCONN)
		ct->answers++;
	call->done = 1;
	call->status = status;
	switch (call->kind) {
	case CK_WAIT:
		wake_waiter(call);
		return;   /* its caller decodes it */
	case CK_ASYNC:
		stat = finish_call(call);
		ct->err = call->err;
		report_async(ct, call, stat);
		return;
	default:
		drop_call(ct, call);
	}
}

/* A backward call: kept for the background thread, which dispatches it unlocked. */
static void hk_wake(struct rdma_clnt *ct);

static void on_bc_request(void *ctx, uint32_t xid, const void *call, uint32_t len)
{
	struct rdma_clnt *ct = ctx;

	if (rpcrdma__cb_enqueue(ct->cb, xid, ct->connects, call, len) == 0)
		hk_wake(ct);
}

/* A dispatch function's reply, on the connection its call came on (else it is lost with
 * that connection, as over TCP). */
static int cb_send(void *ctx, uint32_t xid, uint64_t gen, const void *xdr, uint32_t len)
{
	struct rdma_clnt *ct = ctx;
	int rc = -RPCRDMA_ERR_DISCONN;

	pthread_mutex_lock(&ct->lock);
	if (ct->eng && ct->connects == gen)
		rc = rpcrdma_eng_bc_reply(ct->eng, xid, xdr, len, rpcrdma__rpc_now());
	pthread_mutex_unlock(&ct->lock);
	return rc;
}

static void on_fatal(void *ctx, int reason)
{
	(void)ctx;
	(void)reason;   /* the engine is dead: drive() notices and reconnects */
}

/* ---- connections ---- */

static int make_engine(struct rdma_clnt *ct)
{
	const struct rpcrdma_prov_caps *caps = rpcrdma_prov_caps(ct->p);
	struct rpcrdma_eng_upper up = { .ctx = ct, .call_done = on_call_done, .fatal = on_fatal,
					.bc_request = on_bc_request };
	struct rpcrdma_eng_config cfg;

	rpcrdma__eng_config_rpc(&cfg, RPCRDMA_ENG_CLIENT, caps, ct->opts.inline_size,
				ct->opts.max_credits, ct->opts.msgp_align, ct->opts.msgp_thresh);
	cfg.bc_credits = ct->opts.bc_credits;
	if (cfg.max_message < ct->opts.max_reply)
		cfg.max_message = ct->opts.max_reply;
	return rpcrdma_eng_create(&cfg, &up, &ct->eng);
}

static int connect_engine(struct rdma_clnt *ct, int timeout_ms)
{
	struct rpcrdma_eng_lower lo;
	uint8_t pd[RPCRDMA_PDATA_MAX];
	const void *peer;
	size_t plen;
	int n, rc;

	n = rpcrdma_eng_pdata(ct->eng, pd, sizeof(pd));
	rc = rpcrdma_connect(ct->p, ct->host, (uint16_t)ct->opts.port, pd, (size_t)n, timeout_ms, &ct->ep);
	if (rc)
		return rc;
	peer = rpcrdma_ep_peer_pdata(ct->ep, &plen);
	rpcrdma_eng_set_peer_pdata(ct->eng, peer, plen);
	__atomic_store_n(&ct->reply_inline, rpcrdma_eng_inline_reply(ct->eng), __ATOMIC_RELAXED);
	rpcrdma_eng_lower_ep(&lo, ct->p, ct->ep);
	rc = rpcrdma_eng_start(ct->eng, &lo, rpcrdma__rpc_now());
	ct->addrlen = sizeof(ct->addr);
	if (rpcrdma_ep_peer_addr(ct->ep, &ct->addr, &ct->addrlen))
		ct->addrlen = 0;
	ct->svcaddr.buf = &ct->addr;
	ct->svcaddr.len = ct->svcaddr.maxlen = (unsigned)ct->addrlen;
	rpcrdma__cb_set_peer(ct->cb, &ct->svcaddr, ct->addrlen && ct->addr.ss_family == AF_INET6);
	return rc;
}

static int conn_errno(int rc)
{
	switch (rc) {
	case -RPCRDMA_ERR_TIMEDOUT:
		return ETIMEDOUT;
	case -RPCRDMA_ERR_ADDR:
		return EHOSTUNREACH;
	case -RPCRDMA_ERR_NOMEM:
		return ENOMEM;
	default:
		return ECONNREFUSED;
	}
}

/* One attempt at a connection, at most timeout_ms; its engine takes the calls waiting
 * to be sent. Failures space the next attempt out (BACKOFF_MIN_MS doubling up to
 * BACKOFF_MAX_MS), so a server that is down is not hammered. */
static void clnt_log(struct rdma_clnt *ct, int level, const char *what)
{
	char peer[160], addr[96];

	if (rpcrdma_log_level() < level || !ct->eng)
		return;
	rpcrdma__addr_text(&ct->addr, ct->addrlen, addr, sizeof(addr));
	snprintf(peer, sizeof(peer), "%s (%s)", ct->host, addr);
	rpcrdma__log_conn(level, what, peer, NULL, ct->opts.provider, ct->eng);
}

/* Attempts have failed for opts.reconnect_ms: the server is taken to be gone, and calls
 * waiting for a connection fail now rather than at their timeout, as libtirpc's fail at
 * once (docs/RPC.md). */
static int gave_up(const struct rdma_clnt *ct, uint64_t now)
{
	return ct->down_since && !ct->eng && ct->opts.reconnect_ms >= 0 &&
	       now - ct->down_since >= (uint64_t)ct->opts.reconnect_ms;
}

static int conn_up(struct rdma_clnt *ct, uint64_t now, int timeout_ms)
{
	int rc;

	if (ct->eng || now < ct->next_connect)
		return ct->eng ? 0 : -RPCRDMA_ERR_AGAIN;
	rc = make_engine(ct);
	if (!rc)
		rc = connect_engine(ct, timeout_ms);
	if (rc) {
		if (ct->ep)
			rpcrdma_ep_close(ct->ep);
		rpcrdma_eng_destroy(ct->eng);
		ct->ep = NULL;
		ct->eng = NULL;
		ct->conn_errno = conn_errno(rc);
		if (!ct->down_since)
			ct->down_since = now;
		rpcrdma_log(RPCRDMA_LOG_WARN, "reconnecting to %s port %u: %s; next try in %u ms",
			    ct->host, ct->opts.port, rpcrdma_strerror(rc), ct->backoff_ms);
		ct->next_connect = rpcrdma__rpc_now() + ct->backoff_ms;
		ct->backoff_ms = ct->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
								      : ct->backoff_ms * 2;
		return rc;
	}
	ct->conn_errno = 0;
	ct->down_since = 0;
	ct->backoff_ms = BACKOFF_MIN_MS;
	ct->next_connect = 0;
	ct->connects++;
	clnt_log(ct, RPCRDMA_LOG_INFO, "reconnected to");
	ct->last_rx = rpcrdma__rpc_now();
	ct->idle = 0;
	/* what CONF_RDMA gave on the first connection holds for the same server */
	if (ct->ccp_done)
		rpcrdma_eng_set_inline_send(ct->eng, ct->ccp.maxcall_sendsize);
	submit_queued(ct, rpcrdma__rpc_now());
	return 0;
}

/* Close the connection; its calls come back through on_call_done and wait for the next. */
static void conn_down(struct rdma_clnt *ct)
{
	if (!ct->eng)
		return;
	clnt_log(ct, RPCRDMA_LOG_INFO, "closed the connection to");
	rpcrdma_eng_shutdown(ct->eng, -RPCRDMA_ERR_DISCONN);
	rpcrdma_ep_close(ct->ep);
	rpcrdma_eng_destroy(ct->eng);
	ct->ep = NULL;
	ct->eng = NULL;
	hk_signal(ct);   /* it may be asleep on the closed endpoint's descriptor */
	wake_sleepers(ct);
}

/* ---- sending ---- */

/* RFC 2203 §5.3.3.1: a server keeps a window of the sequence numbers it has seen and
 * refuses one seen before: Linux's knfsd drops the call without a word (the caller waits
 * for ever), libtirpc's answers CTXPROBLEM (the call is then made again under a new XID,
 * and may run twice). A call under RPCSEC_GSS sent again after a lost connection is
 * therefore marshalled again, as Linux's client does: a new sequence number, its XID
 * kept, so that a duplicate request cache still knows it. A detached call's arguments
 * are gone by then: its bytes go again as they were. */
static int remarshal(struct rdma_clnt *ct, struct ccall *call)
{
	int ddp = call->ddp;

	if (!call->sent || call->kind == CK_DETACHED ||
	    call->auth->ah_cred.oa_flavor != RPCSEC_GSS)
		return 0;
	return encode_call(ct, call, call->prog, call->vers, call->proc, call->xargs, call->args,
			   &ddp, call->xid) == RPC_SUCCESS && ddp == call->ddp ? 0 : -1;
}

static void submit(struct rdma_clnt *ct, struct ccall *call, uint64_t now)
{
	int rc = remarshal(ct, call) ? -RPCRDMA_ERR_INVAL :
		 rpcrdma_eng_call(ct->eng, &call->a, call, now, &call->ec);

	if (rc == -RPCRDMA_ERR_DISCONN) {
		call->ec = NULL;   /* waits for the next connection */
		return;
	}
	call->rx_mark = ct->answers;
	if (!rc) {
		call->sent = 1;
		return;
	}
	/* too long or too many items for this connection (or, sent again, no longer
	 * encodable) */
	call->ec = NULL;
	call->done = 1;
	call->status = rc;
	wake_waiter(call);
	if (call->kind == CK_ASYNC && !call->fresh) {
		fail_stat(ct, RPC_CANTENCODEARGS, 0);
		report_async(ct, call, RPC_CANTENCODEARGS);
	} else if (is_background(call)) {
		drop_call(ct, call);   /* nobody to tell */
	}
}

static struct ccall *make_ping(struct rdma_clnt *ct, uint64_t deadline)
{
	enum clnt_stat st;
	struct ccall *p = new_call(ct, CK_PING, NULLPROC, RPCRDMA_XDR_VOID, NULL,
				   RPCRDMA_XDR_VOID, NULL, &st);

	if (p)
		p->deadline = deadline;
	return p;
}

/* A batched call never gets a reply, so its credit comes back only with the reply to a
 * later call. It never takes the last credit: a NULL call goes first and its reply
 * settles every batched call before it (the server answers in order). */
static int needs_flush(struct rdma_clnt *ct, const struct ccall *call)
{
	return call->a.no_reply && rpcrdma_eng_credits_free(ct->eng) < 2;
}

static int flush_batched(struct rdma_clnt *ct, struct ccall *before, uint64_t now)
{
	struct ccall *p;

	for (p = ct->head; p != before; p = p->next)
		if (p->flush && !p->done)
			return 0;   /* one already on its way */
	p = make_ping(ct, before->deadline);
	if (!p)
		return -1;
	p->flush = 1;
	calls_insert_before(ct, p, before);
	submit(ct, p, now);
	return 0;
}

/* Send, in order, the calls that wait for a connection. */
static void submit_queued(struct rdma_clnt *ct, uint64_t now)
{
	struct ccall *c, *next;

	for (c = ct->head; c && ct->eng && rpcrdma_eng_alive(ct->eng); c = next) {
		next = c->next;
		if (c->done || c->ec)
			continue;
		if (needs_flush(ct, c)) {
			flush_batched(ct, c, now);
			return;   /* the rest keep their order behind it */
		}
		submit(ct, c, now);
		if (!c->ec)
			return;
	}
}

/* ---- progress ---- */

/* A call nobody waits for that is past its time: withdrawn; its credit stays lost until
 * the connection ends. */
static void expire_background(struct rdma_clnt *ct, uint64_t now)
{
	struct ccall *c, *next;

	for (c = ct->head; c; c = next) {
		next = c->next;
		if (is_background(c) && !c->done && now >= c->deadline && c != ct->ka)
			drop_call(ct, c);
	}
}

/* Keepalive (opts.keepalive_ms): a NULL call once nothing has been received for that
 * long; when it goes unanswered as long again, the peer is presumed dead. */
static void keepalive(struct rdma_clnt *ct, uint64_t now)
{
	uint64_t every = (uint64_t)ct->opts.keepalive_ms;

	if (!every || !ct->eng)
		return;
	if (ct->ka) {
		if (now >= ct->ka->deadline) {
			drop_call(ct, ct->ka);
			conn_down(ct);
		}
		return;
	}
	if (now - ct->last_rx < every)
		return;
	ct->ka = make_ping(ct, now + every);
	if (ct->ka) {
		calls_add(ct, ct->ka);
		submit(ct, ct->ka, now);
	}
}

static int conn_alive(const struct rdma_clnt *ct)
{
	return ct->eng && rpcrdma_eng_alive(ct->eng);
}

/* Unlocked pause between slices when there is no connection to wait on. */
static void pause_ms(int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000 };

	nanosleep(&ts, NULL);
}

static void wake_sleepers(struct rdma_clnt *ct)
{
	uint64_t one = 1;

	if (ct->nsleepers && ct->wake_fd >= 0)
		(void)!write(ct->wake_fd, &one, sizeof(one));
}

/* Sleep up to ms, without the lock, on the endpoint's descriptor and on eventfd efd:
 * the endpoint is armed first, under the lock, so that nothing already pending is slept
 * through; efd is drained when it woke us (a descriptor closed meanwhile wakes nothing,
 * so whoever closes it signals efd). *sleepers, if given, counts the thread while it
 * sleeps. Returns 0 once it slept; -RPCRDMA_ERR_AGAIN when work is already there, or
 * -RPCRDMA_ERR_NOPROV when there is nothing to sleep on (shm without its doorbell),
 * without letting go of the lock. Called with the lock held; returns with it held. */
static int sleep_on_ep(struct rdma_clnt *ct, int efd, unsigned *sleepers, int ms)
{
	struct pollfd p[2] = { { .fd = ct->ep ? rpcrdma_ep_fd(ct->ep) : -1, .events = POLLIN },
			       { .fd = efd, .events = POLLIN } };
	uint64_t v;
	int rc;

	if (p[0].fd < 0 || efd < 0)
		return -RPCRDMA_ERR_NOPROV;
	rc = rpcrdma_ep_arm(ct->ep);
	if (rc)
		return rc;
	if (sleepers)
		(*sleepers)++;
	pthread_mutex_unlock(&ct->lock);
	if (poll(p, 2, ms) > 0 && (p[1].revents & POLLIN))
		(void)!read(efd, &v, sizeof(v));
	pthread_mutex_lock(&ct->lock);
	if (sleepers)
		(*sleepers)--;
	return 0;
}

#define LOCK_GAP 16

/* Between two slices of driving the lock is let go, so that other callers and the
 * background thread (which runs calls from the server) get it; a thread that is to wait
 * sleeps there, unlocked: a slice when there is no connection; when drive() found
 * nothing (ct->sleep_ms), on the endpoint and on wake_fd, which a thread completing calls
 * meanwhile signals (wake_sleepers). Without a descriptor (shm without its doorbell) it
 * backs off as the server does (yields, then naps). Called with the lock held; returns
 * with it held. */
static void between_slices(struct rdma_clnt *ct, int none)
{
	int ms = ct->sleep_ms, rc;
	unsigned backoff = 0;

	ct->sleep_ms = 0;
	if (!none && ms) {
		rc = sleep_on_ep(ct, ct->wake_fd, &ct->nsleepers, ms);
		if (rc == 0)
			return;
		if (rc == -RPCRDMA_ERR_NOPROV)
			backoff = ct->backoff++;
		else
			ms = 0;   /* work is there already */
	}
	/* between polls, the lock is let go for other callers every round, and for a thread
	 * that is not waiting yet every LOCK_GAP-th (a round trip of the lock was a
	 * twentieth of a lone caller's time, NULL over shm) */
	if (!none && !ms && ct->nwaiters <= 1 && ++ct->held_polls % LOCK_GAP)
		return;
	pthread_mutex_unlock(&ct->lock);
	if (none)
		pause_ms(WAIT_SLICE_MS);
	else if (ms)
		rpcrdma__idle_backoff(&backoff);
	pthread_mutex_lock(&ct->lock);
}

/* How long a thread with nothing to do sleeps on the endpoint: until the caller's limit,
 * the engine's next timer or the keepalive's, at most SLEEP_CAP_MS (what else has a
 * deadline — asynchronous and background calls — is looked at on waking, so it is late by
 * that much at most). A reply, a completion, a thread finishing calls (wake_sleepers)
 * wake it before. It slept WAIT_SLICE_MS at a time before: a client waiting for a slow
 * reply woke ~900 times a second. */
#define SLEEP_CAP_MS 100

static int sleep_span(const struct rdma_clnt *ct, uint64_t limit, uint64_t due, uint64_t now)
{
	uint64_t until = now + SLEEP_CAP_MS;

	if (limit < until)
		until = limit;
	if (due < until)
		until = due;
	if (ct->ka && ct->ka->deadline < until)
		until = ct->ka->deadline;
	else if (!ct->ka && ct->opts.keepalive_ms &&
		 ct->last_rx + (uint64_t)ct->opts.keepalive_ms < until)
		until = ct->last_rx + (uint64_t)ct->opts.keepalive_ms;
	return until > now ? (int)(until - now) : 1;
}

/* Nothing has come from the server for QUIET_MS: whatever we wait for needs it to wake up
 * (ours sleeps after 100 us without work, the kernel's svcrdma is driven by interrupts),
 * so polling cannot catch it early, and a thread that polled kept its core, where the
 * server woken by our send could have run at once. A NULL call 5 ms after the last took
 * 171-283 us over tcp on this host, 62-179 us sleeping at once (libtirpc, which always
 * sleeps: 40-149 us), and a 100 ms call cost its caller 31 ms of CPU in polls.
 * docs/BENCHMARKS-HISTORY.md, "Latency after an idle gap". */
#define QUIET_MS 2

static int conn_quiet(const struct rdma_clnt *ct, uint64_t now)
{
	return now > ct->last_rx && now - ct->last_rx >= QUIET_MS;
}

/* Busy polling (opts.busy_poll_us): within its budget, counted from the first empty poll
 * after a call was made or something arrived, the waiter polls on whatever QUIET_MS and
 * the pressure on the host say. */
static bool busy_polling(struct rdma_clnt *ct, uint64_t now_us)
{
	return ct->opts.busy_poll_us && now_us - ct->busy_from_us < ct->opts.busy_poll_us &&
	       rpcrdma__busy_poll_on(ct->idle);
}

/* Feed what the endpoint completed to the engine, waiting (wait_ms != 0) when nothing is
 * there; without a connection, make one when calls need it (within limit). Returns 1
 * when there is no connection to wait on. Called with the lock held. */
static int drive(struct rdma_clnt *ct, int wait_ms, uint64_t limit)
{
	struct rpcrdma_cqe c[32];
	uint64_t now, now_us, due;
	int i, n, news;

	if (!conn_alive(ct)) {
		now = ct->now = rpcrdma__rpc_now();
		conn_down(ct);
		if (ct->opts.no_reconnect && ct->connects)
			return 1;
		if (pending_calls(ct) && limit > now)
			conn_up(ct, now, (int)(limit - now < (uint64_t)ct->opts.connect_timeout_ms
						   ? limit - now : (uint64_t)ct->opts.connect_timeout_ms));
		if (!ct->eng)
			return 1;
	}
	n = rpcrdma_ep_poll(ct->ep, c, 32);
	now_us = rpcrdma__rpc_now_us();   /* one read per poll: a spinning waiter's clock
					     reads were a fifth of its time */
	now = ct->now = now_us / 1000u;
	for (i = 0, news = 0; i < n; i++) {
		news += rpcrdma__cqe_is_news(&c[i]);
		rpcrdma_eng_on_cqe(ct->eng, &c[i], now);
	}
	due = rpcrdma_eng_tick(ct->eng, now);
	expire_background(ct, now);
	if (n)
		wake_sleepers(ct);
	if (news) {
		ct->idle = 0;
		ct->backoff = 0;
		ct->last_rx = now;
	}
	keepalive(ct, now);
	if (!conn_alive(ct))
		return 0;
	/* only a new connection gives back credits held by abandoned calls */
	if (rpcrdma_eng_starved(ct->eng)) {
		conn_down(ct);
		return 0;
	}
	submit_queued(ct, now);
	/* an RDMA operation targeting us moves only while we poll: keep polling a while
	 * before sleeping, unless this thread is on a contended core (rpcrdma__spin_more)
	 * and can sleep on a descriptor (shm without its doorbell has none: backing off there
	 * yields the core to whatever holds it for a scheduler slice, worse than polling) */
	ct->sleep_ms = 0;
	if (news)
		return 0;
	if (ct->idle++ == 0)
		ct->busy_from_us = now_us;
	if (wait_ms && !busy_polling(ct, now_us) &&
	    (ct->idle > SPIN_POLLS ||
	     (rpcrdma_ep_fd(ct->ep) >= 0 && (conn_quiet(ct, now) || !rpcrdma__spin_more(ct->idle)))))
		ct->sleep_ms = sleep_span(ct, limit, due, now);   /* between_slices() sleeps,
								     without the lock */
	return 0;
}

/* ---- the background thread ---- */

static void hk_signal(struct rdma_clnt *ct)
{
	uint64_t one = 1;

	if (ct->hk_fd >= 0)
		(void)!write(ct->hk_fd, &one, sizeof(one));
}

/* Zero-timeout calls and keepalive need the connection driven while no caller waits:
 * the thread drives it while such calls are pending, pings an idle connection when
 * keepalive is due, and otherwise sleeps on its condition variable. With a callback
 * program it also dispatches calls from the server, and waits for them on the
 * endpoint's descriptor. */
static void *housekeeper(void *arg)
{
	struct rdma_clnt *ct = arg;
	struct timespec ts;

	pthread_mutex_lock(&ct->lock);
	while (!ct->hk_stop) {
		uint64_t now = rpcrdma__rpc_now(), wake = now + HK_IDLE_MS;
		uint64_t ka_due = ct->last_rx + (uint64_t)ct->opts.keepalive_ms;
		int ka_on = ct->opts.keepalive_ms && conn_alive(ct);

		if (rpcrdma__cb_pending(ct->cb)) {
			/* unlocked: a dispatch function may call this client */
			pthread_mutex_unlock(&ct->lock);
			rpcrdma__cb_run(ct->cb);
			pthread_mutex_lock(&ct->lock);
			continue;
		}
		/* with a callback program, the connection is driven so that calls from the
		 * server arrive while nobody calls */
		if (!ct->nwaiters && (background_calls(ct) || (ka_on && now >= ka_due) ||
				      (conn_alive(ct) && rpcrdma__cb_active(ct->cb)))) {
			int only_cb = !background_calls(ct) && !(ka_on && now >= ka_due);
			int none = drive(ct, only_cb ? 0 : WAIT_SLICE_MS,
					 now + (uint64_t)ct->opts.connect_timeout_ms);

			/* with nothing but calls from the server to wait for, it sleeps on the
			 * endpoint and its own eventfd (hk_wake, conn_down signal it) */
			if (ka_on && ka_due < wake)
				wake = ka_due;
			if (only_cb && ct->idle && !rpcrdma__cb_pending(ct->cb) &&
			    sleep_on_ep(ct, ct->hk_fd, NULL, wake > now ? (int)(wake - now) : 0) == 0)
				continue;
			between_slices(ct, none);
			continue;
		}
		if (ka_on && ka_due < wake)
			wake = ka_due;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)((wake - now) % 1000) * 1000000;
		ts.tv_sec += (time_t)((wake - now) / 1000) + ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&ct->hk_cv, &ct->lock, &ts);
	}
	pthread_mutex_unlock(&ct->lock);
	return NULL;
}

/* Called with the lock held. */
static void hk_wake(struct rdma_clnt *ct)
{
	if (!ct->hk_started && !ct->hk_stop) {
		ct->hk_started = pthread_create(&ct->hk, NULL, housekeeper, ct) == 0;
		return;
	}
	pthread_cond_signal(&ct->hk_cv);
	hk_signal(ct);
}

/* ---- cl_ops ---- */

/* ct->err (or a call's) for an outcome decided here; clears the error text. */
static enum clnt_stat fail_stat(struct rdma_clnt *ct, enum clnt_stat stat, int eno)
{
	memset(&ct->err, 0, sizeof(ct->err));
	ct->err.re_status = stat;
	ct->err.re_errno = eno;
	ct->errtext[0] = '\0';
	return stat;
}

/* The deadline passed: the call is withdrawn. With nothing heard from the server since
 * it went out, the connection is presumed dead and closed (RDMA has no keepalive): the
 * other calls go again on the next one, as the Linux client does. */
static enum clnt_stat timed_out(struct rdma_clnt *ct, struct ccall *call)
{
	int sent = call->ec && rpcrdma_eng_call_sent(call->ec);

	if (call->ec)
		release_engine_call(call);
	calls_del(ct, call);
	if (sent && ct->answers == call->rx_mark)
		conn_down(ct);
	if (!ct->eng && ct->conn_errno)
		return fail_stat(ct, RPC_CANTSEND, ct->conn_errno);
	return fail_stat(ct, RPC_TIMEDOUT, 0);
}

/* One caller at a time drives the connection for all who wait; the others sleep until
 * their call is done or the lead is passed to them. When every waiting thread polled,
 * each poll was a system call over tcp and each completion woke every sleeper: an
 * 8-thread client made ~29 system calls a call (docs/BENCHMARKS-HISTORY.md, "Short-lived
 * processes in a crowd").
 * 1 when this caller drives: it leads (*lead), or it is inside a callback. */
static int take_lead(struct rdma_clnt *ct, int *lead)
{
	if (*lead || in_callback)
		return 1;
	if (ct->leading)
		return 0;
	ct->leading = *lead = 1;
	return 1;
}

/* The lead goes to the oldest caller still waiting, if any. */
static void pass_lead(struct rdma_clnt *ct)
{
	struct ccall *c;

	ct->leading = 0;
	for (c = ct->head; c; c = c->next) {
		if (c->waiter && !c->done) {
			pthread_cond_signal(c->waiter);
			return;
		}
	}
}

/* The caller's own condition variable, on the monotonic clock of rpcrdma__rpc_now();
 * NULL if it cannot be made (the caller then drives in turn, as all did before). */
static pthread_cond_t *waiter_cv(void)
{
	static __thread pthread_cond_t cv;
	static __thread int made;   /* 1: made, -1: failed */
	pthread_condattr_t a;

	if (!made) {
		made = -1;
		if (!pthread_condattr_init(&a)) {
			if (!pthread_condattr_setclock(&a, CLOCK_MONOTONIC) &&
			    !pthread_cond_init(&cv, &a))
				made = 1;
			pthread_condattr_destroy(&a);
		}
	}
	return made > 0 ? &cv : NULL;
}

/* Sleep while another thread drives: until the call is done, the lead is passed, or
 * its deadline; at most SLEEP_CAP_MS, to look again. Called with the lock held once. */
static void follow(struct rdma_clnt *ct, struct ccall *call, pthread_cond_t *cv)
{
	uint64_t until = ct->now + SLEEP_CAP_MS;
	struct timespec ts;

	if (call->deadline < until)
		until = call->deadline;
	ts.tv_sec = (time_t)(until / 1000u);
	ts.tv_nsec = (long)(until % 1000u) * 1000000L;
	call->waiter = cv;
	pthread_cond_timedwait(cv, &ct->lock, &ts);
	call->waiter = NULL;
	ct->now = rpcrdma__rpc_now();
}

static enum clnt_stat wait_call(struct rdma_clnt *ct, struct ccall *call)
{
	pthread_cond_t *cv = waiter_cv();
	enum clnt_stat stat;
	int lead = 0;

	ct->nwaiters++;
	ct->now = rpcrdma__rpc_now();
	while (!call->done && ct->now < call->deadline) {
		int none;

		if (cv && !take_lead(ct, &lead)) {
			follow(ct, call, cv);
			continue;
		}
		none = drive(ct, WAIT_SLICE_MS, call->deadline);   /* reads ct->now */
		if (none && ((ct->opts.no_reconnect && ct->connects) || gave_up(ct, ct->now)))
			break;
		between_slices(ct, none);
	}
	/* also when nobody leads: a lead passed to this caller as it left is passed on */
	if (lead || !ct->leading)
		pass_lead(ct);
	ct->nwaiters--;
	if (!ct->nwaiters && background_calls(ct))
		hk_wake(ct);
	if (!call->done) {
		if (ct->opts.no_reconnect && !ct->eng) {
			if (call->ec)
				release_engine_call(call);
			calls_del(ct, call);
			stat = fail_stat(ct, RPC_CANTSEND, ECONNRESET);
		} else {
			stat = timed_out(ct, call);
		}
		pthread_mutex_unlock(&ct->lock);
		free_call(call);
		return stat;
	}
	calls_del(ct, call);
	pthread_mutex_unlock(&ct->lock);
	stat = finish_call(call);
	pthread_mutex_lock(&ct->lock);
	ct->err = call->err;
	memcpy(ct->errtext, call->errtext, sizeof(ct->errtext));
	release_engine_call(call);
	pthread_mutex_unlock(&ct->lock);
	free_call(call);
	return stat;
}

/* Enqueue a call and send it if it can go now. Called with the lock held. */
static void start(struct rdma_clnt *ct, struct ccall *call, uint64_t now)
{
	calls_add(ct, call);
	/* each call's wait gets the whole busy-polling budget: without this, a call made
	 * while an earlier, timed-out one still waits for its reply would inherit what is
	 * left of that one's budget (the count restarts only when something arrives) */
	if (ct->opts.busy_poll_us)
		ct->idle = 0;
	if (conn_alive(ct))
		submit_queued(ct, now);
}

static enum clnt_stat do_call(struct rdma_clnt *ct, rpcproc_t proc, xdrproc_t xargs,
			      void *args, xdrproc_t xres, void *res, int timeout_ms)
{
	enum clnt_stat stat;
	struct ccall *call = new_call(ct, CK_WAIT, proc, xargs, args, xres, res, &stat);
	uint64_t now = rpcrdma__rpc_now();

	pthread_mutex_lock(&ct->lock);
	if (!call) {
		fail_stat(ct, stat, 0);
		pthread_mutex_unlock(&ct->lock);
		return stat;
	}
	call->deadline = now + (uint64_t)timeout_ms;
	if (gave_up(ct, now))
		ct->next_connect = 0;   /* a new call: one attempt at once, not the backoff */
	if (ct->opts.no_reconnect && ct->connects && !conn_alive(ct)) {
		stat = fail_stat(ct, RPC_CANTSEND, ECONNRESET);
		pthread_mutex_unlock(&ct->lock);
		free_call(call);
		return stat;
	}
	start(ct, call, now);
	if (call->done && call->status != 0 && !call->ec) {
		/* refused before it went anywhere: too long or too many items */
		calls_del(ct, call);
		stat = fail_stat(ct, RPC_CANTENCODEARGS, 0);
		pthread_mutex_unlock(&ct->lock);
		free_call(call);
		return stat;
	}
	return wait_call(ct, call);   /* unlocks */
}

/* Zero timeout (libtirpc's message passing): the call is sent and clnt_call returns at
 * once, RPC_TIMEDOUT; with no result procedure (batching), RPC_SUCCESS. The call is kept,
 * everything in our own buffer, until its reply (dropped) or its time is up. */
static enum clnt_stat detach_call(struct rdma_clnt *ct, rpcproc_t proc, xdrproc_t xargs,
				  void *args, xdrproc_t xres)
{
	enum clnt_stat stat;
	struct ccall *call = new_call(ct, CK_DETACHED, proc, xargs, args, RPCRDMA_XDR_VOID,
				      NULL, &stat);
	uint64_t now = rpcrdma__rpc_now();
	int wait = ct->ids.timeout_ms >= 0 ? ct->ids.timeout_ms : ct->ids.last_timeout_ms;

	pthread_mutex_lock(&ct->lock);
	if (!call) {
		fail_stat(ct, stat, 0);
		pthread_mutex_unlock(&ct->lock);
		return stat;
	}
	call->deadline = now + (uint64_t)(wait > 0 ? wait : DEF_TIMEOUT_MS);
	call->a.no_reply = xres == NULL;
	start(ct, call, now);
	hk_wake(ct);
	stat = xres == NULL ? RPC_SUCCESS : RPC_TIMEDOUT;
	fail_stat(ct, stat, 0);
	pthread_mutex_unlock(&ct->lock);
	return stat;
}

static enum clnt_stat rdma_call(CLIENT *cl, rpcproc_t proc, xdrproc_t xargs, void *args,
				xdrproc_t xres, void *res, struct timeval tout)
{
	struct rdma_clnt *ct = (struct rdma_clnt *)cl->cl_private;
	enum clnt_stat stat;
	int ms, refreshes;

	/* the argument decides message passing, whatever CLSET_TIMEOUT says (libtirpc) */
	if (tout.tv_sec == 0 && tout.tv_usec == 0)
		return detach_call(ct, proc, xargs, args, xres);
	ms = rpcrdma__ids_timeout(&ct->ids, tout);
	/* as libtirpc's clnt_vc_call: a credential the server refused is refreshed (a new
	 * RPCSEC_GSS context, say) and the call made again, twice at most */
	for (refreshes = 2;; refreshes--) {
		stat = do_call(ct, proc, xargs, args, xres, res, ms);
		if (stat != RPC_AUTHERROR || refreshes == 0 || !cl->cl_auth ||
		    !AUTH_REFRESH(cl->cl_auth, NULL))
			return stat;
	}
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

/* Before the connection closes, calls nobody waits for get the time they were given to
 * be answered, while the server can be reached: over TCP they would be in the socket's
 * buffer already. Batched calls are settled by a NULL call's reply. */
static void flush_background(struct rdma_clnt *ct)
{
	struct ccall *c;
	int batched = 0;

	for (c = ct->head; c; c = c->next)
		batched |= c->a.no_reply && !c->done;
	if (batched && conn_alive(ct)) {
		uint64_t until = rpcrdma__rpc_now() + DEF_TIMEOUT_MS;

		for (c = ct->head; c; c = c->next)
			if (c->deadline > until)
				until = c->deadline;
		c = make_ping(ct, until);
		if (c) {
			calls_add(ct, c);
			submit_queued(ct, rpcrdma__rpc_now());
		}
	}
	ct->nwaiters++;   /* keeps the background thread out */
	while (background_calls(ct)) {
		uint64_t now = rpcrdma__rpc_now();
		int none = drive(ct, WAIT_SLICE_MS, now + (uint64_t)ct->opts.connect_timeout_ms);

		if (none && ct->conn_errno)
			break;   /* the server cannot be reached: nothing more will go */
		between_slices(ct, none);
	}
	ct->nwaiters--;
}

/* What a client holds besides its provider and connection; the end of clnt_destroy()
 * and of a clnt_rdma_create() that failed. */
static void free_client(struct rdma_clnt *ct)
{
	free_spares(ct);
	rpcrdma__cb_destroy(ct->cb);
	if (ct->hk_fd >= 0)
		close(ct->hk_fd);
	if (ct->wake_fd >= 0)
		close(ct->wake_fd);
	pthread_cond_destroy(&ct->hk_cv);
	pthread_mutex_destroy(&ct->lock);
	free(ct->host);
	free(ct);
}

static void rdma_destroy(CLIENT *cl)
{
	struct rdma_clnt *ct = (struct rdma_clnt *)cl->cl_private;
	uint64_t until = rpcrdma__rpc_now() + FLUSH_MS;
	struct ccall *c;

	pthread_mutex_lock(&ct->lock);
	flush_background(ct);
	ct->hk_stop = 1;
	pthread_cond_signal(&ct->hk_cv);
	hk_signal(ct);
	pthread_mutex_unlock(&ct->lock);
	if (ct->hk_started)
		pthread_join(ct->hk, NULL);
	/* RDMA_DONEs already posted go out before the connection closes */
	pthread_mutex_lock(&ct->lock);
	while (conn_alive(ct) && rpcrdma_eng_sending(ct->eng) && rpcrdma__rpc_now() < until)
		drive(ct, WAIT_SLICE_MS, until);
	conn_down(ct);
	while ((c = ct->head) != NULL) {   /* calls left over: only what expired unanswered */
		calls_del(ct, c);
		free_call(c);
	}
	pthread_mutex_unlock(&ct->lock);
	/* cl_auth is the caller's, as with every libtirpc client: they destroy it */
	rpcrdma_prov_close(ct->p);
	free_client(ct);
}

static bool_t control_std(struct rdma_clnt *ct, u_int req, void *info)
{
	bool_t ok;

	if (rpcrdma__ids_control(&ct->ids, req, info, &ok))
		return ok;
	switch (req) {
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
		*(int *)info = ct->ep ? rpcrdma_ep_fd(ct->ep) : -1;
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
	case RPCRDMA_CLSET_MEM_ADD:
		ok = rpcrdma_mem_add(ct->p, ((const struct rpcrdma_mem *)info)->addr,
				     ((const struct rpcrdma_mem *)info)->len) == 0;
		break;
	case RPCRDMA_CLSET_MEM_REMOVE:
		ok = rpcrdma_mem_remove(ct->p, ((const struct rpcrdma_mem *)info)->addr) == 0;
		break;
	case RPCRDMA_CLGET_STATS:
		if (ct->eng)
			rpcrdma_eng_stats(ct->eng, info);
		else
			memset(info, 0, sizeof(struct rpcrdma_eng_stats));
		break;
	case RPCRDMA_CLGET_CCP:
		if (ct->ccp_done)
			*(struct rpcrdma_ccp_res *)info = ct->ccp;
		ok = ct->ccp_done;
		break;
	case RPCRDMA_CLGET_CONNECTS:
		*(uint64_t *)info = ct->connects;
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

const char *rpcrdma_clnt_errtext(CLIENT *cl)
{
	struct rdma_clnt *ct;

	if (!cl || cl->cl_ops != &rdma_ops)
		return "";
	ct = (struct rdma_clnt *)cl->cl_private;
	return ct->errtext;
}

/* ---- asynchronous calls ---- */

int rpcrdma_clnt_call_async(CLIENT *cl, rpcproc_t proc, xdrproc_t xargs, void *args,
			    xdrproc_t xres, void *res, rpcrdma_clnt_cb done, void *ctx)
{
	struct rdma_clnt *ct;
	struct ccall *call;
	enum clnt_stat stat;
	int wait;

	if (!cl || cl->cl_ops != &rdma_ops || !done)
		return -RPCRDMA_ERR_INVAL;
	ct = (struct rdma_clnt *)cl->cl_private;
	call = new_call(ct, CK_ASYNC, proc, xargs, args, xres, res, &stat);
	if (!call)
		return stat == RPC_SYSTEMERROR ? -RPCRDMA_ERR_NOMEM : -RPCRDMA_ERR_INVAL;
	call->cb = done;
	call->cbctx = ctx;
	call->fresh = 1;
	pthread_mutex_lock(&ct->lock);
	wait = ct->ids.timeout_ms >= 0 ? ct->ids.timeout_ms : DEF_TIMEOUT_MS;
	call->deadline = rpcrdma__rpc_now() + (uint64_t)wait;
	if (gave_up(ct, rpcrdma__rpc_now()))
		ct->next_connect = 0;   /* as for a waiting call: one attempt at once */
	calls_add(ct, call);
	ct->async_pending++;
	if (conn_alive(ct))
		submit_queued(ct, rpcrdma__rpc_now());
	call->fresh = 0;
	if (call->done && call->status && !call->ec) {
		int rc = call->status;

		calls_del(ct, call);
		ct->async_pending--;
		pthread_mutex_unlock(&ct->lock);
		free_call(call);
		return rc;
	}
	pthread_mutex_unlock(&ct->lock);
	return 0;
}

/* Asynchronous calls past their time fail with RPC_TIMEDOUT. */
static void expire_async(struct rdma_clnt *ct, uint64_t now)
{
	struct ccall *c, *next;

	for (c = ct->head; c; c = next) {
		next = c->next;
		enum clnt_stat stat = gave_up(ct, now) ? RPC_CANTSEND : RPC_TIMEDOUT;

		if (c->kind != CK_ASYNC || c->done || (now < c->deadline && stat == RPC_TIMEDOUT))
			continue;
		if (c->ec)
			release_engine_call(c);
		calls_del(ct, c);
		ct->async_pending--;
		fail_stat(ct, stat, stat == RPC_CANTSEND ? ct->conn_errno : 0);
		in_callback++;
		c->cb(c->cbctx, stat);
		in_callback--;
		free_call(c);
	}
}

int rpcrdma_clnt_progress(CLIENT *cl, int timeout_ms)
{
	struct rdma_clnt *ct = (struct rdma_clnt *)cl->cl_private;
	uint64_t deadline = rpcrdma__rpc_now() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	int left, none;

	pthread_mutex_lock(&ct->lock);
	ct->nwaiters++;
	do {
		none = drive(ct, timeout_ms > 0 ? WAIT_SLICE_MS : 0,
			     deadline > rpcrdma__rpc_now() ? deadline : rpcrdma__rpc_now() + 1);
		expire_async(ct, rpcrdma__rpc_now());
		if (ct->async_pending && rpcrdma__rpc_now() < deadline)
			between_slices(ct, none);
	} while (ct->async_pending && rpcrdma__rpc_now() < deadline);
	ct->nwaiters--;
	if (!ct->nwaiters && background_calls(ct))
		hk_wake(ct);
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

/* As libtirpc's TCP client: a name that does not resolve is RPC_UNKNOWNHOST; one that
 * does but has no route from here is a system error, EHOSTUNREACH. */
static void connect_error(int rc, const char *host)
{
	struct addrinfo hints, *ai = NULL;

	switch (rc) {
	case -RPCRDMA_ERR_ADDR:
		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_STREAM;
		if (host && !getaddrinfo(host, NULL, &hints, &ai)) {
			freeaddrinfo(ai);
			create_error(RPC_SYSTEMERROR, EHOSTUNREACH);
		} else {
			create_error(RPC_UNKNOWNHOST, 0);
		}
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
		o->provider = rpcrdma__env_provider();
	if (!o->inline_size)
		o->inline_size = 4096;
	if (!o->max_credits)
		o->max_credits = 32;
	if (!o->max_reply)
		o->max_reply = DEF_MAX_REPLY;
	if (!o->connect_timeout_ms)
		o->connect_timeout_ms = DEF_CONNECT_MS;
	if (!o->bc_credits)
		o->bc_credits = DEF_BC_CREDITS;
	if (!o->reconnect_ms)
		o->reconnect_ms = DEF_RECONNECT_MS;
	o->busy_poll_us = o->busy_poll_us ? rpcrdma__busy_poll_cap(o->busy_poll_us)
					  : rpcrdma__env_busy_poll_us();
}

/* RFC 5666 §6.2: ask the server what it takes; adopt its inline size for our calls. */
static void negotiate(struct rdma_clnt *ct)
{
	struct rpcrdma_ccp_args a = { ct->opts.inline_size, ct->opts.inline_size, 0 };
	struct rpcrdma_ccp_res r;
	rpcprog_t prog = ct->ids.prog;
	rpcvers_t vers = ct->ids.vers;
	enum clnt_stat st;

	memset(&r, 0, sizeof(r));
	ct->ids.prog = RPCRDMA_CCP_PROG;
	ct->ids.vers = RPCRDMA_CCP_VERS;
	st = do_call(ct, RPCRDMA_CCP_PROC_CONF_RDMA, (xdrproc_t)rpcrdma__xdr_ccp_args, &a,
		     (xdrproc_t)rpcrdma__xdr_ccp_res, &r, DEF_CONNECT_MS);
	ct->ids.prog = prog;
	ct->ids.vers = vers;
	if (st != RPC_SUCCESS)
		return;
	pthread_mutex_lock(&ct->lock);
	ct->ccp = r;
	ct->ccp_done = 1;
	if (ct->eng)
		rpcrdma_eng_set_inline_send(ct->eng, r.maxcall_sendsize);
	pthread_mutex_unlock(&ct->lock);
}

/* No port given: $RPCRDMA_PORT, else what the host's rpcbind has for netid rdma/rdma6
 * (network providers only), else the NFS/RDMA port. */
static uint16_t find_port(const struct rdma_clnt *ct, const char *host)
{
	uint32_t env;
	uint16_t port;
	int ms = ct->opts.connect_timeout_ms < 2000 ? ct->opts.connect_timeout_ms : 2000;

	if (rpcrdma__env_port(&env) && env)
		return (uint16_t)env;
	if (rpcrdma_prov_caps(ct->p)->ep_type == RPCRDMA_EP_MSG &&
	    rpcrdma__rpcb_lookup(host, ct->ids.prog, ct->ids.vers, ms, &port) == 0)
		return port;
	return RPCRDMA_PORT;
}

static int init_lock(struct rdma_clnt *ct)
{
	pthread_mutexattr_t ma;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&ct->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	ct->hk_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);   /* -1: the thread polls */
	ct->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);  /* -1: waiters do not sleep */
	return pthread_cond_init(&ct->hk_cv, NULL);
}

CLIENT *clnt_rdma_create(const char *host, rpcprog_t prog, rpcvers_t vers,
			 const struct rpcrdma_clnt_opts *opts)
{
	struct rdma_clnt *ct;
	char err[256];
	int rc;

	rpcrdma__create_err(NULL);
	ct = calloc(1, sizeof(*ct));
	if (!ct || !host || !(ct->host = strdup(host))) {
		rpcrdma__create_err("%s", host ? "out of memory" : "no host given");
		free(ct);
		create_error(RPC_SYSTEMERROR, host ? ENOMEM : EINVAL);
		return NULL;
	}
	fill_defaults(&ct->opts, opts);
	rpcrdma__ids_init(&ct->ids, prog, vers, DEF_TIMEOUT_MS);
	ct->backoff_ms = BACKOFF_MIN_MS;
	init_lock(ct);
	ct->cb = rpcrdma__cb_create(cb_send, ct);
	if (!ct->cb) {
		rpcrdma__create_err("out of memory");
		create_error(RPC_SYSTEMERROR, ENOMEM);
		goto out_free;
	}
	rc = rpcrdma_prov_open(ct->opts.provider, &ct->p, err, sizeof(err));
	if (rc) {
		rpcrdma__create_err("provider '%s': %s", ct->opts.provider ? ct->opts.provider : "tcp",
				    err[0] ? err : rpcrdma_strerror(rc));
		create_error(RPC_SYSTEMERROR, ENOENT);
		goto out_free;
	}
	if (ct->opts.port > 65535) {
		rpcrdma__create_err("port %u is not a port (1..65535, or 0 for the default)",
				    ct->opts.port);
		create_error(RPC_SYSTEMERROR, EINVAL);
		goto out_prov;
	}
	if (!ct->opts.port)
		ct->opts.port = find_port(ct, host);
	rc = make_engine(ct);
	if (rc) {
		rpcrdma__create_err("transport engine: %s (check inline_size, max_credits)",
				    rpcrdma_strerror(rc));
		create_error(RPC_SYSTEMERROR, EINVAL);
		goto out_prov;
	}
	rc = connect_engine(ct, ct->opts.connect_timeout_ms);
	if (rc) {
		rpcrdma__create_err_conn(rc, 0, ct->opts.provider, host, ct->opts.port,
					 ct->opts.connect_timeout_ms);
		rpcrdma_log(RPCRDMA_LOG_ERROR, "%s", rpcrdma_create_errtext());
		connect_error(rc, host);
		goto out_eng;
	}
	ct->connects = 1;
	clnt_log(ct, RPCRDMA_LOG_INFO, "connected to");
	ct->last_rx = rpcrdma__rpc_now();
	ct->cl.cl_ops = &rdma_ops;
	ct->cl.cl_private = ct;
	ct->cl.cl_auth = authnone_create();
	ct->cl.cl_netid = ct->addrlen && ct->addr.ss_family == AF_INET6 ? "rdma6" : "rdma";
	ct->cl.cl_tp = "rdma";
	if (ct->opts.use_ccp)
		negotiate(ct);
	if (ct->opts.keepalive_ms) {
		pthread_mutex_lock(&ct->lock);
		hk_wake(ct);
		pthread_mutex_unlock(&ct->lock);
	}
	return &ct->cl;
out_eng:
	if (ct->ep)
		rpcrdma_ep_close(ct->ep);
	rpcrdma_eng_destroy(ct->eng);
out_prov:
	rpcrdma_prov_close(ct->p);
out_free:
	free_client(ct);
	return NULL;
}

int clnt_rdma_set_callback(CLIENT *cl, rpcprog_t prog, rpcvers_t vers,
			   rpcrdma_dispatch_fn dispatch)
{
	struct rdma_clnt *ct;

	if (!cl || cl->cl_ops != &rdma_ops) {
		errno = EINVAL;
		return -1;
	}
	ct = (struct rdma_clnt *)cl->cl_private;
	if (rpcrdma__cb_register(ct->cb, prog, vers, dispatch)) {
		errno = ENOSPC;
		return -1;
	}
	pthread_mutex_lock(&ct->lock);
	hk_wake(ct);   /* it drives the connection from now on */
	pthread_mutex_unlock(&ct->lock);
	return 0;
}
