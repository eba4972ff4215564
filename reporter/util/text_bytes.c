/*
 * reporter/util/text_bytes.c: UTF-8 checks and the lossless JSON form of
 * byte strings (see text_bytes.h).
 */
#include "text_bytes.h"

#include <stdint.h>
#include <stdlib.h>

size_t hl_utf8_char_len(const unsigned char *s, size_t n)
{
	uint32_t c, min;
	size_t len;

	if (!n)
		return 0;
	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, c = s[0] & 0x1f, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, c = s[0] & 0x0f, min = 0x800;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, c = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return len;
}

bool hl_utf8_is_valid(const char *s)
{
	size_t n, i = 0;

	while ((unsigned char)s[i] - 1u < 0x7fu)
		i++; /* ASCII, most of what is checked */
	if (!s[i])
		return true;
	n = i + strlen(s + i);
	for (size_t len; i < n; i += len) {
		len = hl_utf8_char_len((const unsigned char *)s + i, n - i);
		if (!len)
			return false;
	}
	return true;
}

json_t *hl_json_bytes(const char *s)
{
	json_t *a;

	if (!s)
		return json_null();
	if (hl_utf8_is_valid(s))
		return json_string(s);
	a = json_array();
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		json_array_append_new(a, json_integer(*p));
	return a;
}

json_t *hl_json_text(const char *s)
{
	size_t n, out_len = 0;
	char *out;
	json_t *v;

	if (!s)
		return json_null();
	if (hl_utf8_is_valid(s))
		return json_string(s);
	n = strlen(s);
	out = hl_xmalloc(n * 3 + 1);
	for (size_t i = 0, len; i < n; i += len) {
		len = hl_utf8_char_len((const unsigned char *)s + i, n - i);
		if (len) {
			memcpy(out + out_len, s + i, len);
			out_len += len;
			continue;
		}
		memcpy(out + out_len, "\xef\xbf\xbd", 3); /* U+FFFD */
		out_len += 3;
		len = 1;
	}
	v = json_stringn(out, out_len);
	free(out);
	return v;
}

char *hl_json_bytes_dup(struct hl_bump *a, const json_t *v)
{
	size_t n;
	char *out;

	if (json_is_string(v))
		return hl_bump_strdup(a, json_string_value(v));
	if (!json_is_array(v))
		return NULL;
	n = json_array_size(v);
	out = hl_bump_alloc(a, n + 1);
	for (size_t i = 0; i < n; i++) {
		const json_t *b = json_array_get(v, i);
		json_int_t byte = json_is_integer(b) ? json_integer_value(b) : 0;

		if (byte < 1 || byte > 255)
			return NULL;
		out[i] = (char)byte;
	}
	return out;
}
