/* SPDX-License-Identifier: BSD-2-Clause */
/* Each call runs under its caller's identity, as knfsd's nfsd_setuser() does: the worker
 * thread's fsuid, fsgid and supplementary groups become the caller's (squashed as the
 * export says), and the kernel decides every permission. Only this thread changes: the
 * raw system calls, since glibc's setgroups() applies to every thread of the process.
 * Leaving fsuid 0 drops CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_CHOWN,
 * CAP_FSETID and CAP_MKNOD from the thread's effective set (capabilities(7)), so a
 * squashed root is an ordinary user to the kernel, and an unsquashed root keeps them. */
#include "nfs3d.h"

#include <linux/capability.h>
#include <pthread.h>
#include <rpc/rpc.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef SYS_setgroups32
#define NR_SETGROUPS SYS_setgroups32   /* 32-bit group IDs where setgroups is 16-bit */
#define NR_SETFSUID SYS_setfsuid32
#define NR_SETFSGID SYS_setfsgid32
#else
#define NR_SETGROUPS SYS_setgroups
#define NR_SETFSUID SYS_setfsuid
#define NR_SETFSGID SYS_setfsgid
#endif

/* What this thread runs as now; valid false: unknown (a switch failed), redo it all. */
static __thread struct {
	bool valid;
	struct nfs3d_cred c;
} cur;

static uint32_t squash_gid(const struct nfs3d_opts *o, uint32_t g)
{
	return (o->root_squash && g == 0) || g == UINT32_MAX ? o->anongid : g;
}

void nfs3d_cred_map(const struct nfs3d_opts *o, int flavor, const void *authsys,
		    struct nfs3d_cred *out)
{
	const struct authunix_parms *p = authsys;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	out->uid = o->anonuid;
	out->gid = o->anongid;
	if (flavor != AUTH_SYS || !p || o->all_squash)
		return;
	out->uid = (o->root_squash && p->aup_uid == 0) || p->aup_uid == (uid_t)-1
		   ? o->anonuid : (uint32_t)p->aup_uid;
	out->gid = squash_gid(o, (uint32_t)p->aup_gid);
	for (i = 0; i < p->aup_len && i < NFS3D_MAX_GROUPS; i++)
		out->groups[out->ngroups++] = squash_gid(o, (uint32_t)p->aup_gids[i]);
}

/* setfsuid() and setfsgid() answer the previous value, never an error: asking again
 * with -1 (never valid) reads back what took. */
static int set_fsuid(uint32_t uid)
{
	syscall(NR_SETFSUID, (uid_t)uid);
	return (uint32_t)syscall(NR_SETFSUID, (uid_t)-1) == uid ? 0 : -1;
}

static int set_fsgid(uint32_t gid)
{
	syscall(NR_SETFSGID, (gid_t)gid);
	return (uint32_t)syscall(NR_SETFSGID, (gid_t)-1) == gid ? 0 : -1;
}

static int set_groups(const struct nfs3d_cred *c)
{
	gid_t g[NFS3D_MAX_GROUPS];
	uint32_t i;

	for (i = 0; i < c->ngroups; i++)
		g[i] = (gid_t)c->groups[i];
	return syscall(NR_SETGROUPS, (size_t)c->ngroups, g) == 0 ? 0 : -1;
}

static bool same_cred(const struct nfs3d_cred *a, const struct nfs3d_cred *b)
{
	return a->uid == b->uid && a->gid == b->gid && a->ngroups == b->ngroups &&
	       !memcmp(a->groups, b->groups, a->ngroups * sizeof(a->groups[0]));
}

/* CAP_SYS_RESOURCE (past quotas, into the blocks a file system keeps for root) only for
 * an unsquashed root, as knfsd drops CAP_NFSD_SET (the file-system capabilities and this
 * one) for everyone else; the file-system ones go with fsuid by themselves. This thread
 * only (capset on pid 0). */
static int resource_cap(bool root)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	uint32_t bit = 1u << (CAP_SYS_RESOURCE % 32);
	int w = CAP_SYS_RESOURCE / 32;

	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	if (root)
		d[w].effective |= d[w].permitted & bit;
	else
		d[w].effective &= ~bit;
	return syscall(SYS_capset, &h, d) < 0 ? -1 : 0;
}

/* Groups first, then fsgid, fsuid last: until fsuid is the caller's the thread acts as
 * root with no more rights than it had, and a failure stops before it. */
int nfs3d_cred_enter(const struct nfs3d_cred *c)
{
	if (cur.valid && same_cred(&cur.c, c))
		return 0;
	cur.valid = false;
	if (set_groups(c) < 0 || set_fsgid(c->gid) < 0 || set_fsuid(c->uid) < 0 ||
	    resource_cap(c->uid == 0) < 0)
		return -1;
	cur.c = *c;
	cur.valid = true;
	return 0;
}

int nfs3d_root_begin(void)
{
	if (!cur.valid)
		return -1;
	return cur.c.uid == 0 ? 0 : set_fsuid(0);
}

int nfs3d_root_end(void)
{
	if (!cur.valid)
		return -1;
	if (cur.c.uid == 0 || set_fsuid(cur.c.uid) == 0)
		return 0;
	cur.valid = false;
	return -1;
}

bool nfs3d_cred_is_root(void)
{
	return cur.valid && cur.c.uid == 0;
}

uint32_t nfs3d_cred_uid(void)
{
	return cur.c.uid;
}

static __thread const struct nfs3d_opts *call_opts;

void nfs3d_opts_set(const struct nfs3d_opts *o)
{
	call_opts = o;
}

const struct nfs3d_opts *nfs3d_opts_now(void)
{
	return call_opts ? call_opts : &ex.defaults;
}

/* ---- the threads that run calls as their callers ----
 * A thread whose credentials ever changed may not use the RDMA device again: the kernel's
 * uverbs refuses write() commands (memory registration, soft-RoCE's doorbells) from a
 * thread whose credentials are not the very ones it was opened with (ib_safe_file_access:
 * "changed security contexts after opening file descriptor"), and a switch back to root
 * makes new ones. So the library's workers, which post replies, never switch: each call's
 * procedure runs on one of these threads, under its caller's identity, while the worker
 * that decoded it waits. */

struct nfs3d_job {
	bool (*fn)(void *args, void *res);
	void *args, *res;
	const struct nfs3d_cred *cred;
	const struct nfs3d_opts *opts;
	int rc;                   /* 1: ran and took its arguments; 0: refused them; -1: no identity */
	uint64_t queued, started, ended;   /* ns: the hand-over's times (nfs3d_legs) */
	bool done;
	pthread_cond_t cv;
	struct nfs3d_job *next;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t more;
	struct nfs3d_job *head, **tail;
} pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, &pool.head };

static void job_run(struct nfs3d_job *j)
{
	j->started = nfs3d_now_ns();
	nfs3d_opts_set(j->opts);
	if (nfs3d_cred_enter(j->cred) < 0) {
		fprintf(stderr, "nfs3d: cannot take the identity uid %u gid %u: refused\n",
			j->cred->uid, j->cred->gid);
		j->rc = -1;
		return;
	}
	j->rc = j->fn(j->args, j->res) ? 1 : 0;
	j->ended = nfs3d_now_ns();
}

static void *pool_thread(void *arg)
{
	struct nfs3d_job *j;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&pool.lock);
		while (!pool.head)
			pthread_cond_wait(&pool.more, &pool.lock);
		j = pool.head;
		pool.head = j->next;
		if (!pool.head)
			pool.tail = &pool.head;
		pthread_mutex_unlock(&pool.lock);
		job_run(j);
		pthread_mutex_lock(&pool.lock);
		j->done = true;
		pthread_cond_signal(&j->cv);
		pthread_mutex_unlock(&pool.lock);
	}
	return NULL;
}

int nfs3d_pool_start(int n)
{
	pthread_t t;
	int i;

	for (i = 0; i < n; i++)
		if (pthread_create(&t, NULL, pool_thread, NULL) || pthread_detach(t))
			return -1;
	return 0;
}

int nfs3d_run_as(const struct nfs3d_cred *c, const struct nfs3d_opts *o,
		 bool (*fn)(void *, void *), void *args, void *res, struct nfs3d_legs *legs)
{
	struct nfs3d_job j = { fn, args, res, c, o, 0, nfs3d_now_ns(), 0, 0, false,
			       PTHREAD_COND_INITIALIZER, NULL };

	pthread_mutex_lock(&pool.lock);
	*pool.tail = &j;
	pool.tail = &j.next;
	pthread_cond_signal(&pool.more);
	while (!j.done)
		pthread_cond_wait(&j.cv, &pool.lock);
	pthread_mutex_unlock(&pool.lock);
	pthread_cond_destroy(&j.cv);
	legs->wait = j.started - j.queued;   /* job_run sets started first, always */
	legs->proc = j.ended ? j.ended - j.started : 0;   /* 0: its identity was refused */
	legs->back = j.ended ? nfs3d_now_ns() - j.ended : 0;
	return j.rc;
}
