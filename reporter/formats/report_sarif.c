/*
 * reporter/formats/report_sarif.c: the report as SARIF 2.1.0 (OASIS), the format
 * code-scanning services take. One result per leak site (the leaks of every
 * process with the same fingerprint added up), its stack's frames as the
 * result's locations (innermost first) and as a stack; the fingerprint in
 * partialFingerprints, so a service tracks the site across runs. A suppressed
 * site carries a SARIF suppression with the suppression's name. Heap errors
 * are results of their own.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "report_formats.h"

#define SARIF_SCHEMA "https://json.schemastore.org/sarif-2.1.0.json"
#define SITE_KEY "heapledgerLeakSite/v1"

static json_t *location_json(const struct hl_frame_info *f)
{
	json_t *loc = json_object(), *phys = json_object(), *logical = json_array();

	if (f->file) {
		json_t *artifact = json_object(), *region = json_object();

		json_object_set_new(artifact, "uri", json_string(f->file));
		json_object_set_new(phys, "artifactLocation", artifact);
		if (f->line) {
			json_object_set_new(region, "startLine", json_integer(f->line));
			json_object_set_new(phys, "region", region);
		} else {
			json_decref(region);
		}
	} else if (f->module) {
		json_t *artifact = json_object(), *region = json_object();

		json_object_set_new(artifact, "uri", json_string(f->module));
		json_object_set_new(region, "byteOffset", json_integer((json_int_t)f->offset));
		json_object_set_new(phys, "artifactLocation", artifact);
		json_object_set_new(phys, "region", region);
	}
	if (json_object_size(phys))
		json_object_set_new(loc, "physicalLocation", phys);
	else
		json_decref(phys);
	if (f->function) {
		json_t *l = json_object();

		json_object_set_new(l, "fullyQualifiedName", json_string(f->function));
		json_object_set_new(l, "kind", json_string("function"));
		json_array_append_new(logical, l);
	}
	json_object_set_new(loc, "logicalLocations", logical);
	return loc;
}

static void add_stack(json_t *result, const struct hl_report_stack *s)
{
	json_t *locations = json_array(), *frames = json_array(), *stack = json_object();
	json_t *stacks = json_array();

	for (size_t i = 0; i < s->nframes; i++) {
		json_t *frame = json_object();

		json_array_append_new(locations, location_json(&s->frames[i]));
		json_object_set_new(frame, "location", location_json(&s->frames[i]));
		json_array_append_new(frames, frame);
	}
	json_object_set_new(stack, "message", json_pack("{s:s}", "text", "allocation stack"));
	json_object_set_new(stack, "frames", frames);
	json_array_append_new(stacks, stack);
	json_object_set_new(result, "locations", locations);
	json_object_set_new(result, "stacks", stacks);
}

static const char *leak_level(unsigned leak_class)
{
	return hl_leak_class_info(leak_class)->sarif_level;
}

static const char *site_function(const struct hl_report_leak *l)
{
	for (size_t i = 0; i < l->stack.nframes; i++)
		if (l->stack.frames[i].function)
			return l->stack.frames[i].function;
	return "an unknown function";
}

/* The result of the leak site of l, found or added (sites by fingerprint). */
static json_t *site_result(json_t *results, json_t *by_site, const struct hl_report_leak *l)
{
	const char *key = l->fingerprint ? l->fingerprint : "";
	json_t *r = l->fingerprint ? json_object_get(by_site, key) : NULL;
	char rule[64];

	if (r)
		return r;
	r = json_object();
	snprintf(rule, sizeof(rule), "leak/%s", hl_leak_class_name(l->leak_class));
	json_object_set_new(r, "ruleId", json_string(rule));
	json_object_set_new(r, "level", json_string(leak_level(l->leak_class)));
	json_object_set_new(r, "kind", json_string("fail"));
	json_object_set_new(r, "bytes", json_integer(0)); /* removed below */
	json_object_set_new(r, "blocks", json_integer(0));
	json_object_set_new(r, "processes", json_integer(0));
	add_stack(r, &l->stack);
	if (l->fingerprint) {
		json_object_set_new(r, "partialFingerprints",
				    json_pack("{s:s}", SITE_KEY, l->fingerprint));
		json_object_set(by_site, key, r);
	}
	if (l->suppressed)
		json_object_set_new(r, "suppressions", json_pack("[{s:s,s:s}]", "kind", "external",
			"justification", l->suppression ? l->suppression : "suppressed"));
	json_array_append_new(results, r);
	return r;
}

static void add_count(json_t *o, const char *key, uint64_t v)
{
	json_object_set_new(o, key, json_integer(json_integer_value(json_object_get(o, key)) +
						  (json_int_t)v));
}

/* Turns the counters into the message and a property bag. */
static void finish_result(json_t *r, unsigned leak_class, const char *function)
{
	char text[512];
	json_int_t bytes = json_integer_value(json_object_get(r, "bytes"));
	json_int_t blocks = json_integer_value(json_object_get(r, "blocks"));
	json_int_t procs = json_integer_value(json_object_get(r, "processes"));

	snprintf(text, sizeof(text), "%lld bytes in %lld blocks are %s in %lld process%s,"
		 " allocated in %s", (long long)bytes, (long long)blocks,
		 hl_leak_class_info(leak_class)->phrase, (long long)procs,
		 procs == 1 ? "" : "es", function);
	json_object_set_new(r, "message", json_pack("{s:s}", "text", text));
	json_object_set_new(r, "properties", json_pack("{s:I,s:I,s:I}", "bytes", bytes, "blocks",
						       blocks, "processes", procs));
	json_object_del(r, "bytes");
	json_object_del(r, "blocks");
	json_object_del(r, "processes");
}

static json_t *error_result(const struct hl_report_process *p, const struct hl_report_error *e)
{
	json_t *r = json_object();
	char rule[64], text[256];

	snprintf(rule, sizeof(rule), "heap-error/%s", hl_error_kind_name(e->kind));
	snprintf(text, sizeof(text), "heap error: %s of 0x%llx in process %u",
		 hl_error_kind_name(e->kind),
		 (unsigned long long)e->address, p->pid);
	json_object_set_new(r, "ruleId", json_string(rule));
	json_object_set_new(r, "level", json_string("error"));
	json_object_set_new(r, "message", json_pack("{s:s}", "text", text));
	add_stack(r, &e->stack);
	return r;
}

static json_t *rules_json(void)
{
	static const char *const rules[][2] = {
		{ "leak/definitely", "Memory definitely lost: no pointer to the block remains" },
		{ "leak/indirectly", "Memory indirectly lost: reachable only from lost blocks" },
		{ "leak/possibly", "Memory possibly lost: only interior pointers to it remain" },
		{ "leak/reachable", "Memory still reachable at exit" },
		{ "leak/unknown", "Memory not freed at exit (no reachability scan ran)" },
	};
	json_t *a = json_array();

	for (size_t i = 0; i < HL_ARRAY_SIZE(rules); i++)
		json_array_append_new(a, json_pack("{s:s,s:{s:s}}", "id", rules[i][0],
						   "shortDescription", "text", rules[i][1]));
	return a;
}

int hl_report_write_sarif(const struct hl_report *r, FILE *out)
{
	json_t *results = json_array(), *by_site = json_object(), *run, *doc;
	int err;

	for (size_t i = 0; i < r->nprocs; i++) {
		const struct hl_report_process *p = &r->procs[i];

		for (size_t j = 0; j < p->nerrors; j++)
			json_array_append_new(results, error_result(p, &p->errors[j]));
		for (size_t j = 0; j < p->nleaks; j++) {
			const struct hl_report_leak *l = &p->leaks[j];
			json_t *res = site_result(results, by_site, l);

			add_count(res, "bytes", l->bytes);
			add_count(res, "blocks", l->blocks);
			add_count(res, "processes", 1);
			if (!json_object_get(res, "message"))
				json_object_set_new(res, "heapledgerKind", json_integer(l->leak_class));
			if (!json_object_get(res, "function"))
				json_object_set_new(res, "function", json_string(site_function(l)));
		}
	}
	for (size_t i = 0; i < json_array_size(results); i++) {
		json_t *res = json_array_get(results, i);
		json_t *kind = json_object_get(res, "heapledgerKind");

		if (!kind)
			continue;
		finish_result(res, (unsigned)json_integer_value(kind),
			      json_string_value(json_object_get(res, "function")));
		json_object_del(res, "heapledgerKind");
		json_object_del(res, "function");
	}
	run = json_pack("{s:{s:{s:s,s:s,s:o}},s:o}", "tool", "driver", "name", "heapledger",
			"version", HL_VERSION, "rules", rules_json(), "results", results);
	if (r->uuid)
		json_object_set_new(run, "automationDetails",
				    json_pack("{s:s}", "guid", r->uuid));
	doc = json_pack("{s:s,s:s,s:[o]}", "$schema", SARIF_SCHEMA, "version", "2.1.0", "runs", run);
	err = json_dumpf(doc, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	fputc('\n', out);
	json_decref(doc);
	json_decref(by_site);
	return err || fflush(out) != 0 || ferror(out) ? -EIO : 0;
}
