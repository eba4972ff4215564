/*
 * libhook/env.c: the environment variables the hook obeys, and when it must not.
 *
 * Under secure execution (a setuid or setgid program, or file capabilities:
 * the kernel sets AT_SECURE) the environment belongs to the calling user, not
 * to the program's owner; a hook loaded there through /etc/ld.so.preload
 * would otherwise create HEAPLEDGER_LOG files as root where the user asks,
 * send argv to the user's socket, and take the user's options. So there the
 * hook reads none of its variables: it runs standalone with the defaults.
 */
#include <stdlib.h>
#include <sys/auxv.h>

#include "internal.h"

const char *hl_env_get_as(const char *name, bool secure)
{
	return secure ? NULL : getenv(name);
}

const char *hl_env_get(const char *name)
{
	return hl_env_get_as(name, getauxval(AT_SECURE) != 0);
}
