/*
 * libhook/vfork.c: vfork() runs as fork() under track_fds, as valgrind runs
 * every vfork.
 *
 * valgrind gives a vfork child memory of its own (its parent resumes at
 * once), so the child is a process that lists its own descriptors at exit:
 * those it inherited, with the parent's stacks, and those it made itself,
 * before an _exit or a failed exec ("FILE DESCRIPTORS: N open (S std) at
 * exit."). A real vfork child runs in its parent's memory, where the hook
 * must leave the descriptor table and the connection alone (process.c), so
 * it could list nothing. With track_fds on, vfork is therefore fork: the
 * child is a fork child (FORK, HELLO origin FORK, its own copy of the
 * table) and reports as any other process. A program that relies on the
 * child writing its parent's memory sees what it sees under valgrind.
 *
 * With the option off vfork is libc's, reached by a jump, not a call: a
 * vfork child returns from the function its parent called, so no frame of
 * ours may lie between the program and libc's vfork (the child would pop it
 * and its later calls overwrite what the parent returns through); the one
 * call before the jump (hl_vfork_prepare) has returned by then. Other
 * architectures keep libc's vfork, not interposed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>

#include "emit_int.h"
#include "fdtrack.h"

/* Where the program's vfork() goes: libc's vfork, or hl_vfork_as_fork. Set once
 * at start; before that (NULL) a call runs as fork, which POSIX allows. */
void *hl_vfork_target;

/* Reached by a jump from vfork(), with the program's return address on the
 * stack: an ordinary call of fork() (exitpath.c's: FORK record, atfork
 * handlers). */
pid_t hl_vfork_as_fork(void);
__attribute__((used)) pid_t hl_vfork_as_fork(void)
{
	return fork();
}

/* Called by vfork() before its jump, in the parent: a fork child's deferred
 * snapshot (wire.h, HL_HOOK_FORK_SNAPSHOT) goes out now, as a vfork child,
 * running in our memory, cannot send it and must not walk our heap while
 * it changes it. Returns before the jump, so no frame of ours is left. */
void hl_vfork_prepare(void);
__attribute__((used)) void hl_vfork_prepare(void)
{
	if (hl_emit_is_deferred())
		hl_emit_fork_resolve(NULL);
}

void hl_vfork_init(void)
{
	void *real = hl_fds_on() ? NULL : dlsym(RTLD_NEXT, "vfork");
	__atomic_store_n(&hl_vfork_target, real ? real : (void *)hl_vfork_as_fork,
			 __ATOMIC_RELEASE);
}

#if !defined(HL_UNIT_TEST) && defined(__x86_64__)
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	"vfork:\n"
	"\t.cfi_startproc\n"
	"\tendbr64\n"
	"\tsubq $8, %rsp\n" /* the call's stack aligned to 16 */
	"\t.cfi_adjust_cfa_offset 8\n"
	"\tcall hl_vfork_prepare\n"
	"\taddq $8, %rsp\n"
	"\t.cfi_adjust_cfa_offset -8\n"
	"\tmovq hl_vfork_target(%rip), %rax\n"
	"\ttestq %rax, %rax\n"
	"\tjz 1f\n"
	"\tjmp *%rax\n"
	"1:\tjmp hl_vfork_as_fork\n"
	"\t.cfi_endproc\n"
	".size vfork, .-vfork\n");
#endif
