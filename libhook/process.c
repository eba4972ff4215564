/*
 * libhook/process.c: is the caller the process the hook's state belongs to?
 *
 * fork() runs our atfork handlers, which give the child its own state. Two
 * other ways of making a process do not:
 *  - vfork() (and clone with CLONE_VM): the child runs in the parent's
 *    memory until it execs or exits. Whatever the hook does there happens to
 *    the parent: its _exit(9) would send the parent's EXIT ("exited 9") and
 *    end the parent's tracking. Such a child must leave the state alone.
 *  - a raw clone() without CLONE_VM (glibc's clone(fn, stack, SIGCHLD, arg),
 *    or the system call itself): the child has a copy of the memory, the
 *    parent's connection included, and no atfork handler ran. Its writes
 *    would land in the parent's stream. It must become a fork child first.
 * The owner is recorded by the raw pid (getpid(2), not a cached value), and a
 * page marked MADV_WIPEONFORK tells the two apart: the kernel zeroes it in a
 * child with its own memory, and a child sharing the memory sees the owner's
 * mark. Without MADV_WIPEONFORK (Linux < 4.14) every stranger is taken for a
 * sharer, the safe choice: the state is left alone.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

static pid_t owner_pid;
static _Atomic uint64_t *mark; /* on a wipe-on-fork page; 1 in the owner */
static bool mark_works;

static pid_t raw_getpid(void)
{
	return (pid_t)syscall(SYS_getpid);
}

void hl_process_own(void)
{
	owner_pid = raw_getpid();
	if (mark == NULL) {
		size_t page = hl_os_page_size();
		mark = hl_os_map(page);
		mark_works = mark != NULL && hl_os_wipe_on_fork((void *)mark, page);
	}
	if (mark != NULL)
		atomic_store_explicit(mark, 1, memory_order_relaxed);
}

void *hl_process_own_page(void)
{
	return mark_works ? (char *)(uintptr_t)mark + 64 : NULL;
}

bool hl_process_is_owner(void)
{
	return owner_pid == 0 || raw_getpid() == owner_pid;
}

enum hl_process_kind hl_process_kind(void)
{
	if (hl_process_is_owner())
		return HL_PROCESS_OWNER;
	if (mark_works && atomic_load_explicit(mark, memory_order_relaxed) == 0)
		return HL_PROCESS_COPY;
	return HL_PROCESS_SHARER;
}
