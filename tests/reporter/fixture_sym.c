/*
 * tests/reporter/fixture_sym.c: built with -g -O0; prints return addresses
 * whose source lines are marked below, its own load bias and path, for
 * test_symbolize.c. The markers (MARK-...) are found by the test in this file.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

static uintptr_t bias;

void *known_function(void);
void *outer_function(void);

__attribute__((noinline)) static void *where(void)
{
	return __builtin_return_address(0);
}

static inline __attribute__((always_inline)) void *inlined_helper(void)
{
	return where(); /* MARK-INLINED */
}

__attribute__((noinline)) void *known_function(void)
{
	return where(); /* MARK-DIRECT */
}

__attribute__((noinline)) void *outer_function(void)
{
	return inlined_helper(); /* MARK-CALLSITE */
}

static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	bias = info->dlpi_addr;
	return 1; /* the first object is the executable */
}

int main(void)
{
	char exe[4096];
	ssize_t n;
	FILE *f = fopen("/proc/self/exe", "r");

	if (f)
		fclose(f);
	dl_iterate_phdr(first_object, NULL);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	printf("%p %p %lx %s\n", known_function(), outer_function(),
	       (unsigned long)bias, exe);
	return 0;
}
