/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared by `rpcrdma serve`, `ping` and `perf`: the built-in service's binding, its data
 * pattern, addresses. */
#ifndef RPCRDMA_TOOLS_PERF_COMMON_H
#define RPCRDMA_TOOLS_PERF_COMMON_H

#include <stdint.h>
#include <stdio.h>

#include "rpcrdma/rpc.h"
#include "rpcrdma/pcap.h"
#include "perfsvc.h"

#define PS_DEFAULT_PORT RPCRDMA_PORT

/* Register the binding that makes READ's result and WRITE's data DDP-eligible. */
void ps_binding_register(void);

/* The service's data: byte i of every READ result. */
static inline uint8_t ps_byte(uint32_t i)
{
	return (uint8_t)(i * 131u + (i >> 11));
}

uint32_t ps_checksum(const char *p, uint32_t n);

/* A server to connect to: "HOST", "HOST:PORT" or "[V6]:PORT" into host (cap bytes) and
 * *port (def if none; port 0 is refused: a client needs the server's port). Returns 1
 * when a port was given, 0 when not, -1 with a message naming cmd and what is wrong. */
int ps_parse_addr(const char *cmd, const char *s, char *host, size_t cap, uint16_t *port,
		  uint16_t def);
/* Where to listen: "HOST", "HOST:PORT", ":PORT", "PORT" (a bare number is a port),
 * "[V6]:PORT"; host "" is every address, port 0 any. *port is left alone when the text
 * has none. 0, or -1 with a message. */
int ps_parse_listen(const char *cmd, const char *s, char *host, size_t cap, uint16_t *port);

/* Serve the built-in program: over RDMA (provider, host, port; port 0: ephemeral) and,
 * when tcp_port >= 0, over ONC RPC/TCP too (0: ephemeral). RDMA requests are dispatched on
 * the progress thread when inline_dispatch (the service is thread-safe). Returns the
 * listener; the ports are written to *rdma_port and *tcp_out. */
/* Why the last ps_serve failed: the RDMA listener's reason, or the TCP port's with errno. */
const char *ps_serve_error(void);
SVCXPRT *ps_serve(const char *provider, const char *host, uint16_t port, int tcp_port,
		  int inline_dispatch, uint16_t *rdma_port, uint16_t *tcp_out, SVCXPRT **tcp_xprt);

/* --pcap FILE [--pcap-snaplen N]: capture every RDMA connection of this process
 * (docs/CAPTURE.md). Start returns 0, or -1 with a message; stop prints the capture's
 * figures to stderr and closes it (safe when none was started). */
int ps_pcap_start(const char *path, uint32_t snaplen);
void ps_pcap_report(FILE *f);
void ps_pcap_stop(void);
/* long options only: their values are no option letters (perf's -P is --parallel) */
enum { PS_OPT_PCAP = 0x100, PS_OPT_SNAPLEN };
#define PS_PCAP_OPTIONS { "pcap", required_argument, 0, PS_OPT_PCAP }, \
	{ "pcap-snaplen", required_argument, 0, PS_OPT_SNAPLEN }
#define PS_PCAP_USAGE \
	"  --pcap FILE          write this process's RDMA traffic to FILE as RoCEv2 frames\n" \
	"                       Wireshark reads (docs/CAPTURE.md); --pcap-snaplen N keeps\n" \
	"                       N bytes of each frame (default: whole frames)\n"

/* rpcrdma perf --svg (perf_svg.c): one row per figure; 0 where a transport has none. */
struct perf_svg_row {
	char label[64];
	const char *unit;
	double rdma, tirpc, raw;
};
int perf_svg_write(const char *path, const char *provider, const struct perf_svg_row *rows,
		   int n);

/* Many connections take a few descriptors each (socket, wait fds, eventfd): the soft
 * limit on open files is raised to the hard one. */
void ps_raise_fd_limit(void);

/* A client of the service: RDMA (provider) or, with provider NULL, ONC RPC/TCP. */
CLIENT *ps_client(const char *provider, const char *host, uint16_t port);
/* After ps_client() failed: why, and what to do, on stderr. */
void ps_explain_create_error(const char *cmd, const char *provider, const char *host,
			     uint16_t port, int json);

/* The backchannel test (serve --callback, ping --callback): backward echoes are inline,
 * so each carries at most this much. */
#define PS_CB_MAX 3072u
extern int ps_callbacks_enabled;
/* serve --no-drc: listeners without a duplicate request cache. */
extern int ps_drc_off;
/* --prereg: the server's READ data (64 MiB made at start) added as long-lived memory
 * (rpcrdma_svc_mem_add): no registration per reply */
extern int ps_prereg;
void perf_cb_prog_1(struct svc_req *rqstp, SVCXPRT *transp);

#endif
