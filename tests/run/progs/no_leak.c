/* tests/run/progs/no_leak.c: uses every allocation function and frees all of
 * it, realloc(p, 0) included: no leak record may appear. It prints nothing:
 * stdio's buffer is allocated by libc and kept until exit (valgrind calls it
 * "still reachable", and so does the leak scan). */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	void *a = malloc(10), *b = calloc(3, 7), *c = NULL, *d = aligned_alloc(64, 128);
	void *e = memalign(32, 40), *f = valloc(100);
	char *s = strdup("clean");

	a = realloc(a, 1000);
	if (posix_memalign(&c, 128, 256))
		return 1;
	b = realloc(b, 0); /* frees b */
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
	free(f);
	free(s);
	return 0;
}
