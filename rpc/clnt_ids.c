/* SPDX-License-Identifier: BSD-2-Clause */
/* What every CLIENT * of ours keeps about itself and answers in clnt_control() as
 * libtirpc's clients do: XIDs, program, version, timeouts. The forward client
 * (clnt_rdma.c) and the backchannel's (svc_bc.c) share it. */
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "rpc_int.h"

void rpcrdma__ids_init(struct rpcrdma__clnt_ids *ids, rpcprog_t prog, rpcvers_t vers,
		       int def_timeout_ms)
{
	ids->prog = prog;
	ids->vers = vers;
	ids->timeout_ms = -1;
	ids->last_timeout_ms = def_timeout_ms;
	/* a random start, as libtirpc's: a restarted client does not reuse its XIDs */
	if (getrandom(&ids->xid, sizeof(ids->xid), 0) != sizeof(ids->xid))
		ids->xid = (uint32_t)getpid() ^ (uint32_t)rpcrdma__rpc_now();
}

uint32_t rpcrdma__ids_next_xid(struct rpcrdma__clnt_ids *ids)
{
	return __atomic_add_fetch(&ids->xid, 1, __ATOMIC_RELAXED);
}

/* libtirpc's time_not_ok(): what a valid struct timeval is */
static int timeval_valid(const struct timeval *tv)
{
	return tv->tv_sec >= 0 && tv->tv_usec >= 0 && tv->tv_usec <= 1000000;
}

static int timeval_ms(struct timeval tv)
{
	long long ms = (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;

	return ms < 0 ? 0 : ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

int rpcrdma__ids_timeout(struct rpcrdma__clnt_ids *ids, struct timeval tv)
{
	if (ids->timeout_ms < 0 && timeval_valid(&tv))
		ids->last_timeout_ms = timeval_ms(tv);
	return ids->timeout_ms >= 0 ? ids->timeout_ms : timeval_ms(tv);
}

enum clnt_stat rpcrdma__reply_take(XDR *x, AUTH *auth, xdrproc_t xres, void *res,
				   struct rpc_err *err)
{
	struct rpc_msg rm;

	memset(&rm, 0, sizeof(rm));
	memset(err, 0, sizeof(*err));
	rm.acpted_rply.ar_verf = _null_auth;
	rm.acpted_rply.ar_results.where = NULL;
	rm.acpted_rply.ar_results.proc = RPCRDMA_XDR_VOID;
	if (!xdr_replymsg(x, &rm)) {
		err->re_status = RPC_CANTDECODERES;
		return err->re_status;
	}
	_seterr_reply(&rm, err);
	if (err->re_status == RPC_SUCCESS) {
		if (!AUTH_VALIDATE(auth, &rm.acpted_rply.ar_verf)) {
			err->re_status = RPC_AUTHERROR;
			err->re_why = AUTH_INVALIDRESP;
		} else if (!AUTH_UNWRAP(auth, x, xres, res)) {
			err->re_status = RPC_CANTDECODERES;
		}
	}
	if (rm.acpted_rply.ar_verf.oa_base) {
		x->x_op = XDR_FREE;
		xdr_opaque_auth(x, &rm.acpted_rply.ar_verf);
	}
	return err->re_status;
}

int rpcrdma__ids_control(struct rpcrdma__clnt_ids *ids, u_int req, void *info, bool_t *ok)
{
	struct timeval *tv = info;

	*ok = TRUE;
	switch (req) {
	case CLSET_TIMEOUT:
		*ok = timeval_valid(tv);
		if (*ok)
			ids->timeout_ms = timeval_ms(*tv);
		return 1;
	case CLGET_TIMEOUT: {
		int ms = ids->timeout_ms >= 0 ? ids->timeout_ms : ids->last_timeout_ms;

		tv->tv_sec = ms / 1000;
		tv->tv_usec = (ms % 1000) * 1000;
		return 1;
	}
	case CLGET_XID:
		*(uint32_t *)info = __atomic_load_n(&ids->xid, __ATOMIC_RELAXED);
		return 1;
	case CLSET_XID:
		/* the next call uses this XID (libtirpc's meaning) */
		__atomic_store_n(&ids->xid, *(uint32_t *)info - 1, __ATOMIC_RELAXED);
		return 1;
	case CLGET_VERS:
		*(uint32_t *)info = (uint32_t)ids->vers;
		return 1;
	case CLSET_VERS:
		ids->vers = *(uint32_t *)info;
		return 1;
	case CLGET_PROG:
		*(uint32_t *)info = (uint32_t)ids->prog;
		return 1;
	case CLSET_PROG:
		ids->prog = *(uint32_t *)info;
		return 1;
	default:
		return 0;
	}
}
