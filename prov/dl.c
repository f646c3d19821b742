/* SPDX-License-Identifier: BSD-2-Clause */
/* Loading a back end's library on first use (dl.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "rpcrdma/errors.h"

/* One state per library this file has been asked for; there are three. */
#define DL_LIBS 4

struct dl_state {
	const struct rpcrdma__dl_lib *lib;
	int rc;
	char why[256];
};

static pthread_mutex_t dl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dl_state dl_states[DL_LIBS];
static int dl_nstates;

static int same_object(void *a, void *b)
{
	Dl_info ia, ib;

	return dladdr(a, &ia) && dladdr(b, &ib) && ia.dli_fbase == ib.dli_fbase;
}

/* The function as linking would have bound it: the library's definition at the version
 * the build saw, unless something earlier in the program's global scope defines the name
 * (LD_PRELOAD, the program itself), which wins as it would over a linked library. */
static void *find_fn(void *h, const char *name, const char *version)
{
	void *real = version[0] ? dlvsym(h, name, version) : dlsym(h, name);
	void *first = dlsym(RTLD_DEFAULT, name);

	if (first && real && first != real && !same_object(first, real))
		return first;
	return real;
}

/* The library's file: the one named by its variable (a path, or a name the loader
 * searches for), if set and the program is not set-id; else its soname. */
static const char *file_of(const struct rpcrdma__dl_lib *lib)
{
	const char *f = lib->env ? secure_getenv(lib->env) : NULL;

	return f && *f ? f : lib->soname;
}

static int load(const struct rpcrdma__dl_lib *lib, char *why, size_t whylen)
{
	const char *file = file_of(lib);
	void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
	size_t i;

	if (!h) {
		snprintf(why, whylen, "%s cannot be loaded (%s): install %s%s%s", file, dlerror(),
			 lib->package, file != lib->soname ? ", or correct " : "",
			 file != lib->soname ? lib->env : "");
		return -RPCRDMA_ERR_NOPROV;
	}
	for (i = 0; i < lib->count; i++) {
		void *fn = find_fn(h, lib->names[i], lib->versions[i]);

		if (!fn) {
			snprintf(why, whylen, "%s has no %s%s%s: it is older than the one this "
				 "library was built with", file, lib->names[i],
				 lib->versions[i][0] ? "@" : "", lib->versions[i]);
			return -RPCRDMA_ERR_NOPROV;   /* h stays open: others may share it */
		}
		/* POSIX: a function's address from dlsym() converts through void * */
		memcpy(&lib->slots[i], &fn, sizeof(fn));
	}
	return 0;
}

static struct dl_state *state_of(const struct rpcrdma__dl_lib *lib)
{
	int i;

	for (i = 0; i < dl_nstates; i++)
		if (dl_states[i].lib == lib)
			return &dl_states[i];
	return NULL;
}

int rpcrdma__dl_load(const struct rpcrdma__dl_lib *lib, char *err, size_t errlen)
{
	struct dl_state *s;
	int rc;

	pthread_mutex_lock(&dl_lock);
	s = state_of(lib);
	if (!s && dl_nstates < DL_LIBS) {
		s = &dl_states[dl_nstates++];
		s->lib = lib;
		s->rc = load(lib, s->why, sizeof(s->why));
	}
	rc = s ? s->rc : -RPCRDMA_ERR_NOPROV;
	if (rc && err && errlen)
		snprintf(err, errlen, "%s", s ? s->why : "too many libraries to load");
	pthread_mutex_unlock(&dl_lock);
	return rc;
}
