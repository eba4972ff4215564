/*
 * reporter/ingest/decode.c: validation and framing of the hook's byte stream.
 *
 * Two layers: hl_decode_check_layout() checks what a record says about
 * itself (sizes, strings, counts, enums), and hl_decode_feed() adds what
 * depends on the connection (HELLO first, ids defined before use). Anything
 * wrong stops the connection with one reason in d->error; the caller logs it
 * with the connection and pid and drops only that connection.
 */
#include "decode.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const type_names[HL_REC_TYPE_COUNT] = {
	[HL_REC_HELLO] = "HELLO",
	[HL_REC_BATCH] = "BATCH",
	[HL_REC_MODULE_LOAD] = "MODULE_LOAD",
	[HL_REC_MODULE_UNLOAD] = "MODULE_UNLOAD",
	[HL_REC_STACK] = "STACK",
	[HL_REC_ALLOC] = "ALLOC",
	[HL_REC_FREE] = "FREE",
	[HL_REC_REALLOC] = "REALLOC",
	[HL_REC_THREAD_START] = "THREAD_START",
	[HL_REC_THREAD_END] = "THREAD_END",
	[HL_REC_FORK] = "FORK",
	[HL_REC_EXIT] = "EXIT",
	[HL_REC_LIVE] = "LIVE",
	[HL_REC_ERROR] = "ERROR",
	[HL_REC_DROPPED] = "DROPPED",
	[HL_REC_CHECK] = "CHECK",
	[HL_REC_EXEC] = "EXEC",
	[HL_REC_OPTIONS] = "OPTIONS",
	[HL_REC_FATAL] = "FATAL",
	[HL_REC_FD_SUMMARY] = "FD_SUMMARY",
	[HL_REC_FD] = "FD",
	[HL_REC_SPAWN] = "SPAWN",
	[HL_REC_TALLY] = "TALLY",
};

const char *hl_decode_type_name(unsigned type)
{
	static __thread char buf[24];

	if (type < HL_REC_TYPE_COUNT && type_names[type])
		return type_names[type];
	snprintf(buf, sizeof(buf), "type %u", type);
	return buf;
}

void hl_decode_init(struct hl_decoder *d, hl_decode_sink_fn sink, void *ctx)
{
	memset(d, 0, sizeof(*d));
	d->sink = sink;
	d->ctx = ctx;
}

void hl_decode_destroy(struct hl_decoder *d)
{
	free(d->stack_ids);
	free(d->module_ids);
	d->stack_ids = NULL;
	d->module_ids = NULL;
}

/* True if the `len` bytes at s hold `count` NUL-terminated strings that end
 * exactly at s[len - 1]. */
static bool strings_are_valid(const char *s, uint64_t len, uint64_t count)
{
	uint64_t nuls = 0;

	if (len == 0)
		return count == 0;
	if (s[len - 1] != 0)
		return false;
	for (uint64_t i = 0; i < len; i++)
		nuls += s[i] == 0;
	return nuls == count;
}

static const char *check_hello(const struct hl_rec_hello *r)
{
	const char *exe = (const char *)(r + 1);

	if (r->pid == 0)
		return "HELLO with pid 0";
	if (r->origin > HL_ORIGIN_EXEC)
		return "HELLO with unknown origin";
	if (r->pointer_bytes != 4 && r->pointer_bytes != 8)
		return "HELLO with pointer size other than 4 or 8";
	if (r->exe_len == 0 || r->exe_len > HL_WIRE_MAX_PATH)
		return "HELLO exe_len out of range";
	if ((uint64_t)sizeof(*r) + r->exe_len + r->argv_len > r->h.length)
		return "HELLO strings overrun the record";
	if (!strings_are_valid(exe, r->exe_len, 1))
		return "HELLO exe is not one NUL-terminated string";
	if (!strings_are_valid(exe + r->exe_len, r->argv_len, r->argc))
		return "HELLO argv does not hold argc NUL-terminated strings";
	if (r->test_len > HL_WIRE_MAX_TEST_NAME ||
	    (uint64_t)sizeof(*r) + r->exe_len + r->argv_len + r->test_len > r->h.length)
		return "HELLO test name out of range";
	if (r->test_len && !strings_are_valid(exe + r->exe_len + r->argv_len, r->test_len, 1))
		return "HELLO test name is not one NUL-terminated string";
	return NULL;
}

static const char *check_module_load(const struct hl_rec_module_load *r)
{
	const char *path = (const char *)(r + 1) + r->build_id_len;

	if (r->build_id_len > HL_WIRE_MAX_BUILD_ID)
		return "MODULE_LOAD build-id too long";
	if (r->path_len == 0 || r->path_len > HL_WIRE_MAX_PATH)
		return "MODULE_LOAD path_len out of range";
	if ((uint64_t)sizeof(*r) + r->build_id_len + r->path_len > r->h.length)
		return "MODULE_LOAD path overruns the record";
	if (!strings_are_valid(path, r->path_len, 1))
		return "MODULE_LOAD path is not one NUL-terminated string";
	if (r->low > r->high)
		return "MODULE_LOAD low > high";
	return NULL;
}

static const char *check_stack(const struct hl_rec_stack *r)
{
	if (r->depth > HL_WIRE_MAX_FRAMES)
		return "STACK deeper than HL_WIRE_MAX_FRAMES";
	if ((uint64_t)sizeof(*r) + (uint64_t)r->depth * 8 > r->h.length)
		return "STACK frames overrun the record";
	if (r->truncated > 1)
		return "STACK truncated flag not 0 or 1";
	return NULL;
}

/* The packed events must fit; the rest of the record is zero padding. */
static const char *check_batch(const struct hl_rec_batch *r)
{
	const uint8_t *tail = (const uint8_t *)(r + 1) + r->packed_bytes;
	const uint8_t *end = (const uint8_t *)r + r->h.length;

	if (r->packed_bytes > r->h.length - sizeof(*r))
		return "BATCH packed events overrun the record";
	for (; tail < end; tail++)
		if (*tail)
			return "BATCH padding is not zero";
	return NULL;
}

static const char *check_live(const struct hl_rec_live *r)
{
	const struct hl_wire_live_block *b = (const void *)(r + 1);

	if (r->h.flags & ~HL_LIVE_FLAGS)
		return "LIVE with unknown flags";
	if (r->count > HL_WIRE_MAX_LIVE_PER_RECORD)
		return "LIVE count above HL_WIRE_MAX_LIVE_PER_RECORD";
	if ((uint64_t)sizeof(*r) + (uint64_t)r->count * sizeof(*b) > r->h.length)
		return "LIVE blocks overrun the record";
	for (uint32_t i = 0; i < r->count; i++) {
		if (b[i].address == 0)
			return "LIVE block at address 0";
		if (b[i].leak_class > HL_CLASS_SUPPRESSED)
			return "LIVE block with unknown leak class";
		if (b[i].kind >= HL_KIND_COUNT)
			return "LIVE block with unknown allocation kind";
	}
	const struct hl_wire_live_indirect *ind = hl_wire_live_indirect_of(r);
	for (uint32_t i = 0, n = hl_wire_live_indirect_count(r); i < n; i++)
		if (ind[i].index >= r->count)
			return "LIVE indirect bytes for a block the record does not hold";
	return NULL;
}

const char *hl_decode_check_layout(const struct hl_wire_header *rec)
{
	const struct hl_rec_alloc *alloc = (const void *)rec;
	const struct hl_rec_free *fr = (const void *)rec;
	const struct hl_rec_realloc *re = (const void *)rec;

	if (rec->version != HL_WIRE_VERSION)
		return "wrong wire version";
	if (rec->length < sizeof(*rec) || rec->length % 8 != 0 ||
	    rec->length > HL_WIRE_MAX_RECORD)
		return "record length not a multiple of 8 within bounds";
	if (rec->length < hl_wire_min_length(rec->type))
		return "record shorter than its type's fixed part";
	switch (rec->type) {
	case HL_REC_HELLO: return check_hello((const void *)rec);
	case HL_REC_BATCH: return check_batch((const void *)rec);
	case HL_REC_MODULE_LOAD: return check_module_load((const void *)rec);
	case HL_REC_STACK: return check_stack((const void *)rec);
	case HL_REC_LIVE: return check_live((const void *)rec);
	case HL_REC_ALLOC:
		if (alloc->address == 0)
			return "ALLOC at address 0";
		if ((rec->flags & HL_ALLOC_KIND_MASK) >= HL_KIND_COUNT)
			return "ALLOC with unknown allocation kind";
		if (rec->flags & ~(HL_ALLOC_KIND_MASK | HL_ALLOC_INHERITED | HL_ALLOC_TALLIED))
			return "ALLOC with unknown flags";
		return NULL;
	case HL_REC_FREE:
		if (fr->address == 0)
			return "FREE of address 0";
		if (rec->flags >= HL_KIND_COUNT)
			return "FREE with unknown allocation kind";
		return NULL;
	case HL_REC_REALLOC:
		if (re->old_address == 0 || re->new_address == 0)
			return "REALLOC with address 0";
		return NULL;
	case HL_REC_ERROR: {
		const struct hl_rec_error *er = (const void *)rec;

		if (er->kind == 0 || er->kind >= HL_ERROR_KIND_COUNT)
			return "ERROR with unknown kind";
		if (er->call >= HL_CALL_COUNT || er->alloc_kind >= HL_KIND_COUNT)
			return "ERROR with unknown call or allocation kind";
		return NULL;
	}
	case HL_REC_EXIT:
		if (((const struct hl_rec_exit *)rec)->how > HL_EXIT_UNKNOWN)
			return "EXIT with unknown how";
		return NULL;
	case HL_REC_EXEC: {
		const struct hl_rec_exec *ex = (const void *)rec;

		if ((rec->flags & ~HL_EXEC_TRACED) || ex->reserved)
			return "EXEC with unknown flags";
		if (ex->path_len == 0 || ex->path_len > HL_WIRE_MAX_PATH ||
		    (uint64_t)sizeof(*ex) + ex->path_len > rec->length)
			return "EXEC path_len out of range";
		if (!strings_are_valid((const char *)(ex + 1), ex->path_len, 1))
			return "EXEC path is not one NUL-terminated string";
		return NULL;
	}
	case HL_REC_OPTIONS:
		if (rec->flags)
			return "OPTIONS with unknown flags";
		return NULL;
	case HL_REC_SPAWN: {
		const struct hl_rec_spawn *sp = (const void *)rec;

		if (rec->flags & ~HL_SPAWN_FAILED)
			return "SPAWN with unknown flags";
		if (sp->child_pid == 0)
			return "SPAWN of pid 0";
		if (sp->path_len == 0 || (uint64_t)sizeof(*sp) + sp->path_len > rec->length)
			return "SPAWN path_len out of range";
		if (!strings_are_valid((const char *)(sp + 1), sp->path_len, 1))
			return "SPAWN path is not one NUL-terminated string";
		return NULL;
	}
	case HL_REC_FATAL: {
		const struct hl_rec_fatal *fa = (const void *)rec;

		if (rec->flags)
			return "FATAL with unknown flags";
		if (fa->signal == 0 || fa->signal > 64)
			return "FATAL with a signal out of range";
		return NULL;
	}
	case HL_REC_FD_SUMMARY: {
		const struct hl_rec_fd_summary *fs = (const void *)rec;

		if (rec->flags & ~HL_FD_SUMMARY_ALL || fs->reserved)
			return "FD_SUMMARY with unknown flags";
		if (fs->std > 3 || fs->std > fs->open || fs->listed > fs->open)
			return "FD_SUMMARY counts out of range";
		return NULL;
	}
	case HL_REC_FD: {
		const struct hl_rec_fd *fd = (const void *)rec;

		if (rec->flags & ~HL_FD_FLAGS || fd->reserved)
			return "FD with unknown flags";
		if (fd->fd < 0 || fd->kind >= HL_FD_KIND_COUNT)
			return "FD with a negative number or unknown kind";
		if (fd->text_len > HL_WIRE_MAX_PATH ||
		    (uint64_t)sizeof(*fd) + fd->text_len > rec->length)
			return "FD text_len out of range";
		if (fd->text_len && !strings_are_valid((const char *)(fd + 1), fd->text_len, 1))
			return "FD text is not one NUL-terminated string";
		if ((rec->flags & HL_FD_FLAGS) && fd->stack_id)
			return "FD inherited or unseen but with a stack";
		return NULL;
	}
	case HL_REC_CHECK:
		if (rec->flags || ((const struct hl_rec_check *)rec)->flags & ~HL_CHECK_FLAGS)
			return "CHECK with unknown flags";
		if (((const struct hl_rec_check *)rec)->seq == 0)
			return "CHECK with sequence number 0";
		return NULL;
	default:
		return NULL;
	}
}

/* Bitmap of ids: test and set, bounded by HL_DECODE_MAX_ID. */
static bool id_is_defined(const uint8_t *map, size_t bytes, uint32_t id)
{
	return (size_t)(id >> 3) < bytes && (map[id >> 3] >> (id & 7)) & 1;
}

static void id_define(uint8_t **map, size_t *bytes, uint32_t id)
{
	hl_grow((void **)map, bytes, id >> 3, 1);
	(*map)[id >> 3] |= (uint8_t)(1u << (id & 7));
}

static const char *define_id(uint8_t **map, size_t *bytes, uint32_t id,
			     const char *what)
{
	static __thread char why[64];

	if (id == 0 || id >= HL_DECODE_MAX_ID) {
		snprintf(why, sizeof(why), "%s id %u out of range", what, id);
		return why;
	}
	if (id_is_defined(*map, *bytes, id)) {
		snprintf(why, sizeof(why), "%s id %u defined twice", what, id);
		return why;
	}
	id_define(map, bytes, id);
	return NULL;
}

bool hl_decode_stack_known(const struct hl_decoder *d, uint32_t id)
{
	return id == 0 || id_is_defined(d->stack_ids, d->stack_bytes, id);
}

static const char *use_stack(const struct hl_decoder *d, uint32_t id)
{
	static __thread char why[64];

	if (id == 0 || id_is_defined(d->stack_ids, d->stack_bytes, id))
		return NULL;
	snprintf(why, sizeof(why), "unknown stack id %u", id);
	return why;
}

static const char *check_live_ids(const struct hl_decoder *d,
				  const struct hl_rec_live *r)
{
	const struct hl_wire_live_block *b = (const void *)(r + 1);
	const char *why;

	for (uint32_t i = 0; i < r->count; i++)
		if ((why = use_stack(d, b[i].stack_id)))
			return why;
	return NULL;
}

static const char *check_error_ids(const struct hl_decoder *d,
				   const struct hl_rec_error *r)
{
	const char *why = use_stack(d, r->stack_id);

	if (!why)
		why = use_stack(d, r->alloc_stack_id);
	if (!why)
		why = use_stack(d, r->free_stack_id);
	return why;
}

/* The checks that depend on what came before on this connection. Defines
 * ids as a side effect, so it runs only on records that passed layout. */
static const char *check_connection(struct hl_decoder *d,
				    const struct hl_wire_header *rec)
{
	const struct hl_rec_module_unload *unload = (const void *)rec;

	if (!d->hello_seen && rec->type != HL_REC_HELLO)
		return "first record is not HELLO";
	switch (rec->type) {
	case HL_REC_HELLO:
		if (d->hello_seen)
			return "second HELLO on one connection";
		d->hello_seen = true;
		d->pid = ((const struct hl_rec_hello *)rec)->pid;
		return NULL;
	case HL_REC_MODULE_LOAD:
		return define_id(&d->module_ids, &d->module_bytes,
				 ((const struct hl_rec_module_load *)rec)->module_id,
				 "module");
	case HL_REC_MODULE_UNLOAD:
		if (!id_is_defined(d->module_ids, d->module_bytes, unload->module_id))
			return "MODULE_UNLOAD of an unknown module id";
		return NULL;
	case HL_REC_STACK:
		return define_id(&d->stack_ids, &d->stack_bytes,
				 ((const struct hl_rec_stack *)rec)->stack_id, "stack");
	case HL_REC_ALLOC:
		return use_stack(d, ((const struct hl_rec_alloc *)rec)->stack_id);
	case HL_REC_REALLOC:
		return use_stack(d, ((const struct hl_rec_realloc *)rec)->stack_id);
	case HL_REC_LIVE:
		return check_live_ids(d, (const void *)rec);
	case HL_REC_ERROR:
		return check_error_ids(d, (const void *)rec);
	case HL_REC_FATAL:
		return use_stack(d, ((const struct hl_rec_fatal *)rec)->stack_id);
	case HL_REC_FD:
		return use_stack(d, ((const struct hl_rec_fd *)rec)->stack_id);
	default:
		return NULL;
	}
}

static long decode_fail(struct hl_decoder *d, const struct hl_wire_header *rec,
			const char *why)
{
	snprintf(d->error, sizeof(d->error), "%s (%s record at byte %llu)", why,
		 hl_decode_type_name(rec->type), (unsigned long long)d->bytes);
	return -EPROTO;
}

/* A packed event's failure names the BATCH it came in. */
static long packed_fail(struct hl_decoder *d, uint64_t event, const char *why)
{
	snprintf(d->error, sizeof(d->error), "%s (packed event %llu of the BATCH at byte %llu)",
		 why, (unsigned long long)event, (unsigned long long)d->bytes);
	return -EPROTO;
}

/* The header alone can be judged before the rest of the record arrives, so a
 * peer announcing a 4 GiB record is dropped at once instead of buffered. */
static const char *check_header(const struct hl_wire_header *h)
{
	if (h->version != HL_WIRE_VERSION)
		return "wrong wire version";
	if (h->length < sizeof(*h) || h->length % 8 != 0 ||
	    h->length > HL_WIRE_MAX_RECORD)
		return "record length not a multiple of 8 within bounds";
	if (h->length < hl_wire_min_length(h->type))
		return "record shorter than its type's fixed part";
	return NULL;
}

/* Hands a record that passed every check to the sink. */
static inline long sink_record(struct hl_decoder *d, const struct hl_wire_header *rec)
{
	/* what decode.h promises every sink: a header that passed, 8-aligned */
	hl_invariant(check_header(rec) == NULL && (uintptr_t)rec % 8 == 0);
	int err = d->sink ? d->sink(d->ctx, rec) : 0;

	if (err) {
		if (!d->error[0])
			snprintf(d->error, sizeof(d->error), "cannot process %s record",
				 hl_decode_type_name(rec->type));
		return err;
	}
	d->records++;
	return 0;
}

/* Hands a record that passed its header check to the sink if it is valid
 * on this connection. Returns 0, or -EPROTO with *why, or the sink's error
 * (*why NULL). */
static long accept_record(struct hl_decoder *d, const struct hl_wire_header *rec,
			  const char **why)
{
	*why = hl_decode_check_layout(rec);
	if (!*why)
		*why = check_connection(d, rec);
	if (*why)
		return -EPROTO;
	return sink_record(d, rec);
}

/* The checks of hl_decode_check_layout and check_connection for an ALLOC or
 * FREE expanded from a packed event (its header, length and flags are the
 * decoder's own), in a few tests: most of the stream is these two, and the
 * general path (a switch on the type in each) was a tenth of the reporter's
 * time on them. False sends the record down the general path, which says
 * what is wrong. */
static inline bool packed_event_valid(const struct hl_decoder *d, const struct hl_wire_header *rec)
{
	if (rec->type == HL_REC_FREE)
		return ((const struct hl_rec_free *)rec)->address != 0 && rec->flags < HL_KIND_COUNT;
	if (rec->type == HL_REC_ALLOC) {
		const struct hl_rec_alloc *a = (const void *)rec;

		return a->address != 0 && rec->flags < HL_KIND_COUNT &&
		       hl_decode_stack_known(d, a->stack_id);
	}
	return false;
}

/* One packed event expanded into its full-size record. */
union unpacked {
	struct hl_wire_header h;
	struct hl_rec_alloc alloc;
	struct hl_rec_free free;
	struct hl_rec_realloc realloc;
	uint64_t raw[HL_PACK_MAX_RECORD / 8];
};

/* A RECORD event's record: only a thread's own event records may ride in a
 * batch. */
static uint32_t unpack_record(const uint8_t *p, size_t avail, union unpacked *out,
			      const char **why)
{
	struct hl_wire_header h;

	if (avail < sizeof(h)) {
		*why = "packed RECORD event truncated";
		return 0;
	}
	memcpy(&h, p, sizeof(h));
	switch (h.type) {
	case HL_REC_THREAD_START:
	case HL_REC_THREAD_END:
	case HL_REC_FORK:
	case HL_REC_SPAWN:
	case HL_REC_ERROR:
	case HL_REC_DROPPED:
	case HL_REC_FATAL:
	case HL_REC_TALLY:
		break;
	default:
		*why = "packed RECORD event carries a record that cannot be packed";
		return 0;
	}
	if ((*why = check_header(&h)))
		return 0;
	if (h.length > HL_PACK_MAX_RECORD || h.length > avail) {
		*why = "packed RECORD event longer than HL_PACK_MAX_RECORD or truncated";
		return 0;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out->raw, p, h.length);
	return h.length;
}

/* Expands the event at p (avail bytes left in the batch) into *out; returns
 * its length, or 0 and *why. */
static uint32_t unpack_event(const struct hl_rec_batch *b, const uint8_t *p, size_t avail,
			     union unpacked *out, const char **why)
{
	unsigned event, kind;
	uint64_t f[HL_PACK_MAX_FIELDS];
	uint32_t n = hl_pack_read(p, avail, &event, &kind, f);
	uint32_t rec;

	if (n == 0) {
		*why = "malformed or truncated packed event";
		return 0;
	}
	switch (event) {
	case HL_PACK_ALLOC:
		if (f[3] > UINT32_MAX) {
			*why = "packed ALLOC stack id above 32 bits";
			return 0;
		}
		out->alloc = (struct hl_rec_alloc){
			.h = hl_wire_hdr(HL_REC_ALLOC, kind, sizeof(out->alloc)),
			.address = b->base_address + hl_unzigzag(f[1]), .size = f[2],
			.ticks = b->base_ticks + f[0], .stack_id = (uint32_t)f[3] };
		return n;
	case HL_PACK_FREE:
		out->free = (struct hl_rec_free){
			.h = hl_wire_hdr(HL_REC_FREE, kind, sizeof(out->free)),
			.address = b->base_address + hl_unzigzag(f[1]),
			.ticks = b->base_ticks + f[0] };
		return n;
	case HL_PACK_REALLOC:
		if (kind != 0 || f[4] > UINT32_MAX) {
			*why = "packed REALLOC with a kind or a stack id above 32 bits";
			return 0;
		}
		out->realloc = (struct hl_rec_realloc){
			.h = hl_wire_hdr(HL_REC_REALLOC, 0, sizeof(out->realloc)),
			.old_address = b->base_address + hl_unzigzag(f[1]), .size = f[3],
			.ticks = b->base_ticks + f[0], .stack_id = (uint32_t)f[4] };
		out->realloc.new_address = out->realloc.old_address + hl_unzigzag(f[2]);
		return n;
	default:
		rec = unpack_record(p + n, avail - n, out, why);
		return rec ? n + rec : 0;
	}
}

/* Expands and accepts the packed events of a BATCH that was accepted.
 * Events are expanded HL_DECODE_LOOKAHEAD ahead of the sink, so the hint
 * sees them first, like whole records. */
static long unpack_batch(struct hl_decoder *d, const struct hl_rec_batch *b)
{
	const uint8_t *p = (const uint8_t *)(b + 1);
	const uint8_t *end = p + b->packed_bytes;
	union unpacked ring[HL_DECODE_LOOKAHEAD];
	uint64_t expanded = 0, accepted = 0;
	const char *why = NULL;
	bool hints = d->hint != NULL;

	for (;;) {
		while (!why && p < end && expanded - accepted < HL_DECODE_LOOKAHEAD) {
			union unpacked *u = &ring[expanded % HL_DECODE_LOOKAHEAD];
			uint32_t n = unpack_event(b, p, (size_t)(end - p), u, &why);

			if (n == 0)
				break;
			p += n;
			expanded++;
			if (hints && !d->hint(d->ctx, &u->h))
				hints = false;
		}
		if (accepted == expanded)
			break;
		const struct hl_wire_header *rec = &ring[accepted % HL_DECODE_LOOKAHEAD].h;
		const char *bad = NULL;
		long err = packed_event_valid(d, rec) ? sink_record(d, rec) : accept_record(d, rec, &bad);

		if (err)
			return bad ? packed_fail(d, accepted, bad) : err;
		accepted++;
	}
	return why ? packed_fail(d, expanded, why) : 0;
}

/* hl_decode_stack_known, inlined where every event asks. */
static inline bool stack_is_known(const struct hl_decoder *d, uint32_t id)
{
	return id == 0 || id_is_defined(d->stack_ids, d->stack_bytes, id);
}

/* event_of where a whole HL_PACK_MAX_EVENT bytes lie at p (most of a
 * batch): each type's fields read in a straight line, straight into *ev,
 * with the checks of event_of_slow in the same order of precedence (no
 * event takes this path that the slow one would refuse, or the reverse).
 * Most of the stream is ALLOC and FREE: through the general reader and
 * an array of fields they cost ~120 instructions an event here. */
static inline uint32_t event_of_fast(const struct hl_decoder *d, const struct hl_rec_batch *b,
				     const uint8_t *p, struct hl_event *ev)
{
	uint16_t op;
	uint32_t at = HL_PACK_OP_BYTES;
	unsigned kind;
	uint64_t stack;

	memcpy(&op, p, HL_PACK_OP_BYTES);
	kind = (op >> 3) & 7u;
	if (kind >= HL_KIND_COUNT)
		return 0;
	ev->kind = (uint8_t)kind;
	ev->reserved = 0;
	switch (op & 7u) {
	case HL_PACK_FREE:
		if (op >> (6 + 2 * 2))
			return 0;
		ev->ticks = b->base_ticks + hl_pack_field(p, &at, op >> 6);
		ev->address = b->base_address + hl_unzigzag(hl_pack_field(p, &at, op >> 8));
		ev->type = HL_REC_FREE;
		ev->new_address = 0;
		ev->size = 0;
		ev->stack_id = 0;
		break;
	case HL_PACK_ALLOC:
		if (op >> (6 + 2 * 4))
			return 0;
		ev->ticks = b->base_ticks + hl_pack_field(p, &at, op >> 6);
		ev->address = b->base_address + hl_unzigzag(hl_pack_field(p, &at, op >> 8));
		ev->size = hl_pack_field(p, &at, op >> 10);
		stack = hl_pack_field(p, &at, op >> 12);
		if (stack > UINT32_MAX || !stack_is_known(d, (uint32_t)stack))
			return 0;
		ev->type = HL_REC_ALLOC;
		ev->new_address = 0;
		ev->stack_id = (uint32_t)stack;
		break;
	default:
		return 0; /* REALLOC, RECORD or unknown: event_of_slow */
	}
	return ev->address != 0 ? at : 0;
}

/* The packed event at p (avail bytes left in the batch) as *ev, if it is an
 * ALLOC, FREE or REALLOC that passes every check its full-size record would
 * (hl_decode_check_layout, check_connection); returns its length, or 0: a
 * RECORD event, or one with something wrong, which the general path takes
 * (and names what is wrong). */
static inline uint32_t event_of_slow(const struct hl_decoder *d, const struct hl_rec_batch *b,
				     const uint8_t *p, size_t avail, struct hl_event *ev)
{
	unsigned event, kind;
	uint64_t f[HL_PACK_MAX_FIELDS];
	uint32_t n = hl_pack_read(p, avail, &event, &kind, f);

	if (n == 0 || kind >= HL_KIND_COUNT)
		return 0;
	ev->ticks = b->base_ticks + f[0];
	ev->address = b->base_address + hl_unzigzag(f[1]);
	ev->kind = (uint8_t)kind;
	ev->reserved = 0;
	switch (event) {
	case HL_PACK_ALLOC:
		if (f[3] > UINT32_MAX || !stack_is_known(d, (uint32_t)f[3]))
			return 0;
		ev->type = HL_REC_ALLOC;
		ev->new_address = 0;
		ev->size = f[2];
		ev->stack_id = (uint32_t)f[3];
		break;
	case HL_PACK_FREE:
		ev->type = HL_REC_FREE;
		ev->new_address = 0;
		ev->size = 0;
		ev->stack_id = 0;
		break;
	case HL_PACK_REALLOC:
		if (kind != 0 || f[4] > UINT32_MAX || !stack_is_known(d, (uint32_t)f[4]))
			return 0;
		ev->type = HL_REC_REALLOC;
		ev->new_address = ev->address + hl_unzigzag(f[2]);
		ev->size = f[3];
		ev->stack_id = (uint32_t)f[4];
		if (ev->new_address == 0)
			return 0;
		break;
	default:
		return 0;
	}
	return ev->address != 0 ? n : 0;
}

static inline uint32_t event_of(const struct hl_decoder *d, const struct hl_rec_batch *b,
				const uint8_t *p, size_t avail, struct hl_event *ev)
{
	uint32_t n;

	if (avail >= HL_PACK_MAX_EVENT && (n = event_of_fast(d, b, p, ev)))
		return n;
	return event_of_slow(d, b, p, avail, ev);
}

/* Hands n decoded events to the events sink. */
static long events_flush(struct hl_decoder *d, const struct hl_event *ev, size_t n)
{
	int err = d->events(d->ctx, ev, n);

	if (err) {
		if (!d->error[0])
			snprintf(d->error, sizeof(d->error), "cannot process %s record",
				 hl_decode_type_name(ev[0].type));
		return err;
	}
	d->records += n;
	return 0;
}

/* The event at *p that event_of did not take (a RECORD, or one with
 * something wrong), the index'th of its batch, through the general path;
 * advances *p. Out of line: its locals kept the events loop's registers
 * busy. */
static __attribute__((noinline)) long event_record(struct hl_decoder *d,
						   const struct hl_rec_batch *b,
						   const uint8_t **p, const uint8_t *end,
						   uint64_t index)
{
	union unpacked u;
	const char *why = NULL, *bad = NULL;
	uint32_t len = unpack_event(b, *p, (size_t)(end - *p), &u, &why);
	long err;

	if (len == 0)
		return packed_fail(d, index, why);
	if ((err = accept_record(d, &u.h, &bad)))
		return bad ? packed_fail(d, index, bad) : err;
	*p += len;
	return 0;
}

/* unpack_batch for a decoder with an events sink: runs of valid ALLOC, FREE
 * and REALLOC events go to it HL_DECODE_EVENTS at a time; any other event
 * (a RECORD, or one with something wrong) takes the general path, in order
 * after the run before it. */
static long unpack_batch_events(struct hl_decoder *d, const struct hl_rec_batch *b)
{
	const uint8_t *p = (const uint8_t *)(b + 1);
	const uint8_t *end = p + b->packed_bytes;
	struct hl_event ev[HL_DECODE_EVENTS];
	uint64_t index = 0; /* events of the batch handed on */
	size_t n = 0;
	long err;

	while (p < end) {
		uint32_t len = event_of(d, b, p, (size_t)(end - p), &ev[n]);

		if (len) {
			p += len;
			if (++n < HL_DECODE_EVENTS)
				continue;
		}
		if (n && (err = events_flush(d, ev, n)))
			return err;
		index += n;
		n = 0;
		if (len)
			continue;
		if ((err = event_record(d, b, &p, end, index)))
			return err;
		index++;
	}
	return n ? events_flush(d, ev, n) : 0;
}

long hl_decode_feed(struct hl_decoder *d, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t done = 0;
	size_t ahead = 0;      /* the next record to hint */
	unsigned hinted = 0;   /* records hinted and not yet handed to the sink */
	bool hints = d->hint != NULL;

	while (len - done >= sizeof(struct hl_wire_header)) {
		const struct hl_wire_header *rec = (const void *)(p + done);
		const char *why = check_header(rec);
		long err;

		if (why)
			return decode_fail(d, rec, why);
		if (rec->length > len - done)
			break; /* the rest arrives with a later read */
		while (hints && hinted < HL_DECODE_LOOKAHEAD) {
			const struct hl_wire_header *h = (const void *)(p + ahead);

			if (len - ahead < sizeof(*h) || check_header(h) ||
			    h->length > len - ahead) {
				hints = false; /* the end of what is here, or bad */
				break;
			}
			if (!d->hint(d->ctx, h)) {
				hints = false;
				break;
			}
			ahead += h->length;
			hinted++;
		}
		err = accept_record(d, rec, &why);
		if (err)
			return why ? decode_fail(d, rec, why) : err;
		if (rec->type == HL_REC_BATCH) {
			const struct hl_rec_batch *b = (const void *)rec;

			if (b->sequence >= d->batch_end)
				d->batch_end = b->sequence + 1;
			err = d->events ? unpack_batch_events(d, b) : unpack_batch(d, b);
			if (err)
				return err;
		}
		d->bytes += rec->length;
		done += rec->length;
		if (hinted)
			hinted--;
	}
	return (long)done;
}
