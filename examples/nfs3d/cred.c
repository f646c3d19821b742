/* SPDX-License-Identifier: BSD-2-Clause */
/* Each call runs under its caller's identity, as knfsd's nfsd_setuser() does: the worker
 * thread's fsuid, fsgid and supplementary groups become the caller's (squashed as the
 * export says), and the kernel decides every permission. Only this thread changes: the
 * raw system calls, since glibc's setgroups() applies to every thread of the process.
 * Leaving fsuid 0 drops CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_CHOWN,
 * CAP_FSETID and CAP_MKNOD from the thread's effective set (capabilities(7)), so a
 * squashed root is an ordinary user to the kernel, and an unsquashed root keeps them. */
#include "nfs3d.h"

#include <rpc/rpc.h>
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

/* Groups first, then fsgid, fsuid last: until fsuid is the caller's the thread acts as
 * root with no more rights than it had, and a failure stops before it. */
int nfs3d_cred_enter(const struct nfs3d_cred *c)
{
	if (cur.valid && same_cred(&cur.c, c))
		return 0;
	cur.valid = false;
	if (set_groups(c) < 0 || set_fsgid(c->gid) < 0 || set_fsuid(c->uid) < 0)
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
