/*
 * scripts/demo/leaky.c: the demo program of scripts/demo.sh.
 *
 * It allocates in a few functions (malloc, calloc, realloc, strdup) and frees
 * almost everything, but loses the last pointer to blocks made in two
 * functions, so a leak report has exactly two leak sites to show:
 *   - open_session():  3 blocks of 48 bytes (malloc), dropped by main();
 *   - cache_insert():  1 block of 256 bytes (calloc), lost when the cache is
 *                      reset without freeing its slot.
 * Built with -O0 -g (scripts/meson.build) so the frames and lines in the report
 * match this file and the compiler keeps every call.
 *
 * Its stdout is deterministic, and so are its heap totals: valgrind and the
 * hook must both report 400 bytes in 4 blocks in use at exit, 2,010 allocs
 * and 2,006 frees (tests/integration/agrees_with_valgrind.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SESSIONS_LEAKED 3

struct session {
	int id;
	char user[44];
};

struct cache {
	char *slot;  /* one 256-byte block, or NULL */
	size_t used; /* bytes written to slot */
};

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (p == NULL) {
		perror("leaky: malloc");
		exit(1);
	}
	return p;
}

/* Freed by the caller: a comma-separated list grown with realloc. */
static char *join_words(const char *const *words, int count)
{
	char *out = NULL;
	size_t len = 0;
	for (int i = 0; i < count; i++) {
		size_t sep = i > 0 ? 1 : 0;
		size_t add = strlen(words[i]);
		char *grown = realloc(out, len + sep + add + 1);
		if (grown == NULL) {
			free(out);
			perror("leaky: realloc");
			exit(1);
		}
		out = grown;
		if (sep)
			out[len] = ',';
		memcpy(out + len + sep, words[i], add);
		len += sep + add;
		out[len] = '\0';
	}
	return out;
}

/* A zeroed table, summed and freed: never leaks. */
static long table_checksum(int rows, int cols)
{
	int *table = calloc((size_t)rows * (size_t)cols, sizeof(*table));
	long sum = 0;
	if (table == NULL) {
		perror("leaky: calloc");
		exit(1);
	}
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++)
			table[r * cols + c] = r * c;
	for (int i = 0; i < rows * cols; i++)
		sum += table[i];
	free(table);
	return sum;
}

/* Leak site 1: the caller keeps only the id and drops the block. */
static struct session *open_session(int id, const char *user)
{
	struct session *s = malloc(sizeof(*s));
	if (s == NULL) {
		perror("leaky: malloc");
		exit(1);
	}
	s->id = id;
	snprintf(s->user, sizeof(s->user), "%s", user);
	return s;
}

/* Leak site 2: the slot is allocated here and never freed. */
static void cache_insert(struct cache *cache, const char *value)
{
	if (cache->slot == NULL)
		cache->slot = calloc(1, 256);
	if (cache->slot == NULL) {
		perror("leaky: calloc");
		exit(1);
	}
	cache->used = strlen(value) < 255 ? strlen(value) : 255;
	memcpy(cache->slot, value, cache->used);
}

/* The bug: forgets to free cache->slot before dropping the pointer. */
static void cache_reset(struct cache *cache)
{
	cache->slot = NULL;
	cache->used = 0;
}

/* Many short-lived blocks of mixed sizes, all freed. */
static unsigned churn(int rounds)
{
	unsigned digest = 0;
	for (int i = 0; i < rounds; i++) {
		char *copy = strdup("heapledger demo");
		char *big = xmalloc(1024 + (size_t)(i % 7) * 4096);
		big[0] = copy[i % 15];
		digest = digest * 31 + (unsigned char)big[0];
		free(big);
		free(copy);
	}
	return digest;
}

int main(void)
{
	static const char *const words[] = { "alloc", "free", "realloc", "calloc", "leak" };
	/* stdio would otherwise malloc a buffer for stdout and never free it,
	 * and valgrind (which frees it through __libc_freeres) would disagree
	 * with the hook by one block; with a static buffer both must report
	 * exactly the leaks below. */
	static char stdout_buf[BUFSIZ];
	struct cache cache = { NULL, 0 };
	int ids = 0;

	setvbuf(stdout, stdout_buf, _IOLBF, sizeof(stdout_buf));

	char *joined = join_words(words, 5);
	printf("leaky: joined %s\n", joined);
	free(joined);

	printf("leaky: table checksum %ld\n", table_checksum(64, 32));

	for (int i = 0; i < SESSIONS_LEAKED; i++)
		ids += open_session(i + 1, "demo-user")->id;
	printf("leaky: opened %d sessions (id sum %d)\n", SESSIONS_LEAKED, ids);

	cache_insert(&cache, "cached value");
	printf("leaky: cached %zu bytes\n", cache.used);
	cache_reset(&cache);

	printf("leaky: churn digest %u\n", churn(1000));
	printf("leaky: expect 4 leaked blocks: 3 x 48 bytes (open_session), "
	       "1 x 256 bytes (cache_insert)\n");
	return 0;
}
