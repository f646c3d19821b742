/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal: the libraries a back end drives (libfabric, librdmacm, libibverbs), loaded
 * the first time that back end is opened, not when librpcrdma is. A program that never
 * opens a provider of libfabric's pays nothing for it: Debian's libfabric.so.1 alone
 * costs about 0.2 s to load (its psm libraries' constructors), and a verbs-only or
 * codec-only program needs none of it.
 *
 * A back end lists the functions it calls (X-macros in its own *_dl.h), and the build
 * records at which symbol version the installed library offers each (cmake/dl_probe.c):
 * a function is looked up at that version, so the types the back end was compiled with
 * are the ones it gets, as if it had been linked. */
#ifndef RPCRDMA_DL_H
#define RPCRDMA_DL_H

#include <stddef.h>

struct rpcrdma__dl_lib {
	const char *soname;          /* what dlopen() is given: "libfabric.so.1" */
	const char *env;             /* names a variable that overrides soname, or NULL */
	const char *package;         /* where a Debian user finds it, for the message */
	const char *const *names;    /* the functions, in the order of slots */
	const char *const *versions; /* each one's symbol version, or "" (unversioned) */
	size_t count;
	void (**slots)(void);        /* filled with the functions, in order */
};

/* Loads lib and fills its slots, once per process (further calls return the first
 * one's result). 0, or -RPCRDMA_ERR_NOPROV with a message naming the library, the
 * missing function and the package in err. Thread-safe. */
int rpcrdma__dl_load(const struct rpcrdma__dl_lib *lib, char *err, size_t errlen);

/* Defines the static struct rpcrdma__dl_lib VAR for the functions of LIST (an X-macro
 * list of names) whose pointers are the members of FNS, in the same order; their
 * versions come from the generated dl_versions.h (RPCRDMA_DLV_<name>). */
#define RPCRDMA__DL_NAME(n) #n,
#define RPCRDMA__DL_VERSION(n) RPCRDMA_DLV_##n,
#define RPCRDMA__DL_LIB(var, soname, env, package, LIST, fns) \
	static const char *const var##_names[] = { LIST(RPCRDMA__DL_NAME) }; \
	static const char *const var##_versions[] = { LIST(RPCRDMA__DL_VERSION) }; \
	_Static_assert(sizeof(fns) == sizeof(var##_names) / sizeof(char *) * \
		       sizeof(void (*)(void)), "one pointer per name"); \
	static const struct rpcrdma__dl_lib var = { soname, env, package, var##_names, \
		var##_versions, sizeof(var##_names) / sizeof(char *), \
		(void (**)(void))(void *)&fns }

#endif
