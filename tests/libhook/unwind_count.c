/* tests/libhook/unwind_count.c: a preload placed before libheapledger.so
 * that counts the hook's libunwind walks (unw_backtrace, or a cursor's
 * unw_init_local2 for a thread's first walks: every capture the stack memo
 * does not answer makes one) and writes the count to $UNWIND_COUNT_FILE at
 * exit. check_memo_walks.sh reads it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int unw_backtrace(void **buffer, int size);
int _ULx86_64_init_local2(void *cursor, void *context, int flag);

static atomic_ulong walks;

/* A tail call: a frame of this file's left on the stack would be the first
 * frame of every stack libunwind walks, and no stack the memo keeps would
 * match the program's again. */
int unw_backtrace(void **buffer, int size)
{
	static int (*real)(void **, int);
	if (real == NULL)
		real = (int (*)(void **, int))dlsym(RTLD_NEXT, "unw_backtrace");
	atomic_fetch_add(&walks, 1);
	return real ? real(buffer, size) : 0;
}

static int (*real_init_local2)(void *, void *, int);

/* Looked up before the hook's first capture: dlsym inside one allocates. */
__attribute__((constructor)) static void find_real(void)
{
	real_init_local2 = (int (*)(void *, void *, int))dlsym(RTLD_NEXT, "_ULx86_64_init_local2");
}

int _ULx86_64_init_local2(void *cursor, void *context, int flag)
{
	atomic_fetch_add(&walks, 1);
	return real_init_local2 ? real_init_local2(cursor, context, flag) : -1;
}

__attribute__((destructor)) static void report(void)
{
	const char *path = getenv("UNWIND_COUNT_FILE");
	char line[32];
	if (path == NULL)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	int n = snprintf(line, sizeof(line), "%lu\n", atomic_load(&walks));
	if (n > 0 && write(fd, line, (size_t)n) != n)
		n = 0;
	close(fd);
}
