/* SPDX-License-Identifier: BSD-2-Clause */
/* `rpcrdma decode` and `rpcrdma encode`: the codec from the command line. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_MSG (1u << 20)

struct decode_opts {
	int json;
	int body;
	enum rpcrdma_dir dir;
};

static void decode_usage(FILE *f)
{
	fputs("usage: rpcrdma decode [--json] [--body] [--call|--reply] [HEX...]\n"
	      "       rpcrdma decode --pcap FILE [--json [--body] | --fields]\n"
	      "Decode RPC-over-RDMA v1 messages given as hex (one per argument, or one per\n"
	      "line on standard input; blank lines and lines starting with # are skipped),\n"
	      "or every Send in a RoCEv2 capture (docs/CAPTURE.md).\n"
	      "  --pcap F  read the Sends of pcap file F (as written by --pcap / RPCRDMA_PCAP)\n"
	      "  --fields  with --pcap, one tab-separated line per Send, in the columns of the\n"
	      "            tshark command in docs/CAPTURE.md\n"
	      "  --json    one JSON object per message (docs/CLI.md)\n"
	      "  --body    with --json, add the bytes after the header as \"body\" (hex)\n"
	      "  --call    decode as sent by a requester (default: from the RPC body)\n"
	      "  --reply   decode as sent by a responder\n"
	      "Exit status: 0 all valid, 2 any invalid message or bad input.\n", f);
}

/* Returns 0 valid, 1 invalid. */
static int decode_one(const unsigned char *buf, size_t len, const struct decode_opts *o)
{
	static struct rpcrdma_msg_storage st;
	struct rpcrdma_decode_status ds;
	struct rpcrdma_msg m;

	rpcrdma_msg_bind(&m, &st);
	if (rpcrdma_decode(buf, len, o->dir, NULL, &m, &ds) == 0) {
		if (o->json)
			msg_json_print(stdout, &m, o->body);
		else
			msg_text_print(stdout, &m);
		return 0;
	}
	if (o->json)
		msg_json_invalid(stdout, &ds);
	else
		msg_text_invalid(stdout, &ds);
	return 1;
}

static int decode_hex(const char *hex, unsigned char *buf, const struct decode_opts *o,
		      int *invalid)
{
	long n = hex_parse(hex, buf, MAX_MSG);

	if (n < 0) {
		fprintf(stderr, "rpcrdma decode: not hex: %.40s\n", hex);
		return -1;
	}
	*invalid += decode_one(buf, (size_t)n, o);
	return 0;
}

static int skip_line(const char *line)
{
	while (*line == ' ' || *line == '\t')
		line++;
	return *line == '#' || *line == '\n' || *line == '\0';
}

static int decode_stream(FILE *in, unsigned char *buf, const struct decode_opts *o, int *invalid)
{
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;

	while (getline(&line, &cap, in) > 0) {
		if (skip_line(line))
			continue;
		if (decode_hex(line, buf, o, invalid)) {
			rc = -1;
			break;
		}
	}
	free(line);
	return rc;
}

int cmd_decode(int argc, char **argv)
{
	struct decode_opts o = { 0, 0, RPCRDMA_DIR_ANY };
	int i, invalid = 0, rc = 0, nhex = 0, fields = 0;
	const char *pcap = NULL;
	unsigned char *buf;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pcap") && i + 1 < argc)
			pcap = argv[++i];
		else if (!strcmp(argv[i], "--fields"))
			fields = 1;
		else if (!strcmp(argv[i], "--json"))
			o.json = 1;
		else if (!strcmp(argv[i], "--body"))
			o.body = 1;
		else if (!strcmp(argv[i], "--call"))
			o.dir = RPCRDMA_DIR_CALL;
		else if (!strcmp(argv[i], "--reply"))
			o.dir = RPCRDMA_DIR_REPLY;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			decode_usage(stdout);
			return EXIT_OK;
		} else if (argv[i][0] == '-' && argv[i][1] == '-') {
			arg_unknown("decode", argv[i]);
			cli_try_help("decode");
			return EXIT_USAGE;
		} else
			nhex++;
	}
	if (pcap && !nhex && o.dir == RPCRDMA_DIR_ANY)
		return cmd_decode_pcap(pcap, o.json, fields, o.body);
	if (pcap || fields) {
		fprintf(stderr, "rpcrdma decode: %s\n", pcap ? "--pcap takes no hex, --call or --reply" :
				"--fields needs --pcap");
		cli_try_help("decode");
		return EXIT_USAGE;
	}
	buf = malloc(MAX_MSG);
	if (!buf)
		return EXIT_FAIL;
	for (i = 1; i < argc && !rc; i++)
		if (argv[i][0] != '-')
			rc = decode_hex(argv[i], buf, &o, &invalid);
	if (!nhex)
		rc = decode_stream(stdin, buf, &o, &invalid);
	free(buf);
	return rc || invalid ? EXIT_USAGE : EXIT_OK;
}

static void encode_usage(FILE *f)
{
	fputs("usage: rpcrdma encode --json [FILE]\n"
	      "Read one JSON object per line (the shape `rpcrdma decode --json` prints; \"rpc\"\n"
	      "and \"header_len\" are ignored, an optional \"body\" hex string is appended after\n"
	      "the header) and print each message as hex.\n"
	      "Exit status: 0 ok, 2 bad input.\n", f);
}

static int encode_line(const char *line, struct msg_build *b, unsigned char *out)
{
	const char *err = "?";
	int n;

	if (msg_json_parse(line, b, &err)) {
		fprintf(stderr, "rpcrdma encode: bad JSON field: %s\n", err);
		return -1;
	}
	n = rpcrdma_encode(&b->m, out, MAX_MSG);
	if (n < 0 || (size_t)n + b->body_len > MAX_MSG) {
		fprintf(stderr, "rpcrdma encode: %s\n",
			n < 0 ? rpcrdma_strerror(n) : "message too large");
		return -1;
	}
	memcpy(out + n, b->body, b->body_len);
	hex_print(stdout, out, (size_t)n + b->body_len);
	fputc('\n', stdout);
	return 0;
}

int cmd_encode(int argc, char **argv)
{
	struct msg_build *b = NULL;
	unsigned char *out = NULL;
	const char *path = NULL;
	char *line = NULL;
	size_t cap = 0;
	int i, json = 0, rc = EXIT_FAIL;
	FILE *in = stdin;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			encode_usage(stdout);
			return EXIT_OK;
		} else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else {
			arg_unknown("encode", argv[i]);
			cli_try_help("encode");
			return EXIT_USAGE;
		}
	}
	if (!json) {
		fputs("rpcrdma encode: --json is required (the only input form)\n", stderr);
		cli_try_help("encode");
		return EXIT_USAGE;
	}
	if (path && !(in = fopen(path, "r"))) {
		perror(path);
		return EXIT_USAGE;
	}
	b = malloc(sizeof(*b));
	out = malloc(MAX_MSG);
	if (!b || !out)
		goto out_free;
	rc = EXIT_OK;
	while (getline(&line, &cap, in) > 0) {
		if (skip_line(line))
			continue;
		if (encode_line(line, b, out)) {
			rc = EXIT_USAGE;
			break;
		}
	}
out_free:
	free(line);
	free(out);
	free(b);
	if (in != stdin)
		fclose(in);
	return rc;
}
