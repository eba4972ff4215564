/*
 * reporter/formats/import_json.c: a JSON report read back into a run header,
 * finished processes and their frames (import_json.h).
 *
 * The reading mirrors report_json.c field by field. Where the report
 * expanded a return address into its inlined frames (all with the address,
 * every one but the last flagged inlined), the frames are grouped back into
 * one return address of the stack, and the group is given to the symbolizer
 * as that address's frames; a module is rebuilt from the frames' module
 * path and offset (bias = address - offset, range = the addresses seen), so
 * that the store finds each address's module and frames as it does for a
 * live process. A process's parent is the latest earlier process with its
 * ppid (a fork) or its pid (an exec), as HELLO order makes it.
 */
#define _GNU_SOURCE
#include "import_json.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fingerprint.h"
#include "json_scan.h"
#include "state.h"
#include "text_bytes.h"

/* Where we are in the document, for messages: "processes[2].leaks[0]". */
struct reader {
	char *why;
	size_t why_len;
	bool failed;
};

/* A report's top level has a handful of members; more is not a report
 * (and each name is remembered, to refuse duplicates). */
#define HL_JSON_IMPORT_MAX_MEMBERS 1024

/* The document being read (hl_json_import_stream). */
struct import {
	struct reader rd;
	const struct hl_json_import_sink *sink;
	struct hl_report run;          /* the header, once read */
	bool have_format, have_version, have_run;
	bool header_given;             /* sink->run was called */
	bool deferred;                 /* processes came before the header: a second pass */
	bool in_processes;             /* inside the processes array */
	bool out_of_memory;            /* why says so */
	json_t *keys;                  /* the top-level names seen (a set) */
	char *key;                     /* the current top-level name */
	struct hl_json_pos array_after; /* just after the processes array's '[' */
	size_t nitems;                 /* elements of processes seen */
	size_t nprocs;                 /* processes read (the last one's serial) */
	struct hl_map latest_image;    /* pid -> serial of its latest image read */
	struct hl_symbolizer *sym;     /* the current process's frames */
};

__attribute__((format(printf, 3, 4)))
static bool bad(struct reader *rd, const char *where, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (rd->failed)
		return false;
	rd->failed = true;
	n = snprintf(rd->why, rd->why_len, "%s%s", where, *where ? ": " : "");
	if (n < 0 || (size_t)n >= rd->why_len)
		return false;
	va_start(ap, fmt);
	vsnprintf(rd->why + n, rd->why_len - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

/* "where.key" (or "where[i]") into buf; a message may be cut short. */
static const char *at(char *buf, size_t len, const char *where, const char *key, long index)
{
	int n = key ? snprintf(buf, len, "%s%s%s", where, *where ? "." : "", key)
		    : snprintf(buf, len, "%s[%ld]", where, index);

	if (n < 0)
		buf[0] = 0;
	return buf;
}

static json_t *member(struct reader *rd, json_t *o, const char *where, const char *key,
		      bool (*is)(const json_t *), const char *what)
{
	json_t *v = json_object_get(o, key);
	char path[256];

	if (!v || !is(v)) {
		bad(rd, at(path, sizeof(path), where, key, 0), v ? "not %s" : "missing (%s)", what);
		return NULL;
	}
	return v;
}

static bool is_object(const json_t *v) { return json_is_object(v); }
static bool is_array(const json_t *v) { return json_is_array(v); }
static bool is_string(const json_t *v) { return json_is_string(v); }
static bool is_string_or_null(const json_t *v) { return json_is_string(v) || json_is_null(v); }
static bool is_bool(const json_t *v) { return json_is_boolean(v); }
static bool is_integer(const json_t *v) { return json_is_integer(v); }
static bool is_count(const json_t *v) { return json_is_integer(v) && json_integer_value(v) >= 0; }
static bool is_int_or_null(const json_t *v) { return json_is_integer(v) || json_is_null(v); }

/* A string field (arena copy), or NULL for null when allowed. */
static const char *get_str(struct reader *rd, struct hl_bump *a, json_t *o, const char *where,
			   const char *key, bool nullable)
{
	json_t *v = member(rd, o, where, key, nullable ? is_string_or_null : is_string,
			   nullable ? "a string or null" : "a string");

	return v && json_is_string(v) ? hl_bump_strdup(a, json_string_value(v)) : NULL;
}

/* A whole number >= 0 (u64 fields were written as their bits in an int64). */
static uint64_t get_u64(struct reader *rd, json_t *o, const char *where, const char *key)
{
	json_t *v = member(rd, o, where, key, is_count, "a whole number >= 0");

	return v ? (uint64_t)json_integer_value(v) : 0;
}

static bool get_bool(struct reader *rd, json_t *o, const char *where, const char *key)
{
	json_t *v = member(rd, o, where, key, is_bool, "true or false");

	return v && json_is_true(v);
}

/* "0x..." as written for addresses. */
static uint64_t get_hex(struct reader *rd, json_t *o, const char *where, const char *key,
			bool nullable)
{
	json_t *v = member(rd, o, where, key, nullable ? is_string_or_null : is_string,
			   "a hex address string");
	const char *s = v && json_is_string(v) ? json_string_value(v) : NULL;
	char *end, path[256];
	uint64_t x;

	if (!s)
		return 0;
	errno = 0;
	x = strtoull(s, &end, 16);
	if (strncmp(s, "0x", 2) || !s[2] || *end || errno)
		bad(rd, at(path, sizeof(path), where, key, 0), "'%.40s' is not a hex address", s);
	return x;
}

/* The index of name in names[0..count), or bad(). */
static uint32_t name_index(struct reader *rd, const char *where, const char *name,
			   const char *(*name_of)(uint32_t), uint32_t first, uint32_t count)
{
	for (uint32_t i = first; name && i < count; i++)
		if (!strcmp(name_of(i), name))
			return i;
	if (name)
		bad(rd, where, "unknown name '%.40s'", name);
	return first;
}

/* ---- frames and stacks ----------------------------------------------------- */

/* The process's module for (path, bias), made or widened to take address. */
static const struct hl_module *module_for(struct hl_process *p, const char *path, uint64_t base,
					  uint64_t address)
{
	struct hl_module *m;

	for (size_t i = 0; i < p->nmodules; i++) {
		m = &p->modules[i];
		if (m->base == base && !strcmp(m->path, path)) {
			m->low = address < m->low ? address : m->low;
			m->high = address >= m->high ? address + 1 : m->high;
			return m;
		}
	}
	hl_grow((void **)&p->modules, &p->modules_cap, p->nmodules, sizeof(*m));
	m = &p->modules[p->nmodules++];
	memset(m, 0, sizeof(*m));
	m->path = hl_bump_strdup(&p->arena, path);
	m->base = base;
	m->low = address;
	m->high = address + 1;
	return m;
}

static bool read_frame(struct reader *rd, struct hl_bump *a, json_t *f, const char *where,
		       struct hl_frame_info *out)
{
	json_t *line, *offset;

	if (!json_is_object(f))
		return bad(rd, where, "not an object");
	line = member(rd, f, where, "line", is_int_or_null, "a line number or null");
	offset = member(rd, f, where, "offset", is_int_or_null, "a number or null");
	memset(out, 0, sizeof(*out));
	out->function = get_str(rd, a, f, where, "function", true);
	out->file = get_str(rd, a, f, where, "file", true);
	out->module = get_str(rd, a, f, where, "module", true);
	out->address = get_hex(rd, f, where, "address", false);
	out->inlined = get_bool(rd, f, where, "inlined");
	if (line && json_is_integer(line)) {
		if (json_integer_value(line) <= 0 || json_integer_value(line) > UINT32_MAX)
			return bad(rd, where, "line out of range");
		out->line = (uint32_t)json_integer_value(line);
	}
	if (offset && json_is_integer(offset))
		out->offset = (uint64_t)json_integer_value(offset);
	if (out->module && !(offset && json_is_integer(offset)))
		return bad(rd, where, "a frame with a module needs its offset");
	return !rd->failed;
}

/* One stack of the document as a new stack of p (its reference, 0 for an
 * empty one); its return addresses' frames go to sym. *site: the site's
 * function (fingerprint.h), arena copy, or NULL. */
static uint32_t read_stack(struct reader *rd, struct import *im, struct hl_process *p,
			   json_t *frames, bool truncated, const char *where, const char **site)
{
	size_t n = json_array_size(frames), ngroups = 0;
	struct hl_frame_info *fi;
	uint64_t *addresses;
	struct hl_process_stack *s;
	char path[256];

	if (site)
		*site = NULL;
	if (!json_is_array(frames))
		return bad(rd, where, "not an array of frames");
	if (!n)
		return 0;
	fi = hl_bump_alloc(&p->arena, n * sizeof(*fi));
	addresses = hl_bump_alloc(&p->arena, n * sizeof(*addresses));
	for (size_t i = 0; i < n; i++)
		if (!read_frame(rd, &p->arena, json_array_get(frames, i),
				at(path, sizeof(path), where, NULL, (long)i), &fi[i]))
			return 0;
	/* A return address: its inlined frames, then the one they are in. */
	for (size_t i = 0, start = 0; i < n; i++) {
		if (fi[i].address != fi[start].address)
			return bad(rd, at(path, sizeof(path), where, NULL, (long)i),
				   "an inlined frame's address differs from the frame it is in");
		if (fi[i].inlined && i + 1 < n)
			continue;
		if (ngroups == HL_WIRE_MAX_FRAMES)
			return bad(rd, where, "more than %d return addresses", HL_WIRE_MAX_FRAMES);
		{
			const struct hl_frame_info *last = &fi[i];
			const struct hl_module *m = last->module ?
				module_for(p, last->module, last->address - last->offset,
					   last->address) : NULL;

			hl_symbolizer_add(im->sym, m, last->address, &fi[start], i + 1 - start);
		}
		addresses[ngroups++] = fi[i].address;
		start = i + 1;
	}
	if (site)
		*site = fi[hl_fingerprint_first_frame(fi, n)].function;
	hl_grow((void **)&p->stacks, &p->stacks_cap, p->nstacks, sizeof(*s));
	s = &p->stacks[p->nstacks++];
	memset(s, 0, sizeof(*s));
	s->depth = (uint16_t)ngroups;
	s->truncated = truncated;
	s->frames = addresses;
	return (uint32_t)p->nstacks;
}

/* ---- a process --------------------------------------------------------------- */

static const char *class_name(uint32_t i) { return hl_leak_class_name(i); }
static const char *how_name(uint32_t i) { return hl_exit_how_name(i); }
static const char *kind_name(uint32_t i) { return hl_error_kind_name(i); }
static const char *call_name(uint32_t i) { return hl_error_call_name(i); }

static const char *origin_name(uint32_t i)
{
	return i == HL_ORIGIN_FORK ? "fork" : i == HL_ORIGIN_EXEC ? "exec" : "start";
}

/* A loss record; an exit record's blocks (leaked) count in its stack's
 * aggregates, a check's do not. */
static void read_leak(struct reader *rd, struct import *im, struct hl_process *p,
		      json_t *l, const char *where, struct hl_leak_group *g, bool leaked)
{
	const char *kind = get_str(rd, &p->arena, l, where, "kind", false);
	const char *fp = get_str(rd, &p->arena, l, where, "fingerprint", true);
	json_t *stack = member(rd, l, where, "stack", is_array, "an array of frames");
	char path[256];

	memset(g, 0, sizeof(*g));
	g->leak_class = (uint8_t)name_index(rd, at(path, sizeof(path), where, "kind", 0), kind,
					    class_name, 0, HL_CLASS_SUPPRESSED + 1);
	g->bytes = get_u64(rd, l, where, "bytes");
	g->blocks = get_u64(rd, l, where, "blocks");
	g->indirect_bytes = get_u64(rd, l, where, "indirect_bytes");
	g->inherited_blocks = get_u64(rd, l, where, "inherited_blocks");
	g->suppression = get_str(rd, &p->arena, l, where, "suppression", true);
	get_bool(rd, l, where, "suppressed"); /* follows from kind and suppression */
	if (fp && (strlen(fp) != HL_FINGERPRINT_LEN ||
		   strspn(fp, "0123456789abcdef") != HL_FINGERPRINT_LEN))
		bad(rd, at(path, sizeof(path), where, "fingerprint", 0),
		    "not %d lowercase hex digits", HL_FINGERPRINT_LEN);
	else if (fp)
		memcpy(g->fingerprint, fp, HL_FINGERPRINT_LEN + 1);
	if (stack && !rd->failed) {
		struct hl_process_stack *s;

		g->stack = read_stack(rd, im, p, stack, get_bool(rd, l, where, "stack_truncated"),
				      at(path, sizeof(path), where, "stack", 0), &g->site_function);
		if (leaked && (s = hl_process_stack(p, g->stack))) {
			s->leaked_bytes += g->bytes;
			s->leaked_blocks += g->blocks;
		}
	}
}

static void read_error(struct reader *rd, struct import *im, struct hl_process *p,
		       json_t *e, const char *where, struct hl_error_event *out)
{
	const char *kind = get_str(rd, &p->arena, e, where, "kind", false);
	const char *call = get_str(rd, &p->arena, e, where, "call", true);
	json_t *st[3] = {
		member(rd, e, where, "stack", is_array, "an array of frames"),
		member(rd, e, where, "alloc_stack", is_array, "an array of frames"),
		member(rd, e, where, "free_stack", is_array, "an array of frames"),
	};
	static const char *const st_names[3] = { "stack", "alloc_stack", "free_stack" };
	uint32_t refs[3] = { 0 };
	char path[256];

	memset(out, 0, sizeof(*out));
	out->kind = name_index(rd, at(path, sizeof(path), where, "kind", 0), kind, kind_name, 1,
			       HL_ERROR_KIND_COUNT);
	out->call = call ? name_index(rd, at(path, sizeof(path), where, "call", 0), call, call_name,
				      0, HL_CALL_COUNT) : 0;
	out->address = get_hex(rd, e, where, "address", false);
	out->block_address = get_hex(rd, e, where, "block_address", true);
	out->block_size = get_u64(rd, e, where, "block_size");
	if (out->call == HL_CALL_READ || out->call == HL_CALL_WRITE)
		out->detail = json_object_get(e, "access_size") ? get_u64(rd, e, where, "access_size")
								 : 0;
	else if (out->kind == HL_ERROR_SIZE_MISMATCH)
		out->detail = get_u64(rd, e, where, "delete_size");
	else if (out->kind == HL_ERROR_OVERFLOW)
		out->detail = get_u64(rd, e, where, "overrun_bytes");
	out->ticks = p->start_realtime_ns; /* the report has no time for it */
	for (int i = 0; i < 3 && !rd->failed; i++)
		refs[i] = read_stack(rd, im, p, st[i], false,
				     at(path, sizeof(path), where, st_names[i], 0), NULL);
	out->stack = refs[0];
	out->alloc_stack = refs[1];
	out->free_stack = refs[2];
}

/* A whole number, maybe negative (what changed since a check before). */
static int64_t get_i64(struct reader *rd, json_t *o, const char *where, const char *key)
{
	json_t *v = member(rd, o, where, key, is_integer, "a whole number");

	return v ? (int64_t)json_integer_value(v) : 0;
}

/* An optional array of thread ids (not in earlier reports), at most
 * HL_UNSTOPPED_TIDS_MAX kept. */
static uint32_t read_tids(struct reader *rd, json_t *o, const char *where, uint32_t *tids)
{
	json_t *a = json_object_get(o, "unstopped_tids");
	uint32_t n = 0;
	char path[256];

	if (!a)
		return 0;
	if (!json_is_array(a))
		return bad(rd, at(path, sizeof(path), where, "unstopped_tids", 0), "not an array"), 0;
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *t = json_array_get(a, i);

		if (!json_is_integer(t) || json_integer_value(t) <= 0 ||
		    json_integer_value(t) > UINT32_MAX)
			return bad(rd, at(path, sizeof(path), where, "unstopped_tids", (long)i),
				   "not a thread id"), n;
		if (n < HL_UNSTOPPED_TIDS_MAX)
			tids[n++] = (uint32_t)json_integer_value(t);
	}
	return n;
}

/* A check's loss records (not in earlier reports): the fields of a leak,
 * its number and what changed since the check before. */
static void read_check_records(struct reader *rd, struct import *im,
			       struct hl_process *p, json_t *c, const char *where,
			       struct hl_check *out)
{
	json_t *records = json_object_get(c, "records");
	char path[256];

	if (!records)
		return;
	if (!json_is_array(records))
		return (void)bad(rd, at(path, sizeof(path), where, "records", 0), "not an array");
	out->records_total = get_u64(rd, c, where, "records_total");
	out->nrecords = json_array_size(records);
	out->records = hl_xcalloc(out->nrecords + 1, sizeof(*out->records));
	for (size_t i = 0; i < out->nrecords && !rd->failed; i++) {
		struct hl_check_record *rec = &out->records[i];
		json_t *l = json_array_get(records, i);
		char lpath[256];

		at(lpath, sizeof(lpath), at(path, sizeof(path), where, "records", 0), NULL, (long)i);
		if (!json_is_object(l))
			return (void)bad(rd, lpath, "not an object");
		read_leak(rd, im, p, l, lpath, &rec->g, false);
		rec->rank = get_u64(rd, l, lpath, "loss_record");
		rec->new_bytes = get_i64(rd, l, lpath, "new_bytes");
		rec->new_indirect_bytes = get_i64(rd, l, lpath, "new_indirect_bytes");
		rec->new_blocks = get_i64(rd, l, lpath, "new_blocks");
	}
	if (!rd->failed && out->records_total < out->nrecords)
		bad(rd, at(path, sizeof(path), where, "records_total", 0),
		    "fewer than the records listed");
}

static void read_check(struct reader *rd, struct import *im, struct hl_process *p,
		       json_t *c, const char *where, struct hl_check *out)
{
	json_t *kinds = member(rd, c, where, "kinds", is_object, "an object");
	json_t *by = member(rd, c, where, "by", is_string, "\"signal\" or \"call\"");
	json_int_t seq;
	char path[256];

	memset(out, 0, sizeof(*out));
	seq = (json_int_t)get_u64(rd, c, where, "seq");
	if (!rd->failed && (seq < 1 || seq > UINT32_MAX))
		bad(rd, at(path, sizeof(path), where, "seq", 0), "out of range");
	out->seq = (uint32_t)seq;
	if (by && strcmp(json_string_value(by), "signal") && strcmp(json_string_value(by), "call"))
		bad(rd, at(path, sizeof(path), where, "by", 0), "not \"signal\" or \"call\"");
	out->flags = (by && !strcmp(json_string_value(by), "signal") ? HL_CHECK_SIGNAL : 0) |
		     (get_bool(rd, c, where, "all_threads_stopped") ? 0 : HL_CHECK_UNSTOPPED);
	out->ticks = get_u64(rd, c, where, "time_ns"); /* ticks are realtime ns here */
	out->scanned = get_bool(rd, c, where, "scanned");
	for (unsigned k = 0; kinds && k <= HL_CLASS_SUPPRESSED && !rd->failed; k++) {
		json_t *v = member(rd, kinds, at(path, sizeof(path), where, "kinds", 0),
				   hl_leak_class_name(k), is_object, "an object");
		char kpath[300];

		if (!v)
			break;
		snprintf(kpath, sizeof(kpath), "%s.kinds.%s", where, hl_leak_class_name(k));
		out->bytes[k] = get_u64(rd, v, kpath, "bytes");
		out->blocks[k] = get_u64(rd, v, kpath, "blocks");
	}
	out->nunstopped_tids = read_tids(rd, c, where, out->unstopped_tids);
	read_check_records(rd, im, p, c, where, out);
}

/* exit.standalone: why the hook went on standalone, or null (and absent
 * from reports written before it was kept). */
static void read_standalone(struct reader *rd, json_t *e, const char *where,
			    struct hl_process *p)
{
	json_t *v = json_object_get(e, "standalone");
	char path[256], names[512];
	int why;

	if (!v || json_is_null(v) || p->has_exit)
		return;
	why = hl_report_standalone_parse(json_string_value(v));
	if (why < 0)
		return (void)bad(rd, at(path, sizeof(path), where, "standalone", 0), "not %s",
				 hl_report_standalone_names(names, sizeof(names)));
	p->standalone = (uint32_t)why;
}

static void read_exit(struct reader *rd, json_t *e, const char *where, struct hl_process *p)
{
	const char *how = get_str(rd, &p->arena, e, where, "how", false);
	json_t *recovered;
	char path[256];

	p->how = name_index(rd, at(path, sizeof(path), where, "how", 0), how, how_name, 0,
			    HL_EXIT_UNKNOWN + 1);
	if (p->how == HL_EXIT_SIGNAL)
		p->status = (int32_t)get_u64(rd, e, where, "signal");
	else if (p->how == HL_EXIT_NORMAL || p->how == HL_EXIT_UNDERSCORE)
		p->status = (int32_t)get_u64(rd, e, where, "status");
	p->has_exit = get_bool(rd, e, where, "exit_record");
	recovered = json_object_get(e, "recovered_events");
	if (!p->has_exit && json_is_integer(recovered) && json_integer_value(recovered) >= 0) {
		p->shared_buffers = true;
		p->recovered_events = (uint64_t)json_integer_value(recovered);
	}
	read_standalone(rd, e, where, p);
}

/* exit.fatal: the signal that ended it as the hook saw it, or null (and
 * absent from reports written before it was kept). */
static void read_fatal(struct reader *rd, struct import *im, json_t *e, const char *where,
		       struct hl_process *p)
{
	json_t *f = json_object_get(e, "fatal"), *stack;
	char path[256], stack_path[300];
	uint64_t sig;

	if (!f || json_is_null(f))
		return;
	at(path, sizeof(path), where, "fatal", 0);
	if (!json_is_object(f))
		return (void)bad(rd, path, "not an object or null");
	sig = get_u64(rd, f, path, "signal");
	if (!rd->failed && (sig == 0 || sig > 64))
		return (void)bad(rd, path, "signal %llu is out of range", (unsigned long long)sig);
	p->fatal.signal = (uint32_t)sig;
	p->fatal.code = (int32_t)get_i64(rd, f, path, "si_code");
	p->fatal.address = get_hex(rd, f, path, "address", true);
	stack = member(rd, f, path, "stack", is_array, "an array of frames");
	if (stack && !rd->failed)
		p->fatal.stack = read_stack(rd, im, p, stack, false,
					    at(stack_path, sizeof(stack_path), path, "stack", 0), NULL);
}

/* One of file_descriptors.listed (as report_json.c writes it). */
static void read_fd(struct reader *rd, struct import *im, struct hl_process *p, json_t *o,
		    const char *where, struct hl_fd_event *f)
{
	const char *kind = get_str(rd, &p->arena, o, where, "kind", false);
	const char *text = get_str(rd, &p->arena, o, where, "text", true);
	json_t *family = member(rd, o, where, "family", is_int_or_null, "a number or null");
	json_t *stack = member(rd, o, where, "stack", is_array, "an array of frames");
	int64_t fd = get_i64(rd, o, where, "fd");
	char spath[300];

	if (rd->failed)
		return;
	if (fd < 0 || fd > INT32_MAX || (strcmp(kind, "file") && strcmp(kind, "socket")))
		return (void)bad(rd, where, "fd out of range or kind not file or socket");
	f->fd = (int32_t)fd;
	f->kind = strcmp(kind, "socket") ? HL_FD_FILE : HL_FD_SOCKET;
	f->family = json_is_integer(family) ? (uint32_t)json_integer_value(family) : 0;
	f->text = text ? text : "";
	f->flags = (get_bool(rd, o, where, "inherited") ? HL_FD_INHERITED : 0) |
		   (get_bool(rd, o, where, "unseen") ? HL_FD_UNSEEN : 0);
	if (!rd->failed)
		f->stack = read_stack(rd, im, p, stack, false,
				      at(spath, sizeof(spath), where, "stack", 0), NULL);
}

/* file_descriptors: track_fds's listing, or null (and absent from reports
 * written before it was kept). */
static void read_fds(struct reader *rd, struct import *im, json_t *o, const char *where,
		     struct hl_process *p)
{
	json_t *fds = json_object_get(o, "file_descriptors"), *listed;
	char path[256], list_path[280], lpath[300];

	if (!fds || json_is_null(fds))
		return;
	at(path, sizeof(path), where, "file_descriptors", 0);
	if (!json_is_object(fds))
		return (void)bad(rd, path, "not an object or null");
	p->fd_summary.seen = true;
	p->fd_summary.open = (uint32_t)get_u64(rd, fds, path, "open");
	p->fd_summary.std = (uint32_t)get_u64(rd, fds, path, "std");
	p->fd_summary.all = get_bool(rd, fds, path, "std_listed");
	listed = member(rd, fds, path, "listed", is_array, "an array");
	for (size_t i = 0; listed && i < json_array_size(listed) && !rd->failed; i++) {
		json_t *f = json_array_get(listed, i);

		at(lpath, sizeof(lpath), at(list_path, sizeof(list_path), path, "listed", 0), NULL,
		   (long)i);
		if (!json_is_object(f))
			return (void)bad(rd, lpath, "not an object");
		hl_grow((void **)&p->fds, &p->fds_cap, p->nfds, sizeof(*p->fds));
		read_fd(rd, im, p, f, lpath, &p->fds[p->nfds++]);
	}
}

static void read_summary(struct reader *rd, json_t *s, const char *where, struct hl_process *p)
{
	p->in_use_bytes = get_u64(rd, s, where, "in_use_bytes");
	p->in_use_blocks = get_u64(rd, s, where, "in_use_blocks");
	p->allocs = get_u64(rd, s, where, "allocs");
	p->frees = get_u64(rd, s, where, "frees");
	p->bytes_allocated = get_u64(rd, s, where, "bytes_allocated");
	p->peak_bytes = get_u64(rd, s, where, "peak_bytes");
	p->inherited_bytes = get_u64(rd, s, where, "inherited_bytes");
	p->inherited_blocks = get_u64(rd, s, where, "inherited_blocks");
	p->dropped_events = get_u64(rd, s, where, "dropped_events");
	p->dropped_stacks = get_u64(rd, s, where, "dropped_stacks");
	p->unmatched_frees = get_u64(rd, s, where, "unmatched_frees");
	p->unfreed_superseded = get_u64(rd, s, where, "unfreed_superseded");
	p->live_mismatch = get_u64(rd, s, where, "live_mismatch");
}

/* A byte string's lossless form (text_bytes.h): an array of bytes 1-255. */
static char *read_bytes(struct reader *rd, struct hl_bump *a, json_t *v, const char *path)
{
	char *b = json_is_array(v) ? hl_json_bytes_dup(a, v) : NULL;

	if (!b)
		bad(rd, path, "not an array of byte values 1-255");
	return b;
}

/* argv_bytes, beside argv: the words that are not UTF-8, exactly. */
static void read_argv_bytes(struct reader *rd, struct hl_bump *a, json_t *o,
			    const char *where, char **argv, size_t n)
{
	json_t *raw = json_object_get(o, "argv_bytes");
	char path[256];

	if (!raw || json_is_null(raw))
		return;
	if (!json_is_array(raw) || json_array_size(raw) != n) {
		bad(rd, at(path, sizeof(path), where, "argv_bytes", 0),
		    "not null or an array as long as argv");
		return;
	}
	for (size_t i = 0; i < n && !rd->failed; i++) {
		json_t *word = json_array_get(raw, i);
		char *b;

		if (json_is_null(word))
			continue;
		at(path, sizeof(path), where, "argv_bytes", 0);
		b = read_bytes(rd, a, word, path);
		if (b)
			argv[i] = b;
	}
}

/* exe_bytes: the executable's path exactly when it is not UTF-8. */
static void read_exe_bytes(struct reader *rd, struct hl_bump *a, json_t *o,
			   const char *where, char **exe)
{
	json_t *raw = json_object_get(o, "exe_bytes");
	char path[256];
	char *b;

	if (!raw || json_is_null(raw))
		return;
	b = read_bytes(rd, a, raw, at(path, sizeof(path), where, "exe_bytes", 0));
	if (b)
		*exe = b;
}

static char **read_argv(struct reader *rd, struct hl_bump *a, json_t *o, const char *where,
			uint32_t *argc)
{
	json_t *v = member(rd, o, where, "argv", is_array, "an array of strings");
	size_t n = json_array_size(v);
	char **argv = hl_bump_alloc(a, (n + 1) * sizeof(*argv));
	char path[256];

	*argc = 0;
	if (n > UINT32_MAX)
		return bad(rd, where, "argv too long"), argv;
	for (size_t i = 0; v && i < n; i++) {
		json_t *s = json_array_get(v, i);

		if (!json_is_string(s))
			return bad(rd, at(path, sizeof(path), where, "argv", (long)i), "not a string"),
			       argv;
		argv[i] = hl_bump_strdup(a, json_string_value(s));
	}
	*argc = (uint32_t)n;
	read_argv_bytes(rd, a, o, where, argv, n);
	return argv;
}

static struct hl_process *new_process(struct import *im)
{
	struct hl_process *p = hl_xcalloc(1, sizeof(*p));

	hl_bump_init(&p->arena);
	hl_table_init(&p->live);
	/* Ticks are CLOCK_REALTIME ns: errors and checks keep their times. */
	p->clock_synced = true;
	p->finished = p->closed = true;
	p->serial = ++im->nprocs;
	return p;
}

/* The heap timeline (not in the first reports): samples whose ticks are
 * their times, as the process's clock is (new_process). */
static void read_timeline(struct reader *rd, struct hl_process *p, json_t *a, const char *where)
{
	if (!a)
		return;
	if (!json_is_array(a))
		return (void)bad(rd, where, "not an array");
	p->nsamples = json_array_size(a);
	p->samples_cap = p->nsamples + 1;
	p->samples = hl_xcalloc(p->samples_cap, sizeof(*p->samples));
	for (size_t i = 0; i < p->nsamples && !rd->failed; i++) {
		char spath[256];
		json_t *s = json_array_get(a, i);

		at(spath, sizeof(spath), where, NULL, (long)i);
		if (!json_is_object(s))
			return (void)bad(rd, spath, "not an object");
		p->samples[i].ticks = get_u64(rd, s, spath, "time_ns");
		p->samples[i].in_use_bytes = get_u64(rd, s, spath, "in_use_bytes");
		p->samples[i].in_use_blocks = get_u64(rd, s, spath, "in_use_blocks");
	}
}

static void read_process(struct reader *rd, struct import *im, struct hl_process *p, json_t *o,
			 const char *where)
{
	json_t *exit_o = member(rd, o, where, "exit", is_object, "an object");
	json_t *summary = member(rd, o, where, "summary", is_object, "an object");
	json_t *scan = member(rd, o, where, "scan", is_object, "an object");
	json_t *leaks = member(rd, o, where, "leaks", is_array, "an array");
	json_t *errors = member(rd, o, where, "errors", is_array, "an array");
	json_t *checks = json_object_get(o, "checks"); /* not in the first reports */
	const char *origin = get_str(rd, &p->arena, o, where, "origin", false);
	uint64_t pid = get_u64(rd, o, where, "pid"), ppid = get_u64(rd, o, where, "ppid");
	char path[256];

	if (rd->failed)
		return;
	if (pid > UINT32_MAX || ppid > UINT32_MAX)
		return (void)bad(rd, where, "pid out of range");
	p->pid = (uint32_t)pid;
	p->ppid = (uint32_t)ppid;
	p->origin = name_index(rd, at(path, sizeof(path), where, "origin", 0), origin, origin_name,
			       HL_ORIGIN_START, HL_ORIGIN_EXEC + 1);
	p->exe = (char *)get_str(rd, &p->arena, o, where, "exe", false);
	read_exe_bytes(rd, &p->arena, o, where, &p->exe);
	p->argv = read_argv(rd, &p->arena, o, where, &p->argc);
	p->test_name = get_str(rd, &p->arena, o, where, "test", true);
	p->start_realtime_ns = get_u64(rd, o, where, "started_ns");
	p->end_realtime_ns = get_u64(rd, o, where, "ended_ns");
	if (rd->failed)
		return;
	read_exit(rd, exit_o, at(path, sizeof(path), where, "exit", 0), p);
	if (!rd->failed)
		read_fatal(rd, im, exit_o, at(path, sizeof(path), where, "exit", 0), p);
	read_summary(rd, summary, at(path, sizeof(path), where, "summary", 0), p);
	p->scanned = get_bool(rd, scan, at(path, sizeof(path), where, "scan", 0), "scanned");
	p->live_unstopped = p->scanned &&
		!get_bool(rd, scan, at(path, sizeof(path), where, "scan", 0), "all_threads_stopped");
	if (scan)
		p->nunstopped_tids = read_tids(rd, scan, at(path, sizeof(path), where, "scan", 0),
					       p->unstopped_tids);
	/* The parent: the latest earlier image of ppid (fork) or of pid (exec),
	 * stored before this one, so the store finds it by its serial. */
	if (p->origin != HL_ORIGIN_START) {
		const uint64_t *serial = hl_map_find(&im->latest_image,
						     p->origin == HL_ORIGIN_FORK ? p->ppid : p->pid);

		p->parent_serial = serial ? *serial : 0;
	}
	*hl_map_find_or_insert(&im->latest_image, p->pid, &(bool){ false }) = p->serial;
	p->nleaks = json_array_size(leaks);
	p->leaks = hl_xcalloc(p->nleaks + 1, sizeof(*p->leaks));
	for (size_t i = 0; i < p->nleaks && !rd->failed; i++) {
		char lpath[256];
		json_t *l = json_array_get(leaks, i);

		at(lpath, sizeof(lpath), at(path, sizeof(path), where, "leaks", 0), NULL, (long)i);
		if (!json_is_object(l))
			return (void)bad(rd, lpath, "not an object");
		read_leak(rd, im, p, l, lpath, &p->leaks[i], true);
	}
	for (size_t i = 0; i < json_array_size(errors) && !rd->failed; i++) {
		char epath[256];
		json_t *e = json_array_get(errors, i);

		at(epath, sizeof(epath), at(path, sizeof(path), where, "errors", 0), NULL, (long)i);
		if (!json_is_object(e))
			return (void)bad(rd, epath, "not an object");
		hl_grow((void **)&p->errors, &p->errors_cap, p->nerrors, sizeof(*p->errors));
		read_error(rd, im, p, e, epath, &p->errors[p->nerrors++]);
	}
	if (!rd->failed)
		read_fds(rd, im, o, where, p);
	read_timeline(rd, p, json_object_get(o, "timeline"),
		      at(path, sizeof(path), where, "timeline", 0));
	if (checks && !json_is_array(checks))
		return (void)bad(rd, at(path, sizeof(path), where, "checks", 0), "not an array");
	for (size_t i = 0; i < json_array_size(checks) && !rd->failed; i++) {
		char cpath[256];
		json_t *c = json_array_get(checks, i);

		at(cpath, sizeof(cpath), at(path, sizeof(path), where, "checks", 0), NULL, (long)i);
		if (!json_is_object(c))
			return (void)bad(rd, cpath, "not an object");
		hl_grow((void **)&p->checks, &p->checks_cap, p->nchecks, sizeof(*p->checks));
		read_check(rd, im, p, c, cpath, &p->checks[p->nchecks++]);
	}
}

/* ---- the run ---------------------------------------------------------------- */

static void read_labels(struct reader *rd, struct hl_report *r, json_t *labels)
{
	size_t n = json_object_size(labels), i = 0;
	const char *key;
	json_t *v;
	char path[256];

	r->label_keys = hl_bump_alloc(&r->arena, (n + 1) * sizeof(*r->label_keys));
	r->label_values = hl_bump_alloc(&r->arena, (n + 1) * sizeof(*r->label_values));
	json_object_foreach(labels, key, v) {
		if (!json_is_string(v) || !*key)
			return (void)bad(rd, at(path, sizeof(path), "run.labels", key, 0),
					 "a label is a non-empty key with a string value");
		r->label_keys[i] = hl_bump_strdup(&r->arena, key);
		r->label_values[i++] = hl_bump_strdup(&r->arena, json_string_value(v));
	}
	r->nlabels = i;
}

static void read_run(struct reader *rd, struct hl_report *r, json_t *run)
{
	json_t *exit_code = member(rd, run, "run", "exit_code", is_int_or_null,
				   "a number or null");
	json_t *labels = member(rd, run, "run", "labels", is_object, "an object");
	uint32_t argc;

	r->mode = get_str(rd, &r->arena, run, "run", "mode", false);
	r->argv = (const char **)read_argv(rd, &r->arena, run, "run", &argc);
	r->argc = argc;
	r->started_ns = get_u64(rd, run, "run", "started_ns");
	r->ended_ns = get_u64(rd, run, "run", "ended_ns");
	r->exit_code = exit_code && json_is_integer(exit_code) &&
		       json_integer_value(exit_code) >= 0 && json_integer_value(exit_code) <= 255 ?
			       (int)json_integer_value(exit_code) : -1;
	r->uuid = get_str(rd, &r->arena, run, "run", "uuid", true);
	r->git_commit = get_str(rd, &r->arena, run, "run", "git_commit", true);
	r->git_branch = get_str(rd, &r->arena, run, "run", "git_branch", true);
	r->unreported = json_is_string(json_object_get(run, "unreported")) ?
		hl_bump_strdup(&r->arena, json_string_value(json_object_get(run, "unreported"))) :
		NULL;
	/* Not in the first reports: absent is unknown. */
	if (json_object_get(run, "cwd"))
		r->cwd = get_str(rd, &r->arena, run, "run", "cwd", true);
	if (json_object_get(run, "hostname"))
		r->hostname = get_str(rd, &r->arena, run, "run", "hostname", true);
	if (!rd->failed && !r->uuid)
		bad(rd, "run.uuid", "null: the run has no UUID, so importing it twice could not be "
		    "told apart");
	if (labels && !rd->failed)
		read_labels(rd, r, labels);
	r->imported = true;
}

/* ---- the document, piece by piece ------------------------------------------ */

/* A piece (json_scan.h) parsed alone: the value, or NULL with why said
 * (a syntax error placed in the document, or out of memory). */
static json_t *parse_piece(struct import *im, const struct hl_json_scan *sc, const char *what)
{
	json_error_t error;
	json_t *v = json_loadb(sc->piece, sc->len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &error);
	const struct hl_json_pos *at = &sc->piece_at;

	if (v)
		return v;
	im->rd.failed = true;
	/* jansson leaves the error unset ("", line -1) when an allocation
	 * fails, and says json_error_out_of_memory where it does set it. */
	if (!error.text[0] || json_error_code(&error) == json_error_out_of_memory) {
		im->out_of_memory = true;
		snprintf(im->rd.why, im->rd.why_len, "out of memory at byte %llu, in %s: its %zu bytes"
			 " could not be parsed", (unsigned long long)at->byte, what, sc->len);
		return NULL;
	}
	snprintf(im->rd.why, im->rd.why_len, "syntax error at byte %llu (line %llu, column %llu),"
		 " in %s: %s",
		 (unsigned long long)(at->byte + (uint64_t)error.position),
		 (unsigned long long)(at->line + (uint64_t)(error.line > 0 ? error.line - 1 : 0)),
		 (unsigned long long)(error.line == 1 ? at->column + (uint64_t)error.column - 1 :
				      (uint64_t)(error.column > 0 ? error.column : 0)),
		 what, error.text);
	return NULL;
}

/* "processes[N]", or the member's name, for messages. */
static const char *piece_name(const struct import *im, char *buf, size_t len, bool item)
{
	if (item)
		snprintf(buf, len, "processes[%zu]", im->nitems);
	else
		snprintf(buf, len, "member \"%.60s\"", im->key ? im->key : "");
	return buf;
}

/* The scanner's own error (syntax, truncation, out of memory) said. */
static int scan_error(struct import *im, const struct hl_json_scan *sc,
		      enum hl_json_scan_event ev)
{
	char name[96];
	const char *inside = im->in_processes ? piece_name(im, name, sizeof(name), true) : "";

	im->rd.failed = true;
	if (ev == HL_JSON_SCAN_TRUNCATED)
		snprintf(im->rd.why, im->rd.why_len, "truncated at byte %llu%s%s: %s",
			 (unsigned long long)sc->at.byte, *inside ? ", in " : "", inside, sc->error);
	else if (ev == HL_JSON_SCAN_NOMEM)
		snprintf(im->rd.why, im->rd.why_len, "out of memory at byte %llu, in %s (from byte"
			 " %llu): its first %zu bytes could not be held", (unsigned long long)sc->at.byte,
			 piece_name(im, name, sizeof(name), im->in_processes),
			 (unsigned long long)sc->piece_at.byte, sc->len);
	else
		snprintf(im->rd.why, im->rd.why_len, "syntax error at byte %llu (line %llu, column"
			 " %llu)%s%s: %s", (unsigned long long)sc->at.byte,
			 (unsigned long long)sc->at.line, (unsigned long long)sc->at.column,
			 *inside ? ", in " : "", inside, sc->error);
	return ev == HL_JSON_SCAN_NOMEM ? -ENOMEM : -EINVAL;
}

/* Whether format, version and run were all read, and held. */
static bool header_read(const struct import *im)
{
	return im->have_format && im->have_version && im->have_run && !im->rd.failed;
}

/* A top-level member's name: said duplicates are refused, as jansson does
 * (JSON_REJECT_DUPLICATES), and a report has only a few members. */
static int on_key(struct import *im, struct hl_json_scan *sc)
{
	json_t *k = parse_piece(im, sc, "a member's name");

	if (!k)
		return im->out_of_memory ? -ENOMEM : -EINVAL;
	free(im->key);
	im->key = hl_xstrdup(json_string_value(k));
	json_decref(k);
	if (json_object_get(im->keys, im->key)) {
		im->rd.failed = true;
		snprintf(im->rd.why, im->rd.why_len, "syntax error at byte %llu (line %llu, column %llu):"
			 " duplicate object key \"%.60s\"",
			 (unsigned long long)sc->piece_at.byte, (unsigned long long)sc->piece_at.line,
			 (unsigned long long)sc->piece_at.column, im->key);
		return -EINVAL;
	}
	if (json_object_size(im->keys) >= HL_JSON_IMPORT_MAX_MEMBERS) {
		bad(&im->rd, "", "not a heapledger JSON report (more than %d members)",
		    HL_JSON_IMPORT_MAX_MEMBERS);
		return -EINVAL;
	}
	json_object_set_new(im->keys, im->key, json_true());
	if (!strcmp(im->key, "processes")) {
		/* Before the header is known, the processes are only found here
		 * and read on a second pass (hl_json_import_stream). */
		im->deferred = !header_read(im);
		hl_json_scan_split(sc, im->deferred);
		im->in_processes = true;
	}
	return 0;
}

/* A top-level member's value: the header's parts are checked as they come. */
static int on_value(struct import *im, const struct hl_json_scan *sc)
{
	char name[96];
	json_t *v = parse_piece(im, sc, piece_name(im, name, sizeof(name), false));

	if (!v)
		return im->out_of_memory ? -ENOMEM : -EINVAL;
	if (!strcmp(im->key, "format")) {
		im->have_format = true;
		if (!json_is_string(v) || strcmp(json_string_value(v), HL_REPORT_FORMAT))
			bad(&im->rd, "", "not a heapledger JSON report (its \"format\" is not \"%s\")",
			    HL_REPORT_FORMAT);
	} else if (!strcmp(im->key, "version")) {
		im->have_version = true;
		if (!json_is_integer(v) || json_integer_value(v) != HL_REPORT_VERSION)
			bad(&im->rd, "version", "this heapledger reads version %d", HL_REPORT_VERSION);
	} else if (!strcmp(im->key, "run")) {
		im->have_run = true;
		if (!json_is_object(v))
			bad(&im->rd, "run", "not an object");
		else
			read_run(&im->rd, &im->run, v);
	}
	json_decref(v);
	return im->rd.failed ? -EINVAL : 0;
}

/* The header is complete: said to the sink once, before any process. */
static int header_done(struct import *im)
{
	if (im->header_given)
		return 0;
	if (!im->have_format)
		bad(&im->rd, "", "not a heapledger JSON report (its \"format\" is not \"%s\")",
		    HL_REPORT_FORMAT);
	else if (!im->have_version)
		bad(&im->rd, "version", "this heapledger reads version %d", HL_REPORT_VERSION);
	else if (!im->have_run)
		bad(&im->rd, "run", "missing (an object)");
	if (im->rd.failed)
		return -EINVAL;
	im->header_given = true;
	return im->sink->run ? im->sink->run(im->sink->ctx, &im->run) : 0;
}

/* One element of "processes": read, given to the sink, freed. */
static int on_item(struct import *im, const struct hl_json_scan *sc)
{
	char where[64];
	struct hl_process *p;
	json_t *o;
	int err = header_done(im);

	piece_name(im, where, sizeof(where), true);
	im->nitems++;
	if (err)
		return err;
	if (!(o = parse_piece(im, sc, where)))
		return im->out_of_memory ? -ENOMEM : -EINVAL;
	if (!json_is_object(o)) {
		json_decref(o);
		bad(&im->rd, where, "not an object");
		return -EINVAL;
	}
	im->sym = hl_symbolizer_new_given();
	p = new_process(im);
	read_process(&im->rd, im, p, o, where);
	json_decref(o);
	if (!im->rd.failed && im->sink->process)
		err = im->sink->process(im->sink->ctx, p, im->sym);
	hl_process_destroy(p);
	hl_symbolizer_free(im->sym);
	im->sym = NULL;
	return im->rd.failed ? -EINVAL : err;
}

/* An event of the scanner: 0 to go on, 1 when done, or -errno. */
static int on_event(struct import *im, struct hl_json_scan *sc, enum hl_json_scan_event ev)
{
	switch (ev) {
	case HL_JSON_SCAN_KEY:
		return on_key(im, sc);
	case HL_JSON_SCAN_VALUE:
		return on_value(im, sc);
	case HL_JSON_SCAN_ARRAY:
		im->array_after = sc->pos_after;
		return 0;
	case HL_JSON_SCAN_NOT_ARRAY:
		bad(&im->rd, "processes", "not an array");
		return -EINVAL;
	case HL_JSON_SCAN_ITEM:
		if (im->deferred) {
			im->nitems++;
			return 0;
		}
		return on_item(im, sc);
	case HL_JSON_SCAN_ARRAY_END:
		im->in_processes = false;
		return sc->array_only ? 1 : 0;
	case HL_JSON_SCAN_END:
		return 1;
	case HL_JSON_SCAN_MORE:
		return 0;
	default:
		return scan_error(im, sc, ev);
	}
}

/* The document (or, after hl_json_scan_init_in_array, its processes) read
 * from f's current place to its end: 0, or -errno with why said. */
static int scan_file(struct import *im, struct hl_json_scan *sc, FILE *f)
{
	static __thread char chunk[1 << 16];
	int err = 0;

	while (!err) {
		size_t n = fread(chunk, 1, sizeof(chunk), f), off = 0, used;

		if (!n && ferror(f)) {
			err = errno ? -errno : -EIO;
			snprintf(im->rd.why, im->rd.why_len, "reading: %s", strerror(-err));
			im->rd.failed = true;
			return err;
		}
		if (!n)
			return on_event(im, sc, hl_json_scan_finish(sc)) < 0 ? -EINVAL : 0;
		while (!err && off < n) {
			enum hl_json_scan_event ev = hl_json_scan_feed(sc, chunk + off, n - off, &used);

			off += used;
			err = on_event(im, sc, ev);
			if (ev == HL_JSON_SCAN_MORE && used == 0)
				break; /* a scanner that has stopped */
		}
	}
	return err < 0 ? err : 0;
}

/* The processes, read when the header came after them: from their '['. */
static int second_pass(struct import *im, FILE *f)
{
	struct hl_json_scan sc;
	int err;

	if ((err = header_done(im)))
		return err;
	if (fseeko(f, (off_t)im->array_after.byte, SEEK_SET)) {
		bad(&im->rd, "processes", "they come before the run's header, and this file cannot"
		    " be read a second time (%s)", strerror(errno));
		return -EINVAL;
	}
	im->deferred = false;
	im->in_processes = true;
	im->nitems = 0;
	hl_json_scan_init_in_array(&sc, im->array_after, false);
	err = scan_file(im, &sc, f);
	hl_json_scan_free(&sc);
	return err;
}

int hl_json_import_stream(FILE *f, const struct hl_json_import_sink *sink, char *why,
			  size_t why_len)
{
	struct import im = { .rd = { why, why_len, false }, .sink = sink };
	struct hl_json_scan sc;
	int err;

	why[0] = 0;
	hl_report_init(&im.run);
	hl_map_init(&im.latest_image);
	im.keys = json_object();
	hl_json_scan_init(&sc);
	err = im.keys ? scan_file(&im, &sc, f) : -ENOMEM;
	hl_json_scan_free(&sc);
	if (!err && !json_object_get(im.keys, "processes") && !(err = header_done(&im))) {
		bad(&im.rd, "processes", "missing (an array)");
		err = -EINVAL;
	}
	if (!err && im.deferred)
		err = second_pass(&im, f);
	if (!err)
		err = header_done(&im);
	if (!err && im.rd.failed)
		err = -EINVAL;
	if (err && !im.rd.failed)
		why[0] = 0; /* the sink's own error */
	json_decref(im.keys);
	free(im.key);
	hl_map_destroy(&im.latest_image);
	hl_report_destroy(&im.run);
	return err;
}
