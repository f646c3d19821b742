/* SPDX-License-Identifier: BSD-2-Clause */
/* A pubsub subscriber: it serves PUBSUB_CB on its own connection
 * (clnt_rdma_set_callback), subscribes, publishes while notifications arrive, then
 * finishes and waits for its lease to be revoked. Every notification must arrive exactly
 * once, in order, byte for byte: seq 1, 2, 3 ... up to the count the server reports.
 * Usage: pubsub_client HOST PORT PROVIDER ROUNDS; exit 0 when all of it held. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rpcrdma/rpc.h>

#include "common.h"
#include "pubsub.h"
#include "pubsub_cb.h"

void pubsub_cb_1(struct svc_req *rqstp, SVCXPRT *transp);   /* rpcgen: pubsub_cb_svc.c */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static uint32_t my_id, got, bad, revoked;

/* Runs on the client's background thread, in arrival order. */
bool_t notify_1_svc(note *n, u_int *result, struct svc_req *rq)
{
	uint32_t i, ok = n->data.data_len == note_len(n->seq);

	(void)rq;
	pthread_mutex_lock(&lock);
	/* the first notification may come before SUBSCRIBE's reply has told us our id */
	while (!my_id)
		pthread_cond_wait(&cv, &lock);
	for (i = 0; ok && i < n->data.data_len; i++)
		ok = (uint8_t)n->data.data_val[i] == note_byte(my_id, n->seq, i);
	if (!ok || n->seq != got + 1) {
		fprintf(stderr, "subscriber %u: notification %u after %u%s\n", my_id, n->seq, got,
			ok ? "" : ", its bytes wrong");
		bad++;
	} else {
		got++;
	}
	pthread_mutex_unlock(&lock);
	*result = n->seq;
	return TRUE;
}

bool_t revoke_1_svc(u_int *lease, void *result, struct svc_req *rq)
{
	(void)result;
	(void)rq;
	pthread_mutex_lock(&lock);
	revoked = *lease == my_id ? 1 : 2;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&lock);
	return TRUE;
}

int pubsub_cb_1_freeresult(SVCXPRT *transp, xdrproc_t xres, caddr_t res)
{
	(void)transp;
	xdr_free(xres, res);
	return 1;
}

static int wait_revoked(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	pthread_mutex_lock(&lock);
	while (!revoked && pthread_cond_timedwait(&cv, &lock, &ts) == 0)
		;
	pthread_mutex_unlock(&lock);
	return revoked == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct rpcrdma_clnt_opts o = { 0 };
	u_int id = 0, pushed = 0, to = 0;
	publish_args pa = { 3 };
	int i, rounds, rc = 0;
	CLIENT *cl;

	if (argc != 5) {
		fprintf(stderr, "usage: pubsub_client HOST PORT PROVIDER ROUNDS\n");
		return 2;
	}
	o.port = (uint32_t)atoi(argv[2]);
	o.provider = argv[3];
	rounds = atoi(argv[4]);
	cl = clnt_rdma_create(argv[1], PUBSUB, PUBSUB_V1, &o);
	if (!cl) {
		fprintf(stderr, "pubsub_client: %s\n", rpcrdma_create_errtext());
		return 1;
	}
	/* served before the first call: the server may call back as soon as we subscribe */
	if (clnt_rdma_set_callback(cl, PUBSUB_CB, PUBSUB_CB_V1, pubsub_cb_1) ||
	    subscribe_1(NULL, &id, cl) != RPC_SUCCESS) {
		clnt_perror(cl, "pubsub_client: SUBSCRIBE");
		return 1;
	}
	pthread_mutex_lock(&lock);
	my_id = id;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&lock);
	for (i = 0; i < rounds; i++)
		if (publish_1(&pa, &to, cl) != RPC_SUCCESS) {
			clnt_perror(cl, "pubsub_client: PUBLISH");
			rc = 1;
		}
	if (finish_1(&id, &pushed, cl) != RPC_SUCCESS) {
		clnt_perror(cl, "pubsub_client: FINISH");
		rc = 1;
	}
	if (wait_revoked()) {
		fprintf(stderr, "subscriber %u: lease not revoked\n", id);
		rc = 1;
	}
	pthread_mutex_lock(&lock);
	if (bad || got != pushed || !pushed)
		rc = 1;
	printf("subscriber %u: %u notifications of %u, in order, %u wrong; lease %s\n", id, got,
	       pushed, bad, revoked == 1 ? "revoked" : "not revoked");
	pthread_mutex_unlock(&lock);
	auth_destroy(cl->cl_auth);
	clnt_destroy(cl);
	return rc;
}
