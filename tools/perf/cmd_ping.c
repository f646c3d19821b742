/* SPDX-License-Identifier: BSD-2-Clause */
/* rpcrdma ping: NULL-RPC round trips, like ping(8). */
#include <getopt.h>
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
	fputs("usage: rpcrdma ping HOST[:PORT] [-c COUNT] [-i SECONDS] [--provider NAME|--tirpc]\n"
	      "NULL RPC round trips to `rpcrdma serve` (port 20049 unless given); prints each,\n"
	      "then min/avg/max/p99. --tirpc pings its ONC RPC/TCP port instead.\n"
	      PS_PCAP_USAGE, f);
}

int cmd_ping(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "provider", required_argument, 0, 'p' }, { "tirpc", no_argument, 0, 'T' },
		{ "count", required_argument, 0, 'c' }, { "interval", required_argument, 0, 'i' },
		PS_PCAP_OPTIONS, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 }
	};
	const char *provider = "tcp", *pcap = NULL;
	char host[256];
	uint16_t port;
	uint32_t snaplen = 0;
	int count = 10, c, i, got = 0;
	double interval = 1.0, *rtt, sum = 0;
	struct timeval tv = { 5, 0 };
	CLIENT *cl;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:Tc:i:P:S:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p': provider = optarg; break;
		case 'T': provider = NULL; break;
		case 'c': count = atoi(optarg); break;
		case 'i': interval = atof(optarg); break;
		case 'P': pcap = optarg; break;
		case 'S': snaplen = (uint32_t)atoi(optarg); break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc || count < 1 || interval < 0 ||
	    ps_parse_addr(argv[optind], host, sizeof(host), &port, PS_DEFAULT_PORT)) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (pcap && ps_pcap_start(pcap, snaplen))
		return EXIT_FAIL;
	cl = ps_client(provider, host, port);
	if (!cl) {
		clnt_pcreateerror("rpcrdma ping");
		ps_pcap_stop();
		return EXIT_FAIL;
	}
	rtt = calloc((size_t)count, sizeof(*rtt));
	printf("PING %s port %u over %s%s\n", host, port, provider ? "RDMA/" : "ONC RPC/TCP",
	       provider ? provider : "");
	for (i = 0; i < count; i++) {
		double t0 = now_us();
		enum clnt_stat st = clnt_call(cl, PS_NULL, (xdrproc_t)(void (*)(void))xdr_void, NULL,
					      (xdrproc_t)(void (*)(void))xdr_void, NULL, tv);
		double dt = now_us() - t0;

		if (st == RPC_SUCCESS) {
			rtt[got++] = dt;
			sum += dt;
			printf("NULL reply: seq=%d time=%.1f us\n", i + 1, dt);
		} else {
			printf("seq=%d: %s\n", i + 1, clnt_sperrno(st));
		}
		fflush(stdout);
		if (i + 1 < count && interval > 0) {
			struct timespec ts = { (time_t)interval,
					       (long)((interval - (time_t)interval) * 1e9) };

			nanosleep(&ts, NULL);
		}
	}
	printf("--- %s ping statistics ---\n%d calls, %d replies, %.0f%% lost\n", host, count, got,
	       100.0 * (count - got) / count);
	if (got) {
		qsort(rtt, (size_t)got, sizeof(*rtt), cmp_d);
		printf("rtt min/avg/max/p99 = %.1f/%.1f/%.1f/%.1f us\n", rtt[0], sum / got,
		       rtt[got - 1], rtt[(got - 1) * 99 / 100]);
	}
	free(rtt);
	clnt_destroy(cl);
	ps_pcap_stop();
	return got == count ? EXIT_OK : EXIT_FAIL;
}
