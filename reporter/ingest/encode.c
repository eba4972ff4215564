/*
 * reporter/ingest/encode.c: wire record writer for tests and benchmarks.
 */
#include "encode.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void hl_enc_init(struct hl_enc *e)
{
	memset(e, 0, sizeof(*e));
}

void hl_enc_destroy(struct hl_enc *e)
{
	free(e->buf);
	hl_enc_init(e);
}

static void reserve(struct hl_enc *e, size_t more)
{
	if (e->len + more <= e->cap)
		return;
	while (e->len + more > e->cap)
		e->cap = e->cap ? e->cap * 2 : 4096;
	e->buf = hl_xrealloc(e->buf, e->cap);
}

void hl_enc_raw(struct hl_enc *e, const void *data, size_t len)
{
	e->batch_open = false;
	reserve(e, len);
	memcpy(e->buf + e->len, data, len);
	e->len += len;
}

void *hl_enc_record(struct hl_enc *e, uint8_t type, uint32_t length)
{
	struct hl_wire_header *h;

	e->batch_open = false;
	length = hl_wire_padded(length);
	reserve(e, length);
	h = (void *)(e->buf + e->len);
	memset(h, 0, length);
	*h = hl_wire_hdr(type, 0, length);
	e->len += length;
	return h;
}

void hl_enc_hello(struct hl_enc *e, uint32_t pid, uint32_t ppid, uint32_t origin,
		  const char *exe, int argc, const char *const *argv)
{
	uint32_t exe_len = (uint32_t)strlen(exe) + 1, argv_len = 0;
	struct hl_rec_hello *r;
	char *p;

	for (int i = 0; i < argc; i++)
		argv_len += (uint32_t)strlen(argv[i]) + 1;
	r = hl_enc_record(e, HL_REC_HELLO, (uint32_t)sizeof(*r) + exe_len + argv_len);
	r->pid = pid;
	r->ppid = ppid;
	r->origin = origin;
	r->argc = (uint32_t)argc;
	r->exe_len = exe_len;
	r->argv_len = argv_len;
	r->stack_depth = 64;
	r->pointer_bytes = 8;
	r->hook_flags = HL_HOOK_STACKS;
	r->start_realtime_ns = hl_now_realtime_ns();
	p = (char *)(r + 1);
	memcpy(p, exe, exe_len);
	p += exe_len;
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;

		memcpy(p, argv[i], n);
		p += n;
	}
}

void hl_enc_batch(struct hl_enc *e, uint32_t tid, uint64_t ticks, uint64_t sequence)
{
	struct hl_rec_batch *r = hl_enc_record(e, HL_REC_BATCH, sizeof(*r));

	r->tid = tid;
	r->ticks = ticks;
	r->monotonic_ns = ticks;
	r->realtime_ns = 1700000000000000000ull + ticks;
	r->sequence = sequence;
}

void hl_enc_module(struct hl_enc *e, uint32_t id, const char *path, uint64_t base,
		   uint64_t low, uint64_t high, const uint8_t *build_id,
		   uint32_t build_id_len)
{
	uint32_t path_len = (uint32_t)strlen(path) + 1;
	struct hl_rec_module_load *r = hl_enc_record(e, HL_REC_MODULE_LOAD,
		(uint32_t)sizeof(*r) + build_id_len + path_len);

	r->module_id = id;
	r->build_id_len = build_id_len;
	r->base = base;
	r->low = low;
	r->high = high;
	r->path_len = path_len;
	if (build_id_len)
		memcpy(r + 1, build_id, build_id_len);
	memcpy((char *)(r + 1) + build_id_len, path, path_len);
}

void hl_enc_module_unload(struct hl_enc *e, uint32_t id, uint64_t ticks)
{
	struct hl_rec_module_unload *r = hl_enc_record(e, HL_REC_MODULE_UNLOAD, sizeof(*r));

	r->module_id = id;
	r->ticks = ticks;
}

void hl_enc_stack(struct hl_enc *e, uint32_t id, const uint64_t *frames,
		  uint16_t depth, uint16_t truncated)
{
	struct hl_rec_stack *r = hl_enc_record(e, HL_REC_STACK,
		(uint32_t)sizeof(*r) + depth * 8u);

	r->stack_id = id;
	r->depth = depth;
	r->truncated = truncated;
	memcpy(r + 1, frames, depth * 8u);
}

void hl_enc_alloc(struct hl_enc *e, uint64_t address, uint64_t size, uint64_t ticks,
		  uint32_t stack_id, unsigned kind)
{
	struct hl_rec_alloc *r = hl_enc_record(e, HL_REC_ALLOC, sizeof(*r));

	r->h.flags = (uint16_t)kind;
	r->address = address;
	r->size = size;
	r->ticks = ticks;
	r->stack_id = stack_id;
}

void hl_enc_free(struct hl_enc *e, uint64_t address, uint64_t ticks, unsigned kind)
{
	struct hl_rec_free *r = hl_enc_record(e, HL_REC_FREE, sizeof(*r));

	r->h.flags = (uint16_t)kind;
	r->address = address;
	r->ticks = ticks;
}

void hl_enc_realloc(struct hl_enc *e, uint64_t old_address, uint64_t new_address,
		    uint64_t size, uint64_t ticks, uint32_t stack_id)
{
	struct hl_rec_realloc *r = hl_enc_record(e, HL_REC_REALLOC, sizeof(*r));

	r->old_address = old_address;
	r->new_address = new_address;
	r->size = size;
	r->ticks = ticks;
	r->stack_id = stack_id;
}

void hl_enc_thread(struct hl_enc *e, uint8_t type, uint32_t tid, uint64_t ticks)
{
	struct hl_rec_thread *r = hl_enc_record(e, type, sizeof(*r));

	r->tid = tid;
	r->ticks = ticks;
}

void hl_enc_fork(struct hl_enc *e, uint32_t child_pid, uint64_t ticks)
{
	struct hl_rec_fork *r = hl_enc_record(e, HL_REC_FORK, sizeof(*r));

	r->child_pid = child_pid;
	r->ticks = ticks;
}

void hl_enc_exit(struct hl_enc *e, uint32_t how, int32_t status, uint64_t ticks)
{
	struct hl_rec_exit *r = hl_enc_record(e, HL_REC_EXIT, sizeof(*r));

	r->how = how;
	r->status = status;
	r->ticks = ticks;
}

void hl_enc_live(struct hl_enc *e, const struct hl_wire_live_block *blocks,
		 uint32_t count, uint16_t flags)
{
	struct hl_rec_live *r = hl_enc_record(e, HL_REC_LIVE,
		(uint32_t)(sizeof(*r) + count * sizeof(*blocks)));

	r->h.flags = flags;
	r->count = count;
	memcpy(r + 1, blocks, count * sizeof(*blocks));
}

void hl_enc_live_indirect(struct hl_enc *e, const struct hl_wire_live_block *blocks,
			  uint32_t count, uint16_t flags,
			  const struct hl_wire_live_indirect *indirect, uint32_t nindirect)
{
	struct hl_rec_live *r = hl_enc_record(e, HL_REC_LIVE,
		(uint32_t)(sizeof(*r) + count * sizeof(*blocks) + nindirect * sizeof(*indirect)));

	r->h.flags = flags;
	r->count = count;
	memcpy(r + 1, blocks, count * sizeof(*blocks));
	memcpy((char *)(r + 1) + count * sizeof(*blocks), indirect, nindirect * sizeof(*indirect));
}

void hl_enc_check(struct hl_enc *e, uint32_t seq, uint32_t flags, uint64_t ticks)
{
	struct hl_rec_check *r = hl_enc_record(e, HL_REC_CHECK, sizeof(*r));

	r->seq = seq;
	r->flags = flags;
	r->ticks = ticks;
}

void hl_enc_check_unstopped(struct hl_enc *e, uint32_t seq, uint32_t flags, uint64_t ticks,
			    const uint32_t *tids, uint32_t n)
{
	struct hl_rec_check *r = hl_enc_record(e, HL_REC_CHECK,
					       (uint32_t)sizeof(*r) + n * (uint32_t)sizeof(*tids));

	r->seq = seq;
	r->flags = flags;
	r->ticks = ticks;
	memcpy(r + 1, tids, n * sizeof(*tids));
}

void hl_enc_exit_unstopped(struct hl_enc *e, uint32_t how, int32_t status, uint64_t ticks,
			   const uint32_t *tids, uint32_t n)
{
	struct hl_rec_exit *r = hl_enc_record(e, HL_REC_EXIT,
					      (uint32_t)sizeof(*r) + n * (uint32_t)sizeof(*tids));

	r->how = how;
	r->status = status;
	r->ticks = ticks;
	memcpy(r + 1, tids, n * sizeof(*tids));
}

void hl_enc_options(struct hl_enc *e, uint32_t given, uint32_t max_leaks)
{
	struct hl_rec_options *r = hl_enc_record(e, HL_REC_OPTIONS, (uint32_t)sizeof(*r));

	r->given = given;
	r->max_leaks = max_leaks;
}

void hl_enc_exec(struct hl_enc *e, const char *path)
{
	uint32_t len = (uint32_t)strlen(path) + 1;
	struct hl_rec_exec *r = hl_enc_record(e, HL_REC_EXEC, (uint32_t)sizeof(*r) + len);

	r->path_len = len;
	memcpy(r + 1, path, len);
}

void hl_enc_fd_summary(struct hl_enc *e, uint32_t open, uint32_t std, uint32_t listed,
		       uint16_t flags)
{
	struct hl_rec_fd_summary *r = hl_enc_record(e, HL_REC_FD_SUMMARY, sizeof(*r));

	r->h.flags = flags;
	r->open = open;
	r->std = std;
	r->listed = listed;
}

void hl_enc_fd(struct hl_enc *e, int32_t fd, uint32_t stack_id, uint32_t kind, uint32_t family,
	       uint16_t flags, const char *text)
{
	uint32_t len = text ? (uint32_t)strlen(text) + 1 : 0;
	struct hl_rec_fd *r = hl_enc_record(e, HL_REC_FD, (uint32_t)sizeof(*r) + len);

	r->h.flags = flags;
	r->fd = fd;
	r->stack_id = stack_id;
	r->kind = kind;
	r->family = family;
	r->text_len = len;
	if (len)
		memcpy(r + 1, text, len);
}

void hl_enc_spawn(struct hl_enc *e, uint32_t child_pid, const char *path, unsigned flags)
{
	uint32_t len = (uint32_t)strlen(path) + 1;
	struct hl_rec_spawn *r = hl_enc_record(e, HL_REC_SPAWN, (uint32_t)sizeof(*r) + len);

	r->h.flags = (uint16_t)flags;
	r->child_pid = child_pid;
	r->path_len = len;
	memcpy(r + 1, path, len);
}

void hl_enc_error(struct hl_enc *e, const struct hl_rec_error *fields)
{
	struct hl_rec_error *r = hl_enc_record(e, HL_REC_ERROR, sizeof(*r));
	struct hl_wire_header h = r->h;

	*r = *fields;
	r->h = h;
}

void hl_enc_dropped(struct hl_enc *e, uint64_t events)
{
	struct hl_rec_dropped *r = hl_enc_record(e, HL_REC_DROPPED, sizeof(*r));

	r->events = events;
}

/* ---- packed events ---------------------------------------------------------- */

void hl_enc_batch_packed(struct hl_enc *e, uint32_t tid, uint64_t ticks, uint64_t sequence,
			 uint64_t base_ticks, uint64_t base_address)
{
	struct hl_rec_batch *r;

	hl_enc_batch(e, tid, ticks, sequence);
	r = (void *)(e->buf + e->len - sizeof(*r));
	r->base_ticks = base_ticks;
	r->base_address = base_address;
	e->batch_at = e->len - sizeof(*r);
	e->batch_open = true;
}

static const struct hl_rec_batch *open_batch(const struct hl_enc *e)
{
	if (!e->batch_open) {
		hl_log("encode: packed event without hl_enc_batch_packed");
		abort(); /* a test or tool bug, not input */
	}
	return (const void *)(e->buf + e->batch_at);
}

/* Appends `len` bytes of packed event to the open batch and keeps the batch
 * a complete record (length, packed_bytes, zero padding) after every call. */
static void pack_append(struct hl_enc *e, const void *event, uint32_t len)
{
	uint32_t packed = open_batch(e)->packed_bytes;
	size_t end = e->batch_at + sizeof(struct hl_rec_batch) + packed;
	uint32_t length = hl_wire_padded((uint32_t)sizeof(struct hl_rec_batch) + packed + len);
	struct hl_rec_batch *r;

	e->len = end;
	reserve(e, length - (end - e->batch_at));
	memcpy(e->buf + end, event, len);
	memset(e->buf + end + len, 0, e->batch_at + length - end - len);
	e->len = e->batch_at + length;
	r = (void *)(e->buf + e->batch_at);
	r->packed_bytes = packed + len;
	r->h.length = length;
}

static void pack_fields(struct hl_enc *e, unsigned event, unsigned kind, const uint64_t *fields,
			unsigned n)
{
	uint8_t buf[HL_PACK_MAX_EVENT];

	pack_append(e, buf, hl_pack_write(buf, event, kind, fields, n));
}

void hl_enc_pack_alloc(struct hl_enc *e, uint64_t address, uint64_t size, uint64_t ticks,
		       uint32_t stack_id, unsigned kind)
{
	const struct hl_rec_batch *b = open_batch(e);
	uint64_t f[4] = { ticks - b->base_ticks, hl_zigzag(address - b->base_address), size,
			  stack_id };

	pack_fields(e, HL_PACK_ALLOC, kind, f, 4);
}

void hl_enc_pack_free(struct hl_enc *e, uint64_t address, uint64_t ticks, unsigned kind)
{
	const struct hl_rec_batch *b = open_batch(e);
	uint64_t f[2] = { ticks - b->base_ticks, hl_zigzag(address - b->base_address) };

	pack_fields(e, HL_PACK_FREE, kind, f, 2);
}

void hl_enc_pack_realloc(struct hl_enc *e, uint64_t old_address, uint64_t new_address,
			 uint64_t size, uint64_t ticks, uint32_t stack_id)
{
	const struct hl_rec_batch *b = open_batch(e);
	uint64_t f[5] = { ticks - b->base_ticks, hl_zigzag(old_address - b->base_address),
			  hl_zigzag(new_address - old_address), size, stack_id };

	pack_fields(e, HL_PACK_REALLOC, 0, f, 5);
}

void hl_enc_pack_raw(struct hl_enc *e, const void *bytes, uint32_t len)
{
	open_batch(e);
	pack_append(e, bytes, len);
}

void hl_enc_pack_record(struct hl_enc *e, const void *rec)
{
	const struct hl_wire_header *h = rec;
	uint8_t buf[HL_PACK_OP_BYTES + HL_PACK_MAX_RECORD];

	if (h->length > HL_PACK_MAX_RECORD) {
		hl_log("encode: record too long for a RECORD event");
		abort();
	}
	hl_enc_pack_raw(e, buf, hl_pack_write_record(buf, rec, h->length));
}

void hl_enc_pack_thread(struct hl_enc *e, uint8_t type, uint32_t tid, uint64_t ticks)
{
	struct hl_rec_thread r = { .h = hl_wire_hdr(type, 0, sizeof(r)), .tid = tid,
				   .ticks = ticks };

	hl_enc_pack_record(e, &r);
}
