/* SPDX-License-Identifier: BSD-2-Clause */
/* The RPC layer's test server: RT_PROG over RDMA (libfabric tcp with CONF_RDMA answered,
 * shm without) and over plain TCP, dispatched by svc_run() or by rpcrdma_svc_run() workers.
 * inline: RDMA requests dispatched on the listeners' progress threads, TCP by svc_run().
 * Usage: rt_server svc_run|workers|inline [nobinding]. Prints "listening RDMA_TCP SHM TCP". */
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef RT_HAVE_GSS
#include <rpc/rpcsec_gss.h>
#endif

#include "rt_auth.h"
#include "rt_common.h"
#include "test_host.h"

void rt_prog_1(struct svc_req *rqstp, SVCXPRT *transp);

bool_t rt_null_1_svc(void *argp, void *result, struct svc_req *rq)
{
	(void)argp;
	(void)result;
	(void)rq;
	return TRUE;
}

/* The argument must be the seed's pattern; the result is the data back, or reply_len
 * bytes of pattern seed + 1. */
bool_t rt_echo_1_svc(rt_echo_args *a, rt_data *res, struct svc_req *rq)
{
	if (!rt_check(a->data.rt_data_val, a->seed, a->data.rt_data_len)) {
		svcerr_systemerr(rq->rq_xprt);
		return FALSE;
	}
	if (a->reply_len == ~0u) {
		res->rt_data_len = a->data.rt_data_len;
		res->rt_data_val = malloc(res->rt_data_len + 1);
		if (res->rt_data_len)
			memcpy(res->rt_data_val, a->data.rt_data_val, res->rt_data_len);
	} else {
		res->rt_data_len = a->reply_len;
		res->rt_data_val = malloc(a->reply_len + 1);
		rt_fill(res->rt_data_val, a->seed + 1, a->reply_len);
	}
	return TRUE;
}

bool_t rt_whoami_1_svc(void *argp, rt_whoami_res *res, struct svc_req *rq)
{
	struct netbuf *nb = svc_getrpccaller(rq->rq_xprt);

	(void)argp;
	memset(res, 0, sizeof(*res));
	res->flavor = (int)rq->rq_cred.oa_flavor;
	res->machine = strdup("");
	if (rq->rq_cred.oa_flavor == AUTH_SYS) {
		struct authunix_parms *p = (struct authunix_parms *)rq->rq_clntcred;

		res->uid = p->aup_uid;
		res->gid = p->aup_gid;
		free(res->machine);
		res->machine = strdup(p->aup_machname);
	}
	res->caller_family = nb && nb->len ? ((struct sockaddr *)nb->buf)->sa_family : 0;
	return TRUE;
}

bool_t rt_syserr_1_svc(void *argp, void *result, struct svc_req *rq)
{
	(void)argp;
	(void)result;
	svcerr_systemerr(rq->rq_xprt);
	return FALSE;
}

/* A result longer than its XDR bound: svc_sendreply() cannot encode it. */
bool_t rt_badreply_1_svc(u_int *len, rt_short *res, struct svc_req *rq)
{
	u_int n = *len < 4096 ? *len : 4096;

	(void)rq;
	*res = malloc(n + 1);
	if (!*res)
		return FALSE;
	memset(*res, 'x', n);
	(*res)[n] = 0;
	return TRUE;
}

bool_t rt_garbage_1_svc(rt_echo_args *a, void *result, struct svc_req *rq)
{
	(void)a;
	(void)result;
	(void)rq;
	return TRUE;
}

/* Options after the mode: nobinding (no DDP binding), norrc (never send read chunks in
 * replies, as an RFC 8166 server), ports=RDMA_TCP,SHM (fixed ports, for restarts), xids
 * (print the XID of each RT_SLEEP call as it is dispatched), nodrc (no duplicate request
 * cache), parallel (with workers: several calls of a connection at once, conn_parallel 4). */
static struct srv_opts {
	int workers, inline_dispatch, nobinding, norrc, xids, rpcbind, rdmaonly, nodrc;
	uint32_t parallel;
	unsigned rport, sport;
} so;

bool_t rt_sleep_1_svc(u_int *ms, void *result, struct svc_req *rq)
{
	struct timespec ts = { *ms / 1000, (long)(*ms % 1000) * 1000000 };

	(void)result;
	if (so.xids) {
		printf("xid %08x sleep %u\n", rpcrdma_svc_getxid(rq->rq_xprt), *ms);
		fflush(stdout);
	}
	nanosleep(&ts, NULL);
	return TRUE;
}

bool_t rt_noreply_1_svc(void *argp, void *result, struct svc_req *rq)
{
	(void)argp;
	(void)result;
	(void)rq;
	return FALSE;
}

/* The log of RT_LOG calls, in the order the server took them (one client at a time). */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int *log_seqs;
static unsigned int log_n, log_cap;

static bool_t log_seq(const rt_log_args *a)
{
	pthread_mutex_lock(&log_lock);
	if (log_n == log_cap) {
		unsigned int *n = realloc(log_seqs, sizeof(*n) * (log_cap * 2 + 64));

		if (n) {
			log_seqs = n;
			log_cap = log_cap * 2 + 64;
		}
	}
	if (log_n < log_cap)
		log_seqs[log_n++] = a->seq;
	pthread_mutex_unlock(&log_lock);
	return TRUE;
}

bool_t rt_log_1_svc(rt_log_args *a, void *result, struct svc_req *rq)
{
	(void)result;
	(void)rq;
	return log_seq(a);
}

bool_t rt_log_noreply_1_svc(rt_log_args *a, void *result, struct svc_req *rq)
{
	(void)result;
	(void)rq;
	log_seq(a);
	return FALSE;   /* no reply: batching */
}

bool_t rt_getlog_1_svc(void *argp, rt_seqs *res, struct svc_req *rq)
{
	(void)argp;
	(void)rq;
	pthread_mutex_lock(&log_lock);
	res->rt_seqs_len = log_n;
	res->rt_seqs_val = malloc(sizeof(unsigned int) * (log_n + 1));
	if (log_n)
		memcpy(res->rt_seqs_val, log_seqs, sizeof(unsigned int) * log_n);
	log_n = 0;
	pthread_mutex_unlock(&log_lock);
	return TRUE;
}

/* A call that must run once however often it is sent: the counter's value after it. */
static unsigned int bump_count;

bool_t rt_bump_1_svc(u_int *ms, u_int *res, struct svc_req *rq)
{
	struct timespec ts = { *ms / 1000, (long)(*ms % 1000) * 1000000 };

	(void)rq;
	nanosleep(&ts, NULL);
	*res = __atomic_add_fetch(&bump_count, 1, __ATOMIC_SEQ_CST);
	return TRUE;
}

static SVCXPRT *rdma_listeners[2];

bool_t rt_drc_1_svc(void *argp, rt_drc_res *res, struct svc_req *rq)
{
	struct rpcrdma_svc_drc_stats st;
	int i;

	(void)argp;
	(void)rq;
	memset(res, 0, sizeof(*res));
	for (i = 0; i < 2; i++) {
		if (!rdma_listeners[i] || rpcrdma_svc_drc_stats(rdma_listeners[i], &st))
			continue;
		res->cache = 1;
		res->replayed += (u_int)st.replayed;
		res->waited += (u_int)st.waited;
		res->kept += (u_int)st.kept;
		res->too_long += (u_int)st.too_long;
	}
	return TRUE;
}

/* Results are overwritten before they are freed: a transport that still read them after
 * svc_sendreply() returned (an RDMA Write from the dispatcher's memory) would deliver the
 * poison, and the client's pattern check fails. */
int rt_prog_1_freeresult(SVCXPRT *transp, xdrproc_t xdr_result, caddr_t result)
{
	rt_data *d = (rt_data *)result;

	(void)transp;
	if (xdr_result == (xdrproc_t)xdr_rt_data && d->rt_data_val)
		memset(d->rt_data_val, 0xee, d->rt_data_len);
	xdr_free(xdr_result, result);
	return 1;
}


static void parse(int argc, char **argv)
{
	int i;

	so.workers = argc > 1 && !strcmp(argv[1], "workers");
	so.inline_dispatch = argc > 1 && !strcmp(argv[1], "inline");
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "nobinding"))
			so.nobinding = 1;
		else if (!strcmp(argv[i], "norrc"))
			so.norrc = 1;
		else if (!strcmp(argv[i], "xids"))
			so.xids = 1;
		else if (!strcmp(argv[i], "rpcbind"))
			so.rpcbind = 1;
		else if (!strcmp(argv[i], "rdmaonly"))
			so.rdmaonly = 1;
		else if (!strcmp(argv[i], "nodrc"))
			so.nodrc = 1;
		else if (!strcmp(argv[i], "parallel"))   /* workers: 4 lanes a connection */
			so.parallel = 4;
		else if (!strncmp(argv[i], "ports=", 6))
			sscanf(argv[i] + 6, "%u,%u", &so.rport, &so.sport);
	}
}

/* rpcbind mode: a line on stdin (or its end) unregisters the program and exits. */
static void *quit_on_stdin(void *arg)
{
	char line[32];

	(void)arg;
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	svc_unregister(RT_PROG, RT_V1);
	printf("unregistered\n");
	fflush(stdout);
	exit(0);
	return NULL;
}

/* As rpcgen's main does: clear old registrations, then register with IPPROTO_TCP. The
 * RDMA listener has no host (every address, both families) and any port; the program
 * is found through rpcbind under netids rdma and rdma6, the TCP one under tcp. */
static int main_rpcbind(void)
{
	struct rpcrdma_svc_opts o;
	SVCXPRT *rt, *tcp;
	pthread_t th;

	pmap_unset(RT_PROG, RT_V1);
	memset(&o, 0, sizeof(o));
	o.port = RPCRDMA_PORT_ANY;
	rt = svc_rdma_create(&o);
	tcp = so.rdmaonly ? NULL : svctcp_create(RPC_ANYSOCK, 0, 0);
	if (!rt || (!tcp && !so.rdmaonly)) {
		fprintf(stderr, "cannot create transports\n");
		return 1;
	}
	if (!svc_register(rt, RT_PROG, RT_V1, rt_prog_1, IPPROTO_TCP) ||
	    (tcp && !svc_register(tcp, RT_PROG, RT_V1, rt_prog_1, IPPROTO_TCP))) {
		fprintf(stderr, "unable to register (RT_PROG, RT_V1, tcp)\n");
		return 1;
	}
	printf("listening %u 0 %u\n", svc_rdma_port(rt), tcp ? tcp->xp_port : 0);
	fflush(stdout);
	pthread_create(&th, NULL, quit_on_stdin, NULL);
	svc_run();
	return 1;
}

int main(int argc, char **argv)
{
	struct rpcrdma_svc_opts o;
	SVCXPRT *rt, *rs, *tcp;

	parse(argc, argv);
	/* the first RDMA listener's provider: $RPCRDMA_PROVIDER (verbs in the VM suite) */
	if (getenv("RPCRDMA_PROVIDER") && test_prov_absent(getenv("RPCRDMA_PROVIDER")))
		return 77;
	svc_auth_reg(RT_XOR_FLAVOR, rt_xor_handler);
#ifdef RT_HAVE_GSS
	/* RPCSEC_GSS (test_gss.sh): the service's key is in $KRB5_KTNAME */
	if (getenv("RT_GSS_SERVICE") &&
	    !rpc_gss_set_svc_name(getenv("RT_GSS_SERVICE"), "kerberos_v5", 0, RT_PROG, RT_V1)) {
		fprintf(stderr, "rpc_gss_set_svc_name(%s) failed\n", getenv("RT_GSS_SERVICE"));
		return 1;
	}
#endif
	if (so.rpcbind) {
		rpcrdma_ulb_register(&rt_ulb);
		return main_rpcbind();
	}
	if (!so.nobinding)
		rpcrdma_ulb_register(&rt_ulb);
	memset(&o, 0, sizeof(o));
	o.port = so.rport ? (uint32_t)so.rport : RPCRDMA_PORT_ANY;
	o.host = test_host();
	o.reply_read_chunks = so.norrc ? -1 : 0;
	o.dispatch_inline = so.inline_dispatch;
	/* arguments lent from the call where workers or the progress thread dispatch
	 * (rt_echo_1_svc checks every byte); svc_run() mode decodes copies */
	o.lend_args = so.workers || so.inline_dispatch;
	o.drc_entries = so.nodrc ? -1 : 0;
	o.conn_parallel = so.parallel;
	rt = svc_rdma_create(&o);
	o.provider = "shm";
	o.no_ccp = 1;
	o.port = so.sport ? (uint32_t)so.sport : RPCRDMA_PORT_ANY;
	rs = svc_rdma_create(&o);
	/* workers: TCP is served by the library's runtime as RDMA is (svc_rdma_tcp_create:
	 * the same workers, lanes and duplicate request cache); svc_run mode keeps
	 * libtirpc's own TCP transport, the reference the RDMA outcomes are compared with */
	if (so.workers) {
		o.port = 0;
		o.host = "0.0.0.0";   /* every IPv4 address, as svctcp_create() binds: rt_client dials 127.0.0.1 */
		tcp = svc_rdma_tcp_create(&o);
	} else {
		tcp = svctcp_create(RPC_ANYSOCK, 0, 0);
	}
	if (!rt || !rs || !tcp) {
		fprintf(stderr, "cannot create transports (%p %p %p)\n", (void *)rt, (void *)rs,
			(void *)tcp);
		return 1;
	}
	rdma_listeners[0] = rt;
	rdma_listeners[1] = rs;
	if (!svc_register(rt, RT_PROG, RT_V1, rt_prog_1, 0) ||
	    !svc_register(rs, RT_PROG, RT_V1, rt_prog_1, 0) ||
	    !svc_register(tcp, RT_PROG, RT_V1, rt_prog_1, 0)) {
		fprintf(stderr, "svc_register failed\n");
		return 1;
	}
	printf("listening %u %u %u\n", svc_rdma_port(rt), svc_rdma_port(rs), tcp->xp_port);
	fflush(stdout);
	if (so.workers) {
		rpcrdma_svc_run(4);   /* RDMA and TCP alike */
	} else {
		svc_run();
	}
	return 0;
}
