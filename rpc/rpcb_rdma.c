/* SPDX-License-Identifier: BSD-2-Clause */
/* rpcbind for RDMA transports (RFC 5666 §12: netids "rdma" and "rdma6").
 *
 * rpcgen's servers call svc_register(transp, prog, vers, dispatch, IPPROTO_TCP), and
 * libtirpc's svc_register() then calls pmap_set(prog, vers, IPPROTO_TCP, xp_port), which
 * would tell rpcbind that a TCP service listens on the RDMA port. This file defines
 * pmap_set() and pmap_unset() itself, ahead of libtirpc's (dynamic symbol interposition;
 * it holds when librpcrdma comes before libtirpc on the link line, as its pkg-config and
 * CMake files put it): for the port of one of our RDMA listeners, the registration goes
 * under "rdma"/"rdma6" with the listener's universal address; anything else goes on to
 * libtirpc's functions unchanged. Registrations are withdrawn by svc_unregister(), when
 * the listener is destroyed, and at exit.
 *
 * rpcbind itself is asked directly, over its local socket: libtirpc's rpcb_set() refuses
 * netids that are not in /etc/netconfig, and "rdma" is not there on Debian. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "rpc_int.h"

#include <rpc/rpcb_prot.h>

#define RPCB_TIMEOUT_MS 5000

struct rb_reg {
	struct rb_reg *next;
	rpcprog_t prog;
	rpcvers_t vers;
	const char *netid;
};

struct rb_lst {
	struct rb_lst *next;
	const void *key;             /* the listener */
	uint16_t port;
	struct sockaddr_storage addr;   /* bound address */
	int dual;                    /* an IPv6 listener that takes IPv4 as well */
	struct rb_reg *regs;
};

static pthread_mutex_t rb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rb_lst *lsts;
static int rb_warned, rb_atexit;

/* ---- talking to rpcbind ---- */

/* A connected stream socket to `sa`, within timeout_ms; -1 on failure. */
static int connect_timed(const struct sockaddr *sa, socklen_t len, int timeout_ms)
{
	struct pollfd p;
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), err = 0;
	socklen_t elen = sizeof(err);

	if (fd < 0)
		return -1;
	if (connect(fd, sa, len) && errno != EINPROGRESS)
		goto out_close;
	p.fd = fd;
	p.events = POLLOUT;
	if (poll(&p, 1, timeout_ms) != 1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) || err)
		goto out_close;
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
		goto out_close;
	return fd;
out_close:
	close(fd);
	return -1;
}

static CLIENT *rpcb_client_on(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct netbuf nb = { len, len, (void *)sa };
	CLIENT *c = clnt_vc_create(fd, &nb, RPCBPROG, RPCBVERS, 0, 0);

	if (!c) {
		close(fd);
		return NULL;
	}
	clnt_control(c, CLSET_FD_CLOSE, NULL);
	return c;
}

/* The local rpcbind: its Unix socket (it lets the owner's uid set and unset), else the
 * loopback TCP port 111. */
static CLIENT *rpcb_local(void)
{
	static const char *const paths[] = { "/run/rpcbind.sock", "/var/run/rpcbind.sock" };
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_port = htons(111),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_un un;
	unsigned i;
	int fd;

	for (i = 0; i < 2; i++) {
		memset(&un, 0, sizeof(un));
		un.sun_family = AF_UNIX;
		snprintf(un.sun_path, sizeof(un.sun_path), "%s", paths[i]);
		fd = connect_timed((struct sockaddr *)&un, sizeof(un), RPCB_TIMEOUT_MS);
		if (fd >= 0)
			return rpcb_client_on(fd, (struct sockaddr *)&un, sizeof(un));
	}
	fd = connect_timed((struct sockaddr *)&lo, sizeof(lo), RPCB_TIMEOUT_MS);
	return fd >= 0 ? rpcb_client_on(fd, (struct sockaddr *)&lo, sizeof(lo)) : NULL;
}

/* RPCBPROC_SET or _UNSET. Returns 1 (done), 0 (refused) or -1 (no rpcbind). */
static int rpcb_local_call(rpcproc_t proc, rpcprog_t prog, rpcvers_t vers, const char *netid,
			   const char *uaddr)
{
	struct timeval tv = { RPCB_TIMEOUT_MS / 1000, 0 };
	char owner[32];
	bool_t ok = FALSE;
	CLIENT *c = rpcb_local();
	RPCB r;

	if (!c)
		return -1;
	snprintf(owner, sizeof(owner), "%u", (unsigned)geteuid());
	r.r_prog = prog;
	r.r_vers = vers;
	r.r_netid = (char *)netid;
	r.r_addr = (char *)uaddr;
	r.r_owner = owner;
	if (clnt_call(c, proc, (xdrproc_t)xdr_rpcb, (char *)&r, (xdrproc_t)xdr_bool,
		      (char *)&ok, tv) != RPC_SUCCESS)
		ok = FALSE;
	clnt_destroy(c);
	return ok ? 1 : 0;
}

/* The universal address of `sa` with port `port` ("h1.h2.h3.h4.p1.p2", "x:..:x.p1.p2"). */
static int uaddr_of(const struct sockaddr_storage *sa, int family, uint16_t port, char *buf,
		    size_t len)
{
	char host[INET6_ADDRSTRLEN] = "";

	if (family == AF_INET6 && sa->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host,
			  sizeof(host));
	else if (family == AF_INET && sa->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof(host));
	else
		snprintf(host, sizeof(host), "%s", family == AF_INET6 ? "::" : "0.0.0.0");
	return snprintf(buf, len, "%s.%u.%u", host, port >> 8, port & 0xffu) < (int)len ? 0 : -1;
}

/* ---- our listeners ---- */

static struct rb_lst *find_port(uint16_t port)
{
	struct rb_lst *l;

	for (l = lsts; l; l = l->next)
		if (l->port == port)
			return l;
	return NULL;
}

static void unset_all_of(struct rb_lst *l)
{
	struct rb_reg *r;

	while ((r = l->regs) != NULL) {
		l->regs = r->next;
		rpcb_local_call(RPCBPROC_UNSET, r->prog, r->vers, r->netid, "");
		free(r);
	}
}

static void unset_at_exit(void)
{
	struct rb_lst *l;

	pthread_mutex_lock(&rb_lock);
	for (l = lsts; l; l = l->next)
		unset_all_of(l);
	pthread_mutex_unlock(&rb_lock);
}

void rpcrdma__rpcb_listener_add(const void *key, uint16_t port, const void *addr, size_t len,
				int dual)
{
	struct rb_lst *l = calloc(1, sizeof(*l));

	if (!l)
		return;
	l->key = key;
	l->port = port;
	if (addr && len <= sizeof(l->addr))
		memcpy(&l->addr, addr, len);
	l->dual = dual;
	pthread_mutex_lock(&rb_lock);
	l->next = lsts;
	lsts = l;
	pthread_mutex_unlock(&rb_lock);
}

void rpcrdma__rpcb_listener_remove(const void *key)
{
	struct rb_lst **pp, *l;

	pthread_mutex_lock(&rb_lock);
	for (pp = &lsts; (l = *pp) != NULL; pp = &l->next)
		if (l->key == key) {
			*pp = l->next;
			unset_all_of(l);
			free(l);
			break;
		}
	pthread_mutex_unlock(&rb_lock);
}

static int reg_one(struct rb_lst *l, rpcprog_t prog, rpcvers_t vers, int family)
{
	const char *netid = family == AF_INET6 ? "rdma6" : "rdma";
	struct rb_reg *r;
	char uaddr[80];
	int rc;

	if (uaddr_of(&l->addr, family, l->port, uaddr, sizeof(uaddr)))
		return 0;
	rpcb_local_call(RPCBPROC_UNSET, prog, vers, netid, "");   /* a stale one of ours */
	rc = rpcb_local_call(RPCBPROC_SET, prog, vers, netid, uaddr);
	if (rc <= 0)
		return rc;
	r = calloc(1, sizeof(*r));
	if (r) {
		r->prog = prog;
		r->vers = vers;
		r->netid = netid;
		r->next = l->regs;
		l->regs = r;
	}
	return 1;
}

/* Register prog/vers for listener l under its netid(s). Without rpcbind it is skipped,
 * once said on stderr: the program still serves clients that know the port. */
static bool_t register_rdma(struct rb_lst *l, rpcprog_t prog, rpcvers_t vers)
{
	int fam = l->addr.ss_family == AF_INET6 ? AF_INET6 : AF_INET;
	int rc = reg_one(l, prog, vers, fam);

	if (rc > 0 && l->dual)
		rc = reg_one(l, prog, vers, AF_INET);
	if (rc < 0) {
		if (!rb_warned++)
			fprintf(stderr, "librpcrdma: rpcbind is not running: program %lu version %lu "
				"is not registered for RDMA (port %u); clients must be given the "
				"port\n", (unsigned long)prog, (unsigned long)vers, l->port);
		return TRUE;
	}
	if (!rb_atexit)
		rb_atexit = atexit(unset_at_exit) == 0;
	return rc > 0;
}

/* libtirpc's own, for everything that is not ours. */
static bool_t real_pmap_set(u_long prog, u_long vers, int protocol, int port)
{
	bool_t (*fn)(u_long, u_long, int, int) =
		(bool_t (*)(u_long, u_long, int, int))dlsym(RTLD_NEXT, "pmap_set");

	return fn ? fn(prog, vers, protocol, port) : FALSE;
}

static bool_t real_pmap_unset(u_long prog, u_long vers)
{
	bool_t (*fn)(u_long, u_long) = (bool_t (*)(u_long, u_long))dlsym(RTLD_NEXT, "pmap_unset");

	return fn ? fn(prog, vers) : FALSE;
}

RPCRDMA_API bool_t pmap_set(u_long prog, u_long vers, int protocol, int port)
{
	struct rb_lst *l;
	bool_t ok;

	pthread_mutex_lock(&rb_lock);
	l = protocol == IPPROTO_TCP ? find_port((uint16_t)port) : NULL;
	ok = l ? register_rdma(l, (rpcprog_t)prog, (rpcvers_t)vers) : FALSE;
	pthread_mutex_unlock(&rb_lock);
	return l ? ok : real_pmap_set(prog, vers, protocol, port);
}

/* Forget prog/vers in our registry; rpcbind is told for every netid by the caller. */
static void forget(rpcprog_t prog, rpcvers_t vers)
{
	struct rb_lst *l;
	struct rb_reg **pp, *r;

	for (l = lsts; l; l = l->next)
		for (pp = &l->regs; (r = *pp) != NULL;) {
			if (r->prog == prog && r->vers == vers) {
				*pp = r->next;
				free(r);
			} else {
				pp = &r->next;
			}
		}
}

RPCRDMA_API bool_t pmap_unset(u_long prog, u_long vers)
{
	bool_t tcp_udp = real_pmap_unset(prog, vers);
	int a = rpcb_local_call(RPCBPROC_UNSET, (rpcprog_t)prog, (rpcvers_t)vers, "rdma", "");
	int b = a < 0 ? -1 : rpcb_local_call(RPCBPROC_UNSET, (rpcprog_t)prog, (rpcvers_t)vers,
					     "rdma6", "");

	pthread_mutex_lock(&rb_lock);
	forget((rpcprog_t)prog, (rpcvers_t)vers);
	pthread_mutex_unlock(&rb_lock);
	return tcp_udp || a > 0 || b > 0;
}

/* ---- the client's lookup ---- */

/* The port of the last two fields of a universal address, 0 if it has none. */
static uint16_t uaddr_port(const char *uaddr)
{
	const char *p2 = strrchr(uaddr, '.'), *p1;
	unsigned hi, lo;

	if (!p2 || p2 == uaddr)
		return 0;
	for (p1 = p2 - 1; p1 > uaddr && *p1 != '.'; p1--)
		;
	if (*p1 != '.' || sscanf(p1 + 1, "%u.%u", &hi, &lo) != 2 || hi > 255 || lo > 255)
		return 0;
	return (uint16_t)(hi << 8 | lo);
}

static uint16_t pick(rpcblist_ptr list, rpcprog_t prog, rpcvers_t vers, int family)
{
	const char *want = family == AF_INET6 ? "rdma6" : "rdma";
	uint16_t any = 0, port;
	rpcblist_ptr e;

	for (e = list; e; e = e->rpcb_next) {
		if (e->rpcb_map.r_prog != prog || e->rpcb_map.r_vers != vers ||
		    !e->rpcb_map.r_netid || strncmp(e->rpcb_map.r_netid, "rdma", 4) ||
		    !e->rpcb_map.r_addr)
			continue;
		port = uaddr_port(e->rpcb_map.r_addr);
		if (!strcmp(e->rpcb_map.r_netid, want) && port)
			return port;
		if (!any)
			any = port;
	}
	return any;
}

int rpcrdma__rpcb_lookup(const char *host, rpcprog_t prog, rpcvers_t vers, int timeout_ms,
			 uint16_t *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	rpcblist_ptr list = NULL;
	int rc = -RPCRDMA_ERR_NOPROV;

	if (getaddrinfo(host, "111", &hints, &res))
		return -RPCRDMA_ERR_ADDR;
	for (ai = res; ai && rc; ai = ai->ai_next) {
		int fd = connect_timed(ai->ai_addr, ai->ai_addrlen, timeout_ms);
		CLIENT *c = fd >= 0 ? rpcb_client_on(fd, ai->ai_addr, ai->ai_addrlen) : NULL;

		if (!c)
			continue;
		if (clnt_call(c, RPCBPROC_DUMP, RPCRDMA_XDR_VOID, NULL,
			      (xdrproc_t)xdr_rpcblist_ptr, (char *)&list, tv) == RPC_SUCCESS) {
			*port = pick(list, prog, vers, ai->ai_family);
			rc = *port ? 0 : -RPCRDMA_ERR_NOPROV;
			xdr_free((xdrproc_t)xdr_rpcblist_ptr, (char *)&list);
		}
		clnt_destroy(c);
	}
	freeaddrinfo(res);
	return rc;
}
