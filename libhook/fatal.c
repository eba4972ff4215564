/*
 * libhook/fatal.c: signals whose default action ends the process (SIGSEGV,
 * SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGHUP, ...).
 *
 * valgrind scans after such a signal and says where it arrived ("Process
 * terminating with default action of signal 11 (SIGSEGV)", "Access not
 * within mapped region at address 0x0", the stack). So the hook keeps a
 * handler on each of them that the program leaves at its default. The
 * handler notes the signal, its fault address and the thread's stack (the
 * interrupted frame first), runs the exit report with the scan once (the
 * exiting thread read from the interrupted context), then puts the default
 * action back and lets the signal take its course: a fault returns and the
 * instruction faults again, anything else is sent again to the thread, so
 * the exit status and the core dump are the ones the program would have
 * had.
 *
 * Invariants:
 *  - sigchain.c is the one place that stands between the program and the
 *    kernel's signal actions: each of these signals gets a "last" function
 *    there, which runs only when the program's action is SIG_DFL. The
 *    program's own handlers keep priority and the program never sees ours
 *    (sigaction answers SIG_DFL); a SIG_IGN it set or inherited (a shell's
 *    background job, nohup) stays the kernel's. The chain puts the default
 *    back after us and lets the signal take its course.
 *  - A part of the hook that must see a fault first (guardpage.c) is a
 *    "first" function in the same chain: it runs before this report.
 *  - One report per process: a second thread that gets a fatal signal
 *    meanwhile waits until the first has reported, then goes on.
 *  - Bounded: a watchdog (a per-thread timer, HL_FATAL_WATCHDOG_S) ends the
 *    process with the same signal if the report hangs (the crashed thread
 *    may hold a lock the scan needs: libc's loader lock, say). A signal that
 *    arrived inside the hook itself (its locks may be held) is not
 *    reported: the process ends as it would have.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "fatal.h"
#include "scan.h"
#include "sigchain.h"
#include "track.h"

#define HL_FATAL_WATCHDOG_S 10
#define HL_WATCHDOG_SIGNAL (SIGRTMAX - 3) /* beside threads.c's stop signal */

/* Default action "terminate" or "core" (signal(7)); SIGKILL cannot be caught. */
static const int fatal_signals[] = {
	SIGHUP,  SIGINT,  SIGQUIT,  SIGILL,    SIGTRAP, SIGABRT, SIGBUS, SIGFPE,
	SIGUSR1, SIGSEGV, SIGUSR2,  SIGPIPE,   SIGALRM, SIGTERM, SIGXCPU, SIGXFSZ,
	SIGVTALRM, SIGPROF, SIGIO,  SIGPWR,    SIGSYS,
#ifdef SIGSTKFLT
	SIGSTKFLT,
#endif
};

static _Atomic int reporting;        /* 0 none, 1 reporting, 2 reported */
static _Atomic pid_t reporter_tid;   /* the thread reporting */
static struct hl_fatal_note note;
static int watchdog_for;             /* the signal being reported */

static pid_t own_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

bool hl_fatal_handles(int sig)
{
	return hl_options.scan && hl_sigchain_reaches_default(sig);
}

const struct hl_fatal_note *hl_fatal_current(void)
{
	return note.signal ? &note : NULL;
}

/* ---- the report ----------------------------------------------------------- */

static void line_start(struct hl_out *out)
{
	hl_out_str(out, "==");
	hl_out_u64(out, (uint64_t)getpid());
	hl_out_str(out, "== ");
}

void hl_fatal_print(int fd)
{
	struct hl_out out;
	const char *abbrev = note.signal ? sigabbrev_np(note.signal) : NULL;
	const char *fault = hl_wire_fault_words((uint32_t)note.signal, note.code);
	if (note.signal == 0)
		return;
	hl_out_init(&out, fd);
	line_start(&out);
	hl_out_str(&out, "\n");
	line_start(&out);
	hl_out_str(&out, "Process terminating with default action of signal ");
	hl_out_u64(&out, (uint64_t)note.signal);
	hl_out_str(&out, " (SIG");
	hl_out_str(&out, abbrev ? abbrev : "?");
	hl_out_str(&out, ")\n");
	if (fault) {
		line_start(&out);
		hl_out_str(&out, " ");
		hl_out_str(&out, fault);
		hl_out_str(&out, " at address ");
		hl_out_hex(&out, note.address);
		hl_out_str(&out, "\n");
	}
	hl_track_print_stack(&out, note.stack_id);
	hl_out_flush(&out);
}

static bool is_fault(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
}

static uintptr_t context_ip(const ucontext_t *uc)
{
#if defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0;
#endif
}

/* The interrupted thread's stack, its frame first. Frame 0 is stored one
 * past the interrupted instruction: readers look a frame up at pc - 1 (a
 * return address), which then names the faulting line. */
static uint32_t interrupted_stack(ucontext_t *uc)
{
	uint64_t frames[HL_WIRE_MAX_FRAMES];
	unsigned depth = 0, max = hl_options.stack_depth ? hl_options.stack_depth : 12;
	unw_cursor_t cursor;
	if (max > HL_WIRE_MAX_FRAMES)
		max = HL_WIRE_MAX_FRAMES;
	if (!hl_walk_begin())
		return 0;
	if (unw_init_local2(&cursor, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0) {
		do {
			unw_word_t ip = 0;
			if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0)
				break;
			if (depth && hl_stack_is_own((uintptr_t)ip))
				continue; /* our abort(): valgrind shows libc's, then its caller */
			frames[depth] = depth == 0 ? (uint64_t)ip + 1 : (uint64_t)ip;
			depth++;
		} while (depth < max && unw_step(&cursor) > 0);
	}
	hl_walk_end();
	return depth ? hl_stack_intern(frames, depth, depth == max) : 0;
}

static void exit_frame_from_context(const ucontext_t *uc)
{
	uintptr_t regs[HL_SCAN_REGS] = { 0 };
	uintptr_t sp = 0;
#if defined(__x86_64__)
	for (unsigned i = 0; i < NGREG && i < HL_SCAN_REGS; i++)
		regs[i] = (uintptr_t)uc->uc_mcontext.gregs[i];
	/* From the stack pointer itself, as valgrind reads it: below it lie the
	 * dead frames of calls made before the signal (with the red zone read,
	 * a block leaked just before the crash looked still reachable). */
	sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
	for (unsigned i = 0; i < 31 && i < HL_SCAN_REGS; i++)
		regs[i] = (uintptr_t)uc->uc_mcontext.regs[i];
	sp = (uintptr_t)uc->uc_mcontext.sp;
#endif
	if (sp)
		hl_exit_frame_set(sp, regs, HL_SCAN_REGS);
}

/* The default action, now, from inside a handler: for the watchdog. */
static __attribute__((noreturn)) void die_by(int sig)
{
	sigset_t set;
	hl_sigchain_release(sig);
	sigemptyset(&set);
	sigaddset(&set, sig);
	syscall(SYS_tgkill, getpid(), own_tid(), sig);
	syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &set, NULL, _NSIG / 8);
	hl_exit_group(128 + sig);
}

static void watchdog_handler(int sig, siginfo_t *info, void *context)
{
	(void)sig;
	(void)info;
	(void)context;
	die_by(watchdog_for);
}

/* A timer that sends HL_WATCHDOG_SIGNAL to this thread; -1 if none. */
static int watchdog_arm(int sig)
{
	struct sigaction sa;
	struct sigevent ev;
	struct itimerspec when = { .it_value = { HL_FATAL_WATCHDOG_S, 0 } };
	sigset_t set;
	int timer = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = watchdog_handler;
	sa.sa_flags = SA_SIGINFO;
	sigfillset(&sa.sa_mask);
	watchdog_for = sig;
	if (sigaction(HL_WATCHDOG_SIGNAL, &sa, NULL) != 0) /* the hook's own signal */
		return -1;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = HL_WATCHDOG_SIGNAL;
	ev._sigev_un._tid = own_tid(); /* sigev_notify_thread_id: glibc 2.35 and later */
	if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &timer) != 0)
		return -1;
	syscall(SYS_timer_settime, timer, 0, &when, NULL);
	sigemptyset(&set);
	sigaddset(&set, HL_WATCHDOG_SIGNAL);
	syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &set, NULL, _NSIG / 8);
	return timer;
}

static void watchdog_disarm(int timer)
{
	if (timer >= 0)
		syscall(SYS_timer_delete, timer);
}

static void fatal_report(int sig, siginfo_t *info, ucontext_t *uc)
{
	if (hl_process_kind() == HL_PROCESS_SHARER || hl_guard_depth > 0 ||
	    hl_stack_is_own(context_ip(uc)))
		return; /* a vfork child, or inside the hook: its locks may be held */
	int timer = watchdog_arm(sig);
	hl_guard_enter();
	note.code = info->si_code;
	note.address = is_fault(sig) ? (uint64_t)(uintptr_t)info->si_addr : 0;
	note.stack_id = interrupted_stack(uc);
	note.signal = sig;
	struct hl_rec_fatal rec = { .h = hl_wire_hdr(HL_REC_FATAL, 0, sizeof(rec)),
				    .signal = (uint32_t)sig, .code = note.code,
				    .address = note.address, .stack_id = note.stack_id,
				    .tid = (uint32_t)own_tid(), .ticks = hl_ticks() };
	if (hl_emit_is_live())
		hl_emit_record(&rec, sizeof(rec));
	hl_guard_leave();
	/* abort() named itself: the scan starts at its caller, found by
	 * walking up through this signal frame (exitframe.c). */
	if (!(sig == SIGABRT && hl_exit_frame_named()))
		exit_frame_from_context(uc);
	hl_exit_report(HL_EXIT_SIGNAL, sig);
	watchdog_disarm(timer);
}

/* The other fatal signals wait while this thread reports (they end the
 * process when the handler returns): one arriving on this thread would
 * otherwise wait for this very report. The scan's stop signal and the
 * watchdog's stay open. The chain's return restores the mask. */
static void block_fatal_signals(int sig)
{
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		if (fatal_signals[i] != sig)
			sigaddset(&set, fatal_signals[i]);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* The chain's last function: the program left sig at its default. Returns
 * false, so the chain then takes the default action. */
static bool on_fatal(int sig, siginfo_t *info, void *context)
{
	int expected = 0;
	pid_t self = own_tid();
	if (atomic_load(&reporter_tid) == self)
		return false; /* a fault inside our own report: end now */
	if (atomic_compare_exchange_strong(&reporting, &expected, 1)) {
		atomic_store(&reporter_tid, self);
		block_fatal_signals(sig);
		fatal_report(sig, info, context);
		atomic_store(&reporting, 2);
	} else {
		/* Another thread reports, and will end the process. */
		struct timespec ms = { 0, 1000000 };
		while (atomic_load(&reporting) == 1)
			nanosleep(&ms, NULL);
	}
	return false;
}

void hl_fatal_init(void)
{
	if (!hl_options.scan)
		return;
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		hl_sigchain_add(fatal_signals[i], HL_SIGCHAIN_LAST, on_fatal);
}
