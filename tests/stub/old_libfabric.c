/* SPDX-License-Identifier: BSD-2-Clause */
/* Built as libfabric.so.1 in a directory of its own (tests/test_lazy_libs.sh): a
 * libfabric that has none of the functions librpcrdma was built against, as an older
 * one would lack some. */
int rpcrdma_stub_old_libfabric(void);

int rpcrdma_stub_old_libfabric(void)
{
	return 0;
}
