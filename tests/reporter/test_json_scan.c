/*
 * tests/reporter/test_json_scan.c: the JSON scanner (reporter/formats/
 * json_scan.c) finds the same pieces however the document is cut into
 * chunks, keeps strings, escapes and brackets inside a piece, splits the
 * member it is told to, and says where a document stops being JSON, where
 * it ends too soon, and where a split array resumes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_scan.h"

/* The events of doc fed `chunk` bytes at a time, as text: K<key> V<value>
 * A I<item> ] E, or !S@byte / !T@byte for an error. The member named split
 * is split (its items skipped when skip). */
static const char *trace(const char *doc, size_t chunk, const char *split, bool skip)
{
	static char out[4096];
	struct hl_json_scan sc;
	size_t len = strlen(doc), off = 0, used, n = 0;
	enum hl_json_scan_event ev = HL_JSON_SCAN_MORE;

	hl_json_scan_init(&sc);
	out[0] = 0;
	while (ev != HL_JSON_SCAN_END && ev != HL_JSON_SCAN_SYNTAX &&
	       ev != HL_JSON_SCAN_TRUNCATED && ev != HL_JSON_SCAN_NOT_ARRAY) {
		size_t give = len - off < chunk ? len - off : chunk;

		ev = off < len ? hl_json_scan_feed(&sc, doc + off, give, &used)
			       : hl_json_scan_finish(&sc);
		if (off < len)
			off += used;
		switch (ev) {
		case HL_JSON_SCAN_KEY:
			n += (size_t)snprintf(out + n, sizeof(out) - n, "K%s ", sc.piece);
			if (split && strlen(sc.piece) == strlen(split) + 2 &&
			    !strncmp(sc.piece + 1, split, strlen(split)))
				hl_json_scan_split(&sc, skip);
			break;
		case HL_JSON_SCAN_VALUE:
			n += (size_t)snprintf(out + n, sizeof(out) - n, "V%s ", sc.piece);
			break;
		case HL_JSON_SCAN_ARRAY:
			n += (size_t)snprintf(out + n, sizeof(out) - n, "A@%llu ",
					      (unsigned long long)sc.at.byte);
			break;
		case HL_JSON_SCAN_NOT_ARRAY:
			n += (size_t)snprintf(out + n, sizeof(out) - n, "N ");
			break;
		case HL_JSON_SCAN_ITEM:
			n += (size_t)snprintf(out + n, sizeof(out) - n, "I%s@%llu ",
					      sc.len ? sc.piece : "",
					      (unsigned long long)sc.piece_at.byte);
			break;
		case HL_JSON_SCAN_ARRAY_END:
			n += (size_t)snprintf(out + n, sizeof(out) - n, "] ");
			break;
		case HL_JSON_SCAN_END:
			n += (size_t)snprintf(out + n, sizeof(out) - n, "E");
			break;
		case HL_JSON_SCAN_SYNTAX:
		case HL_JSON_SCAN_TRUNCATED:
			n += (size_t)snprintf(out + n, sizeof(out) - n, "!%c@%llu:%llu:%llu",
					      ev == HL_JSON_SCAN_SYNTAX ? 'S' : 'T',
					      (unsigned long long)sc.at.byte,
					      (unsigned long long)sc.at.line,
					      (unsigned long long)sc.at.column);
			break;
		default:
			break;
		}
		assert_true(n < sizeof(out));
	}
	hl_json_scan_free(&sc);
	return out;
}

/* The same trace for every chunk size from 1 byte to the whole document. */
static void expect(const char *doc, const char *split, bool skip, const char *want)
{
	for (size_t chunk = 1; chunk <= strlen(doc) + 1; chunk++)
		assert_string_equal(trace(doc, chunk, split, skip), want);
}

static void test_members_and_scalars(void **state)
{
	(void)state;
	expect(" {\"a\": 12, \"b\":true,\"c\" :null , \"d\": -1.5e3}\n", NULL, false,
	       "K\"a\" V12 K\"b\" Vtrue K\"c\" Vnull K\"d\" V-1.5e3 E");
	expect("{}", NULL, false, "E");
}

static void test_strings_hide_brackets_and_quotes(void **state)
{
	(void)state;
	expect("{\"k\\\"}\": \"a]\\\"}{\\\\\", \"o\": {\"x\": [\"]\", \"}\"]}}", NULL, false,
	       "K\"k\\\"}\" V\"a]\\\"}{\\\\\" K\"o\" V{\"x\": [\"]\", \"}\"]} E");
}

static void test_split_member(void **state)
{
	const char *doc = "{\"run\": {\"a\": [1]}, \"processes\": [ {\"p\": \"]\"}, [2], 3 ,\"s\"],"
			  " \"z\": 0}";

	(void)state;
	expect(doc, "processes", false,
	       "K\"run\" V{\"a\": [1]} K\"processes\" A@33 I{\"p\": \"]\"}@35 I[2]@47 I3@52 "
	       "I\"s\"@55 ] K\"z\" V0 E");
	/* Skipped: found, not kept. */
	expect(doc, "processes", true,
	       "K\"run\" V{\"a\": [1]} K\"processes\" A@33 I@35 I@47 I@52 I@55 ] K\"z\" V0 E");
	expect("{\"processes\": []}", "processes", false, "K\"processes\" A@14 ] E");
	expect("{\"processes\": {\"a\": 1}}", "processes", false, "K\"processes\" N ");
}

static void test_syntax_errors_are_placed(void **state)
{
	(void)state;
	/* A mismatched bracket inside a piece, on line 3. */
	expect("{\n\"a\": [1,\n {\"b\": 2]}", NULL, false, "K\"a\" !S@19:3:9");
	/* A raw control character in a string (a missing quote). */
	expect("{\"a\": \"x\n\", \"b\": 1}", NULL, false, "K\"a\" !S@8:1:9");
	expect("{\"a\" 1}", NULL, false, "K\"a\" !S@5:1:6");
	expect("{\"a\": 1,}", NULL, false, "K\"a\" V1 !S@8:1:9");
	expect("{\"a\": 1} x", NULL, false, "K\"a\" V1 !S@9:1:10");
	expect("[1]", NULL, false, "!S@0:1:1");
	expect("{\"p\": [1,]}", "p", false, "K\"p\" A@6 I1@7 !S@9:1:10");
	expect("{\"a\": ,}", NULL, false, "K\"a\" !S@6:1:7");
}

static void test_truncation(void **state)
{
	(void)state;
	expect("{\"p\": [{\"a\": \"b", "p", false, "K\"p\" A@6 !T@15:1:16");
	expect("{\"a\": 1 ", NULL, false, "K\"a\" V1 !T@8:1:9");
	expect("{\"a\": 1", NULL, false, "K\"a\" !T@7:1:8");
	expect("{\"a\": 12", NULL, false, "K\"a\" !T@8:1:9");
	expect(" \n ", NULL, false, "!T@3:2:2");
	expect("", NULL, false, "!T@0:1:1");
}

static void test_depth_is_bounded(void **state)
{
	size_t n = HL_JSON_SCAN_MAX_DEPTH + 8;
	char *doc = malloc(n + 16);
	struct hl_json_scan sc;
	size_t used;

	(void)state;
	strcpy(doc, "{\"a\": ");
	memset(doc + 6, '[', n);
	doc[6 + n] = 0;
	hl_json_scan_init(&sc);
	assert_int_equal(hl_json_scan_feed(&sc, doc, strlen(doc), &used), HL_JSON_SCAN_KEY);
	assert_int_equal(hl_json_scan_feed(&sc, doc + used, strlen(doc + used), &used),
			 HL_JSON_SCAN_SYNTAX);
	/* The document is level 1: its 2048th level is the 2047th '['. */
	assert_int_equal(sc.at.byte, 6 + HL_JSON_SCAN_MAX_DEPTH - 1);
	hl_json_scan_free(&sc);
	free(doc);
}

/* A second pass from the '[' an ARRAY event gave: the items, then it stops. */
static void test_resume_in_array(void **state)
{
	const char *doc = "{\"processes\": [{\"x\": 1},\n {\"y\": 2}], \"run\": {}}";
	struct hl_json_scan sc;
	struct hl_json_pos after;
	size_t used, off = 0;

	(void)state;
	hl_json_scan_init(&sc);
	assert_int_equal(hl_json_scan_feed(&sc, doc, strlen(doc), &used), HL_JSON_SCAN_KEY);
	hl_json_scan_split(&sc, true);
	off += used;
	assert_int_equal(hl_json_scan_feed(&sc, doc + off, strlen(doc + off), &used),
			 HL_JSON_SCAN_ARRAY);
	after = sc.pos_after;
	hl_json_scan_free(&sc);

	hl_json_scan_init_in_array(&sc, after, false);
	off = after.byte;
	assert_int_equal(hl_json_scan_feed(&sc, doc + off, strlen(doc + off), &used),
			 HL_JSON_SCAN_ITEM);
	assert_string_equal(sc.piece, "{\"x\": 1}");
	off += used;
	assert_int_equal(hl_json_scan_feed(&sc, doc + off, strlen(doc + off), &used),
			 HL_JSON_SCAN_ITEM);
	assert_string_equal(sc.piece, "{\"y\": 2}");
	assert_int_equal(sc.piece_at.line, 2);
	assert_int_equal(sc.piece_at.column, 2);
	off += used;
	assert_int_equal(hl_json_scan_feed(&sc, doc + off, strlen(doc + off), &used),
			 HL_JSON_SCAN_ARRAY_END);
	off += used;
	assert_int_equal(hl_json_scan_feed(&sc, doc + off, strlen(doc + off), &used),
			 HL_JSON_SCAN_MORE);
	assert_int_equal(used, 0);
	assert_int_equal(hl_json_scan_finish(&sc), HL_JSON_SCAN_END);
	hl_json_scan_free(&sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_members_and_scalars),
		cmocka_unit_test(test_strings_hide_brackets_and_quotes),
		cmocka_unit_test(test_split_member),
		cmocka_unit_test(test_syntax_errors_are_placed),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_depth_is_bounded),
		cmocka_unit_test(test_resume_in_array),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
