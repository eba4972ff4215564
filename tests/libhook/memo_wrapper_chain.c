/* tests/libhook/memo_wrapper_chain.c: 20,000 allocations, round robin from
 * eight callers through one chain of two wrappers: eight stacks that share
 * their two innermost return addresses and where those lie, as every
 * allocation through SQLite's or a pool's wrappers at one depth does. More
 * stacks than one set of the stack memo holds: a memo that tells them apart
 * by those two alone keeps replacing one by another, a libunwind walk each. */
#include <stdlib.h>

#define CALLERS 8

__attribute__((noinline)) static void *inner_wrapper(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory"); /* not a tail call */
	return p;
}

__attribute__((noinline)) static void *outer_wrapper(size_t n)
{
	void *p = inner_wrapper(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

/* Each adds its own constant: no two are the same code, which the compiler
 * could fold into one function (one stack). */
#define CALLER(k)                                                              \
	__attribute__((noinline)) static void *caller##k(size_t n)             \
	{                                                                      \
		void *p = outer_wrapper(n + k);                                \
		__asm__ volatile("" : : "r"(p) : "memory");                    \
		return p;                                                      \
	}
CALLER(0)
CALLER(1)
CALLER(2)
CALLER(3)
CALLER(4)
CALLER(5)
CALLER(6)
CALLER(7)

static void *(*const callers[CALLERS])(size_t) = {
	caller0, caller1, caller2, caller3, caller4, caller5, caller6, caller7,
};

int main(void)
{
	int made = 0;
	for (int i = 0; i < 20000; i++) {
		void *p = callers[i % CALLERS](16);
		made += p != NULL;
		free(p);
	}
	return made == 20000 ? 0 : 1;
}
