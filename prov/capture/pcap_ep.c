/* SPDX-License-Identifier: BSD-2-Clause */
/* Capture of one endpoint: the connection's synthetic addressing (addresses, QP numbers,
 * PSNs), and the frames for each event the provider layer reports. An endpoint is used by
 * one thread at a time, so this state needs no lock; the sink has its own. */
#include <ctype.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pcap_int.h"
#include "prov_int.h"

#define NAME_MAX_LEN 128
#define PEND_BUCKETS 64
#define CM_QKEY 0x80010000u   /* the GSI's well-known Q_Key */

/* A posted receive, or an RDMA Read waiting for its data. */
struct pend {
	struct pend *next;
	void *ctx;
	uint32_t psn;                    /* Read: the first request's PSN */
	uint32_t nlocal, nremote;
	struct rpcrdma_sge *local;       /* Receive: one piece */
	struct rpcrdma_segment *remote;
};

/* The read segments of a message of ours, kept by XID until the peer's answer shows
 * that it has read them (a reply to our call; RDMA_DONE for our reply). */
struct peer_reads {
	struct peer_reads *next;
	uint32_t xid, n;
	struct rpcrdma_segment seg[];
};
#define PEER_READS_MAX 4096

struct cap_ep {
	struct rpcrdma_pcap *sink;
	const struct rpcrdma_prov *prov;
	int active;
	struct peer_reads *peer_reads;
	uint32_t npeer_reads;
	struct rpcrdma_msg_storage *st;  /* decoding, for the peer's operations */
	struct cap_path out, in;         /* our frames to the peer; the peer's to us */
	uint32_t psn_out, psn_in, msn;
	uint32_t snaplen;
	struct pend *pend[PEND_BUCKETS];
	uint8_t frame[CAP_FRAME_MAX];
};

/* Payload source: pieces of local memory, consumed in order. */
struct cursor {
	const struct rpcrdma_sge *sge;
	uint32_t n, i;
	size_t off;
};

/* Copy len bytes to dst (NULL: skip them). */
static void cursor_copy(struct cursor *c, uint8_t *dst, size_t len)
{
	while (len && c->i < c->n) {
		size_t k = c->sge[c->i].len - c->off;

		if (k > len)
			k = len;
		if (dst) {
			memcpy(dst, (const uint8_t *)c->sge[c->i].addr + c->off, k);
			dst += k;
		}
		len -= k;
		c->off += k;
		if (c->off == c->sge[c->i].len) {
			c->i++;
			c->off = 0;
		}
	}
}

/* The opcodes of one message kind, and its extended headers. */
struct opset {
	uint8_t first, middle, last, only;
	const uint8_t *ext_first;        /* also on ONLY */
	size_t ext_first_len;
	const uint8_t *ext_last;
	size_t ext_last_len;
};

static uint32_t packets(uint64_t len)
{
	return len ? (uint32_t)((len + RPCRDMA_PCAP_MTU - 1) / RPCRDMA_PCAP_MTU) : 1;
}

/* What a cut frame keeps of its pad and CRC: zeros, not a previous frame's bytes. */
static void zero_tail(uint8_t *frame, size_t from, size_t to)
{
	if (to > from)
		memset(frame + from, 0, to - from);
}

/* One message as frames of at most the MTU; returns the PSN after it. */
static uint32_t emit(struct cap_ep *s, const struct cap_path *p, uint32_t psn,
		     const struct opset *o, struct cursor *cur, uint64_t total)
{
	uint64_t off = 0;

	do {
		size_t n = total - off > RPCRDMA_PCAP_MTU ? RPCRDMA_PCAP_MTU : (size_t)(total - off);
		int first = off == 0, last = off + n == total;
		uint8_t op = first && last ? o->only : first ? o->first : last ? o->last : o->middle;
		const uint8_t *ext = first ? o->ext_first : last ? o->ext_last : NULL;
		size_t ext_len = first ? o->ext_first_len : last ? o->ext_last_len : 0;
		size_t hdr = rpcrdma__cap_headers(s->frame, p, op, psn, ext, ext_len);
		size_t len = hdr + n + ((4 - (n & 3)) & 3) + CAP_ICRC_LEN;
		/* bytes past the snap length are neither copied nor checksummed */
		int whole = len <= s->snaplen;
		size_t keep = whole ? n : s->snaplen > hdr ? s->snaplen - hdr : 0;

		if (keep > n)
			keep = n;
		cursor_copy(cur, s->frame + hdr, keep);
		cursor_copy(cur, NULL, n - keep);
		rpcrdma__cap_finish(s->frame, p, hdr, n, whole);
		if (!whole)
			zero_tail(s->frame, hdr + keep, s->snaplen < len ? s->snaplen : len);
		rpcrdma__cap_put(s->sink, s->frame, len);
		psn = (psn + 1) & 0xffffff;
		off += n;
	} while (off < total);
	return psn;
}

static void emit_send(struct cap_ep *s, const struct cap_path *p, uint32_t *psn,
		      const void *data, uint32_t len)
{
	static const struct opset send_ops = { IB_SEND_FIRST, IB_SEND_MIDDLE, IB_SEND_LAST,
					       IB_SEND_ONLY, NULL, 0, NULL, 0 };
	struct rpcrdma_sge piece = { NULL, (void *)(uintptr_t)data, len };
	struct cursor cur = { &piece, 1, 0, 0 };

	rpcrdma__cap_count_send(s->sink, data, len);
	*psn = emit(s, p, *psn, &send_ops, &cur, len);
}

/* ---- addressing ---- */

static uint64_t fnv1a(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t mix(uint64_t key, uint64_t salt)
{
	return fnv1a(0xcbf29ce484222325ull, &(uint64_t){ key ^ salt }, sizeof(uint64_t));
}

struct names {
	uint8_t local[NAME_MAX_LEN], peer[NAME_MAX_LEN];
	size_t llen, plen;
};

static int is_inet(const uint8_t *n, size_t len, int *v6)
{
	sa_family_t fam;

	if (len < sizeof(sa_family_t))
		return 0;
	memcpy(&fam, n, sizeof(fam));
	*v6 = fam == AF_INET6;
	return (fam == AF_INET && len >= sizeof(struct sockaddr_in)) ||
	       (fam == AF_INET6 && len >= sizeof(struct sockaddr_in6));
}

static void inet_parts(const uint8_t *n, int v6, uint8_t ip[16], uint16_t *port)
{
	if (v6) {
		struct sockaddr_in6 a;

		memcpy(&a, n, sizeof(a));
		memcpy(ip, &a.sin6_addr, 16);
		*port = ntohs(a.sin6_port);
	} else {
		struct sockaddr_in a;

		memcpy(&a, n, sizeof(a));
		memset(ip, 0, 16);
		memcpy(ip, &a.sin_addr, 4);
		*port = ntohs(a.sin_port);
	}
}

static void mac_of(uint8_t mac[6], const uint8_t ip[16], int v6)
{
	mac[0] = 0x02;  /* locally administered */
	mac[1] = 0x00;
	memcpy(mac + 2, ip + (v6 ? 12 : 0), 4);
}

/* What both sides of one connection compute alike: [0] the active side, [1] the passive. */
struct conn_view {
	uint64_t key;
	int v6;
	uint8_t ip[2][16];
	uint16_t port[2];
	uint32_t qpn[2], psn[2];
};

/* Addresses from the provider when it has IP ones; otherwise (shm, mock) loopback
 * addresses, the connection told apart by its QP numbers. */
static void conn_view(const struct names *nm, int active, struct conn_view *v)
{
	const uint8_t *an = active ? nm->local : nm->peer, *pn = active ? nm->peer : nm->local;
	size_t al = active ? nm->llen : nm->plen, pl = active ? nm->plen : nm->llen;
	int v6a = 0, v6p = 0;

	memset(v, 0, sizeof(*v));
	v->key = fnv1a(fnv1a(0xcbf29ce484222325ull, an, al), pn, pl);
	if (is_inet(an, al, &v6a) && is_inet(pn, pl, &v6p) && v6a == v6p) {
		v->v6 = v6a;
		inet_parts(an, v6a, v->ip[0], &v->port[0]);
		inet_parts(pn, v6p, v->ip[1], &v->port[1]);
	} else {
		v->ip[0][0] = v->ip[1][0] = 127;
		v->ip[0][3] = 2;
		v->ip[1][3] = 1;
		v->port[0] = (uint16_t)(0xc000 | (mix(v->key, 3) & 0x3fff));
		v->port[1] = (uint16_t)(0xc000 | (mix(v->key, 4) & 0x3fff));
	}
	/* QP numbers 0 and 1 are the special QPs; PSN spaces kept apart per direction, as
	 * Wireshark keys some reassembly state by PSN alone */
	v->qpn[0] = 0x100 + (uint32_t)(mix(v->key, 1) % 0xfffe00);
	v->qpn[1] = 0x100 + (uint32_t)(mix(v->key, 2) % 0xfffe00);
	if (v->qpn[1] == v->qpn[0])
		v->qpn[1] ^= 0x800000;
	v->psn[0] = (uint32_t)(mix(v->key, 5) & 0x3fffff);
	v->psn[1] = 0x800000 | (uint32_t)(mix(v->key, 6) & 0x3fffff);
}

static void fill_path(struct cap_path *p, const struct conn_view *v, int from, int to)
{
	p->v6 = v->v6;
	memcpy(p->src_ip, v->ip[from], 16);
	memcpy(p->dst_ip, v->ip[to], 16);
	mac_of(p->src_mac, v->ip[from], v->v6);
	mac_of(p->dst_mac, v->ip[to], v->v6);
	p->sport = (uint16_t)(0xc000 | (v->qpn[from] & 0x3fff));
	p->dst_qp = v->qpn[to];
}

/* libfabric 2.1's shm gives its own name with the "fi_shm://" scheme in front and the
 * peer's (from the address vector) without it; 1.17 gave both alike. Names are compared
 * without any such scheme, so both ends of a connection derive the same key. */
static void drop_scheme(uint8_t *n, size_t *len)
{
	size_t i = 0;

	while (i < *len && (isalnum(n[i]) || n[i] == '_'))
		i++;
	if (i == 0 || *len - i < 3 || memcmp(n + i, "://", 3))
		return;
	i += 3;
	memmove(n, n + i, *len - i);
	*len -= i;
}

static void get_names(struct rpcrdma_ep *ep, struct names *nm)
{
	nm->llen = nm->plen = NAME_MAX_LEN;
	if (!ep->prov->ops->names ||
	    ep->prov->ops->names(ep, nm->local, &nm->llen, nm->peer, &nm->plen)) {
		/* no names: this endpoint alone, never paired */
		memcpy(nm->local, &ep, sizeof(ep));
		nm->llen = sizeof(ep);
		nm->plen = 0;
		return;
	}
	drop_scheme(nm->local, &nm->llen);
	drop_scheme(nm->peer, &nm->plen);
}

/* ---- connection management frames ---- */

static void emit_mad(struct cap_ep *s, const struct cap_path *dir, const uint8_t *mad)
{
	struct cap_path p = *dir;
	uint8_t deth[CAP_DETH_LEN];
	size_t hdr;

	p.dst_qp = 1;
	rpcrdma__cap_deth(deth, CM_QKEY, 1);
	hdr = rpcrdma__cap_headers(s->frame, &p, IB_UD_SEND_ONLY, 0, deth, sizeof(deth));
	memcpy(s->frame + hdr, mad, CAP_MAD_LEN);
	rpcrdma__cap_put(s->sink, s->frame, rpcrdma__cap_finish(s->frame, &p, hdr, CAP_MAD_LEN, 1));
}

static void emit_cm(struct cap_ep *s, const struct conn_view *v, const struct rpcrdma_ep *ep)
{
	const struct cap_path *to_passive = s->active ? &s->out : &s->in;
	const struct cap_path *to_active = s->active ? &s->in : &s->out;
	int me = s->active ? 0 : 1;
	uint8_t mad[CAP_MAD_LEN];
	struct cap_cm cm;

	memset(&cm, 0, sizeof(cm));
	cm.tid = mix(v->key, 7);
	cm.comm_id[0] = (uint32_t)mix(v->key, 8);
	cm.comm_id[1] = (uint32_t)mix(v->key, 9);
	memcpy(cm.qpn, v->qpn, sizeof(cm.qpn));
	memcpy(cm.psn, v->psn, sizeof(cm.psn));
	memcpy(cm.port, v->port, sizeof(cm.port));
	memcpy(cm.ip, v->ip, sizeof(cm.ip));
	cm.v6 = v->v6;
	cm.pdata[me] = ep->my_pdata;
	cm.pdata_len[me] = ep->my_pdata_len;
	cm.pdata[!me] = ep->peer_pdata;
	cm.pdata_len[!me] = ep->peer_pdata_len;
	rpcrdma__cap_cm_req(mad, &cm);
	emit_mad(s, to_passive, mad);
	rpcrdma__cap_cm_rep(mad, &cm);
	emit_mad(s, to_active, mad);
	rpcrdma__cap_cm_rtu(mad, &cm);
	emit_mad(s, to_passive, mad);
}

static void pend_free(struct pend *p)
{
	if (!p)
		return;
	free(p->local);
	free(p->remote);
	free(p);
}

struct rpcrdma_pcap *rpcrdma__cap_sink(const struct cap_ep *s)
{
	return s->sink;
}

void rpcrdma__cap_ep_free(struct cap_ep *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < PEND_BUCKETS; i++) {
		struct pend *p;

		while ((p = s->pend[i])) {
			s->pend[i] = p->next;
			pend_free(p);
		}
	}
	while (s->peer_reads) {
		struct peer_reads *r = s->peer_reads;

		s->peer_reads = r->next;
		free(r);
	}
	free(s->st);
	rpcrdma__cap_unregister(s->sink, s);
	rpcrdma__cap_unref(s->sink);
	free(s);
}

static int cap_ep_new(struct rpcrdma_ep *ep, struct rpcrdma_pcap *c, struct cap_ep **out)
{
	struct cap_ep *s = calloc(1, sizeof(*s));
	struct conn_view v;
	struct names nm;
	int me, peer;

	if (!s)
		return -RPCRDMA_ERR_NOMEM;
	get_names(ep, &nm);
	s->active = ep->active;
	conn_view(&nm, s->active, &v);
	me = s->active ? 0 : 1;
	peer = !me;
	fill_path(&s->out, &v, me, peer);
	fill_path(&s->in, &v, peer, me);
	s->psn_out = v.psn[me];
	s->psn_in = v.psn[peer];
	s->sink = c;
	s->snaplen = rpcrdma__cap_snaplen(c);
	s->prov = ep->prov;
	rpcrdma__cap_ref(c);
	/* the side captured second finds the first: the first wrote the CM frames */
	if (!rpcrdma__cap_register(c, s, v.key, s->active))
		emit_cm(s, &v, ep);
	*out = s;
	return 0;
}

int rpcrdma_ep_capture(struct rpcrdma_ep *ep, struct rpcrdma_pcap *c)
{
	struct cap_ep *s = NULL;
	int rc;

	if (!ep)
		return -RPCRDMA_ERR_INVAL;
	if (c) {
		rc = cap_ep_new(ep, c, &s);
		if (rc)
			return rc;
	}
	rpcrdma__cap_ep_free(ep->cap);
	ep->cap = s;
	return 0;
}

/* ---- events ---- */

static struct pend **bucket(struct cap_ep *s, const void *ctx)
{
	return &s->pend[((uintptr_t)ctx >> 4) % PEND_BUCKETS];
}

static void pend_add(struct cap_ep *s, struct pend *p)
{
	struct pend **b = bucket(s, p->ctx);

	p->next = *b;
	*b = p;
}

static struct pend *pend_take(struct cap_ep *s, const void *ctx)
{
	struct pend **pp, *p;

	for (pp = bucket(s, ctx); (p = *pp); pp = &p->next) {
		if (p->ctx == ctx) {
			*pp = p->next;
			return p;
		}
	}
	return NULL;
}

static struct pend *pend_new(void *ctx, const struct rpcrdma_sge *local,
			     uint32_t nlocal, const struct rpcrdma_segment *remote,
			     uint32_t nremote)
{
	struct pend *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->ctx = ctx;
	p->nlocal = nlocal;
	p->nremote = nremote;
	p->local = malloc(sizeof(*local) * nlocal);
	p->remote = nremote ? malloc(sizeof(*remote) * nremote) : NULL;
	if (!p->local || (nremote && !p->remote)) {
		pend_free(p);
		return NULL;
	}
	memcpy(p->local, local, sizeof(*local) * nlocal);
	if (nremote)
		memcpy(p->remote, remote, sizeof(*remote) * nremote);
	return p;
}

/* checked per event: the other side may be captured later, or go first */
static int paired(struct cap_ep *s)
{
	return rpcrdma__cap_paired(s->sink, s);
}

/* One RDMA Write of a remote segment; returns the PSN after it. */
static uint32_t emit_write(struct cap_ep *s, const struct cap_path *p, uint32_t psn,
			   const struct rpcrdma_segment *seg, struct cursor *cur)
{
	uint8_t reth[CAP_RETH_LEN];
	struct opset o = { IB_WRITE_FIRST, IB_WRITE_MIDDLE, IB_WRITE_LAST, IB_WRITE_ONLY,
			   reth, sizeof(reth), NULL, 0 };

	rpcrdma__cap_reth(reth, seg->offset, seg->handle, seg->length);
	return emit(s, p, psn, &o, cur, seg->length);
}

static void emit_read_request(struct cap_ep *s, const struct cap_path *p, uint32_t psn,
			      const struct rpcrdma_segment *seg)
{
	uint8_t reth[CAP_RETH_LEN];
	size_t hdr;

	rpcrdma__cap_reth(reth, seg->offset, seg->handle, seg->length);
	hdr = rpcrdma__cap_headers(s->frame, p, IB_READ_REQUEST, psn, reth, sizeof(reth));
	rpcrdma__cap_put(s->sink, s->frame, rpcrdma__cap_finish(s->frame, p, hdr, 0, 1));
}

/* The responses carry the requester's PSNs, from the request's on. */
static uint32_t emit_read_response(struct cap_ep *s, const struct cap_path *p, uint32_t psn,
				   struct cursor *cur, uint32_t len)
{
	uint8_t aeth[CAP_AETH_LEN];
	struct opset o = { IB_READ_RESP_FIRST, IB_READ_RESP_MIDDLE, IB_READ_RESP_LAST,
			   IB_READ_RESP_ONLY, aeth, sizeof(aeth), aeth, sizeof(aeth) };

	rpcrdma__cap_aeth(aeth, s->msn = (s->msn + 1) & 0xffffff);
	return emit(s, p, psn, &o, cur, len);
}

static void emit_read_responses(struct cap_ep *s, const struct pend *p)
{
	struct cursor cur = { p->local, p->nlocal, 0, 0 };
	uint32_t psn = p->psn, i;

	for (i = 0; i < p->nremote; i++)
		psn = emit_read_response(s, &s->in, psn, &cur, p->remote[i].length);
}

/* ---- the peer's RDMA on our memory ----
 * No completion reports it, but what it moved is known once the peer answers: a reply
 * means our call's read chunks were read and its write list / reply chunk written (with
 * the lengths the reply gives); RDMA_DONE means our reply's read chunks were read. The
 * frames are made from our memory then, in the peer's PSN space, just before the answer,
 * so that a capture of one side alone shows what a tap on the wire would have. */

static int decode_msg(struct cap_ep *s, const void *buf, size_t len, struct rpcrdma_msg *m)
{
	struct rpcrdma_decode_status ds;

	if (!s->st && !(s->st = malloc(sizeof(*s->st))))
		return -1;
	rpcrdma_msg_bind(m, s->st);
	return rpcrdma_decode(buf, len, RPCRDMA_DIR_ANY, NULL, m, &ds);
}

static void note_read_list(struct cap_ep *s, const void *buf, size_t len)
{
	struct peer_reads *r;
	struct rpcrdma_msg m;
	uint32_t i;

	if (decode_msg(s, buf, len, &m) || !m.nreads || s->npeer_reads >= PEER_READS_MAX)
		return;
	r = malloc(sizeof(*r) + m.nreads * sizeof(r->seg[0]));
	if (!r)
		return;
	r->xid = m.xid;
	r->n = m.nreads;
	for (i = 0; i < m.nreads; i++)
		r->seg[i] = m.reads[i].seg;
	r->next = s->peer_reads;
	s->peer_reads = r;
	s->npeer_reads++;
}

static struct peer_reads *take_reads(struct cap_ep *s, uint32_t xid)
{
	struct peer_reads **pp, *r;

	for (pp = &s->peer_reads; (r = *pp); pp = &r->next) {
		if (r->xid == xid) {
			*pp = r->next;
			s->npeer_reads--;
			return r;
		}
	}
	return NULL;
}

static int local_bytes(struct cap_ep *s, const struct rpcrdma_segment *seg,
		       struct rpcrdma_sge *piece)
{
	const uint8_t *p = rpcrdma__cap_mr_find(s->prov, seg->handle, seg->offset, seg->length);

	if (!p || !seg->length)
		return -1;
	piece->mr = NULL;
	piece->addr = (void *)(uintptr_t)p;
	piece->len = seg->length;
	return 0;
}

static void peer_read(struct cap_ep *s, const struct rpcrdma_segment *seg)
{
	struct rpcrdma_sge piece;
	struct cursor cur = { &piece, 1, 0, 0 };

	if (local_bytes(s, seg, &piece))
		return;
	rpcrdma__cap_count_rma(s->sink, RPCRDMA_OP_READ, 1);
	emit_read_request(s, &s->in, s->psn_in, seg);
	s->psn_in = emit_read_response(s, &s->out, s->psn_in, &cur, seg->length);
}

static void peer_writes(struct cap_ep *s, const struct rpcrdma_write_chunk *c)
{
	uint32_t i;

	for (i = 0; i < c->nsegs; i++) {
		struct rpcrdma_sge piece;
		struct cursor cur = { &piece, 1, 0, 0 };

		if (local_bytes(s, &c->segs[i], &piece))
			continue;
		rpcrdma__cap_count_rma(s->sink, RPCRDMA_OP_WRITE, 1);
		s->psn_in = emit_write(s, &s->in, s->psn_in, &c->segs[i], &cur);
	}
}

static void peer_ops(struct cap_ep *s, const void *buf, size_t len)
{
	struct peer_reads *r;
	struct rpcrdma_msg m;
	uint32_t i;

	if (decode_msg(s, buf, len, &m))
		return;
	r = take_reads(s, m.xid);
	for (i = 0; r && m.proc != RPCRDMA_ERROR && i < r->n; i++)
		peer_read(s, &r->seg[i]);
	free(r);
	/* results the responder wrote: only a requester receives replies */
	if (!s->active || m.proc > RPCRDMA_MSGP)
		return;
	for (i = 0; i < m.nwrites; i++)
		peer_writes(s, &m.writes[i]);
	if (m.has_reply)
		peer_writes(s, &m.reply);
}

void rpcrdma__cap_on_send(struct cap_ep *s, const struct rpcrdma_sge *sge)
{
	emit_send(s, &s->out, &s->psn_out, sge->addr, sge->len);
	if (!paired(s))
		note_read_list(s, sge->addr, sge->len);
}

/* IBTA vol. 1, 9.2.1 and 9.3.4: the invalidated R_Key travels in an IETH on the
 * message's last (or only) frame, which is what Wireshark shows as "Invalidate". */
void rpcrdma__cap_on_send_inv(struct cap_ep *s, const struct rpcrdma_sge *sge, uint32_t handle)
{
	uint8_t ieth[CAP_IETH_LEN] = { (uint8_t)(handle >> 24), (uint8_t)(handle >> 16),
				       (uint8_t)(handle >> 8), (uint8_t)handle };
	const struct opset one = { IB_SEND_FIRST, IB_SEND_MIDDLE, IB_SEND_LAST_INV,
				   IB_SEND_ONLY_INV, ieth, sizeof(ieth), NULL, 0 };
	const struct opset many = { IB_SEND_FIRST, IB_SEND_MIDDLE, IB_SEND_LAST_INV,
				    IB_SEND_ONLY_INV, NULL, 0, ieth, sizeof(ieth) };
	struct rpcrdma_sge piece = { NULL, sge->addr, sge->len };
	struct cursor cur = { &piece, 1, 0, 0 };

	rpcrdma__cap_count_send(s->sink, sge->addr, sge->len);
	s->psn_out = emit(s, &s->out, s->psn_out, packets(sge->len) == 1 ? &one : &many, &cur,
			  sge->len);
	if (!paired(s))
		note_read_list(s, sge->addr, sge->len);
}

/* A receive is written when it completes, unless the sender is captured in the same
 * file, which wrote it already. */
void rpcrdma__cap_on_recv_post(struct cap_ep *s, const struct rpcrdma_sge *sge, void *ctx)
{
	struct pend *p;

	if (paired(s))
		return;
	p = pend_new(ctx, sge, 1, NULL, 0);
	if (p)
		pend_add(s, p);
}

void rpcrdma__cap_on_rma(struct cap_ep *s, uint32_t op, const struct rpcrdma_sge *local,
			 uint32_t nlocal, const struct rpcrdma_segment *remote, uint32_t nremote,
			 void *ctx)
{
	struct pend *p;

	struct cursor cur = { local, nlocal, 0, 0 };
	uint32_t i;

	rpcrdma__cap_count_rma(s->sink, op, 0);
	if (op == RPCRDMA_OP_WRITE) {
		for (i = 0; i < nremote; i++)
			s->psn_out = emit_write(s, &s->out, s->psn_out, &remote[i], &cur);
		return;
	}
	p = pend_new(ctx, local, nlocal, remote, nremote);
	if (p) {
		p->psn = s->psn_out;
		pend_add(s, p);
	}
	for (i = 0; i < nremote; i++) {
		emit_read_request(s, &s->out, s->psn_out, &remote[i]);
		s->psn_out = (s->psn_out + packets(remote[i].length)) & 0xffffff;
	}
}

void rpcrdma__cap_on_cqe(struct cap_ep *s, const struct rpcrdma_cqe *c)
{
	struct pend *p;

	if (c->op != RPCRDMA_OP_RECV && c->op != RPCRDMA_OP_READ)
		return;
	p = pend_take(s, c->ctx);
	if (!p)
		return;
	if (!c->status && c->op == RPCRDMA_OP_RECV && c->len <= p->local[0].len && !paired(s)) {
		peer_ops(s, p->local[0].addr, c->len);
		emit_send(s, &s->in, &s->psn_in, p->local[0].addr, c->len);
	}
	else if (!c->status && c->op == RPCRDMA_OP_READ)
		emit_read_responses(s, p);
	pend_free(p);
}
