/* SPDX-License-Identifier: BSD-2-Clause */
/* Export options and the client list, in exports(5) syntax with knfsd's defaults:
 * rw, root_squash, secure, anonuid=anongid=65534. A client is a host name or address (a
 * host: resolved once, at start), a prefix ADDR/BITS (or ADDR/NETMASK for IPv4), or "*".
 * The first entry that matches a caller gives its options, as exportfs orders them. */
#include "nfs3d.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nfs3d_opts_default(struct nfs3d_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->root_squash = true;
	o->anonuid = o->anongid = 65534;
}

static int parse_id(const char *v, uint32_t *out)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (!*v || *end || errno || n > UINT32_MAX - 1 || *v == '-')
		return -1;
	*out = (uint32_t)n;
	return 0;
}

/* One option; exportfs's spellings, and "sync"/"async", "no_subtree_check",
 * "subtree_check"... are taken as knfsd's defaults where nfs3d has no other behaviour. */
static int parse_one(const char *w, struct nfs3d_opts *o)
{
	static const char *const same[] = { "sync", "no_subtree_check", "wdelay",
					    "no_wdelay", "hide", "nohide", "sec=sys" };
	size_t i;

	if (!strcmp(w, "ro"))
		o->ro = true;
	else if (!strcmp(w, "rw"))
		o->ro = false;
	else if (!strcmp(w, "root_squash"))
		o->root_squash = true;
	else if (!strcmp(w, "no_root_squash"))
		o->root_squash = false;
	else if (!strcmp(w, "all_squash"))
		o->all_squash = true;
	else if (!strcmp(w, "no_all_squash"))
		o->all_squash = false;
	else if (!strcmp(w, "secure"))
		o->insecure = false;
	else if (!strcmp(w, "insecure"))
		o->insecure = true;
	else if (!strncmp(w, "anonuid=", 8))
		return parse_id(w + 8, &o->anonuid);
	else if (!strncmp(w, "anongid=", 8))
		return parse_id(w + 8, &o->anongid);
	else {
		for (i = 0; i < sizeof(same) / sizeof(same[0]); i++)
			if (!strcmp(w, same[i]))
				return 0;
		return -1;
	}
	return 0;
}

/* A comma-separated list applied over o (so "-o ro" keeps the other defaults). */
int nfs3d_parse_opts(const char *s, struct nfs3d_opts *o)
{
	char buf[512], *w, *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save))
		if (parse_one(w, o) < 0) {
			fprintf(stderr, "nfs3d: unknown or bad export option '%s'\n", w);
			return -1;
		}
	return 0;
}

void nfs3d_opts_text(const struct nfs3d_opts *o, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s,%s,%s,anonuid=%u,anongid=%u", o->ro ? "ro" : "rw",
		 o->all_squash ? "all_squash" : o->root_squash ? "root_squash" : "no_root_squash",
		 o->insecure ? "insecure" : "secure", o->anonuid, o->anongid);
}

/* ADDR/BITS or ADDR/NETMASK (IPv4); the address bits past the prefix must be zero, as
 * an exports(5) subnet is written. */
static int parse_prefix(const char *spec, struct nfs3d_client *c)
{
	char a[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(spec, '/');
	size_t al = slash ? (size_t)(slash - spec) : strlen(spec);
	unsigned char mask[4];
	unsigned bits, max;
	char *end;

	if (al >= sizeof(a))
		return -1;
	memcpy(a, spec, al);
	a[al] = '\0';
	if (inet_pton(AF_INET, a, c->addr) == 1)
		c->family = AF_INET, max = 32;
	else if (inet_pton(AF_INET6, a, c->addr) == 1)
		c->family = AF_INET6, max = 128;
	else
		return -1;
	c->prefix = max;
	if (!slash)
		return 0;
	if (c->family == AF_INET && inet_pton(AF_INET, slash + 1, mask) == 1) {
		uint32_t m = (uint32_t)mask[0] << 24 | mask[1] << 16 | mask[2] << 8 | mask[3];

		for (bits = 0; bits < 32 && (m & (0x80000000u >> bits)); bits++)
			;
		if (bits < 32 && (m << bits))
			return -1;   /* not a contiguous netmask */
	} else {
		bits = (unsigned)strtoul(slash + 1, &end, 10);
		if (!slash[1] || *end || bits > max)
			return -1;
	}
	c->prefix = bits;
	return 0;
}

/* A host name: its one address, resolved now (exportfs resolves at export time too). */
static int resolve_host(const char *spec, struct nfs3d_client *c)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int rc = getaddrinfo(spec, NULL, &hints, &ai);

	if (rc) {
		fprintf(stderr, "nfs3d: client '%s': %s\n", spec, gai_strerror(rc));
		return -1;
	}
	c->family = ai->ai_family;
	if (ai->ai_family == AF_INET) {
		memcpy(c->addr, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, 4);
		c->prefix = 32;
	} else {
		memcpy(c->addr, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, 16);
		c->prefix = 128;
	}
	freeaddrinfo(ai);
	return 0;
}

/* CLIENT or CLIENT(OPTIONS): the options start from the -o ones. */
int nfs3d_add_client(const char *spec)
{
	struct nfs3d_client *c;
	const char *paren = strchr(spec, '(');
	size_t nl = paren ? (size_t)(paren - spec) : strlen(spec);
	char opts[512];

	if (ex.nclients >= NFS3D_MAX_CLIENTS || nl == 0 || nl >= sizeof(c->spec)) {
		fprintf(stderr, "nfs3d: bad client '%s'\n", spec);
		return -1;
	}
	c = &ex.clients[ex.nclients];
	memset(c, 0, sizeof(*c));
	memcpy(c->spec, spec, nl);
	c->opts = ex.defaults;
	if (paren) {
		size_t ol = strlen(paren + 1);

		if (ol == 0 || paren[ol] != ')' || ol - 1 >= sizeof(opts)) {
			fprintf(stderr, "nfs3d: bad client '%s'\n", spec);
			return -1;
		}
		memcpy(opts, paren + 1, ol - 1);
		opts[ol - 1] = '\0';
		if (nfs3d_parse_opts(opts, &c->opts) < 0)
			return -1;
	}
	if (!strcmp(c->spec, "*"))
		c->any = true;
	else if (parse_prefix(c->spec, c) < 0 && (strchr(c->spec, '/') ||
						  resolve_host(c->spec, c) < 0)) {
		fprintf(stderr, "nfs3d: bad client '%s'\n", spec);
		return -1;
	}
	ex.nclients++;
	return 0;
}

/* The caller's address as 4 or 16 bytes; an IPv4-mapped IPv6 address is IPv4. */
static int caller_addr(const struct sockaddr *sa, socklen_t len, unsigned char out[16])
{
	static const unsigned char v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (sa && sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		memcpy(out, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return AF_INET;
	}
	if (sa && sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const unsigned char *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;

		if (!memcmp(a, v4mapped, 12)) {
			memcpy(out, a + 12, 4);
			return AF_INET;
		}
		memcpy(out, a, 16);
		return AF_INET6;
	}
	return AF_UNSPEC;
}

static bool prefix_match(const struct nfs3d_client *c, int family, const unsigned char *a)
{
	unsigned full = c->prefix / 8, rest = c->prefix % 8;

	if (family != c->family || memcmp(a, c->addr, full))
		return false;
	return !rest || ((a[full] ^ c->addr[full]) & (0xffu << (8 - rest)) & 0xffu) == 0;
}

const struct nfs3d_opts *nfs3d_client_opts(const struct sockaddr *sa, socklen_t len)
{
	unsigned char a[16];
	int family = caller_addr(sa, len, a), i;

	if (ex.nclients == 0)
		return &ex.defaults;
	for (i = 0; i < ex.nclients; i++)
		if (ex.clients[i].any ||
		    (family != AF_UNSPEC && prefix_match(&ex.clients[i], family, a)))
			return &ex.clients[i].opts;
	return NULL;
}

bool nfs3d_port_secure(const struct sockaddr *sa, socklen_t len)
{
	if (sa && sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		return ntohs(((const struct sockaddr_in *)sa)->sin_port) < 1024;
	if (sa && sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port) < 1024;
	return false;
}
