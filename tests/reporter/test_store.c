/*
 * tests/reporter/test_store.c: a process stored in SQLite and loaded back
 * gives the same report (text and JSON) as the one built from live state;
 * migrations set user_version; an unusable database path is a clear error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode.h"
#include "encode.h"
#include "report.h"
#include "store.h"

static struct hl_process *make_process(struct hl_run *run)
{
	static struct hl_conn_state cs;
	const char *argv[] = { "prog", "arg with space" };
	uint64_t frames[3] = { 0x401010, 0x7f0000001234, 0x999 };
	struct hl_rec_error error = { .kind = HL_ERROR_DOUBLE_FREE, .stack_id = 2,
				      .address = 0x5000, .block_address = 0x5000,
				      .block_size = 12, .alloc_stack_id = 1 };
	struct hl_decoder d;
	struct hl_enc e;

	cs.run = run;
	hl_enc_init(&e);
	hl_enc_hello(&e, 77, 1, HL_ORIGIN_START, "/bin/prog", 2, argv);
	hl_enc_batch(&e, 77, 100, 0);
	hl_enc_module(&e, 1, "/bin/prog-not-there", 0, 0x400000, 0x500000, NULL, 0);
	hl_enc_module(&e, 2, "/lib/libgone.so", 0x7f0000000000, 0x7f0000000000,
		      0x7f0000100000, NULL, 0);
	hl_enc_stack(&e, 1, frames, 3, 0);
	hl_enc_stack(&e, 2, frames + 1, 2, 1);
	hl_enc_alloc(&e, 0x1000, 100, 101, 1, 0);
	hl_enc_alloc(&e, 0x2000, 100, 102, 1, 0);
	hl_enc_alloc(&e, 0x3000, 7, 103, 2, 0);
	hl_enc_alloc(&e, 0x4000, 1, 104, 0, 0);
	hl_enc_free(&e, 0x4000, 105, 0);
	hl_enc_error(&e, &error);
	hl_enc_exit(&e, HL_EXIT_NORMAL, 4, 106);
	hl_decode_init(&d, hl_state_record, &cs);
	assert_int_equal(hl_decode_feed(&d, e.buf, e.len), (long)e.len);
	hl_decode_destroy(&d);
	hl_enc_destroy(&e);
	hl_process_closed(cs.proc);
	hl_process_finish(cs.proc);
	return cs.proc;
}

static char *render(const struct hl_report *r, bool json)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (json)
		assert_int_equal(hl_report_write_json(r, f), 0);
	else
		hl_report_print_text(r, f);
	fclose(f);
	return text;
}

static void test_roundtrip(void **state)
{
	char path[] = "/tmp/hl-test-store-XXXXXX";
	int fd = mkstemp(path);
	struct hl_symbolizer *sym = hl_symbolizer_new();
	struct hl_store *s;
	struct hl_report live, loaded;
	struct hl_run run;
	struct hl_process *p;
	const char *argv[] = { "prog", "arg with space" };
	int64_t run_id, latest;
	char *a, *b;

	close(fd);
	hl_run_init(&run);
	p = make_process(&run);
	hl_report_init(&live);
	live.argv = argv;
	live.argc = 2;
	live.started_ns = 5;
	hl_report_add_process(&live, p, sym, 0);
	assert_int_equal(hl_store_open(path, false, &s), 0);
	assert_int_equal(hl_store_run_begin(s, &live, &run_id), 0);
	assert_int_equal(hl_store_process(s, run_id, p, sym), 0);
	assert_int_equal(hl_store_run_end(s, run_id, 9, 4), 0);
	assert_true(p->db_id > 0);
	hl_store_close(s);
	live.run_id = run_id;
	live.ended_ns = 9;
	live.exit_code = 4;

	assert_int_equal(hl_store_open(path, true, &s), 0);
	assert_int_equal(hl_store_latest_run(s, &latest), 0);
	assert_int_equal(latest, run_id);
	hl_report_init(&loaded);
	assert_int_equal(hl_store_load_report(s, run_id, &loaded), 0);
	hl_store_close(s);

	a = render(&live, false);
	b = render(&loaded, false);
	assert_string_equal(a, b);
	assert_non_null(strstr(a, "200 bytes in 2 blocks are lost in loss record 1 of 2"));
	assert_non_null(strstr(a, "(libgone.so+0x1234)"));
	assert_non_null(strstr(a, "heap error: double_free"));
	free(a);
	free(b);
	a = render(&live, true);
	b = render(&loaded, true);
	assert_string_equal(a, b);
	free(a);
	free(b);
	hl_report_destroy(&live);
	hl_report_destroy(&loaded);
	hl_symbolizer_free(sym);
	hl_run_destroy(&run);
	unlink(path);
}

static void test_schema_version(void **state)
{
	char path[] = "/tmp/hl-test-store-XXXXXX";
	int fd = mkstemp(path);
	struct hl_store *s;

	close(fd);
	assert_true(hl_store_schema_version() >= 1);
	assert_int_equal(hl_store_open(path, false, &s), 0);
	hl_store_close(s);
	/* Reopening an up-to-date file migrates nothing and succeeds. */
	assert_int_equal(hl_store_open(path, false, &s), 0);
	hl_store_close(s);
	unlink(path);
}

static void test_unusable_path(void **state)
{
	struct hl_store *s;
	int err = hl_store_open("/nonexistent-dir/sub/heapledger.db", false, &s);

	assert_true(err < 0);
	assert_non_null(strstr(hl_store_error(s), "heapledger.db"));
	hl_store_close(s);
	/* A read of a file with no runs says so. */
	err = hl_store_open("/nonexistent-dir/x.db", true, &s);
	assert_true(err < 0);
	hl_store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_schema_version),
		cmocka_unit_test(test_unusable_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
