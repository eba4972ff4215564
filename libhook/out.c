/*
 * libhook/out.c: formatted output without malloc or stdio.
 *
 * The hook prints from inside malloc, at exit after stdio may be gone, and
 * after a fork; so it formats into a fixed buffer and writes with write(2).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

void hl_out_init(struct hl_out *out, int fd)
{
	out->fd = fd;
	out->used = 0;
}

void hl_out_flush(struct hl_out *out)
{
	int saved = errno;
	size_t done = 0;
	while (done < out->used) {
		ssize_t n = write(out->fd, out->buf + done, out->used - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* nowhere to report it: drop the output, keep running */
		done += (size_t)n;
	}
	out->used = 0;
	errno = saved;
}

static void out_bytes(struct hl_out *out, const char *s, size_t len)
{
	while (len > 0) {
		if (out->used == sizeof(out->buf))
			hl_out_flush(out);
		size_t room = sizeof(out->buf) - out->used;
		size_t n = len < room ? len : room;
		memcpy(out->buf + out->used, s, n);
		out->used += n;
		s += n;
		len -= n;
	}
}

void hl_out_str(struct hl_out *out, const char *s)
{
	out_bytes(out, s, strlen(s));
}

void hl_out_u64(struct hl_out *out, uint64_t v)
{
	char digits[24];
	size_t i = sizeof(digits);
	do {
		digits[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	out_bytes(out, digits + i, sizeof(digits) - i);
}

void hl_out_u64_grouped(struct hl_out *out, uint64_t v)
{
	char digits[32];
	size_t i = sizeof(digits);
	int n = 0;
	do {
		if (n && n % 3 == 0)
			digits[--i] = ',';
		digits[--i] = (char)('0' + v % 10);
		v /= 10;
		n++;
	} while (v);
	out_bytes(out, digits + i, sizeof(digits) - i);
}

void hl_out_hex(struct hl_out *out, uint64_t v)
{
	static const char hex[] = "0123456789abcdef";
	char digits[20];
	size_t i = sizeof(digits);
	do {
		digits[--i] = hex[v & 15];
		v >>= 4;
	} while (v);
	digits[--i] = 'x';
	digits[--i] = '0';
	out_bytes(out, digits + i, sizeof(digits) - i);
}
