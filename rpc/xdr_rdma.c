/* SPDX-License-Identifier: BSD-2-Clause */
/* XDR with direct data placement (RFC 5666 §3.4, RFC 8267 §2): xdr_rdma_ddp_bytes()
 * moves a DDP-eligible opaque out of the inline stream on an RPC-over-RDMA message and is
 * plain xdr_bytes() anywhere else; and the process-wide table of upper-layer bindings. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "rpc_int.h"

static __thread struct rpcrdma__xdr *cur;   /* the stream xdr_rdma_ddp_bytes acts on */

void rpcrdma__xdr_encode(struct rpcrdma__xdr *s, uint8_t *buf, uint32_t cap)
{
	memset(s, 0, sizeof(*s));
	s->buf = buf;
	s->cap = cap;
	xdrmem_create(&s->x, (char *)buf, cap, XDR_ENCODE);
}

void rpcrdma__xdr_decode(struct rpcrdma__xdr *s, const uint8_t *buf, uint32_t len)
{
	memset(s, 0, sizeof(*s));
	s->buf = (uint8_t *)buf;
	s->cap = len;
	xdrmem_create(&s->x, (char *)buf, len, XDR_DECODE);
}

void rpcrdma__xdr_enter(struct rpcrdma__xdr *s)
{
	cur = s;
}

void rpcrdma__xdr_leave(void)
{
	cur = NULL;
}

uint32_t rpcrdma__xdr_pos(struct rpcrdma__xdr *s)
{
	return XDR_GETPOS(&s->x);
}

void rpcrdma__xdr_unlend(struct rpcrdma__xdr *s)
{
	while (s->nlent)
		*s->lent[--s->nlent] = NULL;
}

static struct rpcrdma__xdr *ours(XDR *xdrs)
{
	return cur && &cur->x == xdrs ? cur : NULL;
}

/* Encoding: the length stays inline, the bytes become an item (a read chunk in a call, a
 * write chunk in a reply), their XDR roundup goes nowhere (RFC 8166 §3.4.5). */
static bool_t put_item(struct rpcrdma__xdr *s, const char *data, u_int len)
{
	struct rpcrdma_ddp_item *it = &s->items[s->nitems];

	if (!xdr_u_int(&s->x, &len))
		return FALSE;
	it->offset = rpcrdma__xdr_pos(s);
	it->len = len;
	it->data = data;
	s->nitems++;
	return TRUE;
}

/* Decoding a result the server placed in write chunk i: its length must be the XDR
 * length (RFC 5666 §3.4); the data is handed over, or copied where the caller has
 * its own buffer. */
static bool_t take_placed(struct rpcrdma__xdr *s, uint32_t i, char **sp, u_int len)
{
	struct rpcrdma_ddp_buf *b = &s->results[i];

	if (b->len != len)
		return FALSE;
	if (*sp == NULL) {
		*sp = b->data;
		s->handed_over[i] = !s->caller_owned[i];
		return TRUE;
	}
	if (*sp != (char *)b->data && len)
		memcpy(*sp, b->data, len);
	return TRUE;
}

/* A server's argument is lent from the assembled call, where its read chunk was pulled:
 * the copy and the allocation (fresh pages for large ones) are what a WRITE's data cost
 * the server after its RDMA Read. The pad after it is skipped, as xdr_opaque does. */
static bool_t lend(struct rpcrdma__xdr *s, char **sp, u_int len)
{
	char *p;

	if (len > UINT32_MAX - 3u)
		return FALSE;
	p = (char *)XDR_INLINE(&s->x, (len + 3u) & ~3u);
	if (!p)
		return FALSE;
	*sp = p;
	s->lent[s->nlent++] = sp;
	return TRUE;
}

/* Decoding an item that stayed inline, after any RDMA_MSGP padding (RFC 5666 §4.3). */
static bool_t take_inline(struct rpcrdma__xdr *s, char **sp, u_int len, int nul)
{
	uint32_t pos = rpcrdma__xdr_pos(s);
	uint32_t pad = rpcrdma_msgp_pad(s->align, s->thresh, s->base, pos, len);
	bool_t fresh = *sp == NULL;

	if (pad && !XDR_SETPOS(&s->x, pos + pad))
		return FALSE;
	if (fresh && !nul && len && s->lend && s->nlent < RPCRDMA__LENT_MAX)
		return lend(s, sp, len);
	if (fresh) {
		*sp = malloc((size_t)len + (nul ? 1 : 0) + (len ? 0 : 1));
		if (!*sp)
			return FALSE;
	}
	if (nul)
		(*sp)[len] = '\0';
	if (xdr_opaque(&s->x, *sp, len))
		return TRUE;
	if (fresh) {
		free(*sp);
		*sp = NULL;
	}
	return FALSE;
}

/* A result that came inline although the caller gave a buffer for it (no write chunk was
 * offered, or the server used none): copied there, so the data is where it was wanted. */
static bool_t inline_to_caller(struct rpcrdma__xdr *s, uint32_t i, char **sp, u_int len)
{
	*sp = s->results[i].data;
	if (take_inline(s, sp, len, 0))
		return TRUE;
	*sp = NULL;
	return FALSE;
}

static bool_t ddp_decode(struct rpcrdma__xdr *s, char **sp, u_int *sizep, u_int maxsize,
			 int nul)
{
	u_int len;

	if (!xdr_u_int(&s->x, &len) || len > maxsize)
		return FALSE;
	if (sizep)
		*sizep = len;
	if (s->next_result < s->nresults) {
		uint32_t i = s->next_result++;

		if (s->results[i].used && !nul)
			return take_placed(s, i, sp, len);
		if (s->results[i].used) {
			/* a string needs its terminator: copy out of the chunk */
			if (s->results[i].len != len || !(*sp = malloc((size_t)len + 1)))
				return FALSE;
			memcpy(*sp, s->results[i].data, len);
			(*sp)[len] = '\0';
			return TRUE;
		}
		if (s->caller_owned[i] && !nul && !*sp && len <= s->results[i].cap)
			return inline_to_caller(s, i, sp, len);
	}
	return take_inline(s, sp, len, nul);
}

/* Freeing: a lent pointer is not the heap's; its buffer is marked for giving back. */
static bool_t free_lent(struct rpcrdma__xdr *s, char **sp)
{
	uintptr_t p = (uintptr_t)*sp;
	uint32_t i;

	for (i = 0; p && i < s->nheld; i++) {
		uintptr_t lo = (uintptr_t)s->held[i].buf;

		if (p >= lo && p < lo + s->held[i].len) {
			s->held[i].hit = true;
			*sp = NULL;
			return TRUE;
		}
	}
	return FALSE;
}

bool_t xdr_rdma_ddp_bytes(XDR *xdrs, char **sp, u_int *sizep, u_int maxsize)
{
	struct rpcrdma__xdr *s = ours(xdrs);

	if (s && xdrs->x_op == XDR_FREE && free_lent(s, sp))
		return TRUE;
	if (!s)
		return xdr_bytes(xdrs, sp, sizep, maxsize);
	if (xdrs->x_op == XDR_ENCODE) {
		if (*sizep > maxsize)
			return FALSE;
		if (s->nitems == RPCRDMA_DEF_LIST_CHUNKS)
			return xdr_bytes(xdrs, sp, sizep, maxsize);   /* out of chunks: inline */
		return put_item(s, *sp, *sizep);
	}
	if (xdrs->x_op == XDR_DECODE)
		return ddp_decode(s, sp, sizep, maxsize, 0);
	return xdr_bytes(xdrs, sp, sizep, maxsize);
}

bool_t xdr_rdma_ddp_string(XDR *xdrs, char **sp, u_int maxsize)
{
	struct rpcrdma__xdr *s = ours(xdrs);
	size_t n;

	if (!s)
		return xdr_string(xdrs, sp, maxsize);
	if (xdrs->x_op == XDR_ENCODE) {
		n = *sp ? strlen(*sp) : 0;
		if (n > maxsize || !*sp)
			return FALSE;
		if (s->nitems == RPCRDMA_DEF_LIST_CHUNKS)
			return xdr_string(xdrs, sp, maxsize);
		return put_item(s, *sp, (u_int)n);
	}
	if (xdrs->x_op == XDR_DECODE)
		return ddp_decode(s, sp, NULL, maxsize, 1);
	return xdr_string(xdrs, sp, maxsize);
}

/* ---- CONF_RDMA ---- */

bool_t rpcrdma__xdr_ccp_args(XDR *x, struct rpcrdma_ccp_args *a)
{
	return xdr_u_int(x, &a->maxcall_sendsize) && xdr_u_int(x, &a->maxreply_sendsize) &&
	       xdr_u_int(x, &a->maxrdmaread);
}

bool_t rpcrdma__xdr_ccp_res(XDR *x, struct rpcrdma_ccp_res *r)
{
	return xdr_u_int(x, &r->maxcall_sendsize) && xdr_u_int(x, &r->align) &&
	       xdr_u_int(x, &r->maxrdmaread);
}

/* ---- bindings ---- */

#define MAX_ULBS 32
static const struct rpcrdma_ulb *ulbs[MAX_ULBS];
static unsigned nulbs;
static pthread_mutex_t ulb_lock = PTHREAD_MUTEX_INITIALIZER;

int rpcrdma_ulb_register(const struct rpcrdma_ulb *ulb)
{
	int rc = 0;

	if (!ulb || (ulb->nprocs && !ulb->procs))
		return -RPCRDMA_ERR_INVAL;
	pthread_mutex_lock(&ulb_lock);
	if (nulbs == MAX_ULBS)
		rc = -RPCRDMA_ERR_NOSPC;
	else
		ulbs[nulbs++] = ulb;
	pthread_mutex_unlock(&ulb_lock);
	return rc;
}

const struct rpcrdma_ulb_proc *rpcrdma_ulb_find(rpcprog_t prog, rpcvers_t vers, rpcproc_t proc)
{
	const struct rpcrdma_ulb_proc *found = NULL;
	unsigned i, k;

	pthread_mutex_lock(&ulb_lock);
	for (i = 0; i < nulbs && !found; i++) {
		if (ulbs[i]->prog != prog || ulbs[i]->vers != vers)
			continue;
		for (k = 0; k < ulbs[i]->nprocs; k++)
			if (ulbs[i]->procs[k].proc == proc)
				found = &ulbs[i]->procs[k];
	}
	pthread_mutex_unlock(&ulb_lock);
	return found;
}

/* ---- defaults from the environment ---- */

/* RPCRDMA_PROVIDER: the provider when a program's options name none (tcp otherwise), so
 * that an unmodified program can be moved between fabrics. */
const char *rpcrdma__env_provider(void)
{
	const char *p = getenv("RPCRDMA_PROVIDER");

	return p && *p ? p : "tcp";
}

/* A variable holding a whole number: 1 and *v when set and nothing but digits. */
static int env_number(const char *name, unsigned long *v)
{
	const char *p = getenv(name);
	char *end;

	if (!p || *p < '0' || *p > '9')
		return 0;
	*v = strtoul(p, &end, 10);
	return !*end;
}

/* RPCRDMA_PORT: the port when a program's options name none; 0 means any (a server) or
 * "ask rpcbind" (a client). Returns 1 when set and valid. */
int rpcrdma__env_port(uint32_t *port)
{
	unsigned long v;

	if (!env_number("RPCRDMA_PORT", &v) || v > 65535)
		return 0;
	*port = (uint32_t)v;
	return 1;
}

/* RPCRDMA_BUSY_POLL_US: busy polling (docs/RPC.md, "Busy polling") for a program whose
 * options leave it 0, so that an unmodified program can trade a core for latency. 0
 * where unset or not a number; at most RPCRDMA__BUSY_POLL_MAX_US. */
uint32_t rpcrdma__env_busy_poll_us(void)
{
	unsigned long v;

	return env_number("RPCRDMA_BUSY_POLL_US", &v) ? rpcrdma__busy_poll_cap(v) : 0;
}

uint32_t rpcrdma__busy_poll_cap(unsigned long us)
{
	return us > RPCRDMA__BUSY_POLL_MAX_US ? RPCRDMA__BUSY_POLL_MAX_US : (uint32_t)us;
}

/* ---- engine configuration ---- */

void rpcrdma__eng_config_rpc(struct rpcrdma_eng_config *cfg, int role,
			     const struct rpcrdma_prov_caps *caps, uint32_t inline_size,
			     uint32_t max_credits, uint32_t msgp_align, uint32_t msgp_thresh)
{
	rpcrdma_eng_config_default(cfg, role);
	cfg->inline_send = cfg->inline_recv = inline_size;
	cfg->max_credits = max_credits;
	/* the engine's send queue within the provider's, whatever a device offers */
	cfg->sq_depth = caps->tx_depth < 1024 ? caps->tx_depth : 1024;
	cfg->write_send_ordered = caps->write_send_ordered;
	cfg->msgp_align = msgp_align;
	cfg->msgp_thresh = msgp_thresh;
}

/* ---- the log's words for connections ---- */

void rpcrdma__addr_text(const struct sockaddr_storage *a, size_t len, char *buf, size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (!len || (a->ss_family != AF_INET && a->ss_family != AF_INET6)) {
		snprintf(buf, cap, "(shm)");
		return;
	}
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)a;

		inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
		snprintf(buf, cap, "%s port %u", host, ntohs(s->sin_port));
	} else {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;

		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
		snprintf(buf, cap, "%s port %u", host, ntohs(s->sin6_port));
	}
}

void rpcrdma__log_conn(int level, const char *what, const char *peer, const char *why,
		       const char *provider, const struct rpcrdma_eng *e)
{
	struct rpcrdma_eng_stats st;

	if (rpcrdma_log_level() < level)
		return;
	char credits[32] = "none granted yet";   /* a new connection: no reply has said */

	rpcrdma_eng_stats(e, &st);
	if (st.credits_granted)
		snprintf(credits, sizeof(credits), "%llu", (unsigned long long)st.credits_granted);
	rpcrdma_log(level, "%s %s%s%s%s over %s: inline %u/%u bytes (send/receive), credits %s; "
		    "%llu calls, %llu replies", what, peer, why ? " (" : "", why ? why : "",
		    why ? ")" : "", provider ? provider : "tcp", st.inline_send, st.inline_recv,
		    credits, (unsigned long long)st.calls, (unsigned long long)st.replies);
}

/* ---- why a create call failed ---- */

static __thread char create_err[320];

const char *rpcrdma_create_errtext(void)
{
	return create_err;
}

void rpcrdma__create_err(const char *fmt, ...)
{
	va_list ap;

	create_err[0] = '\0';
	if (!fmt)
		return;
	va_start(ap, fmt);
	vsnprintf(create_err, sizeof(create_err), fmt, ap);
	va_end(ap);
}

/* Out of memory at connect is, on a real RDMA device, nearly always the registration of
 * the connection's buffers meeting RLIMIT_MEMLOCK (the kernel pins what is registered):
 * say so, with the limit and how to raise it. */
static void create_err_memory(const char *what, const char *host, unsigned port)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		rpcrdma__create_err("%s %s port %u: out of memory registering buffers: RDMA pins "
				    "registered memory and the locked-memory limit is %llu KiB; "
				    "raise it (ulimit -l unlimited; LimitMEMLOCK=infinity in a "
				    "systemd unit; memlock in /etc/security/limits.conf)", what,
				    host, port, (unsigned long long)(rl.rlim_cur / 1024));
	else
		rpcrdma__create_err("%s %s port %u: out of memory registering buffers", what,
				    host, port);
}

/* The provider says only that the address could not be used: tell an unknown name from
 * an address that exists but is not usable here, as ping and rpcinfo do. */
static void create_err_addr(const char *what, const char *host, unsigned port, int listening)
{
	struct addrinfo hints, *ai = NULL;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	rc = strcmp(host, "*") ? getaddrinfo(host, NULL, &hints, &ai) : 0;
	if (ai)
		freeaddrinfo(ai);
	if (rc)
		rpcrdma__create_err("%s %s port %u: unknown host '%s' (%s)", what, host, port, host,
				    gai_strerror(rc));
	else if (listening)
		rpcrdma__create_err("%s %s port %u: the port is in use, or the address is not one "
				    "of this host's", what, host, port);
	else
		rpcrdma__create_err("%s %s port %u: the address cannot be reached from here over "
				    "this provider (no route or no interface for it; soft-RoCE "
				    "and real devices cannot use loopback)", what, host, port);
}

void rpcrdma__create_err_conn(int rc, int listening, const char *provider, const char *host,
			      unsigned port, int timeout_ms)
{
	const char *what = listening ? "listen on" : "connect to";

	host = host ? host : "*";
	provider = provider ? provider : "tcp";
	switch (-rc) {
	case RPCRDMA_ERR_ADDR:
		create_err_addr(what, host, port, listening);
		break;
	case RPCRDMA_ERR_TIMEDOUT:
		rpcrdma__create_err("%s %s port %u: no answer within %d ms; is an RPC-over-RDMA "
				    "server (e.g. rpcrdma serve) listening there, over %s too?",
				    what, host, port, timeout_ms, provider);
		break;
	case RPCRDMA_ERR_REFUSED:
		rpcrdma__create_err("%s %s port %u: connection refused; nothing listens there "
				    "over %s (no server, or one over another provider%s)", what,
				    host, port, provider,
				    strcmp(provider, "shm") ? "" : ": shm reaches this host's "
				    "shm listeners only");
		break;
	case RPCRDMA_ERR_REJECTED:
		rpcrdma__create_err("%s %s port %u: the server rejected the connection", what,
				    host, port);
		break;
	case RPCRDMA_ERR_DISCONN:
		rpcrdma__create_err("%s %s port %u: the connection was closed during the RDMA "
				    "handshake: what answers there is not an RPC-over-RDMA server "
				    "over %s (a plain TCP service, a proxy, or a server over another "
				    "provider)", what, host, port, provider);
		break;
	case RPCRDMA_ERR_NOMEM:
		create_err_memory(what, host, port);
		break;
	default:
		rpcrdma__create_err("%s %s port %u: %s", what, host, port, rpcrdma_strerror(rc));
	}
}

/* ---- time and waiting ---- */

/* glibc raises its mmap threshold to the largest block freed (up to 32 MiB), so after the
 * first 1 MiB argument or reply, bulk buffers come from the heaps of the threads that
 * allocated them and stay there when freed: a server that served many clients would keep
 * their peak forever. malloc_trim returns the free pages of every arena. Not per call: it
 * walks the heaps, so at most every 200 ms, after a connection has gone. */
bool rpcrdma__rpc_give_back_memory(void)
{
#ifdef __GLIBC__
	static uint64_t last;
	uint64_t now = rpcrdma__rpc_now(), prev = __atomic_load_n(&last, __ATOMIC_RELAXED);

	if (now - prev < 200 ||
	    !__atomic_compare_exchange_n(&last, &prev, now, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return false;
	malloc_trim(0);
#endif
	return true;
}

uint64_t rpcrdma__rpc_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t rpcrdma__rpc_now(void)
{
	return rpcrdma__rpc_now_us() / 1000u;
}

/* ---- spin or sleep ----
 * A poll that finds nothing is repeated, up to a limit, before the thread sleeps: on a
 * quiet host the reply arrives while we poll and the wake-up is saved. On a busy one every
 * poll holds a core the answering side (our own server, or the peer's progress) needs:
 * with one core taken by another program, NULL calls at depth 1 ran at 0.19x libtirpc
 * with a p99 of 1.3 ms (scheduler ticks), at 0.32x when never spinning. Two signs tell
 * which case this is: the kernel's CPU pressure (/proc/pressure/cpu: the share of time
 * some task was runnable but waiting for a core), averaged over the last few looks,
 * exceeds SPIN_PSI_PCT (measured here: 0% most of the time on a quiet host, with single
 * spikes to 41%; 30-80% with one core busy); or, where the kernel has no PSI, this thread
 * was preempted while it spun (its involuntary context switches grew; the scheduler may
 * let a spinner run for milliseconds first; where PSI exists a single preemption is no
 * sign: two threads spinning on a 2-core host are preempted now and then, and sleeping
 * 250 ms at a time for it cost NULL calls over shm 12-50%). Then the thread sleeps at once
 * for SPIN_CALM_MS; after that it spins again unless the pressure stayed high meanwhile. */
#define SPIN_LOOK_EVERY 32   /* polls between looks at the switch count */
#define SPIN_PSI_EVERY_MS 10
#define SPIN_PSI_PCT 30
#define SPIN_PSI_STALE_MS 100
#define SPIN_CALM_MS 250

struct spin_state {
	uint64_t calm_until;   /* ms */
	long nivcsw;           /* at the start of this spin, or the last look */
	unsigned since_look;
	uint64_t psi_at, psi_us;   /* the last look at the pressure: when (ms), its total */
	unsigned psi_avg;          /* percent, each look weighing a quarter */
	bool after_calm;           /* the next look covers a calm period */
};

static long involuntary_switches(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_nivcsw;
}

/* Microseconds some task waited for a CPU, since boot ("some ... total=" of
 * /proc/pressure/cpu); 0 where the kernel does not say. */
static uint64_t cpu_pressure_us(void)
{
	static int fd = -2;
	char buf[256], *p;
	ssize_t n;
	int f = __atomic_load_n(&fd, __ATOMIC_ACQUIRE);

	if (f == -2) {
		int mine = open("/proc/pressure/cpu", O_RDONLY | O_CLOEXEC), want = -2;

		if (!__atomic_compare_exchange_n(&fd, &want, mine, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE) && mine >= 0)
			close(mine);
		f = __atomic_load_n(&fd, __ATOMIC_ACQUIRE);
	}
	if (f < 0 || (n = pread(f, buf, sizeof(buf) - 1, 0)) <= 0)
		return 0;
	buf[n] = '\0';
	p = strstr(buf, "total=");
	return p && !strncmp(buf, "some", 4) ? strtoull(p + 6, NULL, 10) : 0;
}

/* At the start of a spin, at most every SPIN_PSI_EVERY_MS: true when tasks have been
 * waiting for a core more than SPIN_PSI_PCT of the time, lately. */
static bool pressure_high(struct spin_state *st, uint64_t now)
{
	uint64_t us, was = st->psi_us, since = now - st->psi_at, pct;
	bool calm = st->after_calm;

	if (st->psi_at && since < SPIN_PSI_EVERY_MS)
		return false;
	us = cpu_pressure_us();
	st->psi_at = now;
	st->psi_us = us;
	st->after_calm = false;
	if (!was || !us || !since)
		return false;
	pct = (us - was) / (since * 10u);
	if (pct > 100)
		pct = 100;
	if (calm && since <= SPIN_CALM_MS + SPIN_PSI_STALE_MS) {
		/* the calm period, an average of its own: with one core busy it read 28-42%
		 * while we slept, so the thread stays calm without spinning to find out */
		st->psi_avg = (unsigned)pct;
	} else if (since > SPIN_PSI_STALE_MS) {
		/* we were idle: what loaded the host meanwhile says nothing of now */
		st->psi_avg = 0;
	} else {
		st->psi_avg = (unsigned)((3u * st->psi_avg + pct) / 4u);
	}
	return st->psi_avg > SPIN_PSI_PCT;
}

static bool go_calm(struct spin_state *st, uint64_t now)
{
	st->calm_until = now + SPIN_CALM_MS;
	st->after_calm = true;
	return false;
}

bool rpcrdma__spin_more(unsigned polls)
{
	static __thread struct spin_state st;
	uint64_t now;

	if (polls <= 1) {
		now = rpcrdma__rpc_now();
		if (now < st.calm_until)
			return false;
		if (pressure_high(&st, now))
			return go_calm(&st, now);
		st.calm_until = 0;
		if (!st.psi_us)   /* no PSI: a preemption is the sign */
			st.nivcsw = involuntary_switches();
		st.since_look = 0;
		return true;
	}
	if (st.calm_until)
		return false;
	if (++st.since_look < SPIN_LOOK_EVERY)
		return true;
	st.since_look = 0;
	/* the peer we just sent to may have been woken onto this very core (the scheduler
	 * places a wakee near its waker) and waits there behind our spin until we are
	 * preempted: 3-4 ms each time (ping -i 0.2 over tcp: 3.2 ms average, min 0.25 ms,
	 * with the other core idle). A yield lets it run at once; with nothing else ready
	 * on the core it returns at once. */
	sched_yield();
	now = rpcrdma__rpc_now();
	if (st.psi_us ? pressure_high(&st, now) : involuntary_switches() != st.nivcsw)
		return go_calm(&st, now);
	return true;
}

/* Busy polling was asked for: the poll goes on whatever the pressure on the host (the
 * program chose to spend the core), but yields it every SPIN_LOOK_EVERY polls, so that a
 * thread waiting for this core (the peer woken by our send, as in rpcrdma__spin_more())
 * runs at once, as the kernel's busy polling gives way when the scheduler needs the CPU. */
bool rpcrdma__busy_poll_on(unsigned polls)
{
	if (polls % SPIN_LOOK_EVERY == 0)
		sched_yield();
	return true;
}

/* Idle rounds are counted in time: yielding for the first 200 ms of quiet (a peer in
 * the middle of an exchange gets answered at once), then 50 us naps, and 1 ms naps only
 * after a second of silence. */
void rpcrdma__idle_backoff(unsigned *idle)
{
	static __thread uint64_t quiet_since;
	struct timespec ts = { 0, 0 };
	uint64_t now = rpcrdma__rpc_now(), quiet;

	if ((*idle)++ == 0)
		quiet_since = now;
	quiet = now - quiet_since;
	if (quiet < 200) {
		sched_yield();
		return;
	}
	ts.tv_nsec = quiet < 1000 ? 50000 : 1000000;
	nanosleep(&ts, NULL);
}
