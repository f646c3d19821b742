/* SPDX-License-Identifier: BSD-2-Clause */
/* nfs4cp: copies a file to or from an NFSv4.1 server over RPC-over-RDMA, lists a
 * directory, or holds a file open under a read delegation and answers the server's
 * callbacks, as a user's own client would. One RDMA connection carries the fore channel
 * and, through the library's backchannel (RFC 8167), the callbacks:
 *
 *   EXCHANGE_ID, CREATE_SESSION (CONN_BACK_CHAN, callback program 0x40000000),
 *   RECLAIM_COMPLETE, then SEQUENCE first in every COMPOUND: PUTROOTFH + LOOKUP down the
 *   path, OPEN, READ (data in write chunks) or WRITE UNSTABLE (data in read chunks, the
 *   NFSv4 binding of RFC 8267 §5) several in flight on the session's slots, COMMIT,
 *   CLOSE, DELEGRETURN, DESTROY_SESSION, DESTROY_CLIENTID. After the library reconnects,
 *   BIND_CONN_TO_SESSION binds the new connection to both channels.
 *
 *   nfs4cp [OPTIONS] HOST:/path/file LOCAL     read a file
 *   nfs4cp [OPTIONS] LOCAL HOST:/path/file     write a file (created, or truncated)
 *   nfs4cp [OPTIONS] --list HOST:/path/dir     list a directory (READDIR)
 *   nfs4cp --hold SECONDS HOST:/path/file LOCAL  read it, then keep it open that long
 *
 * Paths are the server's NFSv4 namespace (knfsd: the exported path). Every failure names
 * the operation and the NFS4ERR_* status, or the RPC error. Exit status 0 on success, 1 on
 * a failure, 2 on a usage error. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rpcrdma/nfs4.h>
#include <rpcrdma/rpcrdma.h>

#include "nfs4_prot.h"

#include "../cp_args.h"

#define DEPTH_MAX 64u
#define MAX_OPS 48u          /* operations in one COMPOUND we build */
#define MAX_COMPONENTS 32u   /* path components */
#define CALL_TIMEOUT_S 60
#define RETRY_S 120          /* how long NFS4ERR_GRACE / NFS4ERR_DELAY are waited out */
#define RENEW_MS 2000        /* a SEQUENCE this often while holding: the lease (10 s at least
				on Linux) never runs out */
#define CB_PROGRAM 0x40000000u
#define CB_VERSION 1u

struct opts {
	struct cp_opts cp;      /* depth: READs or WRITEs in flight (session slots) */
	uint32_t hold;          /* seconds to keep the file open after reading it */
	int ignore_recall;
};

struct remote {
	char host[256];
	char path[4096];
};

/* The backchannel's state: its one slot and the delegation a recall names. */
struct cbstate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	sessionid4 sid;
	sequenceid4 seq;         /* of backchannel slot 0 */
	int deleg_held, recalled;
	int opening;             /* an OPEN's answer, and the delegation in it, to come */
	stateid4 deleg;
	struct timespec recall_at;
	unsigned long served;
};

/* One NFSv4.1 client: its RDMA client, client ID, session and slots. */
struct nfs4 {
	CLIENT *cl;
	const char *host;
	int quiet, have_client, have_session;
	clientid4 clientid;
	sessionid4 sid;
	uint32_t nslots, maxops, maxreq, maxresp;
	sequenceid4 slot_seq[DEPTH_MAX];
	uint32_t flags_seen;
	uint64_t connects_bound;
	struct cbstate cb;
};

/* A COMPOUND being built, sent and answered; SEQUENCE first when slot >= 0. */
struct cpd {
	nfs_argop4 ops[MAX_OPS];
	COMPOUND4args args;
	COMPOUND4res res;
	int slot;
};

static struct nfs4 *the_client;   /* the callback dispatch's (it has no context) */

static int failf(const char *fmt, ...)
{
	va_list ap;

	fputs("nfs4cp: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

static void say(const struct nfs4 *n, const char *fmt, ...)
{
	va_list ap;

	if (n->quiet)
		return;
	flockfile(stderr);   /* one line, whole: the callback thread says things too */
	fputs("nfs4cp: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* ---- names ---- */

#define S(x) { x, #x }
static const struct { unsigned v; const char *name; } stat_names[] = {
	S(NFS4_OK), S(NFS4ERR_PERM), S(NFS4ERR_NOENT), S(NFS4ERR_IO), S(NFS4ERR_NXIO),
	S(NFS4ERR_ACCESS), S(NFS4ERR_EXIST), S(NFS4ERR_XDEV), S(NFS4ERR_NOTDIR),
	S(NFS4ERR_ISDIR), S(NFS4ERR_INVAL), S(NFS4ERR_FBIG), S(NFS4ERR_NOSPC),
	S(NFS4ERR_ROFS), S(NFS4ERR_MLINK), S(NFS4ERR_NAMETOOLONG), S(NFS4ERR_NOTEMPTY),
	S(NFS4ERR_DQUOT), S(NFS4ERR_STALE), S(NFS4ERR_BADHANDLE), S(NFS4ERR_BAD_COOKIE),
	S(NFS4ERR_NOTSUPP), S(NFS4ERR_TOOSMALL), S(NFS4ERR_SERVERFAULT), S(NFS4ERR_BADTYPE),
	S(NFS4ERR_DELAY), S(NFS4ERR_SAME), S(NFS4ERR_DENIED), S(NFS4ERR_EXPIRED),
	S(NFS4ERR_LOCKED), S(NFS4ERR_GRACE), S(NFS4ERR_FHEXPIRED), S(NFS4ERR_SHARE_DENIED),
	S(NFS4ERR_WRONGSEC), S(NFS4ERR_CLID_INUSE), S(NFS4ERR_RESOURCE), S(NFS4ERR_MOVED),
	S(NFS4ERR_NOFILEHANDLE), S(NFS4ERR_MINOR_VERS_MISMATCH), S(NFS4ERR_STALE_CLIENTID),
	S(NFS4ERR_STALE_STATEID), S(NFS4ERR_OLD_STATEID), S(NFS4ERR_BAD_STATEID),
	S(NFS4ERR_BAD_SEQID), S(NFS4ERR_NOT_SAME), S(NFS4ERR_LOCK_RANGE), S(NFS4ERR_SYMLINK),
	S(NFS4ERR_RESTOREFH), S(NFS4ERR_LEASE_MOVED), S(NFS4ERR_ATTRNOTSUPP),
	S(NFS4ERR_NO_GRACE), S(NFS4ERR_RECLAIM_BAD), S(NFS4ERR_RECLAIM_CONFLICT),
	S(NFS4ERR_BADXDR), S(NFS4ERR_LOCKS_HELD), S(NFS4ERR_OPENMODE), S(NFS4ERR_BADOWNER),
	S(NFS4ERR_BADCHAR), S(NFS4ERR_BADNAME), S(NFS4ERR_BAD_RANGE), S(NFS4ERR_LOCK_NOTSUPP),
	S(NFS4ERR_OP_ILLEGAL), S(NFS4ERR_DEADLOCK), S(NFS4ERR_FILE_OPEN),
	S(NFS4ERR_ADMIN_REVOKED), S(NFS4ERR_CB_PATH_DOWN), S(NFS4ERR_BADIOMODE),
	S(NFS4ERR_BADLAYOUT), S(NFS4ERR_BAD_SESSION_DIGEST), S(NFS4ERR_BADSESSION),
	S(NFS4ERR_BADSLOT), S(NFS4ERR_COMPLETE_ALREADY), S(NFS4ERR_CONN_NOT_BOUND_TO_SESSION),
	S(NFS4ERR_DELEG_ALREADY_WANTED), S(NFS4ERR_BACK_CHAN_BUSY), S(NFS4ERR_LAYOUTTRYLATER),
	S(NFS4ERR_LAYOUTUNAVAILABLE), S(NFS4ERR_NOMATCHING_LAYOUT), S(NFS4ERR_RECALLCONFLICT),
	S(NFS4ERR_UNKNOWN_LAYOUTTYPE), S(NFS4ERR_SEQ_MISORDERED), S(NFS4ERR_SEQUENCE_POS),
	S(NFS4ERR_REQ_TOO_BIG), S(NFS4ERR_REP_TOO_BIG), S(NFS4ERR_REP_TOO_BIG_TO_CACHE),
	S(NFS4ERR_RETRY_UNCACHED_REP), S(NFS4ERR_UNSAFE_COMPOUND), S(NFS4ERR_TOO_MANY_OPS),
	S(NFS4ERR_OP_NOT_IN_SESSION), S(NFS4ERR_HASH_ALG_UNSUPP), S(NFS4ERR_CLIENTID_BUSY),
	S(NFS4ERR_PNFS_IO_HOLE), S(NFS4ERR_SEQ_FALSE_RETRY), S(NFS4ERR_BAD_HIGH_SLOT),
	S(NFS4ERR_DEADSESSION), S(NFS4ERR_ENCR_ALG_UNSUPP), S(NFS4ERR_PNFS_NO_LAYOUT),
	S(NFS4ERR_NOT_ONLY_OP), S(NFS4ERR_WRONG_CRED), S(NFS4ERR_WRONG_TYPE),
	S(NFS4ERR_DIRDELEG_UNAVAIL), S(NFS4ERR_REJECT_DELEG), S(NFS4ERR_RETURNCONFLICT),
	S(NFS4ERR_DELEG_REVOKED),
};
#undef S

static const char *stat_name(unsigned s)
{
	static __thread char other[32];
	size_t i;

	for (i = 0; i < sizeof(stat_names) / sizeof(stat_names[0]); i++)
		if (stat_names[i].v == s)
			return stat_names[i].name;
	snprintf(other, sizeof(other), "NFS4ERR %u (unknown)", s);
	return other;
}

#define O(x) { OP_##x, #x }
static const struct { unsigned v; const char *name; } op_names[] = {
	O(ACCESS), O(CLOSE), O(COMMIT), O(CREATE), O(DELEGRETURN), O(GETATTR), O(GETFH),
	O(LOOKUP), O(OPEN), O(PUTFH), O(PUTROOTFH), O(READ), O(READDIR), O(READLINK),
	O(REMOVE), O(RESTOREFH), O(SAVEFH), O(SETATTR), O(WRITE), O(BIND_CONN_TO_SESSION),
	O(EXCHANGE_ID), O(CREATE_SESSION), O(DESTROY_SESSION), O(SEQUENCE),
	O(DESTROY_CLIENTID), O(RECLAIM_COMPLETE), O(ILLEGAL),
};
#undef O

static const char *op_name(unsigned op)
{
	size_t i;

	for (i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (op_names[i].v == op)
			return op_names[i].name;
	return "an unknown operation";
}

/* SEQUENCE's status flags (RFC 5661 §18.46.3), in words. */
static const struct { uint32_t bit; const char *what; } seq_flags[] = {
	{ SEQ4_STATUS_CB_PATH_DOWN, "CB_PATH_DOWN: the server cannot call us back on any connection" },
	{ SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING, "CB_GSS_CONTEXTS_EXPIRING" },
	{ SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED, "CB_GSS_CONTEXTS_EXPIRED" },
	{ SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED, "EXPIRED_ALL_STATE_REVOKED: the lease expired, every open and delegation is gone" },
	{ SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED, "EXPIRED_SOME_STATE_REVOKED: some state was revoked after the lease expired" },
	{ SEQ4_STATUS_ADMIN_STATE_REVOKED, "ADMIN_STATE_REVOKED: an administrator revoked state" },
	{ SEQ4_STATUS_RECALLABLE_STATE_REVOKED, "RECALLABLE_STATE_REVOKED: a delegation was revoked (not returned in time)" },
	{ SEQ4_STATUS_LEASE_MOVED, "LEASE_MOVED" },
	{ SEQ4_STATUS_RESTART_RECLAIM_NEEDED, "RESTART_RECLAIM_NEEDED: the server restarted" },
	{ SEQ4_STATUS_CB_PATH_DOWN_SESSION, "CB_PATH_DOWN_SESSION: no connection of this session carries callbacks" },
	{ SEQ4_STATUS_BACKCHANNEL_FAULT, "BACKCHANNEL_FAULT: the server saw a callback fail" },
	{ SEQ4_STATUS_DEVID_CHANGED, "DEVID_CHANGED" },
	{ SEQ4_STATUS_DEVID_DELETED, "DEVID_DELETED" },
};

/* ---- COMPOUNDs ---- */

static nfs_argop4 *add(struct cpd *c, nfs_opnum4 op)
{
	nfs_argop4 *a = &c->ops[c->args.argarray.argarray_len++];

	memset(a, 0, sizeof(*a));
	a->argop = op;
	return a;
}

/* A COMPOUND; with slot >= 0 its first operation is SEQUENCE on that slot. */
static void cpd_init(struct nfs4 *n, struct cpd *c, int slot)
{
	memset(&c->args, 0, sizeof(c->args));
	memset(&c->res, 0, sizeof(c->res));
	c->args.minorversion = 1;
	c->args.argarray.argarray_val = c->ops;
	c->slot = slot;
	if (slot >= 0) {
		SEQUENCE4args *s = &add(c, OP_SEQUENCE)->nfs_argop4_u.opsequence;

		memcpy(s->sa_sessionid, n->sid, sizeof(s->sa_sessionid));
		s->sa_slotid = (slotid4)slot;
		s->sa_highest_slotid = n->nslots - 1;
		/* the server keeps the reply for a call sent again after a reconnection
		 * (RFC 5661 §2.10.6.1.3); READ and READDIR clear it: sent again they are
		 * answered RETRY_UNCACHED_REP and asked anew */
		s->sa_cachethis = TRUE;
	}
}

static void cpd_free(struct cpd *c)
{
	xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&c->res);
	memset(&c->res, 0, sizeof(c->res));
}

/* Result i of the answer if it is that operation's, else NULL. */
static nfs_resop4 *res_op(struct cpd *c, u_int i, nfs_opnum4 op)
{
	if (i >= c->res.resarray.resarray_len || c->res.resarray.resarray_val[i].resop != op)
		return NULL;
	return &c->res.resarray.resarray_val[i];
}

static int bind_conn(struct nfs4 *n, uint64_t connects);

/* New SEQUENCE status flags, said once each; a callback path down after a reconnection
 * is what BIND_CONN_TO_SESSION mends. */
static void seq_flags_seen(struct nfs4 *n, uint32_t flags)
{
	uint32_t fresh = flags & ~n->flags_seen;
	size_t i;

	for (i = 0; i < sizeof(seq_flags) / sizeof(seq_flags[0]); i++)
		if (fresh & seq_flags[i].bit)
			say(n, "SEQUENCE says %s", seq_flags[i].what);
	n->flags_seen = flags;
}

/* After an answer: the slot's sequence moves on when SEQUENCE succeeded (RFC 5661
 * §18.46.3: the server took the request on that slot), and its flags are looked at. */
static void seq_done(struct nfs4 *n, struct cpd *c)
{
	nfs_resop4 *r = c->slot >= 0 ? res_op(c, 0, OP_SEQUENCE) : NULL;
	SEQUENCE4res *s = r ? &r->nfs_resop4_u.opsequence : NULL;

	if (!s || s->sr_status != NFS4_OK)
		return;
	n->slot_seq[c->slot]++;
	seq_flags_seen(n, s->SEQUENCE4res_u.sr_resok4.sr_status_flags);
}

/* The connection changed since the session was last bound to one: bind this one. */
static int rebind_if_new(struct nfs4 *n)
{
	uint64_t connects = 0;

	if (!n->have_session || !clnt_control(n->cl, RPCRDMA_CLGET_CONNECTS, (char *)&connects) ||
	    connects == n->connects_bound)
		return 0;
	return bind_conn(n, connects);
}

static void seq_prepare(struct nfs4 *n, struct cpd *c)
{
	if (c->slot >= 0)
		c->ops[0].nfs_argop4_u.opsequence.sa_sequenceid = n->slot_seq[c->slot] + 1;
}

/* Send c and wait: -1 when no answer came (said), else the COMPOUND's status. */
static int run_once(struct nfs4 *n, struct cpd *c, const char *what)
{
	enum clnt_stat st;

	if (c->args.argarray.argarray_len > n->maxops)
		return failf("%s: %u operations, more than the %u the session allows", what,
			     c->args.argarray.argarray_len, n->maxops);
	seq_prepare(n, c);
	cpd_free(c);
	st = nfsproc4_compound_4(&c->args, &c->res, n->cl);
	if (st != RPC_SUCCESS) {
		const char *more = rpcrdma_clnt_errtext(n->cl);

		return failf("%s: %s%s%s", what, clnt_sperrno(st), *more ? ": " : "", more);
	}
	seq_done(n, c);
	return (int)c->res.status;
}

/* The failed operation of an answer, by name, with its status. */
static int nfs_fail(struct cpd *c, const char *what, const char *name)
{
	u_int k = c->res.resarray.resarray_len;
	unsigned op = k ? c->res.resarray.resarray_val[k - 1].resop : OP_ILLEGAL;

	return failf("%s%s%s: %s failed: %s", what, *name ? " " : "", name, op_name(op),
		     stat_name(c->res.status));
}

/* run_once, NFS4ERR_GRACE and NFS4ERR_DELAY waited out (the server's grace period after
 * it started, RFC 5661 §8.4.2.1); 0, or -1 with the failure said. */
static int run(struct nfs4 *n, struct cpd *c, const char *what, const char *name)
{
	time_t end = time(NULL) + RETRY_S;
	int st, told = 0;

	if (c->slot >= 0 && rebind_if_new(n))
		return -1;
	while ((st = run_once(n, c, what)) == NFS4ERR_GRACE || st == NFS4ERR_DELAY) {
		if (time(NULL) >= end)
			break;
		if (st == NFS4ERR_GRACE && !told++)
			say(n, "%s: the server is in its grace period; waiting", what);
		sleep(1);
	}
	if (st < 0)
		return -1;
	return st == NFS4_OK ? 0 : nfs_fail(c, what, name);
}

/* ---- the client ID and the session ---- */

static int exchange_id(struct nfs4 *n)
{
	static char owner[128];
	struct cpd c;
	EXCHANGE_ID4args *e;
	EXCHANGE_ID4resok *ok;
	nfs_resop4 *r;
	char host[64] = "";
	struct timespec now;
	int rc;

	cpd_init(n, &c, -1);
	e = &add(&c, OP_EXCHANGE_ID)->nfs_argop4_u.opexchange_id;
	gethostname(host, sizeof(host) - 1);
	clock_gettime(CLOCK_REALTIME, &now);
	/* unique to this run: a client that ends does not come back to reclaim */
	snprintf(owner, sizeof(owner), "nfs4cp/%s/%ld/%lld.%09ld", host, (long)getpid(),
		 (long long)now.tv_sec, now.tv_nsec);
	memcpy(e->eia_clientowner.co_verifier, &now, sizeof(e->eia_clientowner.co_verifier));
	e->eia_clientowner.co_ownerid.co_ownerid_len = (u_int)strlen(owner);
	e->eia_clientowner.co_ownerid.co_ownerid_val = owner;
	e->eia_state_protect.spa_how = SP4_NONE;
	rc = run(n, &c, "EXCHANGE_ID", "");
	/* the server says how many results: none, or another op's, is no answer */
	r = rc ? NULL : res_op(&c, 0, OP_EXCHANGE_ID);
	if (!rc && !r)
		rc = failf("EXCHANGE_ID: the answer lacks its result");
	if (r) {
		ok = &r->nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
		n->clientid = ok->eir_clientid;
		n->have_client = 1;
		n->slot_seq[0] = ok->eir_sequenceid - 1;   /* CREATE_SESSION's sequence */
	}
	cpd_free(&c);
	return rc;
}

static void chan_attrs(channel_attrs4 *a, uint32_t req, uint32_t resp, uint32_t ops,
		       uint32_t reqs)
{
	memset(a, 0, sizeof(*a));
	a->ca_maxrequestsize = req;
	a->ca_maxresponsesize = resp;
	a->ca_maxresponsesize_cached = 4096;
	a->ca_maxoperations = ops;
	a->ca_maxrequests = reqs;
}

/* The session: the fore channel sized for the chunk and depth asked, the backchannel on
 * this connection (CONN_BACK_CHAN) for the callback program, one slot, calls no longer
 * than the library's backchannel takes inline (the 4 KiB threshold less its 28-byte
 * header, rpc.h). */
static int create_session(struct nfs4 *n, const struct opts *o)
{
	callback_sec_parms4 sec = { 0 };   /* AUTH_NONE */
	struct cpd c;
	CREATE_SESSION4args *a;
	CREATE_SESSION4resok *ok;
	nfs_resop4 *r;
	int rc;

	cpd_init(n, &c, -1);
	a = &add(&c, OP_CREATE_SESSION)->nfs_argop4_u.opcreate_session;
	a->csa_clientid = n->clientid;
	a->csa_sequence = n->slot_seq[0] + 1;
	a->csa_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
	chan_attrs(&a->csa_fore_chan_attrs, o->cp.chunk + 65536, o->cp.chunk + 65536, MAX_OPS, o->cp.depth);
	chan_attrs(&a->csa_back_chan_attrs, 4096 - 28, 4096 - 28, 8, 1);
	a->csa_back_chan_attrs.ca_maxresponsesize_cached = 0;
	a->csa_cb_program = CB_PROGRAM;
	a->csa_sec_parms.csa_sec_parms_len = 1;
	a->csa_sec_parms.csa_sec_parms_val = &sec;
	rc = run(n, &c, "CREATE_SESSION", "");
	r = rc ? NULL : res_op(&c, 0, OP_CREATE_SESSION);
	if (!rc && !r)
		rc = failf("CREATE_SESSION: the answer lacks its result");
	if (r) {
		ok = &r->nfs_resop4_u.opcreate_session.CREATE_SESSION4res_u.csr_resok4;
		pthread_mutex_lock(&n->cb.lock);
		memcpy(n->sid, ok->csr_sessionid, sizeof(n->sid));
		memcpy(n->cb.sid, ok->csr_sessionid, sizeof(n->sid));
		pthread_mutex_unlock(&n->cb.lock);
		n->have_session = 1;
		n->nslots = ok->csr_fore_chan_attrs.ca_maxrequests;
		if (n->nslots > o->cp.depth)
			n->nslots = o->cp.depth;
		if (n->nslots == 0)
			n->nslots = 1;
		n->maxops = ok->csr_fore_chan_attrs.ca_maxoperations;
		n->maxreq = ok->csr_fore_chan_attrs.ca_maxrequestsize;
		n->maxresp = ok->csr_fore_chan_attrs.ca_maxresponsesize;
		memset(n->slot_seq, 0, sizeof(n->slot_seq));
		clnt_control(n->cl, RPCRDMA_CLGET_CONNECTS, (char *)&n->connects_bound);
		say(n, "session: %u slots, requests %u B, replies %u B, %u operations; "
		    "backchannel: %u slot(s), calls %u B", n->nslots, n->maxreq, n->maxresp,
		    n->maxops, ok->csr_back_chan_attrs.ca_maxrequests,
		    ok->csr_back_chan_attrs.ca_maxrequestsize);
	}
	cpd_free(&c);
	return rc;
}

/* RFC 5661 §18.34: the connection in use, bound to the session for both channels, so
 * the server's callbacks come on it again. */
static int bind_conn(struct nfs4 *n, uint64_t connects)
{
	struct cpd c;
	BIND_CONN_TO_SESSION4args *b;
	nfs_resop4 *r;
	int rc;

	cpd_init(n, &c, -1);
	b = &add(&c, OP_BIND_CONN_TO_SESSION)->nfs_argop4_u.opbind_conn_to_session;
	memcpy(b->bctsa_sessid, n->sid, sizeof(b->bctsa_sessid));
	b->bctsa_dir = CDFC4_BACK_OR_BOTH;
	b->bctsa_use_conn_in_rdma_mode = FALSE;
	n->connects_bound = connects;   /* before the call: it may itself reconnect */
	rc = run(n, &c, "BIND_CONN_TO_SESSION", "");
	r = rc ? NULL : res_op(&c, 0, OP_BIND_CONN_TO_SESSION);
	if (r) {
		channel_dir_from_server4 d =
			r->nfs_resop4_u.opbind_conn_to_session.BIND_CONN_TO_SESSION4res_u.bctsr_resok4.bctsr_dir;

		say(n, "connection %llu bound to the session by BIND_CONN_TO_SESSION: %s",
		    (unsigned long long)connects,
		    d == CDFS4_BOTH ? "fore channel and backchannel" :
		    d == CDFS4_BACK ? "backchannel only" : "fore channel only");
		n->flags_seen &= ~(uint32_t)(SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION);
	}
	cpd_free(&c);
	return rc;
}

static int reclaim_complete(struct nfs4 *n)
{
	struct cpd c;
	int rc;

	cpd_init(n, &c, 0);
	add(&c, OP_RECLAIM_COMPLETE)->nfs_argop4_u.opreclaim_complete.rca_one_fs = FALSE;
	rc = run(n, &c, "RECLAIM_COMPLETE", "");
	cpd_free(&c);
	return rc;
}

/* A SEQUENCE alone: renews the lease, shows the flags, binds a new connection. */
static int renew(struct nfs4 *n)
{
	struct cpd c;
	int rc;

	cpd_init(n, &c, 0);
	rc = run(n, &c, "SEQUENCE", "");
	cpd_free(&c);
	return rc;
}

static void nfs_end(struct nfs4 *n)
{
	struct cpd c;

	if (!n->cl)
		return;
	if (n->have_session) {
		cpd_init(n, &c, -1);
		memcpy(add(&c, OP_DESTROY_SESSION)->nfs_argop4_u.opdestroy_session.dsa_sessionid,
		       n->sid, sizeof(n->sid));
		run(n, &c, "DESTROY_SESSION", "");
		cpd_free(&c);
		n->have_session = 0;
	}
	if (n->have_client) {
		cpd_init(n, &c, -1);
		add(&c, OP_DESTROY_CLIENTID)->nfs_argop4_u.opdestroy_clientid.dca_clientid = n->clientid;
		run(n, &c, "DESTROY_CLIENTID", "");
		cpd_free(&c);
		n->have_client = 0;
	}
	clnt_rdma_set_callback(n->cl, CB_PROGRAM, CB_VERSION, NULL);
	auth_destroy(n->cl->cl_auth);
	clnt_destroy(n->cl);
	n->cl = NULL;
}

/* ---- the backchannel: CB_NULL and CB_COMPOUND (RFC 5661 §20) ---- */

/* CB_SEQUENCE on our one slot (RFC 5661 §20.9.3); replies are not kept, so a call sent
 * again is answered RETRY_UNCACHED_REP. */
static nfsstat4 cb_sequence(struct cbstate *cb, const CB_SEQUENCE4args *a, CB_SEQUENCE4res *r)
{
	CB_SEQUENCE4resok *ok = &r->CB_SEQUENCE4res_u.csr_resok4;

	if (memcmp(a->csa_sessionid, cb->sid, sizeof(cb->sid)))
		return NFS4ERR_BADSESSION;
	if (a->csa_slotid != 0)
		return NFS4ERR_BADSLOT;
	if (a->csa_sequenceid == cb->seq)
		return NFS4ERR_RETRY_UNCACHED_REP;
	if (a->csa_sequenceid != cb->seq + 1)
		return NFS4ERR_SEQ_MISORDERED;
	cb->seq++;
	memcpy(ok->csr_sessionid, a->csa_sessionid, sizeof(ok->csr_sessionid));
	ok->csr_sequenceid = a->csa_sequenceid;
	ok->csr_slotid = 0;
	ok->csr_highest_slotid = 0;
	ok->csr_target_highest_slotid = 0;
	return NFS4_OK;
}

/* CB_RECALL (§20.2): noted for the main thread, which returns the delegation. */
static nfsstat4 cb_recall(struct cbstate *cb, const CB_RECALL4args *a)
{
	if (!cb->deleg_held || memcmp(a->stateid.other, cb->deleg.other, sizeof(cb->deleg.other)))
		/* the recall may overtake the OPEN reply that grants the delegation: the
		 * server is to ask again (RFC 5661 §20.2.3) */
		return cb->opening ? NFS4ERR_DELAY : NFS4ERR_BAD_STATEID;
	cb->recalled = 1;
	clock_gettime(CLOCK_MONOTONIC, &cb->recall_at);
	pthread_cond_signal(&cb->cond);
	return NFS4_OK;
}

static nfsstat4 cb_op(struct cbstate *cb, u_int i, const nfs_cb_argop4 *a, nfs_cb_resop4 *r)
{
	r->resop = a->argop;
	if ((i == 0) != (a->argop == OP_CB_SEQUENCE))
		return r->nfs_cb_resop4_u.opcbillegal.status =
			       i ? NFS4ERR_SEQUENCE_POS : NFS4ERR_OP_NOT_IN_SESSION;
	switch (a->argop) {
	case OP_CB_SEQUENCE:
		return r->nfs_cb_resop4_u.opcbsequence.csr_status =
			       cb_sequence(cb, &a->nfs_cb_argop4_u.opcbsequence,
					   &r->nfs_cb_resop4_u.opcbsequence);
	case OP_CB_RECALL:
		return r->nfs_cb_resop4_u.opcbrecall.status =
			       cb_recall(cb, &a->nfs_cb_argop4_u.opcbrecall);
	case OP_CB_RECALL_ANY:
		/* we hold one delegation at most and return it when recalled */
		return r->nfs_cb_resop4_u.opcbrecall_any.crar_status = NFS4_OK;
	case OP_CB_GETATTR:
		/* asked only of write delegations, which we never take */
		return r->nfs_cb_resop4_u.opcbgetattr.status = NFS4ERR_BADHANDLE;
	default:
		r->resop = OP_CB_ILLEGAL;
		return r->nfs_cb_resop4_u.opcbillegal.status = NFS4ERR_OP_ILLEGAL;
	}
}

static const char *cb_op_name(unsigned op)
{
	switch (op) {
	case OP_CB_SEQUENCE: return "CB_SEQUENCE";
	case OP_CB_RECALL: return "CB_RECALL";
	case OP_CB_RECALL_ANY: return "CB_RECALL_ANY";
	case OP_CB_GETATTR: return "CB_GETATTR";
	}
	return "CB_ILLEGAL";
}

/* The answer to one CB_COMPOUND; the operations' names go into ops (for the log). */
static void cb_compound(struct cbstate *cb, const CB_COMPOUND4args *a, CB_COMPOUND4res *r,
			char *ops, size_t cap)
{
	u_int i;
	size_t at = 0;

	memset(r, 0, sizeof(*r));
	r->tag = a->tag;
	if (a->minorversion != 1) {
		r->status = NFS4ERR_MINOR_VERS_MISMATCH;
		return;
	}
	r->resarray.resarray_val = calloc(a->argarray.argarray_len + 1, sizeof(nfs_cb_resop4));
	if (!r->resarray.resarray_val) {
		r->status = NFS4ERR_RESOURCE;
		return;
	}
	pthread_mutex_lock(&cb->lock);
	for (i = 0; i < a->argarray.argarray_len; i++) {
		r->resarray.resarray_len = i + 1;
		at += (size_t)snprintf(ops + at, at < cap ? cap - at : 0, "%s%s", i ? " " : "",
				       cb_op_name(a->argarray.argarray_val[i].argop));
		r->status = cb_op(cb, i, &a->argarray.argarray_val[i], &r->resarray.resarray_val[i]);
		if (r->status != NFS4_OK)
			break;
	}
	pthread_mutex_unlock(&cb->lock);
}

/* The callback program, served on the client's connection by the library's background
 * thread (clnt_rdma_set_callback): each call printed with how long it took to answer. */
static void cb_dispatch(struct svc_req *rq, SVCXPRT *xprt)
{
	struct nfs4 *n = the_client;
	CB_COMPOUND4args a;
	CB_COMPOUND4res r;
	struct timespec t0;
	char ops[256] = "";

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (rq->rq_proc == 0) {   /* CB_NULL: the server probing the path */
		svc_sendreply(xprt, (xdrproc_t)(void (*)(void))xdr_void, NULL);
		say(n, "callback CB_NULL answered in %.3f ms", ms_since(&t0));
		return;
	}
	if (rq->rq_proc != 1) {
		svcerr_noproc(xprt);
		return;
	}
	memset(&a, 0, sizeof(a));
	if (!svc_getargs(xprt, (xdrproc_t)xdr_CB_COMPOUND4args, (caddr_t)&a)) {
		svcerr_decode(xprt);
		say(n, "callback CB_COMPOUND: arguments that do not decode (GARBAGE_ARGS)");
		/* what the decoder allocated before it stopped */
		svc_freeargs(xprt, (xdrproc_t)xdr_CB_COMPOUND4args, (caddr_t)&a);
		return;
	}
	cb_compound(&n->cb, &a, &r, ops, sizeof(ops));
	svc_sendreply(xprt, (xdrproc_t)xdr_CB_COMPOUND4res, (caddr_t)&r);
	say(n, "callback CB_COMPOUND [%s] answered %s in %.3f ms", ops, stat_name(r.status),
	    ms_since(&t0));
	free(r.resarray.resarray_val);
	svc_freeargs(xprt, (xdrproc_t)xdr_CB_COMPOUND4args, (caddr_t)&a);
	pthread_mutex_lock(&n->cb.lock);
	n->cb.served++;
	pthread_mutex_unlock(&n->cb.lock);
}

/* ---- connecting ---- */

static int nfs_start(struct nfs4 *n, const struct remote *r, const struct opts *o)
{
	struct rpcrdma_clnt_opts co;
	struct timeval tv = { CALL_TIMEOUT_S, 0 };

	memset(&co, 0, sizeof(co));
	co.provider = o->cp.provider;
	co.port = o->cp.port;
	n->host = r->host;
	n->quiet = o->cp.quiet;
	n->maxops = MAX_OPS;
	n->nslots = 1;
	n->cl = clnt_rdma_create(r->host, NFS4_PROGRAM, NFS_V4, &co);
	if (!n->cl)
		return failf("NFS over RDMA at %s: %s", r->host, rpcrdma_create_errtext());
	clnt_control(n->cl, CLSET_TIMEOUT, (char *)&tv);
	auth_destroy(n->cl->cl_auth);
	n->cl->cl_auth = authunix_create_default();
	/* before CREATE_SESSION: the server probes the backchannel (CB_NULL) right after */
	if (clnt_rdma_set_callback(n->cl, CB_PROGRAM, CB_VERSION, cb_dispatch))
		return failf("cannot serve the callback program on the connection");
	if (exchange_id(n) || create_session(n, o) || reclaim_complete(n))
		return -1;
	return 0;
}

/* ---- paths, attributes, files ---- */

/* Splits "/a/b/c" into components (in place); the last one apart when last != NULL. */
static int split(char *path, char **comp, u_int *n, char **last)
{
	char *save = NULL, *p;

	*n = 0;
	for (p = strtok_r(path, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		if (*n == MAX_COMPONENTS)
			return failf("%s: more than %u path components", path, MAX_COMPONENTS);
		comp[(*n)++] = p;
	}
	if (last) {
		if (!*n)
			return failf("no file name in the path");
		*last = comp[--*n];
	}
	return 0;
}

static void add_lookups(struct cpd *c, char **comp, u_int k)
{
	u_int i;

	add(c, OP_PUTROOTFH);
	for (i = 0; i < k; i++) {
		component4 *name = &add(c, OP_LOOKUP)->nfs_argop4_u.oplookup.objname;

		name->utf8string_len = (u_int)strlen(comp[i]);
		name->utf8string_val = comp[i];
	}
}

#define TYPE_SIZE_MASK ((1u << FATTR4_TYPE) | (1u << FATTR4_SIZE))
static unsigned int type_size_bits[1] = { TYPE_SIZE_MASK };

static void add_getattr(struct cpd *c)
{
	bitmap4 *b = &add(c, OP_GETATTR)->nfs_argop4_u.opgetattr.attr_request;

	b->bitmap4_len = 1;
	b->bitmap4_val = type_size_bits;
}

/* The type and size out of attributes asked for with TYPE_SIZE_MASK: only those two may
 * be there, each at most once, in attribute order (RFC 5661 §3.3.13). */
static int type_size(const fattr4 *f, uint32_t *type, uint64_t *size)
{
	XDR x;
	u_int i;
	int ok;

	for (i = 1; i < f->attrmask.bitmap4_len; i++)
		if (f->attrmask.bitmap4_val[i])
			return -1;
	if (!f->attrmask.bitmap4_len || f->attrmask.bitmap4_val[0] != TYPE_SIZE_MASK)
		return -1;
	xdrmem_create(&x, f->attr_vals.attrlist4_val, f->attr_vals.attrlist4_len, XDR_DECODE);
	ok = xdr_u_int(&x, type) && xdr_u_int64_t(&x, size) &&
	     XDR_GETPOS(&x) == f->attr_vals.attrlist4_len;
	xdr_destroy(&x);
	return ok ? 0 : -1;
}

static int fh_copy(nfs_fh4 *dst, const nfs_fh4 *src)
{
	dst->nfs_fh4_len = src->nfs_fh4_len;
	dst->nfs_fh4_val = malloc(src->nfs_fh4_len + 1u);
	if (!dst->nfs_fh4_val)
		return failf("out of memory");
	memcpy(dst->nfs_fh4_val, src->nfs_fh4_val, src->nfs_fh4_len);
	return 0;
}

/* An open file: handle, open stateid, delegation if one came, size. */
struct nfile {
	const char *name;
	nfs_fh4 fh;
	stateid4 open;
	int deleg;
	uint64_t size;
	verifier4 verf;
};

static char owner_name[] = "nfs4cp-open-owner";

/* OPEN of dir/name: for reading, or for writing created or truncated (UNCHECKED4, size 0,
 * mode 0644); then GETFH and GETATTR in the same COMPOUND. */
static OPEN4args *add_open(struct nfs4 *n, struct cpd *c, char *name, int write,
			   fattr4 *create)
{
	OPEN4args *o = &add(c, OP_OPEN)->nfs_argop4_u.opopen;

	o->share_access = write ? OPEN4_SHARE_ACCESS_WRITE : OPEN4_SHARE_ACCESS_READ;
	o->share_deny = OPEN4_SHARE_DENY_NONE;
	o->owner.clientid = n->clientid;
	o->owner.owner.owner_len = sizeof(owner_name) - 1;
	o->owner.owner.owner_val = owner_name;
	o->claim.claim = CLAIM_NULL;
	o->claim.open_claim4_u.file.utf8string_len = (u_int)strlen(name);
	o->claim.open_claim4_u.file.utf8string_val = name;
	if (write) {
		o->openhow.opentype = OPEN4_CREATE;
		o->openhow.openflag4_u.how.mode = UNCHECKED4;
		o->openhow.openflag4_u.how.createhow4_u.createattrs = *create;
	}
	return o;
}

/* size 0 (FATTR4_SIZE, word 0) and mode 0644 (FATTR4_MODE, word 1), in attribute order */
static unsigned int create_bits[2] = { 1u << FATTR4_SIZE, 1u << (FATTR4_MODE - 32) };
static char create_vals[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, (char)0xa4 };

/* While an OPEN is out, a recall of a delegation we do not know yet is answered
 * NFS4ERR_DELAY (cb_recall). */
static void cb_opening(struct nfs4 *n, int on)
{
	pthread_mutex_lock(&n->cb.lock);
	n->cb.opening = on;
	pthread_mutex_unlock(&n->cb.lock);
}

static int file_open(struct nfs4 *n, char *path, int write, struct nfile *f)
{
	fattr4 create = { { 2, create_bits }, { sizeof(create_vals), create_vals } };
	char *comp[MAX_COMPONENTS], *name;
	struct cpd c;
	u_int k, i;
	nfs_resop4 *ro, *rf, *ra;
	OPEN4resok *ok;
	uint32_t type;
	int rc;

	if (split(path, comp, &k, &name))
		return -1;
	f->name = name;
	cpd_init(n, &c, 0);
	add_lookups(&c, comp, k);
	add_open(n, &c, name, write, &create);
	add(&c, OP_GETFH);
	add_getattr(&c);
	cb_opening(n, 1);
	if ((rc = run(n, &c, "OPEN", name)) != 0)
		goto out;
	i = k + 2;   /* SEQUENCE, PUTROOTFH, the LOOKUPs */
	ro = res_op(&c, i, OP_OPEN);
	rf = res_op(&c, i + 1, OP_GETFH);
	ra = res_op(&c, i + 2, OP_GETATTR);
	if (!ro || !rf || !ra) {
		rc = failf("OPEN %s: the answer lacks its results", name);
		goto out;
	}
	ok = &ro->nfs_resop4_u.opopen.OPEN4res_u.resok4;
	f->open = ok->stateid;
	if (ok->delegation.delegation_type == OPEN_DELEGATE_READ ||
	    ok->delegation.delegation_type == OPEN_DELEGATE_WRITE) {
		pthread_mutex_lock(&n->cb.lock);
		n->cb.deleg = ok->delegation.delegation_type == OPEN_DELEGATE_READ
				      ? ok->delegation.open_delegation4_u.read.stateid
				      : ok->delegation.open_delegation4_u.write.stateid;
		n->cb.deleg_held = 1;
		n->cb.recalled = 0;
		pthread_mutex_unlock(&n->cb.lock);
		f->deleg = 1;
	}
	/* the handle first: with it, the caller's file_close CLOSEs (and returns the
	 * delegation) when a check below fails, or the open state outlives us and
	 * DESTROY_CLIENTID is refused (NFS4ERR_CLIENTID_BUSY) */
	if ((rc = fh_copy(&f->fh, &rf->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object)) != 0)
		goto out;
	if (type_size(&ra->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes, &type,
		      &f->size))
		rc = failf("GETATTR %s: attributes other than those asked for", name);
	else if (type != NF4REG)
		rc = failf("%s: not a regular file", name);
out:
	cb_opening(n, 0);
	cpd_free(&c);
	return rc;
}

static void add_putfh(struct cpd *c, nfs_fh4 *fh)
{
	add(c, OP_PUTFH)->nfs_argop4_u.opputfh.object = *fh;
}

/* DELEGRETURN of the delegation held, if it still is. */
static int deleg_return(struct nfs4 *n, struct nfile *f)
{
	struct cpd c;
	stateid4 sid;
	int rc;

	pthread_mutex_lock(&n->cb.lock);
	if (!n->cb.deleg_held) {
		pthread_mutex_unlock(&n->cb.lock);
		return 0;
	}
	sid = n->cb.deleg;
	pthread_mutex_unlock(&n->cb.lock);
	cpd_init(n, &c, 0);
	add_putfh(&c, &f->fh);
	add(&c, OP_DELEGRETURN)->nfs_argop4_u.opdelegreturn.deleg_stateid = sid;
	rc = run(n, &c, "DELEGRETURN", f->name);
	cpd_free(&c);
	pthread_mutex_lock(&n->cb.lock);
	n->cb.deleg_held = 0;
	pthread_mutex_unlock(&n->cb.lock);
	f->deleg = 0;
	return rc;
}

static int file_close(struct nfs4 *n, struct nfile *f)
{
	struct cpd c;
	int rc;

	if (!f->fh.nfs_fh4_val)
		return 0;
	rc = deleg_return(n, f);
	cpd_init(n, &c, 0);
	add_putfh(&c, &f->fh);
	add(&c, OP_CLOSE)->nfs_argop4_u.opclose.open_stateid = f->open;
	rc |= run(n, &c, "CLOSE", f->name);
	cpd_free(&c);
	free(f->fh.nfs_fh4_val);
	f->fh.nfs_fh4_val = NULL;
	return rc;
}

/* ---- READ and WRITE on the session's slots ---- */

struct ioslot {
	struct cpd c;
	char *buf;
	uint32_t cap;   /* of buf */
	uint64_t off;
	uint32_t len;
	int busy, done, again;
	enum clnt_stat st;
};

static void io_done(void *ctx, enum clnt_stat st)
{
	struct ioslot *s = ctx;

	s->st = st;
	s->done = 1;
}

/* Slot i's answer, waited for; 0, 1 when it must be asked again (a READ sent again
 * after a reconnection, its reply not kept: RFC 5661 §18.46.3), or -1 with the failure
 * said. */
static int io_wait(struct nfs4 *n, struct ioslot *s, const char *what, const char *name)
{
	while (!s->done)
		rpcrdma_clnt_progress(n->cl, 1000);
	s->busy = 0;
	if (s->st != RPC_SUCCESS) {
		const char *more = rpcrdma_clnt_errtext(n->cl);

		return failf("%s %s: %s%s%s", what, name, clnt_sperrno(s->st), *more ? ": " : "",
			     more);
	}
	seq_done(n, &s->c);
	if (s->c.res.status == NFS4ERR_RETRY_UNCACHED_REP && res_op(&s->c, 0, OP_SEQUENCE))
		return 1;
	return s->c.res.status == NFS4_OK ? 0 : nfs_fail(&s->c, what, name);
}

static int io_send(struct nfs4 *n, struct ioslot *s, const char *what)
{
	s->busy = 1;
	s->done = 0;
	seq_prepare(n, &s->c);
	if (rpcrdma_clnt_call_async(n->cl, NFSPROC4_COMPOUND, (xdrproc_t)xdr_COMPOUND4args,
				    &s->c.args, (xdrproc_t)xdr_COMPOUND4res, &s->c.res, io_done, s)) {
		s->busy = 0;
		return failf("%s: the call could not be sent", what);
	}
	return 0;
}

/* Slots with one buffer each, handed to the client as long-lived memory (docs/RPC.md,
 * "Long-lived memory"): each READ's write chunk and WRITE's read chunk lies in it. */
static struct ioslot *slots_new(struct nfs4 *n, uint32_t chunk)
{
	struct ioslot *s = calloc(n->nslots, sizeof(*s));
	struct rpcrdma_mem m = { NULL, (size_t)n->nslots * chunk };
	uint32_t i;

	if (!s || posix_memalign(&m.addr, 4096, m.len ? m.len : 1)) {
		free(s);
		return NULL;
	}
	for (i = 0; i < n->nslots; i++) {
		s[i].buf = (char *)m.addr + (size_t)i * chunk;
		s[i].cap = chunk;
	}
	clnt_control(n->cl, RPCRDMA_CLSET_MEM_ADD, (char *)&m);
	return s;
}

/* Frees a slot's answer. A READ's data decoded into the slot's buffer (its write chunk,
 * or copied there from inline) is ours, not the decoder's: xdr_free must not see it,
 * whatever the statuses, or it frees (an interior pointer of) the slots' one block. Any
 * READ result is looked at, not only the one expected: a malformed answer may hold
 * others, or the expected one elsewhere. */
static void slot_cpd_free(struct ioslot *s)
{
	uintptr_t lo = (uintptr_t)s->buf, hi = lo + s->cap;
	u_int i;

	for (i = 0; i < s->c.res.resarray.resarray_len; i++) {
		nfs_resop4 *r = &s->c.res.resarray.resarray_val[i];
		char **data = &r->nfs_resop4_u.opread.READ4res_u.resok4.data.data_val;

		if (r->resop == OP_READ && (uintptr_t)*data >= lo && (uintptr_t)*data < hi)
			*data = NULL;
	}
	cpd_free(&s->c);
}

/* Waits out whatever is still in flight (their arguments and buffers must outlive them),
 * then frees the slots. */
static void slots_free(struct nfs4 *n, struct ioslot *s)
{
	struct rpcrdma_mem m = { s ? s[0].buf : NULL, 0 };
	uint32_t i;

	if (!s)
		return;
	for (i = 0; i < n->nslots; i++) {
		while (s[i].busy && !s[i].done)
			rpcrdma_clnt_progress(n->cl, 1000);
		slot_cpd_free(&s[i]);
	}
	clnt_control(n->cl, RPCRDMA_CLSET_MEM_REMOVE, (char *)&m);
	free(s[0].buf);
	free(s);
}

/* The bytes one READ or WRITE moves: the chunk asked for, within what the session takes
 * (its requests and replies carry the data: RFC 5661 §18.36.3), in whole 4 KiB. */
static uint32_t io_size(const struct nfs4 *n, uint32_t want)
{
	uint32_t room = (n->maxreq < n->maxresp ? n->maxreq : n->maxresp);

	room = room > 8192 ? room - 4096 : 4096;
	if (want > room)
		want = room & ~4095u;
	return want ? want : 4096;
}

static int read_issue(struct nfs4 *n, struct ioslot *s, int slot, struct nfile *f,
		      uint64_t off, uint32_t len)
{
	struct rpcrdma_ddp_bufs b = { 1, { { s->buf, len } } };
	READ4args *r;

	slot_cpd_free(s);
	cpd_init(n, &s->c, slot);
	add_putfh(&s->c, &f->fh);
	s->c.ops[0].nfs_argop4_u.opsequence.sa_cachethis = FALSE;
	r = &add(&s->c, OP_READ)->nfs_argop4_u.opread;
	r->stateid = f->open;
	r->offset = off;
	r->count = len;
	s->off = off;
	s->len = len;
	/* the data lands in s->buf directly: the READ's write chunk is that buffer */
	clnt_control(n->cl, RPCRDMA_CLSET_DDP_BUFS, (char *)&b);
	return io_send(n, s, "READ");
}

/* 0 done, 1 to be asked again, -1 failed (said). */
static int read_finish(struct nfs4 *n, struct ioslot *s, struct nfile *f, int fd)
{
	nfs_resop4 *r;
	READ4resok *ok;
	int rc = io_wait(n, s, "READ", f->name);

	if (rc)
		return rc;
	r = res_op(&s->c, 2, OP_READ);
	if (!r)
		return failf("READ %s: the answer lacks its result", f->name);
	ok = &r->nfs_resop4_u.opread.READ4res_u.resok4;
	/* the data is in s->buf, which slot_cpd_free keeps from xdr_free */
	if (ok->data.data_len != s->len && !(ok->eof && ok->data.data_len < s->len))
		return failf("READ %s: %u bytes at %llu, %u asked, before the end", f->name,
			     ok->data.data_len, (unsigned long long)s->off, s->len);
	if (ok->data.data_len && pwrite(fd, ok->data.data_val, ok->data.data_len,
					(off_t)s->off) != (ssize_t)ok->data.data_len)
		return failf("writing the local file: %s", strerror(errno));
	return 0;
}

/* Reads f into fd, n->nslots READs in flight, each on its own slot. */
static int read_all(struct nfs4 *n, struct nfile *f, int fd, uint32_t chunk)
{
	struct ioslot *s = slots_new(n, chunk);
	uint64_t off = 0;
	uint32_t i, inflight = 0;
	int rc = 0;

	if (!s)
		return failf("out of memory");
	for (i = 0; !rc && (off < f->size || inflight); i = (i + 1) % n->nslots) {
		if (s[i].busy) {
			rc = read_finish(n, &s[i], f, fd);
			if (rc == 1 && ++s[i].again > 3)
				rc = nfs_fail(&s[i].c, "READ", f->name);
			if (rc == 1) {   /* the same bytes asked again, on the same slot */
				rc = read_issue(n, &s[i], (int)i, f, s[i].off, s[i].len);
				continue;
			}
			s[i].again = 0;
			inflight--;
		}
		if (!rc && off < f->size) {
			uint32_t len = f->size - off < chunk ? (uint32_t)(f->size - off) : chunk;

			rc = read_issue(n, &s[i], (int)i, f, off, len);
			inflight += !rc;
			off += len;
		}
	}
	slots_free(n, s);
	return rc;
}

static int write_issue(struct nfs4 *n, struct ioslot *s, int slot, struct nfile *f, int fd,
		       uint64_t off, uint32_t len)
{
	WRITE4args *w;

	if (pread(fd, s->buf, len, (off_t)off) != (ssize_t)len)
		return failf("reading the local file: %s", errno ? strerror(errno) : "short");
	slot_cpd_free(s);
	cpd_init(n, &s->c, slot);
	add_putfh(&s->c, &f->fh);
	w = &add(&s->c, OP_WRITE)->nfs_argop4_u.opwrite;
	w->stateid = f->open;
	w->offset = off;
	w->stable = UNSTABLE4;
	w->data.data_len = len;
	w->data.data_val = s->buf;
	s->off = off;
	s->len = len;
	return io_send(n, s, "WRITE");
}

/* A WRITE answered: all of it taken, under the same verifier as the others (a new one
 * means the server restarted and may have lost what it had not committed). */
static int write_finish(struct nfs4 *n, struct ioslot *s, struct nfile *f, int *have_verf)
{
	int rc = io_wait(n, s, "WRITE", f->name);
	nfs_resop4 *r;
	WRITE4resok *ok;

	if (rc == 1)   /* its reply not kept although asked: not sent again blindly */
		return nfs_fail(&s->c, "WRITE", f->name);
	if (rc)
		return -1;
	r = res_op(&s->c, 2, OP_WRITE);
	if (!r)
		return failf("WRITE %s: the answer lacks its result", f->name);
	ok = &r->nfs_resop4_u.opwrite.WRITE4res_u.resok4;
	if (ok->count != s->len)
		return failf("WRITE %s: %u bytes taken of %u at %llu", f->name, ok->count, s->len,
			     (unsigned long long)s->off);
	if (*have_verf && memcmp(f->verf, ok->writeverf, sizeof(f->verf)))
		return failf("WRITE %s: the write verifier changed (the server restarted): copy "
			     "again", f->name);
	memcpy(f->verf, ok->writeverf, sizeof(f->verf));
	*have_verf = 1;
	return 0;
}

static int commit(struct nfs4 *n, struct nfile *f, int have_verf)
{
	struct cpd c;
	nfs_resop4 *r;
	int rc;

	cpd_init(n, &c, 0);
	add_putfh(&c, &f->fh);
	add(&c, OP_COMMIT);   /* offset 0, count 0: the whole file */
	rc = run(n, &c, "COMMIT", f->name);
	r = rc ? NULL : res_op(&c, 2, OP_COMMIT);
	if (!rc && (!r || (have_verf && memcmp(r->nfs_resop4_u.opcommit.COMMIT4res_u.resok4.writeverf,
					      f->verf, sizeof(f->verf)))))
		rc = failf("COMMIT %s: the write verifier changed (the server restarted): copy "
			   "again", f->name);
	cpd_free(&c);
	return rc;
}

static int write_all(struct nfs4 *n, struct nfile *f, int fd, uint64_t size, uint32_t chunk)
{
	struct ioslot *s = slots_new(n, chunk);
	uint64_t off = 0;
	uint32_t i, inflight = 0;
	int rc = 0, have_verf = 0;

	if (!s)
		return failf("out of memory");
	for (i = 0; !rc && (off < size || inflight); i = (i + 1) % n->nslots) {
		if (s[i].busy) {
			rc = write_finish(n, &s[i], f, &have_verf);
			inflight--;
		}
		if (!rc && off < size) {
			uint32_t len = size - off < chunk ? (uint32_t)(size - off) : chunk;

			rc = write_issue(n, &s[i], (int)i, f, fd, off, len);
			inflight += !rc;
			off += len;
		}
	}
	slots_free(n, s);
	return rc ? rc : commit(n, f, have_verf);
}

/* ---- the delegation held (--hold) ---- */

/* Keeps f open for secs seconds: a SEQUENCE every RENEW_MS keeps the lease; a recall is
 * answered (by the callback thread) and the delegation returned here, unless told not to
 * (--ignore-recall: the server then waits out the lease before it revokes it). */
static int hold(struct nfs4 *n, struct nfile *f, uint32_t secs, int ignore_recall)
{
	struct timespec end, next, now;
	int rc = 0;

	say(n, "%s: holding it open %u s %s", f->name, secs,
	    f->deleg ? "with a read delegation" : "(no delegation was granted)");
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += secs;
	while (!rc) {
		int recalled;
		struct timespec at;

		clock_gettime(CLOCK_REALTIME, &now);
		if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			break;
		next = now;
		next.tv_nsec += RENEW_MS % 1000 * 1000000L;
		next.tv_sec += RENEW_MS / 1000 + next.tv_nsec / 1000000000L;
		next.tv_nsec %= 1000000000L;
		pthread_mutex_lock(&n->cb.lock);
		if (!n->cb.recalled)
			pthread_cond_timedwait(&n->cb.cond, &n->cb.lock, &next);
		recalled = n->cb.recalled && n->cb.deleg_held;
		at = n->cb.recall_at;
		n->cb.recalled = 0;
		pthread_mutex_unlock(&n->cb.lock);
		if (recalled && ignore_recall) {
			say(n, "%s: delegation recalled; not returning it (--ignore-recall)", f->name);
		} else if (recalled) {
			rc = deleg_return(n, f);
			if (!rc)
				say(n, "%s: delegation returned (DELEGRETURN) %.3f ms after the "
				    "recall", f->name, ms_since(&at));
		} else {
			rc = renew(n);
		}
	}
	return rc;
}

/* ---- copying ---- */

static int copy_from(struct nfs4 *n, char *path, const char *local, const struct opts *o)
{
	struct nfile f;
	int fd, rc;

	memset(&f, 0, sizeof(f));
	if (file_open(n, path, 0, &f))
		return file_close(n, &f), -1;
	fd = open(local, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		failf("%s: %s", local, strerror(errno));
		file_close(n, &f);
		return -1;
	}
	rc = read_all(n, &f, fd, io_size(n, o->cp.chunk));
	if (close(fd) && !rc)
		rc = failf("%s: %s", local, strerror(errno));
	if (!rc)
		say(n, "%s: %llu bytes read%s", f.name, (unsigned long long)f.size,
		    f.deleg ? " (a read delegation was granted)" : "");
	if (!rc && o->hold)
		rc = hold(n, &f, o->hold, o->ignore_recall);
	rc |= file_close(n, &f);
	return rc;
}

static int copy_to(struct nfs4 *n, const char *local, char *path, const struct opts *o)
{
	struct nfile f;
	struct stat st;
	int fd, rc;

	fd = open(local, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return failf("%s: %s", local, strerror(errno));
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return failf("%s: not a regular file", local);
	}
	memset(&f, 0, sizeof(f));
	rc = file_open(n, path, 1, &f);
	if (!rc)
		rc = write_all(n, &f, fd, (uint64_t)st.st_size, io_size(n, o->cp.chunk));
	if (!rc)
		say(n, "%s: %llu bytes written", f.name, (unsigned long long)st.st_size);
	rc |= file_close(n, &f);
	close(fd);
	return rc;
}

/* ---- listing ---- */

#define DIR_COUNT 16384u
#define DIR_MAXCOUNT 65536u

static int dir_handle(struct nfs4 *n, char *path, const char *shown, nfs_fh4 *fh)
{
	char *comp[MAX_COMPONENTS];
	struct cpd c;
	nfs_resop4 *r;
	u_int k;
	int rc;

	if (split(path, comp, &k, NULL))
		return -1;
	cpd_init(n, &c, 0);
	add_lookups(&c, comp, k);
	add(&c, OP_GETFH);
	rc = run(n, &c, "LOOKUP", shown);
	r = rc ? NULL : res_op(&c, k + 2, OP_GETFH);
	if (!rc)
		rc = r ? fh_copy(fh, &r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object)
		       : failf("LOOKUP %s: no file handle in the answer", shown);
	cpd_free(&c);
	return rc;
}

/* One READDIR's entries printed as nfs3cp prints them ("TYPE SIZE NAME"); the cookie
 * and verifier for the next. */
static int print_entries(READDIR4resok *ok, READDIR4args *a, unsigned long *count)
{
	entry4 *e;
	uint32_t type;
	uint64_t size;

	for (e = ok->reply.entries; e; e = e->nextentry) {
		if (type_size(&e->attrs, &type, &size))
			printf("? %12s %.*s\n", "", (int)e->name.utf8string_len, e->name.utf8string_val);
		else
			printf("%c %12llu %.*s\n", type == NF4DIR ? 'd' : type == NF4LNK ? 'l' : '-',
			       (unsigned long long)size, (int)e->name.utf8string_len,
			       e->name.utf8string_val);
		a->cookie = e->cookie;
		(*count)++;
	}
	memcpy(a->cookieverf, ok->cookieverf, sizeof(a->cookieverf));
	return 0;
}

static int list(struct nfs4 *n, char *path)
{
	char shown[4096];
	nfs_fh4 dir = { 0, NULL };
	unsigned long count = 0;
	READDIR4args a;
	int eof = 0, rc;

	snprintf(shown, sizeof(shown), "%s", path);
	if (dir_handle(n, path, shown, &dir))
		return -1;
	memset(&a, 0, sizeof(a));
	a.dircount = DIR_COUNT;
	a.maxcount = DIR_MAXCOUNT;
	a.attr_request.bitmap4_len = 1;
	a.attr_request.bitmap4_val = type_size_bits;
	for (rc = 0; !eof && !rc;) {
		struct cpd c;
		nfs_resop4 *r;

		cpd_init(n, &c, 0);
		add_putfh(&c, &dir);
		c.ops[0].nfs_argop4_u.opsequence.sa_cachethis = FALSE;
		add(&c, OP_READDIR)->nfs_argop4_u.opreaddir = a;
		rc = run(n, &c, "READDIR", shown);
		r = rc ? NULL : res_op(&c, 2, OP_READDIR);
		if (!rc && !r)
			rc = failf("READDIR %s: no result in the answer", shown);
		if (r) {
			READDIR4resok *ok = &r->nfs_resop4_u.opreaddir.READDIR4res_u.resok4;
			nfs_cookie4 asked = a.cookie;

			print_entries(ok, &a, &count);
			eof = ok->reply.eof;
			/* no end and a cookie that did not move (no entries, or entries that
			 * end where we began): the same cookie would be asked for ever */
			if (!eof && a.cookie == asked)
				rc = failf("READDIR %s: no progress (cookie %llu again, no end of "
					   "directory)", shown, (unsigned long long)asked);
		}
		cpd_free(&c);
	}
	free(dir.nfs_fh4_val);
	if (!rc)
		fprintf(stderr, "nfs4cp: %lu entries in %s\n", count, shown);
	return rc;
}

/* ---- arguments ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nfs4cp [--provider P] [--port N] [--chunk BYTES] [--depth N] [--quiet]\n"
		"              [--hold SECONDS [--ignore-recall]] SRC DST\n"
		"       nfs4cp [--provider P] [--port N] --list HOST:/path/dir\n"
		"exactly one of SRC and DST is HOST:/path/file (IPv6: [ADDR]:/path), a path in\n"
		"the server's NFSv4 namespace\n"
		"  --provider P    RDMA provider: verbs (InfiniBand, RoCE, iWARP), tcp, shm\n"
		"                  (default: $RPCRDMA_PROVIDER, else tcp)\n"
		"  --port N        NFS/RDMA port (default: rpcbind's netid rdma, else 20049)\n"
		"  --chunk BYTES   bytes per READ or WRITE (default 1m; at most what the session\n"
		"                  takes)\n"
		"  --depth N       READs or WRITEs in flight, one per session slot (default 8,\n"
		"                  at most 64)\n"
		"  --list          list a directory with READDIR\n"
		"  --hold SECONDS  after reading the file, keep it open that long (with the read\n"
		"                  delegation the server grants), answering its callbacks\n"
		"  --ignore-recall with --hold: answer CB_RECALL but keep the delegation\n"
		"  --quiet         say nothing but failures\n");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		CP_LONG_OPTIONS,
		{ "hold", required_argument, NULL, 'H' },
		{ "ignore-recall", no_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	memset(o, 0, sizeof(*o));
	cp_opts_init(&o->cp);
	while ((c = getopt_long(argc, argv, "q", lo, NULL)) != -1) {
		rc = cp_opt("nfs4cp", c, optarg, DEPTH_MAX, &o->cp);
		if (rc < 0)
			return -1;
		if (rc)
			continue;
		switch (c) {
		case 'H':
			if (cp_parse_u32(optarg, 1, 86400, &o->hold))
				return failf("--hold: '%s' is not a number of seconds (1-86400)", optarg);
			break;
		case 'I': o->ignore_recall = 1; break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct nfs4 n;
	struct remote src, dst;
	struct opts o;
	int rs, rd, rc;

	if (parse_args(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	argc -= optind;
	argv += optind;
	if (argc != (o.cp.list ? 1 : 2)) {
		usage(stderr);
		return 2;
	}
	rs = cp_parse_remote(argv[0], src.host, sizeof(src.host), src.path, sizeof(src.path));
	rd = o.cp.list ? 0
		    : cp_parse_remote(argv[1], dst.host, sizeof(dst.host), dst.path, sizeof(dst.path));
	if (rs < 0 || rd < 0) {
		failf("a host or path too long");
		return 2;
	}
	if (rs + rd != 1 || (o.cp.list && !rs) || (o.hold && !rs)) {
		failf(o.cp.list ? "--list takes HOST:/path/dir" :
		      o.hold ? "--hold takes HOST:/path/file LOCAL" :
			       "exactly one of SRC and DST must be HOST:/path/file");
		return 2;
	}
	if (rpcrdma_ulb_register(rpcrdma_ulb_nfs4())) {
		failf("cannot register the NFSv4 binding");
		return 1;
	}
	pthread_mutex_init(&n.cb.lock, NULL);
	pthread_cond_init(&n.cb.cond, NULL);
	the_client = &n;
	rc = nfs_start(&n, rs ? &src : &dst, &o);
	if (!rc)
		rc = o.cp.list ? list(&n, src.path)
		     : rs   ? copy_from(&n, src.path, argv[1], &o)
			    : copy_to(&n, argv[0], dst.path, &o);
	nfs_end(&n);
	return rc ? 1 : 0;
}
