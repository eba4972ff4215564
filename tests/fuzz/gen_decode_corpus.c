/*
 * tests/fuzz/gen_decode_corpus.c: writes the seed inputs of
 * corpus/decode/ with the reporter's own encoder: a full valid process,
 * fork/exec HELLOs, realloc churn, LIVE (with indirect bytes)/CHECK/ERROR records,
 * the descriptors open at exit (track_fds), checks and an exit naming
 * threads that did not stop, and a few malformed
 * streams. Each file starts with the read-split byte fuzz_decode.c expects.
 * Usage: gen_decode_corpus DIR
 */
#include <stdio.h>
#include <string.h>

#include "encode.h"

static int save(const char *dir, const char *name, uint8_t split, const struct hl_enc *e)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	fputc(split, f);
	fwrite(e->buf, 1, e->len, f);
	return fclose(f);
}

static void hello(struct hl_enc *e, uint32_t origin)
{
	const char *argv[] = { "prog", "--flag" };

	hl_enc_hello(e, 1000, 999, origin, "/usr/bin/prog", 2, argv);
	hl_enc_options(e, HL_OPTIONS_MAX_LEAKS, 3);
}

static void full_process(struct hl_enc *e)
{
	uint64_t frames[4] = { 0x401000, 0x401234, 0x7f0000001000, 0x7f0000002000 };
	uint8_t build_id[20] = { 0xde, 0xad, 0xbe, 0xef };
	struct hl_wire_live_block live[2] = {
		{ .address = 0x20000, .size = 32, .stack_id = 1, .leak_class = 1 },
		{ .address = 0x30000, .size = 8, .stack_id = 2, .leak_class = 4 },
	};
	struct hl_wire_live_indirect indirect = { .index = 0, .bytes = 24 };
	struct hl_rec_error err = { .kind = HL_ERROR_DOUBLE_FREE, .stack_id = 2,
				    .address = 0x40000, .alloc_stack_id = 1 };

	hello(e, HL_ORIGIN_START);
	hl_enc_batch(e, 1000, 1, 0);
	hl_enc_module(e, 1, "/usr/bin/prog", 0, 0x400000, 0x500000, build_id, 20);
	hl_enc_module(e, 2, "/lib/libc.so.6", 0x7f0000000000, 0x7f0000000000,
		      0x7f0000200000, NULL, 0);
	hl_enc_stack(e, 1, frames, 4, 0);
	hl_enc_stack(e, 2, frames + 1, 3, 1);
	hl_enc_thread(e, HL_REC_THREAD_START, 1001, 2);
	for (uint64_t i = 0; i < 16; i++)
		hl_enc_alloc(e, 0x10000 + i * 16, i + 1, 3 + i, (uint32_t)(i % 2) + 1, i % 5);
	hl_enc_free(e, 0x10010, 30, 0);
	hl_enc_realloc(e, 0x10020, 0x50000, 100, 31, 1);
	hl_enc_fork(e, 1002, 32);
	hl_enc_spawn(e, 1003, "/usr/bin/env", 0);
	hl_enc_spawn(e, 1004, "/bin/sh", HL_SPAWN_FAILED);
	hl_enc_module_unload(e, 2, 33);
	hl_enc_error(e, &err);
	hl_enc_dropped(e, 5);
	hl_enc_fd_summary(e, 6, 3, 3, 0); /* track_fds=yes */
	hl_enc_fd(e, 4, 2, HL_FD_SOCKET, 2, 0, "127.0.0.1:80 <-> unbound");
	hl_enc_fd(e, 3, 1, HL_FD_FILE, 0, 0, "/etc/hostname");
	hl_enc_fd(e, 9, 0, HL_FD_FILE, 0, HL_FD_INHERITED, NULL);
	hl_enc_thread(e, HL_REC_THREAD_END, 1001, 34);
	hl_enc_live(e, live, 2, HL_LIVE_SCANNED | HL_LIVE_CHECK);
	hl_enc_check(e, 1, HL_CHECK_SIGNAL, 34);
	hl_enc_live_indirect(e, live, 2, HL_LIVE_SCANNED, &indirect, 1);
	hl_enc_exit(e, HL_EXIT_NORMAL, 0, 35);
}

/* What the hook sends: batches of packed events, every kind of event. */
static void packed_process(struct hl_enc *e)
{
	uint64_t frames[2] = { 0x401000, 0x401234 };
	struct hl_rec_fork fork = { .h = { HL_WIRE_VERSION, HL_REC_FORK, 0, sizeof(fork) },
				    .child_pid = 1002, .ticks = 50 };
	struct hl_rec_error err = { .h = { HL_WIRE_VERSION, HL_REC_ERROR, 0, sizeof(err) },
				    .kind = HL_ERROR_INVALID_FREE, .stack_id = 1,
				    .address = 0x123 };

	hello(e, HL_ORIGIN_START);
	hl_enc_stack(e, 1, frames, 2, 0);
	hl_enc_batch_packed(e, 1000, 100, 0, 40, 0x7f0000010000);
	hl_enc_pack_thread(e, HL_REC_THREAD_START, 1000, 40);
	for (uint64_t i = 0; i < 24; i++)
		hl_enc_pack_alloc(e, 0x7f0000010000 + i * 48, 8 + i * 1000, 41 + i, i % 2,
				  i % HL_KIND_COUNT);
	hl_enc_pack_realloc(e, 0x7f0000010000, 0x7f0000010000, 4, 70, 1);
	hl_enc_pack_realloc(e, 0x7f0000010030, 0x5500000000, 1 << 30, 71, 0);
	hl_enc_pack_free(e, 0x5500000000, 72, 0);
	struct {
		struct hl_rec_spawn rec;
		char path[8];
	} spawn = { { .h = { HL_WIRE_VERSION, HL_REC_SPAWN, 0, sizeof(spawn) },
		      .child_pid = 1003, .path_len = 8, .ticks = 51 }, "/bin/sh" };
	hl_enc_pack_record(e, &fork);
	hl_enc_pack_record(e, &spawn);
	hl_enc_pack_record(e, &err);
	hl_enc_batch_packed(e, 1001, 200, 1, 150, 0x7f0000020000);
	hl_enc_pack_thread(e, HL_REC_THREAD_START, 1001, 150);
	for (uint64_t i = 0; i < 24; i++)
		hl_enc_pack_free(e, 0x7f0000010000 + i * 48, 149 - i, i % HL_KIND_COUNT);
	hl_enc_pack_thread(e, HL_REC_THREAD_END, 1001, 151);
	hl_enc_exit(e, HL_EXIT_NORMAL, 0, 300);
}

/* Two checks and the exit, each scan with threads that did not stop (named
 * in the tail of CHECK and EXIT: an odd count, and more than a reader
 * takes); loss records that grow, shrink and vanish between the checks. */
static void checkpoints_process(struct hl_enc *e)
{
	uint64_t frames[2] = { 0x401000, 0x401234 };
	uint32_t tids[HL_WIRE_MAX_UNSTOPPED_TIDS + 3];
	struct hl_wire_live_block first[3] = {
		{ .address = 0x20000, .size = 32, .stack_id = 1, .leak_class = 1 },
		{ .address = 0x20040, .size = 32, .stack_id = 1, .leak_class = 1 },
		{ .address = 0x30000, .size = 8, .stack_id = 2, .leak_class = 2 },
	};
	struct hl_wire_live_block second[2] = {
		first[0], { .address = 0x40000, .size = 64, .stack_id = 2, .leak_class = 1 },
	};
	struct hl_wire_live_indirect indirect = { .index = 0, .bytes = 8 };
	const uint16_t checked = HL_LIVE_SCANNED | HL_LIVE_CHECK | HL_LIVE_UNSTOPPED;

	for (uint32_t i = 0; i < HL_WIRE_MAX_UNSTOPPED_TIDS + 3; i++)
		tids[i] = 2000 + i;
	hello(e, HL_ORIGIN_START);
	hl_enc_stack(e, 1, frames, 2, 0);
	hl_enc_stack(e, 2, frames + 1, 1, 0);
	hl_enc_live_indirect(e, first, 3, checked, &indirect, 1);
	hl_enc_check_unstopped(e, 1, HL_CHECK_UNSTOPPED, 10, tids, 3);
	hl_enc_live(e, second, 2, checked);
	hl_enc_check_unstopped(e, 2, HL_CHECK_UNSTOPPED | HL_CHECK_SIGNAL, 20, tids,
			       HL_WIRE_MAX_UNSTOPPED_TIDS + 3);
	hl_enc_live(e, second, 2, HL_LIVE_SCANNED | HL_LIVE_UNSTOPPED);
	hl_enc_exit_unstopped(e, HL_EXIT_NORMAL, 0, 30, tids + 1, 1);
}

int main(int argc, char **argv)
{
	struct hl_enc e;
	int err = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: gen_decode_corpus DIR\n");
		return 2;
	}
	hl_enc_init(&e);
	full_process(&e);
	err |= save(argv[1], "full-process", 0, &e);
	err |= save(argv[1], "full-process-split", 2, &e);
	e.len = 0;
	hello(&e, HL_ORIGIN_FORK);
	hl_enc_free(&e, 0x10000, 1, 0);
	hl_enc_exit(&e, HL_EXIT_UNDERSCORE, 3, 2);
	err |= save(argv[1], "fork-child", 1, &e);
	e.len = 0;
	hello(&e, HL_ORIGIN_EXEC);
	for (uint64_t i = 0; i < 64; i++) { /* out-of-order reuse of one address */
		hl_enc_alloc(&e, 0x9000, 8, 100 - i, 0, 0);
		hl_enc_free(&e, 0x9000, 120 - i, 0);
	}
	err |= save(argv[1], "exec-reorder", 0, &e);
	e.len = 0;
	hello(&e, HL_ORIGIN_START); /* replaced by an image that never reports */
	hl_enc_alloc(&e, 0x9000, 8, 1, 0, 0);
	hl_enc_exec(&e, "/usr/bin/untraced");
	err |= save(argv[1], "exec-untraced", 0, &e);
	e.len = 0;
	packed_process(&e);
	err |= save(argv[1], "packed-process", 0, &e);
	err |= save(argv[1], "packed-process-split", 3, &e);
	e.len = 0;
	checkpoints_process(&e);
	err |= save(argv[1], "checkpoints-unstopped", 0, &e);
	err |= save(argv[1], "checkpoints-unstopped-split", 1, &e);
	e.len = 0;
	hello(&e, HL_ORIGIN_START);
	hl_enc_record(&e, HL_REC_STACK, 16 + 8 * 4);
	err |= save(argv[1], "bad-stack-id-zero", 0, &e);
	e.len = 0;
	hello(&e, HL_ORIGIN_START);
	hl_enc_raw(&e, "\x01\x06\x00\x00\xff\xff\xff\x7f", 8);
	err |= save(argv[1], "bad-huge-length", 0, &e);
	e.len = 0;
	hl_enc_alloc(&e, 0x10, 1, 1, 0, 0);
	err |= save(argv[1], "bad-no-hello", 0, &e);
	hl_enc_destroy(&e);
	return err ? 1 : 0;
}
