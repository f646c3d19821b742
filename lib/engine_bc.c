/* SPDX-License-Identifier: BSD-2-Clause */
/* The backchannel (RFC 8167): RPC calls from the responder to the requester on the
 * connection the requester opened. Both directions share the connection's receive and
 * send buffers but never each other's share of them: a client keeps cfg.bc_credits
 * receives posted for backward calls beside those of its forward calls, a server posts
 * one receive per backward call it sends, and each side has cfg.bc_credits Send buffers
 * of its own for backward messages (§4.1, §4.3). Backward messages are RDMA_MSG with
 * empty chunk lists (§5.1, §5.2); chunks are not used in the backward direction (§5.3).
 * The direction of a message is its RPC msg_type (§3.1). */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "xdr_be.h"

#define BC_HDR_LEN 28u          /* RDMA_MSG with three empty lists (RFC 5666 §4.2) */
#define DEF_SERVER_BC 4u

/* RPC reply words (RFC 5531 §9): REPLY, MSG_ACCEPTED, AUTH_NONE verifier, accept_stat */
#define RPC_MSG_ACCEPTED 0u
#define RPC_PROG_UNAVAIL 1u
#define RPC_SYSTEM_ERR 5u

static struct rpcrdma_eng_bcall *bcall_of(struct eng_link *k)
{
	return k ? ENG_OF(k, struct rpcrdma_eng_bcall, link) : NULL;
}

static bool is_client(const struct rpcrdma_eng *e)
{
	return e->cfg.role == RPCRDMA_ENG_CLIENT;
}

/* Backward calls a server keeps in flight, or a client takes at once. */
static uint32_t bc_slots(const struct rpcrdma_eng *e)
{
	if (is_client(e))
		return e->up.bc_request ? e->cfg.bc_credits : 0;
	return e->cfg.bc_credits ? e->cfg.bc_credits : DEF_SERVER_BC;
}

/* Receive buffers the backchannel needs on top of the forward direction's. A client
 * without a backchannel keeps one posted all the same: a server that calls back anyway
 * (§4.3.3) then gets its PROG_UNAVAIL instead of a connection lost for want of a
 * receive (a Send without a posted receive breaks an RDMA connection). */
uint32_t rpcrdma__eng_bc_recvs(const struct rpcrdma_eng *e)
{
	uint32_t n = bc_slots(e);

	return n || !is_client(e) ? n : 1;
}

/* Send buffers of its own: backward calls (server) or replies (client), and on a client
 * without a backchannel one for its refusals. */
uint32_t rpcrdma__eng_bc_sends(const struct rpcrdma_eng *e)
{
	uint32_t n = bc_slots(e);

	return n ? n : 1;
}

int rpcrdma__eng_bc_init(struct rpcrdma_eng *e)
{
	e->bc_granted = 1;   /* as in the forward direction until a reply says more (§4.1) */
	if (!is_client(e) || !bc_slots(e))
		return 0;
	e->bc_xids = calloc(bc_slots(e), sizeof(*e->bc_xids));
	e->bc_held = calloc(bc_slots(e), 1);
	return e->bc_xids && e->bc_held ? 0 : -RPCRDMA_ERR_NOMEM;
}

/* A client posts its backward receives as soon as the connection is up: the server may
 * call back before the client has made any call (§4.3.1). */
int rpcrdma__eng_bc_start(struct rpcrdma_eng *e)
{
	uint32_t i;
	int rc;

	if (!is_client(e))
		return 0;
	for (i = 0; i < rpcrdma__eng_bc_recvs(e); i++) {
		rc = rpcrdma__eng_post_recv(e);
		/* a full queue: posted on the next event (owed); a connection already gone
		 * reports DISCONNECT on its own */
		if (rc == -RPCRDMA_ERR_AGAIN)
			e->recvs_owed++;
		else if (rc && rc != -RPCRDMA_ERR_DISCONN)
			return rc;
	}
	return 0;
}

uint32_t rpcrdma_eng_bc_pending(const struct rpcrdma_eng *e)
{
	uint32_t n = 0;
	struct eng_link *k;

	if (!e)
		return 0;
	if (is_client(e))
		return e->bc_nheld;
	for (k = e->bc_waitq.head; k; k = k->next)
		n++;
	return n + e->bc_inflight;
}

/* ---- sending a backward message ---- */

static int post_buf(struct rpcrdma_eng *e, struct eng_buf *b)
{
	if (!rpcrdma__eng_sq_room(e, 1))
		return -RPCRDMA_ERR_AGAIN;
	return rpcrdma__eng_post_send(e, b, b->len, b->proc);
}

static int resume_buf(struct rpcrdma_eng *e, struct eng_task *t, uint64_t now)
{
	struct eng_buf *b = ENG_OF(t, struct eng_buf, task);

	(void)now;
	return rpcrdma__eng_settle(e, post_buf(e, b));
}

/* §4.2: a backward message is inline, within the receiving peer's buffers. The one
 * place this bound is checked; callers check before they send. */
static bool fits_inline(const struct rpcrdma_eng *e, uint32_t len)
{
	return (uint64_t)len + BC_HDR_LEN <= e->inline_send;
}

/* Header (RDMA_MSG, or RDMA_ERROR/ERR_CHUNK when body is NULL) and body (which
 * fits_inline) into a Send buffer, posted now or when the send queue has room, in order
 * with other stalled work. Returns -RPCRDMA_ERR_NOSPC when no Send buffer is free. */
static int send_backward(struct rpcrdma_eng *e, uint32_t xid, uint32_t credits,
			 const void *body, uint32_t len)
{
	struct rpcrdma_msg_storage st;
	struct rpcrdma_msg m;
	struct eng_buf *b;
	int n;

	if (!e->sfree)
		return -RPCRDMA_ERR_NOSPC;
	rpcrdma_msg_bind(&m, &st);
	m.xid = xid;
	m.vers = RPCRDMA_VERSION;
	m.credits = credits;
	m.proc = body ? RPCRDMA_MSG : RPCRDMA_ERROR;
	m.err = RPCRDMA_WIRE_ERR_CHUNK;
	m.vers_low = m.vers_high = RPCRDMA_VERSION;
	b = rpcrdma__eng_sbuf_get(e);
	n = rpcrdma_encode(&m, b->mem, e->inline_send);
	if (n < 0) {
		rpcrdma__eng_sbuf_put(e, b);
		return n;
	}
	if (body)
		memcpy(b->mem + n, body, len);
	b->send_for = SEND_BACKWARD;
	b->len = (uint32_t)n + (body ? len : 0);
	b->proc = m.proc;
	b->task.resume = resume_buf;
	rpcrdma__eng_try(e, &b->task, post_buf(e, b));
	return 0;
}

/* ---- client: the backward responder ---- */

/* RDMA_ERROR/ERR_CHUNK for backward call xid (§5.3, or a reply that does not fit). */
static void refuse_chunk(struct rpcrdma_eng *e, uint32_t xid)
{
	if (send_backward(e, xid, bc_slots(e), NULL, 0))
		rpcrdma__eng_count(e, RPCRDMA_EC_NO_RESOURCES);
	else
		rpcrdma__eng_count(e, RPCRDMA_EC_ERR_CHUNK_SENT);
}

static int find_held(const struct rpcrdma_eng *e, uint32_t xid)
{
	uint32_t i;

	for (i = 0; i < bc_slots(e); i++)
		if (e->bc_held[i] && e->bc_xids[i] == xid)
			return (int)i;
	return -1;
}

static int free_slot(const struct rpcrdma_eng *e)
{
	uint32_t i;

	for (i = 0; i < bc_slots(e); i++)
		if (!e->bc_held[i])
			return (int)i;
	return -1;
}

/* An RPC reply the transport gives itself: MSG_ACCEPTED with accept_stat stat. */
static void refuse_with(struct rpcrdma_eng *e, uint32_t xid, uint32_t stat)
{
	uint8_t r[24];

	rpcrdma__put32(r, xid);
	rpcrdma__put32(r + 4, RPCRDMA_RPC_REPLY);
	rpcrdma__put32(r + 8, RPC_MSG_ACCEPTED);
	rpcrdma__put32(r + 12, 0);   /* AUTH_NONE, */
	rpcrdma__put32(r + 16, 0);   /* no verifier body */
	rpcrdma__put32(r + 20, stat);
	e->st.bc_refused++;
	if (send_backward(e, xid, bc_slots(e), r, sizeof(r)))
		rpcrdma__eng_count(e, RPCRDMA_EC_NO_RESOURCES);
}

/* A message whose RPC body is a call (m->dir): a backward call, answered here when the
 * upper layer cannot take it. Its receive was one of the backward ones (or, from a peer
 * that ignores our grant, one of the forward ones): the caller posts it again. Returns
 * false when m is no call. */
bool rpcrdma__eng_bc_client_recv(struct rpcrdma_eng *e, const struct rpcrdma_msg *m,
				 const uint8_t *buf)
{
	int slot;

	if (m->dir != RPCRDMA_DIR_CALL)
		return false;
	e->st.bc_calls++;
	if (m->proc != RPCRDMA_MSG || m->nreads || m->nwrites || m->has_reply) {
		/* §5.3: no chunks in the backward direction; §5.1: RDMA_MSG only */
		e->st.bc_refused++;
		refuse_chunk(e, m->xid);
		return true;
	}
	if (!bc_slots(e)) {
		/* §4.3.3: the server should not have called; it gets an answer, not a lost
		 * connection, as a TCP peer without that program would give */
		refuse_with(e, m->xid, RPC_PROG_UNAVAIL);
		return true;
	}
	if (find_held(e, m->xid) >= 0) {
		e->st.bc_refused++;   /* sent again while we work on it: one answer goes */
		return true;
	}
	slot = free_slot(e);
	if (slot < 0) {
		/* §4.1: beyond the credits we granted; the server's resources, not ours */
		rpcrdma__eng_count(e, RPCRDMA_EC_CREDIT_OVERRUN);
		refuse_with(e, m->xid, RPC_SYSTEM_ERR);
		return true;
	}
	e->bc_held[slot] = 1;
	e->bc_xids[slot] = m->xid;
	e->bc_nheld++;
	e->up.bc_request(e->up.ctx, m->xid, buf + m->hdr_len, m->body_len);
	return true;
}

int rpcrdma_eng_bc_reply(struct rpcrdma_eng *e, uint32_t xid, const void *xdr, uint32_t len,
			 uint64_t now_ms)
{
	int slot, rc;

	if (!e || !is_client(e) || !bc_slots(e) || (!xdr && len))
		return -RPCRDMA_ERR_INVAL;
	slot = find_held(e, xid);
	if (slot < 0)
		return -RPCRDMA_ERR_INVAL;
	e->bc_held[slot] = 0;
	e->bc_nheld--;
	if (e->dead)
		return -RPCRDMA_ERR_DISCONN;
	e->now = now_ms;
	if (len < RPCRDMA_MIN_RPC_LEN || rpcrdma__get32(xdr) != xid)
		return -RPCRDMA_ERR_INVAL;
	if (!fits_inline(e, len)) {
		/* the server's receives bound a backward reply; it must hear why */
		e->st.bc_failed++;
		refuse_chunk(e, xid);
		return -RPCRDMA_ERR_NOSPC;
	}
	rc = send_backward(e, xid, bc_slots(e), xdr, len);
	if (rc) {
		rpcrdma__eng_count(e, RPCRDMA_EC_NO_RESOURCES);
		return rc;
	}
	e->st.bc_replies++;
	return 0;
}

/* ---- server: the backward requester ---- */

/* The server decodes every message as a call; a reply is known by its RPC msg_type. */
bool rpcrdma__eng_is_reply(const struct rpcrdma_msg *m)
{
	return m->body && m->body_len >= RPCRDMA_MIN_RPC_LEN &&
	       rpcrdma__get32(m->body + 4) == RPCRDMA_RPC_REPLY;
}

static void bc_finish(struct rpcrdma_eng *e, struct rpcrdma_eng_bcall *b, int status)
{
	b->state = BC_FINISHED;
	b->status = status;
	if (status)
		e->st.bc_failed++;
	if (b->abandoned) {
		free(b->reply);
		free(b);
		return;
	}
	if (e->up.bc_done)
		e->up.bc_done(e->up.ctx, b);
}

int rpcrdma_eng_bc_call(struct rpcrdma_eng *e, const void *xdr, uint32_t len, void *user,
			uint64_t now_ms, struct rpcrdma_eng_bcall **out)
{
	struct rpcrdma_eng_bcall *b;

	if (!e || !out || is_client(e) || !xdr || len < RPCRDMA_MIN_RPC_LEN ||
	    rpcrdma__get32((const uint8_t *)xdr + 4) != RPCRDMA_RPC_CALL)
		return -RPCRDMA_ERR_INVAL;
	if (!e->started || e->dead)
		return -RPCRDMA_ERR_DISCONN;
	if (!fits_inline(e, len))
		return -RPCRDMA_ERR_NOSPC;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -RPCRDMA_ERR_NOMEM;
	b->e = e;
	b->user = user;
	b->xdr = xdr;
	b->len = len;
	b->xid = rpcrdma__get32(xdr);
	b->state = BC_WAITING;
	e->now = now_ms;
	rpcrdma__list_push(&e->bc_waitq, &b->link);
	e->st.bc_calls++;
	*out = b;
	rpcrdma__eng_bc_pump(e);
	return 0;
}

/* The reply's receive is posted before the call can reach the client (RFC 5666 §3.3). */
static int bc_reply_recv(struct rpcrdma_eng *e)
{
	int rc;

	if (e->bc_recvs >= e->bc_inflight + 1)
		return 0;
	rc = rpcrdma__eng_post_recv(e);
	if (!rc)
		e->bc_recvs++;
	return rc;
}

/* Send waiting backward calls within the client's backward grant (§4.1) and our own
 * bound; the forward direction's credits are not touched. */
void rpcrdma__eng_bc_pump(struct rpcrdma_eng *e)
{
	struct rpcrdma_eng_bcall *b;
	uint32_t limit;
	int rc;

	if (is_client(e))
		return;
	limit = e->bc_granted < bc_slots(e) ? e->bc_granted : bc_slots(e);
	while (!e->dead && (b = bcall_of(e->bc_waitq.head)) != NULL) {
		if (e->bc_inflight >= limit || !e->sfree ||
		    (e->bc_recvs < e->bc_inflight + 1 && !e->rfree))
			return;
		rc = bc_reply_recv(e);
		if (rc == -RPCRDMA_ERR_AGAIN)
			return;
		if (rc) {
			rpcrdma__eng_fail(e, rc, RPCRDMA_EC_DISCONNECT);
			return;
		}
		/* sent from here on: a post that breaks the connection fails it with the rest */
		rpcrdma__list_unlink(&e->bc_waitq, &b->link);
		rpcrdma__list_push(&e->bc_sent, &b->link);
		b->state = BC_SENT;
		e->bc_inflight++;
		send_backward(e, b->xid, bc_slots(e), b->xdr, b->len);
	}
}

static struct rpcrdma_eng_bcall *find_bcall(struct rpcrdma_eng *e, uint32_t xid)
{
	struct eng_link *k;

	for (k = e->bc_sent.head; k; k = k->next)
		if (bcall_of(k)->xid == xid)
			return bcall_of(k);
	return NULL;
}

/* A grant of 0 would stop the backchannel for good; the client cannot mean that while
 * it answers (as in the forward direction, RFC 5666 §3.3). */
static void take_bc_credits(struct rpcrdma_eng *e, uint32_t credits)
{
	e->bc_granted = credits ? credits : 1;
}

static int bc_reply_status(struct rpcrdma_eng *e, struct rpcrdma_eng_bcall *b,
			   const struct rpcrdma_msg *m)
{
	if (m->proc == RPCRDMA_ERROR) {
		rpcrdma__eng_count(e, m->err == RPCRDMA_WIRE_ERR_VERS ? RPCRDMA_EC_ERR_VERS_RCVD
								    : RPCRDMA_EC_ERR_CHUNK_RCVD);
		return -RPCRDMA_ERR_PROTO;
	}
	if (m->proc != RPCRDMA_MSG || m->nreads || m->nwrites || m->has_reply) {
		rpcrdma__eng_count(e, RPCRDMA_EC_CHUNK_MISMATCH);   /* §5.3 */
		return -RPCRDMA_ERR_PROTO;
	}
	b->reply = malloc(m->body_len);
	if (!b->reply) {
		rpcrdma__eng_count(e, RPCRDMA_EC_NO_RESOURCES);
		return -RPCRDMA_ERR_NOMEM;
	}
	memcpy(b->reply, m->body, m->body_len);
	b->reply_len = m->body_len;
	return 0;
}

/* A reply, or an RDMA_ERROR, to a backward call we sent: it used the receive posted for
 * it, which is not posted again. Returns false when m answers no backward call. */
bool rpcrdma__eng_bc_server_recv(struct rpcrdma_eng *e, const struct rpcrdma_msg *m)
{
	struct rpcrdma_eng_bcall *b;
	int status;

	if (m->proc != RPCRDMA_ERROR && !rpcrdma__eng_is_reply(m))
		return false;
	b = find_bcall(e, m->xid);
	if (!b)
		return false;
	rpcrdma__list_unlink(&e->bc_sent, &b->link);
	e->bc_inflight--;
	e->bc_recvs--;
	take_bc_credits(e, m->credits);
	e->st.bc_replies++;
	status = bc_reply_status(e, b, m);
	bc_finish(e, b, status);
	rpcrdma__eng_bc_pump(e);
	return true;
}

void *rpcrdma_eng_bcall_user(const struct rpcrdma_eng_bcall *b)
{
	return b->user;
}

int rpcrdma_eng_bcall_status(const struct rpcrdma_eng_bcall *b)
{
	return b->status;
}

const void *rpcrdma_eng_bcall_reply(const struct rpcrdma_eng_bcall *b, uint32_t *len)
{
	*len = b->reply_len;
	return b->reply;
}

void rpcrdma_eng_bcall_free(struct rpcrdma_eng_bcall *b)
{
	if (!b)
		return;
	if (b->state == BC_WAITING) {
		rpcrdma__list_unlink(&b->e->bc_waitq, &b->link);
	} else if (b->state == BC_SENT) {
		b->abandoned = true;   /* its credit and receive come back with its reply */
		b->xdr = NULL;
		return;
	}
	free(b->reply);
	free(b);
}

/* ---- failure and teardown ---- */

static void fail_list(struct rpcrdma_eng *e, struct eng_list *l)
{
	struct rpcrdma_eng_bcall *b;

	while ((b = bcall_of(l->head)) != NULL) {
		rpcrdma__list_unlink(l, &b->link);
		bc_finish(e, b, -RPCRDMA_ERR_DISCONN);
	}
}

/* The connection is gone: every backward call fails; a client forgets the calls it was
 * to answer (their answers would find no connection). */
void rpcrdma__eng_bc_fail_all(struct rpcrdma_eng *e)
{
	if (is_client(e)) {
		if (e->bc_held)
			memset(e->bc_held, 0, bc_slots(e));
		e->bc_nheld = 0;
		return;
	}
	e->bc_inflight = 0;
	fail_list(e, &e->bc_waitq);
	fail_list(e, &e->bc_sent);
}

void rpcrdma__eng_bc_destroy(struct rpcrdma_eng *e)
{
	free(e->bc_xids);
	free(e->bc_held);
}
