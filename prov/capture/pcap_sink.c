/* SPDX-License-Identifier: BSD-2-Clause */
/* The capture sink: a pcap file, a bounded double buffer that producers copy frames into
 * under a short lock, and a writer thread that drains it. A full buffer drops the frame
 * (counted): capture never makes the data path wait for the disk. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "xdr_be.h"
#include "pcap_int.h"

#define PCAP_MAGIC_NS 0xa1b23c4du   /* classic pcap, nanosecond timestamps */
#define LINKTYPE_ETHERNET 1
#define REC_HDR 16
#define WRITER_TICK_MS 20

struct pair {
	struct pair *next;
	void *who;
	uint64_t key;
	int active;
};

struct rpcrdma_pcap {
	pthread_mutex_t lock;
	pthread_mutex_t order;      /* posts and completions of its endpoints (prov.c) */
	pthread_cond_t wake;
	pthread_cond_t drained;     /* the writer has nothing left and is not writing */
	pthread_t writer;
	int fd;
	char path[PATH_MAX];
	uint32_t snaplen;
	size_t cap;                 /* bytes per buffer */
	uint8_t *buf[2];
	size_t len;                 /* bytes in buf[active] */
	uint64_t nframes, ntrunc;   /* frames in buf[active], and how many were cut */
	int active;
	int closing, closed, writing, flushing;
	int refs;                   /* the opener and each attached endpoint */
	struct rpcrdma_pcap_stats st;
	struct pair *pairs;
};

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void file_header(uint8_t h[24], uint32_t snaplen)
{
	uint32_t v[6] = { PCAP_MAGIC_NS, 2 | 4u << 16, 0, 0, snaplen, LINKTYPE_ETHERNET };

	memcpy(h, v, sizeof(v));  /* host byte order, as pcap readers expect from the magic */
}

/* Take the filled buffer and write it outside the lock, so producers keep going. */
static void *writer_main(void *arg)
{
	struct rpcrdma_pcap *c = arg;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		uint8_t *out;
		size_t n;
		uint64_t frames, trunc;
		int bad;

		/* write when a quarter full, on a flush or close, or every WRITER_TICK_MS: a
		 * wake-up and a write per frame would cost more than the frame */
		int timed_out = 0;

		while (!c->closing && c->len < c->cap / 4 && !(c->len && (c->flushing || timed_out))) {
			struct timespec ts;

			if (!c->len)
				pthread_cond_broadcast(&c->drained);
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += WRITER_TICK_MS * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			timed_out = pthread_cond_timedwait(&c->wake, &c->lock, &ts) == ETIMEDOUT;
		}
		if (!c->len)
			break;   /* closing, and nothing left */
		out = c->buf[c->active];
		n = c->len;
		frames = c->nframes;
		trunc = c->ntrunc;
		c->active ^= 1;
		c->len = 0;
		c->nframes = c->ntrunc = 0;
		c->writing = 1;
		pthread_mutex_unlock(&c->lock);
		bad = write_all(c->fd, out, n);
		pthread_mutex_lock(&c->lock);
		c->writing = 0;
		if (bad) {
			c->st.write_errors += frames;
		} else {
			c->st.frames += frames;
			c->st.truncated += trunc;
			c->st.bytes += n - frames * REC_HDR;
		}
	}
	pthread_cond_broadcast(&c->drained);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static void expand_path(char *out, size_t outlen, const char *path)
{
	size_t o = 0;

	for (; *path && o + 1 < outlen; path++) {
		if (path[0] == '%' && path[1] == 'p') {
			o += (size_t)snprintf(out + o, outlen - o, "%ld", (long)getpid());
			path++;
			continue;
		}
		out[o++] = *path;
	}
	out[o < outlen ? o : outlen - 1] = '\0';
}

static void sink_free(struct rpcrdma_pcap *c)
{
	struct pair *p;

	while ((p = c->pairs)) {
		c->pairs = p->next;
		free(p);
	}
	free(c->buf[0]);
	free(c->buf[1]);
	pthread_cond_destroy(&c->wake);
	pthread_cond_destroy(&c->drained);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->order);
	free(c);
}

static int sink_alloc(const struct rpcrdma_pcap_opts *o, struct rpcrdma_pcap **out)
{
	struct rpcrdma_pcap *c = calloc(1, sizeof(*c));

	if (!c)
		return -RPCRDMA_ERR_NOMEM;
	c->snaplen = o && o->snaplen ? o->snaplen : RPCRDMA_PCAP_SNAPLEN_DEFAULT;
	if (c->snaplen < 128)
		c->snaplen = 128;
	/* two halves of the bound, each able to hold at least one whole frame */
	c->cap = (o && o->buffer_bytes ? o->buffer_bytes : RPCRDMA_PCAP_BUFFER_DEFAULT) / 2;
	if (c->cap < CAP_FRAME_MAX + REC_HDR)
		c->cap = CAP_FRAME_MAX + REC_HDR;
	c->buf[0] = malloc(c->cap);
	c->buf[1] = malloc(c->cap);
	c->fd = -1;
	c->refs = 1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->order, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->wake, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_cond_init(&c->drained, NULL);
	*out = c;
	if (!c->buf[0] || !c->buf[1]) {
		sink_free(c);
		return -RPCRDMA_ERR_NOMEM;
	}
	return 0;
}

int rpcrdma_pcap_open(const char *path, const struct rpcrdma_pcap_opts *opts,
		      struct rpcrdma_pcap **out)
{
	struct rpcrdma_pcap *c;
	uint8_t h[24];
	int rc;

	if (!path || !*path || !out)
		return -RPCRDMA_ERR_INVAL;
	rc = sink_alloc(opts, &c);
	if (rc)
		return rc;
	expand_path(c->path, sizeof(c->path), path);
	c->fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (c->fd < 0) {
		rc = -RPCRDMA_ERR_IO;
		goto out_free;
	}
	file_header(h, c->snaplen);
	if (write_all(c->fd, h, sizeof(h))) {
		rc = -RPCRDMA_ERR_IO;
		goto out_close;
	}
	if (pthread_create(&c->writer, NULL, writer_main, c)) {
		rc = -RPCRDMA_ERR_NOMEM;
		goto out_close;
	}
	rpcrdma__cap_mr_use(1);
	*out = c;
	return 0;
out_close:
	close(c->fd);
out_free:
	sink_free(c);
	return rc;
}

void rpcrdma__cap_ref(struct rpcrdma_pcap *c)
{
	pthread_mutex_lock(&c->lock);
	c->refs++;
	pthread_mutex_unlock(&c->lock);
}

void rpcrdma__cap_unref(struct rpcrdma_pcap *c)
{
	int last;

	pthread_mutex_lock(&c->lock);
	last = --c->refs == 0;
	pthread_mutex_unlock(&c->lock);
	if (last)
		sink_free(c);
}

void rpcrdma_pcap_close(struct rpcrdma_pcap *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->closing = 1;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->writer, NULL);
	rpcrdma__cap_mr_use(-1);
	pthread_mutex_lock(&c->lock);
	c->closed = 1;
	pthread_mutex_unlock(&c->lock);
	close(c->fd);
	rpcrdma__cap_unref(c);
}

void rpcrdma_pcap_flush(struct rpcrdma_pcap *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->flushing++;
	while ((c->len || c->writing) && !c->closed) {
		pthread_cond_signal(&c->wake);
		pthread_cond_wait(&c->drained, &c->lock);
	}
	c->flushing--;
	pthread_mutex_unlock(&c->lock);
}

void rpcrdma_pcap_stats(struct rpcrdma_pcap *c, struct rpcrdma_pcap_stats *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	*out = c->st;
	pthread_mutex_unlock(&c->lock);
}

uint32_t rpcrdma__cap_snaplen(const struct rpcrdma_pcap *c)
{
	return c->snaplen;
}

const char *rpcrdma_pcap_path(const struct rpcrdma_pcap *c)
{
	return c ? c->path : NULL;
}

static void record_header(uint8_t *h, uint32_t incl, uint32_t orig)
{
	struct timespec ts;
	uint32_t v[4];

	clock_gettime(CLOCK_REALTIME, &ts);
	v[0] = (uint32_t)ts.tv_sec;
	v[1] = (uint32_t)ts.tv_nsec;
	v[2] = incl;
	v[3] = orig;
	memcpy(h, v, sizeof(v));
}

void rpcrdma__cap_put(struct rpcrdma_pcap *c, const uint8_t *frame, size_t len)
{
	uint8_t h[REC_HDR];
	size_t incl = len < c->snaplen ? len : c->snaplen;
	uint8_t *dst;

	record_header(h, (uint32_t)incl, (uint32_t)len);
	pthread_mutex_lock(&c->lock);
	if (c->closing || c->closed) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (c->len + REC_HDR + incl > c->cap) {
		c->st.dropped++;
		c->st.dropped_bytes += incl;
		pthread_mutex_unlock(&c->lock);
		return;
	}
	dst = c->buf[c->active] + c->len;
	memcpy(dst, h, REC_HDR);
	memcpy(dst + REC_HDR, frame, incl);
	c->len += REC_HDR + incl;
	if (c->len >= c->cap / 4 && c->len - REC_HDR - incl < c->cap / 4)
		pthread_cond_signal(&c->wake);
	c->nframes++;
	c->ntrunc += incl < len;
	pthread_mutex_unlock(&c->lock);
}

void rpcrdma__cap_count_send(struct rpcrdma_pcap *c, const uint8_t *msg, size_t len)
{
	uint32_t type = len >= 16 ? rpcrdma__get32(msg + 12) : UINT32_MAX;

	pthread_mutex_lock(&c->lock);
	if (type < 5)
		c->st.sends[type]++;
	else
		c->st.sends_other++;
	pthread_mutex_unlock(&c->lock);
}

void rpcrdma__cap_count_rma(struct rpcrdma_pcap *c, uint32_t op, int peer)
{
	pthread_mutex_lock(&c->lock);
	if (op == RPCRDMA_OP_WRITE && peer)
		c->st.peer_writes++;
	else if (op == RPCRDMA_OP_WRITE)
		c->st.writes++;
	else if (peer)
		c->st.peer_reads++;
	else
		c->st.reads++;
	pthread_mutex_unlock(&c->lock);
}

/* ---- pairing of the two endpoints of one connection ---- */

static struct pair *find_pair(struct rpcrdma_pcap *c, void *who)
{
	struct pair *p;

	for (p = c->pairs; p; p = p->next)
		if (p->who == who)
			return p;
	return NULL;
}

static struct pair *find_other(struct rpcrdma_pcap *c, uint64_t key, int active)
{
	struct pair *p;

	for (p = c->pairs; p; p = p->next)
		if (p->key == key && p->active != active)
			return p;
	return NULL;
}

int rpcrdma__cap_register(struct rpcrdma_pcap *c, void *who, uint64_t key, int active)
{
	struct pair *p = calloc(1, sizeof(*p));
	int other;

	pthread_mutex_lock(&c->lock);
	other = find_other(c, key, active) != NULL;
	if (p) {
		p->who = who;
		p->key = key;
		p->active = active;
		p->next = c->pairs;
		c->pairs = p;
	}
	pthread_mutex_unlock(&c->lock);
	return other;
}

void rpcrdma__cap_unregister(struct rpcrdma_pcap *c, void *who)
{
	struct pair **pp, *p;

	pthread_mutex_lock(&c->lock);
	for (pp = &c->pairs; (p = *pp); pp = &p->next) {
		if (p->who == who) {
			*pp = p->next;
			free(p);
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
}

int rpcrdma__cap_paired(struct rpcrdma_pcap *c, void *who)
{
	struct pair *p;
	int paired = 0;

	pthread_mutex_lock(&c->lock);
	p = find_pair(c, who);
	if (p)
		paired = find_other(c, p->key, p->active) != NULL;
	pthread_mutex_unlock(&c->lock);
	return paired;
}

/* ---- the process-wide default ---- */

static pthread_mutex_t dflt_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rpcrdma_pcap *dflt;
static int dflt_env_tried;

static void close_env_default(void)
{
	struct rpcrdma_pcap *c = rpcrdma_pcap_set_default(NULL);
	struct rpcrdma_pcap_stats st;

	if (!c)
		return;
	rpcrdma_pcap_flush(c);
	rpcrdma_pcap_stats(c, &st);
	if (st.dropped || st.write_errors)
		fprintf(stderr, "rpcrdma: capture %s: %llu frames dropped (buffer full), %llu lost "
			"to write errors\n", c->path, (unsigned long long)st.dropped,
			(unsigned long long)st.write_errors);
	rpcrdma_pcap_close(c);
}

static size_t env_size(const char *name)
{
	const char *v = getenv(name);

	return v ? (size_t)strtoull(v, NULL, 0) : 0;
}

static void open_env_default(void)
{
	struct rpcrdma_pcap_opts o = { .snaplen = 0 };
	const char *path = getenv("RPCRDMA_PCAP");
	struct rpcrdma_pcap *c;

	if (!path || !*path)
		return;
	o.snaplen = (uint32_t)env_size("RPCRDMA_PCAP_SNAPLEN");
	o.buffer_bytes = env_size("RPCRDMA_PCAP_BUFFER");
	if (rpcrdma_pcap_open(path, &o, &c)) {
		fprintf(stderr, "rpcrdma: RPCRDMA_PCAP=%s: cannot open: %s\n", path, strerror(errno));
		return;
	}
	dflt = c;
	atexit(close_env_default);
}

struct rpcrdma_pcap *rpcrdma_pcap_set_default(struct rpcrdma_pcap *c)
{
	struct rpcrdma_pcap *old;

	pthread_mutex_lock(&dflt_lock);
	dflt_env_tried = 1;  /* an explicit choice overrides the environment */
	old = dflt;
	dflt = c;
	pthread_mutex_unlock(&dflt_lock);
	return old;
}

struct rpcrdma_pcap *rpcrdma_pcap_default(void)
{
	struct rpcrdma_pcap *c;

	pthread_mutex_lock(&dflt_lock);
	if (!dflt_env_tried) {
		dflt_env_tried = 1;
		open_env_default();
	}
	c = dflt;
	pthread_mutex_unlock(&dflt_lock);
	return c;
}

void rpcrdma__cap_order_lock(struct rpcrdma_pcap *c)
{
	pthread_mutex_lock(&c->order);
}

void rpcrdma__cap_order_unlock(struct rpcrdma_pcap *c)
{
	pthread_mutex_unlock(&c->order);
}
