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
 */
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "report_speedscope.h"
#include "store_query.h"
#include "util.h"

struct frames {
	json_t *list;   /* shared.frames */
	json_t *index;  /* "name\\x1ffile\\x1fline" -> position in list */
};

static json_int_t frame_index(struct frames *fr, const json_t *f)
{
	const char *fn = json_string_value(json_object_get(f, "function"));
	const char *file = json_string_value(json_object_get(f, "file"));
	const char *module = json_string_value(json_object_get(f, "module"));
	json_int_t line = json_integer_value(json_object_get(f, "line"));
	char name[512], key[1200];
	json_t *hit, *frame;

	if (fn)
		snprintf(name, sizeof(name), "%s", fn);
	else
		snprintf(name, sizeof(name), "%s+0x%llx", module ? module : "?",
			 (unsigned long long)json_integer_value(json_object_get(f, "offset")));
	snprintf(key, sizeof(key), "%s\x1f%s\x1f%lld", name, file ? file : "", (long long)line);
	if ((hit = json_object_get(fr->index, key)))
		return json_integer_value(hit);
	frame = json_pack("{ss}", "name", name);
	if (file) {
		json_object_set_new(frame, "file", json_string(file));
		json_object_set_new(frame, "line", json_integer(line));
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
static int add_process(struct hl_store *s, const json_t *proc, struct frames *fr,
		       json_t *profiles)
{
	json_t *rows, *row, *samples[2] = { json_array(), json_array() };
	json_t *weights[2] = { json_array(), json_array() };
	json_int_t total[2] = { 0, 0 };
	char name[2][256];
	size_t i;
	int err = hl_query_profile(s, json_integer_value(json_object_get(proc, "id")), &rows);

	if (err) {
		for (int k = 0; k < 2; k++)
			json_decref(samples[k]), json_decref(weights[k]);
		return err;
	}
	json_array_foreach(rows, i, row) {
		json_t *frames = json_object_get(row, "frames"), *stack = json_array();
		json_int_t w[2] = { json_integer_value(json_object_get(row, "bytes")),
				    json_integer_value(json_object_get(row, "leaked_bytes")) };

		for (size_t n = json_array_size(frames); n > 0; n--)
			json_array_append_new(stack, json_integer(frame_index(fr, json_array_get(frames, n - 1))));
		for (int k = 0; k < 2; k++) {
			if (w[k] <= 0)
				continue;
			json_array_append(samples[k], stack);
			json_array_append_new(weights[k], json_integer(w[k]));
			total[k] += w[k];
		}
		json_decref(stack);
	}
	json_decref(rows);
	for (int k = 0; k < 2; k++)
		snprintf(name[k], sizeof(name[k]), "%s, pid %lld (%s)",
			 k ? "bytes leaked" : "bytes allocated",
			 (long long)json_integer_value(json_object_get(proc, "pid")),
			 json_string_value(json_object_get(proc, "exe")));
	for (int k = 0; k < 2; k++)
		json_array_append_new(profiles, profile(name[k], total[k], samples[k], weights[k]));
	return 0;
}

int hl_report_write_speedscope(struct hl_store *s, int64_t run_id, FILE *out)
{
	struct frames fr = { json_array(), json_object() };
	json_t *run, *proc, *profiles = json_array(), *doc;
	char title[256];
	size_t i;
	int err = hl_query_run(s, run_id, &run);

	json_array_foreach(err ? NULL : json_object_get(run, "processes"), i, proc)
		if ((err = add_process(s, proc, &fr, profiles)))
			break;
	snprintf(title, sizeof(title), "heapledger run %lld: %s", (long long)run_id,
		 err ? "" : json_string_value(json_object_get(run, "program")) ?
		 json_string_value(json_object_get(run, "program")) : "?");
	doc = json_pack("{sss{so}sosssIss}",
			"$schema", "https://www.speedscope.app/file-format-schema.json",
			"shared", "frames", fr.list, "profiles", profiles, "name", title,
			"activeProfileIndex", (json_int_t)0, "exporter", "heapledger " HL_VERSION);
	json_decref(fr.index);
	if (!err)
		json_decref(run);
	if (!err && json_dumpf(doc, out, JSON_COMPACT))
		err = -EIO;
	if (!err)
		fputc('\n', out);
	json_decref(doc);
	return err;
}
