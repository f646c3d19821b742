/* SPDX-License-Identifier: BSD-2-Clause */
/* rpcrdma_svc_run()'s worker threads. They serve every source of requests of the process
 * alike (each RDMA listener, each TCP listener of svc_rdma_tcp_create()): a source hands a
 * worker an SVCXPRT with a request ready, the worker runs libtirpc's dispatch on it
 * (svc_getreq_common(), so svc_register()'d programs are found as svc_run() finds them),
 * then gives it back. A source that gave work goes to the end of the list, so that a busy
 * one cannot keep the workers from the others. */
#include <pthread.h>
#include <time.h>

#include "rpc_int.h"
#include "svc_int.h"

#define WORKERS_MAX 64
#define WORKER_NAP_MS 10   /* a worker with nothing to do looks again this often */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static struct rpcrdma__svc_src *g_srcs;
static int g_exit;

void rpcrdma__svc_src_add(struct rpcrdma__svc_src *src)
{
	pthread_mutex_lock(&g_lock);
	src->next = g_srcs;
	g_srcs = src;
	pthread_mutex_unlock(&g_lock);
}

void rpcrdma__svc_src_remove(struct rpcrdma__svc_src *src)
{
	struct rpcrdma__svc_src **pp;

	pthread_mutex_lock(&g_lock);
	for (pp = &g_srcs; *pp; pp = &(*pp)->next)
		if (*pp == src) {
			*pp = src->next;
			break;
		}
	pthread_mutex_unlock(&g_lock);
}

void rpcrdma__svc_wake_workers(void)
{
	pthread_mutex_lock(&g_lock);
	pthread_cond_broadcast(&g_cv);
	pthread_mutex_unlock(&g_lock);
}

/* src, which just gave work, goes last (g_lock held). */
static void to_tail(struct rpcrdma__svc_src *src)
{
	struct rpcrdma__svc_src **pp;

	if (!src->next)
		return;
	for (pp = &g_srcs; *pp != src; pp = &(*pp)->next)
		;
	*pp = src->next;
	while (*pp)
		pp = &(*pp)->next;
	*pp = src;
	src->next = NULL;
}

/* Something to dispatch that no worker holds, held for this one; NULL if none. g_lock
 * held. */
static SVCXPRT *claim(struct rpcrdma__svc_src **from)
{
	struct rpcrdma__svc_src *src;
	SVCXPRT *x;

	for (src = g_srcs; src; src = src->next) {
		x = src->claim(src);
		if (x) {
			to_tail(src);
			*from = src;
			return x;
		}
	}
	return NULL;
}

static void *worker(void *arg)
{
	struct rpcrdma__svc_src *src = NULL;
	struct timespec ts;
	SVCXPRT *x;

	(void)arg;
	pthread_mutex_lock(&g_lock);
	while (!g_exit) {
		x = claim(&src);
		if (!x) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += WORKER_NAP_MS * 1000000L;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&g_cv, &g_lock, &ts);
			continue;
		}
		pthread_mutex_unlock(&g_lock);
		svc_getreq_common(x->xp_fd);
		src->release(src, x);
		pthread_mutex_lock(&g_lock);
	}
	pthread_mutex_unlock(&g_lock);
	return NULL;
}

int rpcrdma_svc_run(int nthreads)
{
	pthread_t th[WORKERS_MAX];
	int i, n = nthreads > WORKERS_MAX ? WORKERS_MAX : nthreads;

	pthread_mutex_lock(&g_lock);
	g_exit = 0;
	pthread_mutex_unlock(&g_lock);
	for (i = 1; i < n; i++)
		if (pthread_create(&th[i], NULL, worker, NULL))
			break;
	n = i;
	worker(NULL);
	for (i = 1; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}

void rpcrdma_svc_exit(void)
{
	pthread_mutex_lock(&g_lock);
	g_exit = 1;
	pthread_cond_broadcast(&g_cv);
	pthread_mutex_unlock(&g_lock);
}

/* ---- lanes: the RDMA listeners' connections as a source of the workers ---- */
/* ---- rpcrdma_svc_run ---- */

/* A lane of c that no worker holds, made if c has fewer than conn_parallel - 1; NULL if
 * none. Under the srv lock. */
static struct sconn *free_lane(struct srv *s, struct sconn *c)
{
	struct sconn *l, **grown;
	uint32_t i;

	for (i = 0; i < c->nlanes; i++)
		if (!c->lanes[i]->busy)
			return c->lanes[i];
	if (c->nlanes + 1 >= s->opts.conn_parallel)
		return NULL;
	grown = realloc(c->lanes, sizeof(*grown) * (c->nlanes + 1));
	if (!grown)
		return NULL;
	c->lanes = grown;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->xprt = c->xprt;   /* its operations, port and addresses, set when accepted */
	l->srv = s;
	l->ep = c->ep;
	l->eng = c->eng;
	l->prim = c;
	l->xprt.xp_p1 = l;
	l->xprt.xp_p3 = &l->ext;
	l->xprt.xp_fd = rpcrdma__svc_conn_fd(s);
	if (l->xprt.xp_fd < 0) {
		free(l);
		return NULL;
	}
	xprt_register(&l->xprt);
	c->lanes[c->nlanes++] = l;
	return l;
}

/* Something to dispatch that no worker holds, marked busy: a connection with requests
 * ready (or dead, to be destroyed once no lane of it is busy), or a lane of a connection
 * whose requests are already being dispatched (svc_work.c). */
SVCXPRT *rpcrdma__svc_claim(struct rpcrdma__svc_src *src)
{
	struct srv *s = (struct srv *)((char *)src - offsetof(struct srv, src));
	struct sconn *found = NULL, *c;

	pthread_mutex_lock(&s->lock);
	for (c = s->conns; c && !found; c = c->next) {
		if (c->destroyed)
			continue;
		if (!c->busy && (c->head || (c->dead && !rpcrdma__svc_lanes_busy(c))))
			found = c;
		else if (c->busy && c->head && !c->dead && !rpcrdma__svc_needs_prim(c->head->er))
			found = free_lane(s, c);
		if (found)
			found->busy = 1;
	}
	pthread_mutex_unlock(&s->lock);
	return found ? &found->xprt : NULL;
}

void rpcrdma__svc_release(struct rpcrdma__svc_src *src, SVCXPRT *x)
{
	struct sconn *c = rpcrdma__svc_conn_of(x);

	(void)src;
	pthread_mutex_lock(&c->srv->lock);
	c->busy = 0;
	pthread_mutex_unlock(&c->srv->lock);
}
