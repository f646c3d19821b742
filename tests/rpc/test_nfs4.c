/* SPDX-License-Identifier: BSD-2-Clause */
/* The NFSv4 binding (RFC 8267 §5) on a small in-memory COMPOUND server: COMPOUNDs holding
 * several WRITEs, several READs, both, a symbolic link's CREATE and READLINK, through
 * the rpcgen (-M) stub nfsproc4_compound_4() over RDMA, in one process; every byte and
 * every chunk counted. Usage: test_nfs4 tcp|shm [HOST] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nfs4_prot.h"
#include "rpcrdma/nfs4.h"

/* ---- the toy server: handle "F" is a file, "L" a symbolic link ---- */

static char *file_data;
static uint64_t file_len;
static char *link_text;
static u_int link_len;

static int fh_is(const nfs_fh4 *fh, char c)
{
	return fh->nfs_fh4_len == 1 && fh->nfs_fh4_val[0] == c;
}

static nfsstat4 do_write(const nfs_fh4 *cur, const WRITE4args *a, WRITE4res *r)
{
	uint64_t end = a->offset + a->data.data_len;

	if (!fh_is(cur, 'F'))
		return NFS4ERR_INVAL;
	if (end > file_len) {
		file_data = realloc(file_data, end);
		memset(file_data + file_len, 0, end - file_len);
		file_len = end;
	}
	memcpy(file_data + a->offset, a->data.data_val, a->data.data_len);
	r->WRITE4res_u.resok4.count = a->data.data_len;
	r->WRITE4res_u.resok4.committed = FILE_SYNC4;
	return NFS4_OK;
}

static nfsstat4 do_read(const nfs_fh4 *cur, const READ4args *a, READ4res *r)
{
	READ4resok *ok = &r->READ4res_u.resok4;
	uint64_t n = a->offset < file_len ? file_len - a->offset : 0;

	if (!fh_is(cur, 'F'))
		return NFS4ERR_INVAL;
	if (n > a->count)
		n = a->count;
	ok->eof = a->offset + n >= file_len;
	ok->data.data_len = (u_int)n;
	ok->data.data_val = malloc(n + 1);
	if (n)
		memcpy(ok->data.data_val, file_data + a->offset, n);
	return NFS4_OK;
}

static nfsstat4 do_create(const CREATE4args *a)
{
	if (a->objtype.type != NF4LNK)
		return NFS4ERR_BADTYPE;
	free(link_text);
	link_len = a->objtype.createtype4_u.linkdata.utf8string_len;
	link_text = malloc(link_len + 1);
	memcpy(link_text, a->objtype.createtype4_u.linkdata.utf8string_val, link_len);
	return NFS4_OK;
}

static nfsstat4 do_readlink(const nfs_fh4 *cur, READLINK4res *r)
{
	linktext4 *l = &r->READLINK4res_u.resok4.link;

	if (!fh_is(cur, 'L') || !link_text)
		return NFS4ERR_INVAL;
	l->utf8string_len = link_len;
	l->utf8string_val = malloc(link_len + 1);
	memcpy(l->utf8string_val, link_text, link_len);
	return NFS4_OK;
}

/* One operation; its status (the first not NFS4_OK ends the COMPOUND, RFC 5661 §15.2). */
static nfsstat4 one_op(nfs_fh4 *cur, const nfs_argop4 *a, nfs_resop4 *r)
{
	r->resop = a->argop;
	switch (a->argop) {
	case OP_PUTFH:
		if (a->nfs_argop4_u.opputfh.object.nfs_fh4_len != 1)
			return r->nfs_resop4_u.opputfh.status = NFS4ERR_BADHANDLE;
		*cur = a->nfs_argop4_u.opputfh.object;
		return r->nfs_resop4_u.opputfh.status = NFS4_OK;
	case OP_WRITE:
		return r->nfs_resop4_u.opwrite.status =
			do_write(cur, &a->nfs_argop4_u.opwrite, &r->nfs_resop4_u.opwrite);
	case OP_READ:
		return r->nfs_resop4_u.opread.status =
			do_read(cur, &a->nfs_argop4_u.opread, &r->nfs_resop4_u.opread);
	case OP_CREATE:
		return r->nfs_resop4_u.opcreate.status = do_create(&a->nfs_argop4_u.opcreate);
	case OP_READLINK:
		return r->nfs_resop4_u.opreadlink.status =
			do_readlink(cur, &r->nfs_resop4_u.opreadlink);
	default:
		r->resop = OP_ILLEGAL;
		return r->nfs_resop4_u.opillegal.status = NFS4ERR_OP_ILLEGAL;
	}
}

static void compound(COMPOUND4args *a, COMPOUND4res *r)
{
	nfs_fh4 cur = { 0, NULL };
	u_int i;

	memset(r, 0, sizeof(*r));
	r->resarray.resarray_val = calloc(a->argarray.argarray_len + 1, sizeof(nfs_resop4));
	for (i = 0; i < a->argarray.argarray_len; i++) {
		r->resarray.resarray_len = i + 1;
		r->status = one_op(&cur, &a->argarray.argarray_val[i], &r->resarray.resarray_val[i]);
		if (r->status != NFS4_OK)
			break;
	}
}

/* Written by hand rather than generated: rpcgen's dispatch file serves both programs of
 * the .x, and this server serves only NFS4_PROGRAM. */
static void nfs4_dispatch(struct svc_req *rq, SVCXPRT *xprt)
{
	COMPOUND4args args;
	COMPOUND4res res;

	if (rq->rq_proc == NFSPROC4_NULL) {
		svc_sendreply(xprt, (xdrproc_t)(void (*)(void))xdr_void, NULL);
		return;
	}
	if (rq->rq_proc != NFSPROC4_COMPOUND) {
		svcerr_noproc(xprt);
		return;
	}
	memset(&args, 0, sizeof(args));
	if (!svc_getargs(xprt, (xdrproc_t)xdr_COMPOUND4args, (caddr_t)&args)) {
		svcerr_decode(xprt);
		return;
	}
	compound(&args, &res);
	svc_sendreply(xprt, (xdrproc_t)xdr_COMPOUND4res, (caddr_t)&res);
	xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&res);
	svc_freeargs(xprt, (xdrproc_t)xdr_COMPOUND4args, (caddr_t)&args);
}

static void *serve(void *arg)
{
	(void)arg;
	rpcrdma_svc_run(2);
	return NULL;
}

/* ---- the client ---- */

static CLIENT *cl;
static char fh_f[] = "F", fh_l[] = "L", fh_bad[] = "X";

static void stats(struct rpcrdma_eng_stats *st)
{
	CHECK(clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)st));
}

static void op_putfh(nfs_argop4 *op, char *fh)
{
	op->argop = OP_PUTFH;
	op->nfs_argop4_u.opputfh.object.nfs_fh4_len = 1;
	op->nfs_argop4_u.opputfh.object.nfs_fh4_val = fh;
}

static void op_write(nfs_argop4 *op, uint64_t off, char *data, u_int len)
{
	op->argop = OP_WRITE;
	op->nfs_argop4_u.opwrite.offset = off;
	op->nfs_argop4_u.opwrite.stable = FILE_SYNC4;
	op->nfs_argop4_u.opwrite.data.data_len = len;
	op->nfs_argop4_u.opwrite.data.data_val = data;
}

static void op_read(nfs_argop4 *op, uint64_t off, u_int count)
{
	op->argop = OP_READ;
	op->nfs_argop4_u.opread.offset = off;
	op->nfs_argop4_u.opread.count = count;
}

static enum clnt_stat call(nfs_argop4 *ops, u_int n, COMPOUND4res *res)
{
	COMPOUND4args a;

	memset(&a, 0, sizeof(a));
	a.minorversion = 1;
	a.argarray.argarray_len = n;
	a.argarray.argarray_val = ops;
	memset(res, 0, sizeof(*res));
	return nfsproc4_compound_4(&a, res, cl);
}

static char *pattern(u_int len, u_int seed)
{
	char *p = malloc(len);
	u_int i;

	for (i = 0; i < len; i++)
		p[i] = (char)(i * 13 + seed + (i >> 11));
	return p;
}

/* Three WRITEs in one COMPOUND: each its own read chunk, at its own place, in order. */
static void test_several_writes(void)
{
	enum { A = 300000, B = 65536, C = 100 };
	struct rpcrdma_eng_stats s0, s1;
	nfs_argop4 ops[4];
	COMPOUND4res r;
	char *a = pattern(A, 1), *b = pattern(B, 2), *c = pattern(C, 3);

	memset(ops, 0, sizeof(ops));
	op_putfh(&ops[0], fh_f);
	op_write(&ops[1], 0, a, A);
	op_write(&ops[2], A, b, B);
	op_write(&ops[3], A + B, c, C);
	stats(&s0);
	CHECK(call(ops, 4, &r) == RPC_SUCCESS);
	stats(&s1);
	CHECK_EQ_U(r.status, NFS4_OK);
	CHECK_EQ_U(r.resarray.resarray_len, 4);
	CHECK_EQ_U(r.resarray.resarray_val[3].nfs_resop4_u.opwrite.WRITE4res_u.resok4.count, C);
	CHECK_EQ_U(s1.read_chunks - s0.read_chunks, 3);
	CHECK_EQ_U(s1.read_chunk_bytes - s0.read_chunk_bytes, A + B + C);
	CHECK_EQ_U(file_len, A + B + C);
	CHECK(!memcmp(file_data, a, A) && !memcmp(file_data + A, b, B) &&
	      !memcmp(file_data + A + B, c, C));
	xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&r);
	free(a);
	free(b);
	free(c);
}

/* Four READs in one COMPOUND, one of them past the end: one write chunk each, filled in
 * the order of the READs; the data of each where it belongs. */
static void test_several_reads(void)
{
	enum { A = 200000, B = 4096, C = 65536 + 33 };
	struct rpcrdma_eng_stats s0, s1;
	nfs_argop4 ops[5];
	COMPOUND4res r;
	READ4resok *ok[4];
	int i;

	memset(ops, 0, sizeof(ops));
	op_putfh(&ops[0], fh_f);
	op_read(&ops[1], 0, A);
	op_read(&ops[2], A + 100, B);
	op_read(&ops[3], file_len + 10, 1000);   /* nothing: eof */
	op_read(&ops[4], file_len - C, C + 500);  /* short: the last C bytes */
	stats(&s0);
	CHECK(call(ops, 5, &r) == RPC_SUCCESS);
	stats(&s1);
	CHECK_EQ_U(r.status, NFS4_OK);
	CHECK_EQ_U(r.resarray.resarray_len, 5);
	for (i = 0; i < 4; i++)
		ok[i] = &r.resarray.resarray_val[i + 1].nfs_resop4_u.opread.READ4res_u.resok4;
	CHECK(ok[0]->data.data_len == A && !memcmp(ok[0]->data.data_val, file_data, A));
	CHECK(ok[1]->data.data_len == B && !memcmp(ok[1]->data.data_val, file_data + A + 100, B));
	CHECK(ok[2]->data.data_len == 0 && ok[2]->eof);
	CHECK(ok[3]->data.data_len == C && ok[3]->eof &&
	      !memcmp(ok[3]->data.data_val, file_data + file_len - C, C));
	CHECK_EQ_U(s1.write_chunks - s0.write_chunks, 4);
	CHECK_EQ_U(s1.write_chunk_bytes - s0.write_chunk_bytes, A + B + C);
	xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&r);
}

/* WRITE then READ of the same bytes in one COMPOUND: a read chunk and a write chunk. */
static void test_write_then_read(void)
{
	enum { N = 150000 };
	struct rpcrdma_eng_stats s0, s1;
	nfs_argop4 ops[3];
	COMPOUND4res r;
	READ4resok *ok;
	char *d = pattern(N, 9);

	memset(ops, 0, sizeof(ops));
	op_putfh(&ops[0], fh_f);
	op_write(&ops[1], 12345, d, N);
	op_read(&ops[2], 12345, N);
	stats(&s0);
	CHECK(call(ops, 3, &r) == RPC_SUCCESS && r.status == NFS4_OK);
	stats(&s1);
	ok = &r.resarray.resarray_val[2].nfs_resop4_u.opread.READ4res_u.resok4;
	CHECK(ok->data.data_len == N && !memcmp(ok->data.data_val, d, N));
	CHECK_EQ_U(s1.read_chunk_bytes - s0.read_chunk_bytes, N);
	CHECK_EQ_U(s1.write_chunk_bytes - s0.write_chunk_bytes, N);
	xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&r);
	free(d);
}

/* A COMPOUND that stops at its first operation: the READs' chunks go unused, the reply
 * decodes (one result), and the connection serves the next call. */
static void test_stops_early(void)
{
	nfs_argop4 ops[3];
	COMPOUND4res r;

	memset(ops, 0, sizeof(ops));
	op_putfh(&ops[0], fh_bad);
	ops[0].nfs_argop4_u.opputfh.object.nfs_fh4_len = 2;   /* refused: BADHANDLE */
	op_read(&ops[1], 0, 100000);
	op_read(&ops[2], 0, 100000);
	CHECK(call(ops, 3, &r) == RPC_SUCCESS);
	CHECK_EQ_U(r.status, NFS4ERR_BADHANDLE);
	CHECK_EQ_U(r.resarray.resarray_len, 1);
	xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&r);
	op_putfh(&ops[0], fh_f);
	CHECK(call(ops, 3, &r) == RPC_SUCCESS && r.status == NFS4_OK);
	CHECK(r.resarray.resarray_val[2].nfs_resop4_u.opread.READ4res_u.resok4.data.data_len ==
	      100000);
	xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&r);
}

/* CREATE of a symbolic link (its text in a read chunk) and READLINK (in a write chunk),
 * then a WRITE (so the call is too long to go inline) and a READ of it in the same
 * COMPOUND: the chunks keep their order each way. */
static void test_symlink_readlink(void)
{
	enum { TL = 3000, WL = 8000 };
	struct rpcrdma_eng_stats s0, s1;
	nfs_argop4 ops[6];
	COMPOUND4res r;
	char *text = pattern(TL, 5), *d = pattern(WL, 6);
	linktext4 *got;
	READ4resok *ok;

	memset(ops, 0, sizeof(ops));
	op_putfh(&ops[0], fh_l);
	ops[1].argop = OP_CREATE;
	ops[1].nfs_argop4_u.opcreate.objtype.type = NF4LNK;
	ops[1].nfs_argop4_u.opcreate.objtype.createtype4_u.linkdata.utf8string_len = TL;
	ops[1].nfs_argop4_u.opcreate.objtype.createtype4_u.linkdata.utf8string_val = text;
	ops[1].nfs_argop4_u.opcreate.objname.utf8string_len = 2;
	ops[1].nfs_argop4_u.opcreate.objname.utf8string_val = "sl";
	ops[2].argop = OP_READLINK;
	op_putfh(&ops[3], fh_f);
	op_write(&ops[4], 0, d, WL);
	op_read(&ops[5], 0, WL);
	stats(&s0);
	CHECK(call(ops, 6, &r) == RPC_SUCCESS);
	stats(&s1);
	CHECK_EQ_U(r.status, NFS4_OK);
	got = &r.resarray.resarray_val[2].nfs_resop4_u.opreadlink.READLINK4res_u.resok4.link;
	CHECK(got->utf8string_len == TL && !memcmp(got->utf8string_val, text, TL));
	ok = &r.resarray.resarray_val[5].nfs_resop4_u.opread.READ4res_u.resok4;
	CHECK(ok->data.data_len == WL && !memcmp(ok->data.data_val, d, WL));
	CHECK_EQ_U(s1.read_chunks - s0.read_chunks, 2);
	CHECK_EQ_U(s1.read_chunk_bytes - s0.read_chunk_bytes, TL + WL);
	CHECK_EQ_U(s1.write_chunks - s0.write_chunks, 2);
	CHECK_EQ_U(s1.write_chunk_bytes - s0.write_chunk_bytes, TL + WL);
	xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&r);
	free(text);
	free(d);
}

/* The write chunks the binding asks for: one per READ (its count) and READLINK, in
 * order, none for anything else, never more than asked. */
static void test_chunk_sizes(void)
{
	const struct rpcrdma_ulb_proc *p = rpcrdma_ulb_find(NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND);
	nfs_argop4 ops[6];
	COMPOUND4args a;
	uint32_t sizes[8];

	CHECK(p && p->res_ddp_sizes && p->xargs && p->xres);
	CHECK(!rpcrdma_ulb_find(NFS4_PROGRAM, NFS_V4, NFSPROC4_NULL));
	memset(ops, 0, sizeof(ops));
	memset(&a, 0, sizeof(a));
	op_putfh(&ops[0], fh_f);
	op_read(&ops[1], 0, 100);
	ops[2].argop = OP_GETFH;
	ops[3].argop = OP_READLINK;
	op_write(&ops[4], 0, "x", 1);
	op_read(&ops[5], 7, 7);
	a.argarray.argarray_val = ops;
	a.argarray.argarray_len = 6;
	CHECK_EQ_U(p->res_ddp_sizes(&a, sizes, 8), 3);
	CHECK(sizes[0] == 100 && sizes[1] == RPCRDMA_NFS4_MAXLINK && sizes[2] == 7);
	CHECK_EQ_U(p->res_ddp_sizes(&a, sizes, 2), 2);
	a.argarray.argarray_len = 3;
	CHECK_EQ_U(p->res_ddp_sizes(&a, sizes, 8), 1);
}

/* More READs than the write chunks a client offers (RPCRDMA_DEF_LIST_CHUNKS): the data
 * of the later ones comes inline, in the reply chunk when the server sends no read
 * chunks in replies (knfsd: main's "knfsd" mode), which the estimate must make room for. */
static void test_many_reads(void)
{
	enum { N = RPCRDMA_DEF_LIST_CHUNKS + 2, L = 60000 };
	nfs_argop4 ops[N + 1];
	COMPOUND4res r;
	char *d = pattern(N * L, 4);
	int i;

	memset(ops, 0, sizeof(ops));
	op_putfh(&ops[0], fh_f);
	op_write(&ops[1], 0, d, N * L);
	CHECK(call(ops, 2, &r) == RPC_SUCCESS && r.status == NFS4_OK);
	xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&r);
	for (i = 0; i < N; i++)
		op_read(&ops[i + 1], (uint64_t)i * L, L);
	CHECK(call(ops, N + 1, &r) == RPC_SUCCESS);
	if (r.status != NFS4_OK || r.resarray.resarray_len != N + 1) {
		CHECK(!"many reads: failed or short");
		fprintf(stderr, "  %s\n", rpcrdma_clnt_errtext(cl));
		free(d);
		return;
	}
	for (i = 0; i < N; i++) {
		READ4resok *ok = &r.resarray.resarray_val[i + 1].nfs_resop4_u.opread.READ4res_u.resok4;

		CHECK(ok->data.data_len == L && !memcmp(ok->data.data_val, d + (size_t)i * L, L));
	}
	xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&r);
	free(d);
}

/* READs past the write chunks offered come inline: the estimate holds their data (and
 * the first RPCRDMA_DEF_LIST_CHUNKS' not). */
static void test_estimate_past_chunks(const struct rpcrdma_ulb_proc *p)
{
	enum { N = RPCRDMA_DEF_LIST_CHUNKS + 2, L = 60000 };
	nfs_argop4 ops[N];
	COMPOUND4args a;
	uint32_t est;
	int i;

	memset(ops, 0, sizeof(ops));
	memset(&a, 0, sizeof(a));
	for (i = 0; i < N; i++)
		op_read(&ops[i], 0, L);
	a.argarray.argarray_val = ops;
	a.argarray.argarray_len = N;
	est = p->max_reply_size(&a);
	CHECK(est >= 2u * (L + 8u) && est < 3u * L);
}

/* RFC 8267 §5.2: a COMPOUND's reply estimated from its operations (its READ data aside):
 * short for PUTFH + READ, a READDIR's maxcount, none (0: the client's default) for a
 * GETATTR of an ACL. */
static void test_reply_estimate(void)
{
	const struct rpcrdma_ulb_proc *p = rpcrdma_ulb_find(NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND);
	unsigned int acl = 1u << 12, small = (1u << FATTR4_TYPE) | (1u << FATTR4_SIZE);
	nfs_argop4 ops[3];
	COMPOUND4args a;
	uint32_t est;

	CHECK(p && p->max_reply_size);
	memset(ops, 0, sizeof(ops));
	memset(&a, 0, sizeof(a));
	op_putfh(&ops[0], fh_f);
	op_read(&ops[1], 0, 1u << 20);
	a.argarray.argarray_val = ops;
	a.argarray.argarray_len = 2;
	est = p->max_reply_size(&a);
	CHECK(est > 0 && est < 4096);
	ops[2].argop = OP_GETATTR;
	ops[2].nfs_argop4_u.opgetattr.attr_request.bitmap4_len = 1;
	ops[2].nfs_argop4_u.opgetattr.attr_request.bitmap4_val = &small;
	a.argarray.argarray_len = 3;
	CHECK(p->max_reply_size(&a) > est && p->max_reply_size(&a) < 4096);
	ops[2].nfs_argop4_u.opgetattr.attr_request.bitmap4_val = &acl;
	CHECK_EQ_U(p->max_reply_size(&a), 0);
	ops[2].argop = OP_READDIR;
	ops[2].nfs_argop4_u.opreaddir.maxcount = 65536;
	CHECK(p->max_reply_size(&a) > 65536);
	test_estimate_past_chunks(p);
}

/* Off RDMA the binding's routines are the generated ones: the same bytes encoded, the
 * same COMPOUND decoded; and a decoder refuses what it must. */
static void test_same_xdr_off_rdma(void)
{
	const struct rpcrdma_ulb_proc *p = rpcrdma_ulb_find(NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND);
	char a[512], b[512];
	nfs_argop4 ops[4];
	COMPOUND4args ca, back;
	XDR x;
	u_int la, lb;

	memset(ops, 0, sizeof(ops));
	memset(&ca, 0, sizeof(ca));
	op_putfh(&ops[0], fh_f);
	op_write(&ops[1], 77, "hello", 5);
	op_read(&ops[2], 1, 2);
	ops[3].argop = OP_GETFH;
	ca.minorversion = 1;
	ca.argarray.argarray_val = ops;
	ca.argarray.argarray_len = 4;
	xdrmem_create(&x, a, sizeof(a), XDR_ENCODE);
	CHECK(xdr_COMPOUND4args(&x, &ca));
	la = XDR_GETPOS(&x);
	xdrmem_create(&x, b, sizeof(b), XDR_ENCODE);
	CHECK(p->xargs(&x, &ca));
	lb = XDR_GETPOS(&x);
	CHECK(la == lb && !memcmp(a, b, la));
	memset(&back, 0, sizeof(back));
	xdrmem_create(&x, a, la, XDR_DECODE);
	CHECK(p->xargs(&x, &back));
	CHECK_EQ_U(back.argarray.argarray_len, 4);
	CHECK(back.argarray.argarray_val[1].argop == OP_WRITE &&
	      back.argarray.argarray_val[1].nfs_argop4_u.opwrite.offset == 77 &&
	      back.argarray.argarray_val[1].nfs_argop4_u.opwrite.data.data_len == 5 &&
	      !memcmp(back.argarray.argarray_val[1].nfs_argop4_u.opwrite.data.data_val, "hello", 5));
	CHECK(back.argarray.argarray_val[3].argop == OP_GETFH);
	xdr_free(p->xargs, (char *)&back);
	/* an operation this subset does not know (OPEN_DOWNGRADE, 21): refused */
	memset(&back, 0, sizeof(back));
	a[la - 4] = 0, a[la - 3] = 0, a[la - 2] = 0, a[la - 1] = 21;
	xdrmem_create(&x, a, la, XDR_DECODE);
	CHECK(!p->xargs(&x, &back));
	xdr_free(p->xargs, (char *)&back);
	/* a count of operations past the bound: refused before any allocation */
	memset(&back, 0, sizeof(back));
	memset(b, 0, 12);
	b[8] = 0x7f;   /* tag empty, minorversion 0, 0x7f000000 operations */
	xdrmem_create(&x, b, 12, XDR_DECODE);
	CHECK(!p->xargs(&x, &back));
	CHECK(back.argarray.argarray_val == NULL);
}

int main(int argc, char **argv)
{
	struct rpcrdma_svc_opts so;
	struct rpcrdma_clnt_opts co;
	const char *prov = argc > 1 ? argv[1] : "tcp";
	const char *host = argc > 2 ? argv[2] : test_host();
	SVCXPRT *x;
	pthread_t th;

	if (test_prov_absent(prov))
		return 77;
	CHECK_EQ_U(rpcrdma_ulb_register(rpcrdma_ulb_nfs4()), 0);
	memset(&so, 0, sizeof(so));
	/* TEST_NFS4_KNFSD: as knfsd, no read chunks in replies (ERR_CHUNK when a reply
	 * outgrows the reply chunk), so every estimate of the client is put to the test */
	so.reply_read_chunks = getenv("TEST_NFS4_KNFSD") ? -1 : 0;
	so.provider = prov;
	so.host = host;
	so.port = RPCRDMA_PORT_ANY;
	x = svc_rdma_create(&so);
	if (!x || !svc_register(x, NFS4_PROGRAM, NFS_V4, nfs4_dispatch, 0)) {
		fprintf(stderr, "cannot serve over %s\n", prov);
		return 1;
	}
	pthread_create(&th, NULL, serve, NULL);
	memset(&co, 0, sizeof(co));
	co.provider = prov;
	co.port = svc_rdma_port(x);
	cl = clnt_rdma_create(host, NFS4_PROGRAM, NFS_V4, &co);
	if (!cl) {
		clnt_pcreateerror("test_nfs4");
		return 1;
	}
	RUN(test_several_writes);
	RUN(test_several_reads);
	RUN(test_write_then_read);
	RUN(test_stops_early);
	RUN(test_symlink_readlink);
	RUN(test_chunk_sizes);
	RUN(test_reply_estimate);
	RUN(test_same_xdr_off_rdma);
	RUN(test_many_reads);
	clnt_destroy(cl);
	rpcrdma_svc_exit();
	pthread_join(th, NULL);
	svc_destroy(x);
	free(file_data);
	free(link_text);
	HARNESS_END();
}
