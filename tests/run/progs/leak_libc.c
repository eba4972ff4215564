/* tests/run/progs/leak_libc.c: blocks that libc allocates on the caller's
 * behalf, each leaked from its own function; every leak's stack must reach
 * that function, through libc's frames. Sizes are glibc's: getline starts
 * at 120 bytes, scandir's array at 10 pointers, the others fit the text. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

NOINLINE char *leak_strdup(void);
NOINLINE char *leak_strdup(void)
{
	return strdup("seventeen bytes!"); /* LEAK-STRDUP */
}

NOINLINE char *leak_getline(void);
NOINLINE char *leak_getline(void)
{
	static char text[] = "a line\n";
	FILE *f = fmemopen(text, sizeof(text) - 1, "r");
	char *line = NULL;
	size_t cap = 0;

	if (f == NULL)
		return NULL;
	if (getline(&line, &cap, f) < 0) /* LEAK-GETLINE */
		line = NULL;
	fclose(f);
	return line;
}

NOINLINE char *leak_asprintf(void);
NOINLINE char *leak_asprintf(void)
{
	char *s = NULL;

	if (asprintf(&s, "%s-%d", "asprintf", 12345) < 0) /* LEAK-ASPRINTF */
		return NULL;
	return s;
}

NOINLINE char *leak_open_memstream(void);
NOINLINE char *leak_open_memstream(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return NULL;
	fprintf(f, "%s", "twenty-nine bytes of a stream");
	fclose(f); /* LEAK-OPEN-MEMSTREAM */
	return buf;
}

static int only_dot(const struct dirent *d)
{
	return strcmp(d->d_name, ".") == 0;
}

/* Leaks scandir's array; its one entry is freed (entry sizes depend on the
 * file system). */
NOINLINE struct dirent **leak_scandir(void);
NOINLINE struct dirent **leak_scandir(void)
{
	struct dirent **list = NULL;
	int n = scandir("/", &list, only_dot, NULL); /* LEAK-SCANDIR */

	for (int i = 0; i < n; i++)
		free(list[i]);
	return n == 1 ? list : NULL;
}

int main(void)
{
	void *volatile keep[] = { leak_strdup(), leak_getline(), leak_asprintf(),
				  leak_open_memstream(), leak_scandir() };

	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		if (keep[i] == NULL)
			return 1;
		keep[i] = NULL;
	}
	return 0;
}
