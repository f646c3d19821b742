/* SPDX-License-Identifier: BSD-2-Clause */
/* Minimal test harness: CHECK() records failures with file:line; each RUN() is one
 * test; HARNESS_END() prints "N passed, N failed" (read by CI) and sets the exit code. */
#ifndef RPCRDMA_TEST_HARNESS_H
#define RPCRDMA_TEST_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int h_checks_failed;
static int h_tests_passed;
static int h_tests_failed;

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

#define RUN(fn)                                                                       \
	do {                                                                          \
		int h_before = h_checks_failed;                                       \
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
		printf("%d passed, %d failed\n", h_tests_passed, h_tests_failed);     \
		return h_tests_failed ? 1 : 0;                                        \
	} while (0)

#endif
