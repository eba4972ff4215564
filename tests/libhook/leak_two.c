/*
 * tests/libhook/leak_two.c: leaks from two functions, for check_leak_two.sh.
 * Built with -rdynamic so the hook's dladdr can name them.
 */
#include <stdlib.h>
#include <string.h>

void *leak_from_alpha(size_t n);
char *leak_from_beta(void);

__attribute__((noinline)) void *leak_from_alpha(size_t n)
{
	void *p = malloc(n);
	memset(p, 'a', n);
	return p;
}

__attribute__((noinline)) char *leak_from_beta(void)
{
	return strdup("a string leaked through strdup, 48 bytes long..");
}

int main(void)
{
	volatile int five = 5; /* one call site: no unrolling */
	for (int i = 0; i < five; i++)
		leak_from_alpha(1000);
	for (int i = 0; i < 4; i++) {
		void *p = malloc(64); /* not a leak */
		free(p);
	}
	return leak_from_beta() == NULL;
}
