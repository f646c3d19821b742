/* SPDX-License-Identifier: BSD-2-Clause */
/* The library's log: silent unless asked (RPCRDMA_LOG or rpcrdma_log_set_level), one line
 * per event on stderr or to the program's own function. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/prov.h"

static int level = -1;   /* -1: not read from the environment yet */
static rpcrdma_log_fn log_fn;
static void *log_ctx;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static const char *const names[] = { "off", "error", "warn", "info", "debug" };

/* "off", "error", "warn", "info", "debug", or their numbers 0..4. */
int rpcrdma_log_parse(const char *s)
{
	char *end;
	long v;
	int i;

	if (!s || !*s)
		return -1;
	for (i = 0; i <= RPCRDMA_LOG_DEBUG; i++)
		if (!strcmp(s, names[i]))
			return i;
	v = strtol(s, &end, 10);
	return *end || v < 0 || v > RPCRDMA_LOG_DEBUG ? -1 : (int)v;
}

static void read_env(void)
{
	int v = rpcrdma_log_parse(getenv("RPCRDMA_LOG"));

	if (__atomic_load_n(&level, __ATOMIC_RELAXED) < 0)
		__atomic_store_n(&level, v < 0 ? RPCRDMA_LOG_OFF : v, __ATOMIC_RELAXED);
}

int rpcrdma_log_level(void)
{
	pthread_once(&env_once, read_env);
	return __atomic_load_n(&level, __ATOMIC_RELAXED);
}

void rpcrdma_log_set_level(int l)
{
	pthread_once(&env_once, read_env);
	__atomic_store_n(&level, l < 0 ? 0 : l > RPCRDMA_LOG_DEBUG ? RPCRDMA_LOG_DEBUG : l,
			 __ATOMIC_RELAXED);
}

void rpcrdma_log_set_fn(rpcrdma_log_fn fn, void *ctx)
{
	log_ctx = ctx;
	log_fn = fn;
}

void rpcrdma_log(int l, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (l <= RPCRDMA_LOG_OFF || l > rpcrdma_log_level())
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_fn)
		log_fn(log_ctx, l, line);
	else
		fprintf(stderr, "rpcrdma %s: %s\n", names[l], line);
}
