/*
 * tests/reporter/test_store_query.c: the query layer over stored runs: the
 * sites of one run, a site's history across runs selected by program and
 * labels, the latest run a filter selects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode.h"
#include "encode.h"
#include "report.h"
#include "runinfo.h"
#include "state.h"
#include "store_query.h"

/* A finished process leaking 10 bytes at stack 1 and 20 at stack 2. */
static struct hl_process *make_process(struct hl_run *run)
{
	static struct hl_conn_state cs;
	const char *argv[] = { "prog" };
	uint64_t frames[2] = { 0x401010, 0x401020 };
	struct hl_decoder d;
	struct hl_enc e;

	cs.run = run;
	hl_enc_init(&e);
	hl_enc_hello(&e, 77, 1, HL_ORIGIN_START, "/bin/prog", 1, argv);
	hl_enc_batch(&e, 77, 100, 0);
	hl_enc_stack(&e, 1, frames, 1, 0);
	hl_enc_stack(&e, 2, frames + 1, 1, 0);
	hl_enc_alloc(&e, 0x1000, 10, 101, 1, 0);
	hl_enc_alloc(&e, 0x2000, 20, 102, 2, 0);
	hl_enc_exit(&e, HL_EXIT_NORMAL, 0, 106);
	hl_decode_init(&d, hl_state_record, &cs);
	assert_int_equal(hl_decode_feed(&d, e.buf, e.len), (long)e.len);
	hl_decode_destroy(&d);
	hl_enc_destroy(&e);
	hl_process_closed(cs.proc);
	hl_process_finish(cs.proc);
	assert_int_equal(cs.proc->nleaks, 2);
	return cs.proc;
}

/* Stores one run of `program` whose two leak groups get the fingerprints
 * fp20 (the 20-byte one) and fp10, "" for none. */
static void store_run(struct hl_store *s, const char *program, const char *label,
		      const char *fp20, const char *fp10)
{
	struct hl_symbolizer *sym = hl_symbolizer_new();
	struct hl_report r;
	struct hl_run run;
	struct hl_process *p;
	const char *argv[] = { program };
	int64_t id;

	hl_run_init(&run);
	p = make_process(&run);
	/* Loss record order: the 10-byte group first, the 20-byte one last. */
	strcpy(p->leaks[1].fingerprint, fp20);
	strcpy(p->leaks[0].fingerprint, fp10);
	p->leaks[1].site_function = "twenty";
	hl_report_init(&r);
	r.argv = argv;
	r.argc = 1;
	if (label)
		assert_int_equal(hl_runinfo_add_label(&r, label), 0);
	assert_int_equal(hl_store_run_begin(s, &r, &id), 0);
	assert_int_equal(hl_store_process(s, id, p, sym), 0);
	hl_report_destroy(&r);
	hl_run_destroy(&run);
	hl_symbolizer_free(sym);
}

struct seen {
	char text[512];
};

static int on_site(void *ctx, const struct hl_run_site *site)
{
	struct seen *seen = ctx;
	size_t len = strlen(seen->text);

	snprintf(seen->text + len, sizeof(seen->text) - len, "%s:%s:%llu:%llu ",
		 site->fingerprint, site->function ? site->function : "-",
		 (unsigned long long)site->bytes, (unsigned long long)site->processes);
	return 0;
}

static int on_history(void *ctx, const struct hl_site_history *h)
{
	struct seen *seen = ctx;
	size_t len = strlen(seen->text);

	len += (size_t)snprintf(seen->text + len, sizeof(seen->text) - len, "%s:%lld-%lld:%llu:",
				h->fingerprint, (long long)h->first_run, (long long)h->last_run,
				(unsigned long long)h->runs);
	for (size_t i = 0; i < h->nruns; i++)
		len += (size_t)snprintf(seen->text + len, sizeof(seen->text) - len, "%s%llu",
					i ? "," : "", (unsigned long long)h->bytes[i]);
	snprintf(seen->text + len, sizeof(seen->text) - len, " ");
	return 0;
}

static void test_queries(void **state)
{
	char path[] = "/tmp/hl-test-query-XXXXXX";
	int fd = mkstemp(path);
	const char *keys[] = { "suite" }, *values[] = { "unit" };
	struct hl_run_filter prog = { .program = "prog" };
	struct hl_run_filter unit = { .label_keys = keys, .label_values = values, .nlabels = 1 };
	struct hl_store *s;
	struct seen seen = { "" };
	size_t nruns;
	int64_t latest;

	(void)state;
	close(fd);
	assert_int_equal(hl_store_open(path, false, &s), 0);
	store_run(s, "prog", "suite=unit", "aaaa", "bbbb");  /* run 1 */
	store_run(s, "prog", NULL, "aaaa", "cccc");          /* run 2: bbbb fixed, cccc new */
	store_run(s, "other", "suite=unit", "aaaa", "");     /* run 3 */
	store_run(s, "prog", "suite=unit", "cccc", "");      /* run 4 */

	assert_int_equal(hl_query_run_sites(s, 2, on_site, &seen), 0);
	assert_string_equal(seen.text, "aaaa:twenty:20:1 cccc:-:10:1 ");

	seen.text[0] = 0;
	assert_int_equal(hl_query_history(s, &prog, on_history, &seen, &nruns), 0);
	assert_int_equal(nruns, 3);
	assert_string_equal(seen.text, "aaaa:1-2:2:20,20,0 bbbb:1-1:1:10,0,0 cccc:2-4:2:0,10,20 ");

	seen.text[0] = 0;
	assert_int_equal(hl_query_history(s, &unit, on_history, &seen, &nruns), 0);
	assert_int_equal(nruns, 3);
	assert_string_equal(seen.text, "aaaa:1-3:2:20,20,0 bbbb:1-1:1:10,0,0 cccc:4-4:1:0,0,20 ");

	assert_int_equal(hl_query_latest_run(s, &prog, &latest), 0);
	assert_int_equal(latest, 4);
	prog.max_run_id = 3;
	assert_int_equal(hl_query_latest_run(s, &prog, &latest), 0);
	assert_int_equal(latest, 2);
	prog.program = "nothing";
	assert_int_equal(hl_query_latest_run(s, &prog, &latest), -ENOENT);
	assert_int_equal(hl_query_run_exists(s, 4), 0);
	assert_int_equal(hl_query_run_exists(s, 5), -ENOENT);
	hl_store_close(s);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
