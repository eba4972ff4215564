/*
 * tests/reporter/test_store.c: a process stored in SQLite and loaded back
 * gives the same report (text and JSON) as the one built from live state;
 * migrations set user_version and carry version 1's and 11's data over;
 * stacks that share callers share frame rows; symbols are stored once for
 * all runs; an unusable database path is a clear error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode.h"
#include "encode.h"
#include "from_live.h"
#include "report.h"
#include "state.h"
#include "store.h"

static struct hl_process *make_process(struct hl_run *run)
{
	static struct hl_conn_state cs;
	const char *argv[] = { "prog", "arg with space" };
	uint64_t frames[3] = { 0x401010, 0x7f0000001234, 0x999 };
	struct hl_rec_error error = { .kind = HL_ERROR_DOUBLE_FREE, .stack_id = 2,
				      .address = 0x5000, .block_address = 0x5000,
				      .block_size = 12, .alloc_stack_id = 1 };
	const struct hl_wire_live_block live[3] = {
		{ .address = 0x1000, .size = 100, .stack_id = 1, .leak_class = HL_CLASS_DEFINITE },
		{ .address = 0x2000, .size = 100, .stack_id = 1, .leak_class = HL_CLASS_DEFINITE },
		{ .address = 0x3000, .size = 7, .stack_id = 2, .leak_class = HL_CLASS_REACHABLE },
	};
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
	hl_enc_live(&e, live, 3, HL_LIVE_SCANNED);
	hl_enc_exit(&e, HL_EXIT_NORMAL, 4, 106);
	hl_decode_init(&d, hl_state_record, &cs);
	assert_int_equal(hl_decode_feed(&d, e.buf, e.len), (long)e.len);
	hl_decode_destroy(&d);
	hl_enc_destroy(&e);
	hl_process_closed(cs.proc);
	hl_process_finish(cs.proc);
	return cs.proc;
}

static char *render(struct hl_report *r, bool json)
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

static int64_t query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* "stack_id:position:address:symbol_id ..." of the stack_frames view. */
static char *frames_text(sqlite3 *db)
{
	sqlite3_stmt *st;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT stack_id, position, address, coalesce(symbol_id, 0) FROM stack_frames"
		" ORDER BY stack_id, position", -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW)
		fprintf(f, "%lld:%lld:%llx:%lld ", (long long)sqlite3_column_int64(st, 0),
			(long long)sqlite3_column_int64(st, 1),
			(unsigned long long)sqlite3_column_int64(st, 2),
			(long long)sqlite3_column_int64(st, 3));
	sqlite3_finalize(st);
	fclose(f);
	return text;
}

/* make_process's two stacks, {0x401010, 0x7f0000001234, 0x999} and
 * {0x7f0000001234, 0x999}, share their two outer frames: three frame rows,
 * and the stack_frames view shows stack 1's frames 1 and 2 as stack 2's. */
static void check_frames_shared(const char *path)
{
	sqlite3 *db;
	char *text;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(query_int(db, "SELECT count(*) FROM frames"), 3);
	assert_int_equal(query_int(db, "SELECT count(*) FROM frames WHERE parent_id IS NULL"), 1);
	text = frames_text(db);
	assert_non_null(strstr(text, ":0:401010:"));
	free(text);
	assert_int_equal(query_int(db, "SELECT count(*) FROM stack_frames"), 5);
	assert_int_equal(query_int(db,
		"SELECT count(*) FROM stack_frames a JOIN stack_frames b"
		" ON a.stack_id + 1 = b.stack_id AND a.position = b.position + 1"
		" AND a.address = b.address AND a.symbol_id = b.symbol_id"), 2);
	sqlite3_close(db);
}

/* The same process stored in a second run: stacks and frames are the run's,
 * so they are stored again; symbols are every run's, so none is. */
static void symbols_once_for_all_runs(const char *path, struct hl_process *p,
				      struct hl_symbolizer *sym)
{
	struct hl_store *s;
	struct hl_report r;
	int64_t run_id, symbols, stacks, frames;
	sqlite3 *db;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	symbols = query_int(db, "SELECT count(*) FROM symbols");
	stacks = query_int(db, "SELECT count(*) FROM stacks");
	frames = query_int(db, "SELECT count(*) FROM frames");
	sqlite3_close(db);
	assert_true(symbols > 0);
	hl_report_init(&r);
	assert_int_equal(hl_store_open(path, false, &s), 0);
	assert_int_equal(hl_store_run_begin(s, &r, &run_id), 0);
	assert_int_equal(hl_store_process(s, run_id, p, sym), 0);
	hl_store_close(s);
	hl_report_destroy(&r);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(query_int(db, "SELECT count(*) FROM symbols"), symbols);
	assert_int_equal(query_int(db, "SELECT count(*) FROM stacks"), 2 * stacks);
	assert_int_equal(query_int(db, "SELECT count(*) FROM frames"), 2 * frames);
	sqlite3_close(db);
	assert_int_equal(hl_store_open(path, false, &s), 0);
	assert_int_equal(hl_store_run_delete(s, run_id), 0);
	hl_store_close(s);
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
	live.cwd = "/work/dir"; /* stored as the report says, and read back */
	live.hostname = "builder-7";
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
	check_frames_shared(path);
	symbols_once_for_all_runs(path, p, sym);

	assert_int_equal(hl_store_open(path, true, &s), 0);
	assert_int_equal(hl_store_latest_run(s, &latest), 0);
	assert_int_equal(latest, run_id);
	hl_report_init(&loaded);
	assert_int_equal(hl_store_load_report(s, run_id, &loaded), 0);
	hl_store_close(s);

	a = render(&live, false);
	b = render(&loaded, false);
	assert_string_equal(a, b);
	/* The scan's classes survive the database: the reachable record is
	 * numbered but not shown, and counted in the LEAK SUMMARY. */
	assert_non_null(strstr(a, "200 bytes in 2 blocks are definitely lost in loss record 2 of 2"));
	assert_null(strstr(a, "loss record 1 of 2"));
	assert_non_null(strstr(a, "==77==    still reachable: 7 bytes in 1 blocks\n"));
	assert_non_null(strstr(a, "(libgone.so+0x1233)"));
	assert_non_null(strstr(a, "==77== Invalid free() / delete / delete[] / realloc()\n"));
	assert_non_null(strstr(a, "==77==  Address 0x5000 is 0 bytes inside a block of size 12 free'd\n"
				  "==77==  Block was alloc'd at\n"));
	assert_non_null(strstr(a, "==77== ERROR SUMMARY: 1 errors from 1 contexts\n"));
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

/* A database version 1 wrote (a row per frame in the stack_frames table) is
 * upgraded when it is opened, even for reading: each stack becomes a chain of
 * frames and the stack_frames view shows the same rows as before. */
static void test_migrate_v1(void **state)
{
	char path[] = "/tmp/hl-test-store-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fopen(SCHEMA_SQL, "r");
	char *schema = calloc(1, 1 << 20), *cut, *before, *after;
	struct hl_store *s;
	sqlite3 *db;

	close(fd);
	assert_non_null(f);
	assert_true(fread(schema, 1, (1 << 20) - 1, f) > 0);
	fclose(f);
	cut = strstr(schema, "-- migrate 2");
	assert_non_null(cut);
	*cut = 0; /* version 1's schema */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, schema, NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
		"PRAGMA user_version=1;"
		"INSERT INTO runs(id, mode, argv, started_ns) VALUES (1, 'run', '[]', 1);"
		"INSERT INTO processes(id, run_id, serial, pid, ppid, origin, exe, argv, exit_how)"
		" VALUES (1, 1, 0, 10, 1, 'start', '/bin/x', '[]', 'exit');"
		"INSERT INTO symbols(id, run_id, function) VALUES (1, 1, 'f'), (2, 1, 'g');"
		"INSERT INTO stacks(id, process_id, depth) VALUES (1, 1, 3), (2, 1, 1), (3, 1, 0);"
		"INSERT INTO stack_frames VALUES (1, 0, 4096, 1, 1), (1, 1, 4096, 2, 0),"
		" (1, 2, 8192, NULL, 0), (2, 0, 12288, 2, 0);"
		"INSERT INTO leaks(id, process_id, stack_id, leak_class, bytes, blocks, rank)"
		" VALUES (1, 1, 2, 'definitely', 16, 1, 1);"
		"INSERT INTO leaked_blocks VALUES (1, 65536, 16, 0, 0);", NULL, NULL, NULL), SQLITE_OK);
	before = frames_text(db);
	sqlite3_close(db);

	assert_int_equal(hl_store_open(path, true, &s), 0);
	hl_store_close(s);

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(query_int(db, "PRAGMA user_version"), hl_store_schema_version());
	assert_int_equal(query_int(db, "SELECT count(*) FROM frames"), 4);
	/* a row per leaked block is no longer kept; the loss record is */
	assert_int_equal(query_int(db, "SELECT count(*) FROM sqlite_master"
				       " WHERE name = 'leaked_blocks'"), 0);
	assert_int_equal(query_int(db, "SELECT blocks FROM leaks WHERE id = 1"), 1);
	assert_int_equal(query_int(db, "SELECT count(*) FROM stacks WHERE leaf_frame_id IS NULL"), 1);
	assert_int_equal(query_int(db, "SELECT inlined FROM stack_frames WHERE stack_id = 1"
				       " AND position = 0"), 1);
	after = frames_text(db);
	assert_string_equal(before, after);
	assert_string_equal(after, "1:0:1000:1 1:1:1000:2 1:2:2000:0 2:0:3000:2 ");
	free(before);
	free(after);
	free(schema);
	sqlite3_close(db);
	unlink(path);
}

/* "process:bytes:innermost<...<outermost function" of every record, through
 * the leaks and stack_frames views (the same in every version). */
static char *records_text(sqlite3 *db)
{
	sqlite3_stmt *st;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT l.process_id, l.bytes, l.leak_class, (SELECT group_concat(fn, '<') FROM"
		" (SELECT coalesce(y.function, '?') AS fn FROM stack_frames sf LEFT JOIN symbols y"
		"  ON y.id = sf.symbol_id WHERE sf.stack_id = l.stack_id ORDER BY sf.position))"
		" FROM leaks l ORDER BY l.process_id, l.rank", -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW)
		fprintf(f, "%lld:%lld:%s:%s ", (long long)sqlite3_column_int64(st, 0),
			(long long)sqlite3_column_int64(st, 1), sqlite3_column_text(st, 2),
			sqlite3_column_text(st, 3));
	sqlite3_finalize(st);
	fclose(f);
	return text;
}

/* Version 11 kept symbols, frames and stacks per run or per process: two
 * runs of the same program had two copies of each symbol, a fork child a
 * copy of its parent's frames. Migrating keeps every record and stack as it
 * was, merges the symbol copies (one row per content, frames moved to it),
 * gives stacks and frames their run and aggregates their process. */
static void test_migrate_v11(void **state)
{
	char path[] = "/tmp/hl-test-store-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fopen(SCHEMA_SQL, "r");
	char *schema = calloc(1, 1 << 20), *cut, *before, *after;
	struct hl_store *s;
	struct hl_report r;
	sqlite3 *db;

	close(fd);
	assert_non_null(f);
	assert_true(fread(schema, 1, (1 << 20) - 1, f) > 0);
	fclose(f);
	cut = strstr(schema, "-- migrate 12");
	assert_non_null(cut);
	*cut = 0; /* version 11's schema */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, schema, NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
		"PRAGMA user_version=11;"
		"INSERT INTO runs(id, mode, argv, started_ns, program, uuid) VALUES"
		" (1, 'run', '[\"x\"]', 1, 'x', 'u1'), (2, 'run', '[\"x\"]', 2, 'x', 'u2');"
		"INSERT INTO processes(id, run_id, serial, pid, ppid, parent_id, origin, exe, argv,"
		" exit_how) VALUES (1, 1, 1, 10, 1, NULL, 'start', '/bin/x', '[]', 'exit'),"
		" (2, 1, 2, 11, 10, 1, 'fork', '/bin/x', '[]', 'exit'),"
		" (3, 2, 1, 20, 1, NULL, 'start', '/bin/x', '[]', 'exit');"
		"INSERT INTO summaries(process_id, in_use_bytes, in_use_blocks, allocs, frees,"
		" bytes_allocated, peak_bytes) VALUES (1, 32, 2, 2, 0, 32, 32), (2, 32, 2, 0, 0, 0, 32),"
		" (3, 32, 2, 2, 0, 32, 32);"
		"INSERT INTO modules(process_id, path, base, low, high) VALUES"
		" (1, '/bin/x', 0, 4096, 8192), (2, '/bin/x', 0, 4096, 8192), (3, '/bin/x', 0, 4096, 8192);"
		"INSERT INTO symbols(id, run_id, module, module_offset, function, file, line) VALUES"
		" (1, 1, '/bin/x', 16, 'f', 'a.c', 3), (2, 1, '/bin/x', 32, 'main', 'a.c', 9),"
		" (3, 2, '/bin/x', 16, 'f', 'a.c', 3), (4, 2, '/bin/x', 32, 'main', 'a.c', 9);"
		"INSERT INTO frames(id, process_id, parent_id, address, symbol_id) VALUES"
		" (1, 1, NULL, 4128, 2), (2, 1, 1, 4112, 1), (3, 2, NULL, 4128, 2), (4, 2, 3, 4112, 1),"
		" (5, 3, NULL, 4128, 4), (6, 3, 5, 4112, 3);"
		"INSERT INTO stacks(id, process_id, depth, leaf_frame_id) VALUES (1, 1, 2, 2),"
		" (2, 2, 2, 4), (3, 3, 2, 6);"
		"INSERT INTO stack_aggregates VALUES (1, 2, 32, 0, 32, 32, 2), (2, 0, 0, 0, 32, 32, 2),"
		" (3, 2, 32, 0, 32, 32, 2);"
		"INSERT INTO leaks(id, process_id, stack_id, leak_class, bytes, blocks, rank,"
		" fingerprint) VALUES (1, 1, 1, 'definitely', 32, 2, 1, 'aa'),"
		" (2, 2, 2, 'definitely', 32, 2, 1, 'aa'), (3, 3, 3, 'definitely', 32, 2, 1, 'aa');"
		"INSERT INTO errors(process_id, kind, address, stack_id, alloc_stack_id) VALUES"
		" (1, 'double_free', 4096, 1, 1);", NULL, NULL, NULL), SQLITE_OK);
	before = records_text(db);
	assert_string_equal(before, "1:32:definitely:f<main 2:32:definitely:f<main "
				    "3:32:definitely:f<main ");
	sqlite3_close(db);

	assert_int_equal(hl_store_open(path, false, &s), 0);
	hl_report_init(&r);
	assert_int_equal(hl_store_load_report(s, 2, &r), 0);
	assert_int_equal(r.nprocs, 1);
	assert_int_equal(r.procs[0].nleaks, 1);
	assert_int_equal(r.procs[0].leaks[0].stack.nframes, 2);
	assert_string_equal(r.procs[0].leaks[0].stack.frames[0].function, "f");
	assert_string_equal(r.procs[0].leaks[0].stack.frames[1].function, "main");
	hl_report_destroy(&r);
	hl_store_close(s);

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(query_int(db, "PRAGMA user_version"), hl_store_schema_version());
	after = records_text(db);
	assert_string_equal(before, after);
	/* one row per symbol content, for both runs; the frames moved to it */
	assert_int_equal(query_int(db, "SELECT count(*) FROM symbols"), 2);
	assert_int_equal(query_int(db, "SELECT count(DISTINCT symbol_id) FROM frames"), 2);
	assert_int_equal(query_int(db, "SELECT count(*) FROM symbols WHERE key IS NULL"), 0);
	/* stacks and frames belong to the run, aggregates name their process */
	assert_int_equal(query_int(db, "SELECT count(*) FROM stacks WHERE run_id = 1"), 2);
	assert_int_equal(query_int(db, "SELECT count(*) FROM frames WHERE run_id = 2"), 2);
	assert_int_equal(query_int(db, "SELECT process_id FROM stack_aggregates"
				       " WHERE stack_id = 2"), 2);
	assert_int_equal(query_int(db, "SELECT count(*) FROM modules"), 3);
	assert_int_equal(query_int(db, "SELECT alloc_stack_id FROM errors"), 1);
	assert_int_equal(query_int(db, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
	assert_int_equal(query_int(db, "PRAGMA foreign_keys"), 0); /* this connection's */
	sqlite3_close(db);
	free(before);
	free(after);
	free(schema);
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
		cmocka_unit_test(test_migrate_v1),
		cmocka_unit_test(test_migrate_v11),
		cmocka_unit_test(test_unusable_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
