/*
 * reporter/formats/size_bins_json.c: an allocation-size histogram as JSON
 * (size_bins_json.h).
 */
#include "size_bins_json.h"

#include "json_values.h"

static json_t *bin_json(const struct hl_size_bins *b, unsigned bin)
{
	return json_pack("{s:i,s:o,s:o,s:o,s:o}", "bin", (json_int_t)bin,
			 "low", hl_json_u64(hl_size_bin_low(bin)),
			 "high", bin < 64 ? hl_json_u64(hl_size_bin_high(bin)) : json_null(),
			 "allocs", hl_json_u64(b->allocs[bin]), "bytes", hl_json_u64(b->bytes[bin]));
}

json_t *hl_size_histogram_json(const struct hl_size_histogram *h)
{
	const struct hl_size_bins *b = &h->bins;
	json_t *bins = json_array();
	uint64_t allocs = 0, bytes = 0;
	unsigned first = HL_SIZE_BINS, last = 0;

	for (unsigned bin = 0; bin < HL_SIZE_BINS; bin++) {
		if (!b->allocs[bin])
			continue;
		if (first == HL_SIZE_BINS)
			first = bin;
		last = bin;
		allocs += b->allocs[bin];
		bytes += b->bytes[bin];
	}
	for (unsigned bin = first; bin <= last && first < HL_SIZE_BINS; bin++)
		json_array_append_new(bins, bin_json(b, bin));
	return json_pack("{s:o,s:o,s:o,s:o,s:o}", "processes", hl_json_u64(h->processes),
			 "counted", hl_json_u64(h->counted), "allocs", hl_json_u64(allocs),
			 "bytes", hl_json_u64(bytes), "bins", bins);
}
