/* SPDX-License-Identifier: BSD-2-Clause */
/* Sockets that libfabric's tcp provider (1.17) accepted and then lost track of.
 *
 * The provider accepts every TCP connection on a listening endpoint and waits for its
 * connection request; when the peer has gone without a word, recv() returns 0 and the
 * provider takes a stale errno (EAGAIN) for the reason, so it keeps the socket in its poll
 * set and never closes it: a socket in CLOSE-WAIT and an fd held forever. Clearing errno
 * before each look at an event queue (rpcrdma__fab_clear_errno, fabric_int.h) avoids
 * nearly all of them; this reaper is the safety net for the rest.
 *
 * Nothing in libfabric's API reaches those sockets, so the listener finds them the way
 * `ss` does: sockets of this process (/proc/self/fd) that are in CLOSE-WAIT on the
 * listening port (the kernel's sock_diag netlink query; /proc/net/tcp, tcp6 where it does
 * not answer), that belong to none of the listener's live connections, and that stayed
 * so for REAP_AFTER_MS. Those are closed. The provider never touches them again (it holds
 * no reference once it has halted them). The query asks for CLOSE-WAIT sockets only and
 * takes microseconds; reading /proc/net/tcp lists every socket of the host and took
 * ~10 ms here, once a second, in front of whatever request woke an idle server. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prov_int.h"
#include "tcp_reap.h"

#define REAP_AFTER_MS 3000
#define TCP_CLOSE_WAIT 8

/* One line of /proc/net/tcp{,6}: local and remote address (hex as the kernel prints it,
 * IPv4 in network order read as a little-endian word), state, inode. */
struct tcp_row {
	uint8_t laddr[16], raddr[16];
	int alen;
	uint16_t lport, rport;
	unsigned state;
	uint64_t inode;
};

static int hex_addr(const char *s, uint8_t *out, int *alen, uint16_t *port)
{
	const char *colon = strchr(s, ':');
	int n = colon ? (int)(colon - s) : 0, i;

	if (n != 8 && n != 32)
		return -1;
	for (i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	*alen = n / 2;
	*port = (uint16_t)strtoul(colon + 1, NULL, 16);
	return 0;
}

static int parse_row(const char *line, struct tcp_row *r)
{
	char l[80], rm[80];
	unsigned long long inode;

	if (sscanf(line, "%*d: %79s %79s %x %*s %*s %*s %*s %*s %llu", l, rm, &r->state,
		   &inode) != 4)
		return -1;
	r->inode = inode;
	if (hex_addr(l, r->laddr, &r->alen, &r->lport) ||
	    hex_addr(rm, r->raddr, &r->alen, &r->rport))
		return -1;
	return 0;
}

/* /proc prints each 32-bit word of an address as the number the CPU reads from memory
 * (%08X): raw (network order) into that form. */
static void proc_words(const uint8_t *raw, int alen, uint8_t *out)
{
	int i;

	for (i = 0; i < alen; i += 4) {
		uint32_t v;

		memcpy(&v, raw + i, 4);
		out[i] = (uint8_t)(v >> 24);
		out[i + 1] = (uint8_t)(v >> 16);
		out[i + 2] = (uint8_t)(v >> 8);
		out[i + 3] = (uint8_t)v;
	}
}

/* The address of a sockaddr as /proc/net/tcp prints it (v4-mapped for an IPv6 socket). */
static int proc_form(const struct sockaddr_storage *sa, uint8_t *out, int *alen,
		     uint16_t *port)
{
	uint8_t raw[16];

	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;

		memcpy(raw, &s->sin_addr, 4);
		*alen = 4;
		*port = ntohs(s->sin_port);
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;

		memcpy(raw, &s->sin6_addr, 16);
		*alen = 16;
		*port = ntohs(s->sin6_port);
	} else {
		return -1;
	}
	proc_words(raw, *alen, out);
	return 0;
}

static int is_live(const struct tcp_row *r, const struct rpcrdma__tcp_pair *live, size_t nlive)
{
	size_t i;

	for (i = 0; i < nlive; i++) {
		uint8_t l[16], p[16];
		int ll, pl;
		uint16_t lp, pp;

		if (proc_form(&live[i].local, l, &ll, &lp) || proc_form(&live[i].peer, p, &pl, &pp))
			continue;
		if (ll == r->alen && pl == r->alen && lp == r->lport && pp == r->rport &&
		    !memcmp(l, r->laddr, (size_t)ll) && !memcmp(p, r->raddr, (size_t)pl))
			return 1;
	}
	return 0;
}

static struct rpcrdma__reap_seen *seen_find(struct rpcrdma__tcp_reaper *rp, uint64_t inode)
{
	uint32_t i;

	for (i = 0; i < rp->nseen; i++)
		if (rp->seen[i].inode == inode)
			return &rp->seen[i];
	return NULL;
}

static void seen_add(struct rpcrdma__tcp_reaper *rp, uint64_t inode, int64_t now)
{
	struct rpcrdma__reap_seen *n;

	if (rp->nseen == rp->cap) {
		n = realloc(rp->seen, sizeof(*n) * (rp->cap * 2 + 8));
		if (!n)
			return;
		rp->seen = n;
		rp->cap = rp->cap * 2 + 8;
	}
	rp->seen[rp->nseen].inode = inode;
	rp->seen[rp->nseen].since = now;
	rp->seen[rp->nseen].mark = 1;
	rp->nseen++;
}

/* The socket goes (its connection ends, CLOSE-WAIT with it) but its descriptor number
 * stays taken, now on /dev/null: the provider still has that number in its poll table,
 * and a new socket given the same number would clash with it. */
static int retire(int fd)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC), ok;

	if (null < 0)
		return 0;
	ok = dup2(null, fd) == fd;
	close(null);
	return ok;
}

/* Retire this process's fd of socket `inode`. */
static int close_inode(uint64_t inode)
{
	char want[64], path[64], link[64];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int closed = 0;

	if (!d)
		return 0;
	snprintf(want, sizeof(want), "socket:[%" PRIu64 "]", inode);
	while ((de = readdir(d)) != NULL) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%.32s", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (!strcmp(link, want)) {
			closed = retire(atoi(de->d_name));
			break;
		}
	}
	closedir(d);
	return closed;
}

struct scan {
	struct rpcrdma__tcp_reaper *rp;
	uint16_t port;
	const struct rpcrdma__tcp_pair *live;
	size_t nlive;
	int64_t now;
};

/* A socket of the host: one of ours to close once it has been lost long enough. */
static void consider(const struct scan *sc, const struct tcp_row *r)
{
	struct rpcrdma__reap_seen *s;

	if (r->state != TCP_CLOSE_WAIT || r->lport != sc->port || !r->inode ||
	    is_live(r, sc->live, sc->nlive))
		return;
	s = seen_find(sc->rp, r->inode);
	if (!s) {
		seen_add(sc->rp, r->inode, sc->now);
		return;
	}
	s->mark = 1;
	if (sc->now - s->since >= REAP_AFTER_MS && close_inode(r->inode))
		sc->rp->reaped++;
}

static void scan_file(const struct scan *sc, const char *file)
{
	FILE *f = fopen(file, "r");
	char line[512];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		struct tcp_row r;

		if (!parse_row(line, &r))
			consider(sc, &r);
	}
	fclose(f);
}

static void diag_row(const struct scan *sc, const struct inet_diag_msg *m)
{
	struct tcp_row r;

	r.alen = m->idiag_family == AF_INET ? 4 : 16;
	proc_words((const uint8_t *)m->id.idiag_src, r.alen, r.laddr);
	proc_words((const uint8_t *)m->id.idiag_dst, r.alen, r.raddr);
	r.lport = ntohs(m->id.idiag_sport);
	r.rport = ntohs(m->id.idiag_dport);
	r.state = m->idiag_state;
	r.inode = m->idiag_inode;
	consider(sc, &r);
}

/* The answers to one dump request: 1 at its end, 0 for more to come, -1 on an error. */
static int diag_batch(const struct scan *sc, const void *buf, ssize_t n)
{
	const struct nlmsghdr *h = buf;
	int len = (int)n;

	for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
		if (h->nlmsg_type == NLMSG_DONE)
			return 1;
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
			return -1;   /* NLMSG_ERROR: no such family here */
		if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
			diag_row(sc, NLMSG_DATA(h));
	}
	return 0;
}

/* The host's CLOSE-WAIT TCP sockets of one family, from the kernel (sock_diag).
 * 0, or -1 where the kernel does not answer (then /proc is read instead). */
static int scan_diag(const struct scan *sc, int family)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} q;
	long buf[2048];   /* aligned for nlmsghdr */
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), rc = -1;

	if (fd < 0)
		return -1;
	memset(&q, 0, sizeof(q));
	q.nlh.nlmsg_len = sizeof(q);
	q.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	q.req.sdiag_family = (uint8_t)family;
	q.req.sdiag_protocol = IPPROTO_TCP;
	q.req.idiag_states = 1u << TCP_CLOSE_WAIT;
	if (send(fd, &q, sizeof(q), 0) == (ssize_t)sizeof(q)) {
		for (rc = 0; rc == 0;) {
			ssize_t n = recv(fd, buf, sizeof(buf), 0);

			rc = n > 0 ? diag_batch(sc, buf, n) : -1;
		}
	}
	close(fd);
	return rc > 0 ? 0 : -1;
}

void rpcrdma__tcp_reap(struct rpcrdma__tcp_reaper *rp, uint16_t port,
		       const struct rpcrdma__tcp_pair *live, size_t nlive, int64_t now)
{
	struct scan sc = { rp, port, live, nlive, now };
	uint32_t i, k = 0;

	for (i = 0; i < rp->nseen; i++)
		rp->seen[i].mark = 0;
	if (scan_diag(&sc, AF_INET))
		scan_file(&sc, "/proc/net/tcp");
	if (scan_diag(&sc, AF_INET6))
		scan_file(&sc, "/proc/net/tcp6");
	/* forget what is gone */
	for (i = 0; i < rp->nseen; i++)
		if (rp->seen[i].mark)
			rp->seen[k++] = rp->seen[i];
	rp->nseen = k;
}

void rpcrdma__tcp_reaper_free(struct rpcrdma__tcp_reaper *rp)
{
	free(rp->seen);
	memset(rp, 0, sizeof(*rp));
}
