/*
 * tests/fuzz/fuzz_json_scan.c: libFuzzer target for the JSON scanner
 * (reporter/formats/json_scan.c), with jansson as the oracle.
 *
 * The input is scanned whole, one byte at a time and in chunks of sizes
 * taken from its bytes; every way must give the same events, pieces and
 * positions. The member "processes" is split, as `heapledger import` does.
 * The scanner with jansson parsing each piece alone (and the top-level
 * names told apart) must accept exactly the documents jansson accepts
 * whole as an object, but for nesting near jansson's depth limit, which
 * the two count differently. A split array read again from the position
 * its ARRAY event gave must give the same elements.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json_scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct outcome {
	uint64_t hash;           /* of every event, piece and position */
	uint64_t items_hash;     /* of the split array's elements */
	bool valid;              /* scanned whole and every piece parsed */
	bool has_array;          /* an ARRAY event: array_after is set */
	bool not_array;          /* "processes" is not an array: valid JSON or not, unknown */
	struct hl_json_pos array_after;
	uint32_t max_depth;
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t mix_pos(uint64_t h, const struct hl_json_pos *pos)
{
	return mix(mix(mix(h, &pos->byte, 8), &pos->line, 8), &pos->column, 8);
}

static bool piece_parses(const struct hl_json_scan *sc, json_t *keys, bool key)
{
	json_t *v = json_loadb(sc->piece, sc->len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
	bool ok = v != NULL;

	if (v && key) {
		ok = json_is_string(v) && !json_object_get(keys, json_string_value(v));
		if (ok)
			json_object_set_new(keys, json_string_value(v), json_true());
	}
	json_decref(v);
	return ok;
}

/* One event into out; false once the document is known to be refused. */
static bool take(struct outcome *out, struct hl_json_scan *sc, enum hl_json_scan_event ev,
		 json_t *keys)
{
	if (ev == HL_JSON_SCAN_MORE) /* how many depends on the chunks */
		return true;
	out->hash = mix(out->hash, &ev, sizeof(ev));
	switch (ev) {
	case HL_JSON_SCAN_KEY:
		out->hash = mix_pos(mix(out->hash, sc->piece, sc->len), &sc->piece_at);
		if (!piece_parses(sc, keys, true))
			return false;
		if (sc->len == 11 && !memcmp(sc->piece, "\"processes\"", 11))
			hl_json_scan_split(sc, false);
		return true;
	case HL_JSON_SCAN_VALUE:
	case HL_JSON_SCAN_ITEM:
		out->hash = mix_pos(mix(out->hash, sc->piece, sc->len), &sc->piece_at);
		if (ev == HL_JSON_SCAN_ITEM)
			out->items_hash = mix(out->items_hash, sc->piece, sc->len);
		return piece_parses(sc, keys, false);
	case HL_JSON_SCAN_ARRAY:
		out->has_array = true;
		out->array_after = sc->pos_after;
		out->hash = mix_pos(out->hash, &sc->at);
		return true;
	case HL_JSON_SCAN_ARRAY_END:
		return true;
	case HL_JSON_SCAN_END:
		out->valid = true;
		return false;
	case HL_JSON_SCAN_NOT_ARRAY:
		out->not_array = true;
		return false;
	default:
		out->hash = mix_pos(out->hash, &sc->at);
		return false;
	}
}

/* Scans data[from..size) fed in chunks of chunk(i) bytes. */
static void scan(const uint8_t *data, size_t size, size_t (*chunk)(const uint8_t *, size_t, size_t),
		 struct outcome *out)
{
	struct hl_json_scan sc;
	json_t *keys = json_object();
	size_t off = 0, used;
	bool going = true;

	memset(out, 0, sizeof(*out));
	hl_json_scan_init(&sc);
	while (going && off < size) {
		size_t n = chunk(data, size, off);

		if (n > size - off)
			n = size - off;
		going = take(out, &sc, hl_json_scan_feed(&sc, (const char *)data + off, n, &used),
			     keys);
		off += used;
	}
	if (going)
		take(out, &sc, hl_json_scan_finish(&sc), keys);
	out->max_depth = sc.max_depth;
	hl_json_scan_free(&sc);
	json_decref(keys);
}

static size_t whole(const uint8_t *d, size_t size, size_t off) { (void)d; return size - off; }
static size_t bytewise(const uint8_t *d, size_t size, size_t off) { (void)d; (void)size; (void)off; return 1; }
static size_t by_content(const uint8_t *d, size_t size, size_t off)
{
	(void)size;
	return 1 + d[off] % 13;
}

/* The split array read again from its '[': the same elements. */
static void check_second_pass(const uint8_t *data, size_t size, const struct outcome *first)
{
	struct hl_json_scan sc;
	uint64_t items = 0;
	size_t off = (size_t)first->array_after.byte, used;
	enum hl_json_scan_event ev = HL_JSON_SCAN_MORE;

	hl_json_scan_init_in_array(&sc, first->array_after, false);
	while (off < size && ev != HL_JSON_SCAN_ARRAY_END) {
		ev = hl_json_scan_feed(&sc, (const char *)data + off, size - off, &used);
		off += used;
		if (ev == HL_JSON_SCAN_ITEM)
			items = mix(items, sc.piece, sc.len);
		else if (ev != HL_JSON_SCAN_ARRAY_END && ev != HL_JSON_SCAN_MORE)
			abort(); /* it scanned the first time */
	}
	if (ev != HL_JSON_SCAN_ARRAY_END || items != first->items_hash)
		abort();
	hl_json_scan_free(&sc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome a, b, c;
	json_t *doc;
	bool jansson_ok;

	scan(data, size, whole, &a);
	scan(data, size, bytewise, &b);
	scan(data, size, by_content, &c);
	if (a.hash != b.hash || a.hash != c.hash || a.valid != b.valid || a.valid != c.valid)
		abort(); /* how the input is cut changed what was found */
	doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	jansson_ok = doc && json_is_object(doc);
	json_decref(doc);
	if (a.max_depth < HL_JSON_SCAN_MAX_DEPTH - 8 && !a.not_array && a.valid != jansson_ok)
		abort(); /* scanner and pieces disagree with jansson on the whole */
	if (a.valid && a.has_array)
		check_second_pass(data, size, &a);
	return 0;
}
