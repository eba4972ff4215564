/*
 * reporter/formats/json_scan.c: the pieces of a JSON document read in
 * chunks (json_scan.h).
 *
 * A state machine over bytes. Between pieces it is at the top level and
 * checks its grammar byte by byte; inside a piece it follows only strings
 * (a backslash takes the next byte, whatever it is) and brackets (a bit
 * stack says which closer each open one expects), and a scalar (a number or
 * a literal) runs to the first byte that cannot be in one, which is read
 * again at the top level. A piece's bytes are copied out of each chunk in
 * one run, not byte by byte. Once an error is returned the scanner stays in
 * it.
 */
#include "json_scan.h"

#include <stdlib.h>
#include <string.h>

enum state {
	S_DOC,          /* before the document's '{' */
	S_FIRST_KEY,    /* after '{': a key or '}' */
	S_KEY,          /* after ',': a key */
	S_IN_KEY,       /* in a key (a piece) */
	S_COLON,        /* after a key */
	S_VALUE,        /* after ':' */
	S_IN_VALUE,     /* in a member's value (a piece) */
	S_AFTER_VALUE,  /* ',' or '}' */
	S_FIRST_ITEM,   /* after a split array's '[': an element or ']' */
	S_ITEM,         /* after ',' in it: an element */
	S_IN_ITEM,      /* in an element (a piece) */
	S_AFTER_ITEM,   /* ',' or ']' */
	S_AFTER_DOC,    /* only white space may follow */
	S_ARRAY_DONE,   /* hl_json_scan_init_in_array: its ']' was read */
	S_FAILED,       /* an error was returned */
};

/* How a byte leaves a piece. */
enum piece_step {
	P_IN,        /* it belongs to the piece, which goes on */
	P_LAST,      /* it ends the piece */
	P_PAST,      /* the piece ended before it (a scalar's delimiter) */
	P_BAD,       /* not JSON: sc->error says why */
};

void hl_json_scan_init(struct hl_json_scan *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->state = S_DOC;
	sc->pos.line = sc->pos.column = 1;
}

void hl_json_scan_init_in_array(struct hl_json_scan *sc, struct hl_json_pos after_bracket,
				bool skip)
{
	hl_json_scan_init(sc);
	sc->state = S_FIRST_ITEM;
	sc->skip = skip;
	sc->array_only = true;
	sc->pos = after_bracket;
	sc->max_depth = 2;
}

void hl_json_scan_free(struct hl_json_scan *sc)
{
	free(sc->piece);
	sc->piece = NULL;
	sc->len = sc->cap = 0;
}

void hl_json_scan_split(struct hl_json_scan *sc, bool skip)
{
	sc->split = true;
	sc->skip = skip;
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* What a number or literal may hold; the parser checks the spelling. */
static bool is_scalar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '-' || c == '+' || c == '.';
}

static void advance(struct hl_json_pos *pos, unsigned char c)
{
	pos->byte++;
	if (c == '\n') {
		pos->line++;
		pos->column = 1;
	} else {
		pos->column++;
	}
}

static enum hl_json_scan_event fail(struct hl_json_scan *sc, enum hl_json_scan_event ev,
				    const char *why)
{
	sc->state = S_FAILED;
	sc->at = sc->pos;
	sc->error = why;
	return ev;
}

/* Keeps bytes of the current piece; false when memory ran out. */
static bool keep(struct hl_json_scan *sc, const char *bytes, size_t n)
{
	if (!sc->keep || !n)
		return true;
	if (sc->len + n + 1 > sc->cap) {
		size_t cap = sc->cap ? sc->cap : 4096;
		char *grown;

		while (cap < sc->len + n + 1)
			cap *= 2;
		grown = realloc(sc->piece, cap);
		if (!grown)
			return false;
		sc->piece = grown;
		sc->cap = cap;
	}
	memcpy(sc->piece + sc->len, bytes, n);
	sc->len += n;
	sc->piece[sc->len] = 0;
	return true;
}

/* The piece starting with c, at the top level's depth base. */
static enum piece_step piece_begin(struct hl_json_scan *sc, unsigned char c, uint32_t base,
				   bool kept)
{
	sc->piece_at = sc->pos;
	sc->len = 0;
	sc->keep = kept;
	sc->base_depth = base;
	sc->depth = 0;
	sc->in_string = c == '"';
	sc->escape = false;
	if (c == '{' || c == '[') {
		if (base + 1 > HL_JSON_SCAN_MAX_DEPTH) {
			sc->error = "nested more than 2048 deep";
			return P_BAD;
		}
		sc->closers[0] = c == '{';
		sc->depth = 1;
		sc->max_depth = base + 1 > sc->max_depth ? base + 1 : sc->max_depth;
		return P_IN;
	}
	if (c == '"' || is_scalar(c))
		return P_IN;
	sc->error = "a value was expected";
	return P_BAD;
}

static enum piece_step piece_string_byte(struct hl_json_scan *sc, unsigned char c)
{
	if (sc->escape) {
		sc->escape = false;
	} else if (c == '\\') {
		sc->escape = true;
	} else if (c == '"') {
		sc->in_string = false;
		return sc->depth ? P_IN : P_LAST;
	} else if (c < 0x20) {
		sc->error = "a control character in a string (it must be escaped)";
		return P_BAD;
	}
	return P_IN;
}

/* A byte after the piece's first (piece_begin). */
static enum piece_step piece_byte(struct hl_json_scan *sc, unsigned char c)
{
	uint32_t d = sc->depth;

	if (sc->in_string)
		return piece_string_byte(sc, c);
	if (!d) /* a scalar */
		return is_scalar(c) ? P_IN : P_PAST;
	switch (c) {
	case '"':
		sc->in_string = true;
		return P_IN;
	case '{':
	case '[':
		if (sc->base_depth + d + 1 > HL_JSON_SCAN_MAX_DEPTH) {
			sc->error = "nested more than 2048 deep";
			return P_BAD;
		}
		if (c == '{')
			sc->closers[d / 8] |= (uint8_t)(1u << (d % 8));
		else
			sc->closers[d / 8] &= (uint8_t)~(1u << (d % 8));
		sc->depth = d + 1;
		if (sc->base_depth + d + 1 > sc->max_depth)
			sc->max_depth = sc->base_depth + d + 1;
		return P_IN;
	case '}':
	case ']':
		if (((sc->closers[(d - 1) / 8] >> ((d - 1) % 8)) & 1) != (c == '}')) {
			sc->error = c == '}' ? "'}' closes a '['" : "']' closes a '{'";
			return P_BAD;
		}
		sc->depth = d - 1;
		return d == 1 ? P_LAST : P_IN;
	default:
		return P_IN;
	}
}

/* A byte of the top level: the next state, or -1 with sc->error set. */
static int top_byte(struct hl_json_scan *sc, unsigned char c)
{
	if (is_space(c))
		return sc->state;
	switch (sc->state) {
	case S_DOC:
		return c == '{' ? S_FIRST_KEY : (sc->error = "a JSON object was expected", -1);
	case S_FIRST_KEY:
		if (c == '}')
			return S_AFTER_DOC;
		/* fall through */
	case S_KEY:
		return c == '"' ? S_IN_KEY : (sc->error = "a member's name was expected", -1);
	case S_COLON:
		return c == ':' ? S_VALUE : (sc->error = "':' was expected", -1);
	case S_AFTER_VALUE:
		return c == ',' ? S_KEY : c == '}' ? S_AFTER_DOC :
		       (sc->error = "',' or '}' was expected", -1);
	case S_AFTER_ITEM:
		return c == ',' ? S_ITEM : (sc->error = "',' or ']' was expected", -1);
	case S_AFTER_DOC:
		sc->error = "text after the end of the document";
		return -1;
	}
	return sc->state;
}

static bool in_piece(const struct hl_json_scan *sc)
{
	return sc->state == S_IN_KEY || sc->state == S_IN_VALUE || sc->state == S_IN_ITEM;
}

static enum hl_json_scan_event piece_event(int state)
{
	return state == S_IN_KEY ? HL_JSON_SCAN_KEY :
	       state == S_IN_VALUE ? HL_JSON_SCAN_VALUE : HL_JSON_SCAN_ITEM;
}

/* The state after the piece of state `state` ends. */
static int after_piece(int state)
{
	return state == S_IN_KEY ? S_COLON : state == S_IN_VALUE ? S_AFTER_VALUE : S_AFTER_ITEM;
}

/* A byte that may start a piece or split an array (S_VALUE, S_FIRST_ITEM,
 * S_ITEM); returns the event it makes, MORE if a piece began. */
static enum hl_json_scan_event start_byte(struct hl_json_scan *sc, unsigned char c)
{
	bool item = sc->state != S_VALUE;

	if (sc->state == S_VALUE && sc->split) {
		sc->split = false;
		if (c != '[') {
			sc->state = S_FAILED; /* the document is not what the caller reads */
			sc->error = "not an array";
			return HL_JSON_SCAN_NOT_ARRAY;
		}
		sc->at = sc->pos;
		advance(&sc->pos, c);
		sc->pos_after = sc->pos;
		sc->state = S_FIRST_ITEM;
		if (sc->max_depth < 2)
			sc->max_depth = 2;
		return HL_JSON_SCAN_ARRAY;
	}
	if (sc->state == S_FIRST_ITEM && c == ']') {
		advance(&sc->pos, c);
		sc->state = sc->array_only ? S_ARRAY_DONE : S_AFTER_VALUE;
		return HL_JSON_SCAN_ARRAY_END;
	}
	if (piece_begin(sc, c, item ? 2 : 1, !(item && sc->skip)) == P_BAD)
		return fail(sc, HL_JSON_SCAN_SYNTAX, sc->error);
	sc->state = item ? S_IN_ITEM : S_IN_VALUE;
	advance(&sc->pos, c);
	return HL_JSON_SCAN_MORE;
}

/* The bytes of a piece from b[*i] that change nothing but the position:
 * inside a string, all but a quote, a backslash or a control character;
 * outside, all but a quote or a bracket. Skipped in one go: they are most
 * of a report. */
static void piece_skip_plain(struct hl_json_scan *sc, const char *b, size_t *i, size_t len)
{
	const unsigned char *p = (const unsigned char *)b + *i, *end = (const unsigned char *)b + len;
	const unsigned char *start = p;

	if (sc->in_string) {
		if (sc->escape)
			return;
		while (p < end && *p != '"' && *p != '\\' && *p >= 0x20)
			p++;
		sc->pos.column += (uint64_t)(p - start); /* no newline in a string */
	} else if (sc->depth) {
		for (; p < end && *p != '"' && *p != '{' && *p != '}' && *p != '[' && *p != ']'; p++) {
			if (*p == '\n') {
				sc->pos.line++;
				sc->pos.column = 1;
			} else {
				sc->pos.column++;
			}
		}
	}
	sc->pos.byte += (uint64_t)(p - start);
	*i += (size_t)(p - start);
}

/* A byte of a piece at b[*i]; the event if the piece ended (its bytes from
 * b[from] kept), else MORE. */
static enum hl_json_scan_event piece_step(struct hl_json_scan *sc, const char *b, size_t *i,
					  size_t from)
{
	unsigned char c = (unsigned char)b[*i];
	enum piece_step step = piece_byte(sc, c);
	int state = sc->state;

	if (step == P_BAD)
		return fail(sc, HL_JSON_SCAN_SYNTAX, sc->error);
	if (step != P_PAST)
		advance(&sc->pos, (unsigned char)b[(*i)++]);
	if (step == P_IN)
		return HL_JSON_SCAN_MORE;
	if (!keep(sc, b + from, *i - from))
		return fail(sc, HL_JSON_SCAN_NOMEM, "out of memory");
	sc->state = after_piece(state);
	return piece_event(state);
}

enum hl_json_scan_event hl_json_scan_feed(struct hl_json_scan *sc, const char *buf,
					  size_t len, size_t *used)
{
	size_t i = 0, from = 0;
	enum hl_json_scan_event ev = HL_JSON_SCAN_MORE;

	if (sc->state == S_FAILED)
		return *used = 0, HL_JSON_SCAN_SYNTAX;
	while (i < len && ev == HL_JSON_SCAN_MORE && sc->state != S_ARRAY_DONE) {
		unsigned char c = (unsigned char)buf[i];
		int state = sc->state;

		if (in_piece(sc)) {
			piece_skip_plain(sc, buf, &i, len);
			if (i < len)
				ev = piece_step(sc, buf, &i, from);
		} else if (is_space(c)) {
			advance(&sc->pos, buf[i++]);
		} else if (state == S_VALUE || state == S_FIRST_ITEM || state == S_ITEM) {
			from = i;
			ev = start_byte(sc, c);
			if (ev != HL_JSON_SCAN_SYNTAX && ev != HL_JSON_SCAN_NOT_ARRAY)
				i++;
		} else if (state == S_AFTER_ITEM && c == ']') {
			advance(&sc->pos, buf[i++]);
			sc->state = sc->array_only ? S_ARRAY_DONE : S_AFTER_VALUE;
			ev = HL_JSON_SCAN_ARRAY_END;
		} else if ((state == S_FIRST_KEY || state == S_KEY) && c == '"') {
			from = i;
			piece_begin(sc, c, 1, true);
			sc->state = S_IN_KEY;
			advance(&sc->pos, buf[i++]);
		} else if ((sc->state = top_byte(sc, c)) < 0) {
			ev = fail(sc, HL_JSON_SCAN_SYNTAX, sc->error);
		} else {
			advance(&sc->pos, buf[i++]);
		}
	}
	if (ev == HL_JSON_SCAN_MORE && in_piece(sc) && !keep(sc, buf + from, i - from))
		ev = fail(sc, HL_JSON_SCAN_NOMEM, "out of memory");
	*used = i;
	return ev;
}

enum hl_json_scan_event hl_json_scan_finish(struct hl_json_scan *sc)
{
	if (sc->state == S_AFTER_DOC || sc->state == S_ARRAY_DONE)
		return HL_JSON_SCAN_END;
	if (sc->state == S_FAILED)
		return HL_JSON_SCAN_SYNTAX;
	return fail(sc, HL_JSON_SCAN_TRUNCATED, sc->state == S_DOC ?
		    "the file holds no JSON document (only white space)" :
		    "the file ends before the JSON document does");
}
