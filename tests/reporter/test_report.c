/*
 * tests/reporter/test_report.c: the JSON document has exactly the shape
 * reporter/README.md documents (issue 4's minimum included), and the text
 * report has the valgrind-style lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "encode.h"
#include "report.h"

static struct hl_process *make_process(struct hl_run *run, uint32_t how, int32_t status)
{
	static struct hl_conn_state cs;
	const char *argv[] = { "./prog", "x" };
	uint64_t frames[2] = { 0x1000, 0x2000 };
	struct hl_decoder d;
	struct hl_enc e;

	cs.run = run;
	hl_enc_init(&e);
	hl_enc_hello(&e, 555, 1, HL_ORIGIN_START, "/bin/prog", 2, argv);
	hl_enc_stack(&e, 1, frames, 2, 0);
	hl_enc_alloc(&e, 0x10, 1000, 1, 1, 0);
	hl_enc_alloc(&e, 0x20, 1000, 2, 1, 0);
	hl_enc_alloc(&e, 0x30, 5, 3, 0, 0);
	hl_enc_free(&e, 0x30, 4, 0);
	if (how != HL_EXIT_SIGNAL)
		hl_enc_exit(&e, how, status, 5);
	hl_decode_init(&d, hl_state_record, &cs);
	assert_int_equal(hl_decode_feed(&d, e.buf, e.len), (long)e.len);
	hl_decode_destroy(&d);
	hl_enc_destroy(&e);
	if (how == HL_EXIT_SIGNAL)
		hl_run_note_reaped(run, 555, status); /* a raw wait status */
	hl_process_closed(cs.proc);
	hl_process_finish(cs.proc);
	return cs.proc;
}

static json_t *to_json(const struct hl_report *r)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	json_error_t error;
	json_t *doc;

	assert_int_equal(hl_report_write_json(r, f), 0);
	fclose(f);
	doc = json_loads(text, 0, &error);
	free(text);
	assert_non_null(doc);
	return doc;
}

static void test_json_shape(void **state)
{
	struct hl_symbolizer *sym = hl_symbolizer_new();
	struct hl_report r;
	struct hl_run run;
	json_t *doc, *p, *leak, *frame;
	const char *argv[] = { "./prog", "x" };

	hl_run_init(&run);
	hl_report_init(&r);
	r.argv = argv;
	r.argc = 2;
	r.exit_code = 7;
	hl_report_add_process(&r, make_process(&run, HL_EXIT_NORMAL, 7), sym, 0);
	doc = to_json(&r);
	assert_string_equal(json_string_value(json_object_get(doc, "format")), "heapledger-report");
	assert_int_equal(json_integer_value(json_object_get(doc, "version")), 1);
	assert_true(json_is_object(json_object_get(doc, "run")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "run"), "exit_code")), 7);
	p = json_array_get(json_object_get(doc, "processes"), 0);
	assert_int_equal(json_integer_value(json_object_get(p, "pid")), 555);
	assert_int_equal(json_integer_value(json_object_get(p, "ppid")), 1);
	assert_string_equal(json_string_value(json_object_get(p, "exe")), "/bin/prog");
	assert_int_equal(json_array_size(json_object_get(p, "argv")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "exit"), "status")), 7);
	assert_null(json_object_get(json_object_get(p, "exit"), "signal"));
	{
		json_t *s = json_object_get(p, "summary");
		const char *keys[] = { "in_use_bytes", "in_use_blocks", "allocs", "frees",
				       "bytes_allocated", "peak_bytes" };
		const json_int_t want[] = { 2000, 2, 3, 1, 2005, 2005 };

		for (size_t i = 0; i < 6; i++)
			assert_int_equal(json_integer_value(json_object_get(s, keys[i])), want[i]);
	}
	assert_int_equal(json_array_size(json_object_get(p, "leaks")), 1);
	leak = json_array_get(json_object_get(p, "leaks"), 0);
	assert_string_equal(json_string_value(json_object_get(leak, "kind")), "unknown");
	assert_int_equal(json_integer_value(json_object_get(leak, "bytes")), 2000);
	assert_int_equal(json_integer_value(json_object_get(leak, "blocks")), 2);
	assert_int_equal(json_array_size(json_object_get(leak, "stack")), 2);
	frame = json_array_get(json_object_get(leak, "stack"), 0); /* innermost */
	assert_string_equal(json_string_value(json_object_get(frame, "address")), "0x1000");
	assert_true(json_is_null(json_object_get(frame, "function")));
	assert_true(json_is_null(json_object_get(frame, "file")));
	assert_true(json_is_null(json_object_get(frame, "line")));
	assert_true(json_is_null(json_object_get(frame, "module")));
	assert_true(json_is_array(json_object_get(p, "errors")));
	json_decref(doc);
	hl_report_destroy(&r);
	hl_symbolizer_free(sym);
	hl_run_destroy(&run);
}

static void test_signal_and_text(void **state)
{
	struct hl_symbolizer *sym = hl_symbolizer_new();
	struct hl_report r;
	struct hl_run run;
	json_t *doc, *exitobj;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	hl_run_init(&run);
	hl_report_init(&r);
	hl_report_add_process(&r, make_process(&run, HL_EXIT_SIGNAL, SIGKILL), sym, 0);
	doc = to_json(&r);
	exitobj = json_object_get(json_array_get(json_object_get(doc, "processes"), 0), "exit");
	assert_string_equal(json_string_value(json_object_get(exitobj, "how")), "signal");
	assert_int_equal(json_integer_value(json_object_get(exitobj, "signal")), SIGKILL);
	assert_null(json_object_get(exitobj, "status"));
	json_decref(doc);
	f = open_memstream(&text, &len);
	hl_report_print_text(&r, f);
	fclose(f);
	assert_non_null(strstr(text, "==555== HEAP SUMMARY:\n"));
	assert_non_null(strstr(text, "==555==     in use at exit: 2,000 bytes in 2 blocks\n"));
	assert_non_null(strstr(text, "==555==   total heap usage: 3 allocs, 1 frees, 2,005 bytes allocated\n"));
	assert_non_null(strstr(text, "==555==   peak heap usage: 2,005 bytes\n"));
	assert_non_null(strstr(text, "==555== 2,000 bytes in 2 blocks are lost in loss record 1 of 1\n"));
	assert_non_null(strstr(text, "==555==    at 0x1000: ???\n"));
	assert_non_null(strstr(text, "==555==    by 0x2000: ???\n"));
	assert_non_null(strstr(text, "killed by signal 9"));
	free(text);
	hl_report_destroy(&r);
	hl_symbolizer_free(sym);
	hl_run_destroy(&run);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_shape),
		cmocka_unit_test(test_signal_and_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
