/*
 * reporter/formats/report_json.c: the report as JSON, format "heapledger-report"
 * version 1 (documented in doc/manual.md). Fields are only added, never
 * renamed or removed, within one version.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "frame_json.h"
#include "json_values.h"
#include "record_json.h"
#include "report.h"
#include "table.h"
#include "text_bytes.h"

/* The stacks of a report written as JSON so far, by key (hl_report_stack):
 * a fork child's loss records are its parent's stacks, and making their
 * frames into JSON again for each record of each of a daemon run's 200
 * processes was most of the time of its report. Each distinct stack is
 * made into text once; the document holds a placeholder for it, a string
 * that starts with a NUL character (which no string of a report can hold:
 * they are C strings, so the text "\u0000 after a quote is never theirs),
 * and the text is put in its place, indented as jansson would have. */
struct hl_json_stacks {
	struct hl_map by_key;    /* mixed key -> index in v */
	struct json_stack {
		uint64_t key;
		size_t nframes;
		bool truncated;
		char *text;      /* the array as json_dumps gives it alone */
		char *nested;    /* the same, its lines after the first indented by */
		size_t nested_len, nested_indent; /* nested_indent spaces (NULL: none yet) */
	} *v;
	size_t n, cap;
};

#define JSON_FLAGS (JSON_INDENT(1) | JSON_PRESERVE_ORDER)

void hl_report_json_forget(struct hl_report *r)
{
	struct hl_json_stacks *c = r->json_stacks;

	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].text);
		free(c->v[i].nested);
	}
	free(c->v);
	hl_map_destroy(&c->by_key);
	free(c);
	r->json_stacks = NULL;
}

/* The stack's JSON: the array, or the placeholder of its text. */
static json_t *stack_json(struct hl_report *r, const struct hl_report_stack *s)
{
	struct hl_json_stacks *c = r ? r->json_stacks : NULL;
	char placeholder[24];
	size_t index = SIZE_MAX;
	uint64_t h;

	if (!s->key || !r)
		return hl_frames_json(s);
	if (!c) {
		c = r->json_stacks = hl_xcalloc(1, sizeof(*c));
		hl_map_init(&c->by_key);
	}
	h = (s->key * 0x9e3779b97f4a7c15ull ^ s->nframes * 0xff51afd7ed558ccdull ^ s->truncated)
	    << 4;
	h = h ? h : 16;
	for (const uint64_t *v = hl_map_find(&c->by_key, h); v && index == SIZE_MAX;
	     v = hl_map_find_next(&c->by_key, h, v)) {
		const struct json_stack *e = &c->v[*v];

		if (e->key == s->key && e->nframes == s->nframes && e->truncated == s->truncated)
			index = *v;
	}
	if (index == SIZE_MAX) {
		json_t *a = hl_frames_json(s);
		char *text = json_dumps(a, JSON_FLAGS);

		json_decref(a);
		if (!text)
			return hl_frames_json(s); /* no memory: written in place */
		hl_grow((void **)&c->v, &c->cap, c->n, sizeof(*c->v));
		c->v[c->n] = (struct json_stack){ s->key, s->nframes, s->truncated, text, NULL, 0, 0 };
		hl_map_insert(&c->by_key, h, c->n);
		index = c->n++;
	}
	placeholder[0] = 0;
	return json_stringn(placeholder,
			    1 + (size_t)snprintf(placeholder + 1, sizeof(placeholder) - 1, "%zu", index));
}

/* e's text as the value of a member on a line indented by indent spaces:
 * jansson indents a nested value's lines by its parent's indentation. The
 * last such copy is kept (a stack is nearly always at the same depth). */
static void nest(struct json_stack *e, size_t indent)
{
	size_t lines = 0, n = 0;

	if (e->nested && e->nested_indent == indent)
		return;
	for (const char *t = e->text; *t; t++)
		lines += *t == '\n';
	free(e->nested);
	e->nested = hl_xmalloc(strlen(e->text) + lines * indent + 1);
	for (const char *t = e->text; *t; t++) {
		e->nested[n++] = *t;
		if (*t == '\n') {
			memset(e->nested + n, ' ', indent);
			n += indent;
		}
	}
	e->nested[n] = 0;
	e->nested_len = n;
	e->nested_indent = indent;
}

/* Writes text (a process's JSON) with each stack placeholder replaced by
 * its stack's text. */
static void write_spliced(struct hl_json_stacks *c, const char *text, FILE *out)
{
	static const char mark[] = "\"\\u0000";
	const char *p = text, *q;

	while (c && (q = strstr(p, mark))) {
		const char *digits = q + sizeof(mark) - 1, *line = q;
		char *end;
		unsigned long index = strtoul(digits, &end, 10);
		size_t indent = 0;

		if (end == digits || *end != '"' || index >= c->n) {
			fwrite(p, 1, (size_t)(digits - p), out); /* not a placeholder */
			p = digits;
			continue;
		}
		while (line > text && line[-1] != '\n')
			line--;
		while (line[indent] == ' ')
			indent++;
		fwrite(p, 1, (size_t)(q - p), out);
		nest(&c->v[index], indent);
		fwrite(c->v[index].nested, 1, c->v[index].nested_len, out);
		p = end + 1;
	}
	fputs(p, out);
}

json_t *hl_leak_record_json(struct hl_report *r, const struct hl_report_leak *l)
{
	json_t *o = json_object();

	json_object_set_new(o, "kind", json_string(hl_leak_class_name(l->leak_class)));
	json_object_set_new(o, "bytes", hl_json_u64(l->bytes));
	json_object_set_new(o, "blocks", hl_json_u64(l->blocks));
	json_object_set_new(o, "indirect_bytes", hl_json_u64(l->indirect_bytes));
	json_object_set_new(o, "inherited_blocks", hl_json_u64(l->inherited_blocks));
	json_object_set_new(o, "suppressed", json_boolean(l->suppressed));
	json_object_set_new(o, "suppression", hl_json_text(l->suppression));
	json_object_set_new(o, "fingerprint", hl_json_text(l->fingerprint));
	json_object_set_new(o, "stack", stack_json(r, &l->stack));
	json_object_set_new(o, "stack_truncated", json_boolean(l->stack.truncated));
	return o;
}

json_t *hl_error_record_json(struct hl_report *r, const struct hl_report_error *e)
{
	json_t *o = json_object();
	char address[24], words[160];

	snprintf(address, sizeof(address), "0x%llx", (unsigned long long)e->address);
	json_object_set_new(o, "kind", json_string(hl_error_kind_name(e->kind)));
	json_object_set_new(o, "call", e->call ? json_string(e->call) : json_null());
	json_object_set_new(o, "address", json_string(address));
	snprintf(address, sizeof(address), "0x%llx", (unsigned long long)e->block_address);
	json_object_set_new(o, "block_address",
			    e->block_address ? json_string(address) : json_null());
	json_object_set_new(o, "block_size", hl_json_u64(e->block_size));
	if (e->kind == HL_ERROR_SIZE_MISMATCH)
		json_object_set_new(o, "delete_size", hl_json_u64(e->detail));
	if (hl_report_error_is_access(e)) {
		if (e->detail) /* the access's size, when the instruction was decoded */
			json_object_set_new(o, "access_size", hl_json_u64(e->detail));
	} else if (e->kind == HL_ERROR_OVERFLOW) {
		json_object_set_new(o, "overrun_bytes", hl_json_u64(e->detail));
	}
	/* the text report's words for it, so no reader words a kind itself */
	json_object_set_new(o, "heading", json_string(hl_report_error_title(e, words,
									     sizeof(words))));
	json_object_set_new(o, "where", json_string(hl_report_error_where(e, words,
									   sizeof(words))));
	json_object_set_new(o, "block_freed", json_boolean(hl_report_error_block_freed(e)));
	json_object_set_new(o, "stack", stack_json(r, &e->stack));
	json_object_set_new(o, "alloc_stack", stack_json(r, &e->alloc_stack));
	json_object_set_new(o, "free_stack", stack_json(r, &e->free_stack));
	return o;
}

/* The signal that ended it, as the hook saw it arrive (the text report's
 * "Process terminating with default action of signal N"), or null. */
static json_t *fatal_json(struct hl_report *r, const struct hl_report_process *p)
{
	char name[24], address[24];
	json_t *o;

	if (!p->fatal.signal)
		return json_null();
	o = json_object();
	snprintf(address, sizeof(address), "0x%llx", (unsigned long long)p->fatal.address);
	json_object_set_new(o, "signal", json_integer(p->fatal.signal));
	json_object_set_new(o, "name", json_string(hl_report_signal_name(p->fatal.signal, name, sizeof(name))));
	json_object_set_new(o, "si_code", json_integer(p->fatal.code));
	json_object_set_new(o, "fault", hl_json_text(p->fatal.fault));
	json_object_set_new(o, "address", p->fatal.fault ? json_string(address) : json_null());
	json_object_set_new(o, "stack", stack_json(r, &p->fatal.stack));
	return o;
}

/* track_fds: the descriptors open at exit (the text's "FILE DESCRIPTORS"),
 * or null when the hook did not track them. */
static json_t *fds_json(struct hl_report *r, const struct hl_report_process *p)
{
	json_t *o, *list;

	if (!p->fd_summary.tracked)
		return json_null();
	o = json_object();
	list = json_array();
	json_object_set_new(o, "open", json_integer(p->fd_summary.open));
	json_object_set_new(o, "std", json_integer(p->fd_summary.std));
	json_object_set_new(o, "std_listed", json_boolean(p->fd_summary.all));
	for (size_t i = 0; i < p->nfds; i++) {
		const struct hl_report_fd *f = &p->fds[i];
		json_t *e = json_object();

		json_object_set_new(e, "fd", json_integer(f->fd));
		json_object_set_new(e, "kind", json_string(f->kind == HL_FD_SOCKET ? "socket" : "file"));
		json_object_set_new(e, "family", f->kind == HL_FD_SOCKET && f->family ?
					json_integer(f->family) : json_null());
		json_object_set_new(e, "family_name",
				    hl_json_text(hl_wire_fd_family_name(f->family)));
		json_object_set_new(e, "text", f->text[0] ? hl_json_text(f->text) : json_null());
		json_object_set_new(e, "inherited", json_boolean(f->inherited));
		json_object_set_new(e, "unseen", json_boolean(f->unseen));
		json_object_set_new(e, "stack", stack_json(r, &f->stack));
		json_array_append_new(list, e);
	}
	json_object_set_new(o, "listed", list);
	return o;
}

static json_t *exit_json(struct hl_report *r, const struct hl_report_process *p)
{
	json_t *o = json_object();

	json_object_set_new(o, "how", json_string(p->how));
	if (!strcmp(p->how, "signal"))
		json_object_set_new(o, "signal", json_integer(p->status));
	else if (!strcmp(p->how, "exit") || !strcmp(p->how, "_exit"))
		json_object_set_new(o, "status", json_integer(p->status));
	else if (!strcmp(p->how, "exec")) {
		json_object_set_new(o, "image", hl_json_text(p->exec_path));
		json_object_set_new(o, "tracked", json_boolean(!p->exec_untracked));
	}
	json_object_set_new(o, "fatal", fatal_json(r, p));
	json_object_set_new(o, "exit_record", json_boolean(!p->no_exit_record));
	if (p->no_exit_record) {
		json_object_set_new(o, "recovered_events", p->recovered_events >= 0 ?
				    json_integer(p->recovered_events) : json_null());
		json_object_set_new(o, "standalone",
				    hl_json_text(hl_report_standalone_name(p->standalone)));
	}
	return o;
}

static json_t *tids_json(const uint32_t *tids, size_t n);

/* Whether a leak scan classified the blocks, and if not, why. */
static json_t *scan_json(const struct hl_report_process *p)
{
	json_t *o = json_object();
	char why[4200];

	json_object_set_new(o, "scanned", json_boolean(p->scanned));
	json_object_set_new(o, "not_scanned", hl_report_not_scanned(p, why, sizeof(why)) ?
					      hl_json_text(why) : json_null());
	json_object_set_new(o, "all_threads_stopped", json_boolean(!p->unstopped));
	json_object_set_new(o, "unstopped_tids", tids_json(p->unstopped_tids, p->nunstopped_tids));
	return o;
}

/* Null, or why the figures may lack events (the stream was cut short). */
static json_t *stream_cut_json(const struct hl_report_process *p)
{
	char why[600];

	return hl_report_stream_cut(p, why, sizeof(why)) ? hl_json_text(why) : json_null();
}

static json_t *summary_json(const struct hl_report_process *p)
{
	json_t *o = json_object();

	json_object_set_new(o, "in_use_bytes", hl_json_u64(p->in_use_bytes));
	json_object_set_new(o, "in_use_blocks", hl_json_u64(p->in_use_blocks));
	json_object_set_new(o, "allocs", hl_json_u64(p->allocs));
	json_object_set_new(o, "frees", hl_json_u64(p->frees));
	json_object_set_new(o, "bytes_allocated", hl_json_u64(p->bytes_allocated));
	json_object_set_new(o, "peak_bytes", hl_json_u64(p->peak_bytes));
	json_object_set_new(o, "inherited_bytes", hl_json_u64(p->inherited_bytes));
	json_object_set_new(o, "inherited_blocks", hl_json_u64(p->inherited_blocks));
	json_object_set_new(o, "dropped_events", hl_json_u64(p->dropped_events));
	json_object_set_new(o, "dropped_stacks", hl_json_u64(p->dropped_stacks));
	json_object_set_new(o, "unmatched_frees", hl_json_u64(p->unmatched_frees));
	json_object_set_new(o, "unfreed_superseded", hl_json_u64(p->unfreed_superseded));
	json_object_set_new(o, "live_mismatch", hl_json_u64(p->live_mismatch));
	json_object_set_new(o, "scanned", json_boolean(p->scanned));
	return o;
}

static json_t *argv_json(const char *const *argv, uint32_t argc)
{
	json_t *a = json_array();

	for (uint32_t i = 0; i < argc; i++)
		json_array_append_new(a, hl_json_text(argv[i]));
	return a;
}

/* argv_bytes: null when every word is UTF-8, else beside argv each word that
 * is not as its bytes, the others null (text_bytes.h). */
static json_t *argv_bytes_json(const char *const *argv, uint32_t argc)
{
	json_t *a = NULL;

	for (uint32_t i = 0; i < argc; i++) {
		if (hl_utf8_is_valid(argv[i]))
			continue;
		if (!a) {
			a = json_array();
			for (uint32_t j = 0; j < argc; j++)
				json_array_append_new(a, json_null());
		}
		json_array_set_new(a, i, hl_json_bytes(argv[i]));
	}
	return a ? a : json_null();
}

static json_t *exe_bytes_json(const char *exe)
{
	return exe && !hl_utf8_is_valid(exe) ? hl_json_bytes(exe) : json_null();
}

/* Thread ids (the threads that did not stop for a scan). */
static json_t *tids_json(const uint32_t *tids, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(tids[i]));
	return a;
}

/* A check's loss record: the exit records' fields, its number and what
 * changed since the check before (valgrind's "(+N)"). */
static json_t *check_record_json(struct hl_report *r, const struct hl_report_check_record *rec)
{
	json_t *o = hl_leak_record_json(r, &rec->leak);

	json_object_set_new(o, "loss_record", hl_json_u64(rec->rank));
	json_object_set_new(o, "new_bytes", json_integer(rec->new_bytes));
	json_object_set_new(o, "new_indirect_bytes", json_integer(rec->new_indirect_bytes));
	json_object_set_new(o, "new_blocks", json_integer(rec->new_blocks));
	return o;
}

/* A check's bytes and blocks per kind, with what is new since the check
 * before (negative when blocks were freed). */
json_t *hl_check_json(struct hl_report *r, const struct hl_report_check *c,
		      const struct hl_report_check *prev)
{
	json_t *o = json_object(), *kinds = json_object(), *records = json_array();

	json_object_set_new(o, "seq", json_integer(c->seq));
	json_object_set_new(o, "by", json_string(c->by_signal ? "signal" : "call"));
	json_object_set_new(o, "time_ns", hl_json_u64(c->time_ns));
	json_object_set_new(o, "scanned", json_boolean(c->scanned));
	json_object_set_new(o, "all_threads_stopped", json_boolean(c->all_threads_stopped));
	for (unsigned k = 0; k <= HL_CLASS_SUPPRESSED; k++) {
		json_t *v = json_object();

		json_object_set_new(v, "bytes", hl_json_u64(c->bytes[k]));
		json_object_set_new(v, "blocks", hl_json_u64(c->blocks[k]));
		json_object_set_new(v, "new_bytes",
				    json_integer((json_int_t)(c->bytes[k] - (prev ? prev->bytes[k] : 0))));
		json_object_set_new(v, "new_blocks",
				    json_integer((json_int_t)(c->blocks[k] - (prev ? prev->blocks[k] : 0))));
		json_object_set_new(kinds, hl_leak_class_name(k), v);
	}
	json_object_set_new(o, "kinds", kinds);
	json_object_set_new(o, "unstopped_tids", tids_json(c->unstopped_tids, c->nunstopped_tids));
	json_object_set_new(o, "records_total", hl_json_u64(c->records_total));
	json_object_set_new(o, "records", records);
	for (size_t i = 0; i < c->nrecords; i++)
		json_array_append_new(records, check_record_json(r, &c->records[i]));
	return o;
}

/* The heap in use over time (what `import` needs to store it again). */
static json_t *timeline_json(const struct hl_report_process *p)
{
	json_t *a = json_array();

	for (size_t i = 0; i < p->ntimeline; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "time_ns", hl_json_u64(p->timeline[i].time_ns));
		json_object_set_new(o, "in_use_bytes", hl_json_u64(p->timeline[i].in_use_bytes));
		json_object_set_new(o, "in_use_blocks", hl_json_u64(p->timeline[i].in_use_blocks));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *process_json(struct hl_report *r, const struct hl_report_process *p)
{
	json_t *o = json_object();
	json_t *leaks = json_array(), *errors = json_array();

	json_object_set_new(o, "pid", json_integer(p->pid));
	json_object_set_new(o, "ppid", json_integer(p->ppid));
	json_object_set_new(o, "exe", hl_json_text(p->exe));
	json_object_set_new(o, "argv", argv_json(p->argv, p->argc));
	json_object_set_new(o, "exe_bytes", exe_bytes_json(p->exe));
	json_object_set_new(o, "argv_bytes", argv_bytes_json(p->argv, p->argc));
	json_object_set_new(o, "test", hl_json_text(p->test_name));
	json_object_set_new(o, "origin", json_string(p->origin));
	json_object_set_new(o, "started_ns", hl_json_u64(p->started_ns));
	json_object_set_new(o, "ended_ns", hl_json_u64(p->ended_ns));
	json_object_set_new(o, "exit", exit_json(r, p));
	json_object_set_new(o, "stream_incomplete", stream_cut_json(p));
	json_object_set_new(o, "summary", summary_json(p));
	json_object_set_new(o, "scan", scan_json(p));
	for (size_t i = 0; i < p->nleaks; i++)
		json_array_append_new(leaks, hl_leak_record_json(r, &p->leaks[i]));
	for (size_t i = 0; i < p->nerrors; i++)
		json_array_append_new(errors, hl_error_record_json(r, &p->errors[i]));
	{
		json_t *checks = json_array();

		for (size_t i = 0; i < p->nchecks; i++)
			json_array_append_new(checks, hl_check_json(r, &p->checks[i],
								    i ? &p->checks[i - 1] : NULL));
		json_object_set_new(o, "checks", checks);
	}
	json_object_set_new(o, "leaks", leaks);
	json_object_set_new(o, "errors", errors);
	json_object_set_new(o, "file_descriptors", fds_json(r, p));
	json_object_set_new(o, "timeline", timeline_json(p));
	return o;
}

static json_t *labels_json(const struct hl_report *r)
{
	json_t *o = json_object();

	for (size_t i = 0; i < r->nlabels; i++)
		json_object_set_new(o, r->label_keys[i], hl_json_text(r->label_values[i]));
	return o;
}

/* The document is written piece by piece, so a run is never held whole as
 * JSON: the header, each process as it comes, the end. */
int hl_report_json_begin(const struct hl_report *r, FILE *out)
{
	json_t *run = json_object();
	char *text;

	json_object_set_new(run, "id", r->run_id ? json_integer(r->run_id) : json_null());
	json_object_set_new(run, "mode", json_string(r->mode));
	json_object_set_new(run, "argv", argv_json(r->argv, r->argc));
	json_object_set_new(run, "argv_bytes", argv_bytes_json(r->argv, r->argc));
	json_object_set_new(run, "started_ns", hl_json_u64(r->started_ns));
	json_object_set_new(run, "ended_ns", hl_json_u64(r->ended_ns));
	json_object_set_new(run, "exit_code",
			    r->exit_code >= 0 ? json_integer(r->exit_code) : json_null());
	json_object_set_new(run, "uuid", hl_json_text(r->uuid));
	json_object_set_new(run, "git_commit", hl_json_text(r->git_commit));
	json_object_set_new(run, "git_branch", hl_json_text(r->git_branch));
	json_object_set_new(run, "labels", labels_json(r));
	json_object_set_new(run, "unreported", hl_json_text(r->unreported));
	json_object_set_new(run, "cwd", hl_json_text(r->cwd));
	json_object_set_new(run, "hostname", hl_json_text(r->hostname));
	text = json_dumps(run, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	json_decref(run);
	if (!text)
		return -ENOMEM;
	fprintf(out, "{\n \"format\": \"%s\",\n \"version\": %d,\n \"run\": %s,\n"
		" \"processes\": [", HL_REPORT_FORMAT, HL_REPORT_VERSION, text);
	free(text);
	return ferror(out) ? -EIO : 0;
}

int hl_report_json_process(struct hl_report *r, const struct hl_report_process *p, bool first,
			   FILE *out)
{
	json_t *o = process_json(r, p);
	/* Into memory, then written with its stacks (write_spliced):
	 * json_dumpf writes each token with an fwrite of its own, which was a
	 * third of a 200-process daemon run's JSON report. */
	char *text = json_dumps(o, JSON_FLAGS);

	json_decref(o);
	if (!text)
		return -ENOMEM;
	fputs(first ? "\n" : ",\n", out);
	write_spliced(r->json_stacks, text, out);
	free(text);
	return ferror(out) ? -EIO : 0;
}

int hl_report_json_end(FILE *out)
{
	fputs("\n ]\n}\n", out);
	if (fflush(out) != 0 || ferror(out))
		return -EIO;
	return 0;
}

int hl_report_write_json(struct hl_report *r, FILE *out)
{
	int err = hl_report_json_begin(r, out);

	for (size_t i = 0; i < r->nprocs && !err; i++)
		err = hl_report_json_process(r, &r->procs[i], i == 0, out);
	return err ? err : hl_report_json_end(out);
}
