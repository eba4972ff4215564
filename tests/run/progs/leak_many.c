/* tests/run/progs/leak_many.c: the same site leaks 1000 times; one record. */
#include <stdlib.h>

void leak_many(void);
__attribute__((noinline)) void leak_many(void)
{
	for (int i = 0; i < 1000; i++) {
		void *volatile p = malloc(16); /* LEAK-MANY */

		p = NULL;
	}
}

int main(void)
{
	leak_many();
	return 0;
}
