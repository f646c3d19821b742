/* SPDX-License-Identifier: BSD-2-Clause */
/* Command-line values, checked: each helper takes the whole text or nothing, and names
 * the option and the bad value in its message (exit status 2, as a usage error). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int bad(const char *cmd, const char *opt, const char *s, const char *why)
{
	fprintf(stderr, "rpcrdma %s: invalid %s '%s': %s\n", cmd, opt, s, why);
	return -1;
}

int arg_unknown(const char *cmd, const char *arg)
{
	fprintf(stderr, "rpcrdma %s: %s '%s'\n", cmd,
		arg[0] == '-' ? "unknown option" : "unexpected argument", arg);
	return EXIT_USAGE;
}

int arg_uint(const char *cmd, const char *opt, const char *s, uint64_t min, uint64_t max,
	     uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || strchr(s, '-') || strchr(s, ' '))
		return bad(cmd, opt, s ? s : "", "not a whole number");
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return bad(cmd, opt, s, "not a whole number");
	if (v < min || v > max) {
		char why[96];

		snprintf(why, sizeof(why), "out of range %llu..%llu", (unsigned long long)min,
			 (unsigned long long)max);
		return bad(cmd, opt, s, why);
	}
	*out = v;
	return 0;
}

int arg_double(const char *cmd, const char *opt, const char *s, double min, double max,
	       double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return bad(cmd, opt, "", "not a number");
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || v != v)
		return bad(cmd, opt, s, "not a number");
	if (v < min || v > max) {
		char why[96];

		snprintf(why, sizeof(why), "out of range %g..%g", min, max);
		return bad(cmd, opt, s, why);
	}
	*out = v;
	return 0;
}

/* "4096", "4k", "64K", "1m", "1M", "1g": bytes (powers of 1024). */
int arg_size(const char *cmd, const char *opt, const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	uint64_t mul = 1;
	char *end;

	if (!s || !*s || *s < '0' || *s > '9')
		return bad(cmd, opt, s ? s : "", "not a size (e.g. 512, 4k, 1m)");
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end == 'k' || *end == 'K')
		mul = 1024;
	else if (*end == 'm' || *end == 'M')
		mul = 1024 * 1024;
	else if (*end == 'g' || *end == 'G')
		mul = 1024 * 1024 * 1024;
	if (mul > 1)
		end++;
	if (errno || *end)
		return bad(cmd, opt, s, "not a size (e.g. 512, 4k, 1m)");
	if (v > max / mul) {
		char why[64];

		snprintf(why, sizeof(why), "larger than %llu bytes", (unsigned long long)max);
		return bad(cmd, opt, s, why);
	}
	*out = v * mul;
	return 0;
}

/* After a usage error's own line: where the rest is, as iperf3 and GNU tools say it
 * (not the whole help: the line that names the mistake stays in sight). */
void cli_try_help(const char *cmd)
{
	fprintf(stderr, "Try 'rpcrdma %s --help' for more information.\n", cmd);
}

void cli_catch(void (*fn)(int), int usr1, int restart)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	if (usr1)
		sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void cli_json_error(const char *cmd, const char *text)
{
	const unsigned char *p = (const unsigned char *)text;

	printf("{\"error\":\"");
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	printf("\",\"command\":\"%s\"}\n", cmd);
	fflush(stdout);
}

/* The library's log, written as the library writes it ("rpcrdma error: ..."), but the
 * last error line is kept: a failure the log has already shown (with -v, a connect that
 * failed) is then not printed a second time by the command. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_error[512];

static void cli_log(void *ctx, int level, const char *line)
{
	static const char *const names[] = { "off", "error", "warn", "info", "debug" };

	(void)ctx;
	fprintf(stderr, "rpcrdma %s: %s\n", names[level >= 0 && level <= 4 ? level : 4], line);
	if (level == RPCRDMA_LOG_ERROR) {
		pthread_mutex_lock(&log_lock);
		snprintf(last_error, sizeof(last_error), "%s", line);
		pthread_mutex_unlock(&log_lock);
	}
}

void cli_log_install(void)
{
	rpcrdma_log_set_fn(cli_log, NULL);
}

int cli_log_said(const char *text)
{
	int said;

	pthread_mutex_lock(&log_lock);
	said = last_error[0] && !strcmp(last_error, text);
	pthread_mutex_unlock(&log_lock);
	return said;
}
