/* SPDX-License-Identifier: BSD-2-Clause */
/* What nfs3cp and nfs4cp parse alike: "HOST:/path" operands and sizes. */
#ifndef RPCRDMA_EXAMPLES_CP_ARGS_H
#define RPCRDMA_EXAMPLES_CP_ARGS_H

#include <errno.h>
#include <stdint.h>
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

#endif
