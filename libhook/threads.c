/*
 * libhook/threads.c: stopping every other thread of the process for a leak
 * scan, and saving their registers.
 *
 * The choice: a signal-based stop, as conservative garbage collectors do
 * (Boehm GC), not LSan's StopTheWorld (a tracer thread that ptrace-attaches
 * to every thread): ptrace fails under a debugger, under strace, in
 * containers with Yama ptrace_scope=1 relations, and needs a clone'd tracer
 * with its own stack. A signal works everywhere the process can signal
 * itself. The thread registry is the kernel's: /proc/self/task lists every
 * thread, including threads that never allocated (their stacks are roots
 * too). It is read again after each round of signals until no new thread
 * appears (a thread may be created while we stop the others).
 *
 * Each thread gets HL_STOP_SIGNAL with tgkill; the handler saves the
 * interrupted context's general-purpose registers and stack pointer into
 * the thread's slot, says it stopped, and waits on a futex until the
 * scanner releases it. The handler uses only system calls: it may
 * interrupt anything, malloc included (the scanner holds the allocator's
 * locks before it sends the first signal, so a stopped thread never holds
 * one). A thread that has not stopped within HL_STOP_WAIT_MS (it blocks the
 * signal, or the kernel does not schedule it) is reported; the scan goes on
 * and reads its whole stack mapping instead of the part above its stack
 * pointer (conservative: more may look reachable, nothing is misread).
 *
 * Our handler is installed for the stop only and the previous action put
 * back after, unless a signalled thread has not left the handler by then:
 * the handler and the slots then stay, so the late signal finds them
 * (a few KiB kept; the handler does nothing once released).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "scan.h"

/* A real-time signal few programs use (glibc keeps the two below SIGRTMIN). */
#define HL_STOP_SIGNAL (SIGRTMAX - 2)
#define HL_STOP_WAIT_MS 2000
#define HL_STOP_ROUNDS 16

static _Atomic(struct hl_world *) stopping;

static pid_t own_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void futex_wait(_Atomic int *word, int value, long timeout_ns)
{
	struct timespec ts = { timeout_ns / 1000000000L, timeout_ns % 1000000000L };
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, timeout_ns ? &ts : NULL, NULL, 0);
}

static void futex_wake(_Atomic int *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

static void save_context(struct hl_scan_thread *t, const ucontext_t *uc)
{
#if defined(__x86_64__)
	for (unsigned i = 0; i < NGREG && i < HL_SCAN_REGS; i++)
		t->regs[i] = (uintptr_t)uc->uc_mcontext.gregs[i];
	t->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
	for (unsigned i = 0; i < 31 && i < HL_SCAN_REGS; i++)
		t->regs[i] = (uintptr_t)uc->uc_mcontext.regs[i];
	t->sp = (uintptr_t)uc->uc_mcontext.sp;
#else
	(void)uc;
	t->sp = 0; /* unknown: the whole stack mapping is read */
#endif
}

static void stop_handler(int sig, siginfo_t *info, void *context)
{
	(void)sig;
	(void)info;
	int saved = errno;
	struct hl_world *w = atomic_load(&stopping);
	pid_t tid = own_tid();
	struct hl_scan_thread *t = NULL;
	for (unsigned i = 0; w && i < w->count; i++)
		if (w->threads[i].tid == tid)
			t = &w->threads[i];
	if (t == NULL || atomic_load(&w->release)) {
		errno = saved;
		return;
	}
	save_context(t, context);
	atomic_store(&t->state, HL_THREAD_STOPPED);
	atomic_fetch_add(&w->stopped, 1);
	futex_wake(&w->stopped);
	while (!atomic_load(&w->release))
		futex_wait(&w->release, 0, 0);
	atomic_store(&t->state, HL_THREAD_LEFT);
	errno = saved;
}

static bool world_has(const struct hl_world *w, pid_t tid)
{
	for (unsigned i = 0; i < w->count; i++)
		if (w->threads[i].tid == tid)
			return true;
	return false;
}

/* The kernel's task flags (include/linux/sched.h) for tasks of the process
 * that will never run user code again, so are no roots, must not hold up the
 * stop and do not count as the program's threads:
 *  - PF_EXITING: a thread in do_exit. A thread pthread_join has returned
 *    for can still be listed in /proc/self/task for a moment (the kernel
 *    wakes the joiner from exit_mm, before it unlists the task): counted, it
 *    kept the exit from running freeres after a join, and the joined
 *    threads' DTVs, which freeres frees with their cached stacks, were
 *    reported (valgrind, which has ended them, never sees them);
 *  - PF_IO_WORKER, PF_USER_WORKER (Linux 6.4 on): io_uring's SQPOLL and
 *    io-wq workers, vhost's, run only kernel code and never take a signal
 *    (valgrind, which sees only the threads it runs, never waits for them
 *    either). */
#define HL_PF_EXITING 0x00000004u
#define HL_PF_IO_WORKER 0x00000010u
#define HL_PF_USER_WORKER 0x00004000u

/* True if task tid will run no user code: field 9 (flags) of
 * /proc/self/task/TID/stat, read with system calls only (no stdio: this
 * runs with the allocator's locks held). A stat that cannot be read (the
 * thread is gone) says false: the caller's signal then finds out. */
static bool runs_no_user_code(pid_t tid)
{
	char path[48] = "/proc/self/task/", buf[512], digits[12];
	int nd = 0, len = (int)strlen(path);
	for (pid_t t = tid; t > 0 && nd < (int)sizeof(digits); t /= 10)
		digits[nd++] = (char)('0' + t % 10);
	while (nd > 0)
		path[len++] = digits[--nd];
	memcpy(path + len, "/stat", sizeof("/stat"));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* The name (field 2) may hold spaces and parentheses: fields are
	 * counted from its last ')'. After it: state, ppid, pgrp, session,
	 * tty_nr, tpgid, flags. */
	char *p = strrchr(buf, ')');
	if (p == NULL)
		return false;
	for (int field = 3; field <= 9; field++) { /* to the space before field 9 */
		p = strchr(p + 1, ' ');
		if (p == NULL)
			return false;
	}
	unsigned long flags = 0;
	for (p++; *p >= '0' && *p <= '9'; p++)
		flags = flags * 10 + (unsigned long)(*p - '0');
	return (flags & (HL_PF_EXITING | HL_PF_IO_WORKER | HL_PF_USER_WORKER)) != 0;
}

/* Adds the threads of /proc/self/task not yet in w (raw getdents, no
 * opendir: that allocates), leaving out tasks that run no user code; false
 * if the directory cannot be read. */
static bool world_add_new(struct hl_world *w, pid_t self)
{
	char buf[4096];
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (long at = 0; at < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + at);
			at += d->d_reclen;
			pid_t tid = 0;
			for (const char *c = d->d_name; *c >= '0' && *c <= '9'; c++)
				tid = tid * 10 + (*c - '0');
			if (tid <= 0 || tid == self || world_has(w, tid) || w->count == w->capacity ||
			    runs_no_user_code(tid))
				continue;
			w->threads[w->count++] = (struct hl_scan_thread){ .tid = tid };
		}
	}
	close(fd);
	return true;
}

int hl_world_stop_signal(void)
{
	return HL_STOP_SIGNAL;
}

unsigned hl_world_thread_count(void)
{
	/* A world with two slots on the stack (a struct with a flexible
	 * array member cannot be followed by more members in ISO C). */
	union {
		struct hl_world w;
		char bytes[sizeof(struct hl_world) + 2 * sizeof(struct hl_scan_thread)];
	} small = { .w = { .capacity = 2 } };
	/* The caller counts without a read of its own stat (a tenth of a short
	 * process's exit): it runs user code, this very code. */
	if (!world_add_new(&small.w, own_tid()))
		return 0;
	return small.w.count + 1;
}

static void signal_new(struct hl_world *w, unsigned from)
{
	pid_t pid = getpid();
	for (unsigned i = from; i < w->count; i++) {
		struct hl_scan_thread *t = &w->threads[i];
		/* Before the signal: its handler may run before tgkill returns. */
		atomic_store(&t->state, HL_THREAD_SIGNALLED);
		if (syscall(SYS_tgkill, pid, t->tid, HL_STOP_SIGNAL) != 0)
			atomic_store(&t->state, HL_THREAD_GONE);
	}
}

static unsigned world_signalled(const struct hl_world *w)
{
	unsigned n = 0;
	for (unsigned i = 0; i < w->count; i++)
		n += atomic_load(&w->threads[i].state) != HL_THREAD_GONE;
	return n;
}

/* Waits until every signalled thread stopped, at most HL_STOP_WAIT_MS. */
static void world_wait(struct hl_world *w)
{
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		int stopped = atomic_load(&w->stopped);
		if ((unsigned)stopped >= world_signalled(w))
			return;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long waited_ms = (now.tv_sec - start.tv_sec) * 1000 +
				 (now.tv_nsec - start.tv_nsec) / 1000000;
		if (waited_ms >= HL_STOP_WAIT_MS)
			return;
		futex_wait(&w->stopped, stopped, 1000000); /* 1 ms */
	}
}

static struct sigaction previous_action;

struct hl_world *hl_world_stop(struct hl_scan *s)
{
	unsigned capacity = 1024;
	struct hl_world *w;
	for (;;) {
		w = hl_scan_map(s, sizeof(*w) + capacity * sizeof(struct hl_scan_thread));
		if (w == NULL)
			return NULL;
		w->capacity = capacity;
		world_add_new(w, own_tid());
		if (w->count < capacity)
			break;
		capacity *= 4; /* too many threads for this try: the rest is unmapped at the end */
	}
	if (w->count == 0)
		return w;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = stop_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	atomic_store(&stopping, w);
	sigaction(HL_STOP_SIGNAL, &sa, &previous_action);
	unsigned from = 0;
	for (unsigned round = 0; round < HL_STOP_ROUNDS && from < w->count; round++) {
		signal_new(w, from);
		from = w->count;
		world_wait(w);
		world_add_new(w, own_tid());
	}
	/* Named in the report (wire.h): the user learns which thread blocks
	 * the stop signal. */
	for (unsigned i = 0; i < w->count; i++) {
		if (atomic_load(&w->threads[i].state) != HL_THREAD_SIGNALLED)
			continue;
		if (w->unstopped < HL_WIRE_MAX_UNSTOPPED_TIDS)
			w->unstopped_tids[w->unstopped] = (uint32_t)w->threads[i].tid;
		w->unstopped++;
	}
	return w;
}

/* True once every signalled thread left the handler (bounded wait). */
static bool world_left(struct hl_world *w)
{
	for (unsigned tries = 0; tries < 1000; tries++) {
		bool all = true;
		for (unsigned i = 0; i < w->count && all; i++) {
			int state = atomic_load(&w->threads[i].state);
			all = state == HL_THREAD_LEFT || state == HL_THREAD_GONE;
		}
		if (all)
			return true;
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	return false;
}

bool hl_world_resume(struct hl_world *w)
{
	if (w == NULL || w->count == 0)
		return true;
	atomic_store(&w->release, 1);
	futex_wake(&w->release);
	if (w->unstopped == 0 && world_left(w)) {
		sigaction(HL_STOP_SIGNAL, &previous_action, NULL);
		atomic_store(&stopping, NULL);
		return true;
	}
	/* A late handler will find `release` set and return at once: the
	 * handler and the world stay. */
	return false;
}
