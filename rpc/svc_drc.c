/* SPDX-License-Identifier: BSD-2-Clause */
/* The server's duplicate request cache: at most once across reconnections.
 *
 * A client sends a call again, with its XID, on the connection that follows a lost one
 * (RFC 8166 §4.5, docs/RPC.md); the original may have run already, or be running. Each
 * call taken for dispatch gets an entry, keyed as knfsd keys its cache: XID, the client's
 * address (without its port: a new connection has another), program, version,
 * procedure, the call's length and a checksum of the first bytes of its arguments. The
 * entry holds the reply once it is sent, stream and DDP items, up to reply_max bytes.
 * Entries still running are never evicted (the credits bound them). Kept replies go when
 * DRC_TTL_MS old, and for room: beyond max entries or max bytes, a client's share is
 * what it may keep of the cache (max entries / clients with entries), so that a busy or
 * hostile client evicts its own replies and never another's below its share within the
 * reconnect window. A client is an address, as in the key.
 * No I/O and no lock here: the listener's lock covers every call. */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "rpc_int.h"
#include "svc_int.h"

#define DRC_TTL_MS 120000u   /* knfsd's RC_EXPIRE */
#define DRC_SUM_BYTES 256u   /* knfsd's RC_CSUMLEN */
#define DRC_MAX_DEFAULT (256u * 1024u)   /* knfsd's cap on its cache's size */
#define DRC_CLIENT_BUCKETS 1024u

struct drc_client;

static uint32_t mix_sum(uint64_t seed, const uint8_t *p, uint32_t n);

struct rpcrdma__drc_ent {
	struct rpcrdma__drc_key k;
	struct rpcrdma__drc_ent *hnext;           /* its hash chain */
	struct rpcrdma__drc_ent *older, *newer;   /* kept replies, by age */
	struct rpcrdma__drc_ent *c_older, *c_newer;   /* its client's kept replies, by age */
	struct drc_client *cl;
	uint64_t kept_ms;
	int kept;
	uint8_t *reply;                           /* the stream, then each item's bytes */
	uint32_t bytes, reply_cap;
	struct rpcrdma_reply_args a;              /* pointing into reply */
	struct rpcrdma_ddp_item items[RPCRDMA_DEF_LIST_CHUNKS];
};

/* A client (an address) with entries in the cache. */
struct drc_client {
	uint32_t family;
	uint8_t addr[16];
	struct drc_client *hnext;                 /* its hash chain */
	struct drc_client *prev, *next;           /* every client */
	struct rpcrdma__drc_ent *oldest, *newest; /* its kept replies */
	uint32_t n;                               /* its entries, running or kept */
};

struct rpcrdma__drc {
	struct rpcrdma__drc_ent **table;
	uint32_t mask;
	uint32_t max_entries, reply_max;
	uint64_t max_bytes;
	struct drc_client *clients[DRC_CLIENT_BUCKETS];
	struct drc_client *all;                   /* every client with entries */
	uint32_t nclients;
	struct drc_client *hog;                   /* the one with most entries, when known */
	struct rpcrdma__drc_ent *oldest, *newest;
	struct rpcrdma__drc_ent *spare;   /* the last one evicted, for the next call: no
					     malloc or free a call once the cache is full */
	struct rpcrdma_svc_drc_stats st;
};

/* knfsd's size (nfsd_cache_size_limit): 64 entries per square root of the memory's 4 KiB
 * pages, at most 256k; 160k on a host of 24 GiB. */
uint32_t rpcrdma__drc_entries_for(uint64_t mem_bytes)
{
	uint64_t pages = mem_bytes / 4096, r = pages, n;

	while (r && r > pages / r)   /* Newton's integer square root: down to floor(sqrt) */
		r = (r + pages / r) / 2;
	n = 64 * r;
	if (n < 1024)
		n = 1024;
	return n > DRC_MAX_DEFAULT ? DRC_MAX_DEFAULT : (uint32_t)n;
}

struct rpcrdma__drc *rpcrdma__drc_new(uint32_t max_entries, uint32_t reply_max,
				      uint64_t max_bytes)
{
	struct rpcrdma__drc *d = calloc(1, sizeof(*d));
	uint32_t n = 16;

	if (!d)
		return NULL;
	d->max_bytes = max_bytes;
	while (n < max_entries && n < (1u << 20))
		n <<= 1;
	d->table = calloc(n, sizeof(*d->table));
	if (!d->table) {
		free(d);
		return NULL;
	}
	d->mask = n - 1;
	d->max_entries = max_entries;
	d->reply_max = reply_max;
	return d;
}

static uint32_t addr_hash(uint32_t family, const uint8_t *addr)
{
	return mix_sum(family, addr, 16) & (DRC_CLIENT_BUCKETS - 1);
}

static struct drc_client *client_get(struct rpcrdma__drc *d, const struct rpcrdma__drc_key *k)
{
	struct drc_client **b = &d->clients[addr_hash(k->family, k->addr)], *c;

	for (c = *b; c; c = c->hnext)
		if (c->family == k->family && !memcmp(c->addr, k->addr, sizeof(c->addr)))
			return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->family = k->family;
	memcpy(c->addr, k->addr, sizeof(c->addr));
	c->hnext = *b;
	*b = c;
	c->next = d->all;
	if (d->all)
		d->all->prev = c;
	d->all = c;
	d->nclients++;
	return c;
}

static void client_put(struct rpcrdma__drc *d, struct drc_client *c)
{
	struct drc_client **pp;

	if (--c->n)
		return;
	for (pp = &d->clients[addr_hash(c->family, c->addr)]; *pp != c; pp = &(*pp)->hnext)
		;
	*pp = c->hnext;
	if (c->prev)
		c->prev->next = c->next;
	else
		d->all = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (d->hog == c)
		d->hog = NULL;
	d->nclients--;
	free(c);
}

static void ent_free(struct rpcrdma__drc *d, struct rpcrdma__drc_ent *e)
{
	if (e->cl)
		client_put(d, e->cl);
	e->cl = NULL;
	d->st.bytes -= e->bytes;
	d->st.entries--;
	if (!d->spare) {
		d->spare = e;
		return;
	}
	free(e->reply);
	free(e);
}

/* A cleared entry, its reply buffer kept. */
static struct rpcrdma__drc_ent *ent_get(struct rpcrdma__drc *d)
{
	struct rpcrdma__drc_ent *e = d->spare;
	uint8_t *reply;
	uint32_t cap;

	if (!e)
		return calloc(1, sizeof(*e));
	d->spare = NULL;
	reply = e->reply;
	cap = e->reply_cap;
	memset(e, 0, sizeof(*e));
	e->reply = reply;
	e->reply_cap = cap;
	return e;
}

void rpcrdma__drc_free(struct rpcrdma__drc *d)
{
	uint32_t i;

	if (!d)
		return;
	for (i = 0; i <= d->mask; i++)
		while (d->table[i]) {
			struct rpcrdma__drc_ent *e = d->table[i];

			d->table[i] = e->hnext;
			ent_free(d, e);
		}
	if (d->spare)
		free(d->spare->reply);
	free(d->spare);
	free(d->table);
	free(d);   /* every client went with its last entry */
}

/* The checksum tells apart two calls that share an XID by chance (a client restarted,
 * or two clients behind one address); no attacker is in the model. Four lanes of eight
 * bytes a step, so that the multiplications overlap (a byte a step, it was half of the
 * cache's cost per call). Host byte order: the key never leaves the process. */
static uint64_t mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

static uint32_t mix_sum(uint64_t seed, const uint8_t *p, uint32_t n)
{
	uint64_t l[4] = { seed, seed + 1, seed + 2, seed + 3 }, w, h;
	int i;

	for (; n >= 32; p += 32, n -= 32)
		for (i = 0; i < 4; i++) {
			memcpy(&w, p + 8 * i, 8);
			l[i] = mix(l[i], w);
		}
	h = mix(mix(mix(l[0], l[1]), l[2]), l[3]);
	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = mix(h, w);
	}
	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	h ^= h >> 32;
	return (uint32_t)h;
}

void rpcrdma__drc_key(struct rpcrdma__drc_key *k, const struct sockaddr_storage *peer,
		      size_t peer_len, const struct rpc_msg *call, const uint8_t *args,
		      uint32_t args_len, uint32_t call_len)
{
	memset(k, 0, sizeof(*k));
	k->xid = call->rm_xid;
	k->prog = (uint32_t)call->rm_call.cb_prog;
	k->vers = (uint32_t)call->rm_call.cb_vers;
	k->proc = (uint32_t)call->rm_call.cb_proc;
	k->len = call_len;
	k->sum = mix_sum(0x9e3779b97f4a7c15ull, args,
			 args_len < DRC_SUM_BYTES ? args_len : DRC_SUM_BYTES);
	if (peer_len >= sizeof(struct sockaddr_in) && peer->ss_family == AF_INET) {
		k->family = AF_INET;
		memcpy(k->addr, &((const struct sockaddr_in *)peer)->sin_addr, 4);
	} else if (peer_len >= sizeof(struct sockaddr_in6) && peer->ss_family == AF_INET6) {
		k->family = AF_INET6;
		memcpy(k->addr, &((const struct sockaddr_in6 *)peer)->sin6_addr, 16);
	}
}

static bool key_eq(const struct rpcrdma__drc_key *a, const struct rpcrdma__drc_key *b)
{
	return a->xid == b->xid && a->prog == b->prog && a->vers == b->vers &&
	       a->proc == b->proc && a->len == b->len && a->sum == b->sum &&
	       a->family == b->family && !memcmp(a->addr, b->addr, sizeof(a->addr));
}

static uint32_t key_hash(const struct rpcrdma__drc *d, const struct rpcrdma__drc_key *k)
{
	return mix_sum(k->xid, k->addr, sizeof(k->addr)) & d->mask;
}

static void unhash(struct rpcrdma__drc *d, struct rpcrdma__drc_ent *e)
{
	struct rpcrdma__drc_ent **pp = &d->table[key_hash(d, &e->k)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
}

static void age_unlink(struct rpcrdma__drc *d, struct rpcrdma__drc_ent *e)
{
	if (e->older)
		e->older->newer = e->newer;
	else
		d->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		d->newest = e->older;
	e->older = e->newer = NULL;
	if (e->c_older)
		e->c_older->c_newer = e->c_newer;
	else
		e->cl->oldest = e->c_newer;
	if (e->c_newer)
		e->c_newer->c_older = e->c_older;
	else
		e->cl->newest = e->c_older;
	e->c_older = e->c_newer = NULL;
}

static void evict(struct rpcrdma__drc *d, struct rpcrdma__drc_ent *e)
{
	unhash(d, e);
	if (e->kept)
		age_unlink(d, e);
	ent_free(d, e);
}

/* Replies kept longer than DRC_TTL_MS go, oldest first. */
static void expire(struct rpcrdma__drc *d, uint64_t now_ms)
{
	/* now_ms may be a little older than a kept_ms: the caller read its clock first */
	while (d->oldest && now_ms > d->oldest->kept_ms + DRC_TTL_MS) {
		evict(d, d->oldest);
		d->st.evicted++;
	}
}

/* The client with the most entries that has a reply kept. */
static struct drc_client *find_hog(struct rpcrdma__drc *d)
{
	struct drc_client *c, *hog = NULL;

	for (c = d->all; c; c = c->next)
		if (c->oldest && (!hog || c->n > hog->n))
			hog = c;
	return d->hog = hog;
}

/* Whose reply gives way for room when `who` (NULL: nobody in particular) needs it: its
 * own oldest while it would hold more than its share, else the oldest of the client holding
 * the most (over its share, since the cache is full). NULL when only running calls are
 * left. */
static struct rpcrdma__drc_ent *victim(struct rpcrdma__drc *d, const struct drc_client *who)
{
	uint32_t share = d->max_entries / (d->nclients ? d->nclients : 1);
	struct drc_client *hog = d->hog;

	if (who && who->oldest && who->n > share)
		return who->oldest;
	if (!hog || !hog->oldest || hog->n < share)
		hog = find_hog(d);
	return hog ? hog->oldest : NULL;
}

static bool full(const struct rpcrdma__drc *d, uint32_t max)
{
	return d->st.entries > max || d->st.bytes > d->max_bytes;
}

/* Kept replies go, by share, while there are more than max entries or max_bytes. */
static void make_room(struct rpcrdma__drc *d, uint32_t max, const struct drc_client *who)
{
	struct rpcrdma__drc_ent *e;

	while (full(d, max) && (e = victim(d, who)) != NULL) {
		evict(d, e);
		d->st.evicted++;
	}
}

void rpcrdma__drc_expire(struct rpcrdma__drc *d, uint64_t now_ms)
{
	if (d) {
		expire(d, now_ms);
		make_room(d, d->max_entries, NULL);
	}
}

/* A new entry for the call k, running, its client's share kept. */
static int add(struct rpcrdma__drc *d, const struct rpcrdma__drc_key *k, uint32_t h,
	       uint64_t now_ms, struct rpcrdma__drc_ent **out)
{
	struct drc_client *c = client_get(d, k);
	struct rpcrdma__drc_ent *e;

	*out = NULL;
	if (!c)
		return RPCRDMA__DRC_NEW;   /* served without the cache */
	c->n++;   /* counted before room is made: its share is what it will hold */
	expire(d, now_ms);
	make_room(d, d->max_entries - 1, c);   /* room for this one */
	*out = e = ent_get(d);
	if (!e) {
		client_put(d, c);
		return RPCRDMA__DRC_NEW;
	}
	e->k = *k;
	e->cl = c;
	e->hnext = d->table[h];
	d->table[h] = e;
	d->st.entries++;
	if (!d->hog || c->n > d->hog->n)
		d->hog = c;
	return RPCRDMA__DRC_NEW;
}

int rpcrdma__drc_lookup(struct rpcrdma__drc *d, const struct rpcrdma__drc_key *k,
			uint64_t now_ms, struct rpcrdma__drc_ent **out)
{
	uint32_t h = key_hash(d, k);
	struct rpcrdma__drc_ent *e;

	for (e = d->table[h]; e; e = e->hnext)
		if (key_eq(&e->k, k))
			break;
	if (e && e->kept && now_ms <= e->kept_ms + DRC_TTL_MS) {
		d->st.replayed++;
		*out = e;
		return RPCRDMA__DRC_KEPT;
	}
	if (e && !e->kept) {
		d->st.waited++;
		*out = e;
		return RPCRDMA__DRC_RUNNING;
	}
	if (e)
		evict(d, e);   /* too old to be this call's */
	return add(d, k, h, now_ms, out);
}

void rpcrdma__drc_forget(struct rpcrdma__drc *d, struct rpcrdma__drc_ent *e)
{
	if (d && e)
		evict(d, e);
}

static uint64_t reply_bytes(const struct rpcrdma_reply_args *a)
{
	uint64_t n = a->xdr_len;
	uint32_t i;

	for (i = 0; i < a->nitems; i++)
		n += a->items[i].len;
	return n;
}

/* A copy of the reply in one buffer, items after the stream, as the entry's. */
static int keep_copy(struct rpcrdma__drc_ent *e, const struct rpcrdma_reply_args *a,
		     uint32_t total)
{
	if (e->reply_cap < total || !e->reply) {
		uint8_t *n = realloc(e->reply, total ? total : 1);

		if (!n)
			return -1;
		e->reply = n;
		e->reply_cap = total ? total : 1;
	}
	rpcrdma__reply_copy(e->reply, a, 0, e->items, &e->a);
	e->bytes = total;
	return 0;
}

int rpcrdma__drc_keep(struct rpcrdma__drc *d, struct rpcrdma__drc_ent *e,
		      const struct rpcrdma_reply_args *a, uint64_t now_ms)
{
	uint64_t total = reply_bytes(a);

	if (total > d->reply_max || a->nitems > RPCRDMA_DEF_LIST_CHUNKS) {
		d->st.too_long++;
		evict(d, e);
		return 0;
	}
	if (keep_copy(e, a, (uint32_t)total)) {
		evict(d, e);
		return 0;
	}
	d->st.bytes += e->bytes;
	d->st.kept++;
	make_room(d, d->max_entries, e->cl);   /* within max_bytes; e is not a victim yet */
	e->kept = 1;
	e->kept_ms = now_ms;
	e->older = d->newest;
	if (d->newest)
		d->newest->newer = e;
	else
		d->oldest = e;
	d->newest = e;
	e->c_older = e->cl->newest;
	if (e->cl->newest)
		e->cl->newest->c_newer = e;
	else
		e->cl->oldest = e;
	e->cl->newest = e;
	return 1;
}

void rpcrdma__reply_copy(uint8_t *buf, const struct rpcrdma_reply_args *a, uint32_t lent,
			 struct rpcrdma_ddp_item *items, struct rpcrdma_reply_args *out)
{
	uint64_t at = a->xdr_len;
	uint32_t i;

	if (buf != a->xdr)   /* a reply encoded in place is already there */
		memcpy(buf, a->xdr, a->xdr_len);
	for (i = 0; i < a->nitems; i++) {
		items[i] = a->items[i];
		if (lent & (1u << i))
			continue;
		if (a->items[i].len)
			memcpy(buf + at, a->items[i].data, a->items[i].len);
		items[i].data = buf + at;
		at += a->items[i].len;
	}
	out->xdr = buf;
	out->xdr_len = a->xdr_len;
	out->items = items;
	out->nitems = a->nitems;
}

const struct rpcrdma_reply_args *rpcrdma__drc_reply(const struct rpcrdma__drc_ent *e)
{
	return &e->a;
}

void rpcrdma__drc_stats(const struct rpcrdma__drc *d, struct rpcrdma_svc_drc_stats *out)
{
	*out = d->st;
}

/* ---- the RDMA server's use of the cache (svc_conn.c, docs/RPC.md) ---- */

/* A copy of the reply a goes to er, a call sent again. */
static void replay(struct sconn *c, struct rpcrdma_eng_req *er, const struct rpcrdma_reply_args *a)
{
	struct reply_ctx *x = rpcrdma__svc_own_reply(c->srv, a, 0, NULL, 0);

	if (!x) {
		rpcrdma_eng_req_drop(c->eng, er);
		return;
	}
	rpcrdma__svc_give_reply(c, er, x);
}

/* Calls the cache leaves alone: NULL (no effect, no result: knfsd's RC_NOCACHE), and
 * RPCSEC_GSS, whose reply's verifier seals the sequence number of the first sending,
 * which the client no longer accepts for a call sent again with a new one (RFC 2203
 * §5.3.3.1). */
static bool drc_applies(const struct rpc_msg *msg)
{
	return msg->rm_call.cb_proc != 0 && msg->rm_call.cb_cred.oa_flavor != RPCSEC_GSS;
}

/* The call waits for the reply of its original, which is running. */
static void park(struct sconn *c, struct rpcrdma_eng_req *er, struct rpcrdma__drc_ent *e)
{
	struct parked *q = malloc(sizeof(*q));

	if (!q) {
		rpcrdma_eng_req_drop(c->eng, er);
		return;
	}
	q->c = c;
	q->er = er;
	q->ent = e;
	q->next = c->srv->parked;
	c->srv->parked = q;
}

static void drc_log(struct sconn *c, const char *what, uint32_t xid)
{
	char why[64];

	if (rpcrdma_log_level() < RPCRDMA_LOG_INFO)
		return;
	snprintf(why, sizeof(why), "XID 0x%08x", xid);
	rpcrdma__svc_conn_log(c, RPCRDMA_LOG_INFO, what, why);
}

/* 1 when the call is to be dispatched; 0 when it was sent again and its original's reply
 * answers it, now (kept) or once sent (running). c may be a lane. */
int rpcrdma__svc_drc_admit(struct sconn *c, struct rpcrdma_eng_req *er, const struct rpc_msg *msg,
		     const uint8_t *call, uint32_t len)
{
	struct srv *s = c->srv;
	struct sconn *p = rpcrdma__svc_prim(c);
	struct rpcrdma__drc_key k;
	struct rpcrdma__drc_ent *e;
	uint32_t at = rpcrdma__xdr_pos(&c->dec);
	int found;

	if (!s->drc || !drc_applies(msg) || at > len)
		return 1;
	rpcrdma__drc_key(&k, &p->peer, p->xprt.xp_rtaddr.len, msg, call + at, len - at, len);
	found = rpcrdma__drc_lookup(s->drc, &k, rpcrdma__rpc_now(), &e);
	if (found == RPCRDMA__DRC_NEW) {
		c->drc = e;
		return 1;
	}
	if (found == RPCRDMA__DRC_KEPT) {
		drc_log(p, "answered from the duplicate request cache a call sent again by", k.xid);
		replay(p, er, rpcrdma__drc_reply(e));
	} else {
		drc_log(p, "holds until its original is answered a call sent again by", k.xid);
		park(p, er, e);
	}
	return 0;
}

/* The next waiting call for entry e (NULL: any) of connection c (NULL: any), taken off
 * the list; NULL when there is none. */
struct parked *rpcrdma__svc_unpark(struct srv *s, const struct rpcrdma__drc_ent *e,
			     const struct sconn *c)
{
	struct parked **pp, *q;

	for (pp = &s->parked; (q = *pp) != NULL; pp = &q->next)
		if ((!e || q->ent == e) && (!c || q->c == c)) {
			*pp = q->next;
			return q;
		}
	return NULL;
}

/* The call being dispatched on c was answered with a (NULL: not answered). Calls sent
 * again that wait for it get a copy of the reply, or, when there is none, are dispatched
 * themselves; the cache keeps the reply if it is short enough. */
void rpcrdma__svc_drc_finish(struct sconn *c, const struct rpcrdma_reply_args *a)
{
	struct srv *s = c->srv;
	struct rpcrdma__drc_ent *e = c->drc;
	struct parked *q;

	if (!e)
		return;
	c->drc = NULL;
	while ((q = rpcrdma__svc_unpark(s, e, NULL)) != NULL) {
		if (a)
			replay(q->c, q->er, a);
		else
			rpcrdma__svc_enqueue(q->c, q->er, true);
		free(q);
	}
	if (a)
		rpcrdma__drc_keep(s->drc, e, a, rpcrdma__rpc_now());
	else
		rpcrdma__drc_forget(s->drc, e);
}
