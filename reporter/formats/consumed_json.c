/*
 * reporter/formats/consumed_json.c: heap consumed over time by the top
 * functions as JSON (consumed_json.h).
 */
#include "consumed_json.h"

#include "json_values.h"

static json_t *values(const uint64_t *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, hl_json_u64(v[i]));
	return a;
}

static json_t *site_json(const struct hl_consumed_site *s, size_t n)
{
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "function", hl_json_text(s->function),
			 "file", hl_json_text(s->file),
			 "line", s->file ? json_integer(s->line) : json_null(),
			 "module", hl_json_text(s->module),
			 "module_offset", hl_json_u64(s->module_offset), "peak", hl_json_u64(s->peak),
			 "bytes", values(s->bytes, n));
}

json_t *hl_consumed_json(const struct hl_consumed *c)
{
	json_t *sites = json_array();

	for (size_t k = 0; k < c->nsites; k++)
		json_array_append_new(sites, site_json(&c->sites[k], c->nsamples));
	return json_pack("{s:b,s:o,s:o,s:o,s:o}", "has_series", c->has_series,
			 "time_ns", values(c->time_ns, c->nsamples),
			 "total", values(c->total, c->nsamples),
			 "other", values(c->other, c->nsamples), "sites", sites);
}
