/* SPDX-License-Identifier: BSD-2-Clause */
/* Built against an installed librpcrdma with pkg-config (librpcrdma-rpc), from the one
 * umbrella header: a server for a small program on an ephemeral port over the software
 * fabric given as argv[1] (default tcp), and a client in the same process that calls it
 * over RDMA: NULLPROC, then procedure 1 echoing a string. Exit 1 if anything fails. */
#include <stdio.h>
#include <string.h>

#include <rpcrdma/rpcrdma.h>

#define PROG 0x20049001u
#define VERS 1u
/* libtirpc declares xdr_void() without parameters */
#define XDR_VOID ((xdrproc_t)(void (*)(void))xdr_void)

static void dispatch(struct svc_req *rq, SVCXPRT *xprt)
{
	char *s = NULL;

	switch (rq->rq_proc) {
	case NULLPROC:
		svc_sendreply(xprt, XDR_VOID, NULL);
		return;
	case 1:
		if (!svc_getargs(xprt, (xdrproc_t)xdr_wrapstring, (char *)&s)) {
			svcerr_decode(xprt);
			return;
		}
		svc_sendreply(xprt, (xdrproc_t)xdr_wrapstring, (char *)&s);
		svc_freeargs(xprt, (xdrproc_t)xdr_wrapstring, (char *)&s);
		return;
	default:
		svcerr_noproc(xprt);
	}
}

int main(int argc, char **argv)
{
	struct rpcrdma_svc_opts so = { .provider = argc > 1 ? argv[1] : "tcp",
				       .host = "127.0.0.1", .port = RPCRDMA_PORT_ANY,
				       .dispatch_inline = 1 };
	struct rpcrdma_clnt_opts co = { .provider = so.provider };
	struct timeval tv = { 10, 0 };
	char *in = "over RDMA, from an installed library", *out = NULL;
	enum clnt_stat st;
	SVCXPRT *l;
	CLIENT *cl;
	int ok;

	l = svc_rdma_create(&so);
	if (!l || !svc_register(l, PROG, VERS, dispatch, 0)) {
		printf("server: cannot listen or register\n");
		return 1;
	}
	co.port = svc_rdma_port(l);
	cl = clnt_rdma_create("127.0.0.1", PROG, VERS, &co);
	if (!cl) {
		clnt_pcreateerror("clnt_rdma_create");
		return 1;
	}
	st = clnt_call(cl, NULLPROC, XDR_VOID, NULL, XDR_VOID, NULL, tv);
	ok = st == RPC_SUCCESS;
	if (ok)
		st = clnt_call(cl, 1, (xdrproc_t)xdr_wrapstring, (char *)&in,
			       (xdrproc_t)xdr_wrapstring, (char *)&out, tv);
	ok = ok && st == RPC_SUCCESS && out && !strcmp(in, out);
	printf("rpc over %s: %s%s%s\n", so.provider, ok ? "echoed \"" : clnt_sperrno(st),
	       ok ? out : "", ok ? "\"" : "");
	if (out)
		clnt_freeres(cl, (xdrproc_t)xdr_wrapstring, (char *)&out);
	auth_destroy(cl->cl_auth);
	clnt_destroy(cl);
	svc_unregister(PROG, VERS);
	svc_destroy(l);
	return ok ? 0 : 1;
}
