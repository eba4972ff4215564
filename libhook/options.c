/*
 * libhook/options.c: HEAPLEDGER_OPTIONS, read into hl_options.
 *
 * The keys, their ranges and defaults are the table in options.h; this file
 * only reads "key=value:key=value" against it. It runs before main(), from
 * the environment, so it neither allocates nor uses stdio: a bad entry is
 * named on stderr through a fixed buffer (out.c) and skipped, the default
 * stays. Any byte string is a valid input (tests/fuzz/fuzz_options.c).
 */
#include <string.h>

#include "internal.h"

#define HL_OPTION_DEFAULT(key, field, min, max, def, values, help) .field = (def),
struct hl_options hl_options = { HL_OPTION_TABLE(HL_OPTION_DEFAULT) };
#undef HL_OPTION_DEFAULT
const struct hl_option_info hl_option_infos[] = { HL_OPTION_TABLE(HL_OPTION_INFO) };
uint64_t hl_options_given;
_Static_assert(HL_OPTION_COUNT <= 64, "hl_options_given has a bit per key");

static bool parse_unsigned(const char *value, size_t len, unsigned max, unsigned *out)
{
	unsigned long v = 0;
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (value[i] < '0' || value[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(value[i] - '0');
		if (v > max)
			return false;
	}
	*out = (unsigned)v;
	return true;
}

/* The index of value in "a|b|c", or false. */
static bool parse_choice(const char *value, size_t len, const char *values, unsigned *out)
{
	for (unsigned index = 0; *values; index++) {
		size_t n = strcspn(values, "|");
		if (n == len && memcmp(values, value, len) == 0) {
			*out = index;
			return true;
		}
		values += n + (values[n] == '|');
	}
	return false;
}

static bool parse_value(const struct hl_option_info *info, const char *value, size_t len,
			unsigned *out)
{
	if (info->values && parse_choice(value, len, info->values, out))
		return true;
	return parse_unsigned(value, len, info->max, out) && *out >= info->min;
}

/* The table's entry for key, or NULL. */
static const struct hl_option_info *find_option(const char *key, size_t key_len)
{
	for (unsigned i = 0; i < HL_OPTION_COUNT; i++) {
		const char *name = hl_option_infos[i].key;
		if (strlen(name) == key_len && memcmp(name, key, key_len) == 0)
			return &hl_option_infos[i];
	}
	return NULL;
}

static void set_option(const struct hl_option_info *info, unsigned v)
{
	hl_options_given |= 1ull << (info - hl_option_infos);
	switch (info - hl_option_infos) {
#define HL_OPTION_SET(key, field, min, max, def, values, help) \
	case HL_OPTION_INDEX_##key:                              \
		hl_options.field = v;                            \
		break;
		HL_OPTION_TABLE(HL_OPTION_SET)
#undef HL_OPTION_SET
	}
}

/* "depth=0..256", "summary=0|1", "on_error=abort|report". */
static void out_option_values(struct hl_out *out, const struct hl_option_info *info)
{
	hl_out_str(out, info->key);
	hl_out_str(out, "=");
	if (info->values) {
		hl_out_str(out, info->values);
	} else if (info->min == 0 && info->max == 1) {
		hl_out_str(out, "0|1");
	} else {
		hl_out_u64(out, info->min);
		hl_out_str(out, "..");
		hl_out_u64(out, info->max);
	}
}

static void report_bad_entry(const char *entry, size_t len, const struct hl_option_info *info)
{
	struct hl_out out;
	hl_out_init(&out, 2);
	hl_out_str(&out, "heapledger: ignoring bad " HL_ENV_OPTIONS " entry '");
	for (size_t i = 0; i < len && i < 200; i++) {
		char c[2] = { entry[i], 0 };
		hl_out_str(&out, c);
	}
	if (info) {
		hl_out_str(&out, "' (valid: ");
		out_option_values(&out, info);
		hl_out_str(&out, ")\n");
	} else {
		hl_out_str(&out, "' (keys:");
		for (unsigned i = 0; i < HL_OPTION_COUNT; i++) {
			hl_out_str(&out, " ");
			out_option_values(&out, &hl_option_infos[i]);
		}
		hl_out_str(&out, ")\n");
	}
	hl_out_flush(&out);
}

/* The index-th value of "a|b|c". */
static void out_choice(struct hl_out *out, const char *values, unsigned index)
{
	for (; index > 0 && *values; index--)
		values += strcspn(values, "|") + (values[strcspn(values, "|")] == '|');
	for (; *values && *values != '|'; values++) {
		char c[2] = { *values, 0 };
		hl_out_str(out, c);
	}
}

/* HEAPLEDGER_OPTIONS=help=1: every key, its values, default and help. */
static void print_option_help(void)
{
	struct hl_out out;
	hl_out_init(&out, 2);
	hl_out_str(&out, "heapledger: " HL_ENV_OPTIONS "=key=value:key=value keys:\n");
	for (unsigned i = 0; i < HL_OPTION_COUNT; i++) {
		const struct hl_option_info *info = &hl_option_infos[i];
		hl_out_str(&out, "  ");
		out_option_values(&out, info);
		hl_out_str(&out, " (default ");
		if (info->values)
			out_choice(&out, info->values, info->default_value);
		else
			hl_out_u64(&out, info->default_value);
		hl_out_str(&out, "): ");
		hl_out_str(&out, info->help);
		hl_out_str(&out, "\n");
	}
	hl_out_flush(&out);
}

/* "key=value:key=value". A bad entry is reported and skipped: the program
 * under test still runs, with the defaults for that key. */
void hl_options_parse(const char *text)
{
	while (text && *text) {
		const char *end = strchr(text, ':');
		size_t len = end ? (size_t)(end - text) : strlen(text);
		const char *eq = memchr(text, '=', len);
		const struct hl_option_info *info = eq ? find_option(text, (size_t)(eq - text)) : NULL;
		unsigned v;
		if (len > 0 && info &&
		    parse_value(info, eq + 1, len - (size_t)(eq - text) - 1, &v))
			set_option(info, v);
		else if (len > 0)
			report_bad_entry(text, len, info);
		text = end ? end + 1 : NULL;
	}
	if (!hl_options.stacks)
		hl_options.stack_depth = 0;
	if (hl_options.help) {
		hl_options.help = 0;
		print_option_help();
	}
}
