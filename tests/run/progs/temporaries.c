/*
 * tests/run/progs/temporaries.c: allocation patterns whose temporary
 * allocations (freed right after being allocated, no other allocation or
 * free of the same thread in between) are known exactly. Each site has its
 * own block size, so the test finds its stack row by allocations and bytes:
 *   temp_site     100 x 24 bytes, each freed at once:        100 temporary
 *   pair_site      50 x (40, 56), interleaved:                 0 temporary
 *   realloc_site   30 x 72 then realloc to 4096+i, freed:      30 + 30
 *   thread_site    2 threads x 200 x 88 bytes, freed at once: 400 (per thread)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *volatile sink;

__attribute__((noinline)) static void temp_site(void)
{
	for (int i = 0; i < 100; i++) {
		char *p = malloc(24);
		sink = p;
		free(p);
	}
}

__attribute__((noinline)) static void pair_site(void)
{
	for (int i = 0; i < 50; i++) {
		char *a = malloc(40), *b = malloc(56);
		sink = a;
		sink = b;
		free(a);
		free(b);
	}
}

__attribute__((noinline)) static void realloc_site(void)
{
	for (int i = 0; i < 30; i++) {
		char *p = malloc(72);
		sink = p;
		p = realloc(p, 4096 + (size_t)i);
		sink = p;
		free(p);
	}
}

__attribute__((noinline)) static void *thread_site(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++) {
		char *p = malloc(88);
		sink = p;
		free(p);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[2];

	temp_site();
	pair_site();
	realloc_site();
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, thread_site, NULL) != 0)
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	puts("done");
	return 0;
}
