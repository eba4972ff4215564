/*
 * libhook/init.c: start-up (options: options.c), fork handling and the end of the run.
 *
 * The allocator itself needs no set-up: all its state is zero-initialised
 * static memory, so it serves the dynamic loader's and libc's first calls,
 * made before any constructor runs. hl_start, our constructor, then reads
 * the environment (which is not reliable before libc's own initialisation),
 * registers the fork and thread-exit handlers and starts tracking.
 *
 * At the end, hl_exit_report runs once: from our destructor on a normal
 * exit (on_exit gave us the status), or from the exit-path interposers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fatal.h"
#include "fdtrack.h"
#include "heap.h"
#include "leakcheck.h"
#include "scan.h"
#include "sigchain.h"
#include "track.h"

HL_TLS int hl_guard_depth;

static _Atomic bool exit_reported;
static int exit_status;
static struct hl_fd log_file = HL_FD_NONE;
/* What fd 2 was when the program started (stderr_remember), and a copy. */
static enum { STDERR_UNKNOWN, STDERR_KNOWN, STDERR_CLOSED } stderr_state;
static dev_t stderr_dev;
static ino_t stderr_ino;
static struct hl_fd stderr_copy = HL_FD_NONE;

void hl_init(void)
{
	/* Everything is lazily built from zeroed statics; nothing to do yet.
	 * Kept as the one place to add eager set-up should it ever be needed. */
}

/* Dies of SIGABRT at once, as abort() would without its handlers: the
 * default action set and the signal unblocked by system calls (the hook's
 * own sigaction takes a lock, its abort() makes the exit report), then sent
 * to this thread. All zeros is the kernel's struct sigaction for SIG_DFL on
 * every layout. */
static __attribute__((noreturn)) void die_of_sigabrt(void)
{
	unsigned long action[4] = { 0 };
	uint64_t abrt = (uint64_t)1 << (SIGABRT - 1);
	syscall(SYS_rt_sigaction, SIGABRT, action, NULL, sizeof(abrt));
	syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &abrt, NULL, sizeof(abrt));
	syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGABRT);
	for (;;)
		syscall(SYS_exit_group, 127);
}

void hl_assert_fail(const char *expr, const char *file, int line)
{
	struct hl_out out;
	hl_out_init(&out, 2);
	hl_out_str(&out, "heapledger: assertion failed: ");
	hl_out_str(&out, expr);
	hl_out_str(&out, " at ");
	hl_out_str(&out, file);
	hl_out_str(&out, ":");
	hl_out_u64(&out, (uint64_t)line);
	hl_out_str(&out, "\n");
	hl_out_flush(&out);
	die_of_sigabrt();
}

void hl_warn(const char *message, const void *address)
{
	struct hl_out out;
	hl_out_init(&out, hl_stderr_fd());
	hl_out_str(&out, "heapledger: ");
	hl_out_str(&out, message);
	if (address) {
		hl_out_str(&out, " (");
		hl_out_hex(&out, (uintptr_t)address);
		hl_out_str(&out, ")");
	}
	hl_out_str(&out, "\n");
	hl_out_flush(&out);
}

void hl_notice(const char *message)
{
	if (hl_options.quiet)
		return;
	struct hl_out out;
	hl_out_init(&out, hl_log_fd());
	hl_out_str(&out, "heapledger: ");
	hl_out_str(&out, message);
	hl_out_str(&out, "\n");
	hl_out_flush(&out);
}

void hl_notice_errno(const char *what, const char *path, int err, const char *then)
{
	const char *desc = strerrordesc_np(err); /* untranslated: no locale, no malloc */
	if (hl_options.quiet)
		return;
	struct hl_out out;
	hl_out_init(&out, hl_log_fd());
	hl_out_str(&out, "heapledger: ");
	hl_out_str(&out, what);
	hl_out_str(&out, " ");
	hl_out_str(&out, path);
	hl_out_str(&out, ": ");
	if (desc) {
		hl_out_str(&out, desc);
	} else {
		hl_out_str(&out, "error ");
		hl_out_u64(&out, (uint64_t)err);
	}
	hl_out_str(&out, "; ");
	hl_out_str(&out, then);
	hl_out_str(&out, "\n");
	hl_out_flush(&out);
}

/* ---- stderr, checked before use ------------------------------------------ */

/* A program may close its stderr and open a file that takes fd 2 (daemons
 * do); writing the summary there would corrupt the program's data. And
 * grep, sort, xz and tar close fd 2 before they exit, and would get no
 * summary. So, like valgrind, the hook keeps a copy of the stderr the program
 * started with (high and close-on-exec, fd.c) and writes there; without the
 * copy, it writes to fd 2 only while fd 2 is still that file.
 * The copy keeps a pipe open after the program closed its end: a reader
 * waiting for the end would wait for this process to exit. That is right for
 * the process itself (the summary comes at its exit), not for a daemon's
 * forked child that closes its stderr and lives on after its parent: a
 * forked child drops the copy (stderr_fork_child), and an exec'd image makes
 * its own. */
static void stderr_remember(void)
{
	struct stat st;
	if (fstat(2, &st) != 0) {
		stderr_state = STDERR_CLOSED; /* whatever gets fd 2 later is not ours */
		return;
	}
	stderr_dev = st.st_dev;
	stderr_ino = st.st_ino;
	stderr_state = STDERR_KNOWN;
	int saved = errno;
	int copy = fcntl(2, F_DUPFD_CLOEXEC, 3);
	errno = saved;
	hl_fd_keep(&stderr_copy, copy);
}

static void stderr_fork_child(void)
{
	hl_fd_release(&stderr_copy);
}

int hl_stderr_fd(void)
{
	struct stat st;
	if (stderr_state == STDERR_UNKNOWN)
		return 2; /* before the constructor: nothing has replaced it yet */
	if (hl_fd_is_ours(&stderr_copy))
		return stderr_copy.fd;
	if (stderr_state == STDERR_KNOWN && fstat(2, &st) == 0 && st.st_dev == stderr_dev &&
	    st.st_ino == stderr_ino)
		return 2;
	return -1; /* hl_out writes to -1 fail quietly */
}

/* Opens the log for appending without following a planted link: a new file
 * is created 0600 with O_EXCL; an existing one must be a regular file of our
 * own user. -1 if neither. */
static int log_open(const char *path)
{
	int flags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY;
	struct stat st;
	int fd = open(path, flags | O_CREAT | O_EXCL, 0600);
	if (fd >= 0 || errno != EEXIST)
		return fd;
	fd = open(path, flags | O_NONBLOCK);
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())) {
		close(fd);
		return -1;
	}
	return fd;
}

/* $HEAPLEDGER_LOG names a file; "%p" in it becomes the pid, as in
 * valgrind's --log-file, so forked children do not interleave. */
int hl_log_fd(void)
{
	if (hl_fd_is_ours(&log_file))
		return log_file.fd;
	const char *path = hl_env_get(HL_ENV_LOG);
	if (path == NULL || *path == '\0' || log_file.fd == -2)
		return hl_stderr_fd();
	char buf[HL_WIRE_MAX_PATH];
	size_t used = 0;
	for (const char *s = path; *s && used + 24 < sizeof(buf); s++) {
		if (s[0] == '%' && s[1] == 'p') {
			char digits[24];
			int n = 0;
			for (unsigned long pid = (unsigned long)getpid(); pid; pid /= 10)
				digits[n++] = (char)('0' + pid % 10);
			while (n)
				buf[used++] = digits[--n];
			s++;
		} else {
			buf[used++] = *s;
		}
	}
	buf[used] = '\0';
	int saved = errno;
	int fd = log_open(buf);
	errno = saved;
	if (!hl_fd_keep(&log_file, fd)) {
		log_file.fd = -2; /* tried once: no retry, no second warning */
		hl_warn("cannot open " HL_ENV_LOG " file (a new file, or a regular file of "
			"ours); writing to stderr", NULL);
		return hl_stderr_fd();
	}
	return log_file.fd;
}

/* ---- fork --------------------------------------------------------------- */

void hl_fork_prepare(void)
{
	hl_walk_fork_prepare(); /* first: no walk of ours may hold a lock at fork */
	hl_track_fork_prepare();
	hl_alloc_fork_prepare();
	hl_caches_lock();
	hl_arenas_lock_all();
	hl_large_fork_prepare();
	hl_checks_fork_prepare(); /* quarantine_lock -> meta_lock */
	hl_guard_fork_prepare();
	hl_fds_fork_prepare(); /* its lock before meta_lock */
	hl_meta_fork_prepare();
	hl_misuse_fork_prepare();
}

void hl_fork_parent(void)
{
	hl_misuse_fork_parent();
	hl_meta_fork_parent();
	hl_fds_fork_parent();
	hl_guard_fork_parent();
	hl_checks_fork_parent();
	hl_large_fork_parent();
	hl_arenas_unlock_all();
	hl_caches_unlock();
	hl_alloc_fork_parent();
	hl_track_fork_parent();
	hl_walk_fork_parent();
}

void hl_fork_child(void)
{
	hl_walk_fork_child();
	hl_process_own();
	hl_misuse_fork_child();
	hl_meta_fork_child();
	hl_fds_fork_child();
	hl_caches_fork_hold(); /* hl_checks_fork_child walks the caches */
	hl_checks_fork_child();
	hl_guard_fork_child();
	hl_large_fork_child();
	hl_arenas_reset_locks();
	hl_caches_fork_child();
	hl_alloc_fork_child();
	exit_reported = false;
	hl_leakcheck_fork_child();
	hl_fd_release(&log_file); /* "%p" names another file in the child */
	stderr_fork_child();
	hl_track_fork_child();
}

/* ---- start and end ------------------------------------------------------ */

/* True if this process may report: the owner, or a copy made without fork()
 * (a raw clone), which first becomes a fork child. A vfork child, in the
 * owner's memory, must leave the owner's state alone (process.c). */
static bool may_report(void)
{
	switch (hl_process_kind()) {
	case HL_PROCESS_OWNER:
		return true;
	case HL_PROCESS_COPY:
		hl_fork_child();
		return true;
	default:
		return false;
	}
}

void hl_exit_report(unsigned how, int status)
{
	if (!may_report() || atomic_exchange(&exit_reported, true))
		return;
	int fd = hl_log_fd(); /* before freeres: it clears the environment */
	if (hl_leakcheck_scans_at(how))
		hl_leakcheck_exit_prepare(how); /* after it, raw write(2) only: stdio is gone */
	hl_checks_sweep(HL_CALL_EXIT); /* checks=full: guard bytes and quarantine, last look */
	if (hl_track_exit(how, status))
		return; /* the reporter prints the summary */
	hl_fatal_print(fd);
	hl_fds_print(fd); /* before the heap summary, as valgrind's */
	if (hl_options.summary)
		hl_summary_print(fd);
	if (hl_options.leaks)
		hl_track_print_leaks(fd, how);
	if (hl_options.summary)
		hl_misuse_print_summary(fd);
	hl_shared_end(how, status); /* for a reporter that stalled, then read on */
}

/*
 * A normal exit reports from whichever of these two runs second, so the
 * status is known and every destructor has run. Our constructor runs from
 * the dynamic loader before __libc_start_main registers _dl_fini, so our
 * on_exit handler normally runs after _dl_fini (and our destructor in it):
 * reporting from the destructor alone gave exit(3) as status 0.
 */
static _Atomic bool exit_status_known;
static _Atomic bool destructor_ran;

static void on_exit_status(int status, void *arg)
{
	if (hl_process_kind() == HL_PROCESS_SHARER)
		return; /* a vfork child's exit: the flags are the owner's */
	exit_status = status;
	atomic_store(&exit_status_known, true);
	if (atomic_load(&destructor_ran))
		hl_exit_report(HL_EXIT_NORMAL, status);
}

__attribute__((constructor)) static void hl_start(void)
{
	hl_process_own();
	stderr_remember();
	hl_os_check_address_space();
	hl_options_parse(hl_env_get(HL_ENV_OPTIONS));
	hl_checks_init();
	hl_sigchain_init();
	hl_guard_init();
	hl_trace_choose(); /* before anything could be sent */
	hl_fds_init(); /* the descriptors this image inherited */
	hl_vfork_init(); /* before the program can vfork */
	hl_cache_init_key();
	pthread_atfork(hl_fork_prepare, hl_fork_parent, hl_fork_child);
	on_exit(on_exit_status, NULL);
	hl_track_init();
	hl_fatal_init(); /* before check_signal's handler, which replaces ours */
	hl_exit_frame_init();
	hl_leakcheck_init();
	hl_cache_options_known(); /* the main thread's cache predates the options */
}

/* Runs after the program's and later-loaded libraries' destructors (we were
 * initialised before them), so blocks they free are not reported. */
__attribute__((destructor)) static void hl_stop(void)
{
	if (hl_process_kind() == HL_PROCESS_SHARER)
		return;
	atomic_store(&destructor_ran, true);
	if (atomic_load(&exit_status_known))
		hl_exit_report(HL_EXIT_NORMAL, exit_status);
}
