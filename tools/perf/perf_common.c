/* SPDX-License-Identifier: BSD-2-Clause */
/* The built-in service (PERF_PROG) and what serve, ping and perf share. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "perf_common.h"

void perf_prog_1(struct svc_req *rqstp, SVCXPRT *transp);

/* ---- the service ---- */

static char *pattern;   /* PS_MAX bytes of ps_byte(), made once */
static uint32_t pattern_len;

static int ensure_pattern(uint32_t n)
{
	uint32_t i;

	if (n <= pattern_len)
		return 0;
	free(pattern);
	pattern = malloc(n);
	if (!pattern) {
		pattern_len = 0;
		return -1;
	}
	for (i = 0; i < n; i++)
		pattern[i] = (char)ps_byte(i);
	pattern_len = n;
	return 0;
}

uint32_t ps_checksum(const char *p, uint32_t n)
{
	const uint8_t *b = (const uint8_t *)p;
	uint32_t a = 1, s = 0, i;

	/* Adler-style: cheap, and position-sensitive */
	for (i = 0; i < n; i++) {
		a = (a + b[i]) % 65521u;
		s = (s + a) % 65521u;
	}
	return s << 16 | a;
}

bool_t ps_null_1_svc(void *a, void *r, struct svc_req *rq)
{
	(void)a;
	(void)r;
	(void)rq;
	return TRUE;
}

bool_t ps_echo_1_svc(ps_data *a, ps_data *r, struct svc_req *rq)
{
	(void)rq;
	r->ps_data_len = a->ps_data_len;
	r->ps_data_val = malloc(a->ps_data_len + 1);
	if (!r->ps_data_val)
		return FALSE;
	if (a->ps_data_len)
		memcpy(r->ps_data_val, a->ps_data_val, a->ps_data_len);
	return TRUE;
}

/* The result points into the pattern: nothing is copied here (freeresult leaves it). */
bool_t ps_read_1_svc(ps_read_args *a, ps_data *r, struct svc_req *rq)
{
	(void)rq;
	if (a->count > PS_MAX || ensure_pattern(a->count))
		return FALSE;
	r->ps_data_len = a->count;
	r->ps_data_val = pattern;
	return TRUE;
}

bool_t ps_write_1_svc(ps_write_args *a, u_int *r, struct svc_req *rq)
{
	(void)rq;
	*r = a->check ? ps_checksum(a->data.ps_data_val, a->data.ps_data_len) : a->data.ps_data_len;
	return TRUE;
}

/* The backchannel (RFC 8167): count echoes of len pattern bytes to the caller's
 * PERF_CB_PROG over its own connection, each verified; the result is how many came
 * back whole. Backward calls wait for their replies, so this runs on a dispatching
 * thread, never the progress thread (`serve --callback`). */
int ps_callbacks_enabled;
int ps_drc_off;
int ps_prereg;

bool_t ps_callback_1_svc(ps_callback_args *a, u_int *r, struct svc_req *rq)
{
	CLIENT *cb;
	u_int i;

	*r = 0;
	/* rpcgen's dispatcher sends nothing for FALSE: the refusal is answered here, at once,
	 * or the caller would wait out its timeout */
	if (!ps_callbacks_enabled || a->len > PS_CB_MAX || ensure_pattern(a->len) ||
	    !(cb = svc_rdma_bc_create(rq->rq_xprt, PERF_CB_PROG, PERF_CB_V1))) {
		svcerr_systemerr(rq->rq_xprt);
		return FALSE;
	}
	for (i = 0; i < a->count; i++) {
		ps_data d = { a->len, pattern }, res = { 0, NULL };

		if (ps_cb_echo_1(&d, &res, cb) != RPC_SUCCESS)
			break;
		*r += res.ps_data_len == a->len && (!a->len || !memcmp(res.ps_data_val, pattern, a->len));
		clnt_freeres(cb, (xdrproc_t)xdr_ps_data, (caddr_t)&res);
	}
	auth_destroy(cb->cl_auth);
	clnt_destroy(cb);
	return TRUE;
}

/* The client's side: the server's backward echo comes back as it came. */
bool_t ps_cb_echo_1_svc(ps_data *a, ps_data *r, struct svc_req *rq)
{
	return ps_echo_1_svc(a, r, rq);
}

int perf_cb_prog_1_freeresult(SVCXPRT *transp, xdrproc_t xres, caddr_t res)
{
	(void)transp;
	xdr_free(xres, res);
	return 1;
}

int perf_prog_1_freeresult(SVCXPRT *transp, xdrproc_t xres, caddr_t res)
{
	(void)transp;
	if (xres == (xdrproc_t)xdr_ps_data && ((ps_data *)res)->ps_data_val == pattern)
		return 1;   /* a READ result: the pattern stays */
	xdr_free(xres, res);
	return 1;
}

/* ---- the binding: READ's result and WRITE's data move by RDMA ---- */

static bool_t xdr_ps_data_ddp(XDR *x, ps_data *d)
{
	return xdr_rdma_ddp_bytes(x, &d->ps_data_val, &d->ps_data_len, PS_MAX);
}

static bool_t xdr_ps_write_args_ddp(XDR *x, ps_write_args *a)
{
	return xdr_u_int(x, &a->check) && xdr_ps_data_ddp(x, &a->data);
}

static uint32_t read_size(const void *args)
{
	return ((const ps_read_args *)args)->count;
}

/* Both replies are short once READ's data is in its write chunk: no reply chunk. */
static const struct rpcrdma_ulb_proc ps_procs[] = {
	{ PS_READ, NULL, (xdrproc_t)xdr_ps_data_ddp, 1024, 1, 0, read_size, NULL, NULL },
	{ PS_WRITE, (xdrproc_t)xdr_ps_write_args_ddp, NULL, 1024, 0, 0, NULL, NULL, NULL },
};

static const struct rpcrdma_ulb ps_ulb = { PERF_PROG, PERF_V1, ps_procs, 2 };

void ps_binding_register(void)
{
	static int done;

	if (!done)
		rpcrdma_ulb_register(&ps_ulb);
	done = 1;
}

/* ---- addresses ---- */

/* The address text split: host (cap bytes; "" when the text has none, ":PORT") and the
 * port text (NULL when none given). -1 after a message. */
static int split_addr(const char *cmd, const char *s, char *host, size_t cap,
		      const char **ptext)
{
	const char *colon, *end, *h = s;
	size_t n;

	*ptext = NULL;
	if (s[0] == '[') {
		end = strchr(s, ']');
		if (!end || (end[1] && end[1] != ':')) {
			fprintf(stderr, "rpcrdma %s: invalid address '%s' (IPv6: [ADDR]:PORT)\n",
				cmd, s);
			return -1;
		}
		h = s + 1;
		n = (size_t)(end - h);
		if (end[1] == ':')
			*ptext = end + 2;
	} else {
		colon = strrchr(s, ':');
		if (colon && strchr(s, ':') == colon) {   /* one colon: HOST:PORT or :PORT */
			n = (size_t)(colon - s);
			*ptext = colon + 1;
		} else {
			n = strlen(s);                        /* none, or a bare IPv6 address */
		}
	}
	if (n >= cap || (n == 0 && s[0] == '[')) {
		fprintf(stderr, "rpcrdma %s: invalid address '%s'\n", cmd, s);
		return -1;
	}
	memcpy(host, h, n);
	host[n] = 0;
	return 0;
}

static int parse_port(const char *cmd, const char *ptext, uint64_t min, uint16_t *port)
{
	uint64_t v;

	if (arg_uint(cmd, "port", ptext, min, 65535, &v))
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int ps_parse_addr(const char *cmd, const char *s, char *host, size_t cap, uint16_t *port,
		  uint16_t def)
{
	const char *ptext;

	*port = def;
	if (!s || !*s) {
		fprintf(stderr, "rpcrdma %s: an address is needed (HOST[:PORT])\n", cmd);
		return -1;
	}
	if (split_addr(cmd, s, host, cap, &ptext))
		return -1;
	if (!host[0]) {
		fprintf(stderr, "rpcrdma %s: invalid address '%s': which host? (HOST[:PORT])\n",
			cmd, s);
		return -1;
	}
	if (!ptext)
		return 0;
	/* a client cannot connect to port 0: it is not "the default" either */
	if (parse_port(cmd, ptext, 1, port))
		return -1;
	return 1;
}

int ps_parse_listen(const char *cmd, const char *s, char *host, size_t cap, uint16_t *port)
{
	const char *ptext;

	if (!s || !*s) {
		fprintf(stderr, "rpcrdma %s: invalid --listen '': give HOST, HOST:PORT, :PORT or "
			"PORT\n", cmd);
		return -1;
	}
	/* a bare number is a port, as users mean it: no host is named 20500 */
	if (strspn(s, "0123456789") == strlen(s)) {
		host[0] = 0;
		return parse_port(cmd, s, 0, port);
	}
	if (split_addr(cmd, s, host, cap, &ptext))
		return -1;
	return ptext ? parse_port(cmd, ptext, 0, port) : 0;
}

/* ---- serving ---- */

static char serve_err[256];

const char *ps_serve_error(void)
{
	return serve_err;
}

static SVCXPRT *tcp_fail(int s, int port, const char *what)
{
	snprintf(serve_err, sizeof(serve_err), "ONC RPC/TCP port %d (--tcp): %s: %s", port, what,
		 strerror(errno));
	if (s >= 0)
		close(s);
	return NULL;
}

static SVCXPRT *tcp_listener(const char *host, int port)
{
	struct sockaddr_in sin;
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	socklen_t len = sizeof(sin);
	SVCXPRT *x;

	if (s < 0)
		return tcp_fail(s, port, "socket");
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	if (host && *host && inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		sin.sin_addr.s_addr = htonl(INADDR_ANY);
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&sin, sizeof(sin)))
		return tcp_fail(s, port, "bind");
	if (listen(s, 64) || getsockname(s, (struct sockaddr *)&sin, &len))
		return tcp_fail(s, port, "listen");
	x = svctcp_create(s, 0, 0);
	if (!x)
		return tcp_fail(s, port, "svctcp_create");
	return x;
}

SVCXPRT *ps_serve(const char *provider, const char *host, uint16_t port, int tcp_port,
		  int inline_dispatch, uint16_t *rdma_port, uint16_t *tcp_out, SVCXPRT **tcp_xprt)
{
	struct rpcrdma_svc_opts o;
	SVCXPRT *x, *t = NULL;

	ps_binding_register();
	memset(&o, 0, sizeof(o));
	o.provider = provider;
	o.host = host;
	o.port = port ? port : RPCRDMA_PORT_ANY;
	o.dispatch_inline = inline_dispatch;
	o.drc_entries = ps_drc_off ? -1 : 0;
	o.lend_args = 1;   /* WRITE's data is read where its chunk was pulled (rpcgen frees) */
	serve_err[0] = '\0';
	x = svc_rdma_create(&o);
	if (!x) {
		snprintf(serve_err, sizeof(serve_err), "%s", rpcrdma_create_errtext());
		return NULL;
	}
	if (!svc_register(x, PERF_PROG, PERF_V1, perf_prog_1, 0)) {
		snprintf(serve_err, sizeof(serve_err), "cannot register the program");
		return NULL;
	}
	if (ps_prereg && (ensure_pattern(PS_MAX) || rpcrdma_svc_mem_add(x, pattern, PS_MAX))) {
		snprintf(serve_err, sizeof(serve_err), "--prereg: cannot add %u bytes of long-lived "
			 "memory (locked memory: ulimit -l)", PS_MAX);
		return NULL;
	}
	*rdma_port = svc_rdma_port(x);
	if (tcp_port >= 0) {
		t = tcp_listener(host, tcp_port);
		if (!t)
			return NULL;
		if (!svc_register(t, PERF_PROG, PERF_V1, perf_prog_1, 0)) {
			snprintf(serve_err, sizeof(serve_err), "cannot register the program over "
				 "ONC RPC/TCP");
			return NULL;
		}
		*tcp_out = t->xp_port;
	}
	if (tcp_xprt)
		*tcp_xprt = t;
	return x;
}

void ps_explain_create_error(const char *cmd, const char *provider, const char *host,
			     uint16_t port, int json)
{
	const char *why = provider ? rpcrdma_create_errtext() : "";
	char text[512];

	if (why[0])
		snprintf(text, sizeof(text), "%s", why);
	else
		snprintf(text, sizeof(text), "%s port %u:%s", host, port, clnt_spcreateerror(""));
	if (!cli_log_said(text))   /* -v: the library's log said it already */
		fprintf(stderr, "rpcrdma %s: %s\n", cmd, text);
	if (json)
		cli_json_error(cmd, text);
}

void ps_raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

CLIENT *ps_client(const char *provider, const char *host, uint16_t port)
{
	struct rpcrdma_clnt_opts o;
	struct addrinfo hints, *ai;
	char ps[8];
	int sock = RPC_ANYSOCK;
	CLIENT *cl;

	ps_binding_register();
	if (provider) {
		memset(&o, 0, sizeof(o));
		o.provider = provider;
		o.port = port;
		return clnt_rdma_create(host, PERF_PROG, PERF_V1, &o);
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(ps, sizeof(ps), "%u", port);
	if (getaddrinfo(host, ps, &hints, &ai))
		return NULL;
	cl = clnttcp_create((struct sockaddr_in *)ai->ai_addr, PERF_PROG, PERF_V1, &sock, 0, 0);
	freeaddrinfo(ai);
	return cl;
}

/* ---- capture ---- */

static struct rpcrdma_pcap *ps_pcap;

int ps_pcap_start(const char *path, uint32_t snaplen)
{
	struct rpcrdma_pcap_opts o = { .snaplen = snaplen };
	int rc = rpcrdma_pcap_open(path, &o, &ps_pcap);

	if (rc) {
		fprintf(stderr, "rpcrdma: cannot write capture %s: %s\n", path, rpcrdma_strerror(rc));
		return -1;
	}
	rpcrdma_pcap_set_default(ps_pcap);
	return 0;
}

void ps_pcap_report(FILE *f)
{
	struct rpcrdma_pcap_stats st;

	if (!ps_pcap)
		return;
	rpcrdma_pcap_flush(ps_pcap);
	rpcrdma_pcap_stats(ps_pcap, &st);
	fprintf(f, "capture %s: %llu frames (%llu B), %llu cut at the snap length, %llu dropped "
		   "(buffer full), %llu lost to write errors; Sends MSG/NOMSG/MSGP/DONE/ERROR "
		   "%llu/%llu/%llu/%llu/%llu, RDMA writes %llu, reads %llu; the peer's, shown from "
		   "our memory: writes %llu, reads %llu\n",
		rpcrdma_pcap_path(ps_pcap), (unsigned long long)st.frames,
		(unsigned long long)st.bytes, (unsigned long long)st.truncated,
		(unsigned long long)st.dropped, (unsigned long long)st.write_errors,
		(unsigned long long)st.sends[0], (unsigned long long)st.sends[1],
		(unsigned long long)st.sends[2], (unsigned long long)st.sends[3],
		(unsigned long long)st.sends[4], (unsigned long long)st.writes,
		(unsigned long long)st.reads, (unsigned long long)st.peer_writes,
		(unsigned long long)st.peer_reads);
}

void ps_pcap_stop(void)
{
	struct rpcrdma_pcap *c = ps_pcap;

	if (!c)
		return;
	rpcrdma_pcap_set_default(NULL);
	rpcrdma_pcap_flush(c);
	ps_pcap_report(stderr);
	rpcrdma_pcap_close(c);
	ps_pcap = NULL;
}
