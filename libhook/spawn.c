/*
 * libhook/spawn.c: posix_spawn() and posix_spawnp(), interposed to name the
 * child they start in a SPAWN record (wire.h) once the call succeeded: the
 * child runs a new image whose hook says HELLO origin START with ppid us,
 * and a child that never does (its environment lost LD_PRELOAD or
 * HEAPLEDGER_SOCKET, it is static or setuid) is then reported as a program
 * heapledger did not observe, where it was silently missing before. glibc
 * reports a failed exec as the call's error (its child execs under
 * CLONE_VFORK), so success means the image started. glibc's own callers
 * (system(), popen()) use its internal symbol and are not seen here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>

#include "track.h"

typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			const posix_spawnattr_t *, char *const[], char *const[]);

static void note_spawned(int rc, const pid_t *pid, pid_t own, const char *path)
{
	if (rc != 0 || !hl_track_enabled)
		return;
	int saved = errno;
	hl_guard_enter();
	hl_emit_spawn(pid ? *pid : own, path, 0);
	hl_guard_leave();
	errno = saved;
}

/* The caller may pass no pid: the child's is then ours to learn, so a
 * local one is passed instead. */
#define SPAWN_VIA(name, file)                                                        \
	static spawn_fn real;                                                        \
	pid_t own = 0;                                                               \
	if (real == NULL)                                                            \
		real = (spawn_fn)dlsym(RTLD_NEXT, name);                             \
	if (real == NULL)                                                            \
		return ENOSYS;                                                       \
	int rc = real(pid ? pid : &own, file, actions, attr, argv, envp);           \
	note_spawned(rc, pid, own, file);                                            \
	return rc

HL_API int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	SPAWN_VIA("posix_spawn", path);
}

HL_API int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	SPAWN_VIA("posix_spawnp", file);
}
