/*
 * reporter/util/demangle.c: __cxa_demangle, from libstdc++ loaded at the
 * first mangled name rather than linked: a program with no C++ in it (most
 * runs) never pays for loading and relocating libstdc++, about a millisecond
 * of every `heapledger` start (bench/README.md, "what heapledger run pays
 * before the program starts").
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "demangle.h"

typedef char *cxa_demangle_fn(const char *mangled, char *out, size_t *len, int *status);

static cxa_demangle_fn *cxa_demangle;
static pthread_once_t loaded = PTHREAD_ONCE_INIT;

static void load(void)
{
	/* Never closed: the function is used until exit. */
	void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

	if (lib)
		*(void **)&cxa_demangle = dlsym(lib, "__cxa_demangle");
}

char *hl_demangle(const char *mangled)
{
	int status = -1;
	char *out;

	pthread_once(&loaded, load);
	if (!cxa_demangle)
		return NULL;
	out = cxa_demangle(mangled, NULL, NULL, &status);
	return status == 0 ? out : NULL;
}
