/* SPDX-License-Identifier: BSD-2-Clause */
/* rpcrdma serve: the built-in test service over RPC-over-RDMA (and ONC RPC/TCP). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include "cli.h"
#include "perf_common.h"

/* Signals reach the watcher thread through a pipe (write() is async-signal-safe), so
 * that it sleeps until one comes instead of waking to look. */
static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	unsigned char b = (unsigned char)sig;
	int saved = errno;

	if (write(sig_pipe[1], &b, 1) < 0) {
		/* the pipe is full of signals already: nothing is lost that matters */
	}
	errno = saved;
}

static int json;   /* --json(-lines): the listening line and the statistics as JSON objects */
static int json_conns;

static void peer_text(const struct sockaddr *peer, char *addr, size_t cap)
{
	if (peer && peer->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr, addr, (socklen_t)cap);
	else if (peer && peer->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)peer)->sin6_addr, addr,
			  (socklen_t)cap);
}

/* The counters a report shows, in the order both forms print them. */
enum { C_CALLS, C_REPLIES, C_MSG, C_NOMSG, C_MSGP, C_DONE, C_ERROR, C_RCHUNKS, C_WCHUNKS,
       C_RPCHUNKS, C_READS, C_READ_B, C_WRITES, C_WRITE_B, C_CREDITS, C_COUNT };
static const char *const counter_keys[C_COUNT] = {
	"calls", "replies", "sent_msg", "sent_nomsg", "sent_msgp", "sent_done", "sent_error",
	"read_chunks", "write_chunks", "reply_chunks", "rdma_reads", "rdma_read_bytes",
	"rdma_writes", "rdma_write_bytes", "credits_granted"
};

static void counters(const struct rpcrdma_eng_stats *st, unsigned long long *v)
{
	const uint64_t src[C_COUNT] = {
		st->calls, st->replies, st->sent[0], st->sent[1], st->sent[2], st->sent[3],
		st->sent[4], st->read_chunks, st->write_chunks, st->reply_chunks, st->rdma_reads,
		st->rdma_read_bytes, st->rdma_writes, st->rdma_write_bytes, st->credits_granted
	};
	int i;

	for (i = 0; i < C_COUNT; i++)
		v[i] = (unsigned long long)src[i];
}

static void json_conn(const struct sockaddr *peer, const struct rpcrdma_eng_stats *st)
{
	unsigned long long v[C_COUNT];
	char addr[64] = "";
	unsigned i;

	peer_text(peer, addr, sizeof(addr));
	counters(st, v);
	printf("{\"peer\":\"%s\"", addr);
	for (i = 0; i < C_COUNT; i++)
		printf(",\"%s\":%llu", counter_keys[i], v[i]);
	printf(",\"errors\":{");
	for (i = 0; i < RPCRDMA_EC_COUNT; i++)
		printf("%s\"%s\":%llu", i ? "," : "", rpcrdma_eng_errclass_name(i),
		       (unsigned long long)st->errors[i]);
	printf("}}");
}

static void print_conn(void *ctx, const struct sockaddr *peer, const struct rpcrdma_eng_stats *st)
{
	unsigned long long v[C_COUNT];
	char addr[64] = "-";
	unsigned i;

	(void)ctx;
	if (json) {
		printf(json_conns++ ? "," : "");
		json_conn(peer, st);
		return;
	}
	peer_text(peer, addr, sizeof(addr));
	counters(st, v);
	printf("  %-16s calls %llu replies %llu  sent MSG/NOMSG/MSGP/DONE/ERROR %llu/%llu/%llu/%llu/%llu"
	       "  chunks read/write/reply %llu/%llu/%llu  RDMA reads %llu (%llu B) writes %llu (%llu B)"
	       "  credits %llu", addr, v[C_CALLS], v[C_REPLIES], v[C_MSG], v[C_NOMSG], v[C_MSGP],
	       v[C_DONE], v[C_ERROR], v[C_RCHUNKS], v[C_WCHUNKS], v[C_RPCHUNKS], v[C_READS],
	       v[C_READ_B], v[C_WRITES], v[C_WRITE_B], v[C_CREDITS]);
	for (i = 0; i < RPCRDMA_EC_COUNT; i++)
		if (st->errors[i] && i != RPCRDMA_EC_DISCONNECT)
			printf("  %s %llu", rpcrdma_eng_errclass_name(i), (unsigned long long)st->errors[i]);
	printf("\n");
}

static SVCXPRT *listener;

/* The duplicate request cache's figures (none with --no-drc). */
static void print_drc(void)
{
	struct rpcrdma_svc_drc_stats d;

	if (rpcrdma_svc_drc_stats(listener, &d))
		return;
	if (json) {
		printf(",\"drc\":{\"replayed\":%llu,\"waited\":%llu,\"kept\":%llu,"
		       "\"too_long\":%llu,\"evicted\":%llu,\"entries\":%llu,\"bytes\":%llu}",
		       (unsigned long long)d.replayed, (unsigned long long)d.waited,
		       (unsigned long long)d.kept, (unsigned long long)d.too_long,
		       (unsigned long long)d.evicted, (unsigned long long)d.entries,
		       (unsigned long long)d.bytes);
		return;
	}
	printf("duplicate request cache: %llu calls sent again answered (%llu of them waited "
	       "for the first), %llu replies kept, %llu too long to keep, %llu evicted; %llu "
	       "entries, %llu bytes now\n", (unsigned long long)(d.replayed + d.waited),
	       (unsigned long long)d.waited, (unsigned long long)d.kept,
	       (unsigned long long)d.too_long, (unsigned long long)d.evicted,
	       (unsigned long long)d.entries, (unsigned long long)d.bytes);
}

static void print_stats(const char *why)
{
	struct rpcrdma_eng_stats all;

	if (json) {
		json_conns = 0;
		printf("{\"statistics\":\"%s\",\"connections\":[", why);
		rpcrdma_svc_stats(listener, print_conn, NULL);
		printf("],\"all\":");
		if (!rpcrdma_svc_totals(listener, &all))
			json_conn(NULL, &all);
		else
			printf("null");
		print_drc();
		printf("}\n");
		fflush(stdout);
		return;
	}
	printf("rpcrdma serve: %s\n", why);
	if (rpcrdma_svc_stats(listener, print_conn, NULL) == 0)
		printf("  (no connection open)\n");
	if (!rpcrdma_svc_totals(listener, &all)) {
		printf("all connections so far:\n");
		print_conn(NULL, NULL, &all);
	}
	print_drc();
	ps_pcap_report(stdout);
	fflush(stdout);
}

/* Signals are noticed here: libtirpc's svc_run() has no way out. */
static void *watcher(void *arg)
{
	unsigned char sig;

	(void)arg;
	for (;;) {
		ssize_t n = read(sig_pipe[0], &sig, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 1 && sig == SIGUSR1)
			print_stats(json ? "SIGUSR1" : "statistics (SIGUSR1)");
		if (n <= 0 || sig != SIGUSR1) {
			print_stats(json ? "exit" : "statistics at exit");
			ps_pcap_stop();   /* _exit skips atexit: write the capture out first */
			json_doc_end();   /* and the document of --json */
			_exit(0);
		}
	}
	return NULL;
}

static void *rdma_workers(void *arg)
{
	rpcrdma_svc_run(*(int *)arg);
	return NULL;
}

static void usage(FILE *f)
{
	fputs("usage: rpcrdma serve [--provider tcp|shm|verbs|NAME] [--listen HOST:PORT]\n"
	      "                     [--threads N] [--tcp PORT] [--callback] [--no-drc] [--prereg]\n"
	      "                     [--json | --json-lines] [--pcap FILE [--pcap-snaplen N]]\n"
	      "Serves the built-in test program (NULL, ECHO, READ by write chunk, WRITE by read\n"
	      "chunk; long calls and replies) over RPC-over-RDMA; --tcp also over ONC RPC/TCP.\n"
	      "RDMA requests are dispatched on the connection-progress thread, or by N worker\n"
	      "threads with --threads N.\n"
	      "--callback: the CALLBACK procedure calls its client back over the client's own\n"
	      "connection (RFC 8167 backchannel; `ping --callback`); requests are then\n"
	      "dispatched off the progress thread, which completes the backward calls.\n"
	      "--no-drc: no duplicate request cache (a call a client sends again after a\n"
	      "lost connection runs again; by default it gets the first one's reply).\n"
	      "--prereg: READ's data (64 MiB, made at start) is long-lived memory, registered\n"
	      "once: no registration per reply (verbs; docs/RPC.md, \"Long-lived memory\").\n"
	      "--listen HOST:PORT, HOST, :PORT or PORT (a number alone is a port; [::1]:PORT\n"
	      "for IPv6): port 20049 and every address unless given (port 0: any).\n"
	      "Statistics on SIGUSR1 and at exit (SIGINT,\n"
	      "SIGTERM). Prints \"listening RDMA_PORT [TCP_PORT]\" when ready. --json-lines: that\n"
	      "and each report as a JSON object on a line of its own, as they come; --json: one\n"
	      "document at exit, {\"listening\":{...},\"reports\":[...]}.\n"
	      PS_PCAP_USAGE, f);
}

/* The errno of binding a socket of our own to host:port ("0": any port); 0 when the bind
 * succeeds, -1 when the host does not resolve. */
static int bind_errno(const char *host, const char *port)
{
	struct addrinfo hints, *ai = NULL;
	int s, e;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(host, port, &hints, &ai) || !ai)
		return -1;
	s = socket(ai->ai_family, SOCK_STREAM, 0);
	e = s < 0 || !bind(s, ai->ai_addr, ai->ai_addrlen) ? 0 : errno;
	if (s >= 0)
		close(s);
	freeaddrinfo(ai);
	return e;
}

/* The library says a listener could not bind as "the port is in use, or the address is
 * not one of this host's": the provider does not say which. A socket of our own tells:
 * binding the address with port 0 fails only when the address is not this host's
 * (EADDRNOTAVAIL); binding the port too, when something holds it (EADDRINUSE: over tcp
 * the provider's listener is a TCP socket). NULL when neither answers. */
static const char *why_no_bind(const char *provider, const char *host, uint16_t port)
{
	static char why[320];
	char ps[8];
	int e = bind_errno(host, "0");

	if (e == EADDRNOTAVAIL) {
		snprintf(why, sizeof(why), "listen on %s port %u: %s is not an address of this "
			 "host (bind: %s); give one of its addresses, or none for all", host, port,
			 host, strerror(e));
		return why;
	}
	snprintf(ps, sizeof(ps), "%u", port);
	if (!port || strcmp(provider, "tcp") || (e = bind_errno(host, ps)) != EADDRINUSE)
		return NULL;
	snprintf(why, sizeof(why), "listen on %s port %u: port %u is in use (bind: %s); "
		 "`ss -ltnp 'sport = :%u'` shows what holds it", host ? host : "*", port, port,
		 strerror(e), port);
	return why;
}

/* The message named the mistake; the rest is in --help. */
static int usage_error(void)
{
	cli_try_help("serve");
	return EXIT_USAGE;
}

int cmd_serve(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "provider", required_argument, 0, 'p' }, { "listen", required_argument, 0, 'l' },
		{ "threads", required_argument, 0, 't' }, { "tcp", required_argument, 0, 'T' },
		{ "json", no_argument, 0, 'j' }, { "callback", no_argument, 0, 'C' },
		{ "no-drc", no_argument, 0, 'D' }, { "prereg", no_argument, 0, 'R' }, PS_PCAP_OPTIONS, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 }
	};
	const char *provider = "tcp", *pcap = NULL;
	char host[256] = "";
	uint16_t port = PS_DEFAULT_PORT, rport = 0, tport = 0;
	uint32_t snaplen = 0;
	int threads = 1, tcp = -1, c;
	uint64_t v;
	pthread_t th;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:l:t:T:jCh", lo, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'C': ps_callbacks_enabled = 1; break;
		case 'D': ps_drc_off = 1; break;
		case 'R': ps_prereg = 1; break;
		case 'p': provider = optarg; break;
		case 'l':
			if (ps_parse_listen("serve", optarg, host, sizeof(host), &port))
				return usage_error();
			break;
		case 't':
			if (arg_uint("serve", "--threads", optarg, 1, 1024, &v))
				return usage_error();
			threads = (int)v;
			break;
		case 'T':
			if (arg_uint("serve", "--tcp", optarg, 0, 65535, &v))
				return usage_error();
			tcp = (int)v;
			break;
		case PS_OPT_PCAP: pcap = optarg; break;
		case PS_OPT_SNAPLEN:
			if (arg_uint("serve", "--pcap-snaplen", optarg, 0, UINT32_MAX, &v))
				return usage_error();
			snaplen = (uint32_t)v;
			break;
		case 'h': usage(stdout); return EXIT_OK;
		default: return usage_error();
		}
	}
	if (optind != argc) {
		fprintf(stderr, "rpcrdma serve: unexpected argument '%s'\n", argv[optind]);
		return usage_error();
	}
	ps_raise_fd_limit();
	if (pcap && ps_pcap_start(pcap, snaplen))
		return EXIT_FAIL;
	listener = ps_serve(provider, host[0] ? host : NULL, port, tcp,
			    threads == 1 && !ps_callbacks_enabled, &rport,
			    &tport, NULL);
	if (!listener) {
		const char *why = ps_serve_error(), *which = NULL;

		if (strstr(why, "the port is in use, or the address is not"))
			which = why_no_bind(provider, host[0] ? host : NULL, port);
		if (which)
			why = which;
		fprintf(stderr, "rpcrdma serve: %s\n", why);
		if (json)
			cli_json_error("serve", why);
		return EXIT_FAIL;
	}
	/* signals are caught before "listening" says we are ready: a SIGUSR1 sent on that
	 * line killed a server still without its handler (seen under ASan in CI) */
	if (pipe(sig_pipe) || fcntl(sig_pipe[0], F_SETFD, FD_CLOEXEC) ||
	    fcntl(sig_pipe[1], F_SETFD, FD_CLOEXEC)) {
		fprintf(stderr, "rpcrdma serve: pipe: %s\n", strerror(errno));
		return EXIT_FAIL;
	}
	cli_catch(on_signal, 1, 1);
	pthread_create(&th, NULL, watcher, NULL);
	if (json && tcp >= 0)
		printf("{\"listening\":{\"rdma_port\":%u,\"tcp_port\":%u,\"provider\":\"%s\"}}\n",
		       rport, tport, provider);
	else if (json)
		printf("{\"listening\":{\"rdma_port\":%u,\"provider\":\"%s\"}}\n", rport, provider);
	else if (tcp >= 0)
		printf("listening %u %u\n", rport, tport);
	else
		printf("listening %u\n", rport);
	fflush(stdout);
	/* RDMA requests: the progress thread, or worker threads when asked; TCP: svc_run */
	if (threads > 1)
		pthread_create(&th, NULL, rdma_workers, &threads);
	svc_run();
	return EXIT_FAIL;
}
