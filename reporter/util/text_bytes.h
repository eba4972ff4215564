/*
 * reporter/util/text_bytes.h: text that is bytes. argv words, executable
 * paths and names come from the kernel as bytes with no encoding; they are
 * kept as they came (C strings: no NUL inside) and only their renderings
 * differ per format.
 *
 * In JSON a byte string that is valid UTF-8 is a JSON string as always; any
 * other is lossless as the array of its byte values, 1-255 (the convention
 * of systemd's journal export): the database's argv columns hold each word
 * so, and a JSON report keeps its strings (invalid bytes shown as U+FFFD)
 * and adds the arrays beside them (argv_bytes, exe_bytes; doc/manual.md).
 * XML cannot hold every byte: a byte that does not start a valid UTF-8
 * character, or a character XML 1.0 does not allow, is written as the text
 * \xNN (hl_report_xml_text), so the document stays well formed.
 */
#ifndef HL_REPORTER_TEXT_BYTES_H
#define HL_REPORTER_TEXT_BYTES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util.h"

/* Length (1-4) of the valid UTF-8 character s[0..n) starts with, or 0: an
 * overlong form, a surrogate, past U+10FFFF, or cut short by n. */
size_t hl_utf8_char_len(const unsigned char *s, size_t n);
bool hl_utf8_is_valid(const char *s);
/* s as JSON: a string, or the array of its bytes when it is not UTF-8. */
json_t *hl_json_bytes(const char *s);
/* s as a JSON string, each byte that is not UTF-8 as U+FFFD (for display). */
json_t *hl_json_text(const char *s);
/* The bytes of a value hl_json_bytes made, copied into a (NUL-terminated),
 * or NULL when v is neither a string nor an array of integers 1-255. */
char *hl_json_bytes_dup(struct hl_bump *a, const json_t *v);

#endif
