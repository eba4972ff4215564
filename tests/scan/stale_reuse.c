/*
 * tests/scan/stale_reuse.c MODE: buffers that keep stale pointers to blocks
 * the program freed, then blocks of the same size allocated and lost
 * (check_exit_paths.py compares the classes with valgrind's, run in the
 * test). valgrind does not hand a freed block out again until 20 MB of
 * frees later, so a stale pointer points at freed memory and reaches
 * nothing: the new blocks are definitely lost. An allocator that reuses
 * the freed block at once puts a new block where the stale pointer points,
 * and the scan finds it reachable (from a kept buffer) or indirectly lost
 * (from a lost one).
 *
 *   free     the pointers go stale by free(), with a little other work
 *            (frees of another size) before the new blocks are made
 *   realloc  a growing buffer moved by realloc leaves stale pointers to
 *            its old places (a parser's pointers into its input), then
 *            blocks of the old places' sizes are lost, more of each than a
 *            thread cache holds
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STALE 8
/* realloc: the buffer's first size; each step makes it 2n + 8 */
#define START 24

struct holder {
	void *stale[STALE];
};

struct holder *kept;           /* still reachable, with stale pointers */
void *kept_buffer;             /* still reachable: the grown buffer */
static void *volatile sink;    /* defeats dead-store elimination */

/* A block of `size` bytes whose only pointer is dropped on return: lost. */
static __attribute__((noinline)) void lose(size_t size)
{
	void *p = malloc(size);
	memset(p, 0x5a, size);
	sink = p;
	sink = NULL;
}

/* Work between the frees and the new blocks: frees of another size. */
static __attribute__((noinline)) void other_work(void)
{
	for (int i = 0; i < 64; i++) {
		void *p = malloc(200);
		memset(p, i, 200);
		sink = p;
		free(p);
	}
	sink = NULL;
}

/* A holder of `size`-byte blocks that are freed at once: its pointers are
 * stale. */
static __attribute__((noinline)) struct holder *stale_holder(size_t size)
{
	struct holder *h = calloc(1, sizeof(*h));
	for (int i = 0; i < STALE; i++) {
		h->stale[i] = malloc(size);
		memset(h->stale[i], 0x11, size);
	}
	for (int i = 0; i < STALE; i++)
		free(h->stale[i]);
	return h;
}

static int freed(void)
{
	kept = stale_holder(48);
	struct holder *lost = stale_holder(80); /* lost itself, dropped below */
	sink = lost;
	lost = NULL;
	sink = NULL;
	other_work();
	for (int i = 0; i < STALE; i++) {
		lose(48);
		lose(80);
	}
	return 0;
}

/* Grows a buffer by realloc, each step a size that moves it (valgrind
 * always moves), keeping a pointer to each place it was at. */
static __attribute__((noinline)) void grow(struct holder *h)
{
	size_t size = START;
	char *buf = malloc(size);
	memset(buf, 'a', size);
	for (int i = 0; i < STALE; i++) {
		h->stale[i] = buf;
		size = size * 2 + 8;
		buf = realloc(buf, size);
		memset(buf, 'a' + i, size);
	}
	kept_buffer = buf;
}

static int reallocated(void)
{
	kept = calloc(1, sizeof(*kept));
	grow(kept);
	size_t size = START;
	for (int i = 0; i < STALE; i++) {
		for (int j = 0; j < 64; j++) /* past what the thread cache holds */
			lose(size);
		size = size * 2 + 8;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "free"))
		return freed();
	if (!strcmp(mode, "realloc"))
		return reallocated();
	fprintf(stderr, "usage: stale_reuse free|realloc\n");
	return 2;
}
