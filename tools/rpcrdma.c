/* SPDX-License-Identifier: BSD-2-Clause */
/* rpcrdma: one command-line tool, one subcommand per job. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct subcommand {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
	int json_doc;   /* --json: one document of the run; --json-lines: its lines */
};

static const struct subcommand subcommands[] = {
	{ "decode", cmd_decode, "decode RPC-over-RDMA messages from hex", 0 },
	{ "encode", cmd_encode, "encode RPC-over-RDMA messages from JSON", 0 },
	{ "info", cmd_info, "list the RDMA providers usable here", 0 },
	{ "serve", cmd_serve, "serve the built-in test program over RPC-over-RDMA", 1 },
	{ "ping", cmd_ping, "NULL RPC round trips to a serve", 1 },
	{ "perf", cmd_perf, "calls/s, MB/s and latency, against ONC RPC/TCP with --compare", 1 },
};

static void usage(FILE *f)
{
	size_t i;

	fputs("usage: rpcrdma COMMAND [ARGS]   (rpcrdma COMMAND --help for details)\n", f);
	for (i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		fprintf(f, "  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
	fputs("  version  print the library version\n", f);
	fputs("Anywhere on the line: -v (the library's log: connections, errors; -vv: debug),\n"
	      "-q (no log). Default: RPCRDMA_LOG=off|error|warn|info|debug, else off.\n", f);
}

/* -v, -vv, -q and --verbose/--quiet may stand anywhere: taken out before the subcommand
 * parses its own options. Returns the new argc. */
static int take_log_flags(int argc, char **argv)
{
	int i, n = 0, level = -1;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (i > 0 && (!strcmp(a, "-v") || !strcmp(a, "--verbose")))
			level = level < RPCRDMA_LOG_INFO ? RPCRDMA_LOG_INFO : RPCRDMA_LOG_DEBUG;
		else if (i > 0 && !strcmp(a, "-vv"))
			level = RPCRDMA_LOG_DEBUG;
		else if (i > 0 && (!strcmp(a, "-q") || !strcmp(a, "--quiet")))
			level = RPCRDMA_LOG_OFF;
		else
			argv[n++] = argv[i];
	}
	argv[n] = NULL;
	if (level >= 0)
		rpcrdma_log_set_level(level);
	return n;
}

static int version(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		puts("usage: rpcrdma version\nPrints the version of the tool and of the library "
		     "it runs with.");
		return EXIT_OK;
	}
	if (argc > 1) {
		arg_unknown("version", argv[1]);
		cli_try_help("version");
		return EXIT_USAGE;
	}
	printf("rpcrdma %s (library %s)\n", RPCRDMA_VERSION_STRING, rpcrdma_version());
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	static char self[32];
	struct sigaction sa;
	size_t i;

	/* a peer that closes (a TCP client pinging an RDMA port) is an error to report,
	 * not a reason to die */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	cli_log_install();
	argc = take_log_flags(argc, argv);

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version"))
		return version(argc - 1, argv + 1);
	for (i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (!strcmp(argv[1], subcommands[i].name)) {
			int rc, doc = subcommands[i].json_doc && json_doc_args(argc - 1, argv + 1);

			/* getopt names argv[0] in its messages: "rpcrdma ping: ...", as ours do */
			snprintf(self, sizeof(self), "rpcrdma %s", subcommands[i].name);
			argv[1] = self;
			if (doc)
				json_doc_begin();
			rc = subcommands[i].run(argc - 1, argv + 1);
			json_doc_end();
			return rc;
		}
	fprintf(stderr, "rpcrdma: unknown command '%s'\n", argv[1]);
	fputs("Try 'rpcrdma --help' for the commands.\n", stderr);
	return EXIT_USAGE;
}
