/*
 * reporter/formats/runs_json.c: stored runs as JSON (runs_json.h). Keys are
 * written in the order the API has always listed them, so an answer is the
 * same bytes whichever version of the reporter wrote it.
 */
#include "runs_json.h"

#include "json_values.h"

json_t *hl_class_totals_json(const struct hl_class_totals *t)
{
	unsigned order[HL_LEAK_CLASS_COUNT];
	json_t *o = json_object();

	hl_leak_classes_by_word(order);
	for (unsigned i = 0; i < HL_LEAK_CLASS_COUNT; i++)
		if (t->records[order[i]])
			json_object_set_new(o, hl_leak_class_name(order[i]),
					    hl_json_u64(t->bytes[order[i]]));
	return o;
}

static json_t *labels_json(const struct hl_run_row *r)
{
	json_t *o = json_object();

	for (size_t i = 0; i < r->nlabels; i++)
		json_object_set_new(o, r->labels[i].key, hl_json_text(r->labels[i].value));
	return o;
}

/* id, mode, program, argv: the start of every run object. */
static json_t *run_head(const struct hl_run_row *r)
{
	json_t *o = json_object();

	json_object_set_new(o, "id", json_integer(r->id));
	json_object_set_new(o, "mode", hl_json_text(r->mode));
	json_object_set_new(o, "program", hl_json_text(r->program));
	json_object_set_new(o, "argv", hl_json_text(r->argv));
	return o;
}

static void run_times(json_t *o, const struct hl_run_row *r)
{
	json_object_set_new(o, "started_ns", json_integer(r->started_ns));
	json_object_set_new(o, "ended_ns", hl_json_maybe(r->ended_ns));
	json_object_set_new(o, "exit_code", hl_json_maybe(r->exit_code));
	json_object_set_new(o, "labels", labels_json(r));
}

static json_t *list_row_json(const struct hl_run_row *r)
{
	json_t *o = run_head(r);

	json_object_set_new(o, "git_commit", hl_json_text(r->git_commit));
	json_object_set_new(o, "hostname", hl_json_text(r->hostname));
	run_times(o, r);
	json_object_set_new(o, "processes", hl_json_u64(r->processes));
	json_object_set_new(o, "leaked", hl_class_totals_json(&r->leaked));
	json_object_set_new(o, "errors", hl_json_u64(r->errors));
	json_object_set_new(o, "peak_bytes", hl_json_u64(r->peak_bytes));
	return o;
}

json_t *hl_run_list_json(const struct hl_run_list *l)
{
	json_t *rows = json_array();

	for (size_t i = 0; i < l->n; i++)
		json_array_append_new(rows, list_row_json(&l->rows[i]));
	return json_pack("{sIso}", "total", (json_int_t)l->total, "rows", rows);
}

json_t *hl_run_json(const struct hl_run_row *r)
{
	json_t *o = run_head(r);

	json_object_set_new(o, "cwd", hl_json_text(r->cwd));
	json_object_set_new(o, "hostname", hl_json_text(r->hostname));
	json_object_set_new(o, "git_commit", hl_json_text(r->git_commit));
	run_times(o, r);
	return o;
}

json_t *hl_history_runs_json(const struct hl_run_list *l)
{
	json_t *rows = json_array();

	for (size_t i = 0; i < l->n; i++) {
		const struct hl_run_row *r = &l->rows[i];
		json_t *o = json_object();

		json_object_set_new(o, "id", json_integer(r->id));
		json_object_set_new(o, "started_ns", json_integer(r->started_ns));
		json_object_set_new(o, "git_commit", hl_json_text(r->git_commit));
		json_object_set_new(o, "exit_code", hl_json_maybe(r->exit_code));
		json_object_set_new(o, "leaked", hl_class_totals_json(&r->leaked));
		json_array_append_new(rows, o);
	}
	return rows;
}
