/* tests/run/progs/leak_choice.c: leaks from the sites its arguments name,
 * so runs of one program can leak at different sites (leak history, diff,
 * gates, suppressions). Each argument is one of:
 *   a b c      16, 32 or 48 bytes from leak_a, leak_b or leak_c (1 block)
 *   s          a strdup'd string from leak_strdup (allocator wrapper frame)
 *   many       10 blocks of 100 bytes from leak_many
 *   exit=N     exit status N
 * Built a second time with -DHL_SHIFTED, which moves every function to other
 * addresses and lines: a rebuild whose leak sites are the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HL_SHIFTED
/* Code and lines that only the shifted build has. */
int shift_padding(int x);
__attribute__((noinline)) int shift_padding(int x)
{
	return x * 3 + 1;
}
/* ... and other line numbers for everything below. */
#line 300
#endif

void *leak_a(void);
void *leak_b(void);
void *leak_c(void);
void *leak_strdup(void);
void leak_many(void);
__attribute__((noinline)) void *leak_a(void) { return malloc(16); /* LEAK-A */ }
__attribute__((noinline)) void *leak_b(void) { return malloc(32); /* LEAK-B */ }
__attribute__((noinline)) void *leak_c(void) { return malloc(48); /* LEAK-C */ }
__attribute__((noinline)) void *leak_strdup(void) { return strdup("leak_choice"); }
__attribute__((noinline)) void leak_many(void)
{
	for (int i = 0; i < 10; i++) {
		void *volatile p = malloc(100);

		(void)p;
	}
}

int main(int argc, char **argv)
{
	int status = 0;

	for (int i = 1; i < argc; i++) {
		void *volatile p = NULL;

		if (!strcmp(argv[i], "a"))
			p = leak_a();
		else if (!strcmp(argv[i], "b"))
			p = leak_b();
		else if (!strcmp(argv[i], "c"))
			p = leak_c();
		else if (!strcmp(argv[i], "s"))
			p = leak_strdup();
		else if (!strcmp(argv[i], "many"))
			leak_many();
		else if (!strncmp(argv[i], "exit=", 5))
			status = atoi(argv[i] + 5);
		(void)p;
	}
#ifdef HL_SHIFTED
	status += shift_padding(0) - 1;
#endif
	return status;
}
