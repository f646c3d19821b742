/* SPDX-License-Identifier: BSD-2-Clause */
/* A client of the in-memory NFSv2 server: rpcgen's stubs from Debian's nfs_prot.x and
 * mount.x, unmodified; built for ONC RPC over TCP and for RPC-over-RDMA, differing only
 * in the call that creates the CLIENT (USE_RDMA below).
 *
 *   nfs2_client HOST PORT work TAG        one client, its own directory TAG
 *   nfs2_client HOST PORT threads TAG N   N threads sharing one CLIENT each for NFS and
 *                                         MOUNT, directories TAG-t0 .. TAG-t(N-1)
 *
 * Each piece of work exercises every procedure with the XDR they carry (unions, the
 * linked lists of READDIR and of MOUNT's EXPORT and DUMP, strings, opaques of 8 KiB and
 * fixed ones) and prints a transcript that depends on nothing but the answers: the same
 * bytes over every transport. Exit status 1 on any unexpected answer. */
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef USE_RDMA
#include <rpcrdma/rpcrdma.h>
#endif
#include "mount.h"
#include "nfs_prot.h"

#define EXPORT_DIR "/export"
#define TIMEOUT_S 60

struct out {                       /* a transcript, printed at the end */
	char *buf;
	size_t len, cap;
	int bad;
};

static void say(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (o->len + (size_t)n + 1 > o->cap) {
		o->cap = (o->len + (size_t)n + 1) * 2;
		o->buf = realloc(o->buf, o->cap);
	}
	va_start(ap, fmt);
	vsnprintf(o->buf + o->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	o->len += (size_t)n;
}

#define EXPECT(o, cond, ...)                                                             \
	do {                                                                             \
		if (!(cond)) {                                                           \
			(o)->bad++;                                                      \
			say(o, "UNEXPECTED: " __VA_ARGS__);                              \
			say(o, " (%s:%d)\n", __FILE__, __LINE__);                       \
		}                                                                        \
	} while (0)

static CLIENT *make_client(const char *host, unsigned port, rpcprog_t prog, rpcvers_t vers)
{
	CLIENT *c;
#ifdef USE_RDMA
	struct rpcrdma_clnt_opts o;

	memset(&o, 0, sizeof(o));
	o.port = (uint16_t)port;     /* provider: $RPCRDMA_PROVIDER */
	c = clnt_rdma_create(host, prog, vers, &o);
#else
	struct sockaddr_in sin;
	int sock = RPC_ANYSOCK;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(0x7f000001);
	(void)host;
	c = clnttcp_create(&sin, prog, vers, &sock, 0, 0);
#endif
	if (c) {
		struct timeval tv = { TIMEOUT_S, 0 };

		clnt_control(c, CLSET_TIMEOUT, (char *)&tv);
	}
	return c;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

static char pattern(const char *tag, unsigned k, uint32_t off)
{
	return (char)(fnv(0xcbf29ce484222325ull, tag, strlen(tag)) + k * 131u + off * 7u +
		      (off >> 9));
}

static const char *st(nfsstat s)
{
	switch (s) {
	case NFS_OK: return "ok";
	case NFSERR_NOENT: return "NOENT";
	case NFSERR_EXIST: return "EXIST";
	case NFSERR_NOTDIR: return "NOTDIR";
	case NFSERR_ISDIR: return "ISDIR";
	case NFSERR_NOTEMPTY: return "NOTEMPTY";
	case NFSERR_STALE: return "STALE";
	default: return "other";
	}
}

struct work {
	CLIENT *nfs, *mnt;
	const char *tag;
	struct out o;
	nfs_fh root, dir;
};

static nfsstat lookup(struct work *w, const nfs_fh *dir, const char *fname, nfs_fh *fh,
		      fattr *a)
{
	diropargs d = { *dir, (char *)fname };
	diropres r;

	memset(&r, 0, sizeof(r));
	if (nfsproc_lookup_2(&d, &r, w->nfs) != RPC_SUCCESS)
		return NFSERR_IO;
	if (r.status == NFS_OK) {
		if (fh)
			*fh = r.diropres_u.diropres.file;
		if (a)
			*a = r.diropres_u.diropres.attributes;
	}
	xdr_free((xdrproc_t)xdr_diropres, (char *)&r);
	return r.status;
}

static nfsstat create(struct work *w, const nfs_fh *dir, const char *fname, int directory,
		      nfs_fh *fh)
{
	createargs c;
	diropres r;
	enum clnt_stat cs;

	memset(&c, 0, sizeof(c));
	memset(&r, 0, sizeof(r));
	c.where.dir = *dir;
	c.where.name = (char *)fname;
	c.attributes.mode = directory ? 0755 : 0644;
	c.attributes.uid = c.attributes.gid = c.attributes.size = (u_int)-1;
	c.attributes.atime.seconds = c.attributes.mtime.seconds = (u_int)-1;
	cs = directory ? nfsproc_mkdir_2(&c, &r, w->nfs) : nfsproc_create_2(&c, &r, w->nfs);
	if (cs != RPC_SUCCESS)
		return NFSERR_IO;
	if (r.status == NFS_OK && fh)
		*fh = r.diropres_u.diropres.file;
	xdr_free((xdrproc_t)xdr_diropres, (char *)&r);
	return r.status;
}

static nfsstat removal(struct work *w, const nfs_fh *dir, const char *fname, int directory)
{
	diropargs d = { *dir, (char *)fname };
	nfsstat s = NFSERR_IO;

	if ((directory ? nfsproc_rmdir_2(&d, &s, w->nfs) : nfsproc_remove_2(&d, &s, w->nfs)) !=
	    RPC_SUCCESS)
		return NFSERR_IO;
	return s;
}

static uint32_t getsize(struct work *w, const nfs_fh *fh, u_int *nlink)
{
	attrstat r;

	memset(&r, 0, sizeof(r));
	if (nfsproc_getattr_2((nfs_fh *)fh, &r, w->nfs) != RPC_SUCCESS || r.status != NFS_OK)
		return (uint32_t)-1;
	if (nlink)
		*nlink = r.attrstat_u.attributes.nlink;
	return r.attrstat_u.attributes.size;
}

/* A file of `size` bytes written in NFS_MAXDATA pieces, read back and hashed. */
static void file_round_trip(struct work *w, unsigned k, uint32_t size)
{
	char fname[16], *buf = malloc(NFS_MAXDATA);
	uint64_t h_out = 0xcbf29ce484222325ull, h_in = h_out;
	uint32_t off, i;
	nfs_fh fh;

	snprintf(fname, sizeof(fname), "file%u", k);
	EXPECT(&w->o, create(w, &w->dir, fname, 0, &fh) == NFS_OK, "create %s", fname);
	for (off = 0; off < size; off += NFS_MAXDATA) {
		uint32_t n = size - off < NFS_MAXDATA ? size - off : NFS_MAXDATA;
		writeargs a;
		attrstat r;

		for (i = 0; i < n; i++)
			buf[i] = pattern(w->tag, k, off + i);
		h_out = fnv(h_out, buf, n);
		memset(&a, 0, sizeof(a));
		memset(&r, 0, sizeof(r));
		a.file = fh;
		a.offset = off;
		a.data.data_len = n;
		a.data.data_val = buf;
		EXPECT(&w->o, nfsproc_write_2(&a, &r, w->nfs) == RPC_SUCCESS && r.status == NFS_OK,
		       "write %s at %u", fname, off);
	}
	EXPECT(&w->o, getsize(w, &fh, NULL) == size, "size of %s", fname);
	for (off = 0;; off += NFS_MAXDATA) {
		readargs a = { fh, off, NFS_MAXDATA, 0 };
		readres r;
		uint32_t n;

		memset(&r, 0, sizeof(r));
		if (nfsproc_read_2(&a, &r, w->nfs) != RPC_SUCCESS || r.status != NFS_OK) {
			EXPECT(&w->o, 0, "read %s at %u", fname, off);
			break;
		}
		n = r.readres_u.reply.data.data_len;
		h_in = fnv(h_in, r.readres_u.reply.data.data_val, n);
		xdr_free((xdrproc_t)xdr_readres, (char *)&r);
		if (n < NFS_MAXDATA)
			break;
	}
	say(&w->o, "%s: %u bytes written and read back, hash %016llx%s\n", fname, size,
	    (unsigned long long)h_in, h_in == h_out ? "" : " (DIFFERS)");
	EXPECT(&w->o, h_in == h_out, "contents of %s", fname);
	free(buf);
}

/* READDIR with a small count: the entries come as linked lists, a few per reply,
 * continued by cookies. Returns how many names; their concatenation is hashed. */
static unsigned list_dir(struct work *w, const nfs_fh *dir, uint64_t *hash)
{
	readdirargs a;
	unsigned n = 0, rounds = 0;
	int eof = 0;

	memset(&a, 0, sizeof(a));
	a.dir = *dir;
	a.count = 200;
	*hash = 0xcbf29ce484222325ull;
	while (!eof && rounds++ < 1000) {
		readdirres r;
		entry *e;

		memset(&r, 0, sizeof(r));
		if (nfsproc_readdir_2(&a, &r, w->nfs) != RPC_SUCCESS || r.status != NFS_OK) {
			EXPECT(&w->o, 0, "readdir");
			break;
		}
		for (e = r.readdirres_u.reply.entries; e; e = e->nextentry) {
			*hash = fnv(*hash, e->name, strlen(e->name) + 1);
			memcpy(a.cookie, e->cookie, NFS_COOKIESIZE);
			n++;
		}
		eof = r.readdirres_u.reply.eof;
		xdr_free((xdrproc_t)xdr_readdirres, (char *)&r);
	}
	return n;
}

static void links(struct work *w)
{
	symlinkargs s;
	linkargs l;
	readlinkres rl;
	nfsstat res = NFSERR_IO;
	nfs_fh f1, lnk;
	u_int nlink = 0;

	memset(&s, 0, sizeof(s));
	s.from.dir = w->dir;
	s.from.name = "link";
	s.to = "file3";
	s.attributes.mode = 0777;
	EXPECT(&w->o, nfsproc_symlink_2(&s, &res, w->nfs) == RPC_SUCCESS && res == NFS_OK,
	       "symlink");
	memset(&rl, 0, sizeof(rl));
	EXPECT(&w->o, lookup(w, &w->dir, "link", &lnk, NULL) == NFS_OK, "lookup link");
	EXPECT(&w->o, nfsproc_readlink_2(&lnk, &rl, w->nfs) == RPC_SUCCESS && rl.status == NFS_OK,
	       "readlink");
	say(&w->o, "link -> %s\n", rl.status == NFS_OK ? rl.readlinkres_u.data : "?");
	xdr_free((xdrproc_t)xdr_readlinkres, (char *)&rl);
	EXPECT(&w->o, lookup(w, &w->dir, "file1", &f1, NULL) == NFS_OK, "lookup file1");
	l.from = f1;
	l.to.dir = w->dir;
	l.to.name = "hard";
	EXPECT(&w->o, nfsproc_link_2(&l, &res, w->nfs) == RPC_SUCCESS && res == NFS_OK, "link");
	getsize(w, &f1, &nlink);
	say(&w->o, "file1 has %u links\n", nlink);
}

static void renames(struct work *w)
{
	renameargs r;
	nfsstat res = NFSERR_IO;

	r.from.dir = w->dir;
	r.from.name = "file2";
	r.to.dir = w->dir;
	r.to.name = "renamed";
	EXPECT(&w->o, nfsproc_rename_2(&r, &res, w->nfs) == RPC_SUCCESS && res == NFS_OK, "rename");
	say(&w->o, "after rename: file2 %s, renamed %s\n", st(lookup(w, &w->dir, "file2", NULL, NULL)),
	    st(lookup(w, &w->dir, "renamed", NULL, NULL)));
}

static void many_entries(struct work *w)
{
	char fname[16];
	uint64_t hash;
	nfs_fh sub;
	unsigned i, n;

	EXPECT(&w->o, create(w, &w->dir, "sub", 1, &sub) == NFS_OK, "mkdir sub");
	for (i = 0; i < 40; i++) {
		snprintf(fname, sizeof(fname), "n%02u-%s", i, i % 2 ? "odd" : "even");
		EXPECT(&w->o, create(w, &sub, fname, 0, NULL) == NFS_OK, "create %s", fname);
	}
	n = list_dir(w, &sub, &hash);
	say(&w->o, "sub: %u entries, names hash %016llx\n", n, (unsigned long long)hash);
	say(&w->o, "rmdir sub while full: %s\n", st(removal(w, &w->dir, "sub", 1)));
	for (i = 0; i < 40; i++) {
		snprintf(fname, sizeof(fname), "n%02u-%s", i, i % 2 ? "odd" : "even");
		EXPECT(&w->o, removal(w, &sub, fname, 0) == NFS_OK, "remove %s", fname);
	}
	say(&w->o, "rmdir sub when empty: %s\n", st(removal(w, &w->dir, "sub", 1)));
}

static void truncate_and_stat(struct work *w)
{
	sattrargs s;
	attrstat r;
	statfsres f;
	nfs_fh fh;

	EXPECT(&w->o, lookup(w, &w->dir, "file3", &fh, NULL) == NFS_OK, "lookup file3");
	memset(&s, 0, sizeof(s));
	memset(&r, 0, sizeof(r));
	s.file = fh;
	s.attributes.mode = s.attributes.uid = s.attributes.gid = (u_int)-1;
	s.attributes.atime.seconds = s.attributes.mtime.seconds = (u_int)-1;
	s.attributes.size = 1000;
	EXPECT(&w->o, nfsproc_setattr_2(&s, &r, w->nfs) == RPC_SUCCESS && r.status == NFS_OK,
	       "setattr");
	say(&w->o, "file3 truncated: size %u\n", getsize(w, &fh, NULL));
	memset(&f, 0, sizeof(f));
	EXPECT(&w->o, nfsproc_statfs_2(&w->root, &f, w->nfs) == RPC_SUCCESS && f.status == NFS_OK,
	       "statfs");
	say(&w->o, "statfs: tsize %u bsize %u\n", f.statfsres_u.reply.tsize,
	    f.statfsres_u.reply.bsize);
}

static void mount_lists(struct work *w)
{
	exports ex = NULL;
	mountlist ml = NULL;
	exportnode *x;
	groupnode *g;
	mountbody *m;
	int mine = 0;

	EXPECT(&w->o, mountproc_export_1(NULL, &ex, w->mnt) == RPC_SUCCESS, "export");
	for (x = ex; x; x = x->ex_next) {
		say(&w->o, "export %s:", x->ex_dir);
		for (g = x->ex_groups; g; g = g->gr_next)
			say(&w->o, " %s", g->gr_name);
		say(&w->o, "\n");
	}
	xdr_free((xdrproc_t)xdr_exports, (char *)&ex);
	EXPECT(&w->o, mountproc_dump_1(NULL, &ml, w->mnt) == RPC_SUCCESS, "dump");
	for (m = ml; m; m = m->ml_next)
		mine |= !strcmp(m->ml_directory, EXPORT_DIR);
	xdr_free((xdrproc_t)xdr_mountlist, (char *)&ml);
	say(&w->o, "mounted: %s\n", mine ? "listed" : "missing");
}

static void work(struct work *w)
{
	static const uint32_t sizes[] = { 0, 5000, 300000, (1u << 20) + 3 };
	dirpath path = EXPORT_DIR, bad = "/nowhere";
	fhstatus fs;
	unsigned k;

	memset(&fs, 0, sizeof(fs));
	EXPECT(&w->o, mountproc_mnt_1(&bad, &fs, w->mnt) == RPC_SUCCESS && fs.fhs_status != 0,
	       "mount of a path not exported");
	memset(&fs, 0, sizeof(fs));
	EXPECT(&w->o, mountproc_mnt_1(&path, &fs, w->mnt) == RPC_SUCCESS && fs.fhs_status == 0,
	       "mount");
	memcpy(w->root.data, fs.fhstatus_u.fhs_fhandle, NFS_FHSIZE);
	say(&w->o, "== %s\n", w->tag);
	EXPECT(&w->o, create(w, &w->root, w->tag, 1, &w->dir) == NFS_OK, "mkdir %s", w->tag);
	say(&w->o, "mkdir again: %s\n", st(create(w, &w->root, w->tag, 1, NULL)));
	for (k = 0; k < 4; k++)
		file_round_trip(w, k, sizes[k]);
	links(w);
	renames(w);
	many_entries(w);
	truncate_and_stat(w);
	mount_lists(w);
	EXPECT(&w->o, mountproc_umnt_1(&path, NULL, w->mnt) == RPC_SUCCESS, "umount");
}

static void *thread_main(void *arg)
{
	work(arg);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned port, n = 1, i;
	struct work *w;
	pthread_t *th;
	CLIENT *nfs, *mnt;
	int bad = 0;

	if (argc < 5 || (strcmp(argv[3], "work") && strcmp(argv[3], "threads"))) {
		fprintf(stderr, "usage: nfs2_client HOST PORT work TAG | threads TAG N\n");
		return 2;
	}
	port = (unsigned)atoi(argv[2]);
	if (!strcmp(argv[3], "threads"))
		n = argc > 5 ? (unsigned)atoi(argv[5]) : 8;
	nfs = make_client(argv[1], port, NFS_PROGRAM, NFS_VERSION);
	mnt = make_client(argv[1], port, MOUNTPROG, MOUNTVERS);
	if (!nfs || !mnt) {
		clnt_pcreateerror("nfs2_client");
		return 1;
	}
	w = calloc(n, sizeof(*w));
	th = calloc(n, sizeof(*th));
	for (i = 0; i < n; i++) {
		char *tag = malloc(strlen(argv[4]) + 16);

		sprintf(tag, n > 1 ? "%s-t%u" : "%s", argv[4], i);
		w[i].tag = tag;
		w[i].nfs = nfs;     /* one CLIENT * shared by every thread */
		w[i].mnt = mnt;
		pthread_create(&th[i], NULL, thread_main, &w[i]);
	}
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		fwrite(w[i].o.buf, 1, w[i].o.len, stdout);
		bad += w[i].o.bad;
		free(w[i].o.buf);
		free((char *)w[i].tag);
	}
	free(w);
	free(th);
	auth_destroy(nfs->cl_auth);
	auth_destroy(mnt->cl_auth);
	clnt_destroy(nfs);
	clnt_destroy(mnt);
	return bad != 0;
}
