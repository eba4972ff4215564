/*
 * tests/reporter/test_report.c: the JSON document has exactly the shape
 * doc/manual.md documents, and the text
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
#include "from_live.h"
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

static json_t *to_json(struct hl_report *r)
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
	assert_int_equal(json_integer_value(json_object_get(leak, "indirect_bytes")), 0);
	{
		json_t *scan = json_object_get(p, "scan");

		assert_true(json_is_false(json_object_get(scan, "scanned")));
		assert_string_equal(json_string_value(json_object_get(scan, "not_scanned")),
				    "the hook ran no leak scan at exit");
	}
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
	assert_non_null(strstr(text, "==555==    at 0xfff: ???\n"));
	assert_non_null(strstr(text, "==555==    by 0x1fff: ???\n"));
	assert_non_null(strstr(text, "killed by signal 9"));
	free(text);
	hl_report_destroy(&r);
	hl_symbolizer_free(sym);
	hl_run_destroy(&run);
}

/* A scanned process's report model, written by hand: the text layout is
 * what these tests pin, whatever the source of the model. */
static struct hl_frame_info frames_main[] = {
	{ .address = 0x10, .function = "make_list", .file = "/src/a.c", .line = 5 },
	{ .address = 0x20, .function = "main", .file = "/src/a.c", .line = 7 },
	{ .address = 0x30, .function = "__libc_start_call_main", .file = "libc_start_call_main.h",
	  .line = 58 },
	{ .address = 0x40, .function = "__libc_start_main", .file = "libc-start.c", .line = 360 },
	{ .address = 0x50, .function = "_start", .module = "/bin/prog" },
};
static struct hl_frame_info frames_ctor[] = {
	{ .address = 0x60, .function = "ctor", .file = "/src/a.c", .line = 3 },
	{ .address = 0x70, .function = "call_init", .file = "libc-start.c", .line = 145 },
	{ .address = 0x80, .function = "__libc_start_main", .file = "libc-start.c", .line = 347 },
	{ .address = 0x90, .function = "_start", .module = "/bin/prog" },
};

static void add_leak(struct hl_report_process *p, unsigned kind, uint64_t bytes,
		     uint64_t indirect, uint64_t blocks, struct hl_frame_info *frames, size_t n)
{
	struct hl_report_leak *l = &p->leaks[p->nleaks++];

	memset(l, 0, sizeof(*l));
	l->leak_class = kind;
	l->bytes = bytes;
	l->indirect_bytes = indirect;
	l->blocks = blocks;
	l->stack.frames = frames;
	l->stack.nframes = n;
}

static struct hl_report_process *scanned_process(struct hl_report *r)
{
	static struct hl_report_leak leaks[8];
	static const char *argv[] = { "./a" };
	struct hl_report_process *p = hl_report_new_process(r);

	p->pid = 9;
	p->exe = "/bin/a";
	p->argv = argv;
	p->argc = 1;
	p->origin = "start";
	p->how = "exit";
	p->scanned = true;
	p->in_use_bytes = 350;
	p->in_use_blocks = 7;
	p->leaks = leaks;
	/* valgrind's order, as the state sorts them: largest last */
	add_leak(p, HL_CLASS_DEFINITE, 40, 0, 1, frames_ctor, 4);
	add_leak(p, HL_CLASS_REACHABLE, 50, 0, 1, frames_main, 5);
	add_leak(p, HL_CLASS_POSSIBLE, 64, 0, 1, frames_main, 5);
	add_leak(p, HL_CLASS_INDIRECT, 64, 0, 2, frames_main, 5);
	add_leak(p, HL_CLASS_DEFINITE, 32, 64, 1, frames_main, 5);
	return p;
}

static char *text_of(const struct hl_report *r)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	hl_report_print_text(r, f);
	fclose(f);
	return text;
}

/* valgrind's wording, numbering and LEAK SUMMARY; reachable records are
 * numbered and counted but not shown by default; the stack ends at main, and
 * one without main ends at its start code, shown as "(below main)". */
static void test_text_valgrind_layout(void **state)
{
	struct hl_report r;
	char *text;

	hl_report_init(&r);
	scanned_process(&r);
	text = text_of(&r);
	assert_non_null(strstr(text,
		"==9== 40 bytes in 1 blocks are definitely lost in loss record 1 of 5\n"
		"==9==    at 0x5f: ctor (a.c:3)\n"
		"==9==    by 0x6f: call_init (libc-start.c:145)\n"
		"==9==    by 0x7f: (below main) (libc-start.c:347)\n"
		"==9==\n"));
	assert_null(strstr(text, "loss record 2 of 5")); /* reachable: counted only */
	assert_non_null(strstr(text, "==9== 64 bytes in 1 blocks are possibly lost in loss record 3 of 5\n"));
	assert_non_null(strstr(text,
		"==9== 64 bytes in 2 blocks are indirectly lost in loss record 4 of 5\n"));
	assert_non_null(strstr(text,
		"==9== 96 (32 direct, 64 indirect) bytes in 1 blocks are definitely lost in loss record 5 of 5\n"
		"==9==    at 0xf: make_list (a.c:5)\n"
		"==9==    by 0x1f: main (a.c:7)\n"
		"==9==\n"));
	assert_non_null(strstr(text,
		"==9== LEAK SUMMARY:\n"
		"==9==    definitely lost: 72 bytes in 2 blocks\n"
		"==9==    indirectly lost: 64 bytes in 2 blocks\n"
		"==9==      possibly lost: 64 bytes in 1 blocks\n"
		"==9==    still reachable: 50 bytes in 1 blocks\n"
		"==9==         suppressed: 0 bytes in 0 blocks\n"
		"==9== Reachable blocks (those to which a pointer was found) are not shown.\n"
		"==9== To see them, rerun with: --show-leak-kinds=all\n"));
	assert_null(strstr(text, "not scanned"));
	assert_null(strstr(text, "_start"));
	free(text);
	hl_report_destroy(&r);
}

/* --show-leak-kinds, --show-reachable and --num-callers change what is shown,
 * never the numbering or the summary. */
static void test_text_view_options(void **state)
{
	struct hl_report r;
	char *text;

	hl_report_init(&r);
	scanned_process(&r);
	assert_null(hl_report_parse_kinds("definite,reachable", &r.view.show_kinds));
	assert_int_equal(r.view.num_callers, 0);
	r.view.num_callers = 1;
	text = text_of(&r);
	assert_non_null(strstr(text, "are still reachable in loss record 2 of 5\n"
				     "==9==    at 0xf: make_list (a.c:5)\n==9==\n"));
	assert_null(strstr(text, "possibly lost in loss record"));
	assert_null(strstr(text, "indirectly lost in loss record"));
	assert_null(strstr(text, "Reachable blocks"));
	assert_non_null(strstr(text, "==9==      possibly lost: 64 bytes in 1 blocks\n"));
	free(text);
	assert_null(hl_report_parse_kinds("none", &r.view.show_kinds));
	text = text_of(&r);
	assert_null(strstr(text, "in loss record"));
	free(text);
	assert_null(hl_report_parse_show_reachable("yes", &r.view.show_kinds));
	assert_int_equal(r.view.show_kinds, HL_SHOW_ALL);
	assert_null(hl_report_parse_kinds("all", &r.view.show_kinds));
	assert_int_equal(r.view.show_kinds, HL_SHOW_ALL);
	assert_non_null(hl_report_parse_kinds("definite,bogus", &r.view.show_kinds));
	assert_non_null(hl_report_parse_kinds("", &r.view.show_kinds));
	assert_non_null(hl_report_parse_show_reachable("maybe", &r.view.show_kinds));
	assert_int_equal(r.view.show_kinds, HL_SHOW_ALL); /* unchanged by errors */
	hl_report_destroy(&r);
}

/* A process no scan classified says why; an image replaced by exec has one
 * line naming its successor and its summary, no loss records. */
static void test_text_unscanned_and_exec(void **state)
{
	struct hl_symbolizer *sym = hl_symbolizer_new();
	struct hl_report r;
	struct hl_run run;
	char *text;

	hl_run_init(&run);
	hl_report_init(&r);
	hl_report_add_process(&r, make_process(&run, HL_EXIT_SIGNAL, SIGKILL), sym, 0);
	text = text_of(&r);
	assert_non_null(strstr(text, "==555== not scanned: killed by signal 9 (Killed); "
				     "the blocks in use are not classified\n"));
	assert_non_null(strstr(text, "==555== LEAK SUMMARY:\n"
				     "==555==     not classified: 2,000 bytes in 2 blocks\n"));
	assert_null(strstr(text, "definitely lost:"));
	free(text);
	hl_report_destroy(&r);

	hl_report_init(&r);
	r.procs = NULL;
	{
		struct hl_report_process *p = scanned_process(&r);

		p->how = "exec";
		p->exec_path = "/usr/bin/true";
		p->inherited_bytes = 300;
		p->inherited_blocks = 6;
	}
	text = text_of(&r);
	assert_non_null(strstr(text, "==9== heapledger: process 9 (./a): replaced by exec of /usr/bin/true\n"));
	assert_non_null(strstr(text, "==9==     in use at exec: 50 bytes in 1 blocks (gone with the image)\n"));
	assert_null(strstr(text, "loss record"));
	assert_null(strstr(text, "LEAK SUMMARY"));
	assert_null(strstr(text, "inherited"));
	free(text);
	hl_report_destroy(&r);
	hl_symbolizer_free(sym);
	hl_run_destroy(&run);
}

/* The whole document as text. */
static char *json_text(struct hl_report *r)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_int_equal(hl_report_write_json(r, f), 0);
	fclose(f);
	return text;
}

/* Stacks with a key are made into JSON once and their text repeated
 * (report_json.c); the document must be the one written stack by stack:
 * stacks shared by records, errors and a check's records (other depths in
 * the document), names holding quotes, backslashes, newlines and the text
 * of a placeholder, an empty stack, and stacks of equal key but other
 * length or truncation. */
static void test_json_shared_stacks(void **state)
{
	static struct hl_frame_info frames[] = {
		{ .address = 0x1000, .function = "f\"\\u0000\"1", .file = "a\nb.c", .line = 3,
		  .module = "/m", .offset = 16 },
		{ .address = 0x2000, .function = "\\u00001\"", .module = "/m", .offset = 32,
		  .inlined = true },
		{ .address = 0x3000, .function = "main", .file = "/src/\u00e9.c", .line = 9 },
	};
	struct hl_report_stack stacks[] = {
		{ .frames = frames, .nframes = 3, .key = 7 },
		{ .frames = frames, .nframes = 2, .key = 7 },
		{ .frames = frames, .nframes = 3, .truncated = true, .key = 7 },
		{ .frames = frames + 1, .nframes = 2, .key = 8 },
		{ .key = 9 },
	};
	struct hl_report r;
	struct hl_report_check_record recs[2];
	struct hl_report_check check = { .seq = 1, .records = recs, .nrecords = 2 };
	struct hl_report_error err = { .kind = HL_ERROR_INVALID_FREE, .call = "free" };
	char *with_keys, *without;

	(void)state;
	hl_report_init(&r);
	for (int p = 0; p < 3; p++) {
		struct hl_report_process *rp = hl_report_new_process(&r);

		rp->pid = 100 + (uint32_t)p;
		rp->exe = "/bin/prog";
		rp->origin = "start";
		rp->how = "exit";
		rp->nleaks = HL_ARRAY_SIZE(stacks);
		rp->leaks = hl_bump_alloc(&r.arena, rp->nleaks * sizeof(*rp->leaks));
		for (size_t i = 0; i < rp->nleaks; i++) {
			rp->leaks[i].leak_class = HL_CLASS_DEFINITE;
			rp->leaks[i].bytes = i + 1;
			rp->leaks[i].stack = stacks[(i + (size_t)p) % HL_ARRAY_SIZE(stacks)];
		}
		err.stack = stacks[0];
		err.alloc_stack = stacks[3];
		err.free_stack = stacks[4];
		rp->errors = &err;
		rp->nerrors = 1;
		memset(recs, 0, sizeof(recs));
		recs[0].leak = rp->leaks[0];
		recs[1].leak = rp->leaks[3];
		rp->checks = &check;
		rp->nchecks = 1;
	}
	with_keys = json_text(&r);
	for (size_t p = 0; p < r.nprocs; p++)
		for (size_t i = 0; i < r.procs[p].nleaks; i++)
			r.procs[p].leaks[i].stack.key = 0;
	hl_report_json_forget(&r);
	err.stack.key = err.alloc_stack.key = err.free_stack.key = 0;
	recs[0].leak.stack.key = recs[1].leak.stack.key = 0;
	without = json_text(&r);
	assert_string_equal(with_keys, without);
	assert_non_null(strstr(with_keys, "\\u0000\\\"1")); /* the names came through */
	free(with_keys);
	free(without);
	hl_report_destroy(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_shape),
		cmocka_unit_test(test_signal_and_text),
		cmocka_unit_test(test_text_valgrind_layout),
		cmocka_unit_test(test_text_view_options),
		cmocka_unit_test(test_text_unscanned_and_exec),
		cmocka_unit_test(test_json_shared_stacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
