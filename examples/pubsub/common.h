/* SPDX-License-Identifier: BSD-2-Clause */
/* What the pubsub server and its subscribers agree on. */
#ifndef PUBSUB_COMMON_H
#define PUBSUB_COMMON_H

#include <stdint.h>

/* The bytes of notification seq to subscriber id: both sides compute them. */
static inline uint8_t note_byte(uint32_t id, uint32_t seq, uint32_t i)
{
	return (uint8_t)(id * 31u + seq * 7u + i);
}

static inline uint32_t note_len(uint32_t seq)
{
	return 16u + seq * 13u % 1000u;   /* 16 .. 1015 bytes: inline either way */
}

#endif
