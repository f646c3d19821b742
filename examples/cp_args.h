/* SPDX-License-Identifier: BSD-2-Clause */
/* What nfs3cp and nfs4cp parse alike: "HOST:/path" operands and sizes. */
#ifndef RPCRDMA_EXAMPLES_CP_ARGS_H
#define RPCRDMA_EXAMPLES_CP_ARGS_H

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CP_MIB (1024u * 1024u)

/* "HOST:/path" or "[v6addr]:/path" into host and path: 1; anything else is a local path:
 * 0; a host or path longer than its buffer: -1. */
static inline int cp_parse_remote(const char *s, char *host, size_t hcap, char *path,
				  size_t pcap)
{
	const char *colon;
	size_t hl;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':' || end[2] != '/')
			return 0;
		hl = (size_t)(end - s - 1);
		colon = end + 1;
		s++;
	} else {
		colon = strchr(s, ':');
		if (!colon || colon[1] != '/' || colon == s || memchr(s, '/', (size_t)(colon - s)))
			return 0;
		hl = (size_t)(colon - s);
	}
	if (hl >= hcap || strlen(colon + 1) >= pcap)
		return -1;
	memcpy(host, s, hl);
	host[hl] = 0;
	strcpy(path, colon + 1);
	return 1;
}

/* A number from lo to hi, with an optional k or m suffix (KiB, MiB). */
static inline int cp_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || v < lo || v > hi)
		return -1;
	if (*end == 'k' || *end == 'K')
		v *= 1024, end++;
	else if (*end == 'm' || *end == 'M')
		v *= CP_MIB, end++;
	if (*end || v > hi)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* The options nfs3cp and nfs4cp share, with the same names and meanings. */
struct cp_opts {
	const char *provider;   /* NULL: the library's default ($RPCRDMA_PROVIDER, else tcp) */
	uint32_t port;          /* 0: rpcbind (netid rdma), else 20049 */
	uint32_t chunk;         /* bytes per READ/WRITE */
	uint32_t depth;         /* READs or WRITEs in flight */
	int list, quiet;
};

/* Their getopt_long entries, first in each program's table. */
#define CP_LONG_OPTIONS \
	{ "provider", required_argument, NULL, 'P' }, \
	{ "port", required_argument, NULL, 'p' }, \
	{ "chunk", required_argument, NULL, 'c' }, \
	{ "depth", required_argument, NULL, 'd' }, \
	{ "list", no_argument, NULL, 'l' }, \
	{ "quiet", no_argument, NULL, 'q' }

static inline void cp_opts_init(struct cp_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->chunk = CP_MIB;
	o->depth = 8;
}

/* getopt_long's answer c (argument arg) into o when it is one of the shared options: 1;
 * 0: not one of them; -1: a bad value, said on stderr after "PROG: ". */
static inline int cp_opt(const char *prog, int c, const char *arg, uint32_t depth_max,
			 struct cp_opts *o)
{
	const char *bad = NULL;

	switch (c) {
	case 'P': o->provider = arg; return 1;
	case 'l': o->list = 1; return 1;
	case 'q': o->quiet = 1; return 1;
	case 'p':
		if (cp_parse_u32(arg, 1, 65535, &o->port))
			bad = "--port: '%s' is not a port (1-65535)\n";
		break;
	case 'c':
		if (cp_parse_u32(arg, 1, 64 * CP_MIB, &o->chunk))
			bad = "--chunk: '%s' is not a size from 1 to 64m\n";
		break;
	case 'd':
		if (cp_parse_u32(arg, 1, depth_max, &o->depth)) {
			fprintf(stderr, "%s: --depth: '%s' is not from 1 to %u\n", prog, arg,
				(unsigned)depth_max);
			return -1;
		}
		break;
	default:
		return 0;
	}
	if (bad) {
		fprintf(stderr, "%s: ", prog);
		fprintf(stderr, bad, arg);
		return -1;
	}
	return 1;
}

#endif
