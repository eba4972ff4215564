/*
 * reporter/formats/report_sarif.c: the report as SARIF 2.1.0 (OASIS), the
 * format code-scanning services take. One result per leak site and class
 * (the leaks of every process with the same fingerprint and class added
 * up; counts and class in its message are that result's own), the
 * fingerprint in partialFingerprints so a service tracks the site across
 * runs. The primary location is the site's first frame in the program's
 * own code (model/fingerprint.h), never the allocator or libc; the whole
 * stack follows as relatedLocations, a codeFlow (outermost call first, as
 * GitHub code scanning shows a path) and a SARIF stack. Files under the
 * source root are relative URIs with uriBaseId SRCROOT (declared in
 * originalUriBaseIds), others absolute file: URIs. A suppressed site
 * carries a SARIF suppression with the suppression's name. A result is an
 * error exactly when the gate counts it (--errors-for-leak-kinds, gate.h's
 * one rule), so code scanning fails where the gate fails. Heap errors are
 * results of their own. A process heapledger could not see to its end is
 * an error-level toolExecutionNotification, with why.
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fingerprint.h"
#include "gate.h"
#include "report.h"
#include "report_formats.h"

#define SARIF_SCHEMA "https://json.schemastore.org/sarif-2.1.0.json"
#define SITE_KEY "heapledgerLeakSite/v1"
#define SRCROOT "SRCROOT"

/* s percent-encoded as a URI path (RFC 3986: unreserved characters and '/'
 * stay) after prefix, in a malloc'd string. */
static char *uri_path(const char *prefix, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = hl_xmalloc(strlen(prefix) + 3 * strlen(s) + 1), *o = out;

	o = stpcpy(o, prefix);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~/", c)) {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = 0;
	return out;
}

/* Whether path is root or under it. */
static bool under_root(const char *path, const char *root)
{
	size_t n = root ? strlen(root) : 0;

	while (n > 1 && root[n - 1] == '/')
		n--;
	return n && !strncmp(path, root, n) && (path[n] == '/' || !path[n]);
}

/* A relative file name as DWARF gives it (relative to the compiler's
 * directory, typically a build directory inside the source tree:
 * "../src/a.c") without its leading "./" and "../" steps, as the source
 * root sees it. */
static const char *relative_to_root(const char *path)
{
	for (;;) {
		if (!strncmp(path, "./", 2))
			path += 2;
		else if (!strncmp(path, "../", 3))
			path += 3;
		else
			return path;
	}
}

/* {"uri", "uriBaseId"?} of a file: relative to root when it is under it
 * or is itself relative, else an absolute file: URI. */
static json_t *artifact_json(const char *path, const char *root)
{
	char *uri;
	json_t *a;

	if (under_root(path, root)) {
		size_t n = strlen(root);

		while (n > 1 && root[n - 1] == '/')
			n--;
		uri = uri_path("", path[n] ? path + n + 1 : "");
	} else {
		uri = uri_path(path[0] == '/' ? "file://" : "",
			       path[0] == '/' ? path : relative_to_root(path));
	}
	a = json_pack("{s:s}", "uri", uri);
	if (path[0] != '/' || under_root(path, root))
		json_object_set_new(a, "uriBaseId", json_string(SRCROOT));
	free(uri);
	return a;
}

static json_t *location_json(const struct hl_frame_info *f, const char *root)
{
	json_t *loc = json_object(), *phys = json_object(), *logical = json_array();

	if (f->file) {
		json_object_set_new(phys, "artifactLocation", artifact_json(f->file, root));
		if (f->line)
			json_object_set_new(phys, "region", json_pack("{s:i}", "startLine", f->line));
	} else if (f->module) {
		json_object_set_new(phys, "artifactLocation", artifact_json(f->module, root));
		json_object_set_new(phys, "region",
				    json_pack("{s:I}", "byteOffset", (json_int_t)f->offset));
	}
	if (json_object_size(phys))
		json_object_set_new(loc, "physicalLocation", phys);
	else
		json_decref(phys);
	if (f->function) {
		json_array_append_new(logical, json_pack("{s:s,s:s}", "fullyQualifiedName",
							 f->function, "kind", "function"));
		json_object_set_new(loc, "message", json_pack("{s:s}", "text", f->function));
	}
	json_object_set_new(loc, "logicalLocations", logical);
	return loc;
}

/* The frame a developer fixes: the first under the source root, else the
 * first of the program's own (not the allocator's, libc's or ld.so's). */
static size_t primary_frame(const struct hl_report_stack *s, const char *root)
{
	for (size_t i = 0; root && i < s->nframes; i++)
		if (s->frames[i].file &&
		    (s->frames[i].file[0] != '/' || under_root(s->frames[i].file, root)))
			return i;
	return hl_fingerprint_first_frame(s->frames, s->nframes);
}

static void add_stack(json_t *result, const struct hl_report_stack *s, const char *root)
{
	json_t *frames = json_array(), *related = json_array(), *flow = json_array();
	size_t primary = primary_frame(s, root);

	for (size_t i = 0; i < s->nframes; i++) {
		json_t *loc = location_json(&s->frames[i], root);

		json_array_append_new(frames, json_pack("{s:O}", "location", loc));
		json_object_set_new(loc, "id", json_integer((json_int_t)i));
		json_array_append(related, loc);
		/* a code flow runs from the outermost call in */
		json_array_insert_new(flow, 0, json_pack("{s:o,s:i}", "location",
							 json_deep_copy(loc), "nestingLevel", 0));
		json_decref(loc);
	}
	if (s->nframes) {
		json_t *top = json_deep_copy(json_array_get(related, primary));

		json_object_del(top, "id");
		json_object_set_new(result, "locations", json_pack("[o]", top));
		json_object_set_new(result, "relatedLocations", related);
		json_object_set_new(result, "codeFlows", json_pack("[{s:[{s:o}]}]", "threadFlows",
								   "locations", flow));
		json_object_set_new(result, "stacks",
				    json_pack("[{s:{s:s},s:o}]", "message", "text",
					      "allocation stack", "frames", frames));
	} else {
		json_decref(related);
		json_decref(flow);
		json_decref(frames);
		json_object_set_new(result, "locations", json_array());
	}
}

/* The gate's rule (gate.h): an error exactly when the gate counts it; a
 * suppressed record keeps its class's level (its suppression hides it). */
static const char *leak_level(const struct hl_report_leak *l, unsigned gate_kinds)
{
	if (l->suppressed)
		return hl_leak_class_info(l->leak_class)->sarif_level;
	return hl_gate_sarif_level(gate_kinds, l->leak_class);
}

/* The function a site is named after: its primary frame's. */
static const char *site_function(const struct hl_report_leak *l, const char *root)
{
	size_t i = primary_frame(&l->stack, root);

	for (; i < l->stack.nframes; i++)
		if (l->stack.frames[i].function)
			return l->stack.frames[i].function;
	return "an unknown function";
}

/* The result of l's site and class, found or added: records of one
 * fingerprint, class and suppression add up into one result. */
static json_t *site_result(json_t *results, json_t *by_site, const struct hl_report_leak *l,
			   const char *root, const struct hl_baseline *baseline, unsigned gate_kinds)
{
	char key[160], rule[64];
	json_t *r;

	snprintf(key, sizeof(key), "%s/%u/%d", l->fingerprint ? l->fingerprint : "",
		 l->leak_class, l->suppressed);
	r = l->fingerprint ? json_object_get(by_site, key) : NULL;
	if (r)
		return r;
	r = json_object();
	snprintf(rule, sizeof(rule), "leak/%s", hl_leak_class_name(l->leak_class));
	json_object_set_new(r, "ruleId", json_string(rule));
	json_object_set_new(r, "level", json_string(leak_level(l, gate_kinds)));
	json_object_set_new(r, "kind", json_string("fail"));
	json_object_set_new(r, "bytes", json_integer(0)); /* removed below */
	json_object_set_new(r, "blocks", json_integer(0));
	json_object_set_new(r, "processes", json_integer(0));
	json_object_set_new(r, "heapledgerKind", json_integer(l->leak_class));
	json_object_set_new(r, "function", json_string(site_function(l, root)));
	add_stack(r, &l->stack, root);
	if (l->fingerprint) {
		json_object_set_new(r, "partialFingerprints",
				    json_pack("{s:s}", SITE_KEY, l->fingerprint));
		json_object_set(by_site, key, r);
	}
	/* SARIF's own word for "the baseline has this site": a service that
	 * shows only new results shows what the gate fails on. */
	if (baseline)
		json_object_set_new(r, "baselineState",
				    json_string(l->fingerprint && hl_baseline_has(baseline, l->fingerprint)
						? "unchanged" : "new"));
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

	char amount[HL_BYTES_IN_BLOCKS_LEN];

	snprintf(text, sizeof(text), "%s %s %s in %lld %s, allocated in %s",
		 hl_fmt_bytes_in_blocks(amount, (uint64_t)bytes, (uint64_t)blocks),
		 hl_plural((uint64_t)blocks, "is", "are"), hl_leak_class_info(leak_class)->phrase,
		 (long long)procs, hl_plural((uint64_t)procs, "process", "processes"), function);
	json_object_set_new(r, "message", json_pack("{s:s}", "text", text));
	json_object_set_new(r, "properties", json_pack("{s:I,s:I,s:I}", "bytes", bytes, "blocks",
						       blocks, "processes", procs));
	json_object_del(r, "bytes");
	json_object_del(r, "blocks");
	json_object_del(r, "processes");
}

static json_t *error_result(const struct hl_report_process *p, const struct hl_report_error *e,
			    const char *root)
{
	json_t *r = json_object();
	char rule[64], text[512];

	snprintf(rule, sizeof(rule), "heap-error/%s", hl_error_kind_name(e->kind));
	snprintf(text, sizeof(text), "%s: address 0x%llx in process %u",
		 hl_error_heading(e->kind, e->call && !strcmp(e->call, "malloc_usable_size")
						   ? HL_CALL_USABLE_SIZE : HL_CALL_FREE),
		 (unsigned long long)e->address, p->pid);
	json_object_set_new(r, "ruleId", json_string(rule));
	json_object_set_new(r, "level", json_string("error"));
	json_object_set_new(r, "kind", json_string("fail"));
	json_object_set_new(r, "message", json_pack("{s:s}", "text", text));
	add_stack(r, &e->stack, root);
	return r;
}

/* A rule per leak class (but suppressed, which is a mark, not a class) and
 * per heap error kind, worded from the one table (heapledger/classes.h). */
static json_t *rules_json(void)
{
	json_t *a = json_array();
	char id[64], text[256];

	for (unsigned c = 0; c < HL_LEAK_CLASS_COUNT; c++) {
		const struct hl_leak_class_info *i = hl_leak_class_info(c);

		if (c == HL_CLASS_SUPPRESSED)
			continue;
		snprintf(id, sizeof(id), "leak/%s", i->word);
		snprintf(text, sizeof(text), "Memory %s at exit%s", i->phrase,
			 c == HL_CLASS_UNKNOWN ? " (no leak scan classified it)" : "");
		json_array_append_new(a, json_pack("{s:s,s:{s:s},s:{s:s}}", "id", id,
						   "shortDescription", "text", text,
						   "defaultConfiguration", "level", i->sarif_level));
	}
	for (unsigned k = 1; k < HL_ERROR_KIND_COUNT; k++) {
		snprintf(id, sizeof(id), "heap-error/%s", hl_error_kind_name(k));
		json_array_append_new(a, json_pack("{s:s,s:{s:s},s:{s:s}}", "id", id,
						   "shortDescription", "text",
						   hl_error_heading(k, HL_CALL_FREE),
						   "defaultConfiguration", "level", "error"));
	}
	return a;
}

/* The processes heapledger could not see to their end (the stream ended
 * without the exit record; why, when the hook went on standalone), as
 * error-level toolExecutionNotifications of one invocation; NULL if none. */
static json_t *invocations_json(const struct hl_report *r)
{
	json_t *notes = json_array();
	char why[600], text[700];

	for (size_t i = 0; i < r->nprocs; i++) {
		const struct hl_report_process *p = &r->procs[i];
		const char *name = hl_report_standalone_name(p->standalone);

		if (!hl_report_stream_cut(p, why, sizeof(why)))
			continue;
		snprintf(text, sizeof(text), "process %u (%s): %s", p->pid,
			 p->argc ? p->argv[0] : p->exe ? p->exe : "?", why);
		json_array_append_new(notes, json_pack("{s:s,s:{s:s},s:{s:i,s:s?}}", "level",
						       "error", "message", "text", text,
						       "properties", "pid", (int)p->pid,
						       "standalone", name));
	}
	if (!json_array_size(notes)) {
		json_decref(notes);
		return NULL;
	}
	return json_pack("[{s:b,s:o}]", "executionSuccessful", 1, "toolExecutionNotifications",
			 notes);
}

int hl_report_write_sarif(const struct hl_report *r, const char *root,
			  const struct hl_baseline *baseline, FILE *out)
{
	json_t *results = json_array(), *by_site = json_object(), *run, *doc, *driver, *invocations;
	int err;

	for (size_t i = 0; i < r->nprocs; i++) {
		const struct hl_report_process *p = &r->procs[i];

		for (size_t j = 0; j < p->nerrors; j++)
			json_array_append_new(results, error_result(p, &p->errors[j], root));
		for (size_t j = 0; j < p->nleaks; j++) {
			const struct hl_report_leak *l = &p->leaks[j];
			json_t *res = site_result(results, by_site, l, root, baseline, r->gate_kinds);

			add_count(res, "bytes", l->bytes);
			add_count(res, "blocks", l->blocks);
			add_count(res, "processes", 1);
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
	driver = json_pack("{s:s,s:s,s:s,s:s,s:o}", "name", "heapledger", "version", HL_VERSION,
			   "semanticVersion", HL_VERSION, "informationUri", HL_INFORMATION_URI,
			   "rules", rules_json());
	run = json_pack("{s:{s:o},s:o}", "tool", "driver", driver, "results", results);
	if (root) {
		char *uri = uri_path("file://", root);
		size_t n = strlen(uri);

		/* a base URI ends with '/', or the last segment is dropped */
		json_object_set_new(run, "originalUriBaseIds",
				    json_pack("{s:{s:s+}}", SRCROOT, "uri", uri,
					      n && uri[n - 1] == '/' ? "" : "/"));
		free(uri);
	}
	if ((invocations = invocations_json(r)))
		json_object_set_new(run, "invocations", invocations);
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
