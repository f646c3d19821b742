/* SPDX-License-Identifier: BSD-2-Clause */
/* Hex text <-> bytes for the CLI. */
#include <ctype.h>

#include "cli.h"

static int nibble(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

long hex_parse(const char *s, unsigned char *out, size_t cap)
{
	size_t n = 0;
	int hi = -1;

	while (isspace((unsigned char)*s))
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; *s; s++) {
		int v;

		if (isspace((unsigned char)*s) || *s == ':')
			continue;
		v = nibble((unsigned char)*s);
		if (v < 0)
			return -1;
		if (hi < 0) {
			hi = v;
			continue;
		}
		if (n >= cap)
			return -1;
		out[n++] = (unsigned char)(hi << 4 | v);
		hi = -1;
	}
	return hi < 0 ? (long)n : -1;
}

void hex_print(FILE *f, const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}
