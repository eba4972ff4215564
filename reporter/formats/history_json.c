/*
 * reporter/formats/history_json.c: leak sites across runs as JSON
 * (history_json.h).
 */
#include "history_json.h"

#include <errno.h>

#include "json_values.h"
#include "runs_json.h"

json_t *hl_site_history_json(const struct hl_site_history *h)
{
	json_t *o = json_object(), *runs = json_array();

	json_object_set_new(o, "fingerprint", json_string(h->fingerprint));
	json_object_set_new(o, "function", hl_json_text(h->function));
	json_object_set_new(o, "first_run", json_integer(h->first_run));
	json_object_set_new(o, "last_run", json_integer(h->last_run));
	json_object_set_new(o, "runs", hl_json_u64(h->runs));
	for (size_t i = 0; i < h->nruns; i++)
		json_array_append_new(runs, json_pack("{sIsIsb}", "run", (json_int_t)h->run_ids[i],
						      "bytes", (json_int_t)h->bytes[i],
						      "suppressed", h->suppressed[i]));
	json_object_set_new(o, "bytes_by_run", runs);
	return o;
}

int hl_site_history_append(void *sites, const struct hl_site_history *h)
{
	return json_array_append_new(sites, hl_site_history_json(h)) ? -ENOMEM : 0;
}

json_t *hl_history_json(size_t nruns, json_t *sites)
{
	return json_pack("{sssIsIso}", "format", HL_HISTORY_FORMAT,
			 "version", (json_int_t)HL_HISTORY_VERSION, "runs", (json_int_t)nruns,
			 "sites", sites);
}

json_t *hl_program_history_json(const char *program, const struct hl_run_list *runs,
				json_t *sites)
{
	return json_pack("{sssoso}", "program", program, "runs", hl_history_runs_json(runs),
			 "sites", sites);
}
