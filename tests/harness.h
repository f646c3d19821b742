/* SPDX-License-Identifier: BSD-2-Clause */
/* Minimal test harness: CHECK() records failures with file:line; each RUN() is one
 * test; HARNESS_END() prints "N passed, N failed" (read by CI) and sets the exit code.
 * HARNESS_BEGIN(argc, argv) lets one test run by name (`test_engine test_msgp`, as each
 * ctest case does) and `--list` print the names (CMake registers one ctest per RUN). */
#ifndef RPCRDMA_TEST_HARNESS_H
#define RPCRDMA_TEST_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rpcrdma/errors.h"
#include "test_host.h"

static int h_checks_failed;
static int h_tests_passed;
static int h_tests_failed;
static const char *h_only;   /* run this test only */
static int h_list;           /* print the names, run nothing */

#define HARNESS_BEGIN(argc, argv)                                                     \
	do {                                                                          \
		if ((argc) > 1 && !strcmp((argv)[1], "--list"))                       \
			h_list = 1;                                                   \
		else if ((argc) > 1)                                                  \
			h_only = (argv)[1];                                           \
	} while (0)

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			h_checks_failed++;                                            \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
				#cond);                                               \
		}                                                                     \
	} while (0)

#define CHECK_EQ_U(a, b)                                                              \
	do {                                                                          \
		uint64_t h_a = (uint64_t)(a), h_b = (uint64_t)(b);                    \
		if (h_a != h_b) {                                                     \
			h_checks_failed++;                                            \
			fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%" PRIu64     \
					" != %" PRIu64 ")\n",                         \
				__FILE__, __LINE__, #a, #b, h_a, h_b);                \
		}                                                                     \
	} while (0)

/* Signed: negative values (error codes) print as themselves. */
#define CHECK_EQ_I(a, b)                                                              \
	do {                                                                          \
		int64_t h_a = (int64_t)(a), h_b = (int64_t)(b);                       \
		if (h_a != h_b) {                                                     \
			h_checks_failed++;                                            \
			fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%" PRId64     \
					" != %" PRId64 ")\n",                         \
				__FILE__, __LINE__, #a, #b, h_a, h_b);                \
		}                                                                     \
	} while (0)

/* A call that returns 0 or a negative RPCRDMA_ERR_*: the error by name when it fails. */
#define CHECK_OK(expr)                                                                \
	do {                                                                          \
		int64_t h_rc = (int64_t)(expr);                                       \
		if (h_rc < 0) {                                                       \
			h_checks_failed++;                                            \
			fprintf(stderr, "%s:%d: CHECK failed: %s returned %" PRId64   \
					" (%s)\n",                                    \
				__FILE__, __LINE__, #expr, h_rc,                      \
				rpcrdma_strerror((int)h_rc));                         \
		}                                                                     \
	} while (0)

/* expr must fail with -err (an RPCRDMA_ERR_* value). */
#define CHECK_ERR(expr, err)                                                          \
	do {                                                                          \
		int64_t h_rc = (int64_t)(expr), h_want = -(int64_t)(err);             \
		if (h_rc != h_want) {                                                 \
			h_checks_failed++;                                            \
			fprintf(stderr, "%s:%d: CHECK failed: %s returned %" PRId64   \
					" (%s), not %" PRId64 " (%s)\n",              \
				__FILE__, __LINE__, #expr, h_rc,                      \
				h_rc < 0 ? rpcrdma_strerror((int)h_rc) : "no error", \
				h_want, rpcrdma_strerror((int)h_want));               \
		}                                                                     \
	} while (0)

#define RUN(fn)                                                                       \
	do {                                                                          \
		int h_before = h_checks_failed;                                       \
		if (h_list) {                                                         \
			puts(#fn);                                                    \
			break;                                                        \
		}                                                                     \
		if (h_only && strcmp(h_only, #fn))                                    \
			break;                                                        \
		fn();                                                                 \
		if (h_checks_failed == h_before) {                                    \
			h_tests_passed++;                                             \
		} else {                                                              \
			h_tests_failed++;                                             \
			fprintf(stderr, "FAIL: %s\n", #fn);                           \
		}                                                                     \
	} while (0)

#define HARNESS_END()                                                                 \
	do {                                                                          \
		if (h_list)                                                           \
			return 0;                                                     \
		if (h_only && h_tests_passed + h_tests_failed == 0) {                 \
			fprintf(stderr, "no test named %s (--list)\n", h_only);       \
			return 2;                                                     \
		}                                                                     \
		printf("%d passed, %d failed\n", h_tests_passed, h_tests_failed);     \
		return h_tests_failed ? 1 : 0;                                        \
	} while (0)

#endif
