/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef NFS3D_SIPHASH_H
#define NFS3D_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-2-4 of data under a 128-bit key (its bytes as the paper orders them). */
uint64_t nfs3d_siphash(const unsigned char key[16], const void *data, size_t len);

#endif
