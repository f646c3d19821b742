/* SPDX-License-Identifier: BSD-2-Clause */
/* rpcrdma ping: NULL-RPC round trips, like ping(8). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "perf_common.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
	fputs("usage: rpcrdma ping HOST[:PORT] [-c COUNT] [-i SECONDS] [-s BYTES] [--json | --json-lines]\n"
	      "                    [--provider NAME [--callback] | --tirpc [--tcp-port PORT]]\n"
	      "NULL RPC round trips to `rpcrdma serve` (port 20049 unless given), like ping(8):\n"
	      "one line per reply until COUNT calls (default: until interrupted, ^C), then\n"
	      "calls, replies, loss and min/avg/max/p99 (us, ms or s; JSON: us). --tirpc pings\n"
	      "the server's ONC RPC/TCP port (serve --tcp PORT), given as HOST:PORT or\n"
	      "--tcp-port (-t; only with --tirpc). --json: one document\n"
	      "at the end, {\"results\":[one object per call],\"summary\":{...}}; --json-lines:\n"
	      "the same objects, one per line as they come. Exit status 0 if every call was\n"
	      "answered.\n"
	      "--callback: each round trip is a CALLBACK call during which the server calls\n"
	      "this client back over the same connection (RFC 8167; `serve --callback`) with\n"
	      "64 bytes that must come back whole. -s BYTES (k, m suffixes; up to 16m): each\n"
	      "round trip is an ECHO of that many bytes, checked byte for byte.\n"
	      PS_PCAP_USAGE, f);
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}


/* The p-th percentile by nearest rank: the smallest value with at least p% of the
 * values at or below it (for 5 values, p99 is the largest; never below the median). */
static double percentile(const double *sorted, int n, double p)
{
	int rank = (int)ceil(p / 100.0 * n);

	if (rank < 1)
		rank = 1;
	return sorted[(rank > n ? n : rank) - 1];
}

struct ping_opts {
	const char *provider, *pcap;
	char host[256];
	uint16_t port;
	uint32_t snaplen;
	long count;   /* 0: until interrupted */
	double interval;
	int json, tcp_port, callback;
	uint32_t size;      /* -s: bytes each round trip carries both ways (ECHO); 0: NULL */
	char *payload;
};

static int parse(int argc, char **argv, struct ping_opts *o)
{
	static const struct option lo[] = {
		{ "provider", required_argument, 0, 'p' }, { "tirpc", no_argument, 0, 'T' },
		{ "count", required_argument, 0, 'c' }, { "interval", required_argument, 0, 'i' },
		{ "tcp-port", required_argument, 0, 't' }, { "json", no_argument, 0, 'j' },
		{ "callback", no_argument, 0, 'B' }, { "size", required_argument, 0, 's' },
		PS_PCAP_OPTIONS, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 }
	};
	int c, has_port;
	uint64_t v;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:Tc:i:t:jBs:h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (arg_size("ping", "-s", optarg, 16u << 20, &v))
				return EXIT_USAGE;
			o->size = (uint32_t)v;
			break;
		case 'B': o->callback = 1; break;
		case 'p': o->provider = optarg; break;
		case 'T': o->provider = NULL; break;
		case 'c':
			if (arg_uint("ping", "-c", optarg, 1, 1000000000, &v))
				return EXIT_USAGE;
			o->count = (long)v;
			break;
		case 'i':
			if (arg_double("ping", "-i", optarg, 0, 3600, &o->interval))
				return EXIT_USAGE;
			break;
		case 't':
			if (arg_uint("ping", "--tcp-port", optarg, 1, 65535, &v))
				return EXIT_USAGE;
			o->tcp_port = (int)v;
			break;
		case 'j': o->json = 1; break;
		case PS_OPT_PCAP: o->pcap = optarg; break;
		case PS_OPT_SNAPLEN:
			if (arg_uint("ping", "--pcap-snaplen", optarg, 0, UINT32_MAX, &v))
				return EXIT_USAGE;
			o->snaplen = (uint32_t)v;
			break;
		case 'h': usage(stdout); exit(EXIT_OK);
		default: return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "rpcrdma ping: %s\n", optind >= argc ? "which host? (HOST[:PORT])"
							 : "one host only");
		return EXIT_USAGE;
	}
	has_port = ps_parse_addr("ping", argv[optind], o->host, sizeof(o->host), &o->port, 0);
	if (has_port < 0)
		return EXIT_USAGE;
	if (o->provider && o->tcp_port) {
		/* an RDMA ping would ignore it: say so rather than ping another port */
		fprintf(stderr, "rpcrdma ping: --tcp-port is the ONC RPC/TCP port of --tirpc; "
			"over RDMA give HOST:PORT\n");
		return EXIT_USAGE;
	}
	if (o->size && o->callback) {
		fprintf(stderr, "rpcrdma ping: -s and --callback do not go together (a callback "
				"carries 64 bytes)\n");
		return EXIT_USAGE;
	}
	if (!o->provider && o->callback) {
		fprintf(stderr, "rpcrdma ping: --callback needs RDMA (ONC RPC/TCP has no "
			"backchannel here)\n");
		return EXIT_USAGE;
	}
	if (!o->provider) {
		/* the TCP port is the server's --tcp one: nothing to guess it from */
		if (o->tcp_port)
			o->port = (uint16_t)o->tcp_port;
		else if (!has_port) {
			fprintf(stderr, "rpcrdma ping: --tirpc needs the server's ONC RPC/TCP port "
				"(serve --tcp PORT): give HOST:PORT or --tcp-port PORT\n");
			return EXIT_USAGE;
		}
	} else if (!has_port) {
		o->port = PS_DEFAULT_PORT;
	}
	return EXIT_OK;
}

/* Times in text are scaled as ping(8)'s are read: microseconds below 1 ms, then
 * milliseconds, then seconds (JSON keeps microseconds). The unit follows scale_us. */
static const char *time_unit(double scale_us, double *div)
{
	if (scale_us < 1e3) {
		*div = 1;
		return "us";
	}
	if (scale_us < 1e6) {
		*div = 1e3;
		return "ms";
	}
	*div = 1e6;
	return "s";
}

static void fmt_time(char *buf, size_t cap, double us)
{
	double div;
	const char *unit = time_unit(us, &div);

	snprintf(buf, cap, div == 1 ? "%.1f %s" : "%.2f %s", us / div, unit);
}

/* Why a call failed: the status, its errno where there is one, and what the library
 * knows beyond it (as clnt_sperror(), without its prefix) */
static const char *why_failed(CLIENT *cl, enum clnt_stat st, char *buf, size_t cap)
{
	const char *more = cl && cl->cl_netid && strcmp(cl->cl_netid, "tcp") ?
				   rpcrdma_clnt_errtext(cl) : NULL;
	struct rpc_err e;
	int n;

	memset(&e, 0, sizeof(e));
	if (cl)
		clnt_geterr(cl, &e);
	n = snprintf(buf, cap, "%s", clnt_sperrno(st));
	if (e.re_errno && (st == RPC_CANTSEND || st == RPC_CANTRECV || st == RPC_SYSTEMERROR) &&
	    n > 0 && (size_t)n < cap)
		n += snprintf(buf + n, cap - (size_t)n, " (%s)", strerror(e.re_errno));
	if (more && *more && n > 0 && (size_t)n < cap)
		snprintf(buf + n, cap - (size_t)n, ": %s", more);
	return buf;
}

static void print_reply(const struct ping_opts *o, CLIENT *cl, long seq, double dt,
			enum clnt_stat st)
{
	char t[32], why[320];

	fmt_time(t, sizeof(t), dt);
	if (o->json && st == RPC_SUCCESS)
		printf("{\"seq\":%ld,\"time_us\":%.1f}\n", seq, dt);
	else if (o->json)
		printf("{\"seq\":%ld,\"error\":\"%s\"}\n", seq, clnt_sperrno(st));   /* fixed texts */
	else if (st == RPC_SUCCESS && o->size)
		printf("ECHO reply: seq=%ld bytes=%u time=%s\n", seq, o->size, t);
	else if (st == RPC_SUCCESS)
		printf("%s reply: seq=%ld time=%s\n", o->callback ? "CALLBACK" : "NULL", seq, t);
	else
		printf("seq=%ld: %s\n", seq, why_failed(cl, st, why, sizeof(why)));
	fflush(stdout);
}

static void print_summary(const struct ping_opts *o, long sent, long got, double *rtt,
			  double sum)
{
	double lost = sent ? 100.0 * (double)(sent - got) / (double)sent : 0;

	if (got)
		qsort(rtt, (size_t)got, sizeof(*rtt), cmp_d);
	if (o->json) {
		printf("{\"host\":\"%s\",\"port\":%u,\"bytes\":%u,\"calls\":%ld,\"replies\":%ld,"
		       "\"lost_pct\":%.1f%s", o->host, o->port, o->size, sent, got, lost,
		       interrupted ? ",\"interrupted\":true" : "");
		if (got)
			printf(",\"min_us\":%.1f,\"avg_us\":%.1f,\"max_us\":%.1f,\"p99_us\":%.1f",
			       rtt[0], sum / (double)got, rtt[got - 1], percentile(rtt, (int)got, 99));
		printf("}\n");
		return;
	}
	printf("--- %s ping statistics ---\n%ld calls, %ld replies, %.0f%% lost\n", o->host, sent,
	       got, lost);
	if (got) {
		/* one unit for the four, chosen by the largest, as ping(8) prints them */
		double div;
		const char *unit = time_unit(rtt[got - 1], &div);
		const char *f = div == 1 ? "rtt min/avg/max/p99 = %.1f/%.1f/%.1f/%.1f %s\n"
					 : "rtt min/avg/max/p99 = %.3f/%.3f/%.3f/%.3f %s\n";

		printf(f, rtt[0] / div, sum / (double)got / div, rtt[got - 1] / div,
		       percentile(rtt, (int)got, 99) / div, unit);
	}
}

/* -s: the payload goes to the server and back (ECHO, inline or through chunks by its
 * size) and must come back byte for byte. */
static enum clnt_stat echo_trip(const struct ping_opts *o, CLIENT *cl, struct timeval tv)
{
	ps_data d = { o->size, o->payload }, r = { 0, NULL };
	enum clnt_stat st = clnt_call(cl, PS_ECHO, (xdrproc_t)xdr_ps_data, (caddr_t)&d,
				      (xdrproc_t)xdr_ps_data, (caddr_t)&r, tv);

	if (st == RPC_SUCCESS && (r.ps_data_len != o->size || memcmp(r.ps_data_val, o->payload,
								    o->size)))
		st = RPC_CANTDECODERES;   /* it came back, but not as it went */
	clnt_freeres(cl, (xdrproc_t)xdr_ps_data, (caddr_t)&r);
	return st;
}

/* One round trip: a NULL call, an ECHO of -s bytes, or with --callback a CALLBACK call
 * that the server answers once its backward echo came back whole. */
static enum clnt_stat round_trip(const struct ping_opts *o, CLIENT *cl, struct timeval tv)
{
	ps_callback_args a = { 1, 64 };
	u_int back = 0;
	enum clnt_stat st;

	if (o->size)
		return echo_trip(o, cl, tv);
	if (!o->callback)
		return clnt_call(cl, PS_NULL, (xdrproc_t)(void (*)(void))xdr_void, NULL,
				 (xdrproc_t)(void (*)(void))xdr_void, NULL, tv);
	st = clnt_call(cl, PS_CALLBACK, (xdrproc_t)xdr_ps_callback_args, (caddr_t)&a,
		       (xdrproc_t)xdr_u_int, (caddr_t)&back, tv);
	if (st == RPC_SUCCESS && back != a.count)
		st = RPC_CANTRECV;   /* the backward call did not come back whole */
	return st;
}

/* Sleep the interval, cut short by ^C. */
static void pause_for(double interval)
{
	struct timespec ts = { (time_t)interval, (long)((interval - (time_t)interval) * 1e9) };

	while (!interrupted && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int cmd_ping(int argc, char **argv)
{
	struct ping_opts o = { .provider = "tcp", .interval = 1.0 };
	struct timeval tv = { 5, 0 };
	double *rtt = NULL, sum = 0;
	long sent = 0, got = 0, cap = 0;
	CLIENT *cl;
	uint32_t i;
	int rc;

	rc = parse(argc, argv, &o);
	if (rc == EXIT_USAGE)
		cli_try_help("ping");
	if (rc != EXIT_OK)
		return rc;
	if (o.size && !(o.payload = malloc(o.size)))
		return EXIT_FAIL;
	for (i = 0; i < o.size; i++)
		o.payload[i] = (char)ps_byte(i);
	if (o.pcap && ps_pcap_start(o.pcap, o.snaplen)) {
		free(o.payload);
		return EXIT_FAIL;
	}
	cl = ps_client(o.provider, o.host, o.port);
	if (!cl) {
		ps_explain_create_error("ping", o.provider, o.host, o.port, o.json);
		ps_pcap_stop();
		free(o.payload);
		return EXIT_FAIL;
	}
	if (o.callback && clnt_rdma_set_callback(cl, PERF_CB_PROG, PERF_CB_V1, perf_cb_prog_1)) {
		fprintf(stderr, "rpcrdma ping: cannot serve the callback program: %s\n",
			strerror(errno));
		auth_destroy(cl->cl_auth);
		clnt_destroy(cl);
		ps_pcap_stop();
		free(o.payload);
		return EXIT_FAIL;
	}
	/* ^C ends the run and the summary is still printed, as ping(8) does; no SA_RESTART,
	 * so that a wait in progress returns at once */
	cli_catch(on_interrupt, 0, 0);
	if (!o.json && o.size)
		printf("PING %s port %u over %s%s, ECHO of %u bytes\n", o.host, o.port,
		       o.provider ? "RDMA/" : "ONC RPC/TCP", o.provider ? o.provider : "", o.size);
	else if (!o.json)
		printf("PING %s port %u over %s%s\n", o.host, o.port,
		       o.provider ? "RDMA/" : "ONC RPC/TCP", o.provider ? o.provider : "");
	while (!interrupted && (!o.count || sent < o.count)) {
		double t0 = now_us(), dt;
		enum clnt_stat st = round_trip(&o, cl, tv);

		dt = now_us() - t0;
		sent++;
		if (st == RPC_SUCCESS) {
			if (got == cap) {
				double *n = realloc(rtt, sizeof(*rtt) * (size_t)(cap = cap * 2 + 64));

				if (!n)
					break;
				rtt = n;
			}
			rtt[got++] = dt;
			sum += dt;
		}
		print_reply(&o, cl, sent, dt, st);
		if (o.callback && st == RPC_SYSTEMERROR) {
			fprintf(stderr, "rpcrdma ping: the server refused CALLBACK: it serves "
					"callbacks only when started as `rpcrdma serve --callback`\n");
			break;   /* every further call would be refused the same way */
		}
		if ((!o.count || sent < o.count) && o.interval > 0)
			pause_for(o.interval);
	}
	print_summary(&o, sent, got, rtt, sum);
	free(rtt);
	free(o.payload);
	auth_destroy(cl->cl_auth);
	clnt_destroy(cl);
	ps_pcap_stop();
	if (interrupted)
		return got && got == sent ? EXIT_OK : EXIT_FAIL;
	return got == sent ? EXIT_OK : EXIT_FAIL;
}
