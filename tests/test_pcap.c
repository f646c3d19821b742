/* SPDX-License-Identifier: BSD-2-Clause */
/* The capture: the invariant CRC against a frame from real hardware, the frames written
 * for each event (split at the MTU, PSNs, RETH, READ RESPONSE data), CM frames, pairing of
 * two endpoints in one file, snap length, a full buffer dropping instead of waiting, the
 * file name's %p, and RPCRDMA_PCAP. The file is read back here with a small pcap reader
 * of the test's own. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "pcap_int.h"
#include "prov_mock.h"

#define MAXF 64

struct rec {
	uint32_t incl, orig;
	uint8_t *d;
};

struct cap_file {
	int n;
	struct rec r[MAXF];
};

static uint32_t be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint32_t be32(const uint8_t *p)
{
	return be24(p) << 8 | p[3];
}

static void read_file(const char *path, struct cap_file *f)
{
	FILE *in = fopen(path, "rb");
	uint8_t h[24];
	uint32_t v[4];

	memset(f, 0, sizeof(*f));
	CHECK(in != NULL);
	if (!in)
		return;
	CHECK_EQ_U(fread(h, 1, 24, in), 24);
	memcpy(v, h, 4);
	CHECK_EQ_U(v[0], 0xa1b23c4du);
	while (f->n < MAXF && fread(v, 1, 16, in) == 16) {
		struct rec *r = &f->r[f->n++];

		r->incl = v[2];
		r->orig = v[3];
		r->d = malloc(r->incl);
		CHECK_EQ_U(fread(r->d, 1, r->incl, in), r->incl);
	}
	fclose(in);
}

static void free_file(struct cap_file *f)
{
	int i;

	for (i = 0; i < f->n; i++)
		free(f->r[i].d);
}

/* IPv4 frames: BTH at 14 + 20 + 8 */
#define BTH 42
static uint8_t opcode(const struct rec *r) { return r->d[BTH]; }
static uint32_t dqp(const struct rec *r) { return be24(r->d + BTH + 5); }
static uint32_t psn(const struct rec *r) { return be24(r->d + BTH + 9); }

/* A RoCEv2 CNP captured on a ConnectX-4 Lx (published with scapy's RoCE tests): our
 * CRC, lengths and IP checksum must give back its exact bytes. */
static void icrc_matches_hardware(void)
{
	static const char *hex = "e41d2dab2bc27cfe90643b32080045c2003c718c400040119161"
				 "0a0011010a001201000012b7002800008100ffff4000011800000000"
				 "0000000000000000000000000000000082fd002a";
	uint8_t pkt[74], buf[CAP_FRAME_MAX];
	struct cap_path p;
	size_t i;

	for (i = 0; i < sizeof(pkt); i++)
		sscanf(hex + 2 * i, "%2hhx", &pkt[i]);
	memcpy(buf, pkt, sizeof(pkt) - 4);
	buf[24] = buf[25] = 0;   /* the IP checksum, recomputed */
	memset(&p, 0, sizeof(p));
	CHECK_EQ_U(rpcrdma__cap_finish(buf, &p, 54, 16, 1), sizeof(pkt));
	CHECK(memcmp(buf, pkt, sizeof(pkt)) == 0);
}

struct rig {
	struct rpcrdma_prov *p;
	struct rpcrdma_ep *a, *b;
	uint8_t *mem;
	struct rpcrdma_mr *mr;
};

#define MEM (64 * 1024)

static void rig_open(struct rig *r)
{
	static const uint8_t pa[8] = { 0xf6, 0xf6, 0xf6, 0xf6, 1, 0, 2, 3 };
	static const uint8_t pb[8] = { 0xf6, 0xf6, 0xf6, 0xf6, 1, 0, 4, 5 };

	memset(r, 0, sizeof(*r));
	CHECK_EQ_I(rpcrdma_mock_open(&r->p), 0);
	CHECK_EQ_I(rpcrdma_mock_pair(r->p, pa, sizeof(pa), pb, sizeof(pb), &r->a, &r->b), 0);
	r->mem = calloc(1, MEM);
	CHECK_EQ_U(rpcrdma_mr_reg(r->p, r->mem, MEM,
				  RPCRDMA_ACC_REMOTE_READ | RPCRDMA_ACC_REMOTE_WRITE |
					  RPCRDMA_ACC_READ_SINK, &r->mr), 0);
}

static void rig_close(struct rig *r)
{
	rpcrdma_ep_close(r->a);
	rpcrdma_ep_close(r->b);
	rpcrdma_mr_dereg(r->mr);
	rpcrdma_prov_close(r->p);
	free(r->mem);
}

static int poll_one(struct rpcrdma_ep *ep, struct rpcrdma_cqe *c)
{
	int i;

	for (i = 0; i < 1000; i++)
		if (rpcrdma_ep_poll(ep, c, 1) == 1)
			return 0;
	return -1;
}

static struct rpcrdma_sge sge(struct rig *r, uint32_t off, uint32_t len)
{
	struct rpcrdma_sge s = { r->mr, r->mem + off, len };

	return s;
}

/* a sends 10000 bytes to b, writes 5000 into b's memory and reads 100 from it */
static void traffic(struct rig *r)
{
	struct rpcrdma_sge rx = sge(r, 0, 16384), tx = sge(r, 16384, 10000);
	struct rpcrdma_sge wsrc = sge(r, 32768, 5000), rdst = sge(r, 40000, 100);
	struct rpcrdma_segment wseg = { r->mr->handle, 5000, r->mr->offset + 50000 };
	struct rpcrdma_segment rseg = { r->mr->handle, 100, r->mr->offset + 60000 };
	struct rpcrdma_cqe c;
	uint32_t i;

	for (i = 0; i < MEM; i++)
		r->mem[i] = (uint8_t)(i * 7 + 1);
	CHECK_EQ_I(rpcrdma_post_recv(r->b, &rx, (void *)1), 0);
	CHECK_EQ_I(rpcrdma_post_send(r->a, &tx, (void *)2), 0);
	CHECK_EQ_I(rpcrdma_post_write(r->a, &wsrc, 1, &wseg, 1, (void *)3), 0);
	CHECK_EQ_I(rpcrdma_post_read(r->a, &rdst, 1, &rseg, 1, (void *)4), 0);
	for (i = 0; i < 3; i++)
		CHECK_EQ_U(poll_one(r->a, &c), 0);
	CHECK_EQ_U(poll_one(r->b, &c), 0);
	CHECK_EQ_U(c.op, RPCRDMA_OP_RECV);
	CHECK_EQ_U(c.len, 10000);
}

static const char *tmp_path(void)
{
	static char path[64];

	snprintf(path, sizeof(path), "/tmp/test_pcap.%ld.pcap", (long)getpid());
	return path;
}

/* Payload bytes of an RC frame after its extended header. */
static const uint8_t *payload(const struct rec *r, size_t ext, size_t *len)
{
	size_t pad = (r->d[BTH + 1] >> 4) & 3;

	*len = r->incl - BTH - 12 - ext - pad - 4;
	return r->d + BTH + 12 + ext;
}

static void frames_of_each_event(void)
{
	struct rpcrdma_pcap_stats st;
	struct rpcrdma_pcap *c;
	struct cap_file f;
	struct rig r;
	uint32_t qa, qb, handle;
	uint64_t offset;
	size_t len;

	rig_open(&r);
	handle = r.mr->handle;
	offset = r.mr->offset;
	CHECK_EQ_I(rpcrdma_pcap_open(tmp_path(), NULL, &c), 0);
	CHECK_EQ_I(rpcrdma_ep_capture(r.a, c), 0);
	traffic(&r);
	rpcrdma_pcap_flush(c);
	rpcrdma_pcap_stats(c, &st);
	rpcrdma_ep_close(r.a);
	rpcrdma_ep_close(r.b);
	r.a = r.b = NULL;
	rpcrdma_pcap_close(c);
	read_file(tmp_path(), &f);
	/* CM REQ, REP, RTU; SEND x3; WRITE FIRST, LAST; READ REQUEST; READ RESPONSE ONLY;
	 * and b's receive (b is not captured, so a's Send is not written twice) */
	CHECK_EQ_U(f.n, 10);
	CHECK_EQ_U(st.frames, 10);
	CHECK_EQ_U(st.writes, 1);
	CHECK_EQ_U(st.reads, 1);
	if (f.n != 10)
		goto out;
	CHECK_EQ_U(opcode(&f.r[0]), IB_UD_SEND_ONLY);
	CHECK_EQ_U(dqp(&f.r[0]), 1);
	CHECK_EQ_U(f.r[0].d[BTH + 12 + 8 + 1], 0x07);             /* MAD class: CM */
	CHECK_EQ_U(f.r[0].d[BTH + 12 + 8 + 17], 0x10);            /* attribute: REQ */
	CHECK_EQ_U(f.r[1].d[BTH + 12 + 8 + 17], 0x13);            /* REP */
	CHECK_EQ_U(f.r[2].d[BTH + 12 + 8 + 17], 0x14);            /* RTU */
	/* REQ's local QPN is a's, REP's is b's; the private data follows the IP CM header */
	qa = be24(f.r[0].d + BTH + 20 + 24 + 32);
	qb = be24(f.r[1].d + BTH + 20 + 24 + 12);
	CHECK(qa != qb);
	CHECK(memcmp(f.r[0].d + BTH + 20 + 24 + 140 + 36, "\xf6\xf6\xf6\xf6\x01\x00\x02\x03", 8) == 0);
	CHECK(memcmp(f.r[1].d + BTH + 20 + 24 + 36, "\xf6\xf6\xf6\xf6\x01\x00\x04\x05", 8) == 0);
	/* the Send: 4096 + 4096 + 1808 bytes, consecutive PSNs, to b's QP */
	CHECK_EQ_U(opcode(&f.r[3]), IB_SEND_FIRST);
	CHECK_EQ_U(opcode(&f.r[4]), IB_SEND_MIDDLE);
	CHECK_EQ_U(opcode(&f.r[5]), IB_SEND_LAST);
	CHECK_EQ_U(dqp(&f.r[3]), qb);
	CHECK_EQ_U(psn(&f.r[4]), psn(&f.r[3]) + 1);
	CHECK_EQ_U(psn(&f.r[5]), psn(&f.r[3]) + 2);
	CHECK(memcmp(payload(&f.r[3], 0, &len), r.mem + 16384, 4096) == 0);
	CHECK_EQ_U(len, 4096);
	CHECK(memcmp(payload(&f.r[5], 0, &len), r.mem + 16384 + 8192, 1808) == 0);
	CHECK_EQ_U(len, 1808);
	/* the Write: RETH with the remote address, key and whole length */
	CHECK_EQ_U(opcode(&f.r[6]), IB_WRITE_FIRST);
	CHECK_EQ_U(opcode(&f.r[7]), IB_WRITE_LAST);
	CHECK_EQ_U(psn(&f.r[6]), psn(&f.r[5]) + 1);
	CHECK_EQ_U((uint64_t)be32(f.r[6].d + BTH + 12) << 32 | be32(f.r[6].d + BTH + 12 + 4),
		   offset + 50000);
	CHECK_EQ_U(be32(f.r[6].d + BTH + 12 + 8), handle);
	CHECK_EQ_U(be32(f.r[6].d + BTH + 12 + 12), 5000);
	CHECK(memcmp(payload(&f.r[7], 0, &len), r.mem + 32768 + 4096, 904) == 0);
	CHECK_EQ_U(len, 904);
	/* the Read: request to b with a's next PSN; the response comes from b to a's QP
	 * with the same PSN, carrying what was read */
	CHECK_EQ_U(opcode(&f.r[8]), IB_READ_REQUEST);
	CHECK_EQ_U(be32(f.r[8].d + BTH + 12 + 12), 100);
	CHECK_EQ_U(opcode(&f.r[9]), IB_READ_RESP_ONLY);
	CHECK_EQ_U(dqp(&f.r[9]), qa);
	CHECK_EQ_U(psn(&f.r[9]), psn(&f.r[8]));
	CHECK(memcmp(payload(&f.r[9], CAP_AETH_LEN, &len), r.mem + 60000, 100) == 0);
	CHECK_EQ_U(len, 100);
out:
	rig_close(&r);
	free_file(&f);
	unlink(tmp_path());
}

/* Both sides in one file: one CM exchange, and the Send once (from the sender). */
/* Sends With Invalidate (rpcrdma_post_send_inv): the last or only frame carries the
 * opcode "with Invalidate" and an IETH with the handle (IBTA vol. 1, 9.3.4), the payload
 * after it. */
static void send_inv_frames(void)
{
	struct rpcrdma_pcap *c;
	struct rpcrdma_mr *k1, *k2;
	struct rpcrdma_cqe e;
	struct cap_file f;
	struct rig r;
	size_t len;
	int i;

	rig_open(&r);
	CHECK_EQ_I(rpcrdma_mr_reg(r.p, r.mem, 4096, RPCRDMA_ACC_REMOTE_WRITE, &k1), 0);
	CHECK_EQ_I(rpcrdma_mr_reg(r.p, r.mem + 4096, 4096, RPCRDMA_ACC_REMOTE_READ, &k2), 0);
	CHECK_EQ_I(rpcrdma_pcap_open(tmp_path(), NULL, &c), 0);
	CHECK_EQ_I(rpcrdma_ep_capture(r.a, c), 0);
	for (i = 0; i < 2; i++) {
		struct rpcrdma_sge rx = sge(&r, 0, 16384);
		struct rpcrdma_sge tx = sge(&r, 16384, i ? 10000 : 100);

		CHECK_EQ_I(rpcrdma_post_recv(r.b, &rx, (void *)1), 0);
		CHECK_EQ_I(rpcrdma_post_send_inv(r.a, &tx, i ? k2->handle : k1->handle, (void *)2),
			   0);
		CHECK_EQ_U(poll_one(r.a, &e), 0);
		CHECK_EQ_I(e.status, 0);
		CHECK_EQ_U(poll_one(r.b, &e), 0);
		CHECK_EQ_U(e.op, RPCRDMA_OP_RECV);
	}
	rpcrdma_pcap_flush(c);
	rpcrdma_ep_close(r.a);
	rpcrdma_ep_close(r.b);
	r.a = r.b = NULL;
	rpcrdma_pcap_close(c);
	read_file(tmp_path(), &f);
	/* CM REQ, REP, RTU; SEND ONLY INV; SEND FIRST, MIDDLE, LAST INV (b is not captured) */
	CHECK_EQ_U(f.n, 7);
	if (f.n != 7)
		goto out;
	CHECK_EQ_U(opcode(&f.r[3]), IB_SEND_ONLY_INV);
	CHECK_EQ_U(be32(f.r[3].d + BTH + 12), k1->handle);
	CHECK(memcmp(payload(&f.r[3], CAP_IETH_LEN, &len), r.mem + 16384, 100) == 0);
	CHECK_EQ_U(len, 100);
	CHECK_EQ_U(opcode(&f.r[4]), IB_SEND_FIRST);
	CHECK(memcmp(payload(&f.r[4], 0, &len), r.mem + 16384, 4096) == 0);
	CHECK_EQ_U(opcode(&f.r[5]), IB_SEND_MIDDLE);
	CHECK_EQ_U(opcode(&f.r[6]), IB_SEND_LAST_INV);
	CHECK_EQ_U(be32(f.r[6].d + BTH + 12), k2->handle);
	CHECK(memcmp(payload(&f.r[6], CAP_IETH_LEN, &len), r.mem + 16384 + 8192, 1808) == 0);
	CHECK_EQ_U(len, 1808);
out:
	CHECK_EQ_I(rpcrdma_mr_dereg(k1), 0);
	CHECK_EQ_I(rpcrdma_mr_dereg(k2), 0);
	rig_close(&r);
	free_file(&f);
	unlink(tmp_path());
}

static void paired_endpoints_write_once(void)
{
	struct rpcrdma_pcap *c;
	struct cap_file f;
	struct rig r;
	int i, sends = 0, cm = 0;

	rig_open(&r);
	CHECK_EQ_I(rpcrdma_pcap_open(tmp_path(), NULL, &c), 0);
	CHECK_EQ_I(rpcrdma_ep_capture(r.b, c), 0);
	CHECK_EQ_I(rpcrdma_ep_capture(r.a, c), 0);
	traffic(&r);
	rig_close(&r);
	rpcrdma_pcap_close(c);
	read_file(tmp_path(), &f);
	for (i = 0; i < f.n; i++) {
		sends += opcode(&f.r[i]) <= IB_SEND_ONLY;
		cm += opcode(&f.r[i]) == IB_UD_SEND_ONLY;
	}
	CHECK_EQ_U(cm, 3);
	CHECK_EQ_U(sends, 3);
	CHECK_EQ_U(f.n, 10);
	free_file(&f);
	unlink(tmp_path());
}

static void snaplen_cuts_frames(void)
{
	struct rpcrdma_pcap_opts o = { .snaplen = 128 };
	struct rpcrdma_pcap_stats st;
	struct rpcrdma_pcap *c;
	struct cap_file f;
	struct rig r;
	int i;

	rig_open(&r);
	CHECK_EQ_I(rpcrdma_pcap_open(tmp_path(), &o, &c), 0);
	CHECK_EQ_I(rpcrdma_ep_capture(r.a, c), 0);
	traffic(&r);
	rpcrdma_pcap_flush(c);
	rpcrdma_pcap_stats(c, &st);
	rig_close(&r);
	rpcrdma_pcap_close(c);
	read_file(tmp_path(), &f);
	CHECK_EQ_U(st.truncated, 9);   /* all but the 74-byte READ REQUEST */
	for (i = 0; i < f.n; i++) {
		CHECK(f.r[i].incl <= 128);
		CHECK(f.r[i].orig >= f.r[i].incl);
	}
	CHECK_EQ_U(f.r[3].orig, BTH + 12 + 4096 + 4);
	free_file(&f);
	unlink(tmp_path());
}

/* Cut inside the CRC: the two bytes kept are zeros, not a previous frame's. */
static void snaplen_inside_crc(void)
{
	struct rpcrdma_pcap_opts o = { .snaplen = BTH + 12 + 1808 + 2 };
	struct rpcrdma_pcap *c;
	struct cap_file f;
	struct rig r;

	rig_open(&r);
	CHECK_EQ_I(rpcrdma_pcap_open(tmp_path(), &o, &c), 0);
	CHECK_EQ_I(rpcrdma_ep_capture(r.a, c), 0);
	traffic(&r);
	rig_close(&r);
	rpcrdma_pcap_close(c);
	read_file(tmp_path(), &f);
	CHECK(f.n >= 6);
	if (f.n >= 6) {
		CHECK_EQ_U(opcode(&f.r[5]), IB_SEND_LAST);
		CHECK_EQ_U(f.r[5].orig, BTH + 12 + 1808 + 4);
		CHECK_EQ_U(f.r[5].incl, BTH + 12 + 1808 + 2);
		/* the Send's last bytes, as traffic() filled the memory */
		CHECK_EQ_U(f.r[5].d[BTH + 12], (uint8_t)((16384 + 8192) * 7 + 1));
		CHECK_EQ_U(f.r[5].d[BTH + 12 + 1807], (uint8_t)((16384 + 8192 + 1807) * 7 + 1));
		CHECK_EQ_U(f.r[5].d[BTH + 12 + 1808], 0);
		CHECK_EQ_U(f.r[5].d[BTH + 12 + 1809], 0);
	}
	free_file(&f);
	unlink(tmp_path());
}

static void *drain(void *arg)
{
	uint8_t buf[4096];
	int fd = *(int *)arg;

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	return NULL;
}

/* The writer stuck on a pipe nobody reads yet: frames are dropped and counted, and the
 * endpoint's posts return at once. */
static void full_buffer_drops(void)
{
	struct rpcrdma_pcap_opts o = { .buffer_bytes = 1 };   /* the least: one frame per half */
	struct rpcrdma_pcap_stats st;
	struct rpcrdma_pcap *c;
	struct rig r;
	pthread_t th;
	char path[32];
	int fds[2], i;

	CHECK_EQ_U(pipe(fds), 0);
	snprintf(path, sizeof(path), "/dev/fd/%d", fds[1]);
	rig_open(&r);
	CHECK_EQ_I(rpcrdma_pcap_open(path, &o, &c), 0);
	close(fds[1]);   /* the sink has its own descriptor for the pipe */
	CHECK_EQ_I(rpcrdma_ep_capture(r.a, c), 0);
	for (i = 0; i < 40; i++)
		traffic(&r);   /* about 1.6 MB of frames; the pipe holds 64 KiB */
	rpcrdma_pcap_stats(c, &st);
	CHECK(st.dropped > 0);
	CHECK(st.dropped_bytes > 0);
	rig_close(&r);
	pthread_create(&th, NULL, drain, &fds[0]);
	rpcrdma_pcap_close(c);   /* the writer finishes once the pipe is read */
	pthread_join(th, NULL);
	close(fds[0]);
}

static void path_and_environment(void)
{
	struct rpcrdma_pcap *c;
	char want[64];

	snprintf(want, sizeof(want), "/tmp/test_pcap-%ld.pcap", (long)getpid());
	setenv("RPCRDMA_PCAP", "/tmp/test_pcap-%p.pcap", 1);
	c = rpcrdma_pcap_default();
	CHECK(c != NULL);
	CHECK(c && !strcmp(rpcrdma_pcap_path(c), want));
	CHECK(rpcrdma_pcap_set_default(NULL) == c);
	CHECK(rpcrdma_pcap_default() == NULL);   /* the environment is read once */
	rpcrdma_pcap_close(c);
	unlink(want);
	CHECK(rpcrdma_pcap_open("/nonexistent/dir/x.pcap", NULL, &c) == -RPCRDMA_ERR_IO);
	rpcrdma_pcap_close(NULL);
}

int main(int argc, char **argv)
{
	HARNESS_BEGIN(argc, argv);
	RUN(path_and_environment);
	RUN(icrc_matches_hardware);
	RUN(frames_of_each_event);
	RUN(send_inv_frames);
	RUN(paired_endpoints_write_once);
	RUN(snaplen_cuts_frames);
	RUN(snaplen_inside_crc);
	RUN(full_buffer_drops);
	HARNESS_END();
}
