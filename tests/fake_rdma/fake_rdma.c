/* SPDX-License-Identifier: BSD-2-Clause */
/* A stand-in for rdma-core (librdmacm + libibverbs) inside one process, loaded with
 * LD_PRELOAD by the verbs provider's test (tests/test_prov_verbs.c) on machines without
 * an RDMA device. It implements the calls prov/verbs/prov_verbs.c makes, with the behaviour the
 * provider relies on:
 *
 * - CM: resolve, connect, accept, reject, disconnect, migrate; events on event channels
 *   whose fd is pollable; private data padded with zeros as InfiniBand pads it (56 bytes
 *   in a request, 196 in a reply, 148 in a reject); a connect to a port nobody listens on
 *   is rejected with status 8, a consumer's reject has status 28.
 * - Verbs: one device ("fakerdma0"), protection domains, registrations with keys and
 *   access rights, RC queue pairs joined by a connection, Send/Receive (a Send without a
 *   posted receive waits for one, as with infinite RNR retry; on the iWARP stand-in,
 *   FAKE_RDMA_IWARP=1, it breaks the connection, as iWARP has no RNR), RDMA Read/Write checked
 *   against key, range and right (a violation breaks the connection: REM_ACCESS_ERR for
 *   the requester, both queue pairs in error), flushed work requests when a queue pair
 *   enters the error state, completion channels with armed notification, and a connected
 *   queue pair's minimum RNR timer (counted, not timed: fake_rdma_rnr_timer()). Reads of
 *   CM channels are counted (fake_rdma_cm_reads()).
 * - Type 2 memory windows (none with FAKE_RDMA_NO_MW=1): bound by a work request over a
 *   registration that allows binding, with the rules the verbs specification sets (the
 *   window unbound, the range inside the registration, remote write only over local
 *   write, the key's index kept); reachable only from the peer of the queue pair it is
 *   bound on, with its rights and range; gone with a local invalidation, or with that
 *   queue pair, or with the peer's Send With Invalidate of its key (any other key in
 *   one fails the Send, LOC_PROT_ERR at the receiver, both queue pairs in error; the
 *   receive completes with IBV_WC_WITH_INV and the key). Binds and registrations are counted (fake_rdma_counts()); with
 *   FAKE_RDMA_MW_REFUSE=1 every bind fails, as on a device that advertises windows it
 *   cannot bind.
 *
 * Everything completes at once, under one lock. What the provider handed to the CM is
 * kept for the test to read: fake_rdma_last_pdata(). Not a model of timing, congestion,
 * or of several devices. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define MAX_MRS 4096
#define MAX_MWS 4096
#define CQ_CAP 8192
#define RQ_CAP 4096

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;

/* ---- what the provider handed over, for the test ---- */

enum { FAKE_CONNECT, FAKE_ACCEPT, FAKE_REJECT, FAKE_KINDS };

/* The private data last handed to rdma_connect (kind 0), rdma_accept (1) or rdma_reject
 * (2), copied to out (256 bytes); returns its length, -1 if none yet. */
FAKE_EXPORT int fake_rdma_last_pdata(int kind, uint8_t *out);

static uint8_t last_pdata[FAKE_KINDS][256];
static int last_len[FAKE_KINDS] = { -1, -1, -1 };

FAKE_EXPORT int fake_rdma_last_pdata(int kind, uint8_t *out)
{
	int n;

	pthread_mutex_lock(&big);
	n = kind >= 0 && kind < FAKE_KINDS ? last_len[kind] : -1;
	if (n > 0)
		memcpy(out, last_pdata[kind], (size_t)n);
	pthread_mutex_unlock(&big);
	return n;
}

static void keep_pdata(int kind, const void *p, uint8_t len)
{
	last_len[kind] = len;
	if (len)
		memcpy(last_pdata[kind], p, len);
}

/* ---- device ---- */

static struct ibv_device dev = { .name = "fakerdma0" };
static struct ibv_context ctx;
static int ctx_ready;

static int f_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int f_req_notify(struct ibv_cq *cq, int solicited);
static int f_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int f_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
static struct ibv_mw *f_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
static int f_dealloc_mw(struct ibv_mw *mw);

static struct ibv_context *the_ctx(void)
{
	if (!ctx_ready) {
		/* FAKE_RDMA_IWARP=1: an iWARP device, whose RDMA Read data lands as tagged
		 * writes, so the sink must be remotely writable too (send_one) */
		const char *iw = getenv("FAKE_RDMA_IWARP");

		dev.transport_type = iw && *iw == '1' ? IBV_TRANSPORT_IWARP : IBV_TRANSPORT_IB;
		dev.node_type = iw && *iw == '1' ? IBV_NODE_RNIC : IBV_NODE_CA;
		ctx.device = &dev;
		ctx.ops.poll_cq = f_poll_cq;
		ctx.ops.req_notify_cq = f_req_notify;
		ctx.ops.post_send = f_post_send;
		ctx.ops.post_recv = f_post_recv;
		ctx.ops.alloc_mw = f_alloc_mw;
		ctx.ops.dealloc_mw = f_dealloc_mw;
		ctx_ready = 1;
	}
	return &ctx;
}

FAKE_EXPORT struct ibv_context **rdma_get_devices(int *num)
{
	struct ibv_context **l = calloc(2, sizeof(*l));

	pthread_mutex_lock(&big);
	if (l)
		l[0] = the_ctx();
	pthread_mutex_unlock(&big);
	if (num)
		*num = l ? 1 : 0;
	return l;
}

FAKE_EXPORT void rdma_free_devices(struct ibv_context **l)
{
	free(l);
}

FAKE_EXPORT const char *ibv_get_device_name(struct ibv_device *d)
{
	return d->name;
}

/* FAKE_RDMA_SOFT_ROCE=1: soft-RoCE's vendor id, and its receive completions' flags as
 * its user-space provider hands them over (the kernel's, where IB_WC_WITH_INVALIDATE is
 * bit 2) */
static int fake_soft_roce(void)
{
	const char *e = getenv("FAKE_RDMA_SOFT_ROCE");

	return e && *e == '1';
}

FAKE_EXPORT int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *a)
{
	(void)c;
	memset(a, 0, sizeof(*a));
	a->max_qp_wr = 4096;
	a->max_sge = 30;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	if (!getenv("FAKE_RDMA_NO_MW") || *getenv("FAKE_RDMA_NO_MW") != '1')
		a->device_cap_flags = IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	a->device_cap_flags |= IBV_DEVICE_MEM_MGT_EXTENSIONS;   /* Send With Invalidate */
	if (fake_soft_roce())
		a->vendor_id = 0xffffff;
	return 0;
}

FAKE_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *c)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	if (pd)
		pd->context = c;
	return pd;
}

FAKE_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	return 0;
}

/* ---- memory ---- */

static struct ibv_mr *mrs[MAX_MRS];
static uint32_t next_key = 0x1000;
static unsigned regs_made, binds_made;

/* Registrations (ibv_reg_mr) and window binds made so far. */
FAKE_EXPORT void fake_rdma_counts(unsigned *regs, unsigned *binds);

FAKE_EXPORT void fake_rdma_counts(unsigned *regs, unsigned *binds)
{
	pthread_mutex_lock(&big);
	*regs = regs_made;
	*binds = binds_made;
	pthread_mutex_unlock(&big);
}

/* Whether the process may write at addr (its mapping in /proc/self/maps says "w"). */
static int writable(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi, a = (unsigned long)(uintptr_t)addr;
	char line[512], perms[8];
	int ok = 1;

	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi) {
			ok = perms[1] == 'w';
			break;
		}
	fclose(f);
	return ok;
}

static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t len, unsigned access)
{
	struct ibv_mr *m;
	int i;

	if ((access & IBV_ACCESS_REMOTE_WRITE) && !(access & IBV_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL;   /* as the verbs specification requires */
		return NULL;
	}
	/* the kernel pins the pages for writing when local write is asked: read-only memory
	 * (a string constant) fails so */
	if ((access & IBV_ACCESS_LOCAL_WRITE) && len && !writable(addr)) {
		errno = EFAULT;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&big);
	for (i = 0; i < MAX_MRS && mrs[i]; i++)
		;
	if (i == MAX_MRS) {
		pthread_mutex_unlock(&big);
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	m->context = pd->context;
	m->pd = pd;
	m->addr = addr;
	m->length = len;
	m->lkey = m->rkey = (next_key += 0x101);
	m->handle = access;   /* the rights, for the checks below */
	mrs[i] = m;
	regs_made++;
	pthread_mutex_unlock(&big);
	return m;
}

#undef ibv_reg_mr
FAKE_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return reg(pd, addr, len, (unsigned)access);
}

FAKE_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len,
					    uint64_t iova, unsigned access)
{
	(void)iova;
	return reg(pd, addr, len, access);
}

FAKE_EXPORT int ibv_dereg_mr(struct ibv_mr *m)
{
	int i;

	pthread_mutex_lock(&big);
	for (i = 0; i < MAX_MRS; i++)
		if (mrs[i] == m)
			mrs[i] = NULL;
	pthread_mutex_unlock(&big);
	free(m);
	return 0;
}

/* The registration key names that covers [addr, addr+len) with the right; NULL if
 * none (the caller holds the lock). */
static struct ibv_mr *mr_check(uint32_t key, uint64_t addr, uint64_t len, unsigned right)
{
	int i;

	for (i = 0; i < MAX_MRS; i++) {
		struct ibv_mr *m = mrs[i];

		if (m && m->rkey == key) {
			uint64_t lo = (uint64_t)(uintptr_t)m->addr;

			if (addr < lo || addr + len > lo + m->length || addr + len < addr ||
			    (m->handle & right) != right)
				return NULL;
			return m;
		}
	}
	return NULL;
}

/* ---- memory windows (type 2) ---- */

struct fqp;

struct fmw {
	struct ibv_mw mw;     /* first; rkey: the slot's index above a key byte */
	int bound;
	struct fqp *qp;       /* bound on this queue pair: only its peer reaches it */
	uint64_t addr, len;
	unsigned rights;
};

static struct fmw *mws[MAX_MWS];

static struct ibv_mw *f_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct fmw *w;
	int i;

	if (type != IBV_MW_TYPE_2) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&big);
	for (i = 0; i < MAX_MWS && mws[i]; i++)
		;
	if (i == MAX_MWS) {
		pthread_mutex_unlock(&big);
		free(w);
		errno = ENOMEM;
		return NULL;
	}
	w->mw.context = pd->context;
	w->mw.pd = pd;
	w->mw.type = type;
	w->mw.rkey = (uint32_t)(i + 1) << 8 | 0x5a;
	mws[i] = w;
	pthread_mutex_unlock(&big);
	return &w->mw;
}

static int f_dealloc_mw(struct ibv_mw *mw)
{
	pthread_mutex_lock(&big);
	mws[(mw->rkey >> 8) - 1] = NULL;
	pthread_mutex_unlock(&big);
	free(mw);
	return 0;
}

/* The window the key names (any key byte); NULL if none (the caller holds the lock). */
static struct fmw *mw_of(uint32_t key)
{
	uint32_t i = key >> 8;

	return i >= 1 && i <= MAX_MWS ? mws[i - 1] : NULL;
}

/* Whether the window key names, bound on target with this key, covers the bytes with
 * the right. */
static int mw_check(uint32_t key, uint64_t addr, uint64_t len, unsigned right,
		    const struct fqp *target)
{
	struct fmw *w = mw_of(key);

	return w && w->bound && w->mw.rkey == key && w->qp == target && addr >= w->addr &&
	       addr + len >= addr && addr + len <= w->addr + w->len && (w->rights & right) == right;
}

/* The checks a device makes on a bind (verbs specification C10-72..75, o10-36.2.2);
 * 0 when the window is bound. */
static int mw_bind(struct fqp *q, const struct ibv_send_wr *wr)
{
	const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;
	struct fmw *w = mw_of(wr->bind_mw.mw->rkey);
	uint64_t lo = b->mr ? (uint64_t)(uintptr_t)b->mr->addr : 0;
	unsigned mra = b->mr ? b->mr->handle : 0;
	const char *refuse = getenv("FAKE_RDMA_MW_REFUSE");   /* a device that fails binds */

	if ((refuse && *refuse == '1') || !w || &w->mw != wr->bind_mw.mw || w->mw.rkey != wr->bind_mw.mw->rkey || w->bound ||
	    (wr->bind_mw.rkey >> 8) != (w->mw.rkey >> 8) || !b->mr || !b->length ||
	    !(mra & IBV_ACCESS_MW_BIND) ||
	    ((b->mw_access_flags & IBV_ACCESS_REMOTE_WRITE) && !(mra & IBV_ACCESS_LOCAL_WRITE)) ||
	    b->addr < lo || b->addr + b->length > lo + b->mr->length)
		return -1;
	w->bound = 1;
	w->qp = q;
	w->addr = b->addr;
	w->len = b->length;
	w->rights = b->mw_access_flags;
	w->mw.rkey = wr->bind_mw.rkey;
	binds_made++;
	return 0;
}

static int mw_invalidate(struct fqp *q, uint32_t key)
{
	struct fmw *w = mw_of(key);

	if (!w || !w->bound || w->mw.rkey != key || w->qp != q)
		return -1;
	w->bound = 0;
	w->qp = NULL;
	return 0;
}

/* A destroyed queue pair's windows are reachable no more. */
static void mw_forget_qp(const struct fqp *q)
{
	int i;

	for (i = 0; i < MAX_MWS; i++)
		if (mws[i] && mws[i]->qp == q) {
			mws[i]->bound = 0;
			mws[i]->qp = NULL;
		}
}

/* ---- completion queues and channels ---- */

struct fcq {
	struct ibv_cq cq;   /* first */
	struct ibv_wc ring[CQ_CAP];
	unsigned head, n;
	int armed;
};

FAKE_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c)
{
	struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->context = c;
	ch->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return ch;
}

FAKE_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	close(ch->fd);
	free(ch);
	return 0;
}

FAKE_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *cq_ctx,
					 struct ibv_comp_channel *ch, int vec)
{
	struct fcq *f = calloc(1, sizeof(*f));

	(void)vec;
	if (!f || cqe > CQ_CAP) {
		free(f);
		errno = EINVAL;
		return NULL;
	}
	f->cq.context = c;
	f->cq.channel = ch;
	f->cq.cq_context = cq_ctx;
	f->cq.cqe = cqe;
	return &f->cq;
}

FAKE_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	free(cq);
	return 0;
}

static void signal_fd(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0)
		abort();
}

static struct ibv_wc *cq_push(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status st,
			      enum ibv_wc_opcode op, uint32_t len, uint32_t qp_num)
{
	struct fcq *f = (struct fcq *)cq;
	struct ibv_wc *w;

	if (f->n == CQ_CAP)
		abort();   /* a CQ overrun: the provider sized its CQ wrongly */
	w = &f->ring[(f->head + f->n++) % CQ_CAP];
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->status = st;
	w->opcode = op;
	w->byte_len = len;
	w->qp_num = qp_num;
	if (f->armed && cq->channel) {
		f->armed = 0;
		signal_fd(cq->channel->fd);
	}
	return w;
}

static int f_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fcq *f = (struct fcq *)cq;
	int k = 0;

	pthread_mutex_lock(&big);
	while (k < n && f->n) {
		wc[k++] = f->ring[f->head];
		f->head = (f->head + 1) % CQ_CAP;
		f->n--;
	}
	pthread_mutex_unlock(&big);
	return k;
}

static int f_req_notify(struct ibv_cq *cq, int solicited)
{
	struct fcq *f = (struct fcq *)cq;

	(void)solicited;
	pthread_mutex_lock(&big);
	f->armed = 1;
	pthread_mutex_unlock(&big);
	return 0;
}

FAKE_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_ctx)
{
	uint64_t v;

	if (read(ch->fd, &v, sizeof(v)) != sizeof(v))
		return -1;
	*cq = NULL;
	*cq_ctx = NULL;
	return 0;
}

FAKE_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned n)
{
	(void)cq;
	(void)n;
}

/* ---- CM ids and events ---- */

struct fevent {
	struct rdma_cm_event ev;   /* first */
	uint8_t pdata[256];
	struct fevent *next;
};

struct fch {
	struct rdma_event_channel ch;   /* first */
	struct fevent *head, *tail;
};

struct fqp;

struct fid {
	struct rdma_cm_id id;   /* first */
	struct fid *peer;       /* the other end of the connection */
	struct fid *client;     /* a request's: the connecting id */
	int listening, connected, disconnected;
	struct fid *next_listener;
};

struct precv {
	uint64_t wr_id;
	uint64_t addr;
	uint32_t len, lkey;
};

#define FAKE_MAX_INLINE 128u   /* what the stand-in device offers inline, at most */

struct fqp {
	struct ibv_qp qp;   /* first */
	struct fid *id;
	int err;
	uint8_t max_rd_atomic;   /* RDMA Reads it may have outstanding: the initiator depth
				    of its rdma_connect() or rdma_accept() */
	uint32_t max_inline;
	struct precv rq[RQ_CAP];
	unsigned rq_head, rq_n;
	struct pending_send *sends;   /* Sends waiting for a receive here */
};

struct pending_send {
	struct fqp *from;
	uint64_t wr_id;
	int inv;                 /* Send With Invalidate of inv_rkey at the receiver */
	uint32_t inv_rkey;
	uint8_t *data;
	uint32_t len;
	struct pending_send *next;
};

static struct fid *listeners;
static uint16_t next_port = 40000;
static uint32_t next_qpn = 100;

FAKE_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct fch *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	return &c->ch;
}

FAKE_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
	struct fch *c = (struct fch *)ch;

	while (c->head) {
		struct fevent *e = c->head;

		c->head = e->next;
		free(e);
	}
	close(ch->fd);
	free(c);
}

/* Queue an event on id's channel, with private data padded to pad bytes. */
static void post_event(struct fid *to, struct fid *ev_id, enum rdma_cm_event_type type,
		       int status, const void *pdata, uint8_t len, uint8_t pad,
		       const struct rdma_conn_param *cp)
{
	struct fch *c = (struct fch *)to->id.channel;
	struct fevent *e = calloc(1, sizeof(*e));

	if (!e)
		abort();
	e->ev.id = &ev_id->id;
	e->ev.listen_id = ev_id == to ? NULL : &to->id;
	e->ev.event = type;
	e->ev.status = status;
	/* as the IB CM hands them over (cm_format_req_event, cm_format_rep_event): seen from
	 * the receiving side, the peer's initiator depth is the responder resources it needs
	 * here, and the peer's responder resources the depth it may initiate to */
	if (cp) {
		e->ev.param.conn.responder_resources = cp->initiator_depth;
		e->ev.param.conn.initiator_depth = cp->responder_resources;
	}
	if (pad) {
		if (len)
			memcpy(e->pdata, pdata, len);
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = pad;
	}
	if (c->tail)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	signal_fd(c->ch.fd);
}

static unsigned cm_reads;   /* rdma_get_cm_event calls: each is a system call in rdma-core */

/* rdma_get_cm_event calls so far. */
FAKE_EXPORT unsigned fake_rdma_cm_reads(void);

FAKE_EXPORT unsigned fake_rdma_cm_reads(void)
{
	return __atomic_load_n(&cm_reads, __ATOMIC_RELAXED);
}

FAKE_EXPORT int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	struct fch *c = (struct fch *)ch;
	struct fevent *e;
	uint64_t v;

	__atomic_add_fetch(&cm_reads, 1, __ATOMIC_RELAXED);

	if (read(ch->fd, &v, sizeof(v)) != sizeof(v)) {
		errno = EAGAIN;
		return -1;
	}
	pthread_mutex_lock(&big);
	e = c->head;
	if (e) {
		c->head = e->next;
		if (!c->head)
			c->tail = NULL;
	}
	pthread_mutex_unlock(&big);
	if (!e) {
		errno = EAGAIN;
		return -1;
	}
	*ev = &e->ev;
	return 0;
}

FAKE_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *ev)
{
	free(ev);
	return 0;
}

FAKE_EXPORT int rdma_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **out,
			       void *context, enum rdma_port_space ps)
{
	struct fid *f = calloc(1, sizeof(*f));

	if (!f) {
		errno = ENOMEM;
		return -1;
	}
	f->id.channel = ch;
	f->id.context = context;
	f->id.ps = ps;
	*out = &f->id;
	return 0;
}

FAKE_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *ch)
{
	pthread_mutex_lock(&big);
	id->channel = ch;
	pthread_mutex_unlock(&big);
	return 0;
}

FAKE_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int opt, void *v, size_t len)
{
	(void)id, (void)level, (void)opt, (void)v, (void)len;
	return 0;
}

static uint16_t addr_port(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
					 : ((const struct sockaddr_in *)sa)->sin_port;
}

static void set_port(struct sockaddr *sa, uint16_t port_be)
{
	if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = port_be;
	else
		((struct sockaddr_in *)sa)->sin_port = port_be;
}

static size_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

FAKE_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct fid *l;

	pthread_mutex_lock(&big);
	memcpy(&id->route.addr.src_storage, addr, sa_len(addr));
	if (!addr_port(addr))
		set_port(&id->route.addr.src_addr, htons(next_port++));
	for (l = listeners; l; l = l->next_listener)
		if (addr_port(&l->id.route.addr.src_addr) == addr_port(&id->route.addr.src_addr)) {
			pthread_mutex_unlock(&big);
			errno = EADDRINUSE;
			return -1;
		}
	id->verbs = the_ctx();
	pthread_mutex_unlock(&big);
	return 0;
}

FAKE_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return addr_port(&id->route.addr.src_addr);
}

FAKE_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return addr_port(&id->route.addr.dst_addr);
}

FAKE_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct fid *f = (struct fid *)id;

	(void)backlog;
	pthread_mutex_lock(&big);
	f->listening = 1;
	f->next_listener = listeners;
	listeners = f;
	pthread_mutex_unlock(&big);
	return 0;
}

FAKE_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src,
				  struct sockaddr *dst, int timeout_ms)
{
	struct fid *f = (struct fid *)id;

	(void)src, (void)timeout_ms;
	pthread_mutex_lock(&big);
	memcpy(&id->route.addr.dst_storage, dst, sa_len(dst));
	memcpy(&id->route.addr.src_storage, dst, sa_len(dst));   /* loopback */
	set_port(&id->route.addr.src_addr, htons(next_port++));
	id->verbs = the_ctx();
	post_event(f, f, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, 0, 0, NULL);
	pthread_mutex_unlock(&big);
	return 0;
}

FAKE_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct fid *f = (struct fid *)id;

	(void)timeout_ms;
	pthread_mutex_lock(&big);
	post_event(f, f, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, 0, 0, NULL);
	pthread_mutex_unlock(&big);
	return 0;
}

FAKE_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			       struct ibv_qp_init_attr *a)
{
	struct fqp *q;

	if (a->cap.max_recv_wr > RQ_CAP || a->qp_type != IBV_QPT_RC) {
		errno = EINVAL;
		return -1;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return -1;
	}
	pthread_mutex_lock(&big);
	q->qp.context = id->verbs;
	q->qp.pd = pd;
	q->qp.send_cq = a->send_cq;
	q->qp.recv_cq = a->recv_cq;
	q->qp.qp_num = next_qpn++;
	q->qp.qp_type = IBV_QPT_RC;
	q->id = (struct fid *)id;
	/* a device gives at most what it has, and says what it gave */
	if (a->cap.max_inline_data > FAKE_MAX_INLINE)
		a->cap.max_inline_data = FAKE_MAX_INLINE;
	q->max_inline = a->cap.max_inline_data;
	id->qp = &q->qp;
	pthread_mutex_unlock(&big);
	return 0;
}

static struct fqp *peer_qp(struct fqp *q)
{
	struct fid *p = q->id ? q->id->peer : NULL;

	return p && p->id.qp ? (struct fqp *)p->id.qp : NULL;
}

/* Into the error state: posted receives and waiting Sends come back flushed. */
static void qp_error(struct fqp *q)
{
	if (!q || q->err)
		return;
	q->err = 1;
	while (q->rq_n) {
		struct precv *r = &q->rq[q->rq_head];

		cq_push(q->qp.recv_cq, r->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, q->qp.qp_num);
		q->rq_head = (q->rq_head + 1) % RQ_CAP;
		q->rq_n--;
	}
	while (q->sends) {
		struct pending_send *s = q->sends;

		q->sends = s->next;
		if (s->from && !s->from->err)
			cq_push(s->from->qp.send_cq, s->wr_id, IBV_WC_RETRY_EXC_ERR, IBV_WC_SEND, 0,
				s->from->qp.qp_num);
		free(s->data);
		free(s);
	}
}

FAKE_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct fqp *q = (struct fqp *)id->qp;
	struct fqp *p;

	if (!q)
		return;
	pthread_mutex_lock(&big);
	qp_error(q);
	p = peer_qp(q);
	if (p) {
		struct pending_send *s;

		for (s = p->sends; s; s = s->next)
			if (s->from == q)
				s->from = NULL;   /* no completion for a destroyed QP */
	}
	id->qp = NULL;
	q->id = NULL;
	mw_forget_qp(q);
	pthread_mutex_unlock(&big);
	free(q);
}

/* The local pieces: every lkey must name a registration covering its piece. */
static int lkeys_ok(const struct ibv_sge *sg, int n, unsigned right)
{
	int i;

	for (i = 0; i < n; i++)
		if (!mr_check(sg[i].lkey, sg[i].addr, sg[i].length, right))
			return 0;
	return 1;
}

static uint32_t sge_total(const struct ibv_sge *sg, int n)
{
	uint32_t t = 0;
	int i;

	for (i = 0; i < n; i++)
		t += sg[i].length;
	return t;
}

static void deliver(struct fqp *to, struct pending_send *s)
{
	struct precv *r = &to->rq[to->rq_head];

	to->rq_head = (to->rq_head + 1) % RQ_CAP;
	to->rq_n--;
	if (s->len > r->len) {
		cq_push(to->qp.recv_cq, r->wr_id, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, to->qp.qp_num);
		if (s->from)
			cq_push(s->from->qp.send_cq, s->wr_id, IBV_WC_REM_INV_REQ_ERR, IBV_WC_SEND, 0,
				s->from->qp.qp_num);
		qp_error(to);
		qp_error(s->from);
	} else if (s->inv && mw_invalidate(to, s->inv_rkey)) {
		/* only a type 2 window bound on the receiving QP can be invalidated so (a
		 * registration of ibv_reg_mr cannot): the device refuses the Send */
		cq_push(to->qp.recv_cq, r->wr_id, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, to->qp.qp_num);
		if (s->from)
			cq_push(s->from->qp.send_cq, s->wr_id, IBV_WC_REM_INV_REQ_ERR, IBV_WC_SEND, 0,
				s->from->qp.qp_num);
		qp_error(to);
		qp_error(s->from);
	} else {
		struct ibv_wc *w;

		memcpy((void *)(uintptr_t)r->addr, s->data, s->len);
		w = cq_push(to->qp.recv_cq, r->wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, s->len,
			    to->qp.qp_num);
		if (s->inv) {
			/* soft-RoCE's provider passes the kernel's flag: its bit 2 */
			w->wc_flags |= fake_soft_roce() ? 1u << 2 : IBV_WC_WITH_INV;
			w->invalidated_rkey = s->inv_rkey;
		}
		if (s->from)
			cq_push(s->from->qp.send_cq, s->wr_id, IBV_WC_SUCCESS, IBV_WC_SEND, s->len,
				s->from->qp.qp_num);
	}
	free(s->data);
	free(s);
}

static void deliver_waiting(struct fqp *to)
{
	while (!to->err && to->sends && to->rq_n) {
		struct pending_send *s = to->sends;

		to->sends = s->next;
		deliver(to, s);
	}
}

static void do_send(struct fqp *q, struct fqp *p, const struct ibv_send_wr *wr)
{
	struct pending_send *s, **tail;
	uint32_t off = 0;
	int i;

	/* iWARP has no RNR retry: a Send that finds no receive posted makes the receiver
	 * terminate the connection (no untagged buffer for it: DDP, RFC 5041) */
	if (dev.transport_type == IBV_TRANSPORT_IWARP && !p->rq_n) {
		cq_push(q->qp.send_cq, wr->wr_id, IBV_WC_REM_OP_ERR, IBV_WC_SEND, 0, q->qp.qp_num);
		qp_error(q);
		qp_error(p);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		abort();
	s->from = q;
	s->wr_id = wr->wr_id;
	s->inv = wr->opcode == IBV_WR_SEND_WITH_INV;
	s->inv_rkey = wr->invalidate_rkey;
	s->len = sge_total(wr->sg_list, wr->num_sge);
	s->data = malloc(s->len ? s->len : 1);
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(s->data + off, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
		off += wr->sg_list[i].length;
	}
	for (tail = &p->sends; *tail; tail = &(*tail)->next)
		;
	*tail = s;
	deliver_waiting(p);
}

/* RDMA Read/Write: one remote segment, the local pieces in order. */
static int do_rma(const struct ibv_send_wr *wr, const struct fqp *target)
{
	int write = wr->opcode == IBV_WR_RDMA_WRITE;
	uint32_t len = sge_total(wr->sg_list, wr->num_sge), off = 0;
	uint8_t *remote;
	int i;

	unsigned right = write ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ;

	if (!mr_check(wr->wr.rdma.rkey, wr->wr.rdma.remote_addr, len, right) &&
	    !mw_check(wr->wr.rdma.rkey, wr->wr.rdma.remote_addr, len, right, target))
		return 0;
	remote = (uint8_t *)(uintptr_t)wr->wr.rdma.remote_addr;
	for (i = 0; i < wr->num_sge; i++) {
		void *local = (void *)(uintptr_t)wr->sg_list[i].addr;

		if (write)
			memcpy(remote + off, local, wr->sg_list[i].length);
		else
			memcpy(local, remote + off, wr->sg_list[i].length);
		off += wr->sg_list[i].length;
	}
	return 1;
}

/* A bind or a local invalidation: done at once, no peer involved; a broken rule is an
 * error completion and the queue pair in error, as on a device. */
static void window_op(struct fqp *q, const struct ibv_send_wr *wr)
{
	int bind = wr->opcode == IBV_WR_BIND_MW;
	int rc = bind ? mw_bind(q, wr) : mw_invalidate(q, wr->invalidate_rkey);

	if (rc) {
		cq_push(q->qp.send_cq, wr->wr_id, bind ? IBV_WC_MW_BIND_ERR : IBV_WC_LOC_PROT_ERR,
			bind ? IBV_WC_BIND_MW : IBV_WC_LOCAL_INV, 0, q->qp.qp_num);
		qp_error(q);
		qp_error(peer_qp(q));
		return;
	}
	cq_push(q->qp.send_cq, wr->wr_id, IBV_WC_SUCCESS, bind ? IBV_WC_BIND_MW : IBV_WC_LOCAL_INV,
		0, q->qp.qp_num);
}

static void send_one(struct fqp *q, const struct ibv_send_wr *wr)
{
	struct fqp *p = peer_qp(q);
	int send = wr->opcode == IBV_WR_SEND || wr->opcode == IBV_WR_SEND_WITH_INV;
	enum ibv_wc_opcode op = send ? IBV_WC_SEND
			      : wr->opcode == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE;
	unsigned lright = wr->opcode != IBV_WR_RDMA_READ ? 0
			: dev.transport_type == IBV_TRANSPORT_IWARP
				? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE
				: IBV_ACCESS_LOCAL_WRITE;

	if (q->err) {
		cq_push(q->qp.send_cq, wr->wr_id, IBV_WC_WR_FLUSH_ERR, op, 0, q->qp.qp_num);
		return;
	}
	if (wr->opcode == IBV_WR_BIND_MW || wr->opcode == IBV_WR_LOCAL_INV) {
		window_op(q, wr);
		return;
	}
	if (!lkeys_ok(wr->sg_list, wr->num_sge, lright)) {
		cq_push(q->qp.send_cq, wr->wr_id, IBV_WC_LOC_PROT_ERR, op, 0, q->qp.qp_num);
		qp_error(q);
		qp_error(p);
		return;
	}
	if (!p || p->err) {
		cq_push(q->qp.send_cq, wr->wr_id, IBV_WC_RETRY_EXC_ERR, op, 0, q->qp.qp_num);
		qp_error(q);
		return;
	}
	/* a QP with no initiator depth never issues a Read (soft-RoCE waits for ever; here it
	 * fails, so that a test sees it) */
	if (wr->opcode == IBV_WR_RDMA_READ && !q->max_rd_atomic) {
		cq_push(q->qp.send_cq, wr->wr_id, IBV_WC_REM_INV_REQ_ERR, op, 0, q->qp.qp_num);
		qp_error(q);
		qp_error(p);
		return;
	}
	if (send) {
		do_send(q, p, wr);
	} else if (do_rma(wr, p)) {
		cq_push(q->qp.send_cq, wr->wr_id, IBV_WC_SUCCESS, op,
			sge_total(wr->sg_list, wr->num_sge), q->qp.qp_num);
	} else {
		cq_push(q->qp.send_cq, wr->wr_id, IBV_WC_REM_ACCESS_ERR, op, 0, q->qp.qp_num);
		qp_error(q);
		qp_error(p);
	}
}

static unsigned inline_sends;

/* Sends posted with IBV_SEND_INLINE so far. */
FAKE_EXPORT unsigned fake_rdma_inline_sends(void);

FAKE_EXPORT unsigned fake_rdma_inline_sends(void)
{
	unsigned n;

	pthread_mutex_lock(&big);
	n = inline_sends;
	pthread_mutex_unlock(&big);
	return n;
}

static unsigned rnr_timers_set;
static uint8_t last_rnr_timer;

/* Queue pairs whose minimum RNR timer was set so far, and the last value set. */
FAKE_EXPORT unsigned fake_rdma_rnr_timer(uint8_t *last);

FAKE_EXPORT unsigned fake_rdma_rnr_timer(uint8_t *last)
{
	unsigned n;

	pthread_mutex_lock(&big);
	n = rnr_timers_set;
	*last = last_rnr_timer;
	pthread_mutex_unlock(&big);
	return n;
}

/* Only what the provider asks: the minimum RNR timer of a connected queue pair (an
 * optional attribute of the RTS to RTS transition); the RDMA CM left it at 0. */
FAKE_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct fqp *q = (struct fqp *)qp;
	int rc = 0;

	pthread_mutex_lock(&big);
	if (mask != IBV_QP_MIN_RNR_TIMER || !q->id || !q->id->connected || q->err ||
	    attr->min_rnr_timer > 31) {
		rc = EINVAL;
	} else {
		last_rnr_timer = attr->min_rnr_timer;
		rnr_timers_set++;
	}
	pthread_mutex_unlock(&big);
	errno = rc;
	return rc;
}

static int f_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct fqp *q = (struct fqp *)qp;

	pthread_mutex_lock(&big);
	for (; wr; wr = wr->next) {
		if ((wr->send_flags & IBV_SEND_INLINE) &&
		    (wr->opcode == IBV_WR_RDMA_READ ||
		     sge_total(wr->sg_list, wr->num_sge) > q->max_inline)) {
			/* as a device does: refused at post time */
			pthread_mutex_unlock(&big);
			*bad = wr;
			return EINVAL;
		}
		inline_sends += (wr->send_flags & IBV_SEND_INLINE) != 0;
		send_one(q, wr);
	}
	pthread_mutex_unlock(&big);
	*bad = NULL;
	return 0;
}

static int f_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct fqp *q = (struct fqp *)qp;

	pthread_mutex_lock(&big);
	for (; wr; wr = wr->next) {
		if (q->err) {
			cq_push(q->qp.recv_cq, wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0,
				q->qp.qp_num);
			continue;
		}
		if (q->rq_n == RQ_CAP || wr->num_sge != 1) {
			pthread_mutex_unlock(&big);
			*bad = wr;
			return ENOMEM;
		}
		q->rq[(q->rq_head + q->rq_n++) % RQ_CAP] =
			(struct precv){ wr->wr_id, wr->sg_list[0].addr, wr->sg_list[0].length,
					wr->sg_list[0].lkey };
	}
	deliver_waiting(q);
	pthread_mutex_unlock(&big);
	*bad = NULL;
	return 0;
}

/* ---- connections ---- */

static struct fid *find_listener(uint16_t port_be)
{
	struct fid *l;

	for (l = listeners; l; l = l->next_listener)
		if (addr_port(&l->id.route.addr.src_addr) == port_be)
			return l;
	return NULL;
}

FAKE_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *given)
{
	struct fid *f = (struct fid *)id, *l, *child;
	struct rdma_conn_param c = *given, *cp = &c;

	pthread_mutex_lock(&big);
	keep_pdata(FAKE_CONNECT, cp->private_data, cp->private_data_len);
	/* FAKE_RDMA_LINUX_CLIENT=1: connect as Linux's xprtrdma client does, offering RDMA
	 * Read responder resources but an initiator depth of 0 */
	if (getenv("FAKE_RDMA_LINUX_CLIENT"))
		cp->initiator_depth = 0;
	if (id->qp)
		((struct fqp *)id->qp)->max_rd_atomic = cp->initiator_depth;
	l = find_listener(addr_port(&id->route.addr.dst_addr));
	if (!l) {   /* nobody there: IB_CM_REJ_INVALID_SERVICE_ID */
		post_event(f, f, RDMA_CM_EVENT_REJECTED, 8, NULL, 0, 148, NULL);
		pthread_mutex_unlock(&big);
		return 0;
	}
	child = calloc(1, sizeof(*child));
	if (!child)
		abort();
	child->id.channel = l->id.channel;
	child->id.context = l->id.context;
	child->id.verbs = the_ctx();
	child->id.ps = l->id.ps;
	memcpy(&child->id.route.addr.src_storage, &id->route.addr.dst_storage,
	       sizeof(child->id.route.addr.src_storage));
	memcpy(&child->id.route.addr.dst_storage, &id->route.addr.src_storage,
	       sizeof(child->id.route.addr.dst_storage));
	child->client = f;
	post_event(l, child, RDMA_CM_EVENT_CONNECT_REQUEST, 0, cp->private_data,
		   cp->private_data_len, 56, cp);
	pthread_mutex_unlock(&big);
	return 0;
}

FAKE_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *cp)
{
	struct fid *child = (struct fid *)id, *c = child->client;

	pthread_mutex_lock(&big);
	keep_pdata(FAKE_ACCEPT, cp->private_data, cp->private_data_len);
	if (!c || !child->id.qp || !c->id.qp) {
		pthread_mutex_unlock(&big);
		errno = EINVAL;
		return -1;
	}
	((struct fqp *)child->id.qp)->max_rd_atomic = cp->initiator_depth;
	child->peer = c;
	c->peer = child;
	child->connected = c->connected = 1;
	post_event(c, c, RDMA_CM_EVENT_ESTABLISHED, 0, cp->private_data, cp->private_data_len,
		   196, cp);
	post_event(child, child, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0, 0, NULL);
	pthread_mutex_unlock(&big);
	/* the passive side learns last (InfiniBand's RTU, iWARP's MPA reply go one way): its
	 * client may send before it returns from here */
	nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
	return 0;
}

FAKE_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	struct fid *child = (struct fid *)id, *c = child->client;

	pthread_mutex_lock(&big);
	keep_pdata(FAKE_REJECT, pdata, len);
	if (c)   /* IB_CM_REJ_CONSUMER_DEFINED */
		post_event(c, c, RDMA_CM_EVENT_REJECTED, 28, pdata, len, 148, NULL);
	child->client = NULL;
	pthread_mutex_unlock(&big);
	return 0;
}

/* Both ends: queue pairs in error, DISCONNECTED on each channel, once. */
static void disconnect(struct fid *f)
{
	struct fid *p = f->peer;

	if (!f->connected || f->disconnected)
		return;
	f->disconnected = 1;
	qp_error((struct fqp *)f->id.qp);
	post_event(f, f, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0, 0, NULL);
	if (p && !p->disconnected) {
		p->disconnected = 1;
		qp_error((struct fqp *)p->id.qp);
		post_event(p, p, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0, 0, NULL);
	}
}

FAKE_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct fid *f = (struct fid *)id;

	pthread_mutex_lock(&big);
	if (!f->connected) {
		qp_error((struct fqp *)id->qp);
		pthread_mutex_unlock(&big);
		errno = EINVAL;
		return -1;
	}
	disconnect(f);
	pthread_mutex_unlock(&big);
	return 0;
}

FAKE_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct fid *f = (struct fid *)id, **l;
	struct fch *c;
	struct fevent *e;

	pthread_mutex_lock(&big);
	disconnect(f);
	if (f->peer)
		f->peer->peer = NULL;
	for (l = &listeners; *l; l = &(*l)->next_listener)
		if (*l == f) {
			*l = f->next_listener;
			break;
		}
	/* events of this id not yet taken are never delivered */
	c = (struct fch *)id->channel;
	for (l = NULL, e = c ? c->head : NULL; e;) {
		struct fevent *next = e->next;

		if (e->ev.id == id || e->ev.listen_id == id) {
			struct fevent **pp = &c->head;

			while (*pp != e)
				pp = &(*pp)->next;
			*pp = next;
			free(e);
		}
		e = next;
	}
	if (c) {
		for (c->tail = c->head; c->tail && c->tail->next; c->tail = c->tail->next)
			;
	}
	pthread_mutex_unlock(&big);
	free(f);
	return 0;
}
