/* Integration case: compiled with gcc -O2 under the hook (cc1, as and ld all
 * allocate a lot), then run; its output is compared, not the object bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	unsigned key;
	char name[24];
};

static int by_key(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	return (x->key > y->key) - (x->key < y->key);
}

int main(void)
{
	enum { N = 20000 };
	struct entry *table = malloc(N * sizeof(*table));
	unsigned long sum = 0;
	char *text = NULL;
	size_t len = 0;

	if (table == NULL)
		return 2;
	for (unsigned i = 0; i < N; i++) {
		table[i].key = (i * 2654435761u) >> 7;
		snprintf(table[i].name, sizeof(table[i].name), "n%u", i);
	}
	qsort(table, N, sizeof(*table), by_key);
	for (unsigned i = 0; i < N; i += 100) {
		size_t add = strlen(table[i].name);
		char *grown = realloc(text, len + add + 1);
		if (grown == NULL)
			return 2;
		text = grown;
		memcpy(text + len, table[i].name, add + 1);
		len += add;
		sum = sum * 31 + table[i].key;
	}
	printf("gcc prog first=%s len=%zu sum=%lu\n", table[0].name, len, sum);
	free(text);
	free(table);
	return 0;
}
