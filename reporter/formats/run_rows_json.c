/*
 * reporter/formats/run_rows_json.c: a stored run's rows as JSON
 * (run_rows_json.h). Flags the database holds as 0/1 (scanned, by_signal...)
 * stay 0/1, as the API has always written them.
 */
#include "run_rows_json.h"

#include "frame_json.h"
#include "json_values.h"
#include "record_json.h"
#include "runs_json.h"

static void set(json_t *o, const char *key, json_t *v)
{
	json_object_set_new(o, key, v);
}

static json_t *flag(bool b)
{
	return json_integer(b);
}

/* fatal_name ("SIGSEGV") and fatal_fault (valgrind's words for a fault,
 * or null) beside a process's fatal_signal, as the text report words them. */
static void fatal_names(json_t *o, const struct hl_process_row *p)
{
	const char *fault = hl_wire_fault_words((uint32_t)p->fatal_signal.value,
						(int32_t)p->fatal_code.value);
	char name[24];

	set(o, "fatal_name", json_string(hl_report_signal_name((int)p->fatal_signal.value, name,
								sizeof(name))));
	set(o, "fatal_fault", hl_json_text(fault));
}

static json_t *process_json(const struct hl_process_row *p)
{
	json_t *o = json_object();

	set(o, "id", json_integer(p->id));
	set(o, "serial", json_integer(p->serial));
	set(o, "pid", json_integer(p->pid));
	set(o, "ppid", json_integer(p->ppid));
	set(o, "parent_id", hl_json_maybe(p->parent_id));
	set(o, "origin", hl_json_text(p->origin));
	set(o, "exe", hl_json_text(p->exe));
	set(o, "argv", hl_json_text(p->argv));
	set(o, "started_ns", hl_json_maybe(p->started_ns));
	set(o, "ended_ns", hl_json_maybe(p->ended_ns));
	set(o, "exit_how", hl_json_text(p->exit_how));
	set(o, "exit_status", hl_json_maybe(p->exit_status));
	set(o, "exit_signal", hl_json_maybe(p->exit_signal));
	set(o, "scanned", flag(p->scanned));
	set(o, "no_exit_record", flag(p->no_exit_record));
	set(o, "recovered_events", hl_json_maybe(p->recovered_events));
	set(o, "fatal_signal", hl_json_maybe(p->fatal_signal));
	set(o, "fatal_code", hl_json_maybe(p->fatal_code));
	set(o, "fatal_address", hl_json_maybe(p->fatal_address));
	set(o, "fatal_stack_id", hl_json_maybe(p->fatal_stack_id));
	for (unsigned i = 0; i < HL_SUMMARY_COUNT; i++)
		set(o, hl_summary_column_name(i), hl_json_maybe(p->summary[i]));
	set(o, "leak_records", hl_json_u64(p->leak_records));
	set(o, "leaked_bytes", hl_json_u64(p->leaked_bytes));
	set(o, "leaked_records", hl_json_u64(p->leaked_records));
	set(o, "samples", hl_json_u64(p->samples));
	if (p->fatal_signal.value)
		fatal_names(o, p);
	return o;
}

json_t *hl_run_page_json(const struct hl_run_page *p)
{
	json_t *o = hl_run_json(&p->run.rows[0]), *procs = json_array();

	for (size_t i = 0; i < p->nprocs; i++)
		json_array_append_new(procs, process_json(&p->procs[i]));
	set(o, "processes", procs);
	return o;
}

json_t *hl_timeline_json(const struct hl_run_rows *r)
{
	json_t *times = json_array(), *bytes = json_array(), *blocks = json_array();

	for (size_t i = 0; i < r->nsamples; i++) {
		json_array_append_new(times, hl_json_u64(r->samples[i].time_ns));
		json_array_append_new(bytes, hl_json_u64(r->samples[i].in_use_bytes));
		json_array_append_new(blocks, hl_json_u64(r->samples[i].in_use_blocks));
	}
	return json_pack("{sososo}", "time_ns", times, "bytes", bytes, "blocks", blocks);
}

json_t *hl_stack_json(const struct hl_stack_row *s)
{
	return json_pack("{sIsbso}", "id", (json_int_t)s->id, "truncated", s->stack.truncated,
			 "frames", hl_frames_json(&s->stack));
}

/* The record as `report --format json` writes it (record_json.h), with
 * where it is in the run and the frame the table names it by. */
static json_t *leak_json(const struct hl_leak_row *l)
{
	struct hl_report_leak record;
	json_t *o = json_object(), *written;

	set(o, "id", json_integer(l->id));
	set(o, "process_id", json_integer(l->process_id));
	set(o, "pid", json_integer(l->pid));
	set(o, "rank", json_integer(l->rank));
	set(o, "stack_id", hl_json_maybe(l->stack_id));
	hl_leak_row_record(l, &record);
	written = hl_leak_record_json(NULL, &record);
	json_object_update(o, written);
	json_decref(written);
	set(o, "function", hl_json_text(l->function));
	set(o, "file", hl_json_text(l->file));
	set(o, "line", hl_json_maybe(l->line));
	set(o, "module", hl_json_text(l->module));
	set(o, "module_offset", hl_json_maybe(l->module_offset));
	if (l->processes) {
		set(o, "records", json_integer((json_int_t)l->records));
		set(o, "processes", json_integer((json_int_t)l->processes));
		set(o, "tests", json_integer((json_int_t)l->tests));
	}
	return o;
}

json_t *hl_leak_rows_json(const struct hl_run_rows *r)
{
	json_t *rows = json_array();

	for (size_t i = 0; i < r->nleaks; i++)
		json_array_append_new(rows, leak_json(&r->leaks[i]));
	return json_pack("{sIso}", "total", (json_int_t)r->leaks_total, "rows", rows);
}

json_t *hl_symbol_rows_json(const char *term, int64_t limit, const struct hl_run_rows *r)
{
	json_t *rows = json_array();

	for (size_t i = 0; i < r->nsymbols; i++) {
		const struct hl_symbol_row *y = &r->symbols[i];
		json_t *o = json_object();

		set(o, "function", hl_json_text(y->function));
		set(o, "file", hl_json_text(y->file));
		set(o, "line", hl_json_maybe(y->line));
		set(o, "module", hl_json_text(y->module));
		set(o, "runs", json_integer(y->runs));
		set(o, "last_run", json_integer(y->last_run));
		set(o, "first_run", json_integer(y->first_run));
		json_array_append_new(rows, o);
	}
	return json_pack("{sssIso}", "term", term, "limit", (json_int_t)limit, "rows", rows);
}

static json_t *flame_node_json(const struct hl_flame_node *n, const char *name)
{
	json_t *children = json_array();

	for (size_t i = 0; i < n->nchildren; i++)
		json_array_append_new(children, flame_node_json(&n->children[i],
								n->children[i].name));
	return json_pack("{sssIso}", "name", name, "value", (json_int_t)n->value,
			 "children", children);
}

json_t *hl_flame_json(const struct hl_flame *f)
{
	return flame_node_json(&f->root, f->leaks ? "all leaks" : "all allocations");
}
