/*
 * libhook/sigchain.c: the hook's place in front of the program's handlers
 * of a signal (SIGSEGV for guard-page faults, guardpage.c).
 *
 * A part of the hook that must see a signal first claims it with
 * hl_sigchain_add: its function runs before the program's handler and
 * returns true when the signal was its own (a fault on a guard page: the
 * program's handler never sees it). Every other delivery goes on exactly as
 * it would without the hook:
 *  - to the handler the program installed, whenever it installed it: while a
 *    signal is claimed, sigaction() and signal() record the program's action
 *    here instead of in the kernel, return its previous action as the kernel
 *    would, and the chain calls it with its own sa_mask, SA_NODEFER,
 *    SA_RESETHAND and SA_SIGINFO honoured (siglongjmp out of it works: the
 *    mask is the program's to restore);
 *  - when the program has none (SIG_DFL), to the default action: the
 *    "last" functions run (a crash report, a scan), the kernel's action is
 *    reset to SIG_DFL and a fault returns to its instruction, which faults
 *    again and ends the process as it would have (same signal, same exit
 *    status, same core dump); a sent signal is raised again;
 *  - SIG_IGN ignores a sent signal; a fault cannot be ignored (the kernel
 *    then applies the default action, so this does too).
 * The kernel action is installed with SA_ONSTACK (a program that handles
 * stack overflows on a sigaltstack still gets them) and SA_SIGINFO.
 *
 * A signal with only "last" functions (a crash report: fatal.c) is claimed
 * only while the program's action is SIG_DFL, since nothing of the hook's
 * would run otherwise: any other action the program sets goes to the kernel
 * as it is, and setting SIG_DFL again claims it again. So a SIG_IGN the
 * program sets or inherited (nohup, a shell's background job) is the
 * kernel's and survives exec, as it would without the hook.
 *
 * Invariants: a claimed signal's kernel action is chain_handler until the
 * default action is taken; program_action[sig] is what the program last
 * asked for (what the kernel had when the signal was claimed, at first).
 * An unclaimed signal's action is the kernel's.
 * Writes take chain_lock; the handler reads without it (a handler cannot
 * wait for a lock its own thread may hold), so an action being replaced
 * while its signal arrives is the old or the new one, as with the kernel.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "internal.h"
#include "lock.h"
#include "sigchain.h"

#define SIGNALS_MAX 65
#define STAGE_FNS_MAX 4

struct chain {
	hl_sigchain_fn first[STAGE_FNS_MAX]; /* before the program's handler */
	hl_sigchain_fn last[STAGE_FNS_MAX];  /* before the default action */
	unsigned nfirst, nlast;
	bool claimed;                        /* chain_handler is the kernel's action */
	struct sigaction program_action;     /* what the program asked for */
};

static struct hl_lock chain_lock = HL_LOCK_INIT;
static struct chain chains[SIGNALS_MAX];
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
/* libc's own name for sigaction, for when dlsym cannot find the next one */
extern int __sigaction(int, const struct sigaction *, struct sigaction *);

static int kernel_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (real_sigaction == NULL) {
		void *next = dlsym(RTLD_NEXT, "sigaction");
		real_sigaction = next ? (int (*)(int, const struct sigaction *,
						 struct sigaction *))next
				      : __sigaction;
	}
	return real_sigaction(sig, act, old);
}

static bool is_fault(const siginfo_t *info)
{
	return info != NULL && info->si_code > 0; /* sent by the kernel for an instruction */
}

/* The program's handler, as the kernel would have run it. */
static void call_program(int sig, siginfo_t *info, void *context, struct sigaction *action)
{
	struct sigaction a = *action;
	sigset_t mask = a.sa_mask, old;
	if (!(a.sa_flags & SA_NODEFER))
		sigaddset(&mask, sig);
	if (a.sa_flags & SA_RESETHAND) {
		action->sa_handler = SIG_DFL;
		action->sa_flags &= ~SA_SIGINFO;
	}
	pthread_sigmask(SIG_BLOCK, &mask, &old);
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, info, context);
	else
		a.sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void hl_sigchain_release(int sig)
{
	struct sigaction dfl;
	if (sig <= 0 || sig >= SIGNALS_MAX)
		return;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	chains[sig].claimed = false;
	kernel_sigaction(sig, &dfl, NULL);
}

/* No handler of the program's: the default action, after the last stage. */
static void take_default(int sig, siginfo_t *info, void *context, struct chain *c)
{
	for (unsigned i = 0; i < c->nlast; i++)
		if (c->last[i](sig, info, context))
			return;
	hl_sigchain_release(sig);
	if (!is_fault(info))
		raise(sig); /* blocked until this handler returns, then delivered */
}

static void chain_handler(int sig, siginfo_t *info, void *context)
{
	int saved = errno;
	struct chain *c = &chains[sig];
	for (unsigned i = 0; i < c->nfirst; i++)
		if (c->first[i](sig, info, context))
			goto out;
	struct sigaction *action = &c->program_action;
	if (action->sa_handler == SIG_IGN && !is_fault(info))
		goto out;
	if (action->sa_handler == SIG_DFL || action->sa_handler == SIG_IGN)
		take_default(sig, info, context, c);
	else
		call_program(sig, info, context, action);
out:
	errno = saved;
}

static bool is_default(const struct sigaction *act)
{
	return act->sa_handler == SIG_DFL; /* the kernel's test, SA_SIGINFO or not */
}

/* True if the kernel's action for sig is SIG_DFL (or cannot be read). */
static bool kernel_is_default(int sig)
{
	struct sigaction now;
	return kernel_sigaction(sig, NULL, &now) != 0 || is_default(&now);
}

/* Puts chain_handler in front of the program's action for sig. */
static bool claim_locked(int sig)
{
	hl_assert_held(&chain_lock);
	struct chain *c = &chains[sig];
	if (c->claimed)
		return true;
	struct sigaction act, old;
	memset(&act, 0, sizeof(act));
	act.sa_sigaction = chain_handler;
	act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&act.sa_mask);
	if (kernel_sigaction(sig, &act, &old) != 0)
		return false;
	if (old.sa_sigaction != chain_handler)
		c->program_action = old;
	c->claimed = true;
	return true;
}

bool hl_sigchain_add(int sig, enum hl_sigchain_stage stage, hl_sigchain_fn fn)
{
	if (sig <= 0 || sig >= SIGNALS_MAX)
		return false;
	struct chain *c = &chains[sig];
	bool ok = false;
	hl_lock(&chain_lock);
	if (stage == HL_SIGCHAIN_FIRST && c->nfirst < STAGE_FNS_MAX)
		c->first[c->nfirst++] = fn;
	else if (stage == HL_SIGCHAIN_LAST && c->nlast < STAGE_FNS_MAX)
		c->last[c->nlast++] = fn;
	else
		goto out_unlock;
	ok = c->nfirst == 0 && !kernel_is_default(sig) ? true : claim_locked(sig);
out_unlock:
	hl_unlock(&chain_lock);
	return ok;
}

bool hl_sigchain_reaches_default(int sig)
{
	return sig > 0 && sig < SIGNALS_MAX && chains[sig].claimed &&
	       is_default(&chains[sig].program_action);
}

void hl_sigchain_init(void)
{
	struct sigaction probe;
	kernel_sigaction(SIGSEGV, NULL, &probe); /* resolves the real sigaction early */
}

/* ---- the program's side: sigaction() and signal() --------------------------- */

#ifndef HL_UNIT_TEST /* a unit test program keeps libc's (and a sanitizer's) */

/* True if the chain has a say in sig's action: claimed, or waiting for
 * the program to set SIG_DFL again (a signal with only last functions). */
static bool is_chained(int sig)
{
	return sig > 0 && sig < SIGNALS_MAX && (chains[sig].claimed || chains[sig].nlast > 0);
}

/* A signal with last functions only, unclaimed: the program's action is the
 * kernel's; SIG_DFL claims it again (the program sees its previous action). */
static int set_unclaimed_locked(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct chain *c = &chains[sig];
	struct sigaction previous;
	if (act == NULL || !is_default(act) || c->nfirst > 0)
		return kernel_sigaction(sig, act, old);
	if (kernel_sigaction(sig, NULL, &previous) != 0 || !claim_locked(sig))
		return kernel_sigaction(sig, act, old);
	c->program_action = *act;
	if (old != NULL)
		*old = previous;
	return 0;
}

HL_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int ret = 0;
	if (!is_chained(sig))
		return kernel_sigaction(sig, act, old);
	hl_lock(&chain_lock);
	struct chain *c = &chains[sig];
	if (!c->claimed) {
		ret = set_unclaimed_locked(sig, act, old);
		goto out_unlock;
	}
	if (act != NULL && c->nfirst == 0 && !is_default(act)) {
		/* Nothing of ours runs under the program's action: the kernel's. */
		ret = kernel_sigaction(sig, act, NULL);
		if (ret != 0)
			goto out_unlock;
		c->claimed = false;
	}
	if (old != NULL)
		*old = c->program_action;
	if (act != NULL)
		c->program_action = *act;
out_unlock:
	hl_unlock(&chain_lock);
	return ret;
}


static sighandler_t set_handler(int sig, sighandler_t handler, int flags)
{
	struct sigaction act, old;
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	act.sa_flags = flags;
	sigemptyset(&act.sa_mask);
	if (sigaction(sig, &act, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* glibc's signal() is BSD's (handler kept, calls restarted); sysv_signal()
 * resets the handler and does not block the signal in it. */
HL_API sighandler_t signal(int sig, sighandler_t handler)
{
	if (!is_chained(sig)) {
		/* libc's own, for what it does with bad numbers too */
		static sighandler_t (*real)(int, sighandler_t);
		if (real == NULL)
			real = (sighandler_t(*)(int, sighandler_t))dlsym(RTLD_NEXT, "signal");
		if (real != NULL)
			return real(sig, handler);
	}
	return set_handler(sig, handler, SA_RESTART);
}

HL_API sighandler_t bsd_signal(int sig, sighandler_t handler);
HL_API sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	return signal(sig, handler);
}

HL_API sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	if (!is_chained(sig)) {
		static sighandler_t (*real)(int, sighandler_t);
		if (real == NULL)
			real = (sighandler_t(*)(int, sighandler_t))dlsym(RTLD_NEXT, "sysv_signal");
		if (real != NULL)
			return real(sig, handler);
	}
	return set_handler(sig, handler, SA_RESETHAND | SA_NODEFER);
}

#endif /* HL_UNIT_TEST */
