/*
 * reporter/formats/json_scan.h: finds the pieces of a large JSON document
 * whose top level is an object, reading it in chunks of any size, so that
 * each piece can be parsed alone (jansson's json_loadb) and a document never
 * has to be held whole. The pieces are each top-level member's key and
 * value, and, for a member the caller splits (a JSON report's "processes"),
 * each element of its array instead of the value.
 *
 * The scanner checks the top level's grammar itself (`{ "key": value, ... }`,
 * then only white space) and only as much of a piece as it needs to find its
 * end: strings and their escapes, brackets matched by kind, no raw control
 * character in a string, at most HL_JSON_SCAN_MAX_DEPTH levels. Everything
 * else in a piece (numbers, literals, escapes, UTF-8, duplicate keys) is left
 * to the parser the piece is given to; so a document is valid JSON exactly
 * when the scanner accepts it and the parser accepts each piece (and the
 * top-level keys differ). Memory: one piece at a time (its bytes), and an
 * element of a split member may be skipped without keeping its bytes.
 *
 * Positions are bytes from the start of the document (0-based), with the
 * line and column (1-based, in bytes) for messages.
 */
#ifndef HL_REPORTER_JSON_SCAN_H
#define HL_REPORTER_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* As deep as jansson parses (its JSON_PARSER_MAX_DEPTH). */
#define HL_JSON_SCAN_MAX_DEPTH 2048

enum hl_json_scan_event {
	HL_JSON_SCAN_MORE,      /* the bytes given are used up: feed more, or finish */
	HL_JSON_SCAN_KEY,       /* a top-level key, with its quotes, is the piece */
	HL_JSON_SCAN_VALUE,     /* the value of that key is the piece */
	HL_JSON_SCAN_ARRAY,     /* a split member's '[' was read (at, pos_after) */
	HL_JSON_SCAN_NOT_ARRAY, /* a split member's value is not an array: the scan stops */
	HL_JSON_SCAN_ITEM,      /* an element of the split array is the piece (empty if skipped) */
	HL_JSON_SCAN_ARRAY_END, /* the split array's ']' was read */
	HL_JSON_SCAN_END,       /* finish: the document is whole */
	HL_JSON_SCAN_SYNTAX,    /* not JSON at `at`: error says what */
	HL_JSON_SCAN_TRUNCATED, /* finish: the document ends before it is whole */
	HL_JSON_SCAN_NOMEM,     /* a piece's bytes could not be kept (piece_at: where it starts) */
};

struct hl_json_pos {
	uint64_t byte;   /* from the start of the document, 0-based */
	uint64_t line;   /* 1-based */
	uint64_t column; /* 1-based, in bytes */
};

struct hl_json_scan {
	int state;                  /* where in the top level (json_scan.c) */
	uint32_t depth;             /* open brackets in the current piece */
	uint32_t base_depth;        /* brackets around the current piece (1 or 2) */
	uint32_t max_depth;         /* the deepest nesting seen, whole document */
	bool in_string;             /* inside a string of the piece */
	bool escape;                /* the byte before was a backslash in a string */
	bool split;                 /* the next value is split into elements */
	bool skip;                  /* elements are found, their bytes not kept */
	bool keep;                  /* the current piece's bytes are kept */
	bool array_only;            /* hl_json_scan_init_in_array: stop after its ']' */
	uint8_t closers[HL_JSON_SCAN_MAX_DEPTH / 8]; /* bit per open bracket: 1 '}', 0 ']' */
	char *piece;                /* the current piece's bytes (NUL-terminated once whole) */
	size_t len, cap;            /* of piece */
	struct hl_json_pos pos;       /* of the next byte */
	struct hl_json_pos piece_at;  /* where the current piece starts */
	struct hl_json_pos at;        /* of the error, or of the split array's '[' */
	struct hl_json_pos pos_after; /* just after the split array's '[' */
	const char *error;          /* what is wrong, for SYNTAX, TRUNCATED and NOMEM */
};

void hl_json_scan_init(struct hl_json_scan *sc);
/* Starts just after a split array's '[' (at a position an ARRAY event
 * gave): elements then the ARRAY_END, after which the scanner stops (the
 * rest of the document was read before). */
void hl_json_scan_init_in_array(struct hl_json_scan *sc, struct hl_json_pos after_bracket,
				bool skip);
void hl_json_scan_free(struct hl_json_scan *sc);

/* After a KEY event, before feeding on: the member's value is split into
 * its elements (ITEM events, bytes kept unless skip). */
void hl_json_scan_split(struct hl_json_scan *sc, bool skip);

/* Reads buf[0..len) up to the next event; *used: the bytes read (feed the
 * rest next). A piece (KEY, VALUE, ITEM) is valid until the next call. */
enum hl_json_scan_event hl_json_scan_feed(struct hl_json_scan *sc, const char *buf,
					  size_t len, size_t *used);
/* At the end of the input: END or TRUNCATED. */
enum hl_json_scan_event hl_json_scan_finish(struct hl_json_scan *sc);

#endif /* HL_REPORTER_JSON_SCAN_H */
