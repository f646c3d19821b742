/* SPDX-License-Identifier: BSD-2-Clause */
/* `rpcrdma decode --pcap FILE`: our own decoding of every Send in a RoCEv2 capture (ours,
 * or one taken from a real fabric), to set beside Wireshark's. Reads classic pcap
 * (microsecond or nanosecond, either byte order) of Ethernet frames; Sends split into
 * FIRST / MIDDLE / LAST are put back together per destination QP. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define FRAME_CAP 65536
#define MSG_CAP (16u << 20)
#define FLOWS 256
#define ROCEV2_PORT 4791

struct pcap_in {
	FILE *f;
	int swap;
	uint64_t frame;
};

struct frame {
	uint8_t data[FRAME_CAP];
	uint32_t incl, orig;
};

/* Where one frame's Send payload is, and whom it is for. */
struct send_view {
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	uint8_t dst_key[16];
	uint32_t dst_qp, psn;
	uint8_t opcode;
	const uint8_t *payload;
	size_t len;
	int truncated;
};

/* A Send being put back together. */
struct flow {
	uint8_t dst_key[16];
	uint32_t dst_qp;
	uint8_t *buf;
	size_t len;
	int used, truncated;
};

static uint32_t rd32(const uint8_t *p, int swap)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

/* 0; -1: the file cannot be read (a failure); -2: it is no pcap file (invalid input). */
static int pcap_open_in(const char *path, struct pcap_in *in)
{
	uint8_t h[24];
	uint32_t magic;

	in->f = fopen(path, "rb");
	if (!in->f) {
		fprintf(stderr, "rpcrdma decode: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fread(h, 1, sizeof(h), in->f) != sizeof(h))
		goto bad;
	memcpy(&magic, h, 4);
	in->swap = magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u;
	magic = rd32(h, in->swap);
	if ((magic != 0xa1b2c3d4u && magic != 0xa1b23c4du) || rd32(h + 20, in->swap) != 1) {
		fprintf(stderr, "rpcrdma decode: %s: not a classic pcap file of Ethernet frames\n",
			path);
		goto out_close;
	}
	in->frame = 0;
	return 0;
bad:
	fprintf(stderr, "rpcrdma decode: %s: too short for a pcap file\n", path);
out_close:
	fclose(in->f);
	return -2;
}

/* 1: a frame; 0: end of file; -1: a damaged file */
static int pcap_next(struct pcap_in *in, struct frame *fr)
{
	uint8_t h[16];
	size_t n = fread(h, 1, sizeof(h), in->f);

	if (n == 0)
		return 0;
	if (n != sizeof(h))
		return -1;
	fr->incl = rd32(h + 8, in->swap);
	fr->orig = rd32(h + 12, in->swap);
	if (fr->incl > FRAME_CAP) {
		fprintf(stderr, "rpcrdma decode: frame %" PRIu64 ": %u bytes, more than the %u this "
			"reader takes\n",
			in->frame + 1, fr->incl, FRAME_CAP);
		return -1;
	}
	if (fread(fr->data, 1, fr->incl, in->f) != fr->incl)
		return -1;
	in->frame++;
	return 1;
}

static size_t send_ext_len(uint8_t op)
{
	switch (op) {
	case 0x00: case 0x01: case 0x02: case 0x04:
		return 0;
	case 0x03: case 0x05:   /* with immediate data */
	case 0x16: case 0x17:   /* with invalidate */
		return 4;
	default:
		return SIZE_MAX;    /* not a Send */
	}
}

static int ip_view(const uint8_t *ip, size_t len, struct send_view *v, size_t *hl)
{
	if (len >= 20 && ip[0] >> 4 == 4 && ip[9] == 17) {
		*hl = (size_t)(ip[0] & 15) * 4;
		inet_ntop(AF_INET, ip + 12, v->src, sizeof(v->src));
		inet_ntop(AF_INET, ip + 16, v->dst, sizeof(v->dst));
		memset(v->dst_key, 0, 16);
		memcpy(v->dst_key, ip + 16, 4);
		return *hl >= 20 && *hl <= len ? 0 : -1;
	}
	if (len >= 40 && ip[0] >> 4 == 6 && ip[6] == 17) {
		*hl = 40;
		inet_ntop(AF_INET6, ip + 8, v->src, sizeof(v->src));
		inet_ntop(AF_INET6, ip + 24, v->dst, sizeof(v->dst));
		memcpy(v->dst_key, ip + 24, 16);
		return 0;
	}
	return -1;
}

/* 0 if the frame is a RoCEv2 RC Send, with v filled in */
static int send_view(const struct frame *fr, struct send_view *v)
{
	const uint8_t *p = fr->data, *end = fr->data + fr->incl, *bth;
	size_t hl, ext, pad, tail;
	uint16_t type;

	if (fr->incl < 14)
		return -1;
	type = (uint16_t)(p[12] << 8 | p[13]);
	p += 14;
	if (type == 0x8100 && end - p >= 4) {   /* one VLAN tag */
		type = (uint16_t)(p[2] << 8 | p[3]);
		p += 4;
	}
	if ((type != 0x0800 && type != 0x86dd) || ip_view(p, (size_t)(end - p), v, &hl))
		return -1;
	p += hl;
	if (end - p < 8 + 12 || (p[2] << 8 | p[3]) != ROCEV2_PORT)
		return -1;
	bth = p + 8;
	ext = send_ext_len(bth[0]);
	if (ext == SIZE_MAX || end - bth < (ptrdiff_t)(12 + ext))
		return -1;
	v->opcode = bth[0];
	v->dst_qp = (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7];
	v->psn = (uint32_t)bth[9] << 16 | (uint32_t)bth[10] << 8 | bth[11];
	v->payload = bth + 12 + ext;
	pad = (bth[1] >> 4) & 3;
	v->truncated = fr->incl < fr->orig;
	/* what the frame carries after the payload: pad and ICRC, unless cut off */
	tail = v->truncated ? 0 : pad + 4;
	if ((size_t)(end - v->payload) < tail)
		return -1;
	v->len = (size_t)(end - v->payload) - tail;
	return 0;
}

static struct flow *flow_of(struct flow *fl, const struct send_view *v)
{
	int i, fresh = -1;

	for (i = 0; i < FLOWS; i++) {
		if (fl[i].used && fl[i].dst_qp == v->dst_qp && !memcmp(fl[i].dst_key, v->dst_key, 16))
			return &fl[i];
		if (!fl[i].used && fresh < 0)
			fresh = i;
	}
	if (fresh < 0)
		return NULL;
	fl[fresh].used = 1;
	fl[fresh].dst_qp = v->dst_qp;
	memcpy(fl[fresh].dst_key, v->dst_key, 16);
	fl[fresh].len = 0;
	fl[fresh].truncated = 0;
	return &fl[fresh];
}

static int flow_append(struct flow *f, const struct send_view *v)
{
	if (!f->buf && !(f->buf = malloc(MSG_CAP)))
		return -1;
	if (f->len + v->len > MSG_CAP)
		return -1;
	memcpy(f->buf + f->len, v->payload, v->len);
	f->len += v->len;
	f->truncated |= v->truncated;
	return 0;
}

struct out_opts {
	int json, fields, body;
};

/* The columns of `tshark -T fields -e frame.number -e rpcordma.xid -e rpcordma.msg_type
 * -e rpcordma.flow_control -e rpcordma.reads_count -e rpcordma.writes_count
 * -e rpcordma.reply_count -e rpcordma.errcode -e rpcordma.vers_low -e rpcordma.vers_high`,
 * so the two can be compared with diff (docs/CAPTURE.md). */
static void print_fields(uint64_t frame, const struct rpcrdma_msg *m)
{
	printf("%" PRIu64 "\t0x%08" PRIx32 "\t%" PRIu32 "\t%" PRIu32, frame, m->xid, m->proc,
	       m->credits);
	if (m->proc <= RPCRDMA_MSGP)
		printf("\t%" PRIu32 "\t%" PRIu32 "\t%u", m->nreads, m->nwrites, m->has_reply ? 1 : 0);
	else
		printf("\t\t\t");
	if (m->proc == RPCRDMA_ERROR) {
		printf("\t%" PRIu32, m->err);
		if (m->err == RPCRDMA_WIRE_ERR_VERS)
			printf("\t%" PRIu32 "\t%" PRIu32, m->vers_low, m->vers_high);
		else
			printf("\t\t");
	} else {
		printf("\t\t\t");
	}
	putchar('\n');
}

static void print_head(uint64_t frame, const struct send_view *v, size_t len,
		       const struct out_opts *o)
{
	if (o->json)
		printf("{\"frame\":%" PRIu64 ",\"src\":\"%s\",\"dst\":\"%s\",\"dst_qp\":\"0x%06" PRIx32
		       "\",\"psn\":%" PRIu32 ",\"len\":%zu,", frame, v->src, v->dst, v->dst_qp, v->psn,
		       len);
	else
		printf("frame %" PRIu64 ": %s -> %s QP 0x%06" PRIx32 " PSN %" PRIu32 ", %zu bytes\n",
		       frame, v->src, v->dst, v->dst_qp, v->psn, len);
}

/* Returns 1 if the message is invalid or could not be decoded whole. */
static int print_send(uint64_t frame, const struct send_view *v, const uint8_t *msg, size_t len,
		      int truncated, const struct out_opts *o)
{
	static struct rpcrdma_msg_storage st;
	struct rpcrdma_decode_status ds;
	struct rpcrdma_msg m;
	int rc;

	rpcrdma_msg_bind(&m, &st);
	rc = rpcrdma_decode(msg, len, RPCRDMA_DIR_ANY, NULL, &m, &ds);
	/* a Send cut at the snap length may not decode: that is the file, not the Send */
	if (o->fields) {
		if (!rc)
			print_fields(frame, &m);
		else
			printf("%" PRIu64 "\tinvalid\n", frame);
		return rc != 0 && !truncated;
	}
	print_head(frame, v, len, o);
	if (truncated && o->json)
		printf("\"truncated\":true,");
	else if (truncated)
		printf("  (cut at the capture's snap length: what follows may be incomplete)\n");
	if (!rc && o->json) {
		msg_json_fields(stdout, &m, o->body);
		puts("}");
	} else if (!rc) {
		msg_text_print(stdout, &m);
	} else if (o->json) {
		msg_json_invalid_fields(stdout, &ds);
		puts("}");
	} else {
		msg_text_invalid(stdout, &ds);
	}
	return rc != 0 && !truncated;
}

/* One frame: a whole Send is printed; pieces are kept until the LAST. */
static int handle_send(struct flow *fl, uint64_t frame, const struct send_view *v,
		       const struct out_opts *o)
{
	struct flow *f;

	if (v->opcode == 0x04 || v->opcode == 0x05 || v->opcode == 0x17)
		return print_send(frame, v, v->payload, v->len, v->truncated, o);
	f = flow_of(fl, v);
	if (!f)
		return 1;
	if (v->opcode == 0x00) {   /* FIRST: a new message */
		f->len = 0;
		f->truncated = 0;
	}
	if (flow_append(f, v))
		return 1;
	if (v->opcode == 0x00 || v->opcode == 0x01)
		return 0;
	f->used = 0;
	return print_send(frame, v, f->buf, f->len, f->truncated, o);
}

int cmd_decode_pcap(const char *path, int json, int fields, int body)
{
	struct out_opts o = { json, fields, body };
	struct flow *fl = calloc(FLOWS, sizeof(*fl));
	struct frame *fr = malloc(sizeof(*fr));
	struct pcap_in in;
	struct send_view v;
	int rc = -1, invalid = 0, i;

	if (!fl || !fr)
		goto out_free;
	rc = pcap_open_in(path, &in);
	if (rc)
		goto out_free;
	while ((rc = pcap_next(&in, fr)) == 1)
		if (send_view(fr, &v) == 0)
			invalid += handle_send(fl, in.frame, &v, &o);
	if (rc < 0) {
		fprintf(stderr, "rpcrdma decode: %s: damaged after frame %" PRIu64 "\n", path,
			in.frame);
		rc = -2;   /* what the file holds is wrong: invalid input, as a bad message */
	}
	fclose(in.f);
out_free:
	for (i = 0; fl && i < FLOWS; i++)
		free(fl[i].buf);
	free(fl);
	free(fr);
	return rc == -1 ? EXIT_FAIL : rc < 0 || invalid ? EXIT_USAGE : EXIT_OK;
}
