/* SPDX-License-Identifier: BSD-2-Clause */
/* MOUNT version 3 (RFC 1813 Appendix I), as rpc.mountd answers it: the client list and
 * "secure" apply (MNT3ERR_ACCES), and a path outside DIR gets MNT3ERR_ACCES whether it
 * exists or not, also through a symbolic link inside DIR, so MOUNT tells nothing of the
 * server's other files. DIR, or a directory
 * below it, may be mounted (as knfsd lets a client mount part of an export). */
#include "nfs3d.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rpc/rpc.h>

/* The path with ".", ".." and repeated '/' taken out, without looking at the file
 * system: what a path names lexically decides whether it is exported. */
static int lexical(const char *in, char *out, size_t cap)
{
	size_t n = 0;
	const char *p = in;

	if (*in != '/' || strlen(in) >= cap)
		return -1;
	while (*p) {
		const char *s;
		size_t len;

		while (*p == '/')
			p++;
		s = p;
		while (*p && *p != '/')
			p++;
		len = (size_t)(p - s);
		if (len == 0 || (len == 1 && s[0] == '.'))
			continue;
		if (len == 2 && s[0] == '.' && s[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;   /* the '/' before it */
			continue;
		}
		out[n++] = '/';
		memcpy(out + n, s, len);
		n += len;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return 0;
}

static bool under_dir(const char *path)
{
	size_t n = ex.path_len;

	if (n == 1)
		return true;   /* DIR is / */
	return !strncmp(path, ex.path, n) && (path[n] == '\0' || path[n] == '/');
}

/* NULL when the caller may not use MOUNT: not listed, or an unprivileged port on a
 * "secure" export (rpc.mountd: "illegal port"). */
static const struct nfs3d_opts *mount_opts(struct svc_req *rq)
{
	const struct netbuf *nb = svc_getrpccaller(rq->rq_xprt);
	const struct sockaddr *sa = nb ? nb->buf : NULL;
	socklen_t len = nb ? nb->len : 0;
	const struct nfs3d_opts *o = nfs3d_client_opts(sa, len);

	if (o && !o->insecure && !nfs3d_port_secure(sa, len))
		return NULL;
	return o;
}

bool_t mountproc3_null_3_svc(void *a, void *r, struct svc_req *rq)
{
	(void)a;
	(void)r;
	(void)rq;
	return TRUE;
}

/* The path's directory, opened beneath DIR by the kernel (openat2's RESOLVE_BENEATH: no
 * "..", absolute symbolic link or magic link leads out, and nothing outside DIR is looked
 * at, so no answer tells whether it exists) and kept open: the handle is made from that
 * descriptor, never from the path again, so a client renaming symbolic links meanwhile
 * cannot turn it into a handle of something else. */
static mountstat3 mnt_open(const char *asked, int *fd)
{
	char clean[PATH_MAX];
	const char *rel;
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
	struct stat sb;

	*fd = -1;
	if (lexical(asked, clean, sizeof(clean)) < 0 || !under_dir(clean))
		return MNT3ERR_ACCES;   /* not exported: the same answer if it exists or not */
	rel = ex.path_len == 1 ? clean + 1 : clean + ex.path_len;
	while (*rel == '/')
		rel++;
	*fd = (int)syscall(SYS_openat2, ex.root_fd, *rel ? rel : ".", &how, sizeof(how));
	if (*fd < 0)
		return errno == ENOENT ? MNT3ERR_NOENT : errno == ENOTDIR ? MNT3ERR_NOTDIR
									 : MNT3ERR_ACCES;
	if (fstat(*fd, &sb) == 0 && S_ISDIR(sb.st_mode))
		return MNT3_OK;
	close(*fd);
	*fd = -1;
	return MNT3ERR_NOTDIR;
}

bool_t mountproc3_mnt_3_svc(dirpath3 *a, mountres3 *r, struct svc_req *rq)
{
	int fd = -1;
	nfs_fh3 fh = { { 0, NULL } };
	static int flavors[] = { AUTH_UNIX };
	mountres3_ok *ok = &r->mountres3_u.mountinfo;

	memset(r, 0, sizeof(*r));
	/* as root, as rpc.mountd: the threads that serve MOUNT never change identity */
	if (!mount_opts(rq))
		r->fhs_status = MNT3ERR_ACCES;
	else
		r->fhs_status = mnt_open(*a, &fd);
	if (r->fhs_status == MNT3_OK && nfs3d_fh_of(fd, "", &fh) != NFS3_OK)
		r->fhs_status = MNT3ERR_SERVERFAULT;
	if (fd >= 0)
		close(fd);
	if (r->fhs_status == MNT3_OK) {
		ok->fhandle.fhandle3_val = fh.data.data_val;
		ok->fhandle.fhandle3_len = fh.data.data_len;
		ok->auth_flavors.auth_flavors_val = malloc(sizeof(flavors));
		if (ok->auth_flavors.auth_flavors_val) {
			memcpy(ok->auth_flavors.auth_flavors_val, flavors, sizeof(flavors));
			ok->auth_flavors.auth_flavors_len = 1;
		}
	}
	if (ex.verbose)
		fprintf(stderr, "nfs3d: MNT %s: %d\n", *a, r->fhs_status);
	return TRUE;
}

bool_t mountproc3_umnt_3_svc(dirpath3 *a, void *r, struct svc_req *rq)
{
	(void)a;
	(void)r;
	(void)rq;
	return TRUE;   /* nfs3d keeps no list of mounts */
}

/* The groups of an export entry: the client list as written ("*" for everyone). */
static groups3 groups_of(void)
{
	groupnode3 *head = NULL, **tail = &head;
	int i, n = ex.nclients ? ex.nclients : 1;

	for (i = 0; i < n; i++) {
		groupnode3 *g = calloc(1, sizeof(*g));

		if (!g || !(g->gr_name = strdup(ex.nclients ? ex.clients[i].spec : "*"))) {
			free(g);
			break;
		}
		*tail = g;
		tail = &g->gr_next;
	}
	return head;
}

/* What this client may mount: DIR, or nothing. */
bool_t mountproc3_export_3_svc(void *a, exports3 *r, struct svc_req *rq)
{
	exportnode3 *n;

	(void)a;
	*r = NULL;
	if (!mount_opts(rq) || !(n = calloc(1, sizeof(*n))))
		return TRUE;
	if ((n->ex_dir = strdup(ex.path))) {
		n->ex_groups = groups_of();
		*r = n;
	} else {
		free(n);
	}
	return TRUE;
}

int mount_program_3_freeresult(SVCXPRT *x, xdrproc_t xres, caddr_t res)
{
	(void)x;
	xdr_free(xres, res);
	return 1;
}
