/* SPDX-License-Identifier: BSD-2-Clause */
/* Connection requests that never complete the RDMA CM handshake: N requests sent at once
 * (a flood), each answered by the server (REP) and never confirmed (no RTU: the id has
 * no QP of its own, and rdma_establish() is never called), held S seconds. The server
 * must go on serving everyone else meanwhile and drop them by itself (tests/test_liars.sh
 * over verbs). librdmacm directly, not the provider: the provider always completes.
 * Usage: cm_liar HOST PORT N S. Exit 0 when at least one request was answered. */
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

/* The next event on ch within ms, acked; its type, or -1. */
static int next_event(struct rdma_event_channel *ch, int ms, struct rdma_cm_id **id)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int type;

	if (poll(&p, 1, ms) <= 0 || rdma_get_cm_event(ch, &ev))
		return -1;
	type = (int)ev->event;
	*id = ev->id;
	rdma_ack_cm_event(ev);
	return type;
}

/* Resolve, then send the request with a made-up QP number: never to be confirmed. */
static int request(struct rdma_event_channel *ch, struct rdma_cm_id *id, struct addrinfo *ai)
{
	struct rdma_conn_param cp;
	struct rdma_cm_id *got;

	if (rdma_resolve_addr(id, NULL, ai->ai_addr, 2000) ||
	    next_event(ch, 3000, &got) != RDMA_CM_EVENT_ADDR_RESOLVED ||
	    rdma_resolve_route(id, 2000) ||
	    next_event(ch, 3000, &got) != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return -1;
	memset(&cp, 0, sizeof(cp));
	cp.qp_num = 0x1000u + (uint32_t)(rand() & 0xfff);
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	return rdma_connect(id, &cp) ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct rdma_event_channel *ch;
	struct rdma_cm_id **ids, *got;
	int n, secs, i, sent = 0, answered = 0, other = 0, type;
	time_t end;

	if (argc < 5) {
		fprintf(stderr, "usage: cm_liar HOST PORT N SECONDS\n");
		return 2;
	}
	n = atoi(argv[3]);
	secs = atoi(argv[4]);
	if (n <= 0 || getaddrinfo(argv[1], argv[2], &hints, &ai))
		return 2;
	ch = rdma_create_event_channel();
	ids = calloc((size_t)n, sizeof(*ids));
	if (!ch || !ids)
		return 1;
	srand((unsigned)getpid());
	for (i = 0; i < n; i++)
		if (!rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP))
			sent += !request(ch, ids[i], ai);
	end = time(NULL) + secs;
	while (time(NULL) < end)
		if ((type = next_event(ch, 200, &got)) == RDMA_CM_EVENT_CONNECT_RESPONSE)
			answered++;   /* the server's REP: no RTU goes back */
		else if (type >= 0)
			other++;
	printf("cm_liar: %d of %d requests sent, %d answered and never confirmed, %d other "
	       "events, held %d s\n", sent, n, answered, other, secs);
	for (i = 0; i < n; i++)
		if (ids[i])
			rdma_destroy_id(ids[i]);
	rdma_destroy_event_channel(ch);
	freeaddrinfo(ai);
	free(ids);
	return answered ? 0 : 1;
}
