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
 * false if sig cannot be handled or the table is full. */
bool hl_sigchain_add(int sig, enum hl_sigchain_stage stage, hl_sigchain_fn fn);
/* Resolves libc's sigaction while that is safe (the constructor). */
void hl_sigchain_init(void);

#endif /* HL_SIGCHAIN_H */
