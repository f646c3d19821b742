/* SPDX-License-Identifier: BSD-2-Clause */
/* `rpcrdma info`: the RDMA providers usable here and what each supports. */
#include <string.h>

#include "cli.h"
#include "rpcrdma/prov.h"

#define MAX_PROVS 32

static const char *ep_type_name(uint32_t t)
{
	return t == RPCRDMA_EP_MSG ? "MSG" : t == RPCRDMA_EP_RDM_EMULATED ? "RDM (emulated conn)" : "mock";
}

/* Report what opening gives (the endpoint variant we would use, the wait fd), which
 * probing alone cannot tell. */
static void refine(struct rpcrdma_prov_caps *c, char *note, size_t len)
{
	struct rpcrdma_prov *p;
	int rc = rpcrdma_prov_open(c->name, &p, note, len);

	if (rc) {
		c->has_fd = 2;
		return;
	}
	*c = *rpcrdma_prov_caps(p);
	rpcrdma_prov_close(p);
	note[0] = '\0';
}

static void print_json(const struct rpcrdma_prov_caps *c, const char *note)
{
	printf("{\"provider\":\"%s\",\"fabric\":\"%s\",\"endpoint\":\"%s\",\"rma\":true,"
	       "\"key_size_bytes\":%u,\"provider_keys\":%s,\"virt_addr\":%s,\"write_send_ordered\":%s,"
	       "\"access_enforced\":%s,\"iov_limit\":%u,\"rma_iov_limit\":%u,\"tx_depth\":%u,"
	       "\"rx_depth\":%u,\"inject_size\":%zu,\"wait_fd\":%s,\"memory_windows\":%s,"
	       "\"usable\":%s}",
	       c->name, c->fabric, ep_type_name(c->ep_type), c->key_size,
	       c->prov_keys ? "true" : "false", c->virt_addr ? "true" : "false",
	       c->write_send_ordered ? "true" : "false", c->enforces_access ? "true" : "false",
	       c->iov_limit, c->rma_iov_limit, c->tx_depth, c->rx_depth, c->inject_size,
	       c->has_fd == 1 ? "true" : "false", c->mem_windows ? "true" : "false",
	       note[0] ? "false" : "true");
}

/* The provider's key size in bytes, as JSON's key_size_bytes says; RFC 5666 handles are
 * 32 bits whatever it is (the legend). */
static const char *key_text(const struct rpcrdma_prov_caps *c, char *buf, size_t len)
{
	if (!c->key_size)
		return "-";
	snprintf(buf, len, "%u B", c->key_size);
	return buf;
}

static void print_row(const struct rpcrdma_prov_caps *c, const char *note)
{
	char key[16];

	printf("%-8s %-20s %-5s %-9s %-7s %-9s %-8s %-6s %-5s %s\n", c->name, ep_type_name(c->ep_type),
	       key_text(c, key, sizeof(key)),
	       c->prov_keys ? "provider" : "ours", c->virt_addr ? "vaddr" : "offset",
	       c->write_send_ordered ? "yes" : "no (waits)", c->enforces_access ? "yes" : "NO",
	       c->has_fd == 1 ? "fd" : "poll", c->rma_iov_limit ? "yes" : "-",
	       note[0] ? note : "");
}

int cmd_info(int argc, char **argv)
{
	struct rpcrdma_prov_caps caps[MAX_PROVS];
	char notes[MAX_PROVS][160];
	int i, n, json = 0, verbs = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			puts("usage: rpcrdma info [--json]\nList the libfabric providers usable here "
			     "for RPC-over-RDMA and what each supports.");
			return EXIT_OK;
		} else {
			arg_unknown("info", argv[i]);
			cli_try_help("info");
			return EXIT_USAGE;
		}
	}
	n = rpcrdma_prov_probe(caps, MAX_PROVS);
	if (n < 0) {
		fprintf(stderr, "rpcrdma info: %s\n", rpcrdma_strerror(n));
		if (json)
			cli_json_error("info", rpcrdma_strerror(n));
		return EXIT_FAIL;
	}
	for (i = 0; i < n; i++) {
		refine(&caps[i], notes[i], sizeof(notes[i]));
		verbs |= !strcmp(caps[i].name, "verbs");
	}
	if (json) {
		/* one document, the list empty where nothing is usable */
		printf("{\"version\":\"%s\",\"providers\":[", rpcrdma_version());
		for (i = 0; i < n; i++) {
			printf(i ? ",\n" : "\n");
			print_json(&caps[i], notes[i]);
		}
		printf("]}\n");
		return EXIT_OK;
	}
	if (n == 0) {
		puts("no RDMA provider is usable here: libfabric offers none with reliable messaging "
		     "and RDMA (check FI_PROVIDER, and that libfabric's providers are installed)");
		return EXIT_OK;
	}
	printf("%-8s %-20s %-5s %-9s %-7s %-9s %-8s %-6s %-5s %s\n", "provider", "endpoint", "keys",
	       "chosen by", "address", "W->S ord", "access", "wait", "RMA", "note");
	for (i = 0; i < n; i++)
		print_row(&caps[i], notes[i]);
	puts("");
	puts("keys: bytes of the provider's memory keys (JSON: key_size_bytes); RFC 5666 carries\n"
	     "32-bit handles. chosen by 'ours' = random 32-bit keys we choose, never reused soon.");
	puts("W->S ord: an RDMA Write is placed before a later Send (RFC 5666 relies on it);");
	puts("  where not, the engine waits for the Write's completion before sending.");
	puts("access NO (shm): remote key, range and right are not checked (cross-memory attach):");
	puts("  use shm only between mutually trusting processes of one user on one host.");
	puts("sockets is deprecated in libfabric and slow: use tcp.");
	if (!verbs)
		puts("verbs: not available here (no RDMA device); it is selected by name where it is.");
	return EXIT_OK;
}
