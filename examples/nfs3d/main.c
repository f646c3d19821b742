/* SPDX-License-Identifier: BSD-2-Clause */
/* nfs3d: an NFS version 3 server (RFC 1813) of one directory, over RPC-over-RDMA (RFC
 * 5666, with the NFSv3 binding of RFC 8267) on any provider and over ONC RPC/TCP, with
 * MOUNT v3 over TCP. The Linux kernel's client mounts it with proto=rdma or proto=tcp.
 *
 *   nfs3d [-o OPTIONS] [--provider P] [--listen ADDR:PORT] [--mount-port N]
 *         [--tcp-port N] [--threads N] [--state-dir D] [-v] DIR [CLIENT[(OPTIONS)]...]
 *
 * Each call runs as its caller (cred.c), under the export options of exports(5) with
 * knfsd's defaults (exports.c); handles carry a keyed MAC (fh.c). nfs3d(8) is the
 * manual. Needs root: CAP_DAC_READ_SEARCH for open_by_handle_at(2), CAP_SETUID and
 * CAP_SETGID to take each caller's identity. */
#include "nfs3d.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <netinet/in.h>
#include <rpc/rpcb_clnt.h>

struct nfs3d_export ex;

/* ---- setup ---- */

struct opts {
	const char *provider;
	char host[256];             /* "": every address */
	uint32_t port;              /* RDMA */
	uint32_t mount_port, tcp_port;
	int threads;
	const char *dir;
	const char *state_dir;
	char **clients;
	int nclients;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nfs3d [-o OPTIONS] [--provider P] [--listen ADDR:PORT] [--mount-port N]\n"
		"             [--tcp-port N] [--threads N] [--state-dir D] [-v] DIR [CLIENT[(OPTIONS)]...]\n"
		"Serves DIR over NFSv3: over RPC-over-RDMA (RFC 5666/8267) and ONC RPC/TCP, with\n"
		"MOUNT v3 over TCP. Each call runs as its caller's AUTH_SYS identity.\n"
		"  -o OPTIONS      export options, exports(5): ro|rw, root_squash|no_root_squash,\n"
		"                  all_squash, anonuid=N, anongid=N, secure|insecure\n"
		"                  (default: rw,root_squash,secure,anonuid=65534,anongid=65534)\n"
		"  CLIENT          who may mount and call, as in exports(5): a host name or address,\n"
		"                  ADDR/BITS, or *; CLIENT(OPTIONS) adds options for it (default: *)\n"
		"  --provider P    tcp, shm or verbs (default: $RPCRDMA_PROVIDER, else tcp)\n"
		"  --listen A:P    RDMA address and port (default: every address, port 20049);\n"
		"                  the TCP ports listen on the same address; port 0: any\n"
		"  --mount-port N  MOUNT v3 over TCP (default 0: any)\n"
		"  --tcp-port N    NFSv3 over TCP (default 0: any)\n"
		"  --threads N     RDMA dispatch threads, also for one connection (default 8)\n"
		"  --state-dir D   where the file handle key is kept (default /var/lib/nfs3d)\n"
		"  -v              a line per call on stderr\n"
		"Needs root (CAP_DAC_READ_SEARCH, CAP_SETUID, CAP_SETGID). Prints\n"
		"\"nfs3d: DIR rdma=P tcp=P mount=P provider=P\" when it serves. See nfs3d(8).\n");
}

static int parse_port(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (!*s || *end || v > 65535)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* ADDR:PORT, [ADDR6]:PORT or :PORT */
static int parse_listen(const char *s, struct opts *o)
{
	const char *colon = strrchr(s, ':');
	size_t hl;

	if (!colon || parse_port(colon + 1, &o->port) < 0)
		return -1;
	hl = (size_t)(colon - s);
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		s++;
		hl -= 2;
	}
	if (hl >= sizeof(o->host))
		return -1;
	memcpy(o->host, s, hl);
	o->host[hl] = '\0';
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->port = 20049;
	o->threads = 8;
	o->state_dir = "/var/lib/nfs3d";
	o->clients = calloc((size_t)argc, sizeof(*o->clients));
	nfs3d_opts_default(&ex.defaults);
	if (!o->clients)
		return -1;
	for (i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(argv[i], "-v")) {
			ex.verbose = 1;
		} else if (!strcmp(argv[i], "-o") && v && nfs3d_parse_opts(v, &ex.defaults) == 0) {
			i++;
		} else if (!strcmp(argv[i], "--state-dir") && v) {
			o->state_dir = v;
			i++;
		} else if (!strcmp(argv[i], "--provider") && v) {
			o->provider = v;
			i++;
		} else if (!strcmp(argv[i], "--listen") && v && parse_listen(v, o) == 0) {
			i++;
		} else if (!strcmp(argv[i], "--mount-port") && v && parse_port(v, &o->mount_port) == 0) {
			i++;
		} else if (!strcmp(argv[i], "--tcp-port") && v && parse_port(v, &o->tcp_port) == 0) {
			i++;
		} else if (!strcmp(argv[i], "--threads") && v && atoi(v) > 0 && atoi(v) <= 64) {
			o->threads = atoi(v);
			i++;
		} else if (argv[i][0] != '-' && !o->dir) {
			o->dir = argv[i];
		} else if (argv[i][0] != '-') {
			o->clients[o->nclients++] = argv[i];   /* after -o: their options start from it */
		} else {
			fprintf(stderr, "nfs3d: bad argument '%s'\n", argv[i]);
			return -1;
		}
	}
	if (!o->dir) {
		fprintf(stderr, "nfs3d: no directory to serve\n");
		return -1;
	}
	return 0;
}

/* A TCP listener on the given address (every one if empty; port 0: any) served by the
 * library's runtime, as RDMA is: rpcrdma_svc_run()'s workers, lanes (calls of one
 * connection at once), the duplicate request cache across reconnections, and no client
 * (silent, slow to read its replies) holding a worker or another client. */
static SVCXPRT *tcp_listener(const char *host, uint32_t port, uint32_t lanes, uint16_t *bound)
{
	struct rpcrdma_svc_opts so;
	SVCXPRT *x;

	memset(&so, 0, sizeof(so));
	so.host = *host ? host : NULL;
	so.port = port ? port : RPCRDMA_PORT_ANY;
	so.conn_parallel = lanes;
	x = svc_rdma_tcp_create(&so);
	if (!x) {
		fprintf(stderr, "nfs3d: TCP port %u on %s: %s\n", port, *host ? host : "every address",
			rpcrdma_create_errtext());
		return NULL;
	}
	*bound = svc_rdma_port(x);
	return x;
}

static int rpcb_one(rpcprog_t prog, rpcvers_t vers, const char *netid, struct netbuf *addr)
{
	struct netconfig *nc = getnetconfigent(netid);
	int ok = nc && rpcb_set(prog, vers, nc, addr);

	if (nc)
		freenetconfigent(nc);
	return ok;
}

/* rpcbind, when it runs, learns the TCP services: netid tcp6 for an IPv6 listener (and
 * tcp with 0.0.0.0 as well when it takes IPv4 too), tcp for an IPv4 one. rpcb_set()
 * rather than pmap_set(), which is IPv4 only. (The RDMA ones are registered by
 * svc_register() on the RDMA listener, under netid rdma/rdma6.) */
static void tcp_register(rpcprog_t prog, rpcvers_t vers, SVCXPRT *x)
{
	struct sockaddr_storage *ss = (struct sockaddr_storage *)x->xp_ltaddr.buf;
	struct sockaddr_in any4 = { .sin_family = AF_INET };
	struct netbuf nb4 = { sizeof(any4), sizeof(any4), &any4 };
	int ok;

	if (ss->ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		ok = rpcb_one(prog, vers, "tcp6", &x->xp_ltaddr);
		any4.sin_port = s6->sin6_port;
		if (ok && IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))
			ok = rpcb_one(prog, vers, "tcp", &nb4);
	} else {
		ok = rpcb_one(prog, vers, "tcp", &x->xp_ltaddr);
	}
	if (!ok)
		fprintf(stderr, "nfs3d: rpcbind took no registration of program %lu version %lu "
			"over TCP (not running?): clients must name the port\n",
			(unsigned long)prog, (unsigned long)vers);
}

/* Every netid of prog/vers in rpcbind: tcp, tcp6, rdma, rdma6. */
static void rpcb_drop(rpcprog_t prog, rpcvers_t vers)
{
	rpcb_unset(prog, vers, NULL);
}

static uint16_t g_tcp_port, g_mount_port;

static SVCXPRT *g_rdma;

/* What the calls did, on stopping: each procedure's mean time in nfs3d, and whether the
 * RDMA clients' replies went with Send With Invalidate (RFC 8797 §3.2). */
static void report_totals(void)
{
	struct rpcrdma_eng_stats st;

	nfs3d_times_print();
	if (g_rdma && rpcrdma_svc_totals(g_rdma, &st) == 0)
		fprintf(stderr, "nfs3d: over RDMA: %llu calls, %llu replies, %llu of them with "
			"Send With Invalidate\n", (unsigned long long)st.calls,
			(unsigned long long)st.replies, (unsigned long long)st.remote_inv);
}

static void *signals(void *arg)
{
	sigset_t *set = arg;
	int sig;

	sigwait(set, &sig);
	report_totals();
	rpcb_drop(NFS_PROGRAM, NFS_V3);
	rpcb_drop(MOUNT_PROGRAM, MOUNT_V3);
	exit(0);   /* the library takes its own RDMA registrations back at exit too */
	return NULL;
}

static SVCXPRT *rdma_listener(const struct opts *o)
{
	struct rpcrdma_svc_opts so;
	SVCXPRT *x;

	memset(&so, 0, sizeof(so));
	so.provider = o->provider;
	so.host = *o->host ? o->host : NULL;
	so.port = o->port ? o->port : RPCRDMA_PORT_ANY;
	so.max_credits = 128;      /* what Linux's client asks for */
	so.workers_only = 1;       /* only rpcrdma_svc_run()'s workers serve it */
	so.conn_parallel = (uint32_t)o->threads;   /* Linux's client: one connection a mount */
	so.lend_args = 1;          /* a WRITE's data is written from where its chunk landed */
	x = svc_rdma_create(&so);
	if (!x)
		fprintf(stderr, "nfs3d: RDMA: %s\n", rpcrdma_create_errtext());
	return x;
}

int main(int argc, char **argv)
{
	struct opts o;
	SVCXPRT *rdma, *tcp, *mnt;
	pthread_t th;
	static sigset_t set;

	if (parse_args(argc, argv, &o) < 0) {
		usage(stderr);
		return 2;
	}
	for (int i = 0; i < o.nclients; i++)
		if (nfs3d_add_client(o.clients[i]) < 0)
			return 2;
	if (o.nclients == 0)
		fprintf(stderr, "nfs3d: no client list: every host may mount %s (as exportfs's "
			"'*'); name them after DIR to limit it\n", o.dir);
	/* modes are the client's (it applied its umask), as knfsd takes them */
	umask(0);
	if (nfs3d_export_open(o.dir) < 0 || nfs3d_key_load(o.state_dir) < 0 ||
	    nfs3d_fh_cache_init(4096) < 0)
		return 1;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* after the mask: SIGINT and SIGTERM go to the signal thread only */
	if (nfs3d_pool_start(o.threads) < 0) {
		fprintf(stderr, "nfs3d: cannot start threads\n");
		return 1;
	}
	rpcrdma_ulb_register(rpcrdma_ulb_nfs3());
	rdma = g_rdma = rdma_listener(&o);
	tcp = rdma ? tcp_listener(o.host, o.tcp_port, (uint32_t)o.threads, &g_tcp_port) : NULL;
	mnt = tcp ? tcp_listener(o.host, o.mount_port, 1, &g_mount_port) : NULL;
	if (!mnt)
		return 1;
	/* what a killed nfs3d left in rpcbind goes first */
	rpcb_drop(NFS_PROGRAM, NFS_V3);
	rpcb_drop(MOUNT_PROGRAM, MOUNT_V3);
	if (!svc_register(rdma, NFS_PROGRAM, NFS_V3, nfs3d_dispatch, IPPROTO_TCP) ||
	    !svc_register(tcp, NFS_PROGRAM, NFS_V3, nfs3d_dispatch, 0) ||
	    !svc_register(mnt, MOUNT_PROGRAM, MOUNT_V3, mount_program_3, 0)) {
		fprintf(stderr, "nfs3d: svc_register failed\n");
		return 1;
	}
	tcp_register(NFS_PROGRAM, NFS_V3, tcp);
	tcp_register(MOUNT_PROGRAM, MOUNT_V3, mnt);
	if (pthread_create(&th, NULL, signals, &set)) {
		fprintf(stderr, "nfs3d: cannot start threads\n");
		return 1;
	}
	printf("nfs3d: %s rdma=%u tcp=%u mount=%u provider=%s\n", ex.path, svc_rdma_port(rdma),
	       g_tcp_port, g_mount_port,
	       o.provider ? o.provider : getenv("RPCRDMA_PROVIDER") ? getenv("RPCRDMA_PROVIDER") : "tcp");
	fflush(stdout);
	rpcrdma_svc_run(o.threads);   /* RDMA, NFS over TCP and MOUNT alike */
	return 0;
}
