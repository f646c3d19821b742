/* SPDX-License-Identifier: BSD-2-Clause */
/* The pubsub server (pubsub.x): PUBLISH queues notifications for every subscriber; one
 * thread per subscriber pushes them in order with NOTIFY calls back over the
 * subscriber's own connection (svc_rdma_bc_create), and REVOKEs its lease once the
 * subscriber said FINISH. Requests are dispatched by worker threads (rpcrdma_svc_run),
 * so that a subscriber's FINISH can wait while the others go on.
 * Usage: pubsub_server [PROVIDER]; prints "listening PORT". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/rpc.h>

#include "common.h"
#include "pubsub.h"
#include "pubsub_cb.h"

#define MAX_SUBS 256

void pubsub_1(struct svc_req *rqstp, SVCXPRT *transp);   /* rpcgen: pubsub_svc.c */

struct sub {
	uint32_t id;
	CLIENT *cb;                 /* calls back over the subscriber's connection */
	uint32_t queued, sent;      /* notifications asked for / pushed and answered */
	int finishing, failed, done;
	pthread_t thread;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct sub subs[MAX_SUBS];
static uint32_t nsubs;

/* One NOTIFY, verified: the subscriber answers with the seq it took. */
static int push(struct sub *s, uint32_t seq)
{
	uint8_t data[NOTE_MAX];
	note n = { seq, { note_len(seq), (char *)data } };
	u_int took = 0;
	uint32_t i;

	for (i = 0; i < n.data.data_len; i++)
		data[i] = note_byte(s->id, seq, i);
	if (notify_1(&n, &took, s->cb) != RPC_SUCCESS) {
		clnt_perror(s->cb, "pubsub_server: NOTIFY");
		return -1;
	}
	return took == seq ? 0 : -1;
}

static void *pusher(void *arg)
{
	struct sub *s = arg;
	u_int id = s->id;
	int rc;

	pthread_mutex_lock(&lock);
	for (;;) {
		while (s->sent == s->queued && !s->finishing && !s->failed)
			pthread_cond_wait(&cv, &lock);
		if (s->failed || (s->finishing && s->sent == s->queued))
			break;
		pthread_mutex_unlock(&lock);
		rc = push(s, s->sent + 1);   /* only this thread moves sent */
		pthread_mutex_lock(&lock);
		if (rc)
			s->failed = 1;
		else
			s->sent++;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&lock);
	if (!s->failed && revoke_1(&id, NULL, s->cb) != RPC_SUCCESS)
		clnt_perror(s->cb, "pubsub_server: REVOKE");
	auth_destroy(s->cb->cl_auth);
	clnt_destroy(s->cb);
	pthread_mutex_lock(&lock);
	s->done = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&lock);
	return NULL;
}

bool_t subscribe_1_svc(void *argp, u_int *result, struct svc_req *rq)
{
	struct sub *s;

	(void)argp;
	pthread_mutex_lock(&lock);
	if (nsubs == MAX_SUBS) {
		pthread_mutex_unlock(&lock);
		return FALSE;
	}
	s = &subs[nsubs];
	memset(s, 0, sizeof(*s));
	s->id = nsubs + 1;
	s->cb = svc_rdma_bc_create(rq->rq_xprt, PUBSUB_CB, PUBSUB_CB_V1);
	if (s->cb && pthread_create(&s->thread, NULL, pusher, s)) {
		auth_destroy(s->cb->cl_auth);
		clnt_destroy(s->cb);
		s->cb = NULL;
	}
	if (!s->cb) {
		pthread_mutex_unlock(&lock);
		return FALSE;
	}
	pthread_detach(s->thread);
	nsubs++;
	*result = s->id;
	pthread_mutex_unlock(&lock);
	return TRUE;
}

bool_t publish_1_svc(publish_args *a, u_int *result, struct svc_req *rq)
{
	uint32_t i;

	(void)rq;
	*result = 0;
	pthread_mutex_lock(&lock);
	for (i = 0; i < nsubs; i++)
		if (!subs[i].finishing && !subs[i].failed) {
			subs[i].queued += a->count;
			(*result)++;
		}
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&lock);
	return TRUE;
}

bool_t finish_1_svc(u_int *id, u_int *result, struct svc_req *rq)
{
	struct sub *s;

	(void)rq;
	pthread_mutex_lock(&lock);
	if (*id < 1 || *id > nsubs) {
		pthread_mutex_unlock(&lock);
		return FALSE;
	}
	s = &subs[*id - 1];
	s->finishing = 1;
	pthread_cond_broadcast(&cv);
	while (s->sent != s->queued && !s->failed)
		pthread_cond_wait(&cv, &lock);
	*result = s->failed ? 0 : s->sent;
	pthread_mutex_unlock(&lock);
	return !s->failed;
}

int pubsub_1_freeresult(SVCXPRT *transp, xdrproc_t xres, caddr_t res)
{
	(void)transp;
	xdr_free(xres, res);
	return 1;
}

int main(int argc, char **argv)
{
	struct rpcrdma_svc_opts o = { .port = RPCRDMA_PORT_ANY,
				      .provider = argc > 1 ? argv[1] : NULL };
	SVCXPRT *transp = svc_rdma_create(&o);

	if (!transp || !svc_register(transp, PUBSUB, PUBSUB_V1, pubsub_1, 0)) {
		fprintf(stderr, "pubsub_server: cannot serve: %s\n", rpcrdma_create_errtext());
		return 1;
	}
	printf("listening %u\n", transp->xp_port);
	fflush(stdout);
	rpcrdma_svc_run(8);
	return 1;
}
