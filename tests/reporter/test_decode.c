/*
 * tests/reporter/test_decode.c: the wire decoder accepts what encode.c
 * writes, record by record and split at every byte, and rejects each kind of
 * malformed input with a reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "encode.h"
#include "util.h"

struct seen {
	int count[HL_REC_TYPE_COUNT + 1];
	int total;
};

static int count_sink(void *ctx, const struct hl_wire_header *rec)
{
	struct seen *s = ctx;

	s->count[rec->type < HL_REC_TYPE_COUNT ? rec->type : HL_REC_TYPE_COUNT]++;
	s->total++;
	return 0;
}

static void valid_stream(struct hl_enc *e)
{
	const char *argv[] = { "prog", "-x" };
	uint64_t frames[3] = { 0x401000, 0x401100, 0x401200 };
	uint8_t build_id[20] = { 1, 2, 3 };
	struct hl_wire_live_block live = { .address = 0x2000, .size = 8, .stack_id = 1 };
	struct hl_rec_error error = { .kind = HL_ERROR_DOUBLE_FREE, .stack_id = 1,
				      .address = 0x3000, .alloc_stack_id = 1 };

	hl_enc_hello(e, 100, 1, HL_ORIGIN_START, "/bin/prog", 2, argv);
	hl_enc_batch(e, 100, 10, 0);
	hl_enc_module(e, 1, "/bin/prog", 0, 0x400000, 0x500000, build_id, 20);
	hl_enc_stack(e, 1, frames, 3, 0);
	hl_enc_alloc(e, 0x1000, 16, 11, 1, HL_KIND_MALLOC);
	hl_enc_alloc(e, 0x2000, 8, 12, 0, HL_KIND_NEW);
	hl_enc_realloc(e, 0x1000, 0x1800, 32, 13, 1);
	hl_enc_free(e, 0x1800, 14, HL_KIND_MALLOC);
	hl_enc_thread(e, HL_REC_THREAD_START, 101, 15);
	hl_enc_fork(e, 102, 16);
	hl_enc_error(e, &error);
	hl_enc_dropped(e, 3);
	hl_enc_module_unload(e, 1, 17);
	hl_enc_live(e, &live, 1, 0);
	hl_enc_exit(e, HL_EXIT_NORMAL, 0, 18);
}

static void test_roundtrip(void **state)
{
	struct hl_enc e;
	struct hl_decoder d;
	struct seen s = { 0 };
	uint8_t *copy;

	hl_enc_init(&e);
	valid_stream(&e);
	hl_decode_init(&d, count_sink, &s);
	assert_int_equal(hl_decode_feed(&d, e.buf, e.len), (long)e.len);
	assert_int_equal(s.total, 15);
	assert_int_equal(s.count[HL_REC_ALLOC], 2);
	assert_int_equal(s.count[HL_REC_LIVE], 1);
	assert_int_equal(d.pid, 100);
	hl_decode_destroy(&d);

	/* Split at every byte: a partial record is never consumed. */
	copy = aligned_alloc(8, (e.len + 7) & ~7ul);
	for (size_t split = 0; split <= e.len; split++) {
		long used;

		memset(&s, 0, sizeof(s));
		hl_decode_init(&d, count_sink, &s);
		memcpy(copy, e.buf, e.len);
		used = hl_decode_feed(&d, copy, split);
		assert_true(used >= 0 && (size_t)used <= split && used % 8 == 0);
		memmove(copy, copy + used, e.len - (size_t)used);
		assert_int_equal(hl_decode_feed(&d, copy, e.len - (size_t)used),
				 (long)(e.len - (size_t)used));
		assert_int_equal(s.total, 15);
		hl_decode_destroy(&d);
	}
	free(copy);
	hl_enc_destroy(&e);
}

/* Decodes a HELLO followed by whatever `build` appends; expects -EPROTO and
 * a reason containing `why`. */
static void expect_reject(void (*build)(struct hl_enc *), const char *why)
{
	const char *argv[] = { "p" };
	struct hl_enc e;
	struct hl_decoder d;
	struct seen s = { 0 };
	long r;

	hl_enc_init(&e);
	hl_enc_hello(&e, 7, 1, HL_ORIGIN_START, "/p", 1, argv);
	build(&e);
	hl_decode_init(&d, count_sink, &s);
	r = hl_decode_feed(&d, e.buf, e.len);
	assert_int_equal(r, -EPROTO);
	if (!strstr(d.error, why))
		fail_msg("reason '%s' does not mention '%s'", d.error, why);
	hl_decode_destroy(&d);
	hl_enc_destroy(&e);
}

static void bad_version(struct hl_enc *e)
{
	struct hl_wire_header *h = hl_enc_record(e, HL_REC_BATCH, sizeof(struct hl_rec_batch));

	h->version = 9;
}

static void bad_length_odd(struct hl_enc *e)
{
	struct hl_wire_header *h = hl_enc_record(e, HL_REC_FREE, 24);

	h->length = 20;
}

static void bad_length_huge(struct hl_enc *e)
{
	struct hl_wire_header *h = hl_enc_record(e, HL_REC_FREE, 24);

	h->length = HL_WIRE_MAX_RECORD + 8;
}

static void bad_length_short(struct hl_enc *e)
{
	struct hl_wire_header *h = hl_enc_record(e, HL_REC_ALLOC, 40);

	h->length = 32; /* ALLOC needs 40 */
}

static void bad_length_zero(struct hl_enc *e)
{
	struct hl_wire_header *h = hl_enc_record(e, 200, 8);

	h->length = 0;
}

static void bad_unknown_stack(struct hl_enc *e)
{
	hl_enc_alloc(e, 0x1000, 1, 1, 5, 0);
}

static void bad_stack_too_deep(struct hl_enc *e)
{
	struct hl_rec_stack *r = hl_enc_record(e, HL_REC_STACK, 16 + 8 * 300);

	r->stack_id = 1;
	r->depth = 300;
}

static void bad_stack_overrun(struct hl_enc *e)
{
	struct hl_rec_stack *r = hl_enc_record(e, HL_REC_STACK, 16 + 8 * 2);

	r->stack_id = 1;
	r->depth = 3;
}

static void bad_stack_twice(struct hl_enc *e)
{
	uint64_t f = 1;

	hl_enc_stack(e, 1, &f, 1, 0);
	hl_enc_stack(e, 1, &f, 1, 0);
}

static void bad_stack_id_huge(struct hl_enc *e)
{
	uint64_t f = 1;

	hl_enc_stack(e, HL_DECODE_MAX_ID, &f, 1, 0);
}

static void bad_module_string(struct hl_enc *e)
{
	struct hl_rec_module_load *r;

	hl_enc_module(e, 1, "/lib/x.so", 0, 0, 1, NULL, 0);
	r = (void *)(e->buf + e->len - hl_wire_padded(sizeof(*r) + 10));
	memset(r + 1, 'A', 10); /* no NUL any more */
}

static void bad_module_overrun(struct hl_enc *e)
{
	struct hl_rec_module_load *r = hl_enc_record(e, HL_REC_MODULE_LOAD, sizeof(*r) + 8);

	r->module_id = 1;
	r->path_len = 100;
}

static void bad_module_unknown_unload(struct hl_enc *e)
{
	hl_enc_module_unload(e, 3, 0);
}

static void bad_second_hello(struct hl_enc *e)
{
	const char *argv[] = { "p" };

	hl_enc_hello(e, 7, 1, 0, "/p", 1, argv);
}

static void bad_address_zero(struct hl_enc *e)
{
	hl_enc_free(e, 0, 1, 0);
}

static void bad_kind(struct hl_enc *e)
{
	hl_enc_alloc(e, 0x10, 1, 1, 0, 77);
}

/* A flag bit the protocol does not define, next to HL_ALLOC_INHERITED. */
static void bad_alloc_flags(struct hl_enc *e)
{
	hl_enc_alloc(e, 0x10, 1, 1, 0, HL_ALLOC_INHERITED << 1);
}

static void bad_live_count(struct hl_enc *e)
{
	struct hl_rec_live *r = hl_enc_record(e, HL_REC_LIVE, sizeof(*r) + 24);

	r->count = 2;
}

static void bad_live_stack(struct hl_enc *e)
{
	struct hl_wire_live_block b = { .address = 8, .size = 1, .stack_id = 9 };

	hl_enc_live(e, &b, 1, 0);
}

static void bad_error_stack(struct hl_enc *e)
{
	struct hl_rec_error r = { .kind = 1, .free_stack_id = 4 };

	hl_enc_error(e, &r);
}

static void bad_exit_how(struct hl_enc *e)
{
	hl_enc_exit(e, 99, 0, 0);
}

static void test_malformed(void **state)
{
	expect_reject(bad_version, "version");
	expect_reject(bad_length_odd, "length");
	expect_reject(bad_length_huge, "length");
	expect_reject(bad_length_short, "shorter");
	expect_reject(bad_length_zero, "length");
	expect_reject(bad_unknown_stack, "unknown stack id 5");
	expect_reject(bad_stack_too_deep, "deeper");
	expect_reject(bad_stack_overrun, "overrun");
	expect_reject(bad_stack_twice, "defined twice");
	expect_reject(bad_stack_id_huge, "out of range");
	expect_reject(bad_module_string, "NUL");
	expect_reject(bad_module_overrun, "overrun");
	expect_reject(bad_module_unknown_unload, "unknown module");
	expect_reject(bad_second_hello, "second HELLO");
	expect_reject(bad_address_zero, "address 0");
	expect_reject(bad_kind, "kind");
	expect_reject(bad_alloc_flags, "unknown flags");
	expect_reject(bad_live_count, "overrun");
	expect_reject(bad_live_stack, "unknown stack id 9");
	expect_reject(bad_error_stack, "unknown stack id 4");
	expect_reject(bad_exit_how, "how");
}

static void test_hello_checks(void **state)
{
	struct hl_enc e;
	struct hl_decoder d;
	struct hl_rec_hello *h;
	const char *argv[] = { "a", "b" };

	/* Something other than HELLO first. */
	hl_enc_init(&e);
	hl_enc_batch(&e, 1, 1, 0);
	hl_decode_init(&d, NULL, NULL);
	assert_int_equal(hl_decode_feed(&d, e.buf, e.len), -EPROTO);
	assert_non_null(strstr(d.error, "not HELLO"));
	hl_decode_destroy(&d);
	hl_enc_destroy(&e);

	/* argc disagrees with the strings. */
	hl_enc_init(&e);
	hl_enc_hello(&e, 1, 0, 0, "/x", 2, argv);
	h = (void *)e.buf;
	h->argc = 3;
	hl_decode_init(&d, NULL, NULL);
	assert_int_equal(hl_decode_feed(&d, e.buf, e.len), -EPROTO);
	assert_non_null(strstr(d.error, "argc"));
	hl_decode_destroy(&d);

	/* Strings running past the record. */
	h->argc = 2;
	h->argv_len = 4096;
	hl_decode_init(&d, NULL, NULL);
	assert_int_equal(hl_decode_feed(&d, e.buf, e.len), -EPROTO);
	assert_non_null(strstr(d.error, "overrun"));
	hl_decode_destroy(&d);

	/* Short header only: nothing consumed, no error. */
	hl_decode_init(&d, NULL, NULL);
	assert_int_equal(hl_decode_feed(&d, e.buf, 7), 0);
	assert_int_equal(d.error[0], 0);
	hl_decode_destroy(&d);
	hl_enc_destroy(&e);
}

static void test_unknown_type_skipped(void **state)
{
	const char *argv[] = { "p" };
	struct hl_enc e;
	struct hl_decoder d;
	struct seen s = { 0 };

	hl_enc_init(&e);
	hl_enc_hello(&e, 7, 1, 0, "/p", 1, argv);
	hl_enc_record(&e, 99, 32);
	hl_enc_free(&e, 0x10, 1, 0);
	hl_decode_init(&d, count_sink, &s);
	assert_int_equal(hl_decode_feed(&d, e.buf, e.len), (long)e.len);
	assert_int_equal(s.total, 3);
	hl_decode_destroy(&d);
	hl_enc_destroy(&e);
}

static int failing_sink(void *ctx, const struct hl_wire_header *rec)
{
	return rec->type == HL_REC_FREE ? -ENOMEM : 0;
}

static void test_sink_error_stops(void **state)
{
	const char *argv[] = { "p" };
	struct hl_enc e;
	struct hl_decoder d;

	hl_enc_init(&e);
	hl_enc_hello(&e, 7, 1, 0, "/p", 1, argv);
	hl_enc_free(&e, 0x10, 1, 0);
	hl_decode_init(&d, failing_sink, NULL);
	assert_int_equal(hl_decode_feed(&d, e.buf, e.len), -ENOMEM);
	assert_non_null(strstr(d.error, "FREE"));
	hl_decode_destroy(&d);
	hl_enc_destroy(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_hello_checks),
		cmocka_unit_test(test_unknown_type_skipped),
		cmocka_unit_test(test_sink_error_stops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
