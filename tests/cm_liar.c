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
static int next_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int type;

	if (poll(&p, 1, ms) <= 0 || rdma_get_cm_event(ch, &ev))
		return -1;
	type = (int)ev->event;
	rdma_ack_cm_event(ev);
	return type;
}

/* One request on an id and a channel of its own (events of several ids on one channel
 * would interleave): resolved, then sent with a made-up QP number, never to be
 * confirmed. 0 when sent. */
struct req {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	int answered;
};

static int request(struct req *r, struct addrinfo *ai)
{
	struct rdma_conn_param cp;

	r->ch = rdma_create_event_channel();
	if (!r->ch || rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP)) {
		r->id = NULL;
		return -1;
	}
	if (rdma_resolve_addr(r->id, NULL, ai->ai_addr, 2000) ||
	    next_event(r->ch, 3000) != RDMA_CM_EVENT_ADDR_RESOLVED ||
	    rdma_resolve_route(r->id, 2000) ||
	    next_event(r->ch, 3000) != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return -1;
	memset(&cp, 0, sizeof(cp));
	cp.qp_num = 0x1000u + (uint32_t)(rand() & 0xfff);
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	return rdma_connect(r->id, &cp) ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct req *rq;
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
	rq = calloc((size_t)n, sizeof(*rq));
	if (!rq)
		return 1;
	srand((unsigned)getpid());
	for (i = 0; i < n; i++)
		sent += !request(&rq[i], ai);
	end = time(NULL) + secs;
	while (time(NULL) < end) {
		for (i = 0; i < n; i++) {
			if (!rq[i].ch || !rq[i].id)
				continue;
			type = next_event(rq[i].ch, 0);
			if (type == RDMA_CM_EVENT_CONNECT_RESPONSE && !rq[i].answered) {
				rq[i].answered = 1;   /* the server's REP: no RTU goes back */
				answered++;
			} else if (type >= 0) {
				other++;
			}
		}
		poll(NULL, 0, 50);
	}
	printf("cm_liar: %d of %d requests sent, %d answered and never confirmed, %d other "
	       "events, held %d s\n", sent, n, answered, other, secs);
	fflush(stdout);
	for (i = 0; i < n; i++) {
		if (rq[i].id)
			rdma_destroy_id(rq[i].id);
		if (rq[i].ch)
			rdma_destroy_event_channel(rq[i].ch);
	}
	freeaddrinfo(ai);
	free(rq);
	return answered ? 0 : 1;
}
