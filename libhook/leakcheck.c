/*
 * libhook/leakcheck.c: when the leak scan (scan.c) runs, and where its
 * classes go.
 *
 *  - At a normal exit (exit() or return from main), after the program's
 *    exit handlers, and at _exit/_Exit (valgrind scans at exit_group,
 *    whatever led there): first libstdc++'s __gnu_cxx::__freeres() and
 *    glibc's __libc_freeres(), as valgrind does by default (freeres=0 turns
 *    that off), so the runtime's own buffers are not counted; then one
 *    scan. Its classes go into the LIVE records (HL_LIVE_SCANNED) or the
 *    standalone report. Freeing glibc's memory is safe only when no other
 *    thread runs (valgrind has ended them by then; we cannot), so it is
 *    skipped when /proc/self/task lists more than this thread (threads
 *    in their exit, a joined one still listed, do not count); a forked
 *    child gets it too (valgrind's does: what it frees of the parent's
 *    threads, their DTVs, it inherited as blocks of its own). After it,
 *    output uses raw write(2) only (hl_out, the socket): stdio's buffers
 *    are gone. glibc's freeres flushes stdio (_IO_cleanup): at _exit the
 *    program chose not to, so pending output is discarded first (valgrind
 *    writes it; a forked child would print its parent's buffered lines).
 *  - abort: no scan yet; the classes stay unknown and the report says
 *    "not scanned".
 *  - On demand: heapledger_check_leaks() from any thread, or the signal
 *    named by check_signal=. A signal handler cannot scan (the interrupted
 *    code may hold the very locks the scan takes), so the handler only
 *    wakes a helper thread, started when the option is set, which runs the
 *    check. With a reporter, a check sends its LIVE set flagged
 *    HL_LIVE_CHECK and a CHECK record; standalone, it prints the records
 *    that grew since the previous check.
 * One scan at a time (check_lock).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dtv.h"
#include "leakcheck.h"
#include "lossrec.h"
#include "scan.h"
#include "track.h"

static struct hl_lock check_lock = HL_LOCK_INIT;
static uint32_t check_seq;
static struct hl_lossrec_table *previous_check; /* standalone: for "grew since" */

void hl_leakcheck_lock(void)
{
	hl_lock(&check_lock);
}

void hl_leakcheck_unlock(void)
{
	hl_unlock(&check_lock);
}

static bool exiting;

bool hl_leakcheck_run(const struct hl_scan_origin *origin, hl_leakcheck_fn consume, void *arg,
		      struct hl_unstopped *unstopped)
{
	struct hl_scan s;
	memset(&s, 0, sizeof(s));
	s.at_exit = exiting;
	if (origin && origin->sp) {
		s.from_caller = true;
		s.own_sp = origin->sp;
		memcpy(s.own_regs, origin->regs, sizeof(origin->regs));
	}
	if (!hl_scan_begin(&s))
		return false;
	hl_scan_classify(&s);
	consume(&s, arg);
	unstopped->count = s.unstopped;
	memcpy(unstopped->tids, s.unstopped_tids, sizeof(unstopped->tids));
	hl_scan_end(&s);
	return true;
}

/* ---- runtime internals ------------------------------------------------------- */

static void (*cxx_freeres)(void);
static void (*libc_freeres)(void);

static int find_libstdcxx(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(bool *)arg |= info->dlpi_name && strstr(info->dlpi_name, "/libstdc++.so");
	return 0;
}

/* Looked up only where they exist: a failed dlsym allocates its error
 * message, which would show in the counters valgrind's do not have. Looked
 * up at start (hl_leakcheck_init) and, for a libstdc++ loaded later, at
 * exit outside the guard: every dl* call frees the error message a failed
 * dlopen of the program left pending, and that free, made inside the guard,
 * was never sent, so the reporter kept the program's block live while the
 * hook had none to scan ("not scanned"). */
static void freeres_resolve(void)
{
	bool cxx = false;
	if (cxx_freeres && libc_freeres)
		return;
	if (!hl_walk_begin())
		return; /* no freeres: a fork child that must not walk */
	dl_iterate_phdr(find_libstdcxx, &cxx);
	hl_walk_end();
	if (cxx && !cxx_freeres)
		cxx_freeres = (void (*)(void))dlsym(RTLD_DEFAULT, "_ZN9__gnu_cxx9__freeresEv");
	if (!libc_freeres)
		libc_freeres = (void (*)(void))dlsym(RTLD_DEFAULT, "__libc_freeres");
}

/* glibc's list of open streams (libio), walked under its lock. */
extern FILE *_IO_list_all __attribute__((weak));
extern void _IO_list_lock(void) __attribute__((weak));
extern void _IO_list_unlock(void) __attribute__((weak));

/* _exit writes no stdio buffer; freeres would (_IO_cleanup): drop them. */
static void stdio_discard(void)
{
	if (&_IO_list_all == NULL || _IO_list_lock == NULL || _IO_list_unlock == NULL)
		return;
	_IO_list_lock();
	for (FILE *fp = _IO_list_all; fp; fp = fp->_chain)
		__fpurge(fp);
	_IO_list_unlock();
}

/* Under valgrind, exit() runs glibc's _IO_cleanup and then, at exit_group,
 * valgrind runs __libc_freeres, which runs _IO_cleanup again before it frees
 * the stream buffers set aside. The first pass marks every stream oriented
 * (_mode = -1), so the second unbuffers, and frees the buffer of, streams
 * never oriented too: a file read only by large fread()s. Our freeres runs
 * from an exit handler, before exit's own _IO_cleanup, so its pass would be
 * the first and keep that buffer "still reachable". Mark such streams as
 * exit's pass will mark them moments later, but only where unbuffering then
 * has no effect outside the process: no unread input (its sync would seek
 * the file back) and no unwritten output. */
static void stdio_orient_as_exit(void)
{
	if (&_IO_list_all == NULL || _IO_list_lock == NULL || _IO_list_unlock == NULL)
		return;
	_IO_list_lock();
	for (FILE *fp = _IO_list_all; fp; fp = fp->_chain)
		if (fp->_mode == 0 && fp->_IO_read_ptr == fp->_IO_read_end &&
		    fp->_IO_write_ptr == fp->_IO_write_base)
			fp->_mode = -1;
	_IO_list_unlock();
}

void hl_leakcheck_exit_prepare(unsigned how)
{
	exiting = true; /* the exit scan follows */
	hl_guard_enter();
	hl_exit_frame_find();
	hl_guard_leave();
	if (how == HL_EXIT_SIGNAL || !hl_options.freeres || !hl_options.scan ||
	    hl_world_thread_count() > 1)
		return;
	freeres_resolve(); /* not guarded: see there */
	if (how == HL_EXIT_UNDERSCORE && libc_freeres)
		stdio_discard();
	if (how == HL_EXIT_NORMAL && libc_freeres)
		stdio_orient_as_exit();
	if (cxx_freeres)
		cxx_freeres();
	if (libc_freeres)
		libc_freeres();
}

/* ---- the standalone report --------------------------------------------------- */

static void add_scanned(struct hl_scan *s, void *arg)
{
	struct hl_lossrec_table *t = arg;
	for (size_t i = 0; i < s->nblocks; i++) {
		struct hl_range *r = s->blocks[i];
		hl_lossrec_add(t, hl_range_stack_id(r), hl_scan_class(s, i),
			       hl_dtv_block_reported(hl_range_stack_id(r), hl_block_requested(r)),
			       hl_scan_indirect_bytes(s, i));
	}
}

static void add_walked(void *address, size_t size, uint32_t stack_id, unsigned kind, void *arg)
{
	(void)address;
	(void)kind;
	hl_lossrec_add(arg, stack_id, HL_CLASS_UNKNOWN, size, 0);
}

static const char *unscanned_why(unsigned how)
{
	if (!hl_options.scan)
		return "scan=0";
	switch (how) {
	case HL_EXIT_UNDERSCORE: return "the process ended through _exit";
	case HL_EXIT_ABORT: return "the process aborted";
	default: return "no memory for the scan";
	}
}

void hl_leakcheck_print_exit(int fd, unsigned how)
{
	int saved = errno;
	hl_guard_enter();
	struct hl_lossrec_table *t = hl_lossrec_new();
	struct hl_lossrec_report report = { .why = unscanned_why(how) };
	if (t == NULL)
		goto out_leave;
	hl_lock(&check_lock);
	if (hl_leakcheck_scans_at(how))
		report.scanned = hl_leakcheck_run(NULL, add_scanned, t, &report.unstopped);
	hl_unlock(&check_lock);
	if (!report.scanned)
		hl_heap_walk(add_walked, t);
	hl_lossrec_print(fd, t, NULL, &report);
	hl_shared_end_counts(report.scanned, t->class_bytes, t->class_blocks,
			     sizeof(t->class_bytes) / sizeof(t->class_bytes[0]));
	hl_lossrec_free(t);
out_leave:
	hl_guard_leave();
	errno = saved;
}

/* ---- on-demand checks -------------------------------------------------------- */

static int check_standalone(const struct hl_scan_origin *origin, uint32_t seq,
			    struct hl_unstopped *unstopped)
{
	struct hl_lossrec_table *t = hl_lossrec_new();
	if (t == NULL)
		return -1;
	if (!hl_leakcheck_run(origin, add_scanned, t, unstopped)) {
		hl_lossrec_free(t);
		return -1;
	}
	struct hl_lossrec_report report = { .scanned = true, .check_seq = seq,
					     .unstopped = *unstopped };
	hl_lossrec_print(hl_log_fd(), t, previous_check, &report);
	hl_lossrec_free(previous_check);
	previous_check = t;
	return 0;
}

static int check(const struct hl_scan_origin *origin, bool by_signal)
{
	int saved = errno;
	hl_checks_sweep(HL_CALL_CHECK); /* checks=full: guard bytes and quarantine */
	hl_guard_enter();
	hl_lock(&check_lock);
	uint32_t seq = ++check_seq;
	struct hl_unstopped unstopped = { 0 };
	int ret;
	if (hl_emit_is_live())
		ret = hl_emit_check(origin, seq, by_signal ? HL_CHECK_SIGNAL : 0) ? 0 : -1;
	else
		ret = check_standalone(origin, seq, &unstopped);
	hl_unlock(&check_lock);
	hl_guard_leave();
	errno = saved;
	return ret;
}

HL_API HL_NOINLINE int heapledger_check_leaks(void)
{
	struct hl_scan_origin origin;
	hl_scan_save_registers(origin.regs);
	origin.sp = (uintptr_t)__builtin_frame_address(0);
	return check(&origin, false);
}

/* ---- check_signal: a helper thread runs what the handler asks ---------------- */

static _Atomic int requests;  /* futex word: checks asked for by the signal */
static int helper_running;

static void check_signal_handler(int sig)
{
	(void)sig;
	int saved = errno;
	atomic_fetch_add(&requests, 1);
	syscall(SYS_futex, &requests, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = saved;
}

static void *helper_main(void *arg)
{
	(void)arg;
	int done = 0;
	sigset_t all;
	sigfillset(&all);
	sigdelset(&all, hl_world_stop_signal()); /* another check or the exit scan stops it */
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals are not ours */
	for (;;) {
		int asked = atomic_load(&requests);
		if (asked == done) {
			syscall(SYS_futex, &requests, FUTEX_WAIT_PRIVATE, asked, NULL, NULL, 0);
			continue;
		}
		done = asked;
		check(NULL, true);
	}
	return NULL;
}

static void start_helper(void)
{
	pthread_t thread;
	pthread_attr_t attr;
	hl_guard_enter(); /* its thread data is the hook's: not tracked */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	helper_running = pthread_create(&thread, &attr, helper_main, NULL) == 0;
	pthread_attr_destroy(&attr);
	hl_guard_leave();
}

void hl_leakcheck_init(void)
{
	if (hl_options.freeres && hl_options.scan)
		freeres_resolve();
	if (hl_options.check_signal == 0)
		return;
	start_helper();
	if (!helper_running) {
		hl_warn("cannot start the leak check thread; check_signal is ignored", NULL);
		return;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = check_signal_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction((int)hl_options.check_signal, &sa, NULL) != 0)
		hl_warn("cannot install the check_signal handler", NULL);
}

/* Only the forking thread exists in the child: a new helper, and the
 * previous checks' records were the parent's. */
void hl_leakcheck_fork_child(void)
{
	hl_lock_reset(&check_lock);
	previous_check = NULL;
	check_seq = 0;
	if (helper_running)
		start_helper();
}
