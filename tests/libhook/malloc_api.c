/*
 * tests/libhook/malloc_api.c: every entry point of glibc's malloc API and its
 * edge cases, printed as lines that glibc's own malloc and the preloaded one
 * must print alike (check_malloc_api.py diffs the two runs).
 *
 * Invariant: no line carries a figure that may legitimately differ between
 * two allocators (addresses, exact statistics, usable sizes); such figures
 * are checked here for consistency and print as "ok" or as what failed.
 * Lines starting "glibc-2.38:" follow a rule glibc changed in 2.38; the
 * runner compares them with the libc's version in mind.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Opaque to the compiler: keeps calls with silly sizes from being folded
 * or warned about. */
static volatile size_t huge = SIZE_MAX;
static volatile size_t half = SIZE_MAX / 2 + 1;
static volatile size_t bad_alignment = 24;
static volatile size_t zero_alignment = 0;

static const char *errno_name(int e)
{
	switch (e) {
	case 0: return "0";
	case ENOMEM: return "ENOMEM";
	case EINVAL: return "EINVAL";
	default: return "other";
	}
}

/* "NULL errno=E" or "ptr" for a pointer result. */
static void show_ptr(const char *what, void *p)
{
	if (p == NULL)
		printf("%s: NULL errno=%s\n", what, errno_name(errno));
	else
		printf("%s: ptr\n", what);
}

static int is_aligned(const void *p, size_t alignment)
{
	return ((uintptr_t)p & (alignment - 1)) == 0;
}

static void basic_calls(void)
{
	errno = 0;
	void *p = malloc(0);
	show_ptr("malloc(0)", p);
	free(p);
	errno = 0;
	show_ptr("malloc(SIZE_MAX)", malloc(huge));
	errno = 0;
	show_ptr("malloc(PTRDIFF_MAX+1)", malloc(half));
	errno = 12345;
	free(NULL);
	p = malloc(10);
	free(p);
	printf("free keeps errno: %s\n", errno == 12345 ? "yes" : "no");
	errno = 0;
	p = calloc(0, 0);
	show_ptr("calloc(0,0)", p);
	free(p);
	errno = 0;
	show_ptr("calloc(overflow)", calloc(half, 2));
	unsigned char *z = calloc(1000, 3);
	int zero = 1;
	for (size_t i = 0; i < 3000; i++)
		zero &= z[i] == 0;
	printf("calloc zeroed: %s\n", zero ? "yes" : "no");
	free(z);
}

static void realloc_calls(void)
{
	errno = 0;
	char *p = realloc(NULL, 10);
	show_ptr("realloc(NULL,10)", p);
	memcpy(p, "abcdefghi", 10);
	p = realloc(p, 100000);
	printf("realloc grow keeps: %s\n", strcmp(p, "abcdefghi") == 0 ? "yes" : "no");
	p = realloc(p, 5);
	printf("realloc shrink keeps: %s\n", memcmp(p, "abcde", 5) == 0 ? "yes" : "no");
	errno = 0;
	char *q = realloc(p, huge);
	printf("realloc(p,SIZE_MAX): %s errno=%s, p intact: %s\n", q ? "ptr" : "NULL",
	       errno_name(errno), memcmp(p, "abcde", 5) == 0 ? "yes" : "no");
	errno = 0;
	q = realloc(p, 0);
	printf("realloc(p,0): %s\n", q ? "ptr" : "NULL");
	free(q);
	errno = 0;
	show_ptr("reallocarray(overflow)", reallocarray(NULL, half, 2));
	errno = 0;
	p = reallocarray(NULL, 10, 10);
	show_ptr("reallocarray(NULL,10,10)", p);
	free(p);
}

static void posix_memalign_case(size_t alignment, size_t n)
{
	void *p = NULL;
	errno = 777;
	int rc = posix_memalign(&p, alignment, n);
	printf("posix_memalign(%zu,%s): %s errno kept: %s aligned: %s\n", alignment,
	       n == huge ? "SIZE_MAX" : "100", errno_name(rc), errno == 777 ? "yes" : "no",
	       rc == 0 ? (is_aligned(p, alignment) ? "yes" : "no") : "-");
	if (rc == 0)
		free(p);
}

static void aligned_calls(void)
{
	size_t good[] = {sizeof(void *), 16, 64, 4096, 1 << 20};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		posix_memalign_case(good[i], 100);
		void *p = aligned_alloc(good[i], 3 * good[i]);
		printf("aligned_alloc(%zu): %s\n", good[i], p && is_aligned(p, good[i]) ? "aligned" : "bad");
		free(p);
		p = memalign(good[i], 5000);
		printf("memalign(%zu): %s\n", good[i], p && is_aligned(p, good[i]) ? "aligned" : "bad");
		free(p);
	}
	posix_memalign_case(0, 100);
	posix_memalign_case(4, 100);
	posix_memalign_case(bad_alignment, 100);
	posix_memalign_case(64, huge);
	errno = 0;
	void *p = aligned_alloc(bad_alignment, 48);
	printf("glibc-2.38: aligned_alloc(24,48): %s\n", p ? "ptr" : errno_name(errno));
	free(p);
	errno = 0;
	p = aligned_alloc(zero_alignment, 48);
	printf("glibc-2.38: aligned_alloc(0,48): %s\n", p ? "ptr" : errno_name(errno));
	free(p);
	errno = 0;
	show_ptr("aligned_alloc(64,SIZE_MAX)", aligned_alloc(64, huge));
	p = memalign(bad_alignment, 10);
	printf("memalign(24): %s\n", p && is_aligned(p, 32) ? "rounded to 32" : "bad");
	free(p);
	errno = 0;
	show_ptr("memalign(SIZE_MAX/2+2)", memalign(half + 1, 10));
	long page = sysconf(_SC_PAGESIZE);
	p = valloc(10);
	printf("valloc: %s\n", p && is_aligned(p, (size_t)page) ? "page aligned" : "bad");
	free(p);
	p = pvalloc(0);
	printf("pvalloc(0): %s\n", p && is_aligned(p, (size_t)page) ? "page aligned" : "bad");
	free(p);
	p = pvalloc(1);
	printf("pvalloc(1): %s\n",
	       p && is_aligned(p, (size_t)page) && malloc_usable_size(p) >= (size_t)page ? "one page" : "bad");
	free(p);
	errno = 0;
	show_ptr("pvalloc(SIZE_MAX)", pvalloc(huge));
}

static void usable_size_calls(void)
{
	printf("malloc_usable_size(NULL): %zu\n", malloc_usable_size(NULL));
	void *p = malloc(100);
	printf("malloc_usable_size(malloc(100)) >= 100: %s\n", malloc_usable_size(p) >= 100 ? "yes" : "no");
	free(p);
}

static void mallopt_calls(void)
{
	int params[] = {M_MXFAST, M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD, M_MMAP_MAX,
			M_CHECK_ACTION, M_PERTURB, M_ARENA_TEST, M_ARENA_MAX, -100, 100};
	/* Values a program would set; none that would change how glibc
	 * behaves in the rest of this run (M_PERTURB 0, thresholds high). */
	int values[] = {-1, 0, 160, 161, 64 << 20};
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		for (size_t j = 0; j < sizeof(values) / sizeof(values[0]); j++) {
			int value = values[j];
			if (params[i] == M_PERTURB || params[i] == M_MMAP_MAX || params[i] == M_TOP_PAD ||
			    params[i] == M_MMAP_THRESHOLD || params[i] == M_TRIM_THRESHOLD ||
			    params[i] == M_ARENA_MAX || params[i] == M_ARENA_TEST)
				continue;
			printf("mallopt(%d,%d): %d\n", params[i], value, mallopt(params[i], value));
		}
	/* The ones that would change later behaviour, each set to its default. */
	printf("mallopt(M_PERTURB,0): %d\n", mallopt(M_PERTURB, 0));
	printf("mallopt(M_MMAP_MAX,65536): %d\n", mallopt(M_MMAP_MAX, 65536));
	printf("mallopt(M_TOP_PAD,131072): %d\n", mallopt(M_TOP_PAD, 131072));
	printf("mallopt(M_ARENA_TEST,8): %d\n", mallopt(M_ARENA_TEST, 8));
	printf("mallopt(M_ARENA_MAX,0): %d\n", mallopt(M_ARENA_MAX, 0));
}

/* mallinfo2's own rules, and mallinfo as its truncation. */
static void check_mallinfo_shape(const char *when)
{
	struct mallinfo2 m = mallinfo2();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	struct mallinfo old = mallinfo();
#pragma GCC diagnostic pop
	const char *bad = NULL;
	if (m.uordblks + m.fordblks != m.arena)
		bad = "uordblks + fordblks != arena";
	else if (m.fsmblks > m.fordblks)
		bad = "fsmblks > fordblks";
	else if (m.usmblks != 0)
		bad = "usmblks != 0";
	else if (m.keepcost > m.fordblks)
		bad = "keepcost > fordblks";
	else if ((m.hblks == 0) != (m.hblkhd == 0))
		bad = "hblks and hblkhd disagree";
	else if (old.arena != (int)m.arena || old.hblks != (int)m.hblks ||
		 old.hblkhd != (int)m.hblkhd)
		bad = "mallinfo is not mallinfo2 truncated";
	printf("mallinfo2 %s: %s\n", when, bad ? bad : "ok");
}

static void statistics(void)
{
	check_mallinfo_shape("at start");
	/* A mapping of its own for both allocators (glibc's threshold is
	 * 128 KiB until the first such block is freed, ours 1 MiB). */
	struct mallinfo2 before = mallinfo2();
	size_t big_size = 16u << 20;
	char *big = malloc(big_size);
	memset(big, 1, 4096);
	struct mallinfo2 with = mallinfo2();
	printf("16 MiB block: hblks +1: %s, hblkhd grows by >= 16 MiB: %s\n",
	       with.hblks == before.hblks + 1 ? "yes" : "no",
	       with.hblkhd >= before.hblkhd + big_size ? "yes" : "no");
	check_mallinfo_shape("with a mapped block");
	free(big);
	struct mallinfo2 after = mallinfo2();
	printf("16 MiB block freed: hblks and hblkhd back: %s\n",
	       after.hblks == before.hblks && after.hblkhd == before.hblkhd ? "yes" : "no");

	enum { COUNT = 200, SIZE = 1000 };
	static void *blocks[COUNT];
	before = mallinfo2();
	for (int i = 0; i < COUNT; i++)
		blocks[i] = malloc(SIZE);
	with = mallinfo2();
	printf("%d x %d bytes: uordblks grows by >= %d: %s\n", COUNT, SIZE, COUNT * SIZE,
	       with.uordblks >= before.uordblks + COUNT * SIZE ? "yes" : "no");
	check_mallinfo_shape("with small blocks");
	for (int i = 0; i < COUNT; i++)
		free(blocks[i]);
	after = mallinfo2();
	/* glibc keeps up to 7 freed chunks per size in its tcache, counted
	 * in use: a little slack. */
	printf("freed: uordblks back within 64 KiB: %s\n",
	       after.uordblks <= before.uordblks + (64u << 10) ? "yes" : "no");
	check_mallinfo_shape("after free");
	int trimmed = malloc_trim(0);
	printf("malloc_trim(0): %s\n", trimmed == 0 || trimmed == 1 ? "0 or 1" : "other");
	check_mallinfo_shape("after trim");
}

/* Replaces every run of digits with N and every run of spaces with one
 * space (malloc_stats pads its figures to a width). */
static void normalise_digits(char *line)
{
	char *out = line;
	for (char *in = line; *in; in++) {
		if (*in >= '0' && *in <= '9') {
			if (out == line || out[-1] != 'N')
				*out++ = 'N';
		} else if (*in != ' ' || out == line || out[-1] != ' ') {
			*out++ = *in;
		}
	}
	*out = '\0';
}

/* malloc_info's XML, with its figures and its per-size lines (which depend
 * on the allocator's size classes) taken out: the element shape remains. */
static void info_shape(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);
	errno = 0;
	printf("malloc_info(1): %s\n", errno_name(malloc_info(1, fp)));
	fflush(fp);
	printf("malloc_info(1) wrote: %zu bytes\n", len);
	void *keep = malloc(100);
	printf("malloc_info(0): %d\n", malloc_info(0, fp));
	fclose(fp);
	free(keep);
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "  <size ", 8) == 0 || strncmp(line, "  <unsorted ", 12) == 0)
			continue;
		normalise_digits(line);
		printf("malloc_info: %s\n", line);
	}
	free(text);
}

/* malloc_stats writes to stderr: catch it in a file and show its shape. */
static void stats_shape(void)
{
	FILE *tmp = tmpfile();
	fflush(stderr);
	int saved = dup(2);
	dup2(fileno(tmp), 2);
	malloc_stats();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	char line[256];
	while (fgets(line, sizeof(line), tmp)) {
		line[strcspn(line, "\n")] = '\0';
		normalise_digits(line);
		printf("malloc_stats: %s\n", line);
	}
	fclose(tmp);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	statistics();
	basic_calls();
	realloc_calls();
	aligned_calls();
	usable_size_calls();
	mallopt_calls();
	info_shape();
	stats_shape();
	return 0;
}
