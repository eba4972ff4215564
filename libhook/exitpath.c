/*
 * libhook/exitpath.c: the ways out of a process that skip our destructor.
 *
 * _exit/_Exit run no destructors and abort runs nothing at all, so they are
 * interposed: the hook reports (LIVE set and EXIT to the reporter, or the
 * standalone summary) and then ends the process the way the program asked.
 * exec replaces the image: the exec family is interposed to send every
 * thread's buffered events first; the socket is CLOEXEC and the new image
 * connects with origin EXEC. fork is interposed only to send the parent's
 * FORK record, which needs the child's pid the atfork handlers never see.
 * glibc's own internal calls (exit -> _exit, abort on heap corruption) do
 * not go through these symbols; exit is covered by init.c's destructor.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "track.h"

static void (*real_abort)(void);
static pid_t (*real_fork)(void);
static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execv)(const char *, char *const[]);
static int (*real_execvp)(const char *, char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);

void hl_exitpath_init(void)
{
	real_abort = (void (*)(void))dlsym(RTLD_NEXT, "abort");
	real_fork = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
	real_execve = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execve");
	real_execv = (int (*)(const char *, char *const[]))dlsym(RTLD_NEXT, "execv");
	real_execvp = (int (*)(const char *, char *const[]))dlsym(RTLD_NEXT, "execvp");
	real_execvpe = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT,
										   "execvpe");
}

#ifndef HL_UNIT_TEST /* a unit test program must keep libc's exit path */

static __attribute__((noreturn)) void exit_group(int status)
{
	for (;;)
		syscall(SYS_exit_group, status);
}

HL_API __attribute__((noreturn)) void _exit(int status)
{
	hl_exit_report(HL_EXIT_UNDERSCORE, status);
	exit_group(status);
}

HL_API __attribute__((noreturn)) void _Exit(int status)
{
	hl_exit_report(HL_EXIT_UNDERSCORE, status);
	exit_group(status);
}

HL_API __attribute__((noreturn)) void abort(void)
{
	/* Inside the hook (an assertion while unwinding or sending) our own
	 * locks may be held: no report then, just the abort. */
	if (hl_guard_depth == 0)
		hl_exit_report(HL_EXIT_ABORT, SIGABRT);
	if (real_abort)
		real_abort();
	signal(SIGABRT, SIG_DFL);
	raise(SIGABRT);
	exit_group(127);
}

HL_API pid_t fork(void)
{
	if (real_fork == NULL)
		hl_exitpath_init();
	pid_t pid = real_fork();
	if (pid > 0 && hl_track_enabled) {
		int saved = errno;
		hl_guard_enter();
		hl_emit_fork_record(pid);
		hl_guard_leave();
		errno = saved;
	}
	return pid;
}

static void before_exec(void)
{
	int saved = errno;
	hl_guard_enter();
	hl_emit_flush_all();
	hl_guard_leave();
	errno = saved;
}

HL_API int execve(const char *path, char *const argv[], char *const envp[])
{
	before_exec();
	if (real_execve == NULL)
		hl_exitpath_init();
	return real_execve(path, argv, envp);
}

HL_API int execv(const char *path, char *const argv[])
{
	before_exec();
	if (real_execv == NULL)
		hl_exitpath_init();
	return real_execv(path, argv);
}

HL_API int execvp(const char *file, char *const argv[])
{
	before_exec();
	if (real_execvp == NULL)
		hl_exitpath_init();
	return real_execvp(file, argv);
}

HL_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	before_exec();
	if (real_execvpe == NULL)
		hl_exitpath_init();
	return real_execvpe(file, argv, envp);
}

#endif /* HL_UNIT_TEST */
