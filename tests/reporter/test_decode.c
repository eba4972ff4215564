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

/* Feeds e's stream split in two at every byte: the first part's partial
 * record is never consumed, the rest completes it. `reset` clears ctx
 * before each split, `check` looks at what the sink got. */
static void feed_split_everywhere(const struct hl_enc *e, hl_decode_sink_fn sink, void *ctx,
				  void (*reset)(void *ctx), void (*check)(void *ctx))
{
	uint8_t *copy = aligned_alloc(8, (e->len + 7) & ~7ul);

	for (size_t split = 0; split <= e->len; split++) {
		struct hl_decoder d;
		long used;

		reset(ctx);
		hl_decode_init(&d, sink, ctx);
		memcpy(copy, e->buf, e->len);
		used = hl_decode_feed(&d, copy, split);
		assert_true(used >= 0 && (size_t)used <= split && used % 8 == 0);
		memmove(copy, copy + used, e->len - (size_t)used);
		assert_int_equal(hl_decode_feed(&d, copy, e->len - (size_t)used),
				 (long)(e->len - (size_t)used));
		check(ctx);
		hl_decode_destroy(&d);
	}
	free(copy);
}

static void seen_reset(void *ctx)
{
	memset(ctx, 0, sizeof(struct seen));
}

static void seen_check_15(void *ctx)
{
	assert_int_equal(((struct seen *)ctx)->total, 15);
}

static void valid_stream(struct hl_enc *e)
{
	const char *argv[] = { "prog", "-x" };
	uint64_t frames[3] = { 0x401000, 0x401100, 0x401200 };
	uint8_t build_id[20] = { 1, 2, 3 };
	struct hl_wire_live_block live = { .address = 0x2000, .size = 8, .stack_id = 1 };
	struct hl_wire_live_indirect indirect = { .index = 0, .bytes = 64 };
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
	hl_enc_live_indirect(e, &live, 1, 0, &indirect, 1); /* a LIVE grown at its end */
	hl_enc_exit(e, HL_EXIT_NORMAL, 0, 18);
}

static void test_roundtrip(void **state)
{
	struct hl_enc e;
	struct hl_decoder d;
	struct seen s = { 0 };

	hl_enc_init(&e);
	valid_stream(&e);
	hl_decode_init(&d, count_sink, &s);
	assert_int_equal(hl_decode_feed(&d, e.buf, e.len), (long)e.len);
	assert_int_equal(s.total, 15);
	assert_int_equal(s.count[HL_REC_ALLOC], 2);
	assert_int_equal(s.count[HL_REC_LIVE], 1);
	assert_int_equal(d.pid, 100);
	hl_decode_destroy(&d);

	feed_split_everywhere(&e, count_sink, &s, seen_reset, seen_check_15);
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

/* A flag bit the protocol does not define, next to HL_ALLOC_TALLIED. */
static void bad_alloc_flags(struct hl_enc *e)
{
	hl_enc_alloc(e, 0x10, 1, 1, 0, HL_ALLOC_TALLIED << 1);
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

static void bad_live_flags(struct hl_enc *e)
{
	struct hl_wire_live_block b = { .address = 8, .size = 1 };

	hl_enc_live(e, &b, 1, HL_LIVE_FLAGS + 1);
}

static void bad_live_indirect_index(struct hl_enc *e)
{
	struct hl_wire_live_block b = { .address = 8, .size = 1 };
	struct hl_wire_live_indirect ind = { .index = 1, .bytes = 5 };

	hl_enc_live_indirect(e, &b, 1, 0, &ind, 1);
}

static void bad_check_flags(struct hl_enc *e)
{
	hl_enc_check(e, 1, HL_CHECK_FLAGS + 1, 0);
}

static void bad_check_seq(struct hl_enc *e)
{
	hl_enc_check(e, 0, 0, 0);
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

static void bad_fd_flags(struct hl_enc *e)
{
	hl_enc_fd(e, 3, 0, HL_FD_FILE, 0, HL_FD_FLAGS + 1, "/x");
}

static void bad_fd_text(struct hl_enc *e)
{
	struct hl_rec_fd *r = hl_enc_record(e, HL_REC_FD, sizeof(*r) + 8);

	r->fd = 3;
	r->text_len = 8;
	memcpy(r + 1, "no--nul!", 8);
}

static void bad_fd_text_len(struct hl_enc *e)
{
	struct hl_rec_fd *r = hl_enc_record(e, HL_REC_FD, sizeof(*r) + 8);

	r->fd = 3;
	r->text_len = 9;
}

static void bad_fd_inherited_stack(struct hl_enc *e)
{
	uint64_t frame = 0x401000;

	hl_enc_stack(e, 1, &frame, 1, 0);
	hl_enc_fd(e, 3, 1, HL_FD_FILE, 0, HL_FD_INHERITED, NULL);
}

static void bad_fd_stack(struct hl_enc *e)
{
	hl_enc_fd(e, 3, 6, HL_FD_SOCKET, 1, 0, "<unknown>");
}

static void bad_fd_kind(struct hl_enc *e)
{
	hl_enc_fd(e, -1, 0, HL_FD_FILE, 0, 0, NULL);
}

static void bad_fd_summary(struct hl_enc *e)
{
	hl_enc_fd_summary(e, 2, 3, 0, 0);
}

static void bad_spawn_flags(struct hl_enc *e)
{
	hl_enc_spawn(e, 9, "/bin/true", HL_SPAWN_FAILED << 1);
}

static void bad_spawn_pid(struct hl_enc *e)
{
	hl_enc_spawn(e, 0, "/bin/true", 0);
}

/* path_len claims more bytes than the record holds. */
static void bad_spawn_overrun(struct hl_enc *e)
{
	struct hl_rec_spawn *r = hl_enc_record(e, HL_REC_SPAWN, sizeof(*r) + 8);

	r->child_pid = 9;
	r->path_len = 9;
}

/* Eight bytes of path, none of them its NUL. */
static void bad_spawn_string(struct hl_enc *e)
{
	struct hl_rec_spawn *r = hl_enc_record(e, HL_REC_SPAWN, sizeof(*r) + 8);

	r->child_pid = 9;
	r->path_len = 8;
	memset(r + 1, 'x', 8);
}

static void bad_exec_flags(struct hl_enc *e)
{
	size_t at = e->len;

	hl_enc_exec(e, "/bin/true");
	((struct hl_wire_header *)(void *)(e->buf + at))->flags = HL_EXEC_TRACED << 1;
}

static void test_malformed(void **state)
{
	expect_reject(bad_fd_flags, "FD with unknown flags");
	expect_reject(bad_fd_text, "NUL");
	expect_reject(bad_fd_text_len, "text_len");
	expect_reject(bad_fd_inherited_stack, "with a stack");
	expect_reject(bad_fd_stack, "unknown stack id 6");
	expect_reject(bad_fd_kind, "negative");
	expect_reject(bad_fd_summary, "counts");
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
	expect_reject(bad_live_flags, "unknown flags");
	expect_reject(bad_live_indirect_index, "does not hold");
	expect_reject(bad_check_flags, "unknown flags");
	expect_reject(bad_check_seq, "sequence number 0");
	expect_reject(bad_error_stack, "unknown stack id 4");
	expect_reject(bad_exit_how, "how");
	expect_reject(bad_spawn_flags, "SPAWN with unknown flags");
	expect_reject(bad_spawn_pid, "SPAWN of pid 0");
	expect_reject(bad_spawn_overrun, "SPAWN path_len out of range");
	expect_reject(bad_spawn_string, "SPAWN path is not one NUL-terminated string");
	expect_reject(bad_exec_flags, "EXEC with unknown flags");
}

/* ---- packed events ---------------------------------------------------------- */

#define BASE_ADDRESS 0x7f0000100000ull
#define BASE_TICKS 1000000ull

/* Copies of what the sink received, in order, and when hints came. */
struct recorded {
	size_t n;
	union {
		struct hl_wire_header h;
		struct hl_rec_alloc alloc;
		struct hl_rec_free free;
		struct hl_rec_realloc realloc;
		struct hl_rec_thread thread;
		struct hl_rec_fork fork;
		struct hl_rec_error error;
		uint8_t raw[128];
	} recs[32];
	size_t hinted;          /* hints of the batch's last 12 ALLOCs so far */
	size_t hinted_at[32];   /* `hinted` when record i was sunk */
};

static int record_sink(void *ctx, const struct hl_wire_header *rec)
{
	struct recorded *r = ctx;

	assert_true(r->n < 32);
	memcpy(&r->recs[r->n], rec, rec->length < 128 ? rec->length : 128);
	r->hinted_at[r->n] = r->hinted;
	r->n++;
	return 0;
}

static bool record_hint(void *ctx, const struct hl_wire_header *rec)
{
	struct recorded *r = ctx;
	const struct hl_rec_alloc *a = (const void *)rec;

	if (rec->type == HL_REC_ALLOC && a->address >= BASE_ADDRESS + 0x1000)
		r->hinted++;
	return true;
}

static void packed_stream(struct hl_enc *e)
{
	const char *argv[] = { "p" };
	uint64_t frames[2] = { 0x401000, 0x401100 };
	struct hl_rec_fork fork = { .h = { HL_WIRE_VERSION, HL_REC_FORK, 0, sizeof(fork) },
				    .child_pid = 4242, .ticks = BASE_TICKS + 9 };
	struct hl_rec_error error = { .h = { HL_WIRE_VERSION, HL_REC_ERROR, 0, sizeof(error) },
				      .kind = HL_ERROR_DOUBLE_FREE, .stack_id = 2,
				      .address = BASE_ADDRESS + 0x40, .alloc_stack_id = 1 };

	hl_enc_hello(e, 7, 1, HL_ORIGIN_START, "/p", 1, argv);
	hl_enc_stack(e, 1, frames, 2, 0);
	hl_enc_stack(e, 2, frames + 1, 1, 0);
	hl_enc_batch_packed(e, 70, BASE_TICKS + 100, 0, BASE_TICKS, BASE_ADDRESS);
	hl_enc_pack_thread(e, HL_REC_THREAD_START, 70, BASE_TICKS);
	/* Near both bases: one byte a field. */
	hl_enc_pack_alloc(e, BASE_ADDRESS + 0x10, 24, BASE_TICKS + 1, 1, HL_KIND_MALLOC);
	/* Far below the address base, before the tick base, a 2^40-byte size. */
	hl_enc_pack_alloc(e, 0x55000000a000ull, 1ull << 40, BASE_TICKS - 5, 2, HL_KIND_NEW_ARRAY);
	hl_enc_pack_realloc(e, BASE_ADDRESS + 0x10, BASE_ADDRESS + 0x10, 48, BASE_TICKS + 2, 1);
	hl_enc_pack_realloc(e, BASE_ADDRESS + 0x10, 0x7effff000000ull, 1u << 20, BASE_TICKS + 3, 0);
	hl_enc_pack_free(e, 0x7effff000000ull, BASE_TICKS + 4, HL_KIND_MALLOC);
	hl_enc_pack_free(e, 0x55000000a000ull, BASE_TICKS + 70000, HL_KIND_NEW_ARRAY);
	hl_enc_pack_record(e, &fork);
	hl_enc_pack_record(e, &error);
	for (uint64_t i = 0; i < 12; i++) /* more than the lookahead */
		hl_enc_pack_alloc(e, BASE_ADDRESS + 0x1000 + i * 32, 32, BASE_TICKS + 10 + i, 1,
				  HL_KIND_CALLOC);
	/* A full-size record after the batch still belongs to its thread. */
	hl_enc_alloc(e, 0x9000, 8, BASE_TICKS + 99, 0, HL_KIND_MALLOC);
	hl_enc_exit(e, HL_EXIT_NORMAL, 0, BASE_TICKS + 100);
}

static void check_packed_records(const struct recorded *r)
{
	static const uint8_t types[] = {
		HL_REC_HELLO, HL_REC_STACK, HL_REC_STACK, HL_REC_BATCH, HL_REC_THREAD_START,
		HL_REC_ALLOC, HL_REC_ALLOC, HL_REC_REALLOC, HL_REC_REALLOC, HL_REC_FREE,
		HL_REC_FREE, HL_REC_FORK, HL_REC_ERROR,
	};

	assert_int_equal(r->n, sizeof(types) + 12 + 2);
	for (size_t i = 0; i < sizeof(types); i++)
		assert_int_equal(r->recs[i].h.type, types[i]);
	assert_int_equal(r->recs[4].thread.tid, 70);
	assert_int_equal(r->recs[4].thread.ticks, BASE_TICKS);

	assert_int_equal(r->recs[5].alloc.address, BASE_ADDRESS + 0x10);
	assert_int_equal(r->recs[5].alloc.size, 24);
	assert_int_equal(r->recs[5].alloc.ticks, BASE_TICKS + 1);
	assert_int_equal(r->recs[5].alloc.stack_id, 1);
	assert_int_equal(r->recs[5].h.flags, HL_KIND_MALLOC);
	assert_int_equal(r->recs[5].h.length, sizeof(struct hl_rec_alloc));

	assert_int_equal(r->recs[6].alloc.address, 0x55000000a000ull);
	assert_int_equal(r->recs[6].alloc.size, 1ull << 40);
	assert_int_equal(r->recs[6].alloc.ticks, BASE_TICKS - 5);
	assert_int_equal(r->recs[6].alloc.stack_id, 2);
	assert_int_equal(r->recs[6].h.flags, HL_KIND_NEW_ARRAY);

	assert_int_equal(r->recs[7].realloc.old_address, BASE_ADDRESS + 0x10);
	assert_int_equal(r->recs[7].realloc.new_address, BASE_ADDRESS + 0x10);
	assert_int_equal(r->recs[7].realloc.size, 48);
	assert_int_equal(r->recs[7].realloc.ticks, BASE_TICKS + 2);
	assert_int_equal(r->recs[7].realloc.stack_id, 1);
	assert_int_equal(r->recs[8].realloc.new_address, 0x7effff000000ull);
	assert_int_equal(r->recs[8].realloc.size, 1u << 20);
	assert_int_equal(r->recs[8].realloc.stack_id, 0);

	assert_int_equal(r->recs[9].free.address, 0x7effff000000ull);
	assert_int_equal(r->recs[9].free.ticks, BASE_TICKS + 4);
	assert_int_equal(r->recs[10].free.address, 0x55000000a000ull);
	assert_int_equal(r->recs[10].free.ticks, BASE_TICKS + 70000);
	assert_int_equal(r->recs[10].h.flags, HL_KIND_NEW_ARRAY);

	assert_int_equal(r->recs[11].fork.child_pid, 4242);
	assert_int_equal(r->recs[12].error.kind, HL_ERROR_DOUBLE_FREE);
	assert_int_equal(r->recs[12].error.address, BASE_ADDRESS + 0x40);
	for (uint64_t i = 0; i < 12; i++) {
		assert_int_equal(r->recs[13 + i].h.type, HL_REC_ALLOC);
		assert_int_equal(r->recs[13 + i].alloc.address, BASE_ADDRESS + 0x1000 + i * 32);
		assert_int_equal(r->recs[13 + i].alloc.ticks, BASE_TICKS + 10 + i);
		assert_int_equal(r->recs[13 + i].h.flags, HL_KIND_CALLOC);
	}
	assert_int_equal(r->recs[25].alloc.address, 0x9000);
	assert_int_equal(r->recs[26].h.type, HL_REC_EXIT);
}

static void recorded_reset(void *ctx)
{
	memset(ctx, 0, sizeof(struct recorded));
}

static void recorded_check(void *ctx)
{
	check_packed_records(ctx);
}

static void test_packed_roundtrip(void **state)
{
	struct hl_enc e;
	struct hl_decoder d;
	struct recorded *r = calloc(1, sizeof(*r));

	hl_enc_init(&e);
	packed_stream(&e);
	hl_decode_init(&d, record_sink, r);
	d.hint = record_hint;
	assert_int_equal(hl_decode_feed(&d, e.buf, e.len), (long)e.len);
	check_packed_records(r);
	/* Each packed event is hinted before the sink gets it, and at most
	 * HL_DECODE_LOOKAHEAD events ahead. */
	for (size_t k = 0; k < 12; k++) {
		assert_true(r->hinted_at[13 + k] >= k + 1);
		assert_true(r->hinted_at[13 + k] <= k + HL_DECODE_LOOKAHEAD);
	}
	assert_int_equal(r->hinted, 12);
	assert_int_equal(d.records, r->n);
	hl_decode_destroy(&d);

	/* The batch is consumed whole or not at all. */
	feed_split_everywhere(&e, record_sink, r, recorded_reset, recorded_check);
	free(r);
	hl_enc_destroy(&e);
}

/* hl_pack_read takes each field with one 8-byte load where a whole event's
 * worth of bytes follows, else byte-exact loads: both give the fields
 * written, at every field size, and with the bytes after the event set
 * (they must be masked off), and the exact path refuses one byte short. */
static void test_packed_read_paths(void **state)
{
	static const uint64_t sizes[] = { 0x7f, 0xabcd, 0x89abcdef, 0x0123456789abcdefull };
	static const unsigned events[] = { HL_PACK_ALLOC, HL_PACK_FREE, HL_PACK_REALLOC };

	(void)state;
	for (unsigned e = 0; e < 3; e++) {
		unsigned n = hl_pack_field_count(events[e]);

		for (unsigned combo = 0; combo < (1u << (2 * n)); combo++) {
			uint8_t buf[2 * HL_PACK_MAX_EVENT];
			uint64_t in[HL_PACK_MAX_FIELDS], out[HL_PACK_MAX_FIELDS];
			unsigned event, kind;

			for (unsigned i = 0; i < n; i++)
				in[i] = sizes[(combo >> (2 * i)) & 3];
			memset(buf, 0xff, sizeof(buf));
			uint32_t len = hl_pack_write(buf, events[e], 0, in, n);
			memset(buf + len, 0xa5, sizeof(buf) - len);

			/* fast path: room for a whole event after it */
			assert_int_equal(hl_pack_read(buf, sizeof(buf), &event, &kind, out), len);
			assert_int_equal(event, events[e]);
			assert_memory_equal(in, out, n * sizeof(uint64_t));
			/* exact path: the event and nothing after it (the fast one for
			 * the one event of HL_PACK_MAX_EVENT bytes) */
			memset(out, 0, sizeof(out));
			assert_int_equal(hl_pack_read(buf, len, &event, &kind, out), len);
			assert_memory_equal(in, out, n * sizeof(uint64_t));
			assert_int_equal(hl_pack_read(buf, len - 1, &event, &kind, out), 0);
		}
	}
}

/* hl_pack_write gives each field the fewest of 1, 2, 4 and 8 bytes that
 * hold it (its size code from a table of leading zeros): at every bit
 * boundary, the code in the op word, the event's length and the value read
 * back. */
static void test_packed_field_sizes(void **state)
{
	(void)state;
	for (unsigned bit = 0; bit <= 64; bit++) {
		uint64_t edge = bit == 64 ? 0 : (uint64_t)1 << bit;
		uint64_t values[3] = { edge - 1, edge, edge + 1 }; /* edge 0: UINT64_MAX, 0, 1 */

		for (unsigned v = 0; v < 3; v++) {
			uint64_t x = values[v];
			unsigned want = (x > 0xffu) + (x > 0xffffu) + (x > 0xffffffffu);
			uint64_t in[2] = { x, 0 }, out[HL_PACK_MAX_FIELDS] = { 0 };
			uint8_t buf[2 * HL_PACK_MAX_EVENT] = { 0 };
			unsigned event, kind;
			uint16_t op;

			uint32_t len = hl_pack_write(buf, HL_PACK_FREE, 0, in, 2);
			memcpy(&op, buf, sizeof(op));
			assert_int_equal((op >> 6) & 3u, want);
			assert_int_equal((op >> 8) & 3u, 0);
			assert_int_equal(len, HL_PACK_OP_BYTES + (1u << want) + 1);
			assert_int_equal(hl_pack_read(buf, len, &event, &kind, out), len);
			assert_true(out[0] == x);
		}
	}
}

/* Events near the bases take a byte a field: the point of packing. */
static void test_packed_is_compact(void **state)
{
	struct hl_enc e;
	const struct hl_rec_batch *b;

	hl_enc_init(&e);
	hl_enc_batch_packed(&e, 1, 0, 0, BASE_TICKS, BASE_ADDRESS);
	hl_enc_pack_alloc(&e, BASE_ADDRESS + 0x40, 100, BASE_TICKS + 200, 3, HL_KIND_MALLOC);
	hl_enc_pack_free(&e, BASE_ADDRESS - 0x40, BASE_TICKS + 250, HL_KIND_MALLOC);
	b = (const void *)e.buf;
	assert_int_equal(b->packed_bytes, (2 + 4) + (2 + 2));
	assert_int_equal(b->h.length, sizeof(*b) + 16);
	hl_enc_destroy(&e);
}

static void packed_open(struct hl_enc *e)
{
	uint64_t frame = 0x401000;

	hl_enc_stack(e, 1, &frame, 1, 0);
	hl_enc_batch_packed(e, 7, 10, 0, 10, 0x10000);
}

static void bad_packed_truncated(struct hl_enc *e)
{
	uint8_t ev[3] = { HL_PACK_FREE | 3u << 6, 0, 1 }; /* ticks claims 8 bytes */

	packed_open(e);
	hl_enc_pack_raw(e, ev, sizeof(ev));
}

static void bad_packed_event_zero(struct hl_enc *e)
{
	uint8_t ev[4] = { 0, 0, 1, 1 };

	packed_open(e);
	hl_enc_pack_raw(e, ev, sizeof(ev));
}

static void bad_packed_event_unknown(struct hl_enc *e)
{
	uint8_t ev[4] = { 5, 0, 1, 1 };

	packed_open(e);
	hl_enc_pack_raw(e, ev, sizeof(ev));
}

static void bad_packed_unused_bits(struct hl_enc *e)
{
	uint8_t ev[4] = { HL_PACK_FREE, 1u << 2, 1, 2 }; /* a size for a third field */

	packed_open(e);
	hl_enc_pack_raw(e, ev, sizeof(ev));
}

static void bad_packed_realloc_kind(struct hl_enc *e)
{
	uint8_t ev[HL_PACK_MAX_EVENT];
	uint64_t f[5] = { 1, 2, 0, 8, 1 };

	packed_open(e);
	hl_enc_pack_raw(e, ev, hl_pack_write(ev, HL_PACK_REALLOC, 1, f, 5));
}

static void bad_packed_alloc_kind(struct hl_enc *e)
{
	packed_open(e);
	hl_enc_pack_alloc(e, 0x10010, 8, 11, 1, HL_KIND_COUNT);
}

static void bad_packed_stack_huge(struct hl_enc *e)
{
	uint8_t ev[HL_PACK_MAX_EVENT];
	uint64_t f[4] = { 1, 2, 8, 1ull << 32 };

	packed_open(e);
	hl_enc_pack_raw(e, ev, hl_pack_write(ev, HL_PACK_ALLOC, 0, f, 4));
}

static void bad_packed_unknown_stack(struct hl_enc *e)
{
	packed_open(e);
	hl_enc_pack_alloc(e, 0x10010, 8, 11, 1, 0);
	hl_enc_pack_alloc(e, 0x10020, 8, 12, 7, 0);
}

static void bad_packed_address_zero(struct hl_enc *e)
{
	packed_open(e);
	hl_enc_pack_free(e, 0, 11, 0);
}

static void bad_packed_record_hello(struct hl_enc *e)
{
	struct hl_rec_hello h = { .h = { HL_WIRE_VERSION, HL_REC_HELLO, 0, sizeof(h) } };

	packed_open(e);
	hl_enc_pack_record(e, &h);
}

static void bad_packed_record_long(struct hl_enc *e)
{
	uint8_t ev[2 + 8 + HL_PACK_MAX_RECORD] = { HL_PACK_RECORD };
	struct hl_wire_header h = { HL_WIRE_VERSION, HL_REC_DROPPED, 0, HL_PACK_MAX_RECORD + 8 };

	memcpy(ev + 2, &h, sizeof(h));
	packed_open(e);
	hl_enc_pack_raw(e, ev, sizeof(ev));
}

static void bad_packed_record_truncated(struct hl_enc *e)
{
	uint8_t ev[6] = { HL_PACK_RECORD, 0, HL_WIRE_VERSION, HL_REC_THREAD_END };

	packed_open(e);
	hl_enc_pack_raw(e, ev, sizeof(ev));
}

static void bad_packed_record_version(struct hl_enc *e)
{
	struct hl_rec_thread t = { .h = { 1, HL_REC_THREAD_END, 0, sizeof(t) }, .tid = 7 };

	packed_open(e);
	hl_enc_pack_record(e, &t);
}

static void bad_batch_overrun(struct hl_enc *e)
{
	struct hl_rec_batch *b;

	packed_open(e);
	b = (void *)(e->buf + e->batch_at);
	b->packed_bytes = 8;
}

static void bad_batch_padding(struct hl_enc *e)
{
	packed_open(e);
	hl_enc_pack_free(e, 0x10010, 11, 0); /* 4 bytes, then 4 of padding */
	e->buf[e->len - 1] = 1;
}

static void test_packed_malformed(void **state)
{
	expect_reject(bad_packed_truncated, "truncated packed event");
	expect_reject(bad_packed_event_zero, "malformed");
	expect_reject(bad_packed_event_unknown, "malformed");
	expect_reject(bad_packed_unused_bits, "malformed");
	expect_reject(bad_packed_realloc_kind, "REALLOC with a kind");
	expect_reject(bad_packed_alloc_kind, "unknown allocation kind");
	expect_reject(bad_packed_stack_huge, "above 32 bits");
	expect_reject(bad_packed_unknown_stack, "unknown stack id 7 (packed event 1 of the BATCH");
	expect_reject(bad_packed_address_zero, "FREE of address 0");
	expect_reject(bad_packed_record_hello, "cannot be packed");
	expect_reject(bad_packed_record_long, "longer than HL_PACK_MAX_RECORD");
	expect_reject(bad_packed_record_truncated, "truncated");
	expect_reject(bad_packed_record_version, "wrong wire version");
	expect_reject(bad_batch_overrun, "overrun");
	expect_reject(bad_batch_padding, "padding");
}

static int count_events(void *ctx, const struct hl_event *ev, size_t n)
{
	struct seen *s = ctx;

	for (size_t i = 0; i < n; i++)
		s->count[ev[i].type]++;
	s->total += n;
	return 0;
}

/* Each malformed event of test_packed_malformed that a whole event's bytes
 * follow (valid FREEs after it), through the events sink's straight-line
 * reader as through the record sink: refused, for the same reason, after
 * the same valid events. */
static void expect_reject_mid(void (*build)(struct hl_enc *), const char *why)
{
	const char *argv[] = { "p" };

	for (int events = 0; events < 2; events++) {
		struct hl_enc e;
		struct hl_decoder d;
		struct seen s = { 0 };

		hl_enc_init(&e);
		hl_enc_hello(&e, 7, 1, HL_ORIGIN_START, "/p", 1, argv);
		build(&e);
		for (uint64_t i = 0; i < 8; i++)
			hl_enc_pack_free(&e, 0x10100 + i * 16, 20 + i, HL_KIND_MALLOC);
		hl_decode_init(&d, count_sink, &s);
		if (events)
			d.events = count_events;
		assert_int_equal(hl_decode_feed(&d, e.buf, e.len), -EPROTO);
		if (!strstr(d.error, why))
			fail_msg("reason '%s' does not mention '%s'", d.error, why);
		assert_int_equal(s.count[HL_REC_FREE], 0);
		hl_decode_destroy(&d);
		hl_enc_destroy(&e);
	}
}

static void test_packed_malformed_mid_batch(void **state)
{
	(void)state;
	expect_reject_mid(bad_packed_event_zero, "malformed");
	expect_reject_mid(bad_packed_event_unknown, "malformed");
	expect_reject_mid(bad_packed_unused_bits, "malformed");
	expect_reject_mid(bad_packed_realloc_kind, "REALLOC with a kind");
	expect_reject_mid(bad_packed_alloc_kind, "unknown allocation kind");
	expect_reject_mid(bad_packed_stack_huge, "above 32 bits");
	expect_reject_mid(bad_packed_unknown_stack, "unknown stack id 7 (packed event 1 of the BATCH");
	expect_reject_mid(bad_packed_address_zero, "FREE of address 0");
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
		cmocka_unit_test(test_packed_roundtrip),
		cmocka_unit_test(test_packed_is_compact),
		cmocka_unit_test(test_packed_read_paths),
		cmocka_unit_test(test_packed_field_sizes),
		cmocka_unit_test(test_packed_malformed),
		cmocka_unit_test(test_packed_malformed_mid_batch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
