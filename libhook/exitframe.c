/*
 * libhook/exitframe.c: where the exiting thread's live stack begins, for
 * the exit scan.
 *
 * At exit the scan reads the exiting thread's stack from a stack pointer
 * up. From its own frame, it would also read the frames of exit() and of
 * the exit handlers, laid over the dead frames of main() and of whatever
 * main() called: slots they never wrote still hold the program's old
 * pointers, and blocks those name would look reachable (valgrind ignores
 * such slots because they are undefined; we cannot tell). So the scan
 * starts where the program called exit(): libunwind walks up from here to
 * the frame of libc's exit() (main's return calls it too), and the stack
 * pointer and callee-saved registers of its caller are the ones read.
 * Nothing is interposed, so no frame of ours sits in the program's stacks.
 * _exit and _Exit are interposed (exitpath.c): they name themselves
 * (hl_exit_frame_from) and the walk stops at their caller instead; so does
 * abort(), whose SIGABRT handler walks up through the signal frame to it.
 * After any other fatal signal the interrupted context is the frame
 * (hl_exit_frame_set).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "scan.h"
#include "track.h"

static uintptr_t exit_sp;
static uintptr_t exit_regs[HL_SCAN_REGS];
static const void *exit_fn; /* the function whose caller exits; NULL: libc's exit */
static uintptr_t inherited_sp; /* a clone() child: its parent's stack pointer then */

void hl_exit_frame_inherited(uintptr_t sp)
{
	inherited_sp = sp;
}

uintptr_t hl_exit_frame_inherited_sp(void)
{
	return inherited_sp;
}

void hl_exit_frame_from(const void *fn)
{
	exit_fn = fn;
}

bool hl_exit_frame_named(void)
{
	return exit_fn != NULL;
}

void hl_exit_frame_set(uintptr_t sp, const uintptr_t *regs, unsigned nregs)
{
	for (unsigned i = 0; i < HL_SCAN_REGS; i++)
		exit_regs[i] = i < nregs ? regs[i] : 0;
	exit_sp = sp;
}

/* libc's exit(), looked up at start: a dl* call at exit would free the
 * error message a failed dlopen of the program left pending, inside the
 * guard, where that free is not sent (leakcheck.c, freeres_resolve). */
static void *libc_exit;

void hl_exit_frame_init(void)
{
	libc_exit = dlsym(RTLD_DEFAULT, "exit");
}

/* Whether the cursor's frame runs fn: the procedure libunwind found for
 * its return address (one before it, as a call's) starts at fn. dladdr1
 * found fn's size by a linear search of its module's symbols: 38 us, every
 * exiting process (libc's exit among ~3,000 symbols). */
static bool frame_runs(unw_cursor_t *cursor, const void *fn)
{
	unw_proc_info_t pi;
	return unw_get_proc_info(cursor, &pi) == 0 && pi.start_ip == (unw_word_t)(uintptr_t)fn;
}

static void caller_registers(unw_cursor_t *cursor)
{
#if defined(__x86_64__)
	static const int regs[] = { UNW_X86_64_RBX, UNW_X86_64_RBP, UNW_X86_64_R12,
				    UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15 };
#elif defined(__aarch64__)
	static const int regs[] = { UNW_AARCH64_X19, UNW_AARCH64_X20, UNW_AARCH64_X21,
				    UNW_AARCH64_X22, UNW_AARCH64_X23, UNW_AARCH64_X24,
				    UNW_AARCH64_X25, UNW_AARCH64_X26 };
#else
	static const int regs[] = { UNW_REG_SP };
#endif
	for (unsigned i = 0; i < sizeof(regs) / sizeof(regs[0]) && i < 8; i++) {
		unw_word_t v = 0;
		unw_get_reg(cursor, regs[i], &v);
		exit_regs[i] = (uintptr_t)v;
	}
}

void hl_exit_frame_find(void)
{
	unw_context_t context;
	unw_cursor_t cursor;
	const void *fn = exit_fn ? exit_fn : libc_exit;
	if (exit_sp != 0)
		return; /* set from a signal's context */
	if (fn == NULL || !hl_walk_begin())
		return;
	hl_unwind_mask_begin_held(); /* its frames are new to libunwind */
	if (unw_getcontext(&context) != 0 || unw_init_local(&cursor, &context) != 0)
		goto out;
	for (unsigned depth = 0; depth < 64 && unw_step(&cursor) > 0; depth++) {
		if (!frame_runs(&cursor, fn))
			continue;
		if (unw_step(&cursor) <= 0)
			break;
		unw_word_t sp = 0;
		unw_get_reg(&cursor, UNW_REG_SP, &sp);
		exit_sp = (uintptr_t)sp;
		caller_registers(&cursor);
		break;
	}
out:
	hl_unwind_mask_end();
	hl_walk_end();
}

bool hl_exit_frame(uintptr_t *sp, uintptr_t *regs)
{
	if (exit_sp == 0)
		return false;
	*sp = exit_sp;
	for (unsigned i = 0; i < HL_SCAN_REGS; i++)
		regs[i] = exit_regs[i];
	return true;
}
