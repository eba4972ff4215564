/*
 * reporter/formats/report_speedscope.c: `heapledger report --format speedscope`: a
 * stored run as speedscope's file format
 * (https://www.speedscope.app/file-format-schema.json), so allocation and
 * leak profiles open in a viewer people already use.
 *
 * Each process gives two "sampled" profiles in bytes: one sample per
 * allocation stack weighted by the bytes it allocated, and one per stack
 * that leaked weighted by the bytes it leaked. Samples list frames from the
 * outermost (speedscope's order); frames are shared by name, file and line.
 * It renders what the query layer read (store/query_profile.h); no SQL.
 */
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "report_speedscope.h"
#include "util.h"

struct frames {
	json_t *list;   /* shared.frames */
	json_t *index;  /* "name\\x1ffile\\x1fline" -> position in list */
};

static json_int_t frame_index(struct frames *fr, const struct hl_frame_info *f)
{
	char name[512], key[1200];
	json_t *hit, *frame;

	if (f->function)
		snprintf(name, sizeof(name), "%s", f->function);
	else
		snprintf(name, sizeof(name), "%s+0x%llx", f->module ? f->module : "?",
			 (unsigned long long)f->offset);
	snprintf(key, sizeof(key), "%s\x1f%s\x1f%lld", name, f->file ? f->file : "",
		 (long long)f->line);
	if ((hit = json_object_get(fr->index, key)))
		return json_integer_value(hit);
	frame = json_pack("{ss}", "name", name);
	if (f->file) {
		json_object_set_new(frame, "file", json_string(f->file));
		json_object_set_new(frame, "line", json_integer(f->line));
	}
	json_array_append_new(fr->list, frame);
	json_object_set_new(fr->index, key, json_integer((json_int_t)json_array_size(fr->list) - 1));
	return (json_int_t)json_array_size(fr->list) - 1;
}

static json_t *profile(const char *name, json_int_t total, json_t *samples, json_t *weights)
{
	return json_pack("{sssssssIsIsoso}", "type", "sampled", "name", name, "unit", "bytes",
			 "startValue", (json_int_t)0, "endValue", total,
			 "samples", samples, "weights", weights);
}

/* The two profiles of one process, appended to profiles. */
static void add_process(const struct hl_process_row *proc, const struct hl_run_rows *rows,
			struct frames *fr, json_t *profiles)
{
	json_t *samples[2] = { json_array(), json_array() };
	json_t *weights[2] = { json_array(), json_array() };
	json_int_t total[2] = { 0, 0 };
	char name[2][256];

	for (size_t i = 0; i < rows->nprofile; i++) {
		const struct hl_profile_stack *p = &rows->profile[i];
		json_int_t w[2] = { (json_int_t)p->bytes, (json_int_t)p->leaked_bytes };
		json_t *stack = json_array();

		for (size_t n = p->stack.nframes; n > 0; n--)
			json_array_append_new(stack, json_integer(frame_index(fr, &p->stack.frames[n - 1])));
		for (int k = 0; k < 2; k++) {
			if (w[k] <= 0)
				continue;
			json_array_append(samples[k], stack);
			json_array_append_new(weights[k], json_integer(w[k]));
			total[k] += w[k];
		}
		json_decref(stack);
	}
	for (int k = 0; k < 2; k++)
		snprintf(name[k], sizeof(name[k]), "%s, pid %lld (%s)",
			 k ? "bytes leaked" : "bytes allocated", (long long)proc->pid, proc->exe);
	for (int k = 0; k < 2; k++)
		json_array_append_new(profiles, profile(name[k], total[k], samples[k], weights[k]));
}

int hl_report_write_speedscope(const struct hl_run_profiles *run, FILE *out)
{
	struct frames fr = { json_array(), json_object() };
	const struct hl_run_row *r = run->page.run.n ? &run->page.run.rows[0] : NULL;
	json_t *profiles = json_array(), *doc;
	char title[256];
	int err = 0;

	for (size_t i = 0; i < run->page.nprocs; i++)
		add_process(&run->page.procs[i], &run->procs[i], &fr, profiles);
	snprintf(title, sizeof(title), "heapledger run %lld: %s", r ? (long long)r->id : 0LL,
		 r && r->program ? r->program : "?");
	doc = json_pack("{sss{so}sosssIss}",
			"$schema", "https://www.speedscope.app/file-format-schema.json",
			"shared", "frames", fr.list, "profiles", profiles, "name", title,
			"activeProfileIndex", (json_int_t)0, "exporter", "heapledger " HL_VERSION);
	json_decref(fr.index);
	if (json_dumpf(doc, out, JSON_COMPACT))
		err = -EIO;
	if (!err)
		fputc('\n', out);
	json_decref(doc);
	return err;
}
