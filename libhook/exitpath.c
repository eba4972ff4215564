/*
 * libhook/exitpath.c: the ways out of a process that skip our destructor.
 *
 * _exit/_Exit run no destructors and abort runs nothing at all, so they are
 * interposed: the hook reports (after _exit, the leak scan valgrind runs at
 * exit_group; LIVE set and EXIT to the reporter, or the standalone summary)
 * and then ends the process the way the program asked. So is syscall(),
 * for a program's own syscall(SYS_exit_group, n), which is taken as
 * _exit(n) (an exit_group made with inline assembly is not seen).
 * exec replaces the image: execve/execv/execvp/execvpe are interposed to
 * send every thread's buffered events and an EXEC record first (an image
 * whose stream ends on it was replaced, even by one that never reports)
 * and to pass HEAPLEDGER_PID=<pid>
 * (built on the stack, no malloc) so the new image, which reconnects since
 * the socket is CLOEXEC, says HELLO origin EXEC. execl/execlp/execle are
 * interposed too (libc's would call its internal execve, skipping ours).
 * system() and fexecve() are not: system() execs in a new child (a
 * process of its own, HELLO origin START with ppid us) while this image
 * carries on; an image replaced by fexecve loses its unsent events.
 * posix_spawn() is spawn.c's. A vfork child's exec names its program in a
 * SPAWN for the parent to send (note_shared_exec). fork is interposed only to send the parent's
 * FORK record, which needs the child's pid the atfork handlers never see.
 * glibc's own internal calls (exit -> _exit, abort on heap corruption) do
 * not go through these symbols; exit is covered by init.c's destructor.
 * A vfork child runs in its parent's memory: its _exit and exec leave the
 * hook's state alone (process.c). clone() without CLONE_VM makes a process
 * with its own memory but runs no atfork handler, so it is interposed to run
 * them, and the child, which glibc ends with the exit system call once fn
 * returns, reports as after _exit(fn's value).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fatal.h"
#include "scan.h"
#include "tally_hook.h"
#include "track.h"

static void (*real_abort)(void);
static pid_t (*real_fork)(void);
static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);
typedef int (*clone_fn)(int (*)(void *), void *, int, void *, ...);
static clone_fn real_clone;

void hl_exitpath_init(void)
{
	real_abort = (void (*)(void))dlsym(RTLD_NEXT, "abort");
	real_fork = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
	real_execve = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execve");
	real_execvpe = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT,
										   "execvpe");
	real_clone = (clone_fn)dlsym(RTLD_NEXT, "clone");
}

/* The program's own syscall(SYS_exit_group, ...) is taken for _exit once;
 * the hook's own exit_group (after its report) goes straight through. */
static _Atomic bool exit_group_taken;

__attribute__((noreturn)) void hl_exit_group(int status)
{
	atomic_store(&exit_group_taken, true);
	for (;;)
		syscall(SYS_exit_group, status);
}

#ifndef HL_UNIT_TEST /* a unit test program must keep libc's exit path */

static __attribute__((noreturn)) void exit_group(int status)
{
	hl_exit_group(status);
}

/* The scan reads the exiting thread from the caller of `fn` up; not in a
 * vfork child, whose memory (this variable too) is its parent's. */
static void exit_frame_from(const void *fn)
{
	if (hl_process_kind() != HL_PROCESS_SHARER)
		hl_exit_frame_from(fn);
}

HL_API __attribute__((noreturn)) void _exit(int status)
{
	exit_frame_from((const void *)_exit);
	hl_exit_report(HL_EXIT_UNDERSCORE, status);
	exit_group(status);
}

HL_API __attribute__((noreturn)) void _Exit(int status)
{
	exit_frame_from((const void *)_Exit);
	hl_exit_report(HL_EXIT_UNDERSCORE, status);
	exit_group(status);
}

/*
 * syscall(): the raw exit_group a program makes itself (valgrind scans
 * there, whatever the path) gets _exit's scan. Everything else, the hook's
 * own calls included, goes on to libc's with the six argument registers as
 * they came (glibc's syscall() reads six whatever the number).
 */
HL_API long syscall(long number, ...)
{
	static long (*real_syscall)(long, ...);
	long a[6];
	va_list ap;
	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (number == SYS_exit_group && hl_process_kind() != HL_PROCESS_SHARER &&
	    !atomic_exchange(&exit_group_taken, true))
		_exit((int)a[0]);
	if (real_syscall == NULL)
		real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

HL_API __attribute__((noreturn)) void abort(void)
{
	/* SIGABRT's report reads this thread from abort()'s caller up, as _exit
	 * does: libc's abort, raise and pthread_kill frames lie over the dead
	 * frames of the hook's allocation path, and slots they never write (a
	 * sigset_t, alignment padding) still held the address of a block the
	 * program had lost (memcheck skips them as undefined). */
	exit_frame_from((const void *)abort);
	/* Inside the hook (an assertion while unwinding or sending) our own
	 * locks may be held: no report then, just the abort. */
	if (hl_guard_depth == 0 && !hl_fatal_handles(SIGABRT))
		hl_exit_report(HL_EXIT_ABORT, SIGABRT); /* else SIGABRT's handler reports (fatal.c) */
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

/* fn and arg of a clone() child, read by the child in its copy of our
 * frame. */
struct clone_start {
	int (*fn)(void *);
	void *arg;
};

static int clone_child(void *p)
{
	struct clone_start start = *(struct clone_start *)p;
	hl_fork_child();
	hl_exit_frame_inherited((uintptr_t)p); /* in clone()'s frame, on the parent's stack */
	int status = start.fn(start.arg);
	/* fn's frames are dead: the scan reads from this frame up. */
	uintptr_t regs[1] = { 0 };
	hl_exit_frame_set((uintptr_t)__builtin_frame_address(0), regs, 0);
	hl_exit_report(HL_EXIT_UNDERSCORE, status & 0xff);
	return status;
}

HL_API int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	va_list ap;
	va_start(ap, arg); /* read whether given or not, as glibc's own clone does */
	pid_t *parent_tid = va_arg(ap, pid_t *);
	void *tls = va_arg(ap, void *);
	pid_t *child_tid = va_arg(ap, pid_t *);
	va_end(ap);
	if (real_clone == NULL)
		hl_exitpath_init();
	if (flags & CLONE_VM) { /* a thread, or vfork-like: the memory is shared */
		if (!(flags & CLONE_VFORK)) { /* a thread: threadstart.c */
			hl_tally_threads_begin();
			hl_stack_threads_begin();
		}
		return real_clone(fn, stack, flags, arg, parent_tid, tls, child_tid);
	}
	struct clone_start start = { fn, arg };
	hl_fork_prepare();
	int pid = real_clone(clone_child, stack, flags, &start, parent_tid, tls, child_tid);
	int saved = errno;
	hl_fork_parent();
	if (pid > 0 && hl_track_enabled) {
		hl_guard_enter();
		hl_emit_fork_record(pid);
		hl_guard_leave();
	}
	errno = saved;
	return pid;
}

/* A vfork child (or a raw clone sharing our memory) names the program it
 * is about to run in a SPAWN for its parent to send, and takes it back if
 * the exec fails (flags HL_SPAWN_FAILED): the child's image says HELLO
 * origin START, so a SPAWN alone at the end is a child never observed. */
static void note_shared_exec(const char *path, unsigned flags)
{
	if (hl_process_kind() != HL_PROCESS_SHARER)
		return;
	int saved = errno;
	hl_guard_enter();
	hl_emit_spawn(getpid(), path, flags);
	hl_guard_leave();
	errno = saved;
}

/* Sends what is buffered, then EXEC with the path, so the image counts as
 * replaced even if the new one never reports (not traced, no LD_PRELOAD). */
static void before_exec(const char *path)
{
	if (!hl_process_is_owner()) {
		note_shared_exec(path, 0); /* the buffers are its parent's */
		return;
	}
	int saved = errno;
	hl_guard_enter();
	hl_emit_exec(path);
	hl_guard_leave();
	errno = saved;
}

#define PID_ENV HL_ENV_PID "="
#define MAX_ENV 1024 /* more entries: pass the environment through unchanged */

#define PID_DIGITS 10 /* zero-padded, so the new image's forked children fit */

/* "HEAPLEDGER_PID=<our pid>": the new image says HELLO origin EXEC. */
static const char *pid_entry(char *buf, size_t size)
{
	char digits[24];
	int n = 0;
	for (unsigned long pid = (unsigned long)getpid(); pid; pid /= 10)
		digits[n++] = (char)('0' + pid % 10);
	while (n < PID_DIGITS)
		digits[n++] = '0';
	size_t used = sizeof(PID_ENV) - 1;
	memcpy(buf, PID_ENV, used);
	while (n && used + 1 < size)
		buf[used++] = digits[--n];
	buf[used] = '\0';
	return buf;
}

/* Copies envp without any HEAPLEDGER_PID into `out` (MAX_ENV + 2 slots)
 * and adds ours; no heap allocation. NULL when envp is too long. */
static char *const *env_with_pid(char *const envp[], char **out, char *entry, size_t size)
{
	size_t n = 0;
	for (size_t i = 0; envp && envp[i]; i++) {
		if (n == MAX_ENV)
			return NULL;
		if (strncmp(envp[i], PID_ENV, sizeof(PID_ENV) - 1) != 0)
			out[n++] = envp[i];
	}
	out[n++] = (char *)pid_entry(entry, size);
	out[n] = NULL;
	return out;
}

/* Runs `call` with the environment plus our pid when there is a reporter. */
#define WITH_PID_ENV(path, envp, call)                                            \
	do {                                                                      \
		before_exec(path);                                                \
		if (real_execve == NULL)                                          \
			hl_exitpath_init();                                       \
		bool live_ = hl_emit_is_connected() && hl_process_is_owner();     \
		char *slots_[live_ ? MAX_ENV + 2 : 1];                            \
		char entry_[48];                                                  \
		char *const *env_ = live_                                         \
			? env_with_pid(envp, slots_, entry_, sizeof(entry_)) : NULL;\
		char *const *use_ = env_ ? env_ : (envp);                         \
		int failed_ = call; /* exec returns only when it failed */        \
		note_shared_exec(path, HL_SPAWN_FAILED);                          \
		return failed_;                                                   \
	} while (0)

HL_API int execve(const char *path, char *const argv[], char *const envp[])
{
	WITH_PID_ENV(path, envp, real_execve(path, argv, use_));
}

HL_API int execv(const char *path, char *const argv[])
{
	WITH_PID_ENV(path, environ, real_execve(path, argv, use_));
}

HL_API int execvp(const char *file, char *const argv[])
{
	WITH_PID_ENV(file, environ, real_execvpe(file, argv, use_));
}

HL_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	WITH_PID_ENV(file, envp, real_execvpe(file, argv, use_));
}

/* execl's argument list as an argv on the caller's stack: no malloc. */
#define ARGV_FROM_VA(arg0, ap, argv_out, envp_out)                                \
	va_list count_;                                                           \
	size_t argc_ = 1;                                                         \
	va_start(count_, arg0);                                                   \
	while (va_arg(count_, char *) != NULL)                                    \
		argc_++;                                                          \
	va_end(count_);                                                           \
	char *argv_out[argc_ + 1];                                                \
	char *const *envp_out = environ;                                          \
	va_start(ap, arg0);                                                       \
	argv_out[0] = (char *)(arg0);                                             \
	for (size_t i_ = 1; i_ <= argc_; i_++)                                    \
		argv_out[i_] = va_arg(ap, char *); /* the last is the NULL */     \
	(void)envp_out

HL_API int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	ARGV_FROM_VA(arg, ap, argv, envp);
	va_end(ap);
	WITH_PID_ENV(path, envp, real_execve(path, argv, use_));
}

HL_API int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	ARGV_FROM_VA(arg, ap, argv, envp);
	va_end(ap);
	WITH_PID_ENV(file, envp, real_execvpe(file, argv, use_));
}

HL_API int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	ARGV_FROM_VA(arg, ap, argv, envp);
	envp = va_arg(ap, char *const *); /* after the NULL */
	va_end(ap);
	WITH_PID_ENV(path, envp, real_execve(path, argv, use_));
}

#endif /* HL_UNIT_TEST */
