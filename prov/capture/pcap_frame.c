/* SPDX-License-Identifier: BSD-2-Clause */
/* Synthetic RoCEv2 frames: Ethernet, IPv4/IPv6, UDP 4791, InfiniBand BTH and extended
 * headers, payload, pad and invariant CRC; and the CM MADs that open a connection. */
#include <string.h>
#include <zlib.h>

#include "xdr_be.h"
#include "pcap_int.h"

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static size_t ip_len(const struct cap_path *p)
{
	return p->v6 ? CAP_IP6_LEN : CAP_IP4_LEN;
}

static void eth_header(uint8_t *b, const struct cap_path *p)
{
	memcpy(b, p->dst_mac, 6);
	memcpy(b + 6, p->src_mac, 6);
	put16(b + 12, p->v6 ? 0x86dd : 0x0800);
}

static void ip_header(uint8_t *b, const struct cap_path *p)
{
	if (p->v6) {
		rpcrdma__put32(b, 0x60000000);
		b[6] = 17;   /* UDP */
		b[7] = 64;
		memcpy(b + 8, p->src_ip, 16);
		memcpy(b + 24, p->dst_ip, 16);
		return;
	}
	memset(b, 0, CAP_IP4_LEN);
	b[0] = 0x45;
	put16(b + 6, 0x4000);  /* don't fragment, as RoCEv2 sends */
	b[8] = 64;
	b[9] = 17;
	memcpy(b + 12, p->src_ip, 4);
	memcpy(b + 16, p->dst_ip, 4);
}

size_t rpcrdma__cap_headers(uint8_t *buf, const struct cap_path *p, uint8_t opcode,
			    uint32_t psn, const void *ext, size_t ext_len)
{
	uint8_t *udp = buf + CAP_ETH_LEN + ip_len(p), *bth = udp + CAP_UDP_LEN;

	eth_header(buf, p);
	ip_header(buf + CAP_ETH_LEN, p);
	put16(udp, p->sport);
	put16(udp + 2, ROCEV2_PORT);
	put16(udp + 6, 0);
	memset(bth, 0, CAP_BTH_LEN);
	bth[0] = opcode;
	put16(bth + 2, 0xffff);           /* default partition */
	put24(bth + 5, p->dst_qp);
	put24(bth + 9, psn & 0xffffff);
	if (ext_len)
		memcpy(bth + CAP_BTH_LEN, ext, ext_len);
	return (size_t)(bth - buf) + CAP_BTH_LEN + ext_len;
}

static uint32_t sum16(const uint8_t *b, size_t len, uint32_t s)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		s += (uint32_t)b[len - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* IPv6 requires a UDP checksum (RFC 8200 8.1); IPv4 lets it be zero, as RoCEv2 sends. */
static void udp6_checksum(uint8_t *ip, size_t udp_len)
{
	uint8_t *udp = ip + CAP_IP6_LEN;
	uint32_t s = sum16(ip + 8, 32, 0) + (uint32_t)udp_len + 17;
	uint16_t c;

	c = fold(sum16(udp, udp_len, s));
	put16(udp + 6, c ? c : 0xffff);
}

/* The invariant CRC (IBTA annex A17.3.3): CRC-32 over 8 bytes of ones standing for the
 * LRH, then IP, UDP and BTH with their variant fields set to ones, then the rest of the
 * packet; stored least significant byte first, as Ethernet's FCS. */
static uint32_t icrc(const uint8_t *ip, const struct cap_path *p, size_t len)
{
	static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t hdr[CAP_IP6_LEN + CAP_UDP_LEN + CAP_BTH_LEN];
	size_t hl = ip_len(p) + CAP_UDP_LEN + CAP_BTH_LEN;
	uLong crc = crc32(0L, ones, sizeof(ones));

	memcpy(hdr, ip, hl);
	if (p->v6) {
		hdr[0] |= 0x0f;           /* traffic class and flow label */
		memset(hdr + 1, 0xff, 3);
		hdr[7] = 0xff;            /* hop limit */
	} else {
		hdr[1] = 0xff;            /* type of service */
		hdr[8] = 0xff;            /* time to live */
		hdr[10] = hdr[11] = 0xff; /* header checksum */
	}
	memset(hdr + ip_len(p) + 6, 0xff, 2);      /* UDP checksum */
	hdr[ip_len(p) + CAP_UDP_LEN + 4] = 0xff;    /* BTH FECN, BECN, reserved */
	crc = crc32(crc, hdr, (uInt)hl);
	crc = crc32(crc, ip + hl, (uInt)(len - hl));
	return (uint32_t)crc;
}

size_t rpcrdma__cap_finish(uint8_t *buf, const struct cap_path *p, size_t hdr_len,
			   size_t paylen, int whole)
{
	uint8_t *ip = buf + CAP_ETH_LEN, *udp = ip + ip_len(p), *bth = udp + CAP_UDP_LEN;
	size_t pad = (4 - (paylen & 3)) & 3, end = hdr_len + paylen + pad;
	size_t udp_len = end + CAP_ICRC_LEN - (size_t)(udp - buf);
	uint32_t crc;

	bth[1] = (uint8_t)(pad << 4);
	put16(udp + 4, (uint32_t)udp_len);
	if (p->v6) {
		put16(ip + 4, (uint32_t)udp_len);
	} else {
		put16(ip + 2, (uint32_t)(udp_len + CAP_IP4_LEN));
		put16(ip + 10, 0);
		put16(ip + 10, fold(sum16(ip, CAP_IP4_LEN, 0)));
	}
	if (!whole) {
		/* cut at the snap length: what needs the whole payload is not in the file */
		if (p->v6)
			put16(udp + 6, 0xffff);
		return end + CAP_ICRC_LEN;
	}
	memset(buf + hdr_len + paylen, 0, pad);
	crc = icrc(ip, p, end - CAP_ETH_LEN);
	buf[end] = (uint8_t)crc;
	buf[end + 1] = (uint8_t)(crc >> 8);
	buf[end + 2] = (uint8_t)(crc >> 16);
	buf[end + 3] = (uint8_t)(crc >> 24);
	if (p->v6)
		udp6_checksum(ip, udp_len);
	return end + CAP_ICRC_LEN;
}

void rpcrdma__cap_reth(uint8_t out[CAP_RETH_LEN], uint64_t va, uint32_t rkey, uint32_t len)
{
	rpcrdma__put64(out, va);
	rpcrdma__put32(out + 8, rkey);
	rpcrdma__put32(out + 12, len);
}

void rpcrdma__cap_aeth(uint8_t out[CAP_AETH_LEN], uint32_t msn)
{
	out[0] = 0x1f;  /* ACK, no end-to-end credit count */
	put24(out + 1, msn);
}

void rpcrdma__cap_deth(uint8_t out[CAP_DETH_LEN], uint32_t qkey, uint32_t src_qp)
{
	rpcrdma__put32(out, qkey);
	out[4] = 0;
	put24(out + 5, src_qp);
}

/* ---- CM ---- */

enum { CM_CLASS = 0x07, CM_VERSION = 2, CM_SEND = 0x03 };
enum { CM_REQ = 0x0010, CM_REP = 0x0013, CM_RTU = 0x0014 };
#define MAD_HDR 24
#define IBMTU_4096 5

static uint8_t *mad_header(uint8_t *mad, uint64_t tid, uint16_t attr)
{
	memset(mad, 0, CAP_MAD_LEN);
	mad[0] = 1;             /* base version */
	mad[1] = CM_CLASS;
	mad[2] = CM_VERSION;
	mad[3] = CM_SEND;
	rpcrdma__put64(mad + 8, tid);
	put16(mad + 16, attr);
	return mad + MAD_HDR;
}

/* RoCE GIDs are IPv6 addresses; IPv4 ones are IPv4-mapped. */
static void gid(uint8_t out[16], int v6, const uint8_t *ip)
{
	if (v6) {
		memcpy(out, ip, 16);
		return;
	}
	memset(out, 0, 10);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, ip, 4);
}

/* The RDMA IP CM service id (annex A11.2): prefix, protocol TCP, port */
static uint64_t ipcm_sid(uint16_t port)
{
	return 0x0000000001000000ull | 0x060000ull | port;
}

void rpcrdma__cap_cm_req(uint8_t mad[CAP_MAD_LEN], const struct cap_cm *cm)
{
	uint8_t *d = mad_header(mad, cm->tid, CM_REQ), *pd = d + 140;

	rpcrdma__put32(d, cm->comm_id[0]);
	rpcrdma__put64(d + 8, ipcm_sid(cm->port[1]));
	put24(d + 32, cm->qpn[0]);
	d[35] = 1;                            /* responder resources */
	d[39] = 1;                            /* initiator depth */
	d[43] = 0x1f << 3 | 0 << 1;           /* remote CM timeout, transport RC */
	put24(d + 44, cm->psn[0]);
	d[47] = 0x1f << 3 | 7;                /* local CM timeout, retry count */
	put16(d + 48, 0xffff);
	d[50] = IBMTU_4096 << 4 | 7;          /* path MTU, RNR retry count */
	d[51] = 15 << 4;                      /* max CM retries */
	gid(d + 56, cm->v6, cm->ip[0]);
	gid(d + 72, cm->v6, cm->ip[1]);
	d[93] = 64;                           /* hop limit */
	d[95] = 14 << 3;                      /* local ACK timeout */
	/* IP CM private data header (annex A11.6): version 0, IP version, source port,
	 * source and destination addresses, then the consumer's 56 bytes */
	pd[1] = (uint8_t)((cm->v6 ? 6 : 4) << 4);
	put16(pd + 2, cm->port[0]);
	if (cm->v6) {
		memcpy(pd + 4, cm->ip[0], 16);
		memcpy(pd + 20, cm->ip[1], 16);
	} else {
		memcpy(pd + 16, cm->ip[0], 4);
		memcpy(pd + 32, cm->ip[1], 4);
	}
	memcpy(pd + 36, cm->pdata[0], cm->pdata_len[0] > 56 ? 56 : cm->pdata_len[0]);
}

void rpcrdma__cap_cm_rep(uint8_t mad[CAP_MAD_LEN], const struct cap_cm *cm)
{
	uint8_t *d = mad_header(mad, cm->tid, CM_REP);

	rpcrdma__put32(d, cm->comm_id[1]);
	rpcrdma__put32(d + 4, cm->comm_id[0]);
	put24(d + 12, cm->qpn[1]);
	put24(d + 20, cm->psn[1]);
	d[24] = 1;
	d[25] = 1;
	d[27] = 7 << 5;                       /* RNR retry count */
	memcpy(d + 36, cm->pdata[1], cm->pdata_len[1] > 196 ? 196 : cm->pdata_len[1]);
}

void rpcrdma__cap_cm_rtu(uint8_t mad[CAP_MAD_LEN], const struct cap_cm *cm)
{
	uint8_t *d = mad_header(mad, cm->tid, CM_RTU);

	rpcrdma__put32(d, cm->comm_id[0]);
	rpcrdma__put32(d + 4, cm->comm_id[1]);
}
