/*
 * reporter/formats/summary_json.c: a run's summary as JSON (summary_json.h).
 */
#include "summary_json.h"

#include "json_values.h"

static json_t *stack_json(const struct hl_summary_stack *e)
{
	return json_pack("{s:I,s:o,s:o,s:I,s:o,s:I,s:I,s:I,s:I}", "stack_id", (json_int_t)e->stack_id,
			 "function", hl_json_text(e->function), "file", hl_json_text(e->file),
			 "line", (json_int_t)e->line, "module", hl_json_text(e->module),
			 "module_offset", (json_int_t)e->module_offset, "value",
			 (json_int_t)e->value, "count", (json_int_t)e->count, "processes",
			 (json_int_t)e->processes);
}

static json_t *list_json(const struct hl_summary_list *l)
{
	json_t *a = json_array();

	for (size_t i = 0; i < l->n; i++)
		json_array_append_new(a, stack_json(&l->v[i]));
	return a;
}

json_t *hl_gate_verdict_json(const struct hl_gate *g, const struct hl_gate_options *o)
{
	return json_pack("{s:b,s:o}", "failed", hl_gate_failed(g, o), "incomplete",
			 hl_json_text(hl_gate_incomplete(g)));
}

static json_t *verdict_json(const struct hl_gate *g, const struct hl_gate_options *o)
{
	json_t *v = hl_gate_verdict_json(g, o), *kinds = json_array(), *failing = json_array();

	for (unsigned c = 0; c < HL_LEAK_CLASS_COUNT; c++)
		if (o->kinds & HL_CLASS_BIT(c))
			json_array_append_new(kinds, json_string(hl_leak_class_name(c)));
	for (size_t i = 0; i < g->nfailing; i++) {
		const struct hl_gate_process *p = &g->failing[i];

		json_array_append_new(failing, json_pack("{s:I,s:o,s:I,s:I,s:I,s:o}", "pid",
			(json_int_t)p->pid, "command", hl_json_text(p->command), "bytes", (json_int_t)p->bytes,
			"blocks", (json_int_t)p->blocks, "errors", (json_int_t)p->errors,
			"unseen", hl_json_text(p->unseen)));
	}
	json_object_set_new(v, "kinds", kinds);
	json_object_set_new(v, "failing", failing);
	json_object_set_new(v, "bytes", json_integer((json_int_t)g->bytes));
	json_object_set_new(v, "blocks", json_integer((json_int_t)g->blocks));
	json_object_set_new(v, "records", json_integer((json_int_t)g->records));
	json_object_set_new(v, "errors", json_integer((json_int_t)g->errors));
	json_object_set_new(v, "processes", json_integer((json_int_t)g->processes));
	json_object_set_new(v, "suppressed_bytes", json_integer((json_int_t)g->suppressed_bytes));
	json_object_set_new(v, "suppressed_blocks", json_integer((json_int_t)g->suppressed_blocks));
	json_object_set_new(v, "unscanned_bytes", json_integer((json_int_t)g->unscanned_bytes));
	json_object_set_new(v, "unscanned_blocks", json_integer((json_int_t)g->unscanned_blocks));
	return v;
}

static json_t *sites_json(const struct hl_run_summary *sum)
{
	json_t *a = json_array();

	for (size_t i = 0; i < sum->ntop_sites; i++) {
		const struct hl_summary_site *t = &sum->top_sites[i];

		json_array_append_new(a, json_pack("{s:s,s:o,s:s,s:I,s:I,s:o}", "fingerprint",
			t->site->fingerprint, "function", hl_json_text(t->site->function),
			"leak_class", hl_leak_class_name(t->site->leak_class), "bytes",
			(json_int_t)t->site->bytes, "blocks", (json_int_t)t->site->blocks,
			"where", t->where.stack_id ? stack_json(&t->where) : json_null()));
	}
	return a;
}

json_t *hl_run_summary_json(const struct hl_run_summary *sum, const struct hl_gate_options *o)
{
	json_t *leaked = json_object(), *errors = json_object();

	for (unsigned c = 0; c < HL_LEAK_CLASS_COUNT; c++)
		if (sum->class_records[c])
			json_object_set_new(leaked, hl_leak_class_name(c), json_pack("{s:I,s:I,s:I}",
				"bytes", (json_int_t)sum->class_bytes[c], "blocks",
				(json_int_t)sum->class_blocks[c], "records",
				(json_int_t)sum->class_records[c]));
	for (unsigned k = 0; k < HL_ERROR_KIND_COUNT; k++)
		if (sum->error_counts[k])
			json_object_set_new(errors, hl_error_kind_name(k),
					    json_integer((json_int_t)sum->error_counts[k]));
	return json_pack("{s:I,s:o,s:o,s:o,s:{s:I,s:I,s:I,s:o,s:b},s:o,s:o,s:o,s:o}", "run",
			 (json_int_t)sum->run_id, "verdict", verdict_json(&sum->gate, o), "leaked",
			 leaked, "top_sites", sites_json(sum), "peak", "process_id",
			 (json_int_t)sum->peak_process_id, "pid", (json_int_t)sum->peak_pid, "bytes",
			 (json_int_t)sum->peak_bytes, "stacks", list_json(&sum->peak_stacks),
			 "at_peak", sum->peak_at_moment,
			 "most_allocations", list_json(&sum->most_allocs), "most_bytes",
			 list_json(&sum->most_bytes), "most_temporaries",
			 list_json(&sum->most_temporaries), "errors", errors);
}
