/*
 * reporter/util/util.c: logging, checked allocation, the string arena and number
 * formatting used by the rest of the reporter.
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

bool hl_log_quiet;

void hl_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	if (hl_log_quiet)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* One fprintf so concurrent writers do not interleave within a line. */
	fprintf(stderr, "heapledger: %s\n", line);
}

void hl_invariant_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "heapledger: invariant failed: %s at %s:%d\n", expr, file, line);
	abort();
}

static void hl_oom(size_t bytes)
{
	fprintf(stderr, "heapledger: out of memory (%zu bytes)\n", bytes);
	abort();
}

void *hl_xmalloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);

	if (!p)
		hl_oom(bytes);
	return p;
}

void *hl_xcalloc(size_t count, size_t bytes)
{
	void *p = calloc(count ? count : 1, bytes ? bytes : 1);

	if (!p)
		hl_oom(count * bytes);
	return p;
}

void *hl_xrealloc(void *p, size_t bytes)
{
	void *q = realloc(p, bytes ? bytes : 1);

	if (!q)
		hl_oom(bytes);
	return q;
}

char *hl_xstrdup(const char *s)
{
	size_t len = strlen(s) + 1;

	return memcpy(hl_xmalloc(len), s, len);
}

void hl_grow(void **array, size_t *capacity, size_t need, size_t elem)
{
	size_t cap = *capacity;

	if (need < cap)
		return;
	if (cap < 16)
		cap = 16;
	while (cap <= need)
		cap *= 2;
	*array = hl_xrealloc(*array, cap * elem);
	memset((char *)*array + *capacity * elem, 0, (cap - *capacity) * elem);
	*capacity = cap;
}

struct hl_bump_chunk {
	struct hl_bump_chunk *next;
	size_t pad; /* keeps data 16-aligned */
	char data[];
};

void hl_bump_init(struct hl_bump *a)
{
	memset(a, 0, sizeof(*a));
}

void *hl_bump_alloc(struct hl_bump *a, size_t bytes)
{
	void *p;

	bytes = (bytes + 7) & ~(size_t)7;
	if (!a->head || a->size - a->used < bytes) {
		/* 4 KiB, then twice the last chunk up to 64 KiB: a fork child's
		 * arena holds a few strings, and 400 of them held 64 KiB each. */
		size_t size = !a->head ? 4096 : a->size < 65536 ? a->size * 2 : 65536;
		size = bytes > size ? bytes : size;
		struct hl_bump_chunk *c = hl_xmalloc(sizeof(*c) + size);

		c->next = a->head;
		a->head = c;
		a->size = size;
		a->used = 0;
	}
	p = a->head->data + a->used;
	a->used += bytes;
	memset(p, 0, bytes);
	return p;
}

char *hl_bump_strndup(struct hl_bump *a, const char *s, size_t len)
{
	char *p = hl_bump_alloc(a, len + 1);

	memcpy(p, s, len);
	p[len] = 0;
	return p;
}

char *hl_bump_strdup(struct hl_bump *a, const char *s)
{
	return s ? hl_bump_strndup(a, s, strlen(s)) : NULL;
}

void hl_bump_free(struct hl_bump *a)
{
	struct hl_bump_chunk *c = a->head;

	while (c) {
		struct hl_bump_chunk *next = c->next;

		free(c);
		c = next;
	}
	hl_bump_init(a);
}

char *hl_fmt_grouped(char *buf, uint64_t v)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
	int out = 0;

	for (int i = 0; i < n; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			buf[out++] = ',';
		buf[out++] = digits[i];
	}
	buf[out] = 0;
	return buf;
}

char *hl_fmt_bytes_in_blocks(char *buf, uint64_t bytes, uint64_t blocks)
{
	char a[32], b[32];

	snprintf(buf, HL_BYTES_IN_BLOCKS_LEN, "%s %s in %s %s", hl_fmt_grouped(a, bytes),
		 hl_plural(bytes, "byte", "bytes"), hl_fmt_grouped(b, blocks),
		 hl_plural(blocks, "block", "blocks"));
	return buf;
}

char *hl_fmt_hex(char *buf, const uint8_t *bytes, size_t len)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		buf[2 * i] = digits[bytes[i] >> 4];
		buf[2 * i + 1] = digits[bytes[i] & 15];
	}
	buf[2 * len] = '\0';
	return buf;
}

static uint64_t hl_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t hl_now_realtime_ns(void)
{
	return hl_clock_ns(CLOCK_REALTIME);
}

uint64_t hl_now_monotonic_ns(void)
{
	return hl_clock_ns(CLOCK_MONOTONIC);
}

int hl_open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	/* Regular files never block; plain reads for libelf from here. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}
