/*
 * reporter/formats/diff_json.c: a diff by leak site as JSON (diff_json.h).
 */
#include "diff_json.h"

static json_t *delta_json(const struct hl_site_delta *s)
{
	const struct hl_leak_site *t = s->b ? s->b : s->a;
	json_t *o = json_object();

	json_object_set_new(o, "change", json_string(hl_site_change_name(s->change)));
	json_object_set_new(o, "fingerprint", json_string(t->fingerprint));
	json_object_set_new(o, "function", t->function ? json_string(t->function) : json_null());
	json_object_set_new(o, "leak_class", json_string(hl_leak_class_name(t->leak_class)));
	json_object_set_new(o, "bytes_a", json_integer(s->a ? (json_int_t)s->a->bytes : 0));
	json_object_set_new(o, "blocks_a", json_integer(s->a ? (json_int_t)s->a->blocks : 0));
	json_object_set_new(o, "bytes_b", json_integer(s->b ? (json_int_t)s->b->bytes : 0));
	json_object_set_new(o, "blocks_b", json_integer(s->b ? (json_int_t)s->b->blocks : 0));
	return o;
}

json_t *hl_site_diff_json(const struct hl_site_diff *d)
{
	json_t *doc = json_object(), *changes = json_array();

	json_object_set_new(doc, "format", json_string(HL_DIFF_FORMAT));
	json_object_set_new(doc, "version", json_integer(HL_DIFF_VERSION));
	json_object_set_new(doc, "run_a", json_integer(d->run_a));
	json_object_set_new(doc, "run_b", json_integer(d->run_b));
	for (unsigned c = 0; c < HL_SITE_CHANGE_COUNT; c++)
		json_object_set_new(doc, hl_site_change_name(c), json_integer((json_int_t)d->counts[c]));
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].change != HL_SITE_UNCHANGED)
			json_array_append_new(changes, delta_json(&d->v[i]));
	json_object_set_new(doc, "changes", changes);
	return doc;
}
