/*
 * libhook/sigchain.h: signals the hook sees before the program's handlers
 * (sigchain.c says how the program's own handlers keep working).
 */
#ifndef HL_SIGCHAIN_H
#define HL_SIGCHAIN_H

#include <signal.h>
#include <stdbool.h>

enum hl_sigchain_stage {
	HL_SIGCHAIN_FIRST, /* before the program's handler, on every delivery */
	HL_SIGCHAIN_LAST,  /* only when the program has none, before the default action */
};
/* Returns true when it dealt with the signal: nothing after it runs and the
 * interrupted code resumes (a FIRST function that fixed the fault's cause). */
typedef bool (*hl_sigchain_fn)(int sig, siginfo_t *info, void *context);

/* Runs fn for sig at `stage` from now on (at most 4 per stage and signal);
 * false if sig cannot be handled or the table is full. A signal with LAST
 * functions only is claimed while the program's action is SIG_DFL (then
 * or later): a SIG_IGN it inherited stays the kernel's. */
bool hl_sigchain_add(int sig, enum hl_sigchain_stage stage, hl_sigchain_fn fn);
/* True if a delivery of sig now would reach the LAST functions: the chain
 * holds it and the program's action is SIG_DFL. */
bool hl_sigchain_reaches_default(int sig);
/* Puts SIG_DFL in the kernel now and lets go of sig (the chain's own way to
 * the default action; also for a watchdog that must end the process). */
void hl_sigchain_release(int sig);
/* Resolves libc's sigaction while that is safe (the constructor). */
void hl_sigchain_init(void);

#endif /* HL_SIGCHAIN_H */
